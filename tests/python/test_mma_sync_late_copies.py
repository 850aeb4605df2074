"""CTRITON_MMA_SYNC_LATE_COPIES=1 (opt-in until timed; part of the key): the
cp.async copies of an mma.sync loop go after its dots, as a warpgroup-MMA
loop's do (analysis/prefetch.c late_copies_on): the slot they refill was
read in the previous iteration, which every warp finished before the
barrier at the top. Unset, they come right after that barrier, before the
first ldmatrix (Triton issues them among the last MMAs)."""

import pytest

from test_dot_kw4 import _compile, _compile_i8, _loop
from test_lag_slot import mm_masked_k

import ctriton as triton
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource


def _fp16(cfg):
    BM, BN, BK, warps, stages = cfg
    sig = {"A": "*fp16", "B": "*fp16", "C": "*fp32", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
           "stride_bk": "i32", "stride_cm": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr",
           "GROUP_M": "constexpr"}
    attrs = {n: {"divisibility": 16} for n in ("A", "B", "C", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")}
    return triton.compile(ASTSource(mm_masked_k, sig, dict(BM=BM, BN=BN, BK=BK, GROUP_M=8), attrs),
                          target=GPUTarget("cuda", 80, 32), options={"num_warps": warps, "num_stages": stages})


def _order(body):
    """Positions of the first and last cp.async and mma.sync in the loop."""
    cp = [i for i, x in enumerate(body) if "cp.async.cg" in x or "cp.async.ca" in x]
    mma = [i for i, x in enumerate(body) if "mma.sync" in x]
    return cp, mma


@pytest.mark.parametrize("kind", ["int8", "fp8", "fp16"])
def test_copies_after_dots(kind, monkeypatch):
    make = {"int8": lambda: _compile_i8(True, (128, 128, 128, 4, 4)),
            "fp8": lambda: _compile(0, True, (128, 128, 128, 4, 4)),
            "fp16": lambda: _fp16((128, 128, 64, 4, 3))}[kind]
    monkeypatch.delenv("CTRITON_MMA_SYNC_LATE_COPIES", raising=False)
    cp0, mma0 = _order(_loop(make().asm["ptx"]))
    monkeypatch.setenv("CTRITON_MMA_SYNC_LATE_COPIES", "1")
    cp1, mma1 = _order(_loop(make().asm["ptx"]))
    assert cp0 and cp1 and len(cp0) == len(cp1) and len(mma0) == len(mma1)
    assert max(cp0) < min(mma0)  # before: every copy before the first MMA
    assert min(cp1) > max(mma1)  # now: after the last one (ptxas interleaves them)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [(128, 256, 128, 8, 3), (128, 128, 128, 4, 4), (64, 64, 64, 4, 3)])
def test_gpu(cfg, monkeypatch):
    # as sm_80 code, exact against torch with M, N and K tails: fp8 (B^T and
    # row-major B), an int8 B^T dequantized, int8 (B^T and row-major B)
    import test_dot_kw4 as kw4
    monkeypatch.setenv("CTRITON_MMA_SYNC_LATE_COPIES", "1")
    for form, bt in ((0, True), (0, False), (1, True)):
        kw4.test_gpu(form, bt, cfg, "1", "sm80", monkeypatch)
    for bt in (True, False):
        kw4.test_int8_gpu(bt, cfg, "sm80")


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["fp16", "bf16", "fp32"])
def test_gpu_16_32(dt, monkeypatch):
    import test_slot_bases as sb
    monkeypatch.setenv("CTRITON_MMA_SYNC_LATE_COPIES", "1")
    for cfg in [(128, 256, 32, 8, 3), (64, 64, 16, 4, 4), (128, 128, 64, 4, 3)]:
        sb.test_gpu(dt, cfg, "1", monkeypatch)
