/* dot.c: tl.dot. On tensor cores (accumulator in an mma v2 layout) the
 * operands arrive in #dot_op layouts: a 16-bit 2-D tile converted to one is
 * staged row-major in swizzled scratch and read back with ldmatrix (A and B
 * of a staged pair share one barrier), then one inline-asm
 * mma.sync.m16n8k16 per 16 x 8 warp tile and 16-wide K step. Otherwise an
 * FMA fallback: A and B through scratch, a K loop of FMAs over the
 * accumulators this thread owns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvptx.h"

/* ------------------------------------------------------------------------- */
/* Dot operands: shared memory -> ldmatrix                                    */
/* ------------------------------------------------------------------------- */

/* The operand tile [R][C] (elements of es bytes) is staged in shared
 * memory with its 16-byte chunks swizzled. Up to 128-byte rows it is
 * row-major, chunk c of row r stored at chunk c ^ key(r), key(r) =
 * (r / (8 / nc)) % nc for nc < 8 chunks a row, r % 8 otherwise; wider
 * tiles are cut into column blocks of 128 bytes stored one after the other
 * ([C / w][R][w], w = 128 / es), each swizzled like a 128-byte tile. The 8
 * row addresses of one ldmatrix phase (8 rows, one chunk each) then fall on
 * 8 distinct 16-byte bank groups, and with the tile 1 KiB aligned this is
 * the 128-, 64- or 32-byte swizzled layout the warpgroup MMA reads by
 * descriptor (see desc_base).
 *
 * A tile only read back into registers (prefetch.c regs_ok) may take
 * another key (nv_regs_swizzle): (key(r) << (mode & 3)) % nc, with mode &
 * 4 the column block's index xored into it. An fp32 A read two
 * elements a lane, 4 lanes a row, puts rows r and r ^ 1 on the same two
 * chunks with mode 0 (two-way bank conflicts in every half-warp), on
 * disjoint ones with mode 1; a row of 8 fp32 a lane, 8 lanes a row, reads
 * the same chunks of two column blocks unless mode & 4. */
static int64_t swz_key(int64_t row, int64_t blk, int64_t nc, int mode)
{
	int64_t key = nc >= 8 ? row & 7 : nc <= 1 ? 0 : (row / (8 / nc)) % nc;
	return nc > 1 ? ((key << (mode & 3)) ^ (mode & 4 ? blk : 0)) & (nc - 1) : 0;
}

LLVMValueRef nv_swizzled_index(Nv *nv, LLVMValueRef row, LLVMValueRef col, int64_t R, int64_t C, int es, int mode)
{
	LLVMBuilderRef B = nv->b;
	int64_t w = 128 / es, ce = 16 / es; /* elements per 128-byte row, per chunk */
	int sh = ce == 16 ? 4 : ce == 8 ? 3 : ce == 4 ? 2 : ce == 2 ? 1 : 0;
	LLVMValueRef blk = NULL, col0 = col;
	if (C > w) {
		blk = LLVMBuildMul(B, LLVMBuildUDiv(B, col, nv_i32(nv, w), ""), nv_i32(nv, R * w), "");
		col = LLVMBuildURem(B, col, nv_i32(nv, w), "");
		C = w;
	}
	int64_t nc = C / ce;
	LLVMValueRef key = nc >= 8 ? LLVMBuildAnd(B, row, nv_i32(nv, 7), "")
		: nc <= 1 ? nv_i32(nv, 0)
			  : LLVMBuildURem(B, LLVMBuildUDiv(B, row, nv_i32(nv, 8 / nc), ""), nv_i32(nv, nc), "");
	if (mode && nc > 1) {
		key = LLVMBuildShl(B, key, nv_i32(nv, mode & 3), "");
		if ((mode & 4) && blk)
			key = LLVMBuildXor(B, key, LLVMBuildUDiv(B, col0, nv_i32(nv, w), ""), "");
		key = LLVMBuildAnd(B, key, nv_i32(nv, nc - 1), "");
	}
	LLVMValueRef chunk = LLVMBuildXor(B, LLVMBuildLShr(B, col, nv_i32(nv, sh), ""), key, "");
	LLVMValueRef c = LLVMBuildOr(B, LLVMBuildShl(B, chunk, nv_i32(nv, sh), ""),
				     LLVMBuildAnd(B, col, nv_i32(nv, ce - 1), ""), "");
	LLVMValueRef i = LLVMBuildAdd(B, LLVMBuildMul(B, row, nv_i32(nv, C), ""), c, "");
	return blk ? LLVMBuildAdd(B, blk, i, "") : i;
}

static LLVMValueRef swizzled_index(Nv *nv, LLVMValueRef row, LLVMValueRef col, int64_t R, int64_t C, int es)
{
	return nv_swizzled_index(nv, row, col, R, C, es, 0);
}

/* nv_swizzled_index on constants: the element index of (row, col). */
int64_t nv_swizzled_index_int(int64_t row, int64_t col, int64_t R, int64_t C, int es, int mode)
{
	int64_t w = 128 / es, ce = 16 / es, blk = 0;
	if (C > w) {
		blk = col / w;
		col %= w;
		C = w;
	}
	int64_t chunk = (col / ce) ^ swz_key(row, blk, C / ce, mode);
	return blk * R * w + row * C + chunk * ce + col % ce;
}

bool nv_ldmatrix_ok(const IrOp *op)
{
	const IrType *t = op->res[0].type;
	IrTypeKind k = ir_scalar(t)->kind;
	/* not a K width of 4 (an_dot_kw4): its registers are read back
	 * from an 8-bit slot, never staged for ldmatrix */
	return t->layout->kind == LAYOUT_DOT_OP && t->rank == 2 && (k == TY_F16 || k == TY_BF16) &&
	       t->layout->k_width == 2 && t->shape[1] >= 16 && t->shape[0] >= 16;
}

/* Writes v (a 2-D block) into the swizzled tile at off: runs of
 * registers that are consecutive columns within one 16-byte chunk go out as
 * one vector store. tr: the tile is stored transposed ([C][R]: the B of a
 * warpgroup MMA whose elements are not 16 bits wide is read K-major). */
void nv_write_swizzled(Nv *nv, const IrValue *v, int64_t off, bool tr)
{
	nv_write_swizzled_cols(nv, v, off, tr, 0, -1);
}

/* stmatrix.x4 on sm_90: 16-bit registers in an accumulator's arrangement
 * (in each 8 x 8 piece, lane l holds row l / 4, columns 2 (l % 4) and
 * + 1; the warp's rows and columns further on in registers) go out as four
 * 8 x 8 matrices, 16 rows x 16 columns, per instruction: matrix q of
 * (rows +8 (q & 1), columns +8 (q >> 1)), lane l giving the address of row
 * l % 8 of matrix l / 8 (addr: the 32-bit shared address of an element,
 * whose 8 columns from a multiple of 8 must be 16 contiguous bytes). Marks
 * the registers it writes in done[]; the others are left to the element
 * stores. in (may be NULL): only the registers inside a column window, col0
 * its first column. */
bool nv_stmatrix_ok(const Nv *nv, const IrValue *v, const NvMap *m)
{
	const AnDimDist *d0 = &m->dd[0], *d1 = &m->dd[1];
	return nv->ao.arch >= 90 && nv_esize(v->type) == 2 && m->brank == 2 && m->rank == 2 && m->dimmap[0] == 0 &&
	       m->dimmap[1] == 1 && d0->tpw == 8 && d0->lane_stride == 4 && d0->lane_unit == 1 && d1->tpw == 4 &&
	       d1->lane_stride == 1 && d1->lane_unit == 2 && d1->spt == 2 && d1->estride == 1 && m->bs[0] >= 16 &&
	       m->bs[1] >= 16 && m->bs[0] == v->type->shape[0] && m->bs[1] == v->type->shape[1];
}

void nv_write_stmatrix(Nv *nv, const IrValue *v, const NvMap *m, NvAddrFn addr, void *ctx, int64_t col0,
		       const bool *in, bool *done)
{
	const AnDimDist *d0 = &m->dd[0], *d1 = &m->dd[1];
	if (!nv_stmatrix_ok(nv, v, m))
		return;
	/* each register's offsets from the thread's base */
	int n = m->n;
	int64_t *ro = malloc(sizeof(int64_t) * 2 * (size_t)n);
	if (!ro)
		abort();
	int64_t *co = ro + n;
	for (int r = 0; r < n; r++) {
		ro[r] = nv_map_offset(m, r, 0);
		co[r] = nv_map_offset(m, r, 1);
	}
	LLVMBuilderRef B = nv->b;
	LLVMTypeRef i32 = LLVMInt32TypeInContext(nv->c), et = nv_llty(nv, v->type);
	LLVMValueRef l8 = LLVMBuildAnd(B, nv->lane, nv_i32(nv, 7), "");
	LLVMValueRef q = LLVMBuildLShr(B, nv->lane, nv_i32(nv, 3), "");
	LLVMValueRef qr = LLVMBuildShl(B, LLVMBuildAnd(B, q, nv_i32(nv, 1), ""), nv_i32(nv, 3), "");
	LLVMValueRef qc = LLVMBuildShl(B, LLVMBuildLShr(B, q, nv_i32(nv, 1), ""), nv_i32(nv, 3), "");
	LLVMValueRef wr = LLVMBuildMul(B, m->warp_d[0], nv_i32(nv, d0->warp_unit), "");
	LLVMValueRef wc = LLVMBuildMul(B, m->warp_d[1], nv_i32(nv, d1->warp_unit), "");
	LLVMValueRef lrow = LLVMBuildAdd(B, LLVMBuildAdd(B, wr, l8, ""), qr, "");
	LLVMValueRef lcol = LLVMBuildAdd(B, wc, qc, "");
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(nv->c), (LLVMTypeRef[]){i32, i32, i32, i32, i32}, 5, 0);
	const char *text = "stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0], {$1, $2, $3, $4};";
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)"r,r,r,r,r,~{memory}", 19, 1, 0,
					     LLVMInlineAsmDialectATT, 0);
	for (int r = 0; r < n; r++) {
		if (done[r] || ro[r] % 16 || co[r] % 16)
			continue;
		/* the 8 registers: matrix k's pair (columns +0, +1) */
		int g[8], ng = 0;
		for (int k = 0; k < 8; k++) {
			int64_t wro = ro[r] + 8 * (k / 2 & 1), wco = co[r] + 8 * (k / 4) + (k & 1);
			g[k] = -1;
			for (int x = 0; x < n && g[k] < 0; x++)
				if (ro[x] == wro && co[x] == wco && !done[x])
					g[k] = x;
			ng += g[k] >= 0 && (!in || in[g[k]] == in[r]);
		}
		if (ng != 8 || (in && !in[r]))
			continue;
		LLVMValueRef args[5];
		LLVMValueRef row = LLVMBuildAnd(B, LLVMBuildAdd(B, lrow, nv_i32(nv, ro[r]), ""), nv_i32(nv, m->bs[0] - 1), "");
		LLVMValueRef col = LLVMBuildAnd(B, LLVMBuildAdd(B, lcol, nv_i32(nv, co[r]), ""), nv_i32(nv, m->bs[1] - 1), "");
		if (in && col0)
			col = LLVMBuildSub(B, col, nv_i32(nv, col0), "");
		args[0] = addr(nv, ctx, row, col);
		for (int k = 0; k < 4; k++) {
			LLVMValueRef x = LLVMGetUndef(LLVMVectorType(et, 2));
			x = LLVMBuildInsertElement(B, x, nv_reg(nv, v, g[2 * k]), nv_i32(nv, 0), "");
			x = LLVMBuildInsertElement(B, x, nv_reg(nv, v, g[2 * k + 1]), nv_i32(nv, 1), "");
			args[1 + k] = LLVMBuildBitCast(B, x, i32, "");
			done[g[2 * k]] = done[g[2 * k + 1]] = true;
		}
		LLVMBuildCall2(B, fty, asmv, args, 5, "");
	}
	free(ro);
}

typedef struct TileAddr {
	int64_t off, R, C;
} TileAddr;

/* The swizzled tile's element (row, col), 16-bit elements. */
static LLVMValueRef tile_addr(Nv *nv, void *ctx, LLVMValueRef row, LLVMValueRef col)
{
	const TileAddr *t = ctx;
	return nv_smem_addr32(nv, t->off, swizzled_index(nv, row, col, t->R, t->C, 2), 2);
}

/* The same for columns col0 .. col0 + cols - 1 of v (cols > 0; not
 * transposed), as the tile [R][cols]: the registers outside the window,
 * the same in every thread (an_col_window), are not written. Registers in
 * an accumulator's arrangement go out by stmatrix (sm_90). */
