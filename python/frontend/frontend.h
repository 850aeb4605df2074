/* frontend.h: the interface of the frontend (python/frontend/), which
 * compiles a @jit function's Python AST into TTIR text. Its two functions
 * are methods of ctriton._C (python/src/module.c registers them); the
 * frontend's own files share fe.h.
 */
#ifndef CTRITON_FRONTEND_H
#define CTRITON_FRONTEND_H

#include "python/pyabi.h"

/* ---- frontend.c ---------------------------------------------------------
 * _C.ast_to_ttir(jitfn, signature, constexprs, attrs, options) -> str
 *   jitfn: a @jit function object (see ctriton/runtime/jit.py: .fn, .src,
 *   .starting_line, .noinline, .__name__, ._ctriton_jit); signature: dict
 *   name -> type string ("*fp32", "i32", "constexpr", ...); constexprs: dict
 *   name -> value; attrs: dict name -> {"divisibility": 16}; options: dict
 *   (num_warps, debug, ...). Returns the module's TTIR text; raises
 *   ctriton.CompilationError with file:line:col, the source line and a caret.
 */
PyObject *py_ast_to_ttir(PyObject *self, PyObject *args, PyObject *kwargs);
/* _C.builtin_table() -> [(name, params, is_tensor_method)]: the builtins
 * fe_builtins.c lowers (ctriton.language makes its stubs from it). */
PyObject *py_builtin_table(PyObject *self, PyObject *noargs);

#endif
