/*
 * render.c: JSON text for the events API's replies (PURE, worker).
 */
#include "events/render.h"

#include <string.h>
#include <time.h>

#define RENDER_US_PER_S	1000000
#define RENDER_INT_MAX	32	/* "-" and 19 digits, or up to this width */

void
render_json_string(struct buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char esc[6] = { '\\', 'u', '0', '0', 0, 0 };
	size_t i, run = 0;
	unsigned char c;

	buf_add(b, "\"", 1);
	for (i = 0; i < n; i++) {
		c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		buf_add(b, s + run, i - run);
		run = i + 1;
		if (c == '"' || c == '\\') {
			esc[1] = (char)c;
			buf_add(b, esc, 2);
			esc[1] = 'u';
		} else {
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			buf_add(b, esc, 6);
		}
	}
	buf_add(b, s + run, n - run);
	buf_add(b, "\"", 1);
}

/*
 * Appends v as printf's "%0*lld" with width would (at least width
 * characters, zeros between the sign and the digits; width below
 * RENDER_INT_MAX): a reply's few numbers without vfprintf, which cost
 * ~4,500 instructions a GET for the id and the timestamp.
 */
static void
render_int(struct buf *b, int64_t v, int width)
{
	char tmp[RENDER_INT_MAX];
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	size_t i = sizeof(tmp);
	int len;

	do {
		tmp[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	len = (int)(sizeof(tmp) - i) + (v < 0);
	for (; len < width; len++)
		tmp[--i] = '0';
	if (v < 0)
		tmp[--i] = '-';
	buf_add(b, tmp + i, sizeof(tmp) - i);
}

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
	render_int(b, (int64_t)tm.tm_year + 1900, 4);
	buf_add(b, "-", 1);
	render_int(b, tm.tm_mon + 1, 2);
	buf_add(b, "-", 1);
	render_int(b, tm.tm_mday, 2);
	buf_add(b, "T", 1);
	render_int(b, tm.tm_hour, 2);
	buf_add(b, ":", 1);
	render_int(b, tm.tm_min, 2);
	buf_add(b, ":", 1);
	render_int(b, tm.tm_sec, 2);
	buf_add(b, ".", 1);
	render_int(b, frac, 6);
	buf_add(b, "Z\"", 2);
}

void
render_event(struct buf *b, const struct store_event *ev)
{
	buf_str(b, "{\"id\":");
	render_int(b, ev->id, 0);
	buf_str(b, ",\"subject\":");
	render_json_string(b, ev->subject, ev->subject_len);
	buf_str(b, ",\"kind\":");
	render_json_string(b, ev->kind, ev->kind_len);
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
	render_json_string(b, sub, strlen(sub));
	buf_str(b, ",\"scope\":");
	render_json_string(b, scope, strlen(scope));
	buf_str(b, "}");
}
