/* scalar.h: the scalar semantics of ctriton's elementwise ops and casts, as
 * LLVM IR, shared by backend/nvptx and backend/cpu (an internal interface of
 * backend/, like nvptx.h and cpu.h; users of the backends see backend.h).
 *
 * Each edge case is decided here once, as Triton does on NVIDIA GPUs, and
 * stated in the op's row of ir/ops.def: shift amounts of the bit width or
 * more, integer division by zero and INT_MIN / -1, float -> int out of range
 * and NaN, fp8 rounding and saturation, narrow floats (computed in f32 and
 * rounded, subnormals kept). The two backends differ only where the result
 * is the same: how a bf16 value is held (LLVM bfloat or its i16 bits), which
 * f16/bf16 ops run natively, and the math functions (exp, log, sin, ...),
 * whose precision is each target's (see the backends' elem.c).
 */
#ifndef CTRITON_BACKEND_SCALAR_H
#define CTRITON_BACKEND_SCALAR_H

#include <llvm-c/Core.h>
#include <stdbool.h>

#include "ir/ir.h"

typedef struct BeScalar {
	LLVMContextRef c;
	LLVMModuleRef m;
	LLVMBuilderRef b;
	/* bf16 values are their i16 bit patterns (cpu) rather than LLVM bfloat
	 * (nvptx, converted with the target's own RTNE instructions) */
	bool bf16_bits;
	/* f16 (and LLVM bfloat) + - * / neg abs min max cmp in their own type:
	 * correctly rounded, so the same as computing in f32 and rounding */
	bool narrow_native;
	/* min/max with minnum semantics (a NaN operand yields the other) as
	 * compares and selects rather than llvm.minnum/maxnum (cpu: LLVM 22's
	 * loop vectorizer drops the scalar remainder of minnum/maxnum reductions
	 * it vectorizes with NaN checks, llvm-project#209159) */
	bool minnum_selects;
	/* float + - * may be contracted into fused multiply-adds (nvptx: as
	 * Triton lets ptxas do; cpu: never, each op rounds) */
	bool contract;
	/* the LLVM type of a scalar of IR type t */
	LLVMTypeRef (*type)(void *user, const IrType *t);
	/* exp, exp2, log, log2, sqrt, rsqrt, sin, cos, erf, floor, ceil of x,
	 * an f32 or f64 (narrow floats arrive as f32) */
	LLVMValueRef (*math)(void *user, const IrOp *op, LLVMValueRef x);
	/* x / y for f32 or f64 operands of a division without rounding = "rn"
	 * (NULL: LLVM's IEEE fdiv; nvptx: div.full.f32 as Triton's `/`) */
	LLVMValueRef (*fdiv)(void *user, const IrOp *op, LLVMValueRef x, LLVMValueRef y);
	/* op `extern` on the operands xs */
	LLVMValueRef (*ext)(void *user, const IrOp *op, LLVMValueRef *xs);
	/* f64 -> f16 rounded once (NULL: fptrunc does it) */
	LLVMValueRef (*f64_to_f16)(void *user, LLVMValueRef x);
	/* an f32 as fp8 of kind k (its i8 bits) with the target's own
	 * instruction, and fp8 bits as an f32, with the semantics above; NULL
	 * (or a hook returning NULL) where the target has none: the integer
	 * arithmetic of scalar.c */
	LLVMValueRef (*f32_to_f8)(void *user, LLVMValueRef x, IrTypeKind k, bool rtz);
	LLVMValueRef (*f8_to_f32)(void *user, LLVMValueRef x, IrTypeKind k);
	/* reports an op it cannot lower (msg: static or arena text) */
	void (*fail)(void *user, const IrOp *op, const char *msg);
	void *user;
} BeScalar;

/* One element of an elementwise op (every IR_ELEM op but addptr, whose
 * address arithmetic is the backend's): xs[i] is operand i's value. */
LLVMValueRef be_scalar_op(BeScalar *s, const IrOp *op, LLVMValueRef *xs);
/* The value x of scalar type from as scalar type to (op `cast`; rtz: round
 * toward zero where the result is a narrower float, else to nearest even).
 * op locates failures and may be NULL. */
LLVMValueRef be_scalar_cast(BeScalar *s, const IrOp *op, LLVMValueRef x, const IrType *from, const IrType *to,
			    bool rtz);
/* A float of type t (f16, bf16, fp8, f32, f64) as an f32 (f64: rounded). */
LLVMValueRef be_to_f32(BeScalar *s, LLVMValueRef x, const IrType *t);
/* An f32 as float type t, rounded to nearest even (rtz: toward zero). */
LLVMValueRef be_from_f32(BeScalar *s, LLVMValueRef x, const IrType *t, bool rtz);
/* A call of LLVM intrinsic name overloaded on tys (NULL when unknown). */
LLVMValueRef be_intrinsic(BeScalar *s, const char *name, LLVMTypeRef *tys, int ntys, LLVMValueRef *args, int nargs);

#endif
