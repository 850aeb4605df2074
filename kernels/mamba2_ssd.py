"""Mamba-2 state-space-dual (SSD) scan, chunked forward.

The selective SSM, per batch b and head h (state H_t: headdim x dstate):

    H_t = exp(dt_t * A) * H_{t-1} + (dt_t * x_t) B_t^T,    y_t = H_t C_t

SSD evaluates it chunk by chunk (CHUNK time steps). With x already scaled by
dt and a(t) = cumsum(dt * A) inside the chunk:

    Y_diag = ((C B^T) o L) X        L[i, j] = exp(a_i - a_j) for i >= j, else 0
    states = B^T (X o exp(a_last - a))          the chunk's own end state
    S_c    = exp(a_last(c-1)) S_{c-1} + states(c-1),  S_0 = 0   (state entering c)
    Y_off  = (C S_c) o exp(a)
    Y      = Y_diag + Y_off

Kernel 1 (`ssd_chunk_kernel`): one program per (chunk, batch*head) computes
a (tl.cumsum), Y_diag and the chunk's states, all with tl.dot. Kernel 2
(`ssd_state_pass_kernel`): one program per (headdim block, batch*head) walks
the chunks in order, adds Y_off to Y and carries S_c, and stores the final
state.

Shapes: X (batch, seqlen, heads, headdim), dt (batch, seqlen, heads),
A (heads,), B and C (batch, seqlen, ngroups, dstate); heads must be a
multiple of ngroups (head h reads group h // (heads // ngroups)).
seqlen need not be a multiple of CHUNK: the tail is padded with dt = 0, x = 0.
"""
import ctriton as triton
import ctriton.language as tl


@triton.jit
def ssd_chunk_kernel(x_ptr, dt_ptr, a_ptr, b_ptr, c_ptr, y_ptr, states_ptr, cum_ptr,
                     seqlen, nheads, heads_per_group, headdim, dstate, nchunks,
                     sx_b, sx_l, sx_h, sx_p,
                     sdt_b, sdt_l, sdt_h,
                     sb_b, sb_l, sb_g, sb_n,
                     sc_b, sc_l, sc_g, sc_n,
                     sy_b, sy_l, sy_h, sy_p,
                     CHUNK: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
                     PREC: tl.constexpr):
    pid_c = tl.program_id(0)
    pid_bh = tl.program_id(1)
    bi = pid_bh // nheads
    hi = pid_bh % nheads
    gi = hi // heads_per_group

    offs_q = tl.arange(0, CHUNK)
    offs_p = tl.arange(0, BLOCK_P)
    offs_n = tl.arange(0, BLOCK_N)
    t = pid_c * CHUNK + offs_q
    tmask = t < seqlen
    pmask = offs_p < headdim
    nmask = offs_n < dstate

    dt = tl.load(dt_ptr + bi * sdt_b + t * sdt_l + hi * sdt_h, mask=tmask, other=0.0)
    a = tl.load(a_ptr + hi)
    a_cs = tl.cumsum(dt * a, axis=0)                       # (CHUNK,)
    a_last = tl.sum(tl.where(offs_q == CHUNK - 1, a_cs, 0.0), axis=0)

    x = tl.load(x_ptr + bi * sx_b + t[:, None] * sx_l + hi * sx_h + offs_p[None, :] * sx_p,
                mask=tmask[:, None] & pmask[None, :], other=0.0)
    x = x * dt[:, None]                                    # (CHUNK, P)
    qn_mask = tmask[:, None] & nmask[None, :]
    bm = tl.load(b_ptr + bi * sb_b + t[:, None] * sb_l + gi * sb_g + offs_n[None, :] * sb_n,
                 mask=qn_mask, other=0.0)                  # (CHUNK, N)
    cm = tl.load(c_ptr + bi * sc_b + t[:, None] * sc_l + gi * sc_g + offs_n[None, :] * sc_n,
                 mask=qn_mask, other=0.0)                  # (CHUNK, N)

    # intra-chunk: Y_diag = ((C B^T) o L) X
    cb = tl.dot(cm, tl.trans(bm), input_precision=PREC)   # (CHUNK, CHUNK)
    causal = offs_q[:, None] >= offs_q[None, :]
    seg = tl.where(causal, a_cs[:, None] - a_cs[None, :], 0.0)
    decay_mask = tl.where(causal, tl.exp(seg), 0.0)
    y = tl.dot(cb * decay_mask, x, input_precision=PREC)  # (CHUNK, P)
    tl.store(y_ptr + bi * sy_b + t[:, None] * sy_l + hi * sy_h + offs_p[None, :] * sy_p, y,
             mask=tmask[:, None] & pmask[None, :])

    # the chunk's end state: B^T (X o decay_states)
    decay_states = tl.exp(a_last - a_cs)
    st = tl.dot(tl.trans(bm * decay_states[:, None]), x, input_precision=PREC)  # (N, P)
    chunk_id = pid_bh * nchunks + pid_c
    tl.store(states_ptr + chunk_id * dstate * headdim + offs_n[:, None] * headdim
             + offs_p[None, :], st, mask=nmask[:, None] & pmask[None, :])
    tl.store(cum_ptr + chunk_id * CHUNK + offs_q, a_cs)


