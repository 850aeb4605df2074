"""Side-by-side GPU benchmark: ctriton vs triton (3.6, imported as `triton`)
vs torch, in one process, on the same inputs. Prints bandwidths and ratios,
and the host time per launch of a small kernel.

    python3 bench/run_gpu.py
"""
import importlib.util
import os
import sys
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


def bench(fn):
    return ctriton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def load_tutorial(name):
    path = os.path.join(HERE, "..", "tutorials", name)
    spec = importlib.util.spec_from_file_location(name.replace("-", "_")[:-3], path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


# Triton's versions of the same kernels, written the same way.
if triton is not None:
    @triton.jit
    def tr_add(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m),
                 mask=m)

    @triton.jit
    def tr_softmax(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_SIZE)
        x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(out_ptr + row * out_stride + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)

    @triton.jit
    def tr_noop(x_ptr, n, BLOCK: tl.constexpr):
        pass


@ctriton.jit
def ct_noop(x_ptr, n, BLOCK: ctl.constexpr):
    pass


def row(name, nbytes, times):
    base = times.get("torch")
    cells = []
    for k, t in times.items():
        gbps = nbytes / (t * 1e-3) / 1e9
        ratio = f" ({base / t:.2f}x torch)" if base and k != "torch" else ""
        cells.append(f"{k} {gbps:8.1f} GB/s{ratio}")
    if "triton" in times:
        cells.append(f"ctriton/triton speed {times['triton'] / times['ctriton']:.2f}x")
    print(f"{name:28s} " + " | ".join(cells))


def main():
    t01 = load_tutorial("01-vector-add.py")
    t02 = load_tutorial("02-fused-softmax.py")
    n = 1 << 26
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out = torch.empty_like(x)
    times = {"ctriton": bench(lambda: t01.add(x, y))}
    if triton is not None:
        g = lambda m: (triton.cdiv(n, m["BLOCK_SIZE"]),)  # noqa: E731
        times["triton"] = bench(lambda: tr_add[g](x, y, out, n, BLOCK_SIZE=1024))
    times["torch"] = bench(lambda: torch.add(x, y, out=out))
    row("vector add 2^26 fp32", 3 * n * 4, times)

    for M, N in ((4096, 1024), (4096, 4096), (8192, 8192)):
        a = torch.randn(M, N, device="cuda")
        o = torch.empty_like(a)
        times = {"ctriton": bench(lambda: t02.softmax(a))}
        if triton is not None:
            B = triton.next_power_of_2(N)
            nw = 4 if B <= 2048 else 8 if B <= 4096 else 16
            times["triton"] = bench(lambda: tr_softmax[(M,)](o, a, a.stride(0), o.stride(0), M, N,
                                                           BLOCK_SIZE=B, num_warps=nw))
        times["torch"] = bench(lambda: torch.softmax(a, dim=1))
        row(f"softmax {M}x{N} fp32", 2 * M * N * 4, times)

    # Host time per launch of a no-op kernel (no synchronization in the loop).
    s = torch.empty(16, device="cuda")
    launches = {"ctriton": lambda: ct_noop[(1,)](s, 16, BLOCK=16)}
    if triton is not None:
        launches["triton"] = lambda: tr_noop[(1,)](s, 16, BLOCK=16)
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
        print(f"launch overhead {k:12s} {us:6.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
