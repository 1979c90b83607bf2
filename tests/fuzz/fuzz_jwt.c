/*
 * fuzz_jwt.c: libFuzzer target for token verification (jwt_verify) and
 * key loading (jwk_set_parse).
 *
 * The first input byte is a control byte; the rest is the payload:
 *   bits 0-1  mode
 *             0: the payload is a compact token, verified as is;
 *             1: the payload is key material for jwk_set_parse(); a
 *                set that loads then verifies the golden valid tokens;
 *             2: the payload is a JSON header and claims (byte 1: header
 *                length, then the header, then the claims): the target
 *                encodes them and signs with the test key, so the fuzzer
 *                reaches the claim checks behind the signature;
 *             3: the payload is a signing input "<header>.<claims>" in
 *                base64url: the target appends a valid signature.
 *   bit 2     typ policy: lenient or strict
 *   bits 3-4  leeway: 0, 60, 3600, INT64_MAX
 *   bits 5-6  now: NOW, NOW + 7200, INT64_MIN, INT64_MAX
 *   bit 7     mode 1 only: default kid NULL or "test-1"
 * Tokens are checked against three fixed key sets: pub.pem without a kid,
 * pub.pem with kid "test-1", and jwks.json (test-1 and test-2). Tokens and
 * key material are handed over in a copy that ends right before an
 * unmapped page (fuzz_guard_copy): a read past the length faults.
 *
 * Oracle (abort() if broken): a rejected token has a reason and zeroed
 * claims; an accepted one carries a signature that OpenSSL verifies on its
 * own with one of the two test keys, and its header and claims, decoded
 * independently, satisfy the policy (alg, crit, typ, iss, aud, exp, nbf,
 * sub, scope). jwt.c reads JSON with util/jcheck, not jansson: on every
 * token that splits and decodes, its verdict on the header and (behind a
 * good signature) the claims is jansson's with JSON_REJECT_DUPLICATES,
 * a NUL byte refused and nesting bounded (check_json_verdict).
 *
 * TEST-ONLY KEY MATERIAL below: copies of tests/data/jwt/pub.pem,
 * pub2.pem, jwks.json and the private key.pem (committed there on purpose,
 * see tests/data/jwt/README.md); they protect nothing.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "events/base64url.h"
#include "fuzz.h"
#include "fuzz_json.h"
#include "events/jwt.h"

#define NOW		INT64_C(1800000000)	/* mkgolden.sh's NOW */
#define ISSUER		"https://issuer.test"
#define AUDIENCE	"cfpm-test"
#define SIG_MAX		512			/* room for any test key */

static const char pub_pem[] =
	"-----BEGIN PUBLIC KEY-----\n"
	"MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAx8aNFxBpJ2lS+95mclTE\n"
	"QNt+fVb4NftxqRkRkbNnY9ZQSiOApUityRi7dRyZ4kLlXqxuc0ovMsAW4P0Vvqtk\n"
	"566yBahViLdEUloSj2F6MKcM9poAisxgmX3LNuJw0c5DdVtXTIq0h5BCL/FyEhSm\n"
	"LDcNqhyHAvmZBkobzDHyJaY8nwUVO80OPl/cVEYqEzCvgAwG54XRyNgfSYmKFGXQ\n"
	"u+ugCudu9c5TFBYnBMBJ5NM4TmzF0oTxkS1Hd6ASiDVNRpHzlvh20XRHF/UXQInf\n"
	"lHuJU7Z4DA0QARHSvW4cpzvkTAjJ3C67v+2jiZh0UzRcGBqTe3SFyH6JsoXVbc2E\n"
	"SQIDAQAB\n"
	"-----END PUBLIC KEY-----\n";

