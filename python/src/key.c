/* key.c: the parts of the cache keys made in C, for compiler/compiler.py and
 * runtime/jit.py: key_digest (SHA-256 of nested Python data written with
 * type tags, dicts in key order), global_key (a @jit function's cache key:
 * what its code reads from its globals), code_fingerprint and content_key
 * (what names a function's source in the source index: its line tables,
 * its file's bytes), source_index (a file's content key and its index
 * entry in one call) and build_key (the compiler build: the extension's
 * build id, the stamps of the compiler's .py files).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime.h"

/* ------------------------------------------------------------------------- */
/* key_digest: cache keys of Python data                                     */
/* ------------------------------------------------------------------------- */

/* A growing byte string (err: out of memory). */
typedef struct KeyBuf {
	char *p;
	size_t n, cap;
	int err;
} KeyBuf;

static void kb_put(KeyBuf *b, const void *data, size_t n)
{
	if (b->err)
		return;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n)
			cap *= 2;
		char *np = realloc(b->p, cap);
		if (!np) {
			b->err = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, data, n);
	b->n += n;
}

/* A tag byte, a 32-bit little-endian length, the bytes. */
static void kb_item(KeyBuf *b, char tag, const void *data, size_t n)
{
	unsigned char h[5] = {(unsigned char)tag, (unsigned char)n, (unsigned char)(n >> 8), (unsigned char)(n >> 16),
			      (unsigned char)(n >> 24)};
	kb_put(b, h, 5);
	kb_put(b, data, n);
}

/* Item tag, then the text of str(o) (repr when asked). 0 or -1 (exception). */
static int kb_text(KeyBuf *b, char tag, PyObject *o, int use_repr)
{
	PyObject *t = use_repr ? PyObject_Repr(o) : PyObject_Str(o);
	if (!t)
		return -1;
	Py_ssize_t n;
	const char *u = PyUnicode_AsUTF8AndSize(t, &n);
	if (!u) {
		Py_DECREF(t);
		return -1;
	}
	kb_item(b, tag, u, (size_t)n);
	Py_DECREF(t);
	return 0;
}

static int key_write(KeyBuf *b, PyObject *o, int depth);

/* Attribute names the key code looks up, interned once (under the GIL). */
static PyObject *s_ctriton_jit, *s_cache_key_, *s_cache_key, *s_make_cache_key, *s_dict;

static int intern_names(void)
{
	if (s_dict)
		return 0;
	if (!(s_ctriton_jit = PyUnicode_InternFromString("_ctriton_jit")) ||
	    !(s_cache_key_ = PyUnicode_InternFromString("_cache_key")) ||
	    !(s_cache_key = PyUnicode_InternFromString("cache_key")) ||
	    !(s_make_cache_key = PyUnicode_InternFromString("_make_cache_key")) ||
	    !(s_dict = PyUnicode_InternFromString("__dict__")))
		return -1;
	return 0;
}

/* 1 when o is a @jit function (getattr(o, "_ctriton_jit", False) is true),
 * 0 when not, -1 with an exception set. HasAttr first: no AttributeError
 * is made for each of the many objects without it. */
static int is_jit_fn(PyObject *o)
{
	PyObject *jit = PyObject_HasAttr(o, s_ctriton_jit) ? PyObject_GetAttr(o, s_ctriton_jit) : NULL;
	if (!jit && PyErr_Occurred()) {
		if (!PyErr_ExceptionMatches(PyExc_AttributeError))
			return -1;
		PyErr_Clear();
	}
	int is_jit = jit ? PyObject_IsTrue(jit) : 0;
	Py_XDECREF(jit);
	return is_jit;
}

typedef struct KeyPair {
	const char *p; /* the key's bytes then the value's */
	size_t off;    /* where they are in the dict's scratch buffer */
	size_t n, nk;  /* all, the key's */
} KeyPair;

static int cmp_pairs(const void *x, const void *y)
{
	const KeyPair *a = x, *b = y;
	size_t m = a->n < b->n ? a->n : b->n;
	size_t mk = a->nk < b->nk ? a->nk : b->nk;
	int c = memcmp(a->p, b->p, mk);
	if (c || a->nk != b->nk)
		return c ? c : a->nk < b->nk ? -1 : 1;
	c = memcmp(a->p, b->p, m); /* equal keys (their reprs): by value */
	return c ? c : a->n < b->n ? -1 : a->n > b->n;
}

