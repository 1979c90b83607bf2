/*
 * accesslog.h: the optional per-request access log (worker).
 * One line per request, written with one write(2) to a file opened in
 * append mode, so lines from several workers never interleave. Only the
 * path is logged, never the query string or any header: no tokens.
 */
#ifndef CFPM_ACCESSLOG_H
#define CFPM_ACCESSLOG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "server/http.h"

#define ACCESSLOG_MAX_LINE	1024

/* What one line can tell. */
struct accesslog_entry {
	const char	*method;
	const char	*path;		/* raw path, no query */
	size_t		 path_len;
	const char	*request_id;	/* NULL if nginx sent none */
	int		 status;
	int64_t		 duration_us;
	int64_t		 cpu_us;
	pid_t		 pid;
	int64_t		 time;		/* Unix seconds */
};

/*
 * PURE. Formats e by fmt into buf (len bytes, NUL-terminated, newline
 * added): %t time (UTC, ISO 8601), %p pid, %m method, %r path, %s status,
 * %d duration in ms, %C CPU in ms, %i request id ("-" if none), %% a
 * percent sign. Method, path and request id are client bytes and go
 * through esc_text() (esc.h): control characters and invalid UTF-8 as
 * \xNN, a backslash as \\. Returns the line length (truncated lines
 * still end in a newline, and never in half an escape).
 */
size_t accesslog_format(char *buf, size_t len, const char *fmt,
    const struct accesslog_entry *e);

/*
 * Opens path for appending (path "" = off). Returns 0 or -1 (errno).
 */
int accesslog_open(const char *path);

/* Writes one line for e with fmt when the log is open. */
void accesslog_write(const char *fmt, const struct accesslog_entry *e);

/*
 * Writes r's line with fmt when the log is open: its method, path,
 * request id and status, duration_us and cpu_us as the worker measured
 * them, this process's pid and the time now.
 */
void accesslog_request(const char *fmt, const struct http_request *r,
    int64_t duration_us, int64_t cpu_us);

/* Reopens the file after rotation. Returns 0 or -1 (errno). */
int accesslog_reopen(void);

#endif
