/* launch.c: what runs on every `kernel[grid](*args)`, in C: binding the
 * arguments to the parameters, their specialization key (specialize.c), the
 * lookup of that key in the kernel's in-memory cache, the packing of the
 * kernel parameters and the launch. Only a cache miss goes back to Python
 * (JITFunction._ct_compile), which runs the compile driver through
 * compile_ttir() (bindings.c).
 *
 * Objects:
 *   KernelRuntime  one per @jit function: parameter table + variant cache.
 *                  rt[grid] -> Launcher; Launcher(*args, **kw) launches.
 *   Binary         one compiled variant: the jitted CPU code or the CUDA
 *                  function, its launch metadata and parameter plan.
 * Functions: set_backend.
 */
#include "runtime.h"

/* Until a driver is active (ctriton.runtime.driver.active, which calls
 * set_backend), py_rt.backend is -1: the first launch activates the default one
 * (the GPU when a driver and device are present), so that arguments are
 * classified for the backend that will run them. */
static int activate_default_driver(void)
{
	PyObject *mod = PyImport_ImportModule("ctriton.runtime.driver");
	if (!mod)
		return -1;
	PyObject *drv = PyObject_GetAttrString(mod, "driver");
	Py_DECREF(mod);
	PyObject *active = drv ? PyObject_GetAttrString(drv, "active") : NULL;
	Py_XDECREF(drv);
	Py_XDECREF(active);
	return active ? 0 : -1;
}

/* ------------------------------------------------------------------------- */
/* Binary: one compiled variant                                              */
/* ------------------------------------------------------------------------- */

typedef struct Binary {
	PyObject_HEAD
	int backend;
	BeCpuKernel *cpu; /* owned through the capsule below */
	PyObject *cpu_owner;
	JitCudaKernel cuk; /* loaded CUDA function (cuk.function NULL: none) */
	int num_warps, num_ctas, shared;
	PyObject *sig; /* tuple of type strings (nested tuples for tuple args) */
} Binary;

static PyObject *BinaryType;

static void Binary_dealloc(PyObject *self)
{
	Binary *b = (Binary *)self;
	Py_XDECREF(b->cpu_owner);
	Py_XDECREF(b->sig);
	PyTypeObject *tp = Py_TYPE(self);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
	tp_free(self);
	Py_DECREF(tp);
}

/* Binary(backend, signature, num_warps, num_ctas, shared, cpu_kernel_capsule,
 *        cuda_image, name): a launchable variant. */
static PyObject *Binary_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
	int backend, nw, nc, shared;
	PyObject *sig, *cap, *image;
	const char *name;
	if (!PyArg_ParseTuple(args, "iOiiiOOs", &backend, &sig, &nw, &nc, &shared, &cap, &image,
			      &name))
		return NULL;
	allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
	Binary *b = (Binary *)alloc(tp, 0);
	if (!b)
		return NULL;
	b->backend = backend;
	b->num_warps = nw;
	b->num_ctas = nc;
	b->shared = shared;
	b->sig = PySequence_Tuple(sig);
	if (!b->sig)
		goto fail;
	if (cap != Py_None) {
		b->cpu = PyCapsule_GetPointer(cap, "ctriton.cpu_kernel");
		if (!b->cpu)
			goto fail;
		Py_INCREF(cap);
		b->cpu_owner = cap;
	}
	if (backend == JIT_BACKEND_CUDA && image != Py_None) {
		char err[4096];
		Py_buffer view;
		if (PyObject_GetBuffer(image, &view, PyBUF_SIMPLE) < 0)
			goto fail;
		/* PTX images are passed NUL-terminated; a cubin is an ELF file. */
		const unsigned char *img = view.buf;
		bool is_cubin = view.len >= 4 && img[0] == 0x7f && img[1] == 'E' && img[2] == 'L' &&
				img[3] == 'F';
		int rc = jit_cuda_init(err, sizeof err);
		if (rc == 0)
			rc = jit_cuda_load(view.buf, (size_t)view.len, is_cubin, name, shared, nw,
					   &b->cuk, err, sizeof err);
		PyBuffer_Release(&view);
		if (rc != 0) {
			PyErr_SetString(PyExc_RuntimeError, err);
			goto fail;
		}
	}
	return (PyObject *)b;
