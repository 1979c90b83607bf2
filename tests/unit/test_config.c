/*
 * test_config.c: config parsing, defaults, file:line errors, include lines
 * through the loader's callback, address forms and cross-key rules, and
 * applications' own keys registered with the loader (a made-up one here:
 * the events API's auth.* are test_settings.c's).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "util/config.h"
#include "configtest.h"
#include "tap.h"

/* Text parsed on top of the defaults, no application registered. */
static int
parse(struct config *cfg, const char *text, char *err, size_t errlen)
{
	return configtest_parse(config_defaults, cfg, text, err, errlen);
}

static void
expect_error(const char *text, const char *want, const char *what)
{
	configtest_error(config_defaults, text, want, what);
}

static void
test_defaults(void)
{
	static struct config cfg;

	config_defaults(&cfg);
	is_str(cfg.listen, "/run/cfpm/cfpm.sock", "default listen");
	is_int(cfg.max_children, 8, "default pm.max_children");
	is_int(cfg.listen_backlog, 511, "default listen.backlog");
	is_int(cfg.listen_mode, 0660, "default listen.mode");
	is_str(cfg.ping_response, "pong", "default ping.response");
	is_str(cfg.user, "", "default user: none (root refuses to start)");
	is_str(cfg.group, "", "default group: the user's");
	is_int(cfg.status_mode, 0660, "default pm.status_listen.mode");
	is_str(cfg.status_owner, "", "default pm.status_listen.owner");
	is_str(cfg.status_group, "", "default pm.status_listen.group");
	is_int(cfg.worker_seccomp, 1, "default worker.seccomp on");
	is_int(cfg.db_timeout, 10, "default db.timeout 10 s");
	is_str(cfg.syslog_ident, "cfpm", "default syslog.ident");
	is_int(cfg.syslog_facility, LOG_DAEMON, "default syslog.facility "
	    "daemon (PHP-FPM's)");
}

/* PHP-FPM's error_log = syslog with its two keys, and its levels. */
static void
test_syslog_and_levels(void)
{
	static struct config cfg;
	char err[CONFIG_ERR_LEN];
	const char *levels[] = { "alert", "error", "warning", "notice",
	    "info", "debug" };
	const int want[] = { CONFIG_LOG_ALERT, CONFIG_LOG_ERROR,
	    CONFIG_LOG_WARNING, CONFIG_LOG_NOTICE, CONFIG_LOG_INFO,
	    CONFIG_LOG_DEBUG };
	char text[64];
	size_t i;

	is_int(parse(&cfg, "error_log = syslog\nsyslog.ident = fpm-events\n"
	    "syslog.facility = local3\n", err, sizeof(err)), 0,
	    "error_log = syslog with ident and facility (%s)", err);
	is_str(cfg.error_log, CONFIG_SYSLOG, "error_log is the syslog keyword");
	is_str(cfg.syslog_ident, "fpm-events", "syslog.ident");
	is_int(cfg.syslog_facility, LOG_LOCAL3, "syslog.facility local3");
	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		snprintf(text, sizeof(text), "log_level = %s\n", levels[i]);
		is_int(parse(&cfg, text, err, sizeof(err)), 0, "log_level = %s",
		    levels[i]);
		is_int(cfg.log_level, want[i], "log_level %s is priority %d",
		    levels[i], want[i]);
	}
	is_int(LOG_ALERT, CONFIG_LOG_ALERT, "alert is syslog's LOG_ALERT");
	is_int(LOG_ERR, CONFIG_LOG_ERROR, "error is syslog's LOG_ERR");
}

/* What the fake loader saw, and what it does. */
struct fake_loader {
	int	calls;
	char	pattern[64];
	char	from[16];
	int	line;
	int	fail;		/* answer -1 with a message */
};

