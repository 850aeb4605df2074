/* fe_tdesc.c: tensor descriptors (tl.make_tensor_descriptor, TensorDescriptor
 * arguments) and their loads, stores and atomics.
 *
 * A descriptor is a frontend tuple whose class is tl.tensor_descriptor, with
 * items (base, shape, strides, spec): base a scalar pointer, shape and
 * strides tuples of ints or integer scalars, spec the constant list
 * [block_shape, padding] (a list, so that a descriptor reassigned in a loop
 * carries its base, shape and strides but keeps its block shape constant),
 * block_shape a tuple of powers of two, padding "zero" or "nan". The last
 * stride is 1 (TMA's rule: a constant must be 1, a runtime value is taken to
 * be 1 and checked in debug mode). It never reaches the IR:
 * `desc.load(offsets)` becomes an ordinary masked load of the pointer block
 *     base + sum_d (off_d + arange(0, B_d)) * stride_d      (broadcast over d)
 * with the mask AND_d (0 <= off_d + arange(0, B_d) < shape_d) and the padding
 * as `other`; stores and atomics drop the masked-out elements (TMA's
 * semantics). `desc.gather(rows, y)` / `desc.scatter(v, rows, y)` take the
 * block's rows from a 1-D index block instead of off_0 + arange. The unit
 * last stride is not multiplied, so the axis analysis sees the contiguous
 * dimension, and every backend path (CPU, cp.async pipelining, tensor
 * cores) applies as to hand-written pointer code. Per the
 * descriptor contract (16-byte aligned base, 16-byte multiples as strides but
 * the last), the base and runtime strides carry multiple_of hints. Bounds
 * checks that constants prove are left out.
 *
 * A loaded block that is only transposed (`desc.load(o).T`, as B operands
 * and attention's K are written) is loaded transposed instead, once the
 * function is lowered (fe_tdesc_finish): the pointer block is built in the
 * permuted order, so the load feeding a dot is an ordinary one the
 * pipelining and MMA paths take, with no shuffle of the loaded data.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "python/frontend/fe.h"

enum { TD_BASE, TD_SHAPE, TD_STRIDES, TD_SPEC, TD_TMAP, TD_NITEMS };
#define TD_MAX_RANK 5

bool fe_is_tdesc(Fe *fe, const FeVal *v)
{
	return v && v->kind == V_TUPLE && v->obj && fe->cls_tdesc && v->obj == fe->cls_tdesc &&
	       v->n == TD_NITEMS;
}

/* The items of a tuple or list value (constant or not); false + error. */
static bool seq_items(Fe *fe, PyObject *node, FeVal *v, int *n, FeVal ***items, const char *what)
{
	if (v && v->kind == V_TUPLE) {
		*n = v->n;
		*items = v->items;
		return true;
	}
	if (v && fe_is_const(v) && (PyTuple_Check(v->obj) || PyList_Check(v->obj))) {
		PyObject *t = fe_keep(fe, PySequence_Tuple(v->obj));
		if (!t)
			return fe_pyerr(fe, node, what) != NULL;
		*n = (int)PyTuple_Size(t);
		*items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(*n + 1));
		for (int i = 0; i < *n; i++)
			(*items)[i] = fe_const(fe, PyTuple_GetItem(t, i));
		return true;
	}
	fe_err(fe, node, IR_ERR_TYPE, "%s must be a tuple or list", what);
	return false;
}

bool fe_const_int_of(const FeVal *v, int64_t *out)
{
	if (!v || !fe_is_const(v) || !PyLong_Check(v->obj) || PyBool_Check(v->obj))
		return false;
	int of = 0;
	long long x = PyLong_AsLongLongAndOverflow(v->obj, &of);
	if (of || (x == -1 && PyErr_Occurred())) {
		PyErr_Clear();
		return false;
	}
	*out = x;
	return true;
}

/* An int constant or an integer scalar tensor: a shape, stride or offset. */
static bool int_scalar(Fe *fe, PyObject *node, FeVal *v, const char *what, int i)
{
	int64_t x;
	if (fe_const_int_of(v, &x))
		return true;
	if (fe_is_tensor(v) && !ir_is_block(v->v->type) && ir_is_int(v->v->type) &&
	    v->v->type->kind != TY_I1)
		return true;
	if (fe_is_tensor(v))
		return fe_err(fe, node, IR_ERR_TYPE, "%s[%d] must be an integer scalar, got %s", what, i,
			      fe_tyname(fe, v->v->type)) != NULL;
	return fe_err(fe, node, IR_ERR_TYPE, "%s[%d] must be an integer, got %s", what, i,
		      v && fe_is_const(v) ? fe_str(fe, v->obj) : "a tuple") != NULL;
}

FeVal *fe_const_long(Fe *fe, int64_t x)
{
	return fe_const(fe, fe_keep(fe, PyLong_FromLongLong(x)));
}

/* tl.multiple_of(x, m) on a scalar tensor (constants stay as they are). */
static FeVal *hint_multiple(Fe *fe, PyObject *node, FeVal *x, int64_t m)
{
	if (!fe_is_tensor(x) || m <= 1)
		return x;
	FeVal *args[2] = {x, fe_const_long(fe, m)};
	return fe_builtin_call(fe, node, "multiple_of", NULL, 2, args, 0, NULL, NULL);
}

/* Checks and builds a descriptor value. */
/* x through the hints on it (the same value) */
static IrValue *no_hints(IrValue *x)
{
	while (x->def && (x->def->opc == OP_MULTIPLE_OF || x->def->opc == OP_MAX_CONTIGUOUS))
		x = x->def->ops[0];
	return x;
}

/* x a kernel parameter of an integer type: 1 (i32), 2 (i64, u64), 3 (u32)
 * with *idx its index; else -1. */
static int tmap_param(const IrFunc *f, IrValue *x, int64_t *idx)
{
	x = no_hints(x);
	if (ir_is_block(x->type) || x->def || x->owner != f->body)
		return -1;
	IrTypeKind k = x->type->kind;
	*idx = x->index;
	return k == TY_I32 ? 1 : k == TY_I64 || k == TY_U64 ? 2 : k == TY_U32 ? 3 : -1;
}

/* x an integer constant a tensor-map plan can carry as a factor: 0 ..
 * 2^16 - 1 (*c the value) or a power of two up to 2^62 (*c its exponent
 * with bit 19 set). */