void nv_write_swizzled_cols(Nv *nv, const IrValue *v, int64_t off, bool tr, int64_t col0, int64_t cols)
{
	NvMap m;
	nv_map_init(nv, v->type, &m);
	int64_t R = v->type->shape[0], C = cols > 0 ? cols : v->type->shape[1];
	int es = (int)nv_esize(v->type);
	bool *in = NULL;
	if (cols > 0) {
		in = malloc((size_t)m.n + 1);
		if (!in)
			abort();
		if (tr || an_col_window(v->type, nv->ao.num_warps, nv->ao.warp_size, col0, cols, in, m.n) != m.n) {
			free(in);
			nv_fail(nv, NULL, "a column window of a block whose registers it splits between threads");
			return;
		}
	}
	/* vectors along the tile's rows: dim 1, or dim 0 written transposed
	 * (a K-contiguous B into its [N][K] slot) */
	int vec = 1, vd = tr ? 0 : 1;
	if (m.brank == 2 && m.dimmap[vd] == vd && m.order[0] == vd && m.dd[vd].estride == 1)
		vec = m.dd[vd].spt < 16 / es ? m.dd[vd].spt : 16 / es;
	while (vec > 1 && m.nd[vd] % vec)
		vec /= 2;
	/* a vector lies wholly inside or outside the window */
	for (bool mixed = true; in && vec > 1 && mixed;) {
		mixed = false;
		for (int r = 0; r < m.n && !mixed; r += vec)
			for (int e = 1; e < vec; e++)
				mixed |= in[r + e] != in[r];
		if (mixed)
			vec /= 2;
	}
	LLVMTypeRef et = nv_llty(nv, v->type);
	bool *done = NULL;
	if (cols >= 0 && !tr) {
		done = calloc((size_t)m.n + 1, 1);
		if (!done)
			abort();
		TileAddr ta = {off, R, C};
		nv_write_stmatrix(nv, v, &m, tile_addr, &ta, col0, in, done);
	}
	for (int r = 0; r < m.n; r += vec) {
		if ((in && !in[r]) || (done && done[r]))
			continue;
		LLVMValueRef r0 = nv_map_coord(nv, &m, r, 0), c0 = nv_map_coord(nv, &m, r, 1);
		if (cols > 0 && col0)
			c0 = LLVMBuildSub(nv->b, c0, nv_i32(nv, col0), "");
		LLVMValueRef idx = tr ? swizzled_index(nv, c0, r0, C, R, es) : swizzled_index(nv, r0, c0, R, C, es);
		LLVMValueRef p = nv_smem_addr(nv, off, idx, es);
		if (vec == 1) {
			LLVMBuildStore(nv->b, nv_reg(nv, v, r), p);
			continue;
		}
		LLVMValueRef x = LLVMGetUndef(LLVMVectorType(et, (unsigned)vec));
		for (int e = 0; e < vec; e++)
			x = LLVMBuildInsertElement(nv->b, x, nv_reg(nv, v, r + e), nv_i32(nv, e), "");
		LLVMSetAlignment(LLVMBuildStore(nv->b, x, p), (unsigned)(es * vec));
	}
	free(in);
	free(done);
}

/* The registers a thread of map m reads as one vector from a tile read
 * back into registers: a run consecutive along the tile's rows (columns
 * when tr) within one 16-byte chunk. */
static int read_vec(const NvMap *m, int es, bool tr)
{
	int vd = tr ? 0 : 1, vec = 1;
	if (m->brank == 2 && m->dimmap[vd] == vd && m->order[0] == vd && m->dd[vd].estride == 1)
		vec = m->dd[vd].spt < 16 / es ? m->dd[vd].spt : 16 / es;
	while (vec > 1 && (m->nd[vd] % vec || m->dd[vd].spt % vec || m->dd[vd].lane_unit % vec ||
			   m->dd[vd].warp_unit % vec || m->dd[vd].tile % vec))
		vec /= 2;
	return vec;
}

/* Coordinate vdim of register r of map m in lane `lane` of warp 0. */
static int64_t lane_coord(const NvMap *m, int r, int vdim, int lane)
{
	int d = m->dimmap[vdim];
	int64_t S = m->bs[d];
	if (S == 1)
		return 0;
	const AnDimDist *dd = &m->dd[d];
	int64_t l = (lane / dd->lane_stride) % dd->tpw;
	return (l * dd->lane_unit + nv_map_offset(m, r, d)) & (S - 1);
}

/* A 32-bit dot operand of mma.sync (tf32) that local_read gives. */
static bool tf32_mma_read(const IrOp *op)
{
	const IrType *t = op->res[0].type;
	return op->opc == OP_LOCAL_READ && !ir_op_int(op, "regs", 0) && t->rank == 2 && t->layout &&
	       t->layout->kind == LAYOUT_DOT_OP && ir_scalar(t)->kind == TY_F32 && !nv_smem_operand(op) &&
	       !an_fma_slot(op);
}

/* A tf32 operand of mma.sync held K-major in its slot (A as [M][K], B as
 * [N][K], transposed): a fragment's 8 rows (of M or N) x 4 elements of K
 * are 8 rows of 16 bytes, which ldmatrix (b16) reads as they are, an
 * element a lane at (row lane / 4, K lane % 4), as the MMA wants a0 and
 * b0. One x4 call gives a 16 x 8 A fragment, or the 8 x 8 B fragments of
 * two N tiles. CTRITON_TF32_LDMATRIX=0 reads element by element (part of
 * the cache key). */
static bool tf32_ldmatrix(const IrOp *op)
{
	const char *e = getenv("CTRITON_TF32_LDMATRIX");
	if ((e && !strcmp(e, "0")) || !tf32_mma_read(op))
		return false;
	const IrType *t = op->res[0].type;
	bool tr = ir_op_int(op, "transposed", 0) != 0, isa = t->layout->opidx == 0;
	NvMap m;
	nv_map_init(NULL, t, &m);
	/* the warps tile the rows (M of A, N of B) without wrapping around */
	const AnDimDist *dd = &m.dd[isa ? 0 : 1];
	int64_t rows = t->shape[isa ? 0 : 1];
	if (m.brank != 2 || tr == isa || t->shape[isa ? 1 : 0] % 8 || (int64_t)dd->warp_unit * dd->wpc > rows)
		return false;
	return rows % (isa ? 16 : 8) == 0;
}

/* A local_read whose threads read the slot themselves, element by element:
 * a tf32 operand of mma.sync (nv_read_dot_op_elems) that ldmatrix does not
 * take. */
static bool elems_read(const IrOp *op)
{
	return tf32_mma_read(op) && !tf32_ldmatrix(op);
}

static void ldmatrix(Nv *nv, int n, bool trans, LLVMValueRef addr, LLVMValueRef *out);
static LLVMValueRef slot_addr32(Nv *nv, int64_t off, LLVMValueRef row, LLVMValueRef col, int64_t R, int64_t C, int es,
				LLVMValueRef eoff);

/* An 8-bit tile read back into a dot operand of K width 4 (an_dot_kw4:
 * fp8 upcast to fp16 for mma.sync) from a slot that holds it
 * K-contiguous (A as [M][K], B as [N][K]), K a multiple of 32 and, for
 * B, an even number of 8-column tiles a warp: ldmatrix (b16) reads it.
 * The same for an int8 operand that the dot reads from its slot itself
 * (m16n8k32 takes the 4-wide layout as it is).
 * Each 8 x 8 b16 matrix is 8 rows of 16 bytes, lane l receiving row
 * l / 4's bytes 4 (l % 4) .. + 3, which are K 4t .. 4t + 3 of that row in
 * the K-width-4 layout. */
bool nv_kw4_ldmatrix(const IrOp *op)
{
	const IrType *t = op->res[0].type;
	const IrLayout *l = t->layout;
	if (op->opc != OP_LOCAL_READ || t->rank != 2 || !l || l->kind != LAYOUT_DOT_OP || l->k_width != 4 ||
	    !l->parent || l->parent->kind != LAYOUT_MMA || l->parent->version_major != 2 ||
	    ir_type_bits(ir_scalar(t)) != 8 || ir_op_int(op, "k0", 0) || ir_op_int(op, "kfull", 0) ||
	    (ir_op_int(op, "transposed", 0) != 0) != (l->opidx == 1))
		return false;
	NvMap m;
	nv_map_init(NULL, t, &m);
	if (m.brank != 2 || m.dimmap[0] != 0 || m.dimmap[1] != 1)
		return false;
	return l->opidx == 0 ? m.nd[0] % 2 == 0 && m.nd[1] % 8 == 0 : m.nd[0] % 8 == 0 && m.nd[1] % 2 == 0;
}

void nv_read_kw4_ldmatrix(Nv *nv, IrOp *op, LLVMValueRef eoff)
{
	const IrType *t = op->res[0].type;
	int64_t R = t->shape[0], C = t->shape[1], off = nv_scratch_off(op);
	NvMap m;
	nv_map_init(nv, t, &m);
	LLVMValueRef *regs = nv_regbuf(nv, m.n);
	LLVMBuilderRef B = nv->b;
	LLVMTypeRef v4 = LLVMVectorType(nv_llty(nv, t), 4);
	LLVMValueRef l8 = LLVMBuildAnd(B, nv->lane, nv_i32(nv, 7), "");
	LLVMValueRef q = LLVMBuildLShr(B, nv->lane, nv_i32(nv, 3), ""); /* matrix of this lane's address */
	LLVMValueRef q0 = LLVMBuildAnd(B, q, nv_i32(nv, 1), ""), q1 = LLVMBuildLShr(B, q, nv_i32(nv, 1), "");
	bool isa = t->layout->opidx == 0;
	const AnDimDist *dr = &m.dd[isa ? 0 : 1]; /* M of A, N of B */
	LLVMValueRef w = LLVMBuildMul(B, m.warp_d[isa ? 0 : 1], nv_i32(nv, dr->warp_unit), "");
	/* matrix q of A: rows +8 (q & 1) of the 16-row tile, K bytes 16 (q >>
	 * 1) on from 32 kc (a0..a3 in order); of B: K bytes 16 (q & 1) on,
	 * the 8-column tile ni + (q >> 1) (b0, b1 of one tile in consecutive
	 * registers, as the MMA takes them) */
	LLVMValueRef kq = LLVMBuildShl(B, isa ? q1 : q0, nv_i32(nv, 4), "");
	LLVMValueRef rq = isa ? LLVMBuildShl(B, q0, nv_i32(nv, 3), "") : LLVMBuildMul(B, q1, nv_i32(nv, dr->tile), "");
	LLVMValueRef lrow = LLVMBuildAdd(B, LLVMBuildAdd(B, w, l8, ""), rq, "");
	int nr = isa ? m.nd[0] / 2 : m.nd[1] / 2, nkc = (isa ? m.nd[1] : m.nd[0]) / 8;
	for (int ri = 0; ri < nr; ri++)
		for (int kc = 0; kc < nkc; kc++) {
			LLVMValueRef row = LLVMBuildAdd(B, lrow, nv_i32(nv, (isa ? ri : 2 * ri) * dr->tile), "");
			LLVMValueRef col = LLVMBuildAdd(B, kq, nv_i32(nv, 32 * kc), "");
			LLVMValueRef x[4];
			ldmatrix(nv, 4, false,
				 isa ? slot_addr32(nv, off, row, col, R, C, 1, eoff)
				     : slot_addr32(nv, off, row, col, C, R, 1, eoff),
				 x);
			for (int qq = 0; qq < 4; qq++) {
				LLVMValueRef v = LLVMBuildBitCast(B, x[qq], v4, "");
				for (int e = 0; e < 4; e++) {
					int qk = isa ? qq / 2 : qq % 2, qr = isa ? qq % 2 : qq / 2;
					int kj = 4 * (2 * kc + qk) + e, rj = 2 * ri + qr;
					int j[IR_MAX_RANK] = {isa ? rj : kj, isa ? kj : rj};
					regs[nv_map_reg(&m, j)] = LLVMBuildExtractElement(B, v, nv_i32(nv, e), "");
				}
			}
		}
	nv_set(nv, &op->res[0], m.n, regs);
}

/* Shared-memory wavefronts that warp 0 takes for op's read (a local_read
 * of a tile read back into registers, nv_read_swizzled, or an mma.sync
 * tf32 operand, elems_read) with swizzle
 * `mode`: each access of W bytes a lane is served 128 bytes at a time
 * (32, 16 or 8 lanes a phase); a phase takes as many wavefronts as the
 * most distinct 4-byte words that fall on one bank. */
static int64_t read_wavefronts(const IrOp *op, int mode)
{
	const IrType *t = op->res[0].type;
	NvMap m;
	nv_map_init(NULL, t, &m);
	if (m.brank != 2 || t->rank != 2)
		return 0;
	bool tr = ir_op_int(op, "transposed", 0) != 0;
	int es = (int)(ir_type_bits(ir_scalar(t)) / 8);
	int64_t R = t->shape[0], C = ir_op_int(op, "kfull", t->shape[1]), k0 = ir_op_int(op, "k0", 0);
	int vec = elems_read(op) ? 1 : read_vec(&m, es, tr), W = vec * es;
	int per = W >= 16 ? 8 : W == 8 ? 16 : 32, words = W >= 4 ? W / 4 : 1;
	int64_t total = 0;
	for (int r = 0; r < m.n && r < 64 * vec; r += vec) {
		for (int p0 = 0; p0 < 32; p0 += per) {
			int64_t word[32 * 4];
			int nw = 0;
			for (int lane = p0; lane < p0 + per; lane++) {
				int64_t row = lane_coord(&m, r, 0, lane), col = lane_coord(&m, r, 1, lane) + k0;
				int64_t idx = tr ? nv_swizzled_index_int(col, row, C, R, es, mode)
						 : nv_swizzled_index_int(row, col, R, C, es, mode);
				for (int w = 0; w < words; w++) {
					int64_t x = idx * es / 4 + w;
					bool seen = false;
					for (int i = 0; i < nw && !seen; i++)
						seen = word[i] == x;
					if (!seen)
						word[nw++] = x;
				}
			}
			int most = 1;
			for (int b = 0; b < 32; b++) {
				int n = 0;
				for (int i = 0; i < nw; i++)
					n += (int)(word[i] % 32) == b;
				if (n > most)
					most = n;
			}
			total += most;
		}
	}
	return total;
}

