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

static int failures, checks;

#define CHECK(c, ...)                                                         \
	do {                                                                  \
		checks++;                                                     \
		if (!(c)) {                                                   \
			failures++;                                           \
			fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                         \
			fputc('\n', stderr);                                  \
		}                                                             \
	} while (0)

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

int main(void)
{
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
	JitTarget t = {JIT_BACKEND_CUDA, 80, 32};
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
