/* fe.h: private interface between the frontend's files (frontend.c,
 * fe_expr.c, fe_stmt.c, fe_builtins.c, fe_scaled.c, fe_tdesc.c,
 * fe_blockptr.c), which compile a @jit function's Python AST into TTIR. Its
 * entry points are in frontend.h.
 *
 * The walker reads the AST produced by Python's `ast` module through the
 * (limited) Python C API. Every Python object it touches is kept alive by one
 * list in the Fe context (fe_keep), so the code can hold borrowed pointers
 * until the compilation ends and error paths need no reference counting.
 *
 * A frontend value (FeVal) is a compile-time Python object (a constexpr: int,
 * float, bool, None, str, dtype, tuple, builtin, @jit function, module), an IR
 * value (a scalar or block "tensor"), a tuple of frontend values, a method
 * bound to a tensor, or a poisoned name (defined on one branch of an `if`
 * only). Errors are IrError values; functions return NULL (or false) after
 * recording one with fe_err.
 */
#ifndef CTRITON_FE_H
#define CTRITON_FE_H

#include "python/frontend/frontend.h"

#include "ir/ir.h"

/* AST node kinds the walker knows; fe_kind maps a node to one. */
#define FE_NODES(X) X(Module) X(FunctionDef) X(arguments) X(arg) X(Return) X(Assign) X(AugAssign) X(AnnAssign) X(For) X(While) X(If) X(Expr) X(Pass) X(Assert) X(Break) X(Continue) X(With) X(Try) X(Raise) X(Global) X(Nonlocal) X(Import) X(ImportFrom) X(Delete) X(AsyncFunctionDef) X(ClassDef) X(Lambda) X(BoolOp) X(BinOp) X(UnaryOp) X(IfExp) X(Compare) X(Call) X(Constant) X(Attribute) X(Subscript) X(Name) X(Tuple) X(List) X(Slice) X(Starred) X(JoinedStr) X(FormattedValue) X(ListComp) X(Dict) X(Set) X(GeneratorExp) X(DictComp) X(SetComp) X(NamedExpr) X(Await) X(Yield) X(YieldFrom) X(Match) X(And) X(Or) X(Add) X(Sub) X(Mult) X(Div) X(FloorDiv) X(Mod) X(Pow) X(LShift) X(RShift) X(BitOr) X(BitXor) X(BitAnd) X(MatMult) X(Invert) X(Not) X(UAdd) X(USub) X(Eq) X(NotEq) X(Lt) X(LtE) X(Gt) X(GtE) X(Is) X(IsNot) X(In) X(NotIn) X(keyword) X(Load) X(Store)
typedef enum FeNode {
	N_OTHER = 0,
#define NODE(x) N_##x,
	FE_NODES(NODE)
#undef NODE
	N_COUNT_
} FeNode;

typedef enum FeKind {
	V_CONST,  /* obj: a Python object known at compile time */
	V_TENSOR, /* v: an IR value, scalar or block */
	V_TUPLE,  /* items: frontend values (at least one not constant) */
	V_METHOD, /* self + name: tensor method, e.g. x.to */
	V_UNDEF,  /* why: a name that may not be defined here */
} FeKind;

typedef struct FeVal FeVal;
struct FeVal {
	FeKind kind;
	PyObject *obj;
	IrValue *v;
	int n;
	FeVal **items;
	FeVal *self;
	const char *name;
	const char *why;
	/* V_CONST: a number bound by a plain assignment (x = 0). Triton makes
	 * that a scalar tensor; it stays a folded constant here, but its
	 * attributes (x.to, x.dtype, x.type) are a tensor's */
	bool lifted;
};

typedef struct FeVar {
	const char *name; /* interned */
	FeVal *val;
} FeVar;

typedef struct FeScope {
	int n, cap;
	FeVar *vars;
} FeScope;

