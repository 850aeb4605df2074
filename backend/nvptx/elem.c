/* elem.c: elementwise ops, register by register. The semantics of one
 * element are backend/scalar.c's (be_scalar_op, shared with the CPU); this
 * file gives it the GPU's types (f16 and bf16 as LLVM half / bfloat, run
 * natively where that gives the same result, and + - * contracted into fma
 * as Triton lets ptxas do), its math (ex2/lg2.approx for f32 exp/log, exp2
 * and sqrt/rsqrt.approx flushing subnormals as in Triton, sqrt rounded when
 * rounding = "rn", libdevice for the rest) and libdevice externs, and lowers
 * addptr. Runs of equal values that axis
 * info proves along the fastest dim are computed once (dedup_run).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/scalar.h"
#include "nvptx.h"

static const double LOG2E = 1.4426950408889634;
static const double LN2 = 0.6931471805599453;

/* Whether op runs inside a loop. */
bool nv_in_loop(const IrOp *op)
{
	for (const IrOp *p = op->parent ? op->parent->parent_op : NULL; p; p = p->parent ? p->parent->parent_op : NULL)
		if (p->opc == OP_FOR || p->opc == OP_WHILE)
			return true;
	return false;
}

bool nv_is_unsigned(const IrType *t)
{
	t = ir_scalar(t);
	return ir_is_int(t) && !ir_is_signed(t);
}

