/* shape.c: sources and shape ops: constant, make_range, splat, broadcast,
 * expand_dims and hints (same registers), and the ops that move elements
 * between threads through shared scratch: convert_layout, reshape, trans,
 * split, cat, join, gather. The source is written row-major, then after a
 * barrier read in the destination layout (skipped when both layouts
 * distribute registers identically). A conversion to a 16-bit #dot_op
 * layout goes through the ldmatrix staging of dot.c.
 */
#include "nvptx.h"

void lower_constant(Lower *L, IrOp *op)
{
	const IrType *t = op->res[0].type;
	LLVMTypeRef ty = be_llty(L, t);
	const IrAttr *a = ir_op_attr(op, "value");
	LLVMValueRef v;
	if (ir_is_float(ir_scalar(t)))
		v = LLVMConstReal(ty, a ? (a->kind == ATTR_FLOAT ? a->f : (double)a->i) : 0);
	else if (ir_is_ptr(ir_scalar(t)))
		v = LLVMConstNull(ty);
	else
		v = LLVMConstInt(ty, (unsigned long long)(a ? (a->kind == ATTR_FLOAT ? (int64_t)a->f : a->i) : 0), 1);
	int n = map_nregs(L, t);
	LLVMValueRef *out = regbuf(L, n);
	for (int r = 0; r < n; r++)
		out[r] = v;
	set_vals(L, &op->res[0], n, out);
}

void lower_make_range(Lower *L, IrOp *op)
{
	Map m;
	map_init(L, op->res[0].type, &m);
	int64_t start = ir_op_int(op, "start", 0);
	LLVMValueRef *out = regbuf(L, m.n);
	for (int r = 0; r < m.n; r++)
		out[r] = LLVMBuildAdd(L->b, map_coord(L, &m, r, 0), i32c(L, start), "");
	set_vals(L, &op->res[0], m.n, out);
}

void lower_splat(Lower *L, IrOp *op)
{
	int n = map_nregs(L, op->res[0].type);
	LLVMValueRef *out = regbuf(L, n);
	for (int r = 0; r < n; r++)
		out[r] = reg(L, op->ops[0], 0);
	set_vals(L, &op->res[0], n, out);
}

void lower_broadcast(Lower *L, IrOp *op)
{
	const IrType *st = op->ops[0]->type, *rt = op->res[0].type;
	if (!ir_is_block(st)) {
		lower_splat(L, op);
		return;
	}
	Map ms, mr;
	map_init(NULL, st, &ms);
	map_init(NULL, rt, &mr);
	LLVMValueRef *out = regbuf(L, mr.n);
	for (int r = 0; r < mr.n; r++) {
		int j[IR_MAX_RANK];
		map_local(&mr, r, j);
		for (int k = 0; k < rt->rank; k++)
			if (st->shape[k] == 1)
				j[mr.dimmap[k]] = 0;
		out[r] = reg(L, op->ops[0], map_reg(&ms, j));
	}
	set_vals(L, &op->res[0], mr.n, out);
}

/* Same registers, another type (expand_dims of a slice, hints, reshape when
 * the register order is unchanged). */
void lower_identity(Lower *L, IrOp *op)
{
	Vals *s = vals_of(L, op->ops[0]);
	set_vals(L, &op->res[0], s->n, s->v);
}

/* Through scratch: dst register r reads src element index_of(r). */
typedef LLVMValueRef (*IndexFn)(Lower *L, IrOp *op, const Map *m, int r, int k);

static LLVMValueRef idx_same(Lower *L, IrOp *op, const Map *m, int r, int k)
{
	(void)k;
	return map_lin(L, m, op->res[0].type, r);
}

static LLVMValueRef idx_trans(Lower *L, IrOp *op, const Map *m, int r, int k)
{
	const IrType *st = op->ops[0]->type, *rt = op->res[0].type;
	const IrAttr *ord = ir_op_attr(op, "order");
	LLVMValueRef sc[IR_MAX_RANK];
	for (int i = 0; i < rt->rank; i++) {
		int sd = ord && i < ord->n ? (int)ord->ints[i] : rt->rank - 1 - i;
		sc[sd] = map_coord(L, m, r, i);
	}
	LLVMValueRef lin = i32c(L, 0);
	int64_t mul = 1;
	for (int d = st->rank - 1; d >= 0; d--) {
		lin = LLVMBuildAdd(L->b, lin, LLVMBuildMul(L->b, sc[d], i32c(L, mul), ""), "");
		mul *= st->shape[d];
	}
	(void)k;
	return lin;
}

static LLVMValueRef idx_split(Lower *L, IrOp *op, const Map *m, int r, int k)
{
	LLVMValueRef lin = map_lin(L, m, op->res[k].type, r);
	return LLVMBuildAdd(L->b, LLVMBuildMul(L->b, lin, i32c(L, 2), ""), i32c(L, k), "");
}

