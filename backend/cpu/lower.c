/* lower.c: the core of the CPU lowering. It owns the value map (IR value ->
 * scalar, splat or scratch buffer), buffers and counted loops, structured
 * control flow (for / if / while with region results in allocas or
 * buffers), calls of noinline functions, and the kernel entry that walks a
 * range of linear program ids.
 *
 * Function ABI (every IR function, kernel included, becomes an internal
 * function): (ir params: scalars by value, blocks by pointer, then one
 * pointer per result, then i32 pid x/y/z, i32 num_programs x/y/z, ptr
 * scratch, ptr wctx) -> void. The exported entry
 * entry(params, start, end, nx, ny, nz, scratch, wctx) loads the kernel's
 * parameters from params[] and calls it once per program id.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "backend/cpu/cpu.h"

void cg_fail(Cg *cg, const IrOp *op, const char *fmt, ...)
{
	if (cg->err)
		return;
	va_list ap;
	va_start(ap, fmt);
	char *msg = ir_vfmt(cg->ictx, fmt, ap);
	va_end(ap);
	IrLoc loc = op ? op->loc : (IrLoc){0};
	cg->err = ir_error(cg->ictx, IR_ERR_BACKEND, loc, "cpu backend: %s", msg);
}

LLVMTypeRef cg_sty(Cg *cg, const IrType *t)
{
	switch (t->kind) {
	case TY_I1: return cg->t_i1;
	case TY_I8: case TY_U8: case TY_F8E4M3: case TY_F8E5M2: case TY_F8E4B15: case TY_F8E4B8: case TY_F8E5B16:
		return cg->t_i8;
	case TY_I16: case TY_U16: case TY_BF16: return cg->t_i16;
	case TY_I32: case TY_U32: return cg->t_i32;
	case TY_I64: case TY_U64: return cg->t_i64;
	case TY_F16: return cg->t_f16;
	case TY_F32: return cg->t_f32;
	case TY_F64: return cg->t_f64;
	case TY_PTR: return cg->t_ptr;
	case TY_BLOCK: return cg_sty(cg, t->elem);
	default: return cg->t_i8;
	}
}

int cg_esize(const IrType *t)
{
	t = ir_scalar(t);
	if (t->kind == TY_PTR)
		return 8;
	if (t->kind == TY_I1)
		return 1;
	return ir_type_bits(t) / 8;
}

bool cg_soft_float(const IrType *t)
{
	t = ir_scalar(t);
	return t->kind == TY_BF16 || ir_is_fp8(t);
}

LLVMValueRef cg_i64(Cg *cg, int64_t v) { return LLVMConstInt(cg->t_i64, (unsigned long long)v, 1); }
LLVMValueRef cg_i32(Cg *cg, int64_t v) { return LLVMConstInt(cg->t_i32, (unsigned long long)v, 1); }

CgVal cg_get_lazy(Cg *cg, const IrValue *v)
{
	if (v->id < 0 || v->id >= cg->nvals || cg->vals[v->id].kind == CV_NONE) {
		cg_fail(cg, v->def, "value used before it was lowered");
		LLVMTypeRef t = ir_is_block(v->type) ? cg->t_ptr : cg_sty(cg, v->type);
		return (CgVal){ir_is_block(v->type) ? CV_SPLAT : CV_SCALAR, LLVMGetUndef(t), NULL};
	}
	return cg->vals[v->id];
}

CgVal cg_get(Cg *cg, const IrValue *v)
{
	CgVal cv = cg_get_lazy(cg, v);
	if (cv.kind != CV_LAZY)
		return cv;
	cv = cg_bufv(cg_materialize(cg, cv, v->type));
	cg->vals[v->id] = cv;
	return cv;
}

bool cg_may_defer(Cg *cg, const IrOp *op)
{
	const IrValue *r = &op->res[0];
	return op->nres == 1 && ir_is_block(r->type) && r->id >= 0 && r->id < cg->nvals &&
	       cg->nuses[r->id] == 1 && cg->useblk[r->id] == op->parent;
}

bool cg_lazy_uses(Cg *cg, CgVal cv, const IrValue *v)
{
	if (cv.kind != CV_LAZY)
		return false;
	if (&cv.op->res[0] == v)
		return true;
	for (int k = 0; k < cv.op->nops; k++)
		if (cg_lazy_uses(cg, cg_get_lazy(cg, cv.op->ops[k]), v))
			return true;
	return false;
}

bool cg_load_pending(Cg *cg, const IrValue *v)
{
	for (int depth = 0; depth < 1000; depth++) {
		if (cg->vals[v->id].kind != CV_LAZY)
			return false;
		IrOp *u = cg->useop[v->id];
		if (!u || !cg->opdone[u->id])
			return true;
		if (u->nres != 1)
			return false;
		v = &u->res[0];
	}
	return true;
}

void cg_flush_loads(Cg *cg, IrBlock *blk, bool (*keep)(void *, const IrValue *), void *user)
{
	int n = 0;
	for (int k = 0; k < cg->npend; k++) {
		IrValue *v = cg->pend[k];
		if (v->def->parent != blk || !cg_load_pending(cg, v))
			continue;
		if (keep && keep(user, v)) {
			cg->pend[n++] = v;
			continue;
		}
		cg_get(cg, v);
	}
	cg->npend = n;
}

bool cg_lazy_reads(Cg *cg, CgVal cv, LLVMValueRef buf)
{
	if (cv.kind != CV_LAZY)
		return cv.kind == CV_BUF && cv.v == buf;
	for (int k = 0; k < cv.op->nops; k++)
		if (cg_lazy_reads(cg, cg_get_lazy(cg, cv.op->ops[k]), buf))
			return true;
	return false;
}

void cg_set(Cg *cg, const IrValue *v, CgVal cv) { cg->vals[v->id] = cv; }

LLVMValueRef cg_alloca(Cg *cg, LLVMTypeRef t) { return LLVMBuildAlloca(cg->ab, t, ""); }

LLVMValueRef cg_newbuf(Cg *cg, const IrType *t)
{
	int64_t bytes = t->numel * cg_esize(t);
	int64_t off = (cg->ssize + 63) & ~(int64_t)63;
	cg->ssize = off + bytes;
	LLVMValueRef idx = cg_i64(cg, off);
	return LLVMBuildInBoundsGEP2(cg->ab, cg->t_i8, cg->scratch, &idx, 1, "buf");
}

static void set_align(LLVMValueRef inst, const IrType *t)
{
	LLVMSetAlignment(inst, (unsigned)cg_esize(t));
}

LLVMValueRef cg_elem(Cg *cg, CgVal cv, const IrType *t, LLVMValueRef i)
{
	if (cg_uniform(cv))
		return cv.v;
	if (cv.kind == CV_LAZY)
		return cv.op->opc == OP_LOAD ? cg_load_elem(cg, cv.op, i) : cg_lazy_elem(cg, cv.op, i);
	LLVMTypeRef et = cg_sty(cg, ir_scalar(t));
	if (cv.kind == CV_AFF) {
		if (ir_scalar(t)->kind == TY_PTR) {
			const IrType *pt = ir_scalar(t)->elem;
			LLVMTypeRef pet = pt && pt->kind != TY_BLOCK ? cg_sty(cg, pt) : cg->t_i8;
			return LLVMBuildGEP2(cg->b, pet, cv.v, &i, 1, "");
		}
		return LLVMBuildAdd(cg->b, cv.v, LLVMBuildTrunc(cg->b, i, et, ""), "");
	}
	/* i1 elements are bytes in memory (i1 loads and stores do not vectorize) */
	bool bit = ir_scalar(t)->kind == TY_I1;
	if (bit)
		et = cg->t_i8;
	LLVMValueRef p = LLVMBuildInBoundsGEP2(cg->b, et, cv.v, &i, 1, "");
	LLVMValueRef x = LLVMBuildLoad2(cg->b, et, p, "");
	set_align(x, t);
	/* a compare, not a trunc: LLVM folds truncs of loaded bytes into
	 * <N x i1> bitcasts of wide loads, and the x86 back end then fails on
	 * them ("Cannot emit physreg copy instruction") */
	if (bit)
		x = LLVMBuildICmp(cg->b, LLVMIntNE, x, LLVMConstInt(cg->t_i8, 0, 0), "");
	return x;
}

