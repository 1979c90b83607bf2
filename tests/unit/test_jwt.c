/*
 * test_jwt.c: jwt_verify() and jwk_set_parse() against golden tokens.
 *
 * The tokens and keys live in tests/data/jwt/ (made by mkgolden.sh, with
 * fixed times around NOW); the directory is found through $CFPM_SRCDIR
 * (default "."). A few malformed variants are built here from the goldens.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "events/base64url.h"
#include "events/jwt.h"
#include "tap.h"

#define NOW		INT64_C(1800000000)	/* mkgolden.sh's NOW */
#define ISSUER		"https://issuer.test"
#define AUDIENCE	"cfpm-test"

enum ks_id {
	KS_PEM,		/* pub.pem, no kid: matches any kid */
	KS_PEM_KID,	/* pub.pem with default kid "test-1" */
	KS_JWKS,	/* jwks.json: test-1 (key.pem), test-2 (key2.pem) */
	KS_FOREIGN,	/* foreign_jwks.json: foreign-1 (foreign.pem) */
	KS_COUNT
};

static const char *ks_names[KS_COUNT] = {
	"pem", "pem+kid", "jwks", "foreign"
};
static struct jwk_set *keysets[KS_COUNT];

struct gcase {
	const char	*file;		/* tests/data/jwt/<file>.jwt */
	enum ks_id	 ks;
	int64_t		 leeway;
	enum jwt_typ_mode typ;
	int64_t		 now;
	enum jwt_err	 want;
};

#define G(f, k, w)		{ f, k, 0, JWT_TYP_LENIENT, NOW, w }
#define GL(f, k, l, w)		{ f, k, l, JWT_TYP_LENIENT, NOW, w }
#define GS(f, k, w)		{ f, k, 0, JWT_TYP_STRICT, NOW, w }
#define GN(f, k, n, l, w)	{ f, k, l, JWT_TYP_LENIENT, n, w }

