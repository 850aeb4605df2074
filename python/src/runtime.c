/* runtime.c: the launch path of ctriton._C. What runs on every
 * `kernel[grid](*args)` is here, in C: binding the arguments to the
 * parameters, classifying each one into its specialization (Triton's rules:
 * ints equal to 1 become constants, ints and pointers get the "divisible by
 * 16" bit, i32/i64/u64 by range, ...), the lookup of that key in the
 * kernel's in-memory cache, the packing of the kernel parameters and the
 * launch. Only a cache miss goes back to Python (JITFunction._ct_compile),
 * which runs the compile driver through compile_ttir() below.
 *
 * Objects:
 *   KernelRuntime  one per @jit function: parameter table + variant cache.
 *                  rt[grid] -> Launcher; Launcher(*args, **kw) launches.
 *   Binary         one compiled variant: the jitted CPU code or the CUDA
 *                  function, its launch metadata and parameter plan.
 * Functions: compile_ttir, sha256, cache_get/cache_put, specialize,
 * set_backend.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jit/jit.h"
#include "py.h"



enum { MAXP = 256 };

/* Process-wide driver state: which backend launches, and how to ask for the
 * current device and stream (set by ctriton.runtime.driver). */
static struct {
	int backend;         /* JIT_BACKEND_CPU / JIT_BACKEND_CUDA */
	PyObject *stream_fn; /* () -> int stream handle, or NULL (default stream) */
	PyObject *dtype_names; /* dict: dtype object -> canonical name (str) */
	PyObject *s_data_ptr, *s_dtype, *s_is_cuda, *s_cai, *s_aif, *s_compile, *s_binary;
	PyObject *s_cache_key, *s_value;
} G;

/* Until a driver is active (ctriton.runtime.driver.active, which calls
 * set_backend), G.backend is -1: the first launch activates the default one
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
/* dtypes                                                                    */
/* ------------------------------------------------------------------------- */

/* Canonical dtype names; their index is the dtype's code in keys. */
static const char *const DT_NAMES[] = {
	"fp16", "bf16", "fp32", "fp64", "i8",     "i16",  "i32",     "i64",     "u8",
	"u16",  "u32",  "u64",  "u1",   "fp8e4nv", "fp8e5", "fp8e4b8", "fp8e5b16", "fp8e4b15",
};
enum { NDT = sizeof DT_NAMES / sizeof DT_NAMES[0] };

/* torch/numpy/ctriton spellings -> canonical. */
static const char *const DT_ALIASES[][2] = {
	{"float16", "fp16"},   {"half", "fp16"},         {"bfloat16", "bf16"},
	{"float32", "fp32"},   {"float", "fp32"},        {"float64", "fp64"},
	{"double", "fp64"},    {"int8", "i8"},           {"int16", "i16"},
	{"short", "i16"},      {"int32", "i32"},         {"int", "i32"},
	{"int64", "i64"},      {"long", "i64"},          {"uint8", "u8"},
	{"uint16", "u16"},     {"uint32", "u32"},        {"uint64", "u64"},
	{"bool", "u1"},        {"int1", "u1"},           {"float8_e4m3fn", "fp8e4nv"},
	{"float8e4nv", "fp8e4nv"}, {"float8_e5m2", "fp8e5"}, {"float8e5", "fp8e5"},
	{"float8_e4m3fnuz", "fp8e4b8"}, {"float8_e5m2fnuz", "fp8e5b16"},
	{"f16", "fp16"},       {"f32", "fp32"},          {"f64", "fp64"},
	{"i1", "u1"},
};

static int dt_code_of_name(const char *s)
{
	const char *dot = strrchr(s, '.');
	if (dot)
		s = dot + 1; /* "torch.float16", "ctriton.language.float16" */
	for (int i = 0; i < NDT; i++)
		if (!strcmp(s, DT_NAMES[i]))
			return i;
	for (size_t i = 0; i < sizeof DT_ALIASES / sizeof DT_ALIASES[0]; i++)
		if (!strcmp(s, DT_ALIASES[i][0]))
			return dt_code_of_name(DT_ALIASES[i][1]);
	return -1;
}

/* The dtype code of a dtype object (memoized per object); -1 with an
 * exception set when it is not one we know. */
static int dt_code(PyObject *dtype)
{
	PyObject *c = PyDict_GetItem(G.dtype_names, dtype); /* borrowed */
	if (c)
		return (int)PyLong_AsLong(c);
	PyObject *s = PyObject_Str(dtype);
	if (!s)
		return -1;
	const char *u = PyUnicode_AsUTF8AndSize(s, NULL);
	int code = u ? dt_code_of_name(u) : -1;
	if (code < 0 && u)
		PyErr_Format(PyExc_TypeError, "unsupported tensor dtype %s", u);
	Py_DECREF(s);
	if (code < 0)
		return -1;
	PyObject *v = PyLong_FromLong(code);
	PyDict_SetItem(G.dtype_names, dtype, v);
	Py_DECREF(v);
	return code;
}

/* ------------------------------------------------------------------------- */
/* Argument classification                                                   */
/* ------------------------------------------------------------------------- */

/* What an argument becomes in the kernel signature. The numbers cross into
 * key bytes; keep them stable. */
