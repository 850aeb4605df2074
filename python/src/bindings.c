/* bindings.c: the compile driver, ptxas, SHA-256, the disk cache and the
 * CUDA device probe of jit/ as functions of ctriton._C (compile_ttir,
 * ptxas, sha256, cache_get, cache_put, cache_root, cuda_probe,
 * cuda_attribute, cuda_context_device, cuda_set_device, ptxas_path,
 * set_pkg_ptxas, libdevice_path,
 * llvm_version), and getenv. Each releases the GIL while jit/ works. The
 * parts of the cache keys made in C are in key.c.
 */
#include "runtime.h"

/* ------------------------------------------------------------------------- */
/* Module-level functions                                                    */
/* ------------------------------------------------------------------------- */

static void cpu_kernel_destroy(PyObject *cap)
{
	BeCpuKernel *k = PyCapsule_GetPointer(cap, "ctriton.cpu_kernel");
	JitKernel jk;
	memset(&jk, 0, sizeof jk);
	jk.cpu = k;
	jit_kernel_free(&jk);
}

static void set_str(PyObject *d, const char *k, const char *v)
{
	if (!v)
		return;
	PyObject *s = PyUnicode_FromString(v);
	PyDict_SetItemString(d, k, s);
	Py_DECREF(s);
}

static void set_int(PyObject *d, const char *k, long v)
{
	PyObject *s = PyLong_FromLong(v);
	PyDict_SetItemString(d, k, s);
	Py_DECREF(s);
}

static long opt_int(PyObject *o, const char *k, long dflt)
{
	PyObject *v = PyDict_GetItemString(o, k);
	if (!v || v == Py_None)
		return dflt;
	long x = PyLong_AsLong(v);
	if (PyErr_Occurred()) {
		PyErr_Clear();
		return dflt;
	}
	return x;
}

enum { MAX_EXTERN_LIBS = 16 };

/* The options' extern_libs (None, or (name, path) pairs: compiler.py's
 * parse_options made them so) into opt: the "libdevice" entry's path as
 * opt->libdevice, the others' in paths[] as opt->extern_libs. The paths
 * live in the bytes objects appended to keep. -1 with an exception. */
static int read_extern_libs(PyObject *o, BeOptions *opt, PyObject *keep, const char **paths)
{
	PyObject *libs = PyDict_GetItemString(o, "extern_libs");
	if (!libs || libs == Py_None)
		return 0;
	PyObject *seq = PySequence_Tuple(libs);
	if (!seq)
		return -1;
	int rc = 0;
	for (Py_ssize_t i = 0; rc == 0 && i < PyTuple_Size(seq); i++) {
		PyObject *kv = PyTuple_GetItem(seq, i), *name, *path, *b = NULL;
		if (!PyTuple_Check(kv) || PyTuple_Size(kv) != 2 ||
		    !PyUnicode_Check(name = PyTuple_GetItem(kv, 0))) {
			PyErr_SetString(PyExc_TypeError, "extern_libs must be (name, path) pairs");
			rc = -1;
			break;
		}
		path = PyTuple_GetItem(kv, 1);
		if (!PyUnicode_FSConverter(path, &b) || PyList_Append(keep, b) < 0) {
			Py_XDECREF(b);
			rc = -1;
			break;
		}
		Py_DECREF(b);
		if (PyUnicode_CompareWithASCIIString(name, "libdevice") == 0) {
			opt->libdevice = PyBytes_AsString(b);
		} else if (opt->nextern_libs >= MAX_EXTERN_LIBS) {
			PyErr_Format(PyExc_ValueError, "at most %d extern_libs besides libdevice", MAX_EXTERN_LIBS);
			rc = -1;
		} else {
			paths[opt->nextern_libs++] = PyBytes_AsString(b);
		}
	}
	Py_DECREF(seq);
	opt->extern_libs = paths;
	return rc;
}

