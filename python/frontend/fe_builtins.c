/* fe_builtins.c: the builtins of ctriton.language lowered to IR.
 *
 * Each builtin is a row of one table: its name, its Python-style parameter
 * list ("pointer, mask=, other=, *dims") and the function that lowers it.
 * One binder matches a call's positional and keyword arguments against the
 * parameter list (reporting unknown keywords and missing arguments the way
 * Python does), so every lowering function gets its arguments by position,
 * NULL where one was not given. Tensor methods (x.to(...), x.sum(...)) are
 * the same builtins with the tensor bound to the first parameter.
 */
#include <string.h>

#include "python/frontend/fe.h"

FeVal *fe_where(Fe *fe, PyObject *node, FeVal *c, FeVal *a, FeVal *b);

typedef struct Call {
	const char *name;
	FeVal **a;   /* bound parameters */
	int nvar;    /* extra positional arguments (for a *param) */
	FeVal **var;
} Call;

typedef FeVal *(*BuiltinFn)(Fe *fe, PyObject *node, Call *c);

/* ---- small helpers -------------------------------------------------------- */

static const IrType *T(Fe *fe, IrTypeKind k)
{
	return ir_type(fe->ctx, k);
}

static bool given(FeVal *v)
{
	return v && !(v->kind == V_CONST && v->obj == Py_None);
}

static IrValue *tensor_arg(Fe *fe, PyObject *node, Call *c, int i, const char *pname)
{
	FeVal *v = c->a[i];
	if (v && fe_is_tensor(v))
		return v->v;
	if (v && fe_is_const(v) &&
	    (PyLong_Check(v->obj) || PyFloat_Check(v->obj) || PyBool_Check(v->obj)))
		return fe_to_ir(fe, node, v, NULL);
	return fe_err(fe, node, IR_ERR_TYPE, "tl.%s(): argument '%s' must be a tensor", c->name, pname);
}

static bool const_int(Fe *fe, PyObject *node, Call *c, FeVal *v, const char *pname, int64_t *out)
{
	if (!fe_is_const(v) || !PyLong_Check(v->obj)) {
		fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): argument '%s' must be a constexpr int", c->name, pname);
		return false;
	}
	*out = PyLong_AsLongLong(v->obj);
	return true;
}

static const char *const_str(Fe *fe, PyObject *node, Call *c, FeVal *v, const char *pname)
{
	if (!given(v))
		return "";
	if (!fe_is_const(v) || !PyUnicode_Check(v->obj))
		return fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): argument '%s' must be a constexpr string",
			      c->name, pname);
	return PyUnicode_AsUTF8AndSize(v->obj, NULL);
}

static int const_bool(Fe *fe, PyObject *node, Call *c, FeVal *v, const char *pname, bool dflt)
{
	if (!given(v))
		return dflt;
	if (!fe_is_const(v)) {
		fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): argument '%s' must be a constexpr bool", c->name, pname);
		return -1;
	}
	return PyObject_IsTrue(v->obj) == 1;
}

static const IrType *dtype_arg(Fe *fe, PyObject *node, Call *c, FeVal *v, const char *pname)
{
	const IrType *t = fe_is_const(v) ? fe_dtype_to_ir(fe, v->obj) : NULL;
	if (!t)
		return fe_err(fe, node, IR_ERR_TYPE, "tl.%s(): argument '%s' must be a dtype (e.g. tl.float32)",
			      c->name, pname);
	return t;
}

static int norm_axis(Fe *fe, PyObject *node, Call *c, int64_t axis, int rank)
{
	int64_t a = axis < 0 ? axis + rank : axis;
	if (a < 0 || a >= rank) {
		fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): invalid axis %lld. Expected %d <= axis < %d", c->name,
		       (long long)axis, -rank, rank);
		return -1;
	}
	return (int)a;
}

static int rank_of(const IrType *t)
{
	return ir_is_block(t) ? t->rank : 0;
}

/* Shape of var-args "*shape" or a single tuple. */
static bool var_shape(Fe *fe, PyObject *node, Call *c, int *rank, int64_t *shape)
{
	if (c->nvar == 1 && fe_is_const(c->var[0]) &&
	    (PyTuple_Check(c->var[0]->obj) || PyList_Check(c->var[0]->obj)))
		return fe_shape(fe, node, c->var[0], rank, shape);
	if (c->nvar > IR_MAX_RANK) {
		fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): a shape of %d dimensions (ctriton's blocks have at most %d)",
		       c->name, c->nvar, IR_MAX_RANK);
		return false;
	}
	for (int i = 0; i < c->nvar; i++)
		if (!const_int(fe, node, c, c->var[i], "shape", &shape[i]))
			return false;
	*rank = c->nvar;
	return true;
}

static FeVal *t_(Fe *fe, IrValue *v)
{
	return fe_tensor(fe, v);
}

/* ---- program, creation -------------------------------------------------- */

static FeVal *bi_program_id(Fe *fe, PyObject *node, Call *c)
{
	int64_t axis = 0;
	if (c->a[0] && !const_int(fe, node, c, c->a[0], "axis", &axis))
		return NULL;
	if (axis < 0 || axis > 2)
		return fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): program_id axis must be 0, 1, or 2 but got %lld",
			      c->name, (long long)axis);
	if (strcmp(c->name, "program_id") == 0)
		return t_(fe, ir_program_id(&fe->b, (int)axis));
	IrValue *r = ir_build1(&fe->b, OP_NUM_PROGRAMS, T(fe, TY_I32), 0, NULL);
	ir_op_set_int(fe->ctx, r->def, "axis", axis);
	return t_(fe, r);
}

static FeVal *bi_arange(Fe *fe, PyObject *node, Call *c)
{
	int64_t s, e;
	if (!const_int(fe, node, c, c->a[0], "start", &s))
		return NULL;
	if (!given(c->a[1])) {
		e = s;
		s = 0;
	} else if (!const_int(fe, node, c, c->a[1], "end", &e))
		return NULL;
	int64_t n = e - s;
	if (n <= 0 || (n & (n - 1)) != 0 || n > IR_MAX_NUMEL)
		return fe_err(fe, node, IR_ERR_VALUE,
			      "tl.arange(%lld, %lld): the range length %lld must be a power of two (at most %d)",
			      (long long)s, (long long)e, (long long)n, IR_MAX_NUMEL);
	if (s < 0 || e > INT32_MAX)
		return fe_err(fe, node, IR_ERR_VALUE,
			      "tl.arange(%lld, %lld): bounds must be non-negative and fit in int32",
			      (long long)s, (long long)e);
	return t_(fe, ir_make_range(&fe->b, s, e));
}

static FeVal *full_of(Fe *fe, PyObject *node, Call *c, int rank, const int64_t *shape, FeVal *val,
		      const IrType *elem)
{
	const IrType *bt = fe_block(fe, node, elem, rank, shape);
	if (!bt)
		return NULL;
	if (fe_is_const(val)) {
		IrValue *v = fe_to_ir(fe, node, val, bt);
		return v ? t_(fe, v) : NULL;
	}
	if (!fe_is_tensor(val) || ir_is_block(val->v->type))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.%s(): value must be a scalar", c->name);
	IrValue *x = fe_cast(fe, node, val->v, elem, NULL, false);
	return x ? t_(fe, rank ? ir_splat(&fe->b, x, bt) : x) : NULL;
}

static FeVal *bi_full(Fe *fe, PyObject *node, Call *c)
{
	int rank;
	int64_t shape[IR_MAX_RANK];
	if (!fe_shape(fe, node, c->a[0], &rank, shape))
		return NULL;
	const IrType *e = dtype_arg(fe, node, c, c->a[2], "dtype");
	return e ? full_of(fe, node, c, rank, shape, c->a[1], e) : NULL;
}

static FeVal *bi_zeros(Fe *fe, PyObject *node, Call *c)
{
	int rank;
	int64_t shape[IR_MAX_RANK];
	if (!fe_shape(fe, node, c->a[0], &rank, shape))
		return NULL;
	const IrType *e = given(c->a[1]) ? dtype_arg(fe, node, c, c->a[1], "dtype") : T(fe, TY_F32);
	if (!e)
		return NULL;
	return full_of(fe, node, c, rank, shape, fe_const(fe, fe_keep(fe, PyLong_FromLong(0))), e);
}

static FeVal *bi_zeros_like(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input");
	if (!x)
		return NULL;
	const IrType *t = x->type;
	return t_(fe, ir_const_int(&fe->b, t, 0));
}

static FeVal *bi_cast(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input");
	if (!x)
		return NULL;
	const IrType *to = dtype_arg(fe, node, c, c->a[1], "dtype");
	if (!to)
		return NULL;
	const char *r = const_str(fe, node, c, c->a[2], "fp_downcast_rounding");
	int bc = const_bool(fe, node, c, c->a[3], "bitcast", false);
	if (!r || bc < 0)
		return NULL;
	if (*r && strcmp(r, "rtne") != 0 && strcmp(r, "rtz") != 0)
		return fe_err(fe, node, IR_ERR_VALUE, "fp_downcast_rounding must be 'rtne' or 'rtz', got '%s'", r);
	IrValue *v = fe_cast(fe, node, x, to, r, bc);
	return v ? t_(fe, v) : NULL;
}

static FeVal *bi_to_tensor(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "x");
	return x ? t_(fe, x) : NULL;
}

/* ---- memory --------------------------------------------------------------- */

static bool ptr_check(Fe *fe, PyObject *node, Call *c, IrValue *p)
{
	if (!ir_is_ptr(ir_scalar(p->type))) {
		fe_err(fe, node, IR_ERR_TYPE, "tl.%s(): 'pointer' must be a pointer or a block of pointers, got %s",
		       c->name, fe_tyname(fe, p->type));
		return false;
	}
	return true;
}

/* A store or atomic may not write through a tl.const pointer. */
static bool writable_check(Fe *fe, PyObject *node, Call *c, IrValue *p)
{
	if (ir_scalar(p->type)->is_const) {
		fe_err(fe, node, IR_ERR_TYPE, "tl.%s(): Cannot store to a constant pointer (%s is read-only)", c->name,
		       fe_tyname(fe, p->type));
		return false;
	}
	return true;
}

static IrValue *mask_arg(Fe *fe, PyObject *node, Call *c, FeVal *m, IrValue **p)
{
	if (!given(m))
		return NULL;
	IrValue *mv;
	if (fe_is_const(m)) {
		mv = fe_to_ir(fe, node, m, T(fe, TY_I1));
	} else if (fe_is_tensor(m)) {
		mv = m->v;
		if (ir_scalar(mv->type)->kind != TY_I1)
			return fe_err(fe, node, IR_ERR_TYPE, "tl.%s(): mask must have a boolean type, got %s", c->name,
				      fe_tyname(fe, mv->type));
	} else
		return fe_err(fe, node, IR_ERR_TYPE, "tl.%s(): bad mask", c->name);
	if (!mv)
		return NULL;
	if (!ir_is_block((*p)->type) && ir_is_block(mv->type))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.%s(): the mask is a block but the pointer is a scalar", c->name);
	if (!fe_broadcast_pair(fe, node, p, &mv))
		return NULL;
	return mv;
}

/* cache_modifier and eviction_policy of a load or store: the cache
 * operators Triton takes for each ({.ca, .cg, .cv} for loads, {.wb, .cg,
 * .cs, .wt} for stores) become attribute cache (without the dot). */
static bool mem_attrs(Fe *fe, PyObject *node, Call *c, IrOp *op, FeVal *cache, FeVal *evict)
{
	const char *cm = const_str(fe, node, c, cache, "cache_modifier");
	const char *ev = const_str(fe, node, c, evict, "eviction_policy");
	if (!cm || !ev)
		return false;
	if (*cm) {
		static const char *ld[] = {".ca", ".cg", ".cv", NULL}, *st[] = {".wb", ".cg", ".cs", ".wt", NULL};
		bool good = false;
		for (const char **k = op->opc == OP_STORE ? st : ld; *k; k++)
			good = good || strcmp(*k, cm) == 0;
		if (!good)
			return fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): cache_modifier '%s' is not supported (%s)", c->name,
				      cm, op->opc == OP_STORE ? "'.wb', '.cg', '.cs' or '.wt'" : "'.ca', '.cg' or '.cv'");
		ir_op_set_str(fe->ctx, op, "cache", cm + 1);
	}
	if (*ev) {
		if (strcmp(ev, "evict_last") && strcmp(ev, "evict_first") && strcmp(ev, "evict_normal"))
			return fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): unknown eviction_policy '%s'", c->name, ev);
		ir_op_set_str(fe->ctx, op, "evict", ev);
	}
	return true;
}