fail:
	Py_DECREF(b);
	return NULL;
}

/* Grid (tuple/list of 1..3 ints, or an int) -> g[3]. */
static int read_grid(PyObject *grid, int g[3])
{
	g[0] = g[1] = g[2] = 1;
	if (PyLong_Check(grid)) {
		g[0] = (int)PyLong_AsLong(grid);
		return PyErr_Occurred() ? -1 : 0;
	}
	PyObject *seq = PySequence_Tuple(grid);
	if (!seq) {
		PyErr_SetString(PyExc_TypeError, "grid must be a tuple of 1 to 3 ints or a callable");
		return -1;
	}
	Py_ssize_t n = PyTuple_Size(seq);
	if (n < 1 || n > 3) {
		Py_DECREF(seq);
		PyErr_Format(PyExc_ValueError, "grid must have 1 to 3 dimensions, got %zd", n);
		return -1;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		g[i] = (int)PyLong_AsLong(PyTuple_GetItem(seq, i));
		if (PyErr_Occurred()) {
			Py_DECREF(seq);
			PyErr_SetString(PyExc_TypeError, "grid entries must be ints");
			return -1;
		}
	}
	Py_DECREF(seq);
	return 0;
}

/* The stream to launch on: the driver's getter (torch's current stream), or 0. */
static void *current_stream(void)
{
	if (!py_rt.stream_fn)
		return NULL;
	PyObject *s = PyObject_CallNoArgs(py_rt.stream_fn);
	if (!s) {
		PyErr_Clear();
		return NULL;
	}
	void *p = (void *)(uintptr_t)PyLong_AsUnsignedLongLong(s);
	Py_DECREF(s);
	PyErr_Clear();
	return p;
}

/* Launches b over grid with packed parameters. */
static int binary_launch(Binary *b, const int g[3], Pack *pk, PyObject *stream)
{
	char err[1024];
	if (g[0] <= 0 || g[1] <= 0 || g[2] <= 0)
		return 0; /* an empty grid launches nothing */
	if (b->backend == JIT_BACKEND_CUDA) {
		if (!b->cuk.function) {
			PyErr_SetString(PyExc_RuntimeError, "kernel has no loaded CUDA function");
			return -1;
		}
		void *st = stream && stream != Py_None
				   ? (void *)(uintptr_t)PyLong_AsUnsignedLongLong(stream)
				   : current_stream();
		int rc;
		Py_BEGIN_ALLOW_THREADS
		const unsigned ug[3] = {(unsigned)g[0], (unsigned)g[1], (unsigned)g[2]};
		rc = jit_cuda_launch(&b->cuk, ug, (uint64_t)(uintptr_t)st, pk->params, err, sizeof err);
		Py_END_ALLOW_THREADS
		if (rc != 0) {
			PyErr_SetString(PyExc_RuntimeError, err);
			return -1;
		}
		return 0;
	}
	if (!b->cpu) {
		PyErr_SetString(PyExc_RuntimeError,
				"kernel has no CPU code (this build of ctriton has no CPU backend)");
		return -1;
	}
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = be_cpu_launch(b->cpu, g, pk->params, 0, err, sizeof err);
	Py_END_ALLOW_THREADS
	if (rc != 0) {
		PyErr_SetString(PyExc_RuntimeError, err);
		return -1;
	}
	return 0;
}

/* binary.launch(grid, args, stream=None): every argument of the signature,
 * constexprs included (they are skipped). */
