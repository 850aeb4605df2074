/* shape.c: sources and shape ops: constant, make_range, splat, broadcast,
 * expand_dims and hints (same registers), and the ops that move elements
 * between threads through shared scratch: convert_layout, reshape, trans,
 * split, cat, join, gather (and histogram: counts added to shared bins
 * with shared-memory atomics). The source is written row-major, then after a
 * barrier read in the destination layout (skipped when both layouts
 * distribute registers identically); a conversion stages the block with the
 * destination's fastest dim innermost, in vectors, its 16-byte chunks
 * swizzled against bank conflicts. A conversion to a 16-bit #dot_op layout
 * goes through the ldmatrix staging of dot.c.
 */
#include "nvptx.h"

#include <stdlib.h>
#include <string.h>

void nv_lower_constant(Nv *nv, IrOp *op)
{
	const IrType *t = op->res[0].type;
	LLVMTypeRef ty = nv_llty(nv, t);
	const IrAttr *a = ir_op_attr(op, "value");
	const IrType *st = ir_scalar(t);
	LLVMValueRef v;
	if (st->kind == TY_F8E4M3 || st->kind == TY_F8E5M2) { /* i8 bits: rounded from f32 */
		LLVMValueRef f = LLVMConstReal(LLVMFloatTypeInContext(nv->c),
					       a ? (a->kind == ATTR_FLOAT ? a->f : (double)a->i) : 0);
		v = nv_cast(nv, op, ir_type(nv->ctx, TY_F32), st, f);
	} else if (ir_is_float(st))
		v = LLVMConstReal(ty, a ? (a->kind == ATTR_FLOAT ? a->f : (double)a->i) : 0);
	else if (ir_is_ptr(ir_scalar(t)))
		v = LLVMConstNull(ty);
	else
		v = LLVMConstInt(ty, (unsigned long long)(a ? (a->kind == ATTR_FLOAT ? (int64_t)a->f : a->i) : 0), 1);
	int n = nv_map_nregs(nv, t);
	LLVMValueRef *out = nv_regbuf(nv, n);
	for (int r = 0; r < n; r++)
		out[r] = v;
	nv_set(nv, &op->res[0], n, out);
}

void nv_lower_make_range(Nv *nv, IrOp *op)
{
	NvMap m;
	nv_map_init(nv, op->res[0].type, &m);
	int64_t start = ir_op_int(op, "start", 0);
	LLVMValueRef *out = nv_regbuf(nv, m.n);
	for (int r = 0; r < m.n; r++)
		out[r] = LLVMBuildAdd(nv->b, nv_map_coord(nv, &m, r, 0), nv_i32(nv, start), "");
	nv_set(nv, &op->res[0], m.n, out);
}

void nv_lower_splat(Nv *nv, IrOp *op)
{
	int n = nv_map_nregs(nv, op->res[0].type);
	LLVMValueRef *out = nv_regbuf(nv, n);
	for (int r = 0; r < n; r++)
		out[r] = nv_reg(nv, op->ops[0], 0);
	nv_set(nv, &op->res[0], n, out);
}

void nv_lower_broadcast(Nv *nv, IrOp *op)
{
	const IrType *st = op->ops[0]->type, *rt = op->res[0].type;
	if (!ir_is_block(st)) {
		nv_lower_splat(nv, op);
		return;
	}
	NvMap ms, mr;
	nv_map_init(NULL, st, &ms);
	nv_map_init(NULL, rt, &mr);
	LLVMValueRef *out = nv_regbuf(nv, mr.n);
	for (int r = 0; r < mr.n; r++) {
		int j[IR_MAX_RANK];
		nv_map_local(&mr, r, j);
		for (int k = 0; k < rt->rank; k++)
			if (st->shape[k] == 1)
				j[mr.dimmap[k]] = 0;
		out[r] = nv_reg(nv, op->ops[0], nv_map_reg(&ms, j));
	}
	nv_set(nv, &op->res[0], mr.n, out);
}

/* Same registers, another type (expand_dims of a slice, hints, reshape when
 * the register order is unchanged). */
void nv_lower_identity(Nv *nv, IrOp *op)
{
	NvVals *s = nv_vals(nv, op->ops[0]);
	nv_set(nv, &op->res[0], s->n, s->v);
}

/* Through scratch: dst register r reads src element index_of(r). */
typedef LLVMValueRef (*IndexFn)(Nv *nv, IrOp *op, const NvMap *m, int r, int k);

static LLVMValueRef idx_same(Nv *nv, IrOp *op, const NvMap *m, int r, int k)
{
	(void)k;
	return nv_map_lin(nv, m, op->res[0].type, r);
}

static LLVMValueRef idx_trans(Nv *nv, IrOp *op, const NvMap *m, int r, int k)
{
	const IrType *st = op->ops[0]->type, *rt = op->res[0].type;
	const IrAttr *ord = ir_op_attr(op, "order");
	LLVMValueRef sc[IR_MAX_RANK];
	for (int i = 0; i < rt->rank; i++) {
		int sd = ord && i < ord->n ? (int)ord->ints[i] : rt->rank - 1 - i;
		sc[sd] = nv_map_coord(nv, m, r, i);
	}
	LLVMValueRef lin = nv_i32(nv, 0);
	int64_t mul = 1;
	for (int d = st->rank - 1; d >= 0; d--) {
		lin = LLVMBuildAdd(nv->b, lin, LLVMBuildMul(nv->b, sc[d], nv_i32(nv, mul), ""), "");
		mul *= st->shape[d];
	}
	(void)k;
	return lin;
}

static LLVMValueRef idx_split(Nv *nv, IrOp *op, const NvMap *m, int r, int k)
{
	LLVMValueRef lin = nv_map_lin(nv, m, op->res[k].type, r);
	return LLVMBuildAdd(nv->b, LLVMBuildMul(nv->b, lin, nv_i32(nv, 2), ""), nv_i32(nv, k), "");
}

