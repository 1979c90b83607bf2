/*
 * http.c: the request view over a request read whole (conn.c) and the
 * one reply path: framed with fcgi.c, written with conn_send (worker).
 */
#include "server/http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/conn.h"
#include "server/fcgi.h"

#define HTTP_OUT_STATIC	(16 * 1024)	/* a framed reply; larger ones are
					   allocated */

/* The values http_request_init looks up, NUL-terminated, one request's. */
static char http_values[FCGI_MAX_PARAMS + 16];
static size_t http_values_used;

/* A parameter's value as a C string, or NULL if it was not sent. */
static const char *
http_param(struct http_request *r, const char *name)
{
	const unsigned char *v;
	size_t vlen;
	char *out;

	if ((v = fcgi_param(r->params, r->params_len, name, &vlen)) == NULL ||
	    vlen + 1 > sizeof(http_values) - http_values_used)
		return NULL;
	out = http_values + http_values_used;
	memcpy(out, v, vlen);
	out[vlen] = '\0';
	http_values_used += vlen + 1;
	return out;
}

/* CONTENT_LENGTH: decimal digits only; anything else counts as absent. */
static long long
http_content_length(const char *s)
{
	long long v = 0;

	if (s == NULL || *s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || v > (1LL << 40))
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

void
http_request_init(struct http_request *r, int fd,
    const struct fcgi_request *fr)
{
	const char *q, *ct;

	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->fcgi_id = fr->id;
	r->params = fr->params;
	r->params_len = fr->params_len;
	r->body = fr->body;
	r->body_len = fr->body_len;
	http_values_used = 0;
	if ((r->method = http_param(r, "REQUEST_METHOD")) == NULL)
		r->method = "";
	if ((r->uri = http_param(r, "REQUEST_URI")) == NULL)
		r->uri = "";
	r->path = r->uri;
	q = strchr(r->uri, '?');
	r->path_len = q ? (size_t)(q - r->uri) : strlen(r->uri);
	r->query = q ? q + 1 : "";
	r->authorization = http_param(r, "HTTP_AUTHORIZATION");
	ct = http_param(r, "CONTENT_TYPE");
	r->content_type = ct != NULL && ct[0] != '\0' ? ct : NULL;
	r->content_length = http_content_length(http_param(r,
	    "CONTENT_LENGTH"));
	r->request_id = http_param(r, "REQUEST_ID");
}

enum http_body_result
http_read_body(struct http_request *r, char *buf, size_t cap, size_t *len)
{
	size_t take = r->body_len - r->body_read;

	*len = 0;
	buf[0] = '\0';
	if (r->content_length > (long long)cap)
		return HTTP_BODY_TOO_LARGE;
	/* One byte past cap tells a body that is too large. */
	if (take > cap + 1)
		take = cap + 1;
	memcpy(buf, r->body + r->body_read, take);
	r->body_read += take;
	if (take > cap)
		return HTTP_BODY_TOO_LARGE;
	buf[take] = '\0';
	*len = take;
	if (r->content_length >= 0 && (long long)take != r->content_length)
		return HTTP_BODY_INCOMPLETE;
	return HTTP_BODY_OK;
}

int
http_client_fd(const struct http_request *r)
{
	return r->fd;
}

const char *
http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 413: return "Payload Too Large";
	case 415: return "Unsupported Media Type";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Unknown";
	}
}

int
http_head(char *buf, size_t cap, int status, const char *content_type,
    size_t len, const char *extra_headers)
{
	int n;

	n = snprintf(buf, cap,
	    "Status: %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	    "%s\r\n", status, http_reason(status), content_type, len,
	    extra_headers ? extra_headers : "");
	return n < 0 || (size_t)n >= cap ? -1 : n;
}

