"""Resources: compiling a thousand kernels in one process (CPU backend,
each one compiled, launched, checked and dropped) keeps memory, threads and
file descriptors flat: every compile frees its LLVM context, its IR arena
and, with its kernel, the jitted code."""
import gc
import os
import time

import numpy as np

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu


@triton.jit
def tiny(X, Y, C: tl.constexpr):
    tl.store(Y + tl.program_id(0), tl.load(X + tl.program_id(0)) * 2 + C)


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def counts():
    return len(os.listdir("/proc/self/task")), len(os.listdir("/proc/self/fd"))


def compile_run_drop(lo, hi, x, y):
    for c in range(lo, hi):
        tiny[(4,)](x, y, c)  # a new specialization: a compile
        assert y[3] == 6 + c
        tiny.clear_cache()  # drops the CompiledKernel and its code


def test_thousand_compiles_keep_memory_flat():
    x = np.arange(4, dtype=np.float32)
    y = np.zeros(4, np.float32)
    t0 = time.time()
    compile_run_drop(0, 100, x, y)  # warm-up: allocator pools, LLVM's statics
    gc.collect()
    rss0, (threads0, fds0) = rss_mb(), counts()
    compile_run_drop(100, 1000, x, y)
    gc.collect()
    rss1, (threads1, fds1) = rss_mb(), counts()
    growth = rss1 - rss0
    print(f"1000 compiles in {time.time() - t0:.1f} s; RSS {rss0:.1f} -> {rss1:.1f} MB")
    assert growth < 16, f"RSS grew by {growth:.1f} MB over 900 compiles"
    assert threads1 <= threads0 and fds1 <= fds0