static void lower_exchange(Nv *nv, IrOp *op, IndexFn fn)
{
	int64_t off = nv_scratch_off(op);
	const IrType *st = op->ops[0]->type;
	nv_write_block(nv, op->ops[0], off);
	nv_barrier(nv);
	for (int k = 0; k < op->nres; k++) {
		NvMap m;
		nv_map_init(nv, op->res[k].type, &m);
		LLVMValueRef *out = nv_regbuf(nv, m.n);
		for (int r = 0; r < m.n; r++)
			out[r] = nv_smem_load(nv, st, off, fn(nv, op, &m, r, k));
		nv_set(nv, &op->res[k], m.n, out);
	}
}

/* A renaming of registers (analysis/regperm.c): every result register is
 * one of the thread's own source registers. */
static bool lower_renaming(Nv *nv, IrOp *op)
{
	if (!an_regs_only(op, nv->ao.num_warps, nv->ao.warp_size))
		return false;
	int n0 = nv_vals(nv, op->ops[0])->n;
	for (int k = 0; k < op->nres; k++) {
		int n = nv_map_nregs(nv, op->res[k].type);
		int *perm = ir_alloc(nv->ctx, sizeof(int) * (size_t)n);
		if (!an_reg_permutation(op, k, nv->ao.num_warps, nv->ao.warp_size, perm))
			return false; /* an_regs_only said yes: not reached */
		LLVMValueRef *out = nv_regbuf(nv, n);
		for (int r = 0; r < n; r++)
			out[r] = nv_reg(nv, op->ops[perm[r] / n0], perm[r] % n0);
		nv_set(nv, &op->res[k], n, out);
	}
	return true;
}

void nv_lower_reshape(Nv *nv, IrOp *op)
{
	if (an_reshape_in_registers(op)) { /* a view that keeps every register in its thread */
		nv_lower_identity(nv, op);
		return;
	}
	if (!lower_renaming(nv, op))
		lower_exchange(nv, op, idx_same);
}
void nv_lower_trans(Nv *nv, IrOp *op)
{
	if (!lower_renaming(nv, op))
		lower_exchange(nv, op, idx_trans);
}
void nv_lower_split(Nv *nv, IrOp *op)
{
	if (!lower_renaming(nv, op))
		lower_exchange(nv, op, idx_split);
}

/* ------------------------------------------------------------------------- */
/* convert_layout through scratch                                            */
/* ------------------------------------------------------------------------- */

/* A conversion stages the block in scratch with the destination's fastest
 * dim innermost (dim f: element strides mul[], mul[f] = 1, the other dims
 * row-major), so the destination reads its runs of consecutive elements as
 * vectors of up to 16 bytes; the source writes its runs along f as vectors
 * too (an mma accumulator's column pairs, a blocked tile's rows). The
 * 16-byte chunks of each 128-byte line of the buffer are permuted, chunk c
 * of line n stored at c ^ key(n) with key(n) = ((n >> sh1) ^ (n >> sh2)) &
 * 7, which keeps every vector whole. The key is chosen per conversion by
 * counting the shared-memory wavefronts warp 0's stores and loads take
 * (bank conflicts) for no swizzle and a few such bit-field hashes: rows of
 * an mma fragment 8 apart, or a tile written down its columns, would
 * otherwise hit one bank group. */
typedef struct Xchg {
	int rank, f, es;
	int64_t mul[IR_MAX_RANK];
	int sh1, sh2; /* sh1 < 0: no swizzle; sh2 < 0: key from sh1 alone */
	int64_t drop; /* in rounds: the offset bits that say the round, taken out of the address */
} Xchg;

/* v with the bits of drop taken out (the bits above each move down). A
 * linear map over XOR, like the swizzle. */
static int64_t drop_bits(int64_t v, int64_t drop)
{
	for (int p = 62; p >= 0; p--)
		if ((drop >> p) & 1)
			v = (v & (((int64_t)1 << p) - 1)) | ((v >> (p + 1)) << p);
	return v;
}

static LLVMValueRef drop_bits_v(Nv *nv, LLVMValueRef v, int64_t drop)
{
	for (int p = 30; p >= 0; p--)
		if ((drop >> p) & 1) {
			LLVMValueRef lo = LLVMBuildAnd(nv->b, v, nv_i32(nv, (int)(((int64_t)1 << p) - 1)), "");
			LLVMValueRef hi = LLVMBuildShl(nv->b, LLVMBuildLShr(nv->b, v, nv_i32(nv, p + 1), ""), nv_i32(nv, p), "");
			v = LLVMBuildOr(nv->b, lo, hi, "");
		}
	return v;
}

/* The value dim fastest in the register order of map m (of block type t),
 * skipping dims of size 1 (or the last dim): its registers are consecutive
 * and its lanes neighbours. */
static int fast_dim(const NvMap *m, const IrType *t)
{
	for (int i = 0; i < m->brank; i++) {
		int d = m->order[i];
		if (m->bs[d] <= 1)
			continue;
		for (int k = 0; k < t->rank; k++)
			if (m->dimmap[k] == d)
				return k;
		break;
	}
	return t->rank - 1;
}

/* Elements per vector access of layout map m (of block type t) along value
 * dim f, es bytes each: the consecutive registers that are consecutive
 * along f (at most 16 bytes). */
static int xchg_vec(const NvMap *m, const IrType *t, int f, int es)
{
	if (!m->b || ir_scalar(t)->kind == TY_I1 || ir_scalar(t)->kind == TY_PTR)
		return 1;
	int d = m->dimmap[f];
	if (fast_dim(m, t) != f || m->dd[d].estride != 1 || m->bs[d] == 1)
		return 1;
	int v = m->dd[d].spt < m->nd[d] ? m->dd[d].spt : m->nd[d];
	while (v > 1 && v * es > 16)
		v /= 2;
	return v < 1 ? 1 : v;
}

