/* py.h: the interface between the files of ctriton's C extension
 * (ctriton._C, built with the stable ABI so that one build imports in every
 * CPython >= 3.11). Each section names the file that implements it; module.c
 * registers every function below in the module's method table.
 */
#ifndef CTRITON_PY_H
#define CTRITON_PY_H

#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* ---- frontend.c (+ builtins.c): the Python AST compiled to TTIR ---------
 * _C.ast_to_ttir(jitfn, signature, constexprs, attrs, options) -> str
 *   jitfn: a @jit function object (see ctriton/runtime/jit.py: .fn, .src,
 *   .starting_line, .noinline, .__name__, ._ctriton_jit); signature: dict
 *   name -> type string ("*fp32", "i32", "constexpr", ...); constexprs: dict
 *   name -> value; attrs: dict name -> {"divisibility": 16}; options: dict
 *   (num_warps, debug, ...). Returns the module's TTIR text; raises
 *   ctriton.CompilationError with file:line:col, the source line and a caret.
 */
PyObject *py_ast_to_ttir(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *py_builtin_table(PyObject *self, PyObject *noargs);

/* ---- the launch path: specialize.c, launch.c, bindings.c (their private
 * interface is runtime.h) -------------------------------------------------
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
PyObject *py_build_key(PyObject *self, PyObject *dirs);
PyObject *py_cuda_probe(PyObject *self, PyObject *unused);
PyObject *py_cuda_attribute(PyObject *self, PyObject *args);
PyObject *py_cuda_context_device(PyObject *self, PyObject *unused);
PyObject *py_cuda_set_device(PyObject *self, PyObject *args);

#endif