static bool tmap_small_const(IrValue *x, int64_t *c)
{
	x = no_hints(x);
	if (!x->def || x->def->opc != OP_CONSTANT || ir_is_block(x->type))
		return false;
	const IrAttr *a = ir_op_attr(x->def, "value");
	if (!a || a->kind != ATTR_INT || a->i < 0)
		return false;
	if (a->i <= 0xFFFF) {
		*c = a->i;
		return true;
	}
	if (a->i & (a->i - 1))
		return false;
	int e = 0;
	while (((int64_t)1 << e) != a->i)
		e++;
	*c = e | (int64_t)1 << 19;
	return true;
}

/* x a product of kernel parameters and small constants (tutorial 06's
 * y_dim = Z * H * N_CTX, N_CTX a parameter or a constexpr): its factors
 * into fs (at most 3). */
static bool tmap_factors(const IrFunc *f, IrValue *x, IrValue **fs, int *n)
{
	x = no_hints(x);
	int64_t idx;
	if (tmap_param(f, x, &idx) > 0 || tmap_small_const(x, &idx)) {
		if (*n == 3)
			return false;
		fs[(*n)++] = x;
		return true;
	}
	return x->def && x->def->opc == OP_MUL && !ir_is_block(x->type) && ir_is_int(x->type) &&
	       tmap_factors(f, x->def->ops[0], fs, n) && tmap_factors(f, x->def->ops[1], fs, n);
}

/* A tensor-map source (a shape or stride of a descriptor made in the
 * kernel, jit.h's JitKernel.tma): 0 with *val the value of a constant; 1
 * (i32), 2 (i64, u64), 3 (u32) for a kernel parameter, *val its index; 4
 * for a product of two or three factors, at least one a parameter, *val
 * packing each factor in 20 bits: bit 18 set, its kind in bits 16-17 (1-3
 * a parameter of that kind, bits 0-15 its index; 0 a constant, bits 0-15
 * its value, or with bit 19 set the exponent of a power of two); -1 for
 * anything else (computed in the kernel otherwise). */
static int tmap_src(Fe *fe, FeVal *v, int64_t *val)
{
	if (fe_const_int_of(v, val))
		return 0;
	IrFunc *f = fe->func;
	if (!fe_is_tensor(v) || ir_is_block(v->v->type))
		return -1;
	int k = tmap_param(f, v->v, val);
	if (k > 0)
		return k;
	IrValue *fs[3];
	int n = 0, nparam = 0;
	if (!tmap_factors(f, v->v, fs, &n) || n < 2)
		return -1;
	*val = 0;
	for (int i = 0; i < n; i++) {
		int64_t idx;
		int kk = tmap_param(f, fs[i], &idx);
		if (kk <= 0) {
			tmap_small_const(fs[i], &idx);
			kk = 0;
		} else {
			nparam++;
		}
		*val |= (idx | (int64_t)kk << 16 | (int64_t)1 << 18) << (20 * i);
	}
	return nparam ? 4 : -1;
}

/* The tensor map of a block [B0, B1] of elem (padding NaN or zeros): its
 * box is one 128-byte column block (B1 * es bytes a row, at most 128; the
 * slot layout of the pipelined copies), swizzled at the row width. False
 * when the copy engine cannot take it: 1-4 byte numbers, B0 <= 256 rows,
 * rows of at least 16 bytes, a whole number of 128-byte blocks, NaN fill
 * only for f16 / bf16 / f32. */
static bool tmap_box(const IrType *elem, int64_t B0, int64_t B1, bool nan, int64_t box[2], int64_t *swizzle)
{
	int es = ir_type_bits(elem) / 8;
	IrTypeKind k = elem->kind;
	if (es < 1 || es > 4 || k == TY_I1 || ir_is_ptr(elem) || B0 < 1 || B0 > 256 || B1 * es < 16 ||
	    (B1 * es > 128 && (B1 * es) % 128) || (nan && k != TY_F16 && k != TY_BF16 && k != TY_F32))
		return false;
	int64_t row = B1 * es > 128 ? 128 : B1 * es;
	box[0] = row / es;
	box[1] = B0;
	*swizzle = row >= 32 ? row : 0;
	return true;
}

bool fe_tmap_ok(const IrType *elem, int64_t B0, int64_t B1, bool nan)
{
	int64_t box[2], sw;
	return tmap_box(elem, B0, B1, nan, box, &sw);
}

/* Marks prm as the tensor map (for fe_tmap_ok's block) of argument arg
 * (-1: made in the kernel): its box, swizzle, CUtensorMapDataType (the
 * float types where NaN padding needs them, else unsigned of the width)
 * and padding, for the launch plan (jit/pipeline.c). */
/* The attributes describing that map (a parameter's or a tensormap_create's). */
static void tmap_attrs(Fe *fe, int *nattrs, IrAttr **attrs, const IrType *elem, int64_t B0, int64_t B1, bool nan)
{
	int64_t box[2], sw;
	tmap_box(elem, B0, B1, nan, box, &sw);
	int es = ir_type_bits(elem) / 8;
	IrTypeKind k = elem->kind;
	IrAttr ba = {.name = ir_intern(fe->ctx, "tma_box"), .kind = ATTR_INTS, .n = 2,
		     .ints = ir_alloc(fe->ctx, sizeof box)};
	memcpy(ba.ints, box, sizeof box);
	ir_set_attr(fe->ctx, nattrs, attrs, &ba);
	ir_set_attr_int(fe->ctx, nattrs, attrs, "tma_swizzle", sw);
	ir_set_attr_int(fe->ctx, nattrs, attrs, "tma_dtype",
			k == TY_F16 ? 6 : k == TY_BF16 ? 9 : k == TY_F32 ? 7 : es == 1 ? 0 : es == 2 ? 1 : 2);
	ir_set_attr_int(fe->ctx, nattrs, attrs, "tma_nan", nan);
}

void fe_tmap_attrs(Fe *fe, IrParam *prm, int64_t arg, const IrType *elem, int64_t B0, int64_t B1, bool nan)
{
	ir_set_attr_int(fe->ctx, &prm->nattrs, &prm->attrs, "tensormap", arg);
	tmap_attrs(fe, &prm->nattrs, &prm->attrs, elem, B0, B1, nan);
}