/* boundary_check and padding_option are for block pointers (fe_blockptr.c);
 * through a pointer or a block of pointers Triton refuses them. */
static bool no_block_ptr_args(Fe *fe, PyObject *node, Call *c, FeVal *bc, FeVal *pad, bool load)
{
	bool has_pad = false;
	if (pad && given(pad)) {
		if (!fe_is_const(pad) || !PyUnicode_Check(pad->obj))
			return fe_err(fe, node, IR_ERR_VALUE, "Padding option %s not supported",
				      fe_is_const(pad) ? fe_str(fe, pad->obj) : "(a tensor)") != NULL;
		const char *p = PyUnicode_AsUTF8AndSize(pad->obj, NULL);
		if (*p && strcmp(p, "zero") && strcmp(p, "nan"))
			return fe_err(fe, node, IR_ERR_VALUE, "Padding option %s not supported", p) != NULL;
		has_pad = *p != 0;
	}
	bool has_bc = given(bc) && !(fe_is_const(bc) && PySequence_Check(bc->obj) && PySequence_Size(bc->obj) == 0);
	if (load && (has_pad || has_bc))
		return fe_err(fe, node, IR_ERR_VALUE,
			      "`padding_option` or `boundary_check` argument is not supported for loading a tensor of "
			      "pointers or loading a scalar. Because the compiler does not know the boundary; please "
			      "use block pointers (defined by `make_block_ptr`) instead") != NULL;
	if (has_bc)
		return fe_err(fe, node, IR_ERR_VALUE,
			      "`boundary_check` argument is not supported for storing a tensor of pointers or storing "
			      "a scalar. Because the compiler does not know the boundary; please use block pointers "
			      "(defined by `make_block_ptr`) instead") != NULL;
	return true;
}

/* load(pointer, mask, other, boundary_check, padding_option, cache_modifier, eviction_policy, volatile) */
static FeVal *bi_load(Fe *fe, PyObject *node, Call *c)
{
	IrValue *p = tensor_arg(fe, node, c, 0, "pointer");
	if (!p || !ptr_check(fe, node, c, p))
		return NULL;
	if (!no_block_ptr_args(fe, node, c, c->a[3], c->a[4], true))
		return NULL;
	IrValue *mask = mask_arg(fe, node, c, c->a[1], &p);
	if (given(c->a[1]) && !mask)
		return NULL;
	IrValue *other = NULL;
	const IrType *elem = ir_scalar(p->type)->elem;
	if (given(c->a[2])) {
		if (!mask)
			return fe_err(fe, node, IR_ERR_VALUE, "tl.load(): `other` cannot be given without `mask`");
		const IrType *rt = ir_type_like(fe->ctx, p->type, elem);
		if (fe_is_const(c->a[2]))
			other = fe_to_ir(fe, node, c->a[2], rt);
		else {
			other = fe_to_ir(fe, node, c->a[2], elem);
			if (other)
				other = fe_broadcast_to(fe, node, other, rank_of(p->type), p->type->shape);
		}
		if (!other)
			return NULL;
	}
	IrValue *r = ir_load(&fe->b, p, mask, other);
	if (!mem_attrs(fe, node, c, r->def, c->a[5], c->a[6]))
		return NULL;
	int vol = const_bool(fe, node, c, c->a[7], "volatile", false);
	if (vol < 0)
		return NULL;
	if (vol)
		ir_op_set_bool(fe->ctx, r->def, "volatile", true);
	return t_(fe, r);
}

/* store(pointer, value, mask, boundary_check, cache_modifier, eviction_policy) */
static FeVal *bi_store(Fe *fe, PyObject *node, Call *c)
{
	IrValue *p = tensor_arg(fe, node, c, 0, "pointer");
	if (!p || !ptr_check(fe, node, c, p) || !writable_check(fe, node, c, p))
		return NULL;
	if (!no_block_ptr_args(fe, node, c, c->a[3], NULL, false))
		return NULL;
	const IrType *elem = ir_scalar(p->type)->elem;
	IrValue *v;
	if (fe_is_const(c->a[1]))
		v = fe_to_ir(fe, node, c->a[1], ir_type_like(fe->ctx, p->type, elem));
	else {
		v = fe_to_ir(fe, node, c->a[1], elem);
		if (v && ir_is_block(v->type) && !ir_is_block(p->type))
			return fe_err(fe, node, IR_ERR_TYPE,
				      "tl.store(): the value is a block %s but the pointer is a scalar",
				      fe_tyname(fe, v->type));
		if (v)
			v = fe_broadcast_to(fe, node, v, rank_of(p->type), p->type->shape);
	}
	if (!v)
		return NULL;
	IrValue *mask = mask_arg(fe, node, c, c->a[2], &p);
	if (given(c->a[2]) && !mask)
		return NULL;
	if (mask && mask->type->rank != p->type->rank)
		return fe_err(fe, node, IR_ERR_TYPE, "tl.store(): mask shape does not match the pointer");
	IrOp *op = ir_store(&fe->b, p, v, mask);
	if (!mem_attrs(fe, node, c, op, c->a[4], c->a[5]))
		return NULL;
	return fe_none(fe);
}

static bool sem_scope(Fe *fe, PyObject *node, Call *c, IrOp *op, FeVal *sem, FeVal *scope)
{
	const char *s = const_str(fe, node, c, sem, "sem"), *sc = const_str(fe, node, c, scope, "scope");
	if (!s || !sc)
		return false;
	if (!*s)
		s = "acq_rel";
	if (!*sc)
		sc = "gpu";
	if (strcmp(s, "acquire") && strcmp(s, "release") && strcmp(s, "acq_rel") && strcmp(s, "relaxed"))
		return fe_err(fe, node, IR_ERR_VALUE,
			      "tl.%s(): sem must be 'acquire', 'release', 'acq_rel' or 'relaxed', got '%s'", c->name, s);
	if (strcmp(sc, "gpu") && strcmp(sc, "cta") && strcmp(sc, "sys"))
		return fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): scope must be 'gpu', 'cta' or 'sys', got '%s'", c->name,
			      sc);
	ir_op_set_str(fe->ctx, op, "sem", s);
	ir_op_set_str(fe->ctx, op, "scope", sc);
	return true;
}

/* atomic_<kind>(pointer, val, mask, sem, scope) */
static FeVal *bi_atomic(Fe *fe, PyObject *node, Call *c)
{
	IrValue *p = tensor_arg(fe, node, c, 0, "pointer");
	if (!p || !ptr_check(fe, node, c, p) || !writable_check(fe, node, c, p))
		return NULL;
	const IrType *elem = ir_scalar(p->type)->elem;
	const char *kind = c->name + strlen("atomic_");
	/* Triton's rules: no 8-bit or 16-bit integers, no fp8; fp16/bf16 only add */
	if (ir_type_bits(elem) < 16 || elem->kind == TY_I16 || elem->kind == TY_U16 ||
	    ((elem->kind == TY_F16 || elem->kind == TY_BF16) && strcmp(kind, "add") != 0))
		return fe_err(fe, node, IR_ERR_TYPE, "atomic_%s does not support %s", kind,
			      fe_tyname(fe, elem));
	IrValue *v = fe_to_ir(fe, node, c->a[1], elem);
	if (!v || !fe_broadcast_pair(fe, node, &p, &v))
		return NULL;
	IrValue *mask = mask_arg(fe, node, c, c->a[2], &p);
	if (given(c->a[2]) && !mask)
		return NULL;
	if (mask && ir_is_block(mask->type) && !ir_is_block(v->type))
		v = fe_broadcast_to(fe, node, v, mask->type->rank, mask->type->shape);
	IrValue *ops[3] = {p, v, mask};
	IrOp *op = ir_build(&fe->b, OP_ATOMIC_RMW, mask ? 3 : 2, ops, 1, &v->type, 0);
	ir_op_set_str(fe->ctx, op, "kind", c->name + strlen("atomic_"));
	if (!sem_scope(fe, node, c, op, c->a[3], c->a[4]))
		return NULL;
	return t_(fe, &op->res[0]);
}

/* atomic_cas(pointer, cmp, val, sem, scope) */
static FeVal *bi_atomic_cas(Fe *fe, PyObject *node, Call *c)
{
	IrValue *p = tensor_arg(fe, node, c, 0, "pointer");
	if (!p || !ptr_check(fe, node, c, p) || !writable_check(fe, node, c, p))
		return NULL;
	const IrType *elem = ir_scalar(p->type)->elem;
	IrValue *cmp = fe_to_ir(fe, node, c->a[1], elem), *v = fe_to_ir(fe, node, c->a[2], elem);
	if (!cmp || !v || !fe_broadcast_pair(fe, node, &p, &cmp) || !fe_broadcast_pair(fe, node, &p, &v))
		return NULL;
	IrValue *ops[3] = {p, cmp, v};
	IrOp *op = ir_build(&fe->b, OP_ATOMIC_CAS, 3, ops, 1, &v->type, 0);
	if (!sem_scope(fe, node, c, op, c->a[3], c->a[4]))
		return NULL;
	return t_(fe, &op->res[0]);
}

/* ---- elementwise ----------------------------------------------------------- */

/* broadcast shape of the block operands among vs */
static bool common_shape(Fe *fe, PyObject *node, int n, FeVal **vs, int *rank, int64_t *shape)
{
	*rank = 0;
	for (int i = 0; i < n; i++) {
		if (!fe_is_tensor(vs[i]) || !ir_is_block(vs[i]->v->type))
			continue;
		const IrType *t = vs[i]->v->type;
		int r = t->rank > *rank ? t->rank : *rank;
		int64_t ns[IR_MAX_RANK];
		for (int d = 0; d < r; d++) {
			int ai = d - (r - *rank), bi = d - (r - t->rank);
			int64_t a = ai >= 0 ? shape[ai] : 1, b = bi >= 0 ? t->shape[bi] : 1;
			if (a != b && a != 1 && b != 1) {
				fe_err(fe, node, IR_ERR_TYPE, "incompatible shapes: dimension %d is %lld vs %lld", d,
				       (long long)a, (long long)b);
				return false;
			}
			ns[d] = a > b ? a : b;
		}
		memcpy(shape, ns, sizeof(int64_t) * (size_t)r);
		*rank = r;
	}
	return true;
}

/* Converts v to element type e and the given shape. */
static IrValue *shaped(Fe *fe, PyObject *node, FeVal *v, const IrType *e, int rank, const int64_t *shape)
{
	if (fe_is_const(v)) {
		const IrType *t = fe_block(fe, node, e, rank, shape);
		return t ? fe_to_ir(fe, node, v, t) : NULL;
	}
	IrValue *x = fe_to_ir(fe, node, v, e);
	return x ? fe_broadcast_to(fe, node, x, rank, shape) : NULL;
}

FeVal *fe_where(Fe *fe, PyObject *node, FeVal *c, FeVal *a, FeVal *b)
{
	if (!c || !a || !b)
		return NULL;
	const IrType *t;
	if (fe_is_tensor(a) && fe_is_tensor(b) && ir_is_ptr(ir_scalar(a->v->type)))
		t = ir_scalar(a->v->type);
	else
		t = fe_promote(fe, node, a, b, false, false);
	if (!t)
		return NULL;
	FeVal *all[3] = {c, a, b};
	int rank;
	int64_t shape[IR_MAX_RANK];
	if (!common_shape(fe, node, 3, all, &rank, shape))
		return NULL;
	IrValue *cv = fe_is_const(c) ? shaped(fe, node, c, T(fe, TY_I1), rank, shape)
				     : fe_broadcast_to(fe, node, fe_to_bool(fe, node, c->v), rank, shape);
	IrValue *x = cv ? shaped(fe, node, a, t, rank, shape) : NULL;
	IrValue *y = x ? shaped(fe, node, b, t, rank, shape) : NULL;
	return y ? t_(fe, ir_select(&fe->b, cv, x, y)) : NULL;
}

static FeVal *bi_where(Fe *fe, PyObject *node, Call *c)
{
	return fe_where(fe, node, c->a[0], c->a[1], c->a[2]);
}

