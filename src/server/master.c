/*
 * master.c: the master process. Signal handlers only set flags; the loop
 * acts on them between ppoll() calls, the nginx way. Workers are grouped
 * in generations: a reload or a recycle starts replacements first and
 * retires the old workers only once the replacements are ready, so the
 * pool never shrinks and no queued connection is dropped. What to start,
 * whom to retire, how long to back off and when the pool is ready are
 * pool.c's decisions over a snapshot of the scoreboard; this file forks,
 * signals and reaps as they say, and health.c tells systemd and the log
 * how the pool is. Which configuration a generation runs is a setup
 * (setup.h), loaded whole before a reload touches anything.
 *
 * Signals to the master are PHP-FPM's: SIGTERM and SIGQUIT stop
 * gracefully, SIGINT fast, SIGHUP and SIGUSR2 reload, SIGUSR1 reopens
 * the logs. The master sends its workers SIGUSR2 too, where it means
 * something else: look at the listen socket again (master_poke_idle).
 */
#include "server/master.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/admin.h"
#include "server/health.h"
#include "server/nofile.h"
#include "server/notify.h"
#include "server/pool.h"
#include "server/scoreboard.h"
#include "server/setup.h"
#include "server/status.h"
#include "server/statuspage.h"
#include "server/worker.h"
#include "util/clock.h"
#include "util/log.h"

#define MASTER_SLOTS	(2 * CONFIG_MAX_CHILDREN)	/* room for reloads */
#define MASTER_TICK_MS	200	/* loop period while anything is pending */
#define MASTER_IDLE_MS	1000	/* loop period otherwise */

enum master_stop {
	MASTER_RUNNING = 0,
	MASTER_GRACEFUL,
	MASTER_FAST,
};

struct master {
	struct setup		 setup;		/* the current generation's:
						   a reload replaces it */
	const struct app *const *apps;		/* what main.c offers */
	const char		*config_path;
	int			 children;	/* -n override, 0 = none */
	struct listen_sock	*ls;
	struct admin		*admin;		/* NULL without status_listen */
	int			 kick_fd;	/* eventfd the workers write to */
	int			 wake_fd;	/* the workers' own (keep.h) */
	struct scoreboard	*sb;
	struct pool		 pool;		/* generation, backoff, ready */
	struct pool_slot	 snap[MASTER_SLOTS];	/* master_snapshot() */
	enum pool_retire	 act[MASTER_SLOTS];	/* pool_retire()'s */
	enum master_stop	 stop;
	int64_t			 stop_deadline_us;
	int			 killed;	/* SIGKILL sent at deadline */
	struct health		 health;	/* what systemd and the log
						   were told */
	/* Failures the loop meets at every pass while they last: one line
	 * per LOG_FLOOD_INTERVAL_US each. */
	struct log_flood	 flood_poll, flood_fork, flood_kick;
	int64_t			 next_maintain_us; /* master_maintain()'s */
	int			 kicked;	/* a worker wrote the eventfd */
};

/* What the signals that came ask for, until the loop acts on them. */
static volatile sig_atomic_t sig_chld, sig_term, sig_int, sig_reload,
    sig_usr1;

static void
master_on_signal(int sig)
{
	switch (sig) {
	case SIGCHLD: sig_chld = 1; break;
	case SIGTERM: case SIGQUIT: sig_term = 1; break;
	case SIGINT: sig_int = 1; break;
	case SIGHUP: case SIGUSR2: sig_reload = 1; break;
	case SIGUSR1: sig_usr1 = 1; break;
	}
}

static const int master_sigs[] = { SIGCHLD, SIGTERM, SIGQUIT, SIGINT,
    SIGHUP, SIGUSR2, SIGUSR1 };

/* Blocks the signals we handle; ppoll() unblocks them atomically. */
static void
master_signals(sigset_t *waitmask)
{
	struct sigaction sa;
	sigset_t block;
	size_t i;

	sigemptyset(&block);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = master_on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(master_sigs) / sizeof(master_sigs[0]); i++) {
		sigaddset(&block, master_sigs[i]);
		sigaction(master_sigs[i], &sa, NULL);
	}
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigprocmask(SIG_BLOCK, &block, waitmask);
	for (i = 0; i < sizeof(master_sigs) / sizeof(master_sigs[0]); i++)
		sigdelset(waitmask, master_sigs[i]);
}

