"""Corpus: elementwise arithmetic, bitwise ops, shifts, comparisons and
select, umulhi, fma, per dtype (int8..int64, uint8..uint64, fp16, bf16,
fp32, fp64). 1-D blocks over two programs with a masked tail. bf16 values
travel as float32 (exact) and are computed in bf16 inside the kernel."""
import numpy as np

import ctriton as triton
import ctriton.language as tl
from corpus import add
from cpu_util import bf16_round, c_div, c_mod

N, BLOCK = 100, 64
GRID = (2,)
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
TLDT = {n: getattr(tl, n) for n in INTS + FLOATS}
BITS = {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32,
        "int64": 64, "uint64": 64}


@triton.jit
def _put(o_ptr, k, n, offs, m, v):
    tl.store(o_ptr + k * n + offs, v.to(o_ptr.dtype.element_ty), mask=m)


@triton.jit
def binary_kernel(x_ptr, y_ptr, o_ptr, n, FAMILY: tl.constexpr, DT: tl.constexpr,
                  BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(DT)
    y = tl.load(y_ptr + offs, mask=m).to(DT)
    if FAMILY == "arith":
        _put(o_ptr, 0, n, offs, m, x + y)
        _put(o_ptr, 1, n, offs, m, x - y)
        _put(o_ptr, 2, n, offs, m, x * y)
        _put(o_ptr, 3, n, offs, m, -x)
    elif FAMILY == "divrem":
        if DT.is_floating():
            _put(o_ptr, 0, n, offs, m, x / y)
        else:
            _put(o_ptr, 0, n, offs, m, x // y)
        _put(o_ptr, 1, n, offs, m, x % y)
    elif FAMILY == "bitwise":
        _put(o_ptr, 0, n, offs, m, x & y)
        _put(o_ptr, 1, n, offs, m, x | y)
        _put(o_ptr, 2, n, offs, m, x ^ y)
        _put(o_ptr, 3, n, offs, m, ~x)
    elif FAMILY == "shift":
        _put(o_ptr, 0, n, offs, m, x << y)
        _put(o_ptr, 1, n, offs, m, x >> y)
    elif FAMILY == "compare":
        _put(o_ptr, 0, n, offs, m, tl.minimum(x, y))
        _put(o_ptr, 1, n, offs, m, tl.maximum(x, y))
        _put(o_ptr, 2, n, offs, m, x < y)
        _put(o_ptr, 3, n, offs, m, x <= y)
        _put(o_ptr, 4, n, offs, m, x > y)
        _put(o_ptr, 5, n, offs, m, x >= y)
        _put(o_ptr, 6, n, offs, m, x == y)
        _put(o_ptr, 7, n, offs, m, x != y)
        _put(o_ptr, 8, n, offs, m, tl.where(x > y, x, y + y))
    elif FAMILY == "umulhi":
        _put(o_ptr, 0, n, offs, m, tl.umulhi(x, y))
    else:
        tl.static_assert(FAMILY == "abs")
        _put(o_ptr, 0, n, offs, m, tl.abs(x))


@triton.jit
def fma_kernel(x_ptr, y_ptr, z_ptr, o_ptr, n, DT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(DT)
    y = tl.load(y_ptr + offs, mask=m).to(DT)
    z = tl.load(z_ptr + offs, mask=m).to(DT)
    tl.store(o_ptr + offs, tl.fma(x, y, z).to(o_ptr.dtype.element_ty), mask=m)


def storage(dt):
    return np.float32 if dt == "bfloat16" else np.dtype(dt)


def rounded(v, dt):
    """float64 values rounded to dt, in dt's storage."""
    if dt == "bfloat16":
        return bf16_round(np.asarray(v, np.float32))
    return np.asarray(v).astype(dt)


def ints(dt, rng, lo=None, hi=None):
    info = np.iinfo(dt)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return rng.integers(lo, hi, size=N, dtype=dt, endpoint=True)


def floats(dt, rng, lo=-4.0, hi=4.0):
    return rounded(rng.uniform(lo, hi, N), dt)


def compute(dt, f, *xs):
    """f over the values, computed in dt (bf16: in float32, rounded to bf16)."""
    with np.errstate(all="ignore"):
        if dt == "bfloat16":
            return bf16_round(f(*[np.asarray(x, np.float32) for x in xs]))
        return f(*xs).astype(dt)


def binary(family, dt, xs, ys, refs, ops, tol=None, xfail=None):
    nout = len(refs)

    def args(rng):
        x, y = xs(rng), ys(rng)
        if family == "compare":
            y[::4] = x[::4]
        return [x, y, np.zeros(nout * N, storage(dt)), N]

    def ref(a):
        x, y = a[0], a[1]
        return {2: np.concatenate([np.asarray(r(x, y)).astype(storage(dt)) for r in refs])}

    add(f"{family}-{dt}", binary_kernel, args, ref, ops, cx=dict(FAMILY=family, DT=TLDT[dt], BLOCK=BLOCK),
        grid=GRID, tol=tol, xfail=xfail)


def unsigned(dt):
    return "uint" + dt[3:] if dt.startswith("int") else dt


# -- + - * neg ----------------------------------------------------------------------

for dt in INTS + FLOATS:
    gen = (lambda rng, dt=dt: ints(dt, rng)) if dt in INTS else (lambda rng, dt=dt: floats(dt, rng))
    binary("arith", dt, gen, gen,
           [lambda x, y, dt=dt: compute(dt, np.add, x, y),
            lambda x, y, dt=dt: compute(dt, np.subtract, x, y),
            lambda x, y, dt=dt: compute(dt, np.multiply, x, y),
            lambda x, y, dt=dt: compute(dt, np.negative, x)],
           ["add", "sub", "mul", "neg", "program_id", "make_range", "splat", "addptr", "load",
            "store", "cmp", "constant"])

# -- // % (ints: C truncation), / % (floats) --------------------------------------------


def _divisors(dt):
    def gen(rng):
        if dt in INTS:
            info = np.iinfo(dt)
            y = ints(dt, rng, max(info.min, -1000), min(info.max, 1000))
            y[y == 0] = 7
            y[y == -1] = 3           # no INT_MIN / -1 (test_semantics has the edge cases)
            y[:4] = [1, 3, 7, 100] if info.min == 0 else [1, -3, 7, -100]
            return y
        return (rounded(rng.uniform(0.5, 4.0, N) * rng.choice([-1.0, 1.0], N), dt))
    return gen


for dt in INTS:
    binary("divrem", dt, lambda rng, dt=dt: ints(dt, rng), _divisors(dt),
           [lambda x, y: c_div(x, y), lambda x, y: c_mod(x, y)], ["div", "rem"])
for dt in FLOATS:
    # / and % of 16-bit floats compute in float32 (Triton's promotion)
    binary("divrem", dt, lambda rng, dt=dt: floats(dt, rng, -8, 8), _divisors(dt),
           [lambda x, y, dt=dt: (x.astype(np.float32) / y.astype(np.float32) if dt != "float64" else x / y),
            lambda x, y, dt=dt: (np.fmod(x.astype(np.float32), y.astype(np.float32)) if dt != "float64"
                                 else np.fmod(x, y))],
           ["div", "rem"], tol={"float16": (1e-3, 1e-3), "float64": (1e-14, 1e-14)}.get(dt, (1e-6, 1e-6)))

# -- & | ^ ~, << >> ---------------------------------------------------------------------

for dt in INTS:
    gen = (lambda rng, dt=dt: ints(dt, rng))
    binary("bitwise", dt, gen, gen, [np.bitwise_and, np.bitwise_or, np.bitwise_xor,
                                     lambda x, y: np.invert(x)], ["and", "or", "xor", "not"])


def _shl(x, y):
    u = x.view(unsigned(x.dtype.name))
    return (u << y.astype(u.dtype)).view(x.dtype)


for dt in INTS:
    binary("shift", dt, lambda rng, dt=dt: ints(dt, rng), lambda rng, dt=dt: ints(dt, rng, 0, BITS[dt] - 1),
           [_shl, lambda x, y: x >> y], ["shl", "shr"])

# -- minimum maximum, comparisons, where ------------------------------------------------------


for dt in INTS + FLOATS:   # (x and y are equal on every fourth element)
    gen = (lambda rng, dt=dt: ints(dt, rng)) if dt in INTS else (lambda rng, dt=dt: floats(dt, rng))
    binary("compare", dt, gen, gen,
           [np.minimum, np.maximum, np.less, np.less_equal, np.greater, np.greater_equal, np.equal,
            np.not_equal, lambda x, y, dt=dt: np.where(x > y, x, compute(dt, np.add, y, y))],
           ["min", "max", "cmp", "select"])

# -- abs of ints (floats: cases_math), umulhi -----------------------------------------------------

for dt in ["int8", "int16", "int32", "int64"]:
    binary("abs", dt, lambda rng, dt=dt: ints(dt, rng), lambda rng, dt=dt: ints(dt, rng),
           [lambda x, y: np.abs(x)], ["abs"])


def _umulhi(x, y):
    bits = x.dtype.itemsize * 8
    mask = (1 << bits) - 1
    out = [((int(a) & mask) * (int(b) & mask)) >> bits for a, b in zip(x, y)]
    return np.array(out, dtype=unsigned(x.dtype.name)).view(x.dtype)


for dt in ["int32", "uint32", "int64", "uint64"]:
    binary("umulhi", dt, lambda rng, dt=dt: ints(dt, rng), lambda rng, dt=dt: ints(dt, rng),
           [_umulhi], ["umulhi"])

# -- fma ----------------------------------------------------------------------------------------


def _fma_case(dt):
    def args(rng):
        return [floats(dt, rng), floats(dt, rng), floats(dt, rng), np.zeros(N, storage(dt)), N]

    def ref(a):
        x, y, z = (v.astype(np.float64) for v in a[:3])
        return {3: rounded(x * y + z, dt)}

    tol = {"float16": (1e-3, 1e-3), "bfloat16": (8e-3, 8e-3), "float32": (1e-6, 1e-6),
           "float64": (1e-14, 1e-14)}[dt]
    add(f"fma-{dt}", fma_kernel, args, ref, ["fma"], cx=dict(DT=TLDT[dt], BLOCK=BLOCK), grid=GRID, tol=tol)


for dt in FLOATS:
    _fma_case(dt)


# -- NaN in minimum / maximum / clamp ------------------------------------------------------------

@triton.jit
def nan_minmax_kernel(x_ptr, y_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(o_ptr + offs, tl.minimum(x, y))                                   # NaN ignored
    tl.store(o_ptr + BLOCK + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(o_ptr + 2 * BLOCK + offs, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(o_ptr + 3 * BLOCK + offs, tl.clamp(x, -0.5, 0.5))                   # NaN -> -0.5


def _nan_args(dt):
    def gen(rng):
        x = rng.uniform(-1, 1, 64).astype(dt)
        y = rng.uniform(-1, 1, 64).astype(dt)
        x[::5] = np.nan
        y[::7] = np.nan
        return [x, y, np.zeros(4 * 64, dt)]
    return gen


for dt in ["float32", "float16", "float64"]:
    add(f"minmax-nan-{dt}", nan_minmax_kernel, _nan_args(dt),
        lambda a: {2: np.concatenate([np.fmin(a[0], a[1]), np.maximum(a[0], a[1]), np.minimum(a[0], a[1]),
                                      np.fmin(np.fmax(a[0], -0.5), 0.5)])},
        ["min", "max"], cx=dict(BLOCK=64))
