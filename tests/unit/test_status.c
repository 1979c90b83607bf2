/*
 * test_status.c: the status page (status.c) in every format it has (text,
 * JSON, OpenMetrics; summary and full) over a scoreboard filled the way
 * the master and the workers fill it: a busy worker, idle ones, one still
 * starting, a free slot between them, hostile client bytes as a worker
 * stores them. Asserts the figures, the keys, one record per worker, and
 * that client bytes can neither forge a line nor break the JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "server/scoreboard.h"
#include "server/status.h"
#include "tap.h"

#define T_SLOTS		6	/* slot 3 stays free */
#define T_WORKERS	5
#define T_HOLE		3
#define T_BUSY		1	/* in the Database phase */
#define T_STARTING	5
#define T_PAGE		(64 * 1024)
#define T_NOW		1790000000	/* Unix seconds */
#define T_NOW_US	5000000		/* monotonic */
#define T_BUSY_START_US	1000000		/* so 4 s elapsed */
#define T_PID		1000		/* + slot index */

/* What the workers' slots hold: the raw bytes a client sent. */
static const char *const methods[T_SLOTS] = {
	"GET\n", "P\xffST", "\x1b[2J", NULL, "GET", NULL,
};
static const char *const uris[T_SLOTS] = {
	"/a\nrequest URI:          /forged\r\n",
	"/\xff\xfe invalid \xc0\xaf overlong \xed\xa0\x80 surrogate",
	"/\x7f\x01\x1f \xe2\x82", /* ends inside a character, as torn */
	NULL,
	NULL,	/* a URI as long as the slot, all newlines: below */
	NULL,
};

/* The keys of a worker record, in order (as test_boundaries.py). */
static const char *const worker_keys[] = {
	"pid", "state", "generation", "start since", "requests",
	"request duration", "request method", "request URI",
	"last request status", "last request duration", "last request cpu",
	"rss", "database",
};
#define T_WORKER_KEYS	(sizeof(worker_keys) / sizeof(worker_keys[0]))

/* The pool figures fill() leads to, by their key in text and JSON. */
static const struct {
	const char	*key;
	long long	 value;
	const char	*why;	/* shown after the key */
} figures[] = {
	{ "start since", 100, "(from start_time)" },
	{ "accepted conn", 6, "(the workers' atomic adds)" },
	{ "listen queue", 2, "" },
	{ "max listen queue", 9, "" },
	{ "listen queue len", 128, "" },
	{ "idle processes", 3, "(one starting: neither)" },
	{ "active processes", 1, "" },
	{ "total processes", T_WORKERS, "(the free slot is none)" },
	{ "max active processes", 4, "" },
	{ "max children reached", 6, "" },
	{ "slow requests", 7, "" },
	{ "terminated requests", 8, "" },
	{ "generation", 3, "" },
	{ "reloads", 2, "" },
};
#define T_FIGURES	(sizeof(figures) / sizeof(figures[0]))

/* Responses by class: [c] for cxx. */
static const long long classes[] = { 0, 0, 3, 0, 1, 2 };

static const char *const reasons[] = {
	"exit", "crash", "recycle", "reload", "terminate",
};
#define T_REASONS	(sizeof(reasons) / sizeof(reasons[0]))

/* Idle workers: one served request each (200, 1500 us, 700 us CPU). */
static void
serve_one(struct sb_slot *s, const char *method, const char *uri)
{
	sb_worker_begin(s, method, strlen(method), uri, strlen(uri),
	    T_NOW_US - 2000);
	sb_worker_end(s, 200, 1500, 700);
	sb_worker_phase(s, SB_IDLE);
	sb_worker_db(s, 1);
}

