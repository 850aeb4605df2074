/* ir.h: ctriton's block-level SSA IR, the one interface of the ir/ folder.
 *
 * A compilation owns one IrCtx: an arena from which every type, layout,
 * attribute, op, value, block and string of that compilation is allocated,
 * freed at once by ir_ctx_free(). Types and layouts are interned in the
 * context, so two types are equal exactly when their pointers are.
 *
 * Shape of a program: an IrModule holds IrFuncs; a function body is an
 * IrBlock whose arguments are the parameters. Control flow is structured:
 * ops such as `for`, `if`, `while`, `reduce` own regions, and each region is a
 * single IrBlock with arguments, ended by a terminator (`yield`, `condition`,
 * `return`). A value is used only after its definition, in the same block or
 * in a block nested inside it.
 *
 * Errors are values: functions that can fail return an IrError* (NULL on
 * success) that lives in the context. Nothing here exits the process.
 *
 * Sections follow the source files: arena/ctx/types/layouts (ir.c), ops and
 * builder (ir.c), printer (print.c), parser (parse.c), verifier (verify.c),
 * passes (passes.c).
 */
#ifndef CTRITON_IR_H
#define CTRITON_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------------------- */
/* Op table (ops.def)                                                        */
/* ------------------------------------------------------------------------- */

enum {
	IR_PURE = 1u << 0, /* no side effect */
	IR_COMM = 1u << 1, /* commutative */
	IR_ELEM = 1u << 2, /* elementwise */
	IR_SIDE = 1u << 3, /* side effect */
	IR_TERM = 1u << 4, /* terminator */
	IR_REGS = 1u << 5, /* owns regions */
};

typedef enum IrOpcode {
#define OP(e, name, minops, maxops, nres, nreg, flags) OP_##e,
#include "ops.def"
#undef OP
	OP_COUNT_
} IrOpcode;

typedef struct IrOpInfo {
	const char *name;
	int minops, maxops; /* maxops -1: variadic */
	int nres;           /* -1: variadic */
	int nregions;
	unsigned flags;
} IrOpInfo;

/* The row of ops.def for opc. */
const IrOpInfo *ir_opinfo(IrOpcode opc);
/* The opcode named name, or -1. */
int ir_opcode_by_name(const char *name);

/* ------------------------------------------------------------------------- */
/* Context, arena, errors, locations (ir.c)                                  */
/* ------------------------------------------------------------------------- */

typedef struct IrCtx IrCtx;

typedef struct IrLoc {
	const char *file; /* interned in the ctx, or NULL when unknown */
	int line, col;    /* 1-based; 0 when unknown */
} IrLoc;

typedef enum IrErrCode {
	IR_ERR_NONE = 0,
	IR_ERR_PARSE,     /* malformed IR text */
	IR_ERR_VERIFY,    /* well-formed text, invalid program */
	IR_ERR_TYPE,      /* type or shape mismatch (frontend) */
	IR_ERR_SYNTAX,    /* unsupported source construct (frontend) */
	IR_ERR_VALUE,     /* bad value: non-power-of-two shape, bad argument */
	IR_ERR_RESOURCE,  /* out of resources (shared memory, registers) */
	IR_ERR_BACKEND,   /* LLVM or driver failure */
	IR_ERR_INTERNAL,  /* broken invariant */
} IrErrCode;

typedef struct IrError {
	IrErrCode code;
	char *msg; /* owned by the ctx */
	IrLoc loc;
} IrError;

/* A new, empty compilation context; NULL only when out of memory. */
IrCtx *ir_ctx_new(void);
/* Frees the context and everything allocated from it. */
void ir_ctx_free(IrCtx *ctx);

