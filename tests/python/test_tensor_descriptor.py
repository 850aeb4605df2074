"""Tensor descriptors: tl.make_tensor_descriptor inside kernels and
TensorDescriptor arguments, with desc.load / store / atomic_add lowered to
masked pointer-block accesses. CPU end-to-end against numpy (in- and
out-of-bounds blocks, ranks 1-5, host and device descriptors, `.T` into
tl.dot, atomics); compile-only for sm_90 (a descriptor matmul and attention
take the tensor memory access or cp.async path, and wgmma; descriptors over
values the kernel computes get maps made in the kernel, see also
test_grouped_gemm_tma.py); tutorial 06's attention structure on the GPU
against torch."""
import math
import os
import re
import shutil

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource
from ctriton.tools.tensor_descriptor import TensorDescriptor
from cpu_util import cpu_driver, requires_cpu  # noqa: F401
from ptx_util import ptx_loops

PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))


def _padded(rows, cols, cols_alloc, dtype, rng):
    """A [rows, cols_alloc] array whose first cols columns are the tensor (the
    rest is padding the descriptor must neither read nor write)."""
    a = (rng.standard_normal((rows, cols_alloc)) * 4).astype(dtype)
    return a


def _block_ref(src, shape, offs, block, fill=0):
    """numpy model of a descriptor load: the block at offs, zero (fill)
    outside [0, shape)."""
    out = np.full(block, fill, dtype=src.dtype)
    idx = np.indices(block).reshape(len(block), -1).T
    for e in idx:
        g = [o + i for o, i in zip(offs, e)]
        if all(0 <= x < s for x, s in zip(g, shape)):
            out[tuple(e)] = src[tuple(g)]
    return out


# -- device-side descriptors: load and store, 2-D ---------------------------

@triton.jit
def copy2d_kernel(in_ptr, out_ptr, M, N, LD, OFF_M, OFF_N, BM: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(in_ptr, shape=[M, N], strides=[LD, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, [M, N], [LD, 1], [BM, BN])
    pm = tl.program_id(0) * BM + OFF_M
    pn = tl.program_id(1) * BN + OFF_N
    x = src.load([pm, pn])
    dst.store([pm, pn], x + 1)


@requires_cpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int8"])
@pytest.mark.parametrize("bm,bn", [(8, 16), (16, 32), (1, 64), (32, 16)])
def test_device_load_store_2d(dtype, bm, bn):
    """Blocks tiling a 37x45 tensor (partial blocks at the edges) and a grid
    shifted by (-3, -5): out-of-bounds reads are zero, out-of-bounds writes
    (including the padding columns past N inside the allocation) dropped."""
    rng = np.random.default_rng(0)
    M, N, LD = 37, 45, 64
    a = _padded(M, N, LD, dtype, rng)
    for off_m, off_n in [(0, 0), (-3, -5)]:
        out = np.full((M, LD), 7, dtype=dtype)
        gm, gn = triton.cdiv(M - off_m, bm), triton.cdiv(N - off_n, bn)
        copy2d_kernel[(gm, gn)](a, out, M, N, LD, off_m, off_n, bm, bn)
        ref = np.full((M, LD), 7, dtype=dtype)
        ref[:, :N] = a[:, :N] + 1
        np.testing.assert_array_equal(out, ref)


@triton.jit
def load_block_kernel(in_ptr, out_ptr, M, N, LD, OM, ON, BM: tl.constexpr, BN: tl.constexpr,
                      PAD: tl.constexpr):
    src = tl.make_tensor_descriptor(in_ptr, shape=[M, N], strides=[LD, 1], block_shape=[BM, BN],
                                    padding_option=PAD)
    x = src.load([OM, ON])
    r = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + r, x)


@requires_cpu
@pytest.mark.parametrize("om,on", [(0, 0), (-4, 0), (0, -16), (30, 40), (-8, -16), (40, 0), (5, 7)])
@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_device_load_out_of_bounds(om, on, pad):
    """One block at offsets inside, across every edge, and wholly outside:
    elements outside [0, shape) read as the padding (zero or NaN)."""
    rng = np.random.default_rng(1)
    M, N, LD, BM, BN = 33, 50, 64, 8, 16
    a = _padded(M, N, LD, "float32", rng)
    out = np.zeros((BM, BN), np.float32)
    load_block_kernel[(1,)](a, out, M, N, LD, om, on, BM, BN, pad)
    ref = _block_ref(a, (M, N), (om, on), (BM, BN), fill=np.nan if pad == "nan" else 0)
    np.testing.assert_array_equal(out, ref)


# -- 3-D and ranks 1..5 ---------------------------------------------------------

@triton.jit
def copy3d_kernel(in_ptr, out_ptr, A, B, C, S0, S1, BA: tl.constexpr, BB: tl.constexpr,
                  BC: tl.constexpr):
    src = tl.make_tensor_descriptor(in_ptr, [A, B, C], [S0, S1, 1], [BA, BB, BC])
    dst = tl.make_tensor_descriptor(out_ptr, [A, B, C], [S0, S1, 1], [BA, BB, BC])
    o = [tl.program_id(0) * BA - 1, tl.program_id(1) * BB, tl.program_id(2) * BC]
    dst.store(o, src.load(o) * 2)


@requires_cpu
def test_device_load_store_3d():
    rng = np.random.default_rng(2)
    A, B, C, CA = 5, 7, 21, 32
    a = rng.standard_normal((A, B, CA)).astype(np.float32)
    out = np.full_like(a, -1)
    BA, BB, BC = 2, 4, 16
    copy3d_kernel[(triton.cdiv(A + 1, BA), triton.cdiv(B, BB), triton.cdiv(C, BC))](
        a, out, A, B, C, B * CA, CA, BA, BB, BC)
    ref = np.full_like(a, -1)
    ref[:, :, :C] = a[:, :, :C] * 2
    np.testing.assert_array_equal(out, ref)


@triton.jit
def nd_kernel(in_ptr, out_ptr, shape, strides, offs, BLOCK: tl.constexpr, NUMEL: tl.constexpr):
    src = tl.make_tensor_descriptor(in_ptr, shape, strides, BLOCK)
    x = src.load(offs)
    tl.store(out_ptr + tl.arange(0, NUMEL), x.reshape(NUMEL))


@requires_cpu
@pytest.mark.parametrize("ndim", [1, 2, 3, 4, 5])
def test_device_load_nd(ndim):
    """Ranks 1-5, shapes and strides as tuple arguments, one block reaching
    past the end of every dim."""
    rng = np.random.default_rng(3)
    shape = (2, 3, 3, 5, 20)[-ndim:]
    alloc = shape[:-1] + (32,)
    a = rng.standard_normal(alloc).astype(np.float32)
    strides = tuple(s // 4 for s in a.strides)
    block = (2, 2, 4, 4, 16)[-ndim:]
    offs = (1, 2, 1, 3, 8)[-ndim:]
    numel = int(np.prod(block))
    out = np.zeros(numel, np.float32)
    nd_kernel[(1,)](a, out, shape, strides, offs, block, numel)
    ref = _block_ref(a, shape, offs, block)
    np.testing.assert_array_equal(out.reshape(block), ref)


# -- host-side TensorDescriptor arguments ---------------------------------------

@triton.jit
def host_copy_kernel(d_in, d_out, SHIFT):
    BM: tl.constexpr = d_in.block_shape[0]
    BN: tl.constexpr = d_in.block_shape[1]
    pm = tl.program_id(0) * BM
    pn = tl.program_id(1) * BN
    x = d_in.load([pm + SHIFT, pn])
    d_out.store([pm, pn], x.to(d_out.dtype) * 3)


@requires_cpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "int16"])
def test_host_descriptor_2d(dtype):
    """A TensorDescriptor of a numpy array: base, shape and strides become
    kernel parameters; its block shape (changed between launches, as
    autotuner pre-hooks do) selects the compiled variant."""
    rng = np.random.default_rng(4)
    M, N = 40, 48
    a = (rng.standard_normal((M, N)) * 8).astype(dtype)
    d_in = TensorDescriptor.from_tensor(a, [1, 1])
    assert d_in.strides == [N, 1] and list(d_in.shape) == [M, N]
    n0 = len(host_copy_kernel.cache)
    for bm, bn in [(16, 16), (8, 32)]:
        out = np.zeros((M, N), dtype)
        d_in.block_shape = [bm, bn]
        d_out = TensorDescriptor(out, [M, N], [N, 1], [bm, bn])
        host_copy_kernel[(triton.cdiv(M, bm), triton.cdiv(N, bn))](d_in, d_out, -2)
        ref = np.zeros((M, N), dtype)
        ref[2:] = a[:-2] * 3
        np.testing.assert_array_equal(out, ref)
    assert len(host_copy_kernel.cache) == n0 + 2


@triton.jit
def host3d_kernel(d_in, d_out):
    b = tl.program_id(0)
    x = d_in.load([b, 0, 0])
    d_out.store([b, 0, 0], x + 1)


@requires_cpu
def test_host_descriptor_3d_and_padding_columns():
    """A 3-D descriptor over a sliced view: shape smaller than the
    allocation, so the block's last columns are outside and stay untouched."""
    rng = np.random.default_rng(5)
    full = rng.standard_normal((3, 8, 32)).astype(np.float32)
    view = full[:, :6, :20]
    out_full = np.zeros_like(full)
    d_in = TensorDescriptor(full, [3, 6, 20], [8 * 32, 32, 1], [1, 8, 32])
    d_out = TensorDescriptor(out_full, [3, 6, 20], [8 * 32, 32, 1], [1, 8, 32])
    host3d_kernel[(3,)](d_in, d_out)
    ref = np.zeros_like(full)
    ref[:, :6, :20] = view + 1
    np.testing.assert_array_equal(out_full, ref)


def test_host_descriptor_checks():
    a = np.zeros((16, 16), np.float32)
    with pytest.raises(ValueError, match="power of 2"):
        TensorDescriptor.from_tensor(a, [16, 12])
    with pytest.raises(ValueError, match="contiguous"):
        TensorDescriptor(a, [16, 8], [16, 2], [16, 8])
    with pytest.raises(ValueError, match="16-byte"):
        TensorDescriptor(a, [16, 15], [15, 1], [16, 16])
    with pytest.raises(ValueError):
        TensorDescriptor(np.zeros(16, np.int32), [16], [1], [16], padding="nan")


# -- isinstance, helpers, returned and loop-carried descriptors ------------------

@triton.jit
def _maybe_make_desc(desc_or_ptr, shape, strides, block_shape):
    if isinstance(desc_or_ptr, tl.tensor_descriptor):
        return desc_or_ptr
    else:
        return tl.make_tensor_descriptor(desc_or_ptr, shape, strides, block_shape)


@triton.jit
def _scale_block(desc, off, s):
    return desc.load([off, 0]) * s


@triton.jit
def maybe_desc_kernel(x, y, M, BM: tl.constexpr, D: tl.constexpr, IS_DESC: tl.constexpr):
    x = _maybe_make_desc(x, [M, D], [D, 1], [BM, D])
    y = _maybe_make_desc(y, [M, D], [D, 1], [BM, D])
    tl.static_assert(isinstance(x, tl.tensor_descriptor) and not isinstance(M, tl.tensor_descriptor))
    tl.static_assert(isinstance(x, tl.tensor_descriptor_base))
    tl.static_assert(x.block_shape == (BM, D) or x.block_shape == [BM, D])
    tl.static_assert(len(x.shape) == 2 and len(x.strides) == 2)
    off = tl.program_id(0) * BM
    y.store([off, 0], _scale_block(x, off, 2.0).to(y.dtype))


