/* call.c: calls of noinline functions on the GPU: the call graph, the
 * layouts at call boundaries, and the shared memory a callee needs.
 *
 * The GPU passes run on every function the kernel reaches. an_call_order
 * lists them callees first (a post-order walk of the call graph from the
 * kernel), so that allocation knows a callee's shared bytes before it
 * places the call; callers come first when walked backwards, so that axis
 * info can meet what every call site knows of an argument before the
 * callee is analysed. Recursion is an error (Triton has none either).
 *
 * Layouts at calls: a block that crosses a call (an argument or a result)
 * has the canonical layout an_call_type gives it, a function of its shape,
 * element type and the number of warps only: the blocked layout a
 * contiguous row-major, 16-byte-aligned access of that block would get (up
 * to 128 bits per thread along the last dim, lanes then warps filling the
 * dims from the last). Caller and callee decide it alone and agree, each
 * function keeps its own per-function layout assignment, one callee serves
 * every call site, and the conversions it costs are the caller's and the
 * callee's own convert_layout ops (none for a value loaded contiguously).
 * Triton does the same with its default blocked layout.
 *
 * Shared memory: a callee's scratch (its conversions, reductions, FMA dots,
 * and its own calls) is allocated by liveness within the callee, starting
 * at a base the caller passes; an_allocate_shared records the callee's
 * total as its "shared" attribute, and the caller treats the call as a
 * scratch user of that many bytes (live while the call runs), so the
 * callee's buffers never overlap what the caller keeps live across it.
 */
#include "analysis.h"

#include <stdlib.h>
#include <string.h>

IrFunc *an_callee(const IrOp *call)
{
	if (call->opc != OP_CALL || !call->parent || !call->parent->func)
		return NULL;
	const char *name = ir_op_str(call, "callee", NULL);
	return name ? ir_module_find(call->parent->func->module, name) : NULL;
}

typedef struct Order {
	IrCtx *ctx;
	IrFunc **funcs;
	char *state; /* by module index: 0 unvisited, 1 on the walk's stack, 2 done */
	IrModule *m;
	int n;
	IrError *err;
} Order;

static int func_index(const IrModule *m, const IrFunc *f)
{
	for (int i = 0; i < m->nfuncs; i++)
		if (m->funcs[i] == f)
			return i;
	return -1;
}

static void visit_func(Order *o, IrFunc *f);

static void visit_calls(Order *o, IrBlock *b)
{
	for (IrOp *op = b->first; op && !o->err; op = op->next) {
		for (int r = 0; r < op->nregions; r++)
			visit_calls(o, op->regions[r]);
		if (op->opc != OP_CALL)
			continue;
		IrFunc *g = an_callee(op);
		int gi = g ? func_index(o->m, g) : -1;
		if (gi < 0) {
			o->err = ir_error(o->ctx, IR_ERR_VERIFY, op->loc, "call of @%s, not a function of the module",
					  ir_op_str(op, "callee", "?"));
			return;
		}
		if (o->state[gi] == 1) {
			o->err = ir_error(o->ctx, IR_ERR_VALUE, op->loc,
					  "recursive call of @%s: noinline functions may not call themselves", g->name);
			return;
		}
		if (o->state[gi] == 0)
			visit_func(o, g);
	}
}

static void visit_func(Order *o, IrFunc *f)
{
	int i = func_index(o->m, f);
	o->state[i] = 1;
	visit_calls(o, f->body);
	o->state[i] = 2;
	o->funcs[o->n++] = f;
}

IrError *an_call_order(IrFunc *kernel, IrFunc ***funcs, int *n)
{
	IrModule *m = kernel->module;
	Order o = {m->ctx, NULL, NULL, m, 0, NULL};
	o.funcs = ir_alloc(m->ctx, sizeof(IrFunc *) * (size_t)(m->nfuncs + 1));
	o.state = ir_alloc(m->ctx, (size_t)m->nfuncs + 1);
	visit_func(&o, kernel);
	*funcs = o.funcs;
	*n = o.err ? 0 : o.n;
	return o.err;
}

const IrType *an_call_type(IrCtx *ctx, const IrType *t, const AnGpuOptions *o)
{
	if (!ir_is_block(t))
		return t;
	int rank = t->rank, spt[IR_MAX_RANK];
	for (int d = 0; d < rank; d++)
		spt[d] = 1;
	int bits = ir_type_bits(ir_scalar(t));
	int64_t vec = bits >= 8 ? 128 / bits : 16;
	int64_t per_thread = t->numel / ((int64_t)o->num_warps * o->warp_size);
	if (vec > per_thread)
		vec = per_thread;
	if (vec > t->shape[rank - 1])
		vec = t->shape[rank - 1];
	spt[rank - 1] = vec < 1 ? 1 : (int)vec;
	return ir_type_with_layout(ctx, t, an_blocked_layout(ctx, rank, t->shape, spt, NULL, o->num_warps, o->warp_size));
}

int64_t an_func_shared(const IrFunc *f)
{
	const IrAttr *a = f ? ir_find_attr(f->nattrs, f->attrs, "shared") : NULL;
	return a && a->kind == ATTR_INT ? a->i : 0;
}

static bool block_uses_shared(const IrBlock *b, const AnGpuOptions *o, int depth);

static bool op_uses_shared(const IrOp *op, const AnGpuOptions *o, int depth)
{
	if (op->opc == OP_CALL) {
		IrFunc *g = an_callee(op);
		return g && depth < 64 && (an_func_shared(g) > 0 || block_uses_shared(g->body, o, depth + 1));
	}
	if (an_scratch_bytes(op, o) > 0 || an_tile_buffer_op(op))
		return true;
	for (int r = 0; r < op->nregions; r++)
		if (block_uses_shared(op->regions[r], o, depth))
			return true;
	return false;
}

static bool block_uses_shared(const IrBlock *b, const AnGpuOptions *o, int depth)
{
	for (const IrOp *op = b->first; op; op = op->next)
		if (op_uses_shared(op, o, depth))
			return true;
	return false;
}

bool an_uses_shared(const IrOp *op, const AnGpuOptions *o)
{
	return op_uses_shared(op, o, 0);
}