static int64_t xchg_key(const Xchg *x, int64_t line)
{
	if (x->sh1 < 0)
		return 0;
	int64_t k = line >> x->sh1;
	if (x->sh2 >= 0)
		k ^= line >> x->sh2;
	return k & 7;
}

/* Byte offset in the buffer of the element of thread (lane, warp)'s
 * register r under map m, before the swizzle. */
static int64_t xchg_byte(const Xchg *x, const NvMap *m, int lane, int warp, int r)
{
	int64_t lin = 0;
	for (int k = 0; k < x->rank; k++) {
		int d = m->dimmap[k];
		int64_t S = m->bs[d];
		if (S == 1)
			continue;
		const AnDimDist *dd = &m->dd[d];
		int64_t lc = (lane / dd->lane_stride) % dd->tpw, wc = (warp / dd->warp_stride) % dd->wpc;
		int64_t c = (wc * dd->warp_unit + lc * dd->lane_unit + nv_map_offset(m, r, d)) & (S - 1);
		lin += c * x->mul[k];
	}
	return lin * x->es;
}

/* The swizzle: chunk bits 4..6 XOR the key of the line (bits 7 and up).
 * Linear over XOR, so the address of a register is the thread's part
 * swizzled XOR the register's part swizzled when those two combine by
 * XOR (xchg_split). */
static int64_t xchg_swz(const Xchg *x, int64_t b)
{
	return b ^ (xchg_key(x, b >> 7) << 4);
}

/* Shared-memory wavefronts warp 0 takes for the accesses of map m, vec
 * elements at a time, under x's swizzle. */
static int64_t xchg_cost(const Xchg *x, const NvMap *m, int vec)
{
	int wb = vec * x->es, per = wb <= 4 ? 32 : wb == 8 ? 16 : 8, words = wb < 4 ? 1 : wb / 4;
	int64_t cost = 0;
	for (int r = 0; r < m->n; r += vec) {
		int64_t w[32];
		for (int lane = 0; lane < 32; lane++)
			w[lane] = xchg_swz(x, xchg_byte(x, m, lane, 0, r)) >> 2;
		for (int p = 0; p < 32; p += per) {
			int64_t seen[32 * 4];
			int nseen = 0, depth[32] = {0}, most = 1;
			for (int lane = p; lane < p + per; lane++)
				for (int e = 0; e < words; e++) {
					int64_t wd = w[lane] + e;
					bool dup = false;
					for (int i = 0; i < nseen && !dup; i++)
						dup = seen[i] == wd;
					if (dup)
						continue;
					seen[nseen++] = wd;
					int bank = (int)(wd & 31);
					if (++depth[bank] > most)
						most = depth[bank];
				}
			cost += most;
		}
	}
	return cost;
}

/* Shared-memory wavefronts warp 0's stmatrix.x4 writes of map m (an
 * accumulator's arrangement, nv_stmatrix_ok) take under x's swizzle: each
 * 8 x 8 matrix writes 8 rows of 16 bytes, one wavefront when they fall in
 * 8 distinct 16-byte bank groups. Row i of the matrix at the register g is
 * held by lane 4 i (columns 0 and 1). */
static int64_t stmatrix_cost(const Xchg *x, const NvMap *m)
{
	int64_t cost = 0;
	for (int r = 0; r < m->n; r++) {
		int64_t ro = nv_map_offset(m, r, 0), co = nv_map_offset(m, r, 1);
		if (ro % 16 || co % 16)
			continue;
		for (int q = 0; q < 4; q++) {
			int64_t wr = ro + 8 * (q & 1), wc = co + 8 * (q >> 1);
			int g = -1;
			for (int k = 0; k < m->n && g < 0; k++)
				if (nv_map_offset(m, k, 0) == wr && nv_map_offset(m, k, 1) == wc)
					g = k;
			if (g < 0)
				continue;
			int depth[8] = {0}, most = 1;
			for (int i = 0; i < 8; i++) {
				int grp = (int)((xchg_swz(x, xchg_byte(x, m, 4 * i, 0, g)) >> 4) & 7);
				if (++depth[grp] > most)
					most = depth[grp];
			}
			cost += most;
		}
	}
	return cost;
}

/* The staging of a conversion to block type t along dim f: strides and
 * the cheapest swizzle for the source's and destination's accesses (stm:
 * the source writes by stmatrix). */
static void xchg_plan(const IrType *t, int f, const NvMap *src, const NvMap *dst, int vs, int vd, bool stm, Xchg *x)
{
	x->rank = t->rank;
	x->es = (int)nv_esize(t);
	x->drop = 0;
	x->f = f;
	int64_t run = t->shape[x->f];
	x->mul[x->f] = 1;
	for (int k = t->rank - 1; k >= 0; k--)
		if (k != x->f) {
			x->mul[k] = run;
			run *= t->shape[k];
		}
	static const int cand[][2] = {{-1, -1}, {0, -1}, {1, -1}, {2, -1}, {3, -1}, {4, -1}, {0, 3}, {1, 4}, {2, 5}, {3, 6}};
	int64_t best = -1;
	int bi = 0;
	for (int i = 0; i < (int)(sizeof cand / sizeof cand[0]); i++) {
		x->sh1 = cand[i][0];
		x->sh2 = cand[i][1];
		int64_t c = (stm ? stmatrix_cost(x, src) : xchg_cost(x, src, vs)) + xchg_cost(x, dst, vd);
		if (best < 0 || c < best) {
			best = c;
			bi = i;
		}
	}
	x->sh1 = cand[bi][0];
	x->sh2 = cand[bi][1];
}

