/*
 * test_fcgi.c: the FastCGI record scanner, management answers and reply
 * framing (src/fcgi.c), on hand-built record streams: every prefix of a
 * good request, every kind of violation, the limits on both sides, the
 * FCGI_GET_VALUES record that overflows libfcgi's buffer, a request
 * gathered for serving and the record that releases a kept connection;
 * and a scan that keeps its place (fcgi_scan_more, fcgi_scan_conn): for
 * every split of a set of streams, and byte by byte, the same verdict as
 * one scan from the start; and the pace a trickling client is read at
 * (fcgi_trickle_next).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fastcgi.h>

#include "server/fcgi.h"
#include "tap.h"

#define T_MAX	(FCGI_MAX_REQUEST + 4 * FCGI_MAX_RECORD)

struct stream {
	unsigned char	*p;
	size_t		 len;
};

static void
put(struct stream *s, int type, unsigned id, const void *content,
    size_t clen, unsigned pad)
{
	unsigned char *h;

	if (s->len + FCGI_HEADER_SIZE + clen + pad > T_MAX)
		abort();
	h = s->p + s->len;
	fcgi_header(h, type, id, clen);
	h[6] = (unsigned char)pad;
	if (clen > 0)
		memcpy(h + FCGI_HEADER_SIZE, content, clen);
	memset(h + FCGI_HEADER_SIZE + clen, 0xee, pad);
	s->len += FCGI_HEADER_SIZE + clen + pad;
}

static void
put_begin(struct stream *s, unsigned id, int role, int flags)
{
	unsigned char b[8] = { (unsigned char)(role >> 8), (unsigned char)role,
	    (unsigned char)flags, 0, 0, 0, 0, 0 };

	put(s, FCGI_BEGIN_REQUEST, id, b, sizeof(b), 0);
}

/* A name-value pair; lengths over 127 take 4 bytes. */
static size_t
pair(unsigned char *out, const char *name, size_t nlen, const char *value,
    size_t vlen)
{
	unsigned char *p = out;
	size_t lens[2] = { nlen, vlen }, i;

	for (i = 0; i < 2; i++) {
		if (lens[i] < 128)
			*p++ = (unsigned char)lens[i];
		else {
			*p++ = (unsigned char)(0x80 | lens[i] >> 24);
			*p++ = (unsigned char)(lens[i] >> 16);
			*p++ = (unsigned char)(lens[i] >> 8);
			*p++ = (unsigned char)lens[i];
		}
	}
	memcpy(p, name, nlen);
	memcpy(p + nlen, value, vlen);
	return (size_t)(p - out) + nlen + vlen;
}

static size_t
std_params(unsigned char *out)
{
	size_t n = 0;

	n += pair(out + n, "REQUEST_METHOD", 14, "GET", 3);
	n += pair(out + n, "REQUEST_URI", 11, "/status?json&full", 17);
	n += pair(out + n, "SCRIPT_NAME", 11, "/status", 7);
	return n;
}

/* name's pair in the len bytes of pairs at p, decoded
 * (fcgi_params_decode), or NULL. Valid until the next call. */
static const struct fcgi_param *
lookup(const unsigned char *p, size_t len, const char *name)
{
	static struct fcgi_params *ps;

	if (ps == NULL && (ps = malloc(sizeof(*ps))) == NULL)
		abort();
	if (fcgi_params_decode(ps, p, len) == -1)
		return NULL;
	return fcgi_params_get(ps, name, strlen(name));
}

/* 1 if ps holds exactly the pairs encoded in the len bytes at p. */
static int
same_pairs(const struct fcgi_params *ps, const unsigned char *p,
    size_t len)
{
	struct fcgi_params *want = malloc(sizeof(*want));
	size_t i;
	int same;

	if (want == NULL)
		abort();
	same = fcgi_params_decode(want, p, len) == 0 && want->n == ps->n;
	for (i = 0; same && i < ps->n; i++)
		same = ps->pair[i].nlen == want->pair[i].nlen &&
		    ps->pair[i].vlen == want->pair[i].vlen &&
		    memcmp(ps->pair[i].name, want->pair[i].name,
		    ps->pair[i].nlen + 1) == 0 &&
		    memcmp(ps->pair[i].value, want->pair[i].value,
		    ps->pair[i].vlen + 1) == 0;
	free(want);
	return same;
}

