/* ir.c: the IR's core: the arena, interning of strings, types and layouts,
 * errors, ops/blocks/functions/modules, attributes and the builder.
 *
 * The arena is a list of chunks; nothing is freed before ir_ctx_free. Types
 * and layouts are interned by linear search over small per-kind lists (a
 * kernel has at most a few hundred distinct types), strings by an open hash.
 */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------- */
/* Op table                                                                  */
/* ------------------------------------------------------------------------- */

static const IrOpInfo opinfo[] = {
#define OP(e, name, minops, maxops, nres, nreg, flags) {name, minops, maxops, nres, nreg, flags},
#include "ops.def"
#undef OP
};

const IrOpInfo *ir_opinfo(IrOpcode opc)
{
	if ((int)opc < 0 || opc >= OP_COUNT_)
		abort();
	return &opinfo[opc];
}

int ir_opcode_by_name(const char *name)
{
	for (int i = 0; i < OP_COUNT_; i++)
		if (strcmp(opinfo[i].name, name) == 0)
			return i;
	return -1;
}

/* ------------------------------------------------------------------------- */
/* Arena                                                                     */
/* ------------------------------------------------------------------------- */

typedef struct Chunk {
	struct Chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
} Chunk;

typedef struct TypeList {
	IrType **v;
	int n, cap;
} TypeList;

struct IrCtx {
	Chunk *chunks;
	/* string interning: open addressing */
	const char **strs;
	size_t nstrs, capstrs;
	/* types */
	const IrType *scalars[TY_KIND_COUNT_];
	TypeList ptrs, blocks;
	int ntypes;
	/* layouts */
	IrLayout **layouts;
	int nlayouts, caplayouts;
	IrError *error;
};

static Chunk *chunk_new(size_t cap, Chunk *next)
{
	Chunk *c = malloc(sizeof(Chunk) + cap);
	if (!c)
		abort();
	c->next = next;
	c->used = 0;
	c->cap = cap;
	return c;
}

IrCtx *ir_ctx_new(void)
{
	IrCtx *ctx = calloc(1, sizeof(IrCtx));
	if (!ctx)
		return NULL;
	ctx->chunks = chunk_new(64 * 1024, NULL);
	for (int k = 0; k < TY_KIND_COUNT_; k++) {
		if (k == TY_PTR || k == TY_BLOCK)
			continue;
		IrType *t = ir_alloc(ctx, sizeof(IrType));
		t->kind = (IrTypeKind)k;
		t->id = ctx->ntypes++;
		t->numel = 1;
		ctx->scalars[k] = t;
	}
	return ctx;
}

