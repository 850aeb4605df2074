"""Kernels measured side by side. This file has no imports on purpose:
bench/run_gpu.py loads it once with `triton`/`tl` bound to ctriton and once
bound to Triton, so both compile the very same source text."""


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x + y, mask=m)


@triton.jit
def softmax(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
            BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols,
                other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * out_stride + cols, e / tl.sum(e, axis=0),
             mask=cols < n_cols)


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
           stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
           BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % size_m)
    pid_n = (pid % group) // size_m
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn, c,
             mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def matmul_i8(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
              stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # tutorial 03's kernel on int8 operands: an int32 accumulator
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % size_m)
    pid_n = (pid % group) // size_m
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BLOCK_K, other=0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BLOCK_K, other=0)
        acc = tl.dot(a, b, acc, out_dtype=tl.int32)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn, acc,
             mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def matmul_ieee(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """f32 C = A @ B with input_precision="ieee" (no tensor cores: the
    FMA path), row-major, masked K loads."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :], acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def mm_operand_ops(A, B, C, M, N, K, stride_am, stride_bk, stride_cm, scale,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, FORM: tl.constexpr):
    """C = A @ B where the dot reads its operands through other ops: FORM 0
    an int8 B dequantized (times scale) to fp16, 1 fp32 A cast to fp16, 3
    the same with masked loads whose `other` is not zero (1.0 in A, 2.0 in
    B), 4 fp32 with input_precision tf32x3, 5 an int8 A cast to fp16, 6 an
    fp16 A times scale (a 16-bit A computed in registers).
    Row-major, masked K tail, fp16 C."""
    rm = (tl.program_id(0) * BM + tl.arange(0, BM)) % M
    rn = (tl.program_id(1) * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = B + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        ka = rk[None, :] < K - k * BK
        kb = rk[:, None] < K - k * BK
        if FORM == 0:
            a = tl.load(a_ptrs, mask=ka, other=0.0)
            b = (tl.load(b_ptrs, mask=kb, other=0).to(tl.float32) * scale).to(tl.float16)
            acc = tl.dot(a, b, acc)
        elif FORM == 1:
            a = tl.load(a_ptrs, mask=ka, other=0.0).to(tl.float16)
            b = tl.load(b_ptrs, mask=kb, other=0.0)
            acc = tl.dot(a, b, acc)
        elif FORM == 5:
            a = tl.load(a_ptrs, mask=ka, other=0).to(tl.float16)
            b = tl.load(b_ptrs, mask=kb, other=0.0)
            acc = tl.dot(a, b, acc)
        elif FORM == 6:
            a = (tl.load(a_ptrs, mask=ka, other=0.0) * scale).to(tl.float16)
            b = tl.load(b_ptrs, mask=kb, other=0.0)
            acc = tl.dot(a, b, acc)
        elif FORM == 3:
            a = tl.load(a_ptrs, mask=ka, other=1.0).to(tl.float16)
            b = tl.load(b_ptrs, mask=kb, other=2.0)
            acc = tl.dot(a, b, acc)
        else:
            a = tl.load(a_ptrs, mask=ka, other=0.0)
            b = tl.load(b_ptrs, mask=kb, other=0.0)
            acc = tl.dot(a, b, acc, input_precision="tf32x3")
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    cm = tl.program_id(0) * BM + tl.arange(0, BM)
    cn = tl.program_id(1) * BN + tl.arange(0, BN)
    tl.store(C + cm[:, None] * stride_cm + cn[None, :], acc.to(tl.float16), mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def attn_trans(Q, K, V, O, sm_scale, N_CTX, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    """Attention forward (not causal) over [Z*H][N_CTX][HEAD_DIM] heads, in
    the form many hand-written kernels take: K loaded row-major and
    transposed with tl.trans, an online softmax in exp2."""
    off = tl.program_id(1).to(tl.int64) * N_CTX * HEAD_DIM
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + off + rm[:, None] * HEAD_DIM + rd[None, :])
    m_i = tl.zeros((BLOCK_M,), tl.float32) - float("inf")
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start in range(0, N_CTX, BLOCK_N):
        k = tl.load(K + off + (start + rn)[:, None] * HEAD_DIM + rd[None, :])
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + off + (start + rn)[:, None] * HEAD_DIM + rd[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_ij
    tl.store(O + off + rm[:, None] * HEAD_DIM + rd[None, :], (acc / l_i[:, None]).to(O.dtype.element_ty))


@triton.jit
def mm_mul_sum(A, B, C, M, N, K, stride_am, stride_bk, stride_cm,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # a matmul written as a broadcast product summed along K (upstream
    # test_dot_mulbroadcasted's form); both compilers rewrite it into tl.dot
    # with input precision ieee
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * stride_am + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * stride_bk + rn[None, :])
        acc += tl.sum(a[:, :, None] * b[None, :, :], axis=1)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :], acc.to(C.dtype.element_ty))


@triton.jit
def layernorm(X, Y, W, B, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(W + cols, mask=mask)
    b = tl.load(B + cols, mask=mask)
    y = xc * rstd * w + b
    tl.store(Y + row * stride + cols, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def noop(x_ptr, n, BLOCK: tl.constexpr):
    pass
