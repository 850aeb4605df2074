/* print_parse_test.c: the textual form of the IR.
 *
 * 1. Functions made with the builder print as expected, and read back.
 * 2. Every .ttir file in tests/ir/golden/ round-trips byte for byte, and the
 *    corpus together uses every op, type kind, attribute kind and layout kind
 *    (plus nested regions, calls, multiple results, ranks 1-3, addrspace 3).
 * 3. Malformed text gives IR_ERR_PARSE with the expected "file:line:col: msg".
 * 4. Every golden file cut at every byte, and with bytes flipped, parses or
 *    fails cleanly (run under ASan to make this mean something).
 *
 * The golden directory is $CTRITON_GOLDEN_DIR, else tests/ir/golden relative
 * to the working directory (Bazel runs tests in the runfiles root), else
 * $TEST_SRCDIR/ctriton/tests/ir/golden.
 */
#include "ir/ir.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int ntests, nfailed;
static bool cur_ok;

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
				#cond);                                              \
			cur_ok = false;                                              \
		}                                                                    \
	} while (0)

static void begin(void)
{
	cur_ok = true;
}

static void end(const char *name)
{
	ntests++;
	if (!cur_ok)
		nfailed++;
	printf("%s %d - %s\n", cur_ok ? "ok" : "not ok", ntests, name);
}

/* Compares two texts; on a difference prints the first differing line. */
static bool same_text(const char *what, const char *want, const char *got)
{
	if (!strcmp(want, got))
		return true;
	int line = 1;
	const char *w = want, *g = got;
	while (*w && *w == *g) {
		if (*w == '\n')
			line++;
		w++;
		g++;
	}
	const char *wl = w, *gl = g;
	while (wl > want && wl[-1] != '\n')
		wl--;
	while (gl > got && gl[-1] != '\n')
		gl--;
	fprintf(stderr, "%s: texts differ at line %d\n  want: %.*s\n  got:  %.*s\n", what, line,
		(int)strcspn(wl, "\n"), wl, (int)strcspn(gl, "\n"), gl);
	return false;
}

/* parse(text) then print must give text again. */
static bool reparses_to(const char *what, const char *text)
{
	IrCtx *ctx = ir_ctx_new();
	IrError *err = NULL;
	IrModule *m = ir_parse(ctx, what, text, &err);
	bool ok = false;
	if (!m)
		fprintf(stderr, "%s: %s\n", what, ir_error_str(ctx, err));
	else
		ok = same_text(what, text, ir_print_module(m));
	ir_ctx_free(ctx);
	return ok;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *s = malloc(cap);
	size_t k;
	while (s && (k = fread(s + n, 1, cap - n - 1, f)) > 0) {
		n += k;
		if (n + 1 == cap) {
			char *t = realloc(s, cap *= 2);
			if (!t) {
				free(s);
				s = NULL;
			}
			s = t;
		}
	}
	fclose(f);
	if (s)
		s[n] = 0;
	if (len)
		*len = n;
	return s;
}

/* ------------------------------------------------------------------------- */
/* 1. Builder-made functions                                                 */
/* ------------------------------------------------------------------------- */

static const char *const want_add =
	"module {num_warps = 4}\n"
	"\n"
	"func kernel @add_kernel(%0: ptr<f32> {divisibility = 16}, %1: ptr<f32>, %2: ptr<f32>, "
	"%3: i32) loc(\"add.py\":4:1) {\n"
	"  %4 = program_id {axis = 0} : i32 loc(6:10)\n"
	"  %5 = constant {value = 1024} : i32 loc(7:11)\n"
	"  %6 = mul %4, %5 : i32 loc(7:11)\n"
	"  %7 = make_range {end = 1024, start = 0} : block<1024xi32> loc(7:24)\n"
	"  %8 = splat %6 : block<1024xi32> loc(7:11)\n"
	"  %9 = add %8, %7 : block<1024xi32> loc(7:11)\n"
	"  %10 = splat %3 : block<1024xi32> loc(8:11)\n"
	"  %11 = cmp %9, %10 {pred = \"lt\"} : block<1024xi1> loc(8:11)\n"
	"  %12 = splat %0 : block<1024xptr<f32>> loc(9:8)\n"
	"  %13 = addptr %12, %9 : block<1024xptr<f32>> loc(9:8)\n"
	"  %14 = load %13, %11 : block<1024xf32> loc(9:8)\n"
	"  %15 = splat %2 : block<1024xptr<f32>> loc(11:4)\n"
	"  %16 = addptr %15, %9 : block<1024xptr<f32>> loc(11:4)\n"
	"  store %16, %14, %11 loc(11:4)\n"
	"  return\n"
	"}\n";

