/* llvm_test.c: backend/llvm. A module that x86 instruction selection
 * rejects (an NVVM intrinsic) ends in LLVM's report_fatal_error; under
 * be_llvm_guarded that is a returned reason, the process lives on, and
 * later guarded work still runs. An invalid inline-asm instruction becomes
 * an error diagnostic in the watched context instead of exit(1).
 */
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/llvm/llvm.h"

static int failures;
#define CHECK(c)                                                                         \
	do {                                                                             \
		if (!(c)) {                                                              \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
			failures++;                                                      \
		}                                                                        \
	} while (0)

typedef struct Emit {
	LLVMTargetMachineRef tm;
	LLVMModuleRef m;
	LLVMCodeGenFileType kind;
	int failed;
	char *msg;
} Emit;

static void emit(void *p)
{
	Emit *e = p;
	LLVMMemoryBufferRef buf = NULL;
	e->failed = LLVMTargetMachineEmitToMemoryBuffer(e->tm, e->m, e->kind, &e->msg, &buf);
	if (!e->failed)
		LLVMDisposeMemoryBuffer(buf);
}

/* void f(ptr out): *out = body() where body is an intrinsic call or asm. */
static LLVMModuleRef module(LLVMContextRef c, LLVMTargetMachineRef tm, const char *triple, int what)
{
	LLVMModuleRef m = LLVMModuleCreateWithNameInContext("t", c);
	LLVMSetTarget(m, triple);
	LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(m, dl);
	LLVMDisposeTargetData(dl);
	LLVMTypeRef i32 = LLVMInt32TypeInContext(c), ptr = LLVMPointerTypeInContext(c, 0);
	LLVMValueRef f = LLVMAddFunction(m, "f", LLVMFunctionType(LLVMVoidTypeInContext(c), &ptr, 1, 0));
	LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
	LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, f, "entry"));
	LLVMValueRef v;
	if (what == 0) { /* selectable: a constant */
		v = LLVMConstInt(i32, 7, 0);
	} else if (what == 1) { /* an intrinsic x86 cannot select */
		const char *n = "llvm.nvvm.read.ptx.sreg.tid.x";
		unsigned id = LLVMLookupIntrinsicID(n, strlen(n));
		LLVMValueRef fn = LLVMGetIntrinsicDeclaration(m, id, NULL, 0);
		v = LLVMBuildCall2(b, LLVMIntrinsicGetType(c, id, NULL, 0), fn, NULL, 0, "");
	} else { /* inline asm the assembler rejects */
		LLVMTypeRef at = LLVMFunctionType(i32, NULL, 0, 0);
		const char *s = "not_an_x86_instruction $0";
		LLVMValueRef as = LLVMGetInlineAsm(at, s, strlen(s), "=r", 2, 1, 0, LLVMInlineAsmDialectATT, 0);
		v = LLVMBuildCall2(b, at, as, NULL, 0, "");
	}
	LLVMBuildStore(b, v, LLVMGetParam(f, 0));
	LLVMBuildRetVoid(b);
	LLVMDisposeBuilder(b);
	return m;
}

int main(void)
{
	be_llvm_init();
	char *triple = LLVMGetDefaultTargetTriple();
	LLVMTargetRef t;
	char *err = NULL;
	if (LLVMGetTargetFromTriple(triple, &t, &err)) {
		fprintf(stderr, "no native target: %s\n", err);
		return 1;
	}
	LLVMTargetMachineRef tm = LLVMCreateTargetMachine(t, triple, "", "", LLVMCodeGenLevelDefault,
							  LLVMRelocPIC, LLVMCodeModelDefault);

	/* 1. a fatal error in instruction selection is a returned reason */
	LLVMContextRef c1 = LLVMContextCreate();
	Emit e1 = {tm, module(c1, tm, triple, 1), LLVMAssemblyFile, 0, NULL};
	char *why = be_llvm_guarded(emit, &e1);
	CHECK(why != NULL);
	CHECK(why && strstr(why, "Cannot select"));
	if (why)
		fprintf(stderr, "guarded fatal error (expected): %s\n", why);
	free(why);
	/* c1, e1.m and this tm are leaked: the parked helper may use them */
	tm = LLVMCreateTargetMachine(t, triple, "", "", LLVMCodeGenLevelDefault, LLVMRelocPIC,
				     LLVMCodeModelDefault);

	/* 2. guarded work after that still runs and returns normally */
	for (int i = 0; i < 3; i++) {
		LLVMContextRef c = LLVMContextCreate();
		Emit e = {tm, module(c, tm, triple, 0), LLVMObjectFile, 0, NULL};
		CHECK(be_llvm_guarded(emit, &e) == NULL);
		CHECK(!e.failed);
		LLVMDisposeMessage(e.msg);
		LLVMDisposeModule(e.m);
		LLVMContextDispose(c);
	}

	/* 3. an assembler error is a diagnostic in the watched context */
	LLVMContextRef c3 = LLVMContextCreate();
	BeLlvmDiag d;
	be_llvm_watch(c3, &d);
	Emit e3 = {tm, module(c3, tm, triple, 2), LLVMObjectFile, 0, NULL};
	CHECK(be_llvm_guarded(emit, &e3) == NULL);
	CHECK(d.failed);
	CHECK(strstr(d.msg, "not_an_x86_instruction") || strstr(d.msg, "invalid instruction"));
	fprintf(stderr, "diagnostic (expected): %s\n", d.msg);
	LLVMDisposeMessage(e3.msg);
	LLVMDisposeModule(e3.m);
	LLVMContextDispose(c3);

	LLVMDisposeTargetMachine(tm);
	LLVMDisposeMessage(triple);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	else
		printf("llvm_test: ok\n");
	return failures != 0;
}
