/* mem.c: memory and debugging ops on the CPU: masked load/store (a
 * masked-off element touches no memory; `other`, or zero, fills it),
 * atomic_rmw / atomic_cas through LLVM atomics (program instances run on
 * several threads; bf16 add as a compare-and-swap loop), print through printf, and assert, which calls
 * ct_cpu_assert_fail to record the message and leave the program instance.
 */
#include <string.h>

#include "backend/cpu/cpu.h"

/* Runs emit(i) for each element (i64 index), or once (i = NULL) for scalars,
 * under mask when there is one. */
typedef struct Guard {
	LLVMBasicBlockRef yes, join, from;
} Guard;

static void guard_begin(Cg *cg, Guard *g, LLVMValueRef cond)
{
	g->from = LLVMGetInsertBlock(cg->b);
	g->yes = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "m.on");
	g->join = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "m.join");
	LLVMBuildCondBr(cg->b, cond, g->yes, g->join);
	LLVMPositionBuilderAtEnd(cg->b, g->yes);
}

/* Ends the guarded region; with a value, returns phi(v on, off otherwise). */
static LLVMValueRef guard_end(Cg *cg, Guard *g, LLVMValueRef v, LLVMValueRef off)
{
	LLVMBasicBlockRef end = LLVMGetInsertBlock(cg->b);
	LLVMBuildBr(cg->b, g->join);
	LLVMPositionBuilderAtEnd(cg->b, g->join);
	if (!v)
		return NULL;
	LLVMValueRef phi = LLVMBuildPhi(cg->b, LLVMTypeOf(v), "");
	LLVMValueRef vals[2] = {v, off};
	LLVMBasicBlockRef bbs[2] = {end, g->from};
	LLVMAddIncoming(phi, vals, bbs, 2);
	return phi;
}

static LLVMValueRef load_elem(Cg *cg, const IrOp *op, LLVMValueRef p, const IrType *et)
{
	bool vol = ir_op_int(op, "volatile", 0) != 0;
	LLVMValueRef x;
	if (et->kind == TY_I1) {
		x = LLVMBuildLoad2(cg->b, cg->t_i8, p, "");
		x = LLVMBuildICmp(cg->b, LLVMIntNE, x, LLVMConstInt(cg->t_i8, 0, 0), "");
		if (vol)
			LLVMSetVolatile(LLVMGetOperand(x, 0), 1);
		return x;
	}
	x = LLVMBuildLoad2(cg->b, cg_sty(cg, et), p, "");
	LLVMSetAlignment(x, (unsigned)cg_esize(et));
	if (vol)
		LLVMSetVolatile(x, 1);
	return x;
}

static void store_elem(Cg *cg, LLVMValueRef p, const IrType *et, LLVMValueRef x)
{
	if (et->kind == TY_I1)
		x = LLVMBuildZExt(cg->b, x, cg->t_i8, "");
	LLVMValueRef s = LLVMBuildStore(cg->b, x, p);
	LLVMSetAlignment(s, (unsigned)cg_esize(et));
}

static LLVMValueRef zero_of(Cg *cg, const IrType *et)
{
	return LLVMConstNull(cg_sty(cg, et));
}

static LLVMAtomicOrdering ordering(const IrOp *op, bool failure)
{
	const char *s = ir_op_str(op, "sem", "acq_rel");
	LLVMAtomicOrdering o = LLVMAtomicOrderingAcquireRelease;
	if (strcmp(s, "relaxed") == 0)
		o = LLVMAtomicOrderingMonotonic;
	else if (strcmp(s, "acquire") == 0)
		o = LLVMAtomicOrderingAcquire;
	else if (strcmp(s, "release") == 0)
		o = LLVMAtomicOrderingRelease;
	else if (strcmp(s, "seq_cst") == 0)
		o = LLVMAtomicOrderingSequentiallyConsistent;
	if (failure) {
		if (o == LLVMAtomicOrderingAcquireRelease)
			o = LLVMAtomicOrderingAcquire;
		else if (o == LLVMAtomicOrderingRelease)
			o = LLVMAtomicOrderingMonotonic;
	}
	return o;
}

/* atomic_rmw add on a type the CPU computes in f32 (bf16, kept as its
 * bits): a compare-and-swap loop on the bits, each try computing old + x in
 * f32 and rounding back, as GPUs without a native bf16 atomic add do.
 * Returns the old value's bits. */
