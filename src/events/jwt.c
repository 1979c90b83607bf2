/*
 * jwt.c: RS256 JSON Web Token verification (PURE; runs in the workers via
 * auth.c).
 *
 * The order is fixed: split and strict base64url decode, header (alg
 * allow-list, crit, typ, kid), key choice by kid, RS256 signature, and only
 * then the claims. Nothing in the claims is looked at before the signature
 * verified. The key set, the kid choice and the signature primitive are
 * jwk.c's (which holds every OpenSSL object); no I/O, no logging, no
 * globals.
 */
#include "events/jwt.h"

#include <math.h>
#include <string.h>

#include <jansson.h>

#include "events/base64url.h"

/* A decoded segment never exceeds this: the whole token is <= JWT_MAX_LEN. */
#define JWT_SEG_MAX	BASE64URL_DECODED_MAX(JWT_MAX_LEN)

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
	char		 kid[JWK_MAX_KID + 1];
};

/* A NumericDate: a JSON integer, or a finite JSON real. */
struct jwt_date {
	int		 is_int;
	int64_t		 i;
	double		 r;
};

/* 1 if v is a JSON string equal to s (jansson strings hold no NUL). */
static int
jwt_str_eq(const json_t *v, const char *s)
{
	return json_is_string(v) && s != NULL &&
	    strcmp(json_string_value(v), s) == 0;
}

/* 1 if every container in v nests at most JWT_MAX_DEPTH deep. */
static int
jwt_depth_ok(json_t *v, int depth)
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
			if (!jwt_depth_ok(m, depth + 1))
				return 0;
	} else {
		json_array_foreach(v, i, m)
			if (!jwt_depth_ok(m, depth + 1))
				return 0;
	}
	return 1;
}

/* Parses a JSON object; on any defect returns bad (or JWT_ENOMEM). */
static enum jwt_err
jwt_object_parse(const unsigned char *buf, size_t len, enum jwt_err bad,
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
	if (!json_is_object(root) || !jwt_depth_ok(root, 1)) {
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
	return jwt_str_eq(json_object_get(root, "alg"), "RS256") ?
	    JWT_OK : JWT_EALG;
}

static enum jwt_err
header_typ(const json_t *root, enum jwt_typ_mode mode)
{
	const json_t *typ;

	if ((typ = json_object_get(root, "typ")) == NULL)
		return mode == JWT_TYP_STRICT ? JWT_ETYP : JWT_OK;
	if (jwt_str_eq(typ, "at+jwt") ||
	    jwt_str_eq(typ, "application/at+jwt"))
		return JWT_OK;
	/* RFC 9068 strict mode: an ID token ("JWT") is not an access token. */
	if (mode == JWT_TYP_LENIENT && jwt_str_eq(typ, "JWT"))
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
	if (len == 0 || len > JWK_MAX_KID)
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

	if ((e = jwt_object_parse(t->hdr, t->hdrlen, JWT_EHEADER,
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

/* The key for the header's kid (jwk_choose's rules), as its number. */
static enum jwt_err
key_choose(const struct jwk_set *ks, const struct jwt_header *h, size_t *idx)
{
	return jwk_choose(ks, h->has_kid ? h->kid : NULL, h->kidlen, idx) == 0 ?
	    JWT_OK : JWT_EKID;
}

static enum jwt_err
signature_check(const struct jwk_set *ks, size_t idx,
    const struct jwt_token *t)
{
	return jwk_rs256_verify(ks, idx, (const unsigned char *)t->signed_part,
	    t->signed_len, t->sig, t->siglen) == 1 ? JWT_OK : JWT_ESIG;
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
		return jwt_str_eq(aud, audience) ? JWT_OK : JWT_EAUD;
	if (!json_is_array(aud))
		return JWT_EAUD;
	json_array_foreach(aud, i, m) {
		/* A malformed member makes the whole list suspect. */
		if (!json_is_string(m))
			return JWT_EAUD;
		if (jwt_str_eq(m, audience))
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

	if ((e = jwt_object_parse(t->pay, t->paylen, JWT_ECLAIMS,
	    &root)) != JWT_OK)
		return e;
	if (!jwt_str_eq(json_object_get(root, "iss"), p->issuer)) {
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
jwt_verify(const struct jwk_set *ks, const struct jwt_policy *policy,
    const char *token, size_t len, int64_t now, struct jwt_claims *claims,
    enum jwt_err *err)
{
	struct jwt_token t;
	struct jwt_header h;
	size_t key = 0;
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
