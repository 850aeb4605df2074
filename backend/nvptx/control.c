/* control.c: structured control flow (for / if / while become basic blocks
 * with one phi per register), calls of noinline functions and returns (the
 * registers of the arguments in, one register or a struct of them out),
 * print (vprintf) and assert (__assertfail), griddepcontrol, and the op
 * dispatch: nv_lower_op, nv_lower_block.
 */
#include <stdio.h>
#include <string.h>

#include <llvm-c/DebugInfo.h>

#include "nvptx.h"

/* ------------------------------------------------------------------------- */
/* Debugging                                                                 */
/* ------------------------------------------------------------------------- */

static LLVMValueRef sreg(Nv *nv, const char *name)
{
	return nv_intrinsic(nv, name, NULL, 0, NULL, 0);
}

static LLVMValueRef global_str(Nv *nv, const char *s)
{
	char name[32];
	snprintf(name, sizeof name, "ct_str%d", nv->nstr++);
	LLVMValueRef init = LLVMConstStringInContext2(nv->c, s, strlen(s), 0);
	LLVMValueRef g = LLVMAddGlobalInAddressSpace(nv->m, LLVMTypeOf(init), name, 1);
	LLVMSetInitializer(g, init);
	LLVMSetGlobalConstant(g, 1);
	LLVMSetLinkage(g, LLVMInternalLinkage);
	return LLVMBuildAddrSpaceCast(nv->b, g, LLVMPointerTypeInContext(nv->c, 0), "");
}

static void lower_print(Nv *nv, IrOp *op)
{
	LLVMTypeRef p0 = LLVMPointerTypeInContext(nv->c, 0), i32 = LLVMInt32TypeInContext(nv->c);
	LLVMTypeRef fty = LLVMFunctionType(i32, (LLVMTypeRef[]){p0, p0}, 2, 0);
	LLVMValueRef fn = LLVMGetNamedFunction(nv->m, "vprintf");
	if (!fn)
		fn = LLVMAddFunction(nv->m, "vprintf", fty);
	const char *prefix = ir_op_str(op, "prefix", "");
	bool hex = ir_op_int(op, "hex", 0) != 0;
	LLVMValueRef pid[3] = {sreg(nv, "llvm.nvvm.read.ptx.sreg.ctaid.x"), sreg(nv, "llvm.nvvm.read.ptx.sreg.ctaid.y"),
			       sreg(nv, "llvm.nvvm.read.ptx.sreg.ctaid.z")};
	if (op->nops == 0) {
		char *fmt = ir_fmt(nv->ctx, "pid (%%d, %%d, %%d) %s\n", prefix);
		LLVMTypeRef sty = LLVMStructTypeInContext(nv->c, (LLVMTypeRef[]){i32, i32, i32}, 3, 0);
		LLVMValueRef buf = LLVMBuildAlloca(nv->b, sty, "");
		for (int i = 0; i < 3; i++)
			LLVMBuildStore(nv->b, pid[i], LLVMBuildStructGEP2(nv->b, sty, buf, (unsigned)i, ""));
		LLVMBuildCall2(nv->b, fty, fn, (LLVMValueRef[]){global_str(nv, fmt), LLVMBuildAddrSpaceCast(nv->b, buf, p0, "")}, 2, "");
		return;
	}
	for (int i = 0; i < op->nops; i++) {
		IrValue *v = op->ops[i];
		const IrType *et = ir_scalar(v->type);
		NvMap m;
		nv_map_init(nv, v->type, &m);
		const char *f = hex ? "0x%llx" : ir_is_float(et) ? "%f" : ir_is_ptr(et) ? "%p" : ir_is_signed(et) ? "%lld" : "%llu";
		char *fmt = ir_fmt(nv->ctx, "pid (%%d, %%d, %%d) idx (%%d) %s%s\n", prefix, f);
		LLVMValueRef s = global_str(nv, fmt);
		LLVMTypeRef vt = ir_is_float(et) && !hex ? LLVMDoubleTypeInContext(nv->c) : ir_is_ptr(et) ? p0 : LLVMInt64TypeInContext(nv->c);
		LLVMTypeRef sty = LLVMStructTypeInContext(nv->c, (LLVMTypeRef[]){i32, i32, i32, i32, vt}, 5, 0);
		for (int r = 0; r < m.n; r++) {
			LLVMValueRef x = nv_reg(nv, v, r);
			if (ir_is_float(et))
				x = hex ? LLVMBuildZExt(nv->b, LLVMBuildBitCast(nv->b, x, LLVMIntTypeInContext(nv->c, (unsigned)ir_type_bits(et)), ""), vt, "")
					: LLVMBuildFPExt(nv->b, x, vt, "");
			else if (ir_is_ptr(et))
				x = LLVMBuildAddrSpaceCast(nv->b, x, p0, "");
			else
				x = ir_is_signed(et) ? LLVMBuildSExt(nv->b, x, vt, "") : LLVMBuildZExt(nv->b, x, vt, "");
			if (LLVMTypeOf(x) != vt)
				x = LLVMBuildBitCast(nv->b, x, vt, "");
			LLVMValueRef buf = LLVMBuildAlloca(nv->b, sty, "");
			LLVMValueRef f4[5] = {pid[0], pid[1], pid[2], nv_map_lin(nv, &m, v->type, r), x};
			for (int q = 0; q < 5; q++)
				LLVMBuildStore(nv->b, f4[q], LLVMBuildStructGEP2(nv->b, sty, buf, (unsigned)q, ""));
			LLVMBuildCall2(nv->b, fty, fn, (LLVMValueRef[]){s, LLVMBuildAddrSpaceCast(nv->b, buf, p0, "")}, 2, "");
		}
	}
}

