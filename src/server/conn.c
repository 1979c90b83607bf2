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

/* A request's raw bytes as they arrive, then its gathered parts. */
static unsigned char conn_buf[FCGI_MAX_REQUEST + 1];
static unsigned char conn_params[FCGI_MAX_PARAMS];
static unsigned char conn_body[FCGI_MAX_STDIN];

static struct log_flood conn_flood_stall, conn_flood_invalid,
    conn_flood_early, conn_flood_large;

/* What a management record's answer needs (fcgi_scan_conn's arg). */
struct conn_reader {
	int			 fd;
	const struct conn_policy *pol;
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

/*
 * A request over FCGI_MAX_*: answered without reading it all, then the
 * rest is read and dropped for a bounded time, so the answer is not lost
 * to a reset.
 */
static void
conn_refuse_large(int fd, const struct fcgi_scan *s,
    const struct conn_policy *pol)
{
	unsigned char out[FCGI_MAX_REFUSAL];
	int64_t end = clock_now_us() + CONN_LINGER_MS * 1000;
	size_t dropped = 0;
	ssize_t n;

	if (conn_send(fd, out, fcgi_refusal(s, out), pol->write_timeout_ms)
	    == -1)
		return;
	shutdown(fd, SHUT_WR);
	while (dropped < CONN_LINGER_MAX && conn_poll(fd, POLLIN, end)) {
		if ((n = recv(fd, conn_buf, sizeof(conn_buf), 0)) <= 0)
			break;
		dropped += (size_t)n;
	}
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
 * connection, so the moves too stay linear in the bytes received. s
 * then describes what follows.
 */
static void
conn_scan(const struct conn_reader *rd, size_t *have, int *mgmt,
    struct fcgi_scan *s)
{
	size_t off;

	off = fcgi_scan_conn(conn_buf, *have, s, mgmt, conn_management,
	    (void *)rd);
	if (off > 0) {
		*have -= off;
		memmove(conn_buf, conn_buf + off, *have);
	}
}

/*
 * A trickling client (fcgi_trickle_next): ms without reading, never past
 * deadline_us, so that its bytes pile up.
 */
static void
conn_trickle_pause(int ms, int64_t deadline_us)
{
	int64_t left = deadline_us - clock_now_us();

	if (left <= 0)
		return;
	if (left < (int64_t)ms * 1000)
		ms = (int)((left + 999) / 1000);
	(void)poll(NULL, 0, ms);
}

/* What one non-blocking read gave: bytes, 0 nothing yet, -1 gone. */
static ssize_t
conn_recv(int fd, size_t have)
{
	ssize_t n;

	do
		n = recv(fd, conn_buf + have, sizeof(conn_buf) - have, 0);
	while (n == -1 && errno == EINTR);
	if (n > 0)
		return n;
	return n == -1 && errno == EAGAIN ? 0 : -1;
}

enum conn_read
conn_read_request(int fd, int kept, struct fcgi_request *fr,
    const struct conn_policy *pol)
{
	int64_t deadline = clock_now_us() +
	    (int64_t)pol->read_timeout_ms * 1000;
	struct conn_reader rd = { fd, pol };
	size_t have = 0;
	struct fcgi_trickle trickle = { 0, 0, 0 };
	int wait_ms = 0;
	int mgmt = 0;
	struct fcgi_scan s;
	ssize_t n;

	fcgi_scan_start(&s);
	for (;;) {
		if ((n = conn_recv(fd, have)) == -1) {
			if (have == 0 && mgmt == 0 && kept)
				goto close;	/* nginx ended it: normal */
			goto early;
		}
		if (n == 0 && have == 0 && mgmt == 0 && kept)
			return CONN_READ_NOTHING;
		have += (size_t)n;
		conn_scan(&rd, &have, &mgmt, &s);
		if (s.status == FCGI_SCAN_REQUEST && s.len == have) {
			fcgi_request_gather(conn_buf, &s, conn_params,
			    conn_body, fr);
			return CONN_READ_REQUEST;
		}
		if (s.status == FCGI_SCAN_REQUEST) {
			/* Pipelined or trailing bytes: no FastCGI web server
			 * sends before the reply. */
			s.status = FCGI_SCAN_INVALID;
			s.why = "bytes after the end of the request";
		}
		if (s.status != FCGI_SCAN_PARTIAL) {
			conn_log_scan(&s, have);
			if (s.status == FCGI_SCAN_TOO_LARGE)
				conn_refuse_large(fd, &s, pol);
			goto close;
		}
		if (n > 0)
			wait_ms = fcgi_trickle_next(&trickle, (size_t)n);
		if (n > 0 && wait_ms > 0)
			conn_trickle_pause(wait_ms, deadline);
		else if (n == 0 &&
		    !conn_poll(fd, POLLIN | POLLRDHUP, deadline))
			break;
	}
	log_flood(&conn_flood_stall, CONFIG_LOG_WARNING,
	    "closed a FastCGI connection whose request was incomplete %d ms "
	    "after %s (%zu bytes; request_read_timeout)",
	    pol->read_timeout_ms, kept ? "its first byte" : "accept", have);
	goto close;
early:
	log_flood(&conn_flood_early, CONFIG_LOG_INFO,
	    "a FastCGI client closed its connection before its request was "
	    "complete");
close:
	close(fd);
	return CONN_READ_CLOSED;
}
