/* jit.c: the CPU compile driver. be_cpu_compile lowers the module (lower.c),
 * verifies the LLVM module, runs O3 for the host CPU, keeps the optimized IR
 * and the host assembly (emitted from a clone) and emits an object file
 * (all of it on a thread guarded against LLVM's fatal errors, with error
 * diagnostics routed into the compile's error: backend/llvm); the object is
 * linked into the process's one ORC LLJIT under its own resource tracker,
 * so that be_cpu_result_free can remove the code again. Only the JIT's
 * setup and the linking hold the JIT mutex. Entry symbols are unique per
 * compilation (ct_kernel_<n>_<name>).
 *
 * The JIT resolves libm/libc (printf, erff, ...) from the process and the
 * backend's own helpers (assert, fp8 and f64 -> f16 conversion, erfinv) as absolute
 * symbols.
 */
#include <llvm-c/Analysis.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu.h"
#include "backend/llvm/llvm.h"

static pthread_mutex_t jit_mu = PTHREAD_MUTEX_INITIALIZER;
static LLVMOrcLLJITRef jit;
static int jit_count;

/* ------------------------------------------------------------------------- */
/* Helpers called by jitted code                                             */
/* ------------------------------------------------------------------------- */

void ct_cpu_assert_fail(void *wctx, const char *msg, const char *file, int32_t line)
{
	CpuWorker *w = wctx;
	CpuLaunch *l = w->launch;
	int expect = 0;
	if (atomic_compare_exchange_strong(&l->failed, &expect, 1))
		snprintf(l->msg, sizeof l->msg, "device assertion failed: %s at %s:%d", msg, file, (int)line);
	longjmp(w->jb, 1);
}

float ct_cpu_f8_to_f32(uint8_t x, int32_t fmt)
{
	bool e5 = fmt & 1;
	int mb = e5 ? 2 : 3, bias = e5 ? 15 : 7, emax = e5 ? 31 : 15;
	int s = x >> 7, e = (x >> mb) & emax, m = x & ((1 << mb) - 1);
	float v;
	if (e5 && e == emax)
		v = m ? NAN : INFINITY;
	else if (!e5 && e == emax && m == 7)
		v = NAN;
	else if (e == 0)
		v = ldexpf((float)m, 1 - bias - mb);
	else
		v = ldexpf((float)(m + (1 << mb)), e - bias - mb);
	return s ? -v : v;
}

/* f32 -> e4m3fn (bias 7, no inf, max 448) or e5m2 (bias 15, max 57344);
 * finite values beyond the range saturate to the largest finite value. */
uint8_t ct_cpu_f32_to_f8(float x, int32_t fmt)
{
	bool e5 = fmt & 1, rtz = fmt & 2;
	int mb = e5 ? 2 : 3, bias = e5 ? 15 : 7;
	double maxv = e5 ? 57344.0 : 448.0;
	uint8_t sign = signbit(x) ? 0x80 : 0;
	uint8_t maxbits = e5 ? 0x7b : 0x7e;
	if (isnan(x))
		return sign | 0x7f;
	if (isinf(x))
		return sign | (e5 ? 0x7c : maxbits);
	double a = fabs((double)x);
	if (a == 0)
		return sign;
	int e;
	frexp(a, &e);
	int E = e - 1;
	if (E < 1 - bias)
		E = 1 - bias;
	double q = ldexp(1.0, E - mb);
	double m = a / q;
	double r = floor(m), fr = m - r;
	if (!rtz && (fr > 0.5 || (fr == 0.5 && fmod(r, 2.0) != 0)))
		r += 1;
	double v = r * q;
	if (v > maxv)
		return sign | maxbits;
	if (v == 0)
		return sign;
	if (v < ldexp(1.0, 1 - bias))
		return sign | (uint8_t)r;
	frexp(v, &e);
	E = e - 1;
	int mant = (int)(v / ldexp(1.0, E - mb)) - (1 << mb);
	return (uint8_t)(sign | ((E + bias) << mb) | mant);
}

/* f64 -> f16 bits, rounding to nearest even once (a trip through f32 would
 * round twice). LLVM lowers a direct fptrunc to __truncdfhf2, which the
 * process does not provide. */
uint16_t ct_cpu_f64_to_f16(double x)
{
	uint16_t sign = signbit(x) ? 0x8000 : 0;
	if (isnan(x))
		return sign | 0x7e00;
	double a = fabs(x);
	if (a >= 65520.0) /* rounds past the largest finite half, 65504 */
		return sign | 0x7c00;
	if (a < 0x1p-14) { /* subnormal (or zero): multiples of 2^-24 */
		double m = a * 0x1p24, r = nearbyint(m); /* default mode: ties to even */
		return sign | (uint16_t)r;
	}
	int e;
	frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
	double m = ldexp(a, 11 - e), r = nearbyint(m); /* 11 significant bits */
	if (r >= 2048.0) {
		r /= 2;
		e++;
	}
	return sign | (uint16_t)(((e - 1 + 15) << 10) | ((int)r - 1024));
}