static void test_builder_add(void)
{
	begin();
	IrCtx *ctx = ir_ctx_new();
	IrModule *m = ir_module_new(ctx);
	ir_set_attr_int(ctx, &m->nattrs, &m->attrs, "num_warps", 4);
	const IrType *f32 = ir_type(ctx, TY_F32), *i32 = ir_type(ctx, TY_I32);
	const IrType *pf32 = ir_type_ptr(ctx, f32, 1);
	const IrType *ptys[4] = {pf32, pf32, pf32, i32};
	IrFunc *f = ir_func_new(m, "add_kernel", 4, ptys, 0, NULL, ir_loc(ctx, "add.py", 4, 1));
	f->is_kernel = true;
	ir_set_attr_int(ctx, &f->params[0].nattrs, &f->params[0].attrs, "divisibility", 16);
	IrValue **p = f->body->args;
	int64_t n = 1024;
	const IrType *bi32 = ir_type_block(ctx, i32, 1, &n, NULL);
	const IrType *bptr = ir_type_block(ctx, pf32, 1, &n, NULL);

	IrBuilder b;
	ir_builder_init(&b, ctx);
	ir_builder_at_end(&b, f->body);
	b.loc = ir_loc(ctx, "add.py", 6, 10);
	IrValue *pid = ir_program_id(&b, 0);
	b.loc = ir_loc(ctx, "add.py", 7, 11);
	IrValue *c = ir_const_int(&b, i32, 1024);
	IrValue *start = ir_binary(&b, OP_MUL, pid, c);
	b.loc = ir_loc(ctx, "add.py", 7, 24);
	IrValue *r = ir_make_range(&b, 0, 1024);
	b.loc = ir_loc(ctx, "add.py", 7, 11);
	IrValue *offs = ir_binary(&b, OP_ADD, ir_splat(&b, start, bi32), r);
	b.loc = ir_loc(ctx, "add.py", 8, 11);
	IrValue *mask = ir_cmp(&b, "lt", offs, ir_splat(&b, p[3], bi32));
	b.loc = ir_loc(ctx, "add.py", 9, 8);
	IrValue *x = ir_load(&b, ir_addptr(&b, ir_splat(&b, p[0], bptr), offs), mask, NULL);
	b.loc = ir_loc(ctx, "add.py", 11, 4);
	ir_store(&b, ir_addptr(&b, ir_splat(&b, p[2], bptr), offs), x, mask);
	b.loc = (IrLoc){0};
	ir_return(&b, 0, NULL);

	char *got = ir_print_module(m);
	CHECK(same_text("builder add", want_add, got));
	CHECK(reparses_to("builder add", got));
	/* ir_print_func is the same text without the module line */
	CHECK(!strcmp(ir_print_func(f), want_add + strlen("module {num_warps = 4}\n\n")));
	ir_ctx_free(ctx);
	end("builder: vector add prints as expected and reparses");
}

static const char *const want_ctl =
	"func noinline @loops(%0: i32, %1: block<16xf32>) -> (f32, block<16xf32>) "
	"{tag = type(ptr<f16, 3>)} loc(\"k.py\":1:1) {\n"
	"  %2 = constant {value = 0} : i32\n"
	"  %3 = constant {value = 1} : i32\n"
	"  %4, %5 = for %2, %0, %3, %1 {num_stages = 3} : block<16xf32>, i32 {\n"
	"  ^(%6: i32, %7: block<16xf32>):\n"
	"    %8 = cmp %6, %2 {pred = \"eq\"} : i1 loc(\"lib.py\":10:2)\n"
	"    %9 = if %8 : block<16xf32> {\n"
	"      %10 = exp %7 : block<16xf32> loc(3:5)\n"
	"      yield %10\n"
	"    } {\n"
	"      yield %7\n"
	"    } loc(3:3)\n"
	"    yield %9, %6\n"
	"  } loc(2:3)\n"
	"  %11 = reduce %4 {axis = 0} : f32 {\n"
	"  ^(%12: f32, %13: f32):\n"
	"    %14 = add %12, %13 : f32\n"
	"    yield %14\n"
	"  }\n"
	"  %15 = constant {value = 1.0} : f32\n"
	"  %16 = constant {value = 0.5} : f32\n"
	"  %17 = constant {value = -inf} : f32\n"
	"  %18 = constant {value = 1e+30} : f32\n"
	"  %19 = constant {value = 1.0000000000000001e-05} : f32\n"
	"  %20 = constant {value = -0.0} : f32\n"
	"  %21 = constant {value = nan} : f32\n"
	"  print %11, %15 {hex = true, prefix = \"a\\\"b\\\\c\\n\\t\\x01\\xff\"}\n"
	"  %22 = call %21 {callee = @other, order = [1, 0, -3], x = []} : f32\n"
	"  return %22, %4\n"
	"}\n";

