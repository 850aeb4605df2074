/* analysis_test.c: axis info and layout unit tests on the kernel corpus,
 * and golden TTGIR: every tests/analysis/golden/NAME.ttir is parsed, run
 * through the pipeline's TTIR and GPU passes (4 warps, no tensor cores) and
 * compared with NAME.ttgir. Per-pass goldens are in tests/passes.
 * CT_UPDATE_GOLDEN=<dir> writes the .ttgir files there instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "jit/jit.h"
#include "tests/backend/kernels.h"
#include "tests/check.h"

typedef struct Found {
	IrOpcode opc;
	int nth, seen;
	IrOp *op;
} Found;

static void find_fn(IrOp *op, void *user)
{
	Found *f = user;
	if (op->opc == f->opc && f->seen++ == f->nth)
		f->op = op;
}

static IrOp *find_op(IrFunc *fn, IrOpcode opc, int nth)
{
	Found f = {opc, nth, 0, NULL};
	ir_walk_func(fn, find_fn, &f);
	return f.op;
}

/* The pass table's pipeline through the GPU passes (no tensor cores for
 * arch 0); NULL, or a failure message (static buffer). */
static const char *gpu_passes(IrModule *m, int num_warps, int arch, int64_t *shared)
{
	static char msg[1024];
	BeOptions o;
	be_options_default(&o);
	o.num_warps = num_warps;
	JitTarget t = {JIT_BACKEND_CUDA, arch, 32, 0};
	JitKernel k;
	char *err = jit_compile_module(m, &o, &t, JIT_STOP_TTGIR, NULL, &k);
	*shared = k.shared;
	jit_kernel_free(&k);
	if (!err)
		return NULL;
	snprintf(msg, sizeof msg, "%s", err);
	free(err);
	return msg;
}

static void test_vector_add_axis(void)
{
	IrCtx *ctx = ir_ctx_new();
	IrModule *m = ir_module_new(ctx);
	IrFunc *f = tk_vector_add(m);
	AnAxis *ax = an_axis_info(f);
	IrOp *ld = find_op(f, OP_LOAD, 0);
	const AnAxisInfo *p = an_axis_get(ax, ld->ops[0]);
	CHECK(p->contig[0] == 1024, "ptr contiguity %lld", (long long)p->contig[0]);
	CHECK(p->div[0] == 16, "ptr divisibility %lld", (long long)p->div[0]);
	const AnAxisInfo *mk = an_axis_get(ax, ld->ops[1]);
	CHECK(mk->constancy[0] == 16, "mask constancy %lld", (long long)mk->constancy[0]);
	CHECK(an_access_vec(ax, ld->ops[0], ld->ops[1], 0, false) == 4, "vec %d",
	      an_access_vec(ax, ld->ops[0], ld->ops[1], 0, false));
	int64_t shared = -1;
	CHECK(gpu_passes(m, 4, 0, &shared) == NULL, "pipeline");
	CHECK(shared == 0, "shared %lld", (long long)shared);
	const IrLayout *l = ld->res[0].type->layout;
	CHECK(l && l->kind == LAYOUT_BLOCKED && l->size_per_thread[0] == 4 && l->threads_per_warp[0] == 32 &&
		      l->warps_per_cta[0] == 4,
	      "vector add layout");
	CHECK(find_op(f, OP_CONVERT_LAYOUT, 0) == NULL, "vector add needs no conversion");
	ir_ctx_free(ctx);
}

static void test_unaligned_is_scalar(void)
{
	/* without divisibility on the pointers, accesses stay scalar */
	IrCtx *ctx = ir_ctx_new();
	IrModule *m = ir_module_new(ctx);
	IrFunc *f = tk_vector_add(m);
	for (int i = 0; i < f->body->nargs; i++)
		f->params[i].nattrs = 0;
	AnAxis *ax = an_axis_info(f);
	IrOp *ld = find_op(f, OP_LOAD, 0);
	CHECK(an_access_vec(ax, ld->ops[0], ld->ops[1], 0, false) == 1, "unaligned vec");
	ir_ctx_free(ctx);
}

