/* tmastore.c: descriptor stores through the tensor memory access unit.
 *
 * A descriptor store (`desc.store(offsets, value)`) reaches the IR as a
 * masked store of the block's pointers with a tensor-map tail (store
 * {tma = 3}: the map, then the two offsets; python/frontend/fe_tdesc.c).
 * On sm_90, in a kernel, when the value is a 2-D block the map's box
 * covers (its rows, in whole 128-byte column blocks or one narrower
 * block) and the map is a TensorDescriptor argument's, the store
 * becomes `tma_store map, outer, inner, value`: the backend writes the
 * value into the op's scratch in the slot layout of tma_copy and one
 * thread issues cp.async.bulk.tensor stores (backend/nvptx/mem.c). The
 * bounds the mask checked are the map's own: the unit writes nothing out
 * of them. The pointers and mask are then dead and removed, so the value
 * keeps the layout it is born in (an accumulator's: no conversion).
 * Elsewhere (sm_80, the CPU) the tail is ignored and the store stays.
 */
#include "analysis.h"

#include <stdlib.h>

/* The box a map value was made or encoded with ([inner, outer]
 * elements) and its swizzle bytes; false when unknown. */
static bool map_box(const IrFunc *f, const IrValue *m, int64_t box[2], int64_t *swizzle)
{
	int n = 0;
	IrAttr *as = NULL;
	if (m->def && m->def->opc == OP_TMAP_CREATE) {
		n = m->def->nattrs;
		as = m->def->attrs;
	} else if (!m->def && m->owner == f->body && m->index >= 0 && m->index < f->body->nargs &&
		   ir_find_attr(f->params[m->index].nattrs, f->params[m->index].attrs, "tensormap")) {
		n = f->params[m->index].nattrs;
		as = f->params[m->index].attrs;
	}
	const IrAttr *b = as ? ir_find_attr(n, as, "tma_box") : NULL;
	const IrAttr *s = as ? ir_find_attr(n, as, "tma_swizzle") : NULL;
	if (!b || b->kind != ATTR_INTS || b->n != 2 || !s || s->kind != ATTR_INT)
		return false;
	box[0] = b->ints[0];
	box[1] = b->ints[1];
	*swizzle = s->i;
	return true;
}

bool an_tma_store_ok(const IrFunc *f, const IrOp *op, const AnGpuOptions *o)
{
	if (op->opc != OP_STORE || o->arch < 90 || !f->is_kernel || ir_op_int(op, "tma", 0) != 3 || op->nops != 6)
		return false;
	const IrType *t = op->ops[1]->type, *e = ir_scalar(t);
	if (!ir_is_block(t) || t->rank != 2 || e->kind == TY_I1 || ir_is_ptr(e))
		return false;
	int64_t es = ir_type_bits(e) / 8, R = t->shape[0], C = t->shape[1], row = C * es;
	/* at least 1 KiB: the scratch allocator then aligns it to 1 KiB, as
	 * the swizzle needs */
	if (es < 1 || es > 4 || R > 256 || row < 16 || (row > 128 && row % 128) || row > 8 * 128 || R * row < 1024)
		return false;
	/* the slot layout: rows of at most 128 bytes, swizzled at that width */
	int64_t box[2], sw, w = row > 128 ? 128 : row;
	/* only a TensorDescriptor argument's map: the host checked its base,
	 * shape and strides when it was made. A map the kernel makes, or the
	 * launch encodes from parameters, keeps the store by pointers: on the
	 * H200 a made map's store wrote past the descriptor's columns, and a
	 * launch-encoded one refused a row stride not a multiple of 16 bytes
	 * that plain stores take. */
	const IrValue *m = op->ops[3];
	/* CTRITON_TMA_STORE_MADE=1 (part of the cache key) takes made maps
	 * too, to find on a GPU what went wrong (test_tensor_descriptor.py
	 * test_gpu_made_map_store) */
	const char *env = getenv("CTRITON_TMA_STORE_MADE");
	bool made = env && env[0] == '1' && m->def && m->def->opc == OP_TMAP_CREATE;
	if (!made && (m->def || m->owner != f->body || m->index < 0 || m->index >= f->body->nargs ||
		      ir_find_attr(f->params[m->index].nattrs, f->params[m->index].attrs, "tma_src")))
		return false;
	if (!map_box(f, m, box, &sw))
		return false;
	return box[0] * es == w && box[1] == R && sw == (w >= 32 ? w : 0);
}