/* Inverse error function (libm has none): a rational first guess, then
 * Newton steps on erf, which converge to double precision. */
double ct_cpu_erfinv(double y)
{
	if (isnan(y) || y < -1 || y > 1)
		return NAN;
	if (y == 1 || y == -1)
		return copysign(INFINITY, y);
	/* Giles' single-precision approximation as the start */
	double w = -log((1.0 - y) * (1.0 + y)), x;
	if (w < 5.0) {
		w -= 2.5;
		double p = 2.81022636e-08;
		p = 3.43273939e-07 + p * w;
		p = -3.5233877e-06 + p * w;
		p = -4.39150654e-06 + p * w;
		p = 0.00021858087 + p * w;
		p = -0.00125372503 + p * w;
		p = -0.00417768164 + p * w;
		p = 0.246640727 + p * w;
		p = 1.50140941 + p * w;
		x = p * y;
	} else {
		w = sqrt(w) - 3.0;
		double p = -0.000200214257;
		p = 0.000100950558 + p * w;
		p = 0.00134934322 + p * w;
		p = -0.00367342844 + p * w;
		p = 0.00573950773 + p * w;
		p = -0.0076224613 + p * w;
		p = 0.00943887047 + p * w;
		p = 1.00167406 + p * w;
		p = 2.83297682 + p * w;
		x = p * y;
	}
	for (int i = 0; i < 3; i++) {
		double err = erf(x) - y;
		x -= err / (1.1283791670955126 * exp(-x * x));
	}
	return x;
}

/* ------------------------------------------------------------------------- */
/* The JIT                                                                   */
/* ------------------------------------------------------------------------- */

static char *take_error(LLVMErrorRef e)
{
	char *m = LLVMGetErrorMessage(e);
	char *r = strdup(m ? m : "unknown LLVM error");
	LLVMDisposeErrorMessage(m);
	return r;
}

static IrError *llvm_error(IrCtx *ictx, const char *what, char *msg)
{
	IrError *err = ir_error(ictx, IR_ERR_BACKEND, (IrLoc){0}, "cpu backend: %s: %s", what,
				msg ? msg : "?");
	free(msg);
	return err;
}

/* Called with jit_mu held. */
static IrError *jit_init(IrCtx *ictx)
{
	if (jit)
		return NULL;
	be_llvm_init();
	LLVMOrcLLJITRef j;
	LLVMErrorRef e = LLVMOrcCreateLLJIT(&j, NULL);
	if (e)
		return llvm_error(ictx, "creating the JIT", take_error(e));
	LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j);
	LLVMOrcDefinitionGeneratorRef gen;
	e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(j), NULL, NULL);
	if (e)
		return llvm_error(ictx, "process symbols", take_error(e));
	LLVMOrcJITDylibAddGenerator(jd, gen);
	struct {
		const char *name;
		uint64_t addr;
	} helpers[] = {
		{"ct_cpu_assert_fail", (uint64_t)(uintptr_t)ct_cpu_assert_fail},
		{"ct_cpu_f32_to_f8", (uint64_t)(uintptr_t)ct_cpu_f32_to_f8},
		{"ct_cpu_f64_to_f16", (uint64_t)(uintptr_t)ct_cpu_f64_to_f16},
		{"ct_cpu_erfinv", (uint64_t)(uintptr_t)ct_cpu_erfinv},
		{"ct_cpu_san_ext", (uint64_t)(uintptr_t)ct_cpu_san_ext},
		{"ct_cpu_san_fail", (uint64_t)(uintptr_t)ct_cpu_san_fail},
		{"ct_cpu_san_any", (uint64_t)(uintptr_t)ct_cpu_san_any},
		{"ct_cpu_overflow_fail", (uint64_t)(uintptr_t)ct_cpu_overflow_fail},
		{"ct_cpu_hint_fail", (uint64_t)(uintptr_t)ct_cpu_hint_fail},
	};
	enum { NHELPERS = sizeof helpers / sizeof helpers[0] };
	LLVMOrcCSymbolMapPair pairs[NHELPERS];
	for (int i = 0; i < NHELPERS; i++) {
		pairs[i].Name = LLVMOrcLLJITMangleAndIntern(j, helpers[i].name);
		pairs[i].Sym.Address = helpers[i].addr;
		pairs[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
		pairs[i].Sym.Flags.TargetFlags = 0;
	}
	e = LLVMOrcJITDylibDefine(jd, LLVMOrcAbsoluteSymbols(pairs, NHELPERS));
	if (e)
		return llvm_error(ictx, "defining helpers", take_error(e));
	jit = j;
	return NULL;
}

