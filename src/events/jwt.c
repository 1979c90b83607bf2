/*
 * jwt.c: RS256 JSON Web Token verification (PURE; runs in the workers via
 * auth.c, and wherever key files are loaded or checked).
 *
 * The order is fixed: split and strict base64url decode, header (alg
 * allow-list, crit, typ, kid), key choice by kid, RS256 signature, and only
 * then the claims. Nothing in the claims is looked at before the signature
 * verified. The only OpenSSL user in cfpm; no I/O, no logging, no globals.
 */
#include "events/jwt.h"

#include <ctype.h>
#include <math.h>
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

#define JWT_KEY_MIN_BITS	2048	/* smaller RSA keys are refused */
#define JWT_KEY_MAX_BITS	16384	/* OpenSSL will not verify with more */
#define JWT_KEY_MAX_BYTES	(JWT_KEY_MAX_BITS / 8)
#define JWT_KEYSET_MAX_LEN	(1024 * 1024)	/* PEM or JWKS text, bytes */
#define JWK_N_MAX	BASE64URL_ENCODED_LEN(JWT_KEY_MAX_BYTES + 1)
#define JWK_E_MAX	BASE64URL_ENCODED_LEN(8)	/* e up to 64 bits */
/* A decoded segment never exceeds this: the whole token is <= JWT_MAX_LEN. */
#define JWT_SEG_MAX	BASE64URL_DECODED_MAX(JWT_MAX_LEN)

#define PEM_PUBKEY_BEGIN	"-----BEGIN PUBLIC KEY-----"

struct jwt_key {
	EVP_PKEY	*pkey;
	EVP_PKEY_CTX	*vctx;			/* verify context, set up once */
	size_t		 sigsize;		/* modulus bytes */
	int		 has_kid;
	size_t		 kidlen;
	char		 kid[JWT_MAX_KID + 1];
};

struct jwt_keyset {
	EVP_MD		*sha256;		/* fetched once per key set */
	EVP_MD_CTX	*mdctx;			/* reused for every digest */
	size_t		 nkeys;
	struct jwt_key	 keys[JWT_MAX_KEYS];
};

/* A token split at its dots and decoded; signed_part is borrowed. */
struct jwt_token {
	const char	*signed_part;		/* "<header>.<payload>" */
	size_t		 signed_len;
	size_t		 hdrlen, paylen, siglen;
	unsigned char	 hdr[JWT_SEG_MAX];
	unsigned char	 pay[JWT_SEG_MAX];
	unsigned char	 sig[JWT_SEG_MAX];
};

/* What the header contributes to key choice. */
struct jwt_header {
	int		 has_kid;
	size_t		 kidlen;
	char		 kid[JWT_MAX_KID + 1];
};

/* A NumericDate: a JSON integer, or a finite JSON real. */
struct jwt_date {
	int		 is_int;
	int64_t		 i;
	double		 r;
};

__attribute__((format(printf, 3, 4)))
static void
set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* 1 if v is a JSON string equal to s (jansson strings hold no NUL). */
static int
json_str_eq(const json_t *v, const char *s)
{
	return json_is_string(v) && s != NULL &&
	    strcmp(json_string_value(v), s) == 0;
}

/* 1 if every container in v nests at most JWT_MAX_DEPTH deep. */
static int
json_depth_ok(json_t *v, int depth)
{
	const char *name;
	json_t *m;
	size_t i;

	if (!json_is_object(v) && !json_is_array(v))
		return 1;
	if (depth > JWT_MAX_DEPTH)
		return 0;
	if (json_is_object(v)) {
		json_object_foreach(v, name, m)
			if (!json_depth_ok(m, depth + 1))
				return 0;
	} else {
		json_array_foreach(v, i, m)
			if (!json_depth_ok(m, depth + 1))
				return 0;
	}
	return 1;
}