static LLVMValueRef fconst(LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

/* Math on x, an f32 or f64 (narrow floats arrive as f32). */
static LLVMValueRef math(void *user, const IrOp *op, LLVMValueRef x)
{
	Nv *nv = user;
	LLVMTypeRef f32 = LLVMFloatTypeInContext(nv->c);
	LLVMTypeRef ty = LLVMTypeOf(x);
	bool d = LLVMGetTypeKind(ty) == LLVMDoubleTypeKind;
	LLVMValueRef args[1] = {x};
	switch (op->opc) {
	case OP_EXP:
		if (d)
			return nv_libdevice(nv, "__nv_exp", ty, args, 1);
		args[0] = LLVMBuildFMul(nv->b, x, fconst(f32, LOG2E), "");
		return nv_intrinsic(nv, "llvm.nvvm.ex2.approx.f32", NULL, 0, args, 1);
	case OP_EXP2: /* subnormal results flush to zero, as in Triton */
		if (d)
			return nv_libdevice(nv, "__nv_exp2", ty, args, 1);
		return nv_intrinsic(nv, nv->opt->enable_reflect_ftz ? "llvm.nvvm.ex2.approx.ftz.f32" : "llvm.nvvm.ex2.approx.f32",
				    NULL, 0, args, 1);
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
		return nv_intrinsic(nv, nv->opt->enable_reflect_ftz ? "llvm.nvvm.sqrt.approx.ftz.f" : "llvm.nvvm.sqrt.approx.f",
				    NULL, 0, args, 1);
	case OP_RSQRT:
		if (d)
			return nv_libdevice(nv, "__nv_rsqrt", ty, args, 1);
		return nv_intrinsic(nv, nv->opt->enable_reflect_ftz ? "llvm.nvvm.rsqrt.approx.ftz.f" : "llvm.nvvm.rsqrt.approx.f",
				    NULL, 0, args, 1);
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

static LLVMTypeRef sem_type(void *user, const IrType *t)
{
	return nv_llty(user, t);
}

static LLVMValueRef sem_ext(void *user, const IrOp *op, LLVMValueRef *xs)
{
	Nv *nv = user;
	const char *sym = ir_op_str(op, "symbol", NULL);
	LLVMTypeRef rt = nv_llty(nv, op->res[0].type);
	if (!sym) {
		nv_fail(nv, op, "extern without %s", "symbol");
		return LLVMGetUndef(rt);
	}
	return nv_libdevice(nv, sym, rt, xs, op->nops);
}

static void sem_fail(void *user, const IrOp *op, const char *msg)
{
	nv_fail(user, op, "%s: %s", op ? ir_opinfo(op->opc)->name : "cast", msg);
}

/* `/` on floats as Triton lowers it: f32 by div.full.f32 (within 2 ulp,
 * no subroutine call), f64 correctly rounded; tl.div_rn and
 * fdiv(ieee_rounding=True) carry rounding = "rn" and never get here. */
static LLVMValueRef fdiv(void *user, const IrOp *op, LLVMValueRef x, LLVMValueRef y)
{
	Nv *nv = user;
	(void)op;
	if (LLVMGetTypeKind(LLVMTypeOf(x)) != LLVMFloatTypeKind)
		return LLVMBuildFDiv(nv->b, x, y, "");
	LLVMValueRef a[2] = {x, y};
	return nv_intrinsic(nv, "llvm.nvvm.div.full", NULL, 0, a, 2);
}

/* One inline-asm conversion: result type rt, operand x, constraints cons. */
static LLVMValueRef cvt_asm(Nv *nv, const char *text, const char *cons, LLVMTypeRef rt, LLVMValueRef x)
{
	LLVMTypeRef at = LLVMTypeOf(x);
	LLVMTypeRef fty = LLVMFunctionType(rt, &at, 1, 0);
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)cons, strlen(cons), 0, 0,
					     LLVMInlineAsmDialectATT, 0);
	return LLVMBuildCall2(nv->b, fty, asmv, &x, 1, "");
}

/* e4m3 and e5m2 on sm_89 and later: cvt.rn.satfinite.{e4m3,e5m2}x2.f32
 * (rounded to nearest even, finite overflow and infinities to +-max, NaN
 * to NaN: scalar.c's semantics) with the value in the low byte, and back
 * through cvt.rn.f16x2.{e4m3,e5m2}x2 (exact) and f16 -> f32. Rounding
 * toward zero, the other formats and constants (which the integer
 * arithmetic folds) keep the integer arithmetic. */
static const char *hw_f8(const Nv *nv, IrTypeKind k)
{
	if (nv->ao.arch < 89 || nv->ptx < 78)
		return NULL;
	return k == TY_F8E4M3 ? "e4m3" : k == TY_F8E5M2 ? "e5m2" : NULL;
}

static LLVMValueRef f32_to_f8(void *user, LLVMValueRef x, IrTypeKind k, bool rtz)
{
	Nv *nv = user;
	const char *f = hw_f8(nv, k);
	/* a constant: the integer code folds it to its fp8 code */
	if (!f || rtz || LLVMGetTypeKind(LLVMTypeOf(x)) != LLVMFloatTypeKind || LLVMIsConstant(x))
		return NULL;
	char text[96];
	snprintf(text, sizeof text, "cvt.rn.satfinite.%sx2.f32 $0, 0f00000000, $1;", f);
	LLVMValueRef h = cvt_asm(nv, text, "=h,f", LLVMInt16TypeInContext(nv->c), x);
	return LLVMBuildTrunc(nv->b, h, LLVMInt8TypeInContext(nv->c), "");
}

static LLVMValueRef f8_to_f32(void *user, LLVMValueRef x, IrTypeKind k)
{
	Nv *nv = user;
	const char *f = hw_f8(nv, k);
	if (!f || LLVMGetTypeKind(LLVMTypeOf(x)) != LLVMIntegerTypeKind || LLVMGetIntTypeWidth(LLVMTypeOf(x)) != 8 ||
	    LLVMIsConstant(x))
		return NULL;
	char text[128];
	snprintf(text, sizeof text, "{\n.reg .b32 t;\n.reg .b16 hi;\ncvt.rn.f16x2.%sx2 t, $1;\nmov.b32 {$0, hi}, t;\n}", f);
	LLVMValueRef w = LLVMBuildZExt(nv->b, x, LLVMInt16TypeInContext(nv->c), "");
	LLVMValueRef h = cvt_asm(nv, text, "=h,h", LLVMInt16TypeInContext(nv->c), w);
	h = LLVMBuildBitCast(nv->b, h, LLVMHalfTypeInContext(nv->c), "");
	return LLVMBuildFPExt(nv->b, h, LLVMFloatTypeInContext(nv->c), "");
}

/* The shared scalar semantics with the GPU's types, math and externs. */
static BeScalar sem(Nv *nv)
{
	return (BeScalar){.c = nv->c,
			  .m = nv->m,
			  .b = nv->b,
			  .bf16_bits = false,
			  .narrow_native = true,
			  .contract = nv->opt->enable_fp_fusion,
			  .type = sem_type,
			  .math = math,
			  .fdiv = fdiv,
			  .ext = sem_ext,
			  .f64_to_f16 = NULL,
			  .f32_to_f8 = f32_to_f8,
			  .f8_to_f32 = f8_to_f32,
			  .fail = sem_fail,
			  .user = nv};
}

LLVMValueRef nv_cast(Nv *nv, IrOp *op, const IrType *from, const IrType *to, LLVMValueRef x)
{
	BeScalar s = sem(nv);
	return be_scalar_cast(&s, op, x, from, to, false);
}

/* One element of an elementwise op: a[] are the operands' registers. */
static LLVMValueRef elem(Nv *nv, IrOp *op, LLVMValueRef *a)
{
	if (op->opc == OP_ADDPTR) {
		const IrType *pt = ir_scalar(op->ops[0]->type);
		LLVMTypeRef et = nv_llty(nv, pt->elem);
		if (pt->elem->kind == TY_I1)
			et = LLVMInt8TypeInContext(nv->c);
		return LLVMBuildGEP2(nv->b, et, a[0], &a[1], 1, "");
	}
	BeScalar s = sem(nv);
	return be_scalar_op(&s, op, a);
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

/* A pointer block plus a scalar offset (a splat: a fused nest's K step in
 * its copies' addresses) as one byte offset for every register, its sign
 * extension hidden from LLVM: it would make it a widening multiply, and
 * ptxas a widening multiply-add per pointer (IMAD.WIDE), which beside the
 * warpgroup MMAs cost tutorial 09's persistent kernel 6% on an H100. As a
 * conversion, a shift and 64-bit adds it is an IADD3 and an IMAD.X a
 * pointer, the offset made once. NULL where the offset is not such a
 * scalar. */
static LLVMValueRef scalar_byte_offset(Nv *nv, IrOp *op)
{
	if (op->opc != OP_ADDPTR || op->nops != 2 || !ir_is_block(op->ops[0]->type))
		return NULL;
	const IrOp *sd = op->ops[1]->def;
	if (!sd || sd->opc != OP_SPLAT)
		return NULL;
	LLVMValueRef x = nv_reg(nv, op->ops[1], 0);
	if (LLVMGetTypeKind(LLVMTypeOf(x)) != LLVMIntegerTypeKind || LLVMGetIntTypeWidth(LLVMTypeOf(x)) != 32 ||
	    LLVMIsConstant(x))
		return NULL;
	const IrType *pt = ir_scalar(op->ops[0]->type);
	int es = pt->elem->kind == TY_I1 ? 1 : ir_type_bits(pt->elem) / 8, sh = 0;
	while ((1 << sh) < es)
		sh++;
	if ((1 << sh) != es)
		return NULL;
	LLVMTypeRef i64 = LLVMInt64TypeInContext(nv->c), i32 = LLVMTypeOf(x);
	LLVMTypeRef fty = LLVMFunctionType(i64, &i32, 1, 0);
	const char *text = "cvt.s64.s32 $0, $1;", *cons = "=l,r";
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)cons, strlen(cons), 0, 0,
					     LLVMInlineAsmDialectATT, 0);
	LLVMValueRef w = LLVMBuildCall2(nv->b, fty, asmv, &x, 1, "");
	/* it touches no memory: nothing else in the loop is kept in place by it */
	static const char *const attrs[] = {"nounwind", "willreturn"};
	for (int k = 0; k < 2; k++)
		LLVMAddCallSiteAttribute(w, LLVMAttributeFunctionIndex,
					 LLVMCreateEnumAttribute(nv->c, LLVMGetEnumAttributeKindForName(attrs[k], strlen(attrs[k])), 0));
	LLVMAddCallSiteAttribute(w, LLVMAttributeFunctionIndex,
				 LLVMCreateEnumAttribute(nv->c, LLVMGetEnumAttributeKindForName("memory", 6), 0));
	return sh ? LLVMBuildShl(nv->b, w, LLVMConstInt(i64, (unsigned long long)sh, 0), "") : w;
}

