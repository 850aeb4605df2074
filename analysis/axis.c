/* axis.c: axis info, a forward dataflow over the IR that tells, per value
 * and per dim, how long the runs of contiguous (+1) and of equal elements
 * are, and the largest power of two dividing every element. Sources are
 * make_range, constants, the "divisibility" attribute of parameters (and,
 * for the block parameters of a called function, the "contiguity",
 * "divisibility" and "constancy" its call sites agree on:
 * an_axis_seed_callees) and the
 * multiple_of / max_contiguous / max_constancy hints; the rules for
 * splat/broadcast/expand_dims/add/sub/mul/addptr/cmp/select follow the usual
 * gcd arithmetic. Values carried by `for` loops are met with what the body
 * yields until a fixpoint; everything else gets the conservative answer (1).
 */
#include "analysis.h"

#include <string.h>

struct AnAxis {
	int n;
	AnAxisInfo *info;
	AnAxisInfo unknown;
};

#define BIG_DIV ((int64_t)1 << 30)

static int64_t gcd64(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

static int64_t pow2_div(int64_t c)
{
	if (c == 0)
		return BIG_DIV;
	int64_t p = 1;
	while (p < BIG_DIV && (c % (p * 2)) == 0)
		p *= 2;
	return p;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static int64_t floor_pow2(int64_t x)
{
	int64_t p = 1;
	while (p * 2 <= x)
		p *= 2;
	return p;
}

/* ------------------------------------------------------------------------- */

typedef struct NumCtx {
	int n;
} NumCtx;

static void number_block(IrBlock *b, int *n);

static void number_op(IrOp *op, int *n)
{
	for (int i = 0; i < op->nres; i++)
		op->res[i].id = (*n)++;
	for (int r = 0; r < op->nregions; r++)
		number_block(op->regions[r], n);
}

static void number_block(IrBlock *b, int *n)
{
	for (int i = 0; i < b->nargs; i++)
		b->args[i]->id = (*n)++;
	for (IrOp *op = b->first; op; op = op->next)
		number_op(op, n);
}

int an_number_values(IrFunc *f)
{
	int n = 0;
	number_block(f->body, &n);
	return n;
}

/* ------------------------------------------------------------------------- */

static AnAxisInfo conservative(const IrType *t)
{
	AnAxisInfo r;
	memset(&r, 0, sizeof r);
	r.rank = ir_is_block(t) ? t->rank : 0;
	for (int d = 0; d < IR_MAX_RANK; d++) {
		r.contig[d] = 1;
		r.div[d] = 1;
		r.constancy[d] = 1;
		r.prefix[d] = 1;
	}
	return r;
}

static int64_t dimsize(const IrType *t, int d)
{
	return ir_is_block(t) ? t->shape[d] : 1;
}

/* All elements equal, divisible by div. */
static AnAxisInfo uniform(const IrType *t, int64_t div)
{
	AnAxisInfo r = conservative(t);
	for (int d = 0; d < IR_MAX_RANK; d++) {
		r.div[d] = div;
		r.constancy[d] = r.prefix[d] = d < r.rank ? t->shape[d] : 1;
	}
	return r;
}

const AnAxisInfo *an_axis_get(const AnAxis *a, const IrValue *v)
{
	if (!v || v->id < 0 || v->id >= a->n)
		return &a->unknown;
	return &a->info[v->id];
}

static int elem_bytes(const IrType *t)
{
	const IrType *s = ir_scalar(t);
	if (ir_is_ptr(s))
		s = s->elem;
	int b = ir_type_bits(s) / 8;
	return b < 1 ? 1 : b;
}

static bool const_value(const IrOp *op, int64_t *v)
{
	if (!op || op->opc != OP_CONSTANT)
		return false;
	const IrAttr *a = ir_op_attr(op, "value");
	if (!a || (a->kind != ATTR_INT && a->kind != ATTR_BOOL))
		return false;
	*v = a->i;
	return true;
}

/* The divisibility that holds for the elements of x at positions along d
 * that are multiples of c (the first elements of the aligned runs of length
 * c of a result computed from x). div[d] is promised only for the first
 * element of each of x's contiguous runs; inside a run the values step by
 * `step` (1, or the element size for pointers, whose div is in bytes), so
 * when the c-runs start inside x's runs only gcd(div, c * step) is left
 * (1 for c = 1 and a contiguous x: arange(0, 8) * 2 is not all multiples
 * of 2^30). */
static int64_t div_at(const AnAxisInfo *x, int d, int64_t c, int64_t step)
{
	int64_t cx = x->contig[d] < 1 ? 1 : x->contig[d];
	if (c < 1)
		c = 1;
	if (c % cx == 0)
		return x->div[d];
	int64_t g = gcd64(x->div[d], gcd64(c, cx) * step);
	return g < 1 ? 1 : g;
}

static int64_t step_of(const IrType *t)
{
	return ir_is_ptr(ir_scalar(t)) ? elem_bytes(t) : 1;
}

int an_elem_bytes(const IrType *t)
{
	return elem_bytes(t);
}

int64_t an_div_at(const AnAxisInfo *x, int d, int64_t c, int64_t step)
{
	return div_at(x, d, c, step);
}

static bool pred_is(const IrOp *op, const char *p)
{
	return strcmp(ir_op_str(op, "pred", "eq"), p) == 0;
}

static bool join_into(AnAxisInfo *dst, const AnAxisInfo *src, int64_t step);

static AnAxisInfo visit_facts(AnAxis *a, IrFunc *f, IrOp *op, int ri)
{
	const IrType *t = op->res[ri].type;
	AnAxisInfo r = conservative(t);
	const AnAxisInfo *x = op->nops > 0 ? an_axis_get(a, op->ops[0]) : NULL;
	const AnAxisInfo *y = op->nops > 1 ? an_axis_get(a, op->ops[1]) : NULL;
	int rank = r.rank;
	int64_t c;
	/* a select on one condition for the whole value (a scalar: a
	 * flattened nest's inner induction value, select(first, lb, j)) is one
	 * operand or the other: what both guarantee */
	if (op->opc == OP_SELECT && !ir_is_block(op->ops[0]->type)) {
		r = *an_axis_get(a, op->ops[1]);
		join_into(&r, an_axis_get(a, op->ops[2]), step_of(t));
		return r;
	}
	switch (op->opc) {
	case OP_INLINE_ASM: /* nothing known of what the asm computes */
	case OP_MAP_ELEM:   /* nor of what the mapped function does */
		return r;
	case OP_CONSTANT:
		if (const_value(op, &c))
			return uniform(t, pow2_div(c));
		return uniform(t, 1);
	case OP_MAKE_RANGE: {
		int64_t start = ir_op_int(op, "start", 0);
		r.contig[0] = t->shape[0];
		r.div[0] = pow2_div(start);
		return r;
	}
	case OP_SPLAT:
		return uniform(t, x->div[0]);
	case OP_PROGRAM_ID:
	case OP_NUM_PROGRAMS:
		return uniform(t, 1);
	case OP_BROADCAST:
		for (int d = 0; d < rank; d++) {
			const IrType *st = op->ops[0]->type;
			if (dimsize(st, d) == 1 && t->shape[d] != 1) {
				r.contig[d] = 1;
				r.div[d] = x->div[d];
				r.constancy[d] = t->shape[d];
			} else {
				r.contig[d] = x->contig[d];
				r.div[d] = x->div[d];
				r.constancy[d] = x->constancy[d];
			}
		}
		return r;
	case OP_EXPAND_DIMS: {
		int axis = (int)ir_op_int(op, "axis", 0);
		int xr = x->rank;
		for (int d = 0, s = 0; d < rank; d++) {
			if (d == axis) {
				/* Runs along the new dim have length 1 and start at
				 * every element: its divisibility is what holds for
				 * every element, 1 along a dim where x is contiguous
				 * (consecutive values), the run's divisibility along
				 * a dim where x is constant or arbitrary. */
				r.contig[d] = 1;
				r.constancy[d] = 1;
				r.div[d] = BIG_DIV;
				for (int k = 0; k < xr; k++)
					r.div[d] = min64(r.div[d], x->contig[k] > 1 ? 1 : x->div[k]);
				continue;
			}
			r.contig[d] = x->contig[s];
			r.div[d] = x->div[s];
			r.constancy[d] = x->constancy[s];
			s++;
		}
		return r;
	}
	case OP_CONVERT_LAYOUT:
		return *x;
	case OP_MULTIPLE_OF:
	case OP_MAX_CONTIGUOUS:
	case OP_MAX_CONSTANCY: {
		r = *x;
		const IrAttr *at = ir_op_attr(op, "values");
		for (int d = 0; at && d < at->n && d < IR_MAX_RANK; d++) {
			int64_t v = floor_pow2(at->ints[d] > 0 ? at->ints[d] : 1);
			if (op->opc == OP_MULTIPLE_OF)
				r.div[d] = max64(r.div[d], v);
			else if (op->opc == OP_MAX_CONTIGUOUS)
				r.contig[d] = max64(r.contig[d], v);
			else
				r.constancy[d] = max64(r.constancy[d], v);
		}
		return r;
	}
	case OP_ADD:
	case OP_SUB:
	case OP_ADDPTR: {
		if (ir_is_float(ir_scalar(t)))
			break;
		int64_t scale = op->opc == OP_ADDPTR ? elem_bytes(t) : 1;
		for (int d = 0; d < IR_MAX_RANK; d++) {
			if (d < rank) {
				int64_t cx = x->contig[d], cy = y->contig[d];
				int64_t kx = x->constancy[d], ky = y->constancy[d];
				if (op->opc == OP_SUB)
					r.contig[d] = gcd64(cx, ky); /* x - const run */
				else
					r.contig[d] = max64(gcd64(cx, ky), gcd64(kx, cy));
				r.constancy[d] = gcd64(kx, ky);
			}
			int64_t rc = d < rank ? r.contig[d] : 1;
			r.div[d] = gcd64(div_at(x, d, rc, step_of(op->ops[0]->type)),
					 div_at(y, d, rc, 1) * scale);
		}
		return r;
	}
	case OP_MUL: {
		if (ir_is_float(ir_scalar(t)))
			break;
		int64_t cx = 0, cy = 0;
		bool xc = op->ops[0]->def && const_value(op->ops[0]->def, &cx);
		bool yc = op->ops[1]->def && const_value(op->ops[1]->def, &cy);
		for (int d = 0; d < IR_MAX_RANK; d++) {
			if (d < rank) {
				r.constancy[d] = gcd64(x->constancy[d], y->constancy[d]);
				if (yc && cy == 1)
					r.contig[d] = x->contig[d];
				else if (xc && cx == 1)
					r.contig[d] = y->contig[d];
			}
			int64_t rc = d < rank ? r.contig[d] : 1;
			r.div[d] = min64(BIG_DIV, div_at(x, d, rc, 1) * div_at(y, d, rc, 1));
		}
		return r;
	}
	case OP_CMP:
	case OP_AND:
	case OP_OR:
	case OP_XOR:
	case OP_SELECT:
	case OP_DIV:
	case OP_REM:
	case OP_SHL:
	case OP_SHR:
	case OP_MIN:
	case OP_MAX:
	case OP_CAST:
	case OP_NEG:
	case OP_NOT: {
		/* constancy: runs equal in every operand stay equal. An aligned
		 * contiguous run x0 .. x0+k-1 (x0 and y multiples of k) compared
		 * with a value y constant over it gives one result for lt and ge
		 * (offs < n with n divisible by 16): x0 < y means x0 + k - 1 < y.
		 * Not for le/gt/eq/ne: at x0 == y, x0 <= y but x0 + 1 > y. With
		 * the run on the right (y0 .. y0+k-1 against a constant x) the
		 * constant predicates are gt and le. */
		for (int d = 0; d < rank; d++) {
			int64_t k = BIG_DIV;
			for (int i = 0; i < op->nops; i++)
				k = gcd64(k, an_axis_get(a, op->ops[i])->constancy[d]);
			if (op->opc == OP_CMP && y && !ir_is_float(ir_scalar(op->ops[0]->type))) {
				int64_t k1 = gcd64(x->contig[d], gcd64(x->div[d], y->div[d]));
				if (k1 > 1 && y->contig[d] == 1 && y->constancy[d] % k1 == 0 &&
				    (pred_is(op, "lt") || pred_is(op, "ge")))
					k = max64(k, k1);
				int64_t k2 = gcd64(y->contig[d], gcd64(y->div[d], x->div[d]));
				if (k2 > 1 && x->contig[d] == 1 && x->constancy[d] % k2 == 0 &&
				    (pred_is(op, "gt") || pred_is(op, "le")))
					k = max64(k, k2);
			}
			r.constancy[d] = k < 1 ? 1 : min64(k, t->shape[d]);
		}
		/* x % n, n the same over a run and divisible by d: a contiguous
		 * run of x aligned to d stays contiguous (offsets % M) */
		if (op->opc == OP_REM && y && !ir_is_float(ir_scalar(t))) {
			for (int d = 0; d < rank; d++) {
				int64_t run = gcd64(x->contig[d], gcd64(y->div[d], x->div[d]));
				if (y->constancy[d] >= run)
					r.contig[d] = max64(1, run);
			}
			for (int d = 0; d < IR_MAX_RANK; d++) {
				int64_t rc = d < rank ? r.contig[d] : 1;
				r.div[d] = gcd64(div_at(x, d, rc, 1), div_at(y, d, rc, 1));
			}
		}
		if (op->opc == OP_SHL && op->ops[1]->def) {
			int64_t s;
			if (const_value(op->ops[1]->def, &s) && s >= 0 && s < 30)
				for (int d = 0; d < IR_MAX_RANK; d++)
					r.div[d] = min64(BIG_DIV, div_at(x, d, 1, 1) << s);
		}
		if (op->opc == OP_DIV && op->ops[1]->def && !ir_is_float(ir_scalar(t))) {
			int64_t s;
			if (const_value(op->ops[1]->def, &s) && s > 0 && (s & (s - 1)) == 0)
				for (int d = 0; d < IR_MAX_RANK; d++)
					r.div[d] = max64(1, div_at(x, d, 1, 1) / s);
		}
		if (op->opc == OP_CAST && ir_is_int(ir_scalar(t)))
			for (int d = 0; d < IR_MAX_RANK; d++)
				r.div[d] = div_at(x, d, 1, 1);
		return r;
	}
	default:
		break;
	}
	/* Elementwise results of all-constant operands are constant. */
	if (ir_opinfo(op->opc)->flags & IR_ELEM) {
		for (int d = 0; d < rank; d++) {
			int64_t k = BIG_DIV;
			for (int i = 0; i < op->nops; i++)
				k = gcd64(k, an_axis_get(a, op->ops[i])->constancy[d]);
			r.constancy[d] = min64(k, t->shape[d]);
		}
	}
	(void)f;
	return r;
}

static void visit_block(AnAxis *a, IrFunc *f, IrBlock *b);
static AnAxisInfo visit(AnAxis *a, IrFunc *f, IrOp *op, int ri);

/* Meet of two facts about one value: what both guarantee. */
static bool join_into(AnAxisInfo *dst, const AnAxisInfo *src, int64_t step)
{
	bool changed = false;
	if (src->any)
		return false;
	if (dst->any) {
		*dst = *src;
		return true;
	}
	for (int d = 0; d < IR_MAX_RANK; d++) {
		int64_t c = gcd64(dst->contig[d], src->contig[d]);
		int64_t v = gcd64(div_at(dst, d, c, step), div_at(src, d, c, step));
		int64_t k = gcd64(dst->constancy[d], src->constancy[d]);
		int64_t q = max64(k, gcd64(dst->prefix[d], src->prefix[d]));
		changed |= c != dst->contig[d] || v != dst->div[d] || k != dst->constancy[d] || q != dst->prefix[d];
		dst->contig[d] = c < 1 ? 1 : c;
		dst->div[d] = v < 1 ? 1 : v;
		dst->constancy[d] = k < 1 ? 1 : k;
		dst->prefix[d] = q < 1 ? 1 : q;
	}
	return changed;
}

/* A `for` loop: the carried values start from their initial values and are
 * met with what the body yields until nothing changes (facts only shrink,
 * so a few rounds suffice; after too many the answer is the conservative
 * one). The induction variable is divisible by gcd(lower bound, step). */
static void visit_for(AnAxis *a, IrFunc *f, IrOp *op)
{
	IrBlock *rb = op->regions[0];
	int ncar = rb->nargs - 1;
	if (op->nops < 3 || ncar < 0 || op->nops - 3 != ncar) {
		for (int i = 0; i < rb->nargs; i++)
			a->info[rb->args[i]->id] = conservative(rb->args[i]->type);
		visit_block(a, f, rb);
		return;
	}
	AnAxisInfo iv = conservative(rb->args[0]->type);
	for (int d = 0; d < IR_MAX_RANK; d++)
		iv.div[d] = gcd64(an_axis_get(a, op->ops[0])->div[0], an_axis_get(a, op->ops[2])->div[0]);
	a->info[rb->args[0]->id] = iv;
	for (int i = 0; i < ncar; i++)
		a->info[rb->args[1 + i]->id] = *an_axis_get(a, op->ops[3 + i]);
	IrOp *y = rb->last;
	bool ok = false;
	for (int round = 0; round < 6; round++) {
		visit_block(a, f, rb);
		if (!y || y->opc != OP_YIELD || y->nops != ncar)
			break;
		bool changed = false;
		for (int i = 0; i < ncar; i++)
			changed |= join_into(&a->info[rb->args[1 + i]->id], an_axis_get(a, y->ops[i]),
					     step_of(rb->args[1 + i]->type));
		if (!changed) {
			ok = true;
			break;
		}
	}
	if (!ok) {
		for (int i = 0; i < ncar; i++)
			a->info[rb->args[1 + i]->id] = conservative(rb->args[1 + i]->type);
		visit_block(a, f, rb);
	}
	for (int i = 0; i < op->nres && i < ncar; i++)
		a->info[op->res[i].id] = ok ? a->info[rb->args[1 + i]->id]
					    : conservative(op->res[i].type);
}

/* An `if`: its regions first, then each result is what both regions'
 * yields guarantee (a flattened nest's tile switch: the tile's offsets
 * keep their divisibility). */
static void visit_if(AnAxis *a, IrFunc *f, IrOp *op)
{
	for (int r = 0; r < op->nregions; r++) {
		IrBlock *rb = op->regions[r];
		for (int i = 0; i < rb->nargs; i++)
			a->info[rb->args[i]->id] = conservative(rb->args[i]->type);
		visit_block(a, f, rb);
	}
	IrOp *t0 = op->nregions == 2 ? ir_block_terminator(op->regions[0]) : NULL;
	IrOp *t1 = op->nregions == 2 ? ir_block_terminator(op->regions[1]) : NULL;
	for (int i = 0; i < op->nres; i++) {
		if (!t0 || !t1 || t0->opc != OP_YIELD || t1->opc != OP_YIELD || i >= t0->nops || i >= t1->nops) {
			a->info[op->res[i].id] = conservative(op->res[i].type);
			continue;
		}
		AnAxisInfo r = *an_axis_get(a, t0->ops[i]);
		join_into(&r, an_axis_get(a, t1->ops[i]), step_of(op->res[i].type));
		a->info[op->res[i].id] = r;
	}
}

static void visit_block(AnAxis *a, IrFunc *f, IrBlock *b)
{
	for (IrOp *op = b->first; op; op = op->next) {
		if (op->opc == OP_IF) {
			visit_if(a, f, op);
			continue;
		}
		for (int i = 0; i < op->nres; i++)
			a->info[op->res[i].id] = visit(a, f, op, i);
		if (op->opc == OP_FOR && op->nregions == 1) {
			visit_for(a, f, op);
			continue;
		}
		for (int r = 0; r < op->nregions; r++) {
			IrBlock *rb = op->regions[r];
			for (int i = 0; i < rb->nargs; i++)
				a->info[rb->args[i]->id] = conservative(rb->args[i]->type);
			visit_block(a, f, rb);
		}
	}
}

static AnAxisInfo param_info(const IrFunc *f, int i);

AnAxis *an_axis_info(IrFunc *f)
{
	IrCtx *ctx = f->module->ctx;
	AnAxis *a = ir_alloc(ctx, sizeof *a);
	a->n = an_number_values(f);
	a->info = ir_alloc(ctx, sizeof(AnAxisInfo) * (size_t)(a->n + 1));
	a->unknown = conservative(ir_type(ctx, TY_I32));
	IrBlock *body = f->body;
	for (int i = 0; i < body->nargs; i++)
		a->info[body->args[i]->id] = param_info(f, i);
	visit_block(a, f, body);
	return a;
}

/* ------------------------------------------------------------------------- */
/* Parameters of called functions                                            */
/* ------------------------------------------------------------------------- */

static const IrAttr *param_attr(const IrFunc *f, int i, const char *name, IrAttrKind kind, int n)
{
	const IrAttr *a = f->params ? ir_find_attr(f->params[i].nattrs, f->params[i].attrs, name) : NULL;
	return a && a->kind == kind && (kind != ATTR_INTS || a->n == n) ? a : NULL;
}

/* What parameter i of f is known to be: a scalar (a kernel's pointer or
 * integer, a callee's scalar) is one value, divisible by its
 * "divisibility"; a block parameter of a callee has per-dim "contiguity",
 * "divisibility" and "constancy" (an_axis_seed_callees), else nothing. */
static AnAxisInfo param_info(const IrFunc *f, int i)
{
	const IrType *t = f->body->args[i]->type;
	if (!ir_is_block(t)) {
		const IrAttr *d = param_attr(f, i, "divisibility", ATTR_INT, 0);
		return uniform(t, d && d->i > 0 ? floor_pow2(d->i) : 1);
	}
	AnAxisInfo r = conservative(t);
	const IrAttr *c = param_attr(f, i, "contiguity", ATTR_INTS, t->rank);
	const IrAttr *d = param_attr(f, i, "divisibility", ATTR_INTS, t->rank);
	const IrAttr *k = param_attr(f, i, "constancy", ATTR_INTS, t->rank);
	if (!c || !d || !k)
		return r;
	for (int j = 0; j < t->rank; j++) {
		r.contig[j] = c->ints[j] >= 1 && c->ints[j] <= t->shape[j] ? floor_pow2(c->ints[j]) : 1;
		r.div[j] = d->ints[j] >= 1 ? floor_pow2(d->ints[j]) : 1;
		r.constancy[j] = k->ints[j] >= 1 && k->ints[j] <= t->shape[j] ? floor_pow2(k->ints[j]) : 1;
		r.prefix[j] = r.constancy[j];
	}
	return r;
}

static void seed_param(IrCtx *ctx, IrFunc *g, int i, const AnAxisInfo *x)
{
	const IrType *t = g->body->args[i]->type;
	IrParam *p = &g->params[i];
	if (!ir_is_block(t)) {
		const IrAttr *d = param_attr(g, i, "divisibility", ATTR_INT, 0);
		int64_t v = d ? gcd64(d->i, x->div[0]) : x->div[0];
		ir_set_attr_int(ctx, &p->nattrs, &p->attrs, "divisibility", v < 1 ? 1 : v);
		return;
	}
	AnAxisInfo m = *x;
	if (param_attr(g, i, "contiguity", ATTR_INTS, t->rank)) {
		AnAxisInfo old = param_info(g, i);
		join_into(&m, &old, step_of(t));
	}
	static const char *const names[3] = {"contiguity", "divisibility", "constancy"};
	for (int q = 0; q < 3; q++) {
		const int64_t *from = q == 0 ? m.contig : q == 1 ? m.div : m.constancy;
		IrAttr a = {.name = names[q], .kind = ATTR_INTS, .n = t->rank};
		a.ints = ir_alloc(ctx, sizeof(int64_t) * (size_t)t->rank);
		memcpy(a.ints, from, sizeof(int64_t) * (size_t)t->rank);
		ir_set_attr(ctx, &p->nattrs, &p->attrs, &a);
	}
}

static void seed_block(IrCtx *ctx, const AnAxis *a, IrBlock *b)
{
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			seed_block(ctx, a, op->regions[r]);
		IrFunc *g = op->opc == OP_CALL ? an_callee(op) : NULL;
		if (!g || g->body->nargs != op->nops)
			continue;
		if (!g->params)
			g->params = ir_alloc(ctx, sizeof(IrParam) * (size_t)(g->body->nargs + 1));
		for (int i = 0; i < op->nops; i++)
			seed_param(ctx, g, i, an_axis_get(a, op->ops[i]));
	}
}

/* The prefix facts of op's result (AnAxisInfo.prefix), given its other
 * facts in *r. A run of x0 .. x0+k-1 (contiguous) against a y constant over
 * it is true then false for lt and le (for gt and ge with the run on the
 * right), whatever x0 is; the AND or OR of prefixes is one; shape ops move
 * them like constancy. Anything else: its constancy. */
static void visit_prefix(AnAxis *a, const IrOp *op, int ri, AnAxisInfo *r)
{
	const IrType *t = op->res[ri].type;
	const AnAxisInfo *x = op->nops > 0 ? an_axis_get(a, op->ops[0]) : NULL;
	const AnAxisInfo *y = op->nops > 1 ? an_axis_get(a, op->ops[1]) : NULL;
	int axis = op->opc == OP_EXPAND_DIMS ? (int)ir_op_int(op, "axis", 0) : -1;
	for (int d = 0; d < IR_MAX_RANK; d++) {
		int64_t p = r->constancy[d];
		if (d < r->rank && x) {
			switch (op->opc) {
			case OP_CONVERT_LAYOUT:
			case OP_MULTIPLE_OF:
			case OP_MAX_CONTIGUOUS:
			case OP_MAX_CONSTANCY:
				p = max64(p, x->prefix[d]);
				break;
			case OP_BROADCAST:
				p = max64(p, dimsize(op->ops[0]->type, d) == 1 ? t->shape[d] : x->prefix[d]);
				break;
			case OP_EXPAND_DIMS:
				if (d != axis)
					p = max64(p, x->prefix[d < axis || axis < 0 ? d : d - 1]);
				break;
			case OP_AND:
			case OP_OR:
				if (y)
					p = max64(p, gcd64(x->prefix[d], y->prefix[d]));
				break;
			case OP_CMP:
				if (!y || ir_is_float(ir_scalar(op->ops[0]->type)))
					break;
				if (pred_is(op, "lt") || pred_is(op, "le"))
					p = max64(p, gcd64(x->contig[d], y->constancy[d]));
				else if (pred_is(op, "gt") || pred_is(op, "ge"))
					p = max64(p, gcd64(y->contig[d], x->constancy[d]));
				break;
			default:
				break;
			}
			p = min64(p, t->shape[d]);
		}
		r->prefix[d] = p < 1 ? 1 : p;
	}
}

static AnAxisInfo visit(AnAxis *a, IrFunc *f, IrOp *op, int ri)
{
	if (op->opc == OP_POISON) {
		/* never read where it matters (a flattened nest's carried tile
		 * offsets before the first tile's): whatever the other side of
		 * a meet says; the facts of a splat of 0 for ops that read it */
		AnAxisInfo r = uniform(op->res[ri].type, BIG_DIV);
		r.any = true;
		return r;
	}
	AnAxisInfo r = visit_facts(a, f, op, ri);
	visit_prefix(a, op, ri, &r);
	return r;
}

void an_axis_seed_callees(IrFunc *f, const AnAxis *a)
{
	seed_block(f->module->ctx, a, f->body);
}

int an_access_vec(const AnAxis *a, const IrValue *ptr, const IrValue *mask, int dim, bool zfill)
{
	if (!ir_is_block(ptr->type))
		return 1;
	const AnAxisInfo *p = an_axis_get(a, ptr);
	int eb = elem_bytes(ptr->type);
	int64_t vec = min64(p->contig[dim], max64(1, p->div[dim] / eb));
	vec = min64(vec, max64(1, 16 / eb));
	if (mask && ir_is_block(mask->type) && ir_scalar(mask->type)->kind == TY_I1)
		vec = min64(vec, zfill ? an_axis_get(a, mask)->prefix[dim] : an_axis_get(a, mask)->constancy[dim]);
	vec = min64(vec, ptr->type->shape[dim]);
	return (int)floor_pow2(max64(vec, 1));
}
