/*
 * fuzz_config.c: libFuzzer target for the configuration parser.
 *
 * The input is a whole config file: config_defaults(), the events API's
 * and hello's registration as the server does it, config_parse() and,
 * when parsing succeeds, config_validate(). The text is handed over in a
 * copy that ends right before an unmapped page (fuzz_guard_copy), so a
 * read past its length faults even inside libc. Beyond "no crash", the
 * target checks the parser's promises: an error message is a NUL-terminated
 * "fuzz.conf:" message that fits CONFIG_ERR_LEN, and a parsed config holds
 * only in-range numbers and NUL-terminated strings. Any broken invariant
 * is an abort().
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "events/settings.h"
#include "util/config.h"
#include "fuzz.h"

#define FUZZ_NAME	"fuzz.conf"

/* err (errlen bytes) must be a NUL-terminated message naming the file. */
static void
check_err(const char *err, size_t errlen)
{
	size_t n = strnlen(err, errlen);

	if (n == 0 || n == errlen ||
	    strncmp(err, FUZZ_NAME ":", sizeof(FUZZ_NAME)) != 0)
		abort();
}

static void
check_str(const char *s)
{
	if (strnlen(s, CONFIG_MAX_VALUE) == CONFIG_MAX_VALUE)
		abort();
}

/* What the events API's keys may hold (settings.c's directive table). */
static void
check_settings(const struct settings *s)
{
	check_str(s->issuer);
	check_str(s->audience);
	check_str(s->key_file);
	check_str(s->key_id);
	if (s->leeway < 0 || s->leeway > 3600 ||
	    (s->errors != SETTINGS_ERRORS_RFC6750 &&
	    s->errors != SETTINGS_ERRORS_COMPAT) ||
	    (s->typ_strict != 0 && s->typ_strict != 1))
		abort();
}

/* What a successful parse may leave behind (config.c's directive table). */
static void
check_cfg(const struct config *c)
{
	check_str(c->pool_name);
	check_str(c->app);
	check_str(c->listen);
	check_str(c->listen_owner);
	check_str(c->listen_group);
	check_str(c->status_path);
	check_str(c->ping_path);
	check_str(c->ping_response);
	check_str(c->db_conninfo);
	check_str(c->error_log);
	check_str(c->access_log);
	check_str(c->access_format);
	check_str(c->status_listen);
	check_str(c->syslog_ident);
	if (c->listen_backlog < 1 || c->listen_backlog > 65535 ||
	    c->listen_mode > 07777 ||
	    c->max_children < 1 || c->max_children > CONFIG_MAX_CHILDREN ||
	    c->max_requests < 0 ||
	    c->request_terminate_timeout < 0 ||
	    c->request_terminate_timeout > 86400 ||
	    c->request_slowlog_timeout < 0 ||
	    c->request_slowlog_timeout > 86400 ||
	    c->process_control_timeout < 0 ||
	    c->process_control_timeout > 86400 ||
	    c->log_level < CONFIG_LOG_ALERT || c->log_level > CONFIG_LOG_DEBUG ||
	    c->syslog_facility < 0 ||
	    (strcmp(c->app, "events") != 0 && strcmp(c->app, "hello") != 0))
		abort();
	check_settings(settings_get(c));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config *cfg;
	struct fuzz_guard g;
	const char *text;
	char err[CONFIG_ERR_LEN];

	/* On the heap: ASan then sees a write past the struct. */
	if ((cfg = malloc(sizeof(*cfg))) == NULL)
		abort();
	config_defaults(cfg);
	if (config_register(cfg, "events", &settings_table, NULL, err,
	    sizeof(err)) == -1 || config_register(cfg, "hello", NULL, NULL,
	    err, sizeof(err)) == -1)
		abort();
	memset(err, 0, sizeof(err));
	text = fuzz_guard_copy(data, size, &g);
	if (config_parse(cfg, FUZZ_NAME, text, size, err, sizeof(err)) == -1) {
		check_err(err, sizeof(err));
		goto done;
	}
	check_cfg(cfg);
	memset(err, 0, sizeof(err));
	if (config_validate(cfg, FUZZ_NAME, err, sizeof(err)) == -1)
		check_err(err, sizeof(err));
	else if (cfg->listen[0] == '\0' ||
	    (cfg->ping_path[0] != '\0' && cfg->ping_path[0] != '/') ||
	    (cfg->status_path[0] != '\0' && cfg->status_path[0] != '/'))
		abort();
done:
	fuzz_guard_free(&g);
	free(cfg);
	return 0;
}
