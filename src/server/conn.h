/*
 * conn.h: a worker's FastCGI connections, from accept to close (worker).
 *
 * cfpm reads and writes FastCGI itself; no library sees a client's
 * bytes. A connection is non-blocking. A request is read whole before it
 * is served: conn_read_request() reads what has arrived into the
 * request's own buffer (one recv() when nginx wrote the request at once,
 * the usual case), has fcgi_scan_more() check what is new (the scan
 * keeps its place, so a request split into tiny records and sends costs
 * work in proportion to its bytes), answers management records, and
 * waits for the rest at most request_read_timeout from the call: for a
 * connection just accepted that is its accept, for a kept one the moment
 * its next request's first bytes woke the worker. A client that trickles
 * is read only every so often (fcgi_trickle_next), not at every byte. A
 * reply is framed whole by http.c and sent with one write (conn_send()),
 * given up at request_write_timeout.
 *
 * nginx's fastcgi_keep_conn: a connection whose request asked for it may
 * be kept after the reply, for the next request nginx sends on it. The
 * rules for ending a kept connection without a race (FastCGI's keep-conn
 * leaves the close to the web server) are keep.h's; conn_release() is
 * the one way a worker ends an idle kept connection.
 */
#ifndef CFPM_CONN_H
#define CFPM_CONN_H

#include <stddef.h>

#include "server/fcgi.h"

#define CONN_LINGER_MS		1000	/* after refusing an oversized request */
#define CONN_LINGER_MAX		(1024 * 1024)	/* bytes read and dropped */

struct conn_policy {
	int		read_timeout_ms;	/* conn_read_request()'s call
						   to the request's last byte */
	int		write_timeout_ms;	/* bounds each reply, in all */
	unsigned	max_conns;		/* FCGI_MAX_CONNS we announce */
};

enum conn_read {
	CONN_READ_REQUEST = 0,	/* fr holds a request: serve it */
	CONN_READ_CLOSED,	/* no request; the connection is closed */
	CONN_READ_NOTHING,	/* a kept connection had nothing to read */
	CONN_READ_TOO_LARGE,	/* a request over the FCGI_MAX_* limits */
};

/*
 * Reads, checks and gathers the next request on fd into fr (whatever fr
 * held is gone). kept is 1 for a connection kept from an earlier request
 * (it woke the worker), 0 for one just accepted. Returns:
 *  - CONN_READ_REQUEST: fr holds the request, gathered
 *    (fcgi_request_gather);
 *  - CONN_READ_CLOSED: the connection was dealt with and closed without
 *    a request: the peer closed it (silently when a kept connection
 *    ends between requests), stalled past the deadline or broke the
 *    protocol (logged, at most once per LOG_FLOOD_INTERVAL_US), sent only
 *    management records, or more bytes after its request (FastCGI
 *    peers wait for the reply; logged);
 *  - CONN_READ_NOTHING: kept and nothing arrived after all (still open);
 *  - CONN_READ_TOO_LARGE: a request over the FCGI_MAX_* limits (logged;
 *    fr->id and fr->body_too_large say which and why), read no further:
 *    the caller answers it with conn_refuse(), which closes it.
 */
enum conn_read conn_read_request(int fd, int kept, struct fcgi_request *fr,
    const struct conn_policy *pol);

/*
 * The end of a CONN_READ_TOO_LARGE connection: sends the answer (len
 * bytes, whole FastCGI records), then reads and drops what the client
 * still sends, CONN_LINGER_MAX bytes or CONN_LINGER_MS at most (into
 * fr->in), so that the answer is not lost to a reset; closes fd.
 */
void conn_refuse(int fd, const unsigned char *answer, size_t len,
    struct fcgi_request *fr, const struct conn_policy *pol);

/*
 * Writes len bytes to fd, waiting while the socket is full for at most
 * timeout_ms in all (from the first wait: a reply the socket takes at
 * once reads no clock). Returns 0, or -1 and the connection must be
 * closed: errno ETIMEDOUT when the time ran out with bytes unsent (a
 * client that does not read), another errno when the peer went away.
 */
int conn_send(int fd, const void *buf, size_t len, int timeout_ms);

/*
 * Ends an idle kept connection the race-free way: writes fcgi_release()'s
 * record (request id: the last one served on it) and leaves the close to
 * the peer. nginx drops the connection from its cache when the record
 * arrives; if it had just taken the connection for a request, it skips
 * the record and reads the reply to that request, which the caller must
 * still serve (keep.h). Returns 0, or -1 if the peer is gone (close it).
 */
int conn_release(int fd, unsigned id);

#endif
