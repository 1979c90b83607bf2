/*
 * status.c: what the status page says (PURE; the master serves it, so it
 * answers while every worker is busy, and a worker on the pool socket).
 *
 * The pool summary and each live worker are gathered from the view as a
 * record (statusfmt.h): PHP-FPM's keys in PHP-FPM's order, then cfpm's,
 * each with its type and value; statusfmt.c writes the records in the
 * format the query asked for. Also what the query asks for, and PHP-FPM's
 * names for a worker's state.
 */
#include "server/status.h"

#include <string.h>

#include "util/buf.h"
#include "util/esc.h"

#define STATUS_MAX_POOL		256	/* pool name bytes shown */

/* Pool-wide figures derived from the slots, and the totals as read. */
struct status_pool {
	struct sb_census workers;
	struct sb_totals totals;
	char		name[ESC_SIZE(STATUS_MAX_POOL)];
};

/* What one worker record is built from. */
struct status_worker {
	struct sb_view		s;
	struct status_request	q;
	struct status_mem	mem;
};

/*
 * The worker stores the client's raw bytes; they are escaped here, on
 * the reader's copy: even a consistent copy is what a client sent, and a
 * torn one (scoreboard.h) mixes two strings, which need not be valid
 * UTF-8 even if each string was.
 */
void
status_request(const struct sb_view *v, struct status_request *q)
{
	esc_field(q->method, sizeof(q->method), v->req.method,
	    sizeof(v->req.method));
	esc_field(q->uri, sizeof(q->uri), v->req.uri, sizeof(v->req.uri));
}

/* One byte of a query key, %XX and '+' decoded as PHP decodes them. */
static int
status_query_byte(const char *k, size_t n, size_t *i)
{
	static const char hex[] = "0123456789abcdef";
	const char *hi, *lo;
	int c = (unsigned char)k[*i];

	(*i)++;
	if (c == '+')
		return ' ';
	if (c != '%' || *i + 2 > n)
		return c;
	hi = memchr(hex, k[*i] | 0x20, 16);
	lo = memchr(hex, k[*i + 1] | 0x20, 16);
	if (k[*i] == '\0' || k[*i + 1] == '\0' || hi == NULL || lo == NULL)
		return c;
	*i += 2;
	return (int)((hi - hex) << 4 | (lo - hex));
}

/*
 * 1 if the query key k (n bytes, still encoded) names $_GET[word] in
 * PHP: leading spaces dropped, decoding stops at a NUL, and "word[...]"
 * is word when a ']' follows the '['.
 */
static int
status_query_key_is(const char *k, size_t n, const char *word)
{
	size_t i = 0, w = 0, wlen = strlen(word);
	int c, lead = 1;

	while (i < n) {
		c = status_query_byte(k, n, &i);
		if (c == '\0')
			break;
		if (lead && c == ' ')
			continue;
		lead = 0;
		if (c == '[') {
			while (i < n && (c = status_query_byte(k, n, &i)) != ']' &&
			    c != '\0')
				;
			return w == wlen && c == ']';
		}
		if (w == wlen || c != word[w])
			return 0;
		w++;
	}
	return w == wlen && wlen > 0;
}

/* 1 if word is a key of the query (len bytes, '&' between pairs). */
static int
status_query_has(const char *q, size_t len, const char *word)
{
	const char *end = q + len, *amp, *eq;
	size_t n;

	while (q < end) {
		amp = memchr(q, '&', (size_t)(end - q));
		n = amp ? (size_t)(amp - q) : (size_t)(end - q);
		eq = memchr(q, '=', n);
		if (status_query_key_is(q, eq ? (size_t)(eq - q) : n, word))
			return 1;
		q += n + (amp != NULL);
	}
	return 0;
}

void
status_parse_query(const char *query, size_t len, enum status_format *fmt,
    int *full)
{
	/* PHP-FPM's order: the first flag found in this list wins. */
	static const struct {
		const char		*flag;
		enum status_format	 fmt;
	} order[] = {
		{ "html", STATUS_HTML }, { "xml", STATUS_XML },
		{ "json", STATUS_JSON }, { "openmetrics", STATUS_OPENMETRICS },
	};
	size_t i;

	*fmt = STATUS_TEXT;
	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (status_query_has(query, len, order[i].flag)) {
			*fmt = order[i].fmt;
			break;
		}
	*full = status_query_has(query, len, "full");
}

