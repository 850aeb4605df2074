/* fe_expr.c: expressions of @jit functions: names, constants, attributes,
 * subscripts, operators (with Triton's type promotion and broadcasting) and
 * calls.
 *
 * Values that are known at compile time stay Python objects and operators
 * on them are evaluated by Python itself (constexpr folding). As soon as one
 * operand is an IR value, the operator is lowered: operands are promoted to a
 * common element type (Python numbers are "weak": they take the tensor's type
 * when they are of the same or a lower kind, bool < int < float), broadcast
 * numpy-style with explicit expand_dims/broadcast/splat, then one elementwise
 * op is emitted.
 */
#include <math.h>
#include <string.h>

#include "python/frontend/fe.h"

/* ---- values ------------------------------------------------------------- */

FeVal *fe_const(Fe *fe, PyObject *o)
{
	FeVal *v = ir_alloc(fe->ctx, sizeof(FeVal));
	v->kind = V_CONST;
	Py_INCREF(o);
	v->obj = fe_keep(fe, o);
	return v;
}

FeVal *fe_tensor(Fe *fe, IrValue *x)
{
	if (!x)
		return NULL;
	FeVal *v = ir_alloc(fe->ctx, sizeof(FeVal));
	v->kind = V_TENSOR;
	v->v = x;
	return v;
}

FeVal *fe_none(Fe *fe)
{
	return fe_const(fe, Py_None);
}

bool fe_is_const(const FeVal *v)
{
	return v && v->kind == V_CONST;
}

bool fe_is_tensor(const FeVal *v)
{
	return v && v->kind == V_TENSOR;
}

static bool is_number(PyObject *o)
{
	return PyLong_Check(o) || PyFloat_Check(o) || PyBool_Check(o);
}

int fe_truth(Fe *fe, PyObject *node, FeVal *v)
{
	if (!fe_is_const(v)) {
		fe_err(fe, node, IR_ERR_TYPE, "expected a compile-time constant here, got a tensor");
		return -1;
	}
	int r = PyObject_IsTrue(v->obj);
	if (r < 0)
		fe_pyerr(fe, node, "bool()");
	return r;
}

bool fe_const_int(Fe *fe, PyObject *node, FeVal *v, int64_t *out, const char *what)
{
	if (!fe_is_const(v) || !PyLong_Check(v->obj)) {
		fe_err(fe, node, IR_ERR_VALUE, "%s must be a constexpr int", what);
		return false;
	}
	*out = PyLong_AsLongLong(v->obj);
	if (PyErr_Occurred()) {
		fe_pyerr(fe, node, what);
		return false;
	}
	return true;
}

/* ---- types ---------------------------------------------------------------- */

static const IrType *ty(Fe *fe, IrTypeKind k)
{
	return ir_type(fe->ctx, k);
}

/* The type Triton gives a Python number; NULL (and an error) otherwise. */
static const IrType *py_scalar_type(Fe *fe, PyObject *node, PyObject *o)
{
	if (PyBool_Check(o))
		return ty(fe, TY_I1);
	if (PyLong_Check(o)) {
		int overflow = 0;
		long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
		if (overflow > 0) {
			unsigned long long u = PyLong_AsUnsignedLongLong(o);
			if (PyErr_Occurred()) {
				PyErr_Clear();
				return fe_err(fe, node, IR_ERR_VALUE, "integer overflow representing %s",
					      fe_str(fe, o));
			}
			(void)u;
			return ty(fe, TY_U64);
		}
		if (overflow < 0)
			return fe_err(fe, node, IR_ERR_VALUE, "integer overflow representing %s", fe_str(fe, o));
		if (v >= -2147483648LL && v < 2147483648LL)
			return ty(fe, TY_I32);
		if (v >= 0 && v < 4294967296LL)
			return ty(fe, TY_U32);
		return ty(fe, TY_I64);
	}
	if (PyFloat_Check(o)) {
		/* f32, unless the value is finite, nonzero and outside f32's normal
		 * range (1e50, 1e-50): then f64 */
		double d = PyFloat_AsDouble(o), a = fabs(d);
		bool f32 = isinf(a) || isnan(d) || a == 0.0 || (a >= 0x1p-126 && a <= (2 - 0x1p-23) * 0x1p127);
		return ty(fe, f32 ? TY_F32 : TY_F64);
	}
	return fe_err(fe, node, IR_ERR_TYPE, "expected a number or a tensor, got %s", fe_str(fe, o));
}

static int kind_rank(const IrType *t)
{
	if (t->kind == TY_I1)
		return 0;
	if (ir_is_int(t))
		return 1;
	return 2;
}

static const IrType *int_promote(const IrType *a, const IrType *b)
{
	int ar = ir_type_bits(a), br = ir_type_bits(b);
	bool as = ir_is_signed(a), bs = ir_is_signed(b);
	if (as == bs)
		return ar > br ? a : b;
	if (!as)
		return ar >= br ? a : b;
	return br >= ar ? b : a;
}

static bool is_fp8(const IrType *t)
{
	return ir_is_fp8(t);
}

/* Triton's computation type of a binary operation. */
static const IrType *computation_type(Fe *fe, PyObject *node, const IrType *a, bool aw,
				      const IrType *b, bool bw, bool div_or_mod)
{
	if (aw != bw) {
		const IrType *s = aw ? a : b, *t = aw ? b : a;
		if (kind_rank(s) <= kind_rank(t)) {
			if (div_or_mod && (t->kind == TY_F16 || t->kind == TY_BF16))
				return ty(fe, TY_F32);
			return t;
		}
	}
	if (a->kind == TY_F64 || b->kind == TY_F64)
		return ty(fe, TY_F64);
	if (a->kind == TY_F32 || b->kind == TY_F32)
		return ty(fe, TY_F32);
	if (a->kind == TY_F16 || b->kind == TY_F16)
		return ty(fe, div_or_mod ? TY_F32 : TY_F16);
	if (a->kind == TY_BF16 && b->kind == TY_BF16)
		return ty(fe, div_or_mod ? TY_F32 : TY_BF16);
	if (a->kind == TY_BF16 || b->kind == TY_BF16)
		return ty(fe, TY_F32);
	if (is_fp8(a) && is_fp8(b))
		return a == b ? a : ty(fe, TY_F16);
	if (is_fp8(a) || is_fp8(b))
		return is_fp8(a) ? b : a;
	if (div_or_mod && ir_is_signed(a) != ir_is_signed(b) && a->kind != TY_I1 && b->kind != TY_I1)
		return fe_err(fe, node, IR_ERR_TYPE,
			      "Cannot use /, //, or %% with %s and %s because they have different "
			      "signedness; cast them to the same signedness",
			      fe_tyname(fe, a), fe_tyname(fe, b));
	return int_promote(a, b);
}

static const IrType *operand_type(Fe *fe, PyObject *node, FeVal *v, bool *weak)
{
	if (fe_is_tensor(v)) {
		*weak = false;
		return ir_scalar(v->v->type);
	}
	if (fe_is_const(v)) {
		*weak = true;
		return py_scalar_type(fe, node, v->obj);
	}
	return fe_err(fe, node, IR_ERR_TYPE, "expected a number or a tensor here, got a tuple");
}

const IrType *fe_promote(Fe *fe, PyObject *node, FeVal *a, FeVal *b, bool div_or_mod, bool arith)
{
	bool aw, bw;
	const IrType *at = operand_type(fe, node, a, &aw);
	if (!at)
		return NULL;
	const IrType *bt = operand_type(fe, node, b, &bw);
	if (!bt)
		return NULL;
	if (ir_is_ptr(at) || ir_is_ptr(bt)) {
		if (at == bt && !arith)
			return at;
		return fe_err(fe, node, IR_ERR_TYPE, "unsupported operand types %s and %s",
			      fe_tyname(fe, at), fe_tyname(fe, bt));
	}
	return computation_type(fe, node, at, aw, bt, bw, div_or_mod);
}

const IrType *fe_block(Fe *fe, PyObject *node, const IrType *elem, int rank, const int64_t *shape)
{
	if (rank == 0)
		return elem;
	const IrType *t = ir_type_block(fe->ctx, elem, rank, shape, NULL);
	if (!t) {
		char buf[256];
		int n = 0;
		for (int i = 0; i < rank && n < 200; i++)
			n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%lld", i ? ", " : "",
				      (long long)shape[i]);
		return fe_err(fe, node, IR_ERR_VALUE,
			      "invalid block shape [%s]: every dimension must be a power of two and the "
			      "number of elements at most %d",
			      buf, IR_MAX_NUMEL);
	}
	return t;
}

/* ---- constants and casts ---------------------------------------------- */

/* A constant of type t (scalar or block) holding Python number o. */
static IrValue *const_of(Fe *fe, PyObject *node, PyObject *o, const IrType *t)
{
	const IrType *e = ir_scalar(t);
	if (ir_is_float(e)) {
		double d = PyFloat_AsDouble(o);
		if (PyErr_Occurred())
			return fe_pyerr(fe, node, "float()");
		return ir_const_float(&fe->b, t, d);
	}
	if (PyFloat_Check(o))
		return ir_const_float(&fe->b, t, PyFloat_AsDouble(o));
	if (!ir_is_int(e))
		return fe_err(fe, node, IR_ERR_TYPE, "cannot make a constant of type %s", fe_tyname(fe, e));
	int overflow = 0;
	long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
	if (overflow > 0)
		v = (long long)PyLong_AsUnsignedLongLong(o);
	if (PyErr_Occurred())
		return fe_pyerr(fe, node, "int()");
	if (v < 0 && overflow == 0 && !ir_is_signed(e) && e->kind != TY_I1)
		return fe_err(fe, node, IR_ERR_VALUE,
			      "Cannot perform a binary operation between an unsigned tensor (%s) and a "
			      "negative scalar (the negative constant %lld); cast one of them explicitly",
			      fe_tyname(fe, e), v);
	if (e->kind == TY_I1)
		v = v != 0;
	return ir_const_int(&fe->b, t, v);
}