/* config_include_fn: an "included file" that sets pm.max_children. */
static int
fake_include(void *arg, struct config *cfg, const char *pattern,
    const char *from, int line, char *err, size_t errlen)
{
	struct fake_loader *f = arg;

	f->calls++;
	snprintf(f->pattern, sizeof(f->pattern), "%s", pattern);
	snprintf(f->from, sizeof(f->from), "%s", from);
	f->line = line;
	if (f->fail) {
		snprintf(err, errlen, "inc.conf:2: unknown key \"x\" "
		    "(included from %s:%d)", from, line);
		return -1;
	}
	cfg->max_children = 77;
	return 0;
}

static void
test_include(void)
{
	static struct config cfg;
	struct fake_loader f;
	char err[CONFIG_ERR_LEN];
	const char *text = "pm.max_children = 3\n"
	    "include = \"/etc/cfpm/pool.d/*.conf\"\n"
	    "pm.max_requests = 9\n";

	memset(&f, 0, sizeof(f));
	config_defaults(&cfg);
	is_int(config_parse_with(&cfg, "t.conf", text, strlen(text),
	    fake_include, &f, err, sizeof(err)), 0, "include line parses (%s)",
	    err);
	is_int(f.calls, 1, "the loader is called once");
	is_str(f.pattern, "/etc/cfpm/pool.d/*.conf", "with the unquoted "
	    "pattern");
	ok(strcmp(f.from, "t.conf") == 0 && f.line == 2,
	    "and where the include is (%s:%d)", f.from, f.line);
	is_int(cfg.max_children, 77, "the included settings apply in place");
	is_int(cfg.max_requests, 9, "the lines after the include still do");

	memset(&f, 0, sizeof(f));
	f.fail = 1;
	config_defaults(&cfg);
	is_int(config_parse_with(&cfg, "t.conf", text, strlen(text),
	    fake_include, &f, err, sizeof(err)), -1, "a failing include "
	    "fails the parse");
	is_str(err, "inc.conf:2: unknown key \"x\" (included from t.conf:2)",
	    "the loader's message comes back unchanged");
	is_int(cfg.max_requests, 0, "nothing after the failed include is "
	    "parsed");

	expect_error("include = /x/*.conf\n", "t.conf:1: include: only a "
	    "configuration file", "include without a loader (config_parse)");
	memset(&f, 0, sizeof(f));
	config_defaults(&cfg);
	is_int(config_parse_with(&cfg, "t.conf", "include =\n", 10,
	    fake_include, &f, err, sizeof(err)), -1, "an empty include");
	ok(strstr(err, "t.conf:1: include: empty pattern") != NULL &&
	    f.calls == 0, "is refused before the loader: %s", err);
}

/* validate(text) after the defaults: 0 or -1, the message in err. */
static int
validate(const char *text, char *err, size_t errlen)
{
	static struct config cfg;

	if (parse(&cfg, text, err, errlen) == -1)
		return -2;
	err[0] = '\0';
	return config_validate(&cfg, "t.conf", err, errlen);
}

/* Addresses: what bind() would refuse is refused by -t already. */
static void
test_addresses(void)
{
	static const struct {
		const char *text, *want;	/* want NULL: valid */
	} cases[] = {
		{ "listen = /run/cfpm/cfpm.sock\n", NULL },
		{ "listen = 127.0.0.1:9000\n", NULL },
		{ "listen = [::1]:9000\n", NULL },
		{ "listen = 9000\n", NULL },
		{ "listen = localhost:65535\n", NULL },
		{ "listen = notaport:xx\n", "t.conf: listen: \"notaport:xx\" "
		    "is not a path, host:port" },
		{ "listen = 127.0.0.1:0\n", "port 1..65535" },
		{ "listen = 127.0.0.1:65536\n", "port 1..65535" },
		{ "listen = 127.0.0.1:\n", "is not a path" },
		{ "listen = :9000\n", "no host before the port" },
		{ "listen = [::1]\n", "expected [v6addr]:port" },
		{ "listen = cfpm.sock\n", "is not a path" },
		{ "listen = /" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		    "aaa\n", "a unix socket path is at most 107 bytes" },
		{ "pm.status_listen = 127.0.0.1:x\n", "t.conf: "
		    "pm.status_listen: \"127.0.0.1:x\"" },
	};
	char err[CONFIG_ERR_LEN];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].want == NULL) {
			is_int(validate(cases[i].text, err, sizeof(err)), 0,
			    "valid: %.40s (%s)", cases[i].text, err);
			continue;
		}
		is_int(validate(cases[i].text, err, sizeof(err)), -1,
		    "refused: %.40s", cases[i].text);
		ok(strstr(err, cases[i].want) != NULL, "message \"%s\" has "
		    "\"%s\"", err, cases[i].want);
	}
}

