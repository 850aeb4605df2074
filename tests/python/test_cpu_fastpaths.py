"""CPU end-to-end: the fast paths of the CPU backend against numpy.
Reductions along a contiguous axis of 32 or more elements (partial results
in lanes), elementwise chains computed in their user's loop (also when a
loop carries several blocks that swap), masked accesses whose mask is all on
or partly on, and the inline exp / exp2."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu


@triton.jit
def rows_kernel(x_ptr, sum_p, max_p, amax_p, amin_p, M: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rk = tl.arange(0, K)[None, :]
    x = tl.load(x_ptr + rm * K + rk)
    o = tl.arange(0, M)
    tl.store(sum_p + o, tl.sum(x * 2, axis=1))
    tl.store(max_p + o, tl.max(x, axis=1))
    tl.store(amax_p + o, tl.argmax(x, axis=1))
    tl.store(amin_p + o, tl.argmin(x, axis=1))


@pytest.mark.parametrize("dt", ["int8", "int32", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("K", [32, 64, 1024])
def test_row_reductions_in_lanes(dt, K):
    M = 4
    rng = np.random.default_rng(K)
    # few distinct values: many ties for argmax / argmin (first index wins)
    x = rng.integers(-3, 4, (M, K)).astype(dt)
    s = np.zeros(M, {"int8": np.int32, "float16": np.float32}.get(dt, dt))
    mx = np.zeros(M, dt)
    am, an = np.zeros(M, np.int32), np.zeros(M, np.int32)
    rows_kernel[(1,)](x, s, mx, am, an, M, K)
    np.testing.assert_array_equal(s, (x.astype(np.int64) * 2).sum(1).astype(s.dtype))
    np.testing.assert_array_equal(mx, x.max(1))
    np.testing.assert_array_equal(am, x.argmax(1))
    np.testing.assert_array_equal(an, x.argmin(1))


@triton.jit
def swap_kernel(a_ptr, b_ptr, n, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    for i in range(n):
        a, b = b + 1.0, a * 2.0
    tl.store(a_ptr + offs, a)
    tl.store(b_ptr + offs, b)


def test_loop_swaps_lazy_blocks():
    a0, b0 = np.arange(64, dtype=np.float32), -np.arange(64, dtype=np.float32)
    a, b = a0.copy(), b0.copy()
    swap_kernel[(1,)](a, b, 5, 64)
    ra, rb = a0.copy(), b0.copy()
    for _ in range(5):
        ra, rb = rb + 1, ra * 2
    np.testing.assert_array_equal(a, ra)
    np.testing.assert_array_equal(b, rb)


@triton.jit
def nested_use_kernel(x_ptr, o_ptr, n, N: tl.constexpr):
    offs = tl.arange(0, N)
    y = tl.load(x_ptr + offs) * 3.0 + 1.0   # one use, inside the loop
    acc = tl.zeros((N,), tl.float32)
    for i in range(n):
        acc += y
    tl.store(o_ptr + offs, acc)


def test_chain_used_in_a_loop():
    x = np.arange(32, dtype=np.float32)
    o = np.zeros(32, np.float32)
    nested_use_kernel[(1,)](x, o, 4, 32)
    np.testing.assert_array_equal(o, 4 * (x * 3 + 1))


@triton.jit
def shift_kernel(p, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n - 1
    x = tl.load(p + offs, mask=m, other=-1.0)
    tl.store(p + offs + 1, x + 0.5, mask=m)


@pytest.mark.parametrize("n", [64, 65, 40])
def test_store_overlapping_its_load(n):
    # the whole block is loaded before anything is stored
    x = np.arange(n, dtype=np.float32)
    want = x.copy()
    k = min(n - 1, 64)
    want[1:k + 1] = x[:k] + 0.5
    shift_kernel[(1,)](x, n, 64)
    np.testing.assert_array_equal(x, want)


@triton.jit
def masked_copy_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = (offs < n) & (offs % 7 != 3)
    x = tl.load(x_ptr + offs, mask=m, other=-2.0)
    tl.store(o_ptr + offs, x * 2.0, mask=offs < n)


@pytest.mark.parametrize("n", [256, 300, 7])
def test_masked_all_on_and_partly_on(n):
    x = np.arange(n, dtype=np.float32)
    o = np.zeros(n + 5, np.float32)
    masked_copy_kernel[(triton.cdiv(n, 128),)](x, o, n, 128)
    i = np.arange(n)
    want = np.where(i % 7 != 3, x, -2.0) * 2
    np.testing.assert_array_equal(o[:n], want)
    assert not o[n:].any()


@triton.jit
def exp_kernel(x_ptr, e_ptr, e2_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(e_ptr + offs, tl.exp(x), mask=m)
    tl.store(e2_ptr + offs, tl.exp2(x), mask=m)


def test_exp_accuracy():
    x = np.concatenate([np.linspace(-160, 130, 200001, dtype=np.float32),
                        np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 88.72, 88.73, -87.3,
                                  -103.9, 128.0, 127.9, -149.0], np.float32)])
    e, e2 = np.empty_like(x), np.empty_like(x)
    exp_kernel[(triton.cdiv(x.size, 1024),)](x, e, e2, x.size, 1024)
    for got, f in ((e, np.exp), (e2, np.exp2)):
        with np.errstate(all="ignore"):
            want = f(x.astype(np.float64)).astype(np.float32)
        fin = np.isfinite(want) & (want != 0)
        ulp = np.abs(got[fin].astype(np.float64) - want[fin]) / np.spacing(want[fin])
        assert ulp.max() <= 2
        np.testing.assert_array_equal(got[~fin], want[~fin])


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, d_ptr, M: tl.constexpr, K: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rk = tl.arange(0, K)
    rn = tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + rm * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn)
    c = tl.load(c_ptr + rm * N + rn)
    tl.store(d_ptr + rm * N + rn, tl.dot(a, b, acc=c))


@pytest.mark.parametrize("M,K,N", [(16, 16, 16), (16, 32, 64), (32, 16, 128)])
def test_dot_f32_register_tiles(M, K, N):
    rng = np.random.default_rng(M * N)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c = rng.standard_normal((M, N), dtype=np.float32)
    d = np.zeros((M, N), np.float32)
    dot_kernel[(1,)](a, b, c, d, M, K, N)
    np.testing.assert_allclose(d, a.astype(np.float64) @ b + c, rtol=1e-5, atol=1e-5)
