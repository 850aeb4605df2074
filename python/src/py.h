/* py.h: the interface between the files of ctriton's C extension
 * (ctriton._C, built with the stable ABI so that one build imports in every
 * CPython >= 3.11: python/pyabi.h). Each section names the file that
 * implements it; module.c registers every function below in the module's
 * method table.
 */
#ifndef CTRITON_PY_H
#define CTRITON_PY_H

#include "python/pyabi.h"

/* ---- the frontend (python/frontend/): the Python AST compiled to TTIR ---
 * _C.ast_to_ttir and _C.builtin_table, declared in its interface. */
#include "python/frontend/frontend.h"

/* ---- the launch path: specialize.c, launch.c, bindings.c, key.c (their
 * private interface is runtime.h) -----------------------------------------
 * Types: KernelRuntime (per @jit function: rt[grid](*args) launches),
 * Binary (one compiled variant). */
/* launch.c */
int py_runtime_init(PyObject *m);
PyObject *py_set_backend(PyObject *self, PyObject *args);
PyObject *py_set_launch_hooks(PyObject *self, PyObject *args);
/* specialize.c */
PyObject *py_specialize(PyObject *self, PyObject *args);
/* bindings.c */
PyObject *py_compile_ttir(PyObject *self, PyObject *args);
PyObject *py_ptxas(PyObject *self, PyObject *args);
PyObject *py_pass_table(PyObject *self, PyObject *noargs);
PyObject *py_ptxas_path(PyObject *self, PyObject *unused);
PyObject *py_set_pkg_ptxas(PyObject *self, PyObject *arg);
PyObject *py_libdevice_path(PyObject *self, PyObject *unused);
PyObject *py_llvm_version(PyObject *self, PyObject *unused);
PyObject *py_sha256(PyObject *self, PyObject *arg);
PyObject *py_cache_get(PyObject *self, PyObject *args);
PyObject *py_cache_put(PyObject *self, PyObject *args);
PyObject *py_cache_root(PyObject *self, PyObject *unused);
PyObject *py_getenv(PyObject *self, PyObject *arg);
PyObject *py_cuda_probe(PyObject *self, PyObject *unused);
PyObject *py_cuda_attribute(PyObject *self, PyObject *args);
PyObject *py_cuda_device_info(PyObject *self, PyObject *args);
PyObject *py_cuda_context_device(PyObject *self, PyObject *unused);
PyObject *py_cuda_set_device(PyObject *self, PyObject *args);
/* key.c */
PyObject *py_key_digest(PyObject *self, PyObject *arg);
PyObject *py_global_key(PyObject *self, PyObject *args);
PyObject *py_code_fingerprint(PyObject *self, PyObject *code);
PyObject *py_content_key(PyObject *self, PyObject *arg);
PyObject *py_source_index(PyObject *self, PyObject *args);
PyObject *py_build_key(PyObject *self, PyObject *dirs);

#endif