PyObject *py_compile_ttir(PyObject *self, PyObject *args)
{
	const char *ttir, *filename, *dump_after = NULL;
	int backend, arch, warp, stop_ttir, ptx_arch = 0;
	PyObject *o;
	if (!PyArg_ParseTuple(args, "ssiiiO!p|zi", &ttir, &filename, &backend, &arch, &warp, &PyDict_Type, &o,
			      &stop_ttir, &dump_after, &ptx_arch))
		return NULL;
	BeOptions opt = {
		.num_warps = (int)opt_int(o, "num_warps", 4),
		.num_ctas = (int)opt_int(o, "num_ctas", 1),
		.num_stages = (int)opt_int(o, "num_stages", 3),
		.enable_fp_fusion = opt_int(o, "enable_fp_fusion", 1) != 0,
		.enable_reflect_ftz = opt_int(o, "enable_reflect_ftz", 1) != 0,
		.debug = opt_int(o, "debug", 0) != 0,
		.maxnreg = (int)opt_int(o, "maxnreg", 0),
		.sanitize = opt_int(o, "sanitize", 0) != 0,
	};
	const char *libpaths[MAX_EXTERN_LIBS];
	PyObject *keep = PyList_New(0); /* the extern_libs' paths, held while compiling */
	if (!keep || read_extern_libs(o, &opt, keep, libpaths) < 0) {
		Py_XDECREF(keep);
		return NULL;
	}
	JitTarget t = {.backend = backend, .arch = arch, .warp_size = warp, .ptx_arch = ptx_arch};
	JitKernel k;
	char *err;
	Py_BEGIN_ALLOW_THREADS
	err = jit_compile(ttir, filename, &opt, &t, stop_ttir ? JIT_STOP_TTIR : 0, dump_after, &k);
	Py_END_ALLOW_THREADS
	Py_DECREF(keep);
	if (err) {
		PyObject *r = Py_BuildValue("{s:s}", "error", err);
		free(err);
		jit_kernel_free(&k);
		return r;
	}
	PyObject *d = PyDict_New();
	set_str(d, "name", k.name);
	/* "ttir" and "ttgir" in Triton's spelling, as Triton's asm holds them;
	 * ctriton's textual form (which parses back) as "ct.ttir", "ct.ttgir" */
	set_str(d, "ttir", k.ttir_mlir);
	set_str(d, "ttgir", k.ttgir_mlir);
	set_str(d, "ct.ttir", k.ttir);
	set_str(d, "ct.ttgir", k.ttgir);
	set_str(d, "llir", k.llir);
	set_str(d, "ptx", k.ptx);
	set_str(d, "asm", k.asm_);
	set_str(d, "sig", k.sig);
	if (k.cubin) {
		PyObject *c = PyBytes_FromStringAndSize(k.cubin, (Py_ssize_t)k.cubin_len);
		PyDict_SetItemString(d, "cubin", c);
		Py_DECREF(c);
	}
	set_int(d, "shared", k.shared);
	/* global scratch per program (Triton's metadata names), for the allocator at launch */
	set_int(d, "global_scratch_size", k.global_scratch);
	set_int(d, "global_scratch_align", k.global_scratch_align > 0 ? k.global_scratch_align : 1);
	if (k.ntma) { /* the tensor-map parameters' launch plan: tuples of 14 ints (jit.h) */
		PyObject *l = PyList_New(k.ntma);
		for (int j = 0; l && j < k.ntma; j++) {
			PyObject *e = PyTuple_New(14);
			for (int i = 0; e && i < 14; i++)
				PyTuple_SetItem(e, i, PyLong_FromLongLong(k.tma[j][i]));
			PyList_SetItem(l, j, e);
		}
		if (l)
			PyDict_SetItemString(d, "tma", l);
		Py_XDECREF(l);
	}
	set_int(d, "num_warps", k.num_warps);
	set_int(d, "n_regs", k.n_regs);
	set_int(d, "n_spills", k.n_spills);
	PyObject *adv = PyUnicode_FromString(k.wgmma_advisory);
	if (adv)
		PyDict_SetItemString(d, "wgmma_advisory", adv);
	Py_XDECREF(adv);
	PyObject *times = PyDict_New();
	for (int i = 0; i < JIT_NT; i++) {
		if (k.ms[i] <= 0)
			continue;
		PyObject *v = PyFloat_FromDouble(k.ms[i]);
		PyDict_SetItemString(times, jit_stage_names[i], v);
		Py_DECREF(v);
	}
	PyDict_SetItemString(d, "times", times);
	Py_DECREF(times);
	PyObject *passes = PyList_New(k.npasses);
	for (int i = 0; i < k.npasses; i++)
		PyList_SetItem(passes, i, PyUnicode_FromString(k.passes[i]));
	PyDict_SetItemString(d, "passes", passes);
	Py_DECREF(passes);
	PyObject *dumps = PyList_New(k.ndumps);
	for (int i = 0; i < k.ndumps; i++)
		PyList_SetItem(dumps, i, Py_BuildValue("(ss)", k.dumps[i].pass, k.dumps[i].text));
	PyDict_SetItemString(d, "dumps", dumps);
	Py_DECREF(dumps);
	if (k.cpu) {
		PyObject *cap = PyCapsule_New(k.cpu, "ctriton.cpu_kernel", cpu_kernel_destroy);
		PyDict_SetItemString(d, "cpu_kernel", cap);
		Py_DECREF(cap);
		k.cpu = NULL;
	}
	jit_kernel_free(&k);
	return d;
}