void cg_store_elem(Cg *cg, LLVMValueRef buf, const IrType *t, LLVMValueRef i, LLVMValueRef x)
{
	LLVMTypeRef et = cg_sty(cg, ir_scalar(t));
	if (ir_scalar(t)->kind == TY_I1) {
		et = cg->t_i8;
		x = LLVMBuildZExt(cg->b, x, et, "");
	}
	LLVMValueRef p = LLVMBuildInBoundsGEP2(cg->b, et, buf, &i, 1, "");
	set_align(LLVMBuildStore(cg->b, x, p), t);
}

LLVMValueRef cg_loop_begin(Cg *cg, CgLoop *l, LLVMValueRef n)
{
	l->pre = LLVMGetInsertBlock(cg->b);
	l->head = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "loop");
	l->body = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "body");
	l->exit = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "done");
	LLVMBuildBr(cg->b, l->head);
	LLVMPositionBuilderAtEnd(cg->b, l->head);
	l->iv = LLVMBuildPhi(cg->b, LLVMTypeOf(n), "i");
	LLVMValueRef zero = LLVMConstInt(LLVMTypeOf(n), 0, 0);
	LLVMAddIncoming(l->iv, &zero, &l->pre, 1);
	LLVMValueRef c = LLVMBuildICmp(cg->b, LLVMIntSLT, l->iv, n, "");
	LLVMBuildCondBr(cg->b, c, l->body, l->exit);
	LLVMPositionBuilderAtEnd(cg->b, l->body);
	return l->iv;
}

void cg_loop_end(Cg *cg, CgLoop *l)
{
	LLVMValueRef next = LLVMBuildNSWAdd(cg->b, l->iv, LLVMConstInt(LLVMTypeOf(l->iv), 1, 0), "");
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
	LLVMBuildBr(cg->b, l->head);
	LLVMAddIncoming(l->iv, &next, &latch, 1);
	LLVMPositionBuilderAtEnd(cg->b, l->exit);
}

void cg_copy_to(Cg *cg, LLVMValueRef dst, CgVal cv, const IrType *t)
{
	if (cv.kind == CV_BUF) {
		if (cv.v == dst)
			return;
		LLVMValueRef bytes = cg_i64(cg, t->numel * cg_esize(t));
		LLVMBuildMemCpy(cg->b, dst, (unsigned)cg_esize(t), cv.v, (unsigned)cg_esize(t), bytes);
		return;
	}
	CgLoop l;
	LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, t->numel));
	cg_store_elem(cg, dst, t, i, cg_elem(cg, cv, t, i));
	cg_loop_end(cg, &l);
}