const char *
status_content_type(enum status_format fmt)
{
	switch (fmt) {
	case STATUS_JSON:
		return "application/json";
	case STATUS_OPENMETRICS:
		return "application/openmetrics-text; version=1.0.0; "
		    "charset=utf-8";
	case STATUS_XML:
		return "text/xml;charset=UTF-8";
	case STATUS_HTML:
		return "text/html;charset=UTF-8";
	default:
		return "text/plain;charset=UTF-8";
	}
}

const char *
status_state_name(int phase)
{
	switch (phase) {
	case SB_STARTING:
		return "Starting";
	case SB_IDLE:
		return "Idle";
	case SB_READING:
		return "Reading headers";
	case SB_AUTH:
	case SB_DB:
		return "Running";
	case SB_WRITING:
	case SB_SENDING:
		return "Finishing";
	case SB_EXITING:
		return "Ending";
	default:
		return "Unknown";
	}
}

/* -- records ------------------------------------------------------------ */

static struct statusfmt_item *
status_rec_add(struct statusfmt_rec *r, const char *key,
    enum statusfmt_type type)
{
	struct statusfmt_item *it;

	if (r->n == STATUSFMT_MAX_ITEMS)
		return NULL;	/* a programming error: the tests show it */
	it = &r->item[r->n++];
	memset(it, 0, sizeof(*it));
	it->prefix = r->prefix;
	it->key = key;
	it->type = type;
	return it;
}

static void
status_rec_str(struct statusfmt_rec *r, const char *key, const char *s)
{
	struct statusfmt_item *it = status_rec_add(r, key, STATUSFMT_STR);

	if (it != NULL)
		it->str = s[0] != '\0' ? s : "-";	/* PHP-FPM's "none" */
}

static void
status_rec_num(struct statusfmt_rec *r, const char *key,
    enum statusfmt_type type, long long n)
{
	struct statusfmt_item *it = status_rec_add(r, key, type);

	if (it != NULL)
		it->num = n;
}

static void
status_rec_int(struct statusfmt_rec *r, const char *key, long long n)
{
	status_rec_num(r, key, STATUSFMT_INT, n);
}

static void
status_pool_read(const struct status_view *v, struct status_pool *p)
{
	memset(p, 0, sizeof(*p));
	scoreboard_census(v->sb, &p->workers);
	scoreboard_totals(v->sb, &p->totals);
	esc_text(p->name, sizeof(p->name), v->pool, strnlen(v->pool,
	    STATUS_MAX_POOL));
}

/* The most connections seen waiting: the master's samples, and now. */
static unsigned
status_lq_max(const struct status_view *v, const struct sb_totals *t)
{
	return v->listen_queue > t->listen_queue_max ? v->listen_queue :
	    t->listen_queue_max;
}

/* The pool: PHP-FPM's keys in its order, then cfpm's. */
static void
status_pool_record(const struct status_view *v, const struct status_pool *p,
    struct statusfmt_rec *r)
{
	static const char *const classes[SCOREBOARD_CLASSES] = {
		NULL, "1xx", "2xx", "3xx", "4xx", "5xx",
	};
	const struct sb_totals *t = &p->totals;
	int i;

	memset(r, 0, sizeof(*r));
	status_rec_str(r, "pool", p->name);
	status_rec_str(r, "process manager", "static");
	status_rec_num(r, "start time", STATUSFMT_TIME, t->start_time);
	status_rec_int(r, "start since", v->now - t->start_time);
	status_rec_int(r, "accepted conn", (long long)t->accepted);
	status_rec_int(r, "listen queue", v->listen_queue);
	status_rec_int(r, "max listen queue", status_lq_max(v, t));
	status_rec_int(r, "listen queue len", v->listen_queue_len);
	status_rec_int(r, "idle processes", p->workers.idle);
	status_rec_int(r, "active processes", p->workers.busy);
	status_rec_int(r, "total processes", p->workers.live);
	status_rec_int(r, "max active processes", t->max_active);
	status_rec_int(r, "max children reached",
	    (long long)t->max_children_reached);
	status_rec_int(r, "slow requests", (long long)t->slow);
	status_rec_int(r, "terminated requests", (long long)t->terminated);
	status_rec_int(r, "cut replies", (long long)t->replies_cut);
	status_rec_int(r, "generation", v->generation);
	status_rec_int(r, "reloads", (long long)t->reloads);
	r->prefix = "responses";
	for (i = 1; i < SCOREBOARD_CLASSES; i++)
		status_rec_int(r, classes[i], (long long)t->by_class[i]);
	r->prefix = "respawns";
	for (i = 0; i < SB_REASON_MAX; i++)
		status_rec_int(r, scoreboard_reason_name(i),
		    (long long)t->respawns[i]);
	r->prefix = NULL;
}