static void test_builder_control(void)
{
	begin();
	IrCtx *ctx = ir_ctx_new();
	IrModule *m = ir_module_new(ctx);
	const IrType *f32 = ir_type(ctx, TY_F32), *i32 = ir_type(ctx, TY_I32);
	int64_t n = 16;
	const IrType *bf = ir_type_block(ctx, f32, 1, &n, NULL);
	const IrType *ptys[2] = {i32, bf}, *rtys[2] = {f32, bf};
	IrFunc *f = ir_func_new(m, "loops", 2, ptys, 2, rtys, ir_loc(ctx, "k.py", 1, 1));
	f->noinline = true;
	IrAttr ta = {.name = "tag", .kind = ATTR_TYPE,
		     .type = ir_type_ptr(ctx, ir_type(ctx, TY_F16), 3)};
	ir_set_attr(ctx, &f->nattrs, &f->attrs, &ta);

	IrBuilder b;
	ir_builder_init(&b, ctx);
	ir_builder_at_end(&b, f->body);
	IrValue *c0 = ir_const_int(&b, i32, 0), *c1 = ir_const_int(&b, i32, 1);
	/* results deliberately in another order than the loop's natural one */
	IrValue *ops[4] = {c0, f->body->args[0], c1, f->body->args[1]};
	const IrType *fty[2] = {bf, i32};
	IrOp *loop = ir_build(&b, OP_FOR, 4, ops, 2, fty, 1);
	loop->loc = ir_loc(ctx, "k.py", 2, 3);
	ir_op_set_int(ctx, loop, "num_stages", 3);
	IrBlock *body = loop->regions[0];
	IrValue *iv = ir_block_add_arg(ctx, body, i32);
	IrValue *acc = ir_block_add_arg(ctx, body, bf);
	ir_builder_at_end(&b, body);
	b.loc = ir_loc(ctx, "lib.py", 10, 2);
	IrValue *first = ir_cmp(&b, "eq", iv, c0);
	b.loc = (IrLoc){0};
	IrOp *ifop = ir_build(&b, OP_IF, 1, &first, 1, &bf, 2);
	ifop->loc = ir_loc(ctx, "k.py", 3, 3);
	ir_builder_at_end(&b, ifop->regions[0]);
	b.loc = ir_loc(ctx, "k.py", 3, 5);
	IrValue *e = ir_unary(&b, OP_EXP, acc);
	b.loc = (IrLoc){0};
	ir_yield(&b, 1, &e);
	ir_builder_at_end(&b, ifop->regions[1]);
	ir_yield(&b, 1, &acc);
	ir_builder_at_end(&b, body);
	IrValue *ys[2] = {&ifop->res[0], iv};
	ir_yield(&b, 2, ys);

	ir_builder_at_end(&b, f->body);
	IrValue *red_in = &loop->res[0];
	IrOp *red = ir_build(&b, OP_REDUCE, 1, &red_in, 1, &f32, 1);
	ir_op_set_int(ctx, red, "axis", 0);
	IrValue *ra = ir_block_add_arg(ctx, red->regions[0], f32);
	IrValue *rb = ir_block_add_arg(ctx, red->regions[0], f32);
	ir_builder_at_end(&b, red->regions[0]);
	IrValue *s = ir_binary(&b, OP_ADD, ra, rb);
	ir_yield(&b, 1, &s);
	ir_builder_at_end(&b, f->body);
	IrValue *one = ir_const_float(&b, f32, 1.0);
	ir_const_float(&b, f32, 0.5);
	ir_const_float(&b, f32, -HUGE_VAL);
	ir_const_float(&b, f32, 1e30);
	ir_const_float(&b, f32, 1e-5);
	ir_const_float(&b, f32, -0.0);
	IrValue *nanv = ir_const_float(&b, f32, NAN);
	IrValue *pv[2] = {&red->res[0], one};
	IrOp *pr = ir_build(&b, OP_PRINT, 2, pv, 0, NULL, 0);
	ir_op_set_str(ctx, pr, "prefix", "a\"b\\c\n\t\x01\xff");
	ir_op_set_bool(ctx, pr, "hex", true);
	IrOp *call = ir_build(&b, OP_CALL, 1, &nanv, 1, &f32, 0);
	ir_op_set_sym(ctx, call, "callee", "other");
	int64_t ord[3] = {1, 0, -3};
	ir_op_set_ints(ctx, call, "order", 3, ord);
	ir_op_set_ints(ctx, call, "x", 0, NULL);
	IrValue *rv[2] = {&call->res[0], &loop->res[0]};
	ir_return(&b, 2, rv);

	char *got = ir_print_func(f);
	CHECK(same_text("builder control", want_ctl, got));
	CHECK(reparses_to("builder control", got));

	/* ir_dump_op: one op with its regions, numbered as in the function */
	char *dump = NULL;
	size_t dumplen = 0;
	FILE *mem = open_memstream(&dump, &dumplen);
	CHECK(mem != NULL);
	if (mem) {
		ir_dump_op(mem, red);
		fclose(mem);
		CHECK(dump && !strcmp(dump, "%11 = reduce %4 {axis = 0} : f32 {\n"
					    "^(%12: f32, %13: f32):\n"
					    "  %14 = add %12, %13 : f32\n"
					    "  yield %14\n"
					    "}\n"));
		free(dump);
	}
	ir_ctx_free(ctx);
	end("builder: regions, block args, locs, float/str/list/type/sym attrs");
}

