/*
 * worker.c: a pool process (child of the master). Its database
 * connections (db.h) and the application's state, then a loop that reads
 * top to bottom: wait in epoll for what is ready (the shared listen
 * socket: one worker woken per connection, oldest idle first; the pool's
 * wake eventfd; the connection nginx kept open to this worker; those it
 * released; the database's sockets), decide what to do about it (keep.h,
 * pure), then do it: serve each request there is, read and checked whole
 * within request_read_timeout (conn.c, http.c), and keep or end its
 * connection. Signals take effect between requests.
 */
#include "server/worker.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "server/accesslog.h"
#include "server/conn.h"
#include "server/db.h"
#include "server/http.h"
#include "server/keep.h"
#include "server/listen.h"
#include "server/sandbox.h"
#include "server/serve.h"
#include "util/clock.h"
#include "util/log.h"

#define WORKER_IDLE_CHECK_MS	2000	/* idle look at the socket anyway */
#define WORKER_MAX_EVENTS	(KEEP_MAX_RELEASED + 4)	/* one wait's */
#define WORKER_QUEUED_TRUST_US	10000	/* a backlog seen is trusted */

/*
 * What the signal handlers leave for the loop: a handler takes no
 * argument, so these are the worker's only file-scope state, each a
 * sig_atomic_t (SIGALRM's is serve.c's).
 */
static volatile sig_atomic_t worker_stop;	/* SIGTERM, SIGQUIT */
static volatile sig_atomic_t worker_reopen;	/* SIGUSR1 */

/*
 * SIGTERM, SIGQUIT, SIGUSR1 and SIGUSR2 are blocked except while the
 * worker waits in epoll_pwait(), so they never interrupt a request or
 * the reading of one. Graceful stop, log reopening and the master's
 * pokes therefore all take effect between requests.
 */
static const int worker_deferred[] = { SIGTERM, SIGQUIT, SIGUSR1, SIGUSR2 };

/* Graceful stop: the loop leaves once nothing is held or released. */
static void
worker_on_stop(int sig)
{
	(void)sig;
	worker_stop = 1;
}

/*
 * SIGUSR2 is "reload" to the master; to a worker it is the master's
 * "look at the listen socket": a worker exited, and a wake-up for a
 * queued connection may have gone with it (worker_epoll_init). The
 * handler does nothing: the signal only ends epoll_pwait(), and a wait
 * that ends without an event tries accept.
 */
static void
worker_on_look_at_socket(int sig)
{
	(void)sig;
}

static void
worker_on_usr1(int sig)
{
	(void)sig;
	worker_reopen = 1;
}

/* Installs the handlers and blocks worker_deferred; *waitmask gets what
 * epoll_pwait lets through (all of it). */
static void
worker_signals(sigset_t *waitmask)
{
	struct sigaction sa;
	sigset_t block;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);		/* fast stop: just die */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);		/* reload is the master's */
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = worker_on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	sa.sa_handler = serve_on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = worker_on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = worker_on_look_at_socket;
	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(waitmask);
	sigemptyset(&block);
	for (i = 0; i < sizeof(worker_deferred) / sizeof(worker_deferred[0]);
	    i++)
		sigaddset(&block, worker_deferred[i]);
	sigprocmask(SIG_SETMASK, &block, NULL);	/* replaces the master's */
}

/* Where a connection about to be read comes from. */
enum worker_from {
	WORKER_ACCEPTED,	/* just accepted */
	WORKER_HELD,		/* the kept connection */
	WORKER_RELEASED,	/* released, watched until nginx closes it */
};

