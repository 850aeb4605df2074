/* sanitize.c: the bounds checks of BeOptions.sanitize, and the run-time
 * helpers they call.
 *
 * Before each load, store and atomic, the check reduces the addresses of
 * the access's active elements (mask on, or all without a mask) to their
 * lowest address and the end of the highest element, and compares that
 * range with the extent [lo, hi) of the kernel argument the pointer derives
 * from (found in the IR: through addptr, splat, broadcast, reshapes,
 * selects and values carried by for/while/if; the launch passes the
 * extents, backend.h). Masked-off elements take no part, so masked tails
 * are never reported. A pointer of no single origin (two arguments, an
 * int_to_ptr, a loaded pointer, a callee's parameter) is checked at run
 * time against every argument's extent. The first failure records its
 * message and leaves the program instance (as a failed assert does) before
 * the access runs, so nothing outside a tensor is read or written.
 *
 * The integer overflow asserts the frontend emits (assert {overflow}, under
 * the sanitizer or debug) are lowered here too: a failure names the first
 * element whose result does not fit, and its operands.
 */
#include <stdio.h>
#include <string.h>

#include "backend/cpu/cpu.h"

/* ---- origin of a pointer value -------------------------------------------- */

enum { ORIGIN_UNKNOWN = -1, ORIGIN_NONE = -2, ORIGIN_DEPTH = 48 };

static int merge(int a, int b)
{
	if (a == ORIGIN_NONE)
		return b;
	if (b == ORIGIN_NONE || a == b)
		return a;
	return ORIGIN_UNKNOWN;
}

typedef struct Walk {
	const IrValue *stack[ORIGIN_DEPTH];
	int n;
} Walk;

static int origin(Walk *w, const IrValue *v);

static const IrValue *yielded(const IrBlock *region, int k)
{
	const IrOp *t = region ? region->last : NULL;
	if (!t || (t->opc != OP_YIELD && t->opc != OP_CONDITION))
		return NULL;
	if (t->opc == OP_CONDITION)
		k++; /* condition(cond, forwarded...) */
	return k < t->nops ? t->ops[k] : NULL;
}

static int origin_of(Walk *w, const IrValue *v)
{
	return v ? origin(w, v) : ORIGIN_UNKNOWN;
}

/* A region argument: what flows into it. */
static int origin_arg(Walk *w, const IrValue *v)
{
	const IrBlock *b = v->owner;
	if (!b)
		return ORIGIN_UNKNOWN;
	const IrOp *p = b->parent_op;
	if (!p) /* a function parameter: the kernel's arguments only */
		return b->func && b->func->is_kernel ? v->index : ORIGIN_UNKNOWN;
	int k = v->index;
	switch (p->opc) {
	case OP_FOR: /* body args: iv, carried... */
		if (k == 0 || 3 + k - 1 >= p->nops)
			return ORIGIN_UNKNOWN;
		return merge(origin_of(w, p->ops[3 + k - 1]), origin_of(w, yielded(b, k - 1)));
	case OP_WHILE:
		if (b == p->regions[0]) /* before: the inits, then what after yields */
			return k < p->nops ? merge(origin_of(w, p->ops[k]), origin_of(w, yielded(p->regions[1], k)))
					   : ORIGIN_UNKNOWN;
		return origin_of(w, yielded(p->regions[0], k)); /* after: the forwarded values */
	default: return ORIGIN_UNKNOWN;
	}
}

static int origin_def(Walk *w, const IrValue *v)
{
	const IrOp *d = v->def;
	int k = v->index;
	switch (d->opc) {
	case OP_SPLAT:
	case OP_BROADCAST:
	case OP_EXPAND_DIMS:
	case OP_RESHAPE:
	case OP_TRANS:
	case OP_SPLIT:
	case OP_GATHER:
	case OP_CONVERT_LAYOUT:
	case OP_MULTIPLE_OF:
	case OP_MAX_CONTIGUOUS:
	case OP_MAX_CONSTANCY:
	case OP_BITCAST:
	case OP_ADDPTR: return origin(w, d->ops[0]);
	case OP_SELECT: return merge(origin(w, d->ops[1]), origin(w, d->ops[2]));
	case OP_CAT:
	case OP_JOIN: return merge(origin(w, d->ops[0]), origin(w, d->ops[1]));
	case OP_FOR:
		if (3 + k >= d->nops)
			return ORIGIN_UNKNOWN;
		return merge(origin(w, d->ops[3 + k]), origin_of(w, yielded(d->regions[0], k)));
	case OP_IF: return merge(origin_of(w, yielded(d->regions[0], k)), origin_of(w, yielded(d->regions[1], k)));
	case OP_WHILE: return origin_of(w, yielded(d->regions[0], k));
	default: return ORIGIN_UNKNOWN; /* int_to_ptr, load, call, ... */
	}
}

