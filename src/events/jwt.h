/*
 * jwt.h: RS256 JSON Web Token verification (PURE; the only OpenSSL user).
 *
 * Splits a JWS compact token, decodes it with strict base64url, checks the
 * header (alg allow-list, crit, typ, kid), verifies the RS256 signature with
 * a key from the key set, then checks the claims against a policy.
 * No I/O, no logging, no globals: the caller passes key material as bytes
 * and the current time as a parameter.
 */
#ifndef CFPM_JWT_H
#define CFPM_JWT_H

#include <stddef.h>
#include <stdint.h>

#define JWT_MAX_LEN	8192	/* longest token accepted, in bytes */
#define JWT_MAX_SUB	255	/* longest sub claim, in bytes */
#define JWT_MAX_SCOPE	1024	/* longest scope claim, in bytes */
#define JWT_MAX_KID	256	/* longest kid, header or key set */
#define JWT_MAX_KEYS	16	/* keys in one key set */
#define JWT_MAX_DEPTH	16	/* JSON nesting in header and claims */

/* Why a token was rejected; every value but JWT_OK means "invalid token". */
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
	JWT_ENOMEM,	/* allocation failure */
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

/* One or more RSA public keys, each with an optional kid. Opaque. */
struct jwt_keyset;

/*
 * Parses key material: an SPKI PEM public key ("-----BEGIN PUBLIC KEY-----")
 * or a JWKS document ({"keys":[{"kty":"RSA","n":..,"e":..,"kid":..}, ..]}).
 * JWKS entries with "use" other than "sig" or "alg" other than "RS256" are
 * skipped; an RSA key under 2048 bits is refused. A PEM key gets kid
 * default_kid (may be NULL: the key then matches any kid).
 * Returns a key set the caller frees with jwt_keyset_free(), or NULL with
 * a reason in err (errlen bytes).
 */
struct jwt_keyset *jwt_keyset_parse(const char *buf, size_t len,
    const char *default_kid, char *err, size_t errlen);

/* Frees a key set (NULL is fine). */
void jwt_keyset_free(struct jwt_keyset *ks);

/* Number of keys in the set. */
size_t jwt_keyset_count(const struct jwt_keyset *ks);

/*
 * Verifies token (len bytes, not necessarily NUL-terminated) at time now
 * (seconds since the epoch): format, header, signature with the key chosen
 * by kid, then the claims under policy. Key choice: a kid in the header
 * picks the key with that kid (or the one key without a kid); no kid in
 * the header is allowed only when the set has exactly one key.
 * Returns 0 and fills *claims, or -1 with the reason in *err.
 */
int jwt_verify(const struct jwt_keyset *ks, const struct jwt_policy *policy,
    const char *token, size_t len, int64_t now, struct jwt_claims *claims,
    enum jwt_err *err);

/*
 * The bare RS256 primitive: RSASSA-PKCS1-v1_5 with SHA-256 over msg with
 * key number idx of ks. Returns 1 if the signature verifies, 0 if not.
 */
int jwt_rs256_verify(const struct jwt_keyset *ks, size_t idx,
    const unsigned char *msg, size_t msglen,
    const unsigned char *sig, size_t siglen);

/* A short fixed English text for err (never token bytes). */
const char *jwt_strerror(enum jwt_err err);

#endif
