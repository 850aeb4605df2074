/* kernels.c: the test kernel corpus (see kernels.h). Each mirrors a small
 * Triton program, noted in its comment. */
#include "kernels.h"

#include <string.h>

typedef struct KB {
	IrCtx *ctx;
	IrFunc *f;
	IrBuilder b;
} KB;

static const IrType *ty(KB *k, IrTypeKind t) { return ir_type(k->ctx, t); }
static const IrType *pty(KB *k, IrTypeKind t) { return ir_type_ptr(k->ctx, ir_type(k->ctx, t), 1); }
static const IrType *blk1(KB *k, const IrType *e, int64_t n) { return ir_type_block(k->ctx, e, 1, &n, NULL); }
static const IrType *blk2(KB *k, const IrType *e, int64_t a, int64_t b)
{
	int64_t s[2] = {a, b};
	return ir_type_block(k->ctx, e, 2, s, NULL);
}

/* A kernel whose pointer params are marked divisible by 16. */
static void kb_init(KB *k, IrModule *m, const char *name, int n, const IrType **ps)
{
	k->ctx = m->ctx;
	k->f = ir_func_new(m, name, n, ps, 0, NULL, ir_loc(m->ctx, "kernels.py", 1, 1));
	k->f->is_kernel = true;
	for (int i = 0; i < n; i++)
		if (ir_is_ptr(ps[i]) || ir_is_int(ps[i]))
			ir_set_attr_int(k->ctx, &k->f->params[i].nattrs, &k->f->params[i].attrs, "divisibility", 16);
	ir_builder_init(&k->b, k->ctx);
	ir_builder_at_end(&k->b, k->f->body);
	k->b.loc = ir_loc(m->ctx, "kernels.py", 2, 5);
}

static IrValue *arg(KB *k, int i) { return k->f->body->args[i]; }
static IrValue *ci(KB *k, const IrType *t, int64_t v) { return ir_const_int(&k->b, t, v); }
static IrValue *cf(KB *k, const IrType *t, double v) { return ir_const_float(&k->b, t, v); }
static IrValue *bin(KB *k, IrOpcode o, IrValue *x, IrValue *y) { return ir_binary(&k->b, o, x, y); }
static IrValue *splat(KB *k, IrValue *x, const IrType *bt) { return ir_splat(&k->b, x, ir_type_like(k->ctx, bt, x->type)); }

/* p + offs (offs a block), a block of pointers of offs' shape */
static IrValue *ptrs(KB *k, IrValue *p, IrValue *offs) { return ir_addptr(&k->b, splat(k, p, offs->type), offs); }

static void ret(KB *k) { ir_return(&k->b, 0, NULL); }

/* offs = pid * BLOCK + arange(BLOCK) */
static IrValue *pid_offsets(KB *k, int64_t block)
{
	const IrType *i32 = ty(k, TY_I32);
	IrValue *start = bin(k, OP_MUL, ir_program_id(&k->b, 0), ci(k, i32, block));
	IrValue *r = ir_make_range(&k->b, 0, block);
	return bin(k, OP_ADD, splat(k, start, r->type), r);
}

/* A reduce op with a binary scalar combiner `opc`. */
static IrValue *reduce(KB *k, IrValue *x, int axis, IrOpcode opc)
{
	const IrType *t = x->type;
	const IrType *rt;
	if (t->rank == 1) {
		rt = t->elem;
	} else {
		int64_t s[IR_MAX_RANK];
		int n = 0;
		for (int d = 0; d < t->rank; d++)
			if (d != axis)
				s[n++] = t->shape[d];
		rt = ir_type_block(k->ctx, t->elem, n, s, NULL);
	}
	IrOp *op = ir_build(&k->b, OP_REDUCE, 1, &x, 1, &rt, 1);
	ir_op_set_int(k->ctx, op, "axis", axis);
	IrBlock *rb = op->regions[0];
	IrValue *a = ir_block_add_arg(k->ctx, rb, t->elem);
	IrValue *c = ir_block_add_arg(k->ctx, rb, t->elem);
	IrBuilder save = k->b;
	ir_builder_at_end(&k->b, rb);
	IrValue *r = bin(k, opc, a, c);
	ir_yield(&k->b, 1, &r);
	k->b = save;
	return &op->res[0];
}

