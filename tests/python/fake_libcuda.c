/* fake_libcuda.c: a stand-in for libcuda.so.1 on a machine without a GPU,
 * for the tests and benchmarks of the GPU launch path
 * (CTRITON_LIBCUDA_PATH=<this library>).
 *
 * Devices: $FAKE_CUDA_ARCHS lists one compute capability per device
 * ("90,90" is two sm_90 devices, "90,80" an sm_90 and an sm_80); one
 * sm_90 device by default. Each device has one primary context; the
 * current context is per thread, as in the real driver. Device memory is
 * told apart by address: a pointer p belongs to device p >> 40 when that
 * is a device (so every pointer below 1 << 40, and the fake's own heap,
 * is device 0's); any other address is host memory, pageable unless
 * fake_pin() made a range of it pinned: the GPU reaches a pinned range
 * through the device address fake_pin() named for it (the
 * cuPointerGetAttribute device pointer, given only with a context current).
 *
 * Modules load into the current context (none current: an error) without
 * looking at their image; a function launches only in its module's
 * context, and a module unloads only with that context current, else
 * CUDA_ERROR_INVALID_CONTEXT, counted in fake_stats()->bad_calls.
 * cuLaunchKernel records what it was given: grid, block, shared memory,
 * stream, the device of the current context, the module and the first
 * fake_nparams parameters, read as the 8-byte slots the launch path packs.
 * cuLaunchKernelEx records the same from its CUlaunchConfig, and that it
 * was the call, and its launch attributes (id and first int of each value).
 * cuFuncSetCacheConfig and cuFuncSetAttribute(max dynamic shared memory)
 * record the last values they were given (fake_func_cfg()).
 * fake_launch(), fake_stats() and fake_func_cfg() hand the records to ctypes.
 *
 *     cc -shared -fPIC -O2 -o libfakecuda.so fake_libcuda.c
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;

enum {
	OK = 0,
	ERR_INVALID_VALUE = 1,
	ERR_OUT_OF_MEMORY = 2,
	ERR_INVALID_DEVICE = 101,
	ERR_INVALID_CONTEXT = 201,
	ERR_INVALID_HANDLE = 400,
};

enum { MAXDEV = 8, MAXMOD = 4096 };

typedef struct FakeLaunch {
	uint64_t count; /* launches so far */
	unsigned grid[3], block[3], shared;
	uint64_t stream;
	uint64_t params[32];
	int device; /* of the context current at the launch */
	int module; /* id of the launched function's module (1, 2, ...) */
	int ex;     /* 1: through cuLaunchKernelEx */
	unsigned nattrs;
	int attr_id[4], attr_value[4]; /* its launch attributes */
} FakeLaunch;

/* cuda.h's CUlaunchAttribute and CUlaunchConfig, laid out alike. */
typedef struct FakeLaunchAttr {
	int id;
	char pad[4];
	union {
		char pad[64];
		int i;
		void *p;
	} value;
} FakeLaunchAttr;

typedef struct FakeLaunchConfig {
	unsigned gx, gy, gz, bx, by, bz, shared;
	void *stream;
	FakeLaunchAttr *attrs;
	unsigned nattrs;
} FakeLaunchConfig;

typedef struct FakeStats {
	int ndev;
	int loads[MAXDEV];   /* modules loaded into each device's context */
	int unloads[MAXDEV]; /* ... and unloaded */
	int live[MAXDEV];    /* loaded and not unloaded */
	int bad_calls;       /* calls in the wrong (or no) context */
	int retains[MAXDEV]; /* cuDevicePrimaryCtxRetain calls */
	int launches[MAXDEV];
} FakeStats;

typedef struct FakeFuncCfg {
	int cache_config; /* the last cuFuncSetCacheConfig's, -1 before any */
	int max_dynamic;  /* the last max dynamic shared memory set, -1 before any */
} FakeFuncCfg;

static FakeFuncCfg func_cfg = {-1, -1};