static char *dupstr(const char *s, size_t n)
{
	char *r = malloc(n + 1);
	if (!r)
		abort();
	memcpy(r, s, n);
	r[n] = 0;
	return r;
}

/* The LLVM work of one compile that may hit a fatal error: O3 on mod, its
 * text, and host assembly emitted from a clone. */
typedef struct Codegen {
	LLVMModuleRef mod;
	LLVMTargetMachineRef tm;
	LLVMErrorRef perr;        /* from the pass pipeline */
	char *llir;               /* malloc'ed */
	char *emsg;               /* emission failure (LLVM message) */
	LLVMMemoryBufferRef buf;  /* the assembly */
	LLVMMemoryBufferRef obj;  /* the object file ORC links */
} Codegen;

static void run_codegen(void *p)
{
	Codegen *c = p;
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	c->perr = LLVMRunPasses(c->mod, "default<O3>", c->tm, po);
	LLVMDisposePassBuilderOptions(po);
	if (c->perr)
		return;
	char *ir = LLVMPrintModuleToString(c->mod);
	c->llir = dupstr(ir, strlen(ir));
	LLVMDisposeMessage(ir);
	/* code generation changes the IR it runs on: the text from a clone,
	 * then the object from the module itself */
	LLVMModuleRef clone = LLVMCloneModule(c->mod);
	if (LLVMTargetMachineEmitToMemoryBuffer(c->tm, clone, LLVMAssemblyFile, &c->emsg, &c->buf)) {
		if (!c->emsg)
			c->emsg = LLVMCreateMessage("emitting assembly failed");
		c->buf = NULL;
	}
	LLVMDisposeModule(clone);
	if (!c->emsg && LLVMTargetMachineEmitToMemoryBuffer(c->tm, c->mod, LLVMObjectFile, &c->emsg, &c->obj)) {
		if (!c->emsg)
			c->emsg = LLVMCreateMessage("emitting the object file failed");
		c->obj = NULL;
	}
}

