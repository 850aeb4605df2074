/* verify_test.c: tests of the IR verifier (ir/verify.c).
 *
 * Three parts. (a) Unit tests build small programs with the builder, valid
 * and invalid, and check that ir_verify accepts the valid ones and reports
 * the invalid ones at the right op with the expected words. (b) The invalid
 * corpus: every tests/ir/invalid/<name>.ttir starts with a line
 * `// expect: FILE:LINE:COL: message substring`; the file is parsed and
 * verified, and the error string ("file:line:col: message") must contain the
 * expectation. (c) Every tests/ir/golden/<name>.ttir must parse and verify.
 *
 * The data directory is tests/ir relative to the working directory (Bazel
 * runs tests in the runfiles root); IR_TEST_DIR overrides it. Output is one
 * `ok N - name` / `not ok N - name` line per test; the exit status is
 * non-zero when any test fails.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* ------------------------------------------------------------------------- */
/* Harness                                                                   */
/* ------------------------------------------------------------------------- */

static int ntests, nfailed;

static void report(bool ok, const char *name)
{
	ntests++;
	if (!ok)
		nfailed++;
	printf("%sok %d - %s\n", ok ? "" : "not ", ntests, name);
	fflush(stdout);
}

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			return false;                                                              \
		}                                                                                  \
	} while (0)

/* A test's world: a ctx, a module, common types, and a builder. */
typedef struct Fx {
	IrCtx *ctx;
	IrModule *m;
	IrFunc *f;
	IrBuilder b;
	const IrType *i1, *i32, *i64, *f16, *f32, *pf32, *pi32;
} Fx;

static const char *const FILE_NAME = "t.py";

static void fx_init(Fx *x)
{
	memset(x, 0, sizeof *x);
	x->ctx = ir_ctx_new();
	x->m = ir_module_new(x->ctx);
	x->i1 = ir_type(x->ctx, TY_I1);
	x->i32 = ir_type(x->ctx, TY_I32);
	x->i64 = ir_type(x->ctx, TY_I64);
	x->f16 = ir_type(x->ctx, TY_F16);
	x->f32 = ir_type(x->ctx, TY_F32);
	x->pf32 = ir_type_ptr(x->ctx, x->f32, 1);
	x->pi32 = ir_type_ptr(x->ctx, x->i32, 1);
	ir_builder_init(&x->b, x->ctx);
}

/* A function @name at line 1 and the builder at the end of its body. */
static IrFunc *fx_func(Fx *x, const char *name, int np, const IrType **pt, int nr,
		       const IrType **rt)
{
	x->f = ir_func_new(x->m, name, np, pt, nr, rt, ir_loc(x->ctx, FILE_NAME, 1, 1));
	ir_builder_at_end(&x->b, x->f->body);
	return x->f;
}

static IrValue *param(Fx *x, int i)
{
	return x->f->body->args[i];
}

/* New ops get location t.py:line:5. */
static void at(Fx *x, int line)
{
	x->b.loc = ir_loc(x->ctx, FILE_NAME, line, 5);
}

static const IrType *blk1(Fx *x, const IrType *el, int64_t d0)
{
	return ir_type_block(x->ctx, el, 1, &d0, NULL);
}

static const IrType *blk2(Fx *x, const IrType *el, int64_t d0, int64_t d1)
{
	int64_t s[2] = {d0, d1};
	return ir_type_block(x->ctx, el, 2, s, NULL);
}

static void ret(Fx *x, int n, IrValue *const *v)
{
	ir_return(&x->b, n, v);
}

static bool expect_ok(Fx *x, IrError *e)
{
	if (e) {
		fprintf(stderr, "  expected no error, got %s\n", ir_error_str(x->ctx, e));
		char *text = ir_print_module(x->m);
		fprintf(stderr, "%s", text);
		return false;
	}
	return true;
}

/* e must be a verify error at t.py:line:5 (line 1: the function header)
 * whose message contains sub. */
static bool expect_err(Fx *x, IrError *e, int line, const char *sub)
{
	if (!e) {
		fprintf(stderr, "  expected an error \"%s\", got none\n", sub);
		fprintf(stderr, "%s", ir_print_module(x->m));
		return false;
	}
	int col = line == 1 ? 1 : 5;
	bool ok = e->code == IR_ERR_VERIFY && e->loc.line == line && e->loc.col == col &&
		  e->loc.file && strcmp(e->loc.file, FILE_NAME) == 0 && strstr(e->msg, sub);
	if (!ok)
		fprintf(stderr, "  expected %s:%d:%d: ...%s...\n  got      %s\n", FILE_NAME, line,
			col, sub, ir_error_str(x->ctx, e));
	return ok;
}

static bool verify_err(Fx *x, int line, const char *sub)
{
	return expect_err(x, ir_verify(x->m), line, sub);
}

/* A `for` over [lb, ub) by step with the given inits; its body holds the
 * induction variable and the iter args, and the builder is left in it. */
static IrOp *begin_for(Fx *x, IrValue *lb, IrValue *ub, IrValue *step, int n, IrValue **init)
{
	IrValue *ops[8] = {lb, ub, step};
	const IrType *rt[8] = {0};
	for (int i = 0; i < n; i++) {
		ops[3 + i] = init[i];
		rt[i] = init[i]->type;
	}
	IrOp *op = ir_build(&x->b, OP_FOR, 3 + n, ops, n, rt, 1);
	ir_block_add_arg(x->ctx, op->regions[0], lb->type);
	for (int i = 0; i < n; i++)
		ir_block_add_arg(x->ctx, op->regions[0], init[i]->type);
	ir_builder_at_end(&x->b, op->regions[0]);
	return op;
}

/* A reduce (or scan) of one input along axis with an `add` combiner. */
static IrOp *build_sum(Fx *x, IrOpcode opc, IrValue *in, int axis, const IrType *rt,
		       const IrType *argty)
{
	IrOp *op = ir_build(&x->b, opc, 1, &in, 1, &rt, 1);
	ir_op_set_int(x->ctx, op, "axis", axis);
	IrBlock *body = op->regions[0];
	IrValue *a = ir_block_add_arg(x->ctx, body, argty);
	IrValue *c = ir_block_add_arg(x->ctx, body, argty);
	IrBlock *saved = x->b.block;
	ir_builder_at_end(&x->b, body);
	IrValue *s = ir_binary(&x->b, OP_ADD, a, c);
	ir_yield(&x->b, 1, &s);
	ir_builder_at_end(&x->b, saved);
	return op;
}

