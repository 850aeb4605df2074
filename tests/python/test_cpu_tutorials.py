"""CPU end-to-end: tutorial-style kernels (vector add, fused softmax,
grouped matmul with leaky_relu, dropout, layernorm forward/backward with a
lock, fused attention forward) against numpy."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu


@triton.jit
def vadd_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@pytest.mark.parametrize("n", [1, 1000, 4099])
def test_vector_add(n):
    rng = np.random.default_rng(n)
    x, y = rng.random(n, np.float32), rng.random(n, np.float32)
    out = np.zeros_like(x)
    vadd_kernel[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, y, out, n, BLOCK=256)
    np.testing.assert_array_equal(out, x + y)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
                   BLOCK: tl.constexpr):
    start = tl.program_id(0)
    step = tl.num_programs(0)
    for row in tl.range(start, n_rows, step):
        cols = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
        z = x - tl.max(x, axis=0)
        num = tl.exp(z)
        tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


@pytest.mark.parametrize("rows,cols", [(17, 33), (64, 128)])
def test_fused_softmax(rows, cols):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, cols)).astype(np.float32) * 3
    out = np.zeros_like(x)
    softmax_kernel[(4,)](out, x, x.strides[0] // 4, out.strides[0] // 4, rows, cols,
                         BLOCK=triton.next_power_of_2(cols))
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                  ACT: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_in_group = GROUP_M * num_pid_n
    group = pid // num_in_group
    first_m = group * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % num_in_group) % group_m)
    pid_n = (pid % num_in_group) // group_m
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    if ACT == "leaky_relu":
        acc = leaky_relu(acc)
    c = acc.to(tl.float16)
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + cm[:, None] * scm + cn[None, :] * scn, c,
             mask=(cm[:, None] < M) & (cn[None, :] < N))


@pytest.mark.parametrize("M,N,K", [(64, 64, 64), (50, 70, 40)])
@pytest.mark.parametrize("act", ["", "leaky_relu"])
def test_grouped_matmul(M, N, K, act):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    BM = BN = 16
    BK = 16
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    matmul_kernel[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, BM=BM, BN=BN, BK=BK, GROUP_M=2,
                        ACT=act)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    if act:
        ref = np.where(ref >= 0, ref, 0.01 * ref)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=1e-2, atol=2e-2)


@triton.jit
def dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


def test_seeded_dropout():
    n = 2000
    x = np.random.default_rng(2).uniform(1, 2, n).astype(np.float32)
    o1, o2, o3 = (np.zeros(n, np.float32) for _ in range(3))
    grid = (triton.cdiv(n, 64),)
    dropout_kernel[grid](x, o1, n, 0.5, 123, BLOCK=64)
    dropout_kernel[grid](x, o2, n, 0.5, 123, BLOCK=64)
    dropout_kernel[grid](x, o3, n, 0.5, 124, BLOCK=64)
    np.testing.assert_array_equal(o1, o2)                 # same seed: same mask
    assert (o1 != o3).any()
    kept = o1 != 0
    assert 0.4 < kept.mean() < 0.6
    np.testing.assert_allclose(o1[kept], x[kept] * 2, rtol=1e-6)


@triton.jit
def ln_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, N, eps,
                  BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_ptr += row * stride
    y_ptr += row * stride
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + cols, xc * rstd * w + b, mask=mask)


@triton.jit
def ln_bwd_dx_kernel(dx_ptr, dy_ptr, dw_part, db_part, x_ptr, w_ptr, mean_ptr, rstd_ptr,
                     lock_ptr, stride, N, GROUP: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = tl.where(mask, w * dy, 0.0)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(dx_ptr + row * stride + cols, dx, mask=mask)
    # accumulate this row's dw/db into one of GROUP partial buffers under a lock
    gid = row % GROUP
    lock = lock_ptr + gid
    count = lock_ptr + GROUP + gid
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    seen = tl.load(count)
    dw = dy * xhat
    db = dy
    if seen == 0:
        tl.atomic_xchg(count, 1)
    else:
        dw += tl.load(dw_part + gid * N + cols, mask=mask)
        db += tl.load(db_part + gid * N + cols, mask=mask)
    tl.store(dw_part + gid * N + cols, dw, mask=mask)
    tl.store(db_part + gid * N + cols, db, mask=mask)
    tl.atomic_xchg(lock, 0)


@triton.jit
def ln_bwd_dwdb_kernel(dw_part, db_part, dw_ptr, db_ptr, M, N, BM: tl.constexpr,
                       BN: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BN + tl.arange(0, BN)
    dw = tl.zeros((BM, BN), tl.float32)
    db = tl.zeros((BM, BN), tl.float32)
    for i in range(0, M, BM):
        rows = i + tl.arange(0, BM)
        m = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(dw_part + offs, mask=m, other=0.0)
        db += tl.load(db_part + offs, mask=m, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0), mask=cols < N)
    tl.store(db_ptr + cols, tl.sum(db, axis=0), mask=cols < N)


def test_layernorm_fwd_bwd():
    M, N, GROUP = 24, 50, 4
    BLOCK = triton.next_power_of_2(N)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((M, N)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    dy = rng.standard_normal((M, N)).astype(np.float32)
    eps = 1e-5
    y = np.zeros_like(x)
    mean, rstd = np.zeros(M, np.float32), np.zeros(M, np.float32)
    ln_fwd_kernel[(M,)](x, y, w, b, mean, rstd, N, N, eps, BLOCK=BLOCK)
    mu = x.mean(1, keepdims=True)
    sd = 1 / np.sqrt(x.var(1, keepdims=True) + eps)
    xhat = (x - mu) * sd
    np.testing.assert_allclose(y, xhat * w + b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mean, mu[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, sd[:, 0], rtol=1e-5)

    dx = np.zeros_like(x)
    dw_part, db_part = np.zeros((GROUP, N), np.float32), np.zeros((GROUP, N), np.float32)
    locks = np.zeros(2 * GROUP, np.int32)
    ln_bwd_dx_kernel[(M,)](dx, dy, dw_part, db_part, x, w, mean, rstd, locks, N, N,
                           GROUP=GROUP, BLOCK=BLOCK)
    dw, db = np.zeros(N, np.float32), np.zeros(N, np.float32)
    ln_bwd_dwdb_kernel[(triton.cdiv(N, 32),)](dw_part, db_part, dw, db, GROUP, N, BM=4, BN=32)
    wdy = w * dy
    c1 = (xhat * wdy).mean(1, keepdims=True)
    c2 = wdy.mean(1, keepdims=True)
    np.testing.assert_allclose(dx, (wdy - (xhat * c1 + c2)) * sd, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dw, (dy * xhat).sum(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(db, dy.sum(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(locks[:GROUP], 0)


@triton.jit
def attn_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, N_CTX, D: tl.constexpr,
                    BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    base = bh * N_CTX * D
    rm = start_m * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + base + rm[:, None] * D + rd[None, :])
    m_i = tl.zeros((BM,), tl.float32) - float("inf")
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = (start_m + 1) * BM if CAUSAL else N_CTX
    for start_n in range(0, hi, BN):
        rn = start_n + tl.arange(0, BN)
        k = tl.load(k_ptr + base + rn[None, :] * D + rd[:, None])      # (D, BN)
        qk = tl.dot(q, k) * qk_scale
        if CAUSAL:
            qk = tl.where(rm[:, None] >= rn[None, :], qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + base + rn[:, None] * D + rd[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(o_ptr + base + rm[:, None] * D + rd[None, :], acc.to(o_ptr.dtype.element_ty))


@pytest.mark.parametrize("causal", [False, True])
def test_fused_attention_fwd(causal):
    B, H, N_CTX, D = 1, 2, 64, 16
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((B, H, N_CTX, D)).astype(np.float16) for _ in range(3))
    o = np.zeros_like(q)
    scale = 0.5
    attn_fwd_kernel[(N_CTX // 16, B * H)](q, k, v, o, scale, N_CTX, D=D, BM=16, BN=16,
                                          CAUSAL=causal)
    s = q.astype(np.float32) @ k.astype(np.float32).transpose(0, 1, 3, 2) * scale
    if causal:
        s = np.where(np.tril(np.ones((N_CTX, N_CTX), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(o.astype(np.float32), p @ v.astype(np.float32),
                               rtol=2e-2, atol=2e-2)