static const char pub2_pem[] =
	"-----BEGIN PUBLIC KEY-----\n"
	"MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAqxdNo4AnYB9qeDKLiLhU\n"
	"qk8qhl1ictoxE/N8JKJq0C5jjJKTXJs5TT7JxO8kvHszJPTfY3MCO58WhrwBrldu\n"
	"Iwdu5ynkgaSEukb18XLcENaw31LXPNDD8fRO/l8BAUS22+L+Beza58H37wgBPhQf\n"
	"QFfIWlXNxCw9bqOp/Qvzgx5ms+R8QJxBYbHaFVL5XhxA82xxuKrampBSZPcqoggU\n"
	"rZRkVpYDmSX5GPyq+flN84Pp2BWD5skNfGuiy15PSI9cdrEJ2b3/iZIdafx7ceYx\n"
	"dN/mOCAj+PaMK0zVbvHVYiwgl0TQd3tDBElS3xBCYHJgHxjigwQ8pIGMK28vmITe\n"
	"8wIDAQAB\n"
	"-----END PUBLIC KEY-----\n";

static const char jwks_json[] =
	"{\"keys\":[{\"kty\":\"RSA\",\"use\":\"sig\",\"alg\":\"RS256\""
	",\"kid\":\"test-1\",\"n\":\"x8aNFxBpJ2lS-95mclTEQNt-fVb4Nftx"
	"qRkRkbNnY9ZQSiOApUityRi7dRyZ4kLlXqxuc0ovMsAW4P0Vvqtk566yBahV"
	"iLdEUloSj2F6MKcM9poAisxgmX3LNuJw0c5DdVtXTIq0h5BCL_FyEhSmLDcN"
	"qhyHAvmZBkobzDHyJaY8nwUVO80OPl_cVEYqEzCvgAwG54XRyNgfSYmKFGXQ"
	"u-ugCudu9c5TFBYnBMBJ5NM4TmzF0oTxkS1Hd6ASiDVNRpHzlvh20XRHF_UX"
	"QInflHuJU7Z4DA0QARHSvW4cpzvkTAjJ3C67v-2jiZh0UzRcGBqTe3SFyH6J"
	"soXVbc2ESQ\",\"e\":\"AQAB\"},{\"kty\":\"RSA\",\"use\":\"sig\""
	",\"alg\":\"RS256\",\"kid\":\"test-2\",\"n\":\"qxdNo4AnYB9qeD"
	"KLiLhUqk8qhl1ictoxE_N8JKJq0C5jjJKTXJs5TT7JxO8kvHszJPTfY3MCO5"
	"8WhrwBrlduIwdu5ynkgaSEukb18XLcENaw31LXPNDD8fRO_l8BAUS22-L-Be"
	"za58H37wgBPhQfQFfIWlXNxCw9bqOp_Qvzgx5ms-R8QJxBYbHaFVL5XhxA82"
	"xxuKrampBSZPcqoggUrZRkVpYDmSX5GPyq-flN84Pp2BWD5skNfGuiy15PSI"
	"9cdrEJ2b3_iZIdafx7ceYxdN_mOCAj-PaMK0zVbvHVYiwgl0TQd3tDBElS3x"
	"BCYHJgHxjigwQ8pIGMK28vmITe8w\",\"e\":\"AQAB\"}]}";

