/* map.c: from a layout to the elements one thread owns.
 *
 * Along base dim d of a blocked layout with spt, tpw, wpc and a block of size
 * S (tile = spt * tpw * wpc), the thread with lane coordinate l_d and warp
 * coordinate w_d owns the elements
 *     (rep * tile + (w_d * tpw + l_d) * spt + e) mod S
 * for e < spt (e < S when S < spt) and rep < S / tile. Registers are numbered
 * with the layout's order[0] dim fastest and e fastest within it, so the spt
 * contiguous elements of a thread are consecutive registers (what vector
 * loads and stores use). Lane and warp coordinates split the lane id and the
 * warp id in the same order. A slice layout is its parent over the shape
 * with a size-1 dim put back, so slices of a layout and the layout itself
 * agree register by register (reductions and expand_dims rely on it).
 */
#include "nvptx.h"

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
	int s = 1, ls = 1, ws = 1;
	for (int i = 0; i < m->brank; i++) {
		int d = m->b->order[i];
		an_blocked_dim(m->b, m->bs, d, &m->nd[d], &m->dl[d], &m->dw[d]);
		m->stride[d] = s;
		s *= m->nd[d];
		m->lane_stride[d] = ls;
		ls *= m->b->threads_per_warp[d];
		m->warp_stride[d] = ws;
		ws *= m->b->warps_per_cta[d];
	}
	m->n = s;
	if (!L)
		return;
	LLVMBuilderRef B = L->b;
	for (int d = 0; d < m->brank; d++) {
		LLVMValueRef l = LLVMBuildURem(B, LLVMBuildUDiv(B, L->lane, i32c(L, m->lane_stride[d]), ""),
					       i32c(L, m->b->threads_per_warp[d]), "");
		LLVMValueRef w = LLVMBuildURem(B, LLVMBuildUDiv(B, L->warp, i32c(L, m->warp_stride[d]), ""),
					       i32c(L, m->b->warps_per_cta[d]), "");
		m->lane_d[d] = l;
		m->warp_d[d] = w;
		LLVMValueRef tidd = LLVMBuildAdd(B, LLVMBuildMul(B, w, i32c(L, m->b->threads_per_warp[d]), ""), l, "");
		m->base[d] = LLVMBuildMul(B, tidd, i32c(L, m->b->size_per_thread[d]), "");
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

LLVMValueRef map_coord(Lower *L, const Map *m, int r, int vdim)
{
	int d = m->dimmap[vdim];
	int64_t S = m->bs[d];
	if (S == 1)
		return i32c(L, 0);
	int j[IR_MAX_RANK];
	map_local(m, r, j);
	int64_t spt = m->b->size_per_thread[d];
	int64_t tile = spt * m->b->threads_per_warp[d] * m->b->warps_per_cta[d];
	int64_t rep = j[d] / spt, e = j[d] % spt;
	LLVMValueRef v = LLVMBuildAdd(L->b, m->base[d], i32c(L, rep * tile + e), "");
	return LLVMBuildAnd(L->b, v, i32c(L, S - 1), "");
}

LLVMValueRef map_owner(Lower *L, const Map *m)
{
	if (!m->b) {
		return LLVMBuildICmp(L->b, LLVMIntEQ, L->tid, i32c(L, 0), "");
	}
	LLVMValueRef p = NULL;
	for (int d = 0; d < m->brank; d++) {
		int64_t spt = m->b->size_per_thread[d];
		int64_t tile = spt * m->b->threads_per_warp[d] * m->b->warps_per_cta[d];
		if (tile <= m->bs[d])
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
