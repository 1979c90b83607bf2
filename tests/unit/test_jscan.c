/*
 * test_jscan.c: the JSON span scanner (util/jscan.c) on both sides of
 * every boundary: empty and white-space-only text, strings and escapes
 * cut off at each byte, \u escapes and surrogate pairs, nesting, every
 * value type, duplicate and escaped member names. Spans are compared as
 * text. Each input is handed over in a heap copy of exactly its length,
 * without a NUL, so a sanitizer build sees any read past the end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/jscan.h"
#include "tap.h"

/* text for a test name: control bytes as escapes, one line of TAP. */
static const char *
show(const char *text)
{
	static char buf[2][256];
	static int which;
	char *out = buf[which ^= 1];
	size_t o = 0;

	for (; *text != '\0' && o + 5 < sizeof(buf[0]); text++)
		o += (size_t)((unsigned char)*text < 0x20 ?
		    snprintf(out + o, sizeof(buf[0]) - o, "\\x%02x",
		    (unsigned char)*text) :
		    snprintf(out + o, sizeof(buf[0]) - o, "%c", *text));
	out[o] = '\0';
	return out;
}

#define NCASES(a)	(sizeof(a) / sizeof((a)[0]))

/* An exact-length copy of len bytes of text (no terminator). */
static char *
copy(const char *text, size_t len)
{
	char *p = malloc(len > 0 ? len : 1);

	if (p == NULL)
		abort();
	memcpy(p, text, len);
	return p;
}

/* The same for a whole C string, its length in *len. */
static char *
copy_str(const char *text, size_t *len)
{
	*len = strlen(text);
	return copy(text, *len);
}

/*
 * A scan of text that found text[start..end-1] (found) or nothing: want
 * is the text it should have found, NULL if it should have failed.
 */
static void
is_span(const char *what, const char *text, int found, size_t start,
    size_t end, const char *want)
{
	if (want == NULL) {
		ok(!found, "%s fails on [%s]", what, show(text));
		return;
	}
	if (ok(found && start <= end && end <= strlen(text), "%s finds a "
	    "span of [%s]", what, show(text)))
		ok(end - start == strlen(want) && memcmp(text + start, want,
		    end - start) == 0, "%s: [%s] (got %zu..%zu)", what,
		    show(want), start, end);
}

static void
test_skip_string(void)
{
	static const struct {
		const char	*text;
		size_t		 at, want;	/* want 0: fails */
	} cases[] = {
		{ "\"\"", 0, 2 },
		{ "\"abc\"", 0, 5 },
		{ "\"abc\" tail", 0, 5 },
		{ "x\"y\"z", 1, 4 },
		{ "\"a\\\"b\"", 0, 6 },
		{ "\"a\\\\\"", 0, 5 },
		{ "\"\\u0022\"", 0, 8 },
		{ "\"{[,:]}\"", 0, 8 },
		{ "\"", 0, 0 },
		{ "\"abc", 0, 0 },
		{ "\"abc\\", 0, 0 },
		{ "\"abc\\\"", 0, 0 },
		{ "abc", 0, 0 },
		{ "\"a\"", 3, 0 },
		{ "\"a\"", 7, 0 },
		{ "", 0, 0 },
	};
	size_t i, len;
	char *s;

	for (i = 0; i < NCASES(cases); i++) {
		s = copy_str(cases[i].text, &len);
		is_int(jscan_skip_string(s, len, cases[i].at), cases[i].want,
		    "skip_string [%s] at %zu", show(cases[i].text),
		    cases[i].at);
		free(s);
	}
	/* Not a validator: a raw NUL inside is stepped over. */
	ok(jscan_skip_string("\"a\0b\"", 5, 0) == 5, "NUL inside a string");
}

