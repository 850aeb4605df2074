/* mem.c: global memory and async copies. Loads and stores in vectors of up
 * to 128 bits where axis info proves contiguity, alignment and mask
 * constancy (a masked load is one predicated ld.global in inline asm, as
 * Triton's, sub-word ones included; a masked store too, volatile ones
 * excepted, which branch around the access);
 * an access with a cache modifier or an eviction policy is inline PTX
 * naming them (ld.global.cg, st.global.L1::evict_first.L2::cache_hint, ...),
 * predicated by its mask; replicated elements are stored by their owning
 * thread only (atomics:
 * atomic.c). async_copy / commit / wait (cp.async into the swizzled slots of
 * a multi-buffered tile) and local_read (ldmatrix out of a slot).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvptx.h"

/* ------------------------------------------------------------------------- */
/* Memory                                                                    */
/* ------------------------------------------------------------------------- */

/* Vector width for the access through pointer block p: the one layout
 * assignment chose the access's layout for (an_layout_vec). */
int nv_access_vec(Nv *nv, const IrValue *p, const IrValue *mask, const NvMap *m)
{
	return m->b ? an_layout_vec(nv->ax, p, mask, p->type->layout) : 1;
}

/* The hints of a global access in PTX: the cache operator and the
 * eviction policy as Triton lowers them on NVIDIA (cache_modifier .ca .cg on
 * loads, .wb .cg .cs .wt on stores; .cv is not emitted, as in Triton;
 * eviction_policy evict_first / evict_last as the L1 eviction priority
 * (sm_70+) and an L2 cache policy made by createpolicy (sm_80+)). PTX takes
 * a cache operator or an L1 eviction priority, not both: with both asked
 * for, the cache operator stays and the eviction goes to L2 only. A volatile
 * access takes no hints. */
typedef struct MemHint {
	char q[48];     /* qualifiers after ld.global / st.global */
	const char *l2; /* "evict_first" / "evict_last": an L2 policy operand; NULL: none */
} MemHint;

static bool mem_hint(Nv *nv, const IrOp *op, bool store, MemHint *h)
{
	memset(h, 0, sizeof *h);
	if (ir_op_int(op, "volatile", 0))
		return false;
	static const char *const lc[] = {"ca", "cg", NULL}, *const sc[] = {"wb", "cg", "cs", "wt", NULL};
	const char *cache = ir_op_str(op, "cache", ""), *cop = NULL;
	for (const char *const *c = store ? sc : lc; *c; c++)
		if (!strcmp(*c, cache))
			cop = *c;
	const char *ev = ir_op_str(op, "evict", "");
	if (strcmp(ev, "evict_first") && strcmp(ev, "evict_last"))
		ev = NULL;
	int o = 0;
	if (cop)
		o += snprintf(h->q + o, sizeof h->q - (size_t)o, ".%s", cop);
	if (ev && !cop && nv->ao.arch >= 70 && nv->ptx >= 74)
		o += snprintf(h->q + o, sizeof h->q - (size_t)o, ".L1::%s", ev);
	if (ev && nv->ao.arch >= 80 && nv->ptx >= 74) {
		snprintf(h->q + o, sizeof h->q - (size_t)o, ".L2::cache_hint");
		h->l2 = ev;
	}
	return h->q[0] != 0;
}

/* The 64-bit L2 cache policy that evicts first or last (createpolicy,
 * fraction 1.0): no memory access, so LLVM may share and hoist it. */
static LLVMValueRef l2_policy(Nv *nv, const char *ev)
{
	LLVMTypeRef i64 = LLVMInt64TypeInContext(nv->c);
	LLVMTypeRef fty = LLVMFunctionType(i64, NULL, 0, 0);
	char text[96];
	snprintf(text, sizeof text, "createpolicy.fractional.L2::%s.b64 $0, 1.0;", ev);
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, text, strlen(text), "=l", 2, 0, 0, LLVMInlineAsmDialectATT, 0);
	LLVMValueRef call = LLVMBuildCall2(nv->b, fty, asmv, NULL, 0, "");
	unsigned mem = LLVMGetEnumAttributeKindForName("memory", 6),
		 nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
	LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(nv->c, mem, 0));
	LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(nv->c, nounwind, 0));
	return call;
}

/* How an access of `bytes` bytes (a power of two up to 16) splits into PTX
 * registers: *nw 32-bit words, or below 4 bytes one word of *w = 8 or 16
 * bits. Returns the constraint letter of a word. */
static char words_of(int bytes, int *nw, int *w)
{
	*w = bytes < 4 ? bytes * 8 : 32;
	*nw = bytes * 8 / *w;
	return *w == 32 ? 'r' : *w == 16 ? 'h' : 'c';
}

/* A global load of vty (bytes bytes) in inline PTX,
 * with the qualifiers of h (NULL: none) and its L2 policy pol: under pred
 * (NULL: none) the destination registers start as dflt and `@p ld` fills
 * them. Opaque to LLVM, so the loaded words stay packed until they are used
 * (a branch around an ordinary load lets LLVM sink conversions of the value
 * into the branch, e.g. f16 -> f32 of the whole vector, doubling the
 * registers that stay live). */