static void test_prefix_mask(void)
{
	/* n of unknown divisibility: offs < n is not constant over any run, but
	 * every aligned run of offs is true then false: a zero-filling copy
	 * still moves 16 bytes, an ordinary access one element */
	IrCtx *ctx = ir_ctx_new();
	IrModule *m = ir_module_new(ctx);
	IrFunc *f = tk_vector_add(m);
	f->params[3].nattrs = 0;
	AnAxis *ax = an_axis_info(f);
	IrOp *ld = find_op(f, OP_LOAD, 0);
	const AnAxisInfo *mk = an_axis_get(ax, ld->ops[1]);
	CHECK(mk->constancy[0] == 1, "mask constancy %lld", (long long)mk->constancy[0]);
	CHECK(mk->prefix[0] == 1024, "mask prefix %lld", (long long)mk->prefix[0]);
	CHECK(an_access_vec(ax, ld->ops[0], ld->ops[1], 0, false) == 1, "plain vec");
	CHECK(an_access_vec(ax, ld->ops[0], ld->ops[1], 0, true) == 4, "zero-fill vec");
	/* the opposite bound (offs >= n: false then true) is no prefix */
	IrOp *cmp = ld->ops[1]->def;
	ir_op_set_str(ctx, cmp, "pred", "ge");
	ax = an_axis_info(f);
	CHECK(an_axis_get(ax, ld->ops[1])->prefix[0] == 1, "ge is no prefix");
	ir_op_set_str(ctx, cmp, "pred", "gt");
	IrValue *t = cmp->ops[0];
	cmp->ops[0] = cmp->ops[1];
	cmp->ops[1] = t; /* n > offs: a prefix again */
	ax = an_axis_info(f);
	CHECK(an_axis_get(ax, ld->ops[1])->prefix[0] == 1024, "n > offs is a prefix");
	ir_ctx_free(ctx);
}

static void test_softmax_layouts(void)
{
	IrCtx *ctx = ir_ctx_new();
	IrModule *m = ir_module_new(ctx);
	IrFunc *f = tk_softmax_row(m);
	AnGpuOptions o = {4, 32, 0};
	int64_t shared = 0;
	CHECK(gpu_passes(m, 4, 0, &shared) == NULL, "pipeline");
	IrOp *red = find_op(f, OP_REDUCE, 0);
	CHECK(red && an_scratch_bytes(red, &o) == 16, "reduce scratch %lld", red ? (long long)an_scratch_bytes(red, &o) : -1);
	CHECK(shared == 16, "softmax shared %lld", (long long)shared);
	CHECK(find_op(f, OP_BARRIER, 0) != NULL, "barrier between the two reductions");
	CHECK(ir_verify(m) == NULL, "TTGIR verifies");
	ir_ctx_free(ctx);
}

static void test_blocked_helper(void)
{
	IrCtx *ctx = ir_ctx_new();
	int64_t shape[2] = {64, 64};
	int spt[2] = {1, 4};
	const IrLayout *l = an_blocked_layout(ctx, 2, shape, spt, NULL, 4, 32);
	CHECK(l->threads_per_warp[1] == 16 && l->threads_per_warp[0] == 2, "tpw");
	CHECK(l->warps_per_cta[0] == 4 && l->warps_per_cta[1] == 1, "wpc");
	int64_t small[1] = {16};
	const IrLayout *s = an_blocked_layout(ctx, 1, small, NULL, NULL, 4, 32);
	CHECK(s->threads_per_warp[0] == 32 && s->warps_per_cta[0] == 4, "small block replicates");
	int n, dl, dw;
	an_blocked_dim(s, small, 0, &n, &dl, &dw);
	CHECK(n == 1 && dl == 16 && dw == 1, "replication: n %d lanes %d warps %d", n, dl, dw);
	ir_ctx_free(ctx);
}

static void test_reduce_store_no_conversion(void)
{
	/* reduction results are stored in their slice layout: the address
	 * computation is recomputed there instead of converting the data */
	IrCtx *ctx = ir_ctx_new();
	IrModule *m = ir_module_new(ctx);
	IrFunc *f = tk_reduce2d(m);
	int64_t shared = 0;
	CHECK(gpu_passes(m, 4, 0, &shared) == NULL, "pipeline");
	CHECK(find_op(f, OP_CONVERT_LAYOUT, 0) == NULL, "reduce2d keeps a conversion");
	IrOp *st = find_op(f, OP_STORE, 0);
	CHECK(st && st->ops[0]->type->layout->kind == LAYOUT_SLICE, "store of a column sum in a slice layout");
	CHECK(ir_verify(m) == NULL, "TTGIR verifies");
	ir_ctx_free(ctx);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	if (fread(b, 1, (size_t)n, f) != (size_t)n)
		n = 0;
	b[n] = 0;
	fclose(f);
	return b;
}

