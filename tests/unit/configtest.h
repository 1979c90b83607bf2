/*
 * configtest.h: what the configuration tests share (header only, with
 * tap.h): a text parsed as "t.conf" on top of a setup (the defaults, with
 * or without applications registered), and an error expected of it.
 */
#ifndef CFPM_CONFIGTEST_H
#define CFPM_CONFIGTEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/config.h"
#include "tap.h"

/* How a test's config starts: config_defaults, and maybe more. */
typedef void (*configtest_setup)(struct config *cfg);

/* config_register(), or the test bails out: a setup cannot fail. */
static inline void
configtest_register(struct config *cfg, const char *name,
    const struct config_app *settings, const void *owner)
{
	char err[CONFIG_ERR_LEN];

	if (config_register(cfg, name, settings, owner, err,
	    sizeof(err)) == -1) {
		printf("Bail out! config_register(%s): %s\n", name, err);
		exit(1);
	}
}

/* setup(cfg), then text parsed as t.conf: config_parse's result. */
static inline int
configtest_parse(configtest_setup setup, struct config *cfg,
    const char *text, char *err, size_t errlen)
{
	setup(cfg);
	err[0] = '\0';
	return config_parse(cfg, "t.conf", text, strlen(text), err, errlen);
}

/* Two tests: text is refused, with want in the message. */
static inline void
configtest_error(configtest_setup setup, const char *text, const char *want,
    const char *what)
{
	static struct config cfg;
	char err[CONFIG_ERR_LEN];

	is_int(configtest_parse(setup, &cfg, text, err, sizeof(err)), -1,
	    "%s: rejected", what);
	ok(strstr(err, want) != NULL, "%s: message \"%s\" has \"%s\"", what,
	    err, want);
}

#endif