LLVMValueRef cg_materialize(Cg *cg, CgVal cv, const IrType *t)
{
	if (cv.kind == CV_BUF)
		return cv.v;
	LLVMValueRef buf = cg_newbuf(cg, t);
	cg_copy_to(cg, buf, cv, t);
	return buf;
}

LLVMValueRef cg_intrinsic(Cg *cg, const char *name, LLVMTypeRef *tys, int ntys, LLVMValueRef *args,
			  int nargs)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	if (!id) {
		cg_fail(cg, NULL, "unknown LLVM intrinsic %s", name);
		return LLVMGetUndef(LLVMTypeOf(args[0]));
	}
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(cg->mod, id, tys, (size_t)ntys);
	LLVMTypeRef fty = LLVMIntrinsicGetType(cg->ctx, id, tys, (size_t)ntys);
	return LLVMBuildCall2(cg->b, fty, fn, args, (unsigned)nargs, "");
}

LLVMValueRef cg_call_ext(Cg *cg, const char *name, LLVMTypeRef ret, LLVMTypeRef *ptys, int nparams,
			 LLVMValueRef *args, int nargs, bool vararg)
{
	LLVMTypeRef fty = LLVMFunctionType(ret, ptys, (unsigned)nparams, vararg);
	LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, name);
	if (!fn)
		fn = LLVMAddFunction(cg->mod, name, fty);
	return LLVMBuildCall2(cg->b, fty, fn, args, (unsigned)nargs, "");
}

/* ------------------------------------------------------------------------- */
/* Region results: a slot per value carried across a region boundary.       */
/* ------------------------------------------------------------------------- */

typedef struct Slot {
	const IrType *t;
	bool isbuf;
	LLVMValueRef p; /* buffer, or alloca of a scalar */
} Slot;

static Slot *new_slots(Cg *cg, int n, IrValue *const *like)
{
	Slot *s = ir_alloc(cg->ictx, (size_t)(n ? n : 1) * sizeof(Slot));
	for (int i = 0; i < n; i++) {
		s[i].t = like[i]->type;
		s[i].isbuf = ir_is_block(s[i].t);
		s[i].p = s[i].isbuf ? cg_newbuf(cg, s[i].t) : cg_alloca(cg, cg_sty(cg, s[i].t));
	}
	return s;
}

static CgVal slot_read(Cg *cg, const Slot *s)
{
	if (s->isbuf)
		return cg_bufv(s->p);
	return cg_scalar(LLVMBuildLoad2(cg->b, cg_sty(cg, s->t), s->p, ""));
}

/* Writes vals into slots; a value that lives in another slot of the same set
 * goes through a temporary first, so swaps are correct. */
static void slots_write(Cg *cg, Slot *s, int n, IrValue *const *vals)
{
	CgVal *cv = ir_alloc(cg->ictx, (size_t)(n ? n : 1) * sizeof(CgVal));
	for (int i = 0; i < n; i++)
		cv[i] = cg_get_lazy(cg, vals[i]);
	for (int i = 0; i < n; i++) {
		if (!s[i].isbuf) {
			if (cv[i].kind == CV_LAZY)
				cv[i] = cg_get(cg, vals[i]);
			continue;
		}
		if (cv[i].kind != CV_BUF && cv[i].kind != CV_LAZY)
			continue;
		for (int k = 0; k < n; k++) {
			if (k != i && s[k].isbuf && cg_lazy_reads(cg, cv[i], s[k].p)) {
				LLVMValueRef tmp = cg_newbuf(cg, s[i].t);
				cg_copy_to(cg, tmp, cv[i], s[i].t);
				cv[i] = cg_bufv(tmp);
				break;
			}
		}
	}
	for (int i = 0; i < n; i++) {
		if (s[i].isbuf)
			cg_copy_to(cg, s[i].p, cv[i], s[i].t);
		else
			LLVMBuildStore(cg->b, cv[i].v, s[i].p);
	}
}

static void results_from_slots(Cg *cg, IrOp *op, Slot *s)
{
	for (int i = 0; i < op->nres; i++)
		cg_set(cg, &op->res[i], slot_read(cg, &s[i]));
}

/* ------------------------------------------------------------------------- */
/* Control flow                                                              */
/* ------------------------------------------------------------------------- */

/* The loop attributes of op (for / while) on its back edge br, as LLVM loop
 * metadata: disable_licm -> llvm.licm.disable (nothing is hoisted out). */
static void loop_metadata(Cg *cg, const IrOp *op, LLVMValueRef br)
{
	if (!ir_op_int(op, "disable_licm", 0))
		return;
	LLVMMetadataRef self = LLVMTemporaryMDNode(cg->ctx, NULL, 0);
	LLVMMetadataRef name = LLVMMDStringInContext2(cg->ctx, "llvm.licm.disable", 17);
	LLVMMetadataRef ops[2] = {self, LLVMMDNodeInContext2(cg->ctx, &name, 1)};
	LLVMMetadataRef id = LLVMMDNodeInContext2(cg->ctx, ops, 2);
	LLVMMetadataReplaceAllUsesWith(self, id); /* the loop id names itself */
	LLVMSetMetadata(br, LLVMGetMDKindIDInContext(cg->ctx, "llvm.loop", 9), LLVMMetadataAsValue(cg->ctx, id));
}