static void test_golden(const char *name)
{
	char in[256], gold[256];
	snprintf(in, sizeof in, "tests/analysis/golden/%s.ttir", name);
	snprintf(gold, sizeof gold, "tests/analysis/golden/%s.ttgir", name);
	char *text = slurp(in);
	CHECK(text != NULL, "missing %s", in);
	if (!text)
		return;
	IrCtx *ctx = ir_ctx_new();
	IrError *err = NULL;
	IrModule *m = ir_parse(ctx, in, text, &err);
	CHECK(m != NULL, "%s", err ? ir_error_str(ctx, err) : in);
	if (m) {
		int64_t shared = 0;
		const char *perr = gpu_passes(m, 4, 0, &shared);
		CHECK(perr == NULL, "pipeline %s: %s", name, perr);
		char *out = ir_print_module(m);
		const char *upd = getenv("CT_UPDATE_GOLDEN");
		if (upd) {
			char path[512];
			snprintf(path, sizeof path, "%s/%s.ttgir", upd, name);
			FILE *f = fopen(path, "w");
			if (f) {
				fputs(out, f);
				fclose(f);
			}
		} else {
			char *want = slurp(gold);
			CHECK(want && strcmp(want, out) == 0, "%s differs from its golden TTGIR:\n%s", name, out);
			free(want);
		}
		CHECK(ir_verify(m) == NULL, "%s TTGIR verifies", name);
	}
	ir_ctx_free(ctx);
	free(text);
}

/* Coordinate of register (j0, j1) of lane/warp under layout l over shape
 * (the formula of AnDimDist), per dim. */
static void dist_coord(const IrLayout *l, const int64_t *shape, int lane, int warp, int j0, int j1,
		       int64_t *c)
{
	int j[2] = {j0, j1};
	for (int d = 0; d < 2; d++) {
		AnDimDist dd;
		an_dim_dist(l, shape, d, &dd);
		int64_t lc = (lane / dd.lane_stride) % dd.tpw, wc = (warp / dd.warp_stride) % dd.wpc;
		c[d] = (wc * dd.warp_unit + lc * dd.lane_unit + (j[d] / dd.spt) * dd.tile +
			(j[d] % dd.spt) * dd.estride) % shape[d];
	}
}

/* The mma v2 / dot_op distributions against the PTX ISA fragment layouts of
 * mma.m16n8k16 (groupID g = lane / 4, threadID_in_group t = lane % 4):
 *   C c0..c3: row g (+8 for c2, c3), col 2t + (i & 1);
 *   A a0..a7: row g (+8 for a2, a3, a6, a7), col 2t + (i & 1) (+8 for a4..a7);
 *   B b0..b3: row (k) 2t + (i & 1) (+8 for b2, b3), col (n) g;
 * with the per-dim register indices lower_dot_mma uses, over a 2 x 2 warp
 * grid (warps M-fastest) and two tiles per warp along each dim. */
