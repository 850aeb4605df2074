"""CPU end-to-end: program ids, block creation, loads and stores (masks,
`other`, 2-D pointer tiles, strides)."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401
from cpu_util import ALL, INTS, storage, rand_values, TL

pytestmark = requires_cpu


@triton.jit
def pid_kernel(out_ptr):
    x = tl.program_id(0)
    y = tl.program_id(axis=1)
    z = tl.program_id(2)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    nz = tl.num_programs(axis=2)
    lin = (z * ny + y) * nx + x
    tl.store(out_ptr + lin * 6 + 0, x)
    tl.store(out_ptr + lin * 6 + 1, y)
    tl.store(out_ptr + lin * 6 + 2, z)
    tl.store(out_ptr + lin * 6 + 3, nx)
    tl.store(out_ptr + lin * 6 + 4, ny)
    tl.store(out_ptr + lin * 6 + 5, nz)


@pytest.mark.parametrize("grid", [(5,), (3, 4), (2, 3, 4), (1, 1, 7)])
def test_program_id_num_programs(grid):
    g = tuple(grid) + (1,) * (3 - len(grid))
    out = np.full(g[0] * g[1] * g[2] * 6, -1, np.int32)
    pid_kernel[grid](out)
    out = out.reshape(g[2], g[1], g[0], 6)
    z, y, x = np.meshgrid(np.arange(g[2]), np.arange(g[1]), np.arange(g[0]), indexing="ij")
    np.testing.assert_array_equal(out[..., 0], x)
    np.testing.assert_array_equal(out[..., 1], y)
    np.testing.assert_array_equal(out[..., 2], z)
    np.testing.assert_array_equal(out[..., 3], g[0])
    np.testing.assert_array_equal(out[..., 4], g[1])
    np.testing.assert_array_equal(out[..., 5], g[2])


@triton.jit
def pid_grid_callable(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs * 2 + tl.program_id(0), mask=offs < n)


def test_grid_callable_and_tail_mask():
    n = 1000
    out = np.full(n + 8, -7, np.int32)
    pid_grid_callable[lambda m: (triton.cdiv(m["n"], m["BLOCK"]),)](out, n, BLOCK=64)
    offs = np.arange(n)
    np.testing.assert_array_equal(out[:n], offs * 2 + offs // 64)
    np.testing.assert_array_equal(out[n:], -7)  # the mask kept the tail untouched


@triton.jit
def arange_kernel(out_ptr, START: tl.constexpr, END: tl.constexpr):
    r = tl.arange(START, END)
    tl.static_assert(r.dtype == tl.int32)
    tl.store(out_ptr + tl.arange(0, END - START), r)


@pytest.mark.parametrize("start,end", [(0, 1), (0, 16), (8, 16), (32, 96)])
def test_arange(start, end):
    out = np.zeros(end - start, np.int32)
    arange_kernel[(1,)](out, start, end)
    np.testing.assert_array_equal(out, np.arange(start, end))


@triton.jit
def full_kernel(out_ptr, val, N: tl.constexpr, DT: tl.constexpr, KIND: tl.constexpr):
    offs = tl.arange(0, N)
    if KIND == "full":
        x = tl.full((N,), val, DT)
    elif KIND == "full_const":
        x = tl.full([N], 3, DT)
    elif KIND == "zeros":
        x = tl.zeros((N,), DT) + 5      # a Python int keeps the block's dtype
    else:
        x = tl.zeros_like(offs.to(DT)) + 5
    tl.static_assert(x.dtype == DT)
    tl.store(out_ptr + offs, x)


@pytest.mark.parametrize("dt", ["int8", "uint16", "int32", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("kind", ["full", "full_const", "zeros", "zeros_like"])
def test_full_zeros(dt, kind):
    out = np.full(32, 99, storage(dt))
    full_kernel[(1,)](out, 5, 32, TL[dt], kind)
    np.testing.assert_array_equal(out, np.full(32, 3 if kind == "full_const" else 5, dt))


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


@pytest.mark.parametrize("dt", ALL)
def test_load_store_every_dtype(dt):
    rng = np.random.default_rng(1)
    x = rand_values(dt, 100, rng)
    y = np.zeros_like(x)
    copy_kernel[(4,)](x, y, 100, BLOCK=32)
    np.testing.assert_array_equal(y, x)


@triton.jit
def masked_other_kernel(x_ptr, y_ptr, n, OTHER: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=OTHER)
    tl.store(y_ptr + offs, x)


@pytest.mark.parametrize("dt", ["int8", "int32", "uint64", "float16", "float32"])
@pytest.mark.parametrize("n", [0, 5, 31, 32])
def test_masked_load_other(dt, n):
    x = np.arange(1, 33).astype(dt)
    y = np.zeros(32, dt)
    masked_other_kernel[(1,)](x, y, n, 7, BLOCK=32)
    np.testing.assert_array_equal(y, np.where(np.arange(32) < n, x, 7).astype(dt))


@triton.jit
def mask_store_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x * 2, mask=(x % 3) == 0)


def test_data_dependent_store_mask():
    x = np.arange(64, dtype=np.int32)
    y = np.full(64, -1, np.int32)
    mask_store_kernel[(1,)](x, y, BLOCK=64)
    np.testing.assert_array_equal(y, np.where(x % 3 == 0, x * 2, -1))


@triton.jit
def tile_2d_kernel(x_ptr, y_ptr, M, N, sxm, sxn, sym, syn,
                   BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * sxm + rn[None, :] * sxn, mask=mask, other=0.0)
    x = x + rm[:, None].to(tl.float32) * 1000.0 + rn[None, :]
    tl.store(y_ptr + rm[:, None] * sym + rn[None, :] * syn, x, mask=mask)


@pytest.mark.parametrize("M,N", [(16, 16), (37, 21), (5, 70)])
@pytest.mark.parametrize("transposed_in", [False, True])
def test_2d_tiles_strided(M, N, transposed_in):
    rng = np.random.default_rng(0)
    base = rng.standard_normal((N, M) if transposed_in else (M, N)).astype(np.float32)
    x = base.T if transposed_in else base      # a non-contiguous view for the transposed case
    y = np.full((M, N + 3), np.nan, np.float32)  # padded rows: row stride != N
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
    sx = [s // 4 for s in x.strides]
    sy = [s // 4 for s in y.strides]
    # numpy views keep their data pointer; pass the base array and strides
    tile_2d_kernel[grid](base, y, M, N, sx[0], sx[1], sy[0], sy[1], BM=16, BN=16)
    ref = x + np.arange(M)[:, None] * 1000.0 + np.arange(N)[None, :]
    np.testing.assert_allclose(y[:, :N], ref, rtol=1e-6)
    assert np.isnan(y[:, N:]).all()


@triton.jit
def strided_kernel(x_ptr, y_ptr, STRIDE: tl.constexpr, OFF: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + OFF + offs * STRIDE)
    tl.store(y_ptr + (BLOCK - 1 - offs), v)   # reversed scatter


@pytest.mark.parametrize("stride,off", [(1, 0), (2, 1), (3, 5), (17, 2)])
def test_strided_gather_scatter(stride, off):
    x = np.arange(32 * stride + off, dtype=np.int64) * 3
    y = np.zeros(32, np.int64)
    strided_kernel[(1,)](x, y, stride, off, BLOCK=32)
    np.testing.assert_array_equal(y, x[off::stride][:32][::-1])


@triton.jit
def scalar_kernel(x_ptr, out_ptr, a, b, f):
    v = tl.load(x_ptr + 3)
    tl.store(out_ptr, v * a + b)
    tl.store(out_ptr + 1, (f * 2).to(tl.int64))
    tl.store(out_ptr + 2, tl.to_tensor(7) + a)


def test_scalar_args_and_scalar_load():
    x = np.arange(8, dtype=np.int64) * 10
    out = np.zeros(3, np.int64)
    scalar_kernel[(1,)](x, out, 3, -4, 2.75)
    np.testing.assert_array_equal(out, [30 * 3 - 4, 5, 10])


@triton.jit
def ptr_arith_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    p = x_ptr + 4
    p = p - 2
    offs = tl.arange(0, BLOCK)
    ptrs = p + offs
    ptrs += 1
    tl.store(y_ptr + offs, tl.load(ptrs))


def test_pointer_arithmetic():
    x = np.arange(40, dtype=np.float64)
    y = np.zeros(16)
    ptr_arith_kernel[(1,)](x, y, BLOCK=16)
    np.testing.assert_array_equal(y, x[3:19])


@triton.jit
def block_3d_kernel(x_ptr, y_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    offs = a * (B * C) + b * C + c
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x * 2 + a + 10 * b + 100 * c)


def test_3d_block():
    x = np.arange(2 * 4 * 8, dtype=np.int32).reshape(2, 4, 8)
    y = np.zeros_like(x)
    block_3d_kernel[(1,)](x, y, 2, 4, 8)
    a, b, c = np.meshgrid(np.arange(2), np.arange(4), np.arange(8), indexing="ij")
    np.testing.assert_array_equal(y, x * 2 + a + 10 * b + 100 * c)


@pytest.mark.parametrize("dt", INTS)
def test_int_scalar_arg_types(dt):
    # each integer array type goes through a pointer argument; the scalar n is an int
    x = np.arange(10).astype(dt)
    y = np.zeros(10, dt)
    copy_kernel[(1,)](x, y, 10, BLOCK=16)
    np.testing.assert_array_equal(x, y)