/* What one worker runs with, for its whole life. */
struct worker_ctx {
	struct serve		 srv;		/* what requests are served with */
	struct conn_policy	 pol;
	struct http_request	*req;		/* every request's, in turn */
	unsigned long long	 limit;		/* pm.max_requests, jittered */
	sigset_t		 waitmask;	/* what epoll_pwait lets in */
	int			 epfd;		/* listen, wake, database, kept
						   and released connections */
	unsigned		 db_watched[DB_MAX_SOCKETS];	/* ids in it */
	int			 listen_fd;
	int			 wake_fd;	/* the pool's: passes a wake-up
						   for listen_fd on */
	int			 kick_fd;	/* the master's eventfd */
	int			 stopping;	/* 1 from a graceful stop, or a
						   listen socket that failed, on
						   (worker_stop_accepting) */
	int			 draining;	/* 1: stopping or recycled; keep
						   no connection from now on */
	int			 held;		/* the kept connection, or -1 */
	unsigned		 held_id;	/* its last request id */
	struct keep_released	 released;
	int64_t			 queued_until_us; /* worker_queued()'s */
	int64_t			 accept_paused_us; /* 0, or out of descriptors:
						   listen_fd and wake_fd are
						   out of the wait until then */
};

/* pm.max_requests plus up to 10 % jitter, so workers don't recycle at once. */
static unsigned long long
worker_request_limit(const struct config *cfg)
{
	unsigned long long max = (unsigned long long)cfg->max_requests;

	if (max == 0)
		return 0;
	srandom((unsigned)getpid() ^ (unsigned)clock_now_us());
	return max + (unsigned long long)random() % (max / 10 + 1);
}

/* Writes a 1 to an eventfd: EAGAIN means one is pending already. */
static void
worker_poke(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) == -1) {
		/* EAGAIN: the reader has one to take already */
	}
}

/*
 * Wakes the master's loop now rather than at its next tick, to look at
 * the scoreboard. Not a signal: a worker that gave up root may not
 * signal its root master.
 */
static void
worker_kick_master(const struct worker_ctx *w)
{
	worker_poke(w->kick_fd);
}

/* ---- Connections ------------------------------------------------------ */

static int
worker_epoll_add(const struct worker_ctx *w, int fd, uint32_t events)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.fd = fd;
	return epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* SIGUSR1: checked as soon as a request arrives, before it logs. */
static void
worker_reopen_logs(void)
{
	if (!worker_reopen)
		return;
	worker_reopen = 0;
	if (log_reopen() == -1 || accesslog_reopen() == -1)
		log_err("reopening logs failed: %s", strerror(errno));
}

/*
 * Is a connection waiting? A zero-timeout look at the epoll set. Under a
 * backlog every connection is a new one and the answer stays yes, so a
 * yes is trusted for WORKER_QUEUED_TRUST_US without the system call (a
 * wrong answer only ends a connection nginx could have kept).
 */
static int
worker_queued(struct worker_ctx *w)
{
	struct epoll_event ev[WORKER_MAX_EVENTS];
	int64_t now = clock_now_us();
	int n, i;

	if (now < w->queued_until_us)
		return 1;
	n = epoll_wait(w->epfd, ev, WORKER_MAX_EVENTS, 0);
	for (i = 0; i < n; i++)
		if (ev[i].data.fd == w->listen_fd ||
		    ev[i].data.fd == w->wake_fd) {
			w->queued_until_us = now + WORKER_QUEUED_TRUST_US;
			return 1;
		}
	return 0;
}

/*
 * The one place a request is served: reads the next request on fd,
 * serves it, then keeps the connection or ends it (keep.h). queued: the
 * listen socket was ready as fd was picked. Returns 1 if fd is to be the
 * held connection, 0 if it is closed, -1 if nothing was read and it
 * stays as it was.
 */
static int
worker_serve_conn(struct worker_ctx *w, int fd, enum worker_from from,
    int queued)
{
	struct http_request *r = w->req;
	int kept = from != WORKER_ACCEPTED;
	int keep_none = w->draining || from == WORKER_RELEASED;
	enum keep_end end;

	/* A kept connection is woken by nginx's close too: it counts as
	 * busy (status page peaks) only once a request is there. */
	if (!kept)
		sb_worker_phase(w->srv.sb, w->srv.slot, SB_READING);
	worker_reopen_logs();
	switch (http_read_request(r, fd, kept, &w->pol)) {
	case CONN_READ_NOTHING:
		return -1;
	case CONN_READ_REQUEST:
		break;
	default:
		return 0;
	}
	if (r->fcgi.keep_conn && !kept && !queued && !keep_none)
		queued = worker_queued(w);
	end = keep_end(r->fcgi.keep_conn, keep_none, queued);
	if (serve_request(&w->srv, r, end == KEEP_RELEASE) == -1 || end != KEEP_KEEP ||
	    (!kept && worker_epoll_add(w, fd, EPOLLIN | EPOLLRDHUP) == -1)) {
		close(fd);
		return 0;
	}
	w->held_id = r->fcgi.id;
	return 1;
}