static void lower_assert(Nv *nv, IrOp *op)
{
	LLVMTypeRef p0 = LLVMPointerTypeInContext(nv->c, 0), i32 = LLVMInt32TypeInContext(nv->c);
	LLVMTypeRef i64 = LLVMInt64TypeInContext(nv->c);
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(nv->c), (LLVMTypeRef[]){p0, p0, i32, p0, i64}, 5, 0);
	LLVMValueRef fn = LLVMGetNamedFunction(nv->m, "__assertfail");
	if (!fn)
		fn = LLVMAddFunction(nv->m, "__assertfail", fty);
	IrValue *c = op->ops[0];
	int n = nv_map_nregs(nv, c->type);
	LLVMValueRef ok = NULL;
	for (int r = 0; r < n; r++) {
		LLVMValueRef x = nv_reg(nv, c, r);
		if (LLVMGetIntTypeWidth(LLVMTypeOf(x)) != 1)
			x = LLVMBuildICmp(nv->b, LLVMIntNE, x, LLVMConstInt(LLVMTypeOf(x), 0, 0), "");
		ok = ok ? LLVMBuildAnd(nv->b, ok, x, "") : x;
	}
	LLVMBasicBlockRef fb = nv_new_bb(nv, "assert.fail"), jb = nv_new_bb(nv, "assert.ok");
	LLVMBuildCondBr(nv->b, ok, jb, fb);
	LLVMPositionBuilderAtEnd(nv->b, fb);
	LLVMValueRef args[5] = {global_str(nv, ir_op_str(op, "msg", "assertion failed")),
				global_str(nv, op->loc.file ? op->loc.file : "<unknown>"), nv_i32(nv, op->loc.line),
				global_str(nv, nv->f->name), LLVMConstInt(i64, 1, 0)};
	LLVMBuildCall2(nv->b, fty, fn, args, 5, "");
	LLVMBuildBr(nv->b, jb);
	LLVMPositionBuilderAtEnd(nv->b, jb);
}

/* griddepcontrol (programmatic dependent launch): PTX on sm_90 and later,
 * ordered with memory like a fence (the "memory" clobber keeps loads after
 * a wait); nothing on older GPUs, which launch dependent grids only after
 * the previous one completed. */
static void lower_gdc(Nv *nv, IrOp *op)
{
	if (nv->ao.arch < 90)
		return;
	nv_asm_void(nv, strcmp(ir_op_str(op, "kind", ""), "wait") == 0 ? "griddepcontrol.wait;"
								   : "griddepcontrol.launch_dependents;");
}

/* ------------------------------------------------------------------------- */
/* Control flow                                                              */
/* ------------------------------------------------------------------------- */

static LLVMValueRef *phis_for(Nv *nv, const IrType *t, int *n)
{
	*n = nv_map_nregs(nv, t);
	LLVMValueRef *p = nv_regbuf(nv, *n);
	for (int r = 0; r < *n; r++)
		p[r] = LLVMBuildPhi(nv->b, nv_llty(nv, t), "");
	return p;
}

static void add_incoming(Nv *nv, LLVMValueRef *phis, int n, const IrValue *v, LLVMBasicBlockRef from)
{
	for (int r = 0; r < n; r++) {
		LLVMValueRef x = nv_reg(nv, v, r);
		LLVMAddIncoming(phis[r], &x, &from, 1);
	}
}

/* Whether b (not the loops inside it) holds a warpgroup dot on a zero
 * accumulator with at most 32 columns a warpgroup. ptxas (12.8 to 13.0, at
 * -O2 and above) fully unrolls such a loop of known trip count and drops the
 * second iteration's MMAs where the result goes through f16, reusing the
 * first iteration's (tests/python/test_dot_f16_out_loop.py); the loop keeps
 * its back edge instead (.pragma "nounroll"). */
static bool fresh_narrow_wgmma(const IrBlock *b)
{
	for (const IrOp *o = b->first; o; o = o->next) {
		if (o->opc == OP_DOT && an_is_wgmma(o->res[0].type) && ir_is_zero_const(o->ops[2])) {
			const IrType *t = o->res[0].type;
			int gn = t->layout->warps_per_cta[1];
			if (t->shape[1] / (gn > 0 ? gn : 1) <= 32)
				return true;
		}
		if (o->opc == OP_FOR || o->opc == OP_WHILE)
			continue;
		for (int r = 0; r < o->nregions; r++)
			if (fresh_narrow_wgmma(o->regions[r]))
				return true;
	}
	return false;
}