static void test_types_and_layouts(void)
{
	begin();
	IrCtx *ctx = ir_ctx_new();
	IrLayout bl = {.kind = LAYOUT_BLOCKED, .rank = 2, .size_per_thread = {1, 4},
		       .threads_per_warp = {8, 4}, .warps_per_cta = {4, 1}, .order = {1, 0}};
	const IrLayout *blocked = ir_layout(ctx, &bl);
	IrLayout sl = {.kind = LAYOUT_SLICE, .rank = 1, .dim = 1, .parent = blocked};
	IrLayout sh = {.kind = LAYOUT_SHARED, .rank = 2, .vec = 8, .per_phase = 1, .max_phase = 8,
		       .order = {1, 0}};
	IrLayout mm = {.kind = LAYOUT_MMA, .rank = 2, .version_major = 2, .warps_per_cta = {2, 2},
		       .instr_shape = {16, 8}};
	const IrLayout *mma = ir_layout(ctx, &mm);
	IrLayout dot = {.kind = LAYOUT_DOT_OP, .rank = 2, .opidx = 0, .parent = mma, .k_width = 2};
	static const char *const want[] = {
		"#blocked<spt = [1, 4], tpw = [8, 4], wpc = [4, 1], order = [1, 0]>",
		"#slice<dim = 1, parent = #blocked<spt = [1, 4], tpw = [8, 4], wpc = [4, 1], order = "
		"[1, 0]>>",
		"#shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0]>",
		"#mma<version = [2, 0], wpc = [2, 2], instr = [16, 8]>",
		"#dot_op<opidx = 0, parent = #mma<version = [2, 0], wpc = [2, 2], instr = [16, 8]>, "
		"k_width = 2>",
	};
	const IrLayout *ls[5] = {blocked, ir_layout(ctx, &sl), ir_layout(ctx, &sh), mma,
				 ir_layout(ctx, &dot)};
	int64_t shapes[5][2] = {{16, 64}, {16, 0}, {64, 32}, {64, 64}, {64, 32}};
	for (int i = 0; i < 5; i++) {
		CHECK(!strcmp(ir_print_layout(ctx, ls[i]), want[i]));
		/* through a block type and back: the same interned type */
		const IrType *t = ir_type_block(ctx, ir_type(ctx, TY_F16), ls[i]->rank,
						shapes[i], ls[i]);
		CHECK(t != NULL);
		if (!t)
			continue;
		char *s = ir_print_type(ctx, t);
		CHECK(ir_parse_type(ctx, s) == t);
	}
	const IrType *sp = ir_type_ptr(ctx, ir_type(ctx, TY_BF16), 3);
	CHECK(!strcmp(ir_print_type(ctx, sp), "ptr<bf16, 3>"));
	CHECK(ir_parse_type(ctx, "ptr<bf16, 3>") == sp);
	CHECK(ir_parse_type(ctx, "ptr<bf16, 1>") == ir_type_ptr(ctx, ir_type(ctx, TY_BF16), 1));
	int64_t sh3[3] = {2, 4, 8};
	const IrType *b3 = ir_type_block(ctx, ir_type_ptr(ctx, ir_type(ctx, TY_F8E4M3), 1), 3, sh3,
					 NULL);
	CHECK(!strcmp(ir_print_type(ctx, b3), "block<2x4x8xptr<f8e4m3>>"));
	CHECK(ir_parse_type(ctx, " block< 2x4x8xptr< f8e4m3 > > ") == b3);
	for (int k = 0; k < TY_KIND_COUNT_; k++) {
		if (k == TY_PTR || k == TY_BLOCK)
			continue;
		CHECK(ir_parse_type(ctx, ir_kind_name((IrTypeKind)k)) == ir_type(ctx, (IrTypeKind)k));
	}
	ir_ctx_clear_error(ctx);
	CHECK(ir_parse_type(ctx, "i33") == NULL);
	CHECK(ir_ctx_error(ctx) && strstr(ir_ctx_error(ctx)->msg, "unknown type 'i33'"));
	CHECK(ir_parse_type(ctx, "f32 f32") == NULL);
	CHECK(ir_parse_type(ctx, "block<128x64xf16") == NULL);
	CHECK(ir_parse_type(ctx, "") == NULL);
	ir_ctx_free(ctx);
	end("types and layouts print and parse back to the interned objects");
}

/* ------------------------------------------------------------------------- */
/* 2. Golden corpus                                                          */
/* ------------------------------------------------------------------------- */

typedef struct Coverage {
	bool op[OP_COUNT_];
	bool kind[TY_KIND_COUNT_];
	bool attr[ATTR_SYM + 1];
	bool layout[LAYOUT_DOT_OP + 1];
	bool rank[4];
	bool shared_ptr, nested, call_local, multi_res;
} Coverage;

static void cover_layout(Coverage *c, const IrLayout *l)
{
	for (; l; l = l->parent)
		c->layout[l->kind] = true;
}

static void cover_type(Coverage *c, const IrType *t)
{
	for (; t; t = t->elem) {
		c->kind[t->kind] = true;
		if (t->kind == TY_PTR && t->addrspace == 3)
			c->shared_ptr = true;
		if (t->kind == TY_BLOCK && t->rank <= 3)
			c->rank[t->rank] = true;
		if (t->kind == TY_BLOCK)
			cover_layout(c, t->layout);
	}
}

