/* kernels.h: a corpus of test kernels built with the IR builder, shared by
 * the NVPTX tests (and usable by any backend test). Each builder adds one
 * kernel function to m. */
#ifndef CTRITON_TESTS_KERNELS_H
#define CTRITON_TESTS_KERNELS_H

#include "ir/ir.h"

typedef IrFunc *(*KernelBuilder)(IrModule *m);

typedef struct TestKernel {
	const char *name;
	KernelBuilder build;
} TestKernel;

extern const TestKernel test_kernels[];
extern const int n_test_kernels;

IrFunc *tk_vector_add(IrModule *m);
IrFunc *tk_softmax_row(IrModule *m);
IrFunc *tk_reduce2d(IrModule *m);

#endif