/* Whether every element's offset under map m is its thread's part (register
 * 0's) XOR its register's part (thread 0's): true for blocked and mma
 * layouts over power-of-two shapes, whose lane, warp and register bits of a
 * coordinate are disjoint. Then (xchg_swz being linear) a register's
 * address is the thread's swizzled part XOR a constant, and no register
 * needs its own address arithmetic beyond that. *tmask: the bits the
 * threads' swizzled parts may have. */
static bool xchg_split(const Xchg *x, const NvMap *m, int nwarps, int64_t *tmask)
{
	*tmask = 0;
	if ((int64_t)m->n * 32 * nwarps > (1 << 20))
		return false;
	for (int w = 0; w < nwarps; w++)
		for (int lane = 0; lane < 32; lane++) {
			int64_t t = xchg_byte(x, m, lane, w, 0);
			*tmask |= xchg_swz(x, t);
			for (int r = 1; r < m->n; r++)
				if (xchg_byte(x, m, lane, w, r) != (t ^ xchg_byte(x, m, 0, 0, r)))
					return false;
		}
	return true;
}

/* Byte offset b with its chunk bits XORed by its line's key. */
static LLVMValueRef xchg_swizzle(Nv *nv, const Xchg *x, LLVMValueRef b)
{
	LLVMBuilderRef B = nv->b;
	if (x->sh1 >= 0) {
		LLVMValueRef k = LLVMBuildLShr(B, b, nv_i32(nv, 7 + x->sh1), "");
		if (x->sh2 >= 0)
			k = LLVMBuildXor(B, k, LLVMBuildLShr(B, b, nv_i32(nv, 7 + x->sh2), ""), "");
		k = LLVMBuildShl(B, LLVMBuildAnd(B, k, nv_i32(nv, 7), ""), nv_i32(nv, 4), "");
		b = LLVMBuildXor(B, b, k, "");
	}
	return b;
}

/* The swizzled byte offset of register r of map m (built with nv). */
static LLVMValueRef xchg_offset(Nv *nv, const Xchg *x, const NvMap *m, int r)
{
	LLVMBuilderRef B = nv->b;
	LLVMValueRef lin = nv_i32(nv, 0);
	for (int k = 0; k < x->rank; k++)
		lin = LLVMBuildAdd(B, lin, LLVMBuildMul(B, nv_map_coord(nv, m, r, k), nv_i32(nv, x->mul[k]), ""), "");
	return xchg_swizzle(nv, x, LLVMBuildMul(B, lin, nv_i32(nv, x->es), ""));
}

/* Shared addresses of the registers r = 0, vec, 2 vec, ... of map m. */
static LLVMValueRef *xchg_addrs(Nv *nv, const Xchg *x, const NvMap *m, int vec, int64_t off)
{
	LLVMBuilderRef B = nv->b;
	LLVMTypeRef i8 = LLVMInt8TypeInContext(nv->c);
	LLVMValueRef *a = nv_regbuf(nv, m->n);
	int64_t tmask;
	bool split = xchg_split(x, m, nv->ao.num_warps, &tmask);
	LLVMValueRef t = split ? xchg_offset(nv, x, m, 0) : NULL;
	if (t && x->drop)
		t = drop_bits_v(nv, t, x->drop);
	tmask = drop_bits(tmask, x->drop);
	for (int r = 0; r < m->n; r += vec) {
		LLVMValueRef b;
		int64_t add = off;
		if (split) {
			/* the bits the thread's part may have are XORed (one xor per
			 * distinct pattern), the others added: they fold into the
			 * address as an immediate */
			int64_t c = drop_bits(xchg_swz(x, xchg_byte(x, m, 0, 0, r)), x->drop);
			b = c & tmask ? LLVMBuildXor(B, t, nv_i32(nv, c & tmask), "") : t;
			add += c & ~tmask;
		} else {
			b = drop_bits_v(nv, xchg_offset(nv, x, m, r), x->drop);
		}
		/* the constant as a GEP of its own, so that LLVM does not merge it
		 * into the XOR (known-zero bits) and it stays an immediate */
		LLVMValueRef p = LLVMBuildGEP2(B, i8, nv->smem, &b, 1, "");
		LLVMValueRef k = nv_i32(nv, add);
		a[r] = LLVMBuildGEP2(B, i8, p, &k, 1, "");
	}
	return a;
}

/* A conversion in rounds (alloc.c mark_rounds): round q moves the elements
 * whose unswizzled byte offset has q in its round bits (round_bits),
 * through a buffer of 1/R of the bytes: the round bits are taken out of
 * every address (the swizzle keeps an element in its 128-byte line, and
 * the bits are 7 and up). */
/* Which bits of the unswizzled offsets under map m are a register's own
 * (the same in every thread: reg), a thread's own (the same in all its
 * registers: thr) and, of those, a warp's own (the same in every lane:
 * warp). One pass over every thread's every register. */
typedef struct XBits {
	int64_t reg, thr, warp;
} XBits;

static XBits xchg_bits(const Xchg *x, const NvMap *m, int nwarps)
{
	int64_t by_thread = 0, by_reg = 0, by_lane = 0;
	int64_t *r0 = malloc(sizeof *r0 * (size_t)(m->n + 1));
	if (!r0)
		abort();
	for (int r = 0; r < m->n; r++)
		r0[r] = xchg_byte(x, m, 0, 0, r);
	for (int w = 0; w < nwarps; w++) {
		int64_t w0 = xchg_byte(x, m, 0, w, 0);
		for (int lane = 0; lane < 32; lane++) {
			int64_t t0 = xchg_byte(x, m, lane, w, 0);
			by_lane |= t0 ^ w0;
			for (int r = 0; r < m->n; r++) {
				int64_t b = xchg_byte(x, m, lane, w, r);
				by_thread |= b ^ r0[r];
				by_reg |= b ^ t0;
			}
		}
	}
	free(r0);
	return (XBits){.reg = ~by_thread, .thr = ~by_reg, .warp = ~by_reg & ~by_lane};
}

