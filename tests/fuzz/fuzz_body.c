/*
 * fuzz_body.c: libFuzzer target for request parsing (jsonbody.c, api.c):
 * the POST body validator jsonbody_parse_event(), and on the same bytes
 * the jsonb length model jsonbody_number_len() and
 * jsonbody_rendered_len(), the id parser api_parse_id() and the
 * Content-Type check api_is_json_type().
 *
 * The bytes are handed over in a copy that ends right before an unmapped
 * page (fuzz_guard_copy), as the functions take a length and promise not
 * to need a NUL: a read past the end is a SIGSEGV, even inside libc.
 * Invariants checked (abort() if broken): the body validator's verdict is
 * jansson's (JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, no NUL
 * byte, nested at most JSONBODY_MAX_DEPTH deep, an object with a
 * non-empty string kind and an object payload), but for payloads whose
 * jsonb output jsonbody_rendered_len() refuses; an accepted body's kind
 * is jansson's, and the payload handed to the database is a piece of the
 * body, "{...}", that parses by itself to the same JSON object as the
 * "payload" member jansson saw, its jsonb output 2..JSONBODY_MAX_RENDERED
 * bytes; no tree is handed back; a number length is only given for a
 * JSON number token (jansson reads the same bytes as a number, or as one
 * past a double's range) and is at least 1; an accepted id is
 * 1..2^63-1 and spells the input without its leading zeros.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "events/api.h"
#include "events/jsonbody.h"
#include "util/jscan.h"
#include "fuzz.h"
#include "fuzz_json.h"

/* The flags jsonbody_parse_event() loads a body with. */
#define BODY_JSON_FLAGS	(JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL)

/* An accepted body: its kind and payload are jansson's. */
static void
check_accepted(const char *body, size_t size, const json_t *k,
    const json_t *p, const char *kind, const char *payload)
{
	json_t *alone;
	int64_t rendered;
	size_t plen;

	if (kind == NULL || kind[0] == '\0' || payload == NULL ||
	    strlen(kind) != json_string_length(k) ||
	    strcmp(kind, json_string_value(k)) != 0)
		abort();
	/* The client's own bytes of the payload member, and only them. */
	plen = strlen(payload);
	if (plen < 2 || payload[0] != '{' || payload[plen - 1] != '}' ||
	    memmem(body, size, payload, plen) == NULL)
		abort();
	alone = json_loadb(payload, plen, BODY_JSON_FLAGS, NULL);
	if (alone == NULL || !json_equal(alone, p))
		abort();
	json_decref(alone);
	rendered = jsonbody_rendered_len(payload, plen);
	if (rendered < 2 || rendered > JSONBODY_MAX_RENDERED)
		abort();
}

static void
check_event(const char *body, size_t size)
{
	json_t *root = (json_t *)&root, *want = NULL, *k, *p;
	const char *kind = NULL;
	char *payload = NULL;
	size_t start, end;
	int64_t rendered;
	int rc, expect;

	rc = jsonbody_parse_event(body, size, &root, &kind, &payload);
	if (root != NULL)
		abort();
	if (memchr(body, '\0', size) == NULL)
		want = json_loadb(body, size, BODY_JSON_FLAGS, NULL);
	k = json_object_get(want, "kind");
	p = json_object_get(want, "payload");
	expect = want != NULL && json_is_object(want) &&
	    fuzz_json_depth(want) <= JSONBODY_MAX_DEPTH && json_is_string(k) &&
	    json_string_length(k) > 0 && json_is_object(p);
	if (rc == 0 && !expect)
		abort();
	if (rc == 0)
		check_accepted(body, size, k, p, kind, payload);
	else if (expect) {
		/* Refused, though jansson reads it: only for what jsonb
		 * cannot store or print. */
		if (jscan_member_span(body, size, "payload", &start,
		    &end) == -1)
			abort();
		rendered = jsonbody_rendered_len(body + start, end - start);
		if (rendered >= 0 && rendered <= JSONBODY_MAX_RENDERED)
			abort();
	}
	free(payload);
	json_decref(want);
}

static void
check_number(const char *s, size_t size)
{
	json_error_t err;
	json_t *v;
	int64_t len = jsonbody_number_len(s, size);

	(void)jsonbody_rendered_len(s, size);	/* any bytes: no crash */
	if (len == -1)
		return;
	if (len < 1 || memchr(s, '\0', size) != NULL)
		abort();
	v = json_loadb(s, size, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL,
	    &err);
	if (v == NULL ? strstr(err.text, "overflow") == NULL :
	    !json_is_number(v))
		abort();
	json_decref(v);
}

static void
check_id(const char *s, size_t size)
{
	char buf[32];
	int64_t id = -1;
	size_t i = 0;

	if (api_parse_id(s, size, &id) == -1)
		return;
	if (id < 1)
		abort();
	while (i < size && s[i] == '0')
		i++;
	snprintf(buf, sizeof(buf), "%" PRId64, id);
	if (strlen(buf) != size - i || memcmp(buf, s + i, size - i) != 0)
		abort();
}

static void
check_type(const uint8_t *data, size_t size)
{
	char *ct;

	/* A header value is a C string: cut at the first NUL like FastCGI. */
	if ((ct = malloc(size + 1)) == NULL)
		abort();
	memcpy(ct, data, size);
	ct[size] = '\0';
	if (api_is_json_type(ct) && strncasecmp(ct + strspn(ct, " \t"),
	    "application/json", 16) != 0)
		abort();
	free(ct);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_guard g;
	const char *body;

	body = fuzz_guard_copy(data, size, &g);
	check_event(body, size);
	check_number(body, size);
	check_id(body, size);
	fuzz_guard_free(&g);
	check_type(data, size);
	return 0;
}