/* Parses a JSON object; on any defect returns bad (or JWT_ENOMEM). */
static enum jwt_err
json_object_parse(const unsigned char *buf, size_t len, enum jwt_err bad,
    json_t **out)
{
	json_error_t jerr;
	json_t *root;

	/*
	 * Duplicates rejected: with "last member wins" a token can say two
	 * things. No JSON_ALLOW_NUL: a \u0000 would cut our C strings short.
	 */
	root = json_loadb((const char *)buf, len, JSON_REJECT_DUPLICATES,
	    &jerr);
	if (root == NULL)
		return json_error_code(&jerr) == json_error_out_of_memory ?
		    JWT_ENOMEM : bad;
	if (!json_is_object(root) || !json_depth_ok(root, 1)) {
		json_decref(root);
		return bad;
	}
	*out = root;
	return JWT_OK;
}

/* Decodes one segment; -1 if it is not strict base64url. */
static int
seg_decode(const char *s, size_t len, unsigned char *dst, size_t *outlen)
{
	long n;

	if ((n = base64url_decode(s, len, dst, JWT_SEG_MAX)) < 0)
		return -1;
	*outlen = (size_t)n;
	return 0;
}

static enum jwt_err
token_split(const char *tok, size_t len, struct jwt_token *t)
{
	const char *d1, *d2, *end;

	/* Bound the work before touching the bytes. */
	if (len > JWT_MAX_LEN)
		return JWT_ETOOLONG;
	if (tok == NULL || len == 0)
		return JWT_EFORMAT;
	end = tok + len;
	if ((d1 = memchr(tok, '.', len)) == NULL ||
	    (d2 = memchr(d1 + 1, '.', (size_t)(end - d1 - 1))) == NULL ||
	    memchr(d2 + 1, '.', (size_t)(end - d2 - 1)) != NULL)
		return JWT_EFORMAT;
	if (d1 == tok || d2 == d1 + 1)
		return JWT_EFORMAT;
	/* Strict decoding: one signature must not cover several spellings. */
	if (seg_decode(tok, (size_t)(d1 - tok), t->hdr, &t->hdrlen) == -1 ||
	    seg_decode(d1 + 1, (size_t)(d2 - d1 - 1), t->pay,
	    &t->paylen) == -1 ||
	    seg_decode(d2 + 1, (size_t)(end - d2 - 1), t->sig,
	    &t->siglen) == -1)
		return JWT_EFORMAT;
	t->signed_part = tok;
	t->signed_len = (size_t)(d2 - tok);
	return JWT_OK;
}

static enum jwt_err
header_alg(const json_t *root)
{
	/* alg is pinned to RS256 (case-sensitive); the header must match. */
	return json_str_eq(json_object_get(root, "alg"), "RS256") ?
	    JWT_OK : JWT_EALG;
}

static enum jwt_err
header_typ(const json_t *root, enum jwt_typ_mode mode)
{
	const json_t *typ;

	if ((typ = json_object_get(root, "typ")) == NULL)
		return mode == JWT_TYP_STRICT ? JWT_ETYP : JWT_OK;
	if (json_str_eq(typ, "at+jwt") ||
	    json_str_eq(typ, "application/at+jwt"))
		return JWT_OK;
	/* RFC 9068 strict mode: an ID token ("JWT") is not an access token. */
	if (mode == JWT_TYP_LENIENT && json_str_eq(typ, "JWT"))
		return JWT_OK;
	return JWT_ETYP;
}

static enum jwt_err
header_kid(const json_t *root, struct jwt_header *h)
{
	const json_t *kid;
	size_t len;

	h->has_kid = 0;
	if ((kid = json_object_get(root, "kid")) == NULL)
		return JWT_OK;
	if (!json_is_string(kid))
		return JWT_EHEADER;
	/* kid is only compared with our keys, never used as a path or URL. */
	len = json_string_length(kid);
	if (len == 0 || len > JWT_MAX_KID)
		return JWT_EKID;
	memcpy(h->kid, json_string_value(kid), len);
	h->kid[len] = '\0';
	h->kidlen = len;
	h->has_kid = 1;
	return JWT_OK;
}

