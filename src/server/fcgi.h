/*
 * fcgi.h: FastCGI records at cfpm's trust boundary (PURE; worker and
 * master).
 *
 * Any local user who can reach a socket can send any bytes. cfpm does not
 * use libfcgi (Debian's 2.4.2 overflows a stack buffer on a repeated
 * FCGI_GET_VALUES name and reads a request's parameters with no
 * deadline): the workers (conn.c, http.c) and the master's status socket
 * (admin.c) read, check, answer and frame with the functions below, and
 * no request is served before this module has seen it whole and found it
 * well formed.
 *
 * What a well-formed request is here (nginx sends exactly this): one
 * FCGI_BEGIN_REQUEST (role responder, request id not 0), FCGI_PARAMS
 * records up to the empty one, whose name-value pairs are well formed,
 * then FCGI_STDIN records up to the empty one; every record version 1
 * with the same request id. Management records (request id 0) may come
 * before the request and are answered here; anywhere else, or another
 * request id (multiplexing), another record type or order, is a
 * violation: the connection is closed.
 */
#ifndef CFPM_FCGI_H
#define CFPM_FCGI_H

#include <stddef.h>

#define FCGI_HEADER_SIZE	8		/* every record's header */
#define FCGI_MAX_CONTENT	65535		/* one record's content */
/*
 * A request is read whole before it is served (conn.h); these limits
 * bound what a worker holds for one, and stay within what the kernel
 * buffers for nginx's one write of it: a unix socket about 200 KiB, a TCP
 * socket what listen_set_rcvbuf() sets. nginx sends far less: its
 * header buffers (32 KiB by default) and client_max_body_size (64k
 * shipped).
 */
#define FCGI_MAX_PARAMS		(96 * 1024)	/* name-value bytes */
#define FCGI_MAX_STDIN		(80 * 1024)	/* body bytes; the API's own
						   limit is lower */
/* A request's raw bytes, headers and padding included. */
#define FCGI_MAX_REQUEST	(FCGI_MAX_PARAMS + FCGI_MAX_STDIN + 16 * 1024)
#define FCGI_MAX_MGMT_REPLY	128		/* a management answer */
#define FCGI_MAX_REFUSAL	256		/* fcgi_refusal()'s answer */
#define FCGI_MAX_MGMT_RECORDS	16		/* answered per connection */
#define FCGI_RELEASE_SIZE	FCGI_HEADER_SIZE	/* fcgi_release() */
/*
 * A read of fewer than FCGI_TRICKLE_BYTES that leaves a request
 * incomplete is a trickle: the reader (a worker, the master's status
 * socket) waits before it reads that connection again, so the bytes pile
 * up meanwhile and a client sending a byte at a time costs a wake-up per
 * wait, not per byte (struct fcgi_trickle). nginx writes a request at
 * once and never meets it.
 */
#define FCGI_TRICKLE_BYTES	512
#define FCGI_TRICKLE_TINY	32	/* a read this small: a slow client */
#define FCGI_TRICKLE_MIN_MS	1	/* the first wait */
#define FCGI_TRICKLE_FLOOR_MS	20	/* the shortest once it settled */
#define FCGI_TRICKLE_MAX_MS	1000
/* Largest record a scan may have to see whole. */
#define FCGI_MAX_RECORD		(FCGI_HEADER_SIZE + FCGI_MAX_CONTENT + 255)

enum fcgi_scan_status {
	FCGI_SCAN_PARTIAL = 0,	/* well formed so far: wait for more */
	FCGI_SCAN_REQUEST,	/* one whole request in the first len bytes */
	FCGI_SCAN_MANAGEMENT,	/* one whole management record comes first */
	FCGI_SCAN_TOO_LARGE,	/* past an FCGI_MAX_* limit (why says which) */
	FCGI_SCAN_INVALID,	/* a protocol violation (why says which) */
};

/*
 * Where a scan stands inside the name-value pairs of FCGI_PARAMS, which
 * may be cut anywhere by record boundaries: a length is 1 byte (high bit
 * clear) or 4 (high bit set, 31 bits); a name must not be empty. Part of
 * struct fcgi_scan's place (fcgi.c's alone).
 */
