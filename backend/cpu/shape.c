/* shape.c: block creation and reshaping ops, reductions, scans and dot on
 * the CPU. Blocks are row-major buffers, so expand_dims and reshape are free
 * (the same buffer), broadcast/trans/gather are loop nests with per-dim
 * strides (0 on broadcast dims), and reduce/scan view their operand as
 * [outer, axis, inner] so that the innermost loop stays contiguous. The
 * combiner region of reduce/scan is inlined once, inside the loop, on scalar
 * values. dot converts its operands to the compute type (f32 for floats of
 * up to 32 bits, f64, i32 or i64) and runs register tiles over them.
 */
#include <string.h>

#include "backend/cpu/cpu.h"

typedef struct Nest {
	int rank;
	CgLoop l[IR_MAX_RANK];
	LLVMValueRef idx[IR_MAX_RANK];
} Nest;

static void nest_begin(Cg *cg, Nest *n, int rank, const int64_t *shape)
{
	n->rank = rank;
	for (int d = 0; d < rank; d++)
		n->idx[d] = cg_loop_begin(cg, &n->l[d], cg_i64(cg, shape[d]));
}

static void nest_end(Cg *cg, Nest *n)
{
	for (int d = n->rank - 1; d >= 0; d--)
		cg_loop_end(cg, &n->l[d]);
}

static LLVMValueRef nest_lin(Cg *cg, const Nest *n, const int64_t *strides)
{
	LLVMValueRef s = cg_i64(cg, 0);
	for (int d = 0; d < n->rank; d++)
		if (strides[d])
			s = LLVMBuildNSWAdd(cg->b, s,
					    LLVMBuildNSWMul(cg->b, n->idx[d], cg_i64(cg, strides[d]), ""), "");
	return s;
}

static void row_major(const IrType *t, int64_t *st)
{
	int64_t s = 1;
	for (int d = t->rank - 1; d >= 0; d--) {
		st[d] = s;
		s *= t->shape[d];
	}
}

static const IrType *flat_type(Cg *cg, const IrType *elem, int64_t n)
{
	return ir_type_block(cg->ictx, elem, 1, &n, NULL);
}

static void lower_broadcast(Cg *cg, IrOp *op)
{
	const IrType *st = op->ops[0]->type, *rt = op->res[0].type;
	CgVal v = cg_get(cg, op->ops[0]);
	if (cg_uniform(v) || st->numel == rt->numel) {
		cg_set(cg, &op->res[0], v.kind == CV_SCALAR ? cg_splat(v.v) : v);
		return;
	}
	if (!ir_is_block(st) || st->rank != rt->rank) {
		cg_fail(cg, op, "broadcast: rank mismatch");
		return;
	}
	int64_t ss[IR_MAX_RANK], rs[IR_MAX_RANK];
	row_major(st, ss);
	row_major(rt, rs);
	for (int d = 0; d < st->rank; d++)
		if (st->shape[d] != rt->shape[d])
			ss[d] = 0;
	LLVMValueRef buf = cg_newbuf(cg, rt);
	Nest n;
	nest_begin(cg, &n, rt->rank, rt->shape);
	LLVMValueRef x = cg_elem(cg, v, st, nest_lin(cg, &n, ss));
	cg_store_elem(cg, buf, rt, nest_lin(cg, &n, rs), x);
	nest_end(cg, &n);
	cg_set(cg, &op->res[0], cg_bufv(buf));
}

static void lower_trans(Cg *cg, IrOp *op)
{
	const IrType *st = op->ops[0]->type, *rt = op->res[0].type;
	CgVal v = cg_get(cg, op->ops[0]);
	const IrAttr *ord = ir_op_attr(op, "order");
	if (cg_uniform(v)) {
		cg_set(cg, &op->res[0], v);
		return;
	}
	if (!ord || ord->kind != ATTR_INTS || ord->n != rt->rank) {
		cg_fail(cg, op, "trans: needs an order of %d dims", rt->rank);
		return;
	}
	int64_t ss[IR_MAX_RANK], ps[IR_MAX_RANK], rs[IR_MAX_RANK];
	row_major(st, ss);
	row_major(rt, rs);
	for (int i = 0; i < rt->rank; i++) {
		if (ord->ints[i] < 0 || ord->ints[i] >= st->rank) {
			cg_fail(cg, op, "trans: bad order");
			return;
		}
		ps[i] = ss[ord->ints[i]];
	}
	LLVMValueRef buf = cg_newbuf(cg, rt);
	Nest n;
	nest_begin(cg, &n, rt->rank, rt->shape);
	LLVMValueRef x = cg_elem(cg, v, st, nest_lin(cg, &n, ps));
	cg_store_elem(cg, buf, rt, nest_lin(cg, &n, rs), x);
	nest_end(cg, &n);
	cg_set(cg, &op->res[0], cg_bufv(buf));
}