IrValue *fe_to_ir(Fe *fe, PyObject *node, FeVal *v, const IrType *t)
{
	if (!v)
		return NULL;
	if (fe_is_tensor(v))
		return t ? fe_cast(fe, node, v->v, ir_scalar(t), NULL, false) : v->v;
	if (fe_is_const(v) && is_number(v->obj)) {
		if (!t)
			t = py_scalar_type(fe, node, v->obj);
		return t ? const_of(fe, node, v->obj, t) : NULL;
	}
	if (fe_is_const(v))
		return fe_err(fe, node, IR_ERR_TYPE, "expected a tensor or a number, got %s",
			      fe_str(fe, v->obj));
	return fe_err(fe, node, IR_ERR_TYPE, "expected a tensor or a number, got a tuple");
}

IrValue *fe_cast(Fe *fe, PyObject *node, IrValue *x, const IrType *to, const char *rounding,
		 bool bitcast)
{
	const IrType *from = ir_scalar(x->type);
	if (from == to)
		return x;
	const IrType *rty = ir_type_like(fe->ctx, x->type, to);
	if (bitcast) {
		if (ir_type_bits(from) != ir_type_bits(to))
			return fe_err(fe, node, IR_ERR_TYPE,
				      "cannot bitcast %s to %s: they have different bit widths",
				      fe_tyname(fe, from), fe_tyname(fe, to));
		return ir_cast(&fe->b, OP_BITCAST, x, rty);
	}
	if (to->kind == TY_I1 && !ir_is_ptr(from)) {
		IrValue *zero = ir_is_float(from) ? ir_const_float(&fe->b, x->type, 0.0)
						  : ir_const_int(&fe->b, x->type, 0);
		return ir_cmp(&fe->b, "ne", x, zero);
	}
	if (ir_is_ptr(from) && ir_is_ptr(to))
		return ir_cast(&fe->b, OP_BITCAST, x, rty);
	if (ir_is_ptr(from)) {
		if (!ir_is_int(to))
			return fe_err(fe, node, IR_ERR_TYPE, "cannot cast a pointer to %s", fe_tyname(fe, to));
		IrValue *i = ir_cast(&fe->b, OP_PTR_TO_INT, x, ir_type_like(fe->ctx, x->type, ty(fe, TY_I64)));
		return fe_cast(fe, node, i, to, NULL, false);
	}
	if (ir_is_ptr(to)) {
		if (!ir_is_int(from))
			return fe_err(fe, node, IR_ERR_TYPE, "cannot cast %s to a pointer", fe_tyname(fe, from));
		x = fe_cast(fe, node, x, ty(fe, TY_I64), NULL, false);
		return ir_cast(&fe->b, OP_INT_TO_PTR, x, rty);
	}
	IrValue *r = ir_cast(&fe->b, OP_CAST, x, rty);
	if (rounding && *rounding)
		ir_op_set_str(fe->ctx, r->def, "rounding", rounding);
	return r;
}

IrValue *fe_to_bool(Fe *fe, PyObject *node, IrValue *x)
{
	return fe_cast(fe, node, x, ty(fe, TY_I1), NULL, false);
}

/* ---- broadcasting ------------------------------------------------------ */

IrValue *fe_splat_to(Fe *fe, PyObject *node, IrValue *x, const IrType *block)
{
	if (x->type == block)
		return x;
	if (x->def && x->def->opc == OP_CONSTANT && !ir_is_block(x->type)) {
		/* splat a fresh constant rather than a scalar one */
		const IrAttr *a = ir_op_attr(x->def, "value");
		if (a && a->kind == ATTR_FLOAT)
			return ir_const_float(&fe->b, block, a->f);
		if (a && a->kind == ATTR_INT)
			return ir_const_int(&fe->b, block, a->i);
	}
	return ir_splat(&fe->b, x, block);
}

IrValue *fe_broadcast_to(Fe *fe, PyObject *node, IrValue *x, int rank, const int64_t *shape)
{
	const IrType *t = x->type;
	const IrType *e = ir_scalar(t);
	if (rank == 0) {
		if (ir_is_block(t))
			return fe_err(fe, node, IR_ERR_TYPE, "cannot broadcast %s to a scalar", fe_tyname(fe, t));
		return x;
	}
	const IrType *target = fe_block(fe, node, e, rank, shape);
	if (!target)
		return NULL;
	if (!ir_is_block(t))
		return fe_splat_to(fe, node, x, target);
	if (t->rank > rank)
		return fe_err(fe, node, IR_ERR_TYPE, "cannot broadcast %s to %s", fe_tyname(fe, t),
			      fe_tyname(fe, target));
	while (x->type->rank < rank)
		x = ir_expand_dims(&fe->b, x, 0);
	t = x->type;
	for (int i = 0; i < rank; i++)
		if (t->shape[i] != shape[i] && t->shape[i] != 1)
			return fe_err(fe, node, IR_ERR_TYPE,
				      "cannot broadcast %s to %s: dimension %d is %lld, expected 1 or %lld",
				      fe_tyname(fe, t), fe_tyname(fe, target), i, (long long)t->shape[i],
				      (long long)shape[i]);
	if (t == target)
		return x;
	return ir_broadcast(&fe->b, x, target);
}

bool fe_broadcast_pair(Fe *fe, PyObject *node, IrValue **a, IrValue **b)
{
	const IrType *at = (*a)->type, *bt = (*b)->type;
	if (!ir_is_block(at) && !ir_is_block(bt))
		return true;
	int rank = at->rank > bt->rank ? at->rank : bt->rank;
	int64_t shape[IR_MAX_RANK];
	for (int i = 0; i < rank; i++) {
		int ai = i - (rank - at->rank), bi = i - (rank - bt->rank);
		int64_t ad = ir_is_block(at) && ai >= 0 ? at->shape[ai] : 1;
		int64_t bd = ir_is_block(bt) && bi >= 0 ? bt->shape[bi] : 1;
		if (ad != bd && ad != 1 && bd != 1) {
			fe_err(fe, node, IR_ERR_TYPE,
			       "incompatible shapes %s and %s: dimension %d is %lld vs %lld", fe_tyname(fe, at),
			       fe_tyname(fe, bt), i, (long long)ad, (long long)bd);
			return false;
		}
		shape[i] = ad > bd ? ad : bd;
	}
	*a = fe_broadcast_to(fe, node, *a, rank, shape);
	if (!*a)
		return false;
	*b = fe_broadcast_to(fe, node, *b, rank, shape);
	return *b != NULL;
}

/* A Python int next to a tensor must fit the integer type they compute in
   (Triton: "Scalar ... is out of range for type ..."). */
static bool scalar_fits(Fe *fe, PyObject *node, FeVal *v, const IrType *t)
{
	const IrType *e = ir_scalar(t);
	if (!fe_is_const(v) || !PyLong_Check(v->obj) || PyBool_Check(v->obj) || !ir_is_int(e) ||
	    e->kind == TY_I1)
		return true;
	int bits = ir_type_bits(e);
	int overflow = 0;
	long long x = PyLong_AsLongLongAndOverflow(v->obj, &overflow);
	if (PyErr_Occurred()) {
		PyErr_Clear();
		overflow = 1;
	}
	bool ok;
	if (overflow > 0) {
		unsigned long long u = PyLong_AsUnsignedLongLong(v->obj);
		ok = !PyErr_Occurred() && !ir_is_signed(e) && bits == 64;
		PyErr_Clear();
		(void)u;
	} else if (overflow < 0)
		ok = false;
	else if (ir_is_signed(e))
		ok = bits >= 64 || (x >= -(1LL << (bits - 1)) && x < (1LL << (bits - 1)));
	else
		ok = x < 0 || bits >= 64 || x < (1LL << bits); /* negatives: const_of's error */
	if (ok)
		return true;
	PyObject *r = PyObject_Repr(v->obj);
	const char *rs = r ? PyUnicode_AsUTF8AndSize(r, NULL) : "?";
	fe_err(fe, node, IR_ERR_VALUE, "Scalar %s is out of range for type %s", rs ? rs : "?",
	       fe_tyname(fe, e));
	Py_XDECREF(r);
	PyErr_Clear();
	return false;
}

/* Converts both operands to element type t, shaped like each other. */
static bool operands(Fe *fe, PyObject *node, FeVal *a, FeVal *b, const IrType *t, IrValue **x,
		     IrValue **y)
{
	/* a Python number next to a block becomes a block constant directly */
	const IrType *shape_of = NULL;
	if (fe_is_tensor(a) && ir_is_block(a->v->type))
		shape_of = a->v->type;
	if (fe_is_tensor(b) && ir_is_block(b->v->type) &&
	    (!shape_of || b->v->type->rank > shape_of->rank))
		shape_of = b->v->type;
	const IrType *ct = shape_of ? ir_type_like(fe->ctx, shape_of, t) : t;
	if ((fe_is_tensor(a) || fe_is_tensor(b)) &&
	    (!scalar_fits(fe, node, a, t) || !scalar_fits(fe, node, b, t)))
		return false;
	*x = fe_to_ir(fe, node, a, fe_is_const(a) ? ct : t);
	if (!*x)
		return false;
	*y = fe_to_ir(fe, node, b, fe_is_const(b) ? ct : t);
	if (!*y)
		return false;
	return fe_broadcast_pair(fe, node, x, y);
}