/* One function being lowered (the kernel, or an inlined @jit callee). */
typedef struct FeFn {
	PyObject *jitfn;
	PyObject *globals;
	const char *file; /* interned */
	int line0;        /* real line of AST line 1, minus 1 */
	FeScope scope;
	FeVal *ret;       /* return value so far */
	bool returned;    /* a return was lowered on the current path */
	int loop_depth;   /* runtime loops around the current statement */
	int if_depth;     /* runtime ifs around the current statement */
	struct FeFn *caller;
	PyObject *call_node; /* the caller's Call node (inlined callees) */
} FeFn;

/* A @jit(noinline=True) function lowered for one binding of its parameters
 * (fe_stmt.c): later calls with equal bindings call the same IR function. */
typedef struct FeNoinline {
	PyObject *jitfn; /* NULL: not to be shared */
	int np;
	FeVal **bound;   /* the parameters' bindings at the first call */
	IrFunc *f;       /* NULL while its body is being lowered */
	bool tuple;      /* it returns a tuple */
	struct FeNoinline *next;
} FeNoinline;

typedef struct Fe {
	IrCtx *ctx;
	IrModule *m;
	IrBuilder b;
	PyObject *keep;      /* list holding every object we use */
	PyObject *ast_mod, *tl, *builtins, *parse_cache;
	PyObject *node_types[N_COUNT_];
	PyObject *cls_dtype, *cls_ptr, *cls_block, *cls_constexpr, *cls_tensor, *jit_cls;
	PyObject *ir_to_dtype; /* dict: IR type name -> dtype */
	PyObject *cls_tdesc;   /* tl.tensor_descriptor: the class of descriptor tuples */
	PyObject *cls_blockptr; /* tl._block_ptr: the class of block pointer tuples */
	bool debug;
	bool sanitize;       /* parameters carry their source names (attr "name") */
	bool overflow;       /* integer + - * checked for overflow (fe_expr.c) */
	const char *kernel_name; /* the kernel function's name when not the Python function's */
	int depth;
	FeFn *fn;
	IrFunc *func;        /* IR function being built */
	int nnoinline;
	FeNoinline *noinlines; /* the noinline functions lowered so far */
	int tma_arch;        /* CUDA compute capability x 10 when >= 90 (tensor maps), else 0 */
	int *tmap_of_arg;    /* by kernel argument: the index of its tensor-map parameter, or -1 */
	struct FeTdLoad *tdloads; /* descriptor loads (fe_tdesc.c) */
	int ntdloads, captdloads;
} Fe;

