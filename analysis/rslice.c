/* rslice.c: warpgroup MMAs whose A is computed in registers, one K step at
 * a time, so that they stay in flight (sm_90, after layouts); and the two
 * staged halves of a tf32x3 dot's B written together (pair_b_stagings).
 *
 * A tile read back from its cp.async slot into A's registers and cast
 * there (prefetch.c regs_ok, layout.c regs_read_layout: fp32 activations
 * cast to fp16, a dequantized tile) feeds a warpgroup MMA whose registers
 * the next iteration writes again. Kept whole, that MMA must be done before
 * the iteration ends, and reading and casting the next tile waits for the
 * tensor cores. Here the dot
 *
 *   a = f(local_read {regs} slot)          M x K
 *   acc' = dot(a, local_read slot_b, acc)  (acc carried by the loop)
 *
 * becomes S = K / k dots of one K step k (16 elements of 16 bits, 8 of tf32)
 * each, chained through the accumulator:
 *
 *   for j < S:  a_j = f(local_read {regs, k0 = j k, kfull = K} slot)   M x k
 *               acc_j = dot(a_j, local_read {k0 = j k, kfull = K} slot_b, acc_{j-1})
 *                       {rs_pending = S - 1}
 *
 * The backend (backend/nvptx/dot.c) commits each step's MMAs as a group
 * and then waits until at most S - 1 groups are left: step j's registers
 * are written again only in the next iteration, after the wait that
 * follows that iteration's step j - 1, by which the MMA that read them is
 * done (S - 1 newer groups were committed since). Reading and casting step
 * j + 1 runs while step j's MMA does, and the loop keeps S - 1 groups in
 * flight across the back edge ({wgmma_inflight = 1}); a barrier
 * {wgmma_pending = S - 1} before the iteration's copies makes sure that
 * every warpgroup's MMAs of the previous iteration, which read the slots
 * the copies overwrite, are done. Triton 3.6 splits such a dot along K the
 * same way (its warpgroup-dot pipelining of register operands).
 *
 * Where A is read as 32-bit or 8-bit elements (fp32 or int8 activations)
 * and the raw registers of its whole tile fit beside the accumulator (at most 160
 * 32-bit registers a thread for the two), every step's read of
 * the slot comes first and each step's chain stays right before its MMA
 * (CTRITON_RS_READS_FIRST=0: each read right before its chain). The reads'
 * latencies then overlap, as in Triton's loop, which issues all of A's
 * loads first, while the registers an MMA reads as A are still written
 * only after the wait that retired the previous iteration's MMA of that
 * step: the chain writes them, not the read. (Triton writes them at the
 * top of the iteration, S - 1 groups still in flight.)
 *
 * Taken when the loop body holds that one dot (its accumulator carried,
 * f32 or i32), no region, cp.async copies only after the dot, and every op
 * of f is elementwise with one use, its other operands splats or constants.
 * On by default; CTRITON_RS_SLICES=0 turns it off (part of the cache key).
 * On the H200, fp32 A cast to fp16 at 128x128x64 with 4 warps went from
 * 0.78x to 0.87x of Triton, tf32x3 at 64x64x32 from 0.92x to 1.04x.
 */
#include "analysis.h"

#include <stdlib.h>
#include <string.h>

/* CTRITON_RS_SLICES=0: the whole dot, waited for in its iteration */
static bool rs_slices_on(void)
{
	const char *e = getenv("CTRITON_RS_SLICES");
	return !(e && e[0] == '0');
}

#define MAX_CHAIN 8
#define MAX_STEPS 16

/* A block value of t's element and layout with dim d of extent n. */
static const IrType *sliced(IrCtx *ctx, const IrType *t, int d, int64_t n)
{
	int64_t shape[IR_MAX_RANK];
	memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
	shape[d] = n;
	return ir_type_block(ctx, ir_scalar(t), t->rank, shape, t->layout);
}

/* The elementwise ops from a read {regs} of a slot to the dot's A, read
 * first: each with one use, its other operands splats or constants. */