/* ------------------------------------------------------------------------- */
/* Unit tests: valid programs                                                */
/* ------------------------------------------------------------------------- */

/* Triton's vector add. */
static bool test_vector_add(Fx *x)
{
	const IrType *pt[4] = {x->pf32, x->pf32, x->pf32, x->i32};
	fx_func(x, "add_kernel", 4, pt, 0, NULL);
	const IrType *vi = blk1(x, x->i32, 1024), *vp = blk1(x, x->pf32, 1024);
	at(x, 2);
	IrValue *pid = ir_program_id(&x->b, 0);
	IrValue *start = ir_binary(&x->b, OP_MUL, pid, ir_const_int(&x->b, x->i32, 1024));
	IrValue *offs =
		ir_binary(&x->b, OP_ADD, ir_splat(&x->b, start, vi), ir_make_range(&x->b, 0, 1024));
	IrValue *mask = ir_cmp(&x->b, "lt", offs, ir_splat(&x->b, param(x, 3), vi));
	IrValue *xv = ir_load(&x->b, ir_addptr(&x->b, ir_splat(&x->b, param(x, 0), vp), offs), mask,
			      NULL);
	IrValue *zero = ir_const_float(&x->b, blk1(x, x->f32, 1024), 0.0);
	IrValue *yv = ir_load(&x->b, ir_addptr(&x->b, ir_splat(&x->b, param(x, 1), vp), offs), mask,
			      zero);
	ir_store(&x->b, ir_addptr(&x->b, ir_splat(&x->b, param(x, 2), vp), offs),
		 ir_binary(&x->b, OP_ADD, xv, yv), mask);
	ret(x, 0, NULL);
	CHECK(expect_ok(x, ir_verify(x->m)));
	CHECK(expect_ok(x, ir_verify_func(x->f)));
	return true;
}

