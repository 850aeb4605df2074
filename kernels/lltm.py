"""LLTM ("long-long-term memory") cell, forward and backward.

The cell, for a batch of rows with state size S and input size I:

    X      = [old_h, input]                     (B, S + I)
    gates  = X @ W^T + b                        W: (3S, S + I), b: (3S,)
    g0, g1, g2 = gates[:, :S], gates[:, S:2S], gates[:, 2S:]
    input_gate     = sigmoid(g0)
    output_gate    = sigmoid(g1)
    candidate_cell = elu(g2)                    (alpha = 1)
    new_cell = old_cell + candidate_cell * input_gate
    new_h    = tanh(new_cell) * output_gate

Forward: one fused kernel. Each program owns a (batch block, state block)
tile; it accumulates the three gate tiles with tl.dot over the columns of
old_h and then of input (X is never materialised) and applies the whole
elementwise tail before storing new_h, new_cell and the activations the
backward pass needs.

Backward, with incoming grad_h, grad_cell:

    t          = tanh(new_cell)
    dcell      = grad_cell + grad_h * output_gate * (1 - t^2)    (= d_old_cell)
    dg0 = dcell * candidate_cell * input_gate * (1 - input_gate)
    dg1 = grad_h * t * output_gate * (1 - output_gate)
    dg2 = dcell * input_gate * elu'(g2)        elu'(g) = 1 if g > 0 else exp(g)
                                               (= candidate_cell + 1 there)
    d_bias    = sum over rows of d_gates
    d_weights = d_gates^T @ X
    d_X       = d_gates @ W     ->  d_old_h = d_X[:, :S], d_input = d_X[:, S:]

One kernel per state block walks the batch computing d_gates, d_old_cell and
d_bias (no atomics, deterministic); the two GEMMs use a strided fp32 matmul
kernel on views (X^T and the halves of d_weights are plain strided views).
"""
import ctriton as triton
import ctriton.language as tl


@triton.jit
def _tanh(x):
    # tanh(x) = 2 sigmoid(2x) - 1: no overflow for large |x|
    return 2.0 * tl.sigmoid(2.0 * x) - 1.0


@triton.jit
def _elu(x):
    return tl.where(x > 0, x, tl.exp(tl.minimum(x, 0.0)) - 1.0)


@triton.jit
def _gate_tile_acc(acc0, acc1, acc2, x_ptr, stride_xb, w_ptr, stride_w0, stride_w1,
                   offs_b, offs_s, K, S, B,
                   BLOCK_K: tl.constexpr, PREC: tl.constexpr):
    # acc_g += x[offs_b, :K] @ W[g*S + offs_s, :K]^T for g = 0, 1, 2
    offs_k = tl.arange(0, BLOCK_K)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + offs_k
        x = tl.load(x_ptr + offs_b[:, None] * stride_xb + kk[None, :],
                    mask=(offs_b[:, None] < B) & (kk[None, :] < K), other=0.0)
        wmask = (kk[:, None] < K) & (offs_s[None, :] < S)
        w_base = w_ptr + kk[:, None] * stride_w1 + offs_s[None, :] * stride_w0
        w0 = tl.load(w_base, mask=wmask, other=0.0)
        w1 = tl.load(w_base + S * stride_w0, mask=wmask, other=0.0)
        w2 = tl.load(w_base + 2 * S * stride_w0, mask=wmask, other=0.0)
        acc0 = tl.dot(x, w0, acc0, input_precision=PREC)
        acc1 = tl.dot(x, w1, acc1, input_precision=PREC)
        acc2 = tl.dot(x, w2, acc2, input_precision=PREC)
    return acc0, acc1, acc2


