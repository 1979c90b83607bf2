/*
 * accesslog.c: format and append access-log lines (worker).
 */
#include "server/accesslog.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/config.h"
#include "util/esc.h"
#include "util/log.h"

static int accesslog_fd = -1;
static char accesslog_path[CONFIG_MAX_VALUE];

/* Appends at most what fits; returns the new length. */
static size_t
al_put(char *buf, size_t len, size_t pos, const char *s, size_t n)
{
	if (pos + n > len)
		n = len - pos;
	memcpy(buf + pos, s, n);
	return pos + n;
}

/*
 * Appends client bytes escaped (esc.h): a newline cannot forge a line,
 * nor a byte sequence reach a terminal, and a cut never splits an escape.
 * buf has len + 1 bytes, so esc_text's NUL always lands inside it.
 */
static size_t
al_client(char *buf, size_t len, size_t pos, const char *s, size_t n)
{
	return pos + esc_text(buf + pos, len - pos + 1, s, n);
}

static size_t
al_field(char *buf, size_t len, size_t pos, char conv,
    const struct accesslog_entry *e)
{
	char tmp[64];
	struct tm tm;
	time_t t = (time_t)e->time;
	int n = 0;

	switch (conv) {
	case 't':
		gmtime_r(&t, &tm);
		n = (int)strftime(tmp, sizeof(tmp), "%Y-%m-%dT%H:%M:%SZ", &tm);
		break;
	case 'p': n = snprintf(tmp, sizeof(tmp), "%d", (int)e->pid); break;
	case 's': n = snprintf(tmp, sizeof(tmp), "%d", e->status); break;
	case 'd':
		n = snprintf(tmp, sizeof(tmp), "%.3f", e->duration_us / 1e3);
		break;
	case 'C':
		n = snprintf(tmp, sizeof(tmp), "%.3f", e->cpu_us / 1e3);
		break;
	case 'm':
		return al_client(buf, len, pos, e->method, strlen(e->method));
	case 'r':
		return al_client(buf, len, pos, e->path, e->path_len);
	case 'i':
		if (e->request_id == NULL)
			return al_put(buf, len, pos, "-", 1);
		return al_client(buf, len, pos, e->request_id,
		    strlen(e->request_id));
	case '%':
		return al_put(buf, len, pos, "%", 1);
	default:
		tmp[0] = '%';
		tmp[1] = conv;
		n = 2;
	}
	return al_put(buf, len, pos, tmp, n > 0 ? (size_t)n : 0);
}

size_t
accesslog_format(char *buf, size_t len, const char *fmt,
    const struct accesslog_entry *e)
{
	size_t pos = 0, room;
	const char *p;

	if (len < 2)
		return 0;
	room = len - 2;		/* newline and NUL */
	for (p = fmt; *p != '\0' && pos < room; p++) {
		if (*p != '%' || p[1] == '\0')
			buf[pos++] = *p;
		else
			pos = al_field(buf, room, pos, *++p, e);
	}
	buf[pos++] = '\n';
	buf[pos] = '\0';
	return pos;
}

int
accesslog_open(const char *path)
{
	snprintf(accesslog_path, sizeof(accesslog_path), "%s", path);
	return accesslog_reopen();
}

int
accesslog_reopen(void)
{
	int fd;

	if (accesslog_path[0] == '\0')
		return 0;
	if ((fd = log_open_append(accesslog_path)) == -1)
		return -1;
	if (accesslog_fd != -1)
		close(accesslog_fd);
	accesslog_fd = fd;
	return 0;
}

void
accesslog_write(const char *fmt, const struct accesslog_entry *e)
{
	char line[ACCESSLOG_MAX_LINE];
	size_t n;

	if (accesslog_fd == -1)
		return;
	n = accesslog_format(line, sizeof(line), fmt, e);
	if (write(accesslog_fd, line, n) == -1) {
		/* a full disk must not fail the request */
	}
}

void
accesslog_request(const char *fmt, const struct http_request *r,
    int64_t duration_us, int64_t cpu_us)
{
	struct accesslog_entry e;

	if (accesslog_fd == -1)
		return;
	e.method = r->method;
	e.path = r->path;
	e.path_len = r->path_len;
	e.request_id = r->request_id;
	e.status = r->status;
	e.duration_us = duration_us;
	e.cpu_us = cpu_us;
	e.pid = getpid();
	e.time = (int64_t)time(NULL);
	accesslog_write(fmt, &e);
}
