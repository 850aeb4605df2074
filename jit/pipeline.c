/* pipeline.c: the pass table and the driver that runs it.
 *
 * Every step from verified TTIR to PTX or host code is one row of jit_passes
 * below: its name, the form it leaves (TTIR, TTGIR, LLVM IR, PTX, cubin,
 * host code), the targets it runs for, whether jit_compile runs it, the
 * facts it requires, provides and breaks (JIT_F_* in jit.h; it keeps every
 * other fact), the timer its time goes to, and the function. The table's
 * order is the pipeline's order; nothing else decides it. A Python kernel
 * and a .ttir file go through the same rows: the frontend only builds TTIR.
 *
 * The driver (a JitPipe) holds the module, the options, the analysis
 * results and the backend's state between passes, and the facts that hold.
 * Asked for one pass by name (ct-opt, the per-pass tests), it first runs the
 * analyses that provide facts the pass requires (verify, axis-info); a
 * missing fact no analysis provides is an error. The verifier runs after
 * every pass that changes the IR (tens of microseconds for attention): a
 * pass that leaves invalid IR is an internal error, not a crash further
 * down. When the compilation leaves a stage, the stage's text goes into the
 * JitKernel (ttir, ttgir, llir); a dump request keeps the text after chosen
 * passes as well.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "jit/jit.h"

const char *const jit_fact_names[JIT_NF] = {
	"verified", "ttir", "axis", "layouts", "barriers", "shared", "llvm", "llvm-opt", "ptx", "cubin", "host",
};

struct JitPipe {
	IrModule *m;
	IrFunc *kernel;
	BeOptions opt;
	JitTarget target;
	unsigned on; /* JIT_ON_CPU or JIT_ON_CUDA */
	AnGpuOptions ao;
	JitKernel *out;
	unsigned facts;
	JitStage stage;
	const JitPass *last; /* the pass run last */
	AnAxis *ax;          /* JIT_F_AXIS */
	int64_t shared;      /* JIT_F_SHARED */
	BeNvModule *nv;      /* JIT_F_LLVM */
	bool verify_each;    /* the verifier after every pass that changes the module */
	bool dump_all;
	unsigned long long dump_mask; /* by row of jit_passes */
	int depth;                    /* analyses run on demand, nested */
};

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static IrFunc *find_kernel(IrModule *m)
{
	IrFunc *k = NULL;
	for (int i = 0; i < m->nfuncs; i++)
		if (m->funcs[i]->is_kernel)
			k = m->funcs[i];
	return k;
}

/* ------------------------------------------------------------------------- */
/* The passes                                                                */
/* ------------------------------------------------------------------------- */

/* The signature name of a scalar or pointer parameter type ("*f32", "i32"). */
static void type_sig(const IrType *t, char *buf, size_t n)
{
	if (t->kind == TY_PTR && t->elem && t->elem->kind != TY_PTR && t->elem->kind != TY_BLOCK)
		snprintf(buf, n, "*%s", ir_kind_name(t->elem->kind));
	else if (t->kind != TY_PTR && t->kind != TY_BLOCK && ir_kind_name(t->kind))
		snprintf(buf, n, "%s", ir_kind_name(t->kind));
	else
		snprintf(buf, n, "?");
}

/* The kernel's parameter list as "*f32,i32,..." (malloc'ed). */
static char *kernel_sig(const IrFunc *f)
{
	size_t cap = 16 + (size_t)f->body->nargs * 16, len = 0;
	char *s = malloc(cap);
	if (!s)
		abort();
	s[0] = 0;
	for (int i = 0; i < f->body->nargs; i++) {
		char t[32];
		type_sig(f->body->args[i]->type, t, sizeof t);
		len += (size_t)snprintf(s + len, cap - len, "%s%s", i ? "," : "", t);
	}
	return s;
}

static IrError *run_verify(JitPipe *p)
{
	IrError *e = ir_verify(p->m);
	if (e)
		return e;
	p->kernel = find_kernel(p->m);
	if (!p->kernel)
		return ir_error(p->m->ctx, IR_ERR_VALUE, (IrLoc){0}, "the module has no kernel function");
	if (!p->out->name) {
		p->out->name = strdup(p->kernel->name);
		p->out->sig = kernel_sig(p->kernel);
	}
	if (p->on == JIT_ON_CUDA) {
		IrFunc **fs;
		int n;
		e = an_call_order(p->kernel, &fs, &n);
		return e ? e : be_nvptx_check_options(p->m, &p->opt);
	}
	return NULL;
}

/* The functions the GPU passes run on: the kernel and the noinline
 * functions it calls, callees first (an_call_order). */
static IrFunc **gpu_funcs(JitPipe *p, int *n)
{
	IrFunc **fs;
	if (an_call_order(p->kernel, &fs, n))
		*n = 0; /* the verifier reported it */
	return fs;
}

static IrError *run_combine_mul_reduce(JitPipe *p)
{
	return ir_combine_mul_reduce(p->m);
}

static IrError *run_combine_dot_add(JitPipe *p)
{
	return ir_combine_dot_add(p->m);
}

