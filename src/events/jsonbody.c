/*
 * jsonbody.c: POST /events body checks (PURE; worker): the strict parse
 * (util/jcheck: jansson's rules, nesting bounded), the client's own bytes
 * of the payload member, and what PostgreSQL's jsonb makes of them.
 */
#include "events/jsonbody.h"

#include <stdlib.h>
#include <string.h>

#include "util/jcheck.h"
#include "util/jscan.h"

/* Saturation point for an exponent's digits: past any numeric limit. */
#define JSONBODY_EXP_CAP	((int64_t)1 << 40)

_Static_assert(JSONBODY_MAX_DEPTH <= JCHECK_MAX_DEPTH,
    "jcheck can nest as deep as a body may");

static int
jb_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Models PostgreSQL 15's numeric input (set_var_from_str, make_result)
 * and output (get_str_from_var) for one JSON number: the digits, where
 * the first non-zero one falls, and the display scale (digits after the
 * point, trailing zeros included; an exponent moves it, never below 0).
 */
int64_t
jsonbody_number_len(const char *s, size_t n)
{
	size_t i = 0, int_digits, ndigits, frac_digits = 0, first = 0;
	int64_t exp = 0, scale, lead, len;
	int neg = 0, exp_neg = 0, nonzero = 0;

	if (i < n && s[i] == '-') {
		neg = 1;
		i++;
	}
	if (i >= n || !jb_digit(s[i]))
		return -1;
	/* JSON has no leading zeros: "0", or a non-zero first digit. */
	if (s[i] == '0')
		i++;
	else {
		nonzero = 1;
		while (i < n && jb_digit(s[i]))
			i++;
	}
	ndigits = int_digits = i - (size_t)neg;
	if (i < n && s[i] == '.') {
		if (++i >= n || !jb_digit(s[i]))
			return -1;
		for (; i < n && jb_digit(s[i]); i++, frac_digits++, ndigits++)
			if (!nonzero && s[i] != '0') {
				nonzero = 1;
				first = ndigits;
			}
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			exp_neg = s[i++] == '-';
		if (i >= n || !jb_digit(s[i]))
			return -1;
		for (; i < n && jb_digit(s[i]); i++)
			if (exp < JSONBODY_EXP_CAP)
				exp = exp * 10 + (s[i] - '0');
		if (exp_neg)
			exp = -exp;
	}
	if (i != n)
		return -1;
	/* numeric_in refuses such an exponent before looking at the value. */
	if (exp > JSONBODY_NUMERIC_MAX_EXP || exp < -JSONBODY_NUMERIC_MAX_EXP)
		return -1;
	scale = (int64_t)frac_digits - exp;
	if (scale < 0)
		scale = 0;
	if (scale > JSONBODY_NUMERIC_MAX_SCALE)
		return -1;		/* even for zero: 0e-16384 */
	/* The power of ten of the first non-zero digit. */
	lead = (int64_t)int_digits - 1 - (int64_t)first + exp;
	if (nonzero && lead >= JSONBODY_NUMERIC_MAX_INT_DIGITS)
		return -1;
	/* "-" (not for zero), the integer digits or "0", "." and the scale. */
	len = nonzero && neg;
	len += nonzero && lead >= 0 ? lead + 1 : 1;
	if (scale > 0)
		len += 1 + scale;
	return len;
}

/*
 * jsonb output of one character written as an escape (PostgreSQL's
 * escape_json): the short escapes for \b \f \n \r \t " and \, \u00XX
 * for the other controls, UTF-8 for the rest (4 bytes past U+FFFF).
 */
