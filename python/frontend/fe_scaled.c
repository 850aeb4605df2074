/* fe_scaled.c: tl.dot_scaled, the matrix product of microscaled (MX) blocks,
 * decomposed into ordinary IR ops so that every backend runs it.
 *
 * Each operand is a block in one of the formats "e2m1" (fp4, two per uint8,
 * the first element in the low nibble), "e4m3", "e5m2" (fp8, as uint8 or the
 * fp8 dtype), "bf16" or "fp16" (as uint16 or the float dtype), optionally with
 * a scale block of e8m0 exponents (uint8: 2^(s-127), 0xFF NaN), one per 16 or
 * 32 consecutive elements along K, shaped [.., M, K/g] for lhs and [.., N, K/g]
 * for rhs (not transposed). As Triton on GPUs without native scaled MMA
 * (its DecomposeScaledBlocked rewrite), each operand is upcast to a compute
 * type, fp16 when either format is fp16 and bf16 otherwise, the scale
 * applied by one multiplication in that type, and the product is a plain
 * `dot` with an f32 accumulator:
 *
 *   fp4:   each byte read twice along the packed dim (K; M or N when
 *          *_k_pack is false) by a gather of index k >> 1, shifted right by
 *          4 at odd k and masked (the low nibble is the first element),
 *          then each 4-bit code decoded into the compute type's bits (sign,
 *          exponent rebiased, mantissa; code 1 is the subnormal 0.5, code 0
 *          zero) and bitcast;
 *   fp8, bf16, fp16: a bitcast from the unsigned storage type if needed,
 *          then a value cast;
 *   scale: bf16: (u16(s) << 7) bitcast; fp16: (u32(s) << 23) bitcast to f32,
 *          cast to f16 (Triton's construction: s = 0 gives 0, not 2^-127);
 *          unless fast_math, s = 0xFF becomes NaN, so the whole group of
 *          products is NaN (Triton selects NaN after the multiplication; the
 *          result is the same). A float scale block is cast as it is. The
 *          scales are computed on the small [.., R, K/g] block (transposed
 *          to [.., K/g, N] for rhs), spread along K by a gather of index
 *          k / g and multiplied into the operand.
 *
 * Gathers rather than join / broadcast + reshape: every intermediate keeps
 * the operand's rank, so the GPU layouts stay the 2-D (3-D) ones of the
 * loads, each gather one pass through shared memory.
 */
#include <math.h>
#include <string.h>

#include "python/frontend/fe.h"

typedef enum Fmt { F_E2M1, F_E4M3, F_E5M2, F_BF16, F_FP16 } Fmt;

static const char *const fmt_names[] = {"e2m1", "e4m3", "e5m2", "bf16", "fp16"};

static const IrType *T(Fe *fe, IrTypeKind k)
{
	return ir_type(fe->ctx, k);
}

static bool given(FeVal *v)
{
	return v && !(v->kind == V_CONST && v->obj == Py_None);
}

static int fmt_arg(Fe *fe, PyObject *node, FeVal *v, const char *pname)
{
	if (!v || !fe_is_const(v) || !PyUnicode_Check(v->obj)) {
		fe_err(fe, node, IR_ERR_VALUE, "tl.dot_scaled(): argument '%s' must be a constexpr string", pname);
		return -1;
	}
	const char *s = PyUnicode_AsUTF8AndSize(v->obj, NULL);
	for (int i = 0; i < (int)(sizeof fmt_names / sizeof fmt_names[0]); i++)
		if (strcmp(s, fmt_names[i]) == 0)
			return i;
	fe_err(fe, node, IR_ERR_VALUE,
	       "tl.dot_scaled(): invalid float format '%s' for '%s' (expected e2m1, e4m3, e5m2, bf16 or fp16)", s,
	       pname);
	return -1;
}

static int bool_arg(Fe *fe, PyObject *node, FeVal *v, const char *pname, bool dflt)
{
	if (!given(v))
		return dflt;
	if (!fe_is_const(v)) {
		fe_err(fe, node, IR_ERR_VALUE, "tl.dot_scaled(): argument '%s' must be a constexpr bool", pname);
		return -1;
	}
	return PyObject_IsTrue(v->obj) == 1;
}