static void test_mma_fragments(void)
{
	IrCtx *ctx = ir_ctx_new();
	IrLayout p;
	memset(&p, 0, sizeof p);
	p.kind = LAYOUT_MMA;
	p.rank = 2;
	p.version_major = 2;
	p.warps_per_cta[0] = 2;
	p.warps_per_cta[1] = 2;
	p.instr_shape[0] = 16;
	p.instr_shape[1] = 8;
	const IrLayout *mma = ir_layout(ctx, &p);
	const IrLayout *da = an_dot_op_layout(ctx, mma, 0, ir_type(ctx, TY_F16));
	const IrLayout *db = an_dot_op_layout(ctx, mma, 1, ir_type(ctx, TY_F16));
	CHECK(da->k_width == 2 && db->k_width == 2, "k_width %d %d", da->k_width, db->k_width);
	int64_t sc[2] = {64, 32}, sa[2] = {64, 32}, sb[2] = {32, 32};
	AnDimDist dd;
	an_dim_dist(mma, sc, 0, &dd);
	CHECK(dd.nregs == 4 && dd.distinct_lanes == 8 && dd.distinct_warps == 2, "mma M regs %d", dd.nregs);
	an_dim_dist(da, sa, 1, &dd);
	CHECK(dd.nregs == 8 && dd.distinct_warps == 1, "A K regs %d", dd.nregs);
	int bad = 0;
	for (int warp = 0; warp < 4; warp++)
		for (int lane = 0; lane < 32; lane++) {
			int g = lane / 4, t = lane % 4, wm = warp % 2, wn = warp / 2;
			for (int mi = 0; mi < 2; mi++)
				for (int ni = 0; ni < 2; ni++)
					for (int ki = 0; ki < 2; ki++) {
						int64_t row0 = mi * 32 + wm * 16, col0 = ni * 16 + wn * 8, k0 = ki * 16;
						int64_t c[2];
						for (int i = 0; i < 4; i++) {
							dist_coord(mma, sc, lane, warp, 2 * mi + i / 2, 2 * ni + i % 2, c);
							bad += c[0] != row0 + g + 8 * (i / 2) || c[1] != col0 + 2 * t + (i & 1);
						}
						for (int i = 0; i < 7; i++) {
							int h = (i / 2) % 2, q = (i % 2) + 2 * (i / 4);
							dist_coord(da, sa, lane, warp, 2 * mi + h, 4 * ki + q, c);
							bad += c[0] != row0 + g + 8 * h || c[1] != k0 + 2 * t + (i & 1) + 8 * (i / 4);
						}
						for (int i = 0; i < 4; i++) {
							dist_coord(db, sb, lane, warp, 4 * ki + i, ni, c);
							bad += c[0] != k0 + 2 * t + (i & 1) + 8 * (i / 2) || c[1] != col0 + g;
						}
					}
		}
	CHECK(bad == 0, "%d fragment elements off the PTX ISA layout", bad);
	ir_ctx_free(ctx);
}

/* Warpgroup MMA with the warpgroups split along N (wpc [4 gm, gn]): over a
 * 128 x 256 accumulator with 16 warps (gm = gn = 2), the wgmma m64nNk16
 * D fragment of each warpgroup's instruction (row 16 (warp % 4) + g (+8),
 * column 8 c + 2 t + (i & 1)) placed at rows 64 (g_w % gm) + 128 mi and
 * the columns of block g_w / gm; every element held exactly once. */
static void test_wgmma_split_fragments(void)
{
	IrCtx *ctx = ir_ctx_new();
	IrLayout p;
	memset(&p, 0, sizeof p);
	p.kind = LAYOUT_MMA;
	p.rank = 2;
	p.version_major = 3;
	p.warps_per_cta[0] = 8;
	p.warps_per_cta[1] = 2;
	p.instr_shape[0] = 16;
	p.instr_shape[1] = 8;
	p.instr_shape[2] = 16;
	const IrLayout *mma = ir_layout(ctx, &p);
	int64_t sc[2] = {256, 256};
	AnDimDist dd;
	an_dim_dist(mma, sc, 1, &dd);
	CHECK(dd.nregs == 32 && dd.warp_unit == 128 && dd.tile == 8 && dd.distinct_warps == 2, "split N regs %d",
	      dd.nregs);
	static unsigned char seen[256][256];
	memset(seen, 0, sizeof seen);
	int bad = 0;
	for (int warp = 0; warp < 16; warp++)
		for (int lane = 0; lane < 32; lane++) {
			int g = lane / 4, t = lane % 4, wg = warp / 4;
			for (int mi = 0; mi < 2; mi++)
				for (int c8 = 0; c8 < 16; c8++)
					for (int i = 0; i < 4; i++) {
						int64_t c[2];
						dist_coord(mma, sc, lane, warp, 2 * mi + i / 2, 2 * c8 + i % 2, c);
						int64_t row =
							128 * mi + 64 * (wg % 2) + 16 * (warp % 4) + g + 8 * (i / 2);
						int64_t col = 128 * (wg / 2) + 8 * c8 + 2 * t + (i & 1);
						bad += c[0] != row || c[1] != col;
						seen[c[0]][c[1]]++;
					}
		}
	int twice = 0;
	for (int r = 0; r < 256; r++)
		for (int col = 0; col < 256; col++)
			twice += seen[r][col] != 1;
	CHECK(bad == 0 && twice == 0, "%d elements off the wgmma fragments, %d not held once", bad, twice);
	ir_ctx_free(ctx);
}

