"""The GPU launch path without a GPU: a fake libcuda (fake_libcuda.c, built
here with the C compiler) records what cuLaunchKernel gets, so that the
packed parameters, grid, block and stream are checked for real. Each case
runs in a child process (the driver is loaded once per process)."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CC = shutil.which("cc") or shutil.which("gcc")
PTXAS = shutil.which("ptxas") or (os.path.exists("/usr/local/cuda/bin/ptxas") or None)


@pytest.fixture(scope="module")
def fake_cuda(tmp_path_factory):
    if not CC:
        pytest.skip("no C compiler for the fake driver")
    out = str(tmp_path_factory.mktemp("fakecuda") / "libfakecuda.so")
    subprocess.run([CC, "-shared", "-fPIC", "-O2", "-o", out,
                    os.path.join(HERE, "fake_libcuda.c")], check=True)
    return out


PRELUDE = """
import ctypes, json, os, struct, sys
sys.path.insert(0, os.environ["TESTS_DIR"])
import ctriton as triton
import ctriton.language as tl

class Rec(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint64), ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint),
                ("stream", ctypes.c_uint64), ("params", ctypes.c_uint64 * 32)]

lib = ctypes.CDLL(os.environ["CTRITON_LIBCUDA_PATH"])
lib.fake_launch.restype = ctypes.POINTER(Rec)

class CudaTensor:
    is_cuda = True
    def __init__(self, ptr, dtype="torch.float32"):
        self.ptr, self.dtype = ptr, dtype
    def data_ptr(self):
        return self.ptr

HOST = 0x7f0000001000  # host memory to the fake driver (not a device's address)

def record(n):
    r = lib.fake_launch().contents
    return {"count": r.count, "grid": list(r.grid), "block": list(r.block),
            "stream": r.stream, "params": list(r.params[:n])}
