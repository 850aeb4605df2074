/* lower.c: per-thread lowering of a TTGIR kernel to LLVM IR.
 *
 * Each op is lowered for the elements the current thread owns (map.c):
 * elementwise ops register by register; loads and stores in vectors of up to
 * 128 bits where axis info allows, behind a branch on the mask; reductions
 * in-thread, then by butterfly shuffles across the lanes of a warp, then
 * through shared scratch across warps; layout conversions, dot (FMA),
 * scans, trans/reshape/cat/join/split/gather through shared scratch at the
 * op's "scratch_offset" (layouts of the scratch: analysis/alloc.c). A
 * scratch user writes, waits at a barrier, then reads; the barrier before
 * the next writer is an explicit `barrier` op inserted by the analysis.
 * Structured control flow becomes basic blocks with one phi per register.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvptx.h"

static const double LOG2E = 1.4426950408889634;
static const double LN2 = 0.6931471805599453;

LLVMValueRef i32c(Lower *L, int64_t v)
{
	return LLVMConstInt(LLVMInt32TypeInContext(L->c), (unsigned long long)v, 1);
}

static void fail(Lower *L, const IrOp *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void fail(Lower *L, const IrOp *op, const char *fmt, ...)
{
	if (L->err)
		return;
	va_list ap;
	va_start(ap, fmt);
	char *msg = ir_vfmt(L->ctx, fmt, ap);
	va_end(ap);
	L->err = ir_error(L->ctx, IR_ERR_BACKEND, op ? op->loc : (IrLoc){0}, "%s", msg);
}

LLVMTypeRef be_llty(Lower *L, const IrType *t)
{
	t = ir_scalar(t);
	switch (t->kind) {
	case TY_I1: return LLVMInt1TypeInContext(L->c);
	case TY_I8: case TY_U8: case TY_F8E4M3: case TY_F8E5M2: return LLVMInt8TypeInContext(L->c);
	case TY_I16: case TY_U16: return LLVMInt16TypeInContext(L->c);
	case TY_I32: case TY_U32: return LLVMInt32TypeInContext(L->c);
	case TY_I64: case TY_U64: return LLVMInt64TypeInContext(L->c);
	case TY_F16: return LLVMHalfTypeInContext(L->c);
	case TY_BF16: return LLVMBFloatTypeInContext(L->c);
	case TY_F32: return LLVMFloatTypeInContext(L->c);
	case TY_F64: return LLVMDoubleTypeInContext(L->c);
	case TY_PTR: return LLVMPointerTypeInContext(L->c, (unsigned)t->addrspace);
	default: return LLVMInt32TypeInContext(L->c);
	}
}

LLVMValueRef call_intr(Lower *L, const char *name, LLVMTypeRef *tys, int ntys, LLVMValueRef *args, int nargs)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	if (!id) {
		fail(L, NULL, "unknown LLVM intrinsic %s", name);
		return LLVMGetUndef(LLVMInt32TypeInContext(L->c));
	}
	LLVMTypeRef own[1];
	if (ntys == 0 && nargs > 0 && LLVMIntrinsicIsOverloaded(id)) {
		/* e.g. llvm.nvvm.ex2.approx.f32 names an overload of its first operand */
		own[0] = LLVMTypeOf(args[0]);
		tys = own;
		ntys = 1;
	}
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(L->m, id, tys, (size_t)ntys);
	LLVMTypeRef fty = LLVMIntrinsicGetType(L->c, id, tys, (size_t)ntys);
	return LLVMBuildCall2(L->b, fty, fn, args, (unsigned)nargs, "");
}

/* A libdevice function (linked in later). */
static LLVMValueRef call_dev(Lower *L, const char *name, LLVMTypeRef ret, LLVMValueRef *args, int n)
{
	LLVMTypeRef ptys[8];
	for (int i = 0; i < n && i < 8; i++)
		ptys[i] = LLVMTypeOf(args[i]);
	LLVMTypeRef fty = LLVMFunctionType(ret, ptys, (unsigned)n, 0);
	LLVMValueRef fn = LLVMGetNamedFunction(L->m, name);
	if (!fn)
		fn = LLVMAddFunction(L->m, name, fty);
	L->need_libdevice = true;
	return LLVMBuildCall2(L->b, fty, fn, args, (unsigned)n, "");
}

/* ------------------------------------------------------------------------- */
/* Values                                                                    */
/* ------------------------------------------------------------------------- */

static Vals *vals_of(Lower *L, const IrValue *v)
{
	if (v->id < 0 || v->id >= L->nvals)
		abort();
	return &L->vals[v->id];
}

static void set_vals(Lower *L, const IrValue *v, int n, LLVMValueRef *regs)
{
	Vals *d = vals_of(L, v);
	d->n = n;
	d->v = ir_alloc(L->ctx, sizeof(LLVMValueRef) * (size_t)(n > 0 ? n : 1));
	memcpy(d->v, regs, sizeof(LLVMValueRef) * (size_t)n);
}

static void set1(Lower *L, const IrValue *v, LLVMValueRef x)
{
	set_vals(L, v, 1, &x);
}

/* Register r of v (scalars: the one value). */
static LLVMValueRef reg(Lower *L, const IrValue *v, int r)
{
	Vals *d = vals_of(L, v);
	if (!d->v || d->n == 0) {
		abort();
	}
	return d->n == 1 ? d->v[0] : d->v[r];
}

static LLVMValueRef *regbuf(Lower *L, int n)
{
	return ir_alloc(L->ctx, sizeof(LLVMValueRef) * (size_t)(n > 0 ? n : 1));
}

static LLVMBasicBlockRef new_bb(Lower *L, const char *name)
{
	return LLVMAppendBasicBlockInContext(L->c, L->fn, name);
}

static void barrier(Lower *L)
{
	call_intr(L, "llvm.nvvm.barrier.cta.sync.aligned.all", NULL, 0, (LLVMValueRef[]){i32c(L, 0)}, 1);
}

/* ------------------------------------------------------------------------- */
/* Shared scratch                                                            */
/* ------------------------------------------------------------------------- */

static int64_t ebytes(const IrType *t)
{
	int b = ir_type_bits(ir_scalar(t)) / 8;
	return b < 1 ? 1 : b;
}

static LLVMValueRef smem_addr(Lower *L, int64_t byte_off, LLVMValueRef idx, int64_t esize)
{
	LLVMTypeRef i8 = LLVMInt8TypeInContext(L->c);
	LLVMValueRef off = LLVMBuildAdd(L->b, i32c(L, byte_off), LLVMBuildMul(L->b, idx, i32c(L, esize), ""), "");
	return LLVMBuildGEP2(L->b, i8, L->smem, &off, 1, "");
}

static void smem_store(Lower *L, const IrType *t, int64_t off, LLVMValueRef idx, LLVMValueRef v)
{
	LLVMValueRef p = smem_addr(L, off, idx, ebytes(t));
	if (ir_scalar(t)->kind == TY_I1)
		v = LLVMBuildZExt(L->b, v, LLVMInt8TypeInContext(L->c), "");
	LLVMBuildStore(L->b, v, p);
}

static LLVMValueRef smem_load(Lower *L, const IrType *t, int64_t off, LLVMValueRef idx)
{
	LLVMValueRef p = smem_addr(L, off, idx, ebytes(t));
	if (ir_scalar(t)->kind == TY_I1) {
		LLVMValueRef x = LLVMBuildLoad2(L->b, LLVMInt8TypeInContext(L->c), p, "");
		return LLVMBuildICmp(L->b, LLVMIntNE, x, LLVMConstInt(LLVMInt8TypeInContext(L->c), 0, 0), "");
	}
	return LLVMBuildLoad2(L->b, be_llty(L, t), p, "");
}

static int64_t scratch_off(const IrOp *op)
{
	return ir_op_int(op, "scratch_offset", 0);
}

static int64_t align16(int64_t x) { return (x + 15) & ~(int64_t)15; }

/* Writes every register of v to scratch at off + row-major index. */
static void write_block(Lower *L, const IrValue *v, int64_t off)
{
	Map m;
	map_init(L, v->type, &m);
	for (int r = 0; r < m.n; r++)
		smem_store(L, v->type, off, map_lin(L, &m, v->type, r), reg(L, v, r));
}

/* ------------------------------------------------------------------------- */
/* Elementwise                                                               */
/* ------------------------------------------------------------------------- */

static bool is_unsigned(const IrType *t)
{
	t = ir_scalar(t);
	return ir_is_int(t) && !ir_is_signed(t);
}

static LLVMValueRef fconst(LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

/* Math on float x of IR type t. */
static LLVMValueRef math(Lower *L, IrOp *op, const IrType *t, LLVMValueRef x)
{
	LLVMTypeRef f32 = LLVMFloatTypeInContext(L->c);
	IrTypeKind k = ir_scalar(t)->kind;
	LLVMTypeRef ty = LLVMTypeOf(x);
	if (k == TY_F16 || k == TY_BF16) {
		/* compute in f32 */
		LLVMValueRef w = LLVMBuildFPExt(L->b, x, f32, "");
		LLVMValueRef r = math(L, op, ir_type(L->ctx, TY_F32), w);
		return LLVMBuildFPTrunc(L->b, r, ty, "");
	}
	bool d = k == TY_F64;
	LLVMValueRef args[1] = {x};
	switch (op->opc) {
	case OP_EXP:
		if (d)
			return call_dev(L, "__nv_exp", ty, args, 1);
		args[0] = LLVMBuildFMul(L->b, x, fconst(f32, LOG2E), "");
		return call_intr(L, "llvm.nvvm.ex2.approx.f32", NULL, 0, args, 1);
	case OP_EXP2:
		if (d)
			return call_dev(L, "__nv_exp2", ty, args, 1);
		return call_intr(L, "llvm.nvvm.ex2.approx.f32", NULL, 0, args, 1);
	case OP_LOG:
		if (d)
			return call_dev(L, "__nv_log", ty, args, 1);
		return LLVMBuildFMul(L->b, call_intr(L, "llvm.nvvm.lg2.approx.f", NULL, 0, args, 1), fconst(f32, LN2), "");
	case OP_LOG2:
		if (d)
			return call_dev(L, "__nv_log2", ty, args, 1);
		return call_intr(L, "llvm.nvvm.lg2.approx.f", NULL, 0, args, 1);
	case OP_SQRT:
		if (d || strcmp(ir_op_str(op, "rounding", ""), "rn") == 0)
			return call_intr(L, "llvm.sqrt", &ty, 1, args, 1);
		return call_intr(L, "llvm.nvvm.sqrt.approx.f", NULL, 0, args, 1);
	case OP_RSQRT:
		if (d)
			return call_dev(L, "__nv_rsqrt", ty, args, 1);
		return call_intr(L, "llvm.nvvm.rsqrt.approx.f", NULL, 0, args, 1);
	case OP_SIN: return call_dev(L, d ? "__nv_sin" : "__nv_sinf", ty, args, 1);
	case OP_COS: return call_dev(L, d ? "__nv_cos" : "__nv_cosf", ty, args, 1);
	case OP_ERF: return call_dev(L, d ? "__nv_erf" : "__nv_erff", ty, args, 1);
	case OP_FLOOR: return call_intr(L, "llvm.floor", &ty, 1, args, 1);
	case OP_CEIL: return call_intr(L, "llvm.ceil", &ty, 1, args, 1);
	default: break;
	}
	fail(L, op, "no GPU lowering for %s", ir_opinfo(op->opc)->name);
	return x;
}

static LLVMValueRef cast(Lower *L, IrOp *op, const IrType *from, const IrType *to, LLVMValueRef x)
{
	from = ir_scalar(from);
	to = ir_scalar(to);
	LLVMTypeRef tt = be_llty(L, to);
	bool fi = ir_is_int(from), ti = ir_is_int(to);
	bool ff = ir_is_float(from), tf = ir_is_float(to);
	if (from->kind == TY_F8E4M3 || from->kind == TY_F8E5M2 || to->kind == TY_F8E4M3 || to->kind == TY_F8E5M2) {
		fail(L, op, "%s casts are not supported on the GPU yet", "fp8");
		return LLVMGetUndef(tt);
	}
	if (from == to)
		return x;
	if (fi && ti) {
		int fb = ir_type_bits(from), tb = ir_type_bits(to);
		if (tb == 1)
			return LLVMBuildICmp(L->b, LLVMIntNE, x, LLVMConstInt(LLVMTypeOf(x), 0, 0), "");
		if (fb == tb)
			return x;
		if (fb > tb)
			return LLVMBuildTrunc(L->b, x, tt, "");
		return ir_is_signed(from) ? LLVMBuildSExt(L->b, x, tt, "") : LLVMBuildZExt(L->b, x, tt, "");
	}
	if (fi && tf)
		return ir_is_signed(from) ? LLVMBuildSIToFP(L->b, x, tt, "") : LLVMBuildUIToFP(L->b, x, tt, "");
	if (ff && ti) {
		if (to->kind == TY_I1)
			return LLVMBuildFCmp(L->b, LLVMRealUNE, x, LLVMConstReal(LLVMTypeOf(x), 0), "");
		return ir_is_signed(to) ? LLVMBuildFPToSI(L->b, x, tt, "") : LLVMBuildFPToUI(L->b, x, tt, "");
	}
	if (ff && tf) {
		int fb = ir_type_bits(from), tb = ir_type_bits(to);
		if (fb < tb)
			return LLVMBuildFPExt(L->b, x, tt, "");
		if (fb > tb)
			return LLVMBuildFPTrunc(L->b, x, tt, "");
		/* f16 <-> bf16 */
		LLVMValueRef w = LLVMBuildFPExt(L->b, x, LLVMFloatTypeInContext(L->c), "");
		return LLVMBuildFPTrunc(L->b, w, tt, "");
	}
	if (ir_is_ptr(from) && ir_is_ptr(to))
		return from->addrspace == to->addrspace ? x : LLVMBuildAddrSpaceCast(L->b, x, tt, "");
	fail(L, op, "unsupported cast (%s)", "types");
	return LLVMGetUndef(tt);
}

static LLVMValueRef cmp(Lower *L, IrOp *op, const IrType *t, LLVMValueRef a, LLVMValueRef b)
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
		return LLVMBuildFCmp(L->b, rp, a, b, "");
	}
	bool s = ir_is_signed(t);
	LLVMIntPredicate ip = LLVMIntEQ;
	if (!strcmp(p, "ne")) ip = LLVMIntNE;
	else if (!strcmp(p, "lt")) ip = s ? LLVMIntSLT : LLVMIntULT;
	else if (!strcmp(p, "le")) ip = s ? LLVMIntSLE : LLVMIntULE;
	else if (!strcmp(p, "gt")) ip = s ? LLVMIntSGT : LLVMIntUGT;
	else if (!strcmp(p, "ge")) ip = s ? LLVMIntSGE : LLVMIntUGE;
	return LLVMBuildICmp(L->b, ip, a, b, "");
}