static int a_chain(IrFunc *f, IrValue *a, IrOp **chain, IrOp **read)
{
	int n = 0;
	IrValue *v = a;
	while (v->def && v->def->opc != OP_LOCAL_READ) {
		IrOp *op = v->def;
		unsigned fl = ir_opinfo(op->opc)->flags;
		if (n == MAX_CHAIN || !(fl & IR_PURE) || !(fl & IR_ELEM) || op->nres != 1 || op->nregions ||
		    ir_count_uses(f, v) != 1)
			return -1;
		IrValue *in = NULL;
		for (int i = 0; i < op->nops; i++) {
			IrOp *d = op->ops[i]->def;
			bool side =
				d && (d->opc == OP_CONSTANT || (d->opc == OP_SPLAT && !ir_is_block(d->ops[0]->type)));
			if (!ir_is_block(op->ops[i]->type))
				return -1;
			if (side)
				continue;
			if (in)
				return -1;
			in = op->ops[i];
		}
		if (!in || in->type->rank != 2)
			return -1;
		chain[n++] = op;
		v = in;
	}
	IrOp *r = v->def;
	if (!r || !ir_op_int(r, "regs", 0) || ir_op_int(r, "transposed", 0) || ir_op_int(r, "kfull", 0) ||
	    ir_count_uses(f, v) != 1 || r->res[0].type->rank != 2)
		return -1;
	*read = r;
	/* read first */
	for (int i = 0; i < n / 2; i++) {
		IrOp *t = chain[i];
		chain[i] = chain[n - 1 - i];
		chain[n - 1 - i] = t;
	}
	return n;
}

/* A copy of op before `at` with the operands ops and the result type rty. */
static IrOp *clone_before(IrFunc *f, IrOp *at, const IrOp *op, IrValue *const *ops, const IrType *rty)
{
	IrCtx *ctx = f->module->ctx;
	IrOp *c = ir_op_new(ctx, op->opc, op->nops, ops, 1, &rty, 0, op->loc);
	ir_op_copy_attrs(ctx, c, op);
	c->res[0].id = -1;
	ir_block_insert_before(at->parent, at, c);
	return c;
}

/* The dot of body that qualifies, with its A chain; NULL if none. */
static IrOp *rs_dot(IrFunc *f, IrBlock *body, IrOp **chain, int *nchain, IrOp **read, int *steps)
{
	IrOp *dot = NULL, *y = ir_block_terminator(body);
	bool copies_after = false;
	for (IrOp *op = body->first; op; op = op->next) {
		if (op->nregions || op->opc == OP_TMA_COPY || op->opc == OP_TMA_WAIT || op->opc == OP_TMA_RELEASE)
			return NULL;
		if (op->opc == OP_DOT) {
			if (dot)
				return NULL;
			dot = op;
		}
		if (op->opc == OP_ASYNC_COPY) {
			if (!dot || !ir_op_int(op, "ordered", 0))
				return NULL;
			copies_after = true;
		}
	}
	if (!dot || !copies_after || !y || !an_is_wgmma(dot->res[0].type))
		return NULL;
	IrTypeKind ck = ir_scalar(dot->res[0].type)->kind;
	if ((ck != TY_F32 && ck != TY_I32) || ir_op_int(dot, "max_num_imprecise_acc", 0) > 0)
		return NULL;
	const IrType *at = dot->ops[0]->type;
	if (!at->layout || at->layout->kind != LAYOUT_DOT_OP || at->layout->opidx != 0)
		return NULL;
	int es = ir_type_bits(ir_scalar(at)) / 8;
	if (es != 2 && es != 4)
		return NULL;
	/* B: its slot, read by the MMA itself */
	IrOp *bd = dot->ops[1]->def;
	if (!bd || bd->opc != OP_LOCAL_READ || !an_wgmma_smem_operand(bd) || ir_op_int(bd, "kfull", 0) ||
	    ir_count_uses(f, &bd->res[0]) != 1)
		return NULL;
	/* the accumulator: carried, read by the dot only, the dot's result only yielded */
	IrValue *c = dot->ops[2];
	if (c->def || c->owner != body || c->index < 1 || c->index - 1 >= y->nops ||
	    y->ops[c->index - 1] != &dot->res[0] || ir_count_uses(f, c) != 1 || ir_count_uses(f, &dot->res[0]) != 1)
		return NULL;
	int n = a_chain(f, dot->ops[0], chain, read);
	if (n < 0)
		return NULL;
	int64_t K = at->shape[1], k = 32 / es;
	if (K % k || K / k < 2 || K / k > MAX_STEPS)
		return NULL;
	*nchain = n;
	*steps = (int)(K / k);
	return dot;
}

