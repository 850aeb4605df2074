/* backend.h: code generation from ctriton's IR, the one interface of the
 * backend/ folder. The only folder that includes LLVM headers.
 *
 *   nvptx/  TTIR -> (analysis/: layouts) TTGIR -> LLVM IR (per thread) ->
 *           LLVM O3 -> NVPTX -> PTX text. Cubin and launch live in jit/.
 *   cpu/    TTIR -> LLVM IR (per program instance) -> LLVM O3 -> ORC LLJIT
 *           -> host code, run over the grid by a thread pool.
 *
 * Both take a verified module whose kernel is the function marked
 * is_kernel; they may transform the module in place (it belongs to the
 * caller's compilation ctx). Strings in results are malloc'ed and owned by
 * the result (be_result_free).
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
	bool debug;             /* emit device asserts */
	int maxnreg;            /* 0: none */
	bool sanitize;          /* CPU: bounds-check every load, store and atomic */
} BeOptions;

void be_options_default(BeOptions *o);

/* ------------------------------------------------------------------------- */
/* NVPTX (backend/nvptx)                                                     */
/* ------------------------------------------------------------------------- */

typedef struct BeGpuTarget {
	int arch;        /* compute capability * 10 + minor: 80, 90 */
	int ptx_version; /* e.g. 80 for PTX ISA 8.0; 0: default for arch */
	int warp_size;   /* 32 */
} BeGpuTarget;

typedef struct BeGpuResult {
	char *name;        /* entry symbol */
	char *ttgir;       /* IR with layouts (printer text) */
	char *llir;        /* LLVM IR text after O3 */
	char *ptx;         /* PTX text */
	int shared;        /* bytes of dynamic shared memory the kernel needs */
	int num_warps;
	/* Wall milliseconds per stage: analysis -> TTGIR, LLVM IR build (with
	 * libdevice linking), the optimisation pipeline, PTX emission. */
	double ms_ttgir, ms_llir, ms_opt, ms_emit;
} BeGpuResult;

/* Compiles the kernel of m for target. On error returns it (located when the
 * failure belongs to an op) and leaves *out empty. */
IrError *be_nvptx_compile(IrModule *m, const BeOptions *opt, const BeGpuTarget *target,
			  BeGpuResult *out);
void be_gpu_result_free(BeGpuResult *r);
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
