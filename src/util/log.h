/*
 * log.h: one line per event to stderr, the error_log file or syslog(3)
 * (any process). Under systemd (JOURNAL_STREAM set) stderr lines carry
 * <N> priority prefixes for journald; file lines a timestamp, the level
 * and the pid; syslog gets the level as its priority, the facility and
 * ident of syslog.facility / syslog.ident and the pid (LOG_PID), as
 * PHP-FPM's error_log = syslog. Never log tokens, signatures or
 * passwords.
 */
#ifndef CFPM_LOG_H
#define CFPM_LOG_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/config.h"

/*
 * Sets the threshold and the destination: path NULL or "stderr" keeps
 * stderr; CONFIG_SYSLOG ("syslog") sends every line to syslog(3) with the
 * ident and facility of log_set_syslog(), connecting at once so that
 * workers inherit the connection (stderr is left as it is); anything else
 * is opened for append (and dup'ed onto stderr, so libraries writing to
 * stderr land there too). Returns 0 or -1 (errno).
 */
int log_open(enum config_log_level level, const char *path);

/*
 * The ident (copied, cut to CONFIG_MAX_VALUE) and facility (LOG_DAEMON,
 * ...) for error_log = syslog; used by the next log_open().
 */
void log_set_syslog(const char *ident, int facility);

/* Reopens the error_log file after rotation (SIGUSR1); nothing to do
 * for stderr and syslog. Returns 0 or -1. */
int log_reopen(void);

/*
 * How every log file (error_log, access.log) is opened: write-only in
 * append mode, never through a symbolic link (O_NOFOLLOW), never left to
 * a child (O_CLOEXEC), never blocking on a FIFO someone placed at the
 * path (O_NONBLOCK, no effect on a regular file). An existing file is
 * opened as it is; a missing one is created exclusively (O_EXCL), never
 * truncated. These two flag sets are the only opens for writing that a
 * worker's system-call filter lets through (server/sandbox.c).
 */
#define LOG_OPEN_FLAGS	(O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | \
			 O_NONBLOCK)
#define LOG_CREATE_FLAGS	(LOG_OPEN_FLAGS | O_CREAT | O_EXCL)
#define LOG_FILE_MODE	0640

/*
 * Opens path with the flags above and requires a regular file. A file
 * this process creates while it is root is handed to the owner set with
 * log_set_file_owner(), so that workers which no longer are root can
 * reopen it after a rotation. Returns the descriptor, or -1 (errno).
 */
int log_open_append(const char *path);

/*
 * The owner of the log files a root process creates from now on
 * (inherited by workers across fork); (uid_t)-1 leaves them root's.
 */
void log_set_file_owner(uid_t uid, gid_t gid);

/* Names the process in each line ("master", "worker"). */
void log_set_role(const char *role);

void log_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A condition that can repeat per request (a stalled client, a refused
 * record, a failing database): the first occurrence is logged, later ones
 * within LOG_FLOOD_INTERVAL_US are counted, and the next line written
 * says how many were left out. One struct per condition, zeroed to start;
 * per process. Keeps journald's rate limit from dropping other messages.
 * Returns 1 if a line was written, 0 if it was counted or filtered out.
 */
#define LOG_FLOOD_INTERVAL_US	(10 * 1000000)
struct log_flood {
	int64_t		next_us;	/* earliest time for the next line */
	unsigned long	suppressed;	/* occurrences not logged since */
};
int log_flood(struct log_flood *f, enum config_log_level level,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * A line of cfpm's command line, before logging is set up (cfpm -t, a
 * start refused): "cfpm: ..." on stderr, as its user reads it. Under
 * systemd (JOURNAL_STREAM set) it carries the <N> prefix of level, so
 * that the journal files why ExecStartPre's or ExecReload's cfpm -t
 * refused a file at that priority (plain stderr lines are info).
 */
void log_command(enum config_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Logs at alert level (always shown, as PHP-FPM's fatal lines) and
 * exits 1: startup failures only. */
void fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

#endif