/* n operands promoted to one type and broadcast together */
static bool promoted(Fe *fe, PyObject *node, Call *c, int n, FeVal **vs, IrValue **out, const IrType **te)
{
	const IrType *t = NULL;
	for (int i = 0; i < n; i++) {
		if (!vs[i])
			return fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): missing argument", c->name);
		if (i == 0)
			continue;
		FeVal *acc = i == 1 ? vs[0] : NULL;
		if (acc)
			t = fe_promote(fe, node, vs[0], vs[1], false, true);
		else {
			/* fold the running type with the next operand */
			FeVal tmp = {0};
			IrValue dummy = {0};
			dummy.type = t;
			tmp.kind = V_TENSOR;
			tmp.v = &dummy;
			bool allc = true;
			for (int j = 0; j < i; j++)
				allc = allc && fe_is_const(vs[j]);
			t = allc ? fe_promote(fe, node, vs[0], vs[i], false, true)
				 : fe_promote(fe, node, &tmp, vs[i], false, true);
		}
		if (!t)
			return false;
	}
	if (n == 1) {
		t = fe_is_tensor(vs[0]) ? ir_scalar(vs[0]->v->type) : NULL;
		if (!t) {
			IrValue *x = fe_to_ir(fe, node, vs[0], NULL);
			if (!x)
				return false;
			t = x->type;
			out[0] = x;
			*te = t;
			return true;
		}
	}
	int rank;
	int64_t shape[IR_MAX_RANK];
	if (!common_shape(fe, node, n, vs, &rank, shape))
		return false;
	for (int i = 0; i < n; i++)
		if (!(out[i] = shaped(fe, node, vs[i], t, rank, shape)))
			return false;
	*te = t;
	return true;
}

static FeVal *bi_minmax(Fe *fe, PyObject *node, Call *c)
{
	IrValue *v[2];
	const IrType *t;
	if (!promoted(fe, node, c, 2, c->a, v, &t))
		return NULL;
	IrValue *r = ir_binary(&fe->b, strcmp(c->name, "minimum") == 0 ? OP_MIN : OP_MAX, v[0], v[1]);
	if (given(c->a[2]) && ir_is_float(t)) {
		int64_t pn;
		if (!const_int(fe, node, c, c->a[2], "propagate_nan", &pn))
			return NULL;
		if (pn)
			ir_op_set_str(fe->ctx, r->def, "propagate_nan", "all");
	}
	return t_(fe, r);
}

static FeVal *bi_clamp(Fe *fe, PyObject *node, Call *c)
{
	IrValue *v[3];
	const IrType *t;
	if (!promoted(fe, node, c, 3, c->a, v, &t))
		return NULL;
	bool all = false;
	if (given(c->a[3])) {
		int64_t pn;
		if (!const_int(fe, node, c, c->a[3], "propagate_nan", &pn))
			return NULL;
		all = pn != 0;
	}
	IrValue *r = ir_binary(&fe->b, OP_MAX, v[0], v[1]);
	if (all && ir_is_float(t))
		ir_op_set_str(fe->ctx, r->def, "propagate_nan", "all");
	r = ir_binary(&fe->b, OP_MIN, r, v[2]);
	if (all && ir_is_float(t))
		ir_op_set_str(fe->ctx, r->def, "propagate_nan", "all");
	return t_(fe, r);
}

static const struct {
	const char *name;
	IrOpcode opc;
	int need; /* 0 any, 1 float, 2 fp32/fp64, 3 int */
} math1[] = {
	{"exp", OP_EXP, 2},   {"exp2", OP_EXP2, 2},   {"log", OP_LOG, 2},     {"log2", OP_LOG2, 2},
	{"sqrt", OP_SQRT, 2}, {"sqrt_rn", OP_SQRT, 2}, {"rsqrt", OP_RSQRT, 2}, {"sin", OP_SIN, 2},
	{"cos", OP_COS, 2},   {"erf", OP_ERF, 2},     {"floor", OP_FLOOR, 1}, {"ceil", OP_CEIL, 1},
	{"abs", OP_ABS, 0},
};

static FeVal *bi_math1(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "x");
	if (!x)
		return NULL;
	for (size_t i = 0; i < sizeof math1 / sizeof math1[0]; i++) {
		if (strcmp(math1[i].name, c->name) != 0)
			continue;
		const IrType *e = ir_scalar(x->type);
		if (math1[i].need == 2 && e->kind != TY_F32 && e->kind != TY_F64)
			return fe_err(fe, node, IR_ERR_TYPE,
				      "tl.%s() expects fp32 or fp64, got %s (convert with .to(tl.float32))", c->name,
				      fe_tyname(fe, e));
		if (math1[i].need == 1 && !ir_is_float(e))
			return fe_err(fe, node, IR_ERR_TYPE, "tl.%s() expects a floating-point tensor, got %s",
				      c->name, fe_tyname(fe, e));
		if (ir_is_ptr(e))
			return fe_err(fe, node, IR_ERR_TYPE, "tl.%s() does not take pointers", c->name);
		if (math1[i].opc == OP_ABS && ir_is_int(e) && !ir_is_signed(e))
			return t_(fe, x);
		IrValue *r = ir_unary(&fe->b, math1[i].opc, x);
		if (strcmp(c->name, "sqrt_rn") == 0)
			ir_op_set_str(fe->ctx, r->def, "rounding", "rn");
		return t_(fe, r);
	}
	return fe_err(fe, node, IR_ERR_INTERNAL, "unknown math builtin %s", c->name);
}

static FeVal *bi_div(Fe *fe, PyObject *node, Call *c)
{
	IrValue *v[2];
	const IrType *t;
	if (!promoted(fe, node, c, 2, c->a, v, &t))
		return NULL;
	if (!ir_is_float(t))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.%s() expects floating-point operands, got %s", c->name,
			      fe_tyname(fe, t));
	IrValue *r = ir_binary(&fe->b, OP_DIV, v[0], v[1]);
	bool rn = strcmp(c->name, "div_rn") == 0;
	if (!rn) {
		int ieee = const_bool(fe, node, c, c->a[2], "ieee_rounding", false);
		if (ieee < 0)
			return NULL;
		rn = ieee;
	}
	if (rn)
		ir_op_set_str(fe->ctx, r->def, "rounding", "rn");
	return t_(fe, r);
}

static FeVal *bi_fma(Fe *fe, PyObject *node, Call *c)
{
	IrValue *v[3];
	const IrType *t;
	if (!promoted(fe, node, c, 3, c->a, v, &t))
		return NULL;
	if (!ir_is_float(ir_scalar(t)))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.fma() expects floating-point operands, got %s",
			      fe_tyname(fe, t));
	return t_(fe, ir_build1(&fe->b, OP_FMA, v[0]->type, 3, v));
}

/* tl.add, tl.sub, tl.mul: the operators, with Triton's opt-out of the
 * overflow check (sanitize_overflow=False). */
static FeVal *bi_arith(Fe *fe, PyObject *node, Call *c)
{
	int check = const_bool(fe, node, c, c->a[2], "sanitize_overflow", true);
	if (check < 0)
		return NULL;
	FeNode op = c->name[0] == 'a' ? N_Add : c->name[0] == 's' ? N_Sub : N_Mult;
	return fe_arith(fe, node, op, c->a[0], c->a[1], check == 1);
}

static FeVal *bi_umulhi(Fe *fe, PyObject *node, Call *c)
{
	IrValue *v[2];
	const IrType *t;
	if (!promoted(fe, node, c, 2, c->a, v, &t))
		return NULL;
	if (!ir_is_int(t))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.umulhi() expects integers, got %s", fe_tyname(fe, t));
	return t_(fe, ir_binary(&fe->b, OP_UMULHI, v[0], v[1]));
}

static FeVal *bi_extern(Fe *fe, PyObject *node, Call *c)
{
	if (c->nvar < 1)
		return fe_err(fe, node, IR_ERR_VALUE, "%s() needs arguments", c->name);
	IrValue **v = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)c->nvar);
	const IrType *t;
	if (!promoted(fe, node, c, c->nvar, c->var, v, &t))
		return NULL;
	if (t->kind != TY_F32 && t->kind != TY_F64)
		return fe_err(fe, node, IR_ERR_TYPE, "libdevice.%s() expects fp32 or fp64, got %s", c->name,
			      fe_tyname(fe, t));
	IrValue *r = ir_build1(&fe->b, OP_EXTERN, v[0]->type, c->nvar, v);
	ir_op_set_str(fe->ctx, r->def, "symbol",
		      ir_fmt(fe->ctx, "__nv_%s%s", c->name, t->kind == TY_F32 ? "f" : ""));
	ir_op_set_str(fe->ctx, r->def, "lib", "libdevice");
	return t_(fe, r);
}

/* The items of a constant or runtime tuple/list argument (NULL + error
 * otherwise); *n their count. */
static FeVal **seq_items(Fe *fe, PyObject *node, Call *c, FeVal *v, const char *pname, int *n)
{
	if (v && v->kind == V_TUPLE) {
		*n = v->n;
		return v->items;
	}
	if (v && fe_is_const(v) && (PyTuple_Check(v->obj) || PyList_Check(v->obj))) {
		PyObject *seq = v->obj;
		Py_ssize_t len = PySequence_Size(seq);
		FeVal **items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(len ? len : 1));
		for (Py_ssize_t i = 0; i < len; i++) {
			PyObject *o = fe_keep(fe, PySequence_GetItem(seq, i));
			if (!o)
				return fe_pyerr(fe, node, pname);
			items[i] = fe_const(fe, o);
		}
		*n = (int)len;
		return items;
	}
	return fe_err(fe, node, IR_ERR_TYPE, "tl.%s(): argument '%s' must be a list or tuple", c->name, pname);
}

/* tl.inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
 * the arguments (Python scalars become tensors, no type promotion) are
 * broadcast to one shape; one result per dtype (a tuple when dtype is a
 * sequence). */
static FeVal *bi_inline_asm(Fe *fe, PyObject *node, Call *c)
{
	const char *asm_text = const_str(fe, node, c, c->a[0], "asm");
	const char *cons = asm_text ? const_str(fe, node, c, c->a[1], "constraints") : NULL;
	if (!cons)
		return NULL;
	int pure = const_bool(fe, node, c, c->a[4], "is_pure", false);
	if (pure < 0)
		return NULL;
	if (!given(c->a[4]))
		return fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): argument 'is_pure' is required", c->name);
	int64_t pack;
	if (!const_int(fe, node, c, c->a[5], "pack", &pack))
		return NULL;
	if (pack < 1 || pack > 64)
		return fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): pack must be between 1 and 64, got %lld", c->name,
			      (long long)pack);
	/* dtype: one type, or a sequence of types (the result is then a tuple) */
	FeVal *dv = c->a[3];
	bool multi = dv && (dv->kind == V_TUPLE ||
			    (fe_is_const(dv) && (PyTuple_Check(dv->obj) || PyList_Check(dv->obj))));
	int nres = 1;
	FeVal **dts = &c->a[3];
	if (multi && !(dts = seq_items(fe, node, c, dv, "dtype", &nres)))
		return NULL;
	if (nres < 1)
		return fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): dtype must name at least one result type", c->name);
	const IrType **rts = ir_alloc(fe->ctx, sizeof(IrType *) * (size_t)nres);
	for (int i = 0; i < nres; i++) {
		if (!(rts[i] = dtype_arg(fe, node, c, dts[i], "dtype")))
			return NULL;
		if (ir_is_block(rts[i]) || rts[i]->kind == TY_I1 || rts[i]->kind == TY_VOID)
			return fe_err(fe, node, IR_ERR_TYPE,
				      "tl.%s(): result dtype %s is not supported (integers, floats or pointers)",
				      c->name, fe_tyname(fe, rts[i]));
	}
	int nargs;
	FeVal **av = seq_items(fe, node, c, c->a[2], "args", &nargs);
	if (!av)
		return NULL;
	IrValue **v = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)(nargs ? nargs : 1));
	for (int i = 0; i < nargs; i++) {
		FeVal *a = av[i];
		if (fe_is_tensor(a))
			v[i] = a->v;
		else if (fe_is_const(a) && (PyLong_Check(a->obj) || PyFloat_Check(a->obj) || PyBool_Check(a->obj)))
			v[i] = fe_to_ir(fe, node, a, NULL);
		else
			return fe_err(fe, node, IR_ERR_TYPE, "tl.%s(): args[%d] must be a tensor or a number", c->name, i);
		if (!v[i])
			return NULL;
		if (ir_scalar(v[i]->type)->kind == TY_I1)
			return fe_err(fe, node, IR_ERR_TYPE,
				      "tl.%s(): args[%d] is a boolean tensor; pass it as an integer (x.to(tl.int8))",
				      c->name, i);
	}
	/* the common shape, then every argument broadcast to it */
	IrValue *shape = nargs ? v[0] : NULL;
	for (int i = 1; i < nargs; i++) {
		IrValue *x = v[i];
		if (!fe_broadcast_pair(fe, node, &x, &shape))
			return NULL;
	}
	for (int i = 0; i < nargs; i++) {
		IrValue *s = shape;
		if (!fe_broadcast_pair(fe, node, &v[i], &s))
			return NULL;
	}
	for (int i = 0; shape && i < nres; i++)
		rts[i] = ir_type_like(fe->ctx, shape->type, rts[i]);
	/* one constraint per asm register: results first, then operands */
	int want_out = 0, want_in = 0, nout, nin;
	for (int i = 0; i < nres; i++)
		want_out += (int)(pack / ir_asm_per_reg(rts[i], pack));
	for (int i = 0; i < nargs; i++)
		want_in += (int)(pack / ir_asm_per_reg(v[i]->type, pack));
	if (!ir_asm_constraint_counts(cons, &nout, &nin))
		return fe_err(fe, node, IR_ERR_VALUE,
			      "tl.%s(): constraints \"%s\": every entry must be a non-empty register or immediate "
			      "constraint (indirect '*' ones are not supported)", c->name, cons);
	if (nout != want_out || nin != want_in)
		return fe_err(fe, node, IR_ERR_VALUE,
			      "tl.%s(): constraints \"%s\" name %d outputs and %d inputs, but with pack = %lld the asm "
			      "has %d output and %d input registers (elements narrower than 32 bits share one)",
			      c->name, cons, nout, nin, (long long)pack, want_out, want_in);
	IrOp *op = ir_build(&fe->b, OP_INLINE_ASM, nargs, v, nres, rts, 0);
	ir_op_set_str(fe->ctx, op, "asm", asm_text);
	ir_op_set_str(fe->ctx, op, "constraints", cons);
	ir_op_set_bool(fe->ctx, op, "pure", pure == 1);
	ir_op_set_int(fe->ctx, op, "pack", pack);
	if (!multi)
		return t_(fe, &op->res[0]);
	FeVal **items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)nres);
	for (int i = 0; i < nres; i++)
		items[i] = t_(fe, &op->res[i]);
	return fe_make_tuple(fe, nres, items);
}