typedef struct {
	int64_t buffer;
	const IrOp *read;
	bool other; /* another read of the buffer (an MMA's descriptor, ldmatrix), or a tensor copy into it */
} RegsReadFind;

static void find_regs_read(IrOp *op, void *user)
{
	RegsReadFind *f = user;
	if (ir_op_int(op, "buffer", -1) != f->buffer)
		return;
	if (op->opc == OP_TMA_COPY) { /* the tensor copy writes the MMA's swizzle */
		f->other = true;
		return;
	}
	if (op->opc != OP_LOCAL_READ)
		return;
	if (ir_op_int(op, "regs", 0) || elems_read(op)) {
		if (!f->read)
			f->read = op;
	} else {
		f->other = true;
	}
}

int nv_regs_swizzle(Nv *nv, int64_t buffer)
{
	/* CTRITON_REGS_SWIZZLE=0: mode 0 everywhere (part of the cache key) */
	const char *e = getenv("CTRITON_REGS_SWIZZLE");
	if (buffer < 0 || (e && !strcmp(e, "0")))
		return 0;
	RegsReadFind f = {buffer, NULL, false};
	ir_walk_func(nv->f, find_regs_read, &f);
	/* ldmatrix's 8 rows of 16 bytes a phase take mode 0 without conflicts */
	if (!f.read || f.other || nv_kw4_ldmatrix(f.read))
		return 0;
	int best = 0;
	int64_t bw = read_wavefronts(f.read, 0);
	for (int mode = 1; mode < 8; mode++) {
		int64_t w = read_wavefronts(f.read, mode);
		if (w < bw) {
			bw = w;
			best = mode;
		}
	}
	return best;
}

/* The inverse of nv_write_swizzled for a tile read back into registers
 * (prefetch.c regs_ok): op's result, in any layout, from the swizzled tile
 * at scratch_offset + eoff elements (held as [C][R] when tr, its key
 * chosen by nv_regs_swizzle), runs of registers that are consecutive along
 * the tile's rows within one 16-byte chunk read as one vector. */
void nv_read_swizzled(Nv *nv, IrOp *op, LLVMValueRef eoff, bool tr)
{
	const IrType *t = op->res[0].type;
	const IrLayout *tl = t->layout;
	if (!tl || tl->kind == LAYOUT_SHARED || (tl->kind == LAYOUT_DOT_OP && tl->opidx == 1 && an_is_wgmma(t))) {
		nv_fail(nv, op, "a tile read back into registers needs a layout that holds registers");
		return;
	}
	if (nv_kw4_ldmatrix(op)) {
		nv_read_kw4_ldmatrix(nv, op, eoff);
		return;
	}
	NvMap m;
	nv_map_init(nv, t, &m);
	/* a K step ({k0, kfull}): columns k0 .. of the slot's kfull */
	int64_t R = t->shape[0], C = ir_op_int(op, "kfull", t->shape[1]), k0 = ir_op_int(op, "k0", 0);
	int es = (int)nv_esize(t), vec = read_vec(&m, es, tr);
	int mode = nv_regs_swizzle(nv, ir_op_int(op, "buffer", -1));
	LLVMTypeRef et = nv_llty(nv, t), vt = vec > 1 ? LLVMVectorType(et, (unsigned)vec) : et;
	LLVMValueRef *out = nv_regbuf(nv, m.n);
	int64_t off = nv_scratch_off(op);
	for (int r = 0; r < m.n; r += vec) {
		LLVMValueRef r0 = nv_map_coord(nv, &m, r, 0), c0 = nv_map_coord(nv, &m, r, 1);
		if (k0)
			c0 = LLVMBuildAdd(nv->b, c0, nv_i32(nv, k0), "");
		LLVMValueRef idx = tr ? nv_swizzled_index(nv, c0, r0, C, R, es, mode)
				      : nv_swizzled_index(nv, r0, c0, R, C, es, mode);
		LLVMValueRef x =
			LLVMBuildLoad2(nv->b, vt, nv_smem_addr(nv, off, LLVMBuildAdd(nv->b, idx, eoff, ""), es), "");
		LLVMSetAlignment(x, (unsigned)(es * vec));
		for (int e = 0; e < vec; e++)
			out[r + e] = vec > 1 ? LLVMBuildExtractElement(nv->b, x, nv_i32(nv, e), "") : x;
	}
	nv_set(nv, &op->res[0], m.n, out);
}

/* One ldmatrix (x4 or x2, .trans for B) at the 32-bit shared address of this lane. */
static void ldmatrix(Nv *nv, int n, bool trans, LLVMValueRef addr, LLVMValueRef *out)
{
	LLVMTypeRef i32 = LLVMInt32TypeInContext(nv->c);
	LLVMTypeRef rt[4] = {i32, i32, i32, i32};
	LLVMTypeRef rty = LLVMStructTypeInContext(nv->c, rt, (unsigned)n, 0);
	LLVMTypeRef fty = LLVMFunctionType(rty, &i32, 1, 0);
	char text[128];
	snprintf(text, sizeof text, "ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16 {%s}, [$%d];", n,
		 trans ? ".trans" : "", n == 4 ? "$0,$1,$2,$3" : "$0,$1", n);
	const char *cons = n == 4 ? "=r,=r,=r,=r,r" : "=r,=r,r";
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, text, strlen(text), (char *)cons, strlen(cons), 1, 0,
					     LLVMInlineAsmDialectATT, 0);
	LLVMValueRef d = LLVMBuildCall2(nv->b, fty, asmv, &addr, 1, "");
	for (int i = 0; i < n; i++)
		out[i] = LLVMBuildExtractValue(nv->b, d, (unsigned)i, "");
}

/* Sets element registers (j0, j1) and (j0', j1') of a dot_op value from one
 * 32-bit ldmatrix register (two 16-bit elements, the first in the low half). */
static void unpack2(Nv *nv, LLVMTypeRef et, LLVMValueRef x, const NvMap *m, LLVMValueRef *regs,
		    int j0, int j1, int k0, int k1)
{
	LLVMValueRef v = LLVMBuildBitCast(nv->b, x, LLVMVectorType(et, 2), "");
	int ja[IR_MAX_RANK] = {j0, j1}, jb[IR_MAX_RANK] = {k0, k1};
	regs[nv_map_reg(m, ja)] = LLVMBuildExtractElement(nv->b, v, nv_i32(nv, 0), "");
	regs[nv_map_reg(m, jb)] = LLVMBuildExtractElement(nv->b, v, nv_i32(nv, 1), "");
}

/* blocked/mma -> dot_op for 16-bit operands: stage the tile (swizzled), then
 * ldmatrix the fragments. Lane l addresses row l % 8 of matrix l / 8.
 *   A [M][K], x4 per (mi, ki): matrices (rows +0/+8) x (K +0/+8) give
 *     a0a1, a2a3, a4a5, a6a7 (see lower_dot_mma);
 *   B [K][N], x4.trans per (ki, ni pair): matrices (K +0/+8) x (ni, ni + 1)
 *     give b0b1, b2b3 of ni, then of ni + 1 (x2 for a last single ni). */
static void read_dot_op(Nv *nv, IrOp *op);

/* B of a warpgroup MMA, and an A that is loaded rather than computed, stay
 * in shared memory: the value is the tile's 32-bit shared address, which
 * the dot turns into matrix descriptors. */
bool nv_smem_operand(const IrOp *op)
{
	return an_wgmma_smem_operand(op);
}

void nv_set_smem_operand(Nv *nv, IrOp *op, int64_t off, LLVMValueRef eoff)
{
	nv_set1(nv, &op->res[0], nv_smem_addr32(nv, off, eoff, nv_esize(op->res[0].type)));
}

/* Shared memory written by ordinary stores (or cp.async) that the tensor
 * cores read next needs this fence in the writing threads, before the
 * barrier. */
void nv_fence_async_shared(Nv *nv)
{
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(nv->c), NULL, 0, 0);
	const char *text = "fence.proxy.async.shared::cta;";
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)"~{memory}", 9, 1, 0,
					     LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(nv->b, fty, asmv, NULL, 0, "");
}

void nv_lower_to_dot_op(Nv *nv, IrOp *op)
{
	nv_write_swizzled(nv, op->ops[0], nv_scratch_off(op), an_wgmma_kmajor_b(op));
	IrOp *n = an_staged_pair(op) && (nv_ldmatrix_ok(op->next) || nv_smem_operand(op->next)) ? op->next : NULL;
	if (n) { /* the other operand's tile too (disjoint scratch), then one barrier */
		nv_write_swizzled(nv, n->ops[0], nv_scratch_off(n), an_wgmma_kmajor_b(n));
		nv->staged = n;
	}
	if (nv_smem_operand(op) || (n && nv_smem_operand(n)))
		nv_fence_async_shared(nv);
	nv_barrier(nv);
	read_dot_op(nv, op);
	if (n)
		read_dot_op(nv, n);
}

static bool slot_bases(void)
{
	/* the default; CTRITON_SLOT_BASES=0 (part of the cache key) sums
	 * one element index, as before */
	const char *e = getenv("CTRITON_SLOT_BASES");
	return !(e && e[0] == '0');
}

/* The 32-bit shared address of (row, col) of a swizzled tile at off bytes,
 * in the slot eoff elements on (when given): the slot's base, once per
 * slot, plus the element's swizzled byte offset. Summed as one element
 * index and scaled (as nv_slot_index gives it), LLVM folds the slot's
 * offset into each element's index with an or; the index then changes
 * every iteration, and each read costs an or, a shift and an add in the
 * loop (sm_80 tf32 at 128x128x32: 16 reads of A and B a K step). Apart,
 * the element's offset is a loop invariant. */
static LLVMValueRef slot_addr32(Nv *nv, int64_t off, LLVMValueRef row, LLVMValueRef col, int64_t R, int64_t C, int es,
				LLVMValueRef eoff)
{
	if (!slot_bases())
		return nv_smem_addr32(nv, off, nv_slot_index(nv, row, col, R, C, es, eoff, 0), es);
	LLVMValueRef base = nv_smem_addr32(nv, off, eoff, es);
	LLVMValueRef i = nv_swizzled_index(nv, row, col, R, C, es, 0);
	return LLVMBuildAdd(nv->b, base, LLVMBuildMul(nv->b, i, nv_i32(nv, es), ""), "");
}

static void read_dot_op(Nv *nv, IrOp *op)
{
	if (nv_smem_operand(op))
		nv_set_smem_operand(nv, op, nv_scratch_off(op), NULL);
	else
		nv_read_dot_op_at(nv, op, NULL, false);
}

/* The swizzled index of (row, col), plus eoff elements (a slot) when given. */
LLVMValueRef nv_slot_index(Nv *nv, LLVMValueRef row, LLVMValueRef col, int64_t R, int64_t C, int es, LLVMValueRef eoff,
			   int mode)
{
	LLVMValueRef i = nv_swizzled_index(nv, row, col, R, C, es, mode);
	return eoff ? LLVMBuildAdd(nv->b, i, eoff, "") : i;
}

/* Reads op's dot_op result with ldmatrix from the swizzled tile at
 * scratch_offset + eoff elements. tr: the tile is held transposed ([C][R]:
 * a slot whose copies ran down the columns, or a row-major slot of the tile
 * that a 2-D trans reads), so A is read with .trans and B without, as
 * Triton reads a K-major B from shared memory on mma.sync. */
