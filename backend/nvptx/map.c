/* map.c: from a layout to the elements one thread owns.
 *
 * The distribution comes from analysis (an_dim_dist): along base dim d of a
 * block of size S, the thread with lane coordinate l_d and warp coordinate
 * w_d owns, for j < nregs_d, the elements
 *     (w_d * warp_unit + l_d * lane_unit + (j / spt) * tile + (j % spt) * estride) mod S.
 * A blocked layout has lane_unit = spt, warp_unit = spt * tpw, estride = 1
 * and tile = spt * tpw * wpc; the mma v2 accumulator and its dot operands
 * spell out the mma.sync m16n8k16 fragments the same way (rows g and g + 8:
 * spt 2, estride 8). Registers are numbered with the register order's first
 * dim fastest and j fastest within it, so the spt contiguous elements of a
 * thread are consecutive registers (what vector loads and stores use). A
 * slice layout is its parent over the shape with a size-1 dim put back, so
 * slices of a layout and the layout itself agree register by register
 * (reductions and expand_dims rely on it).
 */
#include "nvptx.h"

#include <stdlib.h>
#include <string.h>

void map_init(Lower *L, const IrType *t, Map *m)
{
	memset(m, 0, sizeof *m);
	if (!ir_is_block(t)) {
		m->n = 1;
		return;
	}
	m->rank = t->rank;
	m->b = an_unslice(t->layout, t->rank, t->shape, m->bs, m->dimmap);
	m->brank = m->b->rank;
	an_reg_order(m->b, m->order);
	int s = 1;
	for (int i = 0; i < m->brank; i++) {
		int d = m->order[i];
		if (!an_dim_dist(m->b, m->bs, d, &m->dd[d]))
			abort(); /* shared layouts never hold registers */
		m->nd[d] = m->dd[d].nregs;
		m->dl[d] = m->dd[d].distinct_lanes;
		m->dw[d] = m->dd[d].distinct_warps;
		m->lane_stride[d] = m->dd[d].lane_stride;
		m->warp_stride[d] = m->dd[d].warp_stride;
		m->stride[d] = s;
		s *= m->nd[d];
	}
	m->n = s;
	if (!L)
		return;
	LLVMBuilderRef B = L->b;
	for (int d = 0; d < m->brank; d++) {
		const AnDimDist *dd = &m->dd[d];
		LLVMValueRef l = LLVMBuildURem(B, LLVMBuildUDiv(B, L->lane, i32c(L, dd->lane_stride), ""),
					       i32c(L, dd->tpw), "");
		LLVMValueRef w = LLVMBuildURem(B, LLVMBuildUDiv(B, L->warp, i32c(L, dd->warp_stride), ""),
					       i32c(L, dd->wpc), "");
		m->lane_d[d] = l;
		m->warp_d[d] = w;
		m->base[d] = LLVMBuildAdd(B, LLVMBuildMul(B, w, i32c(L, dd->warp_unit), ""),
					  LLVMBuildMul(B, l, i32c(L, dd->lane_unit), ""), "");
	}
}

int map_nregs(Lower *L, const IrType *t)
{
	Map m;
	map_init(NULL, t, &m);
	(void)L;
	return m.n;
}

void map_local(const Map *m, int r, int *j)
{
	for (int d = 0; d < m->brank; d++)
		j[d] = (r / m->stride[d]) % m->nd[d];
}

int map_reg(const Map *m, const int *j)
{
	int r = 0;
	for (int d = 0; d < m->brank; d++)
		r += (j[d] % m->nd[d]) * m->stride[d];
	return r;
}

int64_t map_offset(const Map *m, int r, int d)
{
	int j[IR_MAX_RANK];
	map_local(m, r, j);
	const AnDimDist *dd = &m->dd[d];
	return (j[d] / dd->spt) * dd->tile + (j[d] % dd->spt) * dd->estride;
}

LLVMValueRef map_coord(Lower *L, const Map *m, int r, int vdim)
{
	int d = m->dimmap[vdim];
	int64_t S = m->bs[d];
	if (S == 1)
		return i32c(L, 0);
	LLVMValueRef v = LLVMBuildAdd(L->b, m->base[d], i32c(L, map_offset(m, r, d)), "");
	return LLVMBuildAnd(L->b, v, i32c(L, S - 1), "");
}

LLVMValueRef map_owner(Lower *L, const Map *m)
{
	if (!m->b) {
		return LLVMBuildICmp(L->b, LLVMIntEQ, L->tid, i32c(L, 0), "");
	}
	LLVMValueRef p = NULL;
	for (int d = 0; d < m->brank; d++) {
		if (m->dd[d].tile <= m->bs[d])
			continue;
		LLVMValueRef q = LLVMBuildICmp(L->b, LLVMIntULT, m->base[d], i32c(L, m->bs[d]), "");
		p = p ? LLVMBuildAnd(L->b, p, q, "") : q;
	}
	return p;
}

LLVMValueRef map_lin(Lower *L, const Map *m, const IrType *t, int r)
{
	if (!ir_is_block(t))
		return i32c(L, 0);
	LLVMValueRef lin = i32c(L, 0);
	int64_t mul = 1;
	for (int k = t->rank - 1; k >= 0; k--) {
		LLVMValueRef c = map_coord(L, m, r, k);
		lin = LLVMBuildAdd(L->b, lin, LLVMBuildMul(L->b, c, i32c(L, mul), ""), "");
		mul *= t->shape[k];
	}
	return lin;
}