static void lower_gather(Cg *cg, IrOp *op)
{
	const IrType *st = op->ops[0]->type, *it = op->ops[1]->type, *rt = op->res[0].type;
	CgVal src = cg_get(cg, op->ops[0]), idx = cg_get(cg, op->ops[1]);
	int64_t axis = ir_op_int(op, "axis", 0);
	if (axis < 0 || axis >= st->rank || it->rank != st->rank) {
		cg_fail(cg, op, "gather: bad axis or rank");
		return;
	}
	int64_t ss[IR_MAX_RANK], is[IR_MAX_RANK];
	row_major(st, ss);
	row_major(it, is);
	int64_t axs = ss[axis];
	ss[axis] = 0;
	const IrType *ie = ir_scalar(it);
	LLVMValueRef buf = cg_newbuf(cg, rt);
	Nest n;
	nest_begin(cg, &n, it->rank, it->shape);
	LLVMValueRef li = nest_lin(cg, &n, is);
	LLVMValueRef k = cg_elem(cg, idx, it, li);
	k = ir_is_signed(ie) ? LLVMBuildSExt(cg->b, k, cg->t_i64, "") : LLVMBuildZExt(cg->b, k, cg->t_i64, "");
	if (ir_type_bits(ie) == 64)
		k = cg_elem(cg, idx, it, li);
	/* out-of-range indices are clamped so that memory stays safe */
	LLVMTypeRef i64 = cg->t_i64;
	LLVMValueRef lim[2] = {k, cg_i64(cg, 0)};
	k = cg_intrinsic(cg, "llvm.smax", &i64, 1, lim, 2);
	lim[0] = k;
	lim[1] = cg_i64(cg, st->shape[axis] - 1);
	k = cg_intrinsic(cg, "llvm.smin", &i64, 1, lim, 2);
	LLVMValueRef so = LLVMBuildAdd(cg->b, nest_lin(cg, &n, ss),
				       LLVMBuildMul(cg->b, k, cg_i64(cg, axs), ""), "");
	cg_store_elem(cg, buf, rt, li, cg_elem(cg, src, st, so));
	nest_end(cg, &n);
	cg_set(cg, &op->res[0], cg_bufv(buf));
}

static void lower_histogram(Cg *cg, IrOp *op)
{
	const IrType *xt = op->ops[0]->type, *rt = op->res[0].type;
	const IrType *xe = ir_scalar(xt);
	CgVal x = cg_get(cg, op->ops[0]);
	CgVal mask = op->nops > 1 ? cg_get(cg, op->ops[1]) : (CgVal){CV_NONE, NULL, NULL};
	int64_t bins = rt->numel;
	LLVMValueRef buf = cg_newbuf(cg, rt);
	cg_copy_to(cg, buf, cg_splat(cg_i32(cg, 0)), rt);
	CgLoop l;
	LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, xt->numel));
	LLVMValueRef v = cg_elem(cg, x, xt, i);
	if (ir_type_bits(xe) < 64)
		v = ir_is_signed(xe) ? LLVMBuildSExt(cg->b, v, cg->t_i64, "") : LLVMBuildZExt(cg->b, v, cg->t_i64, "");
	LLVMValueRef ok = LLVMBuildICmp(cg->b, LLVMIntULT, v, cg_i64(cg, bins), "");
	if (mask.kind != CV_NONE)
		ok = LLVMBuildAnd(cg->b, ok, cg_elem(cg, mask, op->ops[1]->type, i), "");
	LLVMBasicBlockRef yes = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "hist.add");
	LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "hist.next");
	LLVMBuildCondBr(cg->b, ok, yes, next);
	LLVMPositionBuilderAtEnd(cg->b, yes);
	LLVMValueRef c = cg_elem(cg, cg_bufv(buf), rt, v);
	cg_store_elem(cg, buf, rt, v, LLVMBuildAdd(cg->b, c, cg_i32(cg, 1), ""));
	LLVMBuildBr(cg->b, next);
	LLVMPositionBuilderAtEnd(cg->b, next);
	cg_loop_end(cg, &l);
	cg_set(cg, &op->res[0], cg_bufv(buf));
}