static LLVMValueRef asm_load(Nv *nv, LLVMTypeRef vty, int bytes, LLVMValueRef ptr, LLVMValueRef pred,
			     LLVMValueRef dflt, const MemHint *h, LLVMValueRef pol)
{
	int nw, w;
	char wc = words_of(bytes, &nw, &w);
	LLVMTypeRef iw = LLVMIntTypeInContext(nv->c, (unsigned)w);
	LLVMTypeRef wty = nw > 1 ? LLVMVectorType(iw, (unsigned)nw) : iw;
	LLVMTypeRef rt[4] = {iw, iw, iw, iw};
	LLVMTypeRef sty = LLVMStructTypeInContext(nv->c, rt, (unsigned)nw, 0);
	LLVMTypeRef at[8];
	LLVMValueRef args[8];
	int na = 0;
	at[na] = LLVMTypeOf(ptr);
	args[na++] = ptr;
	if (pred) {
		LLVMValueRef dw = LLVMBuildBitCast(nv->b, dflt, wty, "");
		at[na] = LLVMInt1TypeInContext(nv->c);
		args[na++] = pred;
		for (int i = 0; i < nw; i++) {
			at[na] = iw;
			args[na++] = nw > 1 ? LLVMBuildExtractElement(nv->b, dw, nv_i32(nv, i), "") : dw;
		}
	}
	if (pol) {
		at[na] = LLVMTypeOf(pol);
		args[na++] = pol;
	}
	LLVMTypeRef fty = LLVMFunctionType(sty, at, (unsigned)na, 0);
	char text[512], cons[160];
	int o = 0, c = 0;
	if (pred) {
		for (int i = 0; i < nw; i++)
			o += snprintf(text + o, sizeof text - (size_t)o, "mov.b%d $%d, $%d;\n\t", w < 16 ? 16 : w, i,
				      nw + 2 + i);
		o += snprintf(text + o, sizeof text - (size_t)o, "@$%d ", nw + 1);
	}
	o += snprintf(text + o, sizeof text - (size_t)o, "ld.global%s%s.b%d {", h ? h->q : "",
		      nw == 4 ? ".v4" : nw == 2 ? ".v2" : "", w);
	for (int i = 0; i < nw; i++)
		o += snprintf(text + o, sizeof text - (size_t)o, "%s$%d", i ? "," : "", i);
	o += snprintf(text + o, sizeof text - (size_t)o, "}, [$%d]", nw);
	if (pol)
		o += snprintf(text + o, sizeof text - (size_t)o, ", $%d", nw + na - 1);
	snprintf(text + o, sizeof text - (size_t)o, ";");
	for (int i = 0; i < nw; i++)
		c += snprintf(cons + c, sizeof cons - (size_t)c, pred ? "=&%c," : "=%c,", wc);
	c += snprintf(cons + c, sizeof cons - (size_t)c, "l");
	if (pred) {
		c += snprintf(cons + c, sizeof cons - (size_t)c, ",b");
		for (int i = 0; i < nw; i++)
			c += snprintf(cons + c, sizeof cons - (size_t)c, ",%c", wc);
	}
	if (pol)
		snprintf(cons + c, sizeof cons - (size_t)c, ",l");
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, text, strlen(text), cons, strlen(cons), 1, 0,
					     LLVMInlineAsmDialectATT, 0);
	LLVMValueRef d = LLVMBuildCall2(nv->b, fty, asmv, args, (unsigned)na, "");
	LLVMValueRef x = nw > 1 ? LLVMGetUndef(wty) : NULL;
	for (int i = 0; i < nw; i++) {
		LLVMValueRef y = LLVMBuildExtractValue(nv->b, d, (unsigned)i, "");
		x = nw > 1 ? LLVMBuildInsertElement(nv->b, x, y, nv_i32(nv, i), "") : y;
	}
	return LLVMBuildBitCast(nv->b, x, vty, "");
}

/* A global store of val (bytes bytes) in inline PTX with the qualifiers of
 * h and its L2 policy pol, under pred (NULL: none). */
static void asm_store(Nv *nv, LLVMValueRef val, int bytes, LLVMValueRef ptr, LLVMValueRef pred, const MemHint *h,
		      LLVMValueRef pol)
{
	int nw, w;
	char wc = words_of(bytes, &nw, &w);
	LLVMTypeRef iw = LLVMIntTypeInContext(nv->c, (unsigned)w);
	LLVMTypeRef wty = nw > 1 ? LLVMVectorType(iw, (unsigned)nw) : iw;
	LLVMValueRef vw = LLVMBuildBitCast(nv->b, val, wty, "");
	LLVMTypeRef at[8];
	LLVMValueRef args[8];
	int na = 0;
	at[na] = LLVMTypeOf(ptr);
	args[na++] = ptr;
	for (int i = 0; i < nw; i++) {
		at[na] = iw;
		args[na++] = nw > 1 ? LLVMBuildExtractElement(nv->b, vw, nv_i32(nv, i), "") : vw;
	}
	if (pred) {
		at[na] = LLVMInt1TypeInContext(nv->c);
		args[na++] = pred;
	}
	if (pol) {
		at[na] = LLVMTypeOf(pol);
		args[na++] = pol;
	}
	char text[256], cons[96];
	int o = 0, c = 0;
	if (pred)
		o += snprintf(text + o, sizeof text - (size_t)o, "@$%d ", nw + 1);
	o += snprintf(text + o, sizeof text - (size_t)o, "st.global%s%s.b%d [$0], {", h->q,
		      nw == 4 ? ".v4" : nw == 2 ? ".v2" : "", w);
	for (int i = 0; i < nw; i++)
		o += snprintf(text + o, sizeof text - (size_t)o, "%s$%d", i ? "," : "", i + 1);
	o += snprintf(text + o, sizeof text - (size_t)o, "}");
	if (pol)
		o += snprintf(text + o, sizeof text - (size_t)o, ", $%d", na - 1);
	snprintf(text + o, sizeof text - (size_t)o, ";");
	c += snprintf(cons + c, sizeof cons - (size_t)c, "l");
	for (int i = 0; i < nw; i++)
		c += snprintf(cons + c, sizeof cons - (size_t)c, ",%c", wc);
	if (pred)
		c += snprintf(cons + c, sizeof cons - (size_t)c, ",b");
	if (pol)
		c += snprintf(cons + c, sizeof cons - (size_t)c, ",l");
	snprintf(cons + c, sizeof cons - (size_t)c, ",~{memory}");
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(nv->c), at, (unsigned)na, 0);
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, text, strlen(text), cons, strlen(cons), 1, 0,
					     LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(nv->b, fty, asmv, args, (unsigned)na, "");
}