static IrError *run_unroll_loops(JitPipe *p)
{
	return ir_unroll_loops(p->m);
}


/* Nests with a dot are fused as well (on the CPU, and on sm_90 and
 * later), so that the GPU pipelines their tiles across outer iterations
 * (a persistent matmul's next tile loads during this one's last K steps;
 * tutorial 09's persistent kernel 3-10% faster on an H100);
 * CTRITON_FLATTEN_DOT_NESTS=0 keeps them nests. Part of the cache key
 * (compiler.py KEY_ENV) */
/* A dot on warpgroup MMA (its accumulator's layout v3): mma.sync reads a
 * fresh tile's zeros through a select of the accumulator's registers
 * (spills at 128x128 on sm_80; on sm_90, tf32 or int8 dots off warpgroup
 * MMA spilled more fused than nested in generated kernels) */
static bool wgmma_dot(const IrOp *dot, void *user)
{
	JitPipe *p = user;
	const IrLayout *l = an_dot_mma_layout(p->m->ctx, dot, &p->ao);
	return l && l->version_major == 3;
}

/* Whether flatten fuses nests with dots: on the CPU and on sm_90 and later,
 * unless CTRITON_FLATTEN_DOT_NESTS=0. */
static bool fuse_dot_nests(const JitPipe *p)
{
	const char *e = getenv("CTRITON_FLATTEN_DOT_NESTS");
	return !(e && e[0] == '0') && (p->on != JIT_ON_CUDA || p->ao.arch >= 90);
}

static IrError *run_hoist_addresses(JitPipe *p)
{
	return ir_hoist_addresses(p->m, fuse_dot_nests(p));
}

static IrError *run_flatten_loops(JitPipe *p)
{
	bool cuda = p->on == JIT_ON_CUDA;
	return ir_flatten_loops(p->m, fuse_dot_nests(p), cuda ? an_shared_limit(p->ao.arch) : 0, cuda ? wgmma_dot : NULL,
				p);
}

static IrError *run_reduce_lanes(JitPipe *p)
{
	return ir_loop_reduce_lanes(p->m, BE_CPU_REDUCE_LANES);
}

static IrError *run_cse_scalars(JitPipe *p)
{
	return ir_cse_scalars(p->m);
}

static IrError *run_cse(JitPipe *p)
{
	return ir_cse(p->m);
}

static IrError *run_dce(JitPipe *p)
{
	return ir_dce(p->m);
}

static IrError *run_split_dots(JitPipe *p)
{
	for (int i = 0; i < p->m->nfuncs; i++)
		an_split_dots(p->m->funcs[i], &p->ao);
	return NULL;
}

/* Warp specialization may change the warp count first: a loop that asks
 * for it with num_warps 4 and 128-row dots runs on two consumer warpgroups
 * (an_ws_plan), and the producer's warps come on top (ws_warps). */
static IrError *run_prefetch(JitPipe *p)
{
	const IrAttr *ns = ir_find_attr(p->m->nattrs, p->m->attrs, "num_stages");
	int S = ns && ns->kind == ATTR_INT ? (int)ns->i : 1;
	int nw = p->on == JIT_ON_CUDA && p->kernel ? an_ws_plan(p->kernel, &p->ao, S) : 0;
	if (nw && nw != p->ao.num_warps) {
		p->ao.num_warps = p->opt.num_warps = nw;
		ir_set_attr_int(p->m->ctx, &p->m->nattrs, &p->m->attrs, "num_warps", nw);
	}
	int n;
	IrFunc **fs = gpu_funcs(p, &n);
	for (int i = 0; i < n; i++)
		an_prefetch_dot_loads(fs[i], &p->ao, S);
	const IrAttr *ws = ir_find_attr(p->m->nattrs, p->m->attrs, "ws_warps");
	p->out->num_warps = p->opt.num_warps + (ws && ws->kind == ATTR_INT ? (int)ws->i : 0);
	return NULL;
}

/* Descriptor stores through the tensor memory access unit; the pointers
 * and masks they no longer need go. */
static IrError *run_tma_stores(JitPipe *p)
{
	int n;
	bool any = false;
	IrFunc **fs = gpu_funcs(p, &n);
	for (int i = 0; i < n; i++)
		any |= an_tma_stores(fs[i], &p->ao);
	return any ? ir_dce(p->m) : NULL;
}

/* Stores versioned on run-time alignment: on CUDA the stores of dot
 * results (epilogues), where the hints give vectors. With
 * CTRITON_VERSION_STORES=1 every store it can, on CUDA and on the CPU
 * (which takes no hints), so that the CPU tests run both branches;
 * CTRITON_VERSION_STORES=0 keeps every store as it is. Part of the cache
 * key (compiler.py KEY_ENV). */
static IrError *run_version_stores(JitPipe *p)
{
	const char *e = getenv("CTRITON_VERSION_STORES");
	bool all = e && e[0] == '1';
	if (e && e[0] == '0')
		return NULL;
	if (p->on != JIT_ON_CUDA && !all)
		return NULL;
	bool any = false;
	for (int i = 0; i < p->m->nfuncs; i++)
		any |= an_version_stores(p->m->funcs[i], all);
	return any ? ir_dce(p->m) : NULL;
}