@requires_cpu
@pytest.mark.parametrize("host", [False, True])
def test_isinstance_and_helpers(host):
    """Tutorial 06's _maybe_make_tensor_desc: a descriptor argument passes
    through, a pointer becomes a descriptor; descriptors go into and come
    out of @jit helpers."""
    rng = np.random.default_rng(6)
    M, D, BM = 50, 16, 16
    a = rng.standard_normal((M, D)).astype(np.float32)
    out = np.zeros_like(a)
    if host:
        x = TensorDescriptor.from_tensor(a, [BM, D])
        y = TensorDescriptor.from_tensor(out, [BM, D])
    else:
        x, y = a, out
    maybe_desc_kernel[(triton.cdiv(M, BM),)](x, y, M, BM, D, host)
    np.testing.assert_array_equal(out, a * 2)


@triton.jit
def loop_carried_kernel(a_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    desc = tl.make_tensor_descriptor(a_ptr, [M, N], [N, 1], [BM, BN])
    acc = tl.zeros([BM, BN], tl.float32)
    for i in range(tl.cdiv(M, BM)):
        acc += desc.load([i * BM, 0])
        desc = tl.make_tensor_descriptor(a_ptr, [M, N], [N, 1], [BM, BN])
    o = tl.make_tensor_descriptor(out_ptr, [BM, BN], [BN, 1], [BM, BN])
    o.store([0, 0], acc)


@requires_cpu
def test_loop_carried_descriptor():
    rng = np.random.default_rng(7)
    M, N, BM, BN = 37, 16, 8, 16
    a = rng.standard_normal((M, N)).astype(np.float32)
    out = np.zeros((BM, BN), np.float32)
    loop_carried_kernel[(1,)](a, out, M, N, BM, BN)
    pad = np.zeros((triton.cdiv(M, BM) * BM, N), np.float32)
    pad[:M] = a
    np.testing.assert_allclose(out, pad.reshape(-1, BM, N).sum(0), rtol=1e-5, atol=1e-5)


# -- .T of a loaded block into tl.dot (tutorial 09's B operand) -----------------

@triton.jit
def matmul_desc_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    offs_am = tl.program_id(0) * BM
    offs_bn = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for ki in range(tl.cdiv(K, BK)):
        a = a_desc.load([offs_am, ki * BK])
        b = b_desc.load([offs_bn, ki * BK])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([offs_am, offs_bn], acc.to(c_desc.dtype))


@triton.jit
def matmul_host_desc_kernel(a_desc, b_desc, c_desc, K, BK: tl.constexpr):
    BM: tl.constexpr = a_desc.block_shape[0]
    BN: tl.constexpr = b_desc.block_shape[0]
    offs_am = tl.program_id(0) * BM
    offs_bn = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for ki in range(tl.cdiv(K, BK)):
        a = a_desc.load([offs_am, ki * BK])
        b = b_desc.load([offs_bn, ki * BK])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([offs_am, offs_bn], acc.to(c_desc.dtype))


@requires_cpu
@pytest.mark.parametrize("host", [False, True])
def test_matmul_transposed_operand(host):
    """C = A @ B.T with B stored [N, K]; M, N, K not multiples of the block
    (the K tail reads zeros), fp16 inputs, fp32 accumulation."""
    rng = np.random.default_rng(8)
    M, N, K = 50, 40, 72
    BM, BN, BK = 32, 16, 32
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    if host:
        matmul_host_desc_kernel[grid](TensorDescriptor.from_tensor(a, [BM, BK]),
                                      TensorDescriptor.from_tensor(b, [BN, BK]),
                                      TensorDescriptor.from_tensor(c, [BM, BN]), K, BK)
    else:
        matmul_desc_kernel[grid](a, b, c, M, N, K, BM, BN, BK)
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-2, atol=2e-2)


def _ttir(kernel, sig, cx, attrs=None):
    sig = dict(sig)
    sig.update({k: "constexpr" for k in cx})
    k = triton.compile(ASTSource(kernel, sig, cx, attrs or {}), target=GPUTarget("cpu", 0, 1))
    return k.asm["ct.ttir"]


@triton.jit
def mixed_use_kernel(a_ptr, o_ptr, M, B: tl.constexpr):
    d = tl.make_tensor_descriptor(a_ptr, [M, M], [M, 1], [B, B])
    x = d.load([0, 0])
    o = tl.make_tensor_descriptor(o_ptr, [M, M], [M, 1], [B, B])
    o.store([0, 0], x.T + x)


@requires_cpu
def test_transposed_and_plain_use():
    a = np.arange(20 * 20, dtype=np.float32).reshape(20, 20)
    out = np.zeros_like(a)
    mixed_use_kernel[(1,)](a, out, 20, 16)
    ref = np.zeros_like(a)
    ref[:16, :16] = a[:16, :16].T + a[:16, :16]
    np.testing.assert_array_equal(out, ref)
    ttir = _ttir(mixed_use_kernel, {"a_ptr": "*fp32", "o_ptr": "*fp32", "M": "i32"}, dict(B=16))
    assert ttir.count("= load ") == 1 and " trans " in ttir


def test_transposed_load_is_a_load_of_the_transposed_block():
    """`desc.load(o).T` with no other use is one load of the [BK, BN] block
    (contiguous along dim 0), no trans; a block also used untransposed keeps
    its load and the trans."""
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
    ttir = _ttir(matmul_desc_kernel, sig, dict(BM=32, BN=16, BK=32))
    assert " trans " not in ttir and ttir.count("= load ") == 2
    assert "load" in ttir and "block<32x16xf16>" in ttir


# -- atomic_add --------------------------------------------------------------------

@triton.jit
def atomic_desc_kernel(out_ptr, val_ptr, M, N, LD, BM: tl.constexpr, BN: tl.constexpr):
    d = tl.make_tensor_descriptor(out_ptr, [M, N], [LD, 1], [BM, BN])
    v = tl.load(val_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :])
    # every program adds the same block at an overlapping, shifted position
    d.atomic_add([tl.program_id(0) * 4 - 4, tl.program_id(1) * 8 - 8], v)


@requires_cpu
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_atomic_add(dtype):
    rng = np.random.default_rng(9)
    M, N, LD, BM, BN = 10, 20, 32, 8, 16
    v = (rng.standard_normal((BM, BN)) * 10).astype(dtype)
    out = np.ones((M, LD), dtype)
    gm, gn = 4, 3
    atomic_desc_kernel[(gm, gn)](out, v, M, N, LD, BM, BN)
    ref = np.ones((M, LD), dtype).astype(np.float64)
    for pm in range(gm):
        for pn in range(gn):
            om, on = pm * 4 - 4, pn * 8 - 8
            for i in range(BM):
                for j in range(BN):
                    if 0 <= om + i < M and 0 <= on + j < N:
                        ref[om + i, on + j] += v[i, j]
    np.testing.assert_allclose(out, ref.astype(dtype), rtol=1e-5, atol=1e-4)


# -- gather / scatter (rows by index) and reductions -------------------------------

@triton.jit
def gather_kernel(out_ptr, in_ptr, idx_ptr, y, X, Y, LD, BX: tl.constexpr, BY: tl.constexpr):
    idx = tl.load(idx_ptr + tl.arange(0, BX))
    desc = tl.make_tensor_descriptor(in_ptr, [X, Y], [LD, 1], [1, BY])
    out = desc.gather(idx, y)
    tl.store(out_ptr + tl.arange(0, BX)[:, None] * BY + tl.arange(0, BY)[None, :], out)


@triton.jit
def scatter_kernel(out_ptr, in_ptr, idx_ptr, y, X, Y, LD, BX: tl.constexpr, BY: tl.constexpr):
    idx = tl.load(idx_ptr + tl.arange(0, BX))
    data = tl.load(in_ptr + tl.arange(0, BX)[:, None] * BY + tl.arange(0, BY)[None, :])
    desc = tl.make_tensor_descriptor(out_ptr, [X, Y], [LD, 1], [1, BY])
    desc.scatter(data, idx, y)


@requires_cpu
@pytest.mark.parametrize("y", [0, 8, 20])
def test_gather_scatter_rows(y):
    """desc.gather(rows, y) / desc.scatter(v, rows, y): rows outside [0, X)
    (negative or past the end) and columns past Y read zero / are dropped."""
    rng = np.random.default_rng(10)
    X, Y, LD, BX, BY = 20, 30, 32, 16, 16
    a = rng.standard_normal((X, LD)).astype(np.float32)
    idx = np.array([3, 0, 19, -1, 20, 7, 7, 12, 100, 5, 1, 2, 18, -5, 9, 10], np.int32)
    out = np.zeros((BX, BY), np.float32)
    gather_kernel[(1,)](out, a, idx, y, X, Y, LD, BX, BY)
    ref = np.zeros((BX, BY), np.float32)
    for i, r in enumerate(idx):
        for j in range(BY):
            if 0 <= r < X and y + j < Y:
                ref[i, j] = a[r, y + j]
    np.testing.assert_array_equal(out, ref)
    perm = np.array([3, 0, 19, -1, 20, 7, 6, 12, 100, 5, 1, 2, 18, -5, 9, 10], np.int32)
    data = rng.standard_normal((BX, BY)).astype(np.float32)
    dst = np.full((X, LD), 9, np.float32)
    scatter_kernel[(1,)](dst, data, perm, y, X, Y, LD, BX, BY)
    ref = np.full((X, LD), 9, np.float32)
    for i, r in enumerate(perm):
        for j in range(BY):
            if 0 <= r < X and y + j < Y:
                ref[r, y + j] = data[i, j]
    np.testing.assert_array_equal(dst, ref)


@triton.jit
def reduce_kernel(out_ptr, val_ptr, KIND: tl.constexpr, B: tl.constexpr):
    d = tl.make_tensor_descriptor(out_ptr, [B, B], [B, 1], [B, B])
    v = tl.load(val_ptr + tl.arange(0, B)[:, None] * B + tl.arange(0, B)[None, :])
    if KIND == "min":
        d.atomic_min([0, 0], v)
    elif KIND == "max":
        d.atomic_max([0, 0], v)
    elif KIND == "and":
        d.atomic_and([0, 0], v)
    elif KIND == "or":
        d.atomic_or([0, 0], v)
    else:
        d.atomic_xor([0, 0], v)


@requires_cpu
@pytest.mark.parametrize("kind", ["min", "max", "and", "or", "xor"])
def test_reduce_int(kind):
    rng = np.random.default_rng(11)
    v = rng.integers(-1000, 1000, (16, 16)).astype(np.int32)
    out = rng.integers(-1000, 1000, (16, 16)).astype(np.int32)
    ref = {"min": np.minimum, "max": np.maximum, "and": np.bitwise_and, "or": np.bitwise_or,
           "xor": np.bitwise_xor}[kind](out, v)
    reduce_kernel[(1,)](out, v, kind, 16)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("kind,dt", [("min", "*fp16"), ("max", "*bf16"), ("and", "*fp32"), ("xor", "*i8")])
