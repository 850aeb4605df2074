/* print_mlir.c: the module in Triton's MLIR spelling, a view for people and
 * for tools that look for Triton's op names in a kernel's text (`"tt.reduce"`,
 * `scf.for`, `llvm.intr.assume`, `arith.constant ... : f32`). It is not read
 * back (the textual form of print.c is the one that round-trips).
 *
 * Each op is printed the way Triton's MLIR printer writes its counterpart:
 * dialect-qualified names (tt, arith, math, scf, ttg), signless integer types
 * (u32 prints as i32), `tensor<..>` blocks and `!tt.ptr<..>` pointers,
 * reductions and scans in MLIR's generic form. An op with no Triton
 * counterpart keeps its ctriton name under `ct.` (the hints multiple_of,
 * max_contiguous and max_constancy, which Triton keeps as attributes). Values
 * are numbered as print.c numbers them, so the two texts correspond line for
 * line; locations are left out. The TTIR view opens with a bare `module {`;
 * the TTGIR view with the aliases of its layouts (`#blocked =
 * #ttg.blocked<{...}>`, `#mma = #ttg.nvidia_mma<{...}>`), which its tensor
 * types name, and the module's attributes (`"ttg.num-warps"`, `ttg.target`).
 */
#include "ir.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Buf {
	char *s;
	size_t n, cap;
	int tmp; /* helper constants printed so far (neg, not, casts to i1) */
	/* TTGIR: the blocked, mma and shared layouts, printed once at the top
	 * as aliases (#blocked, #blocked1, #mma, ...) in order of first use */
	const IrLayout **alias;
	int nalias, capalias;
} Buf;

static void put(Buf *b, const char *s)
{
	size_t n = strlen(s);
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *p = realloc(b->s, cap);
		if (!p)
			abort();
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, n + 1);
	b->n += n;
}

__attribute__((format(printf, 2, 3))) static void putf(Buf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < (int)sizeof tmp) {
		put(b, tmp);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big)
		abort();
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	put(b, big);
	free(big);
}

static void indent(Buf *b, int level)
{
	for (int i = 0; i < level; i++)
		put(b, "  ");
}

/* ------------------------------------------------------------------------- */
/* Types and attributes                                                      */
/* ------------------------------------------------------------------------- */

static const char *scalar_name(IrTypeKind k)
{
	switch (k) {
	case TY_I1:
		return "i1";
	case TY_I8:
	case TY_U8:
		return "i8";
	case TY_I16:
	case TY_U16:
		return "i16";
	case TY_I32:
	case TY_U32:
		return "i32";
	case TY_I64:
	case TY_U64:
		return "i64";
	case TY_F16:
		return "f16";
	case TY_BF16:
		return "bf16";
	case TY_F32:
		return "f32";
	case TY_F64:
		return "f64";
	case TY_F8E4M3:
		return "f8E4M3FN";
	case TY_F8E5M2:
		return "f8E5M2";
	case TY_F8E4B15: /* an i8 in Triton's IR */
		return "i8";
	case TY_F8E4B8:
		return "f8E4M3FNUZ";
	case TY_F8E5B16:
		return "f8E5M2FNUZ";
	default:
		return "none";
	}
}

/* Layouts as Triton's TTGIR writes them: the blocked, mma and shared ones by
 * their aliases, slices and dot operands inline around their parents. */
static bool aliased(const IrLayout *l)
{
	return l->kind == LAYOUT_BLOCKED || l->kind == LAYOUT_MMA || l->kind == LAYOUT_SHARED;
}

static const char *alias_stem(const IrLayout *l)
{
	return l->kind == LAYOUT_BLOCKED ? "blocked" : l->kind == LAYOUT_MMA ? "mma" : "shared";
}

static void put_ints(Buf *b, int n, const int *v)
{
	put(b, "[");
	for (int i = 0; i < n; i++)
		putf(b, i ? ", %d" : "%d", v[i]);
	put(b, "]");
}

static void put_layout_ref(Buf *b, const IrLayout *l);

static void put_layout_body(Buf *b, const IrLayout *l)
{
	switch (l->kind) {
	case LAYOUT_BLOCKED:
		put(b, "#ttg.blocked<{sizePerThread = ");
		put_ints(b, l->rank, l->size_per_thread);
		put(b, ", threadsPerWarp = ");
		put_ints(b, l->rank, l->threads_per_warp);
		put(b, ", warpsPerCTA = ");
		put_ints(b, l->rank, l->warps_per_cta);
		put(b, ", order = ");
		put_ints(b, l->rank, l->order);
		put(b, "}>");
		return;
	case LAYOUT_MMA: {
		int ninstr = 3; /* trailing zeros unused */
		while (ninstr > 0 && l->instr_shape[ninstr - 1] == 0)
			ninstr--;
		putf(b, "#ttg.nvidia_mma<{versionMajor = %d, versionMinor = %d, warpsPerCTA = ", l->version_major,
		     l->version_minor);
		put_ints(b, l->rank, l->warps_per_cta);
		put(b, ", instrShape = ");
		put_ints(b, ninstr, l->instr_shape);
		put(b, "}>");
		return;
	}
	case LAYOUT_SHARED:
		putf(b, "#ttg.swizzled_shared<{vec = %d, perPhase = %d, maxPhase = %d, order = ", l->vec, l->per_phase,
		     l->max_phase);
		put_ints(b, l->rank, l->order);
		put(b, "}>");
		return;
	case LAYOUT_SLICE:
		putf(b, "#ttg.slice<{dim = %d, parent = ", l->dim);
		put_layout_ref(b, l->parent);
		put(b, "}>");
		return;
	case LAYOUT_DOT_OP:
		putf(b, "#ttg.dot_op<{opIdx = %d, parent = ", l->opidx);
		put_layout_ref(b, l->parent);
		putf(b, ", kWidth = %d}>", l->k_width);
		return;
	}
	put(b, "#ttg.unknown");
}

