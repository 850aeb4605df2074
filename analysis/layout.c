/* layout.c: layout assignment (TTIR -> TTGIR) and removal of redundant
 * conversions.
 *
 * Every block value gets a distributed layout. A blocked layout is shape
 * independent: over any block of its rank, thread t owns, along dim d, the
 * elements (rep * tile_d + tid_d * spt_d + e) mod shape_d, where tile_d =
 * spt_d * tpw_d * wpc_d; when the tile is larger than the block the extra
 * threads replicate. A slice layout is its parent with one dim removed (what
 * a reduction along that dim leaves in every thread).
 *
 * Assignment, in three steps:
 *   1. anchors: every load/store/atomic through a pointer block proposes its
 *      coalesced layout (axis info -> up to 128 bits contiguous per thread);
 *      per rank, the anchor of the largest block wins and becomes that
 *      rank's layout; an access it vectorizes worse than the access's own
 *      coalesced layout is done in that one (coalesce.c).
 *   2. wants, backward: each value learns the layout its users would like
 *      (elementwise users pass theirs on, expand_dims asks for a slice of
 *      its result's layout, memory ops ask for their access layout).
 *   3. forward: sources (constants, ranges, splats) take their want; other
 *      ops take their operands' layout (reductions: a slice of it); an
 *      operand in another layout gets a convert_layout in front of the user.
 *      Structured control flow keeps loop-carried values in their init's
 *      layout; yields are converted to it.
 * A dot that fits the tensor cores (an_dot_mma_layout) takes an mma v2
 * accumulator and dot_op operands; its accumulator's want is the mma layout,
 * which a `for` passes on to the accumulator's init.
 * Blocks that cross a call (arguments, a called function's parameters and
 * results) have the canonical layout of an_call_type (call.c): call
 * operands and returned values are converted to it, call results and
 * parameters are born in it.
 */
#include "analysis.h"

#include <stdlib.h>
#include <string.h>

const IrLayout *an_blocked_layout(IrCtx *ctx, int rank, const int64_t *shape, const int *spt,
				  const int *order, int num_warps, int warp_size)
{
	IrLayout l;
	memset(&l, 0, sizeof l);
	l.kind = LAYOUT_BLOCKED;
	l.rank = rank;
	for (int d = 0; d < rank; d++) {
		l.size_per_thread[d] = spt ? spt[d] : 1;
		l.order[d] = order ? order[d] : rank - 1 - d;
		l.threads_per_warp[d] = 1;
		l.warps_per_cta[d] = 1;
	}
	if (rank == 0)
		return NULL;
	int lanes = warp_size;
	for (int i = 0; i < rank && lanes > 1; i++) {
		int d = l.order[i];
		int64_t room = shape[d] / l.size_per_thread[d];
		int t = 1;
		while (t < lanes && t * 2 <= room)
			t *= 2;
		l.threads_per_warp[d] = t;
		lanes /= t;
	}
	l.threads_per_warp[l.order[rank - 1]] *= lanes;
	int warps = num_warps;
	for (int i = 0; i < rank && warps > 1; i++) {
		int d = l.order[i];
		int64_t room = shape[d] / ((int64_t)l.size_per_thread[d] * l.threads_per_warp[d]);
		int w = 1;
		while (w < warps && w * 2 <= room)
			w *= 2;
		l.warps_per_cta[d] = w;
		warps /= w;
	}
	l.warps_per_cta[l.order[rank - 1]] *= warps;
	return ir_layout(ctx, &l);
}

const IrLayout *an_slice_layout(IrCtx *ctx, int dim, const IrLayout *parent)
{
	IrLayout l;
	memset(&l, 0, sizeof l);
	l.kind = LAYOUT_SLICE;
	l.rank = parent->rank - 1;
	l.dim = dim;
	l.parent = parent;
	return ir_layout(ctx, &l);
}

const IrLayout *an_coalesced_layout(IrCtx *ctx, const AnAxis *a, const IrValue *ptr,
				    const IrValue *mask, int num_warps, int warp_size)
{
	const IrType *t = ptr->type;
	int rank = t->rank;
	const AnAxisInfo *ai = an_axis_get(a, ptr);
	int order[IR_MAX_RANK], spt[IR_MAX_RANK];
	/* dims by contiguity, descending; ties keep the row-major order */
	for (int i = 0; i < rank; i++)
		order[i] = rank - 1 - i;
	for (int i = 1; i < rank; i++)
		for (int j = i; j > 0 && ai->contig[order[j]] > ai->contig[order[j - 1]]; j--) {
			int tmp = order[j];
			order[j] = order[j - 1];
			order[j - 1] = tmp;
		}
	for (int d = 0; d < rank; d++)
		spt[d] = 1;
	int vec = an_access_vec(a, ptr, mask, order[0], false);
	int64_t per_thread = t->numel / ((int64_t)num_warps * warp_size);
	if (per_thread < 1)
		per_thread = 1;
	while (vec > per_thread)
		vec /= 2;
	spt[order[0]] = vec;
	return an_blocked_layout(ctx, rank, t->shape, spt, order, num_warps, warp_size);
}

const IrLayout *an_unslice(const IrLayout *l, int rank, const int64_t *shape, int64_t *base_shape,
			   int *dimmap)
{
	int64_t sh[IR_MAX_RANK];
	int map[IR_MAX_RANK];
	for (int d = 0; d < rank; d++) {
		sh[d] = shape[d];
		map[d] = d;
	}
	int r = rank;
	while (l->kind == LAYOUT_SLICE) {
		/* insert a size-1 dim at l->dim */
		for (int d = r; d > l->dim; d--)
			sh[d] = sh[d - 1];
		sh[l->dim] = 1;
		for (int i = 0; i < rank; i++)
			if (map[i] >= l->dim)
				map[i]++;
		r++;
		l = l->parent;
	}
	for (int d = 0; d < r; d++)
		base_shape[d] = sh[d];
	if (dimmap)
		for (int i = 0; i < rank; i++)
			dimmap[i] = map[i];
	return l;
}

void an_blocked_dim(const IrLayout *b, const int64_t *base_shape, int d, int *nregs,
		    int *distinct_lanes, int *distinct_warps)
{
	int64_t s = base_shape[d];
	int64_t spt = b->size_per_thread[d], tpw = b->threads_per_warp[d], wpc = b->warps_per_cta[d];
	int64_t tile = spt * tpw * wpc;
	int64_t n = s >= tile ? spt * (s / tile) : (spt < s ? spt : s);
	if (nregs)
		*nregs = (int)n;
	int64_t lanes = s / spt; /* lanes needed to cover the dim once */
	if (lanes < 1)
		lanes = 1;
	if (distinct_lanes)
		*distinct_lanes = (int)(lanes < tpw ? lanes : tpw);
	int64_t warps = s / (spt * tpw);
	if (warps < 1)
		warps = 1;
	if (distinct_warps)
		*distinct_warps = (int)(warps < wpc ? warps : wpc);
}

/* Lane/warp strides of a blocked layout: coordinates split the lane id and
 * the warp id in the layout's order. */
static void blocked_strides(const IrLayout *b, int d, int *ls, int *ws)
{
	int l = 1, w = 1;
	for (int i = 0; i < b->rank; i++) {
		int e = b->order[i];
		if (e == d)
			break;
		l *= b->threads_per_warp[e];
		w *= b->warps_per_cta[e];
	}
	*ls = l;
	*ws = w;
}

/* mma v2 rows (role 0: M of the accumulator and of A), columns (role 1: N
 * of the accumulator and of B) and the K dim of A and B (role 2). Rows: lane
 * group g = lane / 4 and g + 8, warp tiles of 16; columns: 2t, 2t + 1 for
 * t = lane % 4, warp tiles of 8; K: kw consecutive elements (the k_width:
 * one 32-bit register's worth) at kw t, then + 4 kw: for 16-bit types 2t,
 * 2t + 1, 2t + 8, 2t + 9 per 16-wide step (m16n8k16), for tf32 t, t + 4
 * (m16n8k8), for 8-bit types 4t..4t + 3, 4t + 16..4t + 19 (m16n8k32).
 * Warps are numbered M-fastest. Warpgroup MMA (v3) uses the same fragments;
 * where its warps split N, each warp column owns a contiguous block. */
static void mma_dim(const IrLayout *mma, int role, int64_t S, AnDimDist *dd, int kw)
{
	int wm = mma->warps_per_cta[0], wn = mma->warps_per_cta[1];
	switch (role) {
	case 0:
		*dd = (AnDimDist){.spt = 2, .estride = 8, .tile = 16 * wm, .tpw = 8, .lane_stride = 4,
				  .lane_unit = 1, .wpc = wm, .warp_stride = 1, .warp_unit = 16};
		break;
	case 1:
		*dd = (AnDimDist){.spt = 2, .estride = 1, .tile = 8 * wn, .tpw = 4, .lane_stride = 1,
				  .lane_unit = 2, .wpc = wn, .warp_stride = wm, .warp_unit = 8};
		break;
	case 3: /* B's N: one column per lane group */
		*dd = (AnDimDist){.spt = 1, .estride = 1, .tile = 8 * wn, .tpw = 8, .lane_stride = 4,
				  .lane_unit = 1, .wpc = wn, .warp_stride = wm, .warp_unit = 8};
		break;
	default: /* K */
		*dd = (AnDimDist){.spt = kw, .estride = 1, .tile = 4 * kw, .tpw = 4, .lane_stride = 1,
				  .lane_unit = kw, .wpc = 1, .warp_stride = 1, .warp_unit = 0};
		break;
	}
	if (mma->version_major == 3 && wn > 1 && (role == 1 || role == 3) && S >= 8 * wn) {
		/* warpgroup MMA with the warps split along N (wgmma_layout): warp
		 * column w_n owns the contiguous block of S / wn columns from w_n S /
		 * wn, in 8-column steps */
		dd->tile = 8;
		dd->warp_unit = (int)(S / wn);
		dd->nregs = (int)(dd->spt * (S / (8 * wn)));
		dd->distinct_lanes = dd->tpw;
		dd->distinct_warps = dd->wpc;
	} else if (S >= dd->tile) {
		dd->nregs = (int)(dd->spt * (S / dd->tile));
		dd->distinct_lanes = dd->tpw;
		dd->distinct_warps = dd->wpc;
	} else if (S == 1) {
		dd->nregs = 1;
		dd->distinct_lanes = 1;
		dd->distinct_warps = 1;
	} else {
		abort(); /* layout assignment never gives an mma layout to a partial tile */
	}
}

bool an_dim_dist(const IrLayout *b, const int64_t *base_shape, int d, AnDimDist *dd)
{
	memset(dd, 0, sizeof *dd);
	switch (b->kind) {
	case LAYOUT_BLOCKED: {
		int spt = b->size_per_thread[d], tpw = b->threads_per_warp[d], wpc = b->warps_per_cta[d];
		dd->spt = spt;
		dd->estride = 1;
		dd->tile = (int64_t)spt * tpw * wpc;
		dd->tpw = tpw;
		dd->lane_unit = spt;
		dd->wpc = wpc;
		dd->warp_unit = spt * tpw;
		blocked_strides(b, d, &dd->lane_stride, &dd->warp_stride);
		an_blocked_dim(b, base_shape, d, &dd->nregs, &dd->distinct_lanes, &dd->distinct_warps);
		return true;
	}
	case LAYOUT_MMA:
		if ((b->version_major != 2 && b->version_major != 3) || b->rank != 2)
			return false;
		mma_dim(b, d, base_shape[d], dd, 2);
		return true;
	case LAYOUT_DOT_OP: {
		const IrLayout *p = b->parent;
		if (!p || p->kind != LAYOUT_MMA || (p->version_major != 2 && p->version_major != 3) ||
		    p->rank != 2)
			return false;
		int role = b->opidx == 0 ? (d == 0 ? 0 : 2) : (d == 0 ? 2 : 3);
		mma_dim(p, role, base_shape[d], dd, b->k_width == 1 || b->k_width == 4 ? b->k_width : 2);
		return true;
	}
	default:
		return false;
	}
}

static bool same_dist(const AnDimDist *x, const AnDimDist *y)
{
	if (x->nregs != y->nregs || x->distinct_lanes != y->distinct_lanes || x->distinct_warps != y->distinct_warps)
		return false;
	if (x->nregs > 1 && (x->spt != y->spt || x->estride != y->estride || x->tile != y->tile))
		return false;
	if (x->distinct_lanes > 1 && (x->tpw != y->tpw || x->lane_stride != y->lane_stride ||
				      x->lane_unit != y->lane_unit))
		return false;
	if (x->distinct_warps > 1 && (x->wpc != y->wpc || x->warp_stride != y->warp_stride ||
				      x->warp_unit != y->warp_unit))
		return false;
	return true;
}

/* Slices (of different parents, or of a parent of another rank): the same
 * registers when every dim of the value is spread alike and the dims come
 * in the same register order (the sliced-away dims hold one register). */
static bool same_sliced_registers(const IrLayout *la, const int64_t *sa, const int *ma, const IrLayout *lb,
				  const int64_t *sb, const int *mb, int rank)
{
	int oa[IR_MAX_RANK], ob[IR_MAX_RANK], va[IR_MAX_RANK], vb[IR_MAX_RANK], na = 0, nb = 0;
	if ((la->kind != LAYOUT_BLOCKED && la->kind != LAYOUT_MMA) || (lb->kind != LAYOUT_BLOCKED && lb->kind != LAYOUT_MMA))
		return false;
	an_reg_order(la, oa);
	an_reg_order(lb, ob);
	/* the value's dims in each layout's register order */
	for (int i = 0; i < la->rank; i++)
		for (int k = 0; k < rank; k++)
			if (ma[k] == oa[i] && sa[oa[i]] > 1)
				va[na++] = k;
	for (int i = 0; i < lb->rank; i++)
		for (int k = 0; k < rank; k++)
			if (mb[k] == ob[i] && sb[ob[i]] > 1)
				vb[nb++] = k;
	if (na != nb)
		return false;
	for (int i = 0; i < na; i++) {
		AnDimDist x, y;
		if (va[i] != vb[i] || !an_dim_dist(la, sa, ma[va[i]], &x) || !an_dim_dist(lb, sb, mb[vb[i]], &y) ||
		    !same_dist(&x, &y))
			return false;
	}
	return true;
}