static bool rewrite(IrFunc *f, IrBlock *b, const AnGpuOptions *o)
{
	bool any = false;
	for (IrOp *op = b->first, *next; op; op = next) {
		next = op->next;
		/* a warp-specialized kernel's producer issues copies only */
		if (op->opc == OP_WARP_SPEC)
			continue;
		for (int r = 0; r < op->nregions; r++)
			any |= rewrite(f, op->regions[r], o);
		if (!an_tma_store_ok(f, op, o))
			continue;
		IrBuilder bld;
		ir_builder_init(&bld, f->module->ctx);
		ir_builder_before(&bld, op);
		bld.loc = op->loc;
		IrValue *ops[4] = {op->ops[3], op->ops[4], op->ops[5], op->ops[1]};
		ir_build(&bld, OP_TMA_STORE, 4, ops, 0, NULL, 0);
		ir_op_unlink(op);
		any = true;
	}
	return any;
}

bool an_tma_stores(IrFunc *f, const AnGpuOptions *o)
{
	return o->arch >= 90 && f->is_kernel && rewrite(f, f->body, o);
}

/* The column window of X that v (a tensor store's value) is, through
 * split(trans(reshape(X, [M, 2, N/2]), [0, 2, 1])) result k: columns
 * k N/2 .. (k + 1) N/2 - 1 of X. NULL when v is not such a half. */
static IrValue *half_of(IrValue *v, int64_t *c0)
{
	IrOp *sp = v->def;
	if (!sp || sp->opc != OP_SPLIT || sp->nres != 2)
		return NULL;
	IrOp *tr = sp->ops[0]->def;
	const IrAttr *ord = tr && tr->opc == OP_TRANS ? ir_op_attr(tr, "order") : NULL;
	if (!ord || ord->kind != ATTR_INTS || ord->n != 3 || ord->ints[0] != 0 || ord->ints[1] != 2 ||
	    ord->ints[2] != 1)
		return NULL;
	IrOp *rs = tr->ops[0]->def;
	if (!rs || rs->opc != OP_RESHAPE)
		return NULL;
	IrValue *x = rs->ops[0];
	const IrType *t3 = rs->res[0].type, *t = x->type;
	if (!ir_is_block(t) || t->rank != 2 || t3->rank != 3 || t3->shape[0] != t->shape[0] || t3->shape[1] != 2 ||
	    2 * t3->shape[2] != t->shape[1])
		return NULL;
	*c0 = v->index * t3->shape[2];
	return x;
}

static bool windows(IrFunc *f, IrBlock *b, const AnGpuOptions *o)
{
	bool any = false;
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			any |= windows(f, op->regions[r], o);
		int64_t c0;
		IrValue *x = op->opc == OP_TMA_STORE && !ir_op_attr(op, "cols") ? half_of(op->ops[3], &c0) : NULL;
		if (!x)
			continue;
		int64_t w = op->ops[3]->type->shape[1];
		/* the earliest of a chain of conversions whose registers split
		 * by the window (the accumulator's own layout, no conversion) */
		IrValue *pick = NULL;
		for (IrValue *y = x; y; y = y->def && y->def->opc == OP_CONVERT_LAYOUT ? y->def->ops[0] : NULL) {
			bool in[1024];
			if (ir_is_block(y->type) && y->type->layout &&
			    an_col_window(y->type, o->num_warps, o->warp_size, c0, w, in, 1024) > 0)
				pick = y;
		}
		if (!pick)
			continue;
		ir_op_set_operand(op, 3, pick);
		ir_op_set_int(f->module->ctx, op, "col0", c0);
		ir_op_set_int(f->module->ctx, op, "cols", w);
		any = true;
	}
	return any;
}

bool an_tma_store_windows(IrFunc *f, const AnGpuOptions *o)
{
	return o->arch >= 90 && f->is_kernel && windows(f, f->body, o);
}
