"""Side-by-side CPU benchmark: ctriton's CPU backend vs numpy (and torch on
the CPU when it imports), in one process, on the same arrays. ctriton runs
the kernels of bench/kernels_src.py (the same source run_gpu.py measures).
Prints the median time of several rounds per implementation, as GB/s or
GFLOP/s, and the ratio ctriton/numpy (> 1: ctriton is faster):

  - vector add (2^20, 2^24 fp32), softmax (4096x1024, 1024x4096 fp32),
    layernorm forward (4096x1024 fp32), matmul (fp32 256^3, 512^3);
  - host time per launch of a no-op kernel (a hit in the variant cache).

The rounds of the implementations alternate, so that load from other
processes on the machine hits them alike.

OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, when set, can make OpenBLAS (numpy's
matmul) pick slow code paths; this process drops both before numpy is
imported and says so. They do not affect ctriton.

    python3 bench/run_cpu.py [--quick]
"""
import importlib.util
import os
import statistics
import sys
import time

_OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
_DROPPED = {k: os.environ.pop(k) for k in _OPENBLAS_VARS if k in os.environ}

import numpy as np  # noqa: E402

import ctriton  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

HERE = os.path.dirname(os.path.abspath(__file__))
QUICK = "--quick" in sys.argv


def load():
    spec = importlib.util.spec_from_file_location("kernels_src_cpu", os.path.join(HERE, "kernels_src.py"))
    m = importlib.util.module_from_spec(spec)
    m.triton, m.tl = ctriton, ctriton.language
    spec.loader.exec_module(m)
    return m


def timeit(fns, budget_ms=300 if not QUICK else 80, rounds=7 if not QUICK else 3):
    """fns: {impl: fn}. Median seconds per call of each, over `rounds`
    alternating rounds of about budget_ms / rounds each."""
    per_call = {}
    for k, f in fns.items():
        f()
        t = time.perf_counter()
        f()
        per_call[k] = max(time.perf_counter() - t, 1e-7)
    reps = {k: max(1, int(budget_ms * 1e-3 / rounds / t)) for k, t in per_call.items()}
    samples = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            n = reps[k]
            t = time.perf_counter()
            for _ in range(n):
                f()
            samples[k].append((time.perf_counter() - t) / n)
    return {k: statistics.median(v) for k, v in samples.items()}


def row(name, times, work, unit):
    """times: {impl: s}; work: bytes (GB/s) or flops (GFLOP/s)."""
    cells = [f"{k} {work / t / 1e9:8.2f} {unit}" for k, t in times.items()]
    ratios = [f"ctriton/{k} {t / times['ctriton']:5.2f}x" for k, t in times.items() if k != "ctriton"]
    print(f"{name:28s} " + " | ".join(cells + ratios), flush=True)


def check(name, got, want, tol):
    if not np.allclose(got, want, rtol=tol, atol=tol):
        print(f"  warning: ctriton {name} differs from numpy "
              f"(max abs err {np.max(np.abs(got - want)):.3g})", flush=True)


def to_torch(*arrays):
    return [torch.from_numpy(a) for a in arrays]