/* ---- operators ---------------------------------------------------------- */

static const char *op_symbol(FeNode op)
{
	switch (op) {
	case N_Add: return "+";
	case N_Sub: return "-";
	case N_Mult: return "*";
	case N_Div: return "/";
	case N_FloorDiv: return "//";
	case N_Mod: return "%";
	case N_Pow: return "**";
	case N_LShift: return "<<";
	case N_RShift: return ">>";
	case N_BitOr: return "|";
	case N_BitXor: return "^";
	case N_BitAnd: return "&";
	case N_MatMult: return "@";
	case N_Eq: return "==";
	case N_NotEq: return "!=";
	case N_Lt: return "<";
	case N_LtE: return "<=";
	case N_Gt: return ">";
	case N_GtE: return ">=";
	default: return "?";
	}
}

static FeVal *fold_binop(Fe *fe, PyObject *node, FeNode op, PyObject *a, PyObject *b)
{
	PyObject *r = NULL;
	switch (op) {
	case N_Add: r = PyNumber_Add(a, b); break;
	case N_Sub: r = PyNumber_Subtract(a, b); break;
	case N_Mult: r = PyNumber_Multiply(a, b); break;
	case N_Div: r = PyNumber_TrueDivide(a, b); break;
	case N_FloorDiv: r = PyNumber_FloorDivide(a, b); break;
	case N_Mod: r = PyNumber_Remainder(a, b); break;
	case N_Pow: r = PyNumber_Power(a, b, Py_None); break;
	case N_LShift: r = PyNumber_Lshift(a, b); break;
	case N_RShift: r = PyNumber_Rshift(a, b); break;
	case N_BitOr: r = PyNumber_Or(a, b); break;
	case N_BitXor: r = PyNumber_Xor(a, b); break;
	case N_BitAnd: r = PyNumber_And(a, b); break;
	case N_MatMult: r = PyNumber_MatrixMultiply(a, b); break;
	default: return fe_err(fe, node, IR_ERR_SYNTAX, "unsupported operator");
	}
	if (!r)
		return fe_pyerr(fe, node, ir_fmt(fe->ctx, "constexpr '%s'", op_symbol(op)));
	fe_keep(fe, r);
	return fe_const(fe, r);
}

void fe_overflow_check(Fe *fe, IrOpcode opc, IrValue *x, IrValue *y)
{
	const IrType *t = ir_scalar(x->type);
	int bits = ir_type_bits(t);
	if (!fe->overflow || !ir_is_int(t) || bits < 8 || bits >= 64)
		return;
	bool sgn = ir_is_signed(t);
	const IrType *wt = ir_type_like(fe->ctx, x->type, ty(fe, TY_I64));
	IrValue *r = ir_binary(&fe->b, opc, ir_cast(&fe->b, OP_CAST, x, wt), ir_cast(&fe->b, OP_CAST, y, wt));
	int64_t hi = (int64_t)((1ull << (sgn ? bits - 1 : bits)) - 1), lo = sgn ? -hi - 1 : 0;
	IrValue *ok = ir_binary(&fe->b, OP_AND, ir_cmp(&fe->b, "le", r, ir_const_int(&fe->b, wt, hi)),
				ir_cmp(&fe->b, "ge", r, ir_const_int(&fe->b, wt, lo)));
	IrOp *op = ir_build(&fe->b, OP_ASSERT, 1, &ok, 0, NULL, 0);
	const char *name = opc == OP_ADD ? "add" : opc == OP_SUB ? "sub" : "mul";
	ir_op_set_str(fe->ctx, op, "msg",
		      ir_fmt(fe->ctx, "%sint%d overflow detected for operation %s", sgn ? "" : "u", bits, name));
	ir_op_set_int(fe->ctx, op, "overflow", 1);
}

static FeVal *ptr_arith(Fe *fe, PyObject *node, FeNode op, FeVal *a, FeVal *b, bool check)
{
	bool aw, bw;
	const IrType *at = operand_type(fe, node, a, &aw), *bt = operand_type(fe, node, b, &bw);
	if (!at || !bt)
		return NULL;
	FeVal *p = ir_is_ptr(at) ? a : b, *o = ir_is_ptr(at) ? b : a;
	const IrType *ot = ir_is_ptr(at) ? bt : at;
	if (!(op == N_Add || (op == N_Sub && p == a)) || ir_is_ptr(ot) || !ir_is_int(ot))
		return fe_err(fe, node, IR_ERR_TYPE, "unsupported operand types for %s: %s and %s",
			      op_symbol(op), fe_tyname(fe, at), fe_tyname(fe, bt));
	IrValue *pv = p->v;
	IrValue *ov;
	if (fe_is_const(o) && ir_is_block(pv->type)) {
		const IrType *it = py_scalar_type(fe, node, o->obj);
		ov = it ? const_of(fe, node, o->obj, ir_type_like(fe->ctx, pv->type, it)) : NULL;
	} else
		ov = fe_to_ir(fe, node, o, NULL);
	if (!ov)
		return NULL;
	if (ir_scalar(ov->type)->kind == TY_I1)
		ov = fe_cast(fe, node, ov, ty(fe, TY_I32), NULL, false);
	if (!fe_broadcast_pair(fe, node, &pv, &ov))
		return NULL;
	if (op == N_Sub) {
		if (check)
			fe_overflow_check(fe, OP_SUB, ir_const_int(&fe->b, ov->type, 0), ov);
		ov = ir_unary(&fe->b, OP_NEG, ov);
	}
	return fe_tensor(fe, ir_addptr(&fe->b, pv, ov));
}

FeVal *fe_binop(Fe *fe, PyObject *node, FeNode op, FeVal *a, FeVal *b)
{
	return fe_arith(fe, node, op, a, b, true);
}

FeVal *fe_arith(Fe *fe, PyObject *node, FeNode op, FeVal *a, FeVal *b, bool check)
{
	if (!a || !b)
		return NULL;
	if (fe_is_const(a) && fe_is_const(b))
		return fold_binop(fe, node, op, a->obj, b->obj);
	if (a->kind == V_TUPLE || b->kind == V_TUPLE || a->kind == V_METHOD || b->kind == V_METHOD)
		return fe_err(fe, node, IR_ERR_TYPE, "unsupported operand types for %s", op_symbol(op));
	bool aw, bw;
	const IrType *at = operand_type(fe, node, a, &aw);
	if (!at)
		return NULL;
	const IrType *bt = operand_type(fe, node, b, &bw);
	if (!bt)
		return NULL;
	if (ir_is_ptr(at) || ir_is_ptr(bt))
		return ptr_arith(fe, node, op, a, b, check);
	bool divmod = op == N_Div || op == N_FloorDiv || op == N_Mod;
	bool bitwise = op == N_BitAnd || op == N_BitOr || op == N_BitXor || op == N_LShift ||
		       op == N_RShift;
	if (bitwise && (!ir_is_int(at) || !ir_is_int(bt)))
		return fe_err(fe, node, IR_ERR_TYPE,
			      "invalid operands of type %s and %s for operator %s: it needs integer operands",
			      fe_tyname(fe, at), fe_tyname(fe, bt), op_symbol(op));
	const IrType *t = fe_promote(fe, node, a, b, divmod, true);
	if (!t)
		return NULL;
	if (op == N_Div && ir_is_int(t))
		t = ty(fe, TY_F32);
	IrValue *x, *y;
	if (!operands(fe, node, a, b, t, &x, &y))
		return NULL;
	IrOpcode opc;
	switch (op) {
	case N_Add: opc = OP_ADD; break;
	case N_Sub: opc = OP_SUB; break;
	case N_Mult: opc = OP_MUL; break;
	case N_Div: opc = OP_DIV; break;
	case N_FloorDiv: opc = OP_DIV; break;
	case N_Mod: opc = OP_REM; break;
	case N_BitAnd: opc = OP_AND; break;
	case N_BitOr: opc = OP_OR; break;
	case N_BitXor: opc = OP_XOR; break;
	case N_LShift: opc = OP_SHL; break;
	case N_RShift: opc = OP_SHR; break;
	default:
		return fe_err(fe, node, IR_ERR_SYNTAX,
			      "operator %s is not supported on tensors (use tl.math / libdevice functions)",
			      op_symbol(op));
	}
	/* Triton picks the right shift by the left operand's own signedness:
	   a signed lhs shifts arithmetically even when the common type is unsigned */
	if (op == N_RShift && fe_is_tensor(a) && ir_is_signed(at) && ir_is_int(t) && !ir_is_signed(t) &&
	    t->kind >= TY_U8 && t->kind <= TY_U64) {
		const IrType *st = ty(fe, (IrTypeKind)(t->kind - TY_U8 + TY_I8));
		IrValue *xs = fe_cast(fe, node, x, st, NULL, true);
		IrValue *ys = xs ? fe_cast(fe, node, y, st, NULL, true) : NULL;
		if (!ys)
			return NULL;
		return fe_tensor(fe, fe_cast(fe, node, ir_binary(&fe->b, OP_SHR, xs, ys), t, NULL, true));
	}
	if (check && (opc == OP_ADD || opc == OP_SUB || opc == OP_MUL))
		fe_overflow_check(fe, opc, x, y);
	IrValue *r = ir_binary(&fe->b, opc, x, y);
	if (op == N_FloorDiv && ir_is_float(t))
		r = ir_unary(&fe->b, OP_FLOOR, r);
	return fe_tensor(fe, r);
}

