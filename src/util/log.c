/*
 * log.c: leveled logging to stderr, a file or syslog(3), shared by master
 * and workers. Each line is formatted into one buffer and written with one
 * write(2) (or one syslog(3) datagram), so lines from several workers
 * never interleave.
 */
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"

#define LOG_MAX_LINE	2048

static enum config_log_level log_level = CONFIG_LOG_NOTICE;
static char log_path[CONFIG_MAX_VALUE];
static int log_syslog;			/* 1: error_log = syslog */
static char log_ident[CONFIG_MAX_VALUE] = "cfpm";	/* openlog keeps it */
static int log_facility = LOG_DAEMON;
static const char *log_role = "master";
static uid_t log_owner_uid = (uid_t)-1;
static gid_t log_owner_gid = (gid_t)-1;

static const char *const log_names[] = {
	[CONFIG_LOG_ALERT] = "ALERT",
	[CONFIG_LOG_ERROR] = "ERROR",
	[CONFIG_LOG_WARNING] = "WARNING",
	[CONFIG_LOG_NOTICE] = "NOTICE",
	[CONFIG_LOG_INFO] = "INFO",
	[CONFIG_LOG_DEBUG] = "DEBUG",
};

void
log_set_file_owner(uid_t uid, gid_t gid)
{
	log_owner_uid = uid;
	log_owner_gid = gid;
}

int
log_open_append(const char *path)
{
	struct stat st;
	int fd, created = 0, saved;

	fd = open(path, LOG_OPEN_FLAGS);
	if (fd == -1 && errno == ENOENT) {
		fd = open(path, LOG_CREATE_FLAGS, LOG_FILE_MODE);
		created = fd != -1;
		if (fd == -1 && errno == EEXIST)	/* another worker won */
			fd = open(path, LOG_OPEN_FLAGS);
	}
	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == -1)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;		/* a FIFO, a device: not a log file */
		goto fail;
	}
	/* Root made it: give it to the workers' user, or a worker that is
	 * no longer root could not reopen it after a rotation. */
	if (created && log_owner_uid != (uid_t)-1 && geteuid() == 0 &&
	    fchown(fd, log_owner_uid, log_owner_gid) == -1)
		goto fail;
	return fd;
fail:
	saved = errno;
	close(fd);
	errno = saved;
	return -1;
}

static int
log_open_file(void)
{
	int fd;

	if ((fd = log_open_append(log_path)) == -1)
		return -1;
	if (dup2(fd, STDERR_FILENO) == -1) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

void
log_set_syslog(const char *ident, int facility)
{
	snprintf(log_ident, sizeof(log_ident), "%s", ident);
	log_facility = facility;
}

int
log_open(enum config_log_level level, const char *path)
{
	log_level = level;
	if (log_syslog)
		closelog();
	log_syslog = 0;
	log_path[0] = '\0';
	if (path == NULL || path[0] == '\0' || strcmp(path, "stderr") == 0)
		return 0;
	if (strcmp(path, CONFIG_SYSLOG) == 0) {
		/* LOG_NDELAY: connected now, before the workers fork and
		 * their filter; they send on the inherited socket. */
		openlog(log_ident, LOG_PID | LOG_NDELAY, log_facility);
		log_syslog = 1;
		return 0;
	}
	snprintf(log_path, sizeof(log_path), "%s", path);
	return log_open_file();
}

int
log_reopen(void)
{
	if (log_path[0] == '\0')
		return 0;
	return log_open_file();
}

void
log_set_role(const char *role)
{
	log_role = role;
}

static void
log_vwrite(enum config_log_level level, const char *fmt, va_list ap)
{
	char line[LOG_MAX_LINE];
	struct tm tm;
	time_t now;
	int n, m, saved = errno;

	if (level > log_level)
		return;
	if (log_syslog) {
		/* syslog adds the time, the ident and the pid itself. */
		n = snprintf(line, sizeof(line), "%s: ", log_role);
		if (n < 0 || (size_t)n >= sizeof(line))
			n = 0;
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
		syslog((int)level, "%s", line);
		errno = saved;
		return;
	}
	if (log_path[0] == '\0' && getenv("JOURNAL_STREAM") != NULL) {
		n = snprintf(line, sizeof(line), "<%d>%s %d: ", (int)level,
		    log_role, (int)getpid());
	} else {
		now = time(NULL);
		gmtime_r(&now, &tm);
		n = snprintf(line, sizeof(line),
		    "[%04d-%02d-%02dT%02d:%02d:%02dZ] %s: %s %d: ",
		    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		    tm.tm_min, tm.tm_sec, log_names[level], log_role,
		    (int)getpid());
	}
	if (n < 0 || (size_t)n >= sizeof(line) - 1)
		n = 0;
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) == -1) {
		/* nowhere left to report it */
	}
	errno = saved;
}

#define LOG_FUNC(name, level)				\
void							\
name(const char *fmt, ...)				\
{							\
	va_list ap;					\
							\
	va_start(ap, fmt);				\
	log_vwrite(level, fmt, ap);			\
	va_end(ap);					\
}

static void __attribute__((format(printf, 2, 3)))
log_write(enum config_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(level, fmt, ap);
	va_end(ap);
}

LOG_FUNC(log_err, CONFIG_LOG_ERROR)
LOG_FUNC(log_warn, CONFIG_LOG_WARNING)
LOG_FUNC(log_notice, CONFIG_LOG_NOTICE)
LOG_FUNC(log_info, CONFIG_LOG_INFO)
LOG_FUNC(log_debug, CONFIG_LOG_DEBUG)

int
log_flood(struct log_flood *f, enum config_log_level level, const char *fmt,
    ...)
{
	char msg[LOG_MAX_LINE];
	int64_t now = clock_now_us();
	va_list ap;

	if (level > log_level)
		return 0;
	if (now < f->next_us) {
		f->suppressed++;
		return 0;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (f->suppressed > 0)
		log_write(level, "%s (and %lu more since the last report)",
		    msg, f->suppressed);
	else
		log_write(level, "%s", msg);
	f->suppressed = 0;
	f->next_us = now + LOG_FLOOD_INTERVAL_US;
	return 1;
}

void
log_command(enum config_log_level level, const char *fmt, ...)
{
	char msg[LOG_MAX_LINE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (getenv("JOURNAL_STREAM") != NULL)
		fprintf(stderr, "<%d>cfpm: %s\n", (int)level, msg);
	else
		fprintf(stderr, "cfpm: %s\n", msg);
}

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(CONFIG_LOG_ALERT, fmt, ap);
	va_end(ap);
	exit(1);
}
