"""CPU end-to-end: the standard library's flip, sort, topk and
bitonic_merge (bitonic networks written in the language), and
@constexpr_function helpers called at compile time."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

pytestmark = requires_cpu


@triton.jit
def sort_kernel(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, DESC: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + offs, tl.sort(x, descending=DESC))


@pytest.mark.parametrize("M,N", [(1, 2), (4, 8), (2, 64)])
@pytest.mark.parametrize("desc", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_sort(M, N, desc, dtype):
    rng = np.random.default_rng(N + M)
    x = (rng.standard_normal((M, N)) * 100).astype(dtype)
    o = np.zeros_like(x)
    sort_kernel[(1,)](x, o, M, N, desc)
    ref = np.sort(x, axis=1)
    np.testing.assert_array_equal(o, ref[:, ::-1] if desc else ref)


@triton.jit
def sort_1d_kernel(x_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + offs, x.sort())
    tl.store(o_ptr + N + offs, tl.flip(x))


def test_sort_flip_1d_and_method():
    x = np.random.default_rng(1).permutation(32).astype(np.int32)
    o = np.zeros(64, np.int32)
    sort_1d_kernel[(1,)](x, o, 32)
    np.testing.assert_array_equal(o[:32], np.sort(x))
    np.testing.assert_array_equal(o[32:64], x[::-1])


@triton.jit
def bitonic_merge_kernel(x_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)                     # a bitonic sequence
    tl.store(o_ptr + offs, tl.bitonic_merge(x))


def test_bitonic_merge():
    x = np.concatenate([np.arange(0, 32, 2), np.arange(31, 0, -2)]).astype(np.float32)
    o = np.zeros_like(x)
    bitonic_merge_kernel[(1,)](x, o, 32)
    np.testing.assert_array_equal(o, np.sort(x))


@triton.jit
def topk_kernel(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    t = tl.topk(x, K)
    tl.store(o_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :], t)


@pytest.mark.parametrize("M,N,K", [(1, 16, 4), (4, 64, 8), (2, 32, 32), (4, 8, 1), (2, 16, 2)])
def test_topk(M, N, K):
    x = np.random.default_rng(K).standard_normal((M, N)).astype(np.float32)
    o = np.zeros((M, K), np.float32)
    topk_kernel[(1,)](x, o, M, N, K)
    np.testing.assert_array_equal(o, -np.sort(-x, axis=1)[:, :K])


@triton.jit
def flip_kernel(x_ptr, o_ptr, DIM: tl.constexpr):
    offs = tl.arange(0, 4)[:, None, None] * 16 + tl.arange(0, 2)[None, :, None] * 8 + tl.arange(0, 8)[None, None, :]
    x = tl.load(x_ptr + offs)
    tl.store(o_ptr + offs, tl.flip(x, DIM))


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_flip(dim):
    x = np.arange(64, dtype=np.float32).reshape(4, 2, 8)
    o = np.zeros_like(x)
    flip_kernel[(1,)](x, o, dim)
    np.testing.assert_array_equal(o, np.flip(x, dim))


@triton.constexpr_function
def block_for(n, dtype):
    # a compile-time helper: the block size covering n elements of dtype
    return max(16, triton.next_power_of_2(n) // (2 if dtype.primitive_bitwidth > 16 else 1))


@triton.constexpr_function
def describe(dtype):
    return f"kernel for {dtype}"


@triton.jit
def constexpr_fn_kernel(x_ptr, o_ptr, n, N: tl.constexpr):
    B: tl.constexpr = block_for(N, x_ptr.dtype.element_ty)
    tl.static_assert(describe(tl.float32) == "kernel for fp32", f"got {describe(tl.float32)}")
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(o_ptr + offs, x + B, mask=offs < n)


def test_constexpr_function():
    assert block_for(100, tl.float32) == 64          # callable from the host too
    x = np.arange(40, dtype=np.float32)
    o = np.zeros_like(x)
    constexpr_fn_kernel[(1,)](x, o, 40, N=100)
    np.testing.assert_array_equal(o, x + 64)