typedef enum ArgKind {
	AK_CONSTEXPR = 0, /* dropped from the kernel: None, int 1, constexpr params */
	AK_PTR = 1,
	AK_I32 = 2,
	AK_I64 = 3,
	AK_U64 = 4,
	AK_U1 = 5,
	AK_FP32 = 6,
	AK_FP16 = 7,
	AK_BF16 = 8,
	AK_FP64 = 9,
	AK_I8 = 10,
	AK_I16 = 11,
	AK_U8 = 12,
	AK_U16 = 13,
	AK_U32 = 14,
	AK_TUPLE = 15,
} ArgKind;

static const char *const AK_SIG[] = {"constexpr", "*", "i32", "i64", "u64", "u1", "fp32", "fp16",
				     "bf16", "fp64", "i8", "i16", "u8", "u16", "u32", "tuple"};

/* A growable byte buffer for keys. */
typedef struct Buf {
	char *p;
	size_t n, cap;
	char small[512];
} Buf;

static void buf_init(Buf *b)
{
	b->p = b->small;
	b->n = 0;
	b->cap = sizeof b->small;
}
static void buf_put(Buf *b, const void *d, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = (b->n + n) * 2;
		char *p = malloc(cap);
		memcpy(p, b->p, b->n);
		if (b->p != b->small)
			free(b->p);
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}
static void buf_byte(Buf *b, int c)
{
	char ch = (char)c;
	buf_put(b, &ch, 1);
}
static void buf_free(Buf *b)
{
	if (b->p != b->small)
		free(b->p);
}

/* Packed kernel parameters of one launch. */
typedef struct Pack {
	int n;
	uint64_t slot[MAXP];
	void *params[MAXP];
	int on_gpu; /* check that pointers are device memory */
} Pack;

static int pack_add(Pack *pk, uint64_t bits)
{
	if (pk->n >= MAXP) {
		PyErr_SetString(PyExc_ValueError, "too many kernel parameters");
		return -1;
	}
	pk->slot[pk->n] = bits;
	pk->params[pk->n] = &pk->slot[pk->n];
	pk->n++;
	return 0;
}

/* Kinds of tensor-like objects, memoized per Python type. */
enum { TK_NONE = 0, TK_TENSOR, TK_BUFFER, TK_ARRAY_IFACE, TK_CAI };
static struct {
	PyTypeObject *type;
	int kind;
} tk_cache[16];

static int tensor_kind(PyObject *v)
{
	PyTypeObject *t = Py_TYPE(v);
	for (int i = 0; i < 16 && tk_cache[i].type; i++)
		if (tk_cache[i].type == t)
			return tk_cache[i].kind;
	int kind = TK_NONE;
	if (PyObject_HasAttr(v, G.s_data_ptr) && PyObject_HasAttr(v, G.s_dtype))
		kind = TK_TENSOR;
	else if (PyObject_HasAttr(v, G.s_cai))
		kind = TK_CAI;
	else if (PyObject_HasAttr(v, G.s_dtype) && PyObject_CheckBuffer(v))
		kind = TK_BUFFER;
	else if (PyObject_HasAttr(v, G.s_aif) && PyObject_HasAttr(v, G.s_dtype))
		kind = TK_ARRAY_IFACE;
	PyErr_Clear();
	for (int i = 0; i < 16; i++)
		if (!tk_cache[i].type) {
			Py_INCREF((PyObject *)t);
			tk_cache[i].type = t;
			tk_cache[i].kind = kind;
			break;
		}
	return kind;
}

/* Reads ptr = iface["data"][0] from an (cuda_)array_interface dict. */
static int iface_ptr(PyObject *v, PyObject *attr, uint64_t *ptr)
{
	PyObject *d = PyObject_GetAttr(v, attr);
	if (!d)
		return -1;
	PyObject *data = PyDict_Check(d) ? PyDict_GetItemString(d, "data") : NULL;
	PyObject *p0 = data && PyTuple_Check(data) ? PyTuple_GetItem(data, 0) : NULL;
	int rc = -1;
	if (p0) {
		*ptr = PyLong_AsUnsignedLongLong(p0);
		rc = PyErr_Occurred() ? -1 : 0;
	} else {
		PyErr_SetString(PyExc_TypeError, "malformed array interface");
	}
	Py_DECREF(d);
	return rc;
}

/* The address and dtype code of a tensor-like argument. */
static int tensor_info(PyObject *v, int kind, int argi, int on_gpu, uint64_t *ptr, int *dt)
{
	PyObject *dtype = PyObject_GetAttr(v, G.s_dtype);
	if (!dtype)
		return -1;
	*dt = dt_code(dtype);
	Py_DECREF(dtype);
	if (*dt < 0)
		return -1;
	if (kind == TK_TENSOR) {
		PyObject *p = PyObject_CallMethodObjArgs(v, G.s_data_ptr, NULL);
		if (!p)
			return -1;
		*ptr = PyLong_AsUnsignedLongLong(p);
		Py_DECREF(p);
		if (PyErr_Occurred())
			return -1;
		PyObject *c = PyObject_GetAttr(v, G.s_is_cuda);
		if (!c) {
			PyErr_Clear();
			return 0;
		}
		int is_cuda = PyObject_IsTrue(c);
		Py_DECREF(c);
		if (on_gpu && !is_cuda && *ptr) {
			PyErr_Format(PyExc_ValueError,
				     "Pointer argument (at %d) cannot be accessed from the GPU "
				     "(a CPU tensor passed to a CUDA kernel?)",
				     argi);
			return -1;
		}
		if (!on_gpu && is_cuda) {
			PyErr_Format(PyExc_ValueError,
				     "Pointer argument (at %d) is a CUDA tensor but the active backend is "
				     "the CPU (set CTRITON_BACKEND=cuda?)",
				     argi);
			return -1;
		}
		return 0;
	}
	if (kind == TK_CAI) {
		if (!on_gpu) {
			PyErr_Format(PyExc_ValueError,
				     "Pointer argument (at %d) is device memory but the active backend is "
				     "the CPU",
				     argi);
			return -1;
		}
		return iface_ptr(v, G.s_cai, ptr);
	}
	if (on_gpu) {
		PyErr_Format(PyExc_ValueError,
			     "Pointer argument (at %d) is host memory (a numpy array?) and cannot be "
			     "accessed from the GPU",
			     argi);
		return -1;
	}
	if (kind == TK_BUFFER) {
		Py_buffer view;
		if (PyObject_GetBuffer(v, &view, PyBUF_RECORDS_RO) == 0) {
			*ptr = (uint64_t)(uintptr_t)view.buf;
			PyBuffer_Release(&view);
			return 0;
		}
		PyErr_Clear();
	}
	return iface_ptr(v, G.s_aif, ptr);
}

