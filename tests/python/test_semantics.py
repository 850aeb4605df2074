"""The edge cases of the scalar semantics (backend/scalar.c, documented in the
rows of ir/ops.def), decided once for both backends as Triton does on NVIDIA
GPUs: shift amounts >= the bit width, integer division by zero and INT_MIN /
-1, float -> int out of range and NaN, fp8 rounding and saturation, f16 /
bf16 subnormals and round-toward-zero, float %, umulhi on signed types.

Every case runs on the CPU backend against values computed here in Python.
The `gpu` variant runs the same cases on the GPU and requires the same bits
(NaN outputs need only be NaN: payloads are not specified)."""
import math
import re

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl

BLOCK = 128


@triton.jit
def binop_kernel(a_ptr, b_ptr, o_ptr, OP: tl.constexpr, DT: tl.constexpr, BITS: tl.constexpr,
                 BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    st = a.dtype
    if BITS:
        a = a.to(DT, bitcast=True)
        b = b.to(DT, bitcast=True)
    if OP == "shl":
        c = a << b
    elif OP == "shr":
        c = a >> b
    elif OP == "div":
        c = a // b
    elif OP == "rem":
        c = a % b
    elif OP == "add":
        c = a + b
    elif OP == "sub":
        c = a - b
    elif OP == "mul":
        c = a * b
    else:
        c = tl.umulhi(a, b)
    if BITS:
        c = c.to(st, bitcast=True)
    tl.store(o_ptr + offs, c)


@triton.jit
def cast_kernel(x_ptr, o_ptr, SRC: tl.constexpr, SRC_BITS: tl.constexpr, DST: tl.constexpr,
                DST_ST: tl.constexpr, ROUND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if SRC_BITS:
        x = x.to(SRC, bitcast=True)
    y = x.to(DST, fp_downcast_rounding=ROUND)
    if DST_ST != DST:
        y = y.to(DST_ST, bitcast=True)
    tl.store(o_ptr + offs, y)


# -- types ----------------------------------------------------------------------------

# dtype name -> (tl dtype, numpy storage, bits stored as an integer)
TYPES = {
    "int8": (tl.int8, np.int8, False), "uint8": (tl.uint8, np.uint8, False),
    "int16": (tl.int16, np.int16, False), "uint16": (tl.uint16, np.uint16, False),
    "int32": (tl.int32, np.int32, False), "uint32": (tl.uint32, np.uint32, False),
    "int64": (tl.int64, np.int64, False), "uint64": (tl.uint64, np.uint64, False),
    "float16": (tl.float16, np.float16, False), "float32": (tl.float32, np.float32, False),
    "float64": (tl.float64, np.float64, False), "bfloat16": (tl.bfloat16, np.uint16, True),
    "e4m3": (tl.float8e4nv, np.uint8, True), "e5m2": (tl.float8e5, np.uint8, True),
}


def pad(vals, dtype):
    a = np.zeros(BLOCK, dtype)
    v = np.asarray(vals, dtype)
    assert len(v) <= BLOCK
    a[:len(v)] = v
    return a, len(v)


def f32(vals):
    return np.asarray(vals, np.float64).astype(np.float32)


def f32_bits(b):
    return np.asarray(b, np.uint32).view(np.float32)


# -- running a case on a device ----------------------------------------------------------

class Case:
    """A kernel launch: its kernel, numpy inputs, output dtype, constexprs, the
    expected output (n valid elements) and how NaN shows in the output
    (a function of the stored values, or None)."""

    def __init__(self, name, kernel, ins, out_dtype, cx, want, nan=None):
        self.name, self.kernel, self.ins, self.out_dtype, self.cx = name, kernel, ins, out_dtype, cx
        self.want, self.nan = np.asarray(want), nan

    def run(self, device):
        out = np.zeros(BLOCK, self.out_dtype)
        if device == "cpu":
            self.kernel[(1,)](*self.ins, out, BLOCK=BLOCK, **self.cx)
            return out
        import torch
        ins = [torch.from_numpy(a.copy()).cuda() for a in self.ins]
        o = torch.from_numpy(out).cuda()
        self.kernel[(1,)](*ins, o, BLOCK=BLOCK, **self.cx)
        torch.cuda.synchronize()
        return o.cpu().numpy()


def check(case, got):
    n = len(case.want)
    got = got[:n]
    if case.nan is not None:
        gn, wn = case.nan(got), case.nan(case.want)
        np.testing.assert_array_equal(gn, wn, err_msg=case.name + ": NaN positions")
        got, want = got[~wn], case.want[~wn]
    else:
        want = case.want
    want = want.astype(got.dtype)
    bad = [i for i in range(len(got)) if got[i].tobytes() != want[i].tobytes()]
    assert len(bad) == 0, (f"{case.name}: {len(bad)} differ; first at {bad[0]}: got {got[bad[0]]!r}, "
                           f"want {want[bad[0]]!r}")


# -- integer cases ------------------------------------------------------------------------

INT_INFO = {k: (np.iinfo(v[1]), np.dtype(v[1]).itemsize * 8) for k, v in TYPES.items()
            if np.issubdtype(v[1], np.integer) and not v[2]}


def wrap(v, name):
    info, w = INT_INFO[name]
    v %= 1 << w
    if info.min < 0 and v >= 1 << (w - 1):
        v -= 1 << w
    return v


def shift_case(op, name):
    info, w = INT_INFO[name]
    xs = [1, 5, 0x55, info.max, info.min, -1 if info.min < 0 else info.max - 1]
    ns = [0, 1, w - 1, w, w + 1, 2 * w, min(100, info.max), -1 if info.min < 0 else info.max]
    a, b, want = [], [], []
    for x in xs:
        for n in ns:
            un = n % (1 << w)  # the amount as unsigned: negative ones are huge
            if op == "shl":
                r = 0 if un >= w else wrap(x << un, name)
            elif info.min < 0:  # arithmetic
                r = (-1 if x < 0 else 0) if un >= w else x >> un
            else:
                r = 0 if un >= w else x >> un
            a.append(x), b.append(n), want.append(r)
    dt = TYPES[name][1]
    return Case(f"{op}-{name}", binop_kernel, [pad(a, dt)[0], pad(b, dt)[0]], dt,
                dict(OP=op, DT=TYPES[name][0], BITS=False), np.asarray(want, dt))


def c_divrem(x, d, name, rem):
    info, w = INT_INFO[name]
    if d == 0:
        return x if rem else wrap(-1, name)
    if info.min < 0 and x == info.min and d == -1:
        return 0 if rem else info.min
    q = abs(x) // abs(d) * (1 if (x < 0) == (d < 0) else -1)
    return x - q * d if rem else q


def divrem_case(op, name):
    info, _ = INT_INFO[name]
    pairs = [(7, 2), (0, 3), (info.max, 7), (5, 0), (0, 0), (info.max, 0), (1, 1), (info.max, info.max)]
    if info.min < 0:
        pairs += [(-7, 2), (7, -2), (-7, -2), (-5, 0), (info.min, 0), (info.min, -1), (info.max, -1),
                  (info.min, 1), (0, -1), (info.min, 2), (-1, info.min)]
    else:
        pairs += [(info.max, 1), (info.max - 1, info.max), (3, info.max)]
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    want = [c_divrem(x, d, name, op == "rem") for x, d in pairs]
    dt = TYPES[name][1]
    return Case(f"{op}-{name}", binop_kernel, [pad(a, dt)[0], pad(b, dt)[0]], dt,
                dict(OP=op, DT=TYPES[name][0], BITS=False), np.asarray(want, dt))


def umulhi_case(name):
    info, w = INT_INFO[name]
    xs = [wrap(v, name) for v in (-1, 2, info.min, info.max, 3, -5)]
    pairs = [(x, y) for x in xs for y in xs]
    want = [wrap(((x % (1 << w)) * (y % (1 << w))) >> w, name) for x, y in pairs]
    dt = TYPES[name][1]
    return Case(f"umulhi-{name}", binop_kernel, [pad([p[0] for p in pairs], dt)[0],
                                                  pad([p[1] for p in pairs], dt)[0]], dt,
                dict(OP="umulhi", DT=TYPES[name][0], BITS=False), np.asarray(want, dt))


# -- float -> int ------------------------------------------------------------------------------

FTOI_VALUES = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.9, -1.9, 0.5, -0.5, 127.5, 128.0, -128.5,
               -129.0, 255.9, 256.0, -1.0, 32767.5, 32768.0, -32769.0, 65535.9, 65536.0, 2147483520.0,
               2147483648.0, -2147483648.0, -2147483904.0, 4294967040.0, 4294967296.0,
               9.2233715e18, 1e19, 2e19, -1e19, 1e30, -1e30]


def ftoi_case(src, dst):
    info, _ = INT_INFO[dst]
    sdt = TYPES[src][1]
    vals = np.asarray(FTOI_VALUES, np.float64).astype(sdt)  # as the source holds them
    want = []
    for v in vals.astype(np.float64):
        if math.isnan(v):
            want.append(0)
        elif v >= info.max:
            want.append(info.max)
        elif v <= info.min:
            want.append(info.min)
        else:
            want.append(int(math.trunc(v)))
    ddt = TYPES[dst][1]
    return Case(f"cast-{src}-{dst}", cast_kernel, [pad(vals, sdt)[0]], ddt,
                dict(SRC=TYPES[src][0], SRC_BITS=False, DST=TYPES[dst][0], DST_ST=TYPES[dst][0], ROUND=""),
                np.asarray(want, ddt))


# -- fp8 -----------------------------------------------------------------------------------------

FP8 = {"e4m3": (4, 3, 7), "e5m2": (5, 2, 15)}


def fp8_value(code, fmt):
    eb, mb, bias = FP8[fmt]
    s = -1.0 if code & 0x80 else 1.0
    e = (code >> mb) & ((1 << eb) - 1)
    m = code & ((1 << mb) - 1)
    if fmt == "e4m3" and (code & 0x7f) == 0x7f:
        return math.nan
    if fmt == "e5m2" and e == 31:
        return math.nan if m else s * math.inf
    if e == 0:
        return s * m * 2.0 ** (1 - bias - mb)
    return s * (1 + m / (1 << mb)) * 2.0 ** (e - bias)


def fp8_is_nan(codes, fmt):
    c = np.asarray(codes, np.uint8)
    if fmt == "e4m3":
        return (c & 0x7f) == 0x7f
    return ((c & 0x7c) == 0x7c) & ((c & 3) != 0)


def fp8_ref(x, fmt, rtz):
    """The code of x: to nearest even (or toward zero), +-max for finite
    overflow and (but e5m2 under rtz) infinities, NaN for NaN."""
    maxcode = 0x7e if fmt == "e4m3" else 0x7b
    if math.isnan(x):
        return 0x7f
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    a = abs(x)
    if math.isinf(a):
        return sign | (0x7c if (rtz and fmt == "e5m2") else maxcode)
    pos = [(fp8_value(c, fmt), c) for c in range(maxcode + 1)]
    if a >= pos[-1][0]:
        return sign | maxcode
    for (lo, cl), (hi, ch) in zip(pos, pos[1:]):
        if lo <= a < hi:
            if rtz or a - lo < hi - a or (a - lo == hi - a and cl % 2 == 0):
                return sign | cl
            return sign | ch
    raise AssertionError(x)


def fp8_values(fmt):
    eb, mb, bias = FP8[fmt]
    mx = fp8_value(0x7e if fmt == "e4m3" else 0x7b, fmt)
    tiny = 2.0 ** (1 - bias - mb)
    v = [0.0, -0.0, tiny, -tiny, tiny / 2, tiny * 0.75, tiny * 1.5, tiny * 2.5, tiny * 0.49,
         2.0 ** (1 - bias), 2.0 ** (1 - bias) * (1 - 2.0 ** -6), mx, -mx, mx * 1.03, mx * 1.07,
         mx * (1 + 2.0 ** -(mb + 1)), mx * 2, 1e10, -1e10, math.inf, -math.inf, math.nan, -math.nan,
         1.0, 1.0 + 2.0 ** -(mb + 1), 1.0 + 3 * 2.0 ** -(mb + 1), -1.0 - 2.0 ** -(mb + 1), 3.0, 0.1, -0.3,
         2.5, 1e-3, 7.77, 100.0, -250.0]
    # midpoints of neighbouring codes, and points just beside them
    for c in range(1, 0x78 if fmt == "e4m3" else 0x7a, 5):
        m = (fp8_value(c, fmt) + fp8_value(c + 1, fmt)) / 2
        v += [m, float(np.nextafter(np.float32(m), np.float32(0))), float(np.nextafter(np.float32(m), np.float32(1e30)))]
    return f32(v[:BLOCK])


def to_fp8_case(fmt, rtz):
    vals = fp8_values(fmt)
    want = [fp8_ref(float(x), fmt, rtz) for x in vals]
    rnd = "rtz" if rtz else "rtne"
    return Case(f"cast-f32-{fmt}-{rnd}", cast_kernel, [pad(vals, np.float32)[0]], np.uint8,
                dict(SRC=tl.float32, SRC_BITS=False, DST=TYPES[fmt][0], DST_ST=tl.uint8, ROUND=rnd),
                np.asarray(want, np.uint8), nan=lambda c: fp8_is_nan(c, fmt))


def from_fp8_case(fmt):
    codes = np.arange(256, dtype=np.uint8)
    want = f32([fp8_value(int(c), fmt) for c in codes])
    case = Case(f"cast-{fmt}-f32", cast_kernel, [codes[:BLOCK]], np.float32,
                dict(SRC=TYPES[fmt][0], SRC_BITS=True, DST=tl.float32, DST_ST=tl.float32, ROUND=""),
                want[:BLOCK], nan=np.isnan)
    hi = Case(f"cast-{fmt}-f32-hi", cast_kernel, [codes[BLOCK:]], np.float32,
              dict(SRC=TYPES[fmt][0], SRC_BITS=True, DST=tl.float32, DST_ST=tl.float32, ROUND=""),
              want[BLOCK:], nan=np.isnan)
    return [case, hi]


def narrow_to_fp8_case(src, fmt):
    """f16 / bf16 -> fp8 rounds the exact value once, as from f32."""
    vals = fp8_values(fmt)
    if src == "float16":
        held = vals.astype(np.float16)
        stored, bits = held, False
        exact = held.astype(np.float64)
    else:
        stored = bf16_bits(vals)
        held, bits = stored, True
        exact = f32_bits(stored.astype(np.uint32) << 16).astype(np.float64)
    want = [fp8_ref(float(x), fmt, False) for x in exact]
    return Case(f"cast-{src}-{fmt}", cast_kernel, [pad(stored, stored.dtype)[0]], np.uint8,
                dict(SRC=TYPES[src][0], SRC_BITS=bits, DST=TYPES[fmt][0], DST_ST=tl.uint8, ROUND="rtne"),
                np.asarray(want, np.uint8), nan=lambda c: fp8_is_nan(c, fmt))


# -- f16 / bf16 -----------------------------------------------------------------------------------

def bf16_bits(x):
    """f32 -> bf16 bits, to nearest even; NaN -> a quiet NaN."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(np.asarray(x, np.float32)), np.uint16(0x7FC0), r).astype(np.uint16)


def bf16_nan(b):
    b = np.asarray(b, np.uint16)
    return ((b & 0x7f80) == 0x7f80) & ((b & 0x7f) != 0)


def f16_nan(h):
    return np.isnan(np.asarray(h, np.float16))


def toward_zero(x64, r64, next_down):
    """r (nearest even) moved one step toward zero where it lies beyond x."""
    out = []
    for x, r, nd in zip(x64, r64, next_down):
        out.append(nd if (not math.isnan(r) and abs(r) > abs(x)) else r)
    return out


F16_VALUES = [2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -25, 1.4 * 2.0 ** -24, -2.0 ** -24, 6.1e-5, 2.0 ** -14,
              2.0 ** -14 - 2.0 ** -24, 2.0 ** -14 - 2.0 ** -25, 1e-8, -1e-8, 65504.0, 65519.99, 65520.0,
              1e5, -1e5, math.inf, -math.inf, math.nan, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 0.1, -0.0,
              3.14159, 1e-6, 5.9604645e-08]


def to_f16_case(rtz):
    vals = f32(F16_VALUES)
    r = vals.astype(np.float16)  # numpy: to nearest even, subnormals kept
    if rtz:
        h = r.view(np.uint16)
        down = np.where(h & 0x7fff, h - 1, h).astype(np.uint16).view(np.float16)
        r = np.asarray(toward_zero(vals.astype(np.float64), r.astype(np.float64), down), np.float16)
    rnd = "rtz" if rtz else "rtne"
    return Case(f"cast-f32-f16-{rnd}", cast_kernel, [pad(vals, np.float32)[0]], np.float16,
                dict(SRC=tl.float32, SRC_BITS=False, DST=tl.float16, DST_ST=tl.float16, ROUND=rnd),
                r, nan=f16_nan)


BF16_VALUES = [1e-39, -1e-39, 2.0 ** -133, 2.0 ** -134, 3 * 2.0 ** -134, 1.5 * 2.0 ** -133, 9.2e-41,
               2.0 ** -126, 2.0 ** -126 - 2.0 ** -133, 3.4e38, -3.4e38, 3.3e38, math.inf, -math.inf, math.nan,
               1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, 0.1, -0.0, 1e-45]


def to_bf16_case(rtz):
    vals = f32(BF16_VALUES)
    if rtz:
        want = np.where(np.isnan(vals), np.uint16(0x7FC0), (vals.view(np.uint32) >> 16).astype(np.uint16))
    else:
        want = bf16_bits(vals)
    rnd = "rtz" if rtz else "rtne"
    return Case(f"cast-f32-bf16-{rnd}", cast_kernel, [pad(vals, np.float32)[0]], np.uint16,
                dict(SRC=tl.float32, SRC_BITS=False, DST=tl.bfloat16, DST_ST=tl.uint16, ROUND=rnd),
                want.astype(np.uint16), nan=bf16_nan)


def narrow_to_f32_case(src):
    if src == "float16":
        codes = np.asarray([0x0001, 0x0002, 0x0200, 0x03ff, 0x0400, 0x8001, 0x83ff, 0x7bff, 0x7c00, 0xfc00,
                            0x3c00], np.uint16)
        want = codes.view(np.float16).astype(np.float32)
        ins = codes.view(np.float16)
        bits = False
    else:
        codes = np.asarray([0x0001, 0x0002, 0x0040, 0x007f, 0x0080, 0x8001, 0x807f, 0x7f7f, 0x7f80, 0xff80,
                            0x3f80], np.uint16)
        want = f32_bits(codes.astype(np.uint32) << 16)
        ins = codes
        bits = True
    return Case(f"cast-{src}-f32-subnormals", cast_kernel, [pad(ins, ins.dtype)[0]], np.float32,
                dict(SRC=TYPES[src][0], SRC_BITS=bits, DST=tl.float32, DST_ST=tl.float32, ROUND=""),
                want, nan=np.isnan)


def f16_arith_case(op):
    a = np.asarray([2.0 ** -7, 2.0 ** -12, 1e-4, 2.0 ** -14, -2.0 ** -13, 3.0 * 2.0 ** -10, 0.5, 2.0 ** -20,
                    6.1e-5, 65504.0], np.float16)
    b = np.asarray([2.0 ** -10, 2.0 ** -3, 0.37, 0.75, 2.0 ** -5, 2.0 ** -9, 2.0 ** -20, 0.5, 3.05e-5, 2.0],
                   np.float16)
    x, y = a.astype(np.float64), b.astype(np.float64)
    exact = {"mul": x * y, "add": x + y, "sub": x - y}[op]  # exact in f64
    want = exact.astype(np.float16)
    return Case(f"{op}-f16-subnormals", binop_kernel, [pad(a, np.float16)[0], pad(b, np.float16)[0]],
                np.float16, dict(OP=op, DT=tl.float16, BITS=False), want, nan=f16_nan)


def bf16_arith_case():
    a = f32([2.0 ** -70, 1.5 * 2.0 ** -70, 2.0 ** -120, -1.25 * 2.0 ** -66, 3.0, 2.0 ** -126])
    b = f32([2.0 ** -60, 1.25 * 2.0 ** -62, 2.0 ** -10, 2.0 ** -65, 2.0 ** -128, 0.5])
    ab, bb = bf16_bits(a), bf16_bits(b)
    x = f32_bits(ab.astype(np.uint32) << 16).astype(np.float64)
    y = f32_bits(bb.astype(np.uint32) << 16).astype(np.float64)
    want = bf16_bits((x * y).astype(np.float32))  # exact products, one rounding
    return Case("mul-bf16-subnormals", binop_kernel, [pad(ab, np.uint16)[0], pad(bb, np.uint16)[0]],
                np.uint16, dict(OP="mul", DT=tl.bfloat16, BITS=True), want, nan=bf16_nan)


def float_rem_case():
    a = f32([5.5, -5.5, 5.5, 1.0, math.inf, 7.0, -0.0, 1e30, 3.0, 0.0])
    b = f32([2.0, 2.0, math.inf, 0.0, 2.0, -3.0, 1.0, 3.0, -math.inf, 5.0])
    want = []  # -0.0 % 1 is +0 (the fma adds +0 to -0), not fmod's -0
    for x, y in zip(a, b):
        if math.isinf(y) and not math.isinf(x):
            want.append(x)
        else:  # x - trunc(x / y) * y, the quotient rounded to f32, one fma
            q = np.float32(x) / np.float32(y) if y != 0 else (math.nan if x == 0 or math.isnan(x) else math.copysign(math.inf, x) * math.copysign(1, y))
            if math.isnan(q) or math.isinf(q):
                want.append(math.nan)
                continue
            t = float(np.trunc(q))  # keeps the sign of a zero quotient
            want.append(float(np.float32((-t) * float(y) + float(x))))  # exact in f64 here
    return Case("rem-f32", binop_kernel, [pad(a, np.float32)[0], pad(b, np.float32)[0]], np.float32,
                dict(OP="rem", DT=tl.float32, BITS=False), f32(want), nan=np.isnan)


def all_cases():
    cases = []
    for name in ["int8", "uint8", "int16", "int32", "uint32", "int64", "uint64"]:
        cases += [shift_case("shl", name), shift_case("shr", name)]
    for name in ["int8", "uint8", "int32", "uint32", "int64"]:
        cases += [divrem_case("div", name), divrem_case("rem", name)]
    cases += [umulhi_case("int32"), umulhi_case("int64"), umulhi_case("uint32")]
    for src in ["float32", "float64", "float16"]:
        for dst in ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]:
            cases.append(ftoi_case(src, dst))
    for fmt in ["e4m3", "e5m2"]:
        cases += [to_fp8_case(fmt, False), to_fp8_case(fmt, True)] + from_fp8_case(fmt)
        cases += [narrow_to_fp8_case("float16", fmt), narrow_to_fp8_case("bfloat16", fmt)]
    cases += [to_f16_case(False), to_f16_case(True), to_bf16_case(False), to_bf16_case(True),
              narrow_to_f32_case("float16"), narrow_to_f32_case("bfloat16"),
              f16_arith_case("mul"), f16_arith_case("add"), f16_arith_case("sub"), bf16_arith_case(),
              float_rem_case()]
    return cases


with np.errstate(over="ignore"):  # the references overflow to inf on purpose
    CASES = {c.name: c for c in all_cases()}


@pytest.fixture(scope="module")
def cpu_driver():
    from ctriton.runtime.driver import driver
    prev = driver._active
    driver.set_active("cpu")
    yield
    if prev is None:
        driver.reset_active()
    else:
        driver.set_active(prev)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cpu(name, cpu_driver):
    case = CASES[name]
    check(case, case.run("cpu"))


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_same_as_cpu(name):
    case = CASES[name]
    got = case.run("cuda")
    check(case, got)


def test_ops_def_documents_each_case():
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "..", "ir", "ops.def")
    text = open(path).read()
    rows = {line.split(",")[1].strip().strip('"'): line for line in text.splitlines() if line.startswith("OP(")}
    for op, words in [("shl", "width"), ("shr", "width"), ("div", "/ 0"), ("rem", "% 0"), ("div", "INT_MIN"),
                      ("cast", "saturat"), ("cast", "NaN"), ("cast", "fp8"), ("cast", "subnormal"),
                      ("umulhi", "unsigned"), ("rem", "trunc")]:
        assert words in rows[op], f"ops.def row of {op} does not state its {words!r} case"


SIG = {np.dtype(np.int8): "*i8", np.dtype(np.uint8): "*u8", np.dtype(np.int16): "*i16",
       np.dtype(np.uint16): "*u16", np.dtype(np.int32): "*i32", np.dtype(np.uint32): "*u32",
       np.dtype(np.int64): "*i64", np.dtype(np.uint64): "*u64", np.dtype(np.float16): "*fp16",
       np.dtype(np.float32): "*fp32", np.dtype(np.float64): "*fp64"}


@pytest.mark.parametrize("arch", [80, 90])
def test_gpu_lowering_of_every_case(arch):
    """Without a GPU: every case's kernel compiles for sm_80 / sm_90 and its
    PTX is assembled by ptxas (when found), so the GPU variant above can run."""
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    seen = set()
    for case in CASES.values():
        names = case.kernel.arg_names
        dtypes = [a.dtype for a in case.ins] + [np.dtype(case.out_dtype)]
        key = (case.kernel.__name__, tuple(dtypes), tuple(sorted((k, repr(v)) for k, v in case.cx.items())))
        if key in seen:
            continue
        seen.add(key)
        sig = {n: SIG[d] for n, d in zip(names, dtypes)}
        cx = dict(case.cx, BLOCK=BLOCK)
        sig.update({k: "constexpr" for k in cx})
        k = triton.compile(ASTSource(case.kernel, sig, cx), target=GPUTarget("cuda", arch, 32))
        assert ".entry" in k.asm["ptx"], case.name


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_conversions_use_the_hardware_on_sm90(fmt):
    """On sm_89 and later the f32 <-> e4m3 / e5m2 casts are the hardware's
    cvt.rn.satfinite.{fmt}x2.f32 and cvt.rn.f16x2.{fmt}x2 (e5m2 -> f32: a
    shift and a widening everywhere, checked below; one instruction
    an element where the integer arithmetic took about twenty; the same
    rounding, saturation and NaN, which the GPU variant above checks bit
    for bit); rounding toward zero, and sm_80, keep the arithmetic."""
    from ctriton.backends.compiler import GPUTarget
    from ctriton.compiler import ASTSource
    cases = {c.name: c for c in all_cases()}
    # e5m2 -> f32 on every arch: an f16's top byte, shifted up by 8 and
    # widened (backend/scalar.c), which the hardware's cvt is no cheaper than
    up = (f"cast-{fmt}-f32", f"cvt.rn.f16x2.{fmt}x2" if fmt == "e4m3" else None)
    for name, instr in ((f"cast-f32-{fmt}-rtne", f"cvt.rn.satfinite.{fmt}x2.f32"), up,
                        (f"cast-f32-{fmt}-rtz", None)):
        case = cases[name]
        dtypes = [a.dtype for a in case.ins] + [np.dtype(case.out_dtype)]
        sig = {n: SIG[d] for n, d in zip(case.kernel.arg_names, dtypes)}
        cx = dict(case.cx, BLOCK=BLOCK)
        sig.update({k: "constexpr" for k in cx})
        for arch in (80, 90):
            ptx = triton.compile(ASTSource(case.kernel, sig, cx), target=GPUTarget("cuda", arch, 32)).asm["ptx"]
            hw = re.findall(r"cvt\.rn(?:\.satfinite)?\.(?:f16x2\.)?e[45]m[23]x2", ptx)
            if instr and arch == 90:
                assert instr in ptx and len(hw) >= 1, name
                # no integer rounding of the mantissa left (the emulation's
                # shift by 20 or 21 bits)
                assert not re.search(r"shr\.u32\s+%r\d+, %r\d+, 2[01];", ptx), name
            else:
                assert not hw, (name, arch)
            if name == f"cast-{fmt}-f32" and fmt == "e5m2":
                assert re.search(r"shl\.b16\s+%rs\d+, %rs\d+, 8;", ptx) and "cvt.f32.f16" in ptx, (name, arch)
