"""
Fused softmax
=============

Row-wise softmax of an M x N matrix in one pass over memory: each program
instance loads whole rows (N fits in one block), subtracts the row maximum
for stability, exponentiates, normalizes and stores. A naive softmax reads
and writes the matrix several times; this one reads it once and writes it
once, so it is bound by memory bandwidth only.

It also shows compiling ahead of a launch (``kernel.warmup``), reading a
compiled kernel's resources (registers, shared memory) to size a persistent
grid by occupancy, and launching a ``CompiledKernel`` directly.
"""
import os

import ctriton as triton
import ctriton.language as tl

try:
    import torch
except ImportError:
    torch = None

import numpy as np

driver = triton.runtime.driver.active
ON_GPU = driver.get_current_target().backend == "cuda"


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    # A persistent kernel: program `start` handles rows start, start + P, ...
    start = tl.program_id(0)
    step = tl.num_programs(0)
    for row in tl.range(start, n_rows, step, num_stages=num_stages):
        row_ptr = in_ptr + row * in_row_stride
        cols = tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        # Columns past the end read -inf: they vanish from the max and the sum.
        x = tl.load(row_ptr + cols, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        y = num / tl.sum(num, axis=0)
        tl.store(out_ptr + row * out_row_stride + cols, y, mask=mask)


_compiled = {}


def softmax(x):
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    num_warps = 8
    num_stages = 4 if ON_GPU else 1
    y = torch.empty_like(x) if torch is not None and isinstance(x, torch.Tensor) \
        else np.empty_like(x)
    key = (BLOCK_SIZE, str(x.dtype))
    if key not in _compiled:
        k = softmax_kernel.warmup(y, x, x.stride(0) if ON_GPU else n_cols, n_cols, n_rows,
                                  n_cols, BLOCK_SIZE=BLOCK_SIZE, num_stages=num_stages,
                                  num_warps=num_warps, grid=(1,))
        k._init_handles()
        props = driver.utils.get_device_properties(driver.get_current_device())
        if ON_GPU:
            # Programs per SM bounded by registers and by shared memory.
            regs = max(k.n_regs, 1) * props["warpSize"] * num_warps
            occ = props["max_num_regs"] // regs
            if k.metadata.shared:
                occ = min(occ, props["max_shared_mem"] // k.metadata.shared)
            programs = props["multiprocessor_count"] * max(occ, 1)
        else:
            programs = props["multiprocessor_count"]
        _compiled[key] = (k, programs)
    k, programs = _compiled[key]
    programs = min(programs, n_rows)
    stride = x.stride(0) if ON_GPU else n_cols
    # A CompiledKernel takes every argument, constexprs included, and a 3-D grid.
    k[(programs, 1, 1)](y, x, stride, stride, n_rows, n_cols, BLOCK_SIZE, num_stages)
    return y


def reference(x):
    if ON_GPU:
        return torch.softmax(x, dim=1)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def rand(m, n, seed=0):
    if ON_GPU:
        g = torch.Generator(device="cuda").manual_seed(seed)
        return torch.randn(m, n, device="cuda", generator=g)
    return np.random.default_rng(seed).standard_normal((m, n), dtype=np.float32)


def check():
    x = rand(1823, 781)
    triton.testing.assert_close(softmax(x), reference(x), atol=1e-6, rtol=1e-5)
    print(f"softmax of 1823x781: the kernel matches {'torch' if ON_GPU else 'numpy'}")


N_vals = [128 * i for i in range(2, 100 if ON_GPU else 17, 4 if ON_GPU else 2)]


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["N"], x_vals=N_vals, line_arg="provider",
        line_vals=["ctriton", "reference"],
        line_names=["ctriton", "torch" if ON_GPU else "numpy"],
        styles=[("blue", "-"), ("green", "-")], ylabel="GB/s",
        plot_name="softmax-performance", args={"M": 4096 if ON_GPU else 256}))
def benchmark(M, N, provider):
    x = rand(M, N)
    fn = (lambda: softmax(x)) if provider == "ctriton" else (lambda: reference(x))
    ms = triton.testing.do_bench(fn)
    return 2 * x.size * 4 * 1e-9 / (ms * 1e-3) if not ON_GPU else \
        2 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)


if __name__ == "__main__":
    check()
    benchmark.run(print_data=True, save_path=os.environ.get("CTRITON_BENCH_DIR", "."))
