/*
 * config.c: parse the PHP-FPM-like configuration text (PURE: no I/O; the
 * master runs it at start, for -t and on every reload).
 * A directive table maps each key to a parser and a field (or, for a key
 * with a single possible value, to a check only). The server's table is
 * here; an application's is its own (config_register), and its keys are
 * parsed into the settings struct that struct config keeps for it. The
 * loader (util/configfile.c) reads the file with readfile() and hands the
 * bytes in, and follows "include" lines through a callback, so this
 * module is unit-testable and fuzzable.
 */
#include "util/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>	/* the facilities' values only */

#define CFG_PTR(base, d)	((char *)(base) + (d)->offset)

int
config_set_string(void *base, const struct config_directive *d,
    const char *value, char *why, size_t whylen)
{
	size_t n = strlen(value);

	if (n >= d->size) {
		snprintf(why, whylen, "%s: value longer than %zu bytes", d->key,
		    d->size - 1);
		return -1;
	}
	memcpy(CFG_PTR(base, d), value, n + 1);
	return 0;
}

static int
cfg_parse_ll(const struct config_directive *d, const char *value,
    long long *out, char *why, size_t whylen)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(value, &end, 10);
	if (value[0] == '\0' || *end != '\0' || errno == ERANGE) {
		snprintf(why, whylen, "%s: \"%s\" is not an integer", d->key,
		    value);
		return -1;
	}
	if (v < d->min || v > d->max) {
		snprintf(why, whylen, "%s: %lld is out of range %lld..%lld",
		    d->key, v, d->min, d->max);
		return -1;
	}
	*out = v;
	return 0;
}

int
config_set_integer(void *base, const struct config_directive *d,
    const char *value, char *why, size_t whylen)
{
	long long v;

	if (cfg_parse_ll(d, value, &v, why, whylen) == -1)
		return -1;
	if (d->size == sizeof(int))
		*(int *)CFG_PTR(base, d) = (int)v;
	else
		*(int64_t *)CFG_PTR(base, d) = (int64_t)v;
	return 0;
}

/* Durations accept a plain number of seconds or an s/m/h suffix (FPM). */
static int
cfg_set_seconds(void *base, const struct config_directive *d,
    const char *value, char *why, size_t whylen)
{
	char num[32];
	size_t len = strlen(value);
	long long mult = 1, v;

	if (len == 0 || len >= sizeof(num)) {
		snprintf(why, whylen, "%s: \"%s\" is not a duration", d->key,
		    value);
		return -1;
	}
	memcpy(num, value, len + 1);
	switch (num[len - 1]) {
	case 's': mult = 1; num[--len] = '\0'; break;
	case 'm': mult = 60; num[--len] = '\0'; break;
	case 'h': mult = 3600; num[--len] = '\0'; break;
	}
	if (cfg_parse_ll(d, num, &v, why, whylen) == -1)
		return -1;
	if (v * mult > d->max) {
		snprintf(why, whylen, "%s: %s is longer than %llds", d->key,
		    value, d->max);
		return -1;
	}
	*(int *)CFG_PTR(base, d) = (int)(v * mult);
	return 0;
}

static int
cfg_set_mode(void *base, const struct config_directive *d,
    const char *value, char *why, size_t whylen)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(value, &end, 8);
	if (value[0] == '\0' || *end != '\0' || errno == ERANGE || v > 07777) {
		snprintf(why, whylen, "%s: \"%s\" is not an octal mode",
		    d->key, value);
		return -1;
	}
	*(mode_t *)CFG_PTR(base, d) = (mode_t)v;
	return 0;
}

/* listen.allowed_clients: parsed here, so a bad entry is a config
 * error with its file and line. */
static int
cfg_set_allowed(void *base, const struct config_directive *d,
    const char *value, char *why, size_t whylen)
{
	char reason[CONFIG_MAX_VALUE];

	if (allow_parse(value, (struct allow_list *)(void *)CFG_PTR(base, d),
	    reason, sizeof(reason)) == 0)
		return 0;
	snprintf(why, whylen, "%s: %s", d->key, reason);
	return -1;
}

