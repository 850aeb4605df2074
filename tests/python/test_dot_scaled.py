"""tl.dot_scaled (microscaled fp4 / fp8 / bf16 / fp16 operands with e8m0
scales per 16 or 32 elements along K), which the frontend decomposes into an
upcast to bf16 (fp16 when either side is fp16), a multiplication by the
scales and a plain dot.

The reference is written from the format definitions alone, in numpy: e2m1
codes two per byte (low nibble first) along K, or along M / N when
lhs_k_pack / rhs_k_pack is false; e8m0 scale s = 2^(s-127), with Triton's
s = 0 -> 0 and s = 0xFF -> NaN (inf under fast_math); each operand rounded
to the compute type, the scaled operand rounded again, then the product
summed in float64. The CPU backend runs every format pair, with scales on
either side, on both or none, packing along either dim, an accumulator, a
batch dim and the error cases; a set of forms is compiled for sm_80 and sm_90
(16-bit tensor-core MMA in the PTX, ptxas accepting it) and runs on the GPU
against the same reference under the `gpu` marker."""
import os
import re
import shutil

import numpy as np
import pytest

import ctriton as triton
import ctriton.language as tl
from ctriton.backends.compiler import GPUTarget
from ctriton.compiler import ASTSource
from ctriton.compiler.errors import CompilationError
from cpu_util import bf16_bits_to_f32, f32_to_bf16_bits, fp8_table, round_to

PTXAS = os.environ.get("CTRITON_PTXAS_PATH") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else shutil.which("ptxas"))

FORMATS = ["e2m1", "e4m3", "e5m2", "bf16", "fp16"]
E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


@triton.jit
def scaled_kernel(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr,
                  K: tl.constexpr, FA: tl.constexpr, FB: tl.constexpr, A_KPACK: tl.constexpr,
                  B_KPACK: tl.constexpr, G: tl.constexpr, FAST: tl.constexpr, A_DT: tl.constexpr,
                  B_DT: tl.constexpr, S_DT: tl.constexpr):
    # the operands as stored: e2m1 holds two codes per byte along the packed dim
    AM: tl.constexpr = M // 2 if FA == "e2m1" and not A_KPACK else M
    AK: tl.constexpr = K // 2 if FA == "e2m1" and A_KPACK else K
    BK: tl.constexpr = K // 2 if FB == "e2m1" and B_KPACK else K
    BN: tl.constexpr = N // 2 if FB == "e2m1" and not B_KPACK else N
    a = tl.load(a_ptr + tl.arange(0, AM)[:, None] * AK + tl.arange(0, AK)[None, :])
    b = tl.load(b_ptr + tl.arange(0, BK)[:, None] * BN + tl.arange(0, BN)[None, :])
    if A_DT is not None:
        a = a.to(A_DT, bitcast=True)
    if B_DT is not None:
        b = b.to(B_DT, bitcast=True)
    KS: tl.constexpr = K // G
    if sa_ptr is not None:
        sa_ptr = tl.load(sa_ptr + tl.arange(0, M)[:, None] * KS + tl.arange(0, KS)[None, :])
    if sb_ptr is not None:
        sb_ptr = tl.load(sb_ptr + tl.arange(0, N)[:, None] * KS + tl.arange(0, KS)[None, :])
    if S_DT is not None:  # scales given as floats rather than e8m0 exponents
        sa_ptr = sa_ptr.to(S_DT, bitcast=True)
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    if c_ptr is not None:
        d = tl.dot_scaled(a, sa_ptr, FA, b, sb_ptr, FB, acc=tl.load(c_ptr + offs), fast_math=FAST,
                          lhs_k_pack=A_KPACK, rhs_k_pack=B_KPACK)
    else:
        d = tl.dot_scaled(a, sa_ptr, FA, b, sb_ptr, FB, fast_math=FAST, lhs_k_pack=A_KPACK,
                          rhs_k_pack=B_KPACK, out_dtype=tl.float32)
    tl.store(out_ptr + offs, d)