/* The class of bit p on a side: 1 a register's own, 2 a thread's own, 3
 * both (a constant), 0 neither; with 4 when a thread's own bit is its
 * warp's. */
static int bit_class(const XBits *xb, int p)
{
	int reg = (int)((xb->reg >> p) & 1), thr = (int)((xb->thr >> p) & 1), warp = (int)((xb->warp >> p) & 1);
	return reg | (thr << 1) | (warp << 2);
}

/* How well a round bit of class c serves a side: a register's own (known
 * when compiled) 2, a warp's own (a uniform branch) 1, a lane's own 0. */
static int64_t bit_quality(int c) { return (c & 1) ? 2 : (c & 4) ? 1 : 0; }

/* The round an offset falls in: its bits of drop, lowest first. */
static int drop_round(int64_t byte, int64_t drop)
{
	int q = 0, i = 0;
	for (int p = 0; p < 63; p++)
		if ((drop >> p) & 1)
			q |= (int)((byte >> p) & 1) << i++;
	return q;
}

/* k offset bits (whole 128-byte lines) that on each side are a register's
 * own or a thread's own: a store or load then knows its round when
 * compiled, or from its thread alone (one branch a round for all such
 * registers, uniform when the bit is the warp's). Registers' own bits on
 * the loads' side first, then on the stores', splitting each side's
 * registers most evenly (an accumulator's and a store layout's rows by
 * eights: half of every thread's registers in each round). 0 if there are
 * not k such bits. */
static int64_t round_bits(const Xchg *x, const NvMap *ms, const NvMap *md, XBits bs, XBits bd, int64_t total, int k)
{
	int64_t drop = 0;
	for (int i = 0; i < k; i++) {
		int best = -1;
		int64_t bestscore = -1;
		for (int p = 7; ((int64_t)1 << p) < total; p++) {
			if ((drop >> p) & 1)
				continue;
			int cs = bit_class(&bs, p), cd = bit_class(&bd, p);
			if (!cs || !cd)
				continue;
			int64_t bal = -1;
			for (int side = 0; side < 2; side++) {
				const NvMap *m = side ? md : ms;
				int64_t ones = 0;
				for (int r = 0; r < m->n; r++)
					ones += (xchg_byte(x, m, 0, 0, r) >> p) & 1;
				int64_t b = ones < m->n - ones ? ones : m->n - ones;
				bal = bal < 0 || b < bal ? b : bal;
			}
			/* the loads spread over the rounds first (their results
			 * pile up until the conversion ends), then the stores */
			int64_t score = ((bit_quality(cd) * 3 + bit_quality(cs)) << 40) + bal;
			if (score > bestscore) {
				bestscore = score;
				best = p;
			}
		}
		if (best < 0)
			return 0;
		drop |= (int64_t)1 << best;
	}
	return drop;
}

/* One side of a conversion in rounds over the bits drop: per group of vec
 * registers the round bits that are its own (reg), which of the round's
 * bits are the thread's own (thr, an index mask) and their value for this
 * thread (tq). */
typedef struct XSide {
	int *reg;
	int thr;
	LLVMValueRef tq;
} XSide;

static void xchg_side(Nv *nv, const Xchg *x, const NvMap *m, XBits xb, int vec, XSide *xs)
{
	int i = 0;
	xs->thr = 0;
	xs->tq = NULL;
	LLVMValueRef byte0 = NULL;
	for (int p = 0; p < 63; p++) {
		if (!((x->drop >> p) & 1))
			continue;
		if (!(bit_class(&xb, p) & 1)) {
			xs->thr |= 1 << i;
			if (!byte0) {
				LLVMValueRef lin = nv_i32(nv, 0);
				for (int d = 0; d < x->rank; d++)
					lin = LLVMBuildAdd(nv->b, lin, LLVMBuildMul(nv->b, nv_map_coord(nv, m, 0, d), nv_i32(nv, (int)x->mul[d]), ""), "");
				byte0 = LLVMBuildMul(nv->b, lin, nv_i32(nv, x->es), "");
			}
			LLVMValueRef bit = LLVMBuildAnd(nv->b, LLVMBuildLShr(nv->b, byte0, nv_i32(nv, p), ""), nv_i32(nv, 1), "");
			bit = LLVMBuildShl(nv->b, bit, nv_i32(nv, i), "");
			xs->tq = xs->tq ? LLVMBuildOr(nv->b, xs->tq, bit, "") : bit;
		}
		i++;
	}
	xs->reg = calloc((size_t)m->n + 1, sizeof *xs->reg);
	if (!xs->reg)
		abort();
	for (int r = 0; r < m->n; r += vec)
		xs->reg[r] = drop_round(xchg_byte(x, m, 0, 0, r), x->drop) & ~xs->thr;
}

static void store_group(Nv *nv, const IrValue *v, int r, int vs, int es, bool isbool, LLVMTypeRef et, LLVMValueRef p)
{
	if (vs == 1) {
		LLVMValueRef e = nv_reg(nv, v, r);
		if (isbool)
			e = LLVMBuildZExt(nv->b, e, et, "");
		LLVMBuildStore(nv->b, e, p);
		return;
	}
	LLVMValueRef e = LLVMGetUndef(LLVMVectorType(et, (unsigned)vs));
	for (int i = 0; i < vs; i++)
		e = LLVMBuildInsertElement(nv->b, e, nv_reg(nv, v, r + i), nv_i32(nv, i), "");
	LLVMSetAlignment(LLVMBuildStore(nv->b, e, p), (unsigned)(vs * es));
}

