/* pyabi.h: the one place that includes <Python.h> for ctriton._C, so that
 * every file of the extension (python/src/ and the frontend in
 * python/frontend/) is compiled against the same C API: the stable ABI of
 * CPython 3.11 (one build imports in every CPython >= 3.11), with Py_ssize_t
 * lengths for the "#" formats of PyArg_Parse* and Py_BuildValue.
 */
#ifndef CTRITON_PYABI_H
#define CTRITON_PYABI_H

#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#endif