/* Control flow, reductions, calls, shape ops, atomics, hints, layouts. */
static bool test_valid_program(Fx *x)
{
	IrCtx *ctx = x->ctx;
	const IrType *f32 = x->f32, *i32 = x->i32;
	/* @g(f32) -> f32 */
	fx_func(x, "g", 1, &f32, 1, &f32);
	at(x, 2);
	IrValue *gv = param(x, 0);
	ret(x, 1, &gv);

	const IrType *pt[3] = {x->pf32, x->i32, x->pi32};
	fx_func(x, "k", 3, pt, 0, NULL);
	IrValue *p = param(x, 0), *n = param(x, 1), *pi = param(x, 2);
	at(x, 3);
	const IrType *v16f = blk1(x, f32, 16), *m16 = blk2(x, f32, 16, 16);
	IrValue *r16 = ir_make_range(&x->b, 0, 16);
	IrValue *e0 = ir_expand_dims(&x->b, r16, 1); /* 16x1 */
	IrValue *e1 = ir_expand_dims(&x->b, r16, 0); /* 1x16 */
	IrValue *b0 = ir_broadcast(&x->b, e0, blk2(x, i32, 16, 16));
	IrValue *b1 = ir_broadcast(&x->b, e1, blk2(x, i32, 16, 16));
	IrValue *idx = ir_binary(&x->b, OP_ADD, b0, b1);
	IrValue *ptrs = ir_addptr(&x->b, ir_splat(&x->b, p, blk2(x, x->pf32, 16, 16)), idx);
	IrValue *a = ir_load(&x->b, ptrs, NULL, NULL);
	IrValue *acc = ir_const_float(&x->b, m16, 0.0);
	IrValue *dops[3] = {a, a, acc};
	IrValue *d = ir_build1(&x->b, OP_DOT, m16, 3, dops);
	ir_op_set_str(ctx, d->def, "input_precision", "ieee");
	int64_t ord[2] = {1, 0};
	IrValue *t = ir_build1(&x->b, OP_TRANS, m16, 1, &d);
	ir_op_set_ints(ctx, t->def, "order", 2, ord);
	IrValue *rs = ir_build1(&x->b, OP_RESHAPE, blk1(x, f32, 256), 1, &t);
	IrValue *cops[2] = {rs, rs};
	IrValue *cat = ir_build1(&x->b, OP_CAT, blk1(x, f32, 512), 2, cops);
	IrValue *jops[2] = {r16, r16};
	IrValue *j = ir_build1(&x->b, OP_JOIN, blk2(x, i32, 16, 2), 2, jops);
	const IrType *st[2] = {blk1(x, i32, 16), blk1(x, i32, 16)};
	IrOp *sp = ir_build(&x->b, OP_SPLIT, 1, &j, 2, st, 0);
	IrValue *gops[2] = {a, idx};
	IrValue *ga = ir_build1(&x->b, OP_GATHER, m16, 2, gops);
	ir_op_set_int(ctx, ga->def, "axis", 1);
	IrValue *half = &sp->res[0];
	IrValue *h = ir_build1(&x->b, OP_HISTOGRAM, blk1(x, i32, 32), 1, &half);
	(void)h;
	(void)cat;
	/* reduce along axis 1, then to a scalar; scan */
	IrOp *red = build_sum(x, OP_REDUCE, ga, 1, v16f, f32);
	IrOp *red2 = build_sum(x, OP_REDUCE, &red->res[0], 0, f32, f32);
	IrOp *scan = build_sum(x, OP_SCAN, &red->res[0], 0, v16f, f32);
	ir_op_set_bool(ctx, scan, "reverse", true);
	/* hints */
	IrValue *mo = ir_build1(&x->b, OP_MULTIPLE_OF, i32, 1, &n);
	int64_t sixteen = 16;
	ir_op_set_ints(ctx, mo->def, "values", 1, &sixteen);
	IrValue *mc = ir_build1(&x->b, OP_MAX_CONTIGUOUS, blk1(x, i32, 16), 1, &r16);
	ir_op_set_ints(ctx, mc->def, "values", 1, &sixteen);
	IrValue *pos = ir_cmp(&x->b, "gt", mo, ir_const_int(&x->b, i32, 0));
	ir_build(&x->b, OP_ASSUME, 1, &pos, 0, NULL, 0);
	IrOp *as = ir_build(&x->b, OP_ASSERT, 1, &pos, 0, NULL, 0);
	ir_op_set_str(ctx, as, "msg", "n > 0");
	IrValue *prs[2] = {n, red2->res};
	IrOp *pr = ir_build(&x->b, OP_PRINT, 2, prs, 0, NULL, 0);
	ir_op_set_str(ctx, pr, "prefix", "n: ");
	ir_build(&x->b, OP_BARRIER, 0, NULL, 0, NULL, 0);
	/* casts */
	IrValue *cf = ir_cast(&x->b, OP_CAST, n, f32);
	ir_op_set_str(ctx, cf->def, "rounding", "rtz");
	IrValue *bc = ir_cast(&x->b, OP_BITCAST, cf, i32);
	IrValue *pint = ir_cast(&x->b, OP_PTR_TO_INT, p, x->i64);
	IrValue *back = ir_cast(&x->b, OP_INT_TO_PTR, pint, x->pf32);
	IrValue *ex = ir_build1(&x->b, OP_EXTERN, f32, 1, &cf);
	ir_op_set_str(ctx, ex->def, "symbol", "__nv_expf");
	ir_op_set_str(ctx, ex->def, "lib", "libdevice");
	IrValue *sel = ir_select(&x->b, pos, cf, ex);
	(void)bc;
	/* call */
	IrOp *call = ir_build(&x->b, OP_CALL, 1, &sel, 1, &f32, 0);
	ir_op_set_sym(ctx, call, "callee", "g");
	/* atomics */
	IrValue *aops[2] = {back, call->res};
	IrValue *old = ir_build1(&x->b, OP_ATOMIC_RMW, f32, 2, aops);
	ir_op_set_str(ctx, old->def, "kind", "add");
	ir_op_set_str(ctx, old->def, "sem", "acq_rel");
	ir_op_set_str(ctx, old->def, "scope", "gpu");
	IrValue *cas_ops[3] = {pi, n, n};
	IrValue *cas = ir_build1(&x->b, OP_ATOMIC_CAS, i32, 3, cas_ops);
	ir_op_set_str(ctx, cas->def, "sem", "relaxed");
	ir_op_set_str(ctx, cas->def, "scope", "cta");
	/* for with two iter args, an if inside */
	IrValue *c0 = ir_const_int(&x->b, i32, 0), *c1 = ir_const_int(&x->b, i32, 1);
	IrValue *init[2] = {old, scan->res};
	IrOp *loop = begin_for(x, c0, n, c1, 2, init);
	IrBlock *body = loop->regions[0];
	IrValue *iv = body->args[0];
	IrValue *cond = ir_cmp(&x->b, "eq", iv, c0);
	const IrType *ft = f32;
	IrOp *ifop = ir_build(&x->b, OP_IF, 1, &cond, 1, &ft, 2);
	ir_builder_at_end(&x->b, ifop->regions[0]);
	IrValue *s1 = ir_binary(&x->b, OP_ADD, body->args[1], old);
	ir_yield(&x->b, 1, &s1);
	ir_builder_at_end(&x->b, ifop->regions[1]);
	ir_yield(&x->b, 1, &body->args[1]);
	ir_builder_at_end(&x->b, body);
	IrValue *ys[2] = {ifop->res, body->args[2]};
	ir_yield(&x->b, 2, ys);
	ir_builder_at_end(&x->b, x->f->body);
	/* an if without results and an empty else */
	IrOp *if2 = ir_build(&x->b, OP_IF, 1, &pos, 0, NULL, 2);
	ir_builder_at_end(&x->b, if2->regions[0]);
	ir_store(&x->b, p, loop->res, NULL);
	ir_yield(&x->b, 0, NULL);
	ir_builder_at_end(&x->b, x->f->body);
	/* while (i < n) i = i + 1 */
	IrOp *w = ir_build(&x->b, OP_WHILE, 1, &c0, 1, &i32, 2);
	IrValue *wi = ir_block_add_arg(ctx, w->regions[0], i32);
	ir_builder_at_end(&x->b, w->regions[0]);
	IrValue *lt = ir_cmp(&x->b, "lt", wi, n);
	IrValue *cops2[2] = {lt, wi};
	ir_build(&x->b, OP_CONDITION, 2, cops2, 0, NULL, 0);
	IrValue *wa = ir_block_add_arg(ctx, w->regions[1], i32);
	ir_builder_at_end(&x->b, w->regions[1]);
	IrValue *inc = ir_binary(&x->b, OP_ADD, wa, c1);
	ir_yield(&x->b, 1, &inc);
	ir_builder_at_end(&x->b, x->f->body);
	ret(x, 0, NULL);
	CHECK(expect_ok(x, ir_verify(x->m)));
	return true;
}

/* TTGIR: blocked layouts, a slice layout after a reduce, convert_layout. */
static bool test_valid_layouts(Fx *x)
{
	IrCtx *ctx = x->ctx;
	ir_set_attr_int(ctx, &x->m->nattrs, &x->m->attrs, "num_warps", 4);
	IrLayout bl = {.kind = LAYOUT_BLOCKED, .rank = 2};
	int spt[2] = {1, 4}, tpw[2] = {8, 4}, wpc[2] = {4, 1}, ord[2] = {1, 0};
	memcpy(bl.size_per_thread, spt, sizeof spt);
	memcpy(bl.threads_per_warp, tpw, sizeof tpw);
	memcpy(bl.warps_per_cta, wpc, sizeof wpc);
	memcpy(bl.order, ord, sizeof ord);
	const IrLayout *L = ir_layout(ctx, &bl);
	IrLayout sl = {.kind = LAYOUT_SLICE, .rank = 1, .dim = 1, .parent = L};
	const IrLayout *S = ir_layout(ctx, &sl);
	IrLayout bl1 = {.kind = LAYOUT_BLOCKED, .rank = 1};
	bl1.size_per_thread[0] = 1;
	bl1.threads_per_warp[0] = 32;
	bl1.warps_per_cta[0] = 4;
	const IrLayout *L1 = ir_layout(ctx, &bl1);
	int64_t sh[2] = {32, 32}, sh1 = 32;
	const IrType *t = ir_type_block(ctx, x->f32, 2, sh, L);
	const IrType *rs = ir_type_block(ctx, x->f32, 1, &sh1, S);
	const IrType *r1 = ir_type_block(ctx, x->f32, 1, &sh1, L1);
	fx_func(x, "k", 1, &t, 1, &r1);
	at(x, 2);
	IrOp *red = build_sum(x, OP_REDUCE, param(x, 0), 1, rs, x->f32);
	IrValue *sum = red->res;
	IrValue *cv = ir_build1(&x->b, OP_CONVERT_LAYOUT, r1, 1, &sum);
	ret(x, 1, &cv);
	CHECK(expect_ok(x, ir_verify(x->m)));
	return true;
}

