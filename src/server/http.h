/*
 * http.h: a request and its reply (worker). One struct http_request per
 * worker holds everything of the request it serves: its bytes as read,
 * its parameters decoded once, its body, the view the application reads
 * (method, raw path, headers) and its framed reply; each request reuses
 * it (http_read_request) and nothing of it is allocated per request.
 * The request is read whole and checked before it is served (conn.h);
 * the application gives its one reply to http_reply(), which frames it,
 * FCGI_END_REQUEST included, into the request; the server sends it with
 * one write once the request is accounted for (http_flush).
 */
#ifndef CFPM_HTTP_H
#define CFPM_HTTP_H

#include <stddef.h>

#include "server/conn.h"
#include "server/fcgi.h"
#include "util/config.h"

#define HTTP_MAX_BODY		(64 * 1024)	/* request body limit */
#define HTTP_MAX_REPLY_HEADERS	512		/* extra header bytes */
#define HTTP_MAX_HEAD		(256 + HTTP_MAX_REPLY_HEADERS)	/* a head */
#define HTTP_MAX_ERROR_CODE	40	/* "method_not_allowed", ... */
#define HTTP_MAX_ALLOW		32	/* an Allow header's methods */
#define HTTP_MAX_REPLY		(1024 * 1024)	/* a reply's body: an
						   application's limit must
						   be within it */
/* A reply framed whole, with room for the release record after it. */
#define HTTP_MAX_FRAMED		(FCGI_REPLY_SIZE(HTTP_MAX_HEAD + \
	HTTP_MAX_REPLY) + FCGI_RELEASE_SIZE)
#define HTTP_MAX_REFUSAL	256	/* http_refusal()'s answer, framed */

/* What PHP-FPM sends with its ping and status pages: never cached. */
#define HTTP_NO_CACHE	"Expires: Thu, 01 Jan 1970 00:00:00 GMT\r\n" \
	"Cache-Control: no-cache, no-store, must-revalidate, max-age=0\r\n"

/* The ping's Content-Type, PHP-FPM's (its text/plain with PHP's
 * default_charset). */
#define HTTP_PING_TYPE	"text/plain;charset=UTF-8"

/* What a handler is doing, for the status page and the slow log. */
enum http_phase {
	HTTP_PHASE_READING = 0,	/* reading the request or its body */
	HTTP_PHASE_AUTH,	/* checking credentials */
	HTTP_PHASE_DB,		/* waiting for the database */
	HTTP_PHASE_WRITING,	/* giving its reply (the send is the
				   server's: SB_SENDING) */
};

/*
 * One request, from its first byte to its reply. The view points into
 * fcgi (its decoded parameters, NUL-terminated): valid until the next
 * http_read_request().
 */
struct http_request {
	/* The view (http_read_request). */
	const char		*method;	/* "GET", ... ("" if absent) */
	const char		*uri;		/* raw REQUEST_URI */
	const char		*path;		/* raw path, not decoded */
	size_t			 path_len;	/* path ends at '?' or NUL */
	const char		*query;		/* after '?', or "" */
	const char		*authorization;	/* NULL if absent */
	const char		*content_type;	/* NULL if absent or empty */
	long long		 content_length; /* -1 if absent or invalid */
	const char		*request_id;	/* nginx $request_id or NULL */
	int			 fd;		/* its connection */
	/* The reply. */
	int			 status;	/* set by http_reply */
	int			 replied;	/* http_reply framed it */
	int			 cut;		/* http_flush gave it up at
						   write_timeout_ms */
	size_t			 out_len;	/* framed bytes in out */
	/* The worker's, for its whole life (http_request_new). */
	int			 write_timeout_ms; /* bound on a reply */
	void			(*on_phase)(void *, enum http_phase);
	void			*phase_arg;
	/* The storage. */
	struct fcgi_request	 fcgi;		/* bytes, parameters, body */
	unsigned char		 out[HTTP_MAX_FRAMED];	/* the framed reply */
};

/*
 * A worker's request, once: write_timeout_ms bounds each reply's send;
 * http_phase() reports to on_phase(arg, phase) (on_phase may be NULL).
 * The storage is allocated here and only touched as requests use it.
 * Returns NULL when out of memory.
 */
struct http_request *http_request_new(int write_timeout_ms,
    void (*on_phase)(void *, enum http_phase), void *arg);

/* Frees r (NULL is fine). */
void http_request_free(struct http_request *r);

/*
 * Reads the next request on fd into r (conn_read_request: kept and pol
 * as there), replacing the one before, and fills the view. A request
 * over the FCGI_MAX_* limits is answered here (http_refusal) and its
 * connection closed. Returns CONN_READ_REQUEST (serve r),
 * CONN_READ_CLOSED (fd is closed) or CONN_READ_NOTHING (fd stays open).
 */
enum conn_read http_read_request(struct http_request *r, int fd, int kept,
    const struct conn_policy *pol);

enum http_body_result {
	HTTP_BODY_OK = 0,
	HTTP_BODY_TOO_LARGE,	/* more than cap bytes */
	HTTP_BODY_INCOMPLETE,	/* fewer bytes than CONTENT_LENGTH */
};

