"""CPU: loads through row-contiguous 2-D pointer blocks (one vector load per
row): strided rows, odd strides, K tails (masks partly on), wrapped column
indices (`% N`, checked at run time), non-contiguous views, `other`."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
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
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + cm[:, None] * scm + cn[None, :] * scn, acc,
             mask=(cm[:, None] < M) & (cn[None, :] < N))


def run_mm(A, B, BM=32, BN=32, BK=16):
    M, K = A.shape
    N = B.shape[1]
    C = np.zeros((M, N), np.float32)
    sa = [s // 4 for s in A.strides]
    sb = [s // 4 for s in B.strides]
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    # numpy views: pass the base array with element strides
    mm_kernel[grid](A, B, C, M, N, K, sa[0], sa[1], sb[0], sb[1], N, 1, BM=BM, BN=BN, BK=BK)
    return C


@pytest.mark.parametrize("M,N,K", [(64, 64, 64), (37, 45, 29), (50, 33, 17), (96, 64, 70)])
def test_matmul_tails(M, N, K):
    rng = np.random.default_rng(M * 1000 + N + K)
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    C = run_mm(A, B)
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)


def test_matmul_odd_row_strides():
    # rows of A and B live in wider arrays (odd row strides)
    rng = np.random.default_rng(1)
    Ab = rng.standard_normal((48, 53), dtype=np.float32)
    Bb = rng.standard_normal((40, 67), dtype=np.float32)
    A, B = Ab[:, 3:40], Bb[:37, 5:50]
    M, K, N = 48, 37, 45
    Cm = np.zeros((M, N), np.float32)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
    mm_kernel[grid](Ab[:, 3:], Bb[:, 5:], Cm, M, N, K, 53, 1, 67, 1, N, 1, BM=16, BN=16, BK=16)
    np.testing.assert_allclose(Cm, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)


def test_matmul_column_strided_operands():
    # non-unit column strides: not row-contiguous, the general path must run
    rng = np.random.default_rng(2)
    A = rng.standard_normal((40, 30), dtype=np.float32)
    B = rng.standard_normal((30, 24), dtype=np.float32)
    At = np.ascontiguousarray(A.T)  # A[m, k] at At[k, m]: sam = 1, sak = 40
    C = np.zeros((40, 24), np.float32)
    mm_kernel[(3, 2)](At, B, C, 40, 24, 30, 1, 40, 24, 1, 24, 1, BM=16, BN=16, BK=16)
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)


@triton.jit
def rows_kernel(x_ptr, y_ptr, R, C, sx, OFF, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.arange(0, BR)
    c = tl.arange(0, BC)
    p = x_ptr + r[:, None] * sx + (c[None, :] + OFF)
    m = (r[:, None] < R) & (c[None, :] < C)
    x = tl.load(p, mask=m, other=-7.0)
    tl.store(y_ptr + r[:, None] * BC + c[None, :], x)


@pytest.mark.parametrize("R,C,sx,off", [(8, 16, 16, 0), (5, 11, 13, 2), (8, 16, 17, 1), (3, 7, 7, 0)])
def test_rows_partial_masks(R, C, sx, off):
    BR, BC = 8, 16
    x = np.arange(R * sx + off + BC, dtype=np.float32)
    y = np.zeros((BR, BC), np.float32)
    rows_kernel[(1,)](x, y, R, C, sx, off, BR=BR, BC=BC)
    want = np.full((BR, BC), -7.0, np.float32)
    for i in range(R):
        want[i, :C] = x[i * sx + off:i * sx + off + C]
    np.testing.assert_array_equal(y, want)


@triton.jit
def wrap_kernel(x_ptr, y_ptr, N, S, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.arange(0, BR)
    c = (S + tl.arange(0, BC)) % N  # wraps when S + BC > N: not contiguous
    x = tl.load(x_ptr + r[:, None] * N + c[None, :])
    tl.store(y_ptr + r[:, None] * BC + tl.arange(0, BC)[None, :], x)


@pytest.mark.parametrize("N,S", [(64, 0), (64, 16), (40, 30), (20, 0)])
def test_wrapped_columns(N, S):
    BR, BC = 4, 32
    x = np.arange(BR * N, dtype=np.float32).reshape(BR, N)
    y = np.zeros((BR, BC), np.float32)
    wrap_kernel[(1,)](x, y, N, S, BR=BR, BC=BC)
    cols = (S + np.arange(BC)) % N
    np.testing.assert_array_equal(y, x[:, cols])
