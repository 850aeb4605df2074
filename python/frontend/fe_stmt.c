/* fe_stmt.c: statements of @jit functions, structured control flow and the
 * inlining of @jit callees.
 *
 * SSA construction: a scope maps each Python name to its current frontend
 * value. An `if` on a runtime condition lowers each branch in a copy of the
 * scope, then yields, as results of the `if` op, every name a branch
 * redefined (a tuple, such as a block pointer, leaf by leaf: only the leaves
 * that differ, the others stay what they were). Loops carry every name that the body assigns and that exists
 * before the loop (found by a syntactic scan of the body): those become the
 * loop's iteration arguments and results, and their types must not change.
 * Conditions known at compile time fold; tl.static_range unrolls.
 */
#include <string.h>

#include "python/frontend/fe.h"

FeVal *fe_where(Fe *fe, PyObject *node, FeVal *c, FeVal *a, FeVal *b);
static bool stmt(Fe *fe, PyObject *node, PyObject *rest, Py_ssize_t *skip);

/* ---- scopes ------------------------------------------------------------- */

FeVal *fe_scope_get(FeScope *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (s->vars[i].name == name)
			return s->vars[i].val;
	return NULL;
}

void fe_scope_set(Fe *fe, FeScope *s, const char *name, FeVal *v)
{
	for (int i = 0; i < s->n; i++)
		if (s->vars[i].name == name) {
			s->vars[i].val = v;
			return;
		}
	if (s->n == s->cap) {
		int cap = s->cap ? 2 * s->cap : 16;
		FeVar *nv = ir_alloc(fe->ctx, sizeof(FeVar) * (size_t)cap);
		if (s->n)
			memcpy(nv, s->vars, sizeof(FeVar) * (size_t)s->n);
		s->vars = nv;
		s->cap = cap;
	}
	s->vars[s->n].name = name;
	s->vars[s->n].val = v;
	s->n++;
}

static FeScope scope_copy(Fe *fe, const FeScope *s)
{
	FeScope c = {0};
	c.cap = s->n + 16;
	c.vars = ir_alloc(fe->ctx, sizeof(FeVar) * (size_t)c.cap);
	memcpy(c.vars, s->vars, sizeof(FeVar) * (size_t)s->n);
	c.n = s->n;
	return c;
}

/* ---- helpers ---------------------------------------------------------- */

static PyObject *child(Fe *fe, PyObject *node, const char *name)
{
	return fe_attr(fe, node, name);
}

static const char *name_of(Fe *fe, PyObject *node)
{
	return ir_intern(fe->ctx, PyUnicode_AsUTF8AndSize(child(fe, node, "id"), NULL));
}

typedef struct Names {
	int n, cap;
	const char **v;
} Names;

static void names_add(Fe *fe, Names *ns, const char *name)
{
	for (int i = 0; i < ns->n; i++)
		if (ns->v[i] == name)
			return;
	if (ns->n == ns->cap) {
		int cap = ns->cap ? 2 * ns->cap : 16;
		const char **nv = ir_alloc(fe->ctx, sizeof(char *) * (size_t)cap);
		if (ns->n)
			memcpy(nv, ns->v, sizeof(char *) * (size_t)ns->n);
		ns->v = nv;
		ns->cap = cap;
	}
	ns->v[ns->n++] = name;
}

static void scan_target(Fe *fe, PyObject *t, Names *ns)
{
	FeNode k = fe_kind(fe, t);
	if (k == N_Name)
		names_add(fe, ns, name_of(fe, t));
	else if (k == N_Tuple || k == N_List) {
		PyObject *elts = child(fe, t, "elts");
		for (Py_ssize_t i = 0; i < PyList_Size(elts); i++)
			scan_target(fe, PyList_GetItem(elts, i), ns);
	} else if (k == N_Starred)
		scan_target(fe, child(fe, t, "value"), ns);
}

/* Names assigned anywhere in a statement list (not inside nested defs). */
static void scan_assigned(Fe *fe, PyObject *stmts, Names *ns)
{
	for (Py_ssize_t i = 0; stmts && i < PyList_Size(stmts); i++) {
		PyObject *s = PyList_GetItem(stmts, i);
		switch (fe_kind(fe, s)) {
		case N_Assign: {
			PyObject *ts = child(fe, s, "targets");
			for (Py_ssize_t j = 0; j < PyList_Size(ts); j++)
				scan_target(fe, PyList_GetItem(ts, j), ns);
			break;
		}
		case N_AugAssign:
		case N_AnnAssign: scan_target(fe, child(fe, s, "target"), ns); break;
		case N_For:
			scan_target(fe, child(fe, s, "target"), ns);
			scan_assigned(fe, child(fe, s, "body"), ns);
			scan_assigned(fe, child(fe, s, "orelse"), ns);
			break;
		case N_While:
		case N_If:
			scan_assigned(fe, child(fe, s, "body"), ns);
			scan_assigned(fe, child(fe, s, "orelse"), ns);
			break;
		case N_With: scan_assigned(fe, child(fe, s, "body"), ns); break;
		default: break;
		}
	}
}

static bool contains_return(Fe *fe, PyObject *stmts)
{
	for (Py_ssize_t i = 0; stmts && i < PyList_Size(stmts); i++) {
		PyObject *s = PyList_GetItem(stmts, i);
		switch (fe_kind(fe, s)) {
		case N_Return: return true;
		case N_With:
			if (contains_return(fe, child(fe, s, "body")))
				return true;
			break;
		case N_If:
		case N_For:
		case N_While:
			if (contains_return(fe, child(fe, s, "body")) ||
			    contains_return(fe, child(fe, s, "orelse")))
				return true;
			break;
		default: break;
		}
	}
	return false;
}

static bool is_number_obj(PyObject *o)
{
	return PyLong_Check(o) || PyFloat_Check(o) || PyBool_Check(o);
}

/* Converts v to an IR value of exactly type t (for yields); NULL + error. */
static IrValue *coerce(Fe *fe, PyObject *node, const char *name, FeVal *v, const IrType *t,
		       const char *what)
{
	if (fe_is_tensor(v)) {
		if (v->v->type == t)
			return v->v;
		return fe_err(fe, node, IR_ERR_TYPE, "%s %s changed type from %s to %s", what, name,
			      fe_tyname(fe, t), fe_tyname(fe, v->v->type));
	}
	if (fe_is_const(v) && is_number_obj(v->obj))
		return fe_to_ir(fe, node, v, t);
	if (v && v->kind == V_UNDEF)
		return fe_err(fe, node, IR_ERR_VALUE, "%s", v->why);
	return fe_err(fe, node, IR_ERR_TYPE, "%s %s must hold a tensor or a number here", what, name);
}

/* ---- assignment --------------------------------------------------------- */

/* v, marked lifted when it is a number (see FeVal.lifted). */
static FeVal *lift_number(Fe *fe, FeVal *v)
{
	if (!fe_is_const(v) || v->lifted || !(PyLong_Check(v->obj) || PyFloat_Check(v->obj)))
		return v;
	FeVal *l = ir_alloc(fe->ctx, sizeof(FeVal));
	*l = *v;
	l->lifted = true;
	return l;
}

/* Binds target to v; lift: a plain assignment (x = v, x += v), whose
 * numbers act as scalar tensors. */
static bool assign_to(Fe *fe, PyObject *target, FeVal *v, bool lift)
{
	FeNode k = fe_kind(fe, target);
	if (k == N_Name) {
		if (v->kind == V_METHOD)
			return fe_err(fe, target, IR_ERR_SYNTAX, "cannot assign a bound tensor method");
		fe_scope_set(fe, &fe->fn->scope, name_of(fe, target), lift ? lift_number(fe, v) : v);
		return true;
	}
	if (k == N_Tuple || k == N_List) {
		PyObject *elts = child(fe, target, "elts");
		Py_ssize_t n = PyList_Size(elts);
		int have;
		FeVal **items;
		if (v->kind == V_TUPLE) {
			have = v->n;
			items = v->items;
		} else if (fe_is_const(v) && (PyTuple_Check(v->obj) || PyList_Check(v->obj))) {
			PyObject *t = fe_keep(fe, PySequence_Tuple(v->obj));
			have = (int)PyTuple_Size(t);
			items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(have + 1));
			for (int i = 0; i < have; i++)
				items[i] = fe_const(fe, PyTuple_GetItem(t, i));
		} else
			return fe_err(fe, target, IR_ERR_TYPE, "cannot unpack a non-tuple value");
		if (have != n)
			return fe_err(fe, target, IR_ERR_VALUE,
				      "cannot unpack %d values into %d names", have, (int)n);
		for (Py_ssize_t i = 0; i < n; i++)
			if (!assign_to(fe, PyList_GetItem(elts, i), items[i], lift))
				return false;
		return true;
	}
	if (k == N_Subscript)
		return fe_err(fe, target, IR_ERR_SYNTAX,
			      "unsupported syntax: assignment to a subscript (tensors are immutable; "
			      "use tl.where or tl.store)");
	if (k == N_Attribute)
		return fe_err(fe, target, IR_ERR_SYNTAX,
			      "unsupported syntax: assignment to an attribute is not supported in @jit functions");
	return fe_err(fe, target, IR_ERR_SYNTAX, "unsupported assignment target");
}

static bool assign(Fe *fe, PyObject *target, FeVal *v)
{
	return assign_to(fe, target, v, false);
}

static bool is_constexpr_annotation(Fe *fe, PyObject *ann)
{
	FeVal *a = fe_expr(fe, ann);
	if (!a) {
		ir_ctx_clear_error(fe->ctx);
		return false;
	}
	return fe_is_const(a) && a->obj == fe->cls_constexpr;
}

