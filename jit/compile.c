/* compile.c: the compile entry points (jit_compile: TTIR text -> parse ->
 * the pass table's pipeline, jit_compile_module for a built module), ptxas
 * for cubins, and the JitKernel's release. The pipeline itself is the table
 * in pipeline.c. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jit/jit.h"

const char *const jit_stage_names[JIT_NT] = {
	"parse", "verify", "ttgir", "llir", "opt", "emit", "ptxas", "cpu", "ttir",
};

double jit_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* An IrError as a malloc'ed "file:line:col: msg" (the message alone when
 * no location is known). */
static char *error_text(IrCtx *ctx, const IrError *e)
{
	if (!e->loc.file && !e->loc.line)
		return strdup(e->msg);
	return strdup(ir_error_str(ctx, e));
}

char *jit_compile_module(IrModule *m, const BeOptions *opt, const JitTarget *target, int flags, const char *dump_after,
			 JitKernel *out)
{
	JitPipe *p = jit_pipe_new(m, opt, target, out);
	char *err = jit_pipe_dump_after(p, dump_after);
	if (!err) {
		IrError *e = jit_pipe_run_pipeline(p, flags);
		if (e)
			err = error_text(m->ctx, e);
	}
	jit_pipe_free(p);
	return err;
}

char *jit_compile(const char *ttir, const char *filename, const BeOptions *opt, const JitTarget *target, int flags,
		  const char *dump_after, JitKernel *out)
{
	/* Parse: TTIR text (the frontend's output or a user's .ttir file) into
	 * a module in a fresh arena; the pass table does the rest. */
	double t = jit_now_ms();
	IrCtx *ctx = ir_ctx_new();
	IrError *e = NULL;
	IrModule *m = ir_parse(ctx, filename, ttir, &e);
	double ms = jit_now_ms() - t;
	char *err;
	if (!m) {
		memset(out, 0, sizeof *out);
		out->n_regs = out->n_spills = -1;
		out->num_warps = opt->num_warps;
		err = e ? error_text(ctx, e) : strdup("TTIR parse failed");
	} else {
		err = jit_compile_module(m, opt, target, flags, dump_after, out);
	}
	out->ms[JIT_T_PARSE] = ms;
	ir_ctx_free(ctx);
	return err;
}

/* The ptxas of a Python package (nvidia-cuda-nvcc), set by the Python layer
 * (it finds packages, C does not); NULL until then. Process-wide, like the
 * environment the rest of the lookup reads. */
static char *pkg_ptxas;
static pthread_mutex_t pkg_ptxas_lock = PTHREAD_MUTEX_INITIALIZER;

void jit_set_pkg_ptxas(const char *path)
{
	char *p = path && *path ? strdup(path) : NULL;
	pthread_mutex_lock(&pkg_ptxas_lock);
	char *old = pkg_ptxas;
	pkg_ptxas = p;
	pthread_mutex_unlock(&pkg_ptxas_lock);
	free(old);
}

static int executable(char *buf, size_t n, const char *dir, const char *file)
{
	if (!dir || !*dir)
		return 0;
	snprintf(buf, n, "%s%s", dir, file);
	return access(buf, X_OK) == 0;
}

int jit_find_ptxas(char *buf, size_t n)
{
	static const char *const env[] = {"CTRITON_PTXAS_PATH", "TRITON_PTXAS_PATH"};
	for (size_t i = 0; i < sizeof env / sizeof *env; i++)
		if (executable(buf, n, getenv(env[i]), ""))
			return 1;
	if (executable(buf, n, getenv("CUDA_HOME"), "/bin/ptxas") ||
	    executable(buf, n, getenv("CUDA_PATH"), "/bin/ptxas") ||
	    executable(buf, n, "/usr/local/cuda", "/bin/ptxas"))
		return 1;
	pthread_mutex_lock(&pkg_ptxas_lock);
	int found = executable(buf, n, pkg_ptxas, "");
	pthread_mutex_unlock(&pkg_ptxas_lock);
	if (found)
		return 1;
	const char *path = getenv("PATH");
	while (path && *path) {
		const char *c = strchr(path, ':');
		size_t len = c ? (size_t)(c - path) : strlen(path);
		snprintf(buf, n, "%.*s/ptxas", (int)len, path);
		if (len && access(buf, X_OK) == 0)
			return 1;
		path = c ? c + 1 : NULL;
	}
	return 0;
}

