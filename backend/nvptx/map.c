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

void nv_map_init(Nv *nv, const IrType *t, NvMap *m)
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
	if (!nv)
		return;
	LLVMBuilderRef B = nv->b;
	for (int d = 0; d < m->brank; d++) {
		const AnDimDist *dd = &m->dd[d];
		LLVMValueRef l = LLVMBuildURem(B, LLVMBuildUDiv(B, nv->lane, nv_i32(nv, dd->lane_stride), ""),
					       nv_i32(nv, dd->tpw), "");
		LLVMValueRef w = LLVMBuildURem(B, LLVMBuildUDiv(B, nv->warp, nv_i32(nv, dd->warp_stride), ""),
					       nv_i32(nv, dd->wpc), "");
		m->lane_d[d] = l;
		m->warp_d[d] = w;
		m->base[d] = LLVMBuildAdd(B, LLVMBuildMul(B, w, nv_i32(nv, dd->warp_unit), ""),
					  LLVMBuildMul(B, l, nv_i32(nv, dd->lane_unit), ""), "");
	}
}

int nv_map_nregs(Nv *nv, const IrType *t)
{
	NvMap m;
	nv_map_init(NULL, t, &m);
	(void)nv;
	return m.n;
}

void nv_map_local(const NvMap *m, int r, int *j)
{
	for (int d = 0; d < m->brank; d++)
		j[d] = (r / m->stride[d]) % m->nd[d];
}

int nv_map_reg(const NvMap *m, const int *j)
{
	int r = 0;
	for (int d = 0; d < m->brank; d++)
		r += (j[d] % m->nd[d]) * m->stride[d];
	return r;
}

int64_t nv_map_offset(const NvMap *m, int r, int d)
{
	int j[IR_MAX_RANK];
	nv_map_local(m, r, j);
	const AnDimDist *dd = &m->dd[d];
	return (j[d] / dd->spt) * dd->tile + (j[d] % dd->spt) * dd->estride;
}

LLVMValueRef nv_map_coord(Nv *nv, const NvMap *m, int r, int vdim)
{
	int d = m->dimmap[vdim];
	int64_t S = m->bs[d];
	if (S == 1)
		return nv_i32(nv, 0);
	LLVMValueRef v = LLVMBuildAdd(nv->b, m->base[d], nv_i32(nv, nv_map_offset(m, r, d)), "");
	return LLVMBuildAnd(nv->b, v, nv_i32(nv, S - 1), "");
}

LLVMValueRef nv_map_owner(Nv *nv, const NvMap *m)
{
	if (!m->b) {
		return LLVMBuildICmp(nv->b, LLVMIntEQ, nv->tid, nv_i32(nv, 0), "");
	}
	LLVMValueRef p = NULL;
	for (int d = 0; d < m->brank; d++) {
		if (m->dd[d].tile <= m->bs[d])
			continue;
		LLVMValueRef q = LLVMBuildICmp(nv->b, LLVMIntULT, m->base[d], nv_i32(nv, m->bs[d]), "");
		p = p ? LLVMBuildAnd(nv->b, p, q, "") : q;
	}
	return p;
}

LLVMValueRef nv_map_lin(Nv *nv, const NvMap *m, const IrType *t, int r)
{
	if (!ir_is_block(t))
		return nv_i32(nv, 0);
	LLVMValueRef lin = nv_i32(nv, 0);
	int64_t mul = 1;
	for (int k = t->rank - 1; k >= 0; k--) {
		LLVMValueRef c = nv_map_coord(nv, m, r, k);
		lin = LLVMBuildAdd(nv->b, lin, LLVMBuildMul(nv->b, c, nv_i32(nv, mul), ""), "");
		mul *= t->shape[k];
	}
	return lin;
}
