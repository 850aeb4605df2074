"""Fused attention (Flash-Attention v2 style), forward and backward. Q, K, V,
O are [Z, H, N_CTX, HEAD_DIM]; the forward pass keeps a running row max (m_i)
and row sum (l_i) in base-2 exponent space; the backward pass recomputes P
block by block from the saved log-sum-exp M.

Two forward kernels: `attn_fwd` reads through plain pointers (any strides);
`attn_fwd_tma` reads contiguous tensors through tensor descriptors made in
the kernel (on Hopper, tensor-memory-access copies, and with
WARP_SPECIALIZE a producer warpgroup that issues them while the others
compute; elsewhere plain loads). attention_forward picks the second on
Hopper for contiguous inputs."""
import ctriton as triton
import ctriton.language as tl


@triton.jit
def _stage_range(start_m, BLOCK_M: tl.constexpr, N_CTX: tl.constexpr, STAGE: tl.constexpr):
    # the key blocks of a stage: 1, left of the diagonal; 2, the diagonal
    # block; 3, all of them
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, N_CTX
    return lo, hi


@triton.jit
def _softmax_step(qk, m_i, qk_scale, offs_m, offs_n, start_n, STAGE: tl.constexpr):
    # one block of the online softmax: the new row max, P = 2^(qk - max)
    # (causal-masked on the diagonal stage) and the old rows' rescale
    if STAGE == 2:
        keep = offs_m[:, None] >= (start_n + offs_n[None, :])
        qk = qk * qk_scale + tl.where(keep, 0, -1.0e6)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        qk -= m_ij[:, None]
    else:
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
    return tl.math.exp2(qk), tl.math.exp2(m_i - m_ij), m_ij


@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, start_m, qk_scale,
                    BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr,
                    STAGE: tl.constexpr, offs_m, offs_n, N_CTX: tl.constexpr):
    lo, hi = _stage_range(start_m, BLOCK_M, N_CTX, STAGE)
    k_ptrs += lo * stride_kn
    v_ptrs += lo * stride_vn
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = tl.load(k_ptrs)
        qk = tl.dot(q, k)
        p, alpha, m_ij = _softmax_step(qk, m_i, qk_scale, offs_m, offs_n, start_n, STAGE)
        l_ij = tl.sum(p, 1)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(v_ptrs)
        p = p.to(tl.float16)
        acc = tl.dot(p, v, acc)
        m_i = m_ij
        k_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_vn
    return acc, l_i, m_i


@triton.jit
def attn_fwd(Q, K, V, sm_scale, M, Out,
             stride_qz, stride_qh, stride_qm, stride_qk,
             stride_kz, stride_kh, stride_kn, stride_kk,
             stride_vz, stride_vh, stride_vk, stride_vn,
             stride_oz, stride_oh, stride_om, stride_on,
             Z, H, N_CTX: tl.constexpr, HEAD_DIM: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr):
    tl.static_assert(BLOCK_N <= HEAD_DIM)
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    qvk_offset = off_z.to(tl.int64) * stride_qz + off_h.to(tl.int64) * stride_qh
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = Q + qvk_offset + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qk
    k_ptrs = K + qvk_offset + offs_d[:, None] * stride_kk + offs_n[None, :] * stride_kn
    v_ptrs = V + qvk_offset + offs_n[:, None] * stride_vk + offs_d[None, :] * stride_vn
    o_ptrs = Out + qvk_offset + offs_m[:, None] * stride_om + offs_d[None, :] * stride_on
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale
    qk_scale *= 1.44269504  # 1/ln(2)
    q = tl.load(q_ptrs)
    if STAGE & 1:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vk,
                                        start_m, qk_scale, BLOCK_M, HEAD_DIM, BLOCK_N,
                                        4 - STAGE, offs_m, offs_n, N_CTX)
    if STAGE & 2:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vk,
                                        start_m, qk_scale, BLOCK_M, HEAD_DIM, BLOCK_N,
                                        2, offs_m, offs_n, N_CTX)
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    m_ptrs = M + off_hz * N_CTX + offs_m
    tl.store(m_ptrs, m_i)
    tl.store(o_ptrs, acc.to(Out.type.element_ty))