/*
 * jwk, jku, x5u and x5c are never read: the key comes from our key set
 * only, or anyone could sign with a key they ship in the header.
 */
static enum jwt_err
header_check(const struct jwt_token *t, enum jwt_typ_mode mode,
    struct jwt_header *h)
{
	json_t *root;
	enum jwt_err e;

	if ((e = json_object_parse(t->hdr, t->hdrlen, JWT_EHEADER,
	    &root)) != JWT_OK)
		return e;
	if ((e = header_alg(root)) != JWT_OK)
		goto fail;
	/* We implement no extension, so any crit fails (RFC 7515 4.1.11). */
	if (json_object_get(root, "crit") != NULL) {
		e = JWT_ECRIT;
		goto fail;
	}
	if ((e = header_typ(root, mode)) != JWT_OK)
		goto fail;
	e = header_kid(root, h);
fail:
	json_decref(root);
	return e;
}

static enum jwt_err
key_choose(const struct jwt_keyset *ks, const struct jwt_header *h,
    const struct jwt_key **out)
{
	size_t i;

	if (ks == NULL || ks->nkeys == 0)
		return JWT_EKID;
	if (h->has_kid) {
		for (i = 0; i < ks->nkeys; i++) {
			if (ks->keys[i].has_kid &&
			    ks->keys[i].kidlen == h->kidlen &&
			    memcmp(ks->keys[i].kid, h->kid, h->kidlen) == 0) {
				*out = &ks->keys[i];
				return JWT_OK;
			}
		}
		/* A lone key without a kid stands for any kid. */
		if (ks->nkeys == 1 && !ks->keys[0].has_kid) {
			*out = &ks->keys[0];
			return JWT_OK;
		}
		return JWT_EKID;
	}
	/* No kid: never guess between several keys. */
	if (ks->nkeys != 1)
		return JWT_EKID;
	*out = &ks->keys[0];
	return JWT_OK;
}

/*
 * Returns 1 if sig verifies, 0 if not. The digest context and the key's
 * verify context are set up once per key set, so a request costs one
 * SHA-256 and one RSA public operation, with no provider look-ups and no
 * allocations.
 */
