/* nvptx.c: be_nvptx_compile, the NVPTX pipeline for one kernel:
 *
 *   analysis (an_gpu_pipeline: axis info, layouts, conversions, scratch,
 *   barriers) -> TTGIR text -> per-thread LLVM IR (nv_lower_block in control.c,
 *   one file per op family) -> libdevice linked in when math needs it,
 *   everything but the kernel internalised -> LLVM O2 -> NVPTX target
 *   machine (sm_<arch>, +ptx<version>, default codegen level) -> PTX.
 *
 * The kernel uses LLVM's PTX kernel calling convention, "nvvm.maxntid" =
 * 32 * num_warps, and reads all shared memory from one external dynamic
 * shared array (`ct_smem`); BeGpuResult.shared is the size to launch with.
 */
#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nvptx.h"
#include "backend/llvm/llvm.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}


void be_gpu_result_free(BeGpuResult *r)
{
	if (!r)
		return;
	free(r->name);
	free(r->ttgir);
	free(r->llir);
	free(r->ptx);
	memset(r, 0, sizeof *r);
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s);
	char *d = malloc(n + 1);
	if (!d)
		abort();
	memcpy(d, s, n + 1);
	return d;
}

static IrFunc *find_kernel(IrModule *m)
{
	for (int i = 0; i < m->nfuncs; i++)
		if (m->funcs[i]->is_kernel)
			return m->funcs[i];
	return NULL;
}

static int readable(char *buf, size_t n, const char *dir, const char *file)
{
	if (!dir || !*dir)
		return 0;
	snprintf(buf, n, "%s%s", dir, file);
	return access(buf, R_OK) == 0;
}

int be_nvptx_libdevice_path(char *buf, size_t n)
{
	static const char *const rel = "/nvvm/libdevice/libdevice.10.bc";
	if (readable(buf, n, getenv("CTRITON_LIBDEVICE_PATH"), "") ||
	    readable(buf, n, getenv("TRITON_LIBDEVICE_PATH"), "") ||
	    readable(buf, n, getenv("CUDA_HOME"), rel) || readable(buf, n, getenv("CUDA_PATH"), rel) ||
	    readable(buf, n, "/usr/local/cuda", rel))
		return 1;
	/* the copy a wheel carries: lib/ beside the extension holding this code */
	Dl_info di;
	if (dladdr((void *)be_nvptx_libdevice_path, &di) && di.dli_fname) {
		const char *slash = strrchr(di.dli_fname, '/');
		char dir[4096];
		snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - di.dli_fname) : 1,
			 slash ? di.dli_fname : ".");
		if (readable(buf, n, dir, "/lib/libdevice.10.bc"))
			return 1;
	}
	return 0;
}

void be_llvm_version(unsigned *major, unsigned *minor, unsigned *patch)
{
	LLVMGetVersion(major, minor, patch);
}

static IrError *link_libdevice(Nv *nv)
{
	LLVMMemoryBufferRef buf = NULL;
	char *msg = NULL;
	char path[4096];
	if (!be_nvptx_libdevice_path(path, sizeof path))
		return ir_error(nv->ctx, IR_ERR_BACKEND, nv->f->loc,
				"libdevice.10.bc not found ($CTRITON_LIBDEVICE_PATH, $TRITON_LIBDEVICE_PATH, "
				"$CUDA_HOME, $CUDA_PATH, /usr/local/cuda, or the package's lib/)");
	if (LLVMCreateMemoryBufferWithContentsOfFile(path, &buf, &msg)) {
		IrError *e = ir_error(nv->ctx, IR_ERR_BACKEND, nv->f->loc, "cannot read libdevice %s: %s",
				      path, msg ? msg : "");
		LLVMDisposeMessage(msg);
		return e;
	}
	LLVMModuleRef dev = NULL;
	if (LLVMParseBitcodeInContext2(nv->c, buf, &dev)) {
		LLVMDisposeMemoryBuffer(buf);
		return ir_error(nv->ctx, IR_ERR_BACKEND, nv->f->loc, "cannot parse libdevice %s", path);
	}
	LLVMDisposeMemoryBuffer(buf);
	LLVMSetTarget(dev, LLVMGetTarget(nv->m));
	LLVMSetDataLayout(dev, LLVMGetDataLayoutStr(nv->m));
	if (LLVMLinkModules2(nv->m, dev))
		return ir_error(nv->ctx, IR_ERR_BACKEND, nv->f->loc, "linking libdevice failed");
	/* libdevice asks __nvvm_reflect("__CUDA_FTZ"): no flush to zero */
	LLVMTypeRef i32 = LLVMInt32TypeInContext(nv->c);
	LLVMAddModuleFlag(nv->m, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16,
			  LLVMValueAsMetadata(LLVMConstInt(i32, 0, 0)));
	return NULL;
}

