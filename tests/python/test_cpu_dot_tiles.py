"""CPU: dot register tiles (8 rows by 32 columns; fewer rows and narrower
vectors for small blocks) for every operand type, operands computed in the
dot's conversion (elementwise, splat), masked K tails, 3-D dots, and the dot
in a `for` accumulating in the carried buffer (also the cases where it must
not: the accumulator read again, swapped, or used in a nested loop)."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401
from cpu_util import TL, fp8_table, to_storage

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


# Every operand type goes through the same tiles: the operands converted once
# to the compute type (f32, f64, i32), tiles of fewer rows for M < 8 and
# narrower vectors for N < 32. Small integers keep every sum exact.
DOT_TYPES = [("float16", "float32"), ("bfloat16", "float32"), ("float32", "float32"),
             ("float64", "float64"), ("int8", "int32"), ("uint8", "int32"), ("int16", "int32"),
             ("float8e5", "float32"), ("float8e4nv", "float32")]


def dot_inputs(dt, shape, rng):
    """Small integers of `shape` in the storage numpy uses for dtype dt (bf16 as
    bits, fp8 as reinterpreted bytes), and their values."""
    lo = 0 if dt.startswith("uint") else -4
    v = rng.integers(lo, 5, shape).astype(np.float64)
    if dt == "bfloat16":
        return triton.reinterpret(to_storage(v, dt), tl.bfloat16), v
    if dt.startswith("float8"):
        table = fp8_table("e5m2" if dt == "float8e5" else "e4m3")
        codes = np.array([np.nanargmin(np.abs(table - x)) for x in v.ravel()], np.uint8).reshape(shape)
        assert np.array_equal(table[codes], v)
        return triton.reinterpret(codes, getattr(tl, dt)), v
    return v.astype(dt), v


@triton.jit
def typed_dot_kernel(a_ptr, b_ptr, c_ptr, d_ptr, M: tl.constexpr, K: tl.constexpr, N: tl.constexpr,
                     ACC: tl.constexpr, OUT: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rk = tl.arange(0, K)
    rn = tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + rm * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn)
    if ACC:
        d = tl.dot(a, b, acc=tl.load(c_ptr + rm * N + rn))
    else:
        d = tl.dot(a, b, out_dtype=OUT)
    tl.store(d_ptr + rm * N + rn, d)


@pytest.mark.parametrize("dt,out", DOT_TYPES)
@pytest.mark.parametrize("M,K,N,acc", [(1, 32, 1, False), (4, 32, 8, True), (2, 32, 16, False),
                                       (16, 64, 64, True), (64, 32, 128, False)])
def test_dot_operand_types(dt, out, M, K, N, acc):
    rng = np.random.default_rng(M * 1000 + K * 10 + N)
    a, av = dot_inputs(dt, (M, K), rng)
    b, bv = dot_inputs(dt, (K, N), rng)
    c = rng.integers(-8, 9, (M, N)).astype(out)
    d = np.zeros((M, N), out)
    typed_dot_kernel[(1,)](a, b, c, d, M, K, N, acc, TL[out])
    ref = av @ bv + (c if acc else 0)
    np.testing.assert_array_equal(d, ref.astype(out))


@triton.jit
def fused_operand_kernel(a_ptr, b_ptr, d_ptr, M: tl.constexpr, K: tl.constexpr, N: tl.constexpr,
                         MODE: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rk = tl.arange(0, K)
    rn = tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + rm * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn)
    if MODE == 0:    # an elementwise operand with one use: computed in the dot's conversion
        d = tl.dot(a * 2.0 - 1.0, b)
    elif MODE == 1:  # a splat operand
        d = tl.dot(tl.full((M, K), 3.0, tl.float16), b)
    else:            # operands of different types
        d = tl.dot(a, b.to(tl.float32).to(tl.float16), out_dtype=tl.float16)
    tl.store(d_ptr + rm * N + rn, d)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_dot_fused_and_splat_operands(mode):
    M, K, N = 16, 32, 32
    rng = np.random.default_rng(mode)
    a = rng.integers(-4, 5, (M, K)).astype(np.float16)
    b = rng.integers(-4, 5, (K, N)).astype(np.float16)
    d = np.zeros((M, N), np.float16 if mode == 2 else np.float32)
    fused_operand_kernel[(1,)](a, b, d, M, K, N, mode)
    av = a.astype(np.float64)
    ref = {0: (av * 2 - 1) @ b, 1: np.full((M, K), 3.0) @ b, 2: av @ b}[mode]
    np.testing.assert_array_equal(d, ref.astype(d.dtype))


# The tutorial's matmul shape: program blocks, a K loop with masked tails,
# rows and columns wrapped (% M, % N) and masked stores.
@triton.jit
def tiled_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                        BK: tl.constexpr, ACC: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = (pid_m * BM + tl.arange(0, BM)) % M
    offs_n = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=ACC)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * N
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + cm[:, None] * N + cn[None, :], acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32", "int8"])
@pytest.mark.parametrize("M,N,K,BM,BN,BK", [(37, 50, 75, 16, 32, 32), (64, 64, 200, 32, 64, 64),
                                            (5, 3, 33, 16, 16, 32), (100, 20, 64, 64, 16, 64)])
def test_dot_k_tails(dt, M, N, K, BM, BN, BK):
    rng = np.random.default_rng(M + N + K)
    a, av = dot_inputs(dt, (M, K), rng)
    b, bv = dot_inputs(dt, (K, N), rng)
    out = "int32" if dt == "int8" else "float32"
    c = np.full((M, N), -1, out)
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    tiled_matmul_kernel[grid](a, b, c, M, N, K, BM, BN, BK, TL[out])
    np.testing.assert_array_equal(c, (av @ bv).astype(out))


@triton.jit
def batched_typed_kernel(a_ptr, b_ptr, d_ptr, B: tl.constexpr, M: tl.constexpr, K: tl.constexpr,
                         N: tl.constexpr, OUT: tl.constexpr):
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rka = tl.arange(0, K)[None, None, :]
    rkb = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + rb * M * K + rm * K + rka)
    b = tl.load(b_ptr + rb * K * N + rkb * N + rn)
    tl.store(d_ptr + rb * M * N + rm * N + rn, tl.dot(a, b, out_dtype=OUT))


@pytest.mark.parametrize("dt,out", [("float16", "float32"), ("bfloat16", "float32"), ("int8", "int32"),
                                    ("float32", "float32")])
@pytest.mark.parametrize("B,M,K,N", [(2, 4, 32, 8), (4, 16, 32, 64), (2, 1, 32, 2)])
def test_dot_3d_types(dt, out, B, M, K, N):
    rng = np.random.default_rng(B * M * N)
    a, av = dot_inputs(dt, (B, M, K), rng)
    b, bv = dot_inputs(dt, (B, K, N), rng)
    d = np.zeros((B, M, N), out)
    batched_typed_kernel[(1,)](a, b, d, B, M, K, N, TL[out])
    np.testing.assert_array_equal(d, (av @ bv).astype(out))
