/* atomic.c: atomic_rmw and atomic_cas on global memory.
 *
 * Each element is one PTX atomic in inline asm that names the order and the
 * scope the op asks for, spelled as Triton spells them: read-modify-write
 * as `atom.global.<scope>.<sem>.<op>.<type>` (atom.global.gpu.acq_rel.add.f32),
 * compare-and-swap as `atom.global.<sem>.<scope>.cas.b<bits>`. The result
 * register starts at 0 and the atomic is predicated (`@p atom`) by the
 * element's mask and by the owner predicate (a thread holding a copy of
 * another thread's element does nothing; a scalar atomic is done by thread
 * 0). Types: integers add (.u), and / or / xor / xchg (.b), max / min (.s
 * or .u); floats add (.f32, .f64, .noftz.f16, .noftz.bf16 on sm_90, pairs
 * of 16-bit elements as .f16x2 / .bf16x2 where they are contiguous), xchg,
 * and max / min as integer atomics on their bits (a value with the sign bit
 * clear by signed max / min, one with it set by unsigned min / max, a NaN
 * leaving memory as it is). Where PTX has no such atomic (bf16 add before
 * sm_90, f16 add before sm_70, anything before sm_70, which has no .sem or
 * .scope) LLVM's atomicrmw / cmpxchg, relaxed, between fences of the scope.
 *
 * The old value then reaches the threads holding copies of the element: a
 * scalar's through 8 bytes of scratch, a block's by shuffle when the copies
 * of each element share a warp, else through its row-major scratch (see
 * an_copies, an_atomic_scratch). Only when it is used.
 */
#include <stdio.h>
#include <string.h>

#include "nvptx.h"

typedef struct Atom {
	const char *sem;   /* relaxed, acquire, release, acq_rel */
	const char *scope; /* gpu, cta, sys */
	bool qual;         /* sm_70+: the atomic itself carries .sem and .scope */
	bool fenced;       /* release / acquire by fences around the op */
} Atom;

static bool has_release(const Atom *a)
{
	return !strcmp(a->sem, "release") || !strcmp(a->sem, "acq_rel");
}
static bool has_acquire(const Atom *a)
{
	return !strcmp(a->sem, "acquire") || !strcmp(a->sem, "acq_rel");
}

static void asm_void(Nv *nv, const char *text)
{
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(nv->c), NULL, 0, 0);
	LLVMValueRef f =
		LLVMGetInlineAsm(fty, (char *)text, strlen(text), "~{memory}", 9, 1, 0, LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(nv->b, fty, f, NULL, 0, "");
}

/* A fence of the op's scope: fence.acq_rel (sm_70+) or membar. */
static void fence(Nv *nv, const Atom *a)
{
	char text[48];
	if (a->qual)
		snprintf(text, sizeof text, "fence.acq_rel.%s;", a->scope);
	else
		snprintf(text, sizeof text, "membar.%s;", !strcmp(a->scope, "gpu") ? "gl" : a->scope);
	asm_void(nv, text);
}

static const char *reg_class(int bits)
{
	return bits == 16 ? "h" : bits == 64 ? "l" : "r";
}

/* n PTX atomics on ptr in one inline asm: `@preds[i] <instr[i]> $0, [ptr],
 * vals...` (preds[i] NULL: not predicated), the result register set to 0
 * first when some are predicated. The predicates are exclusive. Values and
 * result are integers of `bits` bits. */
