/*
 * setup.c: a configuration loaded for the pool (master only; see
 * setup.h): parsed, checked against the system, the workers' identity
 * resolved and the application's shared state loaded, or refused whole.
 */
#include "server/setup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/preflight.h"
#include "util/configfile.h"

/* The configuration and the checks that need no application code. */
static int
setup_config(struct setup *s, const struct app *const *apps,
    const char *path, int children, char *err, size_t errlen)
{
	struct config *cfg = s->cfg;

	config_defaults(cfg);
	if (app_register(apps, cfg, err, errlen) == -1 ||
	    configfile_load(cfg, path, NULL, err, errlen) == -1)
		return -1;
	if (children > 0)
		cfg->max_children = children;
	if (config_validate(cfg, path, err, errlen) == -1 ||
	    sandbox_resolve(cfg, path, &s->ids, err, errlen) == -1 ||
	    preflight_config(cfg, &s->ids, path, err, errlen) == -1)
		return -1;
	return 0;
}

int
setup_load(struct setup *s, const struct app *const *apps,
    const char *path, int children, int check, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	if ((s->cfg = malloc(sizeof(*s->cfg))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (setup_config(s, apps, path, children, err, errlen) == -1)
		goto fail;
	s->app = app_selected(s->cfg);
	if (app_load(s->app, s->cfg, path, &s->shared, err, errlen) == -1)
		goto fail;
	if (check) {
		app_unload(s->app, s->shared);
		s->shared = NULL;
	}
	return 0;
fail:
	s->shared = NULL;	/* a failed load holds nothing */
	setup_free(s);
	return -1;
}

void
setup_free(struct setup *s)
{
	if (s->shared != NULL)
		app_unload(s->app, s->shared);
	free(s->cfg);
	memset(s, 0, sizeof(*s));
}