/* ---- if ------------------------------------------------------------------ */

static bool lower_branch(Fe *fe, IrBlock *blk, PyObject *stmts, FeScope *scope)
{
	IrBuilder saved = fe->b;
	FeScope outer = fe->fn->scope;
	fe->fn->scope = *scope;
	ir_builder_at_end(&fe->b, blk);
	fe->b.loc = saved.loc;
	fe->fn->if_depth++;
	bool ok = fe_stmts(fe, stmts);
	fe->fn->if_depth--;
	*scope = fe->fn->scope;
	fe->fn->scope = outer;
	fe->b = saved;
	return ok;
}

static bool values_equal_const(FeVal *a, FeVal *b)
{
	if (!fe_is_const(a) || !fe_is_const(b))
		return false;
	if (a->obj == b->obj)
		return true;
	if (Py_TYPE(a->obj) != Py_TYPE(b->obj))
		return false;
	int r = PyObject_RichCompareBool(a->obj, b->obj, Py_EQ);
	PyErr_Clear();
	return r == 1;
}

static const IrType *default_type(Fe *fe, PyObject *node, FeVal *v)
{
	IrValue *tmp;
	(void)tmp;
	if (fe_is_tensor(v))
		return v->v->type;
	if (PyBool_Check(v->obj))
		return ir_type(fe->ctx, TY_I1);
	if (PyFloat_Check(v->obj))
		return ir_type(fe->ctx, TY_F32);
	if (PyLong_Check(v->obj)) {
		int overflow = 0;
		long long x = PyLong_AsLongLongAndOverflow(v->obj, &overflow);
		if (overflow || x < -2147483648LL || x >= 2147483648LL)
			return ir_type(fe->ctx, TY_I64);
		return ir_type(fe->ctx, TY_I32);
	}
	return fe_err(fe, node, IR_ERR_TYPE, "this value cannot be carried at run time");
}

static bool is_tuple_val(FeVal *v);
static int tuple_len(FeVal *v);
static FeVal *tuple_item(Fe *fe, FeVal *v, int i);

/* The values of a runtime `if`'s results: one slot per name or tuple leaf
 * the branches give different values. */
typedef struct IfSlots {
	int n, cap;
	const IrType **tys;
	IrValue **y1, **y2;
	IrBlock *tb, *eb;
} IfSlots;

/* One slot for a name (or a leaf of its tuple) with values v1 and v2 in the
 * then and else branches: both yielded as the type they share. */
static bool if_slot(Fe *fe, PyObject *node, const char *nm, FeVal *v1, FeVal *v2, IfSlots *sl)
{
	if (v1->kind == V_TUPLE || v2->kind == V_TUPLE || v1->kind == V_METHOD || v2->kind == V_METHOD ||
	    (fe_is_const(v1) && !is_number_obj(v1->obj)) || (fe_is_const(v2) && !is_number_obj(v2->obj)))
		return fe_err(fe, node, IR_ERR_TYPE,
			      "variable '%s' gets different compile-time values in the branches of a "
			      "runtime `if`; only tensors and numbers can be merged",
			      nm);
	const IrType *t;
	if (fe_is_tensor(v1) && fe_is_tensor(v2)) {
		if (v1->v->type != v2->v->type)
			return fe_err(fe, node, IR_ERR_TYPE,
				      "Mismatched type for %s: %s in the then-branch, %s in the "
				      "else-branch; both branches must give it the same type",
				      nm, fe_tyname(fe, v1->v->type), fe_tyname(fe, v2->v->type));
		t = v1->v->type;
	} else if (fe_is_tensor(v1))
		t = v1->v->type;
	else if (fe_is_tensor(v2))
		t = v2->v->type;
	else {
		t = default_type(fe, node, v1);
		if (!t)
			return false;
		if (PyFloat_Check(v2->obj) && !ir_is_float(t))
			t = ir_type(fe->ctx, TY_F32);
	}
	if (sl->n == sl->cap) {
		int cap = sl->cap ? 2 * sl->cap : 16;
		const IrType **nt = ir_alloc(fe->ctx, sizeof(IrType *) * (size_t)cap);
		IrValue **n1 = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)cap);
		IrValue **n2 = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)cap);
		if (sl->n) {
			memcpy(nt, sl->tys, sizeof(IrType *) * (size_t)sl->n);
			memcpy(n1, sl->y1, sizeof(IrValue *) * (size_t)sl->n);
			memcpy(n2, sl->y2, sizeof(IrValue *) * (size_t)sl->n);
		}
		sl->tys = nt;
		sl->y1 = n1;
		sl->y2 = n2;
		sl->cap = cap;
	}
	IrBuilder saved = fe->b;
	ir_builder_at_end(&fe->b, sl->tb);
	fe->b.loc = fe_loc(fe, node);
	IrValue *a = coerce(fe, node, nm, v1, t, "variable");
	ir_builder_at_end(&fe->b, sl->eb);
	fe->b.loc = fe_loc(fe, node);
	IrValue *b = a ? coerce(fe, node, nm, v2, t, "variable") : NULL;
	fe->b = saved;
	if (!b)
		return false;
	sl->tys[sl->n] = t;
	sl->y1[sl->n] = a;
	sl->y2[sl->n] = b;
	sl->n++;
	return true;
}

/* The slots of two values of a name: none when they are the same, one per
 * differing leaf when both are tuples of one structure (a namedtuple, a
 * tensor descriptor or a block pointer keeps its constant parts). */
static bool if_slots(Fe *fe, PyObject *node, const char *nm, FeVal *v1, FeVal *v2, IfSlots *sl)
{
	if (v1 == v2 || values_equal_const(v1, v2))
		return true;
	if (is_tuple_val(v1) && is_tuple_val(v2)) {
		PyObject *c1 = v1->kind == V_TUPLE ? v1->obj : NULL, *c2 = v2->kind == V_TUPLE ? v2->obj : NULL;
		if (tuple_len(v1) != tuple_len(v2) || c1 != c2)
			return fe_err(fe, node, IR_ERR_TYPE,
				      "variable '%s' holds tuples of different structures in the branches of a "
				      "runtime `if`",
				      nm);
		for (int i = 0; i < tuple_len(v1); i++)
			if (!if_slots(fe, node, nm, tuple_item(fe, v1, i), tuple_item(fe, v2, i), sl))
				return false;
		return true;
	}
	return if_slot(fe, node, nm, v1, v2, sl);
}

/* The value after the `if` of a name given v1 and v2: the if's results
 * res[*k...] where if_slots made slots. */
static FeVal *if_rebuild(Fe *fe, FeVal *v1, FeVal *v2, IrValue *res, int *k)
{
	if (v1 == v2 || values_equal_const(v1, v2))
		return v1;
	if (is_tuple_val(v1) && is_tuple_val(v2)) {
		int n = tuple_len(v1);
		FeVal **items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(n + 1));
		for (int i = 0; i < n; i++)
			items[i] = if_rebuild(fe, tuple_item(fe, v1, i), tuple_item(fe, v2, i), res, k);
		FeVal *r = fe_make_tuple(fe, n, items);
		if (r->kind == V_TUPLE && v1->kind == V_TUPLE)
			r->obj = v1->obj; /* keeps a namedtuple's class */
		return r;
	}
	return fe_tensor(fe, &res[(*k)++]);
}

static bool if_runtime(Fe *fe, PyObject *node, IrValue *cond)
{
	FeScope s0 = fe->fn->scope;
	FeScope s1 = scope_copy(fe, &s0), s2 = scope_copy(fe, &s0);
	IrBlock *tb = ir_block_new(fe->ctx), *eb = ir_block_new(fe->ctx);
	if (!lower_branch(fe, tb, child(fe, node, "body"), &s1))
		return false;
	if (!lower_branch(fe, eb, child(fe, node, "orelse"), &s2))
		return false;
	int line = fe_loc(fe, node).line;
	Names changed = {0};
	for (int i = 0; i < s1.n; i++)
		if (fe_scope_get(&s0, s1.vars[i].name) != s1.vars[i].val)
			names_add(fe, &changed, s1.vars[i].name);
	for (int i = 0; i < s2.n; i++)
		if (fe_scope_get(&s0, s2.vars[i].name) != s2.vars[i].val)
			names_add(fe, &changed, s2.vars[i].name);
	/* per name: its two values when they are merged by slots */
	FeVal **m1 = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(changed.n + 1));
	FeVal **m2 = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(changed.n + 1));
	IfSlots sl = {0};
	sl.tb = tb;
	sl.eb = eb;
	sl.cap = 1;
	sl.tys = ir_alloc(fe->ctx, sizeof(IrType *));
	sl.y1 = ir_alloc(fe->ctx, sizeof(IrValue *));
	sl.y2 = ir_alloc(fe->ctx, sizeof(IrValue *));
	FeScope out = scope_copy(fe, &s0);
	for (int i = 0; i < changed.n; i++) {
		const char *nm = changed.v[i];
		FeVal *v1 = fe_scope_get(&s1, nm), *v2 = fe_scope_get(&s2, nm);
		m1[i] = m2[i] = NULL;
		if (!v1 || !v2) {
			FeVal *u = ir_alloc(fe->ctx, sizeof(FeVal));
			u->kind = V_UNDEF;
			u->why = ir_fmt(fe->ctx,
					"variable '%s' is defined only in the %s branch of the `if` at line %d; "
					"define it before the `if` or in both branches",
					nm, v1 ? "then" : "else", line);
			fe_scope_set(fe, &out, nm, u);
			continue;
		}
		if (v1 == v2 || values_equal_const(v1, v2)) {
			fe_scope_set(fe, &out, nm, v1);
			continue;
		}
		if (v1->kind == V_UNDEF || v2->kind == V_UNDEF) {
			fe_scope_set(fe, &out, nm, v1->kind == V_UNDEF ? v1 : v2);
			continue;
		}
		if (!if_slots(fe, node, nm, v1, v2, &sl))
			return false;
		m1[i] = v1;
		m2[i] = v2;
	}
	IrBuilder saved = fe->b;
	fe_set_loc(fe, node);
	ir_builder_at_end(&fe->b, tb);
	fe_set_loc(fe, node);
	ir_yield(&fe->b, sl.n, sl.y1);
	ir_builder_at_end(&fe->b, eb);
	fe_set_loc(fe, node);
	ir_yield(&fe->b, sl.n, sl.y2);
	fe->b = saved;
	fe_set_loc(fe, node);
	IrOp *op = ir_build(&fe->b, OP_IF, 1, &cond, sl.n, sl.tys, 2);
	ir_op_set_region(op, 0, tb);
	ir_op_set_region(op, 1, eb);
	int k = 0;
	for (int i = 0; i < changed.n; i++)
		if (m1[i])
			fe_scope_set(fe, &out, changed.v[i], if_rebuild(fe, m1[i], m2[i], op->res, &k));
	fe->fn->scope = out;
	return true;
}

