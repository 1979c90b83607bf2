/*
 * conn.h: how a worker ends a request's FastCGI connection (worker).
 * libfcgi's own end is a lingering close, and with nginx's
 * fastcgi_keep_conn it keeps the connection and later blocks on it; a
 * prefork worker can afford neither. conn_finish() replaces
 * FCGX_Finish_r() for every request.
 */
#ifndef CFPM_CONN_H
#define CFPM_CONN_H

#include <fcgiapp.h>

#define CONN_DRAIN_MAX		(64 * 1024)	/* unread body read at the end */
#define CONN_DRAIN_WAIT_MS	500	/* for the rest of a stalled request */

/*
 * Ends the request and closes its connection:
 *  - the rest of the request is read first (a GET's empty FCGI_STDIN
 *    record is already buffered), waiting at most CONN_DRAIN_WAIT_MS for
 *    a client that stops mid-request; with nothing left unread the close
 *    is immediate, without libfcgi's shutdown-and-wait (a body larger
 *    than CONN_DRAIN_MAX keeps it, so a reset never races a response);
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