static int origin(Walk *w, const IrValue *v)
{
	for (int i = 0; i < w->n; i++)
		if (w->stack[i] == v)
			return ORIGIN_NONE; /* a cycle through a loop adds nothing */
	if (w->n == ORIGIN_DEPTH)
		return ORIGIN_UNKNOWN;
	w->stack[w->n++] = v;
	int r = v->def ? origin_def(w, v) : origin_arg(w, v);
	w->n--;
	return r;
}

/* ---- the check ------------------------------------------------------------ */

/* The extents table, loaded once in the function's entry block. */
static LLVMValueRef san_ext(Cg *cg)
{
	if (cg->san_ext)
		return cg->san_ext;
	LLVMTypeRef pt = cg->t_ptr;
	LLVMTypeRef fty = LLVMFunctionType(cg->t_ptr, &pt, 1, 0);
	LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, "ct_cpu_san_ext");
	if (!fn)
		fn = LLVMAddFunction(cg->mod, "ct_cpu_san_ext", fty);
	LLVMValueRef w = cg->wctx;
	cg->san_ext = LLVMBuildCall2(cg->ab, fty, fn, &w, 1, "ext");
	return cg->san_ext;
}

static LLVMValueRef ext_word(Cg *cg, int k)
{
	LLVMValueRef idx = cg_i64(cg, k);
	LLVMValueRef p = LLVMBuildInBoundsGEP2(cg->b, cg->t_i64, san_ext(cg), &idx, 1, "");
	return LLVMBuildLoad2(cg->b, cg->t_i64, p, "");
}

static LLVMValueRef umin(Cg *cg, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, a, b, ""), a, b, "");
}

static LLVMValueRef umax(Cg *cg, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntUGT, a, b, ""), a, b, "");
}

/* Lowest address, highest address and whether any element is active, of
 * the elements of p under mask m (m.kind CV_NONE: all). */
static void active_range(Cg *cg, CgVal p, const IrType *pt, CgVal m, const IrType *mt, int64_t es,
			 LLVMValueRef *lo, LLVMValueRef *hi, LLVMValueRef *any)
{
	bool masked = m.kind != CV_NONE;
	if (cg_uniform(p) && (!masked || cg_uniform(m))) {
		*lo = *hi = LLVMBuildPtrToInt(cg->b, p.v, cg->t_i64, "");
		*any = masked ? m.v : LLVMConstInt(cg->t_i1, 1, 0);
		return;
	}
	if (p.kind == CV_AFF && (!masked || cg_uniform(m))) { /* &base[0 .. n) */
		*lo = LLVMBuildPtrToInt(cg->b, p.v, cg->t_i64, "");
		*hi = LLVMBuildAdd(cg->b, *lo, cg_i64(cg, (pt->numel - 1) * es), "");
		*any = masked ? m.v : LLVMConstInt(cg->t_i1, 1, 0);
		return;
	}
	int64_t n = ir_is_block(pt) ? pt->numel : mt->numel;
	LLVMValueRef lop = cg_alloca(cg, cg->t_i64), hip = cg_alloca(cg, cg->t_i64);
	LLVMBuildStore(cg->b, LLVMConstInt(cg->t_i64, ~0ull, 0), lop);
	LLVMBuildStore(cg->b, cg_i64(cg, 0), hip);
	CgLoop l;
	LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, n));
	LLVMValueRef a = LLVMBuildPtrToInt(cg->b, cg_elem(cg, p, pt, i), cg->t_i64, "");
	LLVMValueRef l0 = LLVMBuildLoad2(cg->b, cg->t_i64, lop, "");
	LLVMValueRef h0 = LLVMBuildLoad2(cg->b, cg->t_i64, hip, "");
	LLVMValueRef l1 = umin(cg, l0, a), h1 = umax(cg, h0, a);
	if (masked) {
		LLVMValueRef on = cg_elem(cg, m, mt, i);
		l1 = LLVMBuildSelect(cg->b, on, l1, l0, "");
		h1 = LLVMBuildSelect(cg->b, on, h1, h0, "");
	}
	LLVMBuildStore(cg->b, l1, lop);
	LLVMBuildStore(cg->b, h1, hip);
	cg_loop_end(cg, &l);
	*lo = LLVMBuildLoad2(cg->b, cg->t_i64, lop, "");
	*hi = LLVMBuildLoad2(cg->b, cg->t_i64, hip, "");
	*any = LLVMBuildICmp(cg->b, LLVMIntULE, *lo, *hi, "");
}