/* The loop attributes of op (for / while) on its back edge br, as LLVM loop
 * metadata: disable_licm -> llvm.licm.disable (nothing is hoisted out); a
 * loop that fresh_narrow_wgmma finds -> llvm.loop.unroll.disable (printed
 * as .pragma "nounroll" for ptxas). */
static void loop_metadata(Nv *nv, const IrOp *op, LLVMValueRef br)
{
	bool licm = ir_op_int(op, "disable_licm", 0) != 0;
	bool nounroll = false;
	for (int r = 0; r < op->nregions && !nounroll; r++)
		nounroll = fresh_narrow_wgmma(op->regions[r]);
	if (!licm && !nounroll)
		return;
	LLVMMetadataRef self = LLVMTemporaryMDNode(nv->c, NULL, 0);
	LLVMMetadataRef ops[3] = {self};
	int n = 1;
	if (licm) {
		LLVMMetadataRef name = LLVMMDStringInContext2(nv->c, "llvm.licm.disable", 17);
		ops[n++] = LLVMMDNodeInContext2(nv->c, &name, 1);
	}
	if (nounroll) {
		LLVMMetadataRef name = LLVMMDStringInContext2(nv->c, "llvm.loop.unroll.disable", 24);
		ops[n++] = LLVMMDNodeInContext2(nv->c, &name, 1);
	}
	LLVMMetadataRef id = LLVMMDNodeInContext2(nv->c, ops, (size_t)n);
	LLVMMetadataReplaceAllUsesWith(self, id); /* the loop id names itself */
	LLVMSetMetadata(br, LLVMGetMDKindIDInContext(nv->c, "llvm.loop", 9), LLVMMetadataAsValue(nv->c, id));
}

/* warp_specialize: the warps after the consumers (a warpgroup) run the
 * region (the producer: its first warp; the others exit) and exit; the
 * consumers go on past it. When the kernel's register cap at entry (the
 * register file over all its threads) is below what the consumers may use,
 * the producer's warpgroup gives registers to the consumers' (setmaxnreg:
 * 40 for the producer, the rest shared by the consumer warpgroups). */
static void lower_warp_spec(Nv *nv, IrOp *op)
{
	int nw = nv->ao.num_warps, pw = (int)ir_op_int(op, "producer_warps", 1);
	int wgs = (nw + pw + 3) / 4, cap = 65536 / (wgs * 128) / 8 * 8;
	int give = pw == 4 && nw % 4 == 0 && cap < 232 ? (512 - 40 * pw / 4) / (nw / 4) / 8 * 8 : 0;
	if (give > 256)
		give = 256;
	LLVMBasicBlockRef pb = nv_new_bb(nv, "ws.producer"), cb = nv_new_bb(nv, "ws.consumer");
	LLVMBasicBlockRef lb = nv_new_bb(nv, "ws.lead"), xb = nv_new_bb(nv, "ws.exit");
	LLVMValueRef isp = LLVMBuildICmp(nv->b, LLVMIntUGE, nv->warp, nv_i32(nv, nw), "");
	LLVMBuildCondBr(nv->b, isp, pb, cb);
	LLVMPositionBuilderAtEnd(nv->b, pb);
	if (give)
		nv_asm_void(nv, "setmaxnreg.dec.sync.aligned.u32 40;");
	LLVMBuildCondBr(nv->b, LLVMBuildICmp(nv->b, LLVMIntEQ, nv->warp, nv_i32(nv, nw), ""), lb, xb);
	LLVMPositionBuilderAtEnd(nv->b, xb);
	LLVMBuildRetVoid(nv->b);
	LLVMPositionBuilderAtEnd(nv->b, lb);
	nv->in_producer = true;
	nv_lower_block(nv, op->regions[0]);
	nv->in_producer = false;
	LLVMBuildRetVoid(nv->b);
	LLVMPositionBuilderAtEnd(nv->b, cb);
	if (give) {
		char text[64];
		snprintf(text, sizeof text, "setmaxnreg.inc.sync.aligned.u32 %d;", give);
		nv_asm_void(nv, text);
	}
}

/* The op making v, or for the result of an `if` both of whose regions
 * yield one value there (an epilogue passing the accumulator through),
 * that value's. */
static const IrOp *flying_dot(const IrValue *v)
{
	const IrOp *d = v->def;
	if (!d || d->opc != OP_IF || d->nregions != 2)
		return d;
	const IrOp *t0 = ir_block_terminator(d->regions[0]), *t1 = ir_block_terminator(d->regions[1]);
	if (!t0 || !t1 || v->index >= t0->nops || v->index >= t1->nops || t0->ops[v->index] != t1->ops[v->index])
		return d;
	return t0->ops[v->index]->def;
}

