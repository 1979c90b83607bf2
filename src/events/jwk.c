/*
 * jwk.c: the key set (PURE; parsed by the master at start, for -t and on
 * every reload, and used by the workers it forks; also cfpm-token's and
 * the tests'). An SPKI PEM key or a JWKS document becomes RSA public keys,
 * each checked (RSA, 2048..16384 bits, a sane exponent, a unique kid) and
 * given its RS256 verify context once, so a request costs one SHA-256 and
 * one RSA public operation. The only OpenSSL user in cfpm; no I/O, no
 * logging, no globals.
 */
#include "events/jwk.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "events/base64url.h"

#define JWK_KEY_MIN_BITS	2048	/* smaller RSA keys are refused */
#define JWK_KEY_MAX_BITS	16384	/* OpenSSL will not verify with more */
#define JWK_KEY_MAX_BYTES	(JWK_KEY_MAX_BITS / 8)
#define JWK_SET_MAX_LEN		(1024 * 1024)	/* PEM or JWKS text, bytes */
#define JWK_N_MAX	BASE64URL_ENCODED_LEN(JWK_KEY_MAX_BYTES + 1)
#define JWK_E_MAX	BASE64URL_ENCODED_LEN(8)	/* e up to 64 bits */

#define JWK_PEM_BEGIN	"-----BEGIN PUBLIC KEY-----"

struct jwk_key {
	EVP_PKEY	*pkey;
	EVP_PKEY_CTX	*vctx;			/* verify context, set up once */
	size_t		 sigsize;		/* modulus bytes */
	int		 has_kid;
	size_t		 kidlen;
	char		 kid[JWK_MAX_KID + 1];
};

struct jwk_set {
	EVP_MD		*sha256;		/* fetched once per key set */
	EVP_MD_CTX	*mdctx;			/* reused for every digest */
	size_t		 nkeys;
	struct jwk_key	 keys[JWK_MAX_KEYS];
};

__attribute__((format(printf, 3, 4)))
static void
jwk_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/*
 * Returns 1 if sig verifies, 0 if not. The digest context and the key's
 * verify context are set up once per key set, so a request costs one
 * SHA-256 and one RSA public operation, with no provider look-ups and no
 * allocations.
 */
static int
jwk_rs256(const struct jwk_set *ks, const struct jwk_key *k,
    const unsigned char *msg, size_t msglen, const unsigned char *sig,
    size_t siglen)
{
	unsigned char hash[EVP_MAX_MD_SIZE];
	unsigned int hlen = 0;
	int rc = 0;

	/* RFC 7518 3.3: the signature is exactly the modulus length. */
	if (siglen != k->sigsize)
		return 0;
	if (EVP_DigestInit_ex2(ks->mdctx, ks->sha256, NULL) != 1 ||
	    EVP_DigestUpdate(ks->mdctx, msg, msglen) != 1 ||
	    EVP_DigestFinal_ex(ks->mdctx, hash, &hlen) != 1)
		goto done;
	/* Only 1 means valid: 0 and negative values are both failures. */
	rc = EVP_PKEY_verify(k->vctx, sig, siglen, hash, hlen) == 1;
done:
	/* Leave no stale errors for the next OpenSSL user (libpq's TLS). */
	if (rc != 1)
		ERR_clear_error();
	return rc;
}

/*
 * The key's verify context: RSASSA-PKCS1-v1_5 with SHA-256 pinned, so
 * neither the padding nor the DigestInfo algorithm is left to a default.
 */
