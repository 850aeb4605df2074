/* cuda.c: the CUDA driver through dlopen, and the GPU launcher.
 *
 * libcuda is never linked: the first jit_cuda_init() opens it
 * ($CTRITON_LIBCUDA_PATH, else libcuda.so.1) and resolves each entry point by
 * its CUDA 13 versioned name (cuMemAlloc_v2, cuDevicePrimaryCtxRelease_v2,
 * ...). cuda.h is used for its types and enums only. Each device's
 * context is its primary context (the one torch and the CUDA runtime use),
 * retained once per process. A module is loaded into the context of the
 * device it is for and remembers that context; a launch or an unload makes
 * it current on the calling thread for the call and then puts back what was
 * current, so the thread's current device (torch's) never changes under its
 * feet. Modules load from a cubin (made by jit_ptxas in compile.c) or from
 * PTX, which the driver's JIT compiles at load. Launches go through
 * cuLaunchKernel, or cuLaunchKernelEx (resolved when the driver has it) for
 * those with launch attributes (launch_pdl, launch_cooperative_grid).
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
	/* optional: NULL when the driver lacks it (launches with attributes fail) */
	CUresult (*p_cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
	/* optional too: only CTRITON_PREFER_SHARED=1 asks for it */
	CUresult (*p_cuFuncSetCacheConfig)(CUfunction, CUfunc_cache);
	/* cuDeviceGetName, resolved when the driver has it (only `ctriton info` asks) */
	CUresult (*p_cuDeviceGetName)(char *, int, CUdevice);
	/* cuTensorMapEncodeTiled (CUDA 12), resolved when the driver has it */
	CUresult (*p_cuTensorMapEncodeTiled)(void *, int, unsigned, void *, const uint64_t *, const uint64_t *,
					     const unsigned *, const unsigned *, int, int, int, int);
	void *lib;
	int version;
	CUcontext ctx;
} Driver;

static Driver drv;
static pthread_mutex_t drv_lock = PTHREAD_MUTEX_INITIALIZER;
static int drv_state; /* 0 not tried, 1 ready, -1 failed */
static char drv_error[512];

/* Per device, set once and read without a lock after: the retained primary
 * context (NULL: not retained yet; retained under drv_lock) and the compute
 * capability (0: not asked yet). The device count is asked once. */
static CUcontext dev_ctx[JIT_CUDA_MAXDEV];
static int dev_arch[JIT_CUDA_MAXDEV];
static int dev_count = -1;

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
	*(void **)&drv.p_cuLaunchKernelEx = dlsym(drv.lib, "cuLaunchKernelEx");
	*(void **)&drv.p_cuFuncSetCacheConfig = dlsym(drv.lib, "cuFuncSetCacheConfig");
	*(void **)&drv.p_cuTensorMapEncodeTiled = dlsym(drv.lib, "cuTensorMapEncodeTiled");
	*(void **)&drv.p_cuDeviceGetName = dlsym(drv.lib, "cuDeviceGetName");
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
	if (__atomic_load_n(&drv_state, __ATOMIC_ACQUIRE) == 1)
		return 0;
	pthread_mutex_lock(&drv_lock);
	if (drv_state == 0)
		__atomic_store_n(&drv_state, load_driver() == 0 ? 1 : -1, __ATOMIC_RELEASE);
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

