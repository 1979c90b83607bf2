/*
 * test_settings.c: the events API's own keys (auth.*, events/settings.c)
 * through the configuration loader, as the server registers them: their
 * defaults, values and errors at file:line, the keys the events API
 * requires, and that another application selected (hello) neither
 * requires nor refuses them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/settings.h"
#include "util/config.h"
#include "configtest.h"
#include "tap.h"

/* The defaults with "events" (the default app) and "hello" registered,
 * as main.c's table does. */
static void
setup(struct config *cfg)
{
	config_defaults(cfg);
	configtest_register(cfg, "events", &settings_table, NULL);
	configtest_register(cfg, "hello", NULL, NULL);
}

static int
parse(struct config *cfg, const char *text, char *err, size_t errlen)
{
	return configtest_parse(setup, cfg, text, err, errlen);
}

static void
expect_error(const char *text, const char *want, const char *what)
{
	configtest_error(setup, text, want, what);
}

static void
test_defaults(void)
{
	static struct config cfg;
	const struct settings *s;

	setup(&cfg);
	s = settings_get(&cfg);
	ok(s != NULL, "the events API's settings are in the config");
	is_int(s->leeway, 0, "default leeway 0");
	is_int(s->errors, SETTINGS_ERRORS_RFC6750, "default rfc6750");
	is_int(s->typ_strict, 0, "default typ lenient");
	ok(s->issuer[0] == '\0' && s->audience[0] == '\0' &&
	    s->key_file[0] == '\0' && s->key_id[0] == '\0',
	    "no issuer, audience, key file or kid by default");
}

static void
test_every_auth_key(void)
{
	static struct config cfg;
	char err[CONFIG_ERR_LEN];
	const struct settings *s;
	const char *text =
	    "[www]\n"
	    "listen = [::1]:9000\n"
	    "auth.issuer = https://auth.bench.local\n"
	    "auth.audience = events-api\n"
	    "auth.key_file = /etc/cfpm/jwks.json\n"
	    "auth.key_id = \"bench-1\"\n"
	    "auth.leeway = 30\n"
	    "auth.errors = compat\n"
	    "auth.typ = strict\n";

	is_int(parse(&cfg, text, err, sizeof(err)), 0,
	    "a config with every auth.* key parses (%s)", err);
	s = settings_get(&cfg);
	is_str(s->issuer, "https://auth.bench.local", "auth.issuer");
	is_str(s->audience, "events-api", "auth.audience");
	is_str(s->key_file, "/etc/cfpm/jwks.json", "auth.key_file");
	is_str(s->key_id, "bench-1", "auth.key_id unquoted");
	is_int(s->leeway, 30, "auth.leeway");
	is_int(s->errors, SETTINGS_ERRORS_COMPAT, "auth.errors compat");
	is_int(s->typ_strict, 1, "auth.typ strict");
	is_int(config_validate(&cfg, "t.conf", err, sizeof(err)), 0,
	    "validates (%s)", err);
}

static void
test_errors_at_file_line(void)
{
	expect_error("auth.errors = loud\n", "expected rfc6750 or compat",
	    "bad auth.errors");
	expect_error("auth.typ = maybe\n", "expected lenient or strict", "bad typ");
	expect_error("auth.leeway = -1\n", "out of range", "negative leeway");
	expect_error("\nauth.leeway = 3601\n", "t.conf:2: auth.leeway: 3601 is "
	    "out of range 0..3600", "leeway over an hour, at file:line");
	expect_error("auth.isuer = x\n", "t.conf:1: unknown key \"auth.isuer\"",
	    "a misspelt auth key");
	expect_error("app = hello\nauth.isuer = x\n", "t.conf:2: unknown key "
	    "\"auth.isuer\"", "a misspelt auth key with app = hello");
	expect_error("app = hello\nauth.leeway = soon\n", "t.conf:2: "
	    "auth.leeway: \"soon\" is not an integer", "a bad auth value with "
	    "app = hello");
}

/* What the events API requires, and only while it is selected. */
static void
test_required(void)
{
	static const char *const keys[] = { "auth.issuer", "auth.audience",
	    "auth.key_file" };
	static struct config cfg;
	char err[CONFIG_ERR_LEN], text[256], want[64];
	size_t i, j;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		text[0] = '\0';
		for (j = 0; j < sizeof(keys) / sizeof(keys[0]); j++)
			if (j != i)
				snprintf(text + strlen(text), sizeof(text) -
				    strlen(text), "%s = x\n", keys[j]);
		is_int(parse(&cfg, text, err, sizeof(err)), 0, "parses "
		    "without %s (%s)", keys[i], err);
		is_int(config_validate(&cfg, "t.conf", err, sizeof(err)), -1,
		    "the events API without %s is refused", keys[i]);
		snprintf(want, sizeof(want), "t.conf: %s is not set", keys[i]);
		is_str(err, want, "message names the file and the key");
	}
	is_int(parse(&cfg, "app = hello\n", err, sizeof(err)), 0,
	    "app = hello without auth.*");
	is_int(config_validate(&cfg, "t.conf", err, sizeof(err)), 0,
	    "validates: hello needs no auth.* key (%s)", err);
	is_int(parse(&cfg, "auth.issuer = i\nauth.leeway = 5\n"
	    "app = hello\n", err, sizeof(err)), 0,
	    "app = hello with auth.* keys before it");
	is_int(config_validate(&cfg, "t.conf", err, sizeof(err)), 0,
	    "validates (%s)", err);
	ok(settings_get(&cfg)->leeway == 5, "the keys are kept, unused");
}

int
main(void)
{
	test_defaults();
	test_every_auth_key();
	test_errors_at_file_line();
	test_required();
	return done_testing();
}
