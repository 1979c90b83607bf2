/*
 * jsonbody.c: POST /events body checks (PURE; worker): nesting, jansson's
 * strict parse, the client's own bytes of the payload member (found by
 * util/jscan), and what PostgreSQL's jsonb makes of them.
 */
#include "events/jsonbody.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/jscan.h"

/* Saturation point for an exponent's digits: past any numeric limit. */
#define JSONBODY_EXP_CAP	((int64_t)1 << 40)

int
jsonbody_depth_ok(const char *text, size_t len, int max)
{
	int depth = 0, in_string = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		char c = text[i];

		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = 0;
		} else if (c == '"')
			in_string = 1;
		else if (c == '{' || c == '[') {
			if (++depth > max)
				return 0;
		} else if (c == '}' || c == ']')
			depth--;
	}
	return 1;
}

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
 * surrogate). A raw byte prints as itself (jansson checked UTF-8), an
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

int
jsonbody_parse_event(const char *body, size_t len, json_t **root,
    const char **kind, char **payload)
{
	json_error_t jerr;
	json_t *k, *p;
	size_t start, end;
	int64_t rendered;

	*root = NULL;
	*payload = NULL;
	/* jansson drops a raw NUL after a number or literal: refuse it here. */
	if (memchr(body, '\0', len) != NULL ||
	    !jsonbody_depth_ok(body, len, JSONBODY_MAX_DEPTH))
		return -1;
	/* Strict: duplicates are ambiguous; NUL and bad UTF-8 are errors.
	 * Big integers are only validated here, so reals are fine. */
	*root = json_loadb(body, len, JSON_REJECT_DUPLICATES |
	    JSON_DECODE_INT_AS_REAL, &jerr);
	if (*root == NULL || !json_is_object(*root))
		return -1;
	k = json_object_get(*root, "kind");
	p = json_object_get(*root, "payload");
	if (!json_is_string(k) || json_string_length(k) == 0 ||
	    !json_is_object(p))
		return -1;
	/* The client's own bytes are stored, not a re-encoding: numbers keep
	 * their precision. jansson has accepted the body, so the span is
	 * exact, and without duplicates it is the member jansson saw. */
	if (jscan_member_span(body, len, "payload", &start, &end) == -1)
		return -1;
	/*
	 * What jsonb makes of the payload is bounded here, before the
	 * database sees it, rather than left to PostgreSQL: an INSERT would
	 * store a row no GET can return (a 660-byte payload of tiny numbers
	 * prints as megabytes, and the read costs the server and the worker
	 * that much memory and time), numeric's range errors would cost a
	 * round trip and an error line, and this is one pass over bytes
	 * already in the cache.
	 */
	rendered = jsonbody_rendered_len(body + start, end - start);
	if (rendered < 0 || rendered > JSONBODY_MAX_RENDERED ||
	    (*payload = strndup(body + start, end - start)) == NULL)
		return -1;
	*kind = json_string_value(k);
	return 0;
}

