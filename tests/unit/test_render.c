/*
 * test_render.c: the events API's JSON replies (events/render.c): string
 * escaping (util/buf.c's buf_json_string, which render.c writes with),
 * RFC 3339 timestamps with microseconds and ids as printf would write
 * them (util/buf.c's buf_int), a stored event with its payload
 * verbatim, the claims of GET /auth, and a buffer too small for them.
 * All pure: no sockets.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/*
 * The timestamp and the id are written without printf: held to what
 * printf makes of the same fields, for times around the epoch, the
 * bench's, past 9999 and before year 1 (jsonb's timestamptz spans 4713
 * BC to 294276 AD), and ids at int64_t's edges.
 */
static void
test_numbers_as_printf(void)
{
	static const int64_t times[] = { 0, -1, 1, 999999, 1000000,
	    INT64_C(1788220801000000), INT64_C(253402300799999999),
	    INT64_C(253402300800000000), INT64_MAX,
	    INT64_C(-62135596800000000), INT64_C(-62135596800000001),
	    INT64_C(-210866803200000000), INT64_C(-62167219200000000),
	    INT64_C(-62198755200000000) };
	static const int64_t ids[] = { 1, 9, 10, 42, 1000000,
	    INT64_MAX, -1, INT64_MIN };
	char mem[128], want[128];
	struct buf b;
	struct tm tm;
	time_t t;
	int64_t us, secs, frac;
	size_t i;
	int bad = 0;

	for (i = 0; i < sizeof(times) / sizeof(times[0]) + 1000; i++) {
		us = i < sizeof(times) / sizeof(times[0]) ? times[i] :
		    (int64_t)((uint64_t)random() << 31 ^ (uint64_t)random()) -
		    (INT64_C(1) << 61);
		secs = us / 1000000;
		frac = us % 1000000;
		if (frac < 0) {
			frac += 1000000;
			secs--;
		}
		t = (time_t)secs;
		if (gmtime_r(&t, &tm) == NULL)
			continue;
		snprintf(want, sizeof(want),
		    "\"%04d-%02d-%02dT%02d:%02d:%02d.%06dZ\"",
		    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		    tm.tm_min, tm.tm_sec, (int)frac);
		buf_init(&b, mem, sizeof(mem) - 1);
		render_timestamp(&b, us);
		if (strcmp(rendered(&b), want) != 0 && bad++ == 0)
			printf("# %lld: got %s, want %s\n", (long long)us,
			    rendered(&b), want);
	}
	is_int(bad, 0, "timestamp: printf's text, %zu times",
	    sizeof(times) / sizeof(times[0]) + 1000);
	buf_init(&b, mem, sizeof(mem) - 1);
	render_timestamp(&b, INT64_C(-62198755200000000));
	is_str(rendered(&b), "\"-001-01-01T00:00:00.000000Z\"",
	    "timestamp: year -1 (2 BC), as printf's %%04d pads it");
	for (i = 0, bad = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct store_event ev;

		memset(&ev, 0, sizeof(ev));
		ev.id = ids[i];
		ev.subject = ev.kind = ev.payload = "";
		buf_init(&b, mem, sizeof(mem) - 1);
		render_event(&b, &ev);
		snprintf(want, sizeof(want), "{\"id\":%lld,", (long long)ids[i]);
		if (strncmp(rendered(&b), want, strlen(want)) != 0)
			bad++;
	}
	is_int(bad, 0, "event: the id as printf's %%lld writes it");
}

int
main(void)
{
	test_json_string();
	test_timestamp();
	test_event();
	test_claims();
	test_numbers_as_printf();
	return done_testing();
}
