/*
 * test_config.c: config parsing, defaults, file:line errors, include lines
 * through the loader's callback, address forms and cross-key rules.
 */
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "util/config.h"
#include "tap.h"

static int
parse(struct config *cfg, const char *text, char *err, size_t errlen)
{
	config_defaults(cfg);
	err[0] = '\0';
	return config_parse(cfg, "t.conf", text, strlen(text), err, errlen);
}

static void
expect_error(const char *text, const char *want, const char *what)
{
	static struct config cfg;
	char err[CONFIG_ERR_LEN];

	is_int(parse(&cfg, text, err, sizeof(err)), -1, "%s: rejected", what);
	ok(strstr(err, want) != NULL, "%s: message \"%s\" has \"%s\"", what,
	    err, want);
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
	is_int(cfg.auth_leeway, 0, "default leeway 0");
	is_int(cfg.auth_errors, CONFIG_AUTH_RFC6750, "default rfc6750");
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
test_full(void)
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
	    "auth.issuer = https://auth.bench.local\n"
	    "auth.audience = events-api\n"
	    "auth.key_file = /etc/cfpm/jwks.json\n"
	    "auth.leeway = 30\n"
	    "auth.errors = compat\n"
	    "auth.typ = strict\n"
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
	is_int(cfg.auth_leeway, 30, "auth.leeway");
	is_int(cfg.auth_errors, CONFIG_AUTH_COMPAT, "auth.errors compat");
	is_int(cfg.auth_typ_strict, 1, "auth.typ strict");
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
test_errors(void)
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
	expect_error("auth.errors = loud\n", "expected rfc6750 or compat",
	    "bad auth.errors");
	expect_error("auth.typ = maybe\n", "expected lenient or strict", "bad typ");
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
	expect_error("auth.leeway = -1\n", "out of range", "negative leeway");
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
	    "the defaults validate (auth.* is the events app's to require)");
	is_int(parse(&cfg, "listen = \"\"\n", err, sizeof(err)), 0,
	    "an empty listen parses");
	is_int(config_validate(&cfg, "t.conf", err, sizeof(err)), -1,
	    "an empty listen is refused");
	ok(strstr(err, "t.conf: listen is not set") != NULL, "message: %s",
	    err);
	config_defaults(&cfg);
	is_int(parse(&cfg, "auth.issuer = i\nauth.audience = a\n"
	    "auth.key_file = k\nping.path = ping\n", err, sizeof(err)), 0,
	    "parses");
	is_int(config_validate(&cfg, "t.conf", err, sizeof(err)), -1,
	    "ping.path without / rejected");
}

/* A short error buffer gets a cut, terminated message and no more. */
static void
test_short_err(void)
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

int
main(void)
{
	test_defaults();
	test_syslog_and_levels();
	test_include();
	test_addresses();
	test_cross_keys();
	test_full();
	test_errors();
	test_long_line();
	test_nul_and_validate();
	test_short_err();
	return done_testing();
}
