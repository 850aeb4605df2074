/* elem.c: elementwise ops on the CPU. cg_scalar_op gives the semantics of
 * one element (the rules of ops.def: signedness from the type, C division,
 * guarded shifts and divisions, ordered compares except `ne`, NaN-propagating
 * min/max on request, saturating float->int casts); cg_lower_elem applies it
 * to scalars, to splats (once) or to buffers (one flat loop, which O3
 * vectorizes).
 *
 * Floats narrower than f32 (f16, bf16, fp8) are computed in f32 and rounded
 * back after each op, as the GPU does. bf16 conversions are done in integer
 * code (round to nearest even); fp8 -> f32 reads a 256-entry table and
 * f32 -> fp8 calls a small helper (ct_cpu_f32_to_f8).
 */
#include <string.h>

#include "backend/cpu/cpu.h"

static bool narrow_float(const IrType *t)
{
	t = ir_scalar(t);
	return ir_is_float(t) && ir_type_bits(t) < 32;
}

static LLVMValueRef fp8_table(Cg *cg, bool e5)
{
	if (cg->f8tab[e5])
		return cg->f8tab[e5];
	LLVMValueRef vals[256];
	for (int i = 0; i < 256; i++)
		vals[i] = LLVMConstReal(cg->t_f32, (double)ct_cpu_f8_to_f32((uint8_t)i, e5));
	LLVMTypeRef at = LLVMArrayType2(cg->t_f32, 256);
	LLVMValueRef g = LLVMAddGlobal(cg->mod, at, e5 ? "ct.f8e5m2" : "ct.f8e4m3");
	LLVMSetInitializer(g, LLVMConstArray2(cg->t_f32, vals, 256));
	LLVMSetGlobalConstant(g, 1);
	LLVMSetLinkage(g, LLVMInternalLinkage);
	cg->f8tab[e5] = g;
	return g;
}

static LLVMValueRef f32c(Cg *cg, double v) { return LLVMConstReal(cg->t_f32, v); }

/* e^x (or 2^x) in f32 as straight-line code, so that loops of it vectorize
 * (a call of expf does not): n = round(x log2 e), r = x - n ln 2 (in two
 * parts), e^r by its Taylor polynomial to degree 7 on |r| <= ln2/2 (error
 * below 2^-27), times 2^n built from exponent bits in two halves (so that
 * results down to the subnormals are right). Within 2 ulp of expf; inf, 0
 * and NaN where expf gives them. */
static LLVMValueRef exp_f32(Cg *cg, LLVMValueRef x, bool base2)
{
	LLVMBuilderRef b = cg->b;
	LLVMTypeRef f = cg->t_f32;
	LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
	LLVMValueRef lo = f32c(cg, base2 ? -150.0 : -104.0), hi = f32c(cg, base2 ? 128.5 : 88.8);
	LLVMValueRef y = LLVMBuildSelect(b, nan, f32c(cg, 0), x, "");
	y = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, y, lo, ""), lo, y, "");
	y = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, y, hi, ""), hi, y, "");
	LLVMValueRef t = base2 ? y : LLVMBuildFMul(b, y, f32c(cg, 1.4426950408889634), "");
	LLVMValueRef n = cg_intrinsic(cg, "llvm.rint", &f, 1, &t, 1);
	LLVMValueRef r;
	if (base2) {
		r = LLVMBuildFMul(b, LLVMBuildFSub(b, y, n, ""), f32c(cg, 0.6931471805599453), "");
	} else {
		LLVMValueRef a1[3] = {n, f32c(cg, -0.693359375), y};
		r = cg_intrinsic(cg, "llvm.fma", &f, 1, a1, 3);
		LLVMValueRef a2[3] = {n, f32c(cg, 2.12194440e-4), r};
		r = cg_intrinsic(cg, "llvm.fma", &f, 1, a2, 3);
	}
	static const double coef[] = {1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0};
	LLVMValueRef p = f32c(cg, coef[0]);
	for (int k = 1; k < 8; k++) {
		LLVMValueRef args[3] = {p, r, f32c(cg, coef[k])};
		p = cg_intrinsic(cg, "llvm.fma", &f, 1, args, 3);
	}
	LLVMValueRef ni = LLVMBuildFPToSI(b, n, cg->t_i32, "");
	LLVMValueRef n1 = LLVMBuildAShr(b, ni, cg_i32(cg, 1), "");
	LLVMValueRef n2 = LLVMBuildSub(b, ni, n1, "");
	LLVMValueRef s1 = LLVMBuildShl(b, LLVMBuildAdd(b, n1, cg_i32(cg, 127), ""), cg_i32(cg, 23), "");
	LLVMValueRef s2 = LLVMBuildShl(b, LLVMBuildAdd(b, n2, cg_i32(cg, 127), ""), cg_i32(cg, 23), "");
	p = LLVMBuildFMul(b, p, LLVMBuildBitCast(b, s1, f, ""), "");
	p = LLVMBuildFMul(b, p, LLVMBuildBitCast(b, s2, f, ""), "");
	return LLVMBuildSelect(b, nan, x, p, "");
}