/* Parses an annotation or signature type string into an ArgKind; -1 if not a
 * scalar kind ("*fp32" gives AK_PTR). */
static int kind_of_sig(const char *s)
{
	if (s[0] == '*')
		return AK_PTR;
	if (!strcmp(s, "constexpr"))
		return AK_CONSTEXPR;
	static const struct {
		const char *n;
		int k;
	} t[] = {{"i1", AK_U1},    {"u1", AK_U1},     {"int1", AK_U1},   {"i8", AK_I8},
		 {"int8", AK_I8},  {"i16", AK_I16},   {"int16", AK_I16}, {"i32", AK_I32},
		 {"int32", AK_I32}, {"i64", AK_I64},  {"int64", AK_I64}, {"u8", AK_U8},
		 {"uint8", AK_U8}, {"u16", AK_U16},   {"uint16", AK_U16}, {"u32", AK_U32},
		 {"uint32", AK_U32}, {"u64", AK_U64}, {"uint64", AK_U64}, {"fp16", AK_FP16},
		 {"float16", AK_FP16}, {"bf16", AK_BF16}, {"bfloat16", AK_BF16},
		 {"fp32", AK_FP32}, {"float32", AK_FP32}, {"fp64", AK_FP64}, {"float64", AK_FP64}};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (!strcmp(s, t[i].n))
			return t[i].k;
	return -1;
}

static uint16_t f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000;
	int exp = (int)((x >> 23) & 0xff) - 127 + 15;
	uint32_t man = x & 0x7fffff;
	if (((x >> 23) & 0xff) == 0xff)
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (exp <= 0) {
		if (exp < -10)
			return (uint16_t)sign;
		man |= 0x800000;
		uint32_t shift = (uint32_t)(14 - exp);
		uint32_t h = man >> shift;
		if ((man >> (shift - 1)) & 1)
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t h = sign | (uint32_t)exp << 10 | man >> 13;
	if (man & 0x1000)
		h++; /* round half up; carries into the exponent correctly */
	return (uint16_t)h;
}

static uint16_t f32_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

/* Packs a Python number as a scalar parameter of kind k. */
static int pack_scalar(Pack *pk, PyObject *v, int k)
{
	if (k == AK_FP32 || k == AK_FP16 || k == AK_BF16 || k == AK_FP64) {
		double d = PyFloat_AsDouble(v);
		if (d == -1.0 && PyErr_Occurred())
			return -1;
		float f = (float)d;
		uint64_t bits = 0;
		if (k == AK_FP64)
			memcpy(&bits, &d, 8);
		else if (k == AK_FP32)
			memcpy(&bits, &f, 4);
		else
			bits = k == AK_FP16 ? f32_to_f16(f) : f32_to_bf16(f);
		return pack_add(pk, bits);
	}
	if (k == AK_U64) {
		unsigned long long u = PyLong_AsUnsignedLongLong(v);
		if (PyErr_Occurred())
			return -1;
		return pack_add(pk, u);
	}
	long long x = PyLong_AsLongLong(v);
	if (x == -1 && PyErr_Occurred()) {
		PyErr_Clear();
		unsigned long long u = PyLong_AsUnsignedLongLong(v);
		if (PyErr_Occurred())
			return -1;
		x = (long long)u;
	}
	uint64_t bits = 0;
	switch (k) {
	case AK_U1: bits = x != 0; break;
	case AK_I8: case AK_U8: bits = (uint8_t)x; break;
	case AK_I16: case AK_U16: bits = (uint16_t)x; break;
	case AK_I32: case AK_U32: bits = (uint32_t)x; break;
	default: bits = (uint64_t)x; break;
	}
	return pack_add(pk, bits);
}

/* Per-parameter facts of a @jit function, from its Python signature. */
typedef struct Param {
	PyObject *name;    /* str */
	int is_constexpr;  /* annotated tl.constexpr */
	int specialize;    /* not in do_not_specialize */
	int align;         /* not in do_not_specialize(_on_alignment) */
	int annot;         /* ArgKind fixed by an annotation, or -1 */
	int annot_ptr_dt;  /* for "*fp16"-style annotations: dtype code, else -1 */
	PyObject *dflt;    /* default value or NULL */
} Param;

