/* jit.h: the runtime half of ctriton in C, the one interface of jit/: the
 * compile driver, SHA-256, the on-disk cache, and the CUDA driver (loaded
 * with dlopen at first use) with the GPU launcher. The Python extension's
 * launch path and bindings (python/src/) call these; nothing here knows
 * about Python.
 *
 * Sections follow the source files: sha256.c, cache.c, pipeline.c,
 * compile.c, cuda.c.
 */
#ifndef CTRITON_JIT_H
#define CTRITON_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* ------------------------------------------------------------------------- */
/* SHA-256 (sha256.c)                                                        */
/* ------------------------------------------------------------------------- */

typedef struct JitSha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t nbuf;
} JitSha256;

void jit_sha256_init(JitSha256 *s);
void jit_sha256_update(JitSha256 *s, const void *data, size_t n);
void jit_sha256_final(JitSha256 *s, uint8_t out[32]);
/* Lower-case hex digest of data into out (65 bytes with the NUL). */
void jit_sha256_hex(const void *data, size_t n, char out[65]);

/* ------------------------------------------------------------------------- */
/* On-disk cache (cache.c)                                                   */
/* ------------------------------------------------------------------------- */

/* An entry is one file <root>/<key>: a header listing every blob with its
 * length and a 64-bit check, then the blobs. Entries are written under a
 * temporary name and renamed into place, so readers see a whole entry or
 * none, and concurrent writers of the same key both succeed. */

typedef struct JitBlob {
	char name[32]; /* "ttir", "ptx", "cubin", "meta", ... */
	void *data;    /* malloc'ed, NUL-terminated one past len (NULL: not read) */
	size_t len;
} JitBlob;

enum {
	JIT_CACHE_HIT = 0,
	JIT_CACHE_MISS = -1,    /* no entry */
	JIT_CACHE_CORRUPT = -2, /* an entry whose files fail their checksums */
};

/* The cache root: $CTRITON_CACHE_DIR, else $HOME/.cache/ctriton (malloc'ed). */
char *jit_cache_root(void);
/* Reads entry key under root. On a hit *blobs (malloc'ed, free with
 * jit_blobs_free) and *n are set to every blob of the entry, in file order:
 * those named in want[0..nwant) (all when want is NULL) read and checked,
 * the others with data NULL and their length. The header and the file's
 * length are always checked. A corrupt entry is removed. */
int jit_cache_get(const char *root, const char *key, const char *const *want, int nwant,
		  JitBlob **blobs, int *n);
/* Writes an entry; 0 on success, -1 with errbuf set. An existing entry of
 * the same key is kept (same key, same contents). */
int jit_cache_put(const char *root, const char *key, const JitBlob *blobs, int n, char *errbuf,
		  int errlen);
void jit_blobs_free(JitBlob *blobs, int n);

/* jit_cache_get in steps, for a reader that puts the blobs in memory of its
 * own (the Python bindings: into bytes objects, one copy): open reads and
 * checks the header (a corrupt entry is removed, closed), read copies blob
 * i into dst (blobs[i].len bytes) and checks it (-1: corrupt), close closes
 * and, when told the entry is corrupt, removes it. */
typedef struct JitEntry {
	int fd, n;
	JitBlob blobs[64]; /* names and lengths; data NULL */
	size_t offs[64];
	char sums[64][17];
	char path[4200];
	unsigned long long ino, dev;
	size_t cn;         /* bytes of the entry in chunk */
	char chunk[16384]; /* the entry's first bytes */
} JitEntry;
int jit_cache_open(const char *root, const char *key, JitEntry *e);
int jit_cache_read(JitEntry *e, int i, void *dst);
void jit_cache_close(JitEntry *e, int corrupt);
/* A key naming data by its contents (a non-cryptographic 128-bit hash and
 * the length; a valid cache key), at memory speed: the source index of the
 * Python package keys a source file's functions by it. */
#define JIT_CONTENT_KEY_SIZE 52
void jit_content_key(const void *data, size_t n, char out[JIT_CONTENT_KEY_SIZE]);

/* ------------------------------------------------------------------------- */
/* The pass table and its driver (pipeline.c)                                */
/* ------------------------------------------------------------------------- */

typedef enum JitBackend {
	JIT_BACKEND_CPU = 0,
	JIT_BACKEND_CUDA = 1,
} JitBackend;

