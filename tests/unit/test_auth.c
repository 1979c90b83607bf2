/*
 * test_auth.c: Bearer extraction and scope words (the pure parts of auth),
 * plus the id and media-type helpers of api.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "events/api.h"
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

static void
test_ids(void)
{
	int64_t id = 0;

	is_int(api_parse_id("1", 1, &id), 0, "id 1");
	is_int(id, 1, "id value 1");
	is_int(api_parse_id("0001", 4, &id), 0, "leading zeros");
	is_int(id, 1, "leading zeros value");
	is_int(api_parse_id("9223372036854775807", 19, &id), 0, "2^63-1");
	is_int(id, INT64_MAX, "2^63-1 value");
	is_int(api_parse_id("9223372036854775808", 19, &id), -1, "2^63");
	is_int(api_parse_id("00009223372036854775807", 23, &id), 0,
	    "2^63-1 with zeros");
	is_int(api_parse_id("99999999999999999999", 20, &id), -1, "20 digits");
	is_int(api_parse_id("0", 1, &id), -1, "zero");
	is_int(api_parse_id("000", 3, &id), -1, "zeros");
	is_int(api_parse_id("", 0, &id), -1, "empty");
	is_int(api_parse_id("-1", 2, &id), -1, "negative");
	is_int(api_parse_id("+1", 2, &id), -1, "plus sign");
	is_int(api_parse_id("%31", 3, &id), -1, "percent-encoded");
	is_int(api_parse_id("1a", 2, &id), -1, "trailing letter");
	is_int(api_parse_id("1/", 2, &id), -1, "trailing slash");
}

static void
test_media_type(void)
{
	ok(api_is_json_type("application/json"), "plain");
	ok(api_is_json_type("application/json; charset=utf-8"), "charset");
	ok(api_is_json_type("Application/JSON;charset=UTF-8"), "case");
	ok(api_is_json_type("application/json ; x=y"), "space before ;");
	ok(!api_is_json_type(NULL), "absent");
	ok(!api_is_json_type("text/plain"), "text/plain");
	ok(!api_is_json_type("application/jsonp"), "jsonp");
	ok(!api_is_json_type("application/json-patch+json"), "json-patch");
	ok(!api_is_json_type("application/json x"), "junk after");
}

int
main(void)
{
	test_bearer();
	test_scope();
	test_ids();
	test_media_type();
	return done_testing();
}
