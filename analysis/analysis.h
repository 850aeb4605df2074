/* analysis.h: analyses and GPU-level transforms over ctriton's IR, the one
 * interface of the analysis/ folder. Everything here works on one function
 * (the kernel, or a noinline function it calls: the pass table runs each
 * pass on every function an_call_order lists) and allocates from its
 * module's IrCtx.
 *
 * Passes (the pass table in jit/pipeline.c runs them in this order and
 * states what each requires, keeps and breaks; see README.md):
 *   dotsplit.c an_split_dots     tf32x3 / bf16x3 / bf16x6 dots as several
 *                                tensor-core dots; fp8 dots off warpgroup
 *                                MMA upcast to f16 (arch >= 80)
 *   prefetch.c an_prefetch_dot_loads  loads feeding dot issued one iteration
 *                                ahead (num_stages >= 2, arch >= 80)
 *   tmastore.c an_tma_stores     descriptor stores through the tensor memory
 *                                access unit (tma_store, arch >= 90)
 *   storever.c an_version_stores stores of run-time alignment in an `if`:
 *                                hinted vectors when the scalars allow
 *   axis.c    an_axis_info       contiguity / divisibility / constancy per value
 *   layout.c  an_assign_layouts  blocked layouts anchored on coalesced memory
 *                                accesses, slices for reductions, propagation,
 *                                convert_layout where layouts disagree
 *   coalesce.c                   the layout of each global load and store
 *   locality.c an_thread_locality loop-accumulated reductions reduce in-thread
 *                                per iteration, across threads once after
 *   rslice.c  an_slice_register_dots  a warpgroup MMA with A computed in
 *                                registers: one MMA group per K step, in
 *                                flight while the next step's A is read
 *             an_remove_converts drops identity conversions, folds chains,
 *                                rematerialises cheap producers in place
 *   gscratch.c an_allocate_global_scratch  a global scratch slot per tensor
 *                                map the kernel makes for its tensor copies
 *   alloc.c   an_insert_barriers `barrier` ops where scratch is reused
 *             an_allocate_shared scratch bytes per op, offsets by liveness in
 *                                one dynamic shared block ("scratch_offset")
 *
 * Layout helpers (layout.c) are shared with backend/nvptx, which maps a
 * layout to the elements each thread owns.
 */
#ifndef CTRITON_ANALYSIS_H
#define CTRITON_ANALYSIS_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/ir.h"

/* ------------------------------------------------------------------------- */
/* Value numbering                                                           */
/* ------------------------------------------------------------------------- */

/* Numbers every value of f (parameters, results, region arguments) densely
 * in program order into IrValue.id and returns the count. */
int an_number_values(IrFunc *f);

/* ------------------------------------------------------------------------- */
/* Axis info (axis.c)                                                        */
/* ------------------------------------------------------------------------- */

/* Per dimension of a value (rank 0 for scalars: index 0 holds the scalar's
 * facts): the largest power of two such that runs of that many consecutive
 * elements along the dim are contiguous (+1 each) / all equal, and the
 * largest power of two dividing every element (for pointers: in bytes).
 * prefix (of masks; never below constancy): runs of that many along the dim
 * are true up to some element and false after it (offs < n with n unknown:
 * a copy that zero-fills the rest can still move the run as one vector). */
typedef struct AnAxisInfo {
	int rank;
	int64_t contig[IR_MAX_RANK];
	int64_t div[IR_MAX_RANK];
	int64_t constancy[IR_MAX_RANK];
	int64_t prefix[IR_MAX_RANK];
	/* an undefined value (poison): a meet with it keeps the other side */
	bool any;
} AnAxisInfo;

typedef struct AnAxis AnAxis;

/* Computes axis info for every value of f (numbers the values first; the
 * result is valid until f's values are renumbered or changed). */