static void lower_for(Cg *cg, IrOp *op)
{
	IrBlock *body = op->regions[0];
	int n = op->nops - 3;
	const IrType *ivt = op->ops[0]->type;
	bool sgn = ir_is_signed(ivt);
	LLVMValueRef lb = cg_get(cg, op->ops[0]).v, ub = cg_get(cg, op->ops[1]).v;
	LLVMValueRef step = cg_get(cg, op->ops[2]).v;
	Slot *s = new_slots(cg, n, op->ops + 3);
	slots_write(cg, s, n, op->ops + 3);

	LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b);
	LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "for");
	LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "for.body");
	LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "for.end");
	LLVMBuildBr(cg->b, head);
	LLVMPositionBuilderAtEnd(cg->b, head);
	LLVMValueRef iv = LLVMBuildPhi(cg->b, cg_sty(cg, ivt), "iv");
	LLVMAddIncoming(iv, &lb, &pre, 1);
	/* A constant negative step counts down. */
	LLVMIntPredicate pred = sgn ? LLVMIntSLT : LLVMIntULT;
	if (LLVMIsAConstantInt(step) && sgn && LLVMConstIntGetSExtValue(step) < 0)
		pred = LLVMIntSGT;
	LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, pred, iv, ub, ""), bb, exit);
	LLVMPositionBuilderAtEnd(cg->b, bb);
	cg_set(cg, body->args[0], cg_scalar(iv));
	for (int i = 0; i < n; i++)
		cg_set(cg, body->args[i + 1], slot_read(cg, &s[i]));
	IrOp *y = cg_lower_block(cg, body);
	if (cg->err)
		return;
	if (y && y->nops == n)
		slots_write(cg, s, n, y->ops);
	LLVMValueRef next = LLVMBuildAdd(cg->b, iv, step, "");
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
	loop_metadata(cg, op, LLVMBuildBr(cg->b, head));
	LLVMAddIncoming(iv, &next, &latch, 1);
	LLVMPositionBuilderAtEnd(cg->b, exit);
	results_from_slots(cg, op, s);
}

static void lower_if(Cg *cg, IrOp *op)
{
	LLVMValueRef c = cg_get(cg, op->ops[0]).v;
	IrValue **like = ir_alloc(cg->ictx, (size_t)(op->nres + 1) * sizeof(IrValue *));
	for (int i = 0; i < op->nres; i++)
		like[i] = &op->res[i];
	Slot *s = new_slots(cg, op->nres, like);
	LLVMBasicBlockRef bt = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "then");
	LLVMBasicBlockRef be = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "else");
	LLVMBasicBlockRef bj = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "endif");
	LLVMBuildCondBr(cg->b, c, bt, be);
	for (int r = 0; r < 2; r++) {
		LLVMPositionBuilderAtEnd(cg->b, r == 0 ? bt : be);
		if (r < op->nregions) {
			IrOp *y = cg_lower_block(cg, op->regions[r]);
			if (cg->err)
				return;
			if (y && y->opc == OP_YIELD && y->nops == op->nres)
				slots_write(cg, s, op->nres, y->ops);
		}
		LLVMBuildBr(cg->b, bj);
	}
	LLVMPositionBuilderAtEnd(cg->b, bj);
	results_from_slots(cg, op, s);
}

static void lower_while(Cg *cg, IrOp *op)
{
	IrBlock *before = op->regions[0], *after = op->regions[1];
	Slot *st = new_slots(cg, op->nops, op->ops);
	IrValue **like = ir_alloc(cg->ictx, (size_t)(op->nres + 1) * sizeof(IrValue *));
	for (int i = 0; i < op->nres; i++)
		like[i] = &op->res[i];
	Slot *rs = new_slots(cg, op->nres, like);
	slots_write(cg, st, op->nops, op->ops);
	LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "while");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "while.body");
	LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "while.end");
	LLVMBuildBr(cg->b, head);
	LLVMPositionBuilderAtEnd(cg->b, head);
	for (int i = 0; i < before->nargs && i < op->nops; i++)
		cg_set(cg, before->args[i], slot_read(cg, &st[i]));
	IrOp *c = cg_lower_block(cg, before);
	if (cg->err)
		return;
	if (!c || c->opc != OP_CONDITION || c->nops - 1 != op->nres) {
		cg_fail(cg, op, "while: before region must end with condition forwarding %d values",
			op->nres);
		return;
	}
	LLVMValueRef cond = cg_get(cg, c->ops[0]).v;
	slots_write(cg, rs, op->nres, c->ops + 1);
	LLVMBuildCondBr(cg->b, cond, body, exit);
	LLVMPositionBuilderAtEnd(cg->b, body);
	for (int i = 0; i < after->nargs && i < op->nres; i++)
		cg_set(cg, after->args[i], slot_read(cg, &rs[i]));
	IrOp *y = cg_lower_block(cg, after);
	if (cg->err)
		return;
	if (y && y->nops == op->nops)
		slots_write(cg, st, op->nops, y->ops);
	loop_metadata(cg, op, LLVMBuildBr(cg->b, head));
	LLVMPositionBuilderAtEnd(cg->b, exit);
	results_from_slots(cg, op, rs);
}

static CgFunc *find_cgfunc(Cg *cg, const char *name, int *idx)
{
	for (int i = 0; i < cg->nfuncs; i++)
		if (strcmp(cg->funcs[i].f->name, name) == 0) {
			*idx = i;
			return &cg->funcs[i];
		}
	return NULL;
}

