/* storever.c: stores versioned on what only the run time knows
 * (version-stores).
 *
 * A store's pointers may run contiguously along a dim while the axis info
 * cannot prove that the runs start 16-byte aligned: the base pointer or a
 * leading dimension was loaded from memory (a grouped GEMM's per-group
 * pointers and strides), or a stride parameter was not specialized as a
 * multiple of 16. Its mask may compare a contiguous offset with a bound of
 * unknown divisibility (offs < n). The backend then stores one element at
 * a time. When the pointers and the mask are built from scalars through
 * addptr, add, sub, mul, splat, broadcast, expand_dims and compares, the
 * pass asks the run time what the axis info could not tell:
 *
 *   if (every such scalar is a multiple of what a 16-byte vector needs)
 *       store through pointers and a mask rebuilt from those scalars
 *       behind multiple_of hints (true on this branch)
 *   else
 *       the store as it was
 *
 * The scalars (the leaves) are found by walking the pointer block down
 * from what the vector needs: runs of v elements along the dim starting at
 * multiples of v * element bytes. An addptr needs it of both sides (the
 * offset in elements), an add or sub of both operands, a mul of one factor
 * (the scalar side first) what the other does not give; a broadcast or
 * expand_dims along the dim asks it of every element of its operand. A
 * compare of the mask (lt / ge with the run on the left, gt / le on the
 * right) needs its run side aligned and its bound side a multiple of v: a
 * whole run is then on one side of the bound. What the axis info already
 * knows needs nothing; loop counters and program ids are never leaves.
 * Nothing here has to be right for the result to be: a hint is only
 * placed on a leaf the branch has checked, and the axis info after this
 * pass decides the vectors from the hints as from any other fact.
 *
 * The `if` says {versioned}: its element branch keeps the layout the store
 * had alone (coalesce.c), not the vector branch's.
 *
 * The pointers and mask are rebuilt in both branches (the ops of the
 * store's own block; dce drops the originals when nothing else uses
 * them), so neither path computes them twice. The condition costs an and
 * and a compare per leaf. Only kernels' stores are versioned, outside
 * warp-specialized regions, where the vector would at least double, and
 * (unless all) only stores of a dot's result: an accumulator is converted
 * for its store in any case, while a value already in its load's layout
 * (a softmax row) would pay a conversion for the vector branch.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

#define MAX_LEAVES 8
#define MAX_MEMO 256
#define MAX_STEPS 2000

typedef struct Leaf {
	IrValue *v;
	int64_t q;      /* divisibility the branch checks (bytes for pointers) */
	IrValue *hint;  /* multiple_of(v) in the fast branch */
} Leaf;

typedef struct Ver {
	const AnAxis *ax;
	int64_t vec; /* the vector (elements) the fast branch aims at */
	Leaf leaf[MAX_LEAVES];
	int nleaf;
	int depth;
	int steps; /* the walk gives up after MAX_STEPS values */
} Ver;

/* What v is known to give: every element divisible by (every), or the
 * elements at multiples of w->vec along d (the starts of the vectors). */
static int64_t known(const Ver *w, const IrValue *v, int d, bool every)
{
	const AnAxisInfo *x = an_axis_get(w->ax, v);
	if (!ir_is_block(v->type))
		return x->div[0];
	if (every) {
		int64_t k = INT64_MAX;
		for (int j = 0; j < v->type->rank; j++) {
			int64_t kj = x->contig[j] > 1 ? 1 : x->div[j];
			if (v->type->shape[j] > 1 && kj < k)
				k = kj;
		}
		return k == INT64_MAX ? x->div[0] : k;
	}
	return an_div_at(x, d, w->vec, ir_is_ptr(ir_scalar(v->type)) ? an_elem_bytes(v->type) : 1);
}

static bool add_leaf(Ver *w, IrValue *v, int64_t q)
{
	if (w->nleaf == MAX_LEAVES)
		return false;
	w->leaf[w->nleaf++] = (Leaf){v, q, NULL};
	return true;
}

/* A scalar the branch may check: an integer (not i1) or a pointer, not a
 * program id or a for loop's counter (its runs of values are no vector's). */
static bool leaf_ok(const IrValue *v)
{
	const IrType *t = v->type;
	if (ir_is_block(t) || !(ir_is_ptr(t) || (ir_is_int(t) && t->kind != TY_I1)))
		return false;
	if (v->def)
		return v->def->opc != OP_PROGRAM_ID && v->def->opc != OP_NUM_PROGRAMS && v->def->opc != OP_CONSTANT;
	const IrOp *p = v->owner ? v->owner->parent_op : NULL;
	return !(p && p->opc == OP_FOR && v->index == 0);
}

