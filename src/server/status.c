/*
 * status.c: render the status page (PURE; the master serves it, so it
 * answers while every worker is busy).
 */
#include "server/status.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/esc.h"

/* Pool-wide figures derived from the slots, and the totals as read. */
struct status_pool {
	unsigned	idle, active, total;
	struct sb_totals totals;
};

/*
 * The worker stores the client's raw bytes; they are escaped here, on
 * the reader's copy: even a consistent copy is what a client sent, and a
 * torn one (scoreboard.h) mixes two strings, which need not be valid
 * UTF-8 (jansson would drop the record) even if each string was.
 */
void
status_request(const struct sb_view *v, struct status_request *q)
{
	esc_field(q->method, sizeof(q->method), v->req.method,
	    sizeof(v->req.method));
	esc_field(q->uri, sizeof(q->uri), v->req.uri, sizeof(v->req.uri));
}

static int
status_has_word(const char *query, const char *word)
{
	size_t wlen = strlen(word), n;
	const char *p = query;

	while (*p != '\0') {
		n = strcspn(p, "&");
		if ((n == wlen && strncmp(p, word, n) == 0) ||
		    (n > wlen && strncmp(p, word, wlen) == 0 && p[wlen] == '='))
			return 1;
		p += n;
		if (*p == '&')
			p++;
	}
	return 0;
}

void
status_parse_query(const char *query, enum status_format *fmt, int *full)
{
	*fmt = STATUS_TEXT;
	if (status_has_word(query, "json"))
		*fmt = STATUS_JSON;
	else if (status_has_word(query, "openmetrics"))
		*fmt = STATUS_OPENMETRICS;
	*full = status_has_word(query, "full");
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
	default:
		return "text/plain";
	}
}

static void
status_count(const struct status_view *v, struct status_pool *p)
{
	struct sb_view s;
	unsigned i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < v->sb->nslots; i++) {
		if (v->sb->slots[i].master.life == SB_LIFE_FREE)
			continue;
		(void)scoreboard_read(&v->sb->slots[i], &s);
		p->total++;
		if (scoreboard_busy(&s))
			p->active++;
		else if (s.phase == SB_IDLE)
			p->idle++;
	}
	scoreboard_totals(v->sb, &p->totals);
}

static int64_t
status_elapsed_us(const struct status_view *v, const struct sb_view *s)
{
	int64_t start = s->req.start_us;

	return start > 0 && v->now_us > start ? v->now_us - start : 0;
}

static void
text_summary(struct buf *o, const struct status_view *v,
    const struct status_pool *p)
{
	const struct sb_totals *t = &p->totals;
	int i;

	buf_printf(o, "pool:                 %s\n"
	    "process manager:      static\n"
	    "start time:           %lld\n"
	    "start since:          %lld\n"
	    "accepted conn:        %llu\n", v->pool,
	    (long long)t->start_time, (long long)(v->now - t->start_time),
	    (unsigned long long)t->accepted);
	if (v->listen_known)
		buf_printf(o, "listen queue:         %u\n"
		    "max listen queue:     %u\n"
		    "listen queue len:     %u\n", v->listen_queue,
		    t->listen_queue_max, v->listen_queue_len);
	buf_printf(o, "idle processes:       %u\n"
	    "active processes:     %u\n"
	    "total processes:      %u\n"
	    "max active processes: %u\n"
	    "max children reached: %u\n"
	    "slow requests:        %llu\n"
	    "terminated requests:  %llu\n"
	    "generation:           %u\n"
	    "reloads:              %llu\n", p->idle, p->active, p->total,
	    t->max_active, v->max_children_reached,
	    (unsigned long long)t->slow, (unsigned long long)t->terminated,
	    v->generation, (unsigned long long)t->reloads);
	for (i = 1; i <= 5; i++)
		buf_printf(o, "responses %dxx:        %llu\n", i,
		    (unsigned long long)t->by_class[i]);
	for (i = 0; i < SB_REASON_MAX; i++)
		buf_printf(o, "respawns %-12s  %llu\n",
		    scoreboard_reason_name(i),
		    (unsigned long long)t->respawns[i]);
}

