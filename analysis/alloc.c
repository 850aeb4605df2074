/* alloc.c: shared-memory scratch sizing, allocation and barrier insertion.
 *
 * Some ops exchange data between threads through shared memory while they
 * run: convert_layout, reductions across warps, scans, dot (FMA path),
 * trans/reshape/cat/join/split/gather/histogram, and atomics whose old
 * value goes to other threads (a scalar's, or a block's with copies).
 * an_scratch_bytes() says how much each needs; the backend lays the data
 * out inside that range:
 *   trans, reshape, split, gather: the source block, row-major, one
 *       element each (i1 as one byte, pointers 8 bytes); a reshape that
 *       keeps every register in its thread (an_reshape_in_registers)
 *       needs none;
 *   convert_layout: the same bytes, the block with the destination's
 *       fastest dim innermost and each 128-byte line's 16-byte chunks
 *       permuted against bank conflicts (backend/nvptx/shape.c); none
 *       when both layouts hold the same registers;
 *   cat, join: the two operands one after the other (each 16-byte aligned);
 *   reduce across W warps: per input (16-byte aligned segments) the partial
 *       results [result element][warp along the axis];
 *   scan: per input, the block row-major;
 *   dot on the FMA path: A (M x K) then B (K x N), row-major, each in its
 *       element type (on tensor cores the conversions to the dot_op
 *       layouts stage the operands, row-major, and dot needs none);
 *   histogram: the bins as i32; atomics whose old value is used: 8 bytes
 *       for a scalar, the block row-major when its layout has copies of
 *       elements in other warps (an_atomic_scratch).
 *   call: the callee's own allocation (its "shared" total), from the base
 *       the call passes (see call.c);
 *   tma_store: the value in the slot layout of tma_copy (column blocks of
 *       128-byte rows, swizzled; backend/nvptx/mem.c), read by the tensor
 *       memory access unit before the op ends; a deferred one's (below)
 *       read while the kernel goes on;
 *   tensormap_create (with a global scratch slot): the 128-byte map built
 *       by tensormap.replace at the first 128-byte aligned address inside
 *       its 256 bytes, then copied to global memory.
 * A buffer lives only while its op runs (but the staged B tile of a
 * warpgroup dot lives until the dot, which reads it by descriptor), so allocation by liveness puts the
 * buffers of different ops on top of each other; the first-fit allocator
 * below is general (intervals over op positions) in case longer-lived
 * buffers appear (pipelining).
 *
 * Deferred tensor stores: in a flattened nest's loop (fused_nest), the
 * tensor stores of the epilogue do not wait for the unit to read their
 * staging; the next store waits for that before it writes the staging
 * again (and the kernel before it exits), so the reads overlap the next
 * tile's K steps, as Triton pipelines its tensor stores. All of them
 * share one staging buffer, live for the whole kernel, so that nothing
 * else writes it while the unit reads; an_plan_tma_stores defers them
 * only where that buffer still fits beside the rest.
 *
 * Barriers: each scratch user writes, waits at a barrier, then reads. Before
 * it writes, another barrier is needed if some earlier scratch user may still
 * be reading; an_insert_barriers tracks that ("dirty") through structured
 * control flow (a loop body that uses scratch is dirty on entry). A call
 * of a function that uses shared memory counts as a scratch user: a
 * barrier before it when something may still be reading, dirty after it;
 * the callee itself starts clean.
 */
#include "analysis.h"

#include <stdlib.h>

static int64_t align16(int64_t x) { return (x + 15) & ~(int64_t)15; }

static int64_t elem_bytes(const IrType *t)
{
	const IrType *s = ir_scalar(t);
	int b = ir_type_bits(s) / 8;
	return b < 1 ? 1 : b;
}

int64_t an_shared_limit(int arch)
{
	if (arch >= 90)
		return 232448;
	if (arch == 80 || arch == 87)
		return 166912;
	if (arch >= 86)
		return 101376;
	return 65536;
}

static int64_t numel(const IrType *t) { return ir_is_block(t) ? t->numel : 1; }