/* The choice of d->choices that value names, or NULL and a reason. */
static const struct config_choice *
cfg_find_choice(const struct config_directive *d, const char *value,
    char *why, size_t whylen)
{
	const struct config_choice *c;
	size_t n = 0;

	for (c = d->choices; c->name != NULL; c++)
		if (strcmp(value, c->name) == 0)
			return c;
	n = (size_t)snprintf(why, whylen, "%s: expected", d->key);
	for (c = d->choices; c->name != NULL && n < whylen; c++)
		n += (size_t)snprintf(why + n, whylen - n, "%s %s",
		    c == d->choices ? "" : (c[1].name ? "," : " or"), c->name);
	return NULL;
}

int
config_set_choice(void *base, const struct config_directive *d,
    const char *value, char *why, size_t whylen)
{
	const struct config_choice *c;

	if ((c = cfg_find_choice(d, value, why, whylen)) == NULL)
		return -1;
	*(int *)CFG_PTR(base, d) = c->value;
	return 0;
}

/*
 * Keys kept for PHP-FPM configs that have only one possible value here:
 * it is checked, and nothing is stored, as there is nothing to choose.
 */
static int
cfg_check_choice(void *base, const struct config_directive *d,
    const char *value, char *why, size_t whylen)
{
	(void)base;
	return cfg_find_choice(d, value, why, whylen) == NULL ? -1 : 0;
}

/* cfpm runs a static pool: "pm = static" is accepted, nothing else. */
static const struct config_choice cfg_pm_choices[] = {
	{ "static", 0 }, { NULL, 0 },
};
static const struct config_choice cfg_onoff_choices[] = {
	{ "on", 1 }, { "off", 0 }, { NULL, 0 },
};
static const struct config_choice cfg_level_choices[] = {
	{ "alert", CONFIG_LOG_ALERT }, { "error", CONFIG_LOG_ERROR },
	{ "warning", CONFIG_LOG_WARNING }, { "notice", CONFIG_LOG_NOTICE },
	{ "info", CONFIG_LOG_INFO }, { "debug", CONFIG_LOG_DEBUG },
	{ NULL, 0 },
};
/* PHP-FPM's syslog.facility names, in lower case as its documentation. */
static const struct config_choice cfg_facility_choices[] = {
	{ "auth", LOG_AUTH }, { "authpriv", LOG_AUTHPRIV },
	{ "cron", LOG_CRON }, { "daemon", LOG_DAEMON }, { "ftp", LOG_FTP },
	{ "kern", LOG_KERN }, { "lpr", LOG_LPR }, { "mail", LOG_MAIL },
	{ "news", LOG_NEWS }, { "syslog", LOG_SYSLOG }, { "user", LOG_USER },
	{ "uucp", LOG_UUCP }, { "local0", LOG_LOCAL0 },
	{ "local1", LOG_LOCAL1 }, { "local2", LOG_LOCAL2 },
	{ "local3", LOG_LOCAL3 }, { "local4", LOG_LOCAL4 },
	{ "local5", LOG_LOCAL5 }, { "local6", LOG_LOCAL6 },
	{ "local7", LOG_LOCAL7 }, { NULL, 0 },
};

/* The server's rows: fields of struct config. */
#define CFG_FIELD(f)		CONFIG_FIELD(struct config, f)
#define CFG_STRING(k, f)	CONFIG_STRING(k, struct config, f)
#define CFG_INT(k, f, lo, hi)	CONFIG_INT(k, struct config, f, lo, hi)
#define CFG_SECONDS(k, f)	{ k, cfg_set_seconds, CFG_FIELD(f), 0, 86400, NULL }
#define CFG_MODE(k, f)		{ k, cfg_set_mode, CFG_FIELD(f), 0, 0, NULL }
#define CFG_CHOICE(k, f, c)	CONFIG_CHOICE(k, struct config, f, c)
#define CFG_ONLY(k, c)		{ k, cfg_check_choice, 0, 0, 0, 0, c }

static int cfg_set_app(void *, const struct config_directive *, const char *,
    char *, size_t);