static EVP_PKEY_CTX *
jwk_rs256_context(EVP_PKEY *pkey, const EVP_MD *md)
{
	EVP_PKEY_CTX *ctx;

	if ((ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL)) == NULL)
		return NULL;
	if (EVP_PKEY_verify_init(ctx) != 1 ||
	    EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) != 1 ||
	    EVP_PKEY_CTX_set_signature_md(ctx, md) != 1) {
		EVP_PKEY_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

int
jwk_rs256_verify(const struct jwk_set *ks, size_t idx,
    const unsigned char *msg, size_t msglen,
    const unsigned char *sig, size_t siglen)
{
	if (ks == NULL || idx >= ks->nkeys)
		return 0;
	return jwk_rs256(ks, &ks->keys[idx], msg, msglen, sig, siglen) == 1;
}

/* The key whose kid is kid (kidlen bytes), or NULL: the one comparison
 * of kids, for a token's header and for a duplicate in the set. */
static const struct jwk_key *
jwk_find(const struct jwk_set *ks, const char *kid, size_t kidlen)
{
	size_t i;

	for (i = 0; i < ks->nkeys; i++)
		if (ks->keys[i].has_kid && ks->keys[i].kidlen == kidlen &&
		    memcmp(ks->keys[i].kid, kid, kidlen) == 0)
			return &ks->keys[i];
	return NULL;
}

int
jwk_choose(const struct jwk_set *ks, const char *kid, size_t kidlen,
    size_t *idx)
{
	const struct jwk_key *k = NULL;

	if (ks == NULL || ks->nkeys == 0)
		return -1;
	if (kid != NULL)
		k = jwk_find(ks, kid, kidlen);
	/* A lone key stands for any kid if it has none itself, and for a
	 * token that names none; several are never guessed between. */
	if (k == NULL && ks->nkeys == 1 &&
	    (kid == NULL || !ks->keys[0].has_kid))
		k = &ks->keys[0];
	if (k == NULL)
		return -1;
	*idx = (size_t)(k - ks->keys);
	return 0;
}

/* 0 if pkey is an RSA key fit to verify with, or -1 and why in err. */
static int
jwk_key_check(EVP_PKEY *pkey, const char *where, char *err, size_t errlen)
{
	BIGNUM *e = NULL;
	int bits, rc = -1;

	/* RSA only; an RSA-PSS-only key is a different type and refused. */
	if (!EVP_PKEY_is_a(pkey, "RSA")) {
		jwk_error(err, errlen, "%s: not an RSA key", where);
		return -1;
	}
	bits = EVP_PKEY_get_bits(pkey);
	/* Under 2048 bits RSA is factorable in practice (NIST SP 800-131A). */
	if (bits < JWK_KEY_MIN_BITS || bits > JWK_KEY_MAX_BITS) {
		jwk_error(err, errlen, "%s: RSA key of %d bits (need %d to %d)",
		    where, bits, JWK_KEY_MIN_BITS, JWK_KEY_MAX_BITS);
		return -1;
	}
	/* e = 1 (or even) would make every signature trivial or broken. */
	if (EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_E, &e) != 1 ||
	    !BN_is_odd(e) || BN_is_one(e))
		jwk_error(err, errlen, "%s: bad RSA public exponent", where);
	else
		rc = 0;
	BN_free(e);
	return rc;
}

/* 0 if kid (kidlen bytes; NULL: none) may name a new key of ks. */
static int
jwk_kid_check(const struct jwk_set *ks, const char *kid, size_t kidlen,
    const char *where, char *err, size_t errlen)
{
	if (kid == NULL)
		return 0;
	if (kidlen == 0 || kidlen > JWK_MAX_KID) {
		jwk_error(err, errlen, "%s: kid empty or longer than %d bytes",
		    where, JWK_MAX_KID);
		return -1;
	}
	/* Two keys under one kid: which one verifies would be luck. */
	if (jwk_find(ks, kid, kidlen) != NULL) {
		jwk_error(err, errlen, "%s: duplicate kid", where);
		return -1;
	}
	return 0;
}

/* Checks pkey and adds it to ks; takes ownership of pkey either way. */
static int
jwk_set_add(struct jwk_set *ks, EVP_PKEY *pkey, const char *kid,
    size_t kidlen, const char *where, char *err, size_t errlen)
{
	struct jwk_key *k;

	if (jwk_key_check(pkey, where, err, errlen) == -1 ||
	    jwk_kid_check(ks, kid, kidlen, where, err, errlen) == -1)
		goto fail;
	if (ks->nkeys == JWK_MAX_KEYS) {
		jwk_error(err, errlen, "%s: more than %d keys", where,
		    JWK_MAX_KEYS);
		goto fail;
	}
	k = &ks->keys[ks->nkeys];
	if ((k->vctx = jwk_rs256_context(pkey, ks->sha256)) == NULL) {
		jwk_error(err, errlen, "%s: cannot set up RS256 verification",
		    where);
		goto fail;
	}
	ks->nkeys++;
	k->pkey = pkey;
	k->sigsize = (size_t)EVP_PKEY_get_size(pkey);
	if (kid != NULL) {
		memcpy(k->kid, kid, kidlen);
		k->kid[kidlen] = '\0';
		k->kidlen = kidlen;
		k->has_kid = 1;
	}
	return 0;
fail:
	EVP_PKEY_free(pkey);
	return -1;
}