bool an_same_registers(const IrType *a, const IrType *b)
{
	if (!ir_is_block(a) || !ir_is_block(b) || !a->layout || !b->layout || a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->shape[i] != b->shape[i])
			return false;
	int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK];
	int ma[IR_MAX_RANK], mb[IR_MAX_RANK];
	const IrLayout *la = an_unslice(a->layout, a->rank, a->shape, sa, ma);
	const IrLayout *lb = an_unslice(b->layout, b->rank, b->shape, sb, mb);
	if (la == lb) {
		/* one parent: the same registers when the dims sit where they did
		 * (slices of different dims of a 1 x 32 block are not) */
		bool same = true;
		for (int i = 0; i < la->rank; i++)
			same = same && sa[i] == sb[i];
		for (int i = 0; i < a->rank; i++)
			same = same && (a->shape[i] == 1 || ma[i] == mb[i]);
		if (same)
			return true;
	}
	if (la->rank != a->rank || lb->rank != b->rank)
		return same_sliced_registers(la, sa, ma, lb, sb, mb, a->rank);
	int oa[IR_MAX_RANK], ob[IR_MAX_RANK];
	an_reg_order(la, oa);
	an_reg_order(lb, ob);
	for (int d = 0; d < a->rank; d++) {
		AnDimDist x, y;
		if (oa[d] != ob[d] || !an_dim_dist(la, sa, d, &x) || !an_dim_dist(lb, sb, d, &y) || !same_dist(&x, &y))
			return false;
	}
	return true;
}

void an_reg_order(const IrLayout *b, int *order)
{
	for (int i = 0; i < b->rank; i++)
		order[i] = b->kind == LAYOUT_BLOCKED ? b->order[i] : b->rank - 1 - i;
}

/* A dim of size S whose threads span a tile larger than S wraps around: the
 * threads past S hold copies. Within one warp (wpc = 1 along it), lane
 * coordinate lc and lc mod distinct_lanes hold the same elements, so the
 * copies differ in the lane bits above distinct_lanes (powers of two); with
 * several warps along it, whole warps are copies. */
AnCopies an_copies(const IrType *t, unsigned *lane_mask)
{
	unsigned lm = 0;
	if (lane_mask)
		*lane_mask = 0;
	if (!ir_is_block(t) || !t->layout)
		return AN_COPIES_NONE;
	int64_t bs[IR_MAX_RANK];
	int map[IR_MAX_RANK];
	const IrLayout *b = an_unslice(t->layout, t->rank, t->shape, bs, map);
	for (int d = 0; d < b->rank; d++) {
		AnDimDist dd;
		if (!an_dim_dist(b, bs, d, &dd) || dd.tile <= bs[d])
			continue;
		if (dd.wpc > 1)
			return AN_COPIES_WARPS;
		lm |= (unsigned)dd.lane_stride * (unsigned)(dd.tpw - dd.distinct_lanes);
	}
	if (lane_mask)
		*lane_mask = lm;
	return lm ? AN_COPIES_LANES : AN_COPIES_NONE;
}

bool an_is_wgmma(const IrType *t)
{
	const IrLayout *l = ir_is_block(t) ? t->layout : NULL;
	if (l && l->kind == LAYOUT_DOT_OP)
		l = l->parent;
	return l && l->kind == LAYOUT_MMA && l->version_major == 3;
}

bool an_wgmma_smem_operand(const IrOp *op)
{
	if ((op->opc != OP_CONVERT_LAYOUT && op->opc != OP_LOCAL_READ) || ir_op_int(op, "regs", 0))
		return false;
	const IrType *t = op->res[0].type;
	const IrLayout *l = ir_is_block(t) ? t->layout : NULL;
	if (!l || l->kind != LAYOUT_DOT_OP || !an_is_wgmma(t) || t->rank != 2)
		return false;
	if (l->opidx == 1 || op->opc == OP_LOCAL_READ)
		return true;
	IrTypeKind k = ir_scalar(t)->kind;
	/* A from registers only for 16-bit types, and only when that is free */
	return k != TY_F16 && k != TY_BF16 ? true : !an_same_registers(op->ops[0]->type, t);
}

bool an_fma_slot(const IrOp *op)
{
	return (op->opc == OP_LOCAL_READ || op->opc == OP_ASYNC_COPY) && ir_op_int(op, "plain", 0) != 0;
}

bool an_wgmma_kmajor_b(const IrOp *op)
{
	if (!an_wgmma_smem_operand(op) || op->res[0].type->layout->opidx != 1)
		return false;
	if (op->opc == OP_LOCAL_READ)
		return ir_op_int(op, "transposed", 0) != 0;
	IrTypeKind k = ir_scalar(op->res[0].type)->kind;
	if (k != TY_F16 && k != TY_BF16) /* only 16-bit B may be read transposed */
		return true;
	/* a 16-bit B whose registers run along K (tl.trans of a row-major
	 * tile: attention's K^T) is staged K-major too, in vectors along K, as
	 * Triton keeps the loaded tile and reads its transpose; MN-major it
	 * would be written element by element */
	const IrType *src = op->ops[0]->type;
	const IrLayout *sl = ir_is_block(src) ? src->layout : NULL;
	return sl && sl->kind == LAYOUT_BLOCKED && src->rank == 2 && sl->order[0] == 0 && sl->size_per_thread[0] >= 2 &&
	       (src->shape[1] % 8) == 0;
}

bool an_wgmma_mnmajor_a(const IrOp *op)
{
	if (op->opc != OP_LOCAL_READ || !an_wgmma_smem_operand(op) || op->res[0].type->layout->opidx != 0)
		return false;
	IrTypeKind k = ir_scalar(op->res[0].type)->kind;
	return (k == TY_F16 || k == TY_BF16) && ir_op_int(op, "transposed", 0) != 0;
}

/* The element types of a dot that warpgroup MMA takes: f16 (-> f32 or f16), bf16 (-> f32),
 * fp8 e4m3/e5m2 in any mix (-> f32), f32 as tf32 (-> f32), i8 (-> i32). */
static bool wgmma_types(const IrOp *dot)
{
	IrTypeKind a = ir_scalar(dot->ops[0]->type)->kind, b = ir_scalar(dot->ops[1]->type)->kind;
	IrTypeKind c = ir_scalar(dot->res[0].type)->kind;
	bool f8a = a == TY_F8E4M3 || a == TY_F8E5M2, f8b = b == TY_F8E4M3 || b == TY_F8E5M2;
	if (f8a && f8b)
		return c == TY_F32;
	if (a != b)
		return false;
	if (a == TY_F16)
		return c == TY_F32 || c == TY_F16; /* f16 accumulates in f16x2 registers */
	if (a == TY_BF16)
		return c == TY_F32;
	if (a == TY_F32) {
		const IrAttr *ip = ir_find_attr(dot->nattrs, dot->attrs, "input_precision");
		return c == TY_F32 && (!ip || (ip->kind == ATTR_STR && !strcmp(ip->s, "tf32")));
	}
	if (a == TY_I8)
		return c == TY_I32;
	return false;
}

/* Warpgroup MMA (sm_90): warps_per_cta = [4 gm, gn] for gm * gn warpgroups,
 * the warps numbered M-fastest. Warp w of warpgroup g holds rows 16 (w % 4)
 * + 64 (g % gm) + 64 gm k, the fragments of mma.sync per warp, and the
 * contiguous block of N / gn columns numbered g / gm (see mma_dim): a
 * warpgroup's instruction covers 64 rows and instr_n contiguous columns of
 * its block, B read from shared memory by descriptor at the block's start.
 * The warpgroups stack along M while the rows go round (gm as large as M
 * allows); the rest split N into blocks of whole 64-column atoms or of 8,
 * 16 or 32 columns inside one (a tile of 64 rows with 8 warps: two blocks
 * of N / 2). N is 16, 32 or a multiple of 64 (a B tile read transposed is
 * 32-, 64- or 128-byte swizzled, the last in whole 64-column atoms). NULL
 * where no split fits (a block of 96 columns would cross an atom). */

static const IrLayout *wgmma_layout(IrCtx *ctx, int64_t M, int64_t N, int64_t K, const AnGpuOptions *o)
{
	if (o->arch < 90 || o->arch >= 100 || o->num_warps % 4 || K % 16 || (N % 64 && N != 32 && N != 16))
		return NULL;
	/* CTRITON_WGMMA_SPLIT=0: no split along N (such dots on mma.sync, as
	 * before; part of the cache key) */
	const char *e = getenv("CTRITON_WGMMA_SPLIT");
	int groups = o->num_warps / 4, gm = groups;
	while (gm > 1 && M % (64 * (int64_t)gm) && !(e && e[0] == '0'))
		gm /= 2;
	int gn = groups / gm;
	/* a block is whole 64-column atoms, or lies inside one: 8, 16 or 32
	 * columns (a row-major B's block then starts inside a swizzle atom,
	 * which the MMA reads by address like any other start) */
	int64_t nw = gn > 1 && N % gn == 0 ? N / gn : 0;
	if (M % (64 * (int64_t)gm) || (gn > 1 && (!nw || (nw % 64 && (nw % 8 || 64 % nw)))))
		return NULL;
	IrLayout l;
	memset(&l, 0, sizeof l);
	l.kind = LAYOUT_MMA;
	l.rank = 2;
	l.version_major = 3;
	l.warps_per_cta[0] = 4 * gm;
	l.warps_per_cta[1] = gn;
	l.instr_shape[0] = 16; /* the per-warp register tile, as for v2; the */
	l.instr_shape[1] = 8;  /* instruction's N is the lowering's choice, so */
	l.instr_shape[2] = 16; /* dots of one kernel share one layout */
	return ir_layout(ctx, &l);
}

/* The element types of a dot that mma.sync takes: f16 (-> f32 or f16),
 * bf16 (-> f32), f32 as tf32 (-> f32; input_precision "tf32"), i8 (-> i32).
 * fp8 dots off warpgroup MMA are upcast to f16 before (an_split_dots). */
bool an_mma_v2_types(const IrOp *dot)
{
	IrTypeKind a = ir_scalar(dot->ops[0]->type)->kind, b = ir_scalar(dot->ops[1]->type)->kind;
	IrTypeKind c = ir_scalar(dot->res[0].type)->kind;
	/* fp8 (sm_89 on: split-dots upcasts them to f16 before) */
	if ((a == TY_F8E4M3 || a == TY_F8E5M2) && (b == TY_F8E4M3 || b == TY_F8E5M2))
		return c == TY_F32;
	if (a != b)
		return false;
	if (a == TY_F16)
		return c == TY_F32 || c == TY_F16;
	if (a == TY_BF16)
		return c == TY_F32;
	if (a == TY_I8)
		return c == TY_I32;
	if (a == TY_F32) {
		const IrAttr *ip = ir_find_attr(dot->nattrs, dot->attrs, "input_precision");
		return c == TY_F32 && (!ip || (ip->kind == ATTR_STR && !strcmp(ip->s, "tf32")));
	}
	return false;
}

/* Whether v (a dot's result) reaches another dot of self's block through
 * the ops after it (depth- and work-bounded: *work counts the ops looked at,
 * as an_dot_mma_layout runs for every dot each time a pass asks). */
static bool dot_reaches(const IrValue *v, const IrOp *self, int depth, int *work)
{
	if (depth > 8 || !v->def)
		return false;
	const IrBlock *b = self->parent;
	for (const IrOp *u = v->def->next; u && *work > 0; u = u->next, (*work)--) {
		if (u->parent != b)
			break;
		bool reads = false;
		for (int i = 0; i < u->nops && !reads; i++)
			reads = u->ops[i] == v;
		if (!reads)
			continue;
		if (u->opc == OP_DOT && u != self && u->ops[2] != v)
			return true;
		if (u->opc != OP_DOT && u->nres == 1 && ir_is_block(u->res[0].type) && u->res[0].type->rank == 2 &&
		    dot_reaches(&u->res[0], self, depth + 1, work))
			return true;
	}
	return false;
}

/* The dot of self's block that v comes from through the ops before it. */
static const IrOp *dot_from(const IrValue *v, const IrOp *self, int depth, int *work)
{
	const IrOp *d = v->def;
	if (depth > 8 || !d || d->parent != self->parent || !ir_is_block(v->type) || --(*work) < 0)
		return NULL;
	if (d->opc == OP_DOT)
		return d != self ? d : NULL;
	if (d->opc == OP_LOAD || d->nregions)
		return NULL;
	for (int i = 0; i < d->nops; i++) {
		const IrOp *x = ir_is_block(d->ops[i]->type) && d->ops[i]->type->rank == 2
					? dot_from(d->ops[i], self, depth + 1, work)
					: NULL;
		if (x)
			return x;
	}
	return NULL;
}

/* Of a chain of dots (one's result reaches the next's operand), the first:
 * its shape places the warps of them all, as in Triton; NULL when dot is
 * in no chain. */
static const IrOp *chain_root(const IrOp *dot)
{
	if (!dot->parent)
		return NULL;
	int work = 2048;
	const IrOp *r = dot;
	for (int i = 0; i < 8; i++) {
		const IrOp *p = dot_from(r->ops[0], r, 0, &work);
		if (!p)
			p = dot_from(r->ops[1], r, 0, &work);
		if (!p)
			break;
		r = p;
	}
	return r != dot || dot_reaches(&dot->res[0], dot, 0, &work) ? r : NULL;
}

/* CTRITON_CHAIN_ROWS=0: chained dots on mma.sync split their warps as any
 * other dot does (near-square warp tiles; part of the key). */
static bool chain_rows_on(void)
{
	const char *e = getenv("CTRITON_CHAIN_ROWS");
	return !(e && e[0] == '0');
}