static void internalize(LLVMModuleRef m, LLVMValueRef kernel)
{
	for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
		if (f == kernel || LLVMIsDeclaration(f))
			continue;
		LLVMSetLinkage(f, LLVMInternalLinkage);
	}
	for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g))
		if (!LLVMIsDeclaration(g))
			LLVMSetLinkage(g, LLVMInternalLinkage);
}

/* The device limit on dynamic shared memory per block (opt-in maximum). */
/* The LLVM work that may hit a fatal error: the pass pipeline, the IR text, PTX. */
typedef struct Codegen {
	LLVMModuleRef m;
	LLVMTargetMachineRef tm;
	const char *pipeline;    /* the pass pipeline string */
	LLVMErrorRef perr;       /* from the pass pipeline */
	char *llir;              /* LLVM message */
	char *emsg;              /* emission failure */
	LLVMMemoryBufferRef buf; /* the PTX */
	double ms_opt, ms_emit;
} Codegen;

static void run_codegen(void *p)
{
	Codegen *c = p;
	double t0 = now_ms();
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	c->perr = LLVMRunPasses(c->m, c->pipeline, c->tm, po);
	LLVMDisposePassBuilderOptions(po);
	if (c->perr)
		return;
	double t1 = now_ms();
	c->ms_opt = t1 - t0;
	c->llir = LLVMPrintModuleToString(c->m);
	if (LLVMTargetMachineEmitToMemoryBuffer(c->tm, c->m, LLVMAssemblyFile, &c->emsg, &c->buf)) {
		if (!c->emsg)
			c->emsg = LLVMCreateMessage("no message");
		c->buf = NULL;
	}
	c->ms_emit = now_ms() - t1;
}

static int64_t shared_limit(int arch)
{
	if (arch >= 90)
		return 232448;
	if (arch == 80 || arch == 87)
		return 166912;
	if (arch >= 86)
		return 101376;
	return 65536;
}

