/*
 * jwk.h: the key set tokens are verified against (PURE; the only OpenSSL
 * user): RSA public keys parsed from an SPKI PEM key or a JWKS document,
 * the choice of a key by kid, and the RS256 primitive over a chosen key.
 * No I/O, no logging, no globals: the caller passes the key material as
 * bytes. jwt.c drives the verification and never sees an OpenSSL type.
 */
#ifndef CFPM_JWK_H
#define CFPM_JWK_H

#include <stddef.h>

#define JWK_MAX_KID	256	/* longest kid, header or key set */
#define JWK_MAX_KEYS	16	/* keys in one key set */

/* One or more RSA public keys, each with an optional kid. Opaque. */
struct jwk_set;

/*
 * Parses key material: an SPKI PEM public key ("-----BEGIN PUBLIC KEY-----")
 * or a JWKS document ({"keys":[{"kty":"RSA","n":..,"e":..,"kid":..}, ..]}).
 * JWKS entries with "use" other than "sig" or "alg" other than "RS256" are
 * skipped; an RSA key under 2048 bits is refused, and so is one no
 * signature could verify against (e not below n, or e over 64 bits with
 * a modulus over 3072 bits: OpenSSL's RSA_verify refuses those). A PEM key gets kid
 * default_kid (may be NULL: the key then matches any kid).
 * Returns a key set the caller frees with jwk_set_free(), or NULL with
 * a reason in err (errlen bytes).
 */
struct jwk_set *jwk_set_parse(const char *buf, size_t len,
    const char *default_kid, char *err, size_t errlen);

/* Frees a key set (NULL is fine). */
void jwk_set_free(struct jwk_set *ks);

/* Number of keys in the set (0 for NULL). */
size_t jwk_set_count(const struct jwk_set *ks);

/*
 * Chooses the key for a token whose header names kid (kidlen bytes), or
 * none (kid NULL): a kid picks the key with that kid, or the one key
 * without a kid; no kid is allowed only when the set has exactly one
 * key (never guess between several). Returns 0 with the key's number in
 * *idx, or -1 if no key may be used.
 */
int jwk_choose(const struct jwk_set *ks, const char *kid, size_t kidlen,
    size_t *idx);

/*
 * The bare RS256 primitive: RSASSA-PKCS1-v1_5 with SHA-256 over msg with
 * key number idx of ks. Returns 1 if the signature verifies, 0 if not
 * (a NULL set or an idx out of range included).
 */
int jwk_rs256_verify(const struct jwk_set *ks, size_t idx,
    const unsigned char *msg, size_t msglen,
    const unsigned char *sig, size_t siglen);

#endif