static void
test_skip_value(void)
{
	static const struct {
		const char	*text;
		size_t		 at;
		const char	*want;		/* the value, NULL: fails */
	} cases[] = {
		/* Every value type, alone and followed by more text. */
		{ "true", 0, "true" },
		{ "false,", 0, "false" },
		{ "null}", 0, "null" },
		{ "0", 0, "0" },
		{ "-12.5e+3]", 0, "-12.5e+3" },
		{ "1E-2 ", 0, "1E-2" },
		{ "\"s\"", 0, "\"s\"" },
		{ "\"}]\\\",\"", 0, "\"}]\\\",\"" },
		{ "{}", 0, "{}" },
		{ "[]", 0, "[]" },
		{ " \t\r\n[ 1 , 2 ] \n", 0, "[ 1 , 2 ]" },
		{ "{\"a\":[1,{\"b\":\"]}\"}],\"c\":null} ,", 0,
		    "{\"a\":[1,{\"b\":\"]}\"}],\"c\":null}" },
		{ "[[],[[]],{}]]", 0, "[[],[[]],{}]" },
		{ "1 2", 0, "1" },
		{ "{\"k\":1}{}", 0, "{\"k\":1}" },
		{ "\"k\":[1]", 4, "[1]" },
		{ "\"k\":  7,", 4, "7" },
		/* Nothing, or no value where one should start. */
		{ "", 0, NULL },
		{ " \t\r\n", 0, NULL },
		{ "[1]", 3, NULL },
		{ "[1]", 9, NULL },
		{ ",1", 0, NULL },
		{ ":1", 0, NULL },
		{ "}", 0, NULL },
		{ "]", 0, NULL },
		/* Cut off inside. */
		{ "[1,2", 0, NULL },
		{ "{", 0, NULL },
		{ "{\"a\":\"b", 0, NULL },
		{ "[\"\\", 0, NULL },
		{ "\"abc", 0, NULL },
	};
	char deep[2 * 1000];
	size_t i, k, len, got, start;
	char *s;

	for (i = 0; i < NCASES(cases); i++) {
		s = copy_str(cases[i].text, &len);
		got = jscan_skip_value(s, len, cases[i].at);
		for (start = cases[i].at; start < len &&
		    strchr(" \t\r\n", s[start]) != NULL; start++)
			;
		is_span("skip_value", cases[i].text, got != 0, start, got,
		    cases[i].want);
		free(s);
	}
	/* A NUL where a token should start never loops. */
	ok(jscan_skip_value("\0", 1, 0) == 0, "NUL alone fails");
	ok(jscan_skip_value("[1\0]", 4, 0) == 0, "NUL after a number in an "
	    "array fails");
	ok(jscan_skip_value("[true\0]", 7, 0) == 0, "NUL after a literal "
	    "fails");
	ok(jscan_skip_value("1\0", 2, 0) == 1, "a number ends at a NUL");
	/* Deep nesting needs no stack. */
	for (k = 0; k < 1000; k++) {
		deep[k] = '[';
		deep[2 * 1000 - 1 - k] = ']';
	}
	is_int(jscan_skip_value(deep, sizeof(deep), 0), sizeof(deep),
	    "1000 levels: the whole text");
	is_int(jscan_skip_value(deep, sizeof(deep) - 1, 0), 0,
	    "1000 levels, one bracket short: fails");
}

