/*
 * jcheck.c: strict JSON validation without a tree (PURE; workers). One
 * pass over the text with an explicit stack of open containers: every
 * read is checked against the length first, nothing is allocated, and
 * the work is linear in the text but for the duplicate check, which
 * sorts each object's names (n log n: a body may hold thousands).
 */
#include "util/jcheck.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/jscan.h"

/* An integer of at most this many digits is exact as a double (< 2^53). */
#define JC_EXACT_DIGITS		15
#define JC_INT64_NEG_MAX	((uint64_t)INT64_MAX + 1)	/* |INT64_MIN| */
/* Objects with at most this many names are checked for duplicates pair
 * by pair (at most 120 cheap comparisons), larger ones by sorting. */
#define JC_PAIRWISE_MAX		16

/*
 * Bytes a string holds as they are: printable ASCII but '"' and '\\'
 * (0x7f included, as jansson has it). The rest need a look: the quote,
 * an escape, a control character (refused) or the start of a UTF-8
 * sequence. A table, because this is the loop over a token's bytes.
 */
static const unsigned char jc_plain[256] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,	/* 0x00 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,	/* 0x10 */
	1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0x20 '"' */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0x30 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0x40 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,	/* 0x50 '\\' */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0x60 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,	/* 0x70 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,	/* 0x80 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* An open container. */
struct jc_frame {
	char		 close;		/* '}' or ']' */
	size_t		 keys;		/* its first name in jc->keys */
	size_t		 used;		/* scratch in use when it opened */
};

struct jc_state {
	const char		*s;
	size_t			 n;
	const struct jcheck	*jc;
	int			 depth;
	size_t			 nkeys;		/* names held (open objects') */
	size_t			 used;		/* scratch bytes in use */
	const char		*name;		/* the top-level member read */
	size_t			 namelen;
	size_t			 vstart;	/* where its value starts */
	struct jc_frame		 stack[JCHECK_MAX_DEPTH];
};

static int
jc_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A byte that cannot be where it is: a NUL says so. */
static enum jcheck_err
jc_unexpected(char c)
{
	return c == '\0' ? JCHECK_ENUL : JCHECK_ESYNTAX;
}

/* The length of the valid UTF-8 sequence at p (avail bytes), or 0:
 * utf8_check_first() and utf8_check_full() of jansson's utf.c. */
static size_t
jc_utf8(const unsigned char *p, size_t avail)
{
	uint32_t cp, min;
	size_t len, k;

	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		len = 2, cp = p[0] & 0x1f, min = 0x80;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3, cp = p[0] & 0x0f, min = 0x800;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4, cp = p[0] & 0x07, min = 0x10000;
	} else
		return 0;	/* ASCII is not asked; continuation, C0, C1, F5+ */
	if (avail < len)
		return 0;
	for (k = 1; k < len; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[k] & 0x3f);
	}
	/* Overlong, past Unicode, or a surrogate half. */
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/*
 * s[i] is '"': checks the string and sets *end past its closing quote
 * and *esc if it holds an escape (its bytes are then not its value).
 */
static enum jcheck_err
jc_string(const char *s, size_t n, size_t i, size_t *end, int *esc)
{
	unsigned char c;
	uint32_t cp;
	size_t u;

	*esc = 0;
	for (i++;;) {
		while (i < n && jc_plain[(unsigned char)s[i]])
			i++;
		if (i >= n)
			return JCHECK_ESYNTAX;
		c = (unsigned char)s[i];
		if (c == '"') {
			*end = i + 1;
			return JCHECK_OK;
		}
		if (c == '\\') {
			/* jscan_unescape refuses what jansson refuses: other
			 * letters, bad hex, a surrogate without its half. */
			if ((u = jscan_unescape(s, n, i, &cp)) == 0)
				return JCHECK_ESYNTAX;
			if (cp == 0)
				return JCHECK_ENUL;
			*esc = 1;
			i = u;
		} else if (c < 0x20)
			return jc_unexpected((char)c);
		else if ((u = jc_utf8((const unsigned char *)s + i,
		    n - i)) == 0)
			return JCHECK_EUTF8;
		else
			i += u;
	}
}