void nv_read_dot_op_at(Nv *nv, IrOp *op, LLVMValueRef eoff, bool tr)
{
	int64_t off = nv_scratch_off(op);
	const IrType *t = op->res[0].type;
	int64_t R = t->shape[0], C = t->shape[1];
	NvMap m;
	nv_map_init(nv, t, &m);
	LLVMTypeRef et = nv_llty(nv, t);
	LLVMValueRef *regs = nv_regbuf(nv, m.n);
	LLVMBuilderRef B = nv->b;
	LLVMValueRef l8 = LLVMBuildAnd(B, nv->lane, nv_i32(nv, 7), "");
	LLVMValueRef q = LLVMBuildLShr(B, nv->lane, nv_i32(nv, 3), ""); /* matrix of this lane's address */
	LLVMValueRef q0 = LLVMBuildAnd(B, q, nv_i32(nv, 1), ""), q1 = LLVMBuildLShr(B, q, nv_i32(nv, 1), "");
	if (t->layout->opidx == 0) {
		const AnDimDist *dm = &m.dd[0];
		LLVMValueRef wrow = LLVMBuildMul(B, m.warp_d[0], nv_i32(nv, dm->warp_unit), "");
		/* row within the 16-row tile: l % 8 + 8 * (matrix & 1); K: 8 * (matrix >> 1) */
		LLVMValueRef r16 = LLVMBuildAdd(B, LLVMBuildAdd(B, wrow, l8, ""), LLVMBuildShl(B, q0, nv_i32(nv, 3), ""), "");
		LLVMValueRef k8 = LLVMBuildShl(B, q1, nv_i32(nv, 3), "");
		int nm = m.nd[0] / 2, nk = m.nd[1] / 4;
		for (int mi = 0; mi < nm; mi++)
			for (int ki = 0; ki < nk; ki++) {
				LLVMValueRef row = LLVMBuildAdd(B, r16, nv_i32(nv, mi * dm->tile), "");
				LLVMValueRef col = LLVMBuildAdd(B, k8, nv_i32(nv, 16 * ki), "");
				LLVMValueRef x[4];
				if (tr) { /* [K][M]: lane l addresses K row l % 8 (+8), M block (+8) */
					LLVMValueRef kr = LLVMBuildAdd(
						B, LLVMBuildAdd(B, l8, LLVMBuildShl(B, q1, nv_i32(nv, 3), ""), ""),
						nv_i32(nv, 16 * ki), "");
					LLVMValueRef mc = LLVMBuildAdd(
						B, LLVMBuildAdd(B, wrow, LLVMBuildShl(B, q0, nv_i32(nv, 3), ""), ""),
						nv_i32(nv, mi * dm->tile), "");
					ldmatrix(nv, 4, true, slot_addr32(nv, off, kr, mc, C, R, 2, eoff), x);
				} else
					ldmatrix(nv, 4, false, slot_addr32(nv, off, row, col, R, C, 2, eoff), x);
				unpack2(nv, et, x[0], &m, regs, 2 * mi, 4 * ki, 2 * mi, 4 * ki + 1);
				unpack2(nv, et, x[1], &m, regs, 2 * mi + 1, 4 * ki, 2 * mi + 1, 4 * ki + 1);
				unpack2(nv, et, x[2], &m, regs, 2 * mi, 4 * ki + 2, 2 * mi, 4 * ki + 3);
				unpack2(nv, et, x[3], &m, regs, 2 * mi + 1, 4 * ki + 2, 2 * mi + 1, 4 * ki + 3);
			}
	} else {
		const AnDimDist *dn = &m.dd[1];
		LLVMValueRef wcol = LLVMBuildMul(B, m.warp_d[1], nv_i32(nv, dn->warp_unit), "");
		/* K row: l % 8 + 8 * (matrix & 1); N: the (matrix >> 1)-th tile of the pair */
		LLVMValueRef k16 = LLVMBuildAdd(B, l8, LLVMBuildShl(B, q0, nv_i32(nv, 3), ""), "");
		LLVMValueRef npair = LLVMBuildMul(B, q1, nv_i32(nv, dn->tile), "");
		int nk = m.nd[0] / 4, nn = m.nd[1];
		for (int ki = 0; ki < nk; ki++)
			for (int ni = 0; ni < nn; ni += 2) {
				int cnt = ni + 1 < nn ? 4 : 2;
				LLVMValueRef row = LLVMBuildAdd(B, k16, nv_i32(nv, 16 * ki), "");
				LLVMValueRef col = LLVMBuildAdd(B, wcol, nv_i32(nv, ni * dn->tile), "");
				if (cnt == 4)
					col = LLVMBuildAdd(B, col, npair, "");
				LLVMValueRef x[4];
				if (tr) { /* [N][K]: lane l addresses N row l % 8 (of the pair's tile), K +8 */
					LLVMValueRef nr = LLVMBuildAdd(B, LLVMBuildAdd(B, wcol, l8, ""),
								       nv_i32(nv, ni * dn->tile), "");
					if (cnt == 4)
						nr = LLVMBuildAdd(B, nr, npair, "");
					LLVMValueRef kc = LLVMBuildAdd(B, LLVMBuildShl(B, q0, nv_i32(nv, 3), ""),
								       nv_i32(nv, 16 * ki), "");
					ldmatrix(nv, cnt, false, slot_addr32(nv, off, nr, kc, C, R, 2, eoff), x);
				} else
					ldmatrix(nv, cnt, true, slot_addr32(nv, off, row, col, R, C, 2, eoff), x);
				for (int h = 0; h < cnt / 2; h++) {
					unpack2(nv, et, x[2 * h], &m, regs, 4 * ki, ni + h, 4 * ki + 1, ni + h);
					unpack2(nv, et, x[2 * h + 1], &m, regs, 4 * ki + 2, ni + h, 4 * ki + 3, ni + h);
				}
			}
	}
	nv_set(nv, &op->res[0], m.n, regs);
}

/* tf32_ldmatrix's read of op (map m) from its slot at scratch_offset + eoff
 * elements, into regs. Lane l addresses row l % 8 of matrix q = l / 8.
 *   A [M][K], x4 per (mi, ki): rows +8 (q & 1), K +4 (q >> 1) give a0..a3
 *     of lower_dot_mma;
 *   B [N][K], x4 per (ki, ni pair): K +4 (q & 1), the (q >> 1)-th N tile
 *     of the pair give b0 b1 of ni, then of ni + 1 (x2 for a last single
 *     ni). */
static void read_tf32_ldmatrix(Nv *nv, IrOp *op, const NvMap *m, LLVMValueRef eoff, LLVMValueRef *regs)
{
	LLVMBuilderRef B = nv->b;
	const IrType *t = op->res[0].type;
	int64_t R = t->shape[0], C = t->shape[1], off = nv_scratch_off(op);
	LLVMTypeRef ft = LLVMFloatTypeInContext(nv->c);
	bool isa = t->layout->opidx == 0;
	const AnDimDist *dd = &m->dd[isa ? 0 : 1];
	LLVMValueRef q = LLVMBuildLShr(B, nv->lane, nv_i32(nv, 3), "");
	LLVMValueRef q0 = LLVMBuildAnd(B, q, nv_i32(nv, 1), ""), q1 = LLVMBuildLShr(B, q, nv_i32(nv, 1), "");
	LLVMValueRef base = LLVMBuildAdd(B, LLVMBuildMul(B, m->warp_d[isa ? 0 : 1], nv_i32(nv, dd->warp_unit), ""),
					 LLVMBuildAnd(B, nv->lane, nv_i32(nv, 7), ""), "");
	LLVMValueRef x[4];
	if (isa) {
		LLVMValueRef r16 = LLVMBuildAdd(B, base, LLVMBuildShl(B, q0, nv_i32(nv, 3), ""), "");
		LLVMValueRef k4 = LLVMBuildShl(B, q1, nv_i32(nv, 2), "");
		for (int mi = 0; mi < m->nd[0] / 2; mi++)
			for (int ki = 0; ki < m->nd[1] / 2; ki++) {
				LLVMValueRef row = LLVMBuildAdd(B, r16, nv_i32(nv, mi * dd->tile), "");
				LLVMValueRef col = LLVMBuildAdd(B, k4, nv_i32(nv, 8 * ki), "");
				ldmatrix(nv, 4, false, slot_addr32(nv, off, row, col, R, C, 4, eoff), x);
				for (int i = 0; i < 4; i++) {
					int j[IR_MAX_RANK] = {2 * mi + i % 2, 2 * ki + i / 2};
					regs[nv_map_reg(m, j)] = LLVMBuildBitCast(B, x[i], ft, "");
				}
			}
		return;
	}
	LLVMValueRef k4 = LLVMBuildShl(B, q0, nv_i32(nv, 2), "");
	LLVMValueRef npair = LLVMBuildMul(B, q1, nv_i32(nv, dd->tile), "");
	int nk = m->nd[0] / 2, nn = m->nd[1];
	for (int ki = 0; ki < nk; ki++)
		for (int ni = 0; ni < nn; ni += 2) {
			int cnt = ni + 1 < nn ? 4 : 2;
			LLVMValueRef nr = LLVMBuildAdd(B, base, nv_i32(nv, ni * dd->tile), "");
			if (cnt == 4)
				nr = LLVMBuildAdd(B, nr, npair, "");
			LLVMValueRef kc = LLVMBuildAdd(B, k4, nv_i32(nv, 8 * ki), "");
			/* the slot holds B as [N][K] */
			ldmatrix(nv, cnt, false, slot_addr32(nv, off, nr, kc, C, R, 4, eoff), x);
			for (int i = 0; i < cnt; i++) {
				int j[IR_MAX_RANK] = {2 * ki + i % 2, ni + i / 2};
				regs[nv_map_reg(m, j)] = LLVMBuildBitCast(B, x[i], ft, "");
			}
		}
}

/* Reads op's dot_op result element by element from the swizzled tile at
 * scratch_offset + eoff elements (the slot layout of swizzled_index, as the
 * copies wrote it): a tf32 operand of mma.sync, which ldmatrix does not
 * take. A warp's reads of an A fragment cover 8 rows x 16 bytes, one
 * 16-byte chunk a row, spread over the banks by the swizzle. */
void nv_read_dot_op_elems(Nv *nv, IrOp *op, LLVMValueRef eoff, bool tr)
{
	int64_t off = nv_scratch_off(op);
	const IrType *t = op->res[0].type;
	int64_t R = t->shape[0], C = t->shape[1];
	int es = (int)nv_esize(t);
	NvMap m;
	nv_map_init(nv, t, &m);
	LLVMValueRef *regs = nv_regbuf(nv, m.n);
	if (tf32_ldmatrix(op)) {
		read_tf32_ldmatrix(nv, op, &m, eoff, regs);
		nv_set(nv, &op->res[0], m.n, regs);
		return;
	}
	int mode = nv_regs_swizzle(nv, ir_op_int(op, "buffer", -1));
	/* the slot's base once, each element's swizzled offset apart (a loop
	 * invariant; see slot_addr32) */
	LLVMTypeRef i8 = LLVMInt8TypeInContext(nv->c);
	LLVMValueRef base = nv_smem_addr(nv, off, eoff ? eoff : nv_i32(nv, 0), es);
	for (int r = 0; r < m.n; r++) {
		LLVMValueRef row = nv_map_coord(nv, &m, r, 0), col = nv_map_coord(nv, &m, r, 1);
		if (!slot_bases()) {
			regs[r] = nv_smem_load(nv, t, off,
					       tr ? nv_slot_index(nv, col, row, C, R, es, eoff, mode)
						  : nv_slot_index(nv, row, col, R, C, es, eoff, mode));
			continue;
		}
		LLVMValueRef i = tr ? nv_swizzled_index(nv, col, row, C, R, es, mode)
				    : nv_swizzled_index(nv, row, col, R, C, es, mode);
		LLVMValueRef bo = LLVMBuildMul(nv->b, i, nv_i32(nv, es), "");
		regs[r] = LLVMBuildLoad2(nv->b, nv_llty(nv, t), LLVMBuildGEP2(nv->b, i8, base, &bo, 1, ""), "");
	}
	nv_set(nv, &op->res[0], m.n, regs);
}

/* ------------------------------------------------------------------------- */
/* dot: mma.sync on tensor cores, else FMA through shared memory             */
/* ------------------------------------------------------------------------- */

/* Two 16-bit elements in one 32-bit register, lo in the low half. */
static LLVMValueRef pack2(Nv *nv, LLVMValueRef lo, LLVMValueRef hi)
{
	LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(lo), 2);
	LLVMValueRef v = LLVMGetUndef(vt);
	v = LLVMBuildInsertElement(nv->b, v, lo, nv_i32(nv, 0), "");
	v = LLVMBuildInsertElement(nv->b, v, hi, nv_i32(nv, 1), "");
	return LLVMBuildBitCast(nv->b, v, LLVMInt32TypeInContext(nv->c), "");
}

/* Register of v (base layout map m) at per-dim register indices (j0, j1). */
static LLVMValueRef reg2(Nv *nv, const IrValue *v, const NvMap *m, int j0, int j1)
{
	int j[IR_MAX_RANK] = {j0, j1};
	return nv_reg(nv, v, nv_map_reg(m, j));
}

/* n elements of 32 / n bits each in one 32-bit register, the first in the
 * low bits (an f32 as its bits, for tf32). */
static LLVMValueRef pack_n(Nv *nv, LLVMValueRef *x, int n)
{
	LLVMTypeRef i32 = LLVMInt32TypeInContext(nv->c);
	if (n == 1)
		return LLVMBuildBitCast(nv->b, x[0], i32, "");
	LLVMValueRef v = LLVMGetUndef(LLVMVectorType(LLVMTypeOf(x[0]), (unsigned)n));
	for (int e = 0; e < n; e++)
		v = LLVMBuildInsertElement(nv->b, v, x[e], nv_i32(nv, e), "");
	return LLVMBuildBitCast(nv->b, v, i32, "");
}

/* The type qualifier of an mma.sync operand. */
static const char *mma_sync_type(IrTypeKind k)
{
	switch (k) {
	case TY_BF16:
		return "bf16";
	case TY_F16:
		return "f16";
	case TY_F32:
		return "tf32";
	case TY_F8E4M3:
		return "e4m3";
	case TY_F8E5M2:
		return "e5m2";
	default:
		return "s8";
	}
}

/* dot on tensor cores: A and B arrive in dot_op layouts, the accumulator in
 * the mma layout (see an_dim_dist), so each thread already holds exactly the
 * fragments of its warp's mma.sync instructions: m16n8k16 for f16/bf16,
 * m16n8k8 for tf32, m16n8k32 for int8 and (sm_89 on) fp8 (kw = 32 / element bits elements of A
 * or B per 32-bit register). Per 16 x 8 tile of the warp (mi, ni) and K step
 * ki, with per-dim register indices:
 *   A: a[h + 2q] = (2mi + h, 2kw ki + kw q + e), e < kw, h, q in {0, 1};
 *   B: b[q] = (2kw ki + kw q + e, ni);
 *   C: c0..c3 = (2mi + h, 2ni + e) for (h, e) = (0,0) (0,1) (1,0) (1,1),
 *      f32 or s32 registers, or two f16x2 (c0c1, c2c3) for an f16
 *      accumulator. */