/* Callers before callees: each call site's facts seed its callee's
 * parameters. The kernel's facts stay in p->ax (the kernel is analysed
 * first, so analysing the callees does not renumber its values). */
static IrError *run_axis_info(JitPipe *p)
{
	int n;
	IrFunc **fs = gpu_funcs(p, &n);
	p->ax = NULL;
	for (int i = n - 1; i >= 0; i--) {
		AnAxis *ax = an_axis_info(fs[i]);
		an_axis_seed_callees(fs[i], ax);
		if (fs[i] == p->kernel)
			p->ax = ax;
	}
	if (!p->ax)
		p->ax = an_axis_info(p->kernel);
	return NULL;
}

static IrError *run_assign_layouts(JitPipe *p)
{
	int n;
	IrFunc **fs = gpu_funcs(p, &n);
	for (int i = 0; i < n; i++) {
		IrError *e = an_assign_layouts(fs[i], fs[i] == p->kernel ? p->ax : an_axis_info(fs[i]), &p->ao);
		if (e)
			return e;
	}
	return NULL;
}

static IrError *run_remove_converts(JitPipe *p)
{
	int n;
	IrFunc **fs = gpu_funcs(p, &n);
	for (int i = 0; i < n; i++) {
		an_remove_converts(fs[i]);
		/* a tensor store of a column half takes the whole block's
		 * window: what fed it goes dead */
		if (an_tma_store_windows(fs[i], &p->ao))
			an_remove_converts(fs[i]);
	}
	return NULL;
}

static IrError *run_thread_locality(JitPipe *p)
{
	an_thread_locality(p->kernel);
	return NULL;
}

static IrError *run_slice_register_dots(JitPipe *p)
{
	int n;
	IrFunc **fs = gpu_funcs(p, &n);
	for (int i = 0; i < n; i++)
		an_slice_register_dots(fs[i], &p->ao);
	return NULL;
}

/* The kernel's tensor maps get their global scratch slots (the callees
 * make none: the frontend builds maps in the kernel only). */
static IrError *run_allocate_global(JitPipe *p)
{
	p->out->global_scratch = (int)an_allocate_global_scratch(p->kernel);
	p->out->global_scratch_align = p->out->global_scratch ? AN_TMAP_BYTES : 1;
	return NULL;
}

static IrError *run_insert_barriers(JitPipe *p)
{
	int n;
	IrFunc **fs = gpu_funcs(p, &n);
	/* deferring tensor stores needs the kernel's allocation, which needs
	 * its callees' totals */
	for (int i = 0; i < n; i++)
		if (fs[i] != p->kernel)
			an_allocate_shared(fs[i], &p->ao);
	for (int i = 0; i < n; i++) {
		an_plan_tma_stores(fs[i], &p->ao);
		an_insert_barriers(fs[i], &p->ao);
	}
	return NULL;
}

/* The launch plan of the kernel's tensor-map parameters (JitKernel.tma). */
static void tma_plan(IrFunc *f, JitKernel *k)
{
	k->ntma = 0;
	for (int i = 0; i < f->body->nargs && k->ntma < JIT_MAX_TMAPS; i++) {
		const IrParam *pr = &f->params[i];
		const IrAttr *a = ir_find_attr(pr->nattrs, pr->attrs, "tensormap");
		const IrAttr *box = ir_find_attr(pr->nattrs, pr->attrs, "tma_box");
		if (!a || !box || box->kind != ATTR_INTS || box->n != 2)
			continue;
		const IrAttr *sw = ir_find_attr(pr->nattrs, pr->attrs, "tma_swizzle");
		const IrAttr *dt = ir_find_attr(pr->nattrs, pr->attrs, "tma_dtype");
		const IrAttr *nan = ir_find_attr(pr->nattrs, pr->attrs, "tma_nan");
		const IrAttr *src = ir_find_attr(pr->nattrs, pr->attrs, "tma_src");
		int64_t *e = k->tma[k->ntma++];
		memset(e, 0, sizeof k->tma[0]);
		e[0] = a->i;
		e[1] = box->ints[0];
		e[2] = box->ints[1];
		e[3] = sw ? sw->i : 0;
		e[4] = dt ? dt->i : 0;
		e[5] = nan ? nan->i : 0;
		e[6] = an_tmap_used(f->body, f->body->args[i]);
		if (src && src->kind == ATTR_INTS && src->n == 7)
			memcpy(e + 7, src->ints, 7 * sizeof(int64_t));
	}
}

/* Callees first: a call is a scratch user of its callee's total. */
static IrError *run_allocate_shared(JitPipe *p)
{
	int n;
	IrFunc **fs = gpu_funcs(p, &n);
	for (int i = 0; i < n; i++)
		if (fs[i] != p->kernel)
			an_allocate_shared(fs[i], &p->ao);
	p->shared = an_allocate_shared(p->kernel, &p->ao);
	p->out->shared = (int)p->shared;
	if (p->on == JIT_ON_CUDA)
		tma_plan(p->kernel, p->out);
	if (p->on == JIT_ON_CUDA)
		return be_nvptx_check_shared(p->m, p->target.arch, p->shared);
	return NULL;
}

