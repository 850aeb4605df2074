/* nvptx.c: the NVPTX stages the compile pipeline (jit/pipeline.c) runs on
 * a TTGIR module, one function each:
 *
 *   be_nvptx_lower     TTGIR -> per-thread LLVM IR (nv_lower_block in
 *                      control.c, one file per op family), libdevice linked
 *                      in when math needs it (BeOptions.libdevice, else the
 *                      one found; extern_libs after it), everything but the kernel
 *                      internalised, for the NVPTX target machine
 *                      (sm_<arch>, +ptx<version>);
 *   be_nvptx_optimize  LLVM O3;
 *   be_nvptx_emit      PTX text.
 *
 * The kernel uses LLVM's PTX kernel calling convention, "nvvm.maxntid" =
 * 32 * num_warps ("nvvm.maxnreg" with the maxnreg option), and reads all
 * shared memory from one external dynamic shared array (`ct_smem`); the
 * shared allocation's total is the size to launch with. The noinline
 * functions it reaches become PTX .func device functions, lowered one
 * after the other into the same module (declared first, so calls can name
 * them): each takes the registers its thread holds of every argument (in
 * the register order of the argument's layout, canonical at calls: see
 * analysis/call.c), then, when it uses shared memory, a pointer to the
 * scratch its caller reserved for the call; it returns one register, or a
 * struct of all its results' registers. LLVM's noinline keeps it a call.
 */
#include <llvm-c/Analysis.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvptx.h"
#include "backend/llvm/llvm.h"

struct BeNvModule {
	IrCtx *ctx; /* the compilation's, for errors */
	IrLoc loc;  /* the kernel's */
	LLVMContextRef c;
	LLVMModuleRef m;
	LLVMTargetMachineRef tm;
	BeLlvmDiag diag; /* the context's error diagnostics */
	bool lost;       /* after a fatal LLVM error: c, m and tm stay the parked helper's */
};

