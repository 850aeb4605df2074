"""CPU end-to-end: elementwise math (tl.*, tl.math.*, libdevice externs)."""
import math

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.language.extra import libdevice
from cpu_util import cpu_driver, requires_cpu  # noqa: F401
from cpu_util import TL

pytestmark = requires_cpu

N = 128


@triton.jit
def unary_math_kernel(x_ptr, exp_p, exp2_p, log_p, log2_p, sqrt_p, rsqrt_p, sin_p, cos_p,
                      erf_p, floor_p, ceil_p, abs_p, sig_p, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    ax = tl.abs(x) + 0.5
    tl.store(exp_p + offs, tl.exp(x))
    tl.store(exp2_p + offs, tl.math.exp2(x))
    tl.store(log_p + offs, tl.log(ax))
    tl.store(log2_p + offs, tl.math.log2(ax))
    tl.store(sqrt_p + offs, tl.sqrt(ax))
    tl.store(rsqrt_p + offs, tl.math.rsqrt(ax))
    tl.store(sin_p + offs, tl.sin(x))
    tl.store(cos_p + offs, tl.math.cos(x))
    tl.store(erf_p + offs, tl.erf(x))
    tl.store(floor_p + offs, tl.floor(x))
    tl.store(ceil_p + offs, tl.math.ceil(x))
    tl.store(abs_p + offs, tl.math.abs(x))
    tl.store(sig_p + offs, tl.sigmoid(x))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_unary_math(dt):
    rng = np.random.default_rng(0)
    x = rng.uniform(-6, 6, N).astype(dt)
    x[:4] = [0.0, -0.0, 2.5, -2.5]
    names = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf", "floor",
             "ceil", "abs", "sigmoid"]
    outs = [np.zeros(N, dt) for _ in names]
    unary_math_kernel[(1,)](x, *outs, BLOCK=N)
    ax = np.abs(x).astype(np.float64) + 0.5
    v = x.astype(np.float64)
    refs = [np.exp(v), np.exp2(v), np.log(ax), np.log2(ax), np.sqrt(ax), 1 / np.sqrt(ax),
            np.sin(v), np.cos(v), np.array([math.erf(t) for t in v]), np.floor(v), np.ceil(v),
            np.abs(v), 1 / (1 + np.exp(-v))]
    rtol = 2e-6 if dt == "float32" else 1e-13
    for name, got, ref in zip(names, outs, refs):
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol, err_msg=name)


@triton.jit
def fma_kernel(x_ptr, y_ptr, z_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    z = tl.load(z_ptr + offs)
    tl.store(o_ptr + offs, tl.fma(x, y, z))


def test_fma_is_fused():
    # x*y + z with z = -round(x*y): a fused multiply-add returns the rounding error
    rng = np.random.default_rng(1)
    x = (1 + rng.uniform(0, 1, N)).astype(np.float32)
    y = (1 + rng.uniform(0, 1, N)).astype(np.float32)
    z = -(x * y)
    o = np.zeros(N, np.float32)
    fma_kernel[(1,)](x, y, z, o, BLOCK=N)
    exact = x.astype(np.float64) * y.astype(np.float64) + z.astype(np.float64)
    np.testing.assert_array_equal(o, exact.astype(np.float32))
    assert np.count_nonzero(o) > N // 2


@triton.jit
def umulhi_kernel(x_ptr, y_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.umulhi(tl.load(x_ptr + offs), tl.load(y_ptr + offs)))


@pytest.mark.parametrize("dt", ["uint32", "int32"])
def test_umulhi(dt):
    rng = np.random.default_rng(2)
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, N, dtype=dt, endpoint=True)
    y = rng.integers(info.min, info.max, N, dtype=dt, endpoint=True)
    o = np.zeros(N, dt)
    umulhi_kernel[(1,)](x, y, o, BLOCK=N)
    # the high half of the unsigned product of the bit patterns, for int32 too
    ref = [(int(a) * int(b)) >> 32 for a, b in zip(x.view(np.uint32), y.view(np.uint32))]
    np.testing.assert_array_equal(o.view(np.uint32), np.array(ref, np.uint64).astype(np.uint32))