"""


def run_child(fake_cuda, body, tmp_path):
    env = dict(os.environ, CTRITON_LIBCUDA_PATH=fake_cuda, CTRITON_BACKEND="cuda",
               CTRITON_CACHE_DIR=str(tmp_path / "cache"), TESTS_DIR=HERE)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(HERE, "..", "..", "python"),
                                         env.get("PYTHONPATH", "")])
    src = PRELUDE + textwrap.dedent(body)
    path = tmp_path / "child.py"
    path.write_text(src)
    p = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_parameters_grid_and_stream(fake_cuda, tmp_path):
    got = run_child(fake_cuda, """
        @triton.jit
        def k(x_ptr, y_ptr, n, scale, flag, ONE, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            m = (offs < n) & flag
            tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * scale * ONE, mask=m)

        lib.fake_set_nparams(5)
        x, y = CudaTensor(1 << 20), CudaTensor((1 << 20) + 4096)
        out = {}
        k[(3, 2)](x, y, 1000, 0.5, True, 1, BLOCK=128, num_warps=2)
        out["a"] = record(5)
        k[lambda m: (triton.cdiv(m["n"], m["BLOCK"]),)](x, y, 70000, 2.0, False, 1,
                                                        BLOCK=128, stream=77)
        out["b"] = record(5)
        k.run(x, y, 7, -1.0, True, 1, BLOCK=128, grid=(5,), warmup=False)
        out["c"] = record(5)
        k.run(x, y, 7, -1.0, True, 1, BLOCK=128, grid=(9,), warmup=True)  # no launch
        out["d"] = record(0)
        print(json.dumps(out))
    """, tmp_path)
    f32 = lambda v: __import__("struct").unpack("<I", __import__("struct").pack("<f", v))[0]
    a, b, c, d = got["a"], got["b"], got["c"], got["d"]
    assert a["grid"] == [3, 2, 1] and a["block"] == [64, 1, 1] and a["stream"] == 0
    # x, y, n (i32), scale (fp32 bits), flag (u1); ONE == 1 is a constant
    assert a["params"] == [1 << 20, (1 << 20) + 4096, 1000, f32(0.5), 1]
    assert b["grid"] == [547, 1, 1] and b["block"] == [128, 1, 1] and b["stream"] == 77
    assert b["params"] == [1 << 20, (1 << 20) + 4096, 70000, f32(2.0), 0]
    assert c["grid"] == [5, 1, 1] and c["params"][2:4] == [7, f32(-1.0)]
    assert d["count"] == c["count"] == a["count"] + 2


def test_host_memory_rejected(fake_cuda, tmp_path):
    got = run_child(fake_cuda, """
        import numpy as np

        @triton.jit
        def k(x_ptr):
            pass

        class HostTensor(CudaTensor):
            is_cuda = False

        errs = []
        for arg in (np.zeros(4, np.float32), HostTensor(HOST)):
            try:
                k[(1,)](arg)
            except ValueError as e:
                errs.append(str(e))
        print(json.dumps(errs))
    """, tmp_path)
    assert len(got) == 2 and "numpy array" in got[0] and "CPU tensor" in got[1]


def test_pinned_host_memory(fake_cuda, tmp_path):
    """A CPU tensor in pinned memory is accepted, as Triton's launcher does:
    the driver names the device pointer the kernel gets; pageable memory is
    refused with the CPU tensor's ValueError. Both for torch-like tensors
    (get_device() == -1) and for those only saying is_cuda = False."""
    got = run_child(fake_cuda, """
        @triton.jit
        def k(x_ptr, y_ptr):
            pass

        class HostTensor(CudaTensor):
            is_cuda = False

        class CpuTorch(HostTensor):
            def get_device(self):
                return -1

        lib.fake_set_nparams(2)
        lib.fake_pin.argtypes = [ctypes.c_uint64] * 3
        PINNED, ALIAS = HOST + (1 << 20), 1 << 30
        lib.fake_pin(PINNED, 1 << 16, ALIAS)  # the GPU reaches it at ALIAS
        out = {}
        for cls in (HostTensor, CpuTorch):
            k[(1,)](cls(PINNED + 256), CudaTensor(8192))
            out[cls.__name__] = record(2)["params"]
            try:
                k[(1,)](cls(PINNED + (1 << 16)), CudaTensor(8192))  # just past the pinned range
                out[cls.__name__ + "-pageable"] = None
            except ValueError as e:
                out[cls.__name__ + "-pageable"] = str(e)
        import threading  # a thread with no current context: the driver is asked in device 0's
        t = threading.Thread(target=lambda: k[(1,)](CpuTorch(PINNED + 512), CudaTensor(8192)))
        t.start()
        t.join()
        out["thread"] = record(2)["params"]
        ck = k.warmup(CpuTorch(PINNED), CpuTorch(PINNED + 64), grid=(1,))  # a compiled kernel's launch
        ck[(1, 1, 1)](CpuTorch(PINNED + 128), CudaTensor(8192))
        out["compiled"] = record(2)["params"]
        print(json.dumps(out))
    """, tmp_path)
    alias = 1 << 30
    assert got["HostTensor"] == got["CpuTorch"] == [alias + 256, 8192]
    assert got["compiled"] == [alias + 128, 8192] and got["thread"] == [alias + 512, 8192]
    for name in ("HostTensor", "CpuTorch"):
        assert got[name + "-pageable"] == ("Pointer argument (at 0) cannot be accessed from the GPU "
                                           "(a CPU tensor passed to a CUDA kernel?)")


def test_stream_getter_and_torch(fake_cuda, tmp_path):
    got = run_child(fake_cuda, """
        from ctriton import _C

        @triton.jit
        def k(x_ptr):
            pass

        x = CudaTensor(4096)
        out = []
        triton.runtime.driver.active  # the CUDA driver, activated first
        _C.set_backend(_C.BACKEND_CUDA, lambda: 1234)  # a driver's own stream getter
        k[(1,)](x)
        out.append(record(0)["stream"])
        k[(1,)](x, stream=99)  # an explicit stream wins
        out.append(record(0)["stream"])
        _C.set_backend(_C.BACKEND_CUDA, None)
        k[(1,)](x)
        out.append(record(0)["stream"])
        try:  # torch without a usable GPU: the default stream, no error
            import torch  # noqa: F401
            k[(1,)](x)
            k[(1,)](x)
            out.append(record(0)["stream"])
        except ImportError:
            out.append(0)
        print(json.dumps(out))
    """, tmp_path)
    assert got == [1234, 99, 0, 0]


MADE_MAPS = """
@triton.jit
def made(ptrs, sizes, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # descriptors over loaded values: on sm_90 the kernel makes their maps
    # in global scratch, which the launch gets from the allocator
    a = tl.load(ptrs).to(tl.pointer_type(tl.float16))
    b = tl.load(ptrs + 1).to(tl.pointer_type(tl.float16))
    M = tl.load(sizes)
    N = tl.load(sizes + 1)
    K = tl.load(sizes + 2)
    a_desc = tl.make_tensor_descriptor(a, [M, K], [K, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b, [N, K], [K, 1], [BN, BK])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(tl.cdiv(K, BK)):
        x = a_desc.load([tl.program_id(0) * BM, kk * BK])
        y = b_desc.load([tl.program_id(1) * BN, kk * BK])
        acc = tl.dot(x, y.T, acc)
    tl.store(c_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], acc.to(tl.float16))

@triton.jit
def plain(x_ptr):
    tl.store(x_ptr, 1.0)

class Buf:
    def __init__(self, p):
        self.p = p
    def data_ptr(self):
        return self.p

calls = []
def alloc(size, alignment, stream):
    calls.append([size, alignment, stream])
    return Buf(0x20000)

def count():
    return lib.fake_launch().contents.count

lib.fake_set_nparams(4)
args = (CudaTensor(4096, "torch.int64"), CudaTensor(8192, "torch.int32"), CudaTensor(1 << 16, "torch.float16"))
kw = dict(BM=64, BN=64, BK=64, num_warps=4, num_stages=3)
"""


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_global_scratch_from_the_allocator(fake_cuda, tmp_path):
    """A kernel with global scratch: the launch calls the allocator once with
    (bytes per program x programs, alignment, stream) and passes its
    buffer's data_ptr() after the other parameters; a compiled kernel's own
    launch too; a kernel without scratch never calls it."""
    got = run_child(fake_cuda, MADE_MAPS + textwrap.dedent("""
        out = {}
        triton.set_allocator(alloc)
        ck = made[(3, 2)](*args, stream=77, **kw)
        out["meta"] = [ck.metadata.global_scratch_size, ck.metadata.global_scratch_align]
        out["a"] = record(4)
        out["calls_a"] = list(calls)
        made[(5,)](*args, **kw)
        out["b"] = record(4)
        ck[(2, 1, 1)](*args, 64, 64, 64)  # every argument, constexprs too
        out["c"] = record(4)
        out["calls"] = list(calls)
        del calls[:]
        lib.fake_set_nparams(1)  # the fake reads that many parameters
        plain[(4,)](CudaTensor(4096))
        out["plain"] = [list(calls), record(1)["params"]]
        print(json.dumps(out))
    """), tmp_path)
    size, align = got["meta"]
    assert size == 256 and align == 128
    assert got["calls_a"] == [[size * 6, 128, 77]]
    assert got["a"]["params"] == [4096, 8192, 1 << 16, 0x20000] and got["a"]["grid"] == [3, 2, 1]
    assert got["calls"][1:] == [[size * 5, 128, 0], [size * 2, 128, 0]]
    assert got["b"]["params"][3] == 0x20000 and got["c"]["params"][3] == 0x20000
    assert got["c"]["count"] == got["a"]["count"] + 2
    assert got["plain"] == [[], [4096]]


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_global_scratch_without_allocator(fake_cuda, tmp_path):
    """No allocator: Triton's RuntimeError before anything is launched; the
    next launch, with an allocator, works. A buffer that is not aligned as
    the kernel asks is a ValueError, also launching nothing."""
    got = run_child(fake_cuda, MADE_MAPS + textwrap.dedent("""
        out = {}
        n0 = count()
        try:
            made[(2,)](*args, **kw)
        except RuntimeError as e:
            out["err"] = str(e)
        out["after_err"] = count() - n0
        triton.set_allocator(lambda size, align, stream: Buf(0x30000 + 16))
        try:
            made[(2,)](*args, **kw)
        except ValueError as e:
            out["misaligned"] = str(e)
        out["after_misaligned"] = count() - n0
        triton.set_allocator(alloc)
        made[(2,)](*args, **kw)
        out["ok"] = [count() - n0, record(4)["params"], list(calls)]
        print(json.dumps(out))
    """), tmp_path)
    assert got["err"] == ("Kernel requires a runtime memory allocation, but no allocator was set. "
                          "Use triton.set_allocator to specify an allocator.")
    assert got["after_err"] == 0 and got["after_misaligned"] == 0
    assert "aligned to 128 bytes" in got["misaligned"]
    assert got["ok"] == [1, [4096, 8192, 1 << 16, 0x20000], [[512, 128, 0]]]


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_prefer_shared_carveout(fake_cuda, tmp_path):
    """A kernel of more than 48 KB of shared memory is allowed exactly what
    it needs, the carveout left to the driver; with CTRITON_PREFER_SHARED=1
    it is loaded as Triton loads it: CU_FUNC_CACHE_PREFER_SHARED and every
    opt-in byte of the device (232448 on the fake sm_90) allowed."""
    got = run_child(fake_cuda, """
        class Cfg(ctypes.Structure):
            _fields_ = [("cache_config", ctypes.c_int), ("max_dynamic", ctypes.c_int)]
        lib.fake_func_cfg.restype = ctypes.POINTER(Cfg)
        from test_regperm import subtile_matmul as mm  # a plain K-loop matmul

        out = []
        for env, bk in (("0", 64), ("1", 32)):  # two kernels: each loads once
            os.environ["CTRITON_PREFER_SHARED"] = env
            a, b, c = (CudaTensor(i << 20, "torch.float16") for i in (1, 2, 3))
            mm[(1,)](a, b, c, 1024, BM=128, BN=128, BK=bk, SUBTILE=False, num_warps=4, num_stages=4)
            f = lib.fake_func_cfg().contents
            out.append([lib.fake_launch().contents.shared, f.cache_config, f.max_dynamic])
        print(json.dumps(out))
    """, tmp_path)
    (sh0, cc0, md0), (sh1, cc1, md1) = got
    assert sh0 > 49152 and sh1 > 49152, got
    assert cc0 == -1 and md0 == sh0, got        # the driver's carveout, what the kernel needs
    assert cc1 == 1 and md1 == 232448, got      # PREFER_SHARED, every opt-in byte


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_max_ctas_per_sm_pads_shared_memory(fake_cuda, tmp_path):
    """CTRITON_MAX_CTAS_PER_SM=N: the launch asks for enough dynamic shared
    memory that N + 1 blocks do not fit in the SM's 233472 bytes (1024
    reserved per block on the fake sm_90): 233472 // 3 - 1023 for N = 2,
    233472 // 2 - 1023 for N = 1; unset, or a cap the kernel's own shared
    memory already keeps, the kernel's bytes."""
    got = run_child(fake_cuda, """
        from test_regperm import subtile_matmul as mm  # a plain K-loop matmul

        out = []
        os.environ["CTRITON_LAG_SLOT"] = "0"  # the stages' own slots, no lag slot
        # one kernel each (a kernel is loaded once, with the variable as it is then)
        for cap, stages in (("", 2), ("2", 3), ("1", 4), ("8", 5)):
            os.environ["CTRITON_MAX_CTAS_PER_SM"] = cap
            a, b, c = (CudaTensor(i << 20, "torch.float16") for i in (1, 2, 3))
            mm[(1,)](a, b, c, 1024, BM=128, BN=128, BK=32, SUBTILE=False, num_warps=4, num_stages=stages)
            out.append(lib.fake_launch().contents.shared)
        print(json.dumps(out))
    """, tmp_path)
    none, two, one, eight = got
    slot = (128 * 32 + 32 * 128) * 2  # one stage of the A and B tiles
    assert none == 2 * slot, got
    assert two == 233472 // 3 - 1023, got
    assert one == 233472 // 2 - 1023, got
    assert eight == 5 * slot, got  # its own bytes already keep it under 8 a SM