void cg_san_check(Cg *cg, IrOp *op)
{
	IrOpcode opc = op->opc;
	const IrValue *pv = op->ops[0];
	const IrType *et = ir_scalar(pv->type)->elem;
	if (!et || et->kind == TY_BLOCK)
		return; /* not an access the CPU supports; the lowering reports it */
	int maskidx = opc == OP_LOAD ? 1 : opc == OP_STORE || opc == OP_ATOMIC_RMW ? 2 : -1;
	const IrValue *mv = maskidx >= 0 && op->nops > maskidx ? op->ops[maskidx] : NULL;
	const IrType *mt = mv ? mv->type : NULL;
	int64_t es = cg_esize(et);
	Walk w = {.n = 0};
	int k = origin(&w, pv);
	const char *file = op->loc.file ? op->loc.file : "<unknown>";
	const char *where = ir_fmt(cg->ictx, "%s at %s:%d:%d", ir_opinfo(opc)->name, file, op->loc.line,
				   op->loc.col);
	LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "san.bad");
	LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "san.ok");
	CgVal p = cg_get(cg, pv);
	CgVal m = {CV_NONE, NULL, NULL};
	LLVMValueRef lo, hi, any;
	if (k >= 0) {
		LLVMValueRef elo = ext_word(cg, 2 * k), ehi = ext_word(cg, 2 * k + 1);
		if (p.kind == CV_AFF && mv) {
			/* a contiguous block whose every element is in bounds needs
			 * no look at its mask; else the mask is read lazily here
			 * (computing it into a buffer on one branch only would not do) */
			LLVMValueRef flo = LLVMBuildPtrToInt(cg->b, p.v, cg->t_i64, "");
			LLVMValueRef fend = LLVMBuildAdd(cg->b, flo, cg_i64(cg, pv->type->numel * es), "");
			LLVMValueRef in = LLVMBuildAnd(cg->b, LLVMBuildICmp(cg->b, LLVMIntUGE, flo, elo, ""),
						       LLVMBuildICmp(cg->b, LLVMIntULE, fend, ehi, ""), "");
			LLVMBasicBlockRef exact = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "san.exact");
			LLVMBuildCondBr(cg->b, in, ok, exact);
			LLVMPositionBuilderAtEnd(cg->b, exact);
			m = cg_get_lazy(cg, mv);
		} else if (mv) {
			m = cg_get(cg, mv);
		}
		active_range(cg, p, pv->type, m, mt, es, &lo, &hi, &any);
		LLVMValueRef end = LLVMBuildAdd(cg->b, hi, cg_i64(cg, es), "");
		LLVMValueRef out = LLVMBuildOr(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, lo, elo, ""),
					       LLVMBuildICmp(cg->b, LLVMIntUGT, end, ehi, ""), "");
		LLVMBuildCondBr(cg->b, LLVMBuildAnd(cg->b, any, out, ""), bad, ok);
		LLVMPositionBuilderAtEnd(cg->b, bad);
		const IrFunc *f = cg->cur->f;
		const IrAttr *na = ir_find_attr(f->params[k].nattrs, f->params[k].attrs, "name");
		const char *name = na && na->kind == ATTR_STR ? na->s
				 : f->params[k].name ? f->params[k].name
						     : ir_fmt(cg->ictx, "#%d", k);
		const char *site = ir_fmt(cg->ictx, "%s|%s", where, name);
		LLVMTypeRef pt[9] = {cg->t_ptr, cg->t_ptr, cg->t_i32, cg->t_i64, cg->t_i64,
				     cg->t_i32, cg->t_i32, cg->t_i32, cg->t_i32};
		LLVMValueRef args[9] = {cg->wctx, LLVMBuildGlobalStringPtr(cg->b, site, "san.site"),
					cg_i32(cg, k), lo, end, cg_i32(cg, es), cg->pid[0], cg->pid[1], cg->pid[2]};
		cg_call_ext(cg, "ct_cpu_san_fail", cg->t_void, pt, 9, args, 9, false);
		LLVMBuildUnreachable(cg->b);
	} else {
		if (mv)
			m = cg_get(cg, mv);
		active_range(cg, p, pv->type, m, mt, es, &lo, &hi, &any);
		LLVMValueRef end = LLVMBuildAdd(cg->b, hi, cg_i64(cg, es), "");
		LLVMBuildCondBr(cg->b, any, bad, ok);
		LLVMPositionBuilderAtEnd(cg->b, bad);
		LLVMTypeRef pt[8] = {cg->t_ptr, cg->t_ptr, cg->t_i64, cg->t_i64,
				     cg->t_i32, cg->t_i32, cg->t_i32, cg->t_i32};
		LLVMValueRef args[8] = {cg->wctx, LLVMBuildGlobalStringPtr(cg->b, where, "san.site"), lo, end,
					cg_i32(cg, es), cg->pid[0], cg->pid[1], cg->pid[2]};
		cg_call_ext(cg, "ct_cpu_san_any", cg->t_void, pt, 8, args, 8, false);
		LLVMBuildBr(cg->b, ok);
	}
	LLVMPositionBuilderAtEnd(cg->b, ok);
}

