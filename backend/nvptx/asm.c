/* asm.c: elementwise_inline_asm (tl.inline_asm_elementwise) as LLVM inline
 * asm, one call per pack of registers.
 *
 * Operands and results share one layout, so register r of every operand
 * and result is the same element. The registers this thread owns are taken
 * `pack` at a time in register order (the last pack padded with undef when
 * pack does not divide them; the padding's results are dropped). Within a
 * pack, elements narrower than 32 bits travel ir_asm_per_reg(t, pack) to a
 * 32-bit register: built as an LLVM vector and bitcast to i32, the first
 * element in the low bits (Triton passes the same vector to the asm); other
 * elements travel one per asm operand in their own LLVM type (pointers as
 * pointers, f16 as half for "h", f64 as double for "d"). The asm returns
 * its outputs in the order results x registers, as a struct when there are
 * several. A non-pure asm is a call with side effects, so LLVM keeps and
 * orders it; a pure one may be merged or dropped by LLVM too.
 */
#include <string.h>

#include "nvptx.h"

/* The constraint string without whitespace ("=r,r, r" is accepted as
 * Triton accepts it). */
static char *squeeze(Nv *nv, const char *s)
{
	size_t n = strlen(s);
	char *o = ir_alloc(nv->ctx, n + 1), *p = o;
	for (; *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
			*p++ = *s;
	*p = 0;
	return o;
}

void nv_lower_inline_asm(Nv *nv, IrOp *op)
{
	int pack = (int)ir_op_int(op, "pack", 1);
	int n = nv_map_nregs(nv, op->res[0].type);
	const char *text = ir_op_str(op, "asm", "");
	char *cons = squeeze(nv, ir_op_str(op, "constraints", ""));
	LLVMTypeRef i32 = LLVMInt32TypeInContext(nv->c);

	/* the asm's operand and return types, per pack */
	int nin = 0, nout = 0;
	for (int i = 0; i < op->nops; i++)
		nin += pack / ir_asm_per_reg(op->ops[i]->type, pack);
	for (int i = 0; i < op->nres; i++)
		nout += pack / ir_asm_per_reg(op->res[i].type, pack);
	LLVMTypeRef *at = ir_alloc(nv->ctx, sizeof(LLVMTypeRef) * (size_t)(nin + 1));
	LLVMTypeRef *rt = ir_alloc(nv->ctx, sizeof(LLVMTypeRef) * (size_t)nout);
	LLVMValueRef *args = ir_alloc(nv->ctx, sizeof(LLVMValueRef) * (size_t)(nin + 1));
	int k = 0;
	for (int i = 0; i < op->nops; i++) {
		int g = ir_asm_per_reg(op->ops[i]->type, pack);
		for (int j = 0; j < pack; j += g)
			at[k++] = g > 1 ? i32 : nv_llty(nv, op->ops[i]->type);
	}
	k = 0;
	for (int i = 0; i < op->nres; i++) {
		int g = ir_asm_per_reg(op->res[i].type, pack);
		for (int j = 0; j < pack; j += g)
			rt[k++] = g > 1 ? i32 : nv_llty(nv, op->res[i].type);
	}
	LLVMTypeRef ret = nout > 1 ? LLVMStructTypeInContext(nv->c, rt, (unsigned)nout, 0) : rt[0];
	LLVMTypeRef fty = LLVMFunctionType(ret, at, (unsigned)nin, 0);
	bool side = !ir_op_pure(op);
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), cons, strlen(cons), side, 0,
					     LLVMInlineAsmDialectATT, 0);

	LLVMValueRef **out = ir_alloc(nv->ctx, sizeof(LLVMValueRef *) * (size_t)op->nres);
	for (int i = 0; i < op->nres; i++)
		out[i] = ir_alloc(nv->ctx, sizeof(LLVMValueRef) * (size_t)(n + pack));
	for (int base = 0; base < n; base += pack) {
		k = 0;
		for (int i = 0; i < op->nops; i++) {
			int g = ir_asm_per_reg(op->ops[i]->type, pack);
			LLVMTypeRef et = nv_llty(nv, op->ops[i]->type);
			for (int j = 0; j < pack; j += g) {
				if (g == 1) {
					args[k++] = base + j < n ? nv_reg(nv, op->ops[i], base + j) : LLVMGetUndef(et);
					continue;
				}
				LLVMValueRef vec = LLVMGetUndef(LLVMVectorType(et, (unsigned)g));
				for (int e = 0; e < g; e++)
					if (base + j + e < n)
						vec = LLVMBuildInsertElement(nv->b, vec, nv_reg(nv, op->ops[i], base + j + e),
									     nv_i32(nv, e), "");
				args[k++] = LLVMBuildBitCast(nv->b, vec, i32, "");
			}
		}
		LLVMValueRef call = LLVMBuildCall2(nv->b, fty, asmv, args, (unsigned)nin, "");
		k = 0;
		for (int i = 0; i < op->nres; i++) {
			int g = ir_asm_per_reg(op->res[i].type, pack);
			LLVMTypeRef et = nv_llty(nv, op->res[i].type);
			for (int j = 0; j < pack; j += g) {
				LLVMValueRef x = nout > 1 ? LLVMBuildExtractValue(nv->b, call, (unsigned)k, "") : call;
				k++;
				if (g == 1) {
					out[i][base + j] = x;
					continue;
				}
				LLVMValueRef vec = LLVMBuildBitCast(nv->b, x, LLVMVectorType(et, (unsigned)g), "");
				for (int e = 0; e < g; e++)
					out[i][base + j + e] = LLVMBuildExtractElement(nv->b, vec, nv_i32(nv, e), "");
			}
		}
	}
	for (int i = 0; i < op->nres; i++)
		nv_set(nv, &op->res[i], n, out[i]);
}