static void lower_dot_mma(Nv *nv, IrOp *op)
{
	const IrValue *A = op->ops[0], *B = op->ops[1], *C = op->ops[2];
	NvMap ma, mb, mc;
	nv_map_init(NULL, A->type, &ma);
	nv_map_init(NULL, B->type, &mb);
	nv_map_init(NULL, C->type, &mc);
	IrTypeKind ak = ir_scalar(A->type)->kind, ck = ir_scalar(C->type)->kind;
	int kw = 32 / ir_type_bits(ir_scalar(A->type));
	int nm = mc.nd[0] / 2, nn = mc.nd[1] / 2, nk = (int)(A->type->shape[1] / (8 * kw));
	bool h16 = ck == TY_F16, isint = ak == TY_I8;
	int nd = h16 ? 2 : 4; /* accumulator registers per instruction */
	LLVMTypeRef i32 = LLVMInt32TypeInContext(nv->c);
	LLVMTypeRef dt = h16 || isint ? i32 : LLVMFloatTypeInContext(nv->c);
	LLVMTypeRef rt[4] = {dt, dt, dt, dt}, pty[14];
	for (int i = 0; i < 6; i++)
		pty[i] = i32;
	for (int i = 0; i < nd; i++)
		pty[6 + i] = dt;
	LLVMTypeRef rty = LLVMStructTypeInContext(nv->c, rt, (unsigned)nd, 0);
	LLVMTypeRef fty = LLVMFunctionType(rty, pty, (unsigned)(6 + nd), 0);
	const char *shape = kw == 1 ? "m16n8k8" : kw == 2 ? "m16n8k16" : "m16n8k32";
	IrTypeKind bk = ir_scalar(B->type)->kind;
	const char *ty = mma_sync_type(ak), *tyb = mma_sync_type(bk);
	char text[192];
	if (h16)
		snprintf(text, sizeof text,
			 "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {$0,$1}, {$2,$3,$4,$5}, {$6,$7}, {$8,$9};");
	else
		snprintf(text, sizeof text,
			 "mma.sync.aligned.%s.row.col%s.%s.%s.%s.%s {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, "
			 "{$10,$11,$12,$13};",
			 shape, isint ? ".satfinite" : "", isint ? "s32" : "f32", ty, tyb, isint ? "s32" : "f32");
	const char *cons = h16 ? "=r,=r,r,r,r,r,r,r,0,1" : isint ? "=r,=r,=r,=r,r,r,r,r,r,r,0,1,2,3"
								 : "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3";
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, text, strlen(text), (char *)cons, strlen(cons), 0, 0,
					     LLVMInlineAsmDialectATT, 0);
	LLVMValueRef *acc = nv_regbuf(nv, mc.n);
	for (int r = 0; r < mc.n; r++)
		acc[r] = nv_reg(nv, C, r);
	LLVMTypeRef h2 = LLVMVectorType(LLVMHalfTypeInContext(nv->c), 2);
	/* max_num_imprecise_acc of an fp8 dot (upcast to f16 here): partial sums
	 * over every mnia elements of K added to the accumulator, as the
	 * warpgroup path does (lower_dot_wgmma) */
	int64_t mnia = ir_op_int(op, "max_num_imprecise_acc", 0);
	bool split = mnia > 0 && (ir_op_int(op, "from_fp8", 0) || ak == TY_F8E4M3 || ak == TY_F8E5M2) && !h16 && !isint;
	int gs = split ? (int)(mnia / (8 * kw) > 0 ? mnia / (8 * kw) : 1) : nk;
	LLVMValueRef *sum = acc;
	for (int ki = 0; ki < nk; ki++) {
		if (split && ki % gs == 0) {
			if (ki > 0)
				for (int r = 0; r < mc.n; r++) {
					sum[r] = LLVMBuildFAdd(nv->b, sum[r], acc[r], "");
					LLVMSetFastMathFlags(sum[r], LLVMFastMathAllowContract);
				}
			else
				sum = nv_regbuf(nv, mc.n), memcpy(sum, acc, sizeof(LLVMValueRef) * (size_t)mc.n);
			acc = nv_regbuf(nv, mc.n);
			for (int r = 0; r < mc.n; r++)
				acc[r] = LLVMConstReal(LLVMFloatTypeInContext(nv->c), 0.0);
		}
		for (int mi = 0; mi < nm; mi++) {
			LLVMValueRef a[4], x[4];
			for (int i = 0; i < 4; i++) {
				for (int e = 0; e < kw; e++)
					x[e] = reg2(nv, A, &ma, 2 * mi + i % 2, 2 * kw * ki + kw * (i / 2) + e);
				a[i] = pack_n(nv, x, kw);
			}
			for (int ni = 0; ni < nn; ni++) {
				LLVMValueRef b[2];
				for (int q = 0; q < 2; q++) {
					for (int e = 0; e < kw; e++)
						x[e] = reg2(nv, B, &mb, 2 * kw * ki + kw * q + e, ni);
					b[q] = pack_n(nv, x, kw);
				}
				int cr[4];
				for (int i = 0; i < 4; i++) {
					int j[IR_MAX_RANK] = {2 * mi + i / 2, 2 * ni + i % 2};
					cr[i] = nv_map_reg(&mc, j);
				}
				LLVMValueRef args[10] = {a[0], a[1], a[2], a[3], b[0], b[1]};
				if (h16) {
					args[6] = pack_n(nv, (LLVMValueRef[]){acc[cr[0]], acc[cr[1]]}, 2);
					args[7] = pack_n(nv, (LLVMValueRef[]){acc[cr[2]], acc[cr[3]]}, 2);
				} else {
					for (int i = 0; i < 4; i++)
						args[6 + i] = acc[cr[i]];
				}
				LLVMValueRef d = LLVMBuildCall2(nv->b, fty, asmv, args, (unsigned)(6 + nd), "");
				if (h16) {
					for (int i = 0; i < 2; i++) {
						LLVMValueRef v = LLVMBuildBitCast(nv->b, LLVMBuildExtractValue(nv->b, d, (unsigned)i, ""),
										  h2, "");
						acc[cr[2 * i]] = LLVMBuildExtractElement(nv->b, v, nv_i32(nv, 0), "");
						acc[cr[2 * i + 1]] = LLVMBuildExtractElement(nv->b, v, nv_i32(nv, 1), "");
					}
				} else {
					for (int i = 0; i < 4; i++)
						acc[cr[i]] = LLVMBuildExtractValue(nv->b, d, (unsigned)i, "");
				}
			}
		}
	}
	if (split) {
		for (int r = 0; r < mc.n; r++) {
			sum[r] = LLVMBuildFAdd(nv->b, sum[r], acc[r], "");
			LLVMSetFastMathFlags(sum[r], LLVMFastMathAllowContract);
		}
		acc = sum;
	}
	nv_set(nv, &op->res[0], mc.n, acc);
}

/* Warpgroup MMA (sm_90a) matrix descriptors of tiles in the layout of
 * swizzled_index, at 32-bit shared address base. Start address, LBO and
 * SBO are in 16-byte units; bits 62-63 pick the swizzle (1: 128 bytes,
 * 2: 64, 3: 32).
 *   B [K][N], N contiguous ("MN-major", read transposed), N a multiple of
 *     64: 64-column blocks of K rows of 128 bytes, LBO = K * 128 bytes
 *     between blocks, SBO = 1024 between 8-row groups, 128-byte swizzle;
 *     N = 32 or 16: rows of 64 or 32 bytes, SBO = 8 rows, that swizzle.
 *   A [M][K], K contiguous ("K-major"): rows of rb = min(K, 64) * 2 bytes
 *     swizzled at rb, SBO = 8 rows; LBO unused (a K step stays in a row).
 *     A B slot filled transposed ([N][K]) is read the same way, untransposed. */
static LLVMValueRef desc_base(Nv *nv, LLVMValueRef base, uint64_t hi)
{
	/* base >> 4 fits the 14-bit field (shared addresses are below 256 KiB),
	 * computed in 32 bits; the descriptor of a K step or block at byte off
	 * of the tile is this one plus off >> 4, added next to its MMA (see
	 * wgmma_text) */
	LLVMTypeRef i64 = LLVMInt64TypeInContext(nv->c);
	LLVMValueRef a = LLVMBuildLShr(nv->b, base, nv_i32(nv, 4), "");
	return LLVMBuildOr(nv->b, LLVMBuildZExt(nv->b, a, i64, ""), LLVMConstInt(i64, hi, 0), "");
}

static uint64_t desc_b_bits(int64_t K, int64_t N)
{
	if (N < 64) /* one atom column of 64- or 32-byte rows */
		return 1ull << 16 | (uint64_t)(8 * N * 2 >> 4) << 32 | (uint64_t)(N == 32 ? 2 : 3) << 62;
	return ((uint64_t)(K * 128) >> 4) << 16 | (uint64_t)(1024 >> 4) << 32 | 1ull << 62;
}

/* K-major: rows of rb bytes (128, 64 or 32), swizzled at rb */
static uint64_t desc_kmajor_bits(int64_t rb)
{
	uint64_t mode = rb == 128 ? 1 : rb == 64 ? 2 : 3;
	return 1ull << 16 | (uint64_t)(8 * rb >> 4) << 32 | mode << 62;
}

static const char *wgmma_type(IrTypeKind k)
{
	switch (k) {
	case TY_F16: return "f16";
	case TY_BF16: return "bf16";
	case TY_F8E4M3: return "e4m3";
	case TY_F8E5M2: return "e5m2";
	case TY_F32: return "tf32";
	case TY_I8: return "s8";
	default: return NULL;
	}
}

static void tie_regs(Nv *nv, const char *text, LLVMValueRef *regs, int n);
static void wait_tied(Nv *nv, int pending, LLVMValueRef *regs, int n);
static void wgmma_commit(Nv *nv);

/* One inline asm statement; operands: nout "=f" outputs tied to the first
 * nout inputs, then the rest. */
static LLVMValueRef asm_call(Nv *nv, const char *text, const char *cons, LLVMTypeRef rty, LLVMValueRef *args,
			     int n)
{
	LLVMTypeRef *at = ir_alloc(nv->ctx, sizeof(LLVMTypeRef) * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++)
		at[i] = LLVMTypeOf(args[i]);
	LLVMTypeRef fty = LLVMFunctionType(rty, at, (unsigned)n, 0);
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)cons, strlen(cons), 1, 0,
					     LLVMInlineAsmDialectATT, 0);
	return LLVMBuildCall2(nv->b, fty, asmv, args, (unsigned)n, "");
}

/* The text of one wgmma (head: the instruction and its types; tail: the
 * scale and transpose immediates): accumulators $0..$nacc-1, A (four
 * registers, or a descriptor) and B's descriptor, then the scale-d flag.
 * A descriptor operand is its tile's (desc_base); a K step or block at
 * aoff / boff 16-byte units from the tile's start is that plus the
 * constant, added here, next to the MMA: LLVM cannot hoist the sum out of
 * the loop (a loop-invariant A would hold a 64-bit register per K step
 * across it), and ptxas computes it into the MMA's uniform registers
 * (UIADD3.64). */
static void wgmma_text(char *text, size_t tl, const char *head, const char *tail, int nacc, bool asmem,
		       int64_t aoff, int64_t boff)
{
	int na = asmem ? 1 : 4, t;
	t = snprintf(text, tl, "{\n.reg .pred p;\n%s%ssetp.ne.b32 p, $%d, 0;\n",
		     aoff ? ".reg .b64 da;\n" : "", boff ? ".reg .b64 db;\n" : "", nacc + na + 1);
	if (aoff)
		t += snprintf(text + t, tl - (size_t)t, "add.s64 da, $%d, %lld;\n", nacc, (long long)aoff);
	if (boff)
		t += snprintf(text + t, tl - (size_t)t, "add.s64 db, $%d, %lld;\n", nacc + na, (long long)boff);
	t += snprintf(text + t, tl - (size_t)t, "%s {", head);
	for (int i = 0; i < nacc; i++)
		t += snprintf(text + t, tl - (size_t)t, "%s$%d", i ? "," : "", i);
	t += snprintf(text + t, tl - (size_t)t, "}, ");
	if (!asmem)
		t += snprintf(text + t, tl - (size_t)t, "{$%d,$%d,$%d,$%d}", nacc, nacc + 1, nacc + 2, nacc + 3);
	else if (aoff)
		t += snprintf(text + t, tl - (size_t)t, "da");
	else
		t += snprintf(text + t, tl - (size_t)t, "$%d", nacc);
	if (boff)
		t += snprintf(text + t, tl - (size_t)t, ", db, p%s;\n}", tail);
	else
		t += snprintf(text + t, tl - (size_t)t, ", $%d, p%s;\n}", nacc + na, tail);
}

/* The f16x2 registers of pk (set at the first register of each pair) tied
 * through one statement: an empty one (pending < 0) or a wait for all but
 * `pending` MMA groups. */
static void tie_pairs(Nv *nv, int pending, LLVMValueRef *pk, int n)
{
	LLVMValueRef *regs = nv_regbuf(nv, n);
	int *ix = ir_alloc(nv->ctx, sizeof(int) * (size_t)n), np = 0;
	for (int r = 0; r < n; r++)
		if (pk[r])
			ix[np] = r, regs[np++] = pk[r];
	if (pending < 0)
		tie_regs(nv, "", regs, np);
	else
		wait_tied(nv, pending, regs, np);
	for (int i = 0; i < np; i++)
		pk[ix[i]] = regs[i];
}

