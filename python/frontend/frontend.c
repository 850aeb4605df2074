/* frontend.c: _C.ast_to_ttir, the entry of the frontend, and its shared
 * helpers (object keeping, AST node kinds, locations, errors, dtypes);
 * _C.builtin_table, the builtins fe_builtins.c lowers (ctriton.language
 * makes its stubs from it).
 *
 * ast_to_ttir parses the kernel's source with Python's `ast` module, makes
 * one IR function whose parameters are the non-constexpr arguments (typed by
 * the signature, with divisibility attributes), binds constexpr arguments to
 * their values, lowers the body (fe_stmt.c), verifies the module and returns
 * its text, as built: CSE and DCE are passes of the compile pipeline. Any error, including a Python exception raised while evaluating a
 * constexpr expression, becomes ctriton.CompilationError("file:line:col").
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "python/frontend/fe.h"

PyObject *fe_keep(Fe *fe, PyObject *o)
{
	if (!o)
		return NULL;
	PyList_Append(fe->keep, o);
	Py_DECREF(o);
	return o;
}

PyObject *fe_attr(Fe *fe, PyObject *o, const char *name)
{
	PyObject *r = PyObject_GetAttrString(o, name);
	if (!r) {
		PyErr_Clear();
		return NULL;
	}
	return fe_keep(fe, r);
}

FeNode fe_kind(Fe *fe, PyObject *node)
{
	PyObject *t = (PyObject *)Py_TYPE(node);
	for (int i = 1; i < N_COUNT_; i++)
		if (fe->node_types[i] == t)
			return (FeNode)i;
	return N_OTHER;
}

static int attr_int(Fe *fe, PyObject *node, const char *name)
{
	PyObject *v = fe_attr(fe, node, name);
	if (!v || v == Py_None)
		return 0;
	long r = PyLong_AsLong(v);
	if (r == -1 && PyErr_Occurred()) {
		PyErr_Clear();
		return 0;
	}
	return (int)r;
}

IrLoc fe_loc(Fe *fe, PyObject *node)
{
	if (!node || !fe->fn)
		return ir_loc(fe->ctx, NULL, 0, 0);
	int line = attr_int(fe, node, "lineno");
	int col = attr_int(fe, node, "col_offset");
	if (!line)
		return ir_loc(fe->ctx, fe->fn->file, 0, 0);
	return ir_loc(fe->ctx, fe->fn->file, fe->fn->line0 + line, col + 1);
}

void fe_set_loc(Fe *fe, PyObject *node)
{
	if (node)
		fe->b.loc = fe_loc(fe, node);
}

bool fe_has_error(Fe *fe)
{
	return ir_ctx_error(fe->ctx) != NULL;
}

void *fe_err(Fe *fe, PyObject *node, IrErrCode code, const char *fmt, ...)
{
	if (fe_has_error(fe))
		return NULL; /* keep the first, innermost error */
	va_list ap;
	va_start(ap, fmt);
	char *msg = ir_vfmt(fe->ctx, fmt, ap);
	va_end(ap);
	/* an error inside the language's own @jit library (tl.sort, ...) is
	 * reported at the user's call of it */
	FeFn *fn = fe->fn, *at = fn;
	PyObject *where = node;
	while (at && at->caller && at->call_node && at->file && strstr(at->file, "ctriton/language/")) {
		where = at->call_node;
		at = at->caller;
	}
	fe->fn = at;
	IrLoc loc = fe_loc(fe, where);
	fe->fn = fn;
	ir_error(fe->ctx, code, loc, "%s", msg);
	return NULL;
}

const char *fe_str(Fe *fe, PyObject *o)
{
	PyObject *s = fe_keep(fe, PyObject_Str(o));
	if (!s) {
		PyErr_Clear();
		return "<?>";
	}
	const char *u = PyUnicode_AsUTF8AndSize(s, NULL);
	if (!u) {
		PyErr_Clear();
		return "<?>";
	}
	return ir_strdup(fe->ctx, u);
}

void *fe_pyerr(Fe *fe, PyObject *node, const char *what)
{
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	const char *tname = "error", *msg = "";
	if (type) {
		PyObject *n = fe_attr(fe, type, "__name__");
		if (n)
			tname = fe_str(fe, n);
	}
	if (value)
		msg = fe_str(fe, value);
	Py_XDECREF(type);
	Py_XDECREF(value);
	Py_XDECREF(tb);
	return fe_err(fe, node, IR_ERR_VALUE, "%s raised %s: %s", what, tname, msg);
}