static void lower_call(Cg *cg, IrOp *op)
{
	const char *callee = ir_op_str(op, "callee", NULL);
	int idx = 0;
	CgFunc *cf = callee ? find_cgfunc(cg, callee, &idx) : NULL;
	if (!cf) {
		cg_fail(cg, op, "call of unknown function @%s", callee ? callee : "?");
		return;
	}
	if (cf->f->body->nargs != op->nops || cf->f->nres != op->nres) {
		cg_fail(cg, op, "call of @%s: signature mismatch", callee);
		return;
	}
	int na = op->nops + op->nres + 8;
	LLVMValueRef *args = ir_alloc(cg->ictx, (size_t)na * sizeof(LLVMValueRef));
	int k = 0;
	for (int i = 0; i < op->nops; i++) {
		CgVal v = cg_get(cg, op->ops[i]);
		args[k++] = ir_is_block(op->ops[i]->type) ? cg_materialize(cg, v, op->ops[i]->type) : v.v;
	}
	LLVMValueRef *outp = args + k;
	for (int i = 0; i < op->nres; i++) {
		const IrType *t = op->res[i].type;
		args[k++] = ir_is_block(t) ? cg_newbuf(cg, t) : cg_alloca(cg, cg_sty(cg, t));
	}
	for (int i = 0; i < 3; i++)
		args[k++] = cg->pid[i];
	for (int i = 0; i < 3; i++)
		args[k++] = cg->nprog[i];
	args[k++] = cg->scratch; /* patched to scratch + own size at the end */
	args[k++] = cg->wctx;
	LLVMValueRef call = LLVMBuildCall2(cg->b, cf->fnty, cf->fn, args, (unsigned)k, "");
	if (cg->npatch == cg->cappatch) {
		int cap = cg->cappatch ? 2 * cg->cappatch : 8;
		LLVMValueRef *p = ir_alloc(cg->ictx, (size_t)cap * sizeof(LLVMValueRef));
		if (cg->npatch)
			memcpy(p, cg->patch, (size_t)cg->npatch * sizeof(LLVMValueRef));
		cg->patch = p;
		cg->cappatch = cap;
	}
	cg->patch[cg->npatch++] = call;
	CgFunc *cur = cg->cur;
	bool known = false;
	for (int i = 0; i < cur->ncallees; i++)
		known |= cur->callees[i] == idx;
	if (!known) {
		if (cur->ncallees == 16) {
			cg_fail(cg, op, "too many distinct callees");
			return;
		}
		cur->callees[cur->ncallees++] = idx;
	}
	for (int i = 0; i < op->nres; i++) {
		const IrType *t = op->res[i].type;
		if (ir_is_block(t))
			cg_set(cg, &op->res[i], cg_bufv(outp[i]));
		else
			cg_set(cg, &op->res[i], cg_scalar(LLVMBuildLoad2(cg->b, cg_sty(cg, t), outp[i], "")));
	}
}

static void lower_return(Cg *cg, IrOp *op)
{
	for (int i = 0; i < op->nops && cg->outs; i++) {
		const IrType *t = op->ops[i]->type;
		CgVal v = cg_get_lazy(cg, op->ops[i]);
		if (ir_is_block(t))
			cg_copy_to(cg, cg->outs[i], v, t);
		else
			LLVMBuildStore(cg->b, v.v, cg->outs[i]);
	}
	LLVMBuildRetVoid(cg->b);
	/* Code after a return inside a region is unreachable. */
	LLVMBasicBlockRef dead = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "dead");
	LLVMPositionBuilderAtEnd(cg->b, dead);
}

/* ------------------------------------------------------------------------- */
/* Op dispatch                                                               */
/* ------------------------------------------------------------------------- */

static void lower_constant(Cg *cg, IrOp *op)
{
	const IrType *t = op->res[0].type, *s = ir_scalar(t);
	const IrAttr *a = ir_op_attr(op, "value");
	LLVMValueRef c;
	if (ir_is_float(s)) {
		double d = a ? (a->kind == ATTR_FLOAT ? a->f : (double)a->i) : 0.0;
		if (cg_soft_float(s))
			c = cg_from_f32(cg, LLVMConstReal(cg->t_f32, d), s, false);
		else
			c = LLVMConstReal(cg_sty(cg, s), d);
	} else if (s->kind == TY_PTR) {
		int64_t i = a ? (a->kind == ATTR_FLOAT ? (int64_t)a->f : a->i) : 0;
		c = LLVMConstIntToPtr(cg_i64(cg, i), cg->t_ptr);
	} else {
		int64_t i = a ? (a->kind == ATTR_FLOAT ? (int64_t)a->f : a->i) : 0;
		c = LLVMConstInt(cg_sty(cg, s), (unsigned long long)i, ir_is_signed(s));
	}
	cg_set(cg, &op->res[0], ir_is_block(t) ? cg_splat(c) : cg_scalar(c));
}

static void lower_op_(Cg *cg, IrOp *op);

/* Ops that may write memory first compute the lazy loads still pending
 * (stores decide for themselves, mem.c). */
static void lower_op(Cg *cg, IrOp *op)
{
	switch (op->opc) {
	case OP_ATOMIC_RMW:
	case OP_ATOMIC_CAS:
	case OP_CALL:
	case OP_FOR:
	case OP_IF:
	case OP_WHILE:
	case OP_MAP_ELEM:
		cg_flush_loads(cg, op->parent, NULL, NULL);
		break;
	default: break;
	}
	if (cg->opt.sanitize && (op->opc == OP_LOAD || op->opc == OP_STORE || op->opc == OP_ATOMIC_RMW ||
				 op->opc == OP_ATOMIC_CAS))
		cg_san_check(cg, op);
	if (cg->opt.sanitize && op->opc == OP_MULTIPLE_OF)
		cg_san_hint(cg, op);
	lower_op_(cg, op);
	cg->opdone[op->id] = true;
}