/* tl.map_elementwise(scalar_fn, *args, pack=1): scalar_fn traced once on
 * pack scalars of each argument (broadcast to one shape) into the region of
 * a map_elementwise op; its pack * k results give k blocks. */
static FeVal *bi_map_elementwise(Fe *fe, PyObject *node, Call *c)
{
	if (!fe_is_const(c->a[0]) || !fe_is_jit(fe, c->a[0]->obj))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.%s(): scalar_fn must be a @jit function", c->name);
	int64_t pack = 1;
	if (given(c->a[1]) && !const_int(fe, node, c, c->a[1], "pack", &pack))
		return NULL;
	if (pack < 1 || pack > 64)
		return fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): pack must be between 1 and 64, got %lld", c->name,
			      (long long)pack);
	int n = c->nvar;
	IrValue **v = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)(n ? n : 1));
	IrValue *shape = NULL;
	for (int i = 0; i < n; i++) {
		FeVal *a = c->var[i];
		if (fe_is_tensor(a))
			v[i] = a->v;
		else if (fe_is_const(a) && (PyLong_Check(a->obj) || PyFloat_Check(a->obj) || PyBool_Check(a->obj)))
			v[i] = fe_to_ir(fe, node, a, NULL);
		else
			return fe_err(fe, node, IR_ERR_TYPE, "tl.%s(): argument %d must be a tensor or a number", c->name,
				      i + 1);
		if (!v[i])
			return NULL;
		if (ir_is_block(v[i]->type) && !shape)
			shape = v[i];
	}
	if (!shape)
		return fe_err(fe, node, IR_ERR_TYPE, "tl.%s() maps over tensors: give it at least one", c->name);
	for (int i = 0; i < n; i++) {
		IrValue *x = v[i];
		if (!fe_broadcast_pair(fe, node, &x, &shape))
			return NULL;
	}
	for (int i = 0; i < n; i++) {
		IrValue *s = shape;
		if (!fe_broadcast_pair(fe, node, &v[i], &s))
			return NULL;
	}
	/* the region: pack scalars of each argument in, pack of each result out */
	IrBlock *blk = ir_block_new(fe->ctx);
	int nargs = n * (int)pack;
	FeVal **args = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(nargs ? nargs : 1));
	for (int i = 0; i < n; i++)
		for (int j = 0; j < pack; j++)
			args[i * pack + j] = fe_tensor(fe, ir_block_add_arg(fe->ctx, blk, ir_scalar(v[i]->type)));
	IrBuilder saved = fe->b;
	ir_builder_at_end(&fe->b, blk);
	fe->b.loc = saved.loc;
	FeVal *r = fe_call_jit_values(fe, node, c->a[0]->obj, nargs, args);
	if (!r) {
		fe->b = saved;
		return NULL;
	}
	int m = r->kind == V_TUPLE ? r->n : 1;
	if (m < 1 || m % pack) {
		fe->b = saved;
		return fe_err(fe, node, IR_ERR_TYPE,
			      "tl.%s(): scalar_fn returned %d values; with pack = %lld it must return a multiple of %lld",
			      c->name, m, (long long)pack, (long long)pack);
	}
	int nres = m / (int)pack;
	IrValue **ys = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)m);
	const IrType **rts = ir_alloc(fe->ctx, sizeof(IrType *) * (size_t)nres);
	for (int k = 0; k < m; k++) {
		FeVal *x = r->kind == V_TUPLE ? r->items[k] : r;
		ys[k] = fe_to_ir(fe, node, x, NULL);
		if (!ys[k] || ir_is_block(ys[k]->type) || ys[k]->type->kind == TY_VOID) {
			fe->b = saved;
			return ys[k] ? fe_err(fe, node, IR_ERR_TYPE, "tl.%s(): scalar_fn must return scalars", c->name)
				     : NULL;
		}
	}
	for (int i = 0; i < nres; i++) {
		rts[i] = ys[i * pack]->type;
		for (int j = 1; j < pack; j++)
			if (ys[i * pack + j]->type != rts[i]) {
				fe->b = saved;
				return fe_err(fe, node, IR_ERR_TYPE,
					      "tl.%s(): scalar_fn's results %lld and %lld, two elements of result %d, "
					      "have different types (%s and %s)",
					      c->name, (long long)(i * pack), (long long)(i * pack + j), i,
					      fe_tyname(fe, rts[i]), fe_tyname(fe, ys[i * pack + j]->type));
			}
		rts[i] = ir_type_like(fe->ctx, shape->type, rts[i]);
	}
	ir_yield(&fe->b, m, ys);
	fe->b = saved;
	IrOp *op = ir_build(&fe->b, OP_MAP_ELEM, n, v, nres, rts, 1);
	ir_op_set_region(op, 0, blk);
	ir_op_set_int(fe->ctx, op, "pack", pack);
	if (r->kind != V_TUPLE)
		return t_(fe, &op->res[0]);
	FeVal **items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)nres);
	for (int i = 0; i < nres; i++)
		items[i] = t_(fe, &op->res[i]);
	return fe_make_tuple(fe, nres, items);
}

/* ---- shape manipulation ------------------------------------------------- */

static IrValue *trans_to(Fe *fe, PyObject *node, IrValue *x, int n, const int64_t *order)
{
	const IrType *t = x->type;
	int64_t shape[IR_MAX_RANK];
	for (int i = 0; i < n; i++)
		shape[i] = t->shape[order[i]];
	const IrType *rt = fe_block(fe, node, t->elem, n, shape);
	if (!rt)
		return NULL;
	IrValue *r = ir_build1(&fe->b, OP_TRANS, rt, 1, &x);
	ir_op_set_ints(fe->ctx, r->def, "order", n, order);
	return r;
}

static FeVal *bi_trans(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input");
	if (!x)
		return NULL;
	int rank = rank_of(x->type);
	int n = 0;
	int64_t order[IR_MAX_RANK];
	if (c->nvar && !var_shape(fe, node, c, &n, order))
		return NULL;
	if (n == 0) {
		if (strcmp(c->name, "permute") == 0)
			return fe_err(fe, node, IR_ERR_VALUE, "tl.permute() needs dims");
		if (rank < 2)
			return fe_err(fe, node, IR_ERR_TYPE, "tl.trans() needs a tensor of rank >= 2, got %s",
				      fe_tyname(fe, x->type));
		/* the last two axes swapped: an (optionally batched) 2-D transpose */
		n = rank;
		for (int i = 0; i < rank; i++)
			order[i] = i;
		order[rank - 2] = rank - 1;
		order[rank - 1] = rank - 2;
	}
	if (n != rank)
		return fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): %d dims given for a tensor of rank %d", c->name, n, rank);
	bool seen[IR_MAX_RANK] = {0};
	for (int i = 0; i < n; i++) {
		if (order[i] < 0 || order[i] >= rank || seen[order[i]])
			return fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): dims must be a permutation of 0..%d", c->name,
				      rank - 1);
		seen[order[i]] = true;
	}
	IrValue *r = trans_to(fe, node, x, n, order);
	return r ? t_(fe, r) : NULL;
}

static IrValue *reshape_to(Fe *fe, PyObject *node, IrValue *x, int rank, const int64_t *shape, bool reorder)
{
	const IrType *t = x->type;
	int64_t numel = 1;
	for (int i = 0; i < rank; i++)
		numel *= shape[i];
	if (numel != t->numel)
		return fe_err(fe, node, IR_ERR_VALUE, "cannot reshape %s (%lld elements) to %lld elements",
			      fe_tyname(fe, t), (long long)t->numel, (long long)numel);
	const IrType *rt = fe_block(fe, node, ir_scalar(t), rank, shape);
	if (!rt)
		return NULL;
	if (rt == t)
		return x;
	if (!ir_is_block(t))
		return ir_splat(&fe->b, x, rt);
	IrValue *r = ir_build1(&fe->b, OP_RESHAPE, rt, 1, &x);
	if (reorder)
		ir_op_set_bool(fe->ctx, r->def, "can_reorder", true);
	return r;
}

static FeVal *bi_reshape(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input");
	if (!x)
		return NULL;
	int rank;
	int64_t shape[IR_MAX_RANK];
	if (!var_shape(fe, node, c, &rank, shape))
		return NULL;
	int reorder = strcmp(c->name, "view") == 0 ? 1 : const_bool(fe, node, c, c->a[1], "can_reorder", false);
	if (reorder < 0)
		return NULL;
	IrValue *r = reshape_to(fe, node, x, rank, shape, reorder);
	return r ? t_(fe, r) : NULL;
}

static FeVal *bi_ravel(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "x");
	if (!x)
		return NULL;
	int reorder = const_bool(fe, node, c, c->a[1], "can_reorder", false);
	if (reorder < 0)
		return NULL;
	int64_t n = x->type->numel;
	IrValue *r = reshape_to(fe, node, x, 1, &n, reorder);
	return r ? t_(fe, r) : NULL;
}

static FeVal *bi_expand_dims(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input");
	if (!x)
		return NULL;
	int n;
	int64_t axes[IR_MAX_RANK];
	if (!fe_shape(fe, node, c->a[1], &n, axes))
		return NULL;
	int rank = rank_of(x->type) + n;
	for (int i = 0; i < n; i++) {
		int a = norm_axis(fe, node, c, axes[i], rank);
		if (a < 0)
			return NULL;
		axes[i] = a;
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (axes[j] < axes[i]) {
				int64_t tmp = axes[i];
				axes[i] = axes[j];
				axes[j] = tmp;
			}
	for (int i = 1; i < n; i++)
		if (axes[i] == axes[i - 1]) {
			char buf[128];
			int k = snprintf(buf, sizeof buf, "[");
			for (int j = 0; j < n && k < (int)sizeof buf - 24; j++)
				k += snprintf(buf + k, sizeof buf - k, "%s%lld", j ? ", " : "", (long long)axes[j]);
			snprintf(buf + k, sizeof buf - k, "]");
			return fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): duplicate axes, normalized axes = %s",
				      c->name, buf);
		}
	for (int i = 0; i < n; i++) {
		if (!ir_is_block(x->type)) {
			int64_t one = 1;
			x = ir_splat(&fe->b, x, fe_block(fe, node, x->type, 1, &one));
		} else
			x = ir_expand_dims(&fe->b, x, (int)axes[i]);
	}
	return t_(fe, x);
}

/* squeeze(input, dim): drops a size-1 dim (a reshape). */
static FeVal *bi_squeeze(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input");
	if (!x)
		return NULL;
	int64_t d;
	if (!const_int(fe, node, c, c->a[1], "dim", &d))
		return NULL;
	int rank = rank_of(x->type);
	int a = norm_axis(fe, node, c, d, rank);
	if (a < 0)
		return NULL;
	if (x->type->shape[a] != 1)
		return fe_err(fe, node, IR_ERR_VALUE, "tl.squeeze(): dim %d of %s has size %lld, not 1", a,
			      fe_tyname(fe, x->type), (long long)x->type->shape[a]);
	if (rank == 1)
		return fe_err(fe, node, IR_ERR_VALUE, "tl.squeeze(): cannot squeeze a 1-D block (use .item())");
	int64_t shape[IR_MAX_RANK];
	int n = 0;
	for (int i = 0; i < rank; i++)
		if (i != a)
			shape[n++] = x->type->shape[i];
	IrValue *r = reshape_to(fe, node, x, n, shape, false);
	return r ? t_(fe, r) : NULL;
}

