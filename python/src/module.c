/* module.c: the ctriton._C extension module: its method table and init.
 * Every function registered here is declared in py.h and implemented in the
 * file its section names.
 */
#include "py.h"

static PyMethodDef methods[] = {
	{"ast_to_ttir", (PyCFunction)(void (*)(void))py_ast_to_ttir, METH_VARARGS | METH_KEYWORDS,
	 "ast_to_ttir(jitfn, signature, constexprs, attrs, options) -> TTIR text"},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
	PyModuleDef_HEAD_INIT, "ctriton._C", "ctriton's compiler and runtime, in C.", -1, methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__C(void);

PyMODINIT_FUNC PyInit__C(void)
{
	return PyModule_Create(&moduledef);
}