IrError *be_nvptx_compile(IrModule *m, const BeOptions *opt, const BeGpuTarget *target, BeGpuResult *out)
{
	memset(out, 0, sizeof *out);
	IrCtx *ctx = m->ctx;
	BeOptions dflt;
	if (!opt) {
		be_options_default(&dflt);
		opt = &dflt;
	}
	int arch = target && target->arch ? target->arch : 90;
	int ptxv = target && target->ptx_version ? target->ptx_version : 80;
	int warp = target && target->warp_size ? target->warp_size : 32;
	IrFunc *f = find_kernel(m);
	if (!f)
		return ir_error(ctx, IR_ERR_VALUE, (IrLoc){0}, "module has no kernel function");
	if (opt->num_warps < 1 || (opt->num_warps & (opt->num_warps - 1)) || opt->num_warps > 32)
		return ir_error(ctx, IR_ERR_VALUE, f->loc, "num_warps must be a power of two in 1..32, got %d",
				opt->num_warps);

	/* 1. TTIR -> TTGIR */
	double t0 = now_ms(), t1;
	AnGpuOptions ao = {opt->num_warps, warp, arch};
	int64_t shared = 0;
	IrError *err = an_gpu_pipeline(m, &ao, &shared);
	if (err)
		return err;
	if (shared > shared_limit(arch))
		return ir_error(ctx, IR_ERR_RESOURCE, f->loc,
				"out of resource: shared memory, Required: %lld, Hardware limit: %lld. Reducing block sizes or `num_stages` may help.",
				(long long)shared, (long long)shared_limit(arch));
	char *ttgir = ir_print_module(m);
	t1 = now_ms();
	double ms_ttgir = t1 - t0;
	t0 = t1;

	/* 2. TTGIR -> LLVM IR */
	be_llvm_init();
	Nv nv;
	memset(&nv, 0, sizeof nv);
	nv.ctx = ctx;
	nv.f = f;
	nv.opt = opt;
	nv.ao = ao;
	nv.ax = an_axis_info(f); /* also numbers the values for nv.vals */
	nv.nvals = an_number_values(f);
	nv.vals = ir_alloc(ctx, sizeof(NvVals) * (size_t)(nv.nvals + 1));
	nv.c = LLVMContextCreate();
	BeLlvmDiag diag;
	be_llvm_watch(nv.c, &diag);
	nv.m = LLVMModuleCreateWithNameInContext("ctriton", nv.c);
	LLVMSetTarget(nv.m, "nvptx64-nvidia-cuda");
	char cpu[16], feat[16];
	snprintf(cpu, sizeof cpu, "sm_%d%s", arch, arch == 90 ? "a" : ""); /* 90a: wgmma */
	snprintf(feat, sizeof feat, "+ptx%d", ptxv);
	LLVMTargetRef tgt;
	char *msg = NULL;
	if (LLVMGetTargetFromTriple("nvptx64-nvidia-cuda", &tgt, &msg)) {
		err = ir_error(ctx, IR_ERR_BACKEND, f->loc, "NVPTX target unavailable: %s", msg ? msg : "");
		LLVMDisposeMessage(msg);
		LLVMContextDispose(nv.c);
		return err;
	}
	/* Codegen at LLVM's default level, in less time than the aggressive
	 * one: ptxas allocates the registers, and the PTX is the same on the
	 * kernels of tests/python/test_ptxas.py but for the one-stage matmul,
	 * where the order differs and ptxas uses one register fewer.
	 * CTRITON_LLVM_CODEGEN=0..3 overrides it (experiments; part of the
	 * cache key). */
	const char *cgl = getenv("CTRITON_LLVM_CODEGEN");
	LLVMCodeGenOptLevel level = cgl && *cgl ? (LLVMCodeGenOptLevel)atoi(cgl) : LLVMCodeGenLevelDefault;
	LLVMTargetMachineRef tm = LLVMCreateTargetMachine(tgt, "nvptx64-nvidia-cuda", cpu, feat, level,
							  LLVMRelocDefault, LLVMCodeModelDefault);
	LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(nv.m, td);
	LLVMDisposeTargetData(td);

	int np = f->body->nargs;
	LLVMTypeRef *ptys = ir_alloc(ctx, sizeof(LLVMTypeRef) * (size_t)(np + 1));
	for (int i = 0; i < np; i++)
		ptys[i] = nv_llty(&nv, f->body->args[i]->type);
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(nv.c), ptys, (unsigned)np, 0);
	nv.fn = LLVMAddFunction(nv.m, f->name, fty);
	LLVMSetFunctionCallConv(nv.fn, LLVMPTXKernelCallConv);
	char ntid[16];
	snprintf(ntid, sizeof ntid, "%d", opt->num_warps * warp);
	LLVMAddAttributeAtIndex(nv.fn, LLVMAttributeFunctionIndex,
				LLVMCreateStringAttribute(nv.c, "nvvm.maxntid", 12, ntid, (unsigned)strlen(ntid)));
	for (int i = 0; i < np; i++) {
		const IrAttr *d = ir_find_attr(f->params[i].nattrs, f->params[i].attrs, "divisibility");
		if (ir_is_ptr(f->body->args[i]->type) && d && d->i >= 16) {
			unsigned ak = LLVMGetEnumAttributeKindForName("align", 5);
			LLVMAddAttributeAtIndex(nv.fn, (unsigned)i + 1, LLVMCreateEnumAttribute(nv.c, ak, 16));
		}
	}
	nv.b = LLVMCreateBuilderInContext(nv.c);
	LLVMPositionBuilderAtEnd(nv.b, LLVMAppendBasicBlockInContext(nv.c, nv.fn, "entry"));
	LLVMTypeRef smty = LLVMArrayType2(LLVMInt8TypeInContext(nv.c), 0);
	nv.smem = LLVMAddGlobalInAddressSpace(nv.m, smty, "ct_smem", 3);
	LLVMSetLinkage(nv.smem, LLVMExternalLinkage);
	LLVMSetAlignment(nv.smem, 1024); /* swizzled tiles: see analysis/alloc.c */
	nv.tid = nv_intrinsic(&nv, "llvm.nvvm.read.ptx.sreg.tid.x", NULL, 0, NULL, 0);
	nv.lane = LLVMBuildAnd(nv.b, nv.tid, nv_i32(&nv, warp - 1), "lane");
	nv.warp = LLVMBuildUDiv(nv.b, nv.tid, nv_i32(&nv, warp), "warp");
	for (int i = 0; i < np; i++) {
		LLVMValueRef p = LLVMGetParam(nv.fn, (unsigned)i);
		nv.vals[f->body->args[i]->id].n = 1;
		nv.vals[f->body->args[i]->id].v = ir_alloc(ctx, sizeof(LLVMValueRef));
		nv.vals[f->body->args[i]->id].v[0] = p;
	}
	nv_lower_block(&nv, f->body);
	if (!nv.err && !LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(nv.b)))
		LLVMBuildRetVoid(nv.b);
	LLVMDisposeBuilder(nv.b);
	if (!nv.err && LLVMVerifyModule(nv.m, LLVMReturnStatusAction, &msg)) {
		nv.err = ir_error(ctx, IR_ERR_INTERNAL, f->loc, "invalid LLVM IR from the NVPTX lowering: %s", msg);
		LLVMDisposeMessage(msg);
		msg = NULL;
	} else if (msg) {
		LLVMDisposeMessage(msg);
		msg = NULL;
	}
	if (!nv.err && nv.need_libdevice)
		nv.err = link_libdevice(&nv);
	if (nv.err) {
		LLVMDisposeTargetMachine(tm);
		LLVMContextDispose(nv.c);
		return nv.err;
	}
	internalize(nv.m, nv.fn);
	t1 = now_ms();
	double ms_llir = t1 - t0;
	t0 = t1;

	/* 3. LLVM's O2 pipeline and PTX, on a thread guarded against LLVM's
	 *    fatal errors. On this IR (one function, everything else
	 *    internalised) O2 gives the PTX O3 gives, byte for byte, on the
	 *    kernels of tests/python/test_ptxas.py and bench/compile_time.py, in
	 *    less time; CTRITON_LLVM_PIPELINE (a pass pipeline string) overrides
	 *    it (experiments; part of the cache key). */
	const char *pipeline = getenv("CTRITON_LLVM_PIPELINE");
	Codegen cw = {.m = nv.m, .tm = tm, .pipeline = pipeline && *pipeline ? pipeline : "default<O2>"};
	char *fatal = be_llvm_guarded(run_codegen, &cw);
	if (fatal || cw.perr || cw.emsg || diag.failed) {
		if (fatal)
			err = ir_error(ctx, IR_ERR_BACKEND, f->loc, "LLVM fatal error in NVPTX code generation: %s",
				       fatal);
		else if (cw.perr) {
			char *em = LLVMGetErrorMessage(cw.perr);
			err = ir_error(ctx, IR_ERR_BACKEND, f->loc, "LLVM optimisation failed: %s", em);
			LLVMDisposeErrorMessage(em);
		} else
			err = ir_error(ctx, IR_ERR_BACKEND, f->loc, "PTX emission failed: %s",
				       diag.failed ? diag.msg : cw.emsg);
		free(fatal);
		if (!fatal) { /* else the parked helper may still use them: leaked */
			LLVMDisposeMessage(cw.emsg);
			LLVMDisposeMessage(cw.llir);
			if (cw.buf)
				LLVMDisposeMemoryBuffer(cw.buf);
			LLVMDisposeTargetMachine(tm);
			LLVMContextDispose(nv.c);
		}
		return err;
	}
	double ms_opt = cw.ms_opt;
	t0 = now_ms() - cw.ms_emit;
	char *llir = cw.llir;
	LLVMMemoryBufferRef buf = cw.buf;
	size_t n = LLVMGetBufferSize(buf);
	out->ptx = malloc(n + 1);
	if (!out->ptx)
		abort();
	memcpy(out->ptx, LLVMGetBufferStart(buf), n);
	out->ptx[n] = 0;
	LLVMDisposeMemoryBuffer(buf);
	out->llir = xstrdup(llir);
	LLVMDisposeMessage(llir);
	out->name = xstrdup(f->name);
	out->ttgir = xstrdup(ttgir ? ttgir : "");
	out->shared = (int)shared;
	out->num_warps = opt->num_warps;
	out->ms_ttgir = ms_ttgir;
	out->ms_llir = ms_llir;
	out->ms_opt = ms_opt;
	out->ms_emit = now_ms() - t0;
	LLVMDisposeTargetMachine(tm);
	LLVMContextDispose(nv.c);
	return NULL;
}