static LLVMValueRef minmax(Lower *L, IrOp *op, const IrType *t, LLVMValueRef a, LLVMValueRef b, bool isMax)
{
	t = ir_scalar(t);
	if (ir_is_float(t)) {
		LLVMTypeRef ty = LLVMTypeOf(a);
		bool all = !strcmp(ir_op_str(op, "propagate_nan", "none"), "all");
		const char *n = isMax ? (all ? "llvm.maximum" : "llvm.maxnum") : (all ? "llvm.minimum" : "llvm.minnum");
		return call_intr(L, n, &ty, 1, (LLVMValueRef[]){a, b}, 2);
	}
	bool s = ir_is_signed(t);
	LLVMIntPredicate ip = isMax ? (s ? LLVMIntSGT : LLVMIntUGT) : (s ? LLVMIntSLT : LLVMIntULT);
	return LLVMBuildSelect(L->b, LLVMBuildICmp(L->b, ip, a, b, ""), a, b, "");
}

/* One element of an elementwise op: a[] are the operands' registers. */
static LLVMValueRef elem(Lower *L, IrOp *op, LLVMValueRef *a)
{
	const IrType *t0 = op->nops ? op->ops[0]->type : op->res[0].type;
	const IrType *rt = op->res[0].type;
	const IrType *s0 = ir_scalar(t0);
	bool fl = ir_is_float(s0);
	LLVMBuilderRef B = L->b;
	switch (op->opc) {
	case OP_ADD: return fl ? LLVMBuildFAdd(B, a[0], a[1], "") : LLVMBuildAdd(B, a[0], a[1], "");
	case OP_SUB: return fl ? LLVMBuildFSub(B, a[0], a[1], "") : LLVMBuildSub(B, a[0], a[1], "");
	case OP_MUL: return fl ? LLVMBuildFMul(B, a[0], a[1], "") : LLVMBuildMul(B, a[0], a[1], "");
	case OP_DIV:
		if (fl)
			return LLVMBuildFDiv(B, a[0], a[1], "");
		return is_unsigned(s0) ? LLVMBuildUDiv(B, a[0], a[1], "") : LLVMBuildSDiv(B, a[0], a[1], "");
	case OP_REM:
		if (fl)
			return LLVMBuildFRem(B, a[0], a[1], "");
		return is_unsigned(s0) ? LLVMBuildURem(B, a[0], a[1], "") : LLVMBuildSRem(B, a[0], a[1], "");
	case OP_NEG: return fl ? LLVMBuildFNeg(B, a[0], "") : LLVMBuildNeg(B, a[0], "");
	case OP_AND: return LLVMBuildAnd(B, a[0], a[1], "");
	case OP_OR: return LLVMBuildOr(B, a[0], a[1], "");
	case OP_XOR: return LLVMBuildXor(B, a[0], a[1], "");
	case OP_NOT: return LLVMBuildNot(B, a[0], "");
	case OP_SHL: return LLVMBuildShl(B, a[0], a[1], "");
	case OP_SHR: return ir_is_signed(s0) ? LLVMBuildAShr(B, a[0], a[1], "") : LLVMBuildLShr(B, a[0], a[1], "");
	case OP_MIN: return minmax(L, op, t0, a[0], a[1], false);
	case OP_MAX: return minmax(L, op, t0, a[0], a[1], true);
	case OP_CMP: return cmp(L, op, t0, a[0], a[1]);
	case OP_SELECT: return LLVMBuildSelect(B, a[0], a[1], a[2], "");
	case OP_UMULHI: {
		int bits = ir_type_bits(s0);
		LLVMTypeRef w = LLVMIntTypeInContext(L->c, (unsigned)bits * 2);
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
		return call_intr(L, "llvm.fma", &ty, 1, a, 3);
	}
	case OP_CAST: return cast(L, op, t0, rt, a[0]);
	case OP_BITCAST: return LLVMBuildBitCast(B, a[0], be_llty(L, rt), "");
	case OP_INT_TO_PTR: return LLVMBuildIntToPtr(B, a[0], be_llty(L, rt), "");
	case OP_PTR_TO_INT: return LLVMBuildPtrToInt(B, a[0], be_llty(L, rt), "");
	case OP_ABS: {
		LLVMTypeRef ty = LLVMTypeOf(a[0]);
		if (fl)
			return call_intr(L, "llvm.fabs", &ty, 1, a, 1);
		if (is_unsigned(s0))
			return a[0];
		return call_intr(L, "llvm.abs", &ty, 1, (LLVMValueRef[]){a[0], LLVMConstInt(LLVMInt1TypeInContext(L->c), 0, 0)}, 2);
	}
	case OP_EXP: case OP_EXP2: case OP_LOG: case OP_LOG2: case OP_SQRT: case OP_RSQRT:
	case OP_SIN: case OP_COS: case OP_ERF: case OP_FLOOR: case OP_CEIL:
		if (!fl) {
			fail(L, op, "%s of a non-float", ir_opinfo(op->opc)->name);
			return a[0];
		}
		return math(L, op, t0, a[0]);
	case OP_EXTERN: {
		const char *sym = ir_op_str(op, "symbol", NULL);
		if (!sym) {
			fail(L, op, "extern without %s", "symbol");
			return LLVMGetUndef(be_llty(L, rt));
		}
		return call_dev(L, sym, be_llty(L, rt), a, op->nops);
	}
	case OP_ADDPTR: {
		const IrType *pt = ir_scalar(t0);
		LLVMTypeRef et = be_llty(L, pt->elem);
		if (pt->elem->kind == TY_I1)
			et = LLVMInt8TypeInContext(L->c);
		return LLVMBuildGEP2(B, et, a[0], &a[1], 1, "");
	}
	default:
		fail(L, op, "op %s is not supported by the NVPTX backend", ir_opinfo(op->opc)->name);
		return LLVMGetUndef(be_llty(L, rt));
	}
}

/* Registers of v come in runs of equal values when axis info proves
 * constancy along the layout's fastest dim: each thread's spt consecutive
 * elements there are consecutive registers, starting at a multiple of spt,
 * so with constancy k dividing spt, registers r and r - r % k hold equal
 * values (a mask `cols < N` with N divisible by 16 is computed once per
 * 8-element vector, not per element). Returns the run length (1: none). */
static int dedup_run(Lower *L, const IrValue *v)
{
	if (!L->ax || !ir_is_block(v->type) || !v->type->layout)
		return 1;
	Map m;
	map_init(NULL, v->type, &m);
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
	int64_t c = an_axis_get(L->ax, v)->constancy[vd];
	int k = m.dd[d0].spt;
	if (k > m.nd[d0])
		k = m.nd[d0];
	while (k > 1 && (c % k || m.dd[d0].spt % k || m.nd[d0] % k))
		k /= 2;
	return k < 1 ? 1 : k;
}

static void lower_elementwise(Lower *L, IrOp *op)
{
	int n = map_nregs(L, op->res[0].type);
	LLVMValueRef *out = regbuf(L, n);
	LLVMValueRef args[16];
	if (op->nops > 16) {
		fail(L, op, "too many operands for %s", ir_opinfo(op->opc)->name);
		return;
	}
	int k = dedup_run(L, &op->res[0]);
	for (int r = 0; r < n; r++) {
		if (k > 1 && r % k) { /* equal to the first element of its constant run */
			out[r] = out[r - r % k];
			continue;
		}
		for (int i = 0; i < op->nops; i++)
			args[i] = reg(L, op->ops[i], r);
		out[r] = elem(L, op, args);
	}
	set_vals(L, &op->res[0], n, out);
}

/* ------------------------------------------------------------------------- */
/* Sources and shapes                                                        */
/* ------------------------------------------------------------------------- */

static LLVMValueRef sreg(Lower *L, const char *name)
{
	return call_intr(L, name, NULL, 0, NULL, 0);
}

static void lower_constant(Lower *L, IrOp *op)
{
	const IrType *t = op->res[0].type;
	LLVMTypeRef ty = be_llty(L, t);
	const IrAttr *a = ir_op_attr(op, "value");
	LLVMValueRef v;
	if (ir_is_float(ir_scalar(t)))
		v = LLVMConstReal(ty, a ? (a->kind == ATTR_FLOAT ? a->f : (double)a->i) : 0);
	else if (ir_is_ptr(ir_scalar(t)))
		v = LLVMConstNull(ty);
	else
		v = LLVMConstInt(ty, (unsigned long long)(a ? (a->kind == ATTR_FLOAT ? (int64_t)a->f : a->i) : 0), 1);
	int n = map_nregs(L, t);
	LLVMValueRef *out = regbuf(L, n);
	for (int r = 0; r < n; r++)
		out[r] = v;
	set_vals(L, &op->res[0], n, out);
}

static void lower_make_range(Lower *L, IrOp *op)
{
	Map m;
	map_init(L, op->res[0].type, &m);
	int64_t start = ir_op_int(op, "start", 0);
	LLVMValueRef *out = regbuf(L, m.n);
	for (int r = 0; r < m.n; r++)
		out[r] = LLVMBuildAdd(L->b, map_coord(L, &m, r, 0), i32c(L, start), "");
	set_vals(L, &op->res[0], m.n, out);
}

static void lower_splat(Lower *L, IrOp *op)
{
	int n = map_nregs(L, op->res[0].type);
	LLVMValueRef *out = regbuf(L, n);
	for (int r = 0; r < n; r++)
		out[r] = reg(L, op->ops[0], 0);
	set_vals(L, &op->res[0], n, out);
}

