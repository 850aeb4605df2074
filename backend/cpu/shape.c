/* shape.c: block creation and reshaping ops, reductions, scans and dot on
 * the CPU. Blocks are row-major buffers, so expand_dims and reshape are free
 * (the same buffer), broadcast/trans/gather are loop nests with per-dim
 * strides (0 on broadcast dims), and reduce/scan view their operand as
 * [outer, axis, inner] so that the innermost loop stays contiguous. The
 * combiner region of reduce/scan is inlined once, inside the loop, on scalar
 * values. dot is an (m, k, n) loop nest accumulating in f32 (or the integer
 * accumulator type).
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

/* f32 dot of buffers as register tiles: MR (8, 4, 2 or 1, the largest
 * dividing M) rows by NB vectors of 16 columns of the accumulator stay in vector registers through the k loop
 * (one broadcast of a, NB loads of b and MR * NB multiply-adds per k), and
 * go back to acc after it. Requires N % 16 == 0. */
static void dot_tiles_f32(Cg *cg, LLVMValueRef a, LLVMValueRef bm, LLVMValueRef acc, int64_t Bt,
			  int64_t M, int64_t K, int64_t N, bool fuse)
{
	enum { L = 16 };
	int MR = M % 8 == 0 ? 8 : M % 4 == 0 ? 4 : M % 2 == 0 ? 2 : 1;
	int NB = N % (2 * L) == 0 ? 2 : 1;
	LLVMBuilderRef b = cg->b;
	LLVMTypeRef f = cg->t_f32, vt = LLVMVectorType(f, L);
	CgLoop lb, lm, ln;
	LLVMValueRef bi = cg_loop_begin(cg, &lb, cg_i64(cg, Bt));
	LLVMValueRef mi = cg_loop_begin(cg, &lm, cg_i64(cg, M / MR));
	LLVMValueRef ni = cg_loop_begin(cg, &ln, cg_i64(cg, N / (L * NB)));
	LLVMValueRef row0 = LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, bi, cg_i64(cg, M), ""),
					    LLVMBuildNSWMul(b, mi, cg_i64(cg, MR), ""), "");
	LLVMValueRef col0 = LLVMBuildNSWMul(b, ni, cg_i64(cg, L * NB), "");
	LLVMValueRef bbase = LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, bi, cg_i64(cg, K * N), ""), col0, "");
	LLVMValueRef arow[8], cptr[8][2], init[8][2];
	for (int r = 0; r < MR; r++) {
		LLVMValueRef row = LLVMBuildNSWAdd(b, row0, cg_i64(cg, r), "");
		arow[r] = LLVMBuildNSWMul(b, row, cg_i64(cg, K), "");
		LLVMValueRef c0 = LLVMBuildNSWAdd(b, LLVMBuildNSWMul(b, row, cg_i64(cg, N), ""), col0, "");
		for (int c = 0; c < NB; c++) {
			LLVMValueRef idx = LLVMBuildNSWAdd(b, c0, cg_i64(cg, c * L), "");
			cptr[r][c] = LLVMBuildInBoundsGEP2(b, f, acc, &idx, 1, "");
			init[r][c] = LLVMBuildLoad2(b, vt, cptr[r][c], "");
			LLVMSetAlignment(init[r][c], 4);
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
	LLVMValueRef cur[8][2];
	for (int r = 0; r < MR; r++)
		for (int c = 0; c < NB; c++) {
			cur[r][c] = LLVMBuildPhi(b, vt, "acc");
			LLVMAddIncoming(cur[r][c], &init[r][c], &pre, 1);
		}
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, k, cg_i64(cg, K), ""), body, exit);
	LLVMPositionBuilderAtEnd(b, body);
	LLVMValueRef bv[2];
	LLVMValueRef brow = LLVMBuildNSWAdd(b, bbase, LLVMBuildNSWMul(b, k, cg_i64(cg, N), ""), "");
	for (int c = 0; c < NB; c++) {
		LLVMValueRef idx = LLVMBuildNSWAdd(b, brow, cg_i64(cg, c * L), "");
		bv[c] = LLVMBuildLoad2(b, vt, LLVMBuildInBoundsGEP2(b, f, bm, &idx, 1, ""), "");
		LLVMSetAlignment(bv[c], 4);
	}
	LLVMValueRef next[8][2];
	for (int r = 0; r < MR; r++) {
		LLVMValueRef idx = LLVMBuildNSWAdd(b, arow[r], k, "");
		LLVMValueRef x = LLVMBuildLoad2(b, f, LLVMBuildInBoundsGEP2(b, f, a, &idx, 1, ""), "");
		LLVMValueRef xv = LLVMBuildInsertElement(b, LLVMGetPoison(vt), x, cg_i32(cg, 0), "");
		xv = LLVMBuildShuffleVector(b, xv, LLVMGetPoison(vt), LLVMConstNull(LLVMVectorType(cg->t_i32, L)), "");
		for (int c = 0; c < NB; c++) {
			if (fuse) {
				LLVMValueRef args[3] = {xv, bv[c], cur[r][c]};
				next[r][c] = cg_intrinsic(cg, "llvm.fmuladd", &vt, 1, args, 3);
			} else {
				next[r][c] = LLVMBuildFAdd(b, cur[r][c], LLVMBuildFMul(b, xv, bv[c], ""), "");
			}
		}
	}
	LLVMValueRef k1 = LLVMBuildNSWAdd(b, k, cg_i64(cg, 1), "");
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
	LLVMBuildBr(b, head);
	LLVMAddIncoming(k, &k1, &latch, 1);
	for (int r = 0; r < MR; r++)
		for (int c = 0; c < NB; c++)
			LLVMAddIncoming(cur[r][c], &next[r][c], &latch, 1);
	LLVMPositionBuilderAtEnd(b, exit);
	for (int r = 0; r < MR; r++)
		for (int c = 0; c < NB; c++)
			LLVMSetAlignment(LLVMBuildStore(b, cur[r][c], cptr[r][c]), 4);
	cg_loop_end(cg, &ln);
	cg_loop_end(cg, &lm);
	cg_loop_end(cg, &lb);
}

