/* cpu_test.c: every op the CPU backend lowers, in small kernels written as
 * IR text, run over a grid and checked against values computed here
 * (integers bit-exact, floats within a tolerance). */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "ir/ir.h"
#include "tests/check.h"

/* Parses, verifies and compiles text; false (and a failure) on error. */
static bool compile(const char *name, const char *text, BeCpuResult *r)
{
	IrCtx *ctx = ir_ctx_new();
	IrError *err = NULL;
	IrModule *m = ir_parse(ctx, name, text, &err);
	if (m)
		err = ir_verify(m);
	if (!err) {
		BeOptions o;
		be_options_default(&o);
		o.debug = true;
		err = be_cpu_compile(m, &o, r);
	}
	if (err)
		CHECK(0, "%s: %s", name, ir_error_str(ctx, err));
	else if (getenv("CPU_TEST_DUMP") && strcmp(getenv("CPU_TEST_DUMP"), name) == 0)
		printf("%s\n%s\n", r->llir, r->asm_);
	if (!err)
		CHECK(r->kernel && r->llir && r->asm_ && strstr(r->asm_, "ct_kernel_"), "%s: result", name);
	ir_ctx_free(ctx);
	return !err;
}

static int launch(BeCpuResult *r, int gx, void **params, char *err)
{
	int grid[3] = {gx, 1, 1};
	return be_cpu_launch(r->kernel, grid, params, 0, err, 256);
}

static bool near(double a, double b, double tol)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return fabs(a - b) <= tol * (1 + fabs(b));
}

/* ------------------------------------------------------------------------- */

static const char *k_add =
	"func kernel @add(%x: ptr<f32>, %y: ptr<f32>, %o: ptr<f32>, %n: i32) loc(\"add.py\":1:0) {\n"
	"  %pid = program_id {axis = 0} : i32\n"
	"  %bs = constant {value = 256} : i32\n"
	"  %st = mul %pid, %bs : i32\n"
	"  %r = make_range {end = 256, start = 0} : block<256xi32>\n"
	"  %sb = splat %st : block<256xi32>\n"
	"  %off = add %sb, %r : block<256xi32>\n"
	"  %nb = splat %n : block<256xi32>\n"
	"  %m = cmp %off, %nb {pred = \"lt\"} : block<256xi1>\n"
	"  %xb = splat %x : block<256xptr<f32>>\n"
	"  %xp = addptr %xb, %off : block<256xptr<f32>>\n"
	"  %xv = load %xp, %m : block<256xf32>\n"
	"  %yb = splat %y : block<256xptr<f32>>\n"
	"  %yp = addptr %yb, %off : block<256xptr<f32>>\n"
	"  %yv = load %yp, %m : block<256xf32>\n"
	"  %s = add %xv, %yv : block<256xf32>\n"
	"  %ob = splat %o : block<256xptr<f32>>\n"
	"  %op = addptr %ob, %off : block<256xptr<f32>>\n"
	"  store %op, %s, %m\n"
	"  return\n"
	"}\n";

static void test_add(void)
{
	BeCpuResult r;
	if (!compile("add", k_add, &r))
		return;
	int n = 1000;
	float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float)), *o = malloc(n * sizeof(float));
	for (int i = 0; i < n; i++) {
		x[i] = (float)i * 0.5f;
		y[i] = 3.0f - (float)i;
		o[i] = -1;
	}
	void *px = x, *py = y, *po = o;
	void *params[4] = {&px, &py, &po, &n};
	char err[256];
	CHECK(launch(&r, 4, params, err) == 0, "add launch: %s", err);
	int bad = 0;
	for (int i = 0; i < n; i++)
		bad += o[i] != x[i] + y[i];
	CHECK(bad == 0, "add: %d wrong", bad);
	/* one thread, and again: same answer */
	memset(o, 0, n * sizeof(float));
	int grid[3] = {4, 1, 1};
	CHECK(be_cpu_launch(r.kernel, grid, params, 1, err, 256) == 0, "add 1 thread");
	bad = 0;
	for (int i = 0; i < n; i++)
		bad += o[i] != x[i] + y[i];
	CHECK(bad == 0, "add 1 thread: %d wrong", bad);
	free(x);
	free(y);
	free(o);
	be_cpu_result_free(&r);
}

static const char *k_softmax =
	"func kernel @softmax(%out: ptr<f32>, %in: ptr<f32>, %n: i32) {\n"
	"  %row = program_id {axis = 0} : i32\n"
	"  %start = mul %row, %n : i32\n"
	"  %base = addptr %in, %start : ptr<f32>\n"
	"  %r = make_range {end = 128, start = 0} : block<128xi32>\n"
	"  %nb = splat %n : block<128xi32>\n"
	"  %m = cmp %r, %nb {pred = \"lt\"} : block<128xi1>\n"
	"  %pb = splat %base : block<128xptr<f32>>\n"
	"  %p = addptr %pb, %r : block<128xptr<f32>>\n"
	"  %ninf = constant {value = -inf} : block<128xf32>\n"
	"  %x = load %p, %m, %ninf : block<128xf32>\n"
	"  %mx = reduce %x {axis = 0} : f32 {\n"
	"  ^(%a: f32, %b: f32):\n"
	"    %c = max %a, %b {propagate_nan = \"none\"} : f32\n"
	"    yield %c\n"
	"  }\n"
	"  %mxb = splat %mx : block<128xf32>\n"
	"  %d = sub %x, %mxb : block<128xf32>\n"
	"  %e = exp %d : block<128xf32>\n"
	"  %s = reduce %e {axis = 0} : f32 {\n"
	"  ^(%a2: f32, %b2: f32):\n"
	"    %c2 = add %a2, %b2 : f32\n"
	"    yield %c2\n"
	"  }\n"
	"  %sb = splat %s : block<128xf32>\n"
	"  %y = div %e, %sb : block<128xf32>\n"
	"  %ob = addptr %out, %start : ptr<f32>\n"
	"  %opb = splat %ob : block<128xptr<f32>>\n"
	"  %op = addptr %opb, %r : block<128xptr<f32>>\n"
	"  store %op, %y, %m\n"
	"  return\n"
	"}\n";

static void test_softmax(void)
{
	BeCpuResult r;
	if (!compile("softmax", k_softmax, &r))
		return;
	enum { R = 8, N = 100 };
	float *in = malloc(R * N * sizeof(float)), *out = malloc(R * N * sizeof(float));
	for (int i = 0; i < R * N; i++)
		in[i] = sinf((float)i * 0.37f) * 4;
	int n = N;
	void *pi = in, *po = out;
	void *params[3] = {&po, &pi, &n};
	char err[256];
	CHECK(launch(&r, R, params, err) == 0, "softmax launch: %s", err);
	int bad = 0;
	for (int row = 0; row < R; row++) {
		double mx = -INFINITY, s = 0;
		for (int j = 0; j < N; j++)
			mx = fmax(mx, in[row * N + j]);
		for (int j = 0; j < N; j++)
			s += exp(in[row * N + j] - mx);
		for (int j = 0; j < N; j++)
			bad += !near(out[row * N + j], exp(in[row * N + j] - mx) / s, 1e-5);
	}
	CHECK(bad == 0, "softmax: %d wrong", bad);
	free(in);
	free(out);
	be_cpu_result_free(&r);
}

/* 2-D offsets i*C + j for an RxC block, as %off. */
#define OFF2D(R, C)                                                                        \
	"  %ri = make_range {end = " #R ", start = 0} : block<" #R "xi32>\n"                 \
	"  %rj = make_range {end = " #C ", start = 0} : block<" #C "xi32>\n"                 \
	"  %ei = expand_dims %ri {axis = 1} : block<" #R "x1xi32>\n"                         \
	"  %cc = constant {value = " #C "} : block<" #R "x1xi32>\n"                          \
	"  %eic = mul %ei, %cc : block<" #R "x1xi32>\n"                                       \
	"  %bi = broadcast %eic : block<" #R "x" #C "xi32>\n"                                 \
	"  %ej = expand_dims %rj {axis = 0} : block<1x" #C "xi32>\n"                         \
	"  %bj = broadcast %ej : block<" #R "x" #C "xi32>\n"                                  \
	"  %off = add %bi, %bj : block<" #R "x" #C "xi32>\n"

