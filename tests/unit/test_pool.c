/*
 * test_pool.c: the pool's policy (pool.c) through step-by-step scenarios:
 * start-up and readiness, a recycle, a reload during a recycle, a reload
 * during a reload, a crash during a reload and its deadline, start-up,
 * reload and recycle while the database is down (READY=1 without it, and
 * never a connected worker retired for one that is not), backoff growth,
 * cap and reset, exit statuses, death reasons, a stop, a crash loop
 * (what STATUS= reports). Each step asserts exact outcomes. A small
 * simulator plays the master's part (claiming slots, signalling,
 * reaping) with no process at all.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "server/pool.h"
#include "tap.h"

#define T_SLOTS		16
#define T_MS		1000LL			/* us per ms */
#define T_S		1000000LL		/* us per s */
#define T_PCT		5	/* process_control_timeout, s */
#define T_LONG		(3600 * T_S)		/* a worker's long life */

#define EXITED(code)	W_EXITCODE(code, 0)
#define KILLED_BY(sig)	W_EXITCODE(0, sig)

/* The master's side, minus the processes. */
struct sim {
	struct pool		p;
	struct pool_slot	s[T_SLOTS];
	enum pool_retire	act[T_SLOTS];
	int64_t			now;
	uint64_t		respawns[SB_REASON_MAX];
	struct pool_death	last;	/* of the latest sim_die() */
};

static void
sim_init(struct sim *m, unsigned max_children)
{
	memset(m, 0, sizeof(*m));
	pool_init(&m->p, max_children);
}

/* What pool_to_spawn() says, then forks that many: returns the count.
 * first (if not NULL) gets the first slot used. */
static unsigned
sim_spawn(struct sim *m, int *first)
{
	unsigned n = pool_to_spawn(&m->p, m->s, T_SLOTS, m->now), done = 0;
	int i;

	for (i = 0; i < T_SLOTS && done < n; i++) {
		if (m->s[i].life != SB_LIFE_FREE)
			continue;
		memset(&m->s[i], 0, sizeof(m->s[i]));
		m->s[i].life = SB_LIFE_RUNNING;
		m->s[i].generation = m->p.generation;
		m->s[i].started_us = m->now;
		if (done++ == 0 && first != NULL)
			*first = i;
	}
	return done;
}

/* pool_retire(), then SIGTERM as the master does. Returns the count. */
static unsigned
sim_retire(struct sim *m)
{
	unsigned n = pool_retire(&m->p, m->s, T_SLOTS, m->now, m->act), i;

	for (i = 0; i < T_SLOTS; i++) {
		if (m->act[i] == POOL_KEEP)
			continue;
		if (m->act[i] == POOL_RECYCLE)
			m->respawns[SB_REASON_RECYCLE]++;
		m->s[i].life = SB_LIFE_RETIRING;
	}
	return n;
}

/* Reaps slot i dead with wstatus. Returns whether it was a respawn. */
static int
sim_die(struct sim *m, int i, int wstatus)
{
	pool_death(&m->p, &m->s[i], wstatus, m->now, &m->last);
	if (m->last.respawn)
		m->respawns[m->last.reason]++;
	memset(&m->s[i], 0, sizeof(m->s[i]));
	return m->last.respawn;
}

static void
sim_reload(struct sim *m, unsigned max_children)
{
	m->respawns[SB_REASON_RELOAD] += pool_reload(&m->p, m->s, T_SLOTS,
	    max_children, T_PCT, m->now);
}

/* Marks slots first..first+n-1 serving, connected and prepared. */
static void
sim_ready(struct sim *m, int first, int n)
{
	int i;

	for (i = first; i < first + n; i++)
		m->s[i].serving = m->s[i].ready = m->s[i].db_ok = 1;
}

/* Marks slots first..first+n-1 serving without a database: their first
 * connection attempt failed and they accept all the same. */
static void
sim_accepting(struct sim *m, int first, int n)
{
	int i;

	for (i = first; i < first + n; i++)
		m->s[i].serving = 1;
}

/* The database goes away under slots first..first+n-1 (ready stays:
 * they were prepared once). */
static void
sim_db_lost(struct sim *m, int first, int n)
{
	int i;

	for (i = first; i < first + n; i++)
		m->s[i].db_ok = 0;
}