static const struct gcase gcases[] = {
	/* valid tokens and key choice */
	G("valid", KS_PEM, JWT_OK),
	G("valid", KS_PEM_KID, JWT_OK),
	G("valid", KS_JWKS, JWT_EKID),		/* no kid, two keys */
	G("valid_kid1", KS_JWKS, JWT_OK),
	G("valid_kid1", KS_PEM, JWT_OK),
	G("valid_kid1", KS_PEM_KID, JWT_OK),
	G("valid_kid2", KS_JWKS, JWT_OK),	/* rotation: second key */
	G("valid_kid2", KS_PEM, JWT_ESIG),
	G("valid_kid2", KS_PEM_KID, JWT_EKID),
	G("kid1_signed_by_key2", KS_JWKS, JWT_ESIG),
	G("valid_at_jwt", KS_JWKS, JWT_OK),
	G("valid_app_at_jwt", KS_PEM, JWT_OK),
	G("valid_no_typ", KS_PEM, JWT_OK),
	G("valid_no_scope", KS_PEM, JWT_OK),
	G("valid_scope_utf8", KS_PEM, JWT_OK),
	G("valid_scope_empty", KS_PEM, JWT_OK),
	G("valid_scope_1024", KS_PEM, JWT_OK),
	G("valid_sub_255", KS_PEM, JWT_OK),
	G("valid_extra", KS_PEM, JWT_OK),
	G("len_8192", KS_PEM, JWT_OK),
	G("len_9000", KS_PEM, JWT_ETOOLONG),

	/* alg allow-list */
	G("alg_none", KS_PEM, JWT_EALG),
	G("alg_none", KS_JWKS, JWT_EALG),
	G("alg_None", KS_PEM, JWT_EALG),
	G("alg_NONE", KS_PEM, JWT_EALG),
	G("alg_none_rs256sig", KS_PEM, JWT_EALG),
	G("alg_missing", KS_PEM, JWT_EALG),
	G("alg_number", KS_PEM, JWT_EALG),
	G("alg_array", KS_PEM, JWT_EALG),
	G("alg_rs256_lower", KS_PEM, JWT_EALG),
	G("alg_hs256", KS_PEM, JWT_EALG),
	G("alg_rs384", KS_PEM, JWT_EALG),
	G("alg_ps256", KS_PEM, JWT_EALG),
	G("alg_es256", KS_PEM, JWT_EALG),

	/* format: segments and strict base64url */
	G("pad_signed", KS_PEM, JWT_EFORMAT),
	G("pad_sig", KS_PEM, JWT_EFORMAT),
	G("plus_slash_signed", KS_PEM, JWT_EFORMAT),
	G("plus_sig", KS_PEM, JWT_EFORMAT),
	G("slash_sig", KS_PEM, JWT_EFORMAT),
	G("bad_char", KS_PEM, JWT_EFORMAT),
	G("len_1mod4", KS_PEM, JWT_EFORMAT),
	G("noncanon_signed", KS_PEM, JWT_EFORMAT),
	G("segments_1", KS_PEM, JWT_EFORMAT),
	G("segments_2", KS_PEM, JWT_EFORMAT),
	G("segments_4", KS_PEM, JWT_EFORMAT),
	G("segments_5", KS_PEM, JWT_EFORMAT),
	G("trailing_dot", KS_PEM, JWT_EFORMAT),
	G("empty_header", KS_PEM, JWT_EFORMAT),
	G("empty_payload", KS_PEM, JWT_EFORMAT),

	/* signature */
	G("empty_sig", KS_PEM, JWT_ESIG),
	G("sig_255", KS_PEM, JWT_ESIG),
	G("sig_257_lead0", KS_PEM, JWT_ESIG),
	G("sig_zero", KS_PEM, JWT_ESIG),
	G("sig_hs256_len", KS_PEM, JWT_ESIG),
	G("tampered", KS_PEM, JWT_ESIG),
	G("foreign", KS_PEM, JWT_ESIG),
	G("foreign_kid1", KS_JWKS, JWT_ESIG),
	G("foreign_expired", KS_PEM, JWT_ESIG),	/* signature before claims */
	G("foreign_bad_exp_type", KS_PEM, JWT_ESIG),
	/* The foreign tokens are genuine: their own key accepts them. */
	G("foreign", KS_FOREIGN, JWT_OK),
	G("foreign_kid1", KS_FOREIGN, JWT_EKID),
	G("foreign_expired", KS_FOREIGN, JWT_EEXP),
	G("foreign_bad_exp_type", KS_FOREIGN, JWT_ECLAIMS),
	G("valid", KS_FOREIGN, JWT_ESIG),

	/* header */
	G("header_dup_alg", KS_PEM, JWT_EHEADER),
	G("header_array", KS_PEM, JWT_EHEADER),
	G("header_not_json", KS_PEM, JWT_EHEADER),
	G("header_trailing", KS_PEM, JWT_EHEADER),
	G("header_bad_utf8", KS_PEM, JWT_EHEADER),
	G("header_nul", KS_PEM, JWT_EHEADER),
	G("header_deep_16", KS_PEM, JWT_OK),
	G("header_deep_17", KS_PEM, JWT_EHEADER),
	G("crit_array", KS_PEM, JWT_ECRIT),
	G("crit_string", KS_PEM, JWT_ECRIT),
	G("crit_empty", KS_PEM, JWT_ECRIT),
	G("typ_foo", KS_PEM, JWT_ETYP),
	G("typ_lower_jwt", KS_PEM, JWT_ETYP),
	G("typ_number", KS_PEM, JWT_ETYP),
	G("typ_null", KS_PEM, JWT_ETYP),
	GS("valid", KS_PEM, JWT_ETYP),		/* typ JWT */
	GS("valid_no_typ", KS_PEM, JWT_ETYP),
	GS("valid_at_jwt", KS_JWKS, JWT_OK),
	GS("valid_app_at_jwt", KS_PEM, JWT_OK),
	GS("typ_foo", KS_PEM, JWT_ETYP),
	G("kid_unknown", KS_JWKS, JWT_EKID),
	G("kid_unknown", KS_PEM_KID, JWT_EKID),
	G("kid_number", KS_JWKS, JWT_EHEADER),
	G("kid_number", KS_PEM, JWT_EHEADER),
	G("kid_empty", KS_JWKS, JWT_EKID),
	G("kid_4k", KS_JWKS, JWT_EKID),
	G("kid_4k", KS_PEM, JWT_EKID),
	G("kid_256", KS_PEM, JWT_OK),
	G("kid_256", KS_JWKS, JWT_EKID),
	G("kid_257", KS_PEM, JWT_EKID),
	G("kid_path", KS_JWKS, JWT_EKID),
	G("kid_path", KS_PEM, JWT_OK),		/* kid is only compared */
	G("jwk_jku_x5u_ours", KS_PEM, JWT_OK),	/* ignored headers */
	G("jwk_foreign", KS_PEM, JWT_ESIG),
	G("jwk_foreign_kid1", KS_JWKS, JWT_ESIG),
	G("jku_foreign", KS_JWKS, JWT_EKID),
	G("jku_foreign", KS_PEM, JWT_ESIG),
	G("jku_foreign", KS_FOREIGN, JWT_OK),
	G("jwk_foreign", KS_FOREIGN, JWT_OK),

	/* payload */
	G("payload_array", KS_PEM, JWT_ECLAIMS),
	G("payload_number", KS_PEM, JWT_ECLAIMS),
	G("payload_string", KS_PEM, JWT_ECLAIMS),
	G("payload_not_json", KS_PEM, JWT_ECLAIMS),
	G("payload_empty_obj", KS_PEM, JWT_EISS),
	G("claims_dup_sub", KS_PEM, JWT_ECLAIMS),
	G("claims_dup_exp", KS_PEM, JWT_ECLAIMS),
	G("claims_bad_utf8", KS_PEM, JWT_ECLAIMS),
	G("claims_overlong_utf8", KS_PEM, JWT_ECLAIMS),
	G("claims_nul_other", KS_PEM, JWT_ECLAIMS),
	G("claims_deep_16", KS_PEM, JWT_OK),
	G("claims_deep_17", KS_PEM, JWT_ECLAIMS),

	/* iss, aud, sub, scope */
	G("iss_other", KS_PEM, JWT_EISS),
	G("iss_slash", KS_PEM, JWT_EISS),
	G("iss_case", KS_PEM, JWT_EISS),
	G("iss_missing", KS_PEM, JWT_EISS),
	G("iss_array", KS_PEM, JWT_EISS),
	G("aud_array_with", KS_PEM, JWT_OK),
	G("aud_array_without", KS_PEM, JWT_EAUD),
	G("aud_array_mixed", KS_PEM, JWT_EAUD),
	G("aud_array_empty", KS_PEM, JWT_EAUD),
	G("aud_other", KS_PEM, JWT_EAUD),
	G("aud_prefix", KS_PEM, JWT_EAUD),
	G("aud_number", KS_PEM, JWT_EAUD),
	G("aud_missing", KS_PEM, JWT_EAUD),
	G("sub_empty", KS_PEM, JWT_ESUB),
	G("sub_missing", KS_PEM, JWT_ESUB),
	G("sub_number", KS_PEM, JWT_ESUB),
	G("sub_null", KS_PEM, JWT_ESUB),
	G("sub_256", KS_PEM, JWT_ESUB),
	G("sub_nul", KS_PEM, JWT_ECLAIMS),	/* \u0000: jansson refuses */
	G("scope_array", KS_PEM, JWT_ECLAIMS),
	G("scope_number", KS_PEM, JWT_ECLAIMS),
	G("scope_null", KS_PEM, JWT_ECLAIMS),
	G("scope_1025", KS_PEM, JWT_ECLAIMS),

	/* exp: now < exp + leeway */
	G("exp_now", KS_PEM, JWT_EEXP),
	GL("exp_now", KS_PEM, 1, JWT_OK),
	G("exp_now_plus_1", KS_PEM, JWT_OK),
	G("exp_now_minus_1", KS_PEM, JWT_EEXP),
	GL("exp_now_minus_1", KS_PEM, 1, JWT_EEXP),
	GL("exp_now_minus_1", KS_PEM, 2, JWT_OK),
	GL("exp_now_minus_1", KS_PEM, INT64_MAX, JWT_OK),
	G("exp_now_plus_half", KS_PEM, JWT_OK),
	G("exp_now_real", KS_PEM, JWT_EEXP),
	G("exp_now_minus_half", KS_PEM, JWT_EEXP),
	GL("exp_now_minus_half", KS_PEM, 1, JWT_OK),
	G("exp_exponent", KS_PEM, JWT_OK),
	G("exp_int64_max", KS_PEM, JWT_OK),
	GL("exp_int64_max", KS_PEM, 60, JWT_OK),
	GL("exp_int64_max", KS_PEM, INT64_MAX, JWT_OK),
	GN("exp_int64_max", KS_PEM, INT64_MAX, 0, JWT_EEXP),
	GN("exp_int64_max", KS_PEM, INT64_MAX, 1, JWT_OK),
	GN("exp_int64_max", KS_PEM, INT64_MIN, 60, JWT_OK),
	GL("exp_int64_min", KS_PEM, 60, JWT_EEXP),
	GN("exp_int64_min", KS_PEM, INT64_MIN, 0, JWT_EEXP),
	GN("exp_int64_min", KS_PEM, INT64_MIN, 1, JWT_OK),
	G("exp_negative", KS_PEM, JWT_EEXP),
	G("exp_zero", KS_PEM, JWT_EEXP),
	G("exp_1e300", KS_PEM, JWT_OK),
	GL("exp_1e300", KS_PEM, INT64_MAX, JWT_OK),
	G("exp_minus_1e300", KS_PEM, JWT_EEXP),
	GL("exp_minus_1e300", KS_PEM, INT64_MAX, JWT_EEXP),
	G("exp_1e400", KS_PEM, JWT_ECLAIMS),
	G("exp_2p63", KS_PEM, JWT_ECLAIMS),
	G("exp_string", KS_PEM, JWT_ECLAIMS),
	G("exp_true", KS_PEM, JWT_ECLAIMS),
	G("exp_false", KS_PEM, JWT_ECLAIMS),
	G("exp_null", KS_PEM, JWT_ECLAIMS),
	G("exp_array", KS_PEM, JWT_ECLAIMS),
	G("exp_object", KS_PEM, JWT_ECLAIMS),
	G("exp_missing", KS_PEM, JWT_EEXP),

	/* nbf: now >= nbf - leeway */
	G("nbf_now", KS_PEM, JWT_OK),
	G("nbf_now_plus_1", KS_PEM, JWT_ENBF),
	GL("nbf_now_plus_1", KS_PEM, 1, JWT_OK),
	G("nbf_now_plus_half", KS_PEM, JWT_ENBF),
	GL("nbf_now_plus_half", KS_PEM, 1, JWT_OK),
	GL("nbf_int64_min", KS_PEM, 60, JWT_OK),
	GN("nbf_int64_min", KS_PEM, INT64_MIN, 0, JWT_OK),
	GL("nbf_int64_max", KS_PEM, 60, JWT_ENBF),
	GL("nbf_int64_max", KS_PEM, INT64_MAX, JWT_OK),
	G("nbf_string", KS_PEM, JWT_ECLAIMS),
	G("nbf_null", KS_PEM, JWT_ECLAIMS),
	G("nbf_true", KS_PEM, JWT_ECLAIMS),
	G("nbf_1e400", KS_PEM, JWT_ECLAIMS),

	/* iat: typed, never compared */
	G("iat_future", KS_PEM, JWT_OK),
	G("iat_string", KS_PEM, JWT_ECLAIMS),
	G("iat_null", KS_PEM, JWT_ECLAIMS),
};