static const char *k_red2d =
	"func kernel @red2d(%in: ptr<i32>, %fin: ptr<f32>, %s0: ptr<i32>, %s1: ptr<i32>, %m0: ptr<f32>, %m1: ptr<f32>, %am: ptr<i32>) {\n"
	OFF2D(16, 32)
	"  %pin = splat %in : block<16x32xptr<i32>>\n"
	"  %pi = addptr %pin, %off : block<16x32xptr<i32>>\n"
	"  %x = load %pi : block<16x32xi32>\n"
	"  %pfin = splat %fin : block<16x32xptr<f32>>\n"
	"  %pf = addptr %pfin, %off : block<16x32xptr<f32>>\n"
	"  %f = load %pf : block<16x32xf32>\n"
	"  %sum0 = reduce %x {axis = 0} : block<32xi32> {\n"
	"  ^(%a: i32, %b: i32):\n"
	"    %c = add %a, %b : i32\n"
	"    yield %c\n"
	"  }\n"
	"  %sum1 = reduce %x {axis = 1} : block<16xi32> {\n"
	"  ^(%a1: i32, %b1: i32):\n"
	"    %c1 = add %a1, %b1 : i32\n"
	"    yield %c1\n"
	"  }\n"
	"  %max0 = reduce %f {axis = 0} : block<32xf32> {\n"
	"  ^(%a2: f32, %b2: f32):\n"
	"    %c2 = max %a2, %b2 {propagate_nan = \"all\"} : f32\n"
	"    yield %c2\n"
	"  }\n"
	"  %max1 = reduce %f {axis = 1} : block<16xf32> {\n"
	"  ^(%a3: f32, %b3: f32):\n"
	"    %c3 = max %a3, %b3 {propagate_nan = \"all\"} : f32\n"
	"    yield %c3\n"
	"  }\n"
	"  %av, %ai = reduce %f, %bj {axis = 1} : block<16xf32>, block<16xi32> {\n"
	"  ^(%va: f32, %ia: i32, %vb: f32, %ib: i32):\n"
	"    %gt = cmp %va, %vb {pred = \"gt\"} : i1\n"
	"    %eq = cmp %va, %vb {pred = \"eq\"} : i1\n"
	"    %lt = cmp %ia, %ib {pred = \"lt\"} : i1\n"
	"    %eqlt = and %eq, %lt : i1\n"
	"    %take = or %gt, %eqlt : i1\n"
	"    %v = select %take, %va, %vb : f32\n"
	"    %i = select %take, %ia, %ib : i32\n"
	"    yield %v, %i\n"
	"  }\n"
	"  %ps0 = splat %s0 : block<32xptr<i32>>\n"
	"  %qs0 = addptr %ps0, %rj : block<32xptr<i32>>\n"
	"  store %qs0, %sum0\n"
	"  %ps1 = splat %s1 : block<16xptr<i32>>\n"
	"  %qs1 = addptr %ps1, %ri : block<16xptr<i32>>\n"
	"  store %qs1, %sum1\n"
	"  %pm0 = splat %m0 : block<32xptr<f32>>\n"
	"  %qm0 = addptr %pm0, %rj : block<32xptr<f32>>\n"
	"  store %qm0, %max0\n"
	"  %pm1 = splat %m1 : block<16xptr<f32>>\n"
	"  %qm1 = addptr %pm1, %ri : block<16xptr<f32>>\n"
	"  store %qm1, %max1\n"
	"  %pam = splat %am : block<16xptr<i32>>\n"
	"  %qam = addptr %pam, %ri : block<16xptr<i32>>\n"
	"  store %qam, %ai\n"
	"  return\n"
	"}\n";

static void test_reduce(void)
{
	BeCpuResult r;
	if (!compile("red2d", k_red2d, &r))
		return;
	int32_t in[16 * 32], s0[32], s1[16], am[16];
	float fin[16 * 32], m0[32], m1[16];
	for (int i = 0; i < 16 * 32; i++) {
		in[i] = (i * 7919) % 1000 - 500;
		fin[i] = (float)((i * 31) % 97) - 40.0f;
	}
	fin[3 * 32 + 5] = 100; /* ties for argmax: first index wins */
	fin[3 * 32 + 9] = 100;
	void *p[7] = {in, fin, s0, s1, m0, m1, am};
	void *params[7] = {&p[0], &p[1], &p[2], &p[3], &p[4], &p[5], &p[6]};
	char err[256];
	CHECK(launch(&r, 1, params, err) == 0, "red2d launch: %s", err);
	int bad = 0;
	for (int j = 0; j < 32; j++) {
		int32_t s = 0;
		float m = -INFINITY;
		for (int i = 0; i < 16; i++) {
			s += in[i * 32 + j];
			m = fmaxf(m, fin[i * 32 + j]);
		}
		bad += s != s0[j];
		bad += m != m0[j];
	}
	for (int i = 0; i < 16; i++) {
		int32_t s = 0;
		float m = -INFINITY;
		int best = 0;
		for (int j = 0; j < 32; j++) {
			s += in[i * 32 + j];
			if (fin[i * 32 + j] > fin[i * 32 + best])
				best = j;
			m = fmaxf(m, fin[i * 32 + j]);
		}
		bad += s != s1[i];
		bad += m != m1[i];
		bad += best != am[i];
	}
	CHECK(bad == 0, "reduce: %d wrong", bad);
	CHECK(am[3] == 5, "argmax tie: %d", am[3]);
	be_cpu_result_free(&r);
}

static const char *k_scan =
	"func kernel @scan(%in: ptr<i32>, %fw: ptr<i32>, %bw: ptr<i32>, %in2: ptr<f32>, %o2: ptr<f32>) {\n"
	"  %r = make_range {end = 64, start = 0} : block<64xi32>\n"
	"  %pb = splat %in : block<64xptr<i32>>\n"
	"  %p = addptr %pb, %r : block<64xptr<i32>>\n"
	"  %x = load %p : block<64xi32>\n"
	"  %f = scan %x {axis = 0, reverse = false} : block<64xi32> {\n"
	"  ^(%a: i32, %b: i32):\n"
	"    %c = add %a, %b : i32\n"
	"    yield %c\n"
	"  }\n"
	"  %g = scan %x {axis = 0, reverse = true} : block<64xi32> {\n"
	"  ^(%a1: i32, %b1: i32):\n"
	"    %c1 = add %a1, %b1 : i32\n"
	"    yield %c1\n"
	"  }\n"
	"  %fb = splat %fw : block<64xptr<i32>>\n"
	"  %fp = addptr %fb, %r : block<64xptr<i32>>\n"
	"  store %fp, %f\n"
	"  %gb = splat %bw : block<64xptr<i32>>\n"
	"  %gp = addptr %gb, %r : block<64xptr<i32>>\n"
	"  store %gp, %g\n"
	OFF2D(8, 16)
	"  %qb = splat %in2 : block<8x16xptr<f32>>\n"
	"  %q = addptr %qb, %off : block<8x16xptr<f32>>\n"
	"  %y = load %q : block<8x16xf32>\n"
	"  %z = scan %y {axis = 0, reverse = false} : block<8x16xf32> {\n"
	"  ^(%a2: f32, %b2: f32):\n"
	"    %c2 = add %a2, %b2 : f32\n"
	"    yield %c2\n"
	"  }\n"
	"  %zb = splat %o2 : block<8x16xptr<f32>>\n"
	"  %zp = addptr %zb, %off : block<8x16xptr<f32>>\n"
	"  store %zp, %z\n"
	"  return\n"
	"}\n";

static void test_scan(void)
{
	BeCpuResult r;
	if (!compile("scan", k_scan, &r))
		return;
	int32_t in[64], fw[64], bw[64];
	float in2[128], o2[128];
	for (int i = 0; i < 64; i++)
		in[i] = i * 3 - 50;
	for (int i = 0; i < 128; i++)
		in2[i] = (float)(i % 13) * 0.25f;
	void *p[5] = {in, fw, bw, in2, o2};
	void *params[5] = {&p[0], &p[1], &p[2], &p[3], &p[4]};
	char err[256];
	CHECK(launch(&r, 1, params, err) == 0, "scan launch: %s", err);
	int bad = 0, s = 0;
	for (int i = 0; i < 64; i++) {
		s += in[i];
		bad += fw[i] != s;
	}
	s = 0;
	for (int i = 63; i >= 0; i--) {
		s += in[i];
		bad += bw[i] != s;
	}
	for (int j = 0; j < 16; j++) {
		float a = 0;
		for (int i = 0; i < 8; i++) {
			a += in2[i * 16 + j];
			bad += o2[i * 16 + j] != a;
		}
	}
	CHECK(bad == 0, "scan: %d wrong", bad);
	be_cpu_result_free(&r);
}