/* An atomic whose old value is used hands it from the thread that did the
 * atomic to the threads holding copies: a scalar atomic (done by thread 0)
 * through 8 bytes, a block whose layout has copies in other warps through
 * the block row-major (copies within a warp are shuffled, no scratch). */
int64_t an_atomic_scratch(const IrOp *op)
{
	const IrType *t = op->res[0].type;
	IrFunc *f = op->parent ? op->parent->func : NULL;
	if (f && ir_count_uses(f, &op->res[0]) == 0)
		return 0;
	if (!ir_is_block(t))
		return 8;
	return an_copies(t, NULL) == AN_COPIES_WARPS ? numel(t) * elem_bytes(t) : 0;
}

int64_t an_scratch_bytes(const IrOp *op, const AnGpuOptions *o)
{
	/* a renaming of registers (regperm.c) needs none */
	if ((op->opc == OP_RESHAPE || op->opc == OP_TRANS || op->opc == OP_SPLIT || op->opc == OP_JOIN ||
	     op->opc == OP_CONVERT_LAYOUT) && an_regs_only(op, o->num_warps, o->warp_size))
		return 0;
	if (op->opc == OP_CONVERT_LAYOUT && an_warp_shuffle(op, o->warp_size, NULL))
		return 0;
	switch (op->opc) {
	case OP_CONVERT_LAYOUT:
		/* a warpgroup MMA operand read from shared memory is staged even
		 * when its registers would not move (a tf32 or fp8 A computed in
		 * the accumulator's layout) */
		if (an_same_registers(op->ops[0]->type, op->res[0].type) && !an_wgmma_smem_operand(op))
			return 0;
		/* in rounds (mark_rounds): a round's part of the block at a time */
		return numel(op->ops[0]->type) * elem_bytes(op->ops[0]->type) / ir_op_int(op, "rounds", 1);
	case OP_RESHAPE:
		if (an_reshape_in_registers(op))
			return 0;
		return numel(op->ops[0]->type) * elem_bytes(op->ops[0]->type);
	case OP_TRANS:
	case OP_SPLIT:
	case OP_GATHER:
		return numel(op->ops[0]->type) * elem_bytes(op->ops[0]->type);
	case OP_CAT:
	case OP_JOIN:
		return align16(numel(op->ops[0]->type) * elem_bytes(op->ops[0]->type)) +
		       numel(op->ops[1]->type) * elem_bytes(op->ops[1]->type);
	case OP_HISTOGRAM:
		return numel(op->res[0].type) * 4;
	case OP_SCAN: {
		int64_t s = 0;
		for (int i = 0; i < op->nops; i++)
			s += align16(numel(op->ops[i]->type) * elem_bytes(op->ops[i]->type));
		return s;
	}
	case OP_REDUCE: {
		const IrType *t = op->ops[0]->type;
		if (!ir_is_block(t) || !t->layout)
			return 0;
		int64_t base[IR_MAX_RANK];
		int map[IR_MAX_RANK];
		const IrLayout *b = an_unslice(t->layout, t->rank, t->shape, base, map);
		int axis = (int)ir_op_int(op, "axis", 0);
		AnDimDist dd;
		if (!an_dim_dist(b, base, map[axis], &dd))
			return 0;
		int w = dd.distinct_warps;
		if (w <= 1)
			return 0;
		int64_t s = 0;
		for (int i = 0; i < op->nops; i++)
			s += align16(numel(op->res[i].type) * w * elem_bytes(op->ops[i]->type));
		return s;
	}
	case OP_DOT: {
		const IrType *a = op->ops[0]->type, *b = op->ops[1]->type;
		if (op->res[0].type->layout && op->res[0].type->layout->kind == LAYOUT_MMA)
			return 0; /* tensor cores: operands arrive in registers */
		if (op->ops[0]->def && an_fma_slot(op->ops[0]->def) && op->ops[1]->def && an_fma_slot(op->ops[1]->def))
			return 0; /* both read from their slots */
		return align16(numel(a) * elem_bytes(a)) + numel(b) * elem_bytes(b);
	}
	case OP_ATOMIC_RMW:
	case OP_ATOMIC_CAS:
		return an_atomic_scratch(op);
	case OP_CALL:
		return an_func_shared(an_callee(op));
	case OP_TMA_STORE: /* the value (its column window) in the slot layout of tma_copy, read by the tensor store */
		if (ir_op_attr(op, "cols"))
			return op->ops[3]->type->shape[0] * ir_op_int(op, "cols", 0) * elem_bytes(op->ops[3]->type);
		return numel(op->ops[3]->type) * elem_bytes(op->ops[3]->type);
	case OP_TMAP_CREATE: /* a map staged for tensormap.replace, 128-byte aligned inside */
		return ir_op_attr(op, "gscratch") ? 2 * AN_TMAP_BYTES : 0;
	default:
		return 0;
	}
	(void)o;
}