/* Whether registers 2i and 2i + 1 of v are neighbours along the layout's
 * fastest dim (each thread's spt consecutive elements there are
 * consecutive registers). */
static bool paired_regs(const IrValue *v)
{
	if (!ir_is_block(v->type) || !v->type->layout)
		return false;
	NvMap m;
	nv_map_init(NULL, v->type, &m);
	if (!m.b || m.brank < 1)
		return false;
	int d0 = m.order[0];
	return m.dd[d0].estride == 1 && m.stride[d0] == 1 && m.dd[d0].spt % 2 == 0 && m.nd[d0] % 2 == 0;
}

/* f32 -> f16 or bf16 truncations of neighbouring registers as one vector
 * truncation, cvt.rn.{f16,bf16}x2.f32 into the packed register the stores
 * and stmatrix take. Element-wise, the halves end in 16-bit registers of
 * their own wherever the pack is in another block (an accumulator
 * converted after its loop, stored after the epilogue's barrier), and
 * ptxas packs them in place and then moves each pair into the consecutive
 * registers of the store: 52 moves in tutorial 03's epilogue at 128 x 256.
 * The rounding is the same. Not in loops: there the packed registers can
 * cost more than the moves (a persistent matmul's epilogue at 128 x 256
 * with 8 warps went from 249 registers to 255). */
