"""The atomics of test_atomics.py on the GPU, against torch / numpy (the
cases of Triton's language tests test_atomic_rmw, test_atomic_cas,
test_tensor_atomic_use_result and test_histogram, plus float max / min
with NaN and -0.0, old values of a reduced block's copies and paired f16
adds). Marked `gpu`: skipped where no CUDA device is active."""
import numpy as np
import pytest

import ctriton.language as tl
from test_atomics import (BITS, HIST, RMW, SEMS, have_disassembler, histogram_kernel, minmax_case,
                          minmax_check, minmax_kernel, rmw_forms, rmw_scalar_kernel, serialized_add,
                          use_result_kernel)

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch():
    import torch as t
    t.manual_seed(17)
    return t


def _bf16_trunc(a):
    return (np.asarray(a, np.float32).view("uint32") & np.uint32(0xffff0000)).view("float32")


@pytest.mark.parametrize("sem", SEMS)
@pytest.mark.parametrize("mode", ["all_neg", "all_pos", "min_neg", "max_pos"])
@pytest.mark.parametrize("op,dt", RMW)
def test_atomic_rmw(torch, op, dt, mode, sem):
    if dt.startswith("uint") and mode in ("all_neg", "min_neg"):
        pytest.skip("unsigned values are not negative")
    n = 5
    host = "float32" if dt == "bfloat16" else dt
    x = np.array([2 ** i for i in range(n)], dtype=host)
    rs = np.random.RandomState(17)
    if mode == "all_neg":
        x = -np.abs(x)
    if mode == "min_neg":
        x[rs.randint(n)] = -np.max(np.abs(x)) - 1
    if mode == "max_pos":
        x[rs.randint(n)] = np.max(np.abs(x)) + 1
    fl = host.startswith("float")
    neutral = {"add": 0, "max": -np.inf if fl else np.iinfo(host).min, "min": np.inf if fl else np.iinfo(host).max}[op]
    tdt = getattr(torch, dt)
    xt = torch.tensor(x).to("cuda").to(tdt)
    zt = torch.tensor(np.array([neutral], dtype=host)).to("cuda").to(tdt)
    h = rmw_scalar_kernel[(n,)](xt, zt, op, sem)
    ref = {"add": np.sum, "max": np.max, "min": np.min}[op](x).astype(host)
    got = zt.float().cpu().numpy() if dt == "bfloat16" else zt.cpu().numpy()
    if dt == "bfloat16":
        ref = _bf16_trunc(ref)
    if op == "add":
        np.testing.assert_allclose(got, [ref], rtol=0.01)
    else:
        assert got.item() == ref.item()
    s = sem or "acq_rel"
    if dt == "bfloat16" and torch.cuda.get_device_capability()[0] < 9:
        assert "atom.relaxed.gpu.global.cas" in h.asm["ptx"]
    else:
        assert f"atom.global.gpu.{s}" in h.asm["ptx"]
        for form in rmw_forms(op, dt):
            assert f"atom.global.gpu.{s}.{form}" in h.asm["ptx"]


@pytest.mark.parametrize("sem", SEMS)
@pytest.mark.parametrize("dt", ["int32", "int64"])
def test_atomic_cas(torch, dt, sem):
    tdt = getattr(torch, dt)
    lock = torch.zeros((1,), device="cuda", dtype=tdt)
    data = torch.zeros((128,), device="cuda", dtype=torch.float32)
    h = serialized_add[(2000,)](data, lock, triton_dtype=getattr(tl, dt), SEM=sem)
    np.testing.assert_allclose(data.cpu().numpy(), np.full(128, 2000.0))
    assert lock.item() == 0
    s = sem or "acq_rel"
    assert f"atom.global.{s}.gpu.cas.b{BITS[dt]}" in h.asm["ptx"]