const char *fe_tyname(Fe *fe, const IrType *t)
{
	return ir_print_type(fe->ctx, t);
}

/* ---- dtypes ------------------------------------------------------------- */

const IrType *fe_dtype_to_ir(Fe *fe, PyObject *dt)
{
	if (!dt || PyObject_IsInstance(dt, fe->cls_dtype) != 1) {
		PyErr_Clear();
		return NULL;
	}
	if (PyObject_IsInstance(dt, fe->cls_ptr) == 1) {
		const IrType *e = fe_dtype_to_ir(fe, fe_attr(fe, dt, "element_ty"));
		PyObject *as = fe_attr(fe, dt, "address_space");
		int space = as ? (int)PyLong_AsLong(as) : 1;
		PyObject *cst = fe_attr(fe, dt, "const");
		bool is_const = cst && PyObject_IsTrue(cst) == 1;
		PyErr_Clear();
		return e ? ir_type_ptr_const(fe->ctx, e, space, is_const) : NULL;
	}
	PyObject *ir = fe_attr(fe, dt, "_ir");
	if (!ir || !PyUnicode_Check(ir))
		return NULL;
	int k = ir_kind_by_name(PyUnicode_AsUTF8AndSize(ir, NULL));
	return k < 0 ? NULL : ir_type(fe->ctx, (IrTypeKind)k);
}

PyObject *fe_ir_to_dtype(Fe *fe, const IrType *t)
{
	if (ir_is_ptr(t)) {
		PyObject *e = fe_ir_to_dtype(fe, t->elem);
		if (!e)
			return NULL;
		PyObject *as = PyLong_FromLong(t->addrspace);
		PyObject *r = PyObject_CallFunctionObjArgs(fe->cls_ptr, e, as, t->is_const ? Py_True : Py_False, NULL);
		Py_XDECREF(as);
		return fe_keep(fe, r);
	}
	const char *n = ir_kind_name(t->kind);
	if (!n)
		return NULL;
	return PyDict_GetItemString(fe->ir_to_dtype, n);
}

bool fe_is_jit(Fe *fe, PyObject *o)
{
	PyObject *m = PyObject_GetAttrString(o, "_ctriton_jit");
	if (!m) {
		PyErr_Clear();
		return false;
	}
	bool r = PyObject_IsTrue(m) == 1 && !PyType_Check(o);
	Py_DECREF(m);
	return r;
}

const char *fe_builtin_name(Fe *fe, PyObject *o)
{
	if (PyType_Check(o) || PyModule_Check(o))
		return NULL;
	PyObject *m = fe_attr(fe, o, "__ctriton_builtin__");
	if (!m || !PyUnicode_Check(m))
		return NULL;
	return ir_intern(fe->ctx, PyUnicode_AsUTF8AndSize(m, NULL));
}

/* ---- parsing ------------------------------------------------------------ */

PyObject *fe_parse_fn(Fe *fe, PyObject *jitfn, PyObject *node)
{
	PyObject *hit = PyDict_GetItem(fe->parse_cache, jitfn);
	if (hit)
		return hit;
	PyObject *src = fe_attr(fe, jitfn, "src");
	if (!src)
		return fe_err(fe, node, IR_ERR_VALUE, "@jit function has no source (.src)");
	PyObject *tree = fe_keep(fe, PyObject_CallMethod(fe->ast_mod, "parse", "O", src));
	if (!tree)
		return fe_pyerr(fe, node, "parsing the @jit function's source");
	PyObject *body = fe_attr(fe, tree, "body");
	PyObject *fdef = body && PyList_Size(body) > 0 ? PyList_GetItem(body, 0) : NULL;
	if (!fdef || fe_kind(fe, fdef) != N_FunctionDef)
		return fe_err(fe, node, IR_ERR_SYNTAX, "@jit source does not start with a def");
	PyDict_SetItem(fe->parse_cache, jitfn, fdef);
	return fdef;
}

/* ---- signature ---------------------------------------------------------- */