static IrValue *block_arg(Fe *fe, PyObject *node, FeVal *v, const char *pname)
{
	if (!v || !fe_is_tensor(v) || !ir_is_block(v->v->type))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.dot_scaled(): argument '%s' must be a block", pname);
	return v->v;
}

static IrValue *kconst(Fe *fe, const IrType *like, int64_t v)
{
	return ir_const_int(&fe->b, like, v);
}

/* x with its storage reinterpreted as format f (e2m1 stays uint8). */
static IrValue *as_format(Fe *fe, PyObject *node, IrValue *x, Fmt f, const char *pname)
{
	static const IrTypeKind fty[] = {TY_U8, TY_F8E4M3, TY_F8E5M2, TY_BF16, TY_F16};
	static const IrTypeKind sty[] = {TY_U8, TY_U8, TY_U8, TY_U16, TY_U16};
	static const char *const names[] = {"uint8 (two e2m1 per byte)", "float8e4nv or uint8", "float8e5 or uint8",
					    "bfloat16 or uint16", "float16 or uint16"};
	IrTypeKind k = ir_scalar(x->type)->kind;
	if (k == fty[f])
		return x;
	if (k == sty[f])
		return ir_cast(&fe->b, OP_BITCAST, x, ir_type_like(fe->ctx, x->type, T(fe, fty[f])));
	return fe_err(fe, node, IR_ERR_TYPE, "tl.dot_scaled(): %s operand '%s' must be %s, got %s", fmt_names[f], pname,
		      names[f], fe_tyname(fe, x->type));
}

/* The 1-D block x laid along dim d of a block of `shape` (rank r) and
 * broadcast over the other dims. */
static IrValue *lay_along(Fe *fe, PyObject *node, IrValue *x, int r, const int64_t *shape, int d)
{
	for (int i = 0; i < r; i++)
		if (i != d)
			x = ir_expand_dims(&fe->b, x, i);
	return fe_broadcast_to(fe, node, x, r, shape);
}

/* arange(0, n) >> sh */
static IrValue *range_shr(Fe *fe, int64_t n, int sh)
{
	IrValue *k = ir_make_range(&fe->b, 0, n);
	return sh ? ir_binary(&fe->b, OP_SHR, k, kconst(fe, k->type, sh)) : k;
}

/* x with each index along dim d repeated 2^sh times: a gather of index
 * k >> sh, so that every backend reads it as an ordinary 2-D (or 3-D)
 * block in the layout of its users. */
static IrValue *repeat_along(Fe *fe, PyObject *node, IrValue *x, int d, int sh)
{
	const IrType *t = x->type;
	int r = t->rank;
	int64_t shape[IR_MAX_RANK];
	memcpy(shape, t->shape, sizeof(int64_t) * (size_t)r);
	shape[d] <<= sh;
	IrValue *idx = lay_along(fe, node, range_shr(fe, shape[d], sh), r, shape, d);
	const IrType *rt = idx ? fe_block(fe, node, t->elem, r, shape) : NULL;
	if (!rt)
		return NULL;
	IrValue *ops[2] = {x, idx};
	IrValue *g = ir_build1(&fe->b, OP_GATHER, rt, 2, ops);
	ir_op_set_int(fe->ctx, g->def, "axis", d);
	return g;
}

/* The 4-bit codes of packed bytes x, two per byte along dim d, the low
 * nibble first (Triton's fp4 packing): each byte read twice, then shifted
 * by 0 or 4 by the parity of the index. */
static IrValue *unpack_nibbles(Fe *fe, PyObject *node, IrValue *x, int d)
{
	IrValue *twice = repeat_along(fe, node, x, d, 1);
	if (!twice)
		return NULL;
	const IrType *t = twice->type;
	int64_t n = t->shape[d];
	IrValue *k = ir_make_range(&fe->b, 0, n);
	IrValue *odd = ir_binary(&fe->b, OP_AND, k, kconst(fe, k->type, 1));
	IrValue *sh = ir_cast(&fe->b, OP_CAST, ir_binary(&fe->b, OP_SHL, odd, kconst(fe, k->type, 2)),
			      ir_type_like(fe->ctx, k->type, T(fe, TY_U8)));
	sh = lay_along(fe, node, sh, t->rank, t->shape, d);
	if (!sh)
		return NULL;
	return ir_binary(&fe->b, OP_AND, ir_binary(&fe->b, OP_SHR, twice, sh), kconst(fe, t, 15));
}