IrError *be_cpu_compile(IrModule *m, const BeOptions *opt, BeCpuResult *out)
{
	memset(out, 0, sizeof *out);
	IrCtx *ictx = m->ctx;
	IrFunc *kernel = NULL;
	for (int i = 0; i < m->nfuncs && !kernel; i++)
		if (m->funcs[i]->is_kernel)
			kernel = m->funcs[i];
	if (!kernel)
		return ir_error(ictx, IR_ERR_BACKEND, (IrLoc){0}, "cpu backend: the module has no kernel");

	/* The process's JIT is shared (jit_mu); the lowering, O3 and code
	 * emission work on this compile's own LLVM context and run unlocked,
	 * so compiles on several threads overlap. */
	pthread_mutex_lock(&jit_mu);
	IrError *err = jit_init(ictx);
	int id = jit_count++;
	pthread_mutex_unlock(&jit_mu);
	if (err)
		return err;

	Cg cg;
	memset(&cg, 0, sizeof cg);
	cg.ictx = ictx;
	cg.m = m;
	if (opt)
		cg.opt = *opt;
	else
		be_options_default(&cg.opt);
	cg.ctx = LLVMContextCreate();
	BeLlvmDiag diag;
	be_llvm_watch(cg.ctx, &diag);
	char *ename = ir_fmt(ictx, "ct_kernel_%d_%s", id, kernel->name);
	cg.mod = LLVMModuleCreateWithNameInContext(ename, cg.ctx);
	cg.b = LLVMCreateBuilderInContext(cg.ctx);
	cg.ab = LLVMCreateBuilderInContext(cg.ctx);
	cg_init_types(&cg);

	char *triple = LLVMGetDefaultTargetTriple();
	char *cpu = LLVMGetHostCPUName();
	char *feats = LLVMGetHostCPUFeatures();
	LLVMTargetRef target;
	char *msg = NULL;
	LLVMTargetMachineRef tm = NULL;
	LLVMTargetDataRef dl = NULL;
	BeCpuKernel *k = NULL;
	int64_t scratch = 0;
	bool locked = false;
	if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
		err = ir_error(ictx, IR_ERR_BACKEND, (IrLoc){0}, "cpu backend: target %s: %s", triple, msg);
		LLVMDisposeMessage(msg);
		goto fail;
	}
	tm = LLVMCreateTargetMachine(target, triple, cpu, feats, LLVMCodeGenLevelAggressive, LLVMRelocPIC,
				     LLVMCodeModelJITDefault);
	LLVMSetTarget(cg.mod, triple);
	dl = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(cg.mod, dl);

	err = cg_lower_module(&cg, kernel, ename, &scratch);
	if (err)
		goto fail;
	if (LLVMVerifyModule(cg.mod, LLVMReturnStatusAction, &msg)) {
		err = ir_error(ictx, IR_ERR_INTERNAL, kernel->loc, "cpu backend: invalid LLVM IR: %.2000s", msg);
		LLVMDisposeMessage(msg);
		goto fail;
	}
	LLVMDisposeMessage(msg);
	msg = NULL;
	/* O3 and the assembly text, on a thread guarded against LLVM's fatal
	 * errors; error diagnostics land in diag */
	Codegen cw = {.mod = cg.mod, .tm = tm};
	char *fatal = be_llvm_guarded(run_codegen, &cw);
	if (fatal) {
		err = ir_error(ictx, IR_ERR_BACKEND, kernel->loc,
			       "cpu backend: LLVM fatal error in code generation: %s", fatal);
		free(fatal);
		/* the parked helper may still point into these: leak them */
		cg.mod = NULL;
		cg.ctx = NULL;
		cg.b = cg.ab = NULL;
		tm = NULL;
		goto fail;
	}
	out->llir = cw.llir;
	if (cw.perr) {
		err = llvm_error(ictx, "O3", take_error(cw.perr));
		goto fail;
	}
	if (cw.emsg || diag.failed) {
		err = ir_error(ictx, IR_ERR_BACKEND, kernel->loc, "cpu backend: LLVM: %s",
			       diag.failed ? diag.msg : cw.emsg);
		LLVMDisposeMessage(cw.emsg);
		if (cw.buf)
			LLVMDisposeMemoryBuffer(cw.buf);
		if (cw.obj)
			LLVMDisposeMemoryBuffer(cw.obj);
		goto fail;
	}
	out->asm_ = dupstr(LLVMGetBufferStart(cw.buf), LLVMGetBufferSize(cw.buf));
	LLVMDisposeMemoryBuffer(cw.buf);

	LLVMDisposeBuilder(cg.b);
	LLVMDisposeBuilder(cg.ab);
	cg.b = cg.ab = NULL;
	pthread_mutex_lock(&jit_mu);
	locked = true;
	LLVMOrcResourceTrackerRef rt = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(jit));
	LLVMErrorRef e = LLVMOrcLLJITAddObjectFileWithRT(jit, rt, cw.obj); /* takes cw.obj */
	cw.obj = NULL;
	if (e) {
		LLVMOrcReleaseResourceTracker(rt);
		err = llvm_error(ictx, "adding the object", take_error(e));
		goto fail;
	}
	LLVMOrcExecutorAddress addr = 0;
	e = LLVMOrcLLJITLookup(jit, &addr, ename);
	if (e) {
		LLVMErrorRef e2 = LLVMOrcResourceTrackerRemove(rt);
		if (e2)
			LLVMConsumeError(e2);
		LLVMOrcReleaseResourceTracker(rt);
		err = llvm_error(ictx, "linking the kernel", take_error(e));
		goto fail;
	}
	k = calloc(1, sizeof *k);
	if (!k)
		abort();
	k->entry = (CpuEntry)(uintptr_t)addr;
	k->scratch = scratch;
	k->rt = rt;
	k->name = dupstr(kernel->name, strlen(kernel->name));
	k->sanitize = cg.opt.sanitize;
	k->nparams = kernel->body->nargs;
	out->kernel = k;
	out->name = dupstr(kernel->name, strlen(kernel->name));
fail:
	if (cg.b)
		LLVMDisposeBuilder(cg.b);
	if (cg.ab)
		LLVMDisposeBuilder(cg.ab);
	if (cg.mod)
		LLVMDisposeModule(cg.mod);
	if (cg.ctx)
		LLVMContextDispose(cg.ctx);
	if (dl)
		LLVMDisposeTargetData(dl);
	if (tm)
		LLVMDisposeTargetMachine(tm);
	LLVMDisposeMessage(triple);
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(feats);
	if (locked)
		pthread_mutex_unlock(&jit_mu);
	if (err) {
		free(out->llir);
		free(out->asm_);
		memset(out, 0, sizeof *out);
	}
	return err;
}

void be_cpu_result_free(BeCpuResult *r)
{
	if (!r)
		return;
	free(r->name);
	free(r->llir);
	free(r->asm_);
	BeCpuKernel *k = r->kernel;
	if (k) {
		pthread_mutex_lock(&jit_mu);
		LLVMOrcResourceTrackerRef rt = k->rt;
		LLVMErrorRef e = LLVMOrcResourceTrackerRemove(rt);
		if (e)
			LLVMConsumeError(e);
		LLVMOrcReleaseResourceTracker(rt);
		pthread_mutex_unlock(&jit_mu);
		free(k->name);
		free(k);
	}
	memset(r, 0, sizeof *r);
}