static void lower_broadcast(Lower *L, IrOp *op)
{
	const IrType *st = op->ops[0]->type, *rt = op->res[0].type;
	if (!ir_is_block(st)) {
		lower_splat(L, op);
		return;
	}
	Map ms, mr;
	map_init(NULL, st, &ms);
	map_init(NULL, rt, &mr);
	LLVMValueRef *out = regbuf(L, mr.n);
	for (int r = 0; r < mr.n; r++) {
		int j[IR_MAX_RANK];
		map_local(&mr, r, j);
		for (int k = 0; k < rt->rank; k++)
			if (st->shape[k] == 1)
				j[mr.dimmap[k]] = 0;
		out[r] = reg(L, op->ops[0], map_reg(&ms, j));
	}
	set_vals(L, &op->res[0], mr.n, out);
}

/* Same registers, another type (expand_dims of a slice, hints, reshape when
 * the register order is unchanged). */
static void lower_identity(Lower *L, IrOp *op)
{
	Vals *s = vals_of(L, op->ops[0]);
	set_vals(L, &op->res[0], s->n, s->v);
}

/* Through scratch: dst register r reads src element index_of(r). */
typedef LLVMValueRef (*IndexFn)(Lower *L, IrOp *op, const Map *m, int r, int k);

static LLVMValueRef idx_same(Lower *L, IrOp *op, const Map *m, int r, int k)
{
	(void)k;
	return map_lin(L, m, op->res[0].type, r);
}

static LLVMValueRef idx_trans(Lower *L, IrOp *op, const Map *m, int r, int k)
{
	const IrType *st = op->ops[0]->type, *rt = op->res[0].type;
	const IrAttr *ord = ir_op_attr(op, "order");
	LLVMValueRef sc[IR_MAX_RANK];
	for (int i = 0; i < rt->rank; i++) {
		int sd = ord && i < ord->n ? (int)ord->ints[i] : rt->rank - 1 - i;
		sc[sd] = map_coord(L, m, r, i);
	}
	LLVMValueRef lin = i32c(L, 0);
	int64_t mul = 1;
	for (int d = st->rank - 1; d >= 0; d--) {
		lin = LLVMBuildAdd(L->b, lin, LLVMBuildMul(L->b, sc[d], i32c(L, mul), ""), "");
		mul *= st->shape[d];
	}
	(void)k;
	return lin;
}

static LLVMValueRef idx_split(Lower *L, IrOp *op, const Map *m, int r, int k)
{
	LLVMValueRef lin = map_lin(L, m, op->res[k].type, r);
	return LLVMBuildAdd(L->b, LLVMBuildMul(L->b, lin, i32c(L, 2), ""), i32c(L, k), "");
}

static void lower_exchange(Lower *L, IrOp *op, IndexFn fn)
{
	int64_t off = scratch_off(op);
	const IrType *st = op->ops[0]->type;
	write_block(L, op->ops[0], off);
	barrier(L);
	for (int k = 0; k < op->nres; k++) {
		Map m;
		map_init(L, op->res[k].type, &m);
		LLVMValueRef *out = regbuf(L, m.n);
		for (int r = 0; r < m.n; r++)
			out[r] = smem_load(L, st, off, fn(L, op, &m, r, k));
		set_vals(L, &op->res[k], m.n, out);
	}
}

/* ------------------------------------------------------------------------- */
/* Dot operands: shared memory -> ldmatrix                                    */
/* ------------------------------------------------------------------------- */

/* The operand tile [R][C] of 16-bit elements is staged row-major in scratch
 * with its 16-byte chunks swizzled: chunk c of row r is stored at chunk
 * c ^ key(r), key(r) = (r / (8 / nc)) % nc for nc = C / 8 < 8 chunks a row,
 * r % 8 otherwise. The 8 row addresses of one ldmatrix phase (8 rows, one
 * chunk each) then fall on 8 distinct 16-byte bank groups. */
static LLVMValueRef swizzled_index(Lower *L, LLVMValueRef row, LLVMValueRef col, int64_t C)
{
	LLVMBuilderRef B = L->b;
	int64_t nc = C / 8;
	LLVMValueRef key = nc >= 8 ? LLVMBuildAnd(B, row, i32c(L, 7), "")
				   : LLVMBuildURem(B, LLVMBuildUDiv(B, row, i32c(L, 8 / nc), ""), i32c(L, nc), "");
	LLVMValueRef chunk = LLVMBuildXor(B, LLVMBuildLShr(B, col, i32c(L, 3), ""), key, "");
	LLVMValueRef c = LLVMBuildOr(B, LLVMBuildShl(B, chunk, i32c(L, 3), ""), LLVMBuildAnd(B, col, i32c(L, 7), ""), "");
	return LLVMBuildAdd(B, LLVMBuildMul(B, row, i32c(L, C), ""), c, "");
}

static bool ldmatrix_ok(const IrOp *op)
{
	const IrType *t = op->res[0].type;
	IrTypeKind k = ir_scalar(t)->kind;
	return t->layout->kind == LAYOUT_DOT_OP && t->rank == 2 && (k == TY_F16 || k == TY_BF16) &&
	       t->shape[1] >= 16 && t->shape[0] >= 16;
}

/* Writes v (a 2-D block) into the swizzled tile at off: runs of up to 8
 * registers that are consecutive columns go out as one vector store. */
static void write_swizzled(Lower *L, const IrValue *v, int64_t off)
{
	Map m;
	map_init(L, v->type, &m);
	int64_t C = v->type->shape[1];
	int vec = 1;
	if (m.brank == 2 && m.dimmap[1] == 1 && m.order[0] == 1 && m.dd[1].estride == 1)
		vec = m.dd[1].spt < 8 ? m.dd[1].spt : 8;
	while (vec > 1 && m.nd[1] % vec)
		vec /= 2;
	LLVMTypeRef et = be_llty(L, v->type);
	for (int r = 0; r < m.n; r += vec) {
		LLVMValueRef idx = swizzled_index(L, map_coord(L, &m, r, 0), map_coord(L, &m, r, 1), C);
		LLVMValueRef p = smem_addr(L, off, idx, 2);
		if (vec == 1) {
			LLVMBuildStore(L->b, reg(L, v, r), p);
			continue;
		}
		LLVMValueRef x = LLVMGetUndef(LLVMVectorType(et, (unsigned)vec));
		for (int e = 0; e < vec; e++)
			x = LLVMBuildInsertElement(L->b, x, reg(L, v, r + e), i32c(L, e), "");
		LLVMSetAlignment(LLVMBuildStore(L->b, x, p), (unsigned)(2 * vec));
	}
}

/* One ldmatrix (x4 or x2, .trans for B) at the address of this lane. */
static void ldmatrix(Lower *L, int n, bool trans, LLVMValueRef addr, LLVMValueRef *out)
{
	LLVMTypeRef i32 = LLVMInt32TypeInContext(L->c);
	LLVMTypeRef rt[4] = {i32, i32, i32, i32};
	LLVMTypeRef rty = LLVMStructTypeInContext(L->c, rt, (unsigned)n, 0);
	LLVMTypeRef fty = LLVMFunctionType(rty, &i32, 1, 0);
	char text[128];
	snprintf(text, sizeof text, "ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16 {%s}, [$%d];", n,
		 trans ? ".trans" : "", n == 4 ? "$0,$1,$2,$3" : "$0,$1", n);
	const char *cons = n == 4 ? "=r,=r,=r,=r,r" : "=r,=r,r";
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, text, strlen(text), (char *)cons, strlen(cons), 1, 0,
					     LLVMInlineAsmDialectATT, 0);
	LLVMValueRef a = LLVMBuildTrunc(L->b, LLVMBuildPtrToInt(L->b, addr, LLVMInt64TypeInContext(L->c), ""), i32, "");
	LLVMValueRef d = LLVMBuildCall2(L->b, fty, asmv, &a, 1, "");
	for (int i = 0; i < n; i++)
		out[i] = LLVMBuildExtractValue(L->b, d, (unsigned)i, "");
}

/* Sets element registers (j0, j1) and (j0', j1') of a dot_op value from one
 * 32-bit ldmatrix register (two 16-bit elements, the first in the low half). */
static void unpack2(Lower *L, LLVMTypeRef et, LLVMValueRef x, const Map *m, LLVMValueRef *regs,
		    int j0, int j1, int k0, int k1)
{
	LLVMValueRef v = LLVMBuildBitCast(L->b, x, LLVMVectorType(et, 2), "");
	int ja[IR_MAX_RANK] = {j0, j1}, jb[IR_MAX_RANK] = {k0, k1};
	regs[map_reg(m, ja)] = LLVMBuildExtractElement(L->b, v, i32c(L, 0), "");
	regs[map_reg(m, jb)] = LLVMBuildExtractElement(L->b, v, i32c(L, 1), "");
}

/* blocked/mma -> dot_op for 16-bit operands: stage the tile (swizzled), then
 * ldmatrix the fragments. Lane l addresses row l % 8 of matrix l / 8.
 *   A [M][K], x4 per (mi, ki): matrices (rows +0/+8) x (K +0/+8) give
 *     a0a1, a2a3, a4a5, a6a7 (see lower_dot_mma);
 *   B [K][N], x4.trans per (ki, ni pair): matrices (K +0/+8) x (ni, ni + 1)
 *     give b0b1, b2b3 of ni, then of ni + 1 (x2 for a last single ni). */
static void read_dot_op(Lower *L, IrOp *op);
static void read_dot_op_at(Lower *L, IrOp *op, LLVMValueRef eoff);

static void lower_to_dot_op(Lower *L, IrOp *op)
{
	write_swizzled(L, op->ops[0], scratch_off(op));
	IrOp *n = an_staged_pair(op) && ldmatrix_ok(op->next) ? op->next : NULL;
	if (n) { /* the other operand's tile too (disjoint scratch), then one barrier */
		write_swizzled(L, n->ops[0], scratch_off(n));
		L->staged = n;
	}
	barrier(L);
	read_dot_op(L, op);
	if (n)
		read_dot_op(L, n);
}

static void read_dot_op(Lower *L, IrOp *op) { read_dot_op_at(L, op, NULL); }

/* The swizzled index of (row, col), plus eoff elements (a slot) when given. */
static LLVMValueRef slot_index(Lower *L, LLVMValueRef row, LLVMValueRef col, int64_t C, LLVMValueRef eoff)
{
	LLVMValueRef i = swizzled_index(L, row, col, C);
	return eoff ? LLVMBuildAdd(L->b, i, eoff, "") : i;
}

/* Reads op's dot_op result with ldmatrix from the swizzled tile at
 * scratch_offset + eoff elements. */