static PyObject *fact_list(unsigned facts)
{
	PyObject *l = PyList_New(0);
	for (int i = 0; i < JIT_NF; i++)
		if (facts & (1u << i)) {
			PyObject *n = PyUnicode_FromString(jit_fact_names[i]);
			PyList_Append(l, n);
			Py_DECREF(n);
		}
	return l;
}

/* pass_table() -> the pass table (jit/pipeline.c), one dict per row in order. */
PyObject *py_pass_table(PyObject *self, PyObject *noargs)
{
	static const char *const stages[] = {"ttir", "ttgir", "llir", "ptx", "cubin", "host"};
	PyObject *l = PyList_New(jit_npasses);
	for (int i = 0; i < jit_npasses; i++) {
		const JitPass *p = &jit_passes[i];
		PyObject *targets = p->targets == (JIT_ON_CPU | JIT_ON_CUDA)
					    ? Py_BuildValue("[ss]", "cpu", "cuda")
					    : Py_BuildValue("[s]", p->targets & JIT_ON_CPU ? "cpu" : "cuda");
		PyList_SetItem(l, i,
			       Py_BuildValue("{s:s,s:s,s:N,s:O,s:O,s:N,s:N,s:N,s:s}", "name", p->name, "stage",
					     stages[p->stage], "targets", targets, "pipeline",
					     p->pipeline ? Py_True : Py_False, "analysis",
					     p->analysis ? Py_True : Py_False, "requires", fact_list(p->requires),
					     "provides", fact_list(p->provides), "breaks", fact_list(p->breaks), "what",
					     p->what));
	}
	return l;
}

/* ptxas(ptx, arch) -> (cubin bytes, n_regs, n_spills) or None without ptxas. */
PyObject *py_ptxas(PyObject *self, PyObject *args)
{
	const char *ptx;
	int arch;
	if (!PyArg_ParseTuple(args, "si", &ptx, &arch))
		return NULL;
	JitKernel k;
	memset(&k, 0, sizeof k);
	k.ptx = strdup(ptx);
	k.n_regs = k.n_spills = -1;
	char err[4096];
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = jit_ptxas(&k, arch, err, sizeof err);
	Py_END_ALLOW_THREADS
	PyObject *r = NULL;
	if (rc < 0)
		PyErr_SetString(PyExc_RuntimeError, err);
	else if (rc > 0 || !k.cubin)
		r = Py_NewRef(Py_None);
	else
		r = Py_BuildValue("(y#ii)", (const char *)k.cubin, (Py_ssize_t)k.cubin_len, k.n_regs,
				  k.n_spills);
	jit_kernel_free(&k);
	return r;
}

/* ptxas_path() -> the ptxas jit_ptxas would run, or None. */
PyObject *py_ptxas_path(PyObject *self, PyObject *unused)
{
	char buf[4096];
	if (!jit_find_ptxas(buf, sizeof buf))
		Py_RETURN_NONE;
	return PyUnicode_DecodeFSDefault(buf);
}

/* set_pkg_ptxas(path or None): the ptxas of an installed Python package. */
PyObject *py_set_pkg_ptxas(PyObject *self, PyObject *arg)
{
	if (arg == Py_None) {
		jit_set_pkg_ptxas(NULL);
		Py_RETURN_NONE;
	}
	PyObject *b = NULL;
	if (!PyUnicode_FSConverter(arg, &b))
		return NULL;
	jit_set_pkg_ptxas(PyBytes_AsString(b));
	Py_DECREF(b);
	Py_RETURN_NONE;
}

/* libdevice_path() -> the libdevice.10.bc the NVPTX backend links, or None. */
PyObject *py_libdevice_path(PyObject *self, PyObject *unused)
{
	char buf[4096];
	if (!be_nvptx_libdevice_path(buf, sizeof buf))
		Py_RETURN_NONE;
	return PyUnicode_DecodeFSDefault(buf);
}

/* llvm_version() -> "major.minor.patch" of the LLVM in use. */
PyObject *py_llvm_version(PyObject *self, PyObject *unused)
{
	unsigned a, b, c;
	be_llvm_version(&a, &b, &c);
	return PyUnicode_FromFormat("%u.%u.%u", a, b, c);
}

