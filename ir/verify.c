/* verify.c: the IR verifier.
 *
 * ir_verify_func walks a function once, in program order, keeping the set of
 * values visible at the current point: the parameters, the results of the
 * ops above, and the arguments of every enclosing region's block. For each op
 * it checks, in this order: the counts of ops.def, that every operand is
 * visible (dominance), the layouts on its result types, the op's own rules
 * (attributes, types and shapes, following the one-line semantics in
 * ops.def), and then its regions, recursively; the values a region defines
 * are dropped from the set when the walk leaves it. Terminators are checked
 * where they stand, against the op that owns their block, so a wrong `yield`
 * is reported on the `yield`; a missing terminator is reported on the owner.
 *
 * The first problem is returned as an IR_ERR_VERIFY error at the op's
 * location, its message starting with the op's name. The verifier changes
 * nothing in the IR; it only interns, in the ctx, the types that its
 * comparisons and messages need (block<..xi1> for masks, for instance).
 */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------- */
/* State: the visible-value set                                              */
/* ------------------------------------------------------------------------- */

/* Open addressing on the value's address. A value is inserted once (SSA);
 * leaving a region clears `live` for the values defined inside it, which
 * tells "not defined yet" apart from "defined in a region that is closed". */
typedef struct Slot {
	const IrValue *v;
	bool live;
} Slot;

typedef struct Verifier {
	IrCtx *ctx;
	IrFunc *f;
	int num_warps; /* the module's num_warps attribute, 0 when absent */
	Slot *slots;
	size_t nslots, capslots;
	const IrValue **stack; /* values in definition order, for leaving regions */
	size_t nstack, capstack;
} Verifier;

static size_t ptr_hash(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;
	x ^= x >> 29;
	x *= 0x9e3779b97f4a7c15ull;
	return (size_t)(x ^ (x >> 32));
}

static Slot *slot_of(const Verifier *V, const IrValue *v)
{
	size_t mask = V->capslots - 1, j = ptr_hash(v) & mask;
	while (V->slots[j].v && V->slots[j].v != v)
		j = (j + 1) & mask;
	return &V->slots[j];
}

static void grow_slots(Verifier *V)
{
	Slot *old = V->slots;
	size_t oldcap = V->capslots;
	V->capslots = oldcap ? 2 * oldcap : 256;
	V->slots = calloc(V->capslots, sizeof(Slot));
	if (!V->slots)
		abort();
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].v)
			*slot_of(V, old[i].v) = old[i];
	free(old);
}

static void define(Verifier *V, const IrValue *v)
{
	if (2 * (V->nslots + 1) > V->capslots)
		grow_slots(V);
	Slot *s = slot_of(V, v);
	if (!s->v) {
		s->v = v;
		V->nslots++;
	}
	s->live = true;
	if (V->nstack == V->capstack) {
		V->capstack = V->capstack ? 2 * V->capstack : 256;
		V->stack = realloc(V->stack, V->capstack * sizeof(IrValue *));
		if (!V->stack)
			abort();
	}
	V->stack[V->nstack++] = v;
}

/* Drops the values defined since the stack had `mark` entries. */
static void leave(Verifier *V, size_t mark)
{
	while (V->nstack > mark)
		slot_of(V, V->stack[--V->nstack])->live = false;
}

/* 1 visible, 0 never defined so far, -1 defined in a region already left. */
static int visibility(const Verifier *V, const IrValue *v)
{
	if (!V->capslots)
		return 0;
	const Slot *s = slot_of(V, v);
	if (!s->v)
		return 0;
	return s->live ? 1 : -1;
}

/* ------------------------------------------------------------------------- */
/* Messages                                                                  */
/* ------------------------------------------------------------------------- */

static const char *opname(const IrOp *op)
{
	if ((int)op->opc < 0 || op->opc >= OP_COUNT_)
		return "<bad opcode>";
	return ir_opinfo(op->opc)->name;
}

