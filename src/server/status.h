/*
 * status.h: the pool status page in PHP-FPM's vocabulary (master).
 * PURE: renders a snapshot the master assembles from the scoreboard into
 * text, JSON or OpenMetrics, optionally with one record per worker.
 */
#ifndef CFPM_STATUS_H
#define CFPM_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include "util/esc.h"
#include "server/scoreboard.h"

#define STATUS_MAX_REPLY	(512 * 1024)	/* rendered page limit */

enum status_format {
	STATUS_TEXT = 0,
	STATUS_JSON,
	STATUS_OPENMETRICS,
};

/* Everything the page shows, gathered by the master at one moment. */
struct status_view {
	const char		*pool;
	const struct scoreboard	*sb;
	const long		*rss_kb;	/* per slot, -1 unknown */
	unsigned		 generation;
	int			 listen_known;	/* queue figures valid */
	unsigned		 listen_queue;
	unsigned		 listen_queue_len;
	unsigned		 max_children_reached;
	int64_t			 now;		/* Unix seconds */
	int64_t			 now_us;	/* monotonic */
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

/* Reads the format and "full" from a query string ("json&full"). */
void status_parse_query(const char *query, enum status_format *fmt,
    int *full);

/* The Content-Type for fmt. */
const char *status_content_type(enum status_format fmt);

/*
 * Renders v into buf (len bytes). Returns the length, or -1 if it does
 * not fit or JSON could not be built.
 */
long status_render(const struct status_view *v, enum status_format fmt,
    int full, char *buf, size_t len);

#endif
