/* cuda.h (jit/): the CUDA driver, loaded with dlopen at first use, and the
 * launcher of compiled GPU kernels. To be folded into jit/jit.h.
 *
 * Every function returns 0 on success, or -1 with a message in
 * err[0..errlen) ("CUDA driver not found: ...", "out of resource: shared
 * memory ...", "Pointer argument (at 2) cannot be accessed from the GPU ...").
 * Thread safe: the driver is loaded and initialised once per process.
 */
#ifndef CTRITON_JIT_CUDA_H
#define CTRITON_JIT_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct JitCudaProps {
	int device;
	int arch;                 /* major * 10 + minor */
	int multiprocessor_count;
	int max_shared_mem;       /* opt-in maximum dynamic shared bytes per block */
	int max_num_regs;         /* registers per block */
	int warp_size;
	int driver_version;       /* e.g. 13000 */
} JitCudaProps;

typedef struct JitCudaKernel {
	void *module;    /* CUmodule */
	void *function;  /* CUfunction */
	int n_regs, n_spills, max_threads;
	int shared;      /* dynamic shared bytes passed at launch */
	int num_warps;
} JitCudaKernel;

/* Loads libcuda ($CTRITON_LIBCUDA_PATH or libcuda.so.1), resolves the CUDA 13
 * versioned entry points, calls cuInit, retains the primary context of the
 * current device (device 0 when the thread has none) and makes it current. */
int jit_cuda_init(char *err, int errlen);
/* The device of the current context. */
int jit_cuda_current_device(int *device, char *err, int errlen);
int jit_cuda_props(int device, JitCudaProps *p, char *err, int errlen);

/* Assembles PTX into a cubin with ptxas ($CTRITON_PTXAS_PATH or the CUDA
 * toolkit's); *cubin is malloc'ed. Returns -1 when ptxas is missing or fails
 * (the caller may then hand the PTX to the driver's JIT). */
int jit_cuda_ptxas(const char *ptx, int arch, void **cubin, size_t *size, char *err, int errlen);

/* Loads a module from PTX text (is_cubin false: the driver JIT-compiles it)
 * or a cubin image, looks up `name`, reads its attributes, and opts into
 * `shared` dynamic shared bytes when above 48 KB (error when above the
 * device limit). */
int jit_cuda_load(const void *image, size_t size, bool is_cubin, const char *name, int shared,
		  int num_warps, JitCudaKernel *k, char *err, int errlen);
void jit_cuda_unload(JitCudaKernel *k);

/* Launches grid[0] x grid[1] x grid[2] CTAs of 32 * num_warps threads with
 * k->shared dynamic shared bytes on stream (0: the default stream); params
 * as in backend.h (params[i] points to the i-th argument). */
int jit_cuda_launch(const JitCudaKernel *k, const unsigned grid[3], uint64_t stream, void **params,
		    char *err, int errlen);

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
