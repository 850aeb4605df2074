/* ct_opt.c: ct-opt, the pass driver on the command line (Triton's
 * triton-opt). It reads a .ttir file (TTIR, or TTGIR with layouts), runs the
 * passes named by --passes in order (each after the analyses it requires)
 * or the whole pipeline, and prints the form the compilation is left in:
 * IR text, LLVM IR, PTX. The per-pass golden tests (tests/passes) run it.
 *
 *   ct-opt [--target=cuda|cpu] [--arch=N] [--num-warps=N] [--num-stages=N]
 *          [--passes=P1,P2,... | --pipeline[=ttir|ttgir]]
 *          [--dump-after=P1,...|all] [--no-verify-each] [--list] FILE|-
 *
 * The verifier runs after every pass that changes the IR unless
 * --no-verify-each is given: a pass that leaves invalid IR is an error.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/jit.h"

static const char usage[] =
	"usage: ct-opt [options] FILE.ttir|-\n"
	"  --passes=P1,P2,...   run these passes in order (after the analyses each requires)\n"
	"  --pipeline[=STAGE]   run the target's pipeline (to the end, or through ttir | ttgir)\n"
	"  --target=cuda|cpu    (cuda)\n"
	"  --arch=N             compute capability x 10 (90; 0: no tensor cores)\n"
	"  --num-warps=N        (the module's num_warps, else 4) also sets the module's attribute\n"
	"  --num-stages=N       sets the module's num_stages attribute\n"
	"  --dump-after=P,...   also print the form after these passes (or all), each under a header\n"
	"  --no-verify-each     skip the verifier after each pass that changes the IR\n"
	"  --list               print the pass table\n"
	"Prints the form after the last pass on stdout; errors go to stderr (exit 1).\n";

static char *slurp(FILE *f)
{
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	if (!b)
		abort();
	for (size_t got; (got = fread(b + n, 1, cap - n - 1, f)) > 0;) {
		n += got;
		if (cap - n - 1 == 0) {
			cap *= 2;
			b = realloc(b, cap);
			if (!b)
				abort();
		}
	}
	b[n] = 0;
	return b;
}

static void facts(unsigned f)
{
	const char *sep = "";
	for (int i = 0; i < JIT_NF; i++)
		if (f & (1u << i)) {
			printf("%s%s", sep, jit_fact_names[i]);
			sep = ",";
		}
	if (!*sep)
		printf("-");
}

static void list_passes(void)
{
	static const char *const stages[] = {"ttir", "ttgir", "llir", "ptx", "cubin", "host"};
	for (int i = 0; i < jit_npasses; i++) {
		const JitPass *p = &jit_passes[i];
		printf("%-16s %-5s %-8s %s%s\n", p->name, stages[p->stage],
		       p->targets == (JIT_ON_CPU | JIT_ON_CUDA) ? "cpu,cuda"
		       : p->targets & JIT_ON_CPU                ? "cpu"
								: "cuda",
		       p->pipeline ? "pipeline" : "on request", p->analysis ? ", analysis" : "");
		printf("    requires ");
		facts(p->requires);
		printf("; provides ");
		facts(p->provides);
		printf("; breaks ");
		facts(p->breaks);
		printf("\n    %s\n", p->what);
	}
}

static const char *opt_value(const char *arg, const char *name)
{
	size_t n = strlen(name);
	if (strncmp(arg, name, n) == 0 && arg[n] == '=')
		return arg + n + 1;
	return NULL;
}

int main(int argc, char **argv)
{
	const char *file = NULL, *passes = NULL, *dump = NULL, *v;
	const char *pipeline = NULL;
	int arch = 90, num_warps = -1, num_stages = -1;
	bool verify_each = true;
	JitBackend backend = JIT_BACKEND_CUDA;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--list")) {
			list_passes();
			return 0;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage, stdout);
			return 0;
		} else if (!strcmp(a, "--no-verify-each")) {
			verify_each = false;
		} else if ((v = opt_value(a, "--passes"))) {
			passes = v;
		} else if (!strcmp(a, "--pipeline")) {
			pipeline = "";
		} else if ((v = opt_value(a, "--pipeline"))) {
			pipeline = v;
		} else if ((v = opt_value(a, "--dump-after"))) {
			dump = v;
		} else if ((v = opt_value(a, "--arch"))) {
			arch = atoi(v);
		} else if ((v = opt_value(a, "--num-warps"))) {
			num_warps = atoi(v);
		} else if ((v = opt_value(a, "--num-stages"))) {
			num_stages = atoi(v);
		} else if ((v = opt_value(a, "--target"))) {
			if (!strcmp(v, "cpu"))
				backend = JIT_BACKEND_CPU;
			else if (strcmp(v, "cuda")) {
				fprintf(stderr, "ct-opt: unknown target '%s'\n", v);
				return 1;
			}
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "ct-opt: unknown option '%s'\n%s", a, usage);
			return 1;
		} else {
			file = a;
		}
	}
	if (!file || (!passes && !pipeline)) {
		fputs(usage, stderr);
		return 1;
	}
	int flags = 0;
	if (pipeline && !strcmp(pipeline, "ttir"))
		flags = JIT_STOP_TTIR;
	else if (pipeline && !strcmp(pipeline, "ttgir"))
		flags = JIT_STOP_TTGIR;
	else if (pipeline && *pipeline) {
		fprintf(stderr, "ct-opt: --pipeline takes ttir or ttgir, not '%s'\n", pipeline);
		return 1;
	}

	FILE *f = strcmp(file, "-") ? fopen(file, "rb") : stdin;
	if (!f) {
		fprintf(stderr, "ct-opt: cannot open %s\n", file);
		return 1;
	}
	char *text = slurp(f);
	if (f != stdin)
		fclose(f);
	IrCtx *ctx = ir_ctx_new();
	IrError *e = NULL;
	IrModule *m = ir_parse(ctx, file, text, &e);
	int rc = 1;
	if (!m) {
		fprintf(stderr, "%s\n", e ? ir_error_str(ctx, e) : "parse failed");
		goto out;
	}
	/* as the frontend records them */
	if (num_stages >= 0)
		ir_set_attr_int(ctx, &m->nattrs, &m->attrs, "num_stages", num_stages);
	if (num_warps >= 0)
		ir_set_attr_int(ctx, &m->nattrs, &m->attrs, "num_warps", num_warps);
	BeOptions o;
	be_options_default(&o);
	const IrAttr *nw = ir_find_attr(m->nattrs, m->attrs, "num_warps");
	if (num_warps >= 0)
		o.num_warps = num_warps;
	else if (nw && nw->kind == ATTR_INT)
		o.num_warps = (int)nw->i; /* the module's own */
	if (num_stages >= 0)
		o.num_stages = num_stages;
	JitTarget t = {backend, backend == JIT_BACKEND_CUDA ? arch : 0, backend == JIT_BACKEND_CUDA ? 32 : 1, 0};
	JitKernel k;
	JitPipe *p = jit_pipe_new(m, &o, &t, &k);
	jit_pipe_verify_each(p, verify_each);
	char *msg = jit_pipe_dump_after(p, dump);
	if (msg) {
		fprintf(stderr, "ct-opt: %s\n", msg);
		free(msg);
		jit_pipe_free(p);
		jit_kernel_free(&k);
		goto out;
	}
	if (pipeline) {
		e = jit_pipe_run_pipeline(p, flags | JIT_NO_PTXAS);
	} else {
		char *list = strdup(passes);
		for (char *s = strtok(list, ","); s && !e; s = strtok(NULL, ","))
			e = jit_pipe_run(p, s);
		free(list);
	}
	for (int i = 0; i < k.ndumps; i++)
		printf("// ----- after %s -----\n%s", k.dumps[i].pass, k.dumps[i].text);
	if (e) {
		if (e->loc.file || e->loc.line)
			fprintf(stderr, "%s\n", ir_error_str(ctx, e));
		else
			fprintf(stderr, "ct-opt: %s\n", e->msg);
	} else {
		char *out = jit_pipe_text(p);
		fputs(out, stdout);
		free(out);
		rc = 0;
	}
	jit_pipe_free(p);
	jit_kernel_free(&k);
out:
	ir_ctx_free(ctx);
	free(text);
	return rc;
}