/* BEGIN, the params (split in records of chunk bytes), body, ends. */
static void
request(struct stream *s, unsigned id, const unsigned char *params,
    size_t plen, size_t chunk, const char *body, size_t blen)
{
	size_t i, n;

	put_begin(s, id, FCGI_RESPONDER, 0);
	for (i = 0; i < plen; i += n) {
		n = plen - i < chunk ? plen - i : chunk;
		put(s, FCGI_PARAMS, id, params + i, n, (unsigned)(i % 7));
	}
	put(s, FCGI_PARAMS, id, NULL, 0, 0);
	for (i = 0; i < blen; i += n) {
		n = blen - i < FCGI_MAX_CONTENT ? blen - i : FCGI_MAX_CONTENT;
		put(s, FCGI_STDIN, id, body + i, n, 0);
	}
	put(s, FCGI_STDIN, id, NULL, 0, 0);
}

static enum fcgi_scan_status
scan(const struct stream *s, struct fcgi_scan *r)
{
	fcgi_scan(s->p, s->len, r);
	return r->status;
}

static void
test_good_request(struct stream *s)
{
	unsigned char params[256];
	struct fcgi_scan r;
	size_t plen = std_params(params), cut, bad = 0, chunk;

	for (chunk = 1; chunk <= plen; chunk += (chunk < 8 ? 1 : 17)) {
		s->len = 0;
		request(s, 7, params, plen, chunk, "{\"a\":1}", 7);
		is_int(scan(s, &r), FCGI_SCAN_REQUEST,
		    "a request with parameters in %zu-byte records is whole",
		    chunk);
	}
	ok(r.len == s->len && r.id == 7 && r.params_len == plen &&
	    r.stdin_len == 7 && !r.keep_conn, "its length, id and sizes");
	for (cut = 0; cut < s->len; cut++) {
		fcgi_scan(s->p, cut, &r);
		if (r.status != FCGI_SCAN_PARTIAL)
			bad++;
	}
	is_int(bad, 0, "every proper prefix of it is PARTIAL (%zu prefixes)",
	    s->len);
	/* Bytes after the request are not looked at. */
	memcpy(s->p + s->len, "\x09junk", 5);
	fcgi_scan(s->p, s->len + 5, &r);
	ok(r.status == FCGI_SCAN_REQUEST && r.len == s->len,
	    "bytes after the request do not change it");
	s->len = 0;
	put_begin(s, 1, FCGI_RESPONDER, FCGI_KEEP_CONN);
	put(s, FCGI_PARAMS, 1, NULL, 0, 0);
	put(s, FCGI_STDIN, 1, NULL, 0, 0);
	ok(scan(s, &r) == FCGI_SCAN_REQUEST && r.keep_conn &&
	    r.params_len == 0, "no parameters, FCGI_KEEP_CONN: whole, kept");
}

static void
expect_invalid(struct stream *s, const char *what)
{
	struct fcgi_scan r;
	enum fcgi_scan_status st = scan(s, &r);

	ok(st == FCGI_SCAN_INVALID && r.why != NULL,
	    "%s: INVALID (%s)", what, r.why ? r.why : "no reason");
}

/* A record of a violation case; type 0 ends the list. */
struct t_rec {
	int		 type;
	unsigned	 id;
	const char	*content;	/* "@" for the standard parameters */
	size_t		 clen;
};

#define T_ROLE(r)	"\0" r "\0\0\0\0\0\0"

/* begun: the case follows a good BEGIN_REQUEST. */
static const struct {
	const char	*what;
	int		 begun;
	struct t_rec	 recs[3];
} t_violations[] = {
	{ "PARAMS before BEGIN_REQUEST", 0, { { FCGI_PARAMS, 1, "@", 0 } } },
	{ "a 6-byte BEGIN_REQUEST", 0,
	    { { FCGI_BEGIN_REQUEST, 1, "\0\1\0\0\0\0", 6 } } },
	{ "role authorizer", 0, { { FCGI_BEGIN_REQUEST, 1, T_ROLE("\2"), 8 } } },
	{ "role filter", 0, { { FCGI_BEGIN_REQUEST, 1, T_ROLE("\3"), 8 } } },
	{ "a second BEGIN_REQUEST (multiplexing)", 1,
	    { { FCGI_BEGIN_REQUEST, 2, T_ROLE("\1"), 8 } } },
	{ "parameters of another request id", 1,
	    { { FCGI_PARAMS, 2, "@", 0 } } },
	{ "a management record after BEGIN_REQUEST", 1,
	    { { FCGI_GET_VALUES, 0, "", 0 } } },
	{ "STDIN before the parameters ended", 1,
	    { { FCGI_STDIN, 1, "x", 1 } } },
	{ "PARAMS after their end", 1,
	    { { FCGI_PARAMS, 1, "", 0 }, { FCGI_PARAMS, 1, "@", 0 } } },
	{ "FCGI_DATA in the body", 1,
	    { { FCGI_PARAMS, 1, "", 0 }, { FCGI_DATA, 1, "x", 1 } } },
	{ "FCGI_ABORT_REQUEST", 1, { { FCGI_ABORT_REQUEST, 1, "", 0 } } },
	{ "a pair cut short at the end of the parameters", 1,
	    { { FCGI_PARAMS, 1, "\x05\x01" "ABC", 5 },
	    { FCGI_PARAMS, 1, "", 0 } } },
	{ "a pair with an empty name", 1,
	    { { FCGI_PARAMS, 1, "\x00\x01X", 3 } } },
	{ "a 4-byte length cut by the end of the parameters", 1,
	    { { FCGI_PARAMS, 1, "\x81\x00", 2 }, { FCGI_PARAMS, 1, "", 0 } } },
};

