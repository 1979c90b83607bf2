/*
 * test_jsonbody.c: the POST /events body checks (jsonbody.c): nesting,
 * the strict parse, and what PostgreSQL's jsonb makes of a payload: each
 * number's range and printed length, the whole payload's printed length
 * and its limit, on both sides of every bound. The expected lengths were
 * read from PostgreSQL 15 (length(x::jsonb::text)); the integration test
 * test_client_bytes.py checks the same rules against a live server.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "events/jsonbody.h"
#include "tap.h"

static void
event(const char *body, int want_rc, const char *want_kind,
    const char *want_payload)
{
	struct json_t *root = NULL;
	const char *kind = NULL;
	char *payload = NULL;
	int rc;

	rc = jsonbody_parse_event(body, strlen(body), &root, &kind, &payload);
	is_int(rc, want_rc, "body %s", body);
	if (want_rc == 0) {
		is_str(kind, want_kind, "kind of %s", body);
		is_str(payload, want_payload, "payload text of %s", body);
	}
	free(payload);
	json_decref(root);
}

/* A body whose payload nests n - 2 arrays: n levels with the body's. */
static char *
nested_body(int n)
{
	char *b = malloc((size_t)n * 2 + 64), *p;
	int i;

	if (b == NULL)
		abort();
	p = b + sprintf(b, "{\"kind\":\"k\",\"payload\":{\"a\":");
	for (i = 0; i < n - 2; i++)
		*p++ = '[';
	for (i = 0; i < n - 2; i++)
		*p++ = ']';
	strcpy(p, "}}");
	return b;
}

static void
test_depth(void)
{
	char *b, *want;

	/* The payload is what follows {"kind":"k","payload": (22 bytes). */
	b = nested_body(JSONBODY_MAX_DEPTH);
	if ((want = strdup(b + 22)) == NULL)
		abort();
	want[strlen(want) - 1] = '\0';
	event(b, 0, "k", want);
	free(want);
	free(b);
	b = nested_body(JSONBODY_MAX_DEPTH + 1);
	event(b, -1, NULL, NULL);
	free(b);
	b = nested_body(10000);
	event(b, -1, NULL, NULL);
	free(b);
	event("{\"kind\":\"[[[[\",\"payload\":{}}", 0, "[[[[", "{}");
	event("{\"kind\":\"\\\"[[\",\"payload\":{}}", 0, "\"[[", "{}");
}

static void
test_event_body(void)
{
	event("{\"kind\":\"a\",\"payload\":{\"x\":1}}", 0, "a", "{\"x\":1}");
	event(" { \"payload\" : { \"n\": 0.1, \"b\": 1.5e-7, \"e\": 1E2 } ,"
	    " \"kind\":\"k\" } ", 0, "k",
	    "{ \"n\": 0.1, \"b\": 1.5e-7, \"e\": 1E2 }");
	event("{\"kind\":\"a\",\"payload\":{\"big\":12345678901234567890123}}",
	    0, "a", "{\"big\":12345678901234567890123}");
	event("{\"x\":[1,{\"payload\":2}],\"kind\":\"a\",\"pay\\u006coad\":"
	    "{\"s\":\"}\\\"]\"}}", 0, "a", "{\"s\":\"}\\\"]\"}");
	event("{\"kind\":\"a\",\"payload\":{},\"extra\":true}", 0, "a", "{}");
	event("{\"kind\":\"\",\"payload\":{}}", -1, NULL, NULL);
	event("{\"kind\":1,\"payload\":{}}", -1, NULL, NULL);
	event("{\"kind\":\"a\",\"payload\":[]}", -1, NULL, NULL);
	event("{\"kind\":\"a\",\"payload\":null}", -1, NULL, NULL);
	event("{\"kind\":\"a\"}", -1, NULL, NULL);
	event("{\"kind\":\"a\",\"payload\":{},\"kind\":\"b\"}", -1, NULL, NULL);
	event("{\"kind\":\"a\",\"payload\":{\"x\":\"\\u0000\"}}", -1, NULL,
	    NULL);
	event("{\"kind\":\"a\",\"payload\":{\"x\":\"\xff\"}}", -1, NULL, NULL);
	event("{\"kind\":\"a\",\"payload\":{}", -1, NULL, NULL);
	event("[]", -1, NULL, NULL);
	/* Accepted by jansson, refused or unreadable in jsonb. */
	event("{\"kind\":\"a\",\"payload\":{\"a\":1e-16384}}", -1, NULL,
	    NULL);
	event("{\"kind\":\"a\",\"payload\":{\"a\":1e-16383}}", 0, "a",
	    "{\"a\":1e-16383}");
	event("{\"kind\":\"a\",\"payload\":{\"a\":[[[-9.99e-16381]]]}}", 0,
	    "a", "{\"a\":[[[-9.99e-16381]]]}");
	event("{\"kind\":\"a\",\"payload\":{\"a\":[[[9.99e-16383]]]}}", -1,
	    NULL, NULL);
	event("{\"kind\":\"a\",\"payload\":{\"a\":\"\\ud800\"}}", -1, NULL,
	    NULL);
	/* Only the payload is stored as jsonb: the kind is text. */
	event("{\"kind\":\"a\",\"payload\":{},\"x\":1e-16384}", 0, "a",
	    "{}");
}