void nv_lower_load(Nv *nv, IrOp *op)
{
	IrValue *p = op->ops[0];
	IrValue *mask = op->nops > 1 ? op->ops[1] : NULL;
	IrValue *other = op->nops > 2 ? op->ops[2] : NULL;
	const IrType *rt = op->res[0].type;
	const IrType *et = ir_scalar(rt);
	bool isbool = et->kind == TY_I1;
	LLVMTypeRef ety = isbool ? LLVMInt8TypeInContext(nv->c) : nv_llty(nv, et);
	NvMap m;
	nv_map_init(NULL, p->type, &m);
	int vec = ir_is_block(p->type) ? nv_access_vec(nv, p, mask, &m) : 1;
	LLVMTypeRef vty = vec > 1 ? LLVMVectorType(ety, (unsigned)vec) : ety;
	int n = m.n;
	LLVMValueRef *out = nv_regbuf(nv, n);
	bool vol = ir_op_int(op, "volatile", 0) != 0;
	int bytes = (int)(vec * nv_esize(rt));
	MemHint h;
	bool hinted = mem_hint(nv, op, false, &h);
	LLVMValueRef pol = hinted && h.l2 ? l2_policy(nv, h.l2) : NULL;
	for (int r = 0; r < n; r += vec) {
		LLVMValueRef ptr = nv_reg(nv, p, r);
		LLVMValueRef pred = mask ? nv_reg(nv, mask, r) : NULL;
		LLVMValueRef dflt;
		if (other) {
			if (vec == 1) {
				dflt = nv_reg(nv, other, r);
				if (isbool)
					dflt = LLVMBuildZExt(nv->b, dflt, ety, "");
			} else {
				dflt = LLVMGetUndef(vty);
				for (int i = 0; i < vec; i++) {
					LLVMValueRef x = nv_reg(nv, other, r + i);
					if (isbool)
						x = LLVMBuildZExt(nv->b, x, ety, "");
					dflt = LLVMBuildInsertElement(nv->b, dflt, x, nv_i32(nv, i), "");
				}
			}
		} else {
			dflt = LLVMConstNull(vty);
		}
		LLVMValueRef val;
		if (hinted) {
			val = asm_load(nv, vty, bytes, ptr, pred, dflt, &h, pol);
		} else if (!pred) {
			val = LLVMBuildLoad2(nv->b, vty, ptr, "");
			LLVMSetAlignment(val, (unsigned)bytes);
			if (vol)
				LLVMSetVolatile(val, 1);
		} else if (!vol && bytes <= 16 && (bytes < 4 || bytes % 4 == 0)) {
			/* as Triton: a predicated ld.global, sub-word ones included
			 * (a branch around each 16-bit load of a matmul tile with
			 * runtime strides made 134 branches) */
			val = asm_load(nv, vty, bytes, ptr, pred, dflt, NULL, NULL);
		} else {
			LLVMBasicBlockRef cur = LLVMGetInsertBlock(nv->b);
			LLVMBasicBlockRef lb = nv_new_bb(nv, "ld"), jb = nv_new_bb(nv, "ld.end");
			LLVMBuildCondBr(nv->b, pred, lb, jb);
			LLVMPositionBuilderAtEnd(nv->b, lb);
			LLVMValueRef x = LLVMBuildLoad2(nv->b, vty, ptr, "");
			LLVMSetAlignment(x, (unsigned)bytes);
			if (vol)
				LLVMSetVolatile(x, 1);
			LLVMBuildBr(nv->b, jb);
			LLVMPositionBuilderAtEnd(nv->b, jb);
			val = LLVMBuildPhi(nv->b, vty, "");
			LLVMValueRef iv[2] = {x, dflt};
			LLVMBasicBlockRef ib[2] = {lb, cur};
			LLVMAddIncoming(val, iv, ib, 2);
		}
		for (int i = 0; i < vec; i++) {
			LLVMValueRef x = vec > 1 ? LLVMBuildExtractElement(nv->b, val, nv_i32(nv, i), "") : val;
			if (isbool)
				x = LLVMBuildICmp(nv->b, LLVMIntNE, x, LLVMConstInt(ety, 0, 0), "");
			out[r + i] = x;
		}
	}
	nv_set(nv, &op->res[0], n, out);
}

void nv_lower_store(Nv *nv, IrOp *op)
{
	IrValue *p = op->ops[0], *v = op->ops[1];
	IrValue *mask = op->nops > 2 ? op->ops[2] : NULL;
	const IrType *et = ir_scalar(v->type);
	bool isbool = et->kind == TY_I1;
	LLVMTypeRef ety = isbool ? LLVMInt8TypeInContext(nv->c) : nv_llty(nv, et);
	NvMap m;
	nv_map_init(nv, p->type, &m);
	int vec = ir_is_block(p->type) ? nv_access_vec(nv, p, mask, &m) : 1;
	LLVMTypeRef vty = vec > 1 ? LLVMVectorType(ety, (unsigned)vec) : ety;
	LLVMValueRef owner = nv_map_owner(nv, &m);
	int bytes = (int)(vec * nv_esize(v->type));
	MemHint h;
	bool hinted = mem_hint(nv, op, true, &h);
	LLVMValueRef pol = hinted && h.l2 ? l2_policy(nv, h.l2) : NULL;
	/* CTRITON_BRANCH_STORES=1 (part of the cache key): masked stores as
	 * branches around plain stores, as before */
	const char *bs = getenv("CTRITON_BRANCH_STORES");
	bool predicated = !ir_op_int(op, "volatile", 0) && !(bs && bs[0] == '1');
	for (int r = 0; r < m.n; r += vec) {
		LLVMValueRef val = vec > 1 ? LLVMGetUndef(vty) : NULL;
		for (int i = 0; i < vec; i++) {
			LLVMValueRef x = nv_reg(nv, v, r + i);
			if (isbool)
				x = LLVMBuildZExt(nv->b, x, ety, "");
			val = vec > 1 ? LLVMBuildInsertElement(nv->b, val, x, nv_i32(nv, i), "") : x;
		}
		LLVMValueRef pred = nv_and_pred(nv, owner, mask ? nv_reg(nv, mask, r) : NULL);
		if (hinted) {
			asm_store(nv, val, bytes, nv_reg(nv, p, r), pred, &h, pol);
			continue;
		}
		if (pred && predicated && bytes <= 16 && (bytes < 4 || bytes % 4 == 0)) {
			/* as Triton: one predicated st.global; a branch around the
			 * store let LLVM sink its address arithmetic (parameter
			 * reloads included) and the shared-memory read of an
			 * epilogue conversion into each branch */
			asm_store(nv, val, bytes, nv_reg(nv, p, r), pred, &h, NULL);
			continue;
		}
		LLVMBasicBlockRef jb = pred ? nv_open_when(nv, pred, "st") : NULL;
		LLVMValueRef s = LLVMBuildStore(nv->b, val, nv_reg(nv, p, r));
		LLVMSetAlignment(s, (unsigned)bytes);
		if (jb)
			nv_close_when(nv, jb);
	}
}

/* ------------------------------------------------------------------------- */
/* Multi-buffered tiles: cp.async into swizzled slots, ldmatrix out           */
/* ------------------------------------------------------------------------- */

/* One inline asm statement with side effects and at most 20 operands. */
static void inline_asm(Nv *nv, const char *text, const char *cons, LLVMValueRef *args, int n)
{
	LLVMTypeRef at[20];
	if (n > 20)
		abort();
	for (int i = 0; i < n; i++)
		at[i] = LLVMTypeOf(args[i]);
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(nv->c), at, (unsigned)n, 0);
	LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)cons, strlen(cons), 1, 0,
					     LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(nv->b, fty, asmv, args, (unsigned)n, "");
}

