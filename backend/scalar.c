/* scalar.c: the scalar semantics of elementwise ops and casts (scalar.h),
 * one element at a time, for both backends.
 *
 * The edge cases, each stated in ir/ops.def:
 *   - shl / shr by the bit width or more (amounts compared unsigned, so a
 *     negative one too): 0, or the sign fill for an arithmetic shr, as PTX
 *     shl / shr clamp the amount (LLVM's shl would be poison);
 *   - integer x / 0 = -1 (all bits set) and x % 0 = x, INT_MIN / -1 =
 *     INT_MIN and INT_MIN % -1 = 0 (PTX leaves x / 0 to the hardware, LLVM
 *     makes it undefined; these are what NVIDIA's unsigned division gives);
 *   - float -> int saturates to the destination's range, NaN -> 0 (PTX
 *     cvt.rzi clamps); float -> i1 is x != 0 (NaN -> 1);
 *   - f32 -> fp8 (e4m3fn, e5m2) rounds once to nearest even (or toward
 *     zero), saturates finite overflow and +-inf to +-max (448, 57344; under
 *     rtz e5m2 keeps inf), NaN -> NaN, as sm_90's cvt.rn.satfinite; fp8 ->
 *     f32 is exact;
 *   - f16, bf16, fp8 arithmetic is computed in f32 and rounded to nearest
 *     even after each op (+ - * / are then correctly rounded, so targets
 *     may use native f16 instructions for them); subnormals are kept
 *     everywhere (no flush to zero); conversions to f16 / bf16 with rtz
 *     round toward zero (finite overflow to +-max);
 *   - float % is x - trunc(x / y) * y with one fma, x when y is +-inf (what
 *     LLVM's frem becomes on the GPU, Triton's %); umulhi is the high half of
 *     the unsigned product, whatever the signedness.
 * NaN payloads are not specified.
 */
#include <string.h>

#include "backend/scalar.h"

static LLVMTypeRef int_ty(BeScalar *s, unsigned bits)
{
	return LLVMIntTypeInContext(s->c, bits);
}
static LLVMTypeRef f32_ty(BeScalar *s)
{
	return LLVMFloatTypeInContext(s->c);
}
static LLVMTypeRef f64_ty(BeScalar *s)
{
	return LLVMDoubleTypeInContext(s->c);
}
static LLVMValueRef ci(LLVMTypeRef t, long long v)
{
	return LLVMConstInt(t, (unsigned long long)v, 1);
}

LLVMValueRef be_intrinsic(BeScalar *s, const char *name, LLVMTypeRef *tys, int ntys, LLVMValueRef *args, int nargs)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	if (!id)
		return NULL;
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(s->m, id, tys, (size_t)ntys);
	LLVMTypeRef fty = LLVMIntrinsicGetType(s->c, id, tys, (size_t)ntys);
	return LLVMBuildCall2(s->b, fty, fn, args, (unsigned)nargs, "");
}

/* An intrinsic overloaded on the type of its first argument. */
static LLVMValueRef intr(BeScalar *s, const char *name, LLVMValueRef *args, int nargs)
{
	LLVMTypeRef t = LLVMTypeOf(args[0]);
	return be_intrinsic(s, name, &t, 1, args, nargs);
}

static LLVMValueRef intr1(BeScalar *s, const char *name, LLVMValueRef x)
{
	return intr(s, name, &x, 1);
}

static LLVMValueRef fail(BeScalar *s, const IrOp *op, const char *msg, LLVMTypeRef t)
{
	s->fail(s->user, op, msg);
	return LLVMGetUndef(t);
}

/* ---- integers ------------------------------------------------------------ */

static LLVMValueRef shift(BeScalar *s, IrOpcode opc, bool sgn, LLVMValueRef x, LLVMValueRef n)
{
	LLVMBuilderRef b = s->b;
	LLVMTypeRef t = LLVMTypeOf(x);
	unsigned bits = LLVMGetIntTypeWidth(t);
	LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntULT, n, ci(t, bits), "");
	LLVMValueRef sn = LLVMBuildSelect(b, ok, n, ci(t, bits - 1), "");
	if (opc == OP_SHL)
		return LLVMBuildSelect(b, ok, LLVMBuildShl(b, x, sn, ""), ci(t, 0), "");
	if (sgn) /* by width - 1: the sign fill */
		return LLVMBuildAShr(b, x, sn, "");
	return LLVMBuildSelect(b, ok, LLVMBuildLShr(b, x, sn, ""), ci(t, 0), "");
}

