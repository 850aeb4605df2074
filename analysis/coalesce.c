/* coalesce.c: the layout each global load and store is done in.
 *
 * Layout assignment (layout.c) anchors every rank on the coalesced layout of
 * its largest access. That one layout does not vectorize every access of the
 * rank: a store whose pointer is contiguous along another dim than the
 * anchor's (a transposed copy), or whose elements are narrower (u8 tiles
 * under a bf16 store's layout), would move one element, or half a vector,
 * per instruction. Such an access gets its own coalesced layout instead,
 * as Triton's coalescing pass gives every access: the backward pass asks
 * for it on the access's pointer and mask (so their producers are born in
 * it) and on a stored value; a value that arrives in another layout (an
 * mma accumulator, a tile loaded along other dims) is converted to it
 * through shared memory. An access the rank's layout already vectorizes as
 * well keeps it: no conversion appears where the layouts agree.
 *
 * The vector width of an access in a layout (an_layout_vec) is the one the
 * backend emits: the run of a thread's consecutive registers that are
 * consecutive elements along the layout's fastest dim, bounded by what axis
 * info proves of the pointer and mask (contiguity, alignment, constancy)
 * and by 128 bits.
 */
#include "analysis.h"

int an_layout_vec(const AnAxis *a, const IrValue *ptr, const IrValue *mask, const IrLayout *l)
{
	const IrType *t = ptr->type;
	if (!ir_is_block(t) || !l)
		return 1;
	int64_t bs[IR_MAX_RANK];
	int map[IR_MAX_RANK], ord[IR_MAX_RANK];
	const IrLayout *b = an_unslice(l, t->rank, t->shape, bs, map);
	an_reg_order(b, ord);
	int d0 = ord[0];
	AnDimDist dd;
	if (!an_dim_dist(b, bs, d0, &dd) || dd.estride != 1)
		return 1;
	int vd = -1;
	for (int k = 0; k < t->rank; k++)
		if (map[k] == d0)
			vd = k;
	if (vd < 0)
		return 1;
	const IrType *e = ir_scalar(t)->elem;
	if (e && ir_scalar(e)->kind == TY_I1)
		return 1;
	int v = an_access_vec(a, ptr, mask, vd, false);
	if (v > dd.spt)
		v = dd.spt;
	if (v > dd.nregs)
		v = dd.nregs;
	return v < 1 ? 1 : v;
}

const IrLayout *an_access_layout(IrCtx *ctx, const AnAxis *a, const IrOp *op, const IrLayout *rank_layout,
				 const AnGpuOptions *o)
{
	if (op->opc != OP_LOAD && op->opc != OP_STORE)
		return rank_layout;
	const IrValue *p = op->ops[0];
	if (!ir_is_block(p->type))
		return rank_layout;
	const IrValue *mask = op->opc == OP_LOAD ? (op->nops > 1 ? op->ops[1] : NULL) : (op->nops > 2 ? op->ops[2] : NULL);
	const IrLayout *c = an_coalesced_layout(ctx, a, p, mask, o->num_warps, o->warp_size);
	if (!rank_layout || rank_layout->rank != p->type->rank)
		return c;
	int vc = an_layout_vec(a, p, mask, c), vr = an_layout_vec(a, p, mask, rank_layout);
	/* the element branch of a versioned store (storever.c) stores as it
	 * would have without the vector branch beside it, whose layout
	 * anchors the rank: a warp's element stores along one row */
	const IrOp *vif = op->parent ? op->parent->parent_op : NULL;
	if (op->opc == OP_STORE && vc == 1 && vr == 1 && vif && vif->opc == OP_IF && vif->nregions == 2 &&
	    vif->regions[1] == op->parent && ir_op_int(vif, "versioned", 0))
		return c;
	return vc > vr ? c : rank_layout;
}