/* Whether register r's element of a 2-D map lies at a swizzled slot index a
 * constant *delta away from register 0's, for every thread: neither
 * coordinate wraps around the block, the row (the slot's row: the column
 * when tr) moves by a multiple of the swizzle period 8 and the column by
 * whole 128-byte rows of the swizzled tile (see swizzled_index). */
static bool slot_delta(const NvMap *m, int r, int tr, int64_t R, int64_t C, int es, int64_t *delta)
{
	int64_t d[2];
	for (int v = 0; v < 2; v++) {
		int bd = m->dimmap[v];
		const AnDimDist *dd = &m->dd[bd];
		int64_t top = (int64_t)(dd->tpw - 1) * dd->lane_unit + (int64_t)(dd->wpc - 1) * dd->warp_unit;
		int64_t o = nv_map_offset(m, r, bd), o0 = nv_map_offset(m, 0, bd);
		if (m->bs[bd] < 2 || top + o >= m->bs[bd] || top + o0 >= m->bs[bd])
			return false;
		d[v] = o - o0;
	}
	int64_t dr = tr ? d[1] : d[0], dc = tr ? d[0] : d[1];
	int64_t rows = tr ? C : R, cols = tr ? R : C, w = 128 / es;
	if (dr % 8 || (cols > w ? dc % w : dc))
		return false;
	*delta = dr * (cols > w ? w : cols) + (cols > w ? (dc / w) * rows * w : 0);
	return true;
}

/* async_copy: each thread copies its runs of consecutive columns (16, 8 or 4
 * bytes, within one 16-byte chunk) to the swizzled position in slot `slot`
 * (the layout write_swizzled gives a staged operand); a masked-off run
 * reads nothing and is written as zeros (src-size 0). With a count mask
 * (prefetch.c: a mask true on a prefix of each run, offs < n with n
 * unknown, a descriptor's bounds) a run's src-size is its count, the rest
 * zero-filled, as TMA fills what lies out of bounds. */
/* The third operand of a cp.async of register r's run of vec elements of
 * eb bytes: the run's bytes; with a count mask (an i32 per element: how
 * many from it on are copied) that count clamped to [0, vec] in bytes (a
 * count past the run, or wrapped, moves the run); with a boolean mask its
 * negation, the ignore-src predicate. */
static LLVMValueRef copy_size(Nv *nv, IrValue *mask, int r, int vec, int64_t eb)
{
	if (!mask)
		return nv_i32(nv, (int)(vec * eb));
	if (ir_scalar(mask->type)->kind != TY_I32)
		return LLVMBuildNot(nv->b, nv_reg(nv, mask, r), "");
	LLVMValueRef n = nv_reg(nv, mask, r), v = nv_i32(nv, vec), z = nv_i32(nv, 0);
	n = LLVMBuildSelect(nv->b, LLVMBuildICmp(nv->b, LLVMIntSLT, n, v, ""), n, v, "");
	n = LLVMBuildSelect(nv->b, LLVMBuildICmp(nv->b, LLVMIntSLT, n, z, ""), z, n, "");
	return LLVMBuildMul(nv->b, n, nv_i32(nv, (int)eb), "");
}

/* The async_copy of a vector (prefetch.c vector_async_ok): its slot holds
 * it as it lies in memory; each owning thread copies its runs (4 to 16
 * bytes), a replica copies nothing (its copy would race with the owner's
 * zero fill). */
static void async_copy_vector(Nv *nv, IrOp *op)
{
	IrValue *p = op->ops[0];
	IrValue *mask = op->nops > 2 ? op->ops[2] : NULL;
	const IrType *t = p->type;
	int64_t eb = nv_esize(ir_scalar(t)->elem);
	NvMap m;
	nv_map_init(nv, t, &m);
	int vec = nv_access_vec(nv, p, mask, &m);
	while (vec > 1 && (vec * eb > 16 || m.n % vec))
		vec /= 2;
	if (vec * eb < 4) {
		nv_fail(nv, op, "async_copy needs runs of at least 4 bytes (got %d elements)", vec);
		return;
	}
	int bytes = (int)(vec * eb);
	bool count = mask && ir_scalar(mask->type)->kind == TY_I32, pred = mask && !count;
	LLVMValueRef eoff = LLVMBuildMul(nv->b, nv_reg(nv, op->ops[1], 0), nv_i32(nv, t->numel), "");
	LLVMValueRef owner = nv_map_owner(nv, &m);
	LLVMBasicBlockRef jb = owner ? nv_open_when(nv, owner, "cp") : NULL;
	char text[128];
	snprintf(text, sizeof text, "cp.async.%s.shared.global [$0], [$1], %d, $2;", bytes == 16 ? "cg" : "ca", bytes);
	for (int r = 0; r < m.n; r += vec) {
		LLVMValueRef idx = LLVMBuildAdd(nv->b, nv_map_coord(nv, &m, r, 0), eoff, "");
		LLVMValueRef sz = copy_size(nv, mask, r, vec, eb);
		LLVMValueRef args[3] = {nv_smem_addr32(nv, nv_scratch_off(op), idx, eb), nv_reg(nv, p, r), sz};
		inline_asm(nv, text, pred ? "r,l,b,~{memory}" : "r,l,r,~{memory}", args, 3);
	}
	if (jb)
		nv_close_when(nv, jb);
}

/* How many consecutive registers from a multiple of it a thread reads at
 * consecutive indices of a vector in layout m, for every thread (at most
 * 16 bytes): 4, 2 or 1. */
static int vector_read_vec(const NvMap *m, int64_t es)
{
	int d = m->dimmap[0];
	const AnDimDist *dd = &m->dd[d];
	for (int v = 16 / (int)es > 4 ? 4 : 16 / (int)es; v > 1; v /= 2) {
		bool ok = m->n % v == 0 && dd->lane_unit % v == 0 && dd->warp_unit % v == 0 && m->bs[d] % v == 0;
		for (int r = 0; ok && r < m->n; r += v)
			for (int i = 0; ok && i < v; i++)
				ok = nv_map_offset(m, r + i, d) == nv_map_offset(m, r, d) + i &&
				     nv_map_offset(m, r, d) % v == 0;
		if (ok)
			return v;
	}
	return 1;
}

/* local_read of a vector slot into any layout: each thread reads its
 * elements (replicas read the same ones), vectorized where they run. */