/* The alias of l: its stem, numbered from the second of its kind on. */
static void put_alias(Buf *b, int i)
{
	const IrLayout *l = b->alias[i];
	int nth = 0;
	for (int k = 0; k < i; k++)
		nth += b->alias[k]->kind == l->kind;
	putf(b, nth ? "#%s%d" : "#%s", alias_stem(l), nth);
}

static void put_layout_ref(Buf *b, const IrLayout *l)
{
	if (!l) {
		put(b, "#ttg.unknown");
		return;
	}
	for (int i = 0; aliased(l) && i < b->nalias; i++)
		if (b->alias[i] == l) {
			put_alias(b, i);
			return;
		}
	put_layout_body(b, l);
}

static void collect_layout(Buf *b, const IrLayout *l)
{
	if (!l)
		return;
	if (!aliased(l)) {
		collect_layout(b, l->parent);
		return;
	}
	for (int i = 0; i < b->nalias; i++)
		if (b->alias[i] == l)
			return;
	if (b->nalias == b->capalias) {
		b->capalias = b->capalias ? 2 * b->capalias : 8;
		b->alias = realloc(b->alias, (size_t)b->capalias * sizeof *b->alias);
		if (!b->alias)
			abort();
	}
	b->alias[b->nalias++] = l;
}

static void collect_type(Buf *b, const IrType *t)
{
	if (t && t->kind == TY_BLOCK)
		collect_layout(b, t->layout);
}

static void collect_block(Buf *b, const IrBlock *blk)
{
	for (int i = 0; i < blk->nargs; i++)
		collect_type(b, blk->args[i]->type);
	for (const IrOp *op = blk->first; op; op = op->next) {
		for (int i = 0; i < op->nres; i++)
			collect_type(b, op->res[i].type);
		for (int r = 0; r < op->nregions; r++)
			collect_block(b, op->regions[r]);
	}
}

static void put_type(Buf *b, const IrType *t)
{
	if (!t) {
		put(b, "none");
		return;
	}
	if (t->kind == TY_PTR) {
		put(b, "!tt.ptr<");
		put_type(b, t->elem);
		if (t->addrspace != 1)
			putf(b, ", %d", t->addrspace);
		put(b, ">");
	} else if (t->kind == TY_BLOCK) {
		put(b, "tensor<");
		for (int i = 0; i < t->rank; i++)
			putf(b, "%" PRId64 "x", t->shape[i]);
		put_type(b, t->elem);
		if (t->layout) {
			put(b, ", ");
			put_layout_ref(b, t->layout);
		}
		put(b, ">");
	} else {
		put(b, scalar_name(t->kind));
	}
}

static void put_str(Buf *b, const char *s)
{
	put(b, "\"");
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			putf(b, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			putf(b, "\\%02X", *p);
		else
			putf(b, "%c", *p);
	}
	put(b, "\"");
}

/* A float as MLIR prints it: 1.000000e+00 when six digits give it back,
 * else all the digits; infinities and NaN as the type's bits. */
static void put_float(Buf *b, double f, IrTypeKind k)
{
	if (isinf(f) || isnan(f)) {
		bool neg = signbit(f);
		switch (k) {
		case TY_F64:
			putf(b, "0x%s", isnan(f) ? "7FF8000000000000" : neg ? "FFF0000000000000" : "7FF0000000000000");
			return;
		case TY_F16:
			putf(b, "0x%s", isnan(f) ? "7E00" : neg ? "FC00" : "7C00");
			return;
		case TY_BF16:
			putf(b, "0x%s", isnan(f) ? "7FC0" : neg ? "FF80" : "7F80");
			return;
		default:
			putf(b, "0x%s", isnan(f) ? "7FC00000" : neg ? "FF800000" : "7F800000");
			return;
		}
	}
	char tmp[64];
	snprintf(tmp, sizeof tmp, "%.6e", f);
	if (strtod(tmp, NULL) != f)
		snprintf(tmp, sizeof tmp, "%.16e", f);
	put(b, tmp);
}

static void put_attr_value(Buf *b, const IrAttr *a)
{
	switch (a->kind) {
	case ATTR_INT:
		putf(b, "%" PRId64 " : i32", a->i);
		return;
	case ATTR_FLOAT:
		put_float(b, a->f, TY_F32);
		put(b, " : f32");
		return;
	case ATTR_BOOL:
		put(b, a->i ? "true" : "false");
		return;
	case ATTR_STR:
		put_str(b, a->s);
		return;
	case ATTR_INTS:
		put(b, "array<i32");
		for (int i = 0; i < a->n; i++)
			putf(b, "%s %" PRId64, i ? "," : ":", a->ints[i]);
		put(b, ">");
		return;
	case ATTR_TYPE:
		put_type(b, a->type);
		return;
	case ATTR_SYM:
		putf(b, "@%s", a->s ? a->s : "");
		return;
	}
}

