/* passes_test.c: ir_dce and ir_cse on IR text.
 *
 * Each case is IR text in, the passes it runs, and the text expected out
 * (printed after the passes, then verified). The input must itself print
 * back unchanged, so the cases stay in canonical form.
 */
#include "ir/ir.h"

#include <stdlib.h>
#include <string.h>

static int ntests, nfailed;

enum { DCE = 1, CSE = 2, CSE_SCALARS = 4 };

typedef struct Case {
	const char *name;
	int passes; /* CSE (or CSE_SCALARS) runs before DCE */
	const char *in, *out;
} Case;

#define HEAD "module {num_warps = 4}\n\n"

static const Case cases[] = {
	{"dce drops an unused constant and a dead chain, keeps side effects", DCE,
	 HEAD "func kernel @k(%0: ptr<f32>, %1: i32) {\n"
	      "  %2 = constant {value = 7} : i32\n"
	      "  %3 = constant {value = 2.5} : f32\n"
	      "  %4 = splat %3 : block<16xf32>\n"
	      "  %5 = make_range {end = 16, start = 0} : block<16xi32>\n"
	      "  %6 = mul %1, %2 : i32\n"
	      "  %7 = add %6, %1 : i32\n"
	      "  %8 = splat %0 : block<16xptr<f32>>\n"
	      "  %9 = addptr %8, %5 : block<16xptr<f32>>\n"
	      "  %10 = load %9 : block<16xf32>\n"
	      "  store %9, %4\n"
	      "  return\n"
	      "}\n",
	 HEAD "func kernel @k(%0: ptr<f32>, %1: i32) {\n"
	      "  %2 = constant {value = 2.5} : f32\n"
	      "  %3 = splat %2 : block<16xf32>\n"
	      "  %4 = make_range {end = 16, start = 0} : block<16xi32>\n"
	      "  %5 = splat %0 : block<16xptr<f32>>\n"
	      "  %6 = addptr %5, %4 : block<16xptr<f32>>\n"
	      "  %7 = load %6 : block<16xf32>\n"
	      "  store %6, %3\n"
	      "  return\n"
	      "}\n"},
	{"dce inside regions: a dead reduce and dead loop-body ops go, the loop stays", DCE,
	 HEAD "func kernel @k(%0: ptr<f32>, %1: i32) {\n"
	      "  %2 = constant {value = 0} : i32\n"
	      "  %3 = constant {value = 1} : i32\n"
	      "  %4 = constant {value = 0.0} : f32\n"
	      "  %5 = for %2, %1, %3, %4 : f32 {\n"
	      "  ^(%6: i32, %7: f32):\n"
	      "    %8 = constant {value = 3} : i32\n"
	      "    %9 = mul %6, %8 : i32\n"
	      "    %10 = cast %6 : f32\n"
	      "    %11 = add %7, %10 : f32\n"
	      "    yield %11\n"
	      "  }\n"
	      "  %12 = make_range {end = 8, start = 0} : block<8xi32>\n"
	      "  %13 = reduce %12 {axis = 0} : i32 {\n"
	      "  ^(%14: i32, %15: i32):\n"
	      "    %16 = add %14, %15 : i32\n"
	      "    yield %16\n"
	      "  }\n"
	      "  store %0, %5\n"
	      "  return\n"
	      "}\n",
	 HEAD "func kernel @k(%0: ptr<f32>, %1: i32) {\n"
	      "  %2 = constant {value = 0} : i32\n"
	      "  %3 = constant {value = 1} : i32\n"
	      "  %4 = constant {value = 0.0} : f32\n"
	      "  %5 = for %2, %1, %3, %4 : f32 {\n"
	      "  ^(%6: i32, %7: f32):\n"
	      "    %8 = cast %6 : f32\n"
	      "    %9 = add %7, %8 : f32\n"
	      "    yield %9\n"
	      "  }\n"
	      "  store %0, %5\n"
	      "  return\n"
	      "}\n"},
	{"cse merges constants, commutative pairs and splats; keeps differing attrs and types", CSE | DCE,
	 HEAD "func kernel @k(%0: ptr<i32>, %1: i32) {\n"
	      "  %2 = constant {value = 4} : i32\n"
	      "  %3 = constant {value = 4} : i32\n"
	      "  %4 = constant {value = 4} : i64\n"
	      "  %5 = constant {value = 5} : i32\n"
	      "  %6 = mul %1, %2 : i32\n"
	      "  %7 = mul %3, %1 : i32\n"
	      "  %8 = sub %6, %7 : i32\n"
	      "  %9 = sub %7, %6 : i32\n"
	      "  %10 = cmp %8, %9 {pred = \"lt\"} : i1\n"
	      "  %11 = cmp %8, %9 {pred = \"lt\"} : i1\n"
	      "  %12 = cmp %8, %9 {pred = \"gt\"} : i1\n"
	      "  %13 = and %10, %11 : i1\n"
	      "  %14 = or %13, %12 : i1\n"
	      "  %15 = cast %14 : i32\n"
	      "  %16 = cast %4 : i32\n"
	      "  %17 = add %15, %16 : i32\n"
	      "  %18 = add %17, %5 : i32\n"
	      "  %19 = load %0 : i32\n"
	      "  %20 = load %0 : i32\n"
	      "  %21 = add %19, %20 : i32\n"
	      "  %22 = add %21, %18 : i32\n"
	      "  store %0, %22\n"
	      "  return\n"
	      "}\n",
	 HEAD "func kernel @k(%0: ptr<i32>, %1: i32) {\n"
	      "  %2 = constant {value = 4} : i32\n"
	      "  %3 = constant {value = 4} : i64\n"
	      "  %4 = constant {value = 5} : i32\n"
	      "  %5 = mul %1, %2 : i32\n"
	      "  %6 = sub %5, %5 : i32\n"
	      "  %7 = cmp %6, %6 {pred = \"lt\"} : i1\n"
	      "  %8 = cmp %6, %6 {pred = \"gt\"} : i1\n"
	      "  %9 = and %7, %7 : i1\n"
	      "  %10 = or %9, %8 : i1\n"
	      "  %11 = cast %10 : i32\n"
	      "  %12 = cast %3 : i32\n"
	      "  %13 = add %11, %12 : i32\n"
	      "  %14 = add %13, %4 : i32\n"
	      "  %15 = load %0 : i32\n"
	      "  %16 = load %0 : i32\n"
	      "  %17 = add %15, %16 : i32\n"
	      "  %18 = add %17, %14 : i32\n"
	      "  store %0, %18\n"
	      "  return\n"
	      "}\n"},
	{"cse respects regions: an outer op serves nested regions, siblings stay apart", CSE | DCE,
	 HEAD "func kernel @k(%0: ptr<i32>, %1: i32) {\n"
	      "  %2 = constant {value = 3} : i32\n"
	      "  %3 = constant {value = 0} : i32\n"
	      "  %4 = cmp %1, %3 {pred = \"gt\"} : i1\n"
	      "  %5 = if %4 : i32 {\n"
	      "    %6 = constant {value = 3} : i32\n"
	      "    %7 = constant {value = 9} : i32\n"
	      "    %8 = mul %1, %6 : i32\n"
	      "    %9 = add %8, %7 : i32\n"
	      "    yield %9\n"
	      "  } {\n"
	      "    %10 = constant {value = 9} : i32\n"
	      "    %11 = sub %1, %10 : i32\n"
	      "    yield %11\n"
	      "  }\n"
	      "  %12 = constant {value = 9} : i32\n"
	      "  %13 = mul %5, %12 : i32\n"
	      "  %14 = mul %5, %2 : i32\n"
	      "  %15 = add %13, %14 : i32\n"
	      "  store %0, %15\n"
	      "  return\n"
	      "}\n",
	 HEAD "func kernel @k(%0: ptr<i32>, %1: i32) {\n"
	      "  %2 = constant {value = 3} : i32\n"
	      "  %3 = constant {value = 0} : i32\n"
	      "  %4 = cmp %1, %3 {pred = \"gt\"} : i1\n"
	      "  %5 = if %4 : i32 {\n"
	      "    %6 = constant {value = 9} : i32\n"
	      "    %7 = mul %1, %2 : i32\n"
	      "    %8 = add %7, %6 : i32\n"
	      "    yield %8\n"
	      "  } {\n"
	      "    %9 = constant {value = 9} : i32\n"
	      "    %10 = sub %1, %9 : i32\n"
	      "    yield %10\n"
	      "  }\n"
	      "  %11 = constant {value = 9} : i32\n"
	      "  %12 = mul %5, %11 : i32\n"
	      "  %13 = mul %5, %2 : i32\n"
	      "  %14 = add %12, %13 : i32\n"
	      "  store %0, %14\n"
	      "  return\n"
	      "}\n"},
	{"cse then dce: a duplicate splat of a constant leaves one constant and one splat", CSE | DCE,
	 HEAD "func kernel @k(%0: ptr<f32>) {\n"
	      "  %1 = constant {value = 1.0} : f32\n"
	      "  %2 = splat %1 : block<4xf32>\n"
	      "  %3 = constant {value = 1.0} : f32\n"
	      "  %4 = splat %3 : block<4xf32>\n"
	      "  %5 = constant {value = -0.0} : f32\n"
	      "  %6 = constant {value = 0.0} : f32\n"
	      "  %7 = add %5, %6 : f32\n"
	      "  %8 = splat %7 : block<4xf32>\n"
	      "  %9 = add %2, %4 : block<4xf32>\n"
	      "  %10 = add %9, %8 : block<4xf32>\n"
	      "  %11 = splat %0 : block<4xptr<f32>>\n"
	      "  %12 = make_range {end = 4, start = 0} : block<4xi32>\n"
	      "  %13 = addptr %11, %12 : block<4xptr<f32>>\n"
	      "  store %13, %10\n"
	      "  return\n"
	      "}\n",
	 HEAD "func kernel @k(%0: ptr<f32>) {\n"
	      "  %1 = constant {value = 1.0} : f32\n"
	      "  %2 = splat %1 : block<4xf32>\n"
	      "  %3 = constant {value = -0.0} : f32\n"
	      "  %4 = constant {value = 0.0} : f32\n"
	      "  %5 = add %3, %4 : f32\n"
	      "  %6 = splat %5 : block<4xf32>\n"
	      "  %7 = add %2, %2 : block<4xf32>\n"
	      "  %8 = add %7, %6 : block<4xf32>\n"
	      "  %9 = splat %0 : block<4xptr<f32>>\n"
	      "  %10 = make_range {end = 4, start = 0} : block<4xi32>\n"
	      "  %11 = addptr %9, %10 : block<4xptr<f32>>\n"
	      "  store %11, %8\n"
	      "  return\n"
	      "}\n"},
	{"cse of scalars only: scalar duplicates merge, block duplicates stay", CSE_SCALARS | DCE,
	 HEAD "func kernel @k(%0: ptr<i32>, %1: i32) {\n"
	      "  %2 = make_range {end = 8, start = 0} : block<8xi32>\n"
	      "  %3 = make_range {end = 8, start = 0} : block<8xi32>\n"
	      "  %4 = constant {value = 2} : i32\n"
	      "  %5 = constant {value = 2} : i32\n"
	      "  %6 = mul %1, %4 : i32\n"
	      "  %7 = mul %1, %5 : i32\n"
	      "  %8 = splat %6 : block<8xi32>\n"
	      "  %9 = splat %7 : block<8xi32>\n"
	      "  %10 = add %2, %8 : block<8xi32>\n"
	      "  %11 = add %3, %9 : block<8xi32>\n"
	      "  %12 = add %10, %11 : block<8xi32>\n"
	      "  %13 = splat %0 : block<8xptr<i32>>\n"
	      "  %14 = addptr %13, %2 : block<8xptr<i32>>\n"
	      "  store %14, %12\n"
	      "  return\n"
	      "}\n",
	 HEAD "func kernel @k(%0: ptr<i32>, %1: i32) {\n"
	      "  %2 = make_range {end = 8, start = 0} : block<8xi32>\n"
	      "  %3 = make_range {end = 8, start = 0} : block<8xi32>\n"
	      "  %4 = constant {value = 2} : i32\n"
	      "  %5 = mul %1, %4 : i32\n"
	      "  %6 = splat %5 : block<8xi32>\n"
	      "  %7 = splat %5 : block<8xi32>\n"
	      "  %8 = add %2, %6 : block<8xi32>\n"
	      "  %9 = add %3, %7 : block<8xi32>\n"
	      "  %10 = add %8, %9 : block<8xi32>\n"
	      "  %11 = splat %0 : block<8xptr<i32>>\n"
	      "  %12 = addptr %11, %2 : block<8xptr<i32>>\n"
	      "  store %12, %10\n"
	      "  return\n"
	      "}\n"},
};