static void lower_op_(Cg *cg, IrOp *op)
{
	const IrOpInfo *info = ir_opinfo(op->opc);
	switch (op->opc) {
	case OP_CONSTANT: lower_constant(cg, op); return;
	case OP_POISON: {
		const IrType *t = op->res[0].type, *s = ir_scalar(t);
		LLVMValueRef c = LLVMGetPoison(s->kind == TY_PTR ? cg->t_ptr : cg_sty(cg, s));
		cg_set(cg, &op->res[0], ir_is_block(t) ? cg_splat(c) : cg_scalar(c));
		return;
	}
	case OP_PROGRAM_ID:
	case OP_NUM_PROGRAMS: {
		int64_t ax = ir_op_int(op, "axis", 0);
		if (ax < 0 || ax > 2) {
			cg_fail(cg, op, "%s: axis %lld out of range", info->name, (long long)ax);
			return;
		}
		LLVMValueRef v = op->opc == OP_PROGRAM_ID ? cg->pid[ax] : cg->nprog[ax];
		cg_set(cg, &op->res[0], cg_scalar(v));
		return;
	}
	case OP_SPLAT: {
		CgVal v = cg_get(cg, op->ops[0]);
		cg_set(cg, &op->res[0], ir_is_block(op->ops[0]->type) ? v : cg_splat(v.v));
		return;
	}
	case OP_CONVERT_LAYOUT:
	case OP_MULTIPLE_OF:
	case OP_MAX_CONTIGUOUS:
	case OP_MAX_CONSTANCY:
		cg_set(cg, &op->res[0], cg_get(cg, op->ops[0]));
		return;
	case OP_ASSUME: {
		if (!ir_is_block(op->ops[0]->type)) {
			LLVMValueRef c = cg_get(cg, op->ops[0]).v;
			cg_intrinsic(cg, "llvm.assume", NULL, 0, &c, 1);
		}
		return;
	}
	case OP_BARRIER:
	case OP_GDC: return; /* one grid at a time: nothing to wait for or release */
	case OP_TMAP_CREATE: /* loads ignore their tensor-map tail here: no map, no scratch */
		cg_set(cg, &op->res[0], cg_scalar(LLVMConstNull(cg->t_ptr)));
		return;
	case OP_FOR: lower_for(cg, op); return;
	case OP_IF: lower_if(cg, op); return;
	case OP_WHILE: lower_while(cg, op); return;
	case OP_CALL: lower_call(cg, op); return;
	case OP_RETURN: lower_return(cg, op); return;
	case OP_LOAD:
	case OP_STORE:
	case OP_ATOMIC_RMW:
	case OP_ATOMIC_CAS:
	case OP_PRINT:
	case OP_ASSERT: cg_lower_mem(cg, op); return;
	case OP_REDUCE: cg_lower_reduce(cg, op, false); return;
	case OP_SCAN: cg_lower_reduce(cg, op, true); return;
	case OP_DOT: cg_lower_dot(cg, op); return;
	case OP_MAP_ELEM: cg_lower_map(cg, op); return;
	case OP_INLINE_ASM:
		cg_fail(cg, op, "tl.inline_asm_elementwise: inline PTX runs only on NVIDIA GPUs (the kernel "
			"was compiled for the CPU backend)");
		return;
	case OP_MAKE_RANGE:
	case OP_BROADCAST:
	case OP_EXPAND_DIMS:
	case OP_RESHAPE:
	case OP_TRANS:
	case OP_CAT:
	case OP_JOIN:
	case OP_SPLIT:
	case OP_GATHER:
	case OP_HISTOGRAM: cg_lower_shape(cg, op); return;
	case OP_YIELD:
	case OP_CONDITION:
		cg_fail(cg, op, "%s outside of its region's end", info->name);
		return;
	default:
		if (info->flags & IR_ELEM) {
			cg_lower_elem(cg, op);
			return;
		}
		cg_fail(cg, op, "op '%s' is not supported", info->name);
	}
}