/* " {a = 1 : i32, ...}" of the attributes not in skip (NULL-terminated). */
static void put_attrs(Buf *b, int n, const IrAttr *attrs, const char *prefix, const char *const *skip)
{
	bool any = false;
	for (int i = 0; i < n; i++) {
		bool skipped = false;
		for (int k = 0; skip && skip[k]; k++)
			skipped = skipped || !strcmp(attrs[i].name, skip[k]);
		if (skipped)
			continue;
		put(b, any ? ", " : " {");
		any = true;
		putf(b, "%s%s = ", prefix, attrs[i].name);
		put_attr_value(b, &attrs[i]);
	}
	if (any)
		put(b, "}");
}

/* ------------------------------------------------------------------------- */
/* Values and ops                                                            */
/* ------------------------------------------------------------------------- */

static int number_block(IrBlock *blk, int next);

static int number_op(const IrOp *op, int next)
{
	for (int i = 0; i < op->nres; i++)
		op->res[i].id = next++;
	for (int r = 0; r < op->nregions; r++) {
		IrBlock *rb = op->regions[r];
		for (int i = 0; i < rb->nargs; i++)
			rb->args[i]->id = next++;
		next = number_block(rb, next);
	}
	return next;
}

static int number_block(IrBlock *blk, int next)
{
	for (IrOp *op = blk->first; op; op = op->next)
		next = number_op(op, next);
	return next;
}

static void put_value(Buf *b, const IrValue *v)
{
	putf(b, "%%%d", v ? v->id : -1);
}

/* "%a, %b" of ops[from..to). */
static void put_values(Buf *b, IrValue *const *vs, int from, int to)
{
	for (int i = from; i < to; i++) {
		if (i > from)
			put(b, ", ");
		put_value(b, vs[i]);
	}
}

/* "T, U" of the types of ops[from..to). */
static void put_types(Buf *b, IrValue *const *vs, int from, int to)
{
	for (int i = from; i < to; i++) {
		if (i > from)
			put(b, ", ");
		put_type(b, vs[i]->type);
	}
}

static void put_result_types(Buf *b, const IrOp *op)
{
	for (int i = 0; i < op->nres; i++) {
		if (i)
			put(b, ", ");
		put_type(b, op->res[i].type);
	}
}

static bool is_float_v(const IrValue *v)
{
	return ir_is_float(ir_scalar(v->type));
}

static bool is_signed_v(const IrValue *v)
{
	return ir_is_signed(ir_scalar(v->type));
}

/* A helper constant (0 or all ones) of t on a line of its own; its name. */
static int helper_const(Buf *b, int level, const IrType *t, bool ones, bool fl)
{
	int id = b->tmp++;
	indent(b, level);
	putf(b, "%%ct%d = arith.constant ", id);
	if (ir_is_block(t))
		put(b, "dense<");
	if (ir_scalar(t)->kind == TY_I1)
		put(b, ones ? "true" : "false");
	else
		put(b, fl ? "0.000000e+00" : ones ? "-1" : "0");
	if (ir_is_block(t))
		put(b, ">");
	put(b, " : ");
	put_type(b, t);
	put(b, "\n");
	return id;
}

static const char *binary_name(const IrOp *op)
{
	if (op->nops < 2)
		return NULL;
	bool fl = is_float_v(op->ops[0]), sg = is_signed_v(op->ops[0]);
	bool all = !strcmp(ir_op_str(op, "propagate_nan", "none"), "all");
	switch (op->opc) {
	case OP_ADD:
		return fl ? "arith.addf" : "arith.addi";
	case OP_SUB:
		return fl ? "arith.subf" : "arith.subi";
	case OP_MUL:
		return fl ? "arith.mulf" : "arith.muli";
	case OP_DIV:
		return fl ? "arith.divf" : sg ? "arith.divsi" : "arith.divui";
	case OP_REM:
		return fl ? "arith.remf" : sg ? "arith.remsi" : "arith.remui";
	case OP_AND:
		return "arith.andi";
	case OP_OR:
		return "arith.ori";
	case OP_XOR:
		return "arith.xori";
	case OP_SHL:
		return "arith.shli";
	case OP_SHR:
		return sg ? "arith.shrsi" : "arith.shrui";
	case OP_MIN:
		return fl ? (all ? "arith.minimumf" : "arith.minnumf") : sg ? "arith.minsi" : "arith.minui";
	case OP_MAX:
		return fl ? (all ? "arith.maximumf" : "arith.maxnumf") : sg ? "arith.maxsi" : "arith.maxui";
	case OP_UMULHI:
		return "tt.mulhiui";
	default:
		return NULL;
	}
}

static const char *unary_name(const IrOp *op)
{
	if (op->nops < 1)
		return NULL;
	switch (op->opc) {
	case OP_EXP:
		return "math.exp";
	case OP_EXP2:
		return "math.exp2";
	case OP_LOG:
		return "math.log";
	case OP_LOG2:
		return "math.log2";
	case OP_SQRT:
		return !strcmp(ir_op_str(op, "rounding", ""), "rn") ? "tt.precise_sqrt" : "math.sqrt";
	case OP_RSQRT:
		return "math.rsqrt";
	case OP_SIN:
		return "math.sin";
	case OP_COS:
		return "math.cos";
	case OP_ERF:
		return "math.erf";
	case OP_FLOOR:
		return "math.floor";
	case OP_CEIL:
		return "math.ceil";
	case OP_ABS:
		return is_float_v(op->ops[0]) ? "math.absf" : "math.absi";
	default:
		return NULL;
	}
}

