/* fe_blockptr.c: block pointers (tl.make_block_ptr, tl.advance) and the
 * loads and stores through them.
 *
 * As in Triton, a block pointer exists only in the frontend: a tuple whose
 * class is tl._block_ptr, with items (base, shape, strides, offsets, spec).
 * base is a scalar pointer; shape, strides and offsets are tuples of rank
 * integers (constants or integer scalars); spec is the constant list
 * [block_shape, order, constant shape, constant strides]. A constant shape
 * or stride lives in the spec and its slot in the tuple holds None, so that a
 * block pointer carried through a loop carries its base, its runtime shape
 * and strides and its offsets, while constants (a unit stride, a constexpr
 * extent) stay constants in the body. `tl.advance(p, deltas)` adds to the
 * offsets. `order` is checked to be a permutation and otherwise unused: it
 * is a layout hint, and the results never depend on it.
 *
 * `tl.load(p, boundary_check=dims, padding_option=pad)` becomes an ordinary
 * load of the pointer block
 *     (base + sum_d off_d * stride_d) + sum_d arange(0, B_d) * stride_d
 * (the first sum a scalar in int64, then one broadcast term per dim; a unit
 * stride is not multiplied, so the axis analysis sees the contiguous dim),
 * masked by 0 <= off_d + arange(0, B_d) < shape_d for the dims in dims only
 * (written arange >= -off_d and arange < shape_d - off_d, the form of the
 * tutorials' pointer code; unchecked dims are taken to be in bounds), with
 * `other` 0 for "zero", NaN for "nan" and none for "" (undefined). Stores
 * drop the masked-out elements. So every backend path (the CPU, coalescing,
 * cp.async pipelining, tensor cores) applies as to hand-written pointer code.
 * Bounds that constants prove are not checked.
 */
#include <math.h>
#include <string.h>

#include "python/frontend/fe.h"

enum { BP_BASE, BP_SHAPE, BP_STRIDES, BP_OFFSETS, BP_SPEC, BP_NITEMS };
enum { SPEC_BLOCK, SPEC_ORDER, SPEC_SHAPE, SPEC_STRIDES, SPEC_N };

bool fe_is_blockptr(Fe *fe, const FeVal *v)
{
	return v && v->kind == V_TUPLE && v->obj && fe->cls_blockptr && v->obj == fe->cls_blockptr && v->n == BP_NITEMS;
}

static bool given(const FeVal *v)
{
	return v && !(fe_is_const(v) && v->obj == Py_None);
}

/* The items of a tuple or list value, or the value itself as one item
 * (Triton takes `shape=N` for (N,)). */
static bool list_like(Fe *fe, PyObject *node, FeVal *v, int *n, FeVal ***items)
{
	if (v && v->kind == V_TUPLE && !fe_is_blockptr(fe, v)) {
		*n = v->n;
		*items = v->items;
		return true;
	}
	if (v && fe_is_const(v) && (PyTuple_Check(v->obj) || PyList_Check(v->obj))) {
		PyObject *t = fe_keep(fe, PySequence_Tuple(v->obj));
		if (!t)
			return fe_pyerr(fe, node, "tl.make_block_ptr()") != NULL;
		*n = (int)PyTuple_Size(t);
		*items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(*n + 1));
		for (int i = 0; i < *n; i++)
			(*items)[i] = fe_const(fe, PyTuple_GetItem(t, i));
		return true;
	}
	*n = 1;
	*items = ir_alloc(fe->ctx, sizeof(FeVal *));
	(*items)[0] = v;
	return true;
}

/* shape, strides, offsets or advance's deltas: integer constants or integer
 * scalars (a bool becomes 0 or 1, as Triton's int1 does). */
