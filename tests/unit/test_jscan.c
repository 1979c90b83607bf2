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

static void
skip_string(const char *text, size_t i, size_t want)
{
	size_t len = strlen(text);
	char *s = copy(text, len);

	is_int(jscan_skip_string(s, len, i), want, "skip_string %s at %zu",
	    show(text), i);
	free(s);
}

static void
test_skip_string(void)
{
	skip_string("\"\"", 0, 2);
	skip_string("\"abc\"", 0, 5);
	skip_string("\"abc\" tail", 0, 5);
	skip_string("x\"y\"z", 1, 4);
	skip_string("\"a\\\"b\"", 0, 6);
	skip_string("\"a\\\\\"", 0, 5);
	skip_string("\"\\u0022\"", 0, 8);
	skip_string("\"{[,:]}\"", 0, 8);
	skip_string("\"", 0, 0);
	skip_string("\"abc", 0, 0);
	skip_string("\"abc\\", 0, 0);
	skip_string("\"abc\\\"", 0, 0);
	skip_string("abc", 0, 0);
	skip_string("\"a\"", 3, 0);
	skip_string("\"a\"", 7, 0);
	skip_string("", 0, 0);
	/* Not a validator: a raw NUL inside is stepped over. */
	ok(jscan_skip_string("\"a\0b\"", 5, 0) == 5, "NUL inside a string");
}

/* want_text: the value's text, or NULL for a failure. */
static void
skip_value(const char *text, size_t i, const char *want_text)
{
	size_t len = strlen(text), got, vstart = i;
	char *s = copy(text, len);

	got = jscan_skip_value(s, len, i);
	while (vstart < len && strchr(" \t\r\n", text[vstart]) != NULL)
		vstart++;
	if (want_text == NULL)
		is_int(got, 0, "skip_value fails on [%s] at %zu", show(text), i);
	else if (ok(got > vstart && got <= len, "skip_value [%s] at %zu: "
	    "%zu within the text", show(text), i, got))
		ok(got - vstart == strlen(want_text) && memcmp(text + vstart,
		    want_text, got - vstart) == 0, "skip_value [%s] is [%s] "
		    "(got %zu bytes)", show(text), show(want_text),
		    got - vstart);
	free(s);
}