static FeVal *bi_broadcast_to(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input");
	if (!x)
		return NULL;
	int rank;
	int64_t shape[IR_MAX_RANK];
	if (!var_shape(fe, node, c, &rank, shape))
		return NULL;
	IrValue *r = fe_broadcast_to(fe, node, x, rank, shape);
	return r ? t_(fe, r) : NULL;
}

static FeVal *bi_broadcast(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input"), *y = x ? tensor_arg(fe, node, c, 1, "other") : NULL;
	if (!y || !fe_broadcast_pair(fe, node, &x, &y))
		return NULL;
	FeVal *items[2] = {t_(fe, x), t_(fe, y)};
	return fe_make_tuple(fe, 2, items);
}

static FeVal *bi_cat(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input"), *y = x ? tensor_arg(fe, node, c, 1, "other") : NULL;
	if (!y)
		return NULL;
	int64_t dim = 0;
	if (given(c->a[3]) && !const_int(fe, node, c, c->a[3], "dim", &dim))
		return NULL;
	int reorder = const_bool(fe, node, c, c->a[2], "can_reorder", false);
	if (reorder < 0)
		return NULL;
	if (x->type->elem != y->type->elem || x->type->rank != y->type->rank || !ir_is_block(x->type))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.cat(): operands %s and %s do not match", fe_tyname(fe, x->type),
			      fe_tyname(fe, y->type));
	int rank = x->type->rank;
	int d = norm_axis(fe, node, c, dim, rank);
	if (d < 0)
		return NULL;
	for (int i = 0; i < rank; i++)
		if (i != d && x->type->shape[i] != y->type->shape[i])
			return fe_err(fe, node, IR_ERR_TYPE, "tl.cat(): operands %s and %s differ outside dim %d",
				      fe_tyname(fe, x->type), fe_tyname(fe, y->type), d);
	if (d != 0) {
		/* the cat op joins along dim 0: move dim d to the front and back */
		int64_t order[IR_MAX_RANK], back[IR_MAX_RANK];
		order[0] = d;
		for (int i = 0, k = 1; i < rank; i++)
			if (i != d)
				order[k++] = i;
		for (int i = 0; i < rank; i++)
			back[order[i]] = i;
		IrValue *xt = trans_to(fe, node, x, rank, order);
		IrValue *yt = xt ? trans_to(fe, node, y, rank, order) : NULL;
		if (!yt)
			return NULL;
		int64_t shape[IR_MAX_RANK];
		memcpy(shape, xt->type->shape, sizeof shape);
		shape[0] += yt->type->shape[0];
		const IrType *rt = fe_block(fe, node, x->type->elem, rank, shape);
		if (!rt)
			return NULL;
		IrValue *ops[2] = {xt, yt};
		IrValue *r = ir_build1(&fe->b, OP_CAT, rt, 2, ops);
		if (reorder)
			ir_op_set_bool(fe->ctx, r->def, "can_reorder", true);
		r = trans_to(fe, node, r, rank, back);
		return r ? t_(fe, r) : NULL;
	}
	int64_t shape[IR_MAX_RANK];
	memcpy(shape, x->type->shape, sizeof shape);
	shape[0] += y->type->shape[0];
	const IrType *rt = fe_block(fe, node, x->type->elem, x->type->rank, shape);
	if (!rt)
		return NULL;
	IrValue *ops[2] = {x, y};
	IrValue *r = ir_build1(&fe->b, OP_CAT, rt, 2, ops);
	if (reorder)
		ir_op_set_bool(fe->ctx, r->def, "can_reorder", true);
	return t_(fe, r);
}

static FeVal *bi_join(Fe *fe, PyObject *node, Call *c)
{
	IrValue *v[2];
	const IrType *t;
	if (!promoted(fe, node, c, 2, c->a, v, &t))
		return NULL;
	const IrType *xt = v[0]->type;
	int rank = rank_of(xt);
	int64_t shape[IR_MAX_RANK];
	for (int i = 0; i < rank; i++)
		shape[i] = xt->shape[i];
	shape[rank] = 2;
	const IrType *rt = fe_block(fe, node, t, rank + 1, shape);
	return rt ? t_(fe, ir_build1(&fe->b, OP_JOIN, rt, 2, v)) : NULL;
}

/* tl.extra.cuda.num_warps() / num_threads(): the launch's warps (threads),
 * a compile-time constant (the num_warps option). */
static FeVal *bi_num_threads(Fe *fe, PyObject *node, Call *c)
{
	(void)node;
	const IrAttr *nw = ir_find_attr(fe->m->nattrs, fe->m->attrs, "num_warps");
	int64_t w = nw && nw->kind == ATTR_INT ? nw->i : 4;
	PyObject *o = fe_keep(fe, PyLong_FromLongLong(strcmp(c->name, "num_threads") == 0 ? w * 32 : w));
	return o ? fe_const(fe, o) : NULL;
}

static FeVal *bi_split(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "a");
	if (!x)
		return NULL;
	const IrType *t = x->type;
	if (!ir_is_block(t) || t->shape[t->rank - 1] != 2)
		return fe_err(fe, node, IR_ERR_TYPE, "tl.split(): the last dimension must be 2, got %s", fe_tyname(fe, t));
	const IrType *rt = fe_block(fe, node, t->elem, t->rank - 1, t->shape);
	if (!rt)
		return NULL;
	const IrType *rts[2] = {rt, rt};
	IrOp *op = ir_build(&fe->b, OP_SPLIT, 1, &x, 2, rts, 0);
	FeVal *items[2] = {t_(fe, &op->res[0]), t_(fe, &op->res[1])};
	return fe_make_tuple(fe, 2, items);
}

static FeVal *bi_gather(Fe *fe, PyObject *node, Call *c)
{
	IrValue *src = tensor_arg(fe, node, c, 0, "src"), *idx = src ? tensor_arg(fe, node, c, 1, "index") : NULL;
	if (!idx)
		return NULL;
	int64_t axis;
	if (!const_int(fe, node, c, c->a[2], "axis", &axis))
		return NULL;
	if (!ir_is_block(src->type) || !ir_is_block(idx->type) || src->type->rank != idx->type->rank ||
	    !ir_is_int(ir_scalar(idx->type)))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.gather(): src and index must be blocks of the same rank, index integer");
	int a = norm_axis(fe, node, c, axis, src->type->rank);
	if (a < 0)
		return NULL;
	const IrType *rt = ir_type_like(fe->ctx, idx->type, src->type->elem);
	IrValue *ops[2] = {src, idx};
	IrValue *r = ir_build1(&fe->b, OP_GATHER, rt, 2, ops);
	ir_op_set_int(fe->ctx, r->def, "axis", a);
	return t_(fe, r);
}

static FeVal *bi_histogram(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input");
	if (!x)
		return NULL;
	int64_t bins;
	if (!const_int(fe, node, c, c->a[1], "num_bins", &bins))
		return NULL;
	const IrType *rt = fe_block(fe, node, T(fe, TY_I32), 1, &bins);
	if (!rt)
		return NULL;
	IrValue *ops[2] = {x, NULL};
	int n = 1;
	if (given(c->a[2])) {
		ops[1] = mask_arg(fe, node, c, c->a[2], &x);
		ops[0] = x;
		if (!ops[1])
			return NULL;
		n = 2;
	}
	return t_(fe, ir_build1(&fe->b, OP_HISTOGRAM, rt, n, ops));
}

/* ---- hints and debugging ------------------------------------------------------ */

static FeVal *bi_hint(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input");
	if (!x)
		return NULL;
	int n;
	int64_t vals[IR_MAX_RANK];
	if (!fe_shape(fe, node, c->a[1], &n, vals))
		return NULL;
	int rank = rank_of(x->type) ? rank_of(x->type) : 1;
	if (n == 1 && rank > 1)
		for (n = 1; n < rank; n++)
			vals[n] = vals[0];
	if (n != rank)
		return fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): %d values given for a tensor of rank %d", c->name, n, rank);
	IrOpcode opc = strcmp(c->name, "multiple_of") == 0 ? OP_MULTIPLE_OF
		       : strcmp(c->name, "max_contiguous") == 0 ? OP_MAX_CONTIGUOUS
							       : OP_MAX_CONSTANCY;
	IrValue *r = ir_build1(&fe->b, opc, x->type, 1, &x);
	ir_op_set_ints(fe->ctx, r->def, "values", n, vals);
	/* Triton records the hint on x itself, so a call whose result is
	 * dropped (`tl.multiple_of(ptrs, [16, 16])` as a statement, tutorial
	 * 08) still tells the compiler: every name bound to x now holds the
	 * hinted value */
	FeScope *sc = &fe->fn->scope;
	FeVal *hinted = t_(fe, r);
	for (int i = 0; i < sc->n; i++)
		if (sc->vars[i].val && fe_is_tensor(sc->vars[i].val) && sc->vars[i].val->v == x)
			sc->vars[i].val = hinted;
	return hinted;
}

static FeVal *bi_assume(Fe *fe, PyObject *node, Call *c)
{
	FeVal *v = c->a[0];
	if (fe_is_const(v)) {
		if (PyObject_IsTrue(v->obj) != 1)
			return fe_err(fe, node, IR_ERR_VALUE, "tl.assume() of a false constant");
		return fe_none(fe);
	}
	if (!fe_is_tensor(v) || ir_scalar(v->v->type)->kind != TY_I1)
		return fe_err(fe, node, IR_ERR_TYPE, "tl.assume() expects a boolean condition");
	IrValue *x = v->v;
	ir_build(&fe->b, OP_ASSUME, 1, &x, 0, NULL, 0);
	return fe_none(fe);
}

static FeVal *bi_barrier(Fe *fe, PyObject *node, Call *c)
{
	ir_build(&fe->b, OP_BARRIER, 0, NULL, 0, NULL, 0);
	return fe_none(fe);
}

/* tl.extra.cuda.gdc_wait() / gdc_launch_dependents(): a griddepcontrol op
 * (the backend decides what it becomes on its target). */
static FeVal *bi_gdc(Fe *fe, PyObject *node, Call *c)
{
	IrOp *op = ir_build(&fe->b, OP_GDC, 0, NULL, 0, NULL, 0);
	ir_op_set_str(fe->ctx, op, "kind", strcmp(c->name, "gdc_wait") == 0 ? "wait" : "launch_dependents");
	return fe_none(fe);
}

static FeVal *emit_print(Fe *fe, PyObject *node, Call *c, const char *prefix, int n, FeVal **vs, bool hex)
{
	IrValue **ops = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)(n + 1));
	for (int i = 0; i < n; i++)
		if (!(ops[i] = fe_to_ir(fe, node, vs[i], NULL)))
			return NULL;
	IrOp *op = ir_build(&fe->b, OP_PRINT, n, ops, 0, NULL, 0);
	ir_op_set_str(fe->ctx, op, "prefix", prefix);
	if (hex)
		ir_op_set_bool(fe->ctx, op, "hex", true);
	return fe_none(fe);
}

static FeVal *bi_device_print(Fe *fe, PyObject *node, Call *c)
{
	const char *prefix = const_str(fe, node, c, c->a[0], "prefix");
	int hex = const_bool(fe, node, c, c->a[1], "hex", false);
	if (!prefix || hex < 0)
		return NULL;
	return emit_print(fe, node, c, prefix, c->nvar, c->var, hex);
}

static bool static_print_values(Fe *fe, PyObject *node, int n, FeVal **vs)
{
	PyObject *pr = PyDict_GetItemString(PyModule_GetDict(fe->builtins), "print");
	PyObject *tup = fe_keep(fe, PyTuple_New(n));
	for (int i = 0; i < n; i++) {
		PyObject *o;
		if (fe_is_const(vs[i]))
			o = vs[i]->obj;
		else if (fe_is_tensor(vs[i]))
			o = fe_keep(fe, PyUnicode_FromString(ir_fmt(fe->ctx, "<tensor %s>", fe_tyname(fe, vs[i]->v->type))));
		else
			o = fe_keep(fe, PyUnicode_FromString("<tuple>"));
		Py_INCREF(o);
		PyTuple_SetItem(tup, i, o);
	}
	PyObject *r = PyObject_Call(pr, tup, NULL);
	if (!r) {
		fe_pyerr(fe, node, "print()");
		return false;
	}
	Py_DECREF(r);
	return true;
}