/* The policy's view of every slot, read now (pool.h). */
static void
master_snapshot(struct master *m)
{
	struct sb_view v;
	unsigned i;

	memset(m->snap, 0, sizeof(m->snap[0]) * m->sb->nslots);
	SCOREBOARD_FOREACH_LIVE(m->sb, i) {
		(void)scoreboard_read(&m->sb->slots[i], &v);
		pool_slot_from(&m->snap[i], &v);
	}
}

/* Slots holding a process. */
static unsigned
master_live(const struct master *m)
{
	struct sb_census c;

	scoreboard_census(m->sb, &c);
	return c.live;
}

static int
master_spawn(struct master *m)
{
	struct worker_args args;
	struct sb_slot *slot;
	pid_t pid;
	int idx;

	if ((idx = scoreboard_free_slot(m->sb)) == -1) {
		log_flood(&m->flood_fork, CONFIG_LOG_ERROR, "%s: scoreboard "
		    "full", __func__);
		return -1;
	}
	slot = &m->sb->slots[idx];
	/* Before fork: the worker's part is the master's until then. */
	scoreboard_claim(slot, m->pool.generation, clock_now_us(),
	    (int64_t)time(NULL));
	args.cfg = m->setup.cfg;
	args.app = m->setup.app;
	args.shared = m->setup.shared;
	args.ids = m->setup.ids;
	args.listen_fd = m->ls->fd;
	args.sb = m->sb;
	args.slot = idx;
	args.master = getpid();
	args.kick_fd = m->kick_fd;
	args.wake_fd = m->wake_fd;
	switch ((pid = fork())) {
	case -1:
		/* Retried at the next pass (RLIMIT_NPROC, memory). */
		log_flood(&m->flood_fork, CONFIG_LOG_ERROR, "%s: fork() failed: "
		    "%s", __func__, strerror(errno));
		scoreboard_release(m->sb, slot);
		return -1;
	case 0:
		if (m->admin != NULL)
			admin_forget(m->admin);	/* the master's, not ours */
		worker_main(&args);
	}
	scoreboard_set_pid(slot, pid);
	return 0;
}

/*
 * How a worker ended, as the log and STATUS= say it: "killed by signal
 * 31 (Bad system call: ...)" or "exited with status 1". SIGSYS is a
 * seccomp filter's doing (worker.seccomp's or the unit's
 * SystemCallFilter=): said, since nothing else in the log would.
 */
static void
master_cause(int status, char *buf, size_t len)
{
	int sig;

	if (!WIFSIGNALED(status)) {
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
		return;
	}
	sig = WTERMSIG(status);
	snprintf(buf, len, "killed by signal %d (%s%s)", sig, strsignal(sig),
	    sig == SIGSYS ? ": a seccomp filter refused a system call" : "");
}

static void
master_note_death(struct master *m, struct sb_slot *slot, int status)
{
	char cause[HEALTH_CAUSE_LEN];
	struct pool_death d;
	struct pool_slot ps;
	struct sb_view v;

	(void)scoreboard_read(slot, &v);	/* it may have died mid-write */
	pool_slot_from(&ps, &v);
	pool_death(&m->pool, &ps, status, clock_now_us(), &d);
	master_cause(status, cause, sizeof(cause));
	if (WIFSIGNALED(status)) {
		if (v.master.life == SB_LIFE_RUNNING)	/* not our signal */
			log_warn("worker %d %s after %llu requests",
			    (int)v.master.pid, cause,
			    (unsigned long long)v.req.requests);
	} else if (WEXITSTATUS(status) != 0)
		log_warn("worker %d %s", (int)v.master.pid, cause);
	else
		log_info("worker %d exited after %llu requests",
		    (int)v.master.pid, (unsigned long long)v.req.requests);
	if (!d.respawn)
		return;
	scoreboard_add(&m->sb->totals.respawns[d.reason], 1);
	/* Dying young (bad keys, crash at start): no fork storm. */
	if (d.delay_ms > 0) {
		log_warn("worker died %lld ms after start; next start in %d ms",
		    (long long)d.lived_ms, d.delay_ms);
		health_died_young(&m->health, cause, d.lived_ms);
	}
}

/*
 * A worker that exits may have taken a connection's wake-up with it:
 * make the idle ones look at the listen socket again. SIGUSR2 means that
 * to a worker (worker.c), not a reload: a worker reloads nothing.
 */