const IrLayout *an_dot_mma_layout(IrCtx *ctx, const IrOp *dot, const AnGpuOptions *o)
{
	if (o->arch < 80 || dot->opc != OP_DOT)
		return NULL;
	const IrType *at = dot->ops[0]->type, *bt = dot->ops[1]->type, *ct = dot->res[0].type;
	if (!ir_is_block(at) || at->rank != 2 || bt->rank != 2 || ct->rank != 2)
		return NULL;
	int64_t M = at->shape[0], K = at->shape[1], N = bt->shape[1];
	if (wgmma_types(dot)) {
		/* K in whole instructions: 32 bytes of A's elements each */
		int64_t kstep = 32 / (ir_type_bits(ir_scalar(at)) / 8);
		const IrLayout *v3 = K % kstep ? NULL : wgmma_layout(ctx, M, N, K, o);
		if (v3)
			return v3;
	}
	if (!an_mma_v2_types(dot))
		return NULL;
	/* K in whole instructions: 16 for 16-bit types, 8 for tf32, 32 for int8 */
	int64_t kstep = 256 / ir_type_bits(ir_scalar(at));
	if (M < 16 || N < 8 || K % kstep)
		return NULL;
	/* warps doubled along the dim with more 16x8 instruction tiles left per
	 * warp (M at a tie), so each warp's tile is near square: fewer fragment
	 * registers and fewer ldmatrix per mma than a tall strip; warps beyond
	 * the tiles (a 16 x 16 dot with 4 warps) repeat the work of the first
	 * ones (the layout's warps wrap around) */
	int wm = 1, wn = 1;
	const IrOp *root = chain_rows_on() ? chain_root(dot) : NULL;
	if (root && root->res[0].type->shape[0] >= root->res[0].type->shape[1]) {
		/* a chain of dots whose first is at least as tall as wide
		 * (attention's S = Q K^T, then P V): the warps stack along M, as
		 * Triton places them, so that the row reductions between the two
		 * stay inside a warp and S's accumulator becomes P's A fragments
		 * in registers */
		while (wm < o->num_warps && M / (16 * (int64_t)wm) >= 2)
			wm *= 2;
		wn = o->num_warps / wm;
		while (wn > 1 && N / (8 * (int64_t)wn) < 1)
			wn /= 2;
	}
	while (wm * wn < o->num_warps) {
		int64_t rm = M / (16 * (int64_t)wm), rn = N / (8 * (int64_t)wn);
		if (rm >= 2 && rm >= rn)
			wm *= 2;
		else if (rn >= 2)
			wn *= 2;
		else
			break;
	}
	IrLayout l;
	memset(&l, 0, sizeof l);
	l.kind = LAYOUT_MMA;
	l.rank = 2;
	l.version_major = 2;
	l.warps_per_cta[0] = wm;
	l.warps_per_cta[1] = wn;
	l.instr_shape[0] = 16;
	l.instr_shape[1] = 8;
	return ir_layout(ctx, &l);
}

const IrLayout *an_dot_op_layout(IrCtx *ctx, const IrLayout *mma, int opidx, const IrType *elem)
{
	IrLayout l;
	memset(&l, 0, sizeof l);
	l.kind = LAYOUT_DOT_OP;
	l.rank = mma->rank;
	l.parent = mma;
	l.opidx = opidx;
	int bits = ir_type_bits(ir_scalar(elem));
	l.k_width = bits > 0 && bits < 32 ? 32 / bits : 1;
	return ir_layout(ctx, &l);
}

const IrOp *an_elem_source(IrFunc *f, const IrValue *v, AnTileFn tile, void *arg, bool *regs, bool *transposed)
{
	for (int depth = 0; depth < 8 && v && v->def; depth++) {
		const IrOp *d = v->def;
		if (tile(d, arg, regs, transposed))
			return d;
		unsigned fl = ir_opinfo(d->opc)->flags;
		if (!(fl & IR_ELEM) || !(fl & IR_PURE) || d->nres != 1 || d->nregions || ir_count_uses(f, v) != 1)
			return NULL;
		const IrValue *src = NULL;
		for (int i = 0; i < d->nops; i++)
			if (ir_is_block(d->ops[i]->type)) {
				if (src && src != d->ops[i])
					return NULL;
				src = d->ops[i];
			}
		v = src;
	}
	return NULL;
}

bool an_kn_reads_on(void)
{
	const char *e = getenv("CTRITON_KN_READS");
	return e && e[0] == '1';
}

/* K width 4 (see an_dot_kw4 in analysis.h): each thread's 4 bytes of a
 * row sit in one 32-bit word of the 8-bit slot, and the m16n8k16 MMA takes
 * them as K 2t, 2t + 1, 2t + 8, 2t + 9, the same permutation of K on both
 * sides (lower_dot_mma's register indices do not change), as Triton's
 * kWidth = 4 operands do. */
bool an_dot_kw4(IrFunc *f, const IrOp *dot, const IrLayout *mma, AnTileFn tile, void *arg)
{
	const char *e = getenv("CTRITON_DOT_KW4");
	if ((e && e[0] == '0') || !mma || mma->version_major != 2 || dot->opc != OP_DOT)
		return false;
	for (int i = 0; i < 2; i++) {
		bool regs = false, trans = false;
		const IrOp *t = ir_type_bits(ir_scalar(dot->ops[i]->type)) == 16
					? an_elem_source(f, dot->ops[i], tile, arg, &regs, &trans)
					: NULL;
		/* 8-bit, read into registers; A K-contiguous ([M][K]: ldmatrix),
		 * B either way ([N][K]: ldmatrix; [K][N]: byte reads) */
		if (!t || !regs || t->nres < 1 || ir_type_bits(ir_scalar(t->res[0].type)) != 8 || (i == 0 && trans) ||
		    (i == 1 && !trans && !an_kn_reads_on()))
			return false;
	}
	return true;
}

/* ------------------------------------------------------------------------- */
/* Assignment                                                                */
/* ------------------------------------------------------------------------- */

typedef struct LCtx {
	IrCtx *ctx;
	IrFunc *f;
	const AnAxis *ax;
	const AnGpuOptions *o;
	const IrLayout *rank_layout[IR_MAX_RANK + 1];
	int64_t rank_numel[IR_MAX_RANK + 1];
	const IrLayout **want; /* by value id */
	bool *dotfeed;          /* by value id: an operand of a dot, maybe through loop-carried values */
	int nvals;
} LCtx;

static void mark_dot_operands(LCtx *c, IrBlock *b)
{
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			mark_dot_operands(c, op->regions[r]);
		if (op->opc == OP_DOT)
			for (int i = 0; i < 2 && i < op->nops; i++)
				if (op->ops[i]->id >= 0 && op->ops[i]->id < c->nvals)
					c->dotfeed[op->ops[i]->id] = true;
	}
}

/* A loop-carried dot operand: its init and what the body yields feed the
 * dot too (the loads software pipelining moved ahead of the dot). */
static bool mark_carried(LCtx *c, IrBlock *b)
{
	bool changed = false;
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			changed |= mark_carried(c, op->regions[r]);
		if (op->opc != OP_FOR)
			continue;
		IrBlock *body = op->regions[0];
		IrOp *y = ir_block_terminator(body);
		for (int i = 3; i < op->nops && i - 2 < body->nargs; i++) {
			IrValue *arg = body->args[i - 2];
			if (arg->id < 0 || arg->id >= c->nvals || !c->dotfeed[arg->id])
				continue;
			IrValue *vs[2] = {op->ops[i], y && i - 3 < y->nops ? y->ops[i - 3] : NULL};
			for (int k = 0; k < 2; k++)
				if (vs[k] && vs[k]->id >= 0 && vs[k]->id < c->nvals && !c->dotfeed[vs[k]->id]) {
					c->dotfeed[vs[k]->id] = true;
					changed = true;
				}
		}
	}
	return changed;
}

static bool is_blk(const IrValue *v) { return v && ir_is_block(v->type); }

static const IrLayout *default_layout(LCtx *c, const IrType *t)
{
	if (!c->rank_layout[t->rank])
		c->rank_layout[t->rank] =
			an_blocked_layout(c->ctx, t->rank, t->shape, NULL, NULL, c->o->num_warps, c->o->warp_size);
	return c->rank_layout[t->rank];
}

static void find_anchors(LCtx *c, IrBlock *b)
{
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			find_anchors(c, op->regions[r]);
		if (op->opc != OP_LOAD && op->opc != OP_STORE && op->opc != OP_ATOMIC_RMW &&
		    op->opc != OP_ATOMIC_CAS && op->opc != OP_ASYNC_COPY)
			continue;
		IrValue *p = op->ops[0];
		if (!is_blk(p))
			continue;
		/* tiles loaded or copied for a dot get their own layouts
		 * (seed_dot_loads): a column-major operand must not decide how
		 * the rest, the result's store included, is laid out */
		if (op->opc == OP_ASYNC_COPY ||
		    (op->opc == OP_LOAD && op->res[0].id >= 0 && op->res[0].id < c->nvals && c->dotfeed[op->res[0].id]))
			continue;
		IrValue *mask = NULL;
		if (op->opc == OP_LOAD && op->nops > 1)
			mask = op->ops[1];
		if ((op->opc == OP_STORE || op->opc == OP_ASYNC_COPY) && op->nops > 2)
			mask = op->ops[2];
		int rank = p->type->rank;
		if (c->rank_layout[rank] && c->rank_numel[rank] >= p->type->numel)
			continue;
		c->rank_layout[rank] =
			an_coalesced_layout(c->ctx, c->ax, p, mask, c->o->num_warps, c->o->warp_size);
		c->rank_numel[rank] = p->type->numel;
	}
}

/* The blocked layout of trans(x, order) for x in blocked layout l: result
 * dim i is dim order[i] of x, each thread keeping its elements. */
static const IrLayout *trans_blocked(IrCtx *ctx, const IrLayout *l, const IrAttr *ord)
{
	IrLayout t = *l;
	int inv[IR_MAX_RANK];
	for (int i = 0; i < l->rank; i++) {
		int sd = ord && i < ord->n ? (int)ord->ints[i] : l->rank - 1 - i;
		if (sd < 0 || sd >= l->rank)
			return NULL;
		t.size_per_thread[i] = l->size_per_thread[sd];
		t.threads_per_warp[i] = l->threads_per_warp[sd];
		t.warps_per_cta[i] = l->warps_per_cta[sd];
		inv[sd] = i;
	}
	for (int j = 0; j < l->rank; j++)
		t.order[j] = inv[l->order[j]];
	return ir_layout(ctx, &t);
}

/* split of x in blocked layout l: when the last dim (of size 2) lies in
 * each thread's registers, the halves in l without it; else NULL. */
static const IrLayout *split_blocked(IrCtx *ctx, const IrLayout *l)
{
	int last = l->rank - 1;
	if (last < 1 || l->threads_per_warp[last] != 1 || l->warps_per_cta[last] != 1)
		return NULL;
	IrLayout t = *l;
	t.rank = last;
	for (int j = 0, k = 0; j < l->rank; j++)
		if (l->order[j] != last)
			t.order[k++] = l->order[j];
	return ir_layout(ctx, &t);
}

/* join of two blocks in blocked layout l: the pair in each thread's
 * consecutive registers (the new last dim fastest). */
static const IrLayout *join_blocked(IrCtx *ctx, const IrLayout *l)
{
	if (l->rank + 1 > IR_MAX_RANK)
		return NULL;
	IrLayout t = *l;
	int r = l->rank;
	t.rank = r + 1;
	t.size_per_thread[r] = 2;
	t.threads_per_warp[r] = 1;
	t.warps_per_cta[r] = 1;
	t.order[0] = r;
	for (int j = 0; j < r; j++)
		t.order[j + 1] = l->order[j];
	return ir_layout(ctx, &t);
}

static void set_want(LCtx *c, IrValue *v, const IrLayout *l)
{
	if (!is_blk(v) || !l || v->id < 0 || v->id >= c->nvals || c->want[v->id])
		return;
	if (l->rank != v->type->rank)
		return;
	c->want[v->id] = l;
}

static const IrLayout *target(LCtx *c, IrValue *v)
{
	if (v->id >= 0 && v->id < c->nvals && c->want[v->id])
		return c->want[v->id];
	return default_layout(c, v->type);
}

/* The layout a global load or store is done in (coalesce.c): the rank's
 * anchor, or the access's own coalesced layout where that vectorizes it
 * better. */
static const IrLayout *access_layout(LCtx *c, const IrOp *op)
{
	return an_access_layout(c->ctx, c->ax, op, default_layout(c, op->ops[0]->type), c->o);
}

static bool remat_ok(const IrValue *v, int depth);

/* The mma layout of the tensor-core dot v is computed from: v the dot's
 * result, a loop's result that its body yields from one, or an
 * elementwise op (a cast, a scaling) of one and of cheap operands; NULL
 * otherwise. */
static const IrLayout *mma_source(LCtx *c, const IrValue *v, int depth)
{
	const IrOp *d = v->def;
	if (!d || depth > 16)
		return NULL;
	if (d->opc == OP_DOT)
		return an_dot_mma_layout(c->ctx, d, c->o);
	if (d->opc == OP_FOR) {
		const IrOp *y = ir_block_terminator(d->regions[0]);
		int i = (int)(v - d->res);
		return y && y->opc == OP_YIELD && i >= 0 && i < y->nops ? mma_source(c, y->ops[i], depth + 1) : NULL;
	}
	unsigned fl = ir_opinfo(d->opc)->flags;
	if (!(fl & IR_ELEM) && d->opc != OP_CONVERT_LAYOUT)
		return NULL;
	const IrValue *src = NULL;
	for (int i = 0; i < d->nops; i++)
		if (is_blk(d->ops[i]) && !remat_ok(d->ops[i], 0) && d->ops[i]->def && d->ops[i]->def->opc != OP_BROADCAST) {
			if (src)
				return NULL; /* two costly operands */
			src = d->ops[i];
		}
	return src ? mma_source(c, src, depth + 1) : NULL;
}