/* A dict: its items in the order of their keys' bytes (so insertion order
 * does not matter), written first into one scratch buffer. */
static int key_write_dict(KeyBuf *b, PyObject *d, int depth)
{
	Py_ssize_t n = PyDict_Size(d), pos = 0, i = 0;
	KeyPair small[32];
	PyObject *smallkv[64];
	KeyPair *ps = n <= 32 ? small : calloc((size_t)n, sizeof *ps);
	PyObject **kv = n <= 32 ? smallkv : calloc(2 * (size_t)n, sizeof *kv);
	KeyBuf sc = {0};
	int rc = 0;
	if (!ps || !kv) {
		PyErr_NoMemory();
		rc = -1;
		n = 0;
	}
	/* the items with references held first: writing them may run code (a
	 * repr) that changes the dict */
	for (PyObject *k, *v; i < n && PyDict_Next(d, &pos, &k, &v); i++) {
		kv[2 * i] = Py_NewRef(k);
		kv[2 * i + 1] = Py_NewRef(v);
	}
	n = i;
	for (i = 0; rc == 0 && i < n; i++) {
		ps[i].off = sc.n;
		rc = key_write(&sc, kv[2 * i], depth + 1);
		ps[i].nk = sc.n - ps[i].off;
		if (rc == 0)
			rc = key_write(&sc, kv[2 * i + 1], depth + 1);
		ps[i].n = sc.n - ps[i].off;
	}
	if (rc == 0 && sc.err) {
		PyErr_NoMemory();
		rc = -1;
	}
	if (rc == 0) {
		for (i = 0; i < n; i++)
			ps[i].p = sc.p + ps[i].off;
		qsort(ps, (size_t)n, sizeof *ps, cmp_pairs);
		unsigned char cnt[4] = {(unsigned char)n, (unsigned char)(n >> 8), (unsigned char)(n >> 16),
					(unsigned char)(n >> 24)};
		kb_item(b, 'D', cnt, 4);
		for (i = 0; i < n; i++)
			kb_put(b, ps[i].p, ps[i].n);
	}
	for (i = 0; i < 2 * n; i++)
		Py_DECREF(kv[i]);
	free(sc.p);
	if (ps != small)
		free(ps);
	if (kv != smallkv)
		free(kv);
	return rc;
}

/* Writes o as tagged bytes: None, bool, int, float, str, bytes, tuple,
 * list and dict by value; a @jit function (an object whose _ctriton_jit is
 * true) by its cache_key; tl.constexpr by its value; anything else by its
 * type's name and repr. */