struct fcgi_pairs {
	int		field;		/* 0 name length, 1 value length,
					   2 name bytes, 3 value bytes */
	unsigned char	lenbuf[4];
	size_t		lenhave;
	size_t		skip;		/* bytes left in a name or value */
	size_t		value_len;
};

struct fcgi_scan {
	enum fcgi_scan_status	 status;
	size_t			 len;		/* REQUEST, MANAGEMENT: bytes */
	unsigned		 id;		/* request id, 0 before BEGIN */
	int			 keep_conn;	/* FCGI_KEEP_CONN was asked */
	size_t			 params_len;	/* name-value bytes seen */
	size_t			 stdin_len;	/* body bytes seen */
	int			 body_too_large; /* TOO_LARGE: the body's fault */
	const char		*why;		/* static text, or NULL */
	/* The scan's place, for fcgi_scan_more() (fcgi.c's alone). */
	size_t			 pos;		/* bytes of whole records seen */
	int			 stage;		/* 0 before BEGIN, 1 params,
						   2 body */
	struct fcgi_pairs	 pairs;
};

/*
 * A scan that keeps its place, so that a request costs work in
 * proportion to its bytes however they are split into records and
 * reads. fcgi_scan_start() readies s for a connection's first byte.
 * fcgi_scan_more() looks at the first n bytes the client sent (the same
 * bytes as at the previous call, and maybe more: p may move, its
 * contents may not), resuming after the last whole record it saw, and
 * fills s as fcgi_scan() would from the start. Each record is looked at
 * once; a partial record costs a header's look per call. A verdict
 * other than PARTIAL is final: later calls leave s as it is. Never reads
 * past n.
 */
void fcgi_scan_start(struct fcgi_scan *s);
void fcgi_scan_more(const unsigned char *p, size_t n, struct fcgi_scan *s);

/* fcgi_scan_start(), then fcgi_scan_more() on the first n bytes. */
void fcgi_scan(const unsigned char *p, size_t n, struct fcgi_scan *s);

/*
 * 1 if a and b hold the same verdict: every field above the scan's
 * place (status, len, id, keep_conn, the sizes, body_too_large, why),
 * which is all a caller may read; 0 otherwise.
 */
int fcgi_scan_same(const struct fcgi_scan *a, const struct fcgi_scan *b);

/*
 * fcgi_scan_more() for a connection whose management records (which
 * only come before a request) are answered as they come whole: each one
 * first in p is handed to answer(arg, rec, len), which replies, and the
 * scan starts again after it. *mgmt counts them over the connection; past
 * FCGI_MAX_MGMT_RECORDS, or when answer returns -1, s is INVALID (why
 * says which). Returns the bytes of the management records answered,
 * which the caller drops from the front of its buffer (s describes what
 * follows them, with the scan's place relative to there).
 */
size_t fcgi_scan_conn(const unsigned char *p, size_t n, struct fcgi_scan *s,
    int *mgmt, int (*answer)(void *arg, const unsigned char *rec,
    size_t len), void *arg);

/*
 * How long a reader waits before it reads a trickling connection again.
 * The first wait is FCGI_TRICKLE_MIN_MS, so a request written in a few
 * small pieces at once (cgi-fcgi writes each record on its own) waits a
 * millisecond. The wait then doubles, up to FCGI_TRICKLE_MAX_MS, while
 * reads bring fewer than FCGI_TRICKLE_TINY bytes or half as many again
 * as the one before: a slow client, which waiting longer costs nothing.
 * When a doubled wait brought no more, the client's own socket buffer
 * filled meanwhile (a unix socket holds 70 to 278 one-byte sends):
 * waiting longer would only slow it down, so the wait goes back to half,
 * at least FCGI_TRICKLE_FLOOR_MS, and stays there. A connection is thus
 * read at most about request_read_timeout / FCGI_TRICKLE_FLOOR_MS times
 * while it trickles, whatever its sends; a read of FCGI_TRICKLE_BYTES or
 * more starts over.
 */
struct fcgi_trickle {
	int		wait_ms;	/* before the next read, 0 none */
	size_t		last;		/* what the previous read brought */
	int		settled;	/* wait_ms found: held */
};

