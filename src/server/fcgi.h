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
 * well formed. One decoder reads every name-value pair (a request's
 * parameters as the scan checks them and as they are gathered, a
 * management record's names).
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
#define FCGI_MAX_MGMT_RECORDS	16		/* answered per connection */
/* The shortest pair a request may have (two 1-byte lengths, a 1-byte
 * name), so the most a request's parameters can hold. */
#define FCGI_MIN_PAIR		3
#define FCGI_MAX_PAIRS		(FCGI_MAX_PARAMS / FCGI_MIN_PAIR)
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
					   2 name and value bytes */
	unsigned char	lenbuf[4];	/* a length cut by a record */
	size_t		lenhave;
	size_t		name_len;	/* field 1: the name's */
	size_t		skip;		/* field 2: bytes left to pass */
	int		empty_names;	/* allowed (FastCGI does); a request's
					   parameters may have none */
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

/* One name-value pair, decoded: name and value NUL-terminated (a value
 * may hold NULs of its own; vlen counts every byte). */
struct fcgi_param {
	const char	*name;
	const char	*value;
	unsigned	 nlen, vlen;
};

/*
 * Name-value pairs decoded once, looked up by name without reading the
 * protocol's bytes again. Room for the most a request can send: the text
 * holds every name and value, each followed by its NUL, in no more bytes
 * than they took encoded (two length bytes at least per pair), so
 * decoding moves them forward in place.
 */
struct fcgi_params {
	size_t			 n;			/* pairs, in order */
	size_t			 used;			/* bytes of text */
	struct fcgi_param	 pair[FCGI_MAX_PAIRS];
	char			 text[FCGI_MAX_PARAMS];
};

/*
 * Decodes the len bytes of name-value pairs at p (at most
 * FCGI_MAX_PARAMS; p may be ps->text) into ps, replacing what it held.
 * Returns 0, or -1 if they are malformed as a request's parameters are
 * (fcgi_scan's rules; ps then holds the pairs before the fault).
 */
int fcgi_params_decode(struct fcgi_params *ps, const unsigned char *p,
    size_t len);

/*
 * Decodes the parameters of the request that fcgi_scan found whole in p
 * (s->status FCGI_SCAN_REQUEST) into ps: its FCGI_PARAMS records'
 * contents joined, then decoded in place.
 */
void fcgi_params_gather(const unsigned char *p, const struct fcgi_scan *s,
    struct fcgi_params *ps);

/* The first pair named name (nlen bytes) in ps, or NULL. */
const struct fcgi_param *fcgi_params_get(const struct fcgi_params *ps,
    const char *name, size_t nlen);

/*
 * One request as a worker reads and serves it, in the room it is read
 * into: its raw bytes as they arrive (conn.c), then, once the scan found
 * it whole and well formed, its parts gathered (fcgi_request_gather).
 * Allocated once per worker; every request reuses it.
 */
struct fcgi_request {
	unsigned		 id;		/* its request id */
	int			 keep_conn;	/* FCGI_KEEP_CONN was asked */
	int			 body_too_large; /* refused: the body's fault,
						   not the parameters' */
	struct fcgi_params	 params;
	size_t			 body_len;
	char			 body[FCGI_MAX_STDIN + 1];	/* NUL-terminated */
	unsigned char		 in[FCGI_MAX_REQUEST + 1];	/* as read */
};

/*
 * Gathers the request that fcgi_scan found whole in p (s->status
 * FCGI_SCAN_REQUEST; p may be fr->in) into fr: id, keep-conn, its
 * parameters decoded, its body joined and NUL-terminated.
 */
void fcgi_request_gather(const unsigned char *p, const struct fcgi_scan *s,
    struct fcgi_request *fr);

/* Writes a record header (content length len, no padding) at h. */
void fcgi_header(unsigned char *h, int type, unsigned id, size_t len);

/* Bytes fcgi_reply() needs for a len-byte response (a constant
 * expression for a constant len): the response's records, the empty
 * FCGI_STDOUT and FCGI_END_REQUEST with its body. */
#define FCGI_REPLY_SIZE(len)	((len) + (((len) + FCGI_MAX_CONTENT - 1) / \
	FCGI_MAX_CONTENT + 3) * FCGI_HEADER_SIZE)
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

#endif