/* An integer token's value: jansson's strtoll(), ERANGE refused. */
static enum jcheck_err
jc_int(struct jcheck_value *v, uint64_t mag, int neg, int big)
{
	if (big || mag > (neg ? JC_INT64_NEG_MAX : (uint64_t)INT64_MAX))
		return JCHECK_ENUMBER;
	v->is_int = 1;
	v->i = !neg ? (int64_t)mag : mag == JC_INT64_NEG_MAX ? INT64_MIN :
	    -(int64_t)mag;
	return JCHECK_OK;
}

/*
 * A real's value: jansson's strtod() on a terminated copy (the text has
 * none), refused only when it overflows; an underflow reads as 0 or a
 * subnormal, as there.
 */
static enum jcheck_err
jc_real(struct jc_state *st, struct jcheck_value *v)
{
	size_t len = v->end - v->start;
	char *copy, *end;
	double r;

	if (len + 1 > st->jc->scratch_len - st->used)
		return JCHECK_EROOM;
	copy = st->jc->scratch + st->used;
	memcpy(copy, st->s + v->start, len);
	copy[len] = '\0';
	errno = 0;
	r = strtod(copy, &end);
	if (end != copy + len)
		return JCHECK_ESYNTAX;	/* not in the C locale */
	if ((r == HUGE_VAL || r == -HUGE_VAL) && errno == ERANGE)
		return JCHECK_ENUMBER;
	v->r = r;
	return JCHECK_OK;
}

/* s[*pi] is '-' or a digit: one number, RFC 8259's grammar. */
static enum jcheck_err
jc_number(struct jc_state *st, size_t *pi, struct jcheck_value *v)
{
	const char *s = st->s;
	size_t n = st->n, i = *pi, digits;
	uint64_t mag = 0;
	int neg = 0, big = 0, is_int = 1;

	if (s[i] == '-') {
		neg = 1;
		i++;
	}
	if (i >= n || !jc_digit(s[i]))
		return JCHECK_ESYNTAX;
	if (s[i] == '0')
		i++;		/* "01": the '1' is then a token of its own */
	else {
		for (; i < n && jc_digit(s[i]); i++) {
			if (mag > (UINT64_MAX - 9) / 10)
				big = 1;
			else
				mag = mag * 10 + (uint64_t)(s[i] - '0');
		}
	}
	digits = i - *pi - (size_t)neg;
	if (i < n && s[i] == '.') {
		if (++i >= n || !jc_digit(s[i]))
			return JCHECK_ESYNTAX;
		while (i < n && jc_digit(s[i]))
			i++;
		is_int = 0;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		if (++i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= n || !jc_digit(s[i]))
			return JCHECK_ESYNTAX;
		while (i < n && jc_digit(s[i]))
			i++;
		is_int = 0;
	}
	v->kind = JCHECK_NUMBER;
	v->start = *pi;
	v->end = *pi = i;
	if (is_int && !st->jc->ints_as_reals)
		return jc_int(v, mag, neg, big);
	if (is_int && digits <= JC_EXACT_DIGITS) {
		v->r = neg ? -(double)mag : (double)mag;	/* "-0" is -0.0 */
		return JCHECK_OK;
	}
	return jc_real(st, v);
}

/* The index past word if s[i..] spells it, else 0. */
static size_t
jc_word(const char *s, size_t n, size_t i, const char *word, size_t len)
{
	return n - i >= len && memcmp(s + i, word, len) == 0 ? i + len : 0;
}

/* A value that is no container, at s[*pi]: read whole into *v. */
static enum jcheck_err
jc_scalar(struct jc_state *st, size_t *pi, struct jcheck_value *v)
{
	const char *s = st->s;
	size_t n = st->n, i = *pi, end = 0;
	enum jcheck_err e = JCHECK_OK;
	int esc;

	v->start = i;
	v->is_int = 0;
	v->i = 0;
	v->r = 0;
	switch (s[i]) {
	case '"':
		v->kind = JCHECK_STRING;
		e = jc_string(s, n, i, &end, &esc);
		break;
	case 't':
		v->kind = JCHECK_TRUE;
		end = jc_word(s, n, i, "true", 4);
		break;
	case 'f':
		v->kind = JCHECK_FALSE;
		end = jc_word(s, n, i, "false", 5);
		break;
	case 'n':
		v->kind = JCHECK_NULL;
		end = jc_word(s, n, i, "null", 4);
		break;
	default:
		if (s[i] == '-' || jc_digit(s[i]))
			return jc_number(st, pi, v);
		return jc_unexpected(s[i]);
	}
	if (e == JCHECK_OK && end == 0)
		e = JCHECK_ESYNTAX;
	v->end = *pi = end;
	return e;
}