/* A number token and what PostgreSQL 15 printed for it (-1: refused). */
struct num_case {
	const char	*token;
	int64_t		 len;
};

static const struct num_case num_cases[] = {
	{ "0", 1 }, { "-0", 1 }, { "0.0", 3 }, { "-0.0", 3 }, { "1.50", 4 },
	{ "1e2", 3 }, { "1E+2", 3 }, { "1.0e1", 2 }, { "0.001e3", 1 },
	{ "123.456e-1", 7 }, { "-1e-2", 5 }, { "12e-1", 3 }, { "1e-0", 1 },
	{ "100e-2", 4 }, { "5e-5", 7 }, { "0.5e1", 1 }, { "0.05e1", 3 },
	{ "99999e-2", 6 }, { "1.7976931348623157e308", 309 },
	{ "123456789012345678901234567890", 30 },
	/* digits after the point: at most 16383 */
	{ "1e-16383", 16385 }, { "-1e-16383", 16386 }, { "1e-16384", -1 },
	{ "0e-16383", 16385 }, { "0e-16384", -1 }, { "9.99e-16381", 16385 },
	{ "9.99e-16383", -1 }, { "-9.99e-16382", -1 },
	/* digits before the point: at most 131072 */
	{ "1e131071", 131072 }, { "-1e131071", 131073 }, { "1e131072", -1 },
	{ "9.9e131070", 131071 }, { "0.1e131072", 131072 },
	{ "10e131071", -1 }, { "0.01e131073", 131072 },
	/* the exponent itself: |e| < INT_MAX / 2, even for zero */
	{ "0e1073741822", 1 }, { "0e1073741823", -1 }, { "0e-1073741823", -1 },
	{ "1e1073741822", -1 }, { "1e99999999999999999999", -1 },
	{ "0e+000000000000000000000000005", 1 },
	/* not JSON numbers */
	{ "", -1 }, { "-", -1 }, { "01", -1 }, { "-01", -1 }, { "1.", -1 },
	{ ".5", -1 }, { "1e", -1 }, { "1e+", -1 }, { "+1", -1 }, { "1.5.2", -1 },
	{ "0x1", -1 }, { "1 ", -1 }, { "--1", -1 }, { "NaN", -1 },
	{ "Infinity", -1 }, { "1e5e5", -1 }, { "1.e5", -1 }, { "-.5", -1 },
};

/* "0." followed by zeros and a 1: d digits after the point. */
static char *
written_out(int d, int neg)
{
	char *s = malloc((size_t)d + 4), *p = s;

	if (s == NULL)
		return NULL;
	if (neg)
		*p++ = '-';
	*p++ = '0';
	*p++ = '.';
	memset(p, '0', (size_t)d - 1);
	p[d - 1] = '1';
	p[d] = '\0';
	return s;
}

static void
test_numbers(void)
{
	size_t i;
	char *s;

	for (i = 0; i < sizeof(num_cases) / sizeof(num_cases[0]); i++)
		is_int(jsonbody_number_len(num_cases[i].token,
		    strlen(num_cases[i].token)), num_cases[i].len,
		    "number \"%s\"", num_cases[i].token);
	s = written_out(16383, 0);
	is_int(jsonbody_number_len(s, strlen(s)), 16385,
	    "0.000...01 written out, 16383 digits after the point");
	free(s);
	s = written_out(16384, 1);
	is_int(jsonbody_number_len(s, strlen(s)), -1,
	    "-0.000...01 written out, 16384 digits after the point");
	free(s);
	is_int(jsonbody_number_len("1e-16383x", 8), 16385,
	    "only n bytes are read");
}

/*
 * Reference: the plain-notation text built digit by digit (shift the
 * point, pad, strip leading zeros), as numeric_out prints it; its length
 * or -1 past numeric's limits.
 */