/* tl.make_tensor_descriptor in the kernel over a parameter's pointer with
 * shape and strides that are parameters or constants (tutorial 09's
 * descriptor kernels): the launch can encode its tensor map as for a
 * TensorDescriptor argument, from those parameters. Returns the map's
 * parameter (added after all others, shared by equal descriptors), or -1. */
static int device_tmap(Fe *fe, FeVal *base, FeVal **sh, FeVal **st, int rank, const int64_t *bs, bool nan)
{
	IrFunc *f = fe->func;
	if (!fe->tma_arch || !f || !f->is_kernel || rank != 2 || !fe_is_tensor(base))
		return -1;
	IrValue *bv = no_hints(base->v);
	if (bv->def || bv->owner != f->body)
		return -1;
	const IrType *elem = bv->type->elem;
	int64_t src[7] = {bv->index}, one;
	for (int d = 0; d < 2; d++) {
		int k = tmap_src(fe, sh[d], &src[2 + 2 * d]);
		if (k < 0)
			return -1;
		src[1 + 2 * d] = k;
	}
	int ks = tmap_src(fe, st[0], &src[6]);
	if (ks < 0 || !fe_const_int_of(st[1], &one) || one != 1)
		return -1;
	src[5] = ks;
	int64_t box[2], sw;
	if (!tmap_box(elem, bs[0], bs[1], nan, box, &sw))
		return -1;
	/* an equal descriptor made before: its map */
	int ntm = 0;
	for (int i = 0; i < f->body->nargs; i++) {
		const IrParam *p = &f->params[i];
		const IrAttr *sa = ir_find_attr(p->nattrs, p->attrs, "tma_src");
		const IrAttr *ba = ir_find_attr(p->nattrs, p->attrs, "tma_box");
		if (ir_find_attr(p->nattrs, p->attrs, "tensormap"))
			ntm++;
		const IrAttr *na = ir_find_attr(p->nattrs, p->attrs, "tma_nan");
		if (sa && ba && sa->n == 7 && !memcmp(sa->ints, src, sizeof src) && ba->ints[0] == box[0] &&
		    ba->ints[1] == box[1] && na && na->i == nan)
			return i; /* the same base parameter: the same element type */
	}
	if (ntm >= 8)
		return -1;
	/* a new parameter at the end */
	int n = f->body->nargs;
	IrParam *np = ir_alloc(fe->ctx, sizeof(IrParam) * (size_t)(n + 1));
	memcpy(np, f->params, sizeof(IrParam) * (size_t)n);
	memset(&np[n], 0, sizeof(IrParam));
	f->params = np;
	IrValue *a = ir_block_add_arg(fe->ctx, f->body, ir_type_ptr(fe->ctx, ir_type(fe->ctx, TY_I8), 1));
	char nm[32];
	snprintf(nm, sizeof nm, "tmap_%d", n);
	np[n].name = a->name = ir_intern(fe->ctx, nm);
	IrAttr sa = {.name = ir_intern(fe->ctx, "tma_src"), .kind = ATTR_INTS, .n = 7,
		     .ints = ir_alloc(fe->ctx, sizeof src)};
	memcpy(sa.ints, src, sizeof src);
	ir_set_attr(fe->ctx, &np[n].nattrs, &np[n].attrs, &sa);
	fe_tmap_attrs(fe, &np[n], -1, elem, bs[0], bs[1], nan);
	return n;
}

/* tl.make_tensor_descriptor in the kernel over values it computes (loaded
 * pointers, sizes and strides: tutorial 08's grouped GEMM): on sm_90 the
 * kernel writes the map itself (tensormap_create, the encoding of
 * fe_tmap_attrs), into global scratch that the launch gets from the
 * allocator when a tensor copy reads it. Returns the map, or NULL when
 * the descriptor cannot have one (then its loads stay plain loads). */
static IrValue *made_tmap(Fe *fe, PyObject *node, FeVal *base, FeVal **sh, FeVal **st, int rank, const int64_t *bs,
			  bool nan)
{
	IrFunc *f = fe->func;
	int64_t one;
	/* sm_90a: tensormap.replace (the sm_100 family compiles without the
	 * arch-specific features) */
	if (fe->tma_arch != 90 || !f || !f->is_kernel || rank != 2 || !fe_is_tensor(base) ||
	    !fe_const_int_of(st[1], &one) || one != 1)
		return NULL;
	const IrType *elem = base->v->type->elem;
	if (!fe_tmap_ok(elem, bs[0], bs[1], nan))
		return NULL;
	IrValue *ops[4] = {no_hints(base->v), fe_to_ir(fe, node, sh[0], NULL), NULL, NULL};
	ops[2] = ops[1] ? fe_to_ir(fe, node, sh[1], NULL) : NULL;
	ops[3] = ops[2] ? fe_to_ir(fe, node, st[0], NULL) : NULL;
	if (!ops[3])
		return NULL;
	IrValue *m = ir_build1(&fe->b, OP_TMAP_CREATE, ir_type_ptr(fe->ctx, ir_type(fe->ctx, TY_I8), 1), 4, ops);
	tmap_attrs(fe, &m->def->nattrs, &m->def->attrs, elem, bs[0], bs[1], nan);
	return m;
}