static const char *
err_name(enum jwt_err e)
{
	static const char *names[] = {
		"JWT_OK", "JWT_ETOOLONG", "JWT_EFORMAT", "JWT_EHEADER",
		"JWT_EALG", "JWT_ECRIT", "JWT_ETYP", "JWT_EKID", "JWT_ESIG",
		"JWT_ECLAIMS", "JWT_EISS", "JWT_EAUD", "JWT_EEXP", "JWT_ENBF",
		"JWT_ESUB",
	};

	if ((size_t)e < sizeof(names) / sizeof(names[0]))
		return names[e];
	return "?";
}

/* Reads a file under tests/data/; NULL if missing. Caller frees. */
static char *
data_read(const char *name, size_t *lenp)
{
	const char *dir;
	char path[4096];
	FILE *fp;
	char *buf = NULL;
	long n;

	if ((dir = getenv("CFPM_SRCDIR")) == NULL || *dir == '\0')
		dir = ".";
	snprintf(path, sizeof(path), "%s/tests/data/jwt/%s", dir, name);
	if ((fp = fopen(path, "rb")) == NULL)
		return NULL;
	if (fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0 ||
	    fseek(fp, 0, SEEK_SET) != 0)
		goto fail;
	if ((buf = malloc((size_t)n + 1)) == NULL)
		goto fail;
	if (fread(buf, 1, (size_t)n, fp) != (size_t)n) {
		free(buf);
		buf = NULL;
		goto fail;
	}
	buf[n] = '\0';
	*lenp = (size_t)n;
fail:
	fclose(fp);
	return buf;
}

/* A token file, without a trailing newline an editor may have added. */
static char *
token_read(const char *name, size_t *lenp)
{
	char file[256], *tok;

	snprintf(file, sizeof(file), "%s.jwt", name);
	if ((tok = data_read(file, lenp)) == NULL)
		return NULL;
	while (*lenp > 0 && (tok[*lenp - 1] == '\n' || tok[*lenp - 1] == '\r'))
		tok[--*lenp] = '\0';
	return tok;
}

static struct jwk_set *
keyset_file(const char *name, const char *kid, char *err, size_t errlen)
{
	struct jwk_set *ks;
	size_t len;
	char *buf;

	if ((buf = data_read(name, &len)) == NULL) {
		snprintf(err, errlen, "cannot read %s", name);
		return NULL;
	}
	ks = jwk_set_parse(buf, len, kid, err, errlen);
	free(buf);
	return ks;
}

static int
verify(enum ks_id ks, const char *tok, size_t len, int64_t leeway,
    enum jwt_typ_mode typ, int64_t now, struct jwt_claims *c, enum jwt_err *e)
{
	struct jwt_policy p = { ISSUER, AUDIENCE, leeway, typ };

	return jwt_verify(keysets[ks], &p, tok, len, now, c, e);
}

static void
test_goldens(void)
{
	const struct gcase *g;
	struct jwt_claims c;
	enum jwt_err e;
	size_t i, len;
	char *tok;
	int rc;

	for (i = 0; i < sizeof(gcases) / sizeof(gcases[0]); i++) {
		g = &gcases[i];
		if ((tok = token_read(g->file, &len)) == NULL) {
			ok(0, "%s: file missing", g->file);
			continue;
		}
		e = (enum jwt_err)-1;
		rc = verify(g->ks, tok, len, g->leeway, g->typ, g->now, &c, &e);
		if (!ok(e == g->want && rc == (g->want == JWT_OK ? 0 : -1),
		    "%s [%s%s, leeway %lld, now %lld]: %s", g->file,
		    ks_names[g->ks], g->typ == JWT_TYP_STRICT ? ", strict" : "",
		    (long long)g->leeway, (long long)g->now, err_name(g->want)))
			printf("#   got %s (rc %d)\n", err_name(e), rc);
		free(tok);
	}
}

/* 1 if e is a verdict given before the signature is checked. */
static int
before_signature(enum jwt_err e)
{
	return e == JWT_ETOOLONG || e == JWT_EFORMAT || e == JWT_EHEADER ||
	    e == JWT_EALG || e == JWT_ECRIT || e == JWT_ETYP || e == JWT_EKID;
}

