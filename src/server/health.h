/*
 * health.h: what the master says about its pool (master): READY=1 once
 * the pool serves, a STATUS= line for systemctl status (every
 * HEALTH_STATUS_US, and at once when something it says changes),
 * WATCHDOG=1 when systemd asks for it, and one log line when the
 * workers lose the database and one when they all have it back. It
 * reads the scoreboard and the pool's state and decides nothing about
 * the pool: pool.c decides, master.c acts, this module tells.
 */
#ifndef CFPM_HEALTH_H
#define CFPM_HEALTH_H

#include <stdint.h>

#include "server/pool.h"
#include "server/scoreboard.h"
#include "util/config.h"

#define HEALTH_STATUS_US	(5 * 1000000)	/* STATUS= line period */
#define HEALTH_STATUS_LEN	1024	/* a STATUS= message */
#define HEALTH_DB_REASON_US	(1 * 1000000)	/* wait for a worker's
						   reason before the count */
#define HEALTH_CAUSE_LEN	96	/* how a worker ended */

/* What was said, and what is to be said; zeroed to start. */
struct health {
	int64_t		next_status_us;	/* 0: say it at the next tick */
	int64_t		last_status_us;	/* for req/s in STATUS= */
	uint64_t	last_accepted;
	int64_t		next_watchdog_us;
	char		refused[CONFIG_ERR_LEN];	/* why the last reload
						   was refused, "" once one
						   succeeds */
	char		cause[HEALTH_CAUSE_LEN];	/* the last quick
						   death's */
	int		failing_said;	/* pool_failing() in the last
					   STATUS= */
	unsigned	db_live;	/* serving workers */
	unsigned	db_without;	/* of those, without a database */
	int		db_said;	/* db_without > 0 in the last STATUS= */
	int		db_down;	/* "database unavailable" logged */
	int64_t		db_lost_us;	/* first seen lost */
	int64_t		db_back_us;	/* the last "database back" */
	uint64_t	db_503_base;	/* 503s before the loss */
};

/*
 * A reload was refused for why (logged by the caller): STATUS= says so
 * at once and until a reload succeeds. why NULL: one succeeded, and the
 * next line no longer says it.
 */
void health_reload(struct health *h, const char *why);

/*
 * A worker died lived_ms after its start, cause saying how ("exited
 * with status 1"): STATUS= names the last such cause while the pool is
 * in a crash loop (pool_failing()).
 */
void health_died_young(struct health *h, const char *cause,
    int64_t lived_ms);

/*
 * Once per pass of the master, after the pool's decisions: the pool's
 * database from sb's slots (logged when it goes and comes back),
 * READY=1 when pool_ready() says so (marking it sent in p), the STATUS=
 * line when it is due, WATCHDOG=1 when systemd's interval asks. snap is
 * the pass's view of the sb->nslots slots.
 */
void health_tick(struct health *h, struct pool *p,
    const struct pool_slot *snap, const struct scoreboard *sb);

#endif