static LLVMValueRef soft_float_add(Cg *cg, const IrOp *op, LLVMValueRef p, LLVMValueRef x,
				   const IrType *et)
{
	LLVMTypeRef it = cg_sty(cg, et);
	LLVMValueRef first = LLVMBuildLoad2(cg->b, it, p, "");
	LLVMSetAlignment(first, (unsigned)cg_esize(et));
	LLVMSetOrdering(first, LLVMAtomicOrderingMonotonic);
	LLVMBasicBlockRef from = LLVMGetInsertBlock(cg->b);
	LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "rmw.try");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "rmw.done");
	LLVMBuildBr(cg->b, loop);
	LLVMPositionBuilderAtEnd(cg->b, loop);
	LLVMValueRef old = LLVMBuildPhi(cg->b, it, "");
	LLVMValueRef r = LLVMBuildFAdd(cg->b, cg_to_f32(cg, old, et), cg_to_f32(cg, x, et), "");
	LLVMValueRef nu = cg_from_f32(cg, r, et, false);
	LLVMValueRef pair = LLVMBuildAtomicCmpXchg(cg->b, p, old, nu, ordering(op, false),
						   ordering(op, true), 0);
	LLVMValueRef seen = LLVMBuildExtractValue(cg->b, pair, 0, "");
	LLVMValueRef ok = LLVMBuildExtractValue(cg->b, pair, 1, "");
	LLVMValueRef ins[2] = {first, seen};
	LLVMBasicBlockRef bbs[2] = {from, LLVMGetInsertBlock(cg->b)};
	LLVMAddIncoming(old, ins, bbs, 2);
	LLVMBuildCondBr(cg->b, ok, done, loop);
	LLVMPositionBuilderAtEnd(cg->b, done);
	return old;
}

static LLVMValueRef atomic_elem(Cg *cg, const IrOp *op, LLVMValueRef *xs, const IrType *et)
{
	if (op->opc == OP_ATOMIC_CAS && cg_soft_float(et)) {
		/* bits compared and swapped as they are (like the GPU's atom.cas.b16) */
		LLVMValueRef r = LLVMBuildAtomicCmpXchg(cg->b, xs[0], xs[1], xs[2], ordering(op, false),
							ordering(op, true), 0);
		return LLVMBuildExtractValue(cg->b, r, 0, "");
	}
	if (op->opc == OP_ATOMIC_CAS) {
		LLVMValueRef c = xs[1], v = xs[2];
		LLVMTypeRef st = cg_sty(cg, et);
		bool fl = ir_is_float(et);
		LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, (unsigned)ir_type_bits(et));
		if (fl) {
			c = LLVMBuildBitCast(cg->b, c, it, "");
			v = LLVMBuildBitCast(cg->b, v, it, "");
		}
		LLVMValueRef r = LLVMBuildAtomicCmpXchg(cg->b, xs[0], c, v, ordering(op, false),
							ordering(op, true), 0);
		r = LLVMBuildExtractValue(cg->b, r, 0, "");
		return fl ? LLVMBuildBitCast(cg->b, r, st, "") : r;
	}
	const char *kind = ir_op_str(op, "kind", "add");
	bool fl = ir_is_float(et), sg = ir_is_signed(et);
	LLVMAtomicRMWBinOp bop;
	if (!strcmp(kind, "add") || !strcmp(kind, "fadd"))
		bop = fl ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd;
	else if (!strcmp(kind, "max") || !strcmp(kind, "umax"))
		bop = fl ? LLVMAtomicRMWBinOpFMax : (sg && kind[0] != 'u') ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax;
	else if (!strcmp(kind, "min") || !strcmp(kind, "umin"))
		bop = fl ? LLVMAtomicRMWBinOpFMin : (sg && kind[0] != 'u') ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin;
	else if (!strcmp(kind, "and"))
		bop = LLVMAtomicRMWBinOpAnd;
	else if (!strcmp(kind, "or"))
		bop = LLVMAtomicRMWBinOpOr;
	else if (!strcmp(kind, "xor"))
		bop = LLVMAtomicRMWBinOpXor;
	else if (!strcmp(kind, "xchg"))
		bop = LLVMAtomicRMWBinOpXchg;
	else {
		cg_fail(cg, op, "atomic_rmw: unknown kind '%s'", kind);
		return zero_of(cg, et);
	}
	if (fl && bop != LLVMAtomicRMWBinOpXchg && bop != LLVMAtomicRMWBinOpFAdd &&
	    bop != LLVMAtomicRMWBinOpFMax && bop != LLVMAtomicRMWBinOpFMin) {
		cg_fail(cg, op, "atomic_rmw: '%s' on floats", kind);
		return zero_of(cg, et);
	}
	if (cg_soft_float(et) && bop == LLVMAtomicRMWBinOpFAdd)
		return soft_float_add(cg, op, xs[0], xs[1], et);
	if (cg_soft_float(et) && bop != LLVMAtomicRMWBinOpXchg) {
		/* the frontend allows only add on bf16 (as Triton does) */
		cg_fail(cg, op, "atomic_rmw: '%s' on %s is not supported", kind, ir_kind_name(et->kind));
		return zero_of(cg, et);
	}
	return LLVMBuildAtomicRMW(cg->b, bop, xs[0], xs[1], ordering(op, false), 0);
}

/* One load, store or atomic: its operands (pointer and values), mask and
 * `other`, as lowered values. */