/* list + rest, a new list (rest may be NULL). */
static PyObject *concat_stmts(Fe *fe, PyObject *list, PyObject *rest)
{
	PyObject *r = fe_keep(fe, PySequence_List(list));
	for (Py_ssize_t i = 0; rest && i < PyList_Size(rest); i++)
		PyList_Append(r, PyList_GetItem(rest, i));
	return r;
}

/* `if` on a runtime condition where a branch returns. The rest of the
 * statement list follows each branch (then + rest, else + rest), and both
 * return values are yielded by the `if` op. Every statement list around this
 * one was handled the same way (contains_return looks into nested
 * statements), so each branch runs to the end of the function. A branch
 * that falls off its end returns None when the other does too, else (as in
 * Triton) poison of the other's types: `if c: return x` gives x or poison. */
static bool if_return(Fe *fe, PyObject *node, IrValue *cond, PyObject *rest)
{
	FeFn *fn = fe->fn;
	FeVal *ret[2];
	bool fell[2];
	IrBlock *blk[2] = {ir_block_new(fe->ctx), ir_block_new(fe->ctx)};
	PyObject *bodies[2] = {concat_stmts(fe, child(fe, node, "body"), rest),
			       concat_stmts(fe, child(fe, node, "orelse"), rest)};
	FeScope s0 = fn->scope;
	for (int i = 0; i < 2; i++) {
		FeScope s = scope_copy(fe, &s0);
		fn->ret = NULL;
		fn->returned = false;
		if (!lower_branch(fe, blk[i], bodies[i], &s))
			return false;
		fell[i] = !fn->returned;
		ret[i] = fn->returned && fn->ret ? fn->ret : fe_none(fe);
	}
	if (fell[0] != fell[1]) /* the returning branch's values give the structure */
		ret[fell[0] ? 0 : 1] = ret[fell[0] ? 1 : 0];
	FeVal *flat[2][16];
	int n[2];
	for (int i = 0; i < 2; i++) {
		FeVal *r = ret[i];
		if (r->kind == V_TUPLE) {
			n[i] = r->n;
			for (int j = 0; j < r->n && j < 16; j++)
				flat[i][j] = r->items[j];
		} else if (fe_is_const(r) && r->obj == Py_None)
			n[i] = 0;
		else {
			n[i] = 1;
			flat[i][0] = r;
		}
	}
	if (n[0] != n[1] || n[0] > 16)
		return fe_err(fe, node, IR_ERR_TYPE, "the branches of this `if` return different numbers of values");
	const IrType *tys[16];
	IrValue *ys[2][16];
	IrBuilder saved = fe->b;
	for (int j = 0; j < n[0]; j++) {
		FeVal *a = flat[0][j], *b = flat[1][j];
		if (fe_is_tensor(a) && fe_is_tensor(b) && a->v->type != b->v->type)
			return fe_err(fe, node, IR_ERR_TYPE, "Return type mismatch: %s and %s (the branches of this `if` "
				      "return different types)", fe_tyname(fe, a->v->type), fe_tyname(fe, b->v->type));
		const IrType *t = fe_is_tensor(a) ? a->v->type : fe_is_tensor(b) ? b->v->type : default_type(fe, node, a);
		if (!t)
			return false;
		for (int i = 0; i < 2; i++) {
			ir_builder_at_end(&fe->b, blk[i]);
			fe_set_loc(fe, node);
			ys[i][j] = fell[i] && !fell[1 - i] ? ir_build1(&fe->b, OP_POISON, t, 0, NULL)
							   : coerce(fe, node, "return value", flat[i][j], t, "the");
			if (!ys[i][j])
				return false;
		}
		tys[j] = t;
	}
	for (int i = 0; i < 2; i++) {
		ir_builder_at_end(&fe->b, blk[i]);
		fe_set_loc(fe, node);
		ir_yield(&fe->b, n[0], ys[i]);
	}
	fe->b = saved;
	fe_set_loc(fe, node);
	IrOp *op = ir_build(&fe->b, OP_IF, 1, &cond, n[0], tys, 2);
	ir_op_set_region(op, 0, blk[0]);
	ir_op_set_region(op, 1, blk[1]);
	FeVal *items[16];
	for (int j = 0; j < n[0]; j++)
		items[j] = fe_tensor(fe, &op->res[j]);
	fn->ret = n[0] == 0 ? fe_none(fe) : n[0] == 1 && ret[0]->kind != V_TUPLE ? items[0] : fe_make_tuple(fe, n[0], items);
	fn->returned = true;
	fn->scope = s0;
	return true;
}

static bool if_stmt(Fe *fe, PyObject *node, PyObject *rest, Py_ssize_t *skip)
{
	FeVal *c = fe_expr(fe, child(fe, node, "test"));
	if (!c)
		return false;
	if (fe_is_const(c)) {
		int t = fe_truth(fe, node, c);
		if (t < 0)
			return false;
		PyObject *taken = child(fe, node, t ? "body" : "orelse");
		if (c->lifted && fe->fn->loop_depth == 0 && contains_return(fe, child(fe, node, t ? "orelse" : "body"))) {
			/* a number bound by a plain assignment is a scalar tensor to
			 * Triton: a runtime `if`, whose untaken branch's return still
			 * gives the function its return type (the taken path falling
			 * off the end then returns poison) */
			fe_set_loc(fe, node);
			IrValue *cond = fe_to_ir(fe, node, fe_const(fe, t ? Py_True : Py_False), ir_type(fe->ctx, TY_I1));
			if (!cond)
				return false;
			*skip = rest ? PyList_Size(rest) : 0;
			return if_return(fe, node, cond, rest);
		}
		if (rest && contains_return(fe, taken)) {
			/* a runtime `if` that returns inside needs the rest of this
			 * list as its continuation */
			*skip = PyList_Size(rest);
			return fe_stmts(fe, concat_stmts(fe, taken, rest));
		}
		return fe_stmts(fe, taken);
	}
	if (c->kind != V_TENSOR)
		return fe_err(fe, node, IR_ERR_TYPE, "the condition of an `if` must be a scalar or a constexpr");
	if (ir_is_block(c->v->type) && c->v->type->numel == 1) {
		/* a one-element block: its element (Triton unsplats it, with a warning) */
		c = fe_builtin_call(fe, child(fe, node, "test"), "item", c, 0, NULL, 0, NULL, NULL);
		if (!c)
			return false;
	}
	if (ir_is_block(c->v->type))
		return fe_err(fe, child(fe, node, "test"), IR_ERR_TYPE,
			      "the condition of an `if` must be a scalar, got %s (use tl.where for blocks)",
			      fe_tyname(fe, c->v->type));
	fe_set_loc(fe, node);
	IrValue *cond = fe_to_bool(fe, node, c->v);
	bool ret_then = contains_return(fe, child(fe, node, "body"));
	bool ret_else = contains_return(fe, child(fe, node, "orelse"));
	if (ret_then || ret_else) {
		if (fe->fn->loop_depth > 0)
			return fe_err(fe, node, IR_ERR_SYNTAX,
				      "unsupported syntax: `return` inside a runtime `if` within a loop");
		*skip = rest ? PyList_Size(rest) : 0;
		return if_return(fe, node, cond, rest);
	}
	return if_runtime(fe, node, cond);
}

/* ---- loops ------------------------------------------------------------- */

/* Loop-carried variables. A variable holding a tuple is split into its
 * leaves: every leaf that is a tensor or a number becomes one iteration
 * argument (a slot), other leaves are compile-time values that must stay
 * the same. The tuple is rebuilt from the slots in the body and after the
 * loop. */
typedef struct Carried {
	int n;              /* slots */
	const char **names; /* per slot: the variable's name */
	const IrType **tys;
	FeVal **init;       /* per slot: initial leaf value */
	int nv;             /* variables */
	const char **vnames;
	FeVal **tmpl;       /* per variable: its value before the loop */
} Carried;

static bool is_tuple_val(FeVal *v)
{
	return v && (v->kind == V_TUPLE || (fe_is_const(v) && PyTuple_Check(v->obj)));
}

static int tuple_len(FeVal *v)
{
	return v->kind == V_TUPLE ? v->n : (int)PyTuple_Size(v->obj);
}

static FeVal *tuple_item(Fe *fe, FeVal *v, int i)
{
	return v->kind == V_TUPLE ? v->items[i] : fe_const(fe, PyTuple_GetItem(v->obj, i));
}

static bool leaf_carried(FeVal *v)
{
	return fe_is_tensor(v) || (fe_is_const(v) && is_number_obj(v->obj));
}