static bool want(Ver *w, IrValue *v, int d, bool every, int64_t q);

/* v's defining op when the walk may go into it (depth and step budgets
 * left: depth is counted up, the caller counts it down), else NULL. */
static IrOp *enter(Ver *w, const IrValue *v)
{
	IrOp *o = v->def;
	if (!o || w->depth >= 24 || ++w->steps > MAX_STEPS)
		return NULL;
	w->depth++;
	return o;
}


/* x * y with every / run-start elements divisible by q: the factor that is
 * a splatted scalar first is asked for what the other does not give. */
static bool want_mul(Ver *w, IrValue *x, IrValue *y, int d, bool every, int64_t q)
{
	int64_t kx = known(w, x, d, every), ky = known(w, y, d, every);
	if (kx >= q || ky >= q || kx * ky >= q)
		return true;
	IrValue *first = x, *second = y;
	const IrOp *yd = y->def;
	while (yd && (yd->opc == OP_BROADCAST || yd->opc == OP_EXPAND_DIMS))
		yd = yd->ops[0]->def;
	if (!ir_is_block(y->type) || (yd && yd->opc == OP_SPLAT)) {
		first = y;
		second = x;
	}
	int mark = w->nleaf;
	int64_t kf = first == x ? ky : kx, ks = first == x ? kx : ky;
	if (want(w, first, d, every, q / kf))
		return true;
	w->nleaf = mark;
	if (want(w, second, d, every, q / ks))
		return true;
	w->nleaf = mark;
	return false;
}

static bool want_scalar(Ver *w, IrValue *v, int64_t q)
{
	if (known(w, v, 0, true) >= q)
		return true;
	if (++w->steps > MAX_STEPS)
		return false;
	IrOp *o = v->def;
	int mark = w->nleaf;
	if (o && w->depth < 24) {
		w->depth++;
		bool ok = false;
		switch (o->opc) {
		case OP_ADD:
		case OP_SUB:
			ok = want_scalar(w, o->ops[0], q) && want_scalar(w, o->ops[1], q);
			break;
		case OP_MUL:
			ok = want_mul(w, o->ops[0], o->ops[1], 0, true, q);
			break;
		case OP_ADDPTR: {
			int64_t es = an_elem_bytes(v->type);
			ok = want_scalar(w, o->ops[0], q) && want_scalar(w, o->ops[1], (q + es - 1) / es);
			break;
		}
		case OP_MULTIPLE_OF:
			ok = want_scalar(w, o->ops[0], q);
			break;
		default:
			break;
		}
		w->depth--;
		if (ok)
			return true;
		w->nleaf = mark;
	}
	return leaf_ok(v) && add_leaf(w, v, q);
}

static bool want(Ver *w, IrValue *v, int d, bool every, int64_t q)
{
	if (q <= 1)
		return true;
	if (!ir_is_block(v->type))
		return want_scalar(w, v, q);
	if (v->type->shape[d] == 1)
		every = true;
	if (known(w, v, d, every) >= q)
		return true;
	IrOp *o = enter(w, v);
	if (!o)
		return false;
	bool ok = false;
	switch (o->opc) {
	case OP_SPLAT:
		ok = want_scalar(w, o->ops[0], q);
		break;
	case OP_BROADCAST:
		ok = want(w, o->ops[0], d, every || o->ops[0]->type->shape[d] == 1, q);
		break;
	case OP_EXPAND_DIMS: {
		int ax = (int)ir_op_int(o, "axis", 0);
		ok = d == ax ? want(w, o->ops[0], 0, true, q) : want(w, o->ops[0], d - (d > ax), every, q);
		break;
	}
	case OP_ADD:
	case OP_SUB:
		ok = want(w, o->ops[0], d, every, q) && want(w, o->ops[1], d, every, q);
		break;
	case OP_ADDPTR: {
		int64_t es = an_elem_bytes(v->type);
		ok = want(w, o->ops[0], d, every, q) && want(w, o->ops[1], d, every, (q + es - 1) / es);
		break;
	}
	case OP_MUL:
		ok = want_mul(w, o->ops[0], o->ops[1], d, every, q);
		break;
	case OP_MULTIPLE_OF:
	case OP_MAX_CONTIGUOUS:
	case OP_MAX_CONSTANCY:
		ok = want(w, o->ops[0], d, every, q);
		break;
	default:
		break;
	}
	w->depth--;
	return ok;
}