@triton.jit
def div_kernel(x_ptr, y_ptr, a_p, b_p, c_p, d_p, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(a_p + offs, tl.math.div_rn(x, y))
    tl.store(b_p + offs, tl.math.fdiv(x, y))
    tl.store(c_p + offs, tl.math.sqrt_rn(y))
    tl.store(d_p + offs, tl.math.cdiv(tl.abs(x).to(tl.int32) + 7, 4))


def test_div_rn_fdiv_sqrt_rn_cdiv():
    rng = np.random.default_rng(3)
    x = rng.uniform(-100, 100, N).astype(np.float32)
    y = rng.uniform(0.1, 10, N).astype(np.float32)
    a, b, c = (np.zeros(N, np.float32) for _ in range(3))
    d = np.zeros(N, np.int32)
    div_kernel[(1,)](x, y, a, b, c, d, BLOCK=N)
    np.testing.assert_array_equal(a, x / y)            # correctly rounded
    np.testing.assert_allclose(b, x / y, rtol=1e-6)
    np.testing.assert_array_equal(c, np.sqrt(y))
    np.testing.assert_array_equal(d, (np.abs(x).astype(np.int32) + 7 + 3) // 4)


@triton.jit
def libdevice_kernel(x_ptr, y_ptr, o_ptr, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if FN == "tanh":
        r = libdevice.tanh(x)
    elif FN == "atan2":
        r = libdevice.atan2(x, y)
    elif FN == "pow":
        r = libdevice.pow(tl.abs(x), y)
    elif FN == "log1p":
        r = libdevice.log1p(tl.abs(x))
    elif FN == "expm1":
        r = libdevice.expm1(x)
    elif FN == "fmod":
        r = libdevice.fmod(x, y)
    elif FN == "hypot":
        r = libdevice.hypot(x, y)
    elif FN == "cbrt":
        r = libdevice.cbrt(x)
    elif FN == "asin":
        r = libdevice.asin(x / 10)
    elif FN == "trunc":
        r = libdevice.trunc(x)
    elif FN == "rint":
        r = libdevice.rint(x)
    elif FN == "isnan":
        r = libdevice.isnan(x / (x - x)).to(x.dtype)
    elif FN == "isinf":
        r = libdevice.isinf(x / (x - x)).to(x.dtype)
    elif FN == "rsqrt":
        r = libdevice.rsqrt(y)
    elif FN == "saturate":
        r = libdevice.saturate(x / 5)
    else:
        tl.static_assert(FN == "erfinv")
        r = libdevice.erfinv(x / 11)
    tl.store(o_ptr + offs, r)


def _erfinv(v):
    # Newton iterations on erf, from a rough start
    out = []
    for t in v:
        z = 0.0
        for _ in range(60):
            z -= (math.erf(z) - t) / (2 / math.sqrt(math.pi) * math.exp(-z * z))
        out.append(z)
    return np.array(out)


LIBDEVICE_REFS = {
    "tanh": lambda x, y: np.tanh(x), "atan2": np.arctan2,
    "pow": lambda x, y: np.abs(x) ** y, "log1p": lambda x, y: np.log1p(np.abs(x)),
    "expm1": lambda x, y: np.expm1(x), "fmod": np.fmod, "hypot": np.hypot,
    "cbrt": lambda x, y: np.cbrt(x), "asin": lambda x, y: np.arcsin(x / 10),
    "trunc": lambda x, y: np.trunc(x), "rint": lambda x, y: np.rint(x),
    "isnan": lambda x, y: np.isnan(x / (x - x)).astype(np.float64),
    "isinf": lambda x, y: np.isinf(x / (x - x)).astype(np.float64),
    "rsqrt": lambda x, y: 1 / np.sqrt(y), "saturate": lambda x, y: np.clip(x / 5, 0, 1),
    "erfinv": lambda x, y: _erfinv(x / 11),
}


@pytest.mark.parametrize("fn,dt", [(fn, dt) for fn in sorted(LIBDEVICE_REFS)
                                   for dt in ["float32", "float64"]])
def test_libdevice(fn, dt):
    rng = np.random.default_rng(4)
    x = rng.uniform(-10, 10, 64).astype(dt)
    x[:3] = [2.5, -3.5, 0.0]
    y = rng.uniform(0.5, 3, 64).astype(dt)
    o = np.zeros(64, dt)
    libdevice_kernel[(1,)](x, y, o, fn, BLOCK=64)
    with np.errstate(all="ignore"):
        ref = LIBDEVICE_REFS[fn](x.astype(np.float64), y.astype(np.float64))
    rtol = 1e-5 if dt == "float32" else 1e-12
    np.testing.assert_allclose(o, ref, rtol=rtol, atol=rtol)


@triton.jit
def half_math_kernel(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.exp(x.to(tl.float32)).to(tl.float16)  # fp16 math goes through an explicit upcast
    tl.store(o_ptr + offs, y * 2)


def test_half_math_with_upcast():
    x = np.linspace(-3, 3, 64).astype(np.float16)
    o = np.zeros(64, np.float16)
    half_math_kernel[(1,)](x, o, BLOCK=64)
    np.testing.assert_allclose(o.astype(np.float32),
                               (np.exp(x.astype(np.float32)).astype(np.float16) * 2), rtol=1e-3)
