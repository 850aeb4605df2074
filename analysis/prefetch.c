/* prefetch.c: software pipelining of the loads feeding `dot` in `for` loops,
 * one iteration ahead through registers (num_stages >= 2).
 *
 * A load in a loop body whose only use is operand A or B of a dot in that
 * body, and whose address/mask/other are computed from loop arguments,
 * values defined before the loop and pure region-free ops, is rewritten:
 *
 *   - before the loop, the load of the first iteration (induction variable
 *     = lower bound, carried values = their inits), masked off when the loop
 *     runs zero times;
 *   - the loaded tile becomes a new loop-carried value;
 *   - at the top of the body, the load of the next iteration (induction
 *     variable + step, carried values = what this iteration yields, the
 *     address computation cloned ahead of its original place), masked off
 *     on the last iteration, and yielded.
 *
 * So the global loads of tile k+1 are in flight while tile k goes through
 * shared memory and the tensor cores. Clones of pure ops that duplicate
 * originals are left to LLVM's value numbering.
 *
 * Before that, multi-buffering through shared memory (async_loop): cp.async
 * copies of the tiles num_stages - 1 iterations ahead into slots, or, for a
 * descriptor load with a tensor map on sm_90, tensor-memory-access copies
 * completing on per-slot mbarriers (analysis/README.md).
 */
#include "analysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct PCtx {
	IrCtx *ctx;
	IrFunc *f;
	IrOp *loop;
	IrBlock *body;
	IrOp *yield;
	int n;
	IrValue **pro_map, **hoist_map, **next_map; /* by original value id */
	char *state;                                 /* slice check: 0 new, 1 busy, 2 ok, 3 bad */
	IrBuilder pre, top;                          /* before the loop, top of the body */
	IrValue *iv_next;
	struct ACtx *actx; /* multi-buffering: the context of aeval_cb */
	int aenv;          /* and the environment it evaluates in */
	bool ifs;          /* slices may hold an `if` of pure ops (multi-buffering) */
} PCtx;

static bool in_body(PCtx *p, const IrValue *v)
{
	if (v->def)
		return v->def->parent == p->body;
	return v->owner == p->body;
}

static bool valid_id(PCtx *p, const IrValue *v) { return v->id >= 0 && v->id < p->n; }

static bool slice_ok(PCtx *p, IrValue *v);

/* An `if` whose regions hold only pure ops (and such `if`s), reading
 * values of the body that slice_ok takes: a flattened nest's prologue,
 * which the copies ahead compute for the iteration they copy for. */
static bool pure_if(PCtx *p, IrOp *d)
{
	if (d->opc != OP_IF || !p->ifs)
		return false;
	for (int r = 0; r < d->nregions; r++)
		for (IrOp *o = d->regions[r]->first; o; o = o->next) {
			unsigned fl = ir_opinfo(o->opc)->flags;
			if (o->opc == OP_IF ? !pure_if(p, o)
					    : o->opc != OP_YIELD && (!(fl & IR_PURE) || o->nregions || o->opc == OP_LOAD ||
								     o->opc == OP_DOT || o->opc == OP_CONVERT_LAYOUT))
				return false;
			for (int i = 0; i < o->nops; i++)
				if (!slice_ok(p, o->ops[i]))
					return false;
		}
	return true;
}

/* v's value can be recomputed from loop arguments, outside values and pure
 * region-free ops of the body (through the yields of the arguments it uses),
 * and with p->ifs, `if`s of pure ops. */
static bool slice_ok(PCtx *p, IrValue *v)
{
	if (!in_body(p, v))
		return true;
	if (!valid_id(p, v))
		return false;
	if (p->state[v->id] == 2 || p->state[v->id] == 1)
		return true; /* busy: a cycle through a loop argument, checked above */
	if (p->state[v->id] == 3)
		return false;
	p->state[v->id] = 1;
	bool ok = true;
	if (!v->def) {
		int j = v->index;
		if (j >= 1)
			ok = p->yield && j - 1 < p->yield->nops && slice_ok(p, p->yield->ops[j - 1]);
	} else {
		IrOp *d = v->def;
		unsigned fl = ir_opinfo(d->opc)->flags;
		if (d->opc == OP_IF)
			ok = pure_if(p, d);
		else if (!(fl & IR_PURE) || d->nregions || d->opc == OP_LOAD || d->opc == OP_DOT ||
			 d->opc == OP_CONVERT_LAYOUT)
			ok = false;
		for (int i = 0; ok && i < d->nops; i++)
			ok = slice_ok(p, d->ops[i]);
	}
	p->state[v->id] = ok ? 2 : 3;
	return ok;
}

typedef IrValue *(*MapFn)(PCtx *p, IrValue *v);

/* The clones of the values an `if` being cloned defines, by region
 * nesting (up: the enclosing regions'). */
typedef struct LMap {
	IrValue **from, **to;
	int n, cap;
	const struct LMap *up;
} LMap;

static void lmap_put(IrCtx *ctx, LMap *m, IrValue *k, IrValue *v)
{
	if (m->n == m->cap) {
		int cap = m->cap ? 2 * m->cap : 32;
		IrValue **f = ir_alloc(ctx, sizeof *f * (size_t)cap), **t = ir_alloc(ctx, sizeof *t * (size_t)cap);
		if (m->n) {
			memcpy(f, m->from, sizeof *f * (size_t)m->n);
			memcpy(t, m->to, sizeof *t * (size_t)m->n);
		}
		m->from = f;
		m->to = t;
		m->cap = cap;
	}
	m->from[m->n] = k;
	m->to[m->n++] = v;
}

static IrValue *lmap_get(const LMap *m, const IrValue *k)
{
	for (; m; m = m->up)
		for (int i = m->n - 1; i >= 0; i--)
			if (m->from[i] == k)
				return m->to[i];
	return NULL;
}

static void copy_op_attrs(IrCtx *ctx, IrOp *c, const IrOp *d)
{
	ir_op_copy_attrs(ctx, c, d);
	for (int i = 0; i < c->nres; i++)
		c->res[i].id = -1;
}

/* Whether v is defined in one of d's regions (at any depth). */
static bool defined_under(const IrValue *v, const IrOp *d)
{
	for (const IrBlock *blk = v->def ? v->def->parent : v->owner; blk;
	     blk = blk->parent_op ? blk->parent_op->parent : NULL)
		if (blk->parent_op == d)
			return true;
	return false;
}

/* Maps the values from outside d that its regions read, so that what map
 * builds for them (memoized) comes before d's copy. */
static void premap(PCtx *p, const IrOp *d, const IrOp *o, MapFn map)
{
	for (int r = 0; r < o->nregions; r++)
		for (IrOp *x = o->regions[r]->first; x; x = x->next) {
			for (int i = 0; i < x->nops; i++)
				if (!defined_under(x->ops[i], d))
					map(p, x->ops[i]);
			premap(p, d, x, map);
		}
}

/* A copy of op d at b's point, its operands through the region map lm
 * (values the `if`s being cloned define) or else map; its regions copied
 * the same way (pure_if: no block arguments). */
static IrOp *clone_deep(PCtx *p, IrBuilder *b, IrOp *d, MapFn map, LMap *lm)
{
	if (d->nregions && !lm)
		premap(p, d, d, map);
	IrValue *ops[8];
	IrValue **o = d->nops <= 8 ? ops : ir_alloc(p->ctx, sizeof(*o) * (size_t)d->nops);
	for (int i = 0; i < d->nops; i++) {
		IrValue *l = lm ? lmap_get(lm, d->ops[i]) : NULL;
		o[i] = l ? l : map(p, d->ops[i]);
	}
	const IrType *tys[8];
	const IrType **t = d->nres <= 8 ? tys : ir_alloc(p->ctx, sizeof(*t) * (size_t)d->nres);
	for (int i = 0; i < d->nres; i++)
		t[i] = d->res[i].type;
	b->loc = d->loc;
	IrOp *c = ir_build(b, d->opc, d->nops, o, d->nres, t, d->nregions);
	copy_op_attrs(p->ctx, c, d);
	if (lm)
		for (int i = 0; i < d->nres; i++)
			lmap_put(p->ctx, lm, &d->res[i], &c->res[i]);
	for (int r = 0; r < d->nregions; r++) {
		LMap inner = {.up = lm};
		IrBuilder rb;
		ir_builder_init(&rb, p->ctx);
		ir_builder_at_end(&rb, c->regions[r]);
		for (IrOp *x = d->regions[r]->first; x; x = x->next)
			clone_deep(p, &rb, x, map, &inner);
	}
	return c;
}

static IrValue *clone_def(PCtx *p, IrBuilder *b, IrValue *v, MapFn map)
{
	return &clone_deep(p, b, v->def, map, NULL)->res[v->index];
}

/* The value v has in the first iteration, computed before the loop. */
static IrValue *pro(PCtx *p, IrValue *v)
{
	if (!in_body(p, v))
		return v;
	if (p->pro_map[v->id])
		return p->pro_map[v->id];
	IrValue *r;
	if (!v->def)
		r = p->loop->ops[v->index == 0 ? 0 : 2 + v->index];
	else
		r = clone_def(p, &p->pre, v, pro);
	return p->pro_map[v->id] = r;
}

/* The value v has in this iteration, computed at the top of the body. */
static IrValue *hoist(PCtx *p, IrValue *v)
{
	if (!in_body(p, v) || !v->def)
		return v;
	if (p->hoist_map[v->id])
		return p->hoist_map[v->id];
	return p->hoist_map[v->id] = clone_def(p, &p->top, v, hoist);
}

/* The value v will have in the next iteration, computed at the top of the body. */
static IrValue *next(PCtx *p, IrValue *v)
{
	if (!in_body(p, v))
		return v;
	if (p->next_map[v->id])
		return p->next_map[v->id];
	IrValue *r;
	if (!v->def)
		r = v->index == 0 ? p->iv_next : hoist(p, p->yield->ops[v->index - 1]);
	else
		r = clone_def(p, &p->top, v, next);
	return p->next_map[v->id] = r;
}

static IrOp *dot_user(IrBlock *body, const IrValue *v)
{
	for (IrOp *op = body->first; op; op = op->next)
		if (op->opc == OP_DOT && (op->ops[0] == v || op->ops[1] == v))
			return op;
	return NULL;
}

/* The load's mask and'ed with "the iteration whose induction variable is iv exists". */
static IrValue *guarded_mask(PCtx *p, IrBuilder *b, IrValue *mask, IrValue *ptr, IrValue *iv)
{
	IrValue *in = ir_cmp(b, "lt", iv, p->loop->ops[1]);
	const IrType *mt = ir_type_like(p->ctx, ptr->type, ir_type(p->ctx, TY_I1));
	IrValue *g = ir_splat(b, in, mt);
	return mask ? ir_binary(b, OP_AND, mask, g) : g;
}

static IrValue *new_load(PCtx *p, IrBuilder *b, IrOp *L, IrValue *ptr, IrValue *mask, IrValue *other)
{
	b->loc = L->loc;
	IrValue *r = ir_load(b, ptr, mask, other);
	if (L->nattrs) {
		IrOp *d = r->def;
		d->nattrs = L->nattrs;
		d->attrs = ir_alloc(p->ctx, sizeof(IrAttr) * (size_t)L->nattrs);
		memcpy(d->attrs, L->attrs, sizeof(IrAttr) * (size_t)L->nattrs);
		if (ir_op_int(d, "tma", 0))
			ir_op_set_int(p->ctx, d, "tma", 0); /* the new load has no tail */
	}
	r->id = -1;
	return r;
}

/* ------------------------------------------------------------------------- */
/* Multi-buffering through shared memory (cp.async)                          */
/* ------------------------------------------------------------------------- */

/* Values at iteration `it` of the loop (it >= 0: before the loop, iteration
 * it; it < 0: the lookahead iteration k + D inside the body, through the
 * carried shadow arguments). */
typedef struct AEnv {
	IrValue **memo; /* by original value id */
	int it;         /* >= 0: prologue iteration; -1: lookahead; -2: producer loop */
	IrBuilder *b;   /* the producer loop's body (it == -2) */
	IrValue *iv;    /* its induction variable */
	IrValue **args; /* by body arg index: its carried arguments */
} AEnv;

typedef struct ACtx {
	PCtx *p;
	AEnv *envs; /* envs[0 .. S-1]: prologue iterations; envs[S]: lookahead; envs[S + 1]: producer */
	int S;
	IrValue **shadow;  /* by body arg index: the carried shadow argument */
	bool *need;        /* by body arg index: used by the copies' slices */
	IrValue *iv_ahead; /* iv + D * step, in the body */
	IrBuilder *wb;     /* warp specialization: where values from before the loop are cloned */
	IrValue **wmap;    /* by original value id: their clones */
} ACtx;

static IrValue *aeval(ACtx *a, int e, IrValue *v);

static IrValue *aeval_cb(PCtx *p, IrValue *v)
{
	return aeval(p->actx, p->aenv, v);
}

static IrValue *ws_clone(ACtx *a, IrValue *v);

static IrValue *ws_clone_cb(PCtx *p, IrValue *v)
{
	return ws_clone(p->actx, v);
}

/* A value from before the loop, computed again in the producer's region
 * (ws_clonable said it can be: pure scalar ops of the kernel body over its
 * parameters). */
static IrValue *ws_clone(ACtx *a, IrValue *v)
{
	if (!v->def)
		return v;
	if (!a->wmap[v->id])
		a->wmap[v->id] = clone_def(a->p, a->wb, v, ws_clone_cb);
	return a->wmap[v->id];
}

static IrValue *aeval(ACtx *a, int e, IrValue *v)
{
	PCtx *p = a->p;
	AEnv *en = &a->envs[e];
	if (!in_body(p, v))
		return en->it == -2 ? ws_clone(a, v) : v;
	if (en->memo[v->id])
		return en->memo[v->id];
	IrValue *r;
	if (!v->def) {
		int j = v->index;
		if (en->it == -2)
			r = j == 0 ? en->iv : en->args[j];
		else if (en->it < 0)
			r = j == 0 ? a->iv_ahead : a->shadow[j];
		else if (en->it == 0)
			r = j == 0 ? p->loop->ops[0] : p->loop->ops[2 + j];
		else if (j == 0) {
			IrValue *prev = aeval(a, e - 1, v);
			IrValue *xs[2] = {prev, p->loop->ops[2]};
			r = ir_build1(&p->pre, OP_ADD, v->type, 2, xs);
			r->id = -1;
		} else
			r = aeval(a, e - 1, p->yield->ops[j - 1]);
	} else {
		int save = p->aenv;
		p->aenv = e;
		r = clone_def(p, en->it == -2 ? en->b : en->it < 0 ? &p->top : &p->pre, v, aeval_cb);
		p->aenv = save;
		for (int i = 0; v->def->nregions && i < v->def->nres; i++) /* an `if`: once for all its results */
			if (valid_id(p, &v->def->res[i]))
				en->memo[v->def->res[i].id] = &r->def->res[i];
	}
	return en->memo[v->id] = r;
}

static void mark_region_args(PCtx *p, bool *need, char *seen, IrOp *op);

/* Body args the slice of v depends on (through yields). */
static void mark_args(PCtx *p, bool *need, char *seen, IrValue *v)
{
	if (!in_body(p, v) || !valid_id(p, v) || seen[v->id])
		return;
	seen[v->id] = 1;
	if (!v->def) {
		int j = v->index;
		if (j >= 1 && !need[j]) {
			need[j] = true;
			mark_args(p, need, seen, p->yield->ops[j - 1]);
		}
		return;
	}
	for (int i = 0; i < v->def->nops; i++)
		mark_args(p, need, seen, v->def->ops[i]);
	if (v->def->nregions)
		mark_region_args(p, need, seen, v->def);
}