@triton.jit
def lltm_fwd_kernel(input_ptr, w_ptr, bias_ptr, old_h_ptr, old_cell_ptr,
                    new_h_ptr, new_cell_ptr, in_gate_ptr, out_gate_ptr, cand_ptr,
                    B, S, I,
                    stride_in, stride_w0, stride_w1, stride_h, stride_c,
                    BLOCK_B: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_K: tl.constexpr,
                    PREC: tl.constexpr):
    pid_b = tl.program_id(0)
    pid_s = tl.program_id(1)
    offs_b = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    offs_s = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    acc0 = tl.zeros((BLOCK_B, BLOCK_S), dtype=tl.float32)
    acc1 = tl.zeros((BLOCK_B, BLOCK_S), dtype=tl.float32)
    acc2 = tl.zeros((BLOCK_B, BLOCK_S), dtype=tl.float32)
    # columns [0, S) of X are old_h, columns [S, S + I) are input
    acc0, acc1, acc2 = _gate_tile_acc(acc0, acc1, acc2, old_h_ptr, stride_h,
                                      w_ptr, stride_w0, stride_w1, offs_b, offs_s, S, S, B,
                                      BLOCK_K, PREC)
    acc0, acc1, acc2 = _gate_tile_acc(acc0, acc1, acc2, input_ptr, stride_in,
                                      w_ptr + S * stride_w1, stride_w0, stride_w1,
                                      offs_b, offs_s, I, S, B, BLOCK_K, PREC)
    smask = offs_s < S
    b0 = tl.load(bias_ptr + offs_s, mask=smask, other=0.0)
    b1 = tl.load(bias_ptr + S + offs_s, mask=smask, other=0.0)
    b2 = tl.load(bias_ptr + 2 * S + offs_s, mask=smask, other=0.0)
    in_gate = tl.sigmoid(acc0 + b0[None, :])
    out_gate = tl.sigmoid(acc1 + b1[None, :])
    cand = _elu(acc2 + b2[None, :])

    mask = (offs_b[:, None] < B) & smask[None, :]
    tile = offs_b[:, None] * S + offs_s[None, :]  # outputs are contiguous (B, S)
    old_cell = tl.load(old_cell_ptr + offs_b[:, None] * stride_c + offs_s[None, :],
                       mask=mask, other=0.0)
    new_cell = old_cell + cand * in_gate
    new_h = _tanh(new_cell) * out_gate
    tl.store(new_h_ptr + tile, new_h, mask=mask)
    tl.store(new_cell_ptr + tile, new_cell, mask=mask)
    tl.store(in_gate_ptr + tile, in_gate, mask=mask)
    tl.store(out_gate_ptr + tile, out_gate, mask=mask)
    tl.store(cand_ptr + tile, cand, mask=mask)


@triton.jit
def lltm_bwd_gates_kernel(grad_h_ptr, grad_cell_ptr, new_cell_ptr, in_gate_ptr, out_gate_ptr,
                          cand_ptr, d_gates_ptr, d_old_cell_ptr, d_bias_ptr, B, S,
                          stride_gh, stride_gc,
                          BLOCK_B: tl.constexpr, BLOCK_S: tl.constexpr):
    pid_s = tl.program_id(0)
    offs_s = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    smask = offs_s < S
    db0 = tl.zeros((BLOCK_S,), dtype=tl.float32)
    db1 = tl.zeros((BLOCK_S,), dtype=tl.float32)
    db2 = tl.zeros((BLOCK_S,), dtype=tl.float32)
    for b0 in range(0, B, BLOCK_B):
        offs_b = b0 + tl.arange(0, BLOCK_B)
        mask = (offs_b[:, None] < B) & smask[None, :]
        tile = offs_b[:, None] * S + offs_s[None, :]
        gh = tl.load(grad_h_ptr + offs_b[:, None] * stride_gh + offs_s[None, :],
                     mask=mask, other=0.0)
        gc = tl.load(grad_cell_ptr + offs_b[:, None] * stride_gc + offs_s[None, :],
                     mask=mask, other=0.0)
        new_cell = tl.load(new_cell_ptr + tile, mask=mask, other=0.0)
        ig = tl.load(in_gate_ptr + tile, mask=mask, other=0.0)
        og = tl.load(out_gate_ptr + tile, mask=mask, other=0.0)
        cand = tl.load(cand_ptr + tile, mask=mask, other=0.0)
        t = _tanh(new_cell)
        dcell = gc + gh * og * (1.0 - t * t)
        dg0 = dcell * cand * ig * (1.0 - ig)
        dg1 = gh * t * og * (1.0 - og)
        delu = tl.where(cand > 0, 1.0, cand + 1.0)
        dg2 = dcell * ig * delu
        tl.store(d_old_cell_ptr + tile, dcell, mask=mask)
        grow = d_gates_ptr + offs_b[:, None] * (3 * S) + offs_s[None, :]
        tl.store(grow, dg0, mask=mask)
        tl.store(grow + S, dg1, mask=mask)
        tl.store(grow + 2 * S, dg2, mask=mask)
        db0 += tl.sum(tl.where(mask, dg0, 0.0), axis=0)
        db1 += tl.sum(tl.where(mask, dg1, 0.0), axis=0)
        db2 += tl.sum(tl.where(mask, dg2, 0.0), axis=0)
    tl.store(d_bias_ptr + offs_s, db0, mask=smask)
    tl.store(d_bias_ptr + S + offs_s, db1, mask=smask)
    tl.store(d_bias_ptr + 2 * S + offs_s, db2, mask=smask)


