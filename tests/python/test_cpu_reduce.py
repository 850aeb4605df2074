"""CPU end-to-end: reductions (sum/max/min/argmax/argmin/xor_sum/reduce_or,
keep_dims, generic tl.reduce with tuples) and scans (associative_scan,
cumsum, cumprod, reverse)."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401
from cpu_util import TL

pytestmark = requires_cpu

M, K = 8, 16


@triton.jit
def reduce_kernel(x_ptr, sum_p, max_p, min_p, amax_p, amin_p, AXIS: tl.constexpr,
                  M: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rk = tl.arange(0, K)[None, :]
    x = tl.load(x_ptr + rm * K + rk)
    if AXIS == 0:
        o = tl.arange(0, K)
    else:
        o = tl.arange(0, M)
    tl.store(sum_p + o, tl.sum(x, axis=AXIS))
    tl.store(max_p + o, tl.max(x, axis=AXIS))
    tl.store(min_p + o, tl.min(x, AXIS))
    tl.store(amax_p + o, tl.argmax(x, axis=AXIS))
    tl.store(amin_p + o, tl.argmin(x, axis=AXIS))


@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "int64", "float16", "float32",
                                "float64"])
@pytest.mark.parametrize("axis", [0, 1])
def test_reductions_each_axis(dt, axis):
    rng = np.random.default_rng(axis)
    if dt.startswith(("int", "uint")):
        x = rng.integers(0 if dt[0] == "u" else -50, 50, (M, K)).astype(dt)
    else:
        x = rng.permutation(M * K).reshape(M, K).astype(dt) / 8   # distinct values
    n = K if axis == 0 else M
    sum_dt = {"int8": np.int32, "uint8": np.uint32, "float16": np.float32}.get(dt, dt)
    s = np.zeros(n, sum_dt)
    mx, mn = np.zeros(n, dt), np.zeros(n, dt)
    am, an = np.zeros(n, np.int32), np.zeros(n, np.int32)
    reduce_kernel[(1,)](x, s, mx, mn, am, an, axis, M, K)
    if dt in ("float16", "float32", "float64"):
        np.testing.assert_allclose(s, x.astype(np.float64).sum(axis), rtol=1e-3)
    else:
        np.testing.assert_array_equal(s, x.astype(np.int64).sum(axis))
    np.testing.assert_array_equal(mx, x.max(axis))
    np.testing.assert_array_equal(mn, x.min(axis))
    # argmax/argmin: the first index among ties (numpy's convention as well)
    np.testing.assert_array_equal(am, x.argmax(axis))
    np.testing.assert_array_equal(an, x.argmin(axis))


@triton.jit
def sum_dtype_kernel(x_ptr, o_ptr, DT: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    s = tl.sum(x, axis=0)
    tl.static_assert(s.dtype == DT)
    tl.store(o_ptr, s)


@pytest.mark.parametrize("xt,st", [("int8", "int32"), ("uint16", "uint32"), ("int32", "int32"),
                                   ("int64", "int64"), ("float32", "float32"),
                                   ("uint32", "uint32")])
def test_sum_integer_promotion(xt, st):
    x = np.full(64, 100, xt)
    o = np.zeros(1, st)
    sum_dtype_kernel[(1,)](x, o, TL[st], 64)
    assert o[0] == 6400


@triton.jit
def full_reduce_kernel(x_ptr, o_ptr, M: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rk = tl.arange(0, K)[None, :]
    x = tl.load(x_ptr + rm * K + rk)
    tl.store(o_ptr, tl.sum(x))               # axis=None: every element
    tl.store(o_ptr + 1, tl.max(tl.max(x, 1), 0))
    tl.store(o_ptr + 2, tl.xor_sum(tl.xor_sum(x, 0), 0))
    tl.store(o_ptr + 3, tl.reduce_or(tl.reduce_or(x & 0x40, 1), 0))
    tl.store(o_ptr + 4, tl.argmax(tl.ravel(x), 0))


def test_full_xor_or_reductions():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 1 << 20, (M, K)).astype(np.int32)
    x.flat[77] = 1 << 21
    o = np.zeros(5, np.int32)
    full_reduce_kernel[(1,)](x, o, M, K)
    np.testing.assert_array_equal(o, [x.sum(), x.max(), np.bitwise_xor.reduce(x.ravel()),
                                      np.bitwise_or.reduce((x & 0x40).ravel()), 77])


@triton.jit
def keep_dims_kernel(x_ptr, o_ptr, M: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rk = tl.arange(0, K)[None, :]
    x = tl.load(x_ptr + rm * K + rk)
    m = tl.max(x, axis=1, keep_dims=True)       # (M, 1), broadcasts back
    s = tl.sum(x - m, axis=0, keep_dims=True)   # (1, K)
    tl.static_assert(len(m.shape) == 2)
    tl.store(o_ptr + rm * K + rk, (x - m) * 10 + s)


def test_keep_dims():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((M, K)).astype(np.float32)
    o = np.zeros_like(x)
    keep_dims_kernel[(1,)](x, o, M, K)
    d = x - x.max(1, keepdims=True)
    np.testing.assert_allclose(o, d * 10 + d.sum(0, keepdims=True), rtol=1e-5, atol=1e-5)


@triton.jit
def max_with_indices_kernel(x_ptr, v_ptr, i_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    v, i = tl.max(x, axis=0, return_indices=True)
    tl.store(v_ptr, v)
    tl.store(i_ptr, i)
    v2, i2 = tl.min(x, 0, return_indices=True)
    tl.store(v_ptr + 1, v2)
    tl.store(i_ptr + 1, i2)


def test_max_min_return_indices_ties():
    x = np.array([3, 9, 1, 9, 1, 0, 9, 0] * 4, np.float32)
    x[5] = x[7] = -4
    v, i = np.zeros(2, np.float32), np.zeros(2, np.int32)
    max_with_indices_kernel[(1,)](x, v, i, 32)
    np.testing.assert_array_equal(v, [9, -4])
    np.testing.assert_array_equal(i, [1, 5])   # ties break to the lowest index


@triton.jit
def _argmax_combine(v1, i1, v2, i2):
    take2 = (v2 > v1) | ((v2 == v1) & (i2 < i1))
    return tl.where(take2, v2, v1), tl.where(take2, i2, i1)


@triton.jit
def _mul_combine(a, b):
    return a * b


@triton.jit
def generic_reduce_kernel(x_ptr, v_ptr, i_ptr, p_ptr, M: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rk = tl.arange(0, K)[None, :]
    x = tl.load(x_ptr + rm * K + rk)
    idx = tl.broadcast_to(rk, (M, K))
    v, i = tl.reduce((x, idx), 1, _argmax_combine)
    tl.store(v_ptr + tl.arange(0, M), v)
    tl.store(i_ptr + tl.arange(0, M), i)
    p = tl.reduce(x, 0, _mul_combine, keep_dims=True)
    tl.store(p_ptr + rk, p)


def test_generic_reduce_tuple_and_keep_dims():
    rng = np.random.default_rng(5)
    x = rng.uniform(0.5, 1.5, (M, K)).astype(np.float32)
    x[2, 3] = x[2, 9] = 7.0
    v, i = np.zeros(M, np.float32), np.zeros(M, np.int32)
    p = np.zeros(K, np.float32)
    generic_reduce_kernel[(1,)](x, v, i, p, M, K)
    np.testing.assert_array_equal(v, x.max(1))
    np.testing.assert_array_equal(i, x.argmax(1))
    np.testing.assert_allclose(p, x.prod(0), rtol=1e-5)


@triton.jit
def _add_combine(a, b):
    return a + b


@triton.jit
def scan_kernel(x_ptr, cs_p, cp_p, rs_p, gs_p, AXIS: tl.constexpr, M: tl.constexpr,
                K: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rk = tl.arange(0, K)[None, :]
    offs = rm * K + rk
    x = tl.load(x_ptr + offs)
    tl.store(cs_p + offs, tl.cumsum(x, axis=AXIS))
    tl.store(cp_p + offs, tl.cumprod(x, AXIS))
    tl.store(rs_p + offs, tl.cumsum(x, axis=AXIS, reverse=True))
    tl.store(gs_p + offs, tl.associative_scan(x, AXIS, _add_combine, reverse=False))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dt", ["int32", "int64", "float32"])
def test_scans(axis, dt):
    rng = np.random.default_rng(6)
    x = rng.integers(1, 4, (M, K)).astype(dt)
    outs = [np.zeros_like(x) for _ in range(4)]
    scan_kernel[(1,)](x, *outs, axis, M, K)
    rev = np.flip(np.cumsum(np.flip(x, axis), axis), axis)
    for got, ref in zip(outs, [np.cumsum(x, axis), np.cumprod(x, axis), rev,
                               np.cumsum(x, axis)]):
        np.testing.assert_allclose(got, ref, rtol=1e-6)


@triton.jit
def _pair_scan(a1, b1, a2, b2):
    # composition of affine maps y = a*y + b (a linear recurrence)
    return a1 * a2, b1 * a2 + b2


@triton.jit
def tuple_scan_kernel(a_ptr, b_ptr, y_ptr, N: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    _, y = tl.associative_scan((a, b), 0, _pair_scan, reverse=REVERSE)
    tl.store(y_ptr + offs, y)


@pytest.mark.parametrize("reverse", [False, True])
def test_tuple_scan_linear_recurrence(reverse):
    rng = np.random.default_rng(7)
    a = rng.uniform(0.5, 1.0, 32)
    b = rng.uniform(-1, 1, 32)
    y = np.zeros(32)
    tuple_scan_kernel[(1,)](a, b, y, 32, reverse)
    ref, acc = np.zeros(32), 0.0
    order = range(31, -1, -1) if reverse else range(32)
    for i in order:
        acc = a[i] * acc + b[i]
        ref[i] = acc
    np.testing.assert_allclose(y, ref, rtol=1e-12)


@triton.jit
def row_reduce_many_programs(x_ptr, o_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=float("-inf"))
    tl.store(o_ptr + row, tl.max(x, 0))


def test_masked_row_max_over_programs():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((37, 50)).astype(np.float32) - 10
    o = np.zeros(37, np.float32)
    row_reduce_many_programs[(37,)](x, o, 50, BLOCK=64)
    np.testing.assert_array_equal(o, x.max(1))