static int
rs256_check(const struct jwt_keyset *ks, const struct jwt_key *k,
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
rs256_context(EVP_PKEY *pkey, const EVP_MD *md)
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

static enum jwt_err
signature_check(const struct jwt_keyset *ks, const struct jwt_key *k,
    const struct jwt_token *t)
{
	int rc;

	rc = rs256_check(ks, k, (const unsigned char *)t->signed_part,
	    t->signed_len, t->sig, t->siglen);
	return rc == 1 ? JWT_OK : JWT_ESIG;
}

/* Returns 1 and fills d if v is a NumericDate, else 0. */
static int
date_get(const json_t *v, struct jwt_date *d)
{
	/*
	 * Typed reads only: json_integer_value() of a string is 0, which
	 * would turn a bad nbf into "no restriction".
	 */
	if (json_is_integer(v)) {
		d->is_int = 1;
		d->i = (int64_t)json_integer_value(v);
		return 1;
	}
	if (json_is_real(v) && isfinite(json_real_value(v))) {
		d->is_int = 0;
		d->r = json_real_value(v);
		return 1;
	}
	return 0;
}

/* now < d + leeway, computed as now - leeway < d: no overflow, no UB. */
static int
date_before(int64_t now, int64_t leeway, const struct jwt_date *d)
{
	int64_t t;

	if (__builtin_sub_overflow(now, leeway, &t))
		return leeway > 0;	/* below INT64_MIN: before any date */
	if (d->is_int)
		return t < d->i;
	return (long double)t < (long double)d->r;
}

/* now >= d - leeway, computed as now + leeway >= d: no overflow, no UB. */
static int
date_reached(int64_t now, int64_t leeway, const struct jwt_date *d)
{
	int64_t t;

	if (__builtin_add_overflow(now, leeway, &t))
		return leeway > 0;	/* above INT64_MAX: after any date */
	if (d->is_int)
		return t >= d->i;
	return (long double)t >= (long double)d->r;
}

static enum jwt_err
claim_aud(const json_t *root, const char *audience)
{
	const json_t *aud, *m;
	size_t i;
	int found = 0;

	aud = json_object_get(root, "aud");
	if (json_is_string(aud))
		return json_str_eq(aud, audience) ? JWT_OK : JWT_EAUD;
	if (!json_is_array(aud))
		return JWT_EAUD;
	json_array_foreach(aud, i, m) {
		/* A malformed member makes the whole list suspect. */
		if (!json_is_string(m))
			return JWT_EAUD;
		if (json_str_eq(m, audience))
			found = 1;
	}
	return found ? JWT_OK : JWT_EAUD;
}

/* exp required, nbf and iat optional; a wrong type is never "absent". */
static enum jwt_err
claim_times(const json_t *root, int64_t now, int64_t leeway)
{
	const json_t *v;
	struct jwt_date d;

	if ((v = json_object_get(root, "exp")) == NULL)
		return JWT_EEXP;
	if (!date_get(v, &d))
		return JWT_ECLAIMS;
	if (!date_before(now, leeway, &d))
		return JWT_EEXP;
	if ((v = json_object_get(root, "nbf")) != NULL) {
		if (!date_get(v, &d))
			return JWT_ECLAIMS;
		if (!date_reached(now, leeway, &d))
			return JWT_ENBF;
	}
	if ((v = json_object_get(root, "iat")) != NULL && !date_get(v, &d))
		return JWT_ECLAIMS;
	return JWT_OK;
}

static enum jwt_err
claim_sub(const json_t *root, struct jwt_claims *c)
{
	const json_t *sub;
	size_t len;

	if (!json_is_string(sub = json_object_get(root, "sub")))
		return JWT_ESUB;
	len = json_string_length(sub);
	/* The subject selects rows: empty, cut short or overlong is refused. */
	if (len == 0 || len > JWT_MAX_SUB ||
	    memchr(json_string_value(sub), '\0', len) != NULL)
		return JWT_ESUB;
	memcpy(c->sub, json_string_value(sub), len);
	c->sub[len] = '\0';
	return JWT_OK;
}

static enum jwt_err
claim_scope(const json_t *root, struct jwt_claims *c)
{
	const json_t *scope;
	size_t len;

	c->has_scope = 0;
	if ((scope = json_object_get(root, "scope")) == NULL)
		return JWT_OK;
	if (!json_is_string(scope))
		return JWT_ECLAIMS;
	len = json_string_length(scope);
	if (len > JWT_MAX_SCOPE ||
	    memchr(json_string_value(scope), '\0', len) != NULL)
		return JWT_ECLAIMS;
	memcpy(c->scope, json_string_value(scope), len);
	c->scope[len] = '\0';
	c->has_scope = 1;
	return JWT_OK;
}

/* Called only after the signature verified. */
static enum jwt_err
claims_check(const struct jwt_token *t, const struct jwt_policy *p,
    int64_t now, struct jwt_claims *c)
{
	json_t *root;
	enum jwt_err e;

	if ((e = json_object_parse(t->pay, t->paylen, JWT_ECLAIMS,
	    &root)) != JWT_OK)
		return e;
	if (!json_str_eq(json_object_get(root, "iss"), p->issuer)) {
		e = JWT_EISS;
		goto fail;
	}
	if ((e = claim_aud(root, p->audience)) != JWT_OK ||
	    (e = claim_times(root, now, p->leeway)) != JWT_OK ||
	    (e = claim_sub(root, c)) != JWT_OK)
		goto fail;
	e = claim_scope(root, c);
fail:
	json_decref(root);
	return e;
}

int
jwt_verify(const struct jwt_keyset *ks, const struct jwt_policy *policy,
    const char *token, size_t len, int64_t now, struct jwt_claims *claims,
    enum jwt_err *err)
{
	struct jwt_token t;
	struct jwt_header h;
	const struct jwt_key *key = NULL;
	enum jwt_err e;

	memset(claims, 0, sizeof(*claims));
	if ((e = token_split(token, len, &t)) != JWT_OK)
		goto fail;
	if ((e = header_check(&t, policy->typ_mode, &h)) != JWT_OK)
		goto fail;
	if ((e = key_choose(ks, &h, &key)) != JWT_OK)
		goto fail;
	if ((e = signature_check(ks, key, &t)) != JWT_OK)
		goto fail;
	if ((e = claims_check(&t, policy, now, claims)) != JWT_OK)
		goto fail;
	if (err != NULL)
		*err = JWT_OK;
	return 0;
fail:
	/* A rejected token leaves nothing behind that looks like claims. */
	memset(claims, 0, sizeof(*claims));
	if (err != NULL)
		*err = e;
	return -1;
}

int
jwt_rs256_verify(const struct jwt_keyset *ks, size_t idx,
    const unsigned char *msg, size_t msglen,
    const unsigned char *sig, size_t siglen)
{
	if (ks == NULL || idx >= ks->nkeys)
		return 0;
	return rs256_check(ks, &ks->keys[idx], msg, msglen, sig,
	    siglen) == 1;
}

/* Checks pkey and adds it to ks; takes ownership of pkey either way. */
static int
keyset_add(struct jwt_keyset *ks, EVP_PKEY *pkey, const char *kid,
    size_t kidlen, const char *where, char *err, size_t errlen)
{
	struct jwt_key *k;
	BIGNUM *e = NULL;
	size_t i;
	int bits;

	/* RSA only; an RSA-PSS-only key is a different type and refused. */
	if (!EVP_PKEY_is_a(pkey, "RSA")) {
		set_err(err, errlen, "%s: not an RSA key", where);
		goto fail;
	}
	bits = EVP_PKEY_get_bits(pkey);
	/* Under 2048 bits RSA is factorable in practice (NIST SP 800-131A). */
	if (bits < JWT_KEY_MIN_BITS || bits > JWT_KEY_MAX_BITS) {
		set_err(err, errlen, "%s: RSA key of %d bits (need %d to %d)",
		    where, bits, JWT_KEY_MIN_BITS, JWT_KEY_MAX_BITS);
		goto fail;
	}
	/* e = 1 (or even) would make every signature trivial or broken. */
	if (EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_E, &e) != 1 ||
	    !BN_is_odd(e) || BN_is_one(e)) {
		set_err(err, errlen, "%s: bad RSA public exponent", where);
		goto fail;
	}
	if (kid != NULL && (kidlen == 0 || kidlen > JWT_MAX_KID)) {
		set_err(err, errlen, "%s: kid empty or longer than %d bytes",
		    where, JWT_MAX_KID);
		goto fail;
	}
	for (i = 0; kid != NULL && i < ks->nkeys; i++) {
		/* Two keys under one kid: which one verifies would be luck. */
		if (ks->keys[i].has_kid && ks->keys[i].kidlen == kidlen &&
		    memcmp(ks->keys[i].kid, kid, kidlen) == 0) {
			set_err(err, errlen, "%s: duplicate kid", where);
			goto fail;
		}
	}
	if (ks->nkeys == JWT_MAX_KEYS) {
		set_err(err, errlen, "%s: more than %d keys", where,
		    JWT_MAX_KEYS);
		goto fail;
	}
	k = &ks->keys[ks->nkeys];
	if ((k->vctx = rs256_context(pkey, ks->sha256)) == NULL) {
		set_err(err, errlen, "%s: cannot set up RS256 verification",
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
	BN_free(e);
	return 0;
fail:
	BN_free(e);
	EVP_PKEY_free(pkey);
	return -1;
}

/* Public keys carry no passphrase; never let OpenSSL prompt on a tty. */
static int
pem_no_password(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

static int
keyset_pem(struct jwt_keyset *ks, const char *buf, size_t len,
    const char *default_kid, char *err, size_t errlen)
{
	BIO *bio;
	EVP_PKEY *pkey;
	char rest[128];
	int i, n, rc = -1;

	if ((bio = BIO_new_mem_buf(buf, (int)len)) == NULL) {
		set_err(err, errlen, "PEM: out of memory");
		return -1;
	}
	if ((pkey = PEM_read_bio_PUBKEY(bio, NULL, pem_no_password,
	    NULL)) == NULL) {
		set_err(err, errlen, "PEM: not a valid public key");
		goto fail;
	}
	/* A second key would be silently ignored: say so instead. */
	while ((n = BIO_read(bio, rest, sizeof(rest))) > 0) {
		for (i = 0; i < n; i++) {
			if (!isspace((unsigned char)rest[i])) {
				set_err(err, errlen, "PEM: data after the "
				    "public key (use a JWKS for several keys)");
				EVP_PKEY_free(pkey);
				goto fail;
			}
		}
	}
	rc = keyset_add(ks, pkey, default_kid,
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
rsa_from_ne(const BIGNUM *n, const BIGNUM *e)
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

/* Returns 1 if the JWK is an RS256 signing key, 0 to skip it. */
static int
jwk_usable(const json_t *jwk)
{
	const json_t *v;

	/* Keys for other types and uses may share the set: skip, not fail. */
	if (!json_str_eq(json_object_get(jwk, "kty"), "RSA"))
		return 0;
	v = json_object_get(jwk, "use");
	if (v != NULL && !json_str_eq(v, "sig"))
		return 0;
	v = json_object_get(jwk, "alg");
	if (v != NULL && !json_str_eq(v, "RS256"))
		return 0;
	return 1;
}

static int
jwks_key(struct jwt_keyset *ks, size_t idx, const json_t *jwk, char *err,
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
		set_err(err, errlen, "%s: not an object", where);
		return -1;
	}
	if (!json_is_string(json_object_get(jwk, "kty"))) {
		set_err(err, errlen, "%s: kty missing or not a string", where);
		return -1;
	}
	if (!jwk_usable(jwk))
		return 0;
	/* A private key has no business on the server; refuse, don't strip. */
	if (json_object_get(jwk, "d") != NULL) {
		set_err(err, errlen, "%s: private key material (d)", where);
		return -1;
	}
	kid = json_object_get(jwk, "kid");
	if (kid != NULL && !json_is_string(kid)) {
		set_err(err, errlen, "%s: kid is not a string", where);
		return -1;
	}
	if ((why = jwk_bignum(json_object_get(jwk, "n"), JWK_N_MAX,
	    &n)) != NULL) {
		set_err(err, errlen, "%s: n is %s", where, why);
		goto fail;
	}
	if ((why = jwk_bignum(json_object_get(jwk, "e"), JWK_E_MAX,
	    &e)) != NULL) {
		set_err(err, errlen, "%s: e is %s", where, why);
		goto fail;
	}
	if ((pkey = rsa_from_ne(n, e)) == NULL) {
		set_err(err, errlen, "%s: cannot build an RSA key", where);
		goto fail;
	}
	rc = keyset_add(ks, pkey, kid != NULL ? json_string_value(kid) : NULL,
	    kid != NULL ? json_string_length(kid) : 0, where, err, errlen);
fail:
	BN_free(n);
	BN_free(e);
	return rc;
}

static int
keyset_jwks(struct jwt_keyset *ks, const char *buf, size_t len, char *err,
    size_t errlen)
{
	json_error_t jerr;
	json_t *root, *keys, *jwk;
	size_t i;
	int rc = -1;

	if ((root = json_loadb(buf, len, JSON_REJECT_DUPLICATES,
	    &jerr)) == NULL) {
		set_err(err, errlen, "JWKS: line %d: %s", jerr.line, jerr.text);
		return -1;
	}
	if (!json_is_array(keys = json_object_get(root, "keys"))) {
		set_err(err, errlen, "JWKS: no \"keys\" array");
		goto fail;
	}
	json_array_foreach(keys, i, jwk)
		if (jwks_key(ks, i, jwk, err, errlen) == -1)
			goto fail;
	if (ks->nkeys == 0) {
		set_err(err, errlen, "JWKS: no RSA key usable for RS256");
		goto fail;
	}
	/* A kid-less key among several could never be chosen. */
	for (i = 0; ks->nkeys > 1 && i < ks->nkeys; i++) {
		if (!ks->keys[i].has_kid) {
			set_err(err, errlen, "JWKS: every key needs a kid "
			    "when there are several");
			goto fail;
		}
	}
	rc = 0;
fail:
	json_decref(root);
	return rc;
}

struct jwt_keyset *
jwt_keyset_parse(const char *buf, size_t len, const char *default_kid,
    char *err, size_t errlen)
{
	struct jwt_keyset *ks;
	size_t off = 0;
	int rc;

	set_err(err, errlen, "%s", "");
	if (buf == NULL || len == 0 || len > JWT_KEYSET_MAX_LEN) {
		set_err(err, errlen, "key material empty or over %d bytes",
		    JWT_KEYSET_MAX_LEN);
		return NULL;
	}
	if ((ks = calloc(1, sizeof(*ks))) == NULL) {
		set_err(err, errlen, "out of memory");
		return NULL;
	}
	if ((ks->sha256 = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL ||
	    (ks->mdctx = EVP_MD_CTX_new()) == NULL) {
		set_err(err, errlen, "SHA-256 not available from OpenSSL");
		goto fail;
	}
	while (off < len && isspace((unsigned char)buf[off]))
		off++;
	if (off < len && buf[off] == '{')
		rc = keyset_jwks(ks, buf, len, err, errlen);
	else if (len - off >= strlen(PEM_PUBKEY_BEGIN) &&
	    memcmp(buf + off, PEM_PUBKEY_BEGIN, strlen(PEM_PUBKEY_BEGIN)) == 0)
		rc = keyset_pem(ks, buf, len, default_kid, err, errlen);
	else {
		set_err(err, errlen, "neither a PEM public key nor a JWKS");
		rc = -1;
	}
	if (rc == -1)
		goto fail;
	return ks;
fail:
	jwt_keyset_free(ks);
	ERR_clear_error();
	return NULL;
}

void
jwt_keyset_free(struct jwt_keyset *ks)
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
jwt_keyset_count(const struct jwt_keyset *ks)
{
	return ks != NULL ? ks->nkeys : 0;
}

const char *
jwt_strerror(enum jwt_err err)
{
	switch (err) {
	case JWT_OK:		return "valid";
	case JWT_ETOOLONG:	return "token too long";
	case JWT_EFORMAT:	return "malformed token";
	case JWT_EHEADER:	return "bad token header";
	case JWT_EALG:		return "algorithm not allowed";
	case JWT_ECRIT:		return "critical header not understood";
	case JWT_ETYP:		return "token type not accepted";
	case JWT_EKID:		return "no key for this kid";
	case JWT_ESIG:		return "bad signature";
	case JWT_ECLAIMS:	return "malformed claims";
	case JWT_EISS:		return "wrong issuer";
	case JWT_EAUD:		return "wrong audience";
	case JWT_EEXP:		return "expired or no exp";
	case JWT_ENBF:		return "not yet valid";
	case JWT_ESUB:		return "bad subject";
	case JWT_ENOMEM:	return "out of memory";
	}
	return "unknown error";
}
