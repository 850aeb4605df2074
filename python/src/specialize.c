/* specialize.c: the specialization of a launch. Each argument of
 * `kernel[grid](*args)` is classified by Triton's rules (ints equal to 1
 * become constants, ints and pointers get the "divisible by 16" bit,
 * i32/i64/u64 by range, floats fp32, bools u1, None and constexpr
 * parameters constants, tuples element by element): the class goes into the
 * key of the kernel's variant cache as a few bytes, the value into the
 * kernel parameters. The compile path runs the same classification with
 * lists that collect the signature and specialization strings. Tensors are
 * anything with a data pointer and a dtype: torch tensors (data_ptr()),
 * numpy arrays (buffer protocol), __cuda_array_interface__ and
 * __array_interface__ objects.
 */
#include <math.h>

#include "runtime.h"

/* ------------------------------------------------------------------------- */
/* dtypes                                                                    */
/* ------------------------------------------------------------------------- */

/* Canonical dtype names; their index is the dtype's code in keys. */
const char *const py_dt_names[] = {
	"fp16", "bf16", "fp32", "fp64", "i8",     "i16",  "i32",     "i64",     "u8",
	"u16",  "u32",  "u64",  "u1",   "fp8e4nv", "fp8e5", "fp8e4b8", "fp8e5b16", "fp8e4b15",
};
enum { NDT = sizeof py_dt_names / sizeof py_dt_names[0] };

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

int py_dt_code_of_name(const char *s)
{
	const char *dot = strrchr(s, '.');
	if (dot)
		s = dot + 1; /* "torch.float16", "ctriton.language.float16" */
	for (int i = 0; i < NDT; i++)
		if (!strcmp(s, py_dt_names[i]))
			return i;
	for (size_t i = 0; i < sizeof DT_ALIASES / sizeof DT_ALIASES[0]; i++)
		if (!strcmp(s, DT_ALIASES[i][0]))
			return py_dt_code_of_name(DT_ALIASES[i][1]);
	return -1;
}

/* The dtype objects seen first, by identity: torch's dtypes are
 * singletons and numpy's arrays share one descriptor per builtin type, so a
 * launch finds its dtypes in a few pointer compares (strong references). */
enum { NDT_SEEN = 32 };
static struct {
	PyObject *obj;
	int code;
} dt_seen[NDT_SEEN];

/* dt_code of a dtype not among the first seen. */
static __attribute__((noinline)) int dt_code_slow(PyObject *dtype)
{
	PyObject *c = PyDict_GetItem(py_rt.dtype_names, dtype); /* borrowed */
	if (c)
		return (int)PyLong_AsLong(c);
	PyObject *s = PyObject_Str(dtype);
	if (!s)
		return -1;
	const char *u = PyUnicode_AsUTF8AndSize(s, NULL);
	int code = u ? py_dt_code_of_name(u) : -1;
	if (code < 0 && u)
		PyErr_Format(PyExc_TypeError, "unsupported tensor dtype %s", u);
	Py_DECREF(s);
	if (code < 0)
		return -1;
	PyObject *v = PyLong_FromLong(code);
	PyDict_SetItem(py_rt.dtype_names, dtype, v);
	Py_DECREF(v);
	for (int i = 0; i < NDT_SEEN; i++)
		if (!dt_seen[i].obj) {
			dt_seen[i].obj = Py_NewRef(dtype);
			dt_seen[i].code = code;
			break;
		}
	return code;
}

/* The dtype code of a dtype object (memoized per object); -1 with an
 * exception set when it is not one we know. */
static inline __attribute__((always_inline)) int dt_code(PyObject *dtype)
{
	for (int i = 0; i < NDT_SEEN && dt_seen[i].obj; i++)
		if (dt_seen[i].obj == dtype)
			return dt_seen[i].code;
	return dt_code_slow(dtype);
}

/* ------------------------------------------------------------------------- */
/* Argument classification                                                   */
/* ------------------------------------------------------------------------- */

const char *const py_ak_sig[] = {"constexpr", "*", "i32", "i64", "u64", "u1", "fp32", "fp16",
				     "bf16", "fp64", "i8", "i16", "u8", "u16", "u32", "tuple"};


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