static void
master_poke_idle(struct master *m)
{
	struct sb_slot *s;
	struct sb_view v;
	unsigned i;

	SCOREBOARD_FOREACH_LIVE(m->sb, i) {
		s = &m->sb->slots[i];
		if (s->master.life == SB_LIFE_RETIRING)
			continue;
		(void)scoreboard_read(s, &v);
		if (v.phase == SB_IDLE)
			kill(s->master.pid, SIGUSR2);
	}
}

static void
master_reap(struct master *m)
{
	int status, idx, gone = 0;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if ((idx = scoreboard_find(m->sb, pid)) == -1)
			continue;
		master_note_death(m, &m->sb->slots[idx], status);
		scoreboard_release(m->sb, &m->sb->slots[idx]);
		gone = 1;
	}
	if (gone && m->stop == MASTER_RUNNING)
		master_poke_idle(m);
}

static void
master_signal_all(struct master *m, int sig)
{
	unsigned i;

	SCOREBOARD_FOREACH_LIVE(m->sb, i)
		if (m->sb->slots[i].master.pid > 0)
			kill(m->sb->slots[i].master.pid, sig);
}

static void
master_begin_stop(struct master *m, enum master_stop how)
{
	int64_t ms;

	if (m->stop == MASTER_FAST || m->stop == how)
		return;
	m->stop = how;
	m->pool.stopping = 1;
	notify_send("STOPPING=1");
	if (how == MASTER_GRACEFUL) {
		log_notice("graceful stop: finishing in-flight requests");
		ms = (int64_t)m->setup.cfg->process_control_timeout * 1000;
		master_signal_all(m, SIGTERM);
	} else {
		log_notice("fast stop");
		ms = MASTER_FAST_STOP_MS;
		master_signal_all(m, SIGINT);
	}
	m->stop_deadline_us = clock_now_us() + ms * 1000;
	/* Stop accepting: the workers close their copies as they leave. */
	if (m->ls->fd != -1) {
		close(m->ls->fd);
		m->ls->fd = -1;
	}
}

/*
 * Raises the soft RLIMIT_NOFILE to the hard one when it is below what
 * cfg needs (nofile.h): the workers inherit it, with all the room the
 * hard limit gives (the count has a margin, not a guarantee). The hard
 * limit was checked with the configuration (preflight_config): a load
 * that it could not hold never gets here.
 */
static void
master_nofile(const struct config *cfg)
{
	struct nofile_need n;
	struct rlimit rl;
	rlim_t was;

	nofile_need(cfg, &n);
	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 ||
	    rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= n.total)
		return;
	was = rl.rlim_cur;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? n.total : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
		log_err("%s: setrlimit(RLIMIT_NOFILE, %llu) failed: %s",
		    __func__, (unsigned long long)rl.rlim_cur, strerror(errno));
	else
		log_notice("RLIMIT_NOFILE: soft limit raised from %llu to %llu "
		    "(this configuration needs %u)", (unsigned long long)was,
		    (unsigned long long)rl.rlim_cur, n.total);
}

/*
 * A reload refused: logged, and said in STATUS= (systemctl status) until
 * a reload succeeds. systemd learns nothing else: no RELOADING=1 was
 * sent, and ExecReload's own exit status is the unit's to decide
 * (cfpm -t before the signal).
 */
static void
master_refuse(struct master *m, const char *why)
{
	log_err("reload refused, pool unchanged: %s", why);
	health_reload(&m->health, why);
}

/*
 * SIGHUP / SIGUSR2: the next setup is loaded and checked whole first (its
 * configuration, what its application loads: the events API's keys); if
 * anything is wrong the running pool is left alone.
 */
