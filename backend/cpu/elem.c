/* elem.c: elementwise ops on the CPU. The semantics of one element are
 * backend/scalar.c's (be_scalar_op, shared with the GPU: guarded shifts and
 * divisions, saturating float->int casts, fp8 rounding and saturation,
 * narrow floats computed in f32 and rounded after each op); this file gives
 * it the CPU's types (bf16 as its i16 bits, fp8 as i8), its math (exp in
 * straight-line f32 code so that loops vectorize, libm for the rest) and its
 * externs, and cg_lower_elem applies it to scalars, to splats (once) or to
 * buffers (one flat loop, which O3 vectorizes).
 */
#include <string.h>

#include "backend/cpu/cpu.h"
#include "backend/scalar.h"

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

/* f64 -> f16 bits rounded once (LLVM's fptrunc would call a library
 * function the process does not have). */
static LLVMValueRef f64_to_f16(void *user, LLVMValueRef x)
{
	Cg *cg = user;
	LLVMTypeRef pt = cg->t_f64;
	LLVMValueRef h = cg_call_ext(cg, "ct_cpu_f64_to_f16", cg->t_i16, &pt, 1, &x, 1, false);
	return LLVMBuildBitCast(cg->b, h, cg->t_f16, "");
}

static LLVMTypeRef sem_type(void *user, const IrType *t)
{
	return cg_sty(user, ir_scalar(t));
}

static void sem_fail(void *user, const IrOp *op, const char *msg)
{
	cg_fail(user, op, "%s: %s", op ? ir_opinfo(op->opc)->name : "cast", msg);
}

static LLVMValueRef sem_math(void *user, const IrOp *op, LLVMValueRef x);
static LLVMValueRef lower_extern(Cg *cg, const IrOp *op, LLVMValueRef *xs);

static LLVMValueRef sem_ext(void *user, const IrOp *op, LLVMValueRef *xs)
{
	return lower_extern(user, op, xs);
}

/* The shared scalar semantics with the CPU's types, math and externs. */
static BeScalar sem(Cg *cg)
{
	return (BeScalar){.c = cg->ctx,
			  .m = cg->mod,
			  .b = cg->b,
			  .bf16_bits = true,
			  .narrow_native = false,
			  .minnum_selects = true,
			  .type = sem_type,
			  .math = sem_math,
			  .ext = sem_ext,
			  .f64_to_f16 = f64_to_f16,
			  .fail = sem_fail,
			  .user = cg};
}

LLVMValueRef cg_to_f32(Cg *cg, LLVMValueRef x, const IrType *t)
{
	BeScalar s = sem(cg);
	return be_to_f32(&s, x, t);
}

LLVMValueRef cg_from_f32(Cg *cg, LLVMValueRef x, const IrType *t, bool rtz)
{
	BeScalar s = sem(cg);
	return be_from_f32(&s, x, t, rtz);
}