static LLVMValueRef int_divrem(BeScalar *s, bool rem, bool sgn, LLVMValueRef x, LLVMValueRef d)
{
	LLVMBuilderRef b = s->b;
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef zero = ci(t, 0), one = ci(t, 1), m1 = LLVMConstAllOnes(t);
	LLVMValueRef isz = LLVMBuildICmp(b, LLVMIntEQ, d, zero, "");
	LLVMValueRef bad = isz, ism1 = NULL;
	if (sgn) {
		ism1 = LLVMBuildICmp(b, LLVMIntEQ, d, m1, "");
		bad = LLVMBuildOr(b, isz, ism1, "");
	}
	LLVMValueRef sd = LLVMBuildSelect(b, bad, one, d, "");
	LLVMValueRef r;
	if (rem)
		r = sgn ? LLVMBuildSRem(b, x, sd, "") : LLVMBuildURem(b, x, sd, "");
	else
		r = sgn ? LLVMBuildSDiv(b, x, sd, "") : LLVMBuildUDiv(b, x, sd, "");
	if (sgn) /* d == -1: -x (wrapping at INT_MIN), remainder 0 */
		r = LLVMBuildSelect(b, ism1, rem ? zero : LLVMBuildSub(b, zero, x, ""), r, "");
	return LLVMBuildSelect(b, isz, rem ? x : m1, r, "");
}

