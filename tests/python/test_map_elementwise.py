"""tl.map_elementwise(scalar_fn, *args, pack=1): scalar_fn, with its own
control flow, run on each element (pack elements at a time) of its
arguments broadcast to one shape. Results on the CPU backend; the GPU
pipeline compiled (and assembled) without a GPU."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource
from cpu_util import cpu_driver, requires_cpu  # noqa: F401


@triton.jit
def compare(x, y):
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@triton.jit
def compare_kernel(X, Y, Z, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.load(Y + tl.arange(0, BLOCK))
    tl.store(Z + tl.arange(0, BLOCK), tl.map_elementwise(compare, x, y))


def test_branches_per_element():
    rng = np.random.default_rng(0)
    x = rng.integers(-3, 3, 128).astype(np.int32)
    y = rng.integers(-3, 3, 128).astype(np.int32)
    z = np.full(128, 7, np.int32)
    k = compare_kernel[(1,)](x, y, z, BLOCK=128)
    np.testing.assert_array_equal(z, np.sign(x - y))
    assert '"tt.map_elementwise"(' in k.asm["ttir"] and "tt.map_elementwise.return" in k.asm["ttir"]
    assert " = map_elementwise " in k.asm["ct.ttir"]


@triton.jit
def divmod_(a, b):
    return a // b, a % b


@triton.jit
def divmod_pack(a0, a1, b0, b1):
    return a0 // b0, a1 // b1, a0 % b0, a1 % b1


@triton.jit
def divmod_pack4(a0, a1, a2, a3, b0, b1, b2, b3):
    return a0 // b0, a1 // b1, a2 // b2, a3 // b3, a0 % b0, a1 % b1, a2 % b2, a3 % b3


@triton.jit
def divmod_kernel(A, B, C, D, BLOCK: tl.constexpr, PACK: tl.constexpr):
    a = tl.load(A + tl.arange(0, BLOCK))
    b = tl.load(B + tl.arange(0, BLOCK))
    if PACK == 1:
        c, d = tl.map_elementwise(divmod_, a, b)
    elif PACK == 2:
        c, d = tl.map_elementwise(divmod_pack, a, b, pack=2)
    else:
        c, d = tl.map_elementwise(divmod_pack4, a, b, pack=4)
    tl.store(C + tl.arange(0, BLOCK), c)
    tl.store(D + tl.arange(0, BLOCK), d)


@pytest.mark.parametrize("pack", [1, 2, 4])
def test_several_results_and_packs(pack):
    rng = np.random.default_rng(pack)
    a = rng.integers(0, 1 << 30, 512).astype(np.uint32)
    b = rng.integers(1, 1000, 512).astype(np.uint32)
    c = np.zeros_like(a)
    d = np.zeros_like(a)
    k = divmod_kernel[(1,)](a, b, c, d, BLOCK=512, PACK=pack)
    np.testing.assert_array_equal(c, a // b)
    np.testing.assert_array_equal(d, a % b)
    assert f"pack = {pack}" in k.asm["ttir"]


@triton.jit
def triple(a, b, c):
    return a * 2 + 1, b * 2 + 1, c * 2 + 1


@triton.jit
def ragged_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(Y + tl.arange(0, BLOCK), tl.map_elementwise(triple, x, pack=3)[0])


def test_pack_not_dividing_the_block():
    """64 elements, packs of 3: the last pack has one element."""
    x = np.arange(64, dtype=np.int32)
    y = np.zeros(64 + 8, np.int32)
    ragged_kernel[(1,)](x, y, BLOCK=64)
    np.testing.assert_array_equal(y[:64], 2 * x + 1)
    assert not y[64:].any()


@triton.jit
def selu_scalar(x, alpha):
    if x > 0:
        return x
    else:
        return alpha * (tl.exp(x) - 1)


@triton.jit
def selu_kernel(X, Y, alpha, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(X + rows * N + cols)
    scale = tl.load(X + M * N + cols)            # a row, broadcast over the rows
    y = tl.map_elementwise(selu_scalar, x * scale, alpha)
    tl.store(Y + rows * N + cols, y)


def test_broadcast_and_scalar_arguments():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(16 * 32 + 32).astype(np.float32)
    y = np.zeros(16 * 32, np.float32)
    selu_kernel[(1,)](x, y, 1.5, M=16, N=32)
    v = x[:512].reshape(16, 32) * x[512:][None, :]
    want = np.where(v > 0, v, 1.5 * (np.exp(v) - 1))
    np.testing.assert_allclose(y.reshape(16, 32), want, rtol=1e-5, atol=1e-6)


@triton.jit
def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


@triton.jit
def collatz_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    tl.store(Y + tl.arange(0, BLOCK), tl.map_elementwise(collatz_steps, x))


def _collatz(n):
    s = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        s += 1
    return s


def test_loops_with_per_element_trip_counts():
    x = np.arange(1, 65, dtype=np.int64)
    y = np.zeros(64, np.int32)
    collatz_kernel[(1,)](x, y, BLOCK=64)
    np.testing.assert_array_equal(y, [_collatz(int(n)) for n in x])


@triton.jit
def load_if_positive(p, i):
    if i >= 0:
        return tl.load(p + i)
    else:
        return -1.0


@triton.jit
def gather_kernel(X, I, Y, BLOCK: tl.constexpr):
    i = tl.load(I + tl.arange(0, BLOCK))
    ptrs = X + tl.zeros([BLOCK], tl.int32)
    tl.store(Y + tl.arange(0, BLOCK), tl.map_elementwise(load_if_positive, ptrs, i))


def test_memory_access_inside():
    """Only the elements with an index load (the others would be out of
    bounds: the CPU backend's sanitizer would catch them)."""
    x = np.arange(10, dtype=np.float32) * 10
    i = np.array([3, -5, 0, 9, -1000000, 2, -7, 1], np.int32)
    y = np.zeros(8, np.float32)
    gather_kernel[(1,)](x, i, y, BLOCK=8)
    np.testing.assert_array_equal(y, np.where(i >= 0, x[np.clip(i, 0, 9)], -1.0))


@triton.jit
def dead_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    unused = tl.map_elementwise(compare, x, x)  # noqa: F841
    tl.store(Y + tl.arange(0, BLOCK), x)


def test_unused_pure_map_is_dropped():
    k = triton.compile(ASTSource(dead_kernel, {"X": "*i32", "Y": "*i32"}, {"BLOCK": 16}),
                       target=GPUTarget("cpu", 0, 1))
    assert " = map_elementwise " not in k.asm["ct.ttir"] and " = load " in k.asm["ct.ttir"]


@pytest.mark.parametrize("arch", [80, 90])
def test_gpu_pipeline(arch):
    t = GPUTarget("cuda", arch, 32)
    attrs = {n: {"divisibility": 16} for n in ("A", "B", "C", "D")}
    k = triton.compile(ASTSource(divmod_kernel, {"A": "*u32", "B": "*u32", "C": "*u32", "D": "*u32"},
                                 {"BLOCK": 512, "PACK": 2}, attrs), target=t)
    assert '"tt.map_elementwise"' in k.asm["ttgir"] and "#blocked" in k.asm["ttgir"]
    assert "div.u32" in k.asm["ptx"] or "rem.u32" in k.asm["ptx"]
    k = triton.compile(ASTSource(collatz_kernel, {"X": "*i64", "Y": "*i32"}, {"BLOCK": 128},
                                 {"X": {"divisibility": 16}, "Y": {"divisibility": 16}}), target=t)
    assert ".entry collatz_kernel" in k.asm["ptx"]


@triton.jit
def six_to_two(a, b, c, d, e, f):
    return a + d, b + e


@triton.jit
def bad_kernel(X, CASE: tl.constexpr):
    x = tl.load(X + tl.arange(0, 16))
    if CASE == 0:
        y = tl.map_elementwise(tl.abs, x)
    elif CASE == 1:
        y = tl.map_elementwise(six_to_two, x, x, pack=3)
    else:
        y = tl.map_elementwise(compare, 1, 2)
    tl.store(X + tl.arange(0, 16), y)


@pytest.mark.parametrize("case,msg", [(0, "scalar_fn must be a @jit function"),
                                      (1, "must return a multiple of 3"),
                                      (2, "give it at least one")])
def test_errors(case, msg):
    with pytest.raises(triton.CompilationError, match=msg):
        triton.compile(ASTSource(bad_kernel, {"X": "*i32"}, {"CASE": case}), target=GPUTarget("cpu", 0, 1))
