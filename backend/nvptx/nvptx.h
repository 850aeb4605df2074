/* nvptx.h: internals shared by the files of backend/nvptx (not exported).
 *
 * Lowering state (Nv): every IR value of the kernel maps to the LLVM values
 * this thread holds for it (NvVals: one per owned element, in the register
 * order of its layout; scalars are one value held by every thread). NvMap
 * describes how a layout distributes a block shape over lanes and warps (see
 * map.c). Functions shared by the files of this folder carry `nv_`, as those
 * of backend/cpu carry `cg_`; static helpers have no prefix.
 */
#ifndef CTRITON_NVPTX_H
#define CTRITON_NVPTX_H

#include <llvm-c/Core.h>

#include "analysis/analysis.h"
#include "backend/backend.h"

#define NV_WG_OLD 3 /* independent warpgroup dots in flight besides the newest */

typedef struct NvVals {
	int n;
	LLVMValueRef *v;
} NvVals;

typedef struct NvMap {
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
} NvMap;

typedef struct Nv {
	IrCtx *ctx;
	IrFunc *f;
	const BeOptions *opt;
	AnGpuOptions ao;
	int ptx; /* PTX ISA version, e.g. 80 */
	const AnAxis *ax;
	LLVMContextRef c;
	LLVMModuleRef m;
	LLVMBuilderRef b;
	LLVMValueRef fn;
	NvVals *vals;
	int nvals;
	LLVMValueRef tid, lane, warp, smem;
	LLVMValueRef gscratch; /* the kernel's global scratch buffer (its last parameter), or NULL */
	/* smem's 32-bit shared-window address: what inline PTX takes (mbarriers,
	 * bulk copies, cp.async, ldmatrix, matrix descriptors), so that their
	 * address arithmetic is 32-bit (see nv_smem_addr32) */
	LLVMValueRef smem32;
	bool need_libdevice;
	IrError *err;
	const IrOp *staged; /* second of a staged dot_op pair, already lowered */
	/* a warpgroup dot issued but not waited for: its accumulators, in flight
	 * until nv_wgmma_wait (see dot.c) */
	IrOp *wg_dot;
	LLVMValueRef *wg_acc;
	int wg_n;
	/* older warpgroup dots still in flight, issued before wg_dot and
	 * independent of it (a loop of several accumulators: LLTM's gates),
	 * oldest first; settled by the same waits as wg_dot */
	IrOp *wg_old[NV_WG_OLD];
	LLVMValueRef *wg_old_acc[NV_WG_OLD];
	int wg_old_n[NV_WG_OLD];
	int nwg_old;
	/* the previous iteration's last MMA, still in flight at the top of a
	 * {wgmma_inflight = 2} loop body: the carried argument it yields into
	 * and the registers it writes, settled at the next wait */
	const IrValue *fly_arg;
	LLVMValueRef *fly_regs;
	int fly_n;
	bool settle_all; /* {wgmma_pending} barriers wait for every group */
	/* the body of a {wgmma_inflight = 1} loop: the newest MMA's result,
	 * still in flight after a {wgmma_pending} wait (live), its registers
	 * tied through that wait. The first op other than a yield that reads
	 * it waits for it; an `if` reading it does so in its own regions (a
	 * flattened nest's epilogue), where the other region passes it on in
	 * flight */
	bool live_ok;
	const IrValue *live;
	LLVMValueRef *live_regs;
	int live_n;
	/* the body of a {wgmma_inflight = 2} loop being lowered: a dot its
	 * yield takes still in flight stays in flight across the back edge */
	const IrBlock *fly_body;
	/* warpgroup MMA groups committed and perhaps not done, counted in
	 * straight-line code: wg_out in block wg_bb (elsewhere unknown), so a
	 * wait an earlier one already covers is not emitted (see wait_tied) */
	LLVMBasicBlockRef wg_bb;
	int wg_out;
	int nstr;
	/* warp specialization: the producer's warps after the num_warps
	 * consumers (barriers then count the consumers only), and whether the
	 * code being lowered is the producer's (its lane 0 issues the copies) */
	int ws_warps;
	bool in_producer;
} Nv;

