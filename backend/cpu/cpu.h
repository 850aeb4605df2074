/* cpu.h: internals of the CPU backend, shared by its source files.
 *
 * The lowering (lower.c, elem.c, shape.c, mem.c) turns each IR function into
 * one LLVM function that runs one program instance. A block value lives in a
 * per-thread scratch buffer of numel elements (row-major) and every block op
 * is a loop over it; a block whose elements are all equal is kept as one
 * scalar ("splat") until something needs memory. Scalars are plain SSA values.
 * jit.c runs O3 and hands the module to ORC LLJIT; launch.c runs the grid on
 * a thread pool.
 */
#ifndef CTRITON_BACKEND_CPU_H
#define CTRITON_BACKEND_CPU_H

#include <llvm-c/Core.h>
#include <setjmp.h>
#include <stdatomic.h>

#include "backend/backend.h"

/* ------------------------------------------------------------------------- */
/* Values (lower.c)                                                          */
/* ------------------------------------------------------------------------- */

typedef enum CgKind {
	CV_NONE = 0,
	CV_SCALAR, /* v: scalar SSA value of a scalar IR type */
	CV_SPLAT,  /* v: scalar SSA value; the block has it everywhere */
	CV_BUF,    /* v: pointer to numel elements in scratch (or a caller's) */
	CV_AFF,    /* v: element at flat index i is v + i (ints) or &v[i] (ptrs) */
	CV_LAZY,   /* op: an elementwise op (or contiguous load) not yet computed;
		    * its one user evaluates it element by element in its own loop */
} CgKind;

typedef struct CgVal {
	CgKind kind;
	LLVMValueRef v;
	IrOp *op; /* CV_LAZY */
} CgVal;

typedef struct CgFunc {
	IrFunc *f;
	LLVMValueRef fn;
	LLVMTypeRef fnty;
	int64_t own;   /* scratch bytes of its own buffers */
	int64_t total; /* own + the most any callee needs */
	int ncallees;
	int callees[16];
} CgFunc;

typedef struct Cg {
	IrCtx *ictx;
	IrModule *m;
	BeOptions opt;
	IrError *err;

	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;  /* code */
	LLVMBuilderRef ab; /* allocas and buffer addresses, in the entry block */

	/* types */
	LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_f16, t_f32, t_f64, t_ptr;

	/* the function being lowered */
	CgFunc *cur;
	LLVMValueRef fn;
	LLVMValueRef pid[3], nprog[3], scratch, wctx;
	LLVMValueRef *outs; /* result pointers of a callee */
	int64_t ssize;      /* bump pointer in scratch */
	LLVMValueRef *patch; /* call instructions whose scratch arg is patched */
	int npatch, cappatch;

	CgVal *vals; /* indexed by IrValue.id */
	int nvals;
	int *nuses;         /* uses of each value (by id) */
	IrBlock **useblk;   /* block of its (last) use */
	IrOp **useop;       /* its (last) user */
	bool *opdone;       /* by IrOp.id: lowered */
	/* Loads left lazy (contiguous, one use): computed by their user unless
	 * an op that may write memory comes first (cg_flush_loads). */
	IrValue *pend[32];
	int npend;
	const IrValue *mask_on; /* a mask known to be all on where code is emitted */
	CgFunc *funcs;
	int nfuncs;

	LLVMValueRef f8tab[2]; /* fp8 -> f32 tables (e4m3, e5m2) */
	LLVMValueRef san_ext;  /* sanitize: the extents table (kernel function) */
} Cg;