/* dot on warpgroup MMA: the accumulator in the mma v3 layout (the mma v2
 * fragments with the warps stacked along M, warpgroups along N where M is
 * too short, see wgmma_layout), A in registers (16-bit dot_op, as for
 * mma.sync) or a shared-memory tile, B a shared-memory tile (their values
 * are the addresses). Per 64-row instruction mi of this warpgroup (rows
 * 64 (g % gm) + 16 wm mi for warpgroup g) and block nb of instr_n columns
 * of its NW (from NW (g / gm)): wgmma.mma_async m64n<instr_n>k<32 bytes>
 * for each K step, the accumulator registers d[4c + 2h + e] = (2mi + h,
 * 2(nb * instr_n / 8 + c) + e). Operand forms:
 * 16-bit types may read A from registers and B transposed (MN-major);
 * tf32 may read A from registers too (one element a register, as
 * mma.sync's m16n8k8 fragments); tf32, fp8 and int8 read B K-major from
 * shared memory (int8 takes no scale or transpose immediates). One fence before, one commit after; the
 * wait comes with the first op that needs the result (nv_wgmma_wait). */
static void lower_dot_wgmma(Nv *nv, IrOp *op)
{
	const IrValue *A = op->ops[0], *C = op->ops[2];
	NvMap ma, mc;
	bool asmem = A->def && nv_smem_operand(A->def);
	if (!asmem)
		nv_map_init(NULL, A->type, &ma);
	nv_map_init(NULL, C->type, &mc);
	int64_t M = C->type->shape[0], K = A->type->shape[1], N = C->type->shape[1];
	IrTypeKind ak = ir_scalar(A->type)->kind, bk16 = ir_scalar(op->ops[1]->type)->kind;
	int es = (int)nv_esize(A->type), kstep = 32 / es;
	bool b16 = es == 2, isint = ak == TY_I8;
	/* the warps: wm along M (4 gm: gm warpgroups stacked), gn warpgroups
	 * along N, each with its own block of NW columns (wgmma_layout) */
	const IrLayout *lay = C->type->layout;
	int wm = lay->warps_per_cta[0], gm = wm / 4, gn = lay->warps_per_cta[1];
	int64_t NW = N / gn;
	/* instruction N: all of the block up to 256, else the widest of 256/128/64 dividing it */
	int in = NW <= 256 ? (int)NW : NW % 256 == 0 ? 256 : NW % 128 == 0 ? 128 : 64;
	int nm = mc.nd[0] / 2, nb = (int)(NW / in), nk = (int)(K / kstep);
	/* B as [N][K] (a transposed slot, or any staged non-16-bit B): K-major */
	const IrOp *bd = op->ops[1]->def;
	bool bkm = bd && an_wgmma_kmajor_b(bd);
	/* B one K step of its slot ({k0, kfull}, analysis/rslice.c): the slot
	 * holds Kb rows, this dot's start at K step kofs */
	int64_t Kb = bd ? ir_op_int(bd, "kfull", K) : K, kofs = bd ? ir_op_int(bd, "k0", 0) / kstep : 0;
	if (Kb != K && asmem) {
		nv_fail(nv, op, "a K step of B with A in shared memory");
		return;
	}
	/* A as [K][M] (a 16-bit A stored column-major, its slot transposed):
	 * MN-major, laid out as a row-major B: 64-column blocks of K rows of
	 * 128 bytes */
	bool amn = asmem && A->def && an_wgmma_mnmajor_a(A->def);
	LLVMValueRef bbase = nv_reg(nv, op->ops[1], 0), abase = NULL;
	int64_t rb = Kb * es < 128 ? Kb * es : 128; /* bytes of a K-major row */
	LLVMValueRef wg = LLVMBuildLShr(nv->b, nv->warp, nv_i32(nv, 2), "");
	/* this warpgroup's row block g % gm (MN-major: its 64-column block):
	 * g itself where all warpgroups stack along M (the code before the
	 * split: a kept 128x128x64 nest with one stage sits at 255 registers,
	 * and another address form spilled it), none where one row block */
	LLVMValueRef arow = gn == 1 ? wg : gm == 1 ? NULL : LLVMBuildURem(nv->b, wg, nv_i32(nv, gm), "");
	if (asmem)
		abase = nv_reg(nv, A, 0);
	if (asmem && arow)
		abase = LLVMBuildAdd(nv->b, abase, LLVMBuildMul(nv->b, arow, nv_i32(nv, amn ? K * 128 : 64 * rb), ""),
				     "");
	/* this warpgroup's column block g / gm: NW rows of B^T, or NW / 64
	 * blocks of 64 columns; a block of fewer columns starts inside its
	 * atom (c0 % 64 two-byte columns into the atom's rows: the swizzle is
	 * a function of the address, so the MMA reads it like a whole one) */
	if (gn > 1) {
		LLVMValueRef bcol = gm > 1 ? LLVMBuildUDiv(nv->b, wg, nv_i32(nv, gm), "") : wg, boff;
		if (bkm || NW % 64 == 0) {
			boff = LLVMBuildMul(nv->b, bcol, nv_i32(nv, bkm ? NW * rb : NW / 64 * Kb * 128), "");
		} else {
			LLVMValueRef c0 = LLVMBuildMul(nv->b, bcol, nv_i32(nv, NW), "");
			boff = LLVMBuildAdd(
				nv->b,
				LLVMBuildMul(nv->b, LLVMBuildLShr(nv->b, c0, nv_i32(nv, 6), ""), nv_i32(nv, Kb * 128),
					     ""),
				LLVMBuildShl(nv->b, LLVMBuildAnd(nv->b, c0, nv_i32(nv, 63), ""), nv_i32(nv, 1), ""),
				"");
		}
		bbase = LLVMBuildAdd(nv->b, bbase, boff, "");
	}
	/* an f16 accumulator: f16x2 registers, each two adjacent columns of a
	 * row (elements i = 0, 1 and 2, 3 of each 8-column group), packed
	 * before the MMAs and unpacked after a wait for them */
	bool h16 = ir_scalar(C->type)->kind == TY_F16;
	LLVMTypeRef accty = isint || h16 ? LLVMInt32TypeInContext(nv->c) : LLVMFloatTypeInContext(nv->c);
	/* a fresh tile's accumulator (an_acc_init_select): x's registers, not
	 * read where the condition holds (scale-d 0 on the first K step) */
	LLVMValueRef keep_d = NULL;
	if (C->def && C->def->opc == OP_SELECT && nv_absorbed_select(C->def)) {
		LLVMValueRef cond = nv_reg(nv, C->def->ops[0]->def->ops[0], 0);
		keep_d = LLVMBuildZExt(nv->b, LLVMBuildNot(nv->b, cond, ""), LLVMInt32TypeInContext(nv->c), "");
		C = C->def->ops[2];
	}
	/* the accumulator of the K step before, still in flight (a chain of
	 * {rs_pending} steps): its registers, which this MMA accumulates into
	 * after it */
	bool chain = nv->wg_dot && C == &nv->wg_dot->res[0];
	LLVMValueRef *acc = nv_regbuf(nv, mc.n);
	for (int r = 0; r < mc.n; r++)
		acc[r] = chain ? nv->wg_acc[r] : nv_reg(nv, C, r);
	/* A from registers: every fragment packed before the fence, so that no
	 * instruction between the MMAs of the group writes their operands
	 * (ptxas would fence before each MMA) */
	static const int ah[4] = {0, 1, 0, 1}, aq[4] = {0, 0, 2, 2};
	LLVMValueRef *apk = NULL;
	if (!asmem && b16) {
		apk = ir_alloc(nv->ctx, sizeof(LLVMValueRef) * (size_t)(nm * nk * 4));
		for (int mi = 0; mi < nm; mi++)
			for (int ki = 0; ki < nk; ki++)
				for (int i = 0; i < 4; i++)
					apk[(mi * nk + ki) * 4 + i] =
						pack2(nv, reg2(nv, A, &ma, 2 * mi + ah[i], 4 * ki + aq[i]),
						      reg2(nv, A, &ma, 2 * mi + ah[i], 4 * ki + aq[i] + 1));
	} else if (!asmem && es == 4) { /* tf32: an element a register, a[h + 2q] = (2mi + h, 2ki + q), as mma.sync's */
		apk = ir_alloc(nv->ctx, sizeof(LLVMValueRef) * (size_t)(nm * nk * 4));
		for (int mi = 0; mi < nm; mi++)
			for (int ki = 0; ki < nk; ki++)
				for (int i = 0; i < 4; i++) {
					LLVMValueRef x = reg2(nv, A, &ma, 2 * mi + ah[i], 2 * ki + aq[i] / 2);
					apk[(mi * nk + ki) * 4 + i] = pack_n(nv, &x, 1);
				}
	} else if (!asmem) {
		nv_fail(nv, op, "a warpgroup MMA reads an A of %d-byte elements from shared memory only", es);
		return;
	}
	/* constant accumulators (a zero init) get their registers before the
	 * fence too: through an empty statement, or LLVM would materialize them
	 * between the MMAs */
	bool konst = false;
	for (int r = 0; r < mc.n && !konst; r++)
		konst = LLVMIsConstant(acc[r]);
	/* a zero accumulator (a fresh dot: attention's Q K^T) is not read at
	 * all: each block's first K step runs with scale-d 0 (D = A B) on
	 * undefined registers, as Triton drops the init; no zeros are moved in */
	int64_t mnia0 = ir_op_int(op, "max_num_imprecise_acc", 0);
	bool zero = !(mnia0 > 0 && (ak == TY_F8E4M3 || ak == TY_F8E5M2));
	for (int r = 0; r < mc.n && zero; r++)
		zero = LLVMIsNull(acc[r]);
	/* h16: pk[r] is the f16x2 register of the pair whose first element is
	 * register r (an even column), packed here, before the fence */
	LLVMValueRef *pk = NULL;
	if (h16) {
		pk = nv_regbuf(nv, mc.n);
		for (int mi = 0; mi < nm; mi++)
			for (int c = 0; c < (int)(NW / 8); c++)
				for (int h = 0; h < 2; h++) {
					int j0[IR_MAX_RANK] = {2 * mi + h, 2 * c}, j1[IR_MAX_RANK] = {2 * mi + h, 2 * c + 1};
					int r0 = nv_map_reg(&mc, j0), r1 = nv_map_reg(&mc, j1);
					pk[r0] = zero ? LLVMGetUndef(accty) : pack2(nv, acc[r0], acc[r1]);
				}
		if (!zero) /* the packs before the fence: none between the MMAs */
			tie_pairs(nv, -1, pk, mc.n);
	} else if (konst && !zero)
		tie_regs(nv, "", acc, mc.n);
	asm_call(nv, "wgmma.fence.sync.aligned;", "~{memory}", LLVMVoidTypeInContext(nv->c), NULL, 0);
	int nacc = h16 ? in / 4 : in / 2, na = asmem ? 1 : 4;
	int *cr = ir_alloc(nv->ctx, sizeof(int) * (size_t)nacc);
	LLVMTypeRef *rt = ir_alloc(nv->ctx, sizeof(LLVMTypeRef) * (size_t)nacc);
	for (int i = 0; i < nacc; i++)
		rt[i] = accty;
	LLVMTypeRef rty = LLVMStructTypeInContext(nv->c, rt, (unsigned)nacc, 0);
	size_t tl = (size_t)nacc * 8 + 320;
	char *text = ir_alloc(nv->ctx, tl), *cons = ir_alloc(nv->ctx, (size_t)nacc * 8 + 64);
	LLVMValueRef *args = ir_alloc(nv->ctx, sizeof(LLVMValueRef) * (size_t)(nacc + 6));
	char head[96], tail[32];
	snprintf(head, sizeof head, "wgmma.mma_async.sync.aligned.m64n%dk%d.%s.%s.%s", in, kstep,
		 isint ? "s32" : h16 ? "f16" : "f32", wgmma_type(ak), wgmma_type(bk16));
	if (b16 && !asmem)
		snprintf(tail, sizeof tail, ", 1, 1, %d", bkm ? 0 : 1);
	else if (b16)
		snprintf(tail, sizeof tail, ", 1, 1, %d, %d", amn ? 1 : 0, bkm ? 0 : 1);
	else
		snprintf(tail, sizeof tail, "%s", isint ? "" : ", 1, 1");
	LLVMValueRef adesc = asmem ? desc_base(nv, abase, amn ? desc_b_bits(K, 64) : desc_kmajor_bits(rb)) : NULL;
	LLVMValueRef bdesc = desc_base(nv, bbase, bkm ? desc_kmajor_bits(rb) : desc_b_bits(Kb, N));
	int u = 0;
	for (int i = 0; i < nacc; i++)
		u += sprintf(cons + u, isint || h16 ? "=r," : "=f,");
	u += sprintf(cons + u, asmem ? "l,l,r" : "r,r,r,r,l,r");
	for (int i = 0; i < nacc; i++)
		u += sprintf(cons + u, ",%d", i);
	/* max_num_imprecise_acc (fp8): the tensor cores accumulate fp8 products
	 * with fewer mantissa bits; every mnia elements of K the partial sum
	 * (a fresh accumulator: the group's first MMA does not read it) is
	 * waited for and added to the f32 accumulator, as Triton does on Hopper */
	int64_t mnia = ir_op_int(op, "max_num_imprecise_acc", 0);
	bool split = mnia > 0 && (ak == TY_F8E4M3 || ak == TY_F8E5M2);
	int gs = split ? (int)(mnia / 32 > 0 ? mnia / 32 : 1) : nk; /* K steps per group */
	LLVMValueRef *part = split ? nv_regbuf(nv, mc.n) : acc;
	for (int g0 = 0; g0 < nk; g0 += gs) {
		if (g0 > 0)
			asm_call(nv, "wgmma.fence.sync.aligned;", "~{memory}", LLVMVoidTypeInContext(nv->c), NULL, 0);
		for (int mi = 0; mi < nm; mi++)
			for (int b = 0; b < nb; b++) {
				for (int c = 0; c < in / 8; c++)
					for (int i = 0; i < 4; i++) {
						int j[IR_MAX_RANK] = {2 * mi + i / 2, 2 * (b * in / 8 + c) + i % 2};
						if (!h16)
							cr[4 * c + i] = nv_map_reg(&mc, j);
						else if (i % 2 == 0) /* the pair's register, by its first element */
							cr[2 * c + i / 2] = nv_map_reg(&mc, j);
					}
				for (int ki = g0; ki < nk && ki < g0 + gs; ki++) {
					int64_t kb = (int64_t)ki * 32; /* byte offset of the K step in a row */
					int64_t aoff = 0, boff;
					if (amn) { /* the 64-column block of row 16 wm mi; K step: 16 rows of 128 bytes */
						aoff = (16 * (int64_t)wm * mi / 64) * K * 128 + ki * 16 * 128;
						args[0] = adesc;
					} else if (asmem) {
						/* 128-byte K block, row 16 wm mi of the warpgroup's, K step in the row */
						aoff = (kb / 128) * M * 128 + 16 * (int64_t)wm * mi * rb + kb % 128;
						args[0] = adesc;
					} else {
						for (int i = 0; i < 4; i++)
							args[i] = apk[(mi * nk + ki) * 4 + i];
					}
					int64_t kbb = (ki + kofs) * 32; /* B's K step in its slot */
					if (bkm) /* rows n of b's block, like A */
						boff = (kbb / 128) * N * 128 + (int64_t)b * in * rb + kbb % 128;
					else /* 64-column blocks of K rows; K step: 16 rows of up to 128 bytes */
						boff = (int64_t)(b * in / 64) * Kb * 128 +
						       (ki + kofs) * 16 * (N < 64 ? N * 2 : 128);
					args[na] = bdesc;
					wgmma_text(text, tl, head, tail, nacc, asmem, aoff >> 4, boff >> 4);
					/* scale-d 0: D = A B, the partial sum's start */
					bool fresh = (split || zero) && ki == g0;
					args[na + 1] = keep_d && ki == 0 ? keep_d : nv_i32(nv, fresh ? 0 : 1);
					LLVMValueRef *src = h16 ? pk : part;
					for (int i = 0; i < nacc; i++)
						args[na + 2 + i] = zero && fresh ? LLVMGetUndef(accty)
								   : split && fresh ? acc[cr[i]] : src[cr[i]];
					LLVMValueRef d = asm_call(nv, text, cons, rty, args, nacc + na + 2);
					for (int i = 0; i < nacc; i++)
						src[cr[i]] = LLVMBuildExtractValue(nv->b, d, (unsigned)i, "");
				}
			}
		if (split) {
			wgmma_commit(nv);
			wait_tied(nv, 0, part, mc.n);
			for (int r = 0; r < mc.n; r++) { /* add.f32: nothing to contract it with */
				acc[r] = LLVMBuildFAdd(nv->b, acc[r], part[r], "");
				LLVMSetFastMathFlags(acc[r], LLVMFastMathAllowContract);
			}
		}
	}
	if (split) { /* done: nothing in flight */
		nv_set(nv, &op->res[0], mc.n, acc);
		return;
	}
	if (h16) { /* waited for here: the halves are read only after the wait */
		wgmma_commit(nv);
		tie_pairs(nv, 0, pk, mc.n);
		LLVMTypeRef v2 = LLVMVectorType(LLVMHalfTypeInContext(nv->c), 2);
		for (int mi = 0; mi < nm; mi++)
			for (int c = 0; c < (int)(NW / 8); c++)
				for (int h = 0; h < 2; h++) {
					int j0[IR_MAX_RANK] = {2 * mi + h, 2 * c}, j1[IR_MAX_RANK] = {2 * mi + h, 2 * c + 1};
					int r0 = nv_map_reg(&mc, j0), r1 = nv_map_reg(&mc, j1);
					LLVMValueRef v = LLVMBuildBitCast(nv->b, pk[r0], v2, "");
					acc[r0] = LLVMBuildExtractElement(nv->b, v, nv_i32(nv, 0), "");
					acc[r1] = LLVMBuildExtractElement(nv->b, v, nv_i32(nv, 1), "");
				}
		nv_set(nv, &op->res[0], mc.n, acc);
		return;
	}
	/* in flight: the copies of the next tiles (address arithmetic, cp.async)
	 * may be issued before the wait */
	wgmma_commit(nv);
	/* a K step of a chain: the step before is this one's accumulator only;
	 * at most rs_pending groups stay in flight (analysis/rslice.c), so
	 * that the registers of A the next iteration writes are free. The
	 * wait comes right after the commit: put off until the next step's
	 * MMA (that step's A read and cast under S groups in flight), ptxas
	 * gave a register of an A still in flight to other values at the top
	 * of the loop (tf32 at 64x64x32, tests/python/test_rs_slices.py's SASS
	 * check), and at 128x128x64 with 4 warps it spilled */
	if (chain)
		nv->wg_dot = NULL;
	int64_t rsp = ir_op_int(op, "rs_pending", -1);
	if (rsp >= 0)
		wait_tied(nv, (int)rsp, acc, mc.n);
	if (nv->wg_dot) { /* an independent dot in flight (nv_wgmma_keeps_flying) */
		nv->wg_old[nv->nwg_old] = nv->wg_dot;
		nv->wg_old_acc[nv->nwg_old] = nv->wg_acc;
		nv->wg_old_n[nv->nwg_old++] = nv->wg_n;
	}
	nv->wg_dot = op;
	nv->wg_acc = acc;
	nv->wg_n = mc.n;
}

