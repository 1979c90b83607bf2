/*
 * test_wycheproof.c: jwk_rs256_verify() against Project Wycheproof's
 * RSASSA-PKCS1-v1_5 / SHA-256 / 2048-bit vectors
 * (tests/data/wycheproof/testvectors_v1/, see SOURCE.md there).
 *
 * Each group's key is loaded twice through jwk_set_parse(): from its
 * SPKI PEM and from its JWK (as a one-key JWKS). Every vector is run with
 * both: "valid" must verify, "invalid" must not, "acceptable" may do either
 * (reported). A key the loader refuses fails every "valid" vector of its
 * group, since the signature then cannot verify.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "events/jwt.h"
#include "tap.h"

#define VECTORS	"tests/data/wycheproof/testvectors_v1/" \
		"rsa_signature_2048_sha256_test.json"

struct tally {
	int	 valid, invalid, acceptable, accepted_acceptable, vectors;
};

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Hex string to bytes; returns a buffer (never NULL on success) or NULL. */
static unsigned char *
unhex(const char *s, size_t *outlen)
{
	unsigned char *buf;
	size_t len, i;
	int hi, lo;

	len = strlen(s);
	if (len % 2 != 0 || (buf = malloc(len / 2 + 1)) == NULL)
		return NULL;
	for (i = 0; i < len / 2; i++) {
		hi = hexval(s[2 * i]);
		lo = hexval(s[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			free(buf);
			return NULL;
		}
		buf[i] = (unsigned char)(hi << 4 | lo);
	}
	*outlen = len / 2;
	return buf;
}

/* Loads the group's key from its PEM or from its JWK. */
static struct jwk_set *
group_keyset(const json_t *group, int from_jwk, char *err, size_t errlen)
{
	struct jwk_set *ks = NULL;
	const char *pem;
	json_t *jwks;
	char *text;

	if (!from_jwk) {
		if ((pem = json_string_value(json_object_get(group,
		    "publicKeyPem"))) == NULL) {
			snprintf(err, errlen, "no publicKeyPem");
			return NULL;
		}
		return jwk_set_parse(pem, strlen(pem), NULL, err, errlen);
	}
	if (json_object_get(group, "keyJwk") == NULL) {
		snprintf(err, errlen, "no keyJwk");
		return NULL;
	}
	jwks = json_pack("{s:[O]}", "keys", json_object_get(group, "keyJwk"));
	if (jwks != NULL && (text = json_dumps(jwks, JSON_COMPACT)) != NULL) {
		ks = jwk_set_parse(text, strlen(text), NULL, err, errlen);
		free(text);
	}
	json_decref(jwks);
	return ks;
}

/* The hex member name of test t as bytes; NULL if absent or not hex. */
static unsigned char *
hex_member(const json_t *t, const char *name, size_t *len)
{
	const char *hex;

	if ((hex = json_string_value(json_object_get(t, name))) == NULL)
		return NULL;
	return unhex(hex, len);
}

static void
run_vector(const struct jwk_set *ks, const json_t *t, const char *how,
    struct tally *n)
{
	unsigned char *msg, *sig;
	size_t msglen = 0, siglen = 0;
	const char *result, *comment;
	long long tcid;
	int got;

	tcid = (long long)json_integer_value(json_object_get(t, "tcId"));
	result = json_string_value(json_object_get(t, "result"));
	comment = json_string_value(json_object_get(t, "comment"));
	if (comment != NULL && *comment == '\0')
		comment = "(no comment)";
	msg = hex_member(t, "msg", &msglen);
	sig = hex_member(t, "sig", &siglen);
	if (result == NULL || comment == NULL || msg == NULL || sig == NULL) {
		ok(0, "tcId %lld [%s]: unreadable vector", tcid, how);
		goto done;
	}
	n->vectors++;
	got = 0;
	if (ks != NULL)
		got = jwk_rs256_verify(ks, 0, msg, msglen, sig, siglen);
	if (strcmp(result, "valid") == 0) {
		n->valid++;
		ok(got == 1, "tcId %lld [%s] valid, verifies: %s", tcid, how,
		    comment);
	} else if (strcmp(result, "invalid") == 0) {
		n->invalid++;
		ok(got == 0, "tcId %lld [%s] invalid, refused: %s", tcid, how,
		    comment);
	} else if (strcmp(result, "acceptable") == 0) {
		n->acceptable++;
		n->accepted_acceptable += got == 1;
		ok(got == 0 || got == 1, "tcId %lld [%s] acceptable, %s: %s",
		    tcid, how, got == 1 ? "accepted" : "refused", comment);
	} else
		ok(0, "tcId %lld [%s]: unknown result \"%s\"", tcid, how,
		    result);
done:
	free(msg);
	free(sig);
}

static void
run_group(const json_t *group, size_t gi, int from_jwk, struct tally *n)
{
	struct jwk_set *ks;
	const json_t *t;
	char err[256] = "";
	char how[64];
	size_t i;

	snprintf(how, sizeof(how), "group %zu, %s", gi,
	    from_jwk ? "jwk" : "pem");
	ks = group_keyset(group, from_jwk, err, sizeof(err));
	if (ks == NULL) {
		printf("# %s: key refused (%s); its valid vectors will fail\n",
		    how, err);
	}
	json_array_foreach(json_object_get(group, "tests"), i, t)
		run_vector(ks, t, how, n);
	jwk_set_free(ks);
}

int
main(void)
{
	struct tally n = { 0, 0, 0, 0, 0 };
	json_error_t jerr;
	json_t *root, *groups, *group;
	const char *dir;
	char path[4096], line[256];
	size_t gi;
	int from_jwk;

	if ((dir = getenv("CFPM_SRCDIR")) == NULL || *dir == '\0')
		dir = ".";
	snprintf(path, sizeof(path), "%s/%s", dir, VECTORS);
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		ok(0, "load %s: %s", path, jerr.text);
		return done_testing();
	}
	is_str(json_string_value(json_object_get(root, "algorithm")),
	    "RSASSA-PKCS1-v1_5", "vector file algorithm");
	groups = json_object_get(root, "testGroups");
	json_array_foreach(groups, gi, group) {
		if (!ok(json_is_string(json_object_get(group, "sha")) &&
		    strcmp(json_string_value(json_object_get(group, "sha")),
		    "SHA-256") == 0, "group %zu uses SHA-256", gi))
			continue;
		for (from_jwk = 0; from_jwk <= 1; from_jwk++)
			run_group(group, gi, from_jwk, &n);
	}
	/* Every vector ran once per key form. */
	is_int(n.vectors, 2 * json_integer_value(json_object_get(root,
	    "numberOfTests")), "all vectors run, with both key forms");
	snprintf(line, sizeof(line), "vectors: %d valid, %d invalid, %d "
	    "acceptable (%d of them accepted), over both key forms",
	    n.valid, n.invalid, n.acceptable, n.accepted_acceptable);
	diag(line);
	json_decref(root);
	return done_testing();
}