/* 4-bit e2m1 codes (uint8 0..15) -> compute type ct (bf16 or f16). */
static IrValue *decode_e2m1(Fe *fe, IrValue *codes, const IrType *ct)
{
	int mbits = ct->kind == TY_BF16 ? 7 : 10, bias = ct->kind == TY_BF16 ? 127 : 15;
	const IrType *t = ir_type_like(fe->ctx, codes->type, T(fe, TY_U16));
	IrValue *c = ir_cast(&fe->b, OP_CAST, codes, t);
	IrValue *em = ir_binary(&fe->b, OP_AND, c, kconst(fe, t, 7));
	/* exponent and mantissa bits moved to the top of ct's fields, the
	 * exponent rebiased: right for the normal codes 2..7 */
	IrValue *bits = ir_binary(&fe->b, OP_ADD, ir_binary(&fe->b, OP_SHL, em, kconst(fe, t, mbits - 1)),
				  kconst(fe, t, (int64_t)(bias - 1) << mbits));
	IrValue *half = kconst(fe, t, (int64_t)(bias - 1) << mbits);
	bits = ir_select(&fe->b, ir_cmp(&fe->b, "eq", em, kconst(fe, t, 1)), half, bits);
	bits = ir_select(&fe->b, ir_cmp(&fe->b, "eq", em, kconst(fe, t, 0)), kconst(fe, t, 0), bits);
	IrValue *sign = ir_binary(&fe->b, OP_SHL, ir_binary(&fe->b, OP_AND, c, kconst(fe, t, 8)), kconst(fe, t, 12));
	bits = ir_binary(&fe->b, OP_OR, bits, sign);
	return ir_cast(&fe->b, OP_BITCAST, bits, ir_type_like(fe->ctx, t, ct));
}

/* Scale block s (uint8 e8m0, or a float type) -> the same block of ct. */
static IrValue *scale_values(Fe *fe, IrValue *s, const IrType *ct, bool fast_math)
{
	IrCtx *ctx = fe->ctx;
	if (ir_is_float(ir_scalar(s->type)))
		return ir_cast(&fe->b, OP_CAST, s, ir_type_like(ctx, s->type, ct));
	IrValue *v;
	if (ct->kind == TY_BF16) {
		const IrType *t = ir_type_like(ctx, s->type, T(fe, TY_U16));
		v = ir_binary(&fe->b, OP_SHL, ir_cast(&fe->b, OP_CAST, s, t), kconst(fe, t, 7));
		v = ir_cast(&fe->b, OP_BITCAST, v, ir_type_like(ctx, s->type, ct));
	} else {
		const IrType *t = ir_type_like(ctx, s->type, T(fe, TY_U32));
		v = ir_binary(&fe->b, OP_SHL, ir_cast(&fe->b, OP_CAST, s, t), kconst(fe, t, 23));
		v = ir_cast(&fe->b, OP_BITCAST, v, ir_type_like(ctx, s->type, T(fe, TY_F32)));
		v = ir_cast(&fe->b, OP_CAST, v, ir_type_like(ctx, s->type, ct));
	}
	if (fast_math)
		return v;
	IrValue *nan = ir_const_float(&fe->b, v->type, NAN);
	return ir_select(&fe->b, ir_cmp(&fe->b, "eq", s, kconst(fe, s->type, 0xFF)), nan, v);
}

/* Scale block [.., R, K/g] of ct repeated g times along its last dim:
 * [.., R, K]; [.., K, R] for rhs (transposed first, while it is small). */
static IrValue *spread_scale(Fe *fe, PyObject *node, IrValue *s, int64_t g, bool rhs)
{
	const IrType *t = s->type;
	int r = t->rank;
	if (rhs) {
		int64_t order[IR_MAX_RANK], ts[IR_MAX_RANK];
		for (int i = 0; i < r; i++)
			order[i] = i;
		order[r - 2] = r - 1;
		order[r - 1] = r - 2;
		for (int i = 0; i < r; i++)
			ts[i] = t->shape[order[i]];
		const IrType *tt = fe_block(fe, node, t->elem, r, ts);
		if (!tt)
			return NULL;
		s = ir_build1(&fe->b, OP_TRANS, tt, 1, &s);
		ir_op_set_ints(fe->ctx, s->def, "order", r, order);
	}
	return repeat_along(fe, node, s, rhs ? r - 2 : r - 1, g == 16 ? 4 : 5);
}

