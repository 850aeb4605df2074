"""Mamba-2 state-space-dual (SSD) scan, chunked forward.

The selective SSM, per batch b and head h (state H_t: headdim x dstate):

    H_t = exp(dt_t * A) * H_{t-1} + (dt_t * x_t) B_t^T,    y_t = H_t C_t

SSD evaluates it chunk by chunk (CHUNK time steps). With X = x * dt (rows
scaled by dt) and a(t) = cumsum(dt * A) inside the chunk:

    Y_diag = ((C B^T) o L) X        L[i, j] = exp(a_i - a_j) for i >= j, else 0
    states = X^T (B o exp(a_last - a))          the chunk's own end state (P x N)
    S_c    = exp(a_last(c-1)) S_{c-1} + states(c-1),  S_0 = 0   (state entering c)
    Y_off  = (C S_c^T) o exp(a) = (C o exp(a)) S_c^T
    Y      = Y_diag + Y_off

Three kernels: 1 and 3 run one program per (chunk, batch*head) and block
of the output, 2 walks the chunks in order, parallel over heads and state
elements.

1. `ssd_chunk_state_kernel`, grid (chunks, batch*heads, headdim blocks x
   dstate blocks): a = tl.cumsum(dt * A) (stored to `cum`, per chunk) and
   one (BLOCK_P, BLOCK_N) tile of the chunk's own end state, a tl.dot of
   X^T scaled by dt * exp(a_last - a) with B over the chunk's time steps.
   The states are laid out (batch*heads, chunks, headdim, dstate), dstate
   contiguous.
2. `ssd_state_pass_kernel`, grid (cdiv(headdim*dstate, BLOCK), batch*heads):
   elementwise; it replaces each chunk's end state in `states` by the
   state S_c entering that chunk, and writes the final state (batch,
   heads, headdim, dstate), the layout of one chunk's state.
3. `ssd_chunk_scan_kernel`, grid (chunks, batch*heads, headdim blocks):
   C B^T accumulated over dstate in BLOCK_N-wide slices (or, when several
   heads share a group or headdim takes several blocks, read from
   `ssd_chunk_cb_kernel`, which makes it once per (chunk, batch*group));
   Y = ((C B^T) o L) X;
   then Y += (C o exp(a)) S_c^T, again over dstate slices (S_c read
   dstate-major: the K-major operand of the dot); Y stored once. The
   (CHUNK, dstate) tiles of B and C never sit in registers whole.

Shapes: x (batch, seqlen, heads, headdim), dt (batch, seqlen, heads),
A (heads,), B and C (batch, seqlen, ngroups, dstate); heads must be a
multiple of ngroups (head h reads group h // (heads // ngroups)).
seqlen need not be a multiple of CHUNK: the tail is padded with dt = 0, x = 0.
"""
import ctriton as triton
import ctriton.language as tl