/* Appends a constexpr value's identity to the key. */
static int key_constexpr(Buf *key, PyObject *v)
{
	if (v == Py_None) {
		buf_byte(key, 'N');
	} else if (PyBool_Check(v)) {
		buf_byte(key, v == Py_True ? 'T' : 'F');
	} else if (PyLong_Check(v)) {
		int of = 0;
		long long x = PyLong_AsLongLongAndOverflow(v, &of);
		if (!of) {
			buf_byte(key, 'I');
			buf_put(key, &x, 8);
			return 0;
		}
		goto repr;
	} else if (PyFloat_Check(v)) {
		double d = PyFloat_AsDouble(v);
		buf_byte(key, 'D');
		buf_put(key, &d, 8);
	} else if (PyUnicode_Check(v)) {
		Py_ssize_t n;
		const char *s = PyUnicode_AsUTF8AndSize(v, &n);
		if (!s)
			return -1;
		uint32_t len = (uint32_t)n;
		buf_byte(key, 'S');
		buf_put(key, &len, 4);
		buf_put(key, s, (size_t)n);
	} else {
	repr:;
		/* dtypes, @jit functions (their cache_key), anything else: by repr. */
		PyObject *r = PyObject_HasAttr(v, G.s_cache_key) ? PyObject_GetAttr(v, G.s_cache_key)
								   : PyObject_Repr(v);
		if (!r)
			return -1;
		PyObject *rs = PyObject_Str(r);
		Py_DECREF(r);
		if (!rs)
			return -1;
		Py_ssize_t n;
		const char *s = PyUnicode_AsUTF8AndSize(rs, &n);
		uint32_t len = (uint32_t)n;
		buf_byte(key, 'R');
		buf_put(key, &len, 4);
		buf_put(key, s, (size_t)n);
		Py_DECREF(rs);
	}
	return 0;
}

static int classify_tdesc(PyObject *v, int argi, Buf *key, Pack *pk, PyObject *sigs,
			  PyObject *specs);

/* Classifies one argument: appends its key bytes, packs its value (pk may be
 * NULL), and optionally appends its (type string, key) to sig/spec lists
 * (the compile path). Follows triton-reference 3.2. */
static int classify(PyObject *v, const Param *p, int argi, Buf *key, Pack *pk, PyObject *sigs,
		    PyObject *specs)
{
	int spec = p ? p->specialize : 1, align = p ? p->align : 1;
	int annot = p ? p->annot : -1;
	char tbuf[32];
	const char *tstr = NULL; /* the signature type string */
	PyObject *skey = NULL;   /* new reference: the specialization key */
	int kind;

	if (p && p->is_constexpr) {
		if (key_constexpr(key, v) < 0)
			return -1;
		tstr = "constexpr";
		skey = v;
		Py_INCREF(skey);
		goto out;
	}
	if (v == Py_None) {
		buf_byte(key, 'N');
		tstr = "constexpr";
		skey = Py_None;
		Py_INCREF(skey);
		goto out;
	}
	if (PyBool_Check(v)) {
		kind = annot >= 0 && annot != AK_PTR ? annot : AK_U1;
		buf_byte(key, 'b');
		buf_byte(key, kind);
		if (pk && pack_scalar(pk, v, kind) < 0)
			return -1;
		tstr = AK_SIG[kind];
		skey = Py_None;
		Py_INCREF(skey);
		goto out;
	}
	if (PyLong_Check(v)) {
		int of = 0;
		long long x = PyLong_AsLongLongAndOverflow(v, &of);
		int is_float_annot = annot == AK_FP16 || annot == AK_BF16 || annot == AK_FP32 ||
				     annot == AK_FP64 || annot == AK_U1;
		if (of > 0) {
			unsigned long long u = PyLong_AsUnsignedLongLong(v);
			if (PyErr_Occurred()) {
				PyErr_Clear();
				PyErr_Format(PyExc_OverflowError,
					     "integer argument %d is out of range: it must fit in 64 bits "
					     "(at most 2**64-1)",
					     argi);
				return -1;
			}
			kind = AK_U64;
			x = (long long)(u & 15); /* only the divisibility matters below */
		} else if (of < 0) {
			PyErr_Format(PyExc_OverflowError,
				     "integer argument %d is out of range: it must be at least -2**63",
				     argi);
			return -1;
		} else {
			kind = x >= INT32_MIN && x <= INT32_MAX ? AK_I32 : AK_I64;
		}
		if (annot >= 0 && annot != AK_PTR)
			kind = annot;
		if (spec && !is_float_annot && x == 1 && kind != AK_U64) {
			buf_byte(key, '1');
			tstr = "constexpr";
			skey = PyLong_FromLong(1);
			goto out;
		}
		int d = align && !is_float_annot && (x % 16 == 0);
		buf_byte(key, 'i');
		buf_byte(key, kind);
		buf_byte(key, d);
		if (pk && pack_scalar(pk, v, kind) < 0)
			return -1;
		tstr = AK_SIG[kind];
		skey = PyUnicode_FromString(d ? "D" : "");
		goto out;
	}
	if (PyFloat_Check(v)) {
		kind = annot >= 0 && annot != AK_PTR ? annot : AK_FP32;
		buf_byte(key, 'f');
		buf_byte(key, kind);
		if (pk && pack_scalar(pk, v, kind) < 0)
			return -1;
		tstr = AK_SIG[kind];
		skey = Py_None;
		Py_INCREF(skey);
		goto out;
	}
	if (PyTuple_Check(v)) {
		Py_ssize_t n = PyTuple_Size(v);
		PyObject *ts = sigs ? PyList_New(0) : NULL, *ks = specs ? PyList_New(0) : NULL;
		buf_byte(key, '(');
		if (!PyTuple_CheckExact(v)) { /* a namedtuple: its class is part of the key */
			PyTypeObject *ty = Py_TYPE(v);
			buf_put(key, &ty, sizeof ty);
		}
		for (Py_ssize_t i = 0; i < n; i++)
			if (classify(PyTuple_GetItem(v, i), NULL, argi, key, pk, ts, ks) < 0) {
				Py_XDECREF(ts);
				Py_XDECREF(ks);
				return -1;
			}
		buf_byte(key, ')');
		if (sigs) {
			PyObject *tt = PyList_AsTuple(ts);
			PyList_Append(sigs, tt);
			Py_DECREF(tt);
			Py_DECREF(ts);
		}
		if (specs) {
			PyObject *kt = PyList_AsTuple(ks);
			PyList_Append(specs, kt);
			Py_DECREF(kt);
			Py_DECREF(ks);
		}
		return 0;
	}
	int tk = tensor_kind(v);
	if (tk != TK_NONE) {
		uint64_t ptr = 0;
		int dt = -1;
		if (tensor_info(v, tk, argi, pk ? pk->on_gpu : G.backend == JIT_BACKEND_CUDA, &ptr,
				&dt) < 0)
			return -1;
		if (p && p->annot_ptr_dt >= 0)
			dt = p->annot_ptr_dt;
		int d = align && ptr % 16 == 0;
		buf_byte(key, 'P');
		buf_byte(key, dt);
		buf_byte(key, d);
		if (pk && pack_add(pk, ptr) < 0)
			return -1;
		snprintf(tbuf, sizeof tbuf, "*%s", DT_NAMES[dt]);
		tstr = tbuf;
		skey = PyUnicode_FromString(d ? "D" : "");
		goto out;
	}
	/* Higher-order kernels and tl.constexpr(...) wrappers: constants. */
	PyObject *tname = PyType_GetName(Py_TYPE(v));
	if (tname && PyUnicode_CompareWithASCIIString(tname, "TensorDescriptor") == 0) {
		Py_DECREF(tname);
		return classify_tdesc(v, argi, key, pk, sigs, specs);
	}
	int is_cx = tname && PyUnicode_CompareWithASCIIString(tname, "constexpr") == 0;
	if (is_cx || PyObject_HasAttr(v, G.s_cache_key)) {
		Py_XDECREF(tname);
		if (key_constexpr(key, v) < 0)
			return -1;
		tstr = "constexpr";
		skey = v;
		Py_INCREF(skey);
		goto out;
	}
	PyErr_Format(PyExc_TypeError,
		     "argument %d: unsupported type %U (expected a tensor or array, int, float, "
		     "bool, None or tuple)",
		     argi, tname);
	Py_XDECREF(tname);
	return -1;
out:
	if (!skey)
		return -1;
	if (sigs) {
		PyObject *s = PyUnicode_FromString(tstr);
		PyList_Append(sigs, s);
		Py_DECREF(s);
	}
	if (specs)
		PyList_Append(specs, skey);
	Py_DECREF(skey);
	return 0;
}

