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
#include <stdlib.h>
#include <string.h>

#include "nvptx.h"

LLVMValueRef i32c(Lower *L, int64_t v)
{
	return LLVMConstInt(LLVMInt32TypeInContext(L->c), (unsigned long long)v, 1);
}

void fail(Lower *L, const IrOp *op, const char *fmt, ...)
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
LLVMValueRef call_dev(Lower *L, const char *name, LLVMTypeRef ret, LLVMValueRef *args, int n)
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

Vals *vals_of(Lower *L, const IrValue *v)
{
	if (v->id < 0 || v->id >= L->nvals)
		abort();
	return &L->vals[v->id];
}

void set_vals(Lower *L, const IrValue *v, int n, LLVMValueRef *regs)
{
	Vals *d = vals_of(L, v);
	d->n = n;
	d->v = ir_alloc(L->ctx, sizeof(LLVMValueRef) * (size_t)(n > 0 ? n : 1));
	memcpy(d->v, regs, sizeof(LLVMValueRef) * (size_t)n);
}

void set1(Lower *L, const IrValue *v, LLVMValueRef x)
{
	set_vals(L, v, 1, &x);
}

/* Register r of v (scalars: the one value). */
LLVMValueRef reg(Lower *L, const IrValue *v, int r)
{
	Vals *d = vals_of(L, v);
	if (!d->v || d->n == 0) {
		abort();
	}
	return d->n == 1 ? d->v[0] : d->v[r];
}

LLVMValueRef *regbuf(Lower *L, int n)
{
	return ir_alloc(L->ctx, sizeof(LLVMValueRef) * (size_t)(n > 0 ? n : 1));
}

LLVMBasicBlockRef new_bb(Lower *L, const char *name)
{
	return LLVMAppendBasicBlockInContext(L->c, L->fn, name);
}

void barrier(Lower *L)
{
	call_intr(L, "llvm.nvvm.barrier.cta.sync.aligned.all", NULL, 0, (LLVMValueRef[]){i32c(L, 0)}, 1);
}

/* ------------------------------------------------------------------------- */
/* Shared scratch                                                            */
/* ------------------------------------------------------------------------- */

int64_t ebytes(const IrType *t)
{
	int b = ir_type_bits(ir_scalar(t)) / 8;
	return b < 1 ? 1 : b;
}

LLVMValueRef smem_addr(Lower *L, int64_t byte_off, LLVMValueRef idx, int64_t esize)
{
	LLVMTypeRef i8 = LLVMInt8TypeInContext(L->c);
	LLVMValueRef off = LLVMBuildAdd(L->b, i32c(L, byte_off), LLVMBuildMul(L->b, idx, i32c(L, esize), ""), "");
	return LLVMBuildGEP2(L->b, i8, L->smem, &off, 1, "");
}

void smem_store(Lower *L, const IrType *t, int64_t off, LLVMValueRef idx, LLVMValueRef v)
{
	LLVMValueRef p = smem_addr(L, off, idx, ebytes(t));
	if (ir_scalar(t)->kind == TY_I1)
		v = LLVMBuildZExt(L->b, v, LLVMInt8TypeInContext(L->c), "");
	LLVMBuildStore(L->b, v, p);
}

LLVMValueRef smem_load(Lower *L, const IrType *t, int64_t off, LLVMValueRef idx)
{
	LLVMValueRef p = smem_addr(L, off, idx, ebytes(t));
	if (ir_scalar(t)->kind == TY_I1) {
		LLVMValueRef x = LLVMBuildLoad2(L->b, LLVMInt8TypeInContext(L->c), p, "");
		return LLVMBuildICmp(L->b, LLVMIntNE, x, LLVMConstInt(LLVMInt8TypeInContext(L->c), 0, 0), "");
	}
	return LLVMBuildLoad2(L->b, be_llty(L, t), p, "");
}

int64_t scratch_off(const IrOp *op)
{
	return ir_op_int(op, "scratch_offset", 0);
}

/* Writes every register of v to scratch at off + row-major index. */
void write_block(Lower *L, const IrValue *v, int64_t off)
{
	Map m;
	map_init(L, v->type, &m);
	for (int r = 0; r < m.n; r++)
		smem_store(L, v->type, off, map_lin(L, &m, v->type, r), reg(L, v, r));
}