/* arith's name for a cast, or NULL for tt.fp_to_fp (fp8) and i1 targets. */
static const char *cast_name(const IrType *from, const IrType *to)
{
	from = ir_scalar(from);
	to = ir_scalar(to);
	bool ff = ir_is_float(from), tf = ir_is_float(to);
	int fb = ir_type_bits(from), tb = ir_type_bits(to);
	bool fp8 = ir_is_fp8(from) || ir_is_fp8(to);
	if (ff && tf)
		return fp8 ? NULL : tb > fb ? "arith.extf" : tb < fb ? "arith.truncf" : "tt.fp_to_fp";
	if (!ff && !tf) {
		if (to->kind == TY_I1)
			return NULL;
		if (tb == fb)
			return "arith.bitcast";
		return tb < fb ? "arith.trunci" : ir_is_signed(from) ? "arith.extsi" : "arith.extui";
	}
	if (!ff)
		return fp8 ? NULL : ir_is_signed(from) ? "arith.sitofp" : "arith.uitofp";
	if (to->kind == TY_I1)
		return NULL;
	return fp8 ? NULL : ir_is_signed(to) ? "arith.fptosi" : "arith.fptoui";
}

static void put_block(Buf *b, const IrBlock *blk, int level, const IrOp *owner);

static void put_region_args(Buf *b, const IrBlock *rb, int level)
{
	if (!rb->nargs)
		return;
	indent(b, level);
	put(b, "^bb0(");
	for (int i = 0; i < rb->nargs; i++) {
		if (i)
			put(b, ", ");
		put_value(b, rb->args[i]);
		put(b, ": ");
		put_type(b, rb->args[i]->type);
	}
	put(b, "):\n");
}

/* "T -> U" of a one-operand op. */
static void put_arrow(Buf *b, const IrOp *op)
{
	put(b, " : ");
	put_type(b, op->ops[0]->type);
	put(b, " -> ");
	put_result_types(b, op);
}

/* "(A, B) -> R" */
static void put_fn_type(Buf *b, const IrOp *op)
{
	put(b, " : (");
	put_types(b, op->ops, 0, op->nops);
	put(b, ") -> ");
	if (op->nres != 1)
		put(b, "(");
	put_result_types(b, op);
	if (op->nres != 1)
		put(b, ")");
}

static const char *const no_attrs[] = {NULL};

static void put_reduce(Buf *b, const IrOp *op, int level)
{
	bool scan = op->opc == OP_SCAN;
	putf(b, "\"%s\"(", scan ? "tt.scan" : "tt.reduce");
	put_values(b, op->ops, 0, op->nops);
	putf(b, ") <{axis = %" PRId64 " : i32", ir_op_int(op, "axis", 0));
	if (scan)
		putf(b, ", reverse = %s", ir_op_int(op, "reverse", 0) ? "true" : "false");
	put(b, "}> ({\n");
	put_region_args(b, op->regions[0], level);
	put_block(b, op->regions[0], level + 1, op);
	indent(b, level);
	put(b, "})");
	put_fn_type(b, op);
}

/* The attributes of a loop as Triton's TTIR writes them after its closing
 * brace: flags as unit attributes (tt.flatten), present only when set;
 * numbers as tt.num_stages = 2 : i32; disable_licm as LLVM's loop
 * annotation. */
static void put_loop_attrs(Buf *b, const IrOp *op)
{
	bool any = false;
	for (int i = 0; i < op->nattrs; i++) {
		const IrAttr *a = &op->attrs[i];
		if (a->kind == ATTR_BOOL && !a->i)
			continue;
		put(b, any ? ", " : " {");
		any = true;
		if (!strcmp(a->name, "disable_licm")) {
			put(b, "llvm.loop_annotation = #llvm.loop_annotation<licm = #llvm.loop_licm<disable = true, "
			       "versioningDisable = true>>");
			continue;
		}
		putf(b, "tt.%s", a->name);
		if (a->kind != ATTR_BOOL) {
			put(b, " = ");
			put_attr_value(b, a);
		}
	}
	if (any)
		put(b, "}");
}

static void put_map(Buf *b, const IrOp *op, int level)
{
	put(b, "\"tt.map_elementwise\"(");
	put_values(b, op->ops, 0, op->nops);
	putf(b, ") <{pack = %" PRId64 " : i32}> ({\n", ir_op_int(op, "pack", 1));
	put_region_args(b, op->regions[0], level);
	put_block(b, op->regions[0], level + 1, op);
	indent(b, level);
	put(b, "})");
	put_fn_type(b, op);
}

static void put_for(Buf *b, const IrOp *op, int level)
{
	const IrBlock *body = op->regions[0];
	put(b, "scf.for ");
	put_value(b, body->args[0]);
	put(b, " = ");
	put_value(b, op->ops[0]);
	put(b, " to ");
	put_value(b, op->ops[1]);
	put(b, " step ");
	put_value(b, op->ops[2]);
	if (op->nops > 3) {
		put(b, " iter_args(");
		for (int i = 3; i < op->nops; i++) {
			if (i > 3)
				put(b, ", ");
			put_value(b, body->args[i - 2]);
			put(b, " = ");
			put_value(b, op->ops[i]);
		}
		put(b, ") -> (");
		put_result_types(b, op);
		put(b, ")");
	}
	put(b, " : ");
	put_type(b, op->ops[0]->type);
	put(b, " {\n");
	put_block(b, body, level + 1, op);
	indent(b, level);
	put(b, "}");
	put_loop_attrs(b, op);
}