static void
test_skip_value(void)
{
	char deep[2 * 1000];
	size_t k;

	/* Every value type, alone and followed by more text. */
	skip_value("true", 0, "true");
	skip_value("false,", 0, "false");
	skip_value("null}", 0, "null");
	skip_value("0", 0, "0");
	skip_value("-12.5e+3]", 0, "-12.5e+3");
	skip_value("1E-2 ", 0, "1E-2");
	skip_value("\"s\"", 0, "\"s\"");
	skip_value("\"}]\\\",\"", 0, "\"}]\\\",\"");
	skip_value("{}", 0, "{}");
	skip_value("[]", 0, "[]");
	skip_value(" \t\r\n[ 1 , 2 ] \n", 0, "[ 1 , 2 ]");
	skip_value("{\"a\":[1,{\"b\":\"]}\"}],\"c\":null} ,", 0,
	    "{\"a\":[1,{\"b\":\"]}\"}],\"c\":null}");
	skip_value("[[],[[]],{}]]", 0, "[[],[[]],{}]");
	skip_value("1 2", 0, "1");
	skip_value("{\"k\":1}{}", 0, "{\"k\":1}");
	skip_value("\"k\":[1]", 4, "[1]");
	skip_value("\"k\":  7,", 4, "7");
	/* Nothing, or no value where one should start. */
	skip_value("", 0, NULL);
	skip_value(" \t\r\n", 0, NULL);
	skip_value("[1]", 3, NULL);
	skip_value("[1]", 9, NULL);
	skip_value(",1", 0, NULL);
	skip_value(":1", 0, NULL);
	skip_value("}", 0, NULL);
	skip_value("]", 0, NULL);
	/* Cut off inside. */
	skip_value("[1,2", 0, NULL);
	skip_value("{", 0, NULL);
	skip_value("{\"a\":\"b", 0, NULL);
	skip_value("[\"\\", 0, NULL);
	skip_value("\"abc", 0, NULL);
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

/* want_next 0: the escape fails. */
static void
unescape(const char *text, size_t want_next, uint32_t want_cp)
{
	size_t len = strlen(text), got;
	uint32_t cp = 0xfffffff;
	char *s = copy(text, len);

	got = jscan_unescape(s, len, 0, &cp);
	is_int(got, want_next, "unescape %s: end", text);
	if (want_next != 0)
		is_int(cp, want_cp, "unescape %s: code point", text);
	else
		is_int(cp, 0xfffffff, "unescape %s: *cp untouched", text);
	free(s);
}

static void
test_unescape(void)
{
	unescape("\\\"", 2, '"');
	unescape("\\\\", 2, '\\');
	unescape("\\/", 2, '/');
	unescape("\\b", 2, '\b');
	unescape("\\f", 2, '\f');
	unescape("\\n", 2, '\n');
	unescape("\\r", 2, '\r');
	unescape("\\tX", 2, '\t');
	unescape("\\u0041", 6, 'A');
	unescape("\\u00e9\"", 6, 0xe9);
	unescape("\\u00E9", 6, 0xe9);
	unescape("\\uFFFF", 6, 0xffff);
	unescape("\\u0000", 6, 0);
	unescape("\\ud83d\\ude00", 12, 0x1f600);
	unescape("\\uD83D\\uDE00\"", 12, 0x1f600);
	unescape("\\udbff\\udfff", 12, 0x10ffff);
	unescape("\\ud800\\udc00", 12, 0x10000);
	/* Lone halves: jansson refuses them. */
	unescape("\\ud800", 0, 0);
	unescape("\\ud800\"", 0, 0);
	unescape("\\ud800\\u0041", 0, 0);
	unescape("\\ud800\\ud800", 0, 0);
	unescape("\\ud800\\ue000", 0, 0);
	unescape("\\udbff\\udbff", 0, 0);
	unescape("\\ud800\\n", 0, 0);
	unescape("\\ud800\\udc0", 0, 0);
	unescape("\\udc00", 0, 0);
	unescape("\\udfff\\ud800", 0, 0);
	/* Cut off, or not an escape. */
	unescape("\\", 0, 0);
	unescape("\\u", 0, 0);
	unescape("\\u004", 0, 0);
	unescape("\\u004g", 0, 0);
	unescape("\\u 041", 0, 0);
	unescape("\\x", 0, 0);
	unescape("\\U0041", 0, 0);
	unescape("\\'", 0, 0);
	unescape("a", 0, 0);
	unescape("", 0, 0);
	ok(jscan_unescape("\\\0", 2, 0, &(uint32_t){ 0 }) == 0,
	    "backslash NUL fails");
}

static void
key_is(const char *raw, const char *name, int want)
{
	size_t len = strlen(raw);
	char *k = copy(raw, len);

	is_int(jscan_key_is(k, len, name), want, "key [%s] %s \"%s\"",
	    show(raw), want ? "is" : "is not", show(name));
	free(k);
}

static void
test_key_is(void)
{
	key_is("payload", "payload", 1);
	key_is("\\u0070ayload", "payload", 1);
	key_is("pay\\u006Coad", "payload", 1);
	key_is("\\u0070\\u0061\\u0079\\u006c\\u006f\\u0061\\u0064", "payload",
	    1);
	key_is("payloa", "payload", 0);
	key_is("payloadx", "payload", 0);
	key_is("Payload", "payload", 0);
	key_is("payload\\u0000", "payload", 0);
	key_is("pay\\u0000load", "payload", 0);
	key_is("payload\\", "payload", 0);
	key_is("payloa\\u006", "payload", 0);
	key_is("", "", 1);
	key_is("", "a", 0);
	key_is("a", "", 0);
	key_is("\\\"", "\"", 1);
	key_is("\\\\", "\\", 1);
	key_is("\\/a", "/a", 1);
	key_is("\\n\\t", "\n\t", 1);
	key_is("caf\\u00e9", "caf\xc3\xa9", 1);
	key_is("caf\xc3\xa9", "caf\xc3\xa9", 1);
	key_is("caf\\u00e9", "cafe", 0);
	key_is("\\u4e2d", "\xe4\xb8\xad", 1);
	key_is("\\ud83d\\ude00", "\xf0\x9f\x98\x80", 1);
	key_is("\\ud83d", "\xed\xa0\xbd", 0);	/* no CESU-8 */
	key_is("\\ud83d\\ude00", "\xf0\x9f\x98", 0);
	ok(jscan_key_is("a\0", 2, "a") == 0, "a raw NUL never matches");
}

/* want_value: the member's text, or NULL for -1. */
static void
span(const char *text, const char *name, const char *want_value)
{
	size_t len = strlen(text), start = 7777, end = 8888;
	char *s = copy(text, len);
	int rc;

	rc = jscan_member_span(s, len, name, &start, &end);
	if (want_value == NULL) {
		is_int(rc, -1, "no \"%s\" in [%s]", name, show(text));
		ok(start == 7777 && end == 8888, "spans untouched on failure");
	} else if (ok(rc == 0 && start <= end && end <= len, "\"%s\" in [%s]",
	    name, show(text)))
		ok(end - start == strlen(want_value) && memcmp(text + start,
		    want_value, end - start) == 0, "\"%s\" is [%s] (got "
		    "%zu..%zu)", name, show(want_value), start, end);
	free(s);
}

static void
test_member_span(void)
{
	span("{\"kind\":\"a\",\"payload\":{\"x\":1}}", "payload", "{\"x\":1}");
	span("{\"kind\":\"a\",\"payload\":{\"x\":1}}", "kind", "\"a\"");
	span(" \n{ \"payload\" : [ 1 , 2 ] , \"k\" : 1 }\t", "payload",
	    "[ 1 , 2 ]");
	span("{\"k\" :1 , \"payload\"\r\n:\r\n{ }\r\n}", "payload", "{ }");
	/* Every value type as the member. */
	span("{\"a\":true,\"p\":false}", "p", "false");
	span("{\"p\":null}", "p", "null");
	span("{\"p\":-0.5e-3}", "p", "-0.5e-3");
	span("{\"p\":12345678901234567890123}", "p",
	    "12345678901234567890123");
	span("{\"p\":\"s\\\"},\\\\\"}", "p", "\"s\\\"},\\\\\"");
	span("{\"p\":{},\"q\":1}", "p", "{}");
	span("{\"p\":[[{}],[\"]\"]]}", "p", "[[{}],[\"]\"]]");
	/* Only the top level counts, and only names, never values. */
	span("{\"a\":{\"payload\":1}}", "payload", NULL);
	span("{\"a\":{\"payload\":1},\"payload\":2}", "payload", "2");
	span("{\"a\":[{\"payload\":1}],\"payload\":3}", "payload", "3");
	span("{\"a\":\"\\\"payload\\\":1\"}", "payload", NULL);
	span("{\"payload\\\"\":1}", "payload", NULL);
	span("{\"payloadx\":1,\"xpayload\":2,\"payload\":4}", "payload", "4");
	/* Duplicates: the first one. */
	span("{\"p\":1,\"p\":2}", "p", "1");
	span("{\"\\u0070\":1,\"p\":2}", "p", "1");
	/* Escaped names equal to the one wanted. */
	span("{\"\\u0070ayload\":{\"y\":2}}", "payload", "{\"y\":2}");
	span("{\"x\":0,\"pay\\u006coad\":[]}", "payload", "[]");
	span("{\"caf\\u00e9\":1}", "caf\xc3\xa9", "1");
	span("{\"p\\u0000\":1}", "p", NULL);
	/* Not an object, or no such member. */
	span("", "p", NULL);
	span(" \t\r\n", "p", NULL);
	span("{}", "p", NULL);
	span("{ }", "p", NULL);
	span("[]", "p", NULL);
	span("[{\"p\":1}]", "p", NULL);
	span("\"p\"", "p", NULL);
	span("{\"a\":1}", "p", NULL);
	/* Malformed before the member is found. */
	span("{", "p", NULL);
	span("{\"p", "p", NULL);
	span("{\"p\"", "p", NULL);
	span("{\"p\":", "p", NULL);
	span("{\"p\" 1}", "p", NULL);
	span("{\"p\":\"abc", "p", NULL);
	span("{\"a\":1 \"p\":2}", "p", NULL);
	span("{\"a\":1,}", "p", NULL);
	span("{\"a\":}", "p", NULL);
	span("{p:1}", "p", NULL);
	span("{,\"p\":1}", "p", NULL);
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

int
main(void)
{
	test_skip_string();
	test_skip_value();
	test_unescape();
	test_key_is();
	test_member_span();
	test_prefixes();
	return done_testing();
}
