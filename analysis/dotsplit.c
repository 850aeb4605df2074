/* dotsplit.c: dots rewritten into the forms tensor cores take, for GPU
 * targets (sm_80 and later), before prefetching and layouts.
 *
 *   input_precision "tf32x3" (f32 operands): each operand split into a
 *     tf32-exact part and the rest, x = big(x) + small(x), big rounded to
 *     nearest (ties away from zero, as cvt.rna.tf32.f32); then
 *       s = dot(small(a), big(b)) + dot(big(a), small(b))   (tf32)
 *       r = dot(big(a), big(b), s with NaN -> 0) + c        (tf32)
 *     The small products are dropped where they are NaN: an infinite
 *     operand times a zero small part must not poison the big product.
 *   "bf16x3" / "bf16x6" (f32 operands): each operand split into bf16 parts,
 *     x ~ hi + mid (+ lo), each part the rounding of what is left; the
 *     bf16 products accumulate in f32, smallest first:
 *       bf16x6: mid*mid, lo*hi, hi*lo, then as bf16x3;
 *       bf16x3: mid*hi, hi*mid, NaN -> 0, then hi*hi; plus c.
 *   fp8 operands (e4m3 / e5m2, any mix) of a dot that warpgroup MMA does not
 *     take (sm_80, or a shape it cannot cover): on sm_80 both upcast to f16,
 *     exactly, so the dot goes to mma.sync m16n8k16 (sm_80 has no fp8 MMA);
 *     on sm_89 with an f32 accumulator they stay fp8 for mma.sync m16n8k32
 *     (native_fp8_mma; CTRITON_FP8_MMA_SYNC=1 from sm_89 on, =0 never).
 *
 * On the CPU backend none of this runs: its dots are exact f32 products
 * (tf32x3 and bf16x6 aim at f32 accuracy; see ir/ops.def's dot row).
 */
#include "analysis.h"

#include <stdlib.h>

#include <string.h>

static const char *precision(const IrOp *dot)
{
	const IrAttr *ip = ir_find_attr(dot->nattrs, dot->attrs, "input_precision");
	return ip && ip->kind == ATTR_STR ? ip->s : "";
}

static IrValue *new_dot(IrBuilder *b, IrValue *x, IrValue *y, IrValue *acc, const char *prec, const IrOp *like)
{
	IrValue *ops[3] = {x, y, acc};
	IrValue *r = ir_build1(b, OP_DOT, acc->type, 3, ops);
	ir_op_set_str(b->ctx, r->def, "input_precision", prec);
	const IrAttr *mi = ir_find_attr(like->nattrs, like->attrs, "max_num_imprecise_acc");
	if (mi && mi->kind == ATTR_INT)
		ir_op_set_int(b->ctx, r->def, "max_num_imprecise_acc", mi->i);
	return r;
}

static IrValue *zero_like(IrBuilder *b, const IrValue *v)
{
	return ir_const_float(b, v->type, 0.0);
}

/* v with its NaN elements replaced by zero */
static IrValue *nan_to_zero(IrBuilder *b, IrValue *v)
{
	return ir_select(b, ir_cmp(b, "ne", v, v), zero_like(b, v), v);
}

/* x rounded to tf32 (10 mantissa bits), to nearest, ties away from zero:
 * add half a unit of the dropped bits to the magnitude, then clear them
 * (a carry into the exponent rounds up a binade, and past the largest
 * finite value to infinity); NaN stays itself. */
static IrValue *tf32_round(IrBuilder *b, IrValue *x)
{
	const IrType *it = ir_type_like(b->ctx, x->type, ir_type(b->ctx, TY_I32));
	IrValue *bits = ir_cast(b, OP_BITCAST, x, it);
	bits = ir_binary(b, OP_ADD, bits, ir_const_int(b, it, 0x1000));
	bits = ir_binary(b, OP_AND, bits, ir_const_int(b, it, (int64_t)(int32_t)0xffffe000u));
	IrValue *r = ir_cast(b, OP_BITCAST, bits, x->type);
	return ir_select(b, ir_cmp(b, "ne", x, x), x, r);
}

/* n bf16 parts of the f32 block x, each the rounding of what is left */
static void bf16_parts(IrBuilder *b, IrValue *x, int n, IrValue **parts)
{
	const IrType *bt = ir_type_like(b->ctx, x->type, ir_type(b->ctx, TY_BF16));
	for (int i = 0; i < n; i++) {
		parts[i] = ir_cast(b, OP_CAST, x, bt);
		if (i + 1 < n)
			x = ir_binary(b, OP_SUB, x, ir_cast(b, OP_CAST, parts[i], x->type));
	}
}

static bool is_f32(const IrValue *v) { return ir_scalar(v->type)->kind == TY_F32; }

static bool is_fp8(const IrValue *v)
{
	IrTypeKind k = ir_scalar(v->type)->kind;
	return k == TY_F8E4M3 || k == TY_F8E5M2;
}