int
http_reply(struct http_request *r, int status, const char *content_type,
    const char *extra_headers, const char *body, size_t len)
{
	static unsigned char out_static[HTTP_OUT_STATIC];
	unsigned char *out = out_static;
	char head[HTTP_MAX_HEAD];
	size_t need, n;
	int hlen;

	if (r->replied || (hlen = http_head(head, sizeof(head), status,
	    content_type, len, extra_headers)) == -1)
		return -1;
	need = fcgi_reply_size((size_t)hlen + len) + FCGI_RELEASE_SIZE;
	if (need > sizeof(out_static) && (out = malloc(need)) == NULL)
		return -1;
	r->status = status;
	r->replied = 1;
	n = fcgi_reply(r->fcgi_id, head, (size_t)hlen, body, len, out);
	if (r->release)
		n += fcgi_release(r->fcgi_id, out + n);
	r->out = out;
	r->out_len = n;
	r->out_owned = out != out_static;
	return 0;
}

int
http_flush(struct http_request *r)
{
	int rc;

	if (r->out == NULL)
		return -1;
	rc = conn_send(r->fd, r->out, r->out_len, r->write_timeout_ms);
	r->cut = rc == -1 && errno == ETIMEDOUT;
	if (r->out_owned)
		free(r->out);
	r->out = NULL;
	return rc;
}

void
http_phase(struct http_request *r, enum http_phase phase)
{
	if (r->on_phase != NULL)
		r->on_phase(r->phase_arg, phase);
}

void
http_answer_error(struct http_answer *a, int status, const char *code,
    const char *headers)
{
	int n;

	n = snprintf(a->own_body, sizeof(a->own_body), "{\"error\":\"%.*s\"}",
	    HTTP_MAX_ERROR_CODE, code);
	a->status = status;
	a->content_type = "application/json";
	a->headers = headers;
	a->body = a->own_body;
	a->len = n > 0 ? (size_t)n : 0;
}

void
http_answer_not_allowed(struct http_answer *a, const char *allow)
{
	snprintf(a->own_headers, sizeof(a->own_headers), "Allow: %.*s\r\n",
	    HTTP_MAX_ALLOW, allow);
	http_answer_error(a, 405, "method_not_allowed", a->own_headers);
}

int
http_path_is(const char *path, size_t len, const char *want)
{
	return len == strlen(want) && memcmp(path, want, len) == 0;
}

void
http_route(const unsigned char *params, size_t plen, struct http_route *q)
{
	const unsigned char *v, *uri, *mark;
	size_t ulen = 0;

	memset(q, 0, sizeof(*q));
	q->method = "";
	q->path = "";
	q->query = "";
	if ((v = fcgi_param(params, plen, "REQUEST_METHOD",
	    &q->method_len)) != NULL)
		q->method = (const char *)v;
	uri = fcgi_param(params, plen, "REQUEST_URI", &ulen);
	mark = uri ? memchr(uri, '?', ulen) : NULL;
	if ((v = fcgi_param(params, plen, "SCRIPT_NAME", &q->path_len)) !=
	    NULL && q->path_len > 0)
		q->path = (const char *)v;
	else if (uri != NULL) {
		q->path = (const char *)uri;
		q->path_len = mark ? (size_t)(mark - uri) : ulen;
	}
	if ((v = fcgi_param(params, plen, "QUERY_STRING",
	    &q->query_len)) != NULL)
		q->query = (const char *)v;
	else if (mark != NULL) {
		q->query = (const char *)mark + 1;
		q->query_len = ulen - (size_t)(mark + 1 - uri);
	}
}

int
http_answer_ping(struct http_answer *a, const struct config *cfg,
    const char *method, size_t mlen, const char *path, size_t len)
{
	if (cfg->ping_path[0] == '\0' || !http_path_is(path, len,
	    cfg->ping_path))
		return 0;
	if (!http_path_is(method, mlen, "GET") &&
	    !http_path_is(method, mlen, "HEAD")) {
		http_answer_not_allowed(a, "GET, HEAD");
		return 1;
	}
	a->status = 200;
	a->content_type = HTTP_PING_TYPE;
	a->headers = HTTP_NO_CACHE;
	a->body = cfg->ping_response;
	a->len = strlen(cfg->ping_response);
	return 1;
}

int
http_send(struct http_request *r, const struct http_answer *a)
{
	return http_reply(r, a->status, a->content_type, a->headers, a->body,
	    a->len);
}

int
http_error(struct http_request *r, int status, const char *code,
    const char *headers)
{
	struct http_answer a;

	http_answer_error(&a, status, code, headers);
	return http_send(r, &a);
}
