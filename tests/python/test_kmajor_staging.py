"""A 16-bit B of a warpgroup MMA whose registers run along K (tl.trans of
a row-major tile: attention's K^T, or a column-major B loaded without a
pipeline) is staged K-major ([N][K] rows, in vectors along K) and read
without the transpose immediate, as Triton keeps the loaded tile and reads
its transpose. Before, it went MN-major, one element a store (a 128 x 128
tile: 128 st.shared a thread, and an attention chain at 255 registers
spilled 120 bytes). Checked on kernels compiled for sm_90a (no GPU needed)
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
def chain(Q, Kp, V, O, M, N, BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr):
    """O = (Q K^T / 2) V over key blocks, masked at M and N (no softmax)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rd = tl.arange(0, BD)
    q = tl.load(Q + rm[:, None] * BD + rd[None, :], mask=rm[:, None] < M, other=0.0)
    acc = tl.zeros((BM, BD), dtype=tl.float32)
    for n0 in range(0, N, BN):
        rn = n0 + tl.arange(0, BN)
        k = tl.load(Kp + rn[:, None] * BD + rd[None, :], mask=rn[:, None] < N, other=0.0)
        s = tl.dot(q, tl.trans(k)) * 0.5
        v = tl.load(V + rn[:, None] * BD + rd[None, :], mask=rn[:, None] < N, other=0.0)
        acc = tl.dot(s.to(v.dtype), v, acc)
    tl.store(O + rm[:, None] * BD + rd[None, :], acc, mask=rm[:, None] < M)


def _compile(dt, BM, BN, BD, warps, stages):
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    sig = {"Q": "*" + dt, "Kp": "*" + dt, "V": "*" + dt, "O": "*fp32", "M": "i32", "N": "i32",
           "BM": "constexpr", "BN": "constexpr", "BD": "constexpr"}
    attrs = {n: {"divisibility": 16} for n in ("Q", "Kp", "V", "O")}
    return triton.compile(ASTSource(chain, sig, dict(BM=BM, BN=BN, BD=BD), attrs),
                          target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": stages})


def _tails(ptx, n):
    """The immediates after B's descriptor of the m64n<n> MMAs, those with
    A from shared memory (a descriptor) and those with A from registers."""
    smem, regs = [], []
    for ops in re.findall(rf"wgmma\.mma_async\.sync\.aligned\.m64n{n}k16[^{{]*{{[^}}]*}}, ([^;]*);", ptx):
        if ops.startswith("{"):
            regs.append(ops.split("}, ")[1].split(", ")[1:])
        else:
            smem.append(ops.split(", ")[2:])
    return smem, regs


@pytest.mark.parametrize("dt", ["fp16", "bf16"])
@pytest.mark.parametrize("BM,BN,BD,warps", [(64, 128, 128, 4), (64, 64, 64, 4), (128, 64, 64, 8)])
def test_trans_b_staged_kmajor(dt, BM, BN, BD, warps):
    k = _compile(dt, BM, BN, BD, warps, 1)
    ptx = k.asm["ptx"]
    # S = Q K^T: q from shared memory, K^T K-major (no transpose: imm-trans-b 0)
    smem, _ = _tails(ptx, BN)
    assert smem and all(t == ["p", "1", "1", "0", "0"] for t in smem), smem
    # P V: P from registers, V row-major, read transposed (MN-major)
    _, regs = _tails(ptx, BD)
    assert regs and all(t == ["p", "1", "1", "1"] for t in regs), regs
    # the tiles are written in 16-byte vectors: no 2-byte shared stores
    assert not re.search(r"st\.shared\.(b16|u16|f16)\b", ptx), re.findall(r"st\.shared\.\S+", ptx)[:8]
    assert "st.shared.v4" in ptx


@needs_ptxas
def test_attention_chain_no_spills():
    """The generated chain that spilled: 64 x 128 with head 128, 4 warps,
    one stage (255 registers, 120 bytes spilled before; Triton 218, none)."""
    k = _compile("bf16", 64, 128, 128, 4, 1)
    assert k.n_spills == 0 and k.n_regs < 255, (k.n_regs, k.n_spills)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("BM,BN,BD,warps", [(64, 128, 128, 4), (64, 64, 64, 4), (128, 64, 64, 8)])
@pytest.mark.parametrize("stages", [1, 2])
def test_trans_b_gpu(dt, BM, BN, BD, warps, stages):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    M, N = 2 * BM - 9, 3 * BN - 5
    g = torch.Generator(device="cuda").manual_seed(BM + BN + BD)
    dty = getattr(torch, dt)
    q = (torch.randn(M, BD, device="cuda", generator=g) / 4).to(dty)
    kk = (torch.randn(N, BD, device="cuda", generator=g) / 4).to(dty)
    v = (torch.randn(N, BD, device="cuda", generator=g) / 4).to(dty)
    o = torch.full((M, BD), float("nan"), device="cuda")
    chain[(triton.cdiv(M, BM),)](q, kk, v, o, M, N, BM=BM, BN=BN, BD=BD, num_warps=warps, num_stages=stages)
    s = (q.float() @ kk.float().T * 0.5).to(dty).float()
    ref = s @ v.float()
    torch.testing.assert_close(o, ref, atol=3e-2, rtol=2e-2)