void cg_lower_shape(Cg *cg, IrOp *op)
{
	const IrType *rt = op->res[0].type;
	switch (op->opc) {
	case OP_MAKE_RANGE: {
		/* kept symbolic: element i is start + i */
		cg_set(cg, &op->res[0], cg_aff(cg_i32(cg, ir_op_int(op, "start", 0))));
		return;
	}
	case OP_BROADCAST: lower_broadcast(cg, op); return;
	case OP_EXPAND_DIMS:
	case OP_RESHAPE: {
		CgVal v = cg_get(cg, op->ops[0]);
		cg_set(cg, &op->res[0], v.kind == CV_SCALAR ? cg_splat(v.v) : v);
		return;
	}
	case OP_TRANS: lower_trans(cg, op); return;
	case OP_CAT: {
		const IrType *at = op->ops[0]->type, *bt = op->ops[1]->type;
		LLVMValueRef buf = cg_newbuf(cg, rt);
		cg_copy_to(cg, buf, cg_get(cg, op->ops[0]), at);
		LLVMValueRef off = cg_i64(cg, at->numel);
		LLVMValueRef hi = LLVMBuildInBoundsGEP2(cg->b, cg_sty(cg, ir_scalar(rt)), buf, &off, 1, "");
		cg_copy_to(cg, hi, cg_get(cg, op->ops[1]), bt);
		cg_set(cg, &op->res[0], cg_bufv(buf));
		return;
	}
	case OP_JOIN: {
		const IrType *at = op->ops[0]->type;
		CgVal a = cg_get(cg, op->ops[0]), b = cg_get(cg, op->ops[1]);
		LLVMValueRef buf = cg_newbuf(cg, rt);
		CgLoop l;
		LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, at->numel));
		LLVMValueRef j = LLVMBuildNSWMul(cg->b, i, cg_i64(cg, 2), "");
		cg_store_elem(cg, buf, rt, j, cg_elem(cg, a, at, i));
		j = LLVMBuildNSWAdd(cg->b, j, cg_i64(cg, 1), "");
		cg_store_elem(cg, buf, rt, j, cg_elem(cg, b, op->ops[1]->type, i));
		cg_loop_end(cg, &l);
		cg_set(cg, &op->res[0], cg_bufv(buf));
		return;
	}
	case OP_SPLIT: {
		const IrType *xt = op->ops[0]->type;
		CgVal x = cg_get(cg, op->ops[0]);
		if (op->nres != 2) {
			cg_fail(cg, op, "split: needs 2 results");
			return;
		}
		if (!ir_is_block(rt)) { /* split of a block<2>: two scalars */
			cg_set(cg, &op->res[0], cg_scalar(cg_elem(cg, x, xt, cg_i64(cg, 0))));
			cg_set(cg, &op->res[1], cg_scalar(cg_elem(cg, x, xt, cg_i64(cg, 1))));
			return;
		}
		if (cg_uniform(x)) {
			cg_set(cg, &op->res[0], x);
			cg_set(cg, &op->res[1], x);
			return;
		}
		LLVMValueRef b0 = cg_newbuf(cg, rt), b1 = cg_newbuf(cg, op->res[1].type);
		CgLoop l;
		LLVMValueRef i = cg_loop_begin(cg, &l, cg_i64(cg, rt->numel));
		LLVMValueRef j = LLVMBuildNSWMul(cg->b, i, cg_i64(cg, 2), "");
		cg_store_elem(cg, b0, rt, i, cg_elem(cg, x, xt, j));
		j = LLVMBuildNSWAdd(cg->b, j, cg_i64(cg, 1), "");
		cg_store_elem(cg, b1, rt, i, cg_elem(cg, x, xt, j));
		cg_loop_end(cg, &l);
		cg_set(cg, &op->res[0], cg_bufv(b0));
		cg_set(cg, &op->res[1], cg_bufv(b1));
		return;
	}
	case OP_GATHER: lower_gather(cg, op); return;
	case OP_HISTOGRAM: lower_histogram(cg, op); return;
	default: cg_fail(cg, op, "not a shape op"); return;
	}
}

