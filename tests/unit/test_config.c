/*
 * test_config.c: config parsing, defaults, and file:line errors.
 */
#include <stdio.h>
#include <string.h>

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
	expect_error("log_level = chatty\n", "expected error, warning, notice, info or debug", "bad level");
	expect_error("listen = \"/x\n", "unbalanced quotes", "lone quote");
	expect_error("[www\n", "section", "unterminated section");
	expect_error("listen = \"a\"b\"\n", "unescaped quote",
	    "inner quote");
	expect_error("request_terminate_timeout = 2d\n", "not an integer",
	    "unknown duration suffix");
	expect_error("request_terminate_timeout = 25h\n", "longer than",
	    "duration too long");
	expect_error("auth.leeway = -1\n", "out of range", "negative leeway");
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
	test_full();
	test_errors();
	test_long_line();
	test_nul_and_validate();
	test_short_err();
	return done_testing();
}