/* A slot read (local_read) as an_dot_kw4 sees it. */
static bool slot_read_tile(const IrOp *op, void *arg, bool *regs, bool *transposed)
{
	(void)arg;
	if (op->opc != OP_LOCAL_READ)
		return false;
	*regs = ir_op_int(op, "regs", 0) != 0;
	*transposed = ir_op_int(op, "transposed", 0) != 0;
	return true;
}

static bool dot_kw4(LCtx *c, const IrOp *dot, const IrLayout *mma)
{
	return an_dot_kw4(c->f, dot, mma, slot_read_tile, NULL);
}

/* The dot_op layout of operand i of dot on mma. */
static const IrLayout *dot_operand_layout(LCtx *c, const IrOp *dot, const IrLayout *mma, int i)
{
	const IrLayout *l = an_dot_op_layout(c->ctx, mma, i, dot->ops[i]->type);
	if (!dot_kw4(c, dot, mma))
		return l;
	IrLayout k = *l;
	k.k_width = 4;
	return ir_layout(c->ctx, &k);
}

/* An 8-bit slot read into registers, not transposed. */
static bool r0_8bit_kn(const IrOp *r)
{
	return ir_op_int(r, "regs", 0) && !ir_op_int(r, "transposed", 0) &&
	       ir_type_bits(ir_scalar(r->res[0].type)) == 8;
}

/* A tile read back into registers (prefetch.c regs_ok) whose one use,
 * through single-use elementwise ops of it alone (casts), is a 16-bit
 * operand A of a warpgroup MMA (which takes A from
 * registers) or of mma.sync: the read goes straight into that operand's
 * layout (pairs along K, vectors of the slot's rows), the ops between run
 * there, and the MMA reads their registers, as Triton reads such an
 * operand (fp32 activations cast to fp16 were staged through shared
 * memory, three barriers an iteration, 0.89x of Triton on an H100). */
static const IrLayout *regs_read_layout(LCtx *c, IrValue *v)
{
	const IrOp *r0 = v->def;
	for (int depth = 0; depth < 8; depth++) {
		if (ir_count_uses(c->f, v) != 1 || !v->def)
			return NULL;
		IrOp *u = v->def->next;
		for (; u; u = u->next) {
			bool uses = false;
			for (int i = 0; i < u->nops; i++)
				uses |= u->ops[i] == v;
			if (uses)
				break;
		}
		if (!u)
			return NULL;
		if (u->opc == OP_DOT) {
			const IrLayout *mma = an_dot_mma_layout(c->ctx, u, c->o);
			IrTypeKind k = ir_scalar(v->type)->kind;
			if (u->ops[0] == u->ops[1] || !mma || (mma->version_major != 3 && mma->version_major != 2) ||
			    (k != TY_F16 && k != TY_BF16))
				return NULL;
			/* B too on mma.sync, in the K-width-4 layout (an_dot_kw4):
			 * ldmatrix from a slot that holds it K-contiguous ([N][K]),
			 * byte reads from one that holds it as loaded ([K][N]) */
			if (u->ops[1] == v && u->ops[0] != v && mma->version_major == 2 && dot_kw4(c, u, mma))
				return dot_operand_layout(c, u, mma, 1);
			/* and B from an 8-bit slot [K][N] beside another A (an fp8
			 * B upcast on sm_80): byte reads, two rows a register pair,
			 * as Triton reads it; staged, the upcast tile went through
			 * shared memory a second time */
			if (u->ops[1] == v && u->ops[0] != v && mma->version_major == 2 && r0_8bit_kn(r0) &&
			    an_kn_reads_on())
				return dot_operand_layout(c, u, mma, 1);
			if (u->ops[0] != v)
				return NULL;
			return dot_operand_layout(c, u, mma, 0);
		}
		unsigned fl = ir_opinfo(u->opc)->flags;
		if (!(fl & IR_ELEM) || !(fl & IR_PURE) || u->nres != 1 || u->nregions || !is_blk(&u->res[0]) ||
		    u->res[0].type->rank != v->type->rank)
			return NULL;
		for (int i = 0; i < u->nops; i++)
			if (u->ops[i] != v && is_blk(u->ops[i]))
				return NULL; /* a splat in that layout: not yet */
		v = &u->res[0];
	}
	return NULL;
}

/* The values derived from v through pure elementwise ops of its block
 * (into set, at most 64); false where one is used by another kind of op
 * than those and dots, or outside the block's straight line. */
static bool forward_slice(LCtx *c, IrValue *v, IrValue **set, int *n)
{
	for (int j = 0; j < *n; j++)
		if (set[j] == v)
			return true;
	if (*n == 64 || !v->def)
		return false;
	set[(*n)++] = v;
	int seen = 0;
	for (IrOp *u = v->def->next; u; u = u->next) {
		int uses = 0;
		for (int i = 0; i < u->nops; i++)
			uses += u->ops[i] == v;
		if (!uses)
			continue;
		seen += uses;
		if (u->opc == OP_DOT)
			continue;
		unsigned fl = ir_opinfo(u->opc)->flags;
		if (!(fl & IR_ELEM) || !(fl & IR_PURE) || u->nres != 1 || u->nregions || !is_blk(&u->res[0]) ||
		    !forward_slice(c, &u->res[0], set, n))
			return false;
	}
	return seen == ir_count_uses(c->f, v);
}

/* A 32-bit tile read back into registers whose values, through elementwise
 * ops of them and of constants (a tf32x3 split: the high part by bit
 * masking, the low by a subtraction), are read only as operand A of
 * tensor-core dots on one MMA layout, or by ops of the slice: the read
 * goes into that operand's layout (one element a register), the split
 * runs there, and the MMAs read the registers (a warpgroup MMA takes a
 * tf32 A from registers), as Triton reads them; before, each half was
 * staged through shared memory with its own barriers. */
static const IrLayout *regs_read_layout32(LCtx *c, IrValue *v)
{
	IrValue *set[64];
	int n = 0;
	if (ir_type_bits(ir_scalar(v->type)) != 32 || !forward_slice(c, v, set, &n))
		return NULL;
	const IrLayout *l = NULL;
	for (int j = 0; j < n; j++) {
		IrValue *x = set[j];
		for (IrOp *u = x->def->next; u; u = u->next) {
			bool uses = false;
			for (int i = 0; i < u->nops; i++)
				uses |= u->ops[i] == x;
			if (!uses)
				continue;
			if (u->opc == OP_DOT) {
				const IrLayout *mma = an_dot_mma_layout(c->ctx, u, c->o);
				if (u->ops[0] != x || u->ops[1] == x || u->ops[2] == x || !mma ||
				    (mma->version_major != 3 && mma->version_major != 2) ||
				    ir_scalar(x->type)->kind != TY_F32)
					return NULL;
				const IrLayout *dl = an_dot_op_layout(c->ctx, mma, 0, x->type);
				if (l && l != dl)
					return NULL;
				l = dl;
				continue;
			}
			/* 32- or 1-bit values (a compare), other operands in the
			 * slice or cheap (a splat of a constant) */
			int bits = ir_type_bits(ir_scalar(u->res[0].type));
			if (bits != 32 && bits != 1)
				return NULL;
			for (int i = 0; i < u->nops; i++) {
				bool in = false;
				for (int k = 0; k < n; k++)
					in |= set[k] == u->ops[i];
				if (!in && is_blk(u->ops[i]) && !remat_ok(u->ops[i], 0))
					return NULL;
			}
		}
	}
	return l;
}

static void wants_block(LCtx *c, IrBlock *b)
{
	for (IrOp *op = b->last; op; op = op->prev) {
		for (int r = op->nregions - 1; r >= 0; r--)
			wants_block(c, op->regions[r]);
		unsigned fl = ir_opinfo(op->opc)->flags;
		switch (op->opc) {
		case OP_STORE:
			if (is_blk(op->ops[0])) {
				/* pointer, value and mask in the store's layout */
				const IrLayout *t = access_layout(c, op);
				for (int i = 0; i < op->nops; i++)
					set_want(c, op->ops[i], t);
				break;
			}
			/* fall through */
		case OP_ATOMIC_RMW:
		case OP_ATOMIC_CAS:
		case OP_REDUCE:
		case OP_SCAN:
			for (int i = 0; i < op->nops; i++)
				if (is_blk(op->ops[i]))
					set_want(c, op->ops[i], default_layout(c, op->ops[i]->type));
			break;
		case OP_TMA_STORE: {
			/* any layout goes into the store's scratch: the value's own,
			 * an accumulator's when it comes from one (no conversion);
			 * else one writing 16 bytes a thread along the rows, which
			 * a subtiled epilogue (reshape, permute, split of an
			 * accumulator) reaches through one vectorized conversion,
			 * the rest register renamings */
			if (!is_blk(op->ops[3]))
				break;
			const IrLayout *l = mma_source(c, op->ops[3], 0);
			if (!l) {
				const IrType *t = op->ops[3]->type;
				int spt[IR_MAX_RANK], es = ir_type_bits(ir_scalar(t)) / 8;
				int64_t per = t->numel / ((int64_t)c->o->num_warps * c->o->warp_size);
				for (int d = 0; d < t->rank; d++)
					spt[d] = 1;
				int v = es > 0 && es < 16 ? 16 / es : 1;
				while (v > 1 && (v > t->shape[t->rank - 1] || v > per))
					v /= 2;
				spt[t->rank - 1] = v;
				l = an_blocked_layout(c->ctx, t->rank, t->shape, spt, NULL, c->o->num_warps, c->o->warp_size);
			}
			if (l)
				set_want(c, op->ops[3], l);
			break;
		}
		case OP_CALL:
		case OP_RETURN:
			/* blocks cross calls in their canonical layout (call.c) */
			for (int i = 0; i < op->nops; i++)
				if (is_blk(op->ops[i]))
					set_want(c, op->ops[i], an_call_type(c->ctx, op->ops[i]->type, c->o)->layout);
			break;
		case OP_SPLIT:
			/* the halves' layout with the pair in each thread's registers */
			if (is_blk(op->ops[0]) && is_blk(&op->res[0])) {
				const IrLayout *t = target(c, &op->res[0]);
				if (t && t->kind == LAYOUT_BLOCKED)
					set_want(c, op->ops[0], join_blocked(c->ctx, t));
			}
			break;
		case OP_TRANS:
			/* the inverse permutation of the result's layout */
			if (is_blk(op->ops[0]) && is_blk(&op->res[0])) {
				const IrLayout *t = target(c, &op->res[0]);
				const IrAttr *ord = ir_op_attr(op, "order");
				int rank = op->res[0].type->rank;
				if (t && t->kind == LAYOUT_BLOCKED && rank <= IR_MAX_RANK) {
					int64_t inv[IR_MAX_RANK];
					for (int i = 0; i < rank; i++)
						inv[ord && i < ord->n ? ord->ints[i] : rank - 1 - i] = i;
					IrAttr ia = {.n = rank, .ints = inv};
					set_want(c, op->ops[0], trans_blocked(c->ctx, t, &ia));
				}
			}
			break;
		case OP_EXPAND_DIMS: {
			const IrLayout *t = target(c, &op->res[0]);
			if (is_blk(op->ops[0]))
				set_want(c, op->ops[0], an_slice_layout(c->ctx, (int)ir_op_int(op, "axis", 0), t));
			break;
		}
		case OP_FOR:
			for (int i = 3; i < op->nops; i++) {
				if (!is_blk(op->ops[i]))
					continue;
				/* an accumulator carried into a tensor-core dot stays in
				 * its mma layout across iterations */
				IrValue *arg = op->regions[0]->args[i - 2];
				const IrLayout *w = arg->id >= 0 && arg->id < c->nvals ? c->want[arg->id] : NULL;
				set_want(c, op->ops[i], w ? w : target(c, &op->res[i - 3]));
			}
			break;
		case OP_YIELD: {
			/* a loop body yields in the layout its argument is wanted in,
			 * an `if`'s region in the one its result is */
			IrOp *lp = b->parent_op;
			if (lp && lp->opc == OP_IF) {
				for (int i = 0; i < op->nops && i < lp->nres; i++) {
					IrValue *r = &lp->res[i];
					if (r->id >= 0 && r->id < c->nvals && c->want[r->id])
						set_want(c, op->ops[i], c->want[r->id]);
				}
				break;
			}
			if (!lp || lp->opc != OP_FOR)
				break;
			for (int i = 0; i < op->nops && i + 1 < b->nargs; i++) {
				IrValue *arg = b->args[i + 1];
				if (arg->id >= 0 && arg->id < c->nvals && c->want[arg->id])
					set_want(c, op->ops[i], c->want[arg->id]);
			}
			break;
		}
		case OP_DOT: {
			const IrLayout *mma = an_dot_mma_layout(c->ctx, op, c->o);
			set_want(c, op->ops[2], mma ? mma : target(c, &op->res[0]));
			/* an A computed in registers (attention's P) is best computed in
			 * the mma layout when that holds A's fragments as they are */
			if (mma && mma->warps_per_cta[1] == 1 && is_blk(op->ops[0])) {
				const IrType *ta = ir_type_with_layout(c->ctx, op->ops[0]->type, mma);
				const IrType *td = ir_type_with_layout(c->ctx, op->ops[0]->type,
								       an_dot_op_layout(c->ctx, mma, 0, op->ops[0]->type));
				if (an_same_registers(ta, td))
					set_want(c, op->ops[0], mma);
			} else if (mma && is_blk(op->ops[0]) && mma_source(c, op->ops[0], 0) == mma) {
				/* with the warps split along N, P still comes from an
				 * accumulator in this layout: computed there, it crosses
				 * shared memory once, as A (16-bit), instead of S (f32)
				 * going to a blocked layout for its row reductions and
				 * again to A (a 32-row attention tile with 4 warps) */
				set_want(c, op->ops[0], mma);
			}
			break;
		}
		default:
			if ((fl & IR_ELEM) || op->opc == OP_LOAD || op->opc == OP_BROADCAST ||
			    op->opc == OP_MULTIPLE_OF || op->opc == OP_MAX_CONTIGUOUS ||
			    op->opc == OP_MAX_CONSTANCY || op->opc == OP_CONVERT_LAYOUT) {
				/* an inline asm's or a mapped function's results share one
				 * layout: the first one's wish */
				if ((op->nres != 1 && op->opc != OP_INLINE_ASM && op->opc != OP_MAP_ELEM) || op->nres < 1 ||
				    !is_blk(&op->res[0]))
					break;
				const IrLayout *t = op->opc != OP_LOAD ? target(c, &op->res[0])
						    : is_blk(op->ops[0]) ? access_layout(c, op)
									 : default_layout(c, op->res[0].type);
				for (int i = 0; i < op->nops; i++)
					set_want(c, op->ops[i], t);
			}
			break;
		}
	}
}