static PyObject *Binary_launch(PyObject *self, PyObject *args)
{
	Binary *b = (Binary *)self;
	PyObject *grid, *argt, *stream = Py_None;
	if (!PyArg_ParseTuple(args, "OO|O", &grid, &argt, &stream))
		return NULL;
	int g[3];
	if (read_grid(grid, g) < 0)
		return NULL;
	Py_ssize_t n = PyTuple_Size(argt), ns = PyTuple_Size(b->sig);
	if (n != ns) {
		PyErr_Format(PyExc_TypeError, "compiled kernel takes %zd arguments (%zd given)", ns, n);
		return NULL;
	}
	Pack pk;
	pk.n = 0;
	pk.on_gpu = b->backend == JIT_BACKEND_CUDA;
	for (Py_ssize_t i = 0; i < n; i++)
		if (py_pack_by_sig(&pk, PyTuple_GetItem(b->sig, i), PyTuple_GetItem(argt, i), (int)i) < 0)
			return NULL;
	if (binary_launch(b, g, &pk, stream) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyMethodDef Binary_methods[] = {
	{"launch", Binary_launch, METH_VARARGS, "launch(grid, args, stream=None)"},
	{NULL, NULL, 0, NULL},
};

static PyType_Slot Binary_slots[] = {
	{Py_tp_new, (void *)Binary_new},
	{Py_tp_dealloc, (void *)Binary_dealloc},
	{Py_tp_methods, Binary_methods},
	{0, NULL},
};

static PyType_Spec Binary_spec = {"ctriton._C.Binary", sizeof(Binary), 0, Py_TPFLAGS_DEFAULT,
				  Binary_slots};

/* ------------------------------------------------------------------------- */
/* KernelRuntime: per-@jit-function parameter table and variant cache        */
/* ------------------------------------------------------------------------- */

typedef struct Entry {
	uint64_t hash;
	char *key;
	size_t klen;
	PyObject *compiled; /* CompiledKernel */
	Binary *bin;
} Entry;

/* Launch options accepted as keyword arguments; their values are part of
 * the key. The first NOPT_KEY go into the key in this order. */
static const char *const OPT_NAMES[] = {"num_warps", "num_stages", "num_ctas", "maxnreg",
					"enable_fp_fusion", "debug", "enable_reflect_ftz",
					"launch_cooperative_grid", "launch_pdl",
					"default_dot_input_precision", "max_num_imprecise_acc_default",
					"sanitize_overflow", "instrumentation_mode", "stream"};
enum { NOPT = sizeof OPT_NAMES / sizeof OPT_NAMES[0], OPT_STREAM = NOPT - 1 };

typedef struct KernelRuntime {
	PyObject_HEAD
	PyObject *jitfn; /* weak in spirit: the JITFunction owns us; borrowed */
	int nparams;
	Param *params;
	PyObject *opt_names[NOPT];
	Entry *tab;
	size_t cap, n;
} KernelRuntime;

static PyObject *RuntimeType, *LauncherType;

static uint64_t fnv1a(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
	return h;
}

static Entry *rt_find(KernelRuntime *rt, const char *key, size_t klen, uint64_t h)
{
	if (!rt->cap)
		return NULL;
	for (size_t i = h & (rt->cap - 1);; i = (i + 1) & (rt->cap - 1)) {
		Entry *e = &rt->tab[i];
		if (!e->key)
			return NULL;
		if (e->hash == h && e->klen == klen && !memcmp(e->key, key, klen))
			return e;
	}
}

static void rt_insert(KernelRuntime *rt, const char *key, size_t klen, uint64_t h,
		      PyObject *compiled, Binary *bin)
{
	if ((rt->n + 1) * 2 > rt->cap) {
		size_t oldcap = rt->cap;
		Entry *old = rt->tab;
		rt->cap = oldcap ? oldcap * 2 : 16;
		rt->tab = calloc(rt->cap, sizeof *rt->tab);
		for (size_t i = 0; i < oldcap; i++) {
			if (!old[i].key)
				continue;
			size_t j = old[i].hash & (rt->cap - 1);
			while (rt->tab[j].key)
				j = (j + 1) & (rt->cap - 1);
			rt->tab[j] = old[i];
		}
		free(old);
	}
	size_t j = h & (rt->cap - 1);
	while (rt->tab[j].key)
		j = (j + 1) & (rt->cap - 1);
	Entry *e = &rt->tab[j];
	e->hash = h;
	e->key = malloc(klen ? klen : 1);
	memcpy(e->key, key, klen);
	e->klen = klen;
	Py_INCREF(compiled);
	e->compiled = compiled;
	Py_XINCREF((PyObject *)bin);
	e->bin = bin;
	rt->n++;
}

static void rt_clear(KernelRuntime *rt)
{
	for (size_t i = 0; i < rt->cap; i++)
		if (rt->tab[i].key) {
			free(rt->tab[i].key);
			Py_DECREF(rt->tab[i].compiled);
			Py_XDECREF((PyObject *)rt->tab[i].bin);
		}
	free(rt->tab);
	rt->tab = NULL;
	rt->cap = rt->n = 0;
}

static void Runtime_dealloc(PyObject *self)
{
	KernelRuntime *rt = (KernelRuntime *)self;
	rt_clear(rt);
	for (int i = 0; i < rt->nparams; i++) {
		Py_XDECREF(rt->params[i].name);
		Py_XDECREF(rt->params[i].dflt);
	}
	free(rt->params);
	for (int i = 0; i < NOPT; i++)
		Py_XDECREF(rt->opt_names[i]);
	PyTypeObject *tp = Py_TYPE(self);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
	tp_free(self);
	Py_DECREF(tp);
}

/* KernelRuntime(jitfn, params): params is a list of
 * (name, is_constexpr, specialize, align, annotation str or None,
 *  has_default, default). */
static PyObject *Runtime_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
	PyObject *jitfn, *plist;
	if (!PyArg_ParseTuple(args, "OO", &jitfn, &plist))
		return NULL;
	allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
	KernelRuntime *rt = (KernelRuntime *)alloc(tp, 0);
	if (!rt)
		return NULL;
	rt->jitfn = jitfn;
	for (int i = 0; i < NOPT; i++)
		rt->opt_names[i] = PyUnicode_InternFromString(OPT_NAMES[i]);
	Py_ssize_t n = PySequence_Size(plist);
	if (n < 0 || n > MAXP) {
		PyErr_SetString(PyExc_ValueError, "bad parameter list");
		Py_DECREF(rt);
		return NULL;
	}
	rt->params = calloc((size_t)n + 1, sizeof(Param));
	rt->nparams = (int)n;
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *t = PySequence_GetItem(plist, i);
		PyObject *name, *annot, *dflt;
		int isc, spec, align, hasd;
		if (!t || !PyArg_ParseTuple(t, "UpppOpO", &name, &isc, &spec, &align, &annot, &hasd,
					    &dflt)) {
			Py_XDECREF(t);
			Py_DECREF(rt);
			return NULL;
		}
		Param *p = &rt->params[i];
		Py_INCREF(name);
		PyUnicode_InternInPlace(&name);
		p->name = name;
		p->is_constexpr = isc;
		p->specialize = spec;
		p->align = align;
		p->annot = -1;
		p->annot_ptr_dt = -1;
		if (annot != Py_None) {
			const char *a = PyUnicode_AsUTF8AndSize(annot, NULL);
			if (a) {
				p->annot = py_kind_of_sig(a);
				if (a[0] == '*')
					p->annot_ptr_dt = py_dt_code_of_name(a + (a[1] == 'k' ? 2 : 1));
			}
			PyErr_Clear();
		}
		if (hasd) {
			Py_INCREF(dflt);
			p->dflt = dflt;
		}
		Py_DECREF(t);
	}
	return (PyObject *)rt;
}