void ir_ctx_free(IrCtx *ctx)
{
	if (!ctx)
		return;
	for (Chunk *c = ctx->chunks, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	free(ctx->strs);
	free(ctx->ptrs.v);
	free(ctx->blocks.v);
	free(ctx->layouts);
	free(ctx);
}

void *ir_alloc(IrCtx *ctx, size_t size)
{
	size = (size + 15) & ~(size_t)15;
	Chunk *c = ctx->chunks;
	if (c->used + size > c->cap) {
		size_t cap = size > 32 * 1024 ? size : 64 * 1024;
		if (size > 32 * 1024) {
			/* big allocation: its own chunk, behind the current one */
			Chunk *big = chunk_new(cap, c->next);
			c->next = big;
			big->used = size;
			memset(big->data, 0, size);
			return big->data;
		}
		c = ctx->chunks = chunk_new(cap, c);
	}
	void *p = c->data + c->used;
	c->used += size;
	memset(p, 0, size);
	return p;
}

char *ir_strndup(IrCtx *ctx, const char *s, size_t n)
{
	char *p = ir_alloc(ctx, n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *ir_strdup(IrCtx *ctx, const char *s)
{
	return ir_strndup(ctx, s, strlen(s));
}

static size_t str_hash(const char *s)
{
	size_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

const char *ir_intern(IrCtx *ctx, const char *s)
{
	if (!s)
		return NULL;
	if (2 * (ctx->nstrs + 1) > ctx->capstrs) {
		size_t cap = ctx->capstrs ? 2 * ctx->capstrs : 256;
		const char **v = calloc(cap, sizeof(char *));
		if (!v)
			abort();
		for (size_t i = 0; i < ctx->capstrs; i++) {
			const char *o = ctx->strs[i];
			if (!o)
				continue;
			size_t j = str_hash(o) & (cap - 1);
			while (v[j])
				j = (j + 1) & (cap - 1);
			v[j] = o;
		}
		free(ctx->strs);
		ctx->strs = v;
		ctx->capstrs = cap;
	}
	size_t j = str_hash(s) & (ctx->capstrs - 1);
	while (ctx->strs[j]) {
		if (strcmp(ctx->strs[j], s) == 0)
			return ctx->strs[j];
		j = (j + 1) & (ctx->capstrs - 1);
	}
	const char *c = ir_strdup(ctx, s);
	ctx->strs[j] = c;
	ctx->nstrs++;
	return c;
}

char *ir_vfmt(IrCtx *ctx, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		n = 0;
	char *p = ir_alloc(ctx, (size_t)n + 1);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	return p;
}

char *ir_fmt(IrCtx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *p = ir_vfmt(ctx, fmt, ap);
	va_end(ap);
	return p;
}

/* ------------------------------------------------------------------------- */
/* Errors and locations                                                      */
/* ------------------------------------------------------------------------- */

IrError *ir_error(IrCtx *ctx, IrErrCode code, IrLoc loc, const char *fmt, ...)
{
	IrError *e = ir_alloc(ctx, sizeof(IrError));
	va_list ap;
	va_start(ap, fmt);
	e->msg = ir_vfmt(ctx, fmt, ap);
	va_end(ap);
	e->code = code;
	e->loc = loc;
	if (!ctx->error)
		ctx->error = e;
	return e;
}

IrError *ir_ctx_error(IrCtx *ctx)
{
	return ctx->error;
}

void ir_ctx_clear_error(IrCtx *ctx)
{
	ctx->error = NULL;
}

char *ir_error_str(IrCtx *ctx, const IrError *err)
{
	return ir_fmt(ctx, "%s:%d:%d: %s", err->loc.file ? err->loc.file : "<unknown>",
		      err->loc.line, err->loc.col, err->msg);
}

IrLoc ir_loc(IrCtx *ctx, const char *file, int line, int col)
{
	IrLoc l = {ir_intern(ctx, file), line, col};
	return l;
}

/* ------------------------------------------------------------------------- */
/* Types and layouts                                                         */
/* ------------------------------------------------------------------------- */

static const char *const kind_names[TY_KIND_COUNT_] = {
	[TY_I1] = "i1",     [TY_I8] = "i8",     [TY_I16] = "i16",       [TY_I32] = "i32",
	[TY_I64] = "i64",   [TY_U8] = "u8",     [TY_U16] = "u16",       [TY_U32] = "u32",
	[TY_U64] = "u64",   [TY_F16] = "f16",   [TY_BF16] = "bf16",     [TY_F32] = "f32",
	[TY_F64] = "f64",   [TY_F8E4M3] = "f8e4m3", [TY_F8E5M2] = "f8e5m2", [TY_PTR] = NULL,
	[TY_BLOCK] = NULL,  [TY_VOID] = "void", [TY_F8E4B15] = "f8e4b15", [TY_F8E4B8] = "f8e4b8",
	[TY_F8E5B16] = "f8e5b16",
};

const char *ir_kind_name(IrTypeKind k)
{
	if ((int)k < 0 || k >= TY_KIND_COUNT_)
		return NULL;
	return kind_names[k];
}

int ir_kind_by_name(const char *name)
{
	for (int k = 0; k < TY_KIND_COUNT_; k++)
		if (kind_names[k] && strcmp(kind_names[k], name) == 0)
			return k;
	return -1;
}

const IrType *ir_type(IrCtx *ctx, IrTypeKind k)
{
	if (k == TY_PTR || k == TY_BLOCK || (int)k < 0 || k >= TY_KIND_COUNT_)
		abort();
	return ctx->scalars[k];
}

static void typelist_push(TypeList *l, IrType *t)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 32;
		l->v = realloc(l->v, (size_t)l->cap * sizeof(IrType *));
		if (!l->v)
			abort();
	}
	l->v[l->n++] = t;
}

const IrType *ir_type_ptr(IrCtx *ctx, const IrType *pointee, int addrspace)
{
	return ir_type_ptr_const(ctx, pointee, addrspace, false);
}

const IrType *ir_type_ptr_const(IrCtx *ctx, const IrType *pointee, int addrspace, bool is_const)
{
	for (int i = 0; i < ctx->ptrs.n; i++) {
		IrType *t = ctx->ptrs.v[i];
		if (t->elem == pointee && t->addrspace == addrspace && t->is_const == is_const)
			return t;
	}
	IrType *t = ir_alloc(ctx, sizeof(IrType));
	t->kind = TY_PTR;
	t->id = ctx->ntypes++;
	t->elem = pointee;
	t->addrspace = addrspace;
	t->is_const = is_const;
	t->numel = 1;
	typelist_push(&ctx->ptrs, t);
	return t;
}

static bool is_pow2(int64_t x)
{
	return x > 0 && (x & (x - 1)) == 0;
}

const IrType *ir_type_block(IrCtx *ctx, const IrType *elem, int rank, const int64_t *shape,
			    const IrLayout *layout)
{
	if (!elem || elem->kind == TY_BLOCK || elem->kind == TY_VOID || rank < 1 ||
	    rank > IR_MAX_RANK)
		return NULL;
	int64_t numel = 1;
	for (int i = 0; i < rank; i++) {
		if (!is_pow2(shape[i]))
			return NULL;
		numel *= shape[i];
		if (numel > IR_MAX_NUMEL)
			return NULL;
	}
	for (int i = 0; i < ctx->blocks.n; i++) {
		IrType *t = ctx->blocks.v[i];
		if (t->elem == elem && t->rank == rank && t->layout == layout &&
		    memcmp(t->shape, shape, (size_t)rank * sizeof(int64_t)) == 0)
			return t;
	}
	IrType *t = ir_alloc(ctx, sizeof(IrType));
	t->kind = TY_BLOCK;
	t->id = ctx->ntypes++;
	t->elem = elem;
	t->rank = rank;
	memcpy(t->shape, shape, (size_t)rank * sizeof(int64_t));
	t->numel = numel;
	t->layout = layout;
	typelist_push(&ctx->blocks, t);
	return t;
}

const IrType *ir_type_with_layout(IrCtx *ctx, const IrType *t, const IrLayout *layout)
{
	if (t->kind != TY_BLOCK)
		return t;
	return ir_type_block(ctx, t->elem, t->rank, t->shape, layout);
}

const IrType *ir_type_like(IrCtx *ctx, const IrType *like, const IrType *elem)
{
	if (like->kind != TY_BLOCK)
		return elem;
	return ir_type_block(ctx, elem, like->rank, like->shape, like->layout);
}

static bool layout_eq(const IrLayout *a, const IrLayout *b)
{
	if (a->kind != b->kind || a->rank != b->rank)
		return false;
	size_t r = (size_t)a->rank * sizeof(int);
	switch (a->kind) {
	case LAYOUT_BLOCKED:
		return !memcmp(a->size_per_thread, b->size_per_thread, r) &&
		       !memcmp(a->threads_per_warp, b->threads_per_warp, r) &&
		       !memcmp(a->warps_per_cta, b->warps_per_cta, r) && !memcmp(a->order, b->order, r);
	case LAYOUT_SLICE:
		return a->dim == b->dim && a->parent == b->parent;
	case LAYOUT_SHARED:
		return a->vec == b->vec && a->per_phase == b->per_phase &&
		       a->max_phase == b->max_phase && !memcmp(a->order, b->order, r);
	case LAYOUT_MMA:
		return a->version_major == b->version_major && a->version_minor == b->version_minor &&
		       !memcmp(a->warps_per_cta, b->warps_per_cta, r) &&
		       !memcmp(a->instr_shape, b->instr_shape, sizeof a->instr_shape);
	case LAYOUT_DOT_OP:
		return a->opidx == b->opidx && a->parent == b->parent && a->k_width == b->k_width;
	}
	return false;
}

const IrLayout *ir_layout(IrCtx *ctx, const IrLayout *proto)
{
	for (int i = 0; i < ctx->nlayouts; i++)
		if (layout_eq(ctx->layouts[i], proto))
			return ctx->layouts[i];
	if (ctx->nlayouts == ctx->caplayouts) {
		ctx->caplayouts = ctx->caplayouts ? 2 * ctx->caplayouts : 16;
		ctx->layouts = realloc(ctx->layouts, (size_t)ctx->caplayouts * sizeof(IrLayout *));
		if (!ctx->layouts)
			abort();
	}
	IrLayout *l = ir_alloc(ctx, sizeof(IrLayout));
	*l = *proto;
	l->id = ctx->nlayouts;
	ctx->layouts[ctx->nlayouts++] = l;
	return l;
}

const IrType *ir_scalar(const IrType *t)
{
	return t->kind == TY_BLOCK ? t->elem : t;
}

bool ir_is_block(const IrType *t)
{
	return t->kind == TY_BLOCK;
}

bool ir_is_int(const IrType *t)
{
	return t->kind <= TY_U64;
}

bool ir_is_signed(const IrType *t)
{
	return t->kind >= TY_I8 && t->kind <= TY_I64;
}

bool ir_is_float(const IrType *t)
{
	return (t->kind >= TY_F16 && t->kind <= TY_F8E5M2) || ir_is_fp8(t);
}

bool ir_is_fp8(const IrType *t)
{
	switch (t->kind) {
	case TY_F8E4M3: case TY_F8E5M2: case TY_F8E4B15: case TY_F8E4B8: case TY_F8E5B16: return true;
	default: return false;
	}
}

bool ir_is_ptr(const IrType *t)
{
	return t->kind == TY_PTR;
}

int ir_type_bits(const IrType *t)
{
	static const int bits[TY_KIND_COUNT_] = {
		[TY_I1] = 1,   [TY_I8] = 8,   [TY_I16] = 16,  [TY_I32] = 32,    [TY_I64] = 64,
		[TY_U8] = 8,   [TY_U16] = 16, [TY_U32] = 32,  [TY_U64] = 64,    [TY_F16] = 16,
		[TY_BF16] = 16, [TY_F32] = 32, [TY_F64] = 64, [TY_F8E4M3] = 8, [TY_F8E5M2] = 8,
		[TY_PTR] = 64, [TY_BLOCK] = 0, [TY_VOID] = 0, [TY_F8E4B15] = 8, [TY_F8E4B8] = 8, [TY_F8E5B16] = 8,
	};
	return bits[ir_scalar(t)->kind];
}

/* ------------------------------------------------------------------------- */
/* Modules, functions, blocks, ops                                           */
/* ------------------------------------------------------------------------- */

IrModule *ir_module_new(IrCtx *ctx)
{
	IrModule *m = ir_alloc(ctx, sizeof(IrModule));
	m->ctx = ctx;
	return m;
}

IrBlock *ir_block_new(IrCtx *ctx)
{
	return ir_alloc(ctx, sizeof(IrBlock));
}

IrValue *ir_block_add_arg(IrCtx *ctx, IrBlock *b, const IrType *t)
{
	if (b->nargs == b->capargs) {
		int cap = b->capargs ? 2 * b->capargs : 4;
		IrValue **v = ir_alloc(ctx, (size_t)cap * sizeof(IrValue *));
		if (b->nargs)
			memcpy(v, b->args, (size_t)b->nargs * sizeof(IrValue *));
		b->args = v;
		b->capargs = cap;
	}
	IrValue *v = ir_alloc(ctx, sizeof(IrValue));
	v->type = t;
	v->owner = b;
	v->index = b->nargs;
	b->args[b->nargs++] = v;
	return v;
}

IrFunc *ir_func_new(IrModule *m, const char *name, int nparams, const IrType **ptys, int nres,
		    const IrType **restys, IrLoc loc)
{
	IrCtx *ctx = m->ctx;
	IrFunc *f = ir_alloc(ctx, sizeof(IrFunc));
	f->module = m;
	f->name = ir_intern(ctx, name);
	f->loc = loc;
	f->body = ir_block_new(ctx);
	f->body->func = f;
	for (int i = 0; i < nparams; i++)
		ir_block_add_arg(ctx, f->body, ptys[i]);
	f->params = ir_alloc(ctx, (size_t)(nparams ? nparams : 1) * sizeof(IrParam));
	f->nres = nres;
	f->restys = ir_alloc(ctx, (size_t)(nres ? nres : 1) * sizeof(IrType *));
	for (int i = 0; i < nres; i++)
		f->restys[i] = restys[i];
	if (m->nfuncs == m->capfuncs) {
		int cap = m->capfuncs ? 2 * m->capfuncs : 4;
		IrFunc **v = ir_alloc(ctx, (size_t)cap * sizeof(IrFunc *));
		if (m->nfuncs)
			memcpy(v, m->funcs, (size_t)m->nfuncs * sizeof(IrFunc *));
		m->funcs = v;
		m->capfuncs = cap;
	}
	m->funcs[m->nfuncs++] = f;
	return f;
}

IrFunc *ir_module_find(const IrModule *m, const char *name)
{
	for (int i = 0; i < m->nfuncs; i++)
		if (strcmp(m->funcs[i]->name, name) == 0)
			return m->funcs[i];
	return NULL;
}

IrOp *ir_op_new(IrCtx *ctx, IrOpcode opc, int nops, IrValue *const *ops, int nres,
		const IrType *const *restys, int nregions, IrLoc loc)
{
	IrOp *op = ir_alloc(ctx, sizeof(IrOp));
	op->opc = opc;
	op->loc = loc;
	op->nops = nops;
	op->ops = ir_alloc(ctx, (size_t)(nops ? nops : 1) * sizeof(IrValue *));
	for (int i = 0; i < nops; i++)
		op->ops[i] = ops[i];
	op->nres = nres;
	op->res = ir_alloc(ctx, (size_t)(nres ? nres : 1) * sizeof(IrValue));
	for (int i = 0; i < nres; i++) {
		op->res[i].type = restys[i];
		op->res[i].def = op;
		op->res[i].index = i;
	}
	op->nregions = nregions;
	op->regions = ir_alloc(ctx, (size_t)(nregions ? nregions : 1) * sizeof(IrBlock *));
	for (int i = 0; i < nregions; i++) {
		op->regions[i] = ir_block_new(ctx);
		op->regions[i]->parent_op = op;
	}
	return op;
}

static void set_func(IrBlock *b, IrFunc *f)
{
	b->func = f;
	for (IrOp *op = b->first; op; op = op->next)
		for (int i = 0; i < op->nregions; i++)
			set_func(op->regions[i], f);
}

void ir_op_set_region(IrOp *op, int i, IrBlock *blk)
{
	op->regions[i] = blk;
	blk->parent_op = op;
	set_func(blk, op->parent ? op->parent->func : NULL);
}

void ir_block_append(IrBlock *b, IrOp *op)
{
	op->parent = b;
	op->prev = b->last;
	op->next = NULL;
	if (b->last)
		b->last->next = op;
	else
		b->first = op;
	b->last = op;
	for (int i = 0; i < op->nregions; i++)
		set_func(op->regions[i], b->func);
}

void ir_block_insert_before(IrBlock *b, IrOp *before, IrOp *op)
{
	if (!before) {
		ir_block_append(b, op);
		return;
	}
	op->parent = b;
	op->next = before;
	op->prev = before->prev;
	if (before->prev)
		before->prev->next = op;
	else
		b->first = op;
	before->prev = op;
	for (int i = 0; i < op->nregions; i++)
		set_func(op->regions[i], b->func);
}

void ir_op_unlink(IrOp *op)
{
	IrBlock *b = op->parent;
	if (!b)
		return;
	if (op->prev)
		op->prev->next = op->next;
	else
		b->first = op->next;
	if (op->next)
		op->next->prev = op->prev;
	else
		b->last = op->prev;
	op->prev = op->next = NULL;
	op->parent = NULL;
}

void ir_op_set_operand(IrOp *op, int i, IrValue *v)
{
	op->ops[i] = v;
}

typedef struct Replace {
	IrValue *from, *to;
	int count;
} Replace;

static void replace_in_op(IrOp *op, void *user)
{
	Replace *r = user;
	for (int i = 0; i < op->nops; i++)
		if (op->ops[i] == r->from) {
			if (r->to)
				op->ops[i] = r->to;
			r->count++;
		}
}

void ir_replace_all_uses(IrFunc *f, IrValue *from, IrValue *to)
{
	Replace r = {from, to, 0};
	ir_walk_func(f, replace_in_op, &r);
}

int ir_count_uses(IrFunc *f, const IrValue *v)
{
	Replace r = {(IrValue *)v, NULL, 0};
	ir_walk_func(f, replace_in_op, &r);
	return r.count;
}

IrOp *ir_for_add_carried(IrFunc *f, IrOp *loop, int n, IrValue *const *inits,
			 IrValue *const *yields)
{
	IrCtx *ctx = f->module->ctx;
	IrBlock *body = loop->regions[0];
	IrOp *y = ir_block_terminator(body);
	int ny = y->nops + n;
	IrValue **yv = ir_alloc(ctx, sizeof(*yv) * (size_t)ny);
	memcpy(yv, y->ops, sizeof(*yv) * (size_t)y->nops);
	memcpy(yv + y->nops, yields, sizeof(*yv) * (size_t)n);
	IrBuilder yb;
	ir_builder_init(&yb, ctx);
	ir_builder_before(&yb, y);
	yb.loc = y->loc;
	ir_yield(&yb, ny, yv);
	ir_op_unlink(y);

	int nops = loop->nops + n, nres = loop->nres + n;
	IrValue **lo = ir_alloc(ctx, sizeof(*lo) * (size_t)nops);
	const IrType **lt = ir_alloc(ctx, sizeof(*lt) * (size_t)nres);
	memcpy(lo, loop->ops, sizeof(*lo) * (size_t)loop->nops);
	memcpy(lo + loop->nops, inits, sizeof(*lo) * (size_t)n);
	for (int i = 0; i < loop->nres; i++)
		lt[i] = loop->res[i].type;
	for (int i = 0; i < n; i++)
		lt[loop->nres + i] = body->args[body->nargs - n + i]->type;
	IrOp *nl = ir_op_new(ctx, OP_FOR, nops, lo, nres, lt, 1, loop->loc);
	nl->nattrs = loop->nattrs;
	nl->attrs = loop->attrs;
	ir_block_insert_before(loop->parent, loop, nl);
	ir_op_set_region(nl, 0, body);
	for (int i = 0; i < loop->nres; i++)
		ir_replace_all_uses(f, &loop->res[i], &nl->res[i]);
	ir_op_unlink(loop);
	return nl;
}

/* The terminator of b rebuilt without its operand i. */
static void drop_yield_operand(IrCtx *ctx, IrBlock *b, int i)
{
	IrOp *y = ir_block_terminator(b);
	if (!y || i >= y->nops)
		return;
	IrValue **yv = ir_alloc(ctx, sizeof(*yv) * (size_t)(y->nops > 0 ? y->nops : 1));
	int ny = 0;
	for (int k = 0; k < y->nops; k++)
		if (k != i)
			yv[ny++] = y->ops[k];
	IrBuilder yb;
	ir_builder_init(&yb, ctx);
	ir_builder_before(&yb, y);
	yb.loc = y->loc;
	ir_yield(&yb, ny, yv);
	ir_op_unlink(y);
}

IrOp *ir_for_drop_carried(IrFunc *f, IrOp *loop, int i)
{
	IrCtx *ctx = f->module->ctx;
	IrBlock *body = loop->regions[0];
	drop_yield_operand(ctx, body, i);
	for (int k = i + 1; k + 1 < body->nargs; k++) {
		body->args[k] = body->args[k + 1];
		body->args[k]->index = k;
	}
	body->nargs--;

	IrValue **lo = ir_alloc(ctx, sizeof(*lo) * (size_t)loop->nops);
	const IrType **lt = ir_alloc(ctx, sizeof(*lt) * (size_t)(loop->nres > 0 ? loop->nres : 1));
	int no = 0, nr = 0;
	for (int k = 0; k < loop->nops; k++)
		if (k != 3 + i)
			lo[no++] = loop->ops[k];
	for (int k = 0; k < loop->nres; k++)
		if (k != i)
			lt[nr++] = loop->res[k].type;
	IrOp *nl = ir_op_new(ctx, OP_FOR, no, lo, nr, lt, 1, loop->loc);
	nl->nattrs = loop->nattrs;
	nl->attrs = loop->attrs;
	ir_block_insert_before(loop->parent, loop, nl);
	ir_op_set_region(nl, 0, body);
	for (int k = 0, j = 0; k < loop->nres; k++)
		if (k != i)
			ir_replace_all_uses(f, &loop->res[k], &nl->res[j++]);
	ir_op_unlink(loop);
	return nl;
}

IrOp *ir_if_drop_result(IrFunc *f, IrOp *op, int i)
{
	IrCtx *ctx = f->module->ctx;
	for (int r = 0; r < op->nregions; r++)
		drop_yield_operand(ctx, op->regions[r], i);
	const IrType **rt = ir_alloc(ctx, sizeof(*rt) * (size_t)(op->nres > 0 ? op->nres : 1));
	int nr = 0;
	for (int k = 0; k < op->nres; k++)
		if (k != i)
			rt[nr++] = op->res[k].type;
	IrOp *n = ir_op_new(ctx, OP_IF, op->nops, op->ops, nr, rt, op->nregions, op->loc);
	n->nattrs = op->nattrs;
	n->attrs = op->attrs;
	ir_block_insert_before(op->parent, op, n);
	for (int r = 0; r < op->nregions; r++)
		ir_op_set_region(n, r, op->regions[r]);
	for (int k = 0, j = 0; k < op->nres; k++)
		if (k != i)
			ir_replace_all_uses(f, &op->res[k], &n->res[j++]);
	ir_op_unlink(op);
	return n;
}

IrOp *ir_block_terminator(const IrBlock *b)
{
	if (b->last && (ir_opinfo(b->last->opc)->flags & IR_TERM))
		return b->last;
	return NULL;
}

void ir_walk_block(IrBlock *b, IrWalkFn fn, void *user)
{
	for (IrOp *op = b->first, *next; op; op = next) {
		next = op->next;
		fn(op, user);
		for (int i = 0; i < op->nregions; i++)
			ir_walk_block(op->regions[i], fn, user);
	}
}

void ir_walk_func(IrFunc *f, IrWalkFn fn, void *user)
{
	ir_walk_block(f->body, fn, user);
}

/* ------------------------------------------------------------------------- */
/* Attributes: kept sorted by name, so that printing is canonical.           */
/* ------------------------------------------------------------------------- */

IrAttr *ir_set_attr(IrCtx *ctx, int *nattrs, IrAttr **attrs, const IrAttr *a)
{
	const char *name = ir_intern(ctx, a->name);
	int n = *nattrs, pos = 0;
	for (; pos < n; pos++) {
		int c = strcmp((*attrs)[pos].name, name);
		if (c == 0) {
			(*attrs)[pos] = *a;
			(*attrs)[pos].name = name;
			return &(*attrs)[pos];
		}
		if (c > 0)
			break;
	}
	IrAttr *v = ir_alloc(ctx, (size_t)(n + 1) * sizeof(IrAttr));
	if (pos)
		memcpy(v, *attrs, (size_t)pos * sizeof(IrAttr));
	v[pos] = *a;
	v[pos].name = name;
	if (n - pos)
		memcpy(v + pos + 1, *attrs + pos, (size_t)(n - pos) * sizeof(IrAttr));
	*attrs = v;
	*nattrs = n + 1;
	return &v[pos];
}

void ir_set_attr_int(IrCtx *ctx, int *nattrs, IrAttr **attrs, const char *name, int64_t v)
{
	IrAttr a = {.name = name, .kind = ATTR_INT, .i = v};
	ir_set_attr(ctx, nattrs, attrs, &a);
}

void ir_op_set_int(IrCtx *ctx, IrOp *op, const char *name, int64_t v)
{
	IrAttr a = {.name = name, .kind = ATTR_INT, .i = v};
	ir_set_attr(ctx, &op->nattrs, &op->attrs, &a);
}

void ir_op_set_bool(IrCtx *ctx, IrOp *op, const char *name, bool v)
{
	IrAttr a = {.name = name, .kind = ATTR_BOOL, .i = v};
	ir_set_attr(ctx, &op->nattrs, &op->attrs, &a);
}

void ir_op_set_float(IrCtx *ctx, IrOp *op, const char *name, double v)
{
	IrAttr a = {.name = name, .kind = ATTR_FLOAT, .f = v};
	ir_set_attr(ctx, &op->nattrs, &op->attrs, &a);
}

void ir_op_set_str(IrCtx *ctx, IrOp *op, const char *name, const char *v)
{
	IrAttr a = {.name = name, .kind = ATTR_STR, .s = ir_intern(ctx, v)};
	ir_set_attr(ctx, &op->nattrs, &op->attrs, &a);
}

void ir_op_set_sym(IrCtx *ctx, IrOp *op, const char *name, const char *sym)
{
	IrAttr a = {.name = name, .kind = ATTR_SYM, .s = ir_intern(ctx, sym)};
	ir_set_attr(ctx, &op->nattrs, &op->attrs, &a);
}

void ir_op_copy_attrs(IrCtx *ctx, IrOp *dst, const IrOp *src)
{
	dst->nattrs = src->nattrs;
	dst->attrs = NULL;
	if (src->nattrs) {
		dst->attrs = ir_alloc(ctx, sizeof(IrAttr) * (size_t)src->nattrs);
		memcpy(dst->attrs, src->attrs, sizeof(IrAttr) * (size_t)src->nattrs);
	}
}

void ir_op_remove_attr(IrOp *op, const char *name)
{
	const IrAttr *a = ir_find_attr(op->nattrs, op->attrs, name);
	if (!a)
		return;
	int i = (int)(a - op->attrs);
	memmove(&op->attrs[i], &op->attrs[i + 1], sizeof *op->attrs * (size_t)(op->nattrs - i - 1));
	op->nattrs--;
}

void ir_op_set_ints(IrCtx *ctx, IrOp *op, const char *name, int n, const int64_t *v)
{
	IrAttr a = {.name = name, .kind = ATTR_INTS, .n = n};
	a.ints = ir_alloc(ctx, (size_t)(n ? n : 1) * sizeof(int64_t));
	if (n)
		memcpy(a.ints, v, (size_t)n * sizeof(int64_t));
	ir_set_attr(ctx, &op->nattrs, &op->attrs, &a);
}

const IrAttr *ir_find_attr(int nattrs, const IrAttr *attrs, const char *name)
{
	for (int i = 0; i < nattrs; i++)
		if (strcmp(attrs[i].name, name) == 0)
			return &attrs[i];
	return NULL;
}

const IrAttr *ir_op_attr(const IrOp *op, const char *name)
{
	return ir_find_attr(op->nattrs, op->attrs, name);
}

int64_t ir_op_int(const IrOp *op, const char *name, int64_t dflt)
{
	const IrAttr *a = ir_op_attr(op, name);
	if (a && (a->kind == ATTR_INT || a->kind == ATTR_BOOL))
		return a->i;
	return dflt;
}

double ir_op_float(const IrOp *op, const char *name, double dflt)
{
	const IrAttr *a = ir_op_attr(op, name);
	if (a && a->kind == ATTR_FLOAT)
		return a->f;
	if (a && (a->kind == ATTR_INT || a->kind == ATTR_BOOL))
		return (double)a->i;
	return dflt;
}

const char *ir_op_str(const IrOp *op, const char *name, const char *dflt)
{
	const IrAttr *a = ir_op_attr(op, name);
	if (a && (a->kind == ATTR_STR || a->kind == ATTR_SYM))
		return a->s;
	return dflt;
}

/* Whether the regions of op do nothing but compute (their control flow
 * included). */
static bool regions_pure(const IrOp *op)
{
	for (int r = 0; r < op->nregions; r++)
		for (const IrOp *o = op->regions[r]->first; o; o = o->next) {
			bool flow = o->opc == OP_IF || o->opc == OP_FOR || o->opc == OP_WHILE;
			if (!(ir_opinfo(o->opc)->flags & IR_TERM) && !ir_op_pure(o) && !(flow && regions_pure(o)))
				return false;
		}
	return true;
}

bool ir_op_pure(const IrOp *op)
{
	if (ir_opinfo(op->opc)->flags & IR_PURE)
		return true;
	if (op->opc == OP_MAP_ELEM)
		return regions_pure(op);
	return op->opc == OP_INLINE_ASM && ir_op_int(op, "pure", 0) != 0;
}

bool ir_op_effect_free(const IrOp *op)
{
	if (ir_op_pure(op))
		return true;
	bool flow = op->opc == OP_IF || op->opc == OP_FOR || op->opc == OP_WHILE;
	return flow && regions_pure(op);
}

int ir_asm_per_reg(const IrType *t, int64_t pack)
{
	int bits = ir_type_bits(t);
	int64_t k = bits > 0 && bits < 32 ? 32 / bits : 1;
	if (k > pack)
		k = pack;
	int64_t p = 1;
	while (p * 2 <= k)
		p *= 2;
	while (p > 1 && pack % p)
		p /= 2;
	return (int)p;
}

bool ir_asm_constraint_counts(const char *cons, int *nout, int *nin)
{
	*nout = *nin = 0;
	const char *s = cons;
	for (;;) {
		/* one entry: up to the next comma outside braces */
		char first = 0;
		int len = 0, depth = 0;
		bool indirect = false;
		for (; *s && (*s != ',' || depth); s++) {
			if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
				continue;
			if (*s == '{')
				depth++;
			else if (*s == '}' && depth)
				depth--;
			if (*s == '*')
				indirect = true;
			if (!len++)
				first = *s;
		}
		if (!len || indirect)
			return false;
		if (first == '=')
			++*nout;
		else if (first != '~')
			++*nin;
		if (!*s)
			return true;
		s++;
	}
}

/* ------------------------------------------------------------------------- */
/* Builder                                                                   */
/* ------------------------------------------------------------------------- */

void ir_builder_init(IrBuilder *b, IrCtx *ctx)
{
	memset(b, 0, sizeof *b);
	b->ctx = ctx;
}

void ir_builder_at_end(IrBuilder *b, IrBlock *blk)
{
	b->block = blk;
	b->before = NULL;
}

void ir_builder_before(IrBuilder *b, IrOp *op)
{
	b->block = op->parent;
	b->before = op;
}

IrOp *ir_build(IrBuilder *b, IrOpcode opc, int nops, IrValue *const *ops, int nres,
	       const IrType *const *restys, int nregions)
{
	IrOp *op = ir_op_new(b->ctx, opc, nops, ops, nres, restys, nregions, b->loc);
	ir_block_insert_before(b->block, b->before, op);
	return op;
}

IrValue *ir_build1(IrBuilder *b, IrOpcode opc, const IrType *rty, int nops, IrValue *const *ops)
{
	return &ir_build(b, opc, nops, ops, 1, &rty, 0)->res[0];
}

IrValue *ir_const_int(IrBuilder *b, const IrType *t, int64_t v)
{
	IrValue *r = ir_build1(b, OP_CONSTANT, t, 0, NULL);
	if (ir_is_float(ir_scalar(t)))
		ir_op_set_float(b->ctx, r->def, "value", (double)v);
	else
		ir_op_set_int(b->ctx, r->def, "value", v);
	return r;
}

IrValue *ir_const_float(IrBuilder *b, const IrType *t, double v)
{
	IrValue *r = ir_build1(b, OP_CONSTANT, t, 0, NULL);
	if (ir_is_float(ir_scalar(t)))
		ir_op_set_float(b->ctx, r->def, "value", v);
	else
		ir_op_set_int(b->ctx, r->def, "value", (int64_t)v);
	return r;
}

IrValue *ir_unary(IrBuilder *b, IrOpcode opc, IrValue *x)
{
	return ir_build1(b, opc, x->type, 1, &x);
}

IrValue *ir_binary(IrBuilder *b, IrOpcode opc, IrValue *x, IrValue *y)
{
	IrValue *ops[2] = {x, y};
	return ir_build1(b, opc, x->type, 2, ops);
}

IrValue *ir_cmp(IrBuilder *b, const char *pred, IrValue *x, IrValue *y)
{
	IrValue *ops[2] = {x, y};
	const IrType *rty = ir_type_like(b->ctx, x->type, ir_type(b->ctx, TY_I1));
	IrValue *r = ir_build1(b, OP_CMP, rty, 2, ops);
	ir_op_set_str(b->ctx, r->def, "pred", pred);
	return r;
}

IrValue *ir_select(IrBuilder *b, IrValue *c, IrValue *x, IrValue *y)
{
	IrValue *ops[3] = {c, x, y};
	return ir_build1(b, OP_SELECT, x->type, 3, ops);
}

IrValue *ir_cast(IrBuilder *b, IrOpcode opc, IrValue *x, const IrType *to)
{
	return ir_build1(b, opc, to, 1, &x);
}

IrValue *ir_splat(IrBuilder *b, IrValue *x, const IrType *block_ty)
{
	return ir_build1(b, OP_SPLAT, block_ty, 1, &x);
}

IrValue *ir_broadcast(IrBuilder *b, IrValue *x, const IrType *block_ty)
{
	return ir_build1(b, OP_BROADCAST, block_ty, 1, &x);
}

IrValue *ir_expand_dims(IrBuilder *b, IrValue *x, int axis)
{
	const IrType *t = x->type;
	int64_t shape[IR_MAX_RANK];
	int rank = 0;
	for (int i = 0; i < t->rank + 1; i++) {
		if (i == axis)
			shape[rank++] = 1;
		if (i < t->rank)
			shape[rank++] = t->shape[i];
	}
	const IrType *rty = ir_type_block(b->ctx, t->elem, t->rank + 1, shape, NULL);
	IrValue *r = ir_build1(b, OP_EXPAND_DIMS, rty, 1, &x);
	ir_op_set_int(b->ctx, r->def, "axis", axis);
	return r;
}

IrValue *ir_make_range(IrBuilder *b, int64_t start, int64_t end)
{
	int64_t n = end - start;
	const IrType *rty = ir_type_block(b->ctx, ir_type(b->ctx, TY_I32), 1, &n, NULL);
	IrValue *r = ir_build1(b, OP_MAKE_RANGE, rty, 0, NULL);
	ir_op_set_int(b->ctx, r->def, "start", start);
	ir_op_set_int(b->ctx, r->def, "end", end);
	return r;
}

IrValue *ir_program_id(IrBuilder *b, int axis)
{
	IrValue *r = ir_build1(b, OP_PROGRAM_ID, ir_type(b->ctx, TY_I32), 0, NULL);
	ir_op_set_int(b->ctx, r->def, "axis", axis);
	return r;
}

IrValue *ir_addptr(IrBuilder *b, IrValue *p, IrValue *off)
{
	IrValue *ops[2] = {p, off};
	return ir_build1(b, OP_ADDPTR, p->type, 2, ops);
}

IrValue *ir_load(IrBuilder *b, IrValue *p, IrValue *mask, IrValue *other)
{
	if (other && !mask)
		abort(); /* broken invariant: see ir.h */
	IrValue *ops[3] = {p, mask, other};
	int n = other ? 3 : mask ? 2 : 1;
	const IrType *rty = ir_type_like(b->ctx, p->type, ir_scalar(p->type)->elem);
	return ir_build1(b, OP_LOAD, rty, n, ops);
}

IrOp *ir_store(IrBuilder *b, IrValue *p, IrValue *v, IrValue *mask)
{
	IrValue *ops[3] = {p, v, mask};
	return ir_build(b, OP_STORE, mask ? 3 : 2, ops, 0, NULL, 0);
}

IrOp *ir_yield(IrBuilder *b, int n, IrValue *const *vals)
{
	return ir_build(b, OP_YIELD, n, vals, 0, NULL, 0);
}

IrOp *ir_return(IrBuilder *b, int n, IrValue *const *vals)
{
	return ir_build(b, OP_RETURN, n, vals, 0, NULL, 0);
}