/* A pool of max_children started and ready at time 0. */
static void
sim_serving(struct sim *m, unsigned max_children)
{
	sim_init(m, max_children);
	sim_spawn(m, NULL);
	sim_ready(m, 0, (int)max_children);
}

/*
 * A pool of max_children serving since 0, READY=1 sent, reloaded at at_us
 * to as many workers, and the new generation forked. Returns the first
 * new slot.
 */
static int
sim_reloaded(struct sim *m, unsigned max_children, int64_t at_us)
{
	int first = -1;

	sim_serving(m, max_children);
	(void)pool_ready(&m->p, m->s, T_SLOTS);
	m->now = at_us;
	sim_reload(m, max_children);
	sim_spawn(m, &first);
	return first;
}

/* 1 if act[] retires exactly the slots in want (a -1 terminated list)
 * with the action given beside each. */
static int
acts_are(const struct sim *m, const int *want)
{
	enum pool_retire exp[T_SLOTS];
	int i;

	memset(exp, 0, sizeof(exp));
	for (i = 0; want[i] != -1; i += 2)
		exp[want[i]] = (enum pool_retire)want[i + 1];
	for (i = 0; i < T_SLOTS; i++)
		if (m->act[i] != exp[i])
			return 0;
	return 1;
}

/*
 * The old workers listed in want (slot, action pairs, -1 terminated)
 * retire now and nobody else does; READY=1 waits while they live; their
 * exits are no respawns; READY=1 comes once they are gone.
 */
static void
sim_old_leave(struct sim *m, const int *want, const char *what)
{
	int i, n = 0, respawns = 0;

	for (i = 0; want[i] != -1; i += 2)
		n++;
	is_int(sim_retire(m), n, "%s: %d old workers retire", what, n);
	ok(acts_are(m, want), "%s: exactly those, each as expected", what);
	is_int(pool_ready(&m->p, m->s, T_SLOTS), 0, "%s: not ready while an "
	    "old worker lives", what);
	for (i = 0; want[i] != -1; i += 2)
		respawns += sim_die(m, want[i], EXITED(0));
	is_int(respawns, 0, "%s: their exits are no respawns", what);
	is_int(pool_ready(&m->p, m->s, T_SLOTS), 1, "%s: ready when the last "
	    "old one is gone", what);
}

static void
test_startup(void)
{
	struct sim m;
	int first = -1;

	diag("start-up: spawn, readiness once, nothing to retire");
	sim_init(&m, 3);
	is_int(sim_spawn(&m, &first), 3, "start: 3 workers to start");
	is_int(first, 0, "start: from the first free slot");
	is_int(pool_to_spawn(&m.p, m.s, T_SLOTS, m.now), 0, "start: none "
	    "missing once forked");
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 0, "start: not ready, none "
	    "prepared");
	is_int(sim_retire(&m), 0, "start: nothing to retire");
	sim_ready(&m, 0, 2);
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 0, "start: not ready with 2 "
	    "of 3 prepared");
	sim_ready(&m, 2, 1);
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 1, "start: ready with 3 of 3");
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 0, "start: READY=1 once per "
	    "generation");
	is_int(m.p.reload_deadline_us, 0, "start: no reload deadline");
}

static void
test_recycle(void)
{
	static const int want[] = { 0, POOL_RECYCLE, -1 };
	struct sim m;
	int c = -1;

	diag("recycle: a worker asks to go; it goes when its replacement "
	    "is ready");
	sim_serving(&m, 2);
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 1, "recycle: pool ready");
	m.now = 60 * T_S;
	m.s[0].retire = 1;
	is_int(sim_spawn(&m, &c), 1, "recycle: one replacement");
	is_int(c, 2, "recycle: in a free slot");
	is_int(sim_retire(&m), 0, "recycle: the old one serves on while its "
	    "replacement starts");
	sim_ready(&m, c, 1);
	is_int(sim_retire(&m), 1, "recycle: retired once the replacement is "
	    "ready");
	ok(acts_are(&m, want), "recycle: slot 0, as a recycle");
	is_int(sim_retire(&m), 0, "recycle: SIGTERM is sent once");
	is_int(pool_to_spawn(&m.p, m.s, T_SLOTS, m.now), 0, "recycle: no "
	    "spawn for the leaving worker");
	is_int(sim_die(&m, 0, EXITED(0)), 0, "recycle: its exit is no "
	    "respawn");
	is_int(m.last.delay_ms, 0, "recycle: no backoff");
	is_int(m.respawns[SB_REASON_RECYCLE], 1, "recycle: counted once");
	is_int(m.respawns[SB_REASON_EXIT], 0, "recycle: not as an exit");
}

