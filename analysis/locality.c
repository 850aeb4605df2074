/* locality.c: thread locality of reductions that accumulate across a loop
 * (Triton's OptimizeThreadLocality).
 *
 * `acc = acc + tl.sum(x, axis)` in a for loop reduces x across threads in
 * every iteration: shuffles between the lanes along the axis and, when
 * several warps share it, a round through shared memory and a barrier.
 * Only the thread-local part needs to be done per iteration. With x in a
 * blocked layout where each thread owns ept elements along the axis, x is
 * viewed as [..., A / ept, ..., ept] (the new last dim holds each thread's
 * own elements, a reshape that may reorder and moves no data:
 * an_reshape_in_registers), reduced along that last dim inside the thread,
 * and the loop carries those [..., A / ept, ...] partials, one per thread
 * and row, from the combiner's neutral value. After the loop one
 * reduction along the axis does the cross-thread part, and the initial
 * value is folded in. The rewrite is ir_loop_accum_rewrite (shared with
 * the CPU's reduce-lanes), valid for combiners that may be regrouped:
 * integer add/mul/min/max/and/or/xor exactly, float add/mul/min/max up to
 * reassociation.
 */
#include "analysis.h"

#include <string.h>

/* Fills *v (not interned) with the view's layout; false when there is none. */
static bool view_layout(const IrType *t, int axis, IrLayout *v, int64_t *shape3)
{
	const IrLayout *l = ir_is_block(t) ? t->layout : NULL;
	int R = ir_is_block(t) ? t->rank : 0;
	if (!l || l->kind != LAYOUT_BLOCKED || R + 1 > IR_MAX_RANK || axis < 0 || axis >= R)
		return false;
	int spt = l->size_per_thread[axis], tpw = l->threads_per_warp[axis], wpc = l->warps_per_cta[axis];
	int64_t tile = (int64_t)spt * tpw * wpc;
	if (t->shape[axis] < tile)
		return false; /* replicated along the axis */
	int64_t ept = t->shape[axis] / ((int64_t)tpw * wpc);
	memset(v, 0, sizeof *v);
	v->kind = LAYOUT_BLOCKED;
	v->rank = R + 1;
	for (int d = 0; d < R; d++) {
		v->size_per_thread[d] = d == axis ? 1 : l->size_per_thread[d];
		v->threads_per_warp[d] = l->threads_per_warp[d];
		v->warps_per_cta[d] = l->warps_per_cta[d];
		shape3[d] = d == axis ? t->shape[d] / ept : t->shape[d];
	}
	v->size_per_thread[R] = spt;
	v->threads_per_warp[R] = 1;
	v->warps_per_cta[R] = 1;
	shape3[R] = ept;
	/* the new dim takes the axis's place in the register order, the axis
	 * (one register now) follows it: registers, lane and warp strides stay */
	int k = 0;
	for (int i = 0; i < R; i++) {
		if (l->order[i] == axis) {
			v->order[k++] = R;
			v->order[k++] = axis;
		} else {
			v->order[k++] = l->order[i];
		}
	}
	return true;
}

const IrLayout *an_thread_local_view(IrCtx *ctx, const IrType *t, int axis, int64_t *shape3)
{
	IrLayout v;
	return view_layout(t, axis, &v, shape3) ? ir_layout(ctx, &v) : NULL;
}

bool an_reshape_in_registers(const IrOp *op)
{
	if (op->opc != OP_RESHAPE || !ir_op_int(op, "can_reorder", 0))
		return false;
	const IrType *s = op->ops[0]->type, *t = op->res[0].type;
	if (!ir_is_block(s) || !ir_is_block(t) || !t->layout || t->rank != s->rank + 1)
		return false;
	const IrLayout *l = t->layout;
	for (int ax = 0; ax < s->rank; ax++) {
		int64_t sh[IR_MAX_RANK];
		IrLayout v;
		if (!view_layout(s, ax, &v, sh) || l->kind != LAYOUT_BLOCKED)
			continue;
		bool same = true;
		for (int d = 0; d < t->rank; d++)
			same = same && sh[d] == t->shape[d] && v.size_per_thread[d] == l->size_per_thread[d] &&
			       v.threads_per_warp[d] == l->threads_per_warp[d] && v.warps_per_cta[d] == l->warps_per_cta[d] &&
			       v.order[d] == l->order[d];
		if (same)
			return true;
	}
	return false;
}

/* Rewrites red when it matches and its input's layout leaves a
 * cross-thread part and more than one element per thread along the axis. */
static bool localize(IrFunc *f, IrOp *loop, IrOp *red)
{
	IrCtx *ctx = f->module->ctx;
	IrLoopAccum m;
	if (!ir_loop_accum_match(f, loop, red, &m))
		return false;
	const IrType *xt = red->ops[0]->type, *rt = red->res[0].type;
	int axis = (int)ir_op_int(red, "axis", 0), R = xt->rank;
	const IrLayout *l = xt->layout;
	if (!l || l->kind != LAYOUT_BLOCKED || !ir_is_block(rt) || !rt->layout)
		return false;
	int nregs, dl, dw;
	an_blocked_dim(l, xt->shape, axis, &nregs, &dl, &dw);
	if (nregs < 2 || dl * dw < 2)
		return false; /* nothing in-thread to gain, or nothing to save */
	int64_t s3[IR_MAX_RANK], sp[IR_MAX_RANK];
	const IrLayout *v = an_thread_local_view(ctx, xt, axis, s3);
	if (!v)
		return false;
	const IrType *e = ir_scalar(xt);
	const IrType *view = ir_type_block(ctx, e, R + 1, s3, v);
	for (int d = 0; d < R; d++)
		sp[d] = s3[d];
	const IrLayout *pl = an_slice_layout(ctx, R, v);
	const IrType *part = ir_type_block(ctx, e, R, sp, pl);
	const IrType *post = ir_type_with_layout(ctx, rt, an_slice_layout(ctx, axis, pl));
	if (!view || !part || !post)
		return false;
	ir_loop_accum_rewrite(f, &m, view, true, R, part, axis, post);
	return true;
}

static void locality_block(IrFunc *f, IrBlock *b)
{
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			locality_block(f, op->regions[r]);
		if (op->opc != OP_FOR)
			continue;
		for (IrOp *x = op->regions[0]->first, *next; x; x = next) {
			next = x->next;
			if (x->opc == OP_REDUCE)
				localize(f, op, x);
		}
	}
}

void an_thread_locality(IrFunc *f)
{
	locality_block(f, f->body);
}
