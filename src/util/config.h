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
 *
 * This module knows the server's keys only. An application brings its
 * own (a directive table, the struct it fills, defaults and validation:
 * struct config_app), as an nginx module brings its directives and its
 * conf struct: the server registers each application it is built with
 * (config_register) before the text is parsed. Every registered
 * application's keys are parsed where they stand, so one may come before
 * "app =" or in an included file and still be checked at its file:line;
 * only the application "app =" selects has its settings validated and
 * used.
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
#define CONFIG_MAX_APPS		8	/* applications registered with one
					   config */
#define CONFIG_MAX_APP_SETTINGS	8192	/* bytes of their settings structs,
					   all together */

/*
 * A directive: a key, the setter that parses its value into the field at
 * offset (size bytes) of the struct it belongs to (struct config for the
 * server's keys, an application's own struct for its keys), and what the
 * setter checks against: min..max for integers, choices for keywords.
 * A setter gets the value unquoted, NUL-terminated and shorter than
 * CONFIG_MAX_VALUE; it returns 0, or -1 with "key: reason" in why (whylen
 * bytes). The setters below and the CONFIG_* macros build the rows of an
 * application's table.
 */
struct config_directive;
typedef int (*config_setter)(void *base, const struct config_directive *d,
    const char *value, char *why, size_t whylen);

/* A keyword a setting accepts, and the value stored for it. */
struct config_choice {
	const char	*name;
	int		 value;
};

struct config_directive {
	const char	*key;
	config_setter	 set;
	size_t		 offset;	/* the field in its struct */
	size_t		 size;		/* its size */
	long long	 min, max;	/* for integers */
	const struct config_choice *choices;	/* for keywords, NULL-ended */
};

/* Text, whole (a char array field; longer than the field is an error). */
int config_set_string(void *base, const struct config_directive *d,
    const char *value, char *why, size_t whylen);
/* A decimal integer in min..max, into an int or an int64_t field. */
int config_set_integer(void *base, const struct config_directive *d,
    const char *value, char *why, size_t whylen);
/* One of d->choices by name: its value into an int field. */
int config_set_choice(void *base, const struct config_directive *d,
    const char *value, char *why, size_t whylen);

#define CONFIG_FIELD(type, f)	offsetof(type, f), sizeof(((type *)0)->f)
#define CONFIG_STRING(k, type, f)	\
	{ k, config_set_string, CONFIG_FIELD(type, f), 0, 0, NULL }
#define CONFIG_INT(k, type, f, lo, hi)	\
	{ k, config_set_integer, CONFIG_FIELD(type, f), lo, hi, NULL }
#define CONFIG_CHOICE(k, type, f, c)	\
	{ k, config_set_choice, CONFIG_FIELD(type, f), 0, 0, c }

/*
 * An application's own settings: its keys, the struct they fill (size
 * bytes; the loader keeps it inside struct config, aligned for any type,
 * so a copy of the config carries it), how it starts and what it must
 * hold. Registered by the server (config_register), read back by the
 * application (config_app_settings).
 */
struct config_app {
	const struct config_directive *directives;
	size_t		 ndirectives;
	size_t		 size;
	/* Fills the struct with the defaults (NULL: all zero). */
	void		(*defaults)(void *settings);
	/* For the selected application only, after the whole text is
	 * parsed: returns 0, or -1 with "name: reason" in err (errlen
	 * bytes; name is the file). NULL: whatever parsed is fine. */
	int		(*validate)(const void *settings, const char *name,
			    char *err, size_t errlen);
};

/* One application registered with a config (config_register). */
struct config_registered {
	const char		*name;		/* what "app =" names */
	const struct config_app	*settings;	/* NULL: no keys of its own */
	const void		*owner;		/* the registrar's, handed
						   back by config_selected */
	size_t			 offset;	/* its settings in app_settings */
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
	char		app[CONFIG_MAX_VALUE];	/* the application, by name: a
						   registered one, by default
						   the first */

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

	/* the applications (config_register) and their settings */
	struct config_registered apps[CONFIG_MAX_APPS];
	size_t		napps;
	union {
		max_align_t	align;
		unsigned char	bytes[CONFIG_MAX_APP_SETTINGS];
	}		app_settings;
};

/* Fills cfg with the documented defaults; no application is registered. */
void config_defaults(struct config *cfg);

/*
 * Registers the application name with its own keys (settings; NULL for
 * none) and owner, a pointer config_selected() hands back; the first one
 * registered is the default "app". Call after config_defaults and before
 * parsing; name, settings and owner are borrowed for cfg's life. Fills
 * its settings with their defaults. Returns 0, or -1 with the reason in
 * err (errlen bytes): CONFIG_MAX_APPS reached, no room left in
 * CONFIG_MAX_APP_SETTINGS, a name registered twice, or a key another
 * application or the server has.
 */
int config_register(struct config *cfg, const char *name,
    const struct config_app *settings, const void *owner, char *err,
    size_t errlen);

/* The owner of the application cfg->app names; NULL if none is
 * registered (a parsed "app =" always names a registered one). */
const void *config_selected(const struct config *cfg);

/* The settings struct registered with settings in cfg, selected or not;
 * NULL if settings is not registered there. */
const void *config_app_settings(const struct config *cfg,
    const struct config_app *settings);

/*
 * Parses len bytes of config text (name is used in messages) on top of
 * whatever cfg holds (call config_defaults and config_register first).
 * A key neither the server nor a registered application has is an
 * error. Returns 0, or -1 with
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
 * the settings that only make sense together: the status page is served
 * on pm.status_listen only, on a socket of its own, at a path other
 * than ping.path; then the selected application's settings, with its
 * own validate. Returns 0, or -1 with "name: reason" in err (errlen
 * bytes).
 */
int config_validate(const struct config *cfg, const char *name, char *err,
    size_t errlen);

#endif