static int name_eq(PyObject *a, PyObject *b)
{
	return a == b || PyUnicode_Compare(a, b) == 0;
}

/* Binds args/kwargs to the parameters (slots, borrowed refs) and collects
 * launch options (opts[i] borrowed or NULL). */
static int bind(KernelRuntime *rt, PyObject *args, PyObject *kwargs, PyObject **slots,
		PyObject **opts)
{
	Py_ssize_t na = PyTuple_Size(args);
	const char *kname = NULL;
	PyObject *fname = PyObject_GetAttrString(rt->jitfn, "__name__");
	if (fname) {
		kname = PyUnicode_AsUTF8AndSize(fname, NULL);
		Py_DECREF(fname); /* the function keeps its name alive */
	}
	if (!kname)
		kname = "kernel";
	PyErr_Clear();
	if (na > rt->nparams) {
		PyErr_Format(PyExc_TypeError, "%s() takes %d arguments but %zd were given", kname,
			     rt->nparams, na);
		return -1;
	}
	for (int i = 0; i < rt->nparams; i++)
		slots[i] = i < na ? PyTuple_GetItem(args, i) : NULL;
	for (int i = 0; i < NOPT; i++)
		opts[i] = NULL;
	if (kwargs) {
		Py_ssize_t pos = 0;
		PyObject *k, *v;
		while (PyDict_Next(kwargs, &pos, &k, &v)) {
			int found = 0;
			for (int i = 0; i < rt->nparams && !found; i++)
				if (name_eq(k, rt->params[i].name)) {
					if (slots[i]) {
						PyErr_Format(PyExc_TypeError,
							     "%s() got multiple values for argument '%U'",
							     kname, k);
						return -1;
					}
					slots[i] = v;
					found = 1;
				}
			for (int i = 0; i < NOPT && !found; i++)
				if (name_eq(k, rt->opt_names[i])) {
					opts[i] = v;
					found = 1;
				}
			if (!found) {
				PyErr_Format(PyExc_KeyError,
					     "%s(): keyword argument '%U' was specified but is neither a "
					     "parameter of the kernel nor a launch option (num_warps, "
					     "num_stages, num_ctas, maxnreg, enable_fp_fusion, debug, ...)",
					     kname, k);
				return -1;
			}
		}
	}
	for (int i = 0; i < rt->nparams; i++)
		if (!slots[i]) {
			if (!rt->params[i].dflt) {
				PyErr_Format(PyExc_TypeError, "%s() missing required argument '%U'", kname,
					     rt->params[i].name);
				return -1;
			}
			slots[i] = rt->params[i].dflt;
		}
	return 0;
}