static LLVMValueRef atom_asm(Nv *nv, int n, const char *const *instr, LLVMValueRef *preds, int bits, LLVMValueRef ptr,
			     LLVMValueRef *vals, int nvals)
{
	LLVMTypeRef ity = LLVMIntTypeInContext(nv->c, (unsigned)bits);
	LLVMTypeRef at[8];
	LLVMValueRef args[8];
	int na = 0, pi[2] = {-1, -1};
	for (int i = 0; i < n; i++)
		if (preds[i]) {
			pi[i] = 1 + na;
			at[na] = LLVMInt1TypeInContext(nv->c);
			args[na++] = preds[i];
		}
	bool init = na > 0;
	int pp = 1 + na;
	at[na] = LLVMTypeOf(ptr);
	args[na++] = ptr;
	for (int i = 0; i < nvals; i++) {
		at[na] = ity;
		args[na++] = vals[i];
	}
	char text[512], cons[64];
	int o = 0;
	if (init)
		o += snprintf(text + o, sizeof text - (size_t)o, "mov.b%d $0, 0;\n\t", bits);
	for (int i = 0; i < n; i++) {
		if (pi[i] >= 0)
			o += snprintf(text + o, sizeof text - (size_t)o, "@$%d ", pi[i]);
		o += snprintf(text + o, sizeof text - (size_t)o, "%s $0, [$%d]", instr[i], pp);
		for (int v = 0; v < nvals; v++)
			o += snprintf(text + o, sizeof text - (size_t)o, ", $%d", pp + 1 + v);
		o += snprintf(text + o, sizeof text - (size_t)o, ";%s", i + 1 < n ? "\n\t" : "");
	}
	int c = snprintf(cons, sizeof cons, "=%s%s", init ? "&" : "", reg_class(bits));
	for (int i = 0; i < na - 1 - nvals; i++)
		c += snprintf(cons + c, sizeof cons - (size_t)c, ",b");
	c += snprintf(cons + c, sizeof cons - (size_t)c, ",l");
	for (int v = 0; v < nvals; v++)
		c += snprintf(cons + c, sizeof cons - (size_t)c, ",%s", reg_class(bits));
	snprintf(cons + c, sizeof cons - (size_t)c, ",~{memory}");
	LLVMTypeRef fty = LLVMFunctionType(ity, at, (unsigned)na, 0);
	LLVMValueRef f =
		LLVMGetInlineAsm(fty, text, strlen(text), cons, strlen(cons), 1, 0, LLVMInlineAsmDialectATT, 0);
	return LLVMBuildCall2(nv->b, fty, f, args, (unsigned)na, "");
}

/* "atom.global.<scope>.<sem>.<op>" (read-modify-write) */
static void rmw_name(char *buf, size_t n, const Atom *a, const char *opty)
{
	if (a->qual)
		snprintf(buf, n, "atom.global.%s.%s.%s", a->scope, a->sem, opty);
	else
		snprintf(buf, n, "atom.global.%s", opty);
}

static LLVMValueRef to_bits(Nv *nv, LLVMValueRef x, int bits)
{
	return LLVMBuildBitCast(nv->b, x, LLVMIntTypeInContext(nv->c, (unsigned)bits), "");
}

/* The LLVM form (relaxed, the op's sync scope) of one element, under a
 * branch on pred: 0 when it is off. */
static LLVMValueRef llvm_atomic(Nv *nv, const IrOp *op, const Atom *a, LLVMAtomicRMWBinOp bop, LLVMValueRef pred,
				LLVMValueRef ptr, LLVMValueRef x, LLVMValueRef y)
{
	const char *sn = !strcmp(a->scope, "cta") ? "block" : !strcmp(a->scope, "sys") ? "" : "device";
	unsigned ss = LLVMGetSyncScopeID(nv->c, sn, strlen(sn));
	LLVMTypeRef ty = LLVMTypeOf(x);
	LLVMBasicBlockRef cur = LLVMGetInsertBlock(nv->b), ab = NULL, jb = NULL;
	if (pred) {
		ab = nv_new_bb(nv, "atom");
		jb = nv_new_bb(nv, "atom.end");
		LLVMBuildCondBr(nv->b, pred, ab, jb);
		LLVMPositionBuilderAtEnd(nv->b, ab);
	}
	LLVMValueRef old;
	if (op->opc == OP_ATOMIC_CAS) {
		bool fl = LLVMGetTypeKind(ty) != LLVMIntegerTypeKind;
		int bits = ir_type_bits(ir_scalar(op->res[0].type));
		LLVMValueRef c = fl ? to_bits(nv, x, bits) : x, v = fl ? to_bits(nv, y, bits) : y;
		LLVMValueRef r = LLVMBuildAtomicCmpXchgSyncScope(nv->b, ptr, c, v, LLVMAtomicOrderingMonotonic,
								 LLVMAtomicOrderingMonotonic, ss);
		old = LLVMBuildExtractValue(nv->b, r, 0, "");
		if (fl)
			old = LLVMBuildBitCast(nv->b, old, ty, "");
	} else {
		old = LLVMBuildAtomicRMWSyncScope(nv->b, bop, ptr, x, LLVMAtomicOrderingMonotonic, ss);
	}
	if (!pred)
		return old;
	LLVMBasicBlockRef end = LLVMGetInsertBlock(nv->b);
	LLVMBuildBr(nv->b, jb);
	LLVMPositionBuilderAtEnd(nv->b, jb);
	LLVMValueRef phi = LLVMBuildPhi(nv->b, ty, "");
	LLVMValueRef iv[2] = {old, LLVMConstNull(ty)};
	LLVMBasicBlockRef ib[2] = {end, cur};
	LLVMAddIncoming(phi, iv, ib, 2);
	(void)ab;
	return phi;
}