/* A float f (f32 or f64) as integer type to: saturating, NaN -> 0. */
static LLVMValueRef float_to_int(BeScalar *s, LLVMValueRef f, const IrType *to)
{
	if (to->kind == TY_I1)
		return LLVMBuildFCmp(s->b, LLVMRealUNE, f, LLVMConstReal(LLVMTypeOf(f), 0), "");
	LLVMTypeRef tys[2] = {s->type(s->user, to), LLVMTypeOf(f)};
	return be_intrinsic(s, ir_is_signed(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", tys, 2, &f, 1);
}

/* ---- narrow floats ---------------------------------------------------------- */

/* r, x rounded to nearest even into a narrower float type, adjusted to round
 * toward zero: where r lies farther from zero than x, the next value toward
 * zero (its bits minus one). NaN and exact results stay. */
static LLVMValueRef toward_zero(BeScalar *s, LLVMValueRef x, LLVMValueRef r)
{
	LLVMBuilderRef b = s->b;
	LLVMValueRef back = LLVMBuildFPExt(b, r, LLVMTypeOf(x), "");
	LLVMValueRef away = LLVMBuildFCmp(b, LLVMRealOGT, intr1(s, "llvm.fabs", back), intr1(s, "llvm.fabs", x), "");
	LLVMTypeKind k = LLVMGetTypeKind(LLVMTypeOf(r));
	LLVMTypeRef it = int_ty(s, k == LLVMDoubleTypeKind ? 64 : k == LLVMFloatTypeKind ? 32 : 16);
	LLVMValueRef bits = LLVMBuildBitCast(b, r, it, "");
	LLVMValueRef less = LLVMBuildBitCast(b, LLVMBuildSub(b, bits, ci(it, 1), ""), LLVMTypeOf(r), "");
	return LLVMBuildSelect(b, away, less, r, "");
}

/* f32 -> bf16 bits in integer code: to nearest even (or truncated), NaN
 * quieted. */
static LLVMValueRef bf16_bits(BeScalar *s, LLVMValueRef x, bool rtz)
{
	LLVMBuilderRef b = s->b;
	LLVMTypeRef i32 = int_ty(s, 32);
	LLVMValueRef u = LLVMBuildBitCast(b, x, i32, "");
	LLVMValueRef hi = LLVMBuildLShr(b, u, ci(i32, 16), "");
	LLVMValueRef r = hi;
	if (!rtz) {
		LLVMValueRef lsb = LLVMBuildAnd(b, hi, ci(i32, 1), "");
		LLVMValueRef bias = LLVMBuildAdd(b, lsb, ci(i32, 0x7fff), "");
		r = LLVMBuildLShr(b, LLVMBuildAdd(b, u, bias, ""), ci(i32, 16), "");
	}
	LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
	r = LLVMBuildSelect(b, nan, LLVMBuildOr(b, hi, ci(i32, 0x40), ""), r, "");
	return LLVMBuildTrunc(b, r, int_ty(s, 16), "");
}

/* An fp8 format: mantissa bits, exponent bias, the largest finite value (as
 * f32 bits) and its code, and its specials: IEEE (e5m2: inf and NaN at the
 * top exponent), S.1111.111 NaN and no inf (e4m3fn, e4b15), or "fnuz" (no
 * inf, no -0, NaN 0x80: e4b8, e5b16). */
typedef struct F8Fmt {
	int mb, bias;
	long long maxbits, maxcode;
	bool ieee, fnuz;
} F8Fmt;

static F8Fmt f8_fmt(IrTypeKind k)
{
	switch (k) {
	case TY_F8E5M2: return (F8Fmt){2, 15, 0x47600000, 0x7b, true, false};  /* 57344 */
	case TY_F8E4B15: return (F8Fmt){3, 15, 0x3fe00000, 0x7e, false, false}; /* 1.75 */
	case TY_F8E4B8: return (F8Fmt){3, 8, 0x43700000, 0x7f, false, true};    /* 240 */
	case TY_F8E5B16: return (F8Fmt){2, 16, 0x47600000, 0x7f, false, true};  /* 57344 */
	default: return (F8Fmt){3, 7, 0x43e00000, 0x7e, false, false};           /* e4m3fn: 448 */
	}
}

/* f32 -> fp8 bits: rounded to nearest even (or toward zero), finite overflow
 * and inf saturated to +-max (e5m2 under rtz keeps inf), NaN to the format's
 * NaN; a fnuz format's -0 is 0. */
static LLVMValueRef f32_to_f8(BeScalar *s, LLVMValueRef x, F8Fmt f, bool rtz)
{
	LLVMBuilderRef b = s->b;
	LLVMTypeRef i32 = int_ty(s, 32), f32 = f32_ty(s);
	int mb = f.mb, bias = f.bias, sh = 23 - mb;
	long long minnorm = (long long)(127 + 1 - bias) << 23;
	LLVMValueRef u = LLVMBuildBitCast(b, x, i32, "");
	LLVMValueRef sign = LLVMBuildAnd(b, LLVMBuildLShr(b, u, ci(i32, 24), ""), ci(i32, 0x80), "");
	LLVMValueRef a = LLVMBuildAnd(b, u, ci(i32, 0x7fffffff), "");
	/* normal: rebias, round the mantissa to mb bits (a carry moves the exponent) */
	LLVMValueRef r = LLVMBuildSub(b, a, ci(i32, (long long)(127 - bias) << 23), "");
	if (!rtz) {
		LLVMValueRef odd = LLVMBuildAnd(b, LLVMBuildLShr(b, r, ci(i32, sh), ""), ci(i32, 1), "");
		r = LLVMBuildAdd(b, r, LLVMBuildAdd(b, odd, ci(i32, (1 << (sh - 1)) - 1), ""), "");
	}
	LLVMValueRef norm = LLVMBuildLShr(b, r, ci(i32, sh), "");
	/* subnormal: the value in units of the smallest subnormal, rounded to an
	 * integer (2^mb is the smallest normal's code) */
	LLVMValueRef m = LLVMBuildFMul(b, LLVMBuildBitCast(b, a, f32, ""),
				       LLVMConstReal(f32, (double)(1 << (bias - 1 + mb))), "");
	m = intr1(s, rtz ? "llvm.trunc" : "llvm.roundeven", m);
	LLVMValueRef sub = LLVMBuildFPToUI(b, m, i32, "");
	LLVMValueRef code = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGE, a, ci(i32, minnorm), ""), norm, sub, "");
	LLVMValueRef sat = ci(i32, f.maxcode);
	if (rtz && f.ieee)
		sat = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, a, ci(i32, 0x7f800000), ""), ci(i32, 0x7c), sat,
				      "");
	code = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, a, ci(i32, f.maxbits), ""), sat, code, "");
	LLVMValueRef isnan = LLVMBuildICmp(b, LLVMIntUGT, a, ci(i32, 0x7f800000), "");
	if (f.fnuz) {
		/* no -0: the sign only on a nonzero code; NaN is 0x80 */
		LLVMValueRef zero = LLVMBuildICmp(b, LLVMIntEQ, code, ci(i32, 0), "");
		code = LLVMBuildOr(b, code, LLVMBuildSelect(b, zero, ci(i32, 0), sign, ""), "");
		code = LLVMBuildSelect(b, isnan, ci(i32, 0x80), code, "");
		return LLVMBuildTrunc(b, code, int_ty(s, 8), "");
	}
	code = LLVMBuildSelect(b, isnan, ci(i32, 0x7f), code, "");
	return LLVMBuildTrunc(b, LLVMBuildOr(b, code, sign, ""), int_ty(s, 8), "");
}