/* The layout of a 2-D copy of 32-bit elements across the slot's rows (a
 * tf32 B whose rows run along N, or a column-major A, copied into the
 * K-major slot the warpgroup MMA reads) that coalesced layout l would copy
 * one element at a time: each lane one element, 8 lanes along the
 * pointer's contiguous dim and 4 along the other, the warps down the other
 * dim first. A warp then reads four 32-byte
 * sectors and writes its 32 elements to 32 distinct banks of the swizzled
 * slot (8 slot rows, whose keys differ, by 4 consecutive words of one
 * 16-byte chunk), where l's runs of 4 along a slot column (lanes 4 slot
 * rows apart) put 32 lanes on 2 banks. NULL when the copy moves runs. */
static const IrLayout *element_copy_layout(LCtx *c, const IrOp *op, const IrLayout *l)
{
	/* CTRITON_ELEMENT_COPIES=0: the coalesced layout (part of the key) */
	const char *env = getenv("CTRITON_ELEMENT_COPIES");
	const IrType *t = op->ops[0]->type;
	if ((env && !strcmp(env, "0")) || ir_op_int(op, "plain", 0) || t->rank != 2 || !l ||
	    l->kind != LAYOUT_BLOCKED || ir_type_bits(ir_scalar(t)->elem) != 32 || c->o->warp_size != 32)
		return NULL;
	/* the slot's rows run along dim 1 ([R][C]), or along dim 0 when it
	 * holds the tile transposed ([C][R]); a layout fastest along the
	 * other dim copies single elements */
	int fast = l->order[0], slow = 1 - fast, cd = ir_op_int(op, "transposed", 0) ? 0 : 1;
	if (fast == cd || t->shape[fast] < 8 || t->shape[slow] < 4)
		return NULL;
	IrLayout e = {0};
	e.kind = LAYOUT_BLOCKED;
	e.rank = 2;
	e.size_per_thread[0] = e.size_per_thread[1] = 1;
	e.threads_per_warp[fast] = 8;
	e.threads_per_warp[slow] = 4;
	int w = c->o->num_warps, ws = 1;
	while (ws * 2 <= w && 4 * ws * 2 <= t->shape[slow])
		ws *= 2;
	e.warps_per_cta[slow] = ws;
	e.warps_per_cta[fast] = w / ws;
	e.order[0] = fast;
	e.order[1] = slow;
	return ir_layout(c->ctx, &e);
}

/* A tile loaded for a dot gets its own coalesced layout, before any other
 * wish (the rank's layout, fitted to the largest access, would replicate a
 * narrower tile across threads). */
static void seed_dot_loads(LCtx *c, IrBlock *b)
{
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			seed_dot_loads(c, op->regions[r]);
		if (op->opc == OP_ASYNC_COPY && is_blk(op->ops[0])) {
			/* a tile copied to shared memory for a dot: its own coalesced
			 * layout, or one element a thread where the copy runs across
			 * the slot's rows (element_copy_layout) */
			IrValue *mask = op->nops > 2 ? op->ops[2] : NULL;
			const IrLayout *t = an_coalesced_layout(c->ctx, c->ax, op->ops[0], mask,
								c->o->num_warps, c->o->warp_size);
			const IrLayout *e = element_copy_layout(c, op, t);
			if (e)
				t = e;
			set_want(c, op->ops[0], t);
			if (mask)
				set_want(c, mask, t);
			continue;
		}
		if (op->opc != OP_LOAD || op->nres != 1 || !is_blk(&op->res[0]) || !is_blk(op->ops[0]))
			continue;
		if (op->res[0].id < 0 || op->res[0].id >= c->nvals || !c->dotfeed[op->res[0].id])
			continue;
		const IrLayout *t = an_coalesced_layout(c->ctx, c->ax, op->ops[0],
							op->nops > 1 ? op->ops[1] : NULL,
							c->o->num_warps, c->o->warp_size);
		set_want(c, &op->res[0], t);
		for (int i = 0; i < op->nops; i++)
			set_want(c, op->ops[i], t);
	}
}

static void set_layout(LCtx *c, IrValue *v, const IrLayout *l)
{
	if (is_blk(v))
		v->type = ir_type_with_layout(c->ctx, v->type, l);
}

/* Makes op's operand i have layout l, inserting a convert_layout before op. */
static void convert_operand(LCtx *c, IrOp *op, int i, const IrLayout *l)
{
	IrValue *v = op->ops[i];
	if (!is_blk(v) || v->type->layout == l)
		return;
	const IrType *rt = ir_type_with_layout(c->ctx, v->type, l);
	IrOp *cv = ir_op_new(c->ctx, OP_CONVERT_LAYOUT, 1, &v, 1, &rt, 0, op->loc);
	cv->res[0].id = -1;
	ir_block_insert_before(op->parent, op, cv);
	ir_op_set_operand(op, i, &cv->res[0]);
}

/* Whether block b is (inside) a loop body nested under block outer. */
static bool in_loop_under(const IrBlock *b, const IrBlock *outer)
{
	for (; b && b != outer; b = b->parent_op ? b->parent_op->parent : NULL)
		if (b->parent_op && (b->parent_op->opc == OP_FOR || b->parent_op->opc == OP_WHILE))
			return true;
	return false;
}

/* Like convert_operand for a dot operand that a warpgroup MMA reads from
 * shared memory: when the value comes from outside the loop around the dot
 * (attention's Q), the tile is staged once, right after its definition,
 * and stays in shared memory through the loop. */
static void convert_dot_operand(LCtx *c, IrOp *op, int i, const IrLayout *l)
{
	IrValue *v = op->ops[i];
	IrBlock *home = v->def ? v->def->parent : v->owner;
	if (!is_blk(v) || v->type->layout == l || !an_is_wgmma(ir_type_with_layout(c->ctx, v->type, l)) ||
	    !home || !in_loop_under(op->parent, home)) {
		convert_operand(c, op, i, l);
		return;
	}
	const IrType *rt = ir_type_with_layout(c->ctx, v->type, l);
	IrOp *cv = ir_op_new(c->ctx, OP_CONVERT_LAYOUT, 1, &v, 1, &rt, 0, op->loc);
	cv->res[0].id = -1;
	if (!an_wgmma_smem_operand(cv)) {
		convert_operand(c, op, i, l);
		return;
	}
	if (v->def && v->def->next)
		ir_block_insert_before(home, v->def->next, cv);
	else if (!v->def && home->first)
		ir_block_insert_before(home, home->first, cv);
	else {
		convert_operand(c, op, i, l);
		return;
	}
	ir_op_set_operand(op, i, &cv->res[0]);
}

static const IrLayout *want_of(LCtx *c, IrValue *v)
{
	return target(c, v);
}

static void assign_block(LCtx *c, IrBlock *b);

/* CTRITON_INIT_LOADS=0: a loop's initial accumulator loaded in the
 * coalesced layout and converted, as before (else in the MMA layout) */
static bool init_loads(void)
{
	const char *e = getenv("CTRITON_INIT_LOADS");
	return !(e && e[0] == '0');
}

bool an_small_loads(void)
{
	const char *e = getenv("CTRITON_SMALL_LOADS");
	return e && e[0] == '1';
}

/* v is computed only from constants, ranges, splats of scalars and pure
 * elementwise ops over them: cheap to recompute in any layout. */
static bool remat_chain(const IrValue *v, int depth, bool shapes)
{
	if (!is_blk(v))
		return true;
	const IrOp *d = v->def;
	if (!d || depth > 8)
		return false;
	if (d->opc == OP_CONSTANT || d->opc == OP_POISON || d->opc == OP_MAKE_RANGE)
		return true;
	if (d->opc == OP_SPLAT)
		return !is_blk(d->ops[0]);
	if (d->opc == OP_CONVERT_LAYOUT)
		return remat_chain(d->ops[0], depth + 1, shapes);
	if (shapes && (d->opc == OP_EXPAND_DIMS || d->opc == OP_BROADCAST))
		return remat_chain(d->ops[0], depth + 1, shapes);
	unsigned fl = ir_opinfo(d->opc)->flags;
	if (!(fl & IR_ELEM) || !(fl & IR_PURE) || d->nres != 1 || d->nops > 8) /* remat copies up to 8 */
		return false;
	for (int i = 0; i < d->nops; i++)
		if (!remat_chain(d->ops[i], depth + 1, shapes))
			return false;
	return true;
}

static bool remat_ok(const IrValue *v, int depth) { return remat_chain(v, depth, false); }

/* The same, through expand_dims and broadcast too (an address block built
 * from index vectors): what a store may compute again in its value's
 * layout (remat makes the vectors in the slices of it). */
static bool remat_addr_ok(const IrValue *v) { return remat_chain(v, 0, true); }

/* A reshape's result takes its wanted layout. When its operand's layout
 * does not hold the same elements per thread, the operand is converted
 * first (a staged, vectorized conversion) to a blocked layout of its own
 * shape that does, when one of the candidates below is: the reshape then
 * renames registers, instead of a scalar exchange through shared memory. */
static void reshape_layouts(LCtx *c, IrOp *op)
{
	const IrType *st = op->ops[0]->type, *rt0 = op->res[0].type;
	const IrLayout *rl = want_of(c, &op->res[0]);
	set_layout(c, &op->res[0], rl);
	const IrType *rt = op->res[0].type;
	int nw = c->o->num_warps, ws = c->o->warp_size;
	(void)rt0;
	if (!rl || rl->kind != LAYOUT_BLOCKED || an_reshape_renaming(st, rt, nw, ws))
		return;
	/* candidates: row-major, as many contiguous elements per thread along
	 * the last dim as the result holds along its last dim (or fewer), the
	 * lanes and warps spread as over the source shape or as over one whose
	 * last dim is the result's (then the source's last dim wraps around in
	 * registers, as a split of it into (a, b) needs) */
	int spt[IR_MAX_RANK];
	int64_t fake[IR_MAX_RANK];
	int sl = st->rank - 1, rlast = rt->rank - 1;
	for (int v = rl->size_per_thread[rlast]; v >= 1; v /= 2)
		for (int e = 0; e < 2; e++) {
			if (v > st->shape[sl])
				continue;
			for (int d = 0; d < st->rank; d++) {
				spt[d] = d == sl ? v : 1;
				fake[d] = st->shape[d];
			}
			if (e == 1) {
				if (rt->shape[rlast] >= st->shape[sl] || rt->shape[rlast] < v)
					continue;
				fake[sl] = rt->shape[rlast];
			}
			const IrLayout *cand = an_blocked_layout(c->ctx, st->rank, fake, spt, NULL, nw, ws);
			if (!cand || cand == st->layout)
				continue;
			if (an_reshape_renaming(ir_type_with_layout(c->ctx, st, cand), rt, nw, ws)) {
				convert_operand(c, op, 0, cand);
				return;
			}
		}
}