static const char key_pem[] =
	"-----BEGIN PRIVATE KEY-----\n"
	"MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDHxo0XEGknaVL7\n"
	"3mZyVMRA2359Vvg1+3GpGRGRs2dj1lBKI4ClSK3JGLt1HJniQuVerG5zSi8ywBbg\n"
	"/RW+q2TnrrIFqFWIt0RSWhKPYXowpwz2mgCKzGCZfcs24nDRzkN1W1dMirSHkEIv\n"
	"8XISFKYsNw2qHIcC+ZkGShvMMfIlpjyfBRU7zQ4+X9xURioTMK+ADAbnhdHI2B9J\n"
	"iYoUZdC766AK5271zlMUFicEwEnk0zhObMXShPGRLUd3oBKINU1GkfOW+HbRdEcX\n"
	"9RdAid+Ue4lTtngMDRABEdK9bhynO+RMCMncLru/7aOJmHRTNFwYGpN7dIXIfomy\n"
	"hdVtzYRJAgMBAAECggEAEhr1A3+ZwBgkDK6Zw0faZ3RdENf2c9H/eY9Lj9ReDObJ\n"
	"7QYtrQ0arux+ZL08VwywA/YFpo41G9jb2fUl6NtYsESdXrTkV5kgaIRARV1UuR8S\n"
	"pjDL1shyAscrSSSZi/IxG+w0y7uQY+7XiMfNikTz0HMG2oFuXP8o9rB1t3pZUz8G\n"
	"HLCE7dyqjjfYZaalMWSUTHRu1ohth3Uu4ObtmljuXf+DgcsyqqOoMcNBvbrP/Mp4\n"
	"wkl65B7aBrY2eK+rl+TqCH8uZEyQ7JtvxnBob6+BZeAQE6ylOTIW4Z68UyyqDZvG\n"
	"rYvuBPohptA0fk09fz3XezgxEP70mvWeXgLgmn4QgQKBgQDsPhrvifvuJwLsCp8O\n"
	"ObPWyN+Xxt6WHz4IpHB91fnL0bXjWiGY+oudinGHHiBGkrBjRy4Zkb7SaSzo5pn2\n"
	"QwQyv8jySgYT+WpOvvTGUEvn+UPtuPuF8oCEpg5klpVnt6pejCtWXMRPcBXuBSEu\n"
	"L7qdR+A9cMiLZQIgeAKuIyhg6QKBgQDYe7JIavRMrzwRpfPK7N8b87iLMB16jVyG\n"
	"fTHEJSQ/D8GZuN3z5pnjfLF399d5lhZEFtDMz8uGS3wrfu/QpXVK/2qYt1gYcZJY\n"
	"/G7w4ht7i2ESxOq00Q+MH1AnJXI5RDoJPM+c4QMVDkUsTeO/O31rwS2WXLxUpXbh\n"
	"SBQkJprsYQKBgBs5+R68N1W2F0ce3j/kdI5/bg1u9P42MY8LbI+EFprf22eNXqvj\n"
	"zC1m5DifRzb69usqK+z0eBqF1pAs63ePN6+lnMIXt+WbbB4RMeKdJHJirup51DsW\n"
	"vKsM/EGpfSSL7U2iN+hnHpTNJSneW3mYNJilzPknw2UVSg515lEtahzpAoGBAJfG\n"
	"wcw8EGPjR/4nl7FiOVpjmbMcXM6bZY91Hvsh/zOnXFjmX9asiqAPwG0X+p5oN9wt\n"
	"Et9FoK/bJIdqS8DBAGdAg//mK4GXvr9c3HtOS25m3fxGyzdSi8/19EA95MN5ribj\n"
	"17tplrugcacKRO7CSsDNg6S0B+Zgy+ROoLBn0J6BAoGBAK3VN9V4VtLr5a3SJcm+\n"
	"b+Paw6hlohvxxjfaarrkk4rb2Z7091Dr/K7WwiDOtlhuvzmt0VZBF2oP1qx6v4wn\n"
	"SLM0tIzr5oXnAAHKNqlki0A19K+/vLizw6T4GzUbrgQAbrwhTD0+PtQw11qAay1d\n"
	"6LdtlVlOAcPTiyYWi6d+VAKm\n"
	"-----END PRIVATE KEY-----\n";

static const char valid_jwt[] =
	"eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJodHRwczovL2l"
	"zc3Vlci50ZXN0Iiwic3ViIjoidXNlci0xIiwiYXVkIjoiY2ZwbS10ZXN0Iiw"
	"iZXhwIjoxODAwMDAzNjAwLCJuYmYiOjE3OTk5OTk5NDAsImlhdCI6MTc5OTk"
	"5OTk0MCwic2NvcGUiOiJldmVudHM6cmVhZCBldmVudHM6d3JpdGUifQ.gFLG"
	"RkedJW0BVVepe8_d_XJJ2rHRayWAf2e3mzJEKUd7OBuWBA10j95xDFrXTx9G"
	"heoNPj04LEs0PtYKkstCcKZvsB90D5ahvavLbX-Rv_7Q3yey-JIWcmhM3Ksi"
	"qdTQHFe0Qer5SPeBgokMUEEcCM0XcANfT6B4H_nwnNd2jk5W-znY3qKniHYo"
	"ACrjPj5vF-kgWEJp9gVVhQKn1lChh9mxLdaiPtHGXE-7pVkttP4JMdka_qXD"
	"aRXyEFEPRHT6QadskI0cXUod67e0m4Zt1GLaT7XgiTcbp5mjaFPSudtk_1zq"
	"Yo6o6CFmtJAdpN3bWCMgvcY2Aiz58NuAGVKPhA";