@triton.jit
def ssd_chunk_state_kernel(x_ptr, dt_ptr, a_ptr, b_ptr, states_ptr, cum_ptr,
                           seqlen, nheads, heads_per_group, headdim, dstate, nchunks,
                           sx_b, sx_l, sx_h, sx_p,
                           sdt_b, sdt_l, sdt_h,
                           sb_b, sb_l, sb_g, sb_n,
                           CHUNK: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
                           PREC: tl.constexpr):
    pid_c = tl.program_id(0)
    pid_bh = tl.program_id(1)
    pid_pn = tl.program_id(2)
    n_nblocks = tl.cdiv(dstate, BLOCK_N)
    pid_p = pid_pn // n_nblocks
    pid_n = pid_pn % n_nblocks
    bi = pid_bh // nheads
    hi = pid_bh % nheads
    gi = hi // heads_per_group

    offs_q = tl.arange(0, CHUNK)
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    t = pid_c * CHUNK + offs_q
    tmask = t < seqlen
    pmask = offs_p < headdim
    nmask = offs_n < dstate

    dt = tl.load(dt_ptr + bi * sdt_b + t * sdt_l + hi * sdt_h, mask=tmask, other=0.0)
    a = tl.load(a_ptr + hi)
    a_cs = tl.cumsum(dt * a, axis=0)                       # (CHUNK,)
    a_last = tl.sum(tl.where(offs_q == CHUNK - 1, a_cs, 0.0), axis=0)
    chunk_id = pid_bh * nchunks + pid_c
    tl.store(cum_ptr + chunk_id * CHUNK + offs_q, a_cs, mask=(offs_q >= 0) & (pid_pn == 0))

    # X^T, its time columns scaled by dt * exp(a_last - a)
    scale = dt * tl.exp(a_last - a_cs)
    xt = tl.load(x_ptr + bi * sx_b + hi * sx_h + offs_p[:, None] * sx_p + t[None, :] * sx_l,
                 mask=pmask[:, None] & tmask[None, :], other=0.0)   # (P, CHUNK)
    xt = xt * scale[None, :]
    bm = tl.load(b_ptr + bi * sb_b + gi * sb_g + t[:, None] * sb_l + offs_n[None, :] * sb_n,
                 mask=tmask[:, None] & nmask[None, :], other=0.0)   # (CHUNK, N)
    st = tl.dot(xt, bm, input_precision=PREC)                      # (P, N)
    base = chunk_id.to(tl.int64) * headdim * dstate
    tl.store(states_ptr + base + offs_p[:, None] * dstate + offs_n[None, :], st,
             mask=pmask[:, None] & nmask[None, :])