static FeVal *tdesc_new(Fe *fe, PyObject *node, FeVal *base, FeVal *shape, FeVal *strides,
			FeVal *block, FeVal *padding, bool on_device, int tmap)
{
	if (!fe_is_tensor(base) || ir_is_block(base->v->type) || !ir_is_ptr(base->v->type))
		return fe_err(fe, node, IR_ERR_TYPE,
			      "tl.make_tensor_descriptor(): base must be a scalar pointer, got %s",
			      fe_is_tensor(base) ? fe_tyname(fe, base->v->type) : "a constant");
	const IrType *elem = base->v->type->elem;
	if (!elem || ir_is_ptr(elem) || elem->kind == TY_I1)
		return fe_err(fe, node, IR_ERR_TYPE,
			      "tl.make_tensor_descriptor(): base must point to numbers, got %s",
			      fe_tyname(fe, base->v->type));
	int rank, ns, nb;
	FeVal **sh, **st, **bl;
	if (!seq_items(fe, node, shape, &rank, &sh, "shape") ||
	    !seq_items(fe, node, strides, &ns, &st, "strides") ||
	    !seq_items(fe, node, block, &nb, &bl, "block_shape"))
		return NULL;
	if (rank < 1 || rank > TD_MAX_RANK)
		return fe_err(fe, node, IR_ERR_VALUE, "Expected 1 <= ndim <= 5 but got %d dimensions", rank);
	if (ns != rank)
		return fe_err(fe, node, IR_ERR_VALUE, "Expected %d strides but got %d", rank, ns);
	if (nb != rank)
		return fe_err(fe, node, IR_ERR_VALUE,
			      "Expected block_shape to have %d dimensions but got %d", rank, nb);
	int64_t bs[TD_MAX_RANK], numel = 1;
	for (int d = 0; d < rank; d++) {
		if (!fe_const_int_of(bl[d], &bs[d]))
			return fe_err(fe, node, IR_ERR_TYPE, "block_shape[%d] must be a constexpr int", d);
		if (bs[d] <= 0 || (bs[d] & (bs[d] - 1)))
			return fe_err(fe, node, IR_ERR_VALUE,
				      "block_shape[%d] must be a positive power of 2, got %lld", d,
				      (long long)bs[d]);
		numel *= bs[d];
		if (numel > IR_MAX_NUMEL)
			return fe_err(fe, node, IR_ERR_VALUE,
				      "numel of the block shape exceeds triton maximum tensor numel (%d)",
				      IR_MAX_NUMEL);
		if (!int_scalar(fe, node, sh[d], "shape", d) || !int_scalar(fe, node, st[d], "strides", d))
			return NULL;
	}
	int esz = ir_type_bits(elem) / 8;
	if (on_device && bs[rank - 1] * esz < 16)
		return fe_err(fe, node, IR_ERR_VALUE,
			      "Descriptor block shape must have at least 16 bytes in the last dimension, "
			      "but got %lld * %d = %lld bytes",
			      (long long)bs[rank - 1], esz, (long long)(bs[rank - 1] * esz));
	int64_t last;
	if (fe_const_int_of(st[rank - 1], &last) && last != 1)
		return fe_err(fe, node, IR_ERR_VALUE, "Tensor descriptor last dim must be 1 but got %lld",
			      (long long)last);
	if (fe->debug && fe_is_tensor(st[rank - 1])) {
		FeVal *one = fe_cmpop(fe, node, N_Eq, st[rank - 1], fe_const_long(fe, 1));
		FeVal *msg = fe_const(fe, fe_keep(fe, PyUnicode_FromString("tensor descriptor: the last stride must be 1")));
		FeVal *aa[2] = {one, msg};
		if (!one || !fe_builtin_call(fe, node, "device_assert", NULL, 2, aa, 0, NULL, NULL))
			return NULL;
	}
	const char *pad = "zero";
	if (padding && !(fe_is_const(padding) && padding->obj == Py_None)) {
		if (!fe_is_const(padding) || !PyUnicode_Check(padding->obj))
			return fe_err(fe, node, IR_ERR_TYPE, "padding_option must be a constexpr string");
		pad = PyUnicode_AsUTF8AndSize(padding->obj, NULL);
		if (strcmp(pad, "zero") && strcmp(pad, "nan"))
			return fe_err(fe, node, IR_ERR_VALUE,
				      "padding_option must be \"zero\" or \"nan\", got \"%s\"", pad);
		if (strcmp(pad, "nan") == 0 && !ir_is_float(elem))
			return fe_err(fe, node, IR_ERR_VALUE,
				      "Padding option `nan` is not supported for integer blocks");
	}
	IrValue *made = NULL;
	if (on_device && tmap < 0)
		tmap = device_tmap(fe, base, sh, st, rank, bs, strcmp(pad, "nan") == 0);
	if (on_device && tmap < 0)
		made = made_tmap(fe, node, base, sh, st, rank, bs, strcmp(pad, "nan") == 0);
	if (fe_has_error(fe))
		return NULL;
	/* the descriptor contract: a 16-byte aligned base, strides but the last
	 * multiples of 16 bytes */
	FeVal **st2 = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(rank + 1));
	for (int d = 0; d < rank; d++)
		st2[d] = d < rank - 1 && 16 % esz == 0 ? hint_multiple(fe, node, st[d], 16 / esz) : st[d];
	base = hint_multiple(fe, node, base, 16);
	if (!base || fe_has_error(fe))
		return NULL;
	PyObject *bt = PyTuple_New(rank);
	for (int d = 0; bt && d < rank; d++)
		PyTuple_SetItem(bt, d, PyLong_FromLongLong(bs[d]));
	PyObject *spec = fe_keep(fe, bt ? Py_BuildValue("[Nsi]", bt, pad, tmap) : NULL);
	if (!spec)
		return fe_pyerr(fe, node, "tl.make_tensor_descriptor()");
	FeVal **items = ir_alloc(fe->ctx, sizeof(FeVal *) * TD_NITEMS);
	items[TD_BASE] = base;
	items[TD_SHAPE] = fe_make_tuple(fe, rank, sh);
	items[TD_STRIDES] = fe_make_tuple(fe, rank, st2);
	items[TD_SPEC] = fe_const(fe, spec);
	items[TD_TMAP] = made ? fe_tensor(fe, made) : fe_none(fe); /* a map made in the kernel */
	FeVal *r = ir_alloc(fe->ctx, sizeof(FeVal));
	r->kind = V_TUPLE;
	r->n = TD_NITEMS;
	r->items = items;
	r->obj = fe->cls_tdesc;
	return r;
}

FeVal *fe_tdesc_from_param(Fe *fe, PyObject *node, FeVal *flat, PyObject *info, int tmap)
{
	if (!flat || flat->kind != V_TUPLE || flat->n != 3 || !PyTuple_Check(info) ||
	    PyTuple_Size(info) != 2)
		return fe_err(fe, node, IR_ERR_INTERNAL, "internal error: malformed TensorDescriptor argument");
	FeVal *block = fe_const(fe, PyTuple_GetItem(info, 0));
	FeVal *pad = fe_const(fe, PyTuple_GetItem(info, 1));
	return tdesc_new(fe, node, flat->items[0], flat->items[1], flat->items[2], block, pad, false, tmap);
}

static PyObject *tdesc_block_obj(FeVal *d)
{
	return PyList_GetItem(d->items[TD_SPEC]->obj, 0);
}