/* ---- frontend.c ---------------------------------------------------------- */
PyObject *fe_keep(Fe *fe, PyObject *o); /* steals o, returns it borrowed (NULL passes) */
PyObject *fe_attr(Fe *fe, PyObject *o, const char *name); /* borrowed or NULL (no error set) */
FeNode fe_kind(Fe *fe, PyObject *node);
IrLoc fe_loc(Fe *fe, PyObject *node);
void fe_set_loc(Fe *fe, PyObject *node);
void *fe_err(Fe *fe, PyObject *node, IrErrCode code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void *fe_pyerr(Fe *fe, PyObject *node, const char *what); /* wraps the pending Python error */
const char *fe_str(Fe *fe, PyObject *o); /* UTF-8 of str(o), arena */
const char *fe_tyname(Fe *fe, const IrType *t);
bool fe_has_error(Fe *fe);
/* Parses a @jit function's source: its FunctionDef node (cached). */
PyObject *fe_parse_fn(Fe *fe, PyObject *jitfn, PyObject *node);
const IrType *fe_dtype_to_ir(Fe *fe, PyObject *dt); /* NULL if not a dtype */
PyObject *fe_ir_to_dtype(Fe *fe, const IrType *t);
bool fe_is_jit(Fe *fe, PyObject *o);
const char *fe_builtin_name(Fe *fe, PyObject *o);

/* ---- fe_expr.c ----------------------------------------------------------- */
FeVal *fe_const(Fe *fe, PyObject *o);        /* borrowed o, kept */
FeVal *fe_tensor(Fe *fe, IrValue *v);
FeVal *fe_none(Fe *fe);
FeVal *fe_make_tuple(Fe *fe, int n, FeVal **items); /* a constant tuple when all items are */
FeVal *fe_expr(Fe *fe, PyObject *node);
bool fe_is_const(const FeVal *v);
bool fe_is_tensor(const FeVal *v);
/* Constant truth; false with an error when v is not constant. */
int fe_truth(Fe *fe, PyObject *node, FeVal *v);
bool fe_const_int(Fe *fe, PyObject *node, FeVal *v, int64_t *out, const char *what);
/* Python scalar (or constexpr) -> IR value; ty NULL: default typing. */
IrValue *fe_to_ir(Fe *fe, PyObject *node, FeVal *v, const IrType *ty);
IrValue *fe_cast(Fe *fe, PyObject *node, IrValue *x, const IrType *to_scalar, const char *rounding,
		 bool bitcast);
IrValue *fe_splat_to(Fe *fe, PyObject *node, IrValue *x, const IrType *block);
IrValue *fe_broadcast_to(Fe *fe, PyObject *node, IrValue *x, int rank, const int64_t *shape);
bool fe_broadcast_pair(Fe *fe, PyObject *node, IrValue **a, IrValue **b);
const IrType *fe_block(Fe *fe, PyObject *node, const IrType *elem, int rank, const int64_t *shape);
/* Binary operator by Python AST op kind (N_Add...) on frontend values. */
FeVal *fe_binop(Fe *fe, PyObject *node, FeNode op, FeVal *a, FeVal *b);
/* fe_binop; check: integer + - * get the overflow check when it is on
 * (false: arithmetic the frontend adds itself, or sanitize_overflow=False) */
FeVal *fe_arith(Fe *fe, PyObject *node, FeNode op, FeVal *a, FeVal *b, bool check);
/* Triton's sanitize_overflow, when fe->overflow is on: x opc y (OP_ADD, SUB,
 * MUL; integers narrower than 64 bits, of one type and shape) is also
 * computed in i64 from the operands extended by their signedness, and an
 * assert {overflow} fails where that result lies outside the type's range. */
void fe_overflow_check(Fe *fe, IrOpcode opc, IrValue *x, IrValue *y);
FeVal *fe_cmpop(Fe *fe, PyObject *node, FeNode op, FeVal *a, FeVal *b);
FeVal *fe_unop(Fe *fe, PyObject *node, FeNode op, FeVal *a);
/* Common type of two operands (Triton's promotion; weak Python scalars). */
const IrType *fe_promote(Fe *fe, PyObject *node, FeVal *a, FeVal *b, bool div_or_mod, bool arith);
IrValue *fe_to_bool(Fe *fe, PyObject *node, IrValue *x);
FeVal *fe_call(Fe *fe, PyObject *node);
FeVal *fe_getattr(Fe *fe, PyObject *node, FeVal *obj, const char *name);
FeVal *fe_shape_tuple(Fe *fe, const IrType *t);
/* Reads a shape (tuple/list of constexpr ints, or an int). */
bool fe_shape(Fe *fe, PyObject *node, FeVal *v, int *rank, int64_t *shape);
FeVal *fe_lookup(Fe *fe, PyObject *node, const char *name);

/* ---- fe_stmt.c ----------------------------------------------------------- */
bool fe_stmts(Fe *fe, PyObject *list);
void fe_scope_set(Fe *fe, FeScope *s, const char *name, FeVal *v);
FeVal *fe_scope_get(FeScope *s, const char *name);
/* Inlines the @jit function jitfn with bound arguments. */
FeVal *fe_inline_call(Fe *fe, PyObject *node, PyObject *jitfn, int nargs, FeVal **args, int nkw,
		      const char **kwnames, FeVal **kwvals);
/* Lowers jit function fn into a region body: combine functions. */
/* A list comprehension over a compile-time iterable: a tuple. */
FeVal *fe_listcomp(Fe *fe, PyObject *node);
FeVal *fe_call_jit_values(Fe *fe, PyObject *node, PyObject *jitfn, int n, FeVal **args);

/* ---- fe_builtins.c ------------------------------------------------------- */
FeVal *fe_builtin_call(Fe *fe, PyObject *node, const char *name, FeVal *self, int nargs,
		       FeVal **args, int nkw, const char **kwnames, FeVal **kwvals);
bool fe_is_tensor_method(const char *name);
/* Row i of the builtin table (name, "a, b=, *rest", whether also a tensor
 * method), false past the end. */
bool fe_builtin_row(int i, const char **name, const char **params, bool *method);

/* ---- fe_scaled.c --------------------------------------------------------- */
/* tl.dot_scaled with its 11 parameters bound in order (NULL: not given):
 * the operands upcast and scaled, then a dot. */
FeVal *fe_dot_scaled(Fe *fe, PyObject *node, FeVal **args);

/* ---- fe_tdesc.c ---------------------------------------------------------- */
/* Whether v is a tensor descriptor (a tuple of class tl.tensor_descriptor). */
bool fe_is_tdesc(Fe *fe, const FeVal *v);
/* The descriptor of a TensorDescriptor argument: flat is its (base, shape,
 * strides) tuple of parameters, info its constant (block_shape, padding). */
/* A constant Python int (bools excluded) -> *out (fe_tdesc.c; block pointers too). */
bool fe_const_int_of(const FeVal *v, int64_t *out);
/* A constant Python int of value x. */
FeVal *fe_const_long(Fe *fe, int64_t x);
FeVal *fe_tdesc_from_param(Fe *fe, PyObject *node, FeVal *flat, PyObject *info, int tmap);
/* Tensor maps (sm_90): whether a block [B0, B1] of elem can have one, and
 * the attributes of its parameter (fe_tdesc.c). */
bool fe_tmap_ok(const IrType *elem, int64_t B0, int64_t B1, bool nan);
void fe_tmap_attrs(Fe *fe, IrParam *prm, int64_t arg, const IrType *elem, int64_t B0, int64_t B1, bool nan);
/* desc.base/shape/strides/block_shape/dtype/block_type, or a bound method. */
FeVal *fe_tdesc_getattr(Fe *fe, PyObject *node, FeVal *d, const char *name);
/* A descriptor method (self a descriptor) or tl.make_tensor_descriptor /
 * load_tensor_descriptor / store_tensor_descriptor; *handled false when
 * name is none of these. */
FeVal *fe_tdesc_call(Fe *fe, PyObject *node, const char *name, FeVal *self, int nargs, FeVal **args,
		     int nkw, const char **kwn, FeVal **kwv, bool *handled);
/* After lowering: a descriptor load whose one use is a trans becomes a load
 * of the transposed block. */
void fe_tdesc_finish(Fe *fe);
/* Binds nargs positional and nkw keyword arguments to the np parameters
 * names (the first nreq required) into out (NULL: not given); false + a
 * Python-style error naming fname. */
bool fe_bind_args(Fe *fe, PyObject *node, const char *fname, int np, const char **names, int nreq,
		  int nargs, FeVal **args, int nkw, const char **kwn, FeVal **kwv, FeVal **out);

/* ---- fe_blockptr.c ------------------------------------------------------- */
/* Whether v is a block pointer (a tuple of class tl._block_ptr). */
bool fe_is_blockptr(Fe *fe, const FeVal *v);
/* ptr.base/shape/strides/offsets/block_shape/order/dtype, or a bound
 * method (advance, load, store). */
FeVal *fe_blockptr_getattr(Fe *fe, PyObject *node, FeVal *bp, const char *name);
/* tl.make_block_ptr, tl.advance, and tl.load / tl.store through a block
 * pointer (or a block pointer's method); *handled false otherwise. */
FeVal *fe_blockptr_call(Fe *fe, PyObject *node, const char *name, FeVal *self, int nargs, FeVal **args,
			int nkw, const char **kwn, FeVal **kwv, bool *handled);

#endif