static const char *k_dot =
	"func kernel @dot(%a: ptr<f16>, %b: ptr<f16>, %c: ptr<f32>, %fa: ptr<f32>, %fb: ptr<f32>, %fc: ptr<f32>) {\n"
	OFF2D(16, 16)
	"  %pa = splat %a : block<16x16xptr<f16>>\n"
	"  %qa = addptr %pa, %off : block<16x16xptr<f16>>\n"
	"  %x = load %qa : block<16x16xf16>\n"
	"  %pb = splat %b : block<16x16xptr<f16>>\n"
	"  %qb = addptr %pb, %off : block<16x16xptr<f16>>\n"
	"  %y = load %qb : block<16x16xf16>\n"
	"  %z = constant {value = 0.0} : block<16x16xf32>\n"
	"  %d = dot %x, %y, %z {input_precision = \"ieee\", max_num_imprecise_acc = 0} : block<16x16xf32>\n"
	"  %pc = splat %c : block<16x16xptr<f32>>\n"
	"  %qc = addptr %pc, %off : block<16x16xptr<f32>>\n"
	"  store %qc, %d\n"
	"  %pfa = splat %fa : block<16x16xptr<f32>>\n"
	"  %qfa = addptr %pfa, %off : block<16x16xptr<f32>>\n"
	"  %fx = load %qfa : block<16x16xf32>\n"
	"  %pfb = splat %fb : block<16x16xptr<f32>>\n"
	"  %qfb = addptr %pfb, %off : block<16x16xptr<f32>>\n"
	"  %fy = load %qfb : block<16x16xf32>\n"
	"  %pfc = splat %fc : block<16x16xptr<f32>>\n"
	"  %qfc = addptr %pfc, %off : block<16x16xptr<f32>>\n"
	"  %acc = load %qfc : block<16x16xf32>\n"
	"  %fd = dot %fx, %fy, %acc {input_precision = \"tf32\", max_num_imprecise_acc = 0} : block<16x16xf32>\n"
	"  store %qfc, %fd\n"
	"  return\n"
	"}\n";

static void test_dot(void)
{
	BeCpuResult r;
	if (!compile("dot", k_dot, &r))
		return;
	_Float16 a[256], b[256];
	float c[256], fa[256], fb[256], fc[256], fc0[256];
	for (int i = 0; i < 256; i++) {
		a[i] = (_Float16)((float)(i % 17) * 0.125f - 1);
		b[i] = (_Float16)((float)(i % 11) * 0.25f - 1.25f);
		fa[i] = (float)(i % 7) - 3.5f;
		fb[i] = (float)(i % 5) * 0.5f;
		fc[i] = fc0[i] = (float)i;
	}
	void *p[6] = {a, b, c, fa, fb, fc};
	void *params[6] = {&p[0], &p[1], &p[2], &p[3], &p[4], &p[5]};
	char err[256];
	CHECK(launch(&r, 1, params, err) == 0, "dot launch: %s", err);
	int bad = 0;
	for (int m = 0; m < 16; m++)
		for (int n = 0; n < 16; n++) {
			double s = 0, t = fc0[m * 16 + n];
			for (int k = 0; k < 16; k++) {
				s += (double)a[m * 16 + k] * (double)b[k * 16 + n];
				t += (double)fa[m * 16 + k] * fb[k * 16 + n];
			}
			bad += !near(c[m * 16 + n], s, 1e-5);
			bad += !near(fc[m * 16 + n], t, 1e-5);
		}
	CHECK(bad == 0, "dot: %d wrong", bad);
	be_cpu_result_free(&r);
}

/* dot through register tiles (8 rows by 32 columns, or fewer rows and
 * narrower vectors for M < 8 and N < 32), with f32 or f16 operands (in);
 * M below 8 and K below 16 only come from the IR. */
static void test_dot_tiles(int M, int K, int N, const char *in)
{
	bool h = strcmp(in, "f16") == 0;
	static char src[4096];
	snprintf(src, sizeof src,
		 "func kernel @dott(%%a: ptr<%s>, %%b: ptr<%s>, %%c: ptr<f32>) {\n"
		 "  %%rm = make_range {end = %d, start = 0} : block<%dxi32>\n"
		 "  %%rk = make_range {end = %d, start = 0} : block<%dxi32>\n"
		 "  %%rn = make_range {end = %d, start = 0} : block<%dxi32>\n"
		 "  %%em = expand_dims %%rm {axis = 1} : block<%dx1xi32>\n"
		 "  %%ekr = expand_dims %%rk {axis = 1} : block<%dx1xi32>\n"
		 "  %%ekc = expand_dims %%rk {axis = 0} : block<1x%dxi32>\n"
		 "  %%en = expand_dims %%rn {axis = 0} : block<1x%dxi32>\n"
		 "  %%ck = constant {value = %d} : block<%dx1xi32>\n"
		 "  %%cn = constant {value = %d} : block<%dx1xi32>\n"
		 "  %%cn2 = constant {value = %d} : block<%dx1xi32>\n"
		 "  %%am = mul %%em, %%ck : block<%dx1xi32>\n"
		 "  %%bk = mul %%ekr, %%cn : block<%dx1xi32>\n"
		 "  %%cm = mul %%em, %%cn2 : block<%dx1xi32>\n"
		 "  %%am2 = broadcast %%am : block<%dx%dxi32>\n"
		 "  %%ak2 = broadcast %%ekc : block<%dx%dxi32>\n"
		 "  %%aoff = add %%am2, %%ak2 : block<%dx%dxi32>\n"
		 "  %%bk2 = broadcast %%bk : block<%dx%dxi32>\n"
		 "  %%bn2 = broadcast %%en : block<%dx%dxi32>\n"
		 "  %%boff = add %%bk2, %%bn2 : block<%dx%dxi32>\n"
		 "  %%cm2 = broadcast %%cm : block<%dx%dxi32>\n"
		 "  %%cn3 = broadcast %%en : block<%dx%dxi32>\n"
		 "  %%coff = add %%cm2, %%cn3 : block<%dx%dxi32>\n"
		 "  %%pa = splat %%a : block<%dx%dxptr<%s>>\n"
		 "  %%qa = addptr %%pa, %%aoff : block<%dx%dxptr<%s>>\n"
		 "  %%x = load %%qa : block<%dx%dx%s>\n"
		 "  %%pb = splat %%b : block<%dx%dxptr<%s>>\n"
		 "  %%qb = addptr %%pb, %%boff : block<%dx%dxptr<%s>>\n"
		 "  %%y = load %%qb : block<%dx%dx%s>\n"
		 "  %%pc = splat %%c : block<%dx%dxptr<f32>>\n"
		 "  %%qc = addptr %%pc, %%coff : block<%dx%dxptr<f32>>\n"
		 "  %%z = load %%qc : block<%dx%dxf32>\n"
		 "  %%d = dot %%x, %%y, %%z {input_precision = \"ieee\", max_num_imprecise_acc = 0} : block<%dx%dxf32>\n"
		 "  store %%qc, %%d\n"
		 "  return\n"
		 "}\n",
		 in, in, M, M, K, K, N, N, M, K, K, N, K, M, N, K, N, M, M, K, M, M, K, M, K, M, K, K, N, K, N,
		 K, N, M, N, M, N, M, N, M, K, in, M, K, in, M, K, in, K, N, in, K, N, in, K, N, in, M, N, M, N,
		 M, N, M, N);
	BeCpuResult r;
	if (!compile("dot tiles", src, &r))
		return;
	float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
	float *c = malloc(sizeof(float) * M * N), *c0 = malloc(sizeof(float) * M * N);
	_Float16 *ha = malloc(sizeof(_Float16) * M * K), *hb = malloc(sizeof(_Float16) * K * N);
	for (int i = 0; i < M * K; i++)
		ha[i] = (_Float16)(a[i] = (float)(i % 13) * 0.25f - 1.5f);
	for (int i = 0; i < K * N; i++)
		hb[i] = (_Float16)(b[i] = (float)(i % 7) * 0.5f - 1);
	for (int i = 0; i < M * N; i++)
		c[i] = c0[i] = (float)(i % 19) - 9;
	void *p[3] = {h ? (void *)ha : a, h ? (void *)hb : b, c};
	void *params[3] = {&p[0], &p[1], &p[2]};
	char err[256];
	CHECK(launch(&r, 1, params, err) == 0, "dot tiles launch: %s", err);
	int bad = 0;
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			double t = c0[m * N + n];
			for (int k = 0; k < K; k++)
				t += (double)a[m * K + k] * b[k * N + n];
			bad += !near(c[m * N + n], t, 1e-5);
		}
	CHECK(bad == 0, "dot tiles %dx%dx%d %s: %d wrong", M, K, N, in, bad);
	free(ha);
	free(hb);
	free(a);
	free(b);
	free(c);
	free(c0);
	be_cpu_result_free(&r);
}

