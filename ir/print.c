/* print.c: the textual form of the IR (see README.md, "Textual form").
 *
 * Everything is written into a small growable buffer (malloc'd scratch) and
 * copied into the ctx arena at the end. Before a function is printed its
 * values are numbered %0, %1, ... in program order (parameters, then each
 * op's results, then each region's arguments followed by its ops); the
 * numbers live in IrValue.id, which is scratch space for this purpose. The
 * output is canonical: parse.c reads it back and printing that gives the same
 * bytes.
 */
#include "ir.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct Buf {
	char *s;
	size_t n, cap;
} Buf;

static void buf_grow(Buf *b, size_t extra)
{
	if (b->n + extra + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->n + extra + 1)
		cap *= 2;
	char *s = realloc(b->s, cap);
	if (!s)
		abort();
	b->s = s;
	b->cap = cap;
}

static void put(Buf *b, const char *s)
{
	size_t n = strlen(s);
	buf_grow(b, n);
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = 0;
}

static void putch(Buf *b, char c)
{
	buf_grow(b, 1);
	b->s[b->n++] = c;
	b->s[b->n] = 0;
}

__attribute__((format(printf, 2, 3))) static void putf(Buf *b, const char *fmt, ...)
{
	va_list ap, ap2;
	va_start(ap, fmt);
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n > 0) {
		buf_grow(b, (size_t)n);
		vsnprintf(b->s + b->n, (size_t)n + 1, fmt, ap);
		b->n += (size_t)n;
	}
	va_end(ap);
}

static void indent(Buf *b, int level)
{
	for (int i = 0; i < level; i++)
		put(b, "  ");
}

/* Moves the buffer's text into the arena and frees the scratch. */
static char *buf_finish(Buf *b, IrCtx *ctx)
{
	char *s = ir_strndup(ctx, b->s ? b->s : "", b->n);
	free(b->s);
	b->s = NULL;
	b->n = b->cap = 0;
	return s;
}

/* ------------------------------------------------------------------------- */
/* Types, layouts, attributes                                                */
/* ------------------------------------------------------------------------- */

static void put_ints(Buf *b, int n, const int *v)
{
	putch(b, '[');
	for (int i = 0; i < n; i++)
		putf(b, i ? ", %d" : "%d", v[i]);
	putch(b, ']');
}

static void put_layout(Buf *b, const IrLayout *l)
{
	if (!l) {
		put(b, "#<null>");
		return;
	}
	switch (l->kind) {
	case LAYOUT_BLOCKED:
		put(b, "#blocked<spt = ");
		put_ints(b, l->rank, l->size_per_thread);
		put(b, ", tpw = ");
		put_ints(b, l->rank, l->threads_per_warp);
		put(b, ", wpc = ");
		put_ints(b, l->rank, l->warps_per_cta);
		put(b, ", order = ");
		put_ints(b, l->rank, l->order);
		put(b, ">");
		return;
	case LAYOUT_SLICE:
		putf(b, "#slice<dim = %d, parent = ", l->dim);
		put_layout(b, l->parent);
		put(b, ">");
		return;
	case LAYOUT_SHARED:
		putf(b, "#shared<vec = %d, per_phase = %d, max_phase = %d, order = ", l->vec,
		     l->per_phase, l->max_phase);
		put_ints(b, l->rank, l->order);
		put(b, ">");
		return;
	case LAYOUT_MMA: {
		/* instr_shape has up to 3 entries; trailing zeros are not printed */
		int ninstr = 3;
		while (ninstr > 0 && l->instr_shape[ninstr - 1] == 0)
			ninstr--;
		putf(b, "#mma<version = [%d, %d], wpc = ", l->version_major, l->version_minor);
		put_ints(b, l->rank, l->warps_per_cta);
		put(b, ", instr = ");
		put_ints(b, ninstr, l->instr_shape);
		put(b, ">");
		return;
	}
	case LAYOUT_DOT_OP:
		putf(b, "#dot_op<opidx = %d, parent = ", l->opidx);
		put_layout(b, l->parent);
		putf(b, ", k_width = %d>", l->k_width);
		return;
	}
	putf(b, "#<bad layout kind %d>", (int)l->kind);
}

