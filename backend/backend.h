/* backend.h: code generation from ctriton's IR, the one interface of the
 * backend/ folder. The only folder that includes LLVM headers.
 *
 *   nvptx/  TTGIR (analysis/ gave it layouts) -> LLVM IR (per thread) ->
 *           LLVM O3 -> NVPTX -> PTX text. Cubin and launch live in jit/.
 *   cpu/    TTIR -> LLVM IR (per program instance) -> LLVM O3 -> ORC LLJIT
 *           -> host code, run over the grid by a thread pool.
 *
 * Both take a verified module whose kernel is the function marked
 * is_kernel; they may transform the module in place (it belongs to the
 * caller's compilation ctx). Which passes run before them, and in which
 * order, is the pass table's business (jit/pipeline.c). Strings in results
 * are malloc'ed and owned by the result (be_cpu_result_free).
 *
 * Kernel parameter ABI (both backends): the kernel's parameters are its
 * IR function parameters in order (constexpr arguments were folded away by
 * the frontend). A launch passes `void **params`, params[i] pointing to the
 * i-th parameter's value: a device/host address (uint64) for pointers, the
 * integer in its IR width, float as f32 (or its IR float type). This is
 * cuLaunchKernel's kernelParams convention, used for the CPU too.
 */
#ifndef CTRITON_BACKEND_H
#define CTRITON_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"

/* Options shared by both backends (a subset of Triton's CUDAOptions). */
typedef struct BeOptions {
	int num_warps;          /* 4; power of two */
	int num_ctas;           /* 1 */
	int num_stages;         /* 3 */
	bool enable_fp_fusion;  /* true: allow a*b+c -> fma */
	bool enable_reflect_ftz; /* NVPTX, true: the approximate ex2 / sqrt / rsqrt flush subnormals (Triton's default) */
	bool debug;             /* emit device asserts */
	int maxnreg;            /* 0: none */
	bool sanitize;          /* CPU: bounds-check every load, store and atomic */
	/* NVPTX: the bitcode libraries linked when the kernel calls into
	 * libdevice (Triton's extern_libs), paths the caller owns for the
	 * compilation. libdevice NULL: be_nvptx_libdevice_path's; the others
	 * are linked after it. The CPU backend has its own math: unused. */
	const char *libdevice;
	const char *const *extern_libs;
	int nextern_libs;
} BeOptions;

void be_options_default(BeOptions *o);

/* ------------------------------------------------------------------------- */
/* NVPTX (backend/nvptx)                                                     */
/* ------------------------------------------------------------------------- */

typedef struct BeGpuTarget {
	int arch;        /* compute capability * 10 + minor: 80, 90 */
	int ptx_version; /* e.g. 80 for PTX ISA 8.0; 0: default for arch */
	int warp_size;   /* 32 */
	int ptx_arch;    /* the PTX target's (the device's); 0: arch */
} BeGpuTarget;

/* The stages of the NVPTX backend, run in this order by the compile pipeline
 * (jit/pipeline.c) on a TTGIR module (analysis/ gave every block value a
 * layout, placed barriers and scratch offsets):
 *   be_nvptx_lower     TTGIR -> LLVM IR of one thread (libdevice linked in);
 *   be_nvptx_optimize  LLVM O3;
 *   be_nvptx_emit      PTX text.
 * The LLVM module, its context and target machine live in a BeNvModule
 * (be_nvptx_module_free). Errors come back located at the failing op when
 * one is to blame, allocated in the module's ctx. */
typedef struct BeNvModule BeNvModule;

/* Whether opt suits the NVPTX backend (num_warps a power of two in 1..32)
 * and m has a kernel. */
IrError *be_nvptx_check_options(IrModule *m, const BeOptions *opt);
/* The opt-in maximum of dynamic shared bytes per block on arch. */
int64_t be_nvptx_shared_limit(int arch);
/* An "out of resource: shared memory" error when shared bytes exceed the
 * limit of arch, else NULL. */
IrError *be_nvptx_check_shared(IrModule *m, int arch, int64_t shared);
/* Lowers the kernel of the TTGIR module m; *out is NULL on error. */
IrError *be_nvptx_lower(IrModule *m, const BeOptions *opt, const BeGpuTarget *target, BeNvModule **out);
IrError *be_nvptx_optimize(BeNvModule *nm);
/* The module's LLVM IR text (malloc'ed). */
char *be_nvptx_llir(BeNvModule *nm);
/* The module's PTX text in *ptx (malloc'ed). */
IrError *be_nvptx_emit(BeNvModule *nm, char **ptx);
void be_nvptx_module_free(BeNvModule *nm);
/* Finds libdevice.10.bc, the first readable of: $CTRITON_LIBDEVICE_PATH,
 * $TRITON_LIBDEVICE_PATH, nvvm/libdevice/ under $CUDA_HOME, $CUDA_PATH and
 * /usr/local/cuda, then lib/ beside the shared object that holds this code
 * (the copy a ctriton wheel carries). 1 with its path in buf, else 0. */
int be_nvptx_libdevice_path(char *buf, size_t n);
/* The version of the LLVM the backends run on (linked, not built against). */
void be_llvm_version(unsigned *major, unsigned *minor, unsigned *patch);

/* ------------------------------------------------------------------------- */
/* CPU (backend/cpu)                                                         */
/* ------------------------------------------------------------------------- */

typedef struct BeCpuKernel BeCpuKernel; /* jitted code; outlives the IR ctx */

/* A reduction along a contiguous axis runs as this many lanes (vector
 * partial results) combined at the end; the reduce-lanes pass carries as
 * many across a loop. */
enum { BE_CPU_REDUCE_LANES = 16 };

typedef struct BeCpuResult {
	char *name;
	char *llir; /* LLVM IR text after O3 */
	char *asm_; /* host assembly text */
	BeCpuKernel *kernel;
} BeCpuResult;

/* Compiles the kernel of m to host code through ORC LLJIT. */
IrError *be_cpu_compile(IrModule *m, const BeOptions *opt, BeCpuResult *out);
void be_cpu_result_free(BeCpuResult *r); /* frees strings and the kernel */

/* Whether k was compiled with BeOptions.sanitize. Such a kernel takes one
 * more entry in params: params[nparams] is a `const uint64_t *` to 2 words
 * per parameter, the byte range [lo, hi) that parameter's pointer may access
 * (the extent of the tensor it points into; 0, UINT64_MAX: unchecked; any
 * value for non-pointer parameters). The first access outside its range
 * stops the launch, before the access, with a message naming the kernel's
 * source location, the argument, the program id and the element range. */
bool be_cpu_kernel_sanitized(const BeCpuKernel *k);

/* Runs the kernel over grid[0] x grid[1] x grid[2] program instances on up
 * to nthreads threads (0: one per core). params as described above. Returns
 * 0, or -1 with a message in errbuf (a device assert that failed, an
 * out-of-bounds access of a sanitized kernel). */
int be_cpu_launch(BeCpuKernel *k, const int grid[3], void **params, int nthreads, char *errbuf,
		  int errlen);

#endif
