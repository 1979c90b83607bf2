/*
 * pool.h: the pool's policy, for the master: how many workers to start,
 * which to retire, what a worker's death counts as and how long to back
 * off after it, when the pool is ready, what a reload resets.
 * PURE: decisions over a snapshot of the slots (struct pool_slot, which
 * the master derives from the scoreboard) and the pool's own state
 * (struct pool); no I/O, no clock (now is a parameter), no globals.
 * master.c forks, signals, reaps and logs as these decisions say.
 *
 * Generations: a reload starts a new one. A worker is current while it
 * belongs to the current generation, has not asked to be replaced
 * (pm.max_requests) and has not been sent SIGTERM. Replacements start at
 * once; the workers they replace are retired only when max_children
 * current workers serve as well as they do (or a reload has waited too
 * long), so the pool never shrinks: accepting, and connected to the
 * database if any of those they replace still is.
 *
 * READY=1 does not wait for the database: a worker that tried to connect
 * and failed accepts all the same (it answers 503 and reconnects), so the
 * pool is ready once max_children current workers serve, and systemd is
 * never kept waiting by a database outage, at start or after a reload.
 */
#ifndef CFPM_POOL_H
#define CFPM_POOL_H

#include <stdint.h>

#include "server/scoreboard.h"

#define POOL_BACKOFF_MIN_MS	100	/* respawn delay after a quick death */
#define POOL_BACKOFF_MAX_MS	10000	/* longest respawn delay */
#define POOL_BACKOFF_DOUBLINGS	7	/* MIN << 7 is past MAX already */
#define POOL_QUICK_DEATH_MS	1000	/* a worker dying sooner backs off */
#define POOL_RELOAD_GRACE_S	10	/* a reload waits for readiness
					   process_control_timeout + this,
					   then retires the old workers */

/* One slot as the policy sees it (master: from scoreboard_read()). */
struct pool_slot {
	int		life;		/* enum sb_life */
	unsigned	generation;
	int		retire;		/* the worker asked to be replaced */
	int		serving;	/* past start-up: its first database
					   attempt made, accepting */
	int		ready;		/* serving, and prepared once */
	int		db_ok;		/* its connection is usable now */
	int64_t		started_us;	/* fork, CLOCK_MONOTONIC */
};

/* The pool's state between decisions (the master's, changed only here). */
struct pool {
	unsigned	generation;	/* the current one */
	unsigned	max_children;	/* the current generation's size */
	int		stopping;	/* a stop began: nothing starts and
					   no death counts */
	int		ready_sent;	/* READY=1 sent for this generation */
	unsigned	quick_deaths;	/* in a row */
	int64_t		next_spawn_us;	/* no fork before this (backoff) */
	int64_t		reload_deadline_us;	/* 0: no reload waiting */
};

/* What pool_retire() decides for one slot. */
enum pool_retire {
	POOL_KEEP = 0,
	POOL_RETIRE,		/* SIGTERM: replaced by a reload */
	POOL_RECYCLE,		/* SIGTERM, and one "recycle" respawn */
};

/* What a worker's death means (pool_death()). */
struct pool_death {
	enum sb_reason	reason;		/* EXIT, CRASH or TERMINATE */
	int		respawn;	/* 1: a respawn under reason */
	int64_t		lived_ms;
	int		delay_ms;	/* > 0: the next fork waits this long */
};

/* PURE. A new pool of max_children, generation 0, nothing sent yet. */
void pool_init(struct pool *p, unsigned max_children);

/* PURE. s from the scoreboard's view of a slot. */
void pool_slot_from(struct pool_slot *s, const struct sb_view *v);

/*
 * PURE. Workers to start now: what is missing to max_children current
 * ones; 0 while stopping or before the backoff's next_spawn_us.
 */
unsigned pool_to_spawn(const struct pool *p, const struct pool_slot *s,
    unsigned n, int64_t now_us);

/*
 * PURE. Fills act[0..n-1]: which running workers that are no longer
 * current to send SIGTERM, once max_children current workers serve and,
 * if any of those to retire has its database, are ready (a replacement
 * that has not connected yet does not stand in for one that has); or
 * once the reload deadline has passed. A worker that asked to be replaced
 * in the current generation is a POOL_RECYCLE (one respawn); the others
 * were replaced by a reload (counted by pool_reload()). Workers already
 * signalled are left alone. Returns how many to signal.
 */
unsigned pool_retire(const struct pool *p, const struct pool_slot *s,
    unsigned n, int64_t now_us, enum pool_retire *act);

/*
 * PURE. After a quick death (lived_us under POOL_QUICK_DEATH_MS, or any
 * exit with a non-zero status): doubles the delay from
 * POOL_BACKOFF_MIN_MS up to POOL_BACKOFF_MAX_MS, counts the quick death
 * and moves next_spawn_us. Otherwise resets the count. Returns the delay
 * in ms, 0 when none.
 */
int pool_backoff(struct pool *p, int64_t lived_us, int wstatus,
    int64_t now_us);

/*
 * PURE. The worker in s died with wstatus (waitpid()) at now_us. Fills d:
 * its reason (TERMINATE if the master killed it, CRASH for another
 * signal, EXIT otherwise), whether it is a respawn (the pool is running
 * and it was current; a worker retired on purpose already has its
 * replacement), and for a respawn the backoff (pool_backoff()).
 */
void pool_death(struct pool *p, const struct pool_slot *s, int wstatus,
    int64_t now_us, struct pool_death *d);

/*
 * PURE. A reload to max_children workers, waiting at most
 * process_control_timeout s + POOL_RELOAD_GRACE_S from now_us for the new
 * generation: the next generation, READY=1 not sent, no backoff. Returns
 * the workers it replaces (its "reload" respawns): the current
 * generation's not yet signalled to retire.
 */
unsigned pool_reload(struct pool *p, const struct pool_slot *s, unsigned n,
    unsigned max_children, int process_control_timeout, int64_t now_us);

/*
 * PURE. 1 once per generation, when READY=1 may be sent: max_children
 * current workers serving (with or without their database) and no other
 * worker left. Marks it sent and ends the reload's wait. 0 otherwise.
 */
int pool_ready(struct pool *p, const struct pool_slot *s, unsigned n);

/*
 * PURE. 1 while the pool is in a crash loop: its latest workers died
 * young (quick_deaths > 0: pool_backoff()) and fewer than max_children
 * current workers serve. 0 once they all serve again, after a reload
 * (the count starts over) and while stopping. STATUS= says so.
 */
int pool_failing(const struct pool *p, const struct pool_slot *s,
    unsigned n);

#endif
