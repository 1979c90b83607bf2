/*
 * http.c: read FastCGI params and stdin, write CGI-style replies (worker).
 */
#include "server/http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcgiapp.h>

static const char *
http_param(struct http_request *r, const char *name)
{
	return FCGX_GetParam(name, r->fcgx->envp);
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
http_request_init(struct http_request *r, struct FCGX_Request *fx)
{
	const char *q, *ct;

	memset(r, 0, sizeof(*r));
	r->fcgx = fx;
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
	size_t total = 0;
	int n;

	*len = 0;
	buf[0] = '\0';
	if (r->content_length > (long long)cap)
		return HTTP_BODY_TOO_LARGE;
	/* Read one byte past cap to learn whether the body is too large. */
	while (total <= cap) {
		n = FCGX_GetStr(buf + total, (int)(cap + 1 - total),
		    r->fcgx->in);
		if (n <= 0)
			break;
		total += (size_t)n;
	}
	if (total > cap)
		return HTTP_BODY_TOO_LARGE;
	buf[total] = '\0';
	*len = total;
	if (r->content_length >= 0 && (long long)total != r->content_length)
		return HTTP_BODY_INCOMPLETE;
	return HTTP_BODY_OK;
}

int
http_client_fd(const struct http_request *r)
{
	return r->fcgx != NULL ? r->fcgx->ipcFd : -1;
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
	char head[HTTP_MAX_HEAD];
	int n;

	r->status = status;
	if ((n = http_head(head, sizeof(head), status, content_type, len,
	    extra_headers)) == -1)
		return -1;
	if (FCGX_PutStr(head, n, r->fcgx->out) != n ||
	    (len > 0 && FCGX_PutStr(body, (int)len, r->fcgx->out) != (int)len))
		return -1;
	return 0;
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
	a->content_type = "text/plain";
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