static FeVal *bi_static_print(Fe *fe, PyObject *node, Call *c)
{
	return static_print_values(fe, node, c->nvar, c->var) ? fe_none(fe) : NULL;
}

static FeVal *bi_pyprint(Fe *fe, PyObject *node, Call *c)
{
	bool all_const = true;
	for (int i = 0; i < c->nvar; i++)
		all_const = all_const && fe_is_const(c->var[i]);
	if (all_const)
		return bi_static_print(fe, node, c);
	const char *prefix = "";
	int first = 0;
	if (c->nvar && fe_is_const(c->var[0]) && PyUnicode_Check(c->var[0]->obj)) {
		prefix = PyUnicode_AsUTF8AndSize(c->var[0]->obj, NULL);
		first = 1;
	}
	return emit_print(fe, node, c, prefix, c->nvar - first, c->var + first, false);
}

static FeVal *bi_static_assert(Fe *fe, PyObject *node, Call *c)
{
	if (!fe_is_const(c->a[0]))
		return fe_err(fe, node, IR_ERR_VALUE, "tl.static_assert() needs a constexpr condition");
	int t = PyObject_IsTrue(c->a[0]->obj);
	if (t < 0)
		return fe_pyerr(fe, node, "bool()");
	if (!t) {
		const char *msg = given(c->a[1]) ? fe_str(fe, c->a[1]->obj) : "";
		return fe_err(fe, node, IR_ERR_VALUE, "static_assert failed%s%s", *msg ? ": " : "", msg);
	}
	return fe_none(fe);
}

static FeVal *bi_device_assert(Fe *fe, PyObject *node, Call *c)
{
	if (!fe->debug)
		return fe_none(fe);
	const char *msg = given(c->a[1]) ? fe_str(fe, c->a[1]->obj) : "";
	if (fe_is_const(c->a[0])) {
		if (PyObject_IsTrue(c->a[0]->obj) != 1)
			return fe_err(fe, node, IR_ERR_VALUE, "assertion failed%s%s", *msg ? ": " : "", msg);
		return fe_none(fe);
	}
	IrValue *cond = tensor_arg(fe, node, c, 0, "cond");
	if (!cond)
		return NULL;
	cond = fe_to_bool(fe, node, cond);
	if (given(c->a[2])) {
		IrValue *m = mask_arg(fe, node, c, c->a[2], &cond);
		if (!m)
			return NULL;
		IrValue *notm = ir_binary(&fe->b, OP_XOR, m, ir_const_int(&fe->b, m->type, 1));
		cond = ir_binary(&fe->b, OP_OR, cond, notm);
	}
	IrOp *op = ir_build(&fe->b, OP_ASSERT, 1, &cond, 0, NULL, 0);
	ir_op_set_str(fe->ctx, op, "msg", msg);
	return fe_none(fe);
}

/* ---- reductions and scans ---------------------------------------------------- */

typedef enum Comb { C_ADD, C_MUL, C_MAX, C_MIN, C_XOR, C_OR, C_ARGMAX, C_ARGMIN, C_FIRST, C_USER } Comb;

typedef struct Combiner {
	Comb kind;
	bool tie_left;
	PyObject *fn; /* C_USER: the @jit combine function */
} Combiner;

static bool combine_body(Fe *fe, PyObject *node, IrBlock *blk, int n, const IrType **elems, Combiner *cb)
{
	IrBuilder saved = fe->b;
	ir_builder_at_end(&fe->b, blk);
	fe->b.loc = saved.loc;
	IrValue **a = blk->args, *res[8];
	switch (cb->kind) {
	case C_ADD: /* Triton's sum and cumsum combine with a + b: checked */
		fe_overflow_check(fe, OP_ADD, a[0], a[1]);
		res[0] = ir_binary(&fe->b, OP_ADD, a[0], a[1]);
		break;
	case C_MUL:
		fe_overflow_check(fe, OP_MUL, a[0], a[1]);
		res[0] = ir_binary(&fe->b, OP_MUL, a[0], a[1]);
		break;
	case C_MAX: res[0] = ir_binary(&fe->b, OP_MAX, a[0], a[1]); break;
	case C_MIN: res[0] = ir_binary(&fe->b, OP_MIN, a[0], a[1]); break;
	case C_XOR: res[0] = ir_binary(&fe->b, OP_XOR, a[0], a[1]); break;
	case C_OR: res[0] = ir_binary(&fe->b, OP_OR, a[0], a[1]); break;
	case C_FIRST: res[0] = a[0]; break;
	case C_ARGMAX:
	case C_ARGMIN: {
		/* args: value1, index1, value2, index2 */
		IrValue *v1 = a[0], *i1 = a[1], *v2 = a[2], *i2 = a[3];
		IrValue *better = ir_cmp(&fe->b, cb->kind == C_ARGMAX ? "gt" : "lt", v1, v2);
		if (cb->tie_left) {
			IrValue *eq = ir_cmp(&fe->b, "eq", v1, v2);
			IrValue *lt = ir_cmp(&fe->b, "lt", i1, i2);
			better = ir_binary(&fe->b, OP_OR, better, ir_binary(&fe->b, OP_AND, eq, lt));
		}
		res[0] = ir_select(&fe->b, better, v1, v2);
		res[1] = ir_select(&fe->b, better, i1, i2);
		break;
	}
	case C_USER: {
		FeVal **args = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(2 * n));
		for (int i = 0; i < 2 * n; i++)
			args[i] = fe_tensor(fe, a[i]);
		FeVal *r = fe_call_jit_values(fe, node, cb->fn, 2 * n, args);
		if (!r) {
			fe->b = saved;
			return false;
		}
		int m = r->kind == V_TUPLE ? r->n : 1;
		if (m != n) {
			fe->b = saved;
			return fe_err(fe, node, IR_ERR_TYPE, "the combine function returned %d values, expected %d", m, n);
		}
		for (int i = 0; i < n; i++) {
			FeVal *x = r->kind == V_TUPLE ? r->items[i] : r;
			res[i] = fe_to_ir(fe, node, x, elems[i]);
			if (!res[i] || res[i]->type != elems[i]) {
				fe->b = saved;
				return fe_err(fe, node, IR_ERR_TYPE, "the combine function must return scalars of type %s",
					      fe_tyname(fe, elems[i]));
			}
		}
		break;
	}
	}
	ir_yield(&fe->b, n, res);
	fe->b = saved;
	return true;
}

/* reduce (or scan) of n inputs of equal shape along axis */
static IrOp *emit_reduce(Fe *fe, PyObject *node, int n, IrValue **ins, int axis, Combiner *cb, bool scan,
			 bool reverse)
{
	const IrType *t = ins[0]->type;
	const IrType *elems[8], *rts[8] = {0};
	int64_t shape[IR_MAX_RANK];
	int rank = 0;
	for (int i = 0; i < t->rank; i++)
		if (i != axis || scan)
			shape[rank++] = t->shape[i];
	for (int i = 0; i < n; i++) {
		elems[i] = ir_scalar(ins[i]->type);
		rts[i] = scan ? ins[i]->type : rank ? fe_block(fe, node, elems[i], rank, shape) : elems[i];
	}
	IrOp *op = ir_build(&fe->b, scan ? OP_SCAN : OP_REDUCE, n, ins, n, rts, 1);
	ir_op_set_int(fe->ctx, op, "axis", axis);
	if (scan)
		ir_op_set_bool(fe->ctx, op, "reverse", reverse);
	IrBlock *blk = op->regions[0];
	for (int j = 0; j < 2; j++)
		for (int i = 0; i < n; i++)
			ir_block_add_arg(fe->ctx, blk, elems[i]);
	if (!combine_body(fe, node, blk, n, elems, cb))
		return NULL;
	return op;
}

/* Handles axis=None (flatten) and keep_dims around a reduction. */
static FeVal *reduction(Fe *fe, PyObject *node, Call *c, IrValue *x, FeVal *axisv, bool keep, Combiner *cb,
			bool with_index, int out_index)
{
	if (!ir_is_block(x->type))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.%s() needs a block, got the scalar %s", c->name,
			      fe_tyname(fe, x->type));
	int orig_rank = x->type->rank;
	int axis;
	if (!given(axisv)) {
		int64_t n = x->type->numel;
		if (orig_rank != 1)
			x = reshape_to(fe, node, x, 1, &n, true);
		if (!x)
			return NULL;
		axis = 0;
	} else {
		int64_t a;
		if (!const_int(fe, node, c, axisv, "axis", &a))
			return NULL;
		axis = norm_axis(fe, node, c, a, orig_rank);
		if (axis < 0)
			return NULL;
	}
	IrValue *ins[2] = {x, NULL};
	int n = 1;
	if (with_index) {
		const IrType *t = x->type;
		IrValue *idx = ir_make_range(&fe->b, 0, t->shape[axis]);
		for (int d = 0; d < t->rank; d++)
			if (d != axis)
				idx = ir_expand_dims(&fe->b, idx, d);
		idx = fe_broadcast_to(fe, node, idx, t->rank, t->shape);
		if (!idx)
			return NULL;
		ins[1] = idx;
		n = 2;
	}
	IrOp *op = emit_reduce(fe, node, n, ins, axis, cb, false, false);
	if (!op)
		return NULL;
	FeVal *outs[2];
	for (int i = 0; i < n; i++) {
		IrValue *r = &op->res[i];
		if (keep) {
			if (!given(axisv)) {
				int64_t ones[IR_MAX_RANK];
				for (int d = 0; d < orig_rank; d++)
					ones[d] = 1;
				r = reshape_to(fe, node, ir_is_block(r->type) ? r : ir_splat(&fe->b, r, fe_block(fe, node, r->type, 1, ones)), orig_rank, ones, false);
			} else if (!ir_is_block(r->type)) {
				int64_t one = 1;
				r = ir_splat(&fe->b, r, fe_block(fe, node, r->type, 1, &one));
			} else
				r = ir_expand_dims(&fe->b, r, axis);
			if (!r)
				return NULL;
		}
		outs[i] = t_(fe, r);
	}
	if (out_index >= 0)
		return outs[out_index];
	return n == 1 ? outs[0] : fe_make_tuple(fe, 2, outs);
}

/* item(input): the element of a one-element block, as a scalar (a
 * reduction whose combiner keeps its first operand). */
static FeVal *bi_item(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input");
	if (!x)
		return NULL;
	if (!ir_is_block(x->type))
		return t_(fe, x);
	if (x->type->numel != 1)
		return fe_err(fe, node, IR_ERR_VALUE, "tl.item(): the block %s has %lld elements, not 1",
			      fe_tyname(fe, x->type), (long long)x->type->numel);
	Combiner cb = {C_FIRST, false, NULL};
	return reduction(fe, node, c, x, NULL, false, &cb, false, -1);
}

/* sum(input, axis, keep_dims, dtype) */
static FeVal *bi_sum(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input");
	if (!x)
		return NULL;
	int keep = const_bool(fe, node, c, c->a[2], "keep_dims", false);
	if (keep < 0)
		return NULL;
	const IrType *e = ir_scalar(x->type);
	if (given(c->a[3])) {
		const IrType *d = dtype_arg(fe, node, c, c->a[3], "dtype");
		if (!d)
			return NULL;
		x = fe_cast(fe, node, x, d, NULL, false);
	} else if (ir_is_int(e) && ir_type_bits(e) < 32)
		x = fe_cast(fe, node, x, T(fe, ir_is_signed(e) ? TY_I32 : TY_U32), NULL, false);
	if (!x)
		return NULL;
	Combiner cb = {C_ADD, false, NULL};
	return reduction(fe, node, c, x, c->a[1], keep, &cb, false, -1);
}

/* max/min(input, axis, return_indices, return_indices_tie_break_left, keep_dims) */
static FeVal *bi_max(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input");
	if (!x)
		return NULL;
	bool is_max = strcmp(c->name, "max") == 0;
	int ri = const_bool(fe, node, c, c->a[2], "return_indices", false);
	int tie = const_bool(fe, node, c, c->a[3], "return_indices_tie_break_left", true);
	int keep = const_bool(fe, node, c, c->a[4], "keep_dims", false);
	if (ri < 0 || tie < 0 || keep < 0)
		return NULL;
	if (ri) {
		Combiner cb = {is_max ? C_ARGMAX : C_ARGMIN, tie, NULL};
		return reduction(fe, node, c, x, c->a[1], keep, &cb, true, -1);
	}
	Combiner cb = {is_max ? C_MAX : C_MIN, false, NULL};
	return reduction(fe, node, c, x, c->a[1], keep, &cb, false, -1);
}