/* Kinds of tensor-like objects, memoized per Python type, with whether the
 * type tells its device by get_device() (torch's tensors do). */
enum { TK_NONE = 0, TK_TENSOR, TK_BUFFER, TK_ARRAY_IFACE, TK_CAI };
static struct {
	PyTypeObject *type;
	int kind;
	int getdev;
} tk_cache[16];

static int tensor_kind(PyObject *v)
{
	PyTypeObject *t = Py_TYPE(v);
	for (int i = 0; i < 16 && tk_cache[i].type; i++)
		if (tk_cache[i].type == t)
			return tk_cache[i].kind;
	int kind = TK_NONE, gd = 0;
	if (PyObject_HasAttr(v, py_rt.s_data_ptr) && PyObject_HasAttr(v, py_rt.s_dtype)) {
		kind = TK_TENSOR;
		gd = PyObject_HasAttr(v, py_rt.s_get_device);
	}
	else if (PyObject_HasAttr(v, py_rt.s_cai))
		kind = TK_CAI;
	else if (PyObject_HasAttr(v, py_rt.s_dtype) && PyObject_CheckBuffer(v))
		kind = TK_BUFFER;
	else if (PyObject_HasAttr(v, py_rt.s_aif) && PyObject_HasAttr(v, py_rt.s_dtype))
		kind = TK_ARRAY_IFACE;
	PyErr_Clear();
	for (int i = 0; i < 16; i++)
		if (!tk_cache[i].type) {
			Py_INCREF((PyObject *)t);
			tk_cache[i].type = t;
			tk_cache[i].kind = kind;
			tk_cache[i].getdev = gd;
			break;
		}
	return kind;
}

