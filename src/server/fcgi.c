/*
 * fcgi.c: FastCGI record scanning, management answers and reply framing
 * (PURE; see fcgi.h). Only the protocol's constants come from fastcgi.h;
 * no libfcgi code runs here.
 */
#include "server/fcgi.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <fastcgi.h>

#define FCGI_BEGIN_BODY		8	/* FCGI_BeginRequestBody's size */
#define FCGI_MGMT_NAMES		3	/* names GET_VALUES can ask for */

/* One record header, decoded. */
struct fcgi_rec {
	int		type;
	unsigned	id;
	size_t		clen;		/* content bytes */
	size_t		size;		/* header + content + padding */
	const unsigned char *content;
};

static void
fcgi_rec_decode(const unsigned char *h, struct fcgi_rec *r)
{
	r->type = h[1];
	r->id = (unsigned)h[2] << 8 | h[3];
	r->clen = (size_t)h[4] << 8 | h[5];
	r->size = FCGI_HEADER_SIZE + r->clen + h[6];
	r->content = h + FCGI_HEADER_SIZE;
}

/* A length field of a pair: *done when complete, with *len set. */
static void
fcgi_pairs_length(struct fcgi_pairs *st, unsigned char c, size_t *len,
    int *done)
{
	*done = 0;
	st->lenbuf[st->lenhave++] = c;
	if (st->lenhave == 1 && (c & 0x80) == 0) {
		*len = c;
		*done = 1;
	} else if (st->lenhave == 4) {
		*len = ((size_t)(st->lenbuf[0] & 0x7f) << 24) |
		    ((size_t)st->lenbuf[1] << 16) |
		    ((size_t)st->lenbuf[2] << 8) | st->lenbuf[3];
		*done = 1;
	}
	if (*done)
		st->lenhave = 0;
}

/*
 * Feeds n content bytes of a PARAMS stream: 0, -1 on a malformed pair,
 * -2 on a name or value longer than FCGI_MAX_PARAMS.
 */
static int
fcgi_pairs_feed(struct fcgi_pairs *st, const unsigned char *p, size_t n)
{
	size_t i = 0, len, take;
	int done;

	while (i < n) {
		if (st->field >= 2) {
			take = n - i < st->skip ? n - i : st->skip;
			st->skip -= take;
			i += take;
			if (st->skip == 0 && st->field == 2) {
				st->field = 3;
				st->skip = st->value_len;
			}
			if (st->skip == 0 && st->field == 3)
				st->field = 0;
			continue;
		}
		fcgi_pairs_length(st, p[i++], &len, &done);
		if (!done)
			continue;
		if (len > FCGI_MAX_PARAMS)
			return -2;
		if (st->field == 0) {
			if (len == 0)
				return -1;	/* an empty name */
			st->skip = len;
			st->field = 1;
		} else {
			st->value_len = len;
			st->field = 2;
		}
	}
	return 0;
}

/* At the end of a PARAMS stream: no pair may be left unfinished. */
static int
fcgi_pairs_complete(const struct fcgi_pairs *st)
{
	return st->field == 0 && st->lenhave == 0;
}

static void
fcgi_scan_set(struct fcgi_scan *s, enum fcgi_scan_status status,
    const char *why)
{
	s->status = status;
	s->why = why;
}

/* The BEGIN_REQUEST record; returns 0, or -1 with s set. */
static int
fcgi_scan_begin(const struct fcgi_rec *r, struct fcgi_scan *s)
{
	if (r->type != FCGI_BEGIN_REQUEST) {
		fcgi_scan_set(s, FCGI_SCAN_INVALID,
		    "the first record is not FCGI_BEGIN_REQUEST");
		return -1;
	}
	if (r->clen != FCGI_BEGIN_BODY) {
		fcgi_scan_set(s, FCGI_SCAN_INVALID,
		    "FCGI_BEGIN_REQUEST of the wrong length");
		return -1;
	}
	if (((unsigned)r->content[0] << 8 | r->content[1]) != FCGI_RESPONDER) {
		fcgi_scan_set(s, FCGI_SCAN_INVALID,
		    "a role other than responder");
		return -1;
	}
	s->id = r->id;
	s->keep_conn = (r->content[2] & FCGI_KEEP_CONN) != 0;
	return 0;
}

