/* cuda.c: the CUDA driver through dlopen, and the GPU launcher.
 *
 * libcuda is never linked: the first jit_cuda_init() opens it
 * ($CTRITON_LIBCUDA_PATH, else libcuda.so.1) and resolves each entry point by
 * its CUDA 13 versioned name (cuMemAlloc_v2, cuDevicePrimaryCtxRelease_v2,
 * ...). cuda.h is used for its types and enums only. The context is the
 * device's primary context (the one torch uses), made current on the calling
 * thread. Modules load from a cubin (made by jit_ptxas in compile.c) or
 * from PTX, which the driver's JIT compiles at load.
 */
#include "jit/jit.h"

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The driver entry points, by their exported (versioned) names. */
#define CU_FUNCS(X)                                                                                          \
	X(cuInit, "cuInit", (unsigned))                                                      \
	X(cuDriverGetVersion, "cuDriverGetVersion", (int *))                                 \
	X(cuGetErrorName, "cuGetErrorName", (CUresult, const char **))                       \
	X(cuGetErrorString, "cuGetErrorString", (CUresult, const char **))                   \
	X(cuDeviceGet, "cuDeviceGet", (CUdevice *, int))                                     \
	X(cuDeviceGetCount, "cuDeviceGetCount", (int *))                                     \
	X(cuDeviceGetAttribute, "cuDeviceGetAttribute", (int *, CUdevice_attribute, CUdevice)) \
	X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *, CUdevice))     \
	X(cuCtxGetCurrent, "cuCtxGetCurrent", (CUcontext *))                                 \
	X(cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext))                                   \
	X(cuCtxGetDevice, "cuCtxGetDevice", (CUdevice *))                                    \
	X(cuCtxSynchronize, "cuCtxSynchronize", (void))                                      \
	X(cuModuleLoadData, "cuModuleLoadData", (CUmodule *, const void *))                  \
	X(cuModuleUnload, "cuModuleUnload", (CUmodule))                                      \
	X(cuModuleGetFunction, "cuModuleGetFunction", (CUfunction *, CUmodule, const char *)) \
	X(cuFuncGetAttribute, "cuFuncGetAttribute", (int *, CUfunction_attribute, CUfunction)) \
	X(cuFuncSetAttribute, "cuFuncSetAttribute", (CUfunction, CUfunction_attribute, int)) \
	X(cuLaunchKernel, "cuLaunchKernel",                                                              \
	  (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, \
		       CUstream, void **, void **))                                                      \
	X(cuPointerGetAttribute, "cuPointerGetAttribute", (void *, CUpointer_attribute, CUdeviceptr)) \
	X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr *, size_t))                              \
	X(cuMemFree, "cuMemFree_v2", (CUdeviceptr))                                          \
	X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", (CUdeviceptr, const void *, size_t))              \
	X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", (void *, CUdeviceptr, size_t))

typedef struct Driver {
#define FIELD(f, sym, args) CUresult(*p_##f) args;
	CU_FUNCS(FIELD)
#undef FIELD
	void *lib;
	int version;
	CUcontext ctx;
} Driver;

static Driver drv;
static pthread_mutex_t drv_lock = PTHREAD_MUTEX_INITIALIZER;
static int drv_state; /* 0 not tried, 1 ready, -1 failed */
static char drv_error[512];