/* Violation case i in s, the standard parameters' record padded by pad. */
static void
put_violation(struct stream *s, size_t i, const unsigned char *params,
    size_t plen, unsigned pad)
{
	const struct t_rec *r;
	size_t k;

	s->len = 0;
	if (t_violations[i].begun)
		put_begin(s, 1, FCGI_RESPONDER, 0);
	for (k = 0; k < 3 && t_violations[i].recs[k].type != 0; k++) {
		r = &t_violations[i].recs[k];
		if (strcmp(r->content, "@") == 0)
			put(s, r->type, r->id, params, plen, pad);
		else
			put(s, r->type, r->id, r->content, r->clen, 0);
	}
}

static void
test_violations(struct stream *s)
{
	unsigned char params[256];
	size_t plen = std_params(params), i;

	s->len = 0;
	request(s, 1, params, plen, 64, NULL, 0);
	s->p[0] = 0;
	expect_invalid(s, "version 0");
	s->p[0] = 2;
	expect_invalid(s, "version 2");
	for (i = 0; i < sizeof(t_violations) / sizeof(t_violations[0]); i++) {
		put_violation(s, i, params, plen, 0);
		expect_invalid(s, t_violations[i].what);
	}
}

/*
 * A record whose header starts in the last bytes below FCGI_MAX_REQUEST
 * ends past it: with the FCGI_MAX_REQUEST + 1 bytes a worker's buffer
 * holds, the cut header is TOO_LARGE, never PARTIAL (a full buffer that
 * waits for more reads nothing, which looked like the client leaving).
 */
static void
test_limit_inside_header(struct stream *s)
{
	struct fcgi_scan r;
	size_t cut;

	for (cut = 1; cut < FCGI_HEADER_SIZE; cut++) {
		s->len = 0;
		put_begin(s, 1, FCGI_RESPONDER, 0);
		put(s, FCGI_PARAMS, 1, NULL, 0, 0);
		while (s->len + 16 + 24 <= FCGI_MAX_REQUEST)
			put(s, FCGI_STDIN, 1, "x", 1, 7);
		put(s, FCGI_STDIN, 1, "x", 1,
		    (unsigned)(FCGI_MAX_REQUEST - cut - s->len - 9));
		put(s, FCGI_STDIN, 1, "x", 1, 7);
		s->len = FCGI_MAX_REQUEST + 1;
		scan(s, &r);
		if (r.status != FCGI_SCAN_TOO_LARGE || !r.body_too_large)
			break;
	}
	ok(cut == FCGI_HEADER_SIZE, "a header that starts 1 to 7 bytes "
	    "below FCGI_MAX_REQUEST, cut by the end of a full buffer: "
	    "TOO_LARGE, the body's fault (stopped at %zu)", cut);
	s->len = 0;
	put_begin(s, 1, FCGI_RESPONDER, 0);
	put(s, FCGI_PARAMS, 1, NULL, 0, 0);
	while (s->len + 16 + 24 <= FCGI_MAX_REQUEST)
		put(s, FCGI_STDIN, 1, "x", 1, 7);
	put(s, FCGI_STDIN, 1, "x", 1,
	    (unsigned)(FCGI_MAX_REQUEST - FCGI_HEADER_SIZE - s->len - 9));
	put(s, FCGI_STDIN, 1, NULL, 0, 0);
	ok(s->len == FCGI_MAX_REQUEST && scan(s, &r) == FCGI_SCAN_REQUEST,
	    "a request whose last header ends it at exactly FCGI_MAX_REQUEST "
	    "bytes: whole");
}