@triton.jit
def ssd_state_pass_kernel(c_ptr, y_ptr, states_ptr, cum_ptr, final_ptr,
                          seqlen, nheads, heads_per_group, headdim, dstate, nchunks,
                          sc_b, sc_l, sc_g, sc_n,
                          sy_b, sy_l, sy_h, sy_p,
                          CHUNK: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
                          PREC: tl.constexpr):
    pid_p = tl.program_id(0)
    pid_bh = tl.program_id(1)
    bi = pid_bh // nheads
    hi = pid_bh % nheads
    gi = hi // heads_per_group

    offs_q = tl.arange(0, CHUNK)
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    offs_n = tl.arange(0, BLOCK_N)
    pmask = offs_p < headdim
    nmask = offs_n < dstate
    np_mask = nmask[:, None] & pmask[None, :]

    prev = tl.zeros((BLOCK_N, BLOCK_P), dtype=tl.float32)  # state entering the chunk
    for ci in range(0, nchunks):
        chunk_id = pid_bh * nchunks + ci
        t = ci * CHUNK + offs_q
        tmask = t < seqlen
        a_cs = tl.load(cum_ptr + chunk_id * CHUNK + offs_q)
        a_last = tl.sum(tl.where(offs_q == CHUNK - 1, a_cs, 0.0), axis=0)
        cm = tl.load(c_ptr + bi * sc_b + t[:, None] * sc_l + gi * sc_g + offs_n[None, :] * sc_n,
                     mask=tmask[:, None] & nmask[None, :], other=0.0)
        y_off = tl.dot(cm, prev, input_precision=PREC) * tl.exp(a_cs)[:, None]
        y_ptrs = y_ptr + bi * sy_b + t[:, None] * sy_l + hi * sy_h + offs_p[None, :] * sy_p
        ymask = tmask[:, None] & pmask[None, :]
        tl.store(y_ptrs, tl.load(y_ptrs, mask=ymask, other=0.0) + y_off, mask=ymask)
        st = tl.load(states_ptr + chunk_id * dstate * headdim + offs_n[:, None] * headdim
                     + offs_p[None, :], mask=np_mask, other=0.0)
        prev = prev * tl.exp(a_last) + st
    # final state, laid out (batch, heads, headdim, dstate)
    tl.store(final_ptr + pid_bh * headdim * dstate + offs_p[None, :] * dstate + offs_n[:, None],
             prev, mask=np_mask)


# -- wrapper: numpy arrays (CPU backend) or torch CUDA tensors --------------------

def _strides(t):
    if hasattr(t, "stride") and callable(t.stride):  # torch: in elements
        return tuple(t.stride())
    return tuple(s // t.itemsize for s in t.strides)  # numpy: in bytes


def _empty(like, shape):
    if hasattr(like, "new_empty"):
        return like.new_empty(shape)
    import numpy as np
    return np.empty(shape, dtype=like.dtype)


def mamba2_ssd_forward(x, dt, A, B, C, chunk_size=16, input_precision="ieee",
                       return_final_state=False):
    """Y (batch, seqlen, heads, headdim) of the SSD scan; with
    return_final_state also the last state (batch, heads, headdim, dstate).
    float32 inputs; chunk_size a power of two >= 16."""
    batch, seqlen, nheads, headdim = x.shape
    ngroups, dstate = B.shape[2], B.shape[3]
    if tuple(dt.shape) != (batch, seqlen, nheads) or tuple(A.shape) != (nheads,):
        raise ValueError("dt must be (batch, seqlen, heads) and A (heads,)")
    if tuple(B.shape) != (batch, seqlen, ngroups, dstate) or tuple(C.shape) != tuple(B.shape):
        raise ValueError("B and C must be (batch, seqlen, ngroups, dstate)")
    if nheads % ngroups:
        raise ValueError("heads must be a multiple of ngroups")
    if chunk_size < 16 or chunk_size & (chunk_size - 1):
        raise ValueError("chunk_size must be a power of two >= 16")
    if _strides(A)[0] != 1:
        raise ValueError("A must be contiguous")
    nchunks = triton.cdiv(seqlen, chunk_size)
    block_p = max(16, triton.next_power_of_2(headdim))
    block_n = max(16, triton.next_power_of_2(dstate))
    y = _empty(x, (batch, seqlen, nheads, headdim))
    states = _empty(x, (batch * nheads * nchunks * dstate * headdim,))
    cum = _empty(x, (batch * nheads * nchunks * chunk_size,))
    final = _empty(x, (batch, nheads, headdim, dstate))
    hpg = nheads // ngroups
    ssd_chunk_kernel[(nchunks, batch * nheads)](
        x, dt, A, B, C, y, states, cum, seqlen, nheads, hpg, headdim, dstate, nchunks,
        *_strides(x), *_strides(dt), *_strides(B), *_strides(C), *_strides(y),
        CHUNK=chunk_size, BLOCK_P=block_p, BLOCK_N=block_n, PREC=input_precision)
    ssd_state_pass_kernel[(1, batch * nheads)](
        C, y, states, cum, final, seqlen, nheads, hpg, headdim, dstate, nchunks,
        *_strides(C), *_strides(y),
        CHUNK=chunk_size, BLOCK_P=block_p, BLOCK_N=block_n, PREC=input_precision)
    return (y, final) if return_final_state else y
