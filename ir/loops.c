/* loops.c: the loop transformations tl.range asks for.
 *
 * ir_unroll_loops unrolls each `for` with {loop_unroll_factor = U}, U > 1, as
 * Triton's TTIR pipeline does: a main loop whose body holds U copies of the
 * original body (copy k sees iv + k * step and the values copy k - 1
 * yielded) runs the first tc - tc % U of the tc iterations with step U *
 * step; the original loop, from where the main loop stopped, runs the rest
 * ({num_stages = 1}: it is not worth pipelining). Constant bounds are folded:
 * no remainder loop when U divides the trip count, no main loop when the
 * count is below U. Loops are unrolled innermost first, so a copied body
 * holds inner loops already unrolled.
 *
 * ir_flatten_loops fuses a `for` with {flatten = true} whose body holds one
 * inner `for` (and no other loop) into one loop over all the inner
 * iterations, as Triton's fuse-nested-loops does. Every outer iteration
 * counts max(inner trip count, 1) fused iterations, so the code around the
 * inner loop (prologue before it, epilogue after it) still runs once per
 * outer iteration, under an `if` on the first / last of them; the inner body
 * runs under an `if` unless its trip count is a known positive constant. The
 * fused loop carries the position within the outer iteration, the outer
 * induction value, the inner one, the outer and inner loop-carried values,
 * and the prologue's values that later code uses. The total is computed
 * before the loop: the product of the two trip counts when the inner bounds
 * do not depend on the outer iteration, else the sum over a loop of its own
 * that recomputes them (which needs them to be pure functions of the outer
 * induction value and loop invariants; a nest that does not qualify is
 * left as it is).
 *
 * A nest whose inner loop holds a dot is fused when dot_nests (the
 * pipeline's default; on CUDA only for dots dot_ok takes, those on
 * warpgroup MMA) and in the form the
 * pipeliner takes across outer iterations (analysis/prefetch.c): inner
 * bounds computed from invariants (moved before the loop), a pure
 * prologue, pointer or descriptor loads and stores (warp
 * specialization keeps the nest), inner carried values that start from
 * constants (accumulators); `if (inner trip count > 0)` the fused
 * loop, with no `if` around the inner body, else the nest as it is.
 * Through the prologue's `if` go its scalars and vectors (a tile's
 * offsets, carried from a poison start); its larger blocks and constants
 * are made again in the body from them, constant inner initial values (a zero
 * accumulator) come from select(first, init, carried), and the next outer
 * induction value is a select, so that the values the copies ahead need
 * are loop arguments and pure ops (and that one `if`). The epilogue's `if`
 * yields the inner values unchanged (the backend waits for an MMA in
 * flight in the region that reads it).
 *
 * Trip counts: ub > lb ? (ub - lb - 1) / step + 1 : 0, for the positive
 * steps loops have (the backends count a loop up while iv < ub).
 */
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* ------------------------------------------------------------------------- */
/* Cloning with a value map                                                  */
/* ------------------------------------------------------------------------- */

/* Open addressing from IrValue* to IrValue*. */
typedef struct VMap {
	IrValue **key, **val;
	int cap, n;
} VMap;

static size_t vhash(const IrValue *v, int cap)
{
	return ((uintptr_t)v >> 4) * 2654435761u & (size_t)(cap - 1);
}

static void vmap_put(VMap *m, IrValue *k, IrValue *v);

static void vmap_grow(VMap *m)
{
	VMap old = *m;
	m->cap = old.cap ? 2 * old.cap : 64;
	m->n = 0;
	m->key = calloc((size_t)m->cap, sizeof *m->key);
	m->val = calloc((size_t)m->cap, sizeof *m->val);
	if (!m->key || !m->val)
		abort();
	for (int i = 0; i < old.cap; i++)
		if (old.key[i])
			vmap_put(m, old.key[i], old.val[i]);
	free(old.key);
	free(old.val);
}

static void vmap_put(VMap *m, IrValue *k, IrValue *v)
{
	if (2 * (m->n + 1) > m->cap)
		vmap_grow(m);
	size_t i = vhash(k, m->cap);
	while (m->key[i] && m->key[i] != k)
		i = (i + 1) & (size_t)(m->cap - 1);
	if (!m->key[i])
		m->n++;
	m->key[i] = k;
	m->val[i] = v;
}

/* What v maps to, v itself when unmapped. */
static IrValue *vmap_get(const VMap *m, IrValue *v)
{
	if (!m->cap || !v)
		return v;
	size_t i = vhash(v, m->cap);
	while (m->key[i]) {
		if (m->key[i] == v)
			return m->val[i];
		i = (i + 1) & (size_t)(m->cap - 1);
	}
	return v;
}

static void vmap_free(VMap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof *m);
}

static IrAttr *copy_attrs(IrCtx *ctx, int n, const IrAttr *a)
{
	IrAttr *c = ir_alloc(ctx, sizeof *c * (size_t)(n ? n : 1));
	if (n)
		memcpy(c, a, sizeof *c * (size_t)n);
	return c;
}

/* A copy of op (not linked), its operands through m, regions copied
 * deeply; its results and block arguments are added to m. */
static IrOp *clone_op(IrCtx *ctx, const IrOp *op, VMap *m)
{
	IrValue **ops = ir_alloc(ctx, sizeof *ops * (size_t)(op->nops ? op->nops : 1));
	const IrType **tys = ir_alloc(ctx, sizeof *tys * (size_t)(op->nres ? op->nres : 1));
	for (int i = 0; i < op->nops; i++)
		ops[i] = vmap_get(m, op->ops[i]);
	for (int i = 0; i < op->nres; i++)
		tys[i] = op->res[i].type;
	IrOp *c = ir_op_new(ctx, op->opc, op->nops, ops, op->nres, tys, op->nregions, op->loc);
	c->nattrs = op->nattrs;
	c->attrs = copy_attrs(ctx, op->nattrs, op->attrs);
	for (int i = 0; i < op->nres; i++)
		vmap_put(m, &op->res[i], &c->res[i]);
	for (int r = 0; r < op->nregions; r++) {
		const IrBlock *from = op->regions[r];
		IrBlock *to = c->regions[r];
		for (int i = 0; i < from->nargs; i++)
			vmap_put(m, from->args[i], ir_block_add_arg(ctx, to, from->args[i]->type));
		for (const IrOp *o = from->first; o; o = o->next)
			ir_block_append(to, clone_op(ctx, o, m));
	}
	return c;
}

/* Copies the ops of blk but its terminator to the builder's point; returns
 * the terminator. */
static IrOp *clone_body(IrBuilder *b, const IrBlock *blk, VMap *m)
{
	const IrOp *term = ir_block_terminator(blk);
	for (const IrOp *o = blk->first; o && o != term; o = o->next)
		ir_block_insert_before(b->block, b->before, clone_op(b->ctx, o, m));
	return (IrOp *)term;
}

/* ------------------------------------------------------------------------- */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------- */