@triton.jit
def ssd_state_pass_kernel(states_ptr, cum_ptr, final_ptr, dim, nchunks,
                          CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    # dim = headdim * dstate, the elements of one chunk's state
    pid = tl.program_id(0)
    pid_bh = tl.program_id(1)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < dim
    ptrs = states_ptr + pid_bh.to(tl.int64) * nchunks * dim + offs
    last_ptr = cum_ptr + pid_bh * nchunks * CHUNK + CHUNK - 1   # a_last of each chunk
    s = tl.zeros((BLOCK,), dtype=tl.float32)   # the state entering chunk ci
    for ci in range(0, nchunks):
        st = tl.load(ptrs, mask=mask, other=0.0)
        a_last = tl.load(last_ptr + ci * CHUNK)
        tl.store(ptrs, s, mask=mask)
        s = s * tl.exp(a_last) + st
        ptrs += dim
    # final state, laid out (batch, heads, headdim, dstate) like one chunk's
    tl.store(final_ptr + pid_bh * dim + offs, s, mask=mask)


@triton.jit
def ssd_chunk_cb_kernel(b_ptr, c_ptr, cb_ptr, seqlen, ngroups, dstate, nchunks,
                        sb_b, sb_l, sb_g, sb_n,
                        sc_b, sc_l, sc_g, sc_n,
                        CHUNK: tl.constexpr, BLOCK_N: tl.constexpr, PREC: tl.constexpr):
    # C B^T of one chunk of one group, contracted over dstate slice by
    # slice: shared by the group's heads (and headdim blocks) in the scan
    pid_c = tl.program_id(0)
    pid_bg = tl.program_id(1)
    bi = pid_bg // ngroups
    gi = pid_bg % ngroups
    offs_q = tl.arange(0, CHUNK)
    t = pid_c * CHUNK + offs_q
    tmask = t < seqlen
    b_ptrs = b_ptr + bi * sb_b + gi * sb_g + t[:, None] * sb_l
    c_ptrs = c_ptr + bi * sc_b + gi * sc_g + t[:, None] * sc_l
    cb = tl.zeros((CHUNK, CHUNK), dtype=tl.float32)
    for n0 in range(0, dstate, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        qn_mask = tmask[:, None] & (offs_n < dstate)[None, :]
        cm = tl.load(c_ptrs + offs_n[None, :] * sc_n, mask=qn_mask, other=0.0)
        bm = tl.load(b_ptrs + offs_n[None, :] * sb_n, mask=qn_mask, other=0.0)
        cb = tl.dot(cm, tl.trans(bm), cb, input_precision=PREC)
    base = (pid_bg * nchunks + pid_c).to(tl.int64) * (CHUNK * CHUNK)
    tl.store(cb_ptr + base + offs_q[:, None] * CHUNK + offs_q[None, :], cb)


@triton.jit
def ssd_chunk_scan_kernel(x_ptr, dt_ptr, b_ptr, c_ptr, y_ptr, states_ptr, cum_ptr, cb_ptr,
                          seqlen, nheads, heads_per_group, headdim, dstate, nchunks,
                          sx_b, sx_l, sx_h, sx_p,
                          sdt_b, sdt_l, sdt_h,
                          sb_b, sb_l, sb_g, sb_n,
                          sc_b, sc_l, sc_g, sc_n,
                          sy_b, sy_l, sy_h, sy_p,
                          CHUNK: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
                          PREC: tl.constexpr, SHARED_CB: tl.constexpr):
    pid_c = tl.program_id(0)
    pid_bh = tl.program_id(1)
    pid_p = tl.program_id(2)
    bi = pid_bh // nheads
    hi = pid_bh % nheads
    gi = hi // heads_per_group

    offs_q = tl.arange(0, CHUNK)
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    t = pid_c * CHUNK + offs_q
    tmask = t < seqlen
    pmask = offs_p < headdim
    chunk_id = pid_bh * nchunks + pid_c
    a_cs = tl.load(cum_ptr + chunk_id * CHUNK + offs_q)          # (CHUNK,)

    # C B^T: the group's, made once by ssd_chunk_cb_kernel (SHARED_CB), or
    # here, contracted over dstate slice by slice
    b_ptrs = b_ptr + bi * sb_b + gi * sb_g + t[:, None] * sb_l
    c_ptrs = c_ptr + bi * sc_b + gi * sc_g + t[:, None] * sc_l
    if SHARED_CB:
        ngroups = nheads // heads_per_group
        base = ((bi * ngroups + gi) * nchunks + pid_c).to(tl.int64) * (CHUNK * CHUNK)
        cb = tl.load(cb_ptr + base + offs_q[:, None] * CHUNK + offs_q[None, :])
    else:
        cb = tl.zeros((CHUNK, CHUNK), dtype=tl.float32)
        for n0 in range(0, dstate, BLOCK_N):
            offs_n = n0 + tl.arange(0, BLOCK_N)
            qn_mask = tmask[:, None] & (offs_n < dstate)[None, :]
            cm = tl.load(c_ptrs + offs_n[None, :] * sc_n, mask=qn_mask, other=0.0)   # (CHUNK, N)
            bm = tl.load(b_ptrs + offs_n[None, :] * sb_n, mask=qn_mask, other=0.0)   # (CHUNK, N)
            cb = tl.dot(cm, tl.trans(bm), cb, input_precision=PREC)

    # Y_diag = ((C B^T) o L) X
    causal = offs_q[:, None] >= offs_q[None, :]
    seg = tl.where(causal, a_cs[:, None] - a_cs[None, :], 0.0)
    cb = tl.where(causal, cb * tl.exp(seg), 0.0)
    dt = tl.load(dt_ptr + bi * sdt_b + t * sdt_l + hi * sdt_h, mask=tmask, other=0.0)
    x = tl.load(x_ptr + bi * sx_b + t[:, None] * sx_l + hi * sx_h + offs_p[None, :] * sx_p,
                mask=tmask[:, None] & pmask[None, :], other=0.0)
    x = x * dt[:, None]                                          # (CHUNK, P)
    acc = tl.dot(cb, x, input_precision=PREC)

    # + Y_off = (C o exp(a)) S_c^T, contracted over dstate slice by slice
    s_ptrs = states_ptr + chunk_id.to(tl.int64) * headdim * dstate + offs_p[None, :] * dstate
    exp_a = tl.exp(a_cs)[:, None]
    for n0 in range(0, dstate, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        nmask = offs_n < dstate
        cm = tl.load(c_ptrs + offs_n[None, :] * sc_n, mask=tmask[:, None] & nmask[None, :],
                     other=0.0)                                  # (CHUNK, N)
        sm = tl.load(s_ptrs + offs_n[:, None], mask=nmask[:, None] & pmask[None, :],
                     other=0.0)                                  # (N, P): S_c^T
        acc = tl.dot(cm * exp_a, sm, acc, input_precision=PREC)
    tl.store(y_ptr + bi * sy_b + t[:, None] * sy_l + hi * sy_h + offs_p[None, :] * sy_p, acc,
             mask=tmask[:, None] & pmask[None, :])


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


def _config(chunk, headdim, dstate, prec):
    """Block sizes and warps of the chunk-state and chunk-scan kernels:
    (state BLOCK_P, BLOCK_N, warps), (scan BLOCK_P, BLOCK_N, warps). With
    "ieee" the dots run on FMA units: 8 warps for a 64x128 state tile and a
    chunk-64 scan (there 4 warps take over 200 registers and 2 programs per
    SM); tf32 takes warpgroup MMA, 64 rows (headdim, or time steps) per
    group of 4 warps. For CHUNK 16 to 128 and dstate 64 and 128 (headdim
    64), ptxas reports no spills with these on sm_90."""
    fma = prec == "ieee"
    bp = min(64, max(16, triton.next_power_of_2(headdim)))
    bn = min(128 if chunk <= 64 else 64, max(16, triton.next_power_of_2(dstate)))
    state = (bp, bn, 8 if fma and (bp * bn >= 8192 or chunk >= 128) else 4)
    if fma:
        scan_warps = 8 if chunk * max(chunk, bp) >= 4096 else 4
    else:
        scan_warps = 8 if chunk >= 128 else 4
    scan = (bp, min(32, bn), scan_warps)
    return state, scan


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
    bh = batch * nheads
    hpg = nheads // ngroups
    (st_p, st_n, st_warps), (sc_p, sc_n, sc_warps) = _config(chunk_size, headdim, dstate,
                                                             input_precision)
    y = _empty(x, (batch, seqlen, nheads, headdim))
    states = _empty(x, (bh * nchunks * headdim * dstate,))
    cum = _empty(x, (bh * nchunks * chunk_size,))
    final = _empty(x, (batch, nheads, headdim, dstate))
    ssd_chunk_state_kernel[(nchunks, bh, triton.cdiv(headdim, st_p) * triton.cdiv(dstate, st_n))](
        x, dt, A, B, states, cum, seqlen, nheads, hpg, headdim, dstate, nchunks,
        *_strides(x), *_strides(dt), *_strides(B),
        CHUNK=chunk_size, BLOCK_P=st_p, BLOCK_N=st_n, PREC=input_precision,
        num_warps=st_warps)
    block = 1024
    ssd_state_pass_kernel[(triton.cdiv(headdim * dstate, block), bh)](
        states, cum, final, headdim * dstate, nchunks, CHUNK=chunk_size, BLOCK=block,
        num_warps=4)
    # C B^T depends on the group only: made once per (chunk, group) when
    # several heads of a group (or several headdim blocks) would each make it
    shared_cb = hpg > 1 or triton.cdiv(headdim, sc_p) > 1
    cb = cum
    if shared_cb:
        cb = _empty(x, (batch * ngroups * nchunks * chunk_size * chunk_size,))
        ssd_chunk_cb_kernel[(nchunks, batch * ngroups)](
            B, C, cb, seqlen, ngroups, dstate, nchunks, *_strides(B), *_strides(C),
            CHUNK=chunk_size, BLOCK_N=sc_n, PREC=input_precision, num_warps=sc_warps)
    ssd_chunk_scan_kernel[(nchunks, bh, triton.cdiv(headdim, sc_p))](
        x, dt, B, C, y, states, cum, cb, seqlen, nheads, hpg, headdim, dstate, nchunks,
        *_strides(x), *_strides(dt), *_strides(B), *_strides(C), *_strides(y),
        CHUNK=chunk_size, BLOCK_P=sc_p, BLOCK_N=sc_n, PREC=input_precision,
        SHARED_CB=shared_cb, num_warps=sc_warps)
    return (y, final) if return_final_state else y
