/* passes.c: small clean-up passes on the IR, the first passes of the compile
 * pipeline (jit/pipeline.c) on any TTIR.
 *
 * ir_dce removes pure ops (ir_op_pure: IR_PURE in ops.def, or an inline asm
 * marked pure) whose results are unused. It
 * numbers every value, counts uses once, then walks each block from its end:
 * an op's nested regions are cleaned before the op is judged, and removing an
 * op releases its operands (and those of the ops in its regions), so a whole
 * dead chain goes in one backward walk.
 *
 * ir_cse merges a pure op without regions into an earlier identical one:
 * same opcode, operands (either order for a commutative pair), attributes
 * and result types. It walks in program order with a scoped hash table: an
 * op is visible in its own block after its position and in the regions
 * nested there, never in sibling regions. Operands are rewritten through a
 * replacement table as ops are visited, which works because every use comes
 * after its definition in program order. ir_cse_scalars leaves block-valued
 * ops alone: a block value gets one layout later, so merging two copies that
 * feed uses wanting different layouts would cost a conversion (two
 * make_ranges feeding rows and columns, say).
 */
#include <string.h>

#include "ir.h"

/* ---- value numbering ------------------------------------------------------ */

static void number_block(IrBlock *b, int *next);

static void number_op(IrOp *op, int *next)
{
	for (int i = 0; i < op->nres; i++)
		op->res[i].id = (*next)++;
	for (int r = 0; r < op->nregions; r++)
		number_block(op->regions[r], next);
}

static void number_block(IrBlock *b, int *next)
{
	for (int i = 0; i < b->nargs; i++)
		b->args[i]->id = (*next)++;
	for (IrOp *op = b->first; op; op = op->next)
		number_op(op, next);
}

/* Numbers every value of f 0..n-1 (IrValue.id); returns n. */
static int number_values(IrFunc *f)
{
	int n = 0;
	number_block(f->body, &n);
	return n;
}

/* ---- dead code elimination -------------------------------------------------- */

static void count_uses_block(IrBlock *b, int *uses, int delta);

static void count_uses_op(IrOp *op, int *uses, int delta)
{
	for (int i = 0; i < op->nops; i++)
		uses[op->ops[i]->id] += delta;
	for (int r = 0; r < op->nregions; r++)
		count_uses_block(op->regions[r], uses, delta);
}

static void count_uses_block(IrBlock *b, int *uses, int delta)
{
	for (IrOp *op = b->first; op; op = op->next)
		count_uses_op(op, uses, delta);
}

static bool unused(const IrOp *op, const int *uses)
{
	for (int i = 0; i < op->nres; i++)
		if (uses[op->res[i].id])
			return false;
	return true;
}

static void dce_block(IrBlock *b, int *uses)
{
	IrOp *prev;
	for (IrOp *op = b->last; op; op = prev) {
		prev = op->prev;
		for (int r = 0; r < op->nregions; r++)
			dce_block(op->regions[r], uses);
		if (ir_op_pure(op) && unused(op, uses)) {
			count_uses_op(op, uses, -1);
			ir_op_unlink(op);
		}
	}
}

IrError *ir_dce(IrModule *m)
{
	for (int i = 0; i < m->nfuncs; i++) {
		IrFunc *f = m->funcs[i];
		int n = number_values(f);
		int *uses = ir_alloc(m->ctx, sizeof(int) * (size_t)(n + 1));
		count_uses_block(f->body, uses, 1);
		dce_block(f->body, uses);
	}
	return NULL;
}

/* ---- common subexpression elimination ------------------------------------------ */

typedef struct CseEntry {
	IrOp *op;
	unsigned hash;
	struct CseEntry *next; /* bucket chain, newest first */
} CseEntry;

typedef struct Cse {
	IrCtx *ctx;
	IrValue **repl; /* by value id: the value to use instead, or NULL */
	CseEntry **buckets;
	unsigned nbuckets; /* a power of two */
	CseEntry **undo;   /* entries in insertion order, for leaving a scope */
	int nundo, capundo;
	bool scalars_only; /* merge only ops whose results are all scalars */
} Cse;

