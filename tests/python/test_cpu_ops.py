"""CPU end-to-end: binary and unary operators on every dtype, Triton's
promotion rules, C-semantics `//` and `%`, shifts, comparisons, where,
minimum/maximum (NaN), clamp, casts, bitcasts and fp8 round trips."""
import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from cpu_util import cpu_driver, requires_cpu  # noqa: F401
from cpu_util import (ALL, SINT, TL, storage, rand_values,
                      to_storage, to_f64, round_to, promote, c_div, c_mod, bits, is_float,
                      fp8_table, fp8_round, bf16_round)

# references overflow to inf on purpose (narrowing casts beyond the float16 range)
pytestmark = [requires_cpu, pytest.mark.filterwarnings("ignore:overflow encountered")]

N = 64


@triton.jit
def _ld(ptr, offs, DT: tl.constexpr):
    v = tl.load(ptr + offs)
    if DT == tl.bfloat16:
        v = v.to(tl.bfloat16, bitcast=True)
    return v


@triton.jit
def _st(ptr, offs, v):
    if v.dtype == tl.bfloat16:
        v = v.to(tl.uint16, bitcast=True)
    tl.store(ptr + offs, v)


@triton.jit
def binop_kernel(x_ptr, y_ptr, z_ptr, XT: tl.constexpr, YT: tl.constexpr, ZT: tl.constexpr,
                 OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = _ld(x_ptr, offs, XT)
    y = _ld(y_ptr, offs, YT)
    if OP == "+":
        z = x + y
    elif OP == "-":
        z = x - y
    elif OP == "*":
        z = x * y
    elif OP == "/":
        z = x / y
    elif OP == "//":
        z = x // y
    elif OP == "%":
        z = x % y
    elif OP == "&":
        z = x & y
    elif OP == "|":
        z = x | y
    elif OP == "^":
        z = x ^ y
    elif OP == "<<":
        z = x << y
    elif OP == ">>":
        z = x >> y
    elif OP == "<":
        z = x < y
    elif OP == "<=":
        z = x <= y
    elif OP == ">":
        z = x > y
    elif OP == ">=":
        z = x >= y
    elif OP == "==":
        z = x == y
    else:
        tl.static_assert(OP == "!=")
        z = x != y
    tl.static_assert(z.dtype == ZT)
    _st(z_ptr, offs, z)


def _operands(dt, op, rng):
    x = rand_values(dt, N, rng)
    y = rand_values(dt, N, rng)
    if op in ("<<", ">>") and not is_float(dt):
        y = rng.integers(0, bits(dt), N).astype(dt)
    if op in ("//", "%", "/"):
        if is_float(dt):
            mag = rng.uniform(0.5, 4.0, N) * rng.choice([-1, 1], N)
            y = to_storage(mag, dt)
        else:
            y[y == 0] = 3
            if dt in SINT:
                y[(x == np.iinfo(dt).min) & (y == -1)] = 5
    if op in ("<", "<=", ">", ">=", "==", "!="):
        y[::4] = x[::4]       # some equal pairs
    return x, y


def _run_binop(x, y, xt, yt, zt, op):
    z = np.zeros(N, np.bool_ if zt == "bool" else storage(zt))
    binop_kernel[(1,)](x, y, z, TL[xt], TL[yt], TL[zt], op, BLOCK=N)
    return z


def _float_ref(x, y, dt, op):
    a, b = to_f64(x, dt), to_f64(y, dt)
    calc = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "%": np.fmod}[op]
    if dt == "float64":
        return calc(a, b)
    if op in ("/", "%"):    # 16-bit floats divide in float32
        return calc(a.astype(np.float32), b.astype(np.float32)).astype(np.float64)
    if dt == "float16":
        return calc(a.astype(np.float16), b.astype(np.float16)).astype(np.float64)
    return round_to(calc(a.astype(np.float32), b.astype(np.float32)), dt)