/* The mask m constant over the vectors along d. */
static bool want_mask(Ver *w, IrValue *m, int d)
{
	if (!ir_is_block(m->type) || m->type->shape[d] == 1 || an_axis_get(w->ax, m)->constancy[d] >= w->vec)
		return true;
	IrOp *o = enter(w, m);
	if (!o)
		return false;
	bool ok = false;
	switch (o->opc) {
	case OP_AND:
	case OP_OR:
	case OP_XOR:
		ok = want_mask(w, o->ops[0], d) && want_mask(w, o->ops[1], d);
		break;
	case OP_NOT:
		ok = want_mask(w, o->ops[0], d);
		break;
	case OP_BROADCAST:
		ok = want_mask(w, o->ops[0], d);
		break;
	case OP_EXPAND_DIMS: {
		int ax = (int)ir_op_int(o, "axis", 0);
		ok = d == ax || want_mask(w, o->ops[0], d - (d > ax));
		break;
	}
	case OP_CMP: {
		/* the run on the left for lt / ge, on the right for gt / le
		 * (axis.c's rule), the other side constant along d */
		const char *p = ir_op_str(o, "pred", "eq");
		bool left = !strcmp(p, "lt") || !strcmp(p, "ge"), right = !strcmp(p, "gt") || !strcmp(p, "le");
		if (!(left || right) || !ir_is_int(ir_scalar(o->ops[0]->type)))
			break;
		IrValue *run = o->ops[left ? 0 : 1], *bound = o->ops[left ? 1 : 0];
		const AnAxisInfo *r = an_axis_get(w->ax, run), *b = an_axis_get(w->ax, bound);
		if (r->contig[d] < w->vec || b->contig[d] != 1 || b->constancy[d] % w->vec)
			break;
		ok = want(w, run, d, false, w->vec) && want(w, bound, d, true, w->vec);
		break;
	}
	default:
		break;
	}
	w->depth--;
	return ok;
}

/* ---- rebuilding ------------------------------------------------------------ */

static bool rebuildable(const IrOp *o)
{
	switch (o->opc) {
	case OP_SPLAT:
	case OP_BROADCAST:
	case OP_EXPAND_DIMS:
	case OP_ADD:
	case OP_SUB:
	case OP_MUL:
	case OP_ADDPTR:
	case OP_MULTIPLE_OF:
	case OP_MAX_CONTIGUOUS:
	case OP_MAX_CONSTANCY:
	case OP_CMP:
	case OP_AND:
	case OP_OR:
	case OP_XOR:
	case OP_NOT:
	case OP_MAKE_RANGE:
	case OP_CONSTANT:
		return true;
	default:
		return false;
	}
}

/* Values rebuilt in a branch: substitutions first, then the copies made. */
typedef struct Chain {
	const IrBlock *home; /* the store's block: its ops are rebuilt in the branch */
	IrValue *from[MAX_MEMO], *to[MAX_MEMO];
	int n;
} Chain;

/* v in the branch being built: its substitute or copy; an op of the
 * store's block rebuilt there (its operands first); else v itself. */
static IrValue *rebuild(Chain *c, IrBuilder *b, IrValue *v, int depth)
{
	for (int i = 0; i < c->n; i++)
		if (c->from[i] == v)
			return c->to[i];
	IrOp *o = v->def;
	if (!o || o->parent != c->home || !rebuildable(o) || o->nres != 1 || depth > 48 || c->n == MAX_MEMO)
		return v;
	IrValue *ops[3];
	if (o->nops > 3)
		return v;
	for (int i = 0; i < o->nops; i++)
		ops[i] = rebuild(c, b, o->ops[i], depth + 1);
	const IrType *ty = o->res[0].type;
	IrOp *k = ir_build(b, o->opc, o->nops, ops, 1, &ty, 0);
	k->loc = o->loc;
	k->nattrs = o->nattrs;
	k->attrs = ir_alloc(b->ctx, sizeof *k->attrs * (size_t)(o->nattrs ? o->nattrs : 1));
	if (o->nattrs)
		memcpy(k->attrs, o->attrs, sizeof *k->attrs * (size_t)o->nattrs);
	if (c->n < MAX_MEMO) {
		c->from[c->n] = v;
		c->to[c->n++] = &k->res[0];
	}
	return &k->res[0];
}

