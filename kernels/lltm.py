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

One kernel per (batch block, state block) tile computes d_gates (stored
twice: row-major and transposed), d_old_cell and that batch block's partial
d_bias; a second kernel sums the partials in a fixed order (no atomics,
deterministic). The two GEMMs run on an fp32 matmul kernel whose operands are
all K-contiguous (W^T and X^T are transposed copies), so on Hopper with tf32
they are copied asynchronously into the MMA's shared-memory layout; tile
shapes are picked per GEMM for the device's multiprocessor count.
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
    # each gate stored as soon as it is made (fewer tiles live at once)
    smask = offs_s < S
    mask = (offs_b[:, None] < B) & smask[None, :]
    tile = offs_b[:, None] * S + offs_s[None, :]  # outputs are contiguous (B, S)
    in_gate = tl.sigmoid(acc0 + tl.load(bias_ptr + offs_s, mask=smask, other=0.0)[None, :])
    tl.store(in_gate_ptr + tile, in_gate, mask=mask)
    cand = _elu(acc2 + tl.load(bias_ptr + 2 * S + offs_s, mask=smask, other=0.0)[None, :])
    tl.store(cand_ptr + tile, cand, mask=mask)
    old_cell = tl.load(old_cell_ptr + offs_b[:, None] * stride_c + offs_s[None, :],
                       mask=mask, other=0.0)
    new_cell = old_cell + cand * in_gate
    tl.store(new_cell_ptr + tile, new_cell, mask=mask)
    out_gate = tl.sigmoid(acc1 + tl.load(bias_ptr + S + offs_s, mask=smask, other=0.0)[None, :])
    tl.store(out_gate_ptr + tile, out_gate, mask=mask)
    tl.store(new_h_ptr + tile, _tanh(new_cell) * out_gate, mask=mask)


@triton.jit
def lltm_bwd_gates_kernel(grad_h_ptr, grad_cell_ptr, new_cell_ptr, in_gate_ptr, out_gate_ptr,
                          cand_ptr, d_gates_ptr, d_gates_t_ptr, d_old_cell_ptr, d_bias_part_ptr,
                          B, S, stride_gh, stride_gc,
                          BLOCK_B: tl.constexpr, BLOCK_S: tl.constexpr):
    # One (batch block, state block) tile: d_gates (stored row-major (B, 3S)
    # and transposed (3S, B), so that both GEMMs of the backward pass read
    # their operands K-contiguous), d_old_cell, and this batch block's
    # partial sums of d_bias (reduced by lltm_bias_reduce_kernel).
    pid_b = tl.program_id(0)
    pid_s = tl.program_id(1)
    offs_b = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    offs_s = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    smask = offs_s < S
    mask = (offs_b[:, None] < B) & smask[None, :]
    tile = offs_b[:, None] * S + offs_s[None, :]
    gh = tl.load(grad_h_ptr + offs_b[:, None] * stride_gh + offs_s[None, :], mask=mask, other=0.0)
    gc = tl.load(grad_cell_ptr + offs_b[:, None] * stride_gc + offs_s[None, :], mask=mask,
                 other=0.0)
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
    gcol = d_gates_t_ptr + offs_s[None, :] * B + offs_b[:, None]
    tl.store(gcol, dg0, mask=mask)
    tl.store(gcol + S * B, dg1, mask=mask)
    tl.store(gcol + 2 * S * B, dg2, mask=mask)
    part = d_bias_part_ptr + pid_b * (3 * S) + offs_s
    tl.store(part, tl.sum(tl.where(mask, dg0, 0.0), axis=0), mask=smask)
    tl.store(part + S, tl.sum(tl.where(mask, dg1, 0.0), axis=0), mask=smask)
    tl.store(part + 2 * S, tl.sum(tl.where(mask, dg2, 0.0), axis=0), mask=smask)


