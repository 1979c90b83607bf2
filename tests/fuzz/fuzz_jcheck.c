/*
 * fuzz_jcheck.c: libFuzzer target for the strict JSON validator
 * (util/jcheck.c), held to jansson 2.14.
 *
 * Input: one control byte, then the text. Bit 0 of the control byte
 * sets ints_as_reals (JSON_DECODE_INT_AS_REAL), bits 1-6 the depth
 * limit (1..64). The text goes to jcheck_object() in a copy that ends
 * right before an unmapped page (fuzz_guard_copy), with a workspace of
 * exactly the sizes jcheck.h's macros give, in exact-size heap blocks
 * (ASan sees a write past them).
 *
 * Oracle (abort() if broken):
 * - the verdict is jansson's: jcheck accepts exactly when the text has
 *   no NUL byte (jansson skips one after a number or a literal; jcheck
 *   refuses it everywhere), json_loadb() with JSON_REJECT_DUPLICATES (and
 *   JSON_DECODE_INT_AS_REAL if set) accepts it, it is an object, and its
 *   containers nest no deeper than the limit; a rejection has a reason,
 *   never JCHECK_EROOM;
 * - an accepted text's members were reported once each, in jansson's
 *   order, with jansson's names; each value's kind is jansson's type, its
 *   span parses alone to an equal value, a number carries jansson's
 *   integer or real (the same bits), and a string decodes
 *   (jscan_string_decode) to jansson's bytes.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/jcheck.h"
#include "util/jscan.h"
#include "fuzz.h"
#include "fuzz_json.h"

struct seen {
	const char		*text;
	size_t			 n, count, cap;
	struct {
		char			*name;
		size_t			 len;
		struct jcheck_value	 v;
	}			*m;
};

static void
on_member(void *ctx, const char *name, size_t len, const struct jcheck_value *v)
{
	struct seen *s = ctx;

	if (s->count == s->cap || memchr(name, '\0', len) != NULL ||
	    v->start >= v->end || v->end > s->n)
		abort();
	if ((s->m[s->count].name = malloc(len + 1)) == NULL)
		abort();
	memcpy(s->m[s->count].name, name, len);
	s->m[s->count].len = len;
	s->m[s->count].v = *v;
	s->count++;
}

static int
kind_matches(enum jcheck_kind k, const json_t *v)
{
	switch (k) {
	case JCHECK_STRING:	return json_is_string(v);
	case JCHECK_NUMBER:	return json_is_number(v);
	case JCHECK_TRUE:	return json_is_true(v);
	case JCHECK_FALSE:	return json_is_false(v);
	case JCHECK_NULL:	return json_is_null(v);
	case JCHECK_OBJECT:	return json_is_object(v);
	case JCHECK_ARRAY:	return json_is_array(v);
	}
	return 0;
}

static void
check_value(const struct seen *s, size_t idx, const json_t *want, size_t flags)
{
	const struct jcheck_value *v = &s->m[idx].v;
	json_t *alone;
	char *buf;
	long len;

	if (!kind_matches(v->kind, want))
		abort();
	alone = json_loadb(s->text + v->start, v->end - v->start,
	    flags | JSON_DECODE_ANY, NULL);
	if (alone == NULL || !json_equal(alone, want))
		abort();
	json_decref(alone);
	if (v->kind == JCHECK_NUMBER && (v->is_int ? !json_is_integer(want) ||
	    v->i != json_integer_value(want) : !json_is_real(want) ||
	    !isfinite(v->r) || v->r != json_real_value(want) ||
	    signbit(v->r) != signbit(json_real_value(want))))
		abort();
	if (v->kind == JCHECK_STRING) {
		if ((buf = malloc(v->end - v->start)) == NULL)
			abort();
		len = jscan_string_decode(s->text, s->n, v->start, buf,
		    v->end - v->start);
		if (len < 0 || (size_t)len != json_string_length(want) ||
		    memcmp(buf, json_string_value(want), (size_t)len) != 0)
			abort();
		free(buf);
	}
}

static void
check_members(const struct seen *s, const json_t *root, size_t flags)
{
	const char *k;
	json_t *m;
	size_t i = 0;

	if (s->count != json_object_size(root))
		abort();
	json_object_foreach((json_t *)root, k, m) {
		if (strlen(k) != s->m[i].len || memcmp(k, s->m[i].name,
		    s->m[i].len) != 0)
			abort();
		check_value(s, i, m, flags);
		i++;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jcheck jc;
	struct fuzz_guard g;
	struct seen s;
	enum jcheck_err e;
	const char *text;
	json_t *root = NULL;
	size_t n, i, flags;
	int want;

	if (size < 1)
		return 0;
	n = size - 1;
	jc.ints_as_reals = data[0] & 1;
	jc.max_depth = 1 + (data[0] >> 1) % JCHECK_MAX_DEPTH;
	jc.nkeys = JCHECK_KEYS_MAX(n);
	jc.scratch_len = JCHECK_SCRATCH_MAX(n);
	jc.keys = malloc(jc.nkeys * sizeof(*jc.keys));
	jc.scratch = malloc(jc.scratch_len);
	s.count = 0;
	s.n = n;
	s.cap = n / 4 + 1;	/* a member takes 4 bytes at least */
	s.m = malloc(s.cap * sizeof(*s.m));
	if (jc.keys == NULL || jc.scratch == NULL || s.m == NULL)
		abort();
	jc.member = on_member;
	jc.ctx = &s;
	text = fuzz_guard_copy(data + 1, n, &g);
	s.text = text;

	e = jcheck_object(text, n, &jc);
	flags = JSON_REJECT_DUPLICATES |
	    (jc.ints_as_reals ? JSON_DECODE_INT_AS_REAL : 0);
	if (memchr(text, '\0', n) == NULL)
		root = json_loadb(text, n, flags, NULL);
	want = root != NULL && json_is_object(root) &&
	    fuzz_json_depth(root) <= jc.max_depth;
	if (e == JCHECK_EROOM || e > JCHECK_EROOM || want != (e == JCHECK_OK))
		abort();
	if (e == JCHECK_OK)
		check_members(&s, root, flags);

	json_decref(root);
	fuzz_guard_free(&g);
	for (i = 0; i < s.count; i++)
		free(s.m[i].name);
	free(s.m);
	free(jc.keys);
	free(jc.scratch);
	return 0;
}
