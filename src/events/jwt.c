/*
 * jwt.c: RS256 JSON Web Token verification (PURE; runs in the workers via
 * auth.c).
 *
 * The verdict's order is fixed: split and strict base64url decode, header
 * (alg allow-list, crit, typ, kid), key choice by kid, RS256 signature,
 * and only then the claims: a token whose signature does not verify is
 * JWT_ESIG whatever its claims say. The checks themselves run the claims
 * before the signature (jwt_verify_begin, jwt_verify_end), so that a
 * caller can start work on a token that passed everything else while the
 * signature is checked; the claims are parsed by the same checker as the
 * unverified header, and nothing read from them is trusted until the
 * signature verified. The key set, the kid choice and the signature
 * primitive are jwk.c's (which holds every OpenSSL object); no I/O, no
 * logging, no globals.
 */
#include "events/jwt.h"

#include <math.h>
#include <string.h>

#include "events/base64url.h"
#include "util/jcheck.h"
#include "util/jscan.h"

/* A decoded segment never exceeds this: the whole token is <= JWT_MAX_LEN. */
#define JWT_SEG_MAX	JWT_MAX_SIG

_Static_assert(JWT_MAX_DEPTH <= JCHECK_MAX_DEPTH,
    "jcheck can nest as deep as a token may");

/* A token split at its dots and decoded; the signed part and the
 * signature go to the caller's jwt_pending. The JSON checker's workspace
 * serves the header and then the claims. */
struct jwt_token {
	struct jwt_pending *p;
	size_t		 hdrlen, paylen;
	unsigned char	 hdr[JWT_SEG_MAX];
	unsigned char	 pay[JWT_SEG_MAX];
	struct jcheck_key keys[JCHECK_KEYS_MAX(JWT_SEG_MAX)];
	char		 scratch[JCHECK_SCRATCH_MAX(JWT_SEG_MAX)];
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

/* A member name the checks read. */
struct jwt_name {
	const char	*name;
	size_t		 len;
};

#define JWT_NAME(s)	{ s, sizeof(s) - 1 }

/* The header's members read, in jwt_header_names' order. */
enum { JWT_H_ALG, JWT_H_CRIT, JWT_H_TYP, JWT_H_KID, JWT_H_COUNT };
static const struct jwt_name jwt_header_names[JWT_H_COUNT] = {
	JWT_NAME("alg"), JWT_NAME("crit"), JWT_NAME("typ"), JWT_NAME("kid"),
};

/* The claims read, in jwt_claim_names' order. */
enum { JWT_C_ISS, JWT_C_AUD, JWT_C_EXP, JWT_C_NBF, JWT_C_IAT, JWT_C_SUB,
    JWT_C_SCOPE, JWT_C_COUNT };
static const struct jwt_name jwt_claim_names[JWT_C_COUNT] = {
	JWT_NAME("iss"), JWT_NAME("aud"), JWT_NAME("exp"), JWT_NAME("nbf"),
	JWT_NAME("iat"), JWT_NAME("sub"), JWT_NAME("scope"),
};

#define JWT_MAX_READ	JWT_C_COUNT	/* members read from one object */

/* A header or claims object: its text and the members the checks read
 * (others are checked as JSON and ignored). */
struct jwt_object {
	const char		*text;
	size_t			 len;
	const struct jwt_name	*names;
	size_t			 count;
	int			 present[JWT_MAX_READ];
	struct jcheck_value	 v[JWT_MAX_READ];
};

/* jcheck's callback: keeps the value of a member the checks read. A
 * duplicate never gets that far: jcheck refuses the whole object. */
static void
jwt_member(void *ctx, const char *name, size_t len,
    const struct jcheck_value *v)
{
	struct jwt_object *o = ctx;
	size_t k;

	for (k = 0; k < o->count; k++) {
		if (o->names[k].len == len && o->names[k].name[0] == name[0] &&
		    memcmp(o->names[k].name, name, len) == 0) {
			o->present[k] = 1;
			o->v[k] = *v;
			return;
		}
	}
}

/*
 * Checks a segment as a JSON object and reads its members; on any
 * defect returns bad. jansson's rules with JSON_REJECT_DUPLICATES
 * (jcheck.h): duplicates refused, because with "last member wins" a
 * token can say two things; no \u0000, which would cut our C strings
 * short; invalid UTF-8 refused; nesting bounded.
 */
static enum jwt_err
jwt_object_parse(struct jwt_token *t, const unsigned char *buf, size_t len,
    const struct jwt_name *names, size_t count, enum jwt_err bad,
    struct jwt_object *o)
{
	struct jcheck jc;