static int key_write(KeyBuf *b, PyObject *o, int depth)
{
	if (depth > 64) {
		PyErr_SetString(PyExc_ValueError, "key_digest: the data is nested too deeply");
		return -1;
	}
	if (o == Py_None) {
		kb_item(b, 'N', "", 0);
		return 0;
	}
	if (PyBool_Check(o)) {
		kb_item(b, 'B', o == Py_True ? "1" : "0", 1);
		return 0;
	}
	if (PyLong_CheckExact(o)) {
		int overflow;
		long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
		if (v == -1 && PyErr_Occurred())
			return -1;
		if (overflow)
			return kb_text(b, 'I', o, 0);
		char t[24], *e = t + sizeof t, *q = e; /* decimal digits, by hand: many ints per key */
		unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
		do
			*--q = (char)('0' + u % 10);
		while (u /= 10);
		if (v < 0)
			*--q = '-';
		kb_item(b, 'I', q, (size_t)(e - q));
		return 0;
	}
	if (PyFloat_CheckExact(o))
		return kb_text(b, 'F', o, 1);
	if (PyUnicode_CheckExact(o)) {
		Py_ssize_t n;
		const char *u = PyUnicode_AsUTF8AndSize(o, &n);
		if (!u) { /* lone surrogates: by its repr */
			PyErr_Clear();
			return kb_text(b, 's', o, 1);
		}
		kb_item(b, 'S', u, (size_t)n);
		return 0;
	}
	if (PyBytes_CheckExact(o)) {
		kb_item(b, 'Y', PyBytes_AsString(o), (size_t)PyBytes_Size(o));
		return 0;
	}
	if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) {
		PyObject *seq = PySequence_Tuple(o); /* a list may change while reprs run */
		if (!seq)
			return -1;
		Py_ssize_t n = PyTuple_Size(seq);
		unsigned char cnt[4] = {(unsigned char)n, (unsigned char)(n >> 8), (unsigned char)(n >> 16),
					(unsigned char)(n >> 24)};
		kb_item(b, PyTuple_CheckExact(o) ? 'T' : 'L', cnt, 4);
		for (Py_ssize_t i = 0; i < n; i++)
			if (key_write(b, PyTuple_GetItem(seq, i), depth + 1) < 0) {
				Py_DECREF(seq);
				return -1;
			}
		Py_DECREF(seq);
		return 0;
	}
	if (PyDict_CheckExact(o))
		return key_write_dict(b, o, depth);
	int is_jit = is_jit_fn(o);
	if (is_jit < 0)
		return -1;
	if (is_jit) {
		PyObject *ck = PyObject_GetAttr(o, s_cache_key);
		if (!ck)
			return -1;
		int rc = kb_text(b, 'J', ck, 0);
		Py_DECREF(ck);
		return rc;
	}
	PyObject *tn = PyType_GetQualName(Py_TYPE(o));
	if (!tn)
		return -1;
	if (PyUnicode_CompareWithASCIIString(tn, "constexpr") == 0 && PyObject_HasAttrString(o, "value")) {
		Py_DECREF(tn);
		PyObject *v = PyObject_GetAttrString(o, "value");
		if (!v)
			return -1;
		kb_item(b, 'C', "", 0);
		int rc = key_write(b, v, depth + 1);
		Py_DECREF(v);
		return rc;
	}
	int rc = kb_text(b, 'R', tn, 0);
	Py_DECREF(tn);
	return rc < 0 ? -1 : kb_text(b, 'r', o, 1);
}

/* key_digest(data) -> hex SHA-256 of data written as key_write writes it:
 * what a cache key is made of, without a repr of the whole in Python. */
PyObject *py_key_digest(PyObject *self, PyObject *arg)
{
	KeyBuf b = {0};
	if (intern_names() < 0 || key_write(&b, arg, 0) < 0) {
		free(b.p);
		return NULL;
	}
	if (b.err) {
		free(b.p);
		return PyErr_NoMemory();
	}
	char hex[65];
	jit_sha256_hex(b.p ? b.p : "", b.n, hex);
	free(b.p);
	return PyUnicode_FromString(hex);
}

/* ------------------------------------------------------------------------- */
/* global_key: what a @jit function reads from its globals, in its key        */
/* ------------------------------------------------------------------------- */

/* The state of one global_key: the hash, the sorted names the code reads,
 * the function itself, the JITFunction type and the callees' shared memo. */
typedef struct GlobalKey {
	JitSha256 s;
	int nparts;
	PyObject *names, *self, *jit_type, *files;
} GlobalKey;


/* Adds one part (a line of the joined text): a + b + c + d's str. */
static int gk_part(GlobalKey *g, const char *pre, size_t npre, PyObject *name, const char *sep, PyObject *v)
{
	Py_ssize_t nn, nv;
	const char *n = PyUnicode_AsUTF8AndSize(name, &nn);
	const char *t = n ? PyUnicode_AsUTF8AndSize(v, &nv) : NULL;
	if (!t)
		return -1;
	if (g->nparts++)
		jit_sha256_update(&g->s, "\n", 1);
	jit_sha256_update(&g->s, pre, npre);
	jit_sha256_update(&g->s, n, (size_t)nn);
	jit_sha256_update(&g->s, sep, strlen(sep));
	jit_sha256_update(&g->s, t, (size_t)nv);
	return 0;
}

static int gk_visit(GlobalKey *g, const char *pre, size_t npre, PyObject *scope, int depth);

/* One global (or attribute) the code reads: a @jit callee by its cache_key
 * (computed first, with the same memo of files, when not yet), a constexpr
 * or number by its repr, a module or class (two levels deep) by the names
 * of the code it holds. */