static const char *cmp_pred(FeNode op)
{
	switch (op) {
	case N_Eq: return "eq";
	case N_NotEq: return "ne";
	case N_Lt: return "lt";
	case N_LtE: return "le";
	case N_Gt: return "gt";
	case N_GtE: return "ge";
	default: return NULL;
	}
}

FeVal *fe_cmpop(Fe *fe, PyObject *node, FeNode op, FeVal *a, FeVal *b)
{
	if (!a || !b)
		return NULL;
	if (op == N_Is || op == N_IsNot) {
		bool same;
		if (fe_is_const(a) && fe_is_const(b))
			same = a->obj == b->obj;
		else
			same = a == b || (fe_is_tensor(a) && fe_is_tensor(b) && a->v == b->v);
		return fe_const(fe, (same == (op == N_Is)) ? Py_True : Py_False);
	}
	if (fe_is_const(a) && fe_is_const(b)) {
		int pyop;
		switch (op) {
		case N_Eq: pyop = Py_EQ; break;
		case N_NotEq: pyop = Py_NE; break;
		case N_Lt: pyop = Py_LT; break;
		case N_LtE: pyop = Py_LE; break;
		case N_Gt: pyop = Py_GT; break;
		case N_GtE: pyop = Py_GE; break;
		case N_In:
		case N_NotIn: {
			int r = PySequence_Contains(b->obj, a->obj);
			if (r < 0)
				return fe_pyerr(fe, node, "constexpr 'in'");
			return fe_const(fe, (r == (op == N_In)) ? Py_True : Py_False);
		}
		default: return fe_err(fe, node, IR_ERR_SYNTAX, "unsupported comparison");
		}
		PyObject *r = fe_keep(fe, PyObject_RichCompare(a->obj, b->obj, pyop));
		if (!r)
			return fe_pyerr(fe, node, "constexpr comparison");
		return fe_const(fe, r);
	}
	const char *pred = cmp_pred(op);
	if (!pred)
		return fe_err(fe, node, IR_ERR_SYNTAX,
			      "unsupported syntax: 'in' comparisons are only allowed on constexpr values");
	const IrType *t = fe_promote(fe, node, a, b, false, false);
	if (!t)
		return NULL;
	IrValue *x, *y;
	if (!operands(fe, node, a, b, t, &x, &y))
		return NULL;
	return fe_tensor(fe, ir_cmp(&fe->b, pred, x, y));
}

FeVal *fe_unop(Fe *fe, PyObject *node, FeNode op, FeVal *a)
{
	if (!a)
		return NULL;
	if (fe_is_const(a)) {
		PyObject *r = NULL;
		switch (op) {
		case N_USub: r = PyNumber_Negative(a->obj); break;
		case N_UAdd: r = PyNumber_Positive(a->obj); break;
		case N_Invert: r = PyNumber_Invert(a->obj); break;
		case N_Not: {
			int t = PyObject_Not(a->obj);
			if (t < 0)
				return fe_pyerr(fe, node, "constexpr 'not'");
			return fe_const(fe, t ? Py_True : Py_False);
		}
		default: break;
		}
		if (!r)
			return fe_pyerr(fe, node, "constexpr unary operator");
		fe_keep(fe, r);
		return fe_const(fe, r);
	}
	if (!fe_is_tensor(a))
		return fe_err(fe, node, IR_ERR_TYPE, "unsupported operand for a unary operator");
	IrValue *x = a->v;
	const IrType *e = ir_scalar(x->type);
	switch (op) {
	case N_UAdd: return a;
	case N_USub:
		if (ir_is_ptr(e))
			return fe_err(fe, node, IR_ERR_TYPE, "cannot negate a pointer");
		fe_overflow_check(fe, OP_SUB, ir_const_int(&fe->b, x->type, 0), x);
		return fe_tensor(fe, ir_unary(&fe->b, OP_NEG, x));
	case N_Invert:
		if (!ir_is_int(e))
			return fe_err(fe, node, IR_ERR_TYPE, "operator ~ needs an integer operand, got %s",
				      fe_tyname(fe, e));
		return fe_tensor(fe, ir_unary(&fe->b, OP_NOT, x));
	case N_Not: {
		IrValue *bv = fe_to_bool(fe, node, x);
		return fe_tensor(fe, ir_binary(&fe->b, OP_XOR, bv, ir_const_int(&fe->b, bv->type, 1)));
	}
	default: return fe_err(fe, node, IR_ERR_SYNTAX, "unsupported unary operator");
	}
}

/* ---- names -------------------------------------------------------------- */

static bool annotated_constexpr(Fe *fe, const char *name)
{
	PyObject *ann = PyDict_GetItemString(fe->fn->globals, "__annotations__");
	if (!ann || !PyDict_Check(ann))
		return false;
	PyObject *a = PyDict_GetItemString(ann, name);
	if (!a)
		return false;
	if (a == fe->cls_constexpr)
		return true;
	if (PyUnicode_Check(a)) {
		const char *s = PyUnicode_AsUTF8AndSize(a, NULL);
		size_t n = strlen(s);
		return n >= 9 && strcmp(s + n - 9, "constexpr") == 0;
	}
	return false;
}

static PyObject *unwrap(Fe *fe, PyObject *o)
{
	if (PyObject_IsInstance(o, fe->cls_constexpr) == 1) {
		PyObject *v = fe_attr(fe, o, "value");
		return v ? v : o;
	}
	PyErr_Clear();
	return o;
}

static bool allowed_global(Fe *fe, PyObject *o)
{
	if (PyModule_Check(o) || PyType_Check(o) || PyCallable_Check(o))
		return true;
	if (PyObject_IsInstance(o, fe->cls_dtype) == 1)
		return true;
	PyErr_Clear();
	return o == Py_None;
}

FeVal *fe_lookup(Fe *fe, PyObject *node, const char *name)
{
	FeVal *v = fe_scope_get(&fe->fn->scope, name);
	if (v) {
		if (v->kind == V_UNDEF)
			return fe_err(fe, node, IR_ERR_VALUE, "%s", v->why);
		return v;
	}
	PyObject *g = fe->fn->globals ? PyDict_GetItemString(fe->fn->globals, name) : NULL;
	if (g) {
		if (PyObject_IsInstance(g, fe->cls_constexpr) == 1)
			return fe_const(fe, unwrap(fe, g));
		PyErr_Clear();
		if (annotated_constexpr(fe, name) || allowed_global(fe, g))
			return fe_const(fe, g);
		return fe_err(fe, node, IR_ERR_VALUE,
			      "cannot access global variable %s from within @jit'ed function: globals must "
			      "be tl.constexpr (write `%s = tl.constexpr(...)` or `%s: tl.constexpr = ...` "
			      "at module level)",
			      name, name, name);
	}
	PyObject *bi = fe_attr(fe, fe->builtins, name);
	if (bi)
		return fe_const(fe, bi);
	return fe_err(fe, node, IR_ERR_VALUE, "name '%s' is not defined", name);
}

/* ---- attributes ------------------------------------------------------- */

FeVal *fe_shape_tuple(Fe *fe, const IrType *t)
{
	int rank = ir_is_block(t) ? t->rank : 0;
	PyObject *tup = fe_keep(fe, PyTuple_New(rank));
	for (int i = 0; i < rank; i++)
		PyTuple_SetItem(tup, i, PyLong_FromLongLong(t->shape[i]));
	return fe_const(fe, tup);
}

