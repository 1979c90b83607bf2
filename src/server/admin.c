/*
 * admin.c: the status socket, served from the master's event loop
 * (master only; see admin.h). Each connection collects its bytes in its
 * own buffer as poll reports them; fcgi_scan() decides when a request is
 * whole and well formed; the answer is framed by fcgi_reply() and written
 * as the client reads it. A connection past its deadline is closed,
 * whatever it holds, so reaping, respawns and signals never wait on a
 * status client.
 */
#include "server/admin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/clock.h"
#include "server/fcgi.h"
#include "server/http.h"
#include "server/statuspage.h"
#include "util/log.h"

/* A status request is parameters only; a body is refused, not read. */
#define ADMIN_MAX_IN		(FCGI_MAX_PARAMS + 16 * 1024)
#define ADMIN_ACCEPTS		(2 * ADMIN_MAX_CONNS)	/* per wake-up */

struct admin_conn {
	int		 fd;		/* -1: free */
	int64_t		 deadline_us;
	int		 mgmt;		/* management records answered */
	unsigned char	*in;		/* ADMIN_MAX_IN bytes */
	size_t		 inlen;
	unsigned char	*out;		/* the answer, once there is one */
	size_t		 outlen, outoff;
};

struct admin {
	struct listen_sock	ls;
	struct admin_conn	conns[ADMIN_MAX_CONNS];
	unsigned char		params[FCGI_MAX_PARAMS];
	char			page[STATUS_MAX_REPLY];
	struct log_flood	flood_full, flood_stall, flood_bad;
};

/* What admin_process needs to answer a request. */
struct admin_ctx {
	struct admin		*a;
	const struct config	*cfg;
	int			(*fill)(struct status_view *, void *);
	void			*arg;
};

struct admin *
admin_open(const struct config *cfg, const struct listen_sock *inherited)
{
	struct listen_spec spec;
	struct admin *a;
	int i;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	for (i = 0; i < ADMIN_MAX_CONNS; i++)
		a->conns[i].fd = -1;
	listen_spec_status(cfg, &spec);
	if (inherited != NULL)
		a->ls = *inherited;
	if ((inherited == NULL && listen_bind(&a->ls, &spec) == -1) ||
	    fcntl(a->ls.fd, F_SETFL, O_NONBLOCK) == -1) {
		log_err("%s: status socket %s failed", __func__,
		    cfg->status_listen);
		listen_close(&a->ls);
		free(a);
		return NULL;
	}
	return a;
}

int
admin_poll_fds(const struct admin *a, struct pollfd *pfd)
{
	int64_t now = clock_now_us(), first = -1, left;
	const struct admin_conn *c;
	int i;

	for (i = 0; i < ADMIN_MAX_CONNS; i++) {
		c = &a->conns[i];
		pfd[i].fd = c->fd;
		pfd[i].events = c->out != NULL ? POLLOUT : POLLIN;
		pfd[i].revents = 0;
		if (c->fd == -1)
			continue;
		left = c->deadline_us > now ? c->deadline_us - now : 0;
		if (first == -1 || left < first)
			first = left;
	}
	pfd[ADMIN_MAX_CONNS].fd = a->ls.fd;
	pfd[ADMIN_MAX_CONNS].events = POLLIN;
	pfd[ADMIN_MAX_CONNS].revents = 0;
	return first == -1 ? -1 : (int)((first + 999) / 1000);
}