static int gk_note(GlobalKey *g, const char *pre, size_t npre, PyObject *name, PyObject *obj, int depth)
{
	int is_jit = is_jit_fn(obj);
	if (is_jit < 0)
		return -1;
	if (is_jit) {
		if (obj == g->self)
			return 0;
		int ours = PyObject_IsInstance(obj, g->jit_type);
		if (ours < 0)
			return -1;
		if (ours) {
			PyObject *ck = PyObject_GetAttr(obj, s_cache_key_);
			if (!ck)
				return -1;
			int none = ck == Py_None;
			Py_DECREF(ck);
			PyObject *r = none ? PyObject_CallMethodObjArgs(obj, s_make_cache_key, g->files, NULL) : NULL;
			if (none && !r)
				return -1;
			Py_XDECREF(r);
		}
		PyObject *ck = PyObject_GetAttr(obj, s_cache_key);
		PyObject *cs = ck ? PyObject_Str(ck) : NULL;
		Py_XDECREF(ck);
		int rc = cs ? gk_part(g, pre, npre, name, ":jit:", cs) : -1;
		Py_XDECREF(cs);
		return rc;
	}
	PyObject *tn = PyType_GetName(Py_TYPE(obj));
	if (!tn)
		return -1;
	int is_cx = PyUnicode_CompareWithASCIIString(tn, "constexpr") == 0;
	Py_DECREF(tn);
	if (is_cx || PyBool_Check(obj) || PyLong_Check(obj) || PyFloat_Check(obj) || PyUnicode_Check(obj)) {
		PyObject *r = PyObject_Repr(obj);
		int rc = r ? gk_part(g, pre, npre, name, ":=", r) : -1;
		Py_XDECREF(r);
		return rc;
	}
	if (depth >= 2 || !(PyModule_Check(obj) || PyType_Check(obj)))
		return 0;
	PyObject *d = PyObject_GetAttr(obj, s_dict); /* vars(obj): no properties run */
	if (!d)
		return -1;
	Py_ssize_t nn;
	const char *n = PyUnicode_AsUTF8AndSize(name, &nn);
	char *sub = n ? malloc(npre + (size_t)nn + 2) : NULL;
	int rc = -1;
	if (sub) {
		memcpy(sub, pre, npre);
		memcpy(sub + npre, n, (size_t)nn);
		sub[npre + (size_t)nn] = '.';
		rc = gk_visit(g, sub, npre + (size_t)nn + 1, d, depth + 1);
		free(sub);
	} else if (n) {
		PyErr_NoMemory();
	}
	Py_DECREF(d);
	return rc;
}