static void
test_transport_limits(struct stream *s)
{
	static char big[(FCGI_MAX_PARAMS > FCGI_MAX_STDIN ? FCGI_MAX_PARAMS :
	    FCGI_MAX_STDIN) + 1];
	unsigned char *params = malloc(FCGI_MAX_PARAMS + 16);
	struct fcgi_scan r;
	size_t plen;

	memset(big, 'b', sizeof(big));
	/* Parameters of exactly FCGI_MAX_PARAMS bytes, then one more. */
	plen = pair(params, "X", 1, big, FCGI_MAX_PARAMS - 6);
	s->len = 0;
	request(s, 1, params, plen, FCGI_MAX_CONTENT, NULL, 0);
	ok(plen == FCGI_MAX_PARAMS && scan(s, &r) == FCGI_SCAN_REQUEST,
	    "parameters of exactly FCGI_MAX_PARAMS bytes: whole");
	plen = pair(params, "X", 1, big, FCGI_MAX_PARAMS - 5);
	s->len = 0;
	request(s, 1, params, plen, FCGI_MAX_CONTENT, NULL, 0);
	ok(scan(s, &r) == FCGI_SCAN_TOO_LARGE && !r.body_too_large &&
	    r.id == 1, "one byte more: TOO_LARGE, not the body's fault");
	s->len = 0;
	put_begin(s, 3, FCGI_RESPONDER, 0);
	put(s, FCGI_PARAMS, 3, "\x01\xff\xff\xff\xff", 5, 0);
	ok(scan(s, &r) == FCGI_SCAN_TOO_LARGE && r.id == 3,
	    "a value length of 2^31-1 is TOO_LARGE before any value byte");
	plen = std_params(params);
	s->len = 0;
	request(s, 1, params, plen, 64, big, FCGI_MAX_STDIN);
	ok(scan(s, &r) == FCGI_SCAN_REQUEST && r.stdin_len == FCGI_MAX_STDIN,
	    "a body of exactly FCGI_MAX_STDIN bytes: whole");
	s->len = 0;
	request(s, 1, params, plen, 64, big, FCGI_MAX_STDIN + 1);
	ok(scan(s, &r) == FCGI_SCAN_TOO_LARGE && r.body_too_large,
	    "one byte more: TOO_LARGE, the body's fault");
	/* Many tiny records with full padding: raw size, not content. */
	s->len = 0;
	put_begin(s, 1, FCGI_RESPONDER, 0);
	put(s, FCGI_PARAMS, 1, NULL, 0, 0);
	while (s->len + 264 <= FCGI_MAX_REQUEST)
		put(s, FCGI_STDIN, 1, "x", 1, 255);
	put(s, FCGI_STDIN, 1, "x", 1, 255);
	scan(s, &r);
	ok(r.status == FCGI_SCAN_TOO_LARGE && r.stdin_len < 2048,
	    "padding past FCGI_MAX_REQUEST raw bytes is TOO_LARGE "
	    "(%zu body bytes)", r.stdin_len);
	test_limit_inside_header(s);
	free(params);
}