static void
fill(struct scoreboard *sb)
{
	char longuri[SCOREBOARD_URI_LEN + 16];
	struct sb_slot *s;
	int i;

	for (i = 0; i < T_SLOTS; i++) {
		if (i == T_HOLE)
			continue;
		s = &sb->slots[i];
		/* The master, before fork. */
		scoreboard_claim(s, 1, T_NOW_US - 3000000);
		s->master.pid = T_PID + i;
	}
	/* The workers. */
	serve_one(&sb->slots[0], methods[0], uris[0]);
	serve_one(&sb->slots[0], methods[0], uris[0]);
	serve_one(&sb->slots[0], methods[0], uris[0]);
	s = &sb->slots[T_BUSY];
	sb_worker_phase(s, SB_READING);
	sb_worker_begin(s, methods[1], strlen(methods[1]), uris[1],
	    strlen(uris[1]), T_BUSY_START_US);
	sb_worker_phase(s, SB_DB);		/* database down: not ok */
	serve_one(&sb->slots[2], methods[2], uris[2]);
	memset(longuri, '\n', sizeof(longuri) - 1);
	longuri[sizeof(longuri) - 1] = '\0';
	serve_one(&sb->slots[4], methods[4], longuri);
	/* Slot T_STARTING: claimed, nothing written by its worker yet. */

	/* The totals: the workers' adds, the master's counters. */
	scoreboard_count(sb, 200);
	scoreboard_count(sb, 200);
	scoreboard_count(sb, 200);
	scoreboard_count(sb, 404);
	scoreboard_count(sb, 503);
	scoreboard_count(sb, 503);
	for (i = 0; i < SB_REASON_MAX; i++)
		sb->totals.respawns[i] = (uint64_t)i + 1;
	sb->totals.slow = 7;
	sb->totals.terminated = 8;
	sb->totals.reloads = 2;
	sb->totals.max_active = 4;
	sb->totals.listen_queue_max = 9;
	sb->totals.start_time = T_NOW - 100;
}

static long
render(struct status_view *v, enum status_format fmt, int full, char *page)
{
	long n = status_render(v, fmt, full, page, T_PAGE - 1);

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

/*
 * The value of the first line of page that is key, ':' or spaces, then
 * the value ("idle processes:       3"), copied into out; NULL if none.
 */
static const char *
line_value(const char *page, const char *key, char *out, size_t cap)
{
	size_t klen = strlen(key), n;
	const char *p = page, *v;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, key, klen) == 0 &&
		    (p[klen] == ':' || p[klen] == ' ')) {
			v = p + klen + (p[klen] == ':');
			v += strspn(v, " ");
			n = strcspn(v, "\n");
			if (n >= cap)
				n = cap - 1;
			memcpy(out, v, n);
			out[n] = '\0';
			return out;
		}
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return NULL;
}

static void
test_text_summary(struct status_view *v, char *page)
{
	long n = render(v, STATUS_TEXT, 0, page);
	char val[64], key[32], want[32];
	size_t i;

	ok(n > 0, "text summary rendered");
	is_str(line_value(page, "pool", val, sizeof(val)), "www", "text: pool");
	is_str(line_value(page, "process manager", val, sizeof(val)),
	    "static", "text: process manager");
	for (i = 0; i < T_FIGURES; i++) {
		snprintf(want, sizeof(want), "%lld", figures[i].value);
		is_str(line_value(page, figures[i].key, val, sizeof(val)), want,
		    "text: %s %s", figures[i].key, figures[i].why);
	}
	for (i = 1; i < sizeof(classes) / sizeof(classes[0]); i++) {
		snprintf(key, sizeof(key), "responses %zuxx", i);
		snprintf(want, sizeof(want), "%lld", classes[i]);
		is_str(line_value(page, key, val, sizeof(val)), want,
		    "text: %s", key);
	}
	for (i = 0; i < T_REASONS; i++) {
		snprintf(key, sizeof(key), "respawns %s", reasons[i]);
		snprintf(want, sizeof(want), "%zu", i + 1);
		is_str(line_value(page, key, val, sizeof(val)), want,
		    "text: respawns %s", reasons[i]);
	}
	ok(strstr(page, "respawns start") == NULL, "text: no respawns start "
	    "(never counted)");
	ok(strstr(page, "************************") == NULL, "text: no "
	    "worker block without full");
	v->listen_known = 0;
	n = render(v, STATUS_TEXT, 0, page);
	v->listen_known = 1;
	ok(n > 0 && strstr(page, "listen queue") == NULL, "text: no listen "
	    "queue lines when the queue is unknown");
}