static void read_dot_op_at(Lower *L, IrOp *op, LLVMValueRef eoff)
{
	int64_t off = scratch_off(op);
	const IrType *t = op->res[0].type;
	int64_t C = t->shape[1];
	Map m;
	map_init(L, t, &m);
	LLVMTypeRef et = be_llty(L, t);
	LLVMValueRef *regs = regbuf(L, m.n);
	LLVMBuilderRef B = L->b;
	LLVMValueRef l8 = LLVMBuildAnd(B, L->lane, i32c(L, 7), "");
	LLVMValueRef q = LLVMBuildLShr(B, L->lane, i32c(L, 3), ""); /* matrix of this lane's address */
	LLVMValueRef q0 = LLVMBuildAnd(B, q, i32c(L, 1), ""), q1 = LLVMBuildLShr(B, q, i32c(L, 1), "");
	if (t->layout->opidx == 0) {
		const AnDimDist *dm = &m.dd[0];
		LLVMValueRef wrow = LLVMBuildMul(B, m.warp_d[0], i32c(L, dm->warp_unit), "");
		/* row within the 16-row tile: l % 8 + 8 * (matrix & 1); K: 8 * (matrix >> 1) */
		LLVMValueRef r16 = LLVMBuildAdd(B, LLVMBuildAdd(B, wrow, l8, ""), LLVMBuildShl(B, q0, i32c(L, 3), ""), "");
		LLVMValueRef k8 = LLVMBuildShl(B, q1, i32c(L, 3), "");
		int nm = m.nd[0] / 2, nk = m.nd[1] / 4;
		for (int mi = 0; mi < nm; mi++)
			for (int ki = 0; ki < nk; ki++) {
				LLVMValueRef row = LLVMBuildAdd(B, r16, i32c(L, mi * dm->tile), "");
				LLVMValueRef col = LLVMBuildAdd(B, k8, i32c(L, 16 * ki), "");
				LLVMValueRef x[4];
				ldmatrix(L, 4, false, smem_addr(L, off, slot_index(L, row, col, C, eoff), 2), x);
				unpack2(L, et, x[0], &m, regs, 2 * mi, 4 * ki, 2 * mi, 4 * ki + 1);
				unpack2(L, et, x[1], &m, regs, 2 * mi + 1, 4 * ki, 2 * mi + 1, 4 * ki + 1);
				unpack2(L, et, x[2], &m, regs, 2 * mi, 4 * ki + 2, 2 * mi, 4 * ki + 3);
				unpack2(L, et, x[3], &m, regs, 2 * mi + 1, 4 * ki + 2, 2 * mi + 1, 4 * ki + 3);
			}
	} else {
		const AnDimDist *dn = &m.dd[1];
		LLVMValueRef wcol = LLVMBuildMul(B, m.warp_d[1], i32c(L, dn->warp_unit), "");
		/* K row: l % 8 + 8 * (matrix & 1); N: the (matrix >> 1)-th tile of the pair */
		LLVMValueRef k16 = LLVMBuildAdd(B, l8, LLVMBuildShl(B, q0, i32c(L, 3), ""), "");
		LLVMValueRef npair = LLVMBuildMul(B, q1, i32c(L, dn->tile), "");
		int nk = m.nd[0] / 4, nn = m.nd[1];
		for (int ki = 0; ki < nk; ki++)
			for (int ni = 0; ni < nn; ni += 2) {
				int cnt = ni + 1 < nn ? 4 : 2;
				LLVMValueRef row = LLVMBuildAdd(B, k16, i32c(L, 16 * ki), "");
				LLVMValueRef col = LLVMBuildAdd(B, wcol, i32c(L, ni * dn->tile), "");
				if (cnt == 4)
					col = LLVMBuildAdd(B, col, npair, "");
				LLVMValueRef x[4];
				ldmatrix(L, cnt, true, smem_addr(L, off, slot_index(L, row, col, C, eoff), 2), x);
				for (int h = 0; h < cnt / 2; h++) {
					unpack2(L, et, x[2 * h], &m, regs, 4 * ki, ni + h, 4 * ki + 1, ni + h);
					unpack2(L, et, x[2 * h + 1], &m, regs, 4 * ki + 2, ni + h, 4 * ki + 3, ni + h);
				}
			}
	}
	set_vals(L, &op->res[0], m.n, regs);
}

/* ------------------------------------------------------------------------- */
/* Multi-buffered tiles: cp.async into swizzled slots, ldmatrix out           */
/* ------------------------------------------------------------------------- */

static int access_vec(Lower *L, const IrValue *p, const IrValue *mask, const Map *m);

static void inline_asm(Lower *L, const char *text, const char *cons, LLVMValueRef *args, int n)
{
	LLVMTypeRef at[4];
	for (int i = 0; i < n; i++)
		at[i] = LLVMTypeOf(args[i]);
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(L->c), at, (unsigned)n, 0);
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)cons, strlen(cons), 1, 0,
					     LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(L->b, fty, asmv, args, (unsigned)n, "");
}

/* async_copy: each thread copies its runs of consecutive columns (16, 8 or 4
 * bytes, within one 16-byte chunk) to the swizzled position in slot `slot`
 * (the layout write_swizzled gives a staged operand); a masked-off run
 * reads nothing and is written as zeros (src-size 0). */
static void lower_async_copy(Lower *L, IrOp *op)
{
	IrValue *p = op->ops[0];
	IrValue *mask = op->nops > 2 ? op->ops[2] : NULL;
	const IrType *t = p->type;
	int64_t eb = ebytes(ir_scalar(t)->elem);
	int64_t C = t->shape[1];
	Map m;
	map_init(L, t, &m);
	int vec = access_vec(L, p, mask, &m);
	if (m.brank != 2 || m.dimmap[1] != 1 || m.order[0] != 1)
		vec = 1;
	while (vec > 1 && (vec * eb > 16 || m.nd[1] % vec))
		vec /= 2;
	if (vec * eb < 4)
		fail(L, op, "async_copy needs runs of at least 4 bytes (got %d elements)", vec);
	if (vec * eb < 4)
		return;
	int bytes = (int)(vec * eb);
	LLVMValueRef eoff = LLVMBuildMul(L->b, reg(L, op->ops[1], 0), i32c(L, t->numel), "");
	char text[128];
	snprintf(text, sizeof text, "cp.async.%s.shared.global [$0], [$1], %d, $2;", bytes == 16 ? "cg" : "ca",
		 bytes);
	for (int r = 0; r < m.n; r += vec) {
		LLVMValueRef idx = slot_index(L, map_coord(L, &m, r, 0), map_coord(L, &m, r, 1), C, eoff);
		LLVMValueRef dst = smem_addr(L, scratch_off(op), idx, eb);
		LLVMValueRef d32 = LLVMBuildTrunc(L->b, LLVMBuildPtrToInt(L->b, dst, LLVMInt64TypeInContext(L->c), ""),
						  LLVMInt32TypeInContext(L->c), "");
		LLVMValueRef src = reg(L, p, r);
		LLVMValueRef sz = i32c(L, bytes);
		if (mask)
			sz = LLVMBuildSelect(L->b, reg(L, mask, r), sz, i32c(L, 0), "");
		LLVMValueRef args[3] = {d32, src, sz};
		inline_asm(L, text, "r,l,r,~{memory}", args, 3);
	}
}

static void lower_async_commit(Lower *L, IrOp *op)
{
	(void)op;
	inline_asm(L, "cp.async.commit_group;", "~{memory}", NULL, 0);
}

static void lower_async_wait(Lower *L, IrOp *op)
{
	char text[64];
	snprintf(text, sizeof text, "cp.async.wait_group %d;", (int)ir_op_int(op, "pending", 0));
	inline_asm(L, text, "~{memory}", NULL, 0);
}

static void lower_local_read(Lower *L, IrOp *op)
{
	if (!ldmatrix_ok(op))
		fail(L, op, "local_read needs a 16-bit 2-D dot operand layout");
	if (!ldmatrix_ok(op))
		return;
	LLVMValueRef eoff = LLVMBuildMul(L->b, reg(L, op->ops[0], 0), i32c(L, op->res[0].type->numel), "");
	read_dot_op_at(L, op, eoff);
}

static void lower_convert(Lower *L, IrOp *op)
{
	if (op == L->staged) { /* lowered with the first of its pair */
		L->staged = NULL;
		return;
	}
	if (ldmatrix_ok(op)) {
		lower_to_dot_op(L, op);
		return;
	}
	Map a, b;
	map_init(NULL, op->ops[0]->type, &a);
	map_init(NULL, op->res[0].type, &b);
	bool same = a.b == b.b && a.n == b.n && a.brank == b.brank;
	for (int d = 0; same && d < a.brank; d++)
		same = a.bs[d] == b.bs[d];
	if (same) { /* same distribution, e.g. slice vs. expanded parent */
		lower_identity(L, op);
		return;
	}
	lower_exchange(L, op, idx_same);
}

/* cat along dim 0 / join in a new minor dim of size 2. */
static void lower_two(Lower *L, IrOp *op)
{
	int64_t off0 = scratch_off(op);
	const IrType *st = op->ops[0]->type;
	int64_t n0 = ir_is_block(st) ? st->numel : 1;
	int64_t off1 = off0 + align16(n0 * ebytes(st));
	write_block(L, op->ops[0], off0);
	write_block(L, op->ops[1], off1);
	barrier(L);
	Map m;
	map_init(L, op->res[0].type, &m);
	LLVMValueRef *out = regbuf(L, m.n);
	for (int r = 0; r < m.n; r++) {
		LLVMValueRef lin = map_lin(L, &m, op->res[0].type, r);
		LLVMValueRef which, idx;
		if (op->opc == OP_JOIN) {
			which = LLVMBuildAnd(L->b, lin, i32c(L, 1), "");
			idx = LLVMBuildLShr(L->b, lin, i32c(L, 1), "");
		} else {
			which = LLVMBuildICmp(L->b, LLVMIntUGE, lin, i32c(L, n0), "");
			which = LLVMBuildZExt(L->b, which, LLVMInt32TypeInContext(L->c), "");
			idx = LLVMBuildSub(L->b, lin, LLVMBuildMul(L->b, which, i32c(L, n0), ""), "");
		}
		LLVMValueRef base = LLVMBuildAdd(L->b, i32c(L, off0), LLVMBuildMul(L->b, which, i32c(L, off1 - off0), ""), "");
		LLVMValueRef bytes = LLVMBuildAdd(L->b, base, LLVMBuildMul(L->b, idx, i32c(L, ebytes(st)), ""), "");
		LLVMValueRef p = LLVMBuildGEP2(L->b, LLVMInt8TypeInContext(L->c), L->smem, &bytes, 1, "");
		if (ir_scalar(st)->kind == TY_I1) {
			LLVMValueRef x = LLVMBuildLoad2(L->b, LLVMInt8TypeInContext(L->c), p, "");
			out[r] = LLVMBuildICmp(L->b, LLVMIntNE, x, LLVMConstInt(LLVMInt8TypeInContext(L->c), 0, 0), "");
		} else {
			out[r] = LLVMBuildLoad2(L->b, be_llty(L, st), p, "");
		}
	}
	set_vals(L, &op->res[0], m.n, out);
}

static void lower_gather(Lower *L, IrOp *op)
{
	int64_t off = scratch_off(op);
	const IrType *st = op->ops[0]->type, *rt = op->res[0].type;
	int axis = (int)ir_op_int(op, "axis", 0);
	write_block(L, op->ops[0], off);
	barrier(L);
	Map m;
	map_init(L, rt, &m);
	LLVMValueRef *out = regbuf(L, m.n);
	for (int r = 0; r < m.n; r++) {
		LLVMValueRef lin = i32c(L, 0);
		int64_t mul = 1;
		for (int d = rt->rank - 1; d >= 0; d--) {
			LLVMValueRef c = d == axis ? LLVMBuildIntCast2(L->b, reg(L, op->ops[1], r), LLVMInt32TypeInContext(L->c), 1, "")
						   : map_coord(L, &m, r, d);
			lin = LLVMBuildAdd(L->b, lin, LLVMBuildMul(L->b, c, i32c(L, mul), ""), "");
			mul *= st->shape[d];
		}
		out[r] = smem_load(L, st, off, lin);
	}
	set_vals(L, &op->res[0], m.n, out);
}

/* ------------------------------------------------------------------------- */
/* Memory                                                                    */
/* ------------------------------------------------------------------------- */

/* Vector width for the access through pointer block p with layout map m. */
static int access_vec(Lower *L, const IrValue *p, const IrValue *mask, const Map *m)
{
	if (!m->b)
		return 1;
	int d0 = m->order[0];
	if (m->dd[d0].estride != 1)
		return 1;
	int vd = -1;
	for (int k = 0; k < m->rank; k++)
		if (m->dimmap[k] == d0)
			vd = k;
	if (vd < 0)
		return 1;
	int v = an_access_vec(L->ax, p, mask, vd);
	if (v > m->dd[d0].spt)
		v = m->dd[d0].spt;
	if (v > m->nd[d0])
		v = m->nd[d0];
	if (ir_scalar(ir_scalar(p->type)->elem)->kind == TY_I1)
		v = 1;
	return v < 1 ? 1 : v;
}

static LLVMValueRef and_pred(Lower *L, LLVMValueRef a, LLVMValueRef b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return LLVMBuildAnd(L->b, a, b, "");
}

/* A masked global load of nw 32-bit words as one predicated PTX load:
 * the destination registers start as the default value and `@p ld` fills
 * them. Opaque to LLVM, so the loaded words stay packed until they are used
 * (a branch around an ordinary load lets LLVM sink conversions of the value
 * into the branch, e.g. f16 -> f32 of the whole vector, doubling the
 * registers that stay live). */