static int64_t
ref_number_len(const char *ip, const char *fp, int neg, long exp)
{
	size_t ni = strlen(ip), nf = strlen(fp), nd = ni + nf;
	long point = (long)ni + exp, scale = (long)nf - exp, lead, i, len;
	char *d;
	int nonzero = 0;

	if (scale < 0)
		scale = 0;
	if (scale > 16383)
		return -1;
	/* digits with the point at index `point`, padded on both sides */
	lead = point < 1 ? 1 - point : 0;
	len = lead + (long)nd + (point > (long)nd ? point - (long)nd : 0) +
	    scale;
	if ((d = calloc((size_t)len + 1, 1)) == NULL)
		return -2;
	memset(d, '0', (size_t)len);
	memcpy(d + lead, ip, ni);
	memcpy(d + lead + ni, fp, nf);
	point += lead;
	for (i = 0; i < (long)nd + lead; i++)
		if (d[i] != '0')
			nonzero = 1;
	for (i = 0; i < point - 1 && d[i] == '0'; i++)
		;
	/* d[i..point) is the integer part, then `scale` digits */
	len = point - i + (scale > 0 ? 1 + scale : 0) + (neg && nonzero);
	if (point - i > 131072)
		len = -1;
	free(d);
	return len;
}

static void
rand_digits(char *s, int n, int lead_nonzero)
{
	int i;

	for (i = 0; i < n; i++)
		s[i] = (char)('0' + (i == 0 && lead_nonzero ? 1 + rand() % 9 :
		    rand() % 10));
	s[n] = '\0';
}

/* Seeded random numbers near every bound: the model agrees with the
 * reference on each. */
static void
test_numbers_random(void)
{
	char ip[24], fp[24], tok[80];
	int i, bad = 0, ni, nf, neg;
	long exp, centre;
	int64_t got, want;

	srand(20260901);
	for (i = 0; i < 4000; i++) {
		ni = 1 + rand() % 20;
		nf = rand() % 3 == 0 ? 0 : 1 + rand() % 20;
		neg = rand() % 2;
		if (rand() % 4 == 0)
			strcpy(ip, "0");
		else
			rand_digits(ip, ni, 1);
		rand_digits(fp, nf, 0);
		if (rand() % 5 == 0)
			memset(fp, '0', (size_t)nf);
		centre = i % 3 == 0 ? -16383 : i % 3 == 1 ? 131071 : 0;
		exp = centre + rand() % 61 - 30;
		snprintf(tok, sizeof(tok), "%s%s%s%s%s%ld", neg ? "-" : "", ip,
		    nf ? "." : "", fp, rand() % 2 ? "e" : "E", exp);
		got = jsonbody_number_len(tok, strlen(tok));
		want = ref_number_len(ip, fp, neg, exp);
		if (got != want) {
			printf("# %s: got %lld, want %lld\n", tok,
			    (long long)got, (long long)want);
			bad++;
		}
	}
	is_int(bad, 0, "4000 seeded random numbers near 1e-16383, 1e131071 "
	    "and 1: the model agrees with a digit-by-digit reference");
}

struct text_case {
	const char	*text;
	int64_t		 len;
};

/* JSON text and the octet_length of its jsonb output in PostgreSQL 15. */
static const struct text_case text_cases[] = {
	{ "{\"a\":1}", 8 }, { "{}", 2 }, { "[]", 2 }, { "[1,2]", 6 },
	{ "{\"a\":[1,2],\"b\":{}}", 22 },
	{ " { \"a\" : [ 1 , 2 ] , \"b\" : { } } ", 22 },
	{ "{\"b\":1,\"a\":{\"c\":[[],{}]}}", 30 },
	{ "[\"\\u00e9\"]", 6 }, { "[\"\\/\"]", 5 }, { "[\"\\u0001\"]", 10 },
	{ "[\"\\n\"]", 6 }, { "[\"\\u000a\"]", 6 }, { "[\"\\u000b\"]", 10 },
	{ "[\"\\u0022\"]", 6 }, { "[\"\\u005c\"]", 6 },
	{ "[\"\\ud83d\\ude00\"]", 8 }, { "[\"\xc3\xa9\"]", 6 },
	{ "[\"\\u007f\"]", 5 }, { "[\"\\u0080\"]", 6 }, { "[\"\\u0800\"]", 7 },
	{ "[\"\\uffff\"]", 7 }, { "[\"\\b\\f\\r\\t\\\"\\\\\"]", 16 },
	{ "[true,false,null]", 19 },
	/* refused by jsonb */
	{ "[\"\\u0000\"]", -1 }, { "[\"\\ud800\"]", -1 },
	{ "[\"\\udc00\"]", -1 },
	{ "[\"\\ud800\\u0041\"]", -1 }, { "{\"a\":1e-16384}", -1 },
	/* malformed tokens */
	{ "[tru]", -1 }, { "[\"abc]", -1 }, { "[\"\\x\"]", -1 },
	{ "[\"a\tb\"]", -1 }, { "[\"\\u12\"]", -1 }, { "[nul", -1 },
	{ "[1x]", -1 }, { "[\"\\", -1 }, { "[@]", -1 },
};