static void local_read_vector(Nv *nv, IrOp *op, LLVMValueRef eoff)
{
	const IrType *t = op->res[0].type;
	int64_t es = nv_esize(t);
	NvMap m;
	nv_map_init(nv, t, &m);
	int vec = m.b ? vector_read_vec(&m, es) : 1;
	LLVMTypeRef et = nv_llty(nv, ir_scalar(t)), i8 = LLVMInt8TypeInContext(nv->c);
	LLVMTypeRef vt = vec > 1 ? LLVMVectorType(et, (unsigned)vec) : et;
	LLVMValueRef *out = nv_regbuf(nv, m.n);
	for (int r = 0; r < m.n; r += vec) {
		LLVMValueRef idx = LLVMBuildAdd(nv->b, nv_map_coord(nv, &m, r, 0), eoff, "");
		LLVMValueRef b = LLVMBuildAdd(nv->b, LLVMBuildMul(nv->b, idx, nv_i32(nv, es), ""),
					      nv_i32(nv, nv_scratch_off(op)), "");
		LLVMValueRef a = LLVMBuildGEP2(nv->b, i8, nv->smem, &b, 1, "");
		LLVMValueRef x = LLVMBuildLoad2(nv->b, vt, a, "");
		LLVMSetAlignment(x, (unsigned)(vec * es));
		for (int i = 0; i < vec; i++)
			out[r + i] = vec > 1 ? LLVMBuildExtractElement(nv->b, x, nv_i32(nv, i), "") : x;
	}
	nv_set(nv, &op->res[0], m.n, out);
}

void nv_lower_async_copy(Nv *nv, IrOp *op)
{
	IrValue *p = op->ops[0];
	if (p->type->rank == 1) {
		async_copy_vector(nv, op);
		return;
	}
	IrValue *mask = op->nops > 2 ? op->ops[2] : NULL;
	const IrType *t = p->type;
	int64_t eb = nv_esize(ir_scalar(t)->elem);
	int64_t R = t->shape[0], C = t->shape[1];
	NvMap m;
	nv_map_init(nv, t, &m);
	/* transposed: the slot holds the tile as [C][R] (runs down the columns) */
	int tr = (int)ir_op_int(op, "transposed", 0), cd = tr ? 0 : 1;
	bool plain = an_fma_slot(op);
	int vec = nv_access_vec(nv, p, mask, &m);
	if (m.brank != 2 || m.dimmap[cd] != cd || m.order[0] != cd)
		vec = 1;
	while (vec > 1 && (vec * eb > 16 || m.nd[cd] % vec))
		vec /= 2;
	if (vec * eb < 4)
		nv_fail(nv, op, "async_copy needs runs of at least 4 bytes (got %d elements)", vec);
	if (vec * eb < 4)
		return;
	int bytes = (int)(vec * eb);
	/* an i32 mask: per element, the count of elements copied from it on */
	bool count = mask && ir_scalar(mask->type)->kind == TY_I32;
	LLVMValueRef eoff = LLVMBuildMul(nv->b, nv_reg(nv, op->ops[1], 0), nv_i32(nv, t->numel), "");
	/* a boolean mask goes in as the ignore-src predicate (its negation),
	 * which the address arithmetic's compares can compute directly; a
	 * count as the src-size */
	bool pred = mask && !count;
	char text[128];
	snprintf(text, sizeof text, "cp.async.%s.shared.global [$0], [$1], %d, $2;", bytes == 16 ? "cg" : "ca",
		 bytes);
	LLVMValueRef d32_0 = NULL;
	/* a tile read back into registers: the key its read wants (with the
	 * column block xored in, runs of other blocks are not a constant away) */
	int mode = plain ? 0 : nv_regs_swizzle(nv, ir_op_int(op, "buffer", -1));
	for (int r = 0; r < m.n; r += vec) {
		/* a run whose swizzled position lies a fixed distance from the
		 * thread's first run is addressed as that one plus a constant (one
		 * base register and immediates instead of a swizzle per run) */
		int64_t delta;
		LLVMValueRef d32;
		if (plain) { /* row-major, as an FMA dot reads it */
			LLVMValueRef r0 = nv_map_coord(nv, &m, r, 0), c0 = nv_map_coord(nv, &m, r, 1);
			LLVMValueRef idx = LLVMBuildAdd(
				nv->b, LLVMBuildAdd(nv->b, LLVMBuildMul(nv->b, r0, nv_i32(nv, C), ""), c0, ""), eoff,
				"");
			d32 = nv_smem_addr32(nv, nv_scratch_off(op), idx, eb);
		} else if (d32_0 && !(mode & 4) && slot_delta(&m, r, tr, R, C, (int)eb, &delta)) {
			d32 = LLVMBuildAdd(nv->b, d32_0, nv_i32(nv, delta * eb), "");
		} else {
			LLVMValueRef r0 = nv_map_coord(nv, &m, r, 0), c0 = nv_map_coord(nv, &m, r, 1);
			LLVMValueRef idx = tr ? nv_slot_index(nv, c0, r0, C, R, (int)eb, eoff, mode)
					      : nv_slot_index(nv, r0, c0, R, C, (int)eb, eoff, mode);
			d32 = nv_smem_addr32(nv, nv_scratch_off(op), idx, eb);
			if (r == 0)
				d32_0 = d32;
		}
		LLVMValueRef sz = copy_size(nv, mask, r, vec, eb);
		LLVMValueRef args[3] = {d32, nv_reg(nv, p, r), sz};
		inline_asm(nv, text, pred ? "r,l,b,~{memory}" : "r,l,r,~{memory}", args, 3);
	}
}

void nv_lower_async_commit(Nv *nv, IrOp *op)
{
	(void)op;
	inline_asm(nv, "cp.async.commit_group;", "~{memory}", NULL, 0);
}

void nv_lower_async_wait(Nv *nv, IrOp *op)
{
	char text[64];
	snprintf(text, sizeof text, "cp.async.wait_group %d;", (int)ir_op_int(op, "pending", 0));
	inline_asm(nv, text, "~{memory}", NULL, 0);
	/* no proxy fence: the tensor cores read what cp.async wrote once the
	 * wait and the barrier after it are done (as Triton and CUTLASS rely on);
	 * fence.proxy.async is only needed after ordinary shared stores */
}