int jit_cuda_device_name(int device, char *name, int len, int *driver_version, char *err, int errlen)
{
	if (len > 0)
		name[0] = 0;
	*driver_version = 0;
	if (driver_ready(err, errlen))
		return -1;
	CUdevice d;
	CU_CHECK(drv.p_cuDeviceGet(&d, device), "cuDeviceGet");
	if (drv.p_cuDeviceGetName)
		CU_CHECK(drv.p_cuDeviceGetName(name, len, d), "cuDeviceGetName");
	else if (len > 0)
		snprintf(name, (size_t)len, "CUDA device %d", device);
	*driver_version = drv.version;
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
/* Devices                                                                   */
/* ------------------------------------------------------------------------- */

int jit_cuda_device_count(void)
{
	int n = __atomic_load_n(&dev_count, __ATOMIC_ACQUIRE);
	if (n >= 0)
		return n;
	if (driver_ready(NULL, 0))
		return -1;
	if (drv.p_cuDeviceGetCount(&n) != CUDA_SUCCESS)
		return -1;
	n = n > JIT_CUDA_MAXDEV ? JIT_CUDA_MAXDEV : n;
	__atomic_store_n(&dev_count, n, __ATOMIC_RELEASE);
	return n;
}

/* Checks that device is one of this process's devices. */
static int check_device(int device, char *err, int errlen)
{
	int n = jit_cuda_device_count();
	if (n < 0)
		return driver_ready(err, errlen) ? -1 : seterr(err, errlen, "cuDeviceGetCount failed");
	if (device < 0 || device >= n)
		return seterr(err, errlen, "CUDA device %d does not exist (this process sees %d device%s)", device,
			      n, n == 1 ? "" : "s");
	return 0;
}

int jit_cuda_arch(int device)
{
	if (check_device(device, NULL, 0))
		return -1;
	int a = __atomic_load_n(&dev_arch[device], __ATOMIC_ACQUIRE);
	if (a > 0)
		return a;
	int major = 0, minor = 0;
	CUdevice d;
	if (drv.p_cuDeviceGet(&d, device) != CUDA_SUCCESS ||
	    drv.p_cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d) != CUDA_SUCCESS ||
	    drv.p_cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d) != CUDA_SUCCESS)
		return -1;
	a = major * 10 + minor;
	__atomic_store_n(&dev_arch[device], a, __ATOMIC_RELEASE);
	return a;
}

/* The primary context of device, retained on first use (and kept: torch and
 * the CUDA runtime share it). */
static int primary_ctx(int device, CUcontext *ctx, char *err, int errlen)
{
	if (check_device(device, err, errlen))
		return -1;
	CUcontext c = __atomic_load_n(&dev_ctx[device], __ATOMIC_ACQUIRE);
	if (c) {
		*ctx = c;
		return 0;
	}
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&drv_lock);
	c = dev_ctx[device];
	if (!c) {
		CUdevice d;
		r = drv.p_cuDeviceGet(&d, device);
		if (r == CUDA_SUCCESS)
			r = drv.p_cuDevicePrimaryCtxRetain(&c, d);
		if (r == CUDA_SUCCESS)
			__atomic_store_n(&dev_ctx[device], c, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&drv_lock);
	if (r != CUDA_SUCCESS)
		return seterr(err, errlen, "cuDevicePrimaryCtxRetain(device %d) failed: %s", device, cu_str(r));
	*ctx = c;
	return 0;
}

/* Makes ctx current on this thread; *prev receives what was. */
static int enter_ctx(CUcontext ctx, CUcontext *prev, char *err, int errlen)
{
	CU_CHECK(drv.p_cuCtxGetCurrent(prev), "cuCtxGetCurrent");
	if (*prev != ctx)
		CU_CHECK(drv.p_cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	return 0;
}

/* Puts back the context enter_ctx found. */
static void leave_ctx(CUcontext ctx, CUcontext prev)
{
	if (prev != ctx)
		drv.p_cuCtxSetCurrent(prev);
}

int jit_cuda_context_device(int *device)
{
	*device = -1;
	if (driver_ready(NULL, 0))
		return -1;
	CUcontext cur = NULL;
	if (drv.p_cuCtxGetCurrent(&cur) != CUDA_SUCCESS)
		return -1;
	CUdevice d;
	if (cur && drv.p_cuCtxGetDevice(&d) == CUDA_SUCCESS)
		*device = (int)d;
	return 0;
}

int jit_cuda_set_device(int device, char *err, int errlen)
{
	CUcontext ctx;
	if (driver_ready(err, errlen) || primary_ctx(device, &ctx, err, errlen))
		return -1;
	CU_CHECK(drv.p_cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	return 0;
}

/* The error of a pointer argument the driver does not map (r from
 * cuPointerGetAttribute, not CUDA_SUCCESS). */
static int pointer_error(CUresult r, int index, char *err, int errlen)
{
	if (r == CUDA_ERROR_INVALID_VALUE)
		return seterr(err, errlen,
			      "Pointer argument (at %d) cannot be accessed from the GPU (a CPU tensor or a host buffer?)",
			      index);
	return seterr(err, errlen, "Pointer argument (at %d): cuPointerGetAttribute failed: %s", index, cu_str(r));
}

int jit_cuda_pointer_device(uint64_t ptr, int index, int *device, char *err, int errlen)
{
	*device = -1;
	if (ptr == 0)
		return 0;
	if (driver_ready(err, errlen))
		return -1;
	int ordinal = -1;
	CUresult r = drv.p_cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)ptr);
	if (r != CUDA_SUCCESS)
		return pointer_error(r, index, err, errlen);
	*device = ordinal;
	return 0;
}

