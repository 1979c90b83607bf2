/*
 * jsonbody.h: the checks on a POST /events body (PURE; the worker runs
 * them before the database sees the body).
 *
 * A body is accepted only if PostgreSQL can store its payload as jsonb
 * and the stored form reads back within the reply limit. jsonb keeps
 * numbers as numeric and prints them in plain notation, so a few bytes
 * can be refused by the server (1e-16384: too many digits after the
 * point) or print as megabytes (1e-16383 is 16,385 characters); its
 * output also adds a space after every ':' and ','. The length of that
 * output is computed here, exactly, from the client's bytes.
 */
#ifndef CFPM_JSONBODY_H
#define CFPM_JSONBODY_H

#include <stddef.h>
#include <stdint.h>

#define JSONBODY_MAX_DEPTH	64	/* nesting of arrays and objects */

/*
 * Longest jsonb output of a payload accepted. The reply to GET
 * /events/{id} must hold it beside the kind and the subject: api.c
 * checks at compile time that the sum fits API_MAX_REPLY.
 */
#define JSONBODY_MAX_RENDERED	(512 * 1024)

/* PostgreSQL 15's numeric (numeric.c: NUMERIC_WEIGHT_MAX, DSCALE_MAX). */
#define JSONBODY_NUMERIC_MAX_INT_DIGITS	131072	/* before the point */
#define JSONBODY_NUMERIC_MAX_SCALE	16383	/* after the point */
#define JSONBODY_NUMERIC_MAX_EXP	1073741822	/* |e| < INT_MAX / 2 */

struct json_t;

/*
 * PURE. The length of what PostgreSQL prints for the JSON number token
 * s (n bytes, nothing else) stored in jsonb, i.e. numeric_out() in plain
 * notation: "1.50" stays 4, "1e2" is "100", "-0" is "0", "1e-3" is
 * "0.001". -1 if s is not a JSON number or numeric cannot hold it (more
 * than JSONBODY_NUMERIC_MAX_INT_DIGITS digits before the point or
 * JSONBODY_NUMERIC_MAX_SCALE after it, exponent beyond
 * JSONBODY_NUMERIC_MAX_EXP), which PostgreSQL refuses.
 */
int64_t jsonbody_number_len(const char *s, size_t n);

/*
 * PURE. The length of the jsonb output of the JSON text s (n bytes):
 * strings as PostgreSQL re-escapes them, numbers by
 * jsonbody_number_len(), ": " and ", " between members and elements,
 * no other white space. -1 if a number cannot be stored, a string holds
 * \u0000 or a lone surrogate (which jsonb refuses), or a token is
 * malformed. The structure itself is not checked (jcheck does that).
 */
int64_t jsonbody_rendered_len(const char *s, size_t n);

/*
 * PURE. Validates a POST body of len bytes (not necessarily NUL-
 * terminated): JSON as jansson accepts it with JSON_REJECT_DUPLICATES
 * (util/jcheck.h: valid UTF-8, no NUL byte and no \u0000, no duplicate
 * members), nested at most JSONBODY_MAX_DEPTH deep, an object with a
 * non-empty string "kind" and an object "payload" whose jsonb output is
 * at most JSONBODY_MAX_RENDERED bytes with every number within numeric's
 * range. Returns 0 with *payload (a malloc'd copy of the client's own
 * bytes of the payload member, terminated) and *kind (the decoded kind,
 * terminated, in the same allocation) set, or -1. The caller frees
 * *payload in both cases; *root is always set to NULL (no tree is
 * built; json_decref(NULL) is a no-op, so callers written for a tree
 * still work).
 */
int jsonbody_parse_event(const char *body, size_t len, struct json_t **root,
    const char **kind, char **payload);

#endif