/* Whether some leaf of v can be carried (tensor or number). */
static bool has_carried_leaf(Fe *fe, FeVal *v)
{
	if (is_tuple_val(v)) {
		for (int i = 0; i < tuple_len(v); i++)
			if (has_carried_leaf(fe, tuple_item(fe, v, i)))
				return true;
		return false;
	}
	return leaf_carried(v);
}

/* Walks template t and value v together; appends v's leaves at t's carried
 * leaves to out (out NULL: only counts). */
static bool carry_leaves(Fe *fe, PyObject *node, const char *nm, FeVal *t, FeVal *v, FeVal **out, int *k)
{
	if (v && v->kind == V_UNDEF)
		return fe_err(fe, node, IR_ERR_VALUE, "%s", v->why);
	if (is_tuple_val(t)) {
		if (!is_tuple_val(v) || tuple_len(v) != tuple_len(t))
			return fe_err(fe, node, IR_ERR_TYPE,
				      "loop-carried variable %s holds a tuple of %d elements before the loop and "
				      "%s at the end of the body; it must keep its structure",
				      nm, tuple_len(t),
				      is_tuple_val(v) ? ir_fmt(fe->ctx, "a tuple of %d", tuple_len(v))
						      : "a non-tuple value");
		for (int i = 0; i < tuple_len(t); i++)
			if (!carry_leaves(fe, node, nm, tuple_item(fe, t, i), tuple_item(fe, v, i), out, k))
				return false;
		return true;
	}
	if (t->kind == V_METHOD)
		return fe_err(fe, node, IR_ERR_TYPE, "variable '%s' holds a bound method and is reassigned in a loop",
			      nm);
	if (leaf_carried(t)) {
		if (out)
			out[*k] = v;
		(*k)++;
		return true;
	}
	if (t != v && !values_equal_const(t, v))
		return fe_err(fe, node, IR_ERR_TYPE,
			      "variable '%s' holds a compile-time value and cannot be reassigned inside a "
			      "runtime loop",
			      nm);
	return true;
}

/* Rebuilds a value shaped like template t from slot values. */
static FeVal *carry_rebuild(Fe *fe, FeVal *t, IrValue **vals, int *k)
{
	if (is_tuple_val(t)) {
		int n = tuple_len(t);
		FeVal **items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(n + 1));
		for (int i = 0; i < n; i++)
			items[i] = carry_rebuild(fe, tuple_item(fe, t, i), vals, k);
		FeVal *r = fe_make_tuple(fe, n, items);
		if (r->kind == V_TUPLE && t->kind == V_TUPLE)
			r->obj = t->obj; /* keeps a namedtuple's class */
		return r;
	}
	if (leaf_carried(t))
		return fe_tensor(fe, vals[(*k)++]);
	return t;
}

/* Binds every carried variable in s to its value rebuilt from vals. */
static void carry_bind(Fe *fe, FeScope *s, Carried *c, IrValue **vals)
{
	int k = 0;
	for (int i = 0; i < c->nv; i++)
		fe_scope_set(fe, s, c->vnames[i], carry_rebuild(fe, c->tmpl[i], vals, &k));
}

/* The slot values of the carried variables in scope s (NULL + error). */
static FeVal **carry_collect(Fe *fe, PyObject *node, Carried *c, FeScope *s)
{
	FeVal **out = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(c->n + 1));
	int k = 0;
	for (int i = 0; i < c->nv; i++) {
		FeVal *v = fe_scope_get(s, c->vnames[i]);
		if (!carry_leaves(fe, node, c->vnames[i], c->tmpl[i], v, out, &k))
			return NULL;
	}
	return out;
}

/* Picks the loop-carried names (assigned in body, defined before) and their
 * types; a number constant before the loop takes the type the body gives it. */
static bool carried_vars(Fe *fe, PyObject *node, PyObject *body, const char *skipname, Carried *c)
{
	Names assigned = {0};
	scan_assigned(fe, body, &assigned);
	c->n = c->nv = 0;
	c->vnames = ir_alloc(fe->ctx, sizeof(char *) * (size_t)(assigned.n + 1));
	c->tmpl = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(assigned.n + 1));
	int nslots = 0;
	for (int i = 0; i < assigned.n; i++) {
		const char *nm = assigned.v[i];
		if (nm == skipname)
			continue;
		FeVal *v = fe_scope_get(&fe->fn->scope, nm);
		if (!v || v->kind == V_UNDEF)
			continue;
		if (fe_is_const(v) && !is_number_obj(v->obj) && !(PyTuple_Check(v->obj) && has_carried_leaf(fe, v)))
			continue; /* checked after the body: must not change */
		if (v->kind == V_METHOD)
			return fe_err(fe, node, IR_ERR_TYPE,
				      "variable '%s' holds a bound method and is reassigned in a loop", nm);
		int k = 0;
		if (!carry_leaves(fe, node, nm, v, v, NULL, &k))
			return false;
		c->vnames[c->nv] = nm;
		c->tmpl[c->nv] = v;
		c->nv++;
		nslots += k;
	}
	c->names = ir_alloc(fe->ctx, sizeof(char *) * (size_t)(nslots + 1));
	c->tys = ir_alloc(fe->ctx, sizeof(IrType *) * (size_t)(nslots + 1));
	c->init = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(nslots + 1));
	for (int i = 0; i < c->nv; i++) {
		int k0 = c->n;
		carry_leaves(fe, node, c->vnames[i], c->tmpl[i], c->tmpl[i], c->init, &c->n);
		for (int j = k0; j < c->n; j++) {
			const IrType *t = default_type(fe, node, c->init[j]);
			if (!t)
				return false;
			c->names[j] = c->vnames[i];
			c->tys[j] = t;
		}
	}
	return true;
}

static bool is_carried_name(Carried *c, const char *nm)
{
	for (int i = 0; i < c->nv; i++)
		if (c->vnames[i] == nm)
			return true;
	return false;
}

static bool check_consts_kept(Fe *fe, PyObject *node, FeScope *before, FeScope *after, Carried *c)
{
	for (int i = 0; i < before->n; i++) {
		if (is_carried_name(c, before->vars[i].name))
			continue;
		FeVal *a = before->vars[i].val, *b = fe_scope_get(after, before->vars[i].name);
		if (fe_is_const(a) && !is_number_obj(a->obj) && b != a && !values_equal_const(a, b))
			return fe_err(fe, node, IR_ERR_TYPE,
				      "variable '%s' holds a compile-time value and cannot be reassigned inside a "
				      "runtime loop",
				      before->vars[i].name);
	}
	return true;
}

/* Lowers body into a throwaway block to learn the types of carried names
 * whose initial value is a Python number. */
static bool refine_types(Fe *fe, PyObject *node, PyObject *body, Carried *c, const char *ivname,
			 const IrType *ivty)
{
	bool any = false;
	for (int i = 0; i < c->n; i++)
		any = any || fe_is_const(c->init[i]);
	if (!any)
		return true;
	IrBlock *tmp = ir_block_new(fe->ctx);
	FeScope s = scope_copy(fe, &fe->fn->scope);
	if (ivname)
		fe_scope_set(fe, &s, ivname, fe_tensor(fe, ir_block_add_arg(fe->ctx, tmp, ivty)));
	IrValue **args = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)(c->n + 1));
	for (int i = 0; i < c->n; i++)
		args[i] = ir_block_add_arg(fe->ctx, tmp, c->tys[i]);
	carry_bind(fe, &s, c, args);
	fe->fn->loop_depth++;
	bool ok = lower_branch(fe, tmp, body, &s);
	fe->fn->loop_depth--;
	if (!ok)
		return false;
	FeVal **after = carry_collect(fe, node, c, &s);
	if (!after)
		return false;
	for (int i = 0; i < c->n; i++) {
		FeVal *v = after[i];
		if (fe_is_const(c->init[i]) && fe_is_tensor(v) && !ir_is_block(v->v->type))
			c->tys[i] = v->v->type;
	}
	return true;
}

static bool loop_body(Fe *fe, PyObject *node, PyObject *body, IrBlock *blk, Carried *c,
		      const char *ivname, IrValue *iv, int argoff)
{
	FeScope s = scope_copy(fe, &fe->fn->scope);
	if (ivname)
		fe_scope_set(fe, &s, ivname, fe_tensor(fe, iv));
	carry_bind(fe, &s, c, blk->args + argoff);
	fe->fn->loop_depth++;
	bool ok = lower_branch(fe, blk, body, &s);
	fe->fn->loop_depth--;
	if (!ok)
		return false;
	if (!check_consts_kept(fe, node, &fe->fn->scope, &s, c))
		return false;
	FeVal **after = carry_collect(fe, node, c, &s);
	if (!after)
		return false;
	IrBuilder saved = fe->b;
	ir_builder_at_end(&fe->b, blk);
	fe_set_loc(fe, node);
	IrValue **ys = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)(c->n + 1));
	for (int i = 0; i < c->n; i++) {
		ys[i] = coerce(fe, node, c->names[i], after[i], c->tys[i],
			       "loop-carried variable");
		if (!ys[i])
			return false;
	}
	ir_yield(&fe->b, c->n, ys);
	fe->b = saved;
	return true;
}

static IrValue **carried_inits(Fe *fe, PyObject *node, Carried *c)
{
	IrValue **v = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)(c->n + 1));
	for (int i = 0; i < c->n; i++) {
		v[i] = fe_is_tensor(c->init[i]) ? c->init[i]->v : fe_to_ir(fe, node, c->init[i], c->tys[i]);
		if (!v[i])
			return NULL;
		if (v[i]->type != c->tys[i])
			return fe_err(fe, node, IR_ERR_TYPE, "loop-carried variable %s changed type from %s to %s",
				      c->names[i], fe_tyname(fe, v[i]->type), fe_tyname(fe, c->tys[i]));
	}
	return v;
}