static int64_t
jb_char_len(uint32_t cp)
{
	if (cp == '\b' || cp == '\f' || cp == '\n' || cp == '\r' ||
	    cp == '\t' || cp == '"' || cp == '\\')
		return 2;
	if (cp < 0x20)
		return 6;
	return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/*
 * s[*i] is '"': the jsonb output length of the string, with *i moved past
 * its closing quote; -1 if malformed or refused by jsonb (\u0000, a lone
 * surrogate). A raw byte prints as itself (jcheck checked UTF-8), an
 * escape as jsonb re-escapes its character.
 */
static int64_t
jb_string_len(const char *s, size_t n, size_t *i)
{
	int64_t len = 2;
	size_t j = *i + 1;
	uint32_t cp;

	while (j < n && s[j] != '"') {
		if ((unsigned char)s[j] < 0x20)
			return -1;
		if (s[j] != '\\') {
			len++;
			j++;
		} else if ((j = jscan_unescape(s, n, j, &cp)) == 0 || cp == 0)
			return -1;	/* \u0000: not in jsonb */
		else
			len += jb_char_len(cp);
	}
	if (j >= n)
		return -1;
	*i = j + 1;
	return len;
}

int64_t
jsonbody_rendered_len(const char *s, size_t n)
{
	static const char *const words[] = { "true", "false", "null" };
	int64_t total = 0, len;
	size_t i = 0, start, w, wl;

	while (i < n) {
		switch (s[i]) {
		case ' ': case '\t': case '\n': case '\r':
			i++;
			continue;
		case '{': case '}': case '[': case ']':
			total++;
			i++;
			continue;
		case ',': case ':':
			total += 2;		/* ", " and ": " */
			i++;
			continue;
		case '"':
			if ((len = jb_string_len(s, n, &i)) < 0)
				return -1;
			total += len;
			continue;
		}
		start = i;
		if (s[i] == '-' || jb_digit(s[i])) {
			while (i < n && (jb_digit(s[i]) || s[i] == '.' ||
			    s[i] == 'e' || s[i] == 'E' || s[i] == '+' ||
			    s[i] == '-'))
				i++;
			len = jsonbody_number_len(s + start, i - start);
			if (len < 0)
				return -1;
			total += len;
			continue;
		}
		for (w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
			wl = strlen(words[w]);
			if (n - i >= wl && memcmp(s + i, words[w], wl) == 0)
				break;
		}
		if (w == sizeof(words) / sizeof(words[0]))
			return -1;
		total += (int64_t)wl;
		i += wl;
	}
	return total;
}

/* The two members a body must have, as jcheck saw them. */
struct jb_members {
	int			 has_kind, has_payload;
	struct jcheck_value	 kind, payload;
};

static void
jb_member(void *ctx, const char *name, size_t len,
    const struct jcheck_value *v)
{
	struct jb_members *m = ctx;

	if (len == 4 && memcmp(name, "kind", 4) == 0) {
		m->has_kind = 1;
		m->kind = *v;
	} else if (len == 7 && memcmp(name, "payload", 7) == 0) {
		m->has_payload = 1;
		m->payload = *v;
	}
}

/*
 * Strict: duplicates are ambiguous; NUL (raw or \u0000), bad UTF-8 and
 * nesting past JSONBODY_MAX_DEPTH are errors. Integers are read as reals
 * (only a double's overflow is refused here): numeric's range is
 * jsonbody_rendered_len's to judge. The workspace is sized by the body,
 * so a small body costs a small allocation.
 */
static int
jb_check(const char *body, size_t len, struct jb_members *m)
{
	size_t nkeys = JCHECK_KEYS_MAX(len);
	struct jcheck jc;
	void *work;
	int rc;

	memset(m, 0, sizeof(*m));
	if ((work = malloc(nkeys * sizeof(struct jcheck_key) +
	    JCHECK_SCRATCH_MAX(len))) == NULL)
		return -1;
	jc.max_depth = JSONBODY_MAX_DEPTH;
	jc.ints_as_reals = 1;
	jc.member = jb_member;
	jc.ctx = m;
	jc.keys = work;
	jc.nkeys = nkeys;
	jc.scratch = (char *)(jc.keys + nkeys);
	jc.scratch_len = JCHECK_SCRATCH_MAX(len);
	rc = jcheck_object(body, len, &jc) == JCHECK_OK ? 0 : -1;
	free(work);
	return rc;
}

int
jsonbody_parse_event(const char *body, size_t len, struct json_t **root,
    const char **kind, char **payload)
{
	struct jb_members m;
	size_t plen, kcap;
	int64_t rendered;
	long klen;
	char *out;

	*root = NULL;
	*payload = NULL;
	if (jb_check(body, len, &m) == -1)
		return -1;
	/* A string's raw text is its quotes and at least one byte per
	 * decoded byte: "" is the only empty kind (\u0000 is refused). */
	if (!m.has_kind || m.kind.kind != JCHECK_STRING ||
	    m.kind.end - m.kind.start == 2 || !m.has_payload ||
	    m.payload.kind != JCHECK_OBJECT)
		return -1;
	/*
	 * The client's own bytes are stored, not a re-encoding: numbers keep
	 * their precision. jcheck reports the member's exact span, and
	 * without duplicates it is the only payload member there is.
	 *
	 * What jsonb makes of the payload is bounded here, before the
	 * database sees it, rather than left to PostgreSQL: an INSERT would
	 * store a row no GET can return (a 660-byte payload of tiny numbers
	 * prints as megabytes, and the read costs the server and the worker
	 * that much memory and time), numeric's range errors would cost a
	 * round trip and an error line, and this is one pass over bytes
	 * already in the cache.
	 */
	plen = m.payload.end - m.payload.start;
	rendered = jsonbody_rendered_len(body + m.payload.start, plen);
	if (rendered < 0 || rendered > JSONBODY_MAX_RENDERED)
		return -1;
	/* One block: the payload, then the decoded kind (never longer than
	 * its raw text), each terminated. */
	kcap = m.kind.end - m.kind.start - 2;
	if ((out = malloc(plen + 1 + kcap + 1)) == NULL)
		return -1;
	memcpy(out, body + m.payload.start, plen);
	out[plen] = '\0';
	if ((klen = jscan_string_decode(body, len, m.kind.start,
	    out + plen + 1, kcap)) < 0) {
		free(out);
		return -1;
	}
	out[plen + 1 + klen] = '\0';
	*payload = out;
	*kind = out + plen + 1;
	return 0;
}