/* The general dot: an (m, k, n) loop nest accumulating in acc (of acct). */
static void dot_loops(Cg *cg, IrOp *op, CgVal a, CgVal b, LLVMValueRef acc, const IrType *acct,
		      int64_t B, int64_t M, int64_t K, int64_t N)
{
	bool fuse = cg->opt.enable_fp_fusion;
	const IrType *at = op->ops[0]->type, *bt = op->ops[1]->type;
	const IrType *ae = ir_scalar(at), *be = ir_scalar(bt);
	const IrType *cte = ir_scalar(acct);
	LLVMTypeRef ft = cg_sty(cg, cte);
	CgLoop lb, lm, lk, ln;
	LLVMValueRef bi = cg_loop_begin(cg, &lb, cg_i64(cg, B));
	LLVMValueRef m = cg_loop_begin(cg, &lm, cg_i64(cg, M));
	LLVMValueRef k = cg_loop_begin(cg, &lk, cg_i64(cg, K));
	LLVMValueRef bm = LLVMBuildNSWAdd(cg->b, LLVMBuildNSWMul(cg->b, bi, cg_i64(cg, M), ""), m, "");
	LLVMValueRef aidx = LLVMBuildNSWAdd(cg->b, LLVMBuildNSWMul(cg->b, bm, cg_i64(cg, K), ""), k, "");
	LLVMValueRef av = cg_convert(cg, op, cg_elem(cg, a, at, aidx), ae, cte, false);
	LLVMValueRef bk = LLVMBuildNSWAdd(cg->b, LLVMBuildNSWMul(cg->b, bi, cg_i64(cg, K), ""), k, "");
	LLVMValueRef n = cg_loop_begin(cg, &ln, cg_i64(cg, N));
	LLVMValueRef bidx = LLVMBuildNSWAdd(cg->b, LLVMBuildNSWMul(cg->b, bk, cg_i64(cg, N), ""), n, "");
	LLVMValueRef bv = cg_convert(cg, op, cg_elem(cg, b, bt, bidx), be, cte, false);
	LLVMValueRef cidx = LLVMBuildNSWAdd(cg->b, LLVMBuildNSWMul(cg->b, bm, cg_i64(cg, N), ""), n, "");
	LLVMValueRef cv = cg_elem(cg, cg_bufv(acc), acct, cidx);
	LLVMValueRef nv;
	if (ir_is_float(cte)) {
		if (fuse) {
			LLVMValueRef args[3] = {av, bv, cv};
			nv = cg_intrinsic(cg, "llvm.fmuladd", &ft, 1, args, 3);
		} else {
			nv = LLVMBuildFAdd(cg->b, cv, LLVMBuildFMul(cg->b, av, bv, ""), "");
		}
	} else {
		nv = LLVMBuildAdd(cg->b, cv, LLVMBuildMul(cg->b, av, bv, ""), "");
	}
	cg_store_elem(cg, acc, acct, cidx, nv);
	cg_loop_end(cg, &ln);
	cg_loop_end(cg, &lk);
	cg_loop_end(cg, &lm);
	cg_loop_end(cg, &lb);
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
	CgVal a = cg_get(cg, op->ops[0]), b = cg_get(cg, op->ops[1]), c = cg_get(cg, op->ops[2]);
	const IrType *ae = ir_scalar(at), *be = ir_scalar(bt), *ce = ir_scalar(ct);
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
	bool fuse = cg->opt.enable_fp_fusion;
	if (cte->kind == TY_F32 && ae->kind == TY_F32 && be->kind == TY_F32 && a.kind == CV_BUF &&
	    b.kind == CV_BUF && N % 16 == 0) {
		dot_tiles_f32(cg, a.v, b.v, acc, B, M, K, N, fuse);
	} else {
		dot_loops(cg, op, a, b, acc, acct, B, M, K, N);
	}
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