def test_reduce_unsupported_dtype(kind, dt):
    """Triton's dtype rules for descriptor reductions (16-bit float min/max
    exist only as sm_90 TMA reductions, which ctriton does not emit)."""
    with pytest.raises(triton.CompilationError, match="unsupported dtype"):
        _ttir(reduce_kernel, {"out_ptr": dt, "val_ptr": dt}, dict(KIND=kind, B=16))


# -- errors --------------------------------------------------------------------------

@triton.jit
def _annotated(v: tl.constexpr, n: tl.constexpr):
    return v + tl.arange(0, n)


@triton.jit
def annotated_kernel(x_ptr, k, N: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, N), _annotated(k, N))


@triton.jit
def annotated_bad_kernel(x_ptr, k, N: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, N), _annotated(N, k))


@requires_cpu
def test_callee_constexpr_annotation_takes_a_tensor():
    """A tensor given to a callee parameter annotated tl.constexpr is bound
    as the tensor (Triton ignores callee annotations); a use that needs a
    constant is the error."""
    out = np.zeros(16, np.int32)
    annotated_kernel[(1,)](out, 5, 16)
    np.testing.assert_array_equal(out, np.arange(16) + 5)
    with pytest.raises(triton.CompilationError, match="arange"):
        _ttir(annotated_bad_kernel, {"x_ptr": "*i32", "k": "i32"}, dict(N=16))


@triton.jit
def bad_kernel(p, M, CASE: tl.constexpr):
    if CASE == 0:
        d = tl.make_tensor_descriptor(p, [M, M], [M, 1], [16, 12])
    elif CASE == 1:
        d = tl.make_tensor_descriptor(p, [M, M], [M, 2], [16, 16])
    elif CASE == 2:
        d = tl.make_tensor_descriptor(p, [M, M], [M], [16, 16])
    elif CASE == 3:
        d = tl.make_tensor_descriptor(p, [M, M], [M, 1], [16, 2])
    else:
        d = tl.make_tensor_descriptor(p, [M, M], [M, 1], [16, 16])
    if CASE == 4:
        d.store([0, 0], tl.zeros([16, 8], tl.float32))
    elif CASE == 5:
        d.load([0])
    else:
        d.load([0, 0])


@pytest.mark.parametrize("case,msg", [(0, "power of 2"), (1, "last dim must be 1"),
                                      (2, "Expected 2 strides"), (3, "at least 16 bytes"),
                                      (4, "block shape"), (5, "expected 2 offsets")])
def test_errors(case, msg):
    with pytest.raises(triton.CompilationError, match=msg):
        _ttir(bad_kernel, {"p": "*fp32", "M": "i32"}, dict(CASE=case))


# -- sm_90: descriptors take the cp.async + wgmma path -----------------------------

@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_sm90_matmul_descriptor_pipelined():
    """Tutorial 09's descriptor matmul (A [M, K], B [N, K] loaded and
    transposed) on sm_90a: descriptors made in the kernel from parameters,
    so the launch encodes their tensor maps (the plan says where base,
    shape and stride come from) and both tiles go through the tensor memory
    access unit into the stage buffers; warpgroup MMA, no spills."""
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
    cx = dict(BM=128, BN=128, BK=64)
    sig.update({k: "constexpr" for k in cx})
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(6)}
    k = triton.compile(ASTSource(matmul_desc_kernel, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 4, "num_stages": 3})
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    assert ttgir.count("tma_copy ") == 6  # 2 tiles ahead + 1 in the loop, A and B
    assert "wgmma.mma_async" in ptx and "cp.async.bulk.tensor.2d" in ptx
    assert "ldmatrix" not in ptx and "cp.async.cg" not in ptx
    # A: base a_ptr (param 0), shape (M, K) = params 3, 5, stride K; B: b_ptr, (N, K), K.
    # C is stored by pointers: a launch-encoded map would need its row stride a
    # multiple of 16 bytes, which plain stores do not (only TensorDescriptor
    # arguments' stores go through the unit: analysis/tmastore.c)
    plan = sorted(t[7:] for t in k.metadata.tma if t[6])
    assert plan == [(0, 1, 3, 1, 5, 1, 5), (1, 1, 4, 1, 5, 1, 5)]
    assert "tma_store " not in ttgir and " store " in ttgir
    assert all(t[0] == -1 for t in k.metadata.tma)
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"


