/* regperm.c: shape ops and conversions that move no data between threads.
 *
 * A layout gives every thread (lane, warp) its registers, register r holding
 * one element of the block (an_dim_dist spells out which; the backend's
 * register numbering is the same: backend/nvptx/map.c). A reshape, trans,
 * split, join or convert_layout whose result registers, in every thread,
 * are each one of that thread's own source registers, at the same register
 * index in every thread, is a renaming of registers: no shared memory, no
 * barrier. Triton's linear layouts find these cases algebraically; here the
 * check is by enumeration, thread by thread, which is exact for any pair of
 * layouts and costs a few thousand steps per op (blocks hold at most 2^20
 * elements and a thread a few hundred registers).
 *
 * Which source element a result element is:
 *   reshape:         the same row-major linear index;
 *   trans {order}:   result coordinate i is source coordinate order[i];
 *   split:           result k at linear index x is source element 2 x + k;
 *   join:            result element 2 x + k is element x of operand k;
 *   convert_layout:  the same element.
 */
#include "analysis.h"

#include <stdlib.h>
#include <string.h>

typedef struct RMap {
	int rank, brank;
	int64_t bs[IR_MAX_RANK];
	int dimmap[IR_MAX_RANK];
	AnDimDist dd[IR_MAX_RANK];
	int nd[IR_MAX_RANK], stride[IR_MAX_RANK];
	int n;
} RMap;

static bool rmap_init(const IrType *t, RMap *m)
{
	memset(m, 0, sizeof *m);
	if (!ir_is_block(t) || !t->layout)
		return false;
	m->rank = t->rank;
	const IrLayout *b = an_unslice(t->layout, t->rank, t->shape, m->bs, m->dimmap);
	if (!b || (b->kind != LAYOUT_BLOCKED && b->kind != LAYOUT_MMA && b->kind != LAYOUT_DOT_OP))
		return false;
	m->brank = b->rank;
	int order[IR_MAX_RANK];
	an_reg_order(b, order);
	int s = 1;
	for (int i = 0; i < m->brank; i++) {
		int d = order[i];
		if (!an_dim_dist(b, m->bs, d, &m->dd[d]))
			return false;
		m->nd[d] = m->dd[d].nregs;
		m->stride[d] = s;
		s *= m->nd[d];
	}
	m->n = s;
	return true;
}

/* The row-major linear index, in t's shape, of register r of thread
 * (lane, warp). */
static int64_t rmap_lin(const RMap *m, const IrType *t, int lane, int warp, int r)
{
	int64_t lin = 0, mul = 1;
	for (int k = t->rank - 1; k >= 0; k--) {
		int d = m->dimmap[k];
		int64_t S = m->bs[d], c = 0;
		if (S > 1) {
			const AnDimDist *dd = &m->dd[d];
			int j = (r / m->stride[d]) % m->nd[d];
			int64_t l = (lane / dd->lane_stride) % dd->tpw, w = (warp / dd->warp_stride) % dd->wpc;
			c = (w * dd->warp_unit + l * dd->lane_unit + (j / dd->spt) * dd->tile +
			     (j % dd->spt) * dd->estride) & (S - 1);
		}
		lin += c * mul;
		mul *= t->shape[k];
	}
	return lin;
}

/* The source (operand index *src) linear index of result k's element at
 * linear index x; st and rt: the source and result types (trans). */
static int64_t source_of(int opc, const IrAttr *ord, const IrType *st, const IrType *rt, int k, int64_t x,
			 int *src)
{
	*src = 0;
	switch (opc) {
	case OP_SPLIT:
		return 2 * x + k;
	case OP_JOIN:
		*src = (int)(x & 1);
		return x >> 1;
	case OP_TRANS: {
		int64_t rc[IR_MAX_RANK], sc[IR_MAX_RANK];
		for (int i = rt->rank - 1; i >= 0; i--) {
			rc[i] = x % rt->shape[i];
			x /= rt->shape[i];
		}
		for (int i = 0; i < rt->rank; i++)
			sc[ord && i < ord->n ? (int)ord->ints[i] : rt->rank - 1 - i] = rc[i];
		int64_t lin = 0;
		for (int d = 0; d < st->rank; d++)
			lin = lin * st->shape[d] + sc[d];
		return lin;
	}
	default: /* reshape, convert_layout */
		return x;
	}
}

