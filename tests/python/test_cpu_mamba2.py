"""CPU end-to-end: the Mamba-2 SSD chunked scan of kernels/mamba2_ssd.py
against the plain sequential recurrence (float64 numpy)
H_t = exp(dt_t A) H_{t-1} + (dt_t x_t) B_t^T, y_t = H_t C_t."""
import os
import sys

import numpy as np
import pytest

from cpu_util import cpu_driver, requires_cpu  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels"))

pytestmark = requires_cpu


def ssm_ref(x, dt, A, B, C):
    """Sequential scan; returns y (batch, seqlen, heads, headdim) and the
    final state (batch, heads, headdim, dstate)."""
    batch, L, H, P = x.shape
    G, N = B.shape[2], B.shape[3]
    x, dt, A, B, C = (np.asarray(v, np.float64) for v in (x, dt, A, B, C))
    grp = np.arange(H) // (H // G)
    state = np.zeros((batch, H, P, N))
    y = np.zeros((batch, L, H, P))
    for t in range(L):
        decay = np.exp(dt[:, t] * A)[:, :, None, None]
        xdt = dt[:, t, :, None] * x[:, t]                       # (batch, H, P)
        state = state * decay + xdt[..., None] * B[:, t, grp][:, :, None, :]
        y[:, t] = np.einsum("bhpn,bhn->bhp", state, C[:, t, grp])
    return y, state


def _inputs(rng, batch, L, H, P, G, N):
    x = rng.standard_normal((batch, L, H, P)).astype(np.float32)
    dt = rng.uniform(0.01, 0.3, (batch, L, H)).astype(np.float32)
    A = -rng.uniform(0.5, 2.0, H).astype(np.float32)
    B = rng.standard_normal((batch, L, G, N)).astype(np.float32)
    C = rng.standard_normal((batch, L, G, N)).astype(np.float32)
    return x, dt, A, B, C


@pytest.mark.parametrize("batch,L,H,P,G,N,chunk", [
    (2, 50, 3, 8, 1, 16, 16),    # ragged last chunk, headdim < 16
    (1, 64, 2, 16, 1, 8, 32),    # whole chunks, dstate < 16
    (1, 40, 4, 16, 2, 16, 16),   # two groups
    (1, 150, 2, 16, 1, 128, 32),  # dstate 128: four 32-wide slices in the scan, ragged tail
    (1, 70, 2, 80, 1, 16, 16),   # headdim 80: two headdim blocks (the second one ragged)
    (2, 90, 4, 24, 2, 160, 16),  # dstate 160: two state blocks, five scan slices; two groups
    (1, 160, 2, 64, 1, 128, 64),  # the GPU benchmark's block sizes, ragged third chunk
    (2, 45, 3, 16, 3, 32, 16),   # a group per head: C B^T made in the scan itself
])
def test_ssd_matches_recurrence(batch, L, H, P, G, N, chunk):
    """C B^T is shared by a group's heads (made once per chunk and group)
    unless each head has its own group and one headdim block."""
    from mamba2_ssd import mamba2_ssd_forward
    rng = np.random.default_rng(L + H)
    x, dt, A, B, C = _inputs(rng, batch, L, H, P, G, N)
    y, final = mamba2_ssd_forward(x, dt, A, B, C, chunk_size=chunk, return_final_state=True)
    y_ref, final_ref = ssm_ref(x, dt, A, B, C)
    np.testing.assert_allclose(y, y_ref, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(final, final_ref, rtol=1e-4, atol=2e-5)


def test_ssd_strided_inputs():
    """x and B/C as views into wider buffers (non-contiguous strides)."""
    from mamba2_ssd import mamba2_ssd_forward
    rng = np.random.default_rng(3)
    batch, L, H, P, G, N = 1, 33, 2, 8, 1, 16
    x, dt, A, B, C = _inputs(rng, batch, L, H, P, G, N)
    xw = np.zeros((batch, L, H, 2 * P), np.float32)
    xw[..., ::2] = x
    bc = np.concatenate([B, C], axis=3)
    y = mamba2_ssd_forward(xw[..., ::2], dt, A, bc[..., :N], bc[..., N:], chunk_size=16)
    y_ref, _ = ssm_ref(x, dt, A, B, C)
    np.testing.assert_allclose(y, y_ref, rtol=1e-4, atol=2e-5)


def test_ssd_tf32():
    """input_precision "tf32" reaches every dot; checked with a looser
    tolerance (tf32 keeps 10 mantissa bits)."""
    from mamba2_ssd import mamba2_ssd_forward
    rng = np.random.default_rng(7)
    batch, L, H, P, G, N = 1, 100, 2, 32, 1, 64
    x, dt, A, B, C = _inputs(rng, batch, L, H, P, G, N)
    y, final = mamba2_ssd_forward(x, dt, A, B, C, chunk_size=32, input_precision="tf32",
                                  return_final_state=True)
    y_ref, final_ref = ssm_ref(x, dt, A, B, C)
    scale = np.abs(y_ref).max()
    np.testing.assert_allclose(y, y_ref, rtol=2e-2, atol=2e-2 * scale)
    np.testing.assert_allclose(final, final_ref, rtol=2e-2, atol=2e-2 * np.abs(final_ref).max())
