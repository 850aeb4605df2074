/* reduce.c: reductions and scans. A reduction combines in-thread, then by
 * butterfly shuffles across the lanes holding distinct data, then (if
 * several warps share the axis) through shared scratch, one barrier, combined
 * by every thread. A scan goes through scratch, each element combining its
 * prefix serially.
 */
#include "nvptx.h"

/* Runs the combiner region on (acc..., x...) -> acc'. */
static void combine(Lower *L, IrBlock *rb, int k, LLVMValueRef *acc, LLVMValueRef *x)
{
	for (int i = 0; i < k; i++) {
		set1(L, rb->args[i], acc[i]);
		set1(L, rb->args[k + i], x[i]);
	}
	IrOp *term = ir_block_terminator(rb);
	for (IrOp *op = rb->first; op && op != term; op = op->next) {
		lower_op(L, op);
	}
	for (int i = 0; i < k && term; i++)
		acc[i] = reg(L, term->ops[i], 0);
}

static LLVMValueRef shfl_bfly(Lower *L, LLVMValueRef v, int off)
{
	LLVMTypeRef ty = LLVMTypeOf(v), i32 = LLVMInt32TypeInContext(L->c);
	LLVMTypeKind k = LLVMGetTypeKind(ty);
	unsigned bits = k == LLVMFloatTypeKind ? 32 : k == LLVMDoubleTypeKind ? 64 : k == LLVMHalfTypeKind || k == LLVMBFloatTypeKind ? 16
		       : k == LLVMPointerTypeKind ? 64 : LLVMGetIntTypeWidth(ty);
	LLVMTypeRef ity = LLVMIntTypeInContext(L->c, bits);
	LLVMValueRef x = k == LLVMPointerTypeKind ? LLVMBuildPtrToInt(L->b, v, ity, "") : LLVMBuildBitCast(L->b, v, ity, "");
	LLVMValueRef res;
	LLVMValueRef full = LLVMConstInt(i32, 0xffffffffu, 0);
	if (bits <= 32) {
		LLVMValueRef w = bits < 32 ? LLVMBuildZExt(L->b, x, i32, "") : x;
		LLVMValueRef a[4] = {full, w, i32c(L, off), i32c(L, 0x1f)};
		res = call_intr(L, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, a, 4);
		if (bits < 32)
			res = LLVMBuildTrunc(L->b, res, ity, "");
	} else {
		LLVMValueRef lo = LLVMBuildTrunc(L->b, x, i32, "");
		LLVMValueRef hi = LLVMBuildTrunc(L->b, LLVMBuildLShr(L->b, x, LLVMConstInt(ity, 32, 0), ""), i32, "");
		LLVMValueRef a[4] = {full, lo, i32c(L, off), i32c(L, 0x1f)};
		lo = call_intr(L, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, a, 4);
		a[1] = hi;
		hi = call_intr(L, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, a, 4);
		res = LLVMBuildOr(L->b, LLVMBuildZExt(L->b, lo, ity, ""),
				  LLVMBuildShl(L->b, LLVMBuildZExt(L->b, hi, ity, ""), LLVMConstInt(ity, 32, 0), ""), "");
	}
	return k == LLVMPointerTypeKind ? LLVMBuildIntToPtr(L->b, res, ty, "") : LLVMBuildBitCast(L->b, res, ty, "");
}

#define MAXK 8