static void
admin_drop(struct admin_conn *c)
{
	close(c->fd);
	free(c->in);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* Writes what the client takes now; the connection ends with the answer. */
static void
admin_write(struct admin_conn *c)
{
	ssize_t n;

	while (c->outoff < c->outlen) {
		n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff,
		    MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;		/* poll says when it can take more */
		if (n <= 0)
			break;
		c->outoff += (size_t)n;
	}
	admin_drop(c);
}

/* Queues the records out (len bytes, malloc'd: c owns them) and writes. */
static void
admin_send(struct admin_conn *c, unsigned char *out, size_t len)
{
	if (out == NULL) {
		admin_drop(c);
		return;
	}
	c->out = out;
	c->outlen = len;
	c->outoff = 0;
	admin_write(c);
}

/* Frames a as the reply to request id (http.h: the workers' bytes). */
static void
admin_respond(struct admin_conn *c, unsigned id, const struct http_answer *a)
{
	char head[HTTP_MAX_HEAD];
	const char *body = a->body;
	size_t len = a->len;
	unsigned char *out;
	int hlen;

	hlen = http_head(head, sizeof(head), a->status, a->content_type, len,
	    a->headers);
	if (hlen == -1) {
		admin_drop(c);
		return;
	}
	out = malloc(fcgi_reply_size((size_t)hlen + len));
	admin_send(c, out, out ? fcgi_reply(id, head, (size_t)hlen, body, len,
	    out) : 0);
}

/* The ping path or the status page, as the workers answer them; else
 * 404 (the workers' reply for a path they do not know). */
static void
admin_answer(const struct admin_ctx *x, struct admin_conn *c,
    const struct fcgi_scan *s)
{
	struct http_answer ans;
	struct http_route q;
	size_t plen;

	plen = fcgi_params_copy(c->in, s, x->a->params);
	http_route(x->a->params, plen, &q);
	if (!http_answer_ping(&ans, x->cfg, q.method, q.method_len, q.path,
	    q.path_len) && !statuspage_answer(&ans, x->cfg, &q, x->fill,
	    x->arg, x->a->page, sizeof(x->a->page)))
		http_answer_error(&ans, 404, "not_found", NULL);
	admin_respond(c, s->id, &ans);
}

/* A management record first: answered, then taken off the buffer. */
static int
admin_management(struct admin_conn *c, size_t len)
{
	unsigned char reply[FCGI_MAX_MGMT_REPLY];
	size_t rlen;

	if (++c->mgmt > FCGI_MAX_MGMT_RECORDS ||
	    (rlen = fcgi_management_reply(c->in, len, ADMIN_MAX_CONNS,
	    reply)) == 0 ||
	    send(c->fd, reply, rlen, MSG_DONTWAIT | MSG_NOSIGNAL) !=
	    (ssize_t)rlen)
		return -1;
	memmove(c->in, c->in + len, c->inlen - len);
	c->inlen -= len;
	return 0;
}

static void
admin_refuse(struct admin_conn *c, const struct fcgi_scan *s)
{
	unsigned char *out = malloc(FCGI_MAX_REFUSAL);

	admin_send(c, out, out ? fcgi_refusal(s, out) : 0);
}

/* Looks at what c has collected: answers, waits, or closes. */
static void
admin_scan(const struct admin_ctx *x, struct admin_conn *c)
{
	struct fcgi_scan s;

	for (;;) {
		fcgi_scan(c->in, c->inlen, &s);
		if (s.status == FCGI_SCAN_MANAGEMENT &&
		    admin_management(c, s.len) == 0)
			continue;
		break;
	}
	if (s.status == FCGI_SCAN_PARTIAL && c->inlen == ADMIN_MAX_IN) {
		s.status = FCGI_SCAN_TOO_LARGE;
		s.body_too_large = s.stdin_len > 0;
	}
	if (s.status == FCGI_SCAN_REQUEST)
		admin_answer(x, c, &s);
	else if (s.status == FCGI_SCAN_TOO_LARGE)
		admin_refuse(c, &s);
	else if (s.status != FCGI_SCAN_PARTIAL) {
		log_flood(&x->a->flood_bad, CONFIG_LOG_WARNING,
		    "status socket: closed a connection: %s", s.why ? s.why :
		    "a management record it could not answer");
		admin_drop(c);
	}
}

static void
admin_read(const struct admin_ctx *x, struct admin_conn *c)
{
	ssize_t n;

	n = recv(c->fd, c->in + c->inlen, ADMIN_MAX_IN - c->inlen,
	    MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK ||
	    errno == EINTR))
		return;
	if (n <= 0) {
		admin_drop(c);	/* gone before its request was complete */
		return;
	}
	c->inlen += (size_t)n;
	admin_scan(x, c);
}

static struct admin_conn *
admin_free_conn(struct admin *a)
{
	int i;

	for (i = 0; i < ADMIN_MAX_CONNS; i++)
		if (a->conns[i].fd == -1)
			return &a->conns[i];
	return NULL;
}

static void
admin_accept(const struct admin_ctx *x)
{
	struct admin *a = x->a;
	struct admin_conn *c;
	int i, fd;

	for (i = 0; i < ADMIN_ACCEPTS; i++) {
		fd = listen_accept(a->ls.fd, &x->cfg->listen_allowed);
		if (fd == -1)
			return;		/* EAGAIN, or one that went away */
		if ((c = admin_free_conn(a)) == NULL ||
		    (c->in = malloc(ADMIN_MAX_IN)) == NULL) {
			log_flood(&a->flood_full, CONFIG_LOG_WARNING,
			    "status socket: %d connections open; closed a "
			    "new one", ADMIN_MAX_CONNS);
			close(fd);
			continue;
		}
		c->fd = fd;
		c->deadline_us = clock_now_us() +
		    (int64_t)x->cfg->request_read_timeout * 1000000;
		admin_read(x, c);	/* the request is often there already */
	}
}

void
admin_process(struct admin *a, const struct pollfd *pfd,
    const struct config *cfg, int (*fill)(struct status_view *, void *),
    void *arg)
{
	struct admin_ctx x = { a, cfg, fill, arg };
	int64_t now = clock_now_us();
	struct admin_conn *c;
	int i;

	for (i = 0; i < ADMIN_MAX_CONNS; i++) {
		c = &a->conns[i];
		if (c->fd == -1 || c->fd != pfd[i].fd || pfd[i].revents == 0)
			continue;
		if (c->out != NULL)
			admin_write(c);
		else
			admin_read(&x, c);
	}
	for (i = 0; i < ADMIN_MAX_CONNS; i++) {
		c = &a->conns[i];
		if (c->fd == -1 || now < c->deadline_us)
			continue;
		log_flood(&a->flood_stall, CONFIG_LOG_WARNING,
		    "status socket: closed a connection still %s after "
		    "request_read_timeout", c->out ? "unread" : "incomplete");
		admin_drop(c);
	}
	if (pfd[ADMIN_MAX_CONNS].revents & POLLIN)
		admin_accept(&x);
}

void
admin_forget(struct admin *a)
{
	int i;

	for (i = 0; i < ADMIN_MAX_CONNS; i++)
		if (a->conns[i].fd != -1)
			close(a->conns[i].fd);
	close(a->ls.fd);
}

void
admin_close(struct admin *a)
{
	int i;

	if (a == NULL)
		return;
	for (i = 0; i < ADMIN_MAX_CONNS; i++)
		if (a->conns[i].fd != -1)
			admin_drop(&a->conns[i]);
	listen_close(&a->ls);
	free(a);
}