/* The group size g one scale block implies: K / its last dim, 16 or 32;
 * 0 without a scale. */
static int64_t group_of(Fe *fe, PyObject *node, IrValue *s, int64_t K, const char *pname)
{
	if (!s)
		return 0;
	int64_t ks = s->type->shape[s->type->rank - 1];
	int64_t g = K / ks;
	if (ks * g != K || (g != 16 && g != 32)) {
		fe_err(fe, node, IR_ERR_VALUE,
		       "tl.dot_scaled(): %s %s gives a scale factor of K / %lld with K = %lld: it must be 16 or 32",
		       pname, fe_tyname(fe, s->type), (long long)ks, (long long)K);
		return -1;
	}
	return g;
}

/* One operand in ct: x upcast (fp4 unpacked along pack_dim) and scaled by
 * s (NULL: none), whose rows are R (the dim other than K). */
static IrValue *operand(Fe *fe, PyObject *node, IrValue *x, Fmt f, int pack_dim, IrValue *s, int64_t g, bool is_rhs,
			bool fast_math, const IrType *ct)
{
	if (f == F_E2M1) {
		x = unpack_nibbles(fe, node, x, pack_dim);
		if (!x)
			return NULL;
		x = decode_e2m1(fe, x, ct);
	} else if (ir_scalar(x->type) != ct)
		x = ir_cast(&fe->b, OP_CAST, x, ir_type_like(fe->ctx, x->type, ct));
	if (!s)
		return x;
	IrValue *sc = spread_scale(fe, node, scale_values(fe, s, ct, fast_math), g, is_rhs);
	return sc ? ir_binary(&fe->b, OP_MUL, x, sc) : NULL;
}

