/*
 * test_status.c: the status page (status.c) in every format PHP-FPM has
 * (text, JSON, XML, HTML, OpenMetrics; summary and full) over a
 * scoreboard filled the way the master and the workers fill it: a busy
 * worker, idle ones, one still starting, a free slot between them,
 * hostile client bytes as a worker stores them. Asserts PHP-FPM 8.2's
 * keys in its order and with its types, cfpm's keys after them, the
 * figures, one record per worker, dates as PHP-FPM prints them, the
 * query flags as PHP-FPM reads them, and that client bytes can neither
 * forge a line nor break the JSON, the XML or the HTML.
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
#define T_NAMES		64		/* names collected from a page */
#define T_NAME_LEN	48
#define T_EAST		19800		/* +0530 */
#define T_WEST		(-18000)	/* -0500 */

/* What the workers' slots hold: the raw bytes a client sent. */
static const char *const methods[T_SLOTS] = {
	"GET\n", "P\xffST", "\x1b[2J", NULL, "<a&'\">", NULL,
};
static const char *const uris[T_SLOTS] = {
	"/a\nrequest URI:          /forged\r\n",
	"/\xff\xfe invalid \xc0\xaf overlong \xed\xa0\x80 surrogate "
	    "<b>&amp;\"'\xef\xbf\xbe\xef\xbf\xbf</b>",
	"/\x7f\x01\x1f \xe2\x82", /* ends inside a character, as torn */
	NULL,
	NULL,	/* a URI as long as the slot, all newlines: below */
	NULL,
};

/* PHP-FPM 8.2's keys, in its order. */
static const char *const fpm_pool_keys[] = {
	"pool", "process manager", "start time", "start since",
	"accepted conn", "listen queue", "max listen queue",
	"listen queue len", "idle processes", "active processes",
	"total processes", "max active processes", "max children reached",
	"slow requests",
};
static const char *const fpm_worker_keys[] = {
	"pid", "state", "start time", "start since", "requests",
	"request duration", "request method", "request uri",
	"content length", "user", "script", "last request cpu",
	"last request memory",
};
#define T_FPM_POOL	(sizeof(fpm_pool_keys) / sizeof(fpm_pool_keys[0]))
#define T_FPM_WORKER	(sizeof(fpm_worker_keys) / sizeof(fpm_worker_keys[0]))

/* cfpm's, after them. */
static const char *const cfpm_pool_keys[] = {
	"terminated requests", "cut replies", "generation", "reloads",
	"responses 1xx",
	"responses 2xx", "responses 3xx", "responses 4xx", "responses 5xx",
	"respawns exit", "respawns crash", "respawns recycle",
	"respawns reload", "respawns terminate",
};
static const char *const cfpm_worker_keys[] = {
	"phase", "generation", "last request status", "last request duration",
	"rss", "database",
};
#define T_CFPM_POOL	(sizeof(cfpm_pool_keys) / sizeof(cfpm_pool_keys[0]))
#define T_CFPM_WORKER	(sizeof(cfpm_worker_keys) / \
	sizeof(cfpm_worker_keys[0]))

/* PHP-FPM's metric names, in its order. */
static const char *const fpm_metrics[] = {
	"phpfpm_up", "phpfpm_start_since", "phpfpm_accepted_connections",
	"phpfpm_listen_queue", "phpfpm_max_listen_queue",
	"phpfpm_listen_queue_length", "phpfpm_idle_processes",
	"phpfpm_active_processes", "phpfpm_total_processes",
	"phpfpm_max_active_processes", "phpfpm_max_children_reached",
	"phpfpm_slow_requests",
};
#define T_FPM_METRICS	(sizeof(fpm_metrics) / sizeof(fpm_metrics[0]))

