"""Programs written for GPUs, run on the CPU backend as they are (upstream
tutorials 02 and 03): occupancy figures that size a persistent grid to one
program per core, AMD tuning options in autotune configs dropped, and
torch.cpu's missing set_stream."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401
from ctriton.runtime.driver import CPU_NUM_REGS, CPU_SHARED_MEM

pytestmark = requires_cpu


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_occupancy_is_one_program_per_core(cpu_driver):
    x = np.arange(64, dtype=np.float32)
    y = np.zeros_like(x)
    k = copy_kernel.warmup(x, y, 64, BLOCK=64, num_warps=4, grid=(1,))
    props = triton.runtime.driver.active.utils.get_device_properties(0)
    # tutorial 02's arithmetic (non-AMD branch)
    occupancy = props["max_num_regs"] // (k.n_regs * props["warpSize"] * 4)
    occupancy = min(occupancy, props["max_shared_mem"] // k.metadata.shared)
    assert occupancy == 1
    assert k.n_regs == CPU_NUM_REGS // 4 and k.metadata.shared == CPU_SHARED_MEM
    assert props["multiprocessor_count"] >= 1


@triton.autotune(configs=[triton.Config({"BLOCK": 32, "waves_per_eu": 2, "matrix_instr_nonkdim": 16, "kpack": 1},
                                        num_warps=4)], key=["n"])
@triton.jit
def tuned_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_amd_tuning_options_ignored_on_the_cpu(cpu_driver):
    x = np.arange(100, dtype=np.float32)
    y = np.zeros_like(x)
    tuned_copy[lambda m: (triton.cdiv(100, m["BLOCK"]),)](x, y, 100)
    np.testing.assert_array_equal(y, x)


def test_unknown_keyword_still_refused(cpu_driver):
    x = np.zeros(4, np.float32)
    with pytest.raises(KeyError, match="matrix_instr_nonkdim"):
        copy_kernel[(1,)](x, x, 4, BLOCK=4, matrix_instr_nonkdim=16)


def test_torch_cpu_set_stream(cpu_driver):
    torch = pytest.importorskip("torch")
    dev = triton.runtime.driver.active.get_active_torch_device()
    mod = getattr(torch, dev.type)
    s = mod.Stream()
    mod.set_stream(s)  # tutorial 02's benchmark does this