/* The same for the values the regions of op (a pure_if) read. */
static void mark_region_args(PCtx *p, bool *need, char *seen, IrOp *op)
{
	for (int r = 0; r < op->nregions; r++)
		for (IrOp *o = op->regions[r]->first; o; o = o->next) {
			for (int i = 0; i < o->nops; i++)
				mark_args(p, need, seen, o->ops[i]);
			if (o->nregions)
				mark_region_args(p, need, seen, o);
		}
}

/* other absent, or a constant zero */
static bool zero_other(const IrValue *o)
{
	if (!o)
		return true;
	const IrOp *d = o->def;
	if (d && d->opc == OP_SPLAT)
		d = d->ops[0]->def;
	if (!d || d->opc != OP_CONSTANT)
		return false;
	const IrAttr *v = ir_find_attr(d->nattrs, d->attrs, "value");
	if (!v)
		return false;
	if (v->kind == ATTR_INT)
		return v->i == 0;
	if (v->kind == ATTR_FLOAT)
		return v->f == 0.0 && !signbit(v->f);
	return false;
}

bool an_acc_init_select(const IrOp *d)
{
	if (!d || d->opc != OP_SELECT || !ir_is_block(d->res[0].type) || !d->ops[1]->def)
		return false;
	const IrOp *c = d->ops[0]->def;
	return c && c->opc == OP_SPLAT && !ir_is_block(c->ops[0]->type) && zero_other(d->ops[1]);
}

/* How load L's tile sits in its slot: runs of >= 4 bytes along the rows
 * (the tile is staged row-major), or, for the B of a warpgroup MMA (wgb),
 * 16-byte runs down the columns, or 32-bit elements one by one: then the
 * slot holds the tile transposed ([N][K], "K-major", what wgmma reads
 * untransposed; the only way for B of other than 16-bit elements). And
 * chunk_bytes() for every thread, other absent or zero. */
/* The bytes every thread copies at least: 4 (a run cp.async takes; a tile
 * under 16 bytes a thread, 16 x 32 f16 with 4 warps say, copies in 8- or
 * 4-byte runs), 16 with CTRITON_SMALL_COPIES=0 (before). */
static int chunk_bytes(void)
{
	const char *e = getenv("CTRITON_SMALL_COPIES");
	return e && e[0] == '0' ? 16 : 4;
}

static bool slot_ok_a(IrOp *L, const AnGpuOptions *o, const AnAxis *ax, bool wgb, bool wga, bool mma, bool *trans)
{
	const IrType *t = L->res[0].type;
	int es = ir_type_bits(ir_scalar(t)) / 8;
	IrValue *mk = L->nops > 1 ? L->ops[1] : NULL;
	int rowb = an_access_vec(ax, L->ops[0], mk, 1, true) * es,
	    cols = an_access_vec(ax, L->ops[0], mk, 0, true) * es;
	bool rows = rowb >= 4;
	*trans = false;
	if (mma && rowb < 16 && cols >= 16) {
		/* an operand of mma.sync stored along K where a row-major tile
		 * runs along M or N (a B^T, or K^T, given as [N][K]): 16-byte runs
		 * down the columns into a slot that holds it transposed, which
		 * ldmatrix reads the other way round (16-bit), or element by
		 * element (tf32) */
		*trans = true;
	} else if (!rows && wga && es == 2 && cols >= 16) {
		/* a 16-bit A stored column-major (M contiguous): 16-byte runs down
		 * the columns into a slot that holds it transposed ([K][M]), which
		 * the warpgroup MMA reads MN-major, as a row-major B */
		*trans = true;
	} else if (!rows || (wgb && es != 2)) {
		/* a 32-bit B (tf32) not 16-byte contiguous down its columns, N-major
		 * say: copied element by element (4-byte cp.async) into the
		 * transposed slot, as Triton does */
		if (!wgb || (cols < 16 && es != 4))
			return false;
		*trans = true;
	}
	if (t->numel * es < (int64_t)chunk_bytes() * o->num_warps * o->warp_size)
		return false;
	return zero_other(L->nops > 2 ? L->ops[2] : NULL);
}

static bool slot_ok(IrOp *L, const AnGpuOptions *o, const AnAxis *ax, bool wgb, bool *trans)
{
	return slot_ok_a(L, o, ax, wgb, false, false, trans);
}

/* The dim along which a copy of L's tile runs: the rows of a 2-D tile
 * (its columns when transposed), a vector's only dim. */
static int copy_dim(const IrOp *L, bool trans)
{
	return L->res[0].type->rank == 1 || trans ? 0 : 1;
}

/* A vector loaded in the body of a loop whose tiles go through the slots,
 * read by elementwise ops (attention backward's m and Di, expanded
 * against a dot result): it goes through slots of its own too, as Triton
 * pipelines it, and each iteration reads it from shared memory in the
 * layout its users want (no conversion through shared memory and its
 * barriers, and the global latency is hidden num_stages - 1 iterations
 * ahead). Runs of at least 4 bytes, other absent or zero, whole 16-byte
 * chunks per slot, and a body that writes no memory. CTRITON_ASYNC_VECTORS=0
 * keeps them loads. */
/* Whether b (or a region in it) writes global memory. */
static bool writes_memory(const IrBlock *b)
{
	for (const IrOp *op = b->first; op; op = op->next) {
		if (op->opc == OP_STORE || op->opc == OP_ATOMIC_RMW || op->opc == OP_ATOMIC_CAS ||
		    op->opc == OP_TMA_STORE || op->opc == OP_CALL)
			return true;
		for (int r = 0; r < op->nregions; r++)
			if (writes_memory(op->regions[r]))
				return true;
	}
	return false;
}

static bool vector_async_ok(PCtx *p, IrOp *L, const AnAxis *ax)
{
	const IrType *t = L->res[0].type;
	int es = ir_type_bits(ir_scalar(t)) / 8;
	IrValue *mk = L->nops > 1 ? L->ops[1] : NULL;
	const char *e = getenv("CTRITON_ASYNC_VECTORS");
	if ((e && e[0] == '0') || t->rank != 1 || L->nops > 3 || (es != 2 && es != 4 && es != 8) ||
	    (t->numel * es) % 16 || ir_find_attr(L->nattrs, L->attrs, "volatile") || dot_user(p->body, &L->res[0]))
		return false;
	for (int i = 0; i < L->nops; i++)
		if (!slice_ok(p, L->ops[i]))
			return false;
	/* read iterations ahead: not where the loop writes memory (a vector
	 * could read what an earlier iteration has not written yet) */
	return an_access_vec(ax, L->ops[0], mk, 0, true) * es >= 4 && zero_other(L->nops > 2 ? L->ops[2] : NULL) &&
	       !writes_memory(p->body);
}

/* CTRITON_FMA_SLOTS=0: tiles of FMA dots stay loads (part of the key). */
static bool fma_slots_on(void)
{
	const char *e = getenv("CTRITON_FMA_SLOTS");
	return !(e && e[0] == '0');
}

/* CTRITON_MMA_SYNC_TRANS=0: a tile that mma.sync reads the other way round
 * (stored along K, or through a 2-D trans), and one that only a 2-D trans
 * feeding a warpgroup MMA reads, stay loads, staged through registers as
 * before (part of the key). */
static bool mma_sync_trans_on(void)
{
	const char *e = getenv("CTRITON_MMA_SYNC_TRANS");
	return !(e && e[0] == '0');
}

/* Operand A or B (not both) of a dot on mma.sync that can read it from a
 * slot held either way round: 16-bit (ldmatrix) or tf32 (element reads). */
static bool mma_sync_operand(PCtx *p, const IrOp *d, const IrValue *v, const AnGpuOptions *o)
{
	const IrLayout *l = d->opc == OP_DOT ? an_dot_mma_layout(p->ctx, d, o) : NULL;
	IrTypeKind k = ir_scalar(v->type)->kind;
	return l && l->version_major == 2 && (d->ops[0] == v) != (d->ops[1] == v) &&
	       (k == TY_F16 || k == TY_BF16 || k == TY_F32) && mma_sync_trans_on();
}

/* A load the cp.async path can take: a 2-D tile of at least 16 x 16 feeding
 * operand A or B of a dot that runs on tensor cores (16-bit or tf32 for
 * mma.sync). */
static bool async_ok(PCtx *p, IrOp *L, const AnGpuOptions *o, const AnAxis *ax, bool *trans, bool *plain)
{
	const IrType *t = L->res[0].type;
	IrOp *d = dot_user(p->body, &L->res[0]);
	const IrLayout *l = d ? an_dot_mma_layout(p->ctx, d, o) : NULL;
	*plain = false;
	if (!d || t->rank != 2 || t->shape[0] < 16 || t->shape[1] < 16)
		return false;
	if (!l) {
		/* a 2-D dot off the tensor cores (FMA: ieee f32, say) reads its
		 * operand straight from a row-major slot (an_fma_slot), as it
		 * reads its staging buffer: rows contiguous, 16- or 32-bit */
		IrTypeKind k = ir_scalar(t)->kind;
		if (!fma_slots_on() || d->res[0].type->rank != 2 || (k != TY_F32 && k != TY_F16 && k != TY_BF16) ||
		    (d->ops[0] == &L->res[0] && d->ops[1] == &L->res[0]))
			return false;
		*plain = slot_ok(L, o, ax, false, trans) && !*trans;
		return *plain;
	}
	bool wg = l->version_major == 3, isb = d->ops[1] == &L->res[0] && d->ops[0] != &L->res[0];
	bool isa = d->ops[0] == &L->res[0] && d->ops[1] != &L->res[0];
	IrTypeKind k = ir_scalar(t)->kind;
	if (!wg && (k == TY_I8 || k == TY_F8E4M3 || k == TY_F8E5M2) && (isa || isb) && mma_sync_trans_on()) {
		/* mma.sync int8 or fp8 (m16n8k32): a slot that holds the operand
		 * K-contiguous (A as [M][K], B as [N][K]), read with ldmatrix
		 * (backend/nvptx/dot.c read_kw4_ldmatrix), as Triton reads it;
		 * a B given row-major ([K][N]) in a slot as loaded, read byte by
		 * byte (mem.c: nv_read_swizzled), as Triton reads it too. With
		 * 32-bit shared pointers that B went from the register prefetch
		 * (loads staged each iteration; sm_80 int8 128x256x128 w8: 832
		 * loop instructions, 160 bytes spilled) to 696 and none (Triton
		 * 833 and 12) */
		return slot_ok_a(L, o, ax, false, false, true, trans) && (isb ? *trans || an_kn_reads_on() : !*trans);
	}
	if (!wg && k != TY_F16 && k != TY_BF16 && k != TY_F32)
		return false; /* mma.sync: ldmatrix of 16-bit tiles, tf32 element by element */
	return slot_ok_a(L, o, ax, wg && isb, wg && isa, !wg && (isa || isb) && mma_sync_trans_on(), trans);
}

/* A tile used more than once: every use is operand B of a warpgroup MMA,
 * directly or through a 2-D trans that only that dot reads (the backward
 * pass of attention reads q^T as B of k q^T and, transposed, of dS^T q).
 * One staged slot serves all of them: warpgroup MMA reads a 16-bit B from
 * shared memory either way round (K- or MN-major). The trans ops go to
 * *tr. Then the slot as slot_ok has it. */
static bool wgmma_b(PCtx *p, const IrOp *d, const IrValue *v, const AnGpuOptions *o)
{
	const IrLayout *l = d->opc == OP_DOT ? an_dot_mma_layout(p->ctx, d, o) : NULL;
	return l && l->version_major == 3 && d->ops[1] == v && d->ops[0] != v;
}

/* Operand A of a warpgroup MMA (and not also its B). */
static bool wgmma_a(PCtx *p, const IrOp *d, const IrValue *v, const AnGpuOptions *o)
{
	const IrLayout *l = d->opc == OP_DOT ? an_dot_mma_layout(p->ctx, d, o) : NULL;
	return l && l->version_major == 3 && d->ops[0] == v && d->ops[1] != v;
}

/* A tile that is operand A of several warpgroup MMAs of the loop body and
 * nothing else (one row block times several weight blocks: LLTM's three
 * gates). One slot serves them all, as for a single dot. */
static bool async_ok_multi_a(PCtx *p, IrOp *L, const AnGpuOptions *o, const AnAxis *ax, bool *trans)
{
	const IrType *t = L->res[0].type;
	IrValue *v = &L->res[0];
	int n = ir_count_uses(p->f, v), seen = 0;
	if (t->rank != 2 || t->shape[0] < 16 || t->shape[1] < 16)
		return false;
	for (IrOp *op = p->body->first; op; op = op->next)
		for (int i = 0; i < op->nops; i++)
			if (op->ops[i] == v) {
				if (!wgmma_a(p, op, v, o))
					return false;
				seen++;
			}
	return seen == n && slot_ok(L, o, ax, false, trans);
}

static bool async_ok_multi(PCtx *p, IrOp *L, const AnGpuOptions *o, const AnAxis *ax, bool *trans, IrOp **tr,
			   int *ntr)
{
	const IrType *t = L->res[0].type;
	IrValue *v = &L->res[0];
	int es = ir_type_bits(ir_scalar(t)) / 8, n = ir_count_uses(p->f, v), seen = 0, wg = 0, mma = 0;
	*ntr = 0;
	if (async_ok_multi_a(p, L, o, ax, trans))
		return true;
	if (t->rank != 2 || t->shape[0] < 16 || t->shape[1] < 16)
		return false;
	for (IrOp *op = p->body->first; op; op = op->next)
		for (int i = 0; i < op->nops; i++) {
			if (op->ops[i] != v)
				continue;
			seen++;
			if (op->opc == OP_DOT && wgmma_b(p, op, v, o)) {
				wg++;
				continue;
			}
			const IrAttr *ord = op->opc == OP_TRANS ? ir_op_attr(op, "order") : NULL;
			IrOp *d = ord && ord->n == 2 && ord->ints[0] == 1 && ir_count_uses(p->f, &op->res[0]) == 1
					  ? dot_user(p->body, &op->res[0])
					  : NULL;
			if (!d || *ntr == 4)
				return false;
			if (wgmma_b(p, d, &op->res[0], o))
				wg++;
			else if (mma_sync_operand(p, d, &op->res[0], o))
				mma++;
			else
				return false;
			tr[(*ntr)++] = op;
		}
	if (seen != n || (wg && mma))
		return false; /* a use in a nested region; both kinds of MMA */
	/* read through its trans by mma.sync: ldmatrix the other way round */
	if (mma)
		return slot_ok_a(L, o, ax, false, false, true, trans);
	return es == 2 && slot_ok(L, o, ax, true, trans);
}

/* Whether a thread copies L's tile in at most 16 runs: more (4-byte runs
 * of a 256 x 32 f32 tile with 4 warps: 64 addresses a thread) cost more
 * registers than the register prefetch they replace (a generated tf32
 * kernel spilled 432 bytes against 168). */
static bool few_runs(IrOp *L, const AnGpuOptions *o, const AnAxis *ax)
{
	const IrType *t = L->res[0].type;
	int64_t es = ir_type_bits(ir_scalar(t)) / 8;
	IrValue *mk = L->nops > 1 ? L->ops[1] : NULL;
	int64_t run = an_access_vec(ax, L->ops[0], mk, 1, true) * es,
		col = an_access_vec(ax, L->ops[0], mk, 0, true) * es;
	if (col > run)
		run = col;
	if (run > 16)
		run = 16;
	return run > 0 && t->numel * es / run <= 16 * (int64_t)o->num_warps * o->warp_size;
}

/* A load whose only use is a 2-D trans that only a dot of the body reads
 * (attention's tl.trans(k)): it goes through a slot as a tile used more
 * than once does, read the other way round (async_ok_multi). */