void be_nvptx_module_free(BeNvModule *nm)
{
	if (!nm)
		return;
	if (nm->lost) /* the parked helper may still use them: leaked */
		return;
	if (nm->tm)
		LLVMDisposeTargetMachine(nm->tm);
	if (nm->c)
		LLVMContextDispose(nm->c);
	free(nm);
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

/* Links the LLVM bitcode or IR text file at path into nv's module (what:
 * its role, for messages). */
static IrError *link_bitcode(Nv *nv, const char *what, const char *path)
{
	LLVMMemoryBufferRef buf = NULL;
	char *msg = NULL;
	if (LLVMCreateMemoryBufferWithContentsOfFile(path, &buf, &msg)) {
		IrError *e = ir_error(nv->ctx, IR_ERR_BACKEND, nv->f->loc, "cannot read %s %s: %s", what, path,
				      msg ? msg : "");
		LLVMDisposeMessage(msg);
		return e;
	}
	LLVMModuleRef dev = NULL;
	if (LLVMParseIRInContext2(nv->c, buf, &dev, &msg)) {
		LLVMDisposeMemoryBuffer(buf);
		IrError *e = ir_error(nv->ctx, IR_ERR_BACKEND, nv->f->loc,
				      "cannot parse %s %s (LLVM bitcode or IR text): %s", what, path, msg ? msg : "");
		LLVMDisposeMessage(msg);
		return e;
	}
	LLVMDisposeMemoryBuffer(buf);
	LLVMSetTarget(dev, LLVMGetTarget(nv->m));
	LLVMSetDataLayout(dev, LLVMGetDataLayoutStr(nv->m));
	if (LLVMLinkModules2(nv->m, dev))
		return ir_error(nv->ctx, IR_ERR_BACKEND, nv->f->loc, "linking %s %s failed", what, path);
	return NULL;
}

/* Links libdevice (the options' one, else the one found) and the options'
 * other extern libraries, as Triton links extern_libs when the module has
 * external calls. */
static IrError *link_libdevice(Nv *nv)
{
	char path[4096];
	const char *ld = nv->opt->libdevice;
	if (!ld) {
		if (!be_nvptx_libdevice_path(path, sizeof path))
			return ir_error(nv->ctx, IR_ERR_BACKEND, nv->f->loc,
					"libdevice.10.bc not found ($CTRITON_LIBDEVICE_PATH, $TRITON_LIBDEVICE_PATH, "
					"$CUDA_HOME, $CUDA_PATH, /usr/local/cuda, or the package's lib/)");
		ld = path;
	}
	IrError *e = link_bitcode(nv, "libdevice", ld);
	for (int i = 0; !e && i < nv->opt->nextern_libs; i++)
		e = link_bitcode(nv, "extern library", nv->opt->extern_libs[i]);
	if (e)
		return e;
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
int64_t be_nvptx_shared_limit(int arch)
{
	return an_shared_limit(arch);
}

IrError *be_nvptx_check_options(IrModule *m, const BeOptions *opt)
{
	IrFunc *f = find_kernel(m);
	if (!f)
		return ir_error(m->ctx, IR_ERR_VALUE, (IrLoc){0}, "module has no kernel function");
	if (opt->num_warps < 1 || (opt->num_warps & (opt->num_warps - 1)) || opt->num_warps > 32)
		return ir_error(m->ctx, IR_ERR_VALUE, f->loc, "num_warps must be a power of two in 1..32, got %d",
				opt->num_warps);
	return NULL;
}

IrError *be_nvptx_check_shared(IrModule *m, int arch, int64_t shared)
{
	IrFunc *f = find_kernel(m);
	if (shared > be_nvptx_shared_limit(arch))
		return ir_error(m->ctx, IR_ERR_RESOURCE, f ? f->loc : (IrLoc){0},
				"out of resource: shared memory, Required: %lld, Hardware limit: %lld. Reducing block "
				"sizes or `num_stages` may help.",
				(long long)shared, (long long)be_nvptx_shared_limit(arch));
	return NULL;
}

/* The kernel: PTX kernel calling convention, one parameter per IR
 * parameter (scalars and pointers), nvvm.maxntid = 32 x num_warps (plus
 * the producer's warps of a warp-specialized kernel). */
static LLVMValueRef declare_kernel(Nv *nv, IrFunc *f, int warp)
{
	IrCtx *ctx = nv->ctx;
	int np = f->body->nargs;
	LLVMTypeRef *ptys = ir_alloc(ctx, sizeof(LLVMTypeRef) * (size_t)(np + 1));
	for (int i = 0; i < np; i++)
		ptys[i] = ir_find_attr(f->params[i].nattrs, f->params[i].attrs, "tensormap")
				  ? LLVMPointerTypeInContext(nv->c, 0)
				  : nv_llty(nv, f->body->args[i]->type);
	/* the global scratch buffer, after every other parameter (the launcher's
	 * order: arguments, tensor maps, scratch) */
	bool gs = an_global_scratch(f) > 0;
	if (gs)
		ptys[np] = LLVMPointerTypeInContext(nv->c, 1);
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(nv->c), ptys, (unsigned)(np + gs), 0);
	LLVMValueRef fn = LLVMAddFunction(nv->m, f->name, fty);
	LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
	char ntid[16];
	snprintf(ntid, sizeof ntid, "%d", (nv->opt->num_warps + nv->ws_warps) * warp);
	LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
				LLVMCreateStringAttribute(nv->c, "nvvm.maxntid", 12, ntid, (unsigned)strlen(ntid)));
	if (nv->opt->maxnreg > 0) { /* the kernel's own: a .func has none */
		char nreg[16];
		snprintf(nreg, sizeof nreg, "%d", nv->opt->maxnreg);
		LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
					LLVMCreateStringAttribute(nv->c, "nvvm.maxnreg", 12, nreg, (unsigned)strlen(nreg)));
	}
	for (int i = 0; i < np; i++) {
		/* a tensor map (a TensorDescriptor's CUtensorMap, encoded at launch):
		 * 128 bytes by value, 64-byte aligned, addressed in place (grid
		 * constant: cvta.param, no copy) */
		if (ir_find_attr(f->params[i].nattrs, f->params[i].attrs, "tensormap")) {
			unsigned bk = LLVMGetEnumAttributeKindForName("byval", 5);
			unsigned ak = LLVMGetEnumAttributeKindForName("align", 5);
			LLVMTypeRef mt = LLVMArrayType2(LLVMInt8TypeInContext(nv->c), 128);
			LLVMAddAttributeAtIndex(fn, (unsigned)i + 1, LLVMCreateTypeAttribute(nv->c, bk, mt));
			LLVMAddAttributeAtIndex(fn, (unsigned)i + 1, LLVMCreateEnumAttribute(nv->c, ak, 64));
			LLVMAddAttributeAtIndex(fn, (unsigned)i + 1,
						LLVMCreateStringAttribute(nv->c, "nvvm.grid_constant", 18, "", 0));
			continue;
		}
		const IrAttr *d = ir_find_attr(f->params[i].nattrs, f->params[i].attrs, "divisibility");
		if (ir_is_ptr(f->body->args[i]->type) && d && d->i >= 16) {
			unsigned ak = LLVMGetEnumAttributeKindForName("align", 5);
			LLVMAddAttributeAtIndex(fn, (unsigned)i + 1, LLVMCreateEnumAttribute(nv->c, ak, 16));
		}
	}
	return fn;
}

