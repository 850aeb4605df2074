"""Tiles under 16 bytes a thread go through the cp.async slots in 8- or
4-byte runs (analysis/prefetch.c chunk_bytes; CTRITON_SMALL_COPIES=0 keeps
them loads, as before): a 16 x 32 f16 tile with 4 warps is 8 bytes a
thread. Checked on kernels compiled for sm_90a and sm_80 (no GPU needed)
and, marked `gpu`, against torch."""
import os
import re
import shutil

import pytest

import ctriton as triton
import ctriton.language as tl

PTXAS = bool(os.environ.get("CTRITON_PTXAS_PATH") or os.path.exists("/usr/local/cuda/bin/ptxas") or
             shutil.which("ptxas"))
needs_ptxas = pytest.mark.skipif(not PTXAS, reason="ptxas not found")


@triton.jit
def small_mm(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PREC: tl.constexpr):
    """C = A @ B (row-major), masked at M, N and the K tail; f32 inputs with
    input_precision PREC (test_fma_slots.py: "ieee")."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + rk
        a = tl.load(A + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(B + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PREC)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


SIG = {"A": "*fp16", "B": "*fp16", "C": "*fp32", "M": "i32", "N": "i32", "K": "i32", "BM": "constexpr",
       "BN": "constexpr", "BK": "constexpr", "PREC": "constexpr"}


def _compile(arch, BM, BN, BK, warps):
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    attrs = {n: {"divisibility": 16} for n in ("A", "B", "C", "N", "K")}
    return triton.compile(ASTSource(small_mm, SIG, dict(BM=BM, BN=BN, BK=BK, PREC="tf32"), attrs),
                          target=GPUTarget("cuda", arch, 32), options={"num_warps": warps, "num_stages": 3})


@needs_ptxas
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("BM,BN,BK,warps,runs", [(16, 32, 32, 4, {"8", "16"}), (32, 16, 32, 4, {"8", "16"}),
                                                 (16, 16, 32, 4, {"8"}), (16, 16, 16, 4, {"4"})])
def test_small_tiles_through_the_slots(arch, BM, BN, BK, warps, runs, monkeypatch):
    """Both tiles are copied (a copy op each, ahead and in the loop), in
    runs of the sizes `runs` (bytes: a tile's bytes over the threads, at
    most 16); none with CTRITON_SMALL_COPIES=0. No spills."""
    monkeypatch.setenv("CTRITON_SMALL_COPIES", "1")
    k = _compile(arch, BM, BN, BK, warps)
    ptx = k.asm["ptx"]
    assert len(re.findall(r"\basync_copy ", k.asm["ct.ttgir"])) == 2 * 3, k.asm["ct.ttgir"]
    sizes = set(re.findall(r"cp\.async\.c[ag]\.shared\.global \[[^\]]+\], \[[^\]]+\], (\d+)", ptx))
    assert sizes == runs, sizes
    assert k.n_spills == 0
    # before: only the tiles of at least 16 bytes a thread
    monkeypatch.setenv("CTRITON_SMALL_COPIES", "0")
    k0 = _compile(arch, BM, BN, BK, warps)
    big = sum(n * 2 >= 16 * 32 * warps for n in (BM * BK, BK * BN))
    assert len(re.findall(r"\basync_copy ", k0.asm["ct.ttgir"])) == 3 * big


@pytest.mark.gpu
@pytest.mark.parametrize("on", ["1", "0"])
@pytest.mark.parametrize("BM,BN,BK,warps", [(16, 32, 32, 4), (32, 16, 32, 4), (16, 16, 32, 4), (16, 16, 16, 4)])
@pytest.mark.parametrize("M,N,K", [(64, 64, 96), (37, 50, 70)])
def test_small_tiles_gpu(on, BM, BN, BK, warps, M, N, K, monkeypatch):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    monkeypatch.setenv("CTRITON_SMALL_COPIES", on)
    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    a = torch.randn(M, K, device="cuda", generator=g).half()
    b = torch.randn(K, N, device="cuda", generator=g).half()
    c = torch.full((M, N), float("nan"), device="cuda")
    small_mm[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, PREC="tf32",
                                                       num_warps=warps, num_stages=3)
    torch.testing.assert_close(c, a.float() @ b.float(), atol=2e-2, rtol=1e-2)