static void lower_for(Nv *nv, IrOp *op)
{
	IrBlock *body = op->regions[0];
	int ni = op->nops - 3;
	LLVMValueRef lb = nv_reg(nv, op->ops[0], 0), ub = nv_reg(nv, op->ops[1], 0), step = nv_reg(nv, op->ops[2], 0);
	bool uns = nv_is_unsigned(op->ops[0]->type);
	/* {wgmma_inflight}: a loop that runs no iteration skips the loop and
	 * the wait after it altogether, so no path reaches that wait with the
	 * accumulators set by anything but the MMAs (ptxas would serialise
	 * them, C7515) */
	int kind = (int)ir_op_int(op, "wgmma_inflight", 0);
	IrOp *yl = ir_block_terminator(body);
	int fk = -1; /* kind 2: the carried argument the last MMA flies into */
	for (int i = 0; kind == 2 && yl && i < yl->nops; i++) {
		const IrOp *d = yl->ops[i]->def;
		if (d && d->opc == OP_DOT && an_is_wgmma(d->res[0].type))
			fk = i;
	}
	if (kind == 2 && fk >= 0) {
		/* an A staged in shared scratch would be rewritten while read */
		const IrOp *ad = yl->ops[fk]->def->ops[0]->def;
		if (ad && ad->opc == OP_CONVERT_LAYOUT && nv_smem_operand(ad))
			fk = -1;
	}
	if (kind == 2 && fk < 0)
		kind = 0;
	bool fly = kind != 0;
	const IrValue *fly_arg = nv->fly_arg;
	LLVMValueRef *fly_regs = nv->fly_regs;
	int fly_n = nv->fly_n;
	bool settle_all = nv->settle_all;
	nv->settle_all = ir_op_int(op, "wgmma_inflight", 0) && !fly;
	bool live_ok = nv->live_ok;
	const IrValue *live = nv->live;
	LLVMValueRef *live_regs = nv->live_regs;
	int live_n = nv->live_n;
	nv->live_ok = kind == 1;
	nv->live = NULL;
	LLVMBasicBlockRef entry = LLVMGetInsertBlock(nv->b), jb = NULL;
	if (fly) {
		LLVMBasicBlockRef gb = nv_new_bb(nv, "for.g");
		jb = nv_new_bb(nv, "for.j");
		LLVMBuildCondBr(nv->b, LLVMBuildICmp(nv->b, uns ? LLVMIntULT : LLVMIntSLT, lb, ub, ""), gb, jb);
		LLVMPositionBuilderAtEnd(nv->b, gb);
	}
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(nv->b);
	LLVMBasicBlockRef hb = nv_new_bb(nv, "for.h"), bb = nv_new_bb(nv, "for.b"), eb = nv_new_bb(nv, "for.e");
	LLVMBuildBr(nv->b, hb);
	LLVMPositionBuilderAtEnd(nv->b, hb);
	LLVMValueRef iv = LLVMBuildPhi(nv->b, LLVMTypeOf(lb), "");
	LLVMAddIncoming(iv, &lb, &pre, 1);
	LLVMValueRef **phis = ir_alloc(nv->ctx, sizeof(LLVMValueRef *) * (size_t)(ni + 1));
	int *np = ir_alloc(nv->ctx, sizeof(int) * (size_t)(ni + 1));
	for (int i = 0; i < ni; i++) {
		phis[i] = phis_for(nv, body->args[i + 1]->type, &np[i]);
		add_incoming(nv, phis[i], np[i], op->ops[3 + i], pre);
	}
	LLVMValueRef cond = LLVMBuildICmp(nv->b, uns ? LLVMIntULT : LLVMIntSLT, iv, ub, "");
	LLVMBuildCondBr(nv->b, cond, bb, eb);
	LLVMPositionBuilderAtEnd(nv->b, bb);
	nv_set1(nv, body->args[0], iv);
	for (int i = 0; i < ni; i++) {
		nv_set(nv, body->args[i + 1], np[i], phis[i]);
		nv_set(nv, &op->res[i], np[i], phis[i]);
	}
	if (kind == 2) {
		nv->fly_arg = body->args[fk + 1];
		nv->fly_regs = nv_regbuf(nv, np[fk]);
		for (int j = 0; j < np[fk]; j++)
			nv->fly_regs[j] = phis[fk][j];
		nv->fly_n = np[fk];
	}
	const IrBlock *fly_body = nv->fly_body;
	nv->fly_body = kind == 2 ? body : NULL;
	nv_lower_block(nv, body);
	nv->fly_body = fly_body;
	if (nv->fly_arg) /* never read: done by the end of the iteration */
		nv_wgmma_settle(nv, 0);
	nv->fly_arg = fly_arg;
	nv->fly_regs = fly_regs;
	nv->fly_n = fly_n;
	nv->settle_all = settle_all;
	nv->live_ok = live_ok; /* in flight across the back edge, and waited for after the loop */
	nv->live = live;
	nv->live_regs = live_regs;
	nv->live_n = live_n;
	IrOp *y = ir_block_terminator(body);
	LLVMValueRef nx = LLVMBuildAdd(nv->b, iv, step, "");
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(nv->b);
	for (int i = 0; i < ni && y; i++)
		add_incoming(nv, phis[i], np[i], y->ops[i], latch);
	LLVMAddIncoming(iv, &nx, &latch, 1);
	loop_metadata(nv, op, LLVMBuildBr(nv->b, hb));
	LLVMPositionBuilderAtEnd(nv->b, eb);
	/* {wgmma_inflight}: the last MMA group is still running: wait for it
	 * before anything reads the accumulators the loop yields */
	for (int i = 0; fly && y && i < ni; i++) {
		const IrOp *d = flying_dot(y->ops[i]);
		if (!d || d->opc != OP_DOT || !an_is_wgmma(d->res[0].type))
			continue;
		LLVMValueRef *r = nv_regbuf(nv, np[i]);
		for (int j = 0; j < np[i]; j++)
			r[j] = phis[i][j];
		nv_wgmma_wait_regs(nv, r, np[i]);
		nv_set(nv, &op->res[i], np[i], r);
	}
	if (!fly)
		return;
	LLVMBasicBlockRef done = LLVMGetInsertBlock(nv->b);
	LLVMBuildBr(nv->b, jb);
	LLVMPositionBuilderAtEnd(nv->b, jb);
	for (int i = 0; i < ni; i++) {
		LLVMValueRef *out = nv_regbuf(nv, np[i]);
		for (int j = 0; j < np[i]; j++) {
			LLVMValueRef from[2] = {nv_reg(nv, &op->res[i], j), nv_reg(nv, op->ops[3 + i], j)};
			LLVMBasicBlockRef bbs[2] = {done, entry};
			out[j] = LLVMBuildPhi(nv->b, LLVMTypeOf(from[0]), "");
			LLVMAddIncoming(out[j], from, bbs, 2);
		}
		nv_set(nv, &op->res[i], np[i], out);
	}
}