typedef struct Access {
	IrOp *op;
	const IrType *et;
	int nv;
	CgVal cv[3];
	const IrType *ct[3];
	const IrValue *mv, *ov;
	CgVal mask, other;
	bool block;    /* some operand is a block */
	int64_t numel; /* elements of the block */
} Access;

/* Element i (NULL for scalars) of the access; guarded by the mask when
 * masked. Returns the loaded or old value, or NULL for a store. */
static LLVMValueRef access_elem(Cg *cg, const Access *a, LLVMValueRef i, bool masked)
{
	IrOpcode opc = a->op->opc;
	LLVMValueRef xs[3];
	for (int k = 0; k < a->nv; k++)
		xs[k] = cg_elem(cg, a->cv[k], a->ct[k], i);
	Guard g;
	if (masked)
		guard_begin(cg, &g, cg_elem(cg, a->mask, a->mv->type, i));
	LLVMValueRef r = NULL;
	if (opc == OP_LOAD)
		r = load_elem(cg, a->op, xs[0], a->et);
	else if (opc == OP_STORE)
		store_elem(cg, xs[0], a->et, xs[1]);
	else
		r = atomic_elem(cg, a->op, xs, a->et);
	if (masked) {
		LLVMValueRef off = NULL;
		if (r)
			off = a->other.kind != CV_NONE ? cg_elem(cg, a->other, a->ov->type, i)
							: zero_of(cg, a->et);
		r = guard_end(cg, &g, r, off);
	}
	return r;
}

static void access_loop(Cg *cg, const Access *a, LLVMValueRef out, const IrType *rt, int64_t numel,
			bool masked)
{
	CgLoop l;
	LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, numel));
	LLVMValueRef r = access_elem(cg, a, i, masked);
	if (out)
		cg_store_elem(cg, out, rt, i, r);
	cg_loop_end(cg, &l);
}

/* i1: every element of block mask m is true. */
static LLVMValueRef mask_all(Cg *cg, CgVal m, const IrType *t, int64_t numel)
{
	LLVMValueRef all = cg_alloca(cg, cg->t_i1);
	LLVMBuildStore(cg->b, LLVMConstInt(cg->t_i1, 1, 0), all);
	CgLoop l;
	LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, numel));
	LLVMValueRef x = cg_elem(cg, m, t, i);
	LLVMValueRef acc = LLVMBuildLoad2(cg->b, cg->t_i1, all, "");
	LLVMBuildStore(cg->b, LLVMBuildAnd(cg->b, acc, x, ""), all);
	cg_loop_end(cg, &l);
	return LLVMBuildLoad2(cg->b, cg->t_i1, all, "");
}

/* Fills a from op's lowered operands; false (after cg_fail) when the access
 * is not supported. */
static bool access_init(Cg *cg, IrOp *op, Access *a)
{
	IrOpcode opc = op->opc;
	const IrType *pt = op->ops[0]->type;
	const IrType *et = ir_scalar(pt)->elem;
	if (!et || et->kind == TY_BLOCK) {
		cg_fail(cg, op, "%s: block pointers are not supported on the CPU", ir_opinfo(opc)->name);
		return false;
	}
	int maskidx = opc == OP_LOAD ? 1 : opc == OP_STORE ? 2 : opc == OP_ATOMIC_RMW ? 2 : -1;
	const IrValue *mv = maskidx >= 0 && op->nops > maskidx ? op->ops[maskidx] : NULL;
	const IrValue *ov = opc == OP_LOAD && op->nops > 2 ? op->ops[2] : NULL;
	*a = (Access){.op = op, .et = et, .mv = mv, .ov = ov};
	a->nv = opc == OP_LOAD ? 1 : opc == OP_ATOMIC_CAS ? 3 : 2; /* ptr + values */
	for (int k = 0; k < a->nv; k++) {
		a->cv[k] = cg_get_lazy(cg, op->ops[k]);
		a->ct[k] = op->ops[k]->type;
		a->block |= ir_is_block(a->ct[k]);
	}
	a->mask = mv ? cg_get_lazy(cg, mv) : (CgVal){CV_NONE, NULL, NULL};
	a->other = ov ? cg_get_lazy(cg, ov) : (CgVal){CV_NONE, NULL, NULL};
	a->block |= mv && ir_is_block(mv->type);
	a->numel = ir_is_block(pt) ? pt->numel : mv ? mv->type->numel : 1;
	return true;
}

LLVMValueRef cg_load_elem(Cg *cg, IrOp *op, LLVMValueRef i)
{
	Access a;
	if (!access_init(cg, op, &a))
		return LLVMGetUndef(cg_sty(cg, ir_scalar(op->res[0].type)));
	return access_elem(cg, &a, i, a.mv && a.mv != cg->mask_on);
}

/* Emits the loops of a block access (result in out, if any). A load or store
 * under a block mask checks the mask once: when every element is on (the
 * whole block in bounds), a loop without per-element guards runs, which
 * becomes plain vector loads and stores. */
