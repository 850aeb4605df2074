/* shape.c: sources and shape ops: constant, make_range, splat, broadcast,
 * expand_dims and hints (same registers), and the ops that move elements
 * between threads through shared scratch: convert_layout, reshape, trans,
 * split, cat, join, gather (and histogram: counts added to shared bins
 * with shared-memory atomics). The source is written row-major, then after a
 * barrier read in the destination layout (skipped when both layouts
 * distribute registers identically). A conversion to a 16-bit #dot_op
 * layout goes through the ldmatrix staging of dot.c.
 */
#include "nvptx.h"

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

/* convert_layout through scratch rows pitch elements apart (see
 * an_exchange_pitch) */
static void lower_exchange_pitched(Nv *nv, IrOp *op, int64_t pitch)
{
	int64_t off = nv_scratch_off(op);
	const IrValue *v = op->ops[0];
	NvMap a;
	nv_map_init(nv, v->type, &a);
	for (int r = 0; r < a.n; r++)
		nv_smem_store(nv, v->type, off, nv_map_lin_pitch(nv, &a, v->type, r, pitch), nv_reg(nv, v, r));
	nv_barrier(nv);
	NvMap m;
	nv_map_init(nv, op->res[0].type, &m);
	LLVMValueRef *out = nv_regbuf(nv, m.n);
	for (int r = 0; r < m.n; r++)
		out[r] = nv_smem_load(nv, v->type, off, nv_map_lin_pitch(nv, &m, op->res[0].type, r, pitch));
	nv_set(nv, &op->res[0], m.n, out);
}

void nv_lower_reshape(Nv *nv, IrOp *op) { lower_exchange(nv, op, idx_same); }
void nv_lower_trans(Nv *nv, IrOp *op) { lower_exchange(nv, op, idx_trans); }
void nv_lower_split(Nv *nv, IrOp *op) { lower_exchange(nv, op, idx_split); }

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
	int64_t pitch = an_exchange_pitch(op);
	const IrType *st = op->ops[0]->type;
	if (ir_is_block(st) && st->rank >= 2 && pitch != st->shape[st->rank - 1]) {
		lower_exchange_pitched(nv, op, pitch);
		return;
	}
	lower_exchange(nv, op, idx_same);
}

/* cat along dim 0 / join in a new minor dim of size 2. */
void nv_lower_two(Nv *nv, IrOp *op)
{
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
		LLVMValueRef p = nv_smem_addr(nv, off, LLVMBuildTrunc(B, v, i32, ""), 4);
		LLVMValueRef args[2] = {ok, LLVMBuildTrunc(B, LLVMBuildPtrToInt(B, p, i64, ""), i32, "")};
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
