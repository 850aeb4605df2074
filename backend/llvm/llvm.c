/* llvm.c: LLVM diagnostics into an error value, and code generation on a
 * guarded helper thread (see llvm.h).
 *
 * LLVM's fatal error handler is process-wide and gets no user pointer, so
 * the guard finds its job through a thread-local pointer that only
 * be_llvm_guarded's helper threads set. The handler is installed once,
 * with LLVM's other one-time initialisation (be_llvm_init); on any other
 * thread it prints LLVM's message and returns, and LLVM then exits as it
 * would without a handler.
 */
#include "backend/llvm/llvm.h"

#include <llvm-c/ErrorHandling.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_diagnostic(LLVMDiagnosticInfoRef di, void *user)
{
	BeLlvmDiag *d = user;
	if (!d || LLVMGetDiagInfoSeverity(di) != LLVMDSError)
		return; /* warnings, remarks and notes are not failures */
	char *s = LLVMGetDiagInfoDescription(di);
	if (!d->failed) {
		d->failed = true;
		snprintf(d->msg, sizeof d->msg, "%s", s ? s : "LLVM error");
	}
	LLVMDisposeMessage(s);
}

void be_llvm_watch(LLVMContextRef c, BeLlvmDiag *d)
{
	if (d)
		memset(d, 0, sizeof *d);
	LLVMContextSetDiagnosticHandler(c, d ? on_diagnostic : NULL, d);
}

/* ---- the fatal-error guard ---------------------------------------------- */

typedef struct Job {
	void (*fn)(void *);
	void *arg;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int state; /* 0 running, 1 done, 2 fatal error */
	char *reason;
} Job;

static _Thread_local Job *guard_job; /* set on guarded helper threads only */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void on_fatal(const char *reason)
{
	Job *j = guard_job;
	if (!j) {
		fprintf(stderr, "LLVM ERROR: %s\n", reason ? reason : "");
		return; /* LLVM exits */
	}
	char *r = strdup(reason ? reason : "LLVM fatal error");
	pthread_mutex_lock(&j->mu);
	j->reason = r;
	j->state = 2;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
	for (;;) /* park: the LLVM frames below must never run again */
		pause();
}

static void init_llvm(void)
{
	LLVMInitializeNativeTarget();
	LLVMInitializeNativeAsmPrinter();
	LLVMInitializeNativeAsmParser();
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
	LLVMInstallFatalErrorHandler(on_fatal);
	/* 32-bit shared (and local, const) pointers for NVPTX, as Triton
	 * compiles: a shared address is one register and its arithmetic 32-bit
	 * (with 64-bit pointers every ld/st.shared took a sign extension and
	 * 64-bit adds, two registers an address). Read once a process;
	 * opt-in with CTRITON_SHORT_PTR=1 until GPU-tested (part of the cache
	 * key). */
	const char *e = getenv("CTRITON_SHORT_PTR");
	if (e && e[0] == '1') {
		const char *argv[] = {"ctriton", "-nvptx-short-ptr"};
		LLVMParseCommandLineOptions(2, argv, NULL);
	}
}

void be_llvm_init(void)
{
	pthread_once(&init_once, init_llvm);
}

static void *run_job(void *p)
{
	Job *j = p;
	guard_job = j;
	j->fn(j->arg);
	guard_job = NULL;
	pthread_mutex_lock(&j->mu);
	j->state = 1;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

char *be_llvm_guarded(void (*fn)(void *), void *arg)
{
	be_llvm_init();
	Job *j = calloc(1, sizeof *j);
	if (!j) {
		fn(arg);
		return NULL;
	}
	j->fn = fn;
	j->arg = arg;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64u << 20); /* LLVM recurses on deep IR */
	pthread_t th;
	int rc = pthread_create(&th, &at, run_job, j);
	pthread_attr_destroy(&at);
	if (rc != 0) { /* no thread: run unguarded */
		pthread_mutex_destroy(&j->mu);
		pthread_cond_destroy(&j->cv);
		free(j);
		fn(arg);
		return NULL;
	}
	pthread_mutex_lock(&j->mu);
	while (j->state == 0)
		pthread_cond_wait(&j->cv, &j->mu);
	int state = j->state;
	char *reason = j->reason;
	pthread_mutex_unlock(&j->mu);
	if (state == 2) {
		pthread_detach(th); /* parked for good; j stays allocated */
		return reason;
	}
	pthread_join(th, NULL);
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv);
	free(j);
	return NULL;
}
