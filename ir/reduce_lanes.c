/* reduce_lanes.c: ir_loop_reduce_lanes, the CPU's counterpart of Triton's
 * thread-locality optimisation. A reduction along the last axis inside a
 * `for` whose result only accumulates into a loop-carried value (acc = acc
 * (op) reduce(x), op the combiner's) is rewritten: x is viewed as [..., A /
 * L, L] and reduced to L lanes, and the lanes are what the loop carries
 * (starting at op's neutral value); one reduction of the lanes after the
 * loop, combined with the initial value, gives the result. Each iteration
 * then combines whole lanes (vector operations, as the CPU backend lowers a
 * reduction over a middle axis) instead of folding every row into one
 * element; only the last fold is horizontal.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ir.h"

/* The combiner of a one-operand reduce when it is a single binary op on its
 * two arguments (either order) that the lanes may regroup: add, mul, min,
 * max, and, or, xor. NULL otherwise. */
static const IrOp *lane_combiner(const IrOp *red)
{
	const IrBlock *r = red->regions[0];
	const IrOp *c = r->first;
	if (red->nops != 1 || red->nres != 1 || r->nargs != 2 || !c || !c->next || c->next->next || c->nops != 2 ||
	    c->nres != 1 || c->nregions)
		return NULL;
	switch (c->opc) {
	case OP_ADD:
	case OP_MUL:
	case OP_MIN:
	case OP_MAX:
	case OP_AND:
	case OP_OR:
	case OP_XOR:
		break;
	default:
		return NULL;
	}
	bool args = (c->ops[0] == r->args[0] && c->ops[1] == r->args[1]) ||
		    (c->ops[0] == r->args[1] && c->ops[1] == r->args[0]);
	const IrOp *y = c->next;
	if (!args || y->opc != OP_YIELD || y->nops != 1 || y->ops[0] != &c->res[0])
		return NULL;
	return c;
}

static bool same_attrs(const IrOp *a, const IrOp *b)
{
	if (a->nattrs != b->nattrs)
		return false;
	for (int i = 0; i < a->nattrs; i++) {
		const IrAttr *x = &a->attrs[i], *y = &b->attrs[i];
		if (x->name != y->name || x->kind != y->kind || x->i != y->i || x->f != y->f || x->n != y->n ||
		    (x->s != y->s && (!x->s || !y->s || strcmp(x->s, y->s))))
			return false;
	}
	return true;
}

/* The one op using v (anywhere in f), or NULL when v has no use or several. */
static IrOp *only_user_in(IrBlock *b, const IrValue *v, int *n)
{
	IrOp *u = NULL;
	for (IrOp *op = b->first; op; op = op->next) {
		for (int i = 0; i < op->nops; i++)
			if (op->ops[i] == v) {
				u = op;
				(*n)++;
			}
		for (int r = 0; r < op->nregions; r++) {
			IrOp *x = only_user_in(op->regions[r], v, n);
			u = x ? x : u;
		}
	}
	return u;
}

static IrOp *only_user(IrFunc *f, const IrValue *v)
{
	int n = 0;
	IrOp *u = only_user_in(f->body, v, &n);
	return n == 1 ? u : NULL;
}

/* The value x with x (op) y == y for the combiner op on t's element type. */
static IrValue *neutral(IrBuilder *b, const IrOp *c, const IrType *t)
{
	const IrType *e = ir_scalar(t);
	if (ir_is_float(e)) {
		double v = c->opc == OP_ADD ? 0.0 : c->opc == OP_MUL ? 1.0 : c->opc == OP_MAX ? -INFINITY : INFINITY;
		return ir_const_float(b, t, v);
	}
	int bits = ir_type_bits(e);
	bool sg = ir_is_signed(e);
	int64_t top = bits >= 64 ? INT64_MAX : (int64_t)((1ull << (bits - 1)) - 1);
	int64_t v = 0;
	switch (c->opc) {
	case OP_MUL:
		v = 1;
		break;
	case OP_AND:
		v = -1;
		break;
	case OP_MAX:
		v = sg ? -top - 1 : 0;
		break;
	case OP_MIN:
		v = sg ? top : -1;
		break;
	default:
		v = 0;
		break;
	}
	return ir_const_int(b, t, v);
}

/* A reduce like red (its combiner c cloned) of x along axis, typed rt. */
static IrValue *build_reduce(IrBuilder *b, const IrOp *c, IrValue *x, int axis, const IrType *rt)
{
	IrOp *r = ir_build(b, OP_REDUCE, 1, &x, 1, &rt, 1);
	ir_op_set_int(b->ctx, r, "axis", axis);
	IrBlock *rb = r->regions[0];
	const IrType *e = ir_scalar(x->type);
	IrValue *a[2] = {ir_block_add_arg(b->ctx, rb, e), ir_block_add_arg(b->ctx, rb, e)};
	IrBuilder in = *b;
	ir_builder_at_end(&in, rb);
	IrOp *k = ir_build(&in, c->opc, 2, a, 1, &e, 0);
	k->nattrs = c->nattrs;
	k->attrs = c->attrs;
	IrValue *kr = &k->res[0];
	ir_yield(&in, 1, &kr);
	return &r->res[0];
}