static void
master_reload(struct master *m)
{
	char err[CONFIG_ERR_LEN];
	struct setup next;
	struct config *cfg;

	if (setup_load(&next, m->apps, m->config_path, m->children, 0, err,
	    sizeof(err)) == -1) {
		master_refuse(m, err);
		return;
	}
	if (next.app != m->setup.app) {
		snprintf(err, sizeof(err), "app %s -> %s needs a restart",
		    m->setup.app->name, next.app->name);
		master_refuse(m, err);
		setup_free(&next);
		return;
	}
	health_reload(&m->health, NULL);
	cfg = next.cfg;
	if (strcmp(cfg->listen, m->setup.cfg->listen) != 0 ||
	    strcmp(cfg->status_listen, m->setup.cfg->status_listen) != 0)
		log_warn("reload: listen and pm.status_listen changes need "
		    "a restart; keeping the current sockets");
	notify_send("RELOADING=1");
	log_set_syslog(cfg->syslog_ident, cfg->syslog_facility);
	if (log_open(cfg->log_level, cfg->error_log) == -1)
		log_err("reload: error_log %s: %s", cfg->error_log,
		    strerror(errno));
	setup_free(&m->setup);	/* running workers keep their own copy */
	m->setup = next;
	master_nofile(cfg);	/* before the new generation forks */
	master_snapshot(m);
	scoreboard_add(&m->sb->totals.respawns[SB_REASON_RELOAD],
	    pool_reload(&m->pool, m->snap, m->sb->nslots,
	    (unsigned)cfg->max_children, cfg->process_control_timeout,
	    clock_now_us()));
	scoreboard_add(&m->sb->totals.reloads, 1);
	scoreboard_set_max_children(m->sb, (unsigned)cfg->max_children);
	log_notice("reload: generation %u, %d workers", m->pool.generation,
	    cfg->max_children);
}

/* Retires workers replaced by a reload or a recycle once the current
 * generation is fully ready (or the reload has waited long enough). */
static void
master_retire(struct master *m, int64_t now)
{
	struct sb_slot *s;
	unsigned i;

	if (pool_retire(&m->pool, m->snap, m->sb->nslots, now, m->act) == 0)
		return;
	for (i = 0; i < m->sb->nslots; i++) {
		if (m->act[i] == POOL_KEEP)
			continue;
		s = &m->sb->slots[i];
		if (m->act[i] == POOL_RECYCLE)
			scoreboard_add(&m->sb->totals.respawns[
			    SB_REASON_RECYCLE], 1);
		scoreboard_set_life(s, SB_LIFE_RETIRING);
		kill(s->master.pid, SIGTERM);
	}
}

/*
 * request_slowlog_timeout and request_terminate_timeout, from outside:
 * no ptrace, just the scoreboard. The slow log names each request once:
 * the master remembers the request number it logged.
 */
static void
master_timeouts(struct master *m, int64_t now)
{
	int64_t slow, term, elapsed;
	struct status_request q;
	struct sb_slot *s;
	struct sb_view v;
	uint64_t nr;
	unsigned i;

	slow = (int64_t)m->setup.cfg->request_slowlog_timeout * 1000000;
	term = (int64_t)m->setup.cfg->request_terminate_timeout * 1000000;
	SCOREBOARD_FOREACH_LIVE(m->sb, i) {
		s = &m->sb->slots[i];
		/* A torn record is used all the same: its worker is
		 * stopped mid-update, and may be the one to kill. */
		(void)scoreboard_read(s, &v);
		if (!scoreboard_busy(&v) || v.req.start_us == 0)
			continue;
		elapsed = now - v.req.start_us;
		nr = v.req.requests + 1;	/* the one in progress */
		if (slow > 0 && elapsed > slow && s->master.slow_logged != nr) {
			/* The master's field: stored whole (scoreboard.h). */
			__atomic_store_n(&s->master.slow_logged, nr,
			    __ATOMIC_RELAXED);
			status_request(&v, &q);	/* client bytes, escaped */
			scoreboard_add(&m->sb->totals.slow, 1);
			log_warn("slow request: worker %d, %s %s, phase %s, "
			    "%.3f s elapsed", (int)s->master.pid, q.method,
			    q.uri, scoreboard_phase_name(v.phase),
			    elapsed / 1e6);
		}
		if (term > 0 && s->master.life != SB_LIFE_KILLED &&
		    elapsed > term + MASTER_TERMINATE_GRACE_MS * 1000) {
			scoreboard_set_life(s, SB_LIFE_KILLED);
			scoreboard_add(&m->sb->totals.terminated, 1);
			status_request(&v, &q);
			log_warn("request_terminate_timeout: killing worker %d "
			    "(%s %s, phase %s)", (int)s->master.pid, q.method,
			    q.uri, scoreboard_phase_name(v.phase));
			kill(s->master.pid, SIGKILL);
		}
	}
}