static void cover_attrs(Coverage *c, int n, const IrAttr *a)
{
	for (int i = 0; i < n; i++) {
		c->attr[a[i].kind] = true;
		if (a[i].kind == ATTR_TYPE)
			cover_type(c, a[i].type);
	}
}

static IrOpcode region_owner(const IrOp *op)
{
	return op->parent && op->parent->parent_op ? op->parent->parent_op->opc : OP_COUNT_;
}

static void cover_op(IrOp *op, void *user)
{
	Coverage *c = user;
	c->op[op->opc] = true;
	if (op->nres >= 2)
		c->multi_res = true;
	for (int i = 0; i < op->nres; i++)
		cover_type(c, op->res[i].type);
	for (int r = 0; r < op->nregions; r++)
		for (int i = 0; i < op->regions[r]->nargs; i++)
			cover_type(c, op->regions[r]->args[i]->type);
	cover_attrs(c, op->nattrs, op->attrs);
	if (op->opc == OP_FOR && region_owner(op) == OP_IF &&
	    region_owner(op->parent->parent_op) == OP_WHILE)
		c->nested = true;
	if (op->opc == OP_CALL) {
		const char *callee = ir_op_str(op, "callee", NULL);
		IrFunc *f = op->parent ? op->parent->func : NULL;
		if (callee && f && ir_module_find(f->module, callee))
			c->call_local = true;
	}
}

static const char *golden_dir(char *buf, size_t n)
{
	const char *env = getenv("CTRITON_GOLDEN_DIR");
	if (env)
		return env;
	DIR *d = opendir("tests/ir/golden");
	if (d) {
		closedir(d);
		return "tests/ir/golden";
	}
	const char *src = getenv("TEST_SRCDIR");
	if (src) {
		snprintf(buf, n, "%s/ctriton/tests/ir/golden", src);
		return buf;
	}
	return "tests/ir/golden";
}

typedef struct Golden {
	char *path;
	char *text;
	size_t len;
} Golden;

static int cmp_golden(const void *a, const void *b)
{
	return strcmp(((const Golden *)a)->path, ((const Golden *)b)->path);
}

/* The *.ttir files of the golden directory, sorted by name. */
static int load_golden(Golden **out)
{
	char buf[4096];
	const char *dir = golden_dir(buf, sizeof buf);
	DIR *d = opendir(dir);
	*out = NULL;
	if (!d) {
		fprintf(stderr, "cannot open golden directory %s\n", dir);
		return 0;
	}
	int n = 0, cap = 0;
	Golden *g = NULL;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 5 || strcmp(e->d_name + l - 5, ".ttir"))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			g = realloc(g, (size_t)cap * sizeof *g);
			if (!g)
				abort();
		}
		size_t pl = strlen(dir) + l + 2;
		g[n].path = malloc(pl);
		if (!g[n].path)
			abort();
		snprintf(g[n].path, pl, "%s/%s", dir, e->d_name);
		g[n].text = read_file(g[n].path, &g[n].len);
		if (!g[n].text) {
			fprintf(stderr, "cannot read %s\n", g[n].path);
			free(g[n].path);
			continue;
		}
		n++;
	}
	closedir(d);
	if (n)
		qsort(g, (size_t)n, sizeof *g, cmp_golden);
	*out = g;
	return n;
}

static void free_golden(Golden *g, int n)
{
	for (int i = 0; i < n; i++) {
		free(g[i].path);
		free(g[i].text);
	}
	free(g);
}

static void test_golden(Golden *g, int n)
{
	begin();
	Coverage cov = {0};
	CHECK(n >= 5);
	for (int i = 0; i < n; i++) {
		IrCtx *ctx = ir_ctx_new();
		IrError *err = NULL;
		IrModule *m = ir_parse(ctx, g[i].path, g[i].text, &err);
		if (!m) {
			fprintf(stderr, "%s\n", ir_error_str(ctx, err));
			CHECK(m != NULL);
			ir_ctx_free(ctx);
			continue;
		}
		CHECK(same_text(g[i].path, g[i].text, ir_print_module(m)));
		cover_attrs(&cov, m->nattrs, m->attrs);
		for (int j = 0; j < m->nfuncs; j++) {
			IrFunc *f = m->funcs[j];
			cover_attrs(&cov, f->nattrs, f->attrs);
			for (int k = 0; k < f->body->nargs; k++) {
				cover_type(&cov, f->body->args[k]->type);
				cover_attrs(&cov, f->params[k].nattrs, f->params[k].attrs);
			}
			for (int k = 0; k < f->nres; k++)
				cover_type(&cov, f->restys[k]);
			ir_walk_func(f, cover_op, &cov);
		}
		ir_ctx_free(ctx);
	}
	bool all = true;
	for (int i = 0; i < OP_COUNT_; i++)
		if (!cov.op[i]) {
			fprintf(stderr, "golden corpus never uses op '%s'\n", ir_opinfo(i)->name);
			all = false;
		}
	for (int k = 0; k < TY_KIND_COUNT_; k++)
		if (!cov.kind[k] && k != TY_VOID) {
			const char *name = ir_kind_name((IrTypeKind)k);
			fprintf(stderr, "golden corpus never uses type kind %s\n",
				name ? name : k == TY_PTR ? "ptr" : "block");
			all = false;
		}
	for (int k = 0; k <= ATTR_SYM; k++)
		if (!cov.attr[k]) {
			fprintf(stderr, "golden corpus never uses attribute kind %d\n", k);
			all = false;
		}
	for (int k = 0; k <= LAYOUT_DOT_OP; k++)
		if (!cov.layout[k]) {
			fprintf(stderr, "golden corpus never uses layout kind %d\n", k);
			all = false;
		}
	for (int r = 1; r <= 3; r++)
		if (!cov.rank[r]) {
			fprintf(stderr, "golden corpus has no block of rank %d\n", r);
			all = false;
		}
	if (!cov.shared_ptr || !cov.nested || !cov.call_local || !cov.multi_res) {
		fprintf(stderr, "golden corpus lacks:%s%s%s%s\n",
			cov.shared_ptr ? "" : " ptr<T, 3>",
			cov.nested ? "" : " for-inside-if-inside-while",
			cov.call_local ? "" : " a call to a function of the module",
			cov.multi_res ? "" : " an op with several results");
		all = false;
	}
	CHECK(all);
	end("golden files round-trip byte for byte and cover the IR");
}