/* argmax/argmin(input, axis, tie_break_left, keep_dims) */
static FeVal *bi_argmax(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input");
	if (!x)
		return NULL;
	int tie = const_bool(fe, node, c, c->a[2], "tie_break_left", true);
	int keep = const_bool(fe, node, c, c->a[3], "keep_dims", false);
	if (tie < 0 || keep < 0)
		return NULL;
	Combiner cb = {strcmp(c->name, "argmax") == 0 ? C_ARGMAX : C_ARGMIN, tie, NULL};
	return reduction(fe, node, c, x, c->a[1], keep, &cb, true, 1);
}

/* xor_sum/reduce_or(input, axis, keep_dims) */
static FeVal *bi_bitreduce(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input");
	if (!x)
		return NULL;
	if (!ir_is_int(ir_scalar(x->type)))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.%s() needs integers, got %s", c->name, fe_tyname(fe, x->type));
	int keep = const_bool(fe, node, c, c->a[2], "keep_dims", false);
	if (keep < 0)
		return NULL;
	Combiner cb = {strcmp(c->name, "xor_sum") == 0 ? C_XOR : C_OR, false, NULL};
	return reduction(fe, node, c, x, c->a[1], keep, &cb, false, -1);
}

static int tensor_list(Fe *fe, PyObject *node, Call *c, FeVal *v, IrValue **out)
{
	if (v && v->kind == V_TUPLE) {
		if (v->n > 4) {
			fe_err(fe, node, IR_ERR_VALUE, "tl.%s(): at most 4 inputs", c->name);
			return -1;
		}
		for (int i = 0; i < v->n; i++)
			if (!(out[i] = fe_to_ir(fe, node, v->items[i], NULL)))
				return -1;
		return v->n;
	}
	if (!(out[0] = fe_to_ir(fe, node, v, NULL)))
		return -1;
	return 1;
}

/* reduce(input, axis, combine_fn, keep_dims) */
static FeVal *bi_reduce(Fe *fe, PyObject *node, Call *c)
{
	IrValue *ins[4];
	int n = tensor_list(fe, node, c, c->a[0], ins);
	if (n < 0)
		return NULL;
	if (!fe_is_const(c->a[2]) || !fe_is_jit(fe, c->a[2]->obj))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.%s(): combine_fn must be a @jit function", c->name);
	int keep = const_bool(fe, node, c, c->a[3], "keep_dims", false);
	if (keep < 0)
		return NULL;
	Combiner cb = {C_USER, false, c->a[2]->obj};
	if (n == 1) {
		FeVal *r = reduction(fe, node, c, ins[0], c->a[1], keep, &cb, false, -1);
		/* a tuple of one input gives a tuple of one result */
		return r && c->a[0]->kind == V_TUPLE ? fe_make_tuple(fe, 1, &r) : r;
	}
	if (!ir_is_block(ins[0]->type))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.reduce() needs blocks");
	int64_t a;
	if (!const_int(fe, node, c, c->a[1], "axis", &a))
		return NULL;
	int axis = norm_axis(fe, node, c, a, ins[0]->type->rank);
	if (axis < 0)
		return NULL;
	IrOp *op = emit_reduce(fe, node, n, ins, axis, &cb, false, false);
	if (!op)
		return NULL;
	FeVal *outs[4];
	for (int i = 0; i < n; i++) {
		IrValue *r = &op->res[i];
		if (keep)
			r = ir_is_block(r->type) ? ir_expand_dims(&fe->b, r, axis)
						 : ir_splat(&fe->b, r, fe_block(fe, node, r->type, 1, (int64_t[]){1}));
		outs[i] = t_(fe, r);
	}
	return fe_make_tuple(fe, n, outs);
}

static FeVal *scan_common(Fe *fe, PyObject *node, Call *c, int n, IrValue **ins, FeVal *axisv, FeVal *revv,
			  Combiner *cb)
{
	if (!ir_is_block(ins[0]->type))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.%s() needs a block", c->name);
	int64_t a = 0;
	if (given(axisv) && !const_int(fe, node, c, axisv, "axis", &a))
		return NULL;
	int axis = norm_axis(fe, node, c, a, ins[0]->type->rank);
	int rev = const_bool(fe, node, c, revv, "reverse", false);
	if (axis < 0 || rev < 0)
		return NULL;
	IrOp *op = emit_reduce(fe, node, n, ins, axis, cb, true, rev);
	if (!op)
		return NULL;
	if (n == 1)
		return t_(fe, &op->res[0]);
	FeVal *outs[4];
	for (int i = 0; i < n; i++)
		outs[i] = t_(fe, &op->res[i]);
	return fe_make_tuple(fe, n, outs);
}

/* associative_scan(input, axis, combine_fn, reverse) */
static FeVal *bi_scan(Fe *fe, PyObject *node, Call *c)
{
	IrValue *ins[4];
	int n = tensor_list(fe, node, c, c->a[0], ins);
	if (n < 0)
		return NULL;
	if (!fe_is_const(c->a[2]) || !fe_is_jit(fe, c->a[2]->obj))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.associative_scan(): combine_fn must be a @jit function");
	Combiner cb = {C_USER, false, c->a[2]->obj};
	FeVal *r = scan_common(fe, node, c, n, ins, c->a[1], c->a[3], &cb);
	return r && n == 1 && c->a[0]->kind == V_TUPLE ? fe_make_tuple(fe, 1, &r) : r;
}

/* cumsum/cumprod(input, axis, reverse, dtype) */
static FeVal *bi_cumsum(Fe *fe, PyObject *node, Call *c)
{
	IrValue *x = tensor_arg(fe, node, c, 0, "input");
	if (!x)
		return NULL;
	const IrType *e = ir_scalar(x->type);
	if (given(c->a[3])) {
		const IrType *d = dtype_arg(fe, node, c, c->a[3], "dtype");
		if (!d)
			return NULL;
		x = fe_cast(fe, node, x, d, NULL, false);
	} else if (ir_is_int(e) && ir_type_bits(e) < 32)
		x = fe_cast(fe, node, x, T(fe, ir_is_signed(e) ? TY_I32 : TY_U32), NULL, false);
	else if (e->kind == TY_BF16) /* as Triton: bf16 scans run (and return) in fp32 */
		x = fe_cast(fe, node, x, T(fe, TY_F32), NULL, false);
	Combiner cb = {strcmp(c->name, "cumsum") == 0 ? C_ADD : C_MUL, false, NULL};
	return scan_common(fe, node, c, 1, &x, c->a[1], c->a[2], &cb);
}

/* ---- dot ---------------------------------------------------------------------- */

/* dot(input, other, acc, input_precision, allow_tf32, max_num_imprecise_acc, out_dtype) */
static FeVal *bi_dot(Fe *fe, PyObject *node, Call *c);

/* tl.dot of rank >= 4: the batch dims folded into one (a 3-D dot), the
 * result shaped back, as Triton does. */
static FeVal *dot_batched(Fe *fe, PyObject *node, Call *c, IrValue *a, IrValue *b)
{
	const IrType *at = a->type, *bt = b->type;
	int r = at->rank;
	int64_t batch = 1;
	for (int i = 0; i < r - 2; i++) {
		if (at->shape[i] != bt->shape[i])
			return fe_err(fe, node, IR_ERR_TYPE, "tl.dot(): %s and %s have different batch shapes",
				      fe_tyname(fe, at), fe_tyname(fe, bt));
		batch *= at->shape[i];
	}
	int64_t s3[3] = {batch, at->shape[r - 2], at->shape[r - 1]};
	FeVal *args[7]; /* tl.dot's parameters (the table below) */
	for (int i = 0; i < 7; i++)
		args[i] = c->a[i];
	Call c3 = *c;
	c3.a = args;
	IrValue *a3 = reshape_to(fe, node, a, 3, s3, false);
	s3[1] = bt->shape[r - 2];
	s3[2] = bt->shape[r - 1];
	IrValue *b3 = a3 ? reshape_to(fe, node, b, 3, s3, false) : NULL;
	if (!b3)
		return NULL;
	args[0] = fe_tensor(fe, a3);
	args[1] = fe_tensor(fe, b3);
	if (given(c->a[2])) {
		IrValue *acc = tensor_arg(fe, node, c, 2, "acc");
		if (!acc)
			return NULL;
		const IrType *ct = acc->type;
		if (!ir_is_block(ct) || ct->rank != r)
			return fe_err(fe, node, IR_ERR_TYPE, "tl.dot(): acc has type %s, expected a rank-%d block",
				      fe_tyname(fe, ct), r);
		s3[1] = ct->shape[r - 2];
		s3[2] = ct->shape[r - 1];
		IrValue *acc3 = reshape_to(fe, node, acc, 3, s3, false);
		if (!acc3)
			return NULL;
		args[2] = fe_tensor(fe, acc3);
	}
	FeVal *res = bi_dot(fe, node, &c3);
	if (!res)
		return NULL;
	int64_t shape[IR_MAX_RANK];
	for (int i = 0; i < r - 2; i++)
		shape[i] = at->shape[i];
	shape[r - 2] = at->shape[r - 2];
	shape[r - 1] = bt->shape[r - 1];
	IrValue *out = reshape_to(fe, node, res->v, r, shape, false);
	return out ? t_(fe, out) : NULL;
}

static FeVal *bi_dot(Fe *fe, PyObject *node, Call *c)
{
	IrValue *a = tensor_arg(fe, node, c, 0, "input"), *b = a ? tensor_arg(fe, node, c, 1, "other") : NULL;
	if (!b)
		return NULL;
	const IrType *at = a->type, *bt = b->type;
	if (ir_is_block(at) && ir_is_block(bt) && at->rank == bt->rank && at->rank >= 4)
		return dot_batched(fe, node, c, a, b);
	if (!ir_is_block(at) || !ir_is_block(bt) || at->rank != bt->rank || at->rank < 2 || at->rank > 3)
		return fe_err(fe, node, IR_ERR_TYPE, "tl.dot(): operands must be blocks of one rank >= 2, got %s and %s",
			      fe_tyname(fe, at), fe_tyname(fe, bt));
	int r = at->rank;
	int64_t M = at->shape[r - 2], K = at->shape[r - 1], K2 = bt->shape[r - 2], N = bt->shape[r - 1];
	if (K != K2 || (r == 3 && at->shape[0] != bt->shape[0]))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.dot(): shapes %s and %s do not match (inner dimensions %lld vs %lld)",
			      fe_tyname(fe, at), fe_tyname(fe, bt), (long long)K, (long long)K2);
	const IrType *ae = at->elem, *be = bt->elem;
	/* as Triton on NVIDIA GPUs: any M and N (small ones padded to the
	 * instruction or on FMAs), K a whole MMA step: 16, or 32 for 8-bit types */
	int64_t kmin = ir_type_bits(ae) == 8 ? 32 : 16;
	if (K < kmin)
		return fe_err(fe, node, IR_ERR_VALUE,
			      "tl.dot(): K must be at least %lld for %s operands (M >= 1, N >= 1), got M=%lld N=%lld K=%lld",
			      (long long)kmin, fe_tyname(fe, ae), (long long)M, (long long)N, (long long)K);
	if (ae != be && !(ir_type_bits(ae) == 8 && ir_type_bits(be) == 8 && ir_is_float(ae) && ir_is_float(be)))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.dot(): both operands must have the same element type, got %s and %s",
			      fe_tyname(fe, ae), fe_tyname(fe, be));
	const IrType *out = T(fe, TY_F32);
	if (given(c->a[6])) {
		out = dtype_arg(fe, node, c, c->a[6], "out_dtype");
		if (!out)
			return NULL;
	}
	if (ir_is_int(ae))
		out = T(fe, TY_I32);
	int64_t shape[3];
	if (r == 3)
		shape[0] = at->shape[0];
	shape[r - 2] = M;
	shape[r - 1] = N;
	IrValue *acc;
	if (given(c->a[2])) {
		acc = tensor_arg(fe, node, c, 2, "acc");
		if (!acc)
			return NULL;
		if (!ir_is_block(acc->type) || acc->type->rank != r || acc->type->shape[r - 2] != M ||
		    acc->type->shape[r - 1] != N)
			return fe_err(fe, node, IR_ERR_TYPE, "tl.dot(): acc has type %s, expected a %lldx%lld block",
				      fe_tyname(fe, acc->type), (long long)M, (long long)N);
	} else {
		const IrType *rt = fe_block(fe, node, out, r, shape);
		if (!rt)
			return NULL;
		acc = ir_is_float(out) ? ir_const_float(&fe->b, rt, 0.0) : ir_const_int(&fe->b, rt, 0);
	}
	const char *prec = const_str(fe, node, c, c->a[3], "input_precision");
	if (!prec)
		return NULL;
	if (!*prec) {
		int tf32 = const_bool(fe, node, c, c->a[4], "allow_tf32", true);
		if (tf32 < 0)
			return NULL;
		prec = tf32 ? "tf32" : "ieee";
	}
	if (strcmp(prec, "tf32") && strcmp(prec, "tf32x3") && strcmp(prec, "ieee") && strcmp(prec, "bf16x3") &&
	    strcmp(prec, "bf16x6"))
		return fe_err(fe, node, IR_ERR_VALUE, "tl.dot(): unknown input_precision '%s'", prec);
	IrValue *ops[3] = {a, b, acc};
	IrValue *res = ir_build1(&fe->b, OP_DOT, acc->type, 3, ops);
	ir_op_set_str(fe->ctx, res->def, "input_precision", prec);
	if (given(c->a[5])) {
		int64_t m;
		if (!const_int(fe, node, c, c->a[5], "max_num_imprecise_acc", &m))
			return NULL;
		ir_op_set_int(fe->ctx, res->def, "max_num_imprecise_acc", m);
	}
	return t_(fe, res);
}

/* dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc,
 * fast_math, lhs_k_pack, rhs_k_pack, out_dtype): fe_scaled.c */
static FeVal *bi_dot_scaled(Fe *fe, PyObject *node, Call *c)
{
	return fe_dot_scaled(fe, node, c->a);
}

/* ---- table ----------------------------------------------------------------- */

static const struct Builtin {
	const char *name;
	const char *params; /* "a, b=, *rest" */
	BuiltinFn fn;
	bool method; /* also a tensor method */
} builtins[] = {
	{"program_id", "axis", bi_program_id, false},
	{"num_programs", "axis", bi_program_id, false},
	{"arange", "start, end=", bi_arange, false},
	{"full", "shape, value, dtype", bi_full, false},
	{"zeros", "shape, dtype=", bi_zeros, false},
	{"zeros_like", "input", bi_zeros_like, false},
	{"cast", "input, dtype, fp_downcast_rounding=, bitcast=", bi_cast, true},
	{"to", "input, dtype, fp_downcast_rounding=, bitcast=", bi_cast, true},
	{"to_tensor", "x", bi_to_tensor, false},
	{"load", "pointer, mask=, other=, boundary_check=, padding_option=, cache_modifier=, eviction_policy=, volatile=",
	 bi_load, false},
	{"store", "pointer, value, mask=, boundary_check=, cache_modifier=, eviction_policy=", bi_store, true},
	{"atomic_add", "pointer, val, mask=, sem=, scope=", bi_atomic, true},
	{"atomic_max", "pointer, val, mask=, sem=, scope=", bi_atomic, true},
	{"atomic_min", "pointer, val, mask=, sem=, scope=", bi_atomic, true},
	{"atomic_and", "pointer, val, mask=, sem=, scope=", bi_atomic, true},
	{"atomic_or", "pointer, val, mask=, sem=, scope=", bi_atomic, true},
	{"atomic_xor", "pointer, val, mask=, sem=, scope=", bi_atomic, true},
	{"atomic_xchg", "pointer, val, mask=, sem=, scope=", bi_atomic, true},
	{"atomic_cas", "pointer, cmp, val, sem=, scope=", bi_atomic_cas, true},
	{"where", "condition, x, y", bi_where, false},
	{"minimum", "x, y, propagate_nan=", bi_minmax, false},
	{"maximum", "x, y, propagate_nan=", bi_minmax, false},
	{"clamp", "x, min, max, propagate_nan=", bi_clamp, false},
	{"exp", "x", bi_math1, true},
	{"exp2", "x", bi_math1, true},
	{"log", "x", bi_math1, true},
	{"log2", "x", bi_math1, true},
	{"sqrt", "x", bi_math1, true},
	{"sqrt_rn", "x", bi_math1, true},
	{"rsqrt", "x", bi_math1, true},
	{"sin", "x", bi_math1, true},
	{"cos", "x", bi_math1, true},
	{"erf", "x", bi_math1, true},
	{"floor", "x", bi_math1, true},
	{"ceil", "x", bi_math1, true},
	{"abs", "x", bi_math1, true},
	{"fdiv", "x, y, ieee_rounding=", bi_div, false},
	{"div_rn", "x, y", bi_div, false},
	{"fma", "x, y, z", bi_fma, false},
	{"umulhi", "x, y", bi_umulhi, false},
	{"add", "x, y, sanitize_overflow=", bi_arith, false},
	{"sub", "x, y, sanitize_overflow=", bi_arith, false},
	{"mul", "x, y, sanitize_overflow=", bi_arith, false},
	{"extern", "*args", bi_extern, false},
	{"inline_asm_elementwise", "asm, constraints, args, dtype, is_pure, pack", bi_inline_asm, false},
	{"map_elementwise", "scalar_fn, *args, pack=", bi_map_elementwise, false},
	{"sum", "input, axis=, keep_dims=, dtype=", bi_sum, true},
	{"max", "input, axis=, return_indices=, return_indices_tie_break_left=, keep_dims=", bi_max, true},
	{"min", "input, axis=, return_indices=, return_indices_tie_break_left=, keep_dims=", bi_max, true},
	{"argmax", "input, axis, tie_break_left=, keep_dims=", bi_argmax, true},
	{"argmin", "input, axis, tie_break_left=, keep_dims=", bi_argmax, true},
	{"xor_sum", "input, axis=, keep_dims=", bi_bitreduce, true},
	{"reduce_or", "input, axis, keep_dims=", bi_bitreduce, true},
	{"reduce", "input, axis, combine_fn, keep_dims=", bi_reduce, true},
	{"associative_scan", "input, axis, combine_fn, reverse=", bi_scan, true},
	{"cumsum", "input, axis=, reverse=, dtype=", bi_cumsum, true},
	{"cumprod", "input, axis=, reverse=, dtype=", bi_cumsum, true},
	{"dot", "input, other, acc=, input_precision=, allow_tf32=, max_num_imprecise_acc=, out_dtype=", bi_dot, false},
	{"dot_scaled",
	 "lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=, fast_math=, lhs_k_pack=, rhs_k_pack=, out_dtype=",
	 bi_dot_scaled, false},
	{"trans", "input, *dims", bi_trans, true},
	{"permute", "input, *dims", bi_trans, true},
	{"reshape", "input, *shape, can_reorder=", bi_reshape, true},
	{"view", "input, *shape", bi_reshape, true},
	{"ravel", "x, can_reorder=", bi_ravel, true},
	{"expand_dims", "input, axis", bi_expand_dims, true},
	{"unsqueeze", "input, dim", bi_expand_dims, true},
	{"squeeze", "input, dim", bi_squeeze, true},
	{"item", "input", bi_item, true},
	{"broadcast_to", "input, *shape", bi_broadcast_to, true},
	{"broadcast", "input, other", bi_broadcast, false},
	{"cat", "input, other, can_reorder=, dim=", bi_cat, false},
	{"join", "a, b", bi_join, false},
	{"split", "a", bi_split, true},
	{"gather", "src, index, axis", bi_gather, true},
	{"histogram", "input, num_bins, mask=", bi_histogram, true},
	{"multiple_of", "input, values", bi_hint, false},
	{"max_contiguous", "input, values", bi_hint, false},
	{"max_constancy", "input, values", bi_hint, false},
	{"assume", "cond", bi_assume, false},
	{"debug_barrier", "", bi_barrier, false},
	{"gdc_wait", "", bi_gdc, false},
	{"num_threads", "", bi_num_threads, false},
	{"num_warps", "", bi_num_threads, false},
	{"gdc_launch_dependents", "", bi_gdc, false},
	{"device_print", "prefix, *args, hex=", bi_device_print, false},
	{"device_assert", "cond, msg=, mask=", bi_device_assert, false},
	{"static_assert", "cond, msg=", bi_static_assert, false},
	{"static_print", "*values", bi_static_print, false},
	{"__print__", "*values", bi_pyprint, false},
};

bool fe_builtin_row(int i, const char **name, const char **params, bool *method)
{
	if (i < 0 || (size_t)i >= sizeof builtins / sizeof builtins[0])
		return false;
	*name = builtins[i].name;
	*params = builtins[i].params;
	*method = builtins[i].method;
	return true;
}

bool fe_is_tensor_method(const char *name)
{
	for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
		if (builtins[i].method && strcmp(builtins[i].name, name) == 0)
			return true;
	/* standard-library functions usable as methods */
	static const char *lib[] = {"sigmoid", "softmax", "cdiv", "flip", "sort", "topk", NULL};
	for (int i = 0; lib[i]; i++)
		if (strcmp(lib[i], name) == 0)
			return true;
	return false;
}

/* A parameter of a builtin's signature; slot: its index in Call.a, where a
 * *param has none (its values go to Call.var), so the parameters after it
 * follow the ones before. */
typedef struct Param {
	char name[48];
	bool optional, star;
	int slot;
} Param;

static int parse_params(const char *spec, Param *ps)
{
	int n = 0, slot = 0;
	const char *s = spec;
	while (*s) {
		while (*s == ' ' || *s == ',')
			s++;
		if (!*s)
			break;
		Param *p = &ps[n++];
		memset(p, 0, sizeof *p);
		if (*s == '*') {
			p->star = true;
			s++;
		} else {
			p->slot = slot++;
		}
		int k = 0;
		while (*s && *s != ',' && *s != '=' && k < 47)
			p->name[k++] = *s++;
		if (*s == '=') {
			p->optional = true;
			s++;
		}
	}
	return n;
}

FeVal *fe_builtin_call(Fe *fe, PyObject *node, const char *name, FeVal *self, int nargs, FeVal **args,
		       int nkw, const char **kwnames, FeVal **kwvals)
{
	bool handled;
	FeVal *bp = fe_blockptr_call(fe, node, name, self, nargs, args, nkw, kwnames, kwvals, &handled);
	if (handled)
		return bp;
	FeVal *td = fe_tdesc_call(fe, node, name, self, nargs, args, nkw, kwnames, kwvals, &handled);
	if (handled)
		return td;
	const struct Builtin *bi = NULL;
	const char *key = strncmp(name, "extern:", 7) == 0 ? "extern" : name;
	for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
		if (strcmp(builtins[i].name, key) == 0)
			bi = &builtins[i];
	if (!bi) {
		/* a standard-library @jit function called as a method, or a stub
		 * without lowering */
		PyObject *f = self ? fe_attr(fe, fe->tl, name) : NULL;
		if (f && fe_is_jit(fe, f)) {
			FeVal **all = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(nargs + 2));
			all[0] = self;
			memcpy(all + 1, args, sizeof(FeVal *) * (size_t)nargs);
			return fe_inline_call(fe, node, f, nargs + 1, all, nkw, kwnames, kwvals);
		}
		return fe_err(fe, node, IR_ERR_VALUE, "tl.%s() is not supported by ctriton", name);
	}
	Param ps[16];
	int np = parse_params(bi->params, ps);
	FeVal **a = ir_alloc(fe->ctx, sizeof(FeVal *) * 17);
	FeVal **var = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(nargs + 2));
	int nvar = 0, pi = 0;
	const char *shown = strcmp(name, "__print__") == 0 ? "print" : name;
	int total = nargs + (self ? 1 : 0);
	for (int i = 0; i < total; i++) {
		FeVal *v = self ? (i == 0 ? self : args[i - 1]) : args[i];
		if (pi < np && ps[pi].star)
			var[nvar++] = v;
		else if (pi < np)
			a[ps[pi++].slot] = v;
		else
			return fe_err(fe, node, IR_ERR_VALUE, "tl.%s() takes %d positional arguments but %d were given",
				      shown, np, total);
	}
	for (int k = 0; k < nkw; k++) {
		int j = -1;
		for (int i = 0; i < np; i++)
			if (!ps[i].star && strcmp(ps[i].name, kwnames[k]) == 0)
				j = i;
		if (j < 0)
			return fe_err(fe, node, IR_ERR_VALUE, "tl.%s() got an unexpected keyword argument '%s'", shown,
				      kwnames[k]);
		if (a[ps[j].slot])
			return fe_err(fe, node, IR_ERR_VALUE, "tl.%s() got multiple values for argument '%s'", shown,
				      kwnames[k]);
		a[ps[j].slot] = kwvals[k];
	}
	for (int i = 0; i < np; i++)
		if (!ps[i].star && !a[ps[i].slot] && !ps[i].optional)
			return fe_err(fe, node, IR_ERR_VALUE, "tl.%s() missing required argument '%s'", shown, ps[i].name);
	Call c = {name, a, nvar, var};
	if (strcmp(name, "to") == 0)
		c.name = "cast";
	if (strncmp(name, "extern:", 7) == 0)
		c.name = name + 7;
	return bi->fn(fe, node, &c);
}