IrOp *cg_lower_block(Cg *cg, IrBlock *blk)
{
	for (IrOp *op = blk->first; op && !cg->err; op = op->next) {
		if (op == blk->last && (op->opc == OP_YIELD || op->opc == OP_CONDITION))
			return op;
		lower_op(cg, op);
	}
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* Functions and the module                                                  */
/* ------------------------------------------------------------------------- */

static void number_ops(IrOp *op, void *user)
{
	int *n = user;
	op->id = (*n)++;
}

static void number_values(IrOp *op, void *user)
{
	int *n = user;
	for (int i = 0; i < op->nres; i++)
		op->res[i].id = (*n)++;
	for (int r = 0; r < op->nregions; r++)
		for (int i = 0; i < op->regions[r]->nargs; i++)
			op->regions[r]->args[i]->id = (*n)++;
}

static void count_uses(IrOp *op, void *user)
{
	Cg *cg = user;
	for (int i = 0; i < op->nops; i++) {
		int id = op->ops[i]->id;
		if (id >= 0 && id < cg->nvals) {
			cg->nuses[id]++;
			cg->useblk[id] = op->parent;
			cg->useop[id] = op;
		}
	}
}

static void declare_func(Cg *cg, CgFunc *cf, int idx)
{
	IrFunc *f = cf->f;
	int np = f->body->nargs, nr = f->nres;
	LLVMTypeRef *pt = ir_alloc(cg->ictx, (size_t)(np + nr + 8) * sizeof(LLVMTypeRef));
	int k = 0;
	for (int i = 0; i < np; i++) {
		const IrType *t = f->body->args[i]->type;
		pt[k++] = ir_is_block(t) ? cg->t_ptr : cg_sty(cg, t);
	}
	for (int i = 0; i < nr; i++)
		pt[k++] = cg->t_ptr;
	for (int i = 0; i < 6; i++)
		pt[k++] = cg->t_i32;
	pt[k++] = cg->t_ptr;
	pt[k++] = cg->t_ptr;
	cf->fnty = LLVMFunctionType(cg->t_void, pt, (unsigned)k, 0);
	char *name = ir_fmt(cg->ictx, "ct.fn%d.%s", idx, f->name);
	cf->fn = LLVMAddFunction(cg->mod, name, cf->fnty);
	LLVMSetLinkage(cf->fn, LLVMInternalLinkage);
	/* scratch is noalias: buffers never overlap user memory */
	unsigned kind = LLVMGetEnumAttributeKindForName("noalias", 7);
	LLVMAddAttributeAtIndex(cf->fn, (unsigned)(k - 1), LLVMCreateEnumAttribute(cg->ctx, kind, 0));
	for (int i = 0; i < nr; i++)
		LLVMAddAttributeAtIndex(cf->fn, (unsigned)(np + i + 1),
					LLVMCreateEnumAttribute(cg->ctx, kind, 0));
	if (f->noinline) {
		unsigned ni = LLVMGetEnumAttributeKindForName("noinline", 8);
		LLVMAddAttributeAtIndex(cf->fn, LLVMAttributeFunctionIndex,
					LLVMCreateEnumAttribute(cg->ctx, ni, 0));
	}
}

static void lower_func(Cg *cg, CgFunc *cf)
{
	IrFunc *f = cf->f;
	int np = f->body->nargs, nr = f->nres;
	cg->cur = cf;
	cg->fn = cf->fn;
	cg->ssize = 0;
	cg->npatch = 0;
	cg->npend = 0;
	cg->mask_on = NULL;
	cg->san_ext = NULL;
	LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(cg->ctx, cf->fn, "entry");
	LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(cg->ctx, cf->fn, "start");
	LLVMPositionBuilderAtEnd(cg->ab, entry);
	LLVMPositionBuilderAtEnd(cg->b, start);
	for (int i = 0; i < np; i++) {
		const IrType *t = f->body->args[i]->type;
		LLVMValueRef p = LLVMGetParam(cf->fn, (unsigned)i);
		cg_set(cg, f->body->args[i], ir_is_block(t) ? cg_bufv(p) : cg_scalar(p));
	}
	cg->outs = ir_alloc(cg->ictx, (size_t)(nr + 1) * sizeof(LLVMValueRef));
	for (int i = 0; i < nr; i++)
		cg->outs[i] = LLVMGetParam(cf->fn, (unsigned)(np + i));
	for (int i = 0; i < 3; i++) {
		cg->pid[i] = LLVMGetParam(cf->fn, (unsigned)(np + nr + i));
		cg->nprog[i] = LLVMGetParam(cf->fn, (unsigned)(np + nr + 3 + i));
	}
	cg->scratch = LLVMGetParam(cf->fn, (unsigned)(np + nr + 6));
	cg->wctx = LLVMGetParam(cf->fn, (unsigned)(np + nr + 7));
	for (IrOp *op = f->body->first; op && !cg->err; op = op->next)
		lower_op(cg, op);
	if (cg->err)
		return;
	/* The body ends with return, which left the builder in a dead block. */
	if (!LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(cg->b)))
		LLVMBuildRetVoid(cg->b);
	cf->own = (cg->ssize + 63) & ~(int64_t)63;
	if (cg->npatch) {
		LLVMValueRef off = cg_i64(cg, cf->own);
		LLVMValueRef p = LLVMBuildInBoundsGEP2(cg->ab, cg->t_i8, cg->scratch, &off, 1, "callee");
		for (int i = 0; i < cg->npatch; i++) {
			LLVMValueRef call = cg->patch[i];
			LLVMSetOperand(call, (unsigned)(LLVMGetNumArgOperands(call) - 2), p);
		}
	}
	LLVMBuildBr(cg->ab, start);
}

static int64_t total_scratch(Cg *cg, int i, int depth)
{
	CgFunc *cf = &cg->funcs[i];
	if (depth > 64)
		return cf->own;
	int64_t most = 0;
	for (int k = 0; k < cf->ncallees; k++) {
		int64_t t = total_scratch(cg, cf->callees[k], depth + 1);
		if (t > most)
			most = t;
	}
	return cf->own + most;
}