static void assign_op(LCtx *c, IrOp *op)
{
	unsigned fl = ir_opinfo(op->opc)->flags;
	IrValue *res = op->nres > 0 ? &op->res[0] : NULL;
	switch (op->opc) {
	case OP_CONSTANT:
	case OP_POISON:
	case OP_MAKE_RANGE:
	case OP_SPLAT:
		if (is_blk(res))
			set_layout(c, res, want_of(c, res));
		return;
	case OP_BROADCAST: {
		const IrLayout *l = op->ops[0]->type->layout;
		const IrLayout *w = res->id >= 0 && res->id < c->nvals ? c->want[res->id] : NULL;
		if (w && w != l) {
			convert_operand(c, op, 0, w);
			l = w;
		}
		set_layout(c, res, l);
		return;
	}
	case OP_EXPAND_DIMS: {
		int axis = (int)ir_op_int(op, "axis", 0);
		const IrLayout *l = is_blk(op->ops[0]) ? op->ops[0]->type->layout : NULL;
		const IrLayout *w = res->id >= 0 && res->id < c->nvals ? c->want[res->id] : NULL;
		/* free when the operand is a slice along axis; a cheap operand
		 * (a range shared by accesses in other layouts) follows the want */
		if (l && l->kind == LAYOUT_SLICE && l->dim == axis &&
		    (!w || w == l->parent || !remat_ok(op->ops[0], 0))) {
			set_layout(c, res, l->parent);
			return;
		}
		const IrLayout *t = want_of(c, res);
		if (is_blk(op->ops[0]))
			convert_operand(c, op, 0, an_slice_layout(c->ctx, axis, t));
		set_layout(c, res, t);
		return;
	}
	case OP_REDUCE: {
		const IrLayout *l = op->ops[0]->type->layout;
		for (int i = 1; i < op->nops; i++)
			convert_operand(c, op, i, l);
		int axis = (int)ir_op_int(op, "axis", 0);
		for (int i = 0; i < op->nres; i++)
			if (is_blk(&op->res[i]))
				set_layout(c, &op->res[i], an_slice_layout(c->ctx, axis, l));
		assign_block(c, op->regions[0]);
		return;
	}
	case OP_SCAN: {
		const IrLayout *l = op->ops[0]->type->layout;
		for (int i = 1; i < op->nops; i++)
			convert_operand(c, op, i, l);
		for (int i = 0; i < op->nres; i++)
			set_layout(c, &op->res[i], l);
		assign_block(c, op->regions[0]);
		return;
	}
	case OP_DOT: {
		const IrLayout *mma = an_dot_mma_layout(c->ctx, op, c->o);
		if (mma) {
			convert_dot_operand(c, op, 0, dot_operand_layout(c, op, mma, 0));
			convert_dot_operand(c, op, 1, dot_operand_layout(c, op, mma, 1));
			convert_operand(c, op, 2, mma);
		}
		set_layout(c, res, op->ops[2]->type->layout);
		return;
	}
	case OP_ASYNC_COPY: {
		const IrLayout *l = op->ops[0]->type->layout;
		if (op->nops > 2)
			convert_operand(c, op, 2, l);
		return;
	}
	case OP_LOCAL_READ: {
		/* read straight into the dot operand layout (ldmatrix); a tile
		 * read back into registers (prefetch.c regs_ok) in the layout its
		 * users want (regs_read_layout) */
		if (ir_op_int(op, "regs", 0)) {
			const IrLayout *rl = regs_read_layout(c, res);
			if (!rl)
				rl = regs_read_layout32(c, res);
			set_layout(c, res, rl ? rl : want_of(c, res));
			return;
		}
		const IrLayout *l = NULL;
		for (IrOp *u = op->next; u && !l; u = u->next) {
			if (u->opc != OP_DOT)
				continue;
			for (int i = 0; i < 2; i++) {
				if (u->ops[i] != res)
					continue;
				const IrLayout *mma = an_dot_mma_layout(c->ctx, u, c->o);
				if (mma)
					l = an_dot_op_layout(c->ctx, mma, i, res->type);
			}
		}
		set_layout(c, res, l ? l : want_of(c, res));
		return;
	}
	case OP_CONVERT_LAYOUT:
		if (!res->type->layout)
			set_layout(c, res, want_of(c, res));
		return;
	case OP_CALL:
		/* arguments and results in their canonical layouts, which the
		 * callee's parameters and results have as well */
		for (int i = 0; i < op->nops; i++)
			if (is_blk(op->ops[i]))
				convert_operand(c, op, i, an_call_type(c->ctx, op->ops[i]->type, c->o)->layout);
		for (int i = 0; i < op->nres; i++)
			if (is_blk(&op->res[i]))
				set_layout(c, &op->res[i], an_call_type(c->ctx, op->res[i].type, c->o)->layout);
		return;
	case OP_RETURN:
		for (int i = 0; i < op->nops && i < c->f->nres; i++)
			if (is_blk(op->ops[i]))
				convert_operand(c, op, i, c->f->restys[i]->layout);
		return;
	case OP_FOR: {
		IrBlock *body = op->regions[0];
		for (int i = 3; i < op->nops; i++) {
			const IrLayout *l = is_blk(op->ops[i]) ? op->ops[i]->type->layout : NULL;
			set_layout(c, body->args[i - 2], l);
			set_layout(c, &op->res[i - 3], l);
		}
		assign_block(c, body);
		IrOp *y = ir_block_terminator(body);
		for (int i = 0; y && i < y->nops; i++)
			convert_operand(c, y, i, body->args[i + 1]->type->layout);
		return;
	}
	case OP_IF: {
		assign_block(c, op->regions[0]);
		assign_block(c, op->regions[1]);
		IrOp *yt = ir_block_terminator(op->regions[0]);
		IrOp *ye = ir_block_terminator(op->regions[1]);
		for (int i = 0; i < op->nres; i++) {
			if (!is_blk(&op->res[i]))
				continue;
			/* the then-branch's layout, or the one the result is wanted
			 * in where a branch yields in it (a tile switch's carried
			 * offsets: the other branch passes them on) */
			const IrLayout *l = yt ? yt->ops[i]->type->layout : want_of(c, &op->res[i]);
			const IrLayout *w = op->res[i].id >= 0 && op->res[i].id < c->nvals ? c->want[op->res[i].id] : NULL;
			if (w && yt && ye && l != w && ye->ops[i]->type->layout == w)
				l = w;
			set_layout(c, &op->res[i], l);
			if (yt && yt->ops[i]->type->layout != l)
				convert_operand(c, yt, i, l);
			if (ye)
				convert_operand(c, ye, i, l);
		}
		return;
	}
	case OP_WHILE: {
		IrBlock *before = op->regions[0], *after = op->regions[1];
		for (int i = 0; i < op->nops; i++)
			set_layout(c, before->args[i], is_blk(op->ops[i]) ? op->ops[i]->type->layout : NULL);
		assign_block(c, before);
		IrOp *cond = ir_block_terminator(before);
		for (int i = 0; cond && i + 1 < cond->nops; i++) {
			const IrLayout *l = is_blk(cond->ops[i + 1]) ? cond->ops[i + 1]->type->layout : NULL;
			set_layout(c, after->args[i], l);
			set_layout(c, &op->res[i], l);
		}
		assign_block(c, after);
		IrOp *y = ir_block_terminator(after);
		for (int i = 0; y && i < y->nops; i++)
			convert_operand(c, y, i, before->args[i]->type->layout);
		return;
	}
	default:
		break;
	}
	for (int r = 0; r < op->nregions; r++)
		assign_block(c, op->regions[r]);
	if ((fl & IR_ELEM) || op->opc == OP_LOAD || op->opc == OP_STORE || op->opc == OP_ATOMIC_RMW ||
	    op->opc == OP_ATOMIC_CAS || op->opc == OP_MULTIPLE_OF || op->opc == OP_MAX_CONTIGUOUS ||
	    op->opc == OP_MAX_CONSTANCY) {
		/* one layout for every block operand and the result */
		const IrLayout *l = NULL;
		const IrLayout *w = res && is_blk(res) && res->id >= 0 && res->id < c->nvals ? c->want[res->id] : NULL;
		if (op->opc == OP_LOAD || op->opc == OP_STORE || op->opc == OP_ATOMIC_RMW ||
		    op->opc == OP_ATOMIC_CAS) {
			if (is_blk(op->ops[0]))
				l = op->ops[0]->type->layout;
			/* storing a value born in another layout (a reduction result):
			 * move the cheap address computation instead of the data, when
			 * the value's layout vectorizes the store as well; otherwise
			 * the value is converted (through shared memory). Not an MMA
			 * result: its threads hold two neighbouring columns of 8 rows a
			 * warp, so where neither layout vectorizes (an address of
			 * unknown alignment, tutorial 08's C) each store would touch 8
			 * rows where the coalesced layout writes 64 bytes of one (a
			 * tile's epilogue three times longer on the H100) */
			IrValue *mask = op->opc == OP_STORE && op->nops > 2 ? op->ops[2] : NULL;
			const IrLayout *vl = is_blk(op->ops[1]) ? op->ops[1]->type->layout : NULL;
			if (op->opc == OP_STORE && l && vl && vl != l && vl->kind != LAYOUT_MMA &&
			    remat_addr_ok(op->ops[0]) && (!mask || remat_addr_ok(mask)) &&
			    an_layout_vec(c->ax, op->ops[0], mask, vl) >= an_layout_vec(c->ax, op->ops[0], mask, l))
				l = vl;
			/* a load of fewer elements than the block has threads (a row
			 * statistic beside a dot result: attention backward's m and
			 * delta) is done in the layout its users want, its cheap
			 * address rematerialised there: the coalesced layout repeats
			 * its elements across threads anyway, and converting the
			 * loaded vector costs a shared-memory round trip and a
			 * barrier each time (twice an iteration in attention
			 * backward's dK/dV loop). CTRITON_SMALL_LOADS=1, opt-in until
			 * a GPU has run it */
			IrValue *lmask = op->opc == OP_LOAD && op->nops > 1 ? op->ops[1] : NULL;
			IrValue *lother = op->opc == OP_LOAD && op->nops > 2 ? op->ops[2] : NULL;
			if (op->opc == OP_LOAD && l && w && w != l && an_small_loads() &&
			    res->type->numel < (int64_t)c->o->num_warps * c->o->warp_size && remat_addr_ok(op->ops[0]) &&
			    (!lmask || remat_addr_ok(lmask)) && (!lother || remat_ok(lother, 0)))
				l = w;
			/* a loop's initial accumulator (acc = tl.load(C) before a K
			 * loop of dots) is loaded in the MMA layout, as Triton
			 * rematerialises it: converted, its tile took a scratch of
			 * its own beside the loop's slots, whose copies were already
			 * in flight (128x128 fp32 with BK 64 and 2 stages: 192 KiB
			 * on sm_80 where Triton asks 64, out of resources), and a
			 * shared-memory round trip. Each warp still reads whole
			 * 32-byte sectors (two neighbouring columns a thread, four
			 * threads a row). CTRITON_INIT_LOADS=0 turns it off (part of
			 * the cache key) */
			if (op->opc == OP_LOAD && l && w && w != l && w->kind == LAYOUT_MMA && init_loads() &&
			    remat_addr_ok(op->ops[0]) && (!lmask || remat_addr_ok(lmask)) &&
			    (!lother || remat_ok(lother, 0))) {
				IrOp *u = an_only_user(c->f, res);
				if (u && u->opc == OP_FOR)
					l = w;
			}
		} else {
			/* operands cheap to recompute in any layout (constants,
			 * ranges, splats) do not decide when others are not: those
			 * are converted, the cheap ones rematerialised */
			bool costly = false;
			for (int i = 0; i < op->nops; i++)
				costly |= is_blk(op->ops[i]) && !remat_ok(op->ops[i], 0);
			for (int i = 0; i < op->nops; i++)
				if (is_blk(op->ops[i]) && (!costly || !remat_ok(op->ops[i], 0)) && w &&
				    op->ops[i]->type->layout == w)
					l = w;
			for (int i = 0; !l && i < op->nops; i++)
				if (is_blk(op->ops[i]) && (!costly || !remat_ok(op->ops[i], 0)))
					l = op->ops[i]->type->layout;
		}
		if (!l && res && is_blk(res))
			l = want_of(c, res);
		if (!l)
			return;
		for (int i = 0; i < op->nops; i++)
			if (is_blk(op->ops[i]))
				convert_operand(c, op, i, l);
		for (int i = 0; i < op->nres; i++)
			set_layout(c, &op->res[i], l);
		return;
	}
	/* trans, split and join of blocked layouts: results in the layouts
	 * that keep every element in its thread (regperm.c) */
	const IrLayout *in0 = is_blk(op->ops[0]) ? op->ops[0]->type->layout : NULL;
	const IrLayout *rl = NULL;
	if (in0 && in0->kind == LAYOUT_BLOCKED && op->nres >= 1 && is_blk(&op->res[0])) {
		if (op->opc == OP_TRANS)
			rl = trans_blocked(c->ctx, in0, ir_op_attr(op, "order"));
		else if (op->opc == OP_SPLIT)
			rl = split_blocked(c->ctx, in0);
		else if (op->opc == OP_JOIN && op->nops == 2 && is_blk(op->ops[1])) {
			convert_operand(c, op, 1, in0);
			rl = join_blocked(c->ctx, in0);
		}
	}
	if (rl) {
		for (int i = 0; i < op->nres; i++)
			set_layout(c, &op->res[i], rl);
		return;
	}
	if (op->opc == OP_RESHAPE && in0 && is_blk(&op->res[0])) {
		reshape_layouts(c, op);
		return;
	}
	/* reshape, trans, cat, join, split, gather, histogram, calls, ...:
	 * results take their rank's layout (lowered through shared memory) */
	for (int i = 0; i < op->nres; i++)
		if (is_blk(&op->res[i]))
			set_layout(c, &op->res[i], want_of(c, &op->res[i]));
	/* gather reads its index register by register with the result's
	 * elements: the index in the result's layout */
	if (op->opc == OP_GATHER && op->nops > 1 && is_blk(&op->res[0]))
		convert_operand(c, op, 1, op->res[0].type->layout);
	/* histogram reads its mask register by register with its input */
	if (op->opc == OP_HISTOGRAM && op->nops > 1 && is_blk(op->ops[0]))
		convert_operand(c, op, 1, op->ops[0]->type->layout);
}

static void assign_block(LCtx *c, IrBlock *b)
{
	for (IrOp *op = b->first; op; op = op->next)
		assign_op(c, op);
}

