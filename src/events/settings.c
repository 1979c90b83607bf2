/*
 * settings.c: the events API's auth.* keys (PURE; parsed in the master
 * at start, for -t and on every reload, with the rest of the
 * configuration). Nothing outside events/ knows them.
 */
#include "events/settings.h"

#include <stddef.h>
#include <stdio.h>

static const struct config_choice settings_errors_choices[] = {
	{ "rfc6750", SETTINGS_ERRORS_RFC6750 },
	{ "compat", SETTINGS_ERRORS_COMPAT }, { NULL, 0 },
};
static const struct config_choice settings_typ_choices[] = {
	{ "lenient", 0 }, { "strict", 1 }, { NULL, 0 },
};

#define SET_STRING(k, f)	CONFIG_STRING(k, struct settings, f)
#define SET_INT(k, f, lo, hi)	CONFIG_INT(k, struct settings, f, lo, hi)
#define SET_CHOICE(k, f, c)	CONFIG_CHOICE(k, struct settings, f, c)

static const struct config_directive settings_directives[] = {
	SET_STRING("auth.issuer", issuer),
	SET_STRING("auth.audience", audience),
	SET_STRING("auth.key_file", key_file),
	SET_STRING("auth.key_id", key_id),
	SET_INT("auth.leeway", leeway, 0, 3600),
	SET_CHOICE("auth.errors", errors, settings_errors_choices),
	SET_CHOICE("auth.typ", typ_strict, settings_typ_choices),
};

static void
settings_defaults(void *p)
{
	struct settings *s = p;

	s->errors = SETTINGS_ERRORS_RFC6750;
}

/* The keys without which no token can be checked. */
static int
settings_validate(const void *p, const char *name, char *err, size_t errlen)
{
	const struct settings *s = p;
	const struct {
		const char *value, *key;
	} required[] = {
		{ s->issuer, "auth.issuer" },
		{ s->audience, "auth.audience" },
		{ s->key_file, "auth.key_file" },
	};
	size_t i;

	for (i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		if (required[i].value[0] == '\0') {
			snprintf(err, errlen, "%s: %s is not set", name,
			    required[i].key);
			return -1;
		}
	}
	return 0;
}

const struct config_app settings_table = {
	.directives = settings_directives,
	.ndirectives = sizeof(settings_directives) /
	    sizeof(settings_directives[0]),
	.size = sizeof(struct settings),
	.defaults = settings_defaults,
	.validate = settings_validate,
};

const struct settings *
settings_get(const struct config *cfg)
{
	return config_app_settings(cfg, &settings_table);
}