/* Builds entry(params, start, end, nx, ny, nz, scratch, wctx) for kernel. */
static void build_entry(Cg *cg, CgFunc *kf, const char *name)
{
	LLVMTypeRef pt[8] = {cg->t_ptr, cg->t_i32, cg->t_i32, cg->t_i32,
			     cg->t_i32, cg->t_i32, cg->t_ptr, cg->t_ptr};
	LLVMTypeRef fty = LLVMFunctionType(cg->t_void, pt, 8, 0);
	LLVMValueRef fn = LLVMAddFunction(cg->mod, name, fty);
	cg->fn = fn;
	IrFunc *f = kf->f;
	int np = f->body->nargs;
	LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(cg->ctx, fn, "entry");
	LLVMPositionBuilderAtEnd(cg->b, entry);
	LLVMValueRef params = LLVMGetParam(fn, 0);
	LLVMValueRef *args = ir_alloc(cg->ictx, (size_t)(np + 8) * sizeof(LLVMValueRef));
	for (int i = 0; i < np; i++) {
		const IrType *t = f->body->args[i]->type;
		LLVMValueRef idx = cg_i64(cg, i);
		LLVMValueRef pp = LLVMBuildInBoundsGEP2(cg->b, cg->t_ptr, params, &idx, 1, "");
		LLVMValueRef p = LLVMBuildLoad2(cg->b, cg->t_ptr, pp, "");
		if (t->kind == TY_I1) {
			LLVMValueRef byte = LLVMBuildLoad2(cg->b, cg->t_i8, p, "");
			args[i] = LLVMBuildICmp(cg->b, LLVMIntNE, byte, LLVMConstInt(cg->t_i8, 0, 0), "");
		} else {
			args[i] = LLVMBuildLoad2(cg->b, cg_sty(cg, t), p, "");
			LLVMSetAlignment(args[i], 1);
		}
	}
	LLVMValueRef nx = LLVMGetParam(fn, 3), ny = LLVMGetParam(fn, 4), nz = LLVMGetParam(fn, 5);
	LLVMValueRef start = LLVMBuildSExt(cg->b, LLVMGetParam(fn, 1), cg->t_i64, "");
	LLVMValueRef end = LLVMBuildSExt(cg->b, LLVMGetParam(fn, 2), cg->t_i64, "");
	LLVMValueRef count = LLVMBuildSub(cg->b, end, start, "");
	CgLoop l;
	LLVMValueRef i = cg_loop_begin(cg, &l, count);
	LLVMValueRef lin = LLVMBuildTrunc(cg->b, LLVMBuildAdd(cg->b, i, start, ""), cg->t_i32, "");
	LLVMValueRef px = LLVMBuildSRem(cg->b, lin, nx, "");
	LLVMValueRef q = LLVMBuildSDiv(cg->b, lin, nx, "");
	LLVMValueRef py = LLVMBuildSRem(cg->b, q, ny, "");
	LLVMValueRef pz = LLVMBuildSDiv(cg->b, q, ny, "");
	int k = np;
	args[k++] = px;
	args[k++] = py;
	args[k++] = pz;
	args[k++] = nx;
	args[k++] = ny;
	args[k++] = nz;
	args[k++] = LLVMGetParam(fn, 6);
	args[k++] = LLVMGetParam(fn, 7);
	LLVMBuildCall2(cg->b, kf->fnty, kf->fn, args, (unsigned)k, "");
	cg_loop_end(cg, &l);
	LLVMBuildRetVoid(cg->b);
}

void cg_init_types(Cg *cg)
{
	LLVMContextRef c = cg->ctx;
	cg->t_void = LLVMVoidTypeInContext(c);
	cg->t_i1 = LLVMInt1TypeInContext(c);
	cg->t_i8 = LLVMInt8TypeInContext(c);
	cg->t_i16 = LLVMInt16TypeInContext(c);
	cg->t_i32 = LLVMInt32TypeInContext(c);
	cg->t_i64 = LLVMInt64TypeInContext(c);
	cg->t_f16 = LLVMHalfTypeInContext(c);
	cg->t_f32 = LLVMFloatTypeInContext(c);
	cg->t_f64 = LLVMDoubleTypeInContext(c);
	cg->t_ptr = LLVMPointerTypeInContext(c, 0);
}

IrError *cg_lower_module(Cg *cg, IrFunc *kernel, const char *entry_name, int64_t *scratch)
{
	IrModule *m = cg->m;
	int n = 0;
	for (int i = 0; i < m->nfuncs; i++) {
		IrFunc *f = m->funcs[i];
		for (int a = 0; a < f->body->nargs; a++)
			f->body->args[a]->id = n++;
		ir_walk_func(f, number_values, &n);
	}
	cg->nvals = n;
	cg->vals = ir_alloc(cg->ictx, (size_t)(n ? n : 1) * sizeof(CgVal));
	cg->nuses = ir_alloc(cg->ictx, (size_t)(n ? n : 1) * sizeof(int));
	cg->useblk = ir_alloc(cg->ictx, (size_t)(n ? n : 1) * sizeof(IrBlock *));
	cg->useop = ir_alloc(cg->ictx, (size_t)(n ? n : 1) * sizeof(IrOp *));
	memset(cg->nuses, 0, (size_t)(n ? n : 1) * sizeof(int));
	memset(cg->useop, 0, (size_t)(n ? n : 1) * sizeof(IrOp *));
	int nops = 0;
	for (int i = 0; i < m->nfuncs; i++)
		ir_walk_func(m->funcs[i], number_ops, &nops);
	cg->opdone = ir_alloc(cg->ictx, (size_t)(nops ? nops : 1) * sizeof(bool));
	memset(cg->opdone, 0, (size_t)(nops ? nops : 1) * sizeof(bool));
	for (int i = 0; i < m->nfuncs; i++)
		ir_walk_func(m->funcs[i], count_uses, cg);
	cg->nfuncs = m->nfuncs;
	cg->funcs = ir_alloc(cg->ictx, (size_t)(m->nfuncs ? m->nfuncs : 1) * sizeof(CgFunc));
	int kidx = -1;
	for (int i = 0; i < m->nfuncs; i++) {
		cg->funcs[i].f = m->funcs[i];
		if (m->funcs[i] == kernel)
			kidx = i;
		declare_func(cg, &cg->funcs[i], i);
	}
	for (int i = 0; i < m->nfuncs && !cg->err; i++)
		lower_func(cg, &cg->funcs[i]);
	if (cg->err)
		return cg->err;
	build_entry(cg, &cg->funcs[kidx], entry_name);
	*scratch = total_scratch(cg, kidx, 0);
	return cg->err;
}