static LLVMAtomicRMWBinOp llvm_binop(const char *k, bool fl, bool sg)
{
	if (!strcmp(k, "add"))
		return fl ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd;
	if (!strcmp(k, "max"))
		return fl ? LLVMAtomicRMWBinOpFMax : sg ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax;
	if (!strcmp(k, "min"))
		return fl ? LLVMAtomicRMWBinOpFMin : sg ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin;
	if (!strcmp(k, "and"))
		return LLVMAtomicRMWBinOpAnd;
	if (!strcmp(k, "or"))
		return LLVMAtomicRMWBinOpOr;
	if (!strcmp(k, "xor"))
		return LLVMAtomicRMWBinOpXor;
	return LLVMAtomicRMWBinOpXchg;
}

/* Float max / min as integer atomics on the bits: for max, a value with the
 * sign bit clear is larger than every value with it set and orders like
 * its bits as a signed integer; one with it set orders reversed, like its
 * bits unsigned, so signed max for the first and unsigned min for the
 * second (min: signed min, unsigned max). -0.0 goes with the negatives,
 * ordered below +0.0. A NaN value does a signed max with INT_MIN (min:
 * INT_MAX), which returns the old value and changes nothing, as maxnum
 * ignores a NaN operand (a NaN already in memory stays: its bits compare
 * above every number). */
static LLVMValueRef float_minmax(Nv *nv, const Atom *a, bool max, int bits, LLVMValueRef pred, LLVMValueRef ptr,
				 LLVMValueRef x)
{
	LLVMTypeRef ity = LLVMIntTypeInContext(nv->c, (unsigned)bits);
	LLVMValueRef xi = to_bits(nv, x, bits);
	LLVMValueRef nan = LLVMBuildFCmp(nv->b, LLVMRealUNO, x, x, "");
	LLVMValueRef neg = LLVMBuildAnd(nv->b, LLVMBuildICmp(nv->b, LLVMIntSLT, xi, LLVMConstNull(ity), ""),
					LLVMBuildNot(nv->b, nan, ""), "");
	unsigned long long keep = max ? 1ull << (bits - 1) : (1ull << (bits - 1)) - 1;
	LLVMValueRef v = LLVMBuildSelect(nv->b, nan, LLVMConstInt(ity, keep, 0), xi, "");
	char pos[96], ng[96], t[24];
	snprintf(t, sizeof t, "%s.s%d", max ? "max" : "min", bits);
	rmw_name(pos, sizeof pos, a, t);
	snprintf(t, sizeof t, "%s.u%d", max ? "min" : "max", bits);
	rmw_name(ng, sizeof ng, a, t);
	const char *instr[2] = {pos, ng};
	LLVMValueRef preds[2] = {nv_and_pred(nv, pred, LLVMBuildNot(nv->b, neg, "")), nv_and_pred(nv, pred, neg)};
	LLVMValueRef old = atom_asm(nv, 2, instr, preds, bits, ptr, &v, 1);
	return LLVMBuildBitCast(nv->b, old, LLVMTypeOf(x), "");
}

/* The PTX operation and type of a read-modify-write of kind k on et (one
 * element, or pair = two 16-bit floats in one 32-bit word), or NULL when
 * PTX has no such atomic on this arch. */
