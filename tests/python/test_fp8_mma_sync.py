"""fp8 dots on mma.sync as fp8: m16n8k32 .e4m3 / .e5m2 with an f32
accumulator, as Triton emits for Ada (analysis/dotsplit.c native_fp8_mma;
layout.c an_mma_v2_types). The operands keep the 8-bit operand layout,
their slots (A [M][K], B [N][K]) read with ldmatrix as int8's are. The
default on sm_89; sm_80 has no fp8 MMA and upcasts to fp16, and so does
sm_90 (faster there) unless CTRITON_FP8_MMA_SYNC=1 (=0: never; part of the
key). The PTX asks for ISA 8.4, which these instructions need."""
import os
import re
import subprocess
import tempfile

import pytest

from test_dot_kw4 import _loop, mm

import ctriton as triton
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource

PTXAS = "/usr/local/cuda/bin/ptxas"
TY = {"e5": "*fp8e5", "e4": "*fp8e4nv"}


def _compile(ta, tb, cfg, arch):
    BM, BN, BK, warps, stages = cfg
    sig = {"A": TY[ta], "B": TY[tb], "C": "*fp16", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
           "stride_bk": "constexpr", "stride_bn": "i32", "stride_cm": "i32", "scale": "fp32", "BM": "constexpr",
           "BN": "constexpr", "BK": "constexpr", "FORM": "constexpr"}
    attrs = {n: {"divisibility": 16} for n in ("A", "B", "C", "M", "N", "K", "stride_am", "stride_bn", "stride_cm")}
    return triton.compile(ASTSource(mm, sig, dict(BM=BM, BN=BN, BK=BK, FORM=0, stride_bk=1), attrs),
                          target=GPUTarget("cuda", arch, 32), options={"num_warps": warps, "num_stages": stages})


@pytest.mark.parametrize("ta,tb", [("e5", "e5"), ("e4", "e4"), ("e4", "e5")])
@pytest.mark.parametrize("cfg", [(128, 128, 128, 4, 4), (64, 128, 128, 4, 4), (64, 64, 64, 4, 3)])
def test_sm89_native(ta, tb, cfg, monkeypatch):
    monkeypatch.delenv("CTRITON_FP8_MMA_SYNC", raising=False)
    k = _compile(ta, tb, cfg, 89)
    ptx = k.asm["ptx"]
    name = {"e5": "e5m2", "e4": "e4m3"}
    assert re.search(r"^\.version (8\.[4-9]|9\.)", ptx, re.M)
    body = _loop(ptx)
    mmas = [x for x in body if "mma.sync" in x]
    assert mmas and all(f"m16n8k32.row.col.f32.{name[ta]}.{name[tb]}.f32" in x for x in mmas)
    # no upcast: no f16 anywhere in the loop, the slots read with ldmatrix
    assert not any("f16" in x for x in body)
    assert sum("ldmatrix" in x for x in body) > 0 and not any(re.search(r"st\.shared", x) for x in body)
    if os.path.exists(PTXAS):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "k.ptx")
            open(p, "w").write(ptx)
            r = subprocess.run([PTXAS, "-v", "-arch=sm_89", p, "-o", os.path.join(d, "k.cubin")],
                               capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "0 bytes spill stores, 0 bytes spill loads" in r.stderr, r.stderr


def test_sm80_upcasts_and_env(monkeypatch):
    up, native = "m16n8k16.row.col.f32.f16.f16.f32", "m16n8k32.row.col.f32.e5m2.e5m2.f32"
    monkeypatch.setenv("CTRITON_FP8_MMA_SYNC", "1")
    assert up in _compile("e5", "e5", (64, 64, 64, 4, 3), 80).asm["ptx"]
    monkeypatch.setenv("CTRITON_FP8_MMA_SYNC", "0")
    ptx = _compile("e5", "e5", (64, 64, 64, 4, 3), 89).asm["ptx"]
    assert up in ptx and "e5m2.e5m2" not in ptx
    monkeypatch.delenv("CTRITON_FP8_MMA_SYNC")
    ptx = _compile("e5", "e5", (64, 64, 64, 4, 3), 89).asm["ptx"]
    assert native in ptx and "f16.f16" not in ptx


def test_sm90_small_tile_default_upcasts(monkeypatch):
    # Hopper keeps the upcast by default (measured faster on an H100)
    monkeypatch.delenv("CTRITON_FP8_MMA_SYNC", raising=False)
    ptx = _compile("e4", "e4", (32, 64, 64, 4, 3), 90).asm["ptx"]
    assert "wgmma" not in ptx and "m16n8k16.row.col.f32.f16.f16.f32" in ptx and "e4m3.e4m3" not in ptx


def test_sm90_small_tile(monkeypatch):
    # a dot warpgroup MMA does not take (32 rows) on sm_90: mma.sync in fp8
    monkeypatch.setenv("CTRITON_FP8_MMA_SYNC", "1")
    ptx = _compile("e4", "e4", (32, 64, 64, 4, 3), 90).asm["ptx"]
    assert "wgmma" not in ptx and "m16n8k32.row.col.f32.e4m3.e4m3.f32" in ptx


@pytest.mark.gpu
@pytest.mark.parametrize("arch", ["sm89", None])
@pytest.mark.parametrize("ta,tb", [("e5", "e5"), ("e4", "e4"), ("e4", "e5")])
@pytest.mark.parametrize("bt", [True, False])
@pytest.mark.parametrize("cfg", [(128, 128, 128, 4, 4), (64, 128, 128, 4, 4), (32, 64, 64, 4, 3), (64, 64, 32, 4, 2)])
def test_gpu(arch, ta, tb, bt, cfg, monkeypatch):
    # small integers: exact against torch, with M, N and K tails
    monkeypatch.setenv("CTRITON_FP8_MMA_SYNC", "1")
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("no GPU with fp8 MMA")
    BM, BN, BK, warps, stages = cfg
    M, N, K = 300, 264, 232
    g = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randint(-4, 5, (M, K), device="cuda", generator=g).float()
    b = torch.randint(-4, 5, (K, N), device="cuda", generator=g).float()
    tt = {"e5": torch.float8_e5m2, "e4": torch.float8_e4m3fn}
    xa, xb = a.to(tt[ta]), b.to(tt[tb])
    if bt:
        xb = xb.T.contiguous().T
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    opts = {"arch": arch} if arch else {}
    mm[(triton.cdiv(M, BM), triton.cdiv(N, BN))](xa, xb, c, M, N, K, xa.stride(0), xb.stride(0), xb.stride(1),
                                                 c.stride(0), 1.0, BM=BM, BN=BN, BK=BK, FORM=0, num_warps=warps,
                                                 num_stages=stages, **opts)
    assert torch.equal(c.double(), (a.double() @ b.double()).half().double())