static void test_expand_dims_divisibility(void)
{
	/* causal mask: offs_m[:, None] >= offs_n[None, :] with offs_m =
	 * pid * 64 + arange(64). Along the new dim 1, offs_m[:, None] holds one
	 * arbitrary row value per element: no divisibility may be claimed
	 * there, or the compare would look constant over runs of columns. */
	const char *text =
		"func kernel @k(%0: ptr<i1> {divisibility = 16}) loc(\"t.ttir\":1:1) {\n"
		"  %1 = program_id {axis = 0} : i32 loc(2:1)\n"
		"  %2 = constant {value = 64} : i32 loc(3:1)\n"
		"  %3 = mul %1, %2 : i32 loc(4:1)\n"
		"  %4 = splat %3 : block<64xi32> loc(5:1)\n"
		"  %5 = make_range {end = 64, start = 0} : block<64xi32> loc(6:1)\n"
		"  %6 = add %4, %5 : block<64xi32> loc(7:1)\n"
		"  %7 = expand_dims %6 {axis = 1} : block<64x1xi32> loc(8:1)\n"
		"  %8 = broadcast %7 : block<64x64xi32> loc(9:1)\n"
		"  %9 = expand_dims %5 {axis = 0} : block<1x64xi32> loc(10:1)\n"
		"  %10 = broadcast %9 : block<64x64xi32> loc(11:1)\n"
		"  %11 = cmp %8, %10 {pred = \"ge\"} : block<64x64xi1> loc(12:1)\n"
		"  return loc(13:1)\n"
		"}\n";
	IrCtx *ctx = ir_ctx_new();
	IrError *err = NULL;
	IrModule *m = ir_parse(ctx, "t.ttir", text, &err);
	CHECK(m != NULL, "parse: %s", err ? err->msg : "");
	if (!m) {
		ir_ctx_free(ctx);
		return;
	}
	IrFunc *f = m->funcs[0];
	AnAxis *ax = an_axis_info(f);
	IrOp *ed = find_op(f, OP_EXPAND_DIMS, 0);
	const AnAxisInfo *e = an_axis_get(ax, &ed->res[0]);
	CHECK(e->div[1] == 1, "offs_m[:, None] divisibility along the new dim %lld", (long long)e->div[1]);
	CHECK(e->div[0] == 64 && e->contig[0] == 64, "offs_m[:, None] keeps dim 0 (div %lld, contig %lld)",
	      (long long)e->div[0], (long long)e->contig[0]);
	const AnAxisInfo *c = an_axis_get(ax, &find_op(f, OP_CMP, 0)->res[0]);
	CHECK(c->constancy[1] == 1, "causal mask constancy along columns %lld", (long long)c->constancy[1]);
	ir_ctx_free(ctx);
}