/* Inlines the combiner region on lhs[n], rhs[n]; results in out[n]. */
static bool combine(Cg *cg, IrOp *op, int n, LLVMValueRef *lhs, LLVMValueRef *rhs, LLVMValueRef *out)
{
	IrBlock *r = op->regions[0];
	if (r->nargs != 2 * n) {
		cg_fail(cg, op, "%s: combiner needs %d arguments", ir_opinfo(op->opc)->name, 2 * n);
		return false;
	}
	for (int k = 0; k < n; k++) {
		cg_set(cg, r->args[k], cg_scalar(lhs[k]));
		cg_set(cg, r->args[n + k], cg_scalar(rhs[k]));
	}
	IrOp *y = cg_lower_block(cg, r);
	if (cg->err)
		return false;
	if (!y || y->nops != n) {
		cg_fail(cg, op, "%s: combiner must yield %d values", ir_opinfo(op->opc)->name, n);
		return false;
	}
	for (int k = 0; k < n; k++)
		out[k] = cg_get(cg, y->ops[k]).v;
	return true;
}

/* Reduction along a contiguous axis (inner == 1) of A = k * RED_LANES
 * elements: RED_LANES partial results, lane j combining elements j, j + W,
 * j + 2W, ... (a loop over lanes that vectorizes), then the lanes combined in
 * order. The combiner must be associative and commutative, as on the GPU,
 * where the order is a tree. acc[k]: outer results per operand. */
enum { RED_LANES = BE_CPU_REDUCE_LANES };

static void reduce_lanes(Cg *cg, IrOp *op, int n, CgVal *x, const IrType **xt, LLVMValueRef *acc,
			 const IrType **at, int64_t outer, int64_t A)
{
	LLVMValueRef part[8];
	const IrType *pt[8];
	for (int k = 0; k < n; k++) {
		pt[k] = flat_type(cg, ir_scalar(xt[k]), RED_LANES);
		part[k] = cg_newbuf(cg, pt[k]);
	}
	LLVMValueRef W = cg_i64(cg, RED_LANES);
	CgLoop lo, la, lj;
	LLVMValueRef o = cg_loop_begin(cg, &lo, cg_i64(cg, outer));
	LLVMValueRef obase = LLVMBuildNSWMul(cg->b, o, cg_i64(cg, A), "");
	/* lanes start with the first W elements */
	LLVMValueRef j = cg_loop_begin(cg, &lj, W);
	LLVMValueRef xi = LLVMBuildNSWAdd(cg->b, obase, j, "");
	for (int k = 0; k < n; k++)
		cg_store_elem(cg, part[k], pt[k], j, cg_elem(cg, x[k], xt[k], xi));
	cg_loop_end(cg, &lj);
	/* the other A / W - 1 groups */
	LLVMValueRef a = cg_loop_begin(cg, &la, cg_i64(cg, A / RED_LANES - 1));
	LLVMValueRef gbase = LLVMBuildNSWAdd(
		cg->b, obase, LLVMBuildNSWMul(cg->b, LLVMBuildNSWAdd(cg->b, a, cg_i64(cg, 1), ""), W, ""), "");
	j = cg_loop_begin(cg, &lj, W);
	xi = LLVMBuildNSWAdd(cg->b, gbase, j, "");
	LLVMValueRef lhs[8], rhs[8], res[8];
	for (int k = 0; k < n; k++) {
		lhs[k] = cg_elem(cg, cg_bufv(part[k]), pt[k], j);
		rhs[k] = cg_elem(cg, x[k], xt[k], xi);
	}
	if (!combine(cg, op, n, lhs, rhs, res))
		return;
	for (int k = 0; k < n; k++)
		cg_store_elem(cg, part[k], pt[k], j, res[k]);
	cg_loop_end(cg, &lj);
	cg_loop_end(cg, &la);
	/* lanes in order: acc = part[0] op part[1] op ... */
	for (int k = 0; k < n; k++)
		cg_store_elem(cg, acc[k], at[k], o, cg_elem(cg, cg_bufv(part[k]), pt[k], cg_i64(cg, 0)));
	j = cg_loop_begin(cg, &lj, cg_i64(cg, RED_LANES - 1));
	LLVMValueRef jn = LLVMBuildNSWAdd(cg->b, j, cg_i64(cg, 1), "");
	for (int k = 0; k < n; k++) {
		lhs[k] = cg_elem(cg, cg_bufv(acc[k]), at[k], o);
		rhs[k] = cg_elem(cg, cg_bufv(part[k]), pt[k], jn);
	}
	if (!combine(cg, op, n, lhs, rhs, res))
		return;
	for (int k = 0; k < n; k++)
		cg_store_elem(cg, acc[k], at[k], o, res[k]);
	cg_loop_end(cg, &lj);
	cg_loop_end(cg, &lo);
}

