/*
 * test_jcheck.c: the strict JSON validator (util/jcheck.c) on both sides
 * of each of jansson's rules it keeps: the grammar, white space, UTF-8,
 * escapes and surrogates, NUL, duplicates (escaped, nested, in objects
 * small and large), integers at int64_t's edges, reals at a double's,
 * nesting at the limit; then the members it reports and its workspace.
 * Each text is handed over in a heap copy of exactly its length, with a
 * workspace of exactly the macros' sizes, so a sanitizer build sees any
 * access past either.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/jcheck.h"
#include "tap.h"

#define T_TOKEN	16		/* jwt.c's depth */
#define T_BODY	64		/* jsonbody.c's */

struct jcase {
	const char	*text;
	size_t		 len;		/* 0: strlen(text) */
	int		 ints_as_reals;
	int		 depth;
	enum jcheck_err	 want;
};

#define OK_(t)		{ t, 0, 0, T_TOKEN, JCHECK_OK }
#define BAD(t, e)	{ t, 0, 0, T_TOKEN, e }
#define REAL(t, e)	{ t, 0, 1, T_BODY, e }

static const struct jcase cases[] = {
	/* the grammar */
	OK_("{}"), OK_(" \t\r\n{ } \n"), OK_("{\"a\":1}"),
	OK_("{\"a\" : [ 1 , { } , [ ] , \"s\" ] , \"b\":null}"),
	OK_("{\"\":0}"),
	BAD("", JCHECK_ESYNTAX), BAD("   ", JCHECK_ESYNTAX),
	BAD("[]", JCHECK_ESYNTAX), BAD("\"a\"", JCHECK_ESYNTAX),
	BAD("1", JCHECK_ESYNTAX), BAD("{", JCHECK_ESYNTAX),
	BAD("{\"a\"", JCHECK_ESYNTAX), BAD("{\"a\":", JCHECK_ESYNTAX),
	BAD("{\"a\":1", JCHECK_ESYNTAX), BAD("{\"a\":1,}", JCHECK_ESYNTAX),
	BAD("{,}", JCHECK_ESYNTAX), BAD("{\"a\":[1,]}", JCHECK_ESYNTAX),
	BAD("{\"a\":[,1]}", JCHECK_ESYNTAX), BAD("{\"a\" 1}", JCHECK_ESYNTAX),
	BAD("{\"a\"::1}", JCHECK_ESYNTAX), BAD("{a:1}", JCHECK_ESYNTAX),
	BAD("{'a':1}", JCHECK_ESYNTAX), BAD("{\"a\":1]", JCHECK_ESYNTAX),
	BAD("{\"a\":[1}", JCHECK_ESYNTAX), BAD("{}{}", JCHECK_ESYNTAX),
	BAD("{} x", JCHECK_ESYNTAX), BAD("{\"a\":1 2}", JCHECK_ESYNTAX),
	BAD("{\"a\":\"b\"\"c\"}", JCHECK_ESYNTAX),
	BAD("\xef\xbb\xbf{}", JCHECK_ESYNTAX),		/* a BOM */
	BAD("{\"a\":1}\f", JCHECK_ESYNTAX),		/* not JSON space */
	BAD("\v{}", JCHECK_ESYNTAX),
	/* literals */
	OK_("{\"a\":true,\"b\":false,\"c\":null}"),
	BAD("{\"a\":tru}", JCHECK_ESYNTAX), BAD("{\"a\":truex}", JCHECK_ESYNTAX),
	BAD("{\"a\":True}", JCHECK_ESYNTAX), BAD("{\"a\":nul", JCHECK_ESYNTAX),
	BAD("{\"a\":NaN}", JCHECK_ESYNTAX),
	BAD("{\"a\":Infinity}", JCHECK_ESYNTAX),
	/* numbers */
	OK_("{\"a\":0,\"b\":-0,\"c\":0.5,\"d\":-1.5e+3,\"e\":1E-2,\"f\":10}"),
	BAD("{\"a\":01}", JCHECK_ESYNTAX), BAD("{\"a\":-01}", JCHECK_ESYNTAX),
	BAD("{\"a\":1.}", JCHECK_ESYNTAX), BAD("{\"a\":.5}", JCHECK_ESYNTAX),
	BAD("{\"a\":+1}", JCHECK_ESYNTAX), BAD("{\"a\":-}", JCHECK_ESYNTAX),
	BAD("{\"a\":1e}", JCHECK_ESYNTAX), BAD("{\"a\":1e+}", JCHECK_ESYNTAX),
	BAD("{\"a\":0x10}", JCHECK_ESYNTAX), BAD("{\"a\":1.5.3}", JCHECK_ESYNTAX),
	BAD("{\"a\":-x}", JCHECK_ESYNTAX),
	OK_("{\"a\":9223372036854775807,\"b\":-9223372036854775808}"),
	BAD("{\"a\":9223372036854775808}", JCHECK_ENUMBER),
	BAD("{\"a\":-9223372036854775809}", JCHECK_ENUMBER),
	BAD("{\"a\":100000000000000000000000000000}", JCHECK_ENUMBER),
	REAL("{\"a\":100000000000000000000000000000}", JCHECK_OK),
	REAL("{\"a\":9223372036854775808}", JCHECK_OK),
	OK_("{\"a\":1.7976931348623157e308,\"b\":-1.7976931348623157e308}"),
	BAD("{\"a\":1.7976931348623159e308}", JCHECK_ENUMBER),
	BAD("{\"a\":-1e309}", JCHECK_ENUMBER), BAD("{\"a\":1e400}", JCHECK_ENUMBER),
	BAD("{\"a\":1e0000000000000000000400}", JCHECK_ENUMBER),
	OK_("{\"a\":1e-400,\"b\":4.9e-324,\"c\":-1e-99999}"),
	REAL("{\"a\":1e400}", JCHECK_ENUMBER),
	/* strings, escapes, UTF-8 */
	OK_("{\"s\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\uD83D\\uDE00\"}"),
	OK_("{\"s\":\"\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\x7f\"}"),
	BAD("{\"s\":\"\\x\"}", JCHECK_ESYNTAX), BAD("{\"s\":\"\\u12\"}", JCHECK_ESYNTAX),
	BAD("{\"s\":\"\\u12g4\"}", JCHECK_ESYNTAX),
	BAD("{\"s\":\"\\ud800\"}", JCHECK_ESYNTAX),
	BAD("{\"s\":\"\\udc00\"}", JCHECK_ESYNTAX),
	BAD("{\"s\":\"\\ud800\\u0041\"}", JCHECK_ESYNTAX),
	BAD("{\"s\":\"\\ud800\\n\"}", JCHECK_ESYNTAX),
	BAD("{\"s\":\"\\u0000\"}", JCHECK_ENUL),
	BAD("{\"\\u0000\":1}", JCHECK_ENUL),
	BAD("{\"s\":\"a\nb\"}", JCHECK_ESYNTAX), BAD("{\"s\":\"\x1f\"}", JCHECK_ESYNTAX),
	BAD("{\"s\":\"abc}", JCHECK_ESYNTAX), BAD("{\"s\":\"\\", JCHECK_ESYNTAX),
	BAD("{\"s\":\"\xff\"}", JCHECK_EUTF8), BAD("{\"s\":\"\x80\"}", JCHECK_EUTF8),
	BAD("{\"s\":\"\xc0\xaf\"}", JCHECK_EUTF8),	/* overlong '/' */
	BAD("{\"s\":\"\xe0\x80\xaf\"}", JCHECK_EUTF8),
	BAD("{\"s\":\"\xed\xa0\x80\"}", JCHECK_EUTF8),	/* U+D800 */
	BAD("{\"s\":\"\xf4\x90\x80\x80\"}", JCHECK_EUTF8),	/* U+110000 */
	BAD("{\"s\":\"\xf5\x80\x80\x80\"}", JCHECK_EUTF8),
	BAD("{\"s\":\"\xe2\x82\"}", JCHECK_EUTF8),	/* cut short */
	BAD("{\"s\":\"\xe2\x82", JCHECK_EUTF8),	/* cut by the end */
	BAD("{\"\xff\":1}", JCHECK_EUTF8), BAD("{\"a\":\xc3\xa9}", JCHECK_ESYNTAX),
	/* duplicates, by their decoded names */
	BAD("{\"a\":1,\"a\":2}", JCHECK_EDUP),
	BAD("{\"a\":1,\"b\":2,\"a\":3}", JCHECK_EDUP),
	BAD("{\"alg\":1,\"\\u0061lg\":2}", JCHECK_EDUP),
	BAD("{\"\\u00e9\":1,\"\xc3\xa9\":2}", JCHECK_EDUP),
	BAD("{\"\":1,\"\":2}", JCHECK_EDUP),
	BAD("{\"x\":[{\"y\":{\"z\":1,\"z\":2}}]}", JCHECK_EDUP),
	OK_("{\"a\":{\"a\":{\"a\":1}},\"b\":[{\"a\":1},{\"a\":2}]}"),
	OK_("{\"a\":1,\"A\":2,\"a \":3,\"ab\":4,\"\\u00e9\":5,\"e\":6}"),
	/* nesting: the object itself is one level */
	{ "{}", 0, 0, 1, JCHECK_OK },
	{ "{\"a\":[]}", 0, 0, 1, JCHECK_EDEPTH },
	{ "{\"a\":[]}", 0, 0, 2, JCHECK_OK },
	{ "{\"a\":\"[[[\"}", 0, 0, 1, JCHECK_OK },
	/* NUL bytes: refused wherever they are */
	{ "{\"a\":1\0}", 8, 0, T_TOKEN, JCHECK_ENUL },
	{ "{\"a\":true\0}", 11, 0, T_TOKEN, JCHECK_ENUL },
	{ "{\"a\":\"\0\"}", 9, 0, T_TOKEN, JCHECK_ENUL },
	{ "{}\0", 3, 0, T_TOKEN, JCHECK_ENUL },
	{ "\0{}", 3, 0, T_TOKEN, JCHECK_ENUL },
	{ "{\0\"a\":1}", 8, 0, T_TOKEN, JCHECK_ENUL },
};

