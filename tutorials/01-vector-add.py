"""
Vector addition
===============

The smallest useful kernel: out = x + y, one block of BLOCK_SIZE elements
per program instance. It shows

* the ``@triton.jit`` decorator and a ``tl.constexpr`` block size,
* ``tl.program_id`` / ``tl.arange`` to find the elements of this instance,
* masked ``tl.load`` / ``tl.store`` for the tail of the vector,
* a grid computed from the launch's own arguments (``meta``),
* ``triton.testing`` to check the result and to benchmark it.

It runs on the GPU with torch tensors, and on the CPU backend with numpy
arrays (smaller sizes) when there is no GPU.
"""
import os

import ctriton as triton
import ctriton.language as tl

try:
    import torch
except ImportError:
    torch = None

import numpy as np

ON_GPU = triton.runtime.driver.active.get_current_target().backend == "cuda"


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # Program instance `pid` owns elements [pid * BLOCK_SIZE, (pid + 1) * BLOCK_SIZE).
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    # The last block may run past the end of the vectors: mask it.
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def empty_like(x):
    return torch.empty_like(x) if torch is not None and isinstance(x, torch.Tensor) \
        else np.empty_like(x)


def add(x, y):
    """x + y through the kernel; x and y are same-shape tensors or arrays."""
    out = empty_like(x)
    n = out.numel() if hasattr(out, "numel") else out.size
    # The grid is a function of the launch's arguments, constexprs included.
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
    return out


def rand(n, seed=0):
    if ON_GPU:
        g = torch.Generator(device="cuda").manual_seed(seed)
        return torch.rand(n, device="cuda", generator=g)
    return np.random.default_rng(seed).random(n, dtype=np.float32)


def check():
    size = 98432
    x, y = rand(size, 0), rand(size, 1)
    got = add(x, y)
    want = x + y
    triton.testing.assert_close(got, want, atol=0, rtol=0)
    print(f"vector add of {size} elements: the kernel matches "
          f"{'torch' if ON_GPU else 'numpy'} exactly")


sizes = [2**i for i in range(12, 28 if ON_GPU else 22, 1 if ON_GPU else 2)]


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["size"], x_vals=sizes, x_log=True,
        line_arg="provider", line_vals=["ctriton", "reference"],
        line_names=["ctriton", "torch" if ON_GPU else "numpy"],
        styles=[("blue", "-"), ("green", "-")],
        ylabel="GB/s", plot_name="vector-add-performance", args={}))
def benchmark(size, provider):
    x, y = rand(size, 0), rand(size, 1)
    q = [0.5, 0.2, 0.8]
    if provider == "ctriton":
        ms, lo, hi = triton.testing.do_bench(lambda: add(x, y), quantiles=q)
    else:
        ms, lo, hi = triton.testing.do_bench(lambda: x + y, quantiles=q)
    gbps = lambda t: 3 * size * 4 * 1e-9 / (t * 1e-3)  # noqa: E731  read x, y; write out
    return gbps(ms), gbps(hi), gbps(lo)


if __name__ == "__main__":
    check()
    benchmark.run(print_data=True, save_path=os.environ.get("CTRITON_BENCH_DIR", "."))