/*
 * jwt_verify_begin + jwt_verify_end on every golden: the same verdict
 * as jwt_verify; begin refuses only what needs no signature, says
 * "all but the signature passed" (JWT_OK, claims filled) only for a
 * token that is valid or forged, and otherwise names the claims'
 * failure that end gives unless the signature fails first.
 */
static void
test_goldens_split(void)
{
	const struct gcase *g;
	struct jwt_policy p;
	struct jwt_pending pend;
	struct jwt_claims c;
	enum jwt_err early, e;
	size_t i, len;
	char *tok;
	int rc, ok_phase;

	for (i = 0; i < sizeof(gcases) / sizeof(gcases[0]); i++) {
		g = &gcases[i];
		if ((tok = token_read(g->file, &len)) == NULL)
			continue;	/* test_goldens reports it */
		p.issuer = ISSUER;
		p.audience = AUDIENCE;
		p.leeway = g->leeway;
		p.typ_mode = g->typ;
		early = e = (enum jwt_err)-1;
		rc = jwt_verify_begin(keysets[g->ks], &p, tok, len, g->now, &c,
		    &pend, &early);
		if (rc == -1)
			ok_phase = before_signature(early) && early == g->want;
		else if (early == JWT_OK)
			ok_phase = c.sub[0] != '\0' && (g->want == JWT_OK ||
			    g->want == JWT_ESIG);
		else
			ok_phase = !before_signature(early) && c.sub[0] == '\0' &&
			    (g->want == early || g->want == JWT_ESIG);
		if (rc == 0)
			rc = jwt_verify_end(keysets[g->ks], &pend, &c, &e);
		else
			e = early;
		if (!ok(ok_phase && e == g->want && rc == (g->want == JWT_OK ?
		    0 : -1) && (rc == 0 || c.sub[0] == '\0'), "split: %s [%s, "
		    "now %lld]: %s", g->file, ks_names[g->ks],
		    (long long)g->now, err_name(g->want)))
			printf("#   got begin %s, end %s (rc %d)\n",
			    err_name(early), err_name(e), rc);
		free(tok);
	}
}

static void
test_claims_out(void)
{
	struct jwt_claims c;
	enum jwt_err e;
	size_t len;
	char *tok;

	tok = token_read("valid", &len);
	is_int(verify(KS_PEM, tok, len, 0, JWT_TYP_LENIENT, NOW, &c, &e), 0,
	    "valid: returns 0");
	is_str(c.sub, "user-1", "valid: sub copied");
	is_int(c.has_scope, 1, "valid: has_scope");
	is_str(c.scope, "events:read events:write", "valid: scope verbatim");
	free(tok);

	tok = token_read("valid_no_scope", &len);
	verify(KS_PEM, tok, len, 0, JWT_TYP_LENIENT, NOW, &c, &e);
	is_int(c.has_scope, 0, "no scope claim: has_scope 0");
	is_str(c.scope, "", "no scope claim: scope empty");
	free(tok);

	tok = token_read("valid_scope_utf8", &len);
	verify(KS_PEM, tok, len, 0, JWT_TYP_LENIENT, NOW, &c, &e);
	is_str(c.scope, "a\xc3\xa9 b/c", "scope with escapes, decoded");
	free(tok);

	tok = token_read("valid_scope_empty", &len);
	verify(KS_PEM, tok, len, 0, JWT_TYP_LENIENT, NOW, &c, &e);
	ok(c.has_scope == 1 && c.scope[0] == '\0',
	    "empty scope: present, empty");
	free(tok);

	tok = token_read("valid_sub_255", &len);
	verify(KS_PEM, tok, len, 0, JWT_TYP_LENIENT, NOW, &c, &e);
	is_int(strlen(c.sub), 255, "255-byte sub copied whole");
	free(tok);

	tok = token_read("valid_scope_1024", &len);
	verify(KS_PEM, tok, len, 0, JWT_TYP_LENIENT, NOW, &c, &e);
	is_int(strlen(c.scope), 1024, "1024-byte scope copied whole");
	free(tok);

	/* A failure leaves no claims behind. */
	tok = token_read("exp_now", &len);
	memset(&c, 'X', sizeof(c));
	is_int(verify(KS_PEM, tok, len, 0, JWT_TYP_LENIENT, NOW, &c, &e), -1,
	    "expired: returns -1");
	ok(c.sub[0] == '\0' && c.scope[0] == '\0' && c.has_scope == 0,
	    "expired: claims cleared");
	free(tok);

	tok = token_read("valid", &len);
	is_int(verify(KS_PEM, tok, len, 0, JWT_TYP_LENIENT, NOW, &c, NULL), 0,
	    "err may be NULL");
	free(tok);
}

/* Variants of golden tokens built here: whitespace, NUL, length, buffers. */
static void
test_golden_variants(void)
{
	struct jwt_claims c;
	enum jwt_err e;
	size_t len, blen;
	char *tok, *buf;

	tok = token_read("valid", &len);
	buf = malloc(len + 2);

	/* Exactly len bytes, no NUL after them: ASan catches any over-read. */
	memcpy(buf, tok, len);
	{
		char *exact = malloc(len);

		memcpy(exact, tok, len);
		verify(KS_PEM, exact, len, 0, JWT_TYP_LENIENT, NOW, &c, &e);
		is_int(e, JWT_OK, "token in an unterminated buffer");
		free(exact);
	}
	memcpy(buf, tok, len);
	buf[len] = '\n';
	verify(KS_PEM, buf, len + 1, 0, JWT_TYP_LENIENT, NOW, &c, &e);
	is_int(e, JWT_EFORMAT, "trailing newline");
	buf[len] = '\0';
	verify(KS_PEM, buf, len + 1, 0, JWT_TYP_LENIENT, NOW, &c, &e);
	is_int(e, JWT_EFORMAT, "trailing NUL counted in len");
	buf[0] = ' ';
	memcpy(buf + 1, tok, len);
	verify(KS_PEM, buf, len + 1, 0, JWT_TYP_LENIENT, NOW, &c, &e);
	is_int(e, JWT_EFORMAT, "leading space");
	memcpy(buf, tok, len);
	buf[40] = '\0';
	verify(KS_PEM, buf, len, 0, JWT_TYP_LENIENT, NOW, &c, &e);
	is_int(e, JWT_EFORMAT, "NUL inside the payload segment");
	verify(KS_PEM, tok, len - 1, 0, JWT_TYP_LENIENT, NOW, &c, &e);
	ok(e == JWT_ESIG || e == JWT_EFORMAT, "last character cut off: %s",
	    err_name(e));
	verify(KS_PEM, tok, 0, 0, JWT_TYP_LENIENT, NOW, &c, &e);
	is_int(e, JWT_EFORMAT, "empty token");
	verify(KS_PEM, NULL, 0, 0, JWT_TYP_LENIENT, NOW, &c, &e);
	is_int(e, JWT_EFORMAT, "NULL token");
	verify(KS_PEM, "..", 2, 0, JWT_TYP_LENIENT, NOW, &c, &e);
	is_int(e, JWT_EFORMAT, "\"..\"");
	free(buf);
	free(tok);

	tok = token_read("len_8192", &len);
	is_int(len, JWT_MAX_LEN, "len_8192 golden is JWT_MAX_LEN bytes");
	buf = malloc(len + 1);
	memcpy(buf, tok, len);
	buf[len] = 'A';
	verify(KS_PEM, buf, len + 1, 0, JWT_TYP_LENIENT, NOW, &c, &e);
	is_int(e, JWT_ETOOLONG, "8193 bytes");
	free(buf);
	free(tok);

	blen = 1 << 20;
	buf = malloc(blen);
	memset(buf, 'a', blen);
	verify(KS_PEM, buf, blen, 0, JWT_TYP_LENIENT, NOW, &c, &e);
	is_int(e, JWT_ETOOLONG, "1 MiB of 'a'");
	free(buf);
}

