"""The LLTM cell and the Mamba-2 SSD scan of kernels/ on the GPU, against torch:
LLTM forward and backward against torch autograd through the same cell,
the SSD scan against a sequential torch recurrence.

Marked `gpu`: skipped where no CUDA device is active.
"""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels"))

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch():
    import torch as t
    t.manual_seed(0)
    return t


def _lltm_torch(torch, x, W, b, h, c):
    S = h.shape[1]
    gates = torch.nn.functional.linear(torch.cat([h, x], 1), W, b)
    ig = torch.sigmoid(gates[:, :S])
    og = torch.sigmoid(gates[:, S:2 * S])
    cand = torch.nn.functional.elu(gates[:, 2 * S:], alpha=1.0)
    new_cell = c + cand * ig
    new_h = torch.tanh(new_cell) * og
    return new_h, new_cell, ig, og, cand


@pytest.mark.parametrize("B,S,I", [(16, 128, 32), (37, 100, 75), (256, 512, 256),
                                   (4096, 1024, 1024)])  # the benchmark's: the largest tiles
@pytest.mark.parametrize("precision", ["ieee", "tf32"])
def test_lltm(torch, B, S, I, precision):
    from lltm import lltm_forward, lltm_backward
    dev = "cuda"
    x = torch.randn(B, I, device=dev, dtype=torch.float64)
    W = torch.randn(3 * S, S + I, device=dev, dtype=torch.float64) / (S + I) ** 0.5
    b = torch.randn(3 * S, device=dev, dtype=torch.float64)
    h = torch.randn(B, S, device=dev, dtype=torch.float64)
    c = torch.randn(B, S, device=dev, dtype=torch.float64)
    leaves = [t.clone().requires_grad_() for t in (x, W, b, h, c)]
    ref = _lltm_torch(torch, *leaves)
    gh = torch.randn(B, S, device=dev, dtype=torch.float64)
    gc = torch.randn(B, S, device=dev, dtype=torch.float64)
    torch.autograd.backward([ref[0], ref[1]], [gh, gc])

    f32 = [t.float().contiguous() for t in (x, W, b, h, c)]
    out = lltm_forward(*f32, input_precision=precision)
    tol = dict(rtol=1e-4, atol=1e-5) if precision == "ieee" else dict(rtol=1e-2, atol=1e-2)
    for name, got, want in zip(["new_h", "new_cell", "input_gate", "output_gate", "cand"],
                               out, ref):
        torch.testing.assert_close(got.double(), want.detach(), **tol, msg=name)
    xf, Wf, _, hf, _ = f32
    grads = lltm_backward(gh.float(), gc.float(), out[1], out[2], out[3], out[4], xf, hf, Wf,
                          input_precision=precision)
    x_, W_, b_, h_, c_ = leaves
    for name, got, want in zip(["d_old_h", "d_input", "d_weights", "d_bias", "d_old_cell"],
                               grads, [h_.grad, x_.grad, W_.grad, b_.grad, c_.grad]):
        scale = dict(tol)
        if name in ("d_weights", "d_bias"):  # sums over the batch
            scale["atol"] = tol["atol"] * B ** 0.5
        torch.testing.assert_close(got.double(), want, **scale, msg=name)


def _ssm_torch(torch, x, dt, A, B, C):
    """Sequential recurrence in float64: H_t = exp(dt_t A) H_{t-1} + (dt_t x_t) B_t^T,
    y_t = H_t C_t; returns y and the final state (batch, heads, headdim, dstate)."""
    batch, L, H, P = x.shape
    G, N = B.shape[2], B.shape[3]
    x, dt, A, B, C = (v.double() for v in (x, dt, A, B, C))
    grp = torch.arange(H, device=x.device) // (H // G)
    Bh, Ch = B[:, :, grp], C[:, :, grp]                  # (batch, L, H, N)
    state = x.new_zeros(batch, H, P, N)
    ys = []
    for t in range(L):
        decay = torch.exp(dt[:, t] * A)[:, :, None, None]
        state = state * decay + (dt[:, t, :, None] * x[:, t])[..., None] * Bh[:, t, :, None, :]
        ys.append(torch.einsum("bhpn,bhn->bhp", state, Ch[:, t]))
    return torch.stack(ys, 1), state


@pytest.mark.parametrize("batch,L,H,P,G,N,chunk,prec", [
    (2, 256, 4, 64, 1, 64, 64, "ieee"),
    (1, 300, 3, 32, 1, 128, 64, "ieee"),   # ragged last chunk
    (2, 320, 4, 64, 1, 128, 64, "ieee"),   # the benchmark's block sizes and warps (dstate 128)
    (2, 128, 8, 64, 2, 32, 32, "ieee"),    # two groups
    (1, 100, 2, 24, 1, 40, 16, "ieee"),    # headdim, dstate not powers of two
    (1, 200, 2, 80, 1, 160, 64, "ieee"),   # two headdim blocks, two dstate blocks
    (2, 256, 4, 64, 1, 64, 64, "tf32"),
    (1, 300, 3, 64, 1, 128, 64, "tf32"),
])
def test_mamba2_ssd(torch, batch, L, H, P, G, N, chunk, prec):
    from mamba2_ssd import mamba2_ssd_forward
    dev = "cuda"
    x = torch.randn(batch, L, H, P, device=dev)
    dt = torch.nn.functional.softplus(torch.randn(batch, L, H, device=dev) - 2.0)
    A = -torch.rand(H, device=dev) * 2.0 - 0.5
    B = torch.randn(batch, L, G, N, device=dev) / N ** 0.5
    C = torch.randn(batch, L, G, N, device=dev) / N ** 0.5
    y, final = mamba2_ssd_forward(x, dt, A, B, C, chunk_size=chunk, input_precision=prec,
                                  return_final_state=True)
    y_ref, final_ref = _ssm_torch(torch, x, dt, A, B, C)
    tol = 1e-4 if prec == "ieee" else 1e-2  # tf32: 10 mantissa bits
    torch.testing.assert_close(y.double(), y_ref, rtol=tol, atol=tol)
    torch.testing.assert_close(final.double(), final_ref, rtol=tol, atol=tol)