/* Records the first error, located at op (may be NULL). */
void cg_fail(Cg *cg, const IrOp *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

LLVMTypeRef cg_sty(Cg *cg, const IrType *t); /* storage type of a scalar IR type */
int cg_esize(const IrType *t);                /* bytes of one element */
bool cg_soft_float(const IrType *t);          /* bf16 / fp8: computed in f32 */

/* The value of v; a lazy value is computed into a buffer first (at the
 * builder's position, once: the buffer replaces it). */
CgVal cg_get(Cg *cg, const IrValue *v);
/* The value of v, possibly CV_LAZY: for users that read it only through
 * cg_elem, once per element. */
CgVal cg_get_lazy(Cg *cg, const IrValue *v);
void cg_set(Cg *cg, const IrValue *v, CgVal cv);
/* Whether op's result may stay lazy: one use, in op's own block. */
bool cg_may_defer(Cg *cg, const IrOp *op);
static inline CgVal cg_scalar(LLVMValueRef v) { return (CgVal){CV_SCALAR, v, NULL}; }
static inline CgVal cg_splat(LLVMValueRef v) { return (CgVal){CV_SPLAT, v, NULL}; }
static inline CgVal cg_bufv(LLVMValueRef v) { return (CgVal){CV_BUF, v, NULL}; }
static inline CgVal cg_aff(LLVMValueRef v) { return (CgVal){CV_AFF, v, NULL}; }
static inline CgVal cg_lazy(IrOp *op) { return (CgVal){CV_LAZY, NULL, op}; }
/* Whether lazy value cv reads buffer buf. */
bool cg_lazy_reads(Cg *cg, CgVal cv, LLVMValueRef buf);
/* Whether lazy value cv reads the (lazy) load v. */
bool cg_lazy_uses(Cg *cg, CgVal cv, const IrValue *v);
/* Whether lazy load v is still to be computed by a user not yet lowered. */
bool cg_load_pending(Cg *cg, const IrValue *v);
/* Computes the pending lazy loads of block blk into buffers (except those
 * that keep(user, v) says to keep), and forgets those of other blocks. */
void cg_flush_loads(Cg *cg, IrBlock *blk, bool (*keep)(void *, const IrValue *), void *user);
/* Same value in every element: a scalar or a splat. */
static inline bool cg_uniform(CgVal v) { return v.kind == CV_SCALAR || v.kind == CV_SPLAT; }

/* A fresh scratch buffer for a block of type t. */
LLVMValueRef cg_newbuf(Cg *cg, const IrType *t);
/* Element i (i64) of a block value (or the value itself for scalars/splats). */
LLVMValueRef cg_elem(Cg *cg, CgVal cv, const IrType *t, LLVMValueRef i);
void cg_store_elem(Cg *cg, LLVMValueRef buf, const IrType *t, LLVMValueRef i, LLVMValueRef x);
/* The value in memory: a CV_BUF (fills a buffer for splats). */
LLVMValueRef cg_materialize(Cg *cg, CgVal cv, const IrType *t);
/* Copies block value cv into buffer dst. */
void cg_copy_to(Cg *cg, LLVMValueRef dst, CgVal cv, const IrType *t);
LLVMValueRef cg_alloca(Cg *cg, LLVMTypeRef t);

LLVMValueRef cg_i64(Cg *cg, int64_t v);
LLVMValueRef cg_i32(Cg *cg, int64_t v);

/* Counted loops: for (iv = 0; iv < n; iv++); the builder sits in the body. */
typedef struct CgLoop {
	LLVMBasicBlockRef head, body, exit, pre;
	LLVMValueRef iv;
} CgLoop;
LLVMValueRef cg_loop_begin(Cg *cg, CgLoop *l, LLVMValueRef n);
void cg_loop_end(Cg *cg, CgLoop *l);

/* Intrinsic call on overload types tys. */
LLVMValueRef cg_intrinsic(Cg *cg, const char *name, LLVMTypeRef *tys, int ntys, LLVMValueRef *args,
			  int nargs);
/* Call of an external (process / helper) function. */
LLVMValueRef cg_call_ext(Cg *cg, const char *name, LLVMTypeRef ret, LLVMTypeRef *ptys, int nparams,
			 LLVMValueRef *args, int nargs, bool vararg);

/* Sets the cached LLVM types of cg. */
void cg_init_types(Cg *cg);
/* Lowers every function of cg->m, and the entry of kernel named entry_name;
 * *scratch: bytes of scratch one program instance needs. */
IrError *cg_lower_module(Cg *cg, IrFunc *kernel, const char *entry_name, int64_t *scratch);

/* Lowers the ops of a region block except its terminator, which it returns. */
IrOp *cg_lower_block(Cg *cg, IrBlock *blk);

/* ------------------------------------------------------------------------- */
/* Per op family                                                             */
/* ------------------------------------------------------------------------- */

/* elem.c: elementwise ops (arithmetic, compare, select, casts, math, extern,
 * addptr); scalar semantics in cg_scalar_op, block loops in cg_lower_elem. */
LLVMValueRef cg_scalar_op(Cg *cg, const IrOp *op, LLVMValueRef *xs);
/* Element i of lazy elementwise op (its result 0). */
LLVMValueRef cg_lazy_elem(Cg *cg, IrOp *op, LLVMValueRef i);
void cg_lower_elem(Cg *cg, IrOp *op);
/* map_elementwise: a loop over groups of pack elements running the region on
 * scalars (a ragged last group reads element 0 and writes nothing there). */
void cg_lower_map(Cg *cg, IrOp *op);
LLVMValueRef cg_convert(Cg *cg, const IrOp *op, LLVMValueRef x, const IrType *from,
			const IrType *to, bool rtz);
LLVMValueRef cg_to_f32(Cg *cg, LLVMValueRef x, const IrType *t);
LLVMValueRef cg_from_f32(Cg *cg, LLVMValueRef x, const IrType *t, bool rtz);

/* shape.c: make_range, broadcast, reshape, trans, cat, join, split, gather,
 * histogram, reduce, scan, dot. */
void cg_lower_shape(Cg *cg, IrOp *op);
void cg_lower_reduce(Cg *cg, IrOp *op, bool scan);
void cg_lower_dot(Cg *cg, IrOp *op);

/* mem.c: load, store, atomics, print, assert. */
void cg_lower_mem(Cg *cg, IrOp *op);
/* Element i of lazy load op. */
LLVMValueRef cg_load_elem(Cg *cg, IrOp *op, LLVMValueRef i);

/* sanitize.c: with BeOptions.sanitize, the bounds check emitted before a
 * load, store or atomic (its active elements against the extent of the
 * argument the pointer derives from). */
void cg_san_check(Cg *cg, IrOp *op);
/* An assert {overflow} (the frontend's integer overflow check): fails
 * naming the first element that overflows and its operands. */
void cg_san_overflow(Cg *cg, IrOp *op);
/* Under the sanitizer, a multiple_of hint on a scalar (an integer or a
 * pointer) is checked before the program relies on it: a value that is no
 * multiple stops the program with the hint's location, the value and the
 * multiple (ct_cpu_hint_fail). */
void cg_san_hint(Cg *cg, IrOp *op);

/* ------------------------------------------------------------------------- */
/* Runtime side (jit.c, launch.c)                                            */
/* ------------------------------------------------------------------------- */

/* Entry point of a compiled kernel: runs the linear program ids
 * [start, end) of an nx x ny x nz grid. */
typedef void (*CpuEntry)(void **params, int32_t start, int32_t end, int32_t nx, int32_t ny,
			 int32_t nz, void *scratch, void *wctx);

struct BeCpuKernel {
	CpuEntry entry;
	int64_t scratch; /* bytes per worker */
	void *rt;        /* LLVMOrcResourceTrackerRef */
	char *name;
	bool sanitize;   /* params[nparams] is the extents table */
	int nparams;
};

/* Per-worker state the jitted code receives as wctx. */
typedef struct CpuWorker {
	jmp_buf jb;
	struct CpuLaunch *launch;
} CpuWorker;

typedef struct CpuLaunch {
	atomic_int failed;
	char msg[1024];
	/* sanitize: the kernel, its parameters and their extents */
	const BeCpuKernel *k;
	void **params;
	const uint64_t *ext;
} CpuLaunch;

/* Helpers the jitted code calls (defined as absolute symbols in the JIT). */
void ct_cpu_assert_fail(void *wctx, const char *msg, const char *file, int32_t line);
uint8_t ct_cpu_f32_to_f8(float x, int32_t fmt); /* fmt: 1 e5m2 (else e4m3), 2 rtz */
uint16_t ct_cpu_f64_to_f16(double x);
double ct_cpu_erfinv(double y);
float ct_cpu_f8_to_f32(uint8_t x, int32_t fmt);
/* sanitize.c: the launch's extents table; the report of an out-of-bounds
 * access (does not return); the check of a pointer of unknown origin
 * against every argument's extent (returns when it lies inside one). */
const uint64_t *ct_cpu_san_ext(void *wctx);
void ct_cpu_san_fail(void *wctx, const char *site, int32_t arg, uint64_t lo, uint64_t end, int32_t esize,
		     int32_t px, int32_t py, int32_t pz);
void ct_cpu_san_any(void *wctx, const char *site, uint64_t lo, uint64_t end, int32_t esize, int32_t px,
		    int32_t py, int32_t pz);
void ct_cpu_overflow_fail(void *wctx, const char *site, int32_t sym, int64_t idx, int64_t x, int64_t y, int64_t r,
			  int32_t px, int32_t py, int32_t pz);
void ct_cpu_hint_fail(void *wctx, const char *site, int64_t x, int64_t q, int32_t px, int32_t py, int32_t pz);

#endif