/* ---- tensor descriptors --------------------------------------------------
 * A TensorDescriptor argument (ctriton.tools.tensor_descriptor, or any class
 * of that name with base/shape/strides/block_shape/padding) is passed as
 * the tuple (base, shape, strides): one pointer and 2 x rank integers, each
 * specialized like a tuple's leaves; its block shape and padding are part
 * of the key like constexprs (the compile path reads them from the object). */

static int is_tdesc(PyObject *v)
{
	PyObject *tn = PyType_GetName(Py_TYPE(v));
	int r = tn && PyUnicode_CompareWithASCIIString(tn, "TensorDescriptor") == 0;
	Py_XDECREF(tn);
	PyErr_Clear();
	return r;
}

/* attr of v as a tuple (a new reference), NULL + error. */
static PyObject *attr_tuple(PyObject *v, const char *attr)
{
	PyObject *o = PyObject_GetAttrString(v, attr);
	if (!o)
		return NULL;
	PyObject *t = PySequence_Tuple(o);
	Py_DECREF(o);
	return t;
}

/* The (base, shape, strides) tuple of a descriptor: a new reference. */
static PyObject *tdesc_flat(PyObject *v)
{
	PyObject *b = PyObject_GetAttrString(v, "base");
	PyObject *sh = b ? attr_tuple(v, "shape") : NULL;
	PyObject *st = sh ? attr_tuple(v, "strides") : NULL;
	PyObject *r = NULL;
	if (st && PyTuple_Size(sh) != PyTuple_Size(st))
		PyErr_SetString(PyExc_ValueError, "TensorDescriptor: shape and strides differ in rank");
	else if (st)
		r = PyTuple_Pack(3, b, sh, st);
	Py_XDECREF(b);
	Py_XDECREF(sh);
	Py_XDECREF(st);
	return r;
}

static int classify_tdesc(PyObject *v, int argi, Buf *key, Pack *pk, PyObject *sigs,
			  PyObject *specs)
{
	PyObject *flat = tdesc_flat(v);
	PyObject *bs = flat ? attr_tuple(v, "block_shape") : NULL;
	PyObject *pad = bs ? PyObject_GetAttrString(v, "padding") : NULL;
	PyObject *info = pad ? PyTuple_Pack(2, bs, pad) : NULL;
	int r = -1;
	if (info) {
		buf_byte(key, 'T');
		r = key_constexpr(key, info);
		if (r == 0)
			r = classify(flat, NULL, argi, key, pk, sigs, specs);
	}
	Py_XDECREF(flat);
	Py_XDECREF(bs);
	Py_XDECREF(pad);
	Py_XDECREF(info);
	return r;
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
	int sanitize;  /* CPU kernel compiled with bounds checks: pass extents */
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
		b->sanitize = be_cpu_kernel_sanitized(b->cpu);
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
	if (!G.stream_fn)
		return NULL;
	PyObject *s = PyObject_CallNoArgs(G.stream_fn);
	if (!s) {
		PyErr_Clear();
		return NULL;
	}
	void *p = (void *)(uintptr_t)PyLong_AsUnsignedLongLong(s);
	Py_DECREF(s);
	PyErr_Clear();
	return p;
}