AnAxis *an_axis_info(IrFunc *f);
/* The facts about v (never NULL: unknown values get the conservative 1s). */
const AnAxisInfo *an_axis_get(const AnAxis *a, const IrValue *v);
/* Elements per vectorised access of a load/store/atomic whose pointer block
 * is ptr and mask is mask (may be NULL), along dim: bounded by contiguity,
 * alignment, mask constancy and 128 bits. 1 for scalars. With zfill (a copy
 * that moves a vector's first bytes and zero-fills the rest: cp.async's
 * src-size) mask prefixes bound it instead of mask constancy. Only i1
 * masks bound it (an async copy's i32 count mask does not). */
int an_access_vec(const AnAxis *a, const IrValue *ptr, const IrValue *mask, int dim, bool zfill);
/* The divisibility that holds for x's elements at positions along d that
 * are multiples of c (the first elements of aligned runs of length c);
 * step: 1, or the element bytes of a pointer block (its div is in bytes). */
int64_t an_div_at(const AnAxisInfo *x, int d, int64_t c, int64_t step);
/* Bytes of one element of t (a pointer's pointee; at least 1). */
int an_elem_bytes(const IrType *t);
/* For every call in f, meets what a (f's axis info) knows of each argument
 * into the callee's parameter attributes ("divisibility"; for blocks also
 * "contiguity" and "constancy", per dim), which an_axis_info of the callee
 * starts from. Run on the callers before their callees (an_call_order,
 * walked backwards) so that every call site is met in. */
void an_axis_seed_callees(IrFunc *f, const AnAxis *a);

/* ------------------------------------------------------------------------- */
/* Layouts (layout.c)                                                        */
/* ------------------------------------------------------------------------- */

/* An op naming a multi-buffered tile buffer {buffer}: async_copy,
 * local_read, and the tensor-memory-access copies and mbarrier ops. */
int64_t an_tile_buffer_bytes(const IrOp *op, int64_t *mbar_off);
static inline bool an_tile_buffer_op(const IrOp *op)
{
	return op->opc == OP_ASYNC_COPY || op->opc == OP_LOCAL_READ || op->opc == OP_TMA_COPY ||
	       op->opc == OP_TMA_WAIT || op->opc == OP_TMA_INIT || op->opc == OP_TMA_INVAL ||
	       op->opc == OP_TMA_RELEASE;
}

/* CTRITON_SMALL_LOADS=1 (part of the cache key): a load of fewer elements
 * than the block has threads is done in the layout its users want
 * (layout.c). Opt-in until a GPU has run it. */
bool an_small_loads(void);

typedef struct AnGpuOptions {
	int num_warps;   /* power of two */
	int warp_size;   /* 32 */
	int arch;        /* compute capability * 10; 0 or < 80: no tensor cores */
} AnGpuOptions;

/* The blocked layout for a block of shape[rank] with size_per_thread spt
 * (NULL: all 1) and order (NULL: rank-1 .. 0): threads and warps fill the
 * dims in order; leftovers replicate along the slowest dim. */
const IrLayout *an_blocked_layout(IrCtx *ctx, int rank, const int64_t *shape, const int *spt,
				  const int *order, int num_warps, int warp_size);
const IrLayout *an_slice_layout(IrCtx *ctx, int dim, const IrLayout *parent);
/* The coalesced layout for a memory access through the pointer block ptr. */
const IrLayout *an_coalesced_layout(IrCtx *ctx, const AnAxis *a, const IrValue *ptr,
				    const IrValue *mask, int num_warps, int warp_size);

/* Elements per vectorised access through pointer block ptr (mask may be
 * NULL) when ptr has layout l: the run of a thread's consecutive registers
 * that are consecutive elements along l's fastest dim, bounded by
 * an_access_vec; what the backend emits (coalesce.c). */
int an_layout_vec(const AnAxis *a, const IrValue *ptr, const IrValue *mask, const IrLayout *l);
/* The layout the global load or store op is done in: its own coalesced
 * layout when that vectorizes it better than rank_layout (its rank's
 * anchor), else rank_layout (coalesce.c). */