static void
text_worker(struct buf *o, const struct status_view *v, unsigned i)
{
	struct status_request q;
	struct sb_view s;

	(void)scoreboard_read(&v->sb->slots[i], &s);	/* escaped below */
	status_request(&s, &q);
	buf_printf(o, "\n************************\n"
	    "pid:                  %d\n"
	    "state:                %s\n"
	    "generation:           %u\n"
	    "start since:          %lld\n"
	    "requests:             %llu\n"
	    "request duration:     %lld\n"
	    "request method:       %s\n"
	    "request URI:          %s\n"
	    "last request status:  %d\n"
	    "last request duration: %lld\n"
	    "last request cpu:     %lld\n"
	    "rss:                  %ld\n"
	    "database:             %s\n", (int)s.master.pid,
	    scoreboard_phase_name(s.phase), s.master.generation,
	    (long long)((v->now_us - s.master.started_us) / 1000000),
	    (unsigned long long)s.req.requests,
	    (long long)status_elapsed_us(v, &s), q.method, q.uri,
	    s.req.last_status, (long long)s.req.last_duration_us,
	    (long long)s.req.last_cpu_us, v->rss_kb[i],
	    s.db_ok ? "ok" : "down");
}

static json_t *
json_worker(const struct status_view *v, unsigned i)
{
	struct status_request q;
	struct sb_view s;

	(void)scoreboard_read(&v->sb->slots[i], &s);	/* escaped below */
	status_request(&s, &q);
	return json_pack("{s:i, s:s, s:i, s:I, s:I, s:I, s:s, s:s, s:i, s:I,"
	    " s:I, s:I, s:s}",
	    "pid", (int)s.master.pid, "state", scoreboard_phase_name(s.phase),
	    "generation", (int)s.master.generation,
	    "start since", (json_int_t)((v->now_us - s.master.started_us) /
	    1000000),
	    "requests", (json_int_t)s.req.requests,
	    "request duration", (json_int_t)status_elapsed_us(v, &s),
	    "request method", q.method, "request uri", q.uri,
	    "last request status", s.req.last_status,
	    "last request duration", (json_int_t)s.req.last_duration_us,
	    "last request cpu", (json_int_t)s.req.last_cpu_us,
	    "rss", (json_int_t)v->rss_kb[i],
	    "database", s.db_ok ? "ok" : "down");
}

static json_t *
json_counters(const struct sb_totals *t)
{
	json_t *classes = json_object(), *respawns = json_object();
	char name[8];
	int i;

	for (i = 1; i <= 5; i++) {
		snprintf(name, sizeof(name), "%dxx", i);
		json_object_set_new(classes, name,
		    json_integer((json_int_t)t->by_class[i]));
	}
	for (i = 0; i < SB_REASON_MAX; i++)
		json_object_set_new(respawns, scoreboard_reason_name(i),
		    json_integer((json_int_t)t->respawns[i]));
	return json_pack("{s:o, s:o}", "responses", classes, "respawns",
	    respawns);
}

static json_t *
json_summary(const struct status_view *v, const struct status_pool *p)
{
	const struct sb_totals *t = &p->totals;
	json_t *root;

	root = json_pack("{s:s, s:s, s:I, s:I, s:I, s:i, s:i, s:i, s:i, s:i,"
	    " s:I, s:I, s:i, s:I}", "pool", v->pool, "process manager",
	    "static", "start time", (json_int_t)t->start_time,
	    "start since", (json_int_t)(v->now - t->start_time),
	    "accepted conn", (json_int_t)t->accepted,
	    "idle processes", (int)p->idle, "active processes", (int)p->active,
	    "total processes", (int)p->total,
	    "max active processes", (int)t->max_active,
	    "max children reached", (int)v->max_children_reached,
	    "slow requests", (json_int_t)t->slow,
	    "terminated requests", (json_int_t)t->terminated,
	    "generation", (int)v->generation,
	    "reloads", (json_int_t)t->reloads);
	if (root == NULL)
		return NULL;
	if (v->listen_known) {
		json_object_set_new(root, "listen queue",
		    json_integer(v->listen_queue));
		json_object_set_new(root, "max listen queue",
		    json_integer(t->listen_queue_max));
		json_object_set_new(root, "listen queue len",
		    json_integer(v->listen_queue_len));
	}
	json_object_update_new(root, json_counters(t));
	return root;
}