/* Settings that only make sense together. */
static void
test_cross_keys(void)
{
	char err[CONFIG_ERR_LEN];

	is_int(validate("pm.status_path = /status\n", err, sizeof(err)), -1,
	    "pm.status_path without pm.status_listen");
	ok(strstr(err, "t.conf: pm.status_path is set but pm.status_listen "
	    "is not") != NULL, "message: %s", err);
	is_int(validate("pm.status_path = /status\n"
	    "pm.status_listen = /run/cfpm/status.sock\n", err, sizeof(err)),
	    0, "pm.status_path with pm.status_listen (%s)", err);
	is_int(validate("pm.status_listen = /run/cfpm/cfpm.sock\n", err,
	    sizeof(err)), -1, "pm.status_listen on the pool's socket");
	ok(strstr(err, "pm.status_listen must differ from listen") != NULL,
	    "message: %s", err);
	is_int(validate("pm.status_listen = /run/cfpm/status.sock\n"
	    "pm.status_path = /ping\nping.path = /ping\n", err, sizeof(err)),
	    -1, "status and ping on one path");
	ok(strstr(err, "pm.status_path and ping.path are both /ping") != NULL,
	    "message: %s", err);
	is_int(validate("pm.status_listen = /run/cfpm/status.sock\n", err,
	    sizeof(err)), 0, "a status socket without a status path (ping "
	    "only) is fine (%s)", err);
}

static void
test_every_server_key(void)
{
	static struct config cfg;
	char err[CONFIG_ERR_LEN];
	const char *text =
	    "; comment\n"
	    "# another\n"
	    "[global]\n"
	    "error_log = /var/log/cfpm.log\n"
	    "log_level = debug\n"
	    "[www]\n"
	    "  listen = [::1]:9000  \r\n"
	    "listen.backlog = 4096\n"
	    "listen.mode = 0666\n"
	    "pm = static\n"
	    "pm.max_children = 64\n"
	    "pm.max_requests = 500\n"
	    "request_terminate_timeout = 2m\n"
	    "request_slowlog_timeout = 5s\n"
	    "process_control_timeout = 30\n"
	    "db.conninfo = \"host=/run/postgresql dbname=events\"\n"
	    "db.timeout = 2m\n"
	    "ping.path = /ping\n"
	    "pm.status_path = /status\n"
	    "pm.status_listen = /run/cfpm/status.sock\n"
	    "pm.status_listen.owner = cfpm\n"
	    "pm.status_listen.group = www-data\n"
	    "pm.status_listen.mode = 0600\n"
	    "user = cfpm\n"
	    "group = nogroup\n"
	    "worker.seccomp = off\n"
	    "access.format = \"%m \\\"%r\\\" \\\\ %s\"";

	is_int(parse(&cfg, text, err, sizeof(err)), 0,
	    "full config parses (%s)", err);
	is_str(cfg.listen, "[::1]:9000", "listen trimmed, CR dropped");
	is_int(cfg.listen_backlog, 4096, "listen.backlog");
	is_int(cfg.listen_mode, 0666, "listen.mode octal");
	is_int(cfg.max_children, 64, "pm.max_children");
	is_int(cfg.max_requests, 500, "pm.max_requests");
	is_int(cfg.request_terminate_timeout, 120, "2m is 120 s");
	is_int(cfg.request_slowlog_timeout, 5, "5s is 5 s");
	is_int(cfg.process_control_timeout, 30, "process_control_timeout");
	is_str(cfg.db_conninfo, "host=/run/postgresql dbname=events",
	    "quotes stripped");
	is_int(cfg.db_timeout, 120, "db.timeout 2m is 120 s");
	is_int(cfg.log_level, CONFIG_LOG_DEBUG, "log_level debug");
	is_str(cfg.status_path, "/status", "pm.status_path");
	is_str(cfg.access_format, "%m \"%r\" \\ %s", "escapes in quotes");
	is_str(cfg.pool_name, "www", "pool name from the section");
	is_str(cfg.status_owner, "cfpm", "pm.status_listen.owner");
	is_str(cfg.status_group, "www-data", "pm.status_listen.group");
	is_int(cfg.status_mode, 0600, "pm.status_listen.mode octal");
	is_int(cfg.listen_mode, 0666, "listen.mode apart from the status one");
	is_str(cfg.user, "cfpm", "user");
	is_str(cfg.group, "nogroup", "group");
	is_int(cfg.worker_seccomp, 0, "worker.seccomp off");
	is_int(config_validate(&cfg, "t.conf", err, sizeof(err)), 0,
	    "validates");
}