typedef struct JitTarget {
	JitBackend backend;
	int arch;      /* cuda: 80, 90 (the code's: passes, layouts, instructions); cpu: 0 */
	int warp_size; /* cuda: 32; cpu: 1 */
	int ptx_arch;  /* cuda: the device's, for the PTX target and ptxas (an arch=
			* option below it: sm_80 code that runs on sm_90); 0: arch */
} JitTarget;

/* Stages timed by the driver (wall milliseconds in JitKernel.ms); each pass
 * names the one its time goes to. */
enum {
	JIT_T_PARSE,  /* TTIR text -> module */
	JIT_T_VERIFY, /* verifier */
	JIT_T_TTGIR,  /* cuda: analysis (layouts, scratch, barriers) + TTGIR text */
	JIT_T_LLIR,   /* cuda: LLVM IR build + libdevice linking */
	JIT_T_OPT,    /* cuda: LLVM optimisation pipeline */
	JIT_T_EMIT,   /* cuda: LLVM IR text + PTX emission */
	JIT_T_PTXAS,  /* cuda: ptxas (PTX -> cubin) */
	JIT_T_CPU,    /* cpu: the whole backend (LLVM IR, O3, ORC) */
	JIT_T_TTIR,   /* the TTIR clean-ups (CSE, DCE) + TTIR text */
	JIT_NT,
};
/* "parse", "verify", ... by index. */
extern const char *const jit_stage_names[JIT_NT];
/* A monotonic clock in milliseconds. */
double jit_now_ms(void);

/* The form a compilation holds, in pipeline order. */
typedef enum JitStage {
	JIT_S_TTIR,  /* IR without layouts */
	JIT_S_TTGIR, /* IR with a layout on every block value */
	JIT_S_LLIR,  /* cuda: an LLVM module */
	JIT_S_PTX,   /* cuda: PTX text */
	JIT_S_CUBIN, /* cuda: a cubin */
	JIT_S_HOST,  /* cpu: jitted host code */
} JitStage;

/* Facts about a compilation between passes. A pass requires some, provides
 * some and breaks some; it keeps every fact it does not break. */
enum {
	JIT_F_VERIFIED = 1 << 0, /* the module verifies, has a kernel, the options suit the target */
	JIT_F_TTIR = 1 << 1,     /* no block type carries a layout */
	JIT_F_AXIS = 1 << 2,     /* axis info holds for the values as they are */
	JIT_F_LAYOUTS = 1 << 3,  /* every block type carries a layout */
	JIT_F_BARRIERS = 1 << 4, /* a barrier before every scratch write that may race a read */
	JIT_F_SHARED = 1 << 5,   /* scratch_offset on every scratch user, total known */
	JIT_F_LLVM = 1 << 6,     /* cuda: an LLVM module of the kernel */
	JIT_F_LLVM_OPT = 1 << 7, /* cuda: ... optimised */
	JIT_F_PTX = 1 << 8,      /* cuda: PTX text */
	JIT_F_CUBIN = 1 << 9,    /* cuda: a cubin (when ptxas is there) */
	JIT_F_HOST = 1 << 10,    /* cpu: jitted host code */
	JIT_NF = 11,
};
/* "verified", "ttir", ... by bit index. */
extern const char *const jit_fact_names[JIT_NF];

enum {
	JIT_ON_CPU = 1,
	JIT_ON_CUDA = 2,
};

typedef struct JitPipe JitPipe;

/* One row of the pass table. */
typedef struct JitPass {
	const char *name;
	JitStage stage;   /* the form it works on and leaves */
	unsigned targets; /* JIT_ON_* */
	bool pipeline;    /* run by jit_compile; else only when asked for by name */
	bool analysis;    /* changes nothing; run on demand for a pass that requires what it provides */
	unsigned requires, provides, breaks; /* JIT_F_* */
	int timer;                           /* JIT_T_* */
	IrError *(*run)(JitPipe *p);
	const char *what; /* one line */
} JitPass;

/* The pass table, in pipeline order (see pipeline.c for the rows). */
extern const JitPass jit_passes[];
extern const int jit_npasses;
/* The row of pass name, or NULL. */
const JitPass *jit_pass_find(const char *name);

/* A text kept after a pass (see jit_pipe_dump_after). */
typedef struct JitDump {
	const char *pass; /* a jit_passes name */
	char *text;       /* malloc'ed */
} JitDump;

enum { JIT_MAX_RUNS = 64 };

/* What a compilation produced; every pointer malloc'ed and owned here. */
enum { JIT_MAX_TMAPS = 8 }; /* tensor maps a kernel takes (the launcher's table) */

