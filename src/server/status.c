/*
 * status.c: render the status page (PURE; the master serves it, so it
 * answers while every worker is busy).
 *
 * The pool summary and each worker are first gathered as a record: a
 * list of items, each with PHP-FPM's key, a type and a value. One writer
 * per format then prints records the way PHP-FPM 8.2 prints that format
 * (sapi/fpm/fpm/fpm_status.c): the same keys in the same order, the same
 * layout, the same number formats, dates as Unix seconds in JSON and XML
 * and as local "%d/%b/%Y:%H:%M:%S %z" in text and HTML. cfpm's items
 * follow PHP-FPM's in every record. OpenMetrics has its own writer: its
 * names are metric names, not keys.
 */
#include "server/status.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/buf.h"
#include "util/esc.h"

#define STATUS_MAX_ITEMS	40	/* items in one record */
#define STATUS_MAX_POOL		256	/* pool name bytes shown */
#define STATUS_MAX_NAME		64	/* an item's name in any format */
#define STATUS_MAX_VALUE	64	/* a number or a date, printed */
#define STATUS_TEXT_KEY_COL	22	/* text values start here, as PHP-FPM's */

enum status_type {
	STATUS_STR = 0,	/* text, already escaped by esc_text() */
	STATUS_INT,
	STATUS_CPU,	/* a percentage, two decimals */
	STATUS_TIME,	/* Unix seconds; a date in text and HTML */
};

struct status_item {
	const char		*prefix; /* a family's name before the key
					   ("responses"), or NULL */
	const char		*key;	/* PHP-FPM's JSON key */
	const char		*text;	/* the text page's key, when not key */
	enum status_type	 type;
	const char		*str;
	long long		 num;
	double			 cpu;
};

struct status_rec {
	struct status_item	 item[STATUS_MAX_ITEMS];
	unsigned		 n;
	const char		*prefix; /* the prefix of the items added */
};

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

