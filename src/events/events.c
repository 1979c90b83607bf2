/*
 * events.c: the events application's table (app.h). Its auth.* keys are
 * settings.c's, registered with the configuration loader; the master
 * parses the token keys once per configuration (load); each worker
 * allocates its reply buffer (init), then api.c answers every request
 * (handle); the request itself, its body included, is the server's
 * (http.h).
 */
#include "events/events.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "events/api.h"
#include "events/auth.h"
#include "events/settings.h"
#include "events/store.h"
#include "util/log.h"

/* Master: a bad key file fails the start, the -t or the reload here. */
static int
events_load(const struct config *cfg, const char *name, void **shared,
    char *err, size_t errlen)
{
	struct auth *a;

	(void)name;	/* a key file's errors name the key file */
	*shared = NULL;
	if ((a = calloc(1, sizeof(*a))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (auth_init(a, settings_get(cfg), err, errlen) == -1) {
		free(a);
		return -1;
	}
	*shared = a;
	return 0;
}

static void
events_unload(void *shared)
{
	if (shared == NULL)
		return;
	auth_free(shared);
	free(shared);
}

static int
events_init(const struct app_env *env, void **state)
{
	/* The keys were parsed once, by the master. */
	if ((*state = api_new(settings_get(env->cfg), env->shared,
	    env->db)) == NULL) {
		log_err("%s: out of memory", __func__);
		return -1;
	}
	return 0;
}

static int
events_handle(void *state, struct http_request *r)
{
	return api_handle(state, r);
}

static void
events_fini(void *state)
{
	api_free(state);
}

const struct app events_app = {
	.name = "events",
	.settings = &settings_table,
	.uses_db = 1,
	.statements = store_statements,
	.nstatements = STORE_NSTATEMENTS,
	.load = events_load,
	.unload = events_unload,
	.init = events_init,
	.handle = events_handle,
	.fini = events_fini,
};