/* map.c */
void nv_map_init(Nv *nv, const IrType *t, NvMap *m);
void nv_map_local(const NvMap *m, int r, int *j);    /* j per base dim */
int nv_map_reg(const NvMap *m, const int *j);
int64_t nv_map_offset(const NvMap *m, int r, int d); /* register r along base dim d, minus base */
LLVMValueRef nv_map_coord(Nv *nv, const NvMap *m, int r, int vdim);
LLVMValueRef nv_map_owner(Nv *nv, const NvMap *m);   /* NULL: every thread owns */
LLVMValueRef nv_map_lin(Nv *nv, const NvMap *m, const IrType *t, int r); /* row-major index */
int nv_map_nregs(Nv *nv, const IrType *t);

/* lower.c: the core used by every op family */
LLVMValueRef nv_i32(Nv *nv, int64_t v);
void nv_fail(Nv *nv, const IrOp *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
LLVMTypeRef nv_llty(Nv *nv, const IrType *t); /* scalar type of t */
LLVMValueRef nv_intrinsic(Nv *nv, const char *name, LLVMTypeRef *tys, int ntys, LLVMValueRef *args, int nargs);
LLVMValueRef nv_libdevice(Nv *nv, const char *name, LLVMTypeRef ret, LLVMValueRef *args, int n); /* linked in later */
NvVals *nv_vals(Nv *nv, const IrValue *v);
void nv_set(Nv *nv, const IrValue *v, int n, LLVMValueRef *regs); /* copies regs */
void nv_set1(Nv *nv, const IrValue *v, LLVMValueRef x);
LLVMValueRef nv_reg(Nv *nv, const IrValue *v, int r); /* register r of v (scalars: the one value) */
LLVMValueRef *nv_regbuf(Nv *nv, int n);
LLVMValueRef nv_and_pred(Nv *nv, LLVMValueRef a, LLVMValueRef b); /* NULL: true */
LLVMBasicBlockRef nv_new_bb(Nv *nv, const char *name);
/* Code from here on runs where cond holds, up to nv_close_when(jb) with the
 * block nv_open_when returns (name: the conditional block's). */
LLVMBasicBlockRef nv_open_when(Nv *nv, LLVMValueRef cond, const char *name);
void nv_close_when(Nv *nv, LLVMBasicBlockRef jb);
void nv_barrier(Nv *nv);
void nv_asm_void(Nv *nv, const char *text); /* one PTX statement, no operands, memory clobber */
LLVMValueRef nv_shfl(Nv *nv, const char *mode, LLVMValueRef v, LLVMValueRef b); /* "bfly" / "idx", whole warp */
int64_t nv_esize(const IrType *t); /* bytes of one element in scratch (i1: 1) */
LLVMValueRef nv_smem_addr(Nv *nv, int64_t byte_off, LLVMValueRef idx, int64_t esize);
/* the same byte as a 32-bit shared address (idx NULL: byte_off itself) */
LLVMValueRef nv_smem_addr32(Nv *nv, int64_t byte_off, LLVMValueRef idx, int64_t esize);
void nv_smem_store(Nv *nv, const IrType *t, int64_t off, LLVMValueRef idx, LLVMValueRef v);
LLVMValueRef nv_smem_load(Nv *nv, const IrType *t, int64_t off, LLVMValueRef idx);
int64_t nv_scratch_off(const IrOp *op);
void nv_write_block(Nv *nv, const IrValue *v, int64_t off); /* row-major at off */
static inline int64_t nv_align16(int64_t x) { return (x + 15) & ~(int64_t)15; }

/* elem.c: elementwise ops, casts, math */
bool nv_in_loop(const IrOp *op);
bool nv_is_unsigned(const IrType *t);
LLVMValueRef nv_cast(Nv *nv, IrOp *op, const IrType *from, const IrType *to, LLVMValueRef x);
void nv_lower_elementwise(Nv *nv, IrOp *op);
/* map_elementwise: the region inlined once per pack of the thread's elements. */
void nv_lower_map(Nv *nv, IrOp *op);

/* asm.c: elementwise_inline_asm, one LLVM inline asm per pack of registers */
void nv_lower_inline_asm(Nv *nv, IrOp *op);

/* shape.c: sources, shape ops, layout exchanges through scratch */
void nv_lower_constant(Nv *nv, IrOp *op);
void nv_lower_make_range(Nv *nv, IrOp *op);
void nv_lower_splat(Nv *nv, IrOp *op);
void nv_lower_broadcast(Nv *nv, IrOp *op);
void nv_lower_identity(Nv *nv, IrOp *op);
void nv_lower_reshape(Nv *nv, IrOp *op);
void nv_lower_trans(Nv *nv, IrOp *op);
void nv_lower_split(Nv *nv, IrOp *op);
void nv_lower_convert(Nv *nv, IrOp *op);
void nv_lower_two(Nv *nv, IrOp *op); /* cat, join */
void nv_lower_gather(Nv *nv, IrOp *op);
void nv_lower_histogram(Nv *nv, IrOp *op);

/* dot.c: dot operand staging (swizzled scratch, ldmatrix), mma.sync, FMA dot */
bool nv_ldmatrix_ok(const IrOp *op); /* op converts a 16-bit 2-D tile to #dot_op */
void nv_lower_to_dot_op(Nv *nv, IrOp *op);
/* the element index of (row, col) in the swizzled tile [R][C] of es-byte
 * elements with swizzle mode `mode` (0: the layout the MMAs read; see
 * dot.c), and the same on constants */
LLVMValueRef nv_swizzled_index(Nv *nv, LLVMValueRef row, LLVMValueRef col, int64_t R, int64_t C, int es, int mode);
int64_t nv_swizzled_index_int(int64_t row, int64_t col, int64_t R, int64_t C, int es, int mode);
/* the element index of (row, col) in a slot (swizzle mode 0, or a tile read
 * back into registers: nv_regs_swizzle) plus eoff */
LLVMValueRef nv_slot_index(Nv *nv, LLVMValueRef row, LLVMValueRef col, int64_t R, int64_t C, int es, LLVMValueRef eoff,
			   int mode);
/* the swizzle mode of buffer's slots when only the threads read them (a
 * tile read back into registers, an mma.sync tf32 operand): the one with
 * the fewest shared-memory wavefronts for the read; else 0 (the MMA's) */
int nv_regs_swizzle(Nv *nv, int64_t buffer);
void nv_wgmma_wait(Nv *nv, int pending); /* waits for wg_dot, sets its result */
void nv_wgmma_settle(Nv *nv, int pending); /* waits for fly_arg's MMA, sets it */
void nv_wgmma_leave(Nv *nv); /* sets wg_dot's result without a wait: in flight past the yield */
void nv_wgmma_settle_live(Nv *nv); /* waits for the live MMA, sets its result */
bool nv_absorbed_select(const IrOp *op); /* an acc-init select a warpgroup MMA reads as scale-d */
void nv_wgmma_wait_regs(Nv *nv, LLVMValueRef *regs, int n); /* wait_group 0, regs tied through */
bool nv_wgmma_keeps_flying(const Nv *nv, const IrOp *op); /* op may run while wg_dot is in flight */
void nv_read_swizzled(Nv *nv, IrOp *op, LLVMValueRef eoff, bool tr);
bool nv_smem_operand(const IrOp *op);  /* B of a warpgroup MMA: kept in shared memory */
void nv_set_smem_operand(Nv *nv, IrOp *op, int64_t off, LLVMValueRef eoff);
void nv_fence_async_shared(Nv *nv);    /* generic-proxy writes -> tensor-core reads */
/* v (2-D) into the swizzled tile at scratch byte off (tr: stored [C][R]) */
/* The 32-bit shared address of element (row, col) of a staged 2-D tile. */
typedef LLVMValueRef (*NvAddrFn)(Nv *nv, void *ctx, LLVMValueRef row, LLVMValueRef col);
/* stmatrix.x4 (sm_90) of v's 16-bit registers that lie in an accumulator's
 * arrangement (map m of v), each 8 x 8 piece to addr's rows; done[r] set
 * for those written (dot.c). */
void nv_write_stmatrix(Nv *nv, const IrValue *v, const NvMap *m, NvAddrFn addr, void *ctx, int64_t col0,
		       const bool *in, bool *done);
/* Whether nv_write_stmatrix can write any of v's registers (map m). */
bool nv_stmatrix_ok(const Nv *nv, const IrValue *v, const NvMap *m);
void nv_write_swizzled(Nv *nv, const IrValue *v, int64_t off, bool tr);
void nv_write_swizzled_cols(Nv *nv, const IrValue *v, int64_t off, bool tr, int64_t col0, int64_t cols);
void nv_read_dot_op_at(Nv *nv, IrOp *op, LLVMValueRef eoff, bool tr);    /* tr: held as [C][R] */
void nv_read_dot_op_elems(Nv *nv, IrOp *op, LLVMValueRef eoff, bool tr); /* 32-bit: element by element */
bool nv_kw4_ldmatrix(const IrOp *op);                                    /* an 8-bit operand of K width 4 by ldmatrix */
void nv_read_kw4_ldmatrix(Nv *nv, IrOp *op, LLVMValueRef eoff);
void nv_lower_dot(Nv *nv, IrOp *op);

/* mem.c: loads, stores, cp.async, local_read */
int nv_access_vec(Nv *nv, const IrValue *p, const IrValue *mask, const NvMap *m);
void nv_lower_async_copy(Nv *nv, IrOp *op);
void nv_lower_async_commit(Nv *nv, IrOp *op);
void nv_lower_async_wait(Nv *nv, IrOp *op);
void nv_lower_local_read(Nv *nv, IrOp *op);
void nv_lower_tma_copy(Nv *nv, IrOp *op);
void nv_lower_tma_wait(Nv *nv, IrOp *op);
void nv_lower_tma_init(Nv *nv, IrOp *op);
void nv_lower_tma_inval(Nv *nv, IrOp *op);
void nv_lower_tma_release(Nv *nv, IrOp *op);
void nv_lower_tma_store(Nv *nv, IrOp *op);
void nv_lower_load(Nv *nv, IrOp *op);
void nv_lower_store(Nv *nv, IrOp *op);

/* tmap.c: tensormap_create (a tensor map written in global scratch) */
void nv_lower_tmap_create(Nv *nv, IrOp *op);

/* atomic.c: atomic_rmw, atomic_cas */
void nv_lower_atomic(Nv *nv, IrOp *op);

/* reduce.c: reductions, scans */
void nv_lower_reduce(Nv *nv, IrOp *op);
void nv_lower_scan(Nv *nv, IrOp *op);

/* control.c: for / if / while, calls, print, assert, the op dispatch */
/* The LLVM signature of noinline function g: the registers of each
 * parameter in order, then a shared base pointer when g uses shared
 * memory; void, one register, or a struct of all result registers. */
LLVMTypeRef nv_callee_type(Nv *nv, const IrFunc *g);
void nv_lower_return(Nv *nv, IrOp *op); /* op NULL: the end of a body without one */
void nv_lower_op(Nv *nv, IrOp *op);
void nv_lower_block(Nv *nv, IrBlock *blk);

#endif