/* ------------------------------------------------------------------------- */
/* Sanitizer (CPU backend): the byte extent of each pointer argument          */
/* ------------------------------------------------------------------------- */

/* [lo, hi) of the bytes a strided view at ptr covers (ptr itself is element
 * 0); an empty view covers nothing. */
static void strided_extent(uint64_t ptr, int ndim, const Py_ssize_t *shape, const Py_ssize_t *strides,
			   Py_ssize_t itemsize, uint64_t *lo, uint64_t *hi)
{
	int64_t neg = 0, pos = 0;
	for (int d = 0; d < ndim; d++) {
		if (shape[d] == 0) {
			*lo = *hi = ptr;
			return;
		}
		int64_t span = (int64_t)(shape[d] - 1) * (int64_t)(strides ? strides[d] : 0);
		if (span < 0)
			neg += span;
		else
			pos += span;
	}
	if (!strides && ndim > 0) { /* C-contiguous */
		int64_t n = 1;
		for (int d = 0; d < ndim; d++)
			n *= shape[d];
		pos = (n - 1) * itemsize;
	}
	*lo = ptr + (uint64_t)neg;
	*hi = ptr + (uint64_t)pos + (uint64_t)itemsize;
}

/* Reads a sequence of ints (a shape or strides) into out; its length or -1. */
static int int_seq(PyObject *o, Py_ssize_t *out, int max)
{
	PyObject *t = o ? PySequence_Tuple(o) : NULL;
	if (!t)
		return -1;
	Py_ssize_t n = PyTuple_Size(t);
	int rc = n <= max ? (int)n : -1;
	for (Py_ssize_t i = 0; rc >= 0 && i < n; i++) {
		out[i] = PyLong_AsSsize_t(PyTuple_GetItem(t, i));
		if (PyErr_Occurred())
			rc = -1;
	}
	Py_DECREF(t);
	return rc;
}

/* The extent of tensor-like v whose element 0 is at ptr: numpy arrays and
 * other buffers by their view, torch tensors by shape, stride() and
 * element_size(), TensorWrapper by its base. Anything else: [0,
 * UINT64_MAX), unchecked. */
static void tensor_extent(PyObject *v, uint64_t ptr, uint64_t *lo, uint64_t *hi)
{
	*lo = 0;
	*hi = UINT64_MAX;
	Py_ssize_t shape[32], strides[32];
	if (PyObject_CheckBuffer(v)) {
		Py_buffer view;
		if (PyObject_GetBuffer(v, &view, PyBUF_RECORDS_RO) == 0) {
			strided_extent((uint64_t)(uintptr_t)view.buf, view.ndim, view.shape, view.strides,
				       view.itemsize, lo, hi);
			PyBuffer_Release(&view);
			return;
		}
		PyErr_Clear();
	}
	PyObject *tn = PyType_GetName(Py_TYPE(v));
	int wrapper = tn && PyUnicode_CompareWithASCIIString(tn, "TensorWrapper") == 0;
	Py_XDECREF(tn);
	if (wrapper) {
		PyObject *base = PyObject_GetAttrString(v, "base");
		if (base)
			tensor_extent(base, ptr, lo, hi);
		Py_XDECREF(base);
		PyErr_Clear();
		return;
	}
	PyObject *sh = PyObject_GetAttrString(v, "shape");
	PyObject *st = sh ? PyObject_CallMethod(v, "stride", NULL) : NULL;
	PyObject *es = st ? PyObject_CallMethod(v, "element_size", NULL) : NULL;
	int nd = sh ? int_seq(sh, shape, 32) : -1;
	if (es && nd >= 0 && int_seq(st, strides, 32) == nd) {
		Py_ssize_t isz = PyLong_AsSsize_t(es);
		for (int d = 0; d < nd; d++)
			strides[d] *= isz;
		if (!PyErr_Occurred())
			strided_extent(ptr, nd, shape, strides, isz, lo, hi);
	}
	Py_XDECREF(sh);
	Py_XDECREF(st);
	Py_XDECREF(es);
	PyErr_Clear();
}

/* Fills ext (2 words per kernel parameter, backend.h) for the arguments
 * args[0..n) of b's signature; pointer parameters get their tensor's
 * extent, others (0, 0). */