/* alg_hs256 is a real confusion attack: HMAC keyed with pub.pem's bytes. */
static void
test_hs256_golden(void)
{
	unsigned char mac[EVP_MAX_MD_SIZE], sig[64];
	unsigned int maclen = 0;
	size_t len, klen;
	char *tok, *key, *dot;
	long n = -1;

	tok = token_read("alg_hs256", &len);
	key = data_read("pub.pem", &klen);
	if (tok != NULL && key != NULL && (dot = strrchr(tok, '.')) != NULL) {
		HMAC(EVP_sha256(), key, (int)klen, (unsigned char *)tok,
		    (size_t)(dot - tok), mac, &maclen);
		n = base64url_decode(dot + 1, strlen(dot + 1), sig,
		    sizeof(sig));
	}
	ok(n == 32 && maclen == 32 && memcmp(mac, sig, 32) == 0,
	    "alg_hs256 golden carries a valid HMAC keyed with pub.pem");
	free(tok);
	free(key);
}

static void
test_rs256_verify(void)
{
	unsigned char sig[512];
	size_t len;
	char *tok, *dot;
	long n;

	tok = token_read("valid", &len);
	dot = strrchr(tok, '.');
	n = base64url_decode(dot + 1, strlen(dot + 1), sig, sizeof(sig));
	is_int(n, 256, "valid signature decodes to 256 bytes");
	is_int(jwk_rs256_verify(keysets[KS_PEM], 0, (unsigned char *)tok,
	    (size_t)(dot - tok), sig, (size_t)n), 1, "rs256_verify: valid");
	is_int(jwk_rs256_verify(keysets[KS_JWKS], 0, (unsigned char *)tok,
	    (size_t)(dot - tok), sig, (size_t)n), 1,
	    "rs256_verify: JWKS key 0 is pub.pem's key");
	is_int(jwk_rs256_verify(keysets[KS_JWKS], 1, (unsigned char *)tok,
	    (size_t)(dot - tok), sig, (size_t)n), 0,
	    "rs256_verify: other key");
	is_int(jwk_rs256_verify(keysets[KS_PEM], 1, (unsigned char *)tok,
	    (size_t)(dot - tok), sig, (size_t)n), 0,
	    "rs256_verify: index out of range");
	is_int(jwk_rs256_verify(NULL, 0, (unsigned char *)tok,
	    (size_t)(dot - tok), sig, (size_t)n), 0, "rs256_verify: NULL set");
	is_int(jwk_rs256_verify(keysets[KS_PEM], 0, (unsigned char *)tok,
	    (size_t)(dot - tok) - 1, sig, (size_t)n), 0,
	    "rs256_verify: message cut short");
	sig[255] ^= 1;
	is_int(jwk_rs256_verify(keysets[KS_PEM], 0, (unsigned char *)tok,
	    (size_t)(dot - tok), sig, (size_t)n), 0,
	    "rs256_verify: one bit flipped");
	is_int(jwk_rs256_verify(keysets[KS_PEM], 0, (unsigned char *)tok,
	    (size_t)(dot - tok), sig, 255), 0, "rs256_verify: 255 bytes");
	free(tok);
}

/* Parses text as key material; returns the key count, or -1 with err. */
static long
parse_text(const char *text, const char *kid, char *err, size_t errlen)
{
	struct jwk_set *ks;
	long n;

	if ((ks = jwk_set_parse(text, strlen(text), kid, err,
	    errlen)) == NULL)
		return -1;
	n = (long)jwk_set_count(ks);
	jwk_set_free(ks);
	return n;
}

static void
keyset_refused(const char *what, const char *text, const char *kid,
    const char *errpart)
{
	char err[256];

	err[0] = '\0';
	ok(parse_text(text, kid, err, sizeof(err)) == -1 && err[0] != '\0' &&
	    (errpart == NULL || strstr(err, errpart) != NULL),
	    "keyset refused: %s", what);
	printf("#   err \"%s\"\n", err);
}

static void
keyset_file_refused(const char *file, const char *errpart)
{
	struct jwk_set *ks;
	char err[256];

	err[0] = '\0';
	ks = keyset_file(file, NULL, err, sizeof(err));
	ok(ks == NULL && err[0] != '\0' && strstr(err, errpart) != NULL,
	    "keyset refused: %s", file);
	printf("#   err \"%s\"\n", err);
	jwk_set_free(ks);
}

/* A growing text buffer for JWKS documents built from jwks.json's keys. */
struct text {
	char	buf[16384];
	size_t	len;
};

__attribute__((format(printf, 2, 3)))
static void
text_add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->len, sizeof(t->buf) - t->len, fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sizeof(t->buf) - t->len)
		t->len += (size_t)n;
}