static bool const_int(const IrValue *v, int64_t *out)
{
	if (!v || !v->def || v->def->opc != OP_CONSTANT || ir_is_block(v->type))
		return false;
	const IrAttr *a = ir_op_attr(v->def, "value");
	if (!a || (a->kind != ATTR_INT && a->kind != ATTR_BOOL))
		return false;
	*out = a->i;
	return true;
}

/* The trip count of a loop from lb to ub by step (> 0), as a value of
 * their type, before the builder's point. */
static IrValue *trip_count(IrBuilder *b, IrValue *lb, IrValue *ub, IrValue *step)
{
	const IrType *t = lb->type;
	IrValue *d = ir_binary(b, OP_SUB, ub, lb);
	IrValue *q = ir_binary(b, OP_DIV, ir_binary(b, OP_SUB, d, ir_const_int(b, t, 1)), step);
	IrValue *n = ir_binary(b, OP_ADD, q, ir_const_int(b, t, 1));
	return ir_select(b, ir_cmp(b, "gt", ub, lb), n, ir_const_int(b, t, 0));
}

/* The trip count of constant bounds (in int64: loops count in i32 or
 * i64), or -1 when they are not all constants or the step is not
 * positive. */
static int64_t const_trip_count(const IrOp *loop)
{
	int64_t lb, ub, st;
	if (!const_int(loop->ops[0], &lb) || !const_int(loop->ops[1], &ub) || !const_int(loop->ops[2], &st) ||
	    st <= 0 || !ir_is_signed(loop->ops[0]->type))
		return -1;
	return ub > lb ? (int64_t)(((uint64_t)ub - (uint64_t)lb - 1) / (uint64_t)st) + 1 : 0;
}

/* The attributes of loop without name (and with num_stages = stages when
 * stages > 0), into op. */
static void copy_loop_attrs(IrCtx *ctx, IrOp *op, const IrOp *loop, const char *name, int stages)
{
	int n = loop->nattrs;
	IrAttr *a = copy_attrs(ctx, n, loop->attrs); /* op may be loop */
	op->nattrs = 0;
	op->attrs = a;
	for (int i = 0; i < n; i++)
		if (strcmp(a[i].name, name))
			op->attrs[op->nattrs++] = a[i];
	if (stages > 0)
		ir_op_set_int(ctx, op, "num_stages", stages);
}

static void collect_loops(IrBlock *b, const char *attr, IrOp ***out, int *n, int *cap)
{
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			collect_loops(op->regions[r], attr, out, n, cap);
		if (op->opc == OP_FOR && ir_op_attr(op, attr)) {
			if (*n == *cap) {
				*cap = *cap ? 2 * *cap : 8;
				*out = realloc(*out, sizeof **out * (size_t)*cap);
				if (!*out)
					abort();
			}
			(*out)[(*n)++] = op;
		}
	}
}

/* ------------------------------------------------------------------------- */
/* Unrolling                                                                 */
/* ------------------------------------------------------------------------- */

static void unroll(IrFunc *f, IrOp *loop, int64_t U)
{
	IrCtx *ctx = f->module->ctx;
	IrBlock *body = loop->regions[0];
	IrValue *lb = loop->ops[0], *ub = loop->ops[1], *step = loop->ops[2];
	const IrType *t = lb->type;
	int nc = loop->nops - 3;
	int64_t st = 0, tc = const_trip_count(loop);
	bool cstep = const_int(step, &st);
	if (cstep && st <= 0)
		return; /* a loop counting down (or not at all) is left as it is */
	if (tc >= 0 && tc < U) {
		copy_loop_attrs(ctx, loop, loop, "loop_unroll_factor", 0);
		return;
	}
	IrBuilder b;
	ir_builder_init(&b, ctx);
	ir_builder_before(&b, loop);
	b.loc = loop->loc;
	/* where the main loop stops, and its step */
	IrValue *main_ub, *big;
	if (tc >= 0) {
		int64_t lbv;
		const_int(lb, &lbv);
		main_ub = ir_const_int(&b, t, lbv + (tc - tc % U) * st);
		big = ir_const_int(&b, t, st * U);
	} else {
		IrValue *n = trip_count(&b, lb, ub, step);
		IrValue *main_n = ir_binary(&b, OP_SUB, n, ir_binary(&b, OP_REM, n, ir_const_int(&b, t, U)));
		main_ub = ir_binary(&b, OP_ADD, lb, ir_binary(&b, OP_MUL, main_n, step));
		big = ir_binary(&b, OP_MUL, step, ir_const_int(&b, t, U));
	}
	/* iv + k * step for the copies k > 0, computed once before the loop */
	IrValue **offs = ir_alloc(ctx, sizeof *offs * (size_t)U);
	for (int64_t k = 1; k < U; k++)
		offs[k] = cstep ? ir_const_int(&b, t, k * st) : ir_binary(&b, OP_MUL, step, ir_const_int(&b, t, k));

	IrValue **ops = ir_alloc(ctx, sizeof *ops * (size_t)loop->nops);
	const IrType **tys = ir_alloc(ctx, sizeof *tys * (size_t)(nc ? nc : 1));
	memcpy(ops, loop->ops, sizeof *ops * (size_t)loop->nops);
	ops[1] = main_ub;
	ops[2] = big;
	for (int i = 0; i < nc; i++)
		tys[i] = loop->res[i].type;
	IrOp *main = ir_op_new(ctx, OP_FOR, loop->nops, ops, nc, tys, 1, loop->loc);
	copy_loop_attrs(ctx, main, loop, "loop_unroll_factor", 0);
	IrBlock *mb = main->regions[0];
	IrValue *iv = ir_block_add_arg(ctx, mb, t);
	IrValue **cur = ir_alloc(ctx, sizeof *cur * (size_t)(nc ? nc : 1));
	for (int i = 0; i < nc; i++)
		cur[i] = ir_block_add_arg(ctx, mb, body->args[1 + i]->type);
	ir_block_insert_before(loop->parent, loop, main);

	IrBuilder in;
	ir_builder_init(&in, ctx);
	ir_builder_at_end(&in, mb);
	in.loc = loop->loc;
	const IrOp *y = NULL;
	for (int64_t k = 0; k < U; k++) {
		VMap m = {0};
		vmap_put(&m, body->args[0], k ? ir_binary(&in, OP_ADD, iv, offs[k]) : iv);
		for (int i = 0; i < nc; i++)
			vmap_put(&m, body->args[1 + i], cur[i]);
		y = clone_body(&in, body, &m);
		for (int i = 0; i < nc; i++)
			cur[i] = vmap_get(&m, y->ops[i]);
		vmap_free(&m);
	}
	in.loc = y->loc;
	ir_yield(&in, nc, cur);

	if (tc >= 0 && tc % U == 0) { /* no remainder */
		for (int i = 0; i < nc; i++)
			ir_replace_all_uses(f, &loop->res[i], &main->res[i]);
		ir_op_unlink(loop);
		return;
	}
	/* the remainder: the original loop from main_ub, from the main loop's values */
	ir_op_set_operand(loop, 0, main_ub);
	for (int i = 0; i < nc; i++)
		ir_op_set_operand(loop, 3 + i, &main->res[i]);
	copy_loop_attrs(ctx, loop, loop, "loop_unroll_factor", 1);
}

