"""Tiles of a dot off the tensor cores (the FMA path: f32 with
input_precision="ieee") go through num_stages cp.async slots held
row-major (`{plain = 1}`), and the dot reads its operands from the slot as
it reads its staging buffer: no store of the tiles into shared memory and
no barrier in the body beyond the pipeline's (analysis/prefetch.c
async_ok, an_fma_slot; CTRITON_FMA_SLOTS=0 keeps the loads). Before, such
tiles were loads (prefetched through registers), as Triton copies them
asynchronously. Checked on kernels compiled for sm_90a and sm_80 (no GPU
needed) and, marked `gpu`, against torch."""
import os
import re
import shutil

import pytest

import ctriton as triton

from test_small_copies import small_mm

PTXAS = bool(os.environ.get("CTRITON_PTXAS_PATH") or os.path.exists("/usr/local/cuda/bin/ptxas") or
             shutil.which("ptxas"))
needs_ptxas = pytest.mark.skipif(not PTXAS, reason="ptxas not found")


def _compile(arch, BM=64, BN=64, BK=32, warps=4, stages=3):
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    sig = {"A": "*fp32", "B": "*fp32", "C": "*fp32", "M": "i32", "N": "i32", "K": "i32", "BM": "constexpr",
           "BN": "constexpr", "BK": "constexpr", "PREC": "constexpr"}
    attrs = {n: {"divisibility": 16} for n in ("A", "B", "C", "N", "K")}
    return triton.compile(ASTSource(small_mm, sig, dict(BM=BM, BN=BN, BK=BK, PREC="ieee"), attrs),
                          target=GPUTarget("cuda", arch, 32), options={"num_warps": warps, "num_stages": stages})


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("BM,BN,BK,warps", [(64, 64, 32, 4), (32, 64, 16, 2), (128, 64, 32, 8)])
def test_ieee_tiles_through_plain_slots(arch, BM, BN, BK, warps, monkeypatch):
    monkeypatch.delenv("CTRITON_FMA_SLOTS", raising=False)
    k = _compile(arch, BM, BN, BK, warps)
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    assert "#mma" not in ttgir  # the FMA path
    copies = re.findall(r"async_copy [^\n]*\{buffer = (\d+), plain = 1[^\n]*stages = 3", ttgir)
    assert sorted(set(copies)) == ["0", "1"], ttgir
    body = ttgir[ttgir.index(" = for "):]
    reads = re.findall(r"= local_read [^\n]*plain = 1", body)
    assert len(reads) == 2
    # the dot reads both slots: no staging buffer of its own
    (dot,) = re.findall(r"= dot [^\n]*", body)
    assert "scratch_offset" not in dot, dot
    assert "cp.async.cg.shared.global" in ptx
    if PTXAS:
        assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"


def test_variable_off_keeps_the_loads(monkeypatch):
    monkeypatch.setenv("CTRITON_FMA_SLOTS", "0")
    ttgir = _compile(90).asm["ct.ttgir"]
    assert "async_copy" not in ttgir and "plain" not in ttgir


@pytest.mark.gpu
@pytest.mark.parametrize("on", ["1", "0"])
@pytest.mark.parametrize("BM,BN,BK,warps,stages", [(64, 64, 32, 4, 3), (32, 64, 16, 2, 4), (128, 64, 32, 8, 2)])
def test_ieee_mm_gpu(on, BM, BN, BK, warps, stages, monkeypatch):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    monkeypatch.setenv("CTRITON_FMA_SLOTS", on)
    M, N, K = 197, 160, 232  # M tail; K a multiple of 8 but not of BK
    g = torch.Generator(device="cuda").manual_seed(BM + BK)
    a = torch.randn(M, K, device="cuda", generator=g)
    b = torch.randn(K, N, device="cuda", generator=g)
    c = torch.full((M, N), float("nan"), device="cuda")
    small_mm[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, PREC="ieee",
                                                       num_warps=warps, num_stages=stages)
    ref = (a.double() @ b.double()).float()
    torch.testing.assert_close(c, ref, atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("BK,unrolled", [(32, True), (128, False)])
def test_fma_k_unrolled_up_to_64(BK, unrolled):
    """The FMA dot's K up to 64 is straight-line code (32 K steps x 32
    accumulator registers: 1024 FMAs); longer K is a loop of 4-step trips
    (128 FMAs in its body). B's row is read in vectors along the thread's
    columns."""
    ptx = _compile(90, 64, 64, BK, 4).asm["ptx"]
    n = len(re.findall(r"\bfma\.rn\.f32", ptx))
    assert n == (BK * 32 if unrolled else 4 * 32), n
    # A's rows and B's row segments in 16-byte vectors: no scalar shared load
    assert re.search(r"ld\.shared\.v4\.(f32|b32)", ptx)
    assert not re.search(r"ld\.shared\.(f32|b32)\b", ptx)
