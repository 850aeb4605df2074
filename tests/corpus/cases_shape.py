"""Corpus: shape ops: make_range with an offset, splat, reshape / view /
ravel, trans, permute (3-D), cat (1-D, along dim 1), join, split,
interleave, gather (each axis), histogram (with and without a mask),
broadcast / broadcast_to, expand_dims, and the sort built on them."""
import numpy as np

import ctriton as triton
import ctriton.language as tl
from corpus import add


@triton.jit
def range_splat_kernel(o_ptr, v, START: tl.constexpr, END: tl.constexpr):
    r = tl.arange(START, END)
    s = tl.full((END - START,), v, tl.int32)         # splat of a runtime scalar
    tl.store(o_ptr + r - START, r * 10 + s)


add("make_range-splat", range_splat_kernel, lambda rng: [np.zeros(32, np.int32), 7],
    lambda a: {0: (np.arange(32, 64) * 10 + 7).astype(np.int32)}, ["make_range", "splat"],
    cx=dict(START=32, END=64))


@triton.jit
def reshape_kernel(x_ptr, a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])          # (M, N)
    flat = tl.reshape(x, (M * N,))
    tl.store(a_ptr + tl.arange(0, M * N), flat + 1)
    y = tl.reshape(flat, (4, M // 4, N))                         # (4, M/4, N)
    r0 = tl.arange(0, 4)[:, None, None]
    r1 = tl.arange(0, M // 4)[None, :, None]
    r2 = tl.arange(0, N)[None, None, :]
    tl.store(b_ptr + r0 * (M // 4) * N + r1 * N + r2, y * 2)
    tl.store(c_ptr + tl.arange(0, M * N), tl.ravel(x.view(N, M)))


add("reshape-view-ravel-int32", reshape_kernel,
    lambda rng: [rng.integers(-100, 100, (8, 16)).astype(np.int32), np.zeros(128, np.int32),
                 np.zeros((4, 2, 16), np.int32), np.zeros(128, np.int32)],
    lambda a: {1: a[0].ravel() + 1, 2: a[0].reshape(4, 2, 16) * 2, 3: a[0].ravel()},
    ["reshape"], cx=dict(M=8, N=16))


@triton.jit
def trans_kernel(x_ptr, o_ptr, p_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    t = tl.trans(x)                                              # (N, M)
    tl.store(o_ptr + rn[:, None] * M + rm[None, :], t)
    tl.store(p_ptr + rn[:, None] * M + rm[None, :], x.T * 2)


for dt in ["float32", "int8", "float16"]:
    add(f"trans-2d-{dt}", trans_kernel,
        lambda rng, dt=dt: [rng.uniform(-50, 50, (16, 32)).astype(dt), np.zeros((32, 16), dt),
                            np.zeros((32, 16), dt)],
        lambda a: {1: a[0].T.copy(), 2: (a[0].T * 2).astype(a[0].dtype)}, ["trans"], cx=dict(M=16, N=32))


@triton.jit
def permute_kernel(x_ptr, o_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    ra = tl.arange(0, A)[:, None, None]
    rb = tl.arange(0, B)[None, :, None]
    rc = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + ra * B * C + rb * C + rc)
    y = tl.permute(x, (2, 0, 1))                                 # (C, A, B)
    qc = tl.arange(0, C)[:, None, None]
    qa = tl.arange(0, A)[None, :, None]
    qb = tl.arange(0, B)[None, None, :]
    tl.store(o_ptr + qc * A * B + qa * B + qb, y)


add("permute-3d-int16", permute_kernel,
    lambda rng: [rng.integers(-1000, 1000, (2, 4, 8)).astype(np.int16), np.zeros((8, 2, 4), np.int16)],
    lambda a: {1: np.transpose(a[0], (2, 0, 1)).copy()}, ["trans"], cx=dict(A=2, B=4, C=8))


@triton.jit
def cat_kernel(a_ptr, b_ptr, o_ptr, w_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r)
    b = tl.load(b_ptr + r)
    c = tl.cat(a, b, can_reorder=True)                           # (2N,): any order
    tl.store(o_ptr + tl.arange(0, 2 * N), c)
    w = tl.cat(a[:, None], b[:, None] * 2, dim=1)                # (N, 2), in order
    tl.store(w_ptr + r[:, None] * 2 + tl.arange(0, 2)[None, :], w)


add("cat-1d-and-dim1-float32", cat_kernel,
    lambda rng: [rng.uniform(-1, 1, 32).astype(np.float32), rng.uniform(-1, 1, 32).astype(np.float32),
                 np.zeros(64, np.float32), np.zeros((32, 2), np.float32)],
    lambda a: {2: np.concatenate([a[0], a[1]]), 3: np.stack([a[0], a[1] * 2], 1)},
    ["cat"], cx=dict(N=32), sort=(2,))


@triton.jit
def join_split_kernel(a_ptr, b_ptr, j_ptr, s_ptr, t_ptr, i_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + rm * N + rn)
    b = tl.load(b_ptr + rm * N + rn)
    j = tl.join(a, b)                                            # (M, N, 2)
    r2 = tl.arange(0, 2)[None, None, :]
    tl.store(j_ptr + rm[:, :, None] * N * 2 + rn[:, :, None] * 2 + r2, j)
    x, y = tl.split(j)
    tl.store(s_ptr + rm * N + rn, x - y)
    u, v = tl.split(tl.join(b, a * 3))
    tl.store(t_ptr + rm * N + rn, u + v)
    il = tl.interleave(a, b)                                     # (M, 2N)
    tl.store(i_ptr + rm * 2 * N + tl.arange(0, 2 * N)[None, :], il)


for dt in ["float16", "int32"]:
    add(f"join-split-interleave-{dt}", join_split_kernel,
        lambda rng, dt=dt: [rng.integers(-50, 50, (4, 16)).astype(dt), rng.integers(-50, 50, (4, 16)).astype(dt),
                            np.zeros((4, 16, 2), dt), np.zeros((4, 16), dt), np.zeros((4, 16), dt),
                            np.zeros((4, 32), dt)],
        lambda a: {2: np.stack([a[0], a[1]], -1), 3: a[0] - a[1], 4: a[1] + a[0] * 3,
                   5: np.stack([a[0], a[1]], -1).reshape(4, 32)},
        ["join", "split", "reshape"], cx=dict(M=4, N=16), ttgir=["convert_layout"])


@triton.jit
def gather_kernel(x_ptr, i_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rm * N + rn)
    idx = tl.load(i_ptr + rm * N + rn)
    tl.store(o_ptr + rm * N + rn, tl.gather(x, idx, AXIS))


for axis in (0, 1):
    add(f"gather-axis{axis}-float32", gather_kernel,
        lambda rng, axis=axis: [rng.uniform(-1, 1, (16, 32)).astype(np.float32),
                                rng.integers(0, (16, 32)[axis], (16, 32)).astype(np.int32),
                                np.zeros((16, 32), np.float32)],
        lambda a, axis=axis: {2: np.take_along_axis(a[0], a[1].astype(np.int64), axis)},
        ["gather"], cx=dict(M=16, N=32, AXIS=axis))


@triton.jit
def histogram_kernel(x_ptr, h_ptr, n, N: tl.constexpr, BINS: tl.constexpr, MASKED: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r)
    if MASKED:
        h = tl.histogram(x, BINS, mask=r < n)
    else:
        h = tl.histogram(x, BINS)
    tl.store(h_ptr + tl.arange(0, BINS), h)


def _hist_ref(x, bins):
    x = x[(x >= 0) & (x < bins)]  # values outside [0, bins) are not counted
    return np.bincount(x, minlength=bins).astype(np.int32)


for masked in (False, True):
    # N=256 values in [-4, 20): some below and above the bins
    add("histogram" + ("-masked" if masked else ""), histogram_kernel,
        lambda rng: [rng.integers(-4, 20, 256).astype(np.int32), np.zeros(16, np.int32), 200],
        lambda a, masked=masked: {1: _hist_ref(a[0][:200] if masked else a[0], 16)},
        ["histogram"], cx=dict(N=256, BINS=16, MASKED=masked),
        ptx={b: ["red.shared.add.u32", "], 1;"] for b in ("sm80", "sm90")})
# fewer values than threads (4 warps over 64: each value held by two
# threads, counted once) and more bins than values
add("histogram-replicated", histogram_kernel,
    lambda rng: [rng.integers(0, 200, 64).astype(np.int32), np.zeros(256, np.int32), 64],
    lambda a: {1: _hist_ref(a[0], 256)},
    ["histogram"], cx=dict(N=64, BINS=256, MASKED=False))


@triton.jit
def broadcast_kernel(x_ptr, y_ptr, o_ptr, p_ptr, q_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M))
    y = tl.load(y_ptr + tl.arange(0, N))
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    tl.store(o_ptr + rm * N + rn, x[:, None] * 100 + y[None, :])     # implicit broadcast
    b = tl.broadcast_to(tl.expand_dims(y, 0), (M, N))
    tl.store(p_ptr + rm * N + rn, b)
    u, v = tl.broadcast(tl.expand_dims(x, 1), tl.expand_dims(y, 0))  # both (M, N)
    tl.store(q_ptr + rm * N + rn, u - v)


add("broadcast-expand_dims-int64", broadcast_kernel,
    lambda rng: [rng.integers(-50, 50, 8).astype(np.int64), rng.integers(-50, 50, 32).astype(np.int64),
                 np.zeros((8, 32), np.int64), np.zeros((8, 32), np.int64), np.zeros((8, 32), np.int64)],
    lambda a: {2: a[0][:, None] * 100 + a[1][None, :], 3: np.broadcast_to(a[1], (8, 32)).copy(),
               4: a[0][:, None] - a[1][None, :]},
    ["broadcast", "expand_dims"], cx=dict(M=8, N=32), ttgir=["convert_layout"])


@triton.jit
def sort_kernel(x_ptr, o_ptr, f_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rm * N + rn)
    tl.store(o_ptr + rm * N + rn, tl.sort(x, descending=True))
    tl.store(f_ptr + rm * N + rn, tl.flip(x, 1))


add("sort-flip-2d-float32", sort_kernel,
    lambda rng: [rng.uniform(-1, 1, (4, 32)).astype(np.float32), np.zeros((4, 32), np.float32),
                 np.zeros((4, 32), np.float32)],
    lambda a: {1: -np.sort(-a[0], 1), 2: a[0][:, ::-1].copy()}, ["reshape", "split", "join"],
    cx=dict(M=4, N=32))
