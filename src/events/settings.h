/*
 * settings.h: the events API's own configuration keys, auth.* (PURE):
 * their directive table, the struct they fill, its defaults and what
 * must be set. The server registers the table with the configuration
 * loader through events_app (events.c), so a bad auth.* value is an
 * error at its file:line like any server key's, and only while the
 * events API is the selected application are the settings required.
 */
#ifndef CFPM_SETTINGS_H
#define CFPM_SETTINGS_H

#include <stdint.h>

#include "util/config.h"

/* auth.errors: how auth failures are answered (api.c maps them). */
enum settings_errors {
	SETTINGS_ERRORS_RFC6750 = 0,	/* RFC 6750 statuses and headers */
	SETTINGS_ERRORS_COMPAT,		/* every failure 401 invalid_token */
};

struct settings {
	char		issuer[CONFIG_MAX_VALUE];	/* auth.issuer */
	char		audience[CONFIG_MAX_VALUE];	/* auth.audience */
	char		key_file[CONFIG_MAX_VALUE];	/* auth.key_file: SPKI
							   PEM or JWKS */
	char		key_id[CONFIG_MAX_VALUE];	/* auth.key_id: kid of
							   a PEM key */
	int64_t		leeway;		/* auth.leeway, seconds */
	int		errors;		/* auth.errors: enum settings_errors */
	int		typ_strict;	/* auth.typ: 1 requires at+jwt */
};

/* The table events_app registers (struct app's settings). */
extern const struct config_app settings_table;

/*
 * The events API's settings in cfg (registered through settings_table:
 * never NULL once the server registered events_app, as it does before it
 * parses a configuration).
 */
const struct settings *settings_get(const struct config *cfg);

#endif