/*
 * One record of the request after BEGIN. *stage is 1 in the parameters,
 * 2 in the body. Returns 1 at the request's end, 0 to go on, -1 with s
 * set.
 */
static int
fcgi_scan_stream(const struct fcgi_rec *r, int *stage, struct fcgi_pairs *pairs,
    struct fcgi_scan *s)
{
	int want = *stage == 1 ? FCGI_PARAMS : FCGI_STDIN;

	if (r->id != s->id) {
		fcgi_scan_set(s, FCGI_SCAN_INVALID, r->id == 0 ?
		    "a management record inside a request" :
		    "a second request id on one connection");
		return -1;
	}
	if (r->type != want) {
		fcgi_scan_set(s, FCGI_SCAN_INVALID, *stage == 1 ?
		    "a record other than FCGI_PARAMS in the parameters" :
		    "a record other than FCGI_STDIN in the body");
		return -1;
	}
	if (*stage == 1 && r->clen == 0) {
		if (!fcgi_pairs_complete(pairs)) {
			fcgi_scan_set(s, FCGI_SCAN_INVALID,
			    "a name-value pair cut short");
			return -1;
		}
		*stage = 2;
		return 0;
	}
	if (r->clen == 0)
		return 1;
	if (*stage == 1) {
		s->params_len += r->clen;
		if (s->params_len > FCGI_MAX_PARAMS) {
			fcgi_scan_set(s, FCGI_SCAN_TOO_LARGE,
			    "parameters over the limit");
			return -1;
		}
		switch (fcgi_pairs_feed(pairs, r->content, r->clen)) {
		case -1:
			fcgi_scan_set(s, FCGI_SCAN_INVALID,
			    "a malformed name-value pair");
			return -1;
		case -2:
			fcgi_scan_set(s, FCGI_SCAN_TOO_LARGE,
			    "a parameter over the limit");
			return -1;
		}
		return 0;
	}
	s->stdin_len += r->clen;
	if (s->stdin_len > FCGI_MAX_STDIN) {
		s->body_too_large = 1;
		fcgi_scan_set(s, FCGI_SCAN_TOO_LARGE, "a body over the limit");
		return -1;
	}
	return 0;
}

void
fcgi_scan_start(struct fcgi_scan *s)
{
	memset(s, 0, sizeof(*s));
	s->status = FCGI_SCAN_PARTIAL;
}

/*
 * The records after s->pos, each looked at once: s->pos moves past every
 * whole record taken, so a later call starts where this one stopped.
 */
void
fcgi_scan_more(const unsigned char *p, size_t n, struct fcgi_scan *s)
{
	struct fcgi_rec r;
	int rc;

	if (s->status != FCGI_SCAN_PARTIAL)
		return;		/* a verdict is final */
	while (n - s->pos >= FCGI_HEADER_SIZE) {
		if (p[s->pos] != FCGI_VERSION_1) {
			fcgi_scan_set(s, FCGI_SCAN_INVALID,
			    "a record of an unknown version");
			return;
		}
		fcgi_rec_decode(p + s->pos, &r);
		if (s->pos + r.size > FCGI_MAX_REQUEST) {
			s->body_too_large = s->stage == 2;
			fcgi_scan_set(s, FCGI_SCAN_TOO_LARGE,
			    "a request over the size limit");
			return;
		}
		if (n - s->pos < r.size)
			return;		/* the record is not all here yet */
		if (s->stage == 0 && r.id == 0) {
			s->len = r.size;
			fcgi_scan_set(s, FCGI_SCAN_MANAGEMENT, NULL);
			return;
		}
		if (s->stage == 0) {
			rc = fcgi_scan_begin(&r, s);
			s->stage = 1;
		} else
			rc = fcgi_scan_stream(&r, &s->stage, &s->pairs, s);
		if (rc == -1)
			return;
		s->pos += r.size;
		if (rc == 1) {
			s->len = s->pos;
			fcgi_scan_set(s, FCGI_SCAN_REQUEST, NULL);
			return;
		}
	}
}

