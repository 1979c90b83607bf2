/*
 * log.h: one line per event to stderr or the error_log file (any process).
 * Under systemd (JOURNAL_STREAM set) lines carry <N> priority prefixes for
 * journald; otherwise a timestamp, the level and the pid. Never log tokens,
 * signatures or passwords.
 */
#ifndef CFPM_LOG_H
#define CFPM_LOG_H

#include <stdarg.h>
#include <stdint.h>

#include "config.h"

/*
 * Sets the threshold and the destination: path NULL or "stderr" keeps
 * stderr, anything else is opened for append (and dup'ed onto stderr, so
 * libraries writing to stderr land there too). Returns 0 or -1 (errno).
 */
int log_open(enum config_log_level level, const char *path);

/* Reopens the error_log file after rotation (SIGUSR1). Returns 0 or -1. */
int log_reopen(void);

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

/* Logs at error level and exits 1: startup failures only. */
void fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

#endif