/* ---- integer overflow ------------------------------------------------------ */

/* The i64 add/sub/mul an {overflow} assert's condition checks, as the
 * frontend builds it: and(cmp(r, max), cmp(r, min)); NULL if not found. */
static const IrOp *overflow_op(const IrValue *cond)
{
	const IrOp *a = cond->def;
	if (!a || a->opc != OP_AND || a->nops != 2 || !a->ops[0]->def || a->ops[0]->def->opc != OP_CMP)
		return NULL;
	const IrOp *c = a->ops[0]->def;
	for (int k = 0; k < c->nops; k++) {
		const IrOp *r = c->ops[k]->def;
		if (r && (r->opc == OP_ADD || r->opc == OP_SUB || r->opc == OP_MUL) && r->nops == 2 &&
		    ir_scalar(r->res[0].type)->kind == TY_I64)
			return r;
	}
	return NULL;
}

void cg_san_overflow(Cg *cg, IrOp *op)
{
	const IrValue *cv = op->ops[0];
	const IrType *t = cv->type;
	CgVal c = cg_get(cg, cv);
	LLVMValueRef ok;
	if (cg_uniform(c)) {
		ok = c.v;
	} else {
		LLVMValueRef all = cg_alloca(cg, cg->t_i1);
		LLVMBuildStore(cg->b, LLVMConstInt(cg->t_i1, 1, 0), all);
		CgLoop l;
		LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, t->numel));
		LLVMValueRef a = LLVMBuildLoad2(cg->b, cg->t_i1, all, "");
		LLVMBuildStore(cg->b, LLVMBuildAnd(cg->b, a, cg_elem(cg, c, t, i), ""), all);
		cg_loop_end(cg, &l);
		ok = LLVMBuildLoad2(cg->b, cg->t_i1, all, "");
	}
	LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "ovf.bad");
	LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "ovf.ok");
	LLVMBuildCondBr(cg->b, ok, cont, bad);
	LLVMPositionBuilderAtEnd(cg->b, bad);
	/* the first element that overflows (-1: a scalar), and its operands */
	LLVMValueRef idx = cg_i64(cg, -1), at = cg_i64(cg, 0);
	if (!cg_uniform(c)) {
		LLVMValueRef first = cg_alloca(cg, cg->t_i64);
		LLVMBuildStore(cg->b, cg_i64(cg, t->numel), first);
		CgLoop l;
		LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, t->numel));
		LLVMValueRef f = LLVMBuildLoad2(cg->b, cg->t_i64, first, "");
		LLVMValueRef hit = LLVMBuildAnd(cg->b, LLVMBuildNot(cg->b, cg_elem(cg, c, t, i), ""),
						LLVMBuildICmp(cg->b, LLVMIntSGT, f, i, ""), "");
		LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, hit, i, f, ""), first);
		cg_loop_end(cg, &l);
		idx = at = LLVMBuildLoad2(cg->b, cg->t_i64, first, "");
	}
	const IrOp *r = overflow_op(cv);
	LLVMValueRef x = cg_i64(cg, 0), y = cg_i64(cg, 0), z = cg_i64(cg, 0);
	if (r) {
		x = cg_elem(cg, cg_get_lazy(cg, r->ops[0]), r->ops[0]->type, at);
		y = cg_elem(cg, cg_get_lazy(cg, r->ops[1]), r->ops[1]->type, at);
		z = cg_elem(cg, cg_get_lazy(cg, &r->res[0]), r->res[0].type, at);
	}
	char sym = !r ? 0 : r->opc == OP_ADD ? '+' : r->opc == OP_SUB ? '-' : '*';
	const char *file = op->loc.file ? op->loc.file : "<unknown>";
	const char *site = ir_fmt(cg->ictx, "%s at %s:%d:%d", ir_op_str(op, "msg", "integer overflow"), file,
				  op->loc.line, op->loc.col);
	LLVMTypeRef pt[10] = {cg->t_ptr, cg->t_ptr, cg->t_i32, cg->t_i64, cg->t_i64,
			      cg->t_i64, cg->t_i64, cg->t_i32, cg->t_i32, cg->t_i32};
	LLVMValueRef args[10] = {cg->wctx, LLVMBuildGlobalStringPtr(cg->b, site, "ovf.site"), cg_i32(cg, sym), idx, x,
				 y, z, cg->pid[0], cg->pid[1], cg->pid[2]};
	cg_call_ext(cg, "ct_cpu_overflow_fail", cg->t_void, pt, 10, args, 10, false);
	LLVMBuildUnreachable(cg->b);
	LLVMPositionBuilderAtEnd(cg->b, cont);
}