static const char *k_atomic =
	"func kernel @atom(%cnt: ptr<i32>, %lock: ptr<i32>, %plain: ptr<i32>, %fsum: ptr<f32>, %mx: ptr<i32>, %bins: ptr<i32>) {\n"
	"  %pid = program_id {axis = 0} : i32\n"
	"  %one = constant {value = 1} : i32\n"
	"  %zero = constant {value = 0} : i32\n"
	"  %old = atomic_rmw %cnt, %one {kind = \"add\", scope = \"gpu\", sem = \"acq_rel\"} : i32\n"
	"  while {\n"
	"    %prev = atomic_cas %lock, %zero, %one {scope = \"gpu\", sem = \"acquire\"} : i32\n"
	"    %busy = cmp %prev, %zero {pred = \"ne\"} : i1\n"
	"    condition %busy\n"
	"  } {\n"
	"    yield\n"
	"  }\n"
	"  %v = load %plain : i32\n"
	"  %v1 = add %v, %one : i32\n"
	"  store %plain, %v1\n"
	"  %rel = atomic_rmw %lock, %zero {kind = \"xchg\", scope = \"gpu\", sem = \"release\"} : i32\n"
	"  %half = constant {value = 0.5} : f32\n"
	"  %fo = atomic_rmw %fsum, %half {kind = \"add\", scope = \"gpu\", sem = \"relaxed\"} : f32\n"
	"  %mo = atomic_rmw %mx, %pid {kind = \"max\", scope = \"gpu\", sem = \"relaxed\"} : i32\n"
	"  %r = make_range {end = 8, start = 0} : block<8xi32>\n"
	"  %four = constant {value = 4} : block<8xi32>\n"
	"  %m = cmp %r, %four {pred = \"lt\"} : block<8xi1>\n"
	"  %bb = splat %bins : block<8xptr<i32>>\n"
	"  %bp = addptr %bb, %r : block<8xptr<i32>>\n"
	"  %ones = constant {value = 1} : block<8xi32>\n"
	"  %bo = atomic_rmw %bp, %ones, %m {kind = \"add\", scope = \"gpu\", sem = \"relaxed\"} : block<8xi32>\n"
	"  return\n"
	"}\n";

static void test_atomics(void)
{
	BeCpuResult r;
	if (!compile("atomic", k_atomic, &r))
		return;
	int32_t cnt = 0, lock = 0, plain = 0, mx = -1, bins[8] = {0};
	float fsum = 0;
	void *p[6] = {&cnt, &lock, &plain, &fsum, &mx, bins};
	void *params[6] = {&p[0], &p[1], &p[2], &p[3], &p[4], &p[5]};
	char err[256];
	enum { G = 3000 };
	CHECK(launch(&r, G, params, err) == 0, "atomic launch: %s", err);
	CHECK(cnt == G, "atomic counter %d", cnt);
	CHECK(plain == G, "spin lock counter %d", plain);
	CHECK(lock == 0, "lock released");
	CHECK(fsum == 0.5f * G, "fadd %f", (double)fsum);
	CHECK(mx == G - 1, "max %d", mx);
	int bad = 0;
	for (int i = 0; i < 8; i++)
		bad += bins[i] != (i < 4 ? G : 0);
	CHECK(bad == 0, "masked block atomic: %d wrong", bad);
	be_cpu_result_free(&r);
}

static const char *k_loops =
	"func kernel @loops(%out: ptr<i32>, %o2: ptr<i32>) {\n"
	"  %pid = program_id {axis = 0} : i32\n"
	"  %one = constant {value = 1} : i32\n"
	"  %n0 = add %pid, %one : i32\n"
	"  %zero = constant {value = 0} : i32\n"
	"  %two = constant {value = 2} : i32\n"
	"  %three = constant {value = 3} : i32\n"
	"  %rn, %rs = while %n0, %zero : i32, i32 {\n"
	"  ^(%n: i32, %s: i32):\n"
	"    %c = cmp %n, %one {pred = \"ne\"} : i1\n"
	"    condition %c, %n, %s\n"
	"  } {\n"
	"  ^(%n2: i32, %s2: i32):\n"
	"    %rm = rem %n2, %two : i32\n"
	"    %even = cmp %rm, %zero {pred = \"eq\"} : i1\n"
	"    %nn = if %even : i32 {\n"
	"      %h = div %n2, %two : i32\n"
	"      yield %h\n"
	"    } {\n"
	"      %t = mul %n2, %three : i32\n"
	"      %t1 = add %t, %one : i32\n"
	"      yield %t1\n"
	"    }\n"
	"    %s3 = add %s2, %one : i32\n"
	"    yield %nn, %s3\n"
	"  }\n"
	"  %p = addptr %out, %pid : ptr<i32>\n"
	"  store %p, %rs\n"
	/* for with two block values swapped each iteration: a, b = b + 1, a */
	"  %r = make_range {end = 16, start = 0} : block<16xi32>\n"
	"  %a0 = constant {value = 100} : block<16xi32>\n"
	"  %five = constant {value = 5} : i32\n"
	"  %fa, %fb, %fs = for %zero, %five, %one, %r, %a0, %zero : block<16xi32>, block<16xi32>, i32 {\n"
	"  ^(%iv: i32, %a: block<16xi32>, %b: block<16xi32>, %acc: i32):\n"
	"    %ones = constant {value = 1} : block<16xi32>\n"
	"    %b1 = add %b, %ones : block<16xi32>\n"
	"    %acc1 = add %acc, %iv : i32\n"
	"    yield %b1, %a, %acc1\n"
	"  }\n"
	"  %sum = add %fa, %fb : block<16xi32>\n"
	"  %fsb = splat %fs : block<16xi32>\n"
	"  %tot = add %sum, %fsb : block<16xi32>\n"
	"  %c16 = constant {value = 16} : i32\n"
	"  %rowst = mul %pid, %c16 : i32\n"
	"  %q = addptr %o2, %rowst : ptr<i32>\n"
	"  %qb = splat %q : block<16xptr<i32>>\n"
	"  %qp = addptr %qb, %r : block<16xptr<i32>>\n"
	"  store %qp, %tot\n"
	"  return\n"
	"}\n";

static void test_loops(void)
{
	BeCpuResult r;
	if (!compile("loops", k_loops, &r))
		return;
	enum { G = 50 };
	int32_t out[G], o2[G * 16];
	void *p[2] = {out, o2};
	void *params[2] = {&p[0], &p[1]};
	char err[256];
	CHECK(launch(&r, G, params, err) == 0, "loops launch: %s", err);
	int bad = 0;
	for (int i = 0; i < G; i++) {
		int n = i + 1, s = 0;
		while (n != 1) {
			n = n % 2 == 0 ? n / 2 : 3 * n + 1;
			s++;
		}
		bad += out[i] != s;
		for (int j = 0; j < 16; j++) {
			int a = j, b = 100, acc = 0;
			for (int it = 0; it < 5; it++) {
				int na = b + 1, nb = a;
				a = na;
				b = nb;
				acc += it;
			}
			bad += o2[i * 16 + j] != a + b + acc;
		}
	}
	CHECK(bad == 0, "while/if/for: %d wrong", bad);
	be_cpu_result_free(&r);
}

/* Round trips through narrow floats and integer casts. */
static const char *k_cast =
	"func kernel @cast(%in: ptr<f32>, %h: ptr<f32>, %bf: ptr<f32>, %e4: ptr<f32>, %e5: ptr<f32>, %fi: ptr<i32>, %ii: ptr<i32>, %iu: ptr<u32>, %fo: ptr<f32>, %fu: ptr<f32>, %i8: ptr<i8>, %w: ptr<i32>, %u8: ptr<u8>, %wu: ptr<i32>, %rawb: ptr<bf16>) {\n"
	"  %r = make_range {end = 32, start = 0} : block<32xi32>\n"
	"  %pb = splat %in : block<32xptr<f32>>\n"
	"  %p = addptr %pb, %r : block<32xptr<f32>>\n"
	"  %x = load %p : block<32xf32>\n"
	"  %x16 = cast %x {rounding = \"rtne\"} : block<32xf16>\n"
	"  %y16 = cast %x16 : block<32xf32>\n"
	"  %xb = cast %x {rounding = \"rtne\"} : block<32xbf16>\n"
	"  %yb = cast %xb : block<32xf32>\n"
	"  %x4 = cast %x {rounding = \"rtne\"} : block<32xf8e4m3>\n"
	"  %y4 = cast %x4 : block<32xf32>\n"
	"  %x5 = cast %x {rounding = \"rtne\"} : block<32xf8e5m2>\n"
	"  %y5 = cast %x5 : block<32xf32>\n"
	"  %xi = cast %x : block<32xi32>\n"
	"  %hb = splat %h : block<32xptr<f32>>\n"
	"  %hp = addptr %hb, %r : block<32xptr<f32>>\n"
	"  store %hp, %y16\n"
	"  %bb = splat %bf : block<32xptr<f32>>\n"
	"  %bp = addptr %bb, %r : block<32xptr<f32>>\n"
	"  store %bp, %yb\n"
	"  %rb = splat %rawb : block<32xptr<bf16>>\n"
	"  %rp = addptr %rb, %r : block<32xptr<bf16>>\n"
	"  store %rp, %xb\n"
	"  %4b = splat %e4 : block<32xptr<f32>>\n"
	"  %4p = addptr %4b, %r : block<32xptr<f32>>\n"
	"  store %4p, %y4\n"
	"  %5b = splat %e5 : block<32xptr<f32>>\n"
	"  %5p = addptr %5b, %r : block<32xptr<f32>>\n"
	"  store %5p, %y5\n"
	"  %fib = splat %fi : block<32xptr<i32>>\n"
	"  %fip = addptr %fib, %r : block<32xptr<i32>>\n"
	"  store %fip, %xi\n"
	/* int -> float, signed and unsigned */
	"  %iib = splat %ii : block<32xptr<i32>>\n"
	"  %iip = addptr %iib, %r : block<32xptr<i32>>\n"
	"  %iv = load %iip : block<32xi32>\n"
	"  %iub = splat %iu : block<32xptr<u32>>\n"
	"  %iup = addptr %iub, %r : block<32xptr<u32>>\n"
	"  %uv = load %iup : block<32xu32>\n"
	"  %fs = cast %iv : block<32xf32>\n"
	"  %fus = cast %uv : block<32xf32>\n"
	"  %fob = splat %fo : block<32xptr<f32>>\n"
	"  %fop = addptr %fob, %r : block<32xptr<f32>>\n"
	"  store %fop, %fs\n"
	"  %fub = splat %fu : block<32xptr<f32>>\n"
	"  %fup = addptr %fub, %r : block<32xptr<f32>>\n"
	"  store %fup, %fus\n"
	/* i8 -> i32 sign-extends, u8 -> i32 zero-extends */
	"  %i8b = splat %i8 : block<32xptr<i8>>\n"
	"  %i8p = addptr %i8b, %r : block<32xptr<i8>>\n"
	"  %v8 = load %i8p : block<32xi8>\n"
	"  %w8 = cast %v8 : block<32xi32>\n"
	"  %wb = splat %w : block<32xptr<i32>>\n"
	"  %wp = addptr %wb, %r : block<32xptr<i32>>\n"
	"  store %wp, %w8\n"
	"  %u8b = splat %u8 : block<32xptr<u8>>\n"
	"  %u8p = addptr %u8b, %r : block<32xptr<u8>>\n"
	"  %vu8 = load %u8p : block<32xu8>\n"
	"  %wu8 = cast %vu8 : block<32xi32>\n"
	"  %wub = splat %wu : block<32xptr<i32>>\n"
	"  %wup = addptr %wub, %r : block<32xptr<i32>>\n"
	"  store %wup, %wu8\n"
	"  return\n"
	"}\n";

