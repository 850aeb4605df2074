"""CPU end-to-end: control flow (constexpr/runtime if, loops over range,
tl.range, static_range, while, early return), nested @jit calls (inlined and
noinline, tuple results), random numbers, device_print and device_assert."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu


@triton.jit
def constexpr_if_kernel(o_ptr, MODE: tl.constexpr, FLAG: tl.constexpr):
    offs = tl.arange(0, 16)
    if MODE == 0:
        v = offs
    elif MODE == 1:
        v = offs * 2
    else:
        v = -offs
    if not FLAG:
        v = v + 100
    tl.store(o_ptr + offs, v if FLAG else v - 1)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("flag", [True, False])
def test_constexpr_if(mode, flag):
    o = np.zeros(16, np.int32)
    constexpr_if_kernel[(1,)](o, mode, flag)
    v = [np.arange(16), np.arange(16) * 2, -np.arange(16)][mode]
    np.testing.assert_array_equal(o, v if flag else v + 99)


@triton.jit
def runtime_if_kernel(x_ptr, o_ptr, thr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    s = tl.sum(x, 0)
    if s > thr:                  # runtime condition; values flow out of both branches
        y = x * 2
        k = 1
    elif s < -thr:
        y = x - 1
        k = 2
    else:
        y = tl.zeros_like(x)
        k = 3
    tl.store(o_ptr + offs, y + k * 1000)


def test_runtime_if_elif_else_values():
    x = np.concatenate([np.full(16, 5), np.full(16, -5), np.zeros(16),
                        np.arange(16) - 7]).astype(np.int32)
    o = np.zeros_like(x)
    runtime_if_kernel[(4,)](x, o, 10, BLOCK=16)
    ref = np.concatenate([x[:16] * 2 + 1000, x[16:32] - 1 + 2000, np.full(16, 3000),
                          np.full(16, 3000)])
    np.testing.assert_array_equal(o, ref)


@triton.jit
def loops_kernel(x_ptr, o_ptr, n_iter, BLOCK: tl.constexpr, UNROLL: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(n_iter):                       # runtime trip count
        acc += x * i
    acc2 = tl.zeros((BLOCK,), tl.float32)
    for i in tl.range(1, n_iter, 2, num_stages=2):
        acc2 = acc2 + i
    acc3 = x
    for i in tl.static_range(UNROLL):             # unrolled, i is a constexpr
        acc3 = acc3 * 2 + i
    acc4 = tl.zeros((BLOCK,), tl.float32)
    for i in range(n_iter, 3 * n_iter + 1, 3):    # runtime bounds with a step
        acc4 += i
    tl.store(o_ptr + offs, acc)
    tl.store(o_ptr + BLOCK + offs, acc2)
    tl.store(o_ptr + 2 * BLOCK + offs, acc3)
    tl.store(o_ptr + 3 * BLOCK + offs, acc4)


@pytest.mark.parametrize("n_iter", [0, 1, 7])
def test_loops(n_iter):
    x = np.arange(16, dtype=np.float32)
    o = np.zeros(64, np.float32)
    loops_kernel[(1,)](x, o, n_iter, BLOCK=16, UNROLL=3)
    np.testing.assert_array_equal(o[:16], x * sum(range(n_iter)))
    np.testing.assert_array_equal(o[16:32], sum(range(1, n_iter, 2)))
    acc3 = x.copy()
    for i in range(3):
        acc3 = acc3 * 2 + i
    np.testing.assert_array_equal(o[32:48], acc3)
    np.testing.assert_array_equal(o[48:], sum(range(n_iter, 3 * n_iter + 1, 3)))


@triton.jit
def negative_step_kernel(o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.int32)
    for i in range(10, 0, -3):                    # 10, 7, 4, 1
        acc = acc * 100 + i
    tl.store(o_ptr + offs, acc)


def test_range_negative_step():
    o = np.zeros(16, np.int32)
    negative_step_kernel[(1,)](o, BLOCK=16)
    np.testing.assert_array_equal(o, 10070401)


@triton.jit
def nested_loop_kernel(a_ptr, o_ptr, M: tl.constexpr, K: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, M)
    acc = tl.zeros((M,), tl.float32)
    for k in range(0, K, BK):                 # loop-carried block, inner loop over a tile
        rk = k + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
        for j in range(2):
            acc += tl.sum(a, 1) * (j + 1)
    tl.store(o_ptr + rm, acc)


def test_nested_loops_loop_carried_block():
    a = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    o = np.zeros(8, np.float32)
    nested_loop_kernel[(1,)](a, o, 8, 64, 16)
    np.testing.assert_allclose(o, a.sum(1) * 3, rtol=1e-5, atol=1e-5)


@triton.jit
def while_kernel(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    pid = tl.program_id(0)
    n = tl.load(x_ptr + pid)                  # Collatz steps of a scalar
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    tl.store(o_ptr + pid + offs * 0, steps, mask=offs == 0)


def test_while_loop():
    starts = np.array([1, 2, 3, 6, 7, 27, 97, 871], np.int32)
    o = np.zeros(8, np.int32)
    while_kernel[(8,)](starts, o, BLOCK=16)

    def collatz(n):
        s = 0
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            s += 1
        return s
    np.testing.assert_array_equal(o, [collatz(int(s)) for s in starts])


@triton.jit
def early_return_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs) + 1)


def test_early_return():
    x = np.arange(128, dtype=np.int32)
    o = np.full(128, -1, np.int32)
    early_return_kernel[(8,)](x, o, 64, BLOCK=16)
    np.testing.assert_array_equal(o[:64], x[:64] + 1)
    np.testing.assert_array_equal(o[64:], -1)


@triton.jit
def early_return_else_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    else:
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        tl.store(o_ptr + offs, tl.load(x_ptr + offs) + 1)
        return


def test_early_return_both_branches():
    x = np.arange(128, dtype=np.int32)
    o = np.full(128, -1, np.int32)
    early_return_else_kernel[(8,)](x, o, 64, BLOCK=16)
    np.testing.assert_array_equal(o[:64], x[:64] + 1)
    np.testing.assert_array_equal(o[64:], -1)


@triton.jit
def nested_early_return_kernel(x_ptr, o_ptr, n, lim, BLOCK: tl.constexpr, GUARD: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if GUARD:                                     # constexpr if around a runtime early return
        if pid * BLOCK >= n:
            return
    if pid % 2 == 0:
        if pid >= lim:                            # early return inside a nested runtime if
            tl.store(o_ptr + offs, x * 0 - 7)
            return
        x = x * 10
    tl.store(o_ptr + offs, x + 1)


@pytest.mark.parametrize("guard", [True, False])
def test_nested_early_return(guard):
    x = np.arange(128, dtype=np.int32)
    o = np.full(128, -1, np.int32)
    nested_early_return_kernel[(8,)](x, o, 96, 4, BLOCK=16, GUARD=guard)
    ref = np.full(128, -1, np.int32)
    for pid in range(8):
        sl = slice(16 * pid, 16 * pid + 16)
        if guard and pid * 16 >= 96:
            continue
        if pid % 2 == 0 and pid >= 4:
            ref[sl] = -7
        elif pid % 2 == 0:
            ref[sl] = x[sl] * 10 + 1
        else:
            ref[sl] = x[sl] + 1
    np.testing.assert_array_equal(o, ref)


@triton.jit
def _clip_early(x, t):
    if t < 0:
        return x * 0.0
    if t > 10:
        return x + 100.0
    y = x * 2.0
    return y + t


@triton.jit
def early_return_values_kernel(x_ptr, o_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + pid * BLOCK + offs, _clip_early(x, pid * 6 - 1))


def test_early_return_with_values():
    x = np.arange(16, dtype=np.float32)
    o = np.zeros(4 * 16, np.float32)
    early_return_values_kernel[(4,)](x, o, BLOCK=16)
    ref = []
    for pid in range(4):
        t = pid * 6 - 1
        ref.append(x * 0 if t < 0 else x + 100 if t > 10 else x * 2 + t)
    np.testing.assert_array_equal(o, np.concatenate(ref))


@triton.jit
def negative_step_runtime_kernel(o_ptr, hi, lo, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.int32)
    n = 0
    for i in range(hi, lo, -2):                   # runtime bounds, constant negative step
        acc = acc * 3 + i
        n += 1
    tl.store(o_ptr + offs, acc + n * 0)
    tl.store(o_ptr + BLOCK + offs, acc * 0 + n)


@pytest.mark.parametrize("hi,lo", [(9, 0), (8, 0), (3, 3), (2, 5), (5, -4)])
def test_range_negative_step_runtime_bounds(hi, lo):
    o = np.zeros(32, np.int32)
    negative_step_runtime_kernel[(1,)](o, hi, lo, BLOCK=16)
    acc = 0
    for i in range(hi, lo, -2):
        acc = acc * 3 + i
    np.testing.assert_array_equal(o[:16], acc)
    np.testing.assert_array_equal(o[16:], len(range(hi, lo, -2)))


@triton.jit
def _stats(x):
    return tl.sum(x, 0), tl.max(x, 0), tl.min(x, 0)


@triton.jit(noinline=True)
def _scale_shift(x, a, b):
    return x * a + b, x - b


@triton.jit
def _early(x, flag: tl.constexpr):
    if flag:
        return x + 1
    return x - 1


@triton.jit
def _recursive_helper(x, DEPTH: tl.constexpr):
    if DEPTH == 0:
        return x
    return _recursive_helper(x * 2, DEPTH - 1) + 1


@triton.jit
def calls_kernel(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    s, mx, mn = _stats(x)
    y, z = _scale_shift(x, 3.0, 0.5)
    w = _early(x, True) + _early(x, False)
    r = _recursive_helper(x, 3)
    tl.store(o_ptr + offs, y + s + mx * mn)
    tl.store(o_ptr + BLOCK + offs, z)
    tl.store(o_ptr + 2 * BLOCK + offs, w)
    tl.store(o_ptr + 3 * BLOCK + offs, r)


def test_nested_jit_calls():
    x = np.linspace(-2, 3, 16).astype(np.float32)
    o = np.zeros(64, np.float32)
    calls_kernel[(1,)](x, o, BLOCK=16)
    np.testing.assert_allclose(o[:16], x * 3 + 0.5 + x.sum() + x.max() * x.min(), rtol=1e-5)
    np.testing.assert_allclose(o[16:32], x - 0.5)
    np.testing.assert_allclose(o[32:48], 2 * x)
    np.testing.assert_allclose(o[48:], x * 8 + 3)


@triton.jit
def bool_ops_kernel(x_ptr, o_ptr, a, b, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    m = (x > 2) & (x < 10) | (x == 0)
    m2 = (x > 5) ^ (x > 8)
    both = a > 0 and b > 0
    either = a > 0 or b > 0
    tl.store(o_ptr + offs, m.to(tl.int32) + 2 * m2.to(tl.int32) + 4 * both + 8 * either)


@pytest.mark.parametrize("a,b", [(1, 1), (1, 0), (0, 0)])
def test_boolean_ops(a, b):
    x = np.arange(16, dtype=np.int32)
    o = np.zeros(16, np.int32)
    bool_ops_kernel[(1,)](x, o, a, b, BLOCK=16)
    m = ((x > 2) & (x < 10)) | (x == 0)
    m2 = (x > 5) ^ (x > 8)
    np.testing.assert_array_equal(o, m + 2 * m2 + 4 * (a > 0 and b > 0) + 8 * (a > 0 or b > 0))


# -- random ---------------------------------------------------------------------

@triton.jit
def rand_kernel(o_ptr, i_ptr, n_ptr, seed, off0, BLOCK: tl.constexpr):
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = off0 + idx
    tl.store(o_ptr + idx, tl.rand(seed, offs))
    tl.store(i_ptr + idx, tl.randint(seed, offs))
    tl.store(n_ptr + idx, tl.randn(seed, offs))


def _philox_ref(seed, offs, rounds=10):
    """Philox-4x32 in Python: counters (offs, 0, 0, 0), key from the 64-bit seed."""
    out = []
    for c in offs:
        c0, c1, c2, c3 = int(c) & 0xFFFFFFFF, 0, 0, 0
        k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
        for _ in range(rounds):
            p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
            c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & 0xFFFFFFFF,
                              (p0 >> 32) ^ c3 ^ k1, p0 & 0xFFFFFFFF)
            k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
        out.append(c0)
    return np.array(out, np.uint64).astype(np.uint32)


def test_rand_determinism_and_range():
    n = 1024
    u1, u2, u3 = (np.zeros(n, np.float32) for _ in range(3))
    i1, i2 = np.zeros(n, np.uint32), np.zeros(n, np.uint32)
    g1, g2 = np.zeros(n, np.float32), np.zeros(n, np.float32)
    grid = (n // 64,)
    rand_kernel[grid](u1, i1, g1, 1234, 0, BLOCK=64)
    rand_kernel[grid](u2, i2, g2, 1234, 0, BLOCK=64)
    np.testing.assert_array_equal(u1, u2)          # same seed and offsets: same values
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(g1, g2)
    assert (u1 >= 0).all() and (u1 < 1).all()
    assert abs(u1.mean() - 0.5) < 0.05 and len(np.unique(u1)) > n * 0.99
    assert abs(g1.mean()) < 0.15 and abs(g1.std() - 1) < 0.1
    rand_kernel[grid](u3, i2, g2, 4321, 0, BLOCK=64)
    assert (u3 != u1).mean() > 0.99                   # another seed: other values
    # offsets shifted by 16: the same stream shifted
    rand_kernel[grid](u3, i2, g2, 1234, 16, BLOCK=64)
    np.testing.assert_array_equal(u3[:-16], u1[16:])
    np.testing.assert_array_equal(i1[:64], _philox_ref(1234, range(64)))


@triton.jit
def rand4x_kernel(o_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    o_ptr += tl.program_id(0) * 4 * BLOCK
    a, b, c, d = tl.rand4x(seed, offs + tl.program_id(0) * BLOCK)
    tl.store(o_ptr + offs, a)
    tl.store(o_ptr + BLOCK + offs, b)
    tl.store(o_ptr + 2 * BLOCK + offs, c)
    tl.store(o_ptr + 3 * BLOCK + offs, d)


def test_rand4x_streams_differ():
    o = np.zeros(4 * 256, np.float32)
    rand4x_kernel[(4,)](o, 7, BLOCK=64)
    s = o.reshape(4, 4, 64).transpose(1, 0, 2).reshape(4, 256)
    assert ((s >= 0) & (s < 1)).all()
    for i in range(4):
        for j in range(i + 1, 4):
            assert (s[i] != s[j]).mean() > 0.99


# -- debug ----------------------------------------------------------------------

@triton.jit
def print_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("x = ", x)
    tl.device_print("pid", tl.program_id(0), hex=True)
    tl.static_print("compile-time shape", x.shape)


def test_device_print_runs():
    x = np.arange(4, dtype=np.int32)
    print_kernel[(2,)](x, BLOCK=4)


@triton.jit(debug=True)
def assert_kernel(x_ptr, limit, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(x < limit, "x must stay below the limit")
    tl.store(x_ptr + tl.arange(0, BLOCK), x + 1)


def test_device_assert():
    x = np.arange(16, dtype=np.int32)
    assert_kernel[(1,)](x, 100, BLOCK=16)           # holds: runs normally
    np.testing.assert_array_equal(x, np.arange(16) + 1)
    with pytest.raises(Exception, match="x must stay below the limit"):
        assert_kernel[(1,)](x, 5, BLOCK=16)


@triton.jit(debug=True)
def python_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    assert tl.sum(x, 0) > 0, "sum must be positive"


def test_python_assert_statement_is_device_assert():
    python_assert_kernel[(1,)](np.ones(8, np.int32), BLOCK=8)
    with pytest.raises(Exception, match="sum must be positive"):
        python_assert_kernel[(1,)](np.zeros(8, np.int32), BLOCK=8)


@triton.jit
def assert_off_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_assert(x < 0, "never checked without debug")
    tl.store(x_ptr + tl.arange(0, BLOCK), x * 2)


def test_device_assert_off_without_debug():
    x = np.arange(8, dtype=np.int32)
    assert_off_kernel[(1,)](x, BLOCK=8)
    np.testing.assert_array_equal(x, np.arange(8) * 2)


@triton.jit
def static_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 16 == 0, "BLOCK must be a multiple of 16")
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.arange(0, BLOCK))


def test_static_assert_is_compile_error():
    x = np.zeros(8, np.int32)
    with pytest.raises(triton.CompilationError, match="multiple of 16"):
        static_assert_kernel[(1,)](x, BLOCK=8)
