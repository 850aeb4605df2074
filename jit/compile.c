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

/* Reads "Used N registers" and "N bytes spill stores" from ptxas -v
 * output, and the code of its first advisory about the warpgroup MMAs:
 * serialized (a wait after each one), or a wait or fence injected among
 * them. The kernel stays correct, but its MMAs no longer overlap what the
 * backend meant them to. */
void jit_parse_ptxas_log(const char *log, JitKernel *k)
{
	k->wgmma_advisory[0] = 0;
	for (const char *c = strstr(log, "(C75"); c; c = strstr(c + 1, "(C75")) {
		char line[256];
		size_t n = strcspn(c, "\n");
		n = n < sizeof line - 1 ? n : sizeof line - 1;
		memcpy(line, c, n);
		line[n] = 0;
		if (n > 6 && line[6] == ')' && (strstr(line, "wgmma") || strstr(line, "warpgroup"))) {
			memcpy(k->wgmma_advisory, c + 1, 5);
			k->wgmma_advisory[5] = 0;
			break;
		}
	}
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

/* One ptxas run of ptx for archs in dir: 0 with *log (its -v output) and
 * *cubin / *cubin_len set, 1 when this ptxas does not know the arch, -1
 * with errbuf on failure. */
static int run_ptxas(const char *ptxas, const char *ptx, const char *archs, const char *dir, char *log,
		     size_t logn, unsigned char **cubin, size_t *cubin_len, char *errbuf, int errlen)
{
	char in[128], outp[128], logp[128];
	snprintf(in, sizeof in, "%s/k.ptx", dir);
	snprintf(outp, sizeof outp, "%s/k.cubin", dir);
	snprintf(logp, sizeof logp, "%s/log", dir);
	*cubin = NULL;
	*cubin_len = 0;
	log[0] = 0;
	FILE *f = fopen(in, "w");
	int rc = -1;
	if (!f || fputs(ptx, f) < 0 || fclose(f) != 0) {
		snprintf(errbuf, errlen, "cannot write %s", in);
		goto out;
	}
	char a_v[] = "-v", a_arch[] = "-arch", a_o[] = "-o", a_archs[32], a_in[128], a_out[128], a_ptxas[4096];
	snprintf(a_archs, sizeof a_archs, "%s", archs);
	snprintf(a_in, sizeof a_in, "%s", in);
	snprintf(a_out, sizeof a_out, "%s", outp);
	snprintf(a_ptxas, sizeof a_ptxas, "%s", ptxas);
	char *argv[] = {a_ptxas, a_v, a_arch, a_archs, a_in, a_o, a_out, NULL};
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
	if (lf) {
		size_t got = fread(log, 1, logn - 1, lf);
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
	FILE *cf = fopen(outp, "rb");
	if (cf) {
		fseek(cf, 0, SEEK_END);
		long len = ftell(cf);
		fseek(cf, 0, SEEK_SET);
		*cubin = malloc(len > 0 ? (size_t)len : 1);
		*cubin_len = *cubin ? fread(*cubin, 1, len > 0 ? (size_t)len : 0, cf) : 0;
		fclose(cf);
	}
	rc = 0;
out:
	unlink(in);
	unlink(outp);
	unlink(logp);
	return rc;
}

/* ptx with ".minnctapersm 1" after the kernel's ".maxntid N" line (malloc'd),
 * or NULL when it has none or already bounds registers or CTAs; *threads
 * is N. */
static char *with_one_cta(const char *ptx, int *threads)
{
	const char *m = strstr(ptx, "\n.maxntid ");
	if (!m || strstr(ptx, "\n.maxnreg ") || strstr(ptx, "\n.minnctapersm "))
		return NULL;
	*threads = atoi(m + 10);
	const char *eol = strchr(m + 1, '\n');
	if (!eol || *threads <= 0)
		return NULL;
	static const char add[] = "\n.minnctapersm 1";
	size_t head = (size_t)(eol - ptx), n = strlen(ptx);
	char *out = malloc(n + sizeof add);
	if (!out)
		return NULL;
	memcpy(out, ptx, head);
	memcpy(out + head, add, sizeof add - 1);
	memcpy(out + head + sizeof add - 1, eol, n - head + 1);
	return out;
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
	char archs[32];
	snprintf(archs, sizeof archs, "sm_%d%s", arch, arch == 90 ? "a" : "");
	char *log1 = malloc(8192), *log2 = malloc(8192);
	int rc = -1;
	if (!log1 || !log2) {
		snprintf(errbuf, errlen, "out of memory");
		goto out;
	}
	unsigned char *cubin;
	size_t cubin_len;
	rc = run_ptxas(ptxas, k->ptx, archs, dir, log1, 8192, &cubin, &cubin_len, errbuf, errlen);
	if (rc != 0)
		goto out;
	jit_parse_ptxas_log(log1, k);
	free(k->cubin);
	k->cubin = cubin;
	k->cubin_len = cubin_len;
	/* A kernel that spills with registers to spare: ptxas, told only the
	 * block size, may trade registers for occupancy once spilling is
	 * unavoidable (a 4-warp fp32 matmul on sm_80: 32 registers and 6.5 KB
	 * of spills). Told that one block per SM is enough, it uses what it
	 * needs (255 registers, 292 bytes); the build with fewer spills stays. */
	int threads = 0;
	char *ptx2 = k->n_spills > 0 ? with_one_cta(k->ptx, &threads) : NULL;
	int cap = threads > 0 ? 65536 / threads : 0;
	cap = cap > 255 ? 255 : cap - cap % 8;
	if (ptx2 && k->n_regs >= 0 && k->n_regs < cap) {
		char err2[256];
		int regs = k->n_regs, spills = k->n_spills;
		char advisory[sizeof k->wgmma_advisory];
		memcpy(advisory, k->wgmma_advisory, sizeof advisory);
		if (run_ptxas(ptxas, ptx2, archs, dir, log2, 8192, &cubin, &cubin_len, err2, sizeof err2) == 0) {
			jit_parse_ptxas_log(log2, k);
			if (k->n_spills < spills) {
				free(k->cubin);
				k->cubin = cubin;
				k->cubin_len = cubin_len;
				free(k->ptx);
				k->ptx = ptx2;
				ptx2 = NULL;
			} else {
				free(cubin);
				k->n_regs = regs;
				k->n_spills = spills;
				memcpy(k->wgmma_advisory, advisory, sizeof advisory);
			}
		}
	}
	free(ptx2);
	rc = 0;
out:
	free(log1);
	free(log2);
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