static void put_if(Buf *b, const IrOp *op, int level)
{
	put(b, "scf.if ");
	put_value(b, op->ops[0]);
	if (op->nres) {
		put(b, " -> (");
		put_result_types(b, op);
		put(b, ")");
	}
	put(b, " {\n");
	put_block(b, op->regions[0], level + 1, op);
	indent(b, level);
	put(b, "}");
	const IrBlock *e = op->regions[1];
	if (op->nres || (e->first && e->first != ir_block_terminator(e))) {
		put(b, " else {\n");
		put_block(b, e, level + 1, op);
		indent(b, level);
		put(b, "}");
	}
}

/* warp_specialize as Triton's ttg.warp_specialize: the consumers are the
 * default partition (the code after it), the producer partition0. */
static void put_warp_spec(Buf *b, const IrOp *op, int level)
{
	putf(b, "ttg.warp_specialize() attributes {requestedRegisters = array<i32>} default {\n");
	indent(b, level + 1);
	put(b, "ttg.warp_yield\n");
	indent(b, level);
	putf(b, "} partition0() num_warps(%" PRId64 ") {\n", ir_op_int(op, "producer_warps", 1));
	put_block(b, op->regions[0], level + 1, op);
	indent(b, level);
	put(b, "}");
}

static void put_while(Buf *b, const IrOp *op, int level)
{
	const IrBlock *before = op->regions[0], *after = op->regions[1];
	put(b, "scf.while (");
	for (int i = 0; i < op->nops; i++) {
		if (i)
			put(b, ", ");
		put_value(b, before->args[i]);
		put(b, " = ");
		put_value(b, op->ops[i]);
	}
	put(b, ") : (");
	put_types(b, op->ops, 0, op->nops);
	put(b, ") -> (");
	put_result_types(b, op);
	put(b, ") {\n");
	put_block(b, before, level + 1, op);
	indent(b, level);
	put(b, "} do {\n");
	put_region_args(b, after, level);
	put_block(b, after, level + 1, op);
	indent(b, level);
	put(b, "}");
	put_loop_attrs(b, op);
}

