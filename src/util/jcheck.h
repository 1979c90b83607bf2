/*
 * jcheck.h: strict JSON validation without a tree (PURE; the workers run
 * it on token headers, token claims and POST bodies).
 *
 * jcheck_object() accepts exactly the JSON objects jansson 2.14's
 * json_loadb() accepts with JSON_REJECT_DUPLICATES (and, if asked,
 * JSON_DECODE_INT_AS_REAL), nested no deeper than a limit: RFC 8259's
 * grammar (no trailing commas, no leading zeros, white space only
 * between tokens and around the text), UTF-8 checked wherever it occurs
 * (no overlong forms, no surrogates, nothing past U+10FFFF), no control
 * characters in strings, no \u0000 anywhere (cfpm hands names and
 * strings on as C strings), surrogate escapes only in pairs, no object
 * with two members whose names decode to the same bytes (at any depth),
 * integers that fit int64_t and reals that do not overflow a double.
 * One difference: a raw NUL byte is refused wherever it is, where
 * jansson skips one that follows a number or a literal.
 *
 * It reports the members of the top-level object, in text order, to a
 * callback (for the token's alg, exp, sub, ...), so a caller reads them
 * without a second pass; jscan.h then navigates values it accepted. No
 * allocation: the caller passes a workspace sized by the macros below.
 * Reals are read with strtod(), in the C locale cfpm runs in (it never
 * calls setlocale()), as jansson reads them.
 */
#ifndef CFPM_JCHECK_H
#define CFPM_JCHECK_H

#include <stddef.h>
#include <stdint.h>

#define JCHECK_MAX_DEPTH	64	/* deepest nesting any caller allows */

/* Workspace needed for text of n bytes: member names held at once (each
 * takes at least 4 bytes of text: "":0), and decoded names and number
 * copies (never more than the text itself, plus a terminator). */
#define JCHECK_KEYS_MAX(n)	((n) / 4 + 1)
#define JCHECK_SCRATCH_MAX(n)	((n) + 1)

enum jcheck_err {
	JCHECK_OK = 0,
	JCHECK_ESYNTAX,		/* not JSON, or not one object alone */
	JCHECK_EUTF8,		/* invalid UTF-8 */
	JCHECK_ENUL,		/* \u0000 or a raw NUL byte */
	JCHECK_EDUP,		/* two members of one object with one name */
	JCHECK_EDEPTH,		/* nested deeper than max_depth */
	JCHECK_ENUMBER,		/* an integer past int64_t, a real past double */
	JCHECK_EROOM,		/* the workspace is smaller than the macros say */
};

enum jcheck_kind {
	JCHECK_STRING,
	JCHECK_NUMBER,
	JCHECK_TRUE,
	JCHECK_FALSE,
	JCHECK_NULL,
	JCHECK_OBJECT,
	JCHECK_ARRAY,
};

/* A member's value as jcheck read it. */
struct jcheck_value {
	enum jcheck_kind kind;
	size_t		 start, end;	/* its text, s[start..end-1]; a
					   string's quotes included */
	int		 is_int;	/* a number read as an integer (no '.'
					   or exponent, ints not as reals) */
	int64_t		 i;		/* its value if is_int */
	double		 r;		/* a number's value otherwise (finite) */
};

/* A member name held for the duplicate check (workspace; opaque). */
struct jcheck_key {
	const char	*p;
	size_t		 len;
};

/*
 * Called for each member of the top-level object, in text order, with
 * its decoded name (namelen bytes, no NUL in it, not terminated) and its
 * value; the text's later parts are not checked yet, so a caller acts
 * on what it saw only once jcheck_object() returned JCHECK_OK.
 */
typedef void (*jcheck_member_fn)(void *ctx, const char *name, size_t namelen,
    const struct jcheck_value *v);

/* What to accept, where to report, and the workspace. */
struct jcheck {
	int			 max_depth;	/* 1..JCHECK_MAX_DEPTH: containers
						   nested (the object itself is 1) */
	int			 ints_as_reals;	/* JSON_DECODE_INT_AS_REAL */
	jcheck_member_fn	 member;	/* may be NULL */
	void			*ctx;
	struct jcheck_key	*keys;		/* JCHECK_KEYS_MAX(n) of them */
	size_t			 nkeys;
	char			*scratch;	/* JCHECK_SCRATCH_MAX(n) bytes */
	size_t			 scratch_len;
};

/*
 * PURE. Checks that s (n bytes, no terminator needed, nothing read past
 * them) is one JSON object, white space around it allowed, that jansson
 * would accept as described above, and calls jc->member for each of its
 * own members. Returns JCHECK_OK or the first defect met (JCHECK_EROOM
 * only for a workspace under the macros' sizes).
 */
enum jcheck_err jcheck_object(const char *s, size_t n, const struct jcheck *jc);

#endif