FeVal *fe_getattr(Fe *fe, PyObject *node, FeVal *obj, const char *name)
{
	if (!obj)
		return NULL;
	if (fe_is_const(obj) && obj->lifted) {
		/* x = 0; x.to(...): the scalar tensor Triton's assignment makes */
		IrValue *v = fe_to_ir(fe, node, obj, NULL);
		return v ? fe_getattr(fe, node, fe_tensor(fe, v), name) : NULL;
	}
	if (fe_is_const(obj)) {
		/* a Python number in a kernel is a scalar of Triton's type for it */
		if (strcmp(name, "dtype") == 0 &&
		    (PyLong_Check(obj->obj) || PyFloat_Check(obj->obj))) {
			const IrType *t = py_scalar_type(fe, node, obj->obj);
			PyObject *d = t ? fe_ir_to_dtype(fe, t) : NULL;
			return d ? fe_const(fe, d) : NULL;
		}
		if (strcmp(name, "type") == 0 && !PyObject_HasAttrString(obj->obj, "type")) {
			/* a constexpr's type: tl.constexpr_type(value) */
			PyObject *ct = fe_attr(fe, fe->tl, "constexpr_type");
			PyObject *r = ct ? fe_keep(fe, PyObject_CallFunctionObjArgs(ct, obj->obj, NULL)) : NULL;
			return r ? fe_const(fe, r) : fe_pyerr(fe, node, "constexpr_type");
		}
		PyObject *r = PyObject_GetAttrString(obj->obj, name);
		if (!r)
			return fe_pyerr(fe, node, ir_fmt(fe->ctx, "attribute '%s'", name));
		fe_keep(fe, r);
		return fe_const(fe, unwrap(fe, r));
	}
	if (fe_is_tdesc(fe, obj))
		return fe_tdesc_getattr(fe, node, obj, name);
	if (fe_is_blockptr(fe, obj))
		return fe_blockptr_getattr(fe, node, obj, name);
	if (obj->kind == V_TUPLE && obj->obj) { /* a namedtuple: its fields */
		PyObject *fields = fe_attr(fe, obj->obj, "_fields");
		for (Py_ssize_t i = 0; fields && PyTuple_Check(fields) && i < PyTuple_Size(fields) && i < obj->n; i++) {
			PyObject *f = PyTuple_GetItem(fields, i);
			if (PyUnicode_Check(f) && strcmp(PyUnicode_AsUTF8AndSize(f, NULL), name) == 0)
				return obj->items[i];
		}
		PyErr_Clear();
		return fe_err(fe, node, IR_ERR_VALUE, "namedtuple %s has no field '%s'",
			      fe_str(fe, fe_attr(fe, obj->obj, "__name__")), name);
	}
	if (fe_is_tensor(obj)) {
		const IrType *t = obj->v->type;
		if (strcmp(name, "dtype") == 0) {
			PyObject *d = fe_ir_to_dtype(fe, ir_scalar(t));
			if (!d)
				return fe_err(fe, node, IR_ERR_TYPE, "no dtype for %s", fe_tyname(fe, t));
			return fe_const(fe, d);
		}
		if (strcmp(name, "shape") == 0)
			return fe_shape_tuple(fe, t);
		if (strcmp(name, "numel") == 0) {
			PyObject *n = fe_keep(fe, PyLong_FromLongLong(t->numel));
			return fe_const(fe, n);
		}
		if (strcmp(name, "type") == 0) {
			PyObject *d = fe_ir_to_dtype(fe, ir_scalar(t));
			if (!d)
				return NULL;
			if (!ir_is_block(t))
				return fe_const(fe, d);
			FeVal *shape = fe_shape_tuple(fe, t);
			PyObject *bt = fe_keep(fe, PyObject_CallFunctionObjArgs(fe->cls_block, d, shape->obj, NULL));
			return bt ? fe_const(fe, bt) : fe_pyerr(fe, node, "block_type");
		}
		if (strcmp(name, "T") == 0)
			return fe_builtin_call(fe, node, "trans", obj, 0, NULL, 0, NULL, NULL);
		if (fe_is_tensor_method(name)) {
			FeVal *m = ir_alloc(fe->ctx, sizeof(FeVal));
			m->kind = V_METHOD;
			m->self = obj;
			m->name = ir_intern(fe->ctx, name);
			return m;
		}
		return fe_err(fe, node, IR_ERR_VALUE, "'tensor' object has no attribute '%s'", name);
	}
	return fe_err(fe, node, IR_ERR_VALUE, "this value has no attribute '%s'", name);
}

/* ---- expressions ------------------------------------------------------- */

static PyObject *child(Fe *fe, PyObject *node, const char *name)
{
	return fe_attr(fe, node, name);
}

/* A slice bound that is left out (x[:]) or written None (x[None:]). */
static bool none_or_absent(Fe *fe, PyObject *n)
{
	if (!n || n == Py_None)
		return true;
	if (fe_kind(fe, n) != N_Constant)
		return false;
	PyObject *v = fe_attr(fe, n, "value");
	return v == Py_None;
}

static FeVal *make_tuple(Fe *fe, int n, FeVal **items)
{
	bool all_const = true;
	for (int i = 0; i < n; i++)
		if (!fe_is_const(items[i]))
			all_const = false;
	if (all_const) {
		PyObject *t = fe_keep(fe, PyTuple_New(n));
		for (int i = 0; i < n; i++) {
			Py_INCREF(items[i]->obj);
			PyTuple_SetItem(t, i, items[i]->obj);
		}
		return fe_const(fe, t);
	}
	FeVal *v = ir_alloc(fe->ctx, sizeof(FeVal));
	v->kind = V_TUPLE;
	v->n = n;
	v->items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(n + 1));
	memcpy(v->items, items, sizeof(FeVal *) * (size_t)n);
	return v;
}

static FeVal *tuple_expr(Fe *fe, PyObject *node)
{
	PyObject *elts = child(fe, node, "elts");
	Py_ssize_t n = PyList_Size(elts);
	FeVal **items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(n + 1));
	int k = 0;
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *e = PyList_GetItem(elts, i);
		if (fe_kind(fe, e) == N_Starred)
			return fe_err(fe, e, IR_ERR_SYNTAX, "unsupported syntax: starred expressions in tuples");
		items[k] = fe_expr(fe, e);
		if (!items[k])
			return NULL;
		k++;
	}
	return make_tuple(fe, k, items);
}

FeVal *fe_make_tuple(Fe *fe, int n, FeVal **items)
{
	return make_tuple(fe, n, items);
}

static FeVal *subscript(Fe *fe, PyObject *node)
{
	FeVal *base = fe_expr(fe, child(fe, node, "value"));
	if (!base)
		return NULL;
	PyObject *sl = child(fe, node, "slice");
	if (fe_is_tensor(base)) {
		PyObject *elts;
		if (fe_kind(fe, sl) == N_Tuple)
			elts = child(fe, sl, "elts");
		else {
			elts = fe_keep(fe, PyList_New(0));
			PyList_Append(elts, sl);
		}
		IrValue *x = base->v;
		int dim = 0;
		for (Py_ssize_t i = 0; i < PyList_Size(elts); i++) {
			PyObject *e = PyList_GetItem(elts, i);
			FeNode k = fe_kind(fe, e);
			if (k == N_Slice && none_or_absent(fe, child(fe, e, "lower")) &&
			    none_or_absent(fe, child(fe, e, "upper")) && none_or_absent(fe, child(fe, e, "step"))) {
				dim++;
				continue;
			}
			FeVal *ev = k == N_Slice ? NULL : fe_expr(fe, e);
			if (ev && fe_is_const(ev) && ev->obj == Py_None) {
				if (!ir_is_block(x->type)) {
					int64_t one = 1;
					const IrType *bt = fe_block(fe, e, x->type, 1, &one);
					x = ir_splat(&fe->b, x, bt);
				} else
					x = ir_expand_dims(&fe->b, x, dim);
				dim++;
				continue;
			}
			if (fe_has_error(fe))
				return NULL;
			return fe_err(fe, e, IR_ERR_SYNTAX,
				      "unsupported tensor index: only ':' and None are allowed (e.g. x[:, None])");
		}
		if (ir_is_block(base->v->type) && dim < base->v->type->rank + (x->type->rank - base->v->type->rank) &&
		    dim > x->type->rank)
			return fe_err(fe, node, IR_ERR_VALUE, "too many indices for a tensor");
		return fe_tensor(fe, x);
	}
	/* constexpr / tuple subscripts */
	PyObject *key;
	if (fe_kind(fe, sl) == N_Slice) {
		PyObject *parts[3] = {NULL, NULL, NULL};
		const char *names[3] = {"lower", "upper", "step"};
		for (int i = 0; i < 3; i++) {
			PyObject *c = child(fe, sl, names[i]);
			if (c == Py_None) {
				parts[i] = Py_None;
				continue;
			}
			FeVal *cv = fe_expr(fe, c);
			if (!cv)
				return NULL;
			if (!fe_is_const(cv))
				return fe_err(fe, c, IR_ERR_VALUE, "slice bounds must be constexpr");
			parts[i] = cv->obj;
		}
		key = fe_keep(fe, PySlice_New(parts[0], parts[1], parts[2]));
	} else {
		FeVal *kv = fe_expr(fe, sl);
		if (!kv)
			return NULL;
		if (!fe_is_const(kv))
			return fe_err(fe, sl, IR_ERR_VALUE, "index must be a constexpr");
		key = kv->obj;
	}
	if (base->kind == V_TUPLE) {
		if (PyLong_Check(key)) {
			long i = PyLong_AsLong(key);
			if (i < 0)
				i += base->n;
			if (i < 0 || i >= base->n)
				return fe_err(fe, node, IR_ERR_VALUE, "tuple index out of range");
			return base->items[i];
		}
		if (PySlice_Check(key)) {
			Py_ssize_t start, stop, step;
			if (PySlice_Unpack(key, &start, &stop, &step) < 0)
				return fe_pyerr(fe, node, "slice");
			Py_ssize_t len = PySlice_AdjustIndices(base->n, &start, &stop, step);
			FeVal **items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(len + 1));
			for (Py_ssize_t i = 0; i < len; i++)
				items[i] = base->items[start + i * step];
			return make_tuple(fe, (int)len, items);
		}
		return fe_err(fe, node, IR_ERR_VALUE, "tuple indices must be constexpr ints or slices");
	}
	if (!fe_is_const(base))
		return fe_err(fe, node, IR_ERR_TYPE, "this value cannot be subscripted");
	PyObject *r = fe_keep(fe, PyObject_GetItem(base->obj, key));
	if (!r)
		return fe_pyerr(fe, node, "subscript");
	return fe_const(fe, unwrap(fe, r));
}