static const struct config_directive config_directives[] = {
	{ "app", cfg_set_app, CFG_FIELD(app), 0, 0, NULL },
	CFG_STRING("listen", listen),
	CFG_INT("listen.backlog", listen_backlog, 1, 65535),
	CFG_STRING("listen.owner", listen_owner),
	CFG_STRING("listen.group", listen_group),
	CFG_MODE("listen.mode", listen_mode),
	{ "listen.allowed_clients", cfg_set_allowed,
	    CFG_FIELD(listen_allowed), 0, 0, NULL },
	CFG_ONLY("pm", cfg_pm_choices),
	CFG_INT("pm.max_children", max_children, 1, CONFIG_MAX_CHILDREN),
	CFG_INT("pm.max_requests", max_requests, 0, INT64_MAX),
	CFG_SECONDS("request_terminate_timeout", request_terminate_timeout),
	CFG_SECONDS("request_slowlog_timeout", request_slowlog_timeout),
	CFG_SECONDS("process_control_timeout", process_control_timeout),
	{ "request_read_timeout", cfg_set_seconds,
	    CFG_FIELD(request_read_timeout), 1, 3600, NULL },
	{ "request_write_timeout", cfg_set_seconds,
	    CFG_FIELD(request_write_timeout), 1, 3600, NULL },
	CFG_STRING("pm.status_listen", status_listen),
	CFG_STRING("pm.status_listen.owner", status_owner),
	CFG_STRING("pm.status_listen.group", status_group),
	CFG_MODE("pm.status_listen.mode", status_mode),
	CFG_STRING("pm.status_path", status_path),
	CFG_STRING("ping.path", ping_path),
	CFG_STRING("ping.response", ping_response),
	CFG_STRING("db.conninfo", db_conninfo),
	CFG_STRING("db.read_conninfo", db_read_conninfo),
	{ "db.timeout", cfg_set_seconds, CFG_FIELD(db_timeout), 1, 3600,
	    NULL },
	CFG_STRING("error_log", error_log),
	CFG_CHOICE("log_level", log_level, cfg_level_choices),
	CFG_STRING("syslog.ident", syslog_ident),
	CFG_CHOICE("syslog.facility", syslog_facility, cfg_facility_choices),
	CFG_STRING("access.log", access_log),
	CFG_STRING("access.format", access_format),
	CFG_STRING("user", user),
	CFG_STRING("group", group),
	CFG_CHOICE("worker.seccomp", worker_seccomp, cfg_onoff_choices),
};

void
config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->pool_name, sizeof(cfg->pool_name), "cfpm");
	snprintf(cfg->listen, sizeof(cfg->listen), "/run/cfpm/cfpm.sock");
	cfg->listen_backlog = 511;
	cfg->listen_mode = 0660;
	cfg->status_mode = 0660;
	cfg->worker_seccomp = 1;
	cfg->max_children = 8;
	cfg->process_control_timeout = 10;
	cfg->request_read_timeout = 10;
	/* nginx reads a reply as it comes: only a client that does not
	 * read ever waits, and it must not hold a worker for long. */
	cfg->request_write_timeout = 1;
	cfg->db_timeout = 10;
	snprintf(cfg->ping_response, sizeof(cfg->ping_response), "pong");
	snprintf(cfg->error_log, sizeof(cfg->error_log), "stderr");
	snprintf(cfg->syslog_ident, sizeof(cfg->syslog_ident), "cfpm");
	cfg->syslog_facility = LOG_DAEMON;
	snprintf(cfg->access_format, sizeof(cfg->access_format), "%s",
	    CONFIG_DEFAULT_ACCESS_FORMAT);
	cfg->log_level = CONFIG_LOG_NOTICE;
}

static char *
cfg_trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' ||
	    end[-1] == '\r'))
		*--end = '\0';
	return s;
}

/*
 * A value in double quotes loses them; inside, \" and \\ stand for " and
 * \. A quote at one end only is an error.
 */
static int
cfg_unquote(char **value, char *why, size_t whylen)
{
	char *v = *value, *in, *out;
	size_t len = strlen(v);

	if (len == 0 || (v[0] != '"' && v[len - 1] != '"'))
		return 0;
	if (len < 2 || v[0] != '"' || v[len - 1] != '"' ||
	    (len > 2 && v[len - 2] == '\\' && (len < 4 || v[len - 3] != '\\'))) {
		snprintf(why, whylen, "unbalanced quotes");
		return -1;
	}
	v[len - 1] = '\0';
	for (in = out = v + 1; *in != '\0'; in++) {
		if (*in == '\\' && (in[1] == '"' || in[1] == '\\'))
			in++;
		else if (*in == '"') {
			snprintf(why, whylen, "unescaped quote inside quotes");
			return -1;
		}
		*out++ = *in;
	}
	*out = '\0';
	*value = v + 1;
	return 0;
}

#define CFG_NDIRECTIVES	\
	(sizeof(config_directives) / sizeof(config_directives[0]))
#define CFG_ALIGN	_Alignof(max_align_t)	/* each app's settings */