static float bf16_ref(float x)
{
	uint32_t u;
	memcpy(&u, &x, 4);
	u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
	memcpy(&x, &u, 4);
	return x;
}

static void test_cast(void)
{
	BeCpuResult r;
	if (!compile("cast", k_cast, &r))
		return;
	float in[32] = {1.0f, 1.0625f, 1.1f, 500.0f, 0.001953125f, -3.0f, 1.125f, 1.2f,
			0.1f, -0.3f, 65504.0f, 1e-7f, 2.5f, -7.75f, 0.0f, 3.0f};
	float e4x[16] = {1.0f, 1.0f, 1.125f, 448.0f, 0.001953125f, -3.0f, 1.125f, 1.25f,
			 0.1015625f, -0.3125f, 448.0f, 0.0f, 2.5f, -8.0f, 0.0f, 3.0f};
	float e5x[16] = {1.0f, 1.0f, 1.0f, 512.0f, 0.001953125f, -3.0f, 1.0f, 1.25f,
			 0.09375f, -0.3125f, 57344.0f, 0.0f, 2.5f, -8.0f, 0.0f, 3.0f};
	for (int i = 16; i < 32; i++)
		in[i] = (float)(i * i) * 0.731f - 100.0f;
	float h[32], bf[32], e4[32], e5[32], fo[32], fu[32];
	int32_t fi[32], ii[32], w[32], wu[32];
	uint32_t iu[32];
	int8_t i8[32];
	uint8_t u8[32];
	uint16_t rawb[32];
	for (int i = 0; i < 32; i++) {
		ii[i] = i * 1000003 - 16000000;
		iu[i] = 0xFFFFFFFFu - (uint32_t)i * 12345u;
		i8[i] = (int8_t)(i * 9 - 128);
		u8[i] = (uint8_t)(i * 9 + 2);
	}
	void *p[15] = {in, h, bf, e4, e5, fi, ii, iu, fo, fu, i8, w, u8, wu, rawb};
	void *params[15];
	for (int i = 0; i < 15; i++)
		params[i] = &p[i];
	char err[256];
	CHECK(launch(&r, 1, params, err) == 0, "cast launch: %s", err);
	int bad = 0;
	for (int i = 0; i < 32; i++) {
		if (h[i] != (float)(_Float16)in[i]) {
			bad++;
			fprintf(stderr, "f16 %d: %g -> %g\n", i, (double)in[i], (double)h[i]);
		}
		if (bf[i] != bf16_ref(in[i])) {
			bad++;
			fprintf(stderr, "bf16 %d: %g -> %g\n", i, (double)in[i], (double)bf[i]);
		}
		uint32_t u;
		float b = bf16_ref(in[i]);
		memcpy(&u, &b, 4);
		bad += rawb[i] != u >> 16;
		bad += fi[i] != (int32_t)in[i];
		bad += fo[i] != (float)ii[i];
		bad += fu[i] != (float)iu[i];
		bad += w[i] != (int32_t)i8[i];
		bad += wu[i] != (int32_t)u8[i];
		if (i < 16 && e4[i] != e4x[i]) {
			bad++;
			fprintf(stderr, "e4m3 %d: %g -> %g (want %g)\n", i, (double)in[i], (double)e4[i], (double)e4x[i]);
		}
		if (i < 16 && e5[i] != e5x[i]) {
			bad++;
			fprintf(stderr, "e5m2 %d: %g -> %g (want %g)\n", i, (double)in[i], (double)e5[i], (double)e5x[i]);
		}
	}
	CHECK(bad == 0, "cast: %d wrong", bad);
	be_cpu_result_free(&r);
}

/* Signedness: div/rem/shr/min/max/cmp on i32 and u32 views of the same bits. */
static const char *k_int =
	"func kernel @intops(%a: ptr<i32>, %b: ptr<i32>, %o: ptr<i32>, %ua: ptr<u32>, %ub: ptr<u32>, %uo: ptr<u32>) {\n"
	"  %r = make_range {end = 8, start = 0} : block<8xi32>\n"
	"  %c8 = constant {value = 8} : block<8xi32>\n"
	"  %pa = splat %a : block<8xptr<i32>>\n"
	"  %qa = addptr %pa, %r : block<8xptr<i32>>\n"
	"  %x = load %qa : block<8xi32>\n"
	"  %pb = splat %b : block<8xptr<i32>>\n"
	"  %qb = addptr %pb, %r : block<8xptr<i32>>\n"
	"  %y = load %qb : block<8xi32>\n"
	"  %ua0 = splat %ua : block<8xptr<u32>>\n"
	"  %ua1 = addptr %ua0, %r : block<8xptr<u32>>\n"
	"  %ux = load %ua1 : block<8xu32>\n"
	"  %ub0 = splat %ub : block<8xptr<u32>>\n"
	"  %ub1 = addptr %ub0, %r : block<8xptr<u32>>\n"
	"  %uy = load %ub1 : block<8xu32>\n"
	"  %d = div %x, %y : block<8xi32>\n"
	"  %m = rem %x, %y : block<8xi32>\n"
	"  %s = shr %x, %y : block<8xi32>\n"
	"  %l = shl %x, %y : block<8xi32>\n"
	"  %mn = min %x, %y : block<8xi32>\n"
	"  %mx = max %x, %y : block<8xi32>\n"
	"  %lt = cmp %x, %y {pred = \"lt\"} : block<8xi1>\n"
	"  %lti = cast %lt : block<8xi32>\n"
	"  %ud = div %ux, %uy : block<8xu32>\n"
	"  %um = rem %ux, %uy : block<8xu32>\n"
	"  %us = shr %ux, %uy : block<8xu32>\n"
	"  %umn = min %ux, %uy : block<8xu32>\n"
	"  %umx = max %ux, %uy : block<8xu32>\n"
	"  %ult = cmp %ux, %uy {pred = \"lt\"} : block<8xi1>\n"
	"  %ulti = cast %ult : block<8xu32>\n"
	"  %uh = umulhi %ux, %uy : block<8xu32>\n"
	"  %ng = neg %x : block<8xi32>\n"
	"  %nt = not %x : block<8xi32>\n"
	"  %xr = xor %x, %y : block<8xi32>\n"
	"  %ab = abs %x : block<8xi32>\n"
	"  %pr = mul %r, %c8 : block<8xi32>\n"
	"  %po = splat %o : block<8xptr<i32>>\n"
	"  %qo0 = addptr %po, %pr : block<8xptr<i32>>\n"
	"  store %qo0, %d\n"
	"  %qo1 = addptr %qo0, %ones : block<8xptr<i32>>\n"
	"  store %qo1, %m\n"
	"  %qo2 = addptr %qo1, %ones : block<8xptr<i32>>\n"
	"  store %qo2, %s\n"
	"  %qo3 = addptr %qo2, %ones : block<8xptr<i32>>\n"
	"  store %qo3, %l\n"
	"  %qo4 = addptr %qo3, %ones : block<8xptr<i32>>\n"
	"  store %qo4, %mn\n"
	"  %qo5 = addptr %qo4, %ones : block<8xptr<i32>>\n"
	"  store %qo5, %mx\n"
	"  %qo6 = addptr %qo5, %ones : block<8xptr<i32>>\n"
	"  store %qo6, %lti\n"
	"  %qo7 = addptr %qo6, %ones : block<8xptr<i32>>\n"
	"  %mix = add %ng, %nt : block<8xi32>\n"
	"  %mix2 = add %mix, %xr : block<8xi32>\n"
	"  %mix3 = add %mix2, %ab : block<8xi32>\n"
	"  store %qo7, %mix3\n"
	"  %puo = splat %uo : block<8xptr<u32>>\n"
	"  %quo0 = addptr %puo, %pr : block<8xptr<u32>>\n"
	"  store %quo0, %ud\n"
	"  %quo1 = addptr %quo0, %ones : block<8xptr<u32>>\n"
	"  store %quo1, %um\n"
	"  %quo2 = addptr %quo1, %ones : block<8xptr<u32>>\n"
	"  store %quo2, %us\n"
	"  %quo3 = addptr %quo2, %ones : block<8xptr<u32>>\n"
	"  store %quo3, %umn\n"
	"  %quo4 = addptr %quo3, %ones : block<8xptr<u32>>\n"
	"  store %quo4, %umx\n"
	"  %quo5 = addptr %quo4, %ones : block<8xptr<u32>>\n"
	"  store %quo5, %ulti\n"
	"  %quo6 = addptr %quo5, %ones : block<8xptr<u32>>\n"
	"  store %quo6, %uh\n"
	"  return\n"
	"}\n";