/* ------------------------------------------------------------------------- */
/* Unit tests: invalid programs                                              */
/* ------------------------------------------------------------------------- */

static bool test_add_type_mismatch(Fx *x)
{
	const IrType *pt[2] = {blk1(x, x->f32, 128), blk1(x, x->f32, 64)};
	fx_func(x, "k", 2, pt, 0, NULL);
	at(x, 2);
	ir_binary(&x->b, OP_ADD, param(x, 0), param(x, 1));
	at(x, 3);
	ret(x, 0, NULL);
	CHECK(verify_err(
		x, 2,
		"'add' operands must have the same type, got block<128xf32> and block<64xf32>"));
	return true;
}

static bool test_result_type(Fx *x)
{
	const IrType *pt[2] = {x->i32, x->i32};
	fx_func(x, "k", 2, pt, 0, NULL);
	at(x, 2);
	IrValue *ops[2] = {param(x, 0), param(x, 1)};
	ir_build1(&x->b, OP_SUB, x->f32, 2, ops);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'sub' result must have the operands' type i32, got f32"));
	return true;
}

static bool test_int_only(Fx *x)
{
	fx_func(x, "k", 1, &x->f32, 0, NULL);
	at(x, 2);
	ir_binary(&x->b, OP_SHL, param(x, 0), param(x, 0));
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'shl' needs integer operands, got f32"));
	return true;
}

static bool test_float_only(Fx *x)
{
	fx_func(x, "k", 1, &x->i32, 0, NULL);
	at(x, 3);
	ir_unary(&x->b, OP_EXP, param(x, 0));
	ret(x, 0, NULL);
	CHECK(verify_err(x, 3, "'exp' needs floating-point operands, got i32"));
	return true;
}

static bool test_operand_count(Fx *x)
{
	fx_func(x, "k", 1, &x->i32, 0, NULL);
	at(x, 2);
	IrValue *v = param(x, 0);
	ir_build1(&x->b, OP_ADD, x->i32, 1, &v);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'add' takes 2 operands, got 1"));
	return true;
}

static bool test_result_count(Fx *x)
{
	fx_func(x, "k", 1, &x->pf32, 0, NULL);
	at(x, 2);
	IrValue *ops[2] = {param(x, 0), ir_const_float(&x->b, x->f32, 1.0)};
	at(x, 3);
	ir_build(&x->b, OP_STORE, 2, ops, 1, &x->f32, 0);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 3, "'store' has 1 results, expected 0"));
	return true;
}

static bool test_elementwise_scalar_block(Fx *x)
{
	fx_func(x, "k", 1, &x->f32, 0, NULL);
	at(x, 4);
	ir_cast(&x->b, OP_CAST, param(x, 0), blk1(x, x->i32, 128));
	ret(x, 0, NULL);
	CHECK(verify_err(x, 4,
			 "'cast' operands and result must have one shape, got f32 (operand 0) and "
			 "block<128xi32> (result)"));
	return true;
}

static bool test_use_before_def(Fx *x)
{
	fx_func(x, "k", 1, &x->i32, 0, NULL);
	at(x, 2);
	IrValue *a = ir_binary(&x->b, OP_ADD, param(x, 0), param(x, 0));
	at(x, 3);
	IrValue *m = ir_binary(&x->b, OP_MUL, a, a);
	ir_op_set_operand(a->def, 1, m);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'add' operand 1 (a result of 'mul') used before its definition"));
	return true;
}

static bool test_value_from_other_function(Fx *x)
{
	fx_func(x, "a", 1, &x->i32, 0, NULL);
	IrValue *foreign = param(x, 0);
	at(x, 2);
	ret(x, 0, NULL);
	fx_func(x, "b", 1, &x->i32, 0, NULL);
	at(x, 3);
	ir_binary(&x->b, OP_ADD, param(x, 0), foreign);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 3, "'add' operand 1 (a block argument) used before its definition"));
	return true;
}

static bool test_region_value_escapes(Fx *x)
{
	fx_func(x, "k", 1, &x->i32, 0, NULL);
	at(x, 2);
	IrValue *n = param(x, 0);
	IrOp *loop = begin_for(x, n, n, n, 0, NULL);
	at(x, 3);
	IrValue *inner = ir_binary(&x->b, OP_ADD, loop->regions[0]->args[0], n);
	ir_yield(&x->b, 0, NULL);
	ir_builder_at_end(&x->b, x->f->body);
	at(x, 5);
	ir_binary(&x->b, OP_MUL, inner, n);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 5,
			 "'mul' operand 0 (a result of 'add') is defined inside a region that does "
			 "not enclose this op"));
	return true;
}

static bool test_for_without_yield(Fx *x)
{
	fx_func(x, "k", 1, &x->i32, 0, NULL);
	at(x, 2);
	IrValue *n = param(x, 0);
	begin_for(x, n, n, n, 0, NULL);
	at(x, 3);
	ir_binary(&x->b, OP_ADD, n, n);
	ir_builder_at_end(&x->b, x->f->body);
	at(x, 4);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'for' body must end with 'yield'"));
	return true;
}

static bool test_terminator_in_middle(Fx *x)
{
	fx_func(x, "k", 1, &x->i32, 0, NULL);
	at(x, 2);
	IrValue *n = param(x, 0);
	begin_for(x, n, n, n, 0, NULL);
	at(x, 3);
	ir_yield(&x->b, 0, NULL);
	at(x, 4);
	ir_binary(&x->b, OP_ADD, n, n);
	ir_builder_at_end(&x->b, x->f->body);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 3, "'yield' must be the last op of its block"));
	return true;
}

static bool test_wrong_terminator(Fx *x)
{
	fx_func(x, "k", 1, &x->i32, 0, NULL);
	at(x, 2);
	IrValue *n = param(x, 0);
	begin_for(x, n, n, n, 0, NULL);
	at(x, 3);
	ret(x, 0, NULL);
	ir_builder_at_end(&x->b, x->f->body);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 3, "'return' cannot end the 'for' body (expected 'yield')"));
	return true;
}

