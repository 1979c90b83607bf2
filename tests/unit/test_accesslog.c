/*
 * test_accesslog.c: access-log line formatting (pure part of accesslog.c).
 */
#include <string.h>

#include "server/accesslog.h"
#include "tap.h"

int
main(void)
{
	struct accesslog_entry e = {
		.method = "GET", .path = "/events/1?x", .path_len = 9,
		.request_id = "abc123", .status = 200, .duration_us = 1234,
		.cpu_us = 500, .pid = 42, .time = 1790000000,
	};
	char buf[256], small[16];
	size_t n;

	n = accesslog_format(buf, sizeof(buf),
	    "%t %p %i \"%m %r\" %s %d %C %% %x", &e);
	is_str(buf, "2026-09-21T14:13:20Z 42 abc123 \"GET /events/1\" 200 "
	    "1.234 0.500 % %x\n", "every field");
	is_int(n, strlen(buf), "length returned");
	e.request_id = NULL;
	accesslog_format(buf, sizeof(buf), "%i|%r", &e);
	is_str(buf, "-|/events/1\n", "no request id is -; the query is cut");
	e.path = "/a\nb\x1b";
	e.path_len = 5;
	accesslog_format(buf, sizeof(buf), "%r", &e);
	is_str(buf, "/a\\x0ab\\x1b\n", "control bytes cannot forge lines");
	e.method = "G\rT\xff";
	e.path = "/caf\xc3\xa9\\\xc3";
	e.path_len = 8;
	e.request_id = "id\n1";
	accesslog_format(buf, sizeof(buf), "%m %r %i", &e);
	is_str(buf, "G\\x0dT\\xff /caf\xc3\xa9\\\\\\xc3 id\\x0a1\n",
	    "method, path and request id escaped; valid UTF-8 kept");
	e.path = "/\n\n\n\n";
	e.path_len = 5;
	n = accesslog_format(small, sizeof(small), "%m %r", &e);
	is_str(small, "G\\x0dT\\xff /\n", "a cut never splits an escape");
	is_int(n, 13, "short line length");
	e.method = "GET";
	n = accesslog_format(small, sizeof(small), "%m %m %m %m %m %m", &e);
	is_int(n, sizeof(small) - 1, "truncated to the buffer");
	ok(small[n - 1] == '\n', "a truncated line still ends in a newline");
	is_int(accesslog_format(small, 1, "%m", &e), 0, "no room at all");
	return done_testing();
}