/* fp8 bits -> f32, exactly. */
static LLVMValueRef f8_to_f32(BeScalar *s, LLVMValueRef x, F8Fmt f)
{
	LLVMBuilderRef b = s->b;
	LLVMTypeRef i32 = int_ty(s, 32), f32 = f32_ty(s);
	int mb = f.mb, bias = f.bias;
	LLVMValueRef w = LLVMBuildZExt(b, x, i32, "");
	LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildAnd(b, w, ci(i32, 0x80), ""), ci(i32, 24), "");
	LLVMValueRef mag = LLVMBuildAnd(b, w, ci(i32, 0x7f), "");
	LLVMValueRef e = LLVMBuildLShr(b, mag, ci(i32, mb), "");
	LLVMValueRef man = LLVMBuildAnd(b, mag, ci(i32, (1 << mb) - 1), "");
	LLVMValueRef nbits =
		LLVMBuildAdd(b, LLVMBuildShl(b, mag, ci(i32, 23 - mb), ""), ci(i32, (long long)(127 - bias) << 23), "");
	LLVMValueRef sf = LLVMBuildFMul(b, LLVMBuildUIToFP(b, man, f32, ""),
					LLVMConstReal(f32, 1.0 / (double)(1 << (bias - 1 + mb))), "");
	LLVMValueRef bits = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, e, ci(i32, 0), ""),
					    LLVMBuildBitCast(b, sf, i32, ""), nbits, "");
	if (f.ieee) {
		LLVMValueRef special = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, man, ci(i32, 0), ""),
						       ci(i32, 0x7f800000), ci(i32, 0x7fc00000), "");
		bits = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, e, ci(i32, (1 << (7 - mb)) - 1), ""), special,
				       bits, "");
	} else if (f.fnuz) {
		bits = LLVMBuildOr(b, bits, sign, "");
		bits = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, w, ci(i32, 0x80), ""), ci(i32, 0x7fc00000), bits,
				       "");
		return LLVMBuildBitCast(b, bits, f32, "");
	} else {
		bits = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, mag, ci(i32, 0x7f), ""), ci(i32, 0x7fc00000),
				       bits, "");
	}
	return LLVMBuildBitCast(b, LLVMBuildOr(b, bits, sign, ""), f32, "");
}

LLVMValueRef be_to_f32(BeScalar *s, LLVMValueRef x, const IrType *t)
{
	LLVMBuilderRef b = s->b;
	switch (ir_scalar(t)->kind) {
	case TY_BF16:
		if (!s->bf16_bits)
			return LLVMBuildFPExt(b, x, f32_ty(s), "");
		return LLVMBuildBitCast(
			b, LLVMBuildShl(b, LLVMBuildZExt(b, x, int_ty(s, 32), ""), ci(int_ty(s, 32), 16), ""),
			f32_ty(s), "");
	case TY_F8E4M3:
	case TY_F8E5M2:
	case TY_F8E4B15:
	case TY_F8E4B8:
	case TY_F8E5B16: {
		LLVMValueRef r = s->f8_to_f32 ? s->f8_to_f32(s->user, x, ir_scalar(t)->kind) : NULL;
		return r ? r : f8_to_f32(s, x, f8_fmt(ir_scalar(t)->kind));
	}
	case TY_F16:
		return LLVMBuildFPExt(b, x, f32_ty(s), "");
	case TY_F64:
		return LLVMBuildFPTrunc(b, x, f32_ty(s), "");
	default:
		return x;
	}
}