static void put_op(Buf *b, const IrOp *op, int level, const IrOp *owner)
{
	/* helper constants go on lines of their own, before the op */
	int h = -1;
	if (op->opc == OP_NEG && !is_float_v(op->ops[0]))
		h = helper_const(b, level, op->ops[0]->type, false, false);
	else if (op->opc == OP_NOT)
		h = helper_const(b, level, op->ops[0]->type, true, false);
	else if (op->opc == OP_CAST && ir_scalar(op->res[0].type)->kind == TY_I1 &&
		 ir_scalar(op->ops[0]->type)->kind != TY_I1)
		h = helper_const(b, level, op->ops[0]->type, false, is_float_v(op->ops[0]));

	indent(b, level);
	for (int i = 0; i < op->nres; i++) {
		if (i)
			put(b, ", ");
		put_value(b, &op->res[i]);
	}
	if (op->nres)
		put(b, " = ");
	const char *name;
	switch (op->opc) {
	case OP_CONSTANT: {
		const IrType *t = op->res[0].type;
		const IrAttr *a = ir_op_attr(op, "value");
		IrTypeKind k = ir_scalar(t)->kind;
		put(b, "arith.constant ");
		if (ir_is_block(t))
			put(b, "dense<");
		if (k == TY_I1)
			put(b, a && (a->kind == ATTR_FLOAT ? a->f != 0 : a->i != 0) ? "true" : "false");
		else if (ir_is_float(ir_scalar(t)))
			put_float(b, a ? (a->kind == ATTR_FLOAT ? a->f : (double)a->i) : 0.0, k);
		else
			putf(b, "%" PRId64, a ? (a->kind == ATTR_FLOAT ? (int64_t)a->f : a->i) : 0);
		if (ir_is_block(t))
			put(b, ">");
		put(b, " : ");
		put_type(b, t);
		break;
	}
	case OP_POISON:
		put(b, "ub.poison : ");
		put_type(b, op->res[0].type);
		break;
	case OP_PROGRAM_ID:
	case OP_NUM_PROGRAMS:
		putf(b, "%s %c : i32", op->opc == OP_PROGRAM_ID ? "tt.get_program_id" : "tt.get_num_programs",
		     "xyz"[ir_op_int(op, "axis", 0) % 3]);
		break;
	case OP_MAKE_RANGE:
		putf(b,
		     "tt.make_range {end = %" PRId64 " : i32, start = %" PRId64 " : i32} : ", ir_op_int(op, "end", 0),
		     ir_op_int(op, "start", 0));
		put_result_types(b, op);
		break;
	case OP_SPLAT:
	case OP_BROADCAST:
	case OP_SPLIT:
	case OP_HISTOGRAM:
	case OP_BITCAST:
	case OP_INT_TO_PTR:
	case OP_PTR_TO_INT:
	case OP_CONVERT_LAYOUT:
		name = op->opc == OP_SPLAT        ? "tt.splat"
		       : op->opc == OP_BROADCAST  ? "tt.broadcast"
		       : op->opc == OP_SPLIT      ? "tt.split"
		       : op->opc == OP_HISTOGRAM  ? "tt.histogram"
		       : op->opc == OP_BITCAST    ? "tt.bitcast"
		       : op->opc == OP_INT_TO_PTR ? "tt.int_to_ptr"
		       : op->opc == OP_PTR_TO_INT ? "tt.ptr_to_int"
						  : "ttg.convert_layout";
		putf(b, "%s ", name);
		put_values(b, op->ops, 0, op->nops);
		put_arrow(b, op);
		break;
	case OP_EXPAND_DIMS:
		put(b, "tt.expand_dims ");
		put_value(b, op->ops[0]);
		putf(b, " {axis = %" PRId64 " : i32}", ir_op_int(op, "axis", 0));
		put_arrow(b, op);
		break;
	case OP_RESHAPE:
		put(b, "tt.reshape ");
		put_value(b, op->ops[0]);
		if (ir_op_int(op, "can_reorder", 0))
			put(b, " allow_reorder");
		put_arrow(b, op);
		break;
	case OP_TRANS:
		put(b, "tt.trans ");
		put_value(b, op->ops[0]);
		put_attrs(b, op->nattrs, op->attrs, "", no_attrs);
		put_arrow(b, op);
		break;
	case OP_CAT:
	case OP_JOIN:
		put(b, op->opc == OP_CAT ? "tt.cat " : "tt.join ");
		put_values(b, op->ops, 0, 2);
		put_arrow(b, op);
		break;
	case OP_GATHER:
		put(b, "tt.gather ");
		put_value(b, op->ops[0]);
		put(b, "[");
		put_value(b, op->ops[1]);
		putf(b, "] {axis = %" PRId64 " : i32}", ir_op_int(op, "axis", 0));
		put_fn_type(b, op);
		break;
	case OP_NEG:
	case OP_NOT:
		if (h < 0) { /* float neg */
			put(b, "arith.negf ");
			put_value(b, op->ops[0]);
		} else {
			putf(b, "%s ", op->opc == OP_NEG ? "arith.subi" : "arith.xori");
			if (op->opc == OP_NEG) {
				putf(b, "%%ct%d, ", h);
				put_value(b, op->ops[0]);
			} else {
				put_value(b, op->ops[0]);
				putf(b, ", %%ct%d", h);
			}
		}
		put(b, " : ");
		put_result_types(b, op);
		break;
	case OP_CMP: {
		const char *p = ir_op_str(op, "pred", "eq");
		bool fl = is_float_v(op->ops[0]), sg = is_signed_v(op->ops[0]);
		char pred[8];
		if (fl)
			snprintf(pred, sizeof pred, "%s%s", strcmp(p, "ne") ? "o" : "u", p);
		else if (!strcmp(p, "eq") || !strcmp(p, "ne"))
			snprintf(pred, sizeof pred, "%s", p);
		else
			snprintf(pred, sizeof pred, "%c%s", sg ? 's' : 'u', p);
		putf(b, "%s %s, ", fl ? "arith.cmpf" : "arith.cmpi", pred);
		put_values(b, op->ops, 0, 2);
		put(b, " : ");
		put_type(b, op->ops[0]->type);
		break;
	}
	case OP_SELECT:
		put(b, "arith.select ");
		put_values(b, op->ops, 0, 3);
		put(b, " : ");
		if (ir_is_block(op->ops[0]->type)) {
			put_type(b, op->ops[0]->type);
			put(b, ", ");
		}
		put_result_types(b, op);
		break;
	case OP_FMA:
		put(b, "math.fma ");
		put_values(b, op->ops, 0, 3);
		put(b, " : ");
		put_result_types(b, op);
		break;
	case OP_CAST: {
		const IrType *from = op->ops[0]->type, *to = op->res[0].type;
		const char *cn = cast_name(from, to);
		if (h >= 0) {
			putf(b, "%s %s, ", is_float_v(op->ops[0]) ? "arith.cmpf" : "arith.cmpi",
			     is_float_v(op->ops[0]) ? "une" : "ne");
			put_value(b, op->ops[0]);
			putf(b, ", %%ct%d : ", h);
			put_type(b, from);
		} else if (!cn || !strcmp(cn, "tt.fp_to_fp")) {
			put(b, "tt.fp_to_fp ");
			put_value(b, op->ops[0]);
			if (ir_type_bits(ir_scalar(to)) < ir_type_bits(ir_scalar(from)))
				putf(b, ", rounding = %s", ir_op_str(op, "rounding", "rtne"));
			put_arrow(b, op);
		} else {
			putf(b, "%s ", cn);
			put_value(b, op->ops[0]);
			put(b, " : ");
			put_type(b, from);
			put(b, " to ");
			put_type(b, to);
		}
		break;
	}
	case OP_EXTERN:
		put(b, "tt.extern_elementwise ");
		put_values(b, op->ops, 0, op->nops);
		putf(b, " {libname = \"%s\", libpath = \"\", pure = true, symbol = \"%s\"}", ir_op_str(op, "lib", ""),
		     ir_op_str(op, "symbol", ""));
		put_fn_type(b, op);
		break;
	case OP_INLINE_ASM:
		put(b, "tt.elementwise_inline_asm ");
		put_values(b, op->ops, 0, op->nops);
		put(b, " {asm_string = ");
		put_str(b, ir_op_str(op, "asm", ""));
		put(b, ", constraints = ");
		put_str(b, ir_op_str(op, "constraints", ""));
		putf(b, ", packed_element = %lld : i32, pure = %s}", (long long)ir_op_int(op, "pack", 1),
		     ir_op_int(op, "pure", 0) ? "true" : "false");
		put_fn_type(b, op);
		break;
	case OP_ADDPTR:
		put(b, "tt.addptr ");
		put_values(b, op->ops, 0, 2);
		put(b, " : ");
		put_types(b, op->ops, 0, 2);
		break;
	case OP_LOAD:
	case OP_STORE:
		put(b, op->opc == OP_LOAD ? "tt.load " : "tt.store ");
		put_values(b, op->ops, 0, op->opc == OP_LOAD && op->nops > 3 ? 3 : op->nops); /* not a tensor-map tail */
		put_attrs(b, op->nattrs, op->attrs, "", no_attrs);
		put(b, " : ");
		put_type(b, op->ops[0]->type);
		break;
	case OP_ATOMIC_RMW: {
		const char *k = ir_op_str(op, "kind", "add");
		bool fl = is_float_v(op->ops[1]);
		const char *kind = !strcmp(k, "xchg")        ? "exch"
				   : fl && !strcmp(k, "add") ? "fadd"
				   : fl && !strcmp(k, "max") ? "max"
							     : k;
		putf(b, "tt.atomic_rmw %s, %s, %s, ", kind, ir_op_str(op, "sem", "acq_rel"),
		     ir_op_str(op, "scope", "gpu"));
		put_values(b, op->ops, 0, op->nops);
		put_fn_type(b, op);
		break;
	}
	case OP_ATOMIC_CAS:
		putf(b, "tt.atomic_cas %s, %s, ", ir_op_str(op, "sem", "acq_rel"), ir_op_str(op, "scope", "gpu"));
		put_values(b, op->ops, 0, 3);
		put_fn_type(b, op);
		break;
	case OP_REDUCE:
	case OP_SCAN:
		put_reduce(b, op, level);
		break;
	case OP_MAP_ELEM:
		put_map(b, op, level);
		break;
	case OP_DOT: {
		put(b, "tt.dot ");
		put_values(b, op->ops, 0, 3);
		const char *prec = ir_op_str(op, "input_precision", NULL);
		if (prec)
			putf(b, ", inputPrecision = %s", prec);
		int64_t acc = ir_op_int(op, "max_num_imprecise_acc", 0);
		if (acc)
			putf(b, " {maxNumImpreciseAcc = %" PRId64 " : i32}", acc);
		put(b, " : ");
		put_type(b, op->ops[0]->type);
		put(b, " * ");
		put_type(b, op->ops[1]->type);
		put(b, " -> ");
		put_result_types(b, op);
		break;
	}
	case OP_ASYNC_COPY:
	case OP_ASYNC_COMMIT:
	case OP_ASYNC_WAIT:
	case OP_LOCAL_READ:
	case OP_TMA_COPY:
	case OP_TMA_WAIT:
	case OP_TMA_INIT:
	case OP_TMA_INVAL:
	case OP_TMAP_CREATE:
	case OP_TMA_RELEASE:
	case OP_TMA_STORE:
		name = op->opc == OP_ASYNC_COPY     ? "ttg.async_copy_global_to_local"
		       : op->opc == OP_ASYNC_COMMIT ? "ttg.async_commit_group"
		       : op->opc == OP_ASYNC_WAIT   ? "ttg.async_wait"
		       : op->opc == OP_TMA_COPY     ? "ttng.async_tma_copy_global_to_local"
		       : op->opc == OP_TMA_WAIT     ? "ttng.wait_barrier"
		       : op->opc == OP_TMA_INIT     ? "ttng.init_barrier"
		       : op->opc == OP_TMA_INVAL    ? "ttng.inval_barrier"
		       : op->opc == OP_TMAP_CREATE  ? "ttng.tensormap_create"
		       : op->opc == OP_TMA_RELEASE  ? "ttng.arrive_barrier"
		       : op->opc == OP_TMA_STORE    ? "ttng.async_tma_copy_local_to_global"
						    : "ttg.local_load";
		put(b, name);
		if (op->nops)
			put(b, " ");
		put_values(b, op->ops, 0, op->nops);
		if (op->opc == OP_ASYNC_WAIT)
			putf(b, " {num = %" PRId64 " : i32}", ir_op_int(op, "pending", 0));
		else
			put_attrs(b, op->nattrs, op->attrs, "", no_attrs);
		if (op->nops || op->nres)
			put_fn_type(b, op);
		break;
	case OP_MULTIPLE_OF:
	case OP_MAX_CONTIGUOUS:
	case OP_MAX_CONSTANCY:
		putf(b, "ct.%s ", ir_opinfo(op->opc)->name);
		put_value(b, op->ops[0]);
		put_attrs(b, op->nattrs, op->attrs, "", no_attrs);
		put(b, " : ");
		put_result_types(b, op);
		break;
	case OP_ASSUME:
		put(b, "llvm.intr.assume ");
		put_value(b, op->ops[0]);
		put(b, " : i1");
		break;
	case OP_PRINT:
		put(b, "tt.print ");
		put_str(b, ir_op_str(op, "prefix", ""));
		putf(b, " {hex = %s}", ir_op_int(op, "hex", 0) ? "true" : "false");
		if (op->nops) {
			put(b, " : ");
			put_values(b, op->ops, 0, op->nops);
			put(b, " : ");
			put_types(b, op->ops, 0, op->nops);
		}
		break;
	case OP_ASSERT:
		put(b, "tt.assert ");
		put_value(b, op->ops[0]);
		put(b, ", ");
		put_str(b, ir_op_str(op, "msg", ""));
		put(b, " : ");
		put_type(b, op->ops[0]->type);
		break;
	case OP_BARRIER:
		if (ir_op_int(op, "wait_only", 0)) /* a warpgroup-MMA wait alone */
			putf(b, "ttng.warp_group_dot_wait {pendings = %d : i32}",
			     (int)ir_op_int(op, "wgmma_pending", 0));
		else
			put(b, "gpu.barrier");
		break;
	case OP_CALL:
		putf(b, "tt.call @%s(", ir_op_str(op, "callee", ""));
		put_values(b, op->ops, 0, op->nops);
		put(b, ")");
		put_fn_type(b, op);
		break;
	case OP_RETURN:
	case OP_YIELD:
	case OP_CONDITION: {
		if (op->opc == OP_RETURN)
			put(b, "tt.return");
		else if (op->opc == OP_CONDITION)
			put(b, "scf.condition(");
		else if (owner && owner->opc == OP_REDUCE)
			put(b, "tt.reduce.return");
		else if (owner && owner->opc == OP_SCAN)
			put(b, "tt.scan.return");
		else if (owner && owner->opc == OP_MAP_ELEM)
			put(b, "tt.map_elementwise.return");
		else if (owner && owner->opc == OP_WARP_SPEC)
			put(b, "ttg.warp_return");
		else
			put(b, "scf.yield");
		if (op->opc == OP_CONDITION) {
			put_value(b, op->ops[0]);
			put(b, ")");
		}
		int from = op->opc == OP_CONDITION ? 1 : 0;
		if (op->nops > from) {
			put(b, " ");
			put_values(b, op->ops, from, op->nops);
			put(b, " : ");
			put_types(b, op->ops, from, op->nops);
		}
		break;
	}
	case OP_FOR:
		put_for(b, op, level);
		break;
	case OP_IF:
		put_if(b, op, level);
		break;
	case OP_WHILE:
		put_while(b, op, level);
		break;
	case OP_WARP_SPEC:
		put_warp_spec(b, op, level);
		break;
	default:
		if ((name = binary_name(op))) {
			putf(b, "%s ", name);
			put_values(b, op->ops, 0, 2);
			put(b, " : ");
			put_result_types(b, op);
		} else if ((name = unary_name(op))) {
			putf(b, "%s ", name);
			put_value(b, op->ops[0]);
			put(b, " : ");
			put_result_types(b, op);
		} else {
			putf(b, "ct.%s ", ir_opinfo(op->opc)->name);
			put_values(b, op->ops, 0, op->nops);
			put_attrs(b, op->nattrs, op->attrs, "", no_attrs);
			put_fn_type(b, op);
		}
		break;
	}
	put(b, "\n");
}

