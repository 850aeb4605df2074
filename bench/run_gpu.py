"""Side-by-side GPU benchmark: ctriton vs Triton (imported as `triton`) vs
torch, in one process, on the same inputs. ctriton and Triton compile the
very same kernel source (bench/kernels_src.py). Prints times and ratios:

  - kernel speed: median time of do_bench (CUDA events), as GB/s or TFLOP/s;
  - host time per launch of a no-op kernel (no synchronization in the loop);
  - compile time: the first call of a kernel in a warm process, with an empty
    cache (every stage compiled) and with a disk-cache hit.

    python3 bench/run_gpu.py
"""
import importlib.util
import os
import sys
import tempfile
import time

import torch

import ctriton
import ctriton.language as ctl

try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "kernels_src.py")
_loads = 0


def load(impl):
    """A fresh module of kernels_src.py with triton/tl bound to impl."""
    global _loads
    _loads += 1
    spec = importlib.util.spec_from_file_location(f"kernels_src_{impl}_{_loads}", SRC)
    m = importlib.util.module_from_spec(spec)
    if impl == "ctriton":
        m.triton, m.tl = ctriton, ctl
    else:
        m.triton, m.tl = triton, tl
    spec.loader.exec_module(m)
    return m


def bench(fn):
    return ctriton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def row(name, times, work, unit):
    """times: {impl: ms}; work: bytes (GB/s) or flops (TFLOP/s)."""
    scale = 1e9 if unit == "GB/s" else 1e12
    cells = [f"{k} {work / (t * 1e-3) / scale:8.1f} {unit}" for k, t in times.items()]
    ratios = []
    if "triton" in times:
        ratios.append(f"ctriton/triton {times['triton'] / times['ctriton']:.2f}x")
    if "torch" in times:
        ratios.append(f"ctriton/torch {times['torch'] / times['ctriton']:.2f}x")
    print(f"{name:30s} " + " | ".join(cells + ratios), flush=True)


def kernel_speed(mods):
    n = 1 << 26
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out = torch.empty_like(x)
    g = (triton_cdiv(n, 1024),)
    times = {k: bench(lambda m=m: m.add[g](x, y, out, n, BLOCK_SIZE=1024)) for k, m in mods.items()}
    times["torch"] = bench(lambda: torch.add(x, y, out=out))
    row("vector add 2^26 fp32", times, 3 * n * 4, "GB/s")

    for M, N in ((4096, 1024), (4096, 4096), (8192, 8192)):
        a = torch.randn(M, N, device="cuda")
        o = torch.empty_like(a)
        B = ctriton.next_power_of_2(N)
        nw = 4 if B <= 2048 else 8 if B <= 4096 else 16
        times = {k: bench(lambda m=m: m.softmax[(M,)](o, a, a.stride(0), o.stride(0), M, N,
                                                      BLOCK_SIZE=B, num_warps=nw))
                 for k, m in mods.items()}
        times["torch"] = bench(lambda: torch.softmax(a, dim=1))
        row(f"softmax {M}x{N} fp32", times, 2 * M * N * 4, "GB/s")

    M, N = 4096, 8192
    xs = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.rand(N, device="cuda", dtype=torch.float16)
    b = torch.rand(N, device="cuda", dtype=torch.float16)
    ys = torch.empty_like(xs)
    times = {k: bench(lambda m=m: m.layernorm[(M,)](xs, ys, w, b, xs.stride(0), N, 1e-5,
                                                    BLOCK_SIZE=8192, num_warps=8))
             for k, m in mods.items()}
    times["torch"] = bench(lambda: torch.nn.functional.layer_norm(xs, (N,), w, b, 1e-5))
    row(f"layernorm fwd {M}x{N} fp16", times, 2 * M * N * 2, "GB/s")

    for S in (1024, 4096):
        A = torch.randn(S, S, device="cuda", dtype=torch.float16)
        Bm = torch.randn(S, S, device="cuda", dtype=torch.float16)
        C = torch.empty(S, S, device="cuda", dtype=torch.float16)
        bm, bn, bk = 128, 128, 32
        grid = (triton_cdiv(S, bm) * triton_cdiv(S, bn),)
        times = {}
        for k, m in mods.items():
            f = lambda m=m: m.matmul[grid](A, Bm, C, S, S, S, A.stride(0), A.stride(1),  # noqa: E731
                                           Bm.stride(0), Bm.stride(1), C.stride(0), C.stride(1),
                                           BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                                           num_warps=8, num_stages=3)
            f()
            ok = torch.allclose(C.float(), (A.float() @ Bm.float()), rtol=1e-2, atol=1e-1)
            times[k] = bench(f)
            if not ok:
                print(f"  warning: {k} matmul {S} result differs from torch", flush=True)
        times["torch"] = bench(lambda: torch.matmul(A, Bm, out=C))
        row(f"matmul fp16 {S}^3", times, 2 * S ** 3, "TFLOP/s")


