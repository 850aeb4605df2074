/* nvptx_test.c: compiles every kernel of the corpus (kernels.c) for sm_80
 * and sm_90 and assembles the PTX with ptxas (skipped, with a note, when
 * ptxas is missing); checks vectorised accesses, shuffles, barriers and the
 * launch metadata on a few of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include "jit/jit.h"
#include "kernels.h"
#include "tests/check.h"

static const char *ptxas_path(void)
{
	const char *p = getenv("CTRITON_PTXAS_PATH");
	if (p && *p)
		return access(p, X_OK) == 0 ? p : NULL;
	return access("/usr/local/cuda/bin/ptxas", X_OK) == 0 ? "/usr/local/cuda/bin/ptxas" : NULL;
}

/* 0 when ptxas accepts the PTX (or ptxas is missing), else its status. */
static int run_ptxas(const char *ptx, int arch, const char *name)
{
	const char *pt = ptxas_path();
	if (!pt)
		return 0;
	const char *tmp = getenv("TEST_TMPDIR");
	char path[512], cmd[1400];
	snprintf(path, sizeof path, "%s/%s_sm%d.ptx", tmp ? tmp : "/tmp", name, arch);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(ptx, f);
	fclose(f);
	snprintf(cmd, sizeof cmd, "%s -arch=sm_%d%s -o %s.cubin %s", pt, arch, arch == 90 ? "a" : "", path, path); /* 90a: wgmma */
	return system(cmd);
}

/* The pass table's pipeline up to PTX (the test runs ptxas itself). */
static IrError *compile_module(IrModule *m, const BeOptions *o, int arch, JitKernel *out)
{
	JitTarget t = {JIT_BACKEND_CUDA, arch, 32, 0};
	char *msg = jit_compile_module(m, o, &t, JIT_NO_PTXAS, NULL, out);
	if (!msg)
		return NULL;
	IrError *e = ir_error(m->ctx, IR_ERR_BACKEND, (IrLoc){0}, "%s", msg);
	free(msg);
	return e;
}

static bool compile(const TestKernel *tk, int arch, int num_warps, JitKernel *out)
{
	IrCtx *ctx = ir_ctx_new();
	IrModule *m = ir_module_new(ctx);
	tk->build(m);
	IrError *verr = ir_verify(m);
	if (verr) {
		fprintf(stderr, "%s (TTIR): %s\n", tk->name, ir_error_str(ctx, verr));
		ir_ctx_free(ctx);
		return false;
	}
	BeOptions o;
	be_options_default(&o);
	o.num_warps = num_warps;
	IrError *err = compile_module(m, &o, arch, out);
	if (err)
		fprintf(stderr, "%s: %s\n", tk->name, ir_error_str(ctx, err));
	if (!err && (verr = ir_verify(m)) != NULL) {
		fprintf(stderr, "%s (TTGIR): %s\n", tk->name, ir_error_str(ctx, verr));
		err = verr;
	}
	ir_ctx_free(ctx);
	return err == NULL;
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

/* Every tests/backend/kernels/NAME.ttir: parse, compile for both archs, ptxas. */
static void test_text_corpus(void)
{
	const char *dir = "tests/backend/kernels";
	DIR *d = opendir(dir);
	CHECK(d != NULL, "no %s", dir);
	if (!d)
		return;
	int n = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".ttir"))
			continue;
		char path[512];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		char *text = slurp(path);
		for (int a = 80; a <= 90; a += 10) {
			IrCtx *ctx = ir_ctx_new();
			IrError *err = NULL;
			IrModule *m = ir_parse(ctx, path, text ? text : "", &err);
			CHECK(m != NULL, "%s", err ? ir_error_str(ctx, err) : path);
			if (m) {
				BeOptions o;
				be_options_default(&o);
				JitKernel r;
				err = compile_module(m, &o, a, &r);
				CHECK(err == NULL, "%s: %s", path, err ? ir_error_str(ctx, err) : "");
				if (!err) {
					char nm[300];
					snprintf(nm, sizeof nm, "text_%.*s", (int)(len - 5), e->d_name);
					CHECK(run_ptxas(r.ptx, a, nm) == 0, "%s sm_%d: ptxas", path, a);
					jit_kernel_free(&r);
				}
			}
			ir_ctx_free(ctx);
		}
		free(text);
		n++;
	}
	closedir(d);
	CHECK(n >= 10, "only %d .ttir kernels", n);
}

/* A conversion in rounds (a flattened nest's epilogue: alloc.c mark_rounds)
 * through half the bytes: rounds = 2 set by hand on two conversions, run
 * from allocate-shared to PTX. */