static bool test_missing_return(Fx *x)
{
	fx_func(x, "k", 1, &x->i32, 0, NULL);
	at(x, 2);
	ir_binary(&x->b, OP_ADD, param(x, 0), param(x, 0));
	CHECK(verify_err(x, 1, "function @k must end with 'return'"));
	return true;
}

static bool test_for_yield_types(Fx *x)
{
	fx_func(x, "k", 2, (const IrType *[]){x->i32, x->f32}, 0, NULL);
	at(x, 2);
	IrValue *n = param(x, 0), *v = param(x, 1);
	IrOp *loop = begin_for(x, n, n, n, 1, &v);
	at(x, 3);
	IrValue *iv = loop->regions[0]->args[0];
	ir_yield(&x->b, 1, &iv);
	ir_builder_at_end(&x->b, x->f->body);
	ret(x, 0, NULL);
	CHECK(verify_err(
		x, 3,
		"'yield' operand 0 must be f32 to match the 'for' loop-carried values, got i32"));
	return true;
}

static bool test_for_body_args(Fx *x)
{
	fx_func(x, "k", 2, (const IrType *[]){x->i32, x->f32}, 0, NULL);
	at(x, 2);
	IrValue *n = param(x, 0), *v = param(x, 1);
	IrValue *ops[4] = {n, n, n, v};
	IrOp *loop = ir_build(&x->b, OP_FOR, 4, ops, 1, &x->f32, 1);
	ir_block_add_arg(x->ctx, loop->regions[0], x->i32);
	ir_block_add_arg(x->ctx, loop->regions[0], x->f16);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'for' body argument 1 must be f32"));
	return true;
}

static bool test_make_range(Fx *x)
{
	fx_func(x, "k", 0, NULL, 0, NULL);
	at(x, 2);
	IrValue *r = ir_build1(&x->b, OP_MAKE_RANGE, blk1(x, x->i32, 128), 0, NULL);
	ir_op_set_int(x->ctx, r->def, "start", 0);
	ir_op_set_int(x->ctx, r->def, "end", 100);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'make_range' needs end > start and a power-of-two length"));
	return true;
}

static bool test_make_range_result(Fx *x)
{
	fx_func(x, "k", 0, NULL, 0, NULL);
	at(x, 2);
	IrValue *r = ir_build1(&x->b, OP_MAKE_RANGE, blk1(x, x->i32, 128), 0, NULL);
	ir_op_set_int(x->ctx, r->def, "start", 0);
	ir_op_set_int(x->ctx, r->def, "end", 64);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'make_range' result must be block<64xi32>"));
	return true;
}

static bool test_load_mask(Fx *x)
{
	const IrType *pt[2] = {blk1(x, x->pf32, 128), blk1(x, x->i1, 64)};
	fx_func(x, "k", 2, pt, 0, NULL);
	at(x, 6);
	ir_load(&x->b, param(x, 0), param(x, 1), NULL);
	ret(x, 0, NULL);
	CHECK(verify_err(
		x, 6,
		"'load' mask must be i1 of the pointer's shape (block<128xi1>), got block<64xi1>"));
	return true;
}

static bool test_load_other(Fx *x)
{
	const IrType *pt[3] = {x->pf32, x->i1, x->i32};
	fx_func(x, "k", 3, pt, 0, NULL);
	at(x, 2);
	ir_load(&x->b, param(x, 0), param(x, 1), param(x, 2));
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'load' other must have the result type f32, got i32"));
	return true;
}

static bool test_store_value(Fx *x)
{
	const IrType *pt[2] = {blk1(x, x->pf32, 128), blk1(x, x->f16, 128)};
	fx_func(x, "k", 2, pt, 0, NULL);
	at(x, 2);
	ir_store(&x->b, param(x, 0), param(x, 1), NULL);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'store' value must be block<128xf32>"));
	return true;
}

static bool test_load_cache(Fx *x)
{
	fx_func(x, "k", 1, &x->pf32, 0, NULL);
	at(x, 2);
	IrValue *v = ir_load(&x->b, param(x, 0), NULL, NULL);
	ir_op_set_str(x->ctx, v->def, "cache", "wt");
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'load' attribute 'cache' must be one of"));
	return true;
}

static bool test_cmp_pred(Fx *x)
{
	fx_func(x, "k", 1, &x->i32, 0, NULL);
	at(x, 2);
	ir_cmp(&x->b, "lq", param(x, 0), param(x, 0));
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2,
			 "'cmp' attribute 'pred' must be one of \"eq\", \"ne\", \"lt\", \"le\", "
			 "\"gt\", \"ge\", got \"lq\""));
	return true;
}

static bool test_cmp_result(Fx *x)
{
	fx_func(x, "k", 1, &x->i32, 0, NULL);
	at(x, 2);
	IrValue *ops[2] = {param(x, 0), param(x, 0)};
	IrValue *c = ir_build1(&x->b, OP_CMP, x->i32, 2, ops);
	ir_op_set_str(x->ctx, c->def, "pred", "eq");
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'cmp' result must be i1, got i32"));
	return true;
}

static bool test_select_cond(Fx *x)
{
	const IrType *pt[2] = {x->i1, blk1(x, x->f32, 32)};
	fx_func(x, "k", 2, pt, 0, NULL);
	at(x, 2);
	ir_select(&x->b, param(x, 0), param(x, 1), param(x, 1));
	ret(x, 0, NULL);
	CHECK(verify_err(
		x, 2,
		"'select' condition must be block<32xi1> (i1 of the operands' shape), got i1"));
	return true;
}

static bool test_program_id_axis(Fx *x)
{
	fx_func(x, "k", 0, NULL, 0, NULL);
	at(x, 2);
	ir_program_id(&x->b, 3);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'program_id' axis must be 0, 1 or 2, got 3"));
	return true;
}

static bool test_missing_attr(Fx *x)
{
	fx_func(x, "k", 0, NULL, 0, NULL);
	at(x, 2);
	ir_build1(&x->b, OP_NUM_PROGRAMS, x->i32, 0, NULL);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'num_programs' needs attribute 'axis' (an integer)"));
	return true;
}

static bool test_constant_kind(Fx *x)
{
	fx_func(x, "k", 0, NULL, 0, NULL);
	at(x, 2);
	IrValue *c = ir_build1(&x->b, OP_CONSTANT, x->i32, 0, NULL);
	ir_op_set_float(x->ctx, c->def, "value", 1.5);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2,
			 "'constant' value must be an integer for result type i32, got a float"));
	return true;
}

