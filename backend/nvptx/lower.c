/* lower.c: the core of the per-thread lowering of a TTGIR kernel to LLVM IR,
 * used by every op family: intrinsic and libdevice calls, the value map
 * (every IR value -> the LLVM values this thread holds for it, one per
 * owned element in the register order of its layout, see map.c), and shared
 * scratch at an op's "scratch_offset" (layouts of the scratch:
 * analysis/alloc.c). A scratch user writes, waits at a barrier, then reads;
 * the barrier before the next writer is an explicit `barrier` op inserted by
 * the analysis.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvptx.h"

LLVMValueRef nv_i32(Nv *nv, int64_t v)
{
	return LLVMConstInt(LLVMInt32TypeInContext(nv->c), (unsigned long long)v, 1);
}

void nv_fail(Nv *nv, const IrOp *op, const char *fmt, ...)
{
	if (nv->err)
		return;
	va_list ap;
	va_start(ap, fmt);
	char *msg = ir_vfmt(nv->ctx, fmt, ap);
	va_end(ap);
	nv->err = ir_error(nv->ctx, IR_ERR_BACKEND, op ? op->loc : (IrLoc){0}, "%s", msg);
}

LLVMTypeRef nv_llty(Nv *nv, const IrType *t)
{
	t = ir_scalar(t);
	switch (t->kind) {
	case TY_I1: return LLVMInt1TypeInContext(nv->c);
	case TY_I8: case TY_U8: case TY_F8E4M3: case TY_F8E5M2: case TY_F8E4B15: case TY_F8E4B8: case TY_F8E5B16:
		return LLVMInt8TypeInContext(nv->c);
	case TY_I16: case TY_U16: return LLVMInt16TypeInContext(nv->c);
	case TY_I32: case TY_U32: return LLVMInt32TypeInContext(nv->c);
	case TY_I64: case TY_U64: return LLVMInt64TypeInContext(nv->c);
	case TY_F16: return LLVMHalfTypeInContext(nv->c);
	case TY_BF16: return LLVMBFloatTypeInContext(nv->c);
	case TY_F32: return LLVMFloatTypeInContext(nv->c);
	case TY_F64: return LLVMDoubleTypeInContext(nv->c);
	case TY_PTR: return LLVMPointerTypeInContext(nv->c, (unsigned)t->addrspace);
	default: return LLVMInt32TypeInContext(nv->c);
	}
}

LLVMValueRef nv_intrinsic(Nv *nv, const char *name, LLVMTypeRef *tys, int ntys, LLVMValueRef *args, int nargs)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	if (!id) {
		nv_fail(nv, NULL, "unknown LLVM intrinsic %s", name);
		return LLVMGetUndef(LLVMInt32TypeInContext(nv->c));
	}
	LLVMTypeRef own[1];
	if (ntys == 0 && nargs > 0 && LLVMIntrinsicIsOverloaded(id)) {
		/* e.g. llvm.nvvm.ex2.approx.f32 names an overload of its first operand */
		own[0] = LLVMTypeOf(args[0]);
		tys = own;
		ntys = 1;
	}
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(nv->m, id, tys, (size_t)ntys);
	LLVMTypeRef fty = LLVMIntrinsicGetType(nv->c, id, tys, (size_t)ntys);
	return LLVMBuildCall2(nv->b, fty, fn, args, (unsigned)nargs, "");
}

/* A libdevice function (linked in later). */
LLVMValueRef nv_libdevice(Nv *nv, const char *name, LLVMTypeRef ret, LLVMValueRef *args, int n)
{
	LLVMTypeRef ptys[8];
	for (int i = 0; i < n && i < 8; i++)
		ptys[i] = LLVMTypeOf(args[i]);
	LLVMTypeRef fty = LLVMFunctionType(ret, ptys, (unsigned)n, 0);
	LLVMValueRef fn = LLVMGetNamedFunction(nv->m, name);
	if (!fn)
		fn = LLVMAddFunction(nv->m, name, fty);
	nv->need_libdevice = true;
	return LLVMBuildCall2(nv->b, fty, fn, args, (unsigned)n, "");
}

/* ------------------------------------------------------------------------- */
/* Values                                                                    */
/* ------------------------------------------------------------------------- */

NvVals *nv_vals(Nv *nv, const IrValue *v)
{
	if (v->id < 0 || v->id >= nv->nvals)
		abort();
	return &nv->vals[v->id];
}

void nv_set(Nv *nv, const IrValue *v, int n, LLVMValueRef *regs)
{
	NvVals *d = nv_vals(nv, v);
	d->n = n;
	d->v = ir_alloc(nv->ctx, sizeof(LLVMValueRef) * (size_t)(n > 0 ? n : 1));
	memcpy(d->v, regs, sizeof(LLVMValueRef) * (size_t)n);
}

