/*
 * jscan.c: spans of JSON text (PURE; the worker runs it on POST bodies
 * that jansson has accepted). Every read is checked against the length
 * first: the text need not be valid JSON nor end with a NUL.
 */
#include "util/jscan.h"

#include <string.h>

#define JSCAN_HEX_DIGITS	4	/* the XXXX of \uXXXX */
#define JSCAN_ESC_SHORT		2	/* \n */
#define JSCAN_ESC_U		(2 + JSCAN_HEX_DIGITS)	/* \uXXXX */
#define JSCAN_SURR_HIGH		0xd800	/* first half of a pair */
#define JSCAN_SURR_LOW		0xdc00	/* second half of a pair */
#define JSCAN_SURR_END		0xe000	/* past the low surrogates */

size_t
jscan_ws(const char *s, size_t n, size_t i)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' ||
	    s[i] == '\r'))
		i++;
	return i;
}

/* 1 if c ends a number or a literal: white space, structure, a quote. */
static int
jscan_is_delim(char c)
{
	switch (c) {
	case ' ': case '\t': case '\n': case '\r':
	case ',': case ':': case '{': case '}': case '[': case ']':
	case '"': case '\0':
		return 1;
	}
	return 0;
}

size_t
jscan_skip_string(const char *s, size_t n, size_t i)
{
	if (i >= n || s[i] != '"')
		return 0;
	for (i++; i < n; i++) {
		if (s[i] == '\\')
			i++;		/* the escaped byte is never the end */
		else if (s[i] == '"')
			return i + 1;
	}
	return 0;
}

size_t
jscan_skip_value(const char *s, size_t n, size_t i)
{
	size_t depth = 0;

	do {
		i = jscan_ws(s, n, i);
		if (i >= n)
			return 0;
		switch (s[i]) {
		case '"':
			if ((i = jscan_skip_string(s, n, i)) == 0)
				return 0;
			break;
		case '{': case '[':
			depth++;
			i++;
			break;
		case '}': case ']':
			if (depth == 0)
				return 0;
			depth--;
			i++;
			break;
		case ',': case ':':
			if (depth == 0)
				return 0;
			i++;
			break;
		case '\0':
			return 0;	/* would never advance */
		default:
			while (i < n && !jscan_is_delim(s[i]))
				i++;
		}
	} while (depth > 0);
	return i;
}

/* The value of the four hex digits at s[i..i+3], or -1. */
static long
jscan_hex4(const char *s, size_t n, size_t i)
{
	long v = 0;
	size_t k;
	char c;

	if (i > n || n - i < JSCAN_HEX_DIGITS)
		return -1;
	for (k = i; k < i + JSCAN_HEX_DIGITS; k++) {
		c = s[k];
		if (c >= '0' && c <= '9')
			v = v * 16 + (c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v = v * 16 + (c - 'A' + 10);
		else
			return -1;
	}
	return v;
}

size_t
jscan_unescape(const char *s, size_t n, size_t i, uint32_t *cp)
{
	long hi, lo;

	if (i >= n || s[i] != '\\' || n - i < JSCAN_ESC_SHORT)
		return 0;
	switch (s[i + 1]) {
	case '"': case '\\': case '/':
		*cp = (unsigned char)s[i + 1];
		return i + JSCAN_ESC_SHORT;
	case 'b': *cp = '\b'; return i + JSCAN_ESC_SHORT;
	case 'f': *cp = '\f'; return i + JSCAN_ESC_SHORT;
	case 'n': *cp = '\n'; return i + JSCAN_ESC_SHORT;
	case 'r': *cp = '\r'; return i + JSCAN_ESC_SHORT;
	case 't': *cp = '\t'; return i + JSCAN_ESC_SHORT;
	case 'u':
		break;
	default:
		return 0;
	}
	if ((hi = jscan_hex4(s, n, i + 2)) == -1 ||
	    (hi >= JSCAN_SURR_LOW && hi < JSCAN_SURR_END))
		return 0;	/* not hex, or a low half alone */
	if (hi < JSCAN_SURR_HIGH || hi >= JSCAN_SURR_LOW) {
		*cp = (uint32_t)hi;
		return i + JSCAN_ESC_U;
	}
	/* A high half must be followed at once by \u and a low half. */
	i += JSCAN_ESC_U;
	if (n - i < JSCAN_ESC_U || s[i] != '\\' || s[i + 1] != 'u' ||
	    (lo = jscan_hex4(s, n, i + 2)) < JSCAN_SURR_LOW ||
	    lo >= JSCAN_SURR_END)
		return 0;
	*cp = 0x10000 + ((uint32_t)(hi - JSCAN_SURR_HIGH) << 10) +
	    (uint32_t)(lo - JSCAN_SURR_LOW);
	return i + JSCAN_ESC_U;
}

/* Writes cp (at most 0x10ffff, as jscan_unescape gives) as UTF-8. */
static size_t
jscan_utf8(uint32_t cp, char out[JSCAN_UTF8_MAX])
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

long
jscan_string_decode(const char *s, size_t n, size_t i, char *out,
    size_t cap)
{
	size_t o = 0, run, u;
	char buf[JSCAN_UTF8_MAX];
	uint32_t cp;

	if (i >= n || s[i] != '"')
		return -1;
	for (i++; i < n && s[i] != '"'; ) {
		if (s[i] != '\\') {
			/* A run of plain bytes goes out in one copy. */
			for (run = i; run < n && s[run] != '"' &&
			    s[run] != '\\'; run++)
				;
			if (run - i > cap - o)
				return -1;
			memcpy(out + o, s + i, run - i);
			o += run - i;
			i = run;
			continue;
		}
		if ((i = jscan_unescape(s, n, i, &cp)) == 0)
			return -1;
		u = jscan_utf8(cp, buf);
		if (u > cap - o)
			return -1;
		memcpy(out + o, buf, u);
		o += u;
	}
	return i < n ? (long)o : -1;
}

int
jscan_key_is(const char *k, size_t len, const char *name)
{
	size_t i = 0, j = 0, nlen = strlen(name), u;
	char buf[JSCAN_UTF8_MAX];
	uint32_t cp;

	while (i < len) {
		if (k[i] != '\\') {
			/* Plain bytes, most names' only ones: compared as such. */
			if (j == nlen || name[j] != k[i])
				return 0;
			i++;
			j++;
			continue;
		}
		/* A NUL (\u0000) never equals a byte of name. */
		if ((i = jscan_unescape(k, len, i, &cp)) == 0)
			return 0;
		u = jscan_utf8(cp, buf);
		if (u > nlen - j || memcmp(name + j, buf, u) != 0)
			return 0;
		j += u;
	}
	return j == nlen;
}

int
jscan_member_span(const char *s, size_t n, const char *name,
    size_t *start, size_t *end)
{
	size_t i = jscan_ws(s, n, 0), key, keyend, vstart, vend;

	if (i >= n || s[i] != '{')
		return -1;
	for (i++;; i++) {
		i = jscan_ws(s, n, i);
		key = i + 1;
		if ((keyend = jscan_skip_string(s, n, i)) == 0)
			return -1;	/* also "{}": no member at all */
		i = jscan_ws(s, n, keyend);
		if (i >= n || s[i] != ':')
			return -1;
		vstart = jscan_ws(s, n, i + 1);
		if ((vend = jscan_skip_value(s, n, vstart)) == 0)
			return -1;
		if (jscan_key_is(s + key, keyend - 1 - key, name)) {
			*start = vstart;
			*end = vend;
			return 0;
		}
		i = jscan_ws(s, n, vend);
		if (i >= n || s[i] != ',')
			return -1;
	}
}