static void
test_errors_at_file_line(void)
{
	expect_error("pm.max_children = 0\n", "t.conf:1: pm.max_children",
	    "max_children 0");
	expect_error("\n\npm.max_children = 1025\n", "t.conf:3:",
	    "max_children 1025 on line 3");
	expect_error("pm.max_children = 8x\n", "not an integer",
	    "trailing garbage");
	expect_error("pm.max_children =\n", "not an integer", "empty int");
	expect_error("no_such_key = 1\n", "t.conf:1: unknown key",
	    "unknown key");
	expect_error("listen\n", "expected \"key = value\"", "no equals");
	expect_error("pm = dynamic\n", "pm: expected static", "pm dynamic");
	expect_error("listen.mode = 0999\n", "octal", "bad mode");
	expect_error("log_level = chatty\n", "expected alert, error, warning, "
	    "notice, info or debug", "bad level");
	expect_error("syslog.facility = local8\n", "syslog.facility: expected "
	    "auth, authpriv", "bad syslog.facility");
	expect_error("listen = \"/x\n", "unbalanced quotes", "lone quote");
	expect_error("[www\n", "section", "unterminated section");
	expect_error("listen = \"a\"b\"\n", "unescaped quote",
	    "inner quote");
	expect_error("request_terminate_timeout = 2d\n", "not an integer",
	    "unknown duration suffix");
	expect_error("request_terminate_timeout = 25h\n", "longer than",
	    "duration too long");
	/* Every wait for the database is bounded: no 0 = off. */
	expect_error("db.timeout = 0\n", "db.timeout: 0 is out of range 1..3600",
	    "db.timeout 0");
	expect_error("db.timeout = 0s\n", "out of range", "db.timeout 0s");
	expect_error("db.timeout = 2h\n", "db.timeout: 2h is longer than "
	    "3600s", "db.timeout past an hour");
	expect_error("db.timeout = 500ms\n", "not an integer",
	    "db.timeout in ms");
	expect_error("worker.seccomp = yes\n", "worker.seccomp: expected on or "
	    "off", "bad worker.seccomp");
	expect_error("worker.seccomp =\n", "expected on or off",
	    "empty worker.seccomp");
	expect_error("pm.status_listen.mode = 0888\n",
	    "pm.status_listen.mode: \"0888\" is not an octal mode",
	    "bad status mode");
	expect_error("pm.status_listen.mode = 10000\n", "octal",
	    "status mode above 07777");
	expect_error("pm.max_children = 99999999999999999999\n",
	    "not an integer", "integer overflow");
}

