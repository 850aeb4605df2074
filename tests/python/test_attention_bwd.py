"""kernels/attention.py's backward pass (causal, the tutorial-06 structure:
preprocess, then dK/dV and dQ per block) against torch autograd of SDPA: on
the CPU backend with torch CPU tensors (when torch is installed), and on the
GPU (marked `gpu`) for HEAD_DIM 64 and 128."""
import math
import os
import sys

import pytest

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")))

torch = pytest.importorskip("torch")

from kernels.attention import attention_backward, attention_forward  # noqa: E402


def check(device, Z, H, N, D, fwd_blocks):
    g = torch.Generator(device=device).manual_seed(0)
    q, k, v = (torch.randn(Z, H, N, D, device=device, dtype=torch.float16, generator=g) for _ in range(3))
    sm = 1 / math.sqrt(D)
    o, M = attention_forward(q, k, v, True, sm, *fwd_blocks)
    do = torch.randn(q.shape, device=device, dtype=torch.float16, generator=g)
    dq, dk, dv = attention_backward(q, k, v, o, do, M, sm)
    qr, kr, vr = (t.float().requires_grad_() for t in (q, k, v))
    ref = torch.nn.functional.scaled_dot_product_attention(qr, kr, vr, is_causal=True, scale=sm)
    ref.backward(do.float())
    for name, got, want in (("o", o, ref), ("dq", dq, qr.grad), ("dk", dk, kr.grad), ("dv", dv, vr.grad)):
        err = ((got.float() - want.float()).norm() / want.float().norm()).item()
        assert err < 1e-2, f"{name}: relative error {err:.2e}"


def test_attention_bwd_cpu():
    import ctriton
    if ctriton.runtime.driver.active.backend != "cpu":
        pytest.skip("CPU backend not active")
    check("cpu", 1, 1, 128, 64, (64, 32))


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["default", "small_loads", "shfl"])
@pytest.mark.parametrize("D", [64, 128])
def test_attention_bwd_gpu(D, variant, monkeypatch):
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    monkeypatch.setenv("CTRITON_SMALL_LOADS", "1" if variant == "small_loads" else "0")
    monkeypatch.setenv("CTRITON_SHFL_CONVERT", "1" if variant == "shfl" else "0")
    check("cuda", 2, 4, 1024, D, (128, 64))


def test_attn_bwd_sm90_pipelined():
    """Compiled for sm_90a (no GPU needed): the dK/dV loop reads q^T and dO
    twice (directly and transposed), the dQ loop k^T: each such tile is
    staged once through cp.async and read by both warpgroup MMAs from its
    slot (K- and MN-major), so every loop is pipelined; D64 with 4 warps has
    no spills (104 bytes, and 15 async copies, when those loops fell back
    to register prefetch)."""
    import shutil
    if not (os.environ.get("CTRITON_PTXAS_PATH") or os.path.exists("/usr/local/cuda/bin/ptxas") or
            shutil.which("ptxas")):
        pytest.skip("ptxas not found")
    import ctriton
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    from kernels.attention import attn_bwd
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "sm_scale": "fp32", "DO": "*fp16", "DQ": "*fp16",
           "DK": "*fp16", "DV": "*fp16", "M": "*fp32", "D": "*fp32", "stride_z": "i32", "stride_h": "i32",
           "stride_tok": "i32", "stride_d": "constexpr", "H": "i32", "N_CTX": "i32"}
    cx = dict(stride_d=1, BLOCK_M1=32, BLOCK_N1=128, BLOCK_M2=128, BLOCK_N2=32, BLK_SLICE_FACTOR=2, HEAD_DIM=64)
    sig.update({k: "constexpr" for k in cx})
    attrs = {n: {"divisibility": 16} for n in sig if sig[n] not in ("constexpr", "fp32")}
    k = ctriton.compile(ASTSource(attn_bwd, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                        options={"num_warps": 4, "num_stages": 5})
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    assert " trans " not in ttgir.split("async_copy", 1)[1]  # the transposes became slot reads
    assert ptx.count("cp.async.cg.shared.global") >= 40
    assert "wgmma.mma_async" in ptx
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"