	o->text = (const char *)buf;
	o->len = len;
	o->names = names;
	o->count = count;
	memset(o->present, 0, sizeof(o->present));
	jc.max_depth = JWT_MAX_DEPTH;
	jc.ints_as_reals = 0;
	jc.member = jwt_member;
	jc.ctx = o;
	jc.keys = t->keys;
	jc.nkeys = sizeof(t->keys) / sizeof(t->keys[0]);
	jc.scratch = t->scratch;
	jc.scratch_len = sizeof(t->scratch);
	return jcheck_object(o->text, len, &jc) == JCHECK_OK ? JWT_OK : bad;
}

/* 1 if member k is a JSON string equal to s (its decoded bytes). */
static int
jwt_str_eq(const struct jwt_object *o, size_t k, const char *s)
{
	const struct jcheck_value *v = &o->v[k];

	return o->present[k] && v->kind == JCHECK_STRING && s != NULL &&
	    jscan_key_is(o->text + v->start + 1, v->end - v->start - 2, s);
}

/* Member k, a string, decoded into out (at most cap bytes) and
 * terminated; its length, or -1 if longer than cap. */
static long
jwt_str_copy(const struct jwt_object *o, size_t k, char *out, size_t cap)
{
	long n = jscan_string_decode(o->text, o->len, o->v[k].start, out,
	    cap);

	if (n >= 0)
		out[n] = '\0';
	return n;
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
	    seg_decode(d2 + 1, (size_t)(end - d2 - 1), t->p->sig,
	    &t->p->siglen) == -1)
		return JWT_EFORMAT;
	t->p->signed_part = tok;
	t->p->signed_len = (size_t)(d2 - tok);
	return JWT_OK;
}

static enum jwt_err
header_alg(const struct jwt_object *h)
{
	/* alg is pinned to RS256 (case-sensitive); the header must match. */
	return jwt_str_eq(h, JWT_H_ALG, "RS256") ? JWT_OK : JWT_EALG;
}

static enum jwt_err
header_typ(const struct jwt_object *h, enum jwt_typ_mode mode)
{
	if (!h->present[JWT_H_TYP])
		return mode == JWT_TYP_STRICT ? JWT_ETYP : JWT_OK;
	if (jwt_str_eq(h, JWT_H_TYP, "at+jwt") ||
	    jwt_str_eq(h, JWT_H_TYP, "application/at+jwt"))
		return JWT_OK;
	/* RFC 9068 strict mode: an ID token ("JWT") is not an access token. */
	if (mode == JWT_TYP_LENIENT && jwt_str_eq(h, JWT_H_TYP, "JWT"))
		return JWT_OK;
	return JWT_ETYP;
}

static enum jwt_err
header_kid(const struct jwt_object *o, struct jwt_header *h)
{
	long len;

	h->has_kid = 0;
	if (!o->present[JWT_H_KID])
		return JWT_OK;
	if (o->v[JWT_H_KID].kind != JCHECK_STRING)
		return JWT_EHEADER;
	/* kid is only compared with our keys, never used as a path or URL. */
	if ((len = jwt_str_copy(o, JWT_H_KID, h->kid, JWK_MAX_KID)) <= 0)
		return JWT_EKID;	/* empty, or longer than any of ours */
	h->kidlen = (size_t)len;
	h->has_kid = 1;
	return JWT_OK;
}

/*
 * jwk, jku, x5u and x5c are never read: the key comes from our key set
 * only, or anyone could sign with a key they ship in the header.
 */
static enum jwt_err
header_check(struct jwt_token *t, enum jwt_typ_mode mode,
    struct jwt_header *h)
{
	struct jwt_object o;
	enum jwt_err e;

