/*
 * master.h: the master process: forks the static pool, reaps, respawns
 * and recycles workers, reloads without dropping requests, enforces the
 * request timeouts, serves the status page, turns signals into stop /
 * reload / reopen, talks to systemd (sd_notify) and owns the scoreboard.
 */
#ifndef CFPM_MASTER_H
#define CFPM_MASTER_H

#include "server/app.h"
#include "server/listen.h"
#include "util/config.h"

#define MASTER_FAST_STOP_MS	2000	/* SIGINT: then SIGKILL */
#define MASTER_TERMINATE_GRACE_MS 2000	/* after the timeout, then SIGKILL */

/*
 * Loads path into cfg: defaults, the file and its includes, the -n
 * override (children > 0), cross-checks (the workers' user and group
 * included: sandbox_resolve; socket owners and log paths:
 * preflight_config),
 * the applications of apps (NULL-terminated: main.c's) registered with
 * their own keys, the one cfg names (app =) set in *app, and what its
 * workers share, from its load,
 * in *shared (release with (*app)->unload; shared NULL only checks it).
 * Returns 0, or -1 with "file:line: reason" in err (errlen bytes). Used
 * at start, by -t, and on every reload.
 */
int master_load_config(struct config *cfg, const struct app *const *apps,
    const struct app **app, void **shared, const char *path, int children,
    char *err, size_t errlen);

/*
 * Runs app's pool until a stop signal: forks cfg->max_children workers
 * on ls, keeps that many running, reloads on SIGHUP/SIGUSR2 (cfg and
 * shared are replaced by the new configuration and app->load's result;
 * apps is where the new configuration's app is looked up, and changing
 * it needs a restart),
 * and stops gracefully (SIGTERM, SIGQUIT) or fast (SIGINT). Workers
 * inherit shared (taken over: unloaded at the end), so none loads it
 * again. The status page (cfg->status_listen set) is served on status_ls
 * when it holds a socket (fd != -1: systemd's), else on one bound here.
 * Removes socket files only if cfpm created them.
 * Returns the process exit status (0 after a clean stop).
 */
int master_run(struct config *cfg, const struct app *const *apps,
    const struct app *app, void *shared, const char *config_path,
    int children, struct listen_sock *ls, struct listen_sock *status_ls);

#endif