static const char *const rounds_kernels[3] = {
	/* 128x64 f16 between two blocked layouts: offset bit 12 (the rows'
	 * bit 3) is every register's own on both sides, so each round's
	 * stores and loads are known when compiled */
	"module {num_warps = 8}\n"
	"func kernel @cvt(%0: ptr<f16> {divisibility = 16}, %1: ptr<f16> {divisibility = 16}) {\n"
	"  %2 = splat %0 : block<128x64xptr<f16>, #blocked<spt = [1, 8], tpw = [4, 8], wpc = [8, 1], order = [1, 0]>>\n"
	"  %3 = load %2 : block<128x64xf16, #blocked<spt = [1, 8], tpw = [4, 8], wpc = [8, 1], order = [1, 0]>>\n"
	"  %4 = convert_layout %3 {rounds = 2} : block<128x64xf16, #blocked<spt = [8, 1], tpw = [8, 4], wpc = [1, 8], order = [0, 1]>>\n"
	"  %5 = splat %1 : block<128x64xptr<f16>, #blocked<spt = [8, 1], tpw = [8, 4], wpc = [1, 8], order = [0, 1]>>\n"
	"  store %5, %4\n"
	"  return\n"
	"}\n",
	/* 1024 f32, four a thread to one a thread: a thread's four stores lie
	 * in one round, its own (one branch a round) */
	"module {num_warps = 8}\n"
	"func kernel @cvt(%0: ptr<f32> {divisibility = 16}, %1: ptr<f32> {divisibility = 16}) {\n"
	"  %2 = make_range {end = 1024, start = 0} : block<1024xi32, #blocked<spt = [4], tpw = [32], wpc = [8], order = [0]>>\n"
	"  %3 = splat %0 : block<1024xptr<f32>, #blocked<spt = [4], tpw = [32], wpc = [8], order = [0]>>\n"
	"  %4 = addptr %3, %2 : block<1024xptr<f32>, #blocked<spt = [4], tpw = [32], wpc = [8], order = [0]>>\n"
	"  %5 = load %4 : block<1024xf32, #blocked<spt = [4], tpw = [32], wpc = [8], order = [0]>>\n"
	"  %6 = convert_layout %5 {rounds = 2} : block<1024xf32, #blocked<spt = [1], tpw = [32], wpc = [8], order = [0]>>\n"
	"  %7 = make_range {end = 1024, start = 0} : block<1024xi32, #blocked<spt = [1], tpw = [32], wpc = [8], order = [0]>>\n"
	"  %8 = splat %1 : block<1024xptr<f32>, #blocked<spt = [1], tpw = [32], wpc = [8], order = [0]>>\n"
	"  %9 = addptr %8, %7 : block<1024xptr<f32>, #blocked<spt = [1], tpw = [32], wpc = [8], order = [0]>>\n"
	"  store %9, %6\n"
	"  return\n"
	"}\n",
	/* a 128x256 f32 accumulator to a store layout whose warps split the
	 * columns, in 4 rounds: one round bit is each register's on both sides
	 * (the accumulator's rows by eights), the other its warp's on the
	 * accumulator's side (a uniform branch a round around its stores) */
	"module {num_warps = 8}\n"
	"func kernel @cvt(%0: ptr<f32> {divisibility = 16}, %1: ptr<f32> {divisibility = 16}) {\n"
	"  %2 = make_range {end = 128, start = 0} : block<128xi32, #slice<dim = 1, parent = #mma<version = [3, 0], wpc = [8, 1], instr = [16, 8, 16]>>>\n"
	"  %3 = expand_dims %2 {axis = 1} : block<128x1xi32, #mma<version = [3, 0], wpc = [8, 1], instr = [16, 8, 16]>>\n"
	"  %4 = constant {value = 256} : block<128x1xi32, #mma<version = [3, 0], wpc = [8, 1], instr = [16, 8, 16]>>\n"
	"  %5 = mul %3, %4 : block<128x1xi32, #mma<version = [3, 0], wpc = [8, 1], instr = [16, 8, 16]>>\n"
	"  %6 = broadcast %5 : block<128x256xi32, #mma<version = [3, 0], wpc = [8, 1], instr = [16, 8, 16]>>\n"
	"  %7 = make_range {end = 256, start = 0} : block<256xi32, #slice<dim = 0, parent = #mma<version = [3, 0], wpc = [8, 1], instr = [16, 8, 16]>>>\n"
	"  %8 = expand_dims %7 {axis = 0} : block<1x256xi32, #mma<version = [3, 0], wpc = [8, 1], instr = [16, 8, 16]>>\n"
	"  %9 = broadcast %8 : block<128x256xi32, #mma<version = [3, 0], wpc = [8, 1], instr = [16, 8, 16]>>\n"
	"  %10 = add %6, %9 : block<128x256xi32, #mma<version = [3, 0], wpc = [8, 1], instr = [16, 8, 16]>>\n"
	"  %11 = splat %0 : block<128x256xptr<f32>, #mma<version = [3, 0], wpc = [8, 1], instr = [16, 8, 16]>>\n"
	"  %12 = addptr %11, %10 : block<128x256xptr<f32>, #mma<version = [3, 0], wpc = [8, 1], instr = [16, 8, 16]>>\n"
	"  %13 = load %12 : block<128x256xf32, #mma<version = [3, 0], wpc = [8, 1], instr = [16, 8, 16]>>\n"
	"  %14 = convert_layout %13 {rounds = 4} : block<128x256xf32, #blocked<spt = [1, 4], tpw = [1, 32], wpc = [4, 2], order = [1, 0]>>\n"
	"  %15 = make_range {end = 128, start = 0} : block<128xi32, #slice<dim = 1, parent = #blocked<spt = [1, 4], tpw = [1, 32], wpc = [4, 2], order = [1, 0]>>>\n"
	"  %16 = expand_dims %15 {axis = 1} : block<128x1xi32, #blocked<spt = [1, 4], tpw = [1, 32], wpc = [4, 2], order = [1, 0]>>\n"
	"  %17 = constant {value = 256} : block<128x1xi32, #blocked<spt = [1, 4], tpw = [1, 32], wpc = [4, 2], order = [1, 0]>>\n"
	"  %18 = mul %16, %17 : block<128x1xi32, #blocked<spt = [1, 4], tpw = [1, 32], wpc = [4, 2], order = [1, 0]>>\n"
	"  %19 = broadcast %18 : block<128x256xi32, #blocked<spt = [1, 4], tpw = [1, 32], wpc = [4, 2], order = [1, 0]>>\n"
	"  %20 = make_range {end = 256, start = 0} : block<256xi32, #slice<dim = 0, parent = #blocked<spt = [1, 4], tpw = [1, 32], wpc = [4, 2], order = [1, 0]>>>\n"
	"  %21 = expand_dims %20 {axis = 0} : block<1x256xi32, #blocked<spt = [1, 4], tpw = [1, 32], wpc = [4, 2], order = [1, 0]>>\n"
	"  %22 = broadcast %21 : block<128x256xi32, #blocked<spt = [1, 4], tpw = [1, 32], wpc = [4, 2], order = [1, 0]>>\n"
	"  %23 = add %19, %22 : block<128x256xi32, #blocked<spt = [1, 4], tpw = [1, 32], wpc = [4, 2], order = [1, 0]>>\n"
	"  %24 = splat %1 : block<128x256xptr<f32>, #blocked<spt = [1, 4], tpw = [1, 32], wpc = [4, 2], order = [1, 0]>>\n"
	"  %25 = addptr %24, %23 : block<128x256xptr<f32>, #blocked<spt = [1, 4], tpw = [1, 32], wpc = [4, 2], order = [1, 0]>>\n"
	"  store %25, %14\n"
	"  return\n"
	"}\n"
};