static IrValue *scan(KB *k, IrValue *x, int axis, IrOpcode opc)
{
	const IrType *t = x->type;
	IrOp *op = ir_build(&k->b, OP_SCAN, 1, &x, 1, &t, 1);
	ir_op_set_int(k->ctx, op, "axis", axis);
	IrBlock *rb = op->regions[0];
	IrValue *a = ir_block_add_arg(k->ctx, rb, t->elem);
	IrValue *c = ir_block_add_arg(k->ctx, rb, t->elem);
	IrBuilder save = k->b;
	ir_builder_at_end(&k->b, rb);
	IrValue *r = bin(k, opc, a, c);
	ir_yield(&k->b, 1, &r);
	k->b = save;
	return &op->res[0];
}

/* 2-D offsets rows[:, None] * ld + cols[None, :] for an MxN tile. */
static IrValue *tile_offsets(KB *k, int64_t M, int64_t N, IrValue *ld)
{
	const IrType *i32 = ty(k, TY_I32);
	IrValue *rows = ir_expand_dims(&k->b, ir_make_range(&k->b, 0, M), 1);
	IrValue *cols = ir_expand_dims(&k->b, ir_make_range(&k->b, 0, N), 0);
	const IrType *t2 = blk2(k, i32, M, N);
	IrValue *rs = bin(k, OP_MUL, rows, splat(k, ld, rows->type));
	return bin(k, OP_ADD, ir_broadcast(&k->b, rs, t2), ir_broadcast(&k->b, cols, t2));
}

/* ------------------------------------------------------------------------- */

/* add_kernel(x, y, out, n): out[i] = x[i] + y[i] for i < n (tutorial 01) */
IrFunc *tk_vector_add(IrModule *m)
{
	KB k;
	k.ctx = m->ctx;
	const IrType *ps[4] = {pty(&k, TY_F32), pty(&k, TY_F32), pty(&k, TY_F32), ty(&k, TY_I32)};
	kb_init(&k, m, "vector_add", 4, ps);
	IrValue *offs = pid_offsets(&k, 1024);
	IrValue *mask = ir_cmp(&k.b, "lt", offs, splat(&k, arg(&k, 3), offs->type));
	IrValue *x = ir_load(&k.b, ptrs(&k, arg(&k, 0), offs), mask, NULL);
	IrValue *y = ir_load(&k.b, ptrs(&k, arg(&k, 1), offs), mask, NULL);
	ir_store(&k.b, ptrs(&k, arg(&k, 2), offs), bin(&k, OP_ADD, x, y), mask);
	ret(&k);
	return k.f;
}

/* softmax over one row of n <= 1024 columns per program (tutorial 02) */
IrFunc *tk_softmax_row(IrModule *m)
{
	KB k;
	k.ctx = m->ctx;
	const IrType *f32 = ir_type(m->ctx, TY_F32), *i32 = ir_type(m->ctx, TY_I32);
	const IrType *ps[4] = {pty(&k, TY_F32), pty(&k, TY_F32), i32, i32};
	kb_init(&k, m, "softmax_row", 4, ps);
	IrValue *row = bin(&k, OP_MUL, ir_program_id(&k.b, 0), arg(&k, 2));
	IrValue *cols = ir_make_range(&k.b, 0, 1024);
	IrValue *mask = ir_cmp(&k.b, "lt", cols, splat(&k, arg(&k, 3), cols->type));
	IrValue *offs = bin(&k, OP_ADD, splat(&k, row, cols->type), cols);
	IrValue *ninf = cf(&k, blk1(&k, f32, 1024), -1.0 / 0.0);
	IrValue *x = ir_load(&k.b, ptrs(&k, arg(&k, 0), offs), mask, ninf);
	IrValue *mx = reduce(&k, x, 0, OP_MAX);
	IrValue *z = bin(&k, OP_SUB, x, splat(&k, mx, x->type));
	IrValue *e = ir_unary(&k.b, OP_EXP, z);
	IrValue *s = reduce(&k, e, 0, OP_ADD);
	IrValue *y = bin(&k, OP_DIV, e, splat(&k, s, e->type));
	ir_store(&k.b, ptrs(&k, arg(&k, 1), offs), y, mask);
	ret(&k);
	return k.f;
}

