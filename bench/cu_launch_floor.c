/* cu_launch_floor.c: the driver's own cost of a launch, the floor under any
 * runtime's host time per launch: cuLaunchKernel of a no-op kernel with 4
 * and with 8 parameters, grid (1,), 128 threads, in a loop from C (no
 * Python, no argument handling), on the default stream and on a created
 * one. bench/launch_overhead_gpu.py builds and runs it beside ctriton's,
 * Triton's and torch's launches.
 *
 *     cc -O2 -o /tmp/cu_launch_floor bench/cu_launch_floor.c -ldl && /tmp/cu_launch_floor [calls] [rounds]
 *
 * Prints one line per case: the median over rounds of the mean time per
 * call, in microseconds. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;

static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(CUdevice *, int);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*cuCtxSetCurrent)(CUcontext);
static CUresult (*cuModuleLoadData)(CUmodule *, const void *);
static CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				  unsigned, CUstream, void **, void **);
static CUresult (*cuStreamCreate)(CUstream *, unsigned);
static CUresult (*cuCtxSynchronize)(void);

static const char PTX[] =
	".version 7.0\n.target sm_80\n.address_size 64\n"
	".visible .entry noop4(.param .u64 a, .param .u32 b, .param .f32 c, .param .u32 d)\n{ ret; }\n"
	".visible .entry noop8(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 d,\n"
	"  .param .u32 e, .param .f32 f, .param .u32 g, .param .u32 h)\n{ ret; }\n";

#define LOAD(f)                                                                 \
	do {                                                                    \
		*(void **)&f = dlsym(lib, #f);                                  \
		if (!f) {                                                       \
			*(void **)&f = dlsym(lib, #f "_v2");                    \
		}                                                               \
		if (!f) {                                                       \
			fprintf(stderr, "no %s in libcuda\n", #f);              \
			return 1;                                               \
		}                                                               \
	} while (0)

#define CK(x)                                                                   \
	do {                                                                    \
		CUresult r_ = (x);                                              \
		if (r_) {                                                       \
			fprintf(stderr, "%s failed: %d\n", #x, r_);             \
			return 1;                                               \
		}                                                               \
	} while (0)

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int bench(const char *name, CUfunction f, void **params, CUstream st, int calls, int rounds)
{
	double *t = malloc(sizeof(double) * (size_t)rounds);
	if (!t)
		return 1;
	for (int i = 0; i < calls / 10 + 1; i++) /* warm-up */
		CK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, st, params, NULL));
	CK(cuCtxSynchronize());
	for (int r = 0; r < rounds; r++) {
		double t0 = now_us();
		for (int i = 0; i < calls; i++)
			CK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, st, params, NULL));
		t[r] = (now_us() - t0) / calls;
		CK(cuCtxSynchronize());
	}
	qsort(t, (size_t)rounds, sizeof(double), cmp);
	printf("%-40s %8.3f\n", name, t[rounds / 2]);
	free(t);
	return 0;
}

int main(int argc, char **argv)
{
	int calls = argc > 1 ? atoi(argv[1]) : 5000, rounds = argc > 2 ? atoi(argv[2]) : 9;
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "no libcuda.so.1\n");
		return 1;
	}
	LOAD(cuInit);
	LOAD(cuDeviceGet);
	LOAD(cuDevicePrimaryCtxRetain);
	LOAD(cuCtxSetCurrent);
	LOAD(cuModuleLoadData);
	LOAD(cuModuleGetFunction);
	LOAD(cuLaunchKernel);
	LOAD(cuStreamCreate);
	LOAD(cuCtxSynchronize);
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction f4, f8;
	CUstream st;
	CK(cuInit(0));
	CK(cuDeviceGet(&dev, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CK(cuModuleLoadData(&mod, PTX));
	CK(cuModuleGetFunction(&f4, mod, "noop4"));
	CK(cuModuleGetFunction(&f8, mod, "noop8"));
	CK(cuStreamCreate(&st, 0));
	uint64_t p = 0;
	uint32_t n = 16, flag = 1;
	float x = 1.0f;
	void *a4[4] = {&p, &n, &x, &flag};
	void *a8[8] = {&p, &p, &p, &n, &n, &x, &flag, &flag};
	printf("driver floor, us per cuLaunchKernel (median of %d rounds of %d)\n", rounds, calls);
	if (bench("cuLaunchKernel(4 params), default stream", f4, a4, NULL, calls, rounds) ||
	    bench("cuLaunchKernel(8 params), default stream", f8, a8, NULL, calls, rounds) ||
	    bench("cuLaunchKernel(4 params), created stream", f4, a4, st, calls, rounds) ||
	    bench("cuLaunchKernel(8 params), created stream", f8, a8, st, calls, rounds))
		return 1;
	return 0;
}