@triton.jit
def lltm_bias_reduce_kernel(part_ptr, out_ptr, rows, n,
                            BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    """out[j] = sum over i < rows of part[i, j]: the partial d_bias rows, in
    a fixed order (deterministic)."""
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    nmask = offs_n < n
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for r0 in range(0, rows, BLOCK_R):
        offs_r = r0 + tl.arange(0, BLOCK_R)
        v = tl.load(part_ptr + offs_r[:, None] * n + offs_n[None, :],
                    mask=(offs_r[:, None] < rows) & nmask[None, :], other=0.0)
        acc += tl.sum(v, axis=0)
    tl.store(out_ptr + offs_n, acc, mask=nmask)


@triton.jit
def transpose_kernel(src_ptr, dst_ptr, R, C, stride_sr, stride_sc, stride_dst,
                     BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """dst[c, r] = src[r, c] for an (R, C) source; dst has contiguous rows."""
    offs_r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    offs_c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (offs_r[:, None] < R) & (offs_c[None, :] < C)
    v = tl.load(src_ptr + offs_r[:, None] * stride_sr + offs_c[None, :] * stride_sc, mask=mask)
    tl.store(dst_ptr + offs_c[None, :] * stride_dst + offs_r[:, None], v, mask=mask)


@triton.jit
def matmul_f32_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                      stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, PREC: tl.constexpr):
    """C = A @ B in fp32 for arbitrary strides (transposes are stride swaps).
    Programs are ordered in groups of GROUP_M row blocks (L2 reuse of B).
    On tensor cores (tf32) the operands are best K-contiguous
    (stride_ak == stride_bk == 1): they are then copied asynchronously
    straight into the MMA's shared-memory layout."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
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


_SMS = {}


def _gpu_sms(t):
    """The multiprocessor count of a torch CUDA tensor's device; 0 for a
    numpy array (CPU backend)."""
    dev = getattr(t, "device", None)
    if getattr(dev, "type", None) != "cuda":
        return 0
    if dev.index not in _SMS:
        import torch
        _SMS[dev.index] = torch.cuda.get_device_properties(dev).multi_processor_count
    return _SMS[dev.index]


def _pick(sms, M, N, cands):
    """Of cands (((BLOCK_M, BLOCK_N, ...), per-tile efficiency), ...), the
    tile with the best product of its efficiency and how full the last
    wave of M x N tiles keeps `sms` multiprocessors (small problems take
    smaller tiles, for more programs)."""
    def score(c):
        (bm, bn), eff = c[0][:2], c[1]
        tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
        return eff * tiles / (triton.cdiv(tiles, sms) * sms)
    return max(cands, key=score)[0]


def _fwd_config(sms, precision, B=1 << 20, S=1 << 20):
    """(BLOCK_B, BLOCK_S, BLOCK_K, num_warps, num_stages) of the forward
    kernel for a batch of B rows and state size S."""
    if not sms:
        return 16, 32, 32, 4, 1
    if precision == "ieee":
        cands = (((64, 64, 16, 8, 3), 1.0), ((64, 32, 16, 4, 3), 0.8))
    else:
        cands = (((128, 64, 32, 8, 3), 1.0), ((64, 32, 32, 4, 4), 0.6))
    return _pick(sms, B, S, cands)


def _mm_config(sms, precision, M, N):
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) for an M x N fp32
    GEMM on `sms` multiprocessors (see _pick)."""
    if not sms:
        return 32, 32, 32, 4, 1
    if precision == "ieee":
        cands = (((128, 128, 16, 8, 3), 1.0), ((64, 128, 16, 4, 3), 0.9),
                 ((64, 64, 16, 4, 3), 0.7))
    else:
        cands = (((128, 256, 32, 8, 3), 1.0), ((128, 128, 32, 8, 4), 0.92),
                 ((64, 64, 32, 4, 4), 0.6))
    return _pick(sms, M, N, cands)


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
    bb, bs, bk, warps, stages = _fwd_config(_gpu_sms(old_h), input_precision, B, S)
    grid = (triton.cdiv(B, bb), triton.cdiv(S, bs))
    lltm_fwd_kernel[grid](input, weights, bias, old_h, old_cell,
                          new_h, new_cell, ig, og, cand, B, S, I,
                          _stride(input, 0), _stride(weights, 0), _stride(weights, 1),
                          _stride(old_h, 0), _stride(old_cell, 0),
                          BLOCK_B=bb, BLOCK_S=bs, BLOCK_K=bk, PREC=input_precision,
                          num_warps=warps, num_stages=stages)
    return new_h, new_cell, ig, og, cand


def _matmul(a, b, c, input_precision):
    """c = a @ b (2-D views, any strides)."""
    M, K = a.shape
    N = b.shape[1]
    bm, bn, bk, warps, stages = _mm_config(_gpu_sms(a), input_precision, M, N)
    matmul_f32_kernel[(triton.cdiv(M, bm) * triton.cdiv(N, bn),)](
        a, b, c, M, N, K, _stride(a, 0), _stride(a, 1), _stride(b, 0), _stride(b, 1),
        _stride(c, 0), _stride(c, 1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
        PREC=input_precision, num_warps=warps, num_stages=stages)


def _transpose(src, dst):
    """dst (C, R) = src (R, C)^T; dst with contiguous rows."""
    R, C = src.shape
    sms = _gpu_sms(src)
    blk = 64 if sms else 32
    transpose_kernel[(triton.cdiv(R, blk), triton.cdiv(C, blk))](
        src, dst, R, C, _stride(src, 0), _stride(src, 1), _stride(dst, 0), BLOCK_R=blk, BLOCK_C=blk,
        num_warps=4)


def lltm_backward(grad_h, grad_cell, new_cell, input_gate, output_gate, candidate_cell,
                  input, old_h, weights, input_precision="ieee"):
    """Returns (d_old_h, d_input, d_weights, d_bias, d_old_cell)."""
    B, S = new_cell.shape
    I = input.shape[1]
    for name, t in (("grad_h", grad_h), ("grad_cell", grad_cell), ("input", input),
                    ("old_h", old_h)):
        _check_rows(name, t)
    sms = _gpu_sms(new_cell)
    bb, bs = (32, 64) if sms else (16, 32)
    nb = triton.cdiv(B, bb)
    d_gates = _empty(new_cell, (B, 3 * S))
    d_gates_t = _empty(new_cell, (3 * S, B))
    d_old_cell = _empty(new_cell, (B, S))
    d_bias_part = _empty(new_cell, (nb, 3 * S))
    lltm_bwd_gates_kernel[(nb, triton.cdiv(S, bs))](
        grad_h, grad_cell, new_cell, input_gate, output_gate, candidate_cell,
        d_gates, d_gates_t, d_old_cell, d_bias_part, B, S,
        _stride(grad_h, 0), _stride(grad_cell, 0), BLOCK_B=bb, BLOCK_S=bs, num_warps=4)
    d_bias = _empty(new_cell, (3 * S,))
    lltm_bias_reduce_kernel[(triton.cdiv(3 * S, 128),)](
        d_bias_part, d_bias, nb, 3 * S, BLOCK_R=16, BLOCK_N=128, num_warps=4)
    # The GEMMs read both operands K-contiguous: W^T and X^T = [old_h, input]^T
    # are transposed copies.
    w_t = _empty(new_cell, (S + I, 3 * S))
    _transpose(weights, w_t)
    x_t = _empty(new_cell, (S + I, B))
    _transpose(old_h, x_t[:S])
    _transpose(input, x_t[S:])
    # d_X = d_gates @ W, written straight into d_old_h and d_input
    d_old_h = _empty(new_cell, (B, S))
    d_input = _empty(new_cell, (B, I))
    _matmul(d_gates, w_t[:S].T, d_old_h, input_precision)
    _matmul(d_gates, w_t[S:].T, d_input, input_precision)
    # d_W = d_gates^T @ X
    d_weights = _empty(new_cell, (3 * S, S + I))
    _matmul(d_gates_t, x_t.T, d_weights, input_precision)
    return d_old_h, d_input, d_weights, d_bias, d_old_cell
