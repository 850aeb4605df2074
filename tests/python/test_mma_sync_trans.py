"""Operands that mma.sync reads the other way round, and chained dots on
mma.sync (analysis/prefetch.c, analysis/layout.c, backend/nvptx/dot.c):

- a tile stored along K where the dot wants it along M or N (a B given as
  [N][K], an A given as [K][M]) is copied by cp.async in runs down its
  columns into a slot that holds it transposed, and read with ldmatrix the
  other way round (B without .trans, A with it; tf32 element by element).
  Before, it was a load staged through registers: a 128 x 128 x 32 fp16
  matmul with B^T at 255 registers and 8 bytes spilled on sm_80, Triton 217;
- a tile whose only use is a 2-D trans that a dot reads (attention's
  tl.trans(k)) goes through a slot as well, on mma.sync and on warpgroup
  MMA, and is read transposed (CTRITON_MMA_SYNC_TRANS=0 keeps both loads);
- dots chained through their results (S = Q K^T, then P V) place their
  warps along M when the first is at least as tall as wide, as Triton
  does: the softmax's row reductions stay inside a warp
  (CTRITON_CHAIN_ROWS=0: near-square warp tiles, as before). An attention
  forward at 64 x 64 with head 64 on sm_80 went from 223 to 164 registers.

Checked on kernels compiled for sm_80 and sm_90a (no GPU needed) and,
marked `gpu`, against torch, compiled for the device and for sm_80."""
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
def mm_t(A, B, C, M, N, K, sa, sb, sc, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
         A_T: tl.constexpr, B_T: tl.constexpr):
    """C = A @ B with A given as [M][K] (or [K][M] when A_T) and B as
    [K][N] (or [N][K] when B_T); masked at M, N and K."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    if A_T:
        a_ptr = A + rm[:, None] + rk[None, :] * sa
    else:
        a_ptr = A + rm[:, None] * sa + rk[None, :]
    if B_T:
        b_ptr = B + rn[None, :] * sb + rk[:, None]
    else:
        b_ptr = B + rn[None, :] + rk[:, None] * sb
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptr, mask=(rk[None, :] < K - k * BK) & (rm[:, None] < M), other=0.0)
        b = tl.load(b_ptr, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptr += BK * sa if A_T else BK
        b_ptr += BK if B_T else BK * sb
    tl.store(C + rm[:, None] * sc + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def attn(Q, Kp, V, O, N_CTX, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    """Softmax(Q K^T) V over key blocks of a [N_CTX][D] head (K^T by tl.trans)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(Q + rm[:, None] * D + rd[None, :])
    m_i = tl.zeros((BM,), tl.float32) - float("inf")
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    for s in range(0, N_CTX, BN):
        k = tl.load(Kp + (s + rn)[:, None] * D + rd[None, :])
        qk = tl.dot(q, tl.trans(k)) * 0.125
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_ij[:, None])
        alpha = tl.exp(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + (s + rn)[:, None] * D + rd[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_ij
    tl.store(O + rm[:, None] * D + rd[None, :], acc / l_i[:, None])


_TY = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}


def _mm(arch, dt="float16", BM=128, BN=128, BK=32, warps=4, stages=3, A_T=False, B_T=True):
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    t = "*" + _TY[dt]
    sig = {"A": t, "B": t, "C": "*fp32", "M": "i32", "N": "i32", "K": "i32", "sa": "i32", "sb": "i32", "sc": "i32",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr", "A_T": "constexpr", "B_T": "constexpr"}
    attrs = {n: {"divisibility": 16} for n in ("A", "B", "C", "K", "sa", "sb", "sc")}
    cx = dict(BM=BM, BN=BN, BK=BK, A_T=A_T, B_T=B_T)
    return triton.compile(ASTSource(mm_t, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": warps, "num_stages": stages})


def _attn(arch, BM, BN, D, warps=4, stages=3, dt="fp16"):
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    sig = {"Q": "*" + dt, "Kp": "*" + dt, "V": "*" + dt, "O": "*fp32", "N_CTX": "i32",
           "BM": "constexpr", "BN": "constexpr", "D": "constexpr"}
    attrs = {n: {"divisibility": 16} for n in ("Q", "Kp", "V", "O", "N_CTX")}
    return triton.compile(ASTSource(attn, sig, dict(BM=BM, BN=BN, D=D), attrs), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": warps, "num_stages": stages})


def _body(ttgir):
    return ttgir[ttgir.index(" = for "):]


def _ldmatrix(ptx):
    """(ldmatrix without .trans, with .trans)."""
    lds = re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x\d(\.trans)?", ptx)
    return sum(1 for t in lds if not t), sum(1 for t in lds if t)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_b_kmajor_copied_and_read_untransposed(dt):
    k = _mm(80, dt)
    body = _body(k.asm["ct.ttgir"])
    assert re.search(r"async_copy [^\n]*transposed = 1", body), body
    assert re.search(r"local_read [^\n]*transposed = 1[^\n]*#dot_op<opidx = 1", body), body
    assert not re.search(r"= load ", body) and "convert_layout" not in body.split(" = dot ")[0].split("local_read")[-1]
    plain, trans = _ldmatrix(k.asm["ptx"])
    # A row-major and B held [N][K]: every ldmatrix is untransposed
    assert plain and not trans, (plain, trans)


@needs_ptxas
def test_b_kmajor_registers():
    """128 x 128 x 32 fp16, B^T, 4 warps, 3 stages on sm_80: 255 registers and
    8 bytes spilled before (Triton: 217, none)."""
    k = _mm(80)
    assert k.n_spills == 0 and k.n_regs <= 240, (k.n_regs, k.n_spills)


def test_a_mmajor_read_with_trans():
    k = _mm(80, A_T=True, B_T=False)
    body = _body(k.asm["ct.ttgir"])
    assert re.search(r"local_read [^\n]*transposed = 1[^\n]*#dot_op<opidx = 0", body), body
    plain, trans = _ldmatrix(k.asm["ptx"])
    # A held [K][M] and B row-major: both read with .trans
    assert trans and not plain, (plain, trans)


def test_tf32_kmajor_b():
    k = _mm(80, "float32", BM=64, BN=64, BK=32)
    body = _body(k.asm["ct.ttgir"])
    assert re.search(r"local_read [^\n]*transposed = 1[^\n]*#dot_op<opidx = 1", body), body
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in k.asm["ptx"]


def test_variable_off_keeps_loads(monkeypatch):
    monkeypatch.setenv("CTRITON_MMA_SYNC_TRANS", "0")
    body = _body(_mm(80).asm["ct.ttgir"])
    assert "transposed = 1" not in body
    body = _body(_attn(90, 64, 64, 64).asm["ct.ttgir"])
    assert re.search(r"= trans ", body)


@pytest.mark.parametrize("arch,BM", [(80, 64), (90, 32), (90, 64)])
def test_trans_k_through_a_slot(arch, BM):
    """tl.trans(k) of a row-major K tile: K is copied as loaded and read
    transposed, by mma.sync (sm_80, or 32 rows on sm_90) or by warpgroup MMA."""
    body = _body(_attn(arch, BM, 64, 64).asm["ct.ttgir"])
    assert not re.search(r"= trans ", body) and not re.search(r"= load ", body), body
    assert re.search(r"local_read [^\n]*transposed = 1[^\n]*#dot_op<opidx = 1", body), body


def test_chain_rows(monkeypatch):
    ttgir = _attn(80, 64, 64, 64).asm["ct.ttgir"]
    assert "#mma<version = [2, 0], wpc = [4, 1]" in ttgir and "wpc = [2, 2]" not in ttgir
    # a matmul (no chain) keeps its near-square warp tiles
    assert "#mma<version = [2, 0], wpc = [2, 2]" in _mm(80).asm["ct.ttgir"]
    monkeypatch.setenv("CTRITON_CHAIN_ROWS", "0")
    assert "#mma<version = [2, 0], wpc = [2, 2]" in _attn(80, 64, 64, 64).asm["ct.ttgir"]


@needs_ptxas
@pytest.mark.parametrize("BM,D,warps,regs", [(64, 64, 4, 200), (128, 64, 4, 255), (64, 128, 4, 248),
                                             (128, 128, 8, 240)])
def test_attention_sm80_no_spills(BM, D, warps, regs):
    """Attention forward on sm_80, 3 stages: 176 bytes spilled at 128 x 64
    with head 64, 224 at 64 x 64 with head 128, before (Triton: none)."""
    k = _attn(80, BM, 64, D, warps)
    assert k.n_spills == 0 and k.n_regs <= regs, (k.n_regs, k.n_spills)


def _cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    return torch


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("A_T,B_T", [(False, True), (True, False), (True, True)])
@pytest.mark.parametrize("arch", [None, "sm80"])
@pytest.mark.parametrize("BM,BN,BK,warps", [(32, 64, 32, 4), (128, 128, 32, 4), (64, 64, 16, 4)])
def test_mm_gpu(dt, A_T, B_T, arch, BM, BN, BK, warps):
    torch = _cuda()
    dty = getattr(torch, dt)
    M, N, K = 2 * BM - 7, 2 * BN - 3, 3 * BK + 16
    g = torch.Generator(device="cuda").manual_seed(BM * 7 + BN + BK + A_T * 2 + B_T)
    a = torch.randn(M, K, device="cuda", generator=g).to(dty)
    b = torch.randn(K, N, device="cuda", generator=g).to(dty)
    at = a.T.contiguous() if A_T else a  # [K][M] when A_T
    bt = b.T.contiguous() if B_T else b  # [N][K] when B_T
    c = torch.full((M, N), float("nan"), device="cuda")
    opts = {"arch": arch} if arch else {}
    mm_t[(triton.cdiv(M, BM), triton.cdiv(N, BN))](at, bt, c, M, N, K, at.stride(0), bt.stride(0), c.stride(0),
                                                   BM=BM, BN=BN, BK=BK, A_T=A_T, B_T=B_T, num_warps=warps,
                                                   num_stages=3, **opts)
    ref = a.float() @ b.float()
    tol = 2e-2 * K ** 0.5 if dt == "float32" else 1e-2 * K ** 0.5  # tf32: 10-bit mantissa
    torch.testing.assert_close(c, ref, atol=tol, rtol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("arch", [None, "sm80"])
@pytest.mark.parametrize("BM,BN,D,warps", [(32, 64, 64, 4), (64, 64, 64, 4), (128, 64, 64, 4), (64, 64, 128, 4),
                                           (128, 64, 128, 8), (32, 32, 64, 4)])
@pytest.mark.parametrize("stages", [2, 3])
def test_attn_gpu(arch, BM, BN, D, warps, stages):
    torch = _cuda()
    n = 512
    g = torch.Generator(device="cuda").manual_seed(BM + BN + D + stages)
    q, k, v = (torch.randn(n, D, device="cuda", generator=g).half() for _ in range(3))
    o = torch.full((n, D), float("nan"), device="cuda")
    opts = {"arch": arch} if arch else {}
    attn[(n // BM,)](q, k, v, o, n, BM=BM, BN=BN, D=D, num_warps=warps, num_stages=stages, **opts)
    p = torch.softmax(q.float() @ k.float().T * 0.125, dim=1)
    ref = p.half().float() @ v.float()
    torch.testing.assert_close(o, ref, atol=2e-2, rtol=2e-2)
