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
 * bounds the mask checked are the map's own, and the unit writes nothing
 * out of them but for the inner extent's last 16 bytes (below: a tile
 * that crosses an extent not a multiple of 16 bytes keeps the store by
 * pointers). The pointers and mask are then dead and removed, so the value
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
	if (op->opc != OP_STORE || o->arch < 90 || !f->is_kernel || ir_op_int(op, "tma", 0) != 4 || op->nops != 7)
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
	/* only a TensorDescriptor argument's map: the host checked its base
	 * and strides when it was made. A map the launch encodes from
	 * parameters keeps the store by pointers: it refused a row stride not
	 * a multiple of 16 bytes that plain stores take. */
	const IrValue *m = op->ops[3];
	/* CTRITON_TMA_STORE_MADE=1 (part of the cache key) takes maps the
	 * kernel makes too. Their stores wrote past N on the GPU where N was
	 * not a multiple of 16 bytes, until the guard below
	 * (test_tensor_descriptor.py test_gpu_made_map_store). Correct with
	 * it on an H100, but tutorial 08's TMA kernel was no faster than with
	 * the vector stores by pointers, so it stays opt-in. */
	const char *env = getenv("CTRITON_TMA_STORE_MADE");
	bool made = env && env[0] == '1' && m->def && m->def->opc == OP_TMAP_CREATE;
	if (!made && (m->def || m->owner != f->body || m->index < 0 || m->index >= f->body->nargs ||
		      ir_find_attr(f->params[m->index].nattrs, f->params[m->index].attrs, "tma_src")))
		return false;
	if (!map_box(f, m, box, &sw))
		return false;
	return box[0] * es == w && box[1] == R && sw == (w >= 32 ? w : 0);
}

/* The unit clips a store at the map's inner extent only in whole 16-byte
 * units of the row: with an extent that is not a multiple of 16 bytes the
 * box that crosses it also writes the elements up to the next 16-byte
 * boundary (another tensor's, when the map covers a column slice). Such a
 * store keeps its pointers for the tiles that cross the extent: `if
 * (inner + C <= ext || ext % q == 0) tma_store else store`, q the elements
 * of 16 bytes; an extent known to be a multiple of q needs no `if`. */
typedef struct Site {
	IrOp *st;
	bool guard;
} Site;

typedef struct Sites {
	Site *s;
	int n, cap;
} Sites;

static void find(IrFunc *f, IrBlock *b, const AnGpuOptions *o, Sites *out)
{
	for (IrOp *op = b->first; op; op = op->next) {
		/* a warp-specialized kernel's producer issues copies only */
		if (op->opc == OP_WARP_SPEC)
			continue;
		for (int r = 0; r < op->nregions; r++)
			find(f, op->regions[r], o, out);
		if (!an_tma_store_ok(f, op, o))
			continue;
		if (out->n == out->cap) {
			out->cap = out->cap ? 2 * out->cap : 8;
			out->s = realloc(out->s, sizeof(Site) * (size_t)out->cap);
			if (!out->s)
				abort();
		}
		out->s[out->n++] = (Site){op, false};
	}
}

/* The 16-byte units of a row in elements of st's value. */
static int64_t unit(const IrOp *st)
{
	return 16 / (ir_type_bits(ir_scalar(st->ops[1]->type)) / 8);
}

static void tma_store(IrBuilder *b, const IrOp *st)
{
	IrValue *ops[4] = {st->ops[3], st->ops[4], st->ops[5], st->ops[1]};
	ir_build(b, OP_TMA_STORE, 4, ops, 0, NULL, 0);
}

static void apply(IrFunc *f, const Site *x)
{
	IrCtx *ctx = f->module->ctx;
	IrOp *st = x->st;
	IrBuilder b;
	ir_builder_init(&b, ctx);
	ir_builder_before(&b, st);
	b.loc = st->loc;
	if (!x->guard) {
		tma_store(&b, st);
		ir_op_unlink(st);
		return;
	}
	const IrType *i32 = ir_type(ctx, TY_I32);
	IrValue *ext = st->ops[6];
	int64_t C = st->ops[1]->type->shape[1], q = unit(st);
	IrValue *end = ir_binary(&b, OP_ADD, st->ops[5], ir_const_int(&b, i32, C));
	IrValue *inside = ir_cmp(&b, "le", end, ext);
	IrValue *low = ir_binary(&b, OP_AND, ext, ir_const_int(&b, i32, q - 1));
	IrValue *whole = ir_cmp(&b, "eq", low, ir_const_int(&b, i32, 0));
	IrValue *cond = ir_binary(&b, OP_OR, inside, whole);
	IrBuilder t, e;
	an_store_if(&b, st, cond, &t, &e);
	tma_store(&t, st);
	ir_yield(&t, 0, NULL);
	/* its pointers and mask made there, not kept alive across the
	 * tensor store's branch */
	an_store_copy(&e, st, 0, NULL, NULL);
	ir_yield(&e, 0, NULL);
	ir_op_unlink(st);
}

bool an_tma_stores(IrFunc *f, const AnGpuOptions *o)
{
	if (o->arch < 90 || !f->is_kernel)
		return false;
	Sites xs = {0};
	find(f, f->body, o, &xs);
	if (xs.n) {
		const AnAxis *ax = an_axis_info(f);
		for (int i = 0; i < xs.n; i++)
			xs.s[i].guard = an_axis_get(ax, xs.s[i].st->ops[6])->div[0] % unit(xs.s[i].st) != 0;
	}
	for (int i = 0; i < xs.n; i++)
		apply(f, &xs.s[i]);
	free(xs.s);
	return xs.n > 0;
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
