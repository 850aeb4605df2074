"""Corpus: casts between every integer and float dtype (ints wrap, float ->
int truncates and saturates), bf16 and fp8 (e4m3fn, e5m2) round trips,
round-toward-zero downcasts, bitcasts, and pointer <-> integer casts."""
import numpy as np

import ctriton as triton
import ctriton.language as tl
from corpus import add
from cpu_util import bf16_round, fp8_round

N, BLOCK = 100, 64
GRID = (2,)
DSTS = ["int8", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64"]


@triton.jit
def cast_kernel(x_ptr, o0, o1, o2, o3, o4, o5, o6, o7, o8, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(o0 + offs, x.to(o0.dtype.element_ty), mask=m)
    tl.store(o1 + offs, x.to(o1.dtype.element_ty), mask=m)
    tl.store(o2 + offs, x.to(o2.dtype.element_ty), mask=m)
    tl.store(o3 + offs, x.to(o3.dtype.element_ty), mask=m)
    tl.store(o4 + offs, x.to(o4.dtype.element_ty), mask=m)
    tl.store(o5 + offs, x.to(o5.dtype.element_ty), mask=m)
    tl.store(o6 + offs, x.to(o6.dtype.element_ty), mask=m)
    tl.store(o7 + offs, x.to(o7.dtype.element_ty), mask=m)
    tl.store(o8 + offs, x.to(o8.dtype.element_ty), mask=m)


def _to(x, dt):
    """numpy model of x.to(dt): ints wrap; float -> int truncates and
    saturates (NaN -> 0); int -> float and float -> float round to nearest."""
    d = np.dtype(dt)
    if x.dtype.kind == "f" and d.kind in "iu":
        info = np.iinfo(d)
        out = []
        for v in x.astype(np.float64):
            if np.isnan(v):
                out.append(0)
            elif np.isinf(v):
                out.append(info.max if v > 0 else info.min)
            else:
                out.append(min(max(int(np.trunc(v)), info.min), info.max))
        return np.array(out, dtype=d)
    if x.dtype.kind in "iu" and d.kind in "iu":
        return np.array([int(v) & ((1 << 8 * d.itemsize) - 1) for v in x], np.uint64).astype(
            "uint" + str(8 * d.itemsize)).view(d)
    with np.errstate(over="ignore"):
        return x.astype(d)


def _src(dt):
    def gen(rng):
        if dt.startswith("float"):
            v = rng.uniform(-300, 300, N)
            v[:8] = [0.5, -0.5, 1.99, -1.99, 1e10, -1e10, 65504.0, -70000.0]   # saturating, f16 overflow
            with np.errstate(over="ignore"):
                return v.astype(dt)
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, N, dtype=dt, endpoint=True)
    return gen


def _cast_case(src):
    def args(rng):
        return [_src(src)(rng)] + [np.zeros(N, d) for d in DSTS] + [N]

    def ref(a):
        return {i + 1: _to(a[0], d) for i, d in enumerate(DSTS)}

    add(f"cast-from-{src}", cast_kernel, args, ref, ["cast"], cx=dict(BLOCK=BLOCK), grid=GRID)


for src in ["int8", "uint8", "int16", "int32", "uint32", "int64", "uint64", "float16", "float32",
            "float64"]:
    _cast_case(src)


# -- through a narrow float: bf16, fp8 -------------------------------------------------------

@triton.jit
def narrow_kernel(x_ptr, o_ptr, n, MID: tl.constexpr, ROUND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = x.to(MID, fp_downcast_rounding=ROUND)
    tl.store(o_ptr + offs, y.to(o_ptr.dtype.element_ty), mask=m)


def _rtz(v, dt):
    """Round toward zero of float64 values to dt (a numpy float type)."""
    r = v.astype(dt)
    over = np.abs(r.astype(np.float64)) > np.abs(v)
    r[over] = np.nextafter(r[over], np.zeros_like(r[over]))
    return r


def _narrow_case(name, src, mid, dst, lo, hi, model, rounding="rtne", xfail=None):
    def args(rng):
        v = rng.uniform(lo, hi, N) * rng.choice([-1.0, 1.0], N)
        v[:4] = [0.0, lo / 3, -hi, hi]
        return [v.astype(src), np.zeros(N, dst), N]

    def ref(a):
        return {1: model(a[0].astype(np.float64)).astype(dst)}

    add(name, narrow_kernel, args, ref, ["cast"], cx=dict(MID=mid, ROUND=rounding, BLOCK=BLOCK),
        grid=GRID, xfail=xfail)


def _bf16(v):
    return bf16_round(v.astype(np.float32)).astype(np.float64)


def _bf16_rtz(v):
    u = v.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
    return u.view(np.float32).astype(np.float64)


_narrow_case("cast-bf16-float32", "float32", tl.bfloat16, "float32", 1e-3, 1e4, _bf16)
_narrow_case("cast-bf16-float16", "float16", tl.bfloat16, "float32", 1e-3, 6e4, _bf16)
_narrow_case("cast-bf16-float64", "float64", tl.bfloat16, "float64", 1e-3, 1e4, _bf16)
_narrow_case("cast-bf16-int32", "int32", tl.bfloat16, "float32", 1, 1e6, _bf16)
_narrow_case("cast-bf16-rtz", "float32", tl.bfloat16, "float32", 1e-3, 1e4, _bf16_rtz, "rtz")
_narrow_case("cast-f16-rtz", "float32", tl.float16, "float32", 1e-3, 6e4,
             lambda v: _rtz(v.astype(np.float32).astype(np.float64), np.float16).astype(np.float64), "rtz")
for fmt, tlfmt, hi in [("e4m3", tl.float8e4nv, 440.0), ("e5m2", tl.float8e5, 57000.0)]:
    name = "fp8e4nv" if fmt == "e4m3" else "fp8e5"
    _narrow_case(f"cast-{name}-float32", "float32", tlfmt, "float32", 2e-3, hi,
                 lambda v, fmt=fmt: fp8_round(v, fmt))
    _narrow_case(f"cast-{name}-float16", "float16", tlfmt, "float16", 2e-3, hi,
                 lambda v, fmt=fmt: fp8_round(v, fmt))


# -- bitcast -------------------------------------------------------------------------------------

@triton.jit
def bitcast_kernel(a_ptr, b_ptr, c_ptr, oa, ob, oc, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(oa + offs, tl.load(a_ptr + offs).to(tl.int32, bitcast=True))
    tl.store(ob + offs, tl.load(b_ptr + offs).to(tl.float16, bitcast=True))
    tl.store(oc + offs, tl.load(c_ptr + offs).to(tl.float64, bitcast=True) * 2)


def _bitcast_args(rng):
    a = rng.uniform(-10, 10, BLOCK).astype(np.float32)
    b = rng.integers(0, 0x7BFF, BLOCK, dtype=np.uint16)        # finite fp16 bit patterns
    c = rng.uniform(-10, 10, BLOCK).view(np.uint64)
    return [a, b, c, np.zeros(BLOCK, np.int32), np.zeros(BLOCK, np.float16), np.zeros(BLOCK, np.float64)]


add("bitcast", bitcast_kernel, _bitcast_args,
    lambda a: {3: a[0].view(np.int32), 4: a[1].view(np.float16), 5: a[2].view(np.float64) * 2},
    ["bitcast"], cx=dict(BLOCK=BLOCK))


# -- pointer <-> integer ----------------------------------------------------------------------------

@triton.jit
def ptr_int_kernel(x_ptr, o_ptr, d_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = x_ptr + offs
    base = x_ptr.to(tl.int64)                                 # ptr_to_int (scalar)
    tl.store(d_ptr + offs, p.to(tl.int64) - base)             # ptr_to_int (block): byte offsets
    q = (base + offs.to(tl.int64) * 4).to(tl.pointer_type(tl.float32))   # int_to_ptr
    tl.store(o_ptr + offs, tl.load(q) * 2)


add("ptr-int-casts", ptr_int_kernel,
    lambda rng: [rng.uniform(-1, 1, BLOCK).astype(np.float32), np.zeros(BLOCK, np.float32),
                 np.zeros(BLOCK, np.int64)],
    lambda a: {1: a[0] * 2, 2: np.arange(BLOCK, dtype=np.int64) * 4},
    ["ptr_to_int", "int_to_ptr"], cx=dict(BLOCK=BLOCK))