/* The top-level object's member whose value just ended is reported. */
static void
jc_report(const struct jc_state *st, const struct jcheck_value *v)
{
	if (st->depth == 1 && st->jc->member != NULL)
		st->jc->member(st->jc->ctx, st->name, st->namelen, v);
}

/* Orders names by length, then bytes: equal ones end up side by side. */
static int
jc_key_cmp(const struct jcheck_key *a, const struct jcheck_key *b)
{
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return memcmp(a->p, b->p, a->len);
}

static void
jc_sift(struct jcheck_key *k, size_t root, size_t n)
{
	struct jcheck_key t;
	size_t child;

	while ((child = 2 * root + 1) < n) {
		if (child + 1 < n && jc_key_cmp(&k[child], &k[child + 1]) < 0)
			child++;
		if (jc_key_cmp(&k[root], &k[child]) >= 0)
			return;
		t = k[root];
		k[root] = k[child];
		k[child] = t;
		root = child;
	}
}

/* 1 if a and b are the same name; lengths and first bytes decide most
 * pairs without a call. */
static int
jc_key_same(const struct jcheck_key *a, const struct jcheck_key *b)
{
	return a->len == b->len && (a->len == 0 || (a->p[0] == b->p[0] &&
	    memcmp(a->p, b->p, a->len) == 0));
}

/* JCHECK_EDUP if two of the n names at k are one. A few (a token's) are
 * compared pair by pair; more are heapsorted (in place, n log n whatever
 * the names: a body may hold thousands), then neighbours compared. */
static enum jcheck_err
jc_dups(struct jcheck_key *k, size_t n)
{
	struct jcheck_key t;
	size_t i, j;

	if (n <= JC_PAIRWISE_MAX) {
		for (i = 1; i < n; i++)
			for (j = 0; j < i; j++)
				if (jc_key_same(&k[i], &k[j]))
					return JCHECK_EDUP;
		return JCHECK_OK;
	}
	for (i = n / 2; i-- > 0;)
		jc_sift(k, i, n);
	for (i = n - 1; i > 0; i--) {
		t = k[0];
		k[0] = k[i];
		k[i] = t;
		jc_sift(k, 0, i);
	}
	for (i = 1; i < n; i++)
		if (jc_key_same(&k[i - 1], &k[i]))
			return JCHECK_EDUP;
	return JCHECK_OK;
}

/*
 * s[*pi] starts a member: its name (held for the duplicate check,
 * decoded into the scratch if it has escapes: "\u0061" is "a"), the ':'
 * and the white space up to its value.
 */
static enum jcheck_err
jc_key(struct jc_state *st, size_t *pi)
{
	const struct jcheck *jc = st->jc;
	const char *s = st->s, *name;
	size_t n = st->n, i = *pi, end, len;
	enum jcheck_err e;
	long dlen;
	int esc;

	if (i >= n || s[i] != '"')
		return i < n ? jc_unexpected(s[i]) : JCHECK_ESYNTAX;
	if ((e = jc_string(s, n, i, &end, &esc)) != JCHECK_OK)
		return e;
	name = s + i + 1;
	len = end - i - 2;
	if (esc) {
		if ((dlen = jscan_string_decode(s, n, i, jc->scratch + st->used,
		    jc->scratch_len - st->used)) < 0)
			return JCHECK_EROOM;
		name = jc->scratch + st->used;
		len = (size_t)dlen;
		st->used += len;
	}
	if (st->nkeys == jc->nkeys)
		return JCHECK_EROOM;
	jc->keys[st->nkeys].p = name;
	jc->keys[st->nkeys].len = len;
	st->nkeys++;
	i = jscan_ws(s, n, end);
	if (i >= n || s[i] != ':')
		return i < n ? jc_unexpected(s[i]) : JCHECK_ESYNTAX;
	*pi = jscan_ws(s, n, i + 1);
	if (st->depth == 1) {
		st->name = name;
		st->namelen = len;
		st->vstart = *pi;
	}
	return JCHECK_OK;
}

static enum jcheck_err
jc_open(struct jc_state *st, char c)
{
	struct jc_frame *f;

	if (st->depth == st->jc->max_depth)
		return JCHECK_EDEPTH;
	f = &st->stack[st->depth++];
	f->close = c == '{' ? '}' : ']';
	f->keys = st->nkeys;
	f->used = st->used;
	return JCHECK_OK;
}