/* An error at op whose message is "'<op name>' " followed by fmt. */
static IrError *fail(Verifier *V, const IrOp *op, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static IrError *fail(Verifier *V, const IrOp *op, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = ir_vfmt(V->ctx, fmt, ap);
	va_end(ap);
	return ir_error(V->ctx, IR_ERR_VERIFY, op->loc, "'%s' %s", opname(op), msg);
}

static IrError *fail_at(Verifier *V, IrLoc loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static IrError *fail_at(Verifier *V, IrLoc loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = ir_vfmt(V->ctx, fmt, ap);
	va_end(ap);
	return ir_error(V->ctx, IR_ERR_VERIFY, loc, "%s", msg);
}

static const char *ts(const Verifier *V, const IrType *t)
{
	return ir_print_type(V->ctx, t);
}

static const char *ints_str(const Verifier *V, int n, const int64_t *v)
{
	const char *s = "[";
	for (int i = 0; i < n; i++)
		s = ir_fmt(V->ctx, "%s%s%lld", s, i ? ", " : "", (long long)v[i]);
	return ir_fmt(V->ctx, "%s]", s);
}

/* ------------------------------------------------------------------------- */
/* Type helpers                                                              */
/* ------------------------------------------------------------------------- */

static bool is_int_t(const IrType *t)
{
	return ir_is_int(ir_scalar(t));
}

static bool is_float_t(const IrType *t)
{
	return ir_is_float(ir_scalar(t));
}

static bool is_num_t(const IrType *t)
{
	return is_int_t(t) || is_float_t(t);
}

static bool is_ptr_t(const IrType *t)
{
	return ir_is_ptr(ir_scalar(t));
}

static int rank_of(const IrType *t)
{
	return ir_is_block(t) ? t->rank : 0;
}

/* Same shape and layout (elements may differ); two scalars count as equal. */
static bool same_shape(const IrType *a, const IrType *b)
{
	if (ir_is_block(a) != ir_is_block(b))
		return false;
	if (!ir_is_block(a))
		return true;
	return a->rank == b->rank && a->layout == b->layout &&
	       memcmp(a->shape, b->shape, (size_t)a->rank * sizeof(int64_t)) == 0;
}

/* Same dims, ignoring layouts (shape ops may change the layout in TTGIR). */
static bool same_dims(int rank, const int64_t *shape, const IrType *t)
{
	return rank_of(t) == rank &&
	       (rank == 0 || memcmp(shape, t->shape, (size_t)rank * sizeof(int64_t)) == 0);
}

/* The type of element elem and the given dims, for messages and comparisons:
 * the scalar elem for rank 0; NULL when the dims make no valid block. */
static const IrType *dims_type(const Verifier *V, const IrType *elem, int rank,
			       const int64_t *shape)
{
	if (rank == 0)
		return elem;
	return ir_type_block(V->ctx, elem, rank, shape, NULL);
}

static const char *dims_str(const Verifier *V, const IrType *elem, int rank, const int64_t *shape)
{
	const IrType *t = dims_type(V, elem, rank, shape);
	if (t)
		return ts(V, t);
	const char *s = "block<";
	for (int i = 0; i < rank; i++)
		s = ir_fmt(V->ctx, "%s%lldx", s, (long long)shape[i]);
	return ir_fmt(V->ctx, "%s%s>", s, ts(V, elem));
}

static bool is_perm(int n, const int64_t *v)
{
	bool seen[IR_MAX_RANK] = {0};
	if (n > IR_MAX_RANK)
		return false;
	for (int i = 0; i < n; i++) {
		if (v[i] < 0 || v[i] >= n || seen[v[i]])
			return false;
		seen[v[i]] = true;
	}
	return true;
}

static bool is_perm_int(int n, const int *v)
{
	int64_t w[IR_MAX_RANK];
	if (n < 0 || n > IR_MAX_RANK)
		return false;
	for (int i = 0; i < n; i++)
		w[i] = v[i];
	return is_perm(n, w);
}

/* ------------------------------------------------------------------------- */
/* Layouts (TTGIR)                                                           */
/* ------------------------------------------------------------------------- */

/* The rank of the blocks a layout describes; slice and dot_op derive it
 * from their parent. -1 when the layout is malformed. */
static int layout_rank(const IrLayout *l)
{
	if (!l)
		return -1;
	switch (l->kind) {
	case LAYOUT_SLICE: {
		int r = layout_rank(l->parent);
		return r < 1 ? -1 : r - 1;
	}
	case LAYOUT_DOT_OP:
		return layout_rank(l->parent);
	default:
		return l->rank;
	}
}

/* NULL when l is well formed, otherwise what is wrong with it. */
static const char *layout_problem(const Verifier *V, const IrLayout *l)
{
	IrCtx *ctx = V->ctx;
	if (!l)
		return "a layout is missing its parent";
	switch (l->kind) {
	case LAYOUT_BLOCKED: {
		if (l->rank < 1 || l->rank > IR_MAX_RANK)
			return ir_fmt(ctx, "#blocked has rank %d", l->rank);
		int tpw = 1, wpc = 1;
		for (int i = 0; i < l->rank; i++) {
			if (l->size_per_thread[i] < 1 || l->threads_per_warp[i] < 1 ||
			    l->warps_per_cta[i] < 1)
				return "#blocked spt, tpw and wpc entries must be positive";
			tpw *= l->threads_per_warp[i];
			wpc *= l->warps_per_cta[i];
		}
		if (tpw != 32)
			return ir_fmt(ctx,
				      "#blocked tpw must multiply to 32 threads per warp, got %d",
				      tpw);
		if (V->num_warps > 0 && wpc != V->num_warps)
			return ir_fmt(ctx, "#blocked wpc must multiply to num_warps = %d, got %d",
				      V->num_warps, wpc);
		if (!is_perm_int(l->rank, l->order))
			return "#blocked order must be a permutation of the dims";
		return NULL;
	}
	case LAYOUT_SLICE: {
		const char *p = layout_problem(V, l->parent);
		if (p)
			return p;
		int pr = layout_rank(l->parent);
		if (pr < 2)
			return "#slice needs a parent of rank 2 or more";
		if (l->dim < 0 || l->dim >= pr)
			return ir_fmt(ctx, "#slice dim %d is out of range for a parent of rank %d",
				      l->dim, pr);
		return NULL;
	}
	case LAYOUT_SHARED:
		if (l->rank < 1 || l->rank > IR_MAX_RANK || !is_perm_int(l->rank, l->order))
			return "#shared order must be a permutation of the dims";
		return NULL;
	case LAYOUT_MMA:
		if (l->rank < 2 || l->rank > 3)
			return ir_fmt(ctx, "#mma has rank %d, expected 2 or 3", l->rank);
		return NULL;
	case LAYOUT_DOT_OP: {
		if (l->opidx != 0 && l->opidx != 1)
			return ir_fmt(ctx, "#dot_op opidx must be 0 or 1, got %d", l->opidx);
		return layout_problem(V, l->parent);
	}
	}
	return ir_fmt(ctx, "unknown layout kind %d", (int)l->kind);
}

/* NULL when t is fine, otherwise what is wrong with its layout. */
static const char *type_problem(const Verifier *V, const IrType *t)
{
	if (!t)
		return "has no type";
	if (t->kind == TY_VOID)
		return "has type void";
	if (!ir_is_block(t) || !t->layout)
		return NULL;
	const char *p = layout_problem(V, t->layout);
	if (p)
		return ir_fmt(V->ctx, "type %s: %s", ts(V, t), p);
	int lr = layout_rank(t->layout);
	if (lr != t->rank)
		return ir_fmt(V->ctx, "type %s: layout of rank %d on a block of rank %d", ts(V, t),
			      lr, t->rank);
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* Attributes                                                                */
/* ------------------------------------------------------------------------- */

static const char *const attr_kind_desc[] = {
	[ATTR_INT] = "an integer",
	[ATTR_FLOAT] = "a float",
	[ATTR_BOOL] = "a bool",
	[ATTR_STR] = "a string",
	[ATTR_INTS] = "an integer list",
	[ATTR_TYPE] = "a type",
	[ATTR_SYM] = "a function @name",
};

static const char *attr_desc(IrAttrKind k)
{
	if ((int)k < 0 || k > ATTR_SYM)
		return "unknown";
	return attr_kind_desc[k];
}

/* *out = the attribute (NULL when absent); an error when it is required and
 * absent or of another kind. A bool attribute may also be given as 0/1. */
static IrError *get_attr(Verifier *V, const IrOp *op, const char *name, IrAttrKind kind,
			 bool required, const IrAttr **out)
{
	const IrAttr *a = ir_op_attr(op, name);
	*out = a;
	if (!a) {
		if (required)
			return fail(V, op, "needs attribute '%s' (%s)", name, attr_desc(kind));
		return NULL;
	}
	if (a->kind == kind)
		return NULL;
	if (kind == ATTR_BOOL && a->kind == ATTR_INT && (a->i == 0 || a->i == 1))
		return NULL;
	return fail(V, op, "attribute '%s' must be %s, got %s", name, attr_desc(kind),
		    attr_desc(a->kind));
}

static IrError *get_int(Verifier *V, const IrOp *op, const char *name, int64_t *out)
{
	const IrAttr *a;
	IrError *e = get_attr(V, op, name, ATTR_INT, true, &a);
	if (!e)
		*out = a->i;
	return e;
}

/* A string attribute whose value must be one of allowed (NULL-terminated). */
static IrError *check_str_in(Verifier *V, const IrOp *op, const char *name, bool required,
			     const char *const *allowed)
{
	const IrAttr *a;
	IrError *e = get_attr(V, op, name, ATTR_STR, required, &a);
	if (e || !a)
		return e;
	const char *s = a->s ? a->s : "";
	for (int i = 0; allowed[i]; i++)
		if (strcmp(s, allowed[i]) == 0)
			return NULL;
	const char *list = "";
	for (int i = 0; allowed[i]; i++)
		list = ir_fmt(V->ctx, "%s%s\"%s\"", list, i ? ", " : "", allowed[i]);
	return fail(V, op, "attribute '%s' must be one of %s, got \"%s\"", name, list, s);
}

static IrError *check_opt(Verifier *V, const IrOp *op, const char *name, IrAttrKind kind)
{
	const IrAttr *a;
	return get_attr(V, op, name, kind, false, &a);
}

static const char *const preds[] = {"eq", "ne", "lt", "le", "gt", "ge", NULL};
static const char *const rmw_kinds[] = {"add", "max", "min", "and", "or", "xor", "xchg", NULL};
static const char *const sems[] = {"acquire", "release", "acq_rel", "relaxed", NULL};
static const char *const scopes[] = {"gpu", "cta", "sys", NULL};
static const char *const nan_modes[] = {"none", "all", NULL};
static const char *const load_caches[] = {"", "ca", "cg", "cs", "cv", NULL};
static const char *const store_caches[] = {"", "ca", "cg", "cs", "cv", "wb", "wt", NULL};
static const char *const evicts[] = {"", "evict_first", "evict_last", "evict_normal", NULL};
static const char *const cast_roundings[] = {"rtne", "rtz", NULL};
static const char *const gdc_kinds[] = {"wait", "launch_dependents", NULL};

/* ------------------------------------------------------------------------- */
/* Elementwise ops                                                           */
/* ------------------------------------------------------------------------- */

enum { CLS_INT = 1, CLS_FLOAT = 2, CLS_NUM = 3 };

/* The element class an arithmetic op takes, 0 for other ops. */
static int arith_class(IrOpcode opc)
{
	switch (opc) {
	case OP_ADD:
	case OP_SUB:
	case OP_MUL:
	case OP_DIV:
	case OP_REM:
	case OP_NEG:
	case OP_MIN:
	case OP_MAX:
	case OP_ABS:
		return CLS_NUM;
	case OP_AND:
	case OP_OR:
	case OP_XOR:
	case OP_NOT:
	case OP_SHL:
	case OP_SHR:
	case OP_UMULHI:
		return CLS_INT;
	case OP_FMA:
	case OP_EXP:
	case OP_EXP2:
	case OP_LOG:
	case OP_LOG2:
	case OP_SQRT:
	case OP_RSQRT:
	case OP_SIN:
	case OP_COS:
	case OP_ERF:
	case OP_FLOOR:
	case OP_CEIL:
		return CLS_FLOAT;
	default:
		return 0;
	}
}

/* Arithmetic: operands of one type, of the op's class, and a result of that type. */
static IrError *check_arith(Verifier *V, const IrOp *op, int cls)
{
	const IrType *t = op->ops[0]->type;
	for (int i = 1; i < op->nops; i++)
		if (op->ops[i]->type != t)
			return fail(V, op, "operands must have the same type, got %s and %s",
				    ts(V, t), ts(V, op->ops[i]->type));
	bool okcls = cls == CLS_INT ? is_int_t(t) : cls == CLS_FLOAT ? is_float_t(t) : is_num_t(t);
	if (!okcls) {
		const char *want = cls == CLS_INT     ? "integer"
				   : cls == CLS_FLOAT ? "floating-point"
						      : "integer or floating-point";
		return fail(V, op, "needs %s operands, got %s", want, ts(V, t));
	}
	if (op->res[0].type != t)
		return fail(V, op, "result must have the operands' type %s, got %s", ts(V, t),
			    ts(V, op->res[0].type));
	if ((op->opc == OP_MIN || op->opc == OP_MAX))
		return check_str_in(V, op, "propagate_nan", false, nan_modes);
	if (op->opc == OP_DIV || op->opc == OP_SQRT)
		return check_opt(V, op, "rounding", ATTR_STR);
	return NULL;
}

/* Every elementwise op: operands and result share one shape and layout. */
static IrError *check_elem_shapes(Verifier *V, const IrOp *op)
{
	const IrType *r = op->res[0].type;
	for (int i = 0; i < op->nops; i++)
		if (!same_shape(op->ops[i]->type, r))
			return fail(
				V, op,
				"operands and result must have one shape, got %s (operand %d) and "
				"%s (result)",
				ts(V, op->ops[i]->type), i, ts(V, r));
	return NULL;
}

static IrError *check_elementwise(Verifier *V, const IrOp *op)
{
	IrError *e;
	const IrType *r = op->res[0].type;
	int cls = arith_class(op->opc);
	if (cls && (e = check_arith(V, op, cls)))
		return e;
	switch (op->opc) {
	case OP_CMP: {
		const IrType *t = op->ops[0]->type;
		if ((e = check_str_in(V, op, "pred", true, preds)))
			return e;
		if (op->ops[1]->type != t)
			return fail(V, op, "operands must have the same type, got %s and %s",
				    ts(V, t), ts(V, op->ops[1]->type));
		if (!is_num_t(t) && !is_ptr_t(t))
			return fail(V, op, "compares integers, floats or pointers, got %s",
				    ts(V, t));
		const IrType *want = ir_type_like(V->ctx, t, ir_type(V->ctx, TY_I1));
		if (r != want)
			return fail(V, op, "result must be %s, got %s", ts(V, want), ts(V, r));
		break;
	}
	case OP_SELECT: {
		const IrType *t = op->ops[1]->type;
		if (op->ops[2]->type != t)
			return fail(V, op, "operands must have the same type, got %s and %s",
				    ts(V, t), ts(V, op->ops[2]->type));
		if (r != t)
			return fail(V, op, "result must have the operands' type %s, got %s",
				    ts(V, t), ts(V, r));
		const IrType *want = ir_type_like(V->ctx, t, ir_type(V->ctx, TY_I1));
		if (op->ops[0]->type != want)
			return fail(V, op,
				    "condition must be %s (i1 of the operands' shape), got %s",
				    ts(V, want), ts(V, op->ops[0]->type));
		break;
	}
	case OP_CAST:
		if (!is_num_t(op->ops[0]->type) || !is_num_t(r))
			return fail(V, op, "converts between numeric types, got %s to %s",
				    ts(V, op->ops[0]->type), ts(V, r));
		if ((e = check_str_in(V, op, "rounding", false, cast_roundings)))
			return e;
		break;
	case OP_BITCAST: {
		int a = ir_type_bits(op->ops[0]->type), b = ir_type_bits(r);
		if (a != b)
			return fail(V, op,
				    "needs equal bit widths, got %s (%d bits) to %s (%d bits)",
				    ts(V, op->ops[0]->type), a, ts(V, r), b);
		break;
	}
	case OP_INT_TO_PTR:
		if (ir_scalar(op->ops[0]->type)->kind != TY_I64)
			return fail(V, op, "operand must be i64, got %s", ts(V, op->ops[0]->type));
		if (!is_ptr_t(r))
			return fail(V, op, "result must be a pointer, got %s", ts(V, r));
		break;
	case OP_PTR_TO_INT:
		if (!is_ptr_t(op->ops[0]->type))
			return fail(V, op, "operand must be a pointer, got %s",
				    ts(V, op->ops[0]->type));
		if (ir_scalar(r)->kind != TY_I64)
			return fail(V, op, "result must be i64, got %s", ts(V, r));
		break;
	case OP_EXTERN: {
		const IrAttr *a;
		if ((e = get_attr(V, op, "symbol", ATTR_STR, true, &a)))
			return e;
		if ((e = check_opt(V, op, "lib", ATTR_STR)))
			return e;
		break;
	}
	case OP_INLINE_ASM: {
		const IrAttr *a;
		int64_t pack;
		if ((e = get_attr(V, op, "asm", ATTR_STR, true, &a)) ||
		    (e = get_attr(V, op, "constraints", ATTR_STR, true, &a)) ||
		    (e = get_attr(V, op, "pure", ATTR_BOOL, true, &a)) || (e = get_int(V, op, "pack", &pack)))
			return e;
		if (op->nres < 1)
			return fail(V, op, "needs at least one result");
		if (pack < 1 || pack > 64)
			return fail(V, op, "pack must be between 1 and 64, got %lld", (long long)pack);
		int want_out = 0, want_in = 0, nout, nin;
		for (int i = 0; i < op->nres; i++) {
			const IrType *t = op->res[i].type;
			if (!same_shape(t, r))
				return fail(V, op, "results must have one shape, got %s (result 0) and %s (result %d)",
					    ts(V, r), ts(V, t), i);
			if ((!is_num_t(t) && !is_ptr_t(t)) || ir_scalar(t)->kind == TY_I1)
				return fail(V, op, "result %d must be integers, floats or pointers (not i1), got %s", i,
					    ts(V, t));
			want_out += (int)(pack / ir_asm_per_reg(t, pack));
		}
		for (int i = 0; i < op->nops; i++) {
			const IrType *t = op->ops[i]->type;
			if ((!is_num_t(t) && !is_ptr_t(t)) || ir_scalar(t)->kind == TY_I1)
				return fail(V, op, "operand %d must be integers, floats or pointers (not i1), got %s", i,
					    ts(V, t));
			want_in += (int)(pack / ir_asm_per_reg(t, pack));
		}
		const char *cons = ir_op_str(op, "constraints", "");
		if (!ir_asm_constraint_counts(cons, &nout, &nin))
			return fail(V, op, "constraints \"%s\": every entry must be a non-empty direct (register or "
				    "immediate) constraint", cons);
		if (nout != want_out || nin != want_in)
			return fail(V, op,
				    "constraints \"%s\" name %d outputs and %d inputs; with pack = %lld the asm takes %d "
				    "output and %d input registers (elements narrower than 32 bits share a register)",
				    cons, nout, nin, (long long)pack, want_out, want_in);
		break;
	}
	case OP_ADDPTR: {
		const IrType *p = op->ops[0]->type, *off = op->ops[1]->type;
		if (!is_ptr_t(p))
			return fail(V, op,
				    "operand 0 must be a pointer or a block of pointers, got %s",
				    ts(V, p));
		if (!is_int_t(off) || !same_shape(off, p))
			return fail(
				V, op,
				"offset must be an integer of the pointer's shape, got %s for %s",
				ts(V, off), ts(V, p));
		if (r != p)
			return fail(V, op, "result must have the pointer's type %s, got %s",
				    ts(V, p), ts(V, r));
		break;
	}
	default:
		break;
	}
	return check_elem_shapes(V, op);
}

/* ------------------------------------------------------------------------- */
/* Memory                                                                    */
/* ------------------------------------------------------------------------- */

/* The value type behind pointer operand 0 (like its shape); NULL + error
 * when operand 0 is not a pointer to a scalar. */
static IrError *pointee(Verifier *V, const IrOp *op, const IrType **out)
{
	const IrType *p = op->ops[0]->type;
	*out = NULL;
	if (!is_ptr_t(p))
		return fail(V, op, "operand 0 must be a pointer or a block of pointers, got %s",
			    ts(V, p));
	const IrType *el = ir_scalar(p)->elem;
	if (!el || ir_is_block(el) || el->kind == TY_VOID)
		return fail(V, op, "cannot access memory through %s", ts(V, p));
	*out = ir_type_like(V->ctx, p, el);
	return NULL;
}

/* A load's or store's tensor-map tail ({tma = n}): after the first three
 * operands (named by first3), the map (a scalar pointer), then one i32
 * offset per dim (a store's: then the map's inner extent, i32). */
static IrError *check_tma_tail(Verifier *V, const IrOp *op, const char *first3)
{
	int64_t tail = ir_op_int(op, "tma", 0);
	if (tail < 0 || (tail && op->nops != 3 + tail) || (!tail && op->nops > 3))
		return fail(V, op, "takes %s, then {tma} more operands (tma = %lld), got %d", first3, (long long)tail,
			    op->nops);
	for (int i = 3; i < op->nops; i++) {
		const IrType *t = op->ops[i]->type;
		if (i == 3 ? !ir_is_ptr(t) || ir_is_block(t) : t->kind != TY_I32)
			return fail(V, op, "operand %d must be %s, got %s", i,
				    i == 3 ? "a scalar pointer (the tensor map)" : "an i32 offset", ts(V, t));
	}
	return NULL;
}

static IrError *check_mask(Verifier *V, const IrOp *op, int i)
{
	const IrType *want = ir_type_like(V->ctx, op->ops[0]->type, ir_type(V->ctx, TY_I1));
	if (op->ops[i]->type != want)
		return fail(V, op, "mask must be i1 of the pointer's shape (%s), got %s",
			    ts(V, want), ts(V, op->ops[i]->type));
	return NULL;
}

static IrError *check_memory(Verifier *V, const IrOp *op)
{
	IrError *e;
	const IrType *vt;
	if ((e = pointee(V, op, &vt)))
		return e;
	if (op->opc != OP_LOAD && ir_scalar(op->ops[0]->type)->is_const)
		return fail(V, op, "cannot write memory through the read-only %s", ts(V, op->ops[0]->type));
	switch (op->opc) {
	case OP_LOAD:
		if (op->res[0].type != vt)
			return fail(V, op, "result must be %s (what %s points to), got %s",
				    ts(V, vt), ts(V, op->ops[0]->type), ts(V, op->res[0].type));
		if (op->nops > 1 && (e = check_mask(V, op, 1)))
			return e;
		if (op->nops > 2 && op->ops[2]->type != vt)
			return fail(V, op, "other must have the result type %s, got %s", ts(V, vt),
				    ts(V, op->ops[2]->type));
		if ((e = check_tma_tail(V, op, "ptr, mask and other")))
			return e;
		if ((e = check_str_in(V, op, "cache", false, load_caches)) ||
		    (e = check_str_in(V, op, "evict", false, evicts)) ||
		    (e = check_opt(V, op, "volatile", ATTR_BOOL)))
			return e;
		return NULL;
	case OP_STORE:
		if (op->ops[1]->type != vt)
			return fail(V, op, "value must be %s (what %s points to), got %s",
				    ts(V, vt), ts(V, op->ops[0]->type), ts(V, op->ops[1]->type));
		if (op->nops > 2 && (e = check_mask(V, op, 2)))
			return e;
		if ((e = check_tma_tail(V, op, "ptr, value and mask")))
			return e;
		if ((e = check_str_in(V, op, "cache", false, store_caches)) ||
		    (e = check_str_in(V, op, "evict", false, evicts)))
			return e;
		return NULL;
	case OP_ATOMIC_RMW: {
		if ((e = check_str_in(V, op, "kind", true, rmw_kinds)))
			return e;
		const char *kind = ir_op_str(op, "kind", "");
		if (op->ops[1]->type != vt)
			return fail(V, op, "value must be %s (what %s points to), got %s",
				    ts(V, vt), ts(V, op->ops[0]->type), ts(V, op->ops[1]->type));
		if (op->res[0].type != vt)
			return fail(V, op, "result must be %s (the old value), got %s", ts(V, vt),
				    ts(V, op->res[0].type));
		bool bitwise = !strcmp(kind, "and") || !strcmp(kind, "or") || !strcmp(kind, "xor");
		if (bitwise ? !is_int_t(vt) : !is_num_t(vt))
			return fail(V, op, "kind \"%s\" needs %s values, got %s", kind,
				    bitwise ? "integer" : "integer or floating-point", ts(V, vt));
		if (op->nops > 2 && (e = check_mask(V, op, 2)))
			return e;
		break;
	}
	case OP_ATOMIC_CAS:
		for (int i = 1; i < 3; i++)
			if (op->ops[i]->type != vt)
				return fail(V, op, "%s must be %s (what %s points to), got %s",
					    i == 1 ? "cmp" : "value", ts(V, vt),
					    ts(V, op->ops[0]->type), ts(V, op->ops[i]->type));
		if (op->res[0].type != vt)
			return fail(V, op, "result must be %s (the old value), got %s", ts(V, vt),
				    ts(V, op->res[0].type));
		break;
	default:
		return NULL;
	}
	if ((e = check_str_in(V, op, "sem", true, sems)) ||
	    (e = check_str_in(V, op, "scope", true, scopes)))
		return e;
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* Shape ops                                                                 */
/* ------------------------------------------------------------------------- */

static IrError *need_block(Verifier *V, const IrOp *op, const char *what, const IrType *t)
{
	if (!ir_is_block(t))
		return fail(V, op, "%s must be a block, got %s", what, ts(V, t));
	return NULL;
}

/* The result must have element elem and the given dims (layout free). */
static IrError *want_dims(Verifier *V, const IrOp *op, int res, const IrType *elem, int rank,
			  const int64_t *shape, const char *why)
{
	const IrType *r = op->res[res].type;
	if (ir_scalar(r) == elem && same_dims(rank, shape, r) && (rank > 0 || !ir_is_block(r)))
		return NULL;
	return fail(V, op, "result%s must be %s (%s), got %s",
		    op->nres > 1 ? ir_fmt(V->ctx, " %d", res) : "", dims_str(V, elem, rank, shape),
		    why, ts(V, r));
}

static IrError *check_shape_op(Verifier *V, const IrOp *op)
{
	IrError *e;
	const IrType *x = op->ops[0]->type, *r = op->res[0].type;
	const IrType *el = ir_scalar(x);
	int rank = rank_of(x);
	int64_t shape[IR_MAX_RANK + 1];
	switch (op->opc) {
	case OP_SPLAT:
		if (ir_is_block(x))
			return fail(V, op, "operand must be a scalar, got %s", ts(V, x));
		if (!ir_is_block(r) || r->elem != x)
			return fail(V, op, "result must be a block of %s, got %s", ts(V, x),
				    ts(V, r));
		return NULL;
	case OP_BROADCAST:
		if ((e = need_block(V, op, "operand", x)) || (e = need_block(V, op, "result", r)))
			return e;
		if (r->elem != el || r->rank != rank)
			return fail(V, op,
				    "result must keep the element type and rank of %s, got %s",
				    ts(V, x), ts(V, r));
		for (int i = 0; i < rank; i++)
			if (x->shape[i] != r->shape[i] && x->shape[i] != 1)
				return fail(V, op,
					    "cannot broadcast %s to %s: dim %d is %lld, expected "
					    "%lld or 1",
					    ts(V, x), ts(V, r), i, (long long)x->shape[i],
					    (long long)r->shape[i]);
		return NULL;
	case OP_EXPAND_DIMS: {
		int64_t axis;
		if ((e = get_int(V, op, "axis", &axis)))
			return e;
		if (axis < 0 || axis > rank || rank + 1 > IR_MAX_RANK)
			return fail(V, op, "axis %lld is out of range for an operand of rank %d",
				    (long long)axis, rank);
		for (int i = 0, k = 0; i <= rank; i++)
			shape[i] = i == axis ? 1 : x->shape[k++];
		return want_dims(V, op, 0, el, rank + 1, shape, "a size-1 dim inserted at axis");
	}
	case OP_RESHAPE:
		if ((e = need_block(V, op, "operand", x)) || (e = need_block(V, op, "result", r)))
			return e;
		if (r->elem != el || r->numel != x->numel)
			return fail(V, op, "must keep the element type and count, got %s to %s",
				    ts(V, x), ts(V, r));
		return check_opt(V, op, "can_reorder", ATTR_BOOL);
	case OP_TRANS: {
		const IrAttr *a;
		if ((e = need_block(V, op, "operand", x)))
			return e;
		if ((e = get_attr(V, op, "order", ATTR_INTS, true, &a)))
			return e;
		if (a->n != rank || !is_perm(a->n, a->ints))
			return fail(V, op, "order %s must be a permutation of 0..%d",
				    ints_str(V, a->n, a->ints), rank - 1);
		for (int i = 0; i < rank; i++)
			shape[i] = x->shape[a->ints[i]];
		return want_dims(V, op, 0, el, rank, shape, "the operand's dims permuted by order");
	}
	case OP_CAT: {
		const IrType *y = op->ops[1]->type;
		if ((e = need_block(V, op, "operand", x)) || (e = need_block(V, op, "operand", y)))
			return e;
		bool ok = y->elem == el && y->rank == rank;
		for (int i = 1; ok && i < rank; i++)
			ok = x->shape[i] == y->shape[i];
		if (!ok)
			return fail(V, op,
				    "operands must have one element type, one rank and equal dims "
				    "after "
				    "dim 0, got %s and %s",
				    ts(V, x), ts(V, y));
		memcpy(shape, x->shape, (size_t)rank * sizeof(int64_t));
		shape[0] = x->shape[0] + y->shape[0];
		if ((e = want_dims(V, op, 0, el, rank, shape,
				   "the operands concatenated along dim 0")))
			return e;
		return check_opt(V, op, "can_reorder", ATTR_BOOL);
	}
	case OP_JOIN:
		if (op->ops[1]->type != x)
			return fail(V, op, "operands must have the same type, got %s and %s",
				    ts(V, x), ts(V, op->ops[1]->type));
		if (rank + 1 > IR_MAX_RANK)
			return fail(V, op, "operand rank %d is too large", rank);
		for (int i = 0; i < rank; i++)
			shape[i] = x->shape[i];
		shape[rank] = 2;
		return want_dims(V, op, 0, el, rank + 1, shape,
				 "the operand shape with a new minor dim of 2");
	case OP_SPLIT:
		if ((e = need_block(V, op, "operand", x)))
			return e;
		if (x->shape[rank - 1] != 2)
			return fail(V, op, "operand's last dim must be 2, got %s", ts(V, x));
		for (int i = 0; i < 2; i++)
			if ((e = want_dims(V, op, i, el, rank - 1, x->shape,
					   "the operand without its last dim")))
				return e;
		return NULL;
	case OP_GATHER: {
		const IrType *idx = op->ops[1]->type;
		int64_t axis;
		if ((e = need_block(V, op, "source", x)) || (e = need_block(V, op, "index", idx)))
			return e;
		if (!is_int_t(idx) || idx->rank != rank)
			return fail(
				V, op,
				"index must be an integer block of the source's rank %d, got %s",
				rank, ts(V, idx));
		if ((e = get_int(V, op, "axis", &axis)))
			return e;
		if (axis < 0 || axis >= rank)
			return fail(V, op, "axis %lld is out of range for rank %d", (long long)axis,
				    rank);
		for (int i = 0; i < rank; i++)
			if (i != axis && idx->shape[i] != x->shape[i])
				return fail(V, op,
					    "index dim %d must equal the source's (%lld), got %lld",
					    i, (long long)x->shape[i], (long long)idx->shape[i]);
		return want_dims(V, op, 0, el, rank, idx->shape,
				 "the index shape with the source's element type");
	}
	case OP_HISTOGRAM:
		if ((e = need_block(V, op, "input", x)))
			return e;
		if (!is_int_t(x))
			return fail(V, op, "input must be an integer block, got %s", ts(V, x));
		if (op->nops > 1) {
			const IrType *want = ir_type_like(V->ctx, x, ir_type(V->ctx, TY_I1));
			if (op->ops[1]->type != want)
				return fail(V, op,
					    "mask must be i1 of the input's shape (%s), got %s",
					    ts(V, want), ts(V, op->ops[1]->type));
		}
		if (!ir_is_block(r) || r->rank != 1 || r->elem->kind != TY_I32)
			return fail(V, op, "result must be a 1-D block of i32, got %s", ts(V, r));
		return NULL;
	case OP_CONVERT_LAYOUT:
		if ((e = need_block(V, op, "operand", x)))
			return e;
		return want_dims(V, op, 0, el, rank, x->shape,
				 "the operand's shape and element type");
	default:
		return NULL;
	}
}

/* ------------------------------------------------------------------------- */
/* Reductions, scans, dot                                                    */
/* ------------------------------------------------------------------------- */

/* A region's arguments must be exactly want[0..n). */
static IrError *check_region_args(Verifier *V, const IrOp *op, int reg, const char *rname, int n,
				  const IrType *(*want)(const IrOp *, int), const char *why)
{
	const IrBlock *b = op->regions[reg];
	if (b->nargs != n)
		return fail(V, op, "%s must have %d arguments (%s), got %d", rname, n, why,
			    b->nargs);
	for (int i = 0; i < n; i++)
		if (b->args[i]->type != want(op, i))
			return fail(V, op, "%s argument %d must be %s (%s), got %s", rname, i,
				    ts(V, want(op, i)), why, ts(V, b->args[i]->type));
	return NULL;
}

static const IrType *combiner_arg(const IrOp *op, int i)
{
	return ir_scalar(op->ops[i % op->nops]->type);
}

static const IrType *map_arg(const IrOp *op, int i)
{
	return ir_scalar(op->ops[i / ir_op_int(op, "pack", 1)]->type);
}

static const IrType *map_result(const IrOp *op, int i)
{
	return ir_scalar(op->res[i / ir_op_int(op, "pack", 1)].type);
}

/* map_elementwise: blocks of one shape in and out, pack scalars of each per
 * call of the region. */
static IrError *check_map(Verifier *V, const IrOp *op)
{
	IrError *e;
	int64_t pack;
	if ((e = get_int(V, op, "pack", &pack)))
		return e;
	if (pack < 1 || pack > 64)
		return fail(V, op, "pack must be between 1 and 64, got %lld", (long long)pack);
	if (op->nres < 1)
		return fail(V, op, "needs at least one result");
	const IrType *t = op->ops[0]->type;
	if ((e = need_block(V, op, "operand 0", t)))
		return e;
	for (int i = 0; i < op->nops; i++)
		if (!same_shape(op->ops[i]->type, t) || !ir_is_block(op->ops[i]->type))
			return fail(V, op, "operands and results must have one shape, got %s (operand 0) and %s "
				    "(operand %d)", ts(V, t), ts(V, op->ops[i]->type), i);
	for (int i = 0; i < op->nres; i++)
		if (!same_shape(op->res[i].type, t) || !ir_is_block(op->res[i].type))
			return fail(V, op, "operands and results must have one shape, got %s (operand 0) and %s "
				    "(result %d)", ts(V, t), ts(V, op->res[i].type), i);
	return check_region_args(V, op, 0, "region", op->nops * (int)pack, map_arg,
				 "pack elements of each operand");
}

static IrError *check_reduce_scan(Verifier *V, const IrOp *op)
{
	IrError *e;
	int n = op->nops;
	const IrType *t0 = op->ops[0]->type;
	int64_t axis;
	if ((e = need_block(V, op, "input 0", t0)))
		return e;
	for (int i = 1; i < n; i++)
		if (!same_shape(op->ops[i]->type, t0))
			return fail(V, op, "inputs must have one shape, got %s and %s", ts(V, t0),
				    ts(V, op->ops[i]->type));
	if ((e = get_int(V, op, "axis", &axis)))
		return e;
	if (axis < 0 || axis >= t0->rank)
		return fail(V, op, "axis %lld is out of range for rank %d", (long long)axis,
			    t0->rank);
	if (op->nres != n)
		return fail(V, op, "has %d results for %d inputs", op->nres, n);
	if (op->opc == OP_REDUCE) {
		int64_t shape[IR_MAX_RANK];
		int rank = 0;
		for (int d = 0; d < t0->rank; d++)
			if (d != axis)
				shape[rank++] = t0->shape[d];
		for (int i = 0; i < n; i++) {
			const IrType *el = ir_scalar(op->ops[i]->type), *r = op->res[i].type;
			bool ok = ir_scalar(r) == el && same_dims(rank, shape, r);
			if (!ok)
				return fail(V, op,
					    "result %d must be %s (input %d reduced along axis "
					    "%lld), got %s",
					    i, dims_str(V, el, rank, shape), i, (long long)axis,
					    ts(V, r));
		}
	} else {
		for (int i = 0; i < n; i++)
			if (op->res[i].type != op->ops[i]->type)
				return fail(V, op,
					    "result %d must have the type of input %d (%s), got %s",
					    i, i, ts(V, op->ops[i]->type), ts(V, op->res[i].type));
		if ((e = check_opt(V, op, "reverse", ATTR_BOOL)))
			return e;
	}
	return check_region_args(V, op, 0, "region", 2 * n, combiner_arg,
				 "the input element types, twice");
}

static IrError *check_dot(Verifier *V, const IrOp *op)
{
	const IrType *a = op->ops[0]->type, *b = op->ops[1]->type, *c = op->ops[2]->type;
	int r = rank_of(a);
	if ((r != 2 && r != 3) || rank_of(b) != r || rank_of(c) != r)
		return fail(V, op,
			    "operands must be blocks of rank 2 (or 3, batched), got %s, %s and %s",
			    ts(V, a), ts(V, b), ts(V, c));
	if (!is_num_t(a) || !is_num_t(b) || !is_num_t(c))
		return fail(V, op, "operands must be numeric, got %s, %s and %s", ts(V, a),
			    ts(V, b), ts(V, c));
	int64_t M = a->shape[r - 2], K = a->shape[r - 1], N = b->shape[r - 1];
	if (b->shape[r - 2] != K)
		return fail(V, op, "b must be %lldxN to match a (MxK) %s, got %s", (long long)K,
			    ts(V, a), ts(V, b));
	if (c->shape[r - 2] != M || c->shape[r - 1] != N)
		return fail(V, op, "acc must be %lldx%lld (MxN), got %s", (long long)M,
			    (long long)N, ts(V, c));
	if (r == 3 && (b->shape[0] != a->shape[0] || c->shape[0] != a->shape[0]))
		return fail(V, op, "batch dims must agree, got %s, %s and %s", ts(V, a), ts(V, b),
			    ts(V, c));
	if (op->res[0].type != c)
		return fail(V, op, "result must have the accumulator's type %s, got %s", ts(V, c),
			    ts(V, op->res[0].type));
	IrError *e;
	if ((e = check_opt(V, op, "input_precision", ATTR_STR)) ||
	    (e = check_opt(V, op, "max_num_imprecise_acc", ATTR_INT)))
		return e;
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* Calls and structured control flow                                         */
/* ------------------------------------------------------------------------- */

static IrError *check_call(Verifier *V, const IrOp *op)
{
	const IrAttr *a;
	IrError *e = get_attr(V, op, "callee", ATTR_SYM, true, &a);
	if (e)
		return e;
	IrFunc *g = V->f->module ? ir_module_find(V->f->module, a->s) : NULL;
	if (!g)
		return fail(V, op, "callee @%s is not a function of this module", a->s);
	if (op->nops != g->body->nargs)
		return fail(V, op, "passes %d arguments, @%s takes %d", op->nops, g->name,
			    g->body->nargs);
	for (int i = 0; i < op->nops; i++)
		if (op->ops[i]->type != g->body->args[i]->type)
			return fail(V, op, "argument %d must be %s (parameter %d of @%s), got %s",
				    i, ts(V, g->body->args[i]->type), i, g->name,
				    ts(V, op->ops[i]->type));
	if (op->nres != g->nres)
		return fail(V, op, "has %d results, @%s returns %d", op->nres, g->name, g->nres);
	for (int i = 0; i < op->nres; i++)
		if (op->res[i].type != g->restys[i])
			return fail(V, op, "result %d must be %s (result %d of @%s), got %s", i,
				    ts(V, g->restys[i]), i, g->name, ts(V, op->res[i].type));
	return NULL;
}

static const IrType *for_arg(const IrOp *op, int i)
{
	return i == 0 ? op->ops[0]->type : op->ops[2 + i]->type;
}

static const IrType *operand_type(const IrOp *op, int i)
{
	return op->ops[i]->type;
}

static const IrType *result_type(const IrOp *op, int i)
{
	return op->res[i].type;
}

/* The producer code of a warp-specialized kernel: scalars, loops and
 * tensor copies only (its warps hold no part of a block and take part in
 * no barrier of the consumers). */
static IrError *check_producer_block(Verifier *V, const IrOp *ws, const IrBlock *b)
{
	for (const IrOp *op = b->first; op; op = op->next) {
		switch (op->opc) {
		case OP_BARRIER:
		case OP_CALL:
		case OP_RETURN:
		case OP_WARP_SPEC:
		case OP_TMA_RELEASE:
		case OP_TMA_INIT:
		case OP_TMA_INVAL:
		case OP_LOCAL_READ:
		case OP_ASYNC_COPY:
		case OP_ASYNC_WAIT:
		case OP_ASYNC_COMMIT:
			return fail(V, ws, "region may not hold '%s' (the producer runs scalars, loops and tensor copies)",
				    ir_opinfo(op->opc)->name);
		default:
			break;
		}
		for (int i = 0; i < op->nres; i++)
			if (ir_is_block(op->res[i].type))
				return fail(V, ws, "region may not hold block values ('%s' makes %s)", ir_opinfo(op->opc)->name,
					    ts(V, op->res[i].type));
		for (int r = 0; r < op->nregions; r++) {
			for (int i = 0; i < op->regions[r]->nargs; i++)
				if (ir_is_block(op->regions[r]->args[i]->type))
					return fail(V, ws, "region may not hold block values (a '%s' carries %s)",
						    ir_opinfo(op->opc)->name, ts(V, op->regions[r]->args[i]->type));
			IrError *e = check_producer_block(V, ws, op->regions[r]);
			if (e)
				return e;
		}
	}
	return NULL;
}

static IrError *check_warp_spec(Verifier *V, const IrOp *op)
{
	int64_t n;
	IrError *e = get_int(V, op, "producer_warps", &n);
	if (e)
		return e;
	if (n < 1 || n > 4)
		return fail(V, op, "producer_warps must be 1 to 4, got %lld", (long long)n);
	if (!V->f->is_kernel || op->parent != V->f->body)
		return fail(V, op, "must be an op of a kernel's body (not nested, not in a noinline function)");
	if (op->regions[0]->nargs)
		return fail(V, op, "region takes no arguments");
	return check_producer_block(V, op, op->regions[0]);
}

static IrError *check_for(Verifier *V, const IrOp *op)
{
	const IrType *lb = op->ops[0]->type, *ub = op->ops[1]->type, *st = op->ops[2]->type;
	if (ir_is_block(lb) || !ir_is_int(lb))
		return fail(V, op, "bounds must be scalar integers, got %s", ts(V, lb));
	if (ub != lb || st != lb)
		return fail(V, op, "lb, ub and step must have the same type, got %s, %s and %s",
			    ts(V, lb), ts(V, ub), ts(V, st));
	int ninit = op->nops - 3;
	if (op->nres != ninit)
		return fail(V, op, "has %d results for %d loop-carried values", op->nres, ninit);
	for (int i = 0; i < ninit; i++)
		if (op->res[i].type != op->ops[3 + i]->type)
			return fail(V, op, "result %d must have the type of init %d (%s), got %s",
				    i, i, ts(V, op->ops[3 + i]->type), ts(V, op->res[i].type));
	return check_region_args(V, op, 0, "body", 1 + ninit, for_arg,
				 "the induction variable, then the loop-carried values");
}

static IrError *check_if(Verifier *V, const IrOp *op)
{
	const IrType *c = op->ops[0]->type;
	if (c->kind != TY_I1)
		return fail(V, op, "condition must be a scalar i1, got %s", ts(V, c));
	for (int r = 0; r < 2; r++)
		if (op->regions[r]->nargs)
			return fail(V, op, "%s region takes no arguments, got %d",
				    r ? "else" : "then", op->regions[r]->nargs);
	return NULL;
}

static IrError *check_while(Verifier *V, const IrOp *op)
{
	IrError *e;
	if ((e = check_region_args(V, op, 0, "before region", op->nops, operand_type,
				   "the init types")))
		return e;
	return check_region_args(V, op, 1, "after region", op->nres, result_type,
				 "the result types");
}


/* The byte width of a CUtensorMapDataType a tensor map may have (the codes
 * the launch encodes: u8, u16, u32, f16, f32, bf16); 0 for another code. */
static int tmap_dtype_bytes(int64_t dt)
{
	switch (dt) {
	case 0: return 1;
	case 1: case 6: case 9: return 2;
	case 2: case 7: return 4;
	default: return 0;
	}
}

/* tensormap_create: a pointer to 1-4 byte numbers, three integer scalars,
 * a ptr<i8> result, and a map description a tensor copy can use: a box row
 * of 16 to 128 bytes (a power of two) within the swizzle span, at most 256
 * rows, a data type of the element's width (NaN fill only for floats). */
static IrError *check_tmap_create(Verifier *V, const IrOp *op)
{
	IrError *e;
	const IrType *p = op->ops[0]->type;
	if (!is_ptr_t(p) || ir_is_block(p) || !p->elem || ir_is_block(p->elem) || !is_num_t(p->elem) ||
	    p->elem->kind == TY_I1 || ir_type_bits(p->elem) < 8 || ir_type_bits(p->elem) > 32)
		return fail(V, op, "operand 0 must be a scalar pointer to 1 to 4-byte numbers, got %s", ts(V, p));
	for (int i = 1; i < 4; i++) {
		const IrType *t = op->ops[i]->type;
		if (ir_is_block(t) || !is_int_t(t) || t->kind == TY_I1)
			return fail(V, op, "operand %d (%s) must be an integer scalar, got %s", i,
				    i == 1 ? "rows" : i == 2 ? "cols" : "row_stride", ts(V, t));
	}
	const IrType *r = op->res[0].type;
	if (!is_ptr_t(r) || ir_is_block(r) || !r->elem || r->elem->kind != TY_I8)
		return fail(V, op, "result must be a ptr<i8> (the map), got %s", ts(V, r));
	const IrAttr *box, *nan, *gs;
	int64_t sw, dt;
	if ((e = get_attr(V, op, "tma_box", ATTR_INTS, true, &box)) || (e = get_int(V, op, "tma_swizzle", &sw)) ||
	    (e = get_int(V, op, "tma_dtype", &dt)) || (e = get_attr(V, op, "tma_nan", ATTR_BOOL, true, &nan)) ||
	    (e = get_attr(V, op, "gscratch", ATTR_INT, false, &gs)))
		return e;
	int es = ir_type_bits(p->elem) / 8;
	if (tmap_dtype_bytes(dt) != es)
		return fail(V, op, "tma_dtype %lld is not a tensor-map data type of %s's width", (long long)dt,
			    ts(V, p->elem));
	if (nan->i && dt != 6 && dt != 7 && dt != 9)
		return fail(V, op, "tma_nan needs a float data type (f16, f32, bf16), got tma_dtype %lld", (long long)dt);
	if (sw != 0 && sw != 32 && sw != 64 && sw != 128)
		return fail(V, op, "tma_swizzle must be 0, 32, 64 or 128 (bytes), got %lld", (long long)sw);
	int64_t row = box->n == 2 ? box->ints[0] * es : 0;
	if (box->n != 2 || row < 16 || row > 128 || (row & (row - 1)) || box->ints[1] < 1 || box->ints[1] > 256 ||
	    (sw && row > sw))
		return fail(V, op,
			    "tma_box must be [inner, outer] with an inner row of 16 to 128 bytes (a power of two, within "
			    "the swizzle) and 1 to 256 rows, got %s",
			    ints_str(V, box->n, box->ints));
	if (gs && (gs->i < 0 || gs->i % 128))
		return fail(V, op, "gscratch must be a non-negative multiple of 128, got %lld", (long long)gs->i);
	return NULL;
}
/* The index of region b among the regions of its owner. */
static int region_index(const IrBlock *b)
{
	const IrOp *p = b->parent_op;
	for (int i = 0; i < p->nregions; i++)
		if (p->regions[i] == b)
			return i;
	return -1;
}

/* The types a `yield` must have: n of them, the i-th by want(parent, i). */
typedef struct YieldRule {
	int n;
	const IrType *(*want)(const IrOp *, int);
	const char *what;
} YieldRule;

static const IrType *for_init(const IrOp *op, int i)
{
	return op->ops[3 + i]->type;
}

static YieldRule yield_rule(const IrOp *p)
{
	YieldRule r = {0, NULL, NULL};
	switch (p->opc) {
	case OP_FOR:
		r = (YieldRule){p->nops - 3, for_init, "the 'for' loop-carried values"};
		break;
	case OP_IF:
		r = (YieldRule){p->nres, result_type, "the 'if' results"};
		break;
	case OP_WHILE:
		r = (YieldRule){p->nops, operand_type, "the 'while' inits"};
		break;
	case OP_MAP_ELEM:
		r = (YieldRule){p->nres * (int)ir_op_int(p, "pack", 1), map_result,
				"pack elements of each 'map_elementwise' result"};
		break;
	case OP_REDUCE:
	case OP_SCAN:
		r = (YieldRule){p->nops, combiner_arg,
				p->opc == OP_REDUCE ? "the 'reduce' input element types"
						    : "the 'scan' input element types"};
		break;
	default:
		break;
	}
	return r;
}

static IrError *check_terminator_operands(Verifier *V, const IrOp *op)
{
	const IrBlock *b = op->parent;
	if (op->opc == OP_RETURN) {
		IrFunc *f = V->f;
		if (op->nops != f->nres)
			return fail(V, op, "has %d operands, function @%s returns %d", op->nops,
				    f->name, f->nres);
		for (int i = 0; i < op->nops; i++)
			if (op->ops[i]->type != f->restys[i])
				return fail(V, op,
					    "operand %d must be %s (result %d of @%s), got %s", i,
					    ts(V, f->restys[i]), i, f->name,
					    ts(V, op->ops[i]->type));
		return NULL;
	}
	const IrOp *p = b->parent_op;
	if (op->opc == OP_CONDITION) {
		const IrType *c = op->ops[0]->type;
		if (c->kind != TY_I1)
			return fail(V, op, "operand 0 must be a scalar i1, got %s", ts(V, c));
		if (op->nops - 1 != p->nres)
			return fail(V, op, "forwards %d values, the 'while' has %d results",
				    op->nops - 1, p->nres);
		for (int i = 1; i < op->nops; i++)
			if (op->ops[i]->type != p->res[i - 1].type)
				return fail(V, op,
					    "operand %d must be %s (the type of 'while' result "
					    "%d), got %s",
					    i, ts(V, p->res[i - 1].type), i - 1,
					    ts(V, op->ops[i]->type));
		return NULL;
	}
	YieldRule r = yield_rule(p);
	if (op->nops != r.n)
		return fail(V, op, "must have %d operands to match %s, got %d", r.n, r.what,
			    op->nops);
	for (int i = 0; i < r.n; i++)
		if (op->ops[i]->type != r.want(p, i))
			return fail(V, op, "operand %d must be %s to match %s, got %s", i,
				    ts(V, r.want(p, i)), r.what, ts(V, op->ops[i]->type));
	return NULL;
}

/* The terminator block b must end with, and words for the block in messages. */
static IrOpcode block_terminator(const IrBlock *b, const char **desc)
{
	const IrOp *p = b->parent_op;
	if (!p) {
		*desc = "the function body";
		return OP_RETURN;
	}
	int ri = region_index(b);
	switch (p->opc) {
	case OP_FOR:
		*desc = "body";
		return OP_YIELD;
	case OP_IF:
		*desc = ri == 0 ? "then region" : "else region";
		return OP_YIELD;
	case OP_WHILE:
		*desc = ri == 0 ? "before region" : "after region";
		return ri == 0 ? OP_CONDITION : OP_YIELD;
	default:
		*desc = "region";
		return OP_YIELD;
	}
}

/* ------------------------------------------------------------------------- */
/* The walk                                                                  */
/* ------------------------------------------------------------------------- */

static IrError *check_op_rules(Verifier *V, const IrOp *op)
{
	IrError *e;
	const unsigned flags = ir_opinfo(op->opc)->flags;
	if (op->opc == OP_MAP_ELEM)
		return check_map(V, op);
	if (flags & IR_ELEM)
		return check_elementwise(V, op);
	switch (op->opc) {
	case OP_CONSTANT: {
		const IrType *r = op->res[0].type, *s = ir_scalar(r);
		const IrAttr *a = ir_op_attr(op, "value");
		if (!a)
			return fail(V, op, "needs attribute 'value'");
		if (ir_is_float(s)) {
			if (a->kind != ATTR_FLOAT)
				return fail(V, op,
					    "value must be a float for result type %s, got %s",
					    ts(V, r), attr_desc(a->kind));
		} else if (ir_is_int(s) || ir_is_ptr(s)) {
			if (a->kind != ATTR_INT && a->kind != ATTR_BOOL)
				return fail(V, op,
					    "value must be an integer for result type %s, got %s",
					    ts(V, r), attr_desc(a->kind));
		} else {
			return fail(
				V, op,
				"result must be a number or a pointer (or a block of them), got %s",
				ts(V, r));
		}
		return NULL;
	}
	case OP_POISON: {
		const IrType *s = ir_scalar(op->res[0].type);
		if (!ir_is_float(s) && !ir_is_int(s) && !ir_is_ptr(s))
			return fail(V, op, "result must be a number or a pointer (or a block of them), got %s",
				    ts(V, op->res[0].type));
		return NULL;
	}
	case OP_PROGRAM_ID:
	case OP_NUM_PROGRAMS: {
		int64_t axis;
		if ((e = get_int(V, op, "axis", &axis)))
			return e;
		if (axis < 0 || axis > 2)
			return fail(V, op, "axis must be 0, 1 or 2, got %lld", (long long)axis);
		if (op->res[0].type->kind != TY_I32)
			return fail(V, op, "result must be i32, got %s", ts(V, op->res[0].type));
		return NULL;
	}
	case OP_MAKE_RANGE: {
		int64_t start, end;
		if ((e = get_int(V, op, "start", &start)) || (e = get_int(V, op, "end", &end)))
			return e;
		int64_t n = end - start;
		if (end <= start || (n & (n - 1)) != 0 || n > IR_MAX_NUMEL || start < 0 ||
		    end > INT32_MAX)
			return fail(
				V, op,
				"needs end > start and a power-of-two length, got start = %lld, "
				"end = %lld",
				(long long)start, (long long)end);
		return want_dims(V, op, 0, ir_type(V->ctx, TY_I32), 1, &n,
				 "end - start values of i32");
	}
	case OP_SPLAT:
	case OP_BROADCAST:
	case OP_EXPAND_DIMS:
	case OP_RESHAPE:
	case OP_TRANS:
	case OP_CAT:
	case OP_JOIN:
	case OP_SPLIT:
	case OP_GATHER:
	case OP_HISTOGRAM:
	case OP_CONVERT_LAYOUT:
		return check_shape_op(V, op);
	case OP_LOAD:
	case OP_STORE:
	case OP_ATOMIC_RMW:
	case OP_ATOMIC_CAS:
		return check_memory(V, op);
	case OP_REDUCE:
	case OP_SCAN:
		return check_reduce_scan(V, op);
	case OP_DOT:
		return check_dot(V, op);
	case OP_MULTIPLE_OF:
	case OP_MAX_CONTIGUOUS:
	case OP_MAX_CONSTANCY: {
		const IrType *t = op->ops[0]->type;
		const IrAttr *a;
		if (op->res[0].type != t)
			return fail(V, op, "result must have the operand's type %s, got %s",
				    ts(V, t), ts(V, op->res[0].type));
		if ((e = get_attr(V, op, "values", ATTR_INTS, true, &a)))
			return e;
		int n = ir_is_block(t) ? t->rank : 1;
		if (a->n != n)
			return fail(V, op,
				    "values must have %d entries (one per dim of %s), got %d", n,
				    ts(V, t), a->n);
		for (int i = 0; i < n; i++)
			if (a->ints[i] < 1)
				return fail(V, op, "values must be positive, got %s",
					    ints_str(V, a->n, a->ints));
		return NULL;
	}
	case OP_ASYNC_COPY: {
		const IrType *vt;
		int64_t buf, st;
		if ((e = pointee(V, op, &vt)))
			return e;
		if (!ir_is_block(op->ops[0]->type))
			return fail(V, op, "operand 0 must be a block of pointers, got %s",
				    ts(V, op->ops[0]->type));
		if (op->ops[1]->type->kind != TY_I32)
			return fail(V, op, "slot must be a scalar i32, got %s", ts(V, op->ops[1]->type));
		/* the mask, or per element the count of elements copied from it on */
		if (op->nops > 2 && op->ops[2]->type != ir_type_like(V->ctx, op->ops[0]->type, ir_type(V->ctx, TY_I32)) &&
		    (e = check_mask(V, op, 2)))
			return e;
		if ((e = get_int(V, op, "buffer", &buf)) || (e = get_int(V, op, "stages", &st)))
			return e;
		if (buf < 0 || st < 1)
			return fail(V, op, "buffer must be >= 0 and stages >= 1, got %lld and %lld",
				    (long long)buf, (long long)st);
		return NULL;
	}
	case OP_ASYNC_WAIT: {
		int64_t n;
		if ((e = get_int(V, op, "pending", &n)))
			return e;
		if (n < 0)
			return fail(V, op, "pending must be >= 0, got %lld", (long long)n);
		return NULL;
	}
	case OP_TMA_COPY:
	case OP_TMA_WAIT:
	case OP_TMA_INIT:
	case OP_TMA_INVAL:
	case OP_TMA_RELEASE: {
		int64_t buf, st;
		const IrAttr *ta = ir_op_attr(op, "tile");
		if ((e = get_int(V, op, "buffer", &buf)) || (e = get_int(V, op, "stages", &st)))
			return e;
		if (buf < 0 || st < 1 || st > 30)
			return fail(V, op, "buffer must be >= 0 and stages 1 to 30, got %lld and %lld",
				    (long long)buf, (long long)st);
		if (!ta || ta->kind != ATTR_TYPE || !ir_is_block(ta->type) || ta->type->rank != 2)
			return fail(V, op, "needs a 2-D block type as its tile attribute");
		if (op->opc == OP_TMA_COPY) {
			if (!ir_is_ptr(op->ops[0]->type) || ir_is_block(op->ops[0]->type))
				return fail(V, op, "operand 0 must be a scalar pointer (the tensor map), got %s",
					    ts(V, op->ops[0]->type));
			if (op->nops != 3 + ta->type->rank)
				return fail(V, op, "takes the map, the slot, the predicate and %d coordinates, got %d operands",
					    ta->type->rank, op->nops);
			if (op->ops[2]->type->kind != TY_I1)
				return fail(V, op, "the predicate must be a scalar i1, got %s", ts(V, op->ops[2]->type));
			for (int i = 3; i < op->nops; i++)
				if (op->ops[i]->type->kind != TY_I32)
					return fail(V, op, "coordinates must be scalar i32, got %s", ts(V, op->ops[i]->type));
		}
		if (op->opc == OP_TMA_RELEASE) {
			if (!ir_op_int(op, "ws", 0))
				return fail(V, op, "releases a slot of a warp-specialized buffer only (ws = 1)");
			if (op->ops[1]->type->kind != TY_I1)
				return fail(V, op, "the predicate must be a scalar i1, got %s", ts(V, op->ops[1]->type));
		}
		if (ir_op_int(op, "empty", 0) && (op->opc != OP_TMA_WAIT || !ir_op_int(op, "ws", 0)))
			return fail(V, op, "empty = 1 is a tma_wait of a warp-specialized buffer (ws = 1)");
		int last = op->opc == OP_TMA_COPY || op->opc == OP_TMA_RELEASE ? op->opc == OP_TMA_COPY ? 2 : 1 : op->nops;
		for (int i = op->opc == OP_TMA_COPY ? 1 : 0; i < last; i++)
			if (op->ops[i]->type->kind != TY_I32)
				return fail(V, op, "operand %d must be a scalar i32, got %s", i, ts(V, op->ops[i]->type));
		return NULL;
	}
	case OP_WARP_SPEC:
		return check_warp_spec(V, op);
	case OP_LOCAL_READ: {
		int64_t buf;
		if (op->ops[0]->type->kind != TY_I32)
			return fail(V, op, "slot must be a scalar i32, got %s", ts(V, op->ops[0]->type));
		if (!ir_is_block(op->res[0].type))
			return fail(V, op, "result must be a block, got %s", ts(V, op->res[0].type));
		if ((e = get_int(V, op, "buffer", &buf)))
			return e;
		if (buf < 0)
			return fail(V, op, "buffer must be >= 0, got %lld", (long long)buf);
		return NULL;
	}
	case OP_TMAP_CREATE:
		return check_tmap_create(V, op);
	case OP_TMA_STORE: {
		const IrType *t = op->ops[3]->type;
		if (!ir_is_ptr(op->ops[0]->type) || ir_is_block(op->ops[0]->type))
			return fail(V, op, "operand 0 must be a scalar pointer (the tensor map), got %s",
				    ts(V, op->ops[0]->type));
		for (int i = 1; i < 3; i++)
			if (op->ops[i]->type->kind != TY_I32)
				return fail(V, op, "coordinates must be scalar i32, got %s", ts(V, op->ops[i]->type));
		if (!ir_is_block(t) || t->rank != 2)
			return fail(V, op, "the value must be a 2-D block, got %s", ts(V, t));
		/* a column window of the value: {col0, cols} */
		int64_t c0 = ir_op_int(op, "col0", 0), nc = ir_op_int(op, "cols", t->shape[1] - c0);
		if (c0 < 0 || nc <= 0 || c0 + nc > t->shape[1])
			return fail(V, op, "column window col0 = %lld, cols = %lld outside the value's %lld columns",
				    (long long)c0, (long long)nc, (long long)t->shape[1]);
		return NULL;
	}
	case OP_ASSUME:
	case OP_ASSERT:
		if (ir_scalar(op->ops[0]->type)->kind != TY_I1)
			return fail(V, op, "operand must be i1 (a scalar or a block), got %s",
				    ts(V, op->ops[0]->type));
		return op->opc == OP_ASSERT ? check_opt(V, op, "msg", ATTR_STR) : NULL;
	case OP_GDC:
		return check_str_in(V, op, "kind", true, gdc_kinds);
	case OP_PRINT:
		if ((e = check_opt(V, op, "prefix", ATTR_STR)) ||
		    (e = check_opt(V, op, "hex", ATTR_BOOL)))
			return e;
		return NULL;
	case OP_CALL:
		return check_call(V, op);
	case OP_FOR:
		return check_for(V, op);
	case OP_IF:
		return check_if(V, op);
	case OP_WHILE:
		return check_while(V, op);
	case OP_RETURN:
	case OP_CONDITION:
	case OP_YIELD:
		return check_terminator_operands(V, op);
	default:
		return NULL;
	}
}

static const char *count_str(const Verifier *V, int lo, int hi)
{
	if (hi < 0)
		return ir_fmt(V->ctx, "at least %d", lo);
	if (lo == hi)
		return ir_fmt(V->ctx, "%d", lo);
	return ir_fmt(V->ctx, "%d to %d", lo, hi);
}

/* Counts of ops.def, null pointers, and the parent links the walk relies on. */
static IrError *check_structure(Verifier *V, const IrOp *op, const IrBlock *b)
{
	if ((int)op->opc < 0 || op->opc >= OP_COUNT_)
		return fail_at(V, op->loc, "op with invalid opcode %d", (int)op->opc);
	const IrOpInfo *info = ir_opinfo(op->opc);
	if (op->parent != b)
		return fail(V, op, "has a wrong parent block link");
	if (op->nops < info->minops || (info->maxops >= 0 && op->nops > info->maxops))
		return fail(V, op, "takes %s operands, got %d",
			    count_str(V, info->minops, info->maxops), op->nops);
	if (info->nres >= 0 && op->nres != info->nres)
		return fail(V, op, "has %d results, expected %d", op->nres, info->nres);
	if (op->nregions != info->nregions)
		return fail(V, op, "has %d regions, expected %d", op->nregions, info->nregions);
	for (int i = 0; i < op->nops; i++)
		if (!op->ops[i])
			return fail(V, op, "operand %d is missing (null)", i);
	for (int i = 0; i < op->nres; i++) {
		const char *p = type_problem(V, op->res[i].type);
		if (p)
			return fail(V, op, "result %d %s", i, p);
	}
	for (int i = 0; i < op->nregions; i++)
		if (!op->regions[i] || op->regions[i]->parent_op != op)
			return fail(V, op, "region %d has a wrong parent op link", i);
	return NULL;
}

static IrError *check_uses(Verifier *V, const IrOp *op)
{
	for (int i = 0; i < op->nops; i++) {
		const IrValue *v = op->ops[i];
		int vis = visibility(V, v);
		if (vis > 0)
			continue;
		const char *what = v->def ? ir_fmt(V->ctx, "a result of '%s'", opname(v->def))
					  : "a block argument";
		if (vis < 0)
			return fail(
				V, op,
				"operand %d (%s) is defined inside a region that does not enclose "
				"this op",
				i, what);
		return fail(V, op, "operand %d (%s) used before its definition", i, what);
	}
	return NULL;
}

static IrError *walk_block(Verifier *V, IrBlock *b);

static IrError *walk_op(Verifier *V, IrOp *op, IrBlock *b)
{
	IrError *e;
	if ((e = check_structure(V, op, b)) || (e = check_uses(V, op)))
		return e;
	if (ir_opinfo(op->opc)->flags & IR_TERM) {
		const char *desc;
		IrOpcode want = block_terminator(b, &desc);
		if (op != b->last)
			return fail(V, op, "must be the last op of its block");
		if (op->opc != want) {
			const char *owner =
				b->parent_op
					? ir_fmt(V->ctx, "the '%s' %s", opname(b->parent_op), desc)
					: ir_fmt(V->ctx, "%s of @%s", desc, V->f->name);
			return fail(V, op, "cannot end %s (expected '%s')", owner,
				    ir_opinfo(want)->name);
		}
	}
	if ((e = check_op_rules(V, op)))
		return e;
	for (int r = 0; r < op->nregions; r++) {
		IrBlock *rb = op->regions[r];
		size_t mark = V->nstack;
		for (int i = 0; i < rb->nargs; i++) {
			const char *p = type_problem(V, rb->args[i]->type);
			if (p)
				return fail(V, op, "region %d argument %d %s", r, i, p);
			define(V, rb->args[i]);
		}
		if ((e = walk_block(V, rb)))
			return e;
		leave(V, mark);
	}
	for (int i = 0; i < op->nres; i++)
		define(V, &op->res[i]);
	return NULL;
}

static IrError *walk_block(Verifier *V, IrBlock *b)
{
	IrError *e;
	for (IrOp *op = b->first; op; op = op->next)
		if ((e = walk_op(V, op, b)))
			return e;
	const IrOp *last = b->last;
	if (last && (ir_opinfo(last->opc)->flags & IR_TERM))
		return NULL;
	const char *desc;
	IrOpcode want = block_terminator(b, &desc);
	const IrOp *p = b->parent_op;
	if (!p)
		return fail_at(V, V->f->loc, "function @%s must end with 'return'", V->f->name);
	if (p->opc == OP_IF && !b->first && region_index(b) == 1) {
		if (p->nres == 0)
			return NULL;
		return fail(V, p,
			    "else region must end with 'yield' (it may be empty only when the "
			    "'if' has no results)");
	}
	return fail(V, p, "%s must end with '%s'", desc, ir_opinfo(want)->name);
}

static IrError *verify_func(Verifier *V)
{
	IrFunc *f = V->f;
	if (!f->body || f->body->parent_op)
		return fail_at(V, f->loc, "function @%s has no body block", f->name);
	for (int i = 0; i < f->nres; i++) {
		const char *p = type_problem(V, f->restys[i]);
		if (p)
			return fail_at(V, f->loc, "function @%s result %d %s", f->name, i, p);
	}
	for (int i = 0; i < f->body->nargs; i++) {
		const char *p = type_problem(V, f->body->args[i]->type);
		if (p)
			return fail_at(V, f->loc, "function @%s parameter %d %s", f->name, i, p);
		define(V, f->body->args[i]);
	}
	return walk_block(V, f->body);
}

IrError *ir_verify_func(IrFunc *f)
{
	Verifier V = {0};
	V.ctx = f->module->ctx;
	V.f = f;
	const IrAttr *nw = ir_find_attr(f->module->nattrs, f->module->attrs, "num_warps");
	V.num_warps = nw && nw->kind == ATTR_INT ? (int)nw->i : 0;
	IrError *e = verify_func(&V);
	free(V.slots);
	free(V.stack);
	return e;
}

IrError *ir_verify(IrModule *m)
{
	for (int i = 0; i < m->nfuncs; i++)
		for (int j = 0; j < i; j++)
			if (strcmp(m->funcs[i]->name, m->funcs[j]->name) == 0)
				return ir_error(m->ctx, IR_ERR_VERIFY, m->funcs[i]->loc,
						"function @%s is defined twice", m->funcs[i]->name);
	for (int i = 0; i < m->nfuncs; i++) {
		IrError *e = ir_verify_func(m->funcs[i]);
		if (e)
			return e;
	}
	return NULL;
}