/* Whether op names buffer buf. */
static bool names_buffer(const IrOp *op, int64_t buf)
{
	return (op->opc == OP_ASYNC_COPY || op->opc == OP_LOCAL_READ) && ir_op_int(op, "buffer", -1) == buf;
}

/* An op other than the n reads, the copy c and the prologue's copies (before
 * the loop, constant slots below lim) naming buf, anywhere in blk. */
static bool other_namer(const IrBlock *blk, int64_t buf, IrOp *const *reads, int n, const IrOp *c, const IrOp *loop,
			int64_t lim)
{
	for (const IrOp *op = blk->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			if (other_namer(op->regions[r], buf, reads, n, c, loop, lim))
				return true;
		if (!names_buffer(op, buf) || op == c)
			continue;
		bool ours = false;
		for (int i = 0; i < n; i++)
			ours |= op == reads[i];
		if (ours)
			continue;
		const IrOp *sd = op->ops[1]->def;
		if (op->opc != OP_ASYNC_COPY || op->parent != loop->parent || !sd || sd->opc != OP_CONSTANT ||
		    ir_op_int(sd, "value", lim) >= lim)
			return true;
	}
	return false;
}

/* A's tile takes num_stages - 1 slots instead of num_stages, as Triton
 * gives a register operand's buffer (fp32 A at 128x128x64 with 3 stages:
 * 112 KiB of slots instead of 144, so two CTAs fit a multiprocessor). The
 * copy of tile k + D (D = num_stages - 1 tiles ahead) goes into the slot
 * tile k was read from in this iteration: every thread's reads of it come
 * before the barrier {wgmma_pending} that precedes the copies, and the
 * slot is read only into registers. A's slot is carried by the loop on its
 * own, counting modulo num_stages - 1; the prologue's copies of tiles
 * 0 .. D - 1 already go into slots 0 .. D - 1. */
static void one_slot_fewer(IrFunc *f, IrOp *loop, IrOp **reads, int n)
{
	IrCtx *ctx = f->module->ctx;
	IrBlock *body = loop->regions[0];
	int64_t buf = ir_op_int(reads[0], "buffer", -1);
	IrValue *rslot = reads[0]->ops[0];
	IrOp *c = NULL;
	for (IrOp *op = body->first; op; op = op->next)
		if (op->opc == OP_ASYNC_COPY && names_buffer(op, buf)) {
			if (c)
				return;
			c = op;
		}
	int64_t st = c ? ir_op_int(c, "stages", 0) : 0;
	if (st < 2 || rslot->owner != body)
		return;
	for (int i = 0; i < n; i++)
		if (reads[i]->ops[0] != rslot)
			return;
	if (other_namer(f->body, buf, reads, n, c, loop, st - 1))
		return;
	const IrType *i32 = ir_type(ctx, TY_I32);
	IrValue *aslot = ir_block_add_arg(ctx, body, i32);
	aslot->id = -1;
	IrBuilder b;
	ir_builder_init(&b, ctx);
	ir_builder_before(&b, ir_block_terminator(body));
	b.loc = loop->loc;
	IrValue *a1 = ir_binary(&b, OP_ADD, aslot, ir_const_int(&b, i32, 1));
	IrValue *next =
		ir_select(&b, ir_cmp(&b, "eq", a1, ir_const_int(&b, i32, st - 1)), ir_const_int(&b, i32, 0), a1);
	ir_builder_before(&b, loop);
	IrValue *init = ir_const_int(&b, i32, 0);
	for (int i = 0; i < n; i++)
		ir_op_set_operand(reads[i], 0, aslot);
	ir_op_set_operand(c, 1, aslot);
	for (IrOp *op = loop->parent->first; op; op = op->next)
		if (op->opc == OP_ASYNC_COPY && names_buffer(op, buf))
			ir_op_set_int(ctx, op, "stages", st - 1);
	ir_op_set_int(ctx, c, "stages", st - 1);
	ir_for_add_carried(f, loop, 1, &init, &next);
}