static void add_fn_attr(Nv *nv, LLVMValueRef fn, const char *name)
{
	unsigned k = LLVMGetEnumAttributeKindForName(name, strlen(name));
	LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(nv->c, k, 0));
}

/* A noinline function: a PTX .func (internal, LLVM's noinline; convergent,
 * since it may hold barriers) of the signature nv_callee_type gives. */
static LLVMValueRef declare_callee(Nv *nv, IrFunc *g)
{
	LLVMValueRef fn = LLVMAddFunction(nv->m, g->name, nv_callee_type(nv, g));
	LLVMSetLinkage(fn, LLVMInternalLinkage);
	add_fn_attr(nv, fn, "noinline");
	add_fn_attr(nv, fn, "convergent");
	add_fn_attr(nv, fn, "nounwind");
	if (an_func_shared(g) > 0) {
		unsigned ak = LLVMGetEnumAttributeKindForName("align", 5);
		unsigned last = LLVMCountParams(fn);
		LLVMAddAttributeAtIndex(fn, last, LLVMCreateEnumAttribute(nv->c, ak, an_func_shared(g) >= 1024 ? 1024 : 16));
	}
	return fn;
}

/* Lowers the body of f into fn with the module-wide state of *mod (its
 * context, module, target, shared array); what the lowering leaves for the
 * module (an error, libdevice use, the string counter) goes back to it. */