/* fp8 operands of mma.sync as they are (m16n8k32 .e4m3 / .e5m2, f32
 * accumulator), as Triton emits them from sm_89 on; sm_80 has no fp8 MMA
 * and takes them upcast to f16. The default on sm_89 (Ada, whose fp8 MMA
 * runs at twice the f16 rate) and not on sm_90, where an H100 ran sm_89
 * code's fp8 mma.sync slower than the upcast to f16 (4096^3, 128x128x128
 * w4: 351 against 470 TFLOP/s; Triton's sm_89 code 306 against its sm_80
 * code's 481), so Hopper dots that warpgroup MMA does not take upcast.
 * CTRITON_FP8_MMA_SYNC=1: from sm_89 on, sm_90 too; =0: never (part of
 * the key). */
static bool native_fp8_mma(const AnGpuOptions *o)
{
	const char *e = getenv("CTRITON_FP8_MMA_SYNC");
	if (e && e[0])
		return o->arch >= 89 && e[0] == '1';
	return o->arch == 89;
}

/* Rewrites one dot; returns whether it did. */
static bool split_dot(IrFunc *f, IrOp *dot, const AnGpuOptions *o)
{
	IrValue *a = dot->ops[0], *bv = dot->ops[1], *c = dot->ops[2];
	if (!ir_is_block(a->type) || !ir_is_block(bv->type))
		return false;
	IrBuilder b;
	ir_builder_init(&b, f->module->ctx);
	ir_builder_before(&b, dot);
	b.loc = dot->loc;
	const char *prec = precision(dot);
	IrValue *r = NULL;
	if (is_f32(a) && is_f32(bv) && is_f32(c) && !strcmp(prec, "tf32x3")) {
		IrValue *ab = tf32_round(&b, a), *bb = tf32_round(&b, bv);
		IrValue *as = ir_binary(&b, OP_SUB, a, ab), *bs = ir_binary(&b, OP_SUB, bv, bb);
		IrValue *s = new_dot(&b, as, bb, zero_like(&b, c), "tf32", dot);
		s = new_dot(&b, ab, bs, s, "tf32", dot);
		r = new_dot(&b, ab, bb, nan_to_zero(&b, s), "tf32", dot);
		r = ir_binary(&b, OP_ADD, r, c);
	} else if (is_f32(a) && is_f32(bv) && is_f32(c) && (!strcmp(prec, "bf16x3") || !strcmp(prec, "bf16x6"))) {
		int n = prec[4] == '6' ? 3 : 2;
		IrValue *ap[3], *bp[3];
		bf16_parts(&b, a, n, ap);
		bf16_parts(&b, bv, n, bp);
		enum { HI, MID, LO };
		r = zero_like(&b, c);
		if (n == 3) {
			r = new_dot(&b, ap[MID], bp[MID], r, "ieee", dot);
			r = new_dot(&b, ap[LO], bp[HI], r, "ieee", dot);
			r = new_dot(&b, ap[HI], bp[LO], r, "ieee", dot);
		}
		r = new_dot(&b, ap[MID], bp[HI], r, "ieee", dot);
		r = new_dot(&b, ap[HI], bp[MID], r, "ieee", dot);
		r = new_dot(&b, ap[HI], bp[HI], nan_to_zero(&b, r), "ieee", dot);
		r = ir_binary(&b, OP_ADD, r, c);
	} else if (is_fp8(a) && is_fp8(bv)) {
		const IrLayout *l = an_dot_mma_layout(f->module->ctx, dot, o);
		if (l && l->version_major == 3)
			return false;
		if (l && l->version_major == 2 && native_fp8_mma(o) && is_f32(c))
			return false; /* mma.sync takes e4m3 / e5m2 on sm_89 and later */
		const IrType *h = ir_type(f->module->ctx, TY_F16);
		ir_op_set_operand(dot, 0, ir_cast(&b, OP_CAST, a, ir_type_like(b.ctx, a->type, h)));
		ir_op_set_operand(dot, 1, ir_cast(&b, OP_CAST, bv, ir_type_like(b.ctx, bv->type, h)));
		ir_op_set_int(b.ctx, dot, "from_fp8", 1); /* max_num_imprecise_acc still applies */
		return true;
	} else {
		return false;
	}
	ir_replace_all_uses(f, &dot->res[0], r);
	ir_op_unlink(dot);
	return true;
}

static int split_block(IrFunc *f, IrBlock *blk, const AnGpuOptions *o)
{
	int n = 0;
	for (IrOp *op = blk->first, *next; op; op = next) {
		next = op->next;
		for (int i = 0; i < op->nregions; i++)
			n += split_block(f, op->regions[i], o);
		if (op->opc == OP_DOT && op->nops == 3)
			n += split_dot(f, op, o);
	}
	return n;
}

int an_split_dots(IrFunc *f, const AnGpuOptions *o)
{
	if (o->arch < 80)
		return 0;
	return split_block(f, f->body, o);
}
