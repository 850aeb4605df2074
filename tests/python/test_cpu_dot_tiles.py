"""CPU: f32 dot register tiles (8 rows by 16 or 32 columns), and the dot in
a `for` accumulating in the carried buffer (also the cases where it must
not: the accumulator read again, swapped, or used in a nested loop)."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, d_ptr, M: tl.constexpr, K: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rk = tl.arange(0, K)
    rn = tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + rm * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn)
    c = tl.load(c_ptr + rm * N + rn)
    tl.store(d_ptr + rm * N + rn, tl.dot(a, b, acc=c))


# 8-row tiles (several per block), 16 or 32 columns per tile; fewer rows
# than 8 only come from the IR (tests/backend/cpu_test.c)
@pytest.mark.parametrize("M,K,N", [(16, 16, 16), (64, 32, 64), (32, 64, 16), (128, 16, 32)])
def test_dot_tile_rows(M, K, N):
    rng = np.random.default_rng(M * 100 + K * 10 + N)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c = rng.standard_normal((M, N), dtype=np.float32)
    d = np.zeros((M, N), np.float32)
    dot_kernel[(1,)](a, b, c, d, M, K, N)
    np.testing.assert_allclose(d, a.astype(np.float64) @ b + c, rtol=1e-5, atol=1e-5)


# The dot in a `for` accumulates in the carried buffer itself when the
# accumulator has no other use; these variants must not (or must stay correct).
@triton.jit
def loop_dot_kernel(a_ptr, b_ptr, c_ptr, d_ptr, M: tl.constexpr, K: tl.constexpr, N: tl.constexpr,
                    STEPS: tl.constexpr, MODE: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rk = tl.arange(0, K)
    rn = tl.arange(0, N)[None, :]
    a_ptrs = a_ptr + rm * (K * STEPS) + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn
    acc = tl.load(c_ptr + rm * N + rn)
    other = tl.zeros((M, N), dtype=tl.float32) + 1.0
    for i in range(STEPS):
        a = tl.load(a_ptrs + i * K)
        b = tl.load(b_ptrs + i * K * N)
        if MODE == 0:    # plain: in place
            acc = tl.dot(a, b, acc)
        elif MODE == 1:  # accumulator read again after the dot
            new = tl.dot(a, b, acc)
            acc = new + acc * 0.5
        elif MODE == 2:  # carried values swap: the dot result goes to the other slot
            acc, other = other, tl.dot(a, b, acc)
        elif MODE == 3:  # accumulator used in a nested loop (the dot runs twice per step)
            t = tl.zeros((M, N), dtype=tl.float32)
            for j in range(2):
                t += tl.dot(a, b, acc)
            acc = t
        else:            # accumulator also stored after the dot
            acc2 = tl.dot(a, b, acc)
            tl.store(d_ptr + rm * N + rn + (i + 1) * M * N, acc)
            acc = acc2
    tl.store(d_ptr + rm * N + rn, acc + other * 0.25)


def loop_dot_ref(a, b, c, steps, mode, K):
    acc = c.astype(np.float64)
    other = np.ones_like(acc)
    extra = []
    for i in range(steps):
        p = a[:, i * K:(i + 1) * K].astype(np.float64) @ b[i * K:(i + 1) * K]
        if mode == 0:
            acc = acc + p
        elif mode == 1:
            acc = (acc + p) + acc * 0.5
        elif mode == 2:
            acc, other = other, acc + p
        elif mode == 3:
            acc = 2 * (acc + p)
        else:
            extra.append(acc)
            acc = acc + p
    return acc + other * 0.25, extra


@pytest.mark.parametrize("mode", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("M,K,N", [(16, 16, 32), (32, 16, 64)])
def test_dot_loop_accumulator(mode, M, K, N):
    steps = 3
    rng = np.random.default_rng(mode * 7 + M)
    a = rng.standard_normal((M, K * steps), dtype=np.float32)
    b = rng.standard_normal((K * steps, N), dtype=np.float32)
    c = rng.standard_normal((M, N), dtype=np.float32)
    d = np.zeros((steps + 1, M, N), np.float32)
    loop_dot_kernel[(1,)](a, b, c, d, M, K, N, steps, mode)
    want, extra = loop_dot_ref(a, b, c, steps, mode, K)
    np.testing.assert_allclose(d[0], want, rtol=1e-4, atol=1e-4)
    for i, e in enumerate(extra):
        np.testing.assert_allclose(d[i + 1], e, rtol=1e-4, atol=1e-4)


@triton.jit
def batched_dot_kernel(a_ptr, b_ptr, c_ptr, z_ptr, SHAPE: tl.constexpr, TRANS_B: tl.constexpr,
                       ACC: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs).reshape(SHAPE)
    b = tl.load(b_ptr + offs).reshape(SHAPE)
    if TRANS_B:
        b = tl.trans(b)          # no dims: the last two axes swap (a batched transpose)
    if ACC:
        z = tl.dot(a, b, acc=tl.load(c_ptr + offs).reshape(SHAPE))
    else:
        z = tl.dot(a, b)
    tl.store(z_ptr + offs, z.reshape([N]))


@pytest.mark.parametrize("batch", [(2, 2), (2, 1, 2), (4, 2, 1, 2)])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("acc", [False, True])
def test_dot_many_batch_dims(batch, trans_b, acc):
    shape = batch + (16, 16)
    n = int(np.prod(shape))
    rng = np.random.default_rng(len(batch))
    a = rng.integers(-4, 5, shape).astype(np.float32)
    b = rng.integers(-4, 5, shape).astype(np.float32)
    c = rng.integers(-4, 5, shape).astype(np.float32)
    z = np.zeros(shape, np.float32)
    batched_dot_kernel[(1,)](a, b, c, z, SHAPE=list(shape), TRANS_B=trans_b, ACC=acc, N=n)
    ref = a @ (np.swapaxes(b, -1, -2) if trans_b else b) + (c if acc else 0)
    np.testing.assert_array_equal(z, ref)