FakeFuncCfg *fake_func_cfg(void) { return &func_cfg; }

typedef struct Ctx {
	int device;
} Ctx;

typedef struct Mod {
	int id;
	Ctx *ctx;
	int loaded;
	int fn; /* its one function: its address is the CUfunction */
} Mod;

static FakeLaunch last;
static FakeStats stats;
static int nparams; /* parameters to record per launch */
static int archs[MAXDEV];
static Ctx ctxs[MAXDEV];
static __thread Ctx *current;
static Mod *mods[MAXMOD];
static int nmods;

FakeLaunch *fake_launch(void);
FakeStats *fake_stats(void);
void fake_set_nparams(int n);
void fake_pin(uint64_t host, uint64_t size, uint64_t dev);

enum { MAXPIN = 8 };
typedef struct Pin {
	uint64_t host, size, dev;
} Pin;
static Pin pins[MAXPIN];
static int npins;

/* Makes host memory [host, host + size) pinned, reached by the GPU at dev. */
void fake_pin(uint64_t host, uint64_t size, uint64_t dev)
{
	if (npins < MAXPIN)
		pins[npins++] = (Pin){host, size, dev};
}

FakeLaunch *fake_launch(void)
{
	return &last;
}

FakeStats *fake_stats(void)
{
	return &stats;
}

void fake_set_nparams(int n)
{
	nparams = n < 0 ? 0 : n > 32 ? 32 : n;
}

/* Reads $FAKE_CUDA_ARCHS once. */
static void setup(void)
{
	if (stats.ndev)
		return;
	const char *e = getenv("FAKE_CUDA_ARCHS");
	if (!e || !*e)
		e = "90";
	while (*e && stats.ndev < MAXDEV) {
		char *end;
		long cc = strtol(e, &end, 10);
		if (end == e)
			break;
		archs[stats.ndev] = (int)cc;
		ctxs[stats.ndev].device = stats.ndev;
		stats.ndev++;
		e = *end == ',' ? end + 1 : end;
	}
	if (!stats.ndev) {
		archs[0] = 90;
		stats.ndev = 1;
	}
}

static unsigned char heap[1 << 20];
static size_t heap_used;

/* The device that holds ptr, or -1 for host memory. */
static int device_of(uint64_t ptr)
{
	setup();
	if (ptr >= (uint64_t)(uintptr_t)heap && ptr < (uint64_t)(uintptr_t)heap + sizeof heap)
		return 0;
	uint64_t d = ptr >> 40;
	return d < (uint64_t)stats.ndev ? (int)d : -1;
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
CUresult cuFuncSetCacheConfig(void *fn, int config);
CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			unsigned bz, unsigned shared, void *stream, void **params, void **extra);
CUresult cuLaunchKernelEx(const FakeLaunchConfig *cfg, void *fn, void **params, void **extra);
CUresult cuPointerGetAttribute(void *data, int attr, uint64_t ptr);
CUresult cuMemAlloc_v2(uint64_t *p, size_t n);
CUresult cuMemFree_v2(uint64_t p);
CUresult cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t n);
CUresult cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t n);

CUresult cuInit(unsigned flags)
{
	(void)flags;
	setup();
	return OK;
}

CUresult cuDriverGetVersion(int *v)
{
	*v = 13000;
	return OK;
}

CUresult cuGetErrorName(CUresult r, const char **s)
{
	*s = r == ERR_INVALID_CONTEXT ? "CUDA_ERROR_INVALID_CONTEXT"
	     : r == ERR_INVALID_HANDLE ? "CUDA_ERROR_INVALID_HANDLE"
	     : r == ERR_INVALID_DEVICE ? "CUDA_ERROR_INVALID_DEVICE"
	     : r == ERR_INVALID_VALUE  ? "CUDA_ERROR_INVALID_VALUE"
					: "CUDA_ERROR_FAKE";
	return OK;
}