static bool static_for(Fe *fe, PyObject *node, FeVal **a, int na)
{
	int64_t lo = 0, hi, step = 1;
	if (na < 1 || na > 3)
		return fe_err(fe, node, IR_ERR_VALUE, "tl.static_range() takes 1 to 3 arguments");
	if (na == 1) {
		if (!fe_const_int(fe, node, a[0], &hi, "tl.static_range() bound"))
			return false;
	} else {
		if (!fe_const_int(fe, node, a[0], &lo, "tl.static_range() bound") ||
		    !fe_const_int(fe, node, a[1], &hi, "tl.static_range() bound"))
			return false;
		if (na == 3 && !fe_const_int(fe, node, a[2], &step, "tl.static_range() step"))
			return false;
	}
	if (step == 0)
		return fe_err(fe, node, IR_ERR_VALUE, "tl.static_range() step must not be zero");
	PyObject *target = child(fe, node, "target");
	for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) {
		PyObject *iv = fe_keep(fe, PyLong_FromLongLong(i));
		if (!assign(fe, target, fe_const(fe, iv)))
			return false;
		if (!fe_stmts(fe, child(fe, node, "body")))
			return false;
		if (fe->fn->returned)
			return fe_err(fe, node, IR_ERR_SYNTAX, "unsupported syntax: `return` inside a loop");
	}
	return true;
}

/* The items of a compile-time iterable: tl.static_range()/range() with
 * constexpr bounds, a tuple (of tensors or constants), or a constant
 * tuple/list. NULL + error otherwise. */
static FeVal **static_items(Fe *fe, PyObject *it, int *n, const char *what)
{
	if (fe_kind(fe, it) == N_Call) {
		FeVal *f = fe_expr(fe, child(fe, it, "func"));
		if (!f)
			return NULL;
		const char *bn = fe_is_const(f) ? fe_builtin_name(fe, f->obj) : NULL;
		PyObject *pyrange = PyDict_GetItemString(PyModule_GetDict(fe->builtins), "range");
		if ((bn && (strcmp(bn, "static_range") == 0 || strcmp(bn, "range") == 0)) ||
		    (fe_is_const(f) && f->obj == pyrange)) {
			PyObject *args = child(fe, it, "args");
			Py_ssize_t na = PyList_Size(args);
			if (na < 1 || na > 3 || PyList_Size(child(fe, it, "keywords")) > 0)
				return fe_err(fe, it, IR_ERR_VALUE, "range() takes 1 to 3 positional arguments here");
			PyObject *pa = fe_keep(fe, PyTuple_New(na));
			for (Py_ssize_t i = 0; i < na; i++) {
				FeVal *a = fe_expr(fe, PyList_GetItem(args, i));
				int64_t x;
				if (!a || !fe_const_int(fe, it, a, &x, ir_fmt(fe->ctx, "the range bound of %s", what)))
					return NULL;
				PyTuple_SetItem(pa, i, PyLong_FromLongLong(x));
			}
			PyObject *r = fe_keep(fe, PyObject_Call(pyrange, pa, NULL));
			if (!r)
				return fe_pyerr(fe, it, "range()");
			PyObject *t = fe_keep(fe, PySequence_Tuple(r));
			if (!t)
				return fe_pyerr(fe, it, "range()");
			*n = (int)PyTuple_Size(t);
			FeVal **items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(*n + 1));
			for (int i = 0; i < *n; i++)
				items[i] = fe_const(fe, PyTuple_GetItem(t, i));
			return items;
		}
	}
	FeVal *v = fe_expr(fe, it);
	if (!v)
		return NULL;
	if (v->kind == V_TUPLE) {
		*n = v->n;
		return v->items;
	}
	if (fe_is_const(v) && (PyTuple_Check(v->obj) || PyList_Check(v->obj) || PyRange_Check(v->obj))) {
		PyObject *t = fe_keep(fe, PySequence_Tuple(v->obj));
		if (!t)
			return fe_pyerr(fe, it, "iteration");
		*n = (int)PyTuple_Size(t);
		FeVal **items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(*n + 1));
		for (int i = 0; i < *n; i++)
			items[i] = fe_const(fe, PyTuple_GetItem(t, i));
		return items;
	}
	return fe_err(fe, it, IR_ERR_SYNTAX,
		      "unsupported syntax: %s must iterate over tl.static_range(), range() with constexpr "
		      "bounds, or a tuple",
		      what);
}

/* [elt for target in iterable if cond...]: one generator over a
 * compile-time iterable, conditions constexpr; the result is a tuple. The
 * comprehension's names do not leak into the enclosing scope. */
FeVal *fe_listcomp(Fe *fe, PyObject *node)
{
	PyObject *gens = child(fe, node, "generators");
	if (PyList_Size(gens) != 1)
		return fe_err(fe, node, IR_ERR_SYNTAX,
			      "unsupported syntax: nested comprehensions (more than one `for`) are not supported");
	PyObject *g = PyList_GetItem(gens, 0);
	int n;
	FeVal **src = static_items(fe, child(fe, g, "iter"), &n, "a list comprehension");
	if (!src)
		return NULL;
	PyObject *ifs = child(fe, g, "ifs");
	FeVal **out = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(n + 1));
	int k = 0;
	FeScope outer = fe->fn->scope;
	fe->fn->scope = scope_copy(fe, &outer);
	bool ok = true;
	for (int i = 0; ok && i < n; i++) {
		if (!(ok = assign(fe, child(fe, g, "target"), src[i])))
			break;
		bool keep = true;
		for (Py_ssize_t j = 0; keep && j < PyList_Size(ifs); j++) {
			FeVal *c = fe_expr(fe, PyList_GetItem(ifs, j));
			if (!c) {
				ok = false;
				break;
			}
			if (!fe_is_const(c)) {
				fe_err(fe, PyList_GetItem(ifs, j), IR_ERR_VALUE,
				       "the condition of a list comprehension must be a constexpr");
				ok = false;
				break;
			}
			int t = fe_truth(fe, node, c);
			if (t < 0)
				ok = false;
			keep = t == 1;
		}
		if (!ok || !keep)
			continue;
		if (!(out[k++] = fe_expr(fe, child(fe, node, "elt"))))
			ok = false;
	}
	fe->fn->scope = outer;
	return ok ? fe_make_tuple(fe, k, out) : NULL;
}

/* `for x in <tuple>`: unrolled at compile time. */
static bool tuple_for(Fe *fe, PyObject *node)
{
	int n;
	FeVal **items = static_items(fe, child(fe, node, "iter"), &n, "a for loop");
	if (!items)
		return false;
	for (int i = 0; i < n; i++) {
		if (!assign(fe, child(fe, node, "target"), items[i]))
			return false;
		if (!fe_stmts(fe, child(fe, node, "body")))
			return false;
		if (fe->fn->returned)
			return fe_err(fe, node, IR_ERR_SYNTAX, "unsupported syntax: `return` inside a loop");
	}
	return true;
}

