/*
 * conn.c: a worker's FastCGI connections: read and check each
 * request whole, send, release (see conn.h). Runs in workers only.
 */
#include "server/conn.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"

static struct log_flood conn_flood_stall, conn_flood_invalid,
    conn_flood_early, conn_flood_large;

/* One request's reading: where it stands, for the steps below. */
struct conn_reader {
	int			 fd;
	int			 kept;		/* conn_read_request's */
	const struct conn_policy *pol;
	struct fcgi_request	*fr;		/* fr->in takes the bytes */
	size_t			 have;		/* bytes in fr->in */
	int			 mgmt;		/* management records answered */
	int64_t			 deadline_us;	/* request_read_timeout's */
	struct fcgi_trickle	 trickle;
	struct fcgi_scan	 scan;
};

/* Waits until fd is ready for events or deadline_us: 1 ready, 0 not. */
static int
conn_poll(int fd, short events, int64_t deadline_us)
{
	struct pollfd p = { .fd = fd, .events = events };
	int64_t left;
	int n;

	do {
		if ((left = deadline_us - clock_now_us()) <= 0)
			return 0;
		n = poll(&p, 1, (int)((left + 999) / 1000));
	} while (n == -1 && errno == EINTR);
	return n > 0;
}

int
conn_send(int fd, const void *buf, size_t len, int timeout_ms)
{
	const unsigned char *p = buf;
	int64_t deadline = 0;
	ssize_t n;

	while (len > 0) {
		if ((n = send(fd, p, len, MSG_NOSIGNAL)) > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == 0 || errno != EAGAIN)
			return -1;	/* gone */
		/* Full: the first wait starts the clock (the usual reply
		 * never waits, and reads no clock). */
		if (deadline == 0)
			deadline = clock_now_us() + (int64_t)timeout_ms * 1000;
		if (!conn_poll(fd, POLLOUT, deadline)) {
			errno = ETIMEDOUT;
			return -1;
		}
	}
	return 0;
}

int
conn_release(int fd, unsigned id)
{
	unsigned char rec[FCGI_RELEASE_SIZE];

	return conn_send(fd, rec, fcgi_release(id, rec), 0);
}

/* fcgi_scan_conn()'s answer: one management record, replied to. */
static int
conn_management(void *arg, const unsigned char *rec, size_t len)
{
	const struct conn_reader *rd = arg;
	unsigned char reply[FCGI_MAX_MGMT_REPLY];
	size_t rlen;

	rlen = fcgi_management_reply(rec, len, rd->pol->max_conns, reply);
	if (rlen == 0)
		return -1;
	return conn_send(rd->fd, reply, rlen, rd->pol->write_timeout_ms);
}

void
conn_refuse(int fd, const unsigned char *answer, size_t len,
    struct fcgi_request *fr, const struct conn_policy *pol)
{
	int64_t end = clock_now_us() + CONN_LINGER_MS * 1000;
	size_t dropped = 0;
	ssize_t n;