/* An `if` reading the live MMA (a flattened nest's epilogue): each region
 * starts with it in flight, the region that reads it waits for it there,
 * and after the `if` it is in flight again (where the epilogue did not
 * run it is). Each region's yield is taken as it ends. */
static void lower_if(Nv *nv, IrOp *op)
{
	LLVMValueRef c = nv_reg(nv, op->ops[0], 0);
	LLVMBasicBlockRef tb = nv_new_bb(nv, "if.t"), fb = nv_new_bb(nv, "if.f"), jb = nv_new_bb(nv, "if.e");
	LLVMBuildCondBr(nv->b, c, tb, fb);
	LLVMBasicBlockRef ends[2];
	IrOp *ys[2];
	NvVals *yv[2];
	const IrValue *live = nv->live;
	LLVMValueRef *live_regs = nv->live_regs;
	int live_n = nv->live_n;
	for (int k = 0; k < 2; k++) {
		LLVMPositionBuilderAtEnd(nv->b, k ? fb : tb);
		if (live) {
			nv->live = live;
			nv->live_regs = live_regs;
			nv->live_n = live_n;
			nv_set(nv, live, live_n, live_regs);
		}
		nv_lower_block(nv, op->regions[k]);
		ys[k] = ir_block_terminator(op->regions[k]);
		yv[k] = ir_alloc(nv->ctx, sizeof(NvVals) * (size_t)(op->nres ? op->nres : 1));
		for (int i = 0; ys[k] && i < op->nres; i++)
			yv[k][i] = *nv_vals(nv, ys[k]->ops[i]);
		ends[k] = LLVMGetInsertBlock(nv->b);
		LLVMBuildBr(nv->b, jb);
	}
	if (live) {
		nv->live = live;
		nv->live_regs = live_regs;
		nv->live_n = live_n;
		nv_set(nv, live, live_n, live_regs);
	}
	LLVMPositionBuilderAtEnd(nv->b, jb);
	for (int i = 0; i < op->nres; i++) {
		int n;
		LLVMValueRef *p = phis_for(nv, op->res[i].type, &n);
		for (int k = 0; k < 2; k++)
			for (int r = 0; ys[k] && r < n; r++) {
				const NvVals *w = &yv[k][i];
				LLVMValueRef x = !w->v ? NULL : w->n == 1 ? w->v[0] : r < w->n ? w->v[r] : NULL;
				if (!x)
					x = nv_reg(nv, ys[k]->ops[i], r);
				LLVMAddIncoming(p[r], &x, &ends[k], 1);
			}
		nv_set(nv, &op->res[i], n, p);
	}
}