static unsigned mix(unsigned h, uint64_t x)
{
	h ^= (unsigned)(x ^ (x >> 32));
	return h * 16777619u;
}

static bool attr_equal(const IrAttr *a, const IrAttr *b)
{
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case ATTR_INT:
	case ATTR_BOOL: return a->i == b->i;
	case ATTR_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
	case ATTR_STR:
	case ATTR_SYM: return strcmp(a->s, b->s) == 0;
	case ATTR_INTS:
		return a->n == b->n && (a->n == 0 || memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n) == 0);
	case ATTR_TYPE: return a->type == b->type;
	}
	return false;
}

static unsigned op_hash(const IrOp *op)
{
	unsigned h = mix(2166136261u, (uint64_t)op->opc);
	uint64_t opsum = 0; /* order-free, so commutative pairs hash alike */
	for (int i = 0; i < op->nops; i++)
		opsum += (uint64_t)op->ops[i]->id * 0x9e3779b97f4a7c15ull;
	h = mix(h, opsum);
	for (int i = 0; i < op->nres; i++)
		h = mix(h, (uint64_t)op->res[i].type->id);
	for (int i = 0; i < op->nattrs; i++) {
		const IrAttr *a = &op->attrs[i];
		uint64_t v = a->kind == ATTR_INT || a->kind == ATTR_BOOL ? (uint64_t)a->i : 0;
		if (a->kind == ATTR_FLOAT)
			memcpy(&v, &a->f, sizeof v);
		h ^= (unsigned)(uintptr_t)a->name * 31u + (unsigned)mix(0, v); /* order-free */
	}
	return h;
}

static bool same_op(const IrOp *a, const IrOp *b)
{
	if (a->opc != b->opc || a->nops != b->nops || a->nres != b->nres || a->nattrs != b->nattrs)
		return false;
	for (int i = 0; i < a->nres; i++)
		if (a->res[i].type != b->res[i].type)
			return false;
	bool same = true;
	for (int i = 0; i < a->nops && same; i++)
		same = a->ops[i] == b->ops[i];
	if (!same) {
		if (!(ir_opinfo(a->opc)->flags & IR_COMM) || a->nops != 2)
			return false;
		if (a->ops[0] != b->ops[1] || a->ops[1] != b->ops[0])
			return false;
	}
	for (int i = 0; i < a->nattrs; i++) {
		const IrAttr *o = ir_find_attr(b->nattrs, b->attrs, a->attrs[i].name);
		if (!o || !attr_equal(&a->attrs[i], o))
			return false;
	}
	return true;
}

static void cse_insert(Cse *c, IrOp *op, unsigned h)
{
	CseEntry *e = ir_alloc(c->ctx, sizeof *e);
	e->op = op;
	e->hash = h;
	unsigned k = h & (c->nbuckets - 1);
	e->next = c->buckets[k];
	c->buckets[k] = e;
	if (c->nundo == c->capundo) {
		int cap = c->capundo ? 2 * c->capundo : 256;
		CseEntry **nu = ir_alloc(c->ctx, sizeof(CseEntry *) * (size_t)cap);
		if (c->nundo)
			memcpy(nu, c->undo, sizeof(CseEntry *) * (size_t)c->nundo);
		c->undo = nu;
		c->capundo = cap;
	}
	c->undo[c->nundo++] = e;
}

/* Drops the entries inserted after mark (each is the head of its bucket). */
static void cse_leave(Cse *c, int mark)
{
	while (c->nundo > mark) {
		CseEntry *e = c->undo[--c->nundo];
		c->buckets[e->hash & (c->nbuckets - 1)] = e->next;
	}
}

