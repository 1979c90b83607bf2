/*
 * fuzz_jscan.c: libFuzzer target for the JSON span scanner (util/jscan.c):
 * jscan_skip_string(), jscan_skip_value(), jscan_unescape(),
 * jscan_key_is() and jscan_member_span(), each held to jansson.
 *
 * Input: one byte L, then min(L % 32, what is left) bytes of a member
 * name (cut at its first NUL: names are C strings), then the text. The
 * text is handed over in a copy that ends right before an unmapped page
 * (fuzz_guard_copy): the functions take a length and promise to read
 * nothing past it, even on bytes that are not JSON.
 *
 * Invariants checked (abort() if broken), on any text:
 * - every position returned is 0 (failure) or inside the text, past
 *   where the scan began; a string ends with '"'; an escape is 2, 6 or 12
 *   bytes and decodes to a Unicode scalar value (no surrogate, at most
 *   U+10FFFF); a member's span is a value by itself (skip_value agrees).
 * And where jansson accepts the text (no NUL byte in it, which jansson
 * may skip after a number: jsonbody.c refuses those first):
 * - skip_value() spans exactly the one value, white space around it;
 *   that span parses by itself to a value equal to jansson's;
 * - parsed as an object without duplicates, member_span() finds the name
 *   exactly when jansson has it, and the span parses to the same value;
 * - read as the inside of a string, key_is() matches exactly when
 *   jansson's decoding of it equals the name.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/jscan.h"
#include "fuzz.h"

#define FUZZ_NAME_MAX	32	/* name length is the first byte mod this */

static int
is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* 1 if s[from..to-1] is only JSON white space. */
static int
all_ws(const char *s, size_t from, size_t to)
{
	for (; from < to; from++)
		if (!is_ws(s[from]))
			return 0;
	return 1;
}

/* Parses n bytes alone as any JSON value and compares it with want. */
static int
same_value(const char *s, size_t n, const json_t *want)
{
	json_t *v = json_loadb(s, n, JSON_DECODE_ANY |
	    JSON_DECODE_INT_AS_REAL, NULL);
	int eq = v != NULL && json_equal(v, want);

	json_decref(v);
	return eq;
}

static void
check_strings_and_escapes(const char *s, size_t n)
{
	size_t i, r;
	uint32_t cp;

	for (i = 0; i < n; i++) {
		if (s[i] == '"') {
			r = jscan_skip_string(s, n, i);
			if (r != 0 && (r < i + 2 || r > n || s[r - 1] != '"'))
				abort();
		}
		if (s[i] == '\\') {
			cp = UINT32_MAX;
			r = jscan_unescape(s, n, i, &cp);
			if (r == 0)
				continue;
			if ((r != i + 2 && r != i + 6 && r != i + 12) || r > n ||
			    cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000))
				abort();
		}
	}
}

static void
check_value(const char *s, size_t n, int nul)
{
	json_t *v;
	size_t r, start = 0;

	r = jscan_skip_value(s, n, 0);
	if (r > n)
		abort();
	if (nul || (v = json_loadb(s, n, JSON_DECODE_ANY |
	    JSON_DECODE_INT_AS_REAL, NULL)) == NULL)
		return;
	while (start < n && is_ws(s[start]))
		start++;
	if (r <= start || !all_ws(s, r, n) || !same_value(s + start,
	    r - start, v))
		abort();
	json_decref(v);
}

static void
check_member(const char *s, size_t n, const char *name, int nul)
{
	size_t start = SIZE_MAX, end = SIZE_MAX;
	json_t *root, *want;
	int rc;

	rc = jscan_member_span(s, n, name, &start, &end);
	if (rc != 0 && rc != -1)
		abort();
	if (rc == -1 && (start != SIZE_MAX || end != SIZE_MAX))
		abort();
	if (rc == 0 && (start >= end || end > n ||
	    jscan_skip_value(s, n, start) != end))
		abort();
	if (nul || (root = json_loadb(s, n, JSON_REJECT_DUPLICATES |
	    JSON_DECODE_INT_AS_REAL, NULL)) == NULL)
		return;
	want = json_object_get(root, name);
	if (want == NULL ? rc != -1 :
	    rc != 0 || !same_value(s + start, end - start, want))
		abort();
	json_decref(root);
}

/* jansson's reading of s (n bytes) as the inside of a string, NUL too. */
static json_t *
as_string(const char *s, size_t n)
{
	char *quoted = malloc(n + 2);
	json_t *v;

	if (quoted == NULL)
		abort();
	quoted[0] = quoted[n + 1] = '"';
	memcpy(quoted + 1, s, n);
	v = json_loadb(quoted, n + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	free(quoted);
	return v;
}

static void
check_key(const char *s, size_t n, const char *name)
{
	size_t nlen = strlen(name);
	int is = jscan_key_is(s, n, name);
	json_t *v;

	if (is != 0 && is != 1)
		abort();
	if ((v = as_string(s, n)) == NULL)
		return;
	if (!json_is_string(v) || is != (json_string_length(v) == nlen &&
	    memcmp(json_string_value(v), name, nlen) == 0))
		abort();
	json_decref(v);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[FUZZ_NAME_MAX];
	size_t nlen, n;
	struct fuzz_guard g;
	const char *text;
	int nul;

	if (size == 0)
		return 0;
	nlen = data[0] % FUZZ_NAME_MAX;
	if (nlen > size - 1)
		nlen = size - 1;
	memcpy(name, data + 1, nlen);
	name[nlen] = '\0';		/* a NUL inside cuts it shorter */
	n = size - 1 - nlen;
	text = fuzz_guard_copy(data + 1 + nlen, n, &g);
	nul = memchr(text, '\0', n) != NULL;
	check_strings_and_escapes(text, n);
	check_value(text, n, nul);
	check_member(text, n, name, nul);
	check_key(text, n, name);
	fuzz_guard_free(&g);
	return 0;
}