/* Cut at every byte, then flip bytes: parse must fail cleanly or succeed. */
static void test_fuzz(Golden *g, int n)
{
	begin();
	long parses = 0;
	unsigned seed = 12345;
	static const char junk[] = "%@#{}()<>[],:=^\"\\x-0123456789.eaf\n /";
	for (int i = 0; i < n; i++) {
		char *buf = malloc(g[i].len + 1);
		if (!buf)
			abort();
		IrCtx *ctx = ir_ctx_new();
		for (size_t cut = 0; cut <= g[i].len; cut++) {
			memcpy(buf, g[i].text, cut);
			buf[cut] = 0;
			IrError *err = NULL;
			IrModule *m = ir_parse(ctx, "cut", buf, &err);
			CHECK(m || (err && err->code == IR_ERR_PARSE && err->msg));
			if (m) /* an ok prefix prints as something that parses again */
				CHECK(ir_parse(ctx, "again", ir_print_module(m), &err) != NULL);
			parses++;
			/* a fresh ctx now and then, so that the arena stays small */
			if (cut % 256 == 255) {
				ir_ctx_free(ctx);
				ctx = ir_ctx_new();
			}
		}
		for (int k = 0; k < 400; k++) {
			memcpy(buf, g[i].text, g[i].len + 1);
			for (int j = 0; j < 3; j++) {
				seed = seed * 1103515245u + 12345u;
				size_t at = (seed >> 8) % g[i].len;
				seed = seed * 1103515245u + 12345u;
				buf[at] = junk[(seed >> 8) % (sizeof junk - 1)];
			}
			IrError *err = NULL;
			IrModule *m = ir_parse(ctx, "flip", buf, &err);
			CHECK(m || (err && err->code == IR_ERR_PARSE));
			parses++;
			if (k % 64 == 63) {
				ir_ctx_free(ctx);
				ctx = ir_ctx_new();
			}
		}
		ir_ctx_free(ctx);
		free(buf);
	}
	CHECK(parses > 1000);
	end("truncated and mutated golden files never crash the parser");
}

/* ------------------------------------------------------------------------- */
/* 3. Errors                                                                 */
/* ------------------------------------------------------------------------- */

typedef struct ErrCase {
	const char *text;
	const char *want; /* substring of "file:line:col: msg" */
} ErrCase;

#define BL "#blocked<spt = [1, 4], tpw = [8, 4], wpc = [4, 1], order = [1, 0]>"