/* A workspace of exactly the macros' sizes for n bytes of text. */
static void
work_init(struct jcheck *jc, size_t n)
{
	jc->nkeys = JCHECK_KEYS_MAX(n);
	jc->scratch_len = JCHECK_SCRATCH_MAX(n);
	jc->keys = malloc(jc->nkeys * sizeof(*jc->keys));
	jc->scratch = malloc(jc->scratch_len);
	if (jc->keys == NULL || jc->scratch == NULL)
		abort();
}

static void
work_free(struct jcheck *jc)
{
	free(jc->keys);
	free(jc->scratch);
}

/* Runs jcheck_object on an exact-length copy of text. */
static enum jcheck_err
run(const char *text, size_t len, int ints_as_reals, int depth,
    jcheck_member_fn fn, void *ctx)
{
	struct jcheck jc;
	enum jcheck_err e;
	char *copy = malloc(len > 0 ? len : 1);

	if (copy == NULL)
		abort();
	memcpy(copy, text, len);
	jc.max_depth = depth;
	jc.ints_as_reals = ints_as_reals;
	jc.member = fn;
	jc.ctx = ctx;
	work_init(&jc, len);
	e = jcheck_object(copy, len, &jc);
	work_free(&jc);
	free(copy);
	return e;
}

/* text for a test name: bytes outside printable ASCII as escapes. */
static const char *
show(const char *text, size_t len)
{
	static char buf[256];
	size_t i, o = 0;

	for (i = 0; i < len && o + 5 < sizeof(buf); i++)
		o += (size_t)((unsigned char)text[i] < 0x20 ||
		    (unsigned char)text[i] >= 0x7f ?
		    snprintf(buf + o, sizeof(buf) - o, "\\x%02x",
		    (unsigned char)text[i]) :
		    snprintf(buf + o, sizeof(buf) - o, "%c", text[i]));
	buf[o] = '\0';
	return buf;
}