static bool test_call_args(Fx *x)
{
	fx_func(x, "g", 1, &x->f32, 1, &x->f32);
	at(x, 2);
	ret(x, 1, &x->f->body->args[0]);
	fx_func(x, "k", 1, &x->i32, 0, NULL);
	at(x, 4);
	IrValue *a = param(x, 0);
	IrOp *c = ir_build(&x->b, OP_CALL, 1, &a, 1, &x->f32, 0);
	ir_op_set_sym(x->ctx, c, "callee", "g");
	ret(x, 0, NULL);
	CHECK(verify_err(x, 4, "'call' argument 0 must be f32 (parameter 0 of @g), got i32"));
	return true;
}

static bool test_call_unknown(Fx *x)
{
	fx_func(x, "k", 0, NULL, 0, NULL);
	at(x, 2);
	IrOp *c = ir_build(&x->b, OP_CALL, 0, NULL, 0, NULL, 0);
	ir_op_set_sym(x->ctx, c, "callee", "nowhere");
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'call' callee @nowhere is not a function of this module"));
	return true;
}

static bool test_return_type(Fx *x)
{
	fx_func(x, "k", 1, &x->i32, 1, &x->f32);
	at(x, 2);
	ret(x, 1, &x->f->body->args[0]);
	CHECK(verify_err(x, 2, "'return' operand 0 must be f32 (result 0 of @k), got i32"));
	return true;
}

static bool test_if_empty_else_with_results(Fx *x)
{
	fx_func(x, "k", 2, (const IrType *[]){x->i1, x->f32}, 0, NULL);
	at(x, 2);
	IrValue *c = param(x, 0);
	IrOp *op = ir_build(&x->b, OP_IF, 1, &c, 1, &x->f32, 2);
	ir_builder_at_end(&x->b, op->regions[0]);
	at(x, 3);
	ir_yield(&x->b, 1, &x->f->body->args[1]);
	ir_builder_at_end(&x->b, x->f->body);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'if' else region must end with 'yield'"));
	return true;
}

static bool test_if_cond(Fx *x)
{
	fx_func(x, "k", 1, (const IrType *[]){blk1(x, x->i1, 4)}, 0, NULL);
	at(x, 2);
	IrValue *c = param(x, 0);
	IrOp *op = ir_build(&x->b, OP_IF, 1, &c, 0, NULL, 2);
	ir_builder_at_end(&x->b, op->regions[0]);
	ir_yield(&x->b, 0, NULL);
	ir_builder_at_end(&x->b, x->f->body);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'if' condition must be a scalar i1, got block<4xi1>"));
	return true;
}

static bool test_while_condition(Fx *x)
{
	fx_func(x, "k", 1, &x->i32, 0, NULL);
	at(x, 2);
	IrValue *n = param(x, 0);
	IrOp *w = ir_build(&x->b, OP_WHILE, 1, &n, 1, &x->i32, 2);
	IrValue *a = ir_block_add_arg(x->ctx, w->regions[0], x->i32);
	ir_builder_at_end(&x->b, w->regions[0]);
	at(x, 3);
	IrValue *ops[2] = {a, a};
	ir_build(&x->b, OP_CONDITION, 2, ops, 0, NULL, 0);
	IrValue *b = ir_block_add_arg(x->ctx, w->regions[1], x->i32);
	ir_builder_at_end(&x->b, w->regions[1]);
	ir_yield(&x->b, 1, &b);
	ir_builder_at_end(&x->b, x->f->body);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 3, "'condition' operand 0 must be a scalar i1, got i32"));
	return true;
}

static bool test_condition_outside_while(Fx *x)
{
	fx_func(x, "k", 1, &x->i1, 0, NULL);
	at(x, 2);
	IrValue *n = param(x, 0);
	IrOp *op = ir_build(&x->b, OP_IF, 1, &n, 0, NULL, 2);
	ir_builder_at_end(&x->b, op->regions[0]);
	at(x, 3);
	ir_build(&x->b, OP_CONDITION, 1, &n, 0, NULL, 0);
	ir_builder_at_end(&x->b, x->f->body);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 3, "'condition' cannot end the 'if' then region (expected 'yield')"));
	return true;
}

static bool test_reduce_region(Fx *x)
{
	fx_func(x, "k", 1, (const IrType *[]){blk2(x, x->f32, 8, 16)}, 0, NULL);
	at(x, 2);
	build_sum(x, OP_REDUCE, param(x, 0), 1, blk1(x, x->f32, 8), x->f16);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2,
			 "'reduce' region argument 0 must be f32 (the input element types, twice), "
			 "got f16"));
	return true;
}

static bool test_reduce_result(Fx *x)
{
	fx_func(x, "k", 1, (const IrType *[]){blk2(x, x->f32, 8, 16)}, 0, NULL);
	at(x, 2);
	build_sum(x, OP_REDUCE, param(x, 0), 1, blk1(x, x->f32, 16), x->f32);
	ret(x, 0, NULL);
	CHECK(verify_err(
		x, 2,
		"'reduce' result 0 must be block<8xf32> (input 0 reduced along axis 1), got "
		"block<16xf32>"));
	return true;
}

static bool test_reduce_yield(Fx *x)
{
	fx_func(x, "k", 1, (const IrType *[]){blk1(x, x->i32, 16)}, 0, NULL);
	at(x, 2);
	IrValue *in = param(x, 0);
	IrOp *op = ir_build(&x->b, OP_REDUCE, 1, &in, 1, &x->i32, 1);
	ir_op_set_int(x->ctx, op, "axis", 0);
	IrValue *a = ir_block_add_arg(x->ctx, op->regions[0], x->i32);
	ir_block_add_arg(x->ctx, op->regions[0], x->i32);
	ir_builder_at_end(&x->b, op->regions[0]);
	at(x, 3);
	IrValue *y[2] = {a, a};
	ir_yield(&x->b, 2, y);
	ir_builder_at_end(&x->b, x->f->body);
	ret(x, 0, NULL);
	CHECK(verify_err(
		x, 3,
		"'yield' must have 1 operands to match the 'reduce' input element types, got 2"));
	return true;
}