/* Zeroed arena memory (aligned for any type); never NULL (aborts on OOM). */
void *ir_alloc(IrCtx *ctx, size_t size);
/* A copy of s (n bytes, NUL added) in the arena. */
char *ir_strndup(IrCtx *ctx, const char *s, size_t n);
char *ir_strdup(IrCtx *ctx, const char *s);
/* The interned copy of s: equal strings give equal pointers. */
const char *ir_intern(IrCtx *ctx, const char *s);
/* printf into the arena. */
char *ir_fmt(IrCtx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *ir_vfmt(IrCtx *ctx, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* Records an error in the ctx and returns it. The first error is kept as
 * ir_ctx_error(); later ones are returned but not kept. */
IrError *ir_error(IrCtx *ctx, IrErrCode code, IrLoc loc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
IrError *ir_ctx_error(IrCtx *ctx);
void ir_ctx_clear_error(IrCtx *ctx);
/* "file:line:col: msg" in the arena. */
char *ir_error_str(IrCtx *ctx, const IrError *err);

IrLoc ir_loc(IrCtx *ctx, const char *file, int line, int col);

/* ------------------------------------------------------------------------- */
/* Types and layouts (ir.c)                                                  */
/* ------------------------------------------------------------------------- */

/* Numbered explicitly: these codes cross into cache keys. */
typedef enum IrTypeKind {
	TY_I1 = 0,
	TY_I8 = 1,
	TY_I16 = 2,
	TY_I32 = 3,
	TY_I64 = 4,
	TY_U8 = 5,
	TY_U16 = 6,
	TY_U32 = 7,
	TY_U64 = 8,
	TY_F16 = 9,
	TY_BF16 = 10,
	TY_F32 = 11,
	TY_F64 = 12,
	TY_F8E4M3 = 13,
	TY_F8E5M2 = 14,
	TY_PTR = 15,
	TY_BLOCK = 16,
	TY_VOID = 17,
	/* fp8 formats beyond OCP's: e4m3 with bias 15 (no inf, S.1111.111 NaN,
	 * max 1.75), and the "fnuz" ones (no inf, no -0, NaN 0x80): e4m3 with
	 * bias 8 (max 240), e5m2 with bias 16 (max 57344) */
	TY_F8E4B15 = 18,
	TY_F8E4B8 = 19,
	TY_F8E5B16 = 20,
	TY_KIND_COUNT_
} IrTypeKind;

#define IR_MAX_RANK 16
#define IR_MAX_NUMEL (1 << 20)

typedef enum IrLayoutKind {
	LAYOUT_BLOCKED = 0, /* each thread owns size_per_thread contiguous elements */
	LAYOUT_SLICE = 1,   /* parent layout with dim removed (result of reduce) */
	LAYOUT_SHARED = 2,  /* in shared memory: order, vec/per_phase/max_phase swizzle */
	LAYOUT_MMA = 3,     /* accumulator of mma.sync (version 2) / wgmma (3) */
	LAYOUT_DOT_OP = 4,  /* operand opidx (0 = A, 1 = B) of a parent mma layout */
} IrLayoutKind;

typedef struct IrLayout IrLayout;
struct IrLayout {
	IrLayoutKind kind;
	int rank; /* of the block it lays out: slice = parent's - 1, dot_op = parent's */
	/* blocked */
	int size_per_thread[IR_MAX_RANK];
	int threads_per_warp[IR_MAX_RANK];
	int warps_per_cta[IR_MAX_RANK];
	int order[IR_MAX_RANK]; /* fastest-varying dim first (blocked, shared) */
	/* slice: dim removed from parent; dot_op: opidx, k_width of parent */
	int dim;
	const IrLayout *parent;
	/* mma: version_major (2 mma.sync, 3 wgmma), version_minor, instr_shape
	 * (trailing zeros unused: [16, 8] for mma.sync, [16, N, 16] for wgmma) */
	int version_major, version_minor;
	int instr_shape[3];
	/* shared: swizzle */
	int vec, per_phase, max_phase;
	/* dot_op */
	int opidx, k_width;
	int id; /* interning index */
};

typedef struct IrType IrType;
struct IrType {
	IrTypeKind kind;
	int id;                /* dense index, unique per ctx */
	const IrType *elem;    /* ptr: pointee; block: element (scalar or ptr) */
	int addrspace;         /* ptr: 1 global (default), 3 shared */
	bool is_const;         /* ptr: read-only (Triton's tl.const): no store or atomic through it */
	int rank;              /* block */
	int64_t shape[IR_MAX_RANK];
	int64_t numel;         /* block: product of shape; scalars: 1 */
	const IrLayout *layout; /* block: NULL in TTIR */
};

/* Interned scalar type of kind k (not TY_PTR/TY_BLOCK). */
const IrType *ir_type(IrCtx *ctx, IrTypeKind k);
const IrType *ir_type_ptr(IrCtx *ctx, const IrType *pointee, int addrspace);
/* The pointer type with is_const set as given (printed ptr<T, const>). */
const IrType *ir_type_ptr_const(IrCtx *ctx, const IrType *pointee, int addrspace, bool is_const);
/* Block type; shape dims must be powers of two with numel <= IR_MAX_NUMEL,
 * elem a scalar or pointer type. Returns NULL when the shape is invalid
 * (callers report the error with a location). */
const IrType *ir_type_block(IrCtx *ctx, const IrType *elem, int rank, const int64_t *shape,
			    const IrLayout *layout);
/* The same block type with another layout (NULL to drop it); scalars as is. */
const IrType *ir_type_with_layout(IrCtx *ctx, const IrType *t, const IrLayout *layout);
/* Block of the same shape and layout as like, element elem; scalar elem when like is scalar. */
const IrType *ir_type_like(IrCtx *ctx, const IrType *like, const IrType *elem);
/* Interned layout equal to *proto (proto->id ignored). */
const IrLayout *ir_layout(IrCtx *ctx, const IrLayout *proto);

/* Element type of a block, the type itself otherwise. */
const IrType *ir_scalar(const IrType *t);
bool ir_is_block(const IrType *t);
bool ir_is_int(const IrType *t);    /* scalar kind: i1..u64 (blocks: use ir_scalar) */
bool ir_is_signed(const IrType *t); /* i8..i64 (i1 counts as unsigned) */
bool ir_is_float(const IrType *t);  /* f16 bf16 f32 f64 fp8 */
bool ir_is_fp8(const IrType *t);    /* the 8-bit float kinds (scalar kind) */
bool ir_is_ptr(const IrType *t);
int ir_type_bits(const IrType *t);  /* scalar width; pointers 64 */
/* Textual name of a scalar kind ("i32", "f8e4m3", ...), NULL for ptr/block. */
const char *ir_kind_name(IrTypeKind k);
/* Scalar kind by name, or -1. */
int ir_kind_by_name(const char *name);

/* ------------------------------------------------------------------------- */
/* Attributes                                                                */
/* ------------------------------------------------------------------------- */

typedef enum IrAttrKind {
	ATTR_INT = 0,   /* i; u64 values >= 2^63 are stored wrapped (two's complement) */
	ATTR_FLOAT = 1, /* f; printed so that it round-trips (inf, -inf, nan too) */
	ATTR_BOOL = 2,  /* i = 0/1, printed true/false */
	ATTR_STR = 3,   /* s */
	ATTR_INTS = 4,  /* n, ints */
	ATTR_TYPE = 5,  /* type */
	ATTR_SYM = 6,   /* s: a function name, printed @name */
} IrAttrKind;

typedef struct IrAttr {
	const char *name; /* interned */
	IrAttrKind kind;
	int64_t i;
	double f;
	const char *s;
	int n;
	int64_t *ints;
	const IrType *type;
} IrAttr;

/* ------------------------------------------------------------------------- */
/* Values, ops, blocks, functions, modules (ir.c)                            */
/* ------------------------------------------------------------------------- */

typedef struct IrValue IrValue;
typedef struct IrOp IrOp;
typedef struct IrBlock IrBlock;
typedef struct IrFunc IrFunc;
typedef struct IrModule IrModule;

struct IrValue {
	const IrType *type;
	IrOp *def;      /* defining op, NULL for a block argument */
	IrBlock *owner; /* block of a block argument */
	int index;      /* result index, or argument index */
	int id;         /* scratch numbering (printer, passes) */
	const char *name; /* optional source name hint (not printed) */
};

struct IrOp {
	IrOpcode opc;
	IrLoc loc;
	int nops;
	IrValue **ops;
	int nres;
	IrValue *res; /* array of nres values */
	int nregions;
	IrBlock **regions;
	int nattrs;
	IrAttr *attrs;
	IrBlock *parent;
	IrOp *prev, *next;
	int id; /* scratch */
};

struct IrBlock {
	int nargs, capargs;
	IrValue **args;
	IrOp *first, *last;
	IrOp *parent_op; /* op owning this region; NULL for a function body */
	IrFunc *func;    /* function containing this block */
};

/* Per-parameter attributes of a function: divisibility (16 when the
 * specialization says so), and any other named attribute. */
typedef struct IrParam {
	const char *name; /* source name, may be NULL */
	int nattrs;
	IrAttr *attrs;
} IrParam;

struct IrFunc {
	IrModule *module;
	const char *name;
	IrLoc loc;
	bool is_kernel;   /* an entry point (printed `kernel`) */
	bool noinline;
	IrBlock *body;    /* args are the parameters */
	IrParam *params;  /* body->nargs of them */
	int nres;
	const IrType **restys;
	int nattrs;
	IrAttr *attrs;
};

struct IrModule {
	IrCtx *ctx;
	int nfuncs, capfuncs;
	IrFunc **funcs;
	int nattrs;
	IrAttr *attrs; /* module attributes: num_warps, target, ... */
};

IrModule *ir_module_new(IrCtx *ctx);
/* A new function with parameters of the given types, appended to m. */
IrFunc *ir_func_new(IrModule *m, const char *name, int nparams, const IrType **ptys, int nres,
		    const IrType **restys, IrLoc loc);
IrFunc *ir_module_find(const IrModule *m, const char *name);

/* An op not yet in any block: operands copied, results typed by restys,
 * nregions empty blocks created (their arguments added with ir_block_add_arg). */
IrOp *ir_op_new(IrCtx *ctx, IrOpcode opc, int nops, IrValue *const *ops, int nres,
		const IrType *const *restys, int nregions, IrLoc loc);
IrBlock *ir_block_new(IrCtx *ctx);
/* Makes blk (built on its own, e.g. before the op's results were known)
 * region i of op, replacing the empty block ir_op_new made. */
void ir_op_set_region(IrOp *op, int i, IrBlock *blk);
IrValue *ir_block_add_arg(IrCtx *ctx, IrBlock *b, const IrType *t);
/* Links op at the end of b / before `before` (which is in b). */
void ir_block_append(IrBlock *b, IrOp *op);
void ir_block_insert_before(IrBlock *b, IrOp *before, IrOp *op);
void ir_op_unlink(IrOp *op);
void ir_op_set_operand(IrOp *op, int i, IrValue *v);
/* Rebuilds the `for` op loop with n more loop-carried values: inits[i]
 * enter the loop and yields[i] are yielded for them by the body's yield
 * (which is replaced). Their body arguments must already be the last n
 * arguments of the body (ir_block_add_arg); the new results are the last n.
 * The new loop keeps loop's body, attributes and location, takes its place
 * and its results' uses; loop is unlinked. Returns the new loop. */
/* Rebuilds the `for` op loop without its loop-carried value i (init
 * operand 3 + i, body argument 1 + i, yield operand i, result i), which
 * nothing may use any more but the yield; returns the new op. */
IrOp *ir_for_drop_carried(IrFunc *f, IrOp *loop, int i);
/* Rebuilds the `if` op without its result i (operand i of both regions'
 * yields), which nothing may use; returns the new op. */
IrOp *ir_if_drop_result(IrFunc *f, IrOp *op, int i);
IrOp *ir_for_add_carried(IrFunc *f, IrOp *loop, int n, IrValue *const *inits,
			 IrValue *const *yields);
/* Replaces every use of from by to inside f (including nested regions). */
void ir_replace_all_uses(IrFunc *f, IrValue *from, IrValue *to);
/* Number of uses of v in f. */
int ir_count_uses(IrFunc *f, const IrValue *v);
/* The block's terminator, or NULL. */
IrOp *ir_block_terminator(const IrBlock *b);

/* Attributes: set (replacing one of the same name) and get. */
void ir_set_attr_int(IrCtx *ctx, int *nattrs, IrAttr **attrs, const char *name, int64_t v);
IrAttr *ir_set_attr(IrCtx *ctx, int *nattrs, IrAttr **attrs, const IrAttr *a);
void ir_op_set_int(IrCtx *ctx, IrOp *op, const char *name, int64_t v);
void ir_op_set_bool(IrCtx *ctx, IrOp *op, const char *name, bool v);
void ir_op_set_float(IrCtx *ctx, IrOp *op, const char *name, double v);
void ir_op_set_str(IrCtx *ctx, IrOp *op, const char *name, const char *v);
void ir_op_set_ints(IrCtx *ctx, IrOp *op, const char *name, int n, const int64_t *v);
void ir_op_set_sym(IrCtx *ctx, IrOp *op, const char *name, const char *sym);
/* Removes op's attribute name, if it has one. */
void ir_op_remove_attr(IrOp *op, const char *name);
/* dst's attributes become a copy of src's (a clone's). */
void ir_op_copy_attrs(IrCtx *ctx, IrOp *dst, const IrOp *src);
const IrAttr *ir_find_attr(int nattrs, const IrAttr *attrs, const char *name);
const IrAttr *ir_op_attr(const IrOp *op, const char *name);
int64_t ir_op_int(const IrOp *op, const char *name, int64_t dflt);   /* int or bool */
double ir_op_float(const IrOp *op, const char *name, double dflt);   /* float or int */
const char *ir_op_str(const IrOp *op, const char *name, const char *dflt); /* str or sym */
/* Whether op has no side effect, so CSE / DCE may merge or drop it: its row
 * is IR_PURE, or it is an elementwise_inline_asm with {pure = true}, or a
 * map_elementwise whose region holds only pure ops. */
bool ir_op_pure(const IrOp *op);
/* Pure, or an if/for/while whose regions hold only such ops (and
 * terminators): moving it changes no memory and no synchronization. */
bool ir_op_effect_free(const IrOp *op);
/* elementwise_inline_asm: how many elements of type t (its scalar) share
 * one 32-bit asm register when an invocation takes pack elements: the
 * largest power of two <= min(32 / bits, pack) that divides pack (1 for 32-
 * and 64-bit types and pointers). */
int ir_asm_per_reg(const IrType *t, int64_t pack);
/* elementwise_inline_asm: the number of output and input entries of an LLVM
 * constraint string (comma-separated; "=..." outputs, "~{...}" clobbers not
 * counted, whitespace ignored); false when an entry is empty or indirect ('*'). */
bool ir_asm_constraint_counts(const char *cons, int *nout, int *nin);

/* Walks every op of f in program order (parents before nested ops). */
typedef void (*IrWalkFn)(IrOp *op, void *user);
void ir_walk_func(IrFunc *f, IrWalkFn fn, void *user);
void ir_walk_block(IrBlock *b, IrWalkFn fn, void *user);

/* ------------------------------------------------------------------------- */
/* Builder (ir.c): creates ops at an insertion point, with a current loc.    */
/* The builder does not type-check: the frontend does, the verifier checks.  */
/* ------------------------------------------------------------------------- */

typedef struct IrBuilder {
	IrCtx *ctx;
	IrBlock *block; /* insertion block */
	IrOp *before;   /* insert before this op; NULL: at the end */
	IrLoc loc;      /* location given to new ops */
} IrBuilder;

void ir_builder_init(IrBuilder *b, IrCtx *ctx);
void ir_builder_at_end(IrBuilder *b, IrBlock *blk);
void ir_builder_before(IrBuilder *b, IrOp *op);
/* Creates and inserts an op (see ir_op_new). */
IrOp *ir_build(IrBuilder *b, IrOpcode opc, int nops, IrValue *const *ops, int nres,
	       const IrType *const *restys, int nregions);
/* One-result shorthand: returns the result. */
IrValue *ir_build1(IrBuilder *b, IrOpcode opc, const IrType *rty, int nops, IrValue *const *ops);

IrValue *ir_const_int(IrBuilder *b, const IrType *t, int64_t v);   /* t scalar or block */
IrValue *ir_const_float(IrBuilder *b, const IrType *t, double v);
IrValue *ir_unary(IrBuilder *b, IrOpcode opc, IrValue *x);         /* result type of x */
IrValue *ir_binary(IrBuilder *b, IrOpcode opc, IrValue *x, IrValue *y); /* result type of x */
IrValue *ir_cmp(IrBuilder *b, const char *pred, IrValue *x, IrValue *y);
IrValue *ir_select(IrBuilder *b, IrValue *c, IrValue *x, IrValue *y);
IrValue *ir_cast(IrBuilder *b, IrOpcode opc, IrValue *x, const IrType *to);
IrValue *ir_splat(IrBuilder *b, IrValue *x, const IrType *block_ty);
IrValue *ir_broadcast(IrBuilder *b, IrValue *x, const IrType *block_ty);
IrValue *ir_expand_dims(IrBuilder *b, IrValue *x, int axis);
IrValue *ir_make_range(IrBuilder *b, int64_t start, int64_t end);
IrValue *ir_program_id(IrBuilder *b, int axis);
IrValue *ir_addptr(IrBuilder *b, IrValue *p, IrValue *off);
/* other (the value of masked-off lanes) requires a mask. */
IrValue *ir_load(IrBuilder *b, IrValue *p, IrValue *mask, IrValue *other);
IrOp *ir_store(IrBuilder *b, IrValue *p, IrValue *v, IrValue *mask);
IrOp *ir_yield(IrBuilder *b, int n, IrValue *const *vals);
IrOp *ir_return(IrBuilder *b, int n, IrValue *const *vals);

/* ------------------------------------------------------------------------- */
/* Printer (print.c)                                                         */
/* ------------------------------------------------------------------------- */

/* The textual form of a module / function / type / layout (arena strings).
 * The printer numbers values %0, %1, ... in program order; the text it
 * produces is what ir_parse reads back, byte for byte. */
char *ir_print_module(const IrModule *m);
char *ir_print_func(const IrFunc *f);
char *ir_print_type(IrCtx *ctx, const IrType *t);
char *ir_print_layout(IrCtx *ctx, const IrLayout *l);
void ir_dump_op(FILE *out, const IrOp *op); /* debugging aid */
/* The module in Triton's MLIR spelling (print_mlir.c): dialect-qualified op
 * names, tensor<..> and !tt.ptr<..> types, reduce and scan in generic form,
 * loop attributes as tt.flatten, tt.num_stages = 2 : i32. target NULL: the
 * TTIR view, a bare `module {`; else the TTGIR view: layout aliases, then
 * the module attributes with target and threads_per_warp. A view that is
 * not parsed back; locations are left out. Arena string. */
char *ir_print_mlir(const IrModule *m, const char *target, int threads_per_warp);

/* ------------------------------------------------------------------------- */
/* Parser (parse.c)                                                          */
/* ------------------------------------------------------------------------- */

/* Parses IR text into a new module. filename names the text in errors
 * ("file:line:col: message"). On failure returns NULL and *err is set. */
IrModule *ir_parse(IrCtx *ctx, const char *filename, const char *text, IrError **err);
/* Parses one type ("block<128x64xf16>"), NULL on error. */
const IrType *ir_parse_type(IrCtx *ctx, const char *text);

/* ------------------------------------------------------------------------- */
/* Verifier (verify.c)                                                       */
/* ------------------------------------------------------------------------- */

/* Checks types, shapes, operand/result/region counts, attributes, region
 * terminators, dominance, call signatures. NULL when the module is valid;
 * otherwise the first problem, located at the offending op. It may intern
 * types (e.g. i1 masks) in the ctx; it changes nothing else. */
IrError *ir_verify(IrModule *m);
IrError *ir_verify_func(IrFunc *f);

/* ------------------------------------------------------------------------- */
/* Passes (passes.c)                                                         */
/* ------------------------------------------------------------------------- */

/* Removes pure ops (ir_op_pure) whose results are unused, including chains of
 * them and those inside regions. NULL on success. */
IrError *ir_dce(IrModule *m);
/* Merges each pure op without regions into an earlier identical one that
 * dominates it (same opcode, operands, attributes, result types; either
 * operand order for a commutative pair). The merged op is removed; its uses
 * take the earlier op's results. NULL on success. */
IrError *ir_cse(IrModule *m);
/* ir_cse restricted to ops whose results are all scalars: block values keep
 * one copy per source expression, so each copy can take the layout its own
 * uses want. */
IrError *ir_cse_scalars(IrModule *m);
/* Folds x + dot(a, b, 0) into dot(a, b, x) where the dot's result has no
 * other use and x is available at the dot (Triton's combine: `acc +=
 * tl.dot(a, b)` accumulates in place, in the accumulator's layout). */
IrError *ir_combine_dot_add(IrModule *m);
/* Whether v is a constant zero (int or float; a block constant or a splat
 * of a scalar one): a fresh accumulator. */
bool ir_is_zero_const(const IrValue *v);
/* Rewrites sum(broadcast(x[:, :, None]) * broadcast(y[None, :, :]), axis=1)
 * into dot(x, y, 0) with input_precision "ieee" (Triton's combine), for f32
 * blocks with M, K and N of at least 16: the elementwise form holds M x K x N
 * products, the dot none. NULL on success. */
IrError *ir_combine_mul_reduce(IrModule *m);
/* reduce_lanes.c: a reduce along the last axis in a for body whose result only accumulates
 * into a loop-carried value (acc = acc op reduce(x), op the combiner: add,
 * mul, min, max, and, or, xor; the last axis at least 2 * lanes long): the
 * loop carries `lanes` partial results per row instead (x reduced as [...,
 * A / lanes, lanes]), reduced once after the loop and combined with the
 * initial value. lanes: a power of two. Float sums are regrouped (as any
 * tree reduction regroups them). NULL on success. */
IrError *ir_loop_reduce_lanes(IrModule *m, int lanes);
/* The pattern ir_loop_reduce_lanes and the GPU's thread-locality pass
 * (analysis/locality.c) rewrite: red, a one-input reduce in loop's body
 * whose combiner is one regroupable op (comb: add, mul, min, max, and, or,
 * xor), and whose result only feeds upd = acc (op) red (either order, ri
 * the operand that is red), acc the body argument of carried value ci,
 * used only there, and upd only yielded into that value. */
typedef struct IrLoopAccum {
	IrOp *loop, *red, *upd;
	const IrOp *comb;
	int ri, ci;
} IrLoopAccum;
bool ir_loop_accum_match(IrFunc *f, IrOp *loop, IrOp *red, IrLoopAccum *m);
/* Rewrites a matched m: red's input is viewed as `view` (a reshape, with
 * can_reorder when reorder) and reduced along part_axis to `part` each
 * iteration; the loop carries those partials (from comb's neutral value)
 * instead of acc; after the loop they are reduced along post_axis to
 * `post`, converted to red's result type when post is another (a layout),
 * and combined with the initial value, which replaces the loop's result. */
void ir_loop_accum_rewrite(IrFunc *f, const IrLoopAccum *m, const IrType *view, bool reorder, int part_axis,
			   const IrType *part, int post_axis, const IrType *post);

/* loops.c: the loop transformations tl.range asks for. ir_unroll_loops:
 * each `for` with {loop_unroll_factor = U > 1} becomes a loop running U
 * copies of its body per iteration over the first tc - tc % U iterations,
 * then the original loop ({num_stages = 1}) over the rest; constant bounds
 * fold the split. ir_flatten_loops: a `for` with {flatten = true} whose
 * body holds one inner `for` becomes one loop over all the inner iterations
 * (each outer one counted max(inner trip count, 1) times), the code around
 * the inner loop under `if`s on the first and last of them; a nest whose
 * inner bounds are not pure functions of the outer induction value and
 * loop invariants is left alone, and so is one with a dot unless dot_nests
 * (then its inner bounds must be invariant, its prologue pure, its tiles
 * pointer loads (no descriptor, no warp_specialize), its carried values
 * starting from constants (accumulators), the module's num_stages at least
 * 2, and with smem_limit > 0, that many stages of the inner loop's tiles
 * and the block its epilogue stores must fit that many bytes of shared
 * memory: the GPU keeps both while the fused loop runs; where the inner
 * loop runs no iteration, the nest runs as it is). NULL on success. */
IrError *ir_unroll_loops(IrModule *m);
/* dot_ok (may be NULL: every dot), with its user pointer: whether a nest
 * whose inner loop holds that dot may be fused (the GPU pipeline: only
 * dots on warpgroup MMA). */
typedef bool (*IrDotOk)(const IrOp *dot, void *user);
IrError *ir_flatten_loops(IrModule *m, bool dot_nests, int64_t smem_limit, IrDotOk dot_ok, void *user);
/* With dot_nests (as ir_flatten_loops takes it), in the inner loop of each
 * `for` with {flatten = true}, where that loop's body holds a dot: an
 * address addptr(base, off)
 * of the body whose offset block is inv + splat(s), inv invariant in the
 * loop (through add, sub, multiplies by invariant uniform values,
 * broadcast, expand_dims) and s a scalar the body computes (ki * BK), is
 * made addptr(addptr(base, inv), splat(s)), the inner addptr before the
 * loop: one scalar step per iteration instead of the whole offset. NULL on
 * success. */
IrError *ir_hoist_addresses(IrModule *m, bool dot_nests);

#endif