FeVal *fe_dot_scaled(Fe *fe, PyObject *node, FeVal **a)
{
	IrValue *lhs = block_arg(fe, node, a[0], "lhs"), *rhs = lhs ? block_arg(fe, node, a[3], "rhs") : NULL;
	if (!rhs)
		return NULL;
	int r = lhs->type->rank;
	if (rhs->type->rank != r || (r != 2 && r != 3))
		return fe_err(fe, node, IR_ERR_TYPE, "tl.dot_scaled(): both inputs must be 2-D or 3-D, got %s and %s",
			      fe_tyname(fe, lhs->type), fe_tyname(fe, rhs->type));
	int lf = fmt_arg(fe, node, a[2], "lhs_format"), rf = lf < 0 ? -1 : fmt_arg(fe, node, a[5], "rhs_format");
	if (rf < 0)
		return NULL;
	int fast = bool_arg(fe, node, a[7], "fast_math", false);
	int lkp = fast < 0 ? -1 : bool_arg(fe, node, a[8], "lhs_k_pack", true);
	int rkp = lkp < 0 ? -1 : bool_arg(fe, node, a[9], "rhs_k_pack", true);
	if (rkp < 0)
		return NULL;
	if ((!lkp && lf != F_E2M1) || (!rkp && rf != F_E2M1))
		return fe_err(fe, node, IR_ERR_VALUE,
			      "tl.dot_scaled(): only e2m1 operands can be packed along a dim other than K");
	if (given(a[10])) {
		const IrType *od = fe_is_const(a[10]) ? fe_dtype_to_ir(fe, a[10]->obj) : NULL;
		if (!od || od->kind != TY_F32)
			return fe_err(fe, node, IR_ERR_VALUE,
				      "tl.dot_scaled(): only float32 is supported for out_dtype");
	}
	lhs = as_format(fe, node, lhs, (Fmt)lf, "lhs");
	rhs = lhs ? as_format(fe, node, rhs, (Fmt)rf, "rhs") : NULL;
	if (!rhs)
		return NULL;

	const IrType *lt = lhs->type, *rt = rhs->type;
	int64_t M = lt->shape[r - 2], KL = lt->shape[r - 1], KR = rt->shape[r - 2], N = rt->shape[r - 1];
	if (lf == F_E2M1)
		*(lkp ? &KL : &M) *= 2;
	if (rf == F_E2M1)
		*(rkp ? &KR : &N) *= 2;
	if (KL != KR)
		return fe_err(fe, node, IR_ERR_TYPE,
			      "tl.dot_scaled(): the reduction dims hold %lld (lhs %s) and %lld (rhs %s) elements",
			      (long long)KL, fe_tyname(fe, lt), (long long)KR, fe_tyname(fe, rt));
	if (r == 3 && lt->shape[0] != rt->shape[0])
		return fe_err(fe, node, IR_ERR_TYPE, "tl.dot_scaled(): batch dims of %s and %s differ",
			      fe_tyname(fe, lt), fe_tyname(fe, rt));
	int64_t K = KL;
	if (M < 16 || N < 16 || K < 16)
		return fe_err(fe, node, IR_ERR_VALUE,
			      "tl.dot_scaled(): every dimension must be at least 16, got M=%lld N=%lld K=%lld",
			      (long long)M, (long long)N, (long long)K);

	/* scales: [.., M, K/g] and [.., N, K/g], one group size */
	IrValue *ls = NULL, *rs = NULL;
	if (given(a[1]) && !(ls = block_arg(fe, node, a[1], "lhs_scale")))
		return NULL;
	if (given(a[4]) && !(rs = block_arg(fe, node, a[4], "rhs_scale")))
		return NULL;
	IrValue *scales[2] = {ls, rs};
	for (int i = 0; i < 2; i++) {
		IrValue *s = scales[i];
		const IrType *e = s ? ir_scalar(s->type) : NULL;
		if (s && (s->type->rank != r || (e->kind != TY_U8 && !ir_is_float(e))))
			return fe_err(
				fe, node, IR_ERR_TYPE,
				"tl.dot_scaled(): %s must be a %d-D block of uint8 (e8m0) or float scales, got %s",
				i ? "rhs_scale" : "lhs_scale", r, fe_tyname(fe, s->type));
	}
	int64_t gl = group_of(fe, node, ls, K, "lhs_scale"), gr = gl < 0 ? -1 : group_of(fe, node, rs, K, "rhs_scale");
	if (gr < 0)
		return NULL;
	if (gl && gr && gl != gr)
		return fe_err(fe, node, IR_ERR_VALUE,
			      "tl.dot_scaled(): the operands must have the same scale factor, got %lld and %lld",
			      (long long)gl, (long long)gr);
	int64_t g = gl ? gl : gr;
	for (int i = 0; i < 2; i++) {
		IrValue *s = scales[i];
		int64_t rows = i ? N : M;
		const IrType *ot = i ? rt : lt;
		if (s && (s->type->shape[r - 2] != rows || s->type->shape[r - 1] != K / g ||
			  (r == 3 && s->type->shape[0] != ot->shape[0])))
			return fe_err(fe, node, IR_ERR_TYPE,
				      "tl.dot_scaled(): %s must be a block of shape [%s%lld, %lld], got %s",
				      i ? "rhs_scale" : "lhs_scale", r == 3 ? "B, " : "", (long long)rows,
				      (long long)(K / g), fe_tyname(fe, s->type));
	}

	int64_t shape[3];
	if (r == 3)
		shape[0] = lt->shape[0];
	shape[r - 2] = M;
	shape[r - 1] = N;
	const IrType *ot = fe_block(fe, node, T(fe, TY_F32), r, shape);
	if (!ot)
		return NULL;
	IrValue *acc;
	if (given(a[6])) {
		if (!fe_is_tensor(a[6]) || a[6]->v->type != ot)
			return fe_err(fe, node, IR_ERR_TYPE, "tl.dot_scaled(): acc must be a %s, got %s",
				      fe_tyname(fe, ot),
				      fe_is_tensor(a[6]) ? fe_tyname(fe, a[6]->v->type) : "no tensor");
		acc = a[6]->v;
	} else
		acc = ir_const_float(&fe->b, ot, 0.0);

	const IrType *ct = T(fe, lf == F_FP16 || rf == F_FP16 ? TY_F16 : TY_BF16);
	IrValue *x = operand(fe, node, lhs, (Fmt)lf, lkp ? r - 1 : r - 2, ls, g, false, fast, ct);
	IrValue *y = x ? operand(fe, node, rhs, (Fmt)rf, rkp ? r - 2 : r - 1, rs, g, true, fast, ct) : NULL;
	if (!y)
		return NULL;
	IrValue *ops[3] = {x, y, acc};
	return fe_tensor(fe, ir_build1(&fe->b, OP_DOT, ot, 3, ops));
}