/* Public keys carry no passphrase; never let OpenSSL prompt on a tty. */
static int
jwk_no_password(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

static int
jwk_set_pem(struct jwk_set *ks, const char *buf, size_t len,
    const char *default_kid, char *err, size_t errlen)
{
	BIO *bio;
	EVP_PKEY *pkey;
	char rest[128];
	int i, n, rc = -1;

	if ((bio = BIO_new_mem_buf(buf, (int)len)) == NULL) {
		jwk_error(err, errlen, "PEM: out of memory");
		return -1;
	}
	if ((pkey = PEM_read_bio_PUBKEY(bio, NULL, jwk_no_password,
	    NULL)) == NULL) {
		jwk_error(err, errlen, "PEM: not a valid public key");
		goto fail;
	}
	/* A second key would be silently ignored: say so instead. */
	while ((n = BIO_read(bio, rest, sizeof(rest))) > 0) {
		for (i = 0; i < n; i++) {
			if (!isspace((unsigned char)rest[i])) {
				jwk_error(err, errlen, "PEM: data after the "
				    "public key (use a JWKS for several keys)");
				EVP_PKEY_free(pkey);
				goto fail;
			}
		}
	}
	rc = jwk_set_add(ks, pkey, default_kid,
	    default_kid != NULL ? strlen(default_kid) : 0, "PEM key", err,
	    errlen);
fail:
	BIO_free(bio);
	return rc;
}

/* Decodes a base64url JWK member into a BIGNUM; returns why not, or NULL. */
static const char *
jwk_bignum(const json_t *v, size_t maxchars, BIGNUM **out)
{
	unsigned char bin[BASE64URL_DECODED_MAX(JWK_N_MAX)];
	long n;

	if (!json_is_string(v))
		return "missing or not a string";
	if (json_string_length(v) > maxchars)
		return "too long";
	if ((n = base64url_decode(json_string_value(v), json_string_length(v),
	    bin, sizeof(bin))) < 0)
		return "not base64url";
	if (n == 0)
		return "empty";
	if ((*out = BN_bin2bn(bin, (int)n, NULL)) == NULL)
		return "out of memory";
	return NULL;
}

static EVP_PKEY *
jwk_rsa_from_ne(const BIGNUM *n, const BIGNUM *e)
{
	OSSL_PARAM_BLD *bld;
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	EVP_PKEY *pkey = NULL;

	if ((bld = OSSL_PARAM_BLD_new()) == NULL)
		return NULL;
	if (OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) != 1 ||
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e) != 1 ||
	    (params = OSSL_PARAM_BLD_to_param(bld)) == NULL)
		goto fail;
	if ((ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) == NULL ||
	    EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1)
		pkey = NULL;
fail:
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	return pkey;
}

/* 1 if jwk's member name is the string want. */
static int
jwk_member_is(const json_t *jwk, const char *name, const char *want)
{
	const char *v = json_string_value(json_object_get(jwk, name));

	return v != NULL && strcmp(v, want) == 0;
}

/* Returns 1 if the JWK is an RS256 signing key, 0 to skip it. */
static int
jwk_usable(const json_t *jwk)
{
	/* Keys for other types and uses may share the set: skip, not fail. */
	if (!jwk_member_is(jwk, "kty", "RSA"))
		return 0;
	if (json_object_get(jwk, "use") != NULL &&
	    !jwk_member_is(jwk, "use", "sig"))
		return 0;
	if (json_object_get(jwk, "alg") != NULL &&
	    !jwk_member_is(jwk, "alg", "RS256"))
		return 0;
	return 1;
}

static int
jwk_from_json(struct jwk_set *ks, size_t idx, const json_t *jwk, char *err,
    size_t errlen)
{
	const json_t *kid;
	BIGNUM *n = NULL, *e = NULL;
	EVP_PKEY *pkey;
	const char *why;
	char where[64];
	int rc = -1;

	snprintf(where, sizeof(where), "JWKS key %zu", idx);
	if (!json_is_object(jwk)) {
		jwk_error(err, errlen, "%s: not an object", where);
		return -1;
	}
	if (!json_is_string(json_object_get(jwk, "kty"))) {
		jwk_error(err, errlen, "%s: kty missing or not a string",
		    where);
		return -1;
	}
	if (!jwk_usable(jwk))
		return 0;
	/* A private key has no business on the server; refuse, don't strip. */
	if (json_object_get(jwk, "d") != NULL) {
		jwk_error(err, errlen, "%s: private key material (d)", where);
		return -1;
	}
	kid = json_object_get(jwk, "kid");
	if (kid != NULL && !json_is_string(kid)) {
		jwk_error(err, errlen, "%s: kid is not a string", where);
		return -1;
	}
	if ((why = jwk_bignum(json_object_get(jwk, "n"), JWK_N_MAX,
	    &n)) != NULL) {
		jwk_error(err, errlen, "%s: n is %s", where, why);
		goto fail;
	}
	if ((why = jwk_bignum(json_object_get(jwk, "e"), JWK_E_MAX,
	    &e)) != NULL) {
		jwk_error(err, errlen, "%s: e is %s", where, why);
		goto fail;
	}
	if ((pkey = jwk_rsa_from_ne(n, e)) == NULL) {
		jwk_error(err, errlen, "%s: cannot build an RSA key", where);
		goto fail;
	}
	rc = jwk_set_add(ks, pkey, kid != NULL ? json_string_value(kid) : NULL,
	    kid != NULL ? json_string_length(kid) : 0, where, err, errlen);
fail:
	BN_free(n);
	BN_free(e);
	return rc;
}