static void
test_unescape(void)
{
	static const struct {
		const char	*text;
		size_t		 end;		/* 0: fails */
		uint32_t	 cp;
	} cases[] = {
		{ "\\\"", 2, '"' },
		{ "\\\\", 2, '\\' },
		{ "\\/", 2, '/' },
		{ "\\b", 2, '\b' },
		{ "\\f", 2, '\f' },
		{ "\\n", 2, '\n' },
		{ "\\r", 2, '\r' },
		{ "\\tX", 2, '\t' },
		{ "\\u0041", 6, 'A' },
		{ "\\u00e9\"", 6, 0xe9 },
		{ "\\u00E9", 6, 0xe9 },
		{ "\\uFFFF", 6, 0xffff },
		{ "\\u0000", 6, 0 },
		{ "\\ud83d\\ude00", 12, 0x1f600 },
		{ "\\uD83D\\uDE00\"", 12, 0x1f600 },
		{ "\\udbff\\udfff", 12, 0x10ffff },
		{ "\\ud800\\udc00", 12, 0x10000 },
		/* Lone halves: jansson refuses them. */
		{ "\\ud800", 0, 0 },
		{ "\\ud800\"", 0, 0 },
		{ "\\ud800\\u0041", 0, 0 },
		{ "\\ud800\\ud800", 0, 0 },
		{ "\\ud800\\ue000", 0, 0 },
		{ "\\udbff\\udbff", 0, 0 },
		{ "\\ud800\\n", 0, 0 },
		{ "\\ud800\\udc0", 0, 0 },
		{ "\\udc00", 0, 0 },
		{ "\\udfff\\ud800", 0, 0 },
		/* Cut off, or not an escape. */
		{ "\\", 0, 0 },
		{ "\\u", 0, 0 },
		{ "\\u004", 0, 0 },
		{ "\\u004g", 0, 0 },
		{ "\\u 041", 0, 0 },
		{ "\\x", 0, 0 },
		{ "\\U0041", 0, 0 },
		{ "\\'", 0, 0 },
		{ "a", 0, 0 },
		{ "", 0, 0 },
	};
	const uint32_t unset = 0xfffffff;
	size_t i, len;
	uint32_t cp;
	char *s;

	for (i = 0; i < NCASES(cases); i++) {
		s = copy_str(cases[i].text, &len);
		cp = unset;
		is_int(jscan_unescape(s, len, 0, &cp), cases[i].end,
		    "unescape %s: end", cases[i].text);
		is_int(cp, cases[i].end != 0 ? cases[i].cp : unset,
		    "unescape %s: %s", cases[i].text, cases[i].end != 0 ?
		    "code point" : "*cp untouched");
		free(s);
	}
	ok(jscan_unescape("\\\0", 2, 0, &cp) == 0, "backslash NUL fails");
}

static void
test_key_is(void)
{
	static const struct {
		const char	*raw, *name;
		int		 want;
	} cases[] = {
		{ "payload", "payload", 1 },
		{ "\\u0070ayload", "payload", 1 },
		{ "pay\\u006Coad", "payload", 1 },
		{ "\\u0070\\u0061\\u0079\\u006c\\u006f\\u0061\\u0064",
		    "payload", 1 },
		{ "payloa", "payload", 0 },
		{ "payloadx", "payload", 0 },
		{ "Payload", "payload", 0 },
		{ "payload\\u0000", "payload", 0 },
		{ "pay\\u0000load", "payload", 0 },
		{ "payload\\", "payload", 0 },
		{ "payloa\\u006", "payload", 0 },
		{ "", "", 1 },
		{ "", "a", 0 },
		{ "a", "", 0 },
		{ "\\\"", "\"", 1 },
		{ "\\\\", "\\", 1 },
		{ "\\/a", "/a", 1 },
		{ "\\n\\t", "\n\t", 1 },
		{ "caf\\u00e9", "caf\xc3\xa9", 1 },
		{ "caf\xc3\xa9", "caf\xc3\xa9", 1 },
		{ "caf\\u00e9", "cafe", 0 },
		{ "\\u4e2d", "\xe4\xb8\xad", 1 },
		{ "\\ud83d\\ude00", "\xf0\x9f\x98\x80", 1 },
		{ "\\ud83d", "\xed\xa0\xbd", 0 },	/* no CESU-8 */
		{ "\\ud83d\\ude00", "\xf0\x9f\x98", 0 },
	};
	size_t i, len;
	char *k;

	for (i = 0; i < NCASES(cases); i++) {
		k = copy_str(cases[i].raw, &len);
		is_int(jscan_key_is(k, len, cases[i].name), cases[i].want,
		    "key [%s] %s \"%s\"", show(cases[i].raw), cases[i].want ?
		    "is" : "is not", show(cases[i].name));
		free(k);
	}
	ok(jscan_key_is("a\0", 2, "a") == 0, "a raw NUL never matches");
}

