/*
 * test_render.c: the events API's JSON replies (events/render.c): string
 * escaping (util/buf.c's buf_json_string, which render.c writes with), RFC 3339 timestamps with microseconds, a stored event with
 * its payload verbatim, the claims of GET /auth, and a buffer too small
 * for them. All pure: no sockets.
 */
#include <stdint.h>
#include <string.h>

#include "events/render.h"

#include "tap.h"

/* The buffer's text, NUL-terminated (its memory has a byte to spare),
 * or "OVERFLOW". */
static const char *
rendered(struct buf *b)
{
	if (b->overflow)
		return "OVERFLOW";
	b->p[b->len] = '\0';
	return b->p;
}

static void
test_json_string(void)
{
	char mem[512];
	struct buf b;

	buf_init(&b, mem, sizeof(mem) - 1);
	buf_json_string(&b, "a\"b\\c\n\x01\x1f/\xc3\xa9", 11);
	is_str(rendered(&b),
	    "\"a\\\"b\\\\c\\u000a\\u0001\\u001f/\xc3\xa9\"",
	    "string: quotes, backslash, controls escaped, UTF-8 kept");
	buf_init(&b, mem, sizeof(mem) - 1);
	buf_json_string(&b, "", 0);
	is_str(rendered(&b), "\"\"", "string: empty");
}

static void
test_timestamp(void)
{
	char mem[512];
	struct buf b;

	buf_init(&b, mem, sizeof(mem) - 1);
	render_timestamp(&b, 0);
	is_str(rendered(&b), "\"1970-01-01T00:00:00.000000Z\"",
	    "timestamp: the epoch");
	buf_init(&b, mem, sizeof(mem) - 1);
	render_timestamp(&b, -1);
	is_str(rendered(&b), "\"1969-12-31T23:59:59.999999Z\"",
	    "timestamp: one microsecond before it");
	buf_init(&b, mem, sizeof(mem) - 1);
	render_timestamp(&b, INT64_C(1764547200123456));
	is_str(rendered(&b), "\"2025-12-01T00:00:00.123456Z\"",
	    "timestamp: microseconds kept");
}

static void
test_event(void)
{
	char mem[512];
	struct buf b;
	struct store_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.id = 42;
	ev.subject = "user-1";
	ev.subject_len = 6;
	ev.kind = "k\"";
	ev.kind_len = 2;
	ev.payload = "{\"a\": 1}";
	ev.payload_len = 8;
	ev.created_us = 0;
	buf_init(&b, mem, sizeof(mem) - 1);
	render_event(&b, &ev);
	is_str(rendered(&b), "{\"id\":42,\"subject\":\"user-1\","
	    "\"kind\":\"k\\\"\",\"payload\":{\"a\": 1},\"created_at\":"
	    "\"1970-01-01T00:00:00.000000Z\"}",
	    "event: payload verbatim, the rest escaped");
	buf_init(&b, mem, 20);
	render_event(&b, &ev);
	ok(b.overflow && b.len <= 20, "event: a small buffer overflows, bounded");
}

static void
test_claims(void)
{
	char mem[512];
	struct buf b;

	buf_init(&b, mem, sizeof(mem) - 1);
	render_claims(&b, "s", "events:read events:write");
	is_str(rendered(&b),
	    "{\"sub\":\"s\",\"scope\":\"events:read events:write\"}", "claims");
}

int
main(void)
{
	test_json_string();
	test_timestamp();
	test_event();
	test_claims();
	return done_testing();
}