static bool trans_to_dot(PCtx *p, IrOp *L)
{
	IrValue *v = &L->res[0];
	if (ir_count_uses(p->f, v) != 1 || !mma_sync_trans_on())
		return false;
	for (IrOp *op = p->body->first; op; op = op->next)
		if (op->opc == OP_TRANS && op->ops[0] == v)
			return ir_count_uses(p->f, &op->res[0]) == 1 && dot_user(p->body, &op->res[0]) != NULL;
	return false;
}

/* CTRITON_ASYNC_REGS=0: tiles that a dot reads only through other ops
 * stay loads (part of the key). */
static bool async_regs_on(void)
{
	const char *e = getenv("CTRITON_ASYNC_REGS");
	return !(e && e[0] == '0');
}

/* Whether v reaches operand A or B of a dot of the body through pure
 * elementwise ops of the body (a cast, a scaling, a select, a tf32x3
 * split), at most 8 deep; *work bounds the search. Not through a trans: a
 * tile read back into registers and then transposed took more registers
 * than the load (a tf32 A given as [K][M]: 146 to 242; Triton 128). */
static bool reaches_dot(IrBlock *body, const IrValue *v, int depth, int *work)
{
	if (depth > 8)
		return false;
	for (IrOp *op = body->first; op; op = op->next) {
		if (--*work < 0)
			return false;
		for (int i = 0; i < op->nops; i++) {
			if (op->ops[i] != v)
				continue;
			if (op->opc == OP_DOT) {
				if (i < 2)
					return true;
				continue;
			}
			unsigned fl = ir_opinfo(op->opc)->flags;
			if (op->nres == 1 && !op->nregions && (fl & IR_PURE) && (fl & IR_ELEM) && op->opc != OP_LOAD &&
			    ir_is_block(op->res[0].type) && reaches_dot(body, &op->res[0], depth + 1, work))
				return true;
			break;
		}
	}
	return false;
}

/* A 2-D tile that a dot of the body reads only after other ops (a cast
 * to the dot's type, a dequantization, a scaling, the split of a tf32x3
 * dot): it goes through slots of its own, as Triton pipelines every load
 * a dot depends on. The copies run along the rows (along the columns for
 * 32-bit elements stored column-major), masked-off runs zero-filled; each
 * iteration reads the tile back into registers in the layout its users
 * want (prefetch's `regs` read) and puts a non-zero `other` back where the
 * mask is off. Instead of a load waited for in its own iteration, its
 * global latency is hidden num_stages - 1 iterations ahead and no register
 * holds a tile in flight. */
static bool regs_ok(PCtx *p, IrOp *L, const AnGpuOptions *o, const AnAxis *ax, bool *trans)
{
	const IrType *t = L->res[0].type;
	int es = ir_type_bits(ir_scalar(t)) / 8;
	IrValue *v = &L->res[0], *mk = L->nops > 1 ? L->ops[1] : NULL, *other = L->nops > 2 ? L->ops[2] : NULL;
	*trans = false;
	if (!async_regs_on() || t->rank != 2 || t->shape[0] < 16 || t->shape[1] < 16 ||
	    (es != 1 && es != 2 && es != 4) || ir_find_attr(L->nattrs, L->attrs, "volatile") || L->nops > 3)
		return false;
	/* a dot reading the tile itself takes it from the slots (async_ok), or,
	 * with a non-zero `other`, from the register prefetch: measured on an
	 * H100 (fp16, 4096^3, 128x128x64, 4 warps, 3 stages), a slot read back
	 * and staged again ran 1.06x of Triton, the register prefetch 1.16x */
	int work = 4096;
	if (dot_user(p->body, v) || !reaches_dot(p->body, v, 0, &work))
		return false;
	/* the select puts `other` where the mask is off: both blocks of the tile's shape */
	if (!zero_other(other) &&
	    (!mk || !ir_is_block(mk->type) || !ir_is_block(other->type) || mk->type->rank != 2 ||
	     other->type->rank != 2 || mk->type->shape[0] != t->shape[0] || mk->type->shape[1] != t->shape[1] ||
	     other->type->shape[0] != t->shape[0] || other->type->shape[1] != t->shape[1]))
		return false;
	for (IrOp *op = p->body->first; op; op = op->next)
		for (int r = 0; r < op->nregions; r++)
			for (IrOp *x = op->regions[r]->first; x; x = x->next)
				for (int i = 0; i < x->nops; i++)
					if (x->ops[i] == v)
						return false; /* read in a nested region */
	int rowb = an_access_vec(ax, L->ops[0], mk, 1, true) * es,
	    cols = an_access_vec(ax, L->ops[0], mk, 0, true) * es;
	if (rowb < 4) {
		/* 32-bit elements down the columns; 8- or 16-bit ones in
		 * 16-byte runs down them (an fp8 B^T given as [K][N], K
		 * contiguous, read back K-contiguous: an_dot_kw4) */
		if (es == 4 ? cols < 4 : cols < 16)
			return false;
		*trans = true;
	}
	if (t->numel * es < (int64_t)chunk_bytes() * o->num_warps * o->warp_size)
		return false;
	return few_runs(L, o, ax);
}

/* Pure work in the copy group after a {wgmma_pending} barrier (addresses,
 * masks, a flattened nest's next-tile offsets under an `if`) goes above
 * the last dot before it (above the barrier where it reads what the dot
 * block defines): only the copies themselves wait for every warpgroup. Measured on
 * the H200 (tutorial 09's persistent kernel, Nsight Compute): with the
 * arithmetic after the barrier, 46% of the K step's stall samples were
 * dependent integer arithmetic between the barrier and the copies, and
 * the tensor pipe was busy 80% of the time (Triton, which computes them
 * among its MMAs, 89%). Moved, they stall as much before the MMAs and
 * the pipe is busy 81%: on an H100 the kernel ran 0.93x of Triton at K
 * 4096 against 0.94x before, 0.98x at K 512 against 0.97x. Kept for the
 * shorter path from the barrier to the copies. */
static bool defined_after(const IrOp *bar, const IrValue *v)
{
	if (!v->def)
		return false;
	for (const IrOp *x = bar->next; x; x = x->next)
		if (x == v->def)
			return true;
	return false;
}

static bool uses_after(const IrOp *bar, const IrOp *op)
{
	for (int i = 0; i < op->nops; i++)
		if (defined_after(bar, op->ops[i]))
			return true;
	for (int r = 0; r < op->nregions; r++)
		for (const IrOp *x = op->regions[r]->first; x; x = x->next)
			if (uses_after(bar, x))
				return true;
	return false;
}

static void hoist_above(IrOp *bar, const IrOp *end)
{
	IrBlock *b = bar->parent;
	/* above the last dot before the barrier where its operands allow:
	 * ptxas sinks integer arithmetic past an MMA wait and a barrier
	 * towards its uses, but not above the MMAs it was placed before */
	IrOp *dot = NULL;
	for (IrOp *x = bar->prev; x && !dot; x = x->prev)
		if (x->opc == OP_DOT)
			dot = x;
	for (IrOp *op = bar->next, *nx; op && op != end; op = nx) {
		nx = op->next;
		if (!ir_op_effect_free(op) || uses_after(bar, op))
			continue;
		ir_op_unlink(op);
		ir_block_insert_before(b, dot && !uses_after(dot, op) ? dot : bar, op);
	}
}

/* Whether every dot of the loop body runs on warpgroup MMA. */
static bool wgmma_loop(IrBlock *body, const AnGpuOptions *o)
{
	int n = 0;
	for (IrOp *op = body->first; op; op = op->next) {
		if (op->opc != OP_DOT)
			continue;
		const IrLayout *l = an_dot_mma_layout(body->func->module->ctx, op, o);
		if (!l || l->version_major != 3)
			return false;
		n++;
	}
	return n > 0;
}

/* A loop whose dots all run on mma.sync. */
static bool mma_sync_loop(IrBlock *body, const AnGpuOptions *o)
{
	int n = 0;
	for (IrOp *op = body->first; op; op = op->next) {
		if (op->opc != OP_DOT)
			continue;
		const IrLayout *l = an_dot_mma_layout(body->func->module->ctx, op, o);
		if (!l || l->version_major != 2)
			return false;
		n++;
	}
	return n > 0;
}

/* CTRITON_MMA_SYNC_LATE_COPIES=1 (opt-in; part of the key): an mma.sync
 * loop's copies go after its dots, as a warpgroup-MMA loop's do: the slot
 * they refill was read in the previous iteration, which every warp
 * finished before the barrier at the top. Timed on an H100 (sm_80 code):
 * smaller tiles gain 2-5%, 128x256 tiles lose 17-31%, each copy having
 * one iteration less of MMAs to hide behind. */
static bool late_copies_on(void)
{
	const char *e = getenv("CTRITON_MMA_SYNC_LATE_COPIES");
	return e && e[0] == '1';
}

/* Uses of v inside the regions of op. */
static int uses_inside(const IrOp *op, const IrValue *v)
{
	int n = 0;
	for (int r = 0; r < op->nregions; r++)
		for (const IrOp *o = op->regions[r]->first; o; o = o->next) {
			for (int i = 0; i < o->nops; i++)
				n += o->ops[i] == v;
			n += uses_inside(o, v);
		}
	return n;
}

/* v is x, or the result of an `if` of the body both of whose regions
 * yield x there (a flattened nest's epilogue passing the accumulator
 * through): *via gets that `if`. */
static bool passes(const IrValue *v, const IrValue *x, IrOp **via)
{
	*via = NULL;
	if (v == x)
		return true;
	IrOp *d = v->def;
	if (!d || d->opc != OP_IF || d->nregions != 2)
		return false;
	for (int r = 0; r < 2; r++) {
		const IrOp *t = ir_block_terminator(d->regions[r]);
		if (!t || t->opc != OP_YIELD || v->index >= t->nops || t->ops[v->index] != x)
			return false;
	}
	*via = d;
	return true;
}

/* Whether v is, or will be once the loop is pipelined, a read of a slot:
 * a local_read, or (cand given, before the rewrite) a load among the nc
 * copied ones (not read back into registers), possibly through a trans. */
static bool slot_operand(const IrValue *v, IrOp *const *cand, const bool *cregs, int nc)
{
	const IrOp *d = v->def;
	if (!cand)
		return d && d->opc == OP_LOCAL_READ;
	if (d && d->opc == OP_TRANS)
		d = d->ops[0]->def;
	for (int k = 0; d && k < nc; k++)
		if (cand[k] == d)
			return !cregs[k];
	return false;
}

/* Whether every dot's accumulator is a loop argument used by that dot
 * alone and its result only yielded back into the same argument; in a
 * flattened nest (fused), also through a select of zeros on a uniform
 * condition that feeds only the dot (a fresh tile, the MMA told not to
 * read it) and yielded through an `if` after it, which may read it (the
 * epilogue). (An f16 accumulator is waited for where it is made:
 * backend/nvptx/dot.c.) Before the rewrite (cand given), the dots'
 * operands are the loads the pipeline will copy (slot_operand). */
static bool chained_accs_of(IrBlock *body, bool fused, IrOp *const *cand, const bool *cregs, int nc)
{
	IrOp *y = ir_block_terminator(body);
	for (IrOp *op = body->first; op; op = op->next) {
		if (op->opc != OP_DOT)
			continue;
		if (ir_scalar(op->res[0].type)->kind == TY_F16)
			return false;
		/* an MMA in flight past the yield reads its tiles there: they must
		 * be pipelined slots, not shared scratch the next iteration reuses */
		for (int i = 0; i < 2; i++)
			if (!slot_operand(op->ops[i], cand, cregs, nc))
				return false;
		IrValue *c = op->ops[2];
		if (fused && an_acc_init_select(c->def)) {
			/* the MMA takes the select as scale-d (backend/nvptx/dot.c),
			 * but not with fp8 partial-sum groups: then the select reads
			 * the accumulator, which must not be in flight */
			IrTypeKind ak = ir_scalar(op->ops[0]->type)->kind;
			if (ir_count_uses(body->func, c) != 1 ||
			    (ir_op_int(op, "max_num_imprecise_acc", 0) > 0 && (ak == TY_F8E4M3 || ak == TY_F8E5M2)))
				return false;
			c = c->def->ops[2];
		}
		IrOp *via;
		if (c->def || c->owner != body || c->index < 1 || !y || c->index - 1 >= y->nops ||
		    !passes(y->ops[c->index - 1], &op->res[0], &via) || (via && !fused) || ir_count_uses(body->func, c) != 1 ||
		    ir_count_uses(body->func, &op->res[0]) != (via ? uses_inside(via, &op->res[0]) : 1) ||
		    (via && (via->parent != body || ir_count_uses(body->func, y->ops[c->index - 1]) != 1)))
			return false;
	}
	return true;
}

static bool chained_accs(IrBlock *body, bool fused)
{
	return chained_accs_of(body, fused, NULL, NULL, 0);
}

/* The form of attention's loop: the last dot's result (P @ V into the
 * output accumulator) is only yielded, and the next iteration reads it (to
 * rescale it) only after its first dot (Q @ K^T), whose wait covers it. That
 * last MMA may then stay in flight across the back edge, overlapping the
 * loop's top and the next first MMA, as Triton schedules it. Its B must be a
 * pipelined slot; an A computed in registers (P) is kept by ptxas until the
 * MMA completes. */
static bool last_dot_flies(IrBlock *body)
{
	IrOp *y = ir_block_terminator(body), *first = NULL, *last = NULL;
	int ndots = 0;
	for (IrOp *op = body->first; op; op = op->next)
		if (op->opc == OP_DOT) {
			first = first ? first : op;
			last = op;
			ndots++;
		}
	if (ndots < 2 || !y || !last->ops[1]->def || last->ops[1]->def->opc != OP_LOCAL_READ ||
	    ir_scalar(last->res[0].type)->kind == TY_F16 ||
	    ir_count_uses(body->func, &last->res[0]) != 1)
		return false;
	int k = -1;
	for (int i = 0; i < y->nops; i++)
		if (y->ops[i] == &last->res[0])
			k = i;
	if (k < 0 || k + 1 >= body->nargs)
		return false;
	/* the carried accumulator: read only by ops of the body itself (not
	 * nested regions), none of them before the first dot or the dot itself */
	IrValue *c = body->args[k + 1];
	bool after = false;
	int direct = 0;
	for (IrOp *op = body->first; op; op = op->next) {
		for (int i = 0; i < op->nops; i++)
			if (op->ops[i] == c) {
				if (!after || op == first)
					return false;
				direct++;
			}
		after |= op == first;
	}
	return direct == ir_count_uses(body->func, c);
}

static IrOp *drop_dead_carried(IrFunc *f, IrOp *loop);

/* A mask that bounds a copy's runs only as a prefix (offs < n with n not a
 * multiple of the run: a descriptor's or a K loop's bound) becomes the
 * count of copied elements: per element, how many elements from it on are
 * true (clamped by the backend to its run; cp.async's src-size). Built over
 * the mask's expression: a comparison of a contiguous run x with a y
 * constant over it counts y - x (lt; le one more; gt/ge with the run on
 * the right), and and / or are min / max of the counts; values whole over
 * their runs count 0 or many. Values of iteration e of the loop (aeval). */
#define COUNT_MANY (1 << 30)

static IrValue *count_const(IrBuilder *b, const IrType *t, int64_t v)
{
	IrValue *c = ir_const_int(b, ir_scalar(t), v);
	c->id = -1;
	if (!ir_is_block(t))
		return c;
	IrValue *s = ir_splat(b, c, t);
	s->id = -1;
	return s;
}