/* The row of table (n rows) for key, or NULL. */
static const struct config_directive *
cfg_find(const struct config_directive *table, size_t n, const char *key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(table[i].key, key) == 0)
			return &table[i];
	return NULL;
}

/* The application registered as name, or NULL. */
static const struct config_registered *
cfg_find_app(const struct config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->napps; i++)
		if (strcmp(cfg->apps[i].name, name) == 0)
			return &cfg->apps[i];
	return NULL;
}

/*
 * The row for key: the server's (*base is cfg) or a registered
 * application's, selected or not (*base is its settings), or NULL.
 */
static const struct config_directive *
cfg_lookup(struct config *cfg, const char *key, void **base)
{
	const struct config_directive *d;
	const struct config_app *a;
	size_t i;

	*base = cfg;
	if ((d = cfg_find(config_directives, CFG_NDIRECTIVES, key)) != NULL)
		return d;
	for (i = 0; i < cfg->napps; i++) {
		if ((a = cfg->apps[i].settings) == NULL ||
		    (d = cfg_find(a->directives, a->ndirectives, key)) == NULL)
			continue;
		*base = cfg->app_settings.bytes + cfg->apps[i].offset;
		return d;
	}
	return NULL;
}

/* "app" names a registered application: a typo fails at its line. */
static int
cfg_set_app(void *base, const struct config_directive *d, const char *value,
    char *why, size_t whylen)
{
	if (cfg_find_app(base, value) == NULL) {
		snprintf(why, whylen, "%s: no application named \"%s\"",
		    d->key, value);
		return -1;
	}
	return config_set_string(base, d, value, why, whylen);
}

/* Where the next application's settings start (aligned for any type). */
static size_t
cfg_settings_end(const struct config *cfg)
{
	const struct config_registered *last;
	size_t end;

	if (cfg->napps == 0)
		return 0;
	last = &cfg->apps[cfg->napps - 1];
	end = last->offset + (last->settings ? last->settings->size : 0);
	return (end + CFG_ALIGN - 1) / CFG_ALIGN * CFG_ALIGN;
}

/* A key of settings that the server or another application has. */
static const char *
cfg_taken_key(struct config *cfg, const struct config_app *settings)
{
	void *base;
	size_t i;

	for (i = 0; i < settings->ndirectives; i++)
		if (cfg_lookup(cfg, settings->directives[i].key, &base) != NULL)
			return settings->directives[i].key;
	return NULL;
}

int
config_register(struct config *cfg, const char *name,
    const struct config_app *settings, const void *owner, char *err,
    size_t errlen)
{
	struct config_registered *r;
	size_t offset = cfg_settings_end(cfg);
	const char *key;

	if (cfg->napps == CONFIG_MAX_APPS) {
		snprintf(err, errlen, "application %s: more than %d "
		    "applications", name, CONFIG_MAX_APPS);
		return -1;
	}
	if (cfg_find_app(cfg, name) != NULL) {
		snprintf(err, errlen, "application %s: registered twice", name);
		return -1;
	}
	if (settings != NULL && settings->size > CONFIG_MAX_APP_SETTINGS -
	    offset) {
		snprintf(err, errlen, "application %s: its settings take %zu "
		    "bytes, %zu are left of CONFIG_MAX_APP_SETTINGS", name,
		    settings->size, offset < CONFIG_MAX_APP_SETTINGS ?
		    CONFIG_MAX_APP_SETTINGS - offset : 0);
		return -1;
	}
	/* One key, one meaning: whose it is never depends on "app =". */
	if (settings != NULL && (key = cfg_taken_key(cfg, settings)) != NULL) {
		snprintf(err, errlen, "application %s: key %s is taken", name,
		    key);
		return -1;
	}
	r = &cfg->apps[cfg->napps++];
	*r = (struct config_registered){ .name = name, .settings = settings,
	    .owner = owner, .offset = offset };
	if (cfg->napps == 1)
		snprintf(cfg->app, sizeof(cfg->app), "%s", name);
	if (settings != NULL && settings->defaults != NULL)
		settings->defaults(cfg->app_settings.bytes + offset);
	return 0;
}

const void *
config_selected(const struct config *cfg)
{
	const struct config_registered *r = cfg_find_app(cfg, cfg->app);

	return r != NULL ? r->owner : NULL;
}

