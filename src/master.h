/*
 * master.h: the master process: forks the static pool, reaps and
 * respawns workers, turns signals into stop/reload/reopen, talks to
 * systemd (sd_notify) and owns the scoreboard.
 */
#ifndef CFPM_MASTER_H
#define CFPM_MASTER_H

#include "config.h"
#include "listen.h"

#define MASTER_BACKOFF_MIN_MS	100	/* respawn delay after a quick death */
#define MASTER_BACKOFF_MAX_MS	10000	/* longest respawn delay */
#define MASTER_QUICK_DEATH_MS	1000	/* a worker dying sooner backs off */
#define MASTER_FAST_STOP_MS	2000	/* SIGINT: then SIGKILL */

/*
 * Runs the pool until a stop signal: forks cfg->max_children workers on
 * ls, respawns them as they die, and stops gracefully (SIGTERM, SIGQUIT)
 * or fast (SIGINT). Removes the socket file only if cfpm created it.
 * Returns the process exit status (0 after a clean stop).
 */
int master_run(struct config *cfg, const char *config_path,
    struct listen_sock *ls);

#endif