static IrValue *run_count(ACtx *a, int e, IrBuilder *b, const AnAxis *ax, IrValue *v, int d)
{
	const AnAxisInfo *f = an_axis_get(ax, v);
	const IrType *ct = ir_type_like(a->p->ctx, v->type, ir_type(a->p->ctx, TY_I32));
	IrOp *op = v->def;
	IrValue *r = NULL, *x = NULL, *y = NULL;
	if (f->constancy[d] >= f->prefix[d] || !op || !ir_is_block(v->type)) {
		r = ir_select(b, aeval(a, e, v), count_const(b, ct, COUNT_MANY), count_const(b, ct, 0));
	} else if (op->opc == OP_AND || op->opc == OP_OR) {
		if ((x = run_count(a, e, b, ax, op->ops[0], d)) && (y = run_count(a, e, b, ax, op->ops[1], d)))
			r = ir_binary(b, op->opc == OP_AND ? OP_MIN : OP_MAX, x, y);
	} else if (op->opc == OP_BROADCAST) {
		if ((x = run_count(a, e, b, ax, op->ops[0], d)))
			r = ir_broadcast(b, x, ct);
	} else if (op->opc == OP_EXPAND_DIMS) {
		int axis = (int)ir_op_int(op, "axis", 0);
		if ((x = run_count(a, e, b, ax, op->ops[0], d > axis ? d - 1 : d)))
			r = ir_expand_dims(b, x, axis);
	} else if (op->opc == OP_CONVERT_LAYOUT || op->opc == OP_MULTIPLE_OF || op->opc == OP_MAX_CONTIGUOUS ||
		   op->opc == OP_MAX_CONSTANCY) {
		r = run_count(a, e, b, ax, op->ops[0], d);
	} else if (op->opc == OP_CMP) {
		/* only comparisons axis info made prefixes get here: the run on
		 * the left for lt / le, on the right for gt / ge. Where the
		 * comparison holds at the run's element, the count is the distance
		 * to the bound (one more for le / ge), else 0: right for signed and
		 * unsigned alike */
		const char *pred = ir_op_str(op, "pred", "");
		bool run_left = !strcmp(pred, "lt") || !strcmp(pred, "le");
		bool incl = !strcmp(pred, "le") || !strcmp(pred, "ge");
		IrValue *px = aeval(a, e, op->ops[0]), *py = aeval(a, e, op->ops[1]);
		const IrType *it = op->ops[0]->type;
		IrValue *n = run_left ? ir_binary(b, OP_SUB, py, px) : ir_binary(b, OP_SUB, px, py);
		n->id = -1;
		if (incl) {
			n = ir_binary(b, OP_ADD, n, count_const(b, it, 1));
			n->id = -1;
		}
		n = ir_select(b, aeval(a, e, v), n, count_const(b, it, 0));
		if (ir_scalar(it)->kind != TY_I32) {
			n->id = -1;
			n = ir_binary(b, OP_MIN, n, count_const(b, it, COUNT_MANY));
			n->id = -1;
			n = ir_cast(b, OP_CAST, n, ct);
		}
		r = n;
	}
	/* anything else (a prefix axis info does not make): no count */
	if (r)
		r->id = -1;
	return r;
}

/* The mask operand of the copy of load L at iteration e: the guarded mask,
 * or, when the mask's prefixes vectorize the copy wider than its constant
 * runs, the count of copied elements (run_count) with the guard applied. */
static IrValue *copy_mask(ACtx *a, int e, IrBuilder *b, const AnAxis *ax, IrOp *L, int cd, IrValue *ptr,
			  IrValue *iv)
{
	PCtx *p = a->p;
	IrValue *m = L->nops > 1 ? L->ops[1] : NULL;
	if (!m || !ir_is_block(m->type) ||
	    an_access_vec(ax, L->ops[0], m, cd, true) <= an_access_vec(ax, L->ops[0], m, cd, false))
		return guarded_mask(p, b, m ? aeval(a, e, m) : NULL, ptr, iv);
	IrValue *n = run_count(a, e, b, ax, m, cd);
	if (!n) /* the plain mask: the backend then copies runs it is constant over */
		return guarded_mask(p, b, aeval(a, e, m), ptr, iv);
	IrValue *g = guarded_mask(p, b, NULL, ptr, iv);
	IrValue *r = ir_select(b, g, n, count_const(b, n->type, 0));
	r->id = -1;
	return r;
}

/* A descriptor load (a {tma} tail: tensor map, offsets) the tensor memory
 * access unit can copy into its slot: sm_90, a 2-D tile, the map a kernel
 * parameter or made in the kernel before the loop (tensormap_create; the
 * load is in the body, so a map not made there is made outside), the
 * offsets computable ahead, the slot in the descriptor's memory order (the
 * copy writes rows of the block's last dim, as the slot layout has them:
 * transposed exactly when the load is). *tile: the slot's tile type. */
static bool tma_ok(PCtx *p, IrOp *L, const AnGpuOptions *o, bool trans, const IrType **tile)
{
	if (o->arch < 90 || ir_op_int(L, "tma", 0) != 3 || L->nops != 6)
		return false;
	IrValue *m = L->ops[3];
	bool made = m->def && m->def->opc == OP_TMAP_CREATE && p->f->is_kernel && !in_body(p, m);
	if (!made && (m->def || m->owner != p->f->body || m->index < 0 || m->index >= p->f->body->nargs ||
		      !ir_find_attr(p->f->params[m->index].nattrs, p->f->params[m->index].attrs, "tensormap")))
		return false;
	if (!slice_ok(p, L->ops[4]) || !slice_ok(p, L->ops[5]))
		return false; /* the offsets, evaluated ahead */
	if ((ir_op_int(L, "tma_tr", 0) != 0) != trans)
		return false;
	const IrType *t = L->res[0].type;
	int64_t sh[2] = {trans ? t->shape[1] : t->shape[0], trans ? t->shape[0] : t->shape[1]};
	int es = ir_type_bits(ir_scalar(t)) / 8;
	if (sh[0] > 256 || sh[1] * es < 16 || (sh[1] * es > 128 && (sh[1] * es) % 128))
		return false;
	*tile = ir_type_block(p->ctx, ir_scalar(t), 2, sh, NULL);
	return *tile != NULL;
}

static IrOp *tma_op(IrCtx *ctx, IrBuilder *b, IrOpcode opc, int n, IrValue **ops, int buf, int S, const IrType *tile,
		    bool ws)
{
	IrOp *c = ir_build(b, opc, n, ops, 0, NULL, 0);
	ir_op_set_int(ctx, c, "buffer", buf);
	ir_op_set_int(ctx, c, "stages", S);
	if (ws)
		ir_op_set_int(ctx, c, "ws", 1);
	IrAttr ta = {.name = ir_intern(ctx, "tile"), .kind = ATTR_TYPE, .type = tile};
	ir_set_attr(ctx, &c->nattrs, &c->attrs, &ta);
	return c;
}

/* ------------------------------------------------------------------------- */
/* Warp specialization: a producer warp issues the tensor copies             */
/* ------------------------------------------------------------------------- */

/* A warp-specialized loop (Triton's tl.range(..., warp_specialize=True))
 * whose tiles all come through the tensor memory access unit: one producer
 * warp, after the kernel's num_warps consumer warps, runs a loop of its own
 * over the same iterations that waits for a slot to be free (its empty
 * mbarrier) and copies the tile into it; the consumers wait for the tile
 * (its full mbarrier), compute, and release the slot they read in the
 * previous iteration once its warpgroup MMAs are done (tma_release). The
 * consumer loop then holds no barrier and no copy, and the producer runs up
 * to num_stages tiles ahead. The producer's code sits in a warp_specialize
 * region at the top of the kernel (after the mbarriers' initialisation and
 * a barrier of every warp): the scalars its loop needs from before the loop
 * are computed again there. */

/* The producer is a warpgroup (its first warp copies, the others exit at
 * once): registers move between warpgroups only (setmaxnreg), so with two
 * consumer warpgroups the producer's gives most of its registers to them. */
#define WS_WARPS 4

static bool ws_clonable(PCtx *p, const IrValue *v, int depth)
{
	if (!v->def)
		return v->owner == p->f->body; /* a parameter */
	const IrOp *d = v->def;
	if (depth > 64 || !valid_id(p, v) || ir_is_block(v->type) || d->parent != p->f->body || d->nregions ||
	    !ir_op_pure(d))
		return false;
	for (int i = 0; i < d->nops; i++)
		if (!ws_clonable(p, d->ops[i], depth + 1))
			return false;
	return true;
}

/* v (a copy's coordinate, or what a carried value it reads becomes) can be
 * computed by the producer: scalars of the body over the carried values the
 * copies need and values from before the loop it can compute again. */
static bool ws_slice_ok(PCtx *p, const ACtx *a, IrValue *v, char *seen)
{
	if (!in_body(p, v))
		return ws_clonable(p, v, 0);
	if (!valid_id(p, v) || ir_is_block(v->type))
		return false;
	if (seen[v->id])
		return true;
	seen[v->id] = 1;
	if (!v->def)
		return v->index == 0 || (a->need[v->index] && ws_slice_ok(p, a, p->yield->ops[v->index - 1], seen));
	if (v->def->nregions || !ir_op_pure(v->def))
		return false;
	for (int i = 0; i < v->def->nops; i++)
		if (!ws_slice_ok(p, a, v->def->ops[i], seen))
			return false;
	return true;
}

static bool has_warp_spec(const IrFunc *f)
{
	for (const IrOp *op = f->body->first; op; op = op->next)
		if (op->opc == OP_WARP_SPEC)
			return true;
	return false;
}

/* The loop asks for warp specialization and its place allows it. */
static bool ws_loop(const IrFunc *f, const IrOp *loop, const AnGpuOptions *o)
{
	return o->arch >= 90 && f->is_kernel && ir_op_int(loop, "warp_specialize", 0) && loop->parent == f->body &&
	       wgmma_loop(loop->regions[0], o) && !has_warp_spec(f);
}

/* A descriptor load whose tensor map is a kernel parameter. */
static bool map_param_load(const IrFunc *f, const IrOp *op)
{
	if (op->opc != OP_LOAD || ir_op_int(op, "tma", 0) != 3 || op->nops != 6)
		return false;
	const IrValue *m = op->ops[3];
	return !m->def && m->owner == f->body && m->index >= 0 && m->index < f->body->nargs &&
	       ir_find_attr(f->params[m->index].nattrs, f->params[m->index].attrs, "tensormap");
}

int an_ws_plan(IrFunc *f, const AnGpuOptions *o, int num_stages)
{
	if (o->arch < 90 || !f->is_kernel || (o->num_warps != 4 && o->num_warps != 8))
		return 0;
	for (const IrOp *op = f->body->first; op; op = op->next) {
		if (op->opc != OP_FOR || !ir_op_int(op, "warp_specialize", 0) ||
		    ir_op_int(op, "num_stages", num_stages) < 2)
			continue;
		int ndots = 0, nmaps = 0;
		bool m128 = true;
		for (const IrOp *q = op->regions[0]->first; q; q = q->next) {
			if (q->opc == OP_DOT) {
				ndots++;
				m128 = m128 && q->res[0].type->rank == 2 && q->res[0].type->shape[0] % 128 == 0;
			}
			nmaps += map_param_load(f, q);
		}
		if (ndots && nmaps)
			return o->num_warps == 4 && m128 ? 8 : o->num_warps;
	}
	return 0;
}

/* The producer of the loop p->loop: before the kernel's first op, the
 * buffers' mbarriers (full and empty) and a barrier of every warp, then the
 * warp_specialize region with a loop over the same iterations, carrying
 * the values the copies' coordinates read, a slot and the empty mbarriers'
 * phases (bit s: the parity of slot s's next wait, all ones at first, so
 * that the first num_stages copies go at once). Each iteration waits for
 * its slot to be free and copies its tiles into it. */
static void ws_producer(ACtx *a, int buf0, int nc, IrOp *const *cand, const IrType *const *ctile)
{
	PCtx *p = a->p;
	IrCtx *ctx = p->ctx;
	IrFunc *f = p->f;
	IrOp *loop = p->loop;
	IrBlock *body = p->body;
	int S = a->S;
	const IrType *i32 = ir_type(ctx, TY_I32);
	IrBuilder eb;
	ir_builder_init(&eb, ctx);
	ir_builder_before(&eb, f->body->first);
	eb.loc = loop->loc;
	for (int k = 0; k < nc; k++)
		tma_op(ctx, &eb, OP_TMA_INIT, 0, NULL, buf0 + k, S, ctile[k], true);
	ir_op_set_int(ctx, ir_build(&eb, OP_BARRIER, 0, NULL, 0, NULL, 0), "all", 1);
	IrOp *W = ir_build(&eb, OP_WARP_SPEC, 0, NULL, 0, NULL, 1);
	ir_op_set_int(ctx, W, "producer_warps", WS_WARPS);
	ir_set_attr_int(ctx, &f->module->nattrs, &f->module->attrs, "ws_warps", WS_WARPS);
	IrBuilder wb;
	ir_builder_init(&wb, ctx);
	ir_builder_at_end(&wb, W->regions[0]);
	wb.loc = loop->loc;
	IrOp *wy = ir_yield(&wb, 0, NULL);
	ir_builder_before(&wb, wy);
	a->wb = &wb;
	size_t msz = sizeof(IrValue *) * ((size_t)p->n + 1);
	a->wmap = ir_alloc(ctx, msz);
	memset(a->wmap, 0, msz);

	/* the loop: bounds, the carried values the copies need, slot, phases */
	int na = 0;
	IrValue **ops = ir_alloc(ctx, sizeof(IrValue *) * (size_t)(body->nargs + 5));
	for (int i = 0; i < 3; i++)
		ops[i] = ws_clone(a, loop->ops[i]);
	for (int j = 1; j < body->nargs; j++)
		if (a->need[j])
			ops[3 + na++] = ws_clone(a, loop->ops[2 + j]);
	ops[3 + na] = ir_const_int(&wb, i32, 0);
	ops[4 + na] = ir_const_int(&wb, i32, (1 << S) - 1);
	int nca = na + 2;
	const IrType **tys = ir_alloc(ctx, sizeof(IrType *) * (size_t)nca);
	for (int i = 0; i < nca; i++)
		tys[i] = ops[3 + i]->type;
	IrOp *PL = ir_build(&wb, OP_FOR, 3 + nca, ops, nca, tys, 1);
	for (int i = 0; i < PL->nres; i++)
		PL->res[i].id = -1;
	ir_builder_before(&wb, PL); /* values from before the loop go before it */
	IrBlock *pbody = PL->regions[0];
	AEnv *en = &a->envs[S + 1];
	en->iv = ir_block_add_arg(ctx, pbody, loop->ops[0]->type);
	en->iv->id = -1;
	en->args = ir_alloc(ctx, sizeof(IrValue *) * (size_t)body->nargs);
	for (int j = 1; j < body->nargs; j++)
		if (a->need[j]) {
			en->args[j] = ir_block_add_arg(ctx, pbody, body->args[j]->type);
			en->args[j]->id = -1;
		}
	IrValue *slot = ir_block_add_arg(ctx, pbody, i32), *ph = ir_block_add_arg(ctx, pbody, i32);
	slot->id = ph->id = -1;
	IrBuilder pb;
	ir_builder_init(&pb, ctx);
	ir_builder_at_end(&pb, pbody);
	pb.loc = loop->loc;
	en->b = &pb;
	IrValue *yes = ir_const_int(&pb, ir_type(ctx, TY_I1), 1);
	for (int k = 0; k < nc; k++) {
		IrOp *L = cand[k];
		pb.loc = L->loc;
		IrValue *wops[2] = {slot, ph};
		IrOp *w = tma_op(ctx, &pb, OP_TMA_WAIT, 2, wops, buf0 + k, S, ctile[k], true);
		ir_op_set_int(ctx, w, "empty", 1);
		IrValue *cops[5] = {L->ops[3], slot, yes, aeval(a, S + 1, L->ops[4]), aeval(a, S + 1, L->ops[5])};
		tma_op(ctx, &pb, OP_TMA_COPY, 5, cops, buf0 + k, S, ctile[k], true);
	}
	pb.loc = loop->loc;
	IrValue **ys = ir_alloc(ctx, sizeof(IrValue *) * (size_t)nca);
	int ny = 0;
	for (int j = 1; j < body->nargs; j++)
		if (a->need[j])
			ys[ny++] = aeval(a, S + 1, p->yield->ops[j - 1]);
	IrValue *one = ir_const_int(&pb, i32, 1);
	IrValue *s1 = ir_binary(&pb, OP_ADD, slot, one);
	ys[ny++] = ir_select(&pb, ir_cmp(&pb, "eq", s1, ir_const_int(&pb, i32, S)), ir_const_int(&pb, i32, 0), s1);
	ys[ny++] = ir_binary(&pb, OP_XOR, ph, ir_binary(&pb, OP_SHL, one, slot));
	ir_yield(&pb, ny, ys);
}