const void *
config_app_settings(const struct config *cfg,
    const struct config_app *settings)
{
	size_t i;

	for (i = 0; settings != NULL && i < cfg->napps; i++)
		if (cfg->apps[i].settings == settings)
			return cfg->app_settings.bytes + cfg->apps[i].offset;
	return NULL;
}

/* "[name]": one pool, so a section other than [global] names it. */
static int
cfg_section(struct config *cfg, const char *line, char *why, size_t whylen)
{
	size_t n = strlen(line);

	if (n < 3 || line[n - 1] != ']') {
		snprintf(why, whylen, "unterminated section header");
		return -1;
	}
	if (n - 2 != 6 || strncmp(line + 1, "global", 6) != 0)
		snprintf(cfg->pool_name, sizeof(cfg->pool_name), "%.*s",
		    (int)(n - 2), line + 1);
	return 0;
}

/* One line, NUL-terminated and without its newline. An include line
 * sets *include to its pattern (in line) and changes nothing else. */
static int
cfg_line(struct config *cfg, char *line, char **include, char *why,
    size_t whylen)
{
	const struct config_directive *d;
	char *key, *value, *eq;
	void *base;

	key = cfg_trim(line);
	if (key[0] == '\0' || key[0] == ';' || key[0] == '#')
		return 0;
	if (key[0] == '[')
		return cfg_section(cfg, key, why, whylen);
	if ((eq = strchr(key, '=')) == NULL) {
		snprintf(why, whylen, "expected \"key = value\"");
		return -1;
	}
	*eq = '\0';
	key = cfg_trim(key);
	value = cfg_trim(eq + 1);
	if (cfg_unquote(&value, why, whylen) == -1)
		return -1;
	if (strcmp(key, "include") == 0) {
		if (value[0] == '\0') {
			snprintf(why, whylen, "include: empty pattern");
			return -1;
		}
		*include = value;
		return 0;
	}
	if ((d = cfg_lookup(cfg, key, &base)) == NULL) {
		snprintf(why, whylen, "unknown key \"%.64s\"", key);
		return -1;
	}
	if (strlen(value) >= CONFIG_MAX_VALUE) {
		snprintf(why, whylen, "%s: value longer than %d bytes", key,
		    CONFIG_MAX_VALUE - 1);
		return -1;
	}
	return d->set(base, d, value, why, whylen);
}

int
config_parse(struct config *cfg, const char *name, const char *text,
    size_t len, char *err, size_t errlen)
{
	return config_parse_with(cfg, name, text, len, NULL, NULL, err, errlen);
}

int
config_parse_with(struct config *cfg, const char *name, const char *text,
    size_t len, config_include_fn include, void *arg, char *err,
    size_t errlen)
{
	char line[CONFIG_MAX_LINE], why[CONFIG_ERR_LEN / 2], *inc;
	size_t pos = 0, n;
	const char *nl;
	int lineno = 0;

	while (pos < len) {
		lineno++;
		nl = memchr(text + pos, '\n', len - pos);
		n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		if (n >= sizeof(line)) {
			snprintf(err, errlen, "%s:%d: line longer than %d"
			    " bytes", name, lineno, CONFIG_MAX_LINE - 1);
			return -1;
		}
		if (memchr(text + pos, '\0', n) != NULL) {
			snprintf(err, errlen, "%s:%d: NUL byte", name,
			    lineno);
			return -1;
		}
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos += n + 1;
		inc = NULL;
		if (cfg_line(cfg, line, &inc, why, sizeof(why)) == -1) {
			snprintf(err, errlen, "%s:%d: %s", name, lineno,
			    why);
			return -1;
		}
		if (inc == NULL)
			continue;
		if (include == NULL) {
			snprintf(err, errlen, "%s:%d: include: only a "
			    "configuration file can include others", name,
			    lineno);
			return -1;
		}
		/* The callback's message is complete: it names the file. */
		if (include(arg, cfg, inc, name, lineno, err, errlen) == -1)
			return -1;
	}
	return 0;
}

/* A decimal port 1..CONFIG_MAX_PORT, nothing else. */
static int
cfg_port_ok(const char *port)
{
	size_t n = strspn(port, "0123456789");
	long v;

	if (n == 0 || n > 5 || port[n] != '\0')
		return 0;
	v = strtol(port, NULL, 10);
	return v >= 1 && v <= CONFIG_MAX_PORT;
}