static const char *rmw_opty(char *buf, size_t n, const Nv *nv, const char *k, const IrType *et, bool pair)
{
	int bits = ir_type_bits(et);
	if (bits == 16 && !(ir_is_float(et) && !strcmp(k, "add")))
		return NULL; /* 16-bit atomics are cas and float add only */
	if (ir_is_float(et)) {
		if (!strcmp(k, "xchg"))
			snprintf(buf, n, "exch.b%d", bits);
		else if (strcmp(k, "add"))
			return NULL;
		else if (et->kind == TY_F32 || et->kind == TY_F64)
			snprintf(buf, n, "add.f%d", bits);
		else if (et->kind == TY_F16 && nv->ao.arch >= 70)
			snprintf(buf, n, "add.noftz.f16%s", pair ? "x2" : "");
		else if (et->kind == TY_BF16 && nv->ao.arch >= 90)
			snprintf(buf, n, "add.noftz.bf16%s", pair ? "x2" : "");
		else
			return NULL;
		return buf;
	}
	if (!strcmp(k, "add"))
		snprintf(buf, n, "add.u%d", bits);
	else if (!strcmp(k, "max") || !strcmp(k, "min"))
		snprintf(buf, n, "%s.%c%d", k, ir_is_signed(et) ? 's' : 'u', bits);
	else if (!strcmp(k, "xchg"))
		snprintf(buf, n, "exch.b%d", bits);
	else
		snprintf(buf, n, "%s.b%d", k, bits); /* and, or, xor */
	return buf;
}

/* Hands the old values to the threads holding copies of the elements (see
 * the file comment). */
static void share_old(Nv *nv, IrOp *op, NvMap *m, LLVMValueRef owner, LLVMValueRef *out)
{
	const IrType *t = op->res[0].type;
	if (!ir_is_block(t)) {
		if (an_atomic_scratch(op) == 0) /* unused */
			return;
		int64_t off = nv_scratch_off(op);
		LLVMBasicBlockRef sb = nv_new_bb(nv, "bc"), jb = nv_new_bb(nv, "bc.end");
		LLVMBuildCondBr(nv->b, owner, sb, jb);
		LLVMPositionBuilderAtEnd(nv->b, sb);
		nv_smem_store(nv, t, off, nv_i32(nv, 0), out[0]);
		LLVMBuildBr(nv->b, jb);
		LLVMPositionBuilderAtEnd(nv->b, jb);
		nv_barrier(nv);
		out[0] = nv_smem_load(nv, t, off, nv_i32(nv, 0));
		return;
	}
	unsigned lanes;
	AnCopies c = an_copies(t, &lanes);
	if (c == AN_COPIES_NONE || (c == AN_COPIES_WARPS && an_atomic_scratch(op) == 0) ||
	    ir_count_uses(nv->f, &op->res[0]) == 0)
		return;
	if (c == AN_COPIES_LANES) {
		LLVMValueRef src = LLVMBuildAnd(nv->b, nv->lane, nv_i32(nv, ~(int64_t)lanes & 31), "");
		for (int r = 0; r < m->n; r++)
			out[r] = nv_shfl(nv, "idx", out[r], src);
		return;
	}
	int64_t off = nv_scratch_off(op);
	LLVMBasicBlockRef sb = nv_new_bb(nv, "bc"), jb = nv_new_bb(nv, "bc.end");
	LLVMBuildCondBr(nv->b, owner, sb, jb);
	LLVMPositionBuilderAtEnd(nv->b, sb);
	for (int r = 0; r < m->n; r++)
		nv_smem_store(nv, t, off, nv_map_lin(nv, m, t, r), out[r]);
	LLVMBuildBr(nv->b, jb);
	LLVMPositionBuilderAtEnd(nv->b, jb);
	nv_barrier(nv);
	for (int r = 0; r < m->n; r++)
		out[r] = nv_smem_load(nv, t, off, nv_map_lin(nv, m, t, r));
}

