/*
 * statusfmt.c: the status page's formats (PURE; see statusfmt.h). Text,
 * JSON, XML and HTML each print a record item by item inside a frame of
 * PHP-FPM's; OpenMetrics looks the pool's figures up by key, in the
 * order and under the names of its metrics.
 */
#include "server/statusfmt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define STATUSFMT_MAX_NAME	64	/* an item's name in any format */
#define STATUSFMT_MAX_VALUE	64	/* a number or a date, printed */
#define STATUSFMT_TEXT_KEY_COL	22	/* text values start here, as
					   PHP-FPM's */

static const char *const statusfmt_months[12] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
};

/* -- values and names ----------------------------------------------------- */

/* PHP-FPM's text date, "%d/%b/%Y:%H:%M:%S %z", in local time. */
static void
statusfmt_date(const struct statusfmt_page *pg, int64_t t, char *out,
    size_t cap)
{
	long off = pg->utc_offset != NULL ? pg->utc_offset(t) : 0;
	long a = off < 0 ? -off : off;
	time_t local = (time_t)(t + off);
	struct tm tm;

	if (gmtime_r(&local, &tm) == NULL) {
		snprintf(out, cap, "-");
		return;
	}
	snprintf(out, cap, "%02d/%s/%d:%02d:%02d:%02d %c%02ld%02ld",
	    tm.tm_mday, statusfmt_months[tm.tm_mon % 12], tm.tm_year + 1900,
	    tm.tm_hour, tm.tm_min, tm.tm_sec, off < 0 ? '-' : '+', a / 3600,
	    a % 3600 / 60);
}

