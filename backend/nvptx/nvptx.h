/* nvptx.h: internals shared by the files of backend/nvptx (not exported).
 *
 * Lowering state: every IR value of the kernel maps to the LLVM values this
 * thread holds for it (Vals: one per owned element, in the register order of
 * its layout; scalars are one value held by every thread). Map describes how
 * a layout distributes a block shape over lanes and warps (see map.c).
 */
#ifndef CTRITON_NVPTX_H
#define CTRITON_NVPTX_H

#include <llvm-c/Core.h>

#include "analysis/analysis.h"
#include "backend/backend.h"

typedef struct Vals {
	int n;
	LLVMValueRef *v;
} Vals;

typedef struct Map {
	const IrLayout *b;         /* base layout under the slices: blocked, mma, dot_op */
	int rank;                  /* value rank */
	int brank;                 /* base layout rank */
	int64_t bs[IR_MAX_RANK];   /* base shape (1 in sliced dims) */
	int dimmap[IR_MAX_RANK];   /* value dim -> base dim */
	AnDimDist dd[IR_MAX_RANK]; /* distribution per base dim */
	int order[IR_MAX_RANK];    /* register order, fastest first */
	int nd[IR_MAX_RANK];       /* registers per base dim */
	int stride[IR_MAX_RANK];   /* register index stride per base dim */
	int dl[IR_MAX_RANK], dw[IR_MAX_RANK]; /* distinct lanes / warps per base dim */
	int lane_stride[IR_MAX_RANK], warp_stride[IR_MAX_RANK];
	int n;                     /* registers per thread */
	LLVMValueRef lane_d[IR_MAX_RANK], warp_d[IR_MAX_RANK], base[IR_MAX_RANK];
} Map;

typedef struct Lower {
	IrCtx *ctx;
	IrFunc *f;
	const BeOptions *opt;
	AnGpuOptions ao;
	const AnAxis *ax;
	LLVMContextRef c;
	LLVMModuleRef m;
	LLVMBuilderRef b;
	LLVMValueRef fn;
	Vals *vals;
	int nvals;
	LLVMValueRef tid, lane, warp, smem;
	bool need_libdevice;
	IrError *err;
	const IrOp *staged; /* second of a staged dot_op pair, already lowered */
	int nstr;
} Lower;

/* map.c */
void map_init(Lower *L, const IrType *t, Map *m);
void map_local(const Map *m, int r, int *j);           /* j per base dim */
int map_reg(const Map *m, const int *j);
int64_t map_offset(const Map *m, int r, int d);        /* register r along base dim d, minus base */
LLVMValueRef map_coord(Lower *L, const Map *m, int r, int vdim);
LLVMValueRef map_owner(Lower *L, const Map *m);        /* NULL: every thread owns */
LLVMValueRef map_lin(Lower *L, const Map *m, const IrType *t, int r); /* row-major index */
int map_nregs(Lower *L, const IrType *t);

/* lower.c: the core used by every op family */
LLVMValueRef i32c(Lower *L, int64_t v);
void fail(Lower *L, const IrOp *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
LLVMTypeRef be_llty(Lower *L, const IrType *t); /* scalar type of t */
LLVMValueRef call_intr(Lower *L, const char *name, LLVMTypeRef *tys, int ntys, LLVMValueRef *args, int nargs);
LLVMValueRef call_dev(Lower *L, const char *name, LLVMTypeRef ret, LLVMValueRef *args, int n); /* libdevice */
Vals *vals_of(Lower *L, const IrValue *v);
void set_vals(Lower *L, const IrValue *v, int n, LLVMValueRef *regs); /* copies regs */
void set1(Lower *L, const IrValue *v, LLVMValueRef x);
LLVMValueRef reg(Lower *L, const IrValue *v, int r); /* register r of v (scalars: the one value) */
LLVMValueRef *regbuf(Lower *L, int n);
LLVMBasicBlockRef new_bb(Lower *L, const char *name);
void barrier(Lower *L);
int64_t ebytes(const IrType *t); /* bytes of one element in scratch (i1: 1) */
LLVMValueRef smem_addr(Lower *L, int64_t byte_off, LLVMValueRef idx, int64_t esize);
void smem_store(Lower *L, const IrType *t, int64_t off, LLVMValueRef idx, LLVMValueRef v);
LLVMValueRef smem_load(Lower *L, const IrType *t, int64_t off, LLVMValueRef idx);
int64_t scratch_off(const IrOp *op);
void write_block(Lower *L, const IrValue *v, int64_t off); /* row-major at off */
static inline int64_t align16(int64_t x) { return (x + 15) & ~(int64_t)15; }

/* elem.c: elementwise ops, casts, math */
bool is_unsigned(const IrType *t);
LLVMValueRef cast(Lower *L, IrOp *op, const IrType *from, const IrType *to, LLVMValueRef x);
void lower_elementwise(Lower *L, IrOp *op);

/* shape.c: sources, shape ops, layout exchanges through scratch */
void lower_constant(Lower *L, IrOp *op);
void lower_make_range(Lower *L, IrOp *op);
void lower_splat(Lower *L, IrOp *op);
void lower_broadcast(Lower *L, IrOp *op);
void lower_identity(Lower *L, IrOp *op);
void lower_reshape(Lower *L, IrOp *op);
void lower_trans(Lower *L, IrOp *op);
void lower_split(Lower *L, IrOp *op);
void lower_convert(Lower *L, IrOp *op);
void lower_two(Lower *L, IrOp *op); /* cat, join */
void lower_gather(Lower *L, IrOp *op);

/* dot.c: dot operand staging (swizzled scratch, ldmatrix), mma.sync, FMA dot */
bool ldmatrix_ok(const IrOp *op); /* op converts a 16-bit 2-D tile to #dot_op */
void lower_to_dot_op(Lower *L, IrOp *op);
LLVMValueRef slot_index(Lower *L, LLVMValueRef row, LLVMValueRef col, int64_t C, LLVMValueRef eoff);
void read_dot_op_at(Lower *L, IrOp *op, LLVMValueRef eoff);
void lower_dot(Lower *L, IrOp *op);

/* mem.c: loads, stores, atomics, cp.async, local_read */
void lower_async_copy(Lower *L, IrOp *op);
void lower_async_commit(Lower *L, IrOp *op);
void lower_async_wait(Lower *L, IrOp *op);
void lower_local_read(Lower *L, IrOp *op);
void lower_load(Lower *L, IrOp *op);
void lower_store(Lower *L, IrOp *op);
void lower_atomic(Lower *L, IrOp *op);

/* reduce.c: reductions, scans */
void lower_reduce(Lower *L, IrOp *op);
void lower_scan(Lower *L, IrOp *op);

/* control.c: for / if / while, print, assert, the op dispatch */
void lower_op(Lower *L, IrOp *op);
void lower_block(Lower *L, IrBlock *blk);

#endif