/* The dict {param name: bound value} a callable grid receives. */
static PyObject *bound_dict(KernelRuntime *rt, PyObject **slots)
{
	PyObject *d = PyDict_New();
	for (int i = 0; d && i < rt->nparams; i++)
		if (PyDict_SetItem(d, rt->params[i].name, slots[i]) < 0) {
			Py_DECREF(d);
			return NULL;
		}
	return d;
}

/* The launch: bind, key, look up (compile on a miss), pack, launch.
 * Returns the CompiledKernel (new reference). */
static PyObject *rt_run(KernelRuntime *rt, PyObject *grid, PyObject *args, PyObject *kwargs,
			int warmup)
{
	PyObject *slots[MAXP], *opts[NOPT];
	if (py_rt.backend < 0 && activate_default_driver() < 0)
		return NULL;
	if (bind(rt, args, kwargs, slots, opts) < 0)
		return NULL;
	Buf key;
	buf_init(&key);
	Pack pk;
	pk.n = 0;
	pk.on_gpu = py_rt.backend == JIT_BACKEND_CUDA;
	PyObject *result = NULL;

	/* 1. The key: backend, then every argument's class, then the options. */
	buf_byte(&key, py_rt.backend);
	for (int i = 0; i < rt->nparams; i++)
		if (py_classify(slots[i], &rt->params[i], i, &key, &pk, NULL, NULL) < 0)
			goto done;
	for (int i = 0; i < OPT_STREAM; i++) {
		buf_byte(&key, i);
		if (opts[i] && py_key_constexpr(&key, opts[i]) < 0)
			goto done;
	}

	/* 2. Lookup; a miss compiles through Python and remembers the variant. */
	uint64_t h = fnv1a(key.p, key.n);
	Entry *e = rt_find(rt, key.p, key.n, h);
	if (!e) {
		PyObject *sigs = PyList_New(0), *specs = PyList_New(0), *od = PyDict_New();
		Buf k2;
		buf_init(&k2);
		Pack pk2;
		pk2.n = 0;
		pk2.on_gpu = pk.on_gpu;
		for (int i = 0; i < rt->nparams; i++)
			if (py_classify(slots[i], &rt->params[i], i, &k2, &pk2, sigs, specs) < 0)
				break;
		buf_free(&k2);
		for (int i = 0; i < OPT_STREAM && !PyErr_Occurred(); i++)
			if (opts[i])
				PyDict_SetItem(od, rt->opt_names[i], opts[i]);
		PyObject *bd = PyErr_Occurred() ? NULL : bound_dict(rt, slots);
		PyObject *compiled = bd ? PyObject_CallMethodObjArgs(rt->jitfn, py_rt.s_compile, bd, sigs,
								     specs, od, NULL)
					: NULL;
		Py_XDECREF(bd);
		Py_DECREF(sigs);
		Py_DECREF(specs);
		Py_DECREF(od);
		if (!compiled)
			goto done;
		rt_insert(rt, key.p, key.n, h, compiled, NULL);
		Py_DECREF(compiled);
		e = rt_find(rt, key.p, key.n, h);
	}
	if (warmup) {
		result = e->compiled;
		Py_INCREF(result);
		goto done;
	}

	/* 3. The grid: a tuple, or a callable of the bound arguments. */
	int g[3];
	if (PyCallable_Check(grid)) {
		PyObject *bd = bound_dict(rt, slots);
		PyObject *gv = bd ? PyObject_CallFunctionObjArgs(grid, bd, NULL) : NULL;
		Py_XDECREF(bd);
		if (!gv)
			goto done;
		int rc = read_grid(gv, g);
		Py_DECREF(gv);
		if (rc < 0)
			goto done;
	} else if (read_grid(grid, g) < 0) {
		goto done;
	}

	/* 4. Launch with the parameters packed during classification. The
	 *    variant's launch handles are made on its first launch. */
	if (!e->bin) {
		PyObject *bin = PyObject_GetAttr(e->compiled, py_rt.s_binary);
		if (!bin)
			goto done;
		if (!PyObject_TypeCheck(bin, (PyTypeObject *)BinaryType)) {
			PyErr_SetString(PyExc_TypeError, "CompiledKernel._binary must be a _C.Binary");
			Py_DECREF(bin);
			goto done;
		}
		e->bin = (Binary *)bin;
	}
	if (binary_launch(e->bin, g, &pk, opts[OPT_STREAM]) < 0)
		goto done;
	result = e->compiled;
	Py_INCREF(result);
done:
	buf_free(&key);
	return result;
}