static int seterr(char *err, int errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int seterr(char *err, int errlen, const char *fmt, ...)
{
	if (err && errlen > 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, (size_t)errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static const char *cu_str(CUresult r)
{
	const char *name = NULL, *desc = NULL;
	static __thread char buf[256];
	if (drv.p_cuGetErrorName)
		drv.p_cuGetErrorName(r, &name);
	if (drv.p_cuGetErrorString)
		drv.p_cuGetErrorString(r, &desc);
	snprintf(buf, sizeof buf, "%s (%d): %s", name ? name : "CUDA error", (int)r, desc ? desc : "");
	return buf;
}

#define CU_CHECK(call, what)                                                          \
	do {                                                                          \
		CUresult r_ = (call);                                                 \
		if (r_ != CUDA_SUCCESS)                                               \
			return seterr(err, errlen, "%s failed: %s", what, cu_str(r_)); \
	} while (0)

static int load_driver(void)
{
	const char *path = getenv("CTRITON_LIBCUDA_PATH");
	if (!path || !*path)
		path = "libcuda.so.1";
	drv.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!drv.lib) {
		const char *e = dlerror();
		snprintf(drv_error, sizeof drv_error,
			 "CUDA driver not found: %s (install the NVIDIA driver or set CTRITON_LIBCUDA_PATH)",
			 e ? e : path);
		return -1;
	}
#define LOAD(f, sym, args)                                                                                 \
	*(void **)&drv.p_##f = dlsym(drv.lib, sym);                                                            \
	if (!drv.p_##f) {                                                                                      \
		snprintf(drv_error, sizeof drv_error, "CUDA driver at %s lacks %s (driver too old?)", path, sym); \
		return -1;                                                                                 \
	}
	CU_FUNCS(LOAD)
#undef LOAD
	CUresult r = drv.p_cuInit(0);
	if (r != CUDA_SUCCESS) {
		snprintf(drv_error, sizeof drv_error, "CUDA driver not usable: cuInit failed: %s", cu_str(r));
		return -1;
	}
	drv.p_cuDriverGetVersion(&drv.version);
	return 0;
}

/* Loads the driver once per process. */
static int driver_ready(char *err, int errlen)
{
	pthread_mutex_lock(&drv_lock);
	if (drv_state == 0)
		drv_state = load_driver() == 0 ? 1 : -1;
	int st = drv_state;
	pthread_mutex_unlock(&drv_lock);
	return st < 0 ? seterr(err, errlen, "%s", drv_error) : 0;
}

int jit_cuda_probe(int *count, char *err, int errlen)
{
	*count = 0;
	if (driver_ready(err, errlen))
		return -1;
	CU_CHECK(drv.p_cuDeviceGetCount(count), "cuDeviceGetCount");
	return 0;
}

int jit_cuda_attribute(int device, int attr, int *value, char *err, int errlen)
{
	*value = 0;
	if (driver_ready(err, errlen))
		return -1;
	CUdevice d;
	CU_CHECK(drv.p_cuDeviceGet(&d, device), "cuDeviceGet");
	CU_CHECK(drv.p_cuDeviceGetAttribute(value, (CUdevice_attribute)attr, d), "cuDeviceGetAttribute");
	return 0;
}

int jit_cuda_init(char *err, int errlen)
{
	if (driver_ready(err, errlen))
		return -1;
	/* a current context on this thread (torch's), else device 0's primary one */
	CUcontext cur = NULL;
	CU_CHECK(drv.p_cuCtxGetCurrent(&cur), "cuCtxGetCurrent");
	if (cur)
		return 0;
	CUdevice dev;
	CU_CHECK(drv.p_cuDeviceGet(&dev, 0), "cuDeviceGet");
	CUcontext ctx;
	CU_CHECK(drv.p_cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
	CU_CHECK(drv.p_cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	return 0;
}

int jit_cuda_current_device(int *device, char *err, int errlen)
{
	if (jit_cuda_init(err, errlen))
		return -1;
	CUdevice d;
	CU_CHECK(drv.p_cuCtxGetDevice(&d), "cuCtxGetDevice");
	*device = (int)d;
	return 0;
}

int jit_cuda_props(int device, JitCudaProps *p, char *err, int errlen)
{
	if (jit_cuda_init(err, errlen))
		return -1;
	CUdevice d;
	CU_CHECK(drv.p_cuDeviceGet(&d, device), "cuDeviceGet");
	int major = 0, minor = 0;
	memset(p, 0, sizeof *p);
	p->device = device;
	CU_CHECK(drv.p_cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d), "cuDeviceGetAttribute");
	CU_CHECK(drv.p_cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d), "cuDeviceGetAttribute");
	CU_CHECK(drv.p_cuDeviceGetAttribute(&p->multiprocessor_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d),
		 "cuDeviceGetAttribute");
	CU_CHECK(drv.p_cuDeviceGetAttribute(&p->max_shared_mem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d),
		 "cuDeviceGetAttribute");
	CU_CHECK(drv.p_cuDeviceGetAttribute(&p->max_num_regs, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, d),
		 "cuDeviceGetAttribute");
	CU_CHECK(drv.p_cuDeviceGetAttribute(&p->warp_size, CU_DEVICE_ATTRIBUTE_WARP_SIZE, d), "cuDeviceGetAttribute");
	p->arch = major * 10 + minor;
	p->driver_version = drv.version;
	return 0;
}

/* ------------------------------------------------------------------------- */



int jit_cuda_load(const void *image, size_t size, bool is_cubin, const char *name, int shared, int num_warps,
		  JitCudaKernel *k, char *err, int errlen)
{
	memset(k, 0, sizeof *k);
	if (jit_cuda_init(err, errlen))
		return -1;
	(void)size;
	(void)is_cubin; /* the driver recognises PTX text and cubin images alike */
	CUdevice dev;
	CU_CHECK(drv.p_cuCtxGetDevice(&dev), "cuCtxGetDevice");
	int limit = 0;
	CU_CHECK(drv.p_cuDeviceGetAttribute(&limit, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev),
		 "cuDeviceGetAttribute");
	if (shared > limit)
		return seterr(err, errlen,
			      "out of resource: shared memory, Required: %d, Hardware limit: %d. Reducing block sizes or `num_stages` may help.",
			      shared, limit);
	CUmodule mod;
	CU_CHECK(drv.p_cuModuleLoadData(&mod, image), "cuModuleLoadData");
	CUfunction fn;
	CUresult r = drv.p_cuModuleGetFunction(&fn, mod, name);
	if (r != CUDA_SUCCESS) {
		drv.p_cuModuleUnload(mod);
		return seterr(err, errlen, "kernel %s not found in module: %s", name, cu_str(r));
	}
	int local = 0;
	drv.p_cuFuncGetAttribute(&k->n_regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
	drv.p_cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn);
	drv.p_cuFuncGetAttribute(&k->max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn);
	k->n_spills = local / 4;
	if (shared > 49152) {
		int stat = 0;
		drv.p_cuFuncGetAttribute(&stat, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
		r = drv.p_cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared - stat);
		if (r != CUDA_SUCCESS) {
			drv.p_cuModuleUnload(mod);
			return seterr(err, errlen, "cuFuncSetAttribute(max dynamic shared = %d) failed: %s", shared, cu_str(r));
		}
	}
	if (32 * num_warps > k->max_threads) {
		drv.p_cuModuleUnload(mod);
		return seterr(err, errlen,
			      "out of resource: threads, Required: %d, Hardware limit: %d (registers per thread: %d)",
			      32 * num_warps, k->max_threads, k->n_regs);
	}
	k->module = mod;
	k->function = fn;
	k->shared = shared;
	k->num_warps = num_warps;
	return 0;
}

void jit_cuda_unload(JitCudaKernel *k)
{
	if (k && k->module && drv_state == 1)
		drv.p_cuModuleUnload((CUmodule)k->module);
	if (k)
		memset(k, 0, sizeof *k);
}

int jit_cuda_launch(const JitCudaKernel *k, const unsigned grid[3], uint64_t stream, void **params, char *err,
		    int errlen)
{
	if (drv_state != 1)
		return seterr(err, errlen, "CUDA driver not initialised");
	if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
		return 0; /* empty grid: nothing to run */
	CU_CHECK(drv.p_cuLaunchKernel((CUfunction)k->function, grid[0], grid[1], grid[2], 32u * (unsigned)k->num_warps, 1,
				    1, (unsigned)k->shared, (CUstream)(uintptr_t)stream, params, NULL),
		 "cuLaunchKernel");
	return 0;
}

int jit_cuda_check_pointer(uint64_t ptr, int index, char *err, int errlen)
{
	if (ptr == 0)
		return 0;
	if (drv_state != 1)
		return seterr(err, errlen, "CUDA driver not initialised");
	unsigned memtype = 0;
	CUresult r = drv.p_cuPointerGetAttribute(&memtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)ptr);
	if (r == CUDA_ERROR_INVALID_VALUE)
		return seterr(err, errlen,
			      "Pointer argument (at %d) cannot be accessed from the GPU (a CPU tensor or a host buffer?)",
			      index);
	if (r != CUDA_SUCCESS)
		return seterr(err, errlen, "Pointer argument (at %d): cuPointerGetAttribute failed: %s", index, cu_str(r));
	return 0;
}

int jit_cuda_malloc(uint64_t *dptr, size_t bytes, char *err, int errlen)
{
	if (jit_cuda_init(err, errlen))
		return -1;
	CUdeviceptr p;
	CU_CHECK(drv.p_cuMemAlloc(&p, bytes), "cuMemAlloc");
	*dptr = (uint64_t)p;
	return 0;
}

int jit_cuda_free(uint64_t dptr)
{
	return drv_state == 1 && drv.p_cuMemFree((CUdeviceptr)dptr) == CUDA_SUCCESS ? 0 : -1;
}

int jit_cuda_memcpy_htod(uint64_t dst, const void *src, size_t bytes, char *err, int errlen)
{
	CU_CHECK(drv.p_cuMemcpyHtoD((CUdeviceptr)dst, src, bytes), "cuMemcpyHtoD");
	return 0;
}

int jit_cuda_memcpy_dtoh(void *dst, uint64_t src, size_t bytes, char *err, int errlen)
{
	CU_CHECK(drv.p_cuMemcpyDtoH(dst, (CUdeviceptr)src, bytes), "cuMemcpyDtoH");
	return 0;
}

int jit_cuda_synchronize(char *err, int errlen)
{
	CU_CHECK(drv.p_cuCtxSynchronize(), "cuCtxSynchronize");
	return 0;
}