/* The record that smashes libfcgi 2.4.2's 64-byte stack buffer. */
static void
test_management(struct stream *s)
{
	unsigned char content[FCGI_MAX_CONTENT], out[FCGI_MAX_MGMT_REPLY];
	unsigned char *params = malloc(256);
	struct fcgi_scan r;
	size_t n = 0, len;
	const struct fcgi_param *v;
	int i;

	while (n + 16 <= sizeof(content))
		n += pair(content + n, FCGI_MAX_CONNS, 14, "", 0);
	s->len = 0;
	put(s, FCGI_GET_VALUES, 0, content, n, 0);
	request(s, 1, params, std_params(params), 64, NULL, 0);
	scan(s, &r);	/* before ok(): its arguments read r */
	ok(r.status == FCGI_SCAN_MANAGEMENT &&
	    r.len == FCGI_HEADER_SIZE + n,
	    "GET_VALUES first: MANAGEMENT, its own length (%zu)", r.len);
	len = fcgi_management_reply(s->p, r.len, 32, out);
	ok(len > FCGI_HEADER_SIZE && len <= FCGI_MAX_MGMT_REPLY &&
	    out[1] == FCGI_GET_VALUES_RESULT,
	    "%zu x FCGI_MAX_CONNS: one GET_VALUES_RESULT of %zu bytes",
	    n / 16, len);
	v = lookup(out + FCGI_HEADER_SIZE, len - FCGI_HEADER_SIZE,
	    FCGI_MAX_CONNS);
	ok(v != NULL && v->vlen == 2 && memcmp(v->value, "32", 2) == 0 &&
	    len == FCGI_HEADER_SIZE + 2 + 14 + 2,
	    "it names FCGI_MAX_CONNS once, value 32");
	fcgi_scan(s->p + r.len, s->len - r.len, &r);
	ok(r.status == FCGI_SCAN_REQUEST, "the request after it is whole");
	n = 0;
	for (i = 0; i < 300; i++)
		n += pair(content + n, i % 3 == 0 ? FCGI_MAX_REQS : i % 3 == 1 ?
		    FCGI_MPXS_CONNS : "OTHER_NAME", i % 3 == 1 ? 15 : i % 3 ?
		    10 : 13, "", 0);
	s->len = 0;
	put(s, FCGI_GET_VALUES, 0, content, n, 3);
	len = fcgi_management_reply(s->p, s->len, 5, out);
	ok(len == FCGI_HEADER_SIZE + (2 + 13 + 1) + (2 + 15 + 1) &&
	    (v = lookup(out + 8, len - 8, FCGI_MPXS_CONNS)) &&
	    v->vlen == 1 && v->value[0] == '0', "all three names mixed, "
	    "repeated: MAX_REQS 5 and MPXS_CONNS 0 once each (%zu bytes)",
	    len);
	s->len = 0;
	put(s, FCGI_GET_VALUES, 0, "\x0e\x05" FCGI_MAX_CONNS, 16, 0);
	ok(fcgi_management_reply(s->p, s->len, 5, out) == 0,
	    "a GET_VALUES pair cut short: no answer (close)");
	s->len = 0;
	put(s, 77, 0, "xyz", 3, 5);
	ok(scan(s, &r) == FCGI_SCAN_MANAGEMENT &&
	    fcgi_management_reply(s->p, r.len, 5, out) == 16 &&
	    out[1] == FCGI_UNKNOWN_TYPE && out[8] == 77,
	    "an unknown management type: FCGI_UNKNOWN_TYPE naming it");
	free(params);
}

static void
test_params_and_reply(struct stream *s)
{
	unsigned char params[256], out[512];
	struct fcgi_params *ps = malloc(sizeof(*ps));
	const struct fcgi_param *v;
	struct fcgi_scan r;
	size_t plen = std_params(params), len;

	s->len = 0;
	request(s, 9, params, plen, 5, NULL, 0);
	scan(s, &r);
	fcgi_params_gather(s->p, &r, ps);
	ok(ps->n == 3 && same_pairs(ps, params, plen),
	    "params_gather joins 5-byte records back together");
	v = fcgi_params_get(ps, "REQUEST_URI", 11);
	ok(v && v->vlen == 17 && strcmp(v->value, "/status?json&full") == 0,
	    "fcgi_params_get finds REQUEST_URI");
	ok(fcgi_params_get(ps, "REQUEST", 7) == NULL &&
	    fcgi_params_get(ps, "SCRIPT_NAMEX", 12) == NULL,
	    "a prefix or a longer name is not a match");
	len = fcgi_reply(9, "Status: 200 OK\r\n\r\n", 18, "pong", 4, out);
	ok(len == fcgi_reply_size(22) && len == 22 + 4 * FCGI_HEADER_SIZE &&
	    out[1] == FCGI_STDOUT && out[3] == 9 && out[5] == 22 &&
	    memcmp(out + 8, "Status: 200 OK\r\n\r\npong", 22) == 0 &&
	    out[30 + 1] == FCGI_STDOUT && out[30 + 5] == 0 &&
	    out[38 + 1] == FCGI_END_REQUEST && out[38 + 5] == 8,
	    "fcgi_reply: STDOUT, empty STDOUT, END_REQUEST");
	free(ps);
}

/* A request gathered for serving: params and a body split over records
 * (with padding) come back whole; the keep-conn flag is carried. */
static void
test_gather(struct stream *s)
{
	unsigned char params[256], body[FCGI_MAX_STDIN];
	struct fcgi_request *fr = malloc(sizeof(*fr));
	struct fcgi_scan r;
	size_t plen = std_params(params), i;

	for (i = 0; i < sizeof(body); i++)
		body[i] = (unsigned char)(i * 7);
	s->len = 0;
	request(s, 1, params, plen, 3, (const char *)body, sizeof(body));
	s->p[FCGI_HEADER_SIZE + 2] = FCGI_KEEP_CONN;	/* BEGIN's flags */
	ok(scan(s, &r) == FCGI_SCAN_REQUEST && r.keep_conn,
	    "gather: a keep-conn request with a body at FCGI_MAX_STDIN is whole");
	fcgi_request_gather(s->p, &r, fr);
	ok(fr->id == 1 && fr->keep_conn && same_pairs(&fr->params, params,
	    plen), "gather: id, keep-conn, the parameters joined from 3-byte "
	    "records");
	ok(fr->body_len == sizeof(body) &&
	    memcmp(fr->body, body, sizeof(body)) == 0 &&
	    fr->body[sizeof(body)] == '\0',
	    "gather: the body joined from its 2 FCGI_STDIN records");
	s->len = 0;
	request(s, 2, params, plen, plen, NULL, 0);
	scan(s, &r);
	fcgi_request_gather(s->p, &r, fr);
	ok(fr->id == 2 && !fr->keep_conn && fr->body_len == 0,
	    "gather: no body, keep-conn not asked");
	free(fr);
}