/* Whether op reads v. */
static bool reads_value(const IrOp *op, const IrValue *v)
{
	for (int i = 0; i < op->nops; i++)
		if (op->ops[i] == v)
			return true;
	return false;
}

/* Whether the tile read rd (a 2-D local_read) is an operand of a dot on
 * mma.sync, its first user at the top level of the body. */
static bool mma_sync_read(IrCtx *ctx, const IrOp *rd, const AnGpuOptions *o)
{
	if (rd->res[0].type->rank != 2)
		return false;
	for (const IrOp *u = rd->next; u; u = u->next)
		if (reads_value(u, &rd->res[0])) {
			const IrLayout *l = u->opc == OP_DOT ? an_dot_mma_layout(ctx, u, o) : NULL;
			return l && l->version_major == 2;
		}
	return false;
}

/* The dots of body that read buffer buf's tile (through the local_reads
 * of the buffer: their only users must be dots), first and last; false
 * when a read of the slot has another user. */
static bool buffer_dots(IrFunc *f, IrBlock *body, int64_t buf, IrOp **first, IrOp **last)
{
	*first = *last = NULL;
	for (IrOp *r = body->first; r; r = r->next) {
		if (r->opc != OP_LOCAL_READ || ir_op_int(r, "buffer", -1) != buf)
			continue;
		int users = 0;
		for (IrOp *op = body->first; op; op = op->next)
			if (reads_value(op, &r->res[0])) {
				if (op->opc != OP_DOT)
					return false;
				users++;
				if (!*first || op->id < (*first)->id)
					*first = op;
				if (!*last || op->id > (*last)->id)
					*last = op;
			}
		if (users != ir_count_uses(f, &r->res[0]))
			return false;
	}
	return *first != NULL;
}

/* Attention's warp-specialized loop (the last dot in flight into the next
 * iteration): each slot goes back to the producer as soon as the MMAs that
 * read it are done, so that it refills a whole iteration earlier (with
 * one CTA on a multiprocessor nothing else hides the copy's latency). A
 * tile read by dots this iteration waits for (Q @ K^T's K) is released
 * right after the last of them (its wait comes at once: the softmax reads
 * it); a tile the flying dot reads (V) is released, the previous
 * iteration's slot, right after the first dot, whose wait retires the
 * flying one. Each tile's wait moves down to just before its first dot, so
 * Q @ K^T starts as soon as K is there. */
static void ws_early_release(IrCtx *ctx, IrFunc *f, IrBlock *nb, int buf0, int nc, IrValue *rslot, IrValue *lb)
{
	int id = 0;
	IrOp *first = NULL, *last = NULL;
	for (IrOp *op = nb->first; op; op = op->next) {
		op->id = id++;
		if (op->opc == OP_DOT) {
			first = first ? first : op;
			last = op;
		}
	}
	for (int k = 0; k < nc; k++) {
		IrOp *d0, *d1, *rel = NULL, *wait = NULL;
		if (!buffer_dots(f, nb, buf0 + k, &d0, &d1) || (d1 == last && d0 != last))
			continue; /* read by the flying dot and an earlier one: at the end */
		for (IrOp *op = nb->first; op; op = op->next)
			if (ir_op_int(op, "buffer", -1) == buf0 + k) {
				if (op->opc == OP_TMA_RELEASE)
					rel = op;
				else if (op->opc == OP_TMA_WAIT)
					wait = op;
			}
		if (!rel || !wait)
			continue;
		IrOp *at = d1 == last ? first : d1; /* the release goes right after it */
		IrOp *after = at->next;
		IrBuilder b;
		ir_builder_init(&b, ctx);
		ir_builder_before(&b, after);
		b.loc = rel->loc;
		if (d1 != last) { /* this iteration's slot */
			ir_op_set_operand(rel, 0, rslot);
			ir_op_set_operand(rel, 1, ir_const_int(&b, ir_type(ctx, TY_I1), 1));
		} else { /* the previous iteration's (its slot computed at the top) */
			ir_op_set_operand(rel, 1, ir_cmp(&b, "ne", nb->args[0], lb));
		}
		ir_op_unlink(rel);
		ir_block_insert_before(nb, after, rel);
		/* both after every MMA is done: releasing the previous
		 * iteration's slot behind a wait that leaves Q @ K^T pending
		 * (wait_group 1 while P @ V is in flight across the back edge)
		 * makes ptxas serialize every warpgroup MMA of the loop (C7514;
		 * measured: D128 warp-specialized attention 576 -> 499 TFLOP/s) */
		ir_op_set_int(ctx, rel, "wgmma_pending", 0);
		ir_op_unlink(wait);
		ir_block_insert_before(nb, d0, wait);
	}
}

/* A loop whose tiles all come through the tensor memory access unit and
 * whose copies wait behind a {wgmma_pending} barrier (every warp is past
 * the previous iteration's reads of the slot they refill): its top barrier
 * orders nothing (each thread sees a tile through its own mbarrier wait),
 * so it goes, and each tile's wait moves down to just before the first dot
 * reading it (Q @ K^T starts as soon as K is there, V is waited for at P @
 * V). A fast warp is then at most the iteration the pending barrier allows
 * ahead, so no wait meets a later phase of its mbarrier. */
static void tma_waits_down(IrFunc *f, IrBlock *nb, int buf0, int nc)
{
	int id = 0;
	IrOp *top = NULL;
	for (IrOp *op = nb->first; op; op = op->next) {
		op->id = id++;
		if (!top && op->opc == OP_BARRIER && !ir_op_attr(op, "wgmma_pending"))
			top = op;
	}
	if (!top)
		return;
	for (IrOp *op = nb->first; op != top; op = op->next)
		if (op->opc != OP_TMA_WAIT)
			return; /* not the top barrier after the waits */
	ir_op_unlink(top);
	for (int k = 0; k < nc; k++) {
		IrOp *d0, *d1, *wait = NULL;
		if (!buffer_dots(f, nb, buf0 + k, &d0, &d1))
			continue;
		for (IrOp *op = nb->first; op && !wait; op = op->next)
			if (op->opc == OP_TMA_WAIT && ir_op_int(op, "buffer", -1) == buf0 + k)
				wait = op;
		if (wait) {
			ir_op_unlink(wait);
			ir_block_insert_before(nb, d0, wait);
		}
	}
}

/* The largest scratch any op of b (or of its regions) needs, but for the
 * conversions of the nc loads in cand (they become reads of the slots). */
/* v is a dot's result, through at most depth elementwise ops of one
 * operand (casts) and `if`s passing it on. */
static bool from_dot(const IrValue *v, int depth)
{
	const IrOp *d = v->def;
	if (!d || depth < 0)
		return false;
	if (d->opc == OP_DOT)
		return true;
	IrOp *via;
	if (d->opc == OP_IF) {
		const IrOp *t = ir_block_terminator(d->regions[0]);
		return t && v->index < t->nops && passes(v, t->ops[v->index], &via) && from_dot(t->ops[v->index], depth - 1);
	}
	if (d->opc == OP_RESHAPE || d->opc == OP_TRANS || d->opc == OP_SPLIT)
		return from_dot(d->ops[0], depth - 1);
	return (ir_opinfo(d->opc)->flags & IR_ELEM) && d->nops == 1 && from_dot(d->ops[0], depth - 1);
}

static int64_t max_scratch(IrBlock *b, const AnGpuOptions *o, IrOp **cand, int nc, bool nested, bool fused)
{
	int64_t m = 0;
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++) {
			int64_t x = max_scratch(op->regions[r], o, cand, nc, true, fused);
			m = x > m ? x : m;
		}
		bool staged = false;
		for (int k = 0; k < nc && op->opc == OP_CONVERT_LAYOUT; k++)
			staged |= op->ops[0]->def == cand[k];
		/* layouts come later: a dot on tensor cores needs no scratch */
		if (op->opc == OP_DOT && an_dot_mma_layout(b->func->module->ctx, op, o))
			staged = true;
		int64_t x = staged ? 0 : an_scratch_bytes(op, o);
		/* a subtiled epilogue (reshape, permute, split of the
		 * accumulator): register renamings once the store's layout is
		 * chosen (layout.c), the conversion counted at the store */
		if (fused && nested && (op->opc == OP_RESHAPE || op->opc == OP_TRANS || op->opc == OP_SPLIT) &&
		    from_dot(op->ops[0], 8))
			x = 0;
		/* a dot's result stored under an `if` of a flattened nest's loop
		 * (its epilogue): the layout pass converts it to the store's
		 * layout through scratch the size of the stored block, at most
		 * 32 KiB at a time (alloc.c: in rounds) */
		if (fused && nested && op->opc == OP_STORE && op->nops >= 2 && ir_is_block(op->ops[1]->type) &&
		    from_dot(op->ops[1], 8)) {
			x = op->ops[1]->type->numel * (ir_type_bits(ir_scalar(op->ops[1]->type)) / 8);
			/* a descriptor store's staging (a tensor store) is the
			 * whole block at once */
			if (!ir_op_int(op, "tma", 0))
				x = an_round_bytes(x);
		}
		m = x > m ? x : m;
	}
	return m;
}

/* The prefetch candidates as an_dot_kw4 sees them: which are read back
 * into registers and which transposed. */
typedef struct KwCands {
	IrOp **cand;
	const bool *cregs, *ctrans;
	int nc;
} KwCands;

static bool cand_tile(const IrOp *op, void *arg, bool *regs, bool *transposed)
{
	const KwCands *k = arg;
	for (int i = 0; i < k->nc; i++)
		if (op == k->cand[i]) {
			*regs = k->cregs[i];
			*transposed = k->ctrans[i];
			return true;
		}
	return false;
}

/* The staging of the operands that tensor-core dots of the body read from
 * registers (not straight from a slot), each value once: where tiles are
 * read back into registers (regs_ok), their dots read what other ops
 * made of them from staging beside the slots (a tf32x3 dot's four
 * halves). An over-estimate: the allocation reuses staging of dots that
 * are done. */
static int64_t staging_bytes(IrFunc *f, IrBlock *body, const AnGpuOptions *o, IrOp **cand, const bool *cregs,
			     const bool *ctrans, int nc)
{
	const IrValue *seen[32];
	int ns = 0;
	int64_t sum = 0;
	KwCands kc = {cand, cregs, ctrans, nc};
	for (IrOp *op = body->first; op; op = op->next) {
		const IrLayout *mma = op->opc == OP_DOT ? an_dot_mma_layout(f->module->ctx, op, o) : NULL;
		/* dots whose reads go straight into the operands' registers (an_dot_kw4)
		 * stage nothing */
		if (!mma || an_dot_kw4(f, op, mma, cand_tile, &kc))
			continue;
		for (int i = 0; i < 2; i++) {
			const IrValue *v = op->ops[i];
			bool slot = false, dup = false, regs = false, tr = false;
			/* 16-bit operands of mma.sync from 8-bit tiles read back into
			 * registers go straight into their operand layout
			 * (layout.c regs_read_layout): A any way round, B as
			 * loaded ([K][N]) */
			const IrOp *t = mma->version_major == 2 && op->ops[0] != op->ops[1] &&
							ir_type_bits(ir_scalar(v->type)) == 16
						? an_elem_source(f, v, cand_tile, &kc, &regs, &tr)
						: NULL;
			if (t && regs && (i == 0 || (!tr && an_kn_reads_on())) &&
			    ir_type_bits(ir_scalar(t->res[0].type)) == 8)
				continue;
			for (int k = 0; k < nc; k++)
				slot |= v->def == cand[k] && !cregs[k];
			for (int j = 0; j < ns; j++)
				dup |= seen[j] == v;
			if (slot || dup || !ir_is_block(v->type))
				continue;
			if (ns < 32)
				seen[ns++] = v;
			sum += v->type->numel * (ir_type_bits(ir_scalar(v->type)) / 8);
		}
	}
	return sum;
}

/* The shared memory a loop's multi-buffered tiles may take: the device's
 * limit less what the loop's own scratch users need (they live alongside
 * the slots) and a little for alignment and mbarriers. What follows the
 * loop (an epilogue's layout conversion or tensor store) reuses the slots'
 * bytes once the copies are drained, also in a persistent kernel's tile
 * loop, where each tile drains its cp.async copies and sets up and
 * invalidates its mbarriers (alloc.c), so it needs none. */
static int64_t stage_budget(IrBlock *body, const AnGpuOptions *o, IrOp **cand, const bool *cregs, const bool *ctrans,
			    int nc, bool fused)
{
	/* layouts come after this pass: the scratch is an estimate, so at
	 * least 16 KiB stay free (128x256x64 f16 tiles still get 4 stages) */
	int64_t inner = max_scratch(body, o, cand, nc, false, fused);
	bool regs = false;
	for (int k = 0; k < nc; k++)
		regs |= cregs[k];
	if (regs)
		inner += staging_bytes(body->func, body, o, cand, cregs, ctrans, nc);
	/* and some for alignment and mbarriers (a flattened nest's slots and
	 * epilogue buffer are all it has: Triton's 4 stages of 128x256x64 f16
	 * tiles beside a 32 KiB epilogue buffer fit). On the parts with 99 KiB
	 * (sm_86, sm_89) the 16 KiB floor alone cost tutorial 03's 128x256x64
	 * tiles every stage and 128x128x64 one of Triton's three: there the
	 * estimate stands, with 1 KiB for alignment (cp.async, no mbarriers) */
	int64_t limit = an_shared_limit(o->arch);
	if (limit <= 101376)
		return limit - inner - 1024;
	return limit - (inner > 16384 ? inner : 16384) - (fused ? 1024 : 4096);
}

/* A warpgroup-MMA loop whose dots only chain their accumulators gets one
 * slot more than its num_stages when that costs no block a multiprocessor
 * (lag_slots). On by default, CTRITON_LAG_SLOT=0 turns it off; part of the
 * key. */
static bool lag_slot_on(void)
{
	const char *e = getenv("CTRITON_LAG_SLOT");
	return !(e && e[0] == '0');
}

/* How many blocks of `bytes` of shared memory (and the 1 KiB the driver
 * keeps for each) one multiprocessor holds. */
static int64_t blocks_by_shared(const AnGpuOptions *o, int64_t bytes)
{
	return (an_shared_limit(o->arch) + 1024) / (bytes + 1024);
}

/* Whether op lies in the body of a loop. */
static bool inside_loop(const IrOp *op)
{
	for (const IrBlock *b = op->parent; b && b->parent_op; b = b->parent_op->parent)
		if (b->parent_op->opc == OP_FOR || b->parent_op->opc == OP_WHILE)
			return true;
	return false;
}