/* Reads slot i for its record (w->q: its client bytes, escaped). */
static void
status_worker_read(const struct status_view *v, unsigned i,
    struct status_worker *w)
{
	/* A torn copy is used all the same: its strings are escaped. */
	(void)scoreboard_read(&v->sb->slots[i], &w->s);
	status_request(&w->s, &w->q);
	w->mem = v->mem[i];
}

/*
 * One worker, PHP-FPM's keys in its order, then cfpm's. As PHP-FPM:
 * requests count the one in progress; request duration is the current
 * request's so far, or the last one's while idle; last request cpu
 * (percent of its duration) and memory only while idle and once it has
 * served one, else 0. cfpm's CPU figure includes the wait and accept
 * that led to the request (worker.c), its duration does not: the share
 * is capped at 100, what one thread can use. cfpm's last request memory
 * is the worker's peak resident size in bytes (VmHWM): PHP-FPM's is its
 * allocator's peak during the request, a figure a C worker lacks.
 */
static void
status_worker_record(const struct status_view *v,
    const struct status_worker *w, struct statusfmt_rec *r)
{
	const struct sb_view *s = &w->s;
	const struct sb_request *q = &s->req;
	int idle = s->phase == SB_IDLE, last = idle && q->requests > 0;
	long long duration = 0;
	struct statusfmt_item *it;

	if (q->start_us > 0 && v->now_us > q->start_us)
		duration = v->now_us - q->start_us;
	else if (idle)
		duration = q->last_duration_us;
	memset(r, 0, sizeof(*r));
	status_rec_int(r, "pid", s->master.pid);
	status_rec_str(r, "state", status_state_name(s->phase));
	status_rec_num(r, "start time", STATUSFMT_TIME, s->master.started_at);
	status_rec_int(r, "start since", v->now - s->master.started_at);
	status_rec_int(r, "requests", (long long)q->requests +
	    (q->start_us > 0));
	status_rec_int(r, "request duration", duration);
	status_rec_str(r, "request method", w->q.method);
	status_rec_str(r, "request uri", w->q.uri);
	if (r->n > 0)
		r->item[r->n - 1].text = "request URI";
	status_rec_int(r, "content length", q->content_length > 0 ?
	    q->content_length : 0);
	/* No HTTP authentication user, no script file: compiled in. */
	status_rec_str(r, "user", "-");
	status_rec_str(r, "script", "-");
	it = status_rec_add(r, "last request cpu", STATUSFMT_CPU);
	if (it != NULL && last && q->last_duration_us > 0)
		it->cpu = q->last_cpu_us >= q->last_duration_us ? 100.0 :
		    100.0 * (double)q->last_cpu_us /
		    (double)q->last_duration_us;
	status_rec_int(r, "last request memory", last &&
	    w->mem.peak_kb > 0 ? w->mem.peak_kb * 1024LL : 0);
	status_rec_str(r, "phase", scoreboard_phase_name(s->phase));
	status_rec_int(r, "generation", s->master.generation);
	status_rec_int(r, "last request status", q->last_status);
	status_rec_int(r, "last request duration", q->last_duration_us);
	status_rec_int(r, "rss", w->mem.rss_kb);
	status_rec_str(r, "database", s->db_ok ? "ok" : "down");
}

/* -- the page ------------------------------------------------------------- */

long
status_render(const struct status_view *v, enum status_format fmt,
    int full, char *buf, size_t len)
{
	struct statusfmt_page pg;
	struct statusfmt_rec r;
	struct status_worker w;
	struct status_pool p;
	struct buf o;
	unsigned i;

	buf_init(&o, buf, len);
	status_pool_read(v, &p);
	status_pool_record(v, &p, &r);
	statusfmt_summary(&pg, &o, fmt, v->utc_offset, &r);
	if (full) {
		memset(&w, 0, sizeof(w));	/* any record names the keys */
		status_worker_record(v, &w, &r);
		statusfmt_workers(&pg, &r);
		SCOREBOARD_FOREACH_LIVE(v->sb, i) {
			status_worker_read(v, i, &w);
			status_worker_record(v, &w, &r);
			statusfmt_worker(&pg, &r, w.s.req.requests);
		}
	}
	statusfmt_end(&pg, full);
	return o.overflow ? -1 : (long)o.len;
}