static void access_loops(Cg *cg, const Access *a, LLVMValueRef out, const IrType *rt)
{
	IrOpcode opc = a->op->opc;
	bool split = a->mv && !cg_uniform(a->mask) && (opc == OP_LOAD || opc == OP_STORE);
	if (!split) {
		access_loop(cg, a, out, rt, a->numel, a->mv != NULL);
		return;
	}
	LLVMValueRef all = mask_all(cg, a->mask, a->mv->type, a->numel);
	LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "m.all");
	LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "m.some");
	LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "m.done");
	LLVMBuildCondBr(cg->b, all, fast, slow);
	LLVMPositionBuilderAtEnd(cg->b, fast);
	const IrValue *was = cg->mask_on;
	cg->mask_on = a->mv; /* lazy loads under the same mask need no guard */
	access_loop(cg, a, out, rt, a->numel, false);
	cg->mask_on = was;
	LLVMBuildBr(cg->b, join);
	LLVMPositionBuilderAtEnd(cg->b, slow);
	access_loop(cg, a, out, rt, a->numel, true);
	LLVMBuildBr(cg->b, join);
	LLVMPositionBuilderAtEnd(cg->b, join);
}

/* A contiguous block load with one use in its block stays lazy: its user
 * reads memory element by element in its own loop (no scratch copy). */
static bool defer_load(Cg *cg, IrOp *op, const Access *a)
{
	return a->block && a->cv[0].kind == CV_AFF && !ir_op_int(op, "volatile", 0) &&
	       cg_may_defer(cg, op) && cg->npend < (int)(sizeof cg->pend / sizeof cg->pend[0]);
}

typedef struct StoreCtx {
	Cg *cg;
	Access *a;
} StoreCtx;

/* Pending loads a store may read in its own loop: contiguous, read by the
 * store's operands, with the store contiguous too (checked at run time). */
static bool store_keeps(void *user, const IrValue *v)
{
	StoreCtx *sc = user;
	Cg *cg = sc->cg;
	if (sc->a->cv[0].kind != CV_AFF || !sc->a->block)
		return false;
	CgVal ops[3] = {sc->a->cv[0], sc->a->cv[1], sc->a->mask};
	for (int k = 0; k < 3; k++)
		if (cg_lazy_uses(cg, ops[k], v))
			return true;
	return false;
}

static LLVMValueRef ptr_int(Cg *cg, LLVMValueRef p)
{
	return LLVMBuildPtrToInt(cg->b, p, cg->t_i64, "");
}

/* A store whose operands read pending lazy loads: if at run time each load
 * is the very same range (element i read, then written) or does not overlap
 * the stored range, one loop loads, computes and stores; otherwise the loads
 * go to scratch first. */
static void lower_store(Cg *cg, IrOp *op)
{
	Access a;
	if (!access_init(cg, op, &a))
		return;
	StoreCtx sc = {cg, &a};
	cg_flush_loads(cg, op->parent, store_keeps, &sc);
	if (!a.block || cg->npend == 0) {
		if (a.block)
			access_loops(cg, &a, NULL, NULL);
		else
			access_elem(cg, &a, NULL, a.mv != NULL);
		return;
	}
	int es = cg_esize(a.et);
	LLVMValueRef sp = ptr_int(cg, a.cv[0].v);
	LLVMValueRef se = LLVMBuildAdd(cg->b, sp, cg_i64(cg, a.numel * es), "");
	LLVMValueRef ok = LLVMConstInt(cg->t_i1, 1, 0);
	for (int k = 0; k < cg->npend; k++) {
		IrOp *ld = cg->pend[k]->def;
		int les = cg_esize(ir_scalar(ld->ops[0]->type)->elem);
		LLVMValueRef lp = ptr_int(cg, cg_get_lazy(cg, ld->ops[0]).v);
		LLVMValueRef le = LLVMBuildAdd(cg->b, lp, cg_i64(cg, a.numel * les), "");
		LLVMValueRef c = LLVMBuildOr(cg->b, LLVMBuildICmp(cg->b, LLVMIntULE, se, lp, ""),
					     LLVMBuildICmp(cg->b, LLVMIntULE, le, sp, ""), "");
		if (les == es)
			c = LLVMBuildOr(cg->b, c, LLVMBuildICmp(cg->b, LLVMIntEQ, sp, lp, ""), "");
		ok = LLVMBuildAnd(cg->b, ok, c, "");
	}
	LLVMBasicBlockRef fused = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "st.fused");
	LLVMBasicBlockRef copy = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "st.copy");
	LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "st.done");
	LLVMBuildCondBr(cg->b, ok, fused, copy);
	LLVMPositionBuilderAtEnd(cg->b, fused);
	access_loops(cg, &a, NULL, NULL);
	LLVMBuildBr(cg->b, join);
	LLVMPositionBuilderAtEnd(cg->b, copy);
	cg_flush_loads(cg, op->parent, NULL, NULL);
	if (!access_init(cg, op, &a))
		return;
	access_loops(cg, &a, NULL, NULL);
	LLVMBuildBr(cg->b, join);
	LLVMPositionBuilderAtEnd(cg->b, join);
}

