/*
 * admin.c: the status socket, served from the master's event loop
 * (master only; see admin.h). Each connection collects its bytes in its
 * own buffer as poll reports them; fcgi_scan_more() decides, from where
 * it stopped, when a request is whole and well formed (a trickling
 * client is read only every so often, fcgi_trickle_next); the answer is framed by
 * fcgi_reply() and written as the client reads it. A connection past its
 * deadline is closed, whatever it holds, so reaping, respawns and
 * signals never wait on a status client; and a new client always gets a
 * slot (admin_accept), so idle ones never keep monitoring out.
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
	int64_t		 deadline_us;	/* request_read_timeout from the
					   accept; request_write_timeout
					   from the answer, if sooner */
	int64_t		 last_us;	/* last byte in or out (eviction) */
	int64_t		 quiet_us;	/* trickling: not read before */
	struct fcgi_trickle trickle;	/* its reads' pace */
	int		 mgmt;		/* management records answered */
	struct fcgi_scan scan;		/* where the scan of in stands */
	unsigned char	*in;		/* ADMIN_MAX_IN bytes */
	size_t		 inlen;
	unsigned char	*out;		/* the answer, once there is one */
	size_t		 outlen, outoff;
};

struct admin {
	struct listen_sock	ls;
	struct admin_conn	conns[ADMIN_MAX_CONNS];
	int64_t			accept_paused_us; /* out of descriptors:
						   not accepting before */
	struct fcgi_params	params;
	char			page[STATUS_MAX_REPLY];
	struct log_flood	flood_full, flood_stall, flood_bad,
				flood_starved;
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

/* The milliseconds from now to at_us (0 if past), kept as the least. */
static void
admin_sooner(int64_t now, int64_t at_us, int64_t *first)
{
	int64_t left = at_us > now ? at_us - now : 0;

	if (*first == -1 || left < *first)
		*first = left;
}

int
admin_poll_fds(const struct admin *a, struct pollfd *pfd)
{
	int64_t now = clock_now_us(), first = -1;
	const struct admin_conn *c;
	int i;

	for (i = 0; i < ADMIN_MAX_CONNS; i++) {
		c = &a->conns[i];
		pfd[i].fd = c->fd;
		pfd[i].events = c->out != NULL ? POLLOUT : POLLIN;
		pfd[i].revents = 0;
		if (c->fd == -1)
			continue;
		admin_sooner(now, c->deadline_us, &first);
		if (c->out == NULL && now < c->quiet_us) {
			pfd[i].events = 0;	/* a trickle: not yet */
			admin_sooner(now, c->quiet_us, &first);
		}
	}
	pfd[ADMIN_MAX_CONNS].fd = a->ls.fd;
	pfd[ADMIN_MAX_CONNS].events = POLLIN;
	pfd[ADMIN_MAX_CONNS].revents = 0;
	if (now < a->accept_paused_us) {
		pfd[ADMIN_MAX_CONNS].events = 0;
		admin_sooner(now, a->accept_paused_us, &first);
	}
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
		c->last_us = clock_now_us();
	}
	admin_drop(c);
}

/*
 * Queues the records out (len bytes, malloc'd: c owns them) and writes.
 * An answer waits for its client at most request_write_timeout, as a
 * worker's reply does: a client that asks and never reads gives its slot
 * back soon.
 */
static void
admin_send(const struct admin_ctx *x, struct admin_conn *c,
    unsigned char *out, size_t len)
{
	int64_t until;

	if (out == NULL) {
		admin_drop(c);
		return;
	}
	c->out = out;
	c->outlen = len;
	c->outoff = 0;
	until = clock_now_us() +
	    (int64_t)x->cfg->request_write_timeout * 1000000;
	if (until < c->deadline_us)
		c->deadline_us = until;
	admin_write(c);
}

/* Frames a as the reply to request id (http.h: the workers' bytes). */
static void
admin_respond(const struct admin_ctx *x, struct admin_conn *c, unsigned id,
    const struct http_answer *a)
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
	admin_send(x, c, out, out ? fcgi_reply(id, head, (size_t)hlen, body,
	    len, out) : 0);
}

/* The ping path or the status page, as the workers answer them; else
 * 404 (the workers' reply for a path they do not know). */
static void
admin_answer(const struct admin_ctx *x, struct admin_conn *c,
    const struct fcgi_scan *s)
{
	struct http_answer ans;
	struct http_route q;

	fcgi_params_gather(c->in, s, &x->a->params);
	http_route(&x->a->params, &q);
	if (!http_answer_ping(&ans, x->cfg, q.method, q.method_len, q.path,
	    q.path_len) && !statuspage_answer(&ans, x->cfg, &q, x->fill,
	    x->arg, x->a->page, sizeof(x->a->page)))
		http_answer_error(&ans, 404, "not_found", NULL);
	admin_respond(x, c, s->id, &ans);
}

/* fcgi_scan_conn()'s answer to a management record, never waiting. */
static int
admin_management(void *arg, const unsigned char *rec, size_t len)
{
	struct admin_conn *c = arg;
	unsigned char reply[FCGI_MAX_MGMT_REPLY];
	size_t rlen;

	if ((rlen = fcgi_management_reply(rec, len, ADMIN_MAX_CONNS,
	    reply)) == 0 || send(c->fd, reply, rlen, MSG_DONTWAIT |
	    MSG_NOSIGNAL) != (ssize_t)rlen)
		return -1;
	return 0;
}