static void pair_truncations(Nv *nv, LLVMValueRef *out, int n)
{
	LLVMTypeRef f32 = LLVMFloatTypeInContext(nv->c);
	for (int r = 0; r + 1 < n; r += 2) {
		LLVMValueRef x = out[r], y = out[r + 1];
		/* only this op's own truncations, used by nothing yet */
		if (x == y || !LLVMIsAInstruction(x) || !LLVMIsAInstruction(y) || LLVMGetFirstUse(x) ||
		    LLVMGetFirstUse(y) || LLVMGetInstructionOpcode(x) != LLVMFPTrunc ||
		    LLVMGetInstructionOpcode(y) != LLVMFPTrunc || LLVMTypeOf(LLVMGetOperand(x, 0)) != f32 ||
		    LLVMTypeOf(LLVMGetOperand(y, 0)) != f32)
			continue;
		LLVMTypeRef et = LLVMTypeOf(x);
		LLVMValueRef v = LLVMGetUndef(LLVMVectorType(f32, 2));
		v = LLVMBuildInsertElement(nv->b, v, LLVMGetOperand(x, 0), nv_i32(nv, 0), "");
		v = LLVMBuildInsertElement(nv->b, v, LLVMGetOperand(y, 0), nv_i32(nv, 1), "");
		v = LLVMBuildFPTrunc(nv->b, v, LLVMVectorType(et, 2), "");
		out[r] = LLVMBuildExtractElement(nv->b, v, nv_i32(nv, 0), "");
		out[r + 1] = LLVMBuildExtractElement(nv->b, v, nv_i32(nv, 1), "");
		LLVMInstructionEraseFromParent(x);
		LLVMInstructionEraseFromParent(y);
	}
}

/* e5m2 -> f16 casts of two registers that are bytes i and i + 1 (i even)
 * of one 32-bit word (an ldmatrix read of an fp8 operand, dot.c
 * read_kw4_ldmatrix): one byte permute gives both halves, each the byte
 * shifted up by 8 (be_scalar_cast), as an f16x2 the MMA takes as it is.
 * Element by element, the shifts and packs cost 5 instructions a pair in
 * the K loop (fp8 128x128x128 on sm_80: 640 PRMT and 577 IMAD a loop,
 * Triton 256 and 32). */
static bool byte_of(LLVMValueRef x, LLVMValueRef *v, unsigned long long *e)
{
	if (!LLVMIsAExtractElementInst(x))
		return false;
	LLVMValueRef i = LLVMGetOperand(x, 1);
	*v = LLVMGetOperand(x, 0);
	LLVMTypeRef vt = LLVMTypeOf(*v);
	if (!LLVMIsAConstantInt(i) || LLVMGetTypeKind(vt) != LLVMVectorTypeKind || LLVMGetVectorSize(vt) != 4 ||
	    LLVMGetElementType(vt) != LLVMInt8TypeInContext(LLVMGetTypeContext(vt)))
		return false;
	*e = LLVMConstIntGetZExtValue(i);
	return true;
}