/* The pool figures fill() leads to, by their key in text and JSON. */
static const struct {
	const char	*key;
	long long	 value;
	const char	*why;	/* shown after the key */
} figures[] = {
	{ "start since", 100, "(from start_time)" },
	{ "accepted conn", 6, "(one per sb_worker_begin)" },
	{ "listen queue", 2, "" },
	{ "max listen queue", 9, "(the master's samples)" },
	{ "listen queue len", 128, "" },
	{ "idle processes", 3, "(one starting: neither)" },
	{ "active processes", 1, "" },
	{ "total processes", T_WORKERS, "(the free slot is none)" },
	{ "max active processes", 4, "(the workers' peak)" },
	{ "max children reached", 2, "(the workers' count)" },
	{ "slow requests", 7, "" },
	{ "terminated requests", 8, "" },
	{ "cut replies", 11, "(request_write_timeout)" },
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

/* The local time the view's dates are in: +0530 unless a test says. */
static long t_offset = T_EAST;

static long
fixed_offset(int64_t t)
{
	(void)t;
	return t_offset;
}

/* Idle workers: one served request each (200, 1500 us, 700 us CPU). */
static void
serve_one(struct scoreboard *sb, struct sb_slot *s, const char *method,
    const char *uri)
{
	sb_worker_phase(sb, s, SB_READING);
	sb_worker_begin(sb, s, method, strlen(method), uri, strlen(uri), 17,
	    T_NOW_US - 2000);
	sb_worker_end(s, 200, 1500, 700);
	sb_worker_phase(sb, s, SB_IDLE);
	sb_worker_db(s, 1);
}

static void
fill(struct scoreboard *sb)
{
	char longuri[SCOREBOARD_URI_LEN + 16];
	struct sb_slot *s;
	int i;

	scoreboard_set_max_children(sb, T_WORKERS);
	for (i = 0; i < T_SLOTS; i++) {
		if (i == T_HOLE)
			continue;
		s = &sb->slots[i];
		/* The master, before fork. */
		scoreboard_claim(s, 1, T_NOW_US - 3000000, T_NOW - 3);
		s->master.pid = T_PID + i;
	}
	/* The workers. */
	serve_one(sb, &sb->slots[0], methods[0], uris[0]);
	serve_one(sb, &sb->slots[0], methods[0], uris[0]);
	serve_one(sb, &sb->slots[0], methods[0], uris[0]);
	s = &sb->slots[T_BUSY];
	sb_worker_phase(sb, s, SB_READING);
	sb_worker_begin(sb, s, methods[1], strlen(methods[1]), uris[1],
	    strlen(uris[1]), -1, T_BUSY_START_US);
	sb_worker_phase(sb, s, SB_DB);		/* database down: not ok */
	serve_one(sb, &sb->slots[2], methods[2], uris[2]);
	memset(longuri, '\n', sizeof(longuri) - 1);
	longuri[sizeof(longuri) - 1] = '\0';
	serve_one(sb, &sb->slots[4], methods[4], longuri);
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
	sb->totals.replies_cut = 11;
	sb->totals.reloads = 2;
	sb->totals.max_active = 4;		/* earlier peaks */
	sb->totals.max_children_reached = 2;
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
		if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
			v = p + klen + 1;
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

/* The text key of a JSON key (PHP-FPM's one difference). */
static const char *
text_key(const char *key)
{
	return strcmp(key, "request uri") == 0 ? "request URI" : key;
}

static void
test_text_summary(struct status_view *v, char *page)
{
	long n = render(v, STATUS_TEXT, 0, page);
	char val[64], key[32], want[32];
	const char *line;
	size_t i;
	int order = 1;

	ok(n > 0, "text summary rendered");
	/* PHP-FPM's 14 lines first, in its order, then cfpm's. */
	for (i = 0, line = page; i < T_FPM_POOL + T_CFPM_POOL; i++) {
		const char *k = i < T_FPM_POOL ? fpm_pool_keys[i] :
		    cfpm_pool_keys[i - T_FPM_POOL];

		if (strncmp(line, k, strlen(k)) != 0 || line[strlen(k)] != ':')
			order = 0;
		line = strchr(line, '\n');
		line = line ? line + 1 : "";
	}
	ok(order && *line == '\0', "text: PHP-FPM's keys in its order, then "
	    "cfpm's, nothing else");
	ok(strncmp(page, "pool:                 www\n", 26) == 0 &&
	    strstr(page, "\nmax active processes: 4\n") != NULL &&
	    strstr(page, "\nterminated requests:  8\n") != NULL,
	    "text: values in PHP-FPM's column 22");
	is_str(line_value(page, "process manager", val, sizeof(val)),
	    "static", "text: process manager");
	is_str(line_value(page, "start time", val, sizeof(val)),
	    "21/Sep/2026:19:41:40 +0530", "text: start time as PHP-FPM's "
	    "local date");
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
	ok(strstr(page, "************************") == NULL, "text: no "
	    "worker block without full");
	t_offset = T_WEST;
	n = render(v, STATUS_TEXT, 0, page);
	t_offset = T_EAST;
	is_str(line_value(page, "start time", val, sizeof(val)),
	    "21/Sep/2026:09:11:40 -0500", "text: a date west of UTC");
	v->listen_queue = 12;
	n = render(v, STATUS_TEXT, 0, page);
	v->listen_queue = 2;
	is_str(line_value(page, "max listen queue", val, sizeof(val)), "12",
	    "text: max listen queue is never below the queue shown");
}

/* The value of key in the text block of worker pid, into val. */
static const char *
block_value(const char *page, int pid, const char *key, char *val,
    size_t cap)
{
	char head[64];
	const char *b;

	snprintf(head, sizeof(head), "\npid:                  %d\n", pid);
	b = strstr(page, head);
	return b != NULL ? line_value(b + 1, key, val, cap) : NULL;
}

static void
test_text_full(struct status_view *v, char *page)
{
	long n = render(v, STATUS_TEXT, 1, page);
	int lines = 0, keyed = 0, blocks = 0, uri_lines = 0, bad_keys = 0;
	char *line, *save = NULL, val[64];
	const char *want;
	size_t k = T_FPM_WORKER + T_CFPM_WORKER;

	ok(n > 0, "text page rendered");
	ok(clean_text(page, n), "text: valid UTF-8, no control byte but the "
	    "line ends");
	is_str(block_value(page, T_PID + T_BUSY, "state", val, sizeof(val)),
	    "Running", "text: busy worker's state (PHP-FPM's)");
	is_str(block_value(page, T_PID + T_BUSY, "phase", val, sizeof(val)),
	    "Database", "text: busy worker's phase (cfpm's)");
	is_str(block_value(page, T_PID + T_BUSY, "request duration", val,
	    sizeof(val)), "4000000", "text: busy worker's request duration "
	    "(us)");
	is_str(block_value(page, T_PID + T_BUSY, "requests", val,
	    sizeof(val)), "1", "text: busy worker's requests count the one in "
	    "progress");
	is_str(block_value(page, T_PID + T_BUSY, "database", val,
	    sizeof(val)), "down", "text: busy worker's database");
	is_str(block_value(page, T_PID + T_BUSY, "start since", val,
	    sizeof(val)), "3", "text: busy worker's start since");
	is_str(block_value(page, T_PID, "start time", val, sizeof(val)),
	    "21/Sep/2026:19:43:17 +0530", "text: a worker's start time");
	is_str(block_value(page, T_PID, "last request cpu", val, sizeof(val)),
	    "46.67", "text: last request cpu, percent, 2 decimals");
	is_str(block_value(page, T_PID, "content length", val, sizeof(val)),
	    "17", "text: content length");
	is_str(block_value(page, T_PID, "request URI", val, sizeof(val)),
	    "/a\\x0arequest URI:          /forged\\x0d\\x0a",
	    "text: \"request URI\" as PHP-FPM spells it, escaped");
	for (line = strtok_r(page, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		lines++;
		if (strcmp(line, "************************") == 0) {
			if (k != T_FPM_WORKER + T_CFPM_WORKER)
				bad_keys++;
			blocks++;
			k = 0;
			continue;
		}
		if (strchr(line, ':') != NULL)
			keyed++;
		if (strncmp(line, "request URI:", 12) == 0)
			uri_lines++;
		if (blocks == 0)
			continue;	/* the summary */
		want = k < T_FPM_WORKER ? text_key(fpm_worker_keys[k]) :
		    k < T_FPM_WORKER + T_CFPM_WORKER ?
		    cfpm_worker_keys[k - T_FPM_WORKER] : "";
		if (k >= T_FPM_WORKER + T_CFPM_WORKER ||
		    strncmp(line, want, strlen(want)) != 0 ||
		    line[strlen(want)] != ':')
			bad_keys++;
		k++;
	}
	if (k != T_FPM_WORKER + T_CFPM_WORKER)
		bad_keys++;
	is_int(blocks, T_WORKERS, "text: one block per worker");
	is_int(uri_lines, T_WORKERS, "text: one request URI line per worker "
	    "(none forged)");
	is_int(keyed + blocks, lines, "text: every line is a key or a block "
	    "separator");
	is_int(bad_keys, 0, "text: every block has PHP-FPM's keys in its "
	    "order, then cfpm's");
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

/* 1 if obj's keys are keys[0..n) then more[0..m), in that order, each
 * a scalar (cfpm's grouped figures as flat keys: "responses 2xx"), and
 * nothing else but "processes". */
static int
json_keys_are(json_t *obj, const char *const *keys, size_t n,
    const char *const *more, size_t m)
{
	const char *key;
	json_t *val;
	size_t i = 0;
	void *it;

	for (it = json_object_iter(obj); it != NULL;
	    it = json_object_iter_next(obj, it)) {
		key = json_object_iter_key(it);
		val = json_object_iter_value(it);
		if (strcmp(key, "processes") == 0 && json_is_array(val))
			continue;
		if (json_is_object(val) || json_is_array(val))
			return 0;
		if (i >= n + m || strcmp(key, i < n ? keys[i] :
		    more[i - n]) != 0)
			return 0;
		i++;
	}
	return i == n + m;
}

/* PHP-FPM's JSON types: its strings are strings, "last request cpu" a
 * real, the rest integers. */
static int
json_fpm_types(json_t *obj, const char *const *keys, size_t n)
{
	static const char *const strings[] = {
		"pool", "process manager", "state", "request method",
		"request uri", "user", "script",
	};
	json_t *v;
	size_t i, j;
	int want;

	for (i = 0; i < n; i++) {
		v = json_object_get(obj, keys[i]);
		want = JSON_INTEGER;
		for (j = 0; j < sizeof(strings) / sizeof(strings[0]); j++)
			if (strcmp(keys[i], strings[j]) == 0)
				want = JSON_STRING;
		if (strcmp(keys[i], "last request cpu") == 0)
			want = JSON_REAL;
		if (v == NULL || (int)json_typeof(v) != want)
			return 0;
	}
	return 1;
}

static void
test_json_summary(struct status_view *v, char *page)
{
	long n = render(v, STATUS_JSON, 0, page);
	json_t *root;
	json_error_t err;
	char key[T_NAME_LEN];
	size_t i;

	ok(n > 0, "JSON summary rendered");
	root = json_loadb(page, n > 0 ? (size_t)n : 0, JSON_REJECT_DUPLICATES,
	    &err);
	ok(root != NULL, "JSON summary parses, no key twice");
	ok(json_keys_are(root, fpm_pool_keys, T_FPM_POOL, cfpm_pool_keys,
	    T_CFPM_POOL), "JSON: PHP-FPM's keys in its order, then cfpm's");
	ok(json_fpm_types(root, fpm_pool_keys, T_FPM_POOL), "JSON: PHP-FPM's "
	    "types");
	is_str(json_string_value(json_object_get(root, "pool")), "www",
	    "JSON: pool");
	is_int(json_int(root, "start time"), T_NOW - 100, "JSON: start time "
	    "in Unix seconds");
	for (i = 0; i < T_FIGURES; i++)
		is_int(json_int(root, figures[i].key), figures[i].value,
		    "JSON: %s %s", figures[i].key, figures[i].why);
	for (i = 1; i < sizeof(classes) / sizeof(classes[0]); i++) {
		snprintf(key, sizeof(key), "responses %zuxx", i);
		is_int(json_int(root, key), classes[i], "JSON: %s, an integer "
		    "under a flat key", key);
	}
	for (i = 0; i < T_REASONS; i++) {
		snprintf(key, sizeof(key), "respawns %s", reasons[i]);
		is_int(json_int(root, key), (long long)i + 1, "JSON: %s, an "
		    "integer under a flat key", key);
	}
	ok(json_object_get(root, "responses") == NULL &&
	    json_object_get(root, "respawns") == NULL, "JSON: no nested "
	    "responses or respawns object");
	is_int(json_object_size(root), T_FPM_POOL + T_CFPM_POOL, "JSON: "
	    "%zu keys, PHP-FPM's and cfpm's, nothing else",
	    T_FPM_POOL + T_CFPM_POOL);
	ok(json_object_get(root, "processes") == NULL, "JSON: no processes "
	    "without full");
	ok(n > 0 && page[0] == '{' && memchr(page + 1, '{', (size_t)n - 1) ==
	    NULL, "JSON summary: one object, no other '{' in it (Zabbix's "
	    "template takes the last '{' of the page for the pool's)");
	json_decref(root);
}


/* Workers' expected JSON values: a string, or an integer (str NULL). */
static const struct {
	int		 pid;		/* T_PID + the slot */
	const char	*key;
	const char	*str;
	long long	 num;
	const char	*why;
} json_wants[] = {
	{ T_PID, "request method", "GET\\x0a", 0, "idle: the method escaped" },
	{ T_PID, "state", "Idle", 0, "idle: state" },
	{ T_PID, "requests", NULL, 3, "idle: requests" },
	{ T_PID, "request duration", NULL, 1500, "idle: the last request's "
	    "duration, as PHP-FPM" },
	{ T_PID, "content length", NULL, 17, "idle: content length" },
	{ T_PID, "start time", NULL, T_NOW - 3, "idle: worker start time" },
	{ T_PID, "start since", NULL, 3, "idle: worker start since" },
	{ T_PID, "user", "-", 0, "idle: user as PHP-FPM's none" },
	{ T_PID, "script", "-", 0, "idle: script as PHP-FPM's none" },
	{ T_PID, "last request memory", NULL, 100 * 1024, "idle: last "
	    "request memory: the peak RSS in bytes" },
	{ T_PID, "last request status", NULL, 200, "idle: last request "
	    "status" },
	{ T_PID, "last request duration", NULL, 1500, "idle: last request "
	    "duration" },
	{ T_PID, "rss", NULL, 10, "idle: rss" },
	{ T_PID, "generation", NULL, 1, "idle: worker generation" },
	{ T_PID, "database", "ok", 0, "idle: database" },
	{ T_PID + T_BUSY, "state", "Running", 0, "busy: state" },
	{ T_PID + T_BUSY, "phase", "Database", 0, "busy: phase" },
	{ T_PID + T_BUSY, "request duration", NULL, 4000000, "busy: request "
	    "duration" },
	{ T_PID + T_BUSY, "last request memory", NULL, 0, "busy: no last "
	    "request memory, as PHP-FPM" },
	{ T_PID + T_BUSY, "content length", NULL, 0, "busy: no "
	    "CONTENT_LENGTH: 0" },
	{ T_PID + T_BUSY, "database", "down", 0, "busy: database" },
};

static void
json_expect(json_t *procs)
{
	json_t *p;
	size_t i;

	for (i = 0; i < sizeof(json_wants) / sizeof(json_wants[0]); i++) {
		p = json_pid(procs, json_wants[i].pid);
		if (json_wants[i].str != NULL)
			is_str(json_string_value(json_object_get(p,
			    json_wants[i].key)), json_wants[i].str, "JSON: %s",
			    json_wants[i].why);
		else
			is_int(json_int(p, json_wants[i].key),
			    json_wants[i].num, "JSON: %s", json_wants[i].why);
	}
}

static void
test_json_full(struct status_view *v, char *page)
{
	long n = render(v, STATUS_JSON, 1, page);
	const char *frame;
	json_t *root, *procs, *p;
	json_error_t err;
	size_t i;
	int escaped = 0, keys = 1, types = 1;

	ok(n > 0, "JSON page rendered");
	frame = n > 3 ? strstr(page, ", \"processes\":[{\"pid\":") : NULL;
	ok(frame != NULL && frame[-1] >= '0' && frame[-1] <= '9' &&
	    strcmp(page + n - 3, "}]}") == 0, "JSON: PHP-FPM's frame, the "
	    "last flat figure, \", \\\"processes\\\":[\" to \"]}\"");
	root = json_loadb(page, n > 0 ? (size_t)n : 0, JSON_REJECT_DUPLICATES,
	    &err);
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
		keys &= json_keys_are(p, fpm_worker_keys, T_FPM_WORKER,
		    cfpm_worker_keys, T_CFPM_WORKER);
		types &= json_fpm_types(p, fpm_worker_keys, T_FPM_WORKER);
	}
	ok(keys, "JSON: every worker has PHP-FPM's keys in its order, then "
	    "cfpm's");
	ok(types, "JSON: every worker has PHP-FPM's types");
	is_int(escaped, 4, "JSON: each hostile URI shown escaped");
	ok(strstr(page, "\"last request cpu\":46.67,") != NULL &&
	    strstr(page, "\"last request cpu\":0.00,") != NULL,
	    "JSON: last request cpu as PHP-FPM's %%.2f");
	json_expect(procs);
	p = json_pid(procs, T_PID + 2);
	is_str(json_string_value(json_object_get(p, "request uri")),
	    "/\\x7f\\x01\\x1f \\xe2\\x82", "JSON: a cut character escaped");
	p = json_pid(procs, T_PID + T_STARTING);
	is_str(json_string_value(json_object_get(p, "state")), "Starting",
	    "JSON: the starting worker");
	ok(strcmp(json_string_value(json_object_get(p, "request uri")),
	    "-") == 0 && strcmp(json_string_value(json_object_get(p,
	    "request method")), "-") == 0 && json_int(p, "last request "
	    "memory") == 0, "JSON: the starting worker has no request: \"-\"");
	json_decref(root);
}

/*
 * A checker for the markup cfpm writes (XML, and the XHTML page):
 * elements nest, text holds no '<', every '&' starts one of the five
 * entities, no control byte but '\n', no U+FFFE or U+FFFF. Collects the
 * names of the elements at depth (root = 1) under the first parent
 * element at depth - 1 into names. Returns the number of problems.
 */
static int
markup_check(const char *p, int depth, char names[][T_NAME_LEN],
    int *nnames)
{
	static const char *const entities[] = {
		"&amp;", "&lt;", "&gt;", "&quot;", "&#039;",
	};
	char stack[16][T_NAME_LEN];
	int top = 0, bad = 0, parents = 0;
	size_t n, i;

	*nnames = 0;
	while (*p != '\0') {
		if (strncmp(p, "<?", 2) == 0 || strncmp(p, "<!", 2) == 0) {
			p = strchr(p, '>');
			if (p == NULL)
				return bad + 1;
			p++;
			continue;
		}
		if (*p == '<' && p[1] == '/') {
			n = strcspn(p + 2, ">");
			if (top == 0 || strlen(stack[top - 1]) != n ||
			    strncmp(stack[top - 1], p + 2, n) != 0)
				bad++;
			else
				top--;
			p += 2 + n + (p[2 + n] == '>');
			continue;
		}
		if (*p == '<') {
			n = strcspn(p + 1, " >");
			if (top == 16 || n == 0 || n >= T_NAME_LEN)
				return bad + 1;
			memcpy(stack[top], p + 1, n);
			stack[top][n] = '\0';
			if (top == depth - 2 && top >= 0)
				parents++;
			if (top == depth - 1 && parents == 1 &&
			    *nnames < T_NAMES)
				memcpy(names[(*nnames)++], stack[top],
				    T_NAME_LEN);
			top++;
			p = strchr(p, '>');
			if (p == NULL)
				return bad + 1;
			p++;
			continue;
		}
		if (*p == '&') {
			for (i = 0; i < 5; i++)
				if (strncmp(p, entities[i],
				    strlen(entities[i])) == 0)
					break;
			bad += i == 5;
		} else if (((unsigned char)*p < 0x20 && *p != '\n') ||
		    *p == 0x7f || *p == '>' ||
		    strncmp(p, "\xef\xbf\xbe", 3) == 0 ||
		    strncmp(p, "\xef\xbf\xbf", 3) == 0)
			bad++;
		p++;
	}
	return bad + (top != 0);
}

/* 1 if names are keys[0..n) then more[0..m) as XML names ("max-listen-
 * queue", "responses-2xx"). */
static int
xml_names_are(char names[][T_NAME_LEN], int nnames,
    const char *const *keys, size_t n, const char *const *more, size_t m)
{
	char want[T_NAME_LEN], *c;
	size_t i;

	if (nnames != (int)(n + m))
		return 0;
	for (i = 0; i < n + m; i++) {
		snprintf(want, sizeof(want), "%s", i < n ? keys[i] :
		    more[i - n]);
		for (c = want; *c != '\0'; c++)
			if (*c == ' ')
				*c = '-';
		if (strcmp(names[i], want) != 0)
			return 0;
	}
	return 1;
}

static void
test_xml(struct status_view *v, char *page)
{
	static const char head[] = "<?xml version=\"1.0\" ?>\n<status>\n"
	    "<pool>www</pool>\n<process-manager>static</process-manager>\n"
	    "<start-time>1789999900</start-time>\n";
	static char names[T_NAMES][T_NAME_LEN];
	int nnames, bad;
	long n = render(v, STATUS_XML, 0, page);

	ok(n > 0 && strncmp(page, head, strlen(head)) == 0 &&
	    strcmp(page + n - 9, "</status>") == 0, "XML summary: PHP-FPM's "
	    "frame, start time in Unix seconds");
	bad = markup_check(page, 2, names, &nnames);
	is_int(bad, 0, "XML summary: well formed");
	ok(xml_names_are(names, nnames, fpm_pool_keys, T_FPM_POOL,
	    cfpm_pool_keys, T_CFPM_POOL), "XML summary: PHP-FPM's elements "
	    "in its order, then cfpm's (%d)", nnames);
	n = render(v, STATUS_XML, 1, page);
	ok(n > 0 && strstr(page, "</slow-requests>\n") != NULL &&
	    strcmp(page + n - 22, "</processes>\n</status>") == 0,
	    "XML page: PHP-FPM's frame");
	bad = markup_check(page, 4, names, &nnames);
	is_int(bad, 0, "XML page: well formed with every hostile byte");
	ok(xml_names_are(names, nnames, fpm_worker_keys, T_FPM_WORKER,
	    cfpm_worker_keys, T_CFPM_WORKER), "XML page: a process has "
	    "PHP-FPM's elements in its order, then cfpm's");
	ok(strstr(page, "<request-method>&lt;a&amp;&#039;&quot;&gt;"
	    "</request-method>") != NULL, "XML: markup in a method as "
	    "entities");
	ok(strstr(page, "&lt;b&gt;&amp;amp;&quot;&#039;\\xef\\xbf\\xbe"
	    "\\xef\\xbf\\xbf&lt;/b&gt;</request-uri>") != NULL, "XML: markup "
	    "in a URI as entities, U+FFFE and U+FFFF as \\xNN");
	ok(strstr(page, "<last-request-cpu>46.67</last-request-cpu>") != NULL,
	    "XML: last request cpu with 2 decimals");
}

static void
test_html(struct status_view *v, char *page)
{
	static const char columns[] = "<tr><th>pid</th><th>state</th>"
	    "<th>start time</th><th>start since</th><th>requests</th>"
	    "<th>request duration</th><th>request method</th>"
	    "<th>request uri</th><th>content length</th><th>user</th>"
	    "<th>script</th><th>last request cpu</th>"
	    "<th>last request memory</th><th>phase</th>";
	static char names[T_NAMES][T_NAME_LEN];
	const char *t2;
	int nnames, rows = 0;
	long n = render(v, STATUS_HTML, 0, page);

	ok(n > 0 && strncmp(page, "<!DOCTYPE html PUBLIC", 21) == 0 &&
	    strstr(page, "<tr><th>pool</th><td>www</td></tr>\n") != NULL &&
	    strstr(page, "<tr><th>start time</th><td>21/Sep/2026:19:41:40 "
	    "+0530</td></tr>\n") != NULL &&
	    strcmp(page + n - 23, "</table>\n</body></html>") == 0,
	    "HTML summary: PHP-FPM's page, local date");
	is_int(markup_check(page, 1, names, &nnames), 0, "HTML summary: well "
	    "formed");
	n = render(v, STATUS_HTML, 1, page);
	ok(n > 0 && strcmp(page + n - 22, "</table></body></html>") == 0,
	    "HTML page: PHP-FPM's end");
	is_int(markup_check(page, 1, names, &nnames), 0, "HTML page: well "
	    "formed with every hostile byte");
	t2 = strstr(page, "<table border=\"1\">\n");
	ok(t2 != NULL && strncmp(t2 + 19, columns, strlen(columns)) == 0,
	    "HTML page: PHP-FPM's columns in its order, then cfpm's");
	for (; t2 != NULL && (t2 = strstr(t2, "<tr><td>")) != NULL; t2++)
		rows++;
	is_int(rows, T_WORKERS, "HTML page: one row per worker");
	ok(strstr(page, "<td>&lt;a&amp;&#039;&quot;&gt;</td>") != NULL,
	    "HTML: markup in a method as entities");
}

static void
test_openmetrics(struct status_view *v, char *page)
{
	long n = render(v, STATUS_OPENMETRICS, 1, page);
	char *line, *save = NULL, name[128], want[160];
	char help[128] = "", type[128] = "";
	int bad = 0, lines = 0, eof = 0, order = 1, unnamed = 0;
	const char *at = page;
	unsigned long long value;
	size_t i;

	ok(n > 0 && clean_text(page, n), "OpenMetrics page rendered, clean");
	for (i = 0; i < T_FPM_METRICS; i++) {
		snprintf(want, sizeof(want), "\n%s ", fpm_metrics[i]);
		if (i == 0)
			at = strncmp(page, "# HELP phpfpm_up ", 17) == 0 ?
			    strstr(page, "\nphpfpm_up 1\n") : NULL;
		else if (at != NULL)
			at = strstr(at, want);
		if (at == NULL)
			order = 0;
	}
	ok(order, "OpenMetrics: PHP-FPM's metrics in its order");
	ok(strstr(page, "\n# TYPE phpfpm_accepted_connections counter\n"
	    "phpfpm_accepted_connections 6\n") != NULL &&
	    strstr(page, "\n# TYPE phpfpm_idle_processes gauge\n"
	    "phpfpm_idle_processes 3\n") != NULL &&
	    strstr(page, "\nphpfpm_active_processes 1\n") != NULL &&
	    strstr(page, "\nphpfpm_total_processes 5\n") != NULL &&
	    strstr(page, "\nphpfpm_max_active_processes 4\n") != NULL &&
	    strstr(page, "\nphpfpm_max_children_reached 2\n") != NULL &&
	    strstr(page, "\nphpfpm_listen_queue 2\n") != NULL &&
	    strstr(page, "\nphpfpm_max_listen_queue 9\n") != NULL &&
	    strstr(page, "\nphpfpm_listen_queue_length 128\n") != NULL &&
	    strstr(page, "\nphpfpm_slow_requests 7\n") != NULL &&
	    strstr(page, "\nphpfpm_start_since 100\n") != NULL,
	    "OpenMetrics: PHP-FPM's names, types and figures");
	ok(strstr(page, "\n# TYPE cfpm_start_time_seconds gauge\n"
	    "# UNIT cfpm_start_time_seconds seconds\n"
	    "cfpm_start_time_seconds 1789999900\n") != NULL,
	    "OpenMetrics: the start time, with its unit");
	ok(strstr(page, "\n# HELP cfpm_responses_total ") != NULL &&
	    strstr(page, "\n# TYPE cfpm_responses_total counter\n"
	    "cfpm_responses_total{class=\"1xx\"} ") != NULL &&
	    strstr(page, "\n# TYPE cfpm_reloads_total counter\n"
	    "cfpm_reloads_total 2\n") != NULL,
	    "OpenMetrics: a counter's HELP and TYPE name its samples");
	ok(strstr(page, "\ncfpm_responses_total{class=\"4xx\"} 1\n") != NULL,
	    "OpenMetrics: responses by class");
	ok(strstr(page, "\ncfpm_respawns_total{reason=\"terminate\"} 5\n") !=
	    NULL, "OpenMetrics: respawns by reason");
	ok(strstr(page, "\ncfpm_terminated_requests_total 8\n") != NULL &&
	    strstr(page, "\n# TYPE cfpm_cut_replies_total counter\n") != NULL &&
	    strstr(page, "\ncfpm_cut_replies_total 11\n") != NULL &&
	    strstr(page, "\ncfpm_reloads_total 2\n") != NULL &&
	    strstr(page, "\ncfpm_generation 3\n") != NULL,
	    "OpenMetrics: cfpm's counters and generation");
	ok(strstr(page, "\ncfpm_worker_requests_total{pid=\"1000\"} 3\n") !=
	    NULL, "OpenMetrics: a worker's requests (full)");
	ok(strstr(page, "pid=\"1003\"") == NULL, "OpenMetrics: the free slot "
	    "is not listed");
	for (line = strtok_r(page, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		lines++;
		eof = strcmp(line, "# EOF") == 0;
		if (sscanf(line, "# HELP %127s", help) == 1 ||
		    sscanf(line, "# TYPE %127s", type) == 1 ||
		    strncmp(line, "# UNIT ", 7) == 0 || eof)
			continue;
		if (sscanf(line, "%127[a-z_]%*[^ ] %llu", name,
		    &value) != 2 && sscanf(line, "%127[a-z_] %llu", name,
		    &value) != 2)
			bad++;
		else if (strncmp(name, "phpfpm_", 7) != 0 &&
		    strncmp(name, "cfpm_", 5) != 0)
			bad++;
		else if (strcmp(name, help) != 0 || strcmp(name, type) != 0)
			unnamed++;
	}
	ok(lines > 40 && bad == 0, "OpenMetrics: %d lines, each a comment "
	    "or a phpfpm_ or cfpm_ sample (%d not)", lines, bad);
	is_int(unnamed, 0, "OpenMetrics: every sample under a HELP and a "
	    "TYPE of its own name (what promtool and Prometheus's metadata "
	    "look up)");
	ok(eof, "OpenMetrics: ends with # EOF");
	n = render(v, STATUS_OPENMETRICS, 0, page);
	ok(n > 0 && strstr(page, "cfpm_worker_requests") == NULL,
	    "OpenMetrics: no per-worker samples without full");
}

/* A page that does not fit fails whole rather than being cut. */
static void
test_page_too_large(struct status_view *v, char *page)
{
	static const enum status_format fmts[] = {
		STATUS_TEXT, STATUS_JSON, STATUS_OPENMETRICS, STATUS_XML,
		STATUS_HTML,
	};
	size_t i;

	for (i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++)
		is_int(status_render(v, fmts[i], 1, page, 200), -1,
		    "format %d: a 200-byte buffer is refused", (int)fmts[i]);
}

/* A worker stopped in the middle of writing its request record. */
static void
test_torn_request_record(struct scoreboard *sb, struct status_view *v, char *page)
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
test_query_flags(void)
{
	/* What PHP-FPM 8.2 answers for each, checked against php-fpm8.2. */
	static const struct {
		const char		*query;
		enum status_format	 fmt;
		int			 full;
	} cases[] = {
		{ "json&full", STATUS_JSON, 1 },
		{ "full&json", STATUS_JSON, 1 },
		{ "openmetrics", STATUS_OPENMETRICS, 0 },
		{ "xml&json&html", STATUS_HTML, 0 },
		{ "openmetrics&json", STATUS_JSON, 0 },
		{ "openmetrics&xml", STATUS_XML, 0 },
		{ "%6Ason=0&full[]=1", STATUS_JSON, 1 },
		{ "json=&full=0", STATUS_JSON, 1 },
		{ "JSON", STATUS_TEXT, 0 },
		{ "json;full", STATUS_TEXT, 0 },
		{ "fullx&jsonp", STATUS_TEXT, 0 },
		{ "json[&full", STATUS_TEXT, 1 },
		{ "json[a]=1", STATUS_JSON, 0 },
		{ "+json", STATUS_JSON, 0 },
		{ "%20%20xml", STATUS_XML, 0 },
		{ "js%00on", STATUS_TEXT, 0 },
		{ "json%", STATUS_TEXT, 0 },
		{ "=json&a=html", STATUS_TEXT, 0 },
		{ "&&html&&", STATUS_HTML, 0 },
		{ "", STATUS_TEXT, 0 },
	};
	enum status_format fmt;
	size_t i;
	int full;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		status_parse_query(cases[i].query, strlen(cases[i].query),
		    &fmt, &full);
		ok(fmt == cases[i].fmt && full == cases[i].full, "query \"%s\": "
		    "format %d, full %d", cases[i].query, (int)cases[i].fmt,
		    cases[i].full);
	}
	status_parse_query("jsonfull", 4, &fmt, &full);
	ok(fmt == STATUS_JSON && full == 0, "query: only len bytes count");
	is_str(status_content_type(STATUS_JSON), "application/json",
	    "content type: JSON");
	is_str(status_content_type(STATUS_TEXT), "text/plain;charset=UTF-8",
	    "content type: text, as PHP-FPM's");
	is_str(status_content_type(STATUS_XML), "text/xml;charset=UTF-8",
	    "content type: XML");
	is_str(status_content_type(STATUS_HTML), "text/html;charset=UTF-8",
	    "content type: HTML");
	is_str(status_content_type(STATUS_OPENMETRICS),
	    "application/openmetrics-text; version=1.0.0; charset=utf-8",
	    "content type: OpenMetrics");
}

static void
test_state_names(void)
{
	static const struct {
		int		 phase;
		const char	*state;
	} cases[] = {
		{ SB_STARTING, "Starting" }, { SB_IDLE, "Idle" },
		{ SB_READING, "Reading headers" }, { SB_AUTH, "Running" },
		{ SB_DB, "Running" }, { SB_WRITING, "Finishing" },
		{ SB_SENDING, "Finishing" }, { SB_EXITING, "Ending" },
		{ -1, "Unknown" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		is_str(status_state_name(cases[i].phase), cases[i].state,
		    "state of phase %d", cases[i].phase);
}

int
main(void)
{
	struct scoreboard *sb = scoreboard_create(T_SLOTS);
	const struct status_mem mem[T_SLOTS] = {
		{ 10, 100 }, { 20, 200 }, { 30, 300 }, { -1, -1 },
		{ 40, 400 }, { 50, 500 },
	};
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
	v.mem = mem;
	v.generation = 3;
	v.listen_queue = 2;
	v.listen_queue_len = 128;
	v.now = T_NOW;
	v.now_us = T_NOW_US;
	v.utc_offset = fixed_offset;
	test_text_summary(&v, page);
	test_text_full(&v, page);
	test_json_summary(&v, page);
	test_json_full(&v, page);
	test_xml(&v, page);
	test_html(&v, page);
	test_openmetrics(&v, page);
	test_page_too_large(&v, page);
	test_torn_request_record(sb, &v, page);
	test_query_flags();
	test_state_names();
	free(page);
	scoreboard_destroy(sb);
	return done_testing();
}