static void lower_func(Nv *mod, IrFunc *f, LLVMValueRef fn)
{
	IrCtx *ctx = mod->ctx;
	Nv nv;
	memset(&nv, 0, sizeof nv);
	nv.ctx = ctx;
	nv.f = f;
	nv.opt = mod->opt;
	nv.ao = mod->ao;
	nv.ptx = mod->ptx;
	nv.c = mod->c;
	nv.m = mod->m;
	nv.b = mod->b;
	nv.fn = fn;
	nv.smem = mod->smem;
	nv.nstr = mod->nstr;
	nv.ws_warps = mod->ws_warps;
	nv.ax = an_axis_info(f); /* also numbers the values for nv.vals */
	nv.nvals = an_number_values(f);
	nv.vals = ir_alloc(ctx, sizeof(NvVals) * (size_t)(nv.nvals + 1));
	LLVMPositionBuilderAtEnd(nv.b, LLVMAppendBasicBlockInContext(nv.c, fn, "entry"));
	nv.tid = nv_intrinsic(&nv, "llvm.nvvm.read.ptx.sreg.tid.x", NULL, 0, NULL, 0);
	nv.lane = LLVMBuildAnd(nv.b, nv.tid, nv_i32(&nv, nv.ao.warp_size - 1), "lane");
	/* the warp id read back from lane 0 (as Triton does): ptxas then knows
	 * it is the same in every lane and keeps what derives from it (a
	 * warpgroup's matrix descriptors, slot addresses) in uniform registers */
	LLVMValueRef wargs[4] = {nv_i32(&nv, -1), LLVMBuildUDiv(nv.b, nv.tid, nv_i32(&nv, nv.ao.warp_size), ""),
				 nv_i32(&nv, 0), nv_i32(&nv, 0x1f)};
	nv.warp = nv_intrinsic(&nv, "llvm.nvvm.shfl.sync.idx.i32", NULL, 0, wargs, 4);
	unsigned k = 0;
	for (int i = 0; i < f->body->nargs; i++) {
		const IrValue *a = f->body->args[i];
		int n = f->is_kernel ? 1 : nv_map_nregs(&nv, a->type);
		LLVMValueRef *regs = nv_regbuf(&nv, n);
		for (int r = 0; r < n; r++)
			regs[r] = LLVMGetParam(fn, k++);
		nv_set(&nv, a, n, regs);
	}
	if (!f->is_kernel && an_func_shared(f) > 0)
		nv.smem = LLVMGetParam(fn, k++); /* this call's scratch */
	if (f->is_kernel && an_global_scratch(f) > 0)
		nv.gscratch = LLVMGetParam(fn, k++);
	nv.smem32 = LLVMBuildPtrToInt(nv.b, nv.smem, LLVMInt32TypeInContext(nv.c), "smem32");
	nv_lower_block(&nv, f->body);
	if (!nv.err && !LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(nv.b)))
		nv_lower_return(&nv, NULL);
	/* the shuffle is convergent, so LLVM keeps it even when unused */
	if (!LLVMGetFirstUse(nv.warp))
		LLVMInstructionEraseFromParent(nv.warp);
	mod->err = nv.err;
	mod->need_libdevice |= nv.need_libdevice;
	mod->nstr = nv.nstr;
}

static void find_fp8_dot(IrOp *op, void *user)
{
	if (op->opc == OP_DOT && op->nops > 0 && ir_is_block(op->ops[0]->type)) {
		IrTypeKind k = ir_scalar(op->ops[0]->type)->kind;
		if (k == TY_F8E4M3 || k == TY_F8E5M2)
			*(bool *)user = true;
	}
}