static void cse_block(Cse *c, IrBlock *b)
{
	int mark = c->nundo;
	IrOp *next;
	for (IrOp *op = b->first; op; op = next) {
		next = op->next;
		for (int i = 0; i < op->nops; i++) {
			IrValue *r = c->repl[op->ops[i]->id];
			if (r)
				ir_op_set_operand(op, i, r);
		}
		for (int r = 0; r < op->nregions; r++)
			cse_block(c, op->regions[r]);
		if (!ir_op_pure(op) || op->nregions > 0 || op->nres == 0)
			continue;
		bool block = false;
		for (int i = 0; i < op->nres; i++)
			block = block || ir_is_block(op->res[i].type);
		if (block && c->scalars_only)
			continue;
		unsigned h = op_hash(op);
		IrOp *found = NULL;
		for (CseEntry *e = c->buckets[h & (c->nbuckets - 1)]; e && !found; e = e->next)
			if (e->hash == h && same_op(e->op, op))
				found = e->op;
		if (!found) {
			cse_insert(c, op, h);
			continue;
		}
		for (int i = 0; i < op->nres; i++)
			c->repl[op->res[i].id] = &found->res[i];
		ir_op_unlink(op);
	}
	cse_leave(c, mark);
}

static IrError *cse_module(IrModule *m, bool scalars_only)
{
	for (int i = 0; i < m->nfuncs; i++) {
		IrFunc *f = m->funcs[i];
		int n = number_values(f);
		Cse c = {0};
		c.ctx = m->ctx;
		c.scalars_only = scalars_only;
		c.repl = ir_alloc(m->ctx, sizeof(IrValue *) * (size_t)(n + 1));
		c.nbuckets = 1024;
		while (c.nbuckets < (unsigned)n)
			c.nbuckets *= 2;
		c.buckets = ir_alloc(m->ctx, sizeof(CseEntry *) * c.nbuckets);
		cse_block(&c, f->body);
	}
	return NULL;
}

IrError *ir_cse(IrModule *m)
{
	return cse_module(m, false);
}

IrError *ir_cse_scalars(IrModule *m)
{
	return cse_module(m, true);
}

/* ---- sum(x[:, :, None] * y[None, :, :], axis=1) -> dot(x, y, 0) ---------------- */

/* Whether a reduce's combiner is the sum of its two arguments (one float add,
 * yielded). */
static bool combiner_is_fadd(const IrOp *red)
{
	if (red->nops != 1 || red->nres != 1 || red->nregions != 1)
		return false;
	const IrBlock *r = red->regions[0];
	const IrOp *add = r->first;
	if (r->nargs != 2 || !add || add->opc != OP_ADD || add->nres != 1 || !ir_is_float(add->res[0].type))
		return false;
	const IrOp *y = add->next;
	if (!y || y->opc != OP_YIELD || y->next || y->nops != 1 || y->ops[0] != &add->res[0])
		return false;
	return (add->ops[0] == r->args[0] && add->ops[1] == r->args[1]) ||
	       (add->ops[0] == r->args[1] && add->ops[1] == r->args[0]);
}

/* The rank-2 x of v = broadcast(expand_dims(x, axis)), or NULL. */
static IrValue *broadcast_of_expanded(const IrValue *v, int axis)
{
	const IrOp *b = v->def;
	if (!b || b->opc != OP_BROADCAST)
		return NULL;
	const IrOp *e = b->ops[0]->def;
	if (!e || e->opc != OP_EXPAND_DIMS || ir_op_int(e, "axis", -1) != axis)
		return NULL;
	IrValue *x = e->ops[0];
	return ir_is_block(x->type) && x->type->rank == 2 ? x : NULL;
}

