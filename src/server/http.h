/*
 * http.h: the request view and the reply writer (worker). A request is
 * read whole and checked before it is served (conn.h); the application
 * sees method, raw path, headers and a capped body through struct
 * http_request, and gives its one reply to http_reply(), which frames it,
 * FCGI_END_REQUEST included; the server sends it with one write once the
 * request is accounted for (http_flush).
 */
#ifndef CFPM_HTTP_H
#define CFPM_HTTP_H

#include <stddef.h>

#include "util/config.h"

#define HTTP_MAX_BODY		(64 * 1024)	/* request body limit */
#define HTTP_MAX_REPLY_HEADERS	512		/* extra header bytes */
#define HTTP_MAX_HEAD		(256 + HTTP_MAX_REPLY_HEADERS)	/* a head */
#define HTTP_MAX_ERROR_CODE	40	/* "method_not_allowed", ... */
#define HTTP_MAX_ALLOW		32	/* an Allow header's methods */

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
	HTTP_PHASE_WRITING,	/* sending the reply */
};

struct fcgi_request;

struct http_request {
	const char		*method;	/* "GET", ... ("" if absent) */
	const char		*uri;		/* raw REQUEST_URI */
	const char		*path;		/* raw path, not decoded */
	size_t			 path_len;	/* path ends at '?' or NUL */
	const char		*query;		/* after '?', or "" */
	const char		*authorization;	/* NULL if absent */
	const char		*content_type;	/* NULL if absent or empty */
	long long		 content_length; /* -1 if absent or invalid */
	const char		*request_id;	/* nginx $request_id or NULL */
	int			 status;	/* set by http_reply */
	/* Set by the worker: where http_phase() reports (may be NULL). */
	void			(*on_phase)(void *, enum http_phase);
	void			*phase_arg;
	/* The FastCGI side, the server's (http_request_init, worker.c). */
	int			 fd;		/* the request's connection */
	unsigned		 fcgi_id;	/* its request id */
	int			 release;	/* end the reply so that nginx
						   drops the connection
						   (fcgi_release) */
	int			 write_timeout_ms; /* bound on the reply */
	int			 replied;	/* http_reply ran */
	int			 cut;		/* http_flush gave the reply up
						   at write_timeout_ms */
	unsigned char		*out;		/* the framed reply, unsent */
	size_t			 out_len;
	int			 out_owned;	/* out was allocated */
	const unsigned char	*params;	/* name-value pairs */
	size_t			 params_len;
	const unsigned char	*body;		/* the whole body */
	size_t			 body_len;
	size_t			 body_read;	/* what http_read_body took */
};

/*
 * Fills r from a request read on fd (conn_read_request). The strings
 * point into this module's and conn.c's buffers and stay valid until the
 * next request is read.
 */
void http_request_init(struct http_request *r, int fd,
    const struct fcgi_request *fr);

enum http_body_result {
	HTTP_BODY_OK = 0,
	HTTP_BODY_TOO_LARGE,	/* more than cap bytes */
	HTTP_BODY_INCOMPLETE,	/* fewer bytes than CONTENT_LENGTH */
};

/*
 * Reads the request body into buf (cap bytes, plus room for a NUL at
 * buf[cap]): at most cap bytes are accepted, one more means too large.
 * Sets *len. The body is NUL-terminated for convenience.
 */
enum http_body_result http_read_body(struct http_request *r, char *buf,
    size_t cap, size_t *len);

/*
 * The complete reply, once: status line, Content-Type, the optional extra
 * header lines (each ending in "\r\n"), then len bytes of body, framed
 * with the end of the FastCGI request; it goes out in one write when the
 * handler has returned and the server has accounted for the request
 * (http_flush: the access log and the status page have it before the
 * client does). Returns 0, or -1 if the head does not fit HTTP_MAX_HEAD,
 * memory ran out or a reply was given already.
 */
int http_reply(struct http_request *r, int status, const char *content_type,
    const char *extra_headers, const char *body, size_t len);

/*
 * Formats a CGI response head into buf (cap bytes): Status line,
 * Content-Type, Content-Length len, the optional extra header lines (each
 * ending in "\r\n") and the blank line. Returns its length, or -1 if it
 * does not fit. PURE: the master's status server uses it too.
 */
int http_head(char *buf, size_t cap, int status, const char *content_type,
    size_t len, const char *extra_headers);

/*
 * The server's, after the handler: sends the framed reply (bounded by
 * write_timeout_ms in all) and frees it. Returns 0, or -1 if there was
 * none, the client went away, or it did not take the reply in time
 * (then r->cut is set: the reply was cut, the connection must close).
 */
int http_flush(struct http_request *r);

/* Reports the phase the request's handler enters (app.h). */
void http_phase(struct http_request *r, enum http_phase phase);

/*
 * A reply decided from the request's parameters alone: the same bytes
 * whether a worker sends it (http_send) or the master's
 * status socket frames it (admin.c). Error bodies are {"error":"code"}.
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
 * PURE. Method, path and query of the request whose name-value bytes are
 * params (plen bytes, well formed), as PHP-FPM takes them for ping.path
 * and pm.status_path: the path is SCRIPT_NAME (what a FastCGI client such
 * as cgi-fcgi or an exporter sends, often with no REQUEST_URI), or
 * REQUEST_URI's path when SCRIPT_NAME is absent or empty; the query is
 * QUERY_STRING, or what follows '?' in REQUEST_URI when there is no
 * QUERY_STRING. The workers and the status socket route alike through
 * it. q points into params.
 */
void http_route(const unsigned char *params, size_t plen,
    struct http_route *q);

/* PURE. 1 if the len bytes at path are exactly the string want. */
int http_path_is(const char *path, size_t len, const char *want);

/* Sends a. Returns 0, or -1 if the client went away. */
int http_send(struct http_request *r, const struct http_answer *a);

/* Sends http_answer_error's reply. Returns as http_send. */
int http_error(struct http_request *r, int status, const char *code,
    const char *headers);

/* The descriptor of the request's FastCGI connection (for poll), or -1. */
int http_client_fd(const struct http_request *r);

/* The reason phrase for status ("OK", "Not Found", ...). */
const char *http_reason(int status);

#endif