static void
test_reload_during_recycle(void)
{
	static const int want[] = { 0, POOL_RETIRE, 1, POOL_RETIRE,
	    2, POOL_RETIRE, -1 };
	struct sim m;
	int d = -1;

	diag("reload during a recycle: the replacement is still starting");
	sim_serving(&m, 2);
	(void)pool_ready(&m.p, m.s, T_SLOTS);
	m.now = 10 * T_S;
	m.s[0].retire = 1;			/* A asks to go */
	is_int(sim_spawn(&m, NULL), 1, "reload/recycle: C replaces A");
	sim_reload(&m, 2);			/* SIGHUP */
	is_int(m.p.generation, 1, "reload/recycle: generation 1");
	is_int(m.respawns[SB_REASON_RELOAD], 3, "reload/recycle: A, B and C "
	    "are replaced by the reload");
	is_int(m.p.reload_deadline_us, (10 + T_PCT + POOL_RELOAD_GRACE_S) *
	    T_S, "reload/recycle: deadline process_control_timeout + grace");
	is_int(sim_spawn(&m, &d), 2, "reload/recycle: two new workers");
	is_int(d, 3, "reload/recycle: D and E in slots 3 and 4");
	sim_ready(&m, 2, 1);			/* C, of the old generation */
	sim_ready(&m, d, 1);
	is_int(sim_retire(&m), 0, "reload/recycle: nobody retires with 1 of "
	    "2 new workers ready");
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 0, "reload/recycle: not ready");
	sim_ready(&m, d + 1, 1);
	/* A goes as a reload, not a recycle: the reload replaced it. */
	sim_old_leave(&m, want, "reload/recycle: all 2 new ready");
	is_int(m.p.reload_deadline_us, 0, "reload/recycle: the reload's wait "
	    "is over");
	is_int(m.respawns[SB_REASON_RECYCLE], 0, "reload/recycle: A counted "
	    "once: no recycle besides its reload");

	diag("reload during a recycle: the recycled worker is already "
	    "leaving");
	sim_serving(&m, 2);
	m.s[0].retire = 1;
	sim_spawn(&m, NULL);
	sim_ready(&m, 2, 1);
	is_int(sim_retire(&m), 1, "leaving/reload: A retired as a recycle");
	sim_reload(&m, 2);
	is_int(m.respawns[SB_REASON_RELOAD], 2, "leaving/reload: the reload "
	    "replaces B and C, not A");
	is_int(m.respawns[SB_REASON_RECYCLE], 1, "leaving/reload: A counted "
	    "once, as its recycle");
	is_int(sim_die(&m, 0, EXITED(0)), 0, "leaving/reload: A's exit is no "
	    "respawn");
}

static void
test_reload_during_reload(void)
{
	static const int want[] = { 0, POOL_RETIRE, 1, POOL_RETIRE,
	    2, POOL_RETIRE, 3, POOL_RETIRE, -1 };
	struct sim m;

	diag("reload during a reload: each worker is replaced once");
	sim_serving(&m, 2);
	sim_reload(&m, 2);
	is_int(sim_spawn(&m, NULL), 2, "reload twice: generation 1 starts");
	sim_reload(&m, 2);
	is_int(m.respawns[SB_REASON_RELOAD], 4, "reload twice: 2 + 2, the "
	    "first generation not counted again");
	is_int(sim_spawn(&m, NULL), 2, "reload twice: generation 2 starts");
	sim_ready(&m, 2, 2);	/* generation 1 ready: too late */
	is_int(sim_retire(&m), 0, "reload twice: a superseded generation's "
	    "readiness retires nobody");
	sim_ready(&m, 4, 2);
	is_int(sim_retire(&m), 4, "reload twice: generation 2 ready: both "
	    "older ones retire");
	ok(acts_are(&m, want), "reload twice: slots 0-3, as reloads");
}