static void
test_member_span(void)
{
	static const struct {
		const char	*text, *name;
		const char	*want;		/* the value, NULL: -1 */
	} cases[] = {
		{ "{\"kind\":\"a\",\"payload\":{\"x\":1}}", "payload",
		    "{\"x\":1}" },
		{ "{\"kind\":\"a\",\"payload\":{\"x\":1}}", "kind", "\"a\"" },
		{ " \n{ \"payload\" : [ 1 , 2 ] , \"k\" : 1 }\t", "payload",
		    "[ 1 , 2 ]" },
		{ "{\"k\" :1 , \"payload\"\r\n:\r\n{ }\r\n}", "payload",
		    "{ }" },
		/* Every value type as the member. */
		{ "{\"a\":true,\"p\":false}", "p", "false" },
		{ "{\"p\":null}", "p", "null" },
		{ "{\"p\":-0.5e-3}", "p", "-0.5e-3" },
		{ "{\"p\":12345678901234567890123}", "p",
		    "12345678901234567890123" },
		{ "{\"p\":\"s\\\"},\\\\\"}", "p", "\"s\\\"},\\\\\"" },
		{ "{\"p\":{},\"q\":1}", "p", "{}" },
		{ "{\"p\":[[{}],[\"]\"]]}", "p", "[[{}],[\"]\"]]" },
		/* Only the top level counts, and only names, never values. */
		{ "{\"a\":{\"payload\":1}}", "payload", NULL },
		{ "{\"a\":{\"payload\":1},\"payload\":2}", "payload", "2" },
		{ "{\"a\":[{\"payload\":1}],\"payload\":3}", "payload", "3" },
		{ "{\"a\":\"\\\"payload\\\":1\"}", "payload", NULL },
		{ "{\"payload\\\"\":1}", "payload", NULL },
		{ "{\"payloadx\":1,\"xpayload\":2,\"payload\":4}", "payload",
		    "4" },
		/* Duplicates: the first one. */
		{ "{\"p\":1,\"p\":2}", "p", "1" },
		{ "{\"\\u0070\":1,\"p\":2}", "p", "1" },
		/* Escaped names equal to the one wanted. */
		{ "{\"\\u0070ayload\":{\"y\":2}}", "payload", "{\"y\":2}" },
		{ "{\"x\":0,\"pay\\u006coad\":[]}", "payload", "[]" },
		{ "{\"caf\\u00e9\":1}", "caf\xc3\xa9", "1" },
		{ "{\"p\\u0000\":1}", "p", NULL },
		/* Not an object, or no such member. */
		{ "", "p", NULL },
		{ " \t\r\n", "p", NULL },
		{ "{}", "p", NULL },
		{ "{ }", "p", NULL },
		{ "[]", "p", NULL },
		{ "[{\"p\":1}]", "p", NULL },
		{ "\"p\"", "p", NULL },
		{ "{\"a\":1}", "p", NULL },
		/* Malformed before the member is found. */
		{ "{", "p", NULL },
		{ "{\"p", "p", NULL },
		{ "{\"p\"", "p", NULL },
		{ "{\"p\":", "p", NULL },
		{ "{\"p\" 1}", "p", NULL },
		{ "{\"p\":\"abc", "p", NULL },
		{ "{\"a\":1 \"p\":2}", "p", NULL },
		{ "{\"a\":1,}", "p", NULL },
		{ "{\"a\":}", "p", NULL },
		{ "{p:1}", "p", NULL },
		{ "{,\"p\":1}", "p", NULL },
	};
	const size_t unset = 7777;
	size_t i, len, start, end;
	char *s;
	int rc;

	for (i = 0; i < NCASES(cases); i++) {
		s = copy_str(cases[i].text, &len);
		start = end = unset;
		rc = jscan_member_span(s, len, cases[i].name, &start, &end);
		is_span(cases[i].name, cases[i].text, rc == 0, start, end,
		    cases[i].want);
		if (rc != 0)
			ok(rc == -1 && start == unset && end == unset,
			    "-1, start and end untouched");
		free(s);
	}
}