static FeVal **dyn_items(Fe *fe, PyObject *node, FeVal *v, const char *name, int *n)
{
	FeVal **items;
	if (!list_like(fe, node, v, n, &items))
		return NULL;
	FeVal **out = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(*n + 1));
	for (int i = 0; i < *n; i++) {
		FeVal *x = items[i];
		int64_t c;
		if (fe_const_int_of(x, &c)) {
			out[i] = x;
			continue;
		}
		if (fe_is_const(x) && PyBool_Check(x->obj)) {
			out[i] = fe_const_long(fe, x->obj == Py_True);
			continue;
		}
		if (fe_is_tensor(x) && ir_is_block(x->v->type))
			return fe_err(fe, node, IR_ERR_VALUE, "Expected `%s` entries to be scalar tensors", name);
		if (!fe_is_tensor(x) || !ir_is_int(x->v->type))
			return fe_err(fe, node, IR_ERR_VALUE, "Expected `%s` entries to be integers", name);
		if (x->v->type->kind == TY_I1) {
			IrValue *w = fe_cast(fe, node, x->v, ir_type(fe->ctx, TY_I32), NULL, false);
			if (!w)
				return NULL;
			x = fe_tensor(fe, w);
		}
		out[i] = x;
	}
	return out;
}

/* block_shape or order: constant ints (positive ones for block_shape). */
static bool static_items(Fe *fe, PyObject *node, FeVal *v, const char *name, bool positive, int *n, int64_t *out)
{
	FeVal **items;
	if (!list_like(fe, node, v, n, &items))
		return false;
	if (*n > IR_MAX_RANK)
		return fe_err(fe, node, IR_ERR_VALUE, "`%s` has %d dimensions; ctriton's blocks have at most %d", name,
			      *n, IR_MAX_RANK) != NULL;
	for (int i = 0; i < *n; i++) {
		if (!fe_const_int_of(items[i], &out[i]))
			return fe_err(fe, node, IR_ERR_VALUE, "Expected `%s` to contain only integers", name) != NULL;
		if (positive && out[i] <= 0)
			return fe_err(fe, node, IR_ERR_VALUE, "Expected `%s` to contain only positive integers",
				      name) != NULL;
	}
	return true;
}

static PyObject *spec_of(FeVal *bp)
{
	return bp->items[BP_SPEC]->obj;
}

/* The block shape (checked when the block pointer was made). */
static int bp_block(FeVal *bp, int64_t *bs)
{
	PyObject *t = PyList_GetItem(spec_of(bp), SPEC_BLOCK);
	int rank = (int)PyTuple_Size(t);
	for (int i = 0; i < rank; i++)
		bs[i] = PyLong_AsLongLong(PyTuple_GetItem(t, i));
	return rank;
}

/* Item d of the shape, strides (with the spec's constants) or offsets. */
static FeVal *bp_item(Fe *fe, FeVal *bp, int which, int d)
{
	FeVal *t = bp->items[which];
	FeVal *x = t->kind == V_TUPLE ? t->items[d] : fe_const(fe, PyTuple_GetItem(t->obj, d));
	if (which == BP_OFFSETS || given(x))
		return x;
	PyObject *c = PyList_GetItem(spec_of(bp), which == BP_SHAPE ? SPEC_SHAPE : SPEC_STRIDES);
	return fe_const(fe, PyTuple_GetItem(c, d));
}

static FeVal *bp_tuple(Fe *fe, FeVal *bp, int which)
{
	int64_t bs[IR_MAX_RANK];
	int rank = bp_block(bp, bs);
	FeVal **items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(rank + 1));
	for (int d = 0; d < rank; d++)
		items[d] = bp_item(fe, bp, which, d);
	return fe_make_tuple(fe, rank, items);
}

static FeVal *bp_build(Fe *fe, FeVal *base, FeVal *shape, FeVal *strides, FeVal *offsets, FeVal *spec)
{
	FeVal **items = ir_alloc(fe->ctx, sizeof(FeVal *) * BP_NITEMS);
	items[BP_BASE] = base;
	items[BP_SHAPE] = shape;
	items[BP_STRIDES] = strides;
	items[BP_OFFSETS] = offsets;
	items[BP_SPEC] = spec;
	FeVal *r = ir_alloc(fe->ctx, sizeof(FeVal));
	r->kind = V_TUPLE;
	r->n = BP_NITEMS;
	r->items = items;
	r->obj = fe->cls_blockptr;
	return r;
}

/* Splits shape or strides into the runtime tuple (None where constant) and
 * the constant tuple (None where runtime, a new reference). */