static void
test_rendered_len(void)
{
	size_t i;

	for (i = 0; i < sizeof(text_cases) / sizeof(text_cases[0]); i++)
		is_int(jsonbody_rendered_len(text_cases[i].text,
		    strlen(text_cases[i].text)), text_cases[i].len,
		    "rendered %s", text_cases[i].text);
	is_int(jsonbody_rendered_len("[1]\"", 3), 3, "only n bytes are read");
}

/* {"kind":"k","payload":{"a":[<m> x 1e-16000],"s":"<k> x x"}} */
static char *
padded_body(int m, int k)
{
	size_t cap = (size_t)m * 9 + (size_t)k + 64;
	char *b = malloc(cap), *p;
	int i;

	if (b == NULL)
		return NULL;
	p = b + sprintf(b, "{\"kind\":\"k\",\"payload\":{\"a\":[");
	for (i = 0; i < m; i++)
		p += sprintf(p, "%s1e-16000", i ? "," : "");
	p += sprintf(p, "],\"s\":\"");
	memset(p, 'x', (size_t)k);
	p += k;
	strcpy(p, "\"}}");
	return b;
}

static int
accepts(const char *body)
{
	struct json_t *root = NULL;
	const char *kind = NULL;
	char *payload = NULL;
	int rc = jsonbody_parse_event(body, strlen(body), &root, &kind,
	    &payload);

	free(payload);
	json_decref(root);
	return rc == 0;
}

/*
 * The whole payload's limit, counted by hand: {"a": [ is 7, each
 * 1e-16000 prints 16002 ("0." and 16000 digits), ", " between them,
 * ], "s": " is 9, the string, "} is 2.
 */
static void
test_rendered_limit(void)
{
	const int m = 32;
	const long fixed = 7 + 16002L * m + 2L * (m - 1) + 9 + 2;
	const int k = (int)(JSONBODY_MAX_RENDERED - fixed);
	char *at = padded_body(m, k), *past = padded_body(m, k + 1);
	char *tiny, *p;
	int i;

	if (at == NULL || past == NULL)
		return;
	ok(k > 0 && strlen(at) < 65536, "a body under 64 KiB reaches the "
	    "limit (%d padding bytes)", k);
	/* The payload is what follows {"kind":"k","payload": (22 bytes). */
	is_int(jsonbody_rendered_len(at + 22, strlen(at) - 23),
	    JSONBODY_MAX_RENDERED, "payload prints exactly "
	    "JSONBODY_MAX_RENDERED bytes");
	ok(accepts(at), "exactly at the limit: accepted");
	ok(!accepts(past), "one byte past the limit: refused");
	free(at);
	free(past);

	/* 70 numbers 1e-16383 in a 660-byte body print as 1.1 MB. */
	tiny = malloc(1024);
	for (i = 31; tiny != NULL && i <= 70; i += 39) {
		p = tiny + sprintf(tiny, "{\"kind\":\"k\",\"payload\":{\"n\":[");
		for (int j = 0; j < i; j++)
			p += sprintf(p, "%s1e-16383", j ? "," : "");
		strcpy(p, "]}}");
		if (i == 31)
			ok(accepts(tiny), "31 x 1e-16383 (%zu-byte body, "
			    "prints 508 KiB): accepted", strlen(tiny));
		else
			ok(!accepts(tiny), "70 x 1e-16383 (%zu-byte body, "
			    "prints 1.1 MB): refused", strlen(tiny));
	}
	free(tiny);
}

/* 64 KiB of small numbers: jsonb's spacing grows it by half, no more. */
static void
test_many_small_numbers(void)
{
	char *b = malloc(65536 + 1), *p;
	size_t n;

	if (b == NULL)
		return;
	p = b + sprintf(b, "{\"kind\":\"k\",\"payload\":{\"n\":[0");
	while (p - b < 65536 - 8)
		p += sprintf(p, ",%d", (int)(p - b) % 10);
	strcpy(p, "]}}");
	n = strlen(b);
	ok(n <= 65536 && accepts(b), "a %zu-byte body of one-digit numbers "
	    "is accepted", n);
	free(b);
}

int
main(void)
{
	test_depth();
	test_event_body();
	test_numbers();
	test_numbers_random();
	test_rendered_len();
	test_rendered_limit();
	test_many_small_numbers();
	return done_testing();
}