	if ((e = jwt_object_parse(t, t->hdr, t->hdrlen, jwt_header_names,
	    JWT_H_COUNT, JWT_EHEADER, &o)) != JWT_OK)
		return e;
	if ((e = header_alg(&o)) != JWT_OK)
		return e;
	/* We implement no extension, so any crit fails (RFC 7515 4.1.11). */
	if (o.present[JWT_H_CRIT])
		return JWT_ECRIT;
	if ((e = header_typ(&o, mode)) != JWT_OK)
		return e;
	return header_kid(&o, h);
}

/* The key for the header's kid (jwk_choose's rules), as its number. */
static enum jwt_err
key_choose(const struct jwk_set *ks, const struct jwt_header *h, size_t *idx)
{
	return jwk_choose(ks, h->has_kid ? h->kid : NULL, h->kidlen, idx) == 0 ?
	    JWT_OK : JWT_EKID;
}

static enum jwt_err
signature_check(const struct jwk_set *ks, const struct jwt_pending *p)
{
	return jwk_rs256_verify(ks, p->key, (const unsigned char *)
	    p->signed_part, p->signed_len, p->sig, p->siglen) == 1 ? JWT_OK :
	    JWT_ESIG;
}

/* Returns 1 and fills d if member k is a NumericDate, else 0. */
static int
date_get(const struct jwt_object *o, size_t k, struct jwt_date *d)
{
	const struct jcheck_value *v = &o->v[k];

	/*
	 * Typed reads only: a string, a boolean or null is never a date, and
	 * never "no restriction" either.
	 */
	if (v->kind != JCHECK_NUMBER)
		return 0;
	if (v->is_int) {
		d->is_int = 1;
		d->i = v->i;
		return 1;
	}
	if (!isfinite(v->r))
		return 0;
	d->is_int = 0;
	d->r = v->r;
	return 1;
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

/* aud an array: every element a string, one of them the audience. */
static enum jwt_err
claim_aud_array(const struct jwt_object *o, const char *audience)
{
	const char *s = o->text;
	size_t n = o->v[JWT_C_AUD].end, i, end;
	int found = 0;

	/* jcheck accepted the array: its elements are where jscan says. */
	i = jscan_ws(s, n, o->v[JWT_C_AUD].start + 1);
	while (i < n && s[i] != ']') {
		/* A malformed member makes the whole list suspect. */
		if (s[i] != '"' || (end = jscan_skip_string(s, n, i)) == 0)
			return JWT_EAUD;
		if (audience != NULL &&
		    jscan_key_is(s + i + 1, end - i - 2, audience))
			found = 1;
		i = jscan_ws(s, n, end);
		if (i < n && s[i] == ',')
			i = jscan_ws(s, n, i + 1);
	}
	return found ? JWT_OK : JWT_EAUD;
}

static enum jwt_err
claim_aud(const struct jwt_object *o, const char *audience)
{
	if (!o->present[JWT_C_AUD])
		return JWT_EAUD;
	if (o->v[JWT_C_AUD].kind == JCHECK_STRING)
		return jwt_str_eq(o, JWT_C_AUD, audience) ? JWT_OK : JWT_EAUD;
	if (o->v[JWT_C_AUD].kind != JCHECK_ARRAY)
		return JWT_EAUD;
	return claim_aud_array(o, audience);
}

/* exp required, nbf and iat optional; a wrong type is never "absent". */
static enum jwt_err
claim_times(const struct jwt_object *o, int64_t now, int64_t leeway)
{
	struct jwt_date d;

	if (!o->present[JWT_C_EXP])
		return JWT_EEXP;
	if (!date_get(o, JWT_C_EXP, &d))
		return JWT_ECLAIMS;
	if (!date_before(now, leeway, &d))
		return JWT_EEXP;
	if (o->present[JWT_C_NBF]) {
		if (!date_get(o, JWT_C_NBF, &d))
			return JWT_ECLAIMS;
		if (!date_reached(now, leeway, &d))
			return JWT_ENBF;
	}
	if (o->present[JWT_C_IAT] && !date_get(o, JWT_C_IAT, &d))
		return JWT_ECLAIMS;
	return JWT_OK;
}

static enum jwt_err
claim_sub(const struct jwt_object *o, struct jwt_claims *c)
{
	long len;

	if (!o->present[JWT_C_SUB] || o->v[JWT_C_SUB].kind != JCHECK_STRING)
		return JWT_ESUB;
	/* The subject selects rows: empty, cut short or overlong is refused
	 * (jcheck refuses \u0000; the NUL test says why it matters). */
	len = jwt_str_copy(o, JWT_C_SUB, c->sub, JWT_MAX_SUB);
	if (len <= 0 || memchr(c->sub, '\0', (size_t)len) != NULL)
		return JWT_ESUB;
	return JWT_OK;
}

static enum jwt_err
claim_scope(const struct jwt_object *o, struct jwt_claims *c)
{
	long len;

	c->has_scope = 0;
	if (!o->present[JWT_C_SCOPE])
		return JWT_OK;
	if (o->v[JWT_C_SCOPE].kind != JCHECK_STRING)
		return JWT_ECLAIMS;
	len = jwt_str_copy(o, JWT_C_SCOPE, c->scope, JWT_MAX_SCOPE);
	if (len < 0 || memchr(c->scope, '\0', (size_t)len) != NULL)
		return JWT_ECLAIMS;
	c->has_scope = 1;
	return JWT_OK;
}

/* Its verdict counts only once the signature verified (jwt_verify_end). */
static enum jwt_err
claims_check(struct jwt_token *t, const struct jwt_policy *p, int64_t now,
    struct jwt_claims *c)
{
	struct jwt_object o;
	enum jwt_err e;

	if ((e = jwt_object_parse(t, t->pay, t->paylen, jwt_claim_names,
	    JWT_C_COUNT, JWT_ECLAIMS, &o)) != JWT_OK)
		return e;
	if (!jwt_str_eq(&o, JWT_C_ISS, p->issuer))
		return JWT_EISS;
	if ((e = claim_aud(&o, p->audience)) != JWT_OK ||
	    (e = claim_times(&o, now, p->leeway)) != JWT_OK ||
	    (e = claim_sub(&o, c)) != JWT_OK)
		return e;
	return claim_scope(&o, c);
}

/* A rejected token leaves nothing behind that looks like claims. */
static int
jwt_reject(struct jwt_claims *claims, enum jwt_err e, enum jwt_err *err)
{
	memset(claims, 0, sizeof(*claims));
	if (err != NULL)
		*err = e;
	return -1;
}

int
jwt_verify_begin(const struct jwk_set *ks, const struct jwt_policy *policy,
    const char *token, size_t len, int64_t now, struct jwt_claims *claims,
    struct jwt_pending *p, enum jwt_err *err)
{
	struct jwt_token t;
	struct jwt_header h;
	enum jwt_err e;

	memset(claims, 0, sizeof(*claims));
	t.p = p;
	p->key = 0;
	if ((e = token_split(token, len, &t)) != JWT_OK ||
	    (e = header_check(&t, policy->typ_mode, &h)) != JWT_OK ||
	    (e = key_choose(ks, &h, &p->key)) != JWT_OK)
		return jwt_reject(claims, e, err);
	/* Told only if the signature verifies: it comes first. */
	if ((p->claims = claims_check(&t, policy, now, claims)) != JWT_OK)
		memset(claims, 0, sizeof(*claims));
	if (err != NULL)
		*err = p->claims;
	return 0;
}

int
jwt_verify_end(const struct jwk_set *ks, const struct jwt_pending *p,
    struct jwt_claims *claims, enum jwt_err *err)
{
	enum jwt_err e;

	if ((e = signature_check(ks, p)) != JWT_OK ||
	    (e = p->claims) != JWT_OK)
		return jwt_reject(claims, e, err);
	if (err != NULL)
		*err = JWT_OK;
	return 0;
}

int
jwt_verify(const struct jwk_set *ks, const struct jwt_policy *policy,
    const char *token, size_t len, int64_t now, struct jwt_claims *claims,
    enum jwt_err *err)
{
	struct jwt_pending p;

	if (jwt_verify_begin(ks, policy, token, len, now, claims, &p,
	    err) == -1)
		return -1;
	return jwt_verify_end(ks, &p, claims, err);
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
	}
	return "unknown error";
}