void cg_lower_reduce(Cg *cg, IrOp *op, bool scan)
{
	int n = op->nops;
	if (n > 8 || op->nres != n) {
		cg_fail(cg, op, "%s: %d operands (at most 8, one result each)", ir_opinfo(op->opc)->name, n);
		return;
	}
	const IrType *t = op->ops[0]->type;
	int64_t axis = ir_op_int(op, "axis", 0);
	if (!ir_is_block(t) || axis < 0 || axis >= t->rank) {
		cg_fail(cg, op, "%s: bad axis %lld", ir_opinfo(op->opc)->name, (long long)axis);
		return;
	}
	bool rev = scan && ir_op_int(op, "reverse", 0);
	int64_t outer = 1, inner = 1, A = t->shape[axis];
	for (int d = 0; d < axis; d++)
		outer *= t->shape[d];
	for (int d = (int)axis + 1; d < t->rank; d++)
		inner *= t->shape[d];
	CgVal x[8];
	LLVMValueRef acc[8];
	const IrType *at[8], *xt[8];
	for (int k = 0; k < n; k++) {
		x[k] = cg_get_lazy(cg, op->ops[k]);
		xt[k] = op->ops[k]->type;
		at[k] = scan ? xt[k] : flat_type(cg, ir_scalar(xt[k]), outer * inner);
		acc[k] = cg_newbuf(cg, at[k]);
	}
	if (!scan && inner == 1 && A >= 2 * RED_LANES && A % RED_LANES == 0) {
		reduce_lanes(cg, op, n, x, xt, acc, at, outer, A);
		for (int k = 0; k < n && !cg->err; k++) {
			const IrType *rt = op->res[k].type;
			if (ir_is_block(rt))
				cg_set(cg, &op->res[k], cg_bufv(acc[k]));
			else
				cg_set(cg, &op->res[k], cg_scalar(cg_elem(cg, cg_bufv(acc[k]), at[k], cg_i64(cg, 0))));
		}
		return;
	}
	LLVMValueRef vin = cg_i64(cg, inner), vA = cg_i64(cg, A);
	CgLoop lo, la, lj;
	LLVMValueRef o = cg_loop_begin(cg, &lo, cg_i64(cg, outer));
	/* first slice */
	LLVMValueRef a0 = cg_i64(cg, rev ? A - 1 : 0);
	LLVMValueRef obase = LLVMBuildNSWMul(cg->b, o, vA, "");
	LLVMValueRef j = cg_loop_begin(cg, &lj, vin);
	LLVMValueRef xi = LLVMBuildNSWAdd(cg->b, LLVMBuildNSWMul(cg->b, LLVMBuildNSWAdd(cg->b, obase, a0, ""), vin, ""), j, "");
	LLVMValueRef ai = scan ? xi : LLVMBuildNSWAdd(cg->b, LLVMBuildNSWMul(cg->b, o, vin, ""), j, "");
	for (int k = 0; k < n; k++)
		cg_store_elem(cg, acc[k], at[k], ai, cg_elem(cg, x[k], xt[k], xi));
	cg_loop_end(cg, &lj);
	/* the rest of the axis */
	LLVMValueRef a = cg_loop_begin(cg, &la, cg_i64(cg, A - 1));
	LLVMValueRef ax = rev ? LLVMBuildSub(cg->b, cg_i64(cg, A - 2), a, "") : LLVMBuildNSWAdd(cg->b, a, cg_i64(cg, 1), "");
	LLVMValueRef prev = rev ? LLVMBuildNSWAdd(cg->b, ax, cg_i64(cg, 1), "") : a;
	j = cg_loop_begin(cg, &lj, vin);
	xi = LLVMBuildNSWAdd(cg->b, LLVMBuildNSWMul(cg->b, LLVMBuildNSWAdd(cg->b, obase, ax, ""), vin, ""), j, "");
	LLVMValueRef li, si;
	if (scan) {
		li = LLVMBuildNSWAdd(cg->b, LLVMBuildNSWMul(cg->b, LLVMBuildNSWAdd(cg->b, obase, prev, ""), vin, ""), j, "");
		si = xi;
	} else {
		li = si = LLVMBuildNSWAdd(cg->b, LLVMBuildNSWMul(cg->b, o, vin, ""), j, "");
	}
	LLVMValueRef lhs[8], rhs[8], res[8];
	for (int k = 0; k < n; k++) {
		lhs[k] = cg_elem(cg, cg_bufv(acc[k]), at[k], li);
		rhs[k] = cg_elem(cg, x[k], xt[k], xi);
	}
	if (!combine(cg, op, n, lhs, rhs, res))
		return;
	for (int k = 0; k < n; k++)
		cg_store_elem(cg, acc[k], at[k], si, res[k]);
	cg_loop_end(cg, &lj);
	cg_loop_end(cg, &la);
	cg_loop_end(cg, &lo);
	for (int k = 0; k < n; k++) {
		const IrType *rt = op->res[k].type;
		if (ir_is_block(rt))
			cg_set(cg, &op->res[k], cg_bufv(acc[k]));
		else
			cg_set(cg, &op->res[k], cg_scalar(cg_elem(cg, cg_bufv(acc[k]), at[k], cg_i64(cg, 0))));
	}
}