/*
 * Every prefix of a valid object: the member is found exactly when the
 * prefix holds all of its value, and then at the same place.
 */
static void
test_prefixes(void)
{
	const char *text = "{\"a\":[1,{\"b\":\"x\\\"\"}],\"c\\u0064\":\"\\ud83d"
	    "\\ude00\",\"payload\":{\"q\":[true,null,-1e9]}, \"z\":0}";
	const char *want = "{\"q\":[true,null,-1e9]}";
	size_t len = strlen(text), vstart, vend, m, start, end;
	int bad = 0;
	char *s;

	vstart = (size_t)(strstr(text, want) - text);
	vend = vstart + strlen(want);
	for (m = 0; m <= len; m++) {
		s = copy(text, m);
		start = end = 0;
		if (jscan_member_span(s, m, "payload", &start, &end) ==
		    (m >= vend ? 0 : -1) && (m < vend || (start == vstart &&
		    end == vend)))
			free(s);
		else {
			free(s);
			if (bad++ == 0)
				printf("# prefix of %zu bytes\n", m);
		}
	}
	is_int(bad, 0, "all %zu prefixes: found only when complete", len + 1);
	for (m = 0, bad = 0; m <= len; m++) {
		s = copy(text, m);
		if ((jscan_skip_value(s, m, 0) != 0) != (m == len))
			bad++;
		free(s);
	}
	is_int(bad, 0, "skip_value: only the whole object is a value");
}

/* jscan_ws: the four JSON white space bytes, nothing else. */
static void
test_ws(void)
{
	size_t len;
	char *s = copy_str(" \t\r\nx", &len);

	is_int(jscan_ws(s, len, 0), 4, "ws: space, tab, CR, LF skipped");
	is_int(jscan_ws(s, len, 4), 4, "ws: stops at a token");
	is_int(jscan_ws(s, 3, 0), 3, "ws: stops at the length");
	is_int(jscan_ws(s, len, 9), 9, "ws: past the length stays put");
	free(s);
	s = copy_str("\f\v\xc2\xa0", &len);
	is_int(jscan_ws(s, len, 0), 0, "ws: form feed, VT, NBSP are not");
	free(s);
}

/* A decoded string against its expected bytes (want_len -1: refused). */
static void
decoded(const char *text, size_t cap, const char *want, long want_len)
{
	char out[64];
	size_t len;
	char *s = copy_str(text, &len);
	long n = jscan_string_decode(s, len, 0, out, cap);

	if (want_len < 0)
		is_int(n, -1, "decode %s (cap %zu): refused", show(text), cap);
	else
		ok(n == want_len && memcmp(out, want, (size_t)n) == 0,
		    "decode %s (cap %zu): %ld bytes", show(text), cap, n);
	free(s);
}

static void
test_string_decode(void)
{
	decoded("\"\"", 0, "", 0);
	decoded("\"abc\"", 3, "abc", 3);
	decoded("\"abc\"", 2, NULL, -1);
	decoded("\"a\\\"b\\\\\\/\\n\"", 6, "a\"b\\/\n", 6);
	decoded("\"\\u00e9\\u4e2d\\ud83d\\ude00\"", 9,
	    "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80", 9);
	decoded("\"\\ud83d\\ude00\"", 3, NULL, -1);
	decoded("\"x\\u0000y\"", 3, "x\0y", 3);
	decoded("\"\xc3\xa9\"", 2, "\xc3\xa9", 2);
	decoded("\"\\ud800\"", 8, NULL, -1);
	decoded("\"\\q\"", 8, NULL, -1);
	decoded("\"abc", 8, NULL, -1);
	decoded("\"ab\\", 8, NULL, -1);
	decoded("abc\"", 8, NULL, -1);
	decoded("\"a\" trailing", 8, "a", 1);
}

int
main(void)
{
	test_skip_string();
	test_skip_value();
	test_unescape();
	test_key_is();
	test_member_span();
	test_prefixes();
	test_ws();
	test_string_decode();
	return done_testing();
}