const IrLayout *an_access_layout(IrCtx *ctx, const AnAxis *a, const IrOp *op, const IrLayout *rank_layout,
				 const AnGpuOptions *o);

/* Unwinds slices: the blocked layout under l, the value shape extended to
 * its rank (size 1 in sliced dims, base_shape) and, for each dim of the
 * value, the dim of the blocked layout it maps to (dimmap). */
const IrLayout *an_unslice(const IrLayout *l, int rank, const int64_t *shape,
			   int64_t *base_shape, int *dimmap);

/* Per base dim d of a blocked layout over base_shape: how many elements a
 * thread owns (nregs), and how many distinct lanes / warps hold distinct
 * data along d (the rest replicate). */
void an_blocked_dim(const IrLayout *b, const int64_t *base_shape, int d, int *nregs,
		    int *distinct_lanes, int *distinct_warps);

/* Whether t is laid out for warpgroup MMA (an mma v3 accumulator, or a
 * dot_op of one): its B operand lives in shared memory, not registers. */
bool an_is_wgmma(const IrType *t);
/* select(splat c, zeros, x), c a scalar i1: a flattened nest's accumulator
 * at the start of a tile (ir/loops.c). A warpgroup MMA reading it takes x
 * with scale-d = !c for its first K step instead (prefetch.c). */
bool an_acc_init_select(const IrOp *d);
/* Whether op (a convert_layout or local_read to a dot_op of an mma v3
 * layout) leaves its tile in shared memory for the warpgroup MMA to read
 * by descriptor: always for B; for A unless it is computed in registers
 * that already hold its fragments (an mma result, see an_same_registers). */
/* mma.sync (sm_80+) takes this dot's element types: f16 -> f32/f16,
 * bf16 -> f32, f32 as tf32 -> f32, i8 -> i32. */
bool an_mma_v2_types(const IrOp *dot);
bool an_wgmma_smem_operand(const IrOp *op);
/* Whether such a B tile is stored transposed ([N][K]) and read K-major: a
 * cp.async slot filled down the columns, any staged B whose elements are
 * not 16 bits wide (the tensor cores read only those transposed), or a
 * staged 16-bit B whose registers run along K. */
bool an_wgmma_kmajor_b(const IrOp *op);
/* A copy into, or a read of, a row-major slot ({plain}: an operand of a
 * dot off the tensor cores, which reads the slot itself; the read's value
 * is the slot's element offset). */
bool an_fma_slot(const IrOp *op);
/* A 16-bit A read from a slot that holds it transposed ([K][M], M contiguous):
 * the warpgroup MMA reads it MN-major (imm-trans-a). */
bool an_wgmma_mnmajor_a(const IrOp *op);

/* How a distributed base layout (blocked, mma v2 or dot_op of one) spreads
 * base dim d of a block over one thread. The thread with lane coordinate
 * lc = (lane / lane_stride) % tpw and warp coordinate wc = (warp /
 * warp_stride) % wpc owns, for j < nregs, the element
 *     (wc * warp_unit + lc * lane_unit + (j / spt) * tile + (j % spt) * estride) mod S.
 * Only distinct_lanes lanes / distinct_warps warps along d hold distinct
 * data; the others replicate. For mma v2 (warp tile 16 x 8, warps M-fastest)
 * and its dot operands this spells out the mma.sync m16n8k16 fragments:
 * lanes 4g + t hold rows g, g + 8 and columns 2t, 2t + 1 (+ 8 for A's K). */
typedef struct AnDimDist {
	int spt, estride;
	int64_t tile;
	int tpw, lane_stride, lane_unit;
	int wpc, warp_stride, warp_unit;
	int nregs, distinct_lanes, distinct_warps;
} AnDimDist;

/* Fills *dd for base dim d of base layout b over base_shape (see AnDimDist).
 * Returns false for layouts without a register distribution (shared). */
