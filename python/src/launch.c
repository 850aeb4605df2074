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
 *   Binary         one compiled variant: the jitted CPU code, or the CUDA
 *                  image and its module and function per device, loaded
 *                  on the variant's first launch there and unloaded when
 *                  the Binary dies; its launch metadata and parameter plan.
 * Functions: set_backend, set_launch_hooks.
 *
 * Devices: a GPU launch runs on the device of its tensor arguments (all on
 * one device, else a ValueError naming two of them), or, when none carries
 * a device, on torch's current device (torch.cuda.set_device, `with
 * torch.cuda.device(n)`) or that of the thread's current context. The
 * device is the last part of the variant key: devices of one architecture
 * share the CompiledKernel (one compile, one cubin) and the Binary, which
 * holds one loaded module per device. The launch goes to torch's current
 * stream of that device, in its primary context (jit/cuda.c).
 */
#include <stddef.h>
#include <unistd.h>

#include "runtime.h"
#include "structmember.h"

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
	/* CUDA: the image (a cubin, or NUL-terminated PTX) and the kernel's
	 * name, kept for loads on further devices; cuk[d] is the module and
	 * function loaded on device d (function NULL: not loaded), ncuk the
	 * process's device count (the table is made on the first load and
	 * never moves: launches read it with the GIL released). */
	PyObject *image;
	char *name;
	JitCudaKernel *cuk;
	int ncuk;
	pid_t pid; /* the process that made it: a forked child unloads nothing */
	int num_warps, num_ctas, shared;
	unsigned launch_flags; /* CUDA: JIT_LAUNCH_* (launch_pdl, launch_cooperative_grid) */
	PyObject *sig; /* tuple of type strings (nested tuples for tuple args) */
	int sanitize;  /* CPU kernel compiled with bounds checks: pass extents */
	/* CUDA: the tensor-map parameters after the others, one per
	 * TensorDescriptor argument the kernel may copy through the tensor
	 * memory access unit: (argument, box inner, box outer, swizzle bytes,
	 * CUtensorMapDataType, NaN padding, used, then for a descriptor made in
	 * the kernel from parameters (argument -1) where its base, shape and
	 * outer stride come from: jit.h); an unused one gets zeros.
	 * last[] / map[]: the last descriptor each was encoded from. */
	int ntma;
	int64_t tma[MAXTMAP][14];
	PackTd last[MAXTMAP];
	unsigned char map[MAXTMAP][128];
	/* CUDA: global scratch bytes per program (tensor maps made on the
	 * device) and their alignment; 0: none (the buffer, from the
	 * allocator at each launch, is the last parameter) */
	int64_t gscratch;
	int gscratch_align;
} Binary;

static PyObject *BinaryType;

/* Unloads every module of b, each in its device's context: not after the
 * interpreter began to exit (the process's end frees them, and the driver
 * may be going) nor in a forked child (the parent's driver state is not
 * its own). Deallocation holds the GIL. */
static void binary_unload(Binary *b)
{
	if (!b->cuk)
		return;
	if (!py_rt.exiting && b->pid == getpid())
		for (int d = 0; d < b->ncuk; d++)
			if (b->cuk[d].module)
				jit_cuda_unload(&b->cuk[d]);
	free(b->cuk);
	b->cuk = NULL;
	b->ncuk = 0;
}

static void Binary_dealloc(PyObject *self)
{
	Binary *b = (Binary *)self;
	binary_unload(b);
	Py_XDECREF(b->image);
	free(b->name);
	Py_XDECREF(b->cpu_owner);
	Py_XDECREF(b->sig);
	PyTypeObject *tp = Py_TYPE(self);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
	tp_free(self);
	Py_DECREF(tp);
}

/* Binary(backend, signature, num_warps, num_ctas, shared, cpu_kernel_capsule,
 *        cuda_image, name, launch_flags=0, tma=None, global_scratch_size=0,
 *        global_scratch_align=1): a launchable variant. A CUDA image (bytes)
 * is loaded on each device at the variant's first launch there;
 * launch_flags (JIT_LAUNCH_*) are the attributes of its CUDA launches (the
 * CPU has none to set); tma the tensor-map plan (jit.h); a CUDA kernel
 * with global scratch gets a buffer from the allocator at each launch. */
static PyObject *Binary_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
	int backend, nw, nc, shared, galign = 1;
	long long gsize = 0;
	unsigned flags = 0;
	PyObject *sig, *cap, *image, *tma = NULL;
	const char *name;
	if (!PyArg_ParseTuple(args, "iOiiiOOs|IOLi", &backend, &sig, &nw, &nc, &shared, &cap, &image,
			      &name, &flags, &tma, &gsize, &galign))
		return NULL;
	if (gsize < 0 || galign < 1 || (galign & (galign - 1))) {
		PyErr_Format(PyExc_ValueError, "Binary: global scratch of %lld bytes aligned to %d", gsize, galign);
		return NULL;
	}
	Py_ssize_t ntma = tma && tma != Py_None ? PySequence_Size(tma) : 0;
	if (ntma < 0 || ntma > MAXTMAP) {
		if (!PyErr_Occurred())
			PyErr_Format(PyExc_ValueError, "Binary: at most %d tensor maps", (int)MAXTMAP);
		return NULL;
	}
	if (flags & ~(unsigned)(JIT_LAUNCH_PDL | JIT_LAUNCH_COOPERATIVE)) {
		PyErr_Format(PyExc_ValueError, "Binary: unknown launch flags %#x", flags);
		return NULL;
	}
	allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
	Binary *b = (Binary *)alloc(tp, 0);
	if (!b)
		return NULL;
	b->backend = backend;
	b->launch_flags = flags;
	for (Py_ssize_t j = 0; j < ntma; j++) {
		PyObject *t = PySequence_GetItem(tma, j);
		PyObject *tt = t ? PySequence_Tuple(t) : NULL;
		Py_XDECREF(t);
		if (!tt || PyTuple_Size(tt) != 14) {
			Py_XDECREF(tt);
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_ValueError, "Binary: a tensor-map plan entry has 14 ints");
			Py_DECREF(b);
			return NULL;
		}
		for (int i = 0; i < 14; i++)
			b->tma[j][i] = PyLong_AsLongLong(PyTuple_GetItem(tt, i));
		Py_DECREF(tt);
		if (PyErr_Occurred()) {
			Py_DECREF(b);
			return NULL;
		}
		b->last[j].rank = 0;
	}
	b->ntma = (int)ntma;
	b->gscratch = backend == JIT_BACKEND_CUDA ? gsize : 0; /* the CPU's programs need none */
	b->gscratch_align = galign;
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
	b->pid = getpid();
	if (backend == JIT_BACKEND_CUDA && image != Py_None) {
		if (!PyBytes_Check(image)) {
			PyErr_SetString(PyExc_TypeError, "Binary: a CUDA image must be bytes");
			goto fail;
		}
		b->image = Py_NewRef(image);
		if (!(b->name = strdup(name))) {
			PyErr_NoMemory();
			goto fail;
		}
	}
	return (PyObject *)b;
fail:
	Py_DECREF(b);
	return NULL;
}

/* A load's error as an exception: OutOfResources for resources (as the
 * compiler reports them), RuntimeError otherwise. */
static void raise_load_error(const char *err)
{
	if (!strncmp(err, "out of resource", 15)) {
		PyObject *m = PyImport_ImportModule("ctriton.compiler.compiler");
		PyObject *e = m ? PyObject_CallMethod(m, "_compilation_error", "s", err) : NULL;
		Py_XDECREF(m);
		if (e) {
			PyErr_SetObject((PyObject *)Py_TYPE(e), e);
			Py_DECREF(e);
			return;
		}
		PyErr_Clear();
	}
	PyErr_SetString(PyExc_RuntimeError, err);
}

/* Loads b's image on device dev (GIL held: one load per slot). */
static const JitCudaKernel *binary_load(Binary *b, int dev)
{
	if (!b->image) {
		PyErr_SetString(PyExc_RuntimeError, "kernel has no CUDA image to load");
		return NULL;
	}
	if (!b->cuk) {
		int n = jit_cuda_device_count();
		if (n <= 0) {
			PyErr_SetString(PyExc_RuntimeError, "no CUDA device to load the kernel on");
			return NULL;
		}
		if (!(b->cuk = calloc((size_t)n, sizeof *b->cuk))) {
			PyErr_NoMemory();
			return NULL;
		}
		b->ncuk = n;
	}
	if (dev < 0 || dev >= b->ncuk) {
		PyErr_Format(PyExc_ValueError, "CUDA device %d does not exist (this process sees %d device%s)", dev,
			     b->ncuk, b->ncuk == 1 ? "" : "s");
		return NULL;
	}
	/* PTX images are passed NUL-terminated; a cubin is an ELF file. */
	const char *img = PyBytes_AsString(b->image);
	Py_ssize_t len = PyBytes_Size(b->image);
	bool is_cubin = len >= 4 && !memcmp(img, "\177ELF", 4);
	char err[4096];
	JitCudaKernel k;
	if (jit_cuda_load_on(dev, img, (size_t)len, is_cubin, b->name, b->shared, b->num_warps, &k, err,
			     sizeof err) != 0) {
		raise_load_error(err);
		return NULL;
	}
	b->cuk[dev] = k;
	return &b->cuk[dev];
}

/* b's function on device dev, loaded there on first use. */
static inline const JitCudaKernel *binary_cuda(Binary *b, int dev)
{
	if (dev >= 0 && dev < b->ncuk && b->cuk[dev].function)
		return &b->cuk[dev];
	return binary_load(b, dev);
}

/* binary.loaded() -> {device: (module, function)} of the devices it is
 * loaded on. */
static PyObject *Binary_loaded(PyObject *self, PyObject *unused)
{
	Binary *b = (Binary *)self;
	PyObject *d = PyDict_New();
	for (int i = 0; d && i < b->ncuk; i++) {
		if (!b->cuk[i].function)
			continue;
		PyObject *k = PyLong_FromLong(i);
		PyObject *v = Py_BuildValue("(KK)", (unsigned long long)(uintptr_t)b->cuk[i].module,
					    (unsigned long long)(uintptr_t)b->cuk[i].function);
		if (!k || !v || PyDict_SetItem(d, k, v) < 0)
			Py_CLEAR(d);
		Py_XDECREF(k);
		Py_XDECREF(v);
	}
	return d;
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

/* torch's stream getters, looked up once torch is imported: the current
 * device (torch._C._cuda_getDevice) and its current stream handle
 * (torch._C._cuda_getCurrentRawStream); Py_None when torch has none. */
static PyObject *torch_device_fn, *torch_stream_fn, *s_torch;

static int find_torch_stream(void)
{
	PyObject *mods = PyImport_GetModuleDict(); /* borrowed */
	PyObject *torch = mods ? PyDict_GetItem(mods, s_torch) : NULL; /* borrowed */
	if (!torch)
		return 0; /* not imported (yet): the default stream */
	PyObject *tc = PyObject_GetAttrString(torch, "_C");
	PyObject *dev = tc ? PyObject_GetAttrString(tc, "_cuda_getDevice") : NULL;
	PyObject *st = dev ? PyObject_GetAttrString(tc, "_cuda_getCurrentRawStream") : NULL;
	Py_XDECREF(tc);
	PyErr_Clear();
	if (!st) { /* a torch without CUDA */
		Py_XDECREF(dev);
		dev = Py_NewRef(Py_None);
		st = Py_NewRef(Py_None);
	}
	torch_device_fn = dev;
	torch_stream_fn = st;
	return 0;
}

/* torch cannot use CUDA here: it never will. */
static void torch_give_up(void)
{
	Py_XDECREF(torch_device_fn);
	Py_XDECREF(torch_stream_fn);
	torch_device_fn = Py_NewRef(Py_None);
	torch_stream_fn = Py_NewRef(Py_None);
}

/* The device of a GPU launch whose arguments carry none: torch's current
 * device when torch is imported (one builtin call), else the device of the
 * calling thread's current context, else 0. */
static int current_device(void)
{
	if (!torch_stream_fn)
		find_torch_stream();
	if (torch_device_fn && torch_device_fn != Py_None) {
		PyObject *d = PyObject_CallNoArgs(torch_device_fn);
		long v = d ? PyLong_AsLong(d) : -1;
		Py_XDECREF(d);
		if (v >= 0 && !PyErr_Occurred())
			return (int)v;
		PyErr_Clear();
		if (!d)
			torch_give_up();
	}
	int dev = -1;
	return jit_cuda_context_device(&dev) == 0 && dev >= 0 ? dev : 0;
}

/* The stream to launch on, on device dev: the driver's getter when it set
 * one, else torch's current stream of dev when torch is imported (one
 * builtin call, no Python frame), else 0 (the default stream). */
static void *current_stream(int dev)
{
	PyObject *s = NULL;
	if (py_rt.stream_fn) {
		s = PyObject_CallNoArgs(py_rt.stream_fn);
	} else {
		if (!torch_stream_fn)
			find_torch_stream();
		if (!torch_stream_fn || torch_stream_fn == Py_None)
			return NULL;
		PyObject *d = PyLong_FromLong(dev);
		s = d ? PyObject_CallFunctionObjArgs(torch_stream_fn, d, NULL) : NULL;
		Py_XDECREF(d);
		if (!s)
			torch_give_up();
	}
	if (!s) {
		PyErr_Clear();
		return NULL;
	}
	void *p = (void *)(uintptr_t)PyLong_AsUnsignedLongLong(s);
	Py_DECREF(s);
	PyErr_Clear();
	return p;
}

/* For a sanitized kernel: computes the extents of args (one per signature
 * entry) into ext and passes them as params[pk->n]. */
static int san_pack(Binary *b, PyObject *const *args, Py_ssize_t n, Pack *pk, uint64_t *ext)
{
	int np = 0;
	for (Py_ssize_t i = 0; i < n && i < PyTuple_Size(b->sig); i++)
		if (py_san_fill(PyTuple_GetItem(b->sig, i), args[i], ext, &np) < 0)
			return -1;
	if (pk->n >= MAXP) {
		PyErr_SetString(PyExc_ValueError, "too many kernel parameters");
		return -1;
	}
	pk->params[pk->n] = ext;
	return 0;
}

static bool same_td(const PackTd *a, const PackTd *b)
{
	if (a->rank != b->rank || a->base != b->base)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->shape[i] != b->shape[i] || a->strides[i] != b->strides[i])
			return false;
	return true;
}

/* A field of a tensor map made in the kernel: the constant v (k 0) or
 * parameter v as an i32 (1), a 64-bit integer or pointer (2), a u32 (3). */
static int plan_value(const Pack *pk, int64_t k, int64_t v, int64_t *out)
{
	if (k == 0) {
		*out = v;
		return 0;
	}
	if (k == 4) { /* a product of parameters and constants, 20 bits a factor */
		int64_t prod = 1, x;
		for (int i = 0; i < 3; i++) {
			int64_t fct = (v >> (20 * i)) & 0xFFFFF;
			if (!(fct & (1 << 18)))
				continue;
			if ((fct & (1 << 19)) && ((fct >> 16) & 3) == 0) /* a power of two */
				x = (fct & 0xFFFF) < 63 ? (int64_t)1 << (fct & 0xFFFF) : -1;
			else if (plan_value(pk, (fct >> 16) & 3, fct & 0xFFFF, &x) < 0)
				return -1;
			if (x < 0)
				return -1;
			prod *= x;
		}
		*out = prod;
		return 0;
	}
	if (v < 0 || v >= pk->n || k < 0 || k > 3)
		return -1;
	uint64_t s = pk->slot[v];
	*out = k == 1 ? (int64_t)(int32_t)(uint32_t)s : k == 3 ? (int64_t)(uint32_t)s : (int64_t)s;
	return 0;
}

/* The tensor-map parameters: encoded from the descriptor arguments (the
 * last encoding of each reused while the descriptor is the same), after
 * the pk->n others. */
static int pack_tensor_maps(Binary *b, Pack *pk)
{
	if (pk->n + b->ntma > MAXP) {
		PyErr_SetString(PyExc_ValueError, "too many kernel parameters");
		return -1;
	}
	for (int j = 0; j < b->ntma; j++) {
		const int64_t *pl = b->tma[j];
		unsigned char *out = pk->tmap[j];
		pk->params[pk->n + j] = out;
		if (!pl[6]) {
			memset(out, 0, 128);
			continue;
		}
		const PackTd *td = NULL;
		PackTd made;
		if (pl[0] < 0) { /* made in the kernel from parameters */
			int64_t base;
			made.arg = -1;
			made.rank = 2;
			made.strides[1] = 1;
			if (plan_value(pk, 2, pl[7], &base) < 0 || plan_value(pk, pl[8], pl[9], &made.shape[0]) < 0 ||
			    plan_value(pk, pl[10], pl[11], &made.shape[1]) < 0 ||
			    plan_value(pk, pl[12], pl[13], &made.strides[0]) < 0) {
				PyErr_SetString(PyExc_RuntimeError, "internal error: a tensor map's parameter is out of range");
				return -1;
			}
			made.base = (uint64_t)base;
			td = &made;
		}
		for (int i = 0; i < pk->ntd && !td; i++)
			if (pk->td[i].arg == pl[0])
				td = &pk->td[i];
		if (!td) {
			PyErr_Format(PyExc_TypeError, "argument %d: expected a TensorDescriptor", (int)pl[0]);
			return -1;
		}
		if (!same_td(td, &b->last[j])) {
			char err[256];
			int dt = (int)pl[4], es = dt == 0 ? 1 : dt == 1 || dt == 6 || dt == 9 ? 2 : 4;
			if (jit_cuda_tensor_map(b->map[j], dt, es, td->rank, td->base, td->shape, td->strides, (int)pl[1],
						(int)pl[2], (int)pl[3], (int)pl[5], err, sizeof err) != 0) {
				b->last[j].rank = 0;
				if (pl[0] < 0)
					PyErr_Format(PyExc_ValueError, "tl.make_tensor_descriptor: %s", err);
				else
					PyErr_Format(PyExc_ValueError, "argument %d: %s", (int)pl[0], err);
				return -1;
			}
			b->last[j] = *td;
		}
		memcpy(out, b->map[j], 128);
	}
	return 0;
}

/* The allocator of the current context: ctriton.runtime.allocation's
 * context variable, looked up once. */
static PyObject *allocator_var;

/* The global scratch of a launch of b over g on stream st (Triton's
 * launcher): one call of the current allocator with (bytes per program x
 * programs, alignment, stream); *ptr the buffer's data_ptr(). Returns the
 * buffer, held until the launch is queued; NULL + an exception (the
 * NullAllocator's RuntimeError when none is set), nothing launched. */
static PyObject *scratch_alloc(Binary *b, const int g[3], void *st, uint64_t *ptr)
{
	if (!allocator_var) {
		PyObject *m = PyImport_ImportModule("ctriton.runtime.allocation");
		allocator_var = m ? PyObject_GetAttrString(m, "_allocator") : NULL;
		Py_XDECREF(m);
		if (!allocator_var)
			return NULL;
	}
	long long size;
	if (__builtin_mul_overflow((long long)g[0] * g[1], (long long)g[2], &size) ||
	    __builtin_mul_overflow(size, (long long)b->gscratch, &size)) {
		PyErr_SetString(PyExc_OverflowError, "global scratch: the grid needs more than 2**63 bytes");
		return NULL;
	}
	PyObject *fn = PyObject_CallMethod(allocator_var, "get", NULL);
	PyObject *buf = fn ? PyObject_CallFunction(fn, "LiK", size, b->gscratch_align,
						   (unsigned long long)(uintptr_t)st)
			   : NULL;
	Py_XDECREF(fn);
	PyObject *p = buf ? PyObject_CallMethod(buf, "data_ptr", NULL) : NULL;
	*ptr = p ? PyLong_AsUnsignedLongLong(p) : 0;
	Py_XDECREF(p);
	if (!p || PyErr_Occurred()) {
		Py_XDECREF(buf);
		return NULL;
	}
	if (*ptr % (uint64_t)b->gscratch_align) {
		char msg[160];
		snprintf(msg, sizeof msg,
			 "the allocator returned memory at %#llx for the kernel's global scratch, which must be "
			 "aligned to %d bytes",
			 (unsigned long long)*ptr, b->gscratch_align);
		PyErr_SetString(PyExc_ValueError, msg);
		Py_DECREF(buf);
		return NULL;
	}
	return buf;
}

/* Launches b over grid with packed parameters, on the GPU on device dev. */
static int binary_launch(Binary *b, int dev, const int g[3], Pack *pk, PyObject *stream)
{
	char err[1024];
	if (g[0] <= 0 || g[1] <= 0 || g[2] <= 0)
		return 0; /* an empty grid launches nothing */
	if (b->backend == JIT_BACKEND_CUDA) {
		const JitCudaKernel *k = binary_cuda(b, dev);
		if (!k)
			return -1;
		if (b->ntma && pack_tensor_maps(b, pk) < 0)
			return -1;
		void *st = stream && stream != Py_None
				   ? (void *)(uintptr_t)PyLong_AsUnsignedLongLong(stream)
				   : current_stream(dev);
		/* global scratch: the last parameter, after the tensor maps */
		uint64_t scratch = 0;
		PyObject *sbuf = NULL;
		if (b->gscratch) {
			if (pk->n + b->ntma >= MAXP) {
				PyErr_SetString(PyExc_ValueError, "too many kernel parameters");
				return -1;
			}
			if (!(sbuf = scratch_alloc(b, g, st, &scratch)))
				return -1;
			pk->params[pk->n + b->ntma] = &scratch;
		}
		int rc;
		Py_BEGIN_ALLOW_THREADS
		const unsigned ug[3] = {(unsigned)g[0], (unsigned)g[1], (unsigned)g[2]};
		rc = jit_cuda_launch_ex(k, ug, (uint64_t)(uintptr_t)st, pk->params, b->launch_flags, err, sizeof err);
		Py_END_ALLOW_THREADS
		Py_XDECREF(sbuf);
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
	pack_init(&pk, b->backend == JIT_BACKEND_CUDA, NULL);
	for (Py_ssize_t i = 0; i < n; i++)
		if (py_pack_by_sig(&pk, PyTuple_GetItem(b->sig, i), PyTuple_GetItem(argt, i), (int)i) < 0)
			return NULL;
	if (pk.on_gpu && pk.dev < 0)
		pk.dev = current_device();
	uint64_t ext[2 * MAXP];
	if (b->sanitize) {
		PyObject *av[MAXP];
		for (Py_ssize_t i = 0; i < n && i < MAXP; i++)
			av[i] = PyTuple_GetItem(argt, i);
		if (san_pack(b, av, n < MAXP ? n : MAXP, &pk, ext) < 0)
			return NULL;
	}
	if (binary_launch(b, pk.dev, g, &pk, stream) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyMethodDef Binary_methods[] = {
	{"launch", Binary_launch, METH_VARARGS,
	 "launch(grid, args, stream=None): on the device of the tensor arguments, else the current one"},
	{"loaded", Binary_loaded, METH_NOARGS, "loaded() -> {device: (module, function)} loaded so far"},
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
 * the key in this order, except the stream's. */
static const char *const OPT_NAMES[] = {"num_warps", "num_stages", "num_ctas", "maxnreg",
					"enable_fp_fusion", "debug", "enable_reflect_ftz",
					"launch_cooperative_grid", "launch_pdl",
					"default_dot_input_precision", "max_num_imprecise_acc_default",
					"sanitize_overflow", "instrumentation_mode", "sanitize", "extern_libs",
					"arch", "stream"};
enum { NOPT = sizeof OPT_NAMES / sizeof OPT_NAMES[0], OPT_STREAM = NOPT - 1 };

/* Interned: the option names, and the keywords run() takes for itself. */
static PyObject *opt_names[NOPT], *s_grid, *s_warmup;

/* The base class of JITFunction (ctriton/runtime/jit.py), so that
 * `kernel[grid]` and `kernel.run(...)` are C calls. */
typedef struct KernelRuntime {
	PyObject_HEAD
	int nparams;
	Param *params;
	PyObject *name; /* the kernel's name, for messages */
	Entry *tab;
	size_t cap, n;
} KernelRuntime;

static PyObject *RuntimeType, *LauncherType;

/* A hash of the key bytes, eight at a time. */
static inline __attribute__((always_inline)) uint64_t key_hash(const char *p, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	for (; n >= 8; p += 8, n -= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	for (; n; p++, n--)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	return h ^ (h >> 29);
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

static void rt_free_params(KernelRuntime *rt)
{
	for (int i = 0; i < rt->nparams; i++) {
		Py_XDECREF(rt->params[i].name);
		Py_XDECREF(rt->params[i].dflt);
	}
	free(rt->params);
	rt->params = NULL;
	rt->nparams = 0;
}

static void Runtime_dealloc(PyObject *self)
{
	KernelRuntime *rt = (KernelRuntime *)self;
	rt_clear(rt);
	rt_free_params(rt);
	Py_XDECREF(rt->name);
	PyTypeObject *tp = Py_TYPE(self);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
	tp_free(self);
	Py_DECREF(tp);
}

/* rt._ct_setup(name, params): the parameter table. params is a list of
 * (name, is_constexpr, specialize, align, annotation str or None,
 *  has_default, default). */
static PyObject *Runtime_setup(PyObject *self, PyObject *args)
{
	KernelRuntime *rt = (KernelRuntime *)self;
	PyObject *kname, *plist;
	if (!PyArg_ParseTuple(args, "UO", &kname, &plist))
		return NULL;
	Py_ssize_t n = PySequence_Size(plist);
	if (n < 0 || n > MAXP) {
		PyErr_SetString(PyExc_ValueError, "bad parameter list");
		return NULL;
	}
	rt_clear(rt);
	rt_free_params(rt);
	Py_XDECREF(rt->name);
	rt->name = Py_NewRef(kname);
	rt->params = calloc((size_t)n + 1, sizeof(Param));
	if (!rt->params)
		return PyErr_NoMemory();
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *t = PySequence_GetItem(plist, i);
		PyObject *name, *annot, *dflt;
		int isc, spec, align, hasd;
		if (!t || !PyArg_ParseTuple(t, "UpppOpO", &name, &isc, &spec, &align, &annot, &hasd,
					    &dflt)) {
			Py_XDECREF(t);
			return NULL;
		}
		Param *p = &rt->params[i];
		rt->nparams = (int)i + 1;
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
	Py_RETURN_NONE;
}

/* The arguments of one call, as vectorcall passes them (pos[0..npos),
 * then the values of kwnames) or as a dict (kwdict). */
typedef struct Args {
	PyObject *const *pos;
	Py_ssize_t npos;
	PyObject *kwnames; /* tuple or NULL */
	PyObject *kwdict;  /* dict or NULL */
	int run_kw;	   /* skip run()'s own keywords grid= and warmup= */
} Args;

/* The index of the parameter or option named k (interned names compare by
 * identity first); nparams + i for option i, -1 if none. */
static int find_name(KernelRuntime *rt, PyObject *k)
{
	for (int i = 0; i < rt->nparams; i++)
		if (rt->params[i].name == k)
			return i;
	for (int i = 0; i < NOPT; i++)
		if (opt_names[i] == k)
			return rt->nparams + i;
	for (int i = 0; i < rt->nparams; i++)
		if (PyUnicode_Compare(k, rt->params[i].name) == 0)
			return i;
	for (int i = 0; i < NOPT; i++)
		if (PyUnicode_Compare(k, opt_names[i]) == 0)
			return rt->nparams + i;
	PyErr_Clear(); /* a non-str keyword compares with an error */
	return -1;
}

/* Binds one keyword argument. */
static int bind_kw(KernelRuntime *rt, PyObject *k, PyObject *v, PyObject **slots, PyObject **opts)
{
	int i = find_name(rt, k);
	if (i < 0) {
		PyErr_Format(PyExc_KeyError,
			     "%U(): keyword argument '%S' was specified but is neither a parameter "
			     "of the kernel nor a launch option (num_warps, num_stages, num_ctas, "
			     "maxnreg, enable_fp_fusion, debug, ...)",
			     rt->name, k);
		return -1;
	}
	if (i >= rt->nparams) {
		opts[i - rt->nparams] = v;
		return 0;
	}
	if (slots[i]) {
		PyErr_Format(PyExc_TypeError, "%U() got multiple values for argument '%U'", rt->name,
			     k);
		return -1;
	}
	slots[i] = v;
	return 0;
}

static int is_run_kw(PyObject *k)
{
	return k == s_grid || k == s_warmup ||
	       (PyUnicode_Check(k) && (PyUnicode_Compare(k, s_grid) == 0 ||
				       PyUnicode_Compare(k, s_warmup) == 0));
}

/* Binds the arguments to the parameters (slots, borrowed refs) and collects
 * launch options (opts[i] borrowed or NULL). */
static int bind(KernelRuntime *rt, const Args *a, PyObject **slots, PyObject **opts)
{
	if (!rt->params) {
		PyErr_SetString(PyExc_RuntimeError, "KernelRuntime used before _ct_setup()");
		return -1;
	}
	if (a->npos > rt->nparams) {
		PyErr_Format(PyExc_TypeError, "%U() takes %d arguments but %zd were given", rt->name,
			     rt->nparams, a->npos);
		return -1;
	}
	for (int i = 0; i < rt->nparams; i++)
		slots[i] = i < a->npos ? a->pos[i] : NULL;
	for (int i = 0; i < NOPT; i++)
		opts[i] = NULL;
	if (a->kwnames) {
		Py_ssize_t nk = PyTuple_Size(a->kwnames);
		for (Py_ssize_t j = 0; j < nk; j++) {
			PyObject *k = PyTuple_GetItem(a->kwnames, j);
			if (a->run_kw && is_run_kw(k))
				continue;
			if (bind_kw(rt, k, a->pos[a->npos + j], slots, opts) < 0)
				return -1;
		}
	}
	if (a->kwdict) {
		Py_ssize_t pos = 0;
		PyObject *k, *v;
		while (PyDict_Next(a->kwdict, &pos, &k, &v)) {
			if (a->run_kw && is_run_kw(k))
				continue;
			if (bind_kw(rt, k, v, slots, opts) < 0)
				return -1;
		}
	}
	for (int i = 0; i < rt->nparams; i++)
		if (!slots[i]) {
			if (!rt->params[i].dflt) {
				PyErr_Format(PyExc_TypeError, "%U() missing required argument '%U'",
					     rt->name, rt->params[i].name);
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

/* The key: backend, then every argument's class, then the options and
 * whether CTRITON_SANITIZE is set. Packs the parameters into pk (may be
 * NULL) and, on the compile path, collects the signature and
 * specialization lists. A GPU launch's key ends with its device:
 * key_device. */
static int make_key(KernelRuntime *rt, PyObject **slots, PyObject **opts, Buf *key, Pack *pk,
		    PyObject *sigs, PyObject *specs)
{
	buf_byte(key, py_rt.backend);
	for (int i = 0; i < rt->nparams; i++)
		if (py_classify(slots[i], &rt->params[i], i, key, pk, sigs, specs) < 0)
			return -1;
	for (int i = 0; i < OPT_STREAM; i++) {
		buf_byte(key, i);
		if (opts[i] && py_key_constexpr(key, opts[i]) < 0)
			return -1;
	}
	buf_byte(key, py_san_env());
	return 0;
}

/* Appends the device of a GPU launch (that of its tensors, else the
 * current one) to its key: two bytes, last (rt_share relies on it). A
 * device the process does not have is a ValueError. */
static int key_device(Buf *key, Pack *pk)
{
	if (pk->dev < 0)
		pk->dev = current_device();
	int n = jit_cuda_device_count();
	if (n >= 0 && pk->dev >= n) {
		PyErr_Format(PyExc_ValueError, "CUDA device %d does not exist (this process sees %d device%s)",
			     pk->dev, n, n == 1 ? "" : "s");
		return -1;
	}
	uint16_t d = (uint16_t)pk->dev;
	buf_put(key, &d, sizeof d);
	return 0;
}

/* A miss on device dev: when a device of the same architecture has the
 * variant, dev shares its CompiledKernel and Binary (its function on dev
 * is loaded at the first launch there). */
static Entry *rt_share(KernelRuntime *rt, const Buf *key, uint64_t h, int dev)
{
	int arch = jit_cuda_arch(dev), n = jit_cuda_device_count();
	if (arch <= 0 || key->n < 2)
		return NULL;
	Buf k;
	buf_init(&k);
	buf_put(&k, key->p, key->n);
	Entry *e = NULL;
	for (int j = 0; j < n && !e; j++) {
		if (j == dev || jit_cuda_arch(j) != arch)
			continue;
		uint16_t d = (uint16_t)j;
		memcpy(k.p + k.n - sizeof d, &d, sizeof d);
		e = rt_find(rt, k.p, k.n, key_hash(k.p, k.n));
	}
	buf_free(&k);
	if (!e)
		return NULL;
	PyObject *compiled = Py_NewRef(e->compiled); /* e moves when the table grows */
	Binary *bin = (Binary *)Py_XNewRef((PyObject *)e->bin);
	rt_insert(rt, key->p, key->n, h, compiled, bin);
	Py_DECREF(compiled);
	Py_XDECREF((PyObject *)bin);
	return rt_find(rt, key->p, key->n, h);
}

/* A miss: compiles through Python (JITFunction._ct_compile, for device dev
 * on the GPU, -1 on the CPU) and remembers the variant under key. */
static Entry *rt_compile(KernelRuntime *rt, PyObject **slots, PyObject **opts, const Buf *key,
			 uint64_t h, int dev)
{
	if (dev >= 0) {
		Entry *e = rt_share(rt, key, h, dev);
		if (e)
			return e;
	}
	PyObject *sigs = PyList_New(0), *specs = PyList_New(0), *od = PyDict_New();
	PyObject *bd = NULL, *compiled = NULL, *devo = NULL;
	Buf k2;
	buf_init(&k2);
	if (!sigs || !specs || !od || make_key(rt, slots, opts, &k2, NULL, sigs, specs) < 0)
		goto done;
	for (int i = 0; i < OPT_STREAM; i++)
		if (opts[i] && PyDict_SetItem(od, opt_names[i], opts[i]) < 0)
			goto done;
	bd = bound_dict(rt, slots);
	devo = dev >= 0 ? PyLong_FromLong(dev) : Py_NewRef(Py_None);
	if (bd && devo)
		compiled = PyObject_CallMethodObjArgs((PyObject *)rt, py_rt.s_compile, bd, sigs,
						      specs, od, devo, NULL);
done:
	buf_free(&k2);
	Py_XDECREF(devo);
	Py_XDECREF(bd);
	Py_XDECREF(sigs);
	Py_XDECREF(specs);
	Py_XDECREF(od);
	if (!compiled)
		return NULL;
	/* another thread may have compiled the same variant meanwhile (the
	 * compile runs without the GIL): keep the first */
	if (!rt_find(rt, key->p, key->n, h))
		rt_insert(rt, key->p, key->n, h, compiled, NULL);
	Py_DECREF(compiled);
	return rt_find(rt, key->p, key->n, h);
}

/* The enter hook's call before a launch: enter(kernel, compiled, grid,
 * bound args, stream or None) -> the metadata the exit hook receives. */
static PyObject *launch_enter(KernelRuntime *rt, PyObject *compiled, const int g[3], PyObject **slots,
			      PyObject *stream)
{
	PyObject *enter = Py_NewRef(py_rt.launch_enter);
	PyObject *grid = Py_BuildValue("(iii)", g[0], g[1], g[2]);
	PyObject *bd = grid ? bound_dict(rt, slots) : NULL;
	PyObject *md = bd ? PyObject_CallFunctionObjArgs(enter, (PyObject *)rt, compiled, grid, bd,
							 stream ? stream : Py_None, NULL)
			  : NULL;
	Py_XDECREF(bd);
	Py_XDECREF(grid);
	Py_DECREF(enter);
	return md;
}

/* The launch: bind, key, look up (compile on a miss), pack, launch.
 * Returns the CompiledKernel (new reference). */
static PyObject *rt_run(KernelRuntime *rt, PyObject *grid, const Args *a, int warmup)
{
	PyObject *slots[MAXP], *opts[NOPT];
	if (py_rt.backend < 0 && activate_default_driver() < 0)
		return NULL;
	if (bind(rt, a, slots, opts) < 0)
		return NULL;
	Buf key;
	buf_init(&key);
	Pack pk;
	pack_init(&pk, py_rt.backend == JIT_BACKEND_CUDA, rt->params);
	PyObject *result = NULL;

	/* 1. The key, packing the parameters on the way. */
	if (make_key(rt, slots, opts, &key, &pk, NULL, NULL) < 0 ||
	    (pk.on_gpu && key_device(&key, &pk) < 0))
		goto done;

	/* 2. Lookup; a miss compiles through Python and remembers the variant. */
	uint64_t h = key_hash(key.p, key.n);
	Entry *e = rt_find(rt, key.p, key.n, h);
	if (!e && !(e = rt_compile(rt, slots, opts, &key, h, pk.on_gpu ? pk.dev : -1)))
		goto done;
	if (warmup) {
		result = Py_NewRef(e->compiled);
		goto done;
	}

	/* 3. The grid: a tuple, or a callable of the bound arguments. */
	int g[3];
	if (PyTuple_Check(grid) || PyLong_Check(grid) || !PyCallable_Check(grid)) {
		if (read_grid(grid, g) < 0)
			goto done;
	} else {
		PyObject *bd = bound_dict(rt, slots);
		PyObject *gv = bd ? PyObject_CallFunctionObjArgs(grid, bd, NULL) : NULL;
		Py_XDECREF(bd);
		if (!gv)
			goto done;
		int rc = read_grid(gv, g);
		Py_DECREF(gv);
		if (rc < 0)
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
	/* e may move (a clear() from another thread while the GIL is released):
	 * hold what the launch uses. */
	PyObject *compiled = Py_NewRef(e->compiled);
	Binary *bin = (Binary *)Py_NewRef((PyObject *)e->bin);
	uint64_t ext[2 * MAXP];
	int rc = bin->sanitize ? san_pack(bin, slots, rt->nparams, &pk, ext) : 0;
	PyObject *exit_hook = NULL, *md = NULL;
	if (rc == 0 && py_rt.launch_enter) {
		exit_hook = Py_XNewRef(py_rt.launch_exit);
		md = launch_enter(rt, compiled, g, slots, opts[OPT_STREAM]);
		rc = md ? 0 : -1;
	}
	if (rc == 0)
		rc = binary_launch(bin, pk.dev, g, &pk, opts[OPT_STREAM]);
	if (rc == 0 && md && exit_hook) {
		PyObject *r = PyObject_CallFunctionObjArgs(exit_hook, md, NULL);
		rc = r ? 0 : -1;
		Py_XDECREF(r);
	}
	Py_XDECREF(md);
	Py_XDECREF(exit_hook);
	Py_DECREF((PyObject *)bin);
	if (rc < 0)
		Py_DECREF(compiled);
	else
		result = compiled;
done:
	buf_free(&key);
	return result;
}

/* rt.run(*args, grid, warmup=False, **kwargs) -> CompiledKernel: Triton's
 * JITFunction.run. */
static PyObject *Runtime_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
			     PyObject *kwnames)
{
	PyObject *grid = NULL;
	int warmup = 0;
	Py_ssize_t nk = kwnames ? PyTuple_Size(kwnames) : 0;
	for (Py_ssize_t j = 0; j < nk; j++) {
		PyObject *k = PyTuple_GetItem(kwnames, j);
		if (k == s_grid || PyUnicode_Compare(k, s_grid) == 0) {
			grid = args[nargs + j];
		} else if (k == s_warmup || PyUnicode_Compare(k, s_warmup) == 0) {
			warmup = PyObject_IsTrue(args[nargs + j]);
			if (warmup < 0)
				return NULL;
		}
	}
	if (PyErr_Occurred())
		return NULL;
	if (!grid) {
		PyErr_SetString(PyExc_TypeError, "run() missing required keyword argument 'grid'");
		return NULL;
	}
	Args a = {.pos = args, .npos = nargs, .kwnames = kwnames, .run_kw = 1};
	return rt_run((KernelRuntime *)self, grid, &a, warmup);
}

/* The arguments of a tuple + dict call, copied into items[]. */
static int args_of_tuple(PyObject *args, PyObject *kwargs, PyObject **items, Args *a)
{
	Py_ssize_t n = PyTuple_Size(args);
	if (n < 0)
		return -1;
	if (n > MAXP) {
		PyErr_Format(PyExc_TypeError, "too many arguments (%zd)", n);
		return -1;
	}
	for (Py_ssize_t i = 0; i < n; i++)
		items[i] = PyTuple_GetItem(args, i);
	*a = (Args){.pos = items, .npos = n, .kwdict = kwargs && kwargs != Py_None ? kwargs : NULL};
	return 0;
}

/* rt._ct_key(args, kwargs) -> (key bytes, signature, specs): the in-memory
 * key (tests, debugging). */
static PyObject *Runtime_key(PyObject *self, PyObject *targs)
{
	KernelRuntime *rt = (KernelRuntime *)self;
	PyObject *args, *kwargs, *items[MAXP], *slots[MAXP], *opts[NOPT];
	Args a;
	if (!PyArg_ParseTuple(targs, "O!O", &PyTuple_Type, &args, &kwargs) ||
	    args_of_tuple(args, kwargs, items, &a) < 0)
		return NULL;
	if (py_rt.backend < 0 && activate_default_driver() < 0)
		return NULL;
	if (bind(rt, &a, slots, opts) < 0)
		return NULL;
	Buf key;
	buf_init(&key);
	Pack pk; /* packed too, for the device */
	pack_init(&pk, py_rt.backend == JIT_BACKEND_CUDA, rt->params);
	PyObject *sigs = PyList_New(0), *specs = PyList_New(0), *r = NULL;
	if (sigs && specs && make_key(rt, slots, opts, &key, &pk, sigs, specs) == 0 &&
	    (!pk.on_gpu || key_device(&key, &pk) == 0))
		r = Py_BuildValue("(y#OO)", key.p, (Py_ssize_t)key.n, sigs, specs);
	Py_XDECREF(sigs);
	Py_XDECREF(specs);
	buf_free(&key);
	return r;
}

static PyObject *Runtime_clear(PyObject *self, PyObject *unused)
{
	rt_clear((KernelRuntime *)self);
	Py_RETURN_NONE;
}

/* rt._ct_variants() -> list of the cached CompiledKernels, each once. */
static PyObject *Runtime_variants(PyObject *self, PyObject *unused)
{
	KernelRuntime *rt = (KernelRuntime *)self;
	PyObject *l = PyList_New(0);
	for (size_t i = 0; l && i < rt->cap; i++) {
		if (!rt->tab[i].key)
			continue;
		/* devices of one architecture share a CompiledKernel: list it once */
		int seen = PySequence_Contains(l, rt->tab[i].compiled);
		if (seen < 0 || (!seen && PyList_Append(l, rt->tab[i].compiled) < 0))
			Py_CLEAR(l);
	}
	return l;
}

/* ------------------------------------------------------------------------- */
/* Launcher: rt[grid], called with the kernel's arguments                    */
/* ------------------------------------------------------------------------- */

/* The vectorcall protocol (PEP 590): part of the limited API from 3.12
 * (these are its stable values), honoured by 3.11 for heap types that name
 * the offset of their function pointer in a __vectorcalloffset__ member. */
#ifndef Py_TPFLAGS_HAVE_VECTORCALL
#define Py_TPFLAGS_HAVE_VECTORCALL (1UL << 11)
#endif
#define VECTORCALL_NARGS(n) ((Py_ssize_t)((n) & ~((size_t)1 << (8 * sizeof(size_t) - 1))))
typedef PyObject *(*VectorcallFn)(PyObject *, PyObject *const *, size_t, PyObject *);

typedef struct Launcher {
	PyObject_HEAD
	VectorcallFn vectorcall;
	KernelRuntime *rt;
	PyObject *grid;
} Launcher;

/* launcher(*args, **kwargs): the vectorcall entry of every launch. */
static PyObject *Launcher_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
				     PyObject *kwnames)
{
	Launcher *l = (Launcher *)self;
	Args a = {.pos = args, .npos = VECTORCALL_NARGS(nargsf),
		  .kwnames = kwnames && PyTuple_Size(kwnames) ? kwnames : NULL};
	return rt_run(l->rt, l->grid, &a, 0);
}

/* The same through tp_call (callers that build a tuple and a dict). */
static PyObject *Launcher_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
	Launcher *l = (Launcher *)self;
	PyObject *items[MAXP];
	Args a;
	if (args_of_tuple(args, kwargs, items, &a) < 0)
		return NULL;
	return rt_run(l->rt, l->grid, &a, 0);
}

static PyObject *Runtime_getitem(PyObject *self, PyObject *grid)
{
	PyTypeObject *tp = (PyTypeObject *)LauncherType;
	allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
	Launcher *l = (Launcher *)alloc(tp, 0);
	if (!l)
		return NULL;
	l->vectorcall = Launcher_vectorcall;
	l->rt = (KernelRuntime *)Py_NewRef(self);
	l->grid = Py_NewRef(grid);
	return (PyObject *)l;
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
	{"_ct_setup", Runtime_setup, METH_VARARGS, "_ct_setup(name, params): the parameter table"},
	{"run", (PyCFunction)(void (*)(void))Runtime_run, METH_FASTCALL | METH_KEYWORDS,
	 "run(*args, grid, warmup=False, **kwargs) -> CompiledKernel"},
	{"_ct_key", Runtime_key, METH_VARARGS,
	 "_ct_key(args, kwargs) -> (key bytes, signature, specs)"},
	{"_ct_clear", Runtime_clear, METH_NOARGS, "drop every cached variant"},
	{"_ct_variants", Runtime_variants, METH_NOARGS, "the cached CompiledKernels"},
	{NULL, NULL, 0, NULL},
};

static PyType_Slot Runtime_slots[] = {
	{Py_tp_new, (void *)PyType_GenericNew},
	{Py_tp_dealloc, (void *)Runtime_dealloc},
	{Py_tp_methods, Runtime_methods},
	{Py_mp_subscript, (void *)Runtime_getitem},
	{0, NULL},
};
static PyType_Spec Runtime_spec = {"ctriton._C.KernelRuntime", sizeof(KernelRuntime), 0,
				   Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, Runtime_slots};

static PyMemberDef Launcher_members[] = {
	{"__vectorcalloffset__", T_PYSSIZET, offsetof(Launcher, vectorcall), READONLY, NULL},
	{NULL, 0, 0, 0, NULL},
};

static PyType_Slot Launcher_slots[] = {
	{Py_tp_call, (void *)Launcher_call},
	{Py_tp_members, Launcher_members},
	{Py_tp_dealloc, (void *)Launcher_dealloc},
	{0, NULL},
};
static PyType_Spec Launcher_spec = {"ctriton._C.Launcher", sizeof(Launcher), 0,
				    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
				    Launcher_slots};

/* set_backend(kind, stream_fn or None): stream_fn() gives the stream handle
 * to launch on; None: torch's current stream when torch is imported, else
 * the default stream. */
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

/* set_launch_hooks(enter, exit): called around every launch of a
 * KernelRuntime (see PyRtState); (None, None) turns them off. */
PyObject *py_set_launch_hooks(PyObject *self, PyObject *args)
{
	PyObject *en, *ex;
	if (!PyArg_ParseTuple(args, "OO", &en, &ex))
		return NULL;
	if ((en == Py_None) != (ex == Py_None) ||
	    (en != Py_None && (!PyCallable_Check(en) || !PyCallable_Check(ex)))) {
		PyErr_SetString(PyExc_TypeError, "set_launch_hooks(enter, exit): two callables, or None, None");
		return NULL;
	}
	Py_CLEAR(py_rt.launch_enter);
	Py_CLEAR(py_rt.launch_exit);
	if (en != Py_None) {
		py_rt.launch_enter = Py_NewRef(en);
		py_rt.launch_exit = Py_NewRef(ex);
	}
	Py_RETURN_NONE;
}

/* Registered with atexit: from here on, deallocated Binaries leave their
 * modules to the process's end. */
static PyObject *py_at_exit(PyObject *self, PyObject *unused)
{
	py_rt.exiting = 1;
	Py_RETURN_NONE;
}

static PyMethodDef at_exit_def = {"_at_exit", py_at_exit, METH_NOARGS,
				  "marks the interpreter as exiting (registered with atexit)"};

static int register_at_exit(PyObject *m)
{
	PyObject *fn = PyCFunction_NewEx(&at_exit_def, NULL, NULL);
	PyObject *ax = fn ? PyImport_ImportModule("atexit") : NULL;
	PyObject *r = ax ? PyObject_CallMethod(ax, "register", "O", fn) : NULL;
	int rc = r && PyModule_AddObjectRef(m, "_at_exit", fn) == 0 ? 0 : -1;
	Py_XDECREF(r);
	Py_XDECREF(ax);
	Py_XDECREF(fn);
	return rc;
}

/* Creates the runtime's types and interned names; called by PyInit__C. */
int py_runtime_init(PyObject *m)
{
	if (py_specialize_init() < 0 || register_at_exit(m) < 0)
		return -1;
	for (int i = 0; i < NOPT; i++)
		if (!(opt_names[i] = PyUnicode_InternFromString(OPT_NAMES[i])))
			return -1;
	s_grid = PyUnicode_InternFromString("grid");
	s_warmup = PyUnicode_InternFromString("warmup");
	s_torch = PyUnicode_InternFromString("torch");
	BinaryType = PyType_FromSpec(&Binary_spec);
	RuntimeType = PyType_FromSpec(&Runtime_spec);
	LauncherType = PyType_FromSpec(&Launcher_spec);
	if (!s_grid || !s_warmup || !s_torch || !BinaryType || !RuntimeType || !LauncherType)
		return -1;
	if (PyModule_AddObjectRef(m, "Binary", BinaryType) < 0 ||
	    PyModule_AddObjectRef(m, "KernelRuntime", RuntimeType) < 0 ||
	    PyModule_AddObjectRef(m, "Launcher", LauncherType) < 0 ||
	    PyModule_AddIntConstant(m, "BACKEND_CPU", JIT_BACKEND_CPU) < 0 ||
	    PyModule_AddIntConstant(m, "BACKEND_CUDA", JIT_BACKEND_CUDA) < 0 ||
	    PyModule_AddIntConstant(m, "LAUNCH_PDL", JIT_LAUNCH_PDL) < 0 ||
	    PyModule_AddIntConstant(m, "LAUNCH_COOPERATIVE", JIT_LAUNCH_COOPERATIVE) < 0)
		return -1;
	return 0;
}