@pytest.mark.parametrize("op", ["add", "cas"])
@pytest.mark.parametrize("size", [1, 4, 16])
@pytest.mark.parametrize("dt", ["int32", "float16"])
@pytest.mark.parametrize("warps", [1, 4])
def test_tensor_atomic_use_result(torch, dt, size, op, warps):
    tdt = getattr(torch, dt)
    index = torch.arange(0, size, device="cuda").to(dtype=tdt)
    out = torch.zeros((size, size), device="cuda", dtype=tdt)
    use_result_kernel[(1,)](index, out, size, op, num_warps=warps)
    assert (out == 5).all()
    if op == "add":
        assert torch.equal(index, (2 * torch.arange(0, size, device="cuda")).to(tdt))


@pytest.mark.parametrize("is_max", [True, False])
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_float_minmax(torch, dt, is_max):
    z0, x = minmax_case(dt)
    z, xt = torch.tensor(z0, device="cuda"), torch.tensor(x, device="cuda")
    old = torch.zeros_like(z)
    minmax_kernel[(1,)](z, xt, old, is_max, BLOCK=16)
    minmax_check(z0, x, z.cpu().numpy(), old.cpu().numpy(), is_max)


@pytest.mark.parametrize("M,N", HIST)
def test_histogram(torch, M, N):
    x = torch.randint(0, N, (M,), device="cuda", dtype=torch.int32)
    z = torch.empty(N, dtype=torch.int32, device="cuda")
    h = histogram_kernel[(1,)](x, z, M=M, N=N)
    assert (torch.histc(x.float(), bins=N, min=0, max=N - 1) == z).all()
    if have_disassembler():
        assert "ATOMS.POPC.INC" in h.asm["sass"]


@pytest.mark.parametrize("shape", [(2, 2), (8, 2), (32, 32), (64, 64)])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dt", ["float32", "int64", "float16"])
def test_reduced_block_old_values(torch, shape, axis, dt):
    """A reduction's slice layout puts copies of each sum in many threads:
    the atomic is done once per element and every copy gets its old value."""
    import ctriton as triton

    @triton.jit
    def kernel(Z, X, OLD, AXIS: tl.constexpr, S0: tl.constexpr, S1: tl.constexpr):
        off0, off1 = tl.arange(0, S0), tl.arange(0, S1)
        x = tl.load(X + off0[:, None] * S1 + off1[None, :])
        z = tl.sum(x, axis=AXIS)
        off = off0 if AXIS == 1 else off1
        old = tl.atomic_add(Z + off, z)
        tl.store(OLD + off, old * 2)   # computed from the old value in every copy

    tdt = getattr(torch, dt)
    x = torch.randint(-4, 5, shape, device="cuda").to(tdt)
    n = shape[0] if axis == 1 else shape[1]
    z = torch.randint(-4, 5, (n,), device="cuda").to(tdt)
    z0, old = z.clone(), torch.zeros_like(z)
    kernel[(1,)](z, x, old, axis, shape[0], shape[1])
    assert torch.equal(z, z0 + x.sum(dim=axis).to(tdt))
    assert torch.equal(old, z0 * 2)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_paired_16bit_add(torch, dt):
    """Aligned consecutive 16-bit adds go as .f16x2 / .bf16x2 pairs; each
    half is added and returned on its own."""
    import ctriton as triton

    @triton.jit
    def kernel(Z, X, OLD, N: tl.constexpr):
        offs = tl.arange(0, N)
        old = tl.atomic_add(Z + offs, tl.load(X + offs), sem="relaxed")
        tl.store(OLD + offs, old)

    tdt = getattr(torch, dt)
    x = torch.randint(-8, 8, (1024,), device="cuda").to(tdt)
    z = torch.randint(-8, 8, (1024,), device="cuda").to(tdt)
    z0, old = z.clone(), torch.zeros_like(z)
    h = kernel[(1,)](z, x, old, 1024)
    assert torch.equal(z, z0 + x) and torch.equal(old, z0)
    if dt == "float16" or torch.cuda.get_device_capability()[0] >= 9:
        assert "x2 " in "".join(line for line in h.asm["ptx"].splitlines() if "atom.global" in line)