/* A conversion of a 16-bit 2-D tile to a dot_op layout (staged swizzled,
 * read back by ldmatrix). */
static bool staged_to_dot_op(const IrOp *op)
{
	if (!op || op->opc != OP_CONVERT_LAYOUT)
		return false;
	const IrType *t = op->res[0].type;
	if (!ir_is_block(t) || !t->layout || t->layout->kind != LAYOUT_DOT_OP || t->rank != 2 ||
	    t->shape[0] < 16 || t->shape[1] < 16)
		return false;
	IrTypeKind k = ir_scalar(t)->kind;
	return (k == TY_F16 || k == TY_BF16) && !an_same_registers(op->ops[0]->type, t);
}

bool an_staged_pair(const IrOp *op)
{
	const IrOp *n = op ? op->next : NULL;
	if (staged_to_dot_op(op) && staged_to_dot_op(n) && n->ops[0] != &op->res[0] &&
	    n->res[0].type->layout->opidx != op->res[0].type->layout->opidx)
		return true;
	/* two B tiles of warpgroup MMAs (a tf32x3 dot's halves, analysis/rslice.c
	 * puts them side by side) */
	return op && n && op->opc == OP_CONVERT_LAYOUT && n->opc == OP_CONVERT_LAYOUT && an_wgmma_smem_operand(op) &&
	       an_wgmma_smem_operand(n) && op->res[0].type->layout->opidx == 1 && n->res[0].type->layout->opidx == 1 &&
	       n->ops[0] != &op->res[0];
}

/* ------------------------------------------------------------------------- */

typedef struct Buf {
	IrOp *op;
	int64_t size, start, end, offset;
	bool mbar; /* a tensor-memory-access buffer's mbarriers (its slots are another Buf) */
	int depth;	     /* nesting depth of the first op naming it */
	IrOpcode last_opc;   /* the last op naming it (OP_FOR: a loop using it) */
	int last_depth;	     /* and its depth */
	bool drained;	     /* its whole life lies in one iteration of a loop */
} Buf;

typedef struct ACtx {
	const AnGpuOptions *o;
	Buf *bufs;
	int n, cap;
	int64_t pos;
	int depth;	    /* regions entered */
	int64_t wait0_pos;  /* the latest async_wait {pending = 0} seen, */
	int wait0_depth;    /* and its depth */
} ACtx;

static void add_buf(ACtx *a, Buf b)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 16;
		a->bufs = realloc(a->bufs, sizeof(Buf) * (size_t)a->cap);
		if (!a->bufs)
			abort();
	}
	a->bufs[a->n++] = b;
}

/* Multi-buffered tiles (async_copy / local_read {buffer}): stages x tile
 * bytes, live from the first op naming the buffer to the end of the loop
 * that holds the last (copies past the end may still be landing until the
 * wait after the loop). The Buf's op is the first op naming it; every op
 * naming it gets the offset. */
static bool tile_buf_owner(const IrOp *op)
{
	return an_tile_buffer_op(op) && op->opc != OP_LOCAL_READ;
}

/* The bytes of a tile buffer's slots; *mbar_bytes (when asked) those of
 * its mbarriers: a tensor-memory-access buffer (named by a {tile} type) has
 * one 8-byte mbarrier per slot and, warp-specialized ({ws}), one more per
 * slot (its empty mbarriers), allocated apart from the slots (placed at
 * {mbar_offset}: after 1 KiB-aligned slots they would cost up to 1 KiB of
 * padding each, enough to keep a second CTA off a multiprocessor). */