/* Triton's signature type string -> IR type ("*fp32", "*kfp16", "i32"). */
static const IrType *sig_type(Fe *fe, const char *s)
{
	if (s[0] == '*') {
		s++;
		bool is_const = *s == 'k'; /* a tl.const argument: read-only */
		if (is_const)
			s++;
		const IrType *e = sig_type(fe, s);
		return e ? ir_type_ptr_const(fe->ctx, e, 1, is_const) : NULL;
	}
	static const struct {
		const char *sig, *ir;
	} map[] = {
		{"i1", "i1"},     {"u1", "i1"},       {"i8", "i8"},         {"i16", "i16"},
		{"i32", "i32"},   {"i64", "i64"},     {"u8", "u8"},         {"u16", "u16"},
		{"u32", "u32"},   {"u64", "u64"},     {"fp16", "f16"},      {"bf16", "bf16"},
		{"fp32", "f32"},  {"fp64", "f64"},    {"fp8e4nv", "f8e4m3"}, {"fp8e5", "f8e5m2"},
		{"fp8e4b15", "f8e4b15"}, {"fp8e4b8", "f8e4b8"}, {"fp8e5b16", "f8e5b16"},
		{"f16", "f16"},   {"f32", "f32"},     {"f64", "f64"},       {"B", "i1"},
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (strcmp(s, map[i].sig) == 0)
			return ir_type(fe->ctx, (IrTypeKind)ir_kind_by_name(map[i].ir));
	return NULL;
}

/* constexprs may be keyed by name or by (index,) tuples. */
static PyObject *lookup_constexpr(PyObject *constexprs, const char *name, int index)
{
	if (!constexprs || !PyDict_Check(constexprs))
		return NULL;
	PyObject *v = PyDict_GetItemString(constexprs, name);
	if (v)
		return v;
	PyObject *key = Py_BuildValue("(i)", index);
	v = PyDict_GetItem(constexprs, key);
	Py_DECREF(key);
	if (v)
		return v;
	PyObject *ik = PyLong_FromLong(index);
	v = PyDict_GetItem(constexprs, ik);
	Py_DECREF(ik);
	return v;
}

static bool has_divisibility(Fe *fe, PyObject *attrs, const char *name, int index)
{
	if (!attrs || !PyDict_Check(attrs))
		return false;
	PyObject *v = lookup_constexpr(attrs, name, index);
	if (!v)
		return false;
	if (PyDict_Check(v)) {
		PyObject *d = PyDict_GetItemString(v, "divisibility");
		if (!d)
			d = PyDict_GetItemString(v, "tt.divisibility");
		return d && PyLong_Check(d) && PyLong_AsLong(d) == 16;
	}
	if (PyList_Check(v) || PyTuple_Check(v)) { /* [["tt.divisibility", 16]] */
		PyObject *seq = fe_keep(fe, PySequence_List(v));
		for (Py_ssize_t i = 0; seq && i < PyList_Size(seq); i++) {
			PyObject *p = PyList_GetItem(seq, i);
			if ((PyList_Check(p) || PyTuple_Check(p)) && PySequence_Size(p) == 2) {
				PyObject *k = fe_keep(fe, PySequence_GetItem(p, 0));
				if (k && PyUnicode_Check(k) &&
				    strstr(PyUnicode_AsUTF8AndSize(k, NULL), "divisibility"))
					return true;
			}
		}
	}
	return false;
}

static PyObject *unwrap_constexpr(Fe *fe, PyObject *v)
{
	if (PyObject_IsInstance(v, fe->cls_constexpr) == 1) {
		PyObject *inner = fe_attr(fe, v, "value");
		return inner ? inner : v;
	}
	PyErr_Clear();
	return v;
}

static bool setup(Fe *fe)
{
	fe->keep = PyList_New(0);
	if (!fe->keep)
		return false;
	fe->ast_mod = fe_keep(fe, PyImport_ImportModule("ast"));
	fe->tl = fe_keep(fe, PyImport_ImportModule("ctriton.language"));
	PyObject *core = fe_keep(fe, PyImport_ImportModule("ctriton.language.core"));
	PyObject *jitm = fe_keep(fe, PyImport_ImportModule("ctriton.runtime.jit"));
	fe->builtins = fe_keep(fe, PyImport_ImportModule("builtins"));
	if (!fe->ast_mod || !fe->tl || !core || !fe->builtins || !jitm)
		return false;
	static const char *names[] = {
		"",
#define NODE(x) #x,
		FE_NODES(NODE)
#undef NODE
	};
	for (int i = 1; i < N_COUNT_; i++)
		fe->node_types[i] = fe_attr(fe, fe->ast_mod, names[i]);
	fe->cls_dtype = fe_attr(fe, core, "dtype");
	fe->cls_ptr = fe_attr(fe, core, "pointer_type");
	fe->cls_block = fe_attr(fe, core, "block_type");
	fe->cls_constexpr = fe_attr(fe, core, "constexpr");
	fe->cls_tensor = fe_attr(fe, core, "tensor");
	fe->ir_to_dtype = fe_attr(fe, core, "_IR_TO_DTYPE");
	fe->cls_tdesc = fe_attr(fe, core, "tensor_descriptor");
	fe->cls_blockptr = fe_attr(fe, core, "_block_ptr");
	fe->jit_cls = fe_attr(fe, jitm, "JITFunction");
	fe->parse_cache = fe_keep(fe, PyDict_New());
	return fe->cls_dtype && fe->cls_ptr && fe->cls_constexpr && fe->ir_to_dtype && fe->parse_cache;
}

static void raise_error(Fe *fe, IrError *e)
{
	PyObject *mod = PyImport_ImportModule("ctriton.compiler.errors");
	PyObject *cls = mod ? PyObject_GetAttrString(mod, "CompilationError") : NULL;
	Py_XDECREF(mod);
	if (!cls)
		return;
	PyObject *exc;
	if (e->loc.file && e->loc.line)
		exc = PyObject_CallFunction(cls, "ssii", e->msg, e->loc.file, e->loc.line, e->loc.col);
	else
		exc = PyObject_CallFunction(cls, "s", e->msg);
	Py_DECREF(cls);
	if (exc) {
		PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
		Py_DECREF(exc);
	}
}

static void set_module_attrs(Fe *fe, PyObject *options, bool *overflow, bool *cpu)
{
	if (!options || !PyDict_Check(options))
		return;
	PyObject *key, *val;
	Py_ssize_t pos = 0;
	while (PyDict_Next(options, &pos, &key, &val)) {
		if (!PyUnicode_Check(key))
			continue;
		const char *k = PyUnicode_AsUTF8AndSize(key, NULL);
		if (strcmp(k, "debug") == 0) {
			fe->debug = PyObject_IsTrue(val) == 1;
			continue;
		}
		if (strcmp(k, "sanitize") == 0) {
			fe->sanitize = PyObject_IsTrue(val) == 1;
			continue;
		}
		if (strcmp(k, "sanitize_overflow") == 0) {
			*overflow = val == Py_None || PyObject_IsTrue(val) != 0;
			continue;
		}
		if (strcmp(k, "target") == 0) {
			const char *ts = PyUnicode_Check(val) ? PyUnicode_AsUTF8AndSize(val, NULL) : NULL;
			*cpu = ts && strncmp(ts, "cpu:", 4) == 0;
			int cc = ts && strncmp(ts, "cuda:", 5) == 0 ? (int)strtol(ts + 5, NULL, 10) : 0;
			fe->tma_arch = cc >= 90 ? cc : 0;
			continue;
		}
		if (strcmp(k, "kernel_name") == 0 && PyUnicode_Check(val)) {
			fe->kernel_name = ir_intern(fe->ctx, PyUnicode_AsUTF8AndSize(val, NULL));
			continue;
		}
		if (PyLong_Check(val) && !PyBool_Check(val))
			ir_set_attr_int(fe->ctx, &fe->m->nattrs, &fe->m->attrs, k, PyLong_AsLongLong(val));
	}
	PyErr_Clear();
}

/* A tuple argument (signature st: nested tuple of type strings) at key
 * path (argument index, element indices). Without f, appends the types of
 * its runtime leaves to ptys; with f, builds its value from f's parameters
 * (from *np on). Constexpr leaves, divisibility and namedtuple classes come
 * keyed by path in constexprs/attrs. NULL + error. */
static FeVal *tuple_param(Fe *fe, PyObject *a, const char *an, PyObject *st, PyObject *path,
			  PyObject *constexprs, PyObject *attrs, const IrType **ptys, int *np, IrFunc *f)
{
	Py_ssize_t n = PyTuple_Size(st);
	FeVal **items = ir_alloc(fe->ctx, sizeof(FeVal *) * (size_t)(n + 1));
	for (Py_ssize_t j = 0; j < n; j++) {
		PyObject *sub = PyTuple_GetItem(st, j);
		PyObject *jo = fe_keep(fe, PyTuple_Pack(1, fe_keep(fe, PyLong_FromSsize_t(j))));
		PyObject *p = fe_keep(fe, PySequence_Concat(path, jo));
		if (PyTuple_Check(sub)) {
			items[j] = tuple_param(fe, a, an, sub, p, constexprs, attrs, ptys, np, f);
			if (!items[j])
				return NULL;
			continue;
		}
		const char *ss = PyUnicode_Check(sub) ? PyUnicode_AsUTF8AndSize(sub, NULL) : "?";
		if (strcmp(ss, "constexpr") == 0) {
			PyObject *cv = constexprs && PyDict_Check(constexprs) ? PyDict_GetItem(constexprs, p) : NULL;
			if (!cv)
				return fe_err(fe, a, IR_ERR_VALUE, "constexpr element %s of argument '%s' has no value",
					      fe_str(fe, p), an);
			items[j] = fe_const(fe, unwrap_constexpr(fe, cv));
			continue;
		}
		const IrType *t = sig_type(fe, ss);
		if (!t)
			return fe_err(fe, a, IR_ERR_VALUE, "unsupported signature type '%s' in argument '%s'", ss, an);
		if (!f) {
			ptys[(*np)++] = t;
			items[j] = fe_none(fe);
			continue;
		}
		/* the parameter's name: the argument's name and the element path */
		char *clean = ir_alloc(fe->ctx, strlen(an) + 1 + 8 * (size_t)PyTuple_Size(p) + 1);
		size_t k = 0;
		for (const char *c = an; *c; c++)
			clean[k++] = *c;
		for (Py_ssize_t q = 1; q < PyTuple_Size(p); q++)
			k += (size_t)sprintf(clean + k, "_%ld", PyLong_AsLong(PyTuple_GetItem(p, q)));
		clean[k] = 0;
		const char *pn = ir_intern(fe->ctx, clean);
		IrParam *prm = &f->params[*np];
		prm->name = pn;
		PyObject *av = attrs && PyDict_Check(attrs) ? PyDict_GetItem(attrs, p) : NULL;
		PyObject *d = av && PyDict_Check(av) ? PyDict_GetItemString(av, "divisibility") : NULL;
		if (d && PyLong_Check(d) && PyLong_AsLong(d) == 16)
			ir_set_attr_int(fe->ctx, &prm->nattrs, &prm->attrs, "divisibility", 16);
		f->body->args[*np]->name = pn;
		items[j] = fe_tensor(fe, f->body->args[*np]);
		(*np)++;
	}
	FeVal *r = fe_make_tuple(fe, (int)n, items);
	/* a TensorDescriptor: (base, shape, strides) with its constant block
	 * shape and padding at path + ("tensordesc",) */
	PyObject *dk = fe_keep(fe, PySequence_Concat(path, fe_keep(fe, Py_BuildValue("(s)", "tensordesc"))));
	PyObject *dinfo = constexprs && PyDict_Check(constexprs) && dk ? PyDict_GetItem(constexprs, dk) : NULL;
	if (dinfo) {
		int tm = f && PyTuple_Size(path) == 1 && fe->tmap_of_arg ? fe->tmap_of_arg[PyLong_AsLong(PyTuple_GetItem(path, 0))] : -1;
		return f ? fe_tdesc_from_param(fe, a, r, dinfo, tm) : r;
	}
	PyObject *nk = fe_keep(fe, PyUnicode_FromString("namedtuple"));
	PyObject *tk = fe_keep(fe, PySequence_Concat(path, fe_keep(fe, PyTuple_Pack(1, nk))));
	PyObject *cls = constexprs && PyDict_Check(constexprs) && tk ? PyDict_GetItem(constexprs, tk) : NULL;
	if (cls && f) {
		if (r->kind == V_TUPLE)
			r->obj = cls;
		else {
			PyObject *o = fe_keep(fe, PyObject_CallObject(cls, r->obj));
			if (!o)
				return fe_pyerr(fe, a, "namedtuple");
			r = fe_const(fe, o);
		}
	}
	return r;
}

/* The number of runtime leaves (non-constexpr type strings) of a tuple
 * argument's signature: the IR parameters it flattens into. */
static Py_ssize_t tuple_leaves(PyObject *st)
{
	Py_ssize_t n = 0;
	for (Py_ssize_t j = 0; j < PyTuple_Size(st); j++) {
		PyObject *sub = PyTuple_GetItem(st, j);
		if (PyTuple_Check(sub))
			n += tuple_leaves(sub);
		else if (!PyUnicode_Check(sub) || PyUnicode_CompareWithASCIIString(sub, "constexpr") != 0)
			n++;
	}
	return n;
}

/* Builds the kernel function: parameters, constexpr bindings, body. */
static void compile_kernel(Fe *fe, PyObject *jitfn, PyObject *sig, PyObject *constexprs,
			   PyObject *attrs)
{
	FeFn fn = {0};
	fn.jitfn = jitfn;
	fn.globals = fe_attr(fe, jitfn, "__globals__");
	PyObject *file = fe_attr(fe, jitfn, "file");
	fn.file = ir_intern(fe->ctx, file && PyUnicode_Check(file) ? PyUnicode_AsUTF8AndSize(file, NULL) : "<unknown>");
	PyObject *sl = fe_attr(fe, jitfn, "starting_line");
	fn.line0 = (sl ? (int)PyLong_AsLong(sl) : 1) - 1;
	fe->fn = &fn;
	PyObject *fdef = fe_parse_fn(fe, jitfn, NULL);
	if (!fdef)
		return;
	PyObject *name = fe_attr(fe, jitfn, "__name__");
	PyObject *args = fe_attr(fe, fe_attr(fe, fdef, "args"), "args");
	Py_ssize_t n = args ? PyList_Size(args) : 0;
	PyObject *pyfn = fe_attr(fe, jitfn, "fn");
	PyObject *defaults = pyfn ? fe_attr(fe, pyfn, "__defaults__") : NULL;
	Py_ssize_t ndef = defaults && PyTuple_Check(defaults) ? PyTuple_Size(defaults) : 0;

	/* IR parameters: one per scalar or pointer argument, one per runtime
	 * leaf of a tuple argument */
	Py_ssize_t nparams = n;
	for (Py_ssize_t i = 0; args && i < n; i++) {
		PyObject *an = fe_attr(fe, PyList_GetItem(args, i), "arg");
		PyObject *st = an && sig && PyDict_Check(sig) ? PyDict_GetItem(sig, an) : NULL;
		if (st && PyTuple_Check(st))
			nparams += tuple_leaves(st);
	}
	/* a TensorDescriptor argument on sm_90+ also gets a tensor map (the
	 * launch encodes its CUtensorMap) when its block can be one box of the
	 * copy engine per 128-byte column block: parameters after all others */
	int *tmap_of = ir_alloc(fe->ctx, sizeof(int) * (size_t)(n + 1));
	int64_t tmap_info[8][4]; /* arg, B0, B1, nan (8: the launcher's MAXTMAP) */
	const IrType *tmap_elem[8];
	int ntmap = 0;
	for (Py_ssize_t i = 0; args && i < n; i++) {
		tmap_of[i] = -1;
		PyObject *an = fe_attr(fe, PyList_GetItem(args, i), "arg");
		PyObject *st = an && sig && PyDict_Check(sig) ? PyDict_GetItem(sig, an) : NULL;
		if (!fe->tma_arch || !st || !PyTuple_Check(st) || PyTuple_Size(st) != 3 || ntmap == 8)
			continue;
		PyObject *dk = fe_keep(fe, Py_BuildValue("(ns)", i, "tensordesc"));
		PyObject *di = constexprs && PyDict_Check(constexprs) && dk ? PyDict_GetItem(constexprs, dk) : NULL;
		PyObject *b0 = PyTuple_GetItem(st, 0);
		const IrType *bt = b0 && PyUnicode_Check(b0) ? sig_type(fe, PyUnicode_AsUTF8AndSize(b0, NULL)) : NULL;
		PyErr_Clear();
		if (!di || !PyTuple_Check(di) || PyTuple_Size(di) != 2 || !bt || !ir_is_ptr(bt) || !bt->elem)
			continue;
		PyObject *bl = PyTuple_GetItem(di, 0), *pad = PyTuple_GetItem(di, 1);
		if (!PyTuple_Check(bl) || PyTuple_Size(bl) != 2)
			continue;
		int64_t *ti = tmap_info[ntmap];
		ti[0] = i;
		ti[1] = PyLong_AsLongLong(PyTuple_GetItem(bl, 0));
		ti[2] = PyLong_AsLongLong(PyTuple_GetItem(bl, 1));
		ti[3] = pad && PyUnicode_Check(pad) && PyUnicode_CompareWithASCIIString(pad, "nan") == 0;
		PyErr_Clear();
		if (!fe_tmap_ok(bt->elem, ti[1], ti[2], ti[3]))
			continue;
		tmap_elem[ntmap] = bt->elem;
		tmap_of[i] = ntmap++;
	}
	nparams += ntmap;
	const IrType **ptys = ir_alloc(fe->ctx, sizeof(IrType *) * (size_t)(nparams + 1));
	int *pidx = ir_alloc(fe->ctx, sizeof(int) * (size_t)(n + 1));
	PyObject **cvals = ir_alloc(fe->ctx, sizeof(PyObject *) * (size_t)(n + 1));
	int np = 0;
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *a = PyList_GetItem(args, i);
		const char *an = PyUnicode_AsUTF8AndSize(fe_attr(fe, a, "arg"), NULL);
		PyObject *cv = lookup_constexpr(constexprs, an, (int)i);
		PyObject *st = sig && PyDict_Check(sig) ? PyDict_GetItemString(sig, an) : NULL;
		const char *ss = st && PyUnicode_Check(st) ? PyUnicode_AsUTF8AndSize(st, NULL) : NULL;
		if (!cv && ss && strcmp(ss, "constexpr") == 0 && i >= n - ndef)
			cv = PyTuple_GetItem(defaults, i - (n - ndef));
		if (!cv && !ss && i >= n - ndef)
			cv = PyTuple_GetItem(defaults, i - (n - ndef));
		if (cv) {
			cvals[i] = unwrap_constexpr(fe, cv);
			continue;
		}
		if (st && PyTuple_Check(st)) {
			PyObject *path = fe_keep(fe, Py_BuildValue("(n)", i));
			pidx[i] = np;
			if (!tuple_param(fe, a, an, st, path, constexprs, attrs, ptys, &np, NULL))
				return;
			continue;
		}
		if (!ss) {
			fe_err(fe, a, IR_ERR_VALUE, "no type in the signature for argument '%s'", an);
			return;
		}
		if (strcmp(ss, "constexpr") == 0) {
			fe_err(fe, a, IR_ERR_VALUE, "constexpr argument '%s' has no value", an);
			return;
		}
		const IrType *t = sig_type(fe, ss);
		if (!t) {
			fe_err(fe, a, IR_ERR_VALUE, "unsupported signature type '%s' for argument '%s'", ss, an);
			return;
		}
		pidx[i] = np;
		ptys[np++] = t;
	}
	int np0 = np;
	for (int j = 0; j < ntmap; j++)
		ptys[np++] = sig_type(fe, "*i8");
	IrFunc *f = ir_func_new(fe->m, fe->kernel_name ? fe->kernel_name : PyUnicode_AsUTF8AndSize(name, NULL), np,
				ptys, 0, NULL, fe_loc(fe, fdef));
	f->is_kernel = true;
	for (int j = 0; j < ntmap; j++) {
		IrParam *prm = &f->params[np0 + j];
		int64_t *ti = tmap_info[j];
		const char *an = PyUnicode_AsUTF8AndSize(fe_attr(fe, PyList_GetItem(args, ti[0]), "arg"), NULL);
		char *nm = ir_alloc(fe->ctx, strlen(an) + 8);
		sprintf(nm, "%s_tmap", an);
		prm->name = ir_intern(fe->ctx, nm);
		f->body->args[np0 + j]->name = prm->name;
		fe_tmap_attrs(fe, prm, ti[0], tmap_elem[j], ti[1], ti[2], ti[3]);
	}
	for (Py_ssize_t i = 0; i < n; i++)
		tmap_of[i] = tmap_of[i] >= 0 ? np0 + tmap_of[i] : -1;
	fe->tmap_of_arg = tmap_of;
	fe->func = f;
	ir_builder_init(&fe->b, fe->ctx);
	ir_builder_at_end(&fe->b, f->body);
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *a = PyList_GetItem(args, i);
		const char *an = ir_intern(fe->ctx, PyUnicode_AsUTF8AndSize(fe_attr(fe, a, "arg"), NULL));
		if (cvals[i]) {
			fe_scope_set(fe, &fn.scope, an, fe_const(fe, cvals[i]));
			continue;
		}
		PyObject *st = sig && PyDict_Check(sig) ? PyDict_GetItemString(sig, an) : NULL;
		if (st && PyTuple_Check(st)) {
			PyObject *path = fe_keep(fe, Py_BuildValue("(n)", i));
			int k = pidx[i];
			FeVal *tv = tuple_param(fe, a, an, st, path, constexprs, attrs, ptys, &k, f);
			if (!tv)
				return;
			fe_scope_set(fe, &fn.scope, an, tv);
			continue;
		}
		IrParam *p = &f->params[pidx[i]];
		p->name = an;
		if (has_divisibility(fe, attrs, an, (int)i))
			ir_set_attr_int(fe->ctx, &p->nattrs, &p->attrs, "divisibility", 16);
		f->body->args[pidx[i]]->name = an;
		fe_scope_set(fe, &fn.scope, an, fe_tensor(fe, f->body->args[pidx[i]]));
	}
	/* the sanitizer's messages name arguments: keep the names in the IR */
	for (int i = 0; fe->sanitize && i < np; i++)
		if (f->params[i].name) {
			IrAttr na = {.name = ir_intern(fe->ctx, "name"), .kind = ATTR_STR, .s = f->params[i].name};
			ir_set_attr(fe->ctx, &f->params[i].nattrs, &f->params[i].attrs, &na);
		}
	if (!fe_stmts(fe, fe_attr(fe, fdef, "body")))
		return;
	if (fn.ret && !(fn.ret->kind == V_CONST && fn.ret->obj == Py_None)) {
		fe_err(fe, fdef, IR_ERR_VALUE, "a kernel must not return a value");
		return;
	}
	IrBlock *blk = fe->b.block;
	if (!blk->last || blk->last->opc != OP_RETURN) {
		fe->b.loc = ir_loc(fe->ctx, NULL, 0, 0);
		ir_return(&fe->b, 0, NULL);
	}
	fe_tdesc_finish(fe);
}

