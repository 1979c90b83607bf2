/*
 * conn.c: a request's FastCGI connection from accept to close (see
 * conn.h). The one place, with http_client_fd(), that reads or sets
 * libfcgi's connection fields (ipcFd, keepConnection): Debian's libfcgi
 * 2.4.2 keeps them there.
 */
#include "server/conn.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <fastcgi.h>

#include "util/clock.h"
#include "server/fcgi.h"
#include "util/log.h"

#define CONN_DRAIN_CHUNK	4096

/* What a client sent so far, peeked (left in the socket for libfcgi). */
static unsigned char conn_buf[FCGI_MAX_REQUEST + 1];
static int conn_epfd = -1;	/* edge-triggered: new bytes, not old ones */

static struct log_flood conn_flood_stall, conn_flood_invalid,
    conn_flood_early, conn_flood_large;

int
conn_listen_prepare(int listen_fd)
{
	/* Linux doubles it and keeps half for its own accounting. */
	int size = 2 * FCGI_MAX_REQUEST;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(listen_fd, (struct sockaddr *)&ss, &len) == -1)
		return -1;
	if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)
		return 0;
	return setsockopt(listen_fd, SOL_SOCKET, SO_RCVBUF, &size,
	    sizeof(size));
}

int
conn_init(void)
{
	if (conn_epfd == -1)
		conn_epfd = epoll_create1(EPOLL_CLOEXEC);
	return conn_epfd == -1 ? -1 : 0;
}

int
conn_accept(int listen_fd)
{
	return accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
}

static void
conn_write_all(int fd, const unsigned char *p, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return;		/* gone, or SO_SNDTIMEO passed */
		}
		p += n;
		len -= (size_t)n;
	}
}

/* Reads exactly len bytes that are known to be buffered. */
static int
conn_consume(int fd, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = recv(fd, conn_buf, len, MSG_DONTWAIT);
		if (n <= 0 && !(n == -1 && errno == EINTR))
			return -1;
		if (n > 0)
			len -= (size_t)n;
	}
	return 0;
}

/* A management record comes first: read it, answer it. */
static int
conn_management(int fd, size_t len, const struct conn_policy *pol)
{
	unsigned char reply[FCGI_MAX_MGMT_REPLY];
	size_t rlen;

	rlen = fcgi_management_reply(conn_buf, len, pol->max_conns, reply);
	if (rlen == 0 || conn_consume(fd, len) == -1)
		return -1;
	conn_write_all(fd, reply, rlen);
	return 0;
}

/*
 * A request over FCGI_MAX_*: answered without reading it all, then the
 * rest is read and dropped for a bounded time, so the answer is not lost
 * to a reset.
 */
static void
conn_refuse_large(int fd, const struct fcgi_scan *s)
{
	unsigned char out[FCGI_MAX_REFUSAL];
	int64_t end = clock_now_us() + CONN_LINGER_MS * 1000;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t dropped = 0;
	ssize_t n;

	conn_write_all(fd, out, fcgi_refusal(s, out));
	shutdown(fd, SHUT_WR);
	while (dropped < CONN_LINGER_MAX && clock_now_us() < end &&
	    poll(&p, 1, (int)((end - clock_now_us()) / 1000) + 1) > 0) {
		if ((n = recv(fd, conn_buf, sizeof(conn_buf), 0)) <= 0)
			break;
		dropped += (size_t)n;
	}
}

/* Waits for more bytes until the deadline: 1 more, 0 timeout, -1 hang-up. */
static int
conn_wait(int fd, int *watched, int64_t deadline_us)
{
	struct epoll_event ev;
	int64_t left = deadline_us - clock_now_us();
	int n;

	if (!*watched) {
		memset(&ev, 0, sizeof(ev));
		ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
		ev.data.fd = fd;
		if (epoll_ctl(conn_epfd, EPOLL_CTL_ADD, fd, &ev) == -1)
			return -1;
		*watched = 1;
	}
	if (left <= 0)
		return 0;
	do
		n = epoll_wait(conn_epfd, &ev, 1, (int)((left + 999) / 1000));
	while (n == -1 && errno == EINTR);
	if (n <= 0)
		return n == 0 ? 0 : -1;
	return (ev.events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) ? -1 : 1;
}

/*
 * libfcgi reads only what fcgi_scan checked: the whole request is in the
 * socket's buffer, so none of its reads blocks and no management record
 * is among those bytes. keepConnection set makes FCGX_Accept_r take this
 * descriptor as a kept connection instead of accepting one; the
 * request's FCGI_BEGIN_REQUEST then sets the real flag.
 */
static int
conn_handoff(int fd, FCGX_Request *req)
{
	req->ipcFd = fd;
	req->keepConnection = 1;
	if (FCGX_Accept_r(req) == 0)
		return 1;
	/* Cannot happen for a checked request; libfcgi closed fd. */
	log_flood(&conn_flood_invalid, CONFIG_LOG_WARNING,
	    "libfcgi refused a checked request; connection closed");
	return 0;
}