static const char *tdesc_padding(FeVal *d)
{
	return PyUnicode_AsUTF8AndSize(PyList_GetItem(d->items[TD_SPEC]->obj, 1), NULL);
}

/* The block shape of a descriptor (checked when it was made). */
static int tdesc_block(FeVal *d, int64_t *bs)
{
	PyObject *t = tdesc_block_obj(d);
	int rank = (int)PyTuple_Size(t);
	for (int i = 0; i < rank; i++)
		bs[i] = PyLong_AsLongLong(PyTuple_GetItem(t, i));
	return rank;
}

/* The pointer block and the bounds mask (NULL when constants prove every
 * element in bounds) of the block at offsets; with pos, dim k of the block
 * is dim pos[k] of the result (a transposed load). With rows (gather and
 * scatter), the block's dim 0 is the rows at those indices instead of
 * offsets[0] + arange(block_shape[0]). */
static bool tdesc_address(Fe *fe, PyObject *node, FeVal *d, FeVal *offsets, const char *what,
			  const int *pos, FeVal *rows, FeVal **ptrs, FeVal **mask)
{
	int64_t bs[TD_MAX_RANK];
	int rank = tdesc_block(d, bs), no, ns, nst;
	FeVal **off, **sh, **st;
	if (!seq_items(fe, node, offsets, &no, &off, "offsets"))
		return false;
	if (no != rank)
		return fe_err(fe, node, IR_ERR_VALUE, "%s: expected %d offsets, but got %d", what, rank, no) != NULL;
	if (!seq_items(fe, node, d->items[TD_SHAPE], &ns, &sh, "shape") ||
	    !seq_items(fe, node, d->items[TD_STRIDES], &nst, &st, "strides"))
		return false;
	FeVal *p = d->items[TD_BASE], *m = NULL;
	for (int k = 0; k < rank; k++) {
		int64_t oc = 0, sc = 0, stc = 0;
		bool off_const = false;
		FeVal *idx;
		if (rows && k == 0)
			idx = rows;
		else {
			if (!int_scalar(fe, node, off[k], "offsets", k))
				return false;
			FeVal *ra[2] = {fe_const_long(fe, 0), fe_const_long(fe, bs[k])};
			idx = fe_builtin_call(fe, node, "arange", NULL, 2, ra, 0, NULL, NULL);
			off_const = fe_const_int_of(off[k], &oc);
			if (idx && !(off_const && oc == 0))
				idx = fe_arith(fe, node, N_Add, off[k], idx, false);
		}
		for (int j = 0; idx && j < rank; j++)
			if (j != (pos ? pos[k] : k)) {
				FeVal *ea[2] = {idx, fe_const_long(fe, j)};
				idx = fe_builtin_call(fe, node, "expand_dims", NULL, 2, ea, 0, NULL, NULL);
			}
		if (!idx)
			return false;
		bool unit = k == rank - 1 || (fe_const_int_of(st[k], &stc) && stc == 1);
		FeVal *term = unit ? idx : fe_arith(fe, node, N_Mult, idx, st[k], false);
		p = term ? fe_arith(fe, node, N_Add, p, term, false) : NULL;
		if (!p)
			return false;
		/* this dim's bounds (on the small [.., B_k, ..] shape), then the block's */
		FeVal *dm = NULL;
		if (!(off_const && oc >= 0))
			dm = fe_cmpop(fe, node, N_GtE, idx, fe_const_long(fe, 0));
		if (!(off_const && fe_const_int_of(sh[k], &sc) && oc + bs[k] <= sc)) {
			FeVal *hi = fe_cmpop(fe, node, N_Lt, idx, sh[k]);
			dm = dm && hi ? fe_binop(fe, node, N_BitAnd, dm, hi) : hi;
		}
		if (dm)
			m = m ? fe_binop(fe, node, N_BitAnd, m, dm) : dm;
		if (fe_has_error(fe))
			return false;
	}
	*ptrs = p;
	*mask = m;
	return true;
}

/* A stored value must be a block of the descriptor's block shape (with
 * nrows > 0, of nrows rows: scatter). */
static bool check_value(Fe *fe, PyObject *node, FeVal *d, FeVal *v, const char *what, int64_t nrows)
{
	int64_t bs[TD_MAX_RANK];
	int rank = tdesc_block(d, bs);
	if (nrows > 0)
		bs[0] = nrows;
	bool ok = fe_is_tensor(v) && ir_is_block(v->v->type) && v->v->type->rank == rank;
	for (int i = 0; ok && i < rank; i++)
		ok = v->v->type->shape[i] == bs[i];
	if (!ok)
		return fe_err(fe, node, IR_ERR_TYPE,
			      "%s: the value must be a block of the descriptor's block shape %s, got %s", what,
			      fe_str(fe, tdesc_block_obj(d)),
			      fe_is_tensor(v) ? fe_tyname(fe, v->v->type) : fe_str(fe, v ? v->obj : Py_None)) != NULL;
	return true;
}

/* A descriptor load, for fe_tdesc_finish. */
typedef struct FeTdLoad {
	IrValue *res;
	IrFunc *func;
	PyObject *node;
	FeVal *desc, *offsets;
} FeTdLoad;

/* The descriptor's tensor map (a parameter's, or one made in the kernel)
 * and its 2-D offsets as i32, for a tensor-map tail, and with ext (a
 * store's tail) its inner extent as i32; *map NULL when there is none (not
 * a kernel, no map, not 2-D). False on an error. */