/* rt.run(grid, args, kwargs, warmup) */
static PyObject *Runtime_run(PyObject *self, PyObject *a)
{
	PyObject *grid, *args, *kwargs;
	int warmup;
	if (!PyArg_ParseTuple(a, "OOOp", &grid, &args, &kwargs, &warmup))
		return NULL;
	return rt_run((KernelRuntime *)self, grid, args, kwargs == Py_None ? NULL : kwargs, warmup);
}

/* rt.key(args, kwargs) -> bytes: the in-memory key (tests, debugging). */
static PyObject *Runtime_key(PyObject *self, PyObject *a)
{
	KernelRuntime *rt = (KernelRuntime *)self;
	PyObject *args, *kwargs, *slots[MAXP], *opts[NOPT];
	if (!PyArg_ParseTuple(a, "OO", &args, &kwargs))
		return NULL;
	if (py_rt.backend < 0 && activate_default_driver() < 0)
		return NULL;
	if (bind(rt, args, kwargs == Py_None ? NULL : kwargs, slots, opts) < 0)
		return NULL;
	Buf key;
	buf_init(&key);
	PyObject *sigs = PyList_New(0), *specs = PyList_New(0), *r = NULL;
	buf_byte(&key, py_rt.backend);
	for (int i = 0; i < rt->nparams; i++)
		if (py_classify(slots[i], &rt->params[i], i, &key, NULL, sigs, specs) < 0)
			goto done;
	for (int i = 0; i < OPT_STREAM; i++) {
		buf_byte(&key, i);
		if (opts[i] && py_key_constexpr(&key, opts[i]) < 0)
			goto done;
	}
	r = Py_BuildValue("(y#OO)", key.p, (Py_ssize_t)key.n, sigs, specs);
done:
	Py_DECREF(sigs);
	Py_DECREF(specs);
	buf_free(&key);
	return r;
}

static PyObject *Runtime_clear(PyObject *self, PyObject *unused)
{
	rt_clear((KernelRuntime *)self);
	Py_RETURN_NONE;
}