static const char valid_kid1_jwt[] =
	"eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6InRlc3QtMSJ9.eyJ"
	"pc3MiOiJodHRwczovL2lzc3Vlci50ZXN0Iiwic3ViIjoidXNlci0xIiwiYXV"
	"kIjoiY2ZwbS10ZXN0IiwiZXhwIjoxODAwMDAzNjAwLCJuYmYiOjE3OTk5OTk"
	"5NDAsImlhdCI6MTc5OTk5OTk0MCwic2NvcGUiOiJldmVudHM6cmVhZCBldmV"
	"udHM6d3JpdGUifQ.ukkQYPClxGRgl0Bi938VXYP_MSc2FJkpy1mYZioCQs9k"
	"b-hlpklkseXreTD4c3tV1LGsaIhLI_AjRf9G9kddkKgOKNQWBjKHFw4FteHe"
	"69QqPkPVbtFPAvkXqkdD6Kmtc5kZhHhNtDZILo3CxySl0P1KUWOJ6LGh4JgI"
	"qxByBKc5DIBIawbrfjLho-1ZpgoY9XKgrXVgtQEAHQ_0jMTWZN1F3xGpPsw5"
	"YaEaLqiWTb4S0EiBA8rjspQ7MWhRfvQ8hDQ7-cumwveBultTFBlMNTE-wvPG"
	"DpiOd39z1eIXhzNYjq8xmxbnLPJq_mjwIBli7xDKKH1PXbGzzifC-bS4JA";

static const char valid_kid2_jwt[] =
	"eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6InRlc3QtMiJ9.eyJ"
	"pc3MiOiJodHRwczovL2lzc3Vlci50ZXN0Iiwic3ViIjoidXNlci0xIiwiYXV"
	"kIjoiY2ZwbS10ZXN0IiwiZXhwIjoxODAwMDAzNjAwLCJuYmYiOjE3OTk5OTk"
	"5NDAsImlhdCI6MTc5OTk5OTk0MCwic2NvcGUiOiJldmVudHM6cmVhZCBldmV"
	"udHM6d3JpdGUifQ.pFXn3iXnQSVxZ8FdP86s-B7gmGtPxui5G_nOWLhUsiST"
	"49540OmpqKBsJ085aF_oGKvyUX_9Gpq5sw16a3RnabdDSnO_QDJgUJhdxDiH"
	"MGx9vvvOXNq5S7iYHjs9Py1RMHouAiptQ4IxtWQ7uvcJ8b8ijBDrcEly5drZ"
	"CYFU1iidkwMvD7ROnbYiHIsCHFPpjfCh_a-raVM-rreW72sHCdL9dzMJZqBM"
	"2C2EXo2k4VMAZbAfAkJlWwexpJoXd8acdyP27BYBTK8U_oyweIsFnHmzW2Yq"
	"nGuvzLNWNB0MCglpJsU94SRA8uiXuOTa9YSlc2cReoNsf6mLF-HYQ2Y38g";

static const int64_t leeways[4] = { 0, 60, 3600, INT64_MAX };
static const int64_t nows[4] = { NOW, NOW + 7200, INT64_MIN, INT64_MAX };

static struct jwk_set *keysets[3];	/* pem, pem+kid, jwks */
static EVP_PKEY *sign_key;		/* key.pem */
static EVP_PKEY *check_keys[2];		/* pub.pem, pub2.pem */