static int count_of(const char *s, const char *what)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
		n++;
	return n;
}

static void test_convert_rounds(void)
{
	static const int bytes[3] = {8192, 2048, 32768}, rounds[3] = {2, 2, 4}, branches[3] = {0, 2, 4};
	for (int i = 0; i < 3; i++) {
		IrCtx *ctx = ir_ctx_new();
		IrError *e = NULL;
		IrModule *m = ir_parse(ctx, "rounds", rounds_kernels[i], &e);
		CHECK(m != NULL, "rounds %d: %s", i, e ? ir_error_str(ctx, e) : "parse");
		if (!m) {
			ir_ctx_free(ctx);
			continue;
		}
		BeOptions o;
		be_options_default(&o);
		o.num_warps = 8;
		JitTarget t = {JIT_BACKEND_CUDA, 90, 32, 0};
		JitKernel k;
		JitPipe *p = jit_pipe_new(m, &o, &t, &k);
		static const char *const passes[] = {"insert-barriers", "allocate-shared", "nvptx-lower", "llvm-opt",
						      "ptx-emit"};
		for (int q = 0; q < 5 && !e; q++)
			e = jit_pipe_run(p, passes[q]);
		CHECK(e == NULL, "rounds %d: %s", i, e ? e->msg : "");
		if (!e) {
			char *ptx = jit_pipe_text(p);
			/* 1/R of the block at a time; a barrier between each round's
			 * stores and loads and before the next round's stores */
			CHECK(k.shared == bytes[i], "rounds %d: shared %d, want %d", i, k.shared, bytes[i]);
			CHECK(count_of(ptx, "bar.sync") == 2 * rounds[i] - 1, "rounds %d: %d barriers", i,
			      count_of(ptx, "bar.sync"));
			/* the first: every round known when compiled; the others: one
			 * branch a round around the stores */
			CHECK(count_of(ptx, " bra") == branches[i], "rounds %d: %d branches", i, count_of(ptx, " bra"));
			char nm[32];
			snprintf(nm, sizeof nm, "rounds_%d", i);
			CHECK(run_ptxas(ptx, 90, nm) == 0, "rounds %d: ptxas", i);
			free(ptx);
		}
		jit_pipe_free(p);
		jit_kernel_free(&k);
		ir_ctx_free(ctx);
	}
}