IrError *ir_unroll_loops(IrModule *m)
{
	for (int fi = 0; fi < m->nfuncs; fi++) {
		IrFunc *f = m->funcs[fi];
		IrOp **loops = NULL;
		int n = 0, cap = 0;
		collect_loops(f->body, "loop_unroll_factor", &loops, &n, &cap);
		for (int i = 0; i < n; i++) { /* innermost first */
			int64_t u = ir_op_int(loops[i], "loop_unroll_factor", 1);
			if (u > 1 && u <= 1024)
				unroll(f, loops[i], u);
			else if (u > 1024)
				return ir_error(m->ctx, IR_ERR_VALUE, loops[i]->loc,
						"loop_unroll_factor must be at most 1024, got %lld", (long long)u);
		}
		free(loops);
	}
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* Flattening                                                                */
/* ------------------------------------------------------------------------- */

/* Whether v is defined inside op (in one of its regions, at any depth). */
static bool defined_in(const IrValue *v, const IrOp *op)
{
	const IrBlock *b = v->def ? v->def->parent : v->owner;
	while (b) {
		if (b->parent_op == op)
			return true;
		b = b->parent_op ? b->parent_op->parent : NULL;
	}
	return false;
}

/* A zero of type t (a null pointer for pointers), before the builder's point. */
static IrValue *zero_of(IrBuilder *b, const IrType *t)
{
	const IrType *s = ir_scalar(t);
	if (s->kind == TY_PTR) {
		IrValue *z = ir_cast(b, OP_INT_TO_PTR, ir_const_int(b, ir_type(b->ctx, TY_I64), 0), s);
		return ir_is_block(t) ? ir_splat(b, z, t) : z;
	}
	return ir_const_int(b, t, 0);
}

/* An `if` on cond with results of types tys, at the builder's point; its
 * two regions are filled by the caller. */
static IrOp *new_if(IrBuilder *b, IrValue *cond, int n, IrValue *const *like)
{
	const IrType **tys = ir_alloc(b->ctx, sizeof *tys * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++)
		tys[i] = like[i]->type;
	return ir_build(b, OP_IF, 1, &cond, n, tys, 2);
}

typedef struct Nest {
	IrCtx *ctx;
	IrOp *inner;
	IrBlock *ob; /* the outer body */
	/* the prologue's values that the inner loop, the epilogue or the
	 * outer yield use */
	IrValue **pv;
	int np, capp;
} Nest;

static bool in_prologue(const Nest *n, const IrValue *v)
{
	if (!v->def || v->def->parent != n->ob)
		return false;
	for (const IrOp *o = n->ob->first; o && o != n->inner; o = o->next)
		if (o == v->def)
			return true;
	return false;
}

static void note_value(Nest *n, IrValue *v)
{
	if (!in_prologue(n, v))
		return;
	for (int k = 0; k < n->np; k++)
		if (n->pv[k] == v)
			return;
	if (n->np == n->capp) {
		n->capp = n->capp ? 2 * n->capp : 8;
		IrValue **p = ir_alloc(n->ctx, sizeof *p * (size_t)n->capp);
		if (n->np)
			memcpy(p, n->pv, sizeof *p * (size_t)n->np);
		n->pv = p;
	}
	n->pv[n->np++] = v;
}

static void note_use(IrOp *op, void *user)
{
	for (int i = 0; i < op->nops; i++)
		note_value(user, op->ops[i]);
}

/* Whether a block has at most one dim longer than 1 (an index vector,
 * a few registers per thread). */
static bool vector_block(const IrType *t)
{
	int n = 0;
	for (int d = 0; d < t->rank; d++)
		n += t->shape[d] > 1;
	return n <= 1;
}

/* Whether every use of v in blk (at any depth) is the base of an address
 * stepped by a scalar: addptr(v, splat(s)), what ir_hoist_addresses makes. */
static bool stepped_base_only(const IrBlock *blk, const IrValue *v)
{
	for (const IrOp *o = blk->first; o; o = o->next) {
		for (int i = 0; i < o->nops; i++)
			if (o->ops[i] == v && !(o->opc == OP_ADDPTR && i == 0 && o->ops[1]->def &&
						o->ops[1]->def->opc == OP_SPLAT))
				return false;
		for (int r = 0; r < o->nregions; r++)
			if (!stepped_base_only(o->regions[r], v))
				return false;
	}
	return true;
}

static bool uses_in(const IrBlock *blk, const IrOp *from, const IrValue *v)
{
	for (const IrOp *o = from ? from : blk->first; o; o = o->next) {
		for (int i = 0; i < o->nops; i++)
			if (o->ops[i] == v)
				return true;
		for (int r = 0; r < o->nregions; r++)
			if (uses_in(o->regions[r], NULL, v))
				return true;
	}
	return false;
}

/* Whether the epilogue (or the outer yield) reads v. */
static bool used_after(const Nest *n, const IrValue *v)
{
	return uses_in(n->ob, n->inner->next, v);
}

/* With a dot, the prologue's vectors (a tile's row and column offsets)
 * are carried through the tile switch's `if`: computed once per tile, not
 * on every K step. Its larger blocks are computed again in the fused body
 * from what it carries (their registers would be live across the loop),
 * and so are its constants (cheaper made again than carried), but for the
 * tiles' base pointers that the inner loop only steps by a scalar: the
 * copies read one pointer per vector of them, which LLVM keeps alone (12
 * 64-bit pointers per thread at 128x256x64 on 8 warps). Marks those
 * in remat (by IrOp.id, prologue order), and keeps in pv the carried
 * values, with the scalars the marked ops read. */
static void split_prologue(Nest *n, bool *remat)
{
	int nops = 0;
	for (IrOp *o = n->ob->first; o != n->inner; o = o->next)
		o->id = nops++;
	/* backwards: an op is made again if a later one made again, or a
	 * block the fused body reads, needs it */
	bool *want = calloc((size_t)nops + 1, sizeof *want);
	if (!want)
		abort();
	for (int k = 0; k < n->np; k++)
		if ((ir_is_block(n->pv[k]->type) && !vector_block(n->pv[k]->type) &&
		     !(ir_is_ptr(ir_scalar(n->pv[k]->type)) && stepped_base_only(n->inner->regions[0], n->pv[k]) &&
		       !used_after(n, n->pv[k]))) ||
		    n->pv[k]->def->opc == OP_CONSTANT)
			want[n->pv[k]->def->id] = true;
	IrOp **ops = calloc((size_t)nops + 1, sizeof *ops);
	if (!ops)
		abort();
	for (IrOp *o = n->ob->first; o != n->inner; o = o->next)
		ops[o->id] = o;
	for (int k = nops - 1; k >= 0; k--) {
		IrOp *o = ops[k];
		if (!want[k])
			continue;
		remat[k] = true;
		for (int i = 0; i < o->nops; i++) {
			IrValue *v = o->ops[i];
			if (!in_prologue(n, v))
				continue;
			if (ir_is_block(v->type) || v->def->opc == OP_CONSTANT)
				want[v->def->id] = true;
			else
				note_value(n, v);
		}
	}
	int w = 0;
	for (int k = 0; k < n->np; k++)
		if (!remat[n->pv[k]->def->id])
			n->pv[w++] = n->pv[k];
	n->np = w;
	free(want);
	free(ops);
}

/* The prologue ops the inner bounds are computed from, marked in keep (by
 * IrOp.id); false when one has a side effect or regions, or reads an outer
 * loop-carried value. */
static bool bounds_slice(const Nest *n, bool *keep)
{
	int nops = 0;
	for (IrOp *o = n->ob->first; o != n->inner; o = o->next)
		o->id = nops++;
	IrOp **stack = calloc((size_t)nops + 1, sizeof *stack); /* each op once */
	if (!stack)
		abort();
	int sp = 0;
	bool ok = true;
	for (int i = 0; i < 3; i++) {
		IrValue *v = n->inner->ops[i];
		if (v->owner == n->ob && v->index > 0) {
			ok = false; /* an outer loop-carried value */
		} else if (in_prologue(n, v) && !keep[v->def->id]) {
			keep[v->def->id] = true;
			stack[sp++] = v->def;
		}
	}
	while (sp && ok) {
		IrOp *o = stack[--sp];
		if (!ir_op_pure(o) || o->nregions) {
			ok = false;
			break;
		}
		for (int i = 0; i < o->nops; i++) {
			IrValue *v = o->ops[i];
			if (v->owner == n->ob && v->index > 0) {
				ok = false; /* an outer loop-carried value */
			} else if (in_prologue(n, v) && !keep[v->def->id]) {
				keep[v->def->id] = true;
				stack[sp++] = v->def;
			}
		}
	}
	free(stack);
	return ok;
}

/* Whether v is the same on every iteration of loop: defined outside it, or
 * a constant. */
static bool invariant(const IrValue *v, const IrOp *loop)
{
	int64_t c;
	return !defined_in(v, loop) || const_int(v, &c);
}

/* v, invariant in loop, as a value before it (a constant is made again). */
static IrValue *hoisted(IrBuilder *b, IrValue *v, const IrOp *loop)
{
	int64_t c;
	if (defined_in(v, loop) && const_int(v, &c))
		return ir_const_int(b, v->type, c);
	return v;
}

typedef struct DotNote {
	bool any, ok;
	IrDotOk dot_ok;
	void *user;
} DotNote;

static void note_dot(IrOp *op, void *user)
{
	DotNote *d = user;
	if (op->opc != OP_DOT)
		return;
	d->any = true;
	if (d->dot_ok && !d->dot_ok(op, d->user))
		d->ok = false;
}

static int64_t value_bytes(const IrValue *v)
{
	int bits = ir_type_bits(ir_scalar(v->type));
	return v->type->numel * (bits < 8 ? 1 : bits / 8);
}

/* The bytes of the blocks the loads of blk load. */
static int64_t loaded_bytes(const IrBlock *blk)
{
	int64_t n = 0;
	for (const IrOp *o = blk->first; o; o = o->next)
		if (o->opc == OP_LOAD && o->nres == 1 && ir_is_block(o->res[0].type))
			n += value_bytes(&o->res[0]);
	return n;
}

/* The largest block a store after `after` in blk (or in the regions of
 * those ops) writes. */
static int64_t stored_bytes_max(const IrBlock *blk, const IrOp *after, bool desc)
{
	int64_t m = 0;
	for (const IrOp *o = after ? after->next : blk->first; o; o = o->next) {
		if (o->opc == OP_STORE && o->nops >= 2 && ir_is_block(o->ops[1]->type) &&
		    (ir_op_int(o, "tma", 0) != 0) == desc && value_bytes(o->ops[1]) > m)
			m = value_bytes(o->ops[1]);
		for (int r = 0; r < o->nregions; r++) {
			int64_t x = stored_bytes_max(o->regions[r], NULL, desc);
			m = x > m ? x : m;
		}
	}
	return m;
}

/* A constant (scalar, or a block of one value) or a splat of a value
 * defined before loop: the same in every iteration (hoist makes it again
 * where it is needed). */
static bool cheap_init(const IrValue *v, const IrOp *loop)
{
	if (!defined_in(v, loop))
		return true;
	const IrOp *d = v->def;
	if (!d || d->nregions)
		return false;
	if (d->opc == OP_CONSTANT)
		return true;
	return d->opc == OP_SPLAT && cheap_init(d->ops[0], loop);
}

/* v is computed from values defined before loop by pure ops of its body
 * (not nested deeper, reading neither its induction value nor a carried
 * value): the inner bounds a nest computes in its prologue, tl.cdiv(K, BK)
 * say. */
static bool hoistable(const IrValue *v, const IrOp *loop, int depth)
{
	if (!defined_in(v, loop))
		return true;
	const IrOp *d = v->def;
	if (!d || depth > 32 || d->parent != loop->regions[0] || !ir_op_pure(d) || d->nregions)
		return false;
	/* a division runs before the loop even where the loop would not: only
	 * by a nonzero constant (no trap to bring forward) */
	int64_t c;
	if ((d->opc == OP_DIV || d->opc == OP_REM) && (!const_int(d->ops[1], &c) || c == 0))
		return false;
	for (int i = 0; i < d->nops; i++)
		if (!hoistable(d->ops[i], loop, depth + 1))
			return false;
	return true;
}

/* v (hoistable) computed again at b's point, before the loop. */
static IrValue *hoist(IrBuilder *b, IrValue *v, const IrOp *loop, VMap *m)
{
	if (!defined_in(v, loop))
		return v;
	IrValue *h = vmap_get(m, v);
	if (h != v)
		return h;
	IrOp *d = v->def;
	for (int i = 0; i < d->nops; i++)
		hoist(b, d->ops[i], loop, m);
	IrOp *c = clone_op(b->ctx, d, m);
	ir_block_insert_before(b->block, b->before, c);
	return &c->res[v->index];
}

static bool flatten(IrFunc *f, IrOp *L, bool dot_nests, int64_t smem_limit, int64_t stages, IrDotOk dot_ok,
		    void *user)
{
	IrCtx *ctx = f->module->ctx;
	Nest n = {.ctx = ctx, .ob = L->regions[0]};
	for (IrOp *o = n.ob->first; o; o = o->next)
		if (o->opc == OP_FOR) {
			if (n.inner)
				return false; /* two inner loops */
			n.inner = o;
		}
	IrOp *I = n.inner;
	const IrType *t = L->ops[0]->type;
	int64_t s;
	if (!I || I->ops[0]->type != t || (const_int(L->ops[2], &s) && s <= 0) || (const_int(I->ops[2], &s) && s <= 0))
		return false;
	/* an inner loop with a dot stays a loop unless dot_nests: the GPU
	 * pipelines a dot's own loop (its tiles through cp.async stages, the
	 * MMA in flight across iterations); the fused form keeps that only in
	 * the shape below (the general one left tutorial 09's persistent
	 * matmuls no async copies and 255 registers) */
	DotNote dn = {.any = false, .ok = true, .dot_ok = dot_ok, .user = user};
	ir_walk_block(I->regions[0], note_dot, &dn);
	bool has_dot = dn.any;
	IrBlock *ib = I->regions[0];
	IrOp *oy = ir_block_terminator(n.ob);
	int na = L->nops - 3, nb = I->nops - 3;
	bool inv = invariant(I->ops[0], L) && invariant(I->ops[1], L) && invariant(I->ops[2], L);
	int64_t tci = const_trip_count(I);
	if (has_dot) /* bounds the prologue computes from invariants: moved before the loop */
		inv = hoistable(I->ops[0], L, 0) && hoistable(I->ops[1], L, 0) && hoistable(I->ops[2], L, 0);
	if (has_dot) {
		/* the form the pipeliner takes across tiles (dot_nests): invariant
		 * inner bounds, a prologue of pure ops, at least one inner
		 * iteration (or the nest as it is when there is none) */
		/* warp specialization keeps the nest (its producer loop is the
		 * nest's); pointer and descriptor tiles fuse alike */
		if (!dot_nests || !dn.ok || !inv || tci == 0 || ir_op_int(L, "warp_specialize", 0))
			return false;
		/* the inner loop carries what starts from a constant (the
		 * accumulators): carried pointers (a_ptrs += BK) would go through
		 * the tile switch's `if`, which the copies ahead cannot read */
		for (int q = 3; q < I->nops; q++)
			if (!cheap_init(I->ops[q], L))
				return false;
		for (IrOp *o = n.ob->first; o != I; o = o->next)
			if (!ir_op_pure(o) || o->nregions)
				return false;
		/* the stages asked for (stages, at least 2) must fit beside the
		 * epilogue's conversion buffer, as the pipeliner budgets them
		 * (analysis/prefetch.c): fused with fewer, the K steps would be
		 * pipelined less deeply than the nest's */
		int64_t epi = stored_bytes_max(n.ob, I, false);
		/* converted in rounds of at most 32 KiB, whole 128-byte lines
		 * (analysis/alloc.c, an_round_bytes); a descriptor store's
		 * staging for the tensor store is the whole block at once */
		while (epi > 32768 && epi % (2 * 128) == 0)
			epi /= 2;
		int64_t desc = stored_bytes_max(n.ob, I, true);
		epi = desc > epi ? desc : epi;
		if (stages < 2 ||
		    (smem_limit > 0 && stages * loaded_bytes(ib) > smem_limit - (epi > 16384 ? epi : 16384) - 1024))
			return false;
	}
	bool *keep = NULL;
	if (!inv) {
		int nops = 1;
		for (IrOp *o = n.ob->first; o != I; o = o->next)
			nops++;
		keep = calloc((size_t)nops, sizeof *keep);
		if (!keep)
			abort();
		if (!bounds_slice(&n, keep)) {
			free(keep);
			return false;
		}
	}
	/* the prologue values used after it (with a dot, not the inner bounds,
	 * invariant, nor constant initial values: made again where needed) */
	for (int q = 0; q < I->nops; q++)
		if (!has_dot || (q >= 3 && !cheap_init(I->ops[q], L)))
			note_value(&n, I->ops[q]);
	for (int r = 0; r < I->nregions; r++)
		ir_walk_block(I->regions[r], note_use, &n);
	for (IrOp *o = I->next; o; o = o->next) {
		note_use(o, &n);
		for (int r = 0; r < o->nregions; r++)
			ir_walk_block(o->regions[r], note_use, &n);
	}
	bool *remat = NULL;
	if (has_dot) {
		int nops = 0;
		for (IrOp *o = n.ob->first; o != I; o = o->next)
			nops++;
		remat = ir_alloc(ctx, sizeof *remat * (size_t)(nops + 1));
		memset(remat, 0, sizeof *remat * (size_t)(nops + 1));
		split_prologue(&n, remat);
	}

	IrBuilder b;
	ir_builder_init(&b, ctx);
	ir_builder_before(&b, L);
	b.loc = L->loc;
	IrValue *one = ir_const_int(&b, t, 1), *zero = ir_const_int(&b, t, 0);
	/* with a dot: the inner bounds, before the loop */
	IrValue *hb[3] = {NULL, NULL, NULL};
	if (has_dot) {
		VMap hm = {0};
		for (int q = 0; q < 3; q++)
			hb[q] = hoist(&b, I->ops[q], L, &hm);
		vmap_free(&hm);
	}
	/* the fused trip count */
	IrValue *tcj = NULL, *per = NULL, *total;
	/* a nest with a dot whose inner trip count is not known: the fused
	 * loop where every outer iteration has an inner one, the nest as it
	 * is where none has (as Triton speculates the inner loop's length) */
	IrOp *spec = NULL;
	if (has_dot && tci < 0) {
		tcj = trip_count(&b, hb[0], hb[1], hb[2]);
		IrValue **like = ir_alloc(ctx, sizeof *like * (size_t)(na ? na : 1));
		for (int a = 0; a < na; a++)
			like[a] = &L->res[a];
		spec = new_if(&b, ir_cmp(&b, "gt", tcj, zero), na, like);
		IrBuilder eb;
		ir_builder_init(&eb, ctx);
		ir_builder_at_end(&eb, spec->regions[1]);
		eb.loc = L->loc;
		VMap m = {0};
		IrOp *c = clone_op(ctx, L, &m);
		vmap_free(&m);
		copy_loop_attrs(ctx, c, c, "flatten", 0);
		ir_block_append(spec->regions[1], c);
		for (int a = 0; a < na; a++)
			like[a] = &c->res[a];
		ir_yield(&eb, na, like);
		ir_builder_at_end(&b, spec->regions[0]);
		per = tcj;
	}
	if (spec) {
		int64_t tco = const_trip_count(L);
		total = ir_binary(&b, OP_MUL,
				  tco >= 0 ? ir_const_int(&b, t, tco) : trip_count(&b, L->ops[0], L->ops[1], L->ops[2]),
				  per);
	} else if (inv) {
		tcj = tci >= 0 ? ir_const_int(&b, t, tci)
			       : trip_count(&b, hoisted(&b, I->ops[0], L), hoisted(&b, I->ops[1], L),
					    hoisted(&b, I->ops[2], L));
		per = tci >= 0 ? ir_const_int(&b, t, tci > 1 ? tci : 1) : ir_binary(&b, OP_MAX, tcj, one);
		int64_t tco = const_trip_count(L);
		total = ir_binary(&b, OP_MUL,
				  tco >= 0 ? ir_const_int(&b, t, tco) : trip_count(&b, L->ops[0], L->ops[1], L->ops[2]),
				  per);
	} else {
		/* a loop summing max(inner trip count, 1) over the outer iterations */
		IrValue *pops[4] = {L->ops[0], L->ops[1], L->ops[2], zero};
		IrOp *pre = ir_build(&b, OP_FOR, 4, pops, 1, &t, 1);
		IrBlock *pb = pre->regions[0];
		IrValue *pi = ir_block_add_arg(ctx, pb, t), *acc = ir_block_add_arg(ctx, pb, t);
		IrBuilder pbld;
		ir_builder_init(&pbld, ctx);
		ir_builder_at_end(&pbld, pb);
		pbld.loc = L->loc;
		VMap m = {0};
		vmap_put(&m, n.ob->args[0], pi);
		int k = 0;
		for (IrOp *o = n.ob->first; o != I; o = o->next, k++)
			if (keep[k])
				ir_block_append(pb, clone_op(ctx, o, &m));
		IrValue *c =
			trip_count(&pbld, vmap_get(&m, I->ops[0]), vmap_get(&m, I->ops[1]), vmap_get(&m, I->ops[2]));
		IrValue *sum = ir_binary(&pbld, OP_ADD, acc, ir_binary(&pbld, OP_MAX, c, ir_const_int(&pbld, t, 1)));
		ir_yield(&pbld, 1, &sum);
		vmap_free(&m);
		total = &pre->res[0];
	}
	free(keep);

	/* the fused loop: (c, i, j, outer carried, inner carried, prologue
	 * values, inner trip count when it varies) */
	int nf = 3 + na + nb + n.np + !inv;
	IrValue **fops = ir_alloc(ctx, sizeof *fops * (size_t)(3 + nf));
	fops[0] = zero;
	fops[1] = total;
	fops[2] = one;
	int k = 3;
	fops[k++] = zero;      /* c: the fused iteration within the outer one */
	fops[k++] = L->ops[0]; /* i */
	fops[k++] = zero;      /* j, set when an outer iteration starts */
	for (int a = 0; a < na; a++)
		fops[k++] = L->ops[3 + a];
	for (int q = 0; q < nb; q++)
		fops[k++] = zero_of(&b, ib->args[1 + q]->type);
	/* a carried block starts undefined: the first fused iteration sets it
	 * (and axis info takes the facts of what it is set to) */
	for (int p = 0; p < n.np; p++)
		fops[k++] = ir_is_block(n.pv[p]->type) ? ir_build1(&b, OP_POISON, n.pv[p]->type, 0, NULL)
						       : zero_of(&b, n.pv[p]->type);
	if (!inv)
		fops[k++] = zero;
	const IrType **ftys = ir_alloc(ctx, sizeof *ftys * (size_t)nf);
	for (int q = 0; q < nf; q++)
		ftys[q] = fops[3 + q]->type;
	IrOp *F = ir_build(&b, OP_FOR, 3 + nf, fops, nf, ftys, 1);
	copy_loop_attrs(ctx, F, L, "flatten", 0);
	/* nothing of the epilogue hoisted out of the loop (LLVM would keep it
	 * in registers across every K step: 128x256x64 tiles spilled) */
	if (has_dot) {
		ir_op_set_bool(ctx, F, "disable_licm", true);
		/* what the pipeliner takes across tiles in this loop only */
		ir_op_set_bool(ctx, F, "fused_nest", true);
	}
	IrBlock *fb = F->regions[0];
	ir_block_add_arg(ctx, fb, t);
	IrValue **arg = ir_alloc(ctx, sizeof *arg * (size_t)nf);
	for (int q = 0; q < nf; q++)
		arg[q] = ir_block_add_arg(ctx, fb, ftys[q]);
	IrValue *c = arg[0], *i = arg[1], *j = arg[2], **A = arg + 3, **B = A + na, **P = B + nb;
	IrBuilder in;
	ir_builder_init(&in, ctx);
	ir_builder_at_end(&in, fb);
	in.loc = L->loc;

	/* the first fused iteration of an outer one runs the prologue and
	 * starts the inner loop; later code reads the prologue's values from
	 * there (M maps the nest's values to the fused loop's) */
	VMap M = {0};
	vmap_put(&M, n.ob->args[0], i);
	for (int a = 0; a < na; a++)
		vmap_put(&M, n.ob->args[1 + a], A[a]);
	/* a nest with a dot starts its inner loop outside the `if`: its
	 * induction variable and constant initial values (the accumulator's
	 * zeros) by a select on the first fused iteration, which the
	 * backends fold into the MMA (its accumulator not read); only the
	 * prologue's values go through the `if` */
	IrValue *first = ir_cmp(&in, "eq", c, zero);
	bool *sel = ir_alloc(ctx, sizeof *sel * (size_t)(nb + 1)); /* sel[0]: j, sel[1 + q]: B[q] */
	memset(sel, 0, sizeof *sel * (size_t)(nb + 1));
	if (has_dot) {
		sel[0] = true;
		for (int q = 0; q < nb; q++)
			sel[1 + q] = cheap_init(I->ops[3 + q], L);
	}
	int n1 = 0, *slot = ir_alloc(ctx, sizeof *slot * (size_t)(nb + 1));
	IrValue **y1 = ir_alloc(ctx, sizeof *y1 * (size_t)(1 + nb + n.np + 1));
	for (int q = 0; q <= nb; q++) {
		slot[q] = sel[q] ? -1 : n1;
		if (!sel[q])
			y1[n1++] = q ? B[q - 1] : j;
	}
	int p1 = n1;
	for (int p = 0; p < n.np; p++)
		y1[n1++] = P[p];
	if (!inv)
		y1[n1++] = P[n.np]; /* the inner trip count */
	IrOp *if1 = new_if(&in, first, n1, y1);
	IrBuilder tb;
	ir_builder_init(&tb, ctx);
	ir_builder_at_end(&tb, if1->regions[1]);
	tb.loc = L->loc;
	ir_yield(&tb, n1, y1);
	ir_builder_at_end(&tb, if1->regions[0]);
	for (IrOp *o = n.ob->first; o != I; o = o->next)
		ir_block_append(if1->regions[0], clone_op(ctx, o, &M));
	IrValue **yt = ir_alloc(ctx, sizeof *yt * (size_t)(n1 ? n1 : 1));
	for (int q = 0; q <= nb; q++)
		if (!sel[q])
			yt[slot[q]] = vmap_get(&M, I->ops[q ? 3 + q - 1 : 0]);
	for (int p = 0; p < n.np; p++)
		yt[p1 + p] = vmap_get(&M, n.pv[p]);
	if (!inv)
		yt[n1 - 1] = trip_count(&tb, vmap_get(&M, I->ops[0]), vmap_get(&M, I->ops[1]), vmap_get(&M, I->ops[2]));
	ir_yield(&tb, n1, yt);
	IrValue *j0 = sel[0] ? ir_select(&in, first, hb[0], j) : &if1->res[slot[0]];
	IrValue **B0 = ir_alloc(ctx, sizeof *B0 * (size_t)(nb ? nb : 1));
	for (int q = 0; q < nb; q++) {
		if (!sel[1 + q]) {
			B0[q] = &if1->res[slot[1 + q]];
			continue;
		}
		VMap cm = {0};
		IrValue *x = hoist(&in, I->ops[3 + q], L, &cm), *cq = first;
		vmap_free(&cm);
		if (ir_is_block(x->type))
			cq = ir_splat(&in, first, ir_type_like(ctx, x->type, ir_type(ctx, TY_I1)));
		B0[q] = ir_select(&in, cq, x, B[q]);
	}
	for (int p = 0; p < n.np; p++)
		vmap_put(&M, n.pv[p], &if1->res[p1 + p]);
	if (has_dot) { /* the prologue's blocks, from its scalars */
		int q = 0;
		for (IrOp *o = n.ob->first; o != I; o = o->next, q++)
			if (remat[q])
				ir_block_insert_before(in.block, in.before, clone_op(ctx, o, &M));
	}
	if (!inv) {
		tcj = &if1->res[n1 - 1];
		per = ir_binary(&in, OP_MAX, tcj, one);
	}

	/* one inner iteration, under an `if` unless every outer iteration has
	 * one */
	bool guard = !has_dot && tci < 1;
	IrOp *if2 = NULL;
	IrBuilder *at = &in;
	if (guard) {
		if2 = new_if(&in, ir_cmp(&in, "lt", c, tcj), nb, B0);
		ir_builder_at_end(&tb, if2->regions[1]);
		ir_yield(&tb, nb, B0);
		ir_builder_at_end(&tb, if2->regions[0]);
		at = &tb;
	}
	vmap_put(&M, ib->args[0], j0);
	for (int q = 0; q < nb; q++)
		vmap_put(&M, ib->args[1 + q], B0[q]);
	IrOp *iy = clone_body(at, ib, &M);
	IrValue **B1 = ir_alloc(ctx, sizeof *B1 * (size_t)(nb ? nb : 1));
	for (int q = 0; q < nb; q++)
		B1[q] = vmap_get(&M, iy->ops[q]);
	if (guard) {
		tb.loc = iy->loc;
		ir_yield(&tb, nb, B1);
		tb.loc = L->loc;
		for (int q = 0; q < nb; q++)
			B1[q] = &if2->res[q];
	}
	IrValue *j1 = ir_binary(&in, OP_ADD, j0, has_dot ? hb[2] : vmap_get(&M, I->ops[2]));
	IrValue *c1 = ir_binary(&in, OP_ADD, c, one);
	IrValue *last = ir_cmp(&in, "eq", c1, per);

	/* the last fused iteration of an outer one runs the epilogue. With a
	 * dot, the inner values go through it unchanged: the MMA may still be
	 * running where the epilogue does not run, and is waited for where it
	 * does (backend/nvptx) */
	int xb = has_dot ? nb : 0, n3 = na + 1 + xb;
	IrValue **y3 = ir_alloc(ctx, sizeof *y3 * (size_t)n3);
	for (int a = 0; a < na; a++)
		y3[a] = A[a];
	y3[na] = i;
	for (int q = 0; q < xb; q++)
		y3[na + 1 + q] = B1[q];
	IrOp *if3 = new_if(&in, last, n3, y3);
	ir_builder_at_end(&tb, if3->regions[1]);
	ir_yield(&tb, n3, y3);
	ir_builder_at_end(&tb, if3->regions[0]);
	for (int q = 0; q < nb; q++)
		vmap_put(&M, &I->res[q], B1[q]);
	for (IrOp *o = I->next; o && o != oy; o = o->next)
		ir_block_append(if3->regions[0], clone_op(ctx, o, &M));
	IrValue **ye = ir_alloc(ctx, sizeof *ye * (size_t)n3);
	for (int a = 0; a < na; a++)
		ye[a] = vmap_get(&M, oy->ops[a]);
	ye[na] = ir_binary(&tb, OP_ADD, i, L->ops[2]);
	for (int q = 0; q < xb; q++)
		ye[na + 1 + q] = B1[q];
	tb.loc = oy->loc;
	ir_yield(&tb, n3, ye);
	vmap_free(&M);
	for (int q = 0; q < xb; q++)
		B1[q] = &if3->res[na + 1 + q];

	IrValue **yf = ir_alloc(ctx, sizeof *yf * (size_t)nf);
	k = 0;
	yf[k++] = ir_select(&in, last, zero, c1);
	/* with a dot, the next outer induction value by a select: the copies
	 * ahead compute the prologue's values from it (analysis/prefetch.c) */
	yf[k++] = has_dot ? ir_select(&in, last, ir_binary(&in, OP_ADD, i, L->ops[2]), i) : &if3->res[na];
	yf[k++] = j1;
	for (int a = 0; a < na; a++)
		yf[k++] = &if3->res[a];
	for (int q = 0; q < nb; q++)
		yf[k++] = B1[q];
	for (int p = 0; p < n.np; p++)
		yf[k++] = &if1->res[p1 + p];
	if (!inv)
		yf[k++] = tcj;
	ir_yield(&in, nf, yf);

	IrOp *R = F;
	int r0 = 3;
	if (spec) {
		IrValue **ys = ir_alloc(ctx, sizeof *ys * (size_t)(na ? na : 1));
		for (int a = 0; a < na; a++)
			ys[a] = &F->res[3 + a];
		b.loc = L->loc;
		ir_builder_at_end(&b, spec->regions[0]);
		ir_yield(&b, na, ys);
		R = spec;
		r0 = 0;
	}
	for (int a = 0; a < na; a++)
		ir_replace_all_uses(f, &L->res[a], &R->res[r0 + a]);
	ir_op_unlink(L);
	return true;
}

IrError *ir_flatten_loops(IrModule *m, bool dot_nests, int64_t smem_limit, IrDotOk dot_ok, void *user)
{
	const IrAttr *ns = ir_find_attr(m->nattrs, m->attrs, "num_stages");
	int64_t stages = ns && ns->kind == ATTR_INT ? ns->i : 1;
	for (int fi = 0; fi < m->nfuncs; fi++) {
		IrFunc *f = m->funcs[fi];
		IrOp **loops = NULL;
		int n = 0, cap = 0;
		collect_loops(f->body, "flatten", &loops, &n, &cap);
		for (int i = 0; i < n; i++) /* innermost first: an inner nest is one loop by then */
			if (ir_op_int(loops[i], "flatten", 0))
				flatten(f, loops[i], dot_nests, smem_limit, stages, dot_ok, user);
		free(loops);
	}
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* Addresses split into a loop-invariant part and a scalar step              */
/* ------------------------------------------------------------------------- */

/* In a loop with a dot, a tile's address `base + (rows * stride + k)`,
 * with k = ki * BK + arange(0, BK), is base + (rows * stride + arange)
 * made once before the loop plus the scalar ki * BK added on each
 * iteration: per 16-byte copy one 64-bit add of a uniform value instead of
 * a multiply-add and a widening multiply-add (tutorial 09's persistent K
 * step). A fused nest then carries those pointers from tile to tile
 * (flatten, split_prologue). The 32-bit offset is no longer summed before
 * it is widened: the two differ only where that sum overflows. */

typedef struct Addr {
	IrOp *loop;
	IrBuilder pre; /* before the loop */
	IrBuilder in;  /* before the address */
	VMap hm;       /* what was hoisted */
} Addr;

/* The scalar c with y == splat(c), y invariant in the loop, or NULL. With
 * b, a value usable at its point (a constant is made there); without b,
 * only whether there is one (not NULL: y itself). */
static IrValue *uniform_of(IrBuilder *b, IrValue *y, const IrOp *loop)
{
	const IrOp *d = y->def;
	if (!d || !ir_is_block(y->type))
		return NULL;
	if (d->opc == OP_SPLAT && hoistable(d->ops[0], loop, 0))
		return d->ops[0];
	const IrAttr *a = d->opc == OP_CONSTANT ? ir_op_attr(d, "value") : NULL;
	if (!a || a->kind != ATTR_INT)
		return NULL;
	return b ? ir_const_int(b, ir_scalar(y->type), a->i) : y;
}

/* Whether the integer block v is inv + splat(s): inv invariant in the loop
 * (made before it), s a scalar of the body; *var: whether s is there (v
 * not invariant). Through add, sub, a multiply by an invariant uniform
 * value, broadcast and expand_dims; splats of body scalars are s. */
static bool splits(const IrValue *v, const IrOp *loop, bool *var, int depth)
{
	*var = false;
	if (hoistable(v, loop, 0))
		return true;
	const IrOp *d = v->def;
	if (!d || depth > 24 || d->parent != loop->regions[0] || !ir_is_block(v->type) || !ir_is_int(ir_scalar(v->type)))
		return false;
	bool x, y;
	switch (d->opc) {
	case OP_SPLAT:
		*var = true;
		return true;
	case OP_ADD:
	case OP_SUB:
		if (!splits(d->ops[0], loop, &x, depth + 1) || !splits(d->ops[1], loop, &y, depth + 1))
			return false;
		*var = x || y;
		return true;
	case OP_MUL: {
		int k = uniform_of(NULL, d->ops[1], loop) ? 1 : uniform_of(NULL, d->ops[0], loop) ? 0 : -1;
		return k >= 0 && splits(d->ops[1 - k], loop, var, depth + 1);
	}
	case OP_BROADCAST:
	case OP_EXPAND_DIMS:
		return splits(d->ops[0], loop, var, depth + 1);
	default:
		return false;
	}
}

/* x op y for the parts of a split (NULL: zero), at b's point. */
static IrValue *part_op(IrBuilder *b, IrOpcode opc, IrValue *x, IrValue *y, const IrType *t)
{
	if (!y)
		return x;
	if (!x)
		return opc == OP_ADD ? y : ir_binary(b, OP_SUB, ir_const_int(b, t, 0), y);
	return ir_binary(b, opc, x, y);
}

/* Makes the split of v (splits() holds): *inv before the loop, *var in the
 * body before the address; NULL for a zero part. */
static void split_parts(Addr *a, IrValue *v, IrValue **inv, IrValue **var)
{
	*inv = *var = NULL;
	if (hoistable(v, a->loop, 0)) {
		*inv = hoist(&a->pre, v, a->loop, &a->hm);
		return;
	}
	IrOp *d = v->def;
	IrValue *i0, *s0, *i1, *s1;
	switch (d->opc) {
	case OP_SPLAT:
		*var = d->ops[0];
		return;
	case OP_ADD:
	case OP_SUB:
		split_parts(a, d->ops[0], &i0, &s0);
		split_parts(a, d->ops[1], &i1, &s1);
		*inv = part_op(&a->pre, d->opc, i0, i1, v->type);
		*var = part_op(&a->in, d->opc, s0, s1, ir_scalar(v->type));
		return;
	case OP_MUL: {
		int k = uniform_of(NULL, d->ops[1], a->loop) ? 1 : 0;
		split_parts(a, d->ops[1 - k], &i0, &s0);
		if (i0)
			*inv = ir_binary(&a->pre, OP_MUL, i0, hoist(&a->pre, d->ops[k], a->loop, &a->hm));
		if (s0)
			*var = ir_binary(&a->in, OP_MUL, s0, uniform_of(&a->in, d->ops[k], a->loop));
		return;
	}
	case OP_BROADCAST:
		split_parts(a, d->ops[0], &i0, var);
		if (i0)
			*inv = ir_broadcast(&a->pre, i0, v->type);
		return;
	case OP_EXPAND_DIMS:
		split_parts(a, d->ops[0], &i0, var);
		if (i0)
			*inv = ir_expand_dims(&a->pre, i0, (int)ir_op_int(d, "axis", 0));
		return;
	default:
		return;
	}
}

static bool has_dot(const IrBlock *b)
{
	for (const IrOp *o = b->first; o; o = o->next)
		if (o->opc == OP_DOT)
			return true;
	return false;
}

static void hoist_loop_addresses(IrFunc *f, IrOp *loop)
{
	IrBlock *body = loop->regions[0];
	if (!has_dot(body))
		return;
	for (IrOp *o = body->first; o; o = o->next) {
		bool var;
		if (o->opc != OP_ADDPTR || !ir_is_block(o->res[0].type) || !hoistable(o->ops[0], loop, 0) ||
		    !splits(o->ops[1], loop, &var, 0) || !var)
			continue;
		Addr a = {.loop = loop};
		ir_builder_init(&a.pre, f->module->ctx);
		ir_builder_before(&a.pre, loop);
		a.pre.loc = o->loc;
		ir_builder_init(&a.in, f->module->ctx);
		ir_builder_before(&a.in, o);
		a.in.loc = o->loc;
		IrValue *inv, *s;
		split_parts(&a, o->ops[1], &inv, &s);
		if (inv && s) {
			IrValue *p = ir_addptr(&a.pre, hoist(&a.pre, o->ops[0], loop, &a.hm), inv);
			IrValue *q = ir_addptr(&a.in, p, ir_splat(&a.in, s, o->ops[1]->type));
			ir_replace_all_uses(f, &o->res[0], q);
		}
		vmap_free(&a.hm);
	}
}

/* The inner loops of the nests flatten fuses (with their dots): nested
 * loops elsewhere are left to LLVM's strength reduction, which does the
 * same for a loop of its own. */
static void hoist_addresses_in(IrFunc *f, IrBlock *b)
{
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			hoist_addresses_in(f, op->regions[r]);
		if (op->opc == OP_FOR && ir_op_int(op, "flatten", 0))
			for (IrOp *o = op->regions[0]->first; o; o = o->next)
				if (o->opc == OP_FOR)
					hoist_loop_addresses(f, o);
	}
}

IrError *ir_hoist_addresses(IrModule *m, bool dot_nests)
{
	if (!dot_nests)
		return NULL;
	for (int i = 0; i < m->nfuncs; i++)
		hoist_addresses_in(m->funcs[i], m->funcs[i]->body);
	return ir_dce(m);
}
