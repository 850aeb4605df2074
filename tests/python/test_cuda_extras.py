"""tl.extra.cuda's globaltimer(), smid() (inline PTX reading %globaltimer /
%smid), num_threads() and num_warps() (launch constants), as upstream's
test_globaltimer / test_smid / test_num_threads use them: PTX through the
CUDA pipeline without a GPU, results on the GPU (marked)."""
import re

import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource


@triton.jit
def timer_kernel(Out1, Out2, func: tl.constexpr):
    start = func()
    off = tl.arange(0, 128)
    for i in range(100):
        tl.store(Out1 + off, tl.load(Out1 + off) + 1)
    end = func()
    tl.store(Out2, start)
    tl.store(Out2 + 1, end)


@triton.jit
def smid_kernel(Out, get_smid: tl.constexpr):
    tl.store(Out + tl.program_id(0), get_smid())


@triton.jit
def threads_kernel(Out, get: tl.constexpr):
    n: tl.constexpr = get()
    tl.store(Out + tl.arange(0, n), 1)


def cuda(fn, sig, cx, **opts):
    return triton.compile(ASTSource(fn, sig, cx), target=GPUTarget("cuda", 90, 32), options=opts)


def test_globaltimer_and_smid_ptx():
    k = cuda(timer_kernel, {"Out1": "*i64", "Out2": "*i64", "func": "constexpr"}, {"func": tl.extra.cuda.globaltimer})
    assert k.asm["ptx"].count("%globaltimer") == 2  # not merged: not pure
    k = cuda(smid_kernel, {"Out": "*i32", "get_smid": "constexpr"}, {"get_smid": tl.extra.cuda.smid})
    assert k.asm["ptx"].count("%smid") == 1


@pytest.mark.parametrize("warps", [1, 8])
def test_num_threads_is_a_constant(warps):
    k = cuda(threads_kernel, {"Out": "*i32", "get": "constexpr"}, {"get": tl.extra.cuda.num_threads}, num_warps=warps)
    assert re.search(rf"block<{32 * warps}xi32", k.asm["ct.ttir"])
    k = cuda(threads_kernel, {"Out": "*i32", "get": "constexpr"}, {"get": tl.extra.cuda.num_warps}, num_warps=warps)
    assert re.search(rf"make_range {{end = {warps}, start = 0}}", k.asm["ct.ttir"])


@pytest.mark.gpu
def test_extras_on_the_gpu():
    import torch
    out1 = torch.zeros(128, dtype=torch.int64, device="cuda")
    out2 = torch.zeros(2, dtype=torch.int64, device="cuda")
    timer_kernel[(1,)](out1, out2, tl.extra.cuda.globaltimer)
    assert int(out2[1]) - int(out2[0]) > 0 and int(out1[0]) == 100
    sm = torch.full((1024,), -1, dtype=torch.int32, device="cuda")
    smid_kernel[(1024,)](sm, tl.extra.cuda.smid)
    n_sm = torch.cuda.get_device_properties(0).multi_processor_count
    assert int(sm.min()) >= 0 and int(sm.max()) < n_sm
    o = torch.zeros(256, dtype=torch.int32, device="cuda")
    threads_kernel[(1,)](o, tl.extra.cuda.num_threads, num_warps=8)
    assert int(o.sum()) == 256
