/* gpu_run.c: runs corpus kernels on a real GPU through jit/cuda and checks
 * the results against host references (manual: needs a GPU and a driver).
 *   bazel build //tests/backend:gpu_run && bazel-bin/tests/backend/gpu_run
 * Kernels: vector_add (2^20 + 3 elements), softmax_row (1000 columns),
 * reduce2d (64x128), for_loop, dot (32x32x32 f16). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "jit/jit.h"
#include "kernels.h"

static int failures;
static char err[4096];

#define DIE(...)                                      \
	do {                                          \
		fprintf(stderr, __VA_ARGS__);         \
		fprintf(stderr, ": %s\n", err);       \
		exit(2);                              \
	} while (0)

static JitCudaKernel build(const char *name, int arch)
{
	const TestKernel *tk = NULL;
	for (int i = 0; i < n_test_kernels; i++)
		if (!strcmp(test_kernels[i].name, name))
			tk = &test_kernels[i];
	IrCtx *ctx = ir_ctx_new();
	IrModule *m = ir_module_new(ctx);
	tk->build(m);
	BeOptions o;
	be_options_default(&o);
	JitTarget t = {JIT_BACKEND_CUDA, arch, 32, 0};
	JitKernel r;
	char *msg = jit_compile_module(m, &o, &t, 0, NULL, &r);
	if (msg) {
		snprintf(err, sizeof err, "%s", msg);
		free(msg);
		DIE("compile %s", name);
	}
	JitCudaKernel k;
	int rc;
	if (r.cubin)
		rc = jit_cuda_load(r.cubin, r.cubin_len, true, r.name, r.shared, r.num_warps, &k, err, sizeof err);
	else
		rc = jit_cuda_load(r.ptx, strlen(r.ptx) + 1, false, r.name, r.shared, r.num_warps, &k, err, sizeof err);
	if (rc)
		DIE("load %s", name);
	printf("%s: %d regs, %d spills, shared %d\n", name, k.n_regs, k.n_spills, k.shared);
	jit_kernel_free(&r);
	ir_ctx_free(ctx);
	return k;
}

static uint64_t upload(const void *h, size_t n)
{
	uint64_t d;
	if (jit_cuda_malloc(&d, n, err, sizeof err) || jit_cuda_memcpy_htod(d, h, n, err, sizeof err))
		DIE("upload");
	return d;
}

static void run(JitCudaKernel *k, unsigned gx, void **params)
{
	unsigned grid[3] = {gx, 1, 1};
	if (jit_cuda_launch(k, grid, 0, params, err, sizeof err) || jit_cuda_synchronize(err, sizeof err))
		DIE("launch");
}

static void expect_close(const char *what, const float *got, const float *want, int n, float tol)
{
	int bad = 0;
	for (int i = 0; i < n; i++)
		if (!(fabsf(got[i] - want[i]) <= tol * (1 + fabsf(want[i])))) {
			if (bad++ < 5)
				fprintf(stderr, "%s[%d] = %g, want %g\n", what, i, got[i], want[i]);
		}
	printf("%s: %s\n", what, bad ? "FAIL" : "ok");
	failures += bad != 0;
}

int main(void)
{
	JitCudaProps p;
	if (jit_cuda_init(err, sizeof err) || jit_cuda_props(0, &p, err, sizeof err))
		DIE("init");
	printf("device sm_%d, %d SMs, %d B shared, driver %d\n", p.arch, p.multiprocessor_count, p.max_shared_mem,
	       p.driver_version);
	int arch = p.arch >= 90 ? 90 : 80;

	{ /* vector add */
		int n = (1 << 20) + 3;
		float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n), *z = malloc(sizeof(float) * n),
		      *w = malloc(sizeof(float) * n);
		for (int i = 0; i < n; i++) {
			x[i] = (float)i * 0.5f;
			y[i] = 1.0f / (float)(i + 1);
			w[i] = x[i] + y[i];
		}
		uint64_t dx = upload(x, sizeof(float) * n), dy = upload(y, sizeof(float) * n), dz = upload(z, sizeof(float) * n);
		JitCudaKernel k = build("vector_add", arch);
		void *params[4] = {&dx, &dy, &dz, &n};
		run(&k, (unsigned)((n + 1023) / 1024), params);
		jit_cuda_memcpy_dtoh(z, dz, sizeof(float) * n, err, sizeof err);
		expect_close("vector_add", z, w, n, 0);
	}
	{ /* softmax rows of 1000 columns, stride 1024 */
		int rows = 64, cols = 1000, stride = 1024;
		float *x = calloc((size_t)rows * stride, sizeof(float)), *y = calloc((size_t)rows * stride, sizeof(float));
		float *w = calloc((size_t)rows * stride, sizeof(float));
		for (int r = 0; r < rows; r++) {
			float mx = -INFINITY, s = 0;
			for (int c = 0; c < cols; c++) {
				x[r * stride + c] = sinf((float)(r * 7 + c)) * 5;
				mx = fmaxf(mx, x[r * stride + c]);
			}
			for (int c = 0; c < cols; c++)
				s += expf(x[r * stride + c] - mx);
			for (int c = 0; c < cols; c++)
				w[r * stride + c] = expf(x[r * stride + c] - mx) / s;
		}
		uint64_t dx = upload(x, sizeof(float) * rows * stride), dy = upload(y, sizeof(float) * rows * stride);
		JitCudaKernel k = build("softmax_row", arch);
		void *params[4] = {&dx, &dy, &stride, &cols};
		run(&k, (unsigned)rows, params);
		jit_cuda_memcpy_dtoh(y, dy, sizeof(float) * rows * stride, err, sizeof err);
		expect_close("softmax_row", y, w, rows * stride, 1e-4f);
	}
	{ /* reduce2d: column sums, row maxima, rows minus their max */
		int M = 64, N = 128, ld = 128;
		float *x = malloc(sizeof(float) * M * N), *s0 = malloc(sizeof(float) * N), *s1 = malloc(sizeof(float) * M);
		float *w0 = calloc((size_t)N, sizeof(float)), *w1 = malloc(sizeof(float) * M), *wx = malloc(sizeof(float) * M * N);
		for (int i = 0; i < M * N; i++)
			x[i] = (float)((i * 37) % 101) - 50;
		for (int i = 0; i < M; i++) {
			w1[i] = -INFINITY;
			for (int j = 0; j < N; j++) {
				w0[j] += x[i * N + j];
				w1[i] = fmaxf(w1[i], x[i * N + j]);
			}
			for (int j = 0; j < N; j++)
				wx[i * N + j] = x[i * N + j] - w1[i];
		}
		uint64_t dx = upload(x, sizeof(float) * M * N), d0 = upload(s0, sizeof(float) * N), d1 = upload(s1, sizeof(float) * M);
		JitCudaKernel k = build("reduce2d", arch);
		void *params[4] = {&dx, &d0, &d1, &ld};
		run(&k, 1, params);
		jit_cuda_memcpy_dtoh(s0, d0, sizeof(float) * N, err, sizeof err);
		jit_cuda_memcpy_dtoh(s1, d1, sizeof(float) * M, err, sizeof err);
		jit_cuda_memcpy_dtoh(x, dx, sizeof(float) * M * N, err, sizeof err);
		expect_close("reduce2d axis 0", s0, w0, N, 1e-5f);
		expect_close("reduce2d axis 1", s1, w1, M, 0);
		expect_close("reduce2d x - max", x, wx, M * N, 0);
	}
	{ /* dot: c += a @ b, f16 inputs */
		uint16_t a[32 * 32], b[32 * 32];
		float af[32 * 32], bf[32 * 32], c[32 * 32], w[32 * 32];
		for (int i = 0; i < 32 * 32; i++) {
			af[i] = (float)((i % 7) - 3);
			bf[i] = (float)((i % 5) - 2);
			/* small integers are exact in f16: sign, exponent, mantissa */
			_Float16 ha = (_Float16)af[i], hb = (_Float16)bf[i];
			memcpy(&a[i], &ha, 2);
			memcpy(&b[i], &hb, 2);
			c[i] = 1;
		}
		for (int i = 0; i < 32; i++)
			for (int j = 0; j < 32; j++) {
				float s = 1;
				for (int q = 0; q < 32; q++)
					s += af[i * 32 + q] * bf[q * 32 + j];
				w[i * 32 + j] = s;
			}
		uint64_t da = upload(a, sizeof a), db = upload(b, sizeof b), dc = upload(c, sizeof c);
		JitCudaKernel k = build("dot", arch);
		void *params[3] = {&da, &db, &dc};
		run(&k, 1, params);
		jit_cuda_memcpy_dtoh(c, dc, sizeof c, err, sizeof err);
		expect_close("dot", c, w, 32 * 32, 0);
	}
	printf("%s\n", failures ? "FAILED" : "all ok");
	return failures ? 1 : 0;
}
