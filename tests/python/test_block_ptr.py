"""Block pointers: tl.make_block_ptr and tl.advance, tl.load / tl.store
through them with boundary_check and padding_option, lowered by the frontend
to masked pointer-block accesses. CPU end-to-end against numpy (1-D, 2-D and
3-D blocks, every subset of checked dims, each padding, stores, advance in
loops with a block-pointer matmul, @jit callees, runtime `if`s merging
advanced block pointers, `order` not changing results), Triton's errors, the TTIR of a loop-carried block pointer
(constants stay constants), sm_80 / sm_90 compiles of the block-pointer
matmul taking the pointer form's cp.async / MMA path without spills, and
the GPU against torch."""
import itertools
import os
import shutil
import types
import warnings

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource
from cpu_util import cpu_driver, requires_cpu  # noqa: F401

PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))

# tl.make_block_ptr warns that it is deprecated, as Triton does
pytestmark = pytest.mark.filterwarnings("ignore:tl.make_block_ptr is deprecated")


def _block_ref(src, shape, offs, block, checked, fill, strides=None, org=0):
    """numpy model of a block-pointer load: the block at offs of a tensor
    of `shape` in the flat memory src (at element org, with `strides`; by
    default src is the tensor itself), `fill` where a checked dim falls
    outside [0, shape); unchecked dims read memory as it lies."""
    if strides is None:
        strides = [s // src.itemsize for s in src.strides]
    flat = src.reshape(-1)
    out = np.empty(block, dtype=src.dtype)
    for e in itertools.product(*[range(b) for b in block]):
        g = [o + i for o, i in zip(offs, e)]
        inside = all(0 <= g[d] < shape[d] for d in checked)
        out[e] = flat[org + sum(x * s for x, s in zip(g, strides))] if inside else fill
    return out


def _ttir(kernel, sig, cx, attrs=None):
    sig = dict(sig)
    sig.update({k: "constexpr" for k in cx})
    k = triton.compile(ASTSource(kernel, sig, cx, attrs or {}), target=GPUTarget("cpu", 0, 1))
    return k.asm["ct.ttir"]


# -- 1-D: Triton's block copy --------------------------------------------------

@triton.jit
def copy1d_kernel(a_ptr, b_ptr, N, OFF, BLOCK: tl.constexpr, PAD: tl.constexpr):
    pid = tl.program_id(0)
    # only the first half is the source tensor: the rest reads as padding
    a = tl.make_block_ptr(base=a_ptr, shape=(N // 2,), strides=(1,), offsets=(pid * BLOCK + OFF,),
                          block_shape=(BLOCK,), order=(0,))
    b = tl.make_block_ptr(base=b_ptr, shape=(N,), strides=(1,), offsets=(pid * BLOCK + OFF,),
                          block_shape=(BLOCK,), order=(0,))
    if PAD is None:
        x = tl.load(a, boundary_check=(0,))
    else:
        x = tl.load(a, boundary_check=(0,), padding_option=PAD)
    tl.store(b, x, boundary_check=(0,))


@requires_cpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int16", "bool"])
@pytest.mark.parametrize("pad", [None, "", "zero", "nan"])
@pytest.mark.parametrize("off", [0, -256, 256, -20])
def test_copy_1d(dtype, pad, off):
    """Blocks over [0, N) shifted by off: reads past N/2 (or below 0) give
    the padding, writes outside [0, N) are dropped."""
    if pad == "nan" and dtype in ("int32", "int16", "bool"):
        pytest.skip("nan padding is for floats")
    rng = np.random.default_rng(0)
    n, block = 256, 64
    a = (rng.standard_normal(n) * 4).astype(dtype) if dtype != "bool" else rng.random(n) < 0.5
    b = np.zeros(n, dtype=a.dtype)
    copy1d_kernel[(n // block,)](a, b, n, off, block, pad)
    ref = np.zeros(n, dtype=a.dtype)
    fill = np.nan if pad == "nan" else 0
    for pid in range(n // block):
        for e in range(block):
            g = pid * block + off + e
            if not 0 <= g < n:
                continue  # the store drops it
            if g < n // 2:
                ref[g] = a[g]
            elif pad in ("zero", "nan"):
                ref[g] = fill
            else:
                ref[g] = b[g]  # undefined: whatever the load gave
    np.testing.assert_array_equal(b, ref)
    if pad in ("zero", "nan") and off == 0 and dtype.startswith("float"):
        assert (np.isnan(b[n // 2:]) if pad == "nan" else b[n // 2:] == 0).all()


# -- 2-D: boundary_check subsets and paddings --------------------------------------

@triton.jit
def load2d_kernel(in_ptr, out_ptr, M, N, LD, OM, ON, BM: tl.constexpr, BN: tl.constexpr,
                  CHECK: tl.constexpr, PAD: tl.constexpr, ORDER: tl.constexpr):
    p = tl.make_block_ptr(in_ptr, shape=(M, N), strides=(LD, 1), offsets=(OM, ON),
                          block_shape=(BM, BN), order=ORDER)
    x = tl.load(p, boundary_check=CHECK, padding_option=PAD)
    r = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + r, x)


@requires_cpu
@pytest.mark.parametrize("check", [(), (0,), (1,), (0, 1), (1, 0)])
@pytest.mark.parametrize("om,on", [(0, 0), (-4, 0), (0, -16), (28, 40), (-8, -16), (5, 7), (40, 60)])
@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_load_2d(check, om, on, pad):
    """A block of a 33x50 tensor held in a 96x96 allocation at LD=96, its
    origin at (32, 32): a checked dim reads the padding outside [0, shape),
    an unchecked one reads memory as it lies (inside the allocation here,
    as the test is built so)."""
    rng = np.random.default_rng(1)
    M, N, LD, BM, BN = 33, 50, 96, 16, 32
    alloc = (rng.standard_normal((96, 96)) * 4).astype(np.float32)
    org = 32  # the tensor starts at alloc[32, 32]: unchecked reads land inside
    view = alloc.reshape(-1)[org * LD + org:]
    out = np.zeros((BM, BN), np.float32)
    load2d_kernel[(1,)](view, out, M, N, LD, om, on, BM, BN, check, pad, (1, 0))
    fill = np.nan if pad == "nan" else 0
    ref = _block_ref(alloc, (M, N), (om, on), (BM, BN), check, fill, (LD, 1), org * LD + org)
    np.testing.assert_array_equal(out, ref)


@requires_cpu
@pytest.mark.parametrize("order", [(1, 0), (0, 1)])
def test_order_is_a_hint(order):
    """order is a layout hint: the block read is the same either way."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((20, 40)).astype(np.float32)
    out = np.zeros((16, 32), np.float32)
    load2d_kernel[(1,)](a, out, 20, 40, 40, 10, 20, 16, 32, (0, 1), "zero", order)
    np.testing.assert_array_equal(out, _block_ref(a, (20, 40), (10, 20), (16, 32), (0, 1), 0))


@triton.jit
def strided_kernel(in_ptr, out_ptr, M, N, SM, SN, OM, ON, BM: tl.constexpr, BN: tl.constexpr):
    # a transposed view: dim 0 has the unit stride
    p = tl.make_block_ptr(in_ptr, (M, N), (SM, SN), (OM, ON), (BM, BN), (0, 1))
    x = tl.load(p, boundary_check=(0, 1), padding_option="zero")
    q = tl.make_block_ptr(out_ptr, (BM, BN), (BN, 1), (0, 0), (BM, BN), (1, 0))
    tl.store(q, x)


@requires_cpu
def test_transposed_strides():
    """Strides in either order (a column-major view): the block follows the
    strides, the unit one in dim 0."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((30, 20)).astype(np.float32)  # a.T is the [20, 30] tensor read
    out = np.zeros((16, 32), np.float32)
    strided_kernel[(1,)](a, out, 20, 30, 1, 20, 8, 4, 16, 32)
    np.testing.assert_array_equal(out, _block_ref(a, (20, 30), (8, 4), (16, 32), (0, 1), 0, (1, 20)))


# -- 3-D -------------------------------------------------------------------------

@triton.jit
def copy3d_kernel(src, dst, D0, D1, D2, S0, S1, S2, O0, O1, O2, B0: tl.constexpr, B1: tl.constexpr,
                  B2: tl.constexpr, CHECK: tl.constexpr):
    p = tl.make_block_ptr(src, (D0, D1, D2), (S0, S1, S2), (O0, O1, O2), (B0, B1, B2), (2, 1, 0))
    q = tl.make_block_ptr(dst, (D0, D1, D2), (S0, S1, S2), (O0, O1, O2), (B0, B1, B2), (2, 1, 0))
    v = tl.load(p, boundary_check=CHECK, padding_option="zero")
    tl.store(q, v * 2, boundary_check=CHECK)


@requires_cpu
@pytest.mark.parametrize("offs", [(0, 0, 0), (2, 0, 3), (-1, 1, -2), (1, 2, 1)])
def test_copy_3d(offs):
    """A 3x4x5 tensor: a 2x4x4 block at offs, all dims checked; the store
    writes 2x the in-bounds elements only."""
    src = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    dst = np.full_like(src, -1)
    s = [x // 4 for x in src.strides]
    copy3d_kernel[(1,)](src, dst, 3, 4, 5, *s, *offs, 2, 4, 4, (0, 1, 2))
    ref = np.full_like(src, -1)
    for e in itertools.product(range(2), range(4), range(4)):
        g = tuple(o + i for o, i in zip(offs, e))
        if all(0 <= x < n for x, n in zip(g, src.shape)):
            ref[g] = 2 * src[g]
    np.testing.assert_array_equal(dst, ref)


@requires_cpu
def test_copy_3d_partial_check():
    """Upstream's rank-3 case: dims 0 and 2 checked, dim 1 exactly in range."""
    src = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    dst = np.zeros_like(src)
    s = [x // 4 for x in src.strides]
    copy3d_kernel[(1,)](src, dst, 3, 4, 5, *s, 2, 0, 3, 2, 4, 4, (0, 2))
    ref = np.zeros_like(src)
    ref[2:3, 0:4, 3:5] = 2 * src[2:3, 0:4, 3:5]
    np.testing.assert_array_equal(dst, ref)


# -- stores ----------------------------------------------------------------------

@triton.jit
def store2d_kernel(out_ptr, M, N, LD, OM, ON, BM: tl.constexpr, BN: tl.constexpr, CHECK: tl.constexpr):
    p = tl.make_block_ptr(out_ptr, (M, N), (LD, 1), (OM, ON), (BM, BN), (1, 0))
    v = (tl.arange(0, BM)[:, None] * 100 + tl.arange(0, BN)[None, :]).to(tl.float32)
    tl.store(p, v, boundary_check=CHECK)


@requires_cpu
@pytest.mark.parametrize("check", [(0, 1), (0,), (1,), ()])
def test_store_2d(check):
    """A block across the bottom-right corner of 20x30 (the rows and
    columns inside the 40x64 allocation): checked dims drop what lies
    outside [0, shape), unchecked ones write it."""
    M, N, LD, BM, BN = 20, 30, 64, 16, 16
    out = np.full((40, LD), -1, np.float32)
    om, on = 12, 22
    store2d_kernel[(1,)](out, M, N, LD, om, on, BM, BN, check)
    ref = np.full((40, LD), -1, np.float32)
    for i, j in itertools.product(range(BM), range(BN)):
        g = (om + i, on + j)
        if all(0 <= g[d] < (M, N)[d] for d in check):
            ref[g] = i * 100 + j
    np.testing.assert_array_equal(out, ref)


@triton.jit
def store_scalar_kernel(out_ptr, N, BLOCK: tl.constexpr):
    p = tl.make_block_ptr(out_ptr, (N,), (1,), (0,), (BLOCK,), (0,))
    tl.store(p, 3.5, boundary_check=(0,))


@requires_cpu
def test_store_broadcasts_a_scalar():
    out = np.zeros(64, np.float32)
    store_scalar_kernel[(1,)](out, 40, 64)
    ref = np.zeros(64, np.float32)
    ref[:40] = 3.5
    np.testing.assert_array_equal(out, ref)


# -- loops: advance, the block-pointer matmul ----------------------------------------

@triton.jit
def matmul_bp_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                     stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % size_m)
    pid_n = (pid % group) // size_m
    a_bp = tl.make_block_ptr(a_ptr, (M, K), (stride_am, stride_ak), (pid_m * BLOCK_M, 0),
                             (BLOCK_M, BLOCK_K), (1, 0))
    b_bp = tl.make_block_ptr(b_ptr, (K, N), (stride_bk, stride_bn), (0, pid_n * BLOCK_N),
                             (BLOCK_K, BLOCK_N), (1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_bp, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_bp = tl.advance(a_bp, (0, BLOCK_K))
        b_bp = tl.advance(b_bp, (BLOCK_K, 0))
    c_bp = tl.make_block_ptr(c_ptr, (M, N), (stride_cm, stride_cn), (pid_m * BLOCK_M, pid_n * BLOCK_N),
                             (BLOCK_M, BLOCK_N), (1, 0))
    tl.store(c_bp, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))


def _strides(x):
    return [s // x.itemsize for s in x.strides]


@requires_cpu
@pytest.mark.parametrize("M,N,K", [(64, 64, 64), (37, 45, 70), (100, 30, 17)])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_matmul(M, N, K, dtype):
    """The matmul with block pointers advanced along K each iteration:
    partial tiles at every edge, zero-padded."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    c = np.zeros((M, N), np.float32)
    BM, BN, BK = 32, 32, 16
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    matmul_bp_kernel[grid](a, b, c, M, N, K, *_strides(a), *_strides(b), *_strides(c), BM, BN, BK, 4)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    tol = 1e-4 if dtype == "float32" else 2e-2
    np.testing.assert_allclose(c, ref, rtol=tol, atol=tol)


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, M, N, LD, BM: tl.constexpr, BN: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, (M, N), (LD, 1), (tl.program_id(0) * BM, 0), (BM, BN), (1, 0))
    acc = tl.zeros((BM,), tl.float32)
    n = 0
    while n < N:
        acc += tl.sum(tl.load(p, boundary_check=(0, 1), padding_option="zero"), axis=1)
        p = p.advance((0, BN))  # the method form of tl.advance
        n += BN
    o = tl.make_block_ptr(out_ptr, (M,), (1,), (tl.program_id(0) * BM,), (BM,), (0,))
    tl.store(o, acc, boundary_check=(0,))


@requires_cpu
def test_while_loop_and_method():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((50, 77)).astype(np.float32)
    out = np.zeros(50, np.float32)
    rowsum_kernel[(triton.cdiv(50, 16),)](x, out, 50, 77, 77, 16, 32)
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5, atol=1e-5)


@triton.jit
def back_and_forth_kernel(x_ptr, out_ptr, N, B: tl.constexpr):
    # negative offsets and advances, as Triton's test_block_ptr_matmul_no_scf
    p = tl.make_block_ptr(x_ptr, (N,), (1,), (0,), (B,), (0,))
    p = tl.advance(p, (-B,))
    y = tl.load(p, boundary_check=(0,), padding_option="zero")  # all out of bounds
    p = tl.advance(p, (B + 3,))
    y += tl.load(p, boundary_check=(0,), padding_option="zero")
    tl.store(out_ptr + tl.arange(0, B), y)


@requires_cpu
def test_negative_advance():
    x = np.arange(20, dtype=np.float32) + 1
    out = np.zeros(16, np.float32)
    back_and_forth_kernel[(1,)](x, out, 20, 16)
    ref = np.array([x[3 + i] if 3 + i < 20 else 0 for i in range(16)], np.float32)
    np.testing.assert_array_equal(out, ref)


@triton.jit
def cond_advance_kernel(x_ptr, out_ptr, flags_ptr, N, STEPS, B: tl.constexpr):
    # a block pointer advanced by one or two blocks as a runtime flag says
    p = tl.make_block_ptr(x_ptr, (N,), (1,), (0,), (B,), (0,))
    acc = tl.zeros((B,), tl.float32)
    for i in range(STEPS):
        acc += tl.load(p, boundary_check=(0,), padding_option="zero")
        if tl.load(flags_ptr + i) != 0:
            p = tl.advance(p, (2 * B,))
        else:
            p = p.advance((B,))
    tl.store(out_ptr + tl.arange(0, B), acc)
    tl.store(out_ptr + B, p.offsets[0])


@requires_cpu
def test_runtime_if_advance():
    """A runtime `if` that advances a loop-carried block pointer on both
    branches: the offsets merge, the rest stays as it was."""
    B, N, steps = 16, 150, 6
    x = np.arange(N, dtype=np.float32)
    flags = np.array([1, 0, 0, 1, 0, 1], np.int32)
    out = np.zeros(B + 1, np.float32)
    cond_advance_kernel[(1,)](x, out, flags, N, steps, B)
    xp = np.zeros(400, np.float32)
    xp[:N] = x
    off, ref = 0, np.zeros(B, np.float32)
    for f in flags:
        ref += xp[off:off + B]
        off += 2 * B if f else B
    np.testing.assert_array_equal(out[:B], ref)
    assert out[B] == off


@triton.jit
def cond_tuple_kernel(x_ptr, C):
    # the same leafwise merge for a plain tuple: one item differs
    t = (tl.load(x_ptr), 2.0, 7)
    if C > 0:
        t = (t[0] + 1.0, 2.0, 7)
    else:
        t = (t[0], 3.0, 7)
    tl.store(x_ptr, t[0] * t[1] + t[2])


@requires_cpu
@pytest.mark.parametrize("c", [0, 1])
def test_runtime_if_tuple(c):
    x = np.array([5.0], np.float32)
    cond_tuple_kernel[(1,)](x, c)
    assert x[0] == ((6.0 * 2.0) if c else (5.0 * 3.0)) + 7


@triton.jit
def cond_make_kernel(x_ptr, N, C, CASE: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, (N,), (1,), (0,), (16,), (0,))
    if C > 0:
        if CASE == 0:
            p = tl.make_block_ptr(x_ptr, (N,), (1,), (0,), (32,), (0,))
        else:
            p = 0
    tl.store(x_ptr, 1.0)


@pytest.mark.parametrize("case,msg", [(0, "different compile-time values"),
                                      (1, "different compile-time values")])
def test_runtime_if_mismatch(case, msg):
    """Two block pointers of different block shapes (or a block pointer and
    a number) cannot be merged by a runtime `if`."""
    with pytest.raises(triton.CompilationError, match=msg):
        _ttir(cond_make_kernel, {"x_ptr": "*fp32", "N": "i32", "C": "i32"}, dict(CASE=case))


def test_loop_carries_only_runtime_parts():
    """A block pointer advanced in a loop: its constant shape and unit
    stride are not loop-carried (the loads multiply by no carried value for
    the unit-stride dim), its offsets and runtime parts are."""
    ttir = _ttir(matmul_bp_kernel, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32",
                                    "N": "i32", "K": "i32", "stride_am": "i32", "stride_bk": "i32",
                                    "stride_cm": "i32"},
                 dict(stride_ak=1, stride_bn=1, stride_cn=1, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8))
    head = [ln for ln in ttir.splitlines() if " = for " in ln]
    assert len(head) == 1
    # acc + per pointer: base, two shape dims, the non-unit stride, two offsets
    carried = head[0].split(" = for ")[0].count("%")
    assert carried == 1 + 2 * 6, head[0]


# -- @jit callees -------------------------------------------------------------------

@triton.jit
def _load_tile(p, CHECK: tl.constexpr):
    return tl.load(p, boundary_check=CHECK, padding_option="zero")


@triton.jit
def _step(p, BK: tl.constexpr):
    return tl.advance(p, (0, BK)), p.offsets[1]


@triton.jit
def callee_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (BM, BN), (1, 0))
    acc = tl.zeros((BM, BN), tl.float32)
    offs = 0
    for _ in range(tl.cdiv(N, BN)):
        acc += _load_tile(p, (0, 1))
        p, o = _step(p, BN)
        offs += o
    q = tl.make_block_ptr(out_ptr, (BM, BN), (BN, 1), (0, 0), (BM, BN), (1, 0))
    tl.store(q, acc)
    tl.store(out_ptr + BM * BN, offs)
    tl.store(out_ptr + BM * BN + 1, p.offsets[1])
    tl.store(out_ptr + BM * BN + 2, p.block_shape[0] + p.shape[1] * 0)


@requires_cpu
def test_callees():
    """Block pointers passed to and returned from @jit functions, in a loop;
    p.offsets, p.shape and p.block_shape read back."""
    rng = np.random.default_rng(6)
    M, N, BM, BN = 16, 50, 16, 16
    x = rng.standard_normal((M, N)).astype(np.float32)
    out = np.zeros(BM * BN + 3, np.float32)
    callee_kernel[(1,)](x, out, M, N, BM, BN)
    xp = np.zeros((M, 64), np.float32)
    xp[:, :N] = x
    ref = sum(xp[:, j:j + BN] for j in range(0, 64, BN))
    np.testing.assert_allclose(out[:BM * BN].reshape(BM, BN), ref, rtol=1e-5, atol=1e-5)
    assert out[BM * BN] == 0 + 16 + 32 + 48
    assert out[BM * BN + 1] == 64
    assert out[BM * BN + 2] == BM


@triton.jit
def dtype_kernel(src, dst, N, B: tl.constexpr):
    p = tl.make_block_ptr(base=src, shape=(N,), strides=(1,), offsets=(0,), block_shape=(B,), order=(0,))
    v = tl.load(p, boundary_check=(0,), padding_option="zero").to(p.dtype.element_ty)
    tl.store(dst + tl.arange(0, B), v)


@requires_cpu
def test_dtype_attribute():
    src = np.arange(16, dtype=np.float16)
    dst = np.zeros_like(src)
    dtype_kernel[(1,)](src, dst, 16, 16)
    np.testing.assert_array_equal(dst, src)


@triton.jit
def attn_fwd_bp(Q, K, V, Out, sm_scale, stride_qm, stride_kn, stride_vn, stride_om, N_CTX,
                D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # the block-pointer attention of Triton's earlier tutorials: K read
    # transposed through order (0, 1)
    start_m = tl.program_id(0)
    q_bp = tl.make_block_ptr(Q, (N_CTX, D), (stride_qm, 1), (start_m * BLOCK_M, 0), (BLOCK_M, D), (1, 0))
    k_bp = tl.make_block_ptr(K, (D, N_CTX), (1, stride_kn), (0, 0), (D, BLOCK_N), (0, 1))
    v_bp = tl.make_block_ptr(V, (N_CTX, D), (stride_vn, 1), (0, 0), (BLOCK_N, D), (1, 0))
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    q = tl.load(q_bp, boundary_check=(0,))
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(0, N_CTX, BLOCK_N):
        k = tl.load(k_bp, boundary_check=(1,), padding_option="zero")
        qk = tl.dot(q, k) * sm_scale
        qk = tl.where((start_n + offs_n)[None, :] < N_CTX, qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_ij[:, None])
        alpha = tl.exp(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_bp, boundary_check=(0,), padding_option="zero")
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_ij
        k_bp = tl.advance(k_bp, (0, BLOCK_N))
        v_bp = tl.advance(v_bp, (BLOCK_N, 0))
    o_bp = tl.make_block_ptr(Out, (N_CTX, D), (stride_om, 1), (start_m * BLOCK_M, 0), (BLOCK_M, D), (1, 0))
    tl.store(o_bp, (acc / l_i[:, None]).to(Out.dtype.element_ty), boundary_check=(0,))


def _attn_ref(q, k, v, scale):
    s = (q.astype(np.float32) @ k.astype(np.float32).T) * scale
    s = np.exp(s - s.max(axis=1, keepdims=True))
    return (s / s.sum(axis=1, keepdims=True)) @ v.astype(np.float32)


@requires_cpu
def test_attention():
    """Flash attention with block pointers (K through a transposed block
    pointer, order (0, 1)), N_CTX not a multiple of the blocks."""
    rng = np.random.default_rng(7)
    n, d = 100, 32
    q, k, v = (rng.standard_normal((n, d)).astype(np.float32) for _ in range(3))
    o = np.zeros((n, d), np.float32)
    scale = 1 / np.sqrt(d)
    attn_fwd_bp[(triton.cdiv(n, 32),)](q, k, v, o, scale, d, d, d, d, n, d, 32, 32)
    np.testing.assert_allclose(o, _attn_ref(q, k, v, scale), rtol=1e-4, atol=1e-4)


# -- errors (Triton's messages) --------------------------------------------------------

@triton.jit
def bad_kernel(p, M, CASE: tl.constexpr):
    if CASE == 0:
        tl.make_block_ptr(M, (M,), (1,), (0,), (16,), (0,))
    elif CASE == 1:
        tl.make_block_ptr(p, (M, M), (M,), (0, 0), (16, 16), (1, 0))
    elif CASE == 2:
        tl.make_block_ptr(p, (M, M), (M, 1), (0, 0), (16, 16), (1, 1))
    elif CASE == 3:
        tl.make_block_ptr(p, (M, M), (M, 1), (0, 0), (16, 0), (1, 0))
    elif CASE == 4:
        tl.make_block_ptr(p, (M, M), (M, 1), (0, 0), (16, M), (1, 0))
    elif CASE == 5:
        tl.make_block_ptr(p, (M, 2.5), (M, 1), (0, 0), (16, 16), (1, 0))
    elif CASE == 6:
        tl.make_block_ptr(p, (M, M), (M, 1), (0, tl.arange(0, 16)), (16, 16), (1, 0))
    elif CASE == 7:
        tl.make_block_ptr(p, (), (), (), (), ())
    elif CASE == 8:
        tl.advance(p, (0,))
    elif CASE == 9:
        tl.advance(tl.make_block_ptr(p, (M, M), (M, 1), (0, 0), (16, 16), (1, 0)), (16,))
    elif CASE == 10:
        q = tl.make_block_ptr(p, (M, M), (M, 1), (0, 0), (16, 16), (1, 0))
        tl.load(q, mask=tl.full((16, 16), True, tl.int1))
    elif CASE == 11:
        q = tl.make_block_ptr(p, (M, M), (M, 1), (0, 0), (16, 16), (1, 0))
        tl.store(q, 0.0, mask=tl.full((16, 16), True, tl.int1))
    elif CASE == 12:
        q = tl.make_block_ptr(p.to(tl.pointer_type(tl.int32), bitcast=True), (M,), (1,), (0,), (16,), (0,))
        tl.load(q, boundary_check=(0,), padding_option="nan")
    elif CASE == 13:
        q = tl.make_block_ptr(p, (M,), (1,), (0,), (16,), (0,))
        tl.load(q, boundary_check=(0,), padding_option="one")
    elif CASE == 14:
        q = tl.make_block_ptr(p, (M, M), (M, 1), (0, 0), (16, 16), (1, 0))
        tl.load(q, boundary_check=(2,))
    elif CASE == 15:
        q = tl.make_block_ptr(p, (M, M), (M, 1), (0, 0), (16, 16), (1, 0))
        tl.load(q, boundary_check=(1, 1))
    elif CASE == 16:
        tl.load(p + tl.arange(0, 16), boundary_check=(0,))
    elif CASE == 17:
        tl.load(p, padding_option="zero")
    elif CASE == 18:
        tl.store(p + tl.arange(0, 16), 0.0, boundary_check=(0,))
    elif CASE == 19:
        q = tl.make_block_ptr(p, (M,), (1,), (0,), (12,), (0,))
        tl.load(q)
    elif CASE == 20:
        q = tl.make_block_ptr(p, (M,), (1,), (0,), (16,), (0,))
        q.bogus


@pytest.mark.parametrize("case,msg", [
    (0, "Expected `base` to be a scalar pointer type"),
    (1, "Expected `shape`, `strides`, `offsets`, `block_shape`, and `order` to have the same length; "
        "`strides` has length 1 but expected 2"),
    (2, r"Expected `order` to be a permutation of 0\.\.1"),
    (3, "Expected `block_shape` to contain only positive integers"),
    (4, "Expected `block_shape` to contain only integers"),
    (5, "Expected `shape` entries to be integers"),
    (6, "Expected `offsets` entries to be scalar tensors"),
    (7, "Expected `make_block_ptr` to describe at least one dimension"),
    (8, "`tl.advance` only supports block pointers created by `tl.make_block_ptr`"),
    (9, "Expected `offsets` to have length 2 but received 1"),
    (10, "`mask` and `other` arguments cannot be specified for loading block pointers"),
    (11, "`mask` argument cannot be specified for storing block pointers"),
    (12, "Padding option `nan` is not supported for integer block pointers"),
    (13, "Padding option one not supported"),
    (14, r"Expected `boundary_check` to contain dimensions in \[0, 2\)"),
    (15, "Duplicate dimension in `boundary_check`"),
    (16, "`padding_option` or `boundary_check` argument is not supported for loading a tensor of pointers"),
    (17, "`padding_option` or `boundary_check` argument is not supported for loading a tensor of pointers"),
    (18, "`boundary_check` argument is not supported for storing a tensor of pointers"),
    (19, "power of two"),
    (20, "'_block_ptr' object has no attribute 'bogus'"),
])
def test_errors(case, msg):
    with pytest.raises(triton.CompilationError, match=msg):
        _ttir(bad_kernel, {"p": "*fp32", "M": "i32"}, dict(CASE=case))


def test_deprecation_warning():
    """tl.make_block_ptr warns as Triton's does."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        _ttir(dtype_kernel, {"src": "*fp16", "dst": "*fp16", "N": "i32"}, dict(B=16))
    assert any("tl.make_block_ptr is deprecated" in str(x.message) for x in w)


def test_names_exported():
    assert tl.make_block_ptr.__ctriton_builtin__ == "make_block_ptr"
    assert tl.advance.__ctriton_builtin__ == "advance"
    assert {"make_block_ptr", "advance"} <= set(tl.__all__)
    with pytest.raises(RuntimeError, match="inside a @jit function"):
        tl.make_block_ptr()


# -- sm_80 / sm_90: the pointer form's fast path --------------------------------------

def _pointer_matmul():
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.join(here, "..", "..", "bench", "kernels_src.py")
    ks = types.ModuleType("kernels_src_block_ptr")
    ks.triton, ks.tl = triton, tl
    with open(src) as f:
        exec(compile(f.read(), src, "exec"), ks.__dict__)
    return ks.matmul


def _compile_matmul(fn, arch, bm, bn, bk, nw, ns):
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
    cx = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, stride_ak=1, stride_bn=1, stride_cn=1)
    sig.update({k: "constexpr" for k in cx})
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(9)}
    return triton.compile(ASTSource(fn, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": nw, "num_stages": ns})


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("cfg", [(80, 128, 128, 32, 8, 3), (80, 128, 128, 64, 4, 3),
                                 (90, 128, 128, 64, 4, 4), (90, 128, 256, 64, 8, 3)])
def test_matmul_fast_path(cfg):
    """The block-pointer matmul (every dim bounds-checked) compiles to what
    the pointer form (bench/kernels_src.py, K masked) does: its A and B
    tiles through cp.async into the stage buffers (16-byte copies), the same
    MMAs (ldmatrix + mma.sync on sm_80, wgmma on sm_90), no global loads in
    registers, no spills."""
    arch = cfg[0]
    kb = _compile_matmul(matmul_bp_kernel, *cfg)
    kp = _compile_matmul(_pointer_matmul(), *cfg)
    (tb, pb), (tp, pp) = [(k.asm["ct.ttgir"], k.asm["ptx"]) for k in (kb, kp)]
    assert tb.count("async_copy ") == tp.count("async_copy ") > 0
    for s in ["cp.async.cg.shared.global", "wgmma.mma_async", "ldmatrix", "mma.sync"]:
        assert pb.count(s) == pp.count(s), s
    assert "cp.async.cg.shared.global" in pb and ", 16" in pb[pb.index("cp.async.cg.shared.global"):][:120]
    if arch == 90:
        assert "wgmma.mma_async" in pb and "ldmatrix" not in pb
    else:
        assert "mma.sync.aligned" in pb and "ldmatrix" in pb
    assert "ld.global" not in pb
    assert kb.n_spills == 0, f"{kb.n_spills} bytes spilled ({kb.n_regs} registers)"
    assert kb.n_regs <= 255
    assert kb.asm.get("cubin", b"")[:4] == b"\x7fELF"


# -- the GPU, against torch ---------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K", [(300, 260, 200), (512, 512, 256)])
def test_gpu_matmul(M, N, K):
    import torch
    torch.manual_seed(0)
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16)
    c = torch.empty((M, N), device="cuda", dtype=torch.float16)
    BM, BN, BK = 128, 128, 64
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    matmul_bp_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                           c.stride(0), c.stride(1), BM, BN, BK, 8, num_warps=4, num_stages=3)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), atol=5e-2, rtol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("pad", [None, "zero", "nan"])
@pytest.mark.parametrize("off", [0, -1024, 1024])
def test_gpu_copy_1d(pad, off):
    import torch
    n, block = 1024, 64
    a = torch.randn(n, device="cuda")
    b = torch.zeros(n, device="cuda")
    copy1d_kernel[(n // block,)](a, b, n, off, block, pad)
    if off:
        assert torch.all(b == 0)
    else:
        assert torch.equal(b[:n // 2], a[:n // 2])
        if pad == "zero":
            assert torch.all(b[n // 2:] == 0)
        elif pad == "nan":
            assert torch.all(torch.isnan(b[n // 2:]))


@pytest.mark.gpu
def test_gpu_attention():
    import torch
    torch.manual_seed(0)
    n, d = 1000, 64
    q, k, v = (torch.randn((n, d), device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    scale = d ** -0.5
    attn_fwd_bp[(triton.cdiv(n, 64),)](q, k, v, o, scale, q.stride(0), k.stride(0), v.stride(0), o.stride(0),
                                       n, d, 64, 64, num_warps=4)
    ref = torch.softmax((q.float() @ k.float().T) * scale, dim=1) @ v.float()
    torch.testing.assert_close(o.float(), ref, atol=2e-2, rtol=0)


@pytest.mark.gpu
def test_gpu_copy_3d():
    import torch
    src = torch.arange(3 * 4 * 5, device="cuda", dtype=torch.float32).reshape(3, 4, 5)
    dst = torch.zeros_like(src)
    copy3d_kernel[(1,)](src, dst, 3, 4, 5, *src.stride(), 2, 0, 3, 2, 4, 4, (0, 2))
    ref = torch.zeros_like(src)
    ref[2:3, 0:4, 3:5] = 2 * src[2:3, 0:4, 3:5]
    torch.testing.assert_close(dst, ref)