static void lower_while(Nv *nv, IrOp *op)
{
	IrBlock *before = op->regions[0], *after = op->regions[1];
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(nv->b);
	LLVMBasicBlockRef hb = nv_new_bb(nv, "while.h"), ab = nv_new_bb(nv, "while.b"), eb = nv_new_bb(nv, "while.e");
	LLVMBuildBr(nv->b, hb);
	LLVMPositionBuilderAtEnd(nv->b, hb);
	int ni = op->nops;
	LLVMValueRef **phis = ir_alloc(nv->ctx, sizeof(LLVMValueRef *) * (size_t)(ni + 1));
	int *np = ir_alloc(nv->ctx, sizeof(int) * (size_t)(ni + 1));
	for (int i = 0; i < ni; i++) {
		phis[i] = phis_for(nv, before->args[i]->type, &np[i]);
		add_incoming(nv, phis[i], np[i], op->ops[i], pre);
		nv_set(nv, before->args[i], np[i], phis[i]);
	}
	nv_lower_block(nv, before);
	IrOp *cond = ir_block_terminator(before);
	if (!cond) {
		nv_fail(nv, op, "%s without condition", "while");
		return;
	}
	for (int i = 0; i + 1 < cond->nops; i++) {
		NvVals *fv = nv_vals(nv, cond->ops[i + 1]);
		nv_set(nv, after->args[i], fv->n, fv->v);
		nv_set(nv, &op->res[i], fv->n, fv->v);
	}
	LLVMBuildCondBr(nv->b, nv_reg(nv, cond->ops[0], 0), ab, eb);
	LLVMPositionBuilderAtEnd(nv->b, ab);
	nv_lower_block(nv, after);
	IrOp *y = ir_block_terminator(after);
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(nv->b);
	for (int i = 0; i < ni && y; i++)
		add_incoming(nv, phis[i], np[i], y->ops[i], latch);
	loop_metadata(nv, op, LLVMBuildBr(nv->b, hb));
	LLVMPositionBuilderAtEnd(nv->b, eb);
}

/* ------------------------------------------------------------------------- */
/* Calls of noinline functions                                               */
/* ------------------------------------------------------------------------- */

/* The registers of a list of IR types, in order: every register of each
 * (a block's in its layout's register order, a scalar's one). */
static int regs_of(Nv *nv, int n, const IrType *const *tys, LLVMTypeRef *out)
{
	int k = 0;
	for (int i = 0; i < n; i++) {
		int nr = nv_map_nregs(nv, tys[i]);
		for (int r = 0; r < nr; r++) {
			if (out)
				out[k] = nv_llty(nv, tys[i]);
			k++;
		}
	}
	return k;
}

static LLVMTypeRef result_type(Nv *nv, const IrFunc *g)
{
	int n = regs_of(nv, g->nres, g->restys, NULL);
	if (n == 0)
		return LLVMVoidTypeInContext(nv->c);
	LLVMTypeRef *tys = ir_alloc(nv->ctx, sizeof(LLVMTypeRef) * (size_t)n);
	regs_of(nv, g->nres, g->restys, tys);
	return n == 1 ? tys[0] : LLVMStructTypeInContext(nv->c, tys, (unsigned)n, 0);
}

LLVMTypeRef nv_callee_type(Nv *nv, const IrFunc *g)
{
	int np = g->body->nargs;
	const IrType **pt = ir_alloc(nv->ctx, sizeof(IrType *) * (size_t)(np + 1));
	for (int i = 0; i < np; i++)
		pt[i] = g->body->args[i]->type;
	int n = regs_of(nv, np, pt, NULL);
	LLVMTypeRef *tys = ir_alloc(nv->ctx, sizeof(LLVMTypeRef) * (size_t)(n + 2));
	regs_of(nv, np, pt, tys);
	if (an_func_shared(g) > 0)
		tys[n++] = LLVMPointerTypeInContext(nv->c, 3);
	return LLVMFunctionType(result_type(nv, g), tys, (unsigned)n, 0);
}

/* call: this thread's registers of every argument, then (when the callee
 * uses shared memory) the base of the callee's scratch, the call's
 * scratch_offset in the caller's; the results come back as one register,
 * or a struct of all of them in order. */
static void lower_call(Nv *nv, IrOp *op)
{
	nv->wg_bb = NULL; /* the callee's MMA groups are not counted */
	IrFunc *g = an_callee(op);
	LLVMValueRef fn = g ? LLVMGetNamedFunction(nv->m, g->name) : NULL;
	if (!fn) {
		nv_fail(nv, op, "call of unknown function @%s", ir_op_str(op, "callee", "?"));
		return;
	}
	LLVMTypeRef fty = LLVMGlobalGetValueType(fn);
	unsigned np = LLVMCountParamTypes(fty);
	LLVMValueRef *args = nv_regbuf(nv, (int)np + 1);
	unsigned k = 0;
	for (int i = 0; i < op->nops; i++) {
		int n = nv_map_nregs(nv, op->ops[i]->type);
		for (int r = 0; r < n && k < np; r++)
			args[k++] = nv_reg(nv, op->ops[i], r);
	}
	if (an_func_shared(g) > 0 && k < np) {
		LLVMValueRef off = nv_i32(nv, nv_scratch_off(op));
		args[k++] = LLVMBuildGEP2(nv->b, LLVMInt8TypeInContext(nv->c), nv->smem, &off, 1, "");
	}
	if (k != np) {
		nv_fail(nv, op, "internal error: call of @%s passes %u registers, it takes %u", g->name, k, np);
		return;
	}
	LLVMValueRef call = LLVMBuildCall2(nv->b, fty, fn, args, np, "");
	int total = regs_of(nv, op->nres, (const IrType **)g->restys, NULL), at = 0;
	for (int i = 0; i < op->nres; i++) {
		int n = nv_map_nregs(nv, op->res[i].type);
		LLVMValueRef *regs = nv_regbuf(nv, n);
		for (int r = 0; r < n; r++, at++)
			regs[r] = total == 1 ? call : LLVMBuildExtractValue(nv->b, call, (unsigned)at, "");
		nv_set(nv, &op->res[i], n, regs);
	}
}