LLVMValueRef be_from_f32(BeScalar *s, LLVMValueRef x, const IrType *t, bool rtz)
{
	LLVMBuilderRef b = s->b;
	t = ir_scalar(t);
	switch (t->kind) {
	case TY_BF16:
	case TY_F16: {
		if (t->kind == TY_BF16 && s->bf16_bits)
			return bf16_bits(s, x, rtz);
		/* LLVM half / bfloat, rounded by the target */
		LLVMValueRef r = LLVMBuildFPTrunc(b, x, s->type(s->user, t), "");
		return rtz ? toward_zero(s, x, r) : r;
	}
	case TY_F8E4M3:
	case TY_F8E5M2:
	case TY_F8E4B15:
	case TY_F8E4B8:
	case TY_F8E5B16: {
		LLVMValueRef r = s->f32_to_f8 ? s->f32_to_f8(s->user, x, t->kind, rtz) : NULL;
		return r ? r : f32_to_f8(s, x, f8_fmt(t->kind), rtz);
	}
	case TY_F64:
		return LLVMBuildFPExt(b, x, f64_ty(s), "");
	default:
		return x;
	}
}

static bool narrow(const IrType *t)
{
	return ir_is_float(t) && ir_type_bits(t) < 32;
}

/* ---- casts --------------------------------------------------------------------- */

LLVMValueRef be_scalar_cast(BeScalar *s, const IrOp *op, LLVMValueRef x, const IrType *from, const IrType *to, bool rtz)
{
	LLVMBuilderRef b = s->b;
	from = ir_scalar(from);
	to = ir_scalar(to);
	if (from == to)
		return x;
	LLVMTypeRef tt = s->type(s->user, to);
	if (ir_is_ptr(from) || ir_is_ptr(to)) {
		if (ir_is_ptr(from) && ir_is_ptr(to))
			return LLVMTypeOf(x) == tt ? x : LLVMBuildAddrSpaceCast(b, x, tt, "");
		if (ir_is_ptr(from))
			return LLVMBuildPtrToInt(b, x, tt, "");
		if (!ir_is_int(from))
			return fail(s, op, "cast of a float to a pointer", tt);
		LLVMValueRef w = x;
		if (ir_type_bits(from) < 64)
			w = ir_is_signed(from) ? LLVMBuildSExt(b, x, int_ty(s, 64), "")
					       : LLVMBuildZExt(b, x, int_ty(s, 64), "");
		return LLVMBuildIntToPtr(b, w, tt, "");
	}
	bool fi = ir_is_int(from), ti = ir_is_int(to);
	if (fi && ti) {
		if (to->kind == TY_I1)
			return LLVMBuildICmp(b, LLVMIntNE, x, ci(LLVMTypeOf(x), 0), "");
		int fb = ir_type_bits(from), tb = ir_type_bits(to);
		if (fb == tb)
			return x;
		if (fb > tb)
			return LLVMBuildTrunc(b, x, tt, "");
		return ir_is_signed(from) ? LLVMBuildSExt(b, x, tt, "") : LLVMBuildZExt(b, x, tt, "");
	}
	if (fi) { /* int -> float: rounded once (bf16, fp8: through f32) */
		bool via = to->kind == TY_BF16 || ir_is_fp8(to);
		LLVMTypeRef rt = via ? f32_ty(s) : tt;
		LLVMValueRef f = ir_is_signed(from) ? LLVMBuildSIToFP(b, x, rt, "") : LLVMBuildUIToFP(b, x, rt, "");
		return via ? be_from_f32(s, f, to, rtz) : f;
	}
	/* e5m2 is the top byte of an f16 (the same bias, inf and NaN): a shift,
	 * exact (a NaN keeps its payload), where f16 is a native type */
	if (from->kind == TY_F8E5M2 && (to->kind == TY_F16 || to->kind == TY_F32) && s->narrow_native) {
		LLVMTypeRef h = LLVMHalfTypeInContext(s->c);
		LLVMValueRef w = LLVMBuildShl(b, LLVMBuildZExt(b, x, int_ty(s, 16), ""), ci(int_ty(s, 16), 8), "");
		LLVMValueRef r = LLVMBuildBitCast(b, w, h, "");
		return to->kind == TY_F32 ? LLVMBuildFPExt(b, r, tt, "") : r;
	}
	/* float source: narrow ones are exact in f32 */
	LLVMValueRef f = narrow(from) ? be_to_f32(s, x, from) : x;
	if (ti)
		return float_to_int(s, f, to);
	if (to->kind == TY_F64)
		return LLVMBuildFPExt(b, f, tt, "");
	if (from->kind == TY_F64 && to->kind == TY_F32) {
		LLVMValueRef r = LLVMBuildFPTrunc(b, f, tt, "");
		return rtz ? toward_zero(s, f, r) : r;
	}
	if (from->kind == TY_F64 && to->kind == TY_F16) { /* rounded once */
		LLVMValueRef r = s->f64_to_f16 ? s->f64_to_f16(s->user, f) : LLVMBuildFPTrunc(b, f, tt, "");
		return rtz ? toward_zero(s, f, r) : r;
	}
	if (from->kind == TY_F64) /* bf16, fp8: through f32 */
		f = LLVMBuildFPTrunc(b, f, f32_ty(s), "");
	if (to->kind == TY_F32)
		return f;
	return be_from_f32(s, f, to, rtz);
}