CUresult cuGetErrorString(CUresult r, const char **s)
{
	(void)r;
	*s = "fake driver";
	return OK;
}

CUresult cuDeviceGet(int *d, int ordinal)
{
	setup();
	if (ordinal < 0 || ordinal >= stats.ndev)
		return ERR_INVALID_DEVICE;
	*d = ordinal;
	return OK;
}

CUresult cuDeviceGetCount(int *n)
{
	setup();
	*n = stats.ndev;
	return OK;
}

/* CUdevice_attribute values of cuda.h. */
CUresult cuDeviceGetAttribute(int *v, int attr, int dev)
{
	setup();
	if (dev < 0 || dev >= stats.ndev)
		return ERR_INVALID_DEVICE;
	switch (attr) {
	case 1: *v = 1024; break;    /* max threads per block */
	case 8: *v = 49152; break;   /* shared memory per block */
	case 10: *v = 32; break;     /* warp size */
	case 12: *v = 65536; break;  /* registers per block */
	case 16: *v = 132; break;    /* multiprocessors */
	case 39: *v = 2048; break;   /* threads per multiprocessor */
	case 75: *v = archs[dev] / 10; break; /* compute capability */
	case 76: *v = archs[dev] % 10; break;
	case 81: *v = archs[dev] >= 90 ? 233472 : 167936; break; /* shared memory per multiprocessor */
	case 82: *v = 65536; break;  /* registers per multiprocessor */
	case 111: *v = 1024; break;  /* shared memory reserved per block */
	case 97: *v = archs[dev] >= 90 ? 232448 : 166912; break; /* shared memory per block, opt-in */
	default: *v = 1; break;
	}
	return OK;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	setup();
	if (dev < 0 || dev >= stats.ndev)
		return ERR_INVALID_DEVICE;
	stats.retains[dev]++;
	*ctx = &ctxs[dev];
	return OK;
}

CUresult cuCtxGetCurrent(void **ctx)
{
	*ctx = current;
	return OK;
}

CUresult cuCtxSetCurrent(void *ctx)
{
	current = ctx;
	return OK;
}

CUresult cuCtxGetDevice(int *dev)
{
	if (!current)
		return ERR_INVALID_CONTEXT;
	*dev = current->device;
	return OK;
}

CUresult cuCtxSynchronize(void)
{
	return current ? OK : ERR_INVALID_CONTEXT;
}

CUresult cuModuleLoadData(void **mod, const void *image)
{
	(void)image;
	if (!current) {
		stats.bad_calls++;
		return ERR_INVALID_CONTEXT;
	}
	if (nmods >= MAXMOD)
		return ERR_OUT_OF_MEMORY;
	Mod *m = calloc(1, sizeof *m);
	m->id = ++nmods;
	m->ctx = current;
	m->loaded = 1;
	mods[m->id - 1] = m;
	stats.loads[current->device]++;
	stats.live[current->device]++;
	*mod = m;
	return OK;
}

CUresult cuModuleUnload(void *mod)
{
	Mod *m = mod;
	if (!m || !m->loaded)
		return ERR_INVALID_HANDLE;
	if (current != m->ctx) {
		stats.bad_calls++;
		return ERR_INVALID_CONTEXT;
	}
	m->loaded = 0;
	stats.unloads[m->ctx->device]++;
	stats.live[m->ctx->device]--;
	return OK;
}

CUresult cuModuleGetFunction(void **fn, void *mod, const char *name)
{
	Mod *m = mod;
	(void)name;
	if (!m || !m->loaded)
		return ERR_INVALID_HANDLE;
	*fn = &m->fn;
	return OK;
}

/* The module of a CUfunction (the address of its fn field). */
static Mod *mod_of(void *fn)
{
	return fn ? (Mod *)((char *)fn - offsetof(Mod, fn)) : NULL;
}