static EVP_PKEY *
pem_key(const char *text, int private)
{
	BIO *bio;
	EVP_PKEY *k;

	if ((bio = BIO_new_mem_buf(text, -1)) == NULL)
		abort();
	k = private ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) :
	    PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	BIO_free(bio);
	if (k == NULL)
		abort();
	return k;
}

static struct jwk_set *
keyset(const char *text, const char *kid)
{
	struct jwk_set *ks;
	char err[256];

	if ((ks = jwk_set_parse(text, strlen(text), kid, err,
	    sizeof(err))) == NULL)
		abort();
	return ks;
}

/* Loads the fixed keys once; they live until exit (still reachable). */
static void
setup(void)
{
	static int done;

	if (done)
		return;
	keysets[0] = keyset(pub_pem, NULL);
	keysets[1] = keyset(pub_pem, "test-1");
	keysets[2] = keyset(jwks_json, NULL);
	sign_key = pem_key(key_pem, 1);
	check_keys[0] = pem_key(pub_pem, 0);
	check_keys[1] = pem_key(pub2_pem, 0);
	done = 1;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setup();
	return 0;
}

/*
 * Independent base64url decoding for the oracle: translate to standard
 * base64, pad, and let OpenSSL decode. Returns a malloc'd buffer or NULL.
 */
static unsigned char *
b64url_indep(const char *s, size_t len, size_t *outlen)
{
	unsigned char *in, *out;
	size_t i, pad = (4 - len % 4) % 4;
	int n;

	if ((in = malloc(len + pad + 1)) == NULL ||
	    (out = malloc(len + pad + 1)) == NULL)
		abort();
	for (i = 0; i < len; i++)
		in[i] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
	memset(in + len, '=', pad);
	n = EVP_DecodeBlock(out, in, (int)(len + pad));
	free(in);
	if (n < 0 || (size_t)n < pad) {
		free(out);
		return NULL;
	}
	*outlen = (size_t)n - pad;
	return out;
}

/* 1 if sig over msg verifies as RS256 with one of the two test keys. */
static int
rs256_indep(const char *msg, size_t msglen, const unsigned char *sig,
    size_t siglen)
{
	EVP_MD_CTX *ctx;
	EVP_PKEY_CTX *pctx;
	size_t i;
	int ok = 0;

	for (i = 0; i < 2 && !ok; i++) {
		if ((ctx = EVP_MD_CTX_new()) == NULL)
			abort();
		if (EVP_DigestVerifyInit(ctx, &pctx, EVP_sha256(), NULL,
		    check_keys[i]) != 1 ||
		    EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1)
			abort();
		ok = EVP_DigestVerify(ctx, sig, siglen,
		    (const unsigned char *)msg, msglen) == 1;
		EVP_MD_CTX_free(ctx);
	}
	ERR_clear_error();
	return ok;
}

/* A NumericDate as the oracle sees it; 0 if not a number. */
static int
date_ok(const json_t *v, int64_t now, int64_t leeway, int is_exp)
{
	__int128 t;

	if (json_is_integer(v)) {
		t = is_exp ? (__int128)now - leeway : (__int128)now + leeway;
		return is_exp ? t < json_integer_value(v) :
		    t >= json_integer_value(v);
	}
	if (!json_is_real(v))
		return 0;
	/* Reals: check only where long double compares exactly. */
	t = is_exp ? (__int128)now - leeway : (__int128)now + leeway;
	if (t < INT64_MIN || t > INT64_MAX)
		return 1;
	return is_exp ? (long double)(int64_t)t < json_real_value(v) :
	    (long double)(int64_t)t >= json_real_value(v);
}

/*
 * Decodes one segment independently and reads it as jwt.h promises to:
 * a JSON object jansson accepts with JSON_REJECT_DUPLICATES, holding no
 * NUL byte (which jansson may skip after a number or a literal, and jwt.c
 * refuses), nested at most JWT_MAX_DEPTH deep. NULL if it is not one.
 */