static FeVal *boolop(Fe *fe, PyObject *node)
{
	FeNode op = fe_kind(fe, child(fe, node, "op"));
	PyObject *vals = child(fe, node, "values");
	Py_ssize_t n = PyList_Size(vals);
	FeVal *acc = fe_expr(fe, PyList_GetItem(vals, 0));
	for (Py_ssize_t i = 1; acc && i < n; i++) {
		if (fe_is_const(acc)) {
			/* Python short-circuit semantics on constexprs */
			int t = PyObject_IsTrue(acc->obj);
			if (t < 0)
				return fe_pyerr(fe, node, "bool()");
			if ((op == N_And && !t) || (op == N_Or && t))
				return acc;
			acc = fe_expr(fe, PyList_GetItem(vals, i));
			continue;
		}
		FeVal *rhs = fe_expr(fe, PyList_GetItem(vals, i));
		if (!rhs)
			return NULL;
		IrValue *x = fe_to_ir(fe, node, acc, NULL), *y = fe_to_ir(fe, node, rhs, NULL);
		if (!x || !y)
			return NULL;
		x = fe_to_bool(fe, node, x);
		y = fe_to_bool(fe, node, y);
		if (!fe_broadcast_pair(fe, node, &x, &y))
			return NULL;
		acc = fe_tensor(fe, ir_binary(&fe->b, op == N_And ? OP_AND : OP_OR, x, y));
	}
	return acc;
}

static FeVal *compare(Fe *fe, PyObject *node)
{
	PyObject *ops = child(fe, node, "ops"), *comps = child(fe, node, "comparators");
	FeVal *lhs = fe_expr(fe, child(fe, node, "left"));
	FeVal *acc = NULL;
	for (Py_ssize_t i = 0; lhs && i < PyList_Size(ops); i++) {
		FeVal *rhs = fe_expr(fe, PyList_GetItem(comps, i));
		FeVal *r = fe_cmpop(fe, node, fe_kind(fe, PyList_GetItem(ops, i)), lhs, rhs);
		if (!r)
			return NULL;
		if (!acc)
			acc = r;
		else if (fe_is_const(acc) && fe_is_const(r))
			acc = PyObject_IsTrue(acc->obj) ? r : acc;
		else {
			IrValue *x = fe_to_bool(fe, node, fe_to_ir(fe, node, acc, NULL));
			IrValue *y = fe_to_bool(fe, node, fe_to_ir(fe, node, r, NULL));
			if (!fe_broadcast_pair(fe, node, &x, &y))
				return NULL;
			acc = fe_tensor(fe, ir_binary(&fe->b, OP_AND, x, y));
		}
		lhs = rhs;
	}
	return lhs ? acc : NULL;
}

FeVal *fe_where(Fe *fe, PyObject *node, FeVal *c, FeVal *a, FeVal *b);

static bool block_has_effects(const IrBlock *b)
{
	for (const IrOp *op = b->first; op; op = op->next) {
		if (ir_opinfo(op->opc)->flags & IR_SIDE)
			return true;
		for (int r = 0; r < op->nregions; r++)
			if (block_has_effects(op->regions[r]))
				return true;
	}
	return false;
}

static bool is_none(const FeVal *v)
{
	return fe_is_const(v) && v->obj == Py_None;
}

/* `a if c else b` on a runtime c. Each side is lowered into a block of its
 * own; when neither has side effects (a load, a store, a call) both run and
 * a select picks (with Triton's promotion), otherwise an `if` runs only the
 * side chosen, as Triton does: then both sides must give one type (numbers
 * take the other side's), or both None. */
static FeVal *ifexp(Fe *fe, PyObject *node)
{
	FeVal *c = fe_expr(fe, child(fe, node, "test"));
	if (!c)
		return NULL;
	if (fe_is_const(c)) {
		int t = fe_truth(fe, node, c);
		if (t < 0)
			return NULL;
		return fe_expr(fe, child(fe, node, t ? "body" : "orelse"));
	}
	if (!fe_is_tensor(c) || ir_is_block(c->v->type))
		return fe_err(fe, node, IR_ERR_TYPE,
			      "the condition of a conditional expression must be a scalar (use tl.where for blocks)");
	IrBlock *blk[2] = {ir_block_new(fe->ctx), ir_block_new(fe->ctx)};
	FeVal *v[2] = {NULL, NULL};
	IrBuilder saved = fe->b;
	for (int i = 0; i < 2; i++) {
		ir_builder_at_end(&fe->b, blk[i]);
		fe->b.loc = saved.loc;
		v[i] = fe_expr(fe, child(fe, node, i == 0 ? "body" : "orelse"));
		if (!v[i]) {
			fe->b = saved;
			return NULL;
		}
	}
	fe->b = saved;
	FeVal *a = v[0], *b = v[1];
	if (!block_has_effects(blk[0]) && !block_has_effects(blk[1]) && !is_none(a) && !is_none(b)) {
		for (int i = 0; i < 2; i++)
			for (IrOp *op = blk[i]->first, *next; op; op = next) {
				next = op->next;
				ir_op_unlink(op);
				ir_block_insert_before(fe->b.block, fe->b.before, op);
			}
		/* pointers are not promoted: both sides must be the same pointer
		 * type (a tl.const pointer is not an ordinary one) */
		if (fe_is_tensor(a) && fe_is_tensor(b) && a->v->type != b->v->type &&
		    (ir_is_ptr(ir_scalar(a->v->type)) || ir_is_ptr(ir_scalar(b->v->type))))
			return fe_err(fe, node, IR_ERR_TYPE,
				      "Ternary expression with dynamic condition has inconsistent types %s and %s",
				      fe_tyname(fe, a->v->type), fe_tyname(fe, b->v->type));
		return fe_where(fe, node, c, a, b);
	}
	fe_set_loc(fe, node);
	IrValue *cond = fe_to_bool(fe, node, c->v);
	int ny = is_none(a) && is_none(b) ? 0 : 1;
	const IrType *t = NULL;
	if (ny) {
		if (is_none(a) || is_none(b))
			return fe_err(fe, node, IR_ERR_TYPE,
				      "Ternary expression with dynamic condition has inconsistent types: one side "
				      "gives None");
		if (fe_is_tensor(a) && fe_is_tensor(b) && a->v->type != b->v->type)
			return fe_err(fe, node, IR_ERR_TYPE,
				      "Ternary expression with dynamic condition has inconsistent types %s and %s",
				      fe_tyname(fe, a->v->type), fe_tyname(fe, b->v->type));
		t = fe_is_tensor(a) ? a->v->type : fe_is_tensor(b) ? b->v->type : NULL;
		if (!t) { /* two numbers: the wider (a float over an int) */
			const IrType *ta = py_scalar_type(fe, node, a->obj), *tb = py_scalar_type(fe, node, b->obj);
			if (!ta || !tb)
				return fe_err(fe, node, IR_ERR_TYPE,
					      "the sides of a conditional expression must be tensors or numbers");
			t = ir_is_float(ta) != ir_is_float(tb) ? (ir_is_float(ta) ? ta : tb)
			    : ir_type_bits(ta) >= ir_type_bits(tb) ? ta : tb;
		}
	}
	IrValue *ys[2];
	for (int i = 0; i < 2; i++) {
		ir_builder_at_end(&fe->b, blk[i]);
		fe_set_loc(fe, node);
		if (ny && !(ys[i] = fe_to_ir(fe, node, v[i], t))) {
			fe->b = saved;
			return NULL;
		}
		ir_yield(&fe->b, ny, ys + i);
	}
	fe->b = saved;
	fe_set_loc(fe, node);
	IrOp *op = ir_build(&fe->b, OP_IF, 1, &cond, ny, &t, 2);
	ir_op_set_region(op, 0, blk[0]);
	ir_op_set_region(op, 1, blk[1]);
	return ny ? fe_tensor(fe, &op->res[0]) : fe_none(fe);
}

static FeVal *joinedstr(Fe *fe, PyObject *node)
{
	PyObject *vals = child(fe, node, "values");
	PyObject *parts = fe_keep(fe, PyList_New(0));
	for (Py_ssize_t i = 0; i < PyList_Size(vals); i++) {
		PyObject *v = PyList_GetItem(vals, i);
		if (fe_kind(fe, v) == N_Constant) {
			PyList_Append(parts, child(fe, v, "value"));
			continue;
		}
		FeVal *x = fe_expr(fe, child(fe, v, "value"));
		if (!x)
			return NULL;
		if (!fe_is_const(x))
			return fe_err(fe, v, IR_ERR_VALUE, "f-strings may only format constexpr values");
		/* !s / !r / !a conversion, then the format spec (itself an f-string) */
		PyObject *conv = child(fe, v, "conversion");
		long cv = conv && PyLong_Check(conv) ? PyLong_AsLong(conv) : -1;
		PyObject *o = x->obj;
		if (cv == 's' || cv == 'r' || cv == 'a') {
			o = fe_keep(fe, cv == 's' ? PyObject_Str(o) : cv == 'r' ? PyObject_Repr(o) : PyObject_ASCII(o));
			if (!o)
				return fe_pyerr(fe, v, "f-string conversion");
		}
		PyObject *specn = child(fe, v, "format_spec");
		PyObject *spec = NULL;
		if (specn && specn != Py_None) {
			FeVal *sv = fe_expr(fe, specn);
			if (!sv)
				return NULL;
			spec = sv->obj;
		}
		PyObject *s = fe_keep(fe, PyObject_Format(o, spec));
		if (!s)
			return fe_pyerr(fe, v, "format()");
		PyList_Append(parts, s);
	}
	PyObject *empty = fe_keep(fe, PyUnicode_FromString(""));
	PyObject *r = fe_keep(fe, PyUnicode_Join(empty, parts));
	return r ? fe_const(fe, r) : fe_pyerr(fe, node, "f-string");
}