LLVMValueRef cg_to_f32(Cg *cg, LLVMValueRef x, const IrType *t)
{
	switch (ir_scalar(t)->kind) {
	case TY_BF16: {
		LLVMValueRef w = LLVMBuildZExt(cg->b, x, cg->t_i32, "");
		w = LLVMBuildShl(cg->b, w, cg_i32(cg, 16), "");
		return LLVMBuildBitCast(cg->b, w, cg->t_f32, "");
	}
	case TY_F8E4M3:
	case TY_F8E5M2: {
		LLVMValueRef tab = fp8_table(cg, ir_scalar(t)->kind == TY_F8E5M2);
		LLVMValueRef idx = LLVMBuildZExt(cg->b, x, cg->t_i64, "");
		LLVMValueRef p = LLVMBuildInBoundsGEP2(cg->b, cg->t_f32, tab, &idx, 1, "");
		return LLVMBuildLoad2(cg->b, cg->t_f32, p, "");
	}
	case TY_F16: return LLVMBuildFPExt(cg->b, x, cg->t_f32, "");
	case TY_F64: return LLVMBuildFPTrunc(cg->b, x, cg->t_f32, "");
	default: return x;
	}
}

LLVMValueRef cg_from_f32(Cg *cg, LLVMValueRef x, const IrType *t, bool rtz)
{
	switch (ir_scalar(t)->kind) {
	case TY_BF16: {
		LLVMValueRef u = LLVMBuildBitCast(cg->b, x, cg->t_i32, "");
		LLVMValueRef hi = LLVMBuildLShr(cg->b, u, cg_i32(cg, 16), "");
		LLVMValueRef r = hi;
		if (!rtz) {
			LLVMValueRef lsb = LLVMBuildAnd(cg->b, hi, cg_i32(cg, 1), "");
			LLVMValueRef bias = LLVMBuildAdd(cg->b, lsb, cg_i32(cg, 0x7fff), "");
			r = LLVMBuildLShr(cg->b, LLVMBuildAdd(cg->b, u, bias, ""), cg_i32(cg, 16), "");
		}
		LLVMValueRef nan = LLVMBuildFCmp(cg->b, LLVMRealUNO, x, x, "");
		LLVMValueRef qnan = LLVMBuildOr(cg->b, hi, cg_i32(cg, 0x40), "");
		r = LLVMBuildSelect(cg->b, nan, qnan, r, "");
		return LLVMBuildTrunc(cg->b, r, cg->t_i16, "");
	}
	case TY_F8E4M3:
	case TY_F8E5M2: {
		int fmt = (ir_scalar(t)->kind == TY_F8E5M2 ? 1 : 0) | (rtz ? 2 : 0);
		LLVMTypeRef pt[2] = {cg->t_f32, cg->t_i32};
		LLVMValueRef args[2] = {x, cg_i32(cg, fmt)};
		return cg_call_ext(cg, "ct_cpu_f32_to_f8", cg->t_i8, pt, 2, args, 2, false);
	}
	case TY_F16: return LLVMBuildFPTrunc(cg->b, x, cg->t_f16, "");
	case TY_F64: return LLVMBuildFPExt(cg->b, x, cg->t_f64, "");
	default: return x;
	}
}