static json_t *
segment_oracle(const char *s, size_t len)
{
	unsigned char *buf;
	size_t n;
	json_t *v = NULL;

	if ((buf = b64url_indep(s, len, &n)) == NULL)
		abort();
	if (memchr(buf, '\0', n) == NULL)
		v = json_loadb((const char *)buf, n, JSON_REJECT_DUPLICATES,
		    NULL);
	free(buf);
	if (v != NULL && (!json_is_object(v) ||
	    fuzz_json_depth(v) > JWT_MAX_DEPTH)) {
		json_decref(v);
		v = NULL;
	}
	return v;
}

/* The same for a segment that must be one. */
static json_t *
segment_json(const char *s, size_t len)
{
	json_t *v;

	if ((v = segment_oracle(s, len)) == NULL)
		abort();
	return v;
}

/* 1 if the present member name of o is not a NumericDate. */
static int
not_a_date(const json_t *o, const char *name)
{
	const json_t *v = json_object_get(o, name);

	return v != NULL && !json_is_integer(v) && !(json_is_real(v) &&
	    isfinite(json_real_value(v)));
}

/*
 * A token split and decoded, then rejected or accepted: the JSON verdicts
 * are jansson's. A header jansson refuses is JWT_EHEADER, and
 * JWT_EHEADER is only that or a kid that is no string; claims behind a
 * good signature that jansson refuses are JWT_ECLAIMS, and JWT_ECLAIMS
 * is only that or a claim of the wrong type.
 */
static void
check_json_verdict(const char *tok, size_t len, enum jwt_err e)
{
	const char *d1, *d2;
	json_t *hdr, *pay, *v;

	d1 = memchr(tok, '.', len);
	d2 = memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - tok));
	hdr = segment_oracle(tok, (size_t)(d1 - tok));
	v = json_object_get(hdr, "kid");
	if (hdr == NULL ? e != JWT_EHEADER :
	    e == JWT_EHEADER && (v == NULL || json_is_string(v)))
		abort();
	json_decref(hdr);
	if (e != JWT_ECLAIMS && e != JWT_EISS && e != JWT_EAUD &&
	    e != JWT_EEXP && e != JWT_ENBF && e != JWT_ESUB && e != JWT_OK)
		return;
	pay = segment_oracle(d1 + 1, (size_t)(d2 - d1 - 1));
	v = json_object_get(pay, "scope");
	if (pay == NULL ? e != JWT_ECLAIMS : e == JWT_ECLAIMS &&
	    !not_a_date(pay, "exp") && !not_a_date(pay, "nbf") &&
	    !not_a_date(pay, "iat") && (v == NULL || (json_is_string(v) &&
	    json_string_length(v) <= JWT_MAX_SCOPE)))
		abort();
	json_decref(pay);
}

