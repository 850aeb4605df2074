/* parse.c: reads the textual form (README.md, "Textual form") back into a
 * module, through ir.c's API.
 *
 * A hand-written lexer produces one token at a time from a position in the
 * text; the parser is recursive descent over it, with at most three tokens of
 * lookahead (to tell an attribute dictionary `{name = ...` from a region `{`).
 * Newlines matter in two places only: an op's operands, attributes, types,
 * regions and location start on the op's line, and an op ends at the end of
 * its line (or at a `}`). Block dimensions (`16x64xf32`) are scanned by
 * characters, since `x` separates numbers from the element type.
 *
 * Values are resolved through a scope table (name -> value) with an undo log:
 * a region pushes a mark, and on `}` the names defined inside it are hidden
 * again. An op's results are defined after its regions, so they are not
 * visible inside them. Errors are values: the first one is kept (IR_ERR_PARSE
 * at the offending token) and everything unwinds. All memory is in the ctx
 * arena except the scope table, which is freed before returning.
 */
#include "ir.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REGION_DEPTH 256
#define MAX_TYPE_DEPTH 64

/* ------------------------------------------------------------------------- */
/* Lexer                                                                     */
/* ------------------------------------------------------------------------- */

typedef enum TokKind {
	TK_EOF,
	TK_ERROR,
	TK_IDENT,  /* func, add, i32, loc, ... */
	TK_VALUE,  /* %name */
	TK_SYM,    /* @name */
	TK_HASH,   /* #blocked */
	TK_INT,    /* 16, -3 */
	TK_FLOAT,  /* 1.5, 1e-05, -inf, -nan */
	TK_STRING, /* "..." (escapes checked, not decoded) */
	TK_LPAREN,
	TK_RPAREN,
	TK_LBRACE,
	TK_RBRACE,
	TK_LBRACK,
	TK_RBRACK,
	TK_LT,
	TK_GT,
	TK_COMMA,
	TK_COLON,
	TK_EQ,
	TK_CARET,
	TK_ARROW,
} TokKind;

typedef struct Tok {
	TokKind kind;
	const char *start; /* spelling in the text */
	int len;
	int line, col;
	bool nl;          /* a newline separates it from the previous token */
	const char *msg;  /* TK_ERROR: what is wrong (NULL: unexpected character) */
} Tok;

typedef struct Lex {
	const char *pos;
	int line, col;
} Lex;

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static bool is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_value_char(int c)
{
	return is_alpha(c) || is_digit(c) || c == '.';
}

static bool is_sym_char(int c)
{
	return is_value_char(c) || c == '$';
}