static void put_block(Buf *b, const IrBlock *blk, int level, const IrOp *owner)
{
	for (const IrOp *op = blk->first; op; op = op->next)
		put_op(b, op, level, owner);
}

static void put_func(Buf *b, const IrFunc *f)
{
	int next = 0;
	for (int i = 0; i < f->body->nargs; i++)
		f->body->args[i]->id = next++;
	number_block(f->body, next);
	putf(b, "  tt.func %s @%s(", f->is_kernel ? "public" : "private", f->name ? f->name : "");
	static const char *const skip_name[] = {"name", NULL};
	for (int i = 0; i < f->body->nargs; i++) {
		const IrValue *v = f->body->args[i];
		if (i)
			put(b, ", ");
		put_value(b, v);
		put(b, ": ");
		put_type(b, v->type);
		if (f->params)
			put_attrs(b, f->params[i].nattrs, f->params[i].attrs, "tt.", skip_name);
	}
	put(b, ")");
	if (f->nres) {
		put(b, " -> ");
		if (f->nres != 1)
			put(b, "(");
		for (int i = 0; i < f->nres; i++) {
			if (i)
				put(b, ", ");
			put_type(b, f->restys[i]);
		}
		if (f->nres != 1)
			put(b, ")");
	}
	putf(b, " attributes {noinline = %s} {\n", f->noinline ? "true" : "false");
	put_block(b, f->body, 2, NULL);
	put(b, "  }\n");
}