bool an_dim_dist(const IrLayout *b, const int64_t *base_shape, int d, AnDimDist *dd);
/* Whether two block types of one shape give every thread the same elements
 * in the same register order (a conversion between them moves nothing): an
 * mma accumulator with one warp along N and the A operand of a dot whose mma
 * parent stacks the warps the same way, for instance. */
bool an_same_registers(const IrType *a, const IrType *b);
/* Register order of a base layout: order[0] is the dim whose registers are
 * consecutive (blocked: its order; mma and dot_op: the last dim first). */
void an_reg_order(const IrLayout *b, int *order);
/* Where the layout of block type t gives several threads a copy of one
 * element (a dim whose threads wrap around the shape, e.g. a [4, 1] block
 * over 128 threads): AN_COPIES_NONE; AN_COPIES_LANES when the copies of
 * every element lie in one warp, *lane_mask then holds the lane-id bits
 * that tell the copies apart (the owner, which has them all zero, is lane &
 * ~*lane_mask); AN_COPIES_WARPS when copies lie in other warps. lane_mask
 * may be NULL. */
typedef enum AnCopies { AN_COPIES_NONE, AN_COPIES_LANES, AN_COPIES_WARPS } AnCopies;
AnCopies an_copies(const IrType *t, unsigned *lane_mask);

/* The mma layout a `dot` gets on tensor cores (mma.sync m16n8k16, arch >= 80,
 * f16 or bf16 operands, f32 accumulator, M and N covered by the warps), or
 * NULL when it stays on the FMA path. */
const IrLayout *an_dot_mma_layout(IrCtx *ctx, const IrOp *dot, const AnGpuOptions *o);
/* The dot_op layout of operand opidx of a dot whose accumulator is mma. */
const IrLayout *an_dot_op_layout(IrCtx *ctx, const IrLayout *mma, int opidx, const IrType *elem);

/* How a pass names the tiles at the end of an operand's chain: tile(op,
 * arg, &regs, &transposed) is true when op is one (a prefetch candidate, a
 * slot read), and tells whether it is read back into registers and whether
 * its slot is transposed. */
typedef bool (*AnTileFn)(const IrOp *op, void *arg, bool *regs, bool *transposed);
/* The tile v comes from through single-use pure elementwise ops of one
 * block operand each (upcasts, scalings; at most 8), or NULL. */
const IrOp *an_elem_source(IrFunc *f, const IrValue *v, AnTileFn tile, void *arg, bool *regs, bool *transposed);
/* Whether the mma.sync dot on mma takes its 16-bit operands in K width 4
 * (4 consecutive K elements a register group, m16n8k32's layout, instead
 * of 2): both come from 8-bit tiles read into registers, A's slot [M][K]
 * (ldmatrix reads it), B's either way round (an fp8 dot upcast to fp16 on
 * sm_80, as tutorial 03 runs there). The layout pass gives those operands the layout, and prefetch
 * stages nothing for them. CTRITON_DOT_KW4=0: never. */
bool an_dot_kw4(IrFunc *f, const IrOp *dot, const IrLayout *mma, AnTileFn tile, void *arg);
/* 8-bit B tiles given as [K][N] go through slots as loaded and are read
 * byte by byte into mma.sync operands (an fp8 B upcast, an int8 or fp8 B
 * of m16n8k32), as Triton reads them. Opt-in with CTRITON_KN_READS=1 until
 * GPU-tested (part of the key); otherwise such a B stays a load staged
 * through shared memory each iteration. */
bool an_kn_reads_on(void);

/* Assigns a layout to every block value of f and inserts convert_layout
 * where an operand's layout is not the one its user needs. */
IrError *an_assign_layouts(IrFunc *f, const AnAxis *a, const AnGpuOptions *o);
/* Software pipelining through registers (prefetch.c): in `for` loops, a
 * load whose only use is a dot operand is issued one iteration ahead (the
 * first before the loop, the next at the top of the body, both masked off
 * past the end) and carried. On TTIR, before axis info. */
