/*
 * fuzz_fcgi.c: libFuzzer target for the FastCGI record scanner
 * (src/fcgi.c): fcgi_scan() on every prefix length the input's first
 * byte picks and on the whole input, fcgi_management_reply() on what it
 * calls management, fcgi_request_gather()/fcgi_params_get() on what it
 * calls a request. The bytes are in a copy that ends right before an unmapped
 * page, so a read past the end faults.
 *
 * Invariants (abort() if broken): a verdict's length never exceeds the
 * bytes given; a REQUEST's sizes are within FCGI_MAX_PARAMS and
 * FCGI_MAX_STDIN and its id is not 0; a management answer fits in
 * FCGI_MAX_MGMT_REPLY; a prefix of a REQUEST or MANAGEMENT input is
 * PARTIAL or the same verdict (a verdict never depends on bytes after the
 * end it reports); a gathered request's pairs are decoded within the
 * bytes the scan counted, each name not empty, name and value
 * NUL-terminated, a lookup finds the first of its name, and its body has
 * the length the scan counted; a scan resumed at split
 * points the input's second and later bytes pick (fcgi_scan_more), and
 * one resumed byte by byte, reach the same verdict as the scan from the
 * start.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/fcgi.h"
#include "fuzz.h"

static void
check_request(const unsigned char *p, const struct fcgi_scan *s)
{
	static const char *const names[] = { "REQUEST_METHOD", "REQUEST_URI",
	    "SCRIPT_NAME", "QUERY_STRING", "" };
	static struct fcgi_request *fr;
	const struct fcgi_params *ps;
	const struct fcgi_param *e, *v;
	size_t i, k;

	if (s->id == 0 || s->params_len > FCGI_MAX_PARAMS ||
	    s->stdin_len > FCGI_MAX_STDIN)
		abort();
	if (fr == NULL && (fr = malloc(sizeof(*fr))) == NULL)
		abort();
	fcgi_request_gather(p, s, fr);
	ps = &fr->params;
	if (ps->used > s->params_len || fr->body_len != s->stdin_len ||
	    fr->body[fr->body_len] != '\0')
		abort();
	for (i = 0; i < ps->n; i++) {
		e = &ps->pair[i];
		if (e->nlen == 0 || e->name < ps->text ||
		    e->value + e->vlen >= ps->text + ps->used ||
		    e->name[e->nlen] != '\0' || e->value[e->vlen] != '\0')
			abort();
	}
	for (k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		v = fcgi_params_get(ps, names[k], strlen(names[k]));
		for (i = 0; i < ps->n; i++)
			if (ps->pair[i].nlen == strlen(names[k]) &&
			    memcmp(ps->pair[i].name, names[k],
			    ps->pair[i].nlen) == 0)
				break;
		if (v != (i < ps->n ? &ps->pair[i] : NULL))
			abort();
	}
}

/* Resumed scans of p against s, the scan of all of it from the start. */
static void
check_resume(const unsigned char *p, size_t size, const struct fcgi_scan *s)
{
	struct fcgi_scan r;
	size_t n = 0, i;

	fcgi_scan_start(&r);
	for (i = 1; i < size && n < size; i++) {
		n += p[i];	/* a split every 0..255 bytes */
		fcgi_scan_more(p, n < size ? n : size, &r);
	}
	fcgi_scan_more(p, size, &r);
	if (!fcgi_scan_same(&r, s))
		abort();
	fcgi_scan_start(&r);
	for (n = 0; n <= size; n++)
		fcgi_scan_more(p, n, &r);
	if (!fcgi_scan_same(&r, s))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char reply[FCGI_MAX_MGMT_REPLY];
	struct fcgi_scan s, t;
	struct fuzz_guard g;
	const unsigned char *p;
	size_t cut;

	p = (const unsigned char *)fuzz_guard_copy(data, size, &g);
	fcgi_scan(p, size, &s);
	if (s.len > size)
		abort();
	if (s.status == FCGI_SCAN_MANAGEMENT &&
	    fcgi_management_reply(p, s.len, 64, reply) > FCGI_MAX_MGMT_REPLY)
		abort();
	if (s.status == FCGI_SCAN_REQUEST)
		check_request(p, &s);
	check_resume(p, size, &s);
	if (s.status == FCGI_SCAN_REQUEST || s.status == FCGI_SCAN_MANAGEMENT) {
		/* The verdict stands on its own bytes. */
		fcgi_scan(p, s.len, &t);
		if (t.status != s.status || t.len != s.len)
			abort();
		cut = size > 0 ? p[0] % s.len : 0;
		fcgi_scan(p, cut, &t);
		if (t.status != FCGI_SCAN_PARTIAL && t.status != s.status)
			abort();
	}
	fuzz_guard_free(&g);
	return 0;
}