/* ---- elementwise ops -------------------------------------------------------------- */

static LLVMValueRef cmp(BeScalar *s, const IrOp *op, const IrType *t, LLVMValueRef a, LLVMValueRef b)
{
	static const char *const names[6] = {"eq", "ne", "lt", "le", "gt", "ge"};
	const char *p = ir_op_str(op, "pred", "eq");
	int k = 0;
	while (k < 6 && strcmp(names[k], p) != 0)
		k++;
	if (k == 6)
		return fail(s, op, "cmp: unknown predicate", int_ty(s, 1));
	if (ir_is_float(t)) { /* ordered, but for ne */
		static const LLVMRealPredicate fp[6] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
							LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
		return LLVMBuildFCmp(s->b, fp[k], a, b, "");
	}
	static const LLVMIntPredicate sp[6] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
	static const LLVMIntPredicate up[6] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
	return LLVMBuildICmp(s->b, ir_is_signed(t) ? sp[k] : up[k], a, b, "");
}

static bool nan_all(const IrOp *op)
{
	const IrAttr *a = ir_op_attr(op, "propagate_nan");
	if (!a)
		return false;
	if (a->kind == ATTR_STR)
		return strcmp(a->s, "all") == 0;
	return a->i != 0;
}

/* x % y on floats as LLVM's frem becomes on the GPU: one rounded division,
 * trunc, one fma; x when y is infinite. */
static LLVMValueRef float_rem(BeScalar *s, LLVMValueRef x, LLVMValueRef y)
{
	LLVMBuilderRef b = s->b;
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef q = intr1(s, "llvm.trunc", LLVMBuildFDiv(b, x, y, ""));
	LLVMValueRef args[3] = {LLVMBuildFNeg(b, q, ""), y, x};
	LLVMValueRef r = intr(s, "llvm.fma", args, 3);
	LLVMValueRef inf =
		LLVMBuildFCmp(b, LLVMRealOEQ, intr1(s, "llvm.fabs", y), LLVMConstReal(t, __builtin_inf()), "");
	return LLVMBuildSelect(b, inf, x, r, "");
}

/* v, allowed to fuse with its neighbours into an fma where s contracts */
static LLVMValueRef contractable(BeScalar *s, LLVMValueRef v)
{
	if (s->contract && LLVMIsAInstruction(v) && LLVMCanValueUseFastMathFlags(v))
		LLVMSetFastMathFlags(v, LLVMFastMathAllowContract);
	return v;
}