char *ir_print_mlir(const IrModule *m, const char *target, int threads_per_warp)
{
	Buf b = {0};
	if (!target) {
		/* TTIR: Triton's carries no module attributes (the options are
		 * the kernel's metadata) */
		put(&b, "module {\n");
	} else {
		for (int i = 0; i < m->nfuncs; i++)
			collect_block(&b, m->funcs[i]->body);
		for (int i = 0; i < b.nalias; i++) {
			put_alias(&b, i);
			put(&b, " = ");
			put_layout_body(&b, b.alias[i]);
			put(&b, "\n");
		}
		put(&b, "module attributes {");
		for (int i = 0; i < m->nattrs; i++) {
			const IrAttr *a = &m->attrs[i];
			if (!strcmp(a->name, "target"))
				continue; /* printed as ttg.target */
			if (!strcmp(a->name, "num_warps") || !strcmp(a->name, "num_ctas"))
				putf(&b, "\"ttg.%s\" = ", !strcmp(a->name, "num_warps") ? "num-warps" : "num-ctas");
			else
				putf(&b, "ct.%s = ", a->name);
			put_attr_value(&b, a);
			put(&b, ", ");
		}
		put(&b, "ttg.target = ");
		put_str(&b, target);
		putf(&b, ", \"ttg.threads-per-warp\" = %d : i32} {\n", threads_per_warp);
	}
	for (int i = 0; i < m->nfuncs; i++)
		put_func(&b, m->funcs[i]);
	put(&b, "}\n");
	char *s = ir_strndup(m->ctx, b.s ? b.s : "", b.n);
	free(b.s);
	free(b.alias);
	return s;
}