static bool tdesc_map_offsets(Fe *fe, PyObject *node, FeVal *d, FeVal *offsets, IrValue **map, IrValue **c0,
			      IrValue **c1, IrValue **ext)
{
	*map = *c0 = *c1 = NULL;
	if (ext)
		*ext = NULL;
	PyObject *tmo = PyList_Size(d->items[TD_SPEC]->obj) > 2 ? PyList_GetItem(d->items[TD_SPEC]->obj, 2) : NULL;
	int tm = tmo && PyLong_Check(tmo) ? (int)PyLong_AsLong(tmo) : -1;
	FeVal *made = d->items[TD_TMAP];
	IrValue *m = tm >= 0 && fe->func && tm < fe->func->body->nargs ? fe->func->body->args[tm]
		     : fe_is_tensor(made)                                ? made->v
									 : NULL;
	FeVal **off;
	int no;
	if (!m || !fe->func || !fe->func->is_kernel || !seq_items(fe, node, offsets, &no, &off, "offsets") || no != 2)
		return true;
	const IrType *i32 = ir_type(fe->ctx, TY_I32);
	*c0 = fe_to_ir(fe, node, off[0], i32);
	*c1 = *c0 ? fe_to_ir(fe, node, off[1], i32) : NULL;
	if (!*c1)
		return false;
	if (ext) {
		FeVal **sh;
		int ns;
		if (!seq_items(fe, node, d->items[TD_SHAPE], &ns, &sh, "shape"))
			return false;
		if (ns != 2)
			return true;
		if (!(*ext = fe_to_ir(fe, node, sh[1], i32)))
			return false;
	}
	*map = m;
	return true;
}

/* Appends the tensor-map tail to a load's or store's three operands: the
 * map, then the 2-D offsets ({tma = 3}); a store's also the inner extent
 * (ext, i32: {tma = 4}), which the tensor memory access unit clips at
 * 16-byte granularity only (analysis/tmastore.c guards on it). */
static void add_tma_tail(Fe *fe, IrOp *op, IrValue *map, IrValue *c0, IrValue *c1, IrValue *ext)
{
	int n = ext ? 7 : 6;
	IrValue **ops = ir_alloc(fe->ctx, sizeof(IrValue *) * (size_t)n);
	memcpy(ops, op->ops, sizeof(IrValue *) * 3);
	ops[3] = map;
	ops[4] = c0;
	ops[5] = c1;
	if (ext)
		ops[6] = ext;
	op->ops = ops;
	op->nops = n;
	ir_op_set_int(fe->ctx, op, "tma", n - 3);
}

static FeVal *tdesc_emit_load(Fe *fe, PyObject *node, FeVal *d, FeVal *offsets, const int *pos,
			      FeVal *rows)
{
	FeVal *p, *m;
	if (!tdesc_address(fe, node, d, offsets, "load", pos, rows, &p, &m))
		return NULL;
	if (!m)
		return fe_builtin_call(fe, node, "load", NULL, 1, &p, 0, NULL, NULL);
	bool nan = strcmp(tdesc_padding(d), "nan") == 0;
	FeVal *other = nan ? fe_const(fe, fe_keep(fe, PyFloat_FromDouble(NAN))) : fe_const_long(fe, 0);
	const char *kn[2] = {"mask", "other"};
	FeVal *kv[2] = {m, other};
	/* the descriptor's tensor map and the offsets, for a copy by the tensor
	 * memory access unit (analysis/prefetch.c); ignored otherwise */
	IrValue *map = NULL, *c0 = NULL, *c1 = NULL;
	if (!rows && !tdesc_map_offsets(fe, node, d, offsets, &map, &c0, &c1, NULL))
		return NULL;
	FeVal *r = fe_builtin_call(fe, node, "load", NULL, 1, &p, 2, kn, kv);
	IrOp *ld = r && fe_is_tensor(r) ? r->v->def : NULL;
	if (map && ld && ld->opc == OP_LOAD && ld->nops == 3) {
		add_tma_tail(fe, ld, map, c0, c1, NULL);
		if (pos && pos[0] != 0)
			ir_op_set_int(fe->ctx, ld, "tma_tr", 1);
	}
	return r;
}

static FeVal *tdesc_load(Fe *fe, PyObject *node, FeVal *d, FeVal *offsets)
{
	FeVal *r = tdesc_emit_load(fe, node, d, offsets, NULL, NULL);
	if (!r || !fe_is_tensor(r) || !r->v->def || r->v->def->opc != OP_LOAD)
		return r;
	if (fe->ntdloads == fe->captdloads) {
		int cap = fe->captdloads ? 2 * fe->captdloads : 16;
		FeTdLoad *nl = ir_alloc(fe->ctx, sizeof(FeTdLoad) * (size_t)cap);
		if (fe->ntdloads)
			memcpy(nl, fe->tdloads, sizeof(FeTdLoad) * (size_t)fe->ntdloads);
		fe->tdloads = nl;
		fe->captdloads = cap;
	}
	fe->tdloads[fe->ntdloads++] = (FeTdLoad){r->v, fe->func, node, d, offsets};
	return r;
}

/* The op of blk (or of a region nested in it) that uses v; NULL if none. */
static IrOp *find_user(IrBlock *blk, const IrValue *v)
{
	for (IrOp *op = blk->first; op; op = op->next) {
		for (int i = 0; i < op->nops; i++)
			if (op->ops[i] == v)
				return op;
		for (int r = 0; r < op->nregions; r++) {
			IrOp *u = find_user(op->regions[r], v);
			if (u)
				return u;
		}
	}
	return NULL;
}

void fe_tdesc_finish(Fe *fe)
{
	IrBuilder saved = fe->b;
	for (int i = 0; i < fe->ntdloads && !fe_has_error(fe); i++) {
		FeTdLoad *l = &fe->tdloads[i];
		IrOp *ld = l->res->def;
		if (!ld->parent || ir_count_uses(l->func, l->res) != 1)
			continue;
		IrOp *t = find_user(l->func->body, l->res);
		const IrAttr *order = t && t->opc == OP_TRANS ? ir_op_attr(t, "order") : NULL;
		int rank = l->res->type->rank;
		if (!order || order->kind != ATTR_INTS || order->n != rank)
			continue;
		int pos[TD_MAX_RANK]; /* result dim i is block dim order[i] */
		for (int k = 0; k < rank; k++)
			pos[order->ints[k]] = k;
		ir_builder_before(&fe->b, ld);
		fe->b.loc = ld->loc;
		FeVal *r = tdesc_emit_load(fe, l->node, l->desc, l->offsets, pos, NULL);
		if (!r)
			break;
		if (r->v->type != t->res[0].type) {
			fe_err(fe, l->node, IR_ERR_INTERNAL, "internal error: a transposed descriptor load has type %s, expected %s",
			       fe_tyname(fe, r->v->type), fe_tyname(fe, t->res[0].type));
			break;
		}
		ir_replace_all_uses(l->func, &t->res[0], r->v);
		ir_op_unlink(t);
		ir_op_unlink(ld);
	}
	fe->b = saved;
}