void cg_san_hint(Cg *cg, IrOp *op)
{
	const IrValue *x = op->ops[0];
	const IrType *t = x->type;
	const IrAttr *a = ir_op_attr(op, "values");
	if (ir_is_block(t) || !a || a->kind != ATTR_INTS || a->n < 1 || a->ints[0] <= 1 ||
	    !(ir_is_ptr(t) || (ir_is_int(t) && t->kind != TY_I1)))
		return;
	LLVMValueRef v = cg_get(cg, x).v;
	bool sgn = ir_is_signed(t);
	if (ir_is_ptr(t))
		v = LLVMBuildPtrToInt(cg->b, v, cg->t_i64, "");
	else if (LLVMGetIntTypeWidth(LLVMTypeOf(v)) != 64)
		v = sgn ? LLVMBuildSExt(cg->b, v, cg->t_i64, "") : LLVMBuildZExt(cg->b, v, cg->t_i64, "");
	LLVMValueRef q = cg_i64(cg, a->ints[0]);
	LLVMValueRef r = sgn ? LLVMBuildSRem(cg->b, v, q, "") : LLVMBuildURem(cg->b, v, q, "");
	LLVMValueRef ok = LLVMBuildICmp(cg->b, LLVMIntEQ, r, cg_i64(cg, 0), "");
	LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "hint.bad");
	LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "hint.ok");
	LLVMBuildCondBr(cg->b, ok, cont, bad);
	LLVMPositionBuilderAtEnd(cg->b, bad);
	const char *file = op->loc.file ? op->loc.file : "<unknown>";
	const char *site = ir_fmt(cg->ictx, "multiple_of hint does not hold at %s:%d:%d", file, op->loc.line,
				  op->loc.col);
	LLVMTypeRef pt[7] = {cg->t_ptr, cg->t_ptr, cg->t_i64, cg->t_i64, cg->t_i32, cg->t_i32, cg->t_i32};
	LLVMValueRef args[7] = {cg->wctx, LLVMBuildGlobalStringPtr(cg->b, site, "hint.site"), v, q,
				cg->pid[0], cg->pid[1], cg->pid[2]};
	cg_call_ext(cg, "ct_cpu_hint_fail", cg->t_void, pt, 7, args, 7, false);
	LLVMBuildUnreachable(cg->b);
	LLVMPositionBuilderAtEnd(cg->b, cont);
}

/* ---- run time --------------------------------------------------------------- */

bool be_cpu_kernel_sanitized(const BeCpuKernel *k)
{
	return k && k->sanitize;
}

const uint64_t *ct_cpu_san_ext(void *wctx)
{
	CpuWorker *w = wctx;
	return w->launch->ext;
}

/* Records msg as the launch's failure (the first one wins) and leaves the
 * program instance. */
static void san_stop(CpuWorker *w, const char *msg)
{
	CpuLaunch *l = w->launch;
	int expect = 0;
	if (atomic_compare_exchange_strong(&l->failed, &expect, 1))
		snprintf(l->msg, sizeof l->msg, "%s", msg);
	longjmp(w->jb, 1);
}