void nv_set1(Nv *nv, const IrValue *v, LLVMValueRef x)
{
	nv_set(nv, v, 1, &x);
}

/* Register r of v (scalars: the one value). A value not lowered (its op
 * failed, and the ops around it still ask for it, e.g. a loop's yield) or a
 * register it lacks is undef, with an error if none was reported yet. */
LLVMValueRef nv_reg(Nv *nv, const IrValue *v, int r)
{
	NvVals *d = nv_vals(nv, v);
	if (d->v && d->n > 0 && (d->n == 1 || (r >= 0 && r < d->n)))
		return d->n == 1 ? d->v[0] : d->v[r];
	if (!nv->err)
		nv_fail(nv, v->def, "internal error: %s", d->v && d->n > 0 ? "register index out of range"
									     : "value used before it was lowered");
	return LLVMGetUndef(d->v && d->n > 0 ? LLVMTypeOf(d->v[0]) : nv_llty(nv, v->type));
}

LLVMValueRef *nv_regbuf(Nv *nv, int n)
{
	return ir_alloc(nv->ctx, sizeof(LLVMValueRef) * (size_t)(n > 0 ? n : 1));
}

LLVMValueRef nv_and_pred(Nv *nv, LLVMValueRef a, LLVMValueRef b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return LLVMBuildAnd(nv->b, a, b, "");
}

LLVMBasicBlockRef nv_new_bb(Nv *nv, const char *name)
{
	return LLVMAppendBasicBlockInContext(nv->c, nv->fn, name);
}

LLVMBasicBlockRef nv_open_when(Nv *nv, LLVMValueRef cond, const char *name)
{
	char end[64];
	snprintf(end, sizeof end, "%s.end", name);
	LLVMBasicBlockRef tb = nv_new_bb(nv, name), jb = nv_new_bb(nv, end);
	LLVMBuildCondBr(nv->b, cond, tb, jb);
	LLVMPositionBuilderAtEnd(nv->b, tb);
	return jb;
}

void nv_close_when(Nv *nv, LLVMBasicBlockRef jb)
{
	LLVMBuildBr(nv->b, jb);
	LLVMPositionBuilderAtEnd(nv->b, jb);
}

/* One PTX statement without operands, ordered with memory (a "memory"
 * clobber, side effects). */
void nv_asm_void(Nv *nv, const char *text)
{
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(nv->c), NULL, 0, 0);
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)"~{memory}", 9, 1, 0,
					     LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(nv->b, fty, asmv, NULL, 0, "");
}

/* A barrier of the CTA's threads; in a warp-specialized kernel, of the
 * consumer warps (named barrier 1: the producer runs no barrier). */
void nv_barrier(Nv *nv)
{
	if (nv->ws_warps) {
		LLVMValueRef a[2] = {nv_i32(nv, 1), nv_i32(nv, nv->ao.num_warps * nv->ao.warp_size)};
		nv_intrinsic(nv, "llvm.nvvm.barrier.cta.sync.aligned.count", NULL, 0, a, 2);
		return;
	}
	nv_intrinsic(nv, "llvm.nvvm.barrier.cta.sync.aligned.all", NULL, 0, (LLVMValueRef[]){nv_i32(nv, 0)}, 1);
}

/* A warp shuffle of v (any scalar type: narrower values widened to 32 bits,
 * 64-bit ones moved as two halves) over the whole warp: mode "bfly" (b is
 * the lane mask to xor) or "idx" (b is the source lane). */