/* Each of the names found in scope (a dict, or a class's mappingproxy). */
static int gk_visit(GlobalKey *g, const char *pre, size_t npre, PyObject *scope, int depth)
{
	Py_ssize_t n = PyList_Size(g->names);
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *name = PyList_GetItem(g->names, i), *obj;
		if (PyDict_Check(scope)) {
			obj = PyDict_GetItemWithError(scope, name);
			if (!obj) {
				if (PyErr_Occurred())
					return -1;
				continue;
			}
			Py_INCREF(obj); /* the callee's key runs Python code */
		} else if (!(obj = PyObject_GetItem(scope, name))) {
			if (!PyErr_ExceptionMatches(PyExc_KeyError))
				return -1;
			PyErr_Clear();
			continue;
		}
		int rc = gk_note(g, pre, npre, name, obj, depth);
		Py_DECREF(obj);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* The names a code object and the code nested in it (closures,
 * comprehensions) read as globals, attributes or free variables, sorted:
 * a new list. */
static PyObject *code_global_names(PyObject *code)
{
	PyObject *set = PySet_New(NULL), *todo = PyList_New(0);
	if (!set || !todo || PyList_Append(todo, code) < 0)
		goto fail;
	while (PyList_Size(todo) > 0) {
		Py_ssize_t last = PyList_Size(todo) - 1;
		PyObject *c = PyList_GetItem(todo, last);
		Py_INCREF(c);
		if (PyList_SetSlice(todo, last, last + 1, NULL) < 0) {
			Py_DECREF(c);
			goto fail;
		}
		static const char *const attrs[] = {"co_names", "co_freevars"};
		for (int k = 0; k < 2; k++) {
			PyObject *t = PyObject_GetAttrString(c, attrs[k]);
			PyObject *it = t ? PyObject_GetIter(t) : NULL, *x;
			Py_XDECREF(t);
			if (!it) {
				Py_DECREF(c);
				goto fail;
			}
			while ((x = PyIter_Next(it))) {
				int rc = PySet_Add(set, x);
				Py_DECREF(x);
				if (rc < 0)
					break;
			}
			Py_DECREF(it);
			if (PyErr_Occurred()) {
				Py_DECREF(c);
				goto fail;
			}
		}
		PyObject *consts = PyObject_GetAttrString(c, "co_consts");
		Py_DECREF(c);
		if (!consts)
			goto fail;
		for (Py_ssize_t i = 0; i < PyTuple_Size(consts); i++) {
			PyObject *k = PyTuple_GetItem(consts, i);
			if (Py_TYPE(k) == Py_TYPE(code) && PyList_Append(todo, k) < 0) {
				Py_DECREF(consts);
				goto fail;
			}
		}
		Py_DECREF(consts);
	}
	PyObject *names = PySequence_List(set);
	Py_DECREF(set);
	Py_DECREF(todo);
	if (names && PyList_Sort(names) < 0)
		Py_CLEAR(names);
	return names;
fail:
	Py_XDECREF(set);
	Py_XDECREF(todo);
	return NULL;
}

/* global_key(code, scope, self, jit_type, files, head) -> hex SHA-256 of
 * the lines head (a tuple of str) and then, for each name the code reads
 * (code_global_names) that scope holds, "name:jit:<cache_key>" for a @jit
 * function other than self (whose key, when not made yet, is made first by
 * its _make_cache_key(files)), "name:=<repr>" for a constexpr, bool, int,
 * float or str, and the same for the names a module or class holds, two
 * levels deep ("mod.name", "mod.cls.name"), joined by newlines:
 * JITFunction.cache_key without a Python call per global. */
PyObject *py_global_key(PyObject *self, PyObject *args)
{
	PyObject *code, *scope, *fn, *jit_type, *files, *head;
	if (!PyArg_ParseTuple(args, "OOOOOO!", &code, &scope, &fn, &jit_type, &files, &PyTuple_Type, &head))
		return NULL;
	if (intern_names() < 0)
		return NULL;
	GlobalKey g = {.self = fn, .jit_type = jit_type, .files = files};
	jit_sha256_init(&g.s);
	for (Py_ssize_t i = 0; i < PyTuple_Size(head); i++) {
		Py_ssize_t n;
		const char *t = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(head, i), &n);
		if (!t)
			return NULL;
		if (g.nparts++)
			jit_sha256_update(&g.s, "\n", 1);
		jit_sha256_update(&g.s, t, (size_t)n);
	}
	if (!(g.names = code_global_names(code)))
		return NULL;
	Py_INCREF(scope);
	int rc = gk_visit(&g, "", 0, scope, 0);
	Py_DECREF(scope);
	Py_DECREF(g.names);
	if (rc < 0)
		return NULL;
	uint8_t out[32];
	jit_sha256_final(&g.s, out);
	char hex[65];
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", out[i]);
	return PyUnicode_FromString(hex);
}