FeVal *fe_expr(Fe *fe, PyObject *node)
{
	if (!node || fe_has_error(fe))
		return NULL;
	IrLoc saved = fe->b.loc;
	fe_set_loc(fe, node);
	FeVal *r = NULL;
	FeNode k = fe_kind(fe, node);
	switch (k) {
	case N_Constant: r = fe_const(fe, child(fe, node, "value")); break;
	case N_Name: {
		PyObject *id = child(fe, node, "id");
		r = fe_lookup(fe, node, ir_intern(fe->ctx, PyUnicode_AsUTF8AndSize(id, NULL)));
		break;
	}
	case N_Attribute: {
		FeVal *o = fe_expr(fe, child(fe, node, "value"));
		fe_set_loc(fe, node);
		r = fe_getattr(fe, node, o, PyUnicode_AsUTF8AndSize(child(fe, node, "attr"), NULL));
		break;
	}
	case N_BinOp: {
		FeVal *a = fe_expr(fe, child(fe, node, "left"));
		FeVal *b = a ? fe_expr(fe, child(fe, node, "right")) : NULL;
		fe_set_loc(fe, node);
		r = fe_binop(fe, node, fe_kind(fe, child(fe, node, "op")), a, b);
		break;
	}
	case N_UnaryOp: {
		FeVal *a = fe_expr(fe, child(fe, node, "operand"));
		fe_set_loc(fe, node);
		r = fe_unop(fe, node, fe_kind(fe, child(fe, node, "op")), a);
		break;
	}
	case N_BoolOp: r = boolop(fe, node); break;
	case N_Compare: r = compare(fe, node); break;
	case N_IfExp: r = ifexp(fe, node); break;
	case N_Call: r = fe_call(fe, node); break;
	case N_Subscript: r = subscript(fe, node); break;
	case N_Tuple:
	case N_List: r = tuple_expr(fe, node); break;
	case N_JoinedStr: r = joinedstr(fe, node); break;
	case N_Lambda:
		r = fe_err(fe, node, IR_ERR_SYNTAX,
			   "unsupported syntax: lambda expressions are not supported in @jit functions "
			   "(define a @jit function instead)");
		break;
	case N_Starred:
		r = fe_err(fe, node, IR_ERR_SYNTAX,
			   "unsupported syntax: starred expressions are only allowed in call arguments");
		break;
	case N_ListComp: r = fe_listcomp(fe, node); break;
	case N_GeneratorExp:
	case N_DictComp:
	case N_SetComp:
		r = fe_err(fe, node, IR_ERR_SYNTAX,
			   "unsupported syntax: only list comprehensions are supported in @jit functions "
			   "(no generator, dict or set comprehensions)");
		break;
	case N_Dict:
	case N_Set:
		r = fe_err(fe, node, IR_ERR_SYNTAX,
			   "unsupported syntax: dict and set displays are not supported in @jit functions");
		break;
	case N_NamedExpr:
		r = fe_err(fe, node, IR_ERR_SYNTAX,
			   "unsupported syntax: assignment expressions (:=) are not supported in @jit functions");
		break;
	default: {
		const char *tn = fe_str(fe, fe_attr(fe, (PyObject *)Py_TYPE(node), "__name__"));
		r = fe_err(fe, node, IR_ERR_SYNTAX,
			   "unsupported syntax: '%s' expressions are not supported in @jit functions", tn);
	}
	}
	fe->b.loc = saved;
	return r;
}

/* ---- calls ---------------------------------------------------------------- */

static bool is_builtin(Fe *fe, PyObject *o, const char *name)
{
	PyObject *b = PyDict_GetItemString(PyModule_GetDict(fe->builtins), name);
	return b && b == o;
}

static FeVal *python_call(Fe *fe, PyObject *node, PyObject *f, int nargs, FeVal **args, int nkw,
			  const char **kwn, FeVal **kwv)
{
	PyObject *tup = fe_keep(fe, PyTuple_New(nargs));
	for (int i = 0; i < nargs; i++) {
		if (!fe_is_const(args[i]))
			return fe_err(fe, node, IR_ERR_VALUE,
				      "argument %d of %s() must be a constexpr value here", i + 1,
				      fe_str(fe, fe_attr(fe, f, "__name__") ? fe_attr(fe, f, "__name__") : f));
		Py_INCREF(args[i]->obj);
		PyTuple_SetItem(tup, i, args[i]->obj);
	}
	PyObject *kw = NULL;
	if (nkw) {
		kw = fe_keep(fe, PyDict_New());
		for (int i = 0; i < nkw; i++) {
			if (!fe_is_const(kwv[i]))
				return fe_err(fe, node, IR_ERR_VALUE, "keyword argument '%s' must be constexpr", kwn[i]);
			PyDict_SetItemString(kw, kwn[i], kwv[i]->obj);
		}
	}
	PyObject *r = fe_keep(fe, PyObject_Call(f, tup, kw));
	if (!r)
		return fe_pyerr(fe, node, "a compile-time call");
	return fe_const(fe, unwrap(fe, r));
}

static FeVal *namedtuple_call(Fe *fe, PyObject *node, PyObject *cls, PyObject *fields, int n, FeVal **av,
			      int nk, const char **kwn, FeVal **kwv)
{
	int nf = (int)PyTuple_Size(fields);
	const char *cname = fe_str(fe, fe_attr(fe, cls, "__name__"));
	if (n > nf)
		return fe_err(fe, node, IR_ERR_TYPE, "%s() takes %d fields, got %d arguments", cname, nf, n);
	FeVal **items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(nf + 1));
	for (int i = 0; i < n; i++)
		items[i] = av[i];
	for (int k = 0; k < nk; k++) {
		int j = 0;
		while (j < nf && strcmp(PyUnicode_AsUTF8AndSize(PyTuple_GetItem(fields, j), NULL), kwn[k]))
			j++;
		if (j == nf)
			return fe_err(fe, node, IR_ERR_TYPE, "%s() has no field '%s'", cname, kwn[k]);
		if (items[j])
			return fe_err(fe, node, IR_ERR_TYPE, "%s() got two values for field '%s'", cname, kwn[k]);
		items[j] = kwv[k];
	}
	PyObject *defaults = fe_attr(fe, cls, "_field_defaults");
	bool all_const = true;
	for (int j = 0; j < nf; j++) {
		if (!items[j]) {
			PyObject *d = defaults && PyDict_Check(defaults)
					      ? PyDict_GetItem(defaults, PyTuple_GetItem(fields, j))
					      : NULL;
			if (!d)
				return fe_err(fe, node, IR_ERR_TYPE, "%s() is missing field '%s'", cname,
					      PyUnicode_AsUTF8AndSize(PyTuple_GetItem(fields, j), NULL));
			items[j] = fe_const(fe, d);
		}
		all_const = all_const && fe_is_const(items[j]);
	}
	PyErr_Clear();
	if (all_const)
		return python_call(fe, node, cls, nf, items, 0, NULL, NULL);
	FeVal *t = make_tuple(fe, nf, items);
	t->obj = cls;
	return t;
}