IrError *be_nvptx_lower(IrModule *m, const BeOptions *opt, const BeGpuTarget *target, BeNvModule **out)
{
	*out = NULL;
	IrCtx *ctx = m->ctx;
	BeOptions dflt;
	if (!opt) {
		be_options_default(&dflt);
		opt = &dflt;
	}
	int arch = target && target->arch ? target->arch : 90;
	int ptxv = target && target->ptx_version ? target->ptx_version : 80;
	int warp = target && target->warp_size ? target->warp_size : 32;
	IrError *err = be_nvptx_check_options(m, opt);
	if (err)
		return err;
	IrFunc *f = find_kernel(m);
	/* a kernel that makes tensor maps (tmap.c): tensormap.replace and the
	 * tensormap proxy fences (PTX 8.3), the stride in bytes (PTX 8.6 on;
	 * Triton's choice too) */
	if (f && an_global_scratch(f) > 0 && ptxv < 87)
		ptxv = 87;
	/* an mma.sync on fp8 operands (sm_89 on): PTX 8.4 */
	bool f8 = false;
	if (f)
		ir_walk_func(f, find_fp8_dot, &f8);
	if (f8 && ptxv < 84)
		ptxv = 84;

	be_llvm_init();
	Nv nv;
	memset(&nv, 0, sizeof nv);
	nv.ctx = ctx;
	nv.f = f;
	nv.opt = opt;
	nv.ao = (AnGpuOptions){opt->num_warps, warp, arch};
	nv.ptx = ptxv;
	const IrAttr *wsa = ir_find_attr(m->nattrs, m->attrs, "ws_warps");
	nv.ws_warps = wsa && wsa->kind == ATTR_INT ? (int)wsa->i : 0;
	nv.c = LLVMContextCreate();
	BeNvModule *nm = calloc(1, sizeof *nm);
	if (!nm)
		abort();
	be_llvm_watch(nv.c, &nm->diag);
	nv.m = LLVMModuleCreateWithNameInContext("ctriton", nv.c);
	LLVMSetTarget(nv.m, "nvptx64-nvidia-cuda");
	char cpu[16], feat[16];
	/* the PTX target: the device's where the code is an older arch's (Triton's
	 * arch= option: sm_80 code assembled for the sm_90 it runs on) */
	int parch = target && target->ptx_arch > arch ? target->ptx_arch : arch;
	snprintf(cpu, sizeof cpu, "sm_%d%s", parch, parch == 90 ? "a" : ""); /* 90a: wgmma */
	snprintf(feat, sizeof feat, "+ptx%d", ptxv);
	LLVMTargetRef tgt;
	char *msg = NULL;
	if (LLVMGetTargetFromTriple("nvptx64-nvidia-cuda", &tgt, &msg)) {
		err = ir_error(ctx, IR_ERR_BACKEND, f->loc, "NVPTX target unavailable: %s", msg ? msg : "");
		LLVMDisposeMessage(msg);
		LLVMContextDispose(nv.c);
		free(nm);
		return err;
	}
	LLVMTargetMachineRef tm = LLVMCreateTargetMachine(tgt, "nvptx64-nvidia-cuda", cpu, feat, LLVMCodeGenLevelAggressive,
							  LLVMRelocDefault, LLVMCodeModelDefault);
	LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(nv.m, td);
	LLVMDisposeTargetData(td);

	IrFunc **fs;
	int nf;
	err = an_call_order(f, &fs, &nf);
	if (err) {
		LLVMDisposeTargetMachine(tm);
		LLVMContextDispose(nv.c);
		free(nm);
		return err;
	}
	LLVMTypeRef smty = LLVMArrayType2(LLVMInt8TypeInContext(nv.c), 0);
	nv.smem = LLVMAddGlobalInAddressSpace(nv.m, smty, "ct_smem", 3);
	LLVMSetLinkage(nv.smem, LLVMExternalLinkage);
	LLVMSetAlignment(nv.smem, 1024); /* swizzled tiles: see analysis/alloc.c */
	LLVMValueRef *fns = ir_alloc(ctx, sizeof(LLVMValueRef) * (size_t)(nf + 1));
	for (int i = 0; i < nf; i++)
		fns[i] = fs[i] == f ? declare_kernel(&nv, f, warp) : declare_callee(&nv, fs[i]);
	nv.b = LLVMCreateBuilderInContext(nv.c);
	for (int i = 0; i < nf && !nv.err; i++)
		lower_func(&nv, fs[i], fns[i]);
	nv.fn = fns[nf - 1]; /* the kernel, last of the call order */
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
		free(nm);
		return nv.err;
	}
	internalize(nv.m, nv.fn);
	nm->ctx = ctx;
	nm->loc = f->loc;
	nm->c = nv.c;
	nm->m = nv.m;
	nm->tm = tm;
	*out = nm;
	return NULL;
}

/* The LLVM work that may hit a fatal error (O3, the IR text, PTX), each run
 * by be_llvm_guarded on its helper thread. */