static LLVMValueRef pred_load(Lower *L, LLVMTypeRef vty, int nw, LLVMValueRef ptr, LLVMValueRef pred,
			      LLVMValueRef dflt)
{
	LLVMTypeRef i32 = LLVMInt32TypeInContext(L->c);
	LLVMTypeRef wty = nw > 1 ? LLVMVectorType(i32, (unsigned)nw) : i32;
	LLVMValueRef dw = LLVMBuildBitCast(L->b, dflt, wty, "");
	LLVMTypeRef rt[4] = {i32, i32, i32, i32};
	LLVMTypeRef sty = LLVMStructTypeInContext(L->c, rt, (unsigned)nw, 0);
	LLVMTypeRef at[6];
	LLVMValueRef args[6];
	at[0] = LLVMTypeOf(ptr);
	args[0] = ptr;
	at[1] = LLVMInt1TypeInContext(L->c);
	args[1] = pred;
	for (int i = 0; i < nw; i++) {
		at[2 + i] = i32;
		args[2 + i] = nw > 1 ? LLVMBuildExtractElement(L->b, dw, i32c(L, i), "") : dw;
	}
	LLVMTypeRef fty = LLVMFunctionType(sty, at, (unsigned)(2 + nw), 0);
	char text[256], cons[128];
	int o = 0, c = 0;
	for (int i = 0; i < nw; i++)
		o += snprintf(text + o, sizeof text - (size_t)o, "mov.b32 $%d, $%d;\n\t", i, nw + 2 + i);
	o += snprintf(text + o, sizeof text - (size_t)o, "@$%d ld.global%s.b32 {", nw + 1,
		      nw == 4 ? ".v4" : nw == 2 ? ".v2" : "");
	for (int i = 0; i < nw; i++)
		o += snprintf(text + o, sizeof text - (size_t)o, "%s$%d", i ? "," : "", i);
	snprintf(text + o, sizeof text - (size_t)o, "}, [$%d];", nw);
	for (int i = 0; i < nw; i++)
		c += snprintf(cons + c, sizeof cons - (size_t)c, "=&r,");
	c += snprintf(cons + c, sizeof cons - (size_t)c, "l,b");
	for (int i = 0; i < nw; i++)
		c += snprintf(cons + c, sizeof cons - (size_t)c, ",r");
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, text, strlen(text), cons, strlen(cons), 1, 0,
					     LLVMInlineAsmDialectATT, 0);
	LLVMValueRef d = LLVMBuildCall2(L->b, fty, asmv, args, (unsigned)(2 + nw), "");
	LLVMValueRef w = nw > 1 ? LLVMGetUndef(wty) : NULL;
	for (int i = 0; i < nw; i++) {
		LLVMValueRef x = LLVMBuildExtractValue(L->b, d, (unsigned)i, "");
		w = nw > 1 ? LLVMBuildInsertElement(L->b, w, x, i32c(L, i), "") : x;
	}
	return LLVMBuildBitCast(L->b, w, vty, "");
}

static void lower_load(Lower *L, IrOp *op)
{
	IrValue *p = op->ops[0];
	IrValue *mask = op->nops > 1 ? op->ops[1] : NULL;
	IrValue *other = op->nops > 2 ? op->ops[2] : NULL;
	const IrType *rt = op->res[0].type;
	const IrType *et = ir_scalar(rt);
	bool isbool = et->kind == TY_I1;
	LLVMTypeRef ety = isbool ? LLVMInt8TypeInContext(L->c) : be_llty(L, et);
	Map m;
	map_init(NULL, p->type, &m);
	int vec = ir_is_block(p->type) ? access_vec(L, p, mask, &m) : 1;
	LLVMTypeRef vty = vec > 1 ? LLVMVectorType(ety, (unsigned)vec) : ety;
	int n = m.n;
	LLVMValueRef *out = regbuf(L, n);
	bool vol = ir_op_int(op, "volatile", 0) != 0;
	for (int r = 0; r < n; r += vec) {
		LLVMValueRef ptr = reg(L, p, r);
		LLVMValueRef pred = mask ? reg(L, mask, r) : NULL;
		LLVMValueRef dflt;
		if (other) {
			if (vec == 1) {
				dflt = reg(L, other, r);
				if (isbool)
					dflt = LLVMBuildZExt(L->b, dflt, ety, "");
			} else {
				dflt = LLVMGetUndef(vty);
				for (int i = 0; i < vec; i++)
					dflt = LLVMBuildInsertElement(L->b, dflt, reg(L, other, r + i), i32c(L, i), "");
			}
		} else {
			dflt = LLVMConstNull(vty);
		}
		LLVMValueRef val;
		if (!pred) {
			val = LLVMBuildLoad2(L->b, vty, ptr, "");
			LLVMSetAlignment(val, (unsigned)(vec * ebytes(rt)));
			if (vol)
				LLVMSetVolatile(val, 1);
		} else if (!vol && !isbool && (vec * ebytes(rt)) % 4 == 0 && vec * ebytes(rt) <= 16) {
			val = pred_load(L, vty, (int)(vec * ebytes(rt) / 4), ptr, pred, dflt);
		} else {
			LLVMBasicBlockRef cur = LLVMGetInsertBlock(L->b);
			LLVMBasicBlockRef lb = new_bb(L, "ld"), jb = new_bb(L, "ld.end");
			LLVMBuildCondBr(L->b, pred, lb, jb);
			LLVMPositionBuilderAtEnd(L->b, lb);
			LLVMValueRef x = LLVMBuildLoad2(L->b, vty, ptr, "");
			LLVMSetAlignment(x, (unsigned)(vec * ebytes(rt)));
			if (vol)
				LLVMSetVolatile(x, 1);
			LLVMBuildBr(L->b, jb);
			LLVMPositionBuilderAtEnd(L->b, jb);
			val = LLVMBuildPhi(L->b, vty, "");
			LLVMValueRef iv[2] = {x, dflt};
			LLVMBasicBlockRef ib[2] = {lb, cur};
			LLVMAddIncoming(val, iv, ib, 2);
		}
		for (int i = 0; i < vec; i++) {
			LLVMValueRef x = vec > 1 ? LLVMBuildExtractElement(L->b, val, i32c(L, i), "") : val;
			if (isbool)
				x = LLVMBuildICmp(L->b, LLVMIntNE, x, LLVMConstInt(ety, 0, 0), "");
			out[r + i] = x;
		}
	}
	set_vals(L, &op->res[0], n, out);
}

static void lower_store(Lower *L, IrOp *op)
{
	IrValue *p = op->ops[0], *v = op->ops[1];
	IrValue *mask = op->nops > 2 ? op->ops[2] : NULL;
	const IrType *et = ir_scalar(v->type);
	bool isbool = et->kind == TY_I1;
	LLVMTypeRef ety = isbool ? LLVMInt8TypeInContext(L->c) : be_llty(L, et);
	Map m;
	map_init(L, p->type, &m);
	int vec = ir_is_block(p->type) ? access_vec(L, p, mask, &m) : 1;
	LLVMTypeRef vty = vec > 1 ? LLVMVectorType(ety, (unsigned)vec) : ety;
	LLVMValueRef owner = map_owner(L, &m);
	for (int r = 0; r < m.n; r += vec) {
		LLVMValueRef val = vec > 1 ? LLVMGetUndef(vty) : NULL;
		for (int i = 0; i < vec; i++) {
			LLVMValueRef x = reg(L, v, r + i);
			if (isbool)
				x = LLVMBuildZExt(L->b, x, ety, "");
			val = vec > 1 ? LLVMBuildInsertElement(L->b, val, x, i32c(L, i), "") : x;
		}
		LLVMValueRef pred = and_pred(L, owner, mask ? reg(L, mask, r) : NULL);
		LLVMBasicBlockRef jb = NULL;
		if (pred) {
			LLVMBasicBlockRef sb = new_bb(L, "st");
			jb = new_bb(L, "st.end");
			LLVMBuildCondBr(L->b, pred, sb, jb);
			LLVMPositionBuilderAtEnd(L->b, sb);
		}
		LLVMValueRef s = LLVMBuildStore(L->b, val, reg(L, p, r));
		LLVMSetAlignment(s, (unsigned)(vec * ebytes(v->type)));
		if (pred) {
			LLVMBuildBr(L->b, jb);
			LLVMPositionBuilderAtEnd(L->b, jb);
		}
	}
}

static LLVMAtomicOrdering ordering(const IrOp *op)
{
	const char *s = ir_op_str(op, "sem", "acq_rel");
	if (!strcmp(s, "relaxed")) return LLVMAtomicOrderingMonotonic;
	if (!strcmp(s, "acquire")) return LLVMAtomicOrderingAcquire;
	if (!strcmp(s, "release")) return LLVMAtomicOrderingRelease;
	return LLVMAtomicOrderingAcquireRelease;
}

static unsigned syncscope(Lower *L, const IrOp *op)
{
	const char *s = ir_op_str(op, "scope", "gpu");
	const char *n = !strcmp(s, "cta") ? "block" : !strcmp(s, "sys") ? "" : "device";
	return LLVMGetSyncScopeID(L->c, n, strlen(n));
}

static void lower_atomic(Lower *L, IrOp *op)
{
	IrValue *p = op->ops[0];
	bool cas = op->opc == OP_ATOMIC_CAS;
	IrValue *mask = !cas && op->nops > 2 ? op->ops[2] : NULL;
	const IrType *et = ir_scalar(op->res[0].type);
	LLVMTypeRef ety = be_llty(L, et);
	bool fl = ir_is_float(et);
	LLVMAtomicRMWBinOp bop = LLVMAtomicRMWBinOpAdd;
	if (!cas) {
		const char *k = ir_op_str(op, "kind", "add");
		bool s = ir_is_signed(et);
		if (!strcmp(k, "add")) bop = fl ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd;
		else if (!strcmp(k, "max")) bop = fl ? LLVMAtomicRMWBinOpFMax : s ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax;
		else if (!strcmp(k, "min")) bop = fl ? LLVMAtomicRMWBinOpFMin : s ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin;
		else if (!strcmp(k, "and")) bop = LLVMAtomicRMWBinOpAnd;
		else if (!strcmp(k, "or")) bop = LLVMAtomicRMWBinOpOr;
		else if (!strcmp(k, "xor")) bop = LLVMAtomicRMWBinOpXor;
		else if (!strcmp(k, "xchg")) bop = LLVMAtomicRMWBinOpXchg;
		else {
			fail(L, op, "unknown atomic kind %s", k);
			return;
		}
	}
	Map m;
	map_init(L, p->type, &m);
	LLVMValueRef owner = map_owner(L, &m);
	LLVMAtomicOrdering ord = ordering(op);
	unsigned ss = syncscope(L, op);
	LLVMValueRef *out = regbuf(L, m.n);
	for (int r = 0; r < m.n; r++) {
		LLVMValueRef pred = and_pred(L, owner, mask ? reg(L, mask, r) : NULL);
		LLVMBasicBlockRef cur = LLVMGetInsertBlock(L->b), ab = NULL, jb = NULL;
		if (pred) {
			ab = new_bb(L, "atom");
			jb = new_bb(L, "atom.end");
			LLVMBuildCondBr(L->b, pred, ab, jb);
			LLVMPositionBuilderAtEnd(L->b, ab);
		}
		LLVMValueRef old;
		if (cas) {
			LLVMValueRef x = LLVMBuildAtomicCmpXchgSyncScope(L->b, reg(L, p, r), reg(L, op->ops[1], r),
									 reg(L, op->ops[2], r), ord,
									 ord == LLVMAtomicOrderingAcquireRelease ? LLVMAtomicOrderingAcquire
									 : ord == LLVMAtomicOrderingRelease ? LLVMAtomicOrderingMonotonic : ord,
									 ss);
			old = LLVMBuildExtractValue(L->b, x, 0, "");
		} else {
			old = LLVMBuildAtomicRMWSyncScope(L->b, bop, reg(L, p, r), reg(L, op->ops[1], r), ord, ss);
		}
		if (pred) {
			LLVMBasicBlockRef end = LLVMGetInsertBlock(L->b);
			LLVMBuildBr(L->b, jb);
			LLVMPositionBuilderAtEnd(L->b, jb);
			LLVMValueRef phi = LLVMBuildPhi(L->b, ety, "");
			LLVMValueRef iv[2] = {old, LLVMGetUndef(ety)};
			LLVMBasicBlockRef ib[2] = {end, cur};
			LLVMAddIncoming(phi, iv, ib, 2);
			old = phi;
		}
		(void)ab;
		out[r] = old;
	}
	if (!ir_is_block(p->type)) {
		/* thread 0 did it: broadcast the old value */
		int64_t off = scratch_off(op);
		LLVMBasicBlockRef sb = new_bb(L, "bc"), jb = new_bb(L, "bc.end");
		LLVMBuildCondBr(L->b, owner, sb, jb);
		LLVMPositionBuilderAtEnd(L->b, sb);
		smem_store(L, op->res[0].type, off, i32c(L, 0), out[0]);
		LLVMBuildBr(L->b, jb);
		LLVMPositionBuilderAtEnd(L->b, jb);
		barrier(L);
		out[0] = smem_load(L, op->res[0].type, off, i32c(L, 0));
	}
	set_vals(L, &op->res[0], m.n, out);
}