/* ------------------------------------------------------------------------- */
/* Row-contiguous 2-D pointer blocks                                         */
/* ------------------------------------------------------------------------- */

/* Facts proved from the IR alone (no code): for a 2-D block [R, C],
 * - row-uniform: every row holds one value (v[i, j] == v[i, 0]);
 * - unit: an integer block with v[i, j] == v[i, 0] + j (rank 1: v[j] == v[0] + j);
 * - row-contiguous: a pointer block with v[i, j] == &v[i, 0][j].
 * `addptr(row-uniform, unit)` is row-contiguous, and so is a `for` carried
 * value whose initial value is and that the body advances by row-uniform
 * offsets. Offsets are taken not to wrap within a row (as on the GPU, where
 * such a wrap gives addresses no kernel means). */
enum { FACT_DEPTH = 24 };

static bool const_one(const IrValue *v)
{
	const IrOp *d = v->def;
	return d && d->opc == OP_CONSTANT && ir_is_int(ir_scalar(v->type)) && ir_op_int(d, "value", 0) == 1;
}

static bool row_uniform(const IrValue *v, int depth)
{
	const IrType *t = v->type;
	if (!ir_is_block(t) || t->shape[t->rank - 1] == 1)
		return true;
	const IrOp *d = v->def;
	if (!d || depth > FACT_DEPTH)
		return false;
	switch (d->opc) {
	case OP_CONSTANT:
	case OP_POISON:
	case OP_SPLAT:
		return true;
	case OP_BROADCAST: {
		const IrType *ot = d->ops[0]->type;
		return !ir_is_block(ot) || ot->shape[ot->rank - 1] == 1 || row_uniform(d->ops[0], depth + 1);
	}
	case OP_ADD:
	case OP_SUB:
	case OP_MUL:
	case OP_ADDPTR:
		return row_uniform(d->ops[0], depth + 1) && row_uniform(d->ops[1], depth + 1);
	default:
		return false;
	}
}

typedef struct Checks {
	const IrValue *v[4]; /* column vectors ([C] or [1, C]) to check at run time */
	int n;
} Checks;

static bool unit_cols(const IrValue *v, int depth, Checks *ck)
{
	const IrOp *d = v->def;
	if (!d || depth > FACT_DEPTH || !ir_is_block(v->type) || !ir_is_int(ir_scalar(v->type)))
		return false;
	const IrType *vt = v->type;
	bool colvec = vt->rank == 1 || (vt->rank == 2 && vt->shape[0] == 1);
	if (d->opc == OP_REM && colvec && ck && ck->n < 4 && ir_type_bits(ir_scalar(vt)) <= 64) {
		/* (x % n): unit unless the range wraps; checked at run time */
		ck->v[ck->n++] = v;
		return true;
	}
	switch (d->opc) {
	case OP_MAKE_RANGE:
		return true;
	case OP_EXPAND_DIMS:
		/* [C] -> [1, C] */
		return ir_op_int(d, "axis", -1) == 0 && d->ops[0]->type->rank == 1 && unit_cols(d->ops[0], depth + 1, ck);
	case OP_BROADCAST: {
		const IrType *ot = d->ops[0]->type, *t = v->type;
		return ir_is_block(ot) && ot->rank == t->rank &&
		       ot->shape[ot->rank - 1] == t->shape[t->rank - 1] && unit_cols(d->ops[0], depth + 1, ck);
	}
	case OP_ADD:
		return (unit_cols(d->ops[0], depth + 1, ck) && row_uniform(d->ops[1], depth + 1)) ||
		       (unit_cols(d->ops[1], depth + 1, ck) && row_uniform(d->ops[0], depth + 1));
	case OP_SUB:
		return unit_cols(d->ops[0], depth + 1, ck) && row_uniform(d->ops[1], depth + 1);
	case OP_MUL:
		return (unit_cols(d->ops[0], depth + 1, ck) && const_one(d->ops[1])) ||
		       (unit_cols(d->ops[1], depth + 1, ck) && const_one(d->ops[0]));
	default:
		return false;
	}
}

/* assumed: a `for` carried value taken as row-contiguous while its body's
 * yield is checked (induction over the iterations). */