static void
test_crash_during_reload(void)
{
	static const int want[] = { 0, POOL_RETIRE, 1, POOL_RETIRE, -1 };
	struct sim m;
	int c = -1, e = -1, f = -1;

	diag("crash during a reload: backoff, and the old generation serves "
	    "until ready or the deadline");
	c = sim_reloaded(&m, 2, 10 * T_S);	/* C (2) and D (3) */
	m.now += 300 * T_MS;
	is_int(sim_die(&m, c, EXITED(1)), 1, "crash/reload: C's failed start "
	    "is a respawn");
	is_int(m.last.reason, SB_REASON_EXIT, "crash/reload: reason exit");
	is_int(m.last.lived_ms, 300, "crash/reload: it lived 300 ms");
	is_int(m.last.delay_ms, POOL_BACKOFF_MIN_MS, "crash/reload: backoff "
	    "100 ms");
	is_int(m.p.next_spawn_us, m.now + 100 * T_MS, "crash/reload: next "
	    "fork in 100 ms");
	m.now += 50 * T_MS;
	is_int(sim_spawn(&m, NULL), 0, "crash/reload: no fork during the "
	    "backoff");
	m.now += 50 * T_MS;
	is_int(sim_spawn(&m, &e), 1, "crash/reload: its replacement E at the "
	    "backoff's end");
	is_int(sim_retire(&m), 0, "crash/reload: A and B not retired while "
	    "the new generation is not ready");
	m.now += 200 * T_MS;
	is_int(sim_die(&m, e, KILLED_BY(SIGSEGV)), 1, "crash/reload: E "
	    "crashes young: a respawn");
	is_int(m.last.reason, SB_REASON_CRASH, "crash/reload: reason crash");
	is_int(m.last.delay_ms, 2 * POOL_BACKOFF_MIN_MS, "crash/reload: "
	    "backoff doubled, 200 ms");
	sim_ready(&m, 3, 1);			/* D */
	is_int(sim_retire(&m), 0, "crash/reload: still not enough ready");
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 0, "crash/reload: not ready");
	m.now = m.p.reload_deadline_us - 1;
	is_int(sim_spawn(&m, &f), 1, "crash/reload: F after the backoff");
	is_int(sim_retire(&m), 0, "crash/reload: 1 us before the deadline, "
	    "nobody retires");
	m.now = m.p.reload_deadline_us;
	is_int(sim_retire(&m), 2, "crash/reload: at the deadline A and B "
	    "retire anyway");
	ok(acts_are(&m, want), "crash/reload: exactly A and B");
	sim_die(&m, 0, EXITED(0));
	sim_die(&m, 1, EXITED(0));
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 0, "crash/reload: not ready "
	    "until F is");
	sim_ready(&m, f, 1);
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 1, "crash/reload: ready");
	is_int(m.respawns[SB_REASON_EXIT] + m.respawns[SB_REASON_CRASH], 2,
	    "crash/reload: two respawns, one exit and one crash");
}