static bool for_stmt(Fe *fe, PyObject *node)
{
	PyObject *it = child(fe, node, "iter");
	if (PyList_Size(child(fe, node, "orelse")) > 0)
		return fe_err(fe, node, IR_ERR_SYNTAX, "unsupported syntax: `for ... else` is not supported");
	if (fe_kind(fe, it) == N_List || fe_kind(fe, it) == N_ListComp)
		return fe_err(fe, it, IR_ERR_SYNTAX,
			      "unsupported syntax: for loops must iterate over range(), tl.range(), "
			      "tl.static_range() or a tuple");
	if (fe_kind(fe, it) != N_Call)
		return tuple_for(fe, node);
	FeVal *f = fe_expr(fe, child(fe, it, "func"));
	if (!f)
		return false;
	PyObject *args = child(fe, it, "args"), *kws = child(fe, it, "keywords");
	int na = (int)PyList_Size(args);
	FeVal *a[3];
	if (na > 3)
		return fe_err(fe, it, IR_ERR_VALUE, "range() takes at most 3 arguments");
	for (int i = 0; i < na; i++)
		if (!(a[i] = fe_expr(fe, PyList_GetItem(args, i))))
			return false;
	const char *bn = fe_is_const(f) ? fe_builtin_name(fe, f->obj) : NULL;
	PyObject *pyrange = PyDict_GetItemString(PyModule_GetDict(fe->builtins), "range");
	bool is_static = bn && strcmp(bn, "static_range") == 0;
	bool is_tl = bn && strcmp(bn, "range") == 0;
	if (!is_static && !is_tl && !(fe_is_const(f) && f->obj == pyrange))
		return fe_err(fe, it, IR_ERR_SYNTAX,
			      "unsupported syntax: for loops must iterate over range(), tl.range() or "
			      "tl.static_range()");
	/* tl.range / tl.static_range(arg1, arg2=, step=): the bounds by keyword */
	if (is_static || is_tl) {
		static const char *const bound_names[3] = {"arg1", "arg2", "step"};
		FeVal *b3[3] = {na > 0 ? a[0] : NULL, na > 1 ? a[1] : NULL, na > 2 ? a[2] : NULL};
		bool named = false;
		for (Py_ssize_t i = 0; i < PyList_Size(kws); i++) {
			PyObject *k = PyList_GetItem(kws, i);
			const char *kn = PyUnicode_AsUTF8AndSize(child(fe, k, "arg"), NULL);
			for (int j = 0; j < 3; j++)
				if (kn && strcmp(kn, bound_names[j]) == 0) {
					if (b3[j])
						return fe_err(fe, k, IR_ERR_VALUE, "range() got two values for '%s'", kn);
					if (!(b3[j] = fe_expr(fe, child(fe, k, "value"))))
						return false;
					named = true;
				}
		}
		if (named) {
			if (!b3[0])
				return fe_err(fe, it, IR_ERR_VALUE, "range() needs at least one argument");
			FeVal *zero = fe_const(fe, fe_keep(fe, PyLong_FromLong(0)));
			FeVal *one = fe_const(fe, fe_keep(fe, PyLong_FromLong(1)));
			a[0] = b3[1] ? b3[0] : zero; /* range(n, step=s): from 0 */
			a[1] = b3[1] ? b3[1] : b3[0];
			a[2] = b3[2] ? b3[2] : one;
			na = 3;
		}
	}
	if (is_static)
		return static_for(fe, node, a, na);
	if (na < 1)
		return fe_err(fe, it, IR_ERR_VALUE, "range() needs at least one argument");
	PyObject *target = child(fe, node, "target");
	if (fe_kind(fe, target) != N_Name)
		return fe_err(fe, target, IR_ERR_SYNTAX, "unsupported syntax: the loop variable must be a name");
	const char *ivname = name_of(fe, target);
	FeVal *zero = fe_const(fe, fe_keep(fe, PyLong_FromLong(0)));
	FeVal *one = fe_const(fe, fe_keep(fe, PyLong_FromLong(1)));
	FeVal *lb = na == 1 ? zero : a[0], *ub = na == 1 ? a[0] : a[1], *st = na == 3 ? a[2] : one;
	/* A constant negative step counts down: range(lo, hi, -s) visits the
	 * negations of range(-lo, -hi, s), so the loop runs over j from -lo to -hi
	 * by s and the body sees i = -j. */
	bool down = false;
	if (fe_is_const(st) && PyLong_Check(st->obj)) {
		long sv = PyLong_AsLong(st->obj);
		if (sv == 0)
			return fe_err(fe, it, IR_ERR_VALUE, "range() step must not be zero");
		if (sv < 0) {
			down = true;
			fe_set_loc(fe, it);
			if (!(lb = fe_unop(fe, it, N_USub, lb)) || !(ub = fe_unop(fe, it, N_USub, ub)) ||
			    !(st = fe_unop(fe, it, N_USub, st)))
				return false;
		}
	}
	/* iv type: the integer promotion of the bounds */
	const IrType *ivt = NULL;
	FeVal *bounds[3] = {lb, ub, st};
	for (int i = 0; i < 3; i++) {
		const IrType *t = default_type(fe, it, bounds[i]);
		if (!t)
			return false;
		t = ir_scalar(t);
		if (!ir_is_int(t) || (fe_is_tensor(bounds[i]) && ir_is_block(bounds[i]->v->type)))
			return fe_err(fe, it, IR_ERR_TYPE, "range() bounds must be integer scalars, got %s",
				      fe_tyname(fe, fe_is_tensor(bounds[i]) ? bounds[i]->v->type : t));
		if (!ivt || ir_type_bits(t) > ir_type_bits(ivt))
			ivt = t;
	}
	fe_set_loc(fe, it);
	IrValue *ops3[3];
	for (int i = 0; i < 3; i++)
		if (!(ops3[i] = fe_to_ir(fe, it, bounds[i], ivt)))
			return false;
	PyObject *body = child(fe, node, "body");
	Carried c;
	if (!carried_vars(fe, node, body, ivname, &c))
		return false;
	if (!refine_types(fe, node, body, &c, ivname, ivt))
		return false;
	fe_set_loc(fe, node);
	IrValue **inits = carried_inits(fe, node, &c);
	if (!inits)
		return false;
	IrValue **ops = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)(c.n + 3));
	memcpy(ops, ops3, sizeof ops3);
	memcpy(ops + 3, inits, sizeof(IrValue *) * (size_t)c.n);
	fe_set_loc(fe, node);
	IrOp *op = ir_build(&fe->b, OP_FOR, c.n + 3, ops, c.n, c.tys, 1);
	for (Py_ssize_t i = 0; i < PyList_Size(kws); i++) {
		PyObject *k = PyList_GetItem(kws, i);
		const char *kn = PyUnicode_AsUTF8AndSize(child(fe, k, "arg"), NULL);
		if (!is_tl)
			return fe_err(fe, k, IR_ERR_VALUE, "range() got an unexpected keyword argument '%s'", kn);
		if (!strcmp(kn, "arg1") || !strcmp(kn, "arg2") || !strcmp(kn, "step"))
			continue; /* the bounds, read above */
		static const char *known[] = {"num_stages", "loop_unroll_factor", "disallow_acc_multi_buffer",
					      "flatten", "warp_specialize", "disable_licm", NULL};
		bool ok = false;
		for (int j = 0; known[j]; j++)
			ok = ok || strcmp(known[j], kn) == 0;
		if (!ok)
			return fe_err(fe, k, IR_ERR_VALUE, "tl.range() got an unexpected keyword argument '%s'", kn);
		FeVal *kv = fe_expr(fe, child(fe, k, "value"));
		if (!kv)
			return false;
		if (!fe_is_const(kv))
			return fe_err(fe, k, IR_ERR_VALUE, "tl.range(%s=) must be a constexpr", kn);
		if (kv->obj == Py_None)
			continue;
		if (PyBool_Check(kv->obj))
			ir_op_set_bool(fe->ctx, op, kn, kv->obj == Py_True);
		else if (PyLong_Check(kv->obj))
			ir_op_set_int(fe->ctx, op, kn, PyLong_AsLongLong(kv->obj));
		else
			return fe_err(fe, k, IR_ERR_VALUE, "tl.range(%s=) must be an int or a bool", kn);
	}
	IrBlock *blk = op->regions[0];
	IrValue *iv = ir_block_add_arg(fe->ctx, blk, ivt);
	iv->name = ivname;
	for (int i = 0; i < c.n; i++)
		ir_block_add_arg(fe->ctx, blk, c.tys[i])->name = c.names[i];
	if (down) {
		IrBuilder saved = fe->b;
		ir_builder_at_end(&fe->b, blk);
		fe_set_loc(fe, it);
		FeVal *neg = fe_unop(fe, it, N_USub, fe_tensor(fe, iv));
		fe->b = saved;
		if (!neg)
			return false;
		iv = neg->v;
	}
	if (!loop_body(fe, node, body, blk, &c, ivname, iv, 1))
		return false;
	IrValue **res = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)(c.n + 1));
	for (int i = 0; i < c.n; i++)
		res[i] = &op->res[i];
	carry_bind(fe, &fe->fn->scope, &c, res);
	return true;
}

static bool while_stmt(Fe *fe, PyObject *node)
{
	if (PyList_Size(child(fe, node, "orelse")) > 0)
		return fe_err(fe, node, IR_ERR_SYNTAX, "unsupported syntax: `while ... else` is not supported");
	PyObject *body = child(fe, node, "body"), *test = child(fe, node, "test");
	Carried c;
	if (!carried_vars(fe, node, body, NULL, &c))
		return false;
	if (!refine_types(fe, node, body, &c, NULL, NULL))
		return false;
	fe_set_loc(fe, node);
	IrValue **inits = carried_inits(fe, node, &c);
	if (!inits)
		return false;
	/* while tl.condition(c, disable_licm=...): the attributes go on the loop */
	bool no_licm = false;
	PyObject *callee = fe_kind(fe, test) == N_Call ? child(fe, test, "func") : NULL;
	PyObject *cname = !callee ? NULL
			  : fe_kind(fe, callee) == N_Attribute ? child(fe, callee, "attr")
			  : fe_kind(fe, callee) == N_Name      ? child(fe, callee, "id")
							       : NULL;
	if (cname && PyUnicode_Check(cname) && PyUnicode_CompareWithASCIIString(cname, "condition") == 0) {
		FeVal *fn = fe_expr(fe, callee);
		if (!fn)
			return false;
		if (fe_is_const(fn) && fn->obj == fe_attr(fe, fe->tl, "condition")) {
			PyObject *args = child(fe, test, "args"), *kws = child(fe, test, "keywords");
			if (PyList_Size(args) != 1)
				return fe_err(fe, test, IR_ERR_VALUE, "tl.condition() takes the condition and disable_licm=");
			for (Py_ssize_t i = 0; i < PyList_Size(kws); i++) {
				PyObject *k = PyList_GetItem(kws, i);
				const char *kn = PyUnicode_AsUTF8AndSize(child(fe, k, "arg"), NULL);
				FeVal *kv = kn && !strcmp(kn, "disable_licm") ? fe_expr(fe, child(fe, k, "value")) : NULL;
				if (!kv || !fe_is_const(kv))
					return fe_err(fe, k, IR_ERR_VALUE,
						      "tl.condition() takes one keyword, disable_licm=, a constexpr bool");
				int t = fe_truth(fe, k, kv);
				if (t < 0)
					return false;
				no_licm = t;
			}
			test = PyList_GetItem(args, 0);
		}
	}
	IrOp *op = ir_build(&fe->b, OP_WHILE, c.n, inits, c.n, c.tys, 2);
	if (no_licm)
		ir_op_set_bool(fe->ctx, op, "disable_licm", true);
	IrBlock *before = op->regions[0], *after = op->regions[1];
	for (int i = 0; i < c.n; i++) {
		ir_block_add_arg(fe->ctx, before, c.tys[i])->name = c.names[i];
		ir_block_add_arg(fe->ctx, after, c.tys[i])->name = c.names[i];
	}
	/* before: the condition */
	FeScope s = scope_copy(fe, &fe->fn->scope);
	carry_bind(fe, &s, &c, before->args);
	IrBuilder saved = fe->b;
	FeScope outer = fe->fn->scope;
	fe->fn->scope = s;
	ir_builder_at_end(&fe->b, before);
	FeVal *cv = fe_expr(fe, test);
	fe->fn->scope = outer;
	if (!cv) {
		fe->b = saved;
		return false;
	}
	IrValue *cond;
	if (fe_is_const(cv)) {
		int t = fe_truth(fe, test, cv);
		if (t < 0)
			return false;
		fe_set_loc(fe, test);
		cond = ir_const_int(&fe->b, ir_type(fe->ctx, TY_I1), t);
	} else if (fe_is_tensor(cv) && !ir_is_block(cv->v->type)) {
		fe_set_loc(fe, test);
		cond = fe_to_bool(fe, test, cv->v);
	} else
		return fe_err(fe, test, IR_ERR_TYPE, "the condition of a `while` must be a scalar");
	IrValue **cops = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)(c.n + 1));
	cops[0] = cond;
	for (int i = 0; i < c.n; i++)
		cops[i + 1] = before->args[i];
	fe_set_loc(fe, node);
	ir_build(&fe->b, OP_CONDITION, c.n + 1, cops, 0, NULL, 0);
	fe->b = saved;
	if (!loop_body(fe, node, body, after, &c, NULL, NULL, 0))
		return false;
	IrValue **res = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)(c.n + 1));
	for (int i = 0; i < c.n; i++)
		res[i] = &op->res[i];
	carry_bind(fe, &fe->fn->scope, &c, res);
	return true;
}