LLVMValueRef cg_convert(Cg *cg, const IrOp *op, LLVMValueRef x, const IrType *from,
			const IrType *to, bool rtz)
{
	from = ir_scalar(from);
	to = ir_scalar(to);
	if (from == to)
		return x;
	if (from->kind == TY_PTR || to->kind == TY_PTR) {
		if (from->kind == TY_PTR && to->kind == TY_PTR)
			return x;
		if (from->kind == TY_PTR)
			return LLVMBuildPtrToInt(cg->b, x, cg_sty(cg, to), "");
		LLVMValueRef w = ir_is_signed(from) ? LLVMBuildSExt(cg->b, x, cg->t_i64, "")
						    : LLVMBuildZExt(cg->b, x, cg->t_i64, "");
		if (ir_type_bits(from) == 64)
			w = x;
		return LLVMBuildIntToPtr(cg->b, w, cg->t_ptr, "");
	}
	bool fi = ir_is_int(from), ti = ir_is_int(to);
	if (fi && ti) {
		if (to->kind == TY_I1)
			return LLVMBuildICmp(cg->b, LLVMIntNE, x, LLVMConstInt(LLVMTypeOf(x), 0, 0), "");
		int fb = ir_type_bits(from), tb = ir_type_bits(to);
		if (fb == tb)
			return x;
		if (fb > tb)
			return LLVMBuildTrunc(cg->b, x, cg_sty(cg, to), "");
		return ir_is_signed(from) ? LLVMBuildSExt(cg->b, x, cg_sty(cg, to), "")
					  : LLVMBuildZExt(cg->b, x, cg_sty(cg, to), "");
	}
	if (fi) { /* int -> float */
		LLVMTypeRef rt = cg_soft_float(to) ? cg->t_f32 : cg_sty(cg, to);
		LLVMValueRef f = ir_is_signed(from) ? LLVMBuildSIToFP(cg->b, x, rt, "")
						    : LLVMBuildUIToFP(cg->b, x, rt, "");
		return cg_soft_float(to) ? cg_from_f32(cg, f, to, rtz) : f;
	}
	/* float source in a native type */
	LLVMValueRef f = x;
	if (cg_soft_float(from) || from->kind == TY_F16)
		f = cg_to_f32(cg, x, from);
	if (ti) {
		if (to->kind == TY_I1)
			return LLVMBuildFCmp(cg->b, LLVMRealUNE, f, LLVMConstReal(LLVMTypeOf(f), 0), "");
		LLVMTypeRef tys[2] = {cg_sty(cg, to), LLVMTypeOf(f)};
		return cg_intrinsic(cg, ir_is_signed(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", tys,
				    2, &f, 1);
	}
	if (cg_soft_float(to)) {
		if (LLVMTypeOf(f) == cg->t_f64)
			f = LLVMBuildFPTrunc(cg->b, f, cg->t_f32, "");
		return cg_from_f32(cg, f, to, rtz);
	}
	LLVMTypeRef rt = cg_sty(cg, to);
	if (LLVMTypeOf(f) == rt)
		return f;
	if (LLVMTypeOf(f) == cg->t_f64 && to->kind == TY_F16) {
		LLVMTypeRef pt = cg->t_f64;
		LLVMValueRef h = cg_call_ext(cg, "ct_cpu_f64_to_f16", cg->t_i16, &pt, 1, &f, 1, false);
		return LLVMBuildBitCast(cg->b, h, cg->t_f16, "");
	}
	if (ir_type_bits(to) > (LLVMTypeOf(f) == cg->t_f64 ? 64 : LLVMTypeOf(f) == cg->t_f32 ? 32 : 16))
		return LLVMBuildFPExt(cg->b, f, rt, "");
	return LLVMBuildFPTrunc(cg->b, f, rt, "");
}

/* Integer division and remainder that never trap: x/0 gives -1 (all ones)
 * and x%0 gives x, as PTX does; INT_MIN/-1 wraps. */
static LLVMValueRef int_divrem(Cg *cg, bool rem, bool sgn, LLVMValueRef x, LLVMValueRef d)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	LLVMValueRef zero = LLVMConstInt(t, 0, 0), one = LLVMConstInt(t, 1, 0);
	LLVMValueRef m1 = LLVMConstAllOnes(t);
	LLVMValueRef isz = LLVMBuildICmp(cg->b, LLVMIntEQ, d, zero, "");
	LLVMValueRef bad = isz;
	LLVMValueRef ism1 = NULL;
	if (sgn) {
		ism1 = LLVMBuildICmp(cg->b, LLVMIntEQ, d, m1, "");
		bad = LLVMBuildOr(cg->b, isz, ism1, "");
	}
	LLVMValueRef sd = LLVMBuildSelect(cg->b, bad, one, d, "");
	LLVMValueRef r;
	if (rem)
		r = sgn ? LLVMBuildSRem(cg->b, x, sd, "") : LLVMBuildURem(cg->b, x, sd, "");
	else
		r = sgn ? LLVMBuildSDiv(cg->b, x, sd, "") : LLVMBuildUDiv(cg->b, x, sd, "");
	if (sgn)
		r = LLVMBuildSelect(cg->b, ism1, rem ? zero : LLVMBuildSub(cg->b, zero, x, ""), r, "");
	return LLVMBuildSelect(cg->b, isz, rem ? x : m1, r, "");
}