static void
test_db_down(void)
{
	static const int both[] = { 0, POOL_RETIRE, 1, POOL_RETIRE, -1 };
	static const int first[] = { 0, POOL_RECYCLE, -1 };
	struct sim m;
	int c = -1;

	diag("database down at start: READY=1 once every worker accepts");
	sim_init(&m, 3);
	sim_spawn(&m, NULL);
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 0, "db down/start: not ready "
	    "while the workers make their first attempt");
	sim_accepting(&m, 0, 2);
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 0, "db down/start: not ready "
	    "with 2 of 3 accepting");
	sim_accepting(&m, 2, 1);
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 1, "db down/start: ready with "
	    "3 of 3 accepting, none connected");
	sim_ready(&m, 0, 3);
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 0, "db down/start: the "
	    "database's return sends nothing more");

	diag("reload during an outage: the old workers have no database "
	    "either");
	c = sim_reloaded(&m, 2, 30 * T_S);
	sim_db_lost(&m, 0, 2);			/* the old two */
	is_int(c, 2, "outage/reload: two new workers, from slot 2");
	is_int(sim_retire(&m), 0, "outage/reload: none retires while the "
	    "new ones start");
	sim_accepting(&m, c, 2);
	/* At once, not at the deadline; READY=1 without the database. */
	sim_old_leave(&m, both, "outage/reload: the new ones accept");
	ok(m.now < 30 * T_S + (T_PCT + POOL_RELOAD_GRACE_S) * T_S,
	    "outage/reload: before the reload deadline");

	diag("reload while the old workers have the database and the new "
	    "ones cannot connect (a wrong db.conninfo, max_connections)");
	c = sim_reloaded(&m, 2, 40 * T_S);
	sim_accepting(&m, c, 2);
	is_int(sim_retire(&m), 0, "no db/reload: connected workers are not "
	    "retired for unconnected ones");
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 0, "no db/reload: not ready");
	m.now = m.p.reload_deadline_us;
	is_int(sim_retire(&m), 2, "no db/reload: at the reload deadline they "
	    "go anyway (bounded)");
	sim_die(&m, 0, EXITED(0));
	sim_die(&m, 1, EXITED(0));
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 1, "no db/reload: then "
	    "READY=1");

	diag("recycle during an outage, and with the database up");
	sim_serving(&m, 2);
	(void)pool_ready(&m.p, m.s, T_SLOTS);
	sim_db_lost(&m, 0, 2);
	m.s[0].retire = 1;
	sim_spawn(&m, &c);
	is_int(sim_retire(&m), 0, "outage/recycle: not before the "
	    "replacement accepts");
	sim_accepting(&m, c, 1);
	is_int(sim_retire(&m), 1, "outage/recycle: retired once it accepts");
	ok(acts_are(&m, first), "outage/recycle: slot 0, as a recycle");
	sim_serving(&m, 2);
	m.s[0].retire = 1;
	sim_spawn(&m, &c);
	sim_accepting(&m, c, 1);
	is_int(sim_retire(&m), 0, "db up/recycle: a replacement without its "
	    "connection does not retire a connected worker");
	sim_ready(&m, c, 1);
	is_int(sim_retire(&m), 1, "db up/recycle: it does once connected");
}

static void
test_backoff(void)
{
	static const int delays[] = { 100, 200, 400, 800, 1600, 3200, 6400,
	    10000, 10000, 10000 };
	struct pool p;
	struct sim m;
	size_t i;
	int bad = 0, d;

	diag("backoff: growth, cap, reset by a long life and by a reload");
	pool_init(&p, 1);
	for (i = 0; i < sizeof(delays) / sizeof(delays[0]); i++) {
		d = pool_backoff(&p, 10 * T_MS, EXITED(0), 1000 * T_S);
		if (d != delays[i] || p.quick_deaths != i + 1 ||
		    p.next_spawn_us != 1000 * T_S + (int64_t)d * T_MS) {
			printf("# death %zu: delay %d, count %u\n", i + 1, d,
			    p.quick_deaths);
			bad++;
		}
	}
	is_int(bad, 0, "backoff: 100, 200, 400 ... 6400, then capped at "
	    "POOL_BACKOFF_MAX_MS");
	is_int(pool_backoff(&p, POOL_QUICK_DEATH_MS * T_MS - 1, EXITED(0),
	    0), POOL_BACKOFF_MAX_MS, "backoff: 1 us short of "
	    "POOL_QUICK_DEATH_MS is quick");
	is_int(pool_backoff(&p, POOL_QUICK_DEATH_MS * T_MS, EXITED(0), 0), 0,
	    "backoff: living POOL_QUICK_DEATH_MS is not quick");
	is_int(p.quick_deaths, 0, "backoff: and resets the count");
	is_int(pool_backoff(&p, 0, EXITED(0), 0), POOL_BACKOFF_MIN_MS,
	    "backoff: the next quick death starts again at 100 ms");

	diag("exit status: non-zero is a quick death whatever the lifetime");
	pool_init(&p, 1);
	is_int(pool_backoff(&p, T_LONG, EXITED(1), 0), POOL_BACKOFF_MIN_MS,
	    "status: exit 1 after an hour backs off");
	is_int(pool_backoff(&p, T_LONG, EXITED(78), 0), 2 * POOL_BACKOFF_MIN_MS,
	    "status: and counts as a quick death");
	is_int(pool_backoff(&p, T_LONG, KILLED_BY(SIGSEGV), 0), 0,
	    "status: a signal after an hour does not back off");
	is_int(p.quick_deaths, 0, "status: and resets the count");
	is_int(pool_backoff(&p, T_LONG, EXITED(0), 0), 0, "status: exit 0 "
	    "after an hour does not back off");
	is_int(pool_backoff(&p, 10 * T_MS, KILLED_BY(SIGSEGV), 0),
	    POOL_BACKOFF_MIN_MS, "status: a signal young backs off");

	diag("backoff reset by a reload");
	sim_init(&m, 1);
	sim_spawn(&m, NULL);
	m.now = 100 * T_MS;
	sim_die(&m, 0, EXITED(1));
	m.now = m.p.next_spawn_us;
	sim_spawn(&m, NULL);
	m.now += 100 * T_MS;
	sim_die(&m, 0, EXITED(1));
	is_int(m.last.delay_ms, 200, "reset/reload: second quick death, 200 "
	    "ms");
	sim_reload(&m, 1);
	is_int(m.p.quick_deaths, 0, "reset/reload: the count starts over");
	is_int(sim_spawn(&m, NULL), 1, "reset/reload: the new generation "
	    "forks at once");
	m.now += 100 * T_MS;
	sim_die(&m, 0, EXITED(1));
	is_int(m.last.delay_ms, POOL_BACKOFF_MIN_MS, "reset/reload: its "
	    "first quick death waits 100 ms");
}