static void put_type(Buf *b, const IrType *t)
{
	if (!t) {
		put(b, "<null>");
		return;
	}
	switch (t->kind) {
	case TY_PTR:
		put(b, "ptr<");
		put_type(b, t->elem);
		if (t->addrspace != 1)
			putf(b, ", %d", t->addrspace);
		if (t->is_const)
			put(b, ", const");
		put(b, ">");
		return;
	case TY_BLOCK:
		put(b, "block<");
		for (int i = 0; i < t->rank; i++)
			putf(b, "%" PRId64 "x", t->shape[i]);
		put_type(b, t->elem);
		if (t->layout) {
			put(b, ", ");
			put_layout(b, t->layout);
		}
		put(b, ">");
		return;
	default: {
		const char *name = ir_kind_name(t->kind);
		if (name)
			put(b, name);
		else
			putf(b, "<bad type kind %d>", (int)t->kind);
		return;
	}
	}
}

/* A quoted string: \" \\ \n \t, other bytes outside printable ASCII as \xHH. */
static void put_str(Buf *b, const char *s)
{
	putch(b, '"');
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		switch (*p) {
		case '"': put(b, "\\\""); break;
		case '\\': put(b, "\\\\"); break;
		case '\n': put(b, "\\n"); break;
		case '\t': put(b, "\\t"); break;
		default:
			if (*p < 0x20 || *p >= 0x7f)
				putf(b, "\\x%02x", *p);
			else
				putch(b, (char)*p);
		}
	}
	putch(b, '"');
}

/* %.17g, plus ".0" when that reads as an integer. */
static void put_float(Buf *b, double f)
{
	char tmp[64];
	snprintf(tmp, sizeof tmp, "%.17g", f);
	put(b, tmp);
	if (!strpbrk(tmp, ".e") && !strstr(tmp, "inf") && !strstr(tmp, "nan"))
		put(b, ".0");
}

static void put_attr_value(Buf *b, const IrAttr *a)
{
	switch (a->kind) {
	case ATTR_INT:
		putf(b, "%" PRId64, a->i);
		return;
	case ATTR_FLOAT:
		put_float(b, a->f);
		return;
	case ATTR_BOOL:
		put(b, a->i ? "true" : "false");
		return;
	case ATTR_STR:
		put_str(b, a->s);
		return;
	case ATTR_INTS:
		putch(b, '[');
		for (int i = 0; i < a->n; i++)
			putf(b, i ? ", %" PRId64 : "%" PRId64, a->ints[i]);
		putch(b, ']');
		return;
	case ATTR_TYPE:
		put(b, "type(");
		put_type(b, a->type);
		put(b, ")");
		return;
	case ATTR_SYM:
		putf(b, "@%s", a->s ? a->s : "");
		return;
	}
	putf(b, "<bad attr kind %d>", (int)a->kind);
}

/* " {a = 1, b = 2}" or nothing. */
static void put_attrs(Buf *b, int n, const IrAttr *attrs)
{
	if (n == 0)
		return;
	put(b, " {");
	for (int i = 0; i < n; i++) {
		if (i)
			put(b, ", ");
		putf(b, "%s = ", attrs[i].name);
		put_attr_value(b, &attrs[i]);
	}
	put(b, "}");
}

/* ------------------------------------------------------------------------- */
/* Values, ops, functions                                                    */
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

static void number_func(const IrFunc *f)
{
	int next = 0;
	for (int i = 0; i < f->body->nargs; i++)
		f->body->args[i]->id = next++;
	number_block(f->body, next);
}

static void put_value(Buf *b, const IrValue *v)
{
	if (v)
		putf(b, "%%%d", v->id);
	else
		put(b, "%<null>");
}

static bool same_file(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return a == b || strcmp(a, b) == 0;
}

/* " loc(L:C)" in the function's file (or when the op's file is unknown),
 * " loc("f":L:C)" in another, nothing when the line is unknown. */
static void put_loc(Buf *b, IrLoc loc, const char *func_file)
{
	if (loc.line == 0)
		return;
	if (!loc.file || same_file(loc.file, func_file)) {
		putf(b, " loc(%d:%d)", loc.line, loc.col);
		return;
	}
	put(b, " loc(");
	put_str(b, loc.file);
	putf(b, ":%d:%d)", loc.line, loc.col);
}

static void put_block_ops(Buf *b, const IrBlock *blk, int level, const char *file);

