/* module.c: the ctriton._C extension module: its method table and init.
 * Every function registered here is declared in py.h and implemented in the
 * file its section names.
 */
#include "py.h"

static PyMethodDef methods[] = {
	/* python/frontend/frontend.c */
	{"ast_to_ttir", (PyCFunction)(void (*)(void))py_ast_to_ttir, METH_VARARGS | METH_KEYWORDS,
	 "ast_to_ttir(jitfn, signature, constexprs, attrs, options) -> TTIR text"},
	{"builtin_table", py_builtin_table, METH_NOARGS,
	 "builtin_table() -> [(name, params, is_tensor_method)]: the builtins the frontend lowers"},
	/* bindings.c */
	{"compile_ttir", py_compile_ttir, METH_VARARGS,
	 "compile_ttir(ttir, filename, backend, arch, warp_size, options, stop_after_ttir, "
	 "dump_after=None) -> dict of stages, 'passes' run and 'dumps' [(pass, text)] (or {'error': msg})"},
	{"pass_table", py_pass_table, METH_NOARGS, "pass_table() -> the compile pipeline's passes, in order"},
	{"ptxas", py_ptxas, METH_VARARGS, "ptxas(ptx, arch) -> (cubin, n_regs, n_spills) or None"},
	{"ptxas_path", py_ptxas_path, METH_NOARGS, "ptxas_path() -> the ptxas compiles use, or None"},
	{"set_pkg_ptxas", py_set_pkg_ptxas, METH_O,
	 "set_pkg_ptxas(path or None): the ptxas of a Python package (nvidia-cuda-nvcc), tried after "
	 "the CUDA toolkit's and before PATH"},
	{"libdevice_path", py_libdevice_path, METH_NOARGS,
	 "libdevice_path() -> the libdevice.10.bc GPU compiles link, or None"},
	{"llvm_version", py_llvm_version, METH_NOARGS, "llvm_version() -> the LLVM in use, 'X.Y.Z'"},
	{"sha256", py_sha256, METH_O, "sha256(bytes or str) -> hex digest"},
	{"cache_get", py_cache_get, METH_VARARGS,
	 "cache_get(root, key, names=None) -> {name: bytes, or None when not in names}, None (miss) "
	 "or False (corrupt, removed)"},
	{"cache_put", py_cache_put, METH_VARARGS, "cache_put(root, key, {name: bytes|str})"},
	{"cache_root", py_cache_root, METH_NOARGS, "the on-disk cache directory"},
	{"getenv", py_getenv, METH_O,
	 "getenv(name) -> the environment variable's value (as os.environ has it), or None"},
	{"cuda_probe", py_cuda_probe, METH_NOARGS,
	 "cuda_probe() -> number of CUDA devices (OSError without a driver); makes no context"},
	{"cuda_attribute", py_cuda_attribute, METH_VARARGS,
	 "cuda_attribute(device, attr) -> cuDeviceGetAttribute(attr)"},
	{"cuda_device_info", py_cuda_device_info, METH_VARARGS,
	 "cuda_device_info(device) -> (name, driver version), no context made"},
	{"cuda_context_device", py_cuda_context_device, METH_NOARGS,
	 "cuda_context_device() -> the device of this thread's current context, -1 when none"},
	{"cuda_set_device", py_cuda_set_device, METH_VARARGS,
	 "cuda_set_device(device): makes the device's primary context current on this thread"},
	/* key.c */
	{"key_digest", py_key_digest, METH_O,
	 "key_digest(data) -> hex SHA-256 of nested None/bool/int/float/str/bytes/tuple/list/dict "
	 "(dicts in key order), @jit functions by cache_key, other objects by type and repr"},
	{"global_key", py_global_key, METH_VARARGS,
	 "global_key(code, scope, self, jit_type, files, head) -> the cache key of a @jit function: "
	 "sha256 of head and of the callees, constexprs and numbers its code reads from scope"},
	{"code_fingerprint", py_code_fingerprint, METH_O,
	 "code_fingerprint(code) -> a key of the code's name and of the first lines and line tables "
	 "of it and of the code nested in it"},
	{"content_key", py_content_key, METH_O,
	 "content_key(bytes or path) -> a key naming the bytes, or the file's contents, by a "
	 "128-bit hash and the length"},
	{"source_index", py_source_index, METH_VARARGS,
	 "source_index(root, path) -> (content_key(path), the 'index' blob of that entry under root "
	 "or None)"},
	{"build_key", py_build_key, METH_O,
	 "build_key(dirs) -> hex digest of the extension's build id and the .py files under dirs "
	 "(path, size, mtime)"},
	/* launch.c */
	{"set_backend", py_set_backend, METH_VARARGS, "set_backend(kind, stream_fn)"},
	{"set_launch_hooks", py_set_launch_hooks, METH_VARARGS,
	 "set_launch_hooks(enter, exit) or (None, None): called around every kernel[grid](...) launch"},
	/* specialize.c */
	{"specialize", py_specialize, METH_VARARGS,
	 "specialize(arg, specialize=True, align=True) -> (type string, key)"},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
	PyModuleDef_HEAD_INIT, "ctriton._C", "ctriton's compiler and runtime, in C.", -1, methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__C(void);

PyMODINIT_FUNC PyInit__C(void)
{
	PyObject *m = PyModule_Create(&moduledef);
	if (m && py_runtime_init(m) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
