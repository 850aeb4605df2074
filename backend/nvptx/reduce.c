/* reduce.c: reductions and scans. A reduction combines in-thread, then by
 * butterfly shuffles across the lanes holding distinct data, then (if
 * several warps share the axis) through shared scratch, one barrier, combined
 * by every thread. A scan goes through scratch, each element combining its
 * prefix serially.
 */
#include "nvptx.h"

/* Runs the combiner region on (acc..., x...) -> acc'. */
static void combine(Nv *nv, IrBlock *rb, int k, LLVMValueRef *acc, LLVMValueRef *x)
{
	for (int i = 0; i < k; i++) {
		nv_set1(nv, rb->args[i], acc[i]);
		nv_set1(nv, rb->args[k + i], x[i]);
	}
	IrOp *term = ir_block_terminator(rb);
	for (IrOp *op = rb->first; op && op != term; op = op->next) {
		nv_lower_op(nv, op);
	}
	for (int i = 0; i < k && term; i++)
		acc[i] = nv_reg(nv, term->ops[i], 0);
}

#define MAXK 8

void nv_lower_reduce(Nv *nv, IrOp *op)
{
	int k = op->nops;
	if (k > MAXK) {
		nv_fail(nv, op, "%s: too many inputs", "reduce");
		return;
	}
	IrBlock *rb = op->regions[0];
	const IrType *it = op->ops[0]->type;
	int axis = (int)ir_op_int(op, "axis", 0);
	NvMap mi;
	nv_map_init(nv, it, &mi);
	int d = mi.dimmap[axis];
	const IrType *rt = op->res[0].type;
	NvMap mr;
	nv_map_init(nv, rt, &mr);
	/* in-thread: result register <- inputs with the same other-dim indices */
	LLVMValueRef *acc[MAXK];
	bool *seen = ir_alloc(nv->ctx, (size_t)mr.n);
	for (int i = 0; i < k; i++)
		acc[i] = nv_regbuf(nv, mr.n);
	for (int r = 0; r < mi.n; r++) {
		int j[IR_MAX_RANK];
		nv_map_local(&mi, r, j);
		j[d] = 0;
		int rr = ir_is_block(rt) ? nv_map_reg(&mr, j) : 0;
		LLVMValueRef a[MAXK], x[MAXK];
		for (int i = 0; i < k; i++)
			x[i] = nv_reg(nv, op->ops[i], r);
		if (!seen[rr]) {
			seen[rr] = true;
			for (int i = 0; i < k; i++)
				acc[i][rr] = x[i];
			continue;
		}
		for (int i = 0; i < k; i++)
			a[i] = acc[i][rr];
		combine(nv, rb, k, a, x);
		for (int i = 0; i < k; i++)
			acc[i][rr] = a[i];
	}
	/* across lanes */
	for (int off = 1; off < mi.dl[d]; off *= 2) {
		for (int rr = 0; rr < mr.n; rr++) {
			LLVMValueRef a[MAXK], x[MAXK];
			for (int i = 0; i < k; i++) {
				a[i] = acc[i][rr];
				x[i] = nv_shfl(nv, "bfly", a[i], nv_i32(nv, off * mi.lane_stride[d]));
			}
			combine(nv, rb, k, a, x);
			for (int i = 0; i < k; i++)
				acc[i][rr] = a[i];
		}
	}
	/* across warps */
	int W = mi.dw[d];
	if (W > 1) {
		int64_t base = nv_scratch_off(op);
		int64_t seg[MAXK];
		int64_t rn = ir_is_block(rt) ? rt->numel : 1;
		for (int i = 0; i < k; i++) {
			seg[i] = base;
			base += nv_align16(rn * W * nv_esize(op->ops[i]->type));
		}
		LLVMValueRef wr = LLVMBuildAnd(nv->b, LLVMBuildICmp(nv->b, LLVMIntEQ, mi.lane_d[d], nv_i32(nv, 0), ""),
					       LLVMBuildICmp(nv->b, LLVMIntULT, mi.warp_d[d], nv_i32(nv, W), ""), "");
		LLVMBasicBlockRef sb = nv_new_bb(nv, "red.st"), jb = nv_new_bb(nv, "red.end");
		LLVMBuildCondBr(nv->b, wr, sb, jb);
		LLVMPositionBuilderAtEnd(nv->b, sb);
		LLVMValueRef *lins = nv_regbuf(nv, mr.n);
		for (int rr = 0; rr < mr.n; rr++) {
			LLVMValueRef lin = nv_map_lin(nv, &mr, rt, rr);
			LLVMValueRef idx = LLVMBuildAdd(nv->b, LLVMBuildMul(nv->b, lin, nv_i32(nv, W), ""), mi.warp_d[d], "");
			for (int i = 0; i < k; i++)
				nv_smem_store(nv, op->ops[i]->type, seg[i], idx, acc[i][rr]);
		}
		LLVMBuildBr(nv->b, jb);
		LLVMPositionBuilderAtEnd(nv->b, jb);
		nv_barrier(nv);
		for (int rr = 0; rr < mr.n; rr++) {
			lins[rr] = LLVMBuildMul(nv->b, nv_map_lin(nv, &mr, rt, rr), nv_i32(nv, W), "");
			LLVMValueRef a[MAXK], x[MAXK];
			for (int i = 0; i < k; i++)
				a[i] = nv_smem_load(nv, op->ops[i]->type, seg[i], lins[rr]);
			for (int w = 1; w < W; w++) {
				LLVMValueRef idx = LLVMBuildAdd(nv->b, lins[rr], nv_i32(nv, w), "");
				for (int i = 0; i < k; i++)
					x[i] = nv_smem_load(nv, op->ops[i]->type, seg[i], idx);
				combine(nv, rb, k, a, x);
			}
			for (int i = 0; i < k; i++)
				acc[i][rr] = a[i];
		}
	}
	for (int i = 0; i < k; i++)
		nv_set(nv, &op->res[i], mr.n, acc[i]);
}