static void test_int(void)
{
	/* %ones is used before its definition above on purpose? no: define it first */
	char *text = malloc(strlen(k_int) + 128);
	const char *at = strstr(k_int, "  %r = make_range");
	size_t head = (size_t)(at - k_int);
	memcpy(text, k_int, head);
	strcpy(text + head, "  %ones = constant {value = 1} : block<8xi32>\n");
	strcat(text, at);
	BeCpuResult r;
	bool ok = compile("intops", text, &r);
	free(text);
	if (!ok)
		return;
	int32_t a[8] = {-7, 7, -8, 100, INT32_MIN, 5, -1, 123456789};
	int32_t b[8] = {2, -2, 1, 7, -1, 0, 31, 33};
	int32_t o[64];
	uint32_t uo[64];
	void *p[6] = {a, b, o, a, b, uo};
	void *params[6];
	for (int i = 0; i < 6; i++)
		params[i] = &p[i];
	char err[256];
	CHECK(launch(&r, 1, params, err) == 0, "intops launch: %s", err);
	int bad = 0;
	for (int i = 0; i < 8; i++) {
		int32_t x = a[i], y = b[i];
		uint32_t ux = (uint32_t)x, uy = (uint32_t)y;
		if (y != 0 && !(x == INT32_MIN && y == -1)) {
			bad += o[i * 8 + 0] != x / y;
			bad += o[i * 8 + 1] != x % y;
		}
		if (uy != 0) {
			bad += uo[i * 8 + 0] != ux / uy;
			bad += uo[i * 8 + 1] != ux % uy;
		}
		int32_t sr = y >= 0 && y < 32 ? x >> y : (x < 0 ? -1 : 0);
		int32_t sl = y >= 0 && y < 32 ? (int32_t)(ux << y) : 0;
		uint32_t usr = uy < 32 ? ux >> uy : 0;
		bad += o[i * 8 + 2] != sr;
		bad += o[i * 8 + 3] != sl;
		bad += o[i * 8 + 4] != (x < y ? x : y);
		bad += o[i * 8 + 5] != (x > y ? x : y);
		bad += o[i * 8 + 6] != (x < y);
		int32_t ab = x == INT32_MIN ? x : (x < 0 ? -x : x);
		bad += o[i * 8 + 7] != (int32_t)((uint32_t)(0u - ux) + ~ux + (ux ^ uy) + (uint32_t)ab);
		bad += uo[i * 8 + 2] != usr;
		bad += uo[i * 8 + 3] != (ux < uy ? ux : uy);
		bad += uo[i * 8 + 4] != (ux > uy ? ux : uy);
		bad += uo[i * 8 + 5] != (uint32_t)(ux < uy);
		bad += uo[i * 8 + 6] != (uint32_t)(((uint64_t)ux * uy) >> 32);
	}
	CHECK(bad == 0, "int ops: %d wrong", bad);
	be_cpu_result_free(&r);
}

static const char *k_shape =
	"func kernel @shape(%src: ptr<f32>, %tr: ptr<f32>, %jn: ptr<f32>, %s0: ptr<f32>, %s1: ptr<f32>, %idx: ptr<i32>, %ga: ptr<f32>, %hin: ptr<i32>, %hist: ptr<i32>, %cat: ptr<f32>) {\n"
	OFF2D(8, 16)
	"  %ps = splat %src : block<8x16xptr<f32>>\n"
	"  %qs = addptr %ps, %off : block<8x16xptr<f32>>\n"
	"  %x = load %qs : block<8x16xf32>\n"
	"  %t = trans %x {order = [1, 0]} : block<16x8xf32>\n"
	"  %t1 = reshape %t {can_reorder = false} : block<128xf32>\n"
	"  %r128 = make_range {end = 128, start = 0} : block<128xi32>\n"
	"  %pt = splat %tr : block<128xptr<f32>>\n"
	"  %qt = addptr %pt, %r128 : block<128xptr<f32>>\n"
	"  store %qt, %t1\n"
	"  %a = reshape %x {can_reorder = false} : block<128xf32>\n"
	"  %b = mul %a, %a : block<128xf32>\n"
	"  %j = join %a, %b : block<128x2xf32>\n"
	"  %j1 = reshape %j {can_reorder = false} : block<256xf32>\n"
	"  %r256 = make_range {end = 256, start = 0} : block<256xi32>\n"
	"  %pj = splat %jn : block<256xptr<f32>>\n"
	"  %qj = addptr %pj, %r256 : block<256xptr<f32>>\n"
	"  store %qj, %j1\n"
	"  %sa, %sb = split %j : block<128xf32>, block<128xf32>\n"
	"  %p0 = splat %s0 : block<128xptr<f32>>\n"
	"  %q0 = addptr %p0, %r128 : block<128xptr<f32>>\n"
	"  store %q0, %sb\n"
	"  %p1 = splat %s1 : block<128xptr<f32>>\n"
	"  %q1 = addptr %p1, %r128 : block<128xptr<f32>>\n"
	"  store %q1, %sa\n"
	"  %pi = splat %idx : block<128xptr<i32>>\n"
	"  %qi = addptr %pi, %r128 : block<128xptr<i32>>\n"
	"  %iv = load %qi : block<128xi32>\n"
	"  %g = gather %a, %iv {axis = 0} : block<128xf32>\n"
	"  %pg = splat %ga : block<128xptr<f32>>\n"
	"  %qg = addptr %pg, %r128 : block<128xptr<f32>>\n"
	"  store %qg, %g\n"
	"  %r64 = make_range {end = 64, start = 0} : block<64xi32>\n"
	"  %ph = splat %hin : block<64xptr<i32>>\n"
	"  %qh = addptr %ph, %r64 : block<64xptr<i32>>\n"
	"  %hv = load %qh : block<64xi32>\n"
	"  %c60 = constant {value = 60} : block<64xi32>\n"
	"  %hm = cmp %r64, %c60 {pred = \"lt\"} : block<64xi1>\n"
	"  %h = histogram %hv, %hm : block<16xi32>\n"
	"  %r16 = make_range {end = 16, start = 0} : block<16xi32>\n"
	"  %pho = splat %hist : block<16xptr<i32>>\n"
	"  %qho = addptr %pho, %r16 : block<16xptr<i32>>\n"
	"  store %qho, %h\n"
	"  %ct = cat %a, %b {can_reorder = false} : block<256xf32>\n"
	"  %pc = splat %cat : block<256xptr<f32>>\n"
	"  %qc = addptr %pc, %r256 : block<256xptr<f32>>\n"
	"  store %qc, %ct\n"
	"  return\n"
	"}\n";