void nv_lower_return(Nv *nv, IrOp *op)
{
	int n = op ? regs_of(nv, nv->f->nres, nv->f->restys, NULL) : 0;
	if (nv->f->is_kernel || n == 0) {
		/* deferred tensor stores may still read the staging: the shared
		 * memory stays the kernel's until they have */
		if (nv->f->is_kernel && ir_find_attr(nv->f->nattrs, nv->f->attrs, "tma_store_deferred"))
			nv_asm_void(nv, "cp.async.bulk.wait_group.read 0;");
		LLVMBuildRetVoid(nv->b);
		return;
	}
	LLVMTypeRef rt = result_type(nv, nv->f);
	LLVMValueRef ret = n == 1 ? NULL : LLVMGetUndef(rt);
	int at = 0;
	for (int i = 0; i < op->nops; i++) {
		int nr = nv_map_nregs(nv, op->ops[i]->type);
		for (int r = 0; r < nr; r++, at++) {
			LLVMValueRef x = nv_reg(nv, op->ops[i], r);
			ret = n == 1 ? x : LLVMBuildInsertValue(nv->b, ret, x, (unsigned)at, "");
		}
	}
	LLVMBuildRet(nv->b, ret);
}

/* ------------------------------------------------------------------------- */

void nv_lower_op(Nv *nv, IrOp *op)
{
	if (nv->err)
		return;
	unsigned fl = ir_opinfo(op->opc)->flags;
	switch (op->opc) {
	case OP_CONSTANT: nv_lower_constant(nv, op); return;
	case OP_POISON: {
		int n = nv_map_nregs(nv, op->res[0].type);
		LLVMValueRef *out = nv_regbuf(nv, n);
		for (int r = 0; r < n; r++)
			out[r] = LLVMGetPoison(nv_llty(nv, op->res[0].type));
		nv_set(nv, &op->res[0], n, out);
		return;
	}
	case OP_PROGRAM_ID:
	case OP_NUM_PROGRAMS: {
		static const char *ids[2][3] = {
			{"llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.ctaid.y", "llvm.nvvm.read.ptx.sreg.ctaid.z"},
			{"llvm.nvvm.read.ptx.sreg.nctaid.x", "llvm.nvvm.read.ptx.sreg.nctaid.y", "llvm.nvvm.read.ptx.sreg.nctaid.z"}};
		int axis = (int)ir_op_int(op, "axis", 0);
		if (axis < 0 || axis > 2)
			axis = 0;
		nv_set1(nv, &op->res[0], sreg(nv, ids[op->opc == OP_NUM_PROGRAMS][axis]));
		return;
	}
	case OP_MAKE_RANGE: nv_lower_make_range(nv, op); return;
	case OP_SPLAT: nv_lower_splat(nv, op); return;
	case OP_BROADCAST: nv_lower_broadcast(nv, op); return;
	case OP_EXPAND_DIMS:
	case OP_MULTIPLE_OF:
	case OP_MAX_CONTIGUOUS:
	case OP_MAX_CONSTANCY:
		nv_lower_identity(nv, op);
		return;
	case OP_CONVERT_LAYOUT: nv_lower_convert(nv, op); return;
	case OP_RESHAPE: nv_lower_reshape(nv, op); return;
	case OP_TRANS: nv_lower_trans(nv, op); return;
	case OP_SPLIT: nv_lower_split(nv, op); return;
	case OP_CAT:
	case OP_JOIN: nv_lower_two(nv, op); return;
	case OP_GATHER: nv_lower_gather(nv, op); return;
	case OP_HISTOGRAM: nv_lower_histogram(nv, op); return;
	case OP_LOAD: nv_lower_load(nv, op); return;
	case OP_STORE: nv_lower_store(nv, op); return;
	case OP_ATOMIC_RMW:
	case OP_ATOMIC_CAS: nv_lower_atomic(nv, op); return;
	case OP_REDUCE: nv_lower_reduce(nv, op); return;
	case OP_SCAN: nv_lower_scan(nv, op); return;
	case OP_DOT: nv_lower_dot(nv, op); return;
	case OP_ASSUME: /* a scalar fact for LLVM (llvm.assume); a block's is not kept */
		if (!ir_is_block(op->ops[0]->type)) {
			LLVMValueRef c = nv_reg(nv, op->ops[0], 0);
			nv_intrinsic(nv, "llvm.assume", NULL, 0, &c, 1);
		}
		return;
	case OP_INLINE_ASM: nv_lower_inline_asm(nv, op); return;
	case OP_MAP_ELEM: nv_lower_map(nv, op); return;
	case OP_PRINT: lower_print(nv, op); return;
	case OP_ASSERT: lower_assert(nv, op); return;
	case OP_BARRIER:
		if (ir_op_int(op, "wait_only", 0)) /* the MMA wait (nv_lower_block) without the barrier */
			return;
		if (ir_op_int(op, "all", 0)) /* every warp, the producer's too */
			nv_intrinsic(nv, "llvm.nvvm.barrier.cta.sync.aligned.all", NULL, 0, (LLVMValueRef[]){nv_i32(nv, 0)}, 1);
		else
			nv_barrier(nv);
		return;
	case OP_WARP_SPEC: lower_warp_spec(nv, op); return;
	case OP_GDC: lower_gdc(nv, op); return;
	case OP_ASYNC_COPY: nv_lower_async_copy(nv, op); return;
	case OP_ASYNC_COMMIT: nv_lower_async_commit(nv, op); return;
	case OP_ASYNC_WAIT: nv_lower_async_wait(nv, op); return;
	case OP_LOCAL_READ: nv_lower_local_read(nv, op); return;
	case OP_TMA_COPY: nv_lower_tma_copy(nv, op); return;
	case OP_TMA_STORE: nv_lower_tma_store(nv, op); return;
	case OP_TMA_WAIT: nv_lower_tma_wait(nv, op); return;
	case OP_TMA_INIT: nv_lower_tma_init(nv, op); return;
	case OP_TMA_INVAL: nv_lower_tma_inval(nv, op); return;
	case OP_TMAP_CREATE: nv_lower_tmap_create(nv, op); return;
	case OP_TMA_RELEASE: nv_lower_tma_release(nv, op); return;
	case OP_FOR: lower_for(nv, op); return;
	case OP_IF: lower_if(nv, op); return;
	case OP_WHILE: lower_while(nv, op); return;
	case OP_YIELD:
	case OP_CONDITION: return;
	case OP_CALL: lower_call(nv, op); return;
	case OP_RETURN: nv_lower_return(nv, op); return;
	default:
		break;
	}
	if (fl & IR_ELEM) {
		nv_lower_elementwise(nv, op);
		return;
	}
	nv_fail(nv, op, "op %s is not supported by the NVPTX backend yet", ir_opinfo(op->opc)->name);
}