PyObject *py_ast_to_ttir(PyObject *self, PyObject *args, PyObject *kwargs)
{
	static char k0[] = "jitfn", k1[] = "signature", k2[] = "constexprs", k3[] = "attrs", k4[] = "options";
	static char *kwlist[] = {k0, k1, k2, k3, k4, NULL};
	PyObject *jitfn, *sig = NULL, *constexprs = NULL, *attrs = NULL, *options = NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOO", kwlist, &jitfn, &sig, &constexprs,
					 &attrs, &options))
		return NULL;
	Fe fe = {0};
	fe.ctx = ir_ctx_new();
	if (!fe.ctx)
		return PyErr_NoMemory();
	fe.m = ir_module_new(fe.ctx);
	PyObject *result = NULL;
	if (!setup(&fe)) {
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_RuntimeError, "ctriton frontend: cannot import ctriton.language");
		goto out;
	}
	bool overflow = true, cpu = false;
	set_module_attrs(&fe, options, &overflow, &cpu);
	if (!fe.debug) {
		PyObject *d = fe_attr(&fe, jitfn, "debug");
		fe.debug = d && PyObject_IsTrue(d) == 1;
	}
	/* integer overflow checks: with debug as in Triton (sanitize_overflow,
	 * on by default, turns them off), and under the CPU sanitizer */
	fe.overflow = overflow && (fe.debug || (fe.sanitize && cpu));
	PyErr_Clear();
	compile_kernel(&fe, jitfn, sig, constexprs, attrs);
	/* the clean-ups (CSE, DCE) are the pipeline's first passes (jit/pipeline.c),
	 * run on this text as on any .ttir file */
	IrError *err = ir_ctx_error(fe.ctx);
	if (!err) {
		IrError *verr = ir_verify(fe.m);
		if (verr)
			err = ir_error(fe.ctx, IR_ERR_INTERNAL, verr->loc,
				       "internal error: the frontend produced invalid IR: %s", verr->msg);
	}
	if (err) {
		PyErr_Clear();
		raise_error(&fe, err);
		goto out;
	}
	result = PyUnicode_FromString(ir_print_module(fe.m));
out:
	Py_XDECREF(fe.keep);
	ir_ctx_free(fe.ctx);
	return result;
}

PyObject *py_builtin_table(PyObject *self, PyObject *noargs)
{
	PyObject *l = PyList_New(0);
	const char *name, *params;
	bool method;
	for (int i = 0; l && fe_builtin_row(i, &name, &params, &method); i++) {
		PyObject *row = Py_BuildValue("(ssO)", name, params, method ? Py_True : Py_False);
		if (!row || PyList_Append(l, row) < 0) {
			Py_XDECREF(row);
			Py_DECREF(l);
			return NULL;
		}
		Py_DECREF(row);
	}
	return l;
}
