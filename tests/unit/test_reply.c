/*
 * test_reply.c: the one reply path of workers and the status socket
 * (http_answer_*, http_head, http_path_is), how both find the ping and
 * status paths (http_route) and the events API's JSON rendering
 * (render.c). All pure: no sockets.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "events/render.h"
#include "server/http.h"
#include "util/config.h"

#include "tap.h"

static struct config cfg;

/* The answer's body as a NUL-terminated string (test buffers only). */
static const char *
body_of(const struct http_answer *a)
{
	static char s[256];

	snprintf(s, sizeof(s), "%.*s", (int)a->len, a->body);
	return s;
}

static void
test_errors(void)
{
	struct http_answer a;

	http_answer_error(&a, 404, "not_found", NULL);
	is_int(a.status, 404, "error: status");
	is_str(a.content_type, "application/json", "error: JSON");
	is_str(body_of(&a), "{\"error\":\"not_found\"}", "error: body");
	is_int(a.len, strlen("{\"error\":\"not_found\"}"),
	    "error: length counted, not hand-written");
	ok(a.headers == NULL, "error: no extra headers");
	http_answer_error(&a, 503, "unavailable", "Retry-After: 1\r\n");
	is_str(a.headers, "Retry-After: 1\r\n", "error: headers kept");
	http_answer_not_allowed(&a, "GET, HEAD");
	is_int(a.status, 405, "405 status");
	is_str(a.headers, "Allow: GET, HEAD\r\n", "405 Allow header");
	is_str(body_of(&a), "{\"error\":\"method_not_allowed\"}", "405 body");
	/* A code longer than the limit is cut, never overflows. */
	http_answer_error(&a, 500, "x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_x_"
	    "x_x_x_x_x_x_x_x", NULL);
	ok(a.len < sizeof(a.own_body), "a long code is bounded (%zu bytes)",
	    a.len);
}

static void
test_ping(void)
{
	static const char *const other[] = { "POST", "PUT", "DELETE", "get",
	    "GETX", "HEA", "" };
	struct http_answer a;
	size_t i;

	config_defaults(&cfg);
	snprintf(cfg.ping_path, sizeof(cfg.ping_path), "/ping");
	snprintf(cfg.ping_response, sizeof(cfg.ping_response), "pong");
	ok(http_answer_ping(&a, &cfg, "GET", 3, "/ping", 5) == 1 &&
	    a.status == 200 && strcmp(body_of(&a), "pong") == 0 &&
	    strcmp(a.content_type, "text/plain;charset=UTF-8") == 0,
	    "GET /ping: pong, PHP-FPM's Content-Type");
	ok(a.headers != NULL && strcmp(a.headers, "Expires: Thu, 01 Jan 1970 "
	    "00:00:00 GMT\r\nCache-Control: no-cache, no-store, "
	    "must-revalidate, max-age=0\r\n") == 0, "GET /ping: PHP-FPM's "
	    "never-cache headers");
	ok(http_answer_ping(&a, &cfg, "HEAD", 4, "/ping", 5) == 1 &&
	    a.status == 200, "HEAD /ping: 200");
	for (i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		ok(http_answer_ping(&a, &cfg, other[i], strlen(other[i]),
		    "/ping", 5) == 1 && a.status == 405 &&
		    strcmp(a.headers, "Allow: GET, HEAD\r\n") == 0,
		    "method \"%s\" on /ping: 405", other[i]);
	ok(http_answer_ping(&a, &cfg, "GET", 3, "/pin", 4) == 0,
	    "/pin is not the ping path");
	ok(http_answer_ping(&a, &cfg, "GET", 3, "/pingx", 6) == 0,
	    "/pingx is not the ping path");
	ok(http_answer_ping(&a, &cfg, "GET", 3, "/ping/", 6) == 0,
	    "/ping/ is not the ping path");
	ok(http_answer_ping(&a, &cfg, "GET", 3, "/ping\0x", 7) == 0,
	    "a NUL inside the path does not match");
	cfg.ping_path[0] = '\0';
	ok(http_answer_ping(&a, &cfg, "GET", 3, "", 0) == 0,
	    "ping off: the empty path is not it");
}

#define T_PARAMS	512	/* a test request's name-value bytes */

/* Name-value bytes of the pairs (name, value, ..., NULL), each shorter
 * than 128 bytes; a NULL value leaves its name out. Returns the length. */
static size_t
params_of(unsigned char *out, const char *const *pairs)
{
	size_t n = 0, k, v;

	for (; pairs[0] != NULL; pairs += 2) {
		if (pairs[1] == NULL)
			continue;
		k = strlen(pairs[0]);
		v = strlen(pairs[1]);
		if (n + 2 + k + v > T_PARAMS || k > 127 || v > 127)
			break;
		out[n++] = (unsigned char)k;
		out[n++] = (unsigned char)v;
		memcpy(out + n, pairs[0], k);
		memcpy(out + n + k, pairs[1], v);
		n += k + v;
	}
	return n;
}

static void
test_route(void)
{
	/* SCRIPT_NAME, REQUEST_URI, QUERY_STRING -> path, query */
	static const struct {
		const char	*script, *uri, *query, *path, *want_query;
		const char	*why;
	} cases[] = {
		{ "/ping", NULL, NULL, "/ping", "", "SCRIPT_NAME alone "
		    "(cgi-fcgi, an exporter)" },
		{ "/status", NULL, "json&full", "/status", "json&full",
		    "SCRIPT_NAME and QUERY_STRING" },
		{ "/ping", "/elsewhere?x", NULL, "/ping", "x", "SCRIPT_NAME "
		    "decides, not REQUEST_URI" },
		{ "/status", "/status?xml", "json", "/status", "json",
		    "QUERY_STRING before the URI's query" },
		{ "/status", "/status?xml", "", "/status", "", "an empty "
		    "QUERY_STRING is the query" },
		{ NULL, "/ping", NULL, "/ping", "", "REQUEST_URI alone" },
		{ "", "/status?json", NULL, "/status", "json", "an empty "
		    "SCRIPT_NAME: REQUEST_URI's path and query" },
		{ NULL, NULL, NULL, "", "", "neither: empty" },
	};
	unsigned char params[T_PARAMS];
	struct http_route q;
	size_t i, n;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const pairs[] = {
			"REQUEST_METHOD", "GET", "SCRIPT_NAME", cases[i].script,
			"REQUEST_URI", cases[i].uri, "QUERY_STRING",
			cases[i].query, NULL,
		};

		n = params_of(params, pairs);
		http_route(params, n, &q);
		ok(http_path_is(q.path, q.path_len, cases[i].path) &&
		    http_path_is(q.query, q.query_len, cases[i].want_query) &&
		    http_path_is(q.method, q.method_len, "GET"),
		    "route: %s: path \"%.*s\", query \"%.*s\"", cases[i].why,
		    (int)q.path_len, q.path, (int)q.query_len, q.query);
	}
	http_route(params, 0, &q);
	ok(q.method_len == 0 && q.path_len == 0 && q.query_len == 0 &&
	    q.method != NULL && q.path != NULL && q.query != NULL,
	    "route: no parameters: every value empty, none NULL");
}

