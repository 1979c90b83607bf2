/*
 * jwk.c: the key set (PURE; parsed by the master at start, for -t and on
 * every reload, and used by the workers it forks; also cfpm-token's and
 * the tests'). An SPKI PEM key or a JWKS document becomes RSA public keys,
 * each checked (RSA, 2048..16384 bits, a sane exponent, a unique kid) and
 * given what its RS256 verification needs once: the modulus's Montgomery
 * context and the signature encoding with the hash left out, so a request
 * costs one SHA-256 and one modular exponentiation. The only OpenSSL user
 * in cfpm; no I/O, no logging, no globals.
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

#include "events/base64url.h"

#define JWK_KEY_MIN_BITS	2048	/* smaller RSA keys are refused */
#define JWK_KEY_MAX_BITS	16384	/* OpenSSL will not verify with more */
#define JWK_KEY_MAX_BYTES	(JWK_KEY_MAX_BITS / 8)
#define JWK_SET_MAX_LEN		(1024 * 1024)	/* PEM or JWKS text, bytes */
#define JWK_N_MAX	BASE64URL_ENCODED_LEN(JWK_KEY_MAX_BYTES + 1)
#define JWK_E_MAX	BASE64URL_ENCODED_LEN(8)	/* e up to 64 bits */

#define JWK_PEM_BEGIN	"-----BEGIN PUBLIC KEY-----"

/*
 * RSASSA-PKCS1-v1_5's encoding of a SHA-256 hash H in k bytes (RFC 8017
 * 9.2): 00 01 FF..FF 00, the DigestInfo below, then H. Only H changes.
 */
#define JWK_SHA256_LEN		32
static const unsigned char jwk_sha256_info[] = {
	0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65,
	0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20,
};
#define JWK_EM_FIXED	(3 + sizeof(jwk_sha256_info))	/* 00 01 .. 00 */
/* OpenSSL's limit on e for moduli past 3072 bits (rsa_ossl.c), kept so
 * that no key verifies here that OpenSSL's own RSA_verify would refuse. */
#define JWK_SMALL_MODULUS_BITS	3072
#define JWK_MAX_PUBEXP_BITS	64

struct jwk_key {
	EVP_PKEY	*pkey;
	BIGNUM		*n, *e;
	BN_MONT_CTX	*mont;			/* n's, set up once */
	BIGNUM		*em;			/* the encoding, H = 0 */
	size_t		 sigsize;		/* modulus bytes */
	int		 has_kid;
	size_t		 kidlen;
	char		 kid[JWK_MAX_KID + 1];
};