static int san_fill(PyObject *sig, PyObject *v, uint64_t *ext, int *np)
{
	if (PyTuple_Check(sig) && !PyTuple_Check(v) && is_tdesc(v)) {
		PyObject *flat = tdesc_flat(v);
		int r = flat ? san_fill(sig, flat, ext, np) : -1;
		Py_XDECREF(flat);
		return r;
	}
	if (PyTuple_Check(sig)) {
		for (Py_ssize_t i = 0; i < PyTuple_Size(sig); i++)
			if (san_fill(PyTuple_GetItem(sig, i), PyTuple_Check(v) ? PyTuple_GetItem(v, i) : Py_None,
				     ext, np) < 0)
				return -1;
		return 0;
	}
	const char *s = PyUnicode_AsUTF8AndSize(sig, NULL);
	if (!s)
		return -1;
	if (kind_of_sig(s) == AK_CONSTEXPR)
		return 0;
	if (*np >= MAXP) {
		PyErr_SetString(PyExc_ValueError, "too many kernel parameters");
		return -1;
	}
	uint64_t *e = &ext[2 * *np];
	(*np)++;
	e[0] = e[1] = 0;
	if (kind_of_sig(s) != AK_PTR || v == Py_None)
		return 0; /* a None pointer may not be accessed at all */
	if (PyLong_Check(v)) { /* a raw address: unchecked */
		e[1] = UINT64_MAX;
		return 0;
	}
	int tk = tensor_kind(v), dt;
	uint64_t ptr = 0;
	if (tk == TK_NONE || tensor_info(v, tk, 0, 0, &ptr, &dt) < 0) {
		PyErr_Clear();
		e[1] = UINT64_MAX;
		return 0;
	}
	tensor_extent(v, ptr, &e[0], &e[1]);
	return 0;
}

/* For a sanitized kernel: computes the extents of args (one per signature
 * entry) into ext and passes them as params[pk->n]. */
static int san_pack(Binary *b, PyObject *const *args, Py_ssize_t n, Pack *pk, uint64_t *ext)
{
	int np = 0;
	for (Py_ssize_t i = 0; i < n && i < PyTuple_Size(b->sig); i++)
		if (san_fill(PyTuple_GetItem(b->sig, i), args[i], ext, &np) < 0)
			return -1;
	if (pk->n >= MAXP) {
		PyErr_SetString(PyExc_ValueError, "too many kernel parameters");
		return -1;
	}
	pk->params[pk->n] = ext;
	return 0;
}