static FeVal *split_consts(Fe *fe, int rank, FeVal **v, PyObject **consts)
{
	FeVal **rt = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(rank + 1));
	PyObject *c = PyTuple_New(rank);
	for (int d = 0; c && d < rank; d++) {
		int64_t x;
		bool k = fe_const_int_of(v[d], &x);
		rt[d] = k ? fe_none(fe) : v[d];
		PyTuple_SetItem(c, d, k ? PyLong_FromLongLong(x) : Py_NewRef(Py_None));
	}
	*consts = c;
	return fe_make_tuple(fe, rank, rt);
}

/* tl.make_block_ptr(base, shape, strides, offsets, block_shape, order) */
static FeVal *bp_make(Fe *fe, PyObject *node, FeVal **a)
{
	if (PyErr_WarnEx(PyExc_UserWarning,
			 "tl.make_block_ptr is deprecated. Use TensorDescriptor or tl.make_tensor_descriptor instead.",
			 1) < 0)
		return fe_pyerr(fe, node, "tl.make_block_ptr()");
	FeVal *base = a[0];
	if (!fe_is_tensor(base) || ir_is_block(base->v->type) || !ir_is_ptr(base->v->type))
		return fe_err(fe, node, IR_ERR_VALUE, "Expected `base` to be a scalar pointer type");
	int ns, nst, no, nb, nord;
	FeVal **sh = dyn_items(fe, node, a[1], "shape", &ns);
	FeVal **st = sh ? dyn_items(fe, node, a[2], "strides", &nst) : NULL;
	FeVal **off = st ? dyn_items(fe, node, a[3], "offsets", &no) : NULL;
	int64_t bs[IR_MAX_RANK], ord[IR_MAX_RANK];
	if (!off || !static_items(fe, node, a[4], "block_shape", true, &nb, bs) ||
	    !static_items(fe, node, a[5], "order", false, &nord, ord))
		return NULL;
	int rank = nb;
	if (rank == 0)
		return fe_err(fe, node, IR_ERR_VALUE, "Expected `make_block_ptr` to describe at least one dimension");
	const char *fields[4] = {"shape", "strides", "offsets", "order"};
	int lens[4] = {ns, nst, no, nord};
	for (int i = 0; i < 4; i++)
		if (lens[i] != rank)
			return fe_err(fe, node, IR_ERR_VALUE,
				      "Expected `shape`, `strides`, `offsets`, `block_shape`, and `order` to have the "
				      "same length; `%s` has length %d but expected %d",
				      fields[i], lens[i], rank);
	bool seen[IR_MAX_RANK] = {false};
	for (int d = 0; d < rank; d++) {
		if (ord[d] < 0 || ord[d] >= rank || seen[ord[d]])
			return fe_err(fe, node, IR_ERR_VALUE, "Expected `order` to be a permutation of 0..%d",
				      rank - 1);
		seen[ord[d]] = true;
	}
	PyObject *shc, *stc;
	FeVal *shape = split_consts(fe, rank, sh, &shc);
	FeVal *strides = split_consts(fe, rank, st, &stc);
	PyObject *bt = PyTuple_New(rank), *ot = PyTuple_New(rank);
	for (int d = 0; bt && ot && d < rank; d++) {
		PyTuple_SetItem(bt, d, PyLong_FromLongLong(bs[d]));
		PyTuple_SetItem(ot, d, PyLong_FromLongLong(ord[d]));
	}
	PyObject *spec = bt && ot && shc && stc ? fe_keep(fe, Py_BuildValue("[NNNN]", bt, ot, shc, stc)) : NULL;
	if (!spec) {
		Py_XDECREF(bt);
		Py_XDECREF(ot);
		Py_XDECREF(shc);
		Py_XDECREF(stc);
		return fe_pyerr(fe, node, "tl.make_block_ptr()");
	}
	return bp_build(fe, base, shape, strides, fe_make_tuple(fe, rank, off), fe_const(fe, spec));
}

