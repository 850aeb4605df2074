/* control.c: structured control flow (for / if / while become basic blocks
 * with one phi per register), print (vprintf) and assert (__assertfail),
 * and the op dispatch: lower_op, lower_block.
 */
#include <stdio.h>
#include <string.h>

#include "nvptx.h"

/* ------------------------------------------------------------------------- */
/* Debugging                                                                 */
/* ------------------------------------------------------------------------- */

static LLVMValueRef sreg(Lower *L, const char *name)
{
	return call_intr(L, name, NULL, 0, NULL, 0);
}

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
	case OP_RESHAPE: lower_reshape(L, op); return;
	case OP_TRANS: lower_trans(L, op); return;
	case OP_SPLIT: lower_split(L, op); return;
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