static bool permutation(int opc, const IrAttr *ord, const IrType *const *srcs, int nsrc, const IrType *rt,
			int k, int num_warps, int warp_size, int *perm)
{
	RMap src[2], dst;
	for (int s = 0; s < nsrc; s++)
		if (!rmap_init(srcs[s], &src[s]))
			return false;
	if (!rmap_init(rt, &dst))
		return false;
	int64_t nel = 0;
	for (int s = 0; s < nsrc; s++)
		if (srcs[s]->numel > nel)
			nel = srcs[s]->numel;
	/* thread 0's source registers by element, then every other thread
	 * checked against the permutation thread 0 gives */
	int *where[2] = {NULL, NULL};
	int *p = perm ? perm : malloc(sizeof(int) * (size_t)dst.n);
	bool ok = p != NULL;
	for (int s = 0; ok && s < nsrc; s++) {
		where[s] = malloc(sizeof(int) * (size_t)nel);
		ok = where[s] != NULL;
		if (!ok)
			break;
		for (int64_t i = 0; i < nel; i++)
			where[s][i] = -1;
		for (int q = 0; q < src[s].n; q++)
			where[s][rmap_lin(&src[s], srcs[s], 0, 0, q)] = q;
	}
	for (int r = 0; ok && r < dst.n; r++) {
		int s;
		int64_t e = source_of(opc, ord, srcs[0], rt, k, rmap_lin(&dst, rt, 0, 0, r), &s);
		int q = e >= 0 && e < srcs[s]->numel ? where[s][e] : -1;
		ok = q >= 0;
		p[r] = q + s * src[0].n;
	}
	for (int w = 0; ok && w < num_warps; w++)
		for (int l = 0; ok && l < warp_size; l++)
			for (int r = 0; ok && r < dst.n; r++) {
				int s;
				int64_t e = source_of(opc, ord, srcs[0], rt, k, rmap_lin(&dst, rt, l, w, r), &s);
				int q = p[r] - s * src[0].n;
				ok = q >= 0 && q < src[s].n && rmap_lin(&src[s], srcs[s], l, w, q) == e;
			}
	free(where[0]);
	free(where[1]);
	if (p != perm)
		free(p);
	return ok;
}

bool an_reg_permutation(const IrOp *op, int k, int num_warps, int warp_size, int *perm)
{
	if (op->opc != OP_RESHAPE && op->opc != OP_TRANS && op->opc != OP_SPLIT && op->opc != OP_JOIN &&
	    op->opc != OP_CONVERT_LAYOUT)
		return false;
	if (k >= op->nres || op->nops < 1 || (op->opc == OP_JOIN && op->nops < 2))
		return false;
	const IrType *srcs[2] = {op->ops[0]->type, op->opc == OP_JOIN ? op->ops[1]->type : NULL};
	return permutation(op->opc, ir_op_attr(op, "order"), srcs, op->opc == OP_JOIN ? 2 : 1, op->res[k].type, k,
			   num_warps, warp_size, perm);
}

bool an_reshape_renaming(const IrType *src, const IrType *dst, int num_warps, int warp_size)
{
	return permutation(OP_RESHAPE, NULL, &src, 1, dst, 0, num_warps, warp_size, NULL);
}

bool an_regs_only(const IrOp *op, int num_warps, int warp_size)
{
	if (op->opc == OP_CONVERT_LAYOUT) {
		/* conversions to dot operands have their own paths (ldmatrix,
		 * shared operands of warpgroup MMA) */
		const IrLayout *l = ir_is_block(op->res[0].type) ? op->res[0].type->layout : NULL;
		if (!l || l->kind == LAYOUT_DOT_OP || l->kind == LAYOUT_SHARED)
			return false;
	}
	for (int k = 0; k < op->nres; k++)
		if (!an_reg_permutation(op, k, num_warps, warp_size, NULL))
			return false;
	return op->nres > 0;
}

bool an_warp_shuffle(const IrOp *op, int warp_size, int *lane_stride)
{
	const char *e = getenv("CTRITON_SHFL_CONVERT");
	if (!e || e[0] != '1' || op->opc != OP_CONVERT_LAYOUT)
		return false;
	const IrType *st = op->ops[0]->type, *dt = op->res[0].type;
	if (!ir_is_block(st) || !ir_is_block(dt) || st->rank != 1 || dt->rank != 1 || !st->layout || !dt->layout ||
	    dt->layout->kind == LAYOUT_DOT_OP || dt->layout->kind == LAYOUT_SHARED || st->layout->kind == LAYOUT_SHARED)
		return false;
	int64_t S = st->shape[0], bs[IR_MAX_RANK];
	int map[IR_MAX_RANK];
	const IrLayout *b = an_unslice(st->layout, 1, st->shape, bs, map);
	AnDimDist dd, dx;
	if (!b || !an_dim_dist(b, bs, map[0], &dd) || bs[map[0]] != S || S > dd.tpw || (S > 1 && dd.lane_unit != 1) ||
	    (int64_t)dd.tpw * dd.lane_stride > warp_size || (dd.wpc > 1 && dd.warp_unit % S))
		return false;
	for (int d = 0; d < b->rank; d++) /* one register a thread */
		if (!an_dim_dist(b, bs, d, &dx) || dx.nregs != 1)
			return false;
	const IrLayout *db = an_unslice(dt->layout, 1, dt->shape, bs, map); /* the destination: any distribution */
	if (!db || !an_dim_dist(db, bs, map[0], &dx))
		return false;
	if (lane_stride)
		*lane_stride = dd.lane_stride;
	return true;
}