static bool same_text(const char *what, const char *want, const char *got)
{
	if (!strcmp(want, got))
		return true;
	fprintf(stderr, "%s: text differs\n--- want\n%s--- got\n%s", what, want, got);
	return false;
}

static bool run(const Case *c)
{
	IrCtx *ctx = ir_ctx_new();
	IrError *err = NULL;
	bool ok = false;
	IrModule *m = ir_parse(ctx, c->name, c->in, &err);
	if (!m) {
		fprintf(stderr, "%s: %s\n", c->name, ir_error_str(ctx, err));
		goto out;
	}
	if (!same_text("input round trip", c->in, ir_print_module(m)))
		goto out;
	if ((err = ir_verify(m))) {
		fprintf(stderr, "%s: input invalid: %s\n", c->name, ir_error_str(ctx, err));
		goto out;
	}
	if ((c->passes & CSE) && (err = ir_cse(m)))
		goto out;
	if ((c->passes & CSE_SCALARS) && (err = ir_cse_scalars(m)))
		goto out;
	if ((c->passes & DCE) && (err = ir_dce(m)))
		goto out;
	if ((err = ir_verify(m))) {
		fprintf(stderr, "%s: output invalid: %s\n", c->name, ir_error_str(ctx, err));
		goto out;
	}
	ok = same_text(c->name, c->out, ir_print_module(m));
out:
	ir_ctx_free(ctx);
	return ok;
}

