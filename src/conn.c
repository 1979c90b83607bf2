/*
 * conn.c: the end of a request's FastCGI connection (see conn.h). The one
 * place, with http_client_fd(), that reads libfcgi's connection fields
 * (ipcFd, keepConnection): Debian's libfcgi 2.4.2 keeps them there.
 */
#include "conn.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <fastcgi.h>

#define CONN_DRAIN_CHUNK	4096

/* Reads what is left of the request; 1 when all of it was read. */
static int
conn_drain(FCGX_Request *req, int fd)
{
	struct timeval wait = { 0, CONN_DRAIN_WAIT_MS * 1000 };
	char buf[CONN_DRAIN_CHUNK];
	size_t drained = 0;
	int n;

	if (FCGX_HasSeenEOF(req->in) != EOF)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
	while (drained < CONN_DRAIN_MAX &&
	    (n = FCGX_GetStr(buf, sizeof(buf), req->in)) > 0)
		drained += (size_t)n;
	return drained < CONN_DRAIN_MAX;
}

/* A record header: version, type, request id, content length 0 or n. */
static void
conn_header(unsigned char *h, int type, int id, int len)
{
	h[0] = FCGI_VERSION_1;
	h[1] = (unsigned char)type;
	h[2] = (unsigned char)(id >> 8);
	h[3] = (unsigned char)id;
	h[4] = 0;
	h[5] = (unsigned char)len;
	h[6] = h[7] = 0;
}

static void
conn_write_all(int fd, const unsigned char *p, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return;		/* nginx went away: nothing to tell */
		}
		p += n;
		len -= (size_t)n;
	}
}

/*
 * The response's end, written here instead of by libfcgi so that one
 * write carries it all: end of FCGI_STDOUT, FCGI_END_REQUEST (status 0,
 * complete), then the empty FCGI_STDERR record nginx finds after it.
 */
static void
conn_end_unkept(FCGX_Request *req, int fd)
{
	unsigned char tail[4 * FCGI_HEADER_LEN];

	FCGX_FFlush(req->out);		/* the body's records, if buffered */
	conn_header(tail, FCGI_STDOUT, req->requestId, 0);
	conn_header(tail + FCGI_HEADER_LEN, FCGI_END_REQUEST, req->requestId,
	    FCGI_HEADER_LEN);
	/* FCGI_EndRequestBody: appStatus 0, protocolStatus, reserved. */
	memset(tail + 2 * FCGI_HEADER_LEN, 0, FCGI_HEADER_LEN);
	tail[2 * FCGI_HEADER_LEN + 4] = FCGI_REQUEST_COMPLETE;
	conn_header(tail + 3 * FCGI_HEADER_LEN, FCGI_STDERR, req->requestId, 0);
	conn_write_all(fd, tail, sizeof(tail));
}

void
conn_finish(FCGX_Request *req)
{
	int fd = req->ipcFd;

	if (conn_drain(req, fd))
		FCGX_Detach(req);	/* nothing unread: a plain close() */
	if (!req->keepConnection) {
		FCGX_Finish_r(req);
		return;
	}
	if (FCGX_GetError(req->out) == 0)
		conn_end_unkept(req, fd);
	FCGX_Free(req, 1);		/* streams, params, and the close */
}