static LLVMValueRef shift(Cg *cg, IrOpcode opc, bool sgn, LLVMValueRef x, LLVMValueRef n)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	unsigned bits = LLVMGetIntTypeWidth(t);
	LLVMValueRef w = LLVMConstInt(t, bits, 0);
	LLVMValueRef ok = LLVMBuildICmp(cg->b, LLVMIntULT, n, w, "");
	LLVMValueRef sn = LLVMBuildSelect(cg->b, ok, n, LLVMConstInt(t, bits - 1, 0), "");
	if (opc == OP_SHL)
		return LLVMBuildSelect(cg->b, ok, LLVMBuildShl(cg->b, x, sn, ""), LLVMConstInt(t, 0, 0), "");
	if (sgn)
		return LLVMBuildAShr(cg->b, x, sn, "");
	return LLVMBuildSelect(cg->b, ok, LLVMBuildLShr(cg->b, x, sn, ""), LLVMConstInt(t, 0, 0), "");
}

static LLVMValueRef cmp(Cg *cg, const IrOp *op, const IrType *t, LLVMValueRef a, LLVMValueRef b)
{
	const char *p = ir_op_str(op, "pred", "eq");
	static const char *names[6] = {"eq", "ne", "lt", "le", "gt", "ge"};
	int k = 0;
	while (k < 6 && strcmp(names[k], p) != 0)
		k++;
	if (k == 6) {
		cg_fail(cg, op, "cmp: unknown predicate '%s'", p);
		return LLVMConstInt(cg->t_i1, 0, 0);
	}
	if (ir_is_float(t)) {
		static const LLVMRealPredicate fp[6] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
							LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
		return LLVMBuildFCmp(cg->b, fp[k], a, b, "");
	}
	static const LLVMIntPredicate sp[6] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT,
					       LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
	static const LLVMIntPredicate up[6] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT,
					       LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
	return LLVMBuildICmp(cg->b, ir_is_signed(t) ? sp[k] : up[k], a, b, "");
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

/* libm functions reachable through `extern`: one or two float arguments. */
static const char *const libm_names[] = {
	"asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
	"pow", "log1p", "expm1", "exp", "exp2", "exp10", "log", "log2", "log10", "sin", "cos",
	"tan", "sqrt", "cbrt", "erf", "erfc", "tgamma", "lgamma", "hypot", "fmod", "floor",
	"ceil", "trunc", "round", "rint", "nearbyint", "fabs", "fmin", "fmax", "copysign",
	"nextafter", "fdim", "remainder", "j0", "j1", "y0", "y1", "logb", NULL,
};

/* Float functions lowered here rather than called in libm. */
static const char *const inline_names[] = {
	"rsqrt", "isnan", "isinf", "isfinite", "signbit", "saturate", "erfinv", NULL,
};

static bool in_list(const char *const *names, const char *s)
{
	for (int i = 0; names[i]; i++)
		if (strcmp(names[i], s) == 0)
			return true;
	return false;
}

static LLVMValueRef lower_extern(Cg *cg, const IrOp *op, LLVMValueRef *xs)
{
	const char *sym = ir_op_str(op, "symbol", "");
	const IrType *rt = ir_scalar(op->res[0].type);
	const IrType *at = op->nops ? ir_scalar(op->ops[0]->type) : rt;
	char base[64];
	const char *s = strncmp(sym, "__nv_", 5) == 0 ? sym + 5 : sym;
	size_t n = strlen(s);
	if (n + 1 >= sizeof base)
		goto unknown;
	memcpy(base, s, n + 1);
	bool fsuffix = false;
	/* __nv_asinf -> asin (f32); __nv_asin -> asin (f64) */
	if (n > 1 && base[n - 1] == 'f') {
		base[n - 1] = 0;
		fsuffix = true;
		if (!in_list(libm_names, base) && !in_list(inline_names, base)) {
			base[n - 1] = 'f';
			fsuffix = false;
		}
	}
	(void)fsuffix;
	/* integer bit tricks */
	if (ir_is_int(at) && op->nops == 1) {
		LLVMTypeRef t = LLVMTypeOf(xs[0]);
		if (strcmp(base, "popc") == 0 || strcmp(base, "popcll") == 0) {
			LLVMValueRef r = cg_intrinsic(cg, "llvm.ctpop", &t, 1, xs, 1);
			return cg_convert(cg, op, r, at, rt, false);
		}
		if (strcmp(base, "clz") == 0 || strcmp(base, "clzll") == 0) {
			LLVMValueRef args[2] = {xs[0], LLVMConstInt(cg->t_i1, 0, 0)};
			LLVMValueRef r = cg_intrinsic(cg, "llvm.ctlz", &t, 1, args, 2);
			return cg_convert(cg, op, r, at, rt, false);
		}
		if (strcmp(base, "brev") == 0 || strcmp(base, "brevll") == 0)
			return cg_intrinsic(cg, "llvm.bitreverse", &t, 1, xs, 1);
		if (strcmp(base, "abs") == 0 || strcmp(base, "llabs") == 0) {
			LLVMValueRef args[2] = {xs[0], LLVMConstInt(cg->t_i1, 0, 0)};
			return cg_intrinsic(cg, "llvm.abs", &t, 1, args, 2);
		}
	}
	if (ir_is_int(at) && op->nops == 2 &&
	    (strcmp(base, "umulhi") == 0 || strcmp(base, "mulhi") == 0 ||
	     strcmp(base, "umul64hi") == 0 || strcmp(base, "mul64hi") == 0)) {
		bool sg = base[0] == 'm';
		LLVMTypeRef t = LLVMTypeOf(xs[0]);
		unsigned w = LLVMGetIntTypeWidth(t);
		LLVMTypeRef wt = LLVMIntTypeInContext(cg->ctx, 2 * w);
		LLVMValueRef a = sg ? LLVMBuildSExt(cg->b, xs[0], wt, "") : LLVMBuildZExt(cg->b, xs[0], wt, "");
		LLVMValueRef b = sg ? LLVMBuildSExt(cg->b, xs[1], wt, "") : LLVMBuildZExt(cg->b, xs[1], wt, "");
		LLVMValueRef p = LLVMBuildMul(cg->b, a, b, "");
		p = LLVMBuildLShr(cg->b, p, LLVMConstInt(wt, w, 0), "");
		return LLVMBuildTrunc(cg->b, p, t, "");
	}
	if (!ir_is_float(at))
		goto unknown;
	/* float: compute in f32 (f16/bf16/fp8/f32) or f64 */
	bool dbl = at->kind == TY_F64;
	LLVMTypeRef ft = dbl ? cg->t_f64 : cg->t_f32;
	LLVMValueRef a[4];
	if (op->nops > 4)
		goto unknown;
	for (int i = 0; i < op->nops; i++) {
		const IrType *ti = ir_scalar(op->ops[i]->type);
		a[i] = ir_is_float(ti) && !dbl ? cg_to_f32(cg, xs[i], ti) : xs[i];
	}
	LLVMValueRef r = NULL;
	if (op->nops == 1 && strcmp(base, "rsqrt") == 0) {
		LLVMValueRef sq = cg_intrinsic(cg, "llvm.sqrt", &ft, 1, a, 1);
		r = LLVMBuildFDiv(cg->b, LLVMConstReal(ft, 1.0), sq, "");
	} else if (op->nops == 1 && (strcmp(base, "isnan") == 0 || strcmp(base, "isinf") == 0 ||
				     strcmp(base, "signbit") == 0 || strcmp(base, "isfinite") == 0)) {
		LLVMValueRef c;
		if (base[2] == 'n')
			c = LLVMBuildFCmp(cg->b, LLVMRealUNO, a[0], a[0], "");
		else if (base[2] == 'i') {
			LLVMValueRef ab = cg_intrinsic(cg, "llvm.fabs", &ft, 1, a, 1);
			c = LLVMBuildFCmp(cg->b, LLVMRealOEQ, ab, LLVMConstReal(ft, __builtin_inf()), "");
		} else if (base[2] == 'f') {
			LLVMValueRef ab = cg_intrinsic(cg, "llvm.fabs", &ft, 1, a, 1);
			c = LLVMBuildFCmp(cg->b, LLVMRealOLT, ab, LLVMConstReal(ft, __builtin_inf()), "");
		} else {
			LLVMTypeRef it = dbl ? cg->t_i64 : cg->t_i32;
			LLVMValueRef bits = LLVMBuildBitCast(cg->b, a[0], it, "");
			c = LLVMBuildICmp(cg->b, LLVMIntSLT, bits, LLVMConstInt(it, 0, 0), "");
		}
		return cg_convert(cg, op, c, ir_type(cg->ictx, TY_I1), rt, false);
	} else if (op->nops == 1 && strcmp(base, "saturate") == 0) {
		LLVMValueRef z = LLVMConstReal(ft, 0), o = LLVMConstReal(ft, 1);
		LLVMValueRef args[2] = {a[0], z};
		r = cg_intrinsic(cg, "llvm.maxnum", &ft, 1, args, 2);
		args[0] = r;
		args[1] = o;
		r = cg_intrinsic(cg, "llvm.minnum", &ft, 1, args, 2);
	} else if (op->nops == 1 && strcmp(base, "erfinv") == 0) {
		LLVMValueRef d = dbl ? a[0] : LLVMBuildFPExt(cg->b, a[0], cg->t_f64, "");
		LLVMTypeRef pt = cg->t_f64;
		r = cg_call_ext(cg, "ct_cpu_erfinv", cg->t_f64, &pt, 1, &d, 1, false);
		if (!dbl)
			r = LLVMBuildFPTrunc(cg->b, r, cg->t_f32, "");
	} else {
		bool found = false;
		for (int i = 0; libm_names[i]; i++)
			found |= strcmp(libm_names[i], base) == 0;
		if (!found || op->nops < 1 || op->nops > 2)
			goto unknown;
		for (int i = 0; i < op->nops; i++)
			if (!ir_is_float(ir_scalar(op->ops[i]->type)))
				goto unknown;
		char *name = ir_fmt(cg->ictx, "%s%s", base, dbl ? "" : "f");
		LLVMTypeRef pt[2] = {ft, ft};
		r = cg_call_ext(cg, name, ft, pt, op->nops, a, op->nops, false);
	}
	if (ir_is_float(rt))
		return dbl ? r : cg_convert(cg, op, r, ir_type(cg->ictx, TY_F32), rt, false);
	return cg_convert(cg, op, r, ir_type(cg->ictx, dbl ? TY_F64 : TY_F32), rt, false);
unknown:
	cg_fail(cg, op, "extern function '%s' is not available on the CPU backend", sym);
	return LLVMGetUndef(cg_sty(cg, rt));
}

LLVMValueRef cg_scalar_op(Cg *cg, const IrOp *op, LLVMValueRef *xs)
{
	const IrType *rt = ir_scalar(op->res[0].type);
	const IrType *ot = op->nops ? ir_scalar(op->ops[0]->type) : rt;
	IrOpcode opc = op->opc;
	switch (opc) {
	case OP_SELECT: return LLVMBuildSelect(cg->b, xs[0], xs[1], xs[2], "");
	case OP_CAST: {
		const char *rnd = ir_op_str(op, "rounding", "rtne");
		return cg_convert(cg, op, xs[0], ot, rt, strcmp(rnd, "rtz") == 0);
	}
	case OP_BITCAST:
		if (LLVMTypeOf(xs[0]) == cg_sty(cg, rt))
			return xs[0];
		if (ot->kind == TY_PTR || rt->kind == TY_PTR)
			return cg_convert(cg, op, xs[0], ot, rt, false);
		return LLVMBuildBitCast(cg->b, xs[0], cg_sty(cg, rt), "");
	case OP_INT_TO_PTR:
	case OP_PTR_TO_INT: return cg_convert(cg, op, xs[0], ot, rt, false);
	case OP_ADDPTR: {
		const IrType *pt = ot->elem;
		LLVMTypeRef et = pt && pt->kind != TY_BLOCK ? cg_sty(cg, pt) : cg->t_i8;
		const IrType *it = ir_scalar(op->ops[1]->type);
		LLVMValueRef off = xs[1];
		if (ir_type_bits(it) < 64)
			off = ir_is_signed(it) ? LLVMBuildSExt(cg->b, off, cg->t_i64, "")
					       : LLVMBuildZExt(cg->b, off, cg->t_i64, "");
		return LLVMBuildGEP2(cg->b, et, xs[0], &off, 1, "");
	}
	case OP_EXTERN: return lower_extern(cg, op, xs);
	default: break;
	}

	if (ir_is_float(ot)) {
		/* narrow floats: compute in f32 */
		bool narrow = narrow_float(ot);
		LLVMValueRef a[3];
		for (int i = 0; i < op->nops && i < 3; i++)
			a[i] = narrow ? cg_to_f32(cg, xs[i], ot) : xs[i];
		LLVMTypeRef ft = narrow ? cg->t_f32 : cg_sty(cg, ot);
		LLVMValueRef r;
		switch (opc) {
		case OP_ADD: r = LLVMBuildFAdd(cg->b, a[0], a[1], ""); break;
		case OP_SUB: r = LLVMBuildFSub(cg->b, a[0], a[1], ""); break;
		case OP_MUL: r = LLVMBuildFMul(cg->b, a[0], a[1], ""); break;
		case OP_DIV: r = LLVMBuildFDiv(cg->b, a[0], a[1], ""); break;
		case OP_REM: r = LLVMBuildFRem(cg->b, a[0], a[1], ""); break;
		case OP_NEG: r = LLVMBuildFNeg(cg->b, a[0], ""); break;
		case OP_MIN:
		case OP_MAX: {
			if (nan_all(op)) {
				r = cg_intrinsic(cg, opc == OP_MIN ? "llvm.minimum" : "llvm.maximum", &ft, 1, a, 2);
				break;
			}
			/* minnum/maxnum semantics (a NaN operand yields the other one)
			 * as compares and selects, not llvm.minnum/maxnum: LLVM 22's
			 * loop vectorizer drops the scalar remainder of minnum/maxnum
			 * reductions vectorized with NaN checks (llvm-project#209159) */
			LLVMRealPredicate pr = opc == OP_MIN ? LLVMRealOLT : LLVMRealOGT;
			LLVMValueRef pick = LLVMBuildSelect(cg->b, LLVMBuildFCmp(cg->b, pr, a[0], a[1], ""),
							    a[0], a[1], "");
			LLVMValueRef bnan = LLVMBuildFCmp(cg->b, LLVMRealUNO, a[1], a[1], "");
			r = LLVMBuildSelect(cg->b, bnan, a[0], pick, "");
			break;
		}
		case OP_CMP: return cmp(cg, op, ot, a[0], a[1]);
		case OP_FMA: r = cg_intrinsic(cg, "llvm.fma", &ft, 1, a, 3); break;
		case OP_EXP:
		case OP_EXP2:
			if (ft == cg->t_f32)
				r = exp_f32(cg, a[0], opc == OP_EXP2);
			else
				r = cg_intrinsic(cg, opc == OP_EXP ? "llvm.exp" : "llvm.exp2", &ft, 1, a, 1);
			break;
		case OP_LOG: r = cg_intrinsic(cg, "llvm.log", &ft, 1, a, 1); break;
		case OP_LOG2: r = cg_intrinsic(cg, "llvm.log2", &ft, 1, a, 1); break;
		case OP_SQRT: r = cg_intrinsic(cg, "llvm.sqrt", &ft, 1, a, 1); break;
		case OP_RSQRT:
			r = cg_intrinsic(cg, "llvm.sqrt", &ft, 1, a, 1);
			r = LLVMBuildFDiv(cg->b, LLVMConstReal(ft, 1.0), r, "");
			break;
		case OP_SIN: r = cg_intrinsic(cg, "llvm.sin", &ft, 1, a, 1); break;
		case OP_COS: r = cg_intrinsic(cg, "llvm.cos", &ft, 1, a, 1); break;
		case OP_FLOOR: r = cg_intrinsic(cg, "llvm.floor", &ft, 1, a, 1); break;
		case OP_CEIL: r = cg_intrinsic(cg, "llvm.ceil", &ft, 1, a, 1); break;
		case OP_ABS: r = cg_intrinsic(cg, "llvm.fabs", &ft, 1, a, 1); break;
		case OP_ERF:
			r = cg_call_ext(cg, ft == cg->t_f64 ? "erf" : "erff", ft, &ft, 1, a, 1, false);
			break;
		default:
			cg_fail(cg, op, "op '%s' does not apply to floats", ir_opinfo(opc)->name);
			return LLVMGetUndef(cg_sty(cg, rt));
		}
		return narrow ? cg_from_f32(cg, r, rt, false) : r;
	}

	/* integers (and pointers for cmp) */
	bool sgn = ir_is_signed(ot);
	LLVMTypeRef t = LLVMTypeOf(xs[0]);
	switch (opc) {
	case OP_ADD: return LLVMBuildAdd(cg->b, xs[0], xs[1], "");
	case OP_SUB: return LLVMBuildSub(cg->b, xs[0], xs[1], "");
	case OP_MUL: return LLVMBuildMul(cg->b, xs[0], xs[1], "");
	case OP_DIV: return int_divrem(cg, false, sgn, xs[0], xs[1]);
	case OP_REM: return int_divrem(cg, true, sgn, xs[0], xs[1]);
	case OP_NEG: return LLVMBuildSub(cg->b, LLVMConstInt(t, 0, 0), xs[0], "");
	case OP_AND: return LLVMBuildAnd(cg->b, xs[0], xs[1], "");
	case OP_OR: return LLVMBuildOr(cg->b, xs[0], xs[1], "");
	case OP_XOR: return LLVMBuildXor(cg->b, xs[0], xs[1], "");
	case OP_NOT: return LLVMBuildNot(cg->b, xs[0], "");
	case OP_SHL:
	case OP_SHR: return shift(cg, opc, sgn, xs[0], xs[1]);
	case OP_MIN:
		return cg_intrinsic(cg, sgn ? "llvm.smin" : "llvm.umin", &t, 1, xs, 2);
	case OP_MAX:
		return cg_intrinsic(cg, sgn ? "llvm.smax" : "llvm.umax", &t, 1, xs, 2);
	case OP_CMP: return cmp(cg, op, ot, xs[0], xs[1]);
	case OP_UMULHI: {
		unsigned w = LLVMGetIntTypeWidth(t);
		LLVMTypeRef wt = LLVMIntTypeInContext(cg->ctx, 2 * w);
		LLVMValueRef p = LLVMBuildMul(cg->b, LLVMBuildZExt(cg->b, xs[0], wt, ""),
					      LLVMBuildZExt(cg->b, xs[1], wt, ""), "");
		return LLVMBuildTrunc(cg->b, LLVMBuildLShr(cg->b, p, LLVMConstInt(wt, w, 0), ""), t, "");
	}
	case OP_ABS: {
		if (!sgn)
			return xs[0];
		LLVMValueRef args[2] = {xs[0], LLVMConstInt(cg->t_i1, 0, 0)};
		return cg_intrinsic(cg, "llvm.abs", &t, 1, args, 2);
	}
	case OP_FMA:
		return LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, xs[0], xs[1], ""), xs[2], "");
	default:
		cg_fail(cg, op, "op '%s' does not apply to %s", ir_opinfo(opc)->name,
			ot->kind == TY_PTR ? "pointers" : "integers");
		return LLVMGetUndef(cg_sty(cg, rt));
	}
}