/* Reads "Used N registers" and "N bytes spill stores" from ptxas -v output. */
static void parse_ptxas_log(const char *log, JitKernel *k)
{
	const char *p = strstr(log, "Used ");
	if (p)
		k->n_regs = atoi(p + 5);
	p = strstr(log, "bytes spill stores");
	if (p) {
		while (p > log && p[-1] == ' ')
			p--;
		while (p > log && p[-1] >= '0' && p[-1] <= '9')
			p--;
		k->n_spills = atoi(p);
	}
}

int jit_ptxas(JitKernel *k, int arch, char *errbuf, int errlen)
{
	char ptxas[4096];
	if (!k->ptx || !jit_find_ptxas(ptxas, sizeof ptxas))
		return 1;
	char dir[] = "/tmp/ctriton-ptxas-XXXXXX";
	if (!mkdtemp(dir)) {
		snprintf(errbuf, errlen, "mkdtemp: %s", strerror(errno));
		return -1;
	}
	char in[128], outp[128], logp[128], archs[32];
	snprintf(in, sizeof in, "%s/k.ptx", dir);
	snprintf(outp, sizeof outp, "%s/k.cubin", dir);
	snprintf(logp, sizeof logp, "%s/log", dir);
	snprintf(archs, sizeof archs, "sm_%d%s", arch, arch == 90 ? "a" : "");
	FILE *f = fopen(in, "w");
	int rc = -1;
	if (!f || fputs(k->ptx, f) < 0 || fclose(f) != 0) {
		snprintf(errbuf, errlen, "cannot write %s", in);
		goto out;
	}
	char a_v[] = "-v", a_arch[] = "-arch", a_o[] = "-o";
	char *argv[] = {ptxas, a_v, a_arch, archs, in, a_o, outp, NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, logp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	pid_t pid;
	int st = 0;
	int sp = posix_spawn(&pid, ptxas, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (sp != 0 || waitpid(pid, &st, 0) < 0) {
		snprintf(errbuf, errlen, "cannot run %s", ptxas);
		goto out;
	}
	FILE *lf = fopen(logp, "r");
	char log[8192] = "";
	if (lf) {
		size_t got = fread(log, 1, sizeof log - 1, lf);
		log[got] = 0;
		fclose(lf);
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		if (strstr(log, "is not defined for option 'gpu-name'")) {
			/* a ptxas too new for the arch (CUDA 13 has no sm_70): the
			 * PTX goes to the driver, as without ptxas */
			rc = 1;
			goto out;
		}
		snprintf(errbuf, errlen, "ptxas failed for %s:\n%s", archs, log);
		goto out;
	}
	parse_ptxas_log(log, k);
	FILE *cf = fopen(outp, "rb");
	if (cf) {
		fseek(cf, 0, SEEK_END);
		long len = ftell(cf);
		fseek(cf, 0, SEEK_SET);
		k->cubin = malloc(len > 0 ? (size_t)len : 1);
		k->cubin_len = fread(k->cubin, 1, len > 0 ? (size_t)len : 0, cf);
		fclose(cf);
	}
	rc = 0;
out:
	unlink(in);
	unlink(outp);
	unlink(logp);
	rmdir(dir);
	return rc;
}

void jit_kernel_free(JitKernel *k)
{
	free(k->name);
	free(k->ttir);
	free(k->ttgir);
	free(k->ttir_mlir);
	free(k->ttgir_mlir);
	free(k->llir);
	free(k->ptx);
	free(k->asm_);
	free(k->cubin);
	free(k->sig);
	for (int i = 0; i < k->ndumps; i++)
		free(k->dumps[i].text);
	free(k->dumps);
	if (k->cpu) {
		BeCpuResult r;
		memset(&r, 0, sizeof r);
		r.kernel = k->cpu;
		be_cpu_result_free(&r);
	}
	memset(k, 0, sizeof *k);
}
