/*
 * status.h: the pool status page, PHP-FPM's (the master on the status
 * socket, a worker on the pool socket: statuspage.h).
 * PURE: renders a view of the live scoreboard (each slot copied as the
 * page reaches it: scoreboard_read(), not a snapshot of the pool at one
 * instant) in PHP-FPM 8.2's formats (text, JSON, XML, HTML, OpenMetrics:
 * statusfmt.h), with every key PHP-FPM has under its name, type and
 * meaning, and optionally one record per worker ("full"). cfpm's own figures (its phase, generation,
 * database state, responses by class, respawns by reason, reloads) come
 * after PHP-FPM's keys, as more keys: never instead of one, and each a
 * scalar under a flat key of its own, in JSON too ("responses 2xx"), so
 * that no object but PHP-FPM's processes array nests in the page.
 */
#ifndef CFPM_STATUS_H
#define CFPM_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include "util/esc.h"
#include "server/scoreboard.h"
#include "server/statusfmt.h"

#define STATUS_MAX_REPLY	(512 * 1024)	/* rendered page limit */

/* A worker's memory, read from /proc by the page's process (-1 unknown). */
struct status_mem {
	long	rss_kb;		/* resident now (VmRSS) */
	long	peak_kb;	/* resident at its peak (VmHWM) */
};

/*
 * Everything the page shows: the scoreboard itself, read as the page is
 * rendered, and what statuspage_view() gathered just before (memory, the
 * listen queue's sample, the clocks).
 */
struct status_view {
	const char		*pool;
	const struct scoreboard	*sb;
	const struct status_mem	*mem;		/* per slot */
	unsigned		 generation;
	unsigned		 listen_queue;	/* 0 when unknown, as PHP-FPM */
	unsigned		 listen_queue_len;
	int64_t			 now;		/* Unix seconds */
	int64_t			 now_us;	/* monotonic */
	/* Local time's offset from UTC at Unix time t, in seconds: the
	 * text and HTML dates are local time, as PHP-FPM's. */
	long			(*utc_offset)(int64_t t);
};

/* A slot's request method and URI as the page and the logs show them. */
struct status_request {
	char	method[ESC_SIZE(SCOREBOARD_METHOD_LEN)];
	char	uri[ESC_SIZE(SCOREBOARD_URI_LEN)];
};

/*
 * PURE. Fills q with the viewed slot's method and URI escaped by
 * esc_field() (esc.h): what a client sent cannot forge a line or break
 * the JSON.
 */
void status_request(const struct sb_view *v, struct status_request *q);

/*
 * PURE. The format and "full" from a query string (len bytes, not
 * NUL-terminated), as PHP-FPM reads them from $_GET: a flag is a key of
 * the query, whatever its value ("json", "json=0", "full[]=1", "%6Ason"
 * all count); html wins over xml, xml over json, json over openmetrics,
 * and without any of them the page is text.
 */
void status_parse_query(const char *query, size_t len,
    enum status_format *fmt, int *full);

/* The Content-Type PHP-FPM sends for fmt. */
const char *status_content_type(enum status_format fmt);

/*
 * PURE. PHP-FPM's name for a worker's state, from cfpm's phase: Idle,
 * Reading headers, Running (checking the token, waiting for the
 * database), Finishing (making the reply, then sending it: a worker
 * whose client reads slowly shows here, never Idle), Ending (leaving after its
 * last request); Starting before its first wait for a connection, which
 * PHP-FPM has no name for.
 */
const char *status_state_name(int phase);

/*
 * PURE. Renders v into buf (len bytes). Returns the length, or -1 if it
 * does not fit.
 */
long status_render(const struct status_view *v, enum status_format fmt,
    int full, char *buf, size_t len);

#endif