@triton.jit
def batched_kernel(a_ptr, sa_ptr, b_ptr, out_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                   K: tl.constexpr):
    # lhs e2m1 [B, M, K/2] with scales [B, M, K/32], rhs bf16 [B, K, N]
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    a = tl.load(a_ptr + rb * (M * K // 2) + rm * (K // 2) + tl.arange(0, K // 2)[None, None, :])
    sa = tl.load(sa_ptr + rb * (M * K // 32) + rm * (K // 32) + tl.arange(0, K // 32)[None, None, :])
    b = tl.load(b_ptr + rb * (K * N) + tl.arange(0, K)[None, :, None] * N + rn)
    tl.store(out_ptr + rb * (M * N) + rm * N + rn, tl.dot_scaled(a, sa, "e2m1", b, None, "bf16"))


# -- the reference -----------------------------------------------------------------

def comp_type(fa, fb):
    return "float16" if "fp16" in (fa, fb) else "bfloat16"


def decode(stored, fmt, pack_dim):
    """Stored operand -> float64 values (e2m1 unpacked along pack_dim)."""
    if fmt == "e2m1":
        lo, hi = stored & 15, stored >> 4
        pair = np.stack([lo, hi], axis=pack_dim + 1)
        shape = list(stored.shape)
        shape[pack_dim] *= 2
        codes = pair.reshape(shape)
        return np.where(codes & 8, -1.0, 1.0) * E2M1[codes & 7]
    if fmt in ("e4m3", "e5m2"):
        return fp8_table(fmt)[stored]
    if fmt == "bf16":
        return bf16_bits_to_f32(stored).astype(np.float64)
    return stored.view(np.float16).astype(np.float64)


def scale_values(s, ct, fast, s_fmt=None):
    if s_fmt:  # float scales: their values, rounded to the compute type
        return round_to(fp8_table(s_fmt)[s], ct)
    v = np.where(s == 0, 0.0, 2.0 ** (s.astype(np.int64) - 127))
    with np.errstate(over="ignore"):
        v = round_to(v, ct)
    return np.where(s == 255, np.inf if fast else np.nan, v)


def upcast(stored, fmt, pack_dim, scale, ct, fast, g, rhs, s_fmt=None):
    v = round_to(decode(stored, fmt, pack_dim), ct)
    if scale is None:
        return v
    sv = np.repeat(scale_values(scale, ct, fast, s_fmt), g, axis=-1)  # [.., R, K]
    if rhs:
        sv = np.swapaxes(sv, -1, -2)
    with np.errstate(invalid="ignore", over="ignore"):
        return round_to(v * sv, ct)


def reference(a, sa, fa, b, sb, fb, acc=None, fast=False, a_kpack=True, b_kpack=True, g=32, sa_fmt=None):
    ct = comp_type(fa, fb)
    r = a.ndim
    x = upcast(a, fa, r - 1 if a_kpack else r - 2, sa, ct, fast, g, False, sa_fmt)
    y = upcast(b, fb, r - 2 if b_kpack else r - 1, sb, ct, fast, g, True)
    with np.errstate(invalid="ignore", over="ignore"):
        d = x @ y
        bound = np.abs(x) @ np.abs(y)
    if acc is not None:
        d = d + acc
        bound = bound + np.abs(acc)
    return d, bound


def check(out, ref, bound, rtol=1e-5):
    """Non-finite entries agree exactly; finite ones within rtol of the
    magnitude the sum was taken over (the order of an f32 sum is free)."""
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(out), nan)
    inf = np.isinf(ref)
    assert np.array_equal(out[inf], ref[inf])
    fin = ~(nan | inf)
    err = np.abs(out[fin].astype(np.float64) - ref[fin])
    assert np.all(err <= rtol * bound[fin] + 1e-30), float(np.max(err / (bound[fin] + 1e-30)))


def make_operand(shape, fmt, rng):
    """Random stored operand of format fmt: every finite code of fp4 / fp8,
    normal-ish 16-bit floats."""
    if fmt in ("bf16", "fp16"):
        v = rng.standard_normal(shape).astype(np.float32) * 4
        return f32_to_bf16_bits(v) if fmt == "bf16" else v.astype(np.float16).view(np.uint16)
    x = rng.integers(0, 256, shape, dtype=np.uint8)
    if fmt == "e4m3":  # 0x7F / 0xFF are NaN
        x = np.where((x & 0x7F) == 0x7F, x ^ 1, x).astype(np.uint8)
    elif fmt == "e5m2":  # exponent 31: inf / NaN
        x = np.where((x & 0x7C) == 0x7C, x & 0xFB, x).astype(np.uint8)
    return x


def make_scale(shape, ct, rng):
    lo, hi = (96, 150) if ct == "bfloat16" else (118, 134)
    return rng.integers(lo, hi + 1, shape, dtype=np.uint8)


def stored_shape(rows, cols, fmt, pack_dim):
    shape = [rows, cols]
    if fmt == "e2m1":
        shape[pack_dim] //= 2
    return tuple(shape)


def make_case(fa, fb, M, N, K, scales, rng, a_kpack=True, b_kpack=True, g=32, acc=False):
    ct = comp_type(fa, fb)
    a = make_operand(stored_shape(M, K, fa, 1 if a_kpack else 0), fa, rng)
    b = make_operand(stored_shape(K, N, fb, 0 if b_kpack else 1), fb, rng)
    sa = make_scale((M, K // g), ct, rng) if "a" in scales else None
    sb = make_scale((N, K // g), ct, rng) if "b" in scales else None
    c = rng.standard_normal((M, N)).astype(np.float32) if acc else None
    return a, sa, b, sb, c


def on_cpu(launch):
    from ctriton.runtime.driver import driver
    prev = driver._active
    driver.set_active("cpu")
    try:
        launch()
    finally:
        if prev is None:
            driver.reset_active()
        else:
            driver.set_active(prev)


def run_cpu(a, sa, fa, b, sb, fb, c, M, N, K, fast=False, a_kpack=True, b_kpack=True, g=32, a_dt=None,
            b_dt=None, s_dt=None):
    out = np.zeros((M, N), np.float32)
    on_cpu(lambda: scaled_kernel[(1,)](a, sa, b, sb, c, out, M, N, K, fa, fb, a_kpack, b_kpack, g, fast, a_dt,
                                       b_dt, s_dt))
    return out


def case_check(fa, fb, M=32, N=32, K=64, scales="ab", seed=0, acc=False, fast=False, a_kpack=True,
               b_kpack=True, g=32):
    rng = np.random.default_rng(seed)
    a, sa, b, sb, c = make_case(fa, fb, M, N, K, scales, rng, a_kpack, b_kpack, g, acc)
    out = run_cpu(a, sa, fa, b, sb, fb, c, M, N, K, fast, a_kpack, b_kpack, g)
    ref, bound = reference(a, sa, fa, b, sb, fb, c, fast, a_kpack, b_kpack, g)
    check(out, ref, bound)


# -- CPU backend -------------------------------------------------------------------

@pytest.mark.parametrize("fb", FORMATS)
@pytest.mark.parametrize("fa", FORMATS)
def test_format_pairs(fa, fb):
    """Every lhs / rhs format pair, both sides scaled."""
    case_check(fa, fb, seed=FORMATS.index(fa) * 5 + FORMATS.index(fb))


# Triton's own test: one side microscaled, the other a plain format without
# scales, in either order.
UPSTREAM_PAIRS = [(mx, nt) for mx in ("e2m1", "e4m3", "e5m2") for nt in ("e4m3", "e5m2", "bf16", "fp16")]


@pytest.mark.parametrize("rhs_scale", [False, True])
@pytest.mark.parametrize("mx,nt", UPSTREAM_PAIRS)
def test_one_side_scaled(mx, nt, rhs_scale):
    if rhs_scale:
        case_check(nt, mx, M=64, N=32, K=128, scales="b", seed=7)
    else:
        case_check(mx, nt, M=32, N=64, K=128, scales="a", seed=8)


@pytest.mark.parametrize("fa,fb", [("e2m1", "e4m3"), ("e5m2", "fp16"), ("bf16", "e2m1"), ("e2m1", "e2m1")])
def test_no_scales(fa, fb):
    """Without scales the operands are upcast and multiplied as they are."""
    case_check(fa, fb, scales="", seed=3)


@pytest.mark.parametrize("a_kpack,b_kpack", [(False, True), (True, False), (False, False)])
def test_e2m1_packed_along_m_or_n(a_kpack, b_kpack):
    """lhs_k_pack / rhs_k_pack false: the two codes of a byte are consecutive
    rows of lhs (M) or columns of rhs (N)."""
    case_check("e2m1", "e2m1", M=64, N=32, K=64, a_kpack=a_kpack, b_kpack=b_kpack, seed=11)


def test_packing_order_low_nibble_first():
    """One nonzero code per byte half: element 2k is the low nibble."""
    M = N = K = 32
    a = np.zeros((M, K // 2), np.uint8)
    a[:, 0] = 0x02  # element 0 = 1.0, element 1 = 0
    b = np.zeros((K, N), np.uint16)
    b[0, :] = f32_to_bf16_bits(np.full(N, 3.0, np.float32))
    b[1, :] = f32_to_bf16_bits(np.full(N, 5.0, np.float32))
    out = run_cpu(a, None, "e2m1", b, None, "bf16", None, M, N, K)
    assert np.all(out == 3.0)
    a[:, 0] = 0x20  # element 1 = 1.0
    out = run_cpu(a, None, "e2m1", b, None, "bf16", None, M, N, K)
    assert np.all(out == 5.0)


def test_every_e2m1_code():
    """The 16 codes decode to 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives."""
    M, N, K = 16, 16, 32
    a = np.zeros((M, K // 2), np.uint8)
    a[:, 0] = np.arange(16, dtype=np.uint8)  # row i: element 0 = code i
    b = np.zeros((K, N), np.uint16)
    b[0, :] = f32_to_bf16_bits(np.ones(N, np.float32))
    out = run_cpu(a, None, "e2m1", b, None, "bf16", None, M, N, K)
    want = np.where(np.arange(16) & 8, -1.0, 1.0) * E2M1[np.arange(16) & 7]
    assert np.array_equal(out[:, 0], want.astype(np.float32))


def test_scale_exponents():
    """A unit operand times its scales: 2^(s-127) exactly, s = 0 gives 0
    (Triton's construction), 0xFF NaN."""
    M, N, K = 16, 16, 32
    s = np.array([0, 1, 100, 126, 127, 128, 140, 200, 254, 255, 127, 127, 127, 127, 127, 127], np.uint8)
    a = np.full((M, K), 0x38, np.uint8)  # e4m3 1.0
    sa = s[:, None].copy()
    b = np.zeros((K, N), np.uint16)
    b[0, :] = f32_to_bf16_bits(np.ones(N, np.float32))
    out = run_cpu(a, sa, "e4m3", b, None, "bf16", None, M, N, K)
    want = np.where(s == 0, 0.0, 2.0 ** (s.astype(np.float64) - 127))
    want[s == 255] = np.nan
    np.testing.assert_array_equal(out[:, 0], want.astype(np.float32))


@pytest.mark.parametrize("fast", [False, True])
def test_nan_scale(fast):
    """A 0xFF scale makes its group NaN; under fast_math it is +inf, so the
    products are +-inf (NaN for zero elements)."""
    rng = np.random.default_rng(5)
    M, N, K = 32, 32, 64
    a, sa, b, sb, _ = make_case("e4m3", "bf16", M, N, K, "a", rng)
    sa[3, 1] = 255
    a[3, 32:] = 0x38  # the group all 1.0 and column 0 of b there all 1.0: +inf under fast_math
    b[32:, 0] = f32_to_bf16_bits(np.ones(32, np.float32))
    sa[17, 0] = 255
    a[17, :32] = 0  # the whole group zero: NaN either way
    out = run_cpu(a, sa, "e4m3", b, None, "bf16", None, M, N, K, fast=fast)
    ref, bound = reference(a, sa, "e4m3", b, None, "bf16", fast=fast)
    check(out, ref, bound)
    assert np.isnan(out[17]).all() and not np.isnan(out[~np.isin(np.arange(M), [3, 17])]).any()
    if fast:
        assert out[3, 0] == np.inf
    else:
        assert np.isnan(out[3]).all()


def test_accumulator():
    case_check("e2m1", "bf16", acc=True, seed=21)
    case_check("e5m2", "e4m3", M=16, N=64, K=32, acc=True, seed=22)


@pytest.mark.parametrize("fa,fb", [("e2m1", "fp16"), ("e4m3", "e4m3")])
def test_group_of_16(fa, fb):
    """Scales per 16 elements (K / scale dim = 16)."""
    case_check(fa, fb, K=64, g=16, seed=31)


@pytest.mark.parametrize("M,N,K", [(16, 16, 32), (128, 32, 64), (32, 128, 128), (64, 64, 256)])
def test_shapes(M, N, K):
    case_check("e2m1", "e5m2", M=M, N=N, K=K, seed=M + N + K)


def test_fp8_and_16_bit_dtypes_as_well_as_storage():
    """Operands given in their own dtype (fp8, bf16, fp16) rather than the
    unsigned storage type give the same result."""
    rng = np.random.default_rng(41)
    M, N, K = 32, 32, 64
    for fa, fb, ad, bd in [("e4m3", "bf16", tl.float8e4nv, tl.bfloat16), ("e5m2", "fp16", tl.float8e5, tl.float16)]:
        a, sa, b, sb, _ = make_case(fa, fb, M, N, K, "ab", rng)
        plain = run_cpu(a, sa, fa, b, sb, fb, None, M, N, K)
        typed = run_cpu(a, sa, fa, b, sb, fb, None, M, N, K, a_dt=ad, b_dt=bd)
        np.testing.assert_array_equal(plain, typed)
        ref, bound = reference(a, sa, fa, b, sb, fb)
        check(typed, ref, bound)


@pytest.mark.parametrize("fb", ["bf16", "fp16"])
def test_float_scales(fb):
    """A scale block of floats (here e4m3, one per 16 fp4 elements) is cast
    to the compute type and multiplied as it is."""
    rng = np.random.default_rng(45)
    M, N, K = 32, 32, 64
    a, _, b, _, _ = make_case("e2m1", fb, M, N, K, "", rng, g=16)
    sa = make_operand((M, K // 16), "e4m3", rng)
    sa[5, 2] = 0x7F  # NaN: its group's products are NaN
    out = run_cpu(a, sa, "e2m1", b, None, fb, None, M, N, K, g=16, s_dt=tl.float8e4nv)
    ref, bound = reference(a, sa, "e2m1", b, None, fb, g=16, sa_fmt="e4m3")
    check(out, ref, bound)
    assert np.isnan(out[5]).all() and not np.isnan(out[6]).any()


def test_batched():
    rng = np.random.default_rng(51)
    B, M, N, K = 2, 16, 32, 64
    a = rng.integers(0, 256, (B, M, K // 2), dtype=np.uint8)
    sa = make_scale((B, M, K // 32), "bfloat16", rng)
    b = f32_to_bf16_bits(rng.standard_normal((B, K, N)).astype(np.float32))
    out = np.zeros((B, M, N), np.float32)
    on_cpu(lambda: batched_kernel[(1,)](a, sa, b, out, B, M, N, K))
    ref, bound = reference(a, sa, "e2m1", b, None, "bf16")
    check(out, ref, bound)


# -- errors ------------------------------------------------------------------------

@triton.jit
def bad_kernel(a_ptr, b_ptr, s_ptr, out_ptr, CASE: tl.constexpr):
    r32 = tl.arange(0, 32)
    a8 = tl.load(a_ptr + r32[:, None] * 32 + r32[None, :])          # 32x32 uint8
    b8 = tl.load(b_ptr + r32[:, None] * 32 + r32[None, :])          # 32x32 uint8
    s = tl.load(s_ptr + r32[:, None] + tl.arange(0, 2)[None, :])     # 32x2 uint8
    if CASE == "format":
        d = tl.dot_scaled(a8, None, "e3m2", b8, None, "e4m3")
    elif CASE == "k_pack":
        d = tl.dot_scaled(a8, None, "e4m3", b8, None, "e4m3", lhs_k_pack=False)
    elif CASE == "k_mismatch":
        d = tl.dot_scaled(a8, None, "e2m1", b8, None, "e4m3")
    elif CASE == "dtype":
        d = tl.dot_scaled(a8.to(tl.int8, bitcast=True), None, "e4m3", b8, None, "e4m3")
    elif CASE == "bf16_u8":
        d = tl.dot_scaled(a8, None, "bf16", b8, None, "e4m3")
    elif CASE == "scale_factor":
        d = tl.dot_scaled(a8, tl.reshape(s, (16, 4)), "e4m3", b8, None, "e4m3")
    elif CASE == "scale_shape":
        d = tl.dot_scaled(a8, tl.reshape(s, (64, 1)), "e4m3", b8, None, "e4m3")
    elif CASE == "out_dtype":
        d = tl.dot_scaled(a8, None, "e4m3", b8, None, "e4m3", out_dtype=tl.float16)
    elif CASE == "acc":
        d = tl.dot_scaled(a8, None, "e4m3", b8, None, "e4m3", acc=tl.zeros((32, 16), tl.float32))
    elif CASE == "fmt_runtime":
        d = tl.dot_scaled(a8, None, a_ptr, b8, None, "e4m3")
    else:
        d = tl.dot_scaled(a8, None, "e4m3", tl.load(b_ptr), None, "e4m3")
    tl.store(out_ptr + r32[:, None] * 32 + r32[None, :], d)


BAD = {
    "format": "invalid float format 'e3m2'",
    "k_pack": "only e2m1 operands can be packed along a dim other than K",
    "k_mismatch": "the reduction dims hold 64",
    "dtype": "e4m3 operand 'lhs' must be float8e4nv or uint8, got block<32x32xi8>",
    "bf16_u8": "bf16 operand 'lhs' must be bfloat16 or uint16",
    "scale_factor": "scale factor of K / 4 with K = 32: it must be 16 or 32",
    "scale_shape": "lhs_scale must be a block of shape [32, 1], got block<64x1xu8>",
    "out_dtype": "only float32 is supported for out_dtype",
    "acc": "acc must be a block<32x32xf32>, got block<32x16xf32>",
    "fmt_runtime": "argument 'lhs_format' must be a constexpr string",
    "scalar": "argument 'rhs' must be a block",
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_errors(case):
    sig = {"a_ptr": "*u8", "b_ptr": "*u8", "s_ptr": "*u8", "out_ptr": "*fp32", "CASE": "constexpr"}
    with pytest.raises(CompilationError, match=re.escape(BAD[case])):
        triton.compile(ASTSource(bad_kernel, sig, {"CASE": case}), target=GPUTarget("cpu", 0, 1))


# -- sm_80 / sm_90: the PTX of the decomposition, accepted by ptxas --------------

def compile_gpu(fa, fb, M, N, K, scales, arch, nw=4, a_kpack=True, b_kpack=True, acc=False):
    st = {"e2m1": "*u8", "e4m3": "*u8", "e5m2": "*u8", "bf16": "*u16", "fp16": "*u16"}
    sig = {"a_ptr": st[fa], "sa_ptr": "*u8" if "a" in scales else "constexpr", "b_ptr": st[fb],
           "sb_ptr": "*u8" if "b" in scales else "constexpr", "c_ptr": "*fp32" if acc else "constexpr",
           "out_ptr": "*fp32"}
    cx = dict(M=M, N=N, K=K, FA=fa, FB=fb, A_KPACK=a_kpack, B_KPACK=b_kpack, G=32, FAST=False, A_DT=None,
              B_DT=None, S_DT=None)
    for name in ("sa_ptr", "sb_ptr", "c_ptr"):
        if sig[name] == "constexpr":
            cx[name] = None
    sig.update({k: "constexpr" for k in cx})
    attrs = {n: {"divisibility": 16} for n in sig if sig[n].startswith("*")}
    return triton.compile(ASTSource(scaled_kernel, sig, cx, attrs), target=GPUTarget("cuda", arch, 32),
                          options={"num_warps": nw})


GPU_FORMS = [  # fa, fb, M, N, K, scales, a_kpack, b_kpack, acc
    ("e2m1", "bf16", 64, 64, 128, "a", True, True, False),
    ("bf16", "e2m1", 64, 128, 64, "b", True, True, False),
    ("e4m3", "fp16", 128, 64, 64, "a", True, True, True),
    ("fp16", "e5m2", 64, 64, 128, "b", True, True, False),
    ("e2m1", "e4m3", 64, 64, 64, "ab", True, True, False),
    ("e2m1", "e2m1", 64, 64, 64, "ab", False, False, False),
    ("e5m2", "e4m3", 64, 32, 64, "", True, True, True),
]


@pytest.mark.skipif(not PTXAS, reason="ptxas not found")
@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("form", GPU_FORMS, ids=lambda f: f"{f[0]}x{f[1]}-{f[5] or 'none'}")
def test_ptxas(form, arch):
    """The decomposed dot runs on 16-bit tensor cores (mma.sync, or warpgroup
    MMA on sm_90) and ptxas accepts the PTX."""
    fa, fb, M, N, K, scales, akp, bkp, acc = form
    k = compile_gpu(fa, fb, M, N, K, scales, arch, a_kpack=akp, b_kpack=bkp, acc=acc)
    ptx = k.asm["ptx"]
    ab = "f16" if "fp16" in (fa, fb) else "bf16"
    assert f".target sm_{arch}" in ptx
    assert (re.search(rf"mma.sync.aligned.m16n8k16.row.col.f32.{ab}.{ab}.f32", ptx)
            or re.search(rf"wgmma.mma_async.sync.aligned.m64n\d+k16.f32.{ab}.{ab}", ptx))
    assert k.asm.get("cubin", b"")[:4] == b"\x7fELF"


# -- on the GPU ------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("form", GPU_FORMS, ids=lambda f: f"{f[0]}x{f[1]}-{f[5] or 'none'}")
def test_gpu(form):
    import torch
    fa, fb, M, N, K, scales, akp, bkp, acc = form
    rng = np.random.default_rng(61)
    a, sa, b, sb, c = make_case(fa, fb, M, N, K, scales, rng, akp, bkp, 32, acc)

    def dev(x, fmt=None):  # 16-bit operands in their own dtype
        if x is None:
            return None
        if x.dtype == np.uint16:
            return torch.from_numpy(x.view(np.int16)).cuda().view(torch.bfloat16 if fmt == "bf16" else torch.float16)
        return torch.from_numpy(x).cuda()

    out = torch.zeros((M, N), dtype=torch.float32, device="cuda")
    scaled_kernel[(1,)](dev(a, fa), dev(sa), dev(b, fb), dev(sb), dev(c), out, M, N, K, fa, fb, akp, bkp, 32, False,
                        None, None, None, num_warps=4)
    got = out.cpu().numpy()
    ref, bound = reference(a, sa, fa, b, sb, fb, c, a_kpack=akp, b_kpack=bkp)
    check(got, ref, bound, rtol=1e-4)