static void put_op(Buf *b, const IrOp *op, int level, const char *file)
{
	indent(b, level);
	for (int i = 0; i < op->nres; i++) {
		if (i)
			put(b, ", ");
		put_value(b, &op->res[i]);
	}
	if (op->nres)
		put(b, " = ");
	if ((int)op->opc >= 0 && op->opc < OP_COUNT_)
		put(b, ir_opinfo(op->opc)->name);
	else
		putf(b, "<bad opcode %d>", (int)op->opc);
	for (int i = 0; i < op->nops; i++) {
		put(b, i ? ", " : " ");
		put_value(b, op->ops[i]);
	}
	put_attrs(b, op->nattrs, op->attrs);
	for (int i = 0; i < op->nres; i++) {
		put(b, i ? ", " : " : ");
		put_type(b, op->res[i].type);
	}
	for (int r = 0; r < op->nregions; r++) {
		const IrBlock *rb = op->regions[r];
		put(b, " {\n");
		if (rb->nargs) {
			indent(b, level);
			put(b, "^(");
			for (int i = 0; i < rb->nargs; i++) {
				if (i)
					put(b, ", ");
				put_value(b, rb->args[i]);
				put(b, ": ");
				put_type(b, rb->args[i]->type);
			}
			put(b, "):\n");
		}
		put_block_ops(b, rb, level + 1, file);
		indent(b, level);
		put(b, "}");
	}
	put_loc(b, op->loc, file);
	put(b, "\n");
}

static void put_block_ops(Buf *b, const IrBlock *blk, int level, const char *file)
{
	for (const IrOp *op = blk->first; op; op = op->next)
		put_op(b, op, level, file);
}

static void put_func(Buf *b, const IrFunc *f)
{
	number_func(f);
	put(b, "func ");
	if (f->is_kernel)
		put(b, "kernel ");
	if (f->noinline)
		put(b, "noinline ");
	putf(b, "@%s(", f->name ? f->name : "");
	for (int i = 0; i < f->body->nargs; i++) {
		const IrValue *v = f->body->args[i];
		if (i)
			put(b, ", ");
		put_value(b, v);
		put(b, ": ");
		put_type(b, v->type);
		if (f->params)
			put_attrs(b, f->params[i].nattrs, f->params[i].attrs);
	}
	put(b, ")");
	if (f->nres) {
		put(b, " -> (");
		for (int i = 0; i < f->nres; i++) {
			if (i)
				put(b, ", ");
			put_type(b, f->restys[i]);
		}
		put(b, ")");
	}
	put_attrs(b, f->nattrs, f->attrs);
	if (f->loc.line) {
		/* the header names its file (the ops' loc(L:C) refer to it) */
		put(b, " loc(");
		if (f->loc.file) {
			put_str(b, f->loc.file);
			put(b, ":");
		}
		putf(b, "%d:%d)", f->loc.line, f->loc.col);
	}
	put(b, " {\n");
	put_block_ops(b, f->body, 1, f->loc.file);
	put(b, "}\n");
}

/* ------------------------------------------------------------------------- */
/* Entry points                                                              */
/* ------------------------------------------------------------------------- */

char *ir_print_module(const IrModule *m)
{
	Buf b = {0};
	bool first = true;
	if (m->nattrs) {
		put(&b, "module");
		put_attrs(&b, m->nattrs, m->attrs);
		put(&b, "\n");
		first = false;
	}
	for (int i = 0; i < m->nfuncs; i++) {
		if (!first)
			put(&b, "\n");
		put_func(&b, m->funcs[i]);
		first = false;
	}
	return buf_finish(&b, m->ctx);
}

char *ir_print_func(const IrFunc *f)
{
	Buf b = {0};
	put_func(&b, f);
	return buf_finish(&b, f->module->ctx);
}

char *ir_print_type(IrCtx *ctx, const IrType *t)
{
	Buf b = {0};
	put_type(&b, t);
	return buf_finish(&b, ctx);
}

char *ir_print_layout(IrCtx *ctx, const IrLayout *l)
{
	Buf b = {0};
	put_layout(&b, l);
	return buf_finish(&b, ctx);
}

void ir_dump_op(FILE *out, const IrOp *op)
{
	Buf b = {0};
	const IrFunc *f = op->parent ? op->parent->func : NULL;
	if (f)
		number_func(f);
	else
		number_op(op, 0);
	put_op(&b, op, 0, f ? f->loc.file : NULL);
	fputs(b.s ? b.s : "", out);
	free(b.s);
}