int64_t an_tile_buffer_bytes(const IrOp *op, int64_t *mbar_bytes)
{
	const IrAttr *ta = ir_op_attr(op, "tile");
	const IrType *t = ta && ta->kind == ATTR_TYPE ? ta->type : op->opc == OP_ASYNC_COPY ? op->ops[0]->type : NULL;
	if (mbar_bytes)
		*mbar_bytes = t && ta ? 8 * ir_op_int(op, "stages", 1) * (ir_op_int(op, "ws", 0) ? 2 : 1) : 0;
	if (!t)
		return 0;
	int64_t S = ir_op_int(op, "stages", 1);
	return align16(numel(t) * elem_bytes(ta ? ir_scalar(t) : ir_scalar(t)->elem) * S);
}

/* The Buf of the slots (mbar false) or of the mbarriers (true) of the
 * buffer op names, made at pos by its first owner. */
static Buf *tile_buf(ACtx *a, IrOp *op, int64_t pos, bool mbar)
{
	int64_t id = ir_op_int(op, "buffer", 0);
	for (int i = 0; i < a->n; i++)
		if (tile_buf_owner(a->bufs[i].op) && a->bufs[i].mbar == mbar &&
		    ir_op_int(a->bufs[i].op, "buffer", -1) == id)
			return &a->bufs[i];
	if (!tile_buf_owner(op))
		return NULL;
	int64_t mb;
	int64_t sz = an_tile_buffer_bytes(op, &mb);
	if (mbar && !mb)
		return NULL;
	add_buf(a, (Buf){op, mbar ? align16(mb) : sz, pos, pos, 0, mbar, a->depth, op->opc, a->depth, false});
	return &a->bufs[a->n - 1];
}

/* A tile buffer whose whole life lies inside one iteration of the loop at
 * start, so that nothing carries across the back edge and it need not live
 * to the loop's end (a persistent kernel's epilogue may reuse its bytes):
 * - cp.async slots first named by a copy at the top of the body (each
 *   iteration writes them before reading them), then drained by an
 *   async_wait {pending = 0}, also at the top of the body, after their
 *   last use (copies past the end have landed);
 * - a tensor-memory-access buffer (slots and mbarriers) initialised by a
 *   tma_init at the top of the body and last named by its tma_inval, also
 *   at the top of the body (no copy in flight then, the phases start
 *   afresh at the next tma_init). */
static bool drained_in_body(const ACtx *a, const Buf *t, int64_t start)
{
	if (t->start <= start || t->depth != a->depth + 1)
		return false;
	if (t->op->opc == OP_TMA_INIT)
		return t->last_opc == OP_TMA_INVAL && t->last_depth == a->depth + 1;
	int64_t mb = 0;
	if (t->mbar || t->op->opc != OP_ASYNC_COPY)
		return false;
	an_tile_buffer_bytes(t->op, &mb);
	return mb == 0 && a->wait0_depth == a->depth + 1 && a->wait0_pos >= t->end && a->wait0_pos > start;
}