typedef struct JitKernel {
	char *name;        /* the kernel's symbol */
	char *ttir;        /* TTIR after the TTIR passes, printer text */
	char *ttgir;       /* TTGIR: the IR after the passes before code generation */
	char *ttir_mlir;   /* the same two in Triton's MLIR spelling (ir_print_mlir) */
	char *ttgir_mlir;
	char *llir;        /* LLVM IR */
	char *ptx;         /* cuda */
	char *asm_;        /* cpu: host assembly */
	void *cubin;       /* cuda, when ptxas was found */
	size_t cubin_len;
	char *sig;         /* the kernel's parameter types, ','-separated ("*fp32,i32") */
	/* cuda: the tensor-map parameters (after all others), each (arg,
	 * box_inner, box_outer, swizzle_bytes, dtype, nan, used) and, for a
	 * descriptor made in the kernel from parameters (arg -1), where its
	 * fields come from: (base_param, k0, v0, k1, v1, ks, vs) (k: 0 the
	 * constant v, 1 / 2 / 3 the i32 / 64-bit / u32 parameter v, 4 the
	 * product of up to three factors, at least one a parameter, 20 bits of
	 * v each: bit 18 set, kind in 16-17 (1-3: a parameter, its index in
	 * bits 0-15; 0: a constant, its value in bits 0-15, or with bit 19
	 * set the exponent of a power of two); dims outermost first, ks/vs
	 * the outer stride), zeros otherwise */
	int ntma;
	int64_t tma[JIT_MAX_TMAPS][14];
	int shared;        /* bytes of dynamic shared memory */
	int global_scratch;       /* cuda: bytes of global scratch per program (0: none) */
	int global_scratch_align; /* and their alignment */
	int num_warps;
	int n_regs;        /* from ptxas -v; -1 when unknown */
	int n_spills;
	char wgmma_advisory[8]; /* ptxas's code ("C7514") when it serialized
				 * the warpgroup MMAs or injected a wait or a
				 * fence into them; "" when it did not */
	BeCpuKernel *cpu;  /* cpu: the jitted code */
	double ms[JIT_NT]; /* per-stage wall time; 0 for stages not run */
	const char *passes[JIT_MAX_RUNS]; /* the passes run, in order (jit_passes names) */
	int npasses;
	JitDump *dumps; /* the texts after the passes asked for, in run order */
	int ndumps;
} JitKernel;

/* A compilation of the kernel of m (the caller keeps m and its ctx; the
 * driver records stage texts, times and the passes run into out, which it
 * clears first). Facts at the start: JIT_F_TTIR when no block type carries a
 * layout, JIT_F_LAYOUTS when every one does. */
JitPipe *jit_pipe_new(IrModule *m, const BeOptions *opt, const JitTarget *target, JitKernel *out);
/* Which passes' results to keep in out->dumps: NULL or "" none, "all", or a
 * comma-separated list of pass names. Returns a malloc'ed message naming an
 * unknown pass, else NULL. */
char *jit_pipe_dump_after(JitPipe *p, const char *spec);
/* Runs pass name, after the analyses that provide facts it requires; a
 * missing fact no analysis provides is an error naming the passes that do. */
IrError *jit_pipe_run(JitPipe *p, const char *name);

/* Which part of the pipeline jit_pipe_run_pipeline / jit_compile runs. */
enum {
	JIT_STOP_TTIR = 1,  /* the TTIR passes only (compile-only without a backend) */
	JIT_STOP_TTGIR = 2, /* through the GPU passes (cuda) */
	JIT_NO_PTXAS = 4,   /* cuda: leave PTX -> cubin to the caller */
};
/* Runs the table's pipeline passes for the target, in table order. */
IrError *jit_pipe_run_pipeline(JitPipe *p, int flags);
/* The compilation's current form as text (malloc'ed): IR (after axis-info
 * with one comment per value giving its axis info, after allocate-shared
 * with the total), LLVM IR, PTX, or a line describing the cubin. */
char *jit_pipe_text(JitPipe *p);
/* Whether the verifier runs after every pass that changes the IR (on by
 * default: a pass that leaves invalid IR is an internal error). */
void jit_pipe_verify_each(JitPipe *p, bool on);
unsigned jit_pipe_facts(const JitPipe *p);
/* Records the text of the current stage into the JitKernel and frees the
 * driver's state (an LLVM module not yet emitted is dropped). */
void jit_pipe_free(JitPipe *p);