/*
 * The listen queue, sampled as PHP-FPM samples it: on every tick and at
 * every status request, and published with the pool's generation for
 * the page a worker serves on the pool socket (scoreboard_sample), which
 * shows the last sample, as PHP-FPM's workers do. Its peak is the most
 * any sample saw; the busy workers' peak and max_children_reached need
 * no sampling: the workers count them as they happen (scoreboard.h,
 * PEAKS). Sets *queued and *limit (0 when the socket cannot tell).
 */
static void
master_sample(struct master *m, unsigned *queued, unsigned *limit)
{
	if (listen_queue(m->ls, queued, limit) == -1) {
		*queued = 0;
		*limit = 0;
	}
	scoreboard_sample(m->sb, m->pool.generation, *queued, *limit);
}

static void
master_maintain(struct master *m)
{
	int64_t now = clock_now_us();
	unsigned n, spawned = 0, queued, limit;

	master_snapshot(m);
	for (n = pool_to_spawn(&m->pool, m->snap, m->sb->nslots, now); n > 0;
	    n--, spawned++)
		if (master_spawn(m) == -1)
			break;
	if (spawned > 0)
		master_snapshot(m);
	master_retire(m, now);
	master_timeouts(m, now);
	master_sample(m, &queued, &limit);
	health_tick(&m->health, &m->pool, m->snap, m->sb);
}

/* Acts on the signals that came; returns 1 if any did. */
static int
master_handle_flags(struct master *m)
{
	int any = sig_chld || sig_int || sig_term || sig_usr1 || sig_reload;

	if (sig_chld) {
		sig_chld = 0;
		master_reap(m);
	}
	if (sig_int) {
		sig_int = 0;
		master_begin_stop(m, MASTER_FAST);
	}
	if (sig_term) {
		sig_term = 0;
		master_begin_stop(m, MASTER_GRACEFUL);
	}
	if (sig_usr1) {
		sig_usr1 = 0;
		if (log_reopen() == -1)
			log_err("reopening the error log failed: %s",
			    strerror(errno));
		master_signal_all(m, SIGUSR1);	/* workers' access logs */
	}
	if (sig_reload) {
		sig_reload = 0;
		if (m->stop == MASTER_RUNNING)
			master_reload(m);
	}
	return any;
}

static int
master_timeout_ms(const struct master *m)
{
	if (m->stop != MASTER_RUNNING || !m->pool.ready_sent ||
	    m->setup.cfg->request_slowlog_timeout > 0 ||
	    m->setup.cfg->request_terminate_timeout > 0)
		return MASTER_TICK_MS;
	return MASTER_IDLE_MS;
}

/* The status page's view, the listen queue sampled now (admin.c asks). */
static int
master_fill_status(struct status_view *v, void *arg)
{
	struct master *m = arg;
	unsigned queued, limit;

	master_sample(m, &queued, &limit);
	return statuspage_view(v, m->sb, m->setup.cfg->pool_name,
	    m->pool.generation, queued, limit);
}

/* The eventfd workers write to when they are ready or want out: the
 * next pass comes at once (master_tick). */
static void
master_read_kicks(struct master *m)
{
	uint64_t kicks;

	m->kicked = 1;
	if (read(m->kick_fd, &kicks, sizeof(kicks)) == -1 && errno != EAGAIN)
		log_flood(&m->flood_kick, CONFIG_LOG_ERROR, "%s: read(eventfd) "
		    "failed: %s", __func__, strerror(errno));
}

/*
 * The pool's bookkeeping (master_maintain) runs when there is something
 * to act on, a signal (signalled) or a worker's kick, or when its period
 * is up; not at every byte of a status client, which would make one
 * trickling client cost a whole pass per read.
 */
static void
master_tick(struct master *m, int signalled)
{
	if (!signalled && !m->kicked && clock_now_us() < m->next_maintain_us)
		return;
	m->kicked = 0;
	master_maintain(m);
	m->next_maintain_us = clock_now_us() +
	    (int64_t)master_timeout_ms(m) * 1000;
}

/* How long the next wait may be: to the next pass while running. */
static int
master_wait_ms(const struct master *m)
{
	int64_t left = m->next_maintain_us - clock_now_us();

	if (m->stop != MASTER_RUNNING)
		return master_timeout_ms(m);
	return left <= 0 ? 0 : (int)((left + 999) / 1000);
}

