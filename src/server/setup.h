/*
 * setup.h: one configuration as the pool runs it (master: at start, for
 * -t and on every reload). A setup is the configuration loaded and
 * checked against the system, the application it selects with what that
 * application loaded for its workers, and who the workers run as: each
 * found once, here, and inherited by every worker of the setup. A start
 * installs one; a reload loads the next one whole and installs it, or
 * refuses it and keeps the running one.
 */
#ifndef CFPM_SETUP_H
#define CFPM_SETUP_H

#include <stddef.h>

#include "server/app.h"
#include "server/sandbox.h"
#include "util/config.h"

struct setup {
	struct config		*cfg;		/* the setup's own (malloc'd:
						   large, never copied) */
	const struct app	*app;		/* the one cfg names (app =) */
	void			*shared;	/* app->load's, inherited by
						   the workers; NULL for -t */
	struct sandbox_ids	 ids;		/* who the workers run as */
};

/*
 * Loads path into s: the defaults, the applications of apps
 * (NULL-terminated: main.c's) registered with their own keys, the file
 * and its includes, the -n override (children > 0), the cross-checks,
 * the workers' user and group (sandbox_resolve: a reload to a bad one is
 * refused while the running pool serves), the socket owners and log
 * paths (preflight_config), then the selected application's load: what
 * its workers share (the events API's keys), loaded once so that a bad
 * file fails now, not in every fork. With check (-t) that load is only
 * tried and undone: s->shared stays NULL. Returns 0, or -1 with
 * "file:line: reason" in err (errlen bytes) and nothing held in s.
 */
int setup_load(struct setup *s, const struct app *const *apps,
    const char *path, int children, int check, char *err, size_t errlen);

/* Releases what s holds (the application's shared state, if any,
 * through its unload; the configuration) and empties it; an empty s is
 * left as it is. */
void setup_free(struct setup *s);

#endif