/* ------------------------------------------------------------------------- */
/* Compile driver (compile.c)                                                */
/* ------------------------------------------------------------------------- */

/* Compiles TTIR text for target: parse, then the pass table's pipeline
 * (jit_pipe_run_pipeline with flags); dump_after as in jit_pipe_dump_after.
 * Returns NULL, or a malloc'ed "file:line:col: message" (out then holds
 * whatever stages succeeded). */
char *jit_compile(const char *ttir, const char *filename, const BeOptions *opt, const JitTarget *target, int flags,
		  const char *dump_after, JitKernel *out);
/* The same for a module already built (the caller keeps m and its ctx). */
char *jit_compile_module(IrModule *m, const BeOptions *opt, const JitTarget *target, int flags, const char *dump_after,
			 JitKernel *out);
/* Finds ptxas, the first executable of: $CTRITON_PTXAS_PATH,
 * $TRITON_PTXAS_PATH, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin,
 * the package copy set by jit_set_pkg_ptxas, PATH. 1 with its path in buf,
 * else 0. */
int jit_find_ptxas(char *buf, size_t n);
/* Sets (path) or clears (NULL) the ptxas that a Python package ships
 * (nvidia-cuda-nvcc); the string is copied. */
void jit_set_pkg_ptxas(const char *path);
/* Assembles PTX into a cubin with the ptxas jit_find_ptxas finds; 0 on
 * success, 1 when ptxas is absent or does not know the arch (the PTX goes
 * to the driver), -1 on an error (message in errbuf).
 * Fills k->cubin, n_regs, n_spills. */
int jit_ptxas(JitKernel *k, int arch, char *errbuf, int errlen);
/* Sets k->n_regs, n_spills and wgmma_advisory from ptxas -v output. */
void jit_parse_ptxas_log(const char *log, JitKernel *k);
void jit_kernel_free(JitKernel *k);

/* ------------------------------------------------------------------------- */
/* CUDA driver and launcher (cuda.c)                                         */
/*                                                                           */
/* Every function returns 0 on success, or -1 with a message in              */
/* err[0..errlen) ("CUDA driver not found: ...", "out of resource: shared    */
/* memory ...", "Pointer argument (at 2) cannot be accessed from the GPU").  */
/* Thread safe: the driver is loaded and initialised once per process.       */
/* ------------------------------------------------------------------------- */

typedef struct JitCudaProps {
	int device;
	int arch;                 /* major * 10 + minor */
	int multiprocessor_count;
	int max_shared_mem;       /* opt-in maximum dynamic shared bytes per block */
	int max_num_regs;         /* registers per block */
	int warp_size;
	int driver_version;       /* e.g. 13000 */
} JitCudaProps;

/* The most devices a process uses (ordinals above are refused). */
#define JIT_CUDA_MAXDEV 64

typedef struct JitCudaKernel {
	void *module;    /* CUmodule */
	void *function;  /* CUfunction */
	void *ctx;       /* CUcontext the module was loaded into */
	int device;      /* its device ordinal */
	int n_regs, n_spills, max_threads;
	int shared;      /* dynamic shared bytes passed at launch */
	int num_warps;
} JitCudaKernel;

/* Loads libcuda ($CTRITON_LIBCUDA_PATH or libcuda.so.1), resolves the CUDA 13
 * versioned entry points, calls cuInit, retains the primary context of the
 * current device (device 0 when the thread has none) and makes it current. */
int jit_cuda_init(char *err, int errlen);
/* Loads the driver and calls cuInit (no context is made): the number of
 * devices in *count, and each one's attributes by CUdevice_attribute
 * number. */
int jit_cuda_probe(int *count, char *err, int errlen);
int jit_cuda_attribute(int device, int attr, int *value, char *err, int errlen);
/* The device of the current context. */
int jit_cuda_current_device(int *device, char *err, int errlen);
int jit_cuda_props(int device, JitCudaProps *p, char *err, int errlen);
/* The device's name (cuDeviceGetName, at most len bytes with the NUL;
 * "CUDA device N" where the driver lacks it) and
 * the driver's version (cuDriverGetVersion, e.g. 13000); makes no
 * context. -1 with err when the driver or the device is not usable. */
int jit_cuda_device_name(int device, char *name, int len, int *driver_version, char *err, int errlen);