static LLVMValueRef float_op(BeScalar *s, const IrOp *op, const IrType *t, LLVMValueRef *a)
{
	LLVMBuilderRef b = s->b;
	switch (op->opc) {
	case OP_ADD:
		return contractable(s, LLVMBuildFAdd(b, a[0], a[1], ""));
	case OP_SUB:
		return contractable(s, LLVMBuildFSub(b, a[0], a[1], ""));
	case OP_MUL:
		return contractable(s, LLVMBuildFMul(b, a[0], a[1], ""));
	case OP_DIV:
		if (s->fdiv && strcmp(ir_op_str(op, "rounding", ""), "rn") != 0)
			return s->fdiv(s->user, op, a[0], a[1]);
		return LLVMBuildFDiv(b, a[0], a[1], "");
	case OP_REM:
		return float_rem(s, a[0], a[1]);
	case OP_NEG:
		return LLVMBuildFNeg(b, a[0], "");
	case OP_ABS:
		return intr1(s, "llvm.fabs", a[0]);
	case OP_MIN:
	case OP_MAX: {
		bool min = op->opc == OP_MIN;
		if (nan_all(op))
			return intr(s, min ? "llvm.minimum" : "llvm.maximum", a, 2);
		if (!s->minnum_selects)
			return intr(s, min ? "llvm.minnum" : "llvm.maxnum", a, 2);
		LLVMValueRef lt = LLVMBuildFCmp(b, min ? LLVMRealOLT : LLVMRealOGT, a[0], a[1], "");
		LLVMValueRef pick = LLVMBuildSelect(b, lt, a[0], a[1], "");
		LLVMValueRef bnan = LLVMBuildFCmp(b, LLVMRealUNO, a[1], a[1], "");
		return LLVMBuildSelect(b, bnan, a[0], pick, "");
	}
	case OP_FMA:
		return intr(s, "llvm.fma", a, 3);
	case OP_EXP:
	case OP_EXP2:
	case OP_LOG:
	case OP_LOG2:
	case OP_SQRT:
	case OP_RSQRT:
	case OP_SIN:
	case OP_COS:
	case OP_ERF:
	case OP_FLOOR:
	case OP_CEIL:
		return s->math(s->user, op, a[0]);
	default:
		return fail(s, op, "the op does not apply to floats", LLVMTypeOf(a[0]));
	}
	(void)t;
}

/* Whether op on narrow type t may run in t itself (the same result as in f32). */
static bool native_narrow(const BeScalar *s, IrOpcode opc, const IrType *t)
{
	if (!s->narrow_native || !(t->kind == TY_F16 || (t->kind == TY_BF16 && !s->bf16_bits)))
		return false;
	switch (opc) {
	case OP_ADD:
	case OP_SUB:
	case OP_MUL:
	case OP_DIV:
	case OP_NEG:
	case OP_ABS:
	case OP_MIN:
	case OP_MAX:
	case OP_CMP:
		return true;
	default:
		return false;
	}
}