/* tl.advance(ptr, offsets) */
static FeVal *bp_advance(Fe *fe, PyObject *node, FeVal *bp, FeVal *deltas)
{
	if (!fe_is_blockptr(fe, bp))
		return fe_err(fe, node, IR_ERR_VALUE,
			      "`tl.advance` only supports block pointers created by `tl.make_block_ptr`");
	int64_t bs[IR_MAX_RANK];
	int rank = bp_block(bp, bs), n;
	FeVal **dv = dyn_items(fe, node, deltas, "offsets", &n);
	if (!dv)
		return NULL;
	if (n != rank)
		return fe_err(fe, node, IR_ERR_VALUE, "Expected `offsets` to have length %d but received %d", rank, n);
	FeVal **off = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(rank + 1));
	for (int d = 0; d < rank; d++) {
		FeVal *o = bp_item(fe, bp, BP_OFFSETS, d);
		int64_t c;
		off[d] = fe_const_int_of(dv[d], &c) && c == 0 ? o : fe_arith(fe, node, N_Add, o, dv[d], false);
		if (!off[d])
			return NULL;
	}
	return bp_build(fe, bp->items[BP_BASE], bp->items[BP_SHAPE], bp->items[BP_STRIDES],
			fe_make_tuple(fe, rank, off), bp->items[BP_SPEC]);
}

/* boundary_check: None, a dim, or a tuple/list of distinct dims in [0, rank). */
static bool checked_dims(Fe *fe, PyObject *node, FeVal *bc, int rank, bool *checked)
{
	for (int d = 0; d < rank; d++)
		checked[d] = false;
	if (!given(bc))
		return true;
	FeVal **items;
	int n;
	if (!list_like(fe, node, bc, &n, &items))
		return false;
	for (int i = 0; i < n; i++) {
		int64_t d;
		if (!fe_const_int_of(items[i], &d) || d < 0 || d >= rank)
			return fe_err(fe, node, IR_ERR_VALUE,
				      "Expected `boundary_check` to contain dimensions in [0, %d)", rank) != NULL;
		if (checked[d])
			return fe_err(fe, node, IR_ERR_VALUE, "Duplicate dimension in `boundary_check`") != NULL;
		checked[d] = true;
	}
	return true;
}

/* An integer scalar widened to int64 (constants stay constants). */
static FeVal *wide(Fe *fe, PyObject *node, FeVal *x)
{
	if (!fe_is_tensor(x) || x->v->type->kind == TY_I64)
		return x;
	IrValue *w = fe_cast(fe, node, x->v, ir_type(fe->ctx, TY_I64), NULL, false);
	return w ? fe_tensor(fe, w) : NULL;
}

/* arange(0, n) with dims added so that it lies along dim d of rank dims. */
static FeVal *range_along(Fe *fe, PyObject *node, int64_t n, int d, int rank)
{
	FeVal *ra[2] = {fe_const_long(fe, 0), fe_const_long(fe, n)};
	FeVal *idx = fe_builtin_call(fe, node, "arange", NULL, 2, ra, 0, NULL, NULL);
	for (int j = 0; idx && j < rank; j++)
		if (j != d) {
			FeVal *ea[2] = {idx, fe_const_long(fe, j)};
			idx = fe_builtin_call(fe, node, "expand_dims", NULL, 2, ea, 0, NULL, NULL);
		}
	return idx;
}

static FeVal *and_masks(Fe *fe, PyObject *node, FeVal *m, FeVal *x)
{
	if (!x)
		return m;
	return m ? fe_binop(fe, node, N_BitAnd, m, x) : x;
}

/* The pointer block of the block pointer and its bounds mask over the
 * checked dims (NULL when none is checked or constants prove them). */