/* CTRITON_RS_READS_FIRST=0: each step's A read and cast right before its
 * MMA; =2: reads first for an A of any width (to time the narrow ones);
 * part of the cache key */
static int reads_first(void)
{
	const char *e = getenv("CTRITON_RS_READS_FIRST");
	if (e && e[0] == '0')
		return 0;
	return e && e[0] == '2' ? 2 : 1;
}

/* Whether the raw registers of every step's A (rd's whole tile) fit beside
 * the accumulator: at most 160 32-bit registers a thread for the two
 * (fp32 A at 128x256x64 with 8 warps: 128 + 32, 199 -> 208 registers; at
 * 128x128x64 with 4 warps, 128 + 64, ptxas spilled 168 bytes). */
static bool read_first_fits(const IrOp *dot, const IrOp *rd, int threads, int mode)
{
	const IrType *ct = dot->res[0].type, *at = rd->res[0].type;
	int bits = ir_type_bits(ir_scalar(at));
	/* timed for a 32-bit A (fp32 activations) and an 8-bit one (int8
	 * cast to fp16, 0.98x -> 1.18x of Triton at 128x128x64 w4); a 16-bit
	 * one keeps the old order until timed (mode 2 takes it) */
	if (bits == 16 && mode != 2)
		return false;
	int64_t a_regs = (at->numel / threads * bits + 31) / 32;
	return ct->numel / threads + a_regs <= 160;
}

/* Step j's chain on its read r of A, its B (K rows j k .. of B's slot) and
 * its MMA, chained on acc, before dot; returns the step's accumulator. */
static IrValue *a_step(IrFunc *f, IrOp *dot, IrOp *bd, IrOp *r, IrOp **chain, int nchain, IrValue *acc, int j,
		       int64_t k, int64_t K, int S)
{
	IrCtx *ctx = f->module->ctx;
	IrValue *x = &r->res[0];
	for (int i = 0; i < nchain; i++) {
		IrOp *op = chain[i];
		IrValue *ops[8];
		for (int q = 0; q < op->nops && q < 8; q++) {
			IrValue *v = op->ops[q];
			IrOp *d = v->def;
			if (d && (d->opc == OP_CONSTANT || d->opc == OP_SPLAT))
				ops[q] = &clone_before(f, dot, d, d->ops, sliced(ctx, v->type, 1, k))->res[0];
			else
				ops[q] = x;
		}
		x = &clone_before(f, dot, op, ops, sliced(ctx, op->res[0].type, 1, k))->res[0];
	}
	IrOp *bj = clone_before(f, dot, bd, bd->ops, sliced(ctx, bd->res[0].type, 0, k));
	ir_op_set_int(ctx, bj, "k0", j * k);
	ir_op_set_int(ctx, bj, "kfull", K);
	IrValue *dops[3] = {x, &bj->res[0], acc};
	IrOp *dj = clone_before(f, dot, dot, dops, dot->res[0].type);
	ir_op_set_int(ctx, dj, "rs_pending", S - 1);
	return &dj->res[0];
}

