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
#include "server/setup.h"

#define MASTER_FAST_STOP_MS	2000	/* SIGINT: then SIGKILL */
#define MASTER_TERMINATE_GRACE_MS 2000	/* after the timeout, then SIGKILL */

/*
 * Runs setup's pool (setup_load's: taken over, setup left empty, freed
 * at the end) until a stop signal: forks cfg->max_children workers of
 * setup's application on ls, keeps that many running, reloads on SIGHUP
 * or SIGUSR2 (setup_load of config_path with the -n override children
 * and the applications of apps; a new setup replaces the running one
 * whole, and changing the application needs a restart), and stops
 * gracefully (SIGTERM, SIGQUIT) or fast (SIGINT). Workers inherit the
 * setup, what the application loaded included, so none loads it again.
 * The status page (cfg->status_listen set) is served on status_ls when
 * it holds a socket (fd != -1: systemd's), else on one bound here.
 * Removes socket files only if cfpm created them. Returns the process
 * exit status (0 after a clean stop).
 */
int master_run(struct setup *setup, const struct app *const *apps,
    const char *config_path, int children, struct listen_sock *ls,
    struct listen_sock *status_ls);

#endif