static bool row_contig(const IrValue *v, const IrValue *assumed, int depth, Checks *ck)
{
	if (v == assumed)
		return true;
	const IrType *t = v->type;
	if (depth > FACT_DEPTH || !ir_is_block(t) || t->rank != 2 || ir_scalar(t)->kind != TY_PTR)
		return false;
	const IrOp *d = v->def;
	if (!d) {
		IrBlock *blk = v->owner;
		IrOp *f = blk ? blk->parent_op : NULL;
		if (!f || f->opc != OP_FOR || f->nregions < 1 || f->regions[0] != blk || v->index < 1 ||
		    3 + v->index - 1 >= f->nops || assumed)
			return false;
		IrOp *y = ir_block_terminator(blk);
		if (!y || y->opc != OP_YIELD || v->index - 1 >= y->nops)
			return false;
		/* checks only on the initial value: it dominates the body */
		return row_contig(f->ops[3 + v->index - 1], NULL, depth + 1, ck) &&
		       row_contig(y->ops[v->index - 1], v, depth + 1, NULL);
	}
	if (d->opc != OP_ADDPTR)
		return false;
	int n0 = ck ? ck->n : 0;
	if (row_uniform(d->ops[0], depth + 1) && unit_cols(d->ops[1], depth + 1, ck))
		return true;
	if (ck)
		ck->n = n0;
	return row_contig(d->ops[0], assumed, depth + 1, ck) && row_uniform(d->ops[1], depth + 1);
}

/* A load through a row-contiguous [R, C] pointer block: one vector load
 * per row from the row's first pointer. A row whose mask is not all on
 * goes element by element under the mask (a masked-off element touches no
 * memory). Returns false when the fast path does not apply. */
static bool load_rows(Cg *cg, IrOp *op, Access *a, LLVMValueRef *res)
{
	const IrType *pt = op->ops[0]->type;
	if (op->opc != OP_LOAD || !ir_is_block(pt) || pt->rank != 2 || a->et->kind == TY_I1 ||
	    ir_op_int(op, "volatile", 0) || a->nv != 1)
		return false;
	int64_t R = pt->shape[0], C = pt->shape[1];
	Checks ck = {.n = 0};
	if (C < 4 || C > 1024 || !row_contig(op->ops[0], NULL, 0, &ck))
		return false;
	if (a->mv && (!ir_is_block(a->mv->type) || a->mv->type->numel != pt->numel))
		return false;
	if (a->ov && ir_is_block(a->ov->type) && a->ov->type->numel != pt->numel)
		return false;
	const IrType *rt = op->res[0].type;
	LLVMBuilderRef b = cg->b;
	LLVMTypeRef st = cg_sty(cg, a->et), vt = LLVMVectorType(st, (unsigned)C);
	unsigned al = (unsigned)cg_esize(a->et);
	/* masks and `other` in memory (or uniform), before the loop */
	CgVal m = a->mv ? cg_get(cg, a->mv) : (CgVal){CV_NONE, NULL, NULL};
	CgVal o = a->ov ? cg_get(cg, a->ov) : (CgVal){CV_NONE, NULL, NULL};
	CgVal pv = cg_get_lazy(cg, op->ops[0]);
	if (m.kind != CV_NONE && !cg_uniform(m))
		m = cg_bufv(cg_materialize(cg, m, a->mv->type));
	if (o.kind != CV_NONE && !cg_uniform(o))
		o = cg_bufv(cg_materialize(cg, o, a->ov->type));
	LLVMValueRef out = cg_newbuf(cg, rt);
	LLVMBasicBlockRef gen = NULL, done = NULL;
	if (ck.n) {
		/* each checked column vector u: u[j] == u[0] + j (no wrap) */
		LLVMValueRef ok = cg_alloca(cg, cg->t_i1);
		LLVMBuildStore(b, LLVMConstInt(cg->t_i1, 1, 0), ok);
		for (int k = 0; k < ck.n; k++) {
			const IrValue *u = ck.v[k];
			CgVal uv = cg_get(cg, u);
			bool sg = ir_is_signed(ir_scalar(u->type));
			LLVMValueRef u0 = cg_elem(cg, uv, u->type, cg_i64(cg, 0));
			u0 = sg ? LLVMBuildSExt(b, u0, cg->t_i64, "") : LLVMBuildZExt(b, u0, cg->t_i64, "");
			CgLoop lc;
			LLVMValueRef j = cg_loop_begin(cg, &lc, cg_i64(cg, u->type->numel));
			LLVMValueRef uj = cg_elem(cg, uv, u->type, j);
			uj = sg ? LLVMBuildSExt(b, uj, cg->t_i64, "") : LLVMBuildZExt(b, uj, cg->t_i64, "");
			LLVMValueRef e = LLVMBuildICmp(b, LLVMIntEQ, uj, LLVMBuildAdd(b, u0, j, ""), "");
			LLVMBuildStore(b, LLVMBuildAnd(b, LLVMBuildLoad2(b, cg->t_i1, ok, ""), e, ""), ok);
			cg_loop_end(cg, &lc);
		}
		LLVMBasicBlockRef rows = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "ld.rows");
		gen = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "ld.gen");
		done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "ld.done");
		LLVMBuildCondBr(b, LLVMBuildLoad2(b, cg->t_i1, ok, ""), rows, gen);
		LLVMPositionBuilderAtEnd(b, rows);
	}
	CgLoop l;
	LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, R));
	LLVMValueRef i0 = LLVMBuildNSWMul(b, i, cg_i64(cg, C), "");
	LLVMValueRef p = cg_elem(cg, pv, pt, i0);
	LLVMValueRef dst = LLVMBuildInBoundsGEP2(b, st, out, &i0, 1, "");
	LLVMValueRef allon = NULL;
	if (m.kind == CV_BUF) {
		LLVMValueRef mp = LLVMBuildInBoundsGEP2(b, cg->t_i8, m.v, &i0, 1, "");
		LLVMValueRef mrow = LLVMBuildLoad2(b, LLVMVectorType(cg->t_i8, (unsigned)C), mp, "");
		LLVMSetAlignment(mrow, 1);
		mrow = LLVMBuildICmp(b, LLVMIntNE, mrow, LLVMConstNull(LLVMTypeOf(mrow)), "");
		LLVMTypeRef mt = LLVMTypeOf(mrow);
		allon = cg_intrinsic(cg, "llvm.vector.reduce.and", &mt, 1, &mrow, 1);
	} else if (m.kind != CV_NONE) {
		allon = m.v;
	}
	LLVMBasicBlockRef fast = NULL, slow = NULL, join = NULL;
	if (allon) {
		fast = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "ld.row");
		slow = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "ld.rowm");
		join = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "ld.rowd");
		LLVMBuildCondBr(b, allon, fast, slow);
		LLVMPositionBuilderAtEnd(b, fast);
	}
	LLVMValueRef x = LLVMBuildLoad2(b, vt, p, "");
	LLVMSetAlignment(x, al);
	LLVMSetAlignment(LLVMBuildStore(b, x, dst), al);
	if (allon) {
		LLVMBuildBr(b, join);
		LLVMPositionBuilderAtEnd(b, slow);
		CgLoop lj;
		LLVMValueRef j = cg_loop_begin(cg, &lj, cg_i64(cg, C));
		LLVMValueRef ij = LLVMBuildNSWAdd(b, i0, j, "");
		Guard g;
		guard_begin(cg, &g, cg_elem(cg, m, a->mv->type, ij));
		LLVMValueRef pj = LLVMBuildGEP2(b, st, p, &j, 1, "");
		LLVMValueRef y = load_elem(cg, op, pj, a->et);
		LLVMValueRef off = o.kind != CV_NONE ? cg_elem(cg, o, a->ov->type, ij) : zero_of(cg, a->et);
		y = guard_end(cg, &g, y, off);
		cg_store_elem(cg, out, rt, ij, y);
		cg_loop_end(cg, &lj);
		LLVMBuildBr(b, join);
		LLVMPositionBuilderAtEnd(b, join);
	}
	cg_loop_end(cg, &l);
	if (ck.n) {
		LLVMBuildBr(b, done);
		LLVMPositionBuilderAtEnd(b, gen);
		access_loops(cg, a, out, rt);
		LLVMBuildBr(b, done);
		LLVMPositionBuilderAtEnd(b, done);
	}
	*res = out;
	return true;
}