void
fcgi_scan(const unsigned char *p, size_t n, struct fcgi_scan *s)
{
	fcgi_scan_start(s);
	fcgi_scan_more(p, n, s);
}

int
fcgi_scan_same(const struct fcgi_scan *a, const struct fcgi_scan *b)
{
	return a->status == b->status && a->len == b->len && a->id == b->id &&
	    a->keep_conn == b->keep_conn && a->params_len == b->params_len &&
	    a->stdin_len == b->stdin_len &&
	    a->body_too_large == b->body_too_large && a->why == b->why;
}

size_t
fcgi_scan_conn(const unsigned char *p, size_t n, struct fcgi_scan *s,
    int *mgmt, int (*answer)(void *, const unsigned char *, size_t),
    void *arg)
{
	size_t off = 0;

	for (;;) {
		fcgi_scan_more(p + off, n - off, s);
		if (s->status != FCGI_SCAN_MANAGEMENT)
			return off;
		if (++*mgmt > FCGI_MAX_MGMT_RECORDS) {
			fcgi_scan_set(s, FCGI_SCAN_INVALID,
			    "too many management records");
			return off;
		}
		if (answer(arg, p + off, s->len) == -1) {
			fcgi_scan_set(s, FCGI_SCAN_INVALID,
			    "a management record it could not answer");
			return off;
		}
		off += s->len;
		fcgi_scan_start(s);
	}
}

int
fcgi_trickle_next(struct fcgi_trickle *t, size_t n)
{
	int longer = t->wait_ms >= FCGI_TRICKLE_MAX_MS / 2 ?
	    FCGI_TRICKLE_MAX_MS : 2 * t->wait_ms;

	if (n >= FCGI_TRICKLE_BYTES) {
		memset(t, 0, sizeof(*t));
		return 0;
	}
	if (t->wait_ms == 0)
		t->wait_ms = FCGI_TRICKLE_MIN_MS;
	else if (n < FCGI_TRICKLE_TINY) {
		t->wait_ms = longer;	/* slow: waiting costs it nothing */
		t->settled = 0;
	} else if (!t->settled && n >= t->last + t->last / 2)
		t->wait_ms = longer;	/* the wait still brings more */
	else if (!t->settled) {
		/* No more for a doubled wait: its buffer was full. */
		t->wait_ms = t->wait_ms / 2 > FCGI_TRICKLE_FLOOR_MS ?
		    t->wait_ms / 2 : FCGI_TRICKLE_FLOOR_MS;
		t->settled = 1;
	}
	t->last = n;
	return t->wait_ms;
}

void
fcgi_header(unsigned char *h, int type, unsigned id, size_t len)
{
	h[0] = FCGI_VERSION_1;
	h[1] = (unsigned char)type;
	h[2] = (unsigned char)(id >> 8);
	h[3] = (unsigned char)id;
	h[4] = (unsigned char)(len >> 8);
	h[5] = (unsigned char)len;
	h[6] = h[7] = 0;
}

/* Walks well-formed pairs: calls fn for each; stops when fn returns 1. */
static int
fcgi_pairs_walk(const unsigned char *p, size_t n,
    int (*fn)(const unsigned char *, size_t, const unsigned char *, size_t,
    void *), void *arg)
{
	size_t i = 0, len[2];
	int k;

	while (i < n) {
		for (k = 0; k < 2; k++) {
			if (i >= n)
				return -1;
			if ((p[i] & 0x80) == 0)
				len[k] = p[i++];
			else {
				if (n - i < 4)
					return -1;
				len[k] = ((size_t)(p[i] & 0x7f) << 24) |
				    ((size_t)p[i + 1] << 16) |
				    ((size_t)p[i + 2] << 8) | p[i + 3];
				i += 4;
			}
		}
		if (len[0] > n - i || len[1] > n - i - len[0])
			return -1;
		if (fn(p + i, len[0], p + i + len[0], len[1], arg))
			return 0;
		i += len[0] + len[1];
	}
	return 0;
}