/* Zeroed to start. After a read of n bytes that left the request
 * incomplete: the milliseconds to wait before reading again (0: as soon
 * as bytes come). */
int fcgi_trickle_next(struct fcgi_trickle *t, size_t n);

/*
 * The answer to the management record rec (len bytes, as fcgi_scan found
 * it): FCGI_GET_VALUES_RESULT with FCGI_MAX_CONNS and FCGI_MAX_REQS set
 * to max_conns and FCGI_MPXS_CONNS 0, each at most once and only if
 * asked; FCGI_UNKNOWN_TYPE for any other type. Writes at most
 * FCGI_MAX_MGMT_REPLY bytes to out. Returns the length, or 0 if the
 * record's name-value pairs are malformed (close the connection).
 */
size_t fcgi_management_reply(const unsigned char *rec, size_t len,
    unsigned max_conns, unsigned char *out);

/*
 * Copies the name-value bytes of the request that fcgi_scan found whole
 * in p (s->status FCGI_SCAN_REQUEST) to out, which has room for
 * s->params_len bytes. Returns s->params_len.
 */
size_t fcgi_params_copy(const unsigned char *p, const struct fcgi_scan *s,
    unsigned char *out);

/* A whole, checked request as a worker serves it (fcgi_request_gather). */
struct fcgi_request {
	unsigned		 id;		/* its request id */
	int			 keep_conn;	/* FCGI_KEEP_CONN was asked */
	const unsigned char	*params;	/* name-value pairs */
	size_t			 params_len;
	const unsigned char	*body;		/* FCGI_STDIN's contents */
	size_t			 body_len;
};

/*
 * Gathers the request that fcgi_scan found whole in p (s->status
 * FCGI_SCAN_REQUEST): its name-value bytes into params (room for
 * s->params_len bytes), its body into body (room for s->stdin_len), and
 * fills fr, which points into those two buffers.
 */
void fcgi_request_gather(const unsigned char *p, const struct fcgi_scan *s,
    unsigned char *params, unsigned char *body, struct fcgi_request *fr);

/*
 * Looks name up in well-formed name-value bytes (fcgi_params_copy).
 * Returns the value (not NUL-terminated) and sets *vlen, or NULL.
 */
const unsigned char *fcgi_param(const unsigned char *params, size_t len,
    const char *name, size_t *vlen);

/* Writes a record header (content length len, no padding) at h. */
void fcgi_header(unsigned char *h, int type, unsigned id, size_t len);

/* Bytes fcgi_reply() needs for a len-byte response. */
size_t fcgi_reply_size(size_t len);

/*
 * Frames a CGI response, head (hlen bytes) then body (blen bytes, body
 * may be NULL when blen is 0), as FCGI_STDOUT records of request id, the
 * empty FCGI_STDOUT and FCGI_END_REQUEST (complete, status 0). out has
 * fcgi_reply_size(hlen + blen) bytes. Returns the number written.
 */
size_t fcgi_reply(unsigned id, const char *head, size_t hlen,
    const char *body, size_t blen, unsigned char *out);

/*
 * An empty FCGI_STDERR record of request id, written at out
 * (FCGI_RELEASE_SIZE bytes). nginx keeps an upstream connection only when
 * its read of a response ends exactly with FCGI_END_REQUEST, and drops an
 * idle kept connection on which anything arrives, yet skips an empty
 * FCGI_STDERR record in front of a response: this record after
 * FCGI_END_REQUEST, or alone on an idle kept connection, makes nginx close
 * that connection itself, whatever request it may be writing meanwhile.
 * Returns FCGI_RELEASE_SIZE.
 */
size_t fcgi_release(unsigned id, unsigned char *out);

/*
 * The answer to a request over the FCGI_MAX_* limits (s->status
 * FCGI_SCAN_TOO_LARGE, s->id known): 413 payload_too_large for a body,
 * 400 invalid_request for parameters, as whole FastCGI records. out has
 * FCGI_MAX_REFUSAL bytes. Returns the length.
 */
size_t fcgi_refusal(const struct fcgi_scan *s, unsigned char *out);

#endif