/* The slots of a cp.async loop whose warpgroup MMAs stay in flight across
 * the back edge (chained accumulators): S (num_stages), or S + 1.
 *
 * With S slots the copies of iteration i (tile i + S - 1) refill the slot
 * that iteration i - 1's MMAs read. Those MMAs may still run, so each
 * warpgroup waits until only its newest group is left and then meets the
 * others at a barrier before copying: two barriers an iteration, the
 * second holding every warpgroup to the slowest one's MMA.
 *
 * With S + 1 slots the copies refill the slot of iteration i - 2 instead.
 * Every warpgroup waited for its MMAs of i - 2 in iteration i - 1 (the
 * same wait, until one group is left) before the barrier at the top of
 * iteration i, so that barrier already orders the copies: the wait stays,
 * the second barrier goes, and the copies run as far ahead as before.
 * Taken only when the extra slot fits and leaves as many blocks on a
 * multiprocessor as the shared memory allowed before (tutorial 03's
 * 128x256x64 tiles with 3 stages: 144 KiB -> 192 KiB, one block either
 * way), for loops without tensor copies, not a flattened nest nor inside
 * another loop (a persistent kernel's nest: its epilogue reuses the
 * slots). */
static int lag_slots(IrOp *loop, const AnGpuOptions *o, int S, IrOp *const *cand, const bool *cregs, int nc,
		     int64_t tile_bytes, int64_t budget, bool fused, int ntma)
{
	IrBlock *body = loop->regions[0];
	if (!lag_slot_on() || fused || ntma || S < 2 || (o->num_warps != 4 && o->num_warps != 8) || inside_loop(loop) ||
	    !wgmma_loop(body, o) || !chained_accs_of(body, false, cand, cregs, nc))
		return S;
	if (tile_bytes * (S + 1) > budget ||
	    blocks_by_shared(o, tile_bytes * (S + 1)) < blocks_by_shared(o, tile_bytes * S))
		return S;
	return S + 1;
}

static bool async_loop(IrCtx *ctx, IrFunc *f, IrOp *loop, const AnGpuOptions *o, int S, int *nbuf, int *nleft)
{
	IrBlock *body = loop->regions[0];
	IrOp *y = ir_block_terminator(body);
	if (!y || y->opc != OP_YIELD || loop->nops < 3 || body->nargs != loop->nops - 2 ||
	    y->nops != body->nargs - 1 || ir_is_block(loop->ops[0]->type))
		return false;
	AnAxis *ax = an_axis_info(f);
	PCtx p;
	memset(&p, 0, sizeof p);
	p.ctx = ctx;
	p.f = f;
	p.loop = loop;
	p.body = body;
	p.yield = y;
	p.n = an_number_values(f);
	p.state = ir_alloc(ctx, (size_t)p.n + 1);
	memset(p.state, 0, (size_t)p.n + 1);
	p.ifs = ir_op_int(loop, "fused_nest", 0); /* a flattened nest's tile switch */

	IrOp *cand[8], *reads[8], *trs[8][4];
	IrValue *repl[8];
	bool ctrans[8], cplain[8], ctto[8], cregs[8];
	const IrType *ctile[8]; /* a tensor-memory-access copy: its slot's tile, else NULL */
	int ntma = 0;
	int nc = 0, ntrs[8];
	int64_t tile_bytes = 0;
	IrOp *vcand[8];
	int nv = 0;
	for (IrOp *op = body->first; op; op = op->next) {
		if (op->opc != OP_LOAD || op->nres != 1 || !ir_is_block(op->res[0].type))
			continue;
		if (op->res[0].type->rank == 1) {
			if (nv < 8 && vector_async_ok(&p, op, ax))
				vcand[nv++] = op;
			continue;
		}
		bool tto = trans_to_dot(&p, op) && few_runs(op, o, ax),
		     multi = ir_count_uses(f, &op->res[0]) > 1 || tto;
		bool sl = true, tr = false, plain = false, rg = false;
		for (int i = 0; sl && i < op->nops && i < 3; i++) /* a tensor-map tail: tma_ok */
			sl = slice_ok(&p, op->ops[i]);
		bool ok = sl && (multi || dot_user(body, &op->res[0]));
		if (ok && multi && nc < 8)
			ok = async_ok_multi(&p, op, o, ax, &tr, trs[nc], &ntrs[nc]);
		if (!ok) {
			/* read by a dot only through other ops: read back into
			 * registers (regs_ok) */
			if (!sl || nc == 8 || !regs_ok(&p, op, o, ax, &tr))
				continue;
			rg = true;
		}
		if (!multi || rg)
			ntrs[nc] = -1;
		if (nc == 8 || ir_find_attr(op->nattrs, op->attrs, "volatile"))
			return false; /* the register prefetch takes the loop */
		if (!multi && !rg && !async_ok(&p, op, o, ax, &tr, &plain)) {
			/* a tile cp.async cannot copy (rows not 4-byte aligned, say):
			 * it stays a load, which the register prefetch then takes one
			 * iteration ahead, while the others go through the slots (as
			 * Triton pipelines each load on its own) */
			(*nleft)++;
			continue;
		}
		ctrans[nc] = tr;
		cplain[nc] = plain;
		ctto[nc] = tto && !rg;
		cregs[nc] = rg;
		ctile[nc] = NULL;
		if (!plain && !rg && tma_ok(&p, op, o, tr, &ctile[nc]))
			ntma++;
		else
			ctile[nc] = NULL;
		cand[nc++] = op;
		tile_bytes += op->res[0].type->numel * (ir_type_bits(ir_scalar(op->res[0].type)) / 8);
	}
	if (!nc)
		return false;
	/* vectors beside the tiles of a warpgroup-MMA loop that copies with
	 * cp.async only (vector_async_ok) */
	for (int i = 0; i < nv && nc < 8 && !ntma && wgmma_loop(body, o); i++) {
		ctrans[nc] = false;
		cplain[nc] = false;
		ctto[nc] = false;
		cregs[nc] = false;
		ctile[nc] = NULL;
		ntrs[nc] = -1;
		cand[nc++] = vcand[i];
		tile_bytes += vcand[i]->res[0].type->numel * (ir_type_bits(ir_scalar(vcand[i]->res[0].type)) / 8);
	}
	/* shared memory: fewer stages when the tiles are large; then, before
	 * giving up, the tiles read only through a trans stay loads (what they
	 * were before such tiles could take slots), then those read back into
	 * registers */
	int64_t budget = stage_budget(body, o, cand, cregs, ctrans, nc, p.ifs);
	int S0 = S;
	while (S > 2 && tile_bytes * S > budget)
		S--;
	for (int pass = 0; pass < 2; pass++)
		for (int k = nc - 1; k >= 0 && tile_bytes * S > budget; k--) {
			if (!(pass ? cregs[k] : ctto[k]) || nc < 2)
				continue;
			S = S0;
			tile_bytes -= cand[k]->res[0].type->numel * (ir_type_bits(ir_scalar(cand[k]->res[0].type)) / 8);
			ntma -= ctile[k] != NULL;
			for (int j = k; j + 1 < nc; j++) {
				cand[j] = cand[j + 1];
				ctrans[j] = ctrans[j + 1];
				cplain[j] = cplain[j + 1];
				ctto[j] = ctto[j + 1];
				cregs[j] = cregs[j + 1];
				ctile[j] = ctile[j + 1];
				ntrs[j] = ntrs[j + 1];
				memcpy(trs[j], trs[j + 1], sizeof trs[j]);
			}
			nc--;
			(*nleft)++;
			budget = stage_budget(body, o, cand, cregs, ctrans, nc, p.ifs);
			while (S > 2 && tile_bytes * S > budget)
				S--;
		}
	if (tile_bytes * S > budget)
		return false;
	/* the slots: S, or one more (lag_slots) */
	int N = lag_slots(loop, o, S, cand, cregs, nc, tile_bytes, budget, p.ifs, ntma);

	size_t msz = sizeof(IrValue *) * ((size_t)p.n + 1);
	ACtx a;
	memset(&a, 0, sizeof a);
	a.p = &p;
	a.S = S;
	a.envs = ir_alloc(ctx, sizeof(AEnv) * (size_t)(S + 2));
	memset(a.envs, 0, sizeof(AEnv) * (size_t)(S + 2));
	for (int e = 0; e <= S + 1; e++) {
		a.envs[e].memo = ir_alloc(ctx, msz);
		memset(a.envs[e].memo, 0, msz);
		a.envs[e].it = e < S ? e : e == S ? -1 : -2;
	}
	a.shadow = ir_alloc(ctx, sizeof(IrValue *) * (size_t)body->nargs);
	a.need = ir_alloc(ctx, sizeof(bool) * (size_t)body->nargs);
	memset(a.shadow, 0, sizeof(IrValue *) * (size_t)body->nargs);
	memset(a.need, 0, sizeof(bool) * (size_t)body->nargs);
	char *seen = ir_alloc(ctx, (size_t)p.n + 1);
	memset(seen, 0, (size_t)p.n + 1);
	/* a copy's slice: the pointers, mask and other, or a tensor map's offsets */
	for (int k = 0; k < nc; k++)
		for (int i = ctile[k] ? 4 : 0; i < (ctile[k] ? cand[k]->nops : cand[k]->nops < 3 ? cand[k]->nops : 3); i++)
			mark_args(&p, a.need, seen, cand[k]->ops[i]);
	/* warp specialization: every tile through the tensor memory access
	 * unit, the copies' slices computable by the producer */
	bool ws = ntma == nc && !*nleft && ws_loop(f, loop, o);
	if (ws) {
		memset(seen, 0, (size_t)p.n + 1);
		for (int i = 0; ws && i < 3; i++)
			ws = ws_clonable(&p, loop->ops[i], 0);
		for (int j = 1; ws && j < body->nargs; j++)
			ws = !a.need[j] || (!ir_is_block(body->args[j]->type) && ws_clonable(&p, loop->ops[2 + j], 0));
		for (int k = 0; ws && k < nc; k++) {
			ws = ws_clonable(&p, cand[k]->ops[3], 0); /* a map made in the kernel: not the producer's */
			for (int i = 4; ws && i < cand[k]->nops; i++)
				ws = ws_slice_ok(&p, &a, cand[k]->ops[i], seen);
		}
	}

	ir_builder_init(&p.pre, ctx);
	ir_builder_before(&p.pre, loop);
	p.pre.loc = loop->loc;
	p.actx = &a;
	const IrType *i32 = ir_type(ctx, TY_I32);
	int buf0 = *nbuf;
	*nbuf += nc;

	/* tiles D = S - 1 ahead. (Keeping one warpgroup MMA in flight across the
	 * back edge needs the copies one tile fewer ahead, so that none
	 * overwrites a slot an MMA still reads: measured on the H200 with 3 and
	 * 4 stages, the shorter prefetch cost more than the overlap gained.) */
	int D = S - 1;
	/* the producer: its region and its loop */
	if (ws)
		ws_producer(&a, buf0, nc, cand, ctile);
	/* tensor-memory-access buffers: their mbarriers, before the first copy */
	if (ntma && !ws) {
		for (int k = 0; k < nc; k++)
			if (ctile[k])
				tma_op(ctx, &p.pre, OP_TMA_INIT, 0, NULL, buf0 + k, S, ctile[k], ws);
		ir_build(&p.pre, OP_BARRIER, 0, NULL, 0, NULL, 0);
	}
	/* prologue: tiles 0 .. D-1 into slots 0 .. D-1, one group each */
	for (int it = 0; !ws && it < D; it++) {
		IrValue *slot = ir_const_int(&p.pre, i32, it);
		slot->id = -1;
		IrValue *iv = aeval(&a, it, body->args[0]);
		for (int k = 0; k < nc; k++) {
			IrOp *L = cand[k];
			if (ctile[k]) { /* thread 0 copies tile `it` where it exists */
				p.pre.loc = L->loc;
				IrValue *ops[5] = {L->ops[3], slot, ir_cmp(&p.pre, "lt", iv, loop->ops[1]),
						   aeval(&a, it, L->ops[4]), aeval(&a, it, L->ops[5])};
				tma_op(ctx, &p.pre, OP_TMA_COPY, 5, ops, buf0 + k, S, ctile[k], ws);
				continue;
			}
			IrValue *ptr = aeval(&a, it, L->ops[0]);
			IrValue *mask = copy_mask(&a, it, &p.pre, ax, L, copy_dim(L, ctrans[k]), ptr, iv);
			p.pre.loc = L->loc;
			IrValue *ops[3] = {ptr, slot, mask};
			IrOp *c = ir_build(&p.pre, OP_ASYNC_COPY, 3, ops, 0, NULL, 0);
			ir_op_set_int(ctx, c, "buffer", buf0 + k);
			if (ctrans[k])
				ir_op_set_int(ctx, c, "transposed", 1);
			if (cplain[k])
				ir_op_set_int(ctx, c, "plain", 1);
			ir_op_set_int(ctx, c, "stages", N);
		}
		if (ntma < nc)
			ir_build(&p.pre, OP_ASYNC_COMMIT, 0, NULL, 0, NULL, 0);
	}
	/* shadow arguments start at iteration D */
	int nsh = 0;
	IrValue *sh_init[66]; /* + the slot and the phases */
	int sh_idx[64];
	for (int j = 1; !ws && j < body->nargs && nsh < 64; j++) {
		if (!a.need[j])
			continue;
		sh_init[nsh] = aeval(&a, D, body->args[j]);
		sh_idx[nsh++] = j;
	}
	/* the read slot, carried */
	IrValue *slot0 = ir_const_int(&p.pre, i32, 0);
	slot0->id = -1;
	for (int s = 0; s < nsh; s++) {
		a.shadow[sh_idx[s]] = ir_block_add_arg(ctx, body, body->args[sh_idx[s]]->type);
		a.shadow[sh_idx[s]]->id = -1;
	}
	IrValue *rslot = ir_block_add_arg(ctx, body, i32);
	rslot->id = -1;
	/* the mbarrier phases, carried: bit s is the parity the next wait on
	 * slot s waits for */
	IrValue *phases = NULL;
	if (ntma) {
		phases = ir_block_add_arg(ctx, body, i32);
		phases->id = -1;
	}

	/* body top: wait for tile k, one barrier, copies of tile k+D into the
	 * slot read in the previous iteration, commit, then read tile k */
	IrOp *orig_first = body->first;
	ir_builder_init(&p.top, ctx);
	ir_builder_before(&p.top, orig_first);
	p.top.loc = loop->loc;
	if (ntma < nc) {
		IrOp *w = ir_build(&p.top, OP_ASYNC_WAIT, 0, NULL, 0, NULL, 0);
		ir_op_set_int(ctx, w, "pending", D - 1);
	}
	for (int k = 0; k < nc; k++)
		if (ctile[k]) {
			IrValue *ops[2] = {rslot, phases};
			tma_op(ctx, &p.top, OP_TMA_WAIT, 2, ops, buf0 + k, S, ctile[k], ws);
		}
	if (!ws)
		ir_build(&p.top, OP_BARRIER, 0, NULL, 0, NULL, 0);
	IrValue *zero = ir_const_int(&p.top, i32, 0);
	IrValue *one = ir_const_int(&p.top, i32, 1);
	IrValue *ph_next = phases ? ir_binary(&p.top, OP_XOR, phases, ir_binary(&p.top, OP_SHL, one, rslot)) : NULL;
	IrValue *nS = ir_const_int(&p.top, i32, N);
	/* the slot of tile k + D: (rslot + D) mod N */
	IrValue *ahead = ir_binary(&p.top, OP_ADD, rslot, ir_const_int(&p.top, i32, D));
	IrValue *wrap = ir_cmp(&p.top, "ge", ahead, nS);
	IrValue *wslot = ir_select(&p.top, wrap, ir_binary(&p.top, OP_SUB, ahead, nS), ahead);
	IrValue *r1 = ir_binary(&p.top, OP_ADD, rslot, one);
	IrValue *rnext = ir_select(&p.top, ir_cmp(&p.top, "eq", r1, nS), zero, r1);
	IrOp *copies_first = orig_first->prev; /* the copy group starts after this op */
	if (!ws) { /* warp-specialized, the producer computes what copies need */
		IrValue *st = ir_const_int(&p.top, loop->ops[2]->type, D);
		IrValue *xs[2] = {loop->ops[2], st};
		IrValue *d = ir_build1(&p.top, OP_MUL, loop->ops[2]->type, 2, xs);
		IrValue *ys[2] = {body->args[0], d};
		a.iv_ahead = ir_build1(&p.top, OP_ADD, body->args[0]->type, 2, ys);
	}
	/* warp-specialized: the slot read in the previous iteration (there is
	 * one after the first) is free once its MMAs are done */
	IrValue *later = ws ? ir_cmp(&p.top, "ne", body->args[0], loop->ops[0]) : NULL;
	for (int k = 0; k < nc; k++) {
		IrOp *L = cand[k];
		if (ws) {
			IrValue *ops[2] = {wslot, later};
			IrOp *r = tma_op(ctx, &p.top, OP_TMA_RELEASE, 2, ops, buf0 + k, S, ctile[k], ws);
			ir_op_set_int(ctx, r, "wgmma_pending", 1);
			continue;
		}
		if (ctile[k]) { /* tile k + D, where it exists */
			p.top.loc = L->loc;
			IrValue *ops[5] = {L->ops[3], wslot, ir_cmp(&p.top, "lt", a.iv_ahead, loop->ops[1]),
					   aeval(&a, S, L->ops[4]), aeval(&a, S, L->ops[5])};
			tma_op(ctx, &p.top, OP_TMA_COPY, 5, ops, buf0 + k, S, ctile[k], ws);
			continue;
		}
		IrValue *ptr = aeval(&a, S, L->ops[0]);
		IrValue *mask = copy_mask(&a, S, &p.top, ax, L, copy_dim(L, ctrans[k]), ptr, a.iv_ahead);
		p.top.loc = L->loc;
		IrValue *ops[3] = {ptr, wslot, mask};
		IrOp *c = ir_build(&p.top, OP_ASYNC_COPY, 3, ops, 0, NULL, 0);
		ir_op_set_int(ctx, c, "buffer", buf0 + k);
		if (ctrans[k])
			ir_op_set_int(ctx, c, "transposed", 1);
		if (cplain[k])
			ir_op_set_int(ctx, c, "plain", 1);
		ir_op_set_int(ctx, c, "stages", N);
	}
	if (ntma < nc)
		ir_build(&p.top, OP_ASYNC_COMMIT, 0, NULL, 0, NULL, 0);
	IrValue *sh_next[66];
	for (int s = 0; s < nsh; s++)
		sh_next[s] = aeval(&a, S, p.yield->ops[sh_idx[s] - 1]);
	IrOp *copies_last = orig_first->prev;
	for (int k = 0; k < nc; k++) {
		IrOp *L = cand[k];
		p.top.loc = L->loc;
		/* a tile also read transposed (async_ok_multi): a read of the
		 * slot the other way round per trans, which goes */
		for (int i = 0; i < ntrs[k]; i++) {
			IrOp *T = trs[k][i];
			IrOp *r = ir_build(&p.top, OP_LOCAL_READ, 1, &rslot, 1, &T->res[0].type, 0);
			ir_op_set_int(ctx, r, "buffer", buf0 + k);
			if (!ctrans[k])
				ir_op_set_int(ctx, r, "transposed", 1);
			r->res[0].id = -1;
			ir_replace_all_uses(f, &T->res[0], &r->res[0]);
			ir_op_unlink(T);
		}
		reads[k] = NULL;
		if (ir_count_uses(f, &L->res[0]) == 0)
			continue;
		IrOp *r = ir_build(&p.top, OP_LOCAL_READ, 1, &rslot, 1, &L->res[0].type, 0);
		ir_op_set_int(ctx, r, "buffer", buf0 + k);
		if (ctrans[k])
			ir_op_set_int(ctx, r, "transposed", 1);
		if (cplain[k])
			ir_op_set_int(ctx, r, "plain", 1);
		if (cregs[k])
			ir_op_set_int(ctx, r, "regs", 1);
		r->res[0].id = -1;
		reads[k] = r;
		repl[k] = &r->res[0];
		/* the copies zero-filled what the mask leaves out: `other` there,
		 * where the load was (its mask and other are this iteration's) */
		if (cregs[k] && L->nops > 2 && !zero_other(L->ops[2])) {
			IrBuilder sb;
			ir_builder_init(&sb, ctx);
			ir_builder_before(&sb, L);
			sb.loc = L->loc;
			repl[k] = ir_select(&sb, L->ops[1], &r->res[0], L->ops[2]);
			repl[k]->id = -1;
		}
	}
	/* only now drop the loads: the builder inserts before the body's first
	 * op, which may be one of them */
	for (int k = 0; k < nc; k++) {
		if (reads[k])
			ir_replace_all_uses(f, &cand[k]->res[0], repl[k]);
		ir_op_unlink(cand[k]);
	}
	/* a vector's read goes down to its first user: its registers are not
	 * live across the dots before it (the slot is not written again
	 * before the next iteration's barrier); so does a tile read by
	 * mma.sync (fragments in registers: attention's V, 64 registers a
	 * thread at 32 x 128 with 4 warps, across the softmax), and a tile
	 * read back into registers (regs_ok) */
	for (int k = 0; k < nc; k++) {
		IrOp *rd = reads[k],
		     *u = rd && (rd->res[0].type->rank == 1 || cregs[k] || mma_sync_read(ctx, rd, o)) ? rd->next : NULL;
		while (u && !reads_value(u, &rd->res[0]) && !uses_inside(u, &rd->res[0]))
			u = u->next;
		if (u && u != rd->next) {
			ir_op_unlink(rd);
			ir_block_insert_before(body, u, rd);
		}
	}

	/* the loop with the shadow arguments and the slot carried */
	sh_init[nsh] = slot0;
	sh_next[nsh] = rnext;
	if (phases) {
		sh_init[nsh + 1] = slot0;
		sh_next[nsh + 1] = ph_next;
	}
	IrOp *nl = ir_for_add_carried(f, loop, nsh + (phases ? 2 : 1), sh_init, sh_next);
	/* warpgroup MMA runs asynchronously: issue the copies of tile k+D (and
	 * the address arithmetic of the iterations ahead) after the dots, so
	 * that they overlap the tensor cores. Their slot was read in the
	 * previous iteration, whose dots every warp finished before the barrier
	 * at the top; `ordered` tells barrier insertion so. */
	bool wgl = wgmma_loop(p.body, o);
	if (wgl || (late_copies_on() && !ntma && !ws && !p.ifs && mma_sync_loop(p.body, o))) {
		IrBlock *nb = nl->regions[0];
		IrOp *term = ir_block_terminator(nb);
		/* dots that only chain their accumulators may stay in flight across
		 * the back edge: before the copies, wait for all but the newest MMA
		 * group (the previous iteration's, which read the slot the copies
		 * overwrite) and a barrier so every warpgroup has. Measured on the
		 * H200 (tutorial 03's matmul): 1-6% faster with one warpgroup, 3-9%
		 * with two (once a loop that runs no iteration skips the wait after
		 * it: ptxas serialised the MMAs otherwise, C7515). Attention's form
		 * (last_dot_flies) keeps its P @ V in flight into the next Q @ K^T,
		 * as Triton does. */
		IrOp *wbar = NULL;
		int fly = !wgl                                                                  ? 0
			  : chained_accs(nb, p.ifs) && (o->num_warps == 4 || o->num_warps == 8) ? 1
			  : last_dot_flies(nb)                                                  ? 2
												: 0;
		if (fly && ws)
			ir_op_set_int(ctx, nl, "wgmma_inflight", fly);
		else if (fly) {
			IrBuilder bb;
			ir_builder_init(&bb, ctx);
			ir_builder_before(&bb, copies_first->next);
			bb.loc = loop->loc;
			IrOp *bar = ir_build(&bb, OP_BARRIER, 0, NULL, 0, NULL, 0);
			ir_op_set_int(ctx, bar, "wgmma_pending", 1);
			/* one slot more: the copies refill the slot of two
			 * iterations back, which the top barrier orders; the
			 * wait stays, without a barrier (lag_slots) */
			if (N > S)
				ir_op_set_int(ctx, bar, "wait_only", 1);
			ir_op_set_int(ctx, nl, "wgmma_inflight", fly);
			copies_first = bar->prev;
			wbar = bar;
			if (ntma == nc)
				tma_waits_down(f, nb, buf0, nc);
		}
		/* before a flattened nest's epilogue (an `if` after the dots): the
		 * next tile's first copies are in flight while it runs */
		IrOp *dest = term, *ld = NULL;
		for (IrOp *x = nb->first; x; x = x->next)
			if (x->opc == OP_DOT)
				ld = x;
		for (IrOp *x = ld && p.ifs ? ld->next : NULL; x && dest == term; x = x->next)
			if (x->opc == OP_IF)
				dest = x;
		IrOp *op = copies_first->next;
		for (bool done = false; !done && op && term;) {
			IrOp *nx = op->next;
			done = op == copies_last;
			if (op->opc == OP_ASYNC_COPY || op->opc == OP_TMA_COPY)
				ir_op_set_int(ctx, op, "ordered", 1);
			ir_op_unlink(op);
			ir_block_insert_before(nb, dest, op);
			op = nx;
		}
		if (wbar)
			hoist_above(wbar, dest);
		if (ws && fly == 2)
			ws_early_release(ctx, f, nb, buf0, nc, rslot, loop->ops[0]);
	}
	nl = drop_dead_carried(f, nl);
	/* after the loop: no copy (the zero-filling ones past the end) in flight */
	if (nl->next) {
		IrBuilder ab;
		ir_builder_init(&ab, ctx);
		ir_builder_before(&ab, nl->next);
		ab.loc = loop->loc;
		if (ntma < nc) {
			IrOp *wa = ir_build(&ab, OP_ASYNC_WAIT, 0, NULL, 0, NULL, 0);
			ir_op_set_int(ctx, wa, "pending", 0);
		}
		/* no tensor copy is in flight (each went to a tile that exists, and
		 * its iteration waited for it): once every thread is past its last
		 * wait, the mbarriers go */
		if (ntma) {
			ir_build(&ab, OP_BARRIER, 0, NULL, 0, NULL, 0);
			for (int k = 0; k < nc; k++)
				if (ctile[k])
					tma_op(ctx, &ab, OP_TMA_INVAL, 0, NULL, buf0 + k, S, ctile[k], ws);
		}
	}
	return true;
}