/* ------------------------------------------------------------------------- */
/* Reductions and scans                                                      */
/* ------------------------------------------------------------------------- */

/* Runs the combiner region on (acc..., x...) -> acc'. */
static void combine(Lower *L, IrBlock *rb, int k, LLVMValueRef *acc, LLVMValueRef *x)
{
	for (int i = 0; i < k; i++) {
		set1(L, rb->args[i], acc[i]);
		set1(L, rb->args[k + i], x[i]);
	}
	IrOp *term = ir_block_terminator(rb);
	for (IrOp *op = rb->first; op && op != term; op = op->next) {
		lower_op(L, op);
	}
	for (int i = 0; i < k && term; i++)
		acc[i] = reg(L, term->ops[i], 0);
}

static LLVMValueRef shfl_bfly(Lower *L, LLVMValueRef v, int off)
{
	LLVMTypeRef ty = LLVMTypeOf(v), i32 = LLVMInt32TypeInContext(L->c);
	LLVMTypeKind k = LLVMGetTypeKind(ty);
	unsigned bits = k == LLVMFloatTypeKind ? 32 : k == LLVMDoubleTypeKind ? 64 : k == LLVMHalfTypeKind || k == LLVMBFloatTypeKind ? 16
		       : k == LLVMPointerTypeKind ? 64 : LLVMGetIntTypeWidth(ty);
	LLVMTypeRef ity = LLVMIntTypeInContext(L->c, bits);
	LLVMValueRef x = k == LLVMPointerTypeKind ? LLVMBuildPtrToInt(L->b, v, ity, "") : LLVMBuildBitCast(L->b, v, ity, "");
	LLVMValueRef res;
	LLVMValueRef full = LLVMConstInt(i32, 0xffffffffu, 0);
	if (bits <= 32) {
		LLVMValueRef w = bits < 32 ? LLVMBuildZExt(L->b, x, i32, "") : x;
		LLVMValueRef a[4] = {full, w, i32c(L, off), i32c(L, 0x1f)};
		res = call_intr(L, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, a, 4);
		if (bits < 32)
			res = LLVMBuildTrunc(L->b, res, ity, "");
	} else {
		LLVMValueRef lo = LLVMBuildTrunc(L->b, x, i32, "");
		LLVMValueRef hi = LLVMBuildTrunc(L->b, LLVMBuildLShr(L->b, x, LLVMConstInt(ity, 32, 0), ""), i32, "");
		LLVMValueRef a[4] = {full, lo, i32c(L, off), i32c(L, 0x1f)};
		lo = call_intr(L, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, a, 4);
		a[1] = hi;
		hi = call_intr(L, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, a, 4);
		res = LLVMBuildOr(L->b, LLVMBuildZExt(L->b, lo, ity, ""),
				  LLVMBuildShl(L->b, LLVMBuildZExt(L->b, hi, ity, ""), LLVMConstInt(ity, 32, 0), ""), "");
	}
	return k == LLVMPointerTypeKind ? LLVMBuildIntToPtr(L->b, res, ty, "") : LLVMBuildBitCast(L->b, res, ty, "");
}

#define MAXK 8

static void lower_reduce(Lower *L, IrOp *op)
{
	int k = op->nops;
	if (k > MAXK) {
		fail(L, op, "%s: too many inputs", "reduce");
		return;
	}
	IrBlock *rb = op->regions[0];
	const IrType *it = op->ops[0]->type;
	int axis = (int)ir_op_int(op, "axis", 0);
	Map mi;
	map_init(L, it, &mi);
	int d = mi.dimmap[axis];
	const IrType *rt = op->res[0].type;
	Map mr;
	map_init(L, rt, &mr);
	/* in-thread: result register <- inputs with the same other-dim indices */
	LLVMValueRef *acc[MAXK];
	bool *seen = ir_alloc(L->ctx, (size_t)mr.n);
	for (int i = 0; i < k; i++)
		acc[i] = regbuf(L, mr.n);
	for (int r = 0; r < mi.n; r++) {
		int j[IR_MAX_RANK];
		map_local(&mi, r, j);
		j[d] = 0;
		int rr = ir_is_block(rt) ? map_reg(&mr, j) : 0;
		LLVMValueRef a[MAXK], x[MAXK];
		for (int i = 0; i < k; i++)
			x[i] = reg(L, op->ops[i], r);
		if (!seen[rr]) {
			seen[rr] = true;
			for (int i = 0; i < k; i++)
				acc[i][rr] = x[i];
			continue;
		}
		for (int i = 0; i < k; i++)
			a[i] = acc[i][rr];
		combine(L, rb, k, a, x);
		for (int i = 0; i < k; i++)
			acc[i][rr] = a[i];
	}
	/* across lanes */
	for (int off = 1; off < mi.dl[d]; off *= 2) {
		for (int rr = 0; rr < mr.n; rr++) {
			LLVMValueRef a[MAXK], x[MAXK];
			for (int i = 0; i < k; i++) {
				a[i] = acc[i][rr];
				x[i] = shfl_bfly(L, a[i], off * mi.lane_stride[d]);
			}
			combine(L, rb, k, a, x);
			for (int i = 0; i < k; i++)
				acc[i][rr] = a[i];
		}
	}
	/* across warps */
	int W = mi.dw[d];
	if (W > 1) {
		int64_t base = scratch_off(op);
		int64_t seg[MAXK];
		int64_t rn = ir_is_block(rt) ? rt->numel : 1;
		for (int i = 0; i < k; i++) {
			seg[i] = base;
			base += align16(rn * W * ebytes(op->ops[i]->type));
		}
		LLVMValueRef wr = LLVMBuildAnd(L->b, LLVMBuildICmp(L->b, LLVMIntEQ, mi.lane_d[d], i32c(L, 0), ""),
					       LLVMBuildICmp(L->b, LLVMIntULT, mi.warp_d[d], i32c(L, W), ""), "");
		LLVMBasicBlockRef sb = new_bb(L, "red.st"), jb = new_bb(L, "red.end");
		LLVMBuildCondBr(L->b, wr, sb, jb);
		LLVMPositionBuilderAtEnd(L->b, sb);
		LLVMValueRef *lins = regbuf(L, mr.n);
		for (int rr = 0; rr < mr.n; rr++) {
			LLVMValueRef lin = map_lin(L, &mr, rt, rr);
			LLVMValueRef idx = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, lin, i32c(L, W), ""), mi.warp_d[d], "");
			for (int i = 0; i < k; i++)
				smem_store(L, op->ops[i]->type, seg[i], idx, acc[i][rr]);
		}
		LLVMBuildBr(L->b, jb);
		LLVMPositionBuilderAtEnd(L->b, jb);
		barrier(L);
		for (int rr = 0; rr < mr.n; rr++) {
			lins[rr] = LLVMBuildMul(L->b, map_lin(L, &mr, rt, rr), i32c(L, W), "");
			LLVMValueRef a[MAXK], x[MAXK];
			for (int i = 0; i < k; i++)
				a[i] = smem_load(L, op->ops[i]->type, seg[i], lins[rr]);
			for (int w = 1; w < W; w++) {
				LLVMValueRef idx = LLVMBuildAdd(L->b, lins[rr], i32c(L, w), "");
				for (int i = 0; i < k; i++)
					x[i] = smem_load(L, op->ops[i]->type, seg[i], idx);
				combine(L, rb, k, a, x);
			}
			for (int i = 0; i < k; i++)
				acc[i][rr] = a[i];
		}
	}
	for (int i = 0; i < k; i++)
		set_vals(L, &op->res[i], mr.n, acc[i]);
}

/* Inclusive scan through scratch: each element combines its prefix serially. */
static void lower_scan(Lower *L, IrOp *op)
{
	int k = op->nops;
	if (k > MAXK) {
		fail(L, op, "%s: too many inputs", "scan");
		return;
	}
	IrBlock *rb = op->regions[0];
	const IrType *t = op->ops[0]->type;
	int axis = (int)ir_op_int(op, "axis", 0);
	bool rev = ir_op_int(op, "reverse", 0) != 0;
	int64_t seg[MAXK], base = scratch_off(op);
	for (int i = 0; i < k; i++) {
		seg[i] = base;
		base += align16(t->numel * ebytes(op->ops[i]->type));
		write_block(L, op->ops[i], seg[i]);
	}
	barrier(L);
	Map m;
	map_init(L, t, &m);
	int64_t stride = 1;
	for (int d = t->rank - 1; d > axis; d--)
		stride *= t->shape[d];
	int64_t N = t->shape[axis];
	LLVMValueRef *out[MAXK];
	for (int i = 0; i < k; i++)
		out[i] = regbuf(L, m.n);
	LLVMTypeRef i32 = LLVMInt32TypeInContext(L->c);
	for (int r = 0; r < m.n; r++) {
		LLVMValueRef lin = map_lin(L, &m, t, r);
		LLVMValueRef ca = map_coord(L, &m, r, axis);
		LLVMValueRef s0 = LLVMBuildSub(L->b, lin, LLVMBuildMul(L->b, ca, i32c(L, stride), ""), "");
		/* k runs from the first element of the scan order to this one */
		LLVMValueRef first = rev ? i32c(L, N - 1) : i32c(L, 0);
		LLVMValueRef acc0[MAXK];
		for (int i = 0; i < k; i++)
			acc0[i] = smem_load(L, op->ops[i]->type, seg[i],
					    LLVMBuildAdd(L->b, s0, LLVMBuildMul(L->b, first, i32c(L, stride), ""), ""));
		LLVMBasicBlockRef pre = LLVMGetInsertBlock(L->b);
		LLVMBasicBlockRef hb = new_bb(L, "scan.h"), bb = new_bb(L, "scan.b"), eb = new_bb(L, "scan.e");
		LLVMBuildBr(L->b, hb);
		LLVMPositionBuilderAtEnd(L->b, hb);
		LLVMValueRef iv = LLVMBuildPhi(L->b, i32, "");
		LLVMValueRef phis[MAXK];
		for (int i = 0; i < k; i++)
			phis[i] = LLVMBuildPhi(L->b, LLVMTypeOf(acc0[i]), "");
		LLVMValueRef cond = rev ? LLVMBuildICmp(L->b, LLVMIntSGT, iv, ca, "") : LLVMBuildICmp(L->b, LLVMIntSLT, iv, ca, "");
		LLVMBuildCondBr(L->b, cond, bb, eb);
		LLVMPositionBuilderAtEnd(L->b, bb);
		LLVMValueRef nx = rev ? LLVMBuildSub(L->b, iv, i32c(L, 1), "") : LLVMBuildAdd(L->b, iv, i32c(L, 1), "");
		LLVMValueRef a[MAXK], x[MAXK];
		for (int i = 0; i < k; i++) {
			a[i] = phis[i];
			x[i] = smem_load(L, op->ops[i]->type, seg[i],
					 LLVMBuildAdd(L->b, s0, LLVMBuildMul(L->b, nx, i32c(L, stride), ""), ""));
		}
		combine(L, rb, k, a, x);
		LLVMBasicBlockRef latch = LLVMGetInsertBlock(L->b);
		LLVMBuildBr(L->b, hb);
		LLVMAddIncoming(iv, (LLVMValueRef[]){first, nx}, (LLVMBasicBlockRef[]){pre, latch}, 2);
		for (int i = 0; i < k; i++)
			LLVMAddIncoming(phis[i], (LLVMValueRef[]){acc0[i], a[i]}, (LLVMBasicBlockRef[]){pre, latch}, 2);
		LLVMPositionBuilderAtEnd(L->b, eb);
		for (int i = 0; i < k; i++)
			out[i][r] = phis[i];
	}
	for (int i = 0; i < k; i++)
		set_vals(L, &op->res[i], m.n, out[i]);
}

/* ------------------------------------------------------------------------- */
/* dot: mma.sync on tensor cores, else FMA through shared memory             */
/* ------------------------------------------------------------------------- */