static void
conn_log_scan(const struct fcgi_scan *s, size_t n)
{
	if (s->status == FCGI_SCAN_TOO_LARGE)
		log_flood(&conn_flood_large, CONFIG_LOG_WARNING,
		    "refused a FastCGI request: %s", s->why);
	else
		log_flood(&conn_flood_invalid, CONFIG_LOG_WARNING,
		    "closed a FastCGI connection after %zu bytes: %s", n,
		    s->why);
}

int
conn_read_request(int fd, FCGX_Request *req, const struct conn_policy *pol)
{
	int64_t deadline = clock_now_us() +
	    (int64_t)pol->read_timeout_ms * 1000;
	struct timeval wt = { pol->read_timeout_ms / 1000,
	    (pol->read_timeout_ms % 1000) * 1000 };
	int watched = 0, mgmt = 0, w = 1;
	struct fcgi_scan s;
	ssize_t n = 0;

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &wt, sizeof(wt));
	for (;;) {
		n = recv(fd, conn_buf, sizeof(conn_buf), MSG_PEEK |
		    MSG_DONTWAIT);
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
			goto early;
		fcgi_scan(conn_buf, n > 0 ? (size_t)n : 0, &s);
		if (s.status == FCGI_SCAN_REQUEST)
			return conn_handoff(fd, req);
		if (s.status == FCGI_SCAN_MANAGEMENT) {
			if (++mgmt <= FCGI_MAX_MGMT_RECORDS &&
			    conn_management(fd, s.len, pol) == 0)
				continue;
			s.why = mgmt > FCGI_MAX_MGMT_RECORDS ?
			    "too many management records" :
			    "a malformed management record";
		}
		if (s.status != FCGI_SCAN_PARTIAL) {
			conn_log_scan(&s, (size_t)n);
			if (s.status == FCGI_SCAN_TOO_LARGE)
				conn_refuse_large(fd, &s);
			goto close;
		}
		if (w == -1)
			goto early;	/* it hung up with the request unfinished */
		if ((w = conn_wait(fd, &watched, deadline)) == 0)
			break;
	}
	log_flood(&conn_flood_stall, CONFIG_LOG_WARNING,
	    "closed a FastCGI connection whose request was incomplete %d ms "
	    "after accept (%zd bytes; request_read_timeout)",
	    pol->read_timeout_ms, n > 0 ? n : 0);
	goto close;
early:
	log_flood(&conn_flood_early, CONFIG_LOG_INFO,
	    "a FastCGI client closed its connection before its request was "
	    "complete");
close:
	close(fd);	/* also leaves conn_epfd's set */
	return 0;
}

/* Reads what is left of the request's body: all of it is buffered. */
static int
conn_drain(FCGX_Request *req)
{
	char buf[CONN_DRAIN_CHUNK];
	int n;

	while ((n = FCGX_GetStr(buf, sizeof(buf), req->in)) > 0)
		;
	return FCGX_GetError(req->in) == 0;
}

/*
 * The response's end, written here instead of by libfcgi so that one
 * write carries it all: end of FCGI_STDOUT, FCGI_END_REQUEST (status 0,
 * complete), then the empty FCGI_STDERR record nginx finds after it.
 */
static void
conn_end_unkept(FCGX_Request *req, int fd)
{
	unsigned char tail[4 * FCGI_HEADER_SIZE];

	FCGX_FFlush(req->out);		/* the body's records, if buffered */
	fcgi_header(tail, FCGI_STDOUT, (unsigned)req->requestId, 0);
	fcgi_header(tail + FCGI_HEADER_SIZE, FCGI_END_REQUEST,
	    (unsigned)req->requestId, FCGI_HEADER_SIZE);
	/* FCGI_EndRequestBody: appStatus 0, protocolStatus, reserved. */
	memset(tail + 2 * FCGI_HEADER_SIZE, 0, FCGI_HEADER_SIZE);
	tail[2 * FCGI_HEADER_SIZE + 4] = FCGI_REQUEST_COMPLETE;
	fcgi_header(tail + 3 * FCGI_HEADER_SIZE, FCGI_STDERR,
	    (unsigned)req->requestId, 0);
	conn_write_all(fd, tail, sizeof(tail));
}

void
conn_finish(FCGX_Request *req)
{
	int fd = req->ipcFd;

	if (conn_drain(req))
		FCGX_Detach(req);	/* nothing unread: a plain close() */
	if (!req->keepConnection) {
		FCGX_Finish_r(req);
		return;
	}
	if (FCGX_GetError(req->out) == 0)
		conn_end_unkept(req, fd);
	FCGX_Free(req, 1);		/* streams, params, and the close */
}