/* The release record: an empty FCGI_STDERR of the request's id. */
static void
test_release_record(void)
{
	unsigned char out[FCGI_RELEASE_SIZE + 1];
	static const unsigned char want[] = { FCGI_VERSION_1, FCGI_STDERR, 0,
	    1, 0, 0, 0, 0 };

	out[FCGI_RELEASE_SIZE] = 0x5a;
	ok(fcgi_release(1, out) == FCGI_RELEASE_SIZE &&
	    memcmp(out, want, sizeof(want)) == 0 &&
	    out[FCGI_RELEASE_SIZE] == 0x5a,
	    "release: one empty FCGI_STDERR record of id 1, nothing more");
}

static void
test_large_reply(void)
{
	size_t blen = 3 * FCGI_MAX_CONTENT + 10, len, pos = 0, got = 0;
	char *body = malloc(blen);
	unsigned char *out = malloc(fcgi_reply_size(blen + 5));
	int records = 0, same = 1;

	memset(body, 'z', blen);
	len = fcgi_reply(2, "head:", 5, body, blen, out);
	while (pos < len && out[pos + 1] == FCGI_STDOUT) {
		size_t c = (size_t)out[pos + 4] << 8 | out[pos + 5];

		if (c == 0)
			break;
		same &= memcmp(out + pos + 8 + (got == 0 ? 5 : 0),
		    body, c - (got == 0 ? 5 : 0)) == 0;
		got += c;
		records++;
		pos += 8 + c;
	}
	ok(len == fcgi_reply_size(blen + 5) && records == 4 &&
	    got == blen + 5 && same,
	    "a reply over 3 records' worth: 4 full-content records, all bytes");
	free(body);
	free(out);
}


/*
 * The stream scanned from the start, against: resumed after every single
 * split point, resumed byte by byte, and resumed at a few random points
 * at once. Returns the number of resumptions that disagreed.
 */
static size_t t_streams;	/* streams resume_disagreements() saw */

static size_t
resume_disagreements(const struct stream *s, unsigned seed, size_t *tries)
{
	struct fcgi_scan whole, r;
	size_t k, n, bad = 0;
	int round;

	t_streams++;
	fcgi_scan(s->p, s->len, &whole);
	for (k = 0; k <= s->len; k++) {
		fcgi_scan_start(&r);
		fcgi_scan_more(s->p, k, &r);
		fcgi_scan_more(s->p, s->len, &r);
		bad += !fcgi_scan_same(&r, &whole);
		++*tries;
	}
	fcgi_scan_start(&r);
	for (k = 0; k <= s->len; k++)
		fcgi_scan_more(s->p, k, &r);
	bad += !fcgi_scan_same(&r, &whole);
	++*tries;
	srandom(seed);
	for (round = 0; round < 64; round++) {
		fcgi_scan_start(&r);
		for (n = 0; n < s->len; n += (size_t)random() % 23)
			fcgi_scan_more(s->p, n, &r);
		fcgi_scan_more(s->p, s->len, &r);
		bad += !fcgi_scan_same(&r, &whole);
		++*tries;
	}
	return bad;
}