/* sums of a 64x128 f32 tile along both axes */
IrFunc *tk_reduce2d(IrModule *m)
{
	KB k;
	k.ctx = m->ctx;
	const IrType *i32 = ir_type(m->ctx, TY_I32);
	const IrType *ps[4] = {pty(&k, TY_F32), pty(&k, TY_F32), pty(&k, TY_F32), i32};
	kb_init(&k, m, "reduce2d", 4, ps);
	IrValue *offs = tile_offsets(&k, 64, 128, arg(&k, 3));
	IrValue *x = ir_load(&k.b, ptrs(&k, arg(&k, 0), offs), NULL, NULL);
	IrValue *r0 = reduce(&k, x, 0, OP_ADD); /* 128 */
	IrValue *r1 = reduce(&k, x, 1, OP_MAX); /* 64 */
	ir_store(&k.b, ptrs(&k, arg(&k, 1), ir_make_range(&k.b, 0, 128)), r0, NULL);
	ir_store(&k.b, ptrs(&k, arg(&k, 2), ir_make_range(&k.b, 0, 64)), r1, NULL);
	/* row-normalise: x - max(x, 1)[:, None] stored back (expand_dims of a slice) */
	IrValue *e = ir_expand_dims(&k.b, r1, 1);
	IrValue *y = bin(&k, OP_SUB, x, ir_broadcast(&k.b, e, x->type));
	ir_store(&k.b, ptrs(&k, arg(&k, 0), offs), y, NULL);
	ret(&k);
	return k.f;
}

/* for i in range(0, n, 256): acc += x[i + arange]; out[arange] = acc */
static IrFunc *tk_for_loop(IrModule *m)
{
	KB k;
	k.ctx = m->ctx;
	const IrType *i32 = ir_type(m->ctx, TY_I32), *f32 = ir_type(m->ctx, TY_F32);
	const IrType *ps[3] = {pty(&k, TY_F32), pty(&k, TY_F32), i32};
	kb_init(&k, m, "for_loop", 3, ps);
	const IrType *bt = blk1(&k, f32, 256);
	IrValue *acc0 = cf(&k, bt, 0.0);
	IrValue *ops[4] = {ci(&k, i32, 0), arg(&k, 2), ci(&k, i32, 256), acc0};
	IrOp *fo = ir_build(&k.b, OP_FOR, 4, ops, 1, &bt, 1);
	IrBlock *body = fo->regions[0];
	IrValue *iv = ir_block_add_arg(k.ctx, body, i32);
	IrValue *acc = ir_block_add_arg(k.ctx, body, bt);
	IrBuilder save = k.b;
	ir_builder_at_end(&k.b, body);
	IrValue *r = ir_make_range(&k.b, 0, 256);
	IrValue *offs = bin(&k, OP_ADD, splat(&k, iv, r->type), r);
	IrValue *mask = ir_cmp(&k.b, "lt", offs, splat(&k, arg(&k, 2), r->type));
	IrValue *x = ir_load(&k.b, ptrs(&k, arg(&k, 0), offs), mask, cf(&k, bt, 0.0));
	IrValue *nacc = bin(&k, OP_ADD, acc, x);
	ir_yield(&k.b, 1, &nacc);
	k.b = save;
	ir_store(&k.b, ptrs(&k, arg(&k, 1), ir_make_range(&k.b, 0, 256)), &fo->res[0], NULL);
	ret(&k);
	return k.f;
}

/* x = load; if pid == 0: y = x * 2 else: y = x + 1; while c < n: c *= 2, y += 1 */
static IrFunc *tk_if_while(IrModule *m)
{
	KB k;
	k.ctx = m->ctx;
	const IrType *i32 = ir_type(m->ctx, TY_I32), *f32 = ir_type(m->ctx, TY_F32);
	const IrType *ps[3] = {pty(&k, TY_F32), pty(&k, TY_F32), i32};
	kb_init(&k, m, "if_while", 3, ps);
	IrValue *offs = pid_offsets(&k, 512);
	IrValue *x = ir_load(&k.b, ptrs(&k, arg(&k, 0), offs), NULL, NULL);
	IrValue *c = ir_cmp(&k.b, "eq", ir_program_id(&k.b, 0), ci(&k, i32, 0));
	const IrType *bt = x->type;
	IrOp *io = ir_build(&k.b, OP_IF, 1, &c, 1, &bt, 2);
	IrBuilder save = k.b;
	ir_builder_at_end(&k.b, io->regions[0]);
	IrValue *t = bin(&k, OP_MUL, x, cf(&k, bt, 2.0));
	ir_yield(&k.b, 1, &t);
	ir_builder_at_end(&k.b, io->regions[1]);
	IrValue *e = bin(&k, OP_ADD, x, cf(&k, bt, 1.0));
	ir_yield(&k.b, 1, &e);
	k.b = save;
	IrValue *init[2] = {ci(&k, i32, 1), &io->res[0]};
	const IrType *wt[2] = {i32, bt};
	IrOp *wo = ir_build(&k.b, OP_WHILE, 2, init, 2, wt, 2);
	IrBlock *before = wo->regions[0], *after = wo->regions[1];
	IrValue *bc = ir_block_add_arg(k.ctx, before, i32);
	IrValue *by = ir_block_add_arg(k.ctx, before, bt);
	IrValue *ac = ir_block_add_arg(k.ctx, after, i32);
	IrValue *ay = ir_block_add_arg(k.ctx, after, bt);
	ir_builder_at_end(&k.b, before);
	IrValue *cond = ir_cmp(&k.b, "lt", bc, arg(&k, 2));
	IrValue *cops[3] = {cond, bc, by};
	ir_build(&k.b, OP_CONDITION, 3, cops, 0, NULL, 0);
	ir_builder_at_end(&k.b, after);
	IrValue *y2[2] = {bin(&k, OP_MUL, ac, ci(&k, i32, 2)), bin(&k, OP_ADD, ay, cf(&k, bt, 1.0))};
	ir_yield(&k.b, 2, y2);
	k.b = save;
	ir_store(&k.b, ptrs(&k, arg(&k, 1), offs), &wo->res[1], NULL);
	(void)f32;
	ret(&k);
	return k.f;
}

