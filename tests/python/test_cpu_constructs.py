"""CPU end-to-end: Python constructs in kernels: tuples carried through
runtime loops (nested, with number leaves), list comprehensions over
compile-time iterables, tuple indexing/len()/iteration, namedtuple
arguments, f-string format specs in static_print/static_assert."""
import collections

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu


@triton.jit
def loop_tuple_kernel(x_ptr, o_ptr, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = (tl.zeros([BLOCK], tl.float32), (tl.full([BLOCK], float("-inf"), tl.float32), 0))
    for i in range(N):
        x = tl.load(x_ptr + i * BLOCK + offs)
        s, (m, c) = acc
        acc = (s + x, (tl.maximum(m, x), c + 1))
    tl.store(o_ptr + offs, acc[0])
    tl.store(o_ptr + BLOCK + offs, acc[1][0])
    tl.store(o_ptr + 2 * BLOCK + offs, acc[1][1] + tl.zeros([BLOCK], tl.float32))


def test_tuple_carried_through_for():
    x = np.random.RandomState(0).randn(5, 16).astype(np.float32)
    o = np.zeros(48, np.float32)
    loop_tuple_kernel[(1,)](x, o, 5, BLOCK=16)
    np.testing.assert_allclose(o[:16], x.sum(0), rtol=1e-5)
    np.testing.assert_array_equal(o[16:32], x.max(0))
    np.testing.assert_array_equal(o[32:], np.full(16, 5.0))


@triton.jit
def while_tuple_kernel(o_ptr, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    st = (0, (offs, 1))          # (count, (block, scale)) with a constant scale leaf
    while st[0] < N:
        k, (v, sc) = st
        st = (k + 1, (v * 2 + sc, sc))
    tl.store(o_ptr + offs, st[1][0] + st[0])


def test_tuple_carried_through_while():
    o = np.zeros(8, np.int32)
    while_tuple_kernel[(1,)](o, 3, BLOCK=8)
    v = np.arange(8)
    for _ in range(3):
        v = v * 2 + 1
    np.testing.assert_array_equal(o, v + 3)


@triton.jit
def pair_add(p):
    return (p[0] + p[1], p[1])


@triton.jit
def loop_tuple_call_kernel(o_ptr, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = (tl.zeros([BLOCK], tl.int32), offs)
    for _ in tl.range(0, N):
        p = pair_add(p)            # a @jit callee takes and returns the tuple
    tl.store(o_ptr + offs, p[0])


def test_tuple_carried_through_jit_call():
    o = np.zeros(16, np.int32)
    loop_tuple_call_kernel[(1,)](o, 4, BLOCK=16)
    np.testing.assert_array_equal(o, 4 * np.arange(16))


@triton.jit
def listcomp_kernel(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    ys = [x * i for i in tl.static_range(4)]
    zs = [a + 1 for a in ys]
    odd = [zs[i] for i in range(len(zs)) if i % 2 == 1]
    tl.static_assert(len(odd) == 2, f"expected 2, got {len(odd):3d}")
    acc = tl.zeros([BLOCK], tl.float32)
    for w in odd:                 # iteration over a tuple unrolls
        acc += w
    for i in tl.static_range(len(zs)):
        acc += zs[-1 - i] * (i + 1)
    tl.store(o_ptr + offs, acc)


def test_list_comprehension_and_tuple_indexing():
    x = np.random.RandomState(1).rand(16).astype(np.float32)
    o = np.zeros(16, np.float32)
    listcomp_kernel[(1,)](x, o, BLOCK=16)
    zs = [x * i + 1 for i in range(4)]
    ref = zs[1] + zs[3] + sum(zs[3 - i] * (i + 1) for i in range(4))
    np.testing.assert_allclose(o, ref, rtol=1e-5)


@triton.jit
def fstring_kernel(o_ptr, BLOCK: tl.constexpr, SCALE: tl.constexpr):
    tl.static_print(f"BLOCK={BLOCK:4d} SCALE={SCALE:.2f} hex={BLOCK:#x} r={BLOCK!r:>5}")
    tl.static_assert(BLOCK >= 16, f"BLOCK {BLOCK:04d} too small")
    tl.store(o_ptr + tl.arange(0, BLOCK), tl.full([BLOCK], SCALE, tl.float32))


def test_fstring_format_spec(capfd):
    o = np.zeros(16, np.float32)
    fstring_kernel[(1,)](o, BLOCK=16, SCALE=1.5)
    out = capfd.readouterr().out
    assert "BLOCK=  16 SCALE=1.50 hex=0x10 r=   16" in out
    np.testing.assert_array_equal(o, np.full(16, 1.5, np.float32))


def test_fstring_format_spec_in_static_assert():
    o = np.zeros(8, np.float32)
    with pytest.raises(triton.CompilationError, match="BLOCK 0008 too small"):
        fstring_kernel[(1,)](o, BLOCK=8, SCALE=1.0)


Pair = collections.namedtuple("Pair", ["ptr", "n"])
Flip = collections.namedtuple("Flip", ["n", "ptr"])
Inner = collections.namedtuple("Inner", ["a", "b"])
Cfg = collections.namedtuple("Cfg", ["scale", "inner"])


@triton.jit
def namedtuple_kernel(p, o_ptr, cfg, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(p.ptr + offs, mask=offs < p.n, other=0.0)
    acc = (x, 0)
    for _ in range(p.n):
        acc = (acc[0] + cfg.inner.a, acc[1] + 1)
    tl.store(o_ptr + offs, acc[0] * cfg.scale + acc[1])


def test_namedtuple_arguments():
    x = np.arange(16, dtype=np.float32)
    o = np.zeros(16, np.float32)
    namedtuple_kernel[(1,)](Pair(x, 10), o, Cfg(2.0, Inner(1.5, None)), BLOCK=16)
    ref = (np.where(np.arange(16) < 10, x, 0) + 15) * 2 + 10
    np.testing.assert_allclose(o, ref)
    # same structure, other class with the fields in the other order: a new specialization
    o2 = np.zeros(16, np.float32)
    namedtuple_kernel[(1,)](Flip(10, x), o2, Cfg(2.0, Inner(1.5, None)), BLOCK=16)
    np.testing.assert_allclose(o2, ref)


@triton.jit
def plain_tuple_kernel(t, o_ptr):
    tl.store(o_ptr, t[0] + t[1][1] * 10)


def test_nested_tuple_argument_with_constexpr_leaves():
    o = np.zeros(1, np.int32)
    plain_tuple_kernel[(1,)]((3, (1, 4)), o)    # 1 specializes to a constexpr
    assert o[0] == 43
    plain_tuple_kernel[(1,)]((3, (None, 5)), o)
    assert o[0] == 53


@triton.jit
def namedtuple_bad_field_kernel(p, BLOCK: tl.constexpr):
    x = tl.load(p.ptr)
    tl.store(p.ptr, x + p.size)


def test_namedtuple_unknown_field_is_an_error():
    x = np.zeros(4, np.float32)
    with pytest.raises(triton.CompilationError, match="namedtuple Pair has no field 'size'"):
        namedtuple_bad_field_kernel[(1,)](Pair(x, 4), BLOCK=4)
