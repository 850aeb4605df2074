"""Kernels on every GPU of the host, from one process: each launch runs on
the device of its tensors (torch's current device left as it was), on
torch's current stream of that device; devices of one architecture share
one compile and load it once each; tensors on two devices are an error;
launches without tensors follow torch.cuda.set_device / torch.cuda.device.
Marked `gpu`, and skipped unless torch sees two or more GPUs (see
tests/README.md for how to run them)."""
import gc
import threading

import pytest

import ctriton as triton
import ctriton.language as tl

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch():
    import torch as t
    if not t.cuda.is_available() or t.cuda.device_count() < 2:
        pytest.skip("needs two or more GPUs visible to torch")
    t.manual_seed(0)
    return t


@pytest.fixture
def devices(torch):
    return list(range(torch.cuda.device_count()))


@triton.jit
def axpb(x_ptr, y_ptr, n, a, b, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * a + b, mask=m)


@triton.jit
def nothing(n, BLOCK: tl.constexpr):
    pass


def run_axpb(torch, dev, n=10000, a=2.0, b=None):
    x = torch.randn(n, device=f"cuda:{dev}")
    y = torch.empty_like(x)
    b = float(dev) if b is None else b
    ck = axpb[(triton.cdiv(n, 1024),)](x, y, n, a, b, BLOCK=1024)
    return x, y, ck, a, b


def test_every_device(torch, devices):
    torch.cuda.set_device(0)
    for d in devices:
        x, y, _, a, b = run_axpb(torch, d)
        assert torch.cuda.current_device() == 0  # the launch left it alone
        torch.cuda.synchronize(d)
        assert y.device.index == d
        torch.testing.assert_close(y, x * a + b, rtol=0, atol=0)


def test_one_compile_per_arch_one_load_per_device(torch, devices):
    axpb.clear_cache()
    cks = {d: run_axpb(torch, d)[2] for d in devices}
    by_cap = {}
    for d in devices:
        by_cap.setdefault(torch.cuda.get_device_capability(d), []).append(d)
    for cap, ds in by_cap.items():
        ck = cks[ds[0]]
        assert all(cks[d] is ck for d in ds), cap  # one CompiledKernel per architecture
        assert ck.metadata.arch == cap[0] * 10 + cap[1]
        loaded = ck._binary.loaded()
        assert sorted(loaded) == ds  # loaded once on each of its devices
        assert len({h for h in loaded.values()}) == len(ds)  # a module per device
    assert len(axpb.cache) == len(by_cap)


def test_current_stream_of_the_tensors_device(torch, devices):
    d = devices[-1]
    torch.cuda.set_device(0)
    s = torch.cuda.Stream(device=d)
    n = 1 << 20
    x = torch.randn(n, device=f"cuda:{d}")
    y = torch.zeros_like(x)
    torch.cuda.synchronize(d)
    with torch.cuda.stream(s):
        torch.cuda._sleep(100_000_000)  # tens of ms on s: the kernel queues behind it
        axpb[(triton.cdiv(n, 1024),)](x, y, n, 3.0, 1.0, BLOCK=1024)
    # on device d's default stream, which does not wait for s: y is still
    # untouched if the kernel went to s (it would be written if it had gone
    # to the default stream)
    snap = y.clone()
    torch.cuda.current_stream(d).synchronize()
    assert int((snap != 0).sum()) == 0
    s.synchronize()
    torch.testing.assert_close(y, x * 3.0 + 1.0, rtol=0, atol=0)


def test_set_device_for_launches_without_tensors(torch, devices):
    nothing.clear_cache()
    d = devices[-1]
    with torch.cuda.device(d):
        ck = nothing[(1,)](8, BLOCK=16)
    assert sorted(ck._binary.loaded()) == [d]
    torch.cuda.set_device(0)
    ck0 = nothing[(1,)](8, BLOCK=16)
    assert 0 in ck0._binary.loaded()
    if torch.cuda.get_device_capability(0) == torch.cuda.get_device_capability(d):
        assert ck0 is ck and sorted(ck._binary.loaded()) == [0, d]
    torch.cuda.synchronize()


def test_mixed_devices_raise(torch, devices):
    x = torch.randn(16, device="cuda:0")
    y = torch.empty(16, device=f"cuda:{devices[-1]}")
    with pytest.raises(ValueError, match=r"'y_ptr' \(at 1\) is on cuda:\d+ but argument 'x_ptr' "
                                         r"\(at 0\) is on cuda:0"):
        axpb[(1,)](x, y, 16, 1.0, 0.0, BLOCK=16)
    with pytest.raises(ValueError, match="cannot be accessed from the GPU"):
        axpb[(1,)](x, torch.empty(16), 16, 1.0, 0.0, BLOCK=16)


def test_threads_one_per_device(torch, devices):
    errors, results = [], {}

    def work(d):
        try:
            for i in range(20):
                x, y, _, a, b = run_axpb(torch, d, n=4096 + i, b=float(d + i))
                torch.cuda.synchronize(d)
                if not torch.equal(y, x * a + b):
                    raise AssertionError(f"device {d}, round {i}: wrong result")
            results[d] = True
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    ts = [threading.Thread(target=work, args=(d,)) for d in devices]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    assert sorted(results) == devices


def test_kernels_die_with_their_modules(torch, devices):
    # compile, load on every device, drop, many times: no error and no leak
    # of modules the driver would refuse to unload
    for i in range(30):
        axpb.clear_cache()
        for d in devices:
            x, y, _, a, b = run_axpb(torch, d, n=256, a=float(i))
            torch.cuda.synchronize(d)
            torch.testing.assert_close(y, x * a + b, rtol=0, atol=0)
    axpb.clear_cache()
    gc.collect()
    for d in devices:
        torch.cuda.synchronize(d)