static const char *const fcgi_mgmt_names[FCGI_MGMT_NAMES] = {
	FCGI_MAX_CONNS, FCGI_MAX_REQS, FCGI_MPXS_CONNS,
};

/* GET_VALUES: marks each known name asked for (duplicates once). */
static int
fcgi_mgmt_mark(const unsigned char *name, size_t nlen,
    const unsigned char *value, size_t vlen, void *arg)
{
	int *asked = arg, i;

	(void)value;
	(void)vlen;
	for (i = 0; i < FCGI_MGMT_NAMES; i++)
		if (nlen == strlen(fcgi_mgmt_names[i]) &&
		    memcmp(name, fcgi_mgmt_names[i], nlen) == 0)
			asked[i] = 1;
	return 0;
}

static size_t
fcgi_get_values_result(const struct fcgi_rec *r, unsigned max_conns,
    unsigned char *out)
{
	int asked[FCGI_MGMT_NAMES] = { 0 }, i;
	unsigned char *p = out + FCGI_HEADER_SIZE;
	char value[16];
	size_t nlen, vlen, len;

	if (fcgi_pairs_walk(r->content, r->clen, fcgi_mgmt_mark, asked) == -1)
		return 0;
	for (i = 0; i < FCGI_MGMT_NAMES; i++) {
		if (!asked[i])
			continue;
		vlen = (size_t)snprintf(value, sizeof(value), "%u",
		    i == 2 ? 0 : max_conns);
		nlen = strlen(fcgi_mgmt_names[i]);
		*p++ = (unsigned char)nlen;
		*p++ = (unsigned char)vlen;
		memcpy(p, fcgi_mgmt_names[i], nlen);
		memcpy(p + nlen, value, vlen);
		p += nlen + vlen;
	}
	len = (size_t)(p - out) - FCGI_HEADER_SIZE;
	fcgi_header(out, FCGI_GET_VALUES_RESULT, 0, len);
	return FCGI_HEADER_SIZE + len;
}

size_t
fcgi_management_reply(const unsigned char *rec, size_t len,
    unsigned max_conns, unsigned char *out)
{
	struct fcgi_rec r;

	if (len < FCGI_HEADER_SIZE)
		return 0;
	fcgi_rec_decode(rec, &r);
	if (r.size > len)
		return 0;
	if (r.type == FCGI_GET_VALUES)
		return fcgi_get_values_result(&r, max_conns, out);
	/* FCGI_UnknownTypeBody: the type, then 7 reserved bytes. */
	fcgi_header(out, FCGI_UNKNOWN_TYPE, 0, 8);
	memset(out + FCGI_HEADER_SIZE, 0, 8);
	out[FCGI_HEADER_SIZE] = (unsigned char)r.type;
	return FCGI_HEADER_SIZE + 8;
}

/* The contents of one stream's records, in order, up to max bytes. */
static size_t
fcgi_stream_copy(const unsigned char *p, const struct fcgi_scan *s, int type,
    unsigned char *out, size_t max)
{
	struct fcgi_rec r;
	size_t pos = 0, n = 0;

	while (pos < s->len) {
		fcgi_rec_decode(p + pos, &r);
		if (r.type == type && n + r.clen <= max) {
			memcpy(out + n, r.content, r.clen);
			n += r.clen;
		}
		pos += r.size;
	}
	return n;
}