/* Whether CTRITON_SANITIZE asks for bounds checks (part of the variant key). */
static int san_env(void)
{
	const char *e = getenv("CTRITON_SANITIZE");
	return e && *e && strcmp(e, "0") != 0;
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

/* Packs one argument by its compiled signature entry. */
static int pack_by_sig(Pack *pk, PyObject *sig, PyObject *v, int argi)
{
	if (PyTuple_Check(sig) && !PyTuple_Check(v) && is_tdesc(v)) {
		PyObject *flat = tdesc_flat(v);
		int r = flat ? pack_by_sig(pk, sig, flat, argi) : -1;
		Py_XDECREF(flat);
		return r;
	}
	if (PyTuple_Check(sig)) {
		if (!PyTuple_Check(v) || PyTuple_Size(v) != PyTuple_Size(sig)) {
			PyErr_Format(PyExc_TypeError, "argument %d: expected a tuple of %zd", argi,
				     PyTuple_Size(sig));
			return -1;
		}
		for (Py_ssize_t i = 0; i < PyTuple_Size(sig); i++)
			if (pack_by_sig(pk, PyTuple_GetItem(sig, i), PyTuple_GetItem(v, i), argi) < 0)
				return -1;
		return 0;
	}
	const char *s = PyUnicode_AsUTF8AndSize(sig, NULL);
	if (!s)
		return -1;
	int k = kind_of_sig(s);
	if (k == AK_CONSTEXPR)
		return 0;
	if (k == AK_PTR) {
		uint64_t ptr = 0;
		int dt;
		if (v == Py_None)
			return pack_add(pk, 0);
		if (PyLong_Check(v))
			return pack_add(pk, PyLong_AsUnsignedLongLong(v));
		int tk = tensor_kind(v);
		if (tk == TK_NONE) {
			PyErr_Format(PyExc_TypeError, "argument %d: expected a tensor", argi);
			return -1;
		}
		if (tensor_info(v, tk, argi, pk->on_gpu, &ptr, &dt) < 0)
			return -1;
		return pack_add(pk, ptr);
	}
	if (k < 0) {
		PyErr_Format(PyExc_ValueError, "argument %d: unknown signature type %s", argi, s);
		return -1;
	}
	return pack_scalar(pk, v, k);
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
		if (pack_by_sig(&pk, PyTuple_GetItem(b->sig, i), PyTuple_GetItem(argt, i), (int)i) < 0)
			return NULL;
	uint64_t ext[2 * MAXP];
	if (b->sanitize) {
		PyObject *av[MAXP];
		for (Py_ssize_t i = 0; i < n && i < MAXP; i++)
			av[i] = PyTuple_GetItem(argt, i);
		if (san_pack(b, av, n < MAXP ? n : MAXP, &pk, ext) < 0)
			return NULL;
	}
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
					"sanitize_overflow", "instrumentation_mode", "sanitize", "stream"};
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
				p->annot = kind_of_sig(a);
				if (a[0] == '*')
					p->annot_ptr_dt = dt_code_of_name(a + (a[1] == 'k' ? 2 : 1));
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
	if (G.backend < 0 && activate_default_driver() < 0)
		return NULL;
	if (bind(rt, args, kwargs, slots, opts) < 0)
		return NULL;
	Buf key;
	buf_init(&key);
	Pack pk;
	pk.n = 0;
	pk.on_gpu = G.backend == JIT_BACKEND_CUDA;
	PyObject *result = NULL;

	/* 1. The key: backend, then every argument's class, then the options. */
	buf_byte(&key, G.backend);
	for (int i = 0; i < rt->nparams; i++)
		if (classify(slots[i], &rt->params[i], i, &key, &pk, NULL, NULL) < 0)
			goto done;
	for (int i = 0; i < OPT_STREAM; i++) {
		buf_byte(&key, i);
		if (opts[i] && key_constexpr(&key, opts[i]) < 0)
			goto done;
	}
	buf_byte(&key, san_env());

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
			if (classify(slots[i], &rt->params[i], i, &k2, &pk2, sigs, specs) < 0)
				break;
		buf_free(&k2);
		for (int i = 0; i < OPT_STREAM && !PyErr_Occurred(); i++)
			if (opts[i])
				PyDict_SetItem(od, rt->opt_names[i], opts[i]);
		PyObject *bd = PyErr_Occurred() ? NULL : bound_dict(rt, slots);
		PyObject *compiled = bd ? PyObject_CallMethodObjArgs(rt->jitfn, G.s_compile, bd, sigs,
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
		PyObject *bin = PyObject_GetAttr(e->compiled, G.s_binary);
		if (!bin)
			goto done;
		if (!PyObject_TypeCheck(bin, (PyTypeObject *)BinaryType)) {
			PyErr_SetString(PyExc_TypeError, "CompiledKernel._binary must be a _C.Binary");
			Py_DECREF(bin);
			goto done;
		}
		e->bin = (Binary *)bin;
	}
	uint64_t ext[2 * MAXP];
	if (e->bin->sanitize && san_pack(e->bin, slots, rt->nparams, &pk, ext) < 0)
		goto done;
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
	if (G.backend < 0 && activate_default_driver() < 0)
		return NULL;
	if (bind(rt, args, kwargs == Py_None ? NULL : kwargs, slots, opts) < 0)
		return NULL;
	Buf key;
	buf_init(&key);
	PyObject *sigs = PyList_New(0), *specs = PyList_New(0), *r = NULL;
	buf_byte(&key, G.backend);
	for (int i = 0; i < rt->nparams; i++)
		if (classify(slots[i], &rt->params[i], i, &key, NULL, sigs, specs) < 0)
			goto done;
	for (int i = 0; i < OPT_STREAM; i++) {
		buf_byte(&key, i);
		if (opts[i] && key_constexpr(&key, opts[i]) < 0)
			goto done;
	}
	buf_byte(&key, san_env());
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
	const char *ttir, *filename, *dump_after = NULL;
	int backend, arch, warp, stop_ttir;
	PyObject *o;
	if (!PyArg_ParseTuple(args, "ssiiiO!p|z", &ttir, &filename, &backend, &arch, &warp, &PyDict_Type, &o,
			      &stop_ttir, &dump_after))
		return NULL;
	BeOptions opt = {
		.num_warps = (int)opt_int(o, "num_warps", 4),
		.num_ctas = (int)opt_int(o, "num_ctas", 1),
		.num_stages = (int)opt_int(o, "num_stages", 3),
		.enable_fp_fusion = opt_int(o, "enable_fp_fusion", 1) != 0,
		.debug = opt_int(o, "debug", 0) != 0,
		.maxnreg = (int)opt_int(o, "maxnreg", 0),
		.sanitize = opt_int(o, "sanitize", 0) != 0,
	};
	JitTarget t = {.backend = backend, .arch = arch, .warp_size = warp};
	JitKernel k;
	char *err;
	Py_BEGIN_ALLOW_THREADS
	err = jit_compile(ttir, filename, &opt, &t, stop_ttir ? JIT_STOP_TTIR : 0, dump_after, &k);
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

/* set_backend(kind, stream_fn or None) */
PyObject *py_set_backend(PyObject *self, PyObject *args)
{
	int kind;
	PyObject *sf;
	if (!PyArg_ParseTuple(args, "iO", &kind, &sf))
		return NULL;
	G.backend = kind;
	Py_XDECREF(G.stream_fn);
	G.stream_fn = sf == Py_None ? NULL : Py_NewRef(sf);
	Py_RETURN_NONE;
}

/* specialize(arg, specialize=True, align=True) -> (type string, key). */
PyObject *py_specialize(PyObject *self, PyObject *args)
{
	PyObject *v;
	int spec = 1, align = 1;
	if (!PyArg_ParseTuple(args, "O|pp", &v, &spec, &align))
		return NULL;
	Param p = {.specialize = spec, .align = spec && align, .annot = -1, .annot_ptr_dt = -1};
	Buf key;
	buf_init(&key);
	PyObject *sigs = PyList_New(0), *specs = PyList_New(0), *r = NULL;
	if (classify(v, &p, 0, &key, NULL, sigs, specs) == 0)
		r = PyTuple_Pack(2, PyList_GetItem(sigs, 0), PyList_GetItem(specs, 0));
	buf_free(&key);
	Py_DECREF(sigs);
	Py_DECREF(specs);
	return r;
}

/* Creates the runtime's types and interned names; called by PyInit__C. */
int py_runtime_init(PyObject *m)
{
	G.backend = -1; /* no driver active yet: see activate_default_driver */
	G.dtype_names = PyDict_New();
	G.s_data_ptr = PyUnicode_InternFromString("data_ptr");
	G.s_dtype = PyUnicode_InternFromString("dtype");
	G.s_is_cuda = PyUnicode_InternFromString("is_cuda");
	G.s_cai = PyUnicode_InternFromString("__cuda_array_interface__");
	G.s_aif = PyUnicode_InternFromString("__array_interface__");
	G.s_compile = PyUnicode_InternFromString("_ct_compile");
	G.s_binary = PyUnicode_InternFromString("_binary");
	G.s_cache_key = PyUnicode_InternFromString("cache_key");
	G.s_value = PyUnicode_InternFromString("value");
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