/*
 * Ends the idle kept connection: the release record, then it is watched
 * until nginx closes it (keep.h). A full set loses its oldest member.
 */
static void
worker_release_held(struct worker_ctx *w)
{
	int evicted;

	if (w->held == -1)
		return;
	if (conn_release(w->held, w->held_id) == -1)
		close(w->held);		/* the peer is gone already */
	else if ((evicted = keep_released_add(&w->released, w->held,
	    clock_now_us())) != -1)
		close(evicted);
	w->held = -1;
}

/*
 * Each released connection that had an event or whose time is up:
 * nginx's close, or a request that raced the release (served; its reply
 * ends the connection). Nothing there when its time is up means a peer
 * that never closes: closed. A request is served even then: the worker
 * may have been busy with another for longer than the wait, and closing
 * over it unread would reset the connection under a request nginx
 * already sent (a 502 for a POST).
 */
static void
worker_serve_released(struct worker_ctx *w)
{
	struct keep_released *set = &w->released;
	int64_t now = clock_now_us();
	unsigned i = 0;
	int fd, expired;

	while (i < set->n) {
		if (!set->conn[i].ready) {
			i++;
			continue;
		}
		fd = set->conn[i].fd;
		expired = set->conn[i].until_us <= now;
		set->conn[i].ready = 0;
		if (worker_serve_conn(w, fd, WORKER_RELEASED, 0) != -1)
			keep_released_drop(set, i);	/* closed by now */
		else if (expired) {
			close(fd);
			keep_released_drop(set, i);
		} else
			i++;
	}
}

/*
 * Out of descriptors or memory at accept (listen_accept_starved): the
 * connection stays queued and the listen socket readable, so waiting on
 * it again would spin. The worker takes the listen socket and the pool's
 * wake eventfd (whose wake-ups it could not act on either) out of its
 * wait for LISTEN_ACCEPT_PAUSE_MS and goes on serving its kept
 * connection; the other workers take the queue meanwhile.
 */
static struct log_flood worker_flood_starved;

static void
worker_accept_unwatch(const struct worker_ctx *w)
{
	(void)epoll_ctl(w->epfd, EPOLL_CTL_DEL, w->listen_fd, NULL);
	(void)epoll_ctl(w->epfd, EPOLL_CTL_DEL, w->wake_fd, NULL);
}

static void
worker_accept_pause(struct worker_ctx *w, int err)
{
	worker_accept_unwatch(w);
	w->accept_paused_us = clock_now_us() + LISTEN_ACCEPT_PAUSE_MS * 1000;
	(void)log_flood(&worker_flood_starved, CONFIG_LOG_ERROR, "accept "
	    "failed: %s; not accepting for %d ms, serving on",
	    strerror(err), LISTEN_ACCEPT_PAUSE_MS);
}

/* Puts fd back in the wait; one that is there already counts. */
static int
worker_epoll_readd(const struct worker_ctx *w, int fd)
{
	return worker_epoll_add(w, fd, EPOLLIN | EPOLLEXCLUSIVE) == 0 ||
	    errno == EEXIST ? 0 : -1;
}

/* Ends a pause that is over; returns the ms it has left, or -1. */
static int
worker_accept_resume(struct worker_ctx *w)
{
	int64_t left;

	if (w->accept_paused_us == 0)
		return -1;
	if ((left = w->accept_paused_us - clock_now_us()) > 0)
		return (int)((left + 999) / 1000);
	if (worker_epoll_readd(w, w->listen_fd) == -1 ||
	    worker_epoll_readd(w, w->wake_fd) == -1) {
		worker_accept_pause(w, errno);	/* try again later */
		return LISTEN_ACCEPT_PAUSE_MS;
	}
	w->accept_paused_us = 0;
	return -1;
}