/* Whether op reads the result of a dot in flight. */
static bool reads_in_flight(const Nv *nv, const IrOp *op)
{
	for (int i = 0; i < op->nops; i++) {
		if (op->ops[i] == &nv->wg_dot->res[0])
			return true;
		for (int k = 0; k < nv->nwg_old; k++)
			if (op->ops[i] == &nv->wg_old[k]->res[0])
				return true;
	}
	return false;
}

/* A warpgroup dot that may issue while the dots in flight run: it reads
 * none of their results, stages nothing in shared scratch, and waits for
 * nothing itself (no fp8 partial-sum groups). Its MMA group is committed
 * after theirs; a wait for it waits for them too. */
static bool wgmma_joins_flight(const Nv *nv, const IrOp *op)
{
	if (nv->nwg_old == NV_WG_OLD || !an_is_wgmma(op->res[0].type) || an_scratch_bytes(op, &nv->ao) > 0 ||
	    reads_in_flight(nv, op) || ir_scalar(op->res[0].type)->kind == TY_F16)
		return false;
	IrTypeKind ak = ir_scalar(op->ops[0]->type)->kind;
	return !(ir_op_int(op, "max_num_imprecise_acc", 0) > 0 && (ak == TY_F8E4M3 || ak == TY_F8E5M2));
}

bool nv_wgmma_keeps_flying(const Nv *nv, const IrOp *op)
{
	if (op->opc == OP_ASYNC_COMMIT || (op->opc == OP_ASYNC_COPY && ir_op_int(op, "ordered", 0)))
		return true; /* writes a slot the dots in flight do not read */
	/* a chain's K steps (analysis/rslice.c): the next step's reads of its
	 * slots (the MMAs write no shared memory) and its MMA, which
	 * accumulates into the registers of the one in flight */
	if (op->opc == OP_LOCAL_READ && ir_op_int(op, "kfull", 0))
		return true;
	if (op->opc == OP_DOT && ir_op_int(op, "rs_pending", -1) >= 0 && nv->nwg_old == 0 &&
	    op->ops[2] == &nv->wg_dot->res[0] && op->ops[0] != &nv->wg_dot->res[0] && op->ops[1] != &nv->wg_dot->res[0])
		return true;
	if (op->opc == OP_DOT)
		return wgmma_joins_flight(nv, op);
	if (!(ir_opinfo(op->opc)->flags & IR_PURE) || op->nregions || an_scratch_bytes(op, &nv->ao) > 0)
		return false;
	return !reads_in_flight(nv, op);
}

/* commit_group: one more group in flight (counted where the count is known) */
static void wgmma_commit(Nv *nv)
{
	asm_call(nv, "wgmma.commit_group.sync.aligned;", "~{memory}", LLVMVoidTypeInContext(nv->c), NULL, 0);
	if (LLVMGetInsertBlock(nv->b) == nv->wg_bb)
		nv->wg_out++;
}

/* wait_group pending with regs (f32 or i32) tied through it, so that nothing
 * reads them earlier; regs get the values after the wait. A wait that an
 * earlier one in the same straight-line code covers (at most `pending`
 * groups committed since it) emits nothing: the registers are still tied
 * through an empty statement. */
static void wait_tied(Nv *nv, int pending, LLVMValueRef *regs, int n)
{
	LLVMBasicBlockRef bb = LLVMGetInsertBlock(nv->b);
	if (bb == nv->wg_bb && nv->wg_out <= pending) {
		tie_regs(nv, "", regs, n);
		return;
	}
	char text[48];
	snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %d;", pending);
	tie_regs(nv, text, regs, n);
	nv->wg_bb = bb;
	nv->wg_out = pending;
}

/* One asm statement (text) with regs (f32 or i32, each its own type) tied
 * through it, so that nothing reads them before it; regs get its outputs. */
static void tie_regs(Nv *nv, const char *text, LLVMValueRef *regs, int n)
{
	LLVMTypeRef *wt = ir_alloc(nv->ctx, sizeof(LLVMTypeRef) * (size_t)n);
	char *wc = ir_alloc(nv->ctx, (size_t)n * 12 + 16);
	int u = 0;
	for (int i = 0; i < n; i++) {
		wt[i] = LLVMTypeOf(regs[i]);
		u += sprintf(wc + u, "%s=%s", i ? "," : "", LLVMGetTypeKind(wt[i]) == LLVMIntegerTypeKind ? "r" : "f");
	}
	for (int i = 0; i < n; i++)
		u += sprintf(wc + u, ",%d", i);
	LLVMValueRef w = asm_call(nv, text, wc, LLVMStructTypeInContext(nv->c, wt, (unsigned)n, 0), regs, n);
	for (int i = 0; i < n; i++)
		regs[i] = LLVMBuildExtractValue(nv->b, w, (unsigned)i, "");
}

void nv_wgmma_wait_regs(Nv *nv, LLVMValueRef *regs, int n)
{
	wait_tied(nv, 0, regs, n);
}

/* The wait for the dot in flight (at most `pending` groups left). The
 * previous iteration's MMA, if still flying, is older: done as well, its
 * registers tied through the same wait (one statement, one wait). */
void nv_wgmma_wait(Nv *nv, int pending)
{
	bool fly = nv->fly_arg && pending <= 1;
	int n = nv->wg_n + (fly ? nv->fly_n : 0);
	for (int k = 0; k < nv->nwg_old; k++)
		n += nv->wg_old_n[k];
	LLVMValueRef *regs = nv_regbuf(nv, n);
	int u = 0;
	memcpy(regs, nv->wg_acc, sizeof(LLVMValueRef) * (size_t)nv->wg_n);
	u += nv->wg_n;
	for (int k = 0; k < nv->nwg_old; k++) {
		memcpy(regs + u, nv->wg_old_acc[k], sizeof(LLVMValueRef) * (size_t)nv->wg_old_n[k]);
		u += nv->wg_old_n[k];
	}
	if (fly)
		memcpy(regs + u, nv->fly_regs, sizeof(LLVMValueRef) * (size_t)nv->fly_n);
	wait_tied(nv, pending, regs, n);
	memcpy(nv->wg_acc, regs, sizeof(LLVMValueRef) * (size_t)nv->wg_n);
	nv_set(nv, &nv->wg_dot->res[0], nv->wg_n, nv->wg_acc);
	u = nv->wg_n;
	for (int k = 0; k < nv->nwg_old; k++) { /* older than the newest: done at any wait */
		nv_set(nv, &nv->wg_old[k]->res[0], nv->wg_old_n[k], regs + u);
		u += nv->wg_old_n[k];
	}
	if (fly) {
		nv_set(nv, nv->fly_arg, nv->fly_n, regs + u);
		nv->fly_arg = NULL;
	}
	if (pending > 0 && nv->live_ok) { /* the newest group may still run */
		nv->live = &nv->wg_dot->res[0];
		nv->live_n = nv->wg_n;
		nv->live_regs = nv_regbuf(nv, nv->wg_n);
		memcpy(nv->live_regs, nv->wg_acc, sizeof(LLVMValueRef) * (size_t)nv->wg_n);
	}
	nv->wg_dot = NULL;
	nv->nwg_old = 0;
}

void nv_wgmma_settle_live(Nv *nv)
{
	LLVMValueRef *r = nv_regbuf(nv, nv->live_n);
	memcpy(r, nv->live_regs, sizeof(LLVMValueRef) * (size_t)nv->live_n);
	wait_tied(nv, 0, r, nv->live_n);
	nv_set(nv, nv->live, nv->live_n, r);
	nv->live = NULL;
}

/* The MMA a select(splat c, zeros, x) feeds (an_acc_init_select) takes x
 * and scale-d = !c for its first K step: a warpgroup dot with an f32 or
 * i32 accumulator and no partial-sum groups, the select's only user. */
static bool wgmma_takes_init(const IrOp *dot, const IrValue *v)
{
	if (!dot || dot->opc != OP_DOT || dot->nops < 3 || dot->ops[2] != v || !an_is_wgmma(dot->res[0].type) ||
	    ir_scalar(dot->res[0].type)->kind == TY_F16)
		return false;
	IrTypeKind ak = ir_scalar(dot->ops[0]->type)->kind;
	return !(ir_op_int(dot, "max_num_imprecise_acc", 0) > 0 && (ak == TY_F8E4M3 || ak == TY_F8E5M2));
}