@triton.jit
def _attn_fwd_tma_inner(acc, l_i, m_i, q, desc_k, desc_v, row0, start_m, qk_scale,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr,
                        offs_m, offs_n, N_CTX: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    lo, hi = _stage_range(start_m, BLOCK_M, N_CTX, STAGE)
    row = row0 + lo
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        kt = desc_k.load([row, 0]).T
        qk = tl.dot(q, kt)
        p, alpha, m_ij = _softmax_step(qk, m_i, qk_scale, offs_m, offs_n, start_n, STAGE)
        l_ij = tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([row, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        # the row sum last: fewer values live across the dots
        l_i = l_i * alpha + l_ij
        m_i = m_ij
        row += BLOCK_N
    return acc, l_i, m_i


@triton.jit
def attn_fwd_tma(Q, K, V, sm_scale, M, Out, Z, H, N_CTX: tl.constexpr, HEAD_DIM: tl.constexpr,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGE: tl.constexpr,
                 WARP_SPECIALIZE: tl.constexpr):
    """Q, K, V, Out contiguous [Z, H, N_CTX, HEAD_DIM], seen as one
    [Z * H * N_CTX, HEAD_DIM] matrix each; N_CTX a multiple of BLOCK_M (and
    of BLOCK_N), BLOCK_N <= HEAD_DIM. STAGE 1: full; 3: causal."""
    tl.static_assert(BLOCK_N <= HEAD_DIM)
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    rows = Z * H * N_CTX
    desc_q = tl.make_tensor_descriptor(Q, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(K, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(V, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = tl.make_tensor_descriptor(Out, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    row0 = off_hz * N_CTX  # this head's first row
    qrow = row0 + start_m * BLOCK_M
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale
    qk_scale *= 1.44269504  # 1/ln(2)
    q = desc_q.load([qrow, 0])
    if STAGE & 1:
        acc, l_i, m_i = _attn_fwd_tma_inner(acc, l_i, m_i, q, desc_k, desc_v, row0, start_m, qk_scale,
                                            BLOCK_M, BLOCK_N, 4 - STAGE, offs_m, offs_n, N_CTX,
                                            WARP_SPECIALIZE)
    if STAGE & 2:
        acc, l_i, m_i = _attn_fwd_tma_inner(acc, l_i, m_i, q, desc_k, desc_v, row0, start_m, qk_scale,
                                            BLOCK_M, BLOCK_N, 2, offs_m, offs_n, N_CTX, False)
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    tl.store(M + off_hz * N_CTX + offs_m, m_i)
    desc_o.store([qrow, 0], acc.to(Out.dtype.element_ty))


@triton.jit
def attn_bwd_preprocess(O, DO, Delta, Z, H, N_CTX, BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr):
    off_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    off_hz = tl.program_id(1)
    off_n = tl.arange(0, HEAD_DIM)
    o = tl.load(O + off_hz * HEAD_DIM * N_CTX + off_m[:, None] * HEAD_DIM + off_n[None, :])
    do = tl.load(DO + off_hz * HEAD_DIM * N_CTX + off_m[:, None] * HEAD_DIM + off_n[None, :]).to(tl.float32)
    delta = tl.sum(o * do, axis=1)
    tl.store(Delta + off_hz * N_CTX + off_m, delta)


@triton.jit
def _attn_bwd_dkdv(dk, dv, Q, k, v, sm_scale, DO, M, D, stride_tok, stride_d, H, N_CTX,
                   BLOCK_M1: tl.constexpr, BLOCK_N1: tl.constexpr, HEAD_DIM: tl.constexpr,
                   start_n, start_m, num_steps, MASK: tl.constexpr):
    offs_m = start_m + tl.arange(0, BLOCK_M1)
    offs_n = start_n + tl.arange(0, BLOCK_N1)
    offs_k = tl.arange(0, HEAD_DIM)
    qT_ptrs = Q + offs_m[None, :] * stride_tok + offs_k[:, None] * stride_d
    do_ptrs = DO + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d
    tl.static_assert(BLOCK_N1 % BLOCK_M1 == 0)
    curr_m = start_m
    step_m = BLOCK_M1
    for blk_idx in range(num_steps):
        qT = tl.load(qT_ptrs)
        offs_m = curr_m + tl.arange(0, BLOCK_M1)
        m = tl.load(M + offs_m)
        qkT = tl.dot(k, qT)
        pT = tl.math.exp2(qkT - m[None, :])
        if MASK:
            mask = (offs_m[None, :] >= offs_n[:, None])
            pT = tl.where(mask, pT, 0.0)
        do = tl.load(do_ptrs)
        ppT = pT.to(tl.float16)
        dv += tl.dot(ppT, do)
        Di = tl.load(D + offs_m)
        dpT = tl.dot(v, tl.trans(do)).to(tl.float32)
        dsT = pT * (dpT - Di[None, :])
        dsT = dsT.to(tl.float16)
        dk += tl.dot(dsT, tl.trans(qT))
        curr_m += step_m
        qT_ptrs += step_m * stride_tok
        do_ptrs += step_m * stride_tok
    return dk, dv


@triton.jit
def _attn_bwd_dq(dq, q, K, V, do, m, D, stride_tok, stride_d, H, N_CTX,
                 BLOCK_M2: tl.constexpr, BLOCK_N2: tl.constexpr, HEAD_DIM: tl.constexpr,
                 start_m, start_n, num_steps, MASK: tl.constexpr):
    offs_m = start_m + tl.arange(0, BLOCK_M2)
    offs_n = start_n + tl.arange(0, BLOCK_N2)
    offs_k = tl.arange(0, HEAD_DIM)
    kT_ptrs = K + offs_n[None, :] * stride_tok + offs_k[:, None] * stride_d
    vT_ptrs = V + offs_n[None, :] * stride_tok + offs_k[:, None] * stride_d
    Di = tl.load(D + offs_m)
    tl.static_assert(BLOCK_M2 % BLOCK_N2 == 0)
    curr_n = start_n
    step_n = BLOCK_N2
    for blk_idx in range(num_steps):
        kT = tl.load(kT_ptrs)
        vT = tl.load(vT_ptrs)
        qk = tl.dot(q, kT)
        p = tl.math.exp2(qk - m)
        if MASK:
            offs_n = curr_n + tl.arange(0, BLOCK_N2)
            mask = (offs_m[:, None] >= offs_n[None, :])
            p = tl.where(mask, p, 0.0)
        dp = tl.dot(do, vT).to(tl.float32)
        ds = p * (dp - Di[:, None])
        ds = ds.to(tl.float16)
        dq += tl.dot(ds, tl.trans(kT))
        curr_n += step_n
        kT_ptrs += step_n * stride_tok
        vT_ptrs += step_n * stride_tok
    return dq


@triton.jit
def attn_bwd(Q, K, V, sm_scale, DO, DQ, DK, DV, M, D,
             stride_z, stride_h, stride_tok, stride_d, H, N_CTX,
             BLOCK_M1: tl.constexpr, BLOCK_N1: tl.constexpr,
             BLOCK_M2: tl.constexpr, BLOCK_N2: tl.constexpr,
             BLK_SLICE_FACTOR: tl.constexpr, HEAD_DIM: tl.constexpr):
    LN2: tl.constexpr = 0.6931471824645996
    bhid = tl.program_id(2)
    off_chz = (bhid * N_CTX).to(tl.int64)
    adj = (stride_h * (bhid % H) + stride_z * (bhid // H)).to(tl.int64)
    pid = tl.program_id(0)
    Q += adj
    K += adj
    V += adj
    DO += adj
    DQ += adj
    DK += adj
    DV += adj
    M += off_chz
    D += off_chz
    offs_k = tl.arange(0, HEAD_DIM)

    # dK and dV for one block of keys: first the masked diagonal part, then the rest
    start_n = pid * BLOCK_N1
    start_m = start_n
    MASK_BLOCK_M1: tl.constexpr = BLOCK_M1 // BLK_SLICE_FACTOR
    offs_n = start_n + tl.arange(0, BLOCK_N1)
    dv = tl.zeros([BLOCK_N1, HEAD_DIM], dtype=tl.float32)
    dk = tl.zeros([BLOCK_N1, HEAD_DIM], dtype=tl.float32)
    k = tl.load(K + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d)
    v = tl.load(V + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d)
    num_steps = BLOCK_N1 // MASK_BLOCK_M1
    dk, dv = _attn_bwd_dkdv(dk, dv, Q, k, v, sm_scale, DO, M, D, stride_tok, stride_d, H, N_CTX,
                            MASK_BLOCK_M1, BLOCK_N1, HEAD_DIM, start_n, start_m, num_steps, MASK=True)
    start_m += num_steps * MASK_BLOCK_M1
    num_steps = (N_CTX - start_m) // BLOCK_M1
    dk, dv = _attn_bwd_dkdv(dk, dv, Q, k, v, sm_scale, DO, M, D, stride_tok, stride_d, H, N_CTX,
                            BLOCK_M1, BLOCK_N1, HEAD_DIM, start_n, start_m, num_steps, MASK=False)
    tl.store(DV + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d, dv)
    dk *= sm_scale
    tl.store(DK + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d, dk)

    # dQ for one block of queries
    start_m = pid * BLOCK_M2
    end_n = start_m + BLOCK_M2
    MASK_BLOCK_N2: tl.constexpr = BLOCK_N2 // BLK_SLICE_FACTOR
    offs_m = start_m + tl.arange(0, BLOCK_M2)
    q = tl.load(Q + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d)
    dq = tl.zeros([BLOCK_M2, HEAD_DIM], dtype=tl.float32)
    do = tl.load(DO + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d)
    m = tl.load(M + offs_m)
    m = m[:, None]
    num_steps = BLOCK_M2 // MASK_BLOCK_N2
    dq = _attn_bwd_dq(dq, q, K, V, do, m, D, stride_tok, stride_d, H, N_CTX,
                      BLOCK_M2, MASK_BLOCK_N2, HEAD_DIM, start_m, end_n - num_steps * MASK_BLOCK_N2,
                      num_steps, MASK=True)
    end_n -= num_steps * MASK_BLOCK_N2
    num_steps = end_n // BLOCK_N2
    dq = _attn_bwd_dq(dq, q, K, V, do, m, D, stride_tok, stride_d, H, N_CTX,
                      BLOCK_M2, BLOCK_N2, HEAD_DIM, start_m, end_n - num_steps * BLOCK_N2,
                      num_steps, MASK=False)
    dq *= LN2
    tl.store(DQ + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d, dq)


def _use_tma(*ts):
    """Hopper or newer, every tensor contiguous: the descriptor kernel."""
    import torch
    return all(t.is_cuda and t.is_contiguous() for t in ts) and torch.cuda.get_device_capability(ts[0].device)[0] >= 9


def attention_forward(q, k, v, causal, sm_scale, BLOCK_M=128, BLOCK_N=None, num_warps=None, num_stages=2,
                      tma=None, warp_specialize=None):
    """o, M for q, k, v of shape [Z, H, N_CTX, HEAD_DIM] (torch tensors on the
    GPU, or on the CPU for the CPU backend); M is the row log-sum-exp in
    base 2, what attention_backward needs. tma (default: Hopper and
    contiguous inputs) takes attn_fwd_tma, warp-specialized unless causal
    (warp_specialize overrides); else attn_fwd. N_CTX must be a multiple of
    BLOCK_M and BLOCK_N."""
    import torch
    Z, H, N_CTX, D = q.shape
    o = torch.empty_like(q)
    M = torch.empty((Z, H, N_CTX), device=q.device, dtype=torch.float32)
    if tma is None:
        tma = _use_tma(q, k, v)
    grid = (triton.cdiv(N_CTX, BLOCK_M), Z * H, 1)
    if tma:
        ws = (not causal) if warp_specialize is None else warp_specialize
        if BLOCK_N is None:
            BLOCK_N = D if ws else 64
        if num_warps is None:
            # warp-specialized: 4 warps and 128-row tiles run as two
            # consumer warpgroups next to the producer
            num_warps = 4 if ws or D <= 64 else 8
        attn_fwd_tma[grid](q, k, v, sm_scale, M, o, Z, H, N_CTX=N_CTX, HEAD_DIM=D, BLOCK_M=BLOCK_M,
                           BLOCK_N=BLOCK_N, STAGE=3 if causal else 1, WARP_SPECIALIZE=ws,
                           num_warps=num_warps, num_stages=num_stages)
        return o, M
    if BLOCK_N is None:
        BLOCK_N = 64
    if num_warps is None:
        num_warps = 4 if D <= 64 else 8
    attn_fwd[grid](q, k, v, sm_scale, M, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(), Z, H,
                   N_CTX=N_CTX, HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, STAGE=3 if causal else 1,
                   num_warps=num_warps, num_stages=num_stages)
    return o, M


def attention_backward(q, k, v, o, do, M, sm_scale, num_warps=4, num_stages=5):
    """dq, dk, dv of causal attention (q, k, v, o, do contiguous, [Z, H, N_CTX,
    HEAD_DIM]; M from attention_forward with causal=True). N_CTX must be a
    multiple of 128."""
    import torch
    Z, H, N_CTX, D = q.shape
    RCP_LN2 = 1.4426950408889634
    arg_k = k * (sm_scale * RCP_LN2)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    delta = torch.empty_like(M)
    PRE_BLOCK, BLOCK_N1 = 128, 128
    attn_bwd_preprocess[(N_CTX // PRE_BLOCK, Z * H)](o, do, delta, Z, H, N_CTX, BLOCK_M=PRE_BLOCK, HEAD_DIM=D)
    attn_bwd[(N_CTX // BLOCK_N1, 1, Z * H)](q, arg_k, v, sm_scale, do, dq, dk, dv, M, delta, q.stride(0),
                                           q.stride(1), q.stride(2), q.stride(3), H, N_CTX, BLOCK_M1=32,
                                           BLOCK_N1=BLOCK_N1, BLOCK_M2=128, BLOCK_N2=32, BLK_SLICE_FACTOR=2,
                                           HEAD_DIM=D, num_warps=num_warps, num_stages=num_stages)
    return dq, dk, dv
