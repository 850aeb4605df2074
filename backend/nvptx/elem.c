/* elem.c: elementwise ops, register by register: arithmetic, compares,
 * min/max, select, casts, math (ex2/lg2.approx for f32 exp/log, sqrt.approx
 * unless rounding = "rn", libdevice for the rest; f16/bf16 math in f32).
 * Runs of equal values that axis info proves along the fastest dim are
 * computed once (dedup_run).
 */
#include <string.h>

#include "nvptx.h"

static const double LOG2E = 1.4426950408889634;
static const double LN2 = 0.6931471805599453;

bool nv_is_unsigned(const IrType *t)
{
	t = ir_scalar(t);
	return ir_is_int(t) && !ir_is_signed(t);
}

static LLVMValueRef fconst(LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

/* Math on float x of IR type t. */
static LLVMValueRef math(Nv *nv, IrOp *op, const IrType *t, LLVMValueRef x)
{
	LLVMTypeRef f32 = LLVMFloatTypeInContext(nv->c);
	IrTypeKind k = ir_scalar(t)->kind;
	LLVMTypeRef ty = LLVMTypeOf(x);
	if (k == TY_F16 || k == TY_BF16) {
		/* compute in f32 */
		LLVMValueRef w = LLVMBuildFPExt(nv->b, x, f32, "");
		LLVMValueRef r = math(nv, op, ir_type(nv->ctx, TY_F32), w);
		return LLVMBuildFPTrunc(nv->b, r, ty, "");
	}
	bool d = k == TY_F64;
	LLVMValueRef args[1] = {x};
	switch (op->opc) {
	case OP_EXP:
		if (d)
			return nv_libdevice(nv, "__nv_exp", ty, args, 1);
		args[0] = LLVMBuildFMul(nv->b, x, fconst(f32, LOG2E), "");
		return nv_intrinsic(nv, "llvm.nvvm.ex2.approx.f32", NULL, 0, args, 1);
	case OP_EXP2:
		if (d)
			return nv_libdevice(nv, "__nv_exp2", ty, args, 1);
		return nv_intrinsic(nv, "llvm.nvvm.ex2.approx.f32", NULL, 0, args, 1);
	case OP_LOG:
		if (d)
			return nv_libdevice(nv, "__nv_log", ty, args, 1);
		return LLVMBuildFMul(nv->b, nv_intrinsic(nv, "llvm.nvvm.lg2.approx.f", NULL, 0, args, 1), fconst(f32, LN2), "");
	case OP_LOG2:
		if (d)
			return nv_libdevice(nv, "__nv_log2", ty, args, 1);
		return nv_intrinsic(nv, "llvm.nvvm.lg2.approx.f", NULL, 0, args, 1);
	case OP_SQRT:
		if (d || strcmp(ir_op_str(op, "rounding", ""), "rn") == 0)
			return nv_intrinsic(nv, "llvm.sqrt", &ty, 1, args, 1);
		return nv_intrinsic(nv, "llvm.nvvm.sqrt.approx.f", NULL, 0, args, 1);
	case OP_RSQRT:
		if (d)
			return nv_libdevice(nv, "__nv_rsqrt", ty, args, 1);
		return nv_intrinsic(nv, "llvm.nvvm.rsqrt.approx.f", NULL, 0, args, 1);
	case OP_SIN: return nv_libdevice(nv, d ? "__nv_sin" : "__nv_sinf", ty, args, 1);
	case OP_COS: return nv_libdevice(nv, d ? "__nv_cos" : "__nv_cosf", ty, args, 1);
	case OP_ERF: return nv_libdevice(nv, d ? "__nv_erf" : "__nv_erff", ty, args, 1);
	case OP_FLOOR: return nv_intrinsic(nv, "llvm.floor", &ty, 1, args, 1);
	case OP_CEIL: return nv_intrinsic(nv, "llvm.ceil", &ty, 1, args, 1);
	default: break;
	}
	nv_fail(nv, op, "no GPU lowering for %s", ir_opinfo(op->opc)->name);
	return x;
}

LLVMValueRef nv_cast(Nv *nv, IrOp *op, const IrType *from, const IrType *to, LLVMValueRef x)
{
	from = ir_scalar(from);
	to = ir_scalar(to);
	LLVMTypeRef tt = nv_llty(nv, to);
	bool fi = ir_is_int(from), ti = ir_is_int(to);
	bool ff = ir_is_float(from), tf = ir_is_float(to);
	if (from->kind == TY_F8E4M3 || from->kind == TY_F8E5M2 || to->kind == TY_F8E4M3 || to->kind == TY_F8E5M2) {
		nv_fail(nv, op, "%s casts are not supported on the GPU yet", "fp8");
		return LLVMGetUndef(tt);
	}
	if (from == to)
		return x;
	if (fi && ti) {
		int fb = ir_type_bits(from), tb = ir_type_bits(to);
		if (tb == 1)
			return LLVMBuildICmp(nv->b, LLVMIntNE, x, LLVMConstInt(LLVMTypeOf(x), 0, 0), "");
		if (fb == tb)
			return x;
		if (fb > tb)
			return LLVMBuildTrunc(nv->b, x, tt, "");
		return ir_is_signed(from) ? LLVMBuildSExt(nv->b, x, tt, "") : LLVMBuildZExt(nv->b, x, tt, "");
	}
	if (fi && tf)
		return ir_is_signed(from) ? LLVMBuildSIToFP(nv->b, x, tt, "") : LLVMBuildUIToFP(nv->b, x, tt, "");
	if (ff && ti) {
		if (to->kind == TY_I1)
			return LLVMBuildFCmp(nv->b, LLVMRealUNE, x, LLVMConstReal(LLVMTypeOf(x), 0), "");
		return ir_is_signed(to) ? LLVMBuildFPToSI(nv->b, x, tt, "") : LLVMBuildFPToUI(nv->b, x, tt, "");
	}
	if (ff && tf) {
		int fb = ir_type_bits(from), tb = ir_type_bits(to);
		if (fb < tb)
			return LLVMBuildFPExt(nv->b, x, tt, "");
		if (fb > tb)
			return LLVMBuildFPTrunc(nv->b, x, tt, "");
		/* f16 <-> bf16 */
		LLVMValueRef w = LLVMBuildFPExt(nv->b, x, LLVMFloatTypeInContext(nv->c), "");
		return LLVMBuildFPTrunc(nv->b, w, tt, "");
	}
	if (ir_is_ptr(from) && ir_is_ptr(to))
		return from->addrspace == to->addrspace ? x : LLVMBuildAddrSpaceCast(nv->b, x, tt, "");
	nv_fail(nv, op, "unsupported cast (%s)", "types");
	return LLVMGetUndef(tt);
}

static LLVMValueRef cmp(Nv *nv, IrOp *op, const IrType *t, LLVMValueRef a, LLVMValueRef b)
{
	const char *p = ir_op_str(op, "pred", "eq");
	t = ir_scalar(t);
	if (ir_is_float(t)) {
		LLVMRealPredicate rp = LLVMRealOEQ;
		if (!strcmp(p, "ne")) rp = LLVMRealUNE;
		else if (!strcmp(p, "lt")) rp = LLVMRealOLT;
		else if (!strcmp(p, "le")) rp = LLVMRealOLE;
		else if (!strcmp(p, "gt")) rp = LLVMRealOGT;
		else if (!strcmp(p, "ge")) rp = LLVMRealOGE;
		return LLVMBuildFCmp(nv->b, rp, a, b, "");
	}
	bool s = ir_is_signed(t);
	LLVMIntPredicate ip = LLVMIntEQ;
	if (!strcmp(p, "ne")) ip = LLVMIntNE;
	else if (!strcmp(p, "lt")) ip = s ? LLVMIntSLT : LLVMIntULT;
	else if (!strcmp(p, "le")) ip = s ? LLVMIntSLE : LLVMIntULE;
	else if (!strcmp(p, "gt")) ip = s ? LLVMIntSGT : LLVMIntUGT;
	else if (!strcmp(p, "ge")) ip = s ? LLVMIntSGE : LLVMIntUGE;
	return LLVMBuildICmp(nv->b, ip, a, b, "");
}

static LLVMValueRef minmax(Nv *nv, IrOp *op, const IrType *t, LLVMValueRef a, LLVMValueRef b, bool isMax)
{
	t = ir_scalar(t);
	if (ir_is_float(t)) {
		LLVMTypeRef ty = LLVMTypeOf(a);
		bool all = !strcmp(ir_op_str(op, "propagate_nan", "none"), "all");
		const char *n = isMax ? (all ? "llvm.maximum" : "llvm.maxnum") : (all ? "llvm.minimum" : "llvm.minnum");
		return nv_intrinsic(nv, n, &ty, 1, (LLVMValueRef[]){a, b}, 2);
	}
	bool s = ir_is_signed(t);
	LLVMIntPredicate ip = isMax ? (s ? LLVMIntSGT : LLVMIntUGT) : (s ? LLVMIntSLT : LLVMIntULT);
	return LLVMBuildSelect(nv->b, LLVMBuildICmp(nv->b, ip, a, b, ""), a, b, "");
}

/* One element of an elementwise op: a[] are the operands' registers. */
static LLVMValueRef elem(Nv *nv, IrOp *op, LLVMValueRef *a)
{
	const IrType *t0 = op->nops ? op->ops[0]->type : op->res[0].type;
	const IrType *rt = op->res[0].type;
	const IrType *s0 = ir_scalar(t0);
	bool fl = ir_is_float(s0);
	LLVMBuilderRef B = nv->b;
	switch (op->opc) {
	case OP_ADD: return fl ? LLVMBuildFAdd(B, a[0], a[1], "") : LLVMBuildAdd(B, a[0], a[1], "");
	case OP_SUB: return fl ? LLVMBuildFSub(B, a[0], a[1], "") : LLVMBuildSub(B, a[0], a[1], "");
	case OP_MUL: return fl ? LLVMBuildFMul(B, a[0], a[1], "") : LLVMBuildMul(B, a[0], a[1], "");
	case OP_DIV:
		if (fl)
			return LLVMBuildFDiv(B, a[0], a[1], "");
		return nv_is_unsigned(s0) ? LLVMBuildUDiv(B, a[0], a[1], "") : LLVMBuildSDiv(B, a[0], a[1], "");
	case OP_REM:
		if (fl)
			return LLVMBuildFRem(B, a[0], a[1], "");
		return nv_is_unsigned(s0) ? LLVMBuildURem(B, a[0], a[1], "") : LLVMBuildSRem(B, a[0], a[1], "");
	case OP_NEG: return fl ? LLVMBuildFNeg(B, a[0], "") : LLVMBuildNeg(B, a[0], "");
	case OP_AND: return LLVMBuildAnd(B, a[0], a[1], "");
	case OP_OR: return LLVMBuildOr(B, a[0], a[1], "");
	case OP_XOR: return LLVMBuildXor(B, a[0], a[1], "");
	case OP_NOT: return LLVMBuildNot(B, a[0], "");
	case OP_SHL: return LLVMBuildShl(B, a[0], a[1], "");
	case OP_SHR: return ir_is_signed(s0) ? LLVMBuildAShr(B, a[0], a[1], "") : LLVMBuildLShr(B, a[0], a[1], "");
	case OP_MIN: return minmax(nv, op, t0, a[0], a[1], false);
	case OP_MAX: return minmax(nv, op, t0, a[0], a[1], true);
	case OP_CMP: return cmp(nv, op, t0, a[0], a[1]);
	case OP_SELECT: return LLVMBuildSelect(B, a[0], a[1], a[2], "");
	case OP_UMULHI: {
		int bits = ir_type_bits(s0);
		LLVMTypeRef w = LLVMIntTypeInContext(nv->c, (unsigned)bits * 2);
		bool s = ir_is_signed(s0);
		LLVMValueRef x = s ? LLVMBuildSExt(B, a[0], w, "") : LLVMBuildZExt(B, a[0], w, "");
		LLVMValueRef y = s ? LLVMBuildSExt(B, a[1], w, "") : LLVMBuildZExt(B, a[1], w, "");
		LLVMValueRef p = LLVMBuildMul(B, x, y, "");
		p = LLVMBuildLShr(B, p, LLVMConstInt(w, (unsigned)bits, 0), "");
		return LLVMBuildTrunc(B, p, LLVMTypeOf(a[0]), "");
	}
	case OP_FMA: {
		LLVMTypeRef ty = LLVMTypeOf(a[0]);
		if (!fl)
			return LLVMBuildAdd(B, LLVMBuildMul(B, a[0], a[1], ""), a[2], "");
		return nv_intrinsic(nv, "llvm.fma", &ty, 1, a, 3);
	}
	case OP_CAST: return nv_cast(nv, op, t0, rt, a[0]);
	case OP_BITCAST: return LLVMBuildBitCast(B, a[0], nv_llty(nv, rt), "");
	case OP_INT_TO_PTR: return LLVMBuildIntToPtr(B, a[0], nv_llty(nv, rt), "");
	case OP_PTR_TO_INT: return LLVMBuildPtrToInt(B, a[0], nv_llty(nv, rt), "");
	case OP_ABS: {
		LLVMTypeRef ty = LLVMTypeOf(a[0]);
		if (fl)
			return nv_intrinsic(nv, "llvm.fabs", &ty, 1, a, 1);
		if (nv_is_unsigned(s0))
			return a[0];
		return nv_intrinsic(nv, "llvm.abs", &ty, 1, (LLVMValueRef[]){a[0], LLVMConstInt(LLVMInt1TypeInContext(nv->c), 0, 0)}, 2);
	}
	case OP_EXP: case OP_EXP2: case OP_LOG: case OP_LOG2: case OP_SQRT: case OP_RSQRT:
	case OP_SIN: case OP_COS: case OP_ERF: case OP_FLOOR: case OP_CEIL:
		if (!fl) {
			nv_fail(nv, op, "%s of a non-float", ir_opinfo(op->opc)->name);
			return a[0];
		}
		return math(nv, op, t0, a[0]);
	case OP_EXTERN: {
		const char *sym = ir_op_str(op, "symbol", NULL);
		if (!sym) {
			nv_fail(nv, op, "extern without %s", "symbol");
			return LLVMGetUndef(nv_llty(nv, rt));
		}
		return nv_libdevice(nv, sym, nv_llty(nv, rt), a, op->nops);
	}
	case OP_ADDPTR: {
		const IrType *pt = ir_scalar(t0);
		LLVMTypeRef et = nv_llty(nv, pt->elem);
		if (pt->elem->kind == TY_I1)
			et = LLVMInt8TypeInContext(nv->c);
		return LLVMBuildGEP2(B, et, a[0], &a[1], 1, "");
	}
	default:
		nv_fail(nv, op, "op %s is not supported by the NVPTX backend", ir_opinfo(op->opc)->name);
		return LLVMGetUndef(nv_llty(nv, rt));
	}
}

/* Registers of v come in runs of equal values when axis info proves
 * constancy along the layout's fastest dim: each thread's spt consecutive
 * elements there are consecutive registers, starting at a multiple of spt,
 * so with constancy k dividing spt, registers r and r - r % k hold equal
 * values (a mask `cols < N` with N divisible by 16 is computed once per
 * 8-element vector, not per element). Returns the run length (1: none). */
static int dedup_run(Nv *nv, const IrValue *v)
{
	if (!nv->ax || !ir_is_block(v->type) || !v->type->layout)
		return 1;
	NvMap m;
	nv_map_init(NULL, v->type, &m);
	if (!m.b || m.brank < 1)
		return 1;
	int d0 = m.order[0];
	if (m.dd[d0].estride != 1 || m.stride[d0] != 1)
		return 1;
	int vd = -1;
	for (int k = 0; k < m.rank; k++)
		if (m.dimmap[k] == d0)
			vd = k;
	if (vd < 0)
		return 1;
	int64_t c = an_axis_get(nv->ax, v)->constancy[vd];
	int k = m.dd[d0].spt;
	if (k > m.nd[d0])
		k = m.nd[d0];
	while (k > 1 && (c % k || m.dd[d0].spt % k || m.nd[d0] % k))
		k /= 2;
	return k < 1 ? 1 : k;
}

void nv_lower_elementwise(Nv *nv, IrOp *op)
{
	int n = nv_map_nregs(nv, op->res[0].type);
	LLVMValueRef *out = nv_regbuf(nv, n);
	LLVMValueRef args[16];
	if (op->nops > 16) {
		nv_fail(nv, op, "too many operands for %s", ir_opinfo(op->opc)->name);
		return;
	}
	int k = dedup_run(nv, &op->res[0]);
	for (int r = 0; r < n; r++) {
		if (k > 1 && r % k) { /* equal to the first element of its constant run */
			out[r] = out[r - r % k];
			continue;
		}
		for (int i = 0; i < op->nops; i++)
			args[i] = nv_reg(nv, op->ops[i], r);
		out[r] = elem(nv, op, args);
	}
	nv_set(nv, &op->res[0], n, out);
}