void nv_lower_local_read(Nv *nv, IrOp *op)
{
	/* a K step of the slot ({k0, kfull}, analysis/rslice.c): columns of an
	 * A read into registers, rows of a B the MMA reads; the slot holds all
	 * kfull of them */
	const IrType *rt = op->res[0].type;
	int64_t kfull = ir_op_int(op, "kfull", 0), numel = rt->numel;
	if (kfull)
		numel = numel / rt->shape[ir_op_int(op, "regs", 0) ? 1 : 0] * kfull;
	LLVMValueRef eoff = LLVMBuildMul(nv->b, nv_reg(nv, op->ops[0], 0), nv_i32(nv, numel), "");
	if (ir_op_int(op, "regs", 0)) { /* a tile other ops read (prefetch.c regs_ok) */
		nv_read_swizzled(nv, op, eoff, ir_op_int(op, "transposed", 0) != 0);
		return;
	}
	if (nv_smem_operand(op)) { /* a warpgroup MMA reads the slot itself */
		nv_set_smem_operand(nv, op, nv_scratch_off(op), eoff);
		return;
	}
	if (an_fma_slot(op)) { /* so does an FMA dot: the slot's element offset */
		nv_set1(nv, &op->res[0], eoff);
		return;
	}
	const IrType *t = op->res[0].type;
	bool tr = ir_op_int(op, "transposed", 0) != 0; /* the slot holds the tile as [C][R] */
	if (t->rank == 1) {
		local_read_vector(nv, op, eoff);
		return;
	}
	if (t->rank == 2 && t->layout->kind == LAYOUT_DOT_OP && ir_scalar(t)->kind == TY_F32) {
		nv_read_dot_op_elems(nv, op, eoff, tr); /* tf32 for mma.sync */
		return;
	}
	if (nv_kw4_ldmatrix(op)) { /* int8 for mma.sync, K-contiguous */
		nv_read_kw4_ldmatrix(nv, op, eoff);
		return;
	}
	if (t->rank == 2 && t->layout->kind == LAYOUT_DOT_OP && ir_type_bits(ir_scalar(t)) == 8) {
		nv_read_swizzled(nv, op, eoff, tr); /* a shape ldmatrix does not take: element reads */
		return;
	}
	if (!nv_ldmatrix_ok(op)) {
		nv_fail(nv, op, "local_read needs an 8-, 16- or 32-bit 2-D dot operand layout");
		return;
	}
	nv_read_dot_op_at(nv, op, eoff, tr);
}

/* ------------------------------------------------------------------------- */
/* Tensor memory access: cp.async.bulk.tensor into the slots, mbarriers       */
/* ------------------------------------------------------------------------- */

/* The 32-bit shared address of byte `off` (a value) of the scratch. */
static LLVMValueRef smem_u32(Nv *nv, LLVMValueRef off)
{
	return LLVMBuildAdd(nv->b, nv->smem32, off, "");
}

/* The tile a tensor-memory-access op names and its bytes. */
static const IrType *tma_tile(const IrOp *op, int64_t *tile_bytes)
{
	const IrType *t = ir_op_attr(op, "tile")->type;
	*tile_bytes = t->numel * nv_esize(ir_scalar(t));
	return t;
}

/* The address of slot's mbarrier: its full one (the copy completes it)
 * or, empty = true, a warp-specialized buffer's empty one (the consumers
 * complete it), `stages` mbarriers further. The buffer's mbarriers are
 * allocated apart from its slots ({mbar_offset}, analysis/alloc.c). */
static LLVMValueRef mbar_at(Nv *nv, const IrOp *op, LLVMValueRef slot, bool empty)
{
	int64_t mb = ir_op_int(op, "mbar_offset", 0);
	if (empty)
		mb += 8 * ir_op_int(op, "stages", 1);
	LLVMValueRef off = LLVMBuildAdd(nv->b, nv_i32(nv, mb), LLVMBuildMul(nv->b, slot, nv_i32(nv, 8), ""), "");
	return smem_u32(nv, off);
}

static LLVMValueRef mbar_addr(Nv *nv, const IrOp *op, LLVMValueRef slot)
{
	return mbar_at(nv, op, slot, false);
}

/* The thread that issues copies and initialises mbarriers: thread 0, or in
 * a warp-specialized kernel's producer the producer's first thread. */
static LLVMValueRef is_thread0(Nv *nv)
{
	int lead = nv->in_producer ? nv->ao.num_warps * nv->ao.warp_size : 0;
	return LLVMBuildZExt(nv->b, LLVMBuildICmp(nv->b, LLVMIntEQ, nv->tid, nv_i32(nv, lead), ""),
			     LLVMInt32TypeInContext(nv->c), "");
}

/* Thread 0 initialises one mbarrier per slot (one arrival: the copying
 * thread's arrive.expect_tx) and, for a warp-specialized buffer, one empty
 * mbarrier per slot (one arrival per consumer warp), made visible to the
 * async proxy; every thread fences its earlier shared-memory accesses of
 * these bytes against the copies to come (a barrier follows). */
void nv_lower_tma_init(Nv *nv, IrOp *op)
{
	int S = (int)ir_op_int(op, "stages", 1);
	LLVMValueRef t0 = is_thread0(nv);
	for (int s = 0; s < S; s++) {
		LLVMValueRef args[2] = {t0, mbar_addr(nv, op, nv_i32(nv, s))};
		inline_asm(nv, "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p mbarrier.init.shared::cta.b64 [$1], 1; }",
			   "r,r,~{memory}", args, 2);
	}
	for (int s = 0; ir_op_int(op, "ws", 0) && s < S; s++) {
		char text[128];
		snprintf(text, sizeof text, "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p mbarrier.init.shared::cta.b64 [$1], %d; }",
			 nv->ao.num_warps);
		LLVMValueRef args[2] = {t0, mbar_at(nv, op, nv_i32(nv, s), true)};
		inline_asm(nv, text, "r,r,~{memory}", args, 2);
	}
	LLVMValueRef a0[1] = {t0};
	inline_asm(nv, "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p fence.mbarrier_init.release.cluster; }", "r,~{memory}",
		   a0, 1);
	inline_asm(nv, "fence.proxy.async.shared::cta;", "~{memory}", NULL, 0);
}

void nv_lower_tma_inval(Nv *nv, IrOp *op)
{
	int S = (int)ir_op_int(op, "stages", 1);
	LLVMValueRef t0 = is_thread0(nv);
	int n = ir_op_int(op, "ws", 0) ? 2 * S : S; /* the empty mbarriers follow the full ones */
	for (int s = 0; s < n; s++) {
		LLVMValueRef args[2] = {t0, mbar_addr(nv, op, nv_i32(nv, s))};
		inline_asm(nv, "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p mbarrier.inval.shared::cta.b64 [$1]; }",
			   "r,r,~{memory}", args, 2);
	}
}

