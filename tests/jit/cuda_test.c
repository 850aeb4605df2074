/* cuda_test.c: the CUDA driver loader without a GPU: a missing driver gives
 * "CUDA driver not found", the toolkit's stub libcuda resolves every entry
 * point and then fails cleanly in cuInit; ptxas turns backend PTX into a
 * cubin (skipped with a note when ptxas is missing). Each driver scenario
 * runs in a child process because the driver is loaded once per process. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend.h"
#include "jit/jit.h"
#include "tests/backend/kernels.h"
#include "tests/check.h"

/* In a child: init with CTRITON_LIBCUDA_PATH=path; exit 0 when the error
 * message contains want. */
static int scenario(const char *path, const char *want)
{
	pid_t pid = fork();
	if (pid == 0) {
		setenv("CTRITON_LIBCUDA_PATH", path, 1);
		char err[512] = "";
		int rc = jit_cuda_init(err, sizeof err);
		printf("  init(%s): rc %d: %s\n", path, rc, err);
		fflush(stdout);
		_exit(rc != 0 && strstr(err, want) ? 0 : 1);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

/* sm_90a: a warpgroup MMA's accumulator read before its wait_group */
#define WGMMA_EARLY_READ                                                                            \
	".version 8.0\n.target sm_90a\n.address_size 64\n"                                         \
	".visible .entry k(.param .u64 out)\n{\n"                                                    \
	".reg .b32 %r<4>;\n.reg .f32 %f<8>;\n.reg .b64 %rd<4>;\n.reg .pred %p<2>;\n"             \
	"ld.param.u64 %rd2, [out];\nmov.b64 %rd1, 0;\nmov.b32 %r1, 0;\nsetp.ne.b32 %p1, %r1, 0;\n" \
	"mov.f32 %f1, 0f00000000;\nmov.f32 %f2, 0f00000000;\n"                                      \
	"mov.f32 %f3, 0f00000000;\nmov.f32 %f4, 0f00000000;\n"                                      \
	"wgmma.fence.sync.aligned;\n"                                                               \
	"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1,%f2,%f3,%f4}, %rd1, %rd1, %p1, "      \
	"1, 1, 0, 0;\n"                                                                             \
	"wgmma.commit_group.sync.aligned;\nadd.f32 %f5, %f1, %f2;\n"                               \
	"wgmma.wait_group.sync.aligned 0;\nadd.f32 %f6, %f5, %f3;\nst.global.f32 [%rd2], %f6;\n" \
	"ret;\n}\n"

/* The advisories jit_parse_ptxas_log keeps: only those about the MMAs. */
static void parse_checks(void)
{
	JitKernel k = {0};
	jit_parse_ptxas_log("ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async "
			    "instructions are serialized due to non wgmma instructions reading accumulator "
			    "registers of  a wgmma between start and end of the pipeline stage in the "
			    "function 'f'\nptxas info    : Used 168 registers, used 2 barriers\n    0 bytes "
			    "stack frame, 12 bytes spill stores, 12 bytes spill loads\n",
			    &k);
	CHECK(strcmp(k.wgmma_advisory, "C7514") == 0 && k.n_regs == 168 && k.n_spills == 12,
	      "C7514: %s %d %d", k.wgmma_advisory, k.n_regs, k.n_spills);
	jit_parse_ptxas_log("ptxas info    : (C7599) something else\nptxas info    : (C7519) "
			    "warpgroup.arrive is injected in around line 9\n",
			    &k);
	CHECK(strcmp(k.wgmma_advisory, "C7519") == 0, "C7519 after another: %s", k.wgmma_advisory);
	jit_parse_ptxas_log("ptxas info    : (C7599) not about the MMAs\nptxas info    : Used 9 registers\n", &k);
	CHECK(k.wgmma_advisory[0] == 0 && k.n_regs == 9, "no advisory: %s", k.wgmma_advisory);
}

int main(void)
{
	parse_checks();
	CHECK(scenario("/nonexistent/libcuda.so.1", "CUDA driver not found") == 0, "missing driver message");
	const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
	if (access(stub, R_OK) == 0)
		CHECK(scenario(stub, "cuInit failed") == 0, "stub driver: cuInit error");
	else
		printf("note: no stub libcuda; skipped the dlsym path\n");

	/* ptxas: backend PTX -> cubin */
	IrCtx *ctx = ir_ctx_new();
	IrModule *m = ir_module_new(ctx);
	tk_vector_add(m);
	BeOptions o;
	be_options_default(&o);
	JitTarget t = {JIT_BACKEND_CUDA, 80, 32, 0};
	JitKernel r;
	char *e = jit_compile_module(m, &o, &t, JIT_NO_PTXAS, NULL, &r);
	CHECK(e == NULL, "compile: %s", e ? e : "");
	bool compiled = e == NULL;
	free(e);
	if (compiled) {
		char err[2048] = "";
		if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0 || getenv("CTRITON_PTXAS_PATH")) {
			JitKernel k = {.ptx = r.ptx};
			int rc = jit_ptxas(&k, 80, err, sizeof err);
			CHECK(rc == 0 && k.cubin_len > 4 && memcmp(k.cubin, "\177ELF", 4) == 0,
			      "ptxas: %s", err);
			CHECK(k.n_regs > 0, "ptxas -v registers: %d", k.n_regs);
			free(k.cubin);
			CHECK(k.wgmma_advisory[0] == 0, "no MMA advisory: %s", k.wgmma_advisory);
			/* an accumulator read before its wait: ptxas injects one */
			JitKernel w = {.ptx = (char *)WGMMA_EARLY_READ};
			rc = jit_ptxas(&w, 90, err, sizeof err);
			CHECK(rc == 0 && strcmp(w.wgmma_advisory, "C7517") == 0, "sm_90a advisory: %d %s %s", rc,
			      w.wgmma_advisory, err);
			free(w.cubin);
			JitKernel bad = {.ptx = (char *)"garbage"};
			rc = jit_ptxas(&bad, 80, err, sizeof err);
			CHECK(rc != 0 && strstr(err, "ptxas failed"), "ptxas error text: %s", err);
		} else {
			printf("note: ptxas not found; skipped\n");
		}
		jit_kernel_free(&r);
	}
	ir_ctx_free(ctx);
	printf("%d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
