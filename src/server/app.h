/*
 * app.h: the interface between the server and the application it runs.
 * The server (master, workers, FastCGI, the database connection) knows
 * no application: main.c hands it a list of these tables, and the
 * configuration's app = picks one (setup_load). The application sees the server only through this table,
 * the request view and reply path of http.h, and the database handle of
 * db.h.
 *
 * Only name and handle are required; a NULL hook does nothing (load
 * then shares NULL, init leaves the state NULL).
 *
 * An application's configuration keys are its own (settings: a table of
 * util/config.h): the server registers every application's with the
 * configuration loader before it parses a file (app_register), so their
 * keys are known wherever they stand, and only the selected
 * application's are validated; the application reads them back with
 * config_app_settings().
 *
 * Who calls what, and in which process:
 *   load    master: at start, for -t and on every reload, before any
 *           worker of that configuration is forked. What it returns is
 *           inherited by the workers (parsed keys, say), so they never
 *           parse it again. unload frees it in the master.
 *   init    worker: once, after fork, after the privileges are dropped
 *           and the database connection is opened, before the sandbox
 *           filter is applied (allocate and load here, not later).
 *   handle  worker: once per request; must send exactly one reply
 *           through http.h and report its phases with http_phase().
 *   fini    worker: before it exits.
 */
#ifndef CFPM_APP_H
#define CFPM_APP_H

#include <stddef.h>

#include "server/db.h"
#include "server/http.h"
#include "util/config.h"

/* What a worker gives the application's init. */
struct app_env {
	const struct config	*cfg;
	const void		*shared;	/* what load returned */
	struct db		*db;		/* NULL if the app uses none */
};

struct app {
	const char		*name;		/* what "app =" names */
	const struct config_app	*settings;	/* its own keys; NULL: none */
	/* The statements prepared on each worker's connection; a worker
	 * opens a connection only if uses_db. */
	int			 uses_db;
	const struct db_statement *statements;
	size_t			 nstatements;

	/* Checks what the application needs beyond its settings' own
	 * validation (name: the file, for messages) and loads what its
	 * workers share. Returns 0 with
	 * *shared set (may be NULL), or -1 with "name: reason" in err
	 * (errlen bytes). */
	int	(*load)(const struct config *cfg, const char *name,
		    void **shared, char *err, size_t errlen);
	void	(*unload)(void *shared);

	/* Returns 0 with *state set, or -1 (logged): the worker exits and
	 * the master backs off. */
	int	(*init)(const struct app_env *env, void **state);
	/* Returns 0, or -1 if the reply could not be given (http_reply
	 * failed: the server answers 500). The server sends the reply
	 * after the handler returns and learns then whether the client
	 * went away. */
	int	(*handle)(void *state, struct http_request *r);
	void	(*fini)(void *state);
};

/*
 * Registers each application of apps (NULL-terminated, at least one) and
 * its settings with cfg, right after config_defaults(): the first is the
 * default "app". Returns 0, or -1 with the reason in err (errlen bytes).
 */
int app_register(const struct app *const *apps, struct config *cfg,
    char *err, size_t errlen);

/* The application cfg selects, among those app_register() registered. */
const struct app *app_selected(const struct config *cfg);

/* The hooks as the server calls them: a NULL hook is a no-op (app.c). */
int app_load(const struct app *app, const struct config *cfg,
    const char *name, void **shared, char *err, size_t errlen);
void app_unload(const struct app *app, void *shared);
int app_init(const struct app *app, const struct app_env *env, void **state);
void app_fini(const struct app *app, void *state);

#endif
