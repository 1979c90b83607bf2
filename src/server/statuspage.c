/*
 * statuspage.c: the status page's answer, for the master's status socket
 * and the workers' pool socket (statuspage.h). Reads /proc and the
 * clock; the page itself is status.c's (pure).
 */
#include "server/statuspage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"

/* A worker's resident size now and at its peak, from /proc/PID/status
 * (-1 for what cannot be read). */
static void
statuspage_mem(pid_t pid, struct status_mem *mem)
{
	char path[64], line[128];
	FILE *f;

	mem->rss_kb = mem->peak_kb = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmHWM: %ld", &mem->peak_kb) != 1)
			(void)sscanf(line, "VmRSS: %ld", &mem->rss_kb);
	fclose(f);
}

/* Local time's offset from UTC at t (the status page's text dates). */
static long
statuspage_utc_offset(int64_t t)
{
	time_t when = (time_t)t;
	struct tm tm;

	return localtime_r(&when, &tm) != NULL ? tm.tm_gmtoff : 0;
}

int
statuspage_view(struct status_view *v, const struct scoreboard *sb,
    const char *pool, unsigned generation, unsigned queued, unsigned limit)
{
	/* One per slot, this process's: the scoreboard never grows. */
	static struct status_mem *mem;
	struct sb_view s;
	unsigned i;

	if (mem == NULL && (mem = calloc(sb->nslots, sizeof(*mem))) == NULL)
		return -1;
	memset(v, 0, sizeof(*v));
	for (i = 0; i < sb->nslots; i++)
		mem[i].rss_kb = mem[i].peak_kb = -1;
	SCOREBOARD_FOREACH_LIVE(sb, i) {
		(void)scoreboard_read(&sb->slots[i], &s);
		if (s.master.pid > 0)
			statuspage_mem(s.master.pid, &mem[i]);
	}
	v->pool = pool;
	v->sb = sb;
	v->mem = mem;
	v->generation = generation;
	v->listen_queue = queued;
	v->listen_queue_len = limit;
	v->now = (int64_t)time(NULL);
	v->now_us = clock_now_us();
	v->utc_offset = statuspage_utc_offset;
	return 0;
}

int
statuspage_answer(struct http_answer *ans, const struct config *cfg,
    const struct http_route *q, int (*fill)(struct status_view *, void *),
    void *arg, char *page, size_t cap)
{
	enum status_format fmt;
	struct status_view v;
	int full;
	long n;

	if (cfg->status_path[0] == '\0' ||
	    !http_span_is(q->path, q->path_len, cfg->status_path))
		return 0;
	if (!http_span_is(q->method, q->method_len, "GET") &&
	    !http_span_is(q->method, q->method_len, "HEAD")) {
		http_answer_not_allowed(ans, "GET, HEAD");
		return 1;
	}
	status_parse_query(q->query, q->query_len, &fmt, &full);
	if (fill(&v, arg) == -1 ||
	    (n = status_render(&v, fmt, full, page, cap)) < 0) {
		http_answer_error(ans, 500, "server_error", NULL);
		return 1;
	}
	ans->status = 200;
	ans->content_type = status_content_type(fmt);
	ans->headers = HTTP_NO_CACHE;	/* PHP-FPM's */
	ans->body = page;
	ans->len = (size_t)n;
	return 1;
}