/* The warp that issues the copies: warp 0, or in a warp-specialized
 * kernel's producer the producer's first warp (the only one that runs). */
static int issue_warp(Nv *nv)
{
	return nv->in_producer ? nv->ao.num_warps : 0;
}

/* The issuing warp (where pred holds) arms the slot's mbarrier with the
 * tile's bytes and issues one bulk tensor copy per 128-byte column block of
 * the slot (the slot layout of swizzled_index: rows of at most 128 bytes,
 * the map's swizzle of the same width; wider tiles are column blocks of
 * [rows][128 bytes] one after the other). Coordinates go innermost first.
 * One asm statement: a warp-uniform branch (the warp id comes from lane 0,
 * pred is a scalar) around elect.sync, which picks one lane of the whole
 * warp, and the arrive and copies predicated by it: ptxas issues each copy
 * once, straight-line (a per-thread condition, tid == 0, made it loop over
 * the warp's lanes, electing each in turn, for every copy).
 * Where the CTA's warps all run the copy through a parameter's map, column
 * block j is issued by warp j instead (as Triton does; one copy in the
 * code, its block's offsets from the warp id), and warp 0 arms the
 * mbarrier: a block landing before the arrive leaves the transaction count
 * negative and the phase open until the arrive, so the order of the warps
 * does not matter. */
void nv_lower_tma_copy(Nv *nv, IrOp *op)
{
	int64_t tb;
	const IrType *t = tma_tile(op, &tb);
	int rank = t->rank, es = (int)nv_esize(ir_scalar(t));
	if (rank != 2 || op->nops != 3 + rank) {
		nv_fail(nv, op, "tma_copy: only 2-D tiles");
		return;
	}
	int64_t R = t->shape[0], C = t->shape[1], w = 128 / es, bw = C > w ? w : C;
	int nbox = (int)((C + bw - 1) / bw);
	/* the map's generic address (a parameter's, or global scratch: tmap.c) */
	LLVMValueRef mp = nv_reg(nv, op->ops[0], 0);
	bool param = LLVMIsAArgument(mp) != NULL;
	if (LLVMGetPointerAddressSpace(LLVMTypeOf(mp)) != 0)
		mp = LLVMBuildAddrSpaceCast(nv->b, mp, LLVMPointerTypeInContext(nv->c, 0), "");
	/* split over the warps: only a parameter's map (a grid constant); a map
	 * made in the kernel is acquired by the warp that made it (tmap.c) */
	bool split = nbox > 1 && param && !nv->in_producer && nbox <= nv->ao.num_warps;
	if (!split && nbox > 8) {
		nv_fail(nv, op, "tma_copy: at most 8 column blocks of 128 bytes (got %d)", nbox);
		return;
	}
	LLVMTypeRef i32 = LLVMInt32TypeInContext(nv->c);
	LLVMValueRef slot = nv_reg(nv, op->ops[1], 0), opred = nv_reg(nv, op->ops[2], 0);
	LLVMValueRef tmap = LLVMBuildPtrToInt(nv->b, mp, LLVMInt64TypeInContext(nv->c), "");
	LLVMValueRef bar = mbar_addr(nv, op, slot);
	LLVMValueRef base = LLVMBuildAdd(nv->b, nv_i32(nv, nv_scratch_off(op)), LLVMBuildMul(nv->b, slot, nv_i32(nv, tb), ""), "");
	LLVMValueRef c_outer = nv_reg(nv, op->ops[3], 0), c_inner = nv_reg(nv, op->ops[4], 0);
	/* operands: $0 this warp copies, $1 mbarrier, $2 map, $3 outer
	 * coordinate, $4 this warp arms the mbarrier, then per copy its slot
	 * address and inner coordinate */
	LLVMValueRef args[5 + 2 * 8] = {NULL, bar, tmap, c_outer, NULL};
	char text[320 + 8 * 160], cons[64];
	int n = 5;
	if (split) {
		LLVMValueRef j = nv->warp;
		args[0] = LLVMBuildAnd(nv->b, LLVMBuildICmp(nv->b, LLVMIntULT, j, nv_i32(nv, nbox), ""), opred, "");
		args[4] = LLVMBuildICmp(nv->b, LLVMIntEQ, j, nv_i32(nv, 0), "");
		args[n++] = smem_u32(nv, LLVMBuildAdd(nv->b, base, LLVMBuildMul(nv->b, j, nv_i32(nv, R * bw * es), ""), ""));
		args[n++] = LLVMBuildAdd(nv->b, c_inner, LLVMBuildMul(nv->b, j, nv_i32(nv, bw), ""), "");
	} else {
		args[0] = LLVMBuildAnd(nv->b, LLVMBuildICmp(nv->b, LLVMIntEQ, nv->warp, nv_i32(nv, issue_warp(nv)), ""),
				       opred, "");
		args[4] = LLVMConstInt(LLVMInt1TypeInContext(nv->c), 1, 0);
		for (int j = 0; j < nbox; j++) {
			args[n++] = smem_u32(nv, LLVMBuildAdd(nv->b, base, nv_i32(nv, j * R * bw * es), ""));
			args[n++] = j ? LLVMBuildAdd(nv->b, c_inner, nv_i32(nv, j * bw), "") : c_inner;
		}
	}
	args[0] = LLVMBuildZExt(nv->b, args[0], i32, "");
	args[4] = LLVMBuildZExt(nv->b, args[4], i32, "");
	int u = snprintf(text, sizeof text,
			 "{\n.reg .pred p, e, a;\nsetp.ne.b32 p, $0, 0;\n@!p bra.uni ct_tma_skip;\n"
			 "elect.sync _|e, -1;\nsetp.ne.and.b32 a, $4, 0, e;\n"
			 "@a mbarrier.arrive.expect_tx.shared::cta.b64 _, [$1], %lld;\n",
			 (long long)tb);
	int v = snprintf(cons, sizeof cons, "r,r,l,r,r");
	for (int k = 5; k < n; k += 2) {
		u += snprintf(text + u, sizeof text - (size_t)u,
			      "@e cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
			      " [$%d], [$2, {$%d, $3}], [$1];\n",
			      k, k + 1);
		v += snprintf(cons + v, sizeof cons - (size_t)v, ",r,r");
	}
	snprintf(text + u, sizeof text - (size_t)u, "ct_tma_skip:\n}");
	snprintf(cons + v, sizeof cons - (size_t)v, ",~{memory}");
	inline_asm(nv, text, cons, args, n);
}

