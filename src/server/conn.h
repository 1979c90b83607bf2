/*
 * conn.h: a request's FastCGI connection in a worker, from accept to
 * close (worker).
 *
 * libfcgi reads a request with blocking reads and no deadline, handles
 * management records with a stack buffer it can overflow, ends with a
 * lingering close, and with nginx's fastcgi_keep_conn keeps the
 * connection and later blocks on it: a prefork worker can afford none of
 * that. So the worker accepts itself, waits (at most request_read_timeout
 * from the accept) until the whole request is in the socket's buffer,
 * has fcgi_scan() check it, answers management records itself, and only
 * then lets libfcgi parse it: none of libfcgi's reads can then block, and
 * none sees a byte that was not checked. conn_finish() replaces
 * FCGX_Finish_r() for every request.
 */
#ifndef CFPM_CONN_H
#define CFPM_CONN_H

#include <fcgiapp.h>

#define CONN_LINGER_MS		1000	/* after refusing an oversized request */
#define CONN_LINGER_MAX		(1024 * 1024)	/* bytes read and dropped */

struct conn_policy {
	int		read_timeout_ms;	/* accept to the request's last
						   byte; also bounds each write */
	unsigned	max_conns;		/* FCGI_MAX_CONNS we announce */
};

/*
 * Gives a TCP listen socket (the master's, before any accept) a receive
 * buffer that holds a whole FCGI_MAX_REQUEST unread, which accepted
 * connections inherit; Linux's default window holds about 85 KiB. Unix
 * sockets are left alone (the sender's buffer is what counts there).
 * Returns 0, or -1 (errno) when the kernel refused.
 */
int conn_listen_prepare(int listen_fd);

/* Per-process setup (the wait set for unfinished requests): 0 or -1. */
int conn_init(void);

/*
 * Accepts one connection from the (non-blocking) listen socket. Returns
 * its descriptor (blocking, close-on-exec), or -1 with errno (EAGAIN:
 * another worker was quicker).
 */
int conn_accept(int listen_fd);

/*
 * Waits for fd's whole request, checks it and hands it to libfcgi.
 * Returns 1 when req holds the request (serve it, then conn_finish), or
 * 0 when the connection was dealt with and closed without one: a client
 * that stalled past the deadline or closed early, a protocol violation
 * (logged, at most once per LOG_FLOOD_INTERVAL_US), management records
 * only, or a request over the FCGI_MAX_* limits (answered 413 or 400).
 * req must have been set up with FCGX_InitRequest() and a listen socket
 * of -1: libfcgi never accepts anything itself.
 */
int conn_read_request(int fd, FCGX_Request *req, const struct conn_policy *pol);

/*
 * Ends the request and closes its connection:
 *  - the rest of the request's body is read first (it is all buffered:
 *    conn_read_request saw it), so the close is immediate, without
 *    libfcgi's shutdown-and-wait, and never resets a response;
 *  - if nginx asked to keep the connection (FCGI_KEEP_CONN), the end of
 *    the response is followed, in the same write, by an empty
 *    FCGI_STDERR record: nginx keeps an upstream connection only when
 *    its read ends exactly with FCGI_END_REQUEST, so it closes this one
 *    itself instead of putting it in its cache. No worker is then held
 *    by an idle cached connection, and no request is ever written into
 *    a connection the worker is closing.
 */
void conn_finish(FCGX_Request *req);

#endif