static void
test_keyset_parse(void)
{
	struct jwk_set *ks;
	struct text t;
	json_t *jwks;
	char n1[600], n2[600], err[256], kid[JWK_MAX_KID + 2], *text, *pem;
	const char *pem_begin;
	size_t len, i;
	enum jwt_err e;
	struct jwt_claims c;
	char *tok;
	size_t toklen;

	is_int(jwk_set_count(keysets[KS_PEM]), 1, "pub.pem: one key");
	is_int(jwk_set_count(keysets[KS_JWKS]), 2, "jwks.json: two keys");
	is_int(jwk_set_count(NULL), 0, "count(NULL) is 0");
	jwk_set_free(NULL);
	ok(1, "free(NULL) is fine");

	keyset_refused("garbage", "hello, world", NULL, "neither");
	keyset_refused("empty", "", NULL, "empty");
	keyset_refused("JSON array", "[]", NULL, "neither");
	keyset_refused("JWKS without keys", "{}", NULL, "keys");
	keyset_refused("JWKS keys not an array", "{\"keys\":{}}", NULL, "keys");
	keyset_refused("JWKS with no keys", "{\"keys\":[]}", NULL,
	    "no RSA key");
	keyset_refused("JWKS not JSON", "{\"keys\":[", NULL, "JWKS");
	keyset_refused("JWKS duplicate member", "{\"keys\":[],\"keys\":[]}",
	    NULL, "duplicate");
	keyset_refused("JWKS key not an object", "{\"keys\":[1]}", NULL,
	    "JWKS key 0: not an object");
	keyset_refused("JWKS key without kty", "{\"keys\":[{\"n\":\"AQAB\"}]}",
	    NULL, "kty");
	keyset_refused("JWKS only an EC key", "{\"keys\":[{\"kty\":\"EC\","
	    "\"crv\":\"P-256\",\"x\":\"AA\",\"y\":\"AA\"}]}", NULL,
	    "no RSA key");
	keyset_file_refused("small_pub.pem", "1024 bits");
	keyset_file_refused("small_jwks.json", "1024 bits");
	keyset_file_refused("ec_pub.pem", "not an RSA key");
	keyset_file_refused("two_pub.pem", "data after");
	keyset_file_refused("key.pem", "neither");	/* a private key */

	/* PEM variants. */
	pem = data_read("pub.pem", &len) ;
	text = malloc(len + 64);
	snprintf(text, len + 64, "\n  \n%s", pem);
	is_int(parse_text(text, NULL, err, sizeof(err)), 1,
	    "PEM after leading blank lines");
	snprintf(text, len + 64, "%s\n\n", pem);
	is_int(parse_text(text, "test-1", err, sizeof(err)), 1,
	    "PEM with default kid and trailing blank lines");
	snprintf(text, len + 64, "%sjunk\n", pem);
	keyset_refused("PEM with trailing junk", text, NULL, "data after");
	snprintf(text, len + 64, "%.*s", (int)(len / 2), pem);
	keyset_refused("PEM cut in half", text, NULL, "PEM");
	pem_begin = strchr(pem, '\n') + 1;
	snprintf(text, len + 64, "-----BEGIN PUBLIC KEY-----\n%c%s",
	    *pem_begin == 'A' ? 'B' : 'A', pem_begin + 1);
	keyset_refused("PEM with a damaged body", text, NULL, "PEM");
	keyset_refused("PEM with an empty default kid", pem, "", "kid");
	memset(kid, 'k', JWK_MAX_KID);
	kid[JWK_MAX_KID] = '\0';
	is_int(parse_text(pem, kid, err, sizeof(err)), 1,
	    "PEM with a 256-byte default kid");
	kid[JWK_MAX_KID] = 'k';
	kid[JWK_MAX_KID + 1] = '\0';
	keyset_refused("PEM with a 257-byte default kid", pem, kid, "kid");
	ks = jwk_set_parse(pem, len, NULL, NULL, 0);
	ok(ks != NULL, "err may be NULL (good key)");
	jwk_set_free(ks);
	ok(jwk_set_parse("x", 1, NULL, NULL, 0) == NULL,
	    "err may be NULL (bad key)");
	memset(err, 'Z', sizeof(err));
	ks = jwk_set_parse("x", 1, NULL, err, 8);
	ok(ks == NULL && strlen(err) == 7 && err[8] == 'Z',
	    "err truncated to errlen");
	free(text);
	free(pem);

	/* JWKS variants built from jwks.json's two moduli. */
	text = data_read("jwks.json", &len);
	jwks = json_loads(text, 0, NULL);
	free(text);
	snprintf(n1, sizeof(n1), "%s", json_string_value(json_object_get(
	    json_array_get(json_object_get(jwks, "keys"), 0), "n")));
	snprintf(n2, sizeof(n2), "%s", json_string_value(json_object_get(
	    json_array_get(json_object_get(jwks, "keys"), 1), "n")));
	json_decref(jwks);
	ok(strlen(n1) == 342 && strlen(n2) == 342, "jwks.json moduli read");

#define JWK(kid, e)	"{\"kty\":\"RSA\",\"kid\":\"" kid "\"," \
			"\"n\":\"%s\",\"e\":\"" e "\"}"
	t.len = 0;
	text_add(&t, "{\"keys\":[" JWK("a", "AQAB") "," JWK("a", "AQAB") "]}",
	    n1, n2);
	keyset_refused("JWKS duplicate kid", t.buf, NULL,
	    "JWKS key 1: duplicate kid");
	t.len = 0;
	text_add(&t, "{\"keys\":[" JWK("a", "AQAB") "]}", "AQAB");
	keyset_refused("JWKS tiny n", t.buf, NULL, "bits");
	t.len = 0;
	text_add(&t, "{\"keys\":[" JWK("a", "AQAB") "]}", "");
	keyset_refused("JWKS empty n", t.buf, NULL, "n is empty");
	t.len = 0;
	text_add(&t, "{\"keys\":[" JWK("a", "AQAB") "]}", "x==");
	keyset_refused("JWKS n with padding", t.buf, NULL,
	    "JWKS key 0: n is not base64url");
	t.len = 0;
	text_add(&t, "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"%s+\","
	    "\"e\":\"AQAB\"}]}", n1);
	keyset_refused("JWKS n with '+'", t.buf, NULL, "n is not base64url");
	t.len = 0;
	text_add(&t, "{\"keys\":[{\"kty\":\"RSA\",\"n\":1,\"e\":\"AQAB\"}]}");
	keyset_refused("JWKS n a number", t.buf, NULL, "n is missing");
	t.len = 0;
	text_add(&t, "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"%s\"}]}", n1);
	keyset_refused("JWKS without e", t.buf, NULL, "e is missing");
	t.len = 0;
	text_add(&t, "{\"keys\":[" JWK("a", "AQ") "]}", n1);
	keyset_refused("JWKS e = 1", t.buf, NULL, "exponent");
	t.len = 0;
	text_add(&t, "{\"keys\":[" JWK("a", "AAE") "]}", n1);
	keyset_refused("JWKS e = 1 with a leading zero byte", t.buf, NULL,
	    "exponent");
	t.len = 0;
	text_add(&t, "{\"keys\":[" JWK("a", "Ag") "]}", n1);
	keyset_refused("JWKS e = 2", t.buf, NULL, "exponent");
	t.len = 0;
	text_add(&t, "{\"keys\":[" JWK("a", "AQABAQABAQABAQAB") "]}", n1);
	keyset_refused("JWKS e over 64 bits", t.buf, NULL, "e is too long");
	t.len = 0;
	text_add(&t, "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"%s\",\"e\":\"AQAB\","
	    "\"d\":\"AQAB\"}]}", n1);
	keyset_refused("JWKS with a private key", t.buf, NULL, "private");
	t.len = 0;
	text_add(&t, "{\"keys\":[{\"kty\":\"RSA\",\"kid\":7,\"n\":\"%s\","
	    "\"e\":\"AQAB\"}]}", n1);
	keyset_refused("JWKS kid a number", t.buf, NULL, "kid");
	t.len = 0;
	text_add(&t, "{\"keys\":[" JWK("", "AQAB") "]}", n1);
	keyset_refused("JWKS empty kid", t.buf, NULL, "kid");
	t.len = 0;
	text_add(&t, "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"%s\",\"e\":\"AQAB\"},"
	    JWK("b", "AQAB") "]}", n1, n2);
	keyset_refused("JWKS: two keys, one without kid", t.buf, NULL, "kid");
	t.len = 0;
	text_add(&t, "{\"keys\":[");
	for (i = 0; i <= JWK_MAX_KEYS; i++)
		text_add(&t, "%s{\"kty\":\"RSA\",\"kid\":\"k%zu\",\"n\":\"%s\","
		    "\"e\":\"AQAB\"}", i ? "," : "", i, n1);
	text_add(&t, "]}");
	keyset_refused("JWKS with 17 keys", t.buf, NULL, "more than 16");
	/* The same with the last key dropped: 16 is fine. */
	t.len = 0;
	text_add(&t, "{\"keys\":[");
	for (i = 0; i < JWK_MAX_KEYS; i++)
		text_add(&t, "%s{\"kty\":\"RSA\",\"kid\":\"k%zu\",\"n\":\"%s\","
		    "\"e\":\"AQAB\"}", i ? "," : "", i, n1);
	text_add(&t, "]}");
	is_int(parse_text(t.buf, NULL, err, sizeof(err)), JWK_MAX_KEYS,
	    "JWKS with 16 keys");

	/* Skipped entries: other kty, other use, other alg. */
	t.len = 0;
	text_add(&t, "{\"keys\":["
	    "{\"kty\":\"EC\",\"kid\":\"ec-1\",\"crv\":\"P-256\","
	    "\"x\":\"AA\",\"y\":\"AA\"},"
	    "{\"kty\":\"RSA\",\"use\":\"enc\",\"kid\":\"enc-1\","
	    "\"n\":\"%s\",\"e\":\"AQAB\"},"
	    "{\"kty\":\"RSA\",\"alg\":\"RS512\",\"kid\":\"rs512-1\","
	    "\"n\":\"%s\",\"e\":\"AQAB\"},"
	    "{\"kty\":\"RSA\",\"alg\":\"RS256\",\"use\":\"sig\","
	    "\"kid\":\"test-1\",\"n\":\"%s\",\"e\":\"AQAB\"}"
	    "]}", n1, n1, n1);
	ks = jwk_set_parse(t.buf, t.len, NULL, err, sizeof(err));
	is_int(jwk_set_count(ks), 1, "JWKS: EC, enc and RS512 keys skipped");
	{
		struct jwt_policy p = { ISSUER, AUDIENCE, 0, JWT_TYP_LENIENT };

		tok = token_read("valid_kid1", &toklen);
		jwt_verify(ks, &p, tok, toklen, NOW, &c, &e);
		is_int(e, JWT_OK, "mixed JWKS: test-1 verifies");
		free(tok);
		tok = token_read("valid", &toklen);
		jwt_verify(ks, &p, tok, toklen, NOW, &c, &e);
		is_int(e, JWT_OK, "mixed JWKS: no kid, one usable key");
		free(tok);
	}
	jwk_set_free(ks);

	/* One key without kid stands for any kid. */
	t.len = 0;
	text_add(&t, "{\"keys\":[{\"kty\":\"RSA\",\"n\":\"%s\","
	    "\"e\":\"AQAB\"}]}", n2);
	ks = jwk_set_parse(t.buf, t.len, NULL, err, sizeof(err));
	is_int(jwk_set_count(ks), 1, "JWKS: one key without kid");
	{
		struct jwt_policy p = { ISSUER, AUDIENCE, 0, JWT_TYP_LENIENT };

		tok = token_read("valid_kid2", &toklen);
		jwt_verify(ks, &p, tok, toklen, NOW, &c, &e);
		is_int(e, JWT_OK, "kid-less JWKS key accepts kid test-2");
		free(tok);
		tok = token_read("valid_kid1", &toklen);
		jwt_verify(ks, &p, tok, toklen, NOW, &c, &e);
		is_int(e, JWT_ESIG, "kid-less JWKS key: other key's token");
		free(tok);
	}
	jwk_set_free(ks);
#undef JWK
}