static bool slice_loop(IrFunc *f, IrOp *loop, int threads)
{
	IrCtx *ctx = f->module->ctx;
	IrBlock *body = loop->regions[0];
	if (ir_op_int(loop, "wgmma_inflight", 0) || ir_op_int(loop, "ws", 0))
		return false;
	IrOp *chain[MAX_CHAIN], *rd = NULL;
	int nchain = 0, S = 0;
	IrOp *dot = rs_dot(f, body, chain, &nchain, &rd, &S);
	if (!dot)
		return false;
	/* an accumulator of more than 128 registers a thread leaves no room
	 * for S - 1 steps of A in flight (128x256 with 4 warps: ptxas spilled
	 * 4.9 KB instead of 2.3 KB) */
	if (dot->res[0].type->numel > 128 * (int64_t)threads)
		return false;
	IrOp *bd = dot->ops[1]->def;
	int64_t K = dot->ops[0]->type->shape[1], k = K / S;
	IrValue *acc = dot->ops[2];
	IrOp *reads[MAX_STEPS];
	IrBuilder b;
	ir_builder_init(&b, ctx);
	/* reads_first: every step's read of A from its slot before the first
	 * MMA, each step's chain (the registers its MMA reads) right before
	 * that MMA; else each step's read too */
	int rf_mode = reads_first();
	bool rf = nchain > 0 && rf_mode && read_first_fits(dot, rd, threads, rf_mode);
	for (int j = 0; j < S; j++) {
		IrOp *r = clone_before(f, dot, rd, rd->ops, sliced(ctx, rd->res[0].type, 1, k));
		ir_op_set_int(ctx, r, "k0", j * k);
		ir_op_set_int(ctx, r, "kfull", K);
		reads[j] = r;
		if (!rf)
			acc = a_step(f, dot, bd, r, chain, nchain, acc, j, k, K, S);
	}
	for (int j = 0; rf && j < S; j++)
		acc = a_step(f, dot, bd, reads[j], chain, nchain, acc, j, k, K, S);
	ir_replace_all_uses(f, &dot->res[0], acc);
	ir_op_unlink(dot);
	for (int i = nchain - 1; i >= 0; i--)
		ir_op_unlink(chain[i]);
	ir_op_unlink(rd);
	ir_op_unlink(bd);
	/* S - 1 groups stay in flight across the back edge; the copies
	 * overwrite slots the previous iteration's MMAs read */
	ir_op_set_int(ctx, loop, "wgmma_inflight", 1);
	IrOp *first = NULL;
	for (IrOp *op = body->first; op && !first; op = op->next)
		if (op->opc == OP_ASYNC_COPY)
			first = op;
	ir_builder_before(&b, first);
	b.loc = loop->loc;
	IrOp *bar = ir_build(&b, OP_BARRIER, 0, NULL, 0, NULL, 0);
	ir_op_set_int(ctx, bar, "wgmma_pending", S - 1);
	one_slot_fewer(f, loop, reads, S);
	return true;
}

/* A conversion staging a 32-bit B of a warpgroup MMA (tf32) in shared
 * memory, of at most 32 KiB: a pair of them adds at most that to the
 * kernel's scratch. */
static bool b_staging(const IrOp *op)
{
	const IrType *t = op->res[0].type;
	return op->opc == OP_CONVERT_LAYOUT && an_wgmma_smem_operand(op) && t->layout->opidx == 1 &&
	       ir_type_bits(ir_scalar(t)) == 32 && t->numel * 4 <= 32 * 1024;
}

/* Whether v is defined before op in op's block (or outside it). */
static bool defined_before(const IrValue *v, const IrOp *op)
{
	const IrBlock *blk = op->parent;
	if (v->def ? v->def->parent != blk : v->owner != blk)
		return true;
	if (!v->def)
		return true;
	for (const IrOp *x = blk->first; x && x != op; x = x->next)
		if (x == v->def)
			return true;
	return false;
}

/* Two tf32 B tiles staged for warpgroup MMAs in one block (a tf32x3 dot's
 * big and small halves of B), the second after the first's dot: the second
 * moves up beside the first, so that both are written before one barrier
 * (an_staged_pair), as Triton stores both halves before its MMAs. Measured
 * statically (ptxas, sm_90a): tf32x3 at 64x64x32 with 4 warps went from
 * 191 registers to 158 (Triton 144), 128x128x32 with 8 warps from 232 to
 * 200 (Triton 209). */
static void pair_b_stagings(IrBlock *blk)
{
	for (IrOp *x = blk->first; x; x = x->next) {
		if (!b_staging(x) || an_staged_pair(x) || (x->prev && an_staged_pair(x->prev)))
			continue;
		for (IrOp *y = x->next; y && !y->nregions && y->opc != OP_BARRIER; y = y->next) {
			if (!b_staging(y))
				continue;
			if (defined_before(y->ops[0], x)) {
				ir_op_unlink(y);
				ir_block_insert_before(blk, x->next, y);
			}
			break;
		}
	}
}

static void walk(IrFunc *f, IrBlock *blk, int threads)
{
	for (IrOp *op = blk->first; op; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			walk(f, op->regions[r], threads);
		if (op->opc == OP_FOR) {
			pair_b_stagings(op->regions[0]);
			slice_loop(f, op, threads);
		}
	}
}

void an_slice_register_dots(IrFunc *f, const AnGpuOptions *o)
{
	if (o->arch < 90 || !rs_slices_on())
		return;
	walk(f, f->body, o->num_warps * o->warp_size);
}
