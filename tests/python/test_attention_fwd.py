"""kernels/attention.py's forward kernels: attn_fwd (pointers) and attn_fwd_tma
(descriptors made in the kernel over contiguous tensors) against torch SDPA
on the CPU backend and on the GPU (marked `gpu`), and attn_fwd_tma compiled
for sm_90a: tensor-memory-access copies whose maps the launch encodes,
warp-specialized where the library asks for it, no spills."""
import math
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")))

torch = pytest.importorskip("torch")

import ctriton  # noqa: E402
from kernels.attention import attention_forward, attn_fwd_tma  # noqa: E402

PTXAS = bool(os.environ.get("CTRITON_PTXAS_PATH") or os.path.exists("/usr/local/cuda/bin/ptxas") or
             shutil.which("ptxas"))


def check(device, Z, H, N, D, causal, **kw):
    g = torch.Generator(device=device).manual_seed(0)
    q, k, v = (torch.randn(Z, H, N, D, device=device, dtype=torch.float16, generator=g) for _ in range(3))
    sm = 1 / math.sqrt(D)
    o, M = attention_forward(q, k, v, causal, sm, **kw)
    qf, kf, vf = q.float(), k.float(), v.float()
    ref = torch.nn.functional.scaled_dot_product_attention(qf, kf, vf, is_causal=causal, scale=sm)
    err = ((o.float() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, f"o: relative error {err:.2e}"
    s = (qf @ kf.transpose(-1, -2)) * sm
    if causal:
        s = s.masked_fill(torch.ones(N, N, dtype=torch.bool, device=device).triu(1), float("-inf"))
    lse2 = torch.logsumexp(s, -1) / math.log(2)  # M: the row log-sum-exp in base 2
    torch.testing.assert_close(M, lse2, atol=2e-2, rtol=1e-3)


def cpu_backend():
    return ctriton.runtime.driver.active.backend == "cpu"


@pytest.mark.parametrize("tma", [False, True])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("D,BM,BN", [(64, 64, 32), (32, 32, 32)])
def test_attention_fwd_cpu(tma, causal, D, BM, BN):
    if not cpu_backend():
        pytest.skip("CPU backend not active")
    check("cpu", 1, 2, 128, D, causal, BLOCK_M=BM, BLOCK_N=BN, tma=tma)


def test_attention_fwd_tma_warp_specialize_cpu():
    """warp_specialize asks nothing of the CPU backend: the same results."""
    if not cpu_backend():
        pytest.skip("CPU backend not active")
    check("cpu", 1, 1, 128, 64, False, BLOCK_M=64, BLOCK_N=64, tma=True, warp_specialize=True)


def _compile_sm90(D, BM, BN, warps, stages, stage, ws, n_ctx=4096):
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "M": "*fp32", "Out": "*fp16",
           "Z": "i32", "H": "i32"}
    cx = dict(N_CTX=n_ctx, HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN, STAGE=stage, WARP_SPECIALIZE=ws)
    sig.update({k: "constexpr" for k in cx})
    attrs = {(i,): {"divisibility": 16} for i in (0, 1, 2, 4, 5)}
    return ctriton.compile(ASTSource(attn_fwd_tma, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": warps, "num_stages": stages})


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("D,BM,BN,warps,stages,stage,ws", [
    (64, 128, 64, 4, 2, 1, True),     # the library's full D64
    (128, 128, 128, 4, 2, 1, True),   # full D128
    (64, 128, 64, 4, 2, 3, False),    # causal D64
    (128, 128, 64, 8, 2, 3, False),   # causal D128
    (64, 128, 64, 4, 2, 3, True),     # causal, its first loop specialized
])
def test_attention_fwd_tma_sm90(D, BM, BN, warps, stages, stage, ws):
    """The descriptors' shape is Z * H * N_CTX with N_CTX a constexpr: a
    product of parameters and a constant, which the launch encodes (plan
    kind 4, the constant a factor of kind 0), so no map is made in the
    kernel and no global scratch (allocator) is needed; K and V come
    through cp.async.bulk.tensor, and with warp_specialize a producer
    warpgroup issues them (two consumer warpgroups for 4 warps and 128-row
    tiles: 12 warps in all, registers moved with setmaxnreg). No spills."""
    k = _compile_sm90(D, BM, BN, warps, stages, stage, ws)
    ptx, ttgir = k.asm["ptx"], k.asm["ct.ttgir"]
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"
    assert not k.metadata.wgmma_advisory
    assert "tensormap_create" not in ttgir and "tensormap.cp_fenceproxy" not in ptx
    assert k.metadata.global_scratch_size == 0
    assert "cp.async.bulk.tensor.2d" in ptx and "cp.async.cg.shared.global" not in ptx
    plans = k.metadata.tma
    assert len(plans) == 4 and all(t[0] == -1 for t in plans)  # all four made at launch
    for t in plans:
        assert t[8] == 4  # shape[0]: a product
        fs = [(t[9] >> (20 * i)) & 0xFFFFF for i in range(3)]
        assert sorted((f & 0xFFFF, (f >> 16) & 3) for f in fs if f & (1 << 18)) == [(6, 1), (7, 1), (4096, 0)]
    assert ("warp_specialize {" in ttgir) == ws
    if ws:
        assert k.metadata.num_warps == 12 and "setmaxnreg" in ptx
    else:
        assert k.metadata.num_warps == warps


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_attention_fwd_tma_big_constants():
    """A constant factor past 16 bits: a power of two (N_CTX 2^17) is
    carried as its exponent (bit 19), any other (3 * 2^16) makes the maps
    in the kernel instead (global scratch, an allocator at launch)."""
    k = _compile_sm90(64, 128, 64, 4, 2, 1, False, n_ctx=1 << 17)
    assert "tensormap_create" not in k.asm["ct.ttgir"] and k.metadata.global_scratch_size == 0
    fs = [(k.metadata.tma[0][9] >> (20 * i)) & 0xFFFFF for i in range(3)]
    assert sorted(f & 0xFFFF | (f >> 19) << 19 for f in fs if f & (1 << 18) and not (f >> 16) & 3) == [17 | 1 << 19]
    k = _compile_sm90(64, 128, 64, 4, 2, 1, False, n_ctx=3 << 16)
    assert "tensormap_create" in k.asm["ct.ttgir"] and k.metadata.global_scratch_size > 0
    assert k.n_spills == 0


@pytest.mark.gpu
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("tma", [None, False])
def test_attention_fwd_gpu(D, causal, tma):
    """The library's own choices (tma None: descriptors, warp-specialized
    when not causal, on Hopper) and the pointer kernel, against torch."""
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    check("cuda", 2, 3, 1024, D, causal, tma=tma)


@pytest.mark.gpu
@pytest.mark.parametrize("D,BN,warps,stages,ws", [(64, 64, 4, 3, True), (128, 64, 4, 2, True),
                                                  (128, 64, 8, 3, False), (64, 64, 4, 2, False)])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_fwd_tma_gpu_configs(D, BN, warps, stages, ws, causal):
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("no Hopper GPU")
    check("cuda", 2, 3, 1024, D, causal, BLOCK_M=128, BLOCK_N=BN, num_warps=warps, num_stages=stages, tma=True,
          warp_specialize=ws)

