/*
 * statusfmt.h: the status page's five formats (PURE; wherever the page is
 * rendered: status.c). A record is a list of items, each with PHP-FPM's
 * key, a type and a value; status.c says what the pool's record and each
 * worker's hold, and this module writes them as PHP-FPM 8.2 writes that
 * format (sapi/fpm/fpm/fpm_status.c): the same keys in the same order,
 * the same layout and frame, the same number formats, dates as Unix
 * seconds in JSON and XML and as local "%d/%b/%Y:%H:%M:%S %z" in text
 * and HTML. OpenMetrics writes the pool's record as PHP-FPM's metrics and
 * then cfpm's: its names are metric names, not keys.
 *
 * A page is written in order: statusfmt_summary() (the pool), then for a
 * full page statusfmt_workers() and one statusfmt_worker() per worker,
 * then statusfmt_end(). An overflow is the buffer's (buf.h).
 */
#ifndef CFPM_STATUSFMT_H
#define CFPM_STATUSFMT_H

#include <stdint.h>

#include "util/buf.h"

#define STATUSFMT_MAX_ITEMS	40	/* items in one record */

/* The formats, as PHP-FPM picks them from the query (status_parse_query). */
enum status_format {
	STATUS_TEXT = 0,
	STATUS_JSON,
	STATUS_OPENMETRICS,
	STATUS_XML,
	STATUS_HTML,
};

enum statusfmt_type {
	STATUSFMT_STR = 0,	/* text, already escaped by esc_text() */
	STATUSFMT_INT,
	STATUSFMT_CPU,		/* a percentage, two decimals */
	STATUSFMT_TIME,		/* Unix seconds; a date in text and HTML */
};

struct statusfmt_item {
	const char		*prefix; /* a family's name before the key
					   ("responses"), or NULL */
	const char		*key;	/* PHP-FPM's JSON key */
	const char		*text;	/* the text page's key, when not key */
	enum statusfmt_type	 type;
	const char		*str;
	long long		 num;
	double			 cpu;
};

struct statusfmt_rec {
	struct statusfmt_item	 item[STATUSFMT_MAX_ITEMS];
	unsigned		 n;
	const char		*prefix; /* the prefix of the items added */
};

/* A page being written. */
struct statusfmt_page {
	struct buf		*o;
	enum status_format	 fmt;
	/* Local time's offset from UTC at Unix time t, in seconds (NULL:
	 * UTC): the text and HTML dates are local time, as PHP-FPM's. */
	long			(*utc_offset)(int64_t t);
	unsigned		 workers;	/* written so far */
};

/*
 * Starts pg, a page in fmt written to o, with the pool's record (items
 * with its keys: "pool" first, the "responses" and "respawns" families).
 */
void statusfmt_summary(struct statusfmt_page *pg, struct buf *o,
    enum status_format fmt, long (*utc_offset)(int64_t t),
    const struct statusfmt_rec *pool);

/*
 * A full page's list of workers begins; names is any worker's record
 * (its keys are HTML's column headers).
 */
void statusfmt_workers(struct statusfmt_page *pg,
    const struct statusfmt_rec *names);

/*
 * One worker's record (its "pid" item names it), and for OpenMetrics
 * the requests it has finished (the record's count the one in progress
 * too, as PHP-FPM's do).
 */
void statusfmt_worker(struct statusfmt_page *pg,
    const struct statusfmt_rec *w, uint64_t finished);

/* Ends the page: the frame around a summary alone, or around the workers
 * too (full). */
void statusfmt_end(struct statusfmt_page *pg, int full);

#endif