def triton_cdiv(a, b):
    return (a + b - 1) // b


def launch_overhead(mods):
    s = torch.empty(16, device="cuda")
    launches = {k: (lambda m=m: m.noop[(1,)](s, 16, BLOCK=16)) for k, m in mods.items()}
    launches["torch add_"] = lambda: s.add_(1)
    for k, f in launches.items():
        for _ in range(100):
            f()
        torch.cuda.synchronize()
        reps = 5000
        t = time.perf_counter()
        for _ in range(reps):
            f()
        us = (time.perf_counter() - t) / reps * 1e6
        torch.cuda.synchronize()
        print(f"launch overhead {k:12s} {us:6.2f} us", flush=True)


def first_call(impl, name):
    """Seconds for the first call of kernel `name` from a fresh module."""
    m = load(impl)
    x = torch.rand(1 << 20, device="cuda")
    y = torch.empty_like(x)
    torch.cuda.synchronize()
    t = time.perf_counter()
    if name == "add":
        m.add[(1024,)](x, x, y, 1 << 20, BLOCK_SIZE=1024)
    elif name == "softmax":
        m.softmax[(1024,)](y, x, 1024, 1024, 1024, 1024, BLOCK_SIZE=1024)
    else:
        xs = x.view(256, 4096).half()
        ys = torch.empty_like(xs)
        w = torch.ones(4096, device="cuda", dtype=torch.float16)
        t = time.perf_counter()
        m.layernorm[(256,)](xs, ys, w, w, 4096, 4096, 1e-5, BLOCK_SIZE=4096)
    torch.cuda.synchronize()
    return time.perf_counter() - t


def compile_time(impls):
    for cache in ("cold", "disk hit"):
        os.environ["CTRITON_ALWAYS_COMPILE"] = os.environ["TRITON_ALWAYS_COMPILE"] = (
            "1" if cache == "cold" else "0")
        for name in ("add", "softmax", "layernorm"):
            cells = []
            t = {}
            for impl in impls:
                if cache == "disk hit":
                    first_call(impl, name)  # fill the cache
                t[impl] = min(first_call(impl, name) for _ in range(3))
                cells.append(f"{impl} {t[impl] * 1e3:8.1f} ms")
            if "triton" in t:
                cells.append(f"ctriton/triton {t['triton'] / t['ctriton']:.1f}x faster")
            print(f"first call ({cache:8s}) {name:10s} " + " | ".join(cells), flush=True)


def main():
    impls = ["ctriton"] + (["triton"] if triton is not None else [])
    with tempfile.TemporaryDirectory() as d:
        os.environ["CTRITON_CACHE_DIR"] = os.path.join(d, "ct")
        os.environ["TRITON_CACHE_DIR"] = os.path.join(d, "tr")
        print(f"torch {torch.__version__}, triton {getattr(triton, '__version__', 'absent')}, "
              f"device {torch.cuda.get_device_name()}", flush=True)
        compile_time(impls)
        mods = {k: load(k) for k in impls}
        launch_overhead(mods)
        kernel_speed(mods)
    return 0


if __name__ == "__main__":
    sys.exit(main())