/* Reads the whole file at path into *data (malloc'ed); 0, or -1 with errno. */
static int read_file(const char *path, char **data, size_t *n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat st;
	char *buf = NULL;
	size_t len = 0, cap = 65536;
	int reg = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	if (reg)
		cap = (size_t)st.st_size + 1; /* one more byte: the end seen by the same read */
	for (;;) {
		if (!buf || len == cap) {
			cap = buf ? 2 * cap : cap;
			char *nb = realloc(buf, cap);
			if (!nb) {
				errno = ENOMEM;
				goto fail;
			}
			buf = nb;
		}
		ssize_t got = read(fd, buf + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			goto fail;
		if (got == 0)
			break;
		len += (size_t)got;
		if (reg && len < cap)
			break; /* a regular file's short read is its end (or a signal's: a miss) */
	}
	close(fd);
	*data = buf;
	*n = len;
	return 0;
fail:;
	int e = errno;
	free(buf);
	close(fd);
	errno = e;
	return -1;
}

/* code_fingerprint(code) -> jit_content_key of the code's name and of the
 * first line and line table of it and of the code nested in it (its
 * co_consts), in the order of a depth-first walk: what, besides its file's
 * bytes, decides which lines runtime/jit.py reads as a function's source. */
PyObject *py_code_fingerprint(PyObject *self, PyObject *code)
{
	KeyBuf b = {0};
	PyObject *name = PyObject_GetAttrString(code, "co_name");
	if (!name)
		return NULL;
	int rc = kb_text(&b, 'N', name, 0);
	Py_DECREF(name);
	PyObject *todo = rc == 0 ? PyList_New(0) : NULL;
	if (!todo || PyList_Append(todo, code) < 0)
		goto fail;
	while (PyList_Size(todo) > 0) {
		Py_ssize_t last = PyList_Size(todo) - 1;
		PyObject *c = Py_NewRef(PyList_GetItem(todo, last));
		if (PyList_SetSlice(todo, last, last + 1, NULL) < 0) {
			Py_DECREF(c);
			goto fail;
		}
		PyObject *first = PyObject_GetAttrString(c, "co_firstlineno");
		PyObject *table = first ? PyObject_GetAttrString(c, "co_linetable") : NULL;
		PyObject *consts = table ? PyObject_GetAttrString(c, "co_consts") : NULL;
		Py_DECREF(c);
		long line = first ? PyLong_AsLong(first) : -1;
		int ok = consts && PyBytes_Check(table) && PyTuple_Check(consts) && !(line == -1 && PyErr_Occurred());
		if (ok) {
			unsigned char l8[8];
			for (int i = 0; i < 8; i++)
				l8[i] = (unsigned char)((unsigned long long)line >> (8 * i));
			kb_item(&b, 'L', l8, 8);
			kb_item(&b, 'T', PyBytes_AsString(table), (size_t)PyBytes_Size(table));
			for (Py_ssize_t i = 0; ok && i < PyTuple_Size(consts); i++) {
				PyObject *k = PyTuple_GetItem(consts, i);
				if (Py_TYPE(k) == Py_TYPE(code))
					ok = PyList_Append(todo, k) == 0;
			}
		} else if (!PyErr_Occurred()) {
			PyErr_SetString(PyExc_TypeError, "code_fingerprint: not a code object");
		}
		Py_XDECREF(first);
		Py_XDECREF(table);
		Py_XDECREF(consts);
		if (!ok)
			goto fail;
	}
	Py_DECREF(todo);
	if (b.err) {
		free(b.p);
		return PyErr_NoMemory();
	}
	char key[JIT_CONTENT_KEY_SIZE];
	jit_content_key(b.p ? b.p : "", b.n, key);
	free(b.p);
	return PyUnicode_FromString(key);
fail:
	Py_XDECREF(todo);
	free(b.p);
	return NULL;
}

/* content_key(bytes or path str) -> jit_content_key of the bytes, or of the
 * file's contents (read at once; OSError when it cannot be). */
PyObject *py_content_key(PyObject *self, PyObject *arg)
{
	char key[JIT_CONTENT_KEY_SIZE];
	if (PyUnicode_Check(arg)) {
		PyObject *enc = PyUnicode_EncodeFSDefault(arg);
		if (!enc)
			return NULL;
		char *data = NULL;
		size_t n = 0;
		int rc;
		const char *path = PyBytes_AsString(enc);
		Py_BEGIN_ALLOW_THREADS
		rc = read_file(path, &data, &n);
		if (rc == 0)
			jit_content_key(data, n, key);
		Py_END_ALLOW_THREADS
		free(data);
		if (rc != 0) {
			PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, arg);
			Py_DECREF(enc);
			return NULL;
		}
		Py_DECREF(enc);
		return PyUnicode_FromString(key);
	}
	Py_buffer v;
	if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0)
		return NULL;
	jit_content_key(v.buf, (size_t)v.len, key);
	PyBuffer_Release(&v);
	return PyUnicode_FromString(key);
}

/* source_index(root, path) -> (content key of the file at path, the
 * "index" blob of the cache entry of that key under root, or None): one
 * call for what a new process asks of the source index of runtime/jit.py.
 * OSError when the file cannot be read; a corrupt entry is removed and
 * reads as None. */