void lower_reduce(Lower *L, IrOp *op)
{
	int k = op->nops;
	if (k > MAXK) {
		fail(L, op, "%s: too many inputs", "reduce");
		return;
	}
	IrBlock *rb = op->regions[0];
	const IrType *it = op->ops[0]->type;
	int axis = (int)ir_op_int(op, "axis", 0);
	Map mi;
	map_init(L, it, &mi);
	int d = mi.dimmap[axis];
	const IrType *rt = op->res[0].type;
	Map mr;
	map_init(L, rt, &mr);
	/* in-thread: result register <- inputs with the same other-dim indices */
	LLVMValueRef *acc[MAXK];
	bool *seen = ir_alloc(L->ctx, (size_t)mr.n);
	for (int i = 0; i < k; i++)
		acc[i] = regbuf(L, mr.n);
	for (int r = 0; r < mi.n; r++) {
		int j[IR_MAX_RANK];
		map_local(&mi, r, j);
		j[d] = 0;
		int rr = ir_is_block(rt) ? map_reg(&mr, j) : 0;
		LLVMValueRef a[MAXK], x[MAXK];
		for (int i = 0; i < k; i++)
			x[i] = reg(L, op->ops[i], r);
		if (!seen[rr]) {
			seen[rr] = true;
			for (int i = 0; i < k; i++)
				acc[i][rr] = x[i];
			continue;
		}
		for (int i = 0; i < k; i++)
			a[i] = acc[i][rr];
		combine(L, rb, k, a, x);
		for (int i = 0; i < k; i++)
			acc[i][rr] = a[i];
	}
	/* across lanes */
	for (int off = 1; off < mi.dl[d]; off *= 2) {
		for (int rr = 0; rr < mr.n; rr++) {
			LLVMValueRef a[MAXK], x[MAXK];
			for (int i = 0; i < k; i++) {
				a[i] = acc[i][rr];
				x[i] = shfl_bfly(L, a[i], off * mi.lane_stride[d]);
			}
			combine(L, rb, k, a, x);
			for (int i = 0; i < k; i++)
				acc[i][rr] = a[i];
		}
	}
	/* across warps */
	int W = mi.dw[d];
	if (W > 1) {
		int64_t base = scratch_off(op);
		int64_t seg[MAXK];
		int64_t rn = ir_is_block(rt) ? rt->numel : 1;
		for (int i = 0; i < k; i++) {
			seg[i] = base;
			base += align16(rn * W * ebytes(op->ops[i]->type));
		}
		LLVMValueRef wr = LLVMBuildAnd(L->b, LLVMBuildICmp(L->b, LLVMIntEQ, mi.lane_d[d], i32c(L, 0), ""),
					       LLVMBuildICmp(L->b, LLVMIntULT, mi.warp_d[d], i32c(L, W), ""), "");
		LLVMBasicBlockRef sb = new_bb(L, "red.st"), jb = new_bb(L, "red.end");
		LLVMBuildCondBr(L->b, wr, sb, jb);
		LLVMPositionBuilderAtEnd(L->b, sb);
		LLVMValueRef *lins = regbuf(L, mr.n);
		for (int rr = 0; rr < mr.n; rr++) {
			LLVMValueRef lin = map_lin(L, &mr, rt, rr);
			LLVMValueRef idx = LLVMBuildAdd(L->b, LLVMBuildMul(L->b, lin, i32c(L, W), ""), mi.warp_d[d], "");
			for (int i = 0; i < k; i++)
				smem_store(L, op->ops[i]->type, seg[i], idx, acc[i][rr]);
		}
		LLVMBuildBr(L->b, jb);
		LLVMPositionBuilderAtEnd(L->b, jb);
		barrier(L);
		for (int rr = 0; rr < mr.n; rr++) {
			lins[rr] = LLVMBuildMul(L->b, map_lin(L, &mr, rt, rr), i32c(L, W), "");
			LLVMValueRef a[MAXK], x[MAXK];
			for (int i = 0; i < k; i++)
				a[i] = smem_load(L, op->ops[i]->type, seg[i], lins[rr]);
			for (int w = 1; w < W; w++) {
				LLVMValueRef idx = LLVMBuildAdd(L->b, lins[rr], i32c(L, w), "");
				for (int i = 0; i < k; i++)
					x[i] = smem_load(L, op->ops[i]->type, seg[i], idx);
				combine(L, rb, k, a, x);
			}
			for (int i = 0; i < k; i++)
				acc[i][rr] = a[i];
		}
	}
	for (int i = 0; i < k; i++)
		set_vals(L, &op->res[i], mr.n, acc[i]);
}

