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

/*
 * A length field of a pair at p[*i] (n bytes in all): 1 when it is
 * complete, with *len set and *i past it; 0 when the bytes ran out
 * inside it (kept in st for the next feed). A length is 1 byte (high bit
 * clear) or 4 (high bit set, 31 bits).
 */
static int
fcgi_pairs_length(struct fcgi_pairs *st, const unsigned char *p, size_t n,
    size_t *i, size_t *len)
{
	const unsigned char *b = p + *i;

	if (st->lenhave == 0 && ((b[0] & 0x80) == 0 || n - *i >= 4)) {
		/* The usual case: the whole field is here. */
		*len = (b[0] & 0x80) == 0 ? b[0] :
		    ((size_t)(b[0] & 0x7f) << 24) | ((size_t)b[1] << 16) |
		    ((size_t)b[2] << 8) | b[3];
		*i += (b[0] & 0x80) == 0 ? 1 : 4;
		return 1;
	}
	while (*i < n) {
		st->lenbuf[st->lenhave++] = p[(*i)++];
		if (st->lenhave == 1 && (st->lenbuf[0] & 0x80) == 0) {
			*len = st->lenbuf[0];
			st->lenhave = 0;
			return 1;
		}
		if (st->lenhave == 4) {
			*len = ((size_t)(st->lenbuf[0] & 0x7f) << 24) |
			    ((size_t)st->lenbuf[1] << 16) |
			    ((size_t)st->lenbuf[2] << 8) | st->lenbuf[3];
			st->lenhave = 0;
			return 1;
		}
	}
	return 0;
}

/* What fcgi_pairs_feed() hands on: one pair, whole in the bytes fed. */
typedef void fcgi_pair_fn(void *arg, const unsigned char *name, size_t nlen,
    const unsigned char *value, size_t vlen);

/*
 * The one name-value pair decoder. Feeds it n more bytes of a stream of
 * pairs, which records and reads may cut anywhere: with pair NULL it
 * only checks them (the scan, a record at a time); with pair set, the
 * caller gives the whole stream at once and each pair is handed to
 * pair(arg, ...) as it is read, pointing into p. Returns 0, -1 on a
 * malformed pair (a name that is empty unless st->empty_names allows it,
 * or with pair set a pair cut short), -2 on a name or value longer than
 * FCGI_MAX_PARAMS.
 */