/* dot as register tiles, on buffers of the compute type (f32, f64, i32 or
 * i64): acc (B x M x N) += a (B x M x K) @ bm (B x K x N). A tile of up to
 * TR rows by up to TV vectors of L columns (a 64-byte vector of elements;
 * the last vector may be narrower) keeps its accumulators in vector
 * registers through the whole k loop: per k, a broadcast of a per row, a
 * load of b per vector and rows x vectors multiply-adds. Full tiles come
 * first; the rows left over (M % TR) and the columns left over
 * (N % (TV * L)) get tiles of their own size. Each element still sums its
 * k terms in order, as the plain loop nest would. */
enum { TR = 8, TV = 2 };

typedef struct DotTiles {
	LLVMValueRef a, bm, acc;
	LLVMTypeRef et; /* element */
	bool isfloat, fuse;
	int L;          /* elements of a full vector */
	unsigned esize; /* bytes of an element */
	int64_t M, K, N;
} DotTiles;

static LLVMValueRef dot_splat(Cg *cg, LLVMValueRef x, int w)
{
	LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(x), (unsigned)w);
	LLVMValueRef v = LLVMBuildInsertElement(cg->b, LLVMGetPoison(vt), x, cg_i32(cg, 0), "");
	return LLVMBuildShuffleVector(cg->b, v, LLVMGetPoison(vt),
				      LLVMConstNull(LLVMVectorType(cg->t_i32, (unsigned)w)), "");
}

/* One tile: nr rows from row row0 of batch bi, nv vectors of w[c] columns
 * from column col0. */