static const ErrCase err_cases[] = {
	{"func @f(%0 = i32) {\n}\n", "t.ttir:1:12: expected ':' after value name, found '='"},
	{"func @f() {\n  %1 = add %0, %0 : i32\n}\n", "t.ttir:2:12: undefined value %0"},
	{"func @f(%a: i32) {\n  %a = add %a, %a : i32\n}\n", "t.ttir:2:3: redefinition of %a"},
	{"func @f() {\n  addd\n}\n", "t.ttir:2:3: unknown op 'addd'"},
	{"func @f(%a: f31) {\n}\n", "t.ttir:1:13: unknown type 'f31'"},
	{"func @f(%a: block<3xf32>) {\n}\n",
	 "t.ttir:1:19: block dimension 3 is not a power of two"},
	{"func @f(%a: block<4x6xf32>) {\n}\n",
	 "t.ttir:1:21: block dimension 6 is not a power of two"},
	{"func @f(%a: i32) {\n  %b = add %a, %a, %a : i32\n}\n",
	 "t.ttir:2:8: op 'add' expects 2 operands, got 3"},
	{"func @f(%p: ptr<i32>) {\n  %b = load : i32\n}\n",
	 "t.ttir:2:8: op 'load' expects 1 to 9 operands, got 0"},
	{"func @f(%a: i32) {\n  %b, %c = add %a, %a : i32, i32\n}\n",
	 "t.ttir:2:12: op 'add' expects 1 result, got 2"},
	{"func @f(%a: i32) {\n  %b = add %a, %a loc(1:1)\n}\n",
	 "t.ttir:2:19: expected ':' and 1 result type, found 'loc'"},
	{"func @f(%a: i32) {\n  %b = split %a : i32, i32\n}\n",
	 "t.ttir:2:8: op 'split' expects 2 results, got 1"},
	{"func @f(%p: ptr<i32>, %v: i32) {\n  store %p, %v : i32\n}\n",
	 "t.ttir:2:16: op 'store' has no results, but ':' follows"},
	{"func @f(%a: i32) {\n  %b = add %c, %a : i32\n  %c = add %a, %a : i32\n}\n",
	 "t.ttir:2:12: undefined value %c"},
	{"func @f(%a: i32) {\n  for %a, %a, %a {\n  ^(%i: i32):\n    %x = add %i, %i : i32\n"
	 "    yield\n  }\n  %y = add %x, %x : i32\n}\n",
	 "t.ttir:7:12: undefined value %x"},
	{"func @f(%a: i32) {\n  %r = for %a, %a, %a, %a : i32 {\n  ^(%i: i32, %s: i32):\n"
	 "    yield %r\n  }\n}\n",
	 "t.ttir:4:11: undefined value %r"},
	{"func @f(%c: i1) {\n  if %c {\n    yield\n  }\n  return\n}\n",
	 "t.ttir:5:3: op 'if' expects 2 regions, found 'return'"},
	{"func @f(%c: i1) {\n  if %c {\n    yield\n  } {\n    yield\n  } {\n  }\n}\n",
	 "t.ttir:6:5: op 'if' expects 2 regions, found another '{'"},
	{"func @f(%a: i32) {\n  %b = add %a, %a : i32 %c = add %a, %a : i32\n}\n",
	 "t.ttir:2:25: expected end of line after op 'add', found '%c'"},
	{"module {a = \"abc}\n", "t.ttir:1:13: unterminated string"},
	{"module {a = \"\\q\"}\n", "t.ttir:1:13: unknown escape in string"},
	{"module {a = \"\\x00\"}\n", "t.ttir:1:13: '\\x00' is not allowed in a string"},
	{"module {a = 1, a = 2}\n", "t.ttir:1:16: duplicate attribute 'a'"},
	{"module {a = }\n", "t.ttir:1:13: expected attribute value, found '}'"},
	{"module {a = 99999999999999999999}\n",
	 "t.ttir:1:13: integer '99999999999999999999' out of range"},
	{"func @f() {\n  $\n}\n", "t.ttir:2:3: unexpected character '$'"},
	{"func @f() {\n  return\n", "t.ttir:3:1: expected '}', found end of input"},
	{"fun @f() {\n}\n", "t.ttir:1:1: expected 'func', found 'fun'"},
	{"func @f() {\n}\n\nfunc @f() {\n}\n", "t.ttir:4:6: redefinition of function @f"},
	{"func @f(%p: ptr<f32, 300>) {\n}\n", "t.ttir:1:22: integer 300 out of range [0, 255]"},
	{"func @f(%p: block<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1xf32>) {\n}\n",
	 "t.ttir:1:51: block rank exceeds 16"},
	{"func @f(%p: block<2048x1024xf32>) {\n}\n",
	 "t.ttir:1:24: block has more than 1048576 elements"},
	{"func @f(%p: block<4f32>) {\n}\n",
	 "t.ttir:1:20: expected 'x' after block dimension, found 'f'"},
	{"func @f(%p: block<4xf32, #foo<>>) {\n}\n", "t.ttir:1:26: unknown layout '#foo'"},
	{"func @f(%p: block<4xf32, #slice<dim = 5, parent = " BL ">>) {\n}\n",
	 "t.ttir:1:26: slice dim 5 out of range for a parent of rank 2"},
	{"func @f(%p: block<4x4xf32, #blocked<spt = [1], tpw = [8, 4], wpc = [4, 1], order = [1, "
	 "0]>>) {\n}\n",
	 "t.ttir:1:28: blocked layout needs spt, tpw, wpc, order of one length >= 1"},
	{"func @f(%p: block<4xf32, #shared<vec = 8, max_phase = 8>>) {\n}\n",
	 "t.ttir:1:43: expected 'per_phase' in layout, found 'max_phase'"},
	{"func @f() {\n  return loc(\"a.py\" 1:2)\n}\n",
	 "t.ttir:2:21: expected ':' after file name, found '1'"},
	{"func @f(%a: i32) -> (i32 {\n}\n", "t.ttir:1:26: expected ')' after result types, found '{'"},
	{"func @f() {\n  %0 = constant {value = 1} : i32\n  %1 = constant {value = 2} :\n}\n",
	 "t.ttir:4:1: expected type, found '}'"},
	{"func @f(%c: i1) {\n  while {\n  ^(%x i32):\n  }\n}\n",
	 "t.ttir:3:8: expected ':' after value name, found 'i32'"},
	{"func @f() {\n  %0 = constant {value = 1} : i32 // ok\n  %1 = % : i32\n}\n",
	 "t.ttir:3:8: expected a value name after '%'"},
};