static void test_cmp_constancy_rules(void)
{
	/* cols = arange(64) against n divisible by 16: lt and ge hold one value
	 * per aligned 16 columns; le, gt, eq do not (cols == n at column n).
	 * rows2 = arange(8) * 2 is not all multiples of 2^30 (only the first
	 * element of arange's run is): rows2[:, None] + cols < 16 is not
	 * constant over 16 columns (row 1: 2 .. 17). */
	const char *text =
		"func kernel @k(%0: i32 {divisibility = 16}) loc(\"t.ttir\":1:1) {\n"
		"  %1 = make_range {end = 64, start = 0} : block<64xi32> loc(2:1)\n"
		"  %2 = splat %0 : block<64xi32> loc(3:1)\n"
		"  %3 = cmp %1, %2 {pred = \"lt\"} : block<64xi1> loc(4:1)\n"
		"  %4 = cmp %1, %2 {pred = \"le\"} : block<64xi1> loc(5:1)\n"
		"  %5 = cmp %1, %2 {pred = \"ge\"} : block<64xi1> loc(6:1)\n"
		"  %6 = cmp %1, %2 {pred = \"gt\"} : block<64xi1> loc(7:1)\n"
		"  %7 = cmp %1, %2 {pred = \"eq\"} : block<64xi1> loc(8:1)\n"
		"  %8 = cmp %2, %1 {pred = \"gt\"} : block<64xi1> loc(9:1)\n"
		"  %9 = cmp %2, %1 {pred = \"ge\"} : block<64xi1> loc(10:1)\n"
		"  %10 = make_range {end = 8, start = 0} : block<8xi32> loc(11:1)\n"
		"  %11 = constant {value = 2} : block<8xi32> loc(12:1)\n"
		"  %12 = mul %10, %11 : block<8xi32> loc(13:1)\n"
		"  %13 = expand_dims %12 {axis = 1} : block<8x1xi32> loc(14:1)\n"
		"  %14 = broadcast %13 : block<8x64xi32> loc(15:1)\n"
		"  %15 = expand_dims %1 {axis = 0} : block<1x64xi32> loc(16:1)\n"
		"  %16 = broadcast %15 : block<8x64xi32> loc(17:1)\n"
		"  %17 = add %14, %16 : block<8x64xi32> loc(18:1)\n"
		"  %18 = constant {value = 16} : block<8x64xi32> loc(19:1)\n"
		"  %19 = cmp %17, %18 {pred = \"lt\"} : block<8x64xi1> loc(20:1)\n"
		"  return loc(21:1)\n"
		"}\n";
	IrCtx *ctx = ir_ctx_new();
	IrError *err = NULL;
	IrModule *m = ir_parse(ctx, "t.ttir", text, &err);
	CHECK(m != NULL, "parse: %s", err ? err->msg : "");
	if (!m) {
		ir_ctx_free(ctx);
		return;
	}
	IrFunc *f = m->funcs[0];
	AnAxis *ax = an_axis_info(f);
	static const int64_t want[] = {16, 1, 16, 1, 1, 16, 1};
	for (int i = 0; i < 7; i++) {
		const AnAxisInfo *c = an_axis_get(ax, &find_op(f, OP_CMP, i)->res[0]);
		CHECK(c->constancy[0] == want[i], "cmp #%d constancy %lld, want %lld", i,
		      (long long)c->constancy[0], (long long)want[i]);
	}
	const AnAxisInfo *mu = an_axis_get(ax, &find_op(f, OP_MUL, 0)->res[0]);
	CHECK(mu->div[0] == 2, "arange(8) * 2 divisibility %lld", (long long)mu->div[0]);
	const AnAxisInfo *ad = an_axis_get(ax, &find_op(f, OP_ADD, 0)->res[0]);
	CHECK(ad->contig[1] == 64 && ad->div[1] <= 2, "rows2 + cols along columns: contig %lld div %lld",
	      (long long)ad->contig[1], (long long)ad->div[1]);
	const AnAxisInfo *m2 = an_axis_get(ax, &find_op(f, OP_CMP, 7)->res[0]);
	CHECK(m2->constancy[1] <= 2, "rows2 + cols < 16 constancy along columns %lld", (long long)m2->constancy[1]);
	ir_ctx_free(ctx);
}

/* Calls: the call order (callees first, recursion an error), the canonical
 * call layout, the seeded parameters, and a callee's shared bytes as the
 * call's scratch in the kernel. */