/* Loop-carried values that only feed their own next value (the pointers of
 * the loads the pipeline replaced: `ptrs += BLOCK` with nothing reading
 * ptrs) are dropped: they would cost registers and, worse, pin a layout on
 * their init that the copies of the same tiles then inherit. */
static bool in_chain(IrValue *const *set, int n, const IrValue *v)
{
	for (int k = 0; k < n; k++)
		if (set[k] == v)
			return true;
	return false;
}

/* The position at which op, an `if`, passes a member of set on: each use
 * of a member in op is an operand of its regions' yields, all at one
 * position k (a fused nest's tile switch: the tile's offsets, computed in
 * one branch, passed on in the other); -1 if none. */
static int if_passes(const IrOp *op, IrValue *const *set, int n)
{
	if (op->opc != OP_IF || op->nregions != 2)
		return -1;
	for (int i = 0; i < op->nops; i++) /* its condition */
		if (in_chain(set, n, op->ops[i]))
			return -1;
	int at = -1;
	for (int r = 0; r < 2; r++)
		for (const IrOp *o = op->regions[r]->first; o; o = o->next) {
			for (int i = 0; i < o->nops; i++) {
				if (!in_chain(set, n, o->ops[i]))
					continue;
				if (o->opc != OP_YIELD || (at >= 0 && at != i))
					return -1;
				at = i;
			}
			/* deeper uses are not followed */
			for (int q = 0; q < o->nregions; q++)
				for (const IrOp *x = o->regions[q]->first; x; x = x->next)
					for (int i = 0; i < x->nops; i++)
						if (in_chain(set, n, x->ops[i]))
							return -1;
		}
	return at >= 0 && at < op->nres ? at : -1;
}

/* Whether loop's carried value ci only feeds its own next value: through
 * pure ops of the body and `if`s passing it on (recorded in ifs, with the
 * position in ifk, *nif of them: their results go with it). */
static bool carried_chain_dead(IrFunc *f, IrOp *loop, int ci, IrOp **ifs, int *ifk, int *nif)
{
	IrBlock *body = loop->regions[0];
	IrOp *y = ir_block_terminator(body);
	*nif = 0;
	if (!y || ci >= y->nops || ir_count_uses(f, &loop->res[ci]) != 0)
		return false;
	IrValue *set[64];
	int n = 0;
	set[n++] = body->args[ci + 1];
	for (IrOp *op = body->first; op; op = op->next) {
		if (op->opc == OP_IF) {
			int k = if_passes(op, set, n);
			if (k >= 0 && n < 64 && *nif < 8) {
				ifs[*nif] = op;
				ifk[(*nif)++] = k;
				set[n++] = &op->res[k];
				continue;
			}
		}
		bool uses = false;
		for (int i = 0; i < op->nops; i++)
			for (int k = 0; k < n; k++)
				uses |= op->ops[i] == set[k];
		if (!uses)
			continue;
		if (op == y)
			continue;
		if (op->nregions || !(ir_opinfo(op->opc)->flags & IR_PURE) || op->nres != 1 || n == 64)
			return false;
		set[n++] = &op->res[0];
	}
	/* every member is used only by members, by the yields of the `if`s
	 * passing it on, or by the loop's yield at ci */
	for (int k = 0; k < n; k++) {
		int inside = 0;
		for (IrOp *op = body->first; op; op = op->next) {
			for (int q = 0; q < *nif; q++)
				for (int r = 0; op == ifs[q] && r < 2; r++) {
					IrOp *iy = ir_block_terminator(op->regions[r]);
					inside += iy && ifk[q] < iy->nops && iy->ops[ifk[q]] == set[k];
				}
			for (int i = 0; i < op->nops; i++) {
				if (op->ops[i] != set[k])
					continue;
				bool ok = op == y && i == ci;
				for (int m = 1; !ok && op != y && m < n; m++)
					ok = op->nres == 1 && &op->res[0] == set[m];
				if (!ok)
					return false;
				inside++;
			}
		}
		if (inside != ir_count_uses(f, set[k]))
			return false;
	}
	return in_chain(set, n, y->ops[ci]);
}

static IrOp *drop_dead_carried(IrFunc *f, IrOp *loop)
{
	for (int ci = loop->nres - 1; ci >= 0; ci--) {
		IrOp *ifs[8];
		int ifk[8], nif = 0;
		if (!carried_chain_dead(f, loop, ci, ifs, ifk, &nif))
			continue;
		loop = ir_for_drop_carried(f, loop, ci);
		for (int q = 0; q < nif; q++)
			ir_if_drop_result(f, ifs[q], ifk[q]); /* its regions' dead ops go in ir_dce */
		/* the chain is dead now */
		IrBlock *body = loop->regions[0];
		for (bool again = true; again;) {
			again = false;
			for (IrOp *op = body->last, *prev; op; op = prev) {
				prev = op->prev;
				if (!(ir_opinfo(op->opc)->flags & IR_PURE) || op->nregions || op->nres != 1 ||
				    ir_count_uses(f, &op->res[0]) != 0)
					continue;
				ir_op_unlink(op);
				again = true;
			}
		}
	}
	return loop;
}