static void test_errors(void)
{
	begin();
	for (size_t i = 0; i < sizeof err_cases / sizeof err_cases[0]; i++) {
		IrCtx *ctx = ir_ctx_new();
		IrError *err = NULL;
		IrModule *m = ir_parse(ctx, "t.ttir", err_cases[i].text, &err);
		const char *got = err ? ir_error_str(ctx, err) : "(no error)";
		bool ok = !m && err && err->code == IR_ERR_PARSE && strstr(got, err_cases[i].want);
		if (!ok) {
			fprintf(stderr, "error case %zu:\n  want: %s\n  got:  %s\n", i,
				err_cases[i].want, got);
			cur_ok = false;
		}
		ir_ctx_free(ctx);
	}
	end("malformed text gives located parse errors");
}

/* Deep nesting is an error, not a stack overflow; moderate nesting is fine. */
static void test_depth(void)
{
	begin();
	static const int depths[] = {200, 256, 257, 100000};
	for (size_t di = 0; di < sizeof depths / sizeof depths[0]; di++) {
		int depth = depths[di];
		size_t cap = (size_t)depth * 64 + 256, n = 0;
		char *s = malloc(cap);
		if (!s)
			abort();
		n += (size_t)sprintf(s + n, "func @f(%%c: i1) {\n");
		for (int i = 0; i < depth; i++)
			n += (size_t)sprintf(s + n, "if %%c {\n");
		for (int i = 0; i < depth; i++)
			n += (size_t)sprintf(s + n, "yield\n} {\nyield\n}\n");
		n += (size_t)sprintf(s + n, "return\n}\n");
		IrCtx *ctx = ir_ctx_new();
		IrError *err = NULL;
		IrModule *m = ir_parse(ctx, "deep", s, &err);
		if (depth <= 256) {
			CHECK(m != NULL);
		} else {
			CHECK(!m && err && strstr(err->msg, "regions nested deeper than 256"));
		}
		ir_ctx_free(ctx);
		free(s);
	}
	/* types too */
	IrCtx *ctx = ir_ctx_new();
	char t[2048] = "";
	for (int i = 0; i < 200; i++)
		strcat(t, "ptr<");
	CHECK(ir_parse_type(ctx, t) == NULL);
	CHECK(strstr(ir_ctx_error(ctx)->msg, "nested deeper"));
	ir_ctx_free(ctx);
	end("nesting depth is capped with an error");
}

/* Comments, odd spacing and names are accepted; printing canonicalizes. */
static void test_flexible_input(void)
{
	begin();
	const char *in =
		"// leading comment\n"
		"module   {  b = true ,a = -3 }  // trailing\n"
		"func   kernel  @k ( %x.y_1 : i32 {divisibility=16} ,%p:ptr<f32> )\n"
		"    loc( \"k.py\" : 3 : 1 ) {\n"
		"\n"
		"  %sum = add %x.y_1,\n"
		"             %x.y_1 : i32 loc( 4:2 )   // comment\n"
		"  %c = cmp %sum , %x.y_1 {pred=\"lt\"} : i1\n"
		"  if %c {\n"
		"  } {\n"
		"  }\n"
		"  return\n"
		"}\n";
	const char *want =
		"module {a = -3, b = true}\n"
		"\n"
		"func kernel @k(%0: i32 {divisibility = 16}, %1: ptr<f32>) loc(\"k.py\":3:1) {\n"
		"  %2 = add %0, %0 : i32 loc(4:2)\n"
		"  %3 = cmp %2, %0 {pred = \"lt\"} : i1\n"
		"  if %3 {\n"
		"  } {\n"
		"  }\n"
		"  return\n"
		"}\n";
	IrCtx *ctx = ir_ctx_new();
	IrError *err = NULL;
	IrModule *m = ir_parse(ctx, "flex", in, &err);
	if (!m)
		fprintf(stderr, "%s\n", ir_error_str(ctx, err));
	CHECK(m != NULL);
	if (m) {
		CHECK(same_text("flexible input", want, ir_print_module(m)));
		CHECK(m->funcs[0]->loc.line == 3 && !strcmp(m->funcs[0]->loc.file, "k.py"));
		CHECK(m->funcs[0]->body->first->loc.file == m->funcs[0]->loc.file);
	}
	/* empty input: an empty module, which prints as nothing */
	m = ir_parse(ctx, "empty", "  // nothing\n", &err);
	CHECK(m && m->nfuncs == 0 && !strcmp(ir_print_module(m), ""));
	ir_ctx_free(ctx);
	end("comments, whitespace and value names are flexible on input");
}

int main(void)
{
	test_builder_add();
	test_builder_control();
	test_types_and_layouts();
	Golden *g;
	int n = load_golden(&g);
	test_golden(g, n);
	test_fuzz(g, n);
	free_golden(g, n);
	test_errors();
	test_depth();
	test_flexible_input();
	printf("%d tests, %d failed\n", ntests, nfailed);
	return nfailed != 0;
}
