/* mem.c: global memory and async copies. Loads and stores in vectors of up
 * to 128 bits where axis info proves contiguity, alignment and mask
 * constancy (a masked load of whole 32-bit words is one predicated
 * ld.global in inline asm; other masked accesses branch around the access);
 * replicated elements are stored by their owning thread only. Atomics with
 * the op's ordering and sync scope (a scalar atomic by thread 0, its old
 * value broadcast through scratch). async_copy / commit / wait (cp.async
 * into the swizzled slots of a multi-buffered tile) and local_read (ldmatrix
 * out of a slot).
 */
#include <stdio.h>
#include <string.h>

#include "nvptx.h"

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

void lower_load(Lower *L, IrOp *op)
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

void lower_store(Lower *L, IrOp *op)
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

void lower_atomic(Lower *L, IrOp *op)
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
/* Multi-buffered tiles: cp.async into swizzled slots, ldmatrix out           */
/* ------------------------------------------------------------------------- */

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
void lower_async_copy(Lower *L, IrOp *op)
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

void lower_async_commit(Lower *L, IrOp *op)
{
	(void)op;
	inline_asm(L, "cp.async.commit_group;", "~{memory}", NULL, 0);
}

void lower_async_wait(Lower *L, IrOp *op)
{
	char text[64];
	snprintf(text, sizeof text, "cp.async.wait_group %d;", (int)ir_op_int(op, "pending", 0));
	inline_asm(L, text, "~{memory}", NULL, 0);
}

void lower_local_read(Lower *L, IrOp *op)
{
	if (!ldmatrix_ok(op))
		fail(L, op, "local_read needs a 16-bit 2-D dot operand layout");
	if (!ldmatrix_ok(op))
		return;
	LLVMValueRef eoff = LLVMBuildMul(L->b, reg(L, op->ops[0], 0), i32c(L, op->res[0].type->numel), "");
	read_dot_op_at(L, op, eoff);
}