static void load_group(Nv *nv, int r, int vd, int es, bool isbool, LLVMTypeRef et, LLVMValueRef p, LLVMValueRef *out)
{
	LLVMTypeRef vt = vd == 1 ? et : LLVMVectorType(et, (unsigned)vd);
	LLVMValueRef e = LLVMBuildLoad2(nv->b, vt, p, "");
	LLVMSetAlignment(e, (unsigned)(vd * es));
	for (int i = 0; i < vd; i++) {
		LLVMValueRef y = vd == 1 ? e : LLVMBuildExtractElement(nv->b, e, nv_i32(nv, i), "");
		if (isbool)
			y = LLVMBuildICmp(nv->b, LLVMIntNE, y, LLVMConstInt(et, 0, 0), "");
		out[r + i] = y;
	}
}

typedef struct XAddr {
	const Xchg *x;
	int64_t off;
} XAddr;

/* The 32-bit shared address of element (row, col) of a 2-D conversion's
 * staging (stmatrix's rows: columns are the staging's fastest dim). */
static LLVMValueRef xchg_elem_addr(Nv *nv, void *ctx, LLVMValueRef row, LLVMValueRef col)
{
	const XAddr *a = ctx;
	LLVMBuilderRef B = nv->b;
	LLVMValueRef lin = LLVMBuildAdd(B, LLVMBuildMul(B, row, nv_i32(nv, a->x->mul[0]), ""), col, "");
	LLVMValueRef b = xchg_swizzle(nv, a->x, LLVMBuildMul(B, lin, nv_i32(nv, a->x->es), ""));
	return nv_smem_addr32(nv, a->off, b, 1);
}

static void lower_convert_staged(Nv *nv, IrOp *op)
{
	const IrValue *v = op->ops[0];
	const IrType *st = v->type, *rt = op->res[0].type;
	int64_t off = nv_scratch_off(op);
	NvMap ms, md;
	nv_map_init(nv, st, &ms);
	nv_map_init(nv, rt, &md);
	Xchg x;
	int es = (int)nv_esize(rt), f = fast_dim(&md, rt);
	int vs = xchg_vec(&ms, st, f, es), vd = xchg_vec(&md, rt, f, es);
	bool isbool = ir_scalar(st)->kind == TY_I1;
	int R = (int)ir_op_int(op, "rounds", 1);
	/* 16-bit values from an accumulator's arrangement into a staging whose
	 * columns run fastest: stmatrix, 16 x 16 a warp at a time (a quarter
	 * of the shared stores). By default only outside loops (an epilogue
	 * that runs once: attention's output, a matmul's C); inside a loop (a
	 * persistent kernel's tile loop) one kernel already at 255 registers
	 * spilled with it, and it was at most 1% faster there on an H100.
	 * CTRITON_STMATRIX_CONVERT=1 everywhere, =0 nowhere (part of the cache
	 * key). The tensor stores' stmatrix (dot.c) is the same code with the
	 * tile's addresses */
	const char *sx = getenv("CTRITON_STMATRIX_CONVERT");
	bool stm_here = sx && sx[0] ? sx[0] == '1' : !nv_in_loop(op);
	bool stm = stm_here && R <= 1 && es == 2 && !isbool && rt->rank == 2 && f == 1 &&
		   (rt->shape[1] * es) % 16 == 0 && nv_stmatrix_ok(nv, v, &ms);
	xchg_plan(rt, f, &ms, &md, vs, vd, stm, &x);
	LLVMTypeRef et = isbool ? LLVMInt8TypeInContext(nv->c) : nv_llty(nv, st);
	LLVMValueRef *out = nv_regbuf(nv, md.n);
	int64_t total = rt->numel * es;
	if (R <= 1) {
		bool *done = NULL;
		if (stm) {
			done = calloc((size_t)ms.n + 1, 1);
			if (!done)
				abort();
			XAddr xa = {&x, off};
			nv_write_stmatrix(nv, v, &ms, xchg_elem_addr, &xa, 0, NULL, done);
		}
		LLVMValueRef *wa = xchg_addrs(nv, &x, &ms, vs, off);
		for (int r = 0; r < ms.n; r += vs) {
			bool all = done != NULL;
			for (int e = 0; all && e < vs; e++)
				all = done[r + e];
			if (!all)
				store_group(nv, v, r, vs, es, isbool, et, wa[r]);
		}
		free(done);
		nv_barrier(nv);
		LLVMValueRef *ra = xchg_addrs(nv, &x, &md, vd, off);
		for (int r = 0; r < md.n; r += vd)
			load_group(nv, r, vd, es, isbool, et, ra[r], out);
		nv_set(nv, &op->res[0], md.n, out);
		return;
	}
	/* in R rounds through 1/R of the bytes: a round's stores, a barrier,
	 * its loads, a barrier before the next round's stores. A group whose
	 * round bits are partly its thread's is stored or loaded under a branch
	 * on them (one a round for all such groups) */
	int k = 0;
	while ((1 << k) < R)
		k++;
	XBits bs = xchg_bits(&x, &ms, nv->ao.num_warps), bd = xchg_bits(&x, &md, nv->ao.num_warps);
	x.drop = (1 << k) == R && total % ((int64_t)R * 128) == 0 ? round_bits(&x, &ms, &md, bs, bd, total, k) : 0;
	if (x.drop) {
		LLVMValueRef *wa = xchg_addrs(nv, &x, &ms, vs, off), *ra = xchg_addrs(nv, &x, &md, vd, off);
		XSide ss, sd;
		xchg_side(nv, &x, &ms, bs, vs, &ss);
		xchg_side(nv, &x, &md, bd, vd, &sd);
		for (int r = 0; r < md.n; r++)
			out[r] = LLVMGetUndef(isbool ? LLVMInt1TypeInContext(nv->c) : et);
		for (int q = 0; q < R; q++) {
			if (q)
				nv_barrier(nv);
			/* the stores of round q: of the registers whose own round
			 * bits are q's, where the thread's are q's too */
			LLVMBasicBlockRef jb =
				ss.thr ? nv_open_when(
						 nv, LLVMBuildICmp(nv->b, LLVMIntEQ, ss.tq, nv_i32(nv, q & ss.thr), ""),
						 "cvt.round")
				       : NULL;
			for (int r = 0; r < ms.n; r += vs)
				if (ss.reg[r] == (q & ~ss.thr))
					store_group(nv, v, r, vs, es, isbool, et, wa[r]);
			if (jb)
				nv_close_when(nv, jb);
			nv_barrier(nv);
			LLVMBasicBlockRef from = LLVMGetInsertBlock(nv->b);
			LLVMValueRef *before = nv_regbuf(nv, md.n);
			memcpy(before, out, sizeof *before * (size_t)md.n);
			jb = sd.thr ? nv_open_when(nv,
						   LLVMBuildICmp(nv->b, LLVMIntEQ, sd.tq, nv_i32(nv, q & sd.thr), ""),
						   "cvt.round")
				    : NULL;
			for (int r = 0; r < md.n; r += vd)
				if (sd.reg[r] == (q & ~sd.thr))
					load_group(nv, r, vd, es, isbool, et, ra[r], out);
			if (jb) {
				/* a phi of each register loaded here with what it held */
				LLVMBasicBlockRef end = LLVMGetInsertBlock(nv->b);
				nv_close_when(nv, jb);
				for (int r = 0; r < md.n; r++) {
					if (out[r] == before[r])
						continue;
					LLVMValueRef phi = LLVMBuildPhi(nv->b, LLVMTypeOf(out[r]), "");
					LLVMValueRef vals[2] = {before[r], out[r]};
					LLVMBasicBlockRef bbs[2] = {from, end};
					LLVMAddIncoming(phi, vals, bbs, 2);
					out[r] = phi;
				}
			}
		}
		free(ss.reg);
		free(sd.reg);
		nv_set(nv, &op->res[0], md.n, out);
		return;
	}
	/* every offset bit of a blocked or mma layout over a power-of-two
	 * block is a register's, a lane's or a warp's, and alloc.c asks for
	 * rounds of whole lines: round_bits finds them */
	nv_fail(nv, op, "convert_layout in %d rounds: no offset bits to take the rounds from", R);
}