static int
fcgi_pairs_feed(struct fcgi_pairs *st, const unsigned char *p, size_t n,
    fcgi_pair_fn *pair, void *arg)
{
	size_t i = 0, len, take;

	while (i < n) {
		if (st->field == 2) {
			take = n - i < st->skip ? n - i : st->skip;
			st->skip -= take;
			i += take;
			if (st->skip == 0)
				st->field = 0;
			continue;
		}
		if (!fcgi_pairs_length(st, p, n, &i, &len))
			return 0;
		if (len > FCGI_MAX_PARAMS)
			return -2;
		if (st->field == 0) {
			if (len == 0 && !st->empty_names)
				return -1;
			st->name_len = len;
			st->field = 1;
			continue;
		}
		st->field = 0;
		if (pair == NULL) {
			/* Checked: name and value are only bytes to pass. */
			st->skip = st->name_len + len;
			st->field = st->skip > 0 ? 2 : 0;
			continue;
		}
		if (st->name_len > n - i || len > n - i - st->name_len)
			return -1;		/* the stream ends inside it */
		pair(arg, p + i, st->name_len, p + i + st->name_len, len);
		i += st->name_len + len;
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
		switch (fcgi_pairs_feed(pairs, r->content, r->clen, NULL,
		    NULL)) {
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
 * Whether the record at s->pos, at least size bytes long, ends past
 * FCGI_MAX_REQUEST; if so the verdict is set.
 */
static int
fcgi_scan_past_limit(struct fcgi_scan *s, size_t size)
{
	if (s->pos + size <= FCGI_MAX_REQUEST)
		return 0;
	s->body_too_large = s->stage == 2;
	fcgi_scan_set(s, FCGI_SCAN_TOO_LARGE, "a request over the size limit");
	return 1;
}

/*
 * The records after s->pos, each looked at once: s->pos moves past every
 * whole record taken, so a later call starts where this one stopped. A
 * record is over the limit as soon as its first byte is: a header cut
 * by the end of the bytes is at least a header long, so a reader whose
 * buffer holds FCGI_MAX_REQUEST + 1 bytes never finds it full with the
 * request still PARTIAL.
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
		if (fcgi_scan_past_limit(s, r.size))
			return;
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
	if (n > s->pos)
		(void)fcgi_scan_past_limit(s, FCGI_HEADER_SIZE);
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

/* A whole stream of pairs, each handed to fn: 0, or -1 if it is
 * malformed. FastCGI allows empty names (a request here does not). */
static int
fcgi_pairs_walk(const unsigned char *p, size_t n, int empty_names,
    fcgi_pair_fn *fn, void *arg)
{
	struct fcgi_pairs st;

	memset(&st, 0, sizeof(st));
	st.empty_names = empty_names;
	return fcgi_pairs_feed(&st, p, n, fn, arg) == 0 &&
	    fcgi_pairs_complete(&st) ? 0 : -1;
}

static const char *const fcgi_mgmt_names[FCGI_MGMT_NAMES] = {
	FCGI_MAX_CONNS, FCGI_MAX_REQS, FCGI_MPXS_CONNS,
};

/* GET_VALUES: marks each known name asked for (duplicates once). */
static void
fcgi_mgmt_mark(void *arg, const unsigned char *name, size_t nlen,
    const unsigned char *value, size_t vlen)
{
	int *asked = arg, i;

	(void)value;
	(void)vlen;
	for (i = 0; i < FCGI_MGMT_NAMES; i++)
		if (nlen == strlen(fcgi_mgmt_names[i]) &&
		    memcmp(name, fcgi_mgmt_names[i], nlen) == 0)
			asked[i] = 1;
}

static size_t
fcgi_get_values_result(const struct fcgi_rec *r, unsigned max_conns,
    unsigned char *out)
{
	int asked[FCGI_MGMT_NAMES] = { 0 }, i;
	unsigned char *p = out + FCGI_HEADER_SIZE;
	char value[16];
	size_t nlen, vlen, len;

	if (fcgi_pairs_walk(r->content, r->clen, 1, fcgi_mgmt_mark, asked) ==
	    -1)
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

/* Where one stream of a scanned request goes: its contents, joined. */
struct fcgi_sink {
	unsigned char	*out;
	size_t		 max;
	size_t		 n;
};

/*
 * The contents of a scanned request's FCGI_PARAMS and FCGI_STDIN records,
 * each stream joined in order into its sink (body NULL: the parameters
 * only), up to its max, in one walk over the records: a request sent as
 * thousands of one-byte records costs one pass, and its one-byte records
 * no memcpy call each.
 */
static void
fcgi_streams_copy(const unsigned char *p, const struct fcgi_scan *s,
    struct fcgi_sink *params, struct fcgi_sink *body)
{
	struct fcgi_rec r;
	struct fcgi_sink *to;
	size_t pos;

	for (pos = 0; pos < s->len; pos += r.size) {
		fcgi_rec_decode(p + pos, &r);
		to = r.type == FCGI_PARAMS ? params :
		    r.type == FCGI_STDIN ? body : NULL;
		if (to == NULL || r.clen > to->max - to->n)
			continue;
		if (r.clen == 1)
			to->out[to->n] = r.content[0];
		else
			memcpy(to->out + to->n, r.content, r.clen);
		to->n += r.clen;
	}
}

/*
 * fcgi_params_decode()'s walk: each pair moved to the end of the text
 * decoded so far, with a NUL after its name and one after its value. The
 * text is the encoded bytes being walked: a pair's two length bytes (at
 * least) make room for its two NULs, so what is written never passes
 * the end of the pair just read (memmove: name and value may overlap
 * where they land).
 */
static void
fcgi_params_put(void *arg, const unsigned char *name, size_t nlen,
    const unsigned char *value, size_t vlen)
{
	struct fcgi_params *ps = arg;
	struct fcgi_param *e;
	char *w = ps->text + ps->used;

	if (ps->n == FCGI_MAX_PAIRS)
		return;		/* not with FCGI_MIN_PAIR bytes a pair */
	memmove(w, name, nlen);
	w[nlen] = '\0';
	memmove(w + nlen + 1, value, vlen);
	w[nlen + 1 + vlen] = '\0';
	e = &ps->pair[ps->n++];
	e->name = w;
	e->nlen = (unsigned)nlen;
	e->value = w + nlen + 1;
	e->vlen = (unsigned)vlen;
	ps->used += nlen + vlen + 2;
}

int
fcgi_params_decode(struct fcgi_params *ps, const unsigned char *p,
    size_t len)
{
	unsigned char *text = (unsigned char *)ps->text;

	ps->n = ps->used = 0;
	if (len > sizeof(ps->text))
		return -1;
	if (p != text)
		memmove(text, p, len);
	return fcgi_pairs_walk(text, len, 0, fcgi_params_put, ps);
}

void
fcgi_params_gather(const unsigned char *p, const struct fcgi_scan *s,
    struct fcgi_params *ps)
{
	struct fcgi_sink params = { (unsigned char *)ps->text,
	    s->params_len, 0 };

	fcgi_streams_copy(p, s, &params, NULL);
	(void)fcgi_params_decode(ps, params.out, params.n);
}

const struct fcgi_param *
fcgi_params_get(const struct fcgi_params *ps, const char *name, size_t nlen)
{
	const struct fcgi_param *e, *end = ps->pair + ps->n;

	for (e = ps->pair; e < end; e++)
		if (e->nlen == nlen && memcmp(e->name, name, nlen) == 0)
			return e;
	return NULL;
}

void
fcgi_request_gather(const unsigned char *p, const struct fcgi_scan *s,
    struct fcgi_request *fr)
{
	struct fcgi_sink params = { (unsigned char *)fr->params.text,
	    s->params_len, 0 };
	struct fcgi_sink body = { (unsigned char *)fr->body, s->stdin_len, 0 };

	fr->id = s->id;
	fr->keep_conn = s->keep_conn;
	fr->body_too_large = 0;
	fcgi_streams_copy(p, s, &params, &body);
	(void)fcgi_params_decode(&fr->params, params.out, params.n);
	fr->body_len = body.n;
	fr->body[fr->body_len] = '\0';
}

size_t
fcgi_reply_size(size_t len)
{
	return FCGI_REPLY_SIZE(len);
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