/* atomic adds of a block, an atomic max, a scalar compare-and-swap */
static IrFunc *tk_atomics(IrModule *m)
{
	KB k;
	k.ctx = m->ctx;
	const IrType *i32 = ir_type(m->ctx, TY_I32);
	const IrType *ps[4] = {pty(&k, TY_F32), pty(&k, TY_I32), pty(&k, TY_I32), i32};
	kb_init(&k, m, "atomics", 4, ps);
	IrValue *offs = pid_offsets(&k, 256);
	IrValue *mask = ir_cmp(&k.b, "lt", offs, splat(&k, arg(&k, 3), offs->type));
	IrValue *vals = ir_cast(&k.b, OP_CAST, offs, ir_type_like(k.ctx, offs->type, ir_type(m->ctx, TY_F32)));
	IrValue *a1[3] = {ptrs(&k, arg(&k, 0), offs), vals, mask};
	IrValue *o1 = ir_build1(&k.b, OP_ATOMIC_RMW, vals->type, 3, a1);
	ir_op_set_str(k.ctx, o1->def, "kind", "add");
	ir_op_set_str(k.ctx, o1->def, "sem", "acq_rel");
	ir_op_set_str(k.ctx, o1->def, "scope", "gpu");
	IrValue *a2[2] = {ptrs(&k, arg(&k, 1), offs), offs};
	IrValue *o2 = ir_build1(&k.b, OP_ATOMIC_RMW, offs->type, 2, a2);
	ir_op_set_str(k.ctx, o2->def, "kind", "max");
	ir_op_set_str(k.ctx, o2->def, "sem", "relaxed");
	ir_op_set_str(k.ctx, o2->def, "scope", "cta");
	IrValue *a3[3] = {arg(&k, 2), ci(&k, i32, 0), ci(&k, i32, 1)};
	IrValue *o3 = ir_build1(&k.b, OP_ATOMIC_CAS, i32, 3, a3);
	ir_op_set_str(k.ctx, o3->def, "sem", "acquire");
	ir_op_set_str(k.ctx, o3->def, "scope", "sys");
	/* use the old values so they are not dead */
	IrValue *s = bin(&k, OP_ADD, o2, splat(&k, o3, o2->type));
	ir_store(&k.b, ptrs(&k, arg(&k, 1), offs), s, mask);
	ir_store(&k.b, ptrs(&k, arg(&k, 0), offs), o1, mask);
	ret(&k);
	return k.f;
}