/* Devices, none of which makes a context current on the calling thread:
 * the number of devices (at most JIT_CUDA_MAXDEV; -1 without a driver),
 * asked once; a device's compute capability (major * 10 + minor; -1 when
 * there is no such device), asked once per device; the device of this
 * thread's current context (-1 when it has none); the device that holds
 * ptr (cuPointerGetAttribute; -1 for a null pointer; an error naming
 * argument index for host memory). */
int jit_cuda_device_count(void);
int jit_cuda_arch(int device);
int jit_cuda_context_device(int *device);
int jit_cuda_pointer_device(uint64_t ptr, int index, int *device, char *err, int errlen);
/* The address through which kernels reach host memory at ptr (pinned,
 * page-locked memory: cuPointerGetAttribute's device pointer, asked in the
 * current context, else in device 0's primary context) in *dptr; ptr itself
 * for 0. Memory the GPU cannot reach (pageable host memory) is an error
 * naming argument index that says it "cannot be accessed". */
int jit_cuda_host_pointer(uint64_t ptr, int index, uint64_t *dptr, char *err, int errlen);
/* Makes device's primary context current on the calling thread (what
 * cudaSetDevice does). */
int jit_cuda_set_device(int device, char *err, int errlen);

/* Loads a module from PTX text (is_cubin false: the driver JIT-compiles it)
 * or a cubin image into the primary context of device (made current for
 * the load, then the thread's previous context is put back), looks up
 * `name`, reads its attributes, and opts into `shared` dynamic shared bytes
 * when above 48 KB (error when above the device limit). The kernel records
 * its context and device. jit_cuda_load does the same in the calling
 * thread's current context (made by jit_cuda_init when there is none). */
int jit_cuda_load_on(int device, const void *image, size_t size, bool is_cubin, const char *name,
		     int shared, int num_warps, JitCudaKernel *k, char *err, int errlen);
int jit_cuda_load(const void *image, size_t size, bool is_cubin, const char *name, int shared,
		  int num_warps, JitCudaKernel *k, char *err, int errlen);
/* Unloads k's module in its context (made current for the call, then the
 * previous one put back); driver errors are ignored. Call it with the
 * driver alive: not from a forked child, not after interpreter exit began. */
void jit_cuda_unload(JitCudaKernel *k);

/* Launches grid[0] x grid[1] x grid[2] CTAs of 32 * num_warps threads with
 * k->shared dynamic shared bytes on stream (0: the default stream, a stream
 * of k's device otherwise) in k's context, made current for the launch and
 * then the thread's previous context put back; params as in backend.h
 * (params[i] points to the i-th argument). */
int jit_cuda_launch(const JitCudaKernel *k, const unsigned grid[3], uint64_t stream, void **params,
		    char *err, int errlen);
/* Launch attributes of jit_cuda_launch_ex (Triton's launch options). */
enum {
	JIT_LAUNCH_PDL = 1 << 0,	 /* launch_pdl: programmatic stream serialization */
	JIT_LAUNCH_COOPERATIVE = 1 << 1, /* launch_cooperative_grid */
};
/* jit_cuda_launch with JIT_LAUNCH_* flags: none is cuLaunchKernel; any
 * goes through cuLaunchKernelEx with the matching launch attributes (an
 * error when the driver has no cuLaunchKernelEx). */
/* Encodes a tiled CUtensorMap into out[128] (64-byte aligned); 0, or -1 +
 * err. dtype: a CUtensorMapDataType; shape and strides (in elements)
 * outermost first. */
int jit_cuda_tensor_map(void *out, int dtype, int esize, int rank, uint64_t base, const int64_t *shape,
			const int64_t *strides, int box_inner, int box_outer, int swizzle, int nan, char *err, int errlen);
int jit_cuda_launch_ex(const JitCudaKernel *k, const unsigned grid[3], uint64_t stream, void **params,
		       unsigned flags, char *err, int errlen);

/* Checks that ptr is accessible from the device (a host pointer passed to a
 * GPU kernel is an error naming argument index). 0 (null) passes. */
int jit_cuda_check_pointer(uint64_t ptr, int index, char *err, int errlen);

/* Device memory helpers (tests and tools). */
int jit_cuda_malloc(uint64_t *dptr, size_t bytes, char *err, int errlen);
int jit_cuda_free(uint64_t dptr);
int jit_cuda_memcpy_htod(uint64_t dst, const void *src, size_t bytes, char *err, int errlen);
int jit_cuda_memcpy_dtoh(void *dst, uint64_t src, size_t bytes, char *err, int errlen);
int jit_cuda_synchronize(char *err, int errlen);

#endif