static bool test_dot_shapes(Fx *x)
{
	const IrType *pt[3] = {blk2(x, x->f16, 16, 32), blk2(x, x->f16, 16, 64),
			       blk2(x, x->f32, 16, 64)};
	fx_func(x, "k", 3, pt, 0, NULL);
	at(x, 2);
	IrValue *ops[3] = {param(x, 0), param(x, 1), param(x, 2)};
	ir_build1(&x->b, OP_DOT, pt[2], 3, ops);
	ret(x, 0, NULL);
	CHECK(verify_err(
		x, 2,
		"'dot' b must be 32xN to match a (MxK) block<16x32xf16>, got block<16x64xf16>"));
	return true;
}

static bool test_trans_order(Fx *x)
{
	const IrType *t = blk2(x, x->f32, 16, 32);
	fx_func(x, "k", 1, &t, 0, NULL);
	at(x, 2);
	IrValue *v = param(x, 0);
	IrValue *r = ir_build1(&x->b, OP_TRANS, blk2(x, x->f32, 32, 16), 1, &v);
	int64_t ord[2] = {1, 1};
	ir_op_set_ints(x->ctx, r->def, "order", 2, ord);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'trans' order [1, 1] must be a permutation of 0..1"));
	return true;
}

static bool test_broadcast_dims(Fx *x)
{
	const IrType *t = blk2(x, x->f32, 2, 32);
	fx_func(x, "k", 1, &t, 0, NULL);
	at(x, 2);
	ir_broadcast(&x->b, param(x, 0), blk2(x, x->f32, 4, 32));
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "dim 0 is 2, expected 4 or 1"));
	return true;
}

static bool test_atomic_kind(Fx *x)
{
	const IrType *pt[2] = {x->pf32, x->f32};
	fx_func(x, "k", 2, pt, 0, NULL);
	at(x, 2);
	IrValue *ops[2] = {param(x, 0), param(x, 1)};
	IrValue *r = ir_build1(&x->b, OP_ATOMIC_RMW, x->f32, 2, ops);
	ir_op_set_str(x->ctx, r->def, "kind", "xor");
	ir_op_set_str(x->ctx, r->def, "sem", "acq_rel");
	ir_op_set_str(x->ctx, r->def, "scope", "gpu");
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'atomic_rmw' kind \"xor\" needs integer values, got f32"));
	return true;
}

static bool test_atomic_sem(Fx *x)
{
	const IrType *pt[2] = {x->pi32, x->i32};
	fx_func(x, "k", 2, pt, 0, NULL);
	at(x, 2);
	IrValue *ops[2] = {param(x, 0), param(x, 1)};
	IrValue *r = ir_build1(&x->b, OP_ATOMIC_RMW, x->i32, 2, ops);
	ir_op_set_str(x->ctx, r->def, "kind", "max");
	ir_op_set_str(x->ctx, r->def, "sem", "seq_cst");
	ir_op_set_str(x->ctx, r->def, "scope", "gpu");
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'atomic_rmw' attribute 'sem' must be one of"));
	return true;
}

static bool test_layout_threads(Fx *x)
{
	IrLayout bl = {.kind = LAYOUT_BLOCKED, .rank = 1};
	bl.size_per_thread[0] = 1;
	bl.threads_per_warp[0] = 16;
	bl.warps_per_cta[0] = 4;
	int64_t n = 64;
	const IrType *t = ir_type_block(x->ctx, x->f32, 1, &n, ir_layout(x->ctx, &bl));
	fx_func(x, "k", 1, &x->f32, 0, NULL);
	at(x, 2);
	ir_splat(&x->b, param(x, 0), t);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'splat' result 0 type block<64xf32, #blocked"));
	CHECK(verify_err(x, 2, "tpw must multiply to 32 threads per warp, got 16"));
	return true;
}

static bool test_layout_rank(Fx *x)
{
	IrLayout bl = {.kind = LAYOUT_BLOCKED, .rank = 1};
	bl.size_per_thread[0] = 1;
	bl.threads_per_warp[0] = 32;
	bl.warps_per_cta[0] = 4;
	int64_t s[2] = {4, 64};
	const IrType *t = ir_type_block(x->ctx, x->f32, 2, s, ir_layout(x->ctx, &bl));
	fx_func(x, "k", 1, &t, 0, NULL);
	at(x, 2);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 1, "function @k parameter 0 type"));
	CHECK(verify_err(x, 1, "layout of rank 1 on a block of rank 2"));
	return true;
}

static bool test_hint_values(Fx *x)
{
	const IrType *t = blk2(x, x->i32, 16, 16);
	fx_func(x, "k", 1, &t, 0, NULL);
	at(x, 2);
	IrValue *v = param(x, 0);
	IrValue *r = ir_build1(&x->b, OP_MAX_CONTIGUOUS, t, 1, &v);
	int64_t vals[1] = {16};
	ir_op_set_ints(x->ctx, r->def, "values", 1, vals);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 2, "'max_contiguous' values must have 2 entries"));
	return true;
}

static bool test_duplicate_function(Fx *x)
{
	fx_func(x, "k", 0, NULL, 0, NULL);
	at(x, 2);
	ret(x, 0, NULL);
	fx_func(x, "k", 0, NULL, 0, NULL);
	at(x, 3);
	ret(x, 0, NULL);
	CHECK(verify_err(x, 1, "function @k is defined twice"));
	return true;
}

static bool test_first_error_wins(Fx *x)
{
	fx_func(x, "ok", 0, NULL, 0, NULL);
	at(x, 2);
	ret(x, 0, NULL);
	fx_func(x, "bad", 1, &x->f32, 0, NULL);
	at(x, 7);
	ir_binary(&x->b, OP_XOR, param(x, 0), param(x, 0));
	at(x, 8);
	ir_unary(&x->b, OP_NOT, param(x, 0));
	ret(x, 0, NULL);
	CHECK(verify_err(x, 7, "'xor' needs integer operands, got f32"));
	CHECK(expect_ok(x, ir_verify_func(x->m->funcs[0])));
	return true;
}

/* ------------------------------------------------------------------------- */
/* Text corpus and golden files                                              */
/* ------------------------------------------------------------------------- */

static char *read_file(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + n, 1, cap - n - 1, fp)) > 0) {
		n += got;
		if (cap - n - 1 == 0) {
			cap *= 2;
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				buf = NULL;
			}
			buf = nb;
		}
	}
	fclose(fp);
	if (buf)
		buf[n] = 0;
	return buf;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted names of dir's *.ttir files (malloc'd); -1 when dir is missing. */