static void
test_long_line(void)
{
	static char text[CONFIG_MAX_LINE + 64];
	static struct config cfg;
	char err[CONFIG_ERR_LEN];

	memset(text, 'a', sizeof(text) - 2);
	text[sizeof(text) - 2] = '\n';
	text[sizeof(text) - 1] = '\0';
	is_int(parse(&cfg, text, err, sizeof(err)), -1,
	    "over-long line rejected");
	ok(strstr(err, "t.conf:1: line longer") != NULL, "message: %s", err);
	memcpy(text, "listen = ", 9);
	text[CONFIG_MAX_VALUE + 20] = '\0';
	is_int(parse(&cfg, text, err, sizeof(err)), -1,
	    "over-long value rejected");
	ok(strstr(err, "value longer") != NULL, "message: %s", err);
}

static void
test_nul_and_validate(void)
{
	static struct config cfg;
	char err[CONFIG_ERR_LEN];
	const char text[] = "listen = /a\0b\n";

	config_defaults(&cfg);
	is_int(config_parse(&cfg, "t.conf", text, sizeof(text) - 1, err,
	    sizeof(err)), -1, "NUL byte rejected");
	ok(strstr(err, "t.conf:1: NUL") != NULL, "message: %s", err);
	config_defaults(&cfg);
	is_int(config_validate(&cfg, "t.conf", err, sizeof(err)), 0,
	    "the defaults validate (what an application needs is its own "
	    "table's to require)");
	is_int(parse(&cfg, "listen = \"\"\n", err, sizeof(err)), 0,
	    "an empty listen parses");
	is_int(config_validate(&cfg, "t.conf", err, sizeof(err)), -1,
	    "an empty listen is refused");
	ok(strstr(err, "t.conf: listen is not set") != NULL, "message: %s",
	    err);
	config_defaults(&cfg);
	is_int(parse(&cfg, "ping.path = ping\n", err, sizeof(err)), 0,
	    "parses");
	is_int(config_validate(&cfg, "t.conf", err, sizeof(err)), -1,
	    "ping.path without / rejected");
}

/* A short error buffer gets a cut, terminated message and no more. */
static void
test_short_error_buffer(void)
{
	static struct config cfg;
	char err[16];

	memset(err, 'x', sizeof(err));
	config_defaults(&cfg);
	is_int(config_parse(&cfg, "t.conf", "pm = dynamic\n", 13, err, 8), -1,
	    "parse error with an 8-byte buffer");
	is_str(err, "t.conf:", "the message is cut to 7 bytes and a NUL");
	ok(err[8] == 'x', "nothing written past errlen");
	memset(err, 'x', sizeof(err));
	config_defaults(&cfg);
	cfg.listen[0] = '\0';
	is_int(config_validate(&cfg, "t.conf", err, 4), -1,
	    "validate error with a 4-byte buffer");
	is_str(err, "t.c", "validate's message is cut too");
	ok(err[4] == 'x', "nothing written past errlen");
}


/*
 * Made-up applications with keys of their own: "demo" (registered first:
 * the default app; demo.name required), "other" (no rules) and "bare"
 * (no keys at all).
 */
struct demo_settings {
	char	name[CONFIG_MAX_VALUE];
	int64_t	size;
	int	color;
	char	tag[8];		/* a field shorter than a value may be */
};

struct other_settings {
	int	level;
};

static const struct config_choice demo_colors[] = {
	{ "red", 0 }, { "blue", 1 }, { NULL, 0 },
};

static const struct config_directive demo_directives[] = {
	CONFIG_STRING("demo.name", struct demo_settings, name),
	CONFIG_INT("demo.size", struct demo_settings, size, 1, 100),
	CONFIG_CHOICE("demo.color", struct demo_settings, color, demo_colors),
	CONFIG_STRING("demo.tag", struct demo_settings, tag),
};

static const struct config_directive other_directives[] = {
	CONFIG_INT("other.level", struct other_settings, level, 0, 9),
};

static void
demo_defaults(void *p)
{
	struct demo_settings *d = p;

	d->size = 10;
	d->color = 1;
}