static void
test_text_full(struct status_view *v, char *page)
{
	long n = render(v, STATUS_TEXT, 1, page);
	int lines = 0, keyed = 0, blocks = 0, uri_lines = 0, bad_keys = 0;
	char *line, *save = NULL, *busy, val[64];
	size_t k = T_WORKER_KEYS;

	ok(n > 0, "text page rendered");
	ok(clean_text(page, n), "text: valid UTF-8, no control byte but the "
	    "line ends");
	/* The busy worker's block, read before strtok_r cuts the page. */
	busy = strstr(page, "pid:                  1001\n");
	ok(busy != NULL, "text: the busy worker's block");
	if (busy != NULL) {
		is_str(line_value(busy, "state", val, sizeof(val)), "Database",
		    "text: busy worker's state");
		is_str(line_value(busy, "request duration", val, sizeof(val)),
		    "4000000", "text: busy worker's request duration (us)");
		is_str(line_value(busy, "requests", val, sizeof(val)), "0",
		    "text: busy worker's requests");
		is_str(line_value(busy, "database", val, sizeof(val)), "down",
		    "text: busy worker's database");
		is_str(line_value(busy, "start since", val, sizeof(val)), "3",
		    "text: busy worker's start since");
	}
	for (line = strtok_r(page, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		lines++;
		if (strcmp(line, "************************") == 0) {
			if (k != T_WORKER_KEYS)
				bad_keys++;
			blocks++;
			k = 0;
			continue;
		}
		if (strchr(line, ':') != NULL || strncmp(line,
		    "respawns ", 9) == 0)
			keyed++;
		if (strncmp(line, "request URI:", 12) == 0)
			uri_lines++;
		if (blocks == 0)
			continue;	/* the summary */
		if (k >= T_WORKER_KEYS ||
		    strncmp(line, worker_keys[k], strlen(worker_keys[k])) != 0 ||
		    line[strlen(worker_keys[k])] != ':')
			bad_keys++;
		k++;
	}
	if (k != T_WORKER_KEYS)
		bad_keys++;
	is_int(blocks, T_WORKERS, "text: one block per worker");
	is_int(uri_lines, T_WORKERS, "text: one request URI line per worker "
	    "(none forged)");
	is_int(keyed + blocks, lines, "text: every line is a key or a block "
	    "separator");
	is_int(bad_keys, 0, "text: every block has the worker keys in order");
}

static json_t *
json_pid(json_t *procs, int pid)
{
	json_t *p;
	size_t i;

	json_array_foreach(procs, i, p)
		if (json_integer_value(json_object_get(p, "pid")) == pid)
			return p;
	return NULL;
}

static long long
json_int(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

static void
test_json_summary(struct status_view *v, char *page)
{
	long n = render(v, STATUS_JSON, 0, page);
	json_t *root, *resp;
	json_error_t err;
	char key[8];
	size_t i;

	ok(n > 0, "JSON summary rendered");
	root = json_loadb(page, n > 0 ? (size_t)n : 0, 0, &err);
	ok(root != NULL, "JSON summary parses");
	is_str(json_string_value(json_object_get(root, "pool")), "www",
	    "JSON: pool");
	for (i = 0; i < T_FIGURES; i++)
		is_int(json_int(root, figures[i].key), figures[i].value,
		    "JSON: %s %s", figures[i].key, figures[i].why);
	resp = json_object_get(root, "responses");
	for (i = 1; i < sizeof(classes) / sizeof(classes[0]); i++) {
		snprintf(key, sizeof(key), "%zuxx", i);
		is_int(json_int(resp, key), classes[i], "JSON: responses %s",
		    key);
	}
	resp = json_object_get(root, "respawns");
	is_int(json_object_size(resp), T_REASONS, "JSON: %zu respawn reasons "
	    "(no \"start\")", T_REASONS);
	for (i = 0; i < T_REASONS; i++)
		is_int(json_int(resp, reasons[i]), (long long)i + 1,
		    "JSON: respawns %s", reasons[i]);
	ok(json_object_get(root, "processes") == NULL, "JSON: no processes "
	    "without full");
	json_decref(root);
}

static void
test_json_full(struct status_view *v, char *page)
{
	long n = render(v, STATUS_JSON, 1, page);
	json_t *root, *procs, *p;
	json_error_t err;
	size_t i;
	int escaped = 0;

	ok(n > 0, "JSON page rendered");
	root = json_loadb(page, n > 0 ? (size_t)n : 0, 0, &err);
	ok(root != NULL, "JSON page parses");
	procs = json_object_get(root, "processes");
	is_int(json_array_size(procs), T_WORKERS, "JSON: every worker listed");
	is_int(json_integer_value(json_object_get(root, "total processes")),
	    json_array_size(procs), "JSON: processes == total processes");
	ok(json_pid(procs, T_PID + T_HOLE) == NULL, "JSON: the free slot is "
	    "not listed");
	json_array_foreach(procs, i, p) {
		const char *uri = json_string_value(json_object_get(p,
		    "request uri"));

		if (uri != NULL && strstr(uri, "\\x") != NULL)
			escaped++;
	}
	is_int(escaped, 4, "JSON: each hostile URI shown escaped");
	p = json_pid(procs, T_PID);
	is_str(json_string_value(json_object_get(p, "request method")),
	    "GET\\x0a", "JSON: the method escaped");
	is_str(json_string_value(json_object_get(p, "state")), "Idle",
	    "JSON: idle worker's state");
	is_int(json_int(p, "requests"), 3, "JSON: idle worker's requests");
	is_int(json_int(p, "request duration"), 0, "JSON: no request in "
	    "progress, no duration");
	is_int(json_int(p, "last request status"), 200, "JSON: last request "
	    "status");
	is_int(json_int(p, "last request duration"), 1500, "JSON: last "
	    "request duration");
	is_int(json_int(p, "last request cpu"), 700, "JSON: last request cpu");
	is_int(json_int(p, "rss"), 10, "JSON: rss");
	is_int(json_int(p, "generation"), 1, "JSON: worker generation");
	is_int(json_int(p, "start since"), 3, "JSON: worker start since");
	is_str(json_string_value(json_object_get(p, "database")), "ok",
	    "JSON: idle worker's database");
	p = json_pid(procs, T_PID + T_BUSY);
	is_str(json_string_value(json_object_get(p, "state")), "Database",
	    "JSON: busy worker's state");
	is_int(json_int(p, "request duration"), 4000000, "JSON: busy "
	    "worker's request duration");
	is_str(json_string_value(json_object_get(p, "database")), "down",
	    "JSON: busy worker's database");
	p = json_pid(procs, T_PID + 2);
	is_str(json_string_value(json_object_get(p, "request uri")),
	    "/\\x7f\\x01\\x1f \\xe2\\x82", "JSON: a cut character escaped");
	p = json_pid(procs, T_PID + T_STARTING);
	is_str(json_string_value(json_object_get(p, "state")), "Starting",
	    "JSON: the starting worker");
	is_str(json_string_value(json_object_get(p, "request uri")), "",
	    "JSON: the starting worker has no request");
	json_decref(root);
}

static void
test_openmetrics(struct status_view *v, char *page)
{
	long n = render(v, STATUS_OPENMETRICS, 1, page);
	char *line, *save = NULL, name[128];
	int bad = 0, lines = 0, eof = 0;
	unsigned long long value;

	ok(n > 0 && clean_text(page, n), "OpenMetrics page rendered, clean");
	ok(strstr(page, "\ncfpm_total_processes 5\n") != NULL,
	    "OpenMetrics: total processes");
	ok(strstr(page, "\ncfpm_idle_processes 3\n") != NULL,
	    "OpenMetrics: idle processes");
	ok(strstr(page, "\ncfpm_active_processes 1\n") != NULL,
	    "OpenMetrics: active processes");
	ok(strstr(page, "\ncfpm_accepted_connections_total 6\n") != NULL,
	    "OpenMetrics: accepted connections");
	ok(strstr(page, "\ncfpm_listen_queue 2\n") != NULL,
	    "OpenMetrics: listen queue");
	ok(strstr(page, "\ncfpm_responses_total{class=\"4xx\"} 1\n") != NULL,
	    "OpenMetrics: responses by class");
	ok(strstr(page, "\ncfpm_respawns_total{reason=\"terminate\"} 5\n") !=
	    NULL, "OpenMetrics: respawns by reason");
	ok(strstr(page, "reason=\"start\"") == NULL, "OpenMetrics: no "
	    "\"start\" reason");
	ok(strstr(page, "\ncfpm_worker_requests_total{pid=\"1000\"} 3\n") !=
	    NULL, "OpenMetrics: a worker's requests (full)");
	ok(strstr(page, "pid=\"1003\"") == NULL, "OpenMetrics: the free slot "
	    "is not listed");
	for (line = strtok_r(page, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		lines++;
		eof = strcmp(line, "# EOF") == 0;
		if (strncmp(line, "# TYPE cfpm_", 12) == 0 ||
		    strncmp(line, "# HELP cfpm_", 12) == 0 || eof)
			continue;
		if (sscanf(line, "cfpm_%127[a-z_]%*[^ ] %llu", name,
		    &value) != 2 && sscanf(line, "cfpm_%127[a-z_] %llu", name,
		    &value) != 2)
			bad++;
	}
	ok(lines > 20 && bad == 0, "OpenMetrics: %d lines, each a comment "
	    "or a sample (%d not)", lines, bad);
	ok(eof, "OpenMetrics: ends with # EOF");
	n = render(v, STATUS_OPENMETRICS, 0, page);
	ok(n > 0 && strstr(page, "cfpm_worker_requests") == NULL,
	    "OpenMetrics: no per-worker samples without full");
}

/* A page that does not fit fails whole rather than being cut. */
static void
test_overflow(struct status_view *v, char *page)
{
	static const enum status_format fmts[] = {
		STATUS_TEXT, STATUS_JSON, STATUS_OPENMETRICS,
	};
	size_t i;

	for (i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++)
		is_int(status_render(v, fmts[i], 1, page, 200), -1,
		    "format %d: a 200-byte buffer is refused", (int)fmts[i]);
}

/* A worker stopped in the middle of writing its request record. */
static void
test_torn(struct scoreboard *sb, struct status_view *v, char *page)
{
	unsigned *seq = &sb->slots[T_BUSY].worker.req_seq;
	json_t *root;
	long n;

	(*seq)++;
	n = render(v, STATUS_JSON, 1, page);
	root = n > 0 ? json_loadb(page, (size_t)n, 0, NULL) : NULL;
	is_int(json_array_size(json_object_get(root, "processes")),
	    T_WORKERS, "JSON: a record left mid-update still lists its "
	    "worker, escaped");
	json_decref(root);
	(*seq)--;
}

static void
test_query(void)
{
	enum status_format fmt;
	int full;

	status_parse_query("json&full", &fmt, &full);
	ok(fmt == STATUS_JSON && full == 1, "query: json&full");
	status_parse_query("openmetrics", &fmt, &full);
	ok(fmt == STATUS_OPENMETRICS && full == 0, "query: openmetrics");
	status_parse_query("fullx&jsonp", &fmt, &full);
	ok(fmt == STATUS_TEXT && full == 0, "query: words must match whole");
	is_str(status_content_type(STATUS_JSON), "application/json",
	    "content type: JSON");
	is_str(status_content_type(STATUS_TEXT), "text/plain",
	    "content type: text");
}

int
main(void)
{
	struct scoreboard *sb = scoreboard_create(T_SLOTS);
	long rss[T_SLOTS] = { 10, 20, 30, -1, 40, 50 };
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
	v.generation = 3;
	v.listen_known = 1;
	v.listen_queue = 2;
	v.listen_queue_len = 128;
	v.max_children_reached = 6;
	v.now = T_NOW;
	v.now_us = T_NOW_US;
	test_text_summary(&v, page);
	test_text_full(&v, page);
	test_json_summary(&v, page);
	test_json_full(&v, page);
	test_openmetrics(&v, page);
	test_overflow(&v, page);
	test_torn(sb, &v, page);
	test_query();
	free(page);
	scoreboard_destroy(sb);
	return done_testing();
}