static void test_calls(void)
{
	const char *text =
		"module {num_warps = 4}\n\n"
		"func kernel @k(%0: ptr<f32> {divisibility = 16}) loc(\"t.ttir\":1:1) {\n"
		"  %1 = make_range {end = 1024, start = 0} : block<1024xi32> loc(2:1)\n"
		"  %2 = splat %0 : block<1024xptr<f32>> loc(3:1)\n"
		"  %3 = addptr %2, %1 : block<1024xptr<f32>> loc(4:1)\n"
		"  %4 = load %3 : block<1024xf32> loc(5:1)\n"
		"  %5 = call %4, %0 {callee = @f} : f32 loc(6:1)\n"
		"  store %0, %5 loc(7:1)\n"
		"  return loc(8:1)\n"
		"}\n\n"
		"func noinline @f(%0: block<1024xf32>, %1: ptr<f32>) -> (f32) loc(\"t.ttir\":9:1) {\n"
		"  %2 = call %0 {callee = @g} : f32 loc(10:1)\n"
		"  return %2 loc(11:1)\n"
		"}\n\n"
		"func noinline @g(%0: block<1024xf32>) -> (f32) loc(\"t.ttir\":12:1) {\n"
		"  %1 = reduce %0 {axis = 0} : f32 {\n"
		"  ^(%2: f32, %3: f32):\n"
		"    %4 = add %2, %3 : f32 loc(13:1)\n"
		"    yield %4 loc(13:1)\n"
		"  } loc(13:1)\n"
		"  return %1 loc(14:1)\n"
		"}\n";
	IrCtx *ctx = ir_ctx_new();
	IrError *err = NULL;
	IrModule *m = ir_parse(ctx, "t.ttir", text, &err);
	CHECK(m != NULL, "parse: %s", err ? err->msg : "");
	if (!m) {
		ir_ctx_free(ctx);
		return;
	}
	IrFunc *k = ir_module_find(m, "k"), *f = ir_module_find(m, "f"), *g = ir_module_find(m, "g");
	IrFunc **fs;
	int n;
	CHECK(an_call_order(k, &fs, &n) == NULL && n == 3 && fs[0] == g && fs[1] == f && fs[2] == k,
	      "call order: callees first (n %d)", n);
	AnGpuOptions o = {4, 32, 80};
	const IrLayout *l = an_call_type(ctx, g->body->args[0]->type, &o)->layout;
	CHECK(l && l->kind == LAYOUT_BLOCKED && l->size_per_thread[0] == 4 && l->threads_per_warp[0] == 32 &&
	      l->warps_per_cta[0] == 4, "canonical layout of block<1024xf32>: 4 per thread");
	int64_t shared = 0;
	CHECK(gpu_passes(m, 4, 80, &shared) == NULL, "pipeline");
	CHECK(an_func_shared(g) == 16 && an_func_shared(f) == 16, "callee shared %lld, %lld",
	      (long long)an_func_shared(g), (long long)an_func_shared(f));
	CHECK(shared == 16, "kernel shared %lld", (long long)shared);
	IrOp *call = find_op(k, OP_CALL, 0);
	CHECK(call && ir_op_int(call, "scratch_offset", -1) == 0, "the call's scratch");
	CHECK(find_op(k, OP_CONVERT_LAYOUT, 0) == NULL, "the contiguous load is in the canonical layout already");
	const IrAttr *d = ir_find_attr(f->params[1].nattrs, f->params[1].attrs, "divisibility");
	CHECK(d && d->i == 16, "the pointer's divisibility reached @f");
	d = ir_find_attr(g->params[0].nattrs, g->params[0].attrs, "contiguity");
	CHECK(d && d->kind == ATTR_INTS && d->n == 1 && d->ints[0] == 1, "a loaded block is not contiguous");
	ir_ctx_free(ctx);

	const char *rec =
		"func kernel @k(%0: f32) loc(\"r.ttir\":1:1) {\n"
		"  %1 = call %0 {callee = @h} : f32 loc(2:1)\n"
		"  return loc(3:1)\n"
		"}\n\n"
		"func noinline @h(%0: f32) -> (f32) loc(\"r.ttir\":4:1) {\n"
		"  %1 = call %0 {callee = @h} : f32 loc(5:1)\n"
		"  return %1 loc(6:1)\n"
		"}\n";
	ctx = ir_ctx_new();
	m = ir_parse(ctx, "r.ttir", rec, &err);
	CHECK(m != NULL, "parse: %s", err ? err->msg : "");
	if (m) {
		IrError *e = an_call_order(ir_module_find(m, "k"), &fs, &n);
		CHECK(e && e->loc.line == 5 && strstr(e->msg, "recursive call of @h"), "recursion: %s",
		      e ? e->msg : "no error");
	}
	ir_ctx_free(ctx);
}

int main(void)
{
	test_vector_add_axis();
	test_unaligned_is_scalar();
	test_prefix_mask();
	test_expand_dims_divisibility();
	test_cmp_constancy_rules();
	test_softmax_layouts();
	test_blocked_helper();
	test_reduce_store_no_conversion();
	test_mma_fragments();
	test_wgmma_split_fragments();
	test_calls();
	test_golden("vector_add");
	test_golden("softmax_row");
	test_golden("reduce2d");
	printf("%d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