LLVMValueRef nv_shfl(Nv *nv, const char *mode, LLVMValueRef v, LLVMValueRef b)
{
	LLVMTypeRef ty = LLVMTypeOf(v), i32 = LLVMInt32TypeInContext(nv->c);
	LLVMTypeKind k = LLVMGetTypeKind(ty);
	unsigned bits = k == LLVMFloatTypeKind                             ? 32
			: k == LLVMDoubleTypeKind                          ? 64
			: k == LLVMHalfTypeKind || k == LLVMBFloatTypeKind ? 16
			: k == LLVMPointerTypeKind                         ? 64
									   : LLVMGetIntTypeWidth(ty);
	LLVMTypeRef ity = LLVMIntTypeInContext(nv->c, bits);
	LLVMValueRef x =
		k == LLVMPointerTypeKind ? LLVMBuildPtrToInt(nv->b, v, ity, "") : LLVMBuildBitCast(nv->b, v, ity, "");
	char name[48];
	snprintf(name, sizeof name, "llvm.nvvm.shfl.sync.%s.i32", mode);
	LLVMValueRef res;
	LLVMValueRef full = LLVMConstInt(i32, 0xffffffffu, 0);
	if (bits <= 32) {
		LLVMValueRef w = bits < 32 ? LLVMBuildZExt(nv->b, x, i32, "") : x;
		LLVMValueRef a[4] = {full, w, b, nv_i32(nv, 0x1f)};
		res = nv_intrinsic(nv, name, NULL, 0, a, 4);
		if (bits < 32)
			res = LLVMBuildTrunc(nv->b, res, ity, "");
	} else {
		LLVMValueRef lo = LLVMBuildTrunc(nv->b, x, i32, "");
		LLVMValueRef hi = LLVMBuildTrunc(nv->b, LLVMBuildLShr(nv->b, x, LLVMConstInt(ity, 32, 0), ""), i32, "");
		LLVMValueRef a[4] = {full, lo, b, nv_i32(nv, 0x1f)};
		lo = nv_intrinsic(nv, name, NULL, 0, a, 4);
		a[1] = hi;
		hi = nv_intrinsic(nv, name, NULL, 0, a, 4);
		res = LLVMBuildOr(nv->b, LLVMBuildZExt(nv->b, lo, ity, ""),
				  LLVMBuildShl(nv->b, LLVMBuildZExt(nv->b, hi, ity, ""), LLVMConstInt(ity, 32, 0), ""),
				  "");
	}
	return k == LLVMPointerTypeKind ? LLVMBuildIntToPtr(nv->b, res, ty, "") : LLVMBuildBitCast(nv->b, res, ty, "");
}

/* ------------------------------------------------------------------------- */
/* Shared scratch                                                            */
/* ------------------------------------------------------------------------- */

int64_t nv_esize(const IrType *t)
{
	int b = ir_type_bits(ir_scalar(t)) / 8;
	return b < 1 ? 1 : b;
}

LLVMValueRef nv_smem_addr(Nv *nv, int64_t byte_off, LLVMValueRef idx, int64_t esize)
{
	LLVMTypeRef i8 = LLVMInt8TypeInContext(nv->c);
	LLVMValueRef off = LLVMBuildAdd(nv->b, nv_i32(nv, byte_off), LLVMBuildMul(nv->b, idx, nv_i32(nv, esize), ""), "");
	return LLVMBuildGEP2(nv->b, i8, nv->smem, &off, 1, "");
}

/* Inline PTX takes shared addresses as 32-bit registers. Computed from the
 * 64-bit pointer and truncated, the arithmetic stays 64-bit (LLVM moves the
 * truncation after it: sign-extended offsets, 64-bit shifts), and ptxas
 * keeps it so; from the array's 32-bit address it is 32-bit throughout. */
LLVMValueRef nv_smem_addr32(Nv *nv, int64_t byte_off, LLVMValueRef idx, int64_t esize)
{
	LLVMValueRef off = nv_i32(nv, byte_off);
	if (idx)
		off = LLVMBuildAdd(nv->b, off, LLVMBuildMul(nv->b, idx, nv_i32(nv, esize), ""), "");
	return LLVMBuildAdd(nv->b, nv->smem32, off, "");
}

void nv_smem_store(Nv *nv, const IrType *t, int64_t off, LLVMValueRef idx, LLVMValueRef v)
{
	LLVMValueRef p = nv_smem_addr(nv, off, idx, nv_esize(t));
	if (ir_scalar(t)->kind == TY_I1)
		v = LLVMBuildZExt(nv->b, v, LLVMInt8TypeInContext(nv->c), "");
	LLVMBuildStore(nv->b, v, p);
}

LLVMValueRef nv_smem_load(Nv *nv, const IrType *t, int64_t off, LLVMValueRef idx)
{
	LLVMValueRef p = nv_smem_addr(nv, off, idx, nv_esize(t));
	if (ir_scalar(t)->kind == TY_I1) {
		LLVMValueRef x = LLVMBuildLoad2(nv->b, LLVMInt8TypeInContext(nv->c), p, "");
		return LLVMBuildICmp(nv->b, LLVMIntNE, x, LLVMConstInt(LLVMInt8TypeInContext(nv->c), 0, 0), "");
	}
	return LLVMBuildLoad2(nv->b, nv_llty(nv, t), p, "");
}

int64_t nv_scratch_off(const IrOp *op)
{
	return ir_op_int(op, "scratch_offset", 0);
}

/* Writes every register of v to scratch at off + row-major index. */
void nv_write_block(Nv *nv, const IrValue *v, int64_t off)
{
	NvMap m;
	nv_map_init(nv, v->type, &m);
	for (int r = 0; r < m.n; r++)
		nv_smem_store(nv, v->type, off, nv_map_lin(nv, &m, v->type, r), nv_reg(nv, v, r));
}