/* conversions among f32, f16, bf16, f64, i8..i64, u8, i1 */
static IrFunc *tk_casts(IrModule *m)
{
	KB k;
	k.ctx = m->ctx;
	const IrType *ps[5] = {pty(&k, TY_F16), pty(&k, TY_BF16), pty(&k, TY_F32), pty(&k, TY_I8), pty(&k, TY_F64)};
	kb_init(&k, m, "casts", 5, ps);
	IrValue *offs = pid_offsets(&k, 256);
	const IrType *bt = offs->type;
#define LIKE(kind) ir_type_like(k.ctx, bt, ir_type(m->ctx, kind))
	IrValue *h = ir_load(&k.b, ptrs(&k, arg(&k, 0), offs), NULL, NULL);
	IrValue *bf = ir_load(&k.b, ptrs(&k, arg(&k, 1), offs), NULL, NULL);
	IrValue *u8 = ir_load(&k.b, ptrs(&k, arg(&k, 3), offs), NULL, NULL);
	IrValue *f = bin(&k, OP_ADD, ir_cast(&k.b, OP_CAST, h, LIKE(TY_F32)), ir_cast(&k.b, OP_CAST, bf, LIKE(TY_F32)));
	f = bin(&k, OP_ADD, f, ir_cast(&k.b, OP_CAST, u8, LIKE(TY_F32)));
	IrValue *i = ir_cast(&k.b, OP_CAST, f, LIKE(TY_I32));
	IrValue *l = ir_cast(&k.b, OP_CAST, i, LIKE(TY_I64));
	IrValue *u = ir_cast(&k.b, OP_CAST, l, LIKE(TY_U16));
	IrValue *b = ir_cast(&k.b, OP_CAST, u, LIKE(TY_I1));
	IrValue *g = ir_cast(&k.b, OP_CAST, ir_cast(&k.b, OP_CAST, b, LIKE(TY_I32)), LIKE(TY_F32));
	g = bin(&k, OP_ADD, g, ir_cast(&k.b, OP_CAST, u, LIKE(TY_F32)));
	IrValue *bits = ir_cast(&k.b, OP_BITCAST, g, LIKE(TY_I32));
	g = ir_cast(&k.b, OP_BITCAST, bin(&k, OP_XOR, bits, ci(&k, LIKE(TY_I32), 1)), LIKE(TY_F32));
	ir_store(&k.b, ptrs(&k, arg(&k, 0), offs), ir_cast(&k.b, OP_CAST, g, LIKE(TY_F16)), NULL);
	ir_store(&k.b, ptrs(&k, arg(&k, 1), offs), ir_cast(&k.b, OP_CAST, g, LIKE(TY_BF16)), NULL);
	ir_store(&k.b, ptrs(&k, arg(&k, 2), offs), g, NULL);
	ir_store(&k.b, ptrs(&k, arg(&k, 3), offs), ir_cast(&k.b, OP_CAST, g, LIKE(TY_I8)), NULL);
	ir_store(&k.b, ptrs(&k, arg(&k, 4), offs), ir_cast(&k.b, OP_CAST, g, LIKE(TY_F64)), NULL);
	ret(&k);
	return k.f;
#undef LIKE
}

/* every float elementwise op and math function (f32 and f64), every int op */
static IrFunc *tk_elementwise(IrModule *m)
{
	KB k;
	k.ctx = m->ctx;
	const IrType *ps[3] = {pty(&k, TY_F32), pty(&k, TY_I32), pty(&k, TY_F64)};
	kb_init(&k, m, "elementwise", 3, ps);
	IrValue *offs = pid_offsets(&k, 128);
	IrValue *x = ir_load(&k.b, ptrs(&k, arg(&k, 0), offs), NULL, NULL);
	IrValue *y = x;
	static const IrOpcode un[] = {OP_NEG, OP_EXP, OP_EXP2, OP_LOG, OP_LOG2, OP_SQRT, OP_RSQRT, OP_SIN,
				      OP_COS, OP_ERF, OP_FLOOR, OP_CEIL, OP_ABS};
	static const IrOpcode bi[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_REM, OP_MIN, OP_MAX};
	for (size_t i = 0; i < sizeof un / sizeof un[0]; i++)
		y = bin(&k, OP_ADD, y, ir_unary(&k.b, un[i], x));
	for (size_t i = 0; i < sizeof bi / sizeof bi[0]; i++)
		y = bin(&k, bi[i], y, x);
	IrValue *f3[3] = {x, y, x};
	y = ir_build1(&k.b, OP_FMA, x->type, 3, f3);
	y = ir_select(&k.b, ir_cmp(&k.b, "gt", y, x), y, x);
	IrValue *mn = ir_binary(&k.b, OP_MIN, y, x);
	ir_op_set_str(k.ctx, mn->def, "propagate_nan", "all");
	ir_store(&k.b, ptrs(&k, arg(&k, 0), offs), mn, NULL);
	/* f64 math */
	IrValue *d = ir_load(&k.b, ptrs(&k, arg(&k, 2), offs), NULL, NULL);
	IrValue *dd = d;
	for (size_t i = 0; i < sizeof un / sizeof un[0]; i++)
		dd = bin(&k, OP_ADD, dd, ir_unary(&k.b, un[i], d));
	ir_store(&k.b, ptrs(&k, arg(&k, 2), offs), dd, NULL);
	/* ints */
	IrValue *a = ir_load(&k.b, ptrs(&k, arg(&k, 1), offs), NULL, NULL);
	IrValue *b = a;
	static const IrOpcode ib[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_REM, OP_AND, OP_OR, OP_XOR,
				      OP_SHL, OP_SHR, OP_MIN, OP_MAX, OP_UMULHI};
	for (size_t i = 0; i < sizeof ib / sizeof ib[0]; i++)
		b = bin(&k, ib[i], b, bin(&k, OP_OR, a, ci(&k, a->type, 1)));
	b = bin(&k, OP_ADD, ir_unary(&k.b, OP_NOT, b), ir_unary(&k.b, OP_ABS, ir_unary(&k.b, OP_NEG, b)));
	ir_store(&k.b, ptrs(&k, arg(&k, 1), offs), b, NULL);
	ret(&k);
	return k.f;
}