static void test_shape(void)
{
	BeCpuResult r;
	if (!compile("shape", k_shape, &r))
		return;
	float src[128], tr[128], jn[256], s0[128], s1[128], ga[128], cat[256];
	int32_t idx[128], hin[64], hist[16];
	for (int i = 0; i < 128; i++) {
		src[i] = (float)i * 1.5f - 7;
		idx[i] = (i * 37) % 128;
	}
	for (int i = 0; i < 64; i++)
		hin[i] = i % 7 == 0 ? -1 : i % 5 == 0 ? 40 : (i * 3) % 16;
	void *p[10] = {src, tr, jn, s0, s1, idx, ga, hin, hist, cat};
	void *params[10];
	for (int i = 0; i < 10; i++)
		params[i] = &p[i];
	char err[256];
	CHECK(launch(&r, 1, params, err) == 0, "shape launch: %s", err);
	int bad = 0;
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 8; j++)
			bad += tr[i * 8 + j] != src[j * 16 + i];
	CHECK(bad == 0, "trans: %d wrong", bad);
	bad = 0;
	for (int i = 0; i < 128; i++) {
		bad += jn[2 * i] != src[i] || jn[2 * i + 1] != src[i] * src[i];
		bad += s1[i] != src[i] || s0[i] != src[i] * src[i];
		bad += cat[i] != src[i] || cat[128 + i] != src[i] * src[i];
	}
	CHECK(bad == 0, "join/split/cat: %d wrong", bad);
	bad = 0;
	for (int i = 0; i < 128; i++)
		bad += ga[i] != src[idx[i]];
	CHECK(bad == 0, "gather: %d wrong", bad);
	int want[16] = {0};
	for (int i = 0; i < 60; i++)
		if (hin[i] >= 0 && hin[i] < 16)
			want[hin[i]]++;
	bad = 0;
	for (int i = 0; i < 16; i++)
		bad += hist[i] != want[i];
	CHECK(bad == 0, "histogram: %d wrong", bad);
	be_cpu_result_free(&r);
}

static const char *k_math =
	"func kernel @math(%in: ptr<f32>, %o: ptr<f32>) {\n"
	"  %r = make_range {end = 16, start = 0} : block<16xi32>\n"
	"  %c16 = constant {value = 16} : block<16xi32>\n"
	"  %pi = splat %in : block<16xptr<f32>>\n"
	"  %qi = addptr %pi, %r : block<16xptr<f32>>\n"
	"  %x = load %qi : block<16xf32>\n"
	"  %ax = abs %x : block<16xf32>\n"
	"  %v0 = exp %x : block<16xf32>\n"
	"  %v1 = log %ax : block<16xf32>\n"
	"  %v2 = sqrt %ax : block<16xf32>\n"
	"  %v3 = sin %x : block<16xf32>\n"
	"  %v4 = cos %x : block<16xf32>\n"
	"  %v5 = erf %x : block<16xf32>\n"
	"  %v6 = floor %x : block<16xf32>\n"
	"  %v7 = ceil %x : block<16xf32>\n"
	"  %v8 = rsqrt %ax : block<16xf32>\n"
	"  %v9 = exp2 %x : block<16xf32>\n"
	"  %v10 = log2 %ax : block<16xf32>\n"
	"  %v11 = fma %x, %x, %ax : block<16xf32>\n"
	"  %v12 = extern %x {lib = \"libdevice\", symbol = \"__nv_tanhf\"} : block<16xf32>\n"
	"  %v13 = extern %x, %ax {lib = \"libdevice\", symbol = \"__nv_atan2f\"} : block<16xf32>\n"
	"  %v14 = rem %x, %ax : block<16xf32>\n"
	"  %v15 = neg %x : block<16xf32>\n"
	"  %po = splat %o : block<16xptr<f32>>\n"
	"  %rr = mul %r, %c16 : block<16xi32>\n"
	"  %q0 = addptr %po, %rr : block<16xptr<f32>>\n"
	"  %one = constant {value = 1} : block<16xi32>\n"
	"  store %q0, %v0\n"
	"  %q1 = addptr %q0, %one : block<16xptr<f32>>\n"
	"  store %q1, %v1\n"
	"  %q2 = addptr %q1, %one : block<16xptr<f32>>\n"
	"  store %q2, %v2\n"
	"  %q3 = addptr %q2, %one : block<16xptr<f32>>\n"
	"  store %q3, %v3\n"
	"  %q4 = addptr %q3, %one : block<16xptr<f32>>\n"
	"  store %q4, %v4\n"
	"  %q5 = addptr %q4, %one : block<16xptr<f32>>\n"
	"  store %q5, %v5\n"
	"  %q6 = addptr %q5, %one : block<16xptr<f32>>\n"
	"  store %q6, %v6\n"
	"  %q7 = addptr %q6, %one : block<16xptr<f32>>\n"
	"  store %q7, %v7\n"
	"  %q8 = addptr %q7, %one : block<16xptr<f32>>\n"
	"  store %q8, %v8\n"
	"  %q9 = addptr %q8, %one : block<16xptr<f32>>\n"
	"  store %q9, %v9\n"
	"  %q10 = addptr %q9, %one : block<16xptr<f32>>\n"
	"  store %q10, %v10\n"
	"  %q11 = addptr %q10, %one : block<16xptr<f32>>\n"
	"  store %q11, %v11\n"
	"  %q12 = addptr %q11, %one : block<16xptr<f32>>\n"
	"  store %q12, %v12\n"
	"  %q13 = addptr %q12, %one : block<16xptr<f32>>\n"
	"  store %q13, %v13\n"
	"  %q14 = addptr %q13, %one : block<16xptr<f32>>\n"
	"  store %q14, %v14\n"
	"  %q15 = addptr %q14, %one : block<16xptr<f32>>\n"
	"  store %q15, %v15\n"
	"  return\n"
	"}\n";

static void test_math(void)
{
	BeCpuResult r;
	if (!compile("math", k_math, &r))
		return;
	float in[16], o[256];
	for (int i = 0; i < 16; i++)
		in[i] = (float)i * 0.45f - 3.3f;
	void *p[2] = {in, o};
	void *params[2] = {&p[0], &p[1]};
	char err[256];
	CHECK(launch(&r, 1, params, err) == 0, "math launch: %s", err);
	int bad = 0;
	for (int i = 0; i < 16; i++) {
		double x = in[i], ax = fabs(x);
		double want[16] = {exp(x), log(ax), sqrt(ax), sin(x), cos(x), erf(x), floor(x), ceil(x),
				   1 / sqrt(ax), exp2(x), log2(ax), fma(x, x, ax), tanh(x), atan2(x, ax),
				   fmod(x, ax), -x};
		for (int k = 0; k < 16; k++)
			if (!near(o[i * 16 + k], want[k], 1e-5)) {
				bad++;
				fprintf(stderr, "math %d op %d: %g want %g\n", i, k, (double)o[i * 16 + k], want[k]);
			}
	}
	CHECK(bad == 0, "math: %d wrong", bad);
	be_cpu_result_free(&r);
}

static const char *k_call =
	"func kernel @caller(%o: ptr<i32>, %s: ptr<i32>) {\n"
	"  %pid = program_id {axis = 0} : i32\n"
	"  %np = num_programs {axis = 0} : i32\n"
	"  %r = make_range {end = 32, start = 0} : block<32xi32>\n"
	"  %b, %t = call %r, %pid {callee = @twice} : block<32xi32>, i32\n"
	"  %c32 = constant {value = 32} : i32\n"
	"  %st = mul %pid, %c32 : i32\n"
	"  %q = addptr %o, %st : ptr<i32>\n"
	"  %qb = splat %q : block<32xptr<i32>>\n"
	"  %qp = addptr %qb, %r : block<32xptr<i32>>\n"
	"  store %qp, %b\n"
	"  %t2 = add %t, %np : i32\n"
	"  %sp = addptr %s, %pid : ptr<i32>\n"
	"  store %sp, %t2\n"
	"  print %t2 {hex = false, prefix = \"t2 = \"}\n"
	"  return\n"
	"}\n"
	"\n"
	"func noinline @twice(%x: block<32xi32>, %k: i32) -> (block<32xi32>, i32) {\n"
	"  %kb = splat %k : block<32xi32>\n"
	"  %y = add %x, %x : block<32xi32>\n"
	"  %z = add %y, %kb : block<32xi32>\n"
	"  %s = reduce %z {axis = 0} : i32 {\n"
	"  ^(%a: i32, %b2: i32):\n"
	"    %c = add %a, %b2 : i32\n"
	"    yield %c\n"
	"  }\n"
	"  return %z, %s\n"
	"}\n";

static void test_call(void)
{
	BeCpuResult r;
	if (!compile("call", k_call, &r))
		return;
	enum { G = 3 };
	int32_t o[G * 32], s[G];
	void *p[2] = {o, s};
	void *params[2] = {&p[0], &p[1]};
	char err[256];
	CHECK(launch(&r, G, params, err) == 0, "call launch: %s", err);
	int bad = 0;
	for (int g = 0; g < G; g++) {
		int sum = 0;
		for (int i = 0; i < 32; i++) {
			bad += o[g * 32 + i] != 2 * i + g;
			sum += 2 * i + g;
		}
		bad += s[g] != sum + G;
	}
	CHECK(bad == 0, "noinline call: %d wrong", bad);
	be_cpu_result_free(&r);
}