/* The op the builder made last (where its next op would go, less one). */
static IrOp *last_built(const IrBuilder *b)
{
	return b->before ? b->before->prev : b->block ? b->block->last : NULL;
}

/* store and the atomics: `op` is "store" or "atomic_add", ...; with rows,
 * a scatter of those rows. */
static FeVal *tdesc_write(Fe *fe, PyObject *node, FeVal *d, const char *op, FeVal *offsets, FeVal *value,
			  FeVal *rows)
{
	if (!check_value(fe, node, d, value, op, rows ? rows->v->type->shape[0] : 0))
		return NULL;
	const IrType *elem = d->items[TD_BASE]->v->type->elem;
	if (strcmp(op, "store") != 0) {
		IrTypeKind k = elem->kind;
		bool ok;
		if (strcmp(op, "atomic_add") == 0)
			ok = k == TY_U32 || k == TY_I32 || k == TY_U64 || k == TY_F32 || k == TY_F16 ||
			     k == TY_BF16;
		else if (strcmp(op, "atomic_min") == 0 || strcmp(op, "atomic_max") == 0)
			/* Triton takes 16-bit floats on sm_90+ only, as TMA
			 * reductions; ctriton has no atomic min/max on them */
			ok = k == TY_U32 || k == TY_I32 || k == TY_U64 || k == TY_I64;
		else
			ok = k == TY_U32 || k == TY_I32 || k == TY_U64 || k == TY_I64;
		if (!ok)
			return fe_err(fe, node, IR_ERR_TYPE, "desc.%s(): unsupported dtype %s", op,
				      fe_tyname(fe, elem));
	}
	FeVal *p, *m;
	if (!tdesc_address(fe, node, d, offsets, op, NULL, rows, &p, &m))
		return NULL;
	/* a store: the tensor map and offsets too, for a store by the tensor
	 * memory access unit on sm_90 (analysis/tmastore.c); ignored otherwise */
	IrValue *map = NULL, *c0 = NULL, *c1 = NULL, *ext = NULL;
	bool store = strcmp(op, "store") == 0;
	if (store && !rows && m && !tdesc_map_offsets(fe, node, d, offsets, &map, &c0, &c1, &ext))
		return NULL;
	IrOp *prev = last_built(&fe->b);
	FeVal *args[2] = {p, value};
	const char *kn[1] = {"mask"};
	FeVal *kv[1] = {m};
	FeVal *r = fe_builtin_call(fe, node, op, NULL, 2, args, m ? 1 : 0, kn, kv);
	IrOp *st = r ? last_built(&fe->b) : NULL;
	if (map && st && st != prev && st->opc == OP_STORE && st->nops == 3)
		add_tma_tail(fe, st, map, c0, c1, ext);
	return r ? fe_none(fe) : NULL;
}

/* The rows of desc.gather/scatter: a 1-D block of at least 8 indices into a
 * 2-D descriptor of one-row blocks at least 32 bytes wide (Triton's rules). */
static bool check_rows(Fe *fe, PyObject *node, FeVal *d, FeVal *x, const char *what)
{
	int64_t bs[TD_MAX_RANK];
	int rank = tdesc_block(d, bs);
	PyObject *b = tdesc_block_obj(d);
	if (rank != 2)
		return fe_err(fe, node, IR_ERR_VALUE, "descriptor must be 2D, but got %s", fe_str(fe, b)) != NULL;
	if (bs[0] != 1)
		return fe_err(fe, node, IR_ERR_VALUE, "descriptor block must have 1 row, but got %s", fe_str(fe, b)) != NULL;
	if (!fe_is_tensor(x) || !ir_is_block(x->v->type) || x->v->type->rank != 1 ||
	    !ir_is_int(ir_scalar(x->v->type)))
		return fe_err(fe, node, IR_ERR_TYPE, "x offsets must be a 1-D block of integers, got %s",
			      fe_is_tensor(x) ? fe_tyname(fe, x->v->type) : "a constant") != NULL;
	if (x->v->type->shape[0] < 8)
		return fe_err(fe, node, IR_ERR_VALUE, "descriptor %s must have at least 8 rows, but got %lld", what,
			      (long long)x->v->type->shape[0]) != NULL;
	int bits = ir_type_bits(d->items[TD_BASE]->v->type->elem);
	int64_t min_cols = bits <= 32 ? 32 / bits * 8 : 0;
	if (bs[1] < min_cols)
		return fe_err(fe, node, IR_ERR_VALUE,
			      "descriptor %s of %s must have at least %lld columns, but got %lld", what,
			      fe_tyname(fe, d->items[TD_BASE]->v->type->elem), (long long)min_cols,
			      (long long)bs[1]) != NULL;
	return true;
}

/* (0, y): the offsets of a gather/scatter, whose dim 0 comes from rows. */
static FeVal *row_offsets(Fe *fe, FeVal *y)
{
	FeVal *items[2] = {fe_const_long(fe, 0), y};
	return fe_make_tuple(fe, 2, items);
}

bool fe_bind_args(Fe *fe, PyObject *node, const char *fname, int np, const char **names, int nreq,
		  int nargs, FeVal **args, int nkw, const char **kwn, FeVal **kwv, FeVal **out)
{
	for (int i = 0; i < np; i++)
		out[i] = NULL;
	if (nargs > np)
		return fe_err(fe, node, IR_ERR_VALUE, "%s() takes %d positional arguments but %d were given",
			      fname, np, nargs) != NULL;
	for (int i = 0; i < nargs; i++)
		out[i] = args[i];
	for (int k = 0; k < nkw; k++) {
		int j = -1;
		for (int i = 0; i < np; i++)
			if (strcmp(names[i], kwn[k]) == 0)
				j = i;
		if (j < 0)
			return fe_err(fe, node, IR_ERR_VALUE, "%s() got an unexpected keyword argument '%s'",
				      fname, kwn[k]) != NULL;
		if (out[j])
			return fe_err(fe, node, IR_ERR_VALUE, "%s() got multiple values for argument '%s'",
				      fname, kwn[k]) != NULL;
		out[j] = kwv[k];
	}
	for (int i = 0; i < nreq; i++)
		if (!out[i])
			return fe_err(fe, node, IR_ERR_VALUE, "%s() missing required argument '%s'", fname,
				      names[i]) != NULL;
	return true;
}

