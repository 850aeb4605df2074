"""triton._C.libtriton through the compat layer (``from triton._C.libtriton
import nvidia``; ``nvidia.cublas.CublasLt``, torch's cuBLAS) and a program
in the style of the persistent-matmul tutorial run unmodified on the CPU
(autotuned persistent kernels with tl.range(flatten=, warp_specialize=),
host tensor descriptors resized by a config's pre_hook, device-side
descriptors with triton.set_allocator, launch_metadata recorded by the
profiler's hook="triton", the viewer)."""
import os
import subprocess
import sys
import textwrap

import pytest

import ctriton

torch = pytest.importorskip("torch")

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(ctriton.__file__)))


def _run(code, tmp_path, *args):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, CTRITON_BACKEND="cpu")
    return subprocess.run([sys.executable, "-m", "ctriton", "run", str(script), *args],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)


def test_triton_C_is_a_package_with_libtriton(tmp_path):
    r = _run("""
        import sys
        import ctriton
        import triton
        from triton._C.libtriton import nvidia
        import triton._C.libtriton.nvidia as nv
        assert nv is nvidia and nvidia.cublas.CublasLt
        assert sys.modules["triton._C.libtriton"] is ctriton._libtriton
        assert triton._C.libtriton is ctriton._libtriton
        # everything of ctriton's extension through triton._C, and ctriton._C itself unchanged
        assert triton._C.sha256 is ctriton._C.sha256 and triton._C.KernelRuntime
        assert ctriton._C.__name__ == "ctriton._C" and not hasattr(ctriton._C, "__path__")
        assert sys.modules["ctriton._C"] is ctriton._C and sys.modules["triton._C"] is triton._C
        try:
            from triton._C.libtriton import ir
        except ImportError as e:
            print("no ir:", type(e).__name__)
        print("ok")
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-1] == "ok" and "no ir: ImportError" in r.stdout


def _blas():
    from ctriton._libtriton import nvidia
    return nvidia.cublas.CublasLt(torch.empty(1 << 16, dtype=torch.uint8))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_cublaslt_matmul_takes_b_transposed(dtype):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(48, 40, generator=g).to(dtype)
    b = torch.randn(24, 40, generator=g).to(dtype)  # N x K
    c = torch.full((48, 24), 7.0, dtype=dtype)
    _blas().matmul(a, b, c)
    ref = a.double() @ b.double().T
    tol = 1e-4 if dtype == torch.float32 else 0.25
    assert (c.double() - ref).abs().max() < tol


def test_cublaslt_fp8_and_gemm():
    g = torch.Generator().manual_seed(1)
    a = (torch.randn(32, 64, generator=g) / 2).to(torch.float8_e4m3fn)
    b = (torch.randn(16, 64, generator=g) / 2).to(torch.float8_e4m3fn)
    c = torch.empty(32, 16, dtype=torch.float8_e4m3fn)
    _blas().matmul(a, b, c)
    ref = (a.float() @ b.float().T).to(torch.float8_e4m3fn)
    assert torch.equal(c.view(torch.uint8), ref.view(torch.uint8))
    # gemm: d = alpha * a @ b.T + beta * c, c float16
    a16, b16 = torch.randn(8, 16, generator=g).half(), torch.randn(12, 16, generator=g).half()
    c16 = torch.randn(8, 12, generator=g).half()
    d = torch.empty(8, 12, dtype=torch.float16)
    _blas().gemm(a16, b16, c16, d, 2.0, 0.5)
    ref = 2.0 * (a16.float() @ b16.float().T) + 0.5 * c16.float()
    assert (d.float() - ref).abs().max() < 0.05


def test_cublaslt_checks():
    blas = _blas()
    a, b = torch.zeros(4, 8, dtype=torch.float16), torch.zeros(6, 8, dtype=torch.float16)
    with pytest.raises(RuntimeError, match="B needs to be transposed"):
        blas.matmul(a, b.T.contiguous(), torch.empty(4, 6, dtype=torch.float16))
    with pytest.raises(RuntimeError, match="Data types do not match"):
        blas.matmul(a, b, torch.empty(4, 6, dtype=torch.float32))
    with pytest.raises(RuntimeError, match="Expected B.shape\\[0\\] == C.shape\\[1\\]"):
        blas.matmul(a, b, torch.empty(4, 5, dtype=torch.float16))
    with pytest.raises(RuntimeError, match="Unsupported data type"):
        blas.matmul(a.double(), b.double(), torch.empty(4, 6, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="C dtype must be float16"):
        blas.gemm(a, b, torch.empty(4, 6), torch.empty(4, 6, dtype=torch.float16), 1.0, 0.0)
    with pytest.raises(NotImplementedError):
        blas.block_scaled_matmul_mxfp8(a, b, None, None, None)
    with pytest.raises(TypeError, match="workspace"):
        type(blas)(42)


PERSISTENT_PROGRAM = """
    import torch
    import triton
    import triton.language as tl
    import triton.profiler as proton
    from triton.tools.tensor_descriptor import TensorDescriptor
    from triton._C.libtriton import nvidia

    blas = nvidia.cublas.CublasLt(torch.empty(1 << 16, dtype=torch.uint8))

    def _meta(grid, kernel, args):
        M, N, K = args["M"], args["N"], args["K"]
        ws = "_ws" if args.get("WARP_SPECIALIZE", False) else ""
        return {"name": f"{kernel.name}{ws} [M={M}, N={N}, K={K}]", "flops16": 2. * M * N * K,
                "bytes": 2 * (M * K + N * K + M * N)}

    def hook(nargs):
        nargs["a_desc"].block_shape = [nargs["BM"], nargs["BK"]]
        nargs["b_desc"].block_shape = [nargs["BN"], nargs["BK"]]
        nargs["c_desc"].block_shape = [nargs["BM"], nargs["BN"]]

    CONFIGS = [triton.Config({"BM": 32, "BN": 32, "BK": 16}, num_warps=4, pre_hook=hook),
               triton.Config({"BM": 16, "BN": 32, "BK": 32}, num_warps=4, pre_hook=hook)]

    @triton.jit
    def _pid(tile_id, num_pid_n):
        return tile_id // num_pid_n, tile_id % num_pid_n

    @triton.autotune(configs=CONFIGS, key=["M", "N", "K", "WARP_SPECIALIZE"])
    @triton.jit(launch_metadata=_meta)
    def tma_persistent(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr, NUM_SMS: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
        num_pid_n = tl.cdiv(N, BN)
        num_tiles = tl.cdiv(M, BM) * num_pid_n
        for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=True,
                                warp_specialize=WARP_SPECIALIZE):
            pid_m, pid_n = _pid(tile_id, num_pid_n)
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for ki in range(tl.cdiv(K, BK)):
                a = a_desc.load([pid_m * BM, ki * BK])
                b = b_desc.load([pid_n * BN, ki * BK])
                acc = tl.dot(a, b.T, acc)
            c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))

    @triton.jit(launch_metadata=_meta)
    def descriptor_persistent(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                              BK: tl.constexpr, NUM_SMS: tl.constexpr):
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
        c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
        num_pid_n = tl.cdiv(N, BN)
        for tile_id in tl.range(tl.program_id(0), tl.cdiv(M, BM) * num_pid_n, NUM_SMS, flatten=False):
            pid_m, pid_n = _pid(tile_id, num_pid_n)
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for ki in range(tl.cdiv(K, BK)):
                acc = tl.dot(a_desc.load([pid_m * BM, ki * BK]), b_desc.load([pid_n * BN, ki * BK]).T, acc)
            c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))

    M, N, K = 64, 96, 48
    torch.manual_seed(0)
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(N, K, dtype=torch.float16)  # transposed, as the tutorial passes it
    ref = a.float() @ b.float().T

    def run_tma(ws):
        c = torch.empty(M, N, dtype=torch.float16)
        d = [TensorDescriptor.from_tensor(t, [1, 1]) for t in (a, b, c)]
        tma_persistent[lambda META: (3, )](*d, M, N, K, NUM_SMS=3, WARP_SPECIALIZE=ws)
        return c

    def run_descriptor():
        triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8))
        c = torch.empty(M, N, dtype=torch.float16)
        descriptor_persistent[(2, )](a, b, c, M, N, K, BM=32, BN=32, BK=16, NUM_SMS=2)
        return c

    def run_blas():
        c = torch.empty(M, N, dtype=torch.float16)
        with proton.scope(f"cuBLAS [M={M}, N={N}, K={K}]", {"bytes": 1, "flops16": 2. * M * N * K}):
            blas.matmul(a, b, c)
        return c

    for fn in (lambda: run_tma(False), lambda: run_tma(True), run_descriptor, run_blas):
        assert (fn().float() - ref).abs().max() < 0.05

    proton.start("matmul", hook="triton")
    proton.deactivate()
    run_tma(False)                   # not recorded
    proton.activate(0)
    for _ in range(3):
        run_tma(False)
        run_descriptor()
        run_blas()
    proton.deactivate(0)
    proton.finalize()
    import triton.profiler.viewer as proton_viewer
    tree, metrics = proton_viewer.parse(["tflop16/s", "time/ms"], "matmul.hatchet")
    proton_viewer.print_tree(tree, metrics)
    import json
    frames = {c["frame"]["name"]: c["metrics"] for c in json.load(open("matmul.hatchet"))[0]["children"]}
    print(sorted((k, v["count"], v.get("flops16")) for k, v in frames.items()))
"""


def test_persistent_matmul_program_on_cpu(tmp_path):
    r = _run(PERSISTENT_PROGRAM, tmp_path)
    assert r.returncode == 0, r.stderr
    flops = 2. * 64 * 96 * 48
    last = r.stdout.strip().splitlines()[-1]
    assert last == repr(sorted([
        ("cuBLAS [M=64, N=96, K=48]", 3, 3 * flops),
        ("descriptor_persistent [M=64, N=96, K=48]", 3, 3 * flops),
        ("tma_persistent [M=64, N=96, K=48]", 3, 3 * flops),
    ])), r.stdout
    assert "tflop16/s" in r.stdout and "tma_persistent [M=64" in r.stdout