PyObject *py_source_index(PyObject *self, PyObject *args)
{
	const char *root;
	PyObject *pathobj;
	if (!PyArg_ParseTuple(args, "sU", &root, &pathobj))
		return NULL;
	PyObject *enc = PyUnicode_EncodeFSDefault(pathobj);
	if (!enc)
		return NULL;
	const char *path = PyBytes_AsString(enc);
	if (!path || strlen(path) != (size_t)PyBytes_Size(enc)) {
		Py_DECREF(enc);
		PyErr_SetString(PyExc_ValueError, "source_index: embedded null byte in the path");
		return NULL;
	}
	char key[JIT_CONTENT_KEY_SIZE];
	char *data = NULL;
	size_t n = 0;
	JitEntry entry; /* on the stack, as in _C.cache_get: no fresh pages */
	int rc, got = JIT_CACHE_MISS;
	Py_BEGIN_ALLOW_THREADS
	rc = read_file(path, &data, &n);
	if (rc == 0) {
		jit_content_key(data, n, key);
		got = jit_cache_open(root, key, &entry);
	}
	Py_END_ALLOW_THREADS
	free(data);
	if (rc != 0) {
		PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, pathobj);
		Py_DECREF(enc);
		return NULL;
	}
	Py_DECREF(enc);
	PyObject *blob = NULL;
	if (got == JIT_CACHE_HIT) {
		int bad = 0;
		for (int i = 0; i < entry.n && !blob && !bad; i++) {
			if (strcmp(entry.blobs[i].name, "index"))
				continue;
			if (!(blob = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)entry.blobs[i].len)))
				break;
			char *dst = PyBytes_AsString(blob);
			Py_BEGIN_ALLOW_THREADS
			bad = jit_cache_read(&entry, i, dst) != 0;
			Py_END_ALLOW_THREADS
			if (bad)
				Py_CLEAR(blob);
		}
		jit_cache_close(&entry, bad);
	}
	if (!blob && PyErr_Occurred())
		return NULL;
	return Py_BuildValue("(sN)", key, blob ? blob : Py_NewRef(Py_None));
}

/* ------------------------------------------------------------------------- */
/* build_key: what names this build of the compiler in cache keys            */
/* ------------------------------------------------------------------------- */

/* The GNU build id (a hash of the linked file, made by the linker) of the
 * loaded object that holds addr. */
typedef struct BuildId {
	uintptr_t addr;
	unsigned char id[64];
	size_t n;   /* 0: none found */
	int found;  /* the object was found */
} BuildId;

static int find_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
	BuildId *q = data;
	int mine = 0;
	for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		mine = ph->p_type == PT_LOAD && q->addr >= lo && q->addr < lo + ph->p_memsz;
	}
	if (!mine)
		return 0;
	q->found = 1;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		const unsigned char *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const unsigned char *name = p + sizeof *nh;
			const unsigned char *desc = name + ((nh->n_namesz + 3) & ~3u);
			if (desc + nh->n_descsz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4) && nh->n_descsz <= sizeof q->id) {
				memcpy(q->id, desc, nh->n_descsz);
				q->n = nh->n_descsz;
				return 1;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 1;
}

/* Hashes the file at path (the extension without a build id). */
static int hash_file(JitSha256 *s, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	char buf[65536];
	size_t got;
	while ((got = fread(buf, 1, sizeof buf, f)) > 0)
		jit_sha256_update(s, buf, got);
	fclose(f);
	return 0;
}

/* An entry of a directory hash_tree walks. */
typedef struct TreeEnt {
	char *name;
	int dir; /* 1 a directory, 0 a .py file, -1 not known yet */
} TreeEnt;

static int cmp_ents(const void *a, const void *b)
{
	return strcmp(((const TreeEnt *)a)->name, ((const TreeEnt *)b)->name);
}

/* The record getdents64 fills its buffer with (the kernel's struct
 * linux_dirent64; glibc declares no type for it before 2.30). */
typedef struct Dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
} Dirent64;

/* Hashes the path (below the walk's root), size and modification time of
 * every .py file under the directory dfd (closed here), in name order;
 * __pycache__ and dot files are skipped. The directory is read with
 * getdents64 and its entries looked at relative to it (fstatat, openat),
 * directories known by the entry's type where the file system gives it:
 * one stat per .py file and four calls per directory, no path walked
 * twice (a new process names the build in a few tens of microseconds). */