/* ir_for_add_carried: a loop summing i gains a second carried value (a
 * counter); the new loop replaces the old one and takes its results' uses. */
static bool test_for_add_carried(void)
{
	const char *in =
		"func kernel @k(%0: ptr<i32>) loc(\"t.ttir\":1:1) {\n"
		"  %1 = constant {value = 0} : i32\n"
		"  %2 = constant {value = 8} : i32\n"
		"  %3 = constant {value = 1} : i32\n"
		"  %4 = for %1, %2, %3, %1 : i32 {\n"
		"  ^(%5: i32, %6: i32):\n"
		"    %7 = add %6, %5 : i32\n"
		"    yield %7\n"
		"  }\n"
		"  store %0, %4\n"
		"  return\n"
		"}\n";
	const char *want =
		"func kernel @k(%0: ptr<i32>) loc(\"t.ttir\":1:1) {\n"
		"  %1 = constant {value = 0} : i32\n"
		"  %2 = constant {value = 8} : i32\n"
		"  %3 = constant {value = 1} : i32\n"
		"  %4, %5 = for %1, %2, %3, %1, %1 : i32, i32 {\n"
		"  ^(%6: i32, %7: i32, %8: i32):\n"
		"    %9 = add %7, %6 : i32\n"
		"    %10 = add %8, %3 : i32\n"
		"    yield %9, %10\n"
		"  }\n"
		"  store %0, %4\n"
		"  return\n"
		"}\n";
	IrCtx *ctx = ir_ctx_new();
	IrError *err = NULL;
	bool ok = false;
	IrModule *m = ir_parse(ctx, "t.ttir", in, &err);
	if (!m) {
		fprintf(stderr, "for_add_carried: %s\n", ir_error_str(ctx, err));
		goto out;
	}
	IrFunc *f = m->funcs[0];
	IrOp *loop = f->body->first;
	while (loop->opc != OP_FOR)
		loop = loop->next;
	IrBlock *body = loop->regions[0];
	IrValue *init = loop->ops[0], *step = loop->ops[2];
	IrValue *count = ir_block_add_arg(ctx, body, init->type);
	IrBuilder b;
	ir_builder_init(&b, ctx);
	ir_builder_before(&b, ir_block_terminator(body));
	IrValue *next = ir_binary(&b, OP_ADD, count, step);
	IrOp *nl = ir_for_add_carried(f, loop, 1, &init, &next);
	if (nl->nres != 2 || loop->parent) {
		fprintf(stderr, "for_add_carried: %d results, old loop %s\n", nl->nres,
			loop->parent ? "still linked" : "unlinked");
		goto out;
	}
	if ((err = ir_verify(m))) {
		fprintf(stderr, "for_add_carried: output invalid: %s\n", ir_error_str(ctx, err));
		goto out;
	}
	ok = same_text("for_add_carried", want, ir_print_module(m));
out:
	ir_ctx_free(ctx);
	return ok;
}

int main(void)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bool ok = run(&cases[i]);
		ntests++;
		nfailed += !ok;
		printf("%s %d - %s\n", ok ? "ok" : "not ok", ntests, cases[i].name);
	}
	bool ok = test_for_add_carried();
	ntests++;
	nfailed += !ok;
	printf("%s %d - for_add_carried\n", ok ? "ok" : "not ok", ntests);
	printf("1..%d\n", ntests);
	return nfailed ? 1 : 0;
}