static long
status_json(const struct status_view *v, const struct status_pool *p,
    int full, struct buf *o)
{
	json_t *root = json_summary(v, p), *procs;
	unsigned i;
	size_t n;

	if (root == NULL)
		return -1;
	if (full) {
		procs = json_array();
		json_object_set_new(root, "processes", procs);
		/* A record that cannot be built fails the page: a worker
		 * silently missing from it would be a wrong answer. */
		for (i = 0; i < v->sb->nslots; i++)
			if (v->sb->slots[i].master.life != SB_LIFE_FREE &&
			    json_array_append_new(procs,
			    json_worker(v, i)) == -1)
				goto fail;
	}
	n = json_dumpb(root, o->p, o->cap, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (n == 0 || n > o->cap)
		return -1;
	return (long)n;
fail:
	json_decref(root);
	return -1;
}

static void
om_metric(struct buf *o, const char *name, const char *type,
    const char *help, unsigned long long value)
{
	buf_printf(o, "# TYPE cfpm_%s %s\n# HELP cfpm_%s %s\ncfpm_%s%s %llu\n",
	    name, type, name, help, name,
	    strcmp(type, "counter") == 0 ? "_total" : "", value);
}

static void
status_openmetrics(struct buf *o, const struct status_view *v,
    const struct status_pool *p, int full)
{
	const struct sb_totals *t = &p->totals;
	struct sb_view s;
	unsigned i;
	int c;

	om_metric(o, "accepted_connections", "counter", "Requests accepted.",
	    t->accepted);
	om_metric(o, "idle_processes", "gauge", "Idle workers.", p->idle);
	om_metric(o, "active_processes", "gauge", "Busy workers.", p->active);
	om_metric(o, "total_processes", "gauge", "Workers.", p->total);
	om_metric(o, "max_active_processes", "gauge",
	    "Most busy workers seen.", t->max_active);
	om_metric(o, "slow_requests", "counter",
	    "Requests over request_slowlog_timeout.", t->slow);
	om_metric(o, "terminated_requests", "counter",
	    "Requests over request_terminate_timeout.", t->terminated);
	om_metric(o, "reloads", "counter", "Reloads.", t->reloads);
	if (v->listen_known) {
		om_metric(o, "listen_queue", "gauge", "Connections waiting.",
		    v->listen_queue);
		om_metric(o, "max_listen_queue", "gauge",
		    "Most connections waiting.", t->listen_queue_max);
		om_metric(o, "listen_queue_length", "gauge",
		    "Listen backlog.", v->listen_queue_len);
	}
	buf_printf(o, "# TYPE cfpm_responses counter\n"
	    "# HELP cfpm_responses Responses by status class.\n");
	for (c = 1; c <= 5; c++)
		buf_printf(o, "cfpm_responses_total{class=\"%dxx\"} %llu\n", c,
		    (unsigned long long)t->by_class[c]);
	buf_printf(o, "# TYPE cfpm_respawns counter\n"
	    "# HELP cfpm_respawns Workers replaced, by reason.\n");
	for (c = 0; c < SB_REASON_MAX; c++)
		buf_printf(o, "cfpm_respawns_total{reason=\"%s\"} %llu\n",
		    scoreboard_reason_name(c),
		    (unsigned long long)t->respawns[c]);
	if (full) {
		buf_printf(o, "# TYPE cfpm_worker_requests counter\n"
		    "# HELP cfpm_worker_requests Requests per worker.\n");
		for (i = 0; i < v->sb->nslots; i++) {
			if (v->sb->slots[i].master.life == SB_LIFE_FREE)
				continue;
			(void)scoreboard_read(&v->sb->slots[i], &s);
			buf_printf(o, "cfpm_worker_requests_total"
			    "{pid=\"%d\"} %llu\n", (int)s.master.pid,
			    (unsigned long long)s.req.requests);
		}
	}
	buf_printf(o, "# EOF\n");
}

long
status_render(const struct status_view *v, enum status_format fmt,
    int full, char *buf, size_t len)
{
	struct buf o;
	struct status_pool p;
	unsigned i;

	buf_init(&o, buf, len);
	status_count(v, &p);
	if (fmt == STATUS_JSON)
		return status_json(v, &p, full, &o);
	if (fmt == STATUS_OPENMETRICS)
		status_openmetrics(&o, v, &p, full);
	else {
		text_summary(&o, v, &p);
		for (i = 0; full && i < v->sb->nslots; i++)
			if (v->sb->slots[i].master.life != SB_LIFE_FREE)
				text_worker(&o, v, i);
	}
	return o.overflow ? -1 : (long)o.len;
}