IrOp *an_store_copy(IrBuilder *b, IrOp *st, int nsub, IrValue *const *from, IrValue *const *to)
{
	Chain *c = calloc(1, sizeof *c);
	if (!c)
		abort();
	c->home = st->parent;
	for (int i = 0; i < nsub && c->n < MAX_MEMO; i++, c->n++) {
		c->from[c->n] = from[i];
		c->to[c->n] = to[i];
	}
	IrValue *p = rebuild(c, b, st->ops[0], 0);
	IrValue *m = st->nops >= 3 ? rebuild(c, b, st->ops[2], 0) : NULL;
	free(c);
	IrOp *n = ir_store(b, p, st->ops[1], m);
	n->loc = st->loc;
	n->nattrs = st->nattrs;
	n->attrs = ir_alloc(b->ctx, sizeof *n->attrs * (size_t)(st->nattrs ? st->nattrs : 1));
	if (st->nattrs)
		memcpy(n->attrs, st->attrs, sizeof *n->attrs * (size_t)st->nattrs);
	ir_op_remove_attr(n, "tma");
	return n;
}

IrOp *an_store_if(IrBuilder *b, const IrOp *st, IrValue *cond, IrBuilder *then, IrBuilder *els)
{
	const IrType *none = NULL;
	IrOp *iff = ir_build(b, OP_IF, 1, &cond, 0, &none, 2);
	IrBuilder *br[2] = {then, els};
	for (int r = 0; r < 2; r++) {
		ir_builder_init(br[r], b->ctx);
		ir_builder_at_end(br[r], iff->regions[r]);
		br[r]->loc = st->loc;
	}
	return iff;
}

/* The store op in the branch at b (the fast one: the leaves replaced by
 * their hints). */
static void branch_store(Ver *w, IrBuilder *b, IrOp *st, bool hinted)
{
	IrValue *from[MAX_LEAVES], *to[MAX_LEAVES];
	for (int i = 0; i < w->nleaf; i++) {
		from[i] = w->leaf[i].v;
		to[i] = w->leaf[i].hint;
	}
	an_store_copy(b, st, hinted ? w->nleaf : 0, from, to);
}

/* The dim the store's pointers run along (the longest run; the last dim
 * on a tie) and the vector a 16-byte access would take there. */
static int store_dim(const AnAxis *ax, const IrValue *p, int64_t *vec)
{
	const AnAxisInfo *x = an_axis_get(ax, p);
	int rank = p->type->rank, d = rank - 1;
	for (int j = rank - 1; j >= 0; j--)
		if (x->contig[j] > x->contig[d])
			d = j;
	int64_t v = 16 / an_elem_bytes(p->type);
	if (x->contig[d] < v)
		v = x->contig[d];
	if (p->type->shape[d] < v)
		v = p->type->shape[d];
	int64_t f = 1;
	while (f * 2 <= v)
		f *= 2;
	*vec = f;
	return d;
}

/* Whether v (a store operand) is a leaf or is computed from one by ops of
 * the store's block that rebuild() copies: only then does a hint reach the
 * rebuilt pointers or mask (pointers made in an enclosing block, before a
 * loop, stay what they are). */
static bool reaches(const IrBlock *home, const IrValue *v, const IrValue *leaf, int *budget)
{
	if (v == leaf)
		return true;
	const IrOp *o = v->def;
	if (!o || o->parent != home || !rebuildable(o) || o->nres != 1 || o->nops > 3 || --*budget < 0)
		return false;
	for (int i = 0; i < o->nops; i++)
		if (reaches(home, o->ops[i], leaf, budget))
			return true;
	return false;
}

typedef struct Plan {
	IrOp *st;
	Leaf leaf[MAX_LEAVES]; /* one per value, at the largest divisibility asked of it */
	int nleaf;
} Plan;

typedef struct Plans {
	Plan *p;
	int n, cap;
} Plans;

/* Whether v is a dot's result (an accumulator, through elementwise ops,
 * loops carrying it and ifs yielding it): its layout is the MMA's, so the
 * store converts it anyway and the vector branch costs no conversion more.
 * Another value (a row loaded and reduced in the layout of its load) would
 * need a conversion the element store does without. */
static bool from_dot(const IrValue *v, int depth, int *budget)
{
	const IrOp *d = v->def;
	if (!d || depth > 16 || !ir_is_block(v->type) || --*budget < 0)
		return false;
	if (d->opc == OP_DOT)
		return true;
	if (d->opc == OP_FOR || d->opc == OP_IF) {
		for (int r = 0; r < d->nregions; r++) {
			const IrOp *y = ir_block_terminator(d->regions[r]);
			if (y && y->opc == OP_YIELD && v->index < y->nops && from_dot(y->ops[v->index], depth + 1, budget))
				return true;
		}
		return false;
	}
	if (!(ir_opinfo(d->opc)->flags & IR_ELEM) && d->opc != OP_CONVERT_LAYOUT)
		return false;
	for (int i = 0; i < d->nops; i++)
		if (ir_is_block(d->ops[i]->type) && d->ops[i]->type->rank == v->type->rank &&
		    from_dot(d->ops[i], depth + 1, budget))
			return true;
	return false;
}