static void
test_cases(void)
{
	const struct jcase *c;
	size_t i, len;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		c = &cases[i];
		len = c->len ? c->len : strlen(c->text);
		is_int(run(c->text, len, c->ints_as_reals, c->depth, NULL,
		    NULL), c->want, "%s (ints as reals %d, depth %d)",
		    show(c->text, len), c->ints_as_reals, c->depth);
	}
}

/* Text nested n levels deep: the object and n - 1 arrays. */
static void
test_depth(void)
{
	char text[2 * JCHECK_MAX_DEPTH + 16];
	int n;

	for (n = JCHECK_MAX_DEPTH - 1; n <= JCHECK_MAX_DEPTH + 1; n++) {
		size_t len = 0;
		int i;

		len += (size_t)sprintf(text, "{\"a\":");
		for (i = 1; i < n; i++)
			text[len++] = '[';
		for (i = 1; i < n; i++)
			text[len++] = ']';
		text[len++] = '}';
		is_int(run(text, len, 0, JCHECK_MAX_DEPTH, NULL, NULL),
		    n <= JCHECK_MAX_DEPTH ? JCHECK_OK : JCHECK_EDEPTH,
		    "%d levels, limit %d", n, JCHECK_MAX_DEPTH);
	}
	is_int(run("{}", 2, 0, 0, NULL, NULL), JCHECK_EROOM, "depth 0 refused");
	is_int(run("{}", 2, 0, JCHECK_MAX_DEPTH + 1, NULL, NULL),
	    JCHECK_EROOM, "depth past JCHECK_MAX_DEPTH refused");
}