static const TestKernel *find(const char *name)
{
	for (int i = 0; i < n_test_kernels; i++)
		if (!strcmp(test_kernels[i].name, name))
			return &test_kernels[i];
	return NULL;
}

int main(void)
{
	if (!ptxas_path())
		printf("note: ptxas not found; PTX is generated but not assembled\n");
	test_convert_rounds();
	static const int arches[2] = {80, 90};
	for (int i = 0; i < n_test_kernels; i++) {
		for (int a = 0; a < 2; a++) {
			JitKernel r;
			bool ok = compile(&test_kernels[i], arches[a], 4, &r);
			CHECK(ok, "%s sm_%d: compile", test_kernels[i].name, arches[a]);
			if (!ok)
				continue;
			CHECK(strstr(r.ptx, ".entry") != NULL, "%s: no .entry", test_kernels[i].name);
			CHECK(strstr(r.ptx, ".maxntid 128") != NULL, "%s: no .maxntid", test_kernels[i].name);
			int rc = run_ptxas(r.ptx, arches[a], test_kernels[i].name);
			CHECK(rc == 0, "%s sm_%d: ptxas rejected the PTX", test_kernels[i].name, arches[a]);
			if (getenv("NVPTX_TEST_DUMP"))
				printf("==== %s sm_%d (shared %d)\n%s\n%s\n", test_kernels[i].name, arches[a], r.shared,
				       r.ttgir, r.ptx);
			jit_kernel_free(&r);
		}
	}

	/* vector add with 16-divisible pointers and n: 128-bit accesses */
	JitKernel r;
	if (compile(find("vector_add"), 90, 4, &r)) {
		CHECK(strstr(r.ptx, "ld.global.v4.f32") || strstr(r.ptx, "ld.global.v4.b32"), "vector_add: no 128-bit loads");
		CHECK(strstr(r.ptx, "st.global.v4.f32") || strstr(r.ptx, "st.global.v4.b32"), "vector_add: no 128-bit stores");
		CHECK(r.shared == 0, "vector_add: shared %d", r.shared);
		CHECK(strstr(r.ptx, ".extern .shared") == NULL || r.shared == 0, "vector_add: shared");
		jit_kernel_free(&r);
	}
	/* softmax: warp shuffles, a cross-warp exchange through shared memory */
	if (compile(find("softmax_row"), 80, 4, &r)) {
		CHECK(strstr(r.ptx, "shfl.sync.bfly") != NULL, "softmax: no shuffles");
		CHECK(strstr(r.ptx, "bar.sync") != NULL || strstr(r.ptx, "barrier.sync") != NULL, "softmax: no barrier");
		CHECK(r.shared > 0, "softmax: no shared scratch");
		CHECK(strstr(r.ptx, "ld.global.v4") != NULL, "softmax: loads not vectorised");
		jit_kernel_free(&r);
	}
	/* one warp: no shared memory for a 1-D reduction */
	if (compile(find("softmax_row"), 90, 1, &r)) {
		CHECK(r.shared == 0, "softmax 1 warp: shared %d", r.shared);
		CHECK(strstr(r.ptx, ".maxntid 32") != NULL, "softmax 1 warp: maxntid");
		jit_kernel_free(&r);
	}
	/* 8 warps work too */
	if (compile(find("reduce2d"), 90, 8, &r)) {
		CHECK(run_ptxas(r.ptx, 90, "reduce2d_w8") == 0, "reduce2d 8 warps: ptxas");
		jit_kernel_free(&r);
	}
	test_text_corpus();
	printf("%d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