/* Waits (every thread) for the phase of parity bit `slot` of phases of
 * the slot's full mbarrier, or with {empty} its empty one. */
void nv_lower_tma_wait(Nv *nv, IrOp *op)
{
	LLVMValueRef slot = nv_reg(nv, op->ops[0], 0), ph = nv_reg(nv, op->ops[1], 0);
	LLVMValueRef par = LLVMBuildAnd(nv->b, LLVMBuildLShr(nv->b, ph, slot, ""), nv_i32(nv, 1), "");
	LLVMValueRef args[2] = {mbar_at(nv, op, slot, ir_op_int(op, "empty", 0) != 0), par};
	inline_asm(nv,
		   "{ .reg .pred done; ct_tma_wait: mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1; "
		   "@!done bra.uni ct_tma_wait; }",
		   "r,r,~{memory}", args, 2);
}

/* A consumer warp is done with the slot (where pred holds): its lane 0
 * arrives on the slot's empty mbarrier, which completes once every
 * consumer warp has (the producer waits for that before it copies the next
 * tile into the slot). The arrive releases the warp's earlier reads. */
void nv_lower_tma_release(Nv *nv, IrOp *op)
{
	LLVMValueRef slot = nv_reg(nv, op->ops[0], 0);
	LLVMValueRef l0 = LLVMBuildICmp(nv->b, LLVMIntEQ, nv->lane, nv_i32(nv, 0), "");
	LLVMValueRef pred = LLVMBuildZExt(nv->b, LLVMBuildAnd(nv->b, l0, nv_reg(nv, op->ops[1], 0), ""),
					  LLVMInt32TypeInContext(nv->c), "");
	LLVMValueRef args[2] = {pred, mbar_at(nv, op, slot, true)};
	inline_asm(nv,
		   "{ .reg .pred p; .reg .b64 st; setp.ne.b32 p, $0, 0; @p mbarrier.arrive.shared::cta.b64 st, [$1]; }",
		   "r,r,~{memory}", args, 2);
}

/* tma_store: every thread writes its elements of the value into the op's
 * scratch in the slot layout of tma_copy (nv_write_swizzled: column blocks
 * of rows of at most 128 bytes, the map's swizzle), fences them for the
 * async proxy, and meets the others at a barrier. Then one lane of warp 0
 * (the warp that acquired a map the kernel made, tmap.c) issues one bulk
 * tensor store per column block, commits them as one group and waits
 * until they have read the scratch: the next barrier makes it free again.
 * A deferred store (analysis/alloc.c) waits for the previous one's reads
 * before it writes instead, and not for its own. Their writes to global
 * memory complete on their own (the unit skips what lies outside the
 * map's bounds). */
void nv_lower_tma_store(Nv *nv, IrOp *op)
{
	const IrValue *v = op->ops[3];
	const IrType *t = v->type;
	int es = (int)nv_esize(t);
	/* a column window of the value ({col0, cols}: an_tma_store_windows) */
	int64_t cols = ir_op_int(op, "cols", 0), col0 = ir_op_int(op, "col0", 0);
	int64_t R = t->shape[0], C = cols > 0 ? cols : t->shape[1], w = 128 / es, bw = C > w ? w : C;
	int nbox = (int)((C + bw - 1) / bw);
	if (t->rank != 2 || nbox > 8) {
		nv_fail(nv, op, "tma_store: a 2-D block of at most 8 column blocks of 128 bytes");
		return;
	}
	int64_t off = nv_scratch_off(op);
	bool deferred = an_tma_store_deferred(op);
	if (deferred) {
		/* the previous deferred store's reads of the staging: done before
		 * anyone writes it (only its issuing thread has a group to wait for) */
		nv_asm_void(nv, "cp.async.bulk.wait_group.read 0;");
		nv_barrier(nv);
	}
	nv_write_swizzled_cols(nv, v, off, false, col0, cols);
	nv_fence_async_shared(nv);
	nv_barrier(nv);
	LLVMValueRef mp = nv_reg(nv, op->ops[0], 0);
	if (LLVMGetPointerAddressSpace(LLVMTypeOf(mp)) != 0)
		mp = LLVMBuildAddrSpaceCast(nv->b, mp, LLVMPointerTypeInContext(nv->c, 0), "");
	LLVMTypeRef i32 = LLVMInt32TypeInContext(nv->c);
	LLVMValueRef c_outer = nv_reg(nv, op->ops[1], 0), c_inner = nv_reg(nv, op->ops[2], 0);
	/* operands: $0 this warp stores, $1 map, $2 outer coordinate, then per
	 * column block its scratch address and inner coordinate */
	LLVMValueRef args[3 + 2 * 8] = {
		LLVMBuildZExt(nv->b, LLVMBuildICmp(nv->b, LLVMIntEQ, nv->warp, nv_i32(nv, 0), ""), i32, ""),
		LLVMBuildPtrToInt(nv->b, mp, LLVMInt64TypeInContext(nv->c), ""), c_outer};
	char text[256 + 8 * 128], cons[64];
	int n = 3;
	int u = snprintf(text, sizeof text,
			 "{\n.reg .pred p, e;\nsetp.ne.b32 p, $0, 0;\n@!p bra.uni ct_tmas_skip;\nelect.sync _|e, -1;\n");
	int cv = snprintf(cons, sizeof cons, "r,l,r");
	for (int j = 0; j < nbox; j++) {
		args[n] = nv_smem_addr32(nv, off + (int64_t)j * R * bw * es, NULL, es);
		args[n + 1] = j ? LLVMBuildAdd(nv->b, c_inner, nv_i32(nv, j * bw), "") : c_inner;
		u += snprintf(text + u, sizeof text - (size_t)u,
			      "@e cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$1, {$%d, $2}], [$%d];\n", n + 1, n);
		cv += snprintf(cons + cv, sizeof cons - (size_t)cv, ",r,r");
		n += 2;
	}
	snprintf(text + u, sizeof text - (size_t)u, "@e cp.async.bulk.commit_group;\n%sct_tmas_skip:\n}",
		 deferred ? "" : "@e cp.async.bulk.wait_group.read 0;\n");
	snprintf(cons + cv, sizeof cons - (size_t)cv, ",~{memory}");
	inline_asm(nv, text, cons, args, n);
}