/* Two 16-bit elements in one 32-bit register, lo in the low half. */
static LLVMValueRef pack2(Lower *L, LLVMValueRef lo, LLVMValueRef hi)
{
	LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(lo), 2);
	LLVMValueRef v = LLVMGetUndef(vt);
	v = LLVMBuildInsertElement(L->b, v, lo, i32c(L, 0), "");
	v = LLVMBuildInsertElement(L->b, v, hi, i32c(L, 1), "");
	return LLVMBuildBitCast(L->b, v, LLVMInt32TypeInContext(L->c), "");
}

/* Register of v (base layout map m) at per-dim register indices (j0, j1). */
static LLVMValueRef reg2(Lower *L, const IrValue *v, const Map *m, int j0, int j1)
{
	int j[IR_MAX_RANK] = {j0, j1};
	return reg(L, v, map_reg(m, j));
}

/* dot on tensor cores: A and B arrive in dot_op layouts, the accumulator in
 * the mma layout (see an_dim_dist), so each thread already holds exactly the
 * fragments of its warp's mma.sync.m16n8k16 instructions. Per 16 x 8 tile of
 * the warp (mi, ni) and 16-wide K step ki, with per-dim register indices:
 *   A: a0..a7 = (2mi + h, 4ki + q) for (h, q) = (0,0) (0,1) (1,0) (1,1)
 *                (0,2) (0,3) (1,2) (1,3), packed in pairs;
 *   B: b0..b3 = (4ki + q, ni) for q = 0..3, packed in pairs;
 *   C: c0..c3 = (2mi + h, 2ni + e) for (h, e) = (0,0) (0,1) (1,0) (1,1). */
static void lower_dot_mma(Lower *L, IrOp *op)
{
	const IrValue *A = op->ops[0], *B = op->ops[1], *C = op->ops[2];
	Map ma, mb, mc;
	map_init(NULL, A->type, &ma);
	map_init(NULL, B->type, &mb);
	map_init(NULL, C->type, &mc);
	int nm = mc.nd[0] / 2, nn = mc.nd[1] / 2, nk = (int)(A->type->shape[1] / 16);
	bool bf = ir_scalar(A->type)->kind == TY_BF16;
	LLVMTypeRef f32 = LLVMFloatTypeInContext(L->c), i32 = LLVMInt32TypeInContext(L->c);
	LLVMTypeRef rty = LLVMStructTypeInContext(L->c, (LLVMTypeRef[]){f32, f32, f32, f32}, 4, 0);
	LLVMTypeRef pty[10] = {i32, i32, i32, i32, i32, i32, f32, f32, f32, f32};
	LLVMTypeRef fty = LLVMFunctionType(rty, pty, 10, 0);
	char text[160];
	snprintf(text, sizeof text,
		 "mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, "
		 "{$10,$11,$12,$13};",
		 bf ? "bf16" : "f16", bf ? "bf16" : "f16");
	const char *cons = "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3";
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, text, strlen(text), (char *)cons, strlen(cons), 0, 0,
					     LLVMInlineAsmDialectATT, 0);
	LLVMValueRef *acc = regbuf(L, mc.n);
	for (int r = 0; r < mc.n; r++)
		acc[r] = reg(L, C, r);
	static const int ah[4] = {0, 1, 0, 1}, aq[4] = {0, 0, 2, 2};
	for (int ki = 0; ki < nk; ki++)
		for (int mi = 0; mi < nm; mi++) {
			LLVMValueRef a[4];
			for (int i = 0; i < 4; i++)
				a[i] = pack2(L, reg2(L, A, &ma, 2 * mi + ah[i], 4 * ki + aq[i]),
					     reg2(L, A, &ma, 2 * mi + ah[i], 4 * ki + aq[i] + 1));
			for (int ni = 0; ni < nn; ni++) {
				LLVMValueRef b0 = pack2(L, reg2(L, B, &mb, 4 * ki, ni), reg2(L, B, &mb, 4 * ki + 1, ni));
				LLVMValueRef b1 = pack2(L, reg2(L, B, &mb, 4 * ki + 2, ni), reg2(L, B, &mb, 4 * ki + 3, ni));
				int cr[4];
				for (int i = 0; i < 4; i++) {
					int j[IR_MAX_RANK] = {2 * mi + i / 2, 2 * ni + i % 2};
					cr[i] = map_reg(&mc, j);
				}
				LLVMValueRef args[10] = {a[0], a[1], a[2], a[3], b0, b1,
							 acc[cr[0]], acc[cr[1]], acc[cr[2]], acc[cr[3]]};
				LLVMValueRef d = LLVMBuildCall2(L->b, fty, asmv, args, 10, "");
				for (int i = 0; i < 4; i++)
					acc[cr[i]] = LLVMBuildExtractValue(L->b, d, (unsigned)i, "");
			}
		}
	set_vals(L, &op->res[0], mc.n, acc);
}

static void lower_dot(Lower *L, IrOp *op)
{
	if (op->res[0].type->layout->kind == LAYOUT_MMA) {
		lower_dot_mma(L, op);
		return;
	}
	const IrType *at = op->ops[0]->type, *bt = op->ops[1]->type, *ct = op->res[0].type;
	int64_t M = at->shape[0], K = at->shape[1], N = bt->shape[1];
	int64_t offa = scratch_off(op), offb = offa + align16(M * K * ebytes(at));
	write_block(L, op->ops[0], offa);
	write_block(L, op->ops[1], offb);
	barrier(L);
	Map m;
	map_init(L, ct, &m);
	LLVMTypeRef cty = be_llty(L, ct);
	bool fl = ir_is_float(ir_scalar(ct));
	int d0 = m.dimmap[0], d1 = m.dimmap[1];
	/* distinct rows / columns this thread needs */
	LLVMValueRef *rowlin = regbuf(L, m.nd[d0]), *collin = regbuf(L, m.nd[d1]);
	for (int r = 0; r < m.n; r++) {
		int j[IR_MAX_RANK];
		map_local(&m, r, j);
		if (!rowlin[j[d0]])
			rowlin[j[d0]] = LLVMBuildMul(L->b, map_coord(L, &m, r, 0), i32c(L, K), "");
		if (!collin[j[d1]])
			collin[j[d1]] = map_coord(L, &m, r, 1);
	}
	LLVMTypeRef i32 = LLVMInt32TypeInContext(L->c);
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(L->b);
	LLVMBasicBlockRef hb = new_bb(L, "dot.k"), eb = new_bb(L, "dot.end");
	LLVMBuildBr(L->b, hb);
	LLVMPositionBuilderAtEnd(L->b, hb);
	LLVMValueRef kv = LLVMBuildPhi(L->b, i32, "");
	LLVMValueRef *phis = regbuf(L, m.n), *nxt = regbuf(L, m.n);
	for (int r = 0; r < m.n; r++)
		phis[r] = LLVMBuildPhi(L->b, cty, "");
	LLVMValueRef *av = regbuf(L, m.nd[d0]), *bv = regbuf(L, m.nd[d1]);
	for (int i = 0; i < m.nd[d0]; i++)
		av[i] = cast(L, op, at, ct, smem_load(L, at, offa, LLVMBuildAdd(L->b, rowlin[i], kv, "")));
	LLVMValueRef kN = LLVMBuildMul(L->b, kv, i32c(L, N), "");
	for (int i = 0; i < m.nd[d1]; i++)
		bv[i] = cast(L, op, bt, ct, smem_load(L, bt, offb, LLVMBuildAdd(L->b, kN, collin[i], "")));
	for (int r = 0; r < m.n; r++) {
		int j[IR_MAX_RANK];
		map_local(&m, r, j);
		LLVMValueRef a = av[j[d0]], b = bv[j[d1]];
		if (fl)
			nxt[r] = call_intr(L, "llvm.fma", &cty, 1, (LLVMValueRef[]){a, b, phis[r]}, 3);
		else
			nxt[r] = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, a, b, ""), phis[r], "");
	}
	LLVMValueRef k1 = LLVMBuildAdd(L->b, kv, i32c(L, 1), "");
	LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntSLT, k1, i32c(L, K), ""), hb, eb);
	LLVMAddIncoming(kv, (LLVMValueRef[]){i32c(L, 0), k1}, (LLVMBasicBlockRef[]){pre, hb}, 2);
	for (int r = 0; r < m.n; r++)
		LLVMAddIncoming(phis[r], (LLVMValueRef[]){reg(L, op->ops[2], r), nxt[r]}, (LLVMBasicBlockRef[]){pre, hb}, 2);
	LLVMPositionBuilderAtEnd(L->b, eb);
	set_vals(L, &op->res[0], m.n, nxt);
}

/* ------------------------------------------------------------------------- */
/* Debugging                                                                 */
/* ------------------------------------------------------------------------- */

static LLVMValueRef global_str(Lower *L, const char *s)
{
	char name[32];
	snprintf(name, sizeof name, "ct_str%d", L->nstr++);
	LLVMValueRef init = LLVMConstStringInContext2(L->c, s, strlen(s), 0);
	LLVMValueRef g = LLVMAddGlobalInAddressSpace(L->m, LLVMTypeOf(init), name, 1);
	LLVMSetInitializer(g, init);
	LLVMSetGlobalConstant(g, 1);
	LLVMSetLinkage(g, LLVMInternalLinkage);
	return LLVMBuildAddrSpaceCast(L->b, g, LLVMPointerTypeInContext(L->c, 0), "");
}

static void lower_print(Lower *L, IrOp *op)
{
	LLVMTypeRef p0 = LLVMPointerTypeInContext(L->c, 0), i32 = LLVMInt32TypeInContext(L->c);
	LLVMTypeRef fty = LLVMFunctionType(i32, (LLVMTypeRef[]){p0, p0}, 2, 0);
	LLVMValueRef fn = LLVMGetNamedFunction(L->m, "vprintf");
	if (!fn)
		fn = LLVMAddFunction(L->m, "vprintf", fty);
	const char *prefix = ir_op_str(op, "prefix", "");
	bool hex = ir_op_int(op, "hex", 0) != 0;
	LLVMValueRef pid[3] = {sreg(L, "llvm.nvvm.read.ptx.sreg.ctaid.x"), sreg(L, "llvm.nvvm.read.ptx.sreg.ctaid.y"),
			       sreg(L, "llvm.nvvm.read.ptx.sreg.ctaid.z")};
	if (op->nops == 0) {
		char *fmt = ir_fmt(L->ctx, "pid (%%d, %%d, %%d) %s\n", prefix);
		LLVMTypeRef sty = LLVMStructTypeInContext(L->c, (LLVMTypeRef[]){i32, i32, i32}, 3, 0);
		LLVMValueRef buf = LLVMBuildAlloca(L->b, sty, "");
		for (int i = 0; i < 3; i++)
			LLVMBuildStore(L->b, pid[i], LLVMBuildStructGEP2(L->b, sty, buf, (unsigned)i, ""));
		LLVMBuildCall2(L->b, fty, fn, (LLVMValueRef[]){global_str(L, fmt), LLVMBuildAddrSpaceCast(L->b, buf, p0, "")}, 2, "");
		return;
	}
	for (int i = 0; i < op->nops; i++) {
		IrValue *v = op->ops[i];
		const IrType *et = ir_scalar(v->type);
		Map m;
		map_init(L, v->type, &m);
		const char *f = hex ? "0x%llx" : ir_is_float(et) ? "%f" : ir_is_ptr(et) ? "%p" : ir_is_signed(et) ? "%lld" : "%llu";
		char *fmt = ir_fmt(L->ctx, "pid (%%d, %%d, %%d) idx (%%d) %s%s\n", prefix, f);
		LLVMValueRef s = global_str(L, fmt);
		LLVMTypeRef vt = ir_is_float(et) && !hex ? LLVMDoubleTypeInContext(L->c) : ir_is_ptr(et) ? p0 : LLVMInt64TypeInContext(L->c);
		LLVMTypeRef sty = LLVMStructTypeInContext(L->c, (LLVMTypeRef[]){i32, i32, i32, i32, vt}, 5, 0);
		for (int r = 0; r < m.n; r++) {
			LLVMValueRef x = reg(L, v, r);
			if (ir_is_float(et))
				x = hex ? LLVMBuildZExt(L->b, LLVMBuildBitCast(L->b, x, LLVMIntTypeInContext(L->c, (unsigned)ir_type_bits(et)), ""), vt, "")
					: LLVMBuildFPExt(L->b, x, vt, "");
			else if (ir_is_ptr(et))
				x = LLVMBuildAddrSpaceCast(L->b, x, p0, "");
			else
				x = ir_is_signed(et) ? LLVMBuildSExt(L->b, x, vt, "") : LLVMBuildZExt(L->b, x, vt, "");
			if (LLVMTypeOf(x) != vt)
				x = LLVMBuildBitCast(L->b, x, vt, "");
			LLVMValueRef buf = LLVMBuildAlloca(L->b, sty, "");
			LLVMValueRef f4[5] = {pid[0], pid[1], pid[2], map_lin(L, &m, v->type, r), x};
			for (int q = 0; q < 5; q++)
				LLVMBuildStore(L->b, f4[q], LLVMBuildStructGEP2(L->b, sty, buf, (unsigned)q, ""));
			LLVMBuildCall2(L->b, fty, fn, (LLVMValueRef[]){s, LLVMBuildAddrSpaceCast(L->b, buf, p0, "")}, 2, "");
		}
	}
}