LLVMValueRef cg_convert(Cg *cg, const IrOp *op, LLVMValueRef x, const IrType *from, const IrType *to, bool rtz)
{
	BeScalar s = sem(cg);
	return be_scalar_cast(&s, op, x, from, to, rtz);
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

/* exp, log, sqrt, ... of an f32 or f64 x. */
static LLVMValueRef sem_math(void *user, const IrOp *op, LLVMValueRef x)
{
	Cg *cg = user;
	LLVMTypeRef ft = LLVMTypeOf(x);
	switch (op->opc) {
	case OP_EXP:
	case OP_EXP2:
		if (ft == cg->t_f32)
			return exp_f32(cg, x, op->opc == OP_EXP2);
		return cg_intrinsic(cg, op->opc == OP_EXP ? "llvm.exp" : "llvm.exp2", &ft, 1, &x, 1);
	case OP_LOG:
		return cg_intrinsic(cg, "llvm.log", &ft, 1, &x, 1);
	case OP_LOG2:
		return cg_intrinsic(cg, "llvm.log2", &ft, 1, &x, 1);
	case OP_SQRT:
		return cg_intrinsic(cg, "llvm.sqrt", &ft, 1, &x, 1);
	case OP_RSQRT:
		return LLVMBuildFDiv(cg->b, LLVMConstReal(ft, 1.0), cg_intrinsic(cg, "llvm.sqrt", &ft, 1, &x, 1), "");
	case OP_SIN:
		return cg_intrinsic(cg, "llvm.sin", &ft, 1, &x, 1);
	case OP_COS:
		return cg_intrinsic(cg, "llvm.cos", &ft, 1, &x, 1);
	case OP_FLOOR:
		return cg_intrinsic(cg, "llvm.floor", &ft, 1, &x, 1);
	case OP_CEIL:
		return cg_intrinsic(cg, "llvm.ceil", &ft, 1, &x, 1);
	case OP_ERF:
		return cg_call_ext(cg, ft == cg->t_f64 ? "erf" : "erff", ft, &ft, 1, &x, 1, false);
	default:
		cg_fail(cg, op, "op '%s' is not a math function", ir_opinfo(op->opc)->name);
		return LLVMGetUndef(ft);
	}
}

LLVMValueRef cg_scalar_op(Cg *cg, const IrOp *op, LLVMValueRef *xs)
{
	if (op->opc == OP_ADDPTR) {
		const IrType *pt = ir_scalar(op->ops[0]->type)->elem;
		LLVMTypeRef et = pt && pt->kind != TY_BLOCK ? cg_sty(cg, pt) : cg->t_i8;
		const IrType *it = ir_scalar(op->ops[1]->type);
		LLVMValueRef off = xs[1];
		if (ir_type_bits(it) < 64)
			off = ir_is_signed(it) ? LLVMBuildSExt(cg->b, off, cg->t_i64, "")
					       : LLVMBuildZExt(cg->b, off, cg->t_i64, "");
		return LLVMBuildGEP2(cg->b, et, xs[0], &off, 1, "");
	}
	BeScalar s = sem(cg);
	return be_scalar_op(&s, op, xs);
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

void cg_lower_map(Cg *cg, IrOp *op)
{
	int pack = (int)ir_op_int(op, "pack", 1), nin = op->nops, nout = op->nres;
	IrBlock *r = op->regions[0];
	const IrType *t = op->ops[0]->type;
	int64_t numel = t->numel, groups = (numel + pack - 1) / pack;
	bool ragged = numel % pack != 0;
	CgVal *cv = ir_alloc(cg->ictx, sizeof *cv * (size_t)nin);
	for (int i = 0; i < nin; i++)
		cv[i] = cg_get(cg, op->ops[i]);
	LLVMValueRef *bufs = ir_alloc(cg->ictx, sizeof *bufs * (size_t)nout);
	LLVMValueRef *idx = ir_alloc(cg->ictx, sizeof *idx * (size_t)pack);
	for (int i = 0; i < nout; i++)
		bufs[i] = cg_newbuf(cg, op->res[i].type);
	CgLoop l;
	LLVMValueRef g = cg_loop_begin(cg, &l, cg_i64(cg, groups));
	LLVMValueRef base = LLVMBuildNSWMul(cg->b, g, cg_i64(cg, pack), "");
	for (int j = 0; j < pack; j++) {
		idx[j] = LLVMBuildNSWAdd(cg->b, base, cg_i64(cg, j), "");
		/* past the end of a ragged last group: element 0 is read */
		LLVMValueRef at = idx[j];
		if (ragged)
			at = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, idx[j], cg_i64(cg, numel), ""), at,
					     cg_i64(cg, 0), "");
		for (int i = 0; i < nin; i++)
			cg_set(cg, r->args[i * pack + j], cg_scalar(cg_elem(cg, cv[i], op->ops[i]->type, at)));
	}
	IrOp *y = cg_lower_block(cg, r);
	if (cg->err)
		return;
	if (!y || y->nops != nout * pack) {
		cg_fail(cg, op, "map_elementwise: the region must yield %d values", nout * pack);
		return;
	}
	for (int j = 0; j < pack; j++) {
		LLVMBasicBlockRef skip = NULL;
		if (ragged) { /* and nothing is written there */
			LLVMBasicBlockRef w = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "map.w");
			skip = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "map.skip");
			LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, idx[j], cg_i64(cg, numel), ""), w, skip);
			LLVMPositionBuilderAtEnd(cg->b, w);
		}
		for (int i = 0; i < nout; i++)
			cg_store_elem(cg, bufs[i], op->res[i].type, idx[j], cg_get(cg, y->ops[i * pack + j]).v);
		if (skip) {
			LLVMBuildBr(cg->b, skip);
			LLVMPositionBuilderAtEnd(cg->b, skip);
		}
	}
	cg_loop_end(cg, &l);
	for (int i = 0; i < nout; i++)
		cg_set(cg, &op->res[i], cg_bufv(bufs[i]));
}
