/*
 * pool.c: the pool's policy (PURE; the master calls it): spawn counts,
 * retire sets, backoff, readiness and what a death counts as, over a
 * snapshot of the slots. See pool.h.
 */
#include "server/pool.h"

#include <string.h>
#include <sys/wait.h>

void
pool_init(struct pool *p, unsigned max_children)
{
	memset(p, 0, sizeof(*p));
	p->max_children = max_children;
}

void
pool_slot_from(struct pool_slot *s, const struct sb_view *v)
{
	s->life = v->master.life;
	s->generation = v->master.generation;
	s->started_us = v->master.started_us;
	s->retire = v->retire;
	s->serving = v->phase != SB_STARTING && v->phase != SB_EXITING;
	s->ready = v->ready && s->serving;
	s->db_ok = v->db_ok;
}

/* Holds a process the master has not sent SIGTERM (KILLED is still
 * current: it is replaced when it dies, as a "terminate" respawn). */
static int
pool_running(const struct pool_slot *s)
{
	return s->life == SB_LIFE_RUNNING || s->life == SB_LIFE_KILLED;
}

/* A worker of the current generation that is not on its way out. */
static int
pool_current(const struct pool *p, const struct pool_slot *s)
{
	return pool_running(s) && s->generation == p->generation &&
	    !s->retire;
}

/* Slots of the n in s that hold a process. */
static unsigned
pool_live(const struct pool_slot *s, unsigned n)
{
	unsigned i, live = 0;

	for (i = 0; i < n; i++)
		if (s[i].life != SB_LIFE_FREE)
			live++;
	return live;
}

/* What pool_count_current() counts. */
enum pool_count {
	POOL_ANY,		/* every current worker */
	POOL_SERVING,		/* past start-up, accepting */
	POOL_READY,		/* serving and prepared once */
};

static unsigned
pool_count_current(const struct pool *p, const struct pool_slot *s,
    unsigned n, enum pool_count what)
{
	unsigned i, count = 0;

	for (i = 0; i < n; i++)
		if (pool_current(p, &s[i]) && (what == POOL_ANY ||
		    (what == POOL_SERVING ? s[i].serving : s[i].ready)))
			count++;
	return count;
}

/* 1 if a running worker that is no longer current has its database:
 * its replacements must have theirs before it goes. */
static int
pool_old_db_ok(const struct pool *p, const struct pool_slot *s, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (pool_running(&s[i]) && !pool_current(p, &s[i]) &&
		    s[i].db_ok)
			return 1;
	return 0;
}

unsigned
pool_to_spawn(const struct pool *p, const struct pool_slot *s, unsigned n,
    int64_t now_us)
{
	unsigned current = pool_count_current(p, s, n, POOL_ANY);

	if (p->stopping || now_us < p->next_spawn_us ||
	    current >= p->max_children)
		return 0;
	return p->max_children - current;
}

unsigned
pool_retire(const struct pool *p, const struct pool_slot *s, unsigned n,
    int64_t now_us, enum pool_retire *act)
{
	int enough = pool_count_current(p, s, n, POOL_SERVING) >=
	    p->max_children && (pool_count_current(p, s, n, POOL_READY) >=
	    p->max_children || !pool_old_db_ok(p, s, n));
	int late = p->reload_deadline_us != 0 &&
	    now_us >= p->reload_deadline_us;
	unsigned i, count = 0;

	for (i = 0; i < n; i++) {
		act[i] = POOL_KEEP;
		/* Only SB_LIFE_RUNNING: a killed worker is on its way out. */
		if (s[i].life != SB_LIFE_RUNNING || pool_current(p, &s[i]) ||
		    !(enough || late))
			continue;
		act[i] = s[i].retire && s[i].generation == p->generation ?
		    POOL_RECYCLE : POOL_RETIRE;
		count++;
	}
	return count;
}

int
pool_backoff(struct pool *p, int64_t lived_us, int wstatus, int64_t now_us)
{
	int failed = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0;
	int delay;

	if (lived_us / 1000 >= POOL_QUICK_DEATH_MS && !failed) {
		p->quick_deaths = 0;
		return 0;
	}
	delay = POOL_BACKOFF_MIN_MS << (p->quick_deaths <
	    POOL_BACKOFF_DOUBLINGS ? p->quick_deaths : POOL_BACKOFF_DOUBLINGS);
	if (delay > POOL_BACKOFF_MAX_MS)
		delay = POOL_BACKOFF_MAX_MS;
	p->quick_deaths++;
	p->next_spawn_us = now_us + (int64_t)delay * 1000;
	return delay;
}

void
pool_death(struct pool *p, const struct pool_slot *s, int wstatus,
    int64_t now_us, struct pool_death *d)
{
	memset(d, 0, sizeof(*d));
	d->reason = SB_REASON_EXIT;
	if (WIFSIGNALED(wstatus))
		d->reason = s->life == SB_LIFE_KILLED ? SB_REASON_TERMINATE :
		    SB_REASON_CRASH;
	d->lived_ms = (now_us - s->started_us) / 1000;
	/* Retired on purpose, or stopping: nothing to replace. */
	if (p->stopping || !pool_current(p, s))
		return;
	d->respawn = 1;
	d->delay_ms = pool_backoff(p, now_us - s->started_us, wstatus, now_us);
}

unsigned
pool_reload(struct pool *p, const struct pool_slot *s, unsigned n,
    unsigned max_children, int process_control_timeout, int64_t now_us)
{
	unsigned i, replaced = 0;

	/* Each worker is counted once: those already retiring were
	 * counted by the recycle or the reload that replaced them. */
	for (i = 0; i < n; i++)
		if (pool_running(&s[i]) && s[i].generation == p->generation)
			replaced++;
	p->generation++;
	p->max_children = max_children;
	p->ready_sent = 0;
	p->quick_deaths = 0;
	p->next_spawn_us = 0;
	p->reload_deadline_us = now_us +
	    ((int64_t)process_control_timeout + POOL_RELOAD_GRACE_S) * 1000000;
	return replaced;
}

int
pool_ready(struct pool *p, const struct pool_slot *s, unsigned n)
{
	unsigned current = pool_count_current(p, s, n, POOL_ANY);

	if (p->ready_sent || pool_live(s, n) > current ||
	    pool_count_current(p, s, n, POOL_SERVING) < p->max_children)
		return 0;
	p->ready_sent = 1;
	p->reload_deadline_us = 0;
	return 1;
}

int
pool_failing(const struct pool *p, const struct pool_slot *s, unsigned n)
{
	return !p->stopping && p->quick_deaths > 0 &&
	    pool_count_current(p, s, n, POOL_SERVING) < p->max_children;
}