/* An object of n names k0..k(n-1), and name dup at position at. */
static char *
names(size_t n, const char *dup, size_t at, size_t *len)
{
	char *b = malloc(n * 16 + 64), *p;
	size_t i;

	if (b == NULL)
		abort();
	p = b;
	*p++ = '{';
	for (i = 0; i < n; i++) {
		if (i == at && dup != NULL)
			p += sprintf(p, "%s\"%s\":0", i ? "," : "", dup);
		else
			p += sprintf(p, "%s\"k%zu\":0", i ? "," : "", i);
	}
	*p++ = '}';
	*len = (size_t)(p - b);
	return b;
}

/* Small objects are checked pair by pair, large ones sorted: both. */
static void
test_dups(void)
{
	static const size_t sizes[] = { 2, 15, 16, 17, 40, 1000 };
	size_t i, len, n;
	char *b;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		n = sizes[i];
		b = names(n, NULL, 0, &len);
		is_int(run(b, len, 0, T_TOKEN, NULL, NULL), JCHECK_OK,
		    "%zu distinct names", n);
		free(b);
		b = names(n, "k0", n - 1, &len);
		is_int(run(b, len, 0, T_TOKEN, NULL, NULL), JCHECK_EDUP,
		    "%zu names, the last repeats the first", n);
		free(b);
		b = names(n, "\\u006b1", 0, &len);
		is_int(run(b, len, 0, T_TOKEN, NULL, NULL), n > 1 ?
		    JCHECK_EDUP : JCHECK_OK, "%zu names, an escaped k1 first",
		    n);
		free(b);
	}
}

/* What a callback saw. */
struct seen {
	size_t			 count;
	char			 names[8][16];
	struct jcheck_value	 v[8];
};