static void hash_tree(JitSha256 *s, int dfd, const char *rel, int depth)
{
	TreeEnt *ents = NULL;
	size_t n = 0, cap = 0;
	char buf[4096] __attribute__((aligned(8))); /* small: stack pages already touched */
	long got;
	while (depth < 8 && (got = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
		for (long off = 0; off < got;) {
			const Dirent64 *e = (const Dirent64 *)(buf + off);
			off += e->d_reclen;
			const char *nm = e->d_name;
			size_t len = strlen(nm);
			int is_py = len > 3 && !strcmp(nm + len - 3, ".py");
			int dir = e->d_type == DT_DIR ? 1 : e->d_type == DT_UNKNOWN || e->d_type == DT_LNK ? -1 : 0;
			if (nm[0] == '.' || !strcmp(nm, "__pycache__") || (dir == 0 && (e->d_type != DT_REG || !is_py)))
				continue; /* neither a directory nor a .py file */
			if (n == cap) {
				cap = cap ? 2 * cap : 32;
				TreeEnt *ne = realloc(ents, cap * sizeof *ents);
				if (!ne)
					goto out;
				ents = ne;
			}
			if ((ents[n].name = strdup(nm))) {
				ents[n].dir = dir;
				n++;
			}
		}
	}
	qsort(ents, n, sizeof *ents, cmp_ents);
	for (size_t i = 0; i < n; i++) {
		char sub[4096];
		snprintf(sub, sizeof sub, "%s/%s", rel, ents[i].name);
		struct stat st;
		size_t len = strlen(ents[i].name);
		int is_py = len > 3 && !strcmp(ents[i].name + len - 3, ".py");
		if (ents[i].dir != 1) { /* a .py file's size and mtime, or what a link or DT_UNKNOWN is */
			if (fstatat(dfd, ents[i].name, &st, 0) != 0)
				ents[i].dir = -1;
			else if (S_ISDIR(st.st_mode))
				ents[i].dir = 1;
			else
				ents[i].dir = S_ISREG(st.st_mode) && is_py ? 0 : -1;
		}
		if (ents[i].dir == 1) {
			int sfd = openat(dfd, ents[i].name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (sfd >= 0)
				hash_tree(s, sfd, sub, depth + 1);
		} else if (ents[i].dir == 0) {
			char line[4200];
			int k = snprintf(line, sizeof line, "%s %lld %lld.%09ld\n", sub, (long long)st.st_size,
					 (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
			jit_sha256_update(s, line, (size_t)k < sizeof line ? (size_t)k : sizeof line - 1);
		}
	}
out:
	for (size_t i = 0; i < n; i++)
		free(ents[i].name);
	free(ents);
	close(dfd);
}

/* build_key(dirs) -> hex SHA-256 of the extension's build id (its contents
 * when it has none) and of the path, size and modification time of every
 * .py file under each of dirs (the Python half of the compiler). No file is
 * read: a new process names the build in tens of microseconds. */
PyObject *py_build_key(PyObject *self, PyObject *dirs)
{
	PyObject *seq = PySequence_Tuple(dirs);
	if (!seq)
		return NULL;
	JitSha256 s;
	jit_sha256_init(&s);
	BuildId q = {.addr = (uintptr_t)(void *)py_build_key};
	dl_iterate_phdr(find_build_id, &q);
	if (q.n) {
		jit_sha256_update(&s, "build-id ", 9);
		jit_sha256_update(&s, q.id, q.n);
	} else {
		Dl_info info;
		if (!dladdr((void *)py_build_key, &info) || !info.dli_fname ||
		    hash_file(&s, info.dli_fname) < 0) {
			Py_DECREF(seq);
			PyErr_SetString(PyExc_OSError, "cannot identify the ctriton._C build");
			return NULL;
		}
	}
	for (Py_ssize_t i = 0; i < PyTuple_Size(seq); i++) {
		const char *dir = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(seq, i), NULL);
		if (!dir) {
			Py_DECREF(seq);
			return NULL;
		}
		char tag[16];
		int k = snprintf(tag, sizeof tag, "\ndir %zd\n", i);
		jit_sha256_update(&s, tag, (size_t)k);
		Py_BEGIN_ALLOW_THREADS
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0)
			hash_tree(&s, dfd, ".", 0);
		Py_END_ALLOW_THREADS
	}
	Py_DECREF(seq);
	uint8_t out[32];
	jit_sha256_final(&s, out);
	char hex[65];
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", out[i]);
	return PyUnicode_FromString(hex);
}
