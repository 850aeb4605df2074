"""CPU end-to-end: dot, trans/permute/reshape/expand_dims/broadcast_to,
cat/join/split/interleave, gather, histogram, ravel, squeeze/unsqueeze."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401
from cpu_util import TL

pytestmark = requires_cpu


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, d_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               MODE: tl.constexpr, OUT: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if MODE == "plain":
        d = tl.dot(a, b)
    elif MODE == "acc":
        c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
        d = tl.dot(a, b, acc=c)
    elif MODE == "out_dtype":
        d = tl.dot(a, b, out_dtype=OUT)
    elif MODE == "ieee":
        d = tl.dot(a, b, input_precision="ieee")
    else:
        tl.static_assert(MODE == "trans")
        d = tl.dot(tl.trans(tl.trans(a)), b.T.T)
    tl.static_assert(d.dtype == OUT)
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], d)


@pytest.mark.parametrize("dt,out,mode", [
    ("float32", "float32", "plain"), ("float32", "float32", "acc"),
    ("float32", "float32", "ieee"), ("float16", "float32", "plain"),
    ("float16", "float32", "acc"), ("float16", "float16", "out_dtype"),
    ("float32", "float32", "trans"), ("int8", "int32", "plain"),
])
@pytest.mark.parametrize("shape", [(16, 16, 16), (32, 16, 64)])
def test_dot(dt, out, mode, shape):
    M, N, K = shape
    if dt == "int8" and K < 32:
        K = 32  # 8-bit operands need K >= 32, as in Triton on NVIDIA GPUs
    rng = np.random.default_rng(M + N + K)
    if dt == "int8":
        a = rng.integers(-8, 8, (M, K)).astype(dt)
        b = rng.integers(-8, 8, (K, N)).astype(dt)
    else:
        a = rng.uniform(-1, 1, (M, K)).astype(dt)
        b = rng.uniform(-1, 1, (K, N)).astype(dt)
    c = rng.uniform(-1, 1, (M, N)).astype(out)
    d = np.zeros((M, N), out)
    dot_kernel[(1,)](a, b, c, d, M, N, K, mode, TL[out])
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if mode == "acc":
        ref += c
    if dt == "int8":
        np.testing.assert_array_equal(d, ref.astype(np.int32))
    else:
        rtol = 2e-2 if out == "float16" else 1e-4
        np.testing.assert_allclose(d, ref, rtol=rtol, atol=rtol)


@triton.jit
def batched_dot_kernel(a_ptr, b_ptr, d_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                       K: tl.constexpr):
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rka = tl.arange(0, K)[None, None, :]
    rkb = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + rb * M * K + rm * K + rka)
    b = tl.load(b_ptr + rb * K * N + rkb * N + rn)
    tl.store(d_ptr + rb * M * N + rm * N + rn, tl.dot(a, b))


def test_dot_3d_batched():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 16, 16)).astype(np.float32)
    b = rng.standard_normal((2, 16, 32)).astype(np.float32)
    d = np.zeros((2, 16, 32), np.float32)
    batched_dot_kernel[(1,)](a, b, d, 2, 16, 32, 16)
    np.testing.assert_allclose(d, a @ b, rtol=1e-4, atol=1e-4)


@triton.jit
def shape_kernel(x_ptr, t_p, p_p, r_p, e_p, b_p, rv_p, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    t = tl.trans(x)                                   # (N, M)
    tl.store(t_p + rn[:, None] * M + rm[None, :], t)
    p = tl.permute(x, (1, 0))
    tl.store(p_p + rn[:, None] * M + rm[None, :], p + x.T)
    r = tl.reshape(x, (N, M))                         # row-major reinterpretation
    tl.store(r_p + rn[:, None] * M + rm[None, :], r)
    e = tl.expand_dims(tl.sum(x, 1), 1)               # (M, 1)
    tl.store(e_p + rm[:, None] + rn[None, :] * 0, e + tl.zeros((M, N), x.dtype))
    bb = tl.broadcast_to(rn[None, :], (M, N))
    tl.store(b_p + rm[:, None] * N + rn[None, :], bb.to(x.dtype))
    tl.store(rv_p + tl.arange(0, M * N), tl.ravel(x) * 2)


def test_trans_permute_reshape_expand_broadcast_ravel():
    M, N = 8, 16
    x = np.arange(M * N, dtype=np.float32).reshape(M, N)
    t, p, r = (np.zeros((N, M), np.float32) for _ in range(3))
    e = np.zeros(M, np.float32)
    b = np.zeros((M, N), np.float32)
    rv = np.zeros(M * N, np.float32)
    shape_kernel[(1,)](x, t, p, r, e, b, rv, M, N)
    np.testing.assert_array_equal(t, x.T)
    np.testing.assert_array_equal(p, 2 * x.T)
    np.testing.assert_array_equal(r, x.reshape(N, M))
    np.testing.assert_array_equal(e, x.sum(1))
    np.testing.assert_array_equal(b, np.broadcast_to(np.arange(N), (M, N)))
    np.testing.assert_array_equal(rv, x.ravel() * 2)


@triton.jit
def permute3_kernel(x_ptr, y_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + a * B * C + b * C + c)
    y = tl.permute(x, 2, 0, 1)                # (C, A, B)
    cc = tl.arange(0, C)[:, None, None]
    aa = tl.arange(0, A)[None, :, None]
    bb = tl.arange(0, B)[None, None, :]
    tl.store(y_ptr + cc * A * B + aa * B + bb, y)


def test_permute_3d():
    x = np.arange(2 * 4 * 8, dtype=np.int32).reshape(2, 4, 8)
    y = np.zeros((8, 2, 4), np.int32)
    permute3_kernel[(1,)](x, y, 2, 4, 8)
    np.testing.assert_array_equal(y, x.transpose(2, 0, 1))


@triton.jit
def join_split_kernel(a_ptr, b_ptr, j_p, c_p, i_p, s_p, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    j = tl.join(a, b)                          # (N, 2)
    tl.store(j_p + offs[:, None] * 2 + tl.arange(0, 2)[None, :], j)
    c = tl.cat(a, b, can_reorder=True)         # (2N,), order unspecified
    tl.store(c_p + tl.arange(0, 2 * N), c)
    tl.store(i_p + tl.arange(0, 2 * N), tl.interleave(a, b))
    x, y = tl.split(j)
    tl.store(s_p + offs, x * 100 + y)


def test_join_split_cat_interleave():
    N = 16
    a = np.arange(N, dtype=np.int32)
    b = np.arange(N, dtype=np.int32) + 1000
    j = np.zeros((N, 2), np.int32)
    c = np.zeros(2 * N, np.int32)
    i = np.zeros(2 * N, np.int32)
    s = np.zeros(N, np.int32)
    join_split_kernel[(1,)](a, b, j, c, i, s, N)
    np.testing.assert_array_equal(j, np.stack([a, b], 1))
    np.testing.assert_array_equal(np.sort(c), np.sort(np.concatenate([a, b])))
    np.testing.assert_array_equal(i, np.stack([a, b], 1).ravel())
    np.testing.assert_array_equal(s, a * 100 + b)


@triton.jit
def gather_kernel(x_ptr, i_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rm * N + rn)
    idx = tl.load(i_ptr + rm * N + rn)
    tl.store(o_ptr + rm * N + rn, tl.gather(x, idx, AXIS))


@pytest.mark.parametrize("axis", [0, 1])
def test_gather(axis):
    M, N = 8, 16
    rng = np.random.default_rng(axis)
    x = rng.standard_normal((M, N)).astype(np.float32)
    idx = rng.integers(0, (M, N)[axis], (M, N)).astype(np.int32)
    o = np.zeros_like(x)
    gather_kernel[(1,)](x, idx, o, M, N, axis)
    np.testing.assert_array_equal(o, np.take_along_axis(x, idx, axis))


@triton.jit
def histogram_kernel(x_ptr, h_ptr, N: tl.constexpr, BINS: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(h_ptr + tl.arange(0, BINS), tl.histogram(x, BINS))


def test_histogram():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 16, 256).astype(np.int32)
    h = np.zeros(16, np.int32)
    histogram_kernel[(1,)](x, h, 256, 16)
    np.testing.assert_array_equal(h, np.bincount(x, minlength=16))


@triton.jit
def squeeze_kernel(x_ptr, o_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    u = tl.expand_dims(x, 0)                   # (1, N)
    u = tl.expand_dims(u, 2)                   # (1, N, 1)
    r = tl.reshape(u, (N,))
    v = x[None, :]
    tl.store(o_ptr + tl.arange(0, N), r + tl.sum(v, 0))


def test_expand_and_reshape_back():
    x = np.arange(32, dtype=np.float32)
    o = np.zeros_like(x)
    squeeze_kernel[(1,)](x, o, 32)
    np.testing.assert_array_equal(o, 2 * x)


@triton.jit
def misc_kernel(x_ptr, sm_p, sq_p, mem_p, hint_p, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    offs = rm[:, None] * N + rn[None, :]
    offs = tl.max_contiguous(tl.multiple_of(offs, 8), 8)
    x = tl.load(x_ptr + offs)
    tl.store(sm_p + offs, tl.softmax(x, 1))
    u = tl.expand_dims(tl.sum(x, 1), 1)           # (M, 1)
    tl.store(sq_p + rm, tl.reshape(u, (M,)))
    tl.debug_barrier()
    # tensor member functions
    t = x.trans().reshape(M * N).to(tl.float64)
    tl.store(mem_p + tl.arange(0, M * N), t + x.sum() + x.max(axis=0).sum(0))
    s = x.view(M * N)
    tl.store(hint_p + tl.arange(0, M * N), s)


def test_softmax_hints_members():
    M, N = 4, 16
    x = np.random.default_rng(9).standard_normal((M, N)).astype(np.float32)
    sm, mem, hint = np.zeros_like(x), np.zeros(M * N), np.zeros(M * N, np.float32)
    sq = np.zeros(M, np.float32)
    misc_kernel[(1,)](x, sm, sq, mem, hint, M, N)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(sm, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(sq, x.sum(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mem, x.T.ravel() + x.sum() + x.max(0).sum(), rtol=1e-5)
    np.testing.assert_array_equal(np.sort(hint), np.sort(x.ravel()))


@triton.jit
def swizzle_kernel(o_ptr, SM: tl.constexpr, SN: tl.constexpr, G: tl.constexpr):
    i = tl.program_id(0)
    j = tl.program_id(1)
    ni, nj = tl.swizzle2d(i, j, SM, SN, G)
    tl.store(o_ptr + (i * SN + j) * 2, ni)
    tl.store(o_ptr + (i * SN + j) * 2 + 1, nj)


def test_swizzle2d():
    SM, SN, G = 5, 4, 2
    o = np.zeros((SM, SN, 2), np.int32)
    swizzle_kernel[(SM, SN)](o, SM, SN, G)
    ref = np.zeros_like(o)
    for i in range(SM):
        for j in range(SN):
            ij = i * SN + j
            group, off_i = ij // (G * SN), ij // (G * SN) * G
            g = min(SM - off_i, G)
            ij %= G * SN
            ref[i, j] = (off_i + ij % g, ij // g)
    np.testing.assert_array_equal(o, ref)
    # a bijection of the grid
    assert len({tuple(p) for p in o.reshape(-1, 2)}) == SM * SN


@triton.jit
def squeeze_unsqueeze_kernel(x_ptr, o_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    u = tl.unsqueeze(x, 0)                        # (1, N)
    tl.store(o_ptr + tl.arange(0, N), tl.squeeze(u, 0) * 2)


def test_squeeze_unsqueeze():
    x = np.arange(16, dtype=np.float32)
    o = np.zeros_like(x)
    squeeze_unsqueeze_kernel[(1,)](x, o, 16)
    np.testing.assert_array_equal(o, 2 * x)


@triton.jit
def squeeze_item_cat_kernel(x_ptr, o_ptr, s_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])          # (M, N)
    col = x.unsqueeze(2)                                         # (M, N, 1), method form
    back = tl.squeeze(col, -1)                                   # (M, N)
    wide = tl.cat(back, back * 2, dim=1)                         # (M, 2N)
    r2 = tl.arange(0, 2 * N)
    tl.store(o_ptr + rm[:, None] * (2 * N) + r2[None, :], wide)
    one = tl.sum(x, axis=1, keep_dims=True)                      # (M, 1)
    first = tl.reshape(tl.sum(one, axis=0, keep_dims=True), (1, 1))
    tl.store(s_ptr, first.item())
    tl.store(s_ptr + 1, tl.item(tl.max(x, axis=1, keep_dims=True).sum(axis=0, keep_dims=True)))


def test_squeeze_item_cat_dim1():
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    o = np.zeros((4, 16), np.float32)
    s = np.zeros(2, np.float32)
    squeeze_item_cat_kernel[(1,)](x, o, s, 4, 8)
    np.testing.assert_array_equal(o, np.concatenate([x, 2 * x], axis=1))
    np.testing.assert_array_equal(s, [x.sum(), x.max(1).sum()])


@triton.jit
def cat_3d_kernel(x_ptr, o_ptr, DIM: tl.constexpr):
    i = tl.arange(0, 2)
    j = tl.arange(0, 4)
    k = tl.arange(0, 8)
    offs = i[:, None, None] * 32 + j[None, :, None] * 8 + k[None, None, :]
    x = tl.load(x_ptr + offs)
    y = tl.cat(x, x + 100, dim=DIM)
    S0: tl.constexpr = 4 if DIM == 0 else 2
    S1: tl.constexpr = 8 if DIM == 1 else 4
    S2: tl.constexpr = 16 if DIM % 3 == 2 else 8
    a = tl.arange(0, S0)
    b = tl.arange(0, S1)
    c = tl.arange(0, S2)
    tl.store(o_ptr + a[:, None, None] * (S1 * S2) + b[None, :, None] * S2 + c[None, None, :], y)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cat_dims(dim):
    x = np.arange(64, dtype=np.int32).reshape(2, 4, 8)
    ref = np.concatenate([x, x + 100], axis=dim)
    o = np.zeros(ref.shape, np.int32)
    cat_3d_kernel[(1,)](x, o, dim)
    np.testing.assert_array_equal(o, ref)


def test_dot_k_too_small_for_8_bit():
    """tl.dot takes any M and N but K >= 16 (32 for 8-bit operands), as
    Triton on NVIDIA GPUs; the CPU backend says the same."""
    a = np.ones((16, 16), np.int8)
    with pytest.raises(triton.CompilationError, match="K must be at least 32 for i8 operands"):
        dot_kernel[(1,)](a, a, np.zeros((16, 16), np.int32), np.zeros((16, 16), np.int32), 16, 16, 16, "plain",
                         TL["int32"])
    x = np.ones((2, 16), np.float16)
    d = np.zeros((2, 4), np.float32)
    dot_kernel[(1,)](x, np.ones((16, 4), np.float16), d, d, 2, 4, 16, "plain", TL["float32"])
    np.testing.assert_array_equal(d, np.full((2, 4), 16.0, np.float32))


@triton.jit
def high_rank_kernel(x_ptr, y_ptr, z_ptr):
    # 512 elements as 9 dims of 2: reversed, and summed over one dim
    x = tl.load(x_ptr + tl.arange(0, 512))
    v = tl.reshape(x, (2, 2, 2, 2, 2, 2, 2, 2, 2))
    p = tl.permute(v, (8, 7, 6, 5, 4, 3, 2, 1, 0))
    tl.store(y_ptr + tl.arange(0, 512), tl.reshape(p, (512,)))
    s = tl.sum(v, axis=4)
    tl.store(z_ptr + tl.arange(0, 256), tl.reshape(s, (256,)))


def test_rank_nine_blocks():
    """Blocks of more than 8 dims (Triton sets no limit; ctriton's is 16)."""
    x = np.arange(512, dtype=np.int32)
    y = np.zeros(512, np.int32)
    z = np.zeros(256, np.int32)
    high_rank_kernel[(1,)](x, y, z)
    v = x.reshape((2,) * 9)
    np.testing.assert_array_equal(y, v.transpose(tuple(range(8, -1, -1))).reshape(-1))
    np.testing.assert_array_equal(z, v.sum(axis=4).reshape(-1))


def test_rank_nine_blocks_gpu_pipeline():
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    sig = {"x_ptr": "*i32", "y_ptr": "*i32", "z_ptr": "*i32"}
    k = triton.compile(ASTSource(high_rank_kernel, sig, {}, {n: {"divisibility": 16} for n in sig}),
                       target=GPUTarget("cuda", 90, 32))
    assert "tensor<2x2x2x2x2x2x2x2x2xi32, #blocked" in k.asm["ttgir"]
    assert ".entry high_rank_kernel" in k.asm["ptx"]


@triton.jit
def too_many_dims_kernel(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 1 << 17))
    tl.store(x_ptr + tl.arange(0, 1 << 17), tl.reshape(tl.reshape(x, (2,) * 17), (1 << 17,)))


def test_more_dims_than_blocks_have():
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    with pytest.raises(triton.CompilationError, match="a shape of 17 dimensions"):
        triton.compile(ASTSource(too_many_dims_kernel, {"x_ptr": "*i8"}, {}), target=GPUTarget("cpu", 0, 1))