@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, dtype: tl.constexpr, start_m, qk_scale,
                    BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr,
                    STAGE: tl.constexpr, offs_m: tl.constexpr, offs_n: tl.constexpr, N_CTX: tl.constexpr,
                    WS: tl.constexpr):
    # (as upstream: offs_m, offs_n and N_CTX are annotated tl.constexpr but
    # given tensors; Triton ignores a callee's annotations)
    if STAGE == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif STAGE == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
        lo = tl.multiple_of(lo, BLOCK_M)
    else:
        lo, hi = 0, N_CTX
    offsetk_y = offset_y + lo
    offsetv_y = offset_y + lo
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WS):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([offsetk_y, 0]).T
        qk = tl.dot(q, k)
        if STAGE == 2:
            mask = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(mask, 0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk -= m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_ij = tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([offsetv_y, 0])
        p = p.to(dtype)
        acc = tl.dot(p, v, acc)
        l_i = l_i * alpha + l_ij
        m_i = m_ij
        offsetk_y += BLOCK_N
        offsetv_y += BLOCK_N
    return acc, l_i, m_i


@triton.jit
def attn_fwd_desc(sm_scale, M, Z, H, desc_q, desc_k, desc_v, desc_o, N_CTX,
                  HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  STAGE: tl.constexpr, WS: tl.constexpr = False):
    """Upstream tutorial 06's forward kernel structure (fp16; its loops warp
    specialized when WS), descriptors made inside or passed in."""
    dtype = tl.float16
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    y_dim = Z * H * N_CTX
    desc_q = _maybe_make_desc(desc_q, [y_dim, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    desc_v = _maybe_make_desc(desc_v, [y_dim, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    desc_k = _maybe_make_desc(desc_k, [y_dim, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    desc_o = _maybe_make_desc(desc_o, [y_dim, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    offset_y = off_z * (N_CTX * H) + off_h * N_CTX
    qo_offset_y = offset_y + start_m * BLOCK_M
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale
    qk_scale *= 1.44269504
    q = desc_q.load([qo_offset_y, 0])
    if STAGE & 1:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, dtype, start_m,
                                        qk_scale, BLOCK_M, HEAD_DIM, BLOCK_N, 4 - STAGE, offs_m,
                                        offs_n, N_CTX, WS)
    if STAGE & 2:
        acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, dtype, start_m,
                                        qk_scale, BLOCK_M, HEAD_DIM, BLOCK_N, 2, offs_m, offs_n, N_CTX, WS)
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    m_ptrs = M + off_hz * N_CTX + offs_m
    tl.store(m_ptrs, m_i)
    desc_o.store([qo_offset_y, 0], acc.to(dtype))


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("stage", [1, 3])
def test_sm90_attention_descriptor_wgmma(stage):
    """The attention kernel with device-side descriptors on sm_90a: K (loaded
    [N, D] and transposed) and V through the tensor memory access unit (their
    shapes are products of parameters: the launch encodes the maps), both
    dots on wgmma."""
    sig = {"sm_scale": "fp32", "M": "*fp32", "Z": "i32", "H": "i32", "desc_q": "*fp16",
           "desc_k": "*fp16", "desc_v": "*fp16", "desc_o": "*fp16", "N_CTX": "i32"}
    cx = dict(HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64, STAGE=stage)
    sig.update({k: "constexpr" for k in cx})
    attrs = {n: {"divisibility": 16} for n in sig if sig[n] not in ("constexpr", "fp32")}
    k = triton.compile(ASTSource(attn_fwd_desc, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 4, "num_stages": 2})
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    assert " trans " not in k.asm["ct.ttir"]
    assert "tma_copy" in ttgir and "cp.async.bulk.tensor.2d" in ptx and "cp.async.cg.shared.global" not in ptx
    assert "tensormap.cp_fenceproxy" not in ptx and k.metadata.global_scratch_size == 0  # no map made
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" in ptx
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"


# -- GPU: tutorial 06's attention with descriptors against torch --------------------

@pytest.fixture
def torch_allocator():
    """Global scratch from torch (descriptors made in the kernel over values
    it computes need it on sm_90)."""
    import torch
    triton.set_allocator(lambda size, align, stream: torch.empty(size, device="cuda", dtype=torch.int8))
    yield
    triton.set_allocator(None)


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("host", [False, True])
def test_gpu_attention_descriptors(causal, host, torch_allocator):
    import torch
    Z, H, N_CTX, D = 2, 3, 256, 64
    BLOCK_M, BLOCK_N = 128, 64
    torch.manual_seed(0)
    q, k, v = (torch.randn((Z, H, N_CTX, D), device="cuda", dtype=torch.float16) for _ in range(3))
    sm_scale = 0.5
    o = torch.empty_like(q)
    M = torch.empty((Z, H, N_CTX), device="cuda", dtype=torch.float32)
    y_dim = Z * H * N_CTX
    if host:
        args = [TensorDescriptor(t, [y_dim, D], [D, 1], [bm, D])
                for t, bm in ((q, BLOCK_M), (k, BLOCK_N), (v, BLOCK_N), (o, BLOCK_M))]
    else:
        args = [q, k, v, o]
    grid = (triton.cdiv(N_CTX, BLOCK_M), Z * H)
    attn_fwd_desc[grid](sm_scale, M, Z, H, *args, N_CTX, HEAD_DIM=D, BLOCK_M=BLOCK_M,
                        BLOCK_N=BLOCK_N, STAGE=3 if causal else 1, num_warps=4, num_stages=2)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale)
    torch.testing.assert_close(o, ref, atol=2e-2, rtol=0)


@pytest.mark.gpu
@pytest.mark.parametrize("D,BM,BN,warps,stages", [(64, 128, 64, 4, 2), (64, 128, 128, 4, 3), (128, 128, 128, 4, 2),
                                                  (128, 128, 64, 8, 3), (64, 64, 64, 4, 3), (128, 64, 64, 4, 4)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("host", [True, False])
def test_gpu_attention_warp_specialized(D, BM, BN, warps, stages, causal, host):
    """The warp-specialized forms against torch: many iterations (each slot
    refilled several times, phases flipping), several heads and batches;
    causal takes a specialized first loop and a plain second one; host
    TensorDescriptors, or descriptors made in the kernel over the pointers
    (shape Z * H * N_CTX: the launch encodes their maps)."""
    import torch
    if causal and BN > BM:
        pytest.skip("causal needs BLOCK_N <= BLOCK_M")
    Z, H, N_CTX = 2, 3, 1024
    torch.manual_seed(1)
    q, k, v = (torch.randn((Z, H, N_CTX, D), device="cuda", dtype=torch.float16) for _ in range(3))
    sm_scale = 0.7
    o = torch.full_like(q, float("nan"))
    M = torch.empty((Z, H, N_CTX), device="cuda", dtype=torch.float32)
    y_dim = Z * H * N_CTX
    def descs(o):
        if not host:
            return [q, k, v, o]
        return [TensorDescriptor(t, [y_dim, D], [D, 1], [bm, D]) for t, bm in ((q, BM), (k, BN), (v, BN), (o, BM))]
    args = descs(o)
    grid = (triton.cdiv(N_CTX, BM), Z * H)
    kern = attn_fwd_desc[grid](sm_scale, M, Z, H, *args, N_CTX, HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN,
                               STAGE=3 if causal else 1, WS=True, num_warps=warps, num_stages=stages)
    assert "warp_specialize {" in kern.asm["ct.ttgir"]
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale)
    torch.testing.assert_close(o, ref, atol=2e-2, rtol=0)
    for _ in range(3):  # the same result every time (no race between producer and consumers)
        o2 = torch.full_like(q, float("nan"))
        args = descs(o2)
        attn_fwd_desc[grid](sm_scale, M, Z, H, *args, N_CTX, HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN,
                            STAGE=3 if causal else 1, WS=True, num_warps=warps, num_stages=stages)
        assert torch.equal(o2, o)


@pytest.mark.gpu
def test_gpu_matmul_descriptors():
    import torch
    torch.manual_seed(0)
    M, N, K = 300, 260, 200
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((N, K), device="cuda", dtype=torch.float16)
    c = torch.empty((M, N), device="cuda", dtype=torch.float16)
    BM, BN, BK = 128, 128, 64
    matmul_desc_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](a, b, c, M, N, K, BM, BN, BK,
                                                                  num_warps=4, num_stages=3)
    torch.testing.assert_close(c, (a.float() @ b.float().T).half(), atol=5e-2, rtol=1e-2)


# -- tutorial 08's form: shapes from memory, bounds of unknown divisibility ----------

@triton.jit
def matmul_sizes_desc_kernel(a_ptr, b_ptr, c_ptr, sizes, BM: tl.constexpr, BN: tl.constexpr,
                             BK: tl.constexpr):
    """Descriptors over shapes and leading dimensions read from memory (as
    upstream tutorial 08's grouped GEMM makes them): nothing is known of the
    bounds' divisibility, so the K tail's last vector of a row may be
    partly inside."""
    M = tl.load(sizes)
    N = tl.load(sizes + 1)
    K = tl.load(sizes + 2)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[tl.load(sizes + 3), 1],
                                       block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[tl.load(sizes + 4), 1],
                                       block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[tl.load(sizes + 5), 1],
                                       block_shape=[BM, BN])
    offs_am = tl.program_id(0) * BM
    offs_bn = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for ki in range(tl.cdiv(K, BK)):
        a = a_desc.load([offs_am, ki * BK])
        b = b_desc.load([offs_bn, ki * BK])
        acc = tl.dot(a, b.T, acc)
    c_desc.store([offs_am, offs_bn], acc.to(c_desc.dtype))


def _compile_sizes_desc(arch, warps=8):
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "sizes": "*i32"}
    cx = dict(BM=128, BN=128, BK=64)
    sig.update({k: "constexpr" for k in cx})
    attrs = {(i,): {"divisibility": 16} for i in range(4)}
    return triton.compile(ASTSource(matmul_sizes_desc_kernel, sig, cx, attrs),
                          target=GPUTarget("cuda", arch, 32), options={"num_warps": warps, "num_stages": 3})


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_sm90_unknown_bounds_take_made_maps():
    """Descriptors over sizes read from memory on sm_90: the kernel makes A's
    and B's maps and the tiles go through the tensor memory access unit,
    which zero-fills what lies past M, N or K. C is stored by pointers,
    masked at M and N (a store through a made map wrote past N on the
    H200)."""
    k = _compile_sizes_desc(90)
    ptx = k.asm["ptx"]
    assert "wgmma.mma_async" in ptx
    assert ptx.count("tensormap.cp_fenceproxy") == 2 and "cp.async.bulk.tensor.2d.shared::cluster" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" not in ptx
    assert "cp.async.cg.shared.global" not in ptx
    assert ptx.count("ld.global") <= 6, ptx.count("ld.global")  # the six sizes
    assert k.metadata.global_scratch_size == 256
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"



@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_sm90_made_map_store_opt_in(monkeypatch):
    """CTRITON_TMA_STORE_MADE=1: C's store goes through the map the kernel
    makes too (three maps, a tensor store), to be checked on a GPU
    (test_gpu_made_map_store) before it can be the default."""
    monkeypatch.setenv("CTRITON_TMA_STORE_MADE", "1")
    k = _compile_sizes_desc(90)
    ptx = k.asm["ptx"]
    assert ptx.count("tensormap.cp_fenceproxy") == 3
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == 2  # two 64-column boxes
    assert k.metadata.global_scratch_size == 384
    assert k.n_spills == 0

@triton.jit
def matmul_sizes_ptr_kernel(a_ptr, b_ptr, c_ptr, sizes, BM: tl.constexpr, BN: tl.constexpr,
                            BK: tl.constexpr):
    """matmul_sizes_desc_kernel's loads written with pointers and masks."""
    M = tl.load(sizes)
    N = tl.load(sizes + 1)
    K = tl.load(sizes + 2)
    lda = tl.multiple_of(tl.load(sizes + 3), 8)
    ldb = tl.multiple_of(tl.load(sizes + 4), 8)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for ki in range(tl.cdiv(K, BK)):
        rk = ki * BK + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * lda + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rn[None, :] * ldb + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        acc = tl.dot(a, b, acc)
    ldc = tl.load(sizes + 5)
    tl.store(c_ptr + rm[:, None] * ldc + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_sm90_unknown_bounds_take_zero_filling_copies():
    """A bound of unknown divisibility (K from memory) leaves the mask true on
    a prefix of each 16-byte run: the tiles still go through cp.async, each
    run's src-size the count of its elements inside (the rest zero-filled,
    as TMA fills out-of-bounds elements), instead of element-wise loads
    (137 scalar ld.global and 548 bytes of spills before)."""
    import re
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "sizes": "*i32"}
    cx = dict(BM=128, BN=128, BK=64)
    sig.update({k: "constexpr" for k in cx})
    attrs = {(i,): {"divisibility": 16} for i in range(4)}
    k = triton.compile(ASTSource(matmul_sizes_ptr_kernel, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 8, "num_stages": 3})
    ptx = k.asm["ptx"]
    assert "wgmma.mma_async" in ptx
    copies = re.findall(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16, %r\d+;", ptx)
    assert len(copies) >= 16, len(copies)
    assert ptx.count("ld.global") <= 6, ptx.count("ld.global")  # the sizes
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_sm80_unknown_bounds_compile():
    """sm_80 assembles it on mma.sync (its transposed B tile has no 4-byte
    runs along the rows cp.async needs there: the loop keeps the register
    prefetch)."""
    k = _compile_sizes_desc(80, warps=4)
    assert "mma.sync.aligned.m16n8k16" in k.asm["ptx"]


@pytest.mark.gpu
@pytest.mark.parametrize("K", [203, 64, 1])
@pytest.mark.parametrize("form", ["desc", "ptr"])
def test_gpu_unknown_bounds_zero_fill(K, form, torch_allocator):
    """The K tail on the GPU, through the maps the kernel makes (desc: the
    copy engine's zero fill) and through cp.async's partial vectors (ptr):
    the rows are padded to 16-byte multiples and the padding is NaN, so an
    element read past K (or a vector not zero-filled) poisons the result;
    C's padding columns must stay untouched."""
    import torch
    torch.manual_seed(0)
    M, N = 300, 260
    ld = (K + 7) // 8 * 8
    a = torch.full((M, ld), float("nan"), device="cuda", dtype=torch.float16)
    b = torch.full((N, ld), float("nan"), device="cuda", dtype=torch.float16)
    a[:, :K] = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b[:, :K] = torch.randn((N, K), device="cuda", dtype=torch.float16)
    ldc = 264
    c = torch.full((M, ldc), 7.0, device="cuda", dtype=torch.float16)
    sizes = torch.tensor([M, N, K, ld, ld, ldc], device="cuda", dtype=torch.int32)
    kernel = matmul_sizes_desc_kernel if form == "desc" else matmul_sizes_ptr_kernel
    kernel[(triton.cdiv(M, 128), triton.cdiv(N, 128))](a, b, c, sizes, 128, 128, 64, num_warps=8, num_stages=3)
    ref = (a[:, :K].float() @ b[:, :K].float().T).half()
    torch.testing.assert_close(c[:, :N], ref, atol=5e-2, rtol=1e-2)
    assert (c[:, N:] == 7.0).all()



@pytest.mark.gpu
@pytest.mark.parametrize("M,N,ldc", [(300, 260, 264), (256, 256, 256), (300, 256, 256), (256, 200, 208)])
def test_gpu_made_map_store(M, N, ldc, torch_allocator, monkeypatch):
    """C stored through the map the kernel makes (CTRITON_TMA_STORE_MADE=1).
    On the H200 such a store once wrote past C's columns: on a mismatch the
    message says which rows and columns are wrong or overwritten, so that a
    run finds the cause."""
    import torch
    monkeypatch.setenv("CTRITON_TMA_STORE_MADE", "1")
    torch.manual_seed(0)
    K = 192
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((N, K), device="cuda", dtype=torch.float16)
    c = torch.full((M, ldc), 7.0, device="cuda", dtype=torch.float16)
    sizes = torch.tensor([M, N, K, K, K, ldc], device="cuda", dtype=torch.int32)
    matmul_sizes_desc_kernel[(triton.cdiv(M, 128), triton.cdiv(N, 128))](a, b, c, sizes, 128, 128, 64,
                                                                        num_warps=8, num_stages=3)
    ref = (a.float() @ b.float().T).half()
    bad = (c[:, :N].float() - ref.float()).abs() > 5e-2 + 1e-2 * ref.float().abs()
    over = c[:, N:] != 7.0

    def where(mask):
        r, col = torch.nonzero(mask, as_tuple=True)
        return (f"{int(mask.sum())} elements, rows {r.min().item()}..{r.max().item()}, "
                f"columns {col.min().item()}..{col.max().item()}") if r.numel() else "none"
    assert not bad.any() and not over.any(), f"wrong: {where(bad)}; past N: {where(over)} (+{N})"

# -- host descriptors on sm_90: the tensor memory access unit -------------------------

def _host_desc_sig(nd=2):
    return ("*fp16", ("i32",) * nd, ("i32", "constexpr"))


def _host_desc_specs(cx, blocks):
    """What the launcher gives 2-D TensorDescriptor arguments i with block
    shape bs ((i, bs) in blocks): the block shape and zero padding and the
    unit last stride in cx, 16-divisible base, shape and leading stride as
    the returned attrs."""
    attrs = {}
    for i, bs in blocks:
        cx[(i, "tensordesc")] = (bs, "zero")
        cx[(i, 2, 1)] = 1
        for leaf in ((i, 0), (i, 1, 1), (i, 2, 0)):
            attrs[leaf] = {"divisibility": 16}
    return attrs


def _compile_attn_host(arch, D, BM, BN, warps, stages, stage=1, ws=False):
    """attn_fwd_desc with TensorDescriptor arguments (the signature and
    constexprs the launcher gives such arguments: the descriptor's block
    shape and padding under (index, "tensordesc"), its unit last stride)."""
    dt = _host_desc_sig()
    sig = {"sm_scale": "fp32", "M": "*fp32", "Z": "i32", "H": "i32", "desc_q": dt, "desc_k": dt,
           "desc_v": dt, "desc_o": dt, "N_CTX": "i32"}
    cx = dict(HEAD_DIM=D, BLOCK_M=BM, BLOCK_N=BN, STAGE=stage, WS=ws)
    sig.update({k: "constexpr" for k in cx})
    attrs = {(1,): {"divisibility": 16}}
    for i, bm in ((4, BM), (5, BN), (6, BN), (7, BM)):
        cx[(i, "tensordesc")] = ((bm, D), "zero")
        cx[(i, 2, 1)] = 1
        for leaf in ((i, 0), (i, 1, 1), (i, 2, 0)):
            attrs[leaf] = {"divisibility": 16}
    return triton.compile(ASTSource(attn_fwd_desc, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": warps, "num_stages": stages})


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("D,BM,BN,warps,stages,stage", [(64, 128, 64, 4, 2, 1), (64, 128, 64, 4, 3, 3),
                                                        (128, 128, 64, 8, 2, 3), (128, 128, 64, 4, 2, 3),
                                                        (128, 128, 64, 4, 3, 3)])
def test_sm90_host_descriptors_take_tma(D, BM, BN, warps, stages, stage):
    """TensorDescriptor arguments on sm_90: the K and V streams of the
    attention loop are copied by the tensor memory access unit
    (cp.async.bulk.tensor into the stage slots, mbarrier completion, one
    128-byte column block per box: two boxes a tile at D = 128, issued by
    warps 0 and 1), not by per-thread cp.async; each copy is issued by one
    lane elect.sync picks in a warp-uniform branch; the launch plan names the
    two tensor maps the loop uses (128-byte swizzle, 64 x BLOCK_N boxes) and
    leaves Q's and O's unused; zero spills."""
    k = _compile_attn_host(90, D, BM, BN, warps, stages, stage)
    ptx, ttgir = k.asm["ptx"], k.asm["ct.ttgir"]
    loops = 2 if stage == 3 else 1
    # per loop: the prologue's stages - 1 tiles and the one in the body, K and
    # V; one copy statement a tile (warp j copies column block j)
    copies = loops * stages * 2
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.tile") == copies
    assert ttgir.count("tma_copy ") == copies
    assert ptx.count("@!p bra.uni ct_tma_skip;\nelect.sync _|e, -1;") == copies
    assert ptx.count("@a mbarrier.arrive.expect_tx") == copies
    assert ptx.count("@e cp.async.bulk.tensor.2d.shared::cluster") == copies
    assert "mbarrier.try_wait.parity.shared::cta.b64" in ptx
    assert "mbarrier.init.shared::cta.b64" in ptx and "mbarrier.inval.shared::cta.b64" in ptx
    assert "cp.async.cg.shared.global" not in ptx
    assert ".param .align 64 .b8" in ptx  # the maps: 128-byte grid-constant parameters
    plan = {t[0]: t for t in k.metadata.tma}
    assert sorted(plan) == [4, 5, 6, 7]
    for i in (5, 6):
        assert plan[i][1:7] == (64, BN, 128, 6, 0, 1)
    assert plan[4][-1] == 0 and plan[7][-1] == 0
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("D,BM,BN,warps,stages,stage", [(64, 128, 64, 4, 3, 3), (128, 128, 64, 4, 2, 3),
                                                        (128, 128, 128, 8, 2, 1)])
def test_sm90_attention_loop_addresses_and_waits(D, BM, BN, warps, stages, stage):
    """The TMA attention loops' shared addresses, matrix descriptors and
    waits: slot, mbarrier and descriptor arithmetic is 32-bit (no 64-bit
    shift, sign extension or truncation of a shared address in the loop);
    every wgmma takes its tile's descriptor plus a constant added in its own
    statement (so a loop-invariant Q's descriptors are not hoisted out of
    the loop as registers); the Q @ K^T wait ties both dots' registers
    through one wait_group 0, and the copies' wait_group 1 (only P @ V
    committed since) is not emitted: one wait a loop."""
    k = _compile_attn_host(90, D, BM, BN, warps, stages, stage)
    ptx = k.asm["ptx"]
    loops = [b for b in ptx_loops(ptx) if "wgmma.mma_async" in b]
    assert len(loops) == (2 if stage == 3 else 1)
    for body in loops:
        for bad in ("shr.u64", "cvt.s64.s32", "cvt.u32.u64", "shl.b64"):
            assert bad not in body, bad
        mmas = re.findall(r"\{\n[^{}]*wgmma\.mma_async[^}]*\}[^;]*;\n\}", body)
        assert len(mmas) == body.count("wgmma.mma_async")
        for m in mmas:
            # B's descriptor: the tile's (a register) or `db`, the tile's plus
            # an offset computed in the statement; the first K step has none
            desc_b = re.search(r", (%rd\d+|db), p, 1, 1", m).group(1)
            if desc_b == "db":
                assert re.search(r"add\.s64 db, %rd\d+, \d+;", m), m
        offs = [m for m in mmas if "add.s64 d" in m]
        assert offs and len(offs) < len(mmas)
        assert re.findall(r"wgmma\.wait_group\.sync\.aligned \d+;", body) == ["wgmma.wait_group.sync.aligned 0;"]
        assert body.count("wgmma.commit_group") == 2
    assert k.n_spills == 0


def _have_disassembler():
    from ctriton import _toolkit
    return _toolkit.disassembler_path() is not None


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.skipif(not _have_disassembler(), reason="no cuobjdump / nvdisasm")
@pytest.mark.parametrize("D,warps,ws", [(64, 4, False), (128, 4, False), (128, 8, False), (128, 4, True)])
def test_sm90_tma_copies_straight_line_sass(D, warps, ws):
    """In the SASS: every bulk tensor copy is one UTMALDG issued
    straight-line (no per-thread predicate for ptxas to turn into a loop
    electing each lane in turn: BRA.U.ANY), one per copy statement of the
    PTX; no 64-bit shared-address arithmetic (USHF.R.U64, ULEA.HI.X.SX32);
    no spill loads in the loop-heavy D128 / 4-warp form."""
    BN = 128 if ws else 64
    k = _compile_attn_host(90, D, 128, BN, warps, 2, 1 if ws else 3, ws=ws)
    ptx, sass = k.asm["ptx"], k.asm["sass"]
    assert "BRA.U.ANY" not in sass
    assert sass.count("UTMALDG") == ptx.count("cp.async.bulk.tensor.2d.shared::cluster")
    assert "USHF.R.U64" not in sass and "ULEA.HI.X.SX32" not in sass
    assert "LDL" not in sass and k.n_spills == 0


def _loop_bodies(ttgir):
    """The text of each top-level `for` of the kernel's TTGIR (two-space
    indent: the kernel body's ops)."""
    out, cur = [], None
    for line in ttgir.splitlines():
        if cur is None and line.startswith("  ") and not line.startswith("   ") and " = for " in line:
            cur = [line]
        elif cur is not None:
            cur.append(line)
            if line.startswith("  }"):
                out.append("\n".join(cur))
                cur = None
    return out


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("D,BM,BN,warps,stages", [(64, 128, 64, 4, 2), (64, 128, 128, 4, 3), (128, 128, 128, 4, 2),
                                                  (128, 128, 64, 8, 2), (64, 64, 64, 4, 3), (128, 64, 64, 4, 2)])
def test_sm90_warp_specialized_attention(D, BM, BN, warps, stages):
    """tl.range(..., warp_specialize=True) over TensorDescriptor tiles on
    sm_90: a producer warpgroup after the consumers issues the K and V
    copies in a loop of its own (waiting on each slot's empty mbarrier); the
    consumers' loop holds no barrier and no copy, only waits for the tiles
    and releases each slot after its MMAs; with num_warps 4 and 128-row dots
    the data is split over two consumer warpgroups (8 warps) and the
    producer gives registers to them (setmaxnreg); P @ V stays in flight
    across the consumers' back edge (one wait an iteration, Q @ K^T's, which
    settles it too, and both slots go back after it: a wait with only Q @
    K^T pending makes ptxas serialize the MMAs); zero spills and no
    serialized MMAs."""
    k = _compile_attn_host(90, D, BM, BN, warps, stages, ws=True)
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    consumers = 8 if BM == 128 else warps
    assert f"num_warps = {consumers}," in ttgir and "ws_warps = 4" in ttgir
    assert k.metadata.num_warps == consumers + 4
    assert f".maxntid {32 * (consumers + 4)}" in ptx
    head, _, rest = ttgir.partition("warp_specialize {producer_warps = 4} {")
    assert rest, "no producer region"
    assert head.count("tma_init {") == 2 and "barrier {all = 1}" in head
    producer = rest[:rest.index("\n  }")]
    assert producer.count("tma_copy ") == 2 and producer.count("empty = 1") == 2
    loops = _loop_bodies(ttgir)
    assert len(loops) == 1
    body = loops[0]
    assert "tma_copy" not in body and "barrier" not in body
    assert body.count("tma_wait ") == 2 and body.count("tma_release ") == 2
    assert ttgir.count("tma_copy ") == 2  # the producer's, nothing before the consumer loop
    # the consumers' barriers count only them; the producer's warpgroup gives
    # its registers to two consumer warpgroups
    assert f"bar.sync \t1, {32 * consumers};" in ptx
    assert ptx.count("bar.sync \t0;") == 1  # after the mbarriers' initialisation, every warp
    assert ("setmaxnreg.inc.sync.aligned.u32 232;" in ptx) == (consumers == 8)
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster") == 2 * (D // 64)
    assert "mbarrier.arrive.shared::cta.b64" in ptx
    mma_loops = [b for b in ptx_loops(ptx) if "wgmma.mma_async" in b]
    assert len(mma_loops) == 1
    seq = re.findall(r"wgmma\.commit_group|wgmma\.wait_group\.sync\.aligned \d+|mbarrier\.arrive\.shared", mma_loops[0])
    assert seq == ["wgmma.commit_group", "wgmma.wait_group.sync.aligned 0", "mbarrier.arrive.shared",
                   "mbarrier.arrive.shared", "wgmma.commit_group"], seq
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"
    assert not k.metadata.wgmma_advisory


@triton.jit
def ws_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), warp_specialize=True):
        acc = tl.dot(a_desc.load([0, k * BK]), b_desc.load([0, k * BK]).T, acc)
    tl.store(c_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], acc)


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_sm90_warp_specialized_matmul_keeps_an_mma_in_flight():
    """A warp-specialized matmul's consumers release the previous
    iteration's slots once all but the MMA just issued are done
    (wgmma.wait_group 1): the chain of MMAs on one accumulator never waits
    for the newest inside the loop."""
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    k = triton.compile(ASTSource(ws_matmul_kernel, sig, dict(BM=128, BN=128, BK=64),
                                 {(i,): {"divisibility": 16} for i in range(6)}),
                       target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_stages": 3})
    assert "warp_specialize {" in k.asm["ct.ttgir"]
    loops = [b for b in ptx_loops(k.asm["ptx"]) if "wgmma.mma_async" in b]
    assert len(loops) == 1
    seq = re.findall(r"wgmma\.commit_group|wgmma\.wait_group\.sync\.aligned \d+|mbarrier\.arrive\.shared", loops[0])
    assert seq == ["wgmma.commit_group", "wgmma.wait_group.sync.aligned 1", "mbarrier.arrive.shared",
                   "mbarrier.arrive.shared"], seq
    assert k.n_spills == 0 and not k.metadata.wgmma_advisory


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("ws", [False, True])
def test_sm90_device_descriptor_product_shape(ws):
    """Descriptors made in the kernel over pointer parameters with a shape
    that is a product of parameters (tutorial 06's y_dim = Z * H * N_CTX,
    its form on Hopper with warp specialization): the launch encodes their
    tensor maps (plan kind 4: the factors' parameter indices), and the loop
    copies through the tensor memory access unit (warp-specialized when
    asked)."""
    sig = {"sm_scale": "fp32", "M": "*fp32", "Z": "i32", "H": "i32", "desc_q": "*fp16",
           "desc_k": "*fp16", "desc_v": "*fp16", "desc_o": "*fp16", "N_CTX": "i32"}
    cx = dict(HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64, STAGE=1, WS=ws)
    sig.update({k: "constexpr" for k in cx})
    attrs = {n: {"divisibility": 16} for n in sig if sig[n] not in ("constexpr", "fp32")}
    k = triton.compile(ASTSource(attn_fwd_desc, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 4, "num_stages": 2})
    used = [t for t in k.metadata.tma if t[6]]
    assert sorted(t[7] for t in used) == [5, 6]  # K and V (desc_k / desc_v); O stored by pointers
    for t in used:
        assert t[8] == 4  # shape[0]: a product
        fs = [(t[9] >> (20 * i)) & 0xFFFFF for i in range(3)]
        assert [(f & 0xFFFF, (f >> 16) & 3) for f in fs if f & (1 << 18)] == [(2, 1), (3, 1), (8, 1)]
        assert (t[10], t[11], t[12], t[13]) == (0, 64, 0, 64)
    assert "cp.async.bulk.tensor.2d" in k.asm["ptx"]
    assert ("warp_specialize {" in k.asm["ct.ttgir"]) == ws
    assert k.n_spills == 0


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_warp_specialize_where_it_cannot():
    """warp_specialize=True where there is no producer to make: on sm_80
    (no tensor memory access) the loop is pipelined as without it; with two
    loops (causal) only the first is specialized, the second pipelined as
    before (its own copies and barriers)."""
    k = _compile_attn_host(80, 64, 128, 64, 4, 2, ws=True)
    assert "warp_specialize {" not in k.asm["ct.ttgir"] and k.metadata.num_warps == 4
    assert "cp.async.bulk" not in k.asm["ptx"] and "setmaxnreg" not in k.asm["ptx"]
    k = _compile_attn_host(90, 64, 128, 64, 4, 2, stage=3, ws=True)
    ttgir = k.asm["ct.ttgir"]
    assert ttgir.count("warp_specialize {") == 1
    loops = _loop_bodies(ttgir)
    assert len(loops) == 2 and "tma_release" in loops[0] and "tma_release" not in loops[1]
    assert "tma_copy" in loops[1] and "barrier" in loops[1]
    assert k.n_spills == 0


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_sm90_mbarriers_apart_from_slots():
    """A tensor-memory-access buffer's mbarriers are allocated apart from
    its 1 KiB-aligned slots: tutorial 06's causal D128 64x64 with 3 stages
    (Q 16 KiB, K and V 48 KiB each) fits in half of the H200's 227 KiB, so
    two CTAs share a multiprocessor (with the mbarriers after each slot
    array it took 116736 bytes); every mbarrier offset lies outside every
    buffer's slots."""
    k = _compile_attn_host(90, 128, 64, 64, 4, 3, stage=3)
    assert k.metadata.shared <= 232448 // 2, k.metadata.shared
    ttgir = k.asm["ct.ttgir"]
    slots = {}
    for m in re.finditer(r"tma_init \{buffer = (\d+), mbar_offset = (\d+), scratch_offset = (\d+), stages = (\d+)", ttgir):
        slots[int(m[1])] = (int(m[2]), int(m[3]), int(m[3]) + 16384 * int(m[4]))
    assert len(slots) == 4  # K and V of each loop
    for mb, _, _ in slots.values():
        for _, lo, hi in slots.values():
            assert not lo <= mb < hi


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_sm80_host_descriptors_keep_cp_async():
    """Before sm_90 a descriptor has no tensor map: the loop keeps cp.async."""
    k = _compile_attn_host(80, 64, 128, 64, 4, 2)
    assert not k.metadata.tma
    assert "cp.async.bulk" not in k.asm["ptx"] and "mbarrier" not in k.asm["ptx"]


@triton.jit
def persistent_host_desc_kernel(a_desc, b_desc, c_desc, M, N, K, NUM_SMS: tl.constexpr):
    """Tutorial 09's persistent form: each program walks tiles; each tile's K
    loop is pipelined (its mbarriers set up and torn down per tile)."""
    BM: tl.constexpr = a_desc.block_shape[0]
    BK: tl.constexpr = a_desc.block_shape[1]
    BN: tl.constexpr = b_desc.block_shape[0]
    num_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * num_n
    for tile in range(tl.program_id(0), tiles, NUM_SMS):
        om = (tile // num_n) * BM
        on = (tile % num_n) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in range(tl.cdiv(K, BK)):
            a = a_desc.load([om, ki * BK])
            b = b_desc.load([on, ki * BK])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([om, on], acc.to(tl.float16))


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_sm90_subtiled_epilogue_no_conversion():
    """Each half's tensor store takes its column window of the accumulator
    itself ({col0, cols}): in the warpgroup MMA's layout every register of
    a thread lies in one half in all threads alike, so the staging is
    written straight from the accumulator's registers (stmatrix, 16 x 16
    a warp) and the reshape, permute and split go dead. (Each half
    converted element by element, 2 bytes a thread, cost tutorial 09's TMA
    persistent kernel 256 shared accesses a thread per tile, 208 registers;
    one vectorized conversion of the accumulator before the split, 160.)
    split_store_kernel below, at tutorial 09's 128x256x64 with 8 warps."""
    dt = _host_desc_sig()
    sig = {"a_desc": dt, "b_desc": dt, "c_desc": dt, "K": "i32", "BK": "constexpr", "SPLIT": "constexpr"}
    cx = {"BK": 64, "SPLIT": True}
    attrs = _host_desc_specs(cx, ((0, (128, 64)), (1, (256, 64)), (2, (128, 128))))
    k = triton.compile(ASTSource(split_store_kernel, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 8, "num_stages": 3})
    ttgir = k.asm["ct.ttgir"]
    stores = re.findall(r"tma_store [^\n]*", ttgir)
    assert len(stores) == 2 and "col0 = 0, cols = 128" in stores[0] and "col0 = 128, cols = 128" in stores[1]
    # both take the same value: the cast accumulator, in the MMA layout
    val = {x.split(",")[3].split()[0] for x in stores}
    assert len(val) == 1
    assert re.search(r"%s = cast [^\n]*#mma<version = \[3" % re.escape(val.pop()), ttgir)
    for op in ("convert_layout", " = reshape ", " = trans ", " = split "):
        assert op not in ttgir, op
    ptx = k.asm["ptx"]
    # 128 x 128 halves of 2-byte elements, 8 warps of 16 rows: stmatrix.x4
    # writes 16 x 16 a warp, 8 a half; no other shared store, no load
    assert ptx.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == 2 * 8
    assert "st.shared" not in ptx and "ld.shared" not in ptx.split("wgmma.wait_group")[-1]
    assert k.n_spills == 0 and k.n_regs <= 176, k.n_regs


@requires_cpu
def test_subtiled_epilogue_results_cpu():
    """The same kernel on the CPU backend against numpy."""
    rng = np.random.default_rng(3)
    M, N, K = 256, 512, 192
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    ad = TensorDescriptor(a, [M, K], [K, 1], [128, 64])
    bd = TensorDescriptor(b, [N, K], [K, 1], [256, 64])
    cd = TensorDescriptor(c, [M, N], [N, 1], [128, 128])
    split_store_kernel[(M // 128, N // 256)](ad, bd, cd, K, 64, True)
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-2, atol=5e-2)


@pytest.mark.gpu
def test_gpu_subtiled_epilogue():
    """The same kernel on the GPU (tensor copies and stores) against torch."""
    import torch
    torch.manual_seed(3)
    M, N, K = 512, 768, 320
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((N, K), device="cuda", dtype=torch.float16)
    c = torch.zeros((M, N), device="cuda", dtype=torch.float16)
    ad = TensorDescriptor(a, [M, K], [K, 1], [128, 64])
    bd = TensorDescriptor(b, [N, K], [K, 1], [256, 64])
    cd = TensorDescriptor(c, [M, N], [N, 1], [128, 128])
    split_store_kernel[(M // 128, N // 256)](ad, bd, cd, K, 64, True, num_warps=8, num_stages=3)
    ref = a.float() @ b.float().T
    torch.testing.assert_close(c.float(), ref, rtol=2e-2, atol=5e-2)


@triton.jit
def halves_of_loaded_kernel(x_desc, y_desc, SCALE: tl.constexpr):
    """Column halves of a block that is loaded, not an accumulator: in its
    layout a window of half the columns may split a register between
    threads (lanes along the columns), and then the store keeps the
    conversion rather than taking a window."""
    BM: tl.constexpr = x_desc.block_shape[0]
    BN: tl.constexpr = x_desc.block_shape[1]
    om = tl.program_id(0) * BM
    x = x_desc.load([om, 0]) * SCALE
    h0, h1 = tl.split(tl.permute(tl.reshape(x, (BM, 2, BN // 2)), (0, 2, 1)))
    y_desc.store([om, 0], h0)
    y_desc.store([om, BN // 2], h1)


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("BM,BN,warps", [(64, 64, 4), (128, 128, 8), (32, 256, 4)])
def test_sm90_halves_of_a_loaded_block(BM, BN, warps):
    """A window is taken only of a value whose registers each lie inside or
    outside it in all threads alike (an_col_window): the load's own layout
    (lanes along the columns) splits them at 64x64 and 4 warps, so the
    stores take their windows of the conversion the halves went through
    (no reshape, permute or split left); where no such value exists the
    halves stay. Either way the kernel compiles for sm_90a."""
    dt = _host_desc_sig()
    sig = {"x_desc": dt, "y_desc": dt, "SCALE": "constexpr"}
    cx = {"SCALE": 2.0}
    attrs = _host_desc_specs(cx, ((0, (BM, BN)), (1, (BM, BN // 2))))
    k = triton.compile(ASTSource(halves_of_loaded_kernel, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": warps, "num_stages": 1})
    ttgir = k.asm["ct.ttgir"]
    stores = re.findall(r"tma_store [^\n]*", ttgir)
    assert len(stores) == 2
    for i, st in enumerate(stores):
        w = re.search(r"col0 = (\d+), cols = (\d+)", st)
        if w:  # a window: of the whole block, at this half
            assert (int(w.group(1)), int(w.group(2))) == (i * BN // 2, BN // 2)
            val = st.split(",")[3].split()[0]
            assert re.search(r"%s = (convert_layout|mul) [^\n]*block<%dx%dx" % (re.escape(val), BM, BN), ttgir)
            assert " = split " not in ttgir
        else:  # the half itself, through the split
            assert " = split " in ttgir
    if (BM, BN, warps) == (64, 64, 4):  # the load's layout splits a register: the conversion's value
        assert "convert_layout" in ttgir and all("cols = 32" in x for x in stores)
    assert k.n_spills == 0 and ".entry" in k.asm["ptx"]


@requires_cpu
def test_halves_of_a_loaded_block_cpu():
    """The same kernel on the CPU backend against numpy."""
    x = np.arange(128 * 64, dtype=np.float16).reshape(128, 64) % 251
    y = np.zeros((128, 64), np.float16)
    xd = TensorDescriptor(x, [128, 64], [64, 1], [64, 64])
    yd = TensorDescriptor(y, [128, 64], [64, 1], [64, 32])
    halves_of_loaded_kernel[(2,)](xd, yd, 2.0)
    np.testing.assert_array_equal(y, x * 2)


@pytest.mark.gpu
@pytest.mark.parametrize("BM,BN,warps", [(64, 64, 4), (128, 128, 8), (32, 256, 4)])
def test_gpu_halves_of_a_loaded_block(BM, BN, warps):
    """The same on the GPU: both halves where they belong, exactly."""
    import torch
    M = 4 * BM
    x = (torch.arange(M * BN, device="cuda") % 251).to(torch.float16).reshape(M, BN)
    y = torch.zeros((M, BN), device="cuda", dtype=torch.float16)
    xd = TensorDescriptor(x, [M, BN], [BN, 1], [BM, BN])
    yd = TensorDescriptor(y, [M, BN], [BN, 1], [BM, BN // 2])
    halves_of_loaded_kernel[(4,)](xd, yd, 2.0, num_warps=warps, num_stages=1)
    assert torch.equal(y, x * 2)


@triton.jit
def fused_desc_kernel(a_desc, b_desc, c_desc, M, N, K, NUM_SMS: tl.constexpr, SUBTILE: tl.constexpr):
    """Tutorial 09's TMA persistent kernel: the tile loop flattened with its
    K loop (tl.range(flatten=True)), the epilogue whole or subtiled."""
    BM: tl.constexpr = a_desc.block_shape[0]
    BK: tl.constexpr = a_desc.block_shape[1]
    BN: tl.constexpr = b_desc.block_shape[0]
    num_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * num_n
    k_tiles = tl.cdiv(K, BK)
    for tile in tl.range(tl.program_id(0), tiles, NUM_SMS, flatten=True):
        om = (tile // num_n) * BM
        on = (tile % num_n) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([om, ki * BK])
            b = b_desc.load([on, ki * BK])
            acc = tl.dot(a, b.T, acc)
        if SUBTILE:
            acc0, acc1 = tl.split(tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1)))
            c_desc.store([om, on], acc0.to(tl.float16))
            c_desc.store([om, on + BN // 2], acc1.to(tl.float16))
        else:
            c_desc.store([om, on], acc.to(tl.float16))


def _compile_fused_desc(BM, BN, BK, subtile, warps, stages):
    dt = _host_desc_sig()
    sig = {"a_desc": dt, "b_desc": dt, "c_desc": dt, "M": "i32", "N": "i32", "K": "i32", "NUM_SMS": "constexpr",
           "SUBTILE": "constexpr"}
    cx = {"NUM_SMS": 132, "SUBTILE": subtile}
    attrs = _host_desc_specs(cx, ((0, (BM, BK)), (1, (BN, BK)), (2, (BM, BN // 2 if subtile else BN))))
    return triton.compile(ASTSource(fused_desc_kernel, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": warps, "num_stages": stages})


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("BM,BN,BK,subtile,warps,stages,deferred", [(128, 256, 64, True, 8, 3, True),
                                                                    (128, 256, 64, True, 8, 4, True),
                                                                    (128, 256, 64, False, 8, 4, False),
                                                                    (128, 256, 64, False, 8, 3, True),
                                                                    (128, 128, 64, True, 4, 4, True)])
def test_sm90_fused_descriptor_nest(BM, BN, BK, subtile, warps, stages, deferred):
    """A flattened nest of descriptor tiles is fused, as pointer tiles are:
    the next tile's tensor copies are issued during a tile's last K steps
    instead of after its epilogue (per tile the nest waits for a whole
    prologue: tutorial 09's TMA persistent kernel ran at 0.86x of Triton at
    K 512 nested, 1.00x fused, on an H100). The stages asked for, no
    spills, and the subtiled epilogue's reshape, permute and split rename
    registers (one conversion of the accumulator).

    Where a staging buffer of its own fits beside the rest (not the whole
    128x256 tile's beside 4 stages of 128x256x64 tiles), the tensor stores are
    deferred: each waits for the previous one's reads of the staging before
    it writes it, none for its own, and the kernel waits before it exits,
    so the unit's reads overlap the next tile's K steps."""
    k = _compile_fused_desc(BM, BN, BK, subtile, warps, stages)
    ttgir = k.asm["ct.ttgir"]
    slots = stages * (BM * BK + BN * BK) * 2
    if slots + BM * BN * 2 + 1024 > 232448 and not subtile:
        # the whole tile's staging beside 4 stages does not fit: the nest
        # stays, its epilogue staging in the slots' bytes once they drain
        assert "fused_nest" not in ttgir and k.metadata.shared <= 232448
        return
    assert "fused_nest" in ttgir
    loop = ttgir[ttgir.index("fused_nest") - 400:]
    assert re.search(r"tma_copy [^\n]*ordered = 1[^\n]*stages = %d" % stages, ttgir)
    assert "async_copy" not in ttgir and " load " not in ttgir
    assert loop.count("tma_store ") >= (2 if subtile else 1)
    # the epilogue's staging lies beside the slots
    assert k.metadata.shared >= slots + BM * (BN // 2 if subtile else BN) * 2
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"
    assert k.metadata.wgmma_advisory == ""
    stores = re.findall(r"tma_store [^\n]*", ttgir)
    ptx = k.asm["ptx"]
    body = ptx[ptx.index(".entry"):]
    waits = [m.start() for m in re.finditer(r"cp\.async\.bulk\.wait_group\.read 0;", body)]
    if deferred:
        fused = [x for x in stores if "deferred = 1" in x]
        assert len(fused) == (2 if subtile else 1) and len(set(re.findall(r"scratch_offset = \d+", " ".join(fused)))) == 1
        assert k.metadata.shared <= 232448 and k.metadata.shared >= slots + BM * (BN // 2 if subtile else BN) * 2
        # the last wait precedes the kernel's return; a deferred store's
        # commit is not followed by a wait in its own asm block
        assert body.rindex("ret;") > waits[-1] > body.rindex("cp.async.bulk.commit_group")
        assert re.search(r"@e cp\.async\.bulk\.commit_group;\nct_tmas_skip:", body)
    else:
        assert not any("deferred" in x for x in stores)
        assert "@e cp.async.bulk.commit_group;\nct_tmas_skip:" not in body


@requires_cpu
@pytest.mark.parametrize("subtile", [False, True])
def test_fused_descriptor_nest_results_cpu(subtile):
    """The same kernel on the CPU backend (flattened there too) against
    numpy: M, N and K not multiples of the block, fewer programs than tiles."""
    rng = np.random.default_rng(5)
    M, N, K, BM, BN, BK = 200, 296, 72, 64, 128, 32
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = np.full((M, N), 7, np.float16)
    da = TensorDescriptor(a, [M, K], [K, 1], [BM, BK])
    db = TensorDescriptor(b, [N, K], [K, 1], [BN, BK])
    dc = TensorDescriptor(c, [M, N], [N, 1], [BM, BN // 2 if subtile else BN])
    fused_desc_kernel[(3,)](da, db, dc, M, N, K, 3, subtile)
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-2, atol=6e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("BM,BN,BK,subtile,warps,stages", [(128, 256, 64, True, 8, 3), (128, 256, 64, True, 8, 4),
                                                           (128, 256, 64, False, 8, 3), (128, 128, 64, True, 4, 4),
                                                           (64, 128, 32, False, 4, 4)])
def test_gpu_fused_descriptor_nest(BM, BN, BK, subtile, warps, stages):
    """The fused descriptor nest on the GPU against torch: tails in M, N and
    K, C inside a larger buffer (nothing written past the descriptor), a
    K of one block and one of many, more tiles than programs."""
    import torch
    torch.manual_seed(5)
    for M, N, K, nprog in ((1000, 776, 520, 7), (384, 512, BK, 3), (130, 264, 4096, 5)):
        a = torch.randn((M, K), device="cuda", dtype=torch.float16)
        b = torch.randn((N, K), device="cuda", dtype=torch.float16)
        cbuf = torch.full((M + 16, N + 40), 7.0, device="cuda", dtype=torch.float16)
        c = cbuf[:M, :N]
        da = TensorDescriptor(a, [M, K], [K, 1], [BM, BK])
        db = TensorDescriptor(b, [N, K], [K, 1], [BN, BK])
        dc = TensorDescriptor(c, [M, N], [N + 40, 1], [BM, BN // 2 if subtile else BN])
        fused_desc_kernel[(nprog,)](da, db, dc, M, N, K, nprog, subtile, num_warps=warps, num_stages=stages)
        torch.testing.assert_close(c, (a.float() @ b.float().T).half(), atol=6e-2, rtol=1e-2)
        assert (cbuf[M:] == 7).all() and (cbuf[:, N:] == 7).all()


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_sm90_persistent_host_descriptors():
    """In the persistent form the K loop sits in the tile loop: its
    mbarriers are initialised before each tile's prologue and invalidated
    after its loop (no copy in flight then), both inside the tile loop. So
    the slots are free once a tile's loop ends, and the epilogue's tensor
    store stages C in their bytes: shared memory is the slots and
    mbarriers alone (3 x 32 KiB, and 2 x 32 bytes for the mbarriers; not
    32 KiB more)."""
    dt = _host_desc_sig()
    sig = {"a_desc": dt, "b_desc": dt, "c_desc": dt, "M": "i32", "N": "i32", "K": "i32", "NUM_SMS": "constexpr"}
    cx = {"NUM_SMS": 132}
    attrs = _host_desc_specs(cx, ((0, (128, 64)), (1, (128, 64)), (2, (128, 128))))
    k = triton.compile(ASTSource(persistent_host_desc_kernel, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 8, "num_stages": 3})
    ttgir = k.asm["ct.ttgir"]
    outer = ttgir.index("for ")
    assert outer < ttgir.index("tma_init") < ttgir.index("tma_copy") < ttgir.index("tma_inval")
    assert ttgir.count("tma_copy ") == 6 and "async_copy" not in ttgir
    assert ttgir.count("tma_store ") == 1 and " store " not in ttgir
    assert ttgir.index("tma_inval") < ttgir.index("tma_store")
    assert k.metadata.shared == 3 * 32768 + 64, k.metadata.shared
    assert "wgmma.mma_async" in k.asm["ptx"]
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"


@pytest.mark.gpu
@pytest.mark.parametrize("BM,BN,BK,warps,stages", [(128, 128, 64, 4, 3), (128, 64, 128, 8, 2),
                                                   (64, 128, 32, 4, 4)])
@pytest.mark.parametrize("persistent", [False, True])
def test_gpu_host_descriptor_matmul_tma(BM, BN, BK, warps, stages, persistent):
    """C = A @ B.T through host descriptors (tensor maps), M, N, K not
    multiples of the block (the copy engine zero-fills the tails), BK = 128
    as two boxes a tile; then the same kernel on other tensors of other
    shapes (the launch re-encodes the maps)."""
    import torch
    torch.manual_seed(0)
    for M, N, K in ((300, 264, 200), (129, 72, 61 * 8)):
        a = torch.randn((M, K), device="cuda", dtype=torch.float16)
        b = torch.randn((N, K), device="cuda", dtype=torch.float16)
        # C inside a larger buffer: the tensor store of a tile past M or N
        # writes nothing outside the descriptor's shape
        cbuf = torch.full((M + 40, N + 24), 7.0, device="cuda", dtype=torch.float16)
        c = cbuf[:M, :N]
        da, db = TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BN, BK])
        dc = TensorDescriptor(c, [M, N], [N + 24, 1], [BM, BN])
        if persistent:
            persistent_host_desc_kernel[(5,)](da, db, dc, M, N, K, 5, num_warps=warps, num_stages=stages)
        else:
            matmul_host_desc_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](
                da, db, dc, K, BK, num_warps=warps, num_stages=stages)
        torch.testing.assert_close(c, (a.float() @ b.float().T).half(), atol=6e-2, rtol=1e-2)
        assert (cbuf[M:] == 7).all() and (cbuf[:, N:] == 7).all()


@triton.jit
def split_store_kernel(a_desc, b_desc, c_desc, K, BK: tl.constexpr, SPLIT: tl.constexpr):
    """C = A @ B.T, the accumulator stored whole or, as tutorial 09's
    EPILOGUE_SUBTILE, as two column halves (reshape, permute, split)."""
    BM: tl.constexpr = a_desc.block_shape[0]
    BN: tl.constexpr = b_desc.block_shape[0]
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for ki in range(tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([om, ki * BK]), b_desc.load([on, ki * BK]).T, acc)
    if SPLIT:
        acc0, acc1 = tl.split(tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1)))
        c_desc.store([om, on], acc0.to(c_desc.dtype))
        c_desc.store([om, on + BN // 2], acc1.to(c_desc.dtype))
    else:
        c_desc.store([om, on], acc.to(c_desc.dtype))


def _compile_split_store(split, out):
    dt = _host_desc_sig()
    sig = {"a_desc": dt, "b_desc": dt, "c_desc": (f"*{out}",) + dt[1:], "K": "i32", "BK": "constexpr",
           "SPLIT": "constexpr"}
    cx = {"BK": 64, "SPLIT": split}
    attrs = _host_desc_specs(cx, ((0, (128, 64)), (1, (128, 64)), (2, (128, 64 if split else 128))))
    return triton.compile(ASTSource(split_store_kernel, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": 4, "num_stages": 3})


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("out", ["fp16", "fp32"])
def test_sm90_tensor_store_forms(split, out):
    """Descriptor stores of a 128x128 accumulator on sm_90a, whole or as two
    halves, f16 or f32: each a tma_store (no pointer store left), one bulk
    tensor store per 128-byte column block of its box (f32 halves: two
    blocks of 32 columns each), the accumulator written into the staging
    buffer from the mma layout without a conversion through shared memory
    first (whole); no spills."""
    k = _compile_split_store(split, out)
    ttgir, ptx = k.asm["ct.ttgir"], k.asm["ptx"]
    assert ttgir.count("tma_store ") == (2 if split else 1) and " store " not in ttgir
    cols = 64 if split else 128
    boxes = (cols * (4 if out == "fp32" else 2) + 127) // 128
    stores = re.findall(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group", ptx)
    assert len(stores) == boxes * (2 if split else 1)
    assert ptx.count("cp.async.bulk.wait_group.read 0") == (2 if split else 1)
    if not split:
        tail = ttgir[ttgir.rindex("} loc"):]
        assert "convert_layout" not in tail, tail
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"


@pytest.mark.gpu
@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("out", ["fp16", "fp32"])
def test_gpu_tensor_store_forms(split, out):
    """The same kernel against torch, M and N not multiples of the block and
    C inside a larger buffer: nothing written outside the descriptor."""
    import torch
    torch.manual_seed(0)
    dt = {"fp16": torch.float16, "fp32": torch.float32}[out]
    M, N, K = 300, 200, 192
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((N, K), device="cuda", dtype=torch.float16)
    cbuf = torch.full((M + 16, N + 56), 7.0, device="cuda", dtype=dt)
    c = cbuf[:M, :N]
    da, db = TensorDescriptor.from_tensor(a, [128, 64]), TensorDescriptor.from_tensor(b, [128, 64])
    dc = TensorDescriptor(c, [M, N], [N + 56, 1], [128, 64 if split else 128])
    split_store_kernel[(triton.cdiv(M, 128), triton.cdiv(N, 128))](da, db, dc, K, 64, split, num_warps=4,
                                                                   num_stages=3)
    torch.testing.assert_close(c.float(), a.float() @ b.float().T, atol=6e-2, rtol=1e-2)
    assert (cbuf[M:] == 7).all() and (cbuf[:, N:] == 7).all()


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("split", [False, True])
def test_sm90_tensor_store_guard_at_unaligned_extent(split):
    """The tensor memory access unit clips a store at the inner extent only
    in whole 16-byte units of the row. With C's inner extent not known to be
    a multiple of 16 bytes (no divisibility on shape[1]), each descriptor
    store becomes `if (tile ends inside N or N % 8 == 0) tma_store else
    store`: the tiles crossing such an N keep their pointers and mask."""
    dt = _host_desc_sig()
    sig = {"a_desc": dt, "b_desc": dt, "c_desc": dt, "K": "i32", "BK": "constexpr", "SPLIT": "constexpr"}
    cx = {"BK": 64, "SPLIT": split}
    attrs = _host_desc_specs(cx, ((0, (128, 64)), (1, (128, 64)), (2, (128, 64 if split else 128))))
    del attrs[(2, 1, 1)]
    k = triton.compile(ASTSource(split_store_kernel, sig, cx, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 4, "num_stages": 3})
    ttgir = k.asm["ct.ttgir"]
    n = 2 if split else 1
    # (the whole accumulator's pointer store is versioned on N's alignment
    # in turn: two)
    assert ttgir.count("tma_store ") == n and len(re.findall(r"^\s*store ", ttgir, re.M)) == 2, ttgir
    assert len(re.findall(r"= and %\d+, %\d+ : i32", ttgir)) >= n
    assert k.n_spills == 0, f"{k.n_spills} bytes spilled ({k.n_regs} registers)"
    # with the extent 16-divisible (the launch's specialization) no guard
    k16 = _compile_split_store(split, "fp16")
    assert not re.findall(r"^\s*store ", k16.asm["ct.ttgir"], re.M)


@pytest.mark.gpu
@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("out,N", [("fp16", 260), ("fp16", 250), ("fp32", 258), ("fp16", 264)])
def test_gpu_tensor_store_unaligned_extent(split, out, N):
    """C's inner extent not a multiple of 16 bytes (260 and 250 f16, 258
    f32), C a column slice of a wider buffer: nothing written past N (the
    unit alone would write up to the next 16 bytes of every row)."""
    import torch
    torch.manual_seed(0)
    dt = {"fp16": torch.float16, "fp32": torch.float32}[out]
    M, K = 300, 128
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((N, K), device="cuda", dtype=torch.float16)
    ld = N + 64 - N % 8
    cbuf = torch.full((M + 16, ld), 7.0, device="cuda", dtype=dt)
    c = cbuf[:M, :N]
    da, db = TensorDescriptor.from_tensor(a, [128, 64]), TensorDescriptor.from_tensor(b, [128, 64])
    dc = TensorDescriptor(c, [M, N], [ld, 1], [128, 64 if split else 128])
    split_store_kernel[(triton.cdiv(M, 128), triton.cdiv(N, 128))](da, db, dc, K, 64, split, num_warps=4,
                                                                   num_stages=3)
    torch.testing.assert_close(c.float(), a.float() @ b.float().T, atol=6e-2, rtol=1e-2)
    over = cbuf[:, N:] != 7
    assert not over.any(), f"{int(over.sum())} elements written past N, columns {torch.nonzero(over)[:, 1].unique().tolist()[:8]} (+{N})"
    assert (cbuf[M:] == 7).all()


@pytest.mark.gpu
def test_gpu_host_descriptor_tma_errors():
    """A tensor map the descriptor cannot have is a clear error at launch,
    and the next good launch works."""
    import torch
    a = torch.randn((256, 64), device="cuda", dtype=torch.float16)
    b = torch.randn((128, 64), device="cuda", dtype=torch.float16)
    c = torch.empty((256, 128), device="cuda", dtype=torch.float16)
    da = TensorDescriptor.from_tensor(a, [128, 64])
    db, dc = TensorDescriptor.from_tensor(b, [128, 64]), TensorDescriptor.from_tensor(c, [128, 128])
    bad = TensorDescriptor.from_tensor(a, [128, 64])
    bad.shape = [0, 64]
    with pytest.raises(ValueError, match="shape"):
        matmul_host_desc_kernel[(2, 1)](bad, db, dc, 64, 64, num_warps=4, num_stages=2)
    matmul_host_desc_kernel[(2, 1)](da, db, dc, 64, 64, num_warps=4, num_stages=2)
    torch.testing.assert_close(c, (a.float() @ b.float().T).half(), atol=5e-2, rtol=1e-2)


@triton.jit
def many_desc_kernel(d0, d1, d2, d3, d4, d5, d6, d7, d8, out):
    acc = d0.load([0, 0]) + d1.load([0, 0]) + d2.load([0, 0]) + d3.load([0, 0]) + d4.load([0, 0])
    acc += d5.load([0, 0]) + d6.load([0, 0]) + d7.load([0, 0]) + d8.load([0, 0])
    tl.store(out + tl.arange(0, 64)[:, None] * 64 + tl.arange(0, 64)[None, :], acc)


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
def test_sm90_tensor_maps_at_most_eight():
    """A kernel takes at most 8 tensor maps (the launcher's table): a ninth
    TensorDescriptor argument is passed as before, without one."""
    dt = _host_desc_sig()
    sig = {f"d{i}": dt for i in range(9)}
    sig["out"] = "*fp16"
    cx = {}
    for i in range(9):
        cx[(i, "tensordesc")] = ((64, 64), "zero")
        cx[(i, 2, 1)] = 1
    k = triton.compile(ASTSource(many_desc_kernel, sig, cx, {}), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 4})
    assert [t[0] for t in k.metadata.tma] == list(range(8))


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("dt,pad,maps", [("*fp16", "nan", 2), ("*fp8e4nv", "nan", 0), ("*fp8e4nv", "zero", 2)])
def test_sm90_nan_padding_maps(dt, pad, maps):
    """NaN padding through the copy engine only for f16 / bf16 / f32 maps
    (its NaN fill); an fp8 descriptor padded with NaN keeps cp.async."""
    d = (dt, ("i32", "i32"), ("i32", "constexpr"))
    sig = {"a_desc": d, "b_desc": d, "c_desc": ("*fp32", ("i32", "i32"), ("i32", "constexpr")), "K": "i32",
           "BK": "constexpr"}
    cx = {"BK": 64}
    for i, bs in ((0, (128, 64)), (1, (128, 64)), (2, (128, 128))):
        cx[(i, "tensordesc")] = (bs, pad if i < 2 else "zero")
        cx[(i, 2, 1)] = 1
    k = triton.compile(ASTSource(matmul_host_desc_kernel, sig, cx, {}), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 4, "num_stages": 3})
    assert sum(1 for t in k.metadata.tma if t[0] < 2) == maps