@triton.jit
def arith_all_kernel(x_ptr, y_ptr, s_ptr, add_p, sub_p, mul_p, div_p, fdiv_p, mod_p, and_p, or_p,
                     xor_p, shl_p, shr_p, DT: tl.constexpr, DIV_T: tl.constexpr,
                     MOD_T: tl.constexpr, IS_INT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = _ld(x_ptr, offs, DT)
    y = _ld(y_ptr, offs, DT)
    tl.static_assert((x + y).dtype == DT)
    tl.static_assert((x - y).dtype == DT)
    tl.static_assert((x * y).dtype == DT)
    tl.static_assert((x / y).dtype == DIV_T)
    tl.static_assert((x % y).dtype == MOD_T)
    _st(add_p, offs, x + y)
    _st(sub_p, offs, x - y)
    _st(mul_p, offs, x * y)
    _st(div_p, offs, x / y)
    _st(mod_p, offs, x % y)
    if IS_INT:
        s = tl.load(s_ptr + offs)
        tl.static_assert((x // y).dtype == DT)
        tl.static_assert((x & y).dtype == DT)
        tl.static_assert((x << s).dtype == DT)
        _st(fdiv_p, offs, x // y)
        _st(and_p, offs, x & y)
        _st(or_p, offs, x | y)
        _st(xor_p, offs, x ^ y)
        _st(shl_p, offs, x << s)
        _st(shr_p, offs, x >> s)


ARITH = ["+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>"]
CMP = ["<", "<=", ">", ">=", "==", "!="]


@pytest.mark.parametrize("dt", ALL)
def test_binary_arith(dt):
    rng = np.random.default_rng(bits(dt) + len(dt))
    x, y = _operands(dt, "/", rng)
    _, s = _operands(dt, "<<", rng)
    div_t = "float32" if not is_float(dt) else promote(dt, dt, True)
    mod_t = promote(dt, dt, True)
    outs = {op: np.zeros(N, storage({"/": div_t, "%": mod_t}.get(op, dt))) for op in ARITH}
    arith_all_kernel[(1,)](x, y, s, *outs.values(), TL[dt], TL[div_t], TL[mod_t],
                           not is_float(dt), BLOCK=N)
    if is_float(dt):
        for op in ("+", "-", "*", "/", "%"):
            zt = {"/": div_t, "%": mod_t}.get(op, dt)
            ref = _float_ref(x, y, dt, op)
            rtol = {"float16": 1e-3, "bfloat16": 8e-3, "float32": 1e-6, "float64": 1e-14}[zt]
            atol = rtol * 4 if op == "%" else 0   # tiny quotient errors near multiples
            np.testing.assert_allclose(to_f64(outs[op], zt), ref, rtol=rtol, atol=atol,
                                       err_msg=op)
        return
    np.testing.assert_allclose(outs["/"], x.astype(np.float32) / y.astype(np.float32),
                               rtol=1e-6)
    for op in ARITH:
        if op == "/":
            continue
        b = s if op in ("<<", ">>") else y
        ref = {"+": np.add, "-": np.subtract, "*": np.multiply, "//": c_div, "%": c_mod,
               "&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor,
               "<<": np.left_shift, ">>": np.right_shift}[op](x, b).astype(dt)
        np.testing.assert_array_equal(outs[op], ref, err_msg=op)


def test_c_semantics_div_mod_negative():
    x = np.array([7, -7, 7, -7, 1, -1, 0, -128, 127, -9] * 6 + [5, -5, 6, -6], np.int8)
    y = np.array([2, 2, -2, -2, 3, 3, 5, 3, -3, 4] * 6 + [-1, 1, 4, -4], np.int8)
    q = _run_binop(x, y, "int8", "int8", "int8", "//")
    r = _run_binop(x, y, "int8", "int8", "int8", "%")
    np.testing.assert_array_equal(q[:10], [3, -3, -3, 3, 0, 0, 0, -42, -42, -2])
    np.testing.assert_array_equal(r[:10], [1, -1, 1, -1, 1, -1, 0, -2, 1, -1])
    np.testing.assert_array_equal(q * y + r, x)  # C's identity with truncated division


def test_shift_signedness():
    x = np.array([-16, -1, 64, 5] * 16, np.int32)
    y = np.array([2, 31, 3, 0] * 16, np.int32)
    z = _run_binop(x, y, "int32", "int32", "int32", ">>")
    np.testing.assert_array_equal(z[:4], [-4, -1, 8, 5])      # arithmetic shift
    xu = x.view(np.uint32)
    zu = _run_binop(xu, y.view(np.uint32), "uint32", "uint32", "uint32", ">>")
    np.testing.assert_array_equal(zu[:4], [0x3FFFFFFC, 1, 8, 5])  # logical shift


@triton.jit
def cmp_all_kernel(x_ptr, y_ptr, lt_p, le_p, gt_p, ge_p, eq_p, ne_p, DT: tl.constexpr,
                   BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = _ld(x_ptr, offs, DT)
    y = _ld(y_ptr, offs, DT)
    tl.static_assert((x < y).dtype == tl.int1)
    tl.store(lt_p + offs, (x < y).to(tl.int8))
    tl.store(le_p + offs, (x <= y).to(tl.int8))
    tl.store(gt_p + offs, (x > y).to(tl.int8))
    tl.store(ge_p + offs, (x >= y).to(tl.int8))
    tl.store(eq_p + offs, (x == y).to(tl.int8))
    tl.store(ne_p + offs, (x != y).to(tl.int8))


def _run_cmp(x, y, dt):
    outs = [np.zeros(N, np.int8) for _ in CMP]
    cmp_all_kernel[(1,)](x, y, *outs, TL[dt], BLOCK=N)
    return outs


@pytest.mark.parametrize("dt", ALL)
def test_comparisons(dt):
    rng = np.random.default_rng(bits(dt) * 3 + len(dt))
    x, y = _operands(dt, "<", rng)
    a, b = (to_f64(x, dt), to_f64(y, dt)) if is_float(dt) else (x, y)
    for op, z in zip(CMP, _run_cmp(x, y, dt)):
        ref = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
               "==": np.equal, "!=": np.not_equal}[op](a, b)
        np.testing.assert_array_equal(z, ref.astype(np.int8), err_msg=op)


def test_float_compare_nan():
    x = np.array([np.nan, 1.0, np.nan, 2.0] * 16, np.float32)
    y = np.array([1.0, np.nan, np.nan, 2.0] * 16, np.float32)
    for op, z in zip(CMP, _run_cmp(x, y, "float32")):
        ref = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
               "==": np.equal, "!=": np.not_equal}[op](x, y)
        np.testing.assert_array_equal(z, ref.astype(np.int8), err_msg=op)  # ordered, except != (unordered)


# -- promotion --------------------------------------------------------------------

@triton.jit
def promo_kernel(x_ptr, y_ptr, z_ptr, XT: tl.constexpr, YT: tl.constexpr, ZT: tl.constexpr,
                 BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = _ld(x_ptr, offs, XT)
    y = _ld(y_ptr, offs, YT)
    tl.static_assert((x + y).dtype == ZT)
    tl.static_assert((y + x).dtype == ZT)
    tl.static_assert((x * y).dtype == ZT)
    tl.static_assert(tl.where(x == x, x, y).dtype == ZT)
    _st(z_ptr, offs, x + y)


PAIRS = [("int8", "uint8"), ("int16", "uint8"), ("int8", "uint16"), ("int32", "uint32"),
         ("int64", "uint32"), ("int32", "uint64"), ("int8", "int64"), ("uint8", "uint32"),
         ("int8", "float16"), ("uint64", "float16"), ("int32", "bfloat16"),
         ("bfloat16", "float16"), ("float16", "float32"), ("bfloat16", "float32"),
         ("float32", "float64"), ("int64", "float32"), ("uint8", "float64"),
         ("int16", "bfloat16"), ("float16", "float64")]


@pytest.mark.parametrize("xt,yt", PAIRS)
def test_promotion_add(xt, yt):
    rng = np.random.default_rng(7)
    x = rand_values(xt, N, rng, *((0, 100) if not is_float(xt) else (-50, 50)))
    y = rand_values(yt, N, rng, *((0, 100) if not is_float(yt) else (-50, 50)))
    zt = promote(xt, yt)
    z = np.zeros(N, storage(zt))
    promo_kernel[(1,)](x, y, z, TL[xt], TL[yt], TL[zt], BLOCK=N)
    if is_float(zt):
        ref = round_to(to_f64(x, xt) + to_f64(y, yt), zt)
        np.testing.assert_allclose(to_f64(z, zt), ref, rtol=8e-3 if zt == "bfloat16" else 1e-3)
    else:
        np.testing.assert_array_equal(z, x.astype(zt) + y.astype(zt))


@triton.jit
def scalar_promo_kernel(x_ptr, z_ptr, XT: tl.constexpr, ZT: tl.constexpr, KIND: tl.constexpr,
                        BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = _ld(x_ptr, offs, XT)
    if KIND == "int":
        z = x + 3
    elif KIND == "rint":
        z = 2 * x
    elif KIND == "float":
        z = x * 0.5
    elif KIND == "div":
        z = x / 2
    else:
        z = x - 1.5
    tl.static_assert(z.dtype == ZT)
    _st(z_ptr, offs, z)


@pytest.mark.parametrize("xt,kind,zt", [
    ("int8", "int", "int8"), ("uint16", "rint", "uint16"), ("int64", "int", "int64"),
    ("int8", "float", "float32"), ("int64", "float", "float32"), ("float16", "float", "float16"),
    ("bfloat16", "float", "bfloat16"), ("float64", "float", "float64"),
    ("float16", "int", "float16"), ("int32", "div", "float32"), ("float16", "div", "float32"),
    ("uint8", "sub", "float32"), ("bfloat16", "div", "float32"), ("bfloat16", "int", "bfloat16"),
])
def test_promotion_python_scalar(xt, kind, zt):
    x = to_storage(np.arange(N) % 50, xt)
    z = np.zeros(N, storage(zt))
    scalar_promo_kernel[(1,)](x, z, TL[xt], TL[zt], kind, BLOCK=N)
    v = to_f64(x, xt)
    ref = {"int": v + 3, "rint": 2 * v, "float": v * 0.5, "div": v / 2, "sub": v - 1.5}[kind]
    np.testing.assert_allclose(to_f64(z, zt), ref, rtol=1e-2)


# -- unary ------------------------------------------------------------------------

@triton.jit
def unary_kernel(x_ptr, z_ptr, XT: tl.constexpr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = _ld(x_ptr, offs, XT)
    if OP == "neg":
        z = -x
    elif OP == "pos":
        z = +x
    elif OP == "invert":
        z = ~x
    elif OP == "not":
        z = (x == 0) == False  # noqa: E712
    else:
        z = tl.abs(x)
    _st(z_ptr, offs, z)


@pytest.mark.parametrize("dt,op", [(dt, op) for dt in ALL for op in ["neg", "pos", "invert", "abs"]
                                   if not (op == "invert" and is_float(dt))])
def test_unary(dt, op):
    rng = np.random.default_rng(3)
    x = rand_values(dt, N, rng)
    z = np.zeros_like(x)
    unary_kernel[(1,)](x, z, TL[dt], op, BLOCK=N)
    if is_float(dt):
        v = to_f64(x, dt)
        ref = {"neg": -v, "pos": v, "abs": np.abs(v)}[op]
        np.testing.assert_array_equal(to_f64(z, dt), ref)
    else:
        ref = {"neg": -x, "pos": x, "invert": ~x, "abs": np.abs(x)}[op]
        np.testing.assert_array_equal(z, ref.astype(dt))


def test_not_via_compare():
    x = np.array([0, 1, -3, 0] * 16, np.int32)
    z = np.zeros(N, np.bool_)
    unary_kernel[(1,)](x, z, tl.int32, "not", BLOCK=N)
    np.testing.assert_array_equal(z, x != 0)


# -- where, minimum/maximum, clamp ---------------------------------------------------

@triton.jit
def where_kernel(c_ptr, x_ptr, y_ptr, z_ptr, DT: tl.constexpr, SCALAR: tl.constexpr,
                 BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    c = tl.load(c_ptr + offs)
    x = _ld(x_ptr, offs, DT)
    if SCALAR:
        z = tl.where(c != 0, x, 7)
    else:
        y = _ld(y_ptr, offs, DT)
        z = tl.where(c != 0, x, y)
    tl.static_assert(z.dtype == DT)
    _st(z_ptr, offs, z)


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("scalar", [False, True])
def test_where(dt, scalar):
    rng = np.random.default_rng(11)
    c = rng.integers(0, 2, N).astype(np.int8)
    x, y = rand_values(dt, N, rng), rand_values(dt, N, rng)
    z = np.zeros_like(x)
    where_kernel[(1,)](c, x, y, z, TL[dt], scalar, BLOCK=N)
    other = to_storage(np.full(N, 7), dt) if scalar else y
    np.testing.assert_array_equal(z, np.where(c != 0, x, other))


@triton.jit
def where_scalar_cond_kernel(x_ptr, z_ptr, flag, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(z_ptr + offs, tl.where(flag > 0, x, -x))


def test_where_scalar_condition():
    x = np.arange(N, dtype=np.float32)
    z = np.zeros_like(x)
    where_scalar_cond_kernel[(1,)](x, z, 1, BLOCK=N)
    np.testing.assert_array_equal(z, x)
    where_scalar_cond_kernel[(1,)](x, z, 0, BLOCK=N)
    np.testing.assert_array_equal(z, -x)


@triton.jit
def minmax_kernel(x_ptr, y_ptr, lo_ptr, hi_ptr, DT: tl.constexpr, PROP: tl.constexpr,
                  BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = _ld(x_ptr, offs, DT)
    y = _ld(y_ptr, offs, DT)
    if PROP:
        lo = tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL)
        hi = tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)
    else:
        lo = tl.minimum(x, y)
        hi = tl.maximum(x, y)
    _st(lo_ptr, offs, lo)
    _st(hi_ptr, offs, hi)


@pytest.mark.parametrize("dt", ALL)
def test_minimum_maximum(dt):
    rng = np.random.default_rng(5)
    x, y = rand_values(dt, N, rng), rand_values(dt, N, rng)
    lo, hi = np.zeros_like(x), np.zeros_like(x)
    minmax_kernel[(1,)](x, y, lo, hi, TL[dt], False, BLOCK=N)
    if is_float(dt):
        a, b = to_f64(x, dt), to_f64(y, dt)
        np.testing.assert_array_equal(to_f64(lo, dt), np.minimum(a, b))
        np.testing.assert_array_equal(to_f64(hi, dt), np.maximum(a, b))
    else:
        np.testing.assert_array_equal(lo, np.minimum(x, y))
        np.testing.assert_array_equal(hi, np.maximum(x, y))


@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_minimum_maximum_nan(dt):
    x = np.array([np.nan, 1.0, np.nan, -2.0] * 16, dt)
    y = np.array([3.0, np.nan, np.nan, 5.0] * 16, dt)
    lo, hi = np.zeros_like(x), np.zeros_like(x)
    minmax_kernel[(1,)](x, y, lo, hi, TL[dt], True, BLOCK=N)
    np.testing.assert_array_equal(lo, np.minimum(x, y))   # NaN propagates
    np.testing.assert_array_equal(hi, np.maximum(x, y))
    minmax_kernel[(1,)](x, y, lo, hi, TL[dt], False, BLOCK=N)
    # without propagation the result is only pinned where no NaN is involved
    ok = ~(np.isnan(x) | np.isnan(y))
    np.testing.assert_array_equal(lo[ok], np.minimum(x, y)[ok])
    np.testing.assert_array_equal(hi[ok], np.maximum(x, y)[ok])


@triton.jit
def clamp_kernel(x_ptr, z_ptr, lo, hi, PROP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if PROP:
        z = tl.clamp(x, lo, hi, propagate_nan=tl.PropagateNan.ALL)
    else:
        z = tl.clamp(x, lo, hi)
    tl.store(z_ptr + offs, z)


def test_clamp():
    rng = np.random.default_rng(2)
    x = rng.uniform(-3, 3, N).astype(np.float32)
    z = np.zeros_like(x)
    clamp_kernel[(1,)](x, z, -1.25, 0.5, False, BLOCK=N)
    np.testing.assert_array_equal(z, np.clip(x, np.float32(-1.25), np.float32(0.5)))
    x[::5] = np.nan
    clamp_kernel[(1,)](x, z, -1.25, 0.5, True, BLOCK=N)
    np.testing.assert_array_equal(np.isnan(z), np.isnan(x))
    ok = ~np.isnan(x)
    np.testing.assert_array_equal(z[ok], np.clip(x[ok], np.float32(-1.25), np.float32(0.5)))


# -- casts --------------------------------------------------------------------------

@triton.jit
def cast_kernel(x_ptr, z_ptr, XT: tl.constexpr, ZT: tl.constexpr, BITCAST: tl.constexpr,
                BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = _ld(x_ptr, offs, XT)
    z = x.to(ZT, bitcast=BITCAST)
    tl.static_assert(z.dtype == ZT)
    _st(z_ptr, offs, z)


@triton.jit
def cast_all_kernel(xi_ptr, xf_ptr, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64,
                    XT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    xi = _ld(xi_ptr, offs, XT)   # values for integer targets
    xf = _ld(xf_ptr, offs, XT)   # values for float targets
    _st(i8, offs, xi.to(tl.int8))
    _st(i16, offs, xi.to(tl.int16))
    _st(i32, offs, xi.to(tl.int32))
    _st(i64, offs, xi.to(tl.int64))
    _st(u8, offs, xi.to(tl.uint8))
    _st(u16, offs, xi.to(tl.uint16))
    _st(u32, offs, xi.to(tl.uint32))
    _st(u64, offs, xi.to(tl.uint64))
    _st(f16, offs, xf.to(tl.float16))
    _st(bf16, offs, xf.to(tl.bfloat16))
    _st(f32, offs, xf.to(tl.float32))
    _st(f64, offs, tl.cast(xf, tl.float64))


CAST_TARGETS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "bfloat16", "float32", "float64"]


@pytest.mark.parametrize("xt", ALL)
def test_cast(xt):
    rng = np.random.default_rng(bits(xt) * 7 + len(xt))
    if is_float(xt):
        # float -> int: in range of every target (no saturation required)
        xi = to_storage(rng.uniform(-100, 127, N), xt)
        span = {"float16": 6e4, "bfloat16": 1e30, "float32": 1e30, "float64": 1e30}[xt]
        xf = to_storage(rng.uniform(-1, 1, N) * 10.0 ** rng.uniform(-6, np.log10(span), N), xt)
    else:
        xi = xf = rand_values(xt, N, rng)
    outs = {zt: np.zeros(N, storage(zt)) for zt in CAST_TARGETS}
    cast_all_kernel[(1,)](xi, xf, *outs.values(), TL[xt], BLOCK=N)
    for zt, z in outs.items():
        if not is_float(zt):
            if is_float(xt):
                v = np.trunc(to_f64(xi, xt))
                ok = v >= 0 if zt in ("uint8", "uint16", "uint32", "uint64") else v == v
                np.testing.assert_array_equal(z[ok], v[ok].astype(zt), err_msg=zt)
            else:
                np.testing.assert_array_equal(z, xi.astype(zt), err_msg=zt)  # wrap / extend
            continue
        if is_float(xt):
            ref = round_to(to_f64(xf, xt), zt)
        elif zt == "bfloat16":   # int -> bf16 may round via f32: within one bf16 ulp
            np.testing.assert_allclose(to_f64(z, zt), round_to(xf.astype(np.float32), zt),
                                       rtol=8e-3, err_msg=zt)
            continue
        else:
            ref = xf.astype(zt).astype(np.float64)
        np.testing.assert_array_equal(to_f64(z, zt), ref, err_msg=zt)


@pytest.mark.parametrize("xt", ["int8", "int32", "uint64", "float16", "float32"])
def test_cast_to_bool(xt):
    x = to_storage(np.array([0, 1, 2, 0] * 16), xt)
    z = np.zeros(N, np.int8)
    cast_kernel[(1,)](x, z, TL[xt], tl.int1, False, BLOCK=N)
    np.testing.assert_array_equal(z, (to_f64(x, xt) != 0).astype(np.int8))


@pytest.mark.parametrize("xt,zt", [("float32", "int32"), ("int32", "float32"),
                                   ("float32", "uint32"), ("float64", "int64"),
                                   ("float16", "int16"), ("bfloat16", "uint16"),
                                   ("float16", "bfloat16"), ("int64", "uint64"),
                                   ("uint8", "int8")])
def test_bitcast(xt, zt):
    rng = np.random.default_rng(4)
    x = rand_values(xt, N, rng)
    z = np.zeros(N, storage(zt))
    cast_kernel[(1,)](x, z, TL[xt], TL[zt], True, BLOCK=N)
    np.testing.assert_array_equal(z.view(np.uint8), x.view(np.uint8))


@triton.jit
def fp8_roundtrip_kernel(x_ptr, z_ptr, codes_ptr, F8: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    f8 = x.to(F8)
    tl.static_assert(f8.dtype == F8)
    tl.store(codes_ptr + offs, f8.to(tl.uint8, bitcast=True))
    tl.store(z_ptr + offs, f8.to(tl.float32))


@triton.jit
def fp8_decode_kernel(c_ptr, z_ptr, F8: tl.constexpr, OUT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    c = tl.load(c_ptr + offs).to(F8, bitcast=True)
    tl.store(z_ptr + offs, c.to(OUT))


FP8 = [("e4m3", "float8e4nv"), ("e5m2", "float8e5"), ("e4b15", "float8e4b15"),
       ("e4b8", "float8e4b8"), ("e5b16", "float8e5b16")]


@pytest.mark.parametrize("fmt,f8", FP8)
@pytest.mark.parametrize("src", ["float32", "float16"])
def test_fp8_roundtrip(fmt, f8, src):
    rng = np.random.default_rng(9)
    hi = {"e4m3": 440.0, "e4b15": 1.7, "e4b8": 230.0}.get(fmt, 50000.0)
    table = fp8_table(fmt)
    vals = np.concatenate([
        rng.uniform(-hi, hi, 64), rng.uniform(-2, 2, 64), rng.uniform(-0.02, 0.02, 64),
        # exact midpoints between neighbouring codes: ties go to the even code
        (table[1:120] + table[2:121])[::2] / 2, [0.0, -0.0, 1.0, -1.0]])
    n = 256
    vals = np.resize(vals, n).astype(src)
    z = np.zeros(n, np.float32)
    codes = np.zeros(n, np.uint8)
    fp8_roundtrip_kernel[(1,)](vals, z, codes, getattr(tl, f8), BLOCK=n)
    ref = fp8_round(vals.astype(np.float64), fmt)
    np.testing.assert_array_equal(z, ref.astype(np.float32))
    np.testing.assert_array_equal(table[codes], z.astype(np.float64))


@pytest.mark.parametrize("fmt,f8", FP8)
@pytest.mark.parametrize("out", ["float32", "float16", "bfloat16"])
def test_fp8_decode_all_codes(fmt, f8, out):
    codes = np.arange(256, dtype=np.uint8)
    z = np.zeros(256, storage(out))
    k = fp8_decode_kernel[(1,)]
    if out == "bfloat16":
        z32 = np.zeros(256, np.float32)
        k(codes, z32, getattr(tl, f8), tl.float32, BLOCK=256)
        got = z32.astype(np.float64)
    else:
        k(codes, z, getattr(tl, f8), TL[out], BLOCK=256)
        got = z.astype(np.float64)
    table = fp8_table(fmt)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(table))
    ok = ~np.isnan(table)
    np.testing.assert_array_equal(got[ok], table[ok])


@triton.jit
def fp8_specials_kernel(x_ptr, codes_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(codes_ptr + offs, tl.load(x_ptr + offs).to(codes_ptr.dtype.element_ty))


@pytest.mark.parametrize("fmt,f8", FP8[2:])
def test_fp8_extra_formats_specials(fmt, f8):
    # finite overflow and infinities saturate to +-max (no format here has
    # inf), NaN gives the format's NaN, and the fnuz formats have no -0
    table = fp8_table(fmt)
    top = np.nanmax(table)
    x = np.array([top * 4, -top * 4, np.inf, -np.inf, np.nan, -0.0, 0.0, top], np.float32)
    x = np.resize(x, 16)
    codes = np.zeros(16, np.uint8)
    fp8_specials_kernel[(1,)](x, triton.reinterpret(codes, getattr(tl, f8)), BLOCK=16)
    v = table[codes[:8]]
    np.testing.assert_array_equal(v[[0, 1, 2, 3, 7]], [top, -top, top, -top, top])
    assert np.isnan(v[4])
    if fmt in ("e4b8", "e5b16"):
        assert codes[4] == 0x80 and codes[5] == 0 and codes[6] == 0
    else:
        assert codes[4] & 0x7F == 0x7F and codes[5] == 0x80 and codes[6] == 0


@triton.jit
def fp8_abs_kernel(x_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, tl.abs(tl.load(x_ptr + offs)))


@pytest.mark.parametrize("fmt,f8", FP8)
def test_fp8_abs_every_code(fmt, f8):
    # fp8 arguments passed as reinterpreted byte arrays: the signature type
    # (*fp8e4b15, ...) reaches the kernel
    codes = np.arange(256, dtype=np.uint8)
    out = np.zeros(256, np.uint8)
    dt = getattr(tl, f8)
    k = fp8_abs_kernel[(1,)](triton.reinterpret(codes, dt), triton.reinterpret(out, dt), BLOCK=256)
    assert k.metadata.sig.split(",")[0] == "*" + TL_SIG[f8]
    table = fp8_table(fmt)
    ok = np.isfinite(table)   # (e5m2's infinities: abs rounds back through a saturating cast)
    np.testing.assert_array_equal(table[out][ok], np.abs(table[ok]))
    assert np.isnan(table[out][np.isnan(table)]).all()


TL_SIG = {"float8e4nv": "f8e4m3", "float8e5": "f8e5m2", "float8e4b15": "f8e4b15",
          "float8e4b8": "f8e4b8", "float8e5b16": "f8e5b16"}


def test_bf16_rounding_from_f32():
    # values exactly between two bf16 neighbours round to the even one
    base = np.array([1.0, 3.0, -5.0, 1000.0], np.float32)
    step = (base.view(np.uint32) + 0x8000).view(np.float32)  # half a bf16 ulp above
    odd = (base.view(np.uint32) + 0x18000).view(np.float32)  # 1.5 ulp above (odd neighbour)
    x = np.resize(np.concatenate([base, step, odd, base * 1.2345]), N).astype(np.float32)
    z = np.zeros(N, np.uint16)
    cast_kernel[(1,)](x, z, tl.float32, tl.bfloat16, False, BLOCK=N)
    np.testing.assert_array_equal(z.astype(np.uint32) << 16,
                                  bf16_round(x).view(np.uint32))


def test_f64_to_f16_rounds_once():
    # just above the midpoint between two halves by less than an f32 ulp: rounding
    # through f32 would land on the midpoint and then tie to even (downwards)
    one_up = 1 + 2.0 ** -11 + 2.0 ** -40
    vals = np.array([one_up, -one_up, 1000 + 0.25 + 2.0 ** -30, 2.0 ** -20 + 2.0 ** -60,
                     65519.0, 65520.0, 1e-9, np.inf], np.float64)
    x = np.resize(vals, N)
    z = np.zeros(N, np.float16)
    cast_kernel[(1,)](x, z, tl.float64, tl.float16, False, BLOCK=N)
    np.testing.assert_array_equal(z, x.astype(np.float16))