typedef struct Codegen {
	BeNvModule *nm;
	LLVMErrorRef perr;       /* from the pass pipeline */
	char *text;              /* the LLVM IR text (LLVM message) */
	char *emsg;              /* emission failure */
	LLVMMemoryBufferRef buf; /* the PTX */
} Codegen;

static void run_opt(void *p)
{
	Codegen *c = p;
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	c->perr = LLVMRunPasses(c->nm->m, "default<O3>", c->nm->tm, po);
	LLVMDisposePassBuilderOptions(po);
}

static void run_print(void *p)
{
	Codegen *c = p;
	c->text = LLVMPrintModuleToString(c->nm->m);
}

static void run_emit(void *p)
{
	Codegen *c = p;
	if (LLVMTargetMachineEmitToMemoryBuffer(c->nm->tm, c->nm->m, LLVMAssemblyFile, &c->emsg, &c->buf)) {
		if (!c->emsg)
			c->emsg = LLVMCreateMessage("no message");
		c->buf = NULL;
	}
}

/* Runs fn on the guarded thread. A fatal error becomes an error value and
 * leaves the module lost (leaked, never touched again). */
static IrError *guarded(BeNvModule *nm, void (*fn)(void *), Codegen *cw, const char *what)
{
	if (nm->lost)
		return ir_error(nm->ctx, IR_ERR_BACKEND, nm->loc,
				"LLVM module unusable after an earlier fatal error in NVPTX code generation");
	char *fatal = be_llvm_guarded(fn, cw);
	if (!fatal)
		return NULL;
	nm->lost = true;
	IrError *err = ir_error(nm->ctx, IR_ERR_BACKEND, nm->loc, "LLVM fatal error in NVPTX %s: %s", what, fatal);
	free(fatal);
	return err;
}

IrError *be_nvptx_optimize(BeNvModule *nm)
{
	Codegen cw = {.nm = nm};
	IrError *err = guarded(nm, run_opt, &cw, "code generation");
	if (err)
		return err;
	if (cw.perr) {
		char *em = LLVMGetErrorMessage(cw.perr);
		err = ir_error(nm->ctx, IR_ERR_BACKEND, nm->loc, "LLVM optimisation failed: %s", em);
		LLVMDisposeErrorMessage(em);
		return err;
	}
	if (nm->diag.failed)
		return ir_error(nm->ctx, IR_ERR_BACKEND, nm->loc, "LLVM optimisation failed: %s", nm->diag.msg);
	return NULL;
}

char *be_nvptx_llir(BeNvModule *nm)
{
	Codegen cw = {.nm = nm};
	if (nm->lost || guarded(nm, run_print, &cw, "IR printing"))
		return xstrdup("");
	char *r = xstrdup(cw.text ? cw.text : "");
	LLVMDisposeMessage(cw.text);
	return r;
}

IrError *be_nvptx_emit(BeNvModule *nm, char **ptx)
{
	*ptx = NULL;
	Codegen cw = {.nm = nm};
	IrError *err = guarded(nm, run_emit, &cw, "code generation");
	if (err)
		return err;
	if (cw.emsg || nm->diag.failed) {
		err = ir_error(nm->ctx, IR_ERR_BACKEND, nm->loc, "PTX emission failed: %s",
			       nm->diag.failed ? nm->diag.msg : cw.emsg);
		LLVMDisposeMessage(cw.emsg);
		if (cw.buf)
			LLVMDisposeMemoryBuffer(cw.buf);
		return err;
	}
	size_t n = LLVMGetBufferSize(cw.buf);
	*ptx = malloc(n + 1);
	if (!*ptx)
		abort();
	memcpy(*ptx, LLVMGetBufferStart(cw.buf), n);
	(*ptx)[n] = 0;
	LLVMDisposeMemoryBuffer(cw.buf);
	return NULL;
}
