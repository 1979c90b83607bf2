/*
 * http.h: the request view over libfcgi and the reply writer (worker).
 * libfcgi's fcgiapp.h is used by http.c (params, body, replies), conn.[ch]
 * (a connection from accept to close) and worker.c (the request it
 * serves) only; the API layer sees method, raw path, headers and a capped
 * body through struct http_request and never includes fcgiapp.h.
 */
#ifndef CFPM_HTTP_H
#define CFPM_HTTP_H

#include <stddef.h>

#define HTTP_MAX_BODY		(64 * 1024)	/* request body limit */
#define HTTP_MAX_REPLY_HEADERS	512		/* extra header bytes */
#define HTTP_MAX_HEAD		(256 + HTTP_MAX_REPLY_HEADERS)	/* a head */

struct FCGX_Request;

struct http_request {
	struct FCGX_Request	*fcgx;
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
};

/*
 * Fills r from the FastCGI params of an accepted request. The strings
 * point into libfcgi's memory and stay valid until conn_finish() ends
 * the request.
 */
void http_request_init(struct http_request *r, struct FCGX_Request *fx);

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
 * Sends a complete reply: status line, Content-Type, the optional extra
 * header lines (each ending in "\r\n"), then len bytes of body.
 * Returns 0, or -1 if the head does not fit HTTP_MAX_HEAD or the write
 * failed (the client went away).
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

/* The descriptor of the request's FastCGI connection (for poll), or -1. */
int http_client_fd(const struct http_request *r);

/* The reason phrase for status ("OK", "Not Found", ...). */
const char *http_reason(int status);

#endif
