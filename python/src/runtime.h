/* runtime.h: private interface between the files of the launch path of
 * ctriton._C (specialize.c, launch.c, bindings.c).
 *
 *   specialize.c  each argument of a launch classified into its
 *                 specialization (key bytes) and packed as a kernel parameter
 *   launch.c      KernelRuntime (per @jit function: binding, variant cache,
 *                 launch), Launcher (rt[grid]), Binary (one compiled variant)
 *   bindings.c    the compile driver, ptxas, SHA-256 and disk cache of jit/
 *                 as Python functions
 */
#ifndef CTRITON_RUNTIME_H
#define CTRITON_RUNTIME_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jit/jit.h"
#include "py.h"

enum { MAXP = 256 };

/* Process-wide driver state: which backend launches, and how to ask for the
 * current device and stream (set by ctriton.runtime.driver), and the
 * interned attribute names of the launch path (set by py_specialize_init). */
typedef struct PyRtState {
	int backend;         /* JIT_BACKEND_CPU / JIT_BACKEND_CUDA, -1: none yet */
	int exiting;         /* the interpreter began to exit (atexit ran): no
	                      * more driver calls from deallocators */
	PyObject *stream_fn; /* () -> int stream handle, or NULL (default stream) */
	/* launch hooks (knobs.runtime.launch_enter_hook/exit_hook, set through
	 * set_launch_hooks when any is registered): enter(kernel, compiled,
	 * grid, bound args, stream) -> metadata before a launch, exit(metadata)
	 * after it; both NULL when none is */
	PyObject *launch_enter, *launch_exit;
	PyObject *dtype_names; /* dict: dtype object -> canonical name (str) */
	PyObject *s_data_ptr, *s_dtype, *s_is_cuda, *s_cai, *s_aif, *s_compile, *s_binary;
	PyObject *s_cache_key, *s_value, *s_get_device;
} PyRtState;
extern PyRtState py_rt;

/* ---- specialize.c ------------------------------------------------------ */

/* What an argument becomes in the kernel signature. The numbers cross into
 * key bytes; keep them stable. */
typedef enum ArgKind {
	AK_CONSTEXPR = 0, /* dropped from the kernel: None, int 1, constexpr params */
	AK_PTR = 1,
	AK_I32 = 2,
	AK_I64 = 3,
	AK_U64 = 4,
	AK_U1 = 5,
	AK_FP32 = 6,
	AK_FP16 = 7,
	AK_BF16 = 8,
	AK_FP64 = 9,
	AK_I8 = 10,
	AK_I16 = 11,
	AK_U8 = 12,
	AK_U16 = 13,
	AK_U32 = 14,
	AK_TUPLE = 15,
} ArgKind;

/* The signature type string of each ArgKind ("*" for pointers). */
extern const char *const py_ak_sig[];
/* Canonical dtype names; their index is the dtype's code in keys. */
extern const char *const py_dt_names[];

/* A growable byte buffer for keys. */
typedef struct Buf {
	char *p;
	size_t n, cap;
	char small[512];
} Buf;

static inline void buf_init(Buf *b)
{
	b->p = b->small;
	b->n = 0;
	b->cap = sizeof b->small;
}
static inline void buf_put(Buf *b, const void *d, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = (b->n + n) * 2;
		char *p = malloc(cap);
		memcpy(p, b->p, b->n);
		if (b->p != b->small)
			free(b->p);
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}
static inline void buf_byte(Buf *b, int c)
{
	char ch = (char)c;
	buf_put(b, &ch, 1);
}
static inline void buf_free(Buf *b)
{
	if (b->p != b->small)
		free(b->p);
}

/* Packed kernel parameters of one launch, and the device its tensors are
 * on. */
/* A TensorDescriptor argument as packed: what its tensor map is encoded
 * from when the kernel copies through one (launch.c). */
enum { MAXTD = 32, MAXTMAP = JIT_MAX_TMAPS }; /* descriptors recorded per launch; tensor maps per kernel */
typedef struct PackTd {
	int arg, rank;
	uint64_t base;
	int64_t shape[5], strides[5];
} PackTd;

typedef struct Pack {
	int n;
	uint64_t slot[MAXP];
	void *params[MAXP];
	int ntd;
	PackTd td[MAXTD];
	_Alignas(64) unsigned char tmap[MAXTMAP][128]; /* the encoded maps of this launch */
	int on_gpu;   /* check that pointers are device memory, note their device */
	int dev;      /* the device of the pointer arguments seen so far; -1: none */
	int dev_arg;  /* the argument that set dev */
	const struct Param *names; /* the parameters, to name arguments in errors (or NULL) */
} Pack;

static inline void pack_init(Pack *pk, int on_gpu, const struct Param *names)
{
	pk->n = 0;
	pk->ntd = 0;
	pk->on_gpu = on_gpu;
	pk->dev = -1; /* dev_arg is set with dev */
	pk->names = names;
}

/* Per-parameter facts of a @jit function, from its Python signature. */
struct Param {
	PyObject *name;    /* str */
	int is_constexpr;  /* annotated tl.constexpr */
	int specialize;    /* not in do_not_specialize */
	int align;         /* not in do_not_specialize(_on_alignment) */
	int annot;         /* ArgKind fixed by an annotation, or -1 */
	int annot_ptr_dt;  /* for "*fp16"-style annotations: dtype code, else -1 */
	PyObject *dflt;    /* default value or NULL */
};
typedef struct Param Param;

/* Interns the attribute names above and creates the dtype table. */
int py_specialize_init(void);
/* The dtype code of a dtype name ("fp16", "torch.float16", "float16"), or -1. */
int py_dt_code_of_name(const char *s);
/* Parses an annotation or signature type string into an ArgKind; -1 if not a
 * scalar kind ("*fp32" gives AK_PTR). */
int py_kind_of_sig(const char *s);
/* Appends a constexpr value's identity to the key. */
int py_key_constexpr(Buf *key, PyObject *v);
/* Classifies one argument: appends its key bytes, packs its value (pk may be
 * NULL), and optionally appends its (type string, key) to sig/spec lists
 * (the compile path). Follows triton-reference 3.2. On the GPU, a pointer
 * argument's device goes into pk->dev (a torch tensor's get_device(), else
 * the driver's answer for its address); one on another device than those
 * before it is a ValueError naming both. */
int py_classify(PyObject *v, const Param *p, int argi, Buf *key, Pack *pk, PyObject *sigs,
		PyObject *specs);
/* Packs one argument by its compiled signature entry (a type string or a
 * tuple of them). */
int py_pack_by_sig(Pack *pk, PyObject *sig, PyObject *v, int argi);
/* Sanitizer (CPU backend): fills ext (2 words per kernel parameter,
 * backend.h) for argument v of signature entry sig (a type string or a
 * tuple of them), advancing *np: pointer parameters get their tensor's
 * extent, others (0, 0). */
int py_san_fill(PyObject *sig, PyObject *v, uint64_t *ext, int *np);
/* Whether CTRITON_SANITIZE asks for bounds checks (part of the variant key). */
int py_san_env(void);

#endif