static void
test_death_reasons(void)
{
	struct sim m;

	diag("deaths: reasons, and which count");
	sim_serving(&m, 4);
	m.now = T_LONG;
	m.s[0].life = SB_LIFE_KILLED;	/* request_terminate_timeout */
	is_int(pool_to_spawn(&m.p, m.s, T_SLOTS, m.now), 0, "deaths: a "
	    "killed worker is replaced when it is gone");
	is_int(sim_die(&m, 0, KILLED_BY(SIGKILL)), 1, "deaths: killed by the "
	    "master: a respawn");
	is_int(m.last.reason, SB_REASON_TERMINATE, "deaths: reason terminate");
	is_int(sim_die(&m, 1, KILLED_BY(SIGKILL)), 1, "deaths: SIGKILL from "
	    "elsewhere: a respawn");
	is_int(m.last.reason, SB_REASON_CRASH, "deaths: reason crash");
	is_int(sim_die(&m, 2, EXITED(0)), 1, "deaths: exit 0: a respawn");
	is_int(m.last.reason, SB_REASON_EXIT, "deaths: reason exit");
	is_int(m.last.delay_ms, 0, "deaths: a long life, no backoff");
	is_int(pool_to_spawn(&m.p, m.s, T_SLOTS, m.now), 3, "deaths: three "
	    "to start");
	m.s[3].life = SB_LIFE_RETIRING;
	is_int(sim_die(&m, 3, KILLED_BY(SIGTERM)), 0, "deaths: a retired "
	    "worker's death is no respawn");
	is_int(m.last.reason, SB_REASON_CRASH, "deaths: (reason crash, not "
	    "counted)");

	diag("retire: a worker already signalled is left alone");
	sim_serving(&m, 1);
	sim_reload(&m, 1);
	m.s[0].life = SB_LIFE_KILLED;	/* old, and past its timeout */
	sim_spawn(&m, NULL);
	sim_ready(&m, 1, 1);
	is_int(sim_retire(&m), 0, "retire: no SIGTERM after the SIGKILL");
	is_int(sim_die(&m, 0, KILLED_BY(SIGKILL)), 0, "retire: an old "
	    "generation's kill is no respawn");
	is_int(m.last.reason, SB_REASON_TERMINATE, "retire: (reason "
	    "terminate, not counted)");
}