/* Registers a thread holds for a loaded tile: its elements, packed four
 * bytes to a register where axis info lets the load move vectors, one a
 * register otherwise (a byte tile with an unaligned leading dim); *addr:
 * the 64-bit addresses of its loads, one a vector (held across the loop
 * wherever the tile loads, prefetched or not). */
static int64_t tile_regs(const AnAxis *ax, const IrOp *L, int threads, int64_t *addr)
{
	const IrType *t = L->res[0].type;
	int64_t e = t->numel / threads, es = ir_type_bits(ir_scalar(t)) / 8;
	int vec = 1;
	for (int d = 0; d < t->rank; d++) {
		int v = an_access_vec(ax, L->ops[0], L->nops > 1 ? L->ops[1] : NULL, d, false);
		vec = v > vec ? v : vec;
	}
	if (e < 1)
		e = 1;
	*addr = 2 * ((e + vec - 1) / vec);
	return vec * es >= 4 ? (e * es + 3) / 4 : e;
}

/* The register prefetch holds two copies of its tiles (this iteration's
 * and the next one's) beside the accumulators and every tile's addresses:
 * tiles are left to load in their iteration, largest first, until that
 * fits 192 registers (seed 53 of tests/fuzz/fuzz_dot.py: fp8 tiles of
 * 128x128 and 128x64 over an unaligned stride, a byte a register, spilled
 * 1.2 KB prefetched; seed 178: int8 tiles of 64x64 and 64x128, 48 byte
 * loads a thread, 96 registers of addresses, spilled 124 bytes with
 * both prefetched). */
static int fit_register_budget(IrFunc *f, IrBlock *body, IrOp **cand, int nc, const AnGpuOptions *o)
{
	int threads = o->num_warps * o->warp_size;
	if (threads < 1)
		return nc;
	int64_t acc = 0;
	for (IrOp *op = body->first; op; op = op->next)
		if (op->opc == OP_DOT && ir_is_block(op->res[0].type))
			acc += op->res[0].type->numel * (ir_type_bits(ir_scalar(op->res[0].type)) / 8) / 4 / threads;
	AnAxis *ax = an_axis_info(f);
	int64_t regs[8], total = acc, addr;
	for (int k = 0; k < nc; k++) {
		total += 2 * (regs[k] = tile_regs(ax, cand[k], threads, &addr));
		total += addr;
	}
	while (nc > 0 && total > 192) {
		int big = 0;
		for (int k = 1; k < nc; k++)
			big = regs[k] > regs[big] ? k : big;
		total -= 2 * regs[big];
		cand[big] = cand[nc - 1];
		regs[big] = regs[nc - 1];
		nc--;
	}
	return nc;
}

static bool pipeline_loop(IrCtx *ctx, IrFunc *f, IrOp *loop, const AnGpuOptions *o)
{
	IrBlock *body = loop->regions[0];
	IrOp *y = ir_block_terminator(body);
	if (!y || y->opc != OP_YIELD || loop->nops < 3 || body->nargs != loop->nops - 2 ||
	    y->nops != body->nargs - 1 || ir_is_block(loop->ops[0]->type))
		return false;
	PCtx p;
	memset(&p, 0, sizeof p);
	p.ctx = ctx;
	p.f = f;
	p.loop = loop;
	p.body = body;
	p.yield = y;
	p.n = an_number_values(f);
	p.state = ir_alloc(ctx, (size_t)p.n + 1);
	memset(p.state, 0, (size_t)p.n + 1);

	IrOp *cand[8];
	int nc = 0;
	for (IrOp *op = body->first; op && nc < 8; op = op->next) {
		if (op->opc != OP_LOAD || op->nres != 1 || !ir_is_block(op->res[0].type))
			continue;
		if (ir_count_uses(f, &op->res[0]) != 1 || !dot_user(body, &op->res[0]))
			continue;
		bool ok = true;
		for (int i = 0; ok && i < op->nops && i < 3; i++) /* the loads made anew drop the tail */
			ok = slice_ok(&p, op->ops[i]);
		if (ok)
			cand[nc++] = op;
	}
	nc = nc ? fit_register_budget(f, body, cand, nc, o) : 0;
	if (!nc)
		return false;
	p.n = an_number_values(f); /* axis info numbered them again */

	size_t msz = sizeof(IrValue *) * ((size_t)p.n + 1);
	p.pro_map = ir_alloc(ctx, msz);
	p.hoist_map = ir_alloc(ctx, msz);
	p.next_map = ir_alloc(ctx, msz);
	memset(p.pro_map, 0, msz);
	memset(p.hoist_map, 0, msz);
	memset(p.next_map, 0, msz);
	ir_builder_init(&p.pre, ctx);
	ir_builder_before(&p.pre, loop);
	p.pre.loc = loop->loc;
	IrOp *orig_first = body->first;
	ir_builder_init(&p.top, ctx);
	ir_builder_before(&p.top, orig_first);
	p.top.loc = loop->loc;
	IrValue *ivs[2] = {body->args[0], loop->ops[2]};
	p.iv_next = ir_build1(&p.top, OP_ADD, body->args[0]->type, 2, ivs);
	p.iv_next->id = -1;

	IrValue *inits[8], *nexts[8], *args[8];
	for (int k = 0; k < nc; k++) {
		IrOp *L = cand[k];
		IrValue *ptr = L->ops[0], *mask = L->nops > 1 ? L->ops[1] : NULL,
			*other = L->nops > 2 ? L->ops[2] : NULL;
		/* first iteration, before the loop */
		IrValue *pp = pro(&p, ptr), *pm = mask ? pro(&p, mask) : NULL,
			*po = other ? pro(&p, other) : NULL;
		pm = guarded_mask(&p, &p.pre, pm, pp, loop->ops[0]);
		inits[k] = new_load(&p, &p.pre, L, pp, pm, po);
		/* next iteration, at the top of the body */
		IrValue *np = next(&p, ptr), *nm = mask ? next(&p, mask) : NULL,
			*no = other ? next(&p, other) : NULL;
		nm = guarded_mask(&p, &p.top, nm, np, p.iv_next);
		nexts[k] = new_load(&p, &p.top, L, np, nm, no);
	}
	for (int k = 0; k < nc; k++) {
		IrOp *L = cand[k];
		args[k] = ir_block_add_arg(ctx, body, L->res[0].type);
		args[k]->id = -1;
		ir_replace_all_uses(f, &L->res[0], args[k]);
		ir_op_unlink(L);
	}
	ir_for_add_carried(f, loop, nc, inits, nexts);
	return true;
}

/* ------------------------------------------------------------------------- */
/* Tiles loaded once before pipelined loops (cp.async, one slot)            */
/* ------------------------------------------------------------------------- */

/* Attention's q (and the backward pass's k, v, q and do) is loaded once
 * before the loop and read by a warpgroup MMA in every iteration. Loaded
 * into registers and then stored into its staging buffer, it keeps the
 * loop's first copies from starting until it has arrived (each thread
 * stores its part, then a barrier): two global latencies before the first
 * MMA. Copied with cp.async straight into a one-slot buffer instead, it is
 * in flight together with the loop's first tiles, and the MMAs read the
 * slot (a local_read in the body).
 *
 * The same for a tile read by mma.sync whose fragments would hold 32 or
 * more registers a thread (big_fragments): read by ldmatrix from the slot
 * in every iteration instead of held in registers across the loop.
 *
 * Safe where every use is operand A (or every use B) of such an MMA at
 * the top level of the body of a later loop of the same block whose
 * cp.async wait and barrier come before that use: the copy commits its own
 * group where the load was, older than any group of those loops'
 * prologues, so each loop's first wait covers it (groups complete in
 * order). CTRITON_ASYNC_INVARIANTS=0 keeps the loads (part of the key). */

/* Whether a cp.async wait and then a barrier come before op `use` at the top
 * level of body. */
static bool waited_before(const IrBlock *body, const IrOp *use)
{
	bool wait = false;
	for (const IrOp *op = body->first; op && op != use; op = op->next) {
		if (op->opc == OP_ASYNC_WAIT)
			wait = true;
		else if (op->opc == OP_BARRIER && wait && !ir_op_int(op, "wait_only", 0))
			return true;
	}
	return false;
}

/* Whether dot d's operand A (a) or B, read by mma.sync (layout l) from
 * registers, would hold 32 or more registers a thread: the warps that
 * split the other dimension each hold a copy (a 32 x 128 q with 4 warps
 * along N: 64). Held across the loop they spill; read from the slot in
 * every iteration (ldmatrix), as Triton reads its operands, they do not.
 * From 32 (64 before): an attention forward of 32 x 64 tiles with head 64
 * on sm_90 (q: 32 registers) went from 161 registers to 96, Triton 80. */
static bool big_fragments(const IrOp *d, const IrLayout *l, bool a)
{
	const IrType *t = d->ops[a ? 0 : 1]->type;
	int64_t es = ir_type_bits(ir_scalar(t)) / 8, M = t->shape[0], C = t->shape[1];
	int64_t per = a ? M / l->warps_per_cta[0] * C : M * (C / l->warps_per_cta[1]);
	return l->version_major == 2 && per * es / 4 / 32 >= 32;
}

/* The loops after L in its block whose bodies hold every use of L's tile,
 * each as operand A (a) or each as operand B of a warpgroup MMA after the
 * body's wait (waited_before). *a says which operand; 0 loops: not so. */
static int invariant_loops(IrCtx *ctx, IrFunc *f, IrOp *L, const AnGpuOptions *o, IrOp **loops, int max, bool *a)
{
	IrValue *v = &L->res[0];
	int n = ir_count_uses(f, v), seen = 0, nl = 0, sa = 0, sb = 0;
	for (IrOp *op = L->next; op && seen < n; op = op->next) {
		if (op->opc != OP_FOR || op->nregions != 1)
			continue;
		int here = 0;
		for (IrOp *d = op->regions[0]->first; d; d = d->next) {
			int u = 0;
			for (int i = 0; i < d->nops; i++)
				u += d->ops[i] == v;
			if (!u)
				continue;
			const IrLayout *l = d->opc == OP_DOT ? an_dot_mma_layout(ctx, d, o) : NULL;
			if (u != 1 || !l || (l->version_major != 3 && !big_fragments(d, l, d->ops[0] == v)) ||
			    d->ops[2] == v || !waited_before(op->regions[0], d))
				return 0;
			sa += d->ops[0] == v;
			sb += d->ops[1] == v;
			here++;
		}
		if (here && nl == max)
			return 0;
		if (here)
			loops[nl++] = op;
		seen += here;
	}
	if (seen != n || (sa && sb))
		return 0;
	*a = sa > 0;
	return nl;
}

/* A builder placed before op `before` and the slot index 0 made there. */
static IrValue *slot0_before(IrCtx *ctx, IrBuilder *b, IrOp *before, IrLoc loc)
{
	ir_builder_init(b, ctx);
	ir_builder_before(b, before);
	b->loc = loc;
	IrValue *s = ir_const_int(b, ir_type(ctx, TY_I32), 0);
	s->id = -1;
	return s;
}

/* A pointer load (no tensor-map tail) of a 2-D tile of at least 16 x 16. */
static bool tile_load(const IrOp *op)
{
	const IrType *t = op->nres == 1 ? op->res[0].type : NULL;
	return op->opc == OP_LOAD && op->nops <= 3 && ir_is_block(t) && t->rank == 2 && t->shape[0] >= 16 &&
	       t->shape[1] >= 16 && !ir_op_int(op, "tma", 0) && !ir_find_attr(op->nattrs, op->attrs, "volatile");
}

static void async_invariants(IrCtx *ctx, IrFunc *f, IrBlock *b, const AnGpuOptions *o, const AnAxis *ax, int *nbuf)
{
	for (IrOp *op = b->first; op;) {
		IrOp *next = op->next;
		for (int r = 0; r < op->nregions; r++)
			async_invariants(ctx, f, op->regions[r], o, ax, nbuf);
		IrOp *loops[8];
		bool isa = false, trans = false;
		int nl = tile_load(op) ? invariant_loops(ctx, f, op, o, loops, 8, &isa) : 0;
		if (!nl || !slot_ok_a(op, o, ax, !isa, isa, false, &trans)) {
			op = next;
			continue;
		}
		/* the copy and its own group where the load was */
		IrBuilder pb;
		IrValue *ops[3] = {op->ops[0], slot0_before(ctx, &pb, op, op->loc), op->nops > 1 ? op->ops[1] : NULL};
		IrOp *c = ir_build(&pb, OP_ASYNC_COPY, ops[2] ? 3 : 2, ops, 0, NULL, 0);
		int buf = (*nbuf)++;
		ir_op_set_int(ctx, c, "buffer", buf);
		if (trans)
			ir_op_set_int(ctx, c, "transposed", 1);
		ir_op_set_int(ctx, c, "stages", 1);
		ir_build(&pb, OP_ASYNC_COMMIT, 0, NULL, 0, NULL, 0);
		/* in each loop, a read of the slot before the first MMA reading it */
		for (int k = 0; k < nl; k++) {
			IrBlock *body = loops[k]->regions[0];
			IrOp *first = body->first;
			while (first && !reads_value(first, &op->res[0]))
				first = first->next;
			IrBuilder bb;
			IrValue *s = slot0_before(ctx, &bb, first, op->loc);
			IrOp *rd = ir_build(&bb, OP_LOCAL_READ, 1, &s, 1, &op->res[0].type, 0);
			ir_op_set_int(ctx, rd, "buffer", buf);
			if (trans)
				ir_op_set_int(ctx, rd, "transposed", 1);
			rd->res[0].id = -1;
			for (IrOp *d = first; d; d = d->next)
				for (int i = 0; i < d->nops; i++)
					if (d->ops[i] == &op->res[0])
						d->ops[i] = &rd->res[0];
		}
		ir_op_unlink(op);
		op = next;
	}
}

static bool async_invariants_on(void)
{
	const char *e = getenv("CTRITON_ASYNC_INVARIANTS");
	return !(e && e[0] == '0');
}

static void walk(IrCtx *ctx, IrFunc *f, IrBlock *b, const AnGpuOptions *o, int S, int *nbuf)
{
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			walk(ctx, f, op->regions[r], o, S, nbuf);
		if (op->opc == OP_FOR && op->nregions == 1) {
			IrOp *prev = op->prev;
			IrBlock *parent = op->parent;
			int left = 0;
			/* tl.range(..., num_stages=N) overrides the kernel's for its
			 * loop (N = 1: not pipelined), as in Triton */
			int64_t Sl = ir_op_int(op, "num_stages", S);
			int s = Sl < 1 ? 1 : Sl > 8 ? 8 : (int)Sl;
			bool as = s >= 2 && async_loop(ctx, f, op, o, s, nbuf, &left);
			if (as || (s >= 2 && pipeline_loop(ctx, f, op, o))) {
				op = prev ? prev->next : parent->first; /* the new loop; its body is done */
				while (op && op->opc != OP_FOR)
					op = op->next;
				/* the tiles the slots did not take: one iteration ahead
				 * through registers */
				IrOp *before = op ? op->prev : NULL;
				if (as && left && op && pipeline_loop(ctx, f, op, o))
					op = before ? before->next : parent->first;
			}
			while (op && op->opc != OP_FOR)
				op = op->next;
			if (!op)
				return;
		}
	}
}

void an_prefetch_dot_loads(IrFunc *f, const AnGpuOptions *o, int num_stages)
{
	if (o->arch < 80)
		return;
	int nbuf = 0;
	walk(f->module->ctx, f, f->body, o, num_stages, &nbuf);
	if (nbuf && o->arch >= 80 && async_invariants_on())
		async_invariants(f->module->ctx, f, f->body, o, an_axis_info(f), &nbuf);
}