static void
test_head(void)
{
	char head[HTTP_MAX_HEAD];
	int n;

	n = http_head(head, sizeof(head), 201, "application/json", 7, NULL);
	is_str(head, "Status: 201 Created\r\nContent-Type: application/json\r\n"
	    "Content-Length: 7\r\n\r\n", "head: status line, type, length");
	is_int(n, (long long)strlen(head), "head: length returned");
	ok(http_head(head, 40, 200, "text/plain", 1, NULL) == -1,
	    "head: too small a buffer is -1");
	ok(http_path_is("/a", 2, "/a"), "path_is: equal");
	ok(!http_path_is("/a", 2, "/ab"), "path_is: a prefix is not equal");
	ok(http_path_is("/ab", 2, "/a"), "path_is: only len bytes count");
}

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

/*
 * The timestamp and the id are written without printf: held to what
 * printf makes of the same fields, for times around the epoch, the
 * bench's, past 9999 and before year 1 (jsonb's timestamptz spans 4713
 * BC to 294276 AD), and ids at int64_t's edges.
 */
static void
test_render_numbers(void)
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

static void
test_render(void)
{
	char mem[512];
	struct buf b;
	struct store_event ev;

	buf_init(&b, mem, sizeof(mem) - 1);
	render_json_string(&b, "a\"b\\c\n\x01\x1f/\xc3\xa9", 11);
	is_str(rendered(&b),
	    "\"a\\\"b\\\\c\\u000a\\u0001\\u001f/\xc3\xa9\"",
	    "string: quotes, backslash, controls escaped, UTF-8 kept");
	buf_init(&b, mem, sizeof(mem) - 1);
	render_json_string(&b, "", 0);
	is_str(rendered(&b), "\"\"", "string: empty");
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
	buf_init(&b, mem, sizeof(mem) - 1);
	render_claims(&b, "s", "events:read events:write");
	is_str(rendered(&b),
	    "{\"sub\":\"s\",\"scope\":\"events:read events:write\"}", "claims");
}

int
main(void)
{
	test_errors();
	test_ping();
	test_route();
	test_head();
	test_render();
	test_render_numbers();
	return done_testing();
}