int jit_cuda_host_pointer(uint64_t ptr, int index, uint64_t *dptr, char *err, int errlen)
{
	*dptr = ptr;
	if (ptr == 0)
		return 0;
	if (driver_ready(err, errlen))
		return -1;
	CUdeviceptr d = 0;
	CUresult r = drv.p_cuPointerGetAttribute(&d, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, (CUdeviceptr)ptr);
	if (r == CUDA_ERROR_INVALID_CONTEXT) {
		/* the answer is for the current context: with none, device 0's */
		CUcontext ctx, prev;
		if (primary_ctx(0, &ctx, err, errlen) || enter_ctx(ctx, &prev, err, errlen))
			return -1;
		r = drv.p_cuPointerGetAttribute(&d, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, (CUdeviceptr)ptr);
		leave_ctx(ctx, prev);
	}
	if (r != CUDA_SUCCESS)
		return pointer_error(r, index, err, errlen);
	*dptr = (uint64_t)d;
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Modules and launches                                                      */
/* ------------------------------------------------------------------------- */

/* Loads the module into the current context (of device dev). */
static int load_here(const void *image, CUdevice dev, const char *name, int shared, int num_warps,
		     JitCudaKernel *k, char *err, int errlen)
{
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
	/* CTRITON_MAX_CTAS_PER_SM=N (a diagnostic, off by default): the launch
	 * asks for enough dynamic shared memory that at most N blocks of the
	 * kernel fit on one SM, whatever its registers would allow (tutorial
	 * 03's 128x128x32 tiles at 166 registers fit three to an SM, Triton's
	 * at 174 two; bench/results/pending-h200.md) */
	const char *mcs = getenv("CTRITON_MAX_CTAS_PER_SM");
	int cap = mcs ? atoi(mcs) : 0;
	if (cap > 0) {
		int per_sm = 0, reserved = 0;
		if (drv.p_cuDeviceGetAttribute(&per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, dev))
			per_sm = 0; /* unknown: no padding */
		if (drv.p_cuDeviceGetAttribute(&reserved, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, dev))
			reserved = 0;
		/* N + 1 blocks of (pad + reserved) bytes exceed the SM's shared memory */
		int pad = per_sm > 0 ? per_sm / (cap + 1) - reserved + 1 : 0;
		if (pad > shared && pad <= limit)
			shared = pad;
	}
	if (shared > 49152) {
		/* CTRITON_PREFER_SHARED=1: as Triton does, the largest
		 * shared-memory carveout (the SM's L1 mostly given to shared
		 * memory) and every opt-in byte allowed; otherwise the driver
		 * picks the carveout. Opt-in: timed on an H100 it changed
		 * nothing (bench/results/h100-2026-12-06-carveout.md) */
		const char *ps = getenv("CTRITON_PREFER_SHARED");
		bool prefer = ps && ps[0] == '1' && drv.p_cuFuncSetCacheConfig;
		int stat = 0;
		drv.p_cuFuncGetAttribute(&stat, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
		if (prefer)
			drv.p_cuFuncSetCacheConfig(fn, CU_FUNC_CACHE_PREFER_SHARED);
		r = drv.p_cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
					     (prefer ? limit : shared) - stat);
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
	k->device = (int)dev;
	return 0;
}

int jit_cuda_load_on(int device, const void *image, size_t size, bool is_cubin, const char *name, int shared,
		     int num_warps, JitCudaKernel *k, char *err, int errlen)
{
	memset(k, 0, sizeof *k);
	(void)size;
	(void)is_cubin; /* the driver recognises PTX text and cubin images alike */
	CUcontext ctx, prev;
	if (driver_ready(err, errlen) || primary_ctx(device, &ctx, err, errlen))
		return -1;
	CUdevice dev;
	CU_CHECK(drv.p_cuDeviceGet(&dev, device), "cuDeviceGet");
	if (enter_ctx(ctx, &prev, err, errlen))
		return -1;
	int rc = load_here(image, dev, name, shared, num_warps, k, err, errlen);
	leave_ctx(ctx, prev);
	if (rc == 0) {
		k->ctx = ctx;
		k->device = device;
	}
	return rc;
}

int jit_cuda_load(const void *image, size_t size, bool is_cubin, const char *name, int shared, int num_warps,
		  JitCudaKernel *k, char *err, int errlen)
{
	memset(k, 0, sizeof *k);
	if (jit_cuda_init(err, errlen))
		return -1;
	(void)size;
	(void)is_cubin;
	CUdevice dev;
	CU_CHECK(drv.p_cuCtxGetDevice(&dev), "cuCtxGetDevice");
	CUcontext cur;
	CU_CHECK(drv.p_cuCtxGetCurrent(&cur), "cuCtxGetCurrent");
	if (load_here(image, dev, name, shared, num_warps, k, err, errlen))
		return -1;
	k->ctx = cur;
	return 0;
}

void jit_cuda_unload(JitCudaKernel *k)
{
	if (!k)
		return;
	if (k->module && __atomic_load_n(&drv_state, __ATOMIC_ACQUIRE) == 1) {
		CUcontext prev = NULL;
		if (!k->ctx || enter_ctx((CUcontext)k->ctx, &prev, NULL, 0) == 0) {
			drv.p_cuModuleUnload((CUmodule)k->module); /* an error leaves nothing to do */
			if (k->ctx)
				leave_ctx((CUcontext)k->ctx, prev);
		}
	}
	memset(k, 0, sizeof *k);
}

int jit_cuda_launch(const JitCudaKernel *k, const unsigned grid[3], uint64_t stream, void **params, char *err,
		    int errlen)
{
	return jit_cuda_launch_ex(k, grid, stream, params, 0, err, errlen);
}

/* cuLaunchKernelEx with the launch attributes of flags (as Triton's
 * launcher sets them). */
static CUresult launch_with_attrs(const JitCudaKernel *k, const unsigned grid[3], uint64_t stream, void **params,
				  unsigned flags)
{
	CUlaunchAttribute attrs[2];
	unsigned n = 0;
	memset(attrs, 0, sizeof attrs);
	if (flags & JIT_LAUNCH_PDL) {
		attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
		attrs[n++].value.programmaticStreamSerializationAllowed = 1;
	}
	if (flags & JIT_LAUNCH_COOPERATIVE) {
		attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
		attrs[n++].value.cooperative = 1;
	}
	CUlaunchConfig cfg = {
		.gridDimX = grid[0], .gridDimY = grid[1], .gridDimZ = grid[2],
		.blockDimX = 32u * (unsigned)k->num_warps, .blockDimY = 1, .blockDimZ = 1,
		.sharedMemBytes = (unsigned)k->shared, .hStream = (CUstream)(uintptr_t)stream,
		.attrs = attrs, .numAttrs = n,
	};
	return drv.p_cuLaunchKernelEx(&cfg, (CUfunction)k->function, params, NULL);
}

int jit_cuda_launch_ex(const JitCudaKernel *k, const unsigned grid[3], uint64_t stream, void **params,
		       unsigned flags, char *err, int errlen)
{
	if (drv_state != 1)
		return seterr(err, errlen, "CUDA driver not initialised");
	if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
		return 0; /* empty grid: nothing to run */
	if (flags && !drv.p_cuLaunchKernelEx)
		return seterr(err, errlen,
			      "this CUDA driver has no cuLaunchKernelEx (launch_pdl and launch_cooperative_grid need "
			      "CUDA 12 or later)");
	CUcontext ctx = (CUcontext)k->ctx, prev = NULL;
	if (ctx && enter_ctx(ctx, &prev, err, errlen))
		return -1;
	CUresult r = flags ? launch_with_attrs(k, grid, stream, params, flags)
			   : drv.p_cuLaunchKernel((CUfunction)k->function, grid[0], grid[1], grid[2],
						  32u * (unsigned)k->num_warps, 1, 1, (unsigned)k->shared,
						  (CUstream)(uintptr_t)stream, params, NULL);
	if (ctx)
		leave_ctx(ctx, prev);
	if (r != CUDA_SUCCESS)
		return seterr(err, errlen, "%s (device %d) failed: %s", flags ? "cuLaunchKernelEx" : "cuLaunchKernel",
			      k->device, cu_str(r));
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
	if (r != CUDA_SUCCESS)
		return pointer_error(r, index, err, errlen);
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

/* A tiled CUtensorMap (128 bytes at out, 64-byte aligned) for a row-major
 * tensor of `rank` dims (outermost first, as a TensorDescriptor has them;
 * the last stride 1), the box inner x outer elements of the innermost two
 * dims (1 for the others), swizzle 0 / 32 / 64 / 128 bytes, zeros out of
 * bounds (NaN with nan). */
int jit_cuda_tensor_map(void *out, int dtype, int esize, int rank, uint64_t base, const int64_t *shape,
			const int64_t *strides, int box_inner, int box_outer, int swizzle, int nan, char *err, int errlen)
{
	if (drv_state != 1)
		return seterr(err, errlen, "CUDA driver not initialised");
	if (!drv.p_cuTensorMapEncodeTiled)
		return seterr(err, errlen, "this CUDA driver has no cuTensorMapEncodeTiled (a TensorDescriptor "
				       "on sm_90 needs CUDA 12)");
	if (rank < 1 || rank > 5)
		return seterr(err, errlen, "a tensor map has 1 to 5 dims, got %d", rank);
	if (base % 16)
		return seterr(err, errlen, "TensorDescriptor: the base must be 16-byte aligned (address %#llx)",
			      (unsigned long long)base);
	uint64_t dims[5], strd[4];
	unsigned box[5], estr[5];
	for (int i = 0; i < rank; i++) {
		int d = rank - 1 - i; /* innermost first */
		if (shape[d] < 1 || shape[d] > ((int64_t)1 << 32))
			return seterr(err, errlen, "TensorDescriptor: shape[%d] = %lld (a tensor map needs 1 to 2^32)", d,
				      (long long)shape[d]);
		dims[i] = (uint64_t)shape[d];
		box[i] = i == 0 ? (unsigned)box_inner : i == 1 ? (unsigned)box_outer : 1;
		estr[i] = 1;
		if (i > 0) {
			int64_t b = strides[d] * esize;
			if (strides[d] < 1 || b % 16)
				return seterr(err, errlen,
					      "TensorDescriptor: strides[%d] = %lld elements must be a positive multiple "
					      "of 16 bytes",
					      d, (long long)strides[d]);
			strd[i - 1] = (uint64_t)b;
		}
	}
	if (strides[rank - 1] != 1)
		return seterr(err, errlen, "TensorDescriptor: the last stride must be 1, got %lld",
			      (long long)strides[rank - 1]);
	int sw = swizzle == 128 ? 3 : swizzle == 64 ? 2 : swizzle == 32 ? 1 : 0;
	/* interleave none; L2 promotion 128 bytes; OOB fill none (zeros) or NaN */
	CUresult r = drv.p_cuTensorMapEncodeTiled(out, dtype, (unsigned)rank, (void *)(uintptr_t)base, dims, strd, box,
						  estr, 0, sw, 2, nan ? 1 : 0);
	if (r != CUDA_SUCCESS)
		return seterr(err, errlen, "cuTensorMapEncodeTiled failed: %s", cu_str(r));
	return 0;
}
