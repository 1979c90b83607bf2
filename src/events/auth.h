/*
 * auth.h: Bearer token extraction and access policy (worker; the keys
 * are loaded by the master, at start and on each reload, and inherited).
 * Takes the Authorization header, pulls out the one bearer token, has
 * jwt.c verify it against the configured issuer, audience and leeway, and
 * checks the endpoint's scope. Mapping results to HTTP is api.c's job.
 */
#ifndef CFPM_AUTH_H
#define CFPM_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "events/jwt.h"
#include "events/settings.h"

#define AUTH_MAX_KEY_FILE	(1024 * 1024)	/* key file size limit */

enum auth_result {
	AUTH_OK = 0,
	AUTH_NO_CREDENTIALS,	/* no header, or another scheme */
	AUTH_MALFORMED,		/* "Bearer" without exactly one token */
	AUTH_INVALID_TOKEN,	/* any token failure */
	AUTH_INSUFFICIENT_SCOPE,	/* valid token without the scope */
};

struct auth {
	struct jwk_set		*keys;
	struct jwt_policy	 policy;
	char			 issuer[CONFIG_MAX_VALUE];
	char			 audience[CONFIG_MAX_VALUE];
};

/*
 * Reads and parses the key file the settings name and copies their policy
 * (the master does, for the workers it forks). Returns 0, or -1 with a
 * reason in err (errlen bytes). Free with auth_free().
 */
int auth_init(struct auth *a, const struct settings *s, char *err,
    size_t errlen);

/* Releases the key set. */
void auth_free(struct auth *a);

/*
 * PURE. Finds the bearer token in an Authorization header value (NULL if
 * absent). The scheme is case-insensitive (RFC 9110); exactly one token
 * must follow. On AUTH_OK, tok and len point into header.
 */
enum auth_result auth_bearer(const char *header, const char **tok,
    size_t *len);

/* PURE. 1 if word is one of the space-separated words of scope. */
int auth_scope_has(const char *scope, const char *word);

/*
 * Authenticates a request: bearer extraction, full signature and claim
 * verification at time now (never cached), then the scope. On AUTH_OK
 * claims is filled; on AUTH_INVALID_TOKEN *why says what failed (for
 * logs; never the token itself).
 */
enum auth_result auth_check(const struct auth *a, const char *header,
    const char *scope, int64_t now, struct jwt_claims *claims,
    enum jwt_err *why);

/* An auth_check between its two parts (auth_check_begin, _end). */
struct auth_pending {
	enum auth_result	 res;	/* the verdict, if the signature
					   verifies (or needs no check) */
	enum jwt_err		 why;	/* with it */
	int			 sign;	/* 1: the signature decides first */
	struct jwt_pending	 jwt;
};

/*
 * auth_check in two parts, for a caller that works while the signature
 * is checked: the first runs every check but the signature (bearer,
 * format, header, key, claims, scope) and returns 1 when they all
 * passed: claims is filled but NOT verified, so whatever the caller
 * derives from them reaches the requester only if auth_check_end says
 * AUTH_OK; 0 when one failed (the verdict will be a failure: nothing is
 * worth starting). Either way, auth_check_end() gives auth_check's
 * verdict, the same in every case, with p (header's token is borrowed
 * until then).
 */
int auth_check_begin(const struct auth *a, const char *header,
    const char *scope, int64_t now, struct jwt_claims *claims,
    struct auth_pending *p);
enum auth_result auth_check_end(const struct auth *a,
    const struct auth_pending *p, struct jwt_claims *claims,
    enum jwt_err *why);

#endif