/* ---- statements ---------------------------------------------------------- */

static bool unsupported(Fe *fe, PyObject *node, const char *what, const char *hint)
{
	fe_err(fe, node, IR_ERR_SYNTAX, "unsupported syntax: %s are not supported in @jit functions%s", what,
	       hint);
	return false;
}

static bool stmt(Fe *fe, PyObject *node, PyObject *rest, Py_ssize_t *skip)
{
	fe_set_loc(fe, node);
	switch (fe_kind(fe, node)) {
	case N_Expr: {
		PyObject *v = child(fe, node, "value");
		if (fe_kind(fe, v) == N_Constant)
			return true; /* docstring */
		return fe_expr(fe, v) != NULL;
	}
	case N_Pass: return true;
	case N_Assign: {
		FeVal *v = fe_expr(fe, child(fe, node, "value"));
		if (!v)
			return false;
		PyObject *ts = child(fe, node, "targets");
		for (Py_ssize_t i = 0; i < PyList_Size(ts); i++)
			if (!assign_to(fe, PyList_GetItem(ts, i), v, true))
				return false;
		return true;
	}
	case N_AugAssign: {
		PyObject *t = child(fe, node, "target");
		if (fe_kind(fe, t) != N_Name)
			return assign(fe, t, fe_none(fe));
		FeVal *cur = fe_lookup(fe, t, name_of(fe, t));
		FeVal *rhs = cur ? fe_expr(fe, child(fe, node, "value")) : NULL;
		if (!rhs)
			return false;
		fe_set_loc(fe, node);
		FeVal *r = fe_binop(fe, node, fe_kind(fe, child(fe, node, "op")), cur, rhs);
		return r && assign_to(fe, t, r, true);
	}
	case N_AnnAssign: {
		PyObject *t = child(fe, node, "target");
		PyObject *val = child(fe, node, "value");
		if (val == Py_None)
			return true;
		FeVal *v = fe_expr(fe, val);
		if (!v)
			return false;
		bool cx = is_constexpr_annotation(fe, child(fe, node, "annotation"));
		if (cx && !fe_is_const(v))
			return fe_err(fe, val, IR_ERR_VALUE,
				      "a variable annotated tl.constexpr must be given a compile-time value");
		if (cx && v->lifted) { /* x: tl.constexpr = y: a constexpr again */
			FeVal *c = ir_alloc(fe->ctx, sizeof(FeVal));
			*c = *v;
			c->lifted = false;
			v = c;
		}
		return assign_to(fe, t, v, !cx);
	}
	case N_Return: {
		if (fe->fn->loop_depth > 0)
			return fe_err(fe, node, IR_ERR_SYNTAX,
				      "unsupported syntax: `return` inside a `for` or `while` loop");
		PyObject *v = child(fe, node, "value");
		FeVal *r = v == Py_None ? fe_none(fe) : fe_expr(fe, v);
		if (!r)
			return false;
		fe->fn->ret = r;
		fe->fn->returned = true;
		return true;
	}
	case N_If: return if_stmt(fe, node, rest, skip);
	case N_For: return for_stmt(fe, node);
	case N_While: return while_stmt(fe, node);
	case N_Assert: {
		FeVal *c = fe_expr(fe, child(fe, node, "test"));
		if (!c)
			return false;
		PyObject *msgn = child(fe, node, "msg");
		FeVal *msg = msgn == Py_None ? NULL : fe_expr(fe, msgn);
		if (msgn != Py_None && !msg)
			return false;
		if (fe_is_const(c)) {
			int t = fe_truth(fe, node, c);
			if (t < 0)
				return false;
			if (!t)
				return fe_err(fe, node, IR_ERR_VALUE, "assertion failed%s%s", msg ? ": " : "",
					      msg ? fe_str(fe, msg->obj) : "");
			return true;
		}
		FeVal *args[2] = {c, msg};
		return fe_builtin_call(fe, node, "device_assert", NULL, msg ? 2 : 1, args, 0, NULL, NULL) != NULL;
	}
	case N_Break:
		return unsupported(fe, node, "'break' statements", " (use a while loop condition)");
	case N_Continue:
		return unsupported(fe, node, "'continue' statements", " (use an if around the rest of the body)");
	case N_FunctionDef:
	case N_AsyncFunctionDef:
		return unsupported(fe, node, "nested function definitions", " (define a @jit function at module level)");
	case N_ClassDef: return unsupported(fe, node, "class definitions", "");
	case N_Lambda: return unsupported(fe, node, "lambda expressions", "");
	case N_With: return unsupported(fe, node, "'with' statements", "");
	case N_Try: return unsupported(fe, node, "'try' statements", "");
	case N_Raise: return unsupported(fe, node, "'raise' statements", " (use tl.static_assert or tl.device_assert)");
	case N_Global: return unsupported(fe, node, "'global' statements", "");
	case N_Nonlocal: return unsupported(fe, node, "'nonlocal' statements", "");
	case N_Import:
	case N_ImportFrom: return unsupported(fe, node, "import statements", " (import at module level)");
	case N_Delete: return unsupported(fe, node, "'del' statements", "");
	default: {
		const char *tn = fe_str(fe, fe_attr(fe, (PyObject *)Py_TYPE(node), "__name__"));
		fe_err(fe, node, IR_ERR_SYNTAX, "unsupported syntax: '%s' statements are not supported in @jit functions",
		       tn);
		return false;
	}
	}
}

bool fe_stmts(Fe *fe, PyObject *list)
{
	if (!list)
		return false;
	Py_ssize_t n = PyList_Size(list);
	for (Py_ssize_t i = 0; i < n; i++) {
		if (fe->fn->returned)
			break;
		PyObject *rest = NULL;
		if (i + 1 < n)
			rest = fe_keep(fe, PyList_GetSlice(list, i + 1, n));
		Py_ssize_t skip = 0;
		if (!stmt(fe, PyList_GetItem(list, i), rest, &skip))
			return false;
		i += skip;
		if (fe_has_error(fe))
			return false;
	}
	return true;
}

/* ---- calls of @jit functions ---------------------------------------------- */

static FeVal *noinline_call(Fe *fe, PyObject *node, PyObject *jitfn, PyObject *fdef, int np,
			    const char **pnames, FeVal **bound);