static int list_ttir(const char *dir, char ***out)
{
	DIR *d = opendir(dir);
	*out = NULL;
	if (!d)
		return -1;
	int n = 0, cap = 0;
	char **v = NULL;
	struct dirent *ent;
	while ((ent = readdir(d))) {
		size_t len = strlen(ent->d_name);
		if (len < 5 || strcmp(ent->d_name + len - 5, ".ttir") != 0)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			char **nv = realloc(v, (size_t)cap * sizeof(char *));
			if (!nv)
				abort();
			v = nv;
		}
		v[n++] = strdup(ent->d_name);
	}
	closedir(d);
	if (n)
		qsort(v, (size_t)n, sizeof(char *), cmp_names);
	*out = v;
	return n;
}

static void free_names(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* The expectation of an invalid file: the rest of its `// expect: ` first line. */
static char *expectation(const char *text)
{
	static const char tag[] = "// expect: ";
	if (strncmp(text, tag, sizeof tag - 1) != 0)
		return NULL;
	const char *s = text + sizeof tag - 1;
	size_t n = strcspn(s, "\r\n");
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return strndup(s, n);
}

static bool run_invalid(const char *dir, const char *name)
{
	char *path = malloc(strlen(dir) + strlen(name) + 2);
	sprintf(path, "%s/%s", dir, name);
	char *text = read_file(path);
	free(path);
	if (!text) {
		fprintf(stderr, "  cannot read %s/%s\n", dir, name);
		return false;
	}
	char *want = expectation(text);
	bool ok = false;
	if (!want) {
		fprintf(stderr,
			"  %s: the first line must be `// expect: FILE:LINE:COL: message`\n", name);
		free(text);
		return false;
	}
	IrCtx *ctx = ir_ctx_new();
	IrError *err = NULL;
	IrModule *m = ir_parse(ctx, name, text, &err);
	if (m)
		err = ir_verify(m);
	if (!err) {
		fprintf(stderr, "  %s: expected \"%s\", but the program parsed and verified\n",
			name, want);
	} else {
		const char *got = ir_error_str(ctx, err);
		ok = strstr(got, want) != NULL;
		if (!ok)
			fprintf(stderr, "  %s:\n    expected %s\n    got      %s\n", name, want,
				got);
	}
	ir_ctx_free(ctx);
	free(want);
	free(text);
	return ok;
}

static bool run_golden(const char *dir, const char *name)
{
	char *path = malloc(strlen(dir) + strlen(name) + 2);
	sprintf(path, "%s/%s", dir, name);
	char *text = read_file(path);
	if (!text) {
		fprintf(stderr, "  cannot read %s\n", path);
		free(path);
		return false;
	}
	IrCtx *ctx = ir_ctx_new();
	IrError *err = NULL;
	IrModule *m = ir_parse(ctx, path, text, &err);
	const char *stage = "parse";
	if (m) {
		stage = "verify";
		err = ir_verify(m);
	}
	if (err)
		fprintf(stderr, "  %s: %s failed: %s\n", name, stage, ir_error_str(ctx, err));
	bool ok = err == NULL;
	ir_ctx_free(ctx);
	free(text);
	free(path);
	return ok;
}

/* Runs fn over the .ttir files of base/sub; a missing or empty directory is a note, not a failure.
 */
static void run_dir(const char *base, const char *sub, bool (*fn)(const char *, const char *))
{
	char *dir = malloc(strlen(base) + strlen(sub) + 2);
	sprintf(dir, "%s/%s", base, sub);
	char **names;
	int n = list_ttir(dir, &names);
	if (n <= 0)
		printf("# %s: %s, skipped\n", dir, n < 0 ? "no such directory" : "no .ttir files");
	for (int i = 0; i < n; i++) {
		char *label = malloc(strlen(sub) + strlen(names[i]) + 2);
		sprintf(label, "%s/%s", sub, names[i]);
		report(fn(dir, names[i]), label);
		free(label);
	}
	free_names(names, n < 0 ? 0 : n);
	free(dir);
}

/* ------------------------------------------------------------------------- */
/* Main                                                                      */
/* ------------------------------------------------------------------------- */

typedef struct Test {
	const char *name;
	bool (*fn)(Fx *);
} Test;

#define T(name)                                                                                    \
	{                                                                                          \
#name, test_##name                                                                 \
	}
static const Test tests[] = {
	T(vector_add),
	T(valid_program),
	T(valid_layouts),
	T(add_type_mismatch),
	T(result_type),
	T(int_only),
	T(float_only),
	T(operand_count),
	T(result_count),
	T(elementwise_scalar_block),
	T(use_before_def),
	T(value_from_other_function),
	T(region_value_escapes),
	T(for_without_yield),
	T(terminator_in_middle),
	T(wrong_terminator),
	T(missing_return),
	T(for_yield_types),
	T(for_body_args),
	T(make_range),
	T(make_range_result),
	T(load_mask),
	T(load_other),
	T(store_value),
	T(load_cache),
	T(cmp_pred),
	T(cmp_result),
	T(select_cond),
	T(program_id_axis),
	T(missing_attr),
	T(constant_kind),
	T(call_args),
	T(call_unknown),
	T(return_type),
	T(if_empty_else_with_results),
	T(if_cond),
	T(while_condition),
	T(condition_outside_while),
	T(reduce_region),
	T(reduce_result),
	T(reduce_yield),
	T(dot_shapes),
	T(trans_order),
	T(broadcast_dims),
	T(atomic_kind),
	T(atomic_sem),
	T(layout_threads),
	T(layout_rank),
	T(hint_values),
	T(duplicate_function),
	T(first_error_wins),
};
#undef T

int main(void)
{
	for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
		Fx x;
		fx_init(&x);
		bool ok = tests[i].fn(&x);
		ir_ctx_free(x.ctx);
		report(ok, tests[i].name);
	}
	const char *base = getenv("IR_TEST_DIR");
	if (!base || !*base)
		base = "tests/ir";
	run_dir(base, "invalid", run_invalid);
	run_dir(base, "golden", run_golden);
	printf("1..%d\n", ntests);
	if (nfailed)
		printf("# %d of %d failed\n", nfailed, ntests);
	return nfailed ? 1 : 0;
}