static const char *const status_months[12] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
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
query_byte(const char *k, size_t n, size_t *i)
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
query_key_is(const char *k, size_t n, const char *word)
{
	size_t i = 0, w = 0, wlen = strlen(word);
	int c, lead = 1;

	while (i < n) {
		c = query_byte(k, n, &i);
		if (c == '\0')
			break;
		if (lead && c == ' ')
			continue;
		lead = 0;
		if (c == '[') {
			while (i < n && (c = query_byte(k, n, &i)) != ']' &&
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
query_has(const char *q, size_t len, const char *word)
{
	const char *end = q + len, *amp, *eq;
	size_t n;

	while (q < end) {
		amp = memchr(q, '&', (size_t)(end - q));
		n = amp ? (size_t)(amp - q) : (size_t)(end - q);
		eq = memchr(q, '=', n);
		if (query_key_is(q, eq ? (size_t)(eq - q) : n, word))
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
		if (query_has(query, len, order[i].flag)) {
			*fmt = order[i].fmt;
			break;
		}
	*full = query_has(query, len, "full");
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

static struct status_item *
rec_add(struct status_rec *r, const char *key, enum status_type type)
{
	struct status_item *it;

	if (r->n == STATUS_MAX_ITEMS)
		return NULL;	/* a programming error: the tests show it */
	it = &r->item[r->n++];
	memset(it, 0, sizeof(*it));
	it->prefix = r->prefix;
	it->key = key;
	it->type = type;
	return it;
}

static void
rec_str(struct status_rec *r, const char *key, const char *s)
{
	struct status_item *it = rec_add(r, key, STATUS_STR);

	if (it != NULL)
		it->str = s[0] != '\0' ? s : "-";	/* PHP-FPM's "none" */
}

static void
rec_num(struct status_rec *r, const char *key, enum status_type type,
    long long n)
{
	struct status_item *it = rec_add(r, key, type);

	if (it != NULL)
		it->num = n;
}

static void
status_count(const struct status_view *v, struct status_pool *p)
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
pool_record(const struct status_view *v, const struct status_pool *p,
    struct status_rec *r)
{
	static const char *const classes[SCOREBOARD_CLASSES] = {
		NULL, "1xx", "2xx", "3xx", "4xx", "5xx",
	};
	const struct sb_totals *t = &p->totals;
	int i;

	memset(r, 0, sizeof(*r));
	rec_str(r, "pool", p->name);
	rec_str(r, "process manager", "static");
	rec_num(r, "start time", STATUS_TIME, t->start_time);
	rec_num(r, "start since", STATUS_INT, v->now - t->start_time);
	rec_num(r, "accepted conn", STATUS_INT, (long long)t->accepted);
	rec_num(r, "listen queue", STATUS_INT, v->listen_queue);
	rec_num(r, "max listen queue", STATUS_INT, status_lq_max(v, t));
	rec_num(r, "listen queue len", STATUS_INT, v->listen_queue_len);
	rec_num(r, "idle processes", STATUS_INT, p->workers.idle);
	rec_num(r, "active processes", STATUS_INT, p->workers.busy);
	rec_num(r, "total processes", STATUS_INT, p->workers.live);
	rec_num(r, "max active processes", STATUS_INT, t->max_active);
	rec_num(r, "max children reached", STATUS_INT,
	    (long long)t->max_children_reached);
	rec_num(r, "slow requests", STATUS_INT, (long long)t->slow);
	rec_num(r, "terminated requests", STATUS_INT,
	    (long long)t->terminated);
	rec_num(r, "cut replies", STATUS_INT, (long long)t->replies_cut);
	rec_num(r, "generation", STATUS_INT, v->generation);
	rec_num(r, "reloads", STATUS_INT, (long long)t->reloads);
	r->prefix = "responses";
	for (i = 1; i < SCOREBOARD_CLASSES; i++)
		rec_num(r, classes[i], STATUS_INT, (long long)t->by_class[i]);
	r->prefix = "respawns";
	for (i = 0; i < SB_REASON_MAX; i++)
		rec_num(r, scoreboard_reason_name(i), STATUS_INT,
		    (long long)t->respawns[i]);
	r->prefix = NULL;
}

/* Reads slot i for its record (w->q: its client bytes, escaped). */
static void
worker_read(const struct status_view *v, unsigned i, struct status_worker *w)
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
worker_record(const struct status_view *v, const struct status_worker *w,
    struct status_rec *r)
{
	const struct sb_view *s = &w->s;
	const struct sb_request *q = &s->req;
	int idle = s->phase == SB_IDLE, last = idle && q->requests > 0;
	long long duration = 0;
	struct status_item *it;

	if (q->start_us > 0 && v->now_us > q->start_us)
		duration = v->now_us - q->start_us;
	else if (idle)
		duration = q->last_duration_us;
	memset(r, 0, sizeof(*r));
	rec_num(r, "pid", STATUS_INT, s->master.pid);
	rec_str(r, "state", status_state_name(s->phase));
	rec_num(r, "start time", STATUS_TIME, s->master.started_at);
	rec_num(r, "start since", STATUS_INT, v->now - s->master.started_at);
	rec_num(r, "requests", STATUS_INT, (long long)q->requests +
	    (q->start_us > 0));
	rec_num(r, "request duration", STATUS_INT, duration);
	rec_str(r, "request method", w->q.method);
	rec_str(r, "request uri", w->q.uri);
	if (r->n > 0)
		r->item[r->n - 1].text = "request URI";
	rec_num(r, "content length", STATUS_INT, q->content_length > 0 ?
	    q->content_length : 0);
	rec_str(r, "user", "-");	/* no HTTP authentication user */
	rec_str(r, "script", "-");	/* no script file: compiled in */
	if ((it = rec_add(r, "last request cpu", STATUS_CPU)) != NULL &&
	    last && q->last_duration_us > 0)
		it->cpu = q->last_cpu_us >= q->last_duration_us ? 100.0 :
		    100.0 * (double)q->last_cpu_us /
		    (double)q->last_duration_us;
	rec_num(r, "last request memory", STATUS_INT, last &&
	    w->mem.peak_kb > 0 ? w->mem.peak_kb * 1024LL : 0);
	rec_str(r, "phase", scoreboard_phase_name(s->phase));
	rec_num(r, "generation", STATUS_INT, s->master.generation);
	rec_num(r, "last request status", STATUS_INT, q->last_status);
	rec_num(r, "last request duration", STATUS_INT, q->last_duration_us);
	rec_num(r, "rss", STATUS_INT, w->mem.rss_kb);
	rec_str(r, "database", s->db_ok ? "ok" : "down");
}

/* -- values and names ----------------------------------------------------- */

/* PHP-FPM's text date, "%d/%b/%Y:%H:%M:%S %z", in local time. */
static void
status_date(const struct status_view *v, int64_t t, char *out, size_t cap)
{
	long off = v->utc_offset != NULL ? v->utc_offset(t) : 0;
	long a = off < 0 ? -off : off;
	time_t local = (time_t)(t + off);
	struct tm tm;

	if (gmtime_r(&local, &tm) == NULL) {
		snprintf(out, cap, "-");
		return;
	}
	snprintf(out, cap, "%02d/%s/%d:%02d:%02d:%02d %c%02ld%02ld",
	    tm.tm_mday, status_months[tm.tm_mon % 12], tm.tm_year + 1900,
	    tm.tm_hour, tm.tm_min, tm.tm_sec, off < 0 ? '-' : '+', a / 3600,
	    a % 3600 / 60);
}

/* The item's value as printed: tmp holds it unless it is a string. */
static const char *
item_value(const struct status_view *v, const struct status_item *it,
    int dates, char *tmp, size_t cap)
{
	switch (it->type) {
	case STATUS_STR:
		return it->str;
	case STATUS_CPU:
		snprintf(tmp, cap, "%.2f", it->cpu);
		break;
	case STATUS_TIME:
		if (dates) {
			status_date(v, it->num, tmp, cap);
			break;
		}
		/* FALLTHROUGH */
	default:
		snprintf(tmp, cap, "%lld", it->num);
	}
	return tmp;
}

/*
 * The item's name (key) after its prefix, if any ("responses 2xx"); every
 * space in it becomes space ('-' for XML, whose names cannot hold one).
 * Every format names an item so, JSON included: a scalar under a flat
 * key, as PHP-FPM's own, so that clients which cut the page's one object
 * out with a regular expression (Zabbix's template) or walk it one level
 * deep find every figure.
 */
static const char *
item_name(const struct status_item *it, const char *key, char space,
    char *out, size_t cap)
{
	char *p;

	if (it->prefix != NULL)
		snprintf(out, cap, "%s%c%s", it->prefix, space, key);
	else
		snprintf(out, cap, "%s", key);
	for (p = out; *p != '\0'; p++)
		if (*p == ' ')
			*p = space;
	return out;
}

/*
 * XML and HTML text: the five markup characters as entities, and
 * U+FFFE and U+FFFF, which esc_text() lets through as valid UTF-8 but no
 * XML document may hold (not even as a reference), as esc.h's \xNN.
 */
static void
markup_string(struct buf *o, const char *s)
{
	static const char special[] = "&<>\"'\xef";
	static const char *const entity[] = {
		"&amp;", "&lt;", "&gt;", "&quot;", "&#039;",
	};
	const char *hit;
	size_t n;

	while (*s != '\0') {
		n = strcspn(s, special);
		buf_add(o, s, n);
		s += n;
		if (*s == '\0')
			break;
		hit = strchr(special, *s);
		if (*s != '\xef')
			buf_str(o, entity[hit - special]);
		else if (s[1] == '\xbf' && (s[2] == '\xbe' || s[2] == '\xbf')) {
			buf_printf(o, "\\xef\\xbf\\x%02x", (unsigned char)s[2]);
			s += 2;
		} else
			buf_add(o, s, 1);
		s++;
	}
}

/* -- the formats -------------------------------------------------------- */

static void
text_record(struct buf *o, const struct status_view *v,
    const struct status_rec *r)
{
	char name[STATUS_MAX_NAME], val[STATUS_MAX_VALUE];
	const struct status_item *it;
	int pad;
	unsigned i;

	for (i = 0; i < r->n; i++) {
		it = &r->item[i];
		item_name(it, it->text ? it->text : it->key, ' ', name,
		    sizeof(name));
		pad = STATUS_TEXT_KEY_COL - 1 - (int)strlen(name);
		buf_printf(o, "%s:%*s%s\n", name, pad > 1 ? pad : 1, "",
		    item_value(v, it, 1, val, sizeof(val)));
	}
}

/* A JSON object of the items, left open: the caller closes it. */
static void
json_record(struct buf *o, const struct status_view *v,
    const struct status_rec *r)
{
	char name[STATUS_MAX_NAME], val[STATUS_MAX_VALUE];
	const struct status_item *it;
	unsigned i;

	buf_add(o, "{", 1);
	for (i = 0; i < r->n; i++) {
		it = &r->item[i];
		if (i > 0)
			buf_add(o, ",", 1);
		item_name(it, it->key, ' ', name, sizeof(name));
		buf_json_string(o, name, strlen(name));
		buf_add(o, ":", 1);
		if (it->type == STATUS_STR)
			buf_json_string(o, it->str, strlen(it->str));
		else
			buf_str(o, item_value(v, it, 0, val, sizeof(val)));
	}
}

/* PHP-FPM's XML: one element per item, each ending in sep. */
static void
xml_record(struct buf *o, const struct status_view *v,
    const struct status_rec *r, const char *sep)
{
	char name[STATUS_MAX_NAME], val[STATUS_MAX_VALUE];
	const struct status_item *it;
	unsigned i;

	for (i = 0; i < r->n; i++) {
		it = &r->item[i];
		item_name(it, it->key, '-', name, sizeof(name));
		buf_printf(o, "<%s>", name);
		markup_string(o, item_value(v, it, 0, val, sizeof(val)));
		buf_printf(o, "</%s>%s", name, sep);
	}
}

/* <tag>text</tag>, the text as markup. */
static void
html_cell(struct buf *o, const char *tag, const char *text)
{
	buf_printf(o, "<%s>", tag);
	markup_string(o, text);
	buf_printf(o, "</%s>", tag);
}

/* A row of the workers' table: the items' names (header) or values. */
static void
html_row(struct buf *o, const struct status_view *v,
    const struct status_rec *r, int header)
{
	char name[STATUS_MAX_NAME], val[STATUS_MAX_VALUE];
	const struct status_item *it;
	unsigned i;

	buf_str(o, "<tr>");
	for (i = 0; i < r->n; i++) {
		it = &r->item[i];
		if (header)
			html_cell(o, "th", item_name(it, it->key, ' ', name,
			    sizeof(name)));
		else
			html_cell(o, "td", item_value(v, it, 1, val,
			    sizeof(val)));
	}
	buf_str(o, "</tr>\n");
}

/* PHP-FPM's HTML summary: one row per item, its name and its value. */
static void
html_summary(struct buf *o, const struct status_view *v,
    const struct status_rec *r)
{
	char name[STATUS_MAX_NAME], val[STATUS_MAX_VALUE];
	const struct status_item *it;
	unsigned i;

	buf_str(o, "<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 Strict//EN\" "
	    "\"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd\">\n"
	    "<html xmlns=\"http://www.w3.org/1999/xhtml\" xml:lang=\"en\" "
	    "lang=\"en\">\n<head><title>PHP-FPM Status Page</title></head>\n"
	    "<body>\n<table>\n");
	for (i = 0; i < r->n; i++) {
		it = &r->item[i];
		buf_str(o, "<tr>");
		html_cell(o, "th", item_name(it, it->key, ' ', name,
		    sizeof(name)));
		html_cell(o, "td", item_value(v, it, 1, val, sizeof(val)));
		buf_str(o, "</tr>\n");
	}
	buf_str(o, "</table>\n");
}

/* Each format's frame around the summary and the workers, as PHP-FPM's. */
struct status_frame {
	const char	*summary_end;	/* without full */
	const char	*workers_begin;	/* with full: before the first */
	const char	*between;	/* between two workers */
	const char	*workers_end;	/* after the last */
};

static const struct status_frame status_frames[] = {
	[STATUS_TEXT] = { "", "", "", "" },
	[STATUS_JSON] = { "}", ", \"processes\":[", ",", "]}" },
	[STATUS_XML] = { "</status>", "<processes>\n", "",
	    "</processes>\n</status>" },
	[STATUS_HTML] = { "</body></html>", "<table border=\"1\">\n", "",
	    "</table></body></html>" },
};

static void
summary_write(struct buf *o, const struct status_view *v,
    enum status_format fmt, const struct status_rec *r)
{
	switch (fmt) {
	case STATUS_JSON:
		json_record(o, v, r);	/* closed by the frame */
		break;
	case STATUS_XML:
		buf_str(o, "<?xml version=\"1.0\" ?>\n<status>\n");
		xml_record(o, v, r, "\n");
		break;
	case STATUS_HTML:
		html_summary(o, v, r);
		break;
	default:
		text_record(o, v, r);
	}
}

static void
worker_write(struct buf *o, const struct status_view *v,
    enum status_format fmt, const struct status_rec *r)
{
	switch (fmt) {
	case STATUS_JSON:
		json_record(o, v, r);
		buf_str(o, "}");
		break;
	case STATUS_XML:
		buf_str(o, "<process>");
		xml_record(o, v, r, "");
		buf_str(o, "</process>\n");
		break;
	case STATUS_HTML:
		html_row(o, v, r, 0);
		break;
	default:
		buf_str(o, "\n************************\n");
		text_record(o, v, r);
	}
}

/* Text, JSON, XML or HTML: the summary, then with full every worker. */
static void
status_page(struct buf *o, const struct status_view *v,
    const struct status_pool *p, enum status_format fmt, int full)
{
	const struct status_frame *f = &status_frames[fmt];
	struct status_worker w;
	struct status_rec r;
	unsigned i, n = 0;

	pool_record(v, p, &r);
	summary_write(o, v, fmt, &r);
	if (!full) {
		buf_str(o, f->summary_end);
		return;
	}
	buf_str(o, f->workers_begin);
	if (fmt == STATUS_HTML) {	/* the header row: any record's names */
		memset(&w, 0, sizeof(w));
		worker_record(v, &w, &r);
		html_row(o, v, &r, 1);
	}
	SCOREBOARD_FOREACH_LIVE(v->sb, i) {
		worker_read(v, i, &w);
		worker_record(v, &w, &r);
		if (n++ > 0)
			buf_str(o, f->between);
		worker_write(o, v, fmt, &r);
	}
	buf_str(o, f->workers_end);
}

/*
 * A metric family's HELP and TYPE lines, named as its samples are: the
 * text format's rule, which promtool and Prometheus's metadata follow
 * (an OpenMetrics family "cfpm_reloads" of samples "cfpm_reloads_total"
 * is a sample without help or type to them). PHP-FPM's counters have
 * one name for both too.
 */
static void
om_family(struct buf *o, const char *name, const char *type,
    const char *help)
{
	buf_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A family with one sample, name value, as PHP-FPM writes its own. */
static void
om_metric(struct buf *o, const char *name, const char *type,
    const char *help, long long value)
{
	om_family(o, name, type, help);
	buf_printf(o, "%s %lld\n", name, value);
}

/*
 * PHP-FPM's metrics under its names and types (its counters carry no
 * _total: dashboards match the names as PHP-FPM sends them), then
 * cfpm's, named cfpm_* with _total on counters, each with its HELP and
 * TYPE, and a UNIT where the name ends in one (OpenMetrics).
 */
static void
status_openmetrics(struct buf *o, const struct status_view *v,
    const struct status_pool *p, int full)
{
	const struct sb_totals *t = &p->totals;
	struct sb_view s;
	unsigned i;
	int c;

	buf_printf(o, "# HELP phpfpm_up Could pool %s using a static PM on "
	    "cfpm be reached?\n# TYPE phpfpm_up gauge\nphpfpm_up 1\n",
	    p->name);
	om_metric(o, "phpfpm_start_since", "counter",
	    "Seconds since the pool started.", v->now - t->start_time);
	om_metric(o, "phpfpm_accepted_connections", "counter",
	    "Requests the pool accepted.", (long long)t->accepted);
	om_metric(o, "phpfpm_listen_queue", "gauge",
	    "Connections waiting in the listen queue.", v->listen_queue);
	om_metric(o, "phpfpm_max_listen_queue", "counter",
	    "Most connections waiting in the listen queue since the start.",
	    status_lq_max(v, t));
	om_metric(o, "phpfpm_listen_queue_length", "gauge",
	    "Size of the listen queue.", v->listen_queue_len);
	om_metric(o, "phpfpm_idle_processes", "gauge",
	    "Workers waiting for a connection.", p->workers.idle);
	om_metric(o, "phpfpm_active_processes", "gauge",
	    "Workers in a request.", p->workers.busy);
	om_metric(o, "phpfpm_total_processes", "gauge", "Workers.", p->workers.live);
	om_metric(o, "phpfpm_max_active_processes", "counter",
	    "Most workers in a request at once since the start.",
	    t->max_active);
	om_metric(o, "phpfpm_max_children_reached", "counter",
	    "Times every one of pm.max_children workers was in a request.",
	    (long long)t->max_children_reached);
	om_metric(o, "phpfpm_slow_requests", "counter",
	    "Requests over request_slowlog_timeout.", (long long)t->slow);
	om_family(o, "cfpm_start_time_seconds", "gauge",
	    "When the pool started, in Unix seconds.");
	buf_printf(o, "# UNIT cfpm_start_time_seconds seconds\n"
	    "cfpm_start_time_seconds %lld\n", (long long)t->start_time);
	om_metric(o, "cfpm_terminated_requests_total", "counter",
	    "Requests over request_terminate_timeout.",
	    (long long)t->terminated);
	om_metric(o, "cfpm_cut_replies_total", "counter",
	    "Replies cut at request_write_timeout: the client did not read.",
	    (long long)t->replies_cut);
	om_metric(o, "cfpm_reloads_total", "counter", "Reloads.",
	    (long long)t->reloads);
	om_metric(o, "cfpm_generation", "gauge",
	    "The pool's generation (one more per reload).", v->generation);
	om_family(o, "cfpm_responses_total", "counter",
	    "Responses by status class.");
	for (c = 1; c < SCOREBOARD_CLASSES; c++)
		buf_printf(o, "cfpm_responses_total{class=\"%dxx\"} %llu\n", c,
		    (unsigned long long)t->by_class[c]);
	om_family(o, "cfpm_respawns_total", "counter",
	    "Workers replaced, by reason.");
	for (c = 0; c < SB_REASON_MAX; c++)
		buf_printf(o, "cfpm_respawns_total{reason=\"%s\"} %llu\n",
		    scoreboard_reason_name(c),
		    (unsigned long long)t->respawns[c]);
	if (full) {
		om_family(o, "cfpm_worker_requests_total", "counter",
		    "Requests per worker.");
		SCOREBOARD_FOREACH_LIVE(v->sb, i) {
			(void)scoreboard_read(&v->sb->slots[i], &s);
			buf_printf(o, "cfpm_worker_requests_total"
			    "{pid=\"%d\"} %llu\n", (int)s.master.pid,
			    (unsigned long long)s.req.requests);
		}
	}
	buf_str(o, "# EOF\n");
}

long
status_render(const struct status_view *v, enum status_format fmt,
    int full, char *buf, size_t len)
{
	struct status_pool p;
	struct buf o;

	buf_init(&o, buf, len);
	status_count(v, &p);
	if (fmt == STATUS_OPENMETRICS)
		status_openmetrics(&o, v, &p, full);
	else
		status_page(&o, v, &p, fmt, full);
	return o.overflow ? -1 : (long)o.len;
}