void nv_lower_convert(Nv *nv, IrOp *op)
{
	if (op == nv->staged) { /* lowered with the first of its pair */
		nv->staged = NULL;
		return;
	}
	if (an_same_registers(op->ops[0]->type, op->res[0].type) && !nv_smem_operand(op)) {
		nv_lower_identity(nv, op); /* e.g. an mma result that is the next dot's A */
		return;
	}
	if (nv_ldmatrix_ok(op) || nv_smem_operand(op)) {
		nv_lower_to_dot_op(nv, op);
		return;
	}
	NvMap a, b;
	nv_map_init(NULL, op->ops[0]->type, &a);
	nv_map_init(NULL, op->res[0].type, &b);
	bool same = a.b == b.b && a.n == b.n && a.brank == b.brank;
	for (int d = 0; same && d < a.brank; d++)
		same = a.bs[d] == b.bs[d];
	if (same) { /* same distribution, e.g. slice vs. expanded parent */
		nv_lower_identity(nv, op);
		return;
	}
	int ls;
	if (!an_regs_only(op, nv->ao.num_warps, nv->ao.warp_size) && an_warp_shuffle(op, nv->ao.warp_size, &ls)) {
		/* each register from the lane of its element (an_warp_shuffle) */
		NvMap m;
		nv_map_init(nv, op->res[0].type, &m);
		LLVMValueRef x = nv_reg(nv, op->ops[0], 0), *out = nv_regbuf(nv, m.n);
		for (int r = 0; r < m.n; r++)
			out[r] = nv_shfl(nv, "idx", x,
					 LLVMBuildMul(nv->b, nv_map_coord(nv, &m, r, 0), nv_i32(nv, ls), ""));
		nv_set(nv, &op->res[0], m.n, out);
		return;
	}
	if (!lower_renaming(nv, op))
		lower_convert_staged(nv, op);
}

/* cat along dim 0 / join in a new minor dim of size 2. */
void nv_lower_two(Nv *nv, IrOp *op)
{
	if (op->opc == OP_JOIN && lower_renaming(nv, op))
		return;
	int64_t off0 = nv_scratch_off(op);
	const IrType *st = op->ops[0]->type;
	int64_t n0 = ir_is_block(st) ? st->numel : 1;
	int64_t off1 = off0 + nv_align16(n0 * nv_esize(st));
	nv_write_block(nv, op->ops[0], off0);
	nv_write_block(nv, op->ops[1], off1);
	nv_barrier(nv);
	NvMap m;
	nv_map_init(nv, op->res[0].type, &m);
	LLVMValueRef *out = nv_regbuf(nv, m.n);
	for (int r = 0; r < m.n; r++) {
		LLVMValueRef lin = nv_map_lin(nv, &m, op->res[0].type, r);
		LLVMValueRef which, idx;
		if (op->opc == OP_JOIN) {
			which = LLVMBuildAnd(nv->b, lin, nv_i32(nv, 1), "");
			idx = LLVMBuildLShr(nv->b, lin, nv_i32(nv, 1), "");
		} else {
			which = LLVMBuildICmp(nv->b, LLVMIntUGE, lin, nv_i32(nv, n0), "");
			which = LLVMBuildZExt(nv->b, which, LLVMInt32TypeInContext(nv->c), "");
			idx = LLVMBuildSub(nv->b, lin, LLVMBuildMul(nv->b, which, nv_i32(nv, n0), ""), "");
		}
		LLVMValueRef base = LLVMBuildAdd(nv->b, nv_i32(nv, off0), LLVMBuildMul(nv->b, which, nv_i32(nv, off1 - off0), ""), "");
		LLVMValueRef bytes = LLVMBuildAdd(nv->b, base, LLVMBuildMul(nv->b, idx, nv_i32(nv, nv_esize(st)), ""), "");
		LLVMValueRef p = LLVMBuildGEP2(nv->b, LLVMInt8TypeInContext(nv->c), nv->smem, &bytes, 1, "");
		if (ir_scalar(st)->kind == TY_I1) {
			LLVMValueRef x = LLVMBuildLoad2(nv->b, LLVMInt8TypeInContext(nv->c), p, "");
			out[r] = LLVMBuildICmp(nv->b, LLVMIntNE, x, LLVMConstInt(LLVMInt8TypeInContext(nv->c), 0, 0), "");
		} else {
			out[r] = LLVMBuildLoad2(nv->b, nv_llty(nv, st), p, "");
		}
	}
	nv_set(nv, &op->res[0], m.n, out);
}