static void pair_e5m2_upcasts(Nv *nv, IrOp *op, LLVMValueRef *out, int n)
{
	LLVMTypeRef i8 = LLVMInt8TypeInContext(nv->c), i32 = LLVMInt32TypeInContext(nv->c);
	bool *done = calloc((size_t)n, sizeof *done);
	if (!done)
		return; /* the element-wise casts stand */
	for (int r = 0; r < n; r++) {
		LLVMValueRef v, w;
		unsigned long long e, f;
		if (!byte_of(nv_reg(nv, op->ops[0], r), &v, &e) || e % 2)
			continue;
		int r1 = -1; /* the register holding byte e + 1 (B's come an N tile apart) */
		for (int s = 0; s < n && r1 < 0; s++)
			if (s != r && byte_of(nv_reg(nv, op->ops[0], s), &w, &f) && w == v && f == e + 1)
				r1 = s;
		if (r1 < 0)
			continue;
		LLVMValueRef mask[4] = {nv_i32(nv, 0), LLVMConstInt(i32, 4 + e, 0), nv_i32(nv, 0),
					LLVMConstInt(i32, 5 + e, 0)};
		LLVMValueRef sh = LLVMBuildShuffleVector(nv->b, LLVMConstNull(LLVMVectorType(i8, 4)), v,
							 LLVMConstVector(mask, 4), "");
		LLVMValueRef h = LLVMBuildBitCast(nv->b, sh, LLVMVectorType(LLVMHalfTypeInContext(nv->c), 2), "");
		out[r] = LLVMBuildExtractElement(nv->b, h, nv_i32(nv, 0), "");
		out[r1] = LLVMBuildExtractElement(nv->b, h, nv_i32(nv, 1), "");
		done[r] = done[r1] = true;
	}
	/* a dot operand's K pairs (registers 2j, 2j + 1) of bytes read one by
	 * one (a [K][N] B, two rows a pair): one permute of the two bytes */
	const IrLayout *l = op->res[0].type->layout;
	for (int r = 0; l && l->kind == LAYOUT_DOT_OP && r + 1 < n; r += 2) {
		LLVMValueRef b0 = nv_reg(nv, op->ops[0], r), b1 = nv_reg(nv, op->ops[0], r + 1);
		if (done[r] || done[r + 1] || LLVMTypeOf(b0) != i8 || LLVMTypeOf(b1) != i8)
			continue;
		/* bytes (b0, b1) zero-extended: 0, b0, 0, b1 from low to high */
		LLVMValueRef args[2] = {LLVMBuildZExt(nv->b, b0, i32, ""), LLVMBuildZExt(nv->b, b1, i32, "")};
		LLVMTypeRef pt[2] = {i32, i32};
		LLVMTypeRef fty = LLVMFunctionType(i32, pt, 2, 0);
		static const char text[] = "prmt.b32 $0, $1, $2, 0x4101;", cons[] = "=r,r,r";
		LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, sizeof text - 1, (char *)cons, sizeof cons - 1,
						     0, 0, LLVMInlineAsmDialectATT, 0);
		LLVMValueRef w = LLVMBuildCall2(nv->b, fty, asmv, args, 2, "");
		LLVMValueRef h = LLVMBuildBitCast(nv->b, w, LLVMVectorType(LLVMHalfTypeInContext(nv->c), 2), "");
		out[r] = LLVMBuildExtractElement(nv->b, h, nv_i32(nv, 0), "");
		out[r + 1] = LLVMBuildExtractElement(nv->b, h, nv_i32(nv, 1), "");
	}
	free(done);
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
	LLVMValueRef ob = scalar_byte_offset(nv, op);
	if (ob) {
		LLVMTypeRef i8 = LLVMInt8TypeInContext(nv->c);
		for (int r = 0; r < n; r++)
			out[r] = LLVMBuildGEP2(nv->b, i8, nv_reg(nv, op->ops[0], r), &ob, 1, "");
		nv_set(nv, &op->res[0], n, out);
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
	if (op->opc == OP_CAST && k == 1 && ir_scalar(op->ops[0]->type)->kind == TY_F32 &&
	    (ir_scalar(op->res[0].type)->kind == TY_F16 || ir_scalar(op->res[0].type)->kind == TY_BF16) &&
	    !nv_in_loop(op) && paired_regs(&op->res[0]))
		pair_truncations(nv, out, n);
	if (op->opc == OP_CAST && k == 1 && ir_scalar(op->ops[0]->type)->kind == TY_F8E5M2 &&
	    ir_scalar(op->res[0].type)->kind == TY_F16)
		pair_e5m2_upcasts(nv, op, out, n);
	nv_set(nv, &op->res[0], n, out);
}

void nv_lower_map(Nv *nv, IrOp *op)
{
	int pack = (int)ir_op_int(op, "pack", 1);
	int n = nv_map_nregs(nv, op->res[0].type);
	IrBlock *r = op->regions[0];
	IrOp *y = ir_block_terminator(r);
	if (!y || y->nops != op->nres * pack) {
		nv_fail(nv, op, "map_elementwise: the region must yield %d values", op->nres * pack);
		return;
	}
	LLVMValueRef **out = ir_alloc(nv->ctx, sizeof(LLVMValueRef *) * (size_t)op->nres);
	for (int i = 0; i < op->nres; i++)
		out[i] = ir_alloc(nv->ctx, sizeof(LLVMValueRef) * (size_t)(n + pack));
	/* the thread's elements, pack at a time; a last group it does not fill
	 * runs on zeros and its results are dropped */
	for (int base = 0; base < n; base += pack) {
		for (int i = 0; i < op->nops; i++)
			for (int j = 0; j < pack; j++)
				nv_set1(nv, r->args[i * pack + j],
					base + j < n ? nv_reg(nv, op->ops[i], base + j)
						     : LLVMConstNull(nv_llty(nv, op->ops[i]->type)));
		nv_lower_block(nv, r);
		for (int i = 0; i < op->nres; i++)
			for (int j = 0; j < pack; j++)
				out[i][base + j] = nv_reg(nv, y->ops[i * pack + j], 0);
	}
	for (int i = 0; i < op->nres; i++)
		nv_set(nv, &op->res[i], n, out[i]);
}