static bool is_hex(int c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static void lx_step(Lex *lx)
{
	if (*lx->pos == '\n') {
		lx->line++;
		lx->col = 1;
	} else {
		lx->col++;
	}
	lx->pos++;
}

static Tok tok_error(Tok t, Lex *lx, const char *msg)
{
	t.kind = TK_ERROR;
	t.msg = msg;
	t.len = (int)(lx->pos - t.start);
	return t;
}

/* Checks a string literal's escapes; lx is on the opening quote. */
static Tok lex_string(Tok t, Lex *lx)
{
	lx_step(lx);
	for (;;) {
		char c = *lx->pos;
		if (c == 0 || c == '\n')
			return tok_error(t, lx, "unterminated string");
		if (c == '"')
			break;
		if (c == '\\') {
			lx_step(lx);
			c = *lx->pos;
			if (c == 'x') {
				lx_step(lx);
				if (!is_hex(lx->pos[0]) || !is_hex(lx->pos[1]))
					return tok_error(t, lx, "expected two hex digits after '\\x'");
				if (lx->pos[0] == '0' && lx->pos[1] == '0')
					return tok_error(t, lx, "'\\x00' is not allowed in a string");
				lx_step(lx);
			} else if (c != '"' && c != '\\' && c != 'n' && c != 't') {
				return tok_error(t, lx, "unknown escape in string");
			}
		}
		lx_step(lx);
	}
	lx_step(lx);
	t.kind = TK_STRING;
	t.len = (int)(lx->pos - t.start);
	return t;
}

/* [-]digits[.digits][e[+-]digits] */
static Tok lex_number(Tok t, Lex *lx)
{
	bool is_float = false;
	if (*lx->pos == '-')
		lx_step(lx);
	while (is_digit(*lx->pos))
		lx_step(lx);
	if (*lx->pos == '.' && is_digit(lx->pos[1])) {
		is_float = true;
		lx_step(lx);
		while (is_digit(*lx->pos))
			lx_step(lx);
	}
	if (*lx->pos == 'e' || *lx->pos == 'E') {
		const char *q = lx->pos + 1;
		if (*q == '+' || *q == '-')
			q++;
		if (is_digit(*q)) {
			is_float = true;
			while (lx->pos < q)
				lx_step(lx);
			while (is_digit(*lx->pos))
				lx_step(lx);
		}
	}
	t.kind = is_float ? TK_FLOAT : TK_INT;
	t.len = (int)(lx->pos - t.start);
	return t;
}

/* The next token from *lx; advances *lx past it. No side effects otherwise:
 * errors come back as TK_ERROR tokens. */
static Tok lex(Lex *lx)
{
	Tok t = {0};
	for (;;) {
		char c = *lx->pos;
		if (c == '\n') {
			t.nl = true;
			lx_step(lx);
		} else if (c == ' ' || c == '\t' || c == '\r') {
			lx_step(lx);
		} else if (c == '/' && lx->pos[1] == '/') {
			while (*lx->pos && *lx->pos != '\n')
				lx_step(lx);
		} else {
			break;
		}
	}
	t.start = lx->pos;
	t.line = lx->line;
	t.col = lx->col;
	t.len = 1;
	char c = *lx->pos;
	if (c == 0) {
		t.kind = TK_EOF;
		t.len = 0;
		return t;
	}
	if (c == '%' || c == '@') {
		lx_step(lx);
		bool (*ok)(int) = c == '%' ? is_value_char : is_sym_char;
		if (!ok(*lx->pos))
			return tok_error(t, lx, c == '%' ? "expected a value name after '%'"
							 : "expected a function name after '@'");
		while (ok(*lx->pos))
			lx_step(lx);
		t.kind = c == '%' ? TK_VALUE : TK_SYM;
		t.len = (int)(lx->pos - t.start);
		return t;
	}
	if (c == '#') {
		lx_step(lx);
		if (!is_alpha(*lx->pos))
			return tok_error(t, lx, "expected a layout name after '#'");
		while (is_alpha(*lx->pos) || is_digit(*lx->pos))
			lx_step(lx);
		t.kind = TK_HASH;
		t.len = (int)(lx->pos - t.start);
		return t;
	}
	if (c == '"')
		return lex_string(t, lx);
	if (is_digit(c) || (c == '-' && is_digit(lx->pos[1])))
		return lex_number(t, lx);
	if (c == '-' && lx->pos[1] == '>') {
		lx_step(lx);
		lx_step(lx);
		t.kind = TK_ARROW;
		t.len = 2;
		return t;
	}
	if (c == '-' && (!strncmp(lx->pos + 1, "inf", 3) || !strncmp(lx->pos + 1, "nan", 3)) &&
	    !is_alpha(lx->pos[4]) && !is_digit(lx->pos[4])) {
		for (int i = 0; i < 4; i++)
			lx_step(lx);
		t.kind = TK_FLOAT;
		t.len = 4;
		return t;
	}
	if (is_alpha(c)) {
		while (is_alpha(*lx->pos) || is_digit(*lx->pos))
			lx_step(lx);
		t.kind = TK_IDENT;
		t.len = (int)(lx->pos - t.start);
		return t;
	}
	static const char punct[] = "(){}[]<>,:=^";
	static const TokKind kinds[] = {TK_LPAREN, TK_RPAREN, TK_LBRACE, TK_RBRACE,
					TK_LBRACK, TK_RBRACK, TK_LT,     TK_GT,
					TK_COMMA,  TK_COLON,  TK_EQ,     TK_CARET};
	const char *hit = strchr(punct, c);
	if (hit) {
		lx_step(lx);
		t.kind = kinds[hit - punct];
		return t;
	}
	lx_step(lx);
	return tok_error(t, lx, NULL);
}

/* ------------------------------------------------------------------------- */
/* Parser state, errors, token helpers                                       */
/* ------------------------------------------------------------------------- */

typedef struct ScopeEntry {
	const char *s; /* name spelling in the text (with the '%') */
	int len;
	IrValue *v;    /* NULL: not visible now */
} ScopeEntry;

typedef struct Parser {
	IrCtx *ctx;
	const char *file; /* interned; names the text in errors */
	Lex lx;           /* just after tok */
	Tok tok;          /* current token */
	IrError *err;     /* first error */
	int depth;        /* region nesting */
	int tdepth;       /* type / layout nesting */
	IrModule *m;
	const char *func_file; /* file of the function being parsed */
	/* scope: open hash of names, plus the names defined, in order */
	ScopeEntry *tab;
	int ntab, captab;
	ScopeEntry *undo; /* only s/len used */
	int nundo, capundo;
} Parser;

__attribute__((format(printf, 3, 4))) static bool perr(Parser *p, const Tok *t, const char *fmt,
						       ...)
{
	if (p->err)
		return false;
	va_list ap;
	va_start(ap, fmt);
	char *msg = ir_vfmt(p->ctx, fmt, ap);
	va_end(ap);
	IrLoc loc = {p->file, t->line, t->col};
	p->err = ir_error(p->ctx, IR_ERR_PARSE, loc, "%s", msg);
	return false;
}

/* "'spelling'" or "end of input", for messages. */
static const char *describe(Parser *p, const Tok *t)
{
	if (t->kind == TK_EOF)
		return "end of input";
	if (t->len > 40)
		return ir_fmt(p->ctx, "'%.37s...'", t->start);
	return ir_fmt(p->ctx, "'%.*s'", t->len, t->start);
}

static const char *kind_str(TokKind k)
{
	switch (k) {
	case TK_EOF: return "end of input";
	case TK_ERROR: return "a valid token";
	case TK_IDENT: return "identifier";
	case TK_VALUE: return "value name";
	case TK_SYM: return "function name";
	case TK_HASH: return "layout";
	case TK_INT: return "integer";
	case TK_FLOAT: return "float";
	case TK_STRING: return "string";
	case TK_LPAREN: return "'('";
	case TK_RPAREN: return "')'";
	case TK_LBRACE: return "'{'";
	case TK_RBRACE: return "'}'";
	case TK_LBRACK: return "'['";
	case TK_RBRACK: return "']'";
	case TK_LT: return "'<'";
	case TK_GT: return "'>'";
	case TK_COMMA: return "','";
	case TK_COLON: return "':'";
	case TK_EQ: return "'='";
	case TK_CARET: return "'^'";
	case TK_ARROW: return "'->'";
	}
	return "?";
}

static void advance(Parser *p)
{
	p->tok = lex(&p->lx);
	if (p->tok.kind != TK_ERROR)
		return;
	if (p->tok.msg) {
		perr(p, &p->tok, "%s", p->tok.msg);
	} else {
		unsigned char c = (unsigned char)p->tok.start[0];
		if (c > 0x20 && c < 0x7f)
			perr(p, &p->tok, "unexpected character '%c'", c);
		else
			perr(p, &p->tok, "unexpected byte 0x%02x", c);
	}
}

/* Restarts the lexer at pos (line/col) and reads the token there. */
static void relex(Parser *p, const char *pos, int line, int col)
{
	p->lx.pos = pos;
	p->lx.line = line;
	p->lx.col = col;
	advance(p);
}

static bool at(Parser *p, TokKind k)
{
	return p->tok.kind == k;
}

static bool tok_is(const Tok *t, const char *w)
{
	return t->kind == TK_IDENT && (size_t)t->len == strlen(w) &&
	       !strncmp(t->start, w, (size_t)t->len);
}

static bool at_word(Parser *p, const char *w)
{
	return tok_is(&p->tok, w);
}

static bool accept(Parser *p, TokKind k)
{
	if (!at(p, k))
		return false;
	advance(p);
	return true;
}

/* Consumes a token of kind k, or fails with "expected K <ctx>, found T". */
static bool expect(Parser *p, TokKind k, const char *ctx)
{
	if (p->err)
		return false;
	if (at(p, k)) {
		advance(p);
		return !p->err;
	}
	return perr(p, &p->tok, "expected %s%s%s, found %s", kind_str(k), ctx ? " " : "",
		    ctx ? ctx : "", describe(p, &p->tok));
}

/* Consumes the identifier w ("expected 'w' <ctx>, found T"). */
static bool expect_word(Parser *p, const char *w, const char *ctx)
{
	if (p->err)
		return false;
	if (at_word(p, w)) {
		advance(p);
		return !p->err;
	}
	return perr(p, &p->tok, "expected '%s' %s, found %s", w, ctx, describe(p, &p->tok));
}

/* Lookahead: the token after the current one, and the one after that. */
static void peek2(Parser *p, Tok *t1, Tok *t2)
{
	Lex lx = p->lx;
	*t1 = lex(&lx);
	*t2 = lex(&lx);
}

/* On '{': does an attribute dictionary (`{name =`) start here? */
static bool looks_like_attrs(Parser *p)
{
	Tok t1, t2;
	peek2(p, &t1, &t2);
	return t1.kind == TK_IDENT && t2.kind == TK_EQ;
}

/* A growable array of pointers in the arena (parser scratch). */
typedef struct Vec {
	void **v;
	int n, cap;
} Vec;

static void vec_push(IrCtx *ctx, Vec *v, void *x)
{
	if (v->n == v->cap) {
		int cap = v->cap ? 2 * v->cap : 8;
		void **nv = ir_alloc(ctx, (size_t)cap * sizeof(void *));
		if (v->n)
			memcpy(nv, v->v, (size_t)v->n * sizeof(void *));
		v->v = nv;
		v->cap = cap;
	}
	v->v[v->n++] = x;
}

/* ------------------------------------------------------------------------- */
/* Scope: value names                                                        */
/* ------------------------------------------------------------------------- */

static unsigned name_hash(const char *s, int len)
{
	unsigned h = 2166136261u;
	for (int i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static ScopeEntry *scope_slot(Parser *p, const char *s, int len)
{
	unsigned mask = (unsigned)p->captab - 1;
	for (unsigned j = name_hash(s, len) & mask;; j = (j + 1) & mask) {
		ScopeEntry *e = &p->tab[j];
		if (!e->s || (e->len == len && !memcmp(e->s, s, (size_t)len)))
			return e;
	}
}

static void scope_grow(Parser *p)
{
	ScopeEntry *old = p->tab;
	int oldcap = p->captab;
	p->captab = oldcap ? 2 * oldcap : 256;
	p->tab = calloc((size_t)p->captab, sizeof(ScopeEntry));
	if (!p->tab)
		abort();
	for (int i = 0; i < oldcap; i++)
		if (old[i].s)
			*scope_slot(p, old[i].s, old[i].len) = old[i];
	free(old);
}

static IrValue *scope_lookup(Parser *p, const Tok *t)
{
	if (!p->captab)
		return NULL;
	return scope_slot(p, t->start, t->len)->v;
}

/* Makes the name of t refer to v until the enclosing region closes. */
static bool scope_define(Parser *p, const Tok *t, IrValue *v)
{
	if (scope_lookup(p, t))
		return perr(p, t, "redefinition of %.*s", t->len, t->start);
	if (2 * (p->ntab + 1) > p->captab)
		scope_grow(p);
	ScopeEntry *e = scope_slot(p, t->start, t->len);
	if (!e->s) {
		e->s = t->start;
		e->len = t->len;
		p->ntab++;
	}
	e->v = v;
	if (p->nundo == p->capundo) {
		p->capundo = p->capundo ? 2 * p->capundo : 256;
		ScopeEntry *u = realloc(p->undo, (size_t)p->capundo * sizeof(ScopeEntry));
		if (!u)
			abort();
		p->undo = u;
	}
	p->undo[p->nundo++] = *e;
	return true;
}

/* Hides every name defined since mark (a value of p->nundo). */
static void scope_pop(Parser *p, int mark)
{
	while (p->nundo > mark) {
		ScopeEntry *u = &p->undo[--p->nundo];
		scope_slot(p, u->s, u->len)->v = NULL;
	}
}

static void scope_reset(Parser *p)
{
	if (p->captab)
		memset(p->tab, 0, (size_t)p->captab * sizeof(ScopeEntry));
	p->ntab = 0;
	p->nundo = 0;
}

/* ------------------------------------------------------------------------- */
/* Numbers, strings, locations                                               */
/* ------------------------------------------------------------------------- */

static bool parse_int64(Parser *p, int64_t *out)
{
	if (!at(p, TK_INT))
		return perr(p, &p->tok, "expected integer, found %s", describe(p, &p->tok));
	char buf[32];
	if (p->tok.len >= (int)sizeof buf)
		return perr(p, &p->tok, "integer %s out of range", describe(p, &p->tok));
	memcpy(buf, p->tok.start, (size_t)p->tok.len);
	buf[p->tok.len] = 0;
	errno = 0;
	long long v = strtoll(buf, NULL, 10);
	if (errno == ERANGE)
		return perr(p, &p->tok, "integer %s out of range", describe(p, &p->tok));
	*out = v;
	advance(p);
	return !p->err;
}

/* An integer in [lo, hi]. */
static bool parse_int(Parser *p, int *out, int64_t lo, int64_t hi)
{
	Tok t = p->tok;
	int64_t v;
	if (!parse_int64(p, &v))
		return false;
	if (v < lo || v > hi)
		return perr(p, &t, "integer %" PRId64 " out of range [%" PRId64 ", %" PRId64 "]", v,
			    lo, hi);
	*out = (int)v;
	return true;
}

static bool parse_float(Parser *p, double *out)
{
	char buf[64];
	if (p->tok.len >= (int)sizeof buf)
		return perr(p, &p->tok, "float %s too long", describe(p, &p->tok));
	memcpy(buf, p->tok.start, (size_t)p->tok.len);
	buf[p->tok.len] = 0;
	*out = strtod(buf, NULL);
	advance(p);
	return !p->err;
}

/* Decodes the current (already checked) string token into the arena. */
static char *decode_string(Parser *p)
{
	const char *s = p->tok.start + 1, *end = p->tok.start + p->tok.len - 1;
	char *out = ir_alloc(p->ctx, (size_t)(end - s) + 1), *o = out;
	while (s < end) {
		if (*s != '\\') {
			*o++ = *s++;
			continue;
		}
		s++;
		switch (*s++) {
		case 'n': *o++ = '\n'; break;
		case 't': *o++ = '\t'; break;
		case 'x': {
			char hex[3] = {s[0], s[1], 0};
			*o++ = (char)strtol(hex, NULL, 16);
			s += 2;
			break;
		}
		default: *o++ = s[-1]; break; /* \" \\ */
		}
	}
	*o = 0;
	advance(p);
	return out;
}

/* loc(L:C) in the function's file, or loc("file":L:C). */
static bool parse_loc(Parser *p, IrLoc *loc)
{
	advance(p); /* loc */
	if (!expect(p, TK_LPAREN, "after 'loc'"))
		return false;
	loc->file = p->func_file;
	if (at(p, TK_STRING)) {
		loc->file = ir_intern(p->ctx, decode_string(p));
		if (!expect(p, TK_COLON, "after file name"))
			return false;
	}
	if (!parse_int(p, &loc->line, 0, INT_MAX) || !expect(p, TK_COLON, "after line") ||
	    !parse_int(p, &loc->col, 0, INT_MAX))
		return false;
	return expect(p, TK_RPAREN, "to close 'loc('");
}

/* ------------------------------------------------------------------------- */
/* Types and layouts                                                         */
/* ------------------------------------------------------------------------- */

static const IrType *parse_type(Parser *p);

/* [i, i, ...] of at most max ints (ints in [lo, hi]); returns the count or -1. */
static int parse_int_list(Parser *p, int *v, int max, int64_t lo, int64_t hi)
{
	if (!expect(p, TK_LBRACK, "to start a list"))
		return -1;
	int n = 0;
	if (accept(p, TK_RBRACK))
		return 0;
	for (;;) {
		if (n == max) {
			perr(p, &p->tok, "list longer than %d", max);
			return -1;
		}
		if (!parse_int(p, &v[n++], lo, hi))
			return -1;
		if (accept(p, TK_COMMA))
			continue;
		if (!expect(p, TK_RBRACK, "or ',' in list"))
			return -1;
		return n;
	}
}

/* `name = [..]` inside a layout: the list's length, or -1. */
static int layout_list(Parser *p, const char *name, int *v, int max)
{
	if (!expect_word(p, name, "in layout") || !expect(p, TK_EQ, "in layout"))
		return -1;
	return parse_int_list(p, v, max, INT_MIN, INT_MAX);
}

static bool layout_int(Parser *p, const char *name, int *v)
{
	if (!expect_word(p, name, "in layout") || !expect(p, TK_EQ, "in layout"))
		return false;
	return parse_int(p, v, INT_MIN, INT_MAX);
}

static bool layout_comma(Parser *p)
{
	return expect(p, TK_COMMA, "in layout");
}

static const IrLayout *parse_layout(Parser *p);

static const IrLayout *parse_layout_body(Parser *p, const Tok *kw)
{
	IrLayout l = {0};
	int n[4];
#define W(s) ((size_t)kw->len == strlen(s) && !strncmp(kw->start, s, (size_t)kw->len))
	if (W("#blocked")) {
		l.kind = LAYOUT_BLOCKED;
		if ((n[0] = layout_list(p, "spt", l.size_per_thread, IR_MAX_RANK)) < 0 ||
		    !layout_comma(p) ||
		    (n[1] = layout_list(p, "tpw", l.threads_per_warp, IR_MAX_RANK)) < 0 ||
		    !layout_comma(p) ||
		    (n[2] = layout_list(p, "wpc", l.warps_per_cta, IR_MAX_RANK)) < 0 ||
		    !layout_comma(p) || (n[3] = layout_list(p, "order", l.order, IR_MAX_RANK)) < 0)
			return NULL;
		if (n[0] < 1 || n[1] != n[0] || n[2] != n[0] || n[3] != n[0]) {
			perr(p, kw, "blocked layout needs spt, tpw, wpc, order of one length >= 1");
			return NULL;
		}
		l.rank = n[0];
	} else if (W("#slice")) {
		l.kind = LAYOUT_SLICE;
		if (!layout_int(p, "dim", &l.dim) || !layout_comma(p) ||
		    !expect_word(p, "parent", "in layout") || !expect(p, TK_EQ, "in layout"))
			return NULL;
		if (!(l.parent = parse_layout(p)))
			return NULL;
		if (l.dim < 0 || l.dim >= l.parent->rank) {
			perr(p, kw, "slice dim %d out of range for a parent of rank %d", l.dim,
			     l.parent->rank);
			return NULL;
		}
		l.rank = l.parent->rank - 1;
	} else if (W("#shared")) {
		l.kind = LAYOUT_SHARED;
		if (!layout_int(p, "vec", &l.vec) || !layout_comma(p) ||
		    !layout_int(p, "per_phase", &l.per_phase) || !layout_comma(p) ||
		    !layout_int(p, "max_phase", &l.max_phase) || !layout_comma(p) ||
		    (n[0] = layout_list(p, "order", l.order, IR_MAX_RANK)) < 0)
			return NULL;
		if (n[0] < 1) {
			perr(p, kw, "shared layout needs a non-empty order");
			return NULL;
		}
		l.rank = n[0];
	} else if (W("#mma")) {
		int ver[2];
		l.kind = LAYOUT_MMA;
		if ((n[0] = layout_list(p, "version", ver, 2)) < 0 || !layout_comma(p) ||
		    (n[1] = layout_list(p, "wpc", l.warps_per_cta, IR_MAX_RANK)) < 0 ||
		    !layout_comma(p) || (n[2] = layout_list(p, "instr", l.instr_shape, 3)) < 0)
			return NULL;
		if (n[0] != 2 || n[1] < 1) {
			perr(p, kw, "mma layout needs version = [major, minor] and a non-empty wpc");
			return NULL;
		}
		l.version_major = ver[0];
		l.version_minor = ver[1];
		l.rank = n[1];
	} else if (W("#dot_op")) {
		l.kind = LAYOUT_DOT_OP;
		if (!layout_int(p, "opidx", &l.opidx) || !layout_comma(p) ||
		    !expect_word(p, "parent", "in layout") || !expect(p, TK_EQ, "in layout"))
			return NULL;
		if (!(l.parent = parse_layout(p)))
			return NULL;
		if (!layout_comma(p) || !layout_int(p, "k_width", &l.k_width))
			return NULL;
		l.rank = l.parent->rank;
	} else {
		perr(p, kw, "unknown layout '%.*s'", kw->len, kw->start);
		return NULL;
	}
#undef W
	if (!expect(p, TK_GT, "to close the layout"))
		return NULL;
	return ir_layout(p->ctx, &l);
}

static const IrLayout *parse_layout(Parser *p)
{
	if (!at(p, TK_HASH)) {
		perr(p, &p->tok, "expected layout, found %s", describe(p, &p->tok));
		return NULL;
	}
	if (++p->tdepth > MAX_TYPE_DEPTH) {
		perr(p, &p->tok, "layouts nested deeper than %d", MAX_TYPE_DEPTH);
		return NULL;
	}
	Tok kw = p->tok;
	advance(p);
	const IrLayout *l = NULL;
	if (expect(p, TK_LT, "after layout name"))
		l = parse_layout_body(p, &kw);
	p->tdepth--;
	return l;
}

/* block<D0xD1x...xT[, #layout]>: the dims are scanned by characters. */
static const IrType *parse_block(Parser *p, const Tok *kw)
{
	if (!expect(p, TK_LT, "after 'block'"))
		return NULL;
	int64_t shape[IR_MAX_RANK], numel = 1;
	int rank = 0;
	const char *s = p->tok.start;
	int line = p->tok.line, col = p->tok.col;
	if (!at(p, TK_INT) || p->tok.start[0] == '-') {
		perr(p, &p->tok, "expected block dimension, found %s", describe(p, &p->tok));
		return NULL;
	}
	for (;;) {
		Tok dt = {.line = line, .col = col};
		int64_t d = 0;
		while (is_digit(*s)) {
			if (d > (INT64_MAX - 9) / 10) {
				perr(p, &dt, "block dimension too large");
				return NULL;
			}
			d = d * 10 + (*s - '0');
			s++;
			col++;
		}
		if (rank == IR_MAX_RANK) {
			perr(p, &dt, "block rank exceeds %d", IR_MAX_RANK);
			return NULL;
		}
		if (d <= 0 || (d & (d - 1))) {
			perr(p, &dt, "block dimension %" PRId64 " is not a power of two", d);
			return NULL;
		}
		shape[rank++] = d;
		if (d > IR_MAX_NUMEL || (numel *= d) > IR_MAX_NUMEL) {
			perr(p, &dt, "block has more than %d elements", IR_MAX_NUMEL);
			return NULL;
		}
		if (*s != 'x') {
			Tok bad = {.start = s, .len = *s ? 1 : 0, .line = line, .col = col,
				   .kind = *s ? TK_IDENT : TK_EOF};
			perr(p, &bad, "expected 'x' after block dimension, found %s",
			     describe(p, &bad));
			return NULL;
		}
		s++;
		col++;
		if (!is_digit(*s))
			break;
	}
	relex(p, s, line, col);
	const IrType *elem = parse_type(p);
	if (!elem)
		return NULL;
	const IrLayout *layout = NULL;
	if (accept(p, TK_COMMA) && !(layout = parse_layout(p)))
		return NULL;
	if (!expect(p, TK_GT, "to close 'block<'"))
		return NULL;
	const IrType *t = ir_type_block(p->ctx, elem, rank, shape, layout);
	if (!t)
		perr(p, kw, "invalid block element type %s", ir_print_type(p->ctx, elem));
	return t;
}

static const IrType *parse_type_inner(Parser *p)
{
	Tok t = p->tok;
	if (!at(p, TK_IDENT)) {
		perr(p, &t, "expected type, found %s", describe(p, &t));
		return NULL;
	}
	advance(p);
	if (tok_is(&t, "ptr")) {
		if (!expect(p, TK_LT, "after 'ptr'"))
			return NULL;
		const IrType *pointee = parse_type(p);
		if (!pointee)
			return NULL;
		int as = 1;
		bool cst = false;
		if (accept(p, TK_COMMA)) {
			if (at(p, TK_IDENT) && tok_is(&p->tok, "const")) {
				advance(p);
				cst = true;
			} else {
				if (!parse_int(p, &as, 0, 255))
					return NULL;
				if (accept(p, TK_COMMA)) {
					if (!at(p, TK_IDENT) || !tok_is(&p->tok, "const")) {
						perr(p, &p->tok, "expected 'const', found %s", describe(p, &p->tok));
						return NULL;
					}
					advance(p);
					cst = true;
				}
			}
		}
		if (!expect(p, TK_GT, "to close 'ptr<'"))
			return NULL;
		return ir_type_ptr_const(p->ctx, pointee, as, cst);
	}
	if (tok_is(&t, "block"))
		return parse_block(p, &t);
	char name[16];
	int k = -1;
	if (t.len < (int)sizeof name) {
		memcpy(name, t.start, (size_t)t.len);
		name[t.len] = 0;
		k = ir_kind_by_name(name);
	}
	if (k < 0) {
		perr(p, &t, "unknown type %s", describe(p, &t));
		return NULL;
	}
	return ir_type(p->ctx, (IrTypeKind)k);
}

static const IrType *parse_type(Parser *p)
{
	if (p->err)
		return NULL;
	if (++p->tdepth > MAX_TYPE_DEPTH) {
		perr(p, &p->tok, "types nested deeper than %d", MAX_TYPE_DEPTH);
		return NULL;
	}
	const IrType *t = parse_type_inner(p);
	p->tdepth--;
	return t;
}

/* type (, type)* into v; stops at a token that is not ','. */
static bool parse_type_list(Parser *p, Vec *v)
{
	for (;;) {
		const IrType *t = parse_type(p);
		if (!t)
			return false;
		vec_push(p->ctx, v, (void *)t);
		if (!accept(p, TK_COMMA))
			return !p->err;
	}
}

/* ------------------------------------------------------------------------- */
/* Attributes                                                                */
/* ------------------------------------------------------------------------- */

static bool parse_attr_value(Parser *p, IrAttr *a)
{
	Tok t = p->tok;
	switch (t.kind) {
	case TK_INT:
		a->kind = ATTR_INT;
		return parse_int64(p, &a->i);
	case TK_FLOAT:
		a->kind = ATTR_FLOAT;
		return parse_float(p, &a->f);
	case TK_STRING:
		a->kind = ATTR_STR;
		a->s = ir_intern(p->ctx, decode_string(p));
		return !p->err;
	case TK_SYM:
		a->kind = ATTR_SYM;
		a->s = ir_intern(p->ctx, ir_strndup(p->ctx, t.start + 1, (size_t)t.len - 1));
		advance(p);
		return !p->err;
	case TK_LBRACK: {
		Vec v = {0};
		advance(p);
		if (!accept(p, TK_RBRACK)) {
			for (;;) {
				int64_t *x = ir_alloc(p->ctx, sizeof *x);
				if (!parse_int64(p, x))
					return false;
				vec_push(p->ctx, &v, x);
				if (accept(p, TK_COMMA))
					continue;
				if (!expect(p, TK_RBRACK, "or ',' in integer list"))
					return false;
				break;
			}
		}
		a->kind = ATTR_INTS;
		a->n = v.n;
		a->ints = ir_alloc(p->ctx, (size_t)(v.n ? v.n : 1) * sizeof(int64_t));
		for (int i = 0; i < v.n; i++)
			a->ints[i] = *(int64_t *)v.v[i];
		return !p->err;
	}
	case TK_IDENT:
		if (at_word(p, "true") || at_word(p, "false")) {
			a->kind = ATTR_BOOL;
			a->i = at_word(p, "true");
			advance(p);
			return !p->err;
		}
		if (at_word(p, "inf") || at_word(p, "nan")) {
			a->kind = ATTR_FLOAT;
			return parse_float(p, &a->f);
		}
		if (at_word(p, "type")) {
			advance(p);
			a->kind = ATTR_TYPE;
			if (!expect(p, TK_LPAREN, "after 'type'") || !(a->type = parse_type(p)))
				return false;
			return expect(p, TK_RPAREN, "to close 'type('");
		}
		break;
	default:
		break;
	}
	return perr(p, &t, "expected attribute value, found %s", describe(p, &t));
}

/* {name = value, ...} (on '{'); attributes kept sorted by ir_set_attr. */
static bool parse_attrs(Parser *p, int *nattrs, IrAttr **attrs)
{
	advance(p); /* { */
	if (accept(p, TK_RBRACE))
		return !p->err;
	for (;;) {
		Tok name = p->tok;
		if (!at(p, TK_IDENT))
			return perr(p, &name, "expected attribute name, found %s", describe(p, &name));
		char *s = ir_strndup(p->ctx, name.start, (size_t)name.len);
		if (ir_find_attr(*nattrs, *attrs, s))
			return perr(p, &name, "duplicate attribute '%s'", s);
		advance(p);
		if (!expect(p, TK_EQ, "after attribute name"))
			return false;
		IrAttr a = {.name = s};
		if (!parse_attr_value(p, &a))
			return false;
		ir_set_attr(p->ctx, nattrs, attrs, &a);
		if (accept(p, TK_COMMA))
			continue;
		return expect(p, TK_RBRACE, "or ',' in attributes");
	}
}

/* ------------------------------------------------------------------------- */
/* Ops and regions                                                           */
/* ------------------------------------------------------------------------- */

static bool parse_op(Parser *p, IrBlock *blk);

/* Ops up to the '}' that closes blk (not consumed). */
static bool parse_ops(Parser *p, IrBlock *blk)
{
	while (!at(p, TK_RBRACE)) {
		if (p->err)
			return false;
		if (at(p, TK_EOF))
			return perr(p, &p->tok, "expected '}', found end of input");
		if (!parse_op(p, blk))
			return false;
	}
	return true;
}

/* { [^(%a: T, ...):] ops } on '{'. */
static bool parse_region(Parser *p, IrBlock *rb)
{
	if (p->depth >= MAX_REGION_DEPTH)
		return perr(p, &p->tok, "regions nested deeper than %d", MAX_REGION_DEPTH);
	advance(p); /* { */
	p->depth++;
	int mark = p->nundo;
	bool ok = true;
	if (accept(p, TK_CARET)) {
		ok = expect(p, TK_LPAREN, "after '^'");
		if (ok && !accept(p, TK_RPAREN)) {
			for (;;) {
				Tok name = p->tok;
				const IrType *t;
				if (!(ok = expect(p, TK_VALUE, "in block arguments")) ||
				    !(ok = expect(p, TK_COLON, "after value name")) ||
				    !(ok = (t = parse_type(p)) != NULL))
					break;
				IrValue *v = ir_block_add_arg(p->ctx, rb, t);
				if (!(ok = scope_define(p, &name, v)))
					break;
				if (accept(p, TK_COMMA))
					continue;
				ok = expect(p, TK_RPAREN, "or ',' in block arguments");
				break;
			}
		}
		ok = ok && expect(p, TK_COLON, "after block arguments");
	}
	ok = ok && parse_ops(p, rb) && expect(p, TK_RBRACE, NULL);
	scope_pop(p, mark);
	p->depth--;
	return ok;
}

/* "operand" / "operands" and so on. */
static const char *plural(int n, const char *word)
{
	static const char *const words[][2] = {
		{"operand", "operands"}, {"result", "results"}, {"region", "regions"}};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (!strcmp(word, words[i][0]))
			return words[i][n != 1];
	return word;
}

static bool check_counts(Parser *p, const Tok *nt, const IrOpInfo *info, int nops, int nres)
{
	if (nops < info->minops || (info->maxops >= 0 && nops > info->maxops)) {
		if (info->minops == info->maxops)
			return perr(p, nt, "op '%s' expects %d %s, got %d", info->name,
				    info->minops, plural(info->minops, "operand"), nops);
		if (info->maxops < 0)
			return perr(p, nt, "op '%s' expects at least %d %s, got %d", info->name,
				    info->minops, plural(info->minops, "operand"), nops);
		return perr(p, nt, "op '%s' expects %d to %d operands, got %d", info->name,
			    info->minops, info->maxops, nops);
	}
	if (info->nres >= 0 && nres != info->nres)
		return perr(p, nt, "op '%s' expects %d %s, got %d", info->name, info->nres,
			    plural(info->nres, "result"), nres);
	return true;
}

/* [%r, ... =] name [%a, ...] [{attrs}] [: types] [regions] [loc] */
static bool parse_op(Parser *p, IrBlock *blk)
{
	IrCtx *ctx = p->ctx;
	Vec names = {0}, ops = {0}, types = {0};
	if (at(p, TK_VALUE)) {
		for (;;) {
			Tok *t = ir_alloc(ctx, sizeof *t);
			*t = p->tok;
			vec_push(ctx, &names, t);
			advance(p);
			if (!accept(p, TK_COMMA))
				break;
			if (!at(p, TK_VALUE))
				return perr(p, &p->tok, "expected value name after ',', found %s",
					    describe(p, &p->tok));
		}
		if (!expect(p, TK_EQ, "after result names"))
			return false;
	}
	Tok nt = p->tok;
	char name[32];
	int opc = -1;
	if (at(p, TK_STRING)) { /* Triton's names, which older TTGIR texts printed */
		if (nt.len == 11 && !memcmp(nt.start, "\"tt.reduce\"", 11))
			opc = OP_REDUCE;
		else if (nt.len == 9 && !memcmp(nt.start, "\"tt.scan\"", 9))
			opc = OP_SCAN;
	} else if (!at(p, TK_IDENT)) {
		return perr(p, &nt, "expected op name, found %s", describe(p, &nt));
	}
	if (at(p, TK_IDENT) && nt.len < (int)sizeof name) {
		memcpy(name, nt.start, (size_t)nt.len);
		name[nt.len] = 0;
		opc = ir_opcode_by_name(name);
	}
	if (opc < 0)
		return perr(p, &nt, "unknown op %s", describe(p, &nt));
	const IrOpInfo *info = ir_opinfo((IrOpcode)opc);
	advance(p);

	if (at(p, TK_VALUE) && !p->tok.nl) {
		for (;;) {
			IrValue *v = scope_lookup(p, &p->tok);
			if (!v)
				return perr(p, &p->tok, "undefined value %.*s", p->tok.len,
					    p->tok.start);
			vec_push(ctx, &ops, v);
			advance(p);
			if (!accept(p, TK_COMMA))
				break;
			if (!at(p, TK_VALUE))
				return perr(p, &p->tok, "expected value name after ',', found %s",
					    describe(p, &p->tok));
		}
	}
	int nattrs = 0;
	IrAttr *attrs = NULL;
	if (at(p, TK_LBRACE) && !p->tok.nl && (info->nregions == 0 || looks_like_attrs(p)) &&
	    !parse_attrs(p, &nattrs, &attrs))
		return false;
	if (at(p, TK_COLON) && !p->tok.nl) {
		if (!names.n)
			return perr(p, &p->tok, "op '%s' has no results, but ':' follows",
				    info->name);
		advance(p);
		if (!parse_type_list(p, &types))
			return false;
	}
	if (p->err || !check_counts(p, &nt, info, ops.n, names.n))
		return false;
	if (types.n != names.n) {
		if (types.n == 0)
			return perr(p, &p->tok, "expected ':' and %d result %s, found %s",
				    names.n, names.n == 1 ? "type" : "types",
				    describe(p, &p->tok));
		return perr(p, &nt, "op '%s' has %d %s but %d result types", info->name, names.n,
			    plural(names.n, "result"), types.n);
	}

	IrOp *op = ir_op_new(ctx, (IrOpcode)opc, ops.n, (IrValue *const *)ops.v, types.n,
			     (const IrType *const *)types.v, info->nregions, (IrLoc){0});
	op->nattrs = nattrs;
	op->attrs = attrs;
	ir_block_append(blk, op);
	for (int r = 0; r < info->nregions; r++) {
		if (!at(p, TK_LBRACE) || p->tok.nl)
			return perr(p, &p->tok, "op '%s' expects %d %s, found %s", info->name,
				    info->nregions, plural(info->nregions, "region"),
				    describe(p, &p->tok));
		if (!parse_region(p, op->regions[r]))
			return false;
	}
	if (info->nregions && at(p, TK_LBRACE) && !p->tok.nl)
		return perr(p, &p->tok, "op '%s' expects %d %s, found another '{'", info->name,
			    info->nregions, plural(info->nregions, "region"));
	if (at_word(p, "loc") && !p->tok.nl && !parse_loc(p, &op->loc))
		return false;
	for (int i = 0; i < names.n; i++)
		if (!scope_define(p, names.v[i], &op->res[i]))
			return false;
	if (p->err)
		return false;
	if (!at(p, TK_EOF) && !at(p, TK_RBRACE) && !p->tok.nl)
		return perr(p, &p->tok, "expected end of line after op '%s', found %s",
			    info->name, describe(p, &p->tok));
	return true;
}

/* ------------------------------------------------------------------------- */
/* Functions and modules                                                     */
/* ------------------------------------------------------------------------- */

typedef struct Param {
	Tok name;
	const IrType *type;
	int nattrs;
	IrAttr *attrs;
} Param;

/* func [kernel] [noinline] @name(params) [-> (types)] [{attrs}] [loc] { ops } */
static bool parse_func(Parser *p)
{
	IrCtx *ctx = p->ctx;
	advance(p); /* func */
	bool kernel = false, noinline = false;
	for (;;) {
		if (at_word(p, "kernel") && !kernel)
			kernel = true;
		else if (at_word(p, "noinline") && !noinline)
			noinline = true;
		else
			break;
		advance(p);
	}
	Tok nt = p->tok;
	if (!expect(p, TK_SYM, "after 'func'"))
		return false;
	char *fname = ir_strndup(ctx, nt.start + 1, (size_t)nt.len - 1);
	if (ir_module_find(p->m, fname))
		return perr(p, &nt, "redefinition of function @%s", fname);
	if (!expect(p, TK_LPAREN, "after function name"))
		return false;
	Vec params = {0}, restys = {0};
	if (!accept(p, TK_RPAREN)) {
		for (;;) {
			Param *pa = ir_alloc(ctx, sizeof *pa);
			pa->name = p->tok;
			if (!expect(p, TK_VALUE, "in parameter list") ||
			    !expect(p, TK_COLON, "after value name") || !(pa->type = parse_type(p)))
				return false;
			if (at(p, TK_LBRACE) && looks_like_attrs(p) &&
			    !parse_attrs(p, &pa->nattrs, &pa->attrs))
				return false;
			vec_push(ctx, &params, pa);
			if (accept(p, TK_COMMA))
				continue;
			if (!expect(p, TK_RPAREN, "or ',' in parameter list"))
				return false;
			break;
		}
	}
	if (accept(p, TK_ARROW)) {
		if (!expect(p, TK_LPAREN, "after '->'"))
			return false;
		if (!accept(p, TK_RPAREN) &&
		    (!parse_type_list(p, &restys) || !expect(p, TK_RPAREN, "after result types")))
			return false;
	}
	int nattrs = 0;
	IrAttr *attrs = NULL;
	if (at(p, TK_LBRACE) && looks_like_attrs(p) && !parse_attrs(p, &nattrs, &attrs))
		return false;
	IrLoc loc = {0};
	p->func_file = NULL;
	if (at_word(p, "loc") && !parse_loc(p, &loc))
		return false;
	if (p->err)
		return false;

	const IrType **ptys = ir_alloc(ctx, (size_t)(params.n + 1) * sizeof *ptys);
	for (int i = 0; i < params.n; i++)
		ptys[i] = ((Param *)params.v[i])->type;
	IrFunc *f = ir_func_new(p->m, fname, params.n, ptys, restys.n,
				(const IrType **)restys.v, loc);
	f->is_kernel = kernel;
	f->noinline = noinline;
	f->nattrs = nattrs;
	f->attrs = attrs;
	p->func_file = f->loc.file;
	scope_reset(p);
	for (int i = 0; i < params.n; i++) {
		Param *pa = params.v[i];
		f->params[i].nattrs = pa->nattrs;
		f->params[i].attrs = pa->attrs;
		if (!scope_define(p, &pa->name, f->body->args[i]))
			return false;
	}
	if (!expect(p, TK_LBRACE, "to open the function body"))
		return false;
	return parse_ops(p, f->body) && expect(p, TK_RBRACE, NULL);
}

static void parser_init(Parser *p, IrCtx *ctx, const char *filename, const char *text)
{
	memset(p, 0, sizeof *p);
	p->ctx = ctx;
	p->file = ir_intern(ctx, filename ? filename : "<input>");
	p->lx.pos = text ? text : "";
	p->lx.line = 1;
	p->lx.col = 1;
	advance(p);
}

static void parser_free(Parser *p)
{
	free(p->tab);
	free(p->undo);
}

IrModule *ir_parse(IrCtx *ctx, const char *filename, const char *text, IrError **err)
{
	Parser p;
	parser_init(&p, ctx, filename, text);
	p.m = ir_module_new(ctx);
	if (at_word(&p, "module")) {
		advance(&p);
		if (at(&p, TK_LBRACE))
			parse_attrs(&p, &p.m->nattrs, &p.m->attrs);
		else
			expect(&p, TK_LBRACE, "after 'module'");
	}
	while (!p.err && !at(&p, TK_EOF)) {
		if (!at_word(&p, "func")) {
			perr(&p, &p.tok, "expected 'func', found %s", describe(&p, &p.tok));
			break;
		}
		parse_func(&p);
	}
	parser_free(&p);
	if (err)
		*err = p.err;
	return p.err ? NULL : p.m;
}

const IrType *ir_parse_type(IrCtx *ctx, const char *text)
{
	Parser p;
	parser_init(&p, ctx, "<type>", text);
	const IrType *t = parse_type(&p);
	if (t && !at(&p, TK_EOF)) {
		perr(&p, &p.tok, "expected end of input after type, found %s", describe(&p, &p.tok));
		t = NULL;
	}
	parser_free(&p);
	return p.err ? NULL : t;
}