/* The streams a resumed scan is held to: good, bad, large, management. */
static void
test_resumed_scan(struct stream *s)
{
	unsigned char params[256], mgmt[64];
	size_t plen = std_params(params), tries = 0, bad = 0, chunk, i, k;

	for (chunk = 1; chunk <= plen; chunk += chunk < 4 ? 1 : 29) {
		s->len = 0;
		request(s, 5, params, plen, chunk, "{\"k\":\"v\"}", 9);
		bad += resume_disagreements(s, (unsigned)chunk, &tries);
	}
	memcpy(s->p + s->len, "\x01\x05\x00\x05junk", 8);
	s->len += 8;
	bad += resume_disagreements(s, 1, &tries);	/* bytes after it */
	for (i = 0; i < sizeof(t_violations) / sizeof(t_violations[0]); i++) {
		put_violation(s, i, params, plen, 3);
		bad += resume_disagreements(s, (unsigned)i, &tries);
	}
	s->len = 0;
	put_begin(s, 2, FCGI_RESPONDER, 0);
	put(s, FCGI_PARAMS, 2, "\x01\xff\xff\xff\xff", 5, 0);
	bad += resume_disagreements(s, 7, &tries);	/* too large */
	s->len = 0;
	k = pair(mgmt, FCGI_MAX_CONNS, 14, "", 0);
	put(s, FCGI_GET_VALUES, 0, mgmt, k, 2);
	request(s, 1, params, plen, 11, NULL, 0);
	bad += resume_disagreements(s, 9, &tries);	/* management first */
	is_int(bad, 0, "resumed scans agree with scans from the start "
	    "(%zu resumptions of %zu streams, every split and byte by byte)",
	    tries, t_streams);
}

/* fcgi_scan_conn()'s answers, counted; fails past fail_after. */
struct t_answers {
	int	n, fail_after;
	size_t	bytes;
};

static int
t_answer(void *arg, const unsigned char *rec, size_t len)
{
	struct t_answers *a = arg;

	if (rec[0] != FCGI_VERSION_1 || rec[2] != 0 || rec[3] != 0)
		return -1;	/* not a management record */
	a->bytes += len;
	return ++a->n > a->fail_after ? -1 : 0;
}

/*
 * A connection's scan: management records in front answered once each,
 * their bytes handed back to drop, then the request, whether its bytes
 * come at once or a byte at a time (the caller drops what is answered,
 * as conn.c and admin.c do).
 */
static void
test_scan_conn(struct stream *s)
{
	unsigned char params[256], *buf = malloc(T_MAX);
	size_t plen = std_params(params), have, n, off, mlen;
	struct t_answers a = { 0, 100, 0 };
	struct fcgi_scan r;
	int mgmt = 0, i, whole_ok = 1;

	s->len = 0;
	for (i = 0; i < 3; i++)
		put(s, FCGI_GET_VALUES, 0, "\x0e\x00" FCGI_MAX_CONNS, 16, 0);
	mlen = s->len;
	request(s, 4, params, plen, 7, "{}", 2);
	fcgi_scan_start(&r);
	off = fcgi_scan_conn(s->p, s->len, &r, &mgmt, t_answer, &a);
	ok(off == mlen && a.n == 3 && mgmt == 3 && a.bytes == mlen &&
	    r.status == FCGI_SCAN_REQUEST && r.len == s->len - mlen &&
	    r.id == 4, "scan_conn: 3 management records answered and "
	    "handed back (%zu bytes), then the request", off);
	/* Byte by byte, dropping what was answered. */
	a.n = 0;
	mgmt = 0;
	have = 0;
	fcgi_scan_start(&r);
	for (n = 0; n < s->len; n++) {
		buf[have++] = s->p[n];
		off = fcgi_scan_conn(buf, have, &r, &mgmt, t_answer, &a);
		memmove(buf, buf + off, have - off);
		have -= off;
		if (r.status != FCGI_SCAN_PARTIAL && n + 1 < s->len)
			whole_ok = 0;
	}
	ok(whole_ok && a.n == 3 && r.status == FCGI_SCAN_REQUEST &&
	    r.len == have && have == s->len - mlen,
	    "scan_conn byte by byte: the same answers, the same request");
	a.n = 0;
	a.fail_after = 1;
	mgmt = 0;
	fcgi_scan_start(&r);
	(void)fcgi_scan_conn(s->p, s->len, &r, &mgmt, t_answer, &a);
	ok(r.status == FCGI_SCAN_INVALID && r.why != NULL && a.n == 2,
	    "scan_conn: an answer that fails ends it: INVALID (%s)",
	    r.why ? r.why : "no reason");
	s->len = 0;
	for (i = 0; i <= FCGI_MAX_MGMT_RECORDS; i++)
		put(s, FCGI_GET_VALUES, 0, NULL, 0, 0);
	a.n = 0;
	a.fail_after = 100;
	mgmt = 0;
	fcgi_scan_start(&r);
	(void)fcgi_scan_conn(s->p, s->len, &r, &mgmt, t_answer, &a);
	ok(r.status == FCGI_SCAN_INVALID && a.n == FCGI_MAX_MGMT_RECORDS,
	    "scan_conn: %d management records answered, the next one ends "
	    "it (%s)", FCGI_MAX_MGMT_RECORDS, r.why ? r.why : "no reason");
	free(buf);
}

