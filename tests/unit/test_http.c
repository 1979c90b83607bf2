/*
 * test_http.c: the one reply path of workers and the status socket
 * (http_answer_*, http_head, http_span_is) and how both find the ping
 * and status paths (http_route), in server/http.c. All pure: no
 * sockets. The events API's JSON bodies are test_render.c's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
test_error_answers(void)
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
	struct fcgi_params *ps = malloc(sizeof(*ps));
	struct http_route q;
	size_t i, n;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const pairs[] = {
			"REQUEST_METHOD", "GET", "SCRIPT_NAME", cases[i].script,
			"REQUEST_URI", cases[i].uri, "QUERY_STRING",
			cases[i].query, NULL,
		};

		n = params_of(params, pairs);
		if (ps == NULL || fcgi_params_decode(ps, params, n) == -1)
			abort();
		http_route(ps, &q);
		ok(http_span_is(q.path, q.path_len, cases[i].path) &&
		    http_span_is(q.query, q.query_len, cases[i].want_query) &&
		    http_span_is(q.method, q.method_len, "GET"),
		    "route: %s: path \"%.*s\", query \"%.*s\"", cases[i].why,
		    (int)q.path_len, q.path, (int)q.query_len, q.query);
	}
	(void)fcgi_params_decode(ps, params, 0);
	http_route(ps, &q);
	ok(q.method_len == 0 && q.path_len == 0 && q.query_len == 0 &&
	    q.method != NULL && q.path != NULL && q.query != NULL,
	    "route: no parameters: every value empty, none NULL");
	free(ps);
}

static void
test_head_and_path_is(void)
{
	char head[HTTP_MAX_HEAD];
	int n;

	n = http_head(head, sizeof(head), 201, "application/json", 7, NULL);
	is_str(head, "Status: 201 Created\r\nContent-Type: application/json\r\n"
	    "Content-Length: 7\r\n\r\n", "head: status line, type, length");
	is_int(n, (long long)strlen(head), "head: length returned");
	ok(http_head(head, 40, 200, "text/plain", 1, NULL) == -1,
	    "head: too small a buffer is -1");
	n = http_head(head, sizeof(head), 405, "application/json", 1048576,
	    "Allow: GET\r\n");
	is_str(head, "Status: 405 Method Not Allowed\r\nContent-Type: "
	    "application/json\r\nContent-Length: 1048576\r\nAllow: GET\r\n"
	    "\r\n", "head: a 7-digit length, the extra header lines last");
	ok(http_head(head, (size_t)n + 1, 405, "application/json", 1048576,
	    "Allow: GET\r\n") == n && http_head(head, (size_t)n, 405,
	    "application/json", 1048576, "Allow: GET\r\n") == -1,
	    "head: it fits in its length and its NUL, not one byte less");
	n = http_head(head, sizeof(head), 999, "text/plain", 0, NULL);
	is_str(head, "Status: 999 Unknown\r\nContent-Type: text/plain\r\n"
	    "Content-Length: 0\r\n\r\n", "head: an unknown status, length 0");
	ok(http_span_is("/a", 2, "/a"), "span_is: equal");
	ok(!http_span_is("/a", 2, "/ab"), "span_is: a prefix is not equal");
	ok(http_span_is("/ab", 2, "/a"), "span_is: only len bytes count");
}

int
main(void)
{
	test_error_answers();
	test_ping();
	test_route();
	test_head_and_path_is();
	return done_testing();
}