static bool is_write_op(const char *name)
{
	static const char *ops[] = {"store",      "atomic_add", "atomic_min", "atomic_max",
				    "atomic_and", "atomic_or",  "atomic_xor", NULL};
	for (int i = 0; ops[i]; i++)
		if (strcmp(ops[i], name) == 0)
			return true;
	return false;
}

/* desc.load(offsets), desc.store(offsets, value), desc.atomic_*(offsets, value). */
static FeVal *tdesc_method(Fe *fe, PyObject *node, const char *name, FeVal *d, int nargs, FeVal **args,
			   int nkw, const char **kwn, FeVal **kwv)
{
	FeVal *a[2];
	const char *shown = ir_fmt(fe->ctx, "desc.%s", name);
	if (strcmp(name, "load") == 0) {
		static const char *names[] = {"offsets"};
		if (!fe_bind_args(fe, node, shown, 1, names, 1, nargs, args, nkw, kwn, kwv, a))
			return NULL;
		return tdesc_load(fe, node, d, a[0]);
	}
	if (is_write_op(name)) {
		static const char *names[] = {"offsets", "value"};
		if (!fe_bind_args(fe, node, shown, 2, names, 2, nargs, args, nkw, kwn, kwv, a))
			return NULL;
		return tdesc_write(fe, node, d, name, a[0], a[1], NULL);
	}
	if (strcmp(name, "gather") == 0) {
		static const char *names[] = {"x_offsets", "y_offset"};
		if (!fe_bind_args(fe, node, shown, 2, names, 2, nargs, args, nkw, kwn, kwv, a) ||
		    !check_rows(fe, node, d, a[0], "gather"))
			return NULL;
		return tdesc_emit_load(fe, node, d, row_offsets(fe, a[1]), NULL, a[0]);
	}
	if (strcmp(name, "scatter") == 0) {
		static const char *names[] = {"value", "x_offsets", "y_offset"};
		FeVal *b[3];
		if (!fe_bind_args(fe, node, shown, 3, names, 3, nargs, args, nkw, kwn, kwv, b) ||
		    !check_rows(fe, node, d, b[1], "scatter"))
			return NULL;
		return tdesc_write(fe, node, d, "store", row_offsets(fe, b[2]), b[0], b[1]);
	}
	return fe_err(fe, node, IR_ERR_VALUE, "'tensor_descriptor' object has no attribute '%s'", name);
}

FeVal *fe_tdesc_getattr(Fe *fe, PyObject *node, FeVal *d, const char *name)
{
	if (strcmp(name, "base") == 0)
		return d->items[TD_BASE];
	if (strcmp(name, "shape") == 0)
		return d->items[TD_SHAPE];
	if (strcmp(name, "strides") == 0)
		return d->items[TD_STRIDES];
	if (strcmp(name, "block_shape") == 0)
		return fe_const(fe, tdesc_block_obj(d));
	if (strcmp(name, "padding") == 0)
		return fe_const(fe, PyList_GetItem(d->items[TD_SPEC]->obj, 1));
	const IrType *elem = d->items[TD_BASE]->v->type->elem;
	PyObject *dt = fe_ir_to_dtype(fe, elem);
	if (strcmp(name, "dtype") == 0)
		return dt ? fe_const(fe, dt) : fe_err(fe, node, IR_ERR_TYPE, "no dtype for %s", fe_tyname(fe, elem));
	if (strcmp(name, "block_type") == 0) {
		PyObject *bt = dt ? fe_keep(fe, PyObject_CallFunctionObjArgs(fe->cls_block, dt,
									   tdesc_block_obj(d), NULL))
				  : NULL;
		return bt ? fe_const(fe, bt) : fe_pyerr(fe, node, "block_type");
	}
	if (strcmp(name, "load") == 0 || is_write_op(name) || strcmp(name, "gather") == 0 ||
	    strcmp(name, "scatter") == 0) {
		FeVal *m = ir_alloc(fe->ctx, sizeof(FeVal));
		m->kind = V_METHOD;
		m->self = d;
		m->name = ir_intern(fe->ctx, name);
		return m;
	}
	return fe_err(fe, node, IR_ERR_VALUE, "'tensor_descriptor' object has no attribute '%s'", name);
}

FeVal *fe_tdesc_call(Fe *fe, PyObject *node, const char *name, FeVal *self, int nargs, FeVal **args,
		     int nkw, const char **kwn, FeVal **kwv, bool *handled)
{
	*handled = true;
	if (self && fe_is_tdesc(fe, self))
		return tdesc_method(fe, node, name, self, nargs, args, nkw, kwn, kwv);
	if (!self && strcmp(name, "make_tensor_descriptor") == 0) {
		static const char *names[] = {"base", "shape", "strides", "block_shape", "padding_option"};
		FeVal *a[5];
		if (!fe_bind_args(fe, node, "tl.make_tensor_descriptor", 5, names, 4, nargs, args, nkw, kwn, kwv, a))
			return NULL;
		return tdesc_new(fe, node, a[0], a[1], a[2], a[3], a[4], true, -1);
	}
	if (!self && strcmp(name, "load_tensor_descriptor") == 0) {
		static const char *names[] = {"desc", "offsets"};
		FeVal *a[2];
		if (!fe_bind_args(fe, node, "tl.load_tensor_descriptor", 2, names, 2, nargs, args, nkw, kwn, kwv, a))
			return NULL;
		if (!fe_is_tdesc(fe, a[0]))
			return fe_err(fe, node, IR_ERR_TYPE, "tl.load_tensor_descriptor(): desc must be a tensor descriptor");
		return tdesc_load(fe, node, a[0], a[1]);
	}
	if (!self && strcmp(name, "store_tensor_descriptor") == 0) {
		static const char *names[] = {"desc", "offsets", "value"};
		FeVal *a[3];
		if (!fe_bind_args(fe, node, "tl.store_tensor_descriptor", 3, names, 3, nargs, args, nkw, kwn, kwv, a))
			return NULL;
		if (!fe_is_tdesc(fe, a[0]))
			return fe_err(fe, node, IR_ERR_TYPE, "tl.store_tensor_descriptor(): desc must be a tensor descriptor");
		return tdesc_write(fe, node, a[0], "store", a[1], a[2], NULL);
	}
	*handled = false;
	return NULL;
}