FeVal *fe_inline_call(Fe *fe, PyObject *node, PyObject *jitfn, int nargs, FeVal **args, int nkw,
		      const char **kwnames, FeVal **kwvals)
{
	PyObject *fdef = fe_parse_fn(fe, jitfn, node);
	if (!fdef)
		return NULL;
	PyObject *fname = fe_attr(fe, jitfn, "__name__");
	const char *fn_name = fname ? fe_str(fe, fname) : "?";
	PyObject *argsn = child(fe, fdef, "args");
	PyObject *params = child(fe, argsn, "args");
	if (PyList_Size(child(fe, argsn, "kwonlyargs")) > 0 || child(fe, argsn, "vararg") != Py_None ||
	    child(fe, argsn, "kwarg") != Py_None)
		return fe_err(fe, node, IR_ERR_SYNTAX,
			      "unsupported syntax: %s() uses *args, **kwargs or keyword-only parameters", fn_name);
	int np = (int)PyList_Size(params);
	PyObject *pyfn = fe_attr(fe, jitfn, "fn");
	PyObject *defaults = pyfn ? fe_attr(fe, pyfn, "__defaults__") : NULL;
	int ndef = defaults && PyTuple_Check(defaults) ? (int)PyTuple_Size(defaults) : 0;
	const char **pnames = ir_alloc(fe->ctx, sizeof(char *) * (size_t)(np + 1));
	FeVal **bound = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(np + 1));
	for (int i = 0; i < np; i++)
		pnames[i] = ir_intern(fe->ctx, PyUnicode_AsUTF8AndSize(child(fe, PyList_GetItem(params, i), "arg"), NULL));
	if (nargs > np)
		return fe_err(fe, node, IR_ERR_VALUE, "%s() takes %d arguments but %d were given", fn_name, np, nargs);
	for (int i = 0; i < nargs; i++)
		bound[i] = args[i];
	for (int k = 0; k < nkw; k++) {
		int j = -1;
		for (int i = 0; i < np; i++)
			if (pnames[i] == kwnames[k])
				j = i;
		if (j < 0)
			return fe_err(fe, node, IR_ERR_VALUE, "%s() got an unexpected keyword argument '%s'", fn_name,
				      kwnames[k]);
		if (bound[j])
			return fe_err(fe, node, IR_ERR_VALUE, "%s() got multiple values for argument '%s'", fn_name,
				      kwnames[k]);
		bound[j] = kwvals[k];
	}
	for (int i = 0; i < np; i++) {
		if (bound[i])
			continue;
		if (i >= np - ndef) {
			PyObject *d = PyTuple_GetItem(defaults, i - (np - ndef));
			if (PyObject_IsInstance(d, fe->cls_constexpr) == 1)
				d = fe_attr(fe, d, "value");
			PyErr_Clear();
			bound[i] = fe_const(fe, d);
		} else
			return fe_err(fe, node, IR_ERR_VALUE, "%s() missing required argument '%s'", fn_name, pnames[i]);
	}
	/* a tl.constexpr annotation on a callee's parameter does not reject a
	 * tensor: Triton ignores the annotations of called functions (upstream
	 * tutorial 06 passes offsets so); a use that needs a constant says so */
	FeFn *caller = fe->fn;
	FeFn fn = {0};
	fn.jitfn = jitfn;
	fn.globals = fe_attr(fe, jitfn, "__globals__");
	PyObject *file = fe_attr(fe, jitfn, "file");
	fn.file = ir_intern(fe->ctx, file && PyUnicode_Check(file) ? PyUnicode_AsUTF8AndSize(file, NULL) : "<unknown>");
	PyObject *sl = fe_attr(fe, jitfn, "starting_line");
	fn.line0 = (sl ? (int)PyLong_AsLong(sl) : 1) - 1;
	fn.caller = caller;
	fn.call_node = node;
	for (int i = 0; i < np; i++)
		fe_scope_set(fe, &fn.scope, pnames[i], bound[i]);
	PyObject *noinl = fe_attr(fe, jitfn, "noinline");
	if (noinl && PyObject_IsTrue(noinl) == 1)
		return noinline_call(fe, node, jitfn, fdef, np, pnames, bound);
	if (fe->depth > 64)
		return fe_err(fe, node, IR_ERR_VALUE, "@jit calls nested too deeply (recursion?)");
	fe->depth++;
	fe->fn = &fn;
	IrLoc saved = fe->b.loc;
	bool ok = fe_stmts(fe, child(fe, fdef, "body"));
	fe->fn = caller;
	fe->depth--;
	fe->b.loc = saved;
	if (!ok)
		return NULL;
	return fn.ret ? fn.ret : fe_none(fe);
}

FeVal *fe_call_jit_values(Fe *fe, PyObject *node, PyObject *jitfn, int n, FeVal **args)
{
	return fe_inline_call(fe, node, jitfn, n, args, 0, NULL, NULL);
}

/* Whether two bindings of a parameter give one specialization of a callee:
 * tensors of one type, or equal constants of one Python type. */
static bool same_binding(const FeVal *a, const FeVal *b)
{
	if (a->kind != b->kind)
		return false;
	if (a->kind == V_TENSOR)
		return a->v->type == b->v->type;
	if (a->kind != V_CONST || a->lifted != b->lifted || Py_TYPE(a->obj) != Py_TYPE(b->obj))
		return false;
	if (a->obj == b->obj)
		return true;
	int eq = PyObject_RichCompareBool(a->obj, b->obj, Py_EQ);
	if (eq < 0)
		PyErr_Clear();
	return eq == 1;
}

/* The function lowered earlier for jitfn with these bindings, or NULL. */
static FeNoinline *find_noinline(Fe *fe, PyObject *jitfn, int np, FeVal **bound)
{
	for (FeNoinline *e = fe->noinlines; e; e = e->next) {
		if (e->jitfn != jitfn || e->np != np)
			continue;
		bool same = true;
		for (int i = 0; i < np && same; i++)
			same = same_binding(e->bound[i], bound[i]);
		if (same)
			return e;
	}
	return NULL;
}

/* The IR function of a @jit(noinline=True) callee bound so: its tensor
 * arguments become parameters, its constexprs fold into the body. NULL
 * after an error. */
static FeNoinline *lower_noinline(Fe *fe, PyObject *jitfn, PyObject *fdef, int np, const char **pnames,
				  FeVal **bound, int nt, const IrType **ptys)
{
	const char *base = fe_str(fe, fe_attr(fe, jitfn, "__name__"));
	FeNoinline *e = ir_alloc(fe->ctx, sizeof *e);
	e->jitfn = jitfn;
	e->np = np;
	e->bound = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(np + 1));
	for (int i = 0; i < np; i++)
		e->bound[i] = bound[i];
	e->next = fe->noinlines;
	fe->noinlines = e; /* e->f stays NULL while the body is lowered */
	char *name = ir_fmt(fe->ctx, "%s_%d", base, fe->nnoinline++);
	IrFunc *f = ir_func_new(fe->m, name, nt, ptys, 0, NULL, ir_loc(fe->ctx, NULL, 0, 0));
	f->noinline = true;
	FeFn fn = {0};
	fn.jitfn = jitfn;
	fn.globals = fe_attr(fe, jitfn, "__globals__");
	PyObject *file = fe_attr(fe, jitfn, "file");
	fn.file = ir_intern(fe->ctx, file && PyUnicode_Check(file) ? PyUnicode_AsUTF8AndSize(file, NULL) : "<unknown>");
	PyObject *sl = fe_attr(fe, jitfn, "starting_line");
	fn.line0 = (sl ? (int)PyLong_AsLong(sl) : 1) - 1;
	fn.caller = fe->fn;
	int k = 0;
	for (int i = 0; i < np; i++) {
		if (fe_is_tensor(bound[i])) {
			f->params[k].name = pnames[i];
			fe_scope_set(fe, &fn.scope, pnames[i], fe_tensor(fe, f->body->args[k++]));
		} else
			fe_scope_set(fe, &fn.scope, pnames[i], bound[i]);
	}
	FeFn *caller = fe->fn;
	IrBuilder saved = fe->b;
	fe->fn = &fn;
	f->loc = fe_loc(fe, fdef);
	ir_builder_at_end(&fe->b, f->body);
	fe->depth++;
	bool ok = fe_stmts(fe, child(fe, fdef, "body"));
	fe->depth--;
	fe->fn = caller;
	if (!ok) {
		fe->b = saved;
		return NULL;
	}
	FeVal *r = fn.ret ? fn.ret : fe_none(fe);
	int nr = r->kind == V_TUPLE ? r->n : fe_is_const(r) && r->obj == Py_None ? 0 : 1;
	IrValue **rv = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)(nr + 1));
	const IrType **rt = ir_alloc(fe->ctx, sizeof(IrType *) * (size_t)(nr + 1));
	for (int i = 0; i < nr; i++) {
		FeVal *x = r->kind == V_TUPLE ? r->items[i] : r;
		rv[i] = fe_to_ir(fe, fdef, x, NULL);
		if (!rv[i]) {
			fe->b = saved;
			return NULL;
		}
		rt[i] = rv[i]->type;
	}
	ir_return(&fe->b, nr, rv);
	f->nres = nr;
	f->restys = rt;
	fe->b = saved;
	e->tuple = r->kind == V_TUPLE;
	e->f = f;
	return e;
}

/* A call of a @jit(noinline=True) callee: a `call` op of the IR function
 * for its specialization (the tensor arguments' types and the constexprs'
 * values, as Triton mangles it), lowered at its first call. */
static FeVal *noinline_call(Fe *fe, PyObject *node, PyObject *jitfn, PyObject *fdef, int np,
			    const char **pnames, FeVal **bound)
{
	const IrType **ptys = ir_alloc(fe->ctx, sizeof(IrType *) * (size_t)(np + 1));
	IrValue **cargs = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)(np + 1));
	int nt = 0;
	bool keyed = true;
	for (int i = 0; i < np; i++) {
		if (bound[i]->kind == V_TUPLE || bound[i]->kind == V_METHOD)
			return fe_err(fe, node, IR_ERR_VALUE, "noinline functions take tensors and constexprs only");
		keyed &= bound[i]->kind == V_TENSOR || bound[i]->kind == V_CONST;
		if (fe_is_tensor(bound[i])) {
			ptys[nt] = bound[i]->v->type;
			cargs[nt++] = bound[i]->v;
		}
	}
	FeNoinline *e = keyed ? find_noinline(fe, jitfn, np, bound) : NULL;
	if (e && !e->f)
		return fe_err(fe, node, IR_ERR_VALUE, "recursive call of noinline function %s() (not supported)",
			      fe_str(fe, fe_attr(fe, jitfn, "__name__")));
	if (!e) {
		if (fe->depth > 64)
			return fe_err(fe, node, IR_ERR_VALUE, "@jit calls nested too deeply (recursion?)");
		e = lower_noinline(fe, jitfn, fdef, np, pnames, bound, nt, ptys);
		if (!e)
			return NULL;
		if (!keyed)
			e->jitfn = NULL; /* never found again */
	}
	IrFunc *f = e->f;
	int nr = f->nres;
	IrOp *call = ir_build(&fe->b, OP_CALL, nt, cargs, nr, f->restys, 0);
	ir_op_set_sym(fe->ctx, call, "callee", f->name);
	if (nr == 0)
		return fe_none(fe);
	if (!e->tuple)
		return fe_tensor(fe, &call->res[0]);
	FeVal **items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)nr);
	for (int i = 0; i < nr; i++)
		items[i] = fe_tensor(fe, &call->res[i]);
	return fe_make_tuple(fe, nr, items);
}