static void plan_store(const AnAxis *ax, IrOp *st, bool all, Plans *out)
{
	IrValue *p = st->ops[0], *m = st->nops >= 3 ? st->ops[2] : NULL;
	if (!ir_is_block(p->type) || !ir_is_ptr(ir_scalar(p->type)))
		return;
	int budget = 256;
	if ((m && ir_scalar(m->type)->kind != TY_I1) || !(all || from_dot(st->ops[1], 0, &budget)))
		return;
	Ver w;
	memset(&w, 0, sizeof w);
	w.ax = ax;
	int d = store_dim(ax, p, &w.vec);
	int cur = an_access_vec(ax, p, m, d, false);
	if (w.vec < 2 || w.vec < 2 * cur)
		return;
	if (!want(&w, p, d, false, w.vec * an_elem_bytes(p->type)) || (m && !want_mask(&w, m, d)) || !w.nleaf)
		return;
	for (int i = 0; i < w.nleaf; i++) {
		int steps = 512;
		if (!reaches(st->parent, p, w.leaf[i].v, &steps) && !(m && reaches(st->parent, m, w.leaf[i].v, &steps)))
			return;
	}
	if (out->n == out->cap) {
		out->cap = out->cap ? out->cap * 2 : 8;
		Plan *np = realloc(out->p, sizeof *out->p * (size_t)out->cap);
		if (!np)
			abort();
		out->p = np;
	}
	Plan *pl = &out->p[out->n++];
	pl->st = st;
	pl->nleaf = 0;
	/* one check per leaf, at the largest divisibility asked of it */
	for (int i = 0; i < w.nleaf; i++) {
		int j = 0;
		while (j < pl->nleaf && pl->leaf[j].v != w.leaf[i].v)
			j++;
		if (j == pl->nleaf)
			pl->leaf[pl->nleaf++] = w.leaf[i];
		else if (w.leaf[i].q > pl->leaf[j].q)
			pl->leaf[j].q = w.leaf[i].q;
	}
}

static void find(const AnAxis *ax, IrBlock *b, bool all, Plans *out)
{
	for (IrOp *op = b->first; op; op = op->next) {
		if (op->opc == OP_WARP_SPEC)
			continue;
		for (int r = 0; r < op->nregions; r++)
			find(ax, op->regions[r], all, out);
		if (op->opc == OP_STORE)
			plan_store(ax, op, all, out);
	}
}

static void apply(IrFunc *f, const Plan *pl)
{
	IrCtx *ctx = f->module->ctx;
	IrOp *st = pl->st;
	IrBuilder b;
	ir_builder_init(&b, ctx);
	ir_builder_before(&b, st);
	b.loc = st->loc;
	IrValue *cond = NULL;
	for (int i = 0; i < pl->nleaf; i++) {
		IrValue *x = pl->leaf[i].v;
		if (ir_is_ptr(x->type))
			x = ir_cast(&b, OP_PTR_TO_INT, x, ir_type(ctx, TY_I64));
		IrValue *low = ir_binary(&b, OP_AND, x, ir_const_int(&b, x->type, pl->leaf[i].q - 1));
		IrValue *c = ir_cmp(&b, "eq", low, ir_const_int(&b, x->type, 0));
		cond = cond ? ir_binary(&b, OP_AND, cond, c) : c;
	}
	IrBuilder t, e;
	IrOp *iff = an_store_if(&b, st, cond, &t, &e);
	ir_op_set_bool(ctx, iff, "versioned", true);
	Ver w;
	memset(&w, 0, sizeof w);
	w.nleaf = pl->nleaf;
	memcpy(w.leaf, pl->leaf, sizeof w.leaf);

	for (int i = 0; i < w.nleaf; i++) {
		IrValue *x = w.leaf[i].v;
		IrValue *h = ir_build1(&t, OP_MULTIPLE_OF, x->type, 1, &x);
		ir_op_set_ints(ctx, h->def, "values", 1, &w.leaf[i].q);
		w.leaf[i].hint = h;
	}
	branch_store(&w, &t, st, true);
	ir_yield(&t, 0, NULL);
	branch_store(&w, &e, st, false);
	ir_yield(&e, 0, NULL);
	ir_op_unlink(st);
}

bool an_version_stores(IrFunc *f, bool all)
{
	if (!f->is_kernel)
		return false;
	const AnAxis *ax = an_axis_info(f);
	Plans ps = {0};
	find(ax, f->body, all, &ps);
	for (int i = 0; i < ps.n; i++)
		apply(f, &ps.p[i]);
	free(ps.p);
	return ps.n > 0;
}