/* The item's value as printed: tmp holds it unless it is a string. */
static const char *
statusfmt_value(const struct statusfmt_page *pg,
    const struct statusfmt_item *it, int dates, char *tmp, size_t cap)
{
	switch (it->type) {
	case STATUSFMT_STR:
		return it->str;
	case STATUSFMT_CPU:
		snprintf(tmp, cap, "%.2f", it->cpu);
		break;
	case STATUSFMT_TIME:
		if (dates) {
			statusfmt_date(pg, it->num, tmp, cap);
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
statusfmt_name(const struct statusfmt_item *it, const char *key, char space,
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
statusfmt_markup(struct buf *o, const char *s)
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

/* -- text, JSON, XML, HTML ------------------------------------------------ */

static void
statusfmt_text(const struct statusfmt_page *pg, const struct statusfmt_rec *r)
{
	char name[STATUSFMT_MAX_NAME], val[STATUSFMT_MAX_VALUE];
	const struct statusfmt_item *it;
	int pad;
	unsigned i;

	for (i = 0; i < r->n; i++) {
		it = &r->item[i];
		statusfmt_name(it, it->text ? it->text : it->key, ' ', name,
		    sizeof(name));
		pad = STATUSFMT_TEXT_KEY_COL - 1 - (int)strlen(name);
		buf_printf(pg->o, "%s:%*s%s\n", name, pad > 1 ? pad : 1, "",
		    statusfmt_value(pg, it, 1, val, sizeof(val)));
	}
}

/* A JSON object of the items, left open: the caller closes it. */
static void
statusfmt_json(const struct statusfmt_page *pg, const struct statusfmt_rec *r)
{
	char name[STATUSFMT_MAX_NAME], val[STATUSFMT_MAX_VALUE];
	const struct statusfmt_item *it;
	struct buf *o = pg->o;
	unsigned i;

	buf_add(o, "{", 1);
	for (i = 0; i < r->n; i++) {
		it = &r->item[i];
		if (i > 0)
			buf_add(o, ",", 1);
		statusfmt_name(it, it->key, ' ', name, sizeof(name));
		buf_json_string(o, name, strlen(name));
		buf_add(o, ":", 1);
		if (it->type == STATUSFMT_STR)
			buf_json_string(o, it->str, strlen(it->str));
		else
			buf_str(o, statusfmt_value(pg, it, 0, val,
			    sizeof(val)));
	}
}

/* PHP-FPM's XML: one element per item, each ending in sep. */
static void
statusfmt_xml(const struct statusfmt_page *pg, const struct statusfmt_rec *r,
    const char *sep)
{
	char name[STATUSFMT_MAX_NAME], val[STATUSFMT_MAX_VALUE];
	const struct statusfmt_item *it;
	unsigned i;

	for (i = 0; i < r->n; i++) {
		it = &r->item[i];
		statusfmt_name(it, it->key, '-', name, sizeof(name));
		buf_printf(pg->o, "<%s>", name);
		statusfmt_markup(pg->o, statusfmt_value(pg, it, 0, val,
		    sizeof(val)));
		buf_printf(pg->o, "</%s>%s", name, sep);
	}
}

/* <tag>text</tag>, the text as markup. */
static void
statusfmt_html_cell(struct buf *o, const char *tag, const char *text)
{
	buf_printf(o, "<%s>", tag);
	statusfmt_markup(o, text);
	buf_printf(o, "</%s>", tag);
}

/* A row of the workers' table: the items' names (header) or values. */
static void
statusfmt_html_row(const struct statusfmt_page *pg,
    const struct statusfmt_rec *r, int header)
{
	char name[STATUSFMT_MAX_NAME], val[STATUSFMT_MAX_VALUE];
	const struct statusfmt_item *it;
	unsigned i;

	buf_str(pg->o, "<tr>");
	for (i = 0; i < r->n; i++) {
		it = &r->item[i];
		if (header)
			statusfmt_html_cell(pg->o, "th", statusfmt_name(it,
			    it->key, ' ', name, sizeof(name)));
		else
			statusfmt_html_cell(pg->o, "td", statusfmt_value(pg,
			    it, 1, val, sizeof(val)));
	}
	buf_str(pg->o, "</tr>\n");
}

/* PHP-FPM's HTML summary: one row per item, its name and its value. */
static void
statusfmt_html_summary(const struct statusfmt_page *pg,
    const struct statusfmt_rec *r)
{
	char name[STATUSFMT_MAX_NAME], val[STATUSFMT_MAX_VALUE];
	const struct statusfmt_item *it;
	unsigned i;

	buf_str(pg->o, "<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 "
	    "Strict//EN\" \"http://www.w3.org/TR/xhtml1/DTD/"
	    "xhtml1-strict.dtd\">\n<html xmlns=\"http://www.w3.org/1999/"
	    "xhtml\" xml:lang=\"en\" lang=\"en\">\n<head><title>PHP-FPM "
	    "Status Page</title></head>\n<body>\n<table>\n");
	for (i = 0; i < r->n; i++) {
		it = &r->item[i];
		buf_str(pg->o, "<tr>");
		statusfmt_html_cell(pg->o, "th", statusfmt_name(it, it->key,
		    ' ', name, sizeof(name)));
		statusfmt_html_cell(pg->o, "td", statusfmt_value(pg, it, 1,
		    val, sizeof(val)));
		buf_str(pg->o, "</tr>\n");
	}
	buf_str(pg->o, "</table>\n");
}

/* Each format's frame around the summary and the workers, as PHP-FPM's. */
static const struct statusfmt_frame {
	const char	*summary_end;	/* without full */
	const char	*workers_begin;	/* with full: before the first */
	const char	*between;	/* between two workers */
	const char	*workers_end;	/* after the last */
} statusfmt_frames[] = {
	[STATUS_TEXT] = { "", "", "", "" },
	[STATUS_OPENMETRICS] = { "", "", "", "" },	/* its own lines */
	[STATUS_JSON] = { "}", ", \"processes\":[", ",", "]}" },
	[STATUS_XML] = { "</status>", "<processes>\n", "",
	    "</processes>\n</status>" },
	[STATUS_HTML] = { "</body></html>", "<table border=\"1\">\n", "",
	    "</table></body></html>" },
};

/* -- OpenMetrics ---------------------------------------------------------- */

/*
 * The pool's record as metrics: PHP-FPM's under its names and types (its
 * counters carry no _total: dashboards match the names as PHP-FPM sends
 * them), then cfpm's, named cfpm_* with _total on counters, each with
 * its HELP and TYPE, and a UNIT where the name ends in one. Each is the
 * record's item of that key.
 */
static const struct statusfmt_metric {
	const char	*key;		/* the pool record's item */
	const char	*name;
	const char	*type;
	const char	*help;
	const char	*unit;		/* NULL: none */
} statusfmt_metrics[] = {
	{ "start since", "phpfpm_start_since", "counter",
	    "Seconds since the pool started.", NULL },
	{ "accepted conn", "phpfpm_accepted_connections", "counter",
	    "Requests the pool accepted.", NULL },
	{ "listen queue", "phpfpm_listen_queue", "gauge",
	    "Connections waiting in the listen queue.", NULL },
	{ "max listen queue", "phpfpm_max_listen_queue", "counter",
	    "Most connections waiting in the listen queue since the start.",
	    NULL },
	{ "listen queue len", "phpfpm_listen_queue_length", "gauge",
	    "Size of the listen queue.", NULL },
	{ "idle processes", "phpfpm_idle_processes", "gauge",
	    "Workers waiting for a connection.", NULL },
	{ "active processes", "phpfpm_active_processes", "gauge",
	    "Workers in a request.", NULL },
	{ "total processes", "phpfpm_total_processes", "gauge", "Workers.",
	    NULL },
	{ "max active processes", "phpfpm_max_active_processes", "counter",
	    "Most workers in a request at once since the start.", NULL },
	{ "max children reached", "phpfpm_max_children_reached", "counter",
	    "Times every one of pm.max_children workers was in a request.",
	    NULL },
	{ "slow requests", "phpfpm_slow_requests", "counter",
	    "Requests over request_slowlog_timeout.", NULL },
	{ "start time", "cfpm_start_time_seconds", "gauge",
	    "When the pool started, in Unix seconds.", "seconds" },
	{ "terminated requests", "cfpm_terminated_requests_total", "counter",
	    "Requests over request_terminate_timeout.", NULL },
	{ "cut replies", "cfpm_cut_replies_total", "counter",
	    "Replies cut at request_write_timeout: the client did not read.",
	    NULL },
	{ "reloads", "cfpm_reloads_total", "counter", "Reloads.", NULL },
	{ "generation", "cfpm_generation", "gauge",
	    "The pool's generation (one more per reload).", NULL },
};

/* The record's families, one labelled sample per item. */
static const struct statusfmt_family {
	const char	*prefix;	/* the items' prefix in the record */
	const char	*name;
	const char	*label;		/* the items' keys are its values */
	const char	*help;
} statusfmt_families[] = {
	{ "responses", "cfpm_responses_total", "class",
	    "Responses by status class." },
	{ "respawns", "cfpm_respawns_total", "reason",
	    "Workers replaced, by reason." },
};

#define STATUSFMT_WORKER_METRIC	"cfpm_worker_requests_total"

/* The item of r under key without a prefix, or NULL. */
static const struct statusfmt_item *
statusfmt_find(const struct statusfmt_rec *r, const char *key)
{
	unsigned i;

	for (i = 0; i < r->n; i++)
		if (r->item[i].prefix == NULL &&
		    strcmp(r->item[i].key, key) == 0)
			return &r->item[i];
	return NULL;
}

/*
 * A metric family's HELP and TYPE lines, named as its samples are: the
 * text format's rule, which promtool and Prometheus's metadata follow
 * (an OpenMetrics family "cfpm_reloads" of samples "cfpm_reloads_total"
 * is a sample without help or type to them). PHP-FPM's counters have
 * one name for both too.
 */
static void
statusfmt_om_family(struct buf *o, const char *name, const char *type,
    const char *help)
{
	buf_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
statusfmt_om_summary(const struct statusfmt_page *pg,
    const struct statusfmt_rec *pool)
{
	const struct statusfmt_metric *m;
	const struct statusfmt_family *f;
	const struct statusfmt_item *it;
	const char *name;
	size_t i;
	unsigned j;

	name = (it = statusfmt_find(pool, "pool")) != NULL ? it->str : "";
	buf_printf(pg->o, "# HELP phpfpm_up Could pool %s using a static PM "
	    "on cfpm be reached?\n# TYPE phpfpm_up gauge\nphpfpm_up 1\n",
	    name);
	for (i = 0; i < sizeof(statusfmt_metrics) /
	    sizeof(statusfmt_metrics[0]); i++) {
		m = &statusfmt_metrics[i];
		if ((it = statusfmt_find(pool, m->key)) == NULL)
			continue;	/* a programming error: tests show it */
		statusfmt_om_family(pg->o, m->name, m->type, m->help);
		if (m->unit != NULL)
			buf_printf(pg->o, "# UNIT %s %s\n", m->name, m->unit);
		buf_printf(pg->o, "%s %lld\n", m->name, it->num);
	}
	for (i = 0; i < sizeof(statusfmt_families) /
	    sizeof(statusfmt_families[0]); i++) {
		f = &statusfmt_families[i];
		statusfmt_om_family(pg->o, f->name, "counter", f->help);
		for (j = 0; j < pool->n; j++)
			if (pool->item[j].prefix != NULL &&
			    strcmp(pool->item[j].prefix, f->prefix) == 0)
				buf_printf(pg->o, "%s{%s=\"%s\"} %lld\n",
				    f->name, f->label, pool->item[j].key,
				    pool->item[j].num);
	}
}

/* -- the page ------------------------------------------------------------- */

void
statusfmt_summary(struct statusfmt_page *pg, struct buf *o,
    enum status_format fmt, long (*utc_offset)(int64_t t),
    const struct statusfmt_rec *pool)
{
	*pg = (struct statusfmt_page){ .o = o, .fmt = fmt,
	    .utc_offset = utc_offset };
	switch (fmt) {
	case STATUS_OPENMETRICS:
		statusfmt_om_summary(pg, pool);
		break;
	case STATUS_JSON:
		statusfmt_json(pg, pool);	/* closed by the frame */
		break;
	case STATUS_XML:
		buf_str(o, "<?xml version=\"1.0\" ?>\n<status>\n");
		statusfmt_xml(pg, pool, "\n");
		break;
	case STATUS_HTML:
		statusfmt_html_summary(pg, pool);
		break;
	default:
		statusfmt_text(pg, pool);
	}
}

void
statusfmt_workers(struct statusfmt_page *pg,
    const struct statusfmt_rec *names)
{
	if (pg->fmt == STATUS_OPENMETRICS) {
		statusfmt_om_family(pg->o, STATUSFMT_WORKER_METRIC, "counter",
		    "Requests per worker.");
		return;
	}
	buf_str(pg->o, statusfmt_frames[pg->fmt].workers_begin);
	if (pg->fmt == STATUS_HTML)
		statusfmt_html_row(pg, names, 1);
}

void
statusfmt_worker(struct statusfmt_page *pg, const struct statusfmt_rec *w,
    uint64_t finished)
{
	const struct statusfmt_item *pid;

	if (pg->workers++ > 0)
		buf_str(pg->o, statusfmt_frames[pg->fmt].between);
	switch (pg->fmt) {
	case STATUS_OPENMETRICS:
		pid = statusfmt_find(w, "pid");
		buf_printf(pg->o, STATUSFMT_WORKER_METRIC "{pid=\"%lld\"} "
		    "%llu\n", pid != NULL ? pid->num : 0,
		    (unsigned long long)finished);
		break;
	case STATUS_JSON:
		statusfmt_json(pg, w);
		buf_str(pg->o, "}");
		break;
	case STATUS_XML:
		buf_str(pg->o, "<process>");
		statusfmt_xml(pg, w, "");
		buf_str(pg->o, "</process>\n");
		break;
	case STATUS_HTML:
		statusfmt_html_row(pg, w, 0);
		break;
	default:
		buf_str(pg->o, "\n************************\n");
		statusfmt_text(pg, w);
	}
}

void
statusfmt_end(struct statusfmt_page *pg, int full)
{
	if (pg->fmt == STATUS_OPENMETRICS)
		buf_str(pg->o, "# EOF\n");
	else
		buf_str(pg->o, full ? statusfmt_frames[pg->fmt].workers_end :
		    statusfmt_frames[pg->fmt].summary_end);
}
