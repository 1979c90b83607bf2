/*
 * test_status.c: the status page (status.c) over a scoreboard whose
 * slots hold hostile client bytes as a worker stores them: every format
 * keeps one line per key and one record per worker, and JSON stays JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "server/scoreboard.h"
#include "server/status.h"
#include "tap.h"

#define T_SLOTS		4
#define T_PAGE		(64 * 1024)

/* What the workers' slots hold: the raw bytes a client sent. */
static const char *const methods[T_SLOTS] = {
	"GET\n", "P\xffST", "\x1b[2J", "GET",
};
static const char *const uris[T_SLOTS] = {
	"/a\nrequest URI:          /forged\r\n",
	"/\xff\xfe invalid \xc0\xaf overlong \xed\xa0\x80 surrogate",
	"/\x7f\x01\x1f \xe2\x82", /* ends inside a character, as torn */
	"/caf\xc3\xa9 \\x0a",
};

static void
fill(struct scoreboard *sb)
{
	struct sb_slot *s;
	int i;

	char longuri[SCOREBOARD_URI_LEN];

	/* A URI as long as the slot, with no room for anything else. */
	memset(longuri, '\n', sizeof(longuri));
	for (i = 0; i < T_SLOTS; i++) {
		s = &sb->slots[i];
		scoreboard_claim(s, 0, 0);
		s->master.pid = 1000 + i;
		sb_worker_phase(s, i == 1 ? SB_DB : SB_IDLE);
		if (i == 3)
			sb_worker_begin(s, methods[i], strlen(methods[i]),
			    longuri, sizeof(longuri), 0);
		else
			sb_worker_begin(s, methods[i], strlen(methods[i]),
			    uris[i], strlen(uris[i]), i == 1 ? 1 : 0);
	}
}

static long
render(struct status_view *v, enum status_format fmt, char *page)
{
	long n = status_render(v, fmt, 1, page, T_PAGE - 1);

	if (n >= 0)
		page[n] = '\0';
	return n;
}

/* 1 if the n bytes hold no control byte but '\n' and no byte >= 0x80
 * that is not UTF-8 (checked through jansson's own validation). */
static int
clean_text(const char *s, long n)
{
	json_t *str;
	long i;

	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] < 0x20 && s[i] != '\n') ||
		    s[i] == 0x7f)
			return 0;
	str = json_stringn(s, (size_t)n);	/* NULL unless valid UTF-8 */
	json_decref(str);
	return str != NULL;
}

static void
test_text(struct status_view *v, char *page)
{
	long n = render(v, STATUS_TEXT, page);
	int lines = 0, keyed = 0, blocks = 0, uri_lines = 0;
	char *line, *save = NULL;

	ok(n > 0, "text page rendered");
	ok(clean_text(page, n), "text: valid UTF-8, no control byte but the "
	    "line ends");
	for (line = strtok_r(page, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		lines++;
		if (strcmp(line, "************************") == 0)
			blocks++;
		else if (strchr(line, ':') != NULL || strncmp(line,
		    "respawns ", 9) == 0)
			keyed++;
		if (strncmp(line, "request URI:", 12) == 0)
			uri_lines++;
	}
	is_int(blocks, T_SLOTS, "text: one block per worker");
	is_int(uri_lines, T_SLOTS, "text: one request URI line per worker "
	    "(none forged)");
	is_int(keyed + blocks, lines, "text: every line is a key or a block "
	    "separator");
}

static void
test_json(struct status_view *v, char *page)
{
	long n = render(v, STATUS_JSON, page);
	json_t *root, *procs, *p;
	json_error_t err;
	size_t i;
	int escaped = 0;

	ok(n > 0, "JSON page rendered");
	root = json_loadb(page, n > 0 ? (size_t)n : 0, 0, &err);
	ok(root != NULL, "JSON page parses");
	procs = json_object_get(root, "processes");
	is_int(json_array_size(procs), T_SLOTS, "JSON: every worker listed");
	is_int(json_integer_value(json_object_get(root, "total processes")),
	    json_array_size(procs), "JSON: processes == total processes");
	json_array_foreach(procs, i, p) {
		const char *uri = json_string_value(json_object_get(p,
		    "request uri"));

		if (uri != NULL && strstr(uri, "\\x") != NULL)
			escaped++;
	}
	is_int(escaped, T_SLOTS, "JSON: each hostile URI shown escaped");
	p = json_array_get(procs, 0);
	is_str(json_string_value(json_object_get(p, "request method")),
	    "GET\\x0a", "JSON: the method escaped");
	p = json_array_get(procs, 2);
	is_str(json_string_value(json_object_get(p, "request uri")),
	    "/\\x7f\\x01\\x1f \\xe2\\x82", "JSON: a cut character escaped");
	json_decref(root);
}

static void
test_openmetrics(struct status_view *v, char *page)
{
	long n = render(v, STATUS_OPENMETRICS, page);
	char *line, *save = NULL, name[128];
	int bad = 0, lines = 0;
	unsigned long long value;

	ok(n > 0 && clean_text(page, n), "OpenMetrics page rendered, clean");
	for (line = strtok_r(page, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		lines++;
		if (strncmp(line, "# TYPE cfpm_", 12) == 0 ||
		    strncmp(line, "# HELP cfpm_", 12) == 0 ||
		    strcmp(line, "# EOF") == 0)
			continue;
		if (sscanf(line, "cfpm_%127[a-z_]%*[^ ] %llu", name,
		    &value) != 2 && sscanf(line, "cfpm_%127[a-z_] %llu", name,
		    &value) != 2)
			bad++;
	}
	ok(lines > 20 && bad == 0, "OpenMetrics: %d lines, each a comment "
	    "or a sample (%d not)", lines, bad);
}

int
main(void)
{
	struct scoreboard *sb = scoreboard_create(T_SLOTS);
	long rss[T_SLOTS] = { 1, 2, 3, 4 };
	struct status_view v;
	char *page = malloc(T_PAGE);

	if (sb == NULL || page == NULL) {
		ok(0, "setup");
		return done_testing();
	}
	fill(sb);
	memset(&v, 0, sizeof(v));
	v.pool = "www";
	v.sb = sb;
	v.rss_kb = rss;
	v.now = 1790000000;
	v.now_us = 5000000;
	test_text(&v, page);
	test_json(&v, page);
	test_openmetrics(&v, page);
	free(page);
	scoreboard_destroy(sb);
	return done_testing();
}