void nv_lower_gather(Nv *nv, IrOp *op)
{
	int64_t off = nv_scratch_off(op);
	const IrType *st = op->ops[0]->type, *rt = op->res[0].type;
	int axis = (int)ir_op_int(op, "axis", 0);
	nv_write_block(nv, op->ops[0], off);
	nv_barrier(nv);
	NvMap m;
	nv_map_init(nv, rt, &m);
	LLVMValueRef *out = nv_regbuf(nv, m.n);
	for (int r = 0; r < m.n; r++) {
		LLVMValueRef lin = nv_i32(nv, 0);
		int64_t mul = 1;
		for (int d = rt->rank - 1; d >= 0; d--) {
			LLVMValueRef c = d == axis ? LLVMBuildIntCast2(nv->b, nv_reg(nv, op->ops[1], r), LLVMInt32TypeInContext(nv->c), 1, "")
						   : nv_map_coord(nv, &m, r, d);
			lin = LLVMBuildAdd(nv->b, lin, LLVMBuildMul(nv->b, c, nv_i32(nv, mul), ""), "");
			mul *= st->shape[d];
		}
		out[r] = nv_smem_load(nv, st, off, lin);
	}
	nv_set(nv, &op->res[0], m.n, out);
}

/* histogram: the bins zeroed in shared scratch, every owned element in
 * [0, bins) (and its mask) adds one to its bin with a shared-memory atomic
 * predicated by those conditions (`@p red.shared.add.u32 [bin], 1`: an
 * element out of range, masked off or a copy of another thread's does
 * nothing; the constant 1 lets ptxas count a warp's equal bins at once,
 * ATOMS.POPC.INC), then the bins are read in the result's layout. */
void nv_lower_histogram(Nv *nv, IrOp *op)
{
	int64_t off = nv_scratch_off(op);
	const IrValue *x = op->ops[0], *mask = op->nops > 1 ? op->ops[1] : NULL;
	const IrType *xt = x->type, *rt = op->res[0].type, *xe = ir_scalar(xt);
	int64_t bins = rt->numel;
	LLVMBuilderRef B = nv->b;
	LLVMTypeRef i32 = LLVMInt32TypeInContext(nv->c), i64 = LLVMInt64TypeInContext(nv->c);
	int64_t nthreads = (int64_t)nv->ao.num_warps * 32;
	for (int64_t b0 = 0; b0 < bins; b0 += nthreads) {
		LLVMValueRef idx = LLVMBuildAdd(B, nv->tid, nv_i32(nv, (int)b0), "");
		if (b0 + nthreads > bins) { /* the last round: threads past the bins store nothing */
			LLVMBasicBlockRef zb = nv_new_bb(nv, "hist.zero"), jb = nv_new_bb(nv, "hist.zero.end");
			LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntULT, idx, nv_i32(nv, (int)bins), ""), zb, jb);
			LLVMPositionBuilderAtEnd(B, zb);
			nv_smem_store(nv, rt, off, idx, LLVMConstInt(i32, 0, 0));
			LLVMBuildBr(B, jb);
			LLVMPositionBuilderAtEnd(B, jb);
		} else {
			nv_smem_store(nv, rt, off, idx, LLVMConstInt(i32, 0, 0));
		}
	}
	nv_barrier(nv);
	NvMap m;
	nv_map_init(nv, xt, &m);
	LLVMValueRef owner = ir_is_block(xt) ? nv_map_owner(nv, &m) : NULL;
	LLVMTypeRef at[2] = {LLVMInt1TypeInContext(nv->c), i32};
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(nv->c), at, 2, 0);
	static const char inc[] = "@$0 red.shared.add.u32 [$1], 1;", cons[] = "b,r,~{memory}";
	LLVMValueRef incf = LLVMGetInlineAsm(fty, (char *)inc, sizeof inc - 1, (char *)cons, sizeof cons - 1, 1, 0,
					     LLVMInlineAsmDialectATT, 0);
	for (int r = 0; r < m.n; r++) {
		LLVMValueRef v = nv_reg(nv, x, r);
		if (ir_type_bits(xe) < 64)
			v = ir_is_signed(xe) ? LLVMBuildSExt(B, v, i64, "") : LLVMBuildZExt(B, v, i64, "");
		LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntULT, v, LLVMConstInt(i64, (unsigned long long)bins, 0), "");
		if (mask)
			ok = LLVMBuildAnd(B, ok, nv_reg(nv, mask, r), "");
		if (owner)
			ok = LLVMBuildAnd(B, ok, owner, "");
		LLVMValueRef args[2] = {ok, nv_smem_addr32(nv, off, LLVMBuildTrunc(B, v, i32, ""), 4)};
		LLVMBuildCall2(B, fty, incf, args, 2, "");
	}
	nv_barrier(nv);
	NvMap mr;
	nv_map_init(nv, rt, &mr);
	LLVMValueRef *out = nv_regbuf(nv, mr.n);
	for (int r = 0; r < mr.n; r++)
		out[r] = nv_smem_load(nv, rt, off, nv_map_lin(nv, &mr, rt, r));
	nv_set(nv, &op->res[0], mr.n, out);
}