static bool bp_address(Fe *fe, PyObject *node, FeVal *bp, const bool *checked, FeVal **ptrs, FeVal **mask)
{
	int64_t bs[IR_MAX_RANK];
	int rank = bp_block(bp, bs);
	/* the block's first element: base + sum_d off_d * stride_d, in int64 */
	FeVal *p = bp->items[BP_BASE], *sum = NULL;
	int64_t csum = 0;
	for (int d = 0; d < rank; d++) {
		FeVal *off = bp_item(fe, bp, BP_OFFSETS, d), *st = bp_item(fe, bp, BP_STRIDES, d);
		int64_t oc, sc, prod;
		bool oconst = fe_const_int_of(off, &oc), sconst = fe_const_int_of(st, &sc);
		if ((oconst && oc == 0) || (sconst && sc == 0))
			continue;
		if (oconst && sconst) { /* folded */
			if (__builtin_mul_overflow(oc, sc, &prod) || __builtin_add_overflow(csum, prod, &csum))
				return fe_err(fe, node, IR_ERR_VALUE, "the block pointer's offset overflows int64") !=
				       NULL;
			continue;
		}
		FeVal *wo = wide(fe, node, off), *ws = wo ? wide(fe, node, st) : NULL;
		FeVal *t = (sconst && sc == 1)   ? wo
			   : (oconst && oc == 1) ? ws
			   : ws                  ? fe_arith(fe, node, N_Mult, wo, ws, false)
						 : NULL;
		sum = t && sum ? fe_arith(fe, node, N_Add, sum, t, false) : t;
		if (!sum)
			return false;
	}
	if (sum)
		p = fe_arith(fe, node, N_Add, p, sum, false);
	if (p && csum)
		p = fe_arith(fe, node, N_Add, p, fe_const_long(fe, csum), false);
	if (!p)
		return false;
	/* one term per dim: arange(0, B_d) * stride_d along dim d; the mask
	 * 0 <= off_d + arange < shape_d as arange >= -off_d, arange < shape_d - off_d */
	FeVal *m = NULL;
	bool full = true;
	for (int d = 0; d < rank; d++) {
		FeVal *idx = range_along(fe, node, bs[d], d, rank);
		if (!idx)
			return false;
		FeVal *st = bp_item(fe, bp, BP_STRIDES, d), *term;
		int64_t sc;
		if (fe_const_int_of(st, &sc)) {
			if (sc == 0) {
				term = NULL;
				full = false;
			} else if (sc == 1) {
				term = idx;
			} else {
				/* in int32 when B_d * |stride| fits */
				int64_t span;
				IrValue *ix = idx->v;
				if (sc == INT64_MIN || __builtin_mul_overflow(bs[d], sc < 0 ? -sc : sc, &span) ||
				    span > INT32_MAX)
					ix = fe_cast(fe, node, idx->v, ir_type(fe->ctx, TY_I64), NULL, false);
				term = ix ? fe_arith(fe, node, N_Mult, fe_tensor(fe, ix), st, false) : NULL;
				if (!term)
					return false;
			}
		} else {
			term = fe_arith(fe, node, N_Mult, idx, st, false);
		}
		if (term)
			p = fe_arith(fe, node, N_Add, p, term, false);
		if (!p || fe_has_error(fe))
			return false;
		if (!checked[d])
			continue;
		FeVal *off = bp_item(fe, bp, BP_OFFSETS, d), *sh = bp_item(fe, bp, BP_SHAPE, d);
		int64_t oc, shc;
		bool oconst = fe_const_int_of(off, &oc), shconst = fe_const_int_of(sh, &shc);
		FeVal *dm = NULL; /* this dim's bounds, on the small [.., B_d, ..] shape */
		if (!(oconst && oc >= 0)) {
			FeVal *lo =
				oconst ? fe_const_long(fe, -oc) : fe_arith(fe, node, N_Sub, fe_const_long(fe, 0), off, false);
			dm = lo ? fe_cmpop(fe, node, N_GtE, idx, lo) : NULL;
		}
		if (!(oconst && shconst && oc + bs[d] <= shc)) {
			FeVal *hi = oconst && shconst   ? fe_const_long(fe, shc - oc)
				    : oconst && oc == 0 ? sh
							: fe_arith(fe, node, N_Sub, sh, off, false);
			dm = and_masks(fe, node, dm, hi ? fe_cmpop(fe, node, N_Lt, idx, hi) : NULL);
		}
		m = and_masks(fe, node, m, dm);
		if (fe_has_error(fe))
			return false;
	}
	if (!full || !ir_is_block(p->v->type)) {
		/* a zero stride leaves its dim out of the sum: broadcast */
		PyObject *shape = PyTuple_New(rank);
		for (int d = 0; shape && d < rank; d++)
			PyTuple_SetItem(shape, d, PyLong_FromLongLong(bs[d]));
		FeVal *ba[2] = {p, fe_const(fe, fe_keep(fe, shape))};
		p = shape ? fe_builtin_call(fe, node, "broadcast_to", NULL, 2, ba, 0, NULL, NULL) : NULL;
		if (!p)
			return false;
	}
	*ptrs = p;
	*mask = m;
	return true;
}