static void lower_assert(Lower *L, IrOp *op)
{
	LLVMTypeRef p0 = LLVMPointerTypeInContext(L->c, 0), i32 = LLVMInt32TypeInContext(L->c);
	LLVMTypeRef i64 = LLVMInt64TypeInContext(L->c);
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(L->c), (LLVMTypeRef[]){p0, p0, i32, p0, i64}, 5, 0);
	LLVMValueRef fn = LLVMGetNamedFunction(L->m, "__assertfail");
	if (!fn)
		fn = LLVMAddFunction(L->m, "__assertfail", fty);
	IrValue *c = op->ops[0];
	int n = map_nregs(L, c->type);
	LLVMValueRef ok = NULL;
	for (int r = 0; r < n; r++) {
		LLVMValueRef x = reg(L, c, r);
		if (LLVMGetIntTypeWidth(LLVMTypeOf(x)) != 1)
			x = LLVMBuildICmp(L->b, LLVMIntNE, x, LLVMConstInt(LLVMTypeOf(x), 0, 0), "");
		ok = ok ? LLVMBuildAnd(L->b, ok, x, "") : x;
	}
	LLVMBasicBlockRef fb = new_bb(L, "assert.fail"), jb = new_bb(L, "assert.ok");
	LLVMBuildCondBr(L->b, ok, jb, fb);
	LLVMPositionBuilderAtEnd(L->b, fb);
	LLVMValueRef args[5] = {global_str(L, ir_op_str(op, "msg", "assertion failed")),
				global_str(L, op->loc.file ? op->loc.file : "<unknown>"), i32c(L, op->loc.line),
				global_str(L, L->f->name), LLVMConstInt(i64, 1, 0)};
	LLVMBuildCall2(L->b, fty, fn, args, 5, "");
	LLVMBuildBr(L->b, jb);
	LLVMPositionBuilderAtEnd(L->b, jb);
}

/* ------------------------------------------------------------------------- */
/* Control flow                                                              */
/* ------------------------------------------------------------------------- */

static LLVMValueRef *phis_for(Lower *L, const IrType *t, int *n)
{
	*n = map_nregs(L, t);
	LLVMValueRef *p = regbuf(L, *n);
	for (int r = 0; r < *n; r++)
		p[r] = LLVMBuildPhi(L->b, be_llty(L, t), "");
	return p;
}

static void add_incoming(Lower *L, LLVMValueRef *phis, int n, const IrValue *v, LLVMBasicBlockRef from)
{
	for (int r = 0; r < n; r++) {
		LLVMValueRef x = reg(L, v, r);
		LLVMAddIncoming(phis[r], &x, &from, 1);
	}
}

static void lower_for(Lower *L, IrOp *op)
{
	IrBlock *body = op->regions[0];
	int ni = op->nops - 3;
	LLVMValueRef lb = reg(L, op->ops[0], 0), ub = reg(L, op->ops[1], 0), step = reg(L, op->ops[2], 0);
	bool uns = is_unsigned(op->ops[0]->type);
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(L->b);
	LLVMBasicBlockRef hb = new_bb(L, "for.h"), bb = new_bb(L, "for.b"), eb = new_bb(L, "for.e");
	LLVMBuildBr(L->b, hb);
	LLVMPositionBuilderAtEnd(L->b, hb);
	LLVMValueRef iv = LLVMBuildPhi(L->b, LLVMTypeOf(lb), "");
	LLVMAddIncoming(iv, &lb, &pre, 1);
	LLVMValueRef **phis = ir_alloc(L->ctx, sizeof(LLVMValueRef *) * (size_t)(ni + 1));
	int *np = ir_alloc(L->ctx, sizeof(int) * (size_t)(ni + 1));
	for (int i = 0; i < ni; i++) {
		phis[i] = phis_for(L, body->args[i + 1]->type, &np[i]);
		add_incoming(L, phis[i], np[i], op->ops[3 + i], pre);
	}
	LLVMValueRef cond = LLVMBuildICmp(L->b, uns ? LLVMIntULT : LLVMIntSLT, iv, ub, "");
	LLVMBuildCondBr(L->b, cond, bb, eb);
	LLVMPositionBuilderAtEnd(L->b, bb);
	set1(L, body->args[0], iv);
	for (int i = 0; i < ni; i++) {
		set_vals(L, body->args[i + 1], np[i], phis[i]);
		set_vals(L, &op->res[i], np[i], phis[i]);
	}
	lower_block(L, body);
	IrOp *y = ir_block_terminator(body);
	LLVMValueRef nx = LLVMBuildAdd(L->b, iv, step, "");
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(L->b);
	for (int i = 0; i < ni && y; i++)
		add_incoming(L, phis[i], np[i], y->ops[i], latch);
	LLVMAddIncoming(iv, &nx, &latch, 1);
	LLVMBuildBr(L->b, hb);
	LLVMPositionBuilderAtEnd(L->b, eb);
}

static void lower_if(Lower *L, IrOp *op)
{
	LLVMValueRef c = reg(L, op->ops[0], 0);
	LLVMBasicBlockRef tb = new_bb(L, "if.t"), fb = new_bb(L, "if.f"), jb = new_bb(L, "if.e");
	LLVMBuildCondBr(L->b, c, tb, fb);
	LLVMBasicBlockRef ends[2];
	IrOp *ys[2];
	for (int k = 0; k < 2; k++) {
		LLVMPositionBuilderAtEnd(L->b, k ? fb : tb);
		lower_block(L, op->regions[k]);
		ys[k] = ir_block_terminator(op->regions[k]);
		ends[k] = LLVMGetInsertBlock(L->b);
		LLVMBuildBr(L->b, jb);
	}
	LLVMPositionBuilderAtEnd(L->b, jb);
	for (int i = 0; i < op->nres; i++) {
		int n;
		LLVMValueRef *p = phis_for(L, op->res[i].type, &n);
		for (int k = 0; k < 2; k++)
			if (ys[k])
				add_incoming(L, p, n, ys[k]->ops[i], ends[k]);
		set_vals(L, &op->res[i], n, p);
	}
}

static void lower_while(Lower *L, IrOp *op)
{
	IrBlock *before = op->regions[0], *after = op->regions[1];
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(L->b);
	LLVMBasicBlockRef hb = new_bb(L, "while.h"), ab = new_bb(L, "while.b"), eb = new_bb(L, "while.e");
	LLVMBuildBr(L->b, hb);
	LLVMPositionBuilderAtEnd(L->b, hb);
	int ni = op->nops;
	LLVMValueRef **phis = ir_alloc(L->ctx, sizeof(LLVMValueRef *) * (size_t)(ni + 1));
	int *np = ir_alloc(L->ctx, sizeof(int) * (size_t)(ni + 1));
	for (int i = 0; i < ni; i++) {
		phis[i] = phis_for(L, before->args[i]->type, &np[i]);
		add_incoming(L, phis[i], np[i], op->ops[i], pre);
		set_vals(L, before->args[i], np[i], phis[i]);
	}
	lower_block(L, before);
	IrOp *cond = ir_block_terminator(before);
	if (!cond) {
		fail(L, op, "%s without condition", "while");
		return;
	}
	for (int i = 0; i + 1 < cond->nops; i++) {
		Vals *fv = vals_of(L, cond->ops[i + 1]);
		set_vals(L, after->args[i], fv->n, fv->v);
		set_vals(L, &op->res[i], fv->n, fv->v);
	}
	LLVMBuildCondBr(L->b, reg(L, cond->ops[0], 0), ab, eb);
	LLVMPositionBuilderAtEnd(L->b, ab);
	lower_block(L, after);
	IrOp *y = ir_block_terminator(after);
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(L->b);
	for (int i = 0; i < ni && y; i++)
		add_incoming(L, phis[i], np[i], y->ops[i], latch);
	LLVMBuildBr(L->b, hb);
	LLVMPositionBuilderAtEnd(L->b, eb);
}

/* ------------------------------------------------------------------------- */

void lower_op(Lower *L, IrOp *op)
{
	if (L->err)
		return;
	unsigned fl = ir_opinfo(op->opc)->flags;
	switch (op->opc) {
	case OP_CONSTANT: lower_constant(L, op); return;
	case OP_PROGRAM_ID:
	case OP_NUM_PROGRAMS: {
		static const char *ids[2][3] = {
			{"llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.ctaid.y", "llvm.nvvm.read.ptx.sreg.ctaid.z"},
			{"llvm.nvvm.read.ptx.sreg.nctaid.x", "llvm.nvvm.read.ptx.sreg.nctaid.y", "llvm.nvvm.read.ptx.sreg.nctaid.z"}};
		int axis = (int)ir_op_int(op, "axis", 0);
		if (axis < 0 || axis > 2)
			axis = 0;
		set1(L, &op->res[0], sreg(L, ids[op->opc == OP_NUM_PROGRAMS][axis]));
		return;
	}
	case OP_MAKE_RANGE: lower_make_range(L, op); return;
	case OP_SPLAT: lower_splat(L, op); return;
	case OP_BROADCAST: lower_broadcast(L, op); return;
	case OP_EXPAND_DIMS:
	case OP_MULTIPLE_OF:
	case OP_MAX_CONTIGUOUS:
	case OP_MAX_CONSTANCY:
		lower_identity(L, op);
		return;
	case OP_CONVERT_LAYOUT: lower_convert(L, op); return;
	case OP_RESHAPE: lower_exchange(L, op, idx_same); return;
	case OP_TRANS: lower_exchange(L, op, idx_trans); return;
	case OP_SPLIT: lower_exchange(L, op, idx_split); return;
	case OP_CAT:
	case OP_JOIN: lower_two(L, op); return;
	case OP_GATHER: lower_gather(L, op); return;
	case OP_LOAD: lower_load(L, op); return;
	case OP_STORE: lower_store(L, op); return;
	case OP_ATOMIC_RMW:
	case OP_ATOMIC_CAS: lower_atomic(L, op); return;
	case OP_REDUCE: lower_reduce(L, op); return;
	case OP_SCAN: lower_scan(L, op); return;
	case OP_DOT: lower_dot(L, op); return;
	case OP_ASSUME: return;
	case OP_PRINT: lower_print(L, op); return;
	case OP_ASSERT: lower_assert(L, op); return;
	case OP_BARRIER: barrier(L); return;
	case OP_ASYNC_COPY: lower_async_copy(L, op); return;
	case OP_ASYNC_COMMIT: lower_async_commit(L, op); return;
	case OP_ASYNC_WAIT: lower_async_wait(L, op); return;
	case OP_LOCAL_READ: lower_local_read(L, op); return;
	case OP_FOR: lower_for(L, op); return;
	case OP_IF: lower_if(L, op); return;
	case OP_WHILE: lower_while(L, op); return;
	case OP_YIELD:
	case OP_CONDITION: return;
	case OP_RETURN: LLVMBuildRetVoid(L->b); return;
	default:
		break;
	}
	if (fl & IR_ELEM) {
		lower_elementwise(L, op);
		return;
	}
	fail(L, op, "op %s is not supported by the NVPTX backend yet", ir_opinfo(op->opc)->name);
}

void lower_block(Lower *L, IrBlock *blk)
{
	for (IrOp *op = blk->first; op && !L->err; op = op->next)
		lower_op(L, op);
}