static LLVMValueRef int_op(BeScalar *s, const IrOp *op, const IrType *t, LLVMValueRef *xs)
{
	LLVMBuilderRef b = s->b;
	bool sgn = ir_is_signed(t);
	LLVMTypeRef lt = LLVMTypeOf(xs[0]);
	switch (op->opc) {
	case OP_ADD:
		return LLVMBuildAdd(b, xs[0], xs[1], "");
	case OP_SUB:
		return LLVMBuildSub(b, xs[0], xs[1], "");
	case OP_MUL:
		return LLVMBuildMul(b, xs[0], xs[1], "");
	case OP_DIV:
		return int_divrem(s, false, sgn, xs[0], xs[1]);
	case OP_REM:
		return int_divrem(s, true, sgn, xs[0], xs[1]);
	case OP_NEG:
		return LLVMBuildSub(b, ci(lt, 0), xs[0], "");
	case OP_AND:
		return LLVMBuildAnd(b, xs[0], xs[1], "");
	case OP_OR:
		return LLVMBuildOr(b, xs[0], xs[1], "");
	case OP_XOR:
		return LLVMBuildXor(b, xs[0], xs[1], "");
	case OP_NOT:
		return LLVMBuildNot(b, xs[0], "");
	case OP_SHL:
	case OP_SHR:
		return shift(s, op->opc, sgn, xs[0], xs[1]);
	case OP_MIN:
		return intr(s, sgn ? "llvm.smin" : "llvm.umin", xs, 2);
	case OP_MAX:
		return intr(s, sgn ? "llvm.smax" : "llvm.umax", xs, 2);
	case OP_UMULHI: {
		unsigned w = LLVMGetIntTypeWidth(lt);
		LLVMTypeRef wt = int_ty(s, 2 * w);
		LLVMValueRef p = LLVMBuildMul(b, LLVMBuildZExt(b, xs[0], wt, ""), LLVMBuildZExt(b, xs[1], wt, ""), "");
		return LLVMBuildTrunc(b, LLVMBuildLShr(b, p, ci(wt, w), ""), lt, "");
	}
	case OP_ABS: {
		if (!sgn)
			return xs[0];
		LLVMValueRef args[2] = {xs[0], ci(int_ty(s, 1), 0)};
		return intr(s, "llvm.abs", args, 2);
	}
	case OP_FMA:
		return LLVMBuildAdd(b, LLVMBuildMul(b, xs[0], xs[1], ""), xs[2], "");
	default:
		return fail(s, op,
			    ir_is_ptr(t) ? "the op does not apply to pointers" : "the op does not apply to integers",
			    lt);
	}
}

LLVMValueRef be_scalar_op(BeScalar *s, const IrOp *op, LLVMValueRef *xs)
{
	LLVMBuilderRef b = s->b;
	const IrType *rt = ir_scalar(op->res[0].type);
	const IrType *ot = op->nops ? ir_scalar(op->ops[0]->type) : rt;
	switch (op->opc) {
	case OP_SELECT:
		return LLVMBuildSelect(b, xs[0], xs[1], xs[2], "");
	case OP_CAST:
		return be_scalar_cast(s, op, xs[0], ot, rt, strcmp(ir_op_str(op, "rounding", "rtne"), "rtz") == 0);
	case OP_BITCAST: {
		LLVMTypeRef tt = s->type(s->user, rt);
		if (LLVMTypeOf(xs[0]) == tt)
			return xs[0];
		if (ir_is_ptr(ot) || ir_is_ptr(rt))
			return be_scalar_cast(s, op, xs[0], ot, rt, false);
		return LLVMBuildBitCast(b, xs[0], tt, "");
	}
	case OP_INT_TO_PTR:
	case OP_PTR_TO_INT:
		return be_scalar_cast(s, op, xs[0], ot, rt, false);
	case OP_EXTERN:
		return s->ext(s->user, op, xs);
	default:
		break;
	}
	if (ir_is_float(ot)) {
		/* a target division other than IEEE's (fdiv) runs in f32, as Triton's
		 * `/` on f16 and bf16 */
		bool target_div = op->opc == OP_DIV && s->fdiv && strcmp(ir_op_str(op, "rounding", ""), "rn") != 0;
		if (!narrow(ot) || (native_narrow(s, op->opc, ot) && !target_div))
			return op->opc == OP_CMP ? cmp(s, op, ot, xs[0], xs[1]) : float_op(s, op, ot, xs);
		LLVMValueRef a[3];
		for (int i = 0; i < op->nops && i < 3; i++)
			a[i] = be_to_f32(s, xs[i], ot);
		if (op->opc == OP_CMP)
			return cmp(s, op, ot, a[0], a[1]);
		return be_from_f32(s, float_op(s, op, ot, a), rt, false);
	}
	if (op->opc == OP_CMP)
		return cmp(s, op, ot, xs[0], xs[1]);
	switch (op->opc) {
	case OP_EXP:
	case OP_EXP2:
	case OP_LOG:
	case OP_LOG2:
	case OP_SQRT:
	case OP_RSQRT:
	case OP_SIN:
	case OP_COS:
	case OP_ERF:
	case OP_FLOOR:
	case OP_CEIL:
		return fail(s, op, "math of a non-float", s->type(s->user, rt));
	default:
		return int_op(s, op, ot, xs);
	}
}