bool nv_absorbed_select(const IrOp *op)
{
	if (!an_acc_init_select(op))
		return false;
	const IrOp *user = NULL;
	for (const IrOp *o = op->next; o && !user; o = o->next)
		for (int i = 0; i < o->nops; i++)
			if (o->ops[i] == &op->res[0])
				user = o;
	return wgmma_takes_init(user, &op->res[0]) && ir_count_uses(op->parent->func, &op->res[0]) == 1;
}

/* The dot in flight at the yield of a {wgmma_inflight = 2} loop's body: its
 * registers tied through an empty statement become its result, the MMA
 * still running (the next iteration's first wait settles it, or the wait
 * after the loop). */
void nv_wgmma_leave(Nv *nv)
{
	for (int k = 0; k < nv->nwg_old; k++) { /* the older dots: done once only the newest is left */
		wait_tied(nv, 1, nv->wg_old_acc[k], nv->wg_old_n[k]);
		nv_set(nv, &nv->wg_old[k]->res[0], nv->wg_old_n[k], nv->wg_old_acc[k]);
	}
	nv->nwg_old = 0;
	tie_regs(nv, "", nv->wg_acc, nv->wg_n);
	nv_set(nv, &nv->wg_dot->res[0], nv->wg_n, nv->wg_acc);
	nv->wg_dot = NULL;
}

/* The previous iteration's MMA is done once at most `pending` newer groups
 * are left: its registers tied through that wait become the carried
 * argument's values. */
void nv_wgmma_settle(Nv *nv, int pending)
{
	wait_tied(nv, pending, nv->fly_regs, nv->fly_n);
	nv_set(nv, nv->fly_arg, nv->fly_n, nv->fly_regs);
	nv->fly_arg = NULL;
}

/* dot on the FMA path, 2-D or batched 3-D: A [(Bt)][M][K] and B [(Bt)][K][N]
 * through scratch, row-major; a K loop loads, per step, each distinct
 * (batch,) row of A and (batch,) column of B this thread needs once, and
 * does one FMA per accumulator register. With K a multiple of 4 a trip
 * covers 4 steps, each row of A read by one vector load. f16/bf16 accumulators add in f32,
 * rounded once at the end (the tensor cores' accuracy, not K roundings). */
static void lower_dot_fma(Nv *nv, IrOp *op)
{
	const IrType *at = op->ops[0]->type, *bt = op->ops[1]->type, *ct = op->res[0].type;
	int rk = ct->rank;
	int64_t M = at->shape[rk - 2], K = at->shape[rk - 1], N = bt->shape[rk - 1];
	int64_t offa = nv_scratch_off(op), offb = offa + nv_align16(at->numel * nv_esize(at));
	/* an operand read from a row-major slot (an_fma_slot) is read there, at
	 * the slot's element offset ea / eob: the loop's wait and barrier made
	 * it visible; the others go through the scratch */
	const IrOp *sa = op->ops[0]->def, *sb = op->ops[1]->def;
	LLVMValueRef ea = NULL, eob = NULL;
	if (sa && an_fma_slot(sa))
		offa = nv_scratch_off(sa), ea = nv_reg(nv, op->ops[0], 0);
	else
		nv_write_block(nv, op->ops[0], offa);
	if (sb && an_fma_slot(sb))
		offb = nv_scratch_off(sb), eob = nv_reg(nv, op->ops[1], 0);
	else
		nv_write_block(nv, op->ops[1], offb);
	if (!ea || !eob)
		nv_barrier(nv);
	NvMap m;
	nv_map_init(nv, ct, &m);
	const IrType *wt = ct;
	IrTypeKind ck = ir_scalar(ct)->kind;
	if (ck == TY_F16 || ck == TY_BF16)
		wt = ir_type_like(nv->ctx, ct, ir_type(nv->ctx, TY_F32));
	LLVMTypeRef cty = nv_llty(nv, wt), i32 = LLVMInt32TypeInContext(nv->c);
	bool fl = ir_is_float(ir_scalar(ct));
	int db = rk == 3 ? m.dimmap[0] : -1, d0 = m.dimmap[rk - 2], d1 = m.dimmap[rk - 1];
	int nb = db >= 0 ? m.nd[db] : 1, na = nb * m.nd[d0], nc = nb * m.nd[d1];
	/* distinct (batch,) rows / columns this thread needs; ia / ic per register */
	LLVMValueRef *rowlin = nv_regbuf(nv, na), *collin = nv_regbuf(nv, nc);
	int *ia = ir_alloc(nv->ctx, sizeof(int) * (size_t)m.n), *ic = ir_alloc(nv->ctx, sizeof(int) * (size_t)m.n);
	for (int r = 0; r < m.n; r++) {
		int j[IR_MAX_RANK];
		nv_map_local(&m, r, j);
		int jb = db >= 0 ? j[db] : 0;
		ia[r] = jb * m.nd[d0] + j[d0];
		ic[r] = jb * m.nd[d1] + j[d1];
		LLVMValueRef bi = rk == 3 ? nv_map_coord(nv, &m, r, 0) : NULL;
		if (!rowlin[ia[r]]) {
			LLVMValueRef row = nv_map_coord(nv, &m, r, rk - 2);
			if (bi)
				row = LLVMBuildAdd(nv->b, LLVMBuildMul(nv->b, bi, nv_i32(nv, M), ""), row, "");
			rowlin[ia[r]] = LLVMBuildMul(nv->b, row, nv_i32(nv, K), "");
			if (ea)
				rowlin[ia[r]] = LLVMBuildAdd(nv->b, rowlin[ia[r]], ea, "");
		}
		if (!collin[ic[r]]) {
			LLVMValueRef col = nv_map_coord(nv, &m, r, rk - 1);
			if (bi)
				col = LLVMBuildAdd(nv->b, LLVMBuildMul(nv->b, bi, nv_i32(nv, K * N), ""), col, "");
			collin[ic[r]] = eob ? LLVMBuildAdd(nv->b, col, eob, "") : col;
		}
	}
	/* U steps of K per trip: a row of A gives its U elements in one vector
	 * load (rows are K-contiguous, and 16-byte aligned here), where it took
	 * U loads; the FMAs keep K's order. B's row k gives a thread's columns
	 * in vectors of vb where they run consecutively (a blocked layout's
	 * size_per_thread along N). K up to 64 is unrolled whole (the loads of
	 * later steps scheduled among earlier FMAs, as Triton's code is) where
	 * the accumulator is at most 64 registers and no other dot shares the
	 * block (ptxas hoists an unrolled dot's loads: two chained dots of 128
	 * x 32 spilled 348 bytes, one accumulator of 256 registers 41 KB more);
	 * otherwise a loop of trips. */
	int U = K % 4 == 0 && at->numel > 0 ? 4 : 1;
	int vb = 1;
	if (rk == 2 && m.dd[d1].estride == 1 && ir_scalar(bt)->kind != TY_I1) {
		const AnDimDist *dd = &m.dd[d1];
		int lim = 16 / (int)nv_esize(bt);
		for (vb = dd->spt < lim ? dd->spt : lim; vb > 1; vb /= 2)
			if (dd->spt % vb == 0 && dd->lane_unit % vb == 0 && dd->warp_unit % vb == 0 &&
			    m.bs[d1] % vb == 0 && N % vb == 0 && nc % vb == 0)
				break;
		if (vb < 1)
			vb = 1;
	}
	for (int i = 0; i < nc && vb > 1; i += vb) /* every column of a vector present */
		for (int e = 0; e < vb; e++)
			if (!collin[i + e])
				vb = 1;
	bool unroll = K <= 64 && m.n <= 64;
	for (const IrOp *o = op->parent ? op->parent->first : NULL; o && unroll; o = o->next)
		unroll = o == op || o->opc != OP_DOT;
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(nv->b), hb = NULL, eb = NULL;
	LLVMValueRef kv = NULL, *phis = NULL, *acc = nv_regbuf(nv, m.n);
	if (unroll) {
		for (int r = 0; r < m.n; r++) {
			LLVMValueRef c0 = nv_reg(nv, op->ops[2], r);
			acc[r] = wt == ct ? c0 : nv_cast(nv, op, ct, wt, c0);
		}
	} else {
		hb = nv_new_bb(nv, "dot.k"), eb = nv_new_bb(nv, "dot.end");
		LLVMBuildBr(nv->b, hb);
		LLVMPositionBuilderAtEnd(nv->b, hb);
		kv = LLVMBuildPhi(nv->b, i32, "");
		phis = nv_regbuf(nv, m.n);
		for (int r = 0; r < m.n; r++)
			acc[r] = phis[r] = LLVMBuildPhi(nv->b, cty, "");
	}
	LLVMValueRef *av = nv_regbuf(nv, na * U), *bv = nv_regbuf(nv, nc);
	LLVMTypeRef aty = nv_llty(nv, at), bty = nv_llty(nv, bt);
	for (int k0 = 0; k0 < (unroll ? K : U); k0 += U) {
		LLVMValueRef kk = unroll ? nv_i32(nv, k0) : kv;
		for (int i = 0; i < na; i++) {
			if (!rowlin[i])
				continue;
			LLVMValueRef idx = LLVMBuildAdd(nv->b, rowlin[i], kk, "");
			if (U == 1 || ir_scalar(at)->kind == TY_I1) {
				for (int u = 0; u < U; u++)
					av[i * U + u] =
						nv_cast(nv, op, at, wt,
							nv_smem_load(nv, at, offa,
								     LLVMBuildAdd(nv->b, idx, nv_i32(nv, u), "")));
				continue;
			}
			LLVMTypeRef vty = LLVMVectorType(aty, (unsigned)U);
			LLVMValueRef ld = LLVMBuildLoad2(nv->b, vty, nv_smem_addr(nv, offa, idx, nv_esize(at)), "");
			LLVMSetAlignment(ld, (unsigned)(U * nv_esize(at)));
			for (int u = 0; u < U; u++)
				av[i * U + u] =
					nv_cast(nv, op, at, wt, LLVMBuildExtractElement(nv->b, ld, nv_i32(nv, u), ""));
		}
		for (int u = 0; u < U; u++) {
			LLVMValueRef kN =
				LLVMBuildMul(nv->b, LLVMBuildAdd(nv->b, kk, nv_i32(nv, u), ""), nv_i32(nv, N), "");
			for (int i = 0; i < nc; i += vb) {
				if (!collin[i])
					continue;
				LLVMValueRef idx = LLVMBuildAdd(nv->b, kN, collin[i], "");
				if (vb == 1) {
					bv[i] = nv_cast(nv, op, bt, wt, nv_smem_load(nv, bt, offb, idx));
					continue;
				}
				LLVMTypeRef vty = LLVMVectorType(bty, (unsigned)vb);
				LLVMValueRef ld =
					LLVMBuildLoad2(nv->b, vty, nv_smem_addr(nv, offb, idx, nv_esize(bt)), "");
				LLVMSetAlignment(ld, (unsigned)(vb * nv_esize(bt)));
				for (int e = 0; e < vb; e++)
					bv[i + e] = nv_cast(nv, op, bt, wt,
							    LLVMBuildExtractElement(nv->b, ld, nv_i32(nv, e), ""));
			}
			for (int r = 0; r < m.n; r++) {
				LLVMValueRef a = av[ia[r] * U + u], b = bv[ic[r]];
				if (fl)
					acc[r] = nv_intrinsic(nv, "llvm.fma", &cty, 1, (LLVMValueRef[]){a, b, acc[r]},
							      3);
				else
					acc[r] = LLVMBuildAdd(nv->b, LLVMBuildMul(nv->b, a, b, ""), acc[r], "");
			}
		}
	}
	LLVMValueRef *nxt = nv_regbuf(nv, m.n);
	memcpy(nxt, acc, sizeof(LLVMValueRef) * (size_t)m.n);
	if (!unroll) {
		LLVMValueRef k1 = LLVMBuildAdd(nv->b, kv, nv_i32(nv, U), "");
		LLVMBuildCondBr(nv->b, LLVMBuildICmp(nv->b, LLVMIntSLT, k1, nv_i32(nv, K), ""), hb, eb);
		LLVMAddIncoming(kv, (LLVMValueRef[]){nv_i32(nv, 0), k1}, (LLVMBasicBlockRef[]){pre, hb}, 2);
		for (int r = 0; r < m.n; r++) {
			LLVMValueRef c0 = nv_reg(nv, op->ops[2], r);
			LLVMAddIncoming(phis[r], (LLVMValueRef[]){wt == ct ? c0 : nv_cast(nv, op, ct, wt, c0), nxt[r]},
					(LLVMBasicBlockRef[]){pre, hb}, 2);
		}
		LLVMPositionBuilderAtEnd(nv->b, eb);
	}
	if (wt != ct)
		for (int r = 0; r < m.n; r++)
			nxt[r] = nv_cast(nv, op, wt, ct, nxt[r]);
	nv_set(nv, &op->res[0], m.n, nxt);
}

void nv_lower_dot(Nv *nv, IrOp *op)
{
	if (an_is_wgmma(op->res[0].type)) {
		lower_dot_wgmma(nv, op);
		return;
	}
	if (op->res[0].type->layout->kind == LAYOUT_MMA) {
		lower_dot_mma(nv, op);
		return;
	}
	lower_dot_fma(nv, op);
}