def vector_add(k):
    for n in (1 << 20, 1 << 24):
        rng = np.random.default_rng(0)
        x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        out, ref = np.empty_like(x), np.empty_like(x)
        g = ((n + 1023) // 1024,)
        fns = {"ctriton": lambda: k.add[g](x, y, out, n, BLOCK_SIZE=1024),
               "numpy": lambda: np.add(x, y, out=ref)}
        if torch is not None:
            tx, ty, tr = to_torch(x, y, np.empty_like(x))
            fns["torch"] = lambda: torch.add(tx, ty, out=tr)
        fns["ctriton"]()
        check("add", out, x + y, 0)
        row(f"vector add 2^{n.bit_length() - 1} fp32", timeit(fns), 3 * n * 4, "GB/s")


def np_softmax(x, out):
    m = x.max(axis=1, keepdims=True)
    np.subtract(x, m, out=out)
    np.exp(out, out=out)
    out /= out.sum(axis=1, keepdims=True)


def softmax(k):
    for M, N in ((4096, 1024), (1024, 4096)):
        a = np.random.default_rng(0).standard_normal((M, N), dtype=np.float32)
        o, ref = np.empty_like(a), np.empty_like(a)
        B = ctriton.next_power_of_2(N)
        fns = {"ctriton": lambda: k.softmax[(M,)](o, a, N, N, M, N, BLOCK_SIZE=B),
               "numpy": lambda: np_softmax(a, ref)}
        if torch is not None:
            ta, = to_torch(a)
            fns["torch"] = lambda: torch.softmax(ta, dim=1)
        fns["ctriton"]()
        fns["numpy"]()
        check("softmax", o, ref, 1e-5)
        row(f"softmax {M}x{N} fp32", timeit(fns), 2 * M * N * 4, "GB/s")


def np_layernorm(x, w, b, eps, out):
    mean = x.mean(axis=1, keepdims=True)
    np.subtract(x, mean, out=out)
    var = np.mean(out * out, axis=1, keepdims=True)
    out *= 1 / np.sqrt(var + eps)
    out *= w
    out += b


def layernorm(k):
    M, N = 4096, 1024
    rng = np.random.default_rng(0)
    x = rng.standard_normal((M, N), dtype=np.float32)
    w, b = rng.random(N, dtype=np.float32), rng.random(N, dtype=np.float32)
    y, ref = np.empty_like(x), np.empty_like(x)
    fns = {"ctriton": lambda: k.layernorm[(M,)](x, y, w, b, N, N, 1e-5, BLOCK_SIZE=N),
           "numpy": lambda: np_layernorm(x, w, b, 1e-5, ref)}
    if torch is not None:
        tx, tw, tb = to_torch(x, w, b)
        fns["torch"] = lambda: torch.nn.functional.layer_norm(tx, (N,), tw, tb, 1e-5)
    fns["ctriton"]()
    fns["numpy"]()
    check("layernorm", y, ref, 1e-4)
    row(f"layernorm fwd {M}x{N} fp32", timeit(fns), 2 * M * N * 4, "GB/s")


def matmul(k):
    for S in (256, 512):
        rng = np.random.default_rng(0)
        A, Bm = rng.standard_normal((S, S), dtype=np.float32), rng.standard_normal((S, S), dtype=np.float32)
        C, ref = np.empty_like(A), np.empty_like(A)
        bm, bn, bk = 64, 64, 32
        grid = ((S // bm) * (S // bn),)
        fns = {"ctriton": lambda: k.matmul[grid](A, Bm, C, S, S, S, S, 1, S, 1, S, 1,
                                                  BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8),
               "numpy": lambda: np.matmul(A, Bm, out=ref)}
        if torch is not None:
            tA, tB, tC = to_torch(A, Bm, np.empty_like(A))
            fns["torch"] = lambda: torch.matmul(tA, tB, out=tC)
        fns["ctriton"]()
        check("matmul", C, A.astype(np.float64) @ Bm.astype(np.float64), 1e-3)
        row(f"matmul fp32 {S}^3", timeit(fns), 2 * S ** 3, "GFLOP/s")


def launch_overhead(k):
    """Grid (1,) runs on the calling thread alone; grid (64,) hands chunks
    to the pool's workers as well."""
    x = np.zeros(16, np.float32)
    for g in (1, 64):
        launch = k.noop[(g,)]
        for _ in range(1000):
            launch(x, 16, BLOCK=16)
        samples = []
        for _ in range(5 if not QUICK else 2):
            reps = 20000
            t = time.perf_counter()
            for _ in range(reps):
                launch(x, 16, BLOCK=16)
            samples.append((time.perf_counter() - t) / reps * 1e6)
        print(f"host time per launch (no-op, grid ({g},)): {statistics.median(samples):6.2f} us",
              flush=True)


def main():
    dropped = ", ".join(f"{k}={v}" for k, v in _DROPPED.items())
    print(f"numpy {np.__version__}, torch {torch.__version__ if torch else 'absent'}, "
          f"{os.cpu_count()} cpus" + (f"; unset for this process: {dropped}" if dropped else ""),
          flush=True)
    k = load()
    launch_overhead(k)
    vector_add(k)
    softmax(k)
    layernorm(k)
    matmul(k)
    return 0


if __name__ == "__main__":
    sys.exit(main())
