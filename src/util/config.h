/*
 * config.h: the cfpm configuration (PURE: text -> struct config).
 *
 * The file is PHP-FPM-like: "key = value" lines, ';' or '#' comments,
 * optional "[section]" headers (cfpm runs one pool: a section other than
 * [global] names it, as the status page shows), and PHP-FPM's
 * "include = pattern", which the caller's loader resolves (config_parse_with:
 * this module reads no file).
 * Values may be double-quoted. A parse error names file:line and the
 * reason; a validation error, the file and the reason.
 */
#ifndef CFPM_CONFIG_H
#define CFPM_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/allow.h"

#define CONFIG_MAX_LINE		4096	/* longest line in a config file */
#define CONFIG_MAX_VALUE	1024	/* longest value */
#define CONFIG_MAX_CHILDREN	1024	/* pm.max_children upper bound */
#define CONFIG_ERR_LEN		512	/* the error buffer callers pass */
#define CONFIG_MAX_INCLUDE_DEPTH 5	/* files in one include chain, the
					   main one counted (PHP-FPM's) */
#define CONFIG_MAX_PORT		65535
#define CONFIG_MAX_UNIX_PATH	107	/* sockaddr_un's sun_path, less NUL */
#define CONFIG_SYSLOG		"syslog"	/* error_log: syslog(3) */
#define CONFIG_DEFAULT_ACCESS_FORMAT	"%t %p %i \"%m %r\" %s %d %C"

enum config_auth_errors {
	CONFIG_AUTH_RFC6750 = 0,	/* RFC 6750 statuses and headers */
	CONFIG_AUTH_COMPAT,		/* every failure 401 invalid_token */
};

/* syslog(3)'s priorities, PHP-FPM's names (and info). */
enum config_log_level {
	CONFIG_LOG_ALERT = 1,
	CONFIG_LOG_ERROR = 3,
	CONFIG_LOG_WARNING = 4,
	CONFIG_LOG_NOTICE = 5,
	CONFIG_LOG_INFO = 6,
	CONFIG_LOG_DEBUG = 7,
};

struct config {
	char		pool_name[CONFIG_MAX_VALUE];	/* last [section] */
	char		app[CONFIG_MAX_VALUE];	/* the application, by name
						   (main.c's table) */

	/* listen socket */
	char		listen[CONFIG_MAX_VALUE];	/* path, host:port, [v6]:port */
	int		listen_backlog;
	char		listen_owner[CONFIG_MAX_VALUE];
	char		listen_group[CONFIG_MAX_VALUE];
	mode_t		listen_mode;
	struct allow_list listen_allowed;	/* listen.allowed_clients: both
						   sockets; empty = any */

	/* pool */
	int		max_children;		/* pm.max_children, 1..1024 */
	int64_t		max_requests;		/* pm.max_requests, 0 = never */
	int		request_terminate_timeout;	/* seconds, 0 = off */
	int		request_slowlog_timeout;	/* seconds, 0 = off */
	int		process_control_timeout;	/* seconds for graceful stop */
	int		request_read_timeout;	/* seconds from accept to the
						   request's last byte */
	int		request_write_timeout;	/* seconds a reply may wait
						   for its client to read */

	/* operational endpoints */
	char		status_path[CONFIG_MAX_VALUE];	/* pm.status_path, "" = off */
	char		ping_path[CONFIG_MAX_VALUE];	/* ping.path, "" = off */
	char		ping_response[CONFIG_MAX_VALUE];

	/* database */
	char		db_conninfo[CONFIG_MAX_VALUE];	/* "" = PG* environment */
	char		db_read_conninfo[CONFIG_MAX_VALUE]; /* "" = reads use
						   db.conninfo */
	int		db_timeout;		/* seconds: the longest wait
						   for the server, 1..3600 */

	/* auth */
	char		auth_issuer[CONFIG_MAX_VALUE];
	char		auth_audience[CONFIG_MAX_VALUE];
	char		auth_key_file[CONFIG_MAX_VALUE];	/* SPKI PEM or JWKS */
	char		auth_key_id[CONFIG_MAX_VALUE];	/* kid of a PEM key */
	int64_t		auth_leeway;		/* seconds */
	int		auth_errors;		/* enum config_auth_errors */
	int		auth_typ_strict;	/* require typ at+jwt */

	/* logs */
	char		error_log[CONFIG_MAX_VALUE];	/* "stderr", "syslog"
							   or a path */
	int		log_level;		/* enum config_log_level */
	char		syslog_ident[CONFIG_MAX_VALUE];	/* syslog.ident */
	int		syslog_facility;	/* syslog.facility: LOG_DAEMON,
						   ... (<syslog.h>) */
	char		access_log[CONFIG_MAX_VALUE];	/* "" = off */
	char		access_format[CONFIG_MAX_VALUE];

	/* master-served status */
	char		status_listen[CONFIG_MAX_VALUE];	/* "" = off */
	char		status_owner[CONFIG_MAX_VALUE];	/* "" = unchanged */
	char		status_group[CONFIG_MAX_VALUE];
	mode_t		status_mode;

	/* privileges (server/sandbox.h) */
	char		user[CONFIG_MAX_VALUE];	/* workers' user, "" = none */
	char		group[CONFIG_MAX_VALUE];	/* "" = user's group */
	int		worker_seccomp;		/* 1: system-call filter on */
};

/* Fills cfg with the documented defaults. */
void config_defaults(struct config *cfg);

/*
 * Parses len bytes of config text (name is used in messages) on top of
 * whatever cfg holds (call config_defaults first). Returns 0, or -1 with
 * "name:line: reason" in err (errlen bytes, cut to fit and always
 * NUL-terminated when errlen > 0; callers pass CONFIG_ERR_LEN). An
 * "include" line is an error here: only a loader can follow one.
 */
int config_parse(struct config *cfg, const char *name, const char *text,
    size_t len, char *err, size_t errlen);

/*
 * What config_parse_with() calls for "include = pattern" on line `line`
 * of the file `from`: parses what pattern names into cfg, in place (the
 * lines after the include see its settings, as in PHP-FPM). Returns 0, or
 * -1 with the whole message in err (errlen bytes): the included file's
 * "file:line: reason", or "from:line: reason" for the include itself.
 */
typedef int (*config_include_fn)(void *arg, struct config *cfg,
    const char *pattern, const char *from, int line, char *err,
    size_t errlen);

/*
 * config_parse(), with include lines handed to include(arg, ...) (no
 * pattern is empty). Its errors come back in err unchanged. PURE itself:
 * whatever I/O there is, is the callback's.
 */
int config_parse_with(struct config *cfg, const char *name, const char *text,
    size_t len, config_include_fn include, void *arg, char *err,
    size_t errlen);

/*
 * PURE. Splits a listen address of the forms "host:port", "[v6]:port" or
 * "port" (host 127.0.0.1) into host and port (hostlen, portlen bytes).
 * The port must be a decimal number 1..CONFIG_MAX_PORT and the host not
 * empty. Returns 0, or -1 with a reason in why (whylen bytes). A unix
 * path (starting with '/') is not for this function.
 */
int config_split_address(const char *address, char *host, size_t hostlen,
    char *port, size_t portlen, char *why, size_t whylen);

/*
 * Checks each address's form (listen, pm.status_listen: an absolute unix
 * path that fits a socket address, or config_split_address's forms) and
 * the settings that only make sense together: the status page needs
 * pm.status_listen, a socket of its own, and a path other than
 * ping.path. (What an application needs, such as the events API's
 * auth.*, is its load's to require.) Returns 0, or -1 with
 * "name: reason" in err (errlen bytes).
 */
int config_validate(const struct config *cfg, const char *name, char *err,
    size_t errlen);

#endif