static void
admin_refuse(const struct admin_ctx *x, struct admin_conn *c,
    const struct fcgi_scan *s)
{
	unsigned char *out = malloc(HTTP_MAX_REFUSAL);

	admin_send(x, c, out, out ? http_refusal(s->id, s->body_too_large,
	    out) : 0);
}

/*
 * Looks at what c has collected since the last look: answers, waits, or
 * closes. The management records in front are answered and dropped (one
 * move per read).
 */
static void
admin_scan(const struct admin_ctx *x, struct admin_conn *c)
{
	struct fcgi_scan *s = &c->scan;
	size_t off;

	off = fcgi_scan_conn(c->in, c->inlen, s, &c->mgmt, admin_management,
	    c);
	if (off > 0) {
		c->inlen -= off;
		memmove(c->in, c->in + off, c->inlen);
	}
	if (s->status == FCGI_SCAN_PARTIAL && c->inlen == ADMIN_MAX_IN) {
		s->status = FCGI_SCAN_TOO_LARGE;
		s->body_too_large = s->stdin_len > 0;
	}
	if (s->status == FCGI_SCAN_REQUEST)
		admin_answer(x, c, s);
	else if (s->status == FCGI_SCAN_TOO_LARGE)
		admin_refuse(x, c, s);
	else if (s->status != FCGI_SCAN_PARTIAL) {
		log_flood(&x->a->flood_bad, CONFIG_LOG_WARNING,
		    "status socket: closed a connection: %s", s->why);
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
	c->last_us = clock_now_us();
	admin_scan(x, c);
	if (c->fd == -1 || c->out != NULL)
		return;		/* answered or closed */
	/* Still reading after a few bytes: a trickle (fcgi.h). */
	c->quiet_us = c->last_us +
	    (int64_t)fcgi_trickle_next(&c->trickle, (size_t)n) * 1000;
}

/*
 * Closes the connection idle the longest (since a byte came in or went
 * out), for a new one (why: what made room short), and returns its slot.
 * Every slot may hold a client that sends nothing, trickles or never
 * reads its answer, each bounded by its deadline; a new client must not
 * wait for those. A monitor sends its request at once and reads its
 * answer as it comes, so it is never the idlest for long: a new
 * connection always gets in, and idle ones only push each other out.
 */
static struct admin_conn *
admin_drop_idlest(struct admin *a, const char *why)
{
	struct admin_conn *idlest = NULL;
	int i;

	for (i = 0; i < ADMIN_MAX_CONNS; i++)
		if (a->conns[i].fd != -1 && (idlest == NULL ||
		    a->conns[i].last_us < idlest->last_us))
			idlest = &a->conns[i];
	if (idlest == NULL)
		return NULL;
	log_flood(&a->flood_full, CONFIG_LOG_WARNING, "status socket: %s; "
	    "closed the idlest connection (%s, %lld ms since its last byte) "
	    "for a new one", why, idlest->out ? "answer unread" :
	    "request incomplete",
	    (long long)(clock_now_us() - idlest->last_us) / 1000);
	admin_drop(idlest);
	return idlest;
}

/* A free slot, or the idlest connection's (admin_drop_idlest). */
static struct admin_conn *
admin_slot(struct admin *a)
{
	int i;

	for (i = 0; i < ADMIN_MAX_CONNS; i++)
		if (a->conns[i].fd == -1)
			return &a->conns[i];
	return admin_drop_idlest(a, "every connection slot in use");
}

/*
 * Out of descriptors (or memory) at accept: the connection waits in the
 * queue. Closing the idlest connection makes room for it; with none to
 * close, the socket is left alone for LISTEN_ACCEPT_PAUSE_MS rather than
 * polled (and failed) at once again. Returns 1 to try the accept again.
 */
static int
admin_starved(struct admin *a, int err)
{
	char why[128];

	snprintf(why, sizeof(why), "accept failed: %s", strerror(err));
	if (admin_drop_idlest(a, why) != NULL)
		return 1;
	a->accept_paused_us = clock_now_us() + LISTEN_ACCEPT_PAUSE_MS * 1000;
	log_flood(&a->flood_starved, CONFIG_LOG_ERROR, "status socket: %s; "
	    "not accepting for %d ms", why, LISTEN_ACCEPT_PAUSE_MS);
	return 0;
}

static void
admin_accept(const struct admin_ctx *x)
{
	struct admin *a = x->a;
	struct admin_conn *c;
	int i, fd;

	for (i = 0; i < ADMIN_ACCEPTS; i++) {
		fd = listen_accept(a->ls.fd, &x->cfg->listen_allowed);
		if (fd == -1 && listen_accept_starved(errno) &&
		    admin_starved(a, errno))
			continue;
		if (fd == -1)
			return;		/* EAGAIN, or one that went away */
		c = admin_slot(a);
		if ((c->in = malloc(ADMIN_MAX_IN)) == NULL) {
			log_flood(&a->flood_bad, CONFIG_LOG_WARNING,
			    "status socket: out of memory; closed a new "
			    "connection");
			close(fd);
			continue;
		}
		c->fd = fd;
		c->last_us = clock_now_us();
		c->deadline_us = c->last_us +
		    (int64_t)x->cfg->request_read_timeout * 1000000;
		fcgi_scan_start(&c->scan);
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
		    "status socket: closed a connection %s", c->out ?
		    "whose answer was still unread at request_write_timeout" :
		    "still incomplete at request_read_timeout");
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