int
config_split_address(const char *address, char *host, size_t hostlen,
    char *port, size_t portlen, char *why, size_t whylen)
{
	const char *colon;

	if (address[0] == '[') {
		if ((colon = strstr(address, "]:")) == NULL) {
			snprintf(why, whylen, "\"%s\": expected [v6addr]:port",
			    address);
			return -1;
		}
		snprintf(host, hostlen, "%.*s", (int)(colon - address - 1),
		    address + 1);
		snprintf(port, portlen, "%s", colon + 2);
	} else if ((colon = strrchr(address, ':')) != NULL) {
		snprintf(host, hostlen, "%.*s", (int)(colon - address),
		    address);
		snprintf(port, portlen, "%s", colon + 1);
	} else {
		snprintf(host, hostlen, "127.0.0.1");
		snprintf(port, portlen, "%s", address);
	}
	if (host[0] == '\0') {
		snprintf(why, whylen, "\"%s\": no host before the port",
		    address);
		return -1;
	}
	if (!cfg_port_ok(port)) {
		snprintf(why, whylen, "\"%s\" is not a path, host:port, "
		    "[v6addr]:port or port (port 1..%d)", address,
		    CONFIG_MAX_PORT);
		return -1;
	}
	return 0;
}

/* One address setting: an absolute unix path that fits, or host:port. */
static int
cfg_check_address(const char *key, const char *address, const char *name,
    char *err, size_t errlen)
{
	char host[CONFIG_MAX_VALUE], port[CONFIG_MAX_VALUE];
	char why[CONFIG_ERR_LEN / 2];

	if (address[0] == '/') {
		if (strlen(address) <= CONFIG_MAX_UNIX_PATH)
			return 0;
		snprintf(err, errlen, "%s: %s: a unix socket path is at most "
		    "%d bytes", name, key, CONFIG_MAX_UNIX_PATH);
		return -1;
	}
	if (config_split_address(address, host, sizeof(host), port,
	    sizeof(port), why, sizeof(why)) == 0)
		return 0;
	snprintf(err, errlen, "%s: %s: %s", name, key, why);
	return -1;
}

/*
 * What the application needs (auth.* for the events API) is its own
 * rule, and only the selected one's applies.
 */
static int
cfg_validate_app(const struct config *cfg, const char *name, char *err,
    size_t errlen)
{
	const struct config_registered *r = cfg_find_app(cfg, cfg->app);

	if (r == NULL || r->settings == NULL || r->settings->validate == NULL)
		return 0;
	return r->settings->validate(cfg->app_settings.bytes + r->offset, name,
	    err, errlen);
}

int
config_validate(const struct config *cfg, const char *name, char *err,
    size_t errlen)
{
	if (cfg->listen[0] == '\0') {
		snprintf(err, errlen, "%s: listen is not set", name);
		return -1;
	}
	if (cfg_check_address("listen", cfg->listen, name, err, errlen) == -1 ||
	    (cfg->status_listen[0] != '\0' && cfg_check_address(
	    "pm.status_listen", cfg->status_listen, name, err, errlen) == -1))
		return -1;
	/* Two servers on one socket: the kernel would refuse the second. */
	if (strcmp(cfg->status_listen, cfg->listen) == 0) {
		snprintf(err, errlen, "%s: pm.status_listen must differ from "
		    "listen", name);
		return -1;
	}
	/* The status page must answer while every worker is busy, so the
	 * master's own socket serves it (the workers' answer on the pool
	 * socket is PHP-FPM's extra): no page without that socket. */
	if (cfg->status_path[0] != '\0' && cfg->status_listen[0] == '\0') {
		snprintf(err, errlen, "%s: pm.status_path is set but "
		    "pm.status_listen is not: the status page is served by "
		    "the master on pm.status_listen", name);
		return -1;
	}
	if (cfg->ping_path[0] != '\0' && cfg->ping_path[0] != '/') {
		snprintf(err, errlen, "%s: ping.path must start with /",
		    name);
		return -1;
	}
	if (cfg->status_path[0] != '\0' && cfg->status_path[0] != '/') {
		snprintf(err, errlen,
		    "%s: pm.status_path must start with /", name);
		return -1;
	}
	if (cfg->status_path[0] != '\0' &&
	    strcmp(cfg->status_path, cfg->ping_path) == 0) {
		snprintf(err, errlen, "%s: pm.status_path and ping.path are "
		    "both %s", name, cfg->ping_path);
		return -1;
	}
	return cfg_validate_app(cfg, name, err, errlen);
}
