/*
 * render.c: JSON text for the events API's replies (PURE, worker).
 */
#include "events/render.h"

#include <string.h>
#include <time.h>

#define RENDER_US_PER_S	1000000

void
render_timestamp(struct buf *b, int64_t us)
{
	int64_t secs = us / RENDER_US_PER_S, frac = us % RENDER_US_PER_S;
	struct tm tm;
	time_t t;

	if (frac < 0) {
		frac += RENDER_US_PER_S;
		secs--;
	}
	t = (time_t)secs;
	if (gmtime_r(&t, &tm) == NULL) {
		b->overflow = 1;
		return;
	}
	/* "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", quoted */
	buf_add(b, "\"", 1);
	buf_int(b, (int64_t)tm.tm_year + 1900, 4);
	buf_add(b, "-", 1);
	buf_int(b, tm.tm_mon + 1, 2);
	buf_add(b, "-", 1);
	buf_int(b, tm.tm_mday, 2);
	buf_add(b, "T", 1);
	buf_int(b, tm.tm_hour, 2);
	buf_add(b, ":", 1);
	buf_int(b, tm.tm_min, 2);
	buf_add(b, ":", 1);
	buf_int(b, tm.tm_sec, 2);
	buf_add(b, ".", 1);
	buf_int(b, frac, 6);
	buf_add(b, "Z\"", 2);
}

void
render_event(struct buf *b, const struct store_event *ev)
{
	buf_str(b, "{\"id\":");
	buf_int(b, ev->id, 0);
	buf_str(b, ",\"subject\":");
	buf_json_string(b, ev->subject, ev->subject_len);
	buf_str(b, ",\"kind\":");
	buf_json_string(b, ev->kind, ev->kind_len);
	/* payload is jsonb output: already valid JSON, embedded verbatim. */
	buf_str(b, ",\"payload\":");
	buf_add(b, ev->payload, ev->payload_len);
	buf_str(b, ",\"created_at\":");
	render_timestamp(b, ev->created_us);
	buf_str(b, "}");
}

void
render_claims(struct buf *b, const char *sub, const char *scope)
{
	buf_str(b, "{\"sub\":");
	buf_json_string(b, sub, strlen(sub));
	buf_str(b, ",\"scope\":");
	buf_json_string(b, scope, strlen(scope));
	buf_str(b, "}");
}
