/*
 * test_api.c: the pure helpers of events/api.c: a path's id (decimal
 * digits, leading zeros, 1 to 2^63-1, nothing percent-decoded) and the
 * Content-Type a POST must carry (application/json, parameters allowed).
 */
#include <stdint.h>

#include "events/api.h"
#include "tap.h"

static void
test_parse_id(void)
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
test_is_json_type(void)
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
	test_parse_id();
	test_is_json_type();
	return done_testing();
}