static void lower_access(Cg *cg, IrOp *op)
{
	if (op->opc == OP_STORE) {
		lower_store(cg, op);
		return;
	}
	Access a;
	if (!access_init(cg, op, &a))
		return;
	const IrType *rt = op->nres ? op->res[0].type : NULL;
	if (!a.block) {
		LLVMValueRef r = access_elem(cg, &a, NULL, a.mv != NULL);
		if (rt)
			cg_set(cg, &op->res[0], cg_scalar(r));
		return;
	}
	if (op->opc == OP_LOAD && defer_load(cg, op, &a)) {
		cg_set(cg, &op->res[0], cg_lazy(op));
		cg->pend[cg->npend++] = &op->res[0];
		return;
	}
	LLVMValueRef rows;
	if (op->opc == OP_LOAD && load_rows(cg, op, &a, &rows)) {
		cg_set(cg, &op->res[0], cg_bufv(rows));
		return;
	}
	LLVMValueRef out = rt ? cg_newbuf(cg, rt) : NULL;
	access_loops(cg, &a, out, rt);
	if (rt)
		cg_set(cg, &op->res[0], cg_bufv(out));
}

static LLVMValueRef gstr(Cg *cg, const char *s)
{
	return LLVMBuildGlobalStringPtr(cg->b, s, "str");
}