/* dotsplit.c: dots of input_precision tf32x3, bf16x3 and bf16x6 rewritten
 * into tf32 / bf16 dots and elementwise ops, fp8 dots that warpgroup MMA
 * does not take given f16 operands; nothing below arch 80. Returns how
 * many dots changed. */
int an_split_dots(IrFunc *f, const AnGpuOptions *o);

void an_prefetch_dot_loads(IrFunc *f, const AnGpuOptions *o, int num_stages);
/* Warp specialization (prefetch.c): the consumer warp count the kernel f
 * compiles with when a loop of it asks for warp specialization
 * ({warp_specialize}) and can get it (sm_90, num_stages >= 2, a top-level
 * loop whose dots take tensor-descriptor tiles): 8 for num_warps 4 when
 * every dot of the loop has M a multiple of 128 (two consumer warpgroups
 * split M, as Triton partitions the data), else num_warps; 0 when no loop
 * qualifies. an_prefetch_dot_loads then gives the first such loop one
 * producer warp (the module attribute ws_warps) that issues its tensor
 * copies, the consumers releasing each slot through an mbarrier. */
int an_ws_plan(IrFunc *f, const AnGpuOptions *o, int num_stages);
/* Descriptor stores (store {tma = 3}) of kernel f that the tensor memory
 * access unit can take (sm_90, a 2-D value the map's box covers: its rows
 * by one or more 128-byte column blocks, or one narrower block, swizzled
 * at that width) become tma_store (tmastore.c); true when any did. */
bool an_tma_stores(IrFunc *f, const AnGpuOptions *o);
/* After layouts: a tensor store of one column half of a block (tutorial
 * 09's EPILOGUE_SUBTILE: split(permute(reshape(X, [M, 2, N/2]), [0, 2, 1])))
 * stores that window of X itself ({col0, cols}) when every register of X
 * lies inside or outside it in all threads alike (an accumulator's layout):
 * the backend writes those registers into the staging, and the conversion,
 * reshape, permute and split go dead. Whether it changed anything. */
bool an_tma_store_windows(IrFunc *f, const AnGpuOptions *o);
/* For each register r of a 2-D block type (in[r], at most cap of them)
 * whether its column lies in [c0, c0 + w); the number of registers, or -1
 * when some register lies inside in one thread and outside in another. */
int an_col_window(const IrType *t, int num_warps, int warp_size, int64_t c0, int64_t w, bool *in, int cap);
bool an_tma_store_ok(const IrFunc *f, const IrOp *op, const AnGpuOptions *o);
/* Stores of kernel f whose pointers run contiguously along a dim but whose
 * alignment (or whose mask's constancy) along it rests on scalars the axis
 * info cannot tell (a loaded base pointer or leading dimension, a bound of
 * unknown divisibility) go in an `if` on those scalars being multiples of
 * what a 16-byte vector needs: the first branch stores through pointers and
 * a mask rebuilt from multiple_of-hinted scalars, the second as before
 * (storever.c). Only stores of a dot's result (epilogues, whose values are
 * converted for the store anyway) unless all. Whether any store was
 * versioned. */
bool an_version_stores(IrFunc *f, bool all);
/* A copy of store st built at b (in a branch of an `if` beside st): the
 * ops of st's block its pointers and mask are made of (address arithmetic,
 * compares, constants) built again there, with from[i] replaced by to[i];
 * st's attributes but the tensor-map tail's. */
IrOp *an_store_copy(IrBuilder *b, IrOp *st, int nsub, IrValue *const *from, IrValue *const *to);
/* `if cond` (no results) built at b before store st; then and els are
 * set to build at the ends of its two regions, at st's location. */
IrOp *an_store_if(IrBuilder *b, const IrOp *st, IrValue *cond, IrBuilder *then, IrBuilder *els);
/* Thread locality (locality.c): a reduction in a for loop whose result only
 * accumulates into a loop-carried value (acc = acc op reduce(x)) reduces
 * only each thread's own elements per iteration; the loop carries those
 * partials and one cross-thread reduction after it finishes the job. On
 * TTGIR (x in a blocked layout with a cross-thread part along the axis). */