static void mul_reduce_block(IrFunc *f, IrBlock *b)
{
	for (IrOp *op = b->first, *next; op; op = next) {
		next = op->next;
		for (int r = 0; r < op->nregions; r++)
			mul_reduce_block(f, op->regions[r]);
		if (op->opc != OP_REDUCE || ir_op_int(op, "axis", -1) != 1 || !combiner_is_fadd(op))
			continue;
		const IrType *t = op->ops[0]->type;
		IrOp *mul = op->ops[0]->def;
		if (!ir_is_block(t) || t->rank != 3 || !mul || mul->opc != OP_MUL)
			continue;
		/* f32 products summed in f32: an ieee dot (FMAs). Triton takes f16
		 * too, but cannot compile the f16 dot it makes (its zero is an f32
		 * constant); left elementwise here */
		if (ir_scalar(t)->kind != TY_F32)
			continue;
		IrValue *x = NULL, *y = NULL;
		for (int i = 0; i < 2 && !x; i++) {
			x = broadcast_of_expanded(mul->ops[i], 2);
			y = broadcast_of_expanded(mul->ops[1 - i], 0);
			if (!y)
				x = NULL;
		}
		/* x: MxK, y: KxN; M and N of at least 16, as Triton asks, and K too
		 * (the dot lowerings' smallest operand) */
		if (!x || x->type->shape[0] != t->shape[0] || x->type->shape[1] != t->shape[1] ||
		    y->type->shape[0] != t->shape[1] || y->type->shape[1] != t->shape[2] || t->shape[0] < 16 ||
		    t->shape[1] < 16 || t->shape[2] < 16)
			continue;
		IrBuilder bld;
		ir_builder_init(&bld, f->module->ctx);
		ir_builder_before(&bld, op);
		IrValue *zero = ir_const_float(&bld, op->res[0].type, 0.0);
		IrValue *ops[3] = {x, y, zero};
		IrValue *d = ir_build1(&bld, OP_DOT, op->res[0].type, 3, ops);
		ir_op_set_str(f->module->ctx, d->def, "input_precision", "ieee");
		zero->def->loc = d->def->loc = op->loc;
		ir_replace_all_uses(f, &op->res[0], d);
		ir_op_unlink(op);
	}
}

IrError *ir_combine_mul_reduce(IrModule *m)
{
	for (int i = 0; i < m->nfuncs; i++)
		mul_reduce_block(m->funcs[i], m->funcs[i]->body);
	return NULL;
}

/* ---- x + dot(a, b, 0) -> dot(a, b, x) ------------------------------------------- */

bool ir_is_zero_const(const IrValue *v)
{
	const IrOp *d = v->def;
	if (d && d->opc == OP_SPLAT)
		d = d->ops[0]->def;
	if (!d || d->opc != OP_CONSTANT)
		return false;
	const IrAttr *a = ir_find_attr(d->nattrs, d->attrs, "value");
	return a && ((a->kind == ATTR_INT && a->i == 0) || (a->kind == ATTR_FLOAT && a->f == 0.0));
}

/* Whether x is available at op: a block argument or a value defined before
 * op, in op's block or in a block around it. */
static bool defined_before(const IrValue *x, const IrOp *op)
{
	if (!x->def)
		return true;
	for (const IrOp *o = op; o; o = o->parent && o->parent->parent_op ? o->parent->parent_op : NULL) {
		for (const IrOp *p = o->prev; p; p = p->prev)
			if (p == x->def)
				return true;
		if (!o->parent || !o->parent->parent_op)
			break;
	}
	return false;
}

static void combine_block(IrFunc *f, IrBlock *b, int *n)
{
	for (IrOp *op = b->first, *next; op; op = next) {
		next = op->next;
		for (int r = 0; r < op->nregions; r++)
			combine_block(f, op->regions[r], n);
		if (op->opc != OP_ADD || op->nres != 1 || !ir_is_block(op->res[0].type))
			continue;
		for (int i = 0; i < 2; i++) {
			IrValue *d = op->ops[i], *x = op->ops[1 - i];
			IrOp *dot = d->def;
			if (!dot || dot->opc != OP_DOT || dot->parent != b || !ir_is_zero_const(dot->ops[2]) ||
			    x->type != d->type || ir_count_uses(f, d) != 1 || !defined_before(x, dot))
				continue;
			ir_op_set_operand(dot, 2, x);
			ir_replace_all_uses(f, &op->res[0], d);
			ir_op_unlink(op);
			(*n)++;
			break;
		}
	}
}

IrError *ir_combine_dot_add(IrModule *m)
{
	for (int i = 0; i < m->nfuncs; i++) {
		int n = 0;
		combine_block(m->funcs[i], m->funcs[i]->body, &n);
	}
	return NULL;
}