/* The memory-access keywords passed on to tl.load / tl.store. */
static int pass_kws(const char **names, FeVal **vals, int n, const char **kn, FeVal **kv)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		if (vals[i]) {
			kn[k] = names[i];
			kv[k++] = vals[i];
		}
	return k;
}

/* tl.load(ptr, mask, other, boundary_check, padding_option, cache_modifier,
 * eviction_policy, volatile) with ptr a block pointer. */
static FeVal *bp_load(Fe *fe, PyObject *node, FeVal **a)
{
	FeVal *bp = a[0];
	if (given(a[1]) || given(a[2]))
		return fe_err(fe, node, IR_ERR_VALUE,
			      "`mask` and `other` arguments cannot be specified for loading block pointers");
	int64_t bs[IR_MAX_RANK];
	int rank = bp_block(bp, bs);
	bool checked[IR_MAX_RANK];
	FeVal *p, *m;
	if (!checked_dims(fe, node, a[3], rank, checked) || !bp_address(fe, node, bp, checked, &p, &m))
		return NULL;
	const char *pad = "";
	if (given(a[4])) {
		if (!fe_is_const(a[4]) || !PyUnicode_Check(a[4]->obj))
			return fe_err(fe, node, IR_ERR_VALUE, "Padding option %s not supported",
				      fe_is_const(a[4]) ? fe_str(fe, a[4]->obj) : "(a tensor)");
		pad = PyUnicode_AsUTF8AndSize(a[4]->obj, NULL);
	}
	FeVal *other = NULL;
	if (strcmp(pad, "zero") == 0)
		other = fe_const_long(fe, 0);
	else if (strcmp(pad, "nan") == 0) {
		if (!ir_is_float(bp->items[BP_BASE]->v->type->elem))
			return fe_err(fe, node, IR_ERR_VALUE,
				      "Padding option `nan` is not supported for integer block pointers");
		other = fe_const(fe, fe_keep(fe, PyFloat_FromDouble(NAN)));
	} else if (*pad)
		return fe_err(fe, node, IR_ERR_VALUE, "Padding option %s not supported", pad);
	static const char *names[] = {"mask", "other", "cache_modifier", "eviction_policy", "volatile"};
	FeVal *vals[5] = {m, m ? other : NULL, a[5], a[6], a[7]};
	const char *kn[5];
	FeVal *kv[5];
	int nk = pass_kws(names, vals, 5, kn, kv);
	return fe_builtin_call(fe, node, "load", NULL, 1, &p, nk, kn, kv);
}

/* tl.store(ptr, value, mask, boundary_check, cache_modifier, eviction_policy)
 * with ptr a block pointer. */
static FeVal *bp_store(Fe *fe, PyObject *node, FeVal **a)
{
	FeVal *bp = a[0];
	if (given(a[2]))
		return fe_err(fe, node, IR_ERR_VALUE, "`mask` argument cannot be specified for storing block pointers");
	int64_t bs[IR_MAX_RANK];
	int rank = bp_block(bp, bs);
	bool checked[IR_MAX_RANK];
	FeVal *p, *m;
	if (!checked_dims(fe, node, a[3], rank, checked) || !bp_address(fe, node, bp, checked, &p, &m))
		return NULL;
	static const char *names[] = {"mask", "cache_modifier", "eviction_policy"};
	FeVal *vals[3] = {m, a[4], a[5]};
	const char *kn[3];
	FeVal *kv[3];
	int nk = pass_kws(names, vals, 3, kn, kv);
	FeVal *args[2] = {p, a[1]};
	return fe_builtin_call(fe, node, "store", NULL, 2, args, nk, kn, kv);
}