static void lower_exchange(Lower *L, IrOp *op, IndexFn fn)
{
	int64_t off = scratch_off(op);
	const IrType *st = op->ops[0]->type;
	write_block(L, op->ops[0], off);
	barrier(L);
	for (int k = 0; k < op->nres; k++) {
		Map m;
		map_init(L, op->res[k].type, &m);
		LLVMValueRef *out = regbuf(L, m.n);
		for (int r = 0; r < m.n; r++)
			out[r] = smem_load(L, st, off, fn(L, op, &m, r, k));
		set_vals(L, &op->res[k], m.n, out);
	}
}

void lower_reshape(Lower *L, IrOp *op) { lower_exchange(L, op, idx_same); }
void lower_trans(Lower *L, IrOp *op) { lower_exchange(L, op, idx_trans); }
void lower_split(Lower *L, IrOp *op) { lower_exchange(L, op, idx_split); }

void lower_convert(Lower *L, IrOp *op)
{
	if (op == L->staged) { /* lowered with the first of its pair */
		L->staged = NULL;
		return;
	}
	if (ldmatrix_ok(op)) {
		lower_to_dot_op(L, op);
		return;
	}
	Map a, b;
	map_init(NULL, op->ops[0]->type, &a);
	map_init(NULL, op->res[0].type, &b);
	bool same = a.b == b.b && a.n == b.n && a.brank == b.brank;
	for (int d = 0; same && d < a.brank; d++)
		same = a.bs[d] == b.bs[d];
	if (same) { /* same distribution, e.g. slice vs. expanded parent */
		lower_identity(L, op);
		return;
	}
	lower_exchange(L, op, idx_same);
}

/* cat along dim 0 / join in a new minor dim of size 2. */
void lower_two(Lower *L, IrOp *op)
{
	int64_t off0 = scratch_off(op);
	const IrType *st = op->ops[0]->type;
	int64_t n0 = ir_is_block(st) ? st->numel : 1;
	int64_t off1 = off0 + align16(n0 * ebytes(st));
	write_block(L, op->ops[0], off0);
	write_block(L, op->ops[1], off1);
	barrier(L);
	Map m;
	map_init(L, op->res[0].type, &m);
	LLVMValueRef *out = regbuf(L, m.n);
	for (int r = 0; r < m.n; r++) {
		LLVMValueRef lin = map_lin(L, &m, op->res[0].type, r);
		LLVMValueRef which, idx;
		if (op->opc == OP_JOIN) {
			which = LLVMBuildAnd(L->b, lin, i32c(L, 1), "");
			idx = LLVMBuildLShr(L->b, lin, i32c(L, 1), "");
		} else {
			which = LLVMBuildICmp(L->b, LLVMIntUGE, lin, i32c(L, n0), "");
			which = LLVMBuildZExt(L->b, which, LLVMInt32TypeInContext(L->c), "");
			idx = LLVMBuildSub(L->b, lin, LLVMBuildMul(L->b, which, i32c(L, n0), ""), "");
		}
		LLVMValueRef base = LLVMBuildAdd(L->b, i32c(L, off0), LLVMBuildMul(L->b, which, i32c(L, off1 - off0), ""), "");
		LLVMValueRef bytes = LLVMBuildAdd(L->b, base, LLVMBuildMul(L->b, idx, i32c(L, ebytes(st)), ""), "");
		LLVMValueRef p = LLVMBuildGEP2(L->b, LLVMInt8TypeInContext(L->c), L->smem, &bytes, 1, "");
		if (ir_scalar(st)->kind == TY_I1) {
			LLVMValueRef x = LLVMBuildLoad2(L->b, LLVMInt8TypeInContext(L->c), p, "");
			out[r] = LLVMBuildICmp(L->b, LLVMIntNE, x, LLVMConstInt(LLVMInt8TypeInContext(L->c), 0, 0), "");
		} else {
			out[r] = LLVMBuildLoad2(L->b, be_llty(L, st), p, "");
		}
	}
	set_vals(L, &op->res[0], m.n, out);
}

void lower_gather(Lower *L, IrOp *op)
{
	int64_t off = scratch_off(op);
	const IrType *st = op->ops[0]->type, *rt = op->res[0].type;
	int axis = (int)ir_op_int(op, "axis", 0);
	write_block(L, op->ops[0], off);
	barrier(L);
	Map m;
	map_init(L, rt, &m);
	LLVMValueRef *out = regbuf(L, m.n);
	for (int r = 0; r < m.n; r++) {
		LLVMValueRef lin = i32c(L, 0);
		int64_t mul = 1;
		for (int d = rt->rank - 1; d >= 0; d--) {
			LLVMValueRef c = d == axis ? LLVMBuildIntCast2(L->b, reg(L, op->ops[1], r), LLVMInt32TypeInContext(L->c), 1, "")
						   : map_coord(L, &m, r, d);
			lin = LLVMBuildAdd(L->b, lin, LLVMBuildMul(L->b, c, i32c(L, mul), ""), "");
			mul *= st->shape[d];
		}
		out[r] = smem_load(L, st, off, lin);
	}
	set_vals(L, &op->res[0], m.n, out);
}