/* accept4 errors that concern one connection, not the socket (the
 * connection is gone; starvation, which leaves it queued, is not). */
static int
worker_accept_transient(int err)
{
	return err == EAGAIN || err == EINTR || err == ECONNABORTED ||
	    err == EPROTO || err == EPERM;
}

/*
 * Accepts a connection and serves it; release_held: the kept connection
 * is released first if one came (keep.h). Returns -1 if the listen
 * socket failed.
 */
static int
worker_accept(struct worker_ctx *w, int release_held)
{
	int fd;

	if ((fd = listen_accept(w->listen_fd, &w->srv.cfg->listen_allowed)) ==
	    -1) {
		/* Another worker was quicker: EAGAIN, wait again. */
		if (worker_accept_transient(errno))
			return 0;
		if (listen_accept_starved(errno)) {
			worker_accept_pause(w, errno);
			return 0;
		}
		log_err("%s: accept failed: %s", __func__, strerror(errno));
		return -1;
	}
	if (release_held)
		worker_release_held(w);
	if (worker_serve_conn(w, fd, WORKER_ACCEPTED, 0) == 1)
		w->held = fd;
	return 0;
}

/* ---- Waiting ---------------------------------------------------------- */

/*
 * Which idle worker takes the next connection. Every worker registers the
 * (non-blocking) listen socket in its own epoll set with EPOLLEXCLUSIVE:
 * the kernel wakes one waiter per connection, and it walks the socket's
 * wait queue in registration order, skipping workers that are busy. So
 * the longest-lived idle worker always goes first and a large pool on few
 * cores keeps a small hot set of processes (and of PostgreSQL backends)
 * instead of cycling through all of them as blocking accept() does. The
 * pool's wake eventfd is registered the same way: a worker that cannot
 * take a waiting connection at once writes it to wake another (keep.h).
 *
 * A wake-up goes to one worker only, and only that worker's epoll set
 * learns of it; if that worker exits instead of accepting (it was being
 * retired), the others would sleep on with a connection queued. So the
 * master pokes the idle workers with SIGUSR2 whenever a worker exits, and
 * a poked (or timed-out) wait also tries accept(): EAGAIN costs nothing.
 * While the database is down the wait is short, so an idle worker keeps
 * trying to connect and the pool becomes ready when PostgreSQL appears
 * even with no traffic at all.
 */