static void collect(ACtx *a, IrBlock *b)
{
	for (IrOp *op = b->first; op; op = op->next) {
		int64_t start = a->pos++;
		a->depth++;
		for (int r = 0; r < op->nregions; r++)
			collect(a, op->regions[r]);
		a->depth--;
		if (op->opc == OP_ASYNC_WAIT && ir_op_int(op, "pending", -1) == 0) {
			a->wait0_pos = start;
			a->wait0_depth = a->depth;
		}
		if (op->opc == OP_FOR || op->opc == OP_WHILE)
			for (int i = 0; i < a->n; i++) {
				Buf *t = &a->bufs[i];
				/* drained in each iteration of this loop (or of one
				 * inside it): dead at the back edges of the loops around */
				if (tile_buf_owner(t->op) && t->end > start && !t->drained)
					t->drained = drained_in_body(a, t, start);
				if (tile_buf_owner(t->op) && t->end > start && !t->drained) {
					t->end = a->pos; /* used inside: live to the loop's end */
					t->last_opc = OP_FOR;
					t->last_depth = a->depth;
				}
				/* a tile staged before the loop for the dots inside it */
				if (t->op->opc == OP_CONVERT_LAYOUT && t->start < start && t->end > start &&
				    an_wgmma_smem_operand(t->op))
					t->end = a->pos;
			}
		if (an_tile_buffer_op(op)) {
			for (int m = 0; m < 2; m++) {
				Buf *t = tile_buf(a, op, start, m);
				if (t && start >= t->end) {
					t->end = start;
					t->last_opc = op->opc;
					t->last_depth = a->depth;
				}
			}
			continue;
		}
		if (op->opc == OP_DOT && an_is_wgmma(op->res[0].type)) {
			/* wgmma reads B (and a loaded A) from the conversion's buffer: live to the dot */
			for (int i = 0; i < a->n; i++)
				if ((a->bufs[i].op == op->ops[0]->def || a->bufs[i].op == op->ops[1]->def) &&
				    an_wgmma_smem_operand(a->bufs[i].op))
					a->bufs[i].end = start;
			continue;
		}
		int64_t sz = an_scratch_bytes(op, a->o);
		if (sz <= 0)
			continue;
		if (an_tma_store_deferred(op)) {
			/* one staging buffer for every deferred store, the whole kernel long */
			Buf *g = NULL;
			for (int i = 0; i < a->n && !g; i++)
				if (an_tma_store_deferred(a->bufs[i].op))
					g = &a->bufs[i];
			if (g)
				g->size = g->size > align16(sz) ? g->size : align16(sz);
			else
				add_buf(a, (Buf){op, align16(sz), 0, INT64_MAX / 4, 0, false, a->depth, op->opc, a->depth,
						 false});
			continue;
		}
		/* the first of a staged pair stays live through the second: both
		 * tiles are written before one barrier, then both read */
		int64_t end = an_staged_pair(op) ? start + 1 : start;
		add_buf(a, (Buf){op, align16(sz), start, end, 0, false, a->depth, op->opc, a->depth, false});
	}
}

static int by_size_desc(const void *x, const void *y)
{
	const Buf *a = x, *b = y;
	if (a->size != b->size)
		return a->size < b->size ? 1 : -1;
	return a->start < b->start ? -1 : a->start > b->start;
}

static void set_tile_offset(IrCtx *ctx, IrBlock *b, int64_t id, int64_t off, const char *attr)
{
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			set_tile_offset(ctx, op->regions[r], id, off, attr);
		if (an_tile_buffer_op(op) && ir_op_int(op, "buffer", -1) == id)
			ir_op_set_int(ctx, op, attr, off);
	}
}

static void set_deferred_offset(IrCtx *ctx, IrBlock *b, int64_t off)
{
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			set_deferred_offset(ctx, op->regions[r], off);
		if (an_tma_store_deferred(op))
			ir_op_set_int(ctx, op, "scratch_offset", off);
	}
}

bool an_tma_store_deferred(const IrOp *op)
{
	return op->opc == OP_TMA_STORE && ir_op_int(op, "deferred", 0);
}

/* Marks (on) or unmarks the tensor stores inside loops marked fused_nest;
 * the number of them. */
static int mark_deferred(IrCtx *ctx, IrBlock *b, bool in_fused, bool on)
{
	int n = 0;
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			n += mark_deferred(ctx, op->regions[r], in_fused || ir_op_int(op, "fused_nest", 0), on);
		if (op->opc == OP_TMA_STORE && in_fused) {
			if (on)
				ir_op_set_int(ctx, op, "deferred", 1);
			else
				ir_op_remove_attr(op, "deferred");
			n++;
		}
	}
	return n;
}