/* An SPKI PEM of the RSA "key" (n, e), whatever the numbers are. */
static char *
pem_of(const BIGNUM *n, const BIGNUM *e)
{
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
	OSSL_PARAM *params;
	EVP_PKEY *pkey = NULL;
	BIO *bio = BIO_new(BIO_s_mem());
	char *data, *out;
	long len;

	if (bld == NULL || ctx == NULL || bio == NULL ||
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) != 1 ||
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e) != 1 ||
	    (params = OSSL_PARAM_BLD_to_param(bld)) == NULL ||
	    EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1 ||
	    PEM_write_bio_PUBKEY(bio, pkey) != 1 ||
	    (len = BIO_get_mem_data(bio, &data)) <= 0 ||
	    (out = malloc((size_t)len + 1)) == NULL)
		abort();
	memcpy(out, data, (size_t)len);
	out[len] = '\0';
	OSSL_PARAM_free(params);
	EVP_PKEY_free(pkey);
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_BLD_free(bld);
	BIO_free(bio);
	return out;
}

/*
 * Keys OpenSSL's RSA_verify never verifies with (rsa_ossl.c: e must be
 * below n, and at most 64 bits past a 3072-bit modulus) are refused at
 * load, not left to fail every token.
 */
static void
test_keyset_exponents(void)
{
	BIGNUM *n = BN_new(), *e = BN_new();
	char err[256], *pem;

	if (n == NULL || e == NULL ||
	    BN_rand(n, 4096, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ODD) != 1 ||
	    BN_set_word(e, 1) != 1 || BN_set_bit(e, 64) != 1)
		abort();
	pem = pem_of(n, e);
	keyset_refused("4096-bit n, 65-bit e", pem, NULL, "RS256");
	free(pem);
	if (BN_clear_bit(e, 64) != 1 || BN_set_bit(e, 63) != 1)
		abort();
	pem = pem_of(n, e);
	is_int(parse_text(pem, NULL, err, sizeof(err)), 1,
	    "4096-bit n, 64-bit e: loaded");
	free(pem);
	if (BN_rand(n, 2048, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ODD) != 1 ||
	    BN_set_word(e, 1) != 1 || BN_set_bit(e, 100) != 1)
		abort();
	pem = pem_of(n, e);
	is_int(parse_text(pem, NULL, err, sizeof(err)), 1,
	    "2048-bit n, 101-bit e: loaded (OpenSSL verifies with it)");
	free(pem);
	if (BN_copy(e, n) == NULL || BN_add_word(e, 2) != 1)
		abort();
	pem = pem_of(n, e);
	keyset_refused("e above n", pem, NULL, "RS256");
	free(pem);
	BN_free(n);
	BN_free(e);
}