size_t
fcgi_params_copy(const unsigned char *p, const struct fcgi_scan *s,
    unsigned char *out)
{
	return fcgi_stream_copy(p, s, FCGI_PARAMS, out, s->params_len);
}

void
fcgi_request_gather(const unsigned char *p, const struct fcgi_scan *s,
    unsigned char *params, unsigned char *body, struct fcgi_request *fr)
{
	fr->id = s->id;
	fr->keep_conn = s->keep_conn;
	fr->params = params;
	fr->params_len = fcgi_params_copy(p, s, params);
	fr->body = body;
	fr->body_len = fcgi_stream_copy(p, s, FCGI_STDIN, body, s->stdin_len);
}

struct fcgi_lookup {
	const char		*name;
	const unsigned char	*value;
	size_t			 vlen;
};

static int
fcgi_lookup_one(const unsigned char *name, size_t nlen,
    const unsigned char *value, size_t vlen, void *arg)
{
	struct fcgi_lookup *l = arg;

	if (nlen != strlen(l->name) || memcmp(name, l->name, nlen) != 0)
		return 0;
	l->value = value;
	l->vlen = vlen;
	return 1;
}

const unsigned char *
fcgi_param(const unsigned char *params, size_t len, const char *name,
    size_t *vlen)
{
	struct fcgi_lookup l = { name, NULL, 0 };

	(void)fcgi_pairs_walk(params, len, fcgi_lookup_one, &l);
	*vlen = l.vlen;
	return l.value;
}

size_t
fcgi_reply_size(size_t len)
{
	size_t records = (len + FCGI_MAX_CONTENT - 1) / FCGI_MAX_CONTENT;

	/* The body's records, the empty STDOUT, END_REQUEST with body. */
	return len + (records + 3) * FCGI_HEADER_SIZE;
}

size_t
fcgi_reply(unsigned id, const char *head, size_t hlen, const char *body,
    size_t blen, unsigned char *out)
{
	unsigned char *p = out;
	size_t chunk, from_head;

	while (hlen + blen > 0) {
		chunk = hlen + blen < FCGI_MAX_CONTENT ? hlen + blen :
		    FCGI_MAX_CONTENT;
		fcgi_header(p, FCGI_STDOUT, id, chunk);
		p += FCGI_HEADER_SIZE;
		from_head = chunk < hlen ? chunk : hlen;
		memcpy(p, head, from_head);
		head += from_head;
		hlen -= from_head;
		if (chunk > from_head) {
			memcpy(p + from_head, body, chunk - from_head);
			body += chunk - from_head;
			blen -= chunk - from_head;
		}
		p += chunk;
	}
	fcgi_header(p, FCGI_STDOUT, id, 0);
	p += FCGI_HEADER_SIZE;
	fcgi_header(p, FCGI_END_REQUEST, id, 8);
	/* FCGI_EndRequestBody: appStatus 0, complete, reserved. */
	memset(p + FCGI_HEADER_SIZE, 0, 8);
	p[FCGI_HEADER_SIZE + 4] = FCGI_REQUEST_COMPLETE;
	p += 2 * FCGI_HEADER_SIZE;
	return (size_t)(p - out);
}

size_t
fcgi_release(unsigned id, unsigned char *out)
{
	fcgi_header(out, FCGI_STDERR, id, 0);
	return FCGI_RELEASE_SIZE;
}

size_t
fcgi_refusal(const struct fcgi_scan *s, unsigned char *out)
{
	static const char body413[] = "Status: 413 Payload Too Large\r\n"
	    "Content-Type: application/json\r\nContent-Length: 29\r\n\r\n"
	    "{\"error\":\"payload_too_large\"}";
	static const char body400[] = "Status: 400 Bad Request\r\n"
	    "Content-Type: application/json\r\nContent-Length: 27\r\n\r\n"
	    "{\"error\":\"invalid_request\"}";
	const char *body = s->body_too_large ? body413 : body400;

	return fcgi_reply(s->id, body, strlen(body), NULL, 0, out);
}