static void dot_tile(Cg *cg, const DotTiles *d, LLVMValueRef bi, LLVMValueRef row0, LLVMValueRef col0, int nr, int nv,
		     const int *w)
{
	LLVMBuilderRef b = cg->b;
	LLVMTypeRef vt[TV];
	for (int c = 0; c < nv; c++)
		vt[c] = LLVMVectorType(d->et, (unsigned)w[c]);
	LLVMValueRef bbase = LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, bi, cg_i64(cg, d->K * d->N), ""), col0, "");
	LLVMValueRef arow[TR], cptr[TR][TV], init[TR][TV];
	for (int r = 0; r < nr; r++) {
		LLVMValueRef row = LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, bi, cg_i64(cg, d->M), ""),
						   LLVMBuildNSWAdd(b, row0, cg_i64(cg, r), ""), "");
		arow[r] = LLVMBuildNSWMul(b, row, cg_i64(cg, d->K), "");
		LLVMValueRef c0 = LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, row, cg_i64(cg, d->N), ""), col0, "");
		for (int c = 0; c < nv; c++) {
			LLVMValueRef idx = LLVMBuildNSWAdd(b, c0, cg_i64(cg, (int64_t)c * d->L), "");
			cptr[r][c] = LLVMBuildInBoundsGEP2(b, d->et, d->acc, &idx, 1, "");
			init[r][c] = LLVMBuildLoad2(b, vt[c], cptr[r][c], "");
			LLVMSetAlignment(init[r][c], d->esize);
		}
	}
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(b);
	LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "dot.k");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "dot.kbody");
	LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "dot.kend");
	LLVMBuildBr(b, head);
	LLVMPositionBuilderAtEnd(b, head);
	LLVMValueRef k = LLVMBuildPhi(b, cg->t_i64, "k");
	LLVMValueRef zero = cg_i64(cg, 0);
	LLVMAddIncoming(k, &zero, &pre, 1);
	LLVMValueRef cur[TR][TV];
	for (int r = 0; r < nr; r++)
		for (int c = 0; c < nv; c++) {
			cur[r][c] = LLVMBuildPhi(b, vt[c], "acc");
			LLVMAddIncoming(cur[r][c], &init[r][c], &pre, 1);
		}
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, k, cg_i64(cg, d->K), ""), body, exit);
	LLVMPositionBuilderAtEnd(b, body);
	LLVMValueRef bv[TV];
	LLVMValueRef brow = LLVMBuildNSWAdd(b, bbase, LLVMBuildNSWMul(b, k, cg_i64(cg, d->N), ""), "");
	for (int c = 0; c < nv; c++) {
		LLVMValueRef idx = LLVMBuildNSWAdd(b, brow, cg_i64(cg, (int64_t)c * d->L), "");
		bv[c] = LLVMBuildLoad2(b, vt[c], LLVMBuildInBoundsGEP2(b, d->et, d->bm, &idx, 1, ""), "");
		LLVMSetAlignment(bv[c], d->esize);
	}
	LLVMValueRef next[TR][TV];
	for (int r = 0; r < nr; r++) {
		LLVMValueRef idx = LLVMBuildNSWAdd(b, arow[r], k, "");
		LLVMValueRef x = LLVMBuildLoad2(b, d->et, LLVMBuildInBoundsGEP2(b, d->et, d->a, &idx, 1, ""), "");
		LLVMValueRef xv[TV];
		for (int c = 0; c < nv; c++) {
			xv[c] = c > 0 && w[c] == w[c - 1] ? xv[c - 1] : dot_splat(cg, x, w[c]);
			if (!d->isfloat) {
				next[r][c] = LLVMBuildAdd(b, cur[r][c], LLVMBuildMul(b, xv[c], bv[c], ""), "");
			} else if (d->fuse) {
				LLVMValueRef args[3] = {xv[c], bv[c], cur[r][c]};
				next[r][c] = cg_intrinsic(cg, "llvm.fmuladd", &vt[c], 1, args, 3);
			} else {
				next[r][c] = LLVMBuildFAdd(b, cur[r][c], LLVMBuildFMul(b, xv[c], bv[c], ""), "");
			}
		}
	}
	LLVMValueRef k1 = LLVMBuildNSWAdd(b, k, cg_i64(cg, 1), "");
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
	LLVMBuildBr(b, head);
	LLVMAddIncoming(k, &k1, &latch, 1);
	for (int r = 0; r < nr; r++)
		for (int c = 0; c < nv; c++)
			LLVMAddIncoming(cur[r][c], &next[r][c], &latch, 1);
	LLVMPositionBuilderAtEnd(b, exit);
	for (int r = 0; r < nr; r++)
		for (int c = 0; c < nv; c++)
			LLVMSetAlignment(LLVMBuildStore(b, cur[r][c], cptr[r][c]), d->esize);
}

/* The tiles of one batch's M x N (full ones in loops, then the leftovers). */
static void dot_tiles(Cg *cg, const DotTiles *d, int64_t Bt)
{
	int64_t span = (int64_t)TV * d->L;
	int64_t nfull = d->N / span, mfull = d->M / TR;
	int wfull[TV], wrest[TV], nrest = 0;
	for (int c = 0; c < TV; c++)
		wfull[c] = d->L;
	for (int64_t r = d->N % span; r > 0; r -= d->L)
		wrest[nrest++] = (int)(r < d->L ? r : d->L);
	CgLoop lb, lm, ln;
	LLVMValueRef bi = cg_loop_begin(cg, &lb, cg_i64(cg, Bt));
	for (int part = 0; part < 2; part++) {
		int nr = part ? (int)(d->M % TR) : TR;
		if (nr == 0 || (!part && mfull == 0))
			continue;
		LLVMValueRef row0 = cg_i64(cg, mfull * TR);
		if (!part)
			row0 = LLVMBuildNSWMul(cg->b, cg_loop_begin(cg, &lm, cg_i64(cg, mfull)), cg_i64(cg, TR), "");
		if (nfull) {
			LLVMValueRef col0 =
				LLVMBuildNSWMul(cg->b, cg_loop_begin(cg, &ln, cg_i64(cg, nfull)), cg_i64(cg, span), "");
			dot_tile(cg, d, bi, row0, col0, nr, TV, wfull);
			cg_loop_end(cg, &ln);
		}
		if (nrest)
			dot_tile(cg, d, bi, row0, cg_i64(cg, nfull * span), nr, nrest, wrest);
		if (!part)
			cg_loop_end(cg, &lm);
	}
	cg_loop_end(cg, &lb);
}

/* Operand i of dot op as a buffer of n elements of the compute type cte:
 * its own buffer when it already is one, else converted element by element
 * (a lazy operand is computed in that loop). */