PyObject *py_sha256(PyObject *self, PyObject *arg)
{
	Py_buffer v;
	if (PyUnicode_Check(arg)) {
		Py_ssize_t n;
		const char *s = PyUnicode_AsUTF8AndSize(arg, &n);
		if (!s)
			return NULL;
		char hex[65];
		jit_sha256_hex(s, (size_t)n, hex);
		return PyUnicode_FromString(hex);
	}
	if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0)
		return NULL;
	char hex[65];
	jit_sha256_hex(v.buf, (size_t)v.len, hex);
	PyBuffer_Release(&v);
	return PyUnicode_FromString(hex);
}

/* getenv(name) -> the value of the environment variable, or None: the C
 * library's environment, which os.environ keeps in step (its assignments
 * and deletions call setenv and unsetenv), read without os.environ's
 * Python-level encoding and KeyError: a knob read costs a tenth. */
PyObject *py_getenv(PyObject *self, PyObject *arg)
{
	if (!PyUnicode_Check(arg)) {
		PyErr_SetString(PyExc_TypeError, "getenv: the name must be a str");
		return NULL;
	}
	Py_ssize_t n;
	const char *name = PyUnicode_AsUTF8AndSize(arg, &n);
	if (!name)
		return NULL;
	if (strlen(name) != (size_t)n || !n || strchr(name, '=')) {
		PyErr_SetString(PyExc_ValueError, "getenv: illegal environment variable name");
		return NULL;
	}
	const char *v = getenv(name);
	if (!v)
		Py_RETURN_NONE;
	return PyUnicode_DecodeFSDefault(v);
}

/* cache_get(root, key, names=None) -> dict name -> bytes for every blob of
 * the entry (None for those not in names: present, not read), None (miss)
 * or False (corrupt, removed). The blobs are read straight into their bytes
 * objects (jit_cache_open/read): one copy, no other buffer's fresh pages to
 * fault in (a 30 KB cubin costs a dozen page faults a copy). */
PyObject *py_cache_get(PyObject *self, PyObject *args)
{
	const char *root, *key;
	PyObject *names = Py_None;
	if (!PyArg_ParseTuple(args, "ss|O", &root, &key, &names))
		return NULL;
	const char *want[64];
	int nwant = 0;
	PyObject *seq = names == Py_None ? NULL : PySequence_Tuple(names);
	if (names != Py_None) {
		if (!seq)
			return NULL;
		for (Py_ssize_t i = 0; i < PyTuple_Size(seq) && nwant < 64; i++)
			if (!(want[nwant++] = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(seq, i), NULL))) {
				Py_DECREF(seq);
				return NULL;
			}
	}
	JitEntry entry, *e = &entry; /* on the stack: pages a process has touched already */
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = jit_cache_open(root, key, e);
	Py_END_ALLOW_THREADS
	PyObject *d = NULL;
	if (rc == JIT_CACHE_HIT && (d = PyDict_New())) {
		for (int i = 0; i < e->n && d; i++) {
			int take = !seq;
			for (int j = 0; j < nwant && !take; j++)
				take = !strcmp(e->blobs[i].name, want[j]);
			PyObject *b = take ? PyBytes_FromStringAndSize(NULL, (Py_ssize_t)e->blobs[i].len)
					   : Py_NewRef(Py_None);
			if (b && take) {
				int bad;
				char *dst = PyBytes_AsString(b);
				Py_BEGIN_ALLOW_THREADS
				bad = jit_cache_read(e, i, dst);
				Py_END_ALLOW_THREADS
				if (bad) {
					Py_CLEAR(b);
					Py_CLEAR(d);
					rc = JIT_CACHE_CORRUPT;
					break;
				}
			}
			if (!b || PyDict_SetItemString(d, e->blobs[i].name, b) < 0)
				Py_CLEAR(d);
			Py_XDECREF(b);
		}
		jit_cache_close(e, rc == JIT_CACHE_CORRUPT);
	} else if (rc == JIT_CACHE_HIT) {
		jit_cache_close(e, 0);
	}
	Py_XDECREF(seq);
	if (rc == JIT_CACHE_MISS)
		Py_RETURN_NONE;
	if (rc == JIT_CACHE_CORRUPT)
		Py_RETURN_FALSE;
	return d;
}