static int
demo_validate(const void *p, const char *name, char *err, size_t errlen)
{
	const struct demo_settings *d = p;

	if (d->name[0] != '\0')
		return 0;
	snprintf(err, errlen, "%s: demo.name is not set", name);
	return -1;
}

static const struct config_app demo_app = {
	demo_directives, sizeof(demo_directives) / sizeof(demo_directives[0]),
	sizeof(struct demo_settings), demo_defaults, demo_validate,
};

static const struct config_app other_app = {
	other_directives, 1, sizeof(struct other_settings), NULL, NULL,
};

/* Owners handed back by config_selected(): any address will do. */
static const char demo_owner, other_owner, bare_owner;

/* The defaults with demo, other and bare registered, in that order. */
static void
setup_apps(struct config *cfg)
{
	config_defaults(cfg);
	configtest_register(cfg, "demo", &demo_app, &demo_owner);
	configtest_register(cfg, "other", &other_app, &other_owner);
	configtest_register(cfg, "bare", NULL, &bare_owner);
}

static const struct demo_settings *
demo_of(const struct config *cfg)
{
	return config_app_settings(cfg, &demo_app);
}

static const struct other_settings *
other_of(const struct config *cfg)
{
	return config_app_settings(cfg, &other_app);
}

/* parse(), with the made-up applications registered first. */
static int
parse_apps(struct config *cfg, const char *text, char *err, size_t errlen)
{
	return configtest_parse(setup_apps, cfg, text, err, errlen);
}

static void
expect_app_error(const char *text, const char *want, const char *what)
{
	configtest_error(setup_apps, text, want, what);
}

static void
test_register_defaults(void)
{
	static struct config cfg;
	static const struct config_app unregistered = { NULL, 0, 8, NULL,
	    NULL };
	const struct demo_settings *d;

	config_defaults(&cfg);
	is_str(cfg.app, "", "no application registered: no default app");
	ok(config_selected(&cfg) == NULL, "and none selected");
	setup_apps(&cfg);
	is_str(cfg.app, "demo", "the first application registered is the "
	    "default app");
	ok(config_selected(&cfg) == &demo_owner, "and the selected one: its "
	    "owner comes back");
	d = demo_of(&cfg);
	ok(d != NULL && d->size == 10 && d->color == 1 && d->name[0] == '\0',
	    "its settings hold its defaults");
	ok(other_of(&cfg) != NULL && other_of(&cfg)->level == 0, "an "
	    "application without defaults starts at zero");
	ok((uintptr_t)d % _Alignof(max_align_t) == 0 &&
	    (uintptr_t)other_of(&cfg) % _Alignof(max_align_t) == 0,
	    "each application's settings are aligned for any type");
	ok((const char *)other_of(&cfg) >= (const char *)(d + 1),
	    "and do not overlap");
	ok(config_app_settings(&cfg, &unregistered) == NULL &&
	    config_app_settings(&cfg, NULL) == NULL, "a table never "
	    "registered has no settings");
}