/*
 * The request body where it is, NUL-terminated (*body, *len bytes): at
 * most cap bytes are accepted, and a CONTENT_LENGTH over cap is too
 * large before any byte is looked at. On HTTP_BODY_TOO_LARGE *body is ""
 * and *len 0.
 */
enum http_body_result http_body(const struct http_request *r, size_t cap,
    const char **body, size_t *len);

/*
 * Frames the complete reply, once, into r: status line, Content-Type,
 * the optional extra header lines (each ending in "\r\n"), then len
 * bytes of body (at most HTTP_MAX_REPLY), with the end of the FastCGI
 * request. Nothing is sent here: the server sends it when the handler
 * has returned and the request is accounted for (http_flush: the access
 * log and the status page have it before the client does). Returns 0,
 * or -1 if the head does not fit HTTP_MAX_HEAD, the body
 * HTTP_MAX_REPLY, or a reply was framed already (the first stands).
 */
int http_reply(struct http_request *r, int status, const char *content_type,
    const char *extra_headers, const char *body, size_t len);

/*
 * Formats a CGI response head into buf (cap bytes, NUL-terminated):
 * Status line (status: a code, not negative), Content-Type,
 * Content-Length len, the optional extra header lines (each ending in
 * "\r\n") and the blank line. Returns its length, or -1 if it does not
 * fit. PURE: the master's status server uses it too.
 */
int http_head(char *buf, size_t cap, int status, const char *content_type,
    size_t len, const char *extra_headers);

/*
 * The server's, after the handler: sends the framed reply on r->fd,
 * bounded by write_timeout_ms in all; release (keep.h) ends it with the
 * release record, so that nginx drops the connection. Returns 0, or -1
 * if there was none, the client went away, or it did not take the reply
 * in time (then r->cut is set: the reply was cut, the connection must
 * close).
 */
int http_flush(struct http_request *r, int release);

/* Reports the phase the request's handler enters (app.h). */
void http_phase(struct http_request *r, enum http_phase phase);

/*
 * A reply decided from the request's parameters alone: the same bytes
 * whether a worker frames it (http_reply_answer) or the master's status
 * socket does (admin.c). Error bodies are {"error":"code"}.
 */
struct http_answer {
	int		 status;
	const char	*content_type;
	const char	*headers;	/* extra header lines, or NULL */
	const char	*body;
	size_t		 len;
	char		 own_body[HTTP_MAX_ERROR_CODE + 16];
	char		 own_headers[HTTP_MAX_ALLOW + 16];
};

/* PURE. An error reply: status, {"error":"code"}, optional headers. */
void http_answer_error(struct http_answer *a, int status, const char *code,
    const char *headers);

/* PURE. 405 with "Allow: allow". */
void http_answer_not_allowed(struct http_answer *a, const char *allow);

/*
 * PURE. The ping path (ping.path, PHP-FPM's): returns 1 and fills a if
 * path (len bytes, no query) is cfg->ping_path: 200 HTTP_PING_TYPE with
 * ping.response and HTTP_NO_CACHE for GET and HEAD (method: mlen bytes),
 * 405 otherwise. Returns 0 if it is not the ping path or ping is off.
 */
int http_answer_ping(struct http_answer *a, const struct config *cfg,
    const char *method, size_t mlen, const char *path, size_t len);

/* A request as PHP-FPM routes its own pages (values not NUL-terminated;
 * absent ones are empty). */
struct http_route {
	const char	*method, *path, *query;
	size_t		 method_len, path_len, query_len;
};

/*
 * PURE. Method, path and query of a request whose parameters are ps, as
 * PHP-FPM takes them for ping.path and pm.status_path: the path is
 * SCRIPT_NAME (what a FastCGI client such as cgi-fcgi or an exporter
 * sends, often with no REQUEST_URI), or REQUEST_URI's path when
 * SCRIPT_NAME is absent or empty; the query is QUERY_STRING, or what
 * follows '?' in REQUEST_URI when there is no QUERY_STRING. The workers
 * and the status socket route alike through it. q points into ps.
 */
void http_route(const struct fcgi_params *ps, struct http_route *q);

/* PURE. 1 if the len bytes at s are exactly the string want (a path, a
 * method). */
int http_span_is(const char *s, size_t len, const char *want);

/* Frames a as r's reply (http_reply: returns as there). */
int http_reply_answer(struct http_request *r, const struct http_answer *a);

/* Frames http_answer_error's reply (http_reply: returns as there). */
int http_reply_error(struct http_request *r, int status, const char *code,
    const char *headers);

/*
 * PURE. The answer to request id over the FCGI_MAX_* limits (conn.h's
 * CONN_READ_TOO_LARGE, fcgi.h's FCGI_SCAN_TOO_LARGE): 413
 * payload_too_large when body_too_large, else 400 invalid_request, as
 * http_answer_error gives them, framed whole into out
 * (HTTP_MAX_REFUSAL bytes). Returns the length.
 */
size_t http_refusal(unsigned id, int body_too_large, unsigned char *out);

/* The reason phrase for status ("OK", "Not Found", ...). */
const char *http_reason(int status);

#endif
