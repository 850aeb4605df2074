"""Helpers for the CPU end-to-end tests of the language (test_cpu_*.py):
dtype tables, Triton's type promotion, C-semantics integer division, and
numpy models of the narrow float formats (bfloat16, fp8 e4m3fn / e5m2)."""
import numpy as np
import pytest

import ctriton.language as tl


@pytest.fixture(scope="module")
def cpu_driver():
    """Runs a module's kernels on the CPU backend (numpy arrays as pointers),
    also on a machine whose default driver is CUDA."""
    from ctriton.runtime.driver import driver
    prev = driver._active
    driver.set_active("cpu")
    yield
    if prev is None:
        driver.reset_active()
    else:
        driver.set_active(prev)


# test modules: `from cpu_util import cpu_driver, requires_cpu` and
# `pytestmark = requires_cpu`
requires_cpu = pytest.mark.usefixtures("cpu_driver")

SINT = ["int8", "int16", "int32", "int64"]
UINT = ["uint8", "uint16", "uint32", "uint64"]
INTS = SINT + UINT
FLOATS = ["float16", "bfloat16", "float32", "float64"]
ALL = INTS + FLOATS

TL = {n: getattr(tl, n) for n in ALL}
TL["bool"] = tl.int1


def bits(name):
    return {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "float16": 16, "bfloat16": 16,
            "int32": 32, "uint32": 32, "float32": 32, "int64": 64, "uint64": 64,
            "float64": 64}[name]


def storage(name):
    """The numpy dtype an array of `name` is held in (bf16 travels as uint16 bits)."""
    return np.dtype("uint16") if name == "bfloat16" else np.dtype(name)


def is_float(name):
    return name in FLOATS


def is_signed(name):
    return name in SINT


# -- bfloat16 -----------------------------------------------------------------

def f32_to_bf16_bits(x):
    """Round-to-nearest-even float32 -> bfloat16 bit patterns (uint16); NaN stays NaN."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    r = r.astype(np.uint16)
    nan = np.isnan(np.asarray(x, np.float32))
    return np.where(nan, np.uint16(0x7FC0), r).astype(np.uint16)


def bf16_bits_to_f32(b):
    return (np.asarray(b, np.uint16).astype(np.uint32) << 16).view(np.float32)


def bf16_round(x):
    return bf16_bits_to_f32(f32_to_bf16_bits(np.asarray(x, np.float32)))


def to_storage(x, name):
    """numpy values (float64/ints) -> array in the storage of dtype `name`."""
    if name == "bfloat16":
        return f32_to_bf16_bits(np.asarray(x, np.float32))
    return np.asarray(x).astype(storage(name))


def to_f64(a, name):
    """Array in the storage of `name` -> float64 values."""
    if name == "bfloat16":
        return bf16_bits_to_f32(a).astype(np.float64)
    return a.astype(np.float64)


def round_to(x, name):
    """Rounds float64 values to the precision of float dtype `name` (result float64)."""
    if name == "bfloat16":
        return bf16_round(np.asarray(x, np.float32)).astype(np.float64)
    return np.asarray(x).astype(name).astype(np.float64)


# -- fp8 ------------------------------------------------------------------------

# format -> (exponent bits, mantissa bits, bias)
FP8_FORMATS = {"e4m3": (4, 3, 7), "e5m2": (5, 2, 15), "e4b15": (4, 3, 15), "e4b8": (4, 3, 8),
               "e5b16": (5, 2, 16)}


def fp8_table(fmt):
    """All 256 values of an fp8 format as float64 (NaN where the code is NaN).
    e4m3fn: bias 7, no infinities, S.1111.111 is NaN; e5m2: IEEE-like, bias 15;
    e4b15: e4m3fn's encoding with bias 15; e4b8 / e5b16 ("fnuz"): biases 8 /
    16, no infinities, no -0, 0x80 is NaN."""
    vals = np.empty(256, np.float64)
    ebits, mbits, bias = FP8_FORMATS[fmt]
    for c in range(256):
        s = -1.0 if c & 0x80 else 1.0
        e = (c >> mbits) & ((1 << ebits) - 1)
        m = c & ((1 << mbits) - 1)
        if fmt in ("e4m3", "e4b15") and e == 15 and m == 7:
            vals[c] = np.nan
        elif fmt in ("e4b8", "e5b16") and c == 0x80:
            vals[c] = np.nan
        elif fmt == "e5m2" and e == 31:
            vals[c] = np.nan if m else s * np.inf
        elif e == 0:
            vals[c] = s * m * 2.0 ** (1 - bias - mbits)
        else:
            vals[c] = s * (1 + m / (1 << mbits)) * 2.0 ** (e - bias)
    return vals


def fp8_round(x, fmt):
    """float values -> nearest fp8 value (ties to even code), saturating
    out-of-range finite values is not modelled: callers stay in range."""
    table = fp8_table(fmt)
    finite = np.where(np.isfinite(table) & (np.arange(256) < 128))[0]
    pos = table[finite]
    order = np.argsort(pos)
    pos, codes = pos[order], finite[order]
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    i = np.clip(np.searchsorted(pos, a), 1, len(pos) - 1)
    lo, hi = pos[i - 1], pos[i]
    pick_hi = (a - lo > hi - a) | ((a - lo == hi - a) & (codes[i] % 2 == 0))
    r = np.where(pick_hi, hi, lo)
    r = np.where(a >= pos[-1], pos[-1], r)
    return np.copysign(r, x)


# -- promotion and C integer semantics ------------------------------------------

def promote(a, b, div_or_mod=False):
    """Triton's computation dtype of a binary op on two tensors: float64 >
    float32 > float16 (with anything but the wider floats) > bfloat16 (only
    with itself; with an integer it is float32); `/` and `%` on 16-bit floats
    compute in float32; integers follow C's usual arithmetic conversions
    without the promotion to int."""
    if "float64" in (a, b):
        return "float64"
    if "float32" in (a, b):
        return "float32"
    if "float16" in (a, b):
        return "float32" if div_or_mod else "float16"
    if a == "bfloat16" and b == "bfloat16":
        return "float32" if div_or_mod else "bfloat16"
    if "bfloat16" in (a, b):
        return "float32"
    if a == b:
        return a
    sa, sb = is_signed(a), is_signed(b)
    if sa == sb:
        return a if bits(a) > bits(b) else b
    u, s = (a, b) if not sa else (b, a)
    return u if bits(u) >= bits(s) else s


def c_div(a, b):
    """Integer division truncating toward zero (numpy arrays of one int dtype)."""
    q = a // b
    fix = (a % b != 0) & ((a < 0) != (b < 0))
    return (q + fix.astype(q.dtype)).astype(a.dtype)


def c_mod(a, b):
    return (a - c_div(a, b) * b).astype(a.dtype)


def rand_values(name, shape, rng, lo=None, hi=None):
    """Random values of dtype `name` in its numpy storage, avoiding nothing special."""
    if is_float(name):
        lo = -4.0 if lo is None else lo
        hi = 4.0 if hi is None else hi
        v = rng.uniform(lo, hi, size=shape)
        return to_storage(v, name)
    info = np.iinfo(name)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return rng.integers(lo, hi, size=shape, dtype=name, endpoint=True)


def tol(name):
    return {"float16": 2e-3, "bfloat16": 1e-2, "float32": 2e-6, "float64": 1e-12}.get(name, 0)
