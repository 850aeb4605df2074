"""CPU end-to-end: the LLTM cell of kernels/lltm.py (fused forward, backward
with d_gates/d_bias kernel and strided GEMMs) against a float64 numpy model."""
import os
import sys

import numpy as np
import pytest

from cpu_util import cpu_driver, requires_cpu  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernels"))

pytestmark = requires_cpu


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def lltm_ref(x, W, b, h, c):
    """float64 forward; returns outputs and what the backward model needs."""
    S = h.shape[1]
    X = np.concatenate([h, x], 1).astype(np.float64)
    g = X @ W.astype(np.float64).T + b
    ig, og, g2 = _sigmoid(g[:, :S]), _sigmoid(g[:, S:2 * S]), g[:, 2 * S:]
    cand = np.where(g2 > 0, g2, np.expm1(np.minimum(g2, 0)))
    new_cell = c + cand * ig
    new_h = np.tanh(new_cell) * og
    return (new_h, new_cell, ig, og, cand), (X, g2)


def lltm_bwd_ref(gh, gc, W, fwd, saved):
    new_h, new_cell, ig, og, cand = fwd
    X, g2 = saved
    S = new_cell.shape[1]
    t = np.tanh(new_cell)
    dcell = gc + gh * og * (1 - t * t)
    dg = np.concatenate([dcell * cand * ig * (1 - ig),
                         gh * t * og * (1 - og),
                         dcell * ig * np.where(g2 > 0, 1.0, np.exp(g2))], 1)
    dX = dg @ W.astype(np.float64)
    return dX[:, :S], dX[:, S:], dg.T @ X, dg.sum(0), dcell


def _inputs(rng, B, S, I):
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    return f(B, I), f(3 * S, S + I) * 0.3, f(3 * S), f(B, S), f(B, S)


@pytest.mark.parametrize("B,S,I", [(5, 20, 13), (33, 40, 7),
                                   (300, 24, 8)])  # more batch blocks than the d_bias reduction reads at once
def test_lltm_forward_backward(B, S, I):
    from lltm import lltm_forward, lltm_backward
    rng = np.random.default_rng(B * 100 + S)
    x, W, b, h, c = _inputs(rng, B, S, I)
    out = lltm_forward(x, W, b, h, c)
    ref, saved = lltm_ref(x, W, b, h, c)
    for name, got, want in zip(["new_h", "new_cell", "input_gate", "output_gate", "cand"],
                               out, ref):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6, err_msg=name)
    gh = rng.standard_normal((B, S)).astype(np.float32)
    gc = rng.standard_normal((B, S)).astype(np.float32)
    grads = lltm_backward(gh, gc, out[1], out[2], out[3], out[4], x, h, W)
    want = lltm_bwd_ref(gh, gc, W, ref, saved)
    for name, got, w in zip(["d_old_h", "d_input", "d_weights", "d_bias", "d_old_cell"],
                            grads, want):
        assert got.shape == w.shape, name
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=5e-6 if B < 100 else 2e-5, err_msg=name)


def test_lltm_strided_rows():
    """Row-strided views (e.g. slices of a wider buffer) as inputs."""
    from lltm import lltm_forward
    rng = np.random.default_rng(7)
    B, S, I = 6, 16, 9
    x, W, b, h, c = _inputs(rng, B, S, I)
    wide = np.zeros((B, 64), np.float32)
    wide[:, 3:3 + I] = x
    hc = np.zeros((B, 2 * S + 5), np.float32)
    hc[:, :S], hc[:, S + 5:] = h, c
    out = lltm_forward(wide[:, 3:3 + I], W, b, hc[:, :S], hc[:, S + 5:])
    ref, _ = lltm_ref(x, W, b, h, c)
    np.testing.assert_allclose(out[0], ref[0], rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(out[1], ref[1], rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("precision", ["ieee", "tf32"])
def test_lltm_gpu_tiles(monkeypatch, precision):
    """The tile shapes the wrappers pick for a GPU (several of them per
    GEMM, chosen by the multiprocessor count), run on the CPU backend:
    ragged edges in every dimension, weights with a column stride."""
    import lltm
    monkeypatch.setattr(lltm, "_gpu_sms", lambda t: 4)
    rng = np.random.default_rng(5)
    B, S, I = 150, 70, 40
    x, W, b, h, c = _inputs(rng, B, S, I)
    wide = np.zeros((3 * S, 2 * (S + I)), np.float32)
    wide[:, ::2] = W
    Ws = wide[:, ::2]
    out = lltm.lltm_forward(x, Ws, b, h, c, input_precision=precision)
    ref, saved = lltm_ref(x, W, b, h, c)
    tol = dict(rtol=1e-5, atol=5e-6) if precision == "ieee" else dict(rtol=2e-2, atol=2e-2)
    for name, got, want in zip(["new_h", "new_cell", "input_gate", "output_gate", "cand"],
                               out, ref):
        np.testing.assert_allclose(got, want, **tol, err_msg=name)
    gh = rng.standard_normal((B, S)).astype(np.float32)
    gc = rng.standard_normal((B, S)).astype(np.float32)
    grads = lltm.lltm_backward(gh, gc, out[1], out[2], out[3], out[4], x, h, Ws,
                               input_precision=precision)
    want = lltm_bwd_ref(gh, gc, W, ref, saved)
    for name, got, w in zip(["d_old_h", "d_input", "d_weights", "d_bias", "d_old_cell"],
                            grads, want):
        if precision == "ieee":
            np.testing.assert_allclose(got, w, rtol=1e-5, atol=2e-5, err_msg=name)
        else:  # tf32 operands: relative to the result's size
            err = np.linalg.norm(got - w) / np.linalg.norm(w)
            assert err < 1e-2, (name, err)


def test_lltm_tile_choice():
    """The GEMM tile follows the last wave: 128x256 when its tiles fill the
    machine's waves, 128x128 when 128x256 would leave a wave mostly idle."""
    from lltm import _mm_config
    assert _mm_config(132, "tf32", 4096, 1024)[:2] == (128, 256)   # 128 tiles: one wave
    assert _mm_config(132, "tf32", 3072, 2048)[:2] == (128, 128)   # 192 vs 384 tiles
    assert _mm_config(132, "tf32", 256, 512)[:2] == (64, 64)       # small: more programs
    assert _mm_config(0, "tf32", 3072, 2048)[:2] == (32, 32)       # CPU backend
    from lltm import _fwd_config
    assert _fwd_config(132, "tf32", 4096, 1024)[:2] == (128, 64)
    assert _fwd_config(132, "tf32", 256, 512)[:2] == (64, 32)