static void
record(void *ctx, const char *name, size_t len, const struct jcheck_value *v)
{
	struct seen *s = ctx;

	if (s->count < 8 && len < 16) {
		memcpy(s->names[s->count], name, len);
		s->names[s->count][len] = '\0';
		s->v[s->count] = *v;
	}
	s->count++;
}

static void
test_members(void)
{
	static const char text[] = " {\"s\":\"x\\u00e9\", \"\\u0069\":-12,"
	    "\"r\":2.5e1,\"o\":{\"in\":[1]},\"a\":[{}],\"t\":true,\"z\":-0,"
	    "\"n\":null}";
	struct seen s;
	size_t len = strlen(text);

	memset(&s, 0, sizeof(s));
	is_int(run(text, len, 0, T_TOKEN, record, &s), JCHECK_OK,
	    "members: accepted");
	is_int(s.count, 8, "members: the top-level ones only, once each");
	is_str(s.names[0], "s", "members: name in text order");
	ok(s.v[0].kind == JCHECK_STRING && s.v[0].start == 6 &&
	    s.v[0].end == 15, "members: a string's span, quotes included");
	is_str(s.names[1], "i", "members: an escaped name decoded");
	ok(s.v[1].kind == JCHECK_NUMBER && s.v[1].is_int && s.v[1].i == -12,
	    "members: an integer read as one");
	ok(s.v[2].kind == JCHECK_NUMBER && !s.v[2].is_int && s.v[2].r == 25.0,
	    "members: a real read with strtod");
	ok(s.v[3].kind == JCHECK_OBJECT &&
	    memcmp(text + s.v[3].start, "{\"in\":[1]}", 10) == 0 &&
	    s.v[3].end - s.v[3].start == 10, "members: an object's span");
	ok(s.v[4].kind == JCHECK_ARRAY && s.v[4].end - s.v[4].start == 4,
	    "members: an array's span");
	ok(s.v[5].kind == JCHECK_TRUE && s.v[7].kind == JCHECK_NULL,
	    "members: literals");
	ok(s.v[6].is_int && s.v[6].i == 0, "members: -0 is the integer 0");

	memset(&s, 0, sizeof(s));
	is_int(run("{\"z\":-0,\"b\":12}", 15, 1, T_BODY, record, &s),
	    JCHECK_OK, "ints as reals: accepted");
	ok(!s.v[0].is_int && s.v[0].r == 0 && signbit(s.v[0].r) &&
	    !s.v[1].is_int && s.v[1].r == 12.0,
	    "ints as reals: reals, -0 is -0.0");

	memset(&s, 0, sizeof(s));
	(void)run("{\"a\":1,\"a\":2}", 13, 0, T_TOKEN, record, &s);
	is_int(s.count, 2, "a duplicate is reported before the verdict");
}

static void
test_room(void)
{
	static const char text[] = "{\"\\u0061\":1.5,\"b\":{\"c\":2}}";
	size_t len = strlen(text);
	struct jcheck jc;

	jc.max_depth = T_TOKEN;
	jc.ints_as_reals = 0;
	jc.member = NULL;
	jc.ctx = NULL;
	work_init(&jc, len);
	jc.nkeys = 2;
	is_int(jcheck_object(text, len, &jc), JCHECK_EROOM,
	    "fewer name slots than names held: JCHECK_EROOM");
	jc.nkeys = 3;
	is_int(jcheck_object(text, len, &jc), JCHECK_OK,
	    "as many as held at once: fine");
	jc.scratch_len = 0;
	is_int(jcheck_object(text, len, &jc), JCHECK_EROOM,
	    "scratch too small for a decoded name: JCHECK_EROOM");
	work_free(&jc);
}

int
main(void)
{
	test_cases();
	test_depth();
	test_dups();
	test_members();
	test_room();
	return done_testing();
}