static LLVMValueRef dot_operand(Cg *cg, IrOp *op, int i, const IrType *cte, int64_t n)
{
	const IrType *t = op->ops[i]->type, *e = ir_scalar(t);
	CgVal x = cg_get_lazy(cg, op->ops[i]);
	bool same = e == cte || (ir_is_int(e) && ir_is_int(cte) && ir_type_bits(e) == ir_type_bits(cte));
	if (x.kind == CV_BUF && same)
		return x.v;
	LLVMValueRef buf = cg_newbuf(cg, flat_type(cg, cte, n));
	CgLoop l;
	LLVMValueRef j = cg_loop_begin(cg, &l, cg_i64(cg, n));
	LLVMValueRef v = cg_elem(cg, x, t, j);
	cg_store_elem(cg, buf, cte, j, same ? v : cg_convert(cg, op, v, e, cte, false));
	cg_loop_end(cg, &l);
	return buf;
}

/* Whether the dot may accumulate in its accumulator's own buffer: the
 * accumulator is a value carried by a `for` (the loop's fixed buffer), used
 * once, by this dot, in the loop body itself (not in a nested region, which
 * may run the dot more than once per iteration). */
static bool dot_in_place(Cg *cg, IrOp *op, CgVal c)
{
	const IrValue *v = op->ops[2];
	if (c.kind != CV_BUF || v->def || !v->owner || op->parent != v->owner || v->index < 1)
		return false;
	const IrOp *loop = v->owner->parent_op;
	if (!loop || loop->opc != OP_FOR || loop->regions[0] != v->owner)
		return false;
	return v->id >= 0 && v->id < cg->nvals && cg->nuses[v->id] == 1 && v->type == op->res[0].type;
}

void cg_lower_dot(Cg *cg, IrOp *op)
{
	const IrType *at = op->ops[0]->type, *bt = op->ops[1]->type, *ct = op->ops[2]->type;
	const IrType *rt = op->res[0].type;
	if (!ir_is_block(at) || !ir_is_block(bt) || at->rank < 2 || at->rank > 3 || bt->rank != at->rank) {
		cg_fail(cg, op, "dot: operands must be 2-D (or 3-D batched) blocks");
		return;
	}
	int r = at->rank;
	int64_t B = r == 3 ? at->shape[0] : 1;
	int64_t M = at->shape[r - 2], K = at->shape[r - 1], N = bt->shape[r - 1];
	if (bt->shape[r - 2] != K) {
		cg_fail(cg, op, "dot: inner dimensions differ");
		return;
	}
	const IrType *re = ir_scalar(rt);
	const IrType *cte; /* compute type */
	if (ir_is_float(re))
		cte = ir_type(cg->ictx, re->kind == TY_F64 ? TY_F64 : TY_F32);
	else
		cte = ir_type(cg->ictx, ir_type_bits(re) == 64 ? TY_I64 : TY_I32);
	const IrType *acct = flat_type(cg, cte, B * M * N);
	LLVMValueRef av = dot_operand(cg, op, 0, cte, B * M * K);
	LLVMValueRef bv = dot_operand(cg, op, 1, cte, B * K * N);
	CgVal c = cg_get(cg, op->ops[2]);
	const IrType *ce = ir_scalar(ct);
	bool same = cte == re;
	CgLoop l;
	LLVMValueRef acc, i;
	if (same && dot_in_place(cg, op, c)) {
		acc = c.v;
	} else {
		acc = same ? cg_newbuf(cg, rt) : cg_newbuf(cg, acct);
		i = cg_loop_begin(cg, &l, cg_i64(cg, B * M * N));
		cg_store_elem(cg, acc, acct, i, cg_convert(cg, op, cg_elem(cg, c, ct, i), ce, cte, false));
		cg_loop_end(cg, &l);
	}
	DotTiles d = {.a = av, .bm = bv, .acc = acc, .et = cg_sty(cg, cte), .isfloat = ir_is_float(cte),
		      .fuse = cg->opt.enable_fp_fusion, .esize = (unsigned)cg_esize(cte), .M = M, .K = K, .N = N};
	d.L = 64 / (int)d.esize;
	dot_tiles(cg, &d, B);
	if (same) {
		cg_set(cg, &op->res[0], cg_bufv(acc));
		return;
	}
	LLVMValueRef out = cg_newbuf(cg, rt);
	i = cg_loop_begin(cg, &l, cg_i64(cg, B * M * N));
	cg_store_elem(cg, out, rt, i, cg_convert(cg, op, cg_elem(cg, cg_bufv(acc), acct, i), cte, re, false));
	cg_loop_end(cg, &l);
	cg_set(cg, &op->res[0], cg_bufv(out));
}
