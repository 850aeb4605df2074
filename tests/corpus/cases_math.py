"""Corpus: the math ops (one fp32 case per op, all of them in one case for
fp64; abs of fp16 and bf16), sqrt_rn, div_rn, and device-library externs
(libdevice)."""
import math

import numpy as np

import ctriton as triton
import ctriton.language as tl
from corpus import add
from cpu_util import bf16_round
from ctriton.language.extra import libdevice

N, BLOCK = 100, 64
GRID = (2,)
TLDT = {"float16": tl.float16, "bfloat16": tl.bfloat16, "float32": tl.float32, "float64": tl.float64}

# name -> (reads the positive input p instead of x, numpy reference)
FNS = {
    "exp": (False, np.exp), "exp2": (False, np.exp2), "log": (True, np.log), "log2": (True, np.log2),
    "sqrt": (True, np.sqrt), "rsqrt": (True, lambda p: 1 / np.sqrt(p)), "sin": (False, np.sin),
    "cos": (False, np.cos), "erf": (False, np.vectorize(math.erf)), "floor": (False, np.floor),
    "ceil": (False, np.ceil), "abs": (False, np.abs), "sqrt_rn": (True, np.sqrt),
}
# tl.div_rn(x, p): correctly rounded division, its reference in _ref_of
ALL = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf", "floor", "ceil", "abs"]


@triton.jit
def _fn(FN: tl.constexpr, x, p):
    if FN == "exp":
        r = tl.exp(x)
    elif FN == "exp2":
        r = tl.exp2(x)
    elif FN == "log":
        r = tl.log(p)
    elif FN == "log2":
        r = tl.log2(p)
    elif FN == "sqrt":
        r = tl.sqrt(p)
    elif FN == "rsqrt":
        r = tl.rsqrt(p)
    elif FN == "sin":
        r = tl.sin(x)
    elif FN == "cos":
        r = tl.cos(x)
    elif FN == "erf":
        r = tl.erf(x)
    elif FN == "floor":
        r = tl.floor(x)
    elif FN == "ceil":
        r = tl.ceil(x)
    elif FN == "abs":
        r = tl.abs(x)
    elif FN == "div_rn":
        r = tl.div_rn(x, p)
    else:
        tl.static_assert(FN == "sqrt_rn")
        r = tl.sqrt_rn(p)
    return r


@triton.jit
def _put(o_ptr, k, n, offs, m, v):
    tl.store(o_ptr + k * n + offs, v.to(o_ptr.dtype.element_ty), mask=m)


@triton.jit
def math_kernel(x_ptr, p_ptr, o_ptr, n, FN: tl.constexpr, DT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(DT)
    p = tl.load(p_ptr + offs, mask=m).to(DT)
    if FN == "all":
        _put(o_ptr, 0, n, offs, m, _fn("exp", x, p))
        _put(o_ptr, 1, n, offs, m, _fn("exp2", x, p))
        _put(o_ptr, 2, n, offs, m, _fn("log", x, p))
        _put(o_ptr, 3, n, offs, m, _fn("log2", x, p))
        _put(o_ptr, 4, n, offs, m, _fn("sqrt", x, p))
        _put(o_ptr, 5, n, offs, m, _fn("rsqrt", x, p))
        _put(o_ptr, 6, n, offs, m, _fn("sin", x, p))
        _put(o_ptr, 7, n, offs, m, _fn("cos", x, p))
        _put(o_ptr, 8, n, offs, m, _fn("erf", x, p))
        _put(o_ptr, 9, n, offs, m, _fn("floor", x, p))
        _put(o_ptr, 10, n, offs, m, _fn("ceil", x, p))
        _put(o_ptr, 11, n, offs, m, _fn("abs", x, p))
    else:
        _put(o_ptr, 0, n, offs, m, _fn(FN, x, p))


@triton.jit
def extern_kernel(x_ptr, p_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    p = tl.load(p_ptr + offs, mask=m)
    _put(o_ptr, 0, n, offs, m, libdevice.tanh(x))
    _put(o_ptr, 1, n, offs, m, libdevice.atan2(x, p))
    _put(o_ptr, 2, n, offs, m, libdevice.pow(p, x))
    _put(o_ptr, 3, n, offs, m, tl.math.log1p(p))


def storage(dt):
    return np.float32 if dt == "bfloat16" else np.dtype(dt)


def rounded(v, dt):
    if dt == "bfloat16":
        return bf16_round(np.asarray(v, np.float32))
    return np.asarray(v).astype(dt)


def inputs(dt, nout):
    def args(rng):
        x = rounded(rng.uniform(-4, 4, N), dt)
        x[:6] = [0.0, -0.0, 0.5, -1.5, 2.0, -3.25]    # halves for floor / ceil
        p = rounded(rng.uniform(0.05, 8, N), dt)
        return [x, p, np.zeros(nout * N, storage(dt)), N]
    return args


def _ref_of(fns):
    def ref(a):
        x, p = a[0].astype(np.float64), a[1].astype(np.float64)
        outs = [x / p if f == "div_rn" else FNS[f][1](p if FNS[f][0] else x) for f in fns]
        return {2: np.concatenate(outs).astype(a[2].dtype)}
    return ref


TOL = {"float32": (1e-5, 1e-5), "float64": (1e-13, 1e-13)}

for fn in list(FNS) + ["div_rn"]:
    op = {"sqrt_rn": "sqrt", "div_rn": "div"}.get(fn, fn)
    exact = fn in ("floor", "ceil", "abs", "sqrt_rn", "div_rn")
    add(f"math-{fn}-float32", math_kernel, inputs("float32", 1), _ref_of([fn]), [op],
        cx=dict(FN=fn, DT=tl.float32, BLOCK=BLOCK), grid=GRID,
        tol=None if exact else TOL["float32"])

add("math-all-float64", math_kernel, inputs("float64", len(ALL)), _ref_of(ALL), ALL,
    cx=dict(FN="all", DT=tl.float64, BLOCK=BLOCK), grid=GRID, tol=TOL["float64"])
for dt in ["float16", "bfloat16"]:   # the other math ops take fp32 / fp64 only, as in Triton
    add(f"math-abs-{dt}", math_kernel, inputs(dt, 1), _ref_of(["abs"]), ["abs"],
        cx=dict(FN="abs", DT=TLDT[dt], BLOCK=BLOCK), grid=GRID)


def _extern_ref(a):
    x, p = a[0].astype(np.float64), a[1].astype(np.float64)
    return {2: np.concatenate([np.tanh(x), np.arctan2(x, p), p ** x, np.log1p(p)])}


for dt in ["float32", "float64"]:
    add(f"extern-libdevice-{dt}", extern_kernel, inputs(dt, 4), _extern_ref, ["extern"],
        cx=dict(BLOCK=BLOCK), grid=GRID, tol=(1e-5, 1e-5) if dt == "float32" else (1e-13, 1e-13))