/* cache_put(root, key, {name: bytes|str}) */
PyObject *py_cache_put(PyObject *self, PyObject *args)
{
	const char *root, *key;
	PyObject *d;
	if (!PyArg_ParseTuple(args, "ssO!", &root, &key, &PyDict_Type, &d))
		return NULL;
	Py_ssize_t n = PyDict_Size(d), pos = 0, i = 0;
	JitBlob *blobs = calloc((size_t)n + 1, sizeof *blobs);
	PyObject *k, *v;
	while (PyDict_Next(d, &pos, &k, &v)) {
		const char *name = PyUnicode_AsUTF8AndSize(k, NULL);
		const char *data;
		Py_ssize_t len;
		if (!name)
			goto fail;
		if (PyUnicode_Check(v))
			data = PyUnicode_AsUTF8AndSize(v, &len);
		else if (PyBytes_Check(v))
			data = PyBytes_AsString(v), len = PyBytes_Size(v);
		else {
			PyErr_SetString(PyExc_TypeError, "cache blobs must be str or bytes");
			goto fail;
		}
		snprintf(blobs[i].name, sizeof blobs[i].name, "%s", name);
		blobs[i].data = (void *)data;
		blobs[i].len = (size_t)len;
		i++;
	}
	char err[4400];
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = jit_cache_put(root, key, blobs, (int)i, err, sizeof err);
	Py_END_ALLOW_THREADS
	free(blobs);
	if (rc != 0) {
		PyErr_SetString(PyExc_OSError, err);
		return NULL;
	}
	Py_RETURN_NONE;
fail:
	free(blobs);
	return NULL;
}

PyObject *py_cache_root(PyObject *self, PyObject *unused)
{
	char *r = jit_cache_root();
	PyObject *s = PyUnicode_FromString(r);
	free(r);
	return s;
}


/* cuda_probe() -> number of CUDA devices; OSError without a usable driver.
 * Makes no context. */
PyObject *py_cuda_probe(PyObject *self, PyObject *unused)
{
	char err[600];
	int n, rc;
	Py_BEGIN_ALLOW_THREADS
	rc = jit_cuda_probe(&n, err, sizeof err);
	Py_END_ALLOW_THREADS
	if (rc != 0) {
		PyErr_SetString(PyExc_OSError, err);
		return NULL;
	}
	return PyLong_FromLong(n);
}

/* cuda_attribute(device, attr) -> int: cuDeviceGetAttribute. */
PyObject *py_cuda_attribute(PyObject *self, PyObject *args)
{
	int dev, attr, v;
	if (!PyArg_ParseTuple(args, "ii", &dev, &attr))
		return NULL;
	char err[600];
	if (jit_cuda_attribute(dev, attr, &v, err, sizeof err) != 0) {
		PyErr_SetString(PyExc_OSError, err);
		return NULL;
	}
	return PyLong_FromLong(v);
}

/* cuda_device_info(device) -> (name, driver version): cuDeviceGetName and
 * cuDriverGetVersion, no context made. */
PyObject *py_cuda_device_info(PyObject *self, PyObject *args)
{
	int dev, ver = 0, rc;
	if (!PyArg_ParseTuple(args, "i", &dev))
		return NULL;
	char name[256], err[600];
	Py_BEGIN_ALLOW_THREADS
	rc = jit_cuda_device_name(dev, name, (int)sizeof name, &ver, err, sizeof err);
	Py_END_ALLOW_THREADS
	if (rc != 0) {
		PyErr_SetString(PyExc_OSError, err);
		return NULL;
	}
	return Py_BuildValue("(si)", name, ver);
}

/* cuda_context_device() -> the device of this thread's current context, -1
 * when it has none (none is made). */
PyObject *py_cuda_context_device(PyObject *self, PyObject *unused)
{
	int dev = -1;
	if (jit_cuda_context_device(&dev) != 0) {
		char err[600];
		int n;
		jit_cuda_probe(&n, err, sizeof err);
		PyErr_SetString(PyExc_OSError, err);
		return NULL;
	}
	return PyLong_FromLong(dev);
}

/* cuda_set_device(device): makes its primary context current on this
 * thread. */
PyObject *py_cuda_set_device(PyObject *self, PyObject *args)
{
	int dev;
	if (!PyArg_ParseTuple(args, "i", &dev))
		return NULL;
	char err[600];
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = jit_cuda_set_device(dev, err, sizeof err);
	Py_END_ALLOW_THREADS
	if (rc != 0) {
		PyErr_SetString(PyExc_OSError, err);
		return NULL;
	}
	Py_RETURN_NONE;
}