	if (conn_send(fd, answer, len, pol->write_timeout_ms) == 0) {
		shutdown(fd, SHUT_WR);
		while (dropped < CONN_LINGER_MAX &&
		    conn_poll(fd, POLLIN, end)) {
			if ((n = recv(fd, fr->in, sizeof(fr->in), 0)) <= 0)
				break;
			dropped += (size_t)n;
		}
	}
	close(fd);
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

/*
 * Scans what arrived since the last call, answering and dropping the
 * management records in front of the request: one move per read,
 * however many it held, and at most FCGI_MAX_MGMT_RECORDS moves per
 * connection, so the moves too stay linear in the bytes received.
 * rd->scan then describes what follows.
 */
static void
conn_scan(struct conn_reader *rd)
{
	unsigned char *in = rd->fr->in;
	size_t off;

	off = fcgi_scan_conn(in, rd->have, &rd->scan, &rd->mgmt,
	    conn_management, rd);
	if (off > 0) {
		rd->have -= off;
		memmove(in, in + off, rd->have);
	}
}

/* What one non-blocking read gave: bytes, 0 nothing yet, -1 gone. */
static ssize_t
conn_recv(struct conn_reader *rd)
{
	ssize_t n;

	do
		n = recv(rd->fd, rd->fr->in + rd->have,
		    sizeof(rd->fr->in) - rd->have, 0);
	while (n == -1 && errno == EINTR);
	if (n > 0)
		return n;
	return n == -1 && errno == EAGAIN ? 0 : -1;
}

/*
 * After a read of n bytes (0: none had come) that left the request
 * incomplete: a trickling client (fcgi_trickle_next) is left alone a
 * while, so that its bytes pile up; otherwise the wait is for more.
 * Returns 0 once the deadline passed with nothing more to read.
 */
static int
conn_wait_more(struct conn_reader *rd, size_t n)
{
	int64_t left;
	int ms = n > 0 ? fcgi_trickle_next(&rd->trickle, n) : 0;

	if (ms == 0)
		return n > 0 || conn_poll(rd->fd, POLLIN | POLLRDHUP,
		    rd->deadline_us);
	if ((left = rd->deadline_us - clock_now_us()) <= 0)
		return 1;	/* the next read decides */
	if (left < (int64_t)ms * 1000)
		ms = (int)((left + 999) / 1000);
	(void)poll(NULL, 0, ms);
	return 1;
}

/*
 * What the scan found, once it is more than PARTIAL: the request, whole
 * and alone (gathered), or what ends the connection (logged).
 */
static enum conn_read
conn_verdict(struct conn_reader *rd)
{
	struct fcgi_scan *s = &rd->scan;

	if (s->status == FCGI_SCAN_REQUEST && s->len == rd->have) {
		fcgi_request_gather(rd->fr->in, s, rd->fr);
		return CONN_READ_REQUEST;
	}
	if (s->status == FCGI_SCAN_REQUEST) {
		/* Pipelined or trailing bytes: no FastCGI web server sends
		 * before the reply. */
		s->status = FCGI_SCAN_INVALID;
		s->why = "bytes after the end of the request";
	}
	conn_log_scan(s, rd->have);
	if (s->status != FCGI_SCAN_TOO_LARGE)
		return CONN_READ_CLOSED;
	rd->fr->id = s->id;
	rd->fr->body_too_large = s->body_too_large;
	return CONN_READ_TOO_LARGE;
}

enum conn_read
conn_read_request(int fd, int kept, struct fcgi_request *fr,
    const struct conn_policy *pol)
{
	struct conn_reader rd = { .fd = fd, .kept = kept, .pol = pol,
	    .fr = fr, .deadline_us = clock_now_us() +
	    (int64_t)pol->read_timeout_ms * 1000 };
	enum conn_read res = CONN_READ_CLOSED;
	ssize_t n;

	fcgi_scan_start(&rd.scan);
	for (;;) {
		if ((n = conn_recv(&rd)) == -1)
			break;
		if (n == 0 && rd.have == 0 && rd.mgmt == 0 && kept)
			return CONN_READ_NOTHING;
		rd.have += (size_t)n;
		conn_scan(&rd);
		if (rd.scan.status != FCGI_SCAN_PARTIAL) {
			if ((res = conn_verdict(&rd)) != CONN_READ_CLOSED)
				return res;
			goto close;
		}
		if (!conn_wait_more(&rd, (size_t)n)) {
			log_flood(&conn_flood_stall, CONFIG_LOG_WARNING,
			    "closed a FastCGI connection whose request was "
			    "incomplete %d ms after %s (%zu bytes; "
			    "request_read_timeout)", pol->read_timeout_ms,
			    kept ? "its first byte" : "accept", rd.have);
			goto close;
		}
	}
	/* The peer closed it: between requests on a kept connection that
	 * is nginx ending it (normal), otherwise a request cut short. */
	if (rd.have > 0 || rd.mgmt > 0 || !kept)
		log_flood(&conn_flood_early, CONFIG_LOG_INFO, "a FastCGI "
		    "client closed its connection before its request was "
		    "complete");
close:
	close(fd);
	return CONN_READ_CLOSED;
}