/* Whether v's type (seen by tensor_kind) has get_device(). */
static int tensor_getdev(PyObject *v)
{
	PyTypeObject *t = Py_TYPE(v);
	for (int i = 0; i < 16 && tk_cache[i].type; i++)
		if (tk_cache[i].type == t)
			return tk_cache[i].getdev;
	int gd = PyObject_HasAttr(v, py_rt.s_get_device);
	PyErr_Clear();
	return gd;
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

/* A CPU tensor's address *ptr on a GPU launch: accepted when the GPU can
 * reach it (pinned memory, as Triton's launcher asks the driver), *ptr then
 * the driver's device pointer for it; else (also without a driver) the
 * ValueError of a CPU tensor. */
static int host_pointer(uint64_t *ptr, int argi)
{
	char err[512];
	if (jit_cuda_host_pointer(*ptr, argi, ptr, err, sizeof err) == 0)
		return 0;
	if (strstr(err, "cannot be accessed") || jit_cuda_device_count() < 0)
		PyErr_Format(PyExc_ValueError,
			     "Pointer argument (at %d) cannot be accessed from the GPU "
			     "(a CPU tensor passed to a CUDA kernel?)",
			     argi);
	else
		PyErr_SetString(PyExc_RuntimeError, err);
	return -1;
}

/* The address and dtype code of a tensor-like argument: 0, or 1 for a CPU
 * tensor a GPU launch may use (pinned memory, see host_pointer). */
static int tensor_info(PyObject *v, int kind, int argi, int on_gpu, uint64_t *ptr, int *dt)
{
	PyObject *dtype = PyObject_GetAttr(v, py_rt.s_dtype);
	if (!dtype)
		return -1;
	*dt = dt_code(dtype);
	Py_DECREF(dtype);
	if (*dt < 0)
		return -1;
	if (kind == TK_TENSOR) {
		PyObject *p = PyObject_CallMethodObjArgs(v, py_rt.s_data_ptr, NULL);
		if (!p)
			return -1;
		*ptr = PyLong_AsUnsignedLongLong(p);
		Py_DECREF(p);
		if (PyErr_Occurred())
			return -1;
		PyObject *c = PyObject_GetAttr(v, py_rt.s_is_cuda);
		if (!c) {
			PyErr_Clear();
			return 0;
		}
		int is_cuda = c == Py_True || (c != Py_False && PyObject_IsTrue(c) > 0);
		Py_DECREF(c);
		if (on_gpu && !is_cuda && *ptr)
			return host_pointer(ptr, argi) < 0 ? -1 : 1;
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
		return iface_ptr(v, py_rt.s_cai, ptr);
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
		/* strides but no format: numpy builds no format string then */
		if (PyObject_GetBuffer(v, &view, PyBUF_STRIDES) == 0) {
			*ptr = (uint64_t)(uintptr_t)view.buf;
			PyBuffer_Release(&view);
			return 0;
		}
		PyErr_Clear();
	}
	return iface_ptr(v, py_rt.s_aif, ptr);
}

/* Notes that argument argi is on device dev (-1: none); a second device is
 * an error naming both arguments. */
static int note_device(Pack *pk, int dev, int argi)
{
	if (dev < 0 || dev == pk->dev)
		return 0;
	if (pk->dev < 0) {
		pk->dev = dev;
		pk->dev_arg = argi;
		return 0;
	}
	if (pk->names)
		PyErr_Format(PyExc_ValueError,
			     "Pointer argument '%U' (at %d) is on cuda:%d but argument '%U' (at %d) is on "
			     "cuda:%d: the tensors of one launch must be on one device",
			     pk->names[argi].name, argi, dev, pk->names[pk->dev_arg].name, pk->dev_arg,
			     pk->dev);
	else
		PyErr_Format(PyExc_ValueError,
			     "Pointer argument (at %d) is on cuda:%d but the argument at %d is on cuda:%d: "
			     "the tensors of one launch must be on one device",
			     argi, dev, pk->dev_arg, pk->dev);
	return -1;
}

/* The device that holds the memory at ptr, asked of the driver. */
static int pointer_device(uint64_t ptr, int argi, int *dev)
{
	char err[512];
	if (jit_cuda_pointer_device(ptr, argi, dev, err, sizeof err) == 0)
		return 0;
	PyErr_SetString(strstr(err, "cannot be accessed") ? PyExc_ValueError : PyExc_RuntimeError, err);
	return -1;
}

/* tensor_info of a GPU launch's argument, which also notes its device in
 * pk: a torch tensor's get_device() (-1, a CPU tensor, is an error; None:
 * not known), else the device the driver names for its address. Kept out
 * of line: the CPU's launches never come here. */
static __attribute__((noinline)) int gpu_tensor_info(PyObject *v, int kind, int argi, Pack *pk,
						     uint64_t *ptr, int *dt)
{
	int dev = -1;
	if (kind == TK_TENSOR && tensor_getdev(v)) {
		PyObject *dtype = PyObject_GetAttr(v, py_rt.s_dtype);
		if (!dtype)
			return -1;
		*dt = dt_code(dtype);
		Py_DECREF(dtype);
		if (*dt < 0)
			return -1;
		PyObject *p = PyObject_CallMethodObjArgs(v, py_rt.s_data_ptr, NULL);
		if (!p)
			return -1;
		*ptr = PyLong_AsUnsignedLongLong(p);
		Py_DECREF(p);
		if (PyErr_Occurred())
			return -1;
		PyObject *d = PyObject_CallMethodObjArgs(v, py_rt.s_get_device, NULL);
		if (!d)
			return -1;
		long dv = d == Py_None ? -2 : PyLong_AsLong(d);
		Py_DECREF(d);
		if (dv == -1 && PyErr_Occurred())
			return -1;
		if (dv == -1) /* a CPU tensor: on no device */
			return host_pointer(ptr, argi);
		if (dv == -2 && pointer_device(*ptr, argi, &dev) < 0)
			return -1;
		return note_device(pk, dv >= 0 ? (int)dv : dev, argi);
	}
	int rc = tensor_info(v, kind, argi, 1, ptr, dt);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	if (pointer_device(*ptr, argi, &dev) < 0)
		return -1;
	return note_device(pk, dev, argi);
}

int py_kind_of_sig(const char *s)
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

/* Packs an integer's bits as a parameter of integer kind k. */
static int pack_int(Pack *pk, uint64_t x, int k)
{
	switch (k) {
	case AK_U1: x = x != 0; break;
	case AK_I8: case AK_U8: x = (uint8_t)x; break;
	case AK_I16: case AK_U16: x = (uint16_t)x; break;
	case AK_I32: case AK_U32: x = (uint32_t)x; break;
	default: break;
	}
	return pack_add(pk, x);
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
	return pack_int(pk, (uint64_t)x, k);
}

/* Appends a constexpr value's identity to the key. */
int py_key_constexpr(Buf *key, PyObject *v)
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
		PyObject *r = PyObject_HasAttr(v, py_rt.s_cache_key) ? PyObject_GetAttr(v, py_rt.s_cache_key)
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

/* What an argument's specialization key is on the compile path. */
enum { SK_NONE, SK_VALUE, SK_ONE, SK_ALIGNED, SK_UNALIGNED };

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

/* Records the descriptor (flat: base, shape, strides) packed from slot s0
 * on for its tensor map (GPU launches only: the CPU has none). */
static int note_tdesc(Pack *pk, int argi, PyObject *flat, int s0)
{
	if (!pk || !pk->on_gpu || pk->ntd >= MAXTD || pk->n <= s0)
		return 0;
	PyObject *sh = PyTuple_GetItem(flat, 1), *st = PyTuple_GetItem(flat, 2);
	int rank = (int)PyTuple_Size(sh);
	if (rank < 1 || rank > 5)
		return 0;
	PackTd *t = &pk->td[pk->ntd];
	t->arg = argi;
	t->rank = rank;
	t->base = pk->slot[s0];
	for (int i = 0; i < rank; i++) {
		t->shape[i] = PyLong_AsLongLong(PyTuple_GetItem(sh, i));
		t->strides[i] = PyLong_AsLongLong(PyTuple_GetItem(st, i));
	}
	if (PyErr_Occurred()) {
		PyErr_Clear();
		return 0; /* not ints: the launch reports a descriptor it cannot encode */
	}
	pk->ntd++;
	return 0;
}

static int classify_tdesc(PyObject *v, int argi, Buf *key, Pack *pk, PyObject *sigs, PyObject *specs)
{
	PyObject *flat = tdesc_flat(v);
	PyObject *bs = flat ? attr_tuple(v, "block_shape") : NULL;
	PyObject *pad = bs ? PyObject_GetAttrString(v, "padding") : NULL;
	PyObject *info = pad ? PyTuple_Pack(2, bs, pad) : NULL;
	int r = -1;
	if (info) {
		buf_byte(key, 'T');
		r = py_key_constexpr(key, info);
		int s0 = pk ? pk->n : 0;
		if (r == 0)
			r = py_classify(flat, NULL, argi, key, pk, sigs, specs);
		if (r == 0)
			r = note_tdesc(pk, argi, flat, s0);
	}
	Py_XDECREF(flat);
	Py_XDECREF(bs);
	Py_XDECREF(pad);
	Py_XDECREF(info);
	return r;
}

/* The compile path: appends an argument's type string and specialization
 * key to sigs and specs (either may be NULL). */
static int note_spec(PyObject *sigs, PyObject *specs, const char *tstr, int sk, PyObject *v)
{
	if (sigs) {
		PyObject *s = PyUnicode_FromString(tstr);
		int rc = s ? PyList_Append(sigs, s) : -1;
		Py_XDECREF(s);
		if (rc < 0)
			return -1;
	}
	if (specs) {
		PyObject *k = sk == SK_VALUE	? Py_NewRef(v)
			      : sk == SK_NONE	? Py_NewRef(Py_None)
			      : sk == SK_ONE	? PyLong_FromLong(1)
						: PyUnicode_FromString(sk == SK_ALIGNED ? "D" : "");
		int rc = k ? PyList_Append(specs, k) : -1;
		Py_XDECREF(k);
		if (rc < 0)
			return -1;
	}
	return 0;
}


int py_classify(PyObject *v, const Param *p, int argi, Buf *key, Pack *pk, PyObject *sigs,
		PyObject *specs)
{
	int spec = p ? p->specialize : 1, align = p ? p->align : 1;
	int annot = p ? p->annot : -1;
	int compiling = sigs || specs;
	int kind;

	if (p && p->is_constexpr) {
		if (py_key_constexpr(key, v) < 0)
			return -1;
		return compiling ? note_spec(sigs, specs, "constexpr", SK_VALUE, v) : 0;
	}
	if (v == Py_None) {
		buf_byte(key, 'N');
		return compiling ? note_spec(sigs, specs, "constexpr", SK_NONE, v) : 0;
	}
	if (PyBool_Check(v)) {
		kind = annot >= 0 && annot != AK_PTR ? annot : AK_U1;
		buf_byte(key, 'b');
		buf_byte(key, kind);
		if (pk && pack_scalar(pk, v, kind) < 0)
			return -1;
		return compiling ? note_spec(sigs, specs, py_ak_sig[kind], SK_NONE, v) : 0;
	}
	if (PyLong_Check(v)) {
		int of = 0;
		long long x = PyLong_AsLongLongAndOverflow(v, &of);
		uint64_t bits = (uint64_t)x;
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
			bits = u;
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
		if (spec && !is_float_annot && !of && x == 1 && kind != AK_U64) {
			buf_byte(key, '1');
			return compiling ? note_spec(sigs, specs, "constexpr", SK_ONE, v) : 0;
		}
		int d = align && !is_float_annot && (x % 16 == 0);
		buf_byte(key, 'i');
		buf_byte(key, kind);
		buf_byte(key, d);
		if (pk) {
			int rc = is_float_annot && kind != AK_U1 ? pack_scalar(pk, v, kind)
								 : pack_int(pk, bits, kind);
			if (rc < 0)
				return -1;
		}
		return compiling ? note_spec(sigs, specs, py_ak_sig[kind],
					     d ? SK_ALIGNED : SK_UNALIGNED, v)
				 : 0;
	}
	if (PyFloat_Check(v)) {
		kind = annot >= 0 && annot != AK_PTR ? annot : AK_FP32;
		buf_byte(key, 'f');
		buf_byte(key, kind);
		if (pk && pack_scalar(pk, v, kind) < 0)
			return -1;
		return compiling ? note_spec(sigs, specs, py_ak_sig[kind], SK_NONE, v) : 0;
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
			if (py_classify(PyTuple_GetItem(v, i), NULL, argi, key, pk, ts, ks) < 0) {
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
		int on_gpu = pk ? pk->on_gpu : py_rt.backend == JIT_BACKEND_CUDA;
		if ((pk && on_gpu ? gpu_tensor_info(v, tk, argi, pk, &ptr, &dt)
				  : tensor_info(v, tk, argi, on_gpu, &ptr, &dt)) < 0)
			return -1;
		if (p && p->annot_ptr_dt >= 0)
			dt = p->annot_ptr_dt;
		int d = align && ptr % 16 == 0;
		buf_byte(key, 'P');
		buf_byte(key, dt);
		buf_byte(key, d);
		if (pk && pack_add(pk, ptr) < 0)
			return -1;
		if (!compiling)
			return 0;
		char tbuf[32];
		snprintf(tbuf, sizeof tbuf, "*%s", py_dt_names[dt]);
		return note_spec(sigs, specs, tbuf, d ? SK_ALIGNED : SK_UNALIGNED, v);
	}
	/* Higher-order kernels and tl.constexpr(...) wrappers: constants. */
	PyObject *tname = PyType_GetName(Py_TYPE(v));
	if (tname && PyUnicode_CompareWithASCIIString(tname, "TensorDescriptor") == 0) {
		Py_DECREF(tname);
		return classify_tdesc(v, argi, key, pk, sigs, specs);
	}
	int is_cx = tname && PyUnicode_CompareWithASCIIString(tname, "constexpr") == 0;
	if (is_cx || PyObject_HasAttr(v, py_rt.s_cache_key)) {
		Py_XDECREF(tname);
		if (py_key_constexpr(key, v) < 0)
			return -1;
		return compiling ? note_spec(sigs, specs, "constexpr", SK_VALUE, v) : 0;
	}
	PyErr_Format(PyExc_TypeError,
		     "argument %d: unsupported type %U (expected a tensor or array, int, float, "
		     "bool, None or tuple)",
		     argi, tname);
	Py_XDECREF(tname);
	return -1;
}

int py_pack_by_sig(Pack *pk, PyObject *sig, PyObject *v, int argi)
{
	if (PyTuple_Check(sig) && !PyTuple_Check(v) && is_tdesc(v)) {
		PyObject *flat = tdesc_flat(v);
		int s0 = pk->n;
		int r = flat ? py_pack_by_sig(pk, sig, flat, argi) : -1;
		if (r == 0)
			r = note_tdesc(pk, argi, flat, s0);
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
			if (py_pack_by_sig(pk, PyTuple_GetItem(sig, i), PyTuple_GetItem(v, i), argi) < 0)
				return -1;
		return 0;
	}
	const char *s = PyUnicode_AsUTF8AndSize(sig, NULL);
	if (!s)
		return -1;
	int k = py_kind_of_sig(s);
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
		if ((pk->on_gpu ? gpu_tensor_info(v, tk, argi, pk, &ptr, &dt)
				: tensor_info(v, tk, argi, 0, &ptr, &dt)) < 0)
			return -1;
		return pack_add(pk, ptr);
	}
	if (k < 0) {
		PyErr_Format(PyExc_ValueError, "argument %d: unknown signature type %s", argi, s);
		return -1;
	}
	return pack_scalar(pk, v, k);
}

/* specialize(arg, specialize=True, align=True) -> (type string, key). */
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
 * other buffers by their view (shape, strides, itemsize), torch tensors by
 * shape, stride() and element_size(), TensorWrapper by its base. Anything
 * else: [0, UINT64_MAX), unchecked. */
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

int py_san_fill(PyObject *sig, PyObject *v, uint64_t *ext, int *np)
{
	if (PyTuple_Check(sig) && !PyTuple_Check(v) && is_tdesc(v)) {
		PyObject *flat = tdesc_flat(v);
		int r = flat ? py_san_fill(sig, flat, ext, np) : -1;
		Py_XDECREF(flat);
		return r;
	}
	if (PyTuple_Check(sig)) {
		for (Py_ssize_t i = 0; i < PyTuple_Size(sig); i++)
			if (py_san_fill(PyTuple_GetItem(sig, i), PyTuple_Check(v) ? PyTuple_GetItem(v, i) : Py_None,
					ext, np) < 0)
				return -1;
		return 0;
	}
	const char *s = PyUnicode_AsUTF8AndSize(sig, NULL);
	if (!s)
		return -1;
	int kind = py_kind_of_sig(s);
	if (kind == AK_CONSTEXPR)
		return 0;
	if (*np >= MAXP) {
		PyErr_SetString(PyExc_ValueError, "too many kernel parameters");
		return -1;
	}
	uint64_t *e = &ext[2 * *np];
	(*np)++;
	e[0] = e[1] = 0;
	if (kind != AK_PTR || v == Py_None)
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

int py_san_env(void)
{
	const char *e = getenv("CTRITON_SANITIZE");
	return e && *e && strcmp(e, "0") != 0;
}

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
	if (py_classify(v, &p, 0, &key, NULL, sigs, specs) == 0)
		r = PyTuple_Pack(2, PyList_GetItem(sigs, 0), PyList_GetItem(specs, 0));
	buf_free(&key);
	Py_DECREF(sigs);
	Py_DECREF(specs);
	return r;
}

/* The backend is -1 until a driver is active: see launch.c's
 * activate_default_driver. */
PyRtState py_rt = {.backend = -1};

int py_specialize_init(void)
{
	py_rt.dtype_names = PyDict_New();
	py_rt.s_data_ptr = PyUnicode_InternFromString("data_ptr");
	py_rt.s_dtype = PyUnicode_InternFromString("dtype");
	py_rt.s_is_cuda = PyUnicode_InternFromString("is_cuda");
	py_rt.s_cai = PyUnicode_InternFromString("__cuda_array_interface__");
	py_rt.s_aif = PyUnicode_InternFromString("__array_interface__");
	py_rt.s_compile = PyUnicode_InternFromString("_ct_compile");
	py_rt.s_binary = PyUnicode_InternFromString("_binary");
	py_rt.s_cache_key = PyUnicode_InternFromString("cache_key");
	py_rt.s_value = PyUnicode_InternFromString("value");
	py_rt.s_get_device = PyUnicode_InternFromString("get_device");
	return py_rt.dtype_names && py_rt.s_value && py_rt.s_get_device ? 0 : -1;
}
