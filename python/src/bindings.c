/* bindings.c: the compile driver, ptxas, SHA-256 and the disk cache of
 * jit/ as functions of ctriton._C (compile_ttir, ptxas, sha256, cache_get,
 * cache_put, cache_root). Each releases the GIL while jit/ works.
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

PyObject *py_compile_ttir(PyObject *self, PyObject *args)
{
	const char *ttir, *filename;
	int backend, arch, warp, stop_ttir;
	PyObject *o;
	if (!PyArg_ParseTuple(args, "ssiiiO!p", &ttir, &filename, &backend, &arch, &warp,
			      &PyDict_Type, &o, &stop_ttir))
		return NULL;
	BeOptions opt = {
		.num_warps = (int)opt_int(o, "num_warps", 4),
		.num_ctas = (int)opt_int(o, "num_ctas", 1),
		.num_stages = (int)opt_int(o, "num_stages", 3),
		.enable_fp_fusion = opt_int(o, "enable_fp_fusion", 1) != 0,
		.debug = opt_int(o, "debug", 0) != 0,
		.maxnreg = (int)opt_int(o, "maxnreg", 0),
	};
	JitTarget t = {.backend = backend, .arch = arch, .warp_size = warp};
	JitKernel k;
	char *err;
	Py_BEGIN_ALLOW_THREADS
	err = jit_compile(ttir, filename, &opt, &t, stop_ttir ? JIT_STOP_TTIR : 0, &k);
	Py_END_ALLOW_THREADS
	if (err) {
		PyObject *r = Py_BuildValue("{s:s}", "error", err);
		free(err);
		jit_kernel_free(&k);
		return r;
	}
	PyObject *d = PyDict_New();
	set_str(d, "name", k.name);
	set_str(d, "ttir", k.ttir);
	set_str(d, "ttgir", k.ttgir);
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
	set_int(d, "num_warps", k.num_warps);
	set_int(d, "n_regs", k.n_regs);
	set_int(d, "n_spills", k.n_spills);
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
	if (k.cpu) {
		PyObject *cap = PyCapsule_New(k.cpu, "ctriton.cpu_kernel", cpu_kernel_destroy);
		PyDict_SetItemString(d, "cpu_kernel", cap);
		Py_DECREF(cap);
		k.cpu = NULL;
	}
	jit_kernel_free(&k);
	return d;
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

/* cache_get(root, key) -> dict name -> bytes, None (miss) or False (corrupt). */
PyObject *py_cache_get(PyObject *self, PyObject *args)
{
	const char *root, *key;
	if (!PyArg_ParseTuple(args, "ss", &root, &key))
		return NULL;
	JitBlob *blobs = NULL;
	int n = 0, rc;
	Py_BEGIN_ALLOW_THREADS
	rc = jit_cache_get(root, key, &blobs, &n);
	Py_END_ALLOW_THREADS
	if (rc == JIT_CACHE_MISS)
		Py_RETURN_NONE;
	if (rc == JIT_CACHE_CORRUPT)
		Py_RETURN_FALSE;
	PyObject *d = PyDict_New();
	for (int i = 0; i < n; i++) {
		PyObject *b = PyBytes_FromStringAndSize(blobs[i].data, (Py_ssize_t)blobs[i].len);
		PyDict_SetItemString(d, blobs[i].name, b);
		Py_DECREF(b);
	}
	jit_blobs_free(blobs, n);
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