static BeGpuTarget gpu_target(const JitPipe *p)
{
	return (BeGpuTarget){.arch = p->target.arch,
			     .ptx_version = 0,
			     .warp_size = p->target.warp_size,
			     .ptx_arch = p->target.ptx_arch};
}

static IrError *run_nvptx_lower(JitPipe *p)
{
	BeGpuTarget gt = gpu_target(p);
	be_nvptx_module_free(p->nv);
	p->nv = NULL;
	return be_nvptx_lower(p->m, &p->opt, &gt, &p->nv);
}

static IrError *run_llvm_opt(JitPipe *p)
{
	return be_nvptx_optimize(p->nv);
}

static IrError *run_ptx_emit(JitPipe *p)
{
	free(p->out->ptx);
	p->out->ptx = NULL;
	return be_nvptx_emit(p->nv, &p->out->ptx);
}

static IrError *run_ptxas(JitPipe *p)
{
	char msg[4096];
	if (jit_ptxas(p->out, p->target.ptx_arch ? p->target.ptx_arch : p->target.arch, msg, sizeof msg) < 0)
		return ir_error(p->m->ctx, IR_ERR_BACKEND, (IrLoc){0}, "%s", msg);
	return NULL;
}

static IrError *run_cpu_codegen(JitPipe *p)
{
	BeCpuResult r;
	memset(&r, 0, sizeof r);
	IrError *e = be_cpu_compile(p->m, &p->opt, &r);
	if (e)
		return e;
	JitKernel *out = p->out;
	free(out->llir);
	free(out->asm_);
	out->llir = xstrdup(r.llir);
	out->asm_ = xstrdup(r.asm_);
	if (out->cpu) {
		BeCpuResult old;
		memset(&old, 0, sizeof old);
		old.kernel = out->cpu;
		be_cpu_result_free(&old);
	}
	out->cpu = r.kernel;
	r.kernel = NULL; /* ours now */
	be_cpu_result_free(&r);
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* The table                                                                 */
/* ------------------------------------------------------------------------- */

#define BOTH (JIT_ON_CPU | JIT_ON_CUDA)
#define CUDA JIT_ON_CUDA
#define CPU JIT_ON_CPU
#define V JIT_F_VERIFIED
/* a change to the op list: axis info (by value) no longer holds */
#define EDIT JIT_F_AXIS

const JitPass jit_passes[] = {
	/* name, stage, targets, pipeline, analysis, requires, provides, breaks, timer, run, what */
	{"verify", JIT_S_TTIR, BOTH, true, true, 0, V, 0, JIT_T_VERIFY, run_verify,
	 "types, shapes, dominance, terminators; finds the kernel; checks the options against the target"},
	{"unroll-loops", JIT_S_TTIR, BOTH, true, false, V, 0, EDIT, JIT_T_TTIR, run_unroll_loops,
	 "a for loop with loop_unroll_factor U: U copies of its body per iteration, then a remainder loop"},
	{"combine-mul-reduce", JIT_S_TTIR, BOTH, true, false, V, 0, EDIT, JIT_T_TTIR, run_combine_mul_reduce,
	 "rewrites sum(x[:, :, None] * y[None, :, :], axis=1) of f32 blocks into dot(x, y, 0), input_precision ieee "
	 "(M, K, N >= 16)"},
	{"combine-dot-add", JIT_S_TTIR, BOTH, true, false, V, 0, EDIT, JIT_T_TTIR, run_combine_dot_add,
	 "folds acc + dot(a, b, 0) into dot(a, b, acc) when the dot has no other use: the sum accumulates in the dot"},
	{"cse-scalars", JIT_S_TTIR, BOTH, true, false, V, 0, EDIT, JIT_T_TTIR, run_cse_scalars,
	 "merges identical pure scalar ops (block ops keep one copy per expression, free to take their own layouts)"},
	{"cse", JIT_S_TTIR, BOTH, false, false, V, 0, EDIT, JIT_T_TTIR, run_cse,
	 "merges identical pure ops, block-valued ones too (not in the pipeline)"},
	{"dce", JIT_S_TTIR, BOTH, true, false, V, 0, EDIT, JIT_T_TTIR, run_dce,
	 "removes pure ops whose results are unused, whole chains at once"},
	{"hoist-addresses", JIT_S_TTGIR, BOTH, true, false, V | JIT_F_TTIR, 0, EDIT, JIT_T_TTGIR, run_hoist_addresses,
	 "in the inner loop (with a dot) of a nest flatten-loops fuses, an address base + (invariant offsets + "
	 "a scalar of the body) becomes the invariant pointers, made before the loop, plus that scalar"},
	{"flatten-loops", JIT_S_TTGIR, BOTH, true, false, V | JIT_F_TTIR, 0, EDIT, JIT_T_TTGIR, run_flatten_loops,
	 "a for loop with flatten and one inner for loop: one loop over the inner iterations, the code around "
	 "the inner loop run on the first and last of each outer iteration"},
	{"reduce-lanes", JIT_S_TTGIR, CPU, true, false, V | JIT_F_TTIR, 0, EDIT, JIT_T_TTGIR, run_reduce_lanes,
	 "a reduction that only accumulates into a for loop's carried value: the loop carries vector lanes of "
	 "partial results, reduced once after it"},
	{"split-dots", JIT_S_TTGIR, CUDA, true, false, V | JIT_F_TTIR, 0, EDIT, JIT_T_TTGIR, run_split_dots,
	 "tf32x3 / bf16x3 / bf16x6 dots as several tf32 / bf16 tensor-core dots; fp8 dots that warpgroup MMA "
	 "cannot take upcast to f16 for mma.sync (on sm_89 fp8 mma.sync)"},
	{"prefetch", JIT_S_TTGIR, CUDA, true, false, V | JIT_F_TTIR, 0, EDIT, JIT_T_TTGIR, run_prefetch,
	 "loads feeding a dot in a for loop: cp.async into num_stages shared slots, or issued one iteration ahead"},
	{"tma-stores", JIT_S_TTGIR, CUDA, true, false, V | JIT_F_TTIR, 0, EDIT, JIT_T_TTGIR, run_tma_stores,
	 "descriptor stores of 2-D blocks a tensor map's box covers: tma_store (sm_90), the value written "
	 "through shared memory by the tensor memory access unit"},
	{"version-stores", JIT_S_TTGIR, BOTH, true, false, V | JIT_F_TTIR, 0, EDIT, JIT_T_TTGIR, run_version_stores,
	 "a store whose vectors rest on scalars of unknown alignment (a loaded base or leading dimension, a bound "
	 "of unknown divisibility): an if on those scalars, multiple_of hints and vectors in its first branch"},
	{"axis-info", JIT_S_TTGIR, CUDA, true, true, V, JIT_F_AXIS, 0, JIT_T_TTGIR, run_axis_info,
	 "contiguity, divisibility and constancy of every value, per dim"},
	{"assign-layouts", JIT_S_TTGIR, CUDA, true, false, V | JIT_F_TTIR | JIT_F_AXIS, JIT_F_LAYOUTS,
	 JIT_F_TTIR | EDIT, JIT_T_TTGIR, run_assign_layouts,
	 "a layout on every block value (coalesced accesses, slices, mma for dots), convert_layout where they "
	 "disagree"},
	{"remove-converts", JIT_S_TTGIR, CUDA, true, false, V | JIT_F_LAYOUTS, 0, EDIT | JIT_F_BARRIERS | JIT_F_SHARED,
	 JIT_T_TTGIR, run_remove_converts,
	 "drops identity conversions, folds chains, rematerialises cheap producers, drops dead pure ops"},
	{"thread-locality", JIT_S_TTGIR, CUDA, true, false, V | JIT_F_LAYOUTS, 0, EDIT | JIT_F_BARRIERS | JIT_F_SHARED,
	 JIT_T_TTGIR, run_thread_locality,
	 "a reduction accumulated into a loop-carried value reduces each thread's own elements per iteration; "
	 "the loop carries those partials, reduced across threads once after it"},
	{"slice-register-dots", JIT_S_TTGIR, CUDA, true, false, V | JIT_F_LAYOUTS, 0,
	 EDIT | JIT_F_BARRIERS | JIT_F_SHARED, JIT_T_TTGIR, run_slice_register_dots,
	 "a warpgroup MMA whose A the loop computes in registers from a slot: one MMA group per K step, "
	 "S - 1 groups left in flight, so the next step's A is read and cast while the tensor cores run"},
	{"allocate-global", JIT_S_TTGIR, CUDA, true, false, V, 0, 0, JIT_T_TTGIR, run_allocate_global,
	 "a slot of the program's global scratch for each tensor map the kernel makes for its tensor copies"},
	{"insert-barriers", JIT_S_TTGIR, CUDA, true, false, V | JIT_F_LAYOUTS, JIT_F_BARRIERS, 0, JIT_T_TTGIR,
	 run_insert_barriers,
	 "the tensor stores of a flattened nest deferred where their own staging fits "
	 "(an_plan_tma_stores); a barrier op before each scratch user that may overwrite what another still reads"},
	{"allocate-shared", JIT_S_TTGIR, CUDA, true, false, V | JIT_F_LAYOUTS, JIT_F_SHARED, 0, JIT_T_TTGIR,
	 run_allocate_shared, "scratch_offset for every scratch user by liveness; the total within the arch's limit"},
	{"nvptx-lower", JIT_S_LLIR, CUDA, true, false, V | JIT_F_LAYOUTS | JIT_F_BARRIERS | JIT_F_SHARED, JIT_F_LLVM,
	 JIT_F_LLVM_OPT | JIT_F_PTX | JIT_F_CUBIN, JIT_T_LLIR, run_nvptx_lower,
	 "the LLVM IR of one thread, libdevice linked in, everything but the kernel internal"},
	{"llvm-opt", JIT_S_LLIR, CUDA, true, false, JIT_F_LLVM, JIT_F_LLVM_OPT, 0, JIT_T_OPT, run_llvm_opt,
	 "LLVM's default<O3> for the NVPTX target machine"},
	{"ptx-emit", JIT_S_PTX, CUDA, true, false, JIT_F_LLVM, JIT_F_PTX, JIT_F_CUBIN, JIT_T_EMIT, run_ptx_emit,
	 "PTX text from the NVPTX target machine"},
	{"ptxas", JIT_S_CUBIN, CUDA, true, false, JIT_F_PTX, JIT_F_CUBIN, 0, JIT_T_PTXAS, run_ptxas,
	 "PTX -> cubin, registers and spills, when ptxas is found"},
	{"cpu-codegen", JIT_S_HOST, CPU, true, false, V | JIT_F_TTIR, JIT_F_HOST, 0, JIT_T_CPU, run_cpu_codegen,
	 "the LLVM IR of one program instance, O3 and ORC LLJIT (backend/cpu)"},
};
const int jit_npasses = (int)(sizeof jit_passes / sizeof jit_passes[0]);

#undef BOTH
#undef CUDA
#undef CPU
#undef V
#undef EDIT

const JitPass *jit_pass_find(const char *name)
{
	for (int i = 0; i < jit_npasses; i++)
		if (!strcmp(jit_passes[i].name, name))
			return &jit_passes[i];
	return NULL;
}

/* ------------------------------------------------------------------------- */
/* Texts                                                                     */
/* ------------------------------------------------------------------------- */

typedef struct Text {
	char *s;
	size_t n, cap;
} Text;

static void put(Text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(Text *t, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		size_t room = t->cap - t->n;
		va_start(ap, fmt);
		int k = vsnprintf(t->s ? t->s + t->n : NULL, room, fmt, ap);
		va_end(ap);
		if (k < 0)
			abort();
		if ((size_t)k < room) {
			t->n += (size_t)k;
			return;
		}
		t->cap = t->cap * 2 + (size_t)k + 64;
		t->s = realloc(t->s, t->cap);
		if (!t->s)
			abort();
	}
}

static void put_dims(Text *t, const char *name, int rank, const int64_t *v)
{
	put(t, "%s = [", name);
	for (int d = 0; d < (rank ? rank : 1); d++)
		put(t, "%s%lld", d ? ", " : "", (long long)v[d]);
	put(t, "]");
}

static void axis_value(Text *t, const AnAxis *ax, const IrValue *v)
{
	const AnAxisInfo *a = an_axis_get(ax, v);
	put(t, "// %%%d: ", v->id);
	put_dims(t, "contiguity", a->rank, a->contig);
	put(t, ", ");
	put_dims(t, "divisibility", a->rank, a->div);
	put(t, ", ");
	put_dims(t, "constancy", a->rank, a->constancy);
	put(t, "\n");
}

static void axis_block(Text *t, const AnAxis *ax, const IrBlock *b)
{
	for (const IrOp *op = b->first; op; op = op->next) {
		for (int i = 0; i < op->nres; i++)
			axis_value(t, ax, &op->res[i]);
		for (int r = 0; r < op->nregions; r++) {
			for (int i = 0; i < op->regions[r]->nargs; i++)
				axis_value(t, ax, op->regions[r]->args[i]);
			axis_block(t, ax, op->regions[r]);
		}
	}
}

/* The module's text; after axis-info one comment per kernel value with its
 * axis info (the printer numbered the values as an_axis_info did), after
 * allocate-shared the total. */
static char *ir_text(JitPipe *p)
{
	Text t = {NULL, 0, 0};
	put(&t, "%s", ir_print_module(p->m));
	if (p->last && !strcmp(p->last->name, "axis-info") && (p->facts & JIT_F_AXIS)) {
		put(&t,
		    "\n// axis-info of @%s: per dim, runs of +1, the power of two dividing every element "
		    "(pointers: bytes), runs of equal elements\n",
		    p->kernel->name);
		for (int i = 0; i < p->kernel->body->nargs; i++)
			axis_value(&t, p->ax, p->kernel->body->args[i]);
		axis_block(&t, p->ax, p->kernel->body);
	}
	if (p->last && !strcmp(p->last->name, "allocate-shared"))
		put(&t, "\n// shared: %lld bytes\n", (long long)p->shared);
	return t.s;
}

char *jit_pipe_text(JitPipe *p)
{
	char buf[160];
	switch (p->stage) {
	case JIT_S_TTIR:
	case JIT_S_TTGIR:
		return ir_text(p);
	case JIT_S_LLIR:
		return p->nv ? be_nvptx_llir(p->nv) : strdup("");
	case JIT_S_PTX:
		return strdup(p->out->ptx ? p->out->ptx : "");
	case JIT_S_CUBIN:
		if (!p->out->cubin)
			return strdup("// no cubin: ptxas not found\n");
		snprintf(buf, sizeof buf, "// cubin: %zu bytes, %d registers, %d spill stores\n", p->out->cubin_len,
			 p->out->n_regs, p->out->n_spills);
		return strdup(buf);
	case JIT_S_HOST:
		return strdup(p->out->llir ? p->out->llir : "");
	}
	return strdup("");
}

/* The text of the stage the compilation leaves, into the JitKernel. */
static void record_stage(JitPipe *p)
{
	double t = jit_now_ms();
	JitKernel *out = p->out;
	switch (p->stage) {
	case JIT_S_TTIR:
		/* the textual form, and the view in Triton's spelling that
		 * readers of a kernel's TTIR look for */
		free(out->ttir);
		free(out->ttir_mlir);
		out->ttir = strdup(ir_print_module(p->m));
		out->ttir_mlir = strdup(ir_print_mlir(p->m, NULL, 0));
		out->ms[JIT_T_TTIR] += jit_now_ms() - t;
		break;
	case JIT_S_TTGIR: {
		/* The IR after the passes before code generation: on the GPU with
		 * layouts, on the CPU without (a program instance is one thread).
		 * Both texts name the target, as Triton's ttg.target = "cuda:90";
		 * the module itself stays as the passes left it. */
		char tgt[32];
		if (p->on == JIT_ON_CUDA)
			snprintf(tgt, sizeof tgt, "cuda:%d", p->target.arch);
		else
			snprintf(tgt, sizeof tgt, "cpu");
		free(out->ttgir);
		free(out->ttgir_mlir);
		int n0 = p->m->nattrs;
		IrAttr *a0 = p->m->attrs; /* ir_set_attr inserts into a new array */
		IrAttr a = {.name = "target", .kind = ATTR_STR, .s = ir_strdup(p->m->ctx, tgt)};
		ir_set_attr(p->m->ctx, &p->m->nattrs, &p->m->attrs, &a);
		out->ttgir = strdup(ir_print_module(p->m));
		if (p->m->nattrs == n0 + 1) {
			p->m->nattrs = n0;
			p->m->attrs = a0;
		}
		out->ttgir_mlir = strdup(ir_print_mlir(p->m, tgt, p->on == JIT_ON_CUDA ? p->target.warp_size : 1));
		out->ms[JIT_T_TTGIR] += jit_now_ms() - t;
		break;
	}
	case JIT_S_LLIR:
		if (p->nv) {
			free(out->llir);
			out->llir = be_nvptx_llir(p->nv);
		}
		out->ms[JIT_T_EMIT] += jit_now_ms() - t;
		break;
	default: /* the passes of the later stages write their results themselves */
		break;
	}
}

/* ------------------------------------------------------------------------- */
/* The driver                                                                */
/* ------------------------------------------------------------------------- */

static bool has_layouts(const IrBlock *b, bool want)
{
	for (const IrOp *op = b->first; op; op = op->next) {
		for (int i = 0; i < op->nres; i++)
			if (ir_is_block(op->res[i].type) && (op->res[i].type->layout != NULL) != want)
				return false;
		for (int r = 0; r < op->nregions; r++) {
			const IrBlock *rb = op->regions[r];
			for (int i = 0; i < rb->nargs; i++)
				if (ir_is_block(rb->args[i]->type) && (rb->args[i]->type->layout != NULL) != want)
					return false;
			if (!has_layouts(rb, want))
				return false;
		}
	}
	return true;
}

JitPipe *jit_pipe_new(IrModule *m, const BeOptions *opt, const JitTarget *target, JitKernel *out)
{
	JitPipe *p = calloc(1, sizeof *p);
	if (!p)
		abort();
	memset(out, 0, sizeof *out);
	out->n_regs = out->n_spills = -1;
	p->m = m;
	p->kernel = find_kernel(m);
	if (opt)
		p->opt = *opt;
	else
		be_options_default(&p->opt);
	p->target = *target;
	p->on = target->backend == JIT_BACKEND_CUDA ? JIT_ON_CUDA : JIT_ON_CPU;
	if (p->on == JIT_ON_CUDA) {
		if (!p->target.arch)
			p->target.arch = 90;
		if (!p->target.warp_size)
			p->target.warp_size = 32;
	}
	p->ao = (AnGpuOptions){p->opt.num_warps, p->target.warp_size, p->target.arch};
	p->out = out;
	p->verify_each = true;
	out->num_warps = p->opt.num_warps;
	/* what the input already is: TTIR, or TTGIR given as text */
	bool none = true, all = true;
	for (int i = 0; i < m->nfuncs; i++) {
		none = none && has_layouts(m->funcs[i]->body, false);
		all = all && has_layouts(m->funcs[i]->body, true);
	}
	p->facts = (none ? JIT_F_TTIR : 0) | (all ? JIT_F_LAYOUTS : 0);
	p->stage = none ? JIT_S_TTIR : JIT_S_TTGIR;
	return p;
}

char *jit_pipe_dump_after(JitPipe *p, const char *spec)
{
	p->dump_all = false;
	p->dump_mask = 0;
	if (!spec || !*spec)
		return NULL;
	const char *s = spec;
	while (*s) {
		const char *e = strchr(s, ',');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		while (n && *s == ' ') {
			s++;
			n--;
		}
		while (n && s[n - 1] == ' ')
			n--;
		if (n == 3 && !strncmp(s, "all", 3)) {
			p->dump_all = true;
		} else if (n) {
			int i = 0;
			while (i < jit_npasses &&
			       (strlen(jit_passes[i].name) != n || strncmp(jit_passes[i].name, s, n)))
				i++;
			if (i == jit_npasses) {
				Text t = {NULL, 0, 0};
				put(&t, "unknown pass '%.*s' to dump after; the passes are:", (int)n, s);
				for (int j = 0; j < jit_npasses; j++)
					put(&t, " %s", jit_passes[j].name);
				return t.s;
			}
			p->dump_mask |= 1ull << i;
		}
		s = e ? e + 1 : s + strlen(s);
	}
	return NULL;
}

static void facts_text(Text *t, unsigned facts)
{
	const char *sep = "";
	for (int i = 0; i < JIT_NF; i++)
		if (facts & (1u << i)) {
			put(t, "%s%s", sep, jit_fact_names[i]);
			sep = ", ";
		}
}

static const JitPass *analysis_for(const JitPipe *p, unsigned fact)
{
	for (int i = 0; i < jit_npasses; i++)
		if (jit_passes[i].analysis && (jit_passes[i].provides & fact) && (jit_passes[i].targets & p->on))
			return &jit_passes[i];
	return NULL;
}

static IrError *run_pass(JitPipe *p, const JitPass *ps)
{
	IrCtx *ctx = p->m->ctx;
	if (!(ps->targets & p->on))
		return ir_error(ctx, IR_ERR_VALUE, (IrLoc){0}, "pass '%s' does not run for the %s target", ps->name,
				p->on == JIT_ON_CUDA ? "cuda" : "cpu");
	for (int i = 0; i < JIT_NF; i++) {
		unsigned f = 1u << i;
		if (!(ps->requires & f) || (p->facts & f))
			continue;
		const JitPass *a = analysis_for(p, f);
		if (a && a != ps && p->depth < 4) {
			p->depth++;
			IrError *e = run_pass(p, a);
			p->depth--;
			if (e)
				return e;
			continue;
		}
		Text t = {NULL, 0, 0};
		put(&t, "pass '%s' requires '%s', which holds after:", ps->name, jit_fact_names[i]);
		for (int j = 0; j < jit_npasses; j++)
			if (jit_passes[j].provides & f)
				put(&t, " %s", jit_passes[j].name);
		put(&t, " (holding now: ");
		facts_text(&t, p->facts);
		put(&t, ")");
		IrError *e = ir_error(ctx, IR_ERR_VALUE, (IrLoc){0}, "%s", t.s);
		free(t.s);
		return e;
	}
	if (ps->stage > p->stage) {
		record_stage(p);
		p->stage = ps->stage;
	}
	double t0 = jit_now_ms();
	IrError *e = ps->run(p);
	p->out->ms[ps->timer] += jit_now_ms() - t0;
	if (e)
		return e;
	if (p->verify_each && !ps->analysis && ps->stage <= JIT_S_TTGIR && (e = ir_verify(p->m)))
		return ir_error(ctx, IR_ERR_INTERNAL, e->loc, "internal error: pass '%s' left invalid IR: %s", ps->name,
				e->msg);
	p->facts = (p->facts & ~ps->breaks) | ps->provides;
	p->last = ps;
	JitKernel *out = p->out;
	if (out->npasses < JIT_MAX_RUNS)
		out->passes[out->npasses++] = ps->name;
	if (p->dump_all || (p->dump_mask & (1ull << (ps - jit_passes)))) {
		out->dumps = realloc(out->dumps, sizeof(JitDump) * (size_t)(out->ndumps + 1));
		if (!out->dumps)
			abort();
		out->dumps[out->ndumps++] = (JitDump){ps->name, jit_pipe_text(p)};
	}
	return NULL;
}

IrError *jit_pipe_run(JitPipe *p, const char *name)
{
	const JitPass *ps = jit_pass_find(name);
	if (!ps)
		return ir_error(p->m->ctx, IR_ERR_VALUE, (IrLoc){0}, "unknown pass '%s'", name);
	return run_pass(p, ps);
}

IrError *jit_pipe_run_pipeline(JitPipe *p, int flags)
{
	for (int i = 0; i < jit_npasses; i++) {
		const JitPass *ps = &jit_passes[i];
		if (!ps->pipeline || !(ps->targets & p->on))
			continue;
		if ((flags & JIT_STOP_TTIR) && ps->stage > JIT_S_TTIR)
			break;
		if ((flags & JIT_STOP_TTGIR) && ps->stage > JIT_S_TTGIR)
			break;
		if ((flags & JIT_NO_PTXAS) && ps->run == run_ptxas)
			continue;
		IrError *e = run_pass(p, ps);
		if (e)
			return e;
	}
	return NULL;
}

void jit_pipe_verify_each(JitPipe *p, bool on)
{
	p->verify_each = on;
}

unsigned jit_pipe_facts(const JitPipe *p)
{
	return p->facts;
}

void jit_pipe_free(JitPipe *p)
{
	if (!p)
		return;
	record_stage(p);
	be_nvptx_module_free(p->nv);
	free(p);
}