static bool nv_reads(const IrOp *op, const IrValue *v)
{
	for (int i = 0; i < op->nops; i++)
		if (op->ops[i] == v)
			return true;
	return false;
}

/* op or an op in its regions reads v. */
static bool nv_reads_deep(const IrOp *op, const IrValue *v)
{
	if (nv_reads(op, v))
		return true;
	for (int r = 0; r < op->nregions; r++)
		for (const IrOp *o = op->regions[r]->first; o; o = o->next)
			if (nv_reads_deep(o, v))
				return true;
	return false;
}

void nv_lower_block(Nv *nv, IrBlock *blk)
{
	for (IrOp *op = blk->first; op && !nv->err; op = op->next) {
		/* barrier {wgmma_pending = 1}: all but the newest MMA group done;
		 * the newest stays in flight past the yield (for {wgmma_inflight}) */
		int pend = (op->opc == OP_BARRIER || op->opc == OP_TMA_RELEASE) && !nv->settle_all
				   ? (int)ir_op_int(op, "wgmma_pending", 0)
				   : 0;
		/* the yield of a {wgmma_inflight = 2} body taking the dot still in
		 * flight (no barrier after it left it flying, as in a
		 * warp-specialized consumer's loop): it stays in flight across
		 * the back edge */
		if (nv->wg_dot && !pend && op->opc == OP_YIELD && blk == nv->fly_body &&
		    nv_reads(op, &nv->wg_dot->res[0]))
			nv_wgmma_leave(nv);
		else if (nv->wg_dot && (pend || !nv_wgmma_keeps_flying(nv, op)))
			nv_wgmma_wait(nv, pend);
		/* the previous iteration's dot, still in flight, is done before
		 * anything reads its result or releases a slot it may read */
		if (nv->fly_arg && (op->nregions || op->opc == OP_TMA_RELEASE || nv_reads(op, nv->fly_arg)))
			nv_wgmma_settle(nv, 0);
		/* the live MMA: waited for by its first reader (lower_if: in the
		 * regions of an `if`) */
		if (nv->live && op->opc != OP_YIELD &&
		    (op->opc == OP_IF ? false : op->nregions ? nv_reads_deep(op, nv->live) : nv_reads(op, nv->live)))
			nv_wgmma_settle_live(nv);
		if (op->opc == OP_SELECT && nv_absorbed_select(op))
			continue; /* the MMA reads its operand (dot.c) */
		nv_lower_op(nv, op);
	}
	if (nv->wg_dot)
		nv_wgmma_wait(nv, 0);
}
