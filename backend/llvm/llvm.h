/* llvm.h: LLVM helpers shared by the CPU and NVPTX backends.
 *
 * LLVM reports problems in three ways; each becomes an error value here
 * instead of ending the process where LLVM allows it:
 *   - LLVMErrorRef / status returns: the callers check them;
 *   - diagnostics (DS_Error) on a context: be_llvm_watch routes them into a
 *     BeLlvmDiag (LLVM's default handler would exit(1));
 *   - fatal errors (report_fatal_error: "Cannot select", "Cannot emit
 *     physreg copy instruction", ...): be_llvm_guarded runs the work on a
 *     helper thread; a fatal error there is recorded and the helper parks
 *     for good, so its half-done LLVM state is never touched again.
 */
#ifndef CTRITON_BACKEND_LLVM_H
#define CTRITON_BACKEND_LLVM_H

#include <llvm-c/Core.h>
#include <stdbool.h>

/* LLVM's one-time initialisation for both backends (the host target and
 * NVPTX, registered together: registration is not thread-safe), and the
 * fatal-error handler of the guard. Idempotent; safe from any thread. */
void be_llvm_init(void);

/* The first error diagnostic reported on a watched context. */
typedef struct BeLlvmDiag {
	bool failed;
	char msg[1024];
} BeLlvmDiag;

/* Routes the error diagnostics of context c into d (cleared here). d must
 * outlive every use of c, or be unwatched (c, NULL) first. */
void be_llvm_watch(LLVMContextRef c, BeLlvmDiag *d);

/* Runs fn(arg) on a helper thread and waits for it. Returns NULL, or (when
 * LLVM reported a fatal error meanwhile) its reason, malloc'ed: the helper
 * never returns then, and the caller must leak the LLVM objects fn was
 * using (its context, modules and target machine). A fatal error on a
 * thread outside be_llvm_guarded ends the process as LLVM does. */
char *be_llvm_guarded(void (*fn)(void *), void *arg);

#endif