static int
worker_epoll_init(struct worker_ctx *w)
{
	if ((w->epfd = epoll_create1(EPOLL_CLOEXEC)) == -1 ||
	    worker_epoll_add(w, w->listen_fd, EPOLLIN | EPOLLEXCLUSIVE) ==
	    -1 || worker_epoll_add(w, w->wake_fd, EPOLLIN | EPOLLEXCLUSIVE) ==
	    -1) {
		log_err("%s: epoll: %s", __func__, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Keeps the database's sockets in the epoll set (not exclusive): an idle
 * connection's, so that an idle worker learns at once when PostgreSQL
 * goes away (a restart closes every connection), and a connection
 * attempt's, which db_tick() moves on while the worker keeps serving.
 * A socket libpq closed left the set by itself; one whose id changed is
 * (re-)registered. Returns the ms until db_tick() is due (-1: none).
 */
static int
worker_watch_db(struct worker_ctx *w)
{
	struct db_socket s[DB_MAX_SOCKETS];
	struct epoll_event ev;
	int i, due;

	if (w->srv.db == NULL)
		return -1;
	due = db_sockets(w->srv.db, s);
	for (i = 0; i < DB_MAX_SOCKETS; i++) {
		if (s[i].fd == -1 || s[i].id == w->db_watched[i])
			continue;
		memset(&ev, 0, sizeof(ev));
		ev.events = s[i].out ? EPOLLOUT : EPOLLIN;
		ev.data.fd = s[i].fd;
		if (epoll_ctl(w->epfd, EPOLL_CTL_MOD, s[i].fd, &ev) == 0 ||
		    (errno == ENOENT && epoll_ctl(w->epfd, EPOLL_CTL_ADD,
		    s[i].fd, &ev) == 0))
			w->db_watched[i] = s[i].id;
	}
	return due;
}

/* The wait's bound: the idle look, or sooner what falls due. */
static int
worker_wait_ms(struct worker_ctx *w)
{
	int ms = WORKER_IDLE_CHECK_MS, due;

	if ((due = worker_watch_db(w)) != -1 && due < ms)
		ms = due;
	if ((due = keep_released_next_ms(&w->released, clock_now_us())) !=
	    -1 && due < ms)
		ms = due;
	if ((due = worker_accept_resume(w)) != -1 && due < ms)
		ms = due;
	return ms;
}

/* Takes a passed wake-up (whoever reads it first tries accept). */
static void
worker_take_wake(const struct worker_ctx *w)
{
	uint64_t n;

	if (read(w->wake_fd, &n, sizeof(n)) == -1) {
		/* EAGAIN: another worker took it */
	}
}

/*
 * Waits for what is ready and reports it in seen (keep.h); serves
 * nothing. The database's idle part runs here (db_tick: it never
 * blocks), as does the released set's clock.
 */
static void
worker_wait(struct worker_ctx *w, struct keep_seen *seen)
{
	struct epoll_event ev[WORKER_MAX_EVENTS];
	int n, i, fd, db_event = 0;

	memset(seen, 0, sizeof(*seen));
	n = epoll_pwait(w->epfd, ev, WORKER_MAX_EVENTS, worker_wait_ms(w),
	    &w->waitmask);
	seen->stopping = worker_stop || w->stopping;
	/* Poked or timed out: look at the socket anyway (EAGAIN is cheap),
	 * unless out of descriptors. */
	seen->listen_ready = n <= 0 && w->accept_paused_us == 0;
	for (i = 0; i < n; i++) {
		fd = ev[i].data.fd;
		if (fd == w->listen_fd)
			seen->listen_ready = 1;
		else if (fd == w->wake_fd) {
			worker_take_wake(w);
			seen->listen_ready = 1;
		} else if (fd == w->held)
			seen->held_ready = 1;
		else if (!keep_released_mark(&w->released, fd))
			db_event = 1;
	}
	seen->released_ready = keep_released_due(&w->released,
	    clock_now_us());
	seen->held = w->held != -1;
	if (w->srv.db != NULL)
		db_tick(w->srv.db, db_event);
	sb_worker_db(w->srv.slot, serve_db_up(&w->srv));
}

/* ---- The loop --------------------------------------------------------- */

/*
 * Does what keep_pick() decided, in its order. Returns -1 if the listen
 * socket failed.
 */
static int
worker_act(struct worker_ctx *w, const struct keep_seen *seen,
    const struct keep_plan *plan)
{
	if (plan->serve_released)
		worker_serve_released(w);
	if (plan->pass_wake)
		worker_poke(w->wake_fd);
	if (plan->serve_held &&
	    worker_serve_conn(w, w->held, WORKER_HELD, seen->listen_ready) ==
	    0)
		w->held = -1;
	if (plan->release_held || w->draining)
		worker_release_held(w);
	return plan->accept ? worker_accept(w, plan->release_on_accept) : 0;
}

/*
 * A graceful stop (or a listen socket that failed): nothing more is
 * accepted and no connection kept; the loop goes on until the kept
 * connection is released and every released one closed by nginx (a
 * request that raced the release is served), KEEP_RELEASE_MS at most.
 */
static void
worker_stop_accepting(struct worker_ctx *w)
{
	worker_accept_unwatch(w);
	w->accept_paused_us = 0;	/* and they stay out */
	w->stopping = w->draining = 1;
}

/*
 * Recycling: keep serving until the master has a replacement, but keep
 * no connection from here on (keep.h).
 */
static void
worker_between_requests(struct worker_ctx *w)
{
	if (w->limit == 0 || sb_worker_requests(w->srv.slot) < w->limit)
		return;
	w->draining = 1;
	if (sb_worker_retire(w->srv.slot)) {
		log_info("pm.max_requests reached after %llu requests",
		    (unsigned long long)sb_worker_requests(w->srv.slot));
		worker_kick_master(w);
	}
}

/* Wait, decide, act: until stopped with nothing held or released. */
static void
worker_loop(struct worker_ctx *w)
{
	struct keep_seen seen;
	struct keep_plan plan;

	sb_worker_phase(w->srv.sb, w->srv.slot, SB_IDLE);
	serve_ready(&w->srv);		/* the first request counts from here */
	worker_kick_master(w);		/* ready: a replacement may retire one */
	for (;;) {
		sb_worker_phase(w->srv.sb, w->srv.slot, SB_IDLE);
		worker_wait(w, &seen);
		if (seen.stopping && !w->stopping)
			worker_stop_accepting(w);
		keep_pick(&seen, &plan);
		if (worker_act(w, &seen, &plan) == -1)
			worker_stop_accepting(w);
		if (w->stopping && w->held == -1 && w->released.n == 0)
			break;
		worker_between_requests(w);
	}
	sb_worker_phase(w->srv.sb, w->srv.slot, SB_EXITING);
}

/* ---- Start ------------------------------------------------------------ */

/* The database connection, if the application uses one, then the
 * application's own start. Returns 0 or -1 (logged). */
static int
worker_start_app(const struct worker_args *args, struct worker_ctx *w)
{
	const struct app *app = args->app;
	struct app_env env;

	if (app->uses_db && (w->srv.db = db_open(args->cfg->db_conninfo,
	    args->cfg->db_read_conninfo, args->cfg->db_timeout * 1000,
	    app->statements, app->nstatements)) == NULL) {
		log_err("%s: database handle: %s", __func__, strerror(errno));
		return -1;
	}
	sb_worker_db(w->srv.slot, serve_db_up(&w->srv));
	env.cfg = args->cfg;
	env.shared = args->shared;	/* loaded once, by the master */
	env.db = w->srv.db;
	return app_init(app, &env, &w->srv.state);
}

/* What the loop serves with: the request, the page, the policy, epoll.
 * Returns 0 or -1 (logged). */
static int
worker_serving_init(const struct worker_args *args, struct worker_ctx *w)
{
	const struct config *cfg = args->cfg;

	w->pol.read_timeout_ms = cfg->request_read_timeout * 1000;
	w->pol.write_timeout_ms = cfg->request_write_timeout * 1000;
	w->pol.max_conns = (unsigned)cfg->max_children;
	w->listen_fd = args->listen_fd;
	w->wake_fd = args->wake_fd;
	w->limit = worker_request_limit(cfg);
	if ((w->req = http_request_new(w->pol.write_timeout_ms,
	    serve_on_phase, &w->srv)) == NULL || serve_init(&w->srv) == -1) {
		log_err("%s: out of memory", __func__);
		return -1;
	}
	return worker_epoll_init(w);
}

/*
 * The order matters. The access log is opened while still root (its
 * directory may be root's); the identity is then given up at once,
 * before anything reads a byte from a client or the database; the parent
 * death signal is set only after that, because changing credentials
 * clears it; the filter comes last, once everything that needs more than
 * serving requests (connecting, preparing, loading libraries,
 * allocating) has run.
 */
void
worker_main(const struct worker_args *args)
{
	struct worker_ctx w = { .srv = { .cfg = args->cfg,
	    .app = args->app, .sb = args->sb,
	    .slot = &args->sb->slots[args->slot] }, .kick_fd = args->kick_fd,
	    .epfd = -1, .held = -1 };
	int code = 1;

	log_set_role("worker");
	if (accesslog_open(args->cfg->access_log) == -1)
		log_err("access.log %s: %s", args->cfg->access_log,
		    strerror(errno));
	if (sandbox_drop(&args->ids) == -1)
		goto done;
	worker_signals(&w.waitmask);
	/* Die with the master: a pool without its master serves nobody. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 ||
	    getppid() != args->master)
		_exit(1);
	if (worker_start_app(args, &w) == -1 ||
	    worker_serving_init(args, &w) == -1)
		goto done;
	if (args->cfg->worker_seccomp && sandbox_filter() == -1)
		goto done;
	worker_loop(&w);
	code = 0;
done:
	app_fini(args->app, w.srv.state);
	serve_fini(&w.srv);
	db_close(w.srv.db);
	http_request_free(w.req);
	exit(code);
}