static int64_t elem_index(uint64_t addr, uint64_t base, int32_t esize)
{
	return (int64_t)(addr - base) / (int64_t)esize;
}

/* site is "load at file:line:col|argument name". */
void ct_cpu_san_fail(void *wctx, const char *site, int32_t arg, uint64_t lo, uint64_t end, int32_t esize,
		     int32_t px, int32_t py, int32_t pz)
{
	CpuWorker *w = wctx;
	CpuLaunch *l = w->launch;
	const char *bar = strrchr(site, '|');
	int nwhere = bar ? (int)(bar - site) : (int)strlen(site);
	const char *name = bar ? bar + 1 : "?";
	uint64_t base = 0, elo = 0, ehi = 0;
	if (l->k && arg >= 0 && arg < l->k->nparams) {
		memcpy(&base, l->params[arg], sizeof base);
		elo = l->ext[2 * arg];
		ehi = l->ext[2 * arg + 1];
	}
	char msg[1024];
	snprintf(msg, sizeof msg,
		 "out-of-bounds %.*s (kernel %s, program (%d, %d, %d)): elements [%lld, %lld] of "
		 "argument '%s', which has elements [%lld, %lld) (%d bytes each)",
		 nwhere, site, l->k ? l->k->name : "?", (int)px, (int)py, (int)pz,
		 (long long)elem_index(lo, base, esize), (long long)elem_index(end, base, esize) - 1, name,
		 (long long)elem_index(elo, base, esize), (long long)elem_index(ehi, base, esize), (int)esize);
	san_stop(w, msg);
}

void ct_cpu_san_any(void *wctx, const char *site, uint64_t lo, uint64_t end, int32_t esize, int32_t px,
		    int32_t py, int32_t pz)
{
	CpuWorker *w = wctx;
	CpuLaunch *l = w->launch;
	int n = l->k ? l->k->nparams : 0;
	for (int i = 0; i < n; i++)
		if (l->ext[2 * i] <= lo && end <= l->ext[2 * i + 1] && l->ext[2 * i] < l->ext[2 * i + 1])
			return;
	char msg[1024];
	snprintf(msg, sizeof msg,
		 "out-of-bounds %s (kernel %s, program (%d, %d, %d)): bytes [0x%llx, 0x%llx) (elements "
		 "of %d bytes) lie outside every tensor argument",
		 site, l->k ? l->k->name : "?", (int)px, (int)py, (int)pz, (unsigned long long)lo,
		 (unsigned long long)end, (int)esize);
	san_stop(w, msg);
}

/* site is "<type> overflow detected for operation <op> at file:line:col";
 * sym the operator ('+', '-', '*'; 0: operands unknown); idx the element
 * (-1: a scalar). */
void ct_cpu_overflow_fail(void *wctx, const char *site, int32_t sym, int64_t idx, int64_t x, int64_t y, int64_t r,
			  int32_t px, int32_t py, int32_t pz)
{
	CpuWorker *w = wctx;
	CpuLaunch *l = w->launch;
	char elem[64] = "", vals[128] = "";
	if (idx >= 0)
		snprintf(elem, sizeof elem, ", element %lld", (long long)idx);
	if (sym)
		snprintf(vals, sizeof vals, ": %lld %c %lld = %lld", (long long)x, (char)sym, (long long)y,
			 (long long)r);
	char msg[1024];
	snprintf(msg, sizeof msg, "%s (kernel %s, program (%d, %d, %d)%s)%s", site, l->k ? l->k->name : "?", (int)px,
		 (int)py, (int)pz, elem, vals);
	san_stop(w, msg);
}

/* site is "multiple_of hint does not hold at file:line:col"; x the value
 * (a pointer's address), q the multiple it was said to be. */
void ct_cpu_hint_fail(void *wctx, const char *site, int64_t x, int64_t q, int32_t px, int32_t py, int32_t pz)
{
	CpuWorker *w = wctx;
	CpuLaunch *l = w->launch;
	char msg[1024];
	snprintf(msg, sizeof msg, "%s (kernel %s, program (%d, %d, %d)): %lld is not a multiple of %lld", site,
		 l->k ? l->k->name : "?", (int)px, (int)py, (int)pz, (long long)x, (long long)q);
	san_stop(w, msg);
}