void an_plan_tma_stores(IrFunc *f, const AnGpuOptions *o)
{
	IrCtx *ctx = f->module->ctx;
	if (!f->is_kernel || o->arch < 90 || !mark_deferred(ctx, f->body, false, true))
		return;
	/* the staging apart from everything else must fit (allocate-shared
	 * places it again, after the barriers, which take no memory) */
	if (an_allocate_shared(f, o) > an_shared_limit(o->arch))
		mark_deferred(ctx, f->body, false, false);
	else
		ir_set_attr_int(ctx, &f->nattrs, &f->attrs, "tma_store_deferred", 1);
}

/* A flattened nest's epilogue (an `if` in a loop marked fused_nest)
 * converts the tile's result to the store's layout while the next tile's
 * copies fill the slots, so its buffer lives beside them: a conversion of
 * more than 32 KiB there goes in rounds of 32 KiB (backend/nvptx/shape.c),
 * each a whole number of 128-byte lines, as ir/loops.c and prefetch.c
 * budget it. */
int64_t an_round_bytes(int64_t bytes)
{
	int64_t R = 1;
	while (bytes / R > 32768 && bytes % (2 * R * 128) == 0)
		R *= 2;
	return bytes / R;
}

static void mark_rounds(IrCtx *ctx, IrBlock *b, const AnGpuOptions *o, bool fused, bool nested)
{
	for (IrOp *op = b->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			mark_rounds(ctx, op->regions[r], o, fused || ir_op_int(op, "fused_nest", 0), fused);
		if (!nested || op->opc != OP_CONVERT_LAYOUT || an_wgmma_smem_operand(op) || an_staged_pair(op) ||
		    !ir_is_block(op->res[0].type) || ir_find_attr(op->nattrs, op->attrs, "rounds"))
			continue;
		int64_t bytes = an_scratch_bytes(op, o);
		int64_t R = bytes / an_round_bytes(bytes);
		if (R > 1)
			ir_op_set_int(ctx, op, "rounds", R);
	}
}

int64_t an_allocate_shared(IrFunc *f, const AnGpuOptions *o)
{
	ACtx a = {o, NULL, 0, 0, 0, 0, -1, -1};
	mark_rounds(f->module->ctx, f->body, o, false, false);
	collect(&a, f->body);
	if (a.n > 1)
		qsort(a.bufs, (size_t)a.n, sizeof(Buf), by_size_desc);
	int64_t total = 0;
	for (int i = 0; i < a.n; i++) {
		/* lowest offset not overlapping any placed buffer live at the same time */
		/* tiles of 1 KiB or more start on 1 KiB: the 128-byte swizzle of
		 * the tensor cores' shared-memory reads is a function of the
		 * address bits, so a tile's rows 0..7 must start an atom */
		int64_t al = a.bufs[i].size >= 1024 ? 1024 : 16;
		int64_t off = 0;
		for (bool moved = true; moved;) {
			moved = false;
			for (int j = 0; j < i; j++) {
				Buf *p = &a.bufs[j];
				bool live = p->start <= a.bufs[i].end && a.bufs[i].start <= p->end;
				if (live && off < p->offset + p->size && p->offset < off + a.bufs[i].size) {
					off = (p->offset + p->size + al - 1) / al * al;
					moved = true;
				}
			}
		}
		a.bufs[i].offset = off;
		if (off + a.bufs[i].size > total)
			total = off + a.bufs[i].size;
		if (!a.bufs[i].mbar)
			ir_op_set_int(f->module->ctx, a.bufs[i].op, "scratch_offset", off);
	}
	/* every op naming a tile buffer gets its offset, every deferred
	 * store that of the staging they share */
	for (int i = 0; i < a.n; i++) {
		if (tile_buf_owner(a.bufs[i].op))
			set_tile_offset(f->module->ctx, f->body, ir_op_int(a.bufs[i].op, "buffer", 0),
					a.bufs[i].offset, a.bufs[i].mbar ? "mbar_offset" : "scratch_offset");
		if (an_tma_store_deferred(a.bufs[i].op))
			set_deferred_offset(f->module->ctx, f->body, a.bufs[i].offset);
	}
	free(a.bufs);
	/* a called function's total: its caller's scratch for the call */
	if (!f->is_kernel && (total > 0 || ir_find_attr(f->nattrs, f->attrs, "shared")))
		ir_set_attr_int(f->module->ctx, &f->nattrs, &f->attrs, "shared", total);
	return total;
}

