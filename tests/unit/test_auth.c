/*
 * test_auth.c: Bearer extraction and scope words (the pure parts of
 * events/auth.c). The id and media-type helpers of api.c are
 * test_api.c's.
 */
#include <stdio.h>

#include "events/auth.h"
#include "tap.h"

static void
bearer(const char *header, enum auth_result want, const char *want_tok)
{
	const char *tok = NULL;
	size_t len = 0;
	char got[64] = "";

	is_int(auth_bearer(header, &tok, &len), want, "bearer \"%s\"",
	    header ? header : "(null)");
	if (want_tok != NULL) {
		snprintf(got, sizeof(got), "%.*s", (int)len, tok);
		is_str(got, want_tok, "token of \"%s\"", header);
	}
}

static void
test_bearer(void)
{
	bearer(NULL, AUTH_NO_CREDENTIALS, NULL);
	bearer("", AUTH_NO_CREDENTIALS, NULL);
	bearer("Basic dXNlcjpwYXNz", AUTH_NO_CREDENTIALS, NULL);
	bearer("Bearerabc", AUTH_NO_CREDENTIALS, NULL);
	bearer("Bearer", AUTH_MALFORMED, NULL);
	bearer("Bearer ", AUTH_MALFORMED, NULL);
	bearer("Bearer    ", AUTH_MALFORMED, NULL);
	bearer("Bearer a b", AUTH_MALFORMED, NULL);
	bearer("Bearer abc", AUTH_OK, "abc");
	bearer("bearer abc", AUTH_OK, "abc");
	bearer("BEARER abc", AUTH_OK, "abc");
	bearer("bEaReR  abc  ", AUTH_OK, "abc");
	bearer("Bearer a.b.c", AUTH_OK, "a.b.c");
}

static void
test_scope(void)
{
	is_int(auth_scope_has("events:read events:write", "events:read"), 1,
	    "first word");
	is_int(auth_scope_has("events:read events:write", "events:write"), 1,
	    "second word");
	is_int(auth_scope_has("events:read", "events:rea"), 0, "prefix no");
	is_int(auth_scope_has("events:rea", "events:read"), 0, "shorter no");
	is_int(auth_scope_has("events:readx", "events:read"), 0, "longer no");
	is_int(auth_scope_has("", "events:read"), 0, "empty scope");
	is_int(auth_scope_has("  events:read  ", "events:read"), 1,
	    "extra spaces");
	is_int(auth_scope_has("a events:write", ""), 0, "empty word");
}

int
main(void)
{
	test_bearer();
	test_scope();
	return done_testing();
}