/* c = a @ b + c for 32x32 f16 tiles, f32 accumulator (FMA path) */
static IrFunc *tk_dot(IrModule *m)
{
	KB k;
	k.ctx = m->ctx;
	const IrType *i32 = ir_type(m->ctx, TY_I32), *f32 = ir_type(m->ctx, TY_F32);
	const IrType *ps[3] = {pty(&k, TY_F16), pty(&k, TY_F16), pty(&k, TY_F32)};
	kb_init(&k, m, "dot", 3, ps);
	IrValue *offs = tile_offsets(&k, 32, 32, ci(&k, i32, 32));
	IrValue *a = ir_load(&k.b, ptrs(&k, arg(&k, 0), offs), NULL, NULL);
	IrValue *b = ir_load(&k.b, ptrs(&k, arg(&k, 1), offs), NULL, NULL);
	IrValue *c = ir_load(&k.b, ptrs(&k, arg(&k, 2), offs), NULL, NULL);
	IrValue *ops[3] = {a, b, c};
	IrValue *d = ir_build1(&k.b, OP_DOT, c->type, 3, ops);
	ir_store(&k.b, ptrs(&k, arg(&k, 2), offs), d, NULL);
	(void)f32;
	ret(&k);
	return k.f;
}

/* cumsum of a 16x64 tile along axis 1, transposed copy, reshape, join/split */
static IrFunc *tk_scan_shapes(IrModule *m)
{
	KB k;
	k.ctx = m->ctx;
	const IrType *i32 = ir_type(m->ctx, TY_I32);
	const IrType *ps[3] = {pty(&k, TY_F32), pty(&k, TY_F32), pty(&k, TY_F32)};
	kb_init(&k, m, "scan_shapes", 3, ps);
	IrValue *offs = tile_offsets(&k, 16, 64, ci(&k, i32, 64));
	IrValue *x = ir_load(&k.b, ptrs(&k, arg(&k, 0), offs), NULL, NULL);
	IrValue *cs = scan(&k, x, 1, OP_ADD);
	ir_store(&k.b, ptrs(&k, arg(&k, 1), offs), cs, NULL);
	const IrType *tt = blk2(&k, x->type->elem, 64, 16);
	IrValue *tr = ir_build1(&k.b, OP_TRANS, tt, 1, &x);
	int64_t ord[2] = {1, 0};
	ir_op_set_ints(k.ctx, tr->def, "order", 2, ord);
	IrValue *toffs = tile_offsets(&k, 64, 16, ci(&k, i32, 16));
	IrValue *rs = ir_build1(&k.b, OP_RESHAPE, tt, 1, &x);
	ir_store(&k.b, ptrs(&k, arg(&k, 2), toffs), bin(&k, OP_ADD, tr, rs), NULL);
	ret(&k);
	return k.f;
}

const TestKernel test_kernels[] = {
	{"vector_add", tk_vector_add},
	{"softmax_row", tk_softmax_row},
	{"reduce2d", tk_reduce2d},
	{"for_loop", tk_for_loop},
	{"if_while", tk_if_while},
	{"atomics", tk_atomics},
	{"casts", tk_casts},
	{"elementwise", tk_elementwise},
	{"dot", tk_dot},
	{"scan_shapes", tk_scan_shapes},
};
const int n_test_kernels = (int)(sizeof test_kernels / sizeof test_kernels[0]);