@triton.jit
def matmul_f32_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                      stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      PREC: tl.constexpr):
    """C = A @ B in fp32 for arbitrary strides (transposes are stride swaps)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PREC)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc, mask=mask)


# -- wrappers: numpy arrays (CPU backend) or torch CUDA tensors -------------------

def _empty(like, shape):
    if hasattr(like, "new_empty"):  # torch
        return like.new_empty(shape)
    import numpy as np
    return np.empty(shape, dtype=like.dtype)


def _stride(t, d):
    if hasattr(t, "stride") and callable(t.stride):  # torch: in elements
        return t.stride(d)
    return t.strides[d] // t.itemsize  # numpy: in bytes


def _check_rows(name, t):
    if _stride(t, 1) != 1:
        raise ValueError(f"{name}: rows must be contiguous")


_BLOCK_B, _BLOCK_S, _BLOCK_K = 16, 32, 32


def lltm_forward(input, weights, bias, old_h, old_cell, input_precision="ieee"):
    """Returns (new_h, new_cell, input_gate, output_gate, candidate_cell);
    the last three (and the inputs) are what lltm_backward needs.
    float32 arrays/tensors; input (B, I), weights (3S, S+I), bias (3S,),
    old_h and old_cell (B, S)."""
    B, I = input.shape
    S = old_h.shape[1]
    if tuple(weights.shape) != (3 * S, S + I) or tuple(bias.shape) != (3 * S,):
        raise ValueError("weights must be (3*state, state+input) and bias (3*state,)")
    for name, t in (("input", input), ("old_h", old_h), ("old_cell", old_cell)):
        _check_rows(name, t)
    if _stride(bias, 0) != 1:
        raise ValueError("bias must be contiguous")
    new_h, new_cell, ig, og, cand = (_empty(old_h, (B, S)) for _ in range(5))
    grid = (triton.cdiv(B, _BLOCK_B), triton.cdiv(S, _BLOCK_S))
    lltm_fwd_kernel[grid](input, weights, bias, old_h, old_cell,
                          new_h, new_cell, ig, og, cand, B, S, I,
                          _stride(input, 0), _stride(weights, 0), _stride(weights, 1),
                          _stride(old_h, 0), _stride(old_cell, 0),
                          BLOCK_B=_BLOCK_B, BLOCK_S=_BLOCK_S, BLOCK_K=_BLOCK_K,
                          PREC=input_precision)
    return new_h, new_cell, ig, og, cand


def _matmul(a, b, c, input_precision):
    M, K = a.shape
    N = b.shape[1]
    bm, bn, bk = 32, 32, 32
    matmul_f32_kernel[(triton.cdiv(M, bm), triton.cdiv(N, bn))](
        a, b, c, M, N, K, _stride(a, 0), _stride(a, 1), _stride(b, 0), _stride(b, 1),
        _stride(c, 0), _stride(c, 1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, PREC=input_precision)


def lltm_backward(grad_h, grad_cell, new_cell, input_gate, output_gate, candidate_cell,
                  input, old_h, weights, input_precision="ieee"):
    """Returns (d_old_h, d_input, d_weights, d_bias, d_old_cell)."""
    B, S = new_cell.shape
    I = input.shape[1]
    _check_rows("grad_h", grad_h)
    _check_rows("grad_cell", grad_cell)
    d_gates = _empty(new_cell, (B, 3 * S))
    d_old_cell = _empty(new_cell, (B, S))
    d_bias = _empty(new_cell, (3 * S,))
    lltm_bwd_gates_kernel[(triton.cdiv(S, _BLOCK_S),)](
        grad_h, grad_cell, new_cell, input_gate, output_gate, candidate_cell,
        d_gates, d_old_cell, d_bias, B, S, _stride(grad_h, 0), _stride(grad_cell, 0),
        BLOCK_B=_BLOCK_B, BLOCK_S=_BLOCK_S)
    # d_X = d_gates @ W, written straight into d_old_h and d_input
    d_old_h = _empty(new_cell, (B, S))
    d_input = _empty(new_cell, (B, I))
    _matmul(d_gates, weights[:, :S], d_old_h, input_precision)
    _matmul(d_gates, weights[:, S:], d_input, input_precision)
    # d_W = d_gates^T @ [old_h, input]: the two column blocks of d_W
    d_weights = _empty(new_cell, (3 * S, S + I))
    _matmul(d_gates.T, old_h, d_weights[:, :S], input_precision)
    _matmul(d_gates.T, input, d_weights[:, S:], input_precision)
    return d_old_h, d_input, d_weights, d_bias, d_old_cell
