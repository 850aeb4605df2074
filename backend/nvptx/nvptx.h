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

/* lower.c */
LLVMTypeRef be_llty(Lower *L, const IrType *t); /* scalar type of t */
LLVMValueRef i32c(Lower *L, int64_t v);
LLVMValueRef call_intr(Lower *L, const char *name, LLVMTypeRef *tys, int ntys, LLVMValueRef *args, int nargs);
void lower_block(Lower *L, IrBlock *blk);
void lower_op(Lower *L, IrOp *op);
void lower_kernel(Lower *L);

#endif