static void
test_app_keys(void)
{
	static struct config cfg;
	char err[CONFIG_ERR_LEN];

	is_int(parse_apps(&cfg, "demo.size = 42\ndemo.color = red\n"
	    "demo.name = \"x y\"\n", err, sizeof(err)), 0, "the selected "
	    "application's keys parse (%s)", err);
	ok(demo_of(&cfg)->size == 42 && demo_of(&cfg)->color == 0 &&
	    strcmp(demo_of(&cfg)->name, "x y") == 0, "into its settings, "
	    "unquoted like any value");
	expect_app_error("\n\ndemo.size = 101\n", "t.conf:3: demo.size: 101 "
	    "is out of range 1..100", "a bad value of the selected "
	    "application's key names file:line");
	expect_app_error("demo.color = green\n", "t.conf:1: demo.color: "
	    "expected red or blue", "a bad keyword of the selected "
	    "application");
	expect_app_error("pm.max_children = 2\ndemo.sise = 1\n", "t.conf:2: "
	    "unknown key \"demo.sise\"", "a misspelt key of the selected "
	    "application");
	expect_app_error("demo.tag = 12345678\n", "t.conf:1: demo.tag: value "
	    "longer than 7 bytes", "a value longer than its field");

	is_int(parse_apps(&cfg, "app = other\ndemo.size = 5\n", err,
	    sizeof(err)), 0, "a key of an application that is not selected "
	    "is accepted (%s)", err);
	ok(config_selected(&cfg) == &other_owner && demo_of(&cfg)->size == 5,
	    "and kept with its own application's settings");
	expect_app_error("app = other\n\ndemo.size = 0\n", "t.conf:3: "
	    "demo.size: 0 is out of range", "a bad value of an unselected "
	    "application's key still names file:line");
	expect_app_error("app = other\ndemo.sise = 5\n", "t.conf:2: unknown "
	    "key \"demo.sise\"", "a misspelt key of an unselected application");
	expect_app_error("app = bare\nother.levle = 5\n", "t.conf:2: unknown "
	    "key \"other.levle\"", "a misspelt key with an application of no "
	    "keys selected");

	is_int(parse_apps(&cfg, "other.level = 7\n[www]\napp = other\n", err,
	    sizeof(err)), 0, "a key before the app = that selects its "
	    "application (%s)", err);
	ok(config_selected(&cfg) == &other_owner && other_of(&cfg)->level == 7,
	    "applies to it");
	is_int(parse_apps(&cfg, "app = other\napp = demo\n", err, sizeof(err)),
	    0, "app given twice");
	ok(config_selected(&cfg) == &demo_owner, "takes its last value");
	expect_app_error("pm = static\napp = nosuch\n", "t.conf:2: app: no "
	    "application named \"nosuch\"", "an app nobody registered names "
	    "file:line");
	expect_error("app = demo\n", "t.conf:1: app: no application named "
	    "\"demo\"", "with no application registered, app = names none");
	expect_error("demo.size = 5\n", "t.conf:1: unknown key \"demo.size\"",
	    "and an application's key is unknown");
}

/* config_include_fn: "inc.conf" is the text arg points to. */
static int
text_include(void *arg, struct config *cfg, const char *pattern,
    const char *from, int line, char *err, size_t errlen)
{
	const char *text = arg;

	(void)pattern;
	(void)from;
	(void)line;
	return config_parse(cfg, "inc.conf", text, strlen(text), err, errlen);
}

static void
test_app_include(void)
{
	static struct config cfg;
	char err[CONFIG_ERR_LEN] = "";
	const char *main_text = "demo.color = red\ninclude = inc.conf\n"
	    "other.level = 4\n";
	const char *inc = "demo.size = 33\napp = other\n";
	const char *bad = "\ndemo.size = 1000\n";

	setup_apps(&cfg);
	is_int(config_parse_with(&cfg, "t.conf", main_text, strlen(main_text),
	    text_include, (void *)inc, err, sizeof(err)), 0, "application "
	    "keys and app = in an included file (%s)", err);
	ok(config_selected(&cfg) == &other_owner && other_of(&cfg)->level == 4,
	    "select its application for the lines after the include");
	ok(demo_of(&cfg)->size == 33 && demo_of(&cfg)->color == 0,
	    "and the unselected application keeps its keys from both files");
	setup_apps(&cfg);
	is_int(config_parse_with(&cfg, "t.conf", main_text, strlen(main_text),
	    text_include, (void *)bad, err, sizeof(err)), -1, "a bad value of "
	    "an application's key in an included file");
	ok(strstr(err, "inc.conf:2: demo.size: 1000 is out of range") != NULL,
	    "names the included file and line: %s", err);
}

