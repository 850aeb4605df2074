"""stmatrix in conversions (backend/nvptx/shape.c): on sm_90 a 16-bit
block in an accumulator's arrangement converted through shared memory (a
matmul's epilogue into the layout of its store) is written with
stmatrix.x4, 16 x 16 elements a warp per instruction, instead of one
32-bit store per column pair. By default only outside loops (an epilogue
that runs once); CTRITON_STMATRIX_CONVERT=1 everywhere, =0 nowhere. The
PTX is checked here (ptxas assembles it, no spills); the GPU cases compare
with torch."""
import os
import re
import shutil

import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource

PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))
needs_ptxas = pytest.mark.skipif(not PTXAS, reason="ptxas not found")


@triton.jit
def mm_tile(a_ptr, b_ptr, c_ptr, rm, rn, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
            OUT: tl.constexpr):
    """C's tile at rows rm, columns rn = A @ B (row-major, M x K by K x N),
    in OUT, masked at M and N."""
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptr + rm[:, None] * K + (k * BK + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k * BK + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k * BK + rk)[:, None] * N + rn[None, :],
                    mask=((k * BK + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(OUT), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
              OUT: tl.constexpr):
    """C = A @ B, one tile a program."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mm_tile(a_ptr, b_ptr, c_ptr, rm, rn, M, N, K, BM, BN, BK, OUT)


def _compile(BM, BN, BK, warps, out=tl.float16, stages=3):
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16" if out == tl.float16 else "*bf16",
           "M": "i32", "N": "i32", "K": "i32"}
    cx = dict(BM=BM, BN=BN, BK=BK, OUT=out)
    sig.update({k: "constexpr" for k in cx})
    attrs = {(i,): {"divisibility": 16} for i in range(6)}
    return triton.compile(ASTSource(mm_kernel, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": warps, "num_stages": stages})


@needs_ptxas
@pytest.mark.parametrize("BM,BN,BK,warps,n", [(128, 128, 64, 4, 16), (128, 256, 64, 8, 16), (64, 128, 64, 4, 8)])
@pytest.mark.parametrize("out", ["fp16", "bf16"])
def test_sm90_epilogue_conversion_takes_stmatrix(BM, BN, BK, warps, n, out, monkeypatch):
    """n stmatrix.x4 a thread: BM x BN 16-bit elements / (32 lanes x warps) /
    8 per instruction; no 16- or 32-bit shared stores left for the
    accumulator. Off without the variable."""
    dt = tl.float16 if out == "fp16" else tl.bfloat16
    monkeypatch.setenv("CTRITON_STMATRIX_CONVERT", "1")
    k = _compile(BM, BN, BK, warps, dt)
    ptx = k.asm["ptx"]
    assert ptx.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == n == BM * BN // (32 * warps) // 8
    assert not re.search(r"\bst\.shared\.(b16|b32|v2\.b16)\b", ptx), re.findall(r"\bst\.shared[.\w]*", ptx)
    assert k.n_spills == 0
    monkeypatch.setenv("CTRITON_STMATRIX_CONVERT", "0")
    k0 = _compile(BM, BN, BK, warps, dt)
    assert "stmatrix" not in k0.asm["ptx"]


@triton.jit
def persistent_mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """mm_kernel's tiles in a loop over tiles (its epilogue inside that loop)."""
    tiles_n = tl.cdiv(N, BN)
    for t in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, tl.num_programs(0)):
        rm = (t // tiles_n) * BM + tl.arange(0, BM)
        rn = (t % tiles_n) * BN + tl.arange(0, BN)
        mm_tile(a_ptr, b_ptr, c_ptr, rm, rn, M, N, K, BM, BN, BK, tl.float16)


@needs_ptxas
@pytest.mark.parametrize("env", [None, "1", "0"])
def test_default_outside_loops_only(env, monkeypatch):
    """Unset: the once-run epilogue takes stmatrix, the one in a loop over
    tiles does not; =1 both; =0 neither."""
    if env is None:
        monkeypatch.delenv("CTRITON_STMATRIX_CONVERT", raising=False)
    else:
        monkeypatch.setenv("CTRITON_STMATRIX_CONVERT", env)
    once = _compile(128, 128, 64, 4).asm["ptx"].count("stmatrix.sync.aligned.m8n8.x4.shared.b16")
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    attrs = {(i,): {"divisibility": 16} for i in range(6)}
    k = triton.compile(ASTSource(persistent_mm, sig, dict(BM=128, BN=128, BK=64), attrs),
                       target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_stages": 3})
    looped = k.asm["ptx"].count("stmatrix.sync.aligned.m8n8.x4.shared.b16")
    assert (once, looped) == {None: (16, 0), "1": (16, 16), "0": (0, 0)}[env]
    assert k.n_spills == 0


def _cvt_counts(ptx, out):
    """(pair conversions, single conversions) from f32 to out in the PTX."""
    t = "f16" if out == tl.float16 else "bf16"
    return (len(re.findall(rf"\bcvt\.rn\.{t}x2\.f32\b", ptx)), len(re.findall(rf"\bcvt\.rn\.{t}\.f32\b", ptx)))


@needs_ptxas
@pytest.mark.parametrize("BM,BN,BK,warps", [(128, 256, 64, 8), (128, 128, 32, 4)])
@pytest.mark.parametrize("out", [tl.float16, tl.bfloat16])
def test_epilogue_converts_by_pairs(BM, BN, BK, warps, out, monkeypatch):
    """The once-run epilogue's f32 -> 16-bit conversion is one cvt.rn.*x2 a
    register pair (BM x BN / 2 / threads of them), none element by element,
    and so no moves between the conversion and stmatrix in the SASS. The
    same conversion in a loop over tiles stays element-wise."""
    monkeypatch.delenv("CTRITON_STMATRIX_CONVERT", raising=False)
    k = _compile(BM, BN, BK, warps, out)
    assert _cvt_counts(k.asm["ptx"], out) == (BM * BN // 2 // (32 * warps), 0)
    assert k.n_spills == 0
    from ctriton import _toolkit
    sass = k.asm["sass"] if _toolkit.disassembler_path() else ""
    if sass:
        tail = sass[sass.rindex("HGMMA"):]
        assert tail.count("STSM") == BM * BN // (32 * warps) // 8
        assert not re.search(r"\bI?MOV(\.U32)?\b", tail), re.findall(r"[^;\n]*MOV[^;\n]*", tail)[:4]
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    attrs = {(i,): {"divisibility": 16} for i in range(6)}
    kl = triton.compile(ASTSource(persistent_mm, sig, dict(BM=BM, BN=BN, BK=BK), attrs),
                        target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": 3})
    assert _cvt_counts(kl.asm["ptx"], tl.float16) == (0, BM * BN // (32 * warps))


@pytest.mark.gpu
@pytest.mark.parametrize("BM,BN,BK,warps", [(128, 128, 64, 4), (128, 256, 64, 8), (64, 128, 64, 4)])
@pytest.mark.parametrize("out", ["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K", [(256, 512, 192), (200, 300, 100)])
@pytest.mark.parametrize("env", [None, "1"])
def test_gpu_epilogue_stmatrix(BM, BN, BK, warps, out, M, N, K, env, monkeypatch):
    import torch
    if env is None:
        monkeypatch.delenv("CTRITON_STMATRIX_CONVERT", raising=False)
    else:
        monkeypatch.setenv("CTRITON_STMATRIX_CONVERT", env)
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    tdt = torch.float16 if out == "fp16" else torch.bfloat16
    c = torch.full((M, N), -7.0, device="cuda", dtype=tdt)
    mm_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK,
                                                        OUT=tl.float16 if out == "fp16" else tl.bfloat16,
                                                        num_warps=warps, num_stages=3)
    ref = (a.float() @ b.float()).to(tdt)
    torch.testing.assert_close(c, ref, atol=5e-2, rtol=2e-2)