/* rt.variants() -> list of the cached CompiledKernels. */
static PyObject *Runtime_variants(PyObject *self, PyObject *unused)
{
	KernelRuntime *rt = (KernelRuntime *)self;
	PyObject *l = PyList_New(0);
	for (size_t i = 0; l && i < rt->cap; i++)
		if (rt->tab[i].key)
			PyList_Append(l, rt->tab[i].compiled);
	return l;
}

typedef struct Launcher {
	PyObject_HEAD
	KernelRuntime *rt;
	PyObject *grid;
} Launcher;

static PyObject *Runtime_getitem(PyObject *self, PyObject *grid)
{
	PyTypeObject *tp = (PyTypeObject *)LauncherType;
	allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
	Launcher *l = (Launcher *)alloc(tp, 0);
	if (!l)
		return NULL;
	Py_INCREF(self);
	l->rt = (KernelRuntime *)self;
	Py_INCREF(grid);
	l->grid = grid;
	return (PyObject *)l;
}

static PyObject *Launcher_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
	Launcher *l = (Launcher *)self;
	return rt_run(l->rt, l->grid, args, kwargs, 0);
}

static void Launcher_dealloc(PyObject *self)
{
	Launcher *l = (Launcher *)self;
	Py_XDECREF((PyObject *)l->rt);
	Py_XDECREF(l->grid);
	PyTypeObject *tp = Py_TYPE(self);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
	tp_free(self);
	Py_DECREF(tp);
}

static PyMethodDef Runtime_methods[] = {
	{"run", Runtime_run, METH_VARARGS, "run(grid, args, kwargs, warmup) -> CompiledKernel"},
	{"key", Runtime_key, METH_VARARGS, "key(args, kwargs) -> (key bytes, signature, specs)"},
	{"clear", Runtime_clear, METH_NOARGS, "drop every cached variant"},
	{"variants", Runtime_variants, METH_NOARGS, "the cached CompiledKernels"},
	{NULL, NULL, 0, NULL},
};

static PyType_Slot Runtime_slots[] = {
	{Py_tp_new, (void *)Runtime_new},
	{Py_tp_dealloc, (void *)Runtime_dealloc},
	{Py_tp_methods, Runtime_methods},
	{Py_mp_subscript, (void *)Runtime_getitem},
	{0, NULL},
};
static PyType_Spec Runtime_spec = {"ctriton._C.KernelRuntime", sizeof(KernelRuntime), 0,
				   Py_TPFLAGS_DEFAULT, Runtime_slots};

static PyType_Slot Launcher_slots[] = {
	{Py_tp_call, (void *)Launcher_call},
	{Py_tp_dealloc, (void *)Launcher_dealloc},
	{0, NULL},
};
static PyType_Spec Launcher_spec = {"ctriton._C.Launcher", sizeof(Launcher), 0,
				    Py_TPFLAGS_DEFAULT, Launcher_slots};

/* set_backend(kind, stream_fn or None) */
PyObject *py_set_backend(PyObject *self, PyObject *args)
{
	int kind;
	PyObject *sf;
	if (!PyArg_ParseTuple(args, "iO", &kind, &sf))
		return NULL;
	py_rt.backend = kind;
	Py_XDECREF(py_rt.stream_fn);
	py_rt.stream_fn = sf == Py_None ? NULL : Py_NewRef(sf);
	Py_RETURN_NONE;
}

/* Creates the runtime's types and interned names; called by PyInit__C. */
int py_runtime_init(PyObject *m)
{
	if (py_specialize_init() < 0)
		return -1;
	BinaryType = PyType_FromSpec(&Binary_spec);
	RuntimeType = PyType_FromSpec(&Runtime_spec);
	LauncherType = PyType_FromSpec(&Launcher_spec);
	if (!BinaryType || !RuntimeType || !LauncherType)
		return -1;
	if (PyModule_AddObjectRef(m, "Binary", BinaryType) < 0 ||
	    PyModule_AddObjectRef(m, "KernelRuntime", RuntimeType) < 0 ||
	    PyModule_AddIntConstant(m, "BACKEND_CPU", JIT_BACKEND_CPU) < 0 ||
	    PyModule_AddIntConstant(m, "BACKEND_CUDA", JIT_BACKEND_CUDA) < 0)
		return -1;
	return 0;
}