IrError *an_assign_layouts(IrFunc *f, const AnAxis *a, const AnGpuOptions *o)
{
	LCtx c;
	memset(&c, 0, sizeof c);
	c.ctx = f->module->ctx;
	c.f = f;
	c.ax = a;
	c.o = o;
	/* a called function: its parameters and results in their canonical
	 * layouts, as its call sites pass and take them */
	if (!f->is_kernel) {
		for (int i = 0; i < f->body->nargs; i++)
			f->body->args[i]->type = an_call_type(c.ctx, f->body->args[i]->type, o);
		for (int i = 0; i < f->nres; i++)
			f->restys[i] = an_call_type(c.ctx, f->restys[i], o);
	}
	an_casts_first(f);
	c.nvals = an_number_values(f);
	c.want = ir_alloc(c.ctx, sizeof(*c.want) * (size_t)(c.nvals + 1));
	c.dotfeed = ir_alloc(c.ctx, sizeof(*c.dotfeed) * (size_t)(c.nvals + 1));
	memset(c.dotfeed, 0, sizeof(*c.dotfeed) * (size_t)(c.nvals + 1));
	mark_dot_operands(&c, f->body);
	for (int round = 0; round < 4 && mark_carried(&c, f->body); round++)
		;
	find_anchors(&c, f->body);
	seed_dot_loads(&c, f->body);
	wants_block(&c, f->body);
	assign_block(&c, f->body);
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* Conversion removal                                                        */
/* ------------------------------------------------------------------------- */

typedef struct RCtx {
	IrFunc *f;
	bool changed;
} RCtx;

static bool is_cheap_source(const IrOp *op)
{
	return op && (op->opc == OP_CONSTANT || op->opc == OP_POISON || op->opc == OP_MAKE_RANGE ||
		      (op->opc == OP_SPLAT && !ir_is_block(op->ops[0]->type)));
}

/* A copy of v's cheap producer chain (remat_ok) computing it in layout l,
 * inserted before `before`. */
static IrValue *remat(IrCtx *ctx, IrBlock *b, IrOp *before, IrValue *v, const IrLayout *l)
{
	if (!is_blk(v))
		return v;
	IrOp *d = v->def;
	if (d->opc == OP_CONVERT_LAYOUT)
		return remat(ctx, b, before, d->ops[0], l);
	IrValue *ops[8];
	/* expand_dims: its operand in the slice of l along the new dim */
	const IrLayout *ol = d->opc == OP_EXPAND_DIMS ? an_slice_layout(ctx, (int)ir_op_int(d, "axis", 0), l) : l;
	for (int i = 0; i < d->nops && i < 8; i++)
		ops[i] = remat(ctx, b, before, d->ops[i], ol);
	const IrType *t = ir_type_with_layout(ctx, v->type, l);
	IrOp *cl = ir_op_new(ctx, d->opc, d->nops, ops, 1, &t, 0, d->loc);
	cl->nattrs = d->nattrs;
	cl->attrs = d->attrs;
	ir_block_insert_before(b, before, cl);
	return &cl->res[0];
}

/* Whether an op after `from` in its block reads v as a dot's operand. */
static bool feeds_dot(const IrOp *from, const IrValue *v)
{
	for (const IrOp *u = from->next; u; u = u->next)
		if (u->opc == OP_DOT && (u->ops[0] == v || u->ops[1] == v || u->ops[2] == v))
			return true;
	return false;
}

static void remove_in_block(RCtx *r, IrBlock *b)
{
	IrCtx *ctx = r->f->module->ctx;
	for (IrOp *op = b->first, *next; op; op = next) {
		next = op->next;
		for (int i = 0; i < op->nregions; i++)
			remove_in_block(r, op->regions[i]);
		if (op->opc != OP_CONVERT_LAYOUT)
			continue;
		IrValue *src = op->ops[0];
		IrValue *dst = &op->res[0];
		if (src->type == dst->type) {
			ir_replace_all_uses(r->f, dst, src);
			ir_op_unlink(op);
			r->changed = true;
			continue;
		}
		/* an earlier conversion of the same value to the same layout in
		 * this block (an epilogue using an mma result several times) */
		IrOp *same = NULL;
		for (IrOp *e = op->prev; e && !same; e = e->prev)
			if (e->opc == OP_CONVERT_LAYOUT && e->ops[0] == src && e->res[0].type == dst->type)
				same = e;
		if (same) {
			ir_replace_all_uses(r->f, dst, &same->res[0]);
			ir_op_unlink(op);
			r->changed = true;
			continue;
		}
		IrOp *d = src->def;
		if (d && d->opc == OP_CONVERT_LAYOUT) {
			ir_op_set_operand(op, 0, d->ops[0]);
			r->changed = true;
			continue;
		}
		/* dot operands are only ever produced by a conversion, but for a
		 * constant of 32-bit elements in a tf32 operand's layout that
		 * holds registers (one element a register; not a warpgroup MMA's
		 * B, read from shared memory) that no dot reads itself: what a
		 * tile read back into that layout meets in the tf32x3 split
		 * (regs_read_layout32) */
		if (dst->type->layout->kind == LAYOUT_DOT_OP &&
		    !(is_cheap_source(d) && d->opc != OP_MAKE_RANGE && dst->type->layout->k_width == 1 &&
		      ir_type_bits(ir_scalar(dst->type)) == 32 &&
		      !(dst->type->layout->opidx == 1 && an_is_wgmma(dst->type)) && !feeds_dot(op, dst)))
			continue;
		if (is_cheap_source(d) || (remat_addr_ok(src) && d && d->nops <= 8)) {
			/* recompute the producer chain in the wanted layout right here */
			IrValue *nv = remat(ctx, b, op, src, dst->type->layout);
			ir_replace_all_uses(r->f, dst, nv);
			ir_op_unlink(op);
			r->changed = true;
		}
	}
}

/* Loop-carried value ci now in type nt inside the loop: its init converted
 * to nt before the loop, the loop's result converted back to old after it. */
static void carry_converted(RCtx *r, IrOp *loop, int ci, const IrType *old, const IrType *nt)
{
	IrCtx *ctx = r->f->module->ctx;
	IrValue *init = loop->ops[3 + ci];
	IrOp *ci_op = ir_op_new(ctx, OP_CONVERT_LAYOUT, 1, &init, 1, &nt, 0, loop->loc);
	ci_op->res[0].id = -1;
	ir_block_insert_before(loop->parent, loop, ci_op);
	ir_op_set_operand(loop, 3 + ci, &ci_op->res[0]);
	IrValue *res = &loop->res[ci];
	IrOp *co = ir_op_new(ctx, OP_CONVERT_LAYOUT, 1, &res, 1, &old, 0, loop->loc);
	co->res[0].id = -1;
	ir_replace_all_uses(r->f, res, &co->res[0]);
	res->type = nt;
	if (loop->next)
		ir_block_insert_before(loop->parent, loop->next, co);
	else
		ir_block_append(loop->parent, co);
}

/* A loop-carried value computed in the body from values converted out of
 * another layout (attention's row sum l = l * alpha + rowsum(p), carried in
 * the layout its init and the epilogue gave it while alpha and the row sum
 * live in a slice of the mma layout) converts those every iteration. The
 * chain from the carried argument to what the body yields is retyped to the
 * converted values' layout when that removes more conversions from the body
 * than it adds to it; the init and the loop result are converted once,
 * outside the loop. */
#define CARRY_MAX 32

/* Whether v is defined inside loop (its body, or a region under it). */
static bool defined_under(const IrValue *v, const IrOp *loop)
{
	const IrBlock *b = v->def ? v->def->parent : v->owner;
	for (; b; b = b->parent_op ? b->parent_op->parent : NULL)
		if (b->parent_op == loop)
			return true;
	return false;
}

static bool in_set(IrValue *const *set, int n, const IrValue *v)
{
	for (int i = 0; i < n; i++)
		if (set[i] == v)
			return true;
	return false;
}

static bool uses_in_regions(const IrOp *op, IrValue *const *set, int n)
{
	for (int r = 0; r < op->nregions; r++)
		for (const IrOp *o = op->regions[r]->first; o; o = o->next) {
			for (int i = 0; i < o->nops; i++)
				if (in_set(set, n, o->ops[i]))
					return true;
			if (uses_in_regions(o, set, n))
				return true;
		}
	return false;
}

/* v = expand_dims(x), or broadcast of it (conversions in between looked
 * through): the expand_dims; NULL otherwise. */
static IrOp *expand_op(const IrValue *v)
{
	IrOp *d = v->def;
	if (d && d->opc == OP_BROADCAST)
		d = d->ops[0]->def;
	while (d && d->opc == OP_CONVERT_LAYOUT)
		d = d->ops[0]->def;
	return d && d->opc == OP_EXPAND_DIMS ? d : NULL;
}

/* The vector an expand_op value expands (its conversions looked through);
 * NULL for other values. */
static IrValue *expanded_source(const IrValue *v)
{
	IrOp *e = expand_op(v);
	if (!e)
		return NULL;
	IrValue *x = e->ops[0];
	while (x->def && x->def->opc == OP_CONVERT_LAYOUT)
		x = x->def->ops[0];
	return x;
}

/* v (expanded_source) computed in layout l before `before`: its vector
 * converted to the slice of l, expanded, broadcast. */
static IrValue *expand_again(IrCtx *ctx, IrBlock *b, IrOp *before, IrValue *v, const IrLayout *l)
{
	IrOp *bc = v->def->opc == OP_BROADCAST ? v->def : NULL, *e = expand_op(v);
	IrValue *x = expanded_source(v);
	const IrType *xt = ir_type_with_layout(ctx, x->type, an_slice_layout(ctx, (int)ir_op_int(e, "axis", 0), l));
	IrValue *cur = x;
	if (x->type != xt) {
		IrOp *cv = ir_op_new(ctx, OP_CONVERT_LAYOUT, 1, &x, 1, &xt, 0, e->loc);
		cv->res[0].id = -1;
		ir_block_insert_before(b, before, cv);
		cur = &cv->res[0];
	}
	const IrType *et = ir_type_with_layout(ctx, e->res[0].type, l);
	IrOp *ne = ir_op_new(ctx, OP_EXPAND_DIMS, 1, &cur, 1, &et, 0, e->loc);
	ne->nattrs = e->nattrs;
	ne->attrs = e->attrs;
	ir_block_insert_before(b, before, ne);
	cur = &ne->res[0];
	if (bc) {
		const IrType *bt = ir_type_with_layout(ctx, v->type, l);
		IrOp *nb = ir_op_new(ctx, OP_BROADCAST, 1, &cur, 1, &bt, 0, bc->loc);
		nb->nattrs = bc->nattrs;
		nb->attrs = bc->attrs;
		ir_block_insert_before(b, before, nb);
		cur = &nb->res[0];
	}
	return cur;
}

static bool retype_carried(RCtx *r, IrOp *loop, int ci)
{
	IrCtx *ctx = r->f->module->ctx;
	IrBlock *body = loop->regions[0];
	IrOp *y = ir_block_terminator(body);
	IrValue *arg = body->args[ci + 1];
	if (!y || y->opc != OP_YIELD || ci >= y->nops || !is_blk(arg))
		return false;
	const IrType *old = arg->type;
	IrValue *set[CARRY_MAX];
	int n = 0;
	set[n++] = arg;
	/* grow the set along elementwise uses in the body, in order */
	for (IrOp *op = body->first; op; op = op->next) {
		if (op->nregions && uses_in_regions(op, set, n))
			return false;
		if (op->opc == OP_YIELD || op->nres != 1 || op->res[0].type != old)
			continue;
		unsigned fl = ir_opinfo(op->opc)->flags;
		if (!(fl & IR_ELEM) || !(fl & IR_PURE))
			continue;
		bool uses = false;
		for (int i = 0; i < op->nops; i++)
			uses |= in_set(set, n, op->ops[i]);
		if (uses) {
			if (n == CARRY_MAX)
				return false;
			set[n++] = &op->res[0];
		}
	}
	if (!in_set(set, n, y->ops[ci]))
		return false;
	/* feeders: an elementwise value of the body used only by a member
	 * (`acc += dot(a, b) * scale[:, None]`: the product of the converted
	 * dot result and the scale) joins the set, so that the conversion
	 * feeding it counts */
	for (int k = 1; k < n; k++) {
		IrOp *d = set[k]->def;
		for (int i = 0; i < d->nops; i++) {
			IrValue *v = d->ops[i];
			IrOp *vd = v->def;
			if (!is_blk(v) || in_set(set, n, v) || !vd || vd->parent != body || vd->nres != 1 ||
			    vd->nregions || v->type != old || ir_count_uses(r->f, v) != 1)
				continue;
			unsigned fl = ir_opinfo(vd->opc)->flags;
			if (!(fl & IR_ELEM) || !(fl & IR_PURE))
				continue;
			if (n == CARRY_MAX)
				return false;
			set[n++] = v;
		}
	}
	/* the layout to move to: the source of a conversion feeding the set;
	 * gain and cost weighed in elements converted per iteration */
	const IrLayout *to = NULL;
	int64_t gain = 0, cost = 0;
	for (int k = 1; k < n; k++) {
		IrOp *d = set[k]->def;
		for (int i = 0; i < d->nops; i++) {
			IrValue *v = d->ops[i];
			const IrValue *src;
			if (!is_blk(v) || in_set(set, n, v))
				continue;
			if (v->def && v->def->opc == OP_CONVERT_LAYOUT && v->def->parent == body) {
				const IrLayout *l = v->def->ops[0]->type->layout;
				if (to && l != to)
					return false;
				to = l;
				gain += v->type->numel;
			} else if (remat_ok(v, 0)) {
				/* computed again in the new layout */
			} else if ((src = expanded_source(v))) {
				/* the vector converted, then expanded again; once
				 * before the loop when it is defined there */
				if (defined_under(src, loop))
					cost += src->type->numel;
			} else {
				cost += v->type->numel;
			}
		}
	}
	if (!to || to->kind == LAYOUT_DOT_OP || to->kind == LAYOUT_SHARED)
		return false;
	/* uses of the set in the body outside it need a conversion back */
	for (IrOp *op = body->first; op; op = op->next) {
		if (op->nres == 1 && in_set(set, n, &op->res[0]))
			continue;
		for (int i = 0; i < op->nops; i++) {
			if (!in_set(set, n, op->ops[i]))
				continue;
			if (op->opc == OP_YIELD && i == ci)
				continue;
			if (op->opc == OP_CONVERT_LAYOUT && op->res[0].type->layout == to)
				gain++;
			else
				cost++;
		}
	}
	if (gain <= cost)
		return false;

	const IrType *nt = ir_type_with_layout(ctx, old, to);
	/* escaping uses first (they keep seeing the old layout) */
	for (IrOp *op = body->first; op; op = op->next) {
		if (op->nres == 1 && in_set(set, n, &op->res[0]))
			continue;
		for (int i = 0; i < op->nops; i++) {
			if (!in_set(set, n, op->ops[i]) || (op->opc == OP_YIELD && i == ci) ||
			    (op->opc == OP_CONVERT_LAYOUT && op->res[0].type->layout == to))
				continue;
			IrValue *v = op->ops[i];
			IrOp *cv = ir_op_new(ctx, OP_CONVERT_LAYOUT, 1, &v, 1, &old, 0, op->loc);
			cv->res[0].id = -1;
			ir_block_insert_before(body, op, cv);
			ir_op_set_operand(op, i, &cv->res[0]);
		}
	}
	/* the members' outside operands in the new layout */
	for (int k = 1; k < n; k++) {
		IrOp *d = set[k]->def;
		for (int i = 0; i < d->nops; i++) {
			IrValue *v = d->ops[i];
			if (!is_blk(v) || in_set(set, n, v))
				continue;
			if (v->def && v->def->opc == OP_CONVERT_LAYOUT && v->def->ops[0]->type == nt) {
				ir_op_set_operand(d, i, v->def->ops[0]);
				continue;
			}
			if (!remat_ok(v, 0) && expanded_source(v)) {
				ir_op_set_operand(d, i, expand_again(ctx, body, d, v, to));
				continue;
			}
			const IrType *vt = ir_type_with_layout(ctx, v->type, to);
			IrOp *cv = ir_op_new(ctx, OP_CONVERT_LAYOUT, 1, &v, 1, &vt, 0, d->loc);
			cv->res[0].id = -1;
			ir_block_insert_before(body, d, cv);
			ir_op_set_operand(d, i, &cv->res[0]);
		}
		set[k]->type = nt;
	}
	arg->type = nt;
	carry_converted(r, loop, ci, old, nt);
	return true;
}

/* A carried value converted to another layout T wherever the body reads
 * it, and yielded from a conversion of a value in T (the combine of
 * `acc = minimum(rowmin(x), acc)` took its first operand's layout): the
 * loop carries it in T, its init converted before the loop and its result
 * after. */
static bool retype_converted(RCtx *r, IrOp *loop, int ci)
{
	IrBlock *body = loop->regions[0];
	IrOp *y = ir_block_terminator(body);
	IrValue *arg = body->args[ci + 1];
	if (!y || y->opc != OP_YIELD || ci >= y->nops || !is_blk(arg))
		return false;
	IrOp *yc = y->ops[ci]->def;
	if (!yc || yc->opc != OP_CONVERT_LAYOUT || yc->parent != body || ir_count_uses(r->f, &yc->res[0]) != 1)
		return false;
	const IrType *old = arg->type, *nt = yc->ops[0]->type;
	if (!nt->layout || nt->layout->kind == LAYOUT_DOT_OP || nt->layout->kind == LAYOUT_SHARED)
		return false;
	int n = 0;
	for (IrOp *op = body->first; op; op = op->next) {
		if (op->nregions && uses_in_regions(op, &arg, 1))
			return false;
		for (int i = 0; i < op->nops; i++) {
			if (op->ops[i] != arg)
				continue;
			if (op->opc != OP_CONVERT_LAYOUT || op->res[0].type != nt)
				return false;
			n++;
		}
	}
	if (!n)
		return false;
	for (IrOp *op = body->first; op; op = op->next)
		if (op->opc == OP_CONVERT_LAYOUT && op->ops[0] == arg)
			ir_replace_all_uses(r->f, &op->res[0], arg);
	arg->type = nt;
	ir_op_set_operand(y, ci, yc->ops[0]);
	carry_converted(r, loop, ci, old, nt);
	return true;
}

static void retype_loops(RCtx *r, IrBlock *b)
{
	for (IrOp *op = b->first; op; op = op->next) {
		for (int i = 0; i < op->nregions; i++)
			retype_loops(r, op->regions[i]);
		if (op->opc != OP_FOR)
			continue;
		for (int ci = 0; ci + 3 < op->nops && ci + 1 < op->regions[0]->nargs; ci++)
			if (retype_carried(r, op, ci) || retype_converted(r, op, ci))
				r->changed = true;
	}
}

static void dce_block(RCtx *r, IrBlock *b)
{
	for (IrOp *op = b->last, *prev; op; op = prev) {
		prev = op->prev;
		for (int i = 0; i < op->nregions; i++)
			dce_block(r, op->regions[i]);
		if (!(ir_opinfo(op->opc)->flags & IR_PURE) || op->nregions || op->nres == 0)
			continue;
		bool used = false;
		for (int i = 0; i < op->nres && !used; i++)
			used = ir_count_uses(r->f, &op->res[i]) > 0;
		if (!used) {
			ir_op_unlink(op);
			r->changed = true;
		}
	}
}

/* A conversion in a loop body of a value defined before the loop is the
 * same in every iteration: it moves in front of the outermost such loop,
 * and its shared-memory round trip and barriers leave the body (Di[:, None]
 * of attention's dQ loop: a row vector loaded once, expanded in the loop).
 * Only conversions that sit directly in loop bodies move: one under an if
 * may run in few iterations (a fused nest's epilogue), and keeping its
 * result live across the whole loop would cost registers for nothing. */
static void hoist_converts(RCtx *r, IrBlock *b)
{
	for (IrOp *op = b->first, *next; op; op = next) {
		next = op->next;
		for (int i = 0; i < op->nregions; i++)
			hoist_converts(r, op->regions[i]);
		if (op->opc != OP_CONVERT_LAYOUT)
			continue;
		IrOp *target = NULL;
		for (IrOp *l = b->parent_op; l && (l->opc == OP_FOR || l->opc == OP_WHILE);
		     l = l->parent ? l->parent->parent_op : NULL) {
			if (defined_under(op->ops[0], l))
				break;
			target = l;
		}
		if (!target)
			continue;
		ir_op_unlink(op);
		ir_block_insert_before(target->parent, target, op);
		r->changed = true;
	}
}

/* A conversion out of a register layout whose only user is an elementwise
 * op of a chain that narrows the element type (attention's epilogue:
 * convert(acc, mma -> blocked), acc / l[:, None], to f16, store) moves past
 * that op: the op runs in the source layout, its other operands recomputed
 * there (cheap chains, remat) or expanded again from their vectors
 * (expand_again: l is a slice of the mma layout already), and the
 * conversion follows it. Repeated, the conversion reaches the narrow
 * result and moves half the bytes through shared memory, as Triton places
 * it. An elementwise op two or more of whose operands are conversions out
 * of one layout (or unary ops of such: log2(convert(l))) likewise runs in
 * that layout, out of a slice too, and one conversion of its result
 * replaces theirs (merged_convs). Only ops in the conversion's own block
 * move. */
static bool sinkable_elem(const IrOp *op)
{
	unsigned fl = ir_opinfo(op->opc)->flags;
	return (fl & IR_ELEM) && (fl & IR_PURE) && op->nres == 1 && op->nregions == 0 && op->nops >= 1 &&
	       op->nops <= 4 && is_blk(&op->res[0]);
}

static bool chain_narrows(IrFunc *f, IrOp *op, int depth)
{
	int rb = ir_type_bits(ir_scalar(op->res[0].type)), ib = 0;
	for (int i = 0; i < op->nops; i++)
		if (is_blk(op->ops[i]) && ir_type_bits(ir_scalar(op->ops[i]->type)) > ib)
			ib = ir_type_bits(ir_scalar(op->ops[i]->type));
	if (op->opc == OP_CAST && rb < ib)
		return true;
	if (depth >= 6 || rb > ib)
		return false;
	IrOp *u = an_only_user(f, &op->res[0]);
	return u && sinkable_elem(u) && chain_narrows(f, u, depth + 1);
}

/* v is a conversion out of layout sl. */
static bool conv_from(const IrValue *v, const IrLayout *sl)
{
	const IrOp *d = v->def;
	return d && d->opc == OP_CONVERT_LAYOUT && d->ops[0]->type->layout == sl &&
	       d->ops[0]->type->rank == v->type->rank;
}

/* v is a unary elementwise op, read only by its user, of a conversion out
 * of sl read only by it, no wider than its operand (log2(convert(l))). */
static bool unary_of_conv(IrFunc *f, IrValue *v, const IrLayout *sl)
{
	IrOp *u = v->def;
	return u && sinkable_elem(u) && u->nops == 1 && conv_from(u->ops[0], sl) && an_only_user(f, v) &&
	       an_only_user(f, u->ops[0]) == u &&
	       ir_type_bits(ir_scalar(v->type)) <= ir_type_bits(ir_scalar(u->ops[0]->type));
}

/* How many of e's operands come out of layout sl by a conversion (or a
 * unary op of one): with two or more, e runs in sl and one conversion of
 * its result replaces them (attention's epilogue: m_i + log2(l_i), both
 * vectors in a slice of the mma layout, stored in a blocked one). 0 when e
 * widens. */
static int merged_convs(IrFunc *f, IrOp *e, const IrLayout *sl)
{
	int n = 0, wb = 0;
	for (int i = 0; i < e->nops; i++) {
		IrValue *o = e->ops[i];
		if (is_blk(o) && ir_type_bits(ir_scalar(o->type)) > wb)
			wb = ir_type_bits(ir_scalar(o->type));
		n += is_blk(o) && (conv_from(o, sl) || unary_of_conv(f, o, sl));
	}
	return ir_type_bits(ir_scalar(e->res[0].type)) <= wb ? n : 0;
}

static void sink_converts(RCtx *r, IrBlock *b)
{
	IrCtx *ctx = r->f->module->ctx;
	for (IrOp *op = b->first, *next; op; op = next) {
		next = op->next;
		for (int i = 0; i < op->nregions; i++)
			sink_converts(r, op->regions[i]);
		if (op->opc != OP_CONVERT_LAYOUT)
			continue;
		IrValue *src = op->ops[0], *dst = &op->res[0];
		const IrLayout *sl = src->type->layout, *dl = dst->type->layout;
		if (!sl || !dl || dl->kind == LAYOUT_DOT_OP || sl->kind == LAYOUT_DOT_OP ||
		    (sl->kind != LAYOUT_MMA && sl->kind != LAYOUT_BLOCKED && sl->kind != LAYOUT_SLICE) ||
		    src->type->rank != dst->type->rank)
			continue;
		IrOp *e = an_only_user(r->f, dst);
		if (!e || !sinkable_elem(e))
			continue;
		/* narrowing chains out of a register layout; merges out of a
		 * slice of one too */
		bool merge = sl->kind == LAYOUT_SLICE || !chain_narrows(r->f, e, 0);
		if (merge && merged_convs(r->f, e, sl) < 2)
			continue;
		bool ok = true;
		for (int i = 0; i < e->nops && ok; i++) {
			IrValue *o = e->ops[i];
			ok = o == dst || !is_blk(o) || remat_ok(o, 0) || expanded_source(o) ||
			     (merge && (conv_from(o, sl) || unary_of_conv(r->f, o, sl)));
		}
		if (!ok)
			continue;
		IrValue *ops[4];
		for (int i = 0; i < e->nops; i++) {
			IrValue *o = e->ops[i];
			if (o == dst)
				ops[i] = src;
			else if (!is_blk(o))
				ops[i] = o;
			else if (merge && conv_from(o, sl))
				ops[i] = o->def->ops[0];
			else if (merge && unary_of_conv(r->f, o, sl)) { /* the unary op again, in sl */
				IrOp *u = o->def;
				IrValue *x = u->ops[0]->def->ops[0];
				const IrType *ut = ir_type_with_layout(ctx, o->type, sl);
				IrOp *nu = ir_op_new(ctx, u->opc, 1, &x, 1, &ut, 0, u->loc);
				nu->nattrs = u->nattrs;
				nu->attrs = u->attrs;
				ir_block_insert_before(b, e, nu);
				ops[i] = &nu->res[0];
			} else if (remat_ok(o, 0))
				ops[i] = remat(ctx, b, e, o, sl);
			else
				ops[i] = expand_again(ctx, b, e, o, sl);
		}
		const IrType *nt = ir_type_with_layout(ctx, e->res[0].type, sl), *ot = e->res[0].type;
		IrOp *ne = ir_op_new(ctx, e->opc, e->nops, ops, 1, &nt, 0, e->loc);
		ne->nattrs = e->nattrs;
		ne->attrs = e->attrs;
		ir_block_insert_before(b, e, ne);
		IrValue *nv = &ne->res[0];
		IrOp *cv = ir_op_new(ctx, OP_CONVERT_LAYOUT, 1, &nv, 1, &ot, 0, op->loc);
		cv->res[0].id = -1;
		ir_block_insert_before(b, e, cv);
		ir_replace_all_uses(r->f, &e->res[0], &cv->res[0]);
		if (next == e)
			next = e->next;
		ir_op_unlink(e);
		if (next == op)
			next = op->next;
		ir_op_unlink(op);
		r->changed = true;
	}
}

/* A vector read from its slot (prefetch.c vector_async_ok) is read in any
 * layout as cheaply: a conversion that is its only user goes, the read
 * taking the conversion's layout. After dead code is gone (a user that
 * died on the way would still count). */
static void retype_vector_reads(RCtx *r, IrBlock *b)
{
	for (IrOp *op = b->first, *next; op; op = next) {
		next = op->next;
		for (int i = 0; i < op->nregions; i++)
			retype_vector_reads(r, op->regions[i]);
		IrValue *src = op->opc == OP_CONVERT_LAYOUT ? op->ops[0] : NULL;
		if (!src || !src->def || src->def->opc != OP_LOCAL_READ || src->type->rank != 1 ||
		    op->res[0].type->layout->kind == LAYOUT_DOT_OP || ir_count_uses(r->f, src) != 1)
			continue;
		src->type = op->res[0].type;
		ir_replace_all_uses(r->f, &op->res[0], src);
		ir_op_unlink(op);
		r->changed = true;
	}
}

void an_remove_converts(IrFunc *f)
{
	RCtx r = {f, true};
	for (int iter = 0; iter < 8 && r.changed; iter++) {
		r.changed = false;
		remove_in_block(&r, f->body);
		if (!r.changed)
			retype_loops(&r, f->body);
	}
	const char *sink = getenv("CTRITON_SINK_CONVERTS");
	if (!sink || sink[0] != '0')
		for (int iter = 0; iter < 8; iter++) {
			r.changed = false;
			sink_converts(&r, f->body);
			if (!r.changed)
				break;
			remove_in_block(&r, f->body);
		}
	const char *hoist = getenv("CTRITON_HOIST_CONVERTS");
	if (!hoist || hoist[0] != '0') {
		r.changed = false;
		hoist_converts(&r, f->body);
		if (r.changed) /* two conversions of one value now side by side */
			remove_in_block(&r, f->body);
	}
	/* only ops that became dead because of conversions are expected here */
	r.changed = true;
	for (int iter = 0; iter < 4 && r.changed; iter++) {
		r.changed = false;
		dce_block(&r, f->body);
	}
	retype_vector_reads(&r, f->body);
}
