/* fake_libcuda.c: a stand-in for libcuda.so.1 on a machine without a GPU,
 * for the tests and benchmarks of the GPU launch path
 * (CTRITON_LIBCUDA_PATH=<this library>). One device (compute capability
 * 9.0), every call succeeds, a module loads without looking at its image,
 * and cuLaunchKernel records what it was given: grid, block, shared memory,
 * stream and the first fake_nparams parameters, read as the 8-byte slots
 * the launch path packs. fake_launch() hands the record to ctypes.
 *
 *     cc -shared -fPIC -O2 -o libfakecuda.so fake_libcuda.c
 */
#include <stdint.h>
#include <string.h>

typedef int CUresult;

typedef struct FakeLaunch {
	uint64_t count; /* launches so far */
	unsigned grid[3], block[3], shared;
	uint64_t stream;
	uint64_t params[32];
} FakeLaunch;

static FakeLaunch last;
static int nparams; /* parameters to record per launch */
static int ctx_current;

FakeLaunch *fake_launch(void);
void fake_set_nparams(int n);

FakeLaunch *fake_launch(void)
{
	return &last;
}

void fake_set_nparams(int n)
{
	nparams = n < 0 ? 0 : n > 32 ? 32 : n;
}

CUresult cuInit(unsigned flags);
CUresult cuDriverGetVersion(int *v);
CUresult cuGetErrorName(CUresult r, const char **s);
CUresult cuGetErrorString(CUresult r, const char **s);
CUresult cuDeviceGet(int *d, int ordinal);
CUresult cuDeviceGetCount(int *n);
CUresult cuDeviceGetAttribute(int *v, int attr, int dev);
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev);
CUresult cuCtxGetCurrent(void **ctx);
CUresult cuCtxSetCurrent(void *ctx);
CUresult cuCtxGetDevice(int *dev);
CUresult cuCtxSynchronize(void);
CUresult cuModuleLoadData(void **mod, const void *image);
CUresult cuModuleUnload(void *mod);
CUresult cuModuleGetFunction(void **fn, void *mod, const char *name);
CUresult cuFuncGetAttribute(int *v, int attr, void *fn);
CUresult cuFuncSetAttribute(void *fn, int attr, int v);
CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			unsigned bz, unsigned shared, void *stream, void **params, void **extra);
CUresult cuPointerGetAttribute(void *data, int attr, uint64_t ptr);
CUresult cuMemAlloc_v2(uint64_t *p, size_t n);
CUresult cuMemFree_v2(uint64_t p);
CUresult cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t n);
CUresult cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t n);

CUresult cuInit(unsigned flags)
{
	(void)flags;
	return 0;
}

CUresult cuDriverGetVersion(int *v)
{
	*v = 13000;
	return 0;
}

CUresult cuGetErrorName(CUresult r, const char **s)
{
	(void)r;
	*s = "CUDA_ERROR_FAKE";
	return 0;
}

CUresult cuGetErrorString(CUresult r, const char **s)
{
	(void)r;
	*s = "fake driver";
	return 0;
}

CUresult cuDeviceGet(int *d, int ordinal)
{
	*d = ordinal;
	return 0;
}

CUresult cuDeviceGetCount(int *n)
{
	*n = 1;
	return 0;
}

/* CUdevice_attribute values of cuda.h. */
CUresult cuDeviceGetAttribute(int *v, int attr, int dev)
{
	(void)dev;
	switch (attr) {
	case 1: *v = 1024; break;    /* max threads per block */
	case 8: *v = 49152; break;   /* shared memory per block */
	case 10: *v = 32; break;     /* warp size */
	case 12: *v = 65536; break;  /* registers per block */
	case 16: *v = 132; break;    /* multiprocessors */
	case 39: *v = 2048; break;   /* threads per multiprocessor */
	case 75: *v = 9; break;      /* compute capability */
	case 76: *v = 0; break;
	case 82: *v = 65536; break;  /* registers per multiprocessor */
	case 97: *v = 232448; break; /* shared memory per block, opt-in */
	default: *v = 1; break;
	}
	return 0;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	(void)dev;
	*ctx = &ctx_current;
	return 0;
}

CUresult cuCtxGetCurrent(void **ctx)
{
	*ctx = ctx_current ? &ctx_current : NULL;
	return 0;
}

CUresult cuCtxSetCurrent(void *ctx)
{
	ctx_current = ctx != NULL;
	return 0;
}

CUresult cuCtxGetDevice(int *dev)
{
	*dev = 0;
	return 0;
}

CUresult cuCtxSynchronize(void)
{
	return 0;
}

static int the_module, the_function;

CUresult cuModuleLoadData(void **mod, const void *image)
{
	(void)image;
	*mod = &the_module;
	return 0;
}

CUresult cuModuleUnload(void *mod)
{
	(void)mod;
	return 0;
}

CUresult cuModuleGetFunction(void **fn, void *mod, const char *name)
{
	(void)mod;
	(void)name;
	*fn = &the_function;
	return 0;
}

/* CUfunction_attribute values of cuda.h. */
CUresult cuFuncGetAttribute(int *v, int attr, void *fn)
{
	(void)fn;
	*v = attr == 0 ? 1024 : attr == 4 ? 32 : 0; /* max threads per block, registers */
	return 0;
}

CUresult cuFuncSetAttribute(void *fn, int attr, int v)
{
	(void)fn;
	(void)attr;
	(void)v;
	return 0;
}

CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			unsigned bz, unsigned shared, void *stream, void **params, void **extra)
{
	(void)fn;
	(void)extra;
	last.count++;
	last.grid[0] = gx, last.grid[1] = gy, last.grid[2] = gz;
	last.block[0] = bx, last.block[1] = by, last.block[2] = bz;
	last.shared = shared;
	last.stream = (uint64_t)(uintptr_t)stream;
	for (int i = 0; i < nparams; i++)
		memcpy(&last.params[i], params[i], 8);
	return 0;
}

CUresult cuPointerGetAttribute(void *data, int attr, uint64_t ptr)
{
	(void)attr;
	(void)ptr;
	*(unsigned *)data = 2; /* CU_MEMORYTYPE_DEVICE */
	return 0;
}

static unsigned char heap[1 << 20];
static size_t heap_used;

CUresult cuMemAlloc_v2(uint64_t *p, size_t n)
{
	if (heap_used + n > sizeof heap)
		return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
	*p = (uint64_t)(uintptr_t)(heap + heap_used);
	heap_used += (n + 255) & ~(size_t)255;
	return 0;
}

CUresult cuMemFree_v2(uint64_t p)
{
	(void)p;
	return 0;
}

CUresult cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t n)
{
	memcpy((void *)(uintptr_t)dst, src, n);
	return 0;
}

CUresult cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t n)
{
	memcpy(dst, (const void *)(uintptr_t)src, n);
	return 0;
}