int an_col_window(const IrType *t, int num_warps, int warp_size, int64_t c0, int64_t w, bool *in, int cap)
{
	RMap m;
	if (!ir_is_block(t) || t->rank != 2 || !rmap_init(t, &m) || m.n > cap)
		return -1;
	int64_t C = t->shape[1];
	for (int r = 0; r < m.n; r++) {
		int64_t c = rmap_lin(&m, t, 0, 0, r) % C;
		in[r] = c >= c0 && c < c0 + w;
	}
	for (int wp = 0; wp < num_warps; wp++)
		for (int l = 0; l < warp_size; l++)
			for (int r = 0; r < m.n; r++) {
				int64_t c = rmap_lin(&m, t, l, wp, r) % C;
				if ((c >= c0 && c < c0 + w) != in[r])
					return -1;
			}
	return m.n;
}

/* ------------------------------------------------------------------------- */
/* Narrowing casts before data movement                                      */
/* ------------------------------------------------------------------------- */

/* A float cast to a narrower float (f32 -> f16, an accumulator's epilogue). */
static bool narrowing_cast(const IrOp *op)
{
	if (op->opc != OP_CAST || !ir_is_block(op->res[0].type))
		return false;
	const IrType *s = ir_scalar(op->ops[0]->type), *d = ir_scalar(op->res[0].type);
	return ir_is_float(s) && ir_is_float(d) && ir_type_bits(d) < ir_type_bits(s);
}

static bool same_cast(const IrOp *a, const IrOp *b)
{
	return a && b && narrowing_cast(a) && narrowing_cast(b) &&
	       ir_scalar(a->res[0].type) == ir_scalar(b->res[0].type) &&
	       !strcmp(ir_op_str(a, "rounding", ""), ir_op_str(b, "rounding", ""));
}

IrOp *an_only_user(IrFunc *f, IrValue *v)
{
	if (ir_count_uses(f, v) != 1 || !v->def)
		return NULL;
	for (IrOp *u = v->def->next; u; u = u->next)
		for (int i = 0; i < u->nops; i++)
			if (u->ops[i] == v)
				return u;
	return NULL;
}

/* Moves the casts of d's results onto d's operand: cast(d(x)) -> d(cast(x)). */
static void cast_first(IrFunc *f, IrOp *d, IrOp **casts)
{
	IrCtx *ctx = f->module->ctx;
	IrValue *x = d->ops[0];
	const IrType *nt = ir_type_like(ctx, x->type, ir_scalar(casts[0]->res[0].type));
	IrOp *nc = ir_op_new(ctx, OP_CAST, 1, &x, 1, &nt, 0, casts[0]->loc);
	nc->res[0].id = -1;
	nc->nattrs = casts[0]->nattrs;
	nc->attrs = casts[0]->attrs;
	ir_block_insert_before(d->parent, d, nc);
	ir_op_set_operand(d, 0, &nc->res[0]);
	for (int k = 0; k < d->nres; k++) {
		d->res[k].type = casts[k]->res[0].type;
		ir_replace_all_uses(f, &casts[k]->res[0], &d->res[k]);
		ir_op_unlink(casts[k]);
	}
}

static bool casts_first_block(IrFunc *f, IrBlock *b)
{
	bool changed = false;
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			changed |= casts_first_block(f, op->regions[r]);
		if ((op->opc != OP_TRANS && op->opc != OP_RESHAPE && op->opc != OP_SPLIT) || op->nres > 2 ||
		    !ir_is_block(op->ops[0]->type))
			continue;
		IrOp *casts[2] = {NULL, NULL};
		bool ok = true;
		for (int k = 0; k < op->nres && ok; k++) {
			casts[k] = an_only_user(f, &op->res[k]);
			ok = casts[k] && casts[k]->parent == b && same_cast(casts[k], casts[0]);
		}
		if (!ok)
			continue;
		cast_first(f, op, casts);
		changed = true;
	}
	return changed;
}

void an_casts_first(IrFunc *f)
{
	for (int round = 0; round < 8 && casts_first_block(f, f->body); round++)
		;
}