/*
 * Waits for a signal, the status socket or a worker's kick: a worker
 * that is ready, or wants to be recycled, writes to the eventfd (a
 * signal would not do: a worker that gave up root may not signal its
 * root master), and the loop looks at the scoreboard at once.
 */
static void
master_wait(struct master *m, const sigset_t *waitmask)
{
	struct pollfd pfd[ADMIN_POLL_FDS + 1];
	struct pollfd *kick = &pfd[ADMIN_POLL_FDS];
	int ms = master_wait_ms(m), n, i, t;
	struct timespec ts;

	for (i = 0; i < ADMIN_POLL_FDS; i++)
		pfd[i].fd = -1;
	if (m->admin != NULL &&
	    (t = admin_poll_fds(m->admin, pfd)) >= 0 && t < ms)
		ms = t;
	kick->fd = m->kick_fd;
	kick->events = POLLIN;
	kick->revents = 0;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000;
	n = ppoll(pfd, ADMIN_POLL_FDS + 1, &ts, waitmask);
	if (n == -1 && errno != EINTR) {
		/* EINVAL: RLIMIT_NOFILE lowered below the set under a running
		 * pool. It fails at every call: wait the period all the same
		 * (signals still come in, timeouts still run), never spin. */
		log_flood(&m->flood_poll, CONFIG_LOG_ERROR, "%s: ppoll() of %d "
		    "descriptors failed: %s; waiting without them", __func__,
		    ADMIN_POLL_FDS + 1, strerror(errno));
		n = ppoll(NULL, 0, &ts, waitmask);
	}
	if (n > 0 && (kick->revents & POLLIN))
		master_read_kicks(m);
	/* Deadlines run out with or without events. */
	if (m->admin != NULL && n >= 0)
		admin_process(m->admin, pfd, m->setup.cfg, master_fill_status,
		    m);
}

static void
master_init(struct master *m, struct setup *setup,
    const struct app *const *apps, const char *config_path, int children,
    struct listen_sock *ls, struct listen_sock *status_ls)
{
	const struct config *own = setup->cfg;

	*m = (struct master){ .setup = *setup, .apps = apps,
	    .config_path = config_path, .children = children, .ls = ls };
	memset(setup, 0, sizeof(*setup));	/* taken over */
	master_nofile(own);
	if (listen_set_rcvbuf(ls) == -1)
		log_warn("listen socket: receive buffer: %s", strerror(errno));
	if ((m->sb = scoreboard_create(MASTER_SLOTS)) == NULL)
		fatal("%s: scoreboard: %s", __func__, strerror(errno));
	if ((m->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1 ||
	    (m->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1)
		fatal("%s: eventfd: %s", __func__, strerror(errno));
	scoreboard_set_start(m->sb, (int64_t)time(NULL));
	scoreboard_set_max_children(m->sb, (unsigned)own->max_children);
	pool_init(&m->pool, (unsigned)own->max_children);
	notify_init();
	if (own->status_listen[0] != '\0' && (m->admin = admin_open(own,
	    status_ls->fd != -1 ? status_ls : NULL)) == NULL)
		fatal("pm.status_listen %s: cannot listen", own->status_listen);
}

int
master_run(struct setup *setup, const struct app *const *apps,
    const char *config_path, int children, struct listen_sock *ls,
    struct listen_sock *status_ls)
{
	struct master m;
	sigset_t waitmask;
	char where[160];
	int signalled;

	master_init(&m, setup, apps, config_path, children, ls, status_ls);
	master_signals(&waitmask);
	log_notice("cfpm %s: %d workers on %s", PACKAGE_VERSION,
	    m.setup.cfg->max_children, listen_describe(ls, where,
	    sizeof(where)));
	for (;;) {
		signalled = master_handle_flags(&m);
		if (m.stop == MASTER_RUNNING)
			master_tick(&m, signalled);
		else if (master_live(&m) == 0)
			break;
		else if (!m.killed && clock_now_us() >= m.stop_deadline_us) {
			log_warn("stop timeout: killing %u workers",
			    master_live(&m));
			master_signal_all(&m, SIGKILL);
			m.killed = 1;
		}
		master_wait(&m, &waitmask);
	}
	admin_close(m.admin);
	listen_close(ls);
	scoreboard_destroy(m.sb);
	close(m.kick_fd);
	close(m.wake_fd);
	setup_free(&m.setup);
	log_notice("stopped");
	return 0;
}