struct jwk_set {
	EVP_MD		*sha256;		/* fetched once per key set */
	EVP_MD_CTX	*mdctx;			/* reused for every digest */
	BN_CTX		*bnctx;			/* reused for every verify */
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
 * m = s^e mod n (0 <= s < n) by left-to-right square and multiply on n's
 * Montgomery form, as BN_mod_exp_mont (what OpenSSL's RSA_verify runs)
 * does, but without its two spare products: its window starts with a
 * multiplication by 1 and it leaves the Montgomery form at the end with
 * a reduction of its own. e is odd (jwk_key_check), so the last step is
 * a multiplication by s, and multiplying the Montgomery form x*R by the
 * plain s gives x*s*R*R^-1, the plain product: that leaves the form for
 * free. For e = 65537, 18 Montgomery products instead of 20. Public
 * exponent, public data: nothing here needs constant time.
 */
static int
jwk_modexp(BIGNUM *m, const BIGNUM *s, const struct jwk_key *k,
    BN_CTX *ctx)
{
	BIGNUM *sr;
	int i;

	if ((sr = BN_CTX_get(ctx)) == NULL ||
	    BN_to_montgomery(sr, s, k->mont, ctx) != 1 ||
	    BN_copy(m, sr) == NULL)
		return -1;
	for (i = BN_num_bits(k->e) - 2; i >= 0; i--) {
		if (BN_mod_mul_montgomery(m, m, m, k->mont, ctx) != 1)
			return -1;
		if (BN_is_bit_set(k->e, i) && BN_mod_mul_montgomery(m, m,
		    i > 0 ? sr : s, k->mont, ctx) != 1)
			return -1;
	}
	return 0;
}

/*
 * 1 if sig is k's RSASSA-PKCS1-v1_5 signature of the SHA-256 hash h: RFC
 * 8017 8.2.2's steps themselves, on OpenSSL's bignums. RSAVP1: s < n,
 * m = s^e mod n (jwk_modexp), the arithmetic OpenSSL's RSA_verify
 * does (rsa_ossl_public_decrypt) under its padding check and DigestInfo
 * comparison. Then "encode and compare" (8.2.2 step 3): m must equal
 * the encoding of h, i.e. m - em must be h exactly, as integers (both
 * below n: equal integers are equal k-byte strings). Nothing is parsed
 * out of m, so no lenient decoding can let a forged encoding through.
 * A public operation on public data: no blinding (OpenSSL blinds only
 * private ones), no constant time needed.
 */
static int
jwk_rsa_pkcs1(BN_CTX *ctx, const struct jwk_key *k, const unsigned char *sig,
    size_t siglen, const unsigned char *h)
{
	unsigned char got[JWK_SHA256_LEN];
	BIGNUM *s, *m;
	int ok = 0;

	BN_CTX_start(ctx);
	if ((s = BN_CTX_get(ctx)) == NULL || (m = BN_CTX_get(ctx)) == NULL ||
	    BN_bin2bn(sig, (int)siglen, s) == NULL)
		goto done;
	/* "signature representative out of range" */
	if (BN_ucmp(s, k->n) >= 0)
		goto done;
	if (jwk_modexp(m, s, k, ctx) == -1 || BN_sub(m, m, k->em) != 1)
		goto done;
	ok = !BN_is_negative(m) && BN_num_bytes(m) <= JWK_SHA256_LEN &&
	    BN_bn2binpad(m, got, JWK_SHA256_LEN) == JWK_SHA256_LEN &&
	    memcmp(got, h, JWK_SHA256_LEN) == 0;
done:
	BN_CTX_end(ctx);
	return ok;
}

/*
 * Returns 1 if sig verifies, 0 if not. The digest context and the key's
 * Montgomery context are set up once per key set, so a request costs one
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
	    EVP_DigestFinal_ex(ks->mdctx, hash, &hlen) != 1 ||
	    hlen != JWK_SHA256_LEN)
		goto done;
	rc = jwk_rsa_pkcs1(ks->bnctx, k, sig, siglen, hash);
done:
	/* Leave no stale errors for the next OpenSSL user (libpq's TLS). */
	if (rc != 1)
		ERR_clear_error();
	return rc;
}

/*
 * What verifying with k->pkey needs, once: n and e, n's Montgomery
 * context, and the encoding of a hash in k->sigsize bytes with the hash
 * zero. Returns 0, or -1 (jwk_rs256_release frees what was made). Never
 * a key OpenSSL's own RSA_verify would refuse: e < n, and at most 64
 * bits of e past a 3072-bit modulus.
 */
static int
jwk_rs256_setup(struct jwk_key *k, BN_CTX *ctx)
{
	unsigned char em[JWK_KEY_MAX_BYTES];
	size_t ps = k->sigsize - JWK_EM_FIXED - JWK_SHA256_LEN;

	if (EVP_PKEY_get_bn_param(k->pkey, OSSL_PKEY_PARAM_RSA_N, &k->n) != 1 ||
	    EVP_PKEY_get_bn_param(k->pkey, OSSL_PKEY_PARAM_RSA_E,
	    &k->e) != 1 || (k->mont = BN_MONT_CTX_new()) == NULL ||
	    BN_MONT_CTX_set(k->mont, k->n, ctx) != 1)
		return -1;
	if (BN_ucmp(k->n, k->e) <= 0 ||
	    (BN_num_bits(k->n) > JWK_SMALL_MODULUS_BITS &&
	    BN_num_bits(k->e) > JWK_MAX_PUBEXP_BITS))
		return -1;
	em[0] = 0x00;
	em[1] = 0x01;
	memset(em + 2, 0xff, ps);
	em[2 + ps] = 0x00;
	memcpy(em + 3 + ps, jwk_sha256_info, sizeof(jwk_sha256_info));
	memset(em + JWK_EM_FIXED + ps, 0, JWK_SHA256_LEN);
	if ((k->em = BN_bin2bn(em, (int)k->sigsize, NULL)) == NULL)
		return -1;
	return 0;
}

/* Frees what jwk_rs256_setup made (NULL fields are fine). */
static void
jwk_rs256_release(struct jwk_key *k)
{
	BN_free(k->em);
	BN_MONT_CTX_free(k->mont);
	BN_free(k->e);
	BN_free(k->n);
	k->em = k->e = k->n = NULL;
	k->mont = NULL;
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
	k->pkey = pkey;
	k->sigsize = (size_t)EVP_PKEY_get_size(pkey);
	if (jwk_rs256_setup(k, ks->bnctx) == -1) {
		jwk_error(err, errlen, "%s: cannot set up RS256 verification",
		    where);
		jwk_rs256_release(k);
		goto fail;
	}
	ks->nkeys++;
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
	    (ks->mdctx = EVP_MD_CTX_new()) == NULL ||
	    (ks->bnctx = BN_CTX_new()) == NULL) {
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
		jwk_rs256_release(&ks->keys[i]);
		EVP_PKEY_free(ks->keys[i].pkey);
	}
	BN_CTX_free(ks->bnctx);
	EVP_MD_CTX_free(ks->mdctx);
	EVP_MD_free(ks->sha256);
	free(ks);
}

size_t
jwk_set_count(const struct jwk_set *ks)
{
	return ks != NULL ? ks->nkeys : 0;
}