static void
test_readiness(void)
{
	struct sb_view v;
	struct pool_slot s;
	struct sim m;

	diag("readiness: every old worker gone, max_children current ready");
	sim_serving(&m, 2);
	sim_reload(&m, 3);			/* and grows to 3 */
	is_int(sim_spawn(&m, NULL), 3, "ready: the grown generation: 3");
	sim_ready(&m, 2, 3);
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 0, "ready: not while an old "
	    "generation's worker lives");
	is_int(sim_retire(&m), 2, "ready: the old ones retire");
	sim_die(&m, 0, EXITED(0));
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 0, "ready: one old one left");
	sim_die(&m, 1, EXITED(0));
	m.s[4].retire = 1;	/* asks to go before READY=1 */
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 0, "ready: a worker asking to "
	    "go is not current");
	m.s[4].retire = 0;
	is_int(pool_ready(&m.p, m.s, T_SLOTS), 1, "ready: 3 current, nothing "
	    "else");

	diag("readiness: the view a slot is read into");
	memset(&v, 0, sizeof(v));
	v.master.life = SB_LIFE_RUNNING;
	v.master.generation = 7;
	v.master.started_us = 42;
	v.ready = 1;
	v.phase = SB_STARTING;
	pool_slot_from(&s, &v);
	ok(s.ready == 0 && s.serving == 0, "view: prepared but still "
	    "starting is neither serving nor ready");
	v.phase = SB_IDLE;
	v.retire = 1;
	v.db_ok = 1;
	pool_slot_from(&s, &v);
	ok(s.ready == 1 && s.serving == 1 && s.db_ok == 1 && s.retire == 1 &&
	    s.generation == 7 && s.started_us == 42 &&
	    s.life == SB_LIFE_RUNNING, "view: serving: ready, connected, with "
	    "its retire flag, generation, start");
	v.ready = 0;
	v.db_ok = 0;
	v.phase = SB_DB;
	pool_slot_from(&s, &v);
	ok(s.serving == 1 && s.ready == 0 && s.db_ok == 0, "view: serving "
	    "(a request) without ever having connected");
	v.phase = SB_EXITING;
	pool_slot_from(&s, &v);
	is_int(s.serving, 0, "view: leaving is not serving");
}

static void
test_stop(void)
{
	struct sim m;

	diag("graceful stop: no spawning, no respawn, no backoff");
	sim_serving(&m, 3);
	m.now = 200 * T_MS;
	m.p.stopping = 1;
	is_int(sim_die(&m, 0, EXITED(0)), 0, "stop: a worker leaving is no "
	    "respawn");
	is_int(sim_die(&m, 1, EXITED(1)), 0, "stop: nor a failing one");
	is_int(m.p.quick_deaths, 0, "stop: no quick death counted");
	is_int(m.p.next_spawn_us, 0, "stop: no backoff");
	is_int(pool_to_spawn(&m.p, m.s, T_SLOTS, m.now), 0, "stop: nothing "
	    "to start with 2 of 3 gone");
	is_int(m.respawns[SB_REASON_EXIT], 0, "stop: nothing counted");
}

static void
test_crash_loop(void)
{
	struct sim m;
	int i;

	diag("crash loop: workers dying young until they all serve again");
	sim_init(&m, 3);
	sim_spawn(&m, NULL);
	is_int(pool_failing(&m.p, m.s, T_SLOTS), 0, "failing: not at start "
	    "(nothing died yet)");
	m.now = 40 * T_MS;
	for (i = 0; i < 3; i++)
		sim_die(&m, i, KILLED_BY(SIGSYS));
	is_int(pool_failing(&m.p, m.s, T_SLOTS), 1, "failing: three killed "
	    "young, none serving");
	m.now = m.p.next_spawn_us;
	sim_spawn(&m, NULL);
	sim_accepting(&m, 0, 2);
	is_int(pool_failing(&m.p, m.s, T_SLOTS), 1, "failing: still, with 2 "
	    "of 3 serving");
	sim_accepting(&m, 2, 1);
	is_int(pool_failing(&m.p, m.s, T_SLOTS), 0, "failing: no longer once "
	    "every worker serves (without its database counts)");
	m.now += 200 * T_MS;
	sim_die(&m, 1, EXITED(1));
	is_int(pool_failing(&m.p, m.s, T_SLOTS), 1, "failing: again after "
	    "the next quick death");
	sim_reload(&m, 3);
	is_int(pool_failing(&m.p, m.s, T_SLOTS), 0, "failing: a reload starts "
	    "the count over");
	sim_serving(&m, 2);
	m.now = T_LONG;
	sim_die(&m, 0, KILLED_BY(SIGSEGV));
	is_int(pool_failing(&m.p, m.s, T_SLOTS), 0, "failing: not for a crash "
	    "after a long life");
	m.now += 10 * T_MS;
	sim_spawn(&m, NULL);
	sim_die(&m, 0, EXITED(1));
	m.p.stopping = 1;
	is_int(pool_failing(&m.p, m.s, T_SLOTS), 0, "failing: not while "
	    "stopping");
}

int
main(void)
{
	test_startup();
	test_recycle();
	test_reload_during_recycle();
	test_reload_during_reload();
	test_crash_during_reload();
	test_db_down();
	test_backoff();
	test_death_reasons();
	test_readiness();
	test_stop();
	test_crash_loop();
	return done_testing();
}
