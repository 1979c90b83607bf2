/*
 * http.c: a worker's request: read into its own storage (conn.c), its
 * view over the parameters decoded once (fcgi.c), and the one reply
 * path: framed into it with fcgi.c, written with conn_send (worker).
 */
#include "server/http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

/* A parameter's value (NUL-terminated; *vlen bytes, if vlen is not
 * NULL), or NULL if it was not sent. name: a string literal. */
#define HTTP_PARAM(ps, name, vlen) \
	http_param(ps, name, sizeof(name) - 1, vlen)

static const char *
http_param(const struct fcgi_params *ps, const char *name, size_t nlen,
    size_t *vlen)
{
	const struct fcgi_param *e = fcgi_params_get(ps, name, nlen);

	if (vlen != NULL)
		*vlen = e != NULL ? e->vlen : 0;
	return e != NULL ? e->value : NULL;
}

struct http_request *
http_request_new(int write_timeout_ms,
    void (*on_phase)(void *, enum http_phase), void *arg)
{
	struct http_request *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->fd = -1;
	r->write_timeout_ms = write_timeout_ms;
	r->on_phase = on_phase;
	r->phase_arg = arg;
	return r;
}

void
http_request_free(struct http_request *r)
{
	free(r);
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

/* The view over a request just gathered; no reply yet. */
static void
http_view(struct http_request *r, int fd)
{
	const struct fcgi_params *ps = &r->fcgi.params;
	const char *q, *ct;

	r->fd = fd;
	r->status = r->replied = r->cut = 0;
	r->out_len = 0;
	if ((r->method = HTTP_PARAM(ps, "REQUEST_METHOD", NULL)) == NULL)
		r->method = "";
	if ((r->uri = HTTP_PARAM(ps, "REQUEST_URI", NULL)) == NULL)
		r->uri = "";
	r->path = r->uri;
	q = strchr(r->uri, '?');
	r->path_len = q ? (size_t)(q - r->uri) : strlen(r->uri);
	r->query = q ? q + 1 : "";
	r->authorization = HTTP_PARAM(ps, "HTTP_AUTHORIZATION", NULL);
	ct = HTTP_PARAM(ps, "CONTENT_TYPE", NULL);
	r->content_type = ct != NULL && ct[0] != '\0' ? ct : NULL;
	r->content_length = http_content_length(HTTP_PARAM(ps,
	    "CONTENT_LENGTH", NULL));
	r->request_id = HTTP_PARAM(ps, "REQUEST_ID", NULL);
}

enum conn_read
http_read_request(struct http_request *r, int fd, int kept,
    const struct conn_policy *pol)
{
	enum conn_read res = conn_read_request(fd, kept, &r->fcgi, pol);

	if (res == CONN_READ_REQUEST)
		http_view(r, fd);
	else if (res == CONN_READ_TOO_LARGE) {
		conn_refuse(fd, r->out, http_refusal(r->fcgi.id,
		    r->fcgi.body_too_large, r->out), &r->fcgi, pol);
		res = CONN_READ_CLOSED;
	}
	return res;
}

enum http_body_result
http_body(const struct http_request *r, size_t cap, const char **body,
    size_t *len)
{
	*body = "";
	*len = 0;
	if (r->content_length > (long long)cap || r->fcgi.body_len > cap)
		return HTTP_BODY_TOO_LARGE;
	*body = r->fcgi.body;
	*len = r->fcgi.body_len;
	if (r->content_length >= 0 && (long long)*len != r->content_length)
		return HTTP_BODY_INCOMPLETE;
	return HTTP_BODY_OK;
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
	struct buf b;

	if (cap == 0 || status < 0)
		return -1;
	buf_init(&b, buf, cap - 1);	/* and the NUL */
	buf_str(&b, "Status: ");
	buf_int(&b, status, 0);
	buf_add(&b, " ", 1);
	buf_str(&b, http_reason(status));
	buf_str(&b, "\r\nContent-Type: ");
	buf_str(&b, content_type);
	buf_str(&b, "\r\nContent-Length: ");
	buf_int(&b, (int64_t)len, 0);
	buf_str(&b, "\r\n");
	if (extra_headers != NULL)
		buf_str(&b, extra_headers);
	buf_str(&b, "\r\n");
	if (b.overflow)
		return -1;
	buf[b.len] = '\0';
	return (int)b.len;
}

/* The answer a, framed whole as the reply to request id, into out (cap
 * bytes): returns its length, or 0 if its head or the whole does not
 * fit. */
static size_t
http_frame(unsigned id, const struct http_answer *a, unsigned char *out,
    size_t cap)
{
	char head[HTTP_MAX_HEAD];
	int hlen;

	if ((hlen = http_head(head, sizeof(head), a->status, a->content_type,
	    a->len, a->headers)) == -1 ||
	    fcgi_reply_size((size_t)hlen + a->len) > cap)
		return 0;
	return fcgi_reply(id, head, (size_t)hlen, a->body, a->len, out);
}

int
http_reply(struct http_request *r, int status, const char *content_type,
    const char *extra_headers, const char *body, size_t len)
{
	struct http_answer a = { .status = status,
	    .content_type = content_type, .headers = extra_headers,
	    .body = body, .len = len };
	size_t n;

	if (r->replied || len > HTTP_MAX_REPLY || (n = http_frame(r->fcgi.id,
	    &a, r->out, sizeof(r->out) - FCGI_RELEASE_SIZE)) == 0)
		return -1;
	r->status = status;
	r->replied = 1;
	r->out_len = n;
	return 0;
}

int
http_flush(struct http_request *r, int release)
{
	int rc;

	if (!r->replied)
		return -1;
	if (release)
		r->out_len += fcgi_release(r->fcgi.id, r->out + r->out_len);
	rc = conn_send(r->fd, r->out, r->out_len, r->write_timeout_ms);
	r->cut = rc == -1 && errno == ETIMEDOUT;
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
http_span_is(const char *s, size_t len, const char *want)
{
	return len == strlen(want) && memcmp(s, want, len) == 0;
}

void
http_route(const struct fcgi_params *ps, struct http_route *q)
{
	const char *v, *uri, *mark;
	size_t ulen = 0;

	memset(q, 0, sizeof(*q));
	q->method = "";
	q->path = "";
	q->query = "";
	if ((v = HTTP_PARAM(ps, "REQUEST_METHOD", &q->method_len)) !=
	    NULL)
		q->method = v;
	uri = HTTP_PARAM(ps, "REQUEST_URI", &ulen);
	mark = uri ? memchr(uri, '?', ulen) : NULL;
	if ((v = HTTP_PARAM(ps, "SCRIPT_NAME", &q->path_len)) != NULL &&
	    q->path_len > 0)
		q->path = v;
	else if (uri != NULL) {
		q->path = uri;
		q->path_len = mark ? (size_t)(mark - uri) : ulen;
	}
	if ((v = HTTP_PARAM(ps, "QUERY_STRING", &q->query_len)) != NULL)
		q->query = v;
	else if (mark != NULL) {
		q->query = mark + 1;
		q->query_len = ulen - (size_t)(mark + 1 - uri);
	}
}

int
http_answer_ping(struct http_answer *a, const struct config *cfg,
    const char *method, size_t mlen, const char *path, size_t len)
{
	if (cfg->ping_path[0] == '\0' || !http_span_is(path, len,
	    cfg->ping_path))
		return 0;
	if (!http_span_is(method, mlen, "GET") &&
	    !http_span_is(method, mlen, "HEAD")) {
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
http_reply_answer(struct http_request *r, const struct http_answer *a)
{
	return http_reply(r, a->status, a->content_type, a->headers, a->body,
	    a->len);
}

int
http_reply_error(struct http_request *r, int status, const char *code,
    const char *headers)
{
	struct http_answer a;

	http_answer_error(&a, status, code, headers);
	return http_reply_answer(r, &a);
}

size_t
http_refusal(unsigned id, int body_too_large, unsigned char *out)
{
	struct http_answer a;

	if (body_too_large)
		http_answer_error(&a, 413, "payload_too_large", NULL);
	else
		http_answer_error(&a, 400, "invalid_request", NULL);
	return http_frame(id, &a, out, HTTP_MAX_REFUSAL);
}
