/*
 * jwt.h: RS256 JSON Web Token verification (PURE).
 *
 * Splits a JWS compact token, decodes it with strict base64url, checks the
 * header (alg allow-list, crit, typ, kid), verifies the RS256 signature with
 * the key of the key set (jwk.h) its kid chooses, then checks the claims
 * against a policy. No I/O, no logging, no globals: the caller passes the
 * key set and the current time as parameters.
 */
#ifndef CFPM_JWT_H
#define CFPM_JWT_H

#include <stddef.h>
#include <stdint.h>

#include "events/base64url.h"
#include "events/jwk.h"

#define JWT_MAX_LEN	8192	/* longest token accepted, in bytes */
#define JWT_MAX_SUB	255	/* longest sub claim, in bytes */
#define JWT_MAX_SCOPE	1024	/* longest scope claim, in bytes */
#define JWT_MAX_DEPTH	16	/* JSON nesting in header and claims */
/* The longest decoded segment (the signature's included). */
#define JWT_MAX_SIG	BASE64URL_DECODED_MAX(JWT_MAX_LEN)

/* Why a token was rejected; every value but JWT_OK means "invalid token".
 * JWT_ESUB is the last. */
enum jwt_err {
	JWT_OK = 0,
	JWT_ETOOLONG,	/* longer than JWT_MAX_LEN */
	JWT_EFORMAT,	/* not three segments, bad base64url */
	JWT_EHEADER,	/* header not a JSON object, duplicate members, bad types */
	JWT_EALG,	/* alg missing or not RS256 */
	JWT_ECRIT,	/* crit present */
	JWT_ETYP,	/* typ not accepted */
	JWT_EKID,	/* no key for this kid */
	JWT_ESIG,	/* signature does not verify */
	JWT_ECLAIMS,	/* payload not a JSON object, duplicates, wrong types */
	JWT_EISS,	/* iss missing or not the configured issuer */
	JWT_EAUD,	/* aud missing or without the configured audience */
	JWT_EEXP,	/* exp missing or expired */
	JWT_ENBF,	/* nbf in the future */
	JWT_ESUB,	/* sub missing, empty, too long */
};

/* typ header policy. */
enum jwt_typ_mode {
	JWT_TYP_LENIENT = 0,	/* typ absent, "JWT" or "at+jwt" */
	JWT_TYP_STRICT,		/* RFC 9068: typ must be "at+jwt" */
};

/* What a token must satisfy beyond its signature. Strings are borrowed. */
struct jwt_policy {
	const char		*issuer;	/* exact match of iss */
	const char		*audience;	/* aud string or array member */
	int64_t			 leeway;	/* seconds, >= 0 */
	enum jwt_typ_mode	 typ_mode;
};

/* Claims of a verified token, copied out (NUL-terminated). */
struct jwt_claims {
	char	sub[JWT_MAX_SUB + 1];
	char	scope[JWT_MAX_SCOPE + 1];
	int	has_scope;		/* 1 if a scope claim was present */
};

/*
 * Verifies token (len bytes, not necessarily NUL-terminated) at time now
 * (seconds since the epoch): format, header, signature with the key the
 * header's kid chooses (jwk_choose), then the claims under policy.
 * Returns 0 and fills *claims, or -1 with the reason in *err.
 * jwt_verify_begin() then jwt_verify_end(), with the same verdict.
 */
int jwt_verify(const struct jwk_set *ks, const struct jwt_policy *policy,
    const char *token, size_t len, int64_t now, struct jwt_claims *claims,
    enum jwt_err *err);

/*
 * A token jwt_verify_begin() checked in all but its signature: what the
 * signature's check needs (signed_part is borrowed from the token: keep
 * it until jwt_verify_end) and the claims' verdict, which waits for it.
 */
struct jwt_pending {
	const char	*signed_part;	/* "<header>.<payload>" */
	size_t		 signed_len;
	size_t		 key;		/* the key its kid chose */
	enum jwt_err	 claims;	/* the claims' verdict under the policy */
	size_t		 siglen;
	unsigned char	 sig[JWT_MAX_SIG];
};

/*
 * jwt_verify in two parts, so that a caller can work while the signature
 * is checked. The first runs every check but the signature: format,
 * header, key choice, then the claims. -1 with *err: rejected before the
 * signature was needed, jwt_verify's verdict. 0: p is filled for
 * jwt_verify_end(), which gives the verdict; *err is then the claims'
 * (JWT_OK: *claims filled, but NOT verified: nothing derived from them
 * may reach the token's sender unless jwt_verify_end returns 0).
 */
int jwt_verify_begin(const struct jwk_set *ks,
    const struct jwt_policy *policy, const char *token, size_t len,
    int64_t now, struct jwt_claims *claims, struct jwt_pending *p,
    enum jwt_err *err);

/*
 * The signature of the token p describes (jwt_verify_begin returned 0),
 * then the claims' verdict: 0 with *claims verified, or -1 with *err
 * (JWT_ESIG before any claims' failure, as jwt_verify) and *claims
 * cleared.
 */
int jwt_verify_end(const struct jwk_set *ks, const struct jwt_pending *p,
    struct jwt_claims *claims, enum jwt_err *err);

/* A short fixed English text for err (never token bytes). */
const char *jwt_strerror(enum jwt_err err);

#endif