/* ------------------------------------------------------------------------- */

static bool uses_scratch(IrBlock *b, const AnGpuOptions *o)
{
	for (IrOp *op = b->first; op; op = op->next)
		if (an_uses_shared(op, o))
			return true;
	return false;
}

static bool membar_block(IrBlock *b, bool dirty, const AnGpuOptions *o)
{
	IrCtx *ctx = b->func->module->ctx;
	for (IrOp *op = b->first; op; op = op->next) {
		if (op->opc == OP_BARRIER) {
			if (!ir_op_int(op, "wait_only", 0)) /* an MMA wait alone orders no thread */
				dirty = false;
			continue;
		}
		/* the producer of a warp-specialized kernel: its copies and the
		 * consumers' reads are ordered by mbarriers, and it takes part in
		 * no barrier */
		if (op->opc == OP_WARP_SPEC || op->opc == OP_TMA_RELEASE)
			continue;
		if (op->nregions) {
			bool inner = false;
			for (int r = 0; r < op->nregions; r++)
				inner |= uses_scratch(op->regions[r], o);
			bool loop = op->opc == OP_FOR || op->opc == OP_WHILE;
			bool out = dirty;
			for (int r = 0; r < op->nregions; r++)
				out |= membar_block(op->regions[r], dirty || (loop && inner), o);
			dirty = out;
		}
		/* multi-buffered tiles: their buffers overlap nothing live, and the
		 * pipelining pass places the barrier between a tile's copy and its
		 * reads; a copy overwrites what earlier scratch users may still
		 * read, and after a wait other threads' copies may have landed */
		if (op->opc == OP_ASYNC_COPY || op->opc == OP_TMA_COPY || op->opc == OP_TMA_INIT) {
			if (dirty && !ir_op_int(op, "ordered", 0)) {
				IrOp *bar = ir_op_new(ctx, OP_BARRIER, 0, NULL, 0, NULL, 0, op->loc);
				ir_block_insert_before(b, op, bar);
				dirty = false;
			}
			continue;
		}
		if (op->opc == OP_LOCAL_READ || op->opc == OP_ASYNC_WAIT || op->opc == OP_TMA_WAIT ||
		    op->opc == OP_TMA_INVAL) {
			dirty = true;
			continue;
		}
		/* a callee using shared memory starts clean: its first writer may
		 * overwrite what the caller's readers before it still read, and
		 * its last readers may still read when it returns */
		if (op->opc == OP_CALL) {
			if (an_uses_shared(op, o)) {
				if (dirty) {
					IrOp *bar = ir_op_new(ctx, OP_BARRIER, 0, NULL, 0, NULL, 0, op->loc);
					ir_block_insert_before(b, op, bar);
				}
				dirty = true;
			}
			continue;
		}
		/* a deferred tensor store waits for the unit's reads of its
		 * staging and meets the others at a barrier before it writes the
		 * staging (nothing else uses it), and at another after: clean */
		if (an_tma_store_deferred(op)) {
			dirty = false;
			continue;
		}
		/* a tensor map made in the kernel ends with a barrier after its
		 * last read of its scratch (backend/nvptx/tmap.c): clean after it */
		if (op->opc == OP_TMAP_CREATE && an_scratch_bytes(op, o) > 0) {
			if (dirty)
				ir_block_insert_before(b, op, ir_op_new(ctx, OP_BARRIER, 0, NULL, 0, NULL, 0, op->loc));
			dirty = false;
			continue;
		}
		if (an_scratch_bytes(op, o) > 0) {
			if (dirty && !an_staged_pair(op->prev)) {
				IrOp *bar = ir_op_new(ctx, OP_BARRIER, 0, NULL, 0, NULL, 0, op->loc);
				ir_block_insert_before(b, op, bar);
			}
			dirty = true;
		}
	}
	return dirty;
}

void an_insert_barriers(IrFunc *f, const AnGpuOptions *o)
{
	membar_block(f->body, false, o);
}