static int
jwk_set_jwks(struct jwk_set *ks, const char *buf, size_t len, char *err,
    size_t errlen)
{
	json_error_t jerr;
	json_t *root, *keys, *jwk;
	size_t i;
	int rc = -1;

	if ((root = json_loadb(buf, len, JSON_REJECT_DUPLICATES,
	    &jerr)) == NULL) {
		jwk_error(err, errlen, "JWKS: line %d: %s", jerr.line,
		    jerr.text);
		return -1;
	}
	if (!json_is_array(keys = json_object_get(root, "keys"))) {
		jwk_error(err, errlen, "JWKS: no \"keys\" array");
		goto fail;
	}
	json_array_foreach(keys, i, jwk)
		if (jwk_from_json(ks, i, jwk, err, errlen) == -1)
			goto fail;
	if (ks->nkeys == 0) {
		jwk_error(err, errlen, "JWKS: no RSA key usable for RS256");
		goto fail;
	}
	/* A kid-less key among several could never be chosen. */
	for (i = 0; ks->nkeys > 1 && i < ks->nkeys; i++) {
		if (!ks->keys[i].has_kid) {
			jwk_error(err, errlen, "JWKS: every key needs a kid "
			    "when there are several");
			goto fail;
		}
	}
	rc = 0;
fail:
	json_decref(root);
	return rc;
}

struct jwk_set *
jwk_set_parse(const char *buf, size_t len, const char *default_kid,
    char *err, size_t errlen)
{
	struct jwk_set *ks;
	size_t off = 0;
	int rc;

	jwk_error(err, errlen, "%s", "");
	if (buf == NULL || len == 0 || len > JWK_SET_MAX_LEN) {
		jwk_error(err, errlen, "key material empty or over %d bytes",
		    JWK_SET_MAX_LEN);
		return NULL;
	}
	if ((ks = calloc(1, sizeof(*ks))) == NULL) {
		jwk_error(err, errlen, "out of memory");
		return NULL;
	}
	if ((ks->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL ||
	    (ks->mdctx = EVP_MD_CTX_new()) == NULL) {
		jwk_error(err, errlen, "SHA-256 not available from OpenSSL");
		goto fail;
	}
	while (off < len && isspace((unsigned char)buf[off]))
		off++;
	if (off < len && buf[off] == '{')
		rc = jwk_set_jwks(ks, buf, len, err, errlen);
	else if (len - off >= strlen(JWK_PEM_BEGIN) &&
	    memcmp(buf + off, JWK_PEM_BEGIN, strlen(JWK_PEM_BEGIN)) == 0)
		rc = jwk_set_pem(ks, buf, len, default_kid, err, errlen);
	else {
		jwk_error(err, errlen, "neither a PEM public key nor a JWKS");
		rc = -1;
	}
	if (rc == -1)
		goto fail;
	return ks;
fail:
	jwk_set_free(ks);
	ERR_clear_error();
	return NULL;
}

void
jwk_set_free(struct jwk_set *ks)
{
	size_t i;

	if (ks == NULL)
		return;
	for (i = 0; i < ks->nkeys; i++) {
		EVP_PKEY_CTX_free(ks->keys[i].vctx);
		EVP_PKEY_free(ks->keys[i].pkey);
	}
	EVP_MD_CTX_free(ks->mdctx);
	EVP_MD_free(ks->sha256);
	free(ks);
}

size_t
jwk_set_count(const struct jwk_set *ks)
{
	return ks != NULL ? ks->nkeys : 0;
}