/* CUfunction_attribute values of cuda.h. */
CUresult cuFuncGetAttribute(int *v, int attr, void *fn)
{
	(void)fn;
	*v = attr == 0 ? 1024 : attr == 4 ? 32 : 0; /* max threads per block, registers */
	return OK;
}

CUresult cuFuncSetAttribute(void *fn, int attr, int v)
{
	(void)fn;
	if (attr == 8) /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
		func_cfg.max_dynamic = v;
	return OK;
}

CUresult cuFuncSetCacheConfig(void *fn, int config)
{
	(void)fn;
	func_cfg.cache_config = config;
	return OK;
}

CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			unsigned bz, unsigned shared, void *stream, void **params, void **extra)
{
	(void)extra;
	Mod *m = mod_of(fn);
	last.ex = 0;
	last.nattrs = 0;
	if (!m || !m->loaded)
		return ERR_INVALID_HANDLE;
	if (current != m->ctx) {
		stats.bad_calls++;
		return ERR_INVALID_CONTEXT;
	}
	last.count++;
	last.grid[0] = gx, last.grid[1] = gy, last.grid[2] = gz;
	last.block[0] = bx, last.block[1] = by, last.block[2] = bz;
	last.shared = shared;
	last.stream = (uint64_t)(uintptr_t)stream;
	last.device = current->device;
	last.module = m->id;
	stats.launches[current->device]++;
	for (int i = 0; i < nparams; i++)
		memcpy(&last.params[i], params[i], 8);
	return OK;
}

CUresult cuLaunchKernelEx(const FakeLaunchConfig *cfg, void *fn, void **params, void **extra)
{
	if (!cfg || (cfg->nattrs && !cfg->attrs))
		return ERR_INVALID_VALUE;
	CUresult r = cuLaunchKernel(fn, cfg->gx, cfg->gy, cfg->gz, cfg->bx, cfg->by, cfg->bz, cfg->shared,
				    cfg->stream, params, extra);
	if (r != OK)
		return r;
	last.ex = 1;
	last.nattrs = cfg->nattrs;
	for (unsigned i = 0; i < cfg->nattrs && i < 4; i++) {
		last.attr_id[i] = cfg->attrs[i].id;
		last.attr_value[i] = cfg->attrs[i].value.i;
	}
	return OK;
}

/* CUpointer_attribute values of cuda.h. */
CUresult cuPointerGetAttribute(void *data, int attr, uint64_t ptr)
{
	int dev = device_of(ptr);
	if (attr == 2) { /* memory type */
		*(unsigned *)data = 2; /* CU_MEMORYTYPE_DEVICE */
		return OK;
	}
	if (attr == 3) { /* device pointer, for the current context */
		if (!current)
			return ERR_INVALID_CONTEXT;
		if (dev >= 0) {
			*(uint64_t *)data = ptr;
			return OK;
		}
		for (int i = 0; i < npins; i++)
			if (ptr >= pins[i].host && ptr - pins[i].host < pins[i].size) {
				*(uint64_t *)data = pins[i].dev + (ptr - pins[i].host);
				return OK;
			}
		return ERR_INVALID_VALUE;
	}
	if (attr == 9) { /* device ordinal */
		if (dev < 0)
			return ERR_INVALID_VALUE;
		*(int *)data = dev;
		return OK;
	}
	return ERR_INVALID_VALUE;
}

CUresult cuMemAlloc_v2(uint64_t *p, size_t n)
{
	if (heap_used + n > sizeof heap)
		return ERR_OUT_OF_MEMORY;
	*p = (uint64_t)(uintptr_t)(heap + heap_used);
	heap_used += (n + 255) & ~(size_t)255;
	return OK;
}

CUresult cuMemFree_v2(uint64_t p)
{
	(void)p;
	return OK;
}

CUresult cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t n)
{
	memcpy((void *)(uintptr_t)dst, src, n);
	return OK;
}

CUresult cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t n)
{
	memcpy(dst, (const void *)(uintptr_t)src, n);
	return OK;
}