/* Inclusive scan through scratch: each element combines its prefix serially. */
void lower_scan(Lower *L, IrOp *op)
{
	int k = op->nops;
	if (k > MAXK) {
		fail(L, op, "%s: too many inputs", "scan");
		return;
	}
	IrBlock *rb = op->regions[0];
	const IrType *t = op->ops[0]->type;
	int axis = (int)ir_op_int(op, "axis", 0);
	bool rev = ir_op_int(op, "reverse", 0) != 0;
	int64_t seg[MAXK], base = scratch_off(op);
	for (int i = 0; i < k; i++) {
		seg[i] = base;
		base += align16(t->numel * ebytes(op->ops[i]->type));
		write_block(L, op->ops[i], seg[i]);
	}
	barrier(L);
	Map m;
	map_init(L, t, &m);
	int64_t stride = 1;
	for (int d = t->rank - 1; d > axis; d--)
		stride *= t->shape[d];
	int64_t N = t->shape[axis];
	LLVMValueRef *out[MAXK];
	for (int i = 0; i < k; i++)
		out[i] = regbuf(L, m.n);
	LLVMTypeRef i32 = LLVMInt32TypeInContext(L->c);
	for (int r = 0; r < m.n; r++) {
		LLVMValueRef lin = map_lin(L, &m, t, r);
		LLVMValueRef ca = map_coord(L, &m, r, axis);
		LLVMValueRef s0 = LLVMBuildSub(L->b, lin, LLVMBuildMul(L->b, ca, i32c(L, stride), ""), "");
		/* k runs from the first element of the scan order to this one */
		LLVMValueRef first = rev ? i32c(L, N - 1) : i32c(L, 0);
		LLVMValueRef acc0[MAXK];
		for (int i = 0; i < k; i++)
			acc0[i] = smem_load(L, op->ops[i]->type, seg[i],
					    LLVMBuildAdd(L->b, s0, LLVMBuildMul(L->b, first, i32c(L, stride), ""), ""));
		LLVMBasicBlockRef pre = LLVMGetInsertBlock(L->b);
		LLVMBasicBlockRef hb = new_bb(L, "scan.h"), bb = new_bb(L, "scan.b"), eb = new_bb(L, "scan.e");
		LLVMBuildBr(L->b, hb);
		LLVMPositionBuilderAtEnd(L->b, hb);
		LLVMValueRef iv = LLVMBuildPhi(L->b, i32, "");
		LLVMValueRef phis[MAXK];
		for (int i = 0; i < k; i++)
			phis[i] = LLVMBuildPhi(L->b, LLVMTypeOf(acc0[i]), "");
		LLVMValueRef cond = rev ? LLVMBuildICmp(L->b, LLVMIntSGT, iv, ca, "") : LLVMBuildICmp(L->b, LLVMIntSLT, iv, ca, "");
		LLVMBuildCondBr(L->b, cond, bb, eb);
		LLVMPositionBuilderAtEnd(L->b, bb);
		LLVMValueRef nx = rev ? LLVMBuildSub(L->b, iv, i32c(L, 1), "") : LLVMBuildAdd(L->b, iv, i32c(L, 1), "");
		LLVMValueRef a[MAXK], x[MAXK];
		for (int i = 0; i < k; i++) {
			a[i] = phis[i];
			x[i] = smem_load(L, op->ops[i]->type, seg[i],
					 LLVMBuildAdd(L->b, s0, LLVMBuildMul(L->b, nx, i32c(L, stride), ""), ""));
		}
		combine(L, rb, k, a, x);
		LLVMBasicBlockRef latch = LLVMGetInsertBlock(L->b);
		LLVMBuildBr(L->b, hb);
		LLVMAddIncoming(iv, (LLVMValueRef[]){first, nx}, (LLVMBasicBlockRef[]){pre, latch}, 2);
		for (int i = 0; i < k; i++)
			LLVMAddIncoming(phis[i], (LLVMValueRef[]){acc0[i], a[i]}, (LLVMBasicBlockRef[]){pre, latch}, 2);
		LLVMPositionBuilderAtEnd(L->b, eb);
		for (int i = 0; i < k; i++)
			out[i][r] = phis[i];
	}
	for (int i = 0; i < k; i++)
		set_vals(L, &op->res[i], m.n, out[i]);
}