FeVal *fe_call(Fe *fe, PyObject *node)
{
	FeVal *f = fe_expr(fe, child(fe, node, "func"));
	if (!f)
		return NULL;
	PyObject *args = child(fe, node, "args"), *kws = child(fe, node, "keywords");
	Py_ssize_t na = PyList_Size(args), nk = PyList_Size(kws);
	int cap = (int)na + 16;
	FeVal **av = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)cap);
	int n = 0;
	for (Py_ssize_t i = 0; i < na; i++) {
		PyObject *a = PyList_GetItem(args, i);
		if (fe_kind(fe, a) == N_Starred) {
			FeVal *s = fe_expr(fe, child(fe, a, "value"));
			if (!s)
				return NULL;
			int m;
			FeVal **items;
			if (s->kind == V_TUPLE) {
				m = s->n;
				items = s->items;
			} else if (fe_is_const(s) && (PyTuple_Check(s->obj) || PyList_Check(s->obj))) {
				PyObject *t = fe_keep(fe, PySequence_Tuple(s->obj));
				m = (int)PyTuple_Size(t);
				items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(m + 1));
				for (int j = 0; j < m; j++)
					items[j] = fe_const(fe, PyTuple_GetItem(t, j));
			} else
				return fe_err(fe, a, IR_ERR_SYNTAX,
					      "unsupported syntax: *args must unpack a tuple");
			if (n + m >= cap) {
				cap = n + m + 16;
				FeVal **nv = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)cap);
				memcpy(nv, av, sizeof(FeVal *) * (size_t)n);
				av = nv;
			}
			for (int j = 0; j < m; j++)
				av[n++] = items[j];
			continue;
		}
		if (n >= cap)
			return fe_err(fe, a, IR_ERR_VALUE, "too many arguments");
		av[n] = fe_expr(fe, a);
		if (!av[n])
			return NULL;
		n++;
	}
	const char **kwn = ir_alloc(fe->ctx, sizeof(char *) * (size_t)(nk + 1));
	FeVal **kwv = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(nk + 1));
	for (Py_ssize_t i = 0; i < nk; i++) {
		PyObject *k = PyList_GetItem(kws, i);
		PyObject *an = child(fe, k, "arg");
		if (an == Py_None)
			return fe_err(fe, k, IR_ERR_SYNTAX,
				      "unsupported syntax: **kwargs in calls are not supported in @jit functions");
		kwn[i] = ir_intern(fe->ctx, PyUnicode_AsUTF8AndSize(an, NULL));
		kwv[i] = fe_expr(fe, child(fe, k, "value"));
		if (!kwv[i])
			return NULL;
	}
	fe_set_loc(fe, node);
	if (f->kind == V_METHOD)
		return fe_builtin_call(fe, node, f->name, f->self, n, av, (int)nk, kwn, kwv);
	if (!fe_is_const(f))
		return fe_err(fe, node, IR_ERR_TYPE, "this value is not callable");
	PyObject *o = f->obj;
	const char *bname = fe_builtin_name(fe, o);
	if (bname && strcmp(bname, "extern") == 0) {
		PyObject *en = fe_attr(fe, o, "__ctriton_extern__");
		bname = ir_fmt(fe->ctx, "extern:%s", en ? fe_str(fe, en) : "?");
	}
	if (bname)
		return fe_builtin_call(fe, node, bname, NULL, n, av, (int)nk, kwn, kwv);
	if (fe_is_jit(fe, o))
		return fe_inline_call(fe, node, o, n, av, (int)nk, kwn, kwv);
	/* Python builtins */
	if (is_builtin(fe, o, "min") || is_builtin(fe, o, "max")) {
		bool all_const = true;
		for (int i = 0; i < n; i++)
			all_const = all_const && fe_is_const(av[i]);
		if (all_const)
			return python_call(fe, node, o, n, av, (int)nk, kwn, kwv);
		if (n < 2)
			return fe_err(fe, node, IR_ERR_VALUE, "min()/max() on tensors need at least two arguments");
		const char *bn = is_builtin(fe, o, "min") ? "minimum" : "maximum";
		FeVal *acc = av[0];
		for (int i = 1; acc && i < n; i++) {
			FeVal *pair[2] = {acc, av[i]};
			acc = fe_builtin_call(fe, node, bn, NULL, 2, pair, 0, NULL, NULL);
		}
		return acc;
	}
	if (is_builtin(fe, o, "print"))
		return fe_builtin_call(fe, node, "__print__", NULL, n, av, (int)nk, kwn, kwv);
	if (is_builtin(fe, o, "isinstance")) {
		if (n != 2 || !fe_is_const(av[1]))
			return fe_err(fe, node, IR_ERR_VALUE, "isinstance() takes a value and a constexpr class");
		if (fe_is_tensor(av[0])) {
			int r = PyObject_IsSubclass(fe->cls_tensor, av[1]->obj);
			PyErr_Clear();
			return fe_const(fe, r == 1 ? Py_True : Py_False);
		}
		if (av[0]->kind == V_TUPLE) { /* a namedtuple or descriptor by its class */
			PyObject *cls = av[0]->obj ? av[0]->obj : (PyObject *)&PyTuple_Type;
			int r = PyObject_IsSubclass(cls, av[1]->obj);
			PyErr_Clear();
			return fe_const(fe, r == 1 ? Py_True : Py_False);
		}
		return python_call(fe, node, o, n, av, 0, NULL, NULL);
	}
	if (is_builtin(fe, o, "len")) {
		if (n == 1 && av[0]->kind == V_TUPLE) {
			PyObject *l = fe_keep(fe, PyLong_FromLong(av[0]->n));
			return fe_const(fe, l);
		}
		if (n == 1 && fe_is_tensor(av[0])) {
			const IrType *t = av[0]->v->type;
			if (!ir_is_block(t))
				return fe_err(fe, node, IR_ERR_TYPE, "len() of a scalar");
			return fe_const(fe, fe_keep(fe, PyLong_FromLongLong(t->shape[0])));
		}
		return python_call(fe, node, o, n, av, 0, NULL, NULL);
	}
	if (is_builtin(fe, o, "range"))
		return fe_err(fe, node, IR_ERR_SYNTAX, "range() can only be used as the iterable of a for loop");
	if (is_builtin(fe, o, "int") || is_builtin(fe, o, "float") || is_builtin(fe, o, "bool")) {
		if (n == 1 && fe_is_tensor(av[0]))
			return fe_err(fe, node, IR_ERR_TYPE,
				      "int()/float()/bool() need a constexpr value; use x.to(tl.int32) etc. on tensors");
		return python_call(fe, node, o, n, av, (int)nk, kwn, kwv);
	}
	/* tuple(t) / tl.tuple(t) of a tuple holding tensors: the same tuple */
	if (n == 1 && nk == 0 && av[0]->kind == V_TUPLE &&
	    (is_builtin(fe, o, "tuple") || is_builtin(fe, o, "list") || o == fe_attr(fe, fe->tl, "tuple")))
		return av[0];
	/* hasattr / getattr on a tensor or a tuple: what x.name would give */
	if ((is_builtin(fe, o, "hasattr") || is_builtin(fe, o, "getattr")) && nk == 0 && n >= 2 && n <= 3 &&
	    !fe_is_const(av[0]) && fe_is_const(av[1]) && PyUnicode_Check(av[1]->obj)) {
		bool has = is_builtin(fe, o, "hasattr");
		if (has && n != 2)
			return fe_err(fe, node, IR_ERR_VALUE, "hasattr() takes 2 arguments");
		FeVal *r = fe_getattr(fe, node, av[0], PyUnicode_AsUTF8AndSize(av[1]->obj, NULL));
		if (!r && (has || n == 3)) {
			ir_ctx_clear_error(fe->ctx);
			PyErr_Clear();
		}
		if (has)
			return fe_const(fe, r ? Py_True : Py_False);
		return r ? r : n == 3 ? av[2] : NULL;
	}
	static const char *pure[] = {"abs", "getattr", "hasattr", "tuple", "list", "str", "round",
				     "divmod", "pow", "sum", "any", "all", "type", "repr", NULL};
	for (int i = 0; pure[i]; i++)
		if (is_builtin(fe, o, pure[i])) {
			if (strcmp(pure[i], "abs") == 0 && n == 1 && fe_is_tensor(av[0]))
				return fe_builtin_call(fe, node, "abs", NULL, n, av, 0, NULL, NULL);
			return python_call(fe, node, o, n, av, (int)nk, kwn, kwv);
		}
	/* a NamedTuple class: its fields from the arguments (and the class's
	 * defaults); a constant tuple when every field is one */
	PyObject *fields = PyType_Check(o) && PyType_IsSubtype((PyTypeObject *)o, &PyTuple_Type)
				   ? fe_attr(fe, o, "_fields")
				   : NULL;
	if (fields && PyTuple_Check(fields))
		return namedtuple_call(fe, node, o, fields, n, av, (int)nk, kwn, kwv);
	/* ctriton.language classes (pointer_type, constexpr, block_type, dtype) and
	 * functions marked as compile-time helpers */
	PyObject *mod = fe_attr(fe, o, "__module__");
	const char *ms = mod && PyUnicode_Check(mod) ? PyUnicode_AsUTF8AndSize(mod, NULL) : "";
	PyObject *cf = fe_attr(fe, o, "__ctriton_constexpr_function__");
	if (cf || ((strncmp(ms, "ctriton.language", 16) == 0 || strncmp(ms, "triton.language", 15) == 0) &&
		   PyType_Check(o)))
		return python_call(fe, node, o, n, av, (int)nk, kwn, kwv);
	/* methods of ctriton.language objects (x.dtype.is_floating(), ...) */
	PyObject *self = PyType_Check(o) ? NULL : fe_attr(fe, o, "__self__");
	if (self && !PyModule_Check(self)) {
		PyObject *smod = fe_attr(fe, (PyObject *)Py_TYPE(self), "__module__");
		const char *sm = smod && PyUnicode_Check(smod) ? PyUnicode_AsUTF8AndSize(smod, NULL) : "";
		if (strncmp(sm, "ctriton.language", 16) == 0)
			return python_call(fe, node, o, n, av, (int)nk, kwn, kwv);
	}
	PyObject *nm = fe_attr(fe, o, "__name__");
	return fe_err(fe, node, IR_ERR_TYPE,
		      "calling a non-jit Python function '%s' is not allowed in @jit functions: only "
		      "@jit functions, tl builtins and compile-time helpers can be called",
		      nm ? fe_str(fe, nm) : fe_str(fe, o));
}

bool fe_shape(Fe *fe, PyObject *node, FeVal *v, int *rank, int64_t *shape)
{
	if (!v)
		return false;
	if (fe_is_const(v) && PyLong_Check(v->obj)) {
		*rank = 1;
		shape[0] = PyLong_AsLongLong(v->obj);
		return true;
	}
	if (!fe_is_const(v) || !(PyTuple_Check(v->obj) || PyList_Check(v->obj))) {
		fe_err(fe, node, IR_ERR_VALUE, "a shape must be a tuple or list of constexpr ints");
		return false;
	}
	PyObject *t = fe_keep(fe, PySequence_Tuple(v->obj));
	Py_ssize_t n = PyTuple_Size(t);
	if (n > IR_MAX_RANK) {
		fe_err(fe, node, IR_ERR_VALUE, "a shape of %d dimensions (ctriton's blocks have at most %d)", (int)n,
		       IR_MAX_RANK);
		return false;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *d = unwrap(fe, PyTuple_GetItem(t, i));
		if (!PyLong_Check(d)) {
			fe_err(fe, node, IR_ERR_VALUE, "shape dimension %d is not a constexpr int", (int)i);
			return false;
		}
		shape[i] = PyLong_AsLongLong(d);
	}
	*rank = (int)n;
	return true;
}
