/*
 * auth.c: Authorization header parsing and scope policy (worker), and the
 * key set they verify against. The master reads and parses the key file
 * (auth_init, from events_load: at start, for -t and on every reload);
 * workers inherit the parsed keys and never read the file.
 */
#include "events/auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/readfile.h"

int
auth_init(struct auth *a, const struct settings *s, char *err,
    size_t errlen)
{
	char why[CONFIG_ERR_LEN / 2];
	size_t len;
	char *buf;

	memset(a, 0, sizeof(*a));
	if ((buf = readfile(s->key_file, AUTH_MAX_KEY_FILE, &len, err,
	    errlen)) == NULL)
		return -1;
	a->keys = jwk_set_parse(buf, len, s->key_id[0] != '\0' ?
	    s->key_id : NULL, why, sizeof(why));
	free(buf);
	if (a->keys == NULL) {
		snprintf(err, errlen, "%s: %s", s->key_file, why);
		return -1;
	}
	memcpy(a->issuer, s->issuer, sizeof(a->issuer));
	memcpy(a->audience, s->audience, sizeof(a->audience));
	a->policy.issuer = a->issuer;
	a->policy.audience = a->audience;
	a->policy.leeway = s->leeway;
	a->policy.typ_mode = s->typ_strict ? JWT_TYP_STRICT :
	    JWT_TYP_LENIENT;
	return 0;
}

void
auth_free(struct auth *a)
{
	jwk_set_free(a->keys);
	a->keys = NULL;
}

/*
 * The scans are strspn/strcspn over single characters: libc's vector
 * loops, where a byte-at-a-time walk cost ~4 instructions per byte of
 * a token that is ~700 of them.
 */
enum auth_result
auth_bearer(const char *header, const char **tok, size_t *len)
{
	const char *p, *end;

	if (header == NULL || header[0] == '\0')
		return AUTH_NO_CREDENTIALS;
	p = header + strspn(header, " ");
	/* Another scheme is "no credentials" for us: challenge, no error. */
	if (strncasecmp(p, "Bearer", 6) != 0 || (p[6] != ' ' && p[6] != '\0'))
		return AUTH_NO_CREDENTIALS;
	p += 6;
	p += strspn(p, " ");
	end = p + strcspn(p, " ");
	if (end == p)
		return AUTH_MALFORMED;		/* bare "Bearer" */
	*tok = p;
	*len = (size_t)(end - p);
	if (end[strspn(end, " ")] != '\0')
		return AUTH_MALFORMED;		/* two tokens */
	return AUTH_OK;
}

int
auth_scope_has(const char *scope, const char *word)
{
	size_t wlen = strlen(word), n;
	const char *p = scope;

	if (wlen == 0)
		return 0;
	while (*p != '\0') {
		while (*p == ' ')
			p++;
		n = strcspn(p, " ");
		/* Whole words only: "events:rea" is not "events:read". */
		if (n == wlen && memcmp(p, word, n) == 0)
			return 1;
		p += n;
	}
	return 0;
}

int
auth_check_begin(const struct auth *a, const char *header, const char *scope,
    int64_t now, struct jwt_claims *claims, struct auth_pending *p)
{
	const char *tok = NULL;
	size_t len = 0;

	memset(claims, 0, sizeof(*claims));
	p->why = JWT_OK;
	p->sign = 0;
	if ((p->res = auth_bearer(header, &tok, &len)) != AUTH_OK)
		return 0;
	if (jwt_verify_begin(a->keys, &a->policy, tok, len, now, claims,
	    &p->jwt, &p->why) == -1) {
		p->res = AUTH_INVALID_TOKEN;
		return 0;
	}
	p->sign = 1;
	if (p->why != JWT_OK)
		p->res = AUTH_INVALID_TOKEN;
	/* A missing scope claim is a scope problem, not a bad token. */
	else if (!claims->has_scope || !auth_scope_has(claims->scope, scope))
		p->res = AUTH_INSUFFICIENT_SCOPE;
	return p->res == AUTH_OK;
}

enum auth_result
auth_check_end(const struct auth *a, const struct auth_pending *p,
    struct jwt_claims *claims, enum jwt_err *why)
{
	*why = p->why;
	if (!p->sign)
		return p->res;
	/* The signature first: a forged token is an invalid one, whatever
	 * its claims and scope say. */
	if (jwt_verify_end(a->keys, &p->jwt, claims, why) == -1)
		return AUTH_INVALID_TOKEN;
	return p->res;
}

enum auth_result
auth_check(const struct auth *a, const char *header, const char *scope,
    int64_t now, struct jwt_claims *claims, enum jwt_err *why)
{
	struct auth_pending p;

	(void)auth_check_begin(a, header, scope, now, claims, &p);
	return auth_check_end(a, &p, claims, why);
}