/* An accepted token: everything jwt.h promises must hold. */
static void
check_accepted(const char *tok, size_t len, const struct jwt_policy *p,
    int64_t now, const struct jwt_claims *c)
{
	const char *d1, *d2;
	unsigned char *sig;
	size_t siglen, i;
	json_t *hdr, *pay, *v, *m;
	int found = 0;

	if (len > JWT_MAX_LEN || (d1 = memchr(tok, '.', len)) == NULL ||
	    (d2 = memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - tok))) == NULL ||
	    memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - tok)) != NULL)
		abort();
	if ((sig = b64url_indep(d2 + 1, len - (size_t)(d2 + 1 - tok),
	    &siglen)) == NULL)
		abort();
	if (!rs256_indep(tok, (size_t)(d2 - tok), sig, siglen))
		abort();
	free(sig);

	hdr = segment_json(tok, (size_t)(d1 - tok));
	if (!json_is_string(v = json_object_get(hdr, "alg")) ||
	    strcmp(json_string_value(v), "RS256") != 0 ||
	    json_object_get(hdr, "crit") != NULL)
		abort();
	v = json_object_get(hdr, "typ");
	if (v != NULL && (!json_is_string(v) ||
	    (strcmp(json_string_value(v), "at+jwt") != 0 &&
	    strcmp(json_string_value(v), "application/at+jwt") != 0 &&
	    (p->typ_mode == JWT_TYP_STRICT ||
	    strcmp(json_string_value(v), "JWT") != 0))))
		abort();
	if (v == NULL && p->typ_mode == JWT_TYP_STRICT)
		abort();
	v = json_object_get(hdr, "kid");
	if (v != NULL && (!json_is_string(v) || json_string_length(v) == 0 ||
	    json_string_length(v) > JWK_MAX_KID))
		abort();
	json_decref(hdr);

	pay = segment_json(d1 + 1, (size_t)(d2 - d1 - 1));
	if (!json_is_string(v = json_object_get(pay, "iss")) ||
	    strcmp(json_string_value(v), p->issuer) != 0)
		abort();
	v = json_object_get(pay, "aud");
	if (json_is_string(v))
		found = strcmp(json_string_value(v), p->audience) == 0;
	else if (json_is_array(v)) {
		json_array_foreach(v, i, m) {
			if (!json_is_string(m))
				abort();
			if (strcmp(json_string_value(m), p->audience) == 0)
				found = 1;
		}
	}
	if (!found)
		abort();
	if (!date_ok(json_object_get(pay, "exp"), now, p->leeway, 1))
		abort();
	if ((v = json_object_get(pay, "nbf")) != NULL &&
	    !date_ok(v, now, p->leeway, 0))
		abort();
	if ((v = json_object_get(pay, "iat")) != NULL && !json_is_number(v))
		abort();
	if (!json_is_string(v = json_object_get(pay, "sub")) ||
	    json_string_length(v) == 0 || json_string_length(v) > JWT_MAX_SUB ||
	    strlen(c->sub) != json_string_length(v) ||
	    strcmp(c->sub, json_string_value(v)) != 0)
		abort();
	v = json_object_get(pay, "scope");
	if (v == NULL ? (c->has_scope || c->scope[0] != '\0') :
	    (!json_is_string(v) || !c->has_scope ||
	    json_string_length(v) > JWT_MAX_SCOPE ||
	    strlen(c->scope) != json_string_length(v) ||
	    strcmp(c->scope, json_string_value(v)) != 0))
		abort();
	json_decref(pay);
}

static void
verify_one(const struct jwk_set *ks, const char *tok, size_t len,
    const struct jwt_policy *p, int64_t now)
{
	static const struct jwt_claims zero;
	struct jwt_claims c;
	enum jwt_err e = JWT_ESUB + 1;

	memset(&c, 0xa5, sizeof(c));
	if (jwt_verify(ks, p, tok, len, now, &c, &e) == 0) {
		if (e != JWT_OK)
			abort();
		check_accepted(tok, len, p, now, &c);
	} else if (e == JWT_OK || e > JWT_ESUB ||
	    memcmp(&c, &zero, sizeof(c)) != 0 ||
	    strcmp(jwt_strerror(e), "unknown error") == 0)
		abort();
	if (e != JWT_ETOOLONG && e != JWT_EFORMAT)
		check_json_verdict(tok, len, e);
}

/* The token goes in a copy that ends right before an unmapped page. */
static void
verify_all(const char *tok, size_t len, const struct jwt_policy *p,
    int64_t now)
{
	struct fuzz_guard g;
	const char *copy;
	size_t i;

	copy = fuzz_guard_copy((const uint8_t *)tok, len, &g);
	for (i = 0; i < sizeof(keysets) / sizeof(keysets[0]); i++)
		verify_one(keysets[i], copy, len, p, now);
	fuzz_guard_free(&g);
}