void an_thread_locality(IrFunc *f);
/* Register-A slices (rslice.c): a warpgroup MMA whose A a loop computes in
 * registers from a slot (a cast tile) split into one MMA per K step, so
 * that the MMAs stay in flight while the next step's A is read (sm_90). */
void an_slice_register_dots(IrFunc *f, const AnGpuOptions *o);
/* The blocked layout of the view [..., A / ept, ..., ept] of block type t
 * (blocked) in which the new last dim holds the ept elements each thread
 * owns along axis and every thread keeps its registers (shape3: the view's
 * shape); NULL when t is not blocked or is replicated along axis. */
const IrLayout *an_thread_local_view(IrCtx *ctx, const IrType *t, int axis, int64_t *shape3);
/* Whether op is a reshape {can_reorder} to such a view: it moves no data,
 * each thread keeps its registers (no scratch; the backend copies them). */
bool an_reshape_in_registers(const IrOp *op);
/* Register renamings (regperm.c): whether result k of op (reshape, trans,
 * split, join, convert_layout) takes each of its registers, in every thread
 * of num_warps warps, from one register of the same thread's source at the
 * same index in every thread; then perm[r] (when perm is not NULL, room for
 * the result's registers) is that source register, counted over the
 * operands one after the other (join: operand 1's registers follow operand
 * 0's). */
bool an_reg_permutation(const IrOp *op, int k, int num_warps, int warp_size, int *perm);
/* Whether every result of op is such a renaming and the backend lowers it
 * so (conversions to dot operands excepted): no scratch, no barrier. */
bool an_regs_only(const IrOp *op, int num_warps, int warp_size);
/* The only user of v when it has exactly one and that one is in v's block
 * (after its definition), else NULL. */
IrOp *an_only_user(IrFunc *f, IrValue *v);
/* Whether convert_layout op moves a vector by warp shuffles: its source
 * gives each of its S elements to a lane of its own in every warp (one
 * register a thread, lane e * lane_stride holding element e, the warps
 * holding copies), so each destination register is one shfl.idx from the
 * lane of its element; no scratch, no barrier (attention backward's m and
 * Di, loaded once per iteration and read in a slice of the MMA layout).
 * Opt-in while untimed: CTRITON_SHFL_CONVERT=1 (part of the cache key). */
bool an_warp_shuffle(const IrOp *op, int warp_size, int *lane_stride);
/* Whether a reshape from block type src to dst (same numel, row-major
 * order kept) is such a renaming. */
bool an_reshape_renaming(const IrType *src, const IrType *dst, int num_warps, int warp_size);
/* Narrowing float casts of the results of trans, reshape and split (both
 * halves cast alike) move before them: the data moved (through shared
 * memory when the layouts ask it) is half as wide. The epilogue of a
 * subtiled matmul (reshape, permute, split, then .to(fp16)) casts the
 * accumulator first. Run before layouts are assigned (an_assign_layouts
 * does). */
void an_casts_first(IrFunc *f);
/* Removes conversions that are identities, folds convert(convert(x)),
 * rematerialises converted constants/splats/ranges, then drops dead pure ops. */
void an_remove_converts(IrFunc *f);

/* ------------------------------------------------------------------------- */
/* Calls of noinline functions (call.c)                                      */
/* ------------------------------------------------------------------------- */

/* The function a `call` op names, or NULL. */
IrFunc *an_callee(const IrOp *call);
/* The functions the kernel reaches through calls, the kernel included,
 * callees before their callers (*funcs in the arena, *n of them). A call
 * of an unknown function or a recursive call is an error (then *n = 0). */