static void lower_print(Cg *cg, IrOp *op)
{
	const char *prefix = ir_op_str(op, "prefix", "");
	bool hex = ir_op_int(op, "hex", 0) != 0;
	LLVMTypeRef pt[1] = {cg->t_ptr};
	LLVMValueRef args[16];
	if (op->nops == 0) {
		args[0] = gstr(cg, "pid (%d, %d, %d) %s\n");
		for (int d = 0; d < 3; d++)
			args[1 + d] = cg->pid[d];
		args[4] = gstr(cg, prefix);
		cg_call_ext(cg, "printf", cg->t_i32, pt, 1, args, 5, true);
		return;
	}
	for (int k = 0; k < op->nops; k++) {
		const IrType *t = op->ops[k]->type, *et = ir_scalar(t);
		CgVal v = cg_get(cg, op->ops[k]);
		bool block = ir_is_block(t);
		char fmt[256], idxf[96] = "";
		const char *vf;
		if (et->kind == TY_PTR)
			vf = "%p";
		else if (ir_is_float(et))
			vf = hex ? "%a" : "%f";
		else if (hex)
			vf = "0x%llx";
		else
			vf = ir_is_signed(et) ? "%lld" : "%llu";
		if (block) {
			strcpy(idxf, " idx (");
			for (int d = 0; d < t->rank; d++)
				strcat(idxf, d ? ", %lld" : "%lld");
			strcat(idxf, ")");
		}
		snprintf(fmt, sizeof fmt, "pid (%%d, %%d, %%d)%s %%s%s%s\n", idxf,
			 op->nops > 1 ? ir_fmt(cg->ictx, " (operand %d) ", k) : "", vf);
		CgLoop l;
		LLVMValueRef i = NULL;
		if (block)
			i = cg_loop_begin(cg, &l, cg_i64(cg, t->numel));
		int n = 0;
		args[n++] = gstr(cg, fmt);
		for (int d = 0; d < 3; d++)
			args[n++] = cg->pid[d];
		if (block) {
			int64_t stride = t->numel;
			for (int d = 0; d < t->rank; d++) {
				stride /= t->shape[d];
				LLVMValueRef q = LLVMBuildUDiv(cg->b, i, cg_i64(cg, stride), "");
				args[n++] = LLVMBuildURem(cg->b, q, cg_i64(cg, t->shape[d]), "");
			}
		}
		args[n++] = gstr(cg, prefix);
		LLVMValueRef x = cg_elem(cg, v, t, i);
		if (et->kind == TY_PTR || et->kind == TY_F64)
			;
		else if (ir_is_float(et))
			x = LLVMBuildFPExt(cg->b, cg_to_f32(cg, x, et), cg->t_f64, "");
		else if (ir_type_bits(et) < 64)
			x = ir_is_signed(et) ? LLVMBuildSExt(cg->b, x, cg->t_i64, "") : LLVMBuildZExt(cg->b, x, cg->t_i64, "");
		args[n++] = x;
		cg_call_ext(cg, "printf", cg->t_i32, pt, 1, args, n, true);
		if (block)
			cg_loop_end(cg, &l);
	}
}

static void lower_assert(Cg *cg, IrOp *op)
{
	if (ir_op_int(op, "overflow", 0)) { /* emitted under debug or the sanitizer */
		cg_san_overflow(cg, op);
		return;
	}
	if (!cg->opt.debug)
		return;
	const IrType *t = op->ops[0]->type;
	CgVal c = cg_get(cg, op->ops[0]);
	LLVMValueRef ok;
	if (!cg_uniform(c)) {
		LLVMValueRef all = cg_alloca(cg, cg->t_i1);
		LLVMBuildStore(cg->b, LLVMConstInt(cg->t_i1, 1, 0), all);
		CgLoop l;
		LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, t->numel));
		LLVMValueRef x = cg_elem(cg, c, t, i);
		if (ir_scalar(t)->kind != TY_I1)
			x = LLVMBuildICmp(cg->b, LLVMIntNE, x, LLVMConstNull(LLVMTypeOf(x)), "");
		LLVMValueRef a = LLVMBuildLoad2(cg->b, cg->t_i1, all, "");
		LLVMBuildStore(cg->b, LLVMBuildAnd(cg->b, a, x, ""), all);
		cg_loop_end(cg, &l);
		ok = LLVMBuildLoad2(cg->b, cg->t_i1, all, "");
	} else {
		ok = c.v;
		if (ir_scalar(t)->kind != TY_I1)
			ok = LLVMBuildICmp(cg->b, LLVMIntNE, ok, LLVMConstNull(LLVMTypeOf(ok)), "");
	}
	LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "assert.fail");
	LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "assert.ok");
	LLVMBuildCondBr(cg->b, ok, cont, fail);
	LLVMPositionBuilderAtEnd(cg->b, fail);
	LLVMTypeRef pt[4] = {cg->t_ptr, cg->t_ptr, cg->t_ptr, cg->t_i32};
	LLVMValueRef args[4] = {cg->wctx, gstr(cg, ir_op_str(op, "msg", "")),
				gstr(cg, op->loc.file ? op->loc.file : "<unknown>"), cg_i32(cg, op->loc.line)};
	LLVMValueRef call = cg_call_ext(cg, "ct_cpu_assert_fail", cg->t_void, pt, 4, args, 4, false);
	(void)call;
	LLVMBuildUnreachable(cg->b);
	LLVMPositionBuilderAtEnd(cg->b, cont);
}

void cg_lower_mem(Cg *cg, IrOp *op)
{
	switch (op->opc) {
	case OP_PRINT: lower_print(cg, op); return;
	case OP_ASSERT: lower_assert(cg, op); return;
	default: lower_access(cg, op); return;
	}
}