/* Mode 1: fuzzed key material, then the golden tokens against it. */
static void
run_keyset(const uint8_t *data, size_t size, const char *kid,
    const struct jwt_policy *p)
{
	static const char *goldens[] = { valid_jwt, valid_kid1_jwt,
	    valid_kid2_jwt };
	struct jwk_set *ks;
	struct fuzz_guard g;
	char err[128];
	size_t i, n;

	memset(err, 0x5a, sizeof(err));
	ks = jwk_set_parse(fuzz_guard_copy(data, size, &g), size, kid, err,
	    sizeof(err));
	fuzz_guard_free(&g);
	if (memchr(err, '\0', sizeof(err)) == NULL)
		abort();
	n = jwk_set_count(ks);
	if (ks == NULL ? (err[0] == '\0' || n != 0) :
	    (n < 1 || n > JWK_MAX_KEYS))
		abort();
	if (ks != NULL) {
		for (i = 0; i < sizeof(goldens) / sizeof(goldens[0]); i++)
			verify_one(ks, goldens[i], strlen(goldens[i]), p, NOW);
		/* An index past the set is "no", never a read past it. */
		if (jwk_rs256_verify(ks, n, (const unsigned char *)"x", 1,
		    (const unsigned char *)"x", 1) != 0)
			abort();
	}
	jwk_set_free(ks);
}

/* Appends "." and an RS256 signature of tok[0..len) made with key.pem. */
static size_t
sign_append(char *tok, size_t len, size_t room)
{
	unsigned char sig[SIG_MAX];
	size_t siglen = sizeof(sig);
	EVP_MD_CTX *ctx;
	long n;

	if ((ctx = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, sign_key) != 1 ||
	    EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)tok,
	    len) != 1)
		abort();
	EVP_MD_CTX_free(ctx);
	tok[len++] = '.';
	if ((n = base64url_encode(sig, siglen, tok + len, room - len)) < 0)
		abort();
	return len + (size_t)n;
}

/* Mode 2: header JSON and claims JSON, encoded and signed here. */
static void
run_json(const uint8_t *data, size_t size, const struct jwt_policy *p,
    int64_t now)
{
	size_t hlen, plen, room, len;
	char *tok;
	long n;

	if (size < 1)
		return;
	hlen = data[0] < size - 1 ? data[0] : size - 1;
	plen = size - 1 - hlen;
	room = BASE64URL_ENCODED_LEN(hlen) + BASE64URL_ENCODED_LEN(plen) +
	    BASE64URL_ENCODED_LEN(SIG_MAX) + 3;
	/* Past JWT_MAX_LEN the signature does not matter: skip the work. */
	if ((tok = malloc(room)) == NULL)
		abort();
	if ((n = base64url_encode(data + 1, hlen, tok, room)) < 0)
		abort();
	len = (size_t)n;
	tok[len++] = '.';
	if ((n = base64url_encode(data + 1 + hlen, plen, tok + len,
	    room - len)) < 0)
		abort();
	len += (size_t)n;
	if (len <= JWT_MAX_LEN)
		len = sign_append(tok, len, room);
	verify_all(tok, len, p, now);
	free(tok);
}

/* Mode 3: a signing input as text, signed here. */
static void
run_signing_input(const uint8_t *data, size_t size,
    const struct jwt_policy *p, int64_t now)
{
	size_t room, len = size;
	char *tok;

	room = size + BASE64URL_ENCODED_LEN(SIG_MAX) + 2;
	if ((tok = malloc(room)) == NULL)
		abort();
	memcpy(tok, data, size);
	if (len <= JWT_MAX_LEN)
		len = sign_append(tok, len, room);
	verify_all(tok, len, p, now);
	free(tok);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jwt_policy p;
	int64_t now;
	uint8_t ctl;

	setup();
	if (size < 1)
		return 0;
	ctl = data[0];
	data++;
	size--;
	p.issuer = ISSUER;
	p.audience = AUDIENCE;
	p.typ_mode = ctl & 4 ? JWT_TYP_STRICT : JWT_TYP_LENIENT;
	p.leeway = leeways[(ctl >> 3) & 3];
	now = nows[(ctl >> 5) & 3];

	switch (ctl & 3) {
	case 0:
		verify_all((const char *)data, size, &p, now);
		break;
	case 1:
		run_keyset(data, size, ctl & 0x80 ? "test-1" : NULL, &p);
		break;
	case 2:
		run_json(data, size, &p, now);
		break;
	case 3:
		run_signing_input(data, size, &p, now);
		break;
	}
	return 0;
}