/*
 * The pace of reads for a trickling client, against a model of one: it
 * sends rate bytes per ms into a socket that holds at most cap bytes,
 * and the reader reads whatever is there after each wait, or when
 * nothing is, waits for the next byte (poll). Returns the reads needed
 * for want bytes (or until ms_max has passed), and sets *ms to the time
 * it took.
 */
static unsigned
trickle_model(double rate, double cap, double want, double ms_max,
    double *ms)
{
	struct fcgi_trickle t = { 0, 0, 0 };
	double now = 0, sent_at = 0, queued, got = 0;
	unsigned reads = 0;
	int wait = 0;

	while (got < want && now < ms_max) {
		now += wait > 0 ? wait : 1;
		/* What it could send since the last read, up to cap. */
		queued = (now - sent_at) * rate;
		if (queued < 1) {	/* nothing yet: poll for a byte */
			now = sent_at + 1 / rate;
			queued = 1;
		}
		if (queued > cap)
			queued = cap;
		if (queued > want - got)
			queued = want - got;
		sent_at = now;
		got += queued;
		reads++;
		wait = fcgi_trickle_next(&t, (size_t)queued);
	}
	*ms = now;
	return reads;
}

static void
test_trickle_pace(void)
{
	struct fcgi_trickle t = { 0, 0, 0 };
	unsigned reads;
	double ms;
	int w, i;

	is_int(fcgi_trickle_next(&t, 16), FCGI_TRICKLE_MIN_MS,
	    "trickle: the first small read waits FCGI_TRICKLE_MIN_MS");
	w = fcgi_trickle_next(&t, 2);
	is_int(w, 2 * FCGI_TRICKLE_MIN_MS, "trickle: a tiny read doubles it");
	for (i = 0; i < 20; i++)
		w = fcgi_trickle_next(&t, 1);
	is_int(w, FCGI_TRICKLE_MAX_MS, "trickle: up to FCGI_TRICKLE_MAX_MS, "
	    "no further");
	is_int(fcgi_trickle_next(&t, FCGI_TRICKLE_BYTES), 0,
	    "trickle: a read of FCGI_TRICKLE_BYTES starts over: no wait");
	memset(&t, 0, sizeof(t));
	(void)fcgi_trickle_next(&t, 40);
	(void)fcgi_trickle_next(&t, 70);	/* 2 ms: it grew */
	w = fcgi_trickle_next(&t, 70);		/* 4 ms brought no more */
	is_int(w, FCGI_TRICKLE_FLOOR_MS, "trickle: a doubled wait that "
	    "brought no more settles, at FCGI_TRICKLE_FLOOR_MS at least");
	is_int(fcgi_trickle_next(&t, 70), FCGI_TRICKLE_FLOOR_MS,
	    "trickle: and stays there while reads fill the sender's buffer");
	/* Models: what a request of 17,000 bytes costs in reads. */
	reads = trickle_model(1000, 70, 17000, 10000, &ms);
	ok(reads <= 17000 / 70 + 8 && ms <= 17000 / 70 * FCGI_TRICKLE_FLOOR_MS
	    + 100, "trickle: a fast sender whose buffer holds 70 one-byte "
	    "sends: %u reads (the fewest: %d), %.0f ms", reads, 17000 / 70,
	    ms);
	reads = trickle_model(2, 1e9, 17000, 10000, &ms);
	ok(reads <= 17000 / FCGI_TRICKLE_TINY / 2 + 16 && ms < 9000,
	    "trickle: a sender of 2 bytes a ms: %u reads in %.0f ms "
	    "(not slowed: it sends for 8500 ms)", reads, ms);
	reads = trickle_model(0.01, 1e9, 17000, 10000, &ms);
	ok(reads <= 10000 / FCGI_TRICKLE_MAX_MS + 16, "trickle: a byte every "
	    "100 ms: %u reads over a 10 s deadline", reads);
	reads = trickle_model(1000, 278, 1e9, 10000, &ms);
	ok(reads <= 10000 / FCGI_TRICKLE_FLOOR_MS + 16, "trickle: however it "
	    "sends, at most one read per FCGI_TRICKLE_FLOOR_MS once settled: "
	    "%u reads over 10 s", reads);
}

int
main(void)
{
	struct stream s;

	s.p = malloc(T_MAX);
	s.len = 0;
	test_good_request(&s);
	test_violations(&s);
	test_transport_limits(&s);
	test_management(&s);
	test_params_and_reply(&s);
	test_gather(&s);
	test_release_record();
	test_large_reply();
	test_resumed_scan(&s);
	test_scan_conn(&s);
	test_trickle_pace();
	free(s.p);
	return done_testing();
}