/* The innermost container ended just before i: an object's names are
 * checked and dropped; a top-level member's value is reported. */
static enum jcheck_err
jc_close(struct jc_state *st, size_t i)
{
	struct jc_frame *f = &st->stack[st->depth - 1];
	struct jcheck_value v;
	enum jcheck_err e;

	if (f->close == '}' && (e = jc_dups(st->jc->keys + f->keys,
	    st->nkeys - f->keys)) != JCHECK_OK)
		return e;
	st->nkeys = f->keys;
	st->used = f->used;
	v.kind = f->close == '}' ? JCHECK_OBJECT : JCHECK_ARRAY;
	st->depth--;
	v.start = st->vstart;
	v.end = i;
	v.is_int = 0;
	v.i = 0;
	v.r = 0;
	jc_report(st, &v);
	return JCHECK_OK;
}

/* The innermost container's next element starts at *pi: in an object,
 * its name comes first. */
static enum jcheck_err
jc_next(struct jc_state *st, size_t *pi)
{
	return st->stack[st->depth - 1].close == '}' ? jc_key(st, pi) :
	    JCHECK_OK;
}

/*
 * A value starts at *pi: a scalar is read whole (*ended = 1); a container
 * is opened and, unless it is empty (then closed: *ended = 1), its first
 * member's name is read (*ended = 0).
 */
static enum jcheck_err
jc_value(struct jc_state *st, size_t *pi, int *ended)
{
	const char *s = st->s;
	size_t n = st->n, i = *pi;
	struct jcheck_value v;
	enum jcheck_err e;

	if (i >= n)
		return JCHECK_ESYNTAX;
	if (s[i] == '{' || s[i] == '[') {
		if ((e = jc_open(st, s[i])) != JCHECK_OK)
			return e;
		i = jscan_ws(s, n, i + 1);
		if (i < n && s[i] == st->stack[st->depth - 1].close) {
			*ended = 1;
			*pi = i + 1;
			return jc_close(st, i + 1);
		}
		*ended = 0;
		*pi = i;
		return jc_next(st, pi);
	}
	if ((e = jc_scalar(st, pi, &v)) != JCHECK_OK)
		return e;
	*ended = 1;
	jc_report(st, &v);
	return JCHECK_OK;
}

/*
 * A value ended just before *pi: what follows it, closing the containers
 * that end there, up to the next value (past its ',' and, in an object,
 * its name). *done once the top-level object ended with only white
 * space after it.
 */
static enum jcheck_err
jc_after(struct jc_state *st, size_t *pi, int *done)
{
	const char *s = st->s;
	size_t n = st->n, i = *pi;
	enum jcheck_err e;

	for (;;) {
		i = jscan_ws(s, n, i);
		if (st->depth == 0) {
			*done = 1;
			return i == n ? JCHECK_OK : jc_unexpected(s[i]);
		}
		if (i >= n)
			return JCHECK_ESYNTAX;
		if (s[i] == ',') {
			*pi = jscan_ws(s, n, i + 1);
			return jc_next(st, pi);
		}
		if (s[i] != st->stack[st->depth - 1].close)
			return jc_unexpected(s[i]);
		if ((e = jc_close(st, ++i)) != JCHECK_OK)
			return e;
	}
}

enum jcheck_err
jcheck_object(const char *s, size_t n, const struct jcheck *jc)
{
	struct jc_state st;
	enum jcheck_err e = JCHECK_OK;
	size_t i;
	int ended, done = 0;

	if (jc->max_depth < 1 || jc->max_depth > JCHECK_MAX_DEPTH)
		return JCHECK_EROOM;
	st.s = s;
	st.n = n;
	st.jc = jc;
	st.depth = 0;
	st.nkeys = st.used = 0;
	st.name = NULL;
	st.namelen = st.vstart = 0;
	/* jansson takes an array too; every caller wants an object. */
	i = jscan_ws(s, n, 0);
	if (i >= n || s[i] != '{')
		return i < n ? jc_unexpected(s[i]) : JCHECK_ESYNTAX;
	while (!done && e == JCHECK_OK) {
		if ((e = jc_value(&st, &i, &ended)) == JCHECK_OK && ended)
			e = jc_after(&st, &i, &done);
	}
	return e;
}
