"""Corpus: reductions (sum, max, min, argmax, argmin, xor_sum, reduce_or,
a user combiner on two inputs) and scans (cumsum, cumprod, a reverse scan
with a user combiner, a two-input scan) along each axis of 2-D and 3-D
blocks and over 1-D blocks; tl.dot (fp16, bf16, tf32, fp32 ieee, int8,
fp8, an fp16 accumulator, small shapes, 3-D batched, a pipelined K loop)."""
import numpy as np

import ctriton as triton
import ctriton.language as tl
from corpus import add
from cpu_util import bf16_round, fp8_round

M, N = 16, 32


@triton.jit
def _max_idx(a, ai, b, bi):
    # the larger value; of equal values the lower index
    take_a = (a > b) | ((a == b) & (ai < bi))
    return tl.where(take_a, a, b), tl.where(take_a, ai, bi)


@triton.jit
def _running_max(a, b):
    return tl.maximum(a, b)


@triton.jit
def _count_sum(a, ca, b, cb):
    return a + b, ca + cb


@triton.jit
def reduce_kernel(x_ptr, o_ptr, i_ptr, OP: tl.constexpr, AXIS: tl.constexpr, M: tl.constexpr,
                  N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    if OP == "sum":
        r = tl.sum(x, AXIS)
    elif OP == "max":
        r = tl.max(x, axis=AXIS)
    elif OP == "min":
        r = tl.min(x, axis=AXIS)
    elif OP == "argmax":
        r = tl.argmax(x, AXIS)
    elif OP == "argmin":
        r = tl.argmin(x, AXIS)
    elif OP == "xor_sum":
        r = tl.xor_sum(x, AXIS)
    elif OP == "reduce_or":
        r = tl.reduce_or(x, AXIS)
    elif OP == "max_idx":   # a user combiner over (value, index)
        idx = tl.broadcast_to(rn[None, :] if AXIS == 1 else rm[:, None], (M, N))
        r, ri = tl.reduce((x, idx), AXIS, _max_idx)
        tl.store(i_ptr + tl.arange(0, N if AXIS == 0 else M), ri)
    elif OP == "cumsum":
        r = tl.cumsum(x, AXIS)
    elif OP == "cumprod":
        r = tl.cumprod(x, AXIS)
    elif OP == "revmax":
        r = tl.associative_scan(x, AXIS, _running_max, reverse=True)
    else:
        tl.static_assert(OP == "count_sum")
        r, c = tl.associative_scan((x, tl.full((M, N), 1, tl.int32)), AXIS, _count_sum)
        tl.store(i_ptr + rm[:, None] * N + rn[None, :], c)
    if len(r.shape) == 2:
        tl.store(o_ptr + rm[:, None] * N + rn[None, :], r)
    else:
        tl.store(o_ptr + tl.arange(0, N if AXIS == 0 else M), r)


def _vals(dt, rng, shape, small=False):
    if np.dtype(dt).kind == "f":
        return rng.uniform(-4, 4, shape).astype(dt)
    info = np.iinfo(dt)
    lo, hi = (max(info.min, -3), min(info.max, 3)) if small else (max(info.min, -1000), min(info.max, 1000))
    return rng.integers(lo, hi, shape, endpoint=True).astype(dt)


def _first_argmax(x, axis):
    return np.argmax(x, axis).astype(np.int32)


def _rev_max(x, axis):
    return np.flip(np.maximum.accumulate(np.flip(x, axis), axis), axis)


REFS = {
    "sum": lambda x, a: np.sum(x, a, dtype=np.float64 if x.dtype.kind == "f" else
                               (np.int32 if x.dtype.kind == "i" and x.dtype.itemsize < 4 else
                                (np.uint32 if x.dtype.itemsize < 4 else x.dtype))),
    "max": np.max, "min": np.min, "argmax": _first_argmax,
    "argmin": lambda x, a: np.argmin(x, a).astype(np.int32),
    "xor_sum": lambda x, a: np.bitwise_xor.reduce(x, a), "reduce_or": lambda x, a: np.bitwise_or.reduce(x, a),
    "max_idx": np.max, "cumsum": lambda x, a: np.cumsum(x, a, dtype=np.float64 if x.dtype.kind == "f" else
                                                         _out_dtype("cumsum", x.dtype)),
    "cumprod": lambda x, a: np.cumprod(x, a, dtype=x.dtype), "revmax": _rev_max,
    "count_sum": lambda x, a: np.cumsum(x, a, dtype=np.float64),
}
SCANS = ("cumsum", "cumprod", "revmax", "count_sum")


def _out_dtype(op, dt):
    d = np.dtype(dt)
    if op in ("argmax", "argmin"):
        return np.int32
    if op in ("sum", "cumsum") and d.kind in "iu" and d.itemsize < 4:
        return np.int32 if d.kind == "i" else np.uint32
    return d


def _reduce(op, dt, axis, tol=None, xfail=None, m=M, n=N, warps=None):
    scan = op in SCANS
    M, N = m, n
    oshape = (M, N) if scan else ((N,) if axis == 0 else (M,))
    ishape = (M, N) if op == "count_sum" else oshape

    def args(rng):
        x = _vals(dt, rng, (M, N), small=op == "cumprod")
        if op in ("argmax", "argmin", "max_idx"):
            x[M - 1, :] = x[0, :]            # ties: the lower index wins
            x[:, 7] = x[:, 2]
        return [x, np.zeros(oshape, _out_dtype(op, dt)), np.zeros(ishape, np.int32)]

    def ref(a):
        x = a[0]
        want = {1: np.asarray(REFS[op](x, axis)).astype(_out_dtype(op, dt))}
        if op == "max_idx":
            want[2] = _first_argmax(x, axis)
        if op == "count_sum":
            want[2] = np.cumsum(np.ones((M, N), np.int32), axis, dtype=np.int32)
        return want

    ops = ["scan"] if scan else ["reduce"]
    size = "" if (m, n) == (16, 32) else f"-{m}x{n}-{warps}warps"
    add(f"{'scan' if scan else 'reduce'}-{op}-axis{axis}-{dt}{size}", reduce_kernel, args, ref, ops,
        cx=dict(OP=op, AXIS=axis, M=M, N=N), tol=tol, xfail=xfail,
        options=dict(num_warps=warps) if warps else None)


FTOL = (1e-5, 1e-5)
_reduce("sum", "float32", 0, FTOL)
_reduce("sum", "float32", 1, FTOL)
_reduce("sum", "int8", 0)
_reduce("sum", "int64", 1)
_reduce("sum", "float16", 1, (1e-2, 0.1))           # fp16 partial sums: order-dependent
_reduce("sum", "float64", 0, (1e-13, 1e-13))
_reduce("max", "int8", 0)
_reduce("max", "float16", 1)
_reduce("max", "uint32", 1)
_reduce("min", "uint32", 0)
_reduce("min", "float64", 1)
_reduce("min", "int16", 1)
_reduce("argmax", "float32", 1)
_reduce("argmax", "int32", 0)
_reduce("argmin", "int32", 0)
_reduce("argmin", "float16", 1)
_reduce("xor_sum", "uint16", 1)
_reduce("xor_sum", "int64", 0)
_reduce("reduce_or", "int32", 0)
_reduce("max_idx", "float32", 0)
_reduce("max_idx", "int32", 1)
_reduce("cumsum", "int32", 0)
_reduce("cumsum", "float32", 1, FTOL)
_reduce("cumsum", "int8", 1)
_reduce("cumprod", "int64", 1)
_reduce("cumprod", "int32", 0)
_reduce("revmax", "float32", 0)
_reduce("revmax", "int16", 1)
_reduce("count_sum", "float32", 1, FTOL)
_reduce("count_sum", "float32", 0, FTOL)
_reduce("cumsum", "float16", 0, (1e-2, 0.06))
# larger blocks over more warps: the GPU combines across warps through shared memory
_reduce("sum", "float32", 0, (1e-5, 1e-4), m=128, n=64, warps=8)
_reduce("max", "int32", 1, m=2, n=2048, warps=8)
_reduce("argmin", "float32", 1, m=2, n=1024, warps=4)
_reduce("cumsum", "int32", 1, m=2, n=1024, warps=4)
_reduce("cumsum", "float32", 0, (1e-5, 1e-4), m=256, n=16, warps=8)
_reduce("revmax", "float64", 1)


@triton.jit
def reduce1d_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    s = tl.sum(x, axis=0)                        # a scalar
    tl.store(o_ptr, s)
    tl.store(o_ptr + 1 + offs, tl.cumsum(x, 0), mask=offs < n)


for dt in ["int64", "float32"]:
    add(f"reduce-scan-1d-masked-{dt}", reduce1d_kernel,
        lambda rng, dt=dt: [_vals(dt, rng, 100), np.zeros(101, dt), 100],
        lambda a, dt=dt: {1: np.concatenate([[a[0].sum()], np.cumsum(a[0])]).astype(dt)},
        ["reduce", "scan"], cx=dict(BLOCK=128), tol=None if dt == "int64" else FTOL)


@triton.jit
def reduce3d_kernel(x_ptr, o_ptr, s_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr,
                    AXIS: tl.constexpr, RA: tl.constexpr, RB: tl.constexpr, RC: tl.constexpr):
    ra = tl.arange(0, A)[:, None, None]
    rb = tl.arange(0, B)[None, :, None]
    rc = tl.arange(0, C)[None, None, :]
    x = tl.load(x_ptr + ra * B * C + rb * C + rc)
    r = tl.max(x, AXIS, keep_dims=True)          # (RA, RB, RC): a size-1 dim at AXIS
    oa = tl.arange(0, RA)[:, None, None]
    ob = tl.arange(0, RB)[None, :, None]
    oc = tl.arange(0, RC)[None, None, :]
    tl.store(o_ptr + oa * RB * RC + ob * RC + oc, r)
    tl.store(s_ptr + ra * B * C + rb * C + rc, tl.cumsum(x, AXIS))


for axis in range(3):
    red = tuple(1 if i == axis else s for i, s in enumerate((4, 8, 16)))
    add(f"reduce-scan-3d-axis{axis}-int32", reduce3d_kernel,
        lambda rng, red=red: [_vals("int32", rng, (4, 8, 16)), np.zeros(red, np.int32),
                              np.zeros((4, 8, 16), np.int32)],
        lambda a, axis=axis: {1: np.max(a[0], axis, keepdims=True), 2: np.cumsum(a[0], axis, dtype=np.int32)},
        ["reduce", "scan"], cx=dict(A=4, B=8, C=16, AXIS=axis, RA=red[0], RB=red[1], RC=red[2]))


# -- dot ---------------------------------------------------------------------------------------------

@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, d_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               IN: tl.constexpr, MODE: tl.constexpr, PREC: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if IN != a.dtype:                            # bf16 / fp8 operands travel as float32
        a = a.to(IN)
        b = b.to(IN)
    if MODE == "acc":
        c = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
        d = tl.dot(a, b, acc=c)
    elif MODE == "out_fp16":
        d = tl.dot(a, b, out_dtype=tl.float16)
    elif MODE == "int":
        d = tl.dot(a, b, out_dtype=tl.int32)
    elif PREC == "default":
        d = tl.dot(a, b)
    else:
        d = tl.dot(a, b, input_precision=PREC)
    tl.store(d_ptr + rm[:, None] * N + rn[None, :], d.to(d_ptr.dtype.element_ty))


def _tf32(x):
    """float32 values rounded to tf32 (10 mantissa bits, nearest even)."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0xFFF + ((u >> 13) & 1)) >> 13) << 13
    return u.astype(np.uint32).view(np.float32)


def _dot(name, m, n, k, dt, mode="plain", prec="default", out=np.float32, tol=(1e-3, 1e-3), ptx=None,
         xfail=None, options=None, travel=None, model=None, gaps=None, ttir_re=()):
    st = travel or dt

    def args(rng):
        if np.dtype(st).kind in "iu":
            a = rng.integers(-128, 127, (m, k), endpoint=True).astype(st)
            b = rng.integers(-128, 127, (k, n), endpoint=True).astype(st)
        else:
            a = rng.uniform(-1, 1, (m, k))
            b = rng.uniform(-1, 1, (k, n))
            if model:
                a, b = model(a), model(b)
            a, b = a.astype(st), b.astype(st)
        c = rng.uniform(-1, 1, (m, n)).astype(out)
        return [a, b, c, np.zeros((m, n), out)]

    def ref(a):
        x, y = a[0].astype(np.float64), a[1].astype(np.float64)
        if prec == "tf32":
            x, y = _tf32(a[0]).astype(np.float64), _tf32(a[1]).astype(np.float64)
        d = x @ y
        if mode == "acc":
            d = d + a[2]
        return {3: d.astype(out) if np.dtype(out).kind in "iu" else d}

    tldt = {"float16": tl.float16, "float32": tl.float32, "float64": tl.float64, "int8": tl.int8,
            "bfloat16": tl.bfloat16, "e4m3": tl.float8e4nv, "e5m2": tl.float8e5}[dt]
    add(name, dot_kernel, args, ref, ["dot"], cx=dict(M=m, N=n, K=k, IN=tldt, MODE=mode, PREC=prec),
        tol=None if np.dtype(out).kind in "iu" else tol, ptx=ptx, xfail=xfail, options=options, gaps=gaps,
        ttir_re=ttir_re)


MMA = ["mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"]


def _no_mma(why, archs=("sm80", "sm90"), form="mma"):
    return {b: ([form], f"no tensor-core instruction ({why}): the dot runs on FMAs") for b in archs}


_dot("dot-fp16-64x64x32", 64, 64, 32, "float16", ptx={"sm80": MMA, "sm90": ["wgmma.mma_async"]})
_dot("dot-fp16-16x16x16", 16, 16, 16, "float16", ptx={"sm80": MMA, "sm90": MMA})  # 4 warps, 2 tiles: warps repeat
_dot("dot-fp16-acc-32x16x64", 32, 16, 64, "float16", mode="acc", ptx={"sm80": MMA, "sm90": MMA})
_dot("dot-fp16-out-fp16", 32, 32, 32, "float16", mode="out_fp16", out=np.float16, tol=(1e-2, 5e-2),
     ptx={b: ["mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"] for b in ("sm80", "sm90")})
_dot("dot-bf16-32x32x32", 32, 32, 32, "bfloat16", travel="float32",
     model=lambda v: bf16_round(v.astype(np.float32)),
     ptx={b: ["mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"] for b in ("sm80", "sm90")})
_dot("dot-tf32-32x32x32", 32, 32, 32, "float32", prec="tf32", tol=(5e-3, 5e-3),
     ptx={b: ["mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"] for b in ("sm80", "sm90")})
_dot("dot-fp32-ieee-32x32x16", 32, 32, 16, "float32", prec="ieee", tol=(1e-5, 1e-5))
_F64_DOT = ("tl.dot of fp64 operands gets an f32 accumulator and result (Triton: f64), so the "
            "product is computed in fp32")
_dot("dot-fp64-16x16x16", 16, 16, 16, "float64", out=np.float64, tol=(1e-12, 1e-12),
     ttir_re=[r"= dot .* : block<16x16xf64>"], xfail={b: _F64_DOT for b in ("cpu", "sm80", "sm90", "gpu")})
_dot("dot-int8-32x32x32", 32, 32, 32, "int8", mode="int", out=np.int32,
     ptx={b: ["mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"] for b in ("sm80", "sm90")})
_dot("dot-fp8e5-32x32x32", 32, 32, 32, "e5m2", travel="float32", model=lambda v: fp8_round(v, "e5m2"),
     ptx={"sm80": MMA, "sm90": MMA})  # upcast to fp16 (split-dots), as Triton
_dot("dot-fp8e4nv-64x64x32", 64, 64, 32, "e4m3", travel="float32", model=lambda v: fp8_round(v, "e4m3"),
     ptx={"sm80": MMA, "sm90": ["wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3"]})


@triton.jit
def batched_dot_kernel(a_ptr, b_ptr, d_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                       K: tl.constexpr):
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rb * M * K + rm * K + rk[None, None, :])
    b = tl.load(b_ptr + rb * K * N + rk[None, :, None] * N + rn)
    tl.store(d_ptr + rb * M * N + rm * N + rn, tl.dot(a, b))


add("dot-3d-batched-fp16", batched_dot_kernel,
    lambda rng: [rng.uniform(-1, 1, (2, 16, 32)).astype(np.float16),
                 rng.uniform(-1, 1, (2, 32, 16)).astype(np.float16), np.zeros((2, 16, 16), np.float32)],
    lambda a: {2: np.matmul(a[0].astype(np.float64), a[1].astype(np.float64))},
    ["dot"], cx=dict(B=2, M=16, N=16, K=32), tol=(1e-3, 1e-3),
    gaps=_no_mma("a 3-D batched dot; Triton uses mma.sync per batch"))


@triton.jit
def loop_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                    BK: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, BK)
    acc = tl.zeros((M, N), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


# the K loop pipelined (num_stages=3): the GPU passes copy the A and B tiles
# ahead through cp.async into shared memory
add("dot-pipelined-k-loop-fp16", loop_dot_kernel,
    lambda rng: [rng.uniform(-1, 1, (64, 256)).astype(np.float16),
                 rng.uniform(-1, 1, (256, 64)).astype(np.float16), np.zeros((64, 64), np.float32)],
    lambda a: {2: a[0].astype(np.float64) @ a[1].astype(np.float64)},
    ["dot", "for"], cx=dict(M=64, N=64, K=256, BK=32), tol=(2e-3, 2e-3), options=dict(num_stages=3),
    ttgir=["async_copy", "async_commit", "async_wait", "local_read"],
    ptx={"sm80": ["cp.async.cg.shared.global", "cp.async.wait_group"],
         "sm90": ["cp.async.cg.shared.global", "wgmma.mma_async"]})


@triton.jit
def desc_loop_dot_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                         WS: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), warp_specialize=WS):
        a = a_desc.load([0, k * BK])
        b = b_desc.load([0, k * BK])
        acc = tl.dot(a, b.T, acc)
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


# descriptors made in the kernel from parameters, the K loop pipelined: on
# sm_90 the launch encodes their tensor maps and the tiles come through the
# tensor memory access unit (K = 200: the last tile's tail is zero-filled)
add("dot-pipelined-descriptors-fp16", desc_loop_dot_kernel,
    lambda rng: [rng.uniform(-1, 1, (64, 200)).astype(np.float16),
                 rng.uniform(-1, 1, (64, 200)).astype(np.float16), np.zeros((64, 64), np.float32), 64, 64, 200],
    lambda a: {2: a[0].astype(np.float64) @ a[1].astype(np.float64).T},
    ["dot", "for"], cx=dict(BM=64, BN=64, BK=32, WS=False), tol=(2e-3, 2e-3), options=dict(num_stages=3),
    ttgir=["tma_copy", "tma_wait", "tma_init", "tma_inval"],
    ptx={"sm80": ["mma.sync.aligned.m16n8k16"],
         "sm90": ["cp.async.bulk.tensor.2d", "mbarrier.try_wait.parity", "wgmma.mma_async"]})


# the same loop asking for warp specialization: on sm_90 a producer
# warpgroup copies the tiles (its own loop in a warp_specialize region) and
# the consumers (two warpgroups: 128 rows with num_warps 4) release each
# slot; elsewhere the request changes nothing
add("dot-warp-specialized-descriptors-fp16", desc_loop_dot_kernel,
    lambda rng: [rng.uniform(-1, 1, (128, 200)).astype(np.float16),
                 rng.uniform(-1, 1, (64, 200)).astype(np.float16), np.zeros((128, 64), np.float32), 128, 64, 200],
    lambda a: {2: a[0].astype(np.float64) @ a[1].astype(np.float64).T},
    ["dot", "for"], cx=dict(BM=128, BN=64, BK=32, WS=True), tol=(2e-3, 2e-3), options=dict(num_stages=3),
    ttgir=["warp_specialize", "tma_release", "tma_copy", "tma_wait", "tma_init", "tma_inval"],
    ptx={"sm80": ["mma.sync.aligned.m16n8k16"],
         "sm90": ["cp.async.bulk.tensor.2d", "mbarrier.arrive.shared::cta.b64", "setmaxnreg.inc", "bar.sync \t1, 256;"]})


@triton.jit
def desc_loaded_sizes_dot_kernel(a_ptr, b_ptr, c_ptr, sizes, BM: tl.constexpr, BN: tl.constexpr,
                                 BK: tl.constexpr):
    M = tl.load(sizes)
    N = tl.load(sizes + 1)
    K = tl.load(sizes + 2)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([0, k * BK]), b_desc.load([0, k * BK]).T, acc)
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


# desc_loop_dot_kernel with the sizes read from memory: on sm_90 the kernel
# makes the two maps itself (tensormap_create, in the program's global scratch) and
# the tiles still come through the tensor memory access unit
add("dot-pipelined-made-maps-fp16", desc_loaded_sizes_dot_kernel,
    lambda rng: [rng.uniform(-1, 1, (64, 200)).astype(np.float16),
                 rng.uniform(-1, 1, (64, 200)).astype(np.float16), np.zeros((64, 64), np.float32),
                 np.array([64, 64, 200], np.int32)],
    lambda a: {2: a[0].astype(np.float64) @ a[1].astype(np.float64).T},
    ["dot", "for"], cx=dict(BM=64, BN=64, BK=32), tol=(2e-3, 2e-3), options=dict(num_stages=3),
    ttgir=["tensormap_create", "tma_copy", "tma_wait", "tma_init", "tma_inval"],
    ptx={"sm80": ["mma.sync.aligned.m16n8k16"],
         "sm90": ["tensormap.replace.tile.global_address", "fence.proxy.tensormap::generic.acquire.gpu",
                  "cp.async.bulk.tensor.2d", "wgmma.mma_async"]})


@triton.jit
def desc_store_kernel(x_ptr, c_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * BN + rn[None, :])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    c_desc.store([0, 0], x * 2)


# a descriptor store through a descriptor made in the kernel: a masked
# store everywhere (only TensorDescriptor arguments' stores go through the
# tensor memory access unit on sm_90); what lies past the descriptor's rows
# (M = 50 of the block's 64) is not written
add("descriptor-store-fp16", desc_store_kernel,
    lambda rng: [rng.uniform(-1, 1, (64, 64)).astype(np.float16), np.zeros((64, 64), np.float16), 50, 64],
    lambda a: {1: np.concatenate([2 * a[0][:50].astype(np.float64), np.zeros((14, 64))])},
    ["store"], cx=dict(BM=64, BN=64), tol=(1e-3, 1e-3))