/*
 * The RS256 primitive with other public exponents than 65537: its square
 * and multiply must hold for any odd e (3: no squaring but the last; a
 * 64-bit e with many bits set: a multiplication on most steps).
 */
static void
test_rs256_exponents(void)
{
	static const unsigned long long exps[] = { 3, 17, 65537,
	    0xfffffffffffffffdULL };
	unsigned char sig[256], msg[] = "header.claims";
	size_t i, siglen;
	struct jwk_set *ks;
	EVP_PKEY_CTX *gen;
	EVP_MD_CTX *md;
	EVP_PKEY *key;
	BIGNUM *e = BN_new(), *n = NULL;
	char err[256], *pem;

	for (i = 0; i < sizeof(exps) / sizeof(exps[0]); i++) {
		key = NULL;
		siglen = sizeof(sig);
		if (e == NULL || BN_set_word(e, exps[i]) != 1 ||
		    (gen = EVP_PKEY_CTX_new_from_name(NULL, "RSA",
		    NULL)) == NULL || EVP_PKEY_keygen_init(gen) != 1 ||
		    EVP_PKEY_CTX_set_rsa_keygen_bits(gen, 2048) != 1 ||
		    EVP_PKEY_CTX_set1_rsa_keygen_pubexp(gen, e) != 1 ||
		    EVP_PKEY_keygen(gen, &key) != 1 ||
		    (md = EVP_MD_CTX_new()) == NULL ||
		    EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) != 1 ||
		    EVP_DigestSign(md, sig, &siglen, msg, sizeof(msg)) != 1 ||
		    EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_N,
		    &n) != 1)
			abort();
		pem = pem_of(n, e);
		ks = jwk_set_parse(pem, strlen(pem), NULL, err, sizeof(err));
		ok(ks != NULL, "e = %llu: key loaded", exps[i]);
		is_int(jwk_rs256_verify(ks, 0, msg, sizeof(msg), sig, siglen),
		    1, "e = %llu: OpenSSL's signature verifies", exps[i]);
		msg[0] ^= 1;
		is_int(jwk_rs256_verify(ks, 0, msg, sizeof(msg), sig, siglen),
		    0, "e = %llu: another message does not", exps[i]);
		msg[0] ^= 1;
		sig[siglen / 2] ^= 0x10;
		is_int(jwk_rs256_verify(ks, 0, msg, sizeof(msg), sig, siglen),
		    0, "e = %llu: another signature does not", exps[i]);
		/* n itself: RSAVP1's "out of range", never m = 0. */
		if (BN_bn2binpad(n, sig, (int)siglen) != (int)siglen)
			abort();
		is_int(jwk_rs256_verify(ks, 0, msg, sizeof(msg), sig, siglen),
		    0, "e = %llu: the modulus as a signature does not",
		    exps[i]);
		jwk_set_free(ks);
		free(pem);
		BN_free(n);
		n = NULL;
		EVP_MD_CTX_free(md);
		EVP_PKEY_free(key);
		EVP_PKEY_CTX_free(gen);
	}
	BN_free(e);
}

static void
test_strerror(void)
{
	int i, j, distinct = 1;

	for (i = JWT_OK; i <= JWT_ESUB; i++)
		for (j = JWT_OK; j < i; j++)
			if (strcmp(jwt_strerror((enum jwt_err)i),
			    jwt_strerror((enum jwt_err)j)) == 0)
				distinct = 0;
	ok(distinct, "jwt_strerror: one text per error");
	is_str(jwt_strerror(JWT_EEXP), "expired or no exp",
	    "jwt_strerror(JWT_EEXP)");
	is_str(jwt_strerror((enum jwt_err)99), "unknown error",
	    "jwt_strerror(99)");
}

int
main(void)
{
	char err[256];

	keysets[KS_PEM] = keyset_file("pub.pem", NULL, err, sizeof(err));
	ok(keysets[KS_PEM] != NULL, "load pub.pem: %s",
	    keysets[KS_PEM] ? "ok" : err);
	keysets[KS_PEM_KID] = keyset_file("pub.pem", "test-1", err,
	    sizeof(err));
	ok(keysets[KS_PEM_KID] != NULL, "load pub.pem with kid test-1: %s",
	    keysets[KS_PEM_KID] ? "ok" : err);
	keysets[KS_JWKS] = keyset_file("jwks.json", NULL, err, sizeof(err));
	ok(keysets[KS_JWKS] != NULL, "load jwks.json: %s",
	    keysets[KS_JWKS] ? "ok" : err);
	keysets[KS_FOREIGN] = keyset_file("foreign_jwks.json", NULL, err,
	    sizeof(err));
	ok(keysets[KS_FOREIGN] != NULL, "load foreign_jwks.json: %s",
	    keysets[KS_FOREIGN] ? "ok" : err);
	if (keysets[KS_PEM] == NULL || keysets[KS_PEM_KID] == NULL ||
	    keysets[KS_JWKS] == NULL || keysets[KS_FOREIGN] == NULL) {
		diag("key files missing: set CFPM_SRCDIR to the source tree");
		return done_testing();
	}

	test_goldens();
	test_goldens_split();
	test_claims_out();
	test_golden_variants();
	test_hs256_golden();
	test_rs256_verify();
	test_keyset_parse();
	test_keyset_exponents();
	test_rs256_exponents();
	test_strerror();

	jwk_set_free(keysets[KS_PEM]);
	jwk_set_free(keysets[KS_PEM_KID]);
	jwk_set_free(keysets[KS_JWKS]);
	jwk_set_free(keysets[KS_FOREIGN]);
	return done_testing();
}