/* Inclusive scan through scratch: each element combines its prefix serially. */
void nv_lower_scan(Nv *nv, IrOp *op)
{
	int k = op->nops;
	if (k > MAXK) {
		nv_fail(nv, op, "%s: too many inputs", "scan");
		return;
	}
	IrBlock *rb = op->regions[0];
	const IrType *t = op->ops[0]->type;
	int axis = (int)ir_op_int(op, "axis", 0);
	bool rev = ir_op_int(op, "reverse", 0) != 0;
	int64_t seg[MAXK], base = nv_scratch_off(op);
	for (int i = 0; i < k; i++) {
		seg[i] = base;
		base += nv_align16(t->numel * nv_esize(op->ops[i]->type));
		nv_write_block(nv, op->ops[i], seg[i]);
	}
	nv_barrier(nv);
	NvMap m;
	nv_map_init(nv, t, &m);
	int64_t stride = 1;
	for (int d = t->rank - 1; d > axis; d--)
		stride *= t->shape[d];
	int64_t N = t->shape[axis];
	LLVMValueRef *out[MAXK];
	for (int i = 0; i < k; i++)
		out[i] = nv_regbuf(nv, m.n);
	LLVMTypeRef i32 = LLVMInt32TypeInContext(nv->c);
	for (int r = 0; r < m.n; r++) {
		LLVMValueRef lin = nv_map_lin(nv, &m, t, r);
		LLVMValueRef ca = nv_map_coord(nv, &m, r, axis);
		LLVMValueRef s0 = LLVMBuildSub(nv->b, lin, LLVMBuildMul(nv->b, ca, nv_i32(nv, stride), ""), "");
		/* k runs from the first element of the scan order to this one */
		LLVMValueRef first = rev ? nv_i32(nv, N - 1) : nv_i32(nv, 0);
		LLVMValueRef acc0[MAXK];
		for (int i = 0; i < k; i++)
			acc0[i] = nv_smem_load(nv, op->ops[i]->type, seg[i],
					    LLVMBuildAdd(nv->b, s0, LLVMBuildMul(nv->b, first, nv_i32(nv, stride), ""), ""));
		LLVMBasicBlockRef pre = LLVMGetInsertBlock(nv->b);
		LLVMBasicBlockRef hb = nv_new_bb(nv, "scan.h"), bb = nv_new_bb(nv, "scan.b"), eb = nv_new_bb(nv, "scan.e");
		LLVMBuildBr(nv->b, hb);
		LLVMPositionBuilderAtEnd(nv->b, hb);
		LLVMValueRef iv = LLVMBuildPhi(nv->b, i32, "");
		LLVMValueRef phis[MAXK];
		for (int i = 0; i < k; i++)
			phis[i] = LLVMBuildPhi(nv->b, LLVMTypeOf(acc0[i]), "");
		LLVMValueRef cond = rev ? LLVMBuildICmp(nv->b, LLVMIntSGT, iv, ca, "") : LLVMBuildICmp(nv->b, LLVMIntSLT, iv, ca, "");
		LLVMBuildCondBr(nv->b, cond, bb, eb);
		LLVMPositionBuilderAtEnd(nv->b, bb);
		LLVMValueRef nx = rev ? LLVMBuildSub(nv->b, iv, nv_i32(nv, 1), "") : LLVMBuildAdd(nv->b, iv, nv_i32(nv, 1), "");
		LLVMValueRef a[MAXK], x[MAXK];
		for (int i = 0; i < k; i++) {
			a[i] = phis[i];
			x[i] = nv_smem_load(nv, op->ops[i]->type, seg[i],
					 LLVMBuildAdd(nv->b, s0, LLVMBuildMul(nv->b, nx, nv_i32(nv, stride), ""), ""));
		}
		combine(nv, rb, k, a, x);
		LLVMBasicBlockRef latch = LLVMGetInsertBlock(nv->b);
		LLVMBuildBr(nv->b, hb);
		LLVMAddIncoming(iv, (LLVMValueRef[]){first, nx}, (LLVMBasicBlockRef[]){pre, latch}, 2);
		for (int i = 0; i < k; i++)
			LLVMAddIncoming(phis[i], (LLVMValueRef[]){acc0[i], a[i]}, (LLVMBasicBlockRef[]){pre, latch}, 2);
		LLVMPositionBuilderAtEnd(nv->b, eb);
		for (int i = 0; i < k; i++)
			out[i][r] = phis[i];
	}
	for (int i = 0; i < k; i++)
		nv_set(nv, &op->res[i], m.n, out[i]);
}
