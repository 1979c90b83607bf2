/*
 * app.c: the server's side of the application interface (master and
 * worker): the applications' settings registered with the configuration
 * loader, and the optional hooks of an application table, called or
 * skipped.
 */
#include "server/app.h"

int
app_register(const struct app *const *apps, struct config *cfg, char *err,
    size_t errlen)
{
	for (; *apps != NULL; apps++)
		if (config_register(cfg, (*apps)->name, (*apps)->settings,
		    *apps, err, errlen) == -1)
			return -1;
	return 0;
}

const struct app *
app_selected(const struct config *cfg)
{
	return config_selected(cfg);
}

int
app_load(const struct app *app, const struct config *cfg, const char *name,
    void **shared, char *err, size_t errlen)
{
	*shared = NULL;
	return app->load != NULL ? app->load(cfg, name, shared, err, errlen) :
	    0;
}

void
app_unload(const struct app *app, void *shared)
{
	if (app->unload != NULL)
		app->unload(shared);
}

int
app_init(const struct app *app, const struct app_env *env, void **state)
{
	*state = NULL;
	return app->init != NULL ? app->init(env, state) : 0;
}

void
app_fini(const struct app *app, void *state)
{
	if (app->fini != NULL)
		app->fini(state);
}