IrError *an_call_order(IrFunc *kernel, IrFunc ***funcs, int *n);
/* The type a value of type t has where it crosses a call (argument,
 * parameter, result): a block gets the canonical blocked layout of its
 * shape, element type and the number of warps (see call.c); scalars as is. */
const IrType *an_call_type(IrCtx *ctx, const IrType *t, const AnGpuOptions *o);
/* The shared bytes function f needs below the base its caller passes (its
 * "shared" attribute, set by an_allocate_shared; 0 when none). */
int64_t an_func_shared(const IrFunc *f);
/* Whether op (or an op nested in it, or a function it calls) uses shared
 * memory; before allocation too. */
bool an_uses_shared(const IrOp *op, const AnGpuOptions *o);

/* ------------------------------------------------------------------------- */
/* Global scratch memory (gscratch.c)                                        */
/* ------------------------------------------------------------------------- */

/* A tensor map's bytes (and its alignment in global scratch). */
enum { AN_TMAP_BYTES = 128 };
/* Gives every tensormap_create of kernel f whose map a tma_copy reads a
 * "gscratch" attribute (its byte offset in the program's slice; the others
 * lose theirs), sets f's "global_scratch" attribute to the bytes a program
 * needs (none when 0) and returns them. */
int64_t an_allocate_global_scratch(IrFunc *f);
/* Whether v is the tensor map a tma_copy or tma_store in b (or a region
 * in it) goes through: such a map is written (made in the kernel) or
 * encoded at launch (a parameter). */
bool an_tmap_used(const IrBlock *b, const IrValue *v);
/* f's global scratch bytes per program (its "global_scratch"; 0: none). */
int64_t an_global_scratch(const IrFunc *f);

/* ------------------------------------------------------------------------- */
/* Shared memory and barriers (alloc.c)                                      */
/* ------------------------------------------------------------------------- */

/* Bytes of shared scratch op needs while it runs (0 for most ops). The
 * backend lays its data out inside that range as documented in alloc.c. */
int64_t an_scratch_bytes(const IrOp *op, const AnGpuOptions *o);
/* The device's limit on dynamic shared memory per block (the opt-in
 * maximum) for compute capability arch * 10. */
int64_t an_shared_limit(int arch);
/* The scratch bytes of an atomic_rmw / atomic_cas: 0 unless its old value is
 * used and held by threads that did not do the atomic (see alloc.c). */
int64_t an_atomic_scratch(const IrOp *op);
/* Gives every op with scratch a "scratch_offset" attribute (byte offset in the
 * dynamic shared block, or, in a called function, from the base its caller
 * passes; buffers whose live ranges overlap never overlap) and returns the
 * total bytes. A call is a scratch user of its callee's total, so callees
 * are allocated first; a called function keeps its total as its "shared"
 * attribute. */
int64_t an_allocate_shared(IrFunc *f, const AnGpuOptions *o);
/* Inserts `barrier` ops before scratch users that may overwrite shared memory
 * another scratch user may still read (each scratch user itself puts one
 * barrier between its writes and its reads). */
void an_insert_barriers(IrFunc *f, const AnGpuOptions *o);
/* Defers the tensor stores of a flattened nest's loop (the next store, or
 * the kernel's exit, waits for the unit to read the staging: "deferred"
 * on the store, "tma_store_deferred" on the function) when their shared
 * staging, live for the whole kernel, fits; before an_insert_barriers. */
void an_plan_tma_stores(IrFunc *f, const AnGpuOptions *o);
bool an_tma_store_deferred(const IrOp *op);
/* op and the op after it convert the A and B tiles of a dot to dot_op
 * layouts through shared memory: they get disjoint scratch, no barrier
 * between them, and the backend writes both tiles, waits at one barrier,
 * then reads both. */
bool an_staged_pair(const IrOp *op);
/* The bytes a conversion of `bytes` takes at a time in a flattened nest's
 * epilogue: rounds of at most 32 KiB, each whole 128-byte lines. */
int64_t an_round_bytes(int64_t bytes);

#endif
