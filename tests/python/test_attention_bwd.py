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
@pytest.mark.parametrize("D", [64, 128])
def test_attention_bwd_gpu(D):
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    check("cuda", 2, 4, 1024, D, (128, 64))
