"""Loops whose dot operands do not all fit cp.async: each tile is pipelined
on its own, as Triton does. A tile that cp.async cannot copy (rows whose
start is only 2-byte aligned: a leading dimension not known divisible by 8
fp16 elements) is loaded one iteration ahead through registers, while the
other goes through the slots num_stages - 1 iterations ahead. Before, one
such tile sent the whole loop to the register prefetch.

Compiled for sm_80 and sm_90 here (ptxas when present); the `gpu` tests
run the same kernel against torch."""
import os
import re
import shutil

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource

from ptx_util import ptx_loops

PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    pid_m = pid // tl.cdiv(N, BN)
    pid_n = pid % tl.cdiv(N, BN)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + (rm % M)[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + (rn % N)[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def _compile(arch, unaligned, num_warps=4):
    """A [M][K] row-major, B [K][N] row-major; `unaligned` names the
    operand whose leading stride is not known divisible by 16."""
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32", "stride_bn": "constexpr",
           "stride_cm": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    cx = dict(stride_ak=1, stride_bn=1, BM=128, BN=128, BK=32)
    attrs = {n: {"divisibility": 16} for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am",
                                               "stride_bk", "stride_cm")}
    del attrs["stride_am" if unaligned == "A" else "stride_bk"]
    return triton.compile(ASTSource(mm_kernel, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": num_warps, "num_stages": 3})


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("unaligned", ["A", "B"])
def test_one_operand_through_the_slots(arch, unaligned):
    """128 x 128 x 32, 8 warps: no spills. (With 4 warps the scalar 2-byte
    loads of the unaligned tile spill 100-200 bytes; the loop that sent
    both tiles through registers spilled as much or more: 282 bytes on
    sm_90 for an unaligned A.)"""
    k = _compile(arch, unaligned, 8)
    ttgir = k.asm["ct.ttgir"]
    # the aligned tile: three stages of cp.async (two ahead in the prologue,
    # one in the body) into one buffer, read from its slots
    assert ttgir.count("async_copy ") >= 2 and "local_read" in ttgir
    assert "stages = 3" in ttgir
    # the other: a load before the loop and one in it (the next iteration's)
    loops = [lp for lp in ptx_loops(k.asm["ptx"]) if ("wgmma" if arch == 90 else "mma.sync") in lp]
    assert len(loops) == 1
    lp = loops[0]
    assert "cp.async" in lp and "ld.global" in lp
    if arch == 90:
        assert "wgmma.mma_async" in lp
    if PTXAS:
        assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"


@pytest.mark.gpu
@pytest.mark.parametrize("unaligned", ["A", "B"])
@pytest.mark.parametrize("num_warps", [4, 8])
def test_mixed_pipeline_gpu(unaligned, num_warps):
    import torch
    torch.manual_seed(0)
    M, N, K = 300, 250, 171  # K odd: A's rows (K elements) start 2-byte aligned
    pad = 3
    if unaligned == "A":
        a_full = torch.randn((M, K + pad), device="cuda", dtype=torch.float16)
        a = a_full[:, :K]
        b = torch.randn((K, N), device="cuda", dtype=torch.float16)
    else:
        a = torch.randn((M, K), device="cuda", dtype=torch.float16)
        b_full = torch.randn((K, N + pad), device="cuda", dtype=torch.float16)
        b = b_full[:, :N]
    c = torch.empty((M, N), device="cuda", dtype=torch.float16)
    BM, BN, BK = 128, 128, 32
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    mm_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                    BM=BM, BN=BN, BK=BK, num_warps=num_warps, num_stages=3)
    ref = (a.float() @ b.float()).half()
    torch.testing.assert_close(c, ref, atol=5e-2, rtol=1e-2)


def test_mixed_pipeline_cpu():
    """The same kernel on the CPU backend (the pipelining is the GPU's; the
    semantics are checked here as everywhere)."""
    from ctriton.runtime.driver import driver
    prev = driver._active
    driver.set_active("cpu")
    try:
        rng = np.random.default_rng(0)
        M, N, K = 70, 45, 37
        a = rng.integers(-3, 4, size=(M, K + 3)).astype(np.float16)[:, :K]
        a = np.ascontiguousarray(np.pad(a, ((0, 0), (0, 3))))
        b = rng.integers(-3, 4, size=(K, N)).astype(np.float16)
        c = np.zeros((M, N), np.float16)
        mm_kernel[(triton.cdiv(M, 32) * triton.cdiv(N, 32),)](a, b, c, M, N, K, K + 3, 1, N, 1, N,
                                                              BM=32, BN=32, BK=16)
        ref = (a[:, :K].astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
        np.testing.assert_array_equal(c, ref)
    finally:
        if prev is None:
            driver.reset_active()
        else:
            driver.set_active(prev)


@pytest.mark.gpu
@pytest.mark.parametrize("bm,bn,num_warps", [(32, 64, 4), (64, 64, 2), (128, 128, 8)])
def test_tf32_tiles_through_the_slots_gpu(bm, bn, num_warps):
    """fp32 inputs, tf32 dots: on mma.sync (32-row tiles with 4 warps, 2
    warps) the tiles go through the cp.async slots and each fragment element
    is read from its swizzled place; 128 x 128 / 8 warps is a warpgroup MMA.
    Both against torch, with a K tail."""
    import torch
    torch.manual_seed(1)
    M, N, K = 200, 150, 203
    a = torch.randn((M, K), device="cuda", dtype=torch.float32)
    b = torch.randn((K, N), device="cuda", dtype=torch.float32)
    c = torch.empty((M, N), device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    mm_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                    BM=bm, BN=bn, BK=32, num_warps=num_warps, num_stages=3)
    ref = (a.double() @ b.double()).half()
    torch.testing.assert_close(c, ref, atol=0.15, rtol=2e-2)


# -- a 16-bit A stored column-major: MN-major through the slots (sm_90) ----------

def _compile_colmajor_a(bm, bn, bk, nw, ns, dtype="fp16"):
    sig = {"a_ptr": "*" + dtype, "b_ptr": "*" + dtype, "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "constexpr", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "constexpr",
           "stride_cm": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    cx = dict(stride_am=1, stride_bn=1, BM=bm, BN=bn, BK=bk)
    attrs = {n: {"divisibility": 16} for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_ak",
                                               "stride_bk", "stride_cm")}
    return triton.compile(ASTSource(mm_kernel, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": nw, "num_stages": ns})


@pytest.mark.parametrize("bm,bn,bk,nw,ns", [(128, 128, 32, 4, 3), (128, 256, 64, 8, 3), (64, 128, 64, 4, 4)])
def test_column_major_a_read_mn_major(bm, bn, bk, nw, ns):
    """A [M][K] with M contiguous (A^T stored, as backward passes read
    activations): its tiles go through the cp.async slots as [K][M], 16-byte
    runs down the columns, and the warpgroup MMA reads them MN-major
    (imm-trans-a 1), each m64 instruction one 64-column block of the slot.
    Before, the loop went through registers."""
    k = _compile_colmajor_a(bm, bn, bk, nw, ns)
    ptx = k.asm["ptx"]
    (lp,) = [lp for lp in ptx_loops(ptx) if "wgmma.mma_async" in lp]
    assert "ld.global" not in lp and "cp.async.cg.shared.global" in lp
    import re
    mmas = re.findall(r"wgmma\.mma_async[^;]*;", lp)
    assert mmas and all(m.endswith("p, 1, 1, 1, 1;") for m in mmas)  # trans-a, trans-b (row-major B)
    assert "async_copy" in k.asm["ct.ttgir"] and "transposed = 1" in k.asm["ct.ttgir"]
    if PTXAS:
        assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("bm,bn,bk,nw", [(128, 128, 32, 4), (128, 256, 64, 8), (64, 128, 64, 4), (128, 128, 64, 8)])
def test_column_major_a_gpu(dtype, bm, bn, bk, nw):
    import torch
    torch.manual_seed(2)
    dt = getattr(torch, dtype)
    M, N, K = 320, 272, 203  # strides divisible by 16 elements, M, N, K tails
    a = torch.randn((K, M), device="cuda", dtype=dt).t()  # [M][K], M contiguous
    b = torch.randn((K, N), device="cuda", dtype=dt)
    c = torch.empty((M, N), device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    k = mm_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        BM=bm, BN=bn, BK=bk, num_warps=nw, num_stages=3)
    assert "p, 1, 1, 1, 1;" in k.asm["ptx"]  # the MN-major A path was taken
    ref = (a.float() @ b.float()).half()
    torch.testing.assert_close(c, ref, atol=5e-2, rtol=1e-2)


def _budget_kernel(dt, BM, BN, BK, **kw):
    sig = {"a_ptr": "*" + dt, "b_ptr": "*" + dt, "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "constexpr", "stride_bn": "i32",
           "stride_cm": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    cx = dict(stride_ak=1, stride_bk=1, BM=BM, BN=BN, BK=BK)
    attrs = {n: {"divisibility": 16} for n in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_cm")}
    k = triton.compile(ASTSource(mm_kernel, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 8, "num_stages": 3})
    g = k.asm["ct.ttgir"]
    loop = g[g.index(" = for "):]
    return k, g[:g.index(" = for ")], loop.split("\n", 1)[0]


def test_register_prefetch_within_budget():
    """Tiles over unaligned strides (no cp.async: one byte a register, one
    64-bit address a byte). The register prefetch holds two copies of a
    tile it carries, every tile's addresses beside them and the
    accumulator, within 192 registers. fp8 128x128 A and 128x64 B with 8
    warps: 192 registers of addresses alone; both prefetched spilled 1.5 KB,
    B alone 812 bytes, so both stay loads in their iteration. int8 64x64 A
    and 64x128 B: 96 registers of addresses, 32 of accumulator; A (16
    registers) is carried one ahead, B (32) stays a load (both carried:
    255 registers and 124 bytes spilled)."""
    k, before, header = _budget_kernel("fp8e5", 128, 64, 128)
    assert "xf8e5m2" not in header, header
    assert not re.search(r"= load [^\n]*: block<128x(64|128)xf8e5m2", before)
    k, before, header = _budget_kernel("i8", 64, 128, 64)
    assert "block<64x64xi8" in header and "block<64x128xi8" not in header, header
    assert re.search(r"= load [^\n]*: block<64x64xi8", before)
    assert not re.search(r"= load [^\n]*: block<64x128xi8", before)
    if PTXAS:
        assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"