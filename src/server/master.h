/*
 * master.h: the master process: forks the static pool, reaps, respawns
 * and recycles workers, reloads without dropping requests, enforces the
 * request timeouts, serves the status page, turns signals into stop /
 * reload / reopen, talks to systemd (sd_notify) and owns the scoreboard.
 */
#ifndef CFPM_MASTER_H
#define CFPM_MASTER_H

#include "events/auth.h"
#include "util/config.h"
#include "server/listen.h"

#define MASTER_BACKOFF_MIN_MS	100	/* respawn delay after a quick death */
#define MASTER_BACKOFF_MAX_MS	10000	/* longest respawn delay */
#define MASTER_QUICK_DEATH_MS	1000	/* a worker dying sooner backs off */
#define MASTER_FAST_STOP_MS	2000	/* SIGINT: then SIGKILL */
#define MASTER_TERMINATE_GRACE_MS 2000	/* after the cancel, then SIGKILL */
#define MASTER_MAX_CONFIG	(1024 * 1024)	/* config file size limit */

/*
 * Loads path into cfg: defaults, the file, the -n override (children > 0),
 * cross-checks (the workers' user and group included: sandbox_resolve),
 * and the key file parsed into auth (release with
 * auth_free(); NULL only checks it). Returns 0, or -1 with
 * "file:line: reason" in err (errlen bytes). Used at start, by -t, and
 * on every reload.
 */
int master_load_config(struct config *cfg, struct auth *auth,
    const char *path, int children, char *err, size_t errlen);

/*
 * Runs the pool until a stop signal: forks cfg->max_children workers on
 * ls, keeps that many running, reloads on SIGHUP/SIGUSR2 (cfg and auth
 * are replaced by the new configuration and keys), and stops gracefully
 * (SIGTERM, SIGQUIT) or fast (SIGINT). Workers inherit the keys parsed
 * here (auth, taken over), so none parses them again. Removes socket
 * files only if cfpm created them.
 * Returns the process exit status (0 after a clean stop).
 */
int master_run(struct config *cfg, struct auth *auth,
    const char *config_path, int children, struct listen_sock *ls);

#endif