void cg_lower_elem(Cg *cg, IrOp *op)
{
	const IrType *rt = op->res[0].type;
	int n = op->nops;
	LLVMValueRef xs[8];
	if (n > 8) {
		if (op->opc != OP_EXTERN) {
			cg_fail(cg, op, "too many operands");
			return;
		}
		cg_fail(cg, op, "extern with more than 8 operands");
		return;
	}
	CgVal cv[8];
	bool uniform = true;
	for (int i = 0; i < n; i++) {
		cv[i] = cg_get_lazy(cg, op->ops[i]);
		uniform &= cg_uniform(cv[i]);
	}
	/* Affine values stay symbolic through + - and addptr with a uniform:
	 * contiguous pointers then give contiguous (vector) loads and stores. */
	if (ir_is_block(rt) && n == 2) {
		CgVal a = cv[0], b = cv[1];
		const IrType *et = ir_scalar(rt);
		bool ints = ir_is_int(et) && et->kind != TY_I1;
		if (op->opc == OP_ADD && ints && a.kind == CV_AFF && cg_uniform(b)) {
			cg_set(cg, &op->res[0], cg_aff(LLVMBuildAdd(cg->b, a.v, b.v, "")));
			return;
		}
		if (op->opc == OP_ADD && ints && b.kind == CV_AFF && cg_uniform(a)) {
			cg_set(cg, &op->res[0], cg_aff(LLVMBuildAdd(cg->b, a.v, b.v, "")));
			return;
		}
		if (op->opc == OP_SUB && ints && a.kind == CV_AFF && cg_uniform(b)) {
			cg_set(cg, &op->res[0], cg_aff(LLVMBuildSub(cg->b, a.v, b.v, "")));
			return;
		}
		if (op->opc == OP_ADDPTR && ((a.kind == CV_AFF && cg_uniform(b)) ||
					     (cg_uniform(a) && b.kind == CV_AFF))) {
			LLVMValueRef xs2[2] = {a.v, b.v};
			cg_set(cg, &op->res[0], cg_aff(cg_scalar_op(cg, op, xs2)));
			return;
		}
	}
	if (!ir_is_block(rt) || uniform) {
		for (int i = 0; i < n; i++)
			xs[i] = cv[i].v;
		LLVMValueRef r = cg_scalar_op(cg, op, xs);
		cg_set(cg, &op->res[0], ir_is_block(rt) ? cg_splat(r) : cg_scalar(r));
		return;
	}
	/* With one use in this block, the op is computed inside its user's
	 * loop (chains of elementwise ops become one loop, no scratch). */
	if (cg_may_defer(cg, op)) {
		cg_set(cg, &op->res[0], cg_lazy(op));
		return;
	}
	LLVMValueRef buf = cg_newbuf(cg, rt);
	CgLoop l;
	LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, rt->numel));
	cg_store_elem(cg, buf, rt, i, cg_lazy_elem(cg, op, i));
	cg_loop_end(cg, &l);
	cg_set(cg, &op->res[0], cg_bufv(buf));
}

LLVMValueRef cg_lazy_elem(Cg *cg, IrOp *op, LLVMValueRef i)
{
	LLVMValueRef xs[8];
	for (int k = 0; k < op->nops && k < 8; k++)
		xs[k] = cg_elem(cg, cg_get_lazy(cg, op->ops[k]), op->ops[k]->type, i);
	return cg_scalar_op(cg, op, xs);
}
