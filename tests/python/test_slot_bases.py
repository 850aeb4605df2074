"""Reads of a dot operand from its slot (ldmatrix, element loads) add each
element's swizzled byte offset, a loop invariant, to the slot's base
(backend/nvptx/dot.c slot_addr32). Summed first as one element index, LLVM
folded the slot's offset into every index with an or, and each read cost an
or, a shift and an add in the K loop. The default; CTRITON_SLOT_BASES=0 (part
of the key) sums them as before."""
import re

import pytest

import ctriton as triton
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource
from test_lag_slot import mm_masked_k  # tutorial 03's form, C in its own dtype


def _compile(dt, BM, BN, BK, warps, stages):
    sig = {"A": dt, "B": dt, "C": "*fp32", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
           "stride_bk": "i32", "stride_cm": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr",
           "GROUP_M": "constexpr"}
    attrs = {n: {"divisibility": 16} for n in ("A", "B", "C", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")}
    return triton.compile(ASTSource(mm_masked_k, sig, dict(BM=BM, BN=BN, BK=BK, GROUP_M=8), attrs),
                          target=GPUTarget("cuda", 80, 32), options={"num_warps": warps, "num_stages": stages})


def _loop(ptx):
    """The K loop's PTX: from the label its backward branch goes to, to
    that branch (the loop holding the MMAs)."""
    lines = ptx.splitlines()
    for i, ln in enumerate(lines):
        m = re.search(r"bra(?:\.uni)?\s+(\$L__BB\d+_\d+);", ln)
        if m:
            for j in range(i):
                if lines[j].startswith(m.group(1) + ":"):
                    body = lines[j:i + 1]
                    if any("mma.sync" in x for x in body):
                        return body
    return []


def _ops(body, op):
    return sum(1 for x in body if x.strip().startswith(op))


@pytest.mark.parametrize("dt,cfg", [("*fp32", (128, 256, 32, 8, 3)), ("*fp32", (128, 128, 32, 4, 4)),
                                    ("*fp16", (128, 256, 64, 8, 3)), ("*fp16", (128, 128, 64, 4, 3))])
def test_reads_add_to_the_slot_base(dt, cfg, monkeypatch):
    monkeypatch.delenv("CTRITON_SLOT_BASES", raising=False)
    on = _loop(_compile(dt, *cfg).asm["ptx"])
    monkeypatch.setenv("CTRITON_SLOT_BASES", "0")
    off = _loop(_compile(dt, *cfg).asm["ptx"])
    assert on and off
    reads = _ops(on, "ldmatrix")
    assert reads == _ops(off, "ldmatrix") and reads >= 16
    # before: an or and a shift for about every read (50-82 of them);
    # now the slot index's and the copies' few (5-15)
    bits = lambda body: _ops(body, "or.b32") + _ops(body, "shl.b32")  # noqa: E731
    assert bits(off) >= reads and bits(on) <= 16
    assert len(on) < len(off)


@pytest.mark.gpu
@pytest.mark.parametrize("env", ["1", "0"])
@pytest.mark.parametrize("dt,cfg", [("fp32", (128, 256, 32, 8, 3)), ("fp32", (64, 64, 16, 4, 4)),
                                    ("fp16", (128, 128, 64, 4, 3)), ("fp16", (128, 256, 64, 8, 3)),
                                    ("bf16", (64, 128, 32, 4, 4))])
def test_gpu(dt, cfg, env, monkeypatch):
    # sm_80 code (mma.sync) on small integers: exact against torch, with M,
    # N and K tails
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    monkeypatch.setenv("CTRITON_SLOT_BASES", env)
    BM, BN, BK, warps, stages = cfg
    M, N, K = 300, 264, 200
    tdt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dt]
    g = torch.Generator(device="cuda").manual_seed(5)
    a = torch.randint(-3, 4, (M, K), device="cuda", generator=g).to(tdt)
    b = torch.randint(-3, 4, (K, N), device="cuda", generator=g).to(tdt)
    c = torch.full((M, N), float("nan"), device="cuda")
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    mm_masked_k[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), BM=BM, BN=BN, BK=BK, GROUP_M=8,
                      num_warps=warps, num_stages=stages, arch="sm80")
    assert torch.equal(c, a.double().matmul(b.double()).float())