static void
test_app_validate(void)
{
	static struct config cfg;
	char err[CONFIG_ERR_LEN] = "";

	setup_apps(&cfg);
	is_int(config_validate(&cfg, "t.conf", err, sizeof(err)), -1,
	    "the selected application's own rule applies");
	is_str(err, "t.conf: demo.name is not set", "with its message");
	is_int(parse_apps(&cfg, "demo.name = n\n", err, sizeof(err)), 0,
	    "demo.name set");
	is_int(config_validate(&cfg, "t.conf", err, sizeof(err)), 0,
	    "validates (%s)", err);
	is_int(parse_apps(&cfg, "app = other\n", err, sizeof(err)), 0,
	    "another application selected");
	is_int(config_validate(&cfg, "t.conf", err, sizeof(err)), 0,
	    "demo's rule does not apply then (%s)", err);
	is_int(parse_apps(&cfg, "listen = \"\"\n", err, sizeof(err)), 0,
	    "no listen, no demo.name");
	is_int(config_validate(&cfg, "t.conf", err, sizeof(err)), -1,
	    "refused");
	is_str(err, "t.conf: listen is not set", "the server's rules first");
}

static void
test_register_refused(void)
{
	static struct config cfg;
	static const struct config_directive server_key[] = {
		CONFIG_STRING("listen", struct demo_settings, name),
	};
	static const struct config_directive demo_key[] = {
		CONFIG_INT("demo.size", struct other_settings, level, 0, 1),
	};
	static const struct config_app takes_listen = { server_key, 1,
	    sizeof(struct demo_settings), NULL, NULL };
	static const struct config_app takes_demo = { demo_key, 1,
	    sizeof(struct other_settings), NULL, NULL };
	static const struct config_app too_big = { NULL, 0,
	    CONFIG_MAX_APP_SETTINGS + 1, NULL, NULL };
	char err[CONFIG_ERR_LEN], name[CONFIG_MAX_APPS + 1][8];
	int i, rc = 0;

	setup_apps(&cfg);
	is_int(config_register(&cfg, "demo", NULL, NULL, err, sizeof(err)), -1,
	    "a name registered twice");
	ok(strstr(err, "demo: registered twice") != NULL, "message: %s", err);
	is_int(config_register(&cfg, "x", &takes_listen, NULL, err,
	    sizeof(err)), -1, "an application key that is the server's");
	ok(strstr(err, "key listen is taken") != NULL, "message: %s", err);
	is_int(config_register(&cfg, "x", &takes_demo, NULL, err,
	    sizeof(err)), -1, "a key another application has");
	ok(strstr(err, "key demo.size is taken") != NULL, "message: %s", err);
	is_int(config_register(&cfg, "x", &too_big, NULL, err, sizeof(err)),
	    -1, "settings larger than CONFIG_MAX_APP_SETTINGS");
	ok(strstr(err, "CONFIG_MAX_APP_SETTINGS") != NULL, "message: %s", err);
	is_int((long long)cfg.napps, 3, "nothing refused was registered");
	is_str(cfg.app, "demo", "the default app is unchanged");

	config_defaults(&cfg);
	for (i = 0; i < CONFIG_MAX_APPS; i++) {
		snprintf(name[i], sizeof(name[i]), "a%d", i);
		rc |= config_register(&cfg, name[i], NULL, NULL, err,
		    sizeof(err));
	}
	is_int(rc, 0, "CONFIG_MAX_APPS applications register");
	snprintf(name[i], sizeof(name[i]), "a%d", i);
	is_int(config_register(&cfg, name[i], NULL, NULL, err, sizeof(err)),
	    -1, "one more is refused");
	ok(strstr(err, "more than") != NULL, "message: %s", err);
}

int
main(void)
{
	test_defaults();
	test_syslog_and_levels();
	test_include();
	test_addresses();
	test_cross_keys();
	test_every_server_key();
	test_errors_at_file_line();
	test_long_line();
	test_nul_and_validate();
	test_short_error_buffer();
	test_register_defaults();
	test_app_keys();
	test_app_include();
	test_app_validate();
	test_register_refused();
	return done_testing();
}