bool ir_loop_accum_match(IrFunc *f, IrOp *loop, IrOp *red, IrLoopAccum *m)
{
	IrBlock *body = loop->regions[0];
	const IrOp *c = lane_combiner(red);
	IrValue *x = red->ops[0];
	const IrType *xt = x->type, *rt = red->res[0].type;
	if (!c || loop->opc != OP_FOR || red->parent != body || !ir_is_block(xt) || xt->rank + 1 > IR_MAX_RANK)
		return false;
	const IrType *e = ir_scalar(xt);
	if (e->kind == TY_I1 || ir_scalar(rt) != e || c->res[0].type != e)
		return false;
	IrOp *u = only_user(f, &red->res[0]);
	if (!u || u->parent != body || u->opc != c->opc || u->nops != 2 || u->res[0].type != rt || !same_attrs(u, c))
		return false;
	int ri = u->ops[0] == &red->res[0] ? 0 : 1;
	IrValue *acc = u->ops[1 - ri];
	if (acc->def || acc->owner != body || acc->index < 1 || acc->type != rt || ir_count_uses(f, acc) != 1)
		return false;
	int ci = acc->index - 1; /* carried value ci: operand 3 + ci, result ci */
	IrOp *y = ir_block_terminator(body);
	if (only_user(f, &u->res[0]) != y || y->ops[ci] != &u->res[0])
		return false;
	*m = (IrLoopAccum){loop, red, u, c, ri, ci};
	return true;
}

void ir_loop_accum_rewrite(IrFunc *f, const IrLoopAccum *m, const IrType *view, bool reorder, int part_axis,
			   const IrType *part, int post_axis, const IrType *post)
{
	IrCtx *ctx = f->module->ctx;
	IrOp *loop = m->loop, *red = m->red, *u = m->upd;
	IrBlock *body = loop->regions[0];
	const IrOp *c = m->comb;
	int ri = m->ri, ci = m->ci;
	IrValue *x = red->ops[0];
	IrValue *acc = u->ops[1 - ri];
	const IrType *rt = red->res[0].type;

	IrBuilder b;
	ir_builder_init(&b, ctx);
	ir_builder_before(&b, red);
	b.loc = red->loc;
	IrValue *x3 = ir_build1(&b, OP_RESHAPE, view, 1, &x);
	if (reorder)
		ir_op_set_bool(ctx, x3->def, "can_reorder", true);
	IrValue *pv = build_reduce(&b, c, x3, part_axis, part);
	ir_op_set_operand(u, ri, pv);
	u->res[0].type = part;
	acc->type = part;
	loop->res[ci].type = part;
	ir_op_unlink(red);

	IrValue *init = loop->ops[3 + ci];
	ir_builder_before(&b, loop);
	ir_op_set_operand(loop, 3 + ci, neutral(&b, c, part));

	/* after the loop: reduce the partials, then fold in the initial value */
	if (loop->next)
		ir_builder_before(&b, loop->next);
	else
		ir_builder_at_end(&b, loop->parent);
	IrValue *out = &loop->res[ci];
	IrValue *q = build_reduce(&b, c, out, post_axis, post);
	IrOp *qr = q->def;
	if (post != rt)
		q = ir_build1(&b, OP_CONVERT_LAYOUT, rt, 1, &q);
	IrValue *ops[2];
	ops[ri] = q;
	ops[1 - ri] = init;
	IrOp *fin = ir_build(&b, u->opc, 2, ops, 1, &rt, 0);
	fin->nattrs = u->nattrs;
	fin->attrs = u->attrs;
	ir_replace_all_uses(f, out, &fin->res[0]);
	ir_op_set_operand(qr, 0, out);
	(void)body;
}

/* Rewrites red (in loop's body) when its result only accumulates into a
 * loop-carried value: acc = acc (op) reduce(x) with the combiner's op. */
static bool lanes_rewrite(IrFunc *f, IrOp *loop, IrOp *red, int lanes)
{
	IrCtx *ctx = f->module->ctx;
	IrLoopAccum m;
	if (!ir_loop_accum_match(f, loop, red, &m))
		return false;
	const IrType *xt = red->ops[0]->type, *rt = red->res[0].type;
	if (ir_op_int(red, "axis", -1) != xt->rank - 1)
		return false;
	const IrType *e = ir_scalar(xt);
	int64_t a = xt->shape[xt->rank - 1];
	if (a % lanes || a < 2 * lanes)
		return false;

	/* the lane types: x viewed as [..., a / lanes, lanes], partials [..., lanes] */
	int64_t s3[IR_MAX_RANK], sl[IR_MAX_RANK];
	for (int d = 0; d < xt->rank - 1; d++)
		s3[d] = sl[d] = xt->shape[d];
	s3[xt->rank - 1] = a / lanes;
	s3[xt->rank] = lanes;
	sl[xt->rank - 1] = lanes;
	const IrType *t3 = ir_type_block(ctx, e, xt->rank + 1, s3, NULL);
	const IrType *tl = ir_type_block(ctx, e, xt->rank, sl, NULL);
	if (!t3 || !tl)
		return false;
	ir_loop_accum_rewrite(f, &m, t3, false, xt->rank - 1, tl, xt->rank - 1, rt);
	return true;
}

static void lanes_block(IrFunc *f, IrBlock *b, int lanes)
{
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			lanes_block(f, op->regions[r], lanes);
		if (op->opc != OP_FOR)
			continue;
		for (IrOp *x = op->regions[0]->first, *next; x; x = next) {
			next = x->next;
			if (x->opc == OP_REDUCE)
				lanes_rewrite(f, op, x, lanes);
		}
	}
}

IrError *ir_loop_reduce_lanes(IrModule *m, int lanes)
{
	if (lanes < 1 || (lanes & (lanes - 1)))
		return ir_error(m->ctx, IR_ERR_VALUE, (IrLoc){0}, "reduce lanes: %d is not a power of two", lanes);
	for (int i = 0; i < m->nfuncs; i++)
		lanes_block(m->funcs[i], m->funcs[i]->body, lanes);
	return NULL;
}