void nv_lower_atomic(Nv *nv, IrOp *op)
{
	bool cas = op->opc == OP_ATOMIC_CAS;
	IrValue *p = op->ops[0];
	IrValue *mask = !cas && op->nops > 2 ? op->ops[2] : NULL;
	const IrType *et = ir_scalar(op->res[0].type);
	int bits = ir_type_bits(et);
	bool fl = ir_is_float(et);
	const char *k = cas ? "cas" : ir_op_str(op, "kind", "add");
	Atom a = {ir_op_str(op, "sem", "acq_rel"), ir_op_str(op, "scope", "gpu"), nv->ao.arch >= 70, false};
	if (strcmp(a.sem, "relaxed") && strcmp(a.sem, "acquire") && strcmp(a.sem, "release") &&
	    strcmp(a.sem, "acq_rel")) {
		nv_fail(nv, op, "unknown atomic sem %s", a.sem);
		return;
	}
	if (strcmp(a.scope, "gpu") && strcmp(a.scope, "cta") && strcmp(a.scope, "sys")) {
		nv_fail(nv, op, "unknown atomic scope %s", a.scope);
		return;
	}
	if (!cas && strcmp(k, "add") && strcmp(k, "max") && strcmp(k, "min") && strcmp(k, "and") && strcmp(k, "or") &&
	    strcmp(k, "xor") && strcmp(k, "xchg")) {
		nv_fail(nv, op, "unknown atomic kind %s", k);
		return;
	}
	if (fl && (!strcmp(k, "and") || !strcmp(k, "or") || !strcmp(k, "xor"))) {
		nv_fail(nv, op, "atomic %s on floats", k);
		return;
	}
	if (bits != 16 && bits != 32 && bits != 64) {
		nv_fail(nv, op, "atomics on %d-bit elements", bits);
		return;
	}
	char opty[48], name[128];
	bool minmax = fl && bits >= 32 && (!strcmp(k, "max") || !strcmp(k, "min"));
	/* PTX's own atomic, or LLVM's (a compare-and-swap loop where PTX has none) */
	bool native = a.qual && (cas || minmax || rmw_opty(opty, sizeof opty, nv, k, et, false));
	if (native && cas)
		snprintf(name, sizeof name, "atom.global.%s.%s.cas.b%d", a.sem, a.scope, bits);
	else if (native && !minmax)
		rmw_name(name, sizeof name, &a, opty);
	/* consecutive 16-bit floats added as one 32-bit pair */
	NvMap m;
	nv_map_init(nv, p->type, &m);
	bool pair = native && !cas && fl && bits == 16 && !strcmp(k, "add") && ir_is_block(p->type) &&
		    nv_access_vec(nv, p, mask, &m) >= 2;
	char pname[128];
	if (pair)
		rmw_name(pname, sizeof pname, &a, rmw_opty(opty, sizeof opty, nv, k, et, true));
	a.fenced = !native;
	LLVMValueRef owner = nv_map_owner(nv, &m);
	LLVMValueRef *out = nv_regbuf(nv, m.n);
	if (a.fenced && has_release(&a))
		fence(nv, &a);
	for (int r = 0; r < m.n; r += pair ? 2 : 1) {
		LLVMValueRef pred = nv_and_pred(nv, owner, mask ? nv_reg(nv, mask, r) : NULL);
		LLVMValueRef ptr = nv_reg(nv, p, r), x = nv_reg(nv, op->ops[1], r);
		LLVMValueRef y = cas ? nv_reg(nv, op->ops[2], r) : NULL;
		if (!native) {
			out[r] = llvm_atomic(nv, op, &a, llvm_binop(k, fl, ir_is_signed(et)), pred, ptr, x, y);
		} else if (minmax) {
			out[r] = float_minmax(nv, &a, !strcmp(k, "max"), bits, pred, ptr, x);
		} else if (pair) {
			LLVMTypeRef ety = LLVMTypeOf(x), vty = LLVMVectorType(ety, 2);
			LLVMValueRef v = LLVMBuildInsertElement(nv->b, LLVMGetUndef(vty), x, nv_i32(nv, 0), "");
			v = LLVMBuildInsertElement(nv->b, v, nv_reg(nv, op->ops[1], r + 1), nv_i32(nv, 1), "");
			v = to_bits(nv, v, 32);
			const char *in[1] = {pname};
			LLVMValueRef old = atom_asm(nv, 1, in, &pred, 32, ptr, &v, 1);
			old = LLVMBuildBitCast(nv->b, old, vty, "");
			out[r] = LLVMBuildExtractElement(nv->b, old, nv_i32(nv, 0), "");
			out[r + 1] = LLVMBuildExtractElement(nv->b, old, nv_i32(nv, 1), "");
		} else {
			LLVMValueRef v[2] = {fl ? to_bits(nv, x, bits) : x, y && fl ? to_bits(nv, y, bits) : y};
			const char *in[1] = {name};
			LLVMValueRef old = atom_asm(nv, 1, in, &pred, bits, ptr, v, cas ? 2 : 1);
			out[r] = fl ? LLVMBuildBitCast(nv->b, old, LLVMTypeOf(x), "") : old;
		}
	}
	if (a.fenced && has_acquire(&a))
		fence(nv, &a);
	share_old(nv, op, &m, owner, out);
	nv_set(nv, &op->res[0], m.n, out);
}