static const char *k_assert =
	"func kernel @chk(%o: ptr<i32>) loc(\"t.py\":1:0) {\n"
	"  %pid = program_id {axis = 0} : i32 loc(2:4)\n"
	"  %five = constant {value = 5} : i32 loc(3:4)\n"
	"  %r = make_range {end = 16, start = 0} : block<16xi32> loc(3:4)\n"
	"  %pb = splat %pid : block<16xi32> loc(3:4)\n"
	"  %fb = splat %five : block<16xi32> loc(3:4)\n"
	"  %ok = cmp %pb, %fb {pred = \"lt\"} : block<16xi1> loc(3:4)\n"
	"  assert %ok {msg = \"pid too large\"} loc(3:4)\n"
	"  %p = addptr %o, %pid : ptr<i32> loc(4:4)\n"
	"  store %p, %pid loc(4:4)\n"
	"  return loc(5:4)\n"
	"}\n";

static void test_assert(void)
{
	BeCpuResult r;
	if (!compile("assert", k_assert, &r))
		return;
	int32_t o[64];
	for (int i = 0; i < 64; i++)
		o[i] = -1;
	void *p = o;
	void *params[1] = {&p};
	char err[256];
	CHECK(launch(&r, 5, params, err) == 0, "assert passes: %s", err);
	CHECK(o[4] == 4, "stored before the assert");
	int rc = launch(&r, 64, params, err);
	CHECK(rc == -1, "assert fails: rc %d", rc);
	CHECK(strcmp(err, "device assertion failed: pid too large at t.py:3") == 0, "assert message '%s'", err);
	CHECK(o[10] == -1, "failing program instance stopped");
	/* the pool still works afterwards */
	CHECK(launch(&r, 5, params, err) == 0, "launch after a failed assert: %s", err);
	be_cpu_result_free(&r);
}

static void test_errors(void)
{
	const char *bad =
		"func kernel @ext(%o: ptr<f32>) {\n"
		"  %x = constant {value = 1.0} : f32\n"
		"  %y = extern %x {lib = \"libdevice\", symbol = \"__nv_no_such_thing\"} : f32 loc(\"e.py\":7:3)\n"
		"  store %o, %y\n"
		"  return\n"
		"}\n";
	IrCtx *ctx = ir_ctx_new();
	IrError *err = NULL;
	IrModule *m = ir_parse(ctx, "ext", bad, &err);
	CHECK(m != NULL, "parse");
	if (m) {
		BeCpuResult r;
		err = be_cpu_compile(m, NULL, &r);
		CHECK(err && strstr(err->msg, "__nv_no_such_thing") && err->loc.line == 7,
		      "unknown extern reported: %s", err ? err->msg : "(none)");
		CHECK(r.kernel == NULL, "no kernel on error");
	}
	ir_ctx_free(ctx);
}

/* Narrow float arithmetic (f16, bf16, fp8 computed in f32 and rounded back),
 * block results of if/while, and a 2-D grid. */
static const char *k_narrow =
	"func kernel @narrow(%in: ptr<f32>, %o: ptr<f32>, %flag: i32) {\n"
	"  %px = program_id {axis = 0} : i32\n"
	"  %py = program_id {axis = 1} : i32\n"
	"  %nx = num_programs {axis = 0} : i32\n"
	"  %lin0 = mul %py, %nx : i32\n"
	"  %lin = add %lin0, %px : i32\n"
	"  %c16 = constant {value = 16} : i32\n"
	"  %base = mul %lin, %c16 : i32\n"
	"  %r = make_range {end = 16, start = 0} : block<16xi32>\n"
	"  %pi = splat %in : block<16xptr<f32>>\n"
	"  %qi = addptr %pi, %r : block<16xptr<f32>>\n"
	"  %x = load %qi : block<16xf32>\n"
	"  %h = cast %x : block<16xf16>\n"
	"  %h2 = mul %h, %h : block<16xf16>\n"
	"  %b = cast %x : block<16xbf16>\n"
	"  %b2 = add %b, %b : block<16xbf16>\n"
	"  %e = cast %x : block<16xf8e5m2>\n"
	"  %e2 = sub %e, %e : block<16xf8e5m2>\n"
	"  %zero = constant {value = 0} : i32\n"
	"  %cond = cmp %flag, %zero {pred = \"ne\"} : i1\n"
	"  %sel = if %cond : block<16xf32> {\n"
	"    %hf = cast %h2 : block<16xf32>\n"
	"    yield %hf\n"
	"  } {\n"
	"    %bf = cast %b2 : block<16xf32>\n"
	"    yield %bf\n"
	"  }\n"
	"  %ef = cast %e2 : block<16xf32>\n"
	"  %t = add %sel, %ef : block<16xf32>\n"
	"  %one = constant {value = 1} : i32\n"
	"  %three = constant {value = 3} : i32\n"
	"  %w, %k = while %t, %zero : block<16xf32>, i32 {\n"
	"  ^(%wv: block<16xf32>, %wk: i32):\n"
	"    %more = cmp %wk, %three {pred = \"lt\"} : i1\n"
	"    condition %more, %wv, %wk\n"
	"  } {\n"
	"  ^(%av: block<16xf32>, %ak: i32):\n"
	"    %two = constant {value = 2.0} : block<16xf32>\n"
	"    %av2 = mul %av, %two : block<16xf32>\n"
	"    %ak1 = add %ak, %one : i32\n"
	"    yield %av2, %ak1\n"
	"  }\n"
	"  %ob = addptr %o, %base : ptr<f32>\n"
	"  %po = splat %ob : block<16xptr<f32>>\n"
	"  %qo = addptr %po, %r : block<16xptr<f32>>\n"
	"  store %qo, %w\n"
	"  return\n"
	"}\n";

static void test_narrow(void)
{
	BeCpuResult r;
	if (!compile("narrow", k_narrow, &r))
		return;
	float in[16], o[6 * 16];
	for (int i = 0; i < 16; i++)
		in[i] = (float)i * 0.3f - 2.2f;
	for (int flag = 0; flag < 2; flag++) {
		void *p[2] = {in, o};
		void *params[3] = {&p[0], &p[1], &flag};
		int grid[3] = {3, 2, 1};
		char err[256];
		CHECK(be_cpu_launch(r.kernel, grid, params, 0, err, 256) == 0, "narrow launch: %s", err);
		int bad = 0;
		for (int g = 0; g < 6; g++)
			for (int i = 0; i < 16; i++) {
				_Float16 h = (_Float16)in[i];
				float want = flag ? (float)(_Float16)((float)h * (float)h) : bf16_ref(bf16_ref(in[i]) * 2);
				want *= 8;
				bad += o[g * 16 + i] != want;
			}
		CHECK(bad == 0, "narrow floats / if / while (flag %d): %d wrong", flag, bad);
	}
	be_cpu_result_free(&r);
}

/* Launches from several threads at once. */
typedef struct LaunchArg {
	BeCpuResult *r;
	int ok;
} LaunchArg;

static void *launch_thread(void *arg)
{
	LaunchArg *a = arg;
	int n = 777;
	float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float)), *o = malloc(n * sizeof(float));
	for (int i = 0; i < n; i++) {
		x[i] = (float)i;
		y[i] = 1;
	}
	void *px = x, *py = y, *po = o;
	void *params[4] = {&px, &py, &po, &n};
	char err[256];
	a->ok = 1;
	for (int rep = 0; rep < 20; rep++) {
		memset(o, 0, n * sizeof(float));
		if (launch(a->r, 4, params, err) != 0)
			a->ok = 0;
		for (int i = 0; i < n; i++)
			if (o[i] != (float)i + 1)
				a->ok = 0;
	}
	free(x);
	free(y);
	free(o);
	return NULL;
}

static void test_threads(void)
{
	BeCpuResult r;
	if (!compile("add2", k_add, &r))
		return;
	pthread_t t[4];
	LaunchArg a[4];
	for (int i = 0; i < 4; i++) {
		a[i].r = &r;
		pthread_create(&t[i], NULL, launch_thread, &a[i]);
	}
	int ok = 1;
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ok &= a[i].ok;
	}
	CHECK(ok, "concurrent launches");
	be_cpu_result_free(&r);
}

int main(void)
{
	test_add();
	test_softmax();
	test_reduce();
	test_scan();
	test_dot();
	test_dot_tiles(32, 16, 64, "f32");
	test_dot_tiles(8, 8, 32, "f32");
	test_dot_tiles(4, 16, 64, "f32");
	test_dot_tiles(2, 4, 32, "f32");
	test_dot_tiles(1, 16, 16, "f32");
	/* tiles of fewer rows (M < 8) and narrower vectors (N < 32) */
	test_dot_tiles(4, 8, 16, "f32");
	test_dot_tiles(2, 2, 8, "f32");
	test_dot_tiles(16, 32, 4, "f32");
	test_dot_tiles(1, 1, 1, "f32");
	test_dot_tiles(64, 16, 16, "f16");
	test_dot_tiles(4, 16, 8, "f16");
	test_dot_tiles(32, 64, 2, "f16");
	test_atomics();
	test_loops();
	test_cast();
	test_int();
	test_shape();
	test_math();
	test_call();
	test_assert();
	test_errors();
	test_narrow();
	test_threads();
	printf("cpu_test: %d passed, %d failed\n", checks - failures, failures);
	return failures ? 1 : 0;
}