FeVal *fe_blockptr_getattr(Fe *fe, PyObject *node, FeVal *bp, const char *name)
{
	if (strcmp(name, "base") == 0)
		return bp->items[BP_BASE];
	if (strcmp(name, "shape") == 0)
		return bp_tuple(fe, bp, BP_SHAPE);
	if (strcmp(name, "strides") == 0)
		return bp_tuple(fe, bp, BP_STRIDES);
	if (strcmp(name, "offsets") == 0)
		return bp_tuple(fe, bp, BP_OFFSETS);
	if (strcmp(name, "block_shape") == 0)
		return fe_const(fe, PyList_GetItem(spec_of(bp), SPEC_BLOCK));
	if (strcmp(name, "order") == 0)
		return fe_const(fe, PyList_GetItem(spec_of(bp), SPEC_ORDER));
	if (strcmp(name, "dtype") == 0) /* the base's: pointer_type(element) */
		return fe_getattr(fe, node, bp->items[BP_BASE], "dtype");
	if (strcmp(name, "advance") == 0 || strcmp(name, "load") == 0 || strcmp(name, "store") == 0) {
		FeVal *m = ir_alloc(fe->ctx, sizeof(FeVal));
		m->kind = V_METHOD;
		m->self = bp;
		m->name = ir_intern(fe->ctx, name);
		return m;
	}
	return fe_err(fe, node, IR_ERR_VALUE, "'_block_ptr' object has no attribute '%s'", name);
}

static const char *load_names[] = {"pointer",        "mask",           "other",           "boundary_check",
				   "padding_option", "cache_modifier", "eviction_policy", "volatile"};
static const char *store_names[] = {"pointer", "value", "mask", "boundary_check", "cache_modifier", "eviction_policy"};

/* The pointer argument of a tl.load / tl.store call (NULL if missing). */
static FeVal *pointer_arg(int nargs, FeVal **args, int nkw, const char **kwn, FeVal **kwv)
{
	if (nargs > 0)
		return args[0];
	for (int k = 0; k < nkw; k++)
		if (strcmp(kwn[k], "pointer") == 0)
			return kwv[k];
	return NULL;
}

FeVal *fe_blockptr_call(Fe *fe, PyObject *node, const char *name, FeVal *self, int nargs, FeVal **args, int nkw,
			const char **kwn, FeVal **kwv, bool *handled)
{
	*handled = true;
	if (self && fe_is_blockptr(fe, self)) { /* ptr.advance(offsets), ptr.load(...), ptr.store(value, ...) */
		FeVal **all = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(nargs + 2));
		all[0] = self;
		memcpy(all + 1, args, sizeof(FeVal *) * (size_t)nargs);
		args = all;
		nargs++;
		self = NULL;
		if (strcmp(name, "advance") && strcmp(name, "load") && strcmp(name, "store"))
			return fe_err(fe, node, IR_ERR_VALUE, "'_block_ptr' object has no attribute '%s'", name);
	}
	if (self) {
		*handled = false;
		return NULL;
	}
	FeVal *a[8];
	if (strcmp(name, "make_block_ptr") == 0) {
		static const char *names[] = {"base", "shape", "strides", "offsets", "block_shape", "order"};
		if (!fe_bind_args(fe, node, "tl.make_block_ptr", 6, names, 6, nargs, args, nkw, kwn, kwv, a))
			return NULL;
		return bp_make(fe, node, a);
	}
	if (strcmp(name, "advance") == 0) {
		static const char *names[] = {"base", "offsets"};
		if (!fe_bind_args(fe, node, "tl.advance", 2, names, 2, nargs, args, nkw, kwn, kwv, a))
			return NULL;
		return bp_advance(fe, node, a[0], a[1]);
	}
	bool load = strcmp(name, "load") == 0;
	if ((load || strcmp(name, "store") == 0) && fe_is_blockptr(fe, pointer_arg(nargs, args, nkw, kwn, kwv))) {
		if (load)
			return fe_bind_args(fe, node, "tl.load", 8, load_names, 1, nargs, args, nkw, kwn, kwv, a)
				       ? bp_load(fe, node, a)
				       : NULL;
		return fe_bind_args(fe, node, "tl.store", 6, store_names, 2, nargs, args, nkw, kwn, kwv, a)
			       ? bp_store(fe, node, a)
			       : NULL;
	}
	*handled = false;
	return NULL;
}
