/*
 * worker.c: a pool process (child of the master). One libpq connection,
 * the master's parsed keys, then a loop: wait in epoll for the shared
 * listen socket (one worker woken per connection, oldest idle first), the
 * pool's wake eventfd and the connection nginx kept open to this worker,
 * read and check a whole request within request_read_timeout (conn.c),
 * serve it, keep or end its connection (keep.h), and between requests act
 * on signals.
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
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "server/accesslog.h"
#include "server/conn.h"
#include "server/db.h"
#include "server/http.h"
#include "server/keep.h"
#include "server/listen.h"
#include "server/sandbox.h"
#include "server/statuspage.h"
#include "util/clock.h"
#include "util/esc.h"
#include "util/log.h"

#define WORKER_IDLE_CHECK_MS	2000	/* idle look at the socket anyway */
#define WORKER_MAX_EVENTS	(KEEP_MAX_RELEASED + 4)	/* one wait's */
#define WORKER_QUEUED_TRUST_US	10000	/* a backlog seen is trusted */

static volatile sig_atomic_t worker_stop, worker_reopen;
static int worker_epfd = -1;		/* listen, wake, database, kept */
static struct db *worker_db;		/* for the terminate timer */
static sigset_t worker_waitmask;	/* what epoll_pwait lets through */
static int worker_kick_fd = -1;		/* the master's eventfd */

/*
 * SIGTERM, SIGQUIT, SIGUSR1 and SIGUSR2 are blocked except while the
 * worker waits in epoll_pwait(), so they never interrupt a request or
 * the reading of one. Graceful stop, log reopening and the master's
 * pokes therefore all take effect between requests.
 */
static const int worker_deferred[] = { SIGTERM, SIGQUIT, SIGUSR1, SIGUSR2 };

/* Graceful stop: the loop leaves after the request in progress. */
static void
worker_on_stop(int sig)
{
	(void)sig;
	worker_stop = 1;
}

/* request_terminate_timeout: the request stops waiting for the database
 * (its connection is dropped: a cancel could block on a frozen server);
 * the master kills us only if the request still does not finish. */
static void
worker_on_alarm(int sig)
{
	(void)sig;
	if (worker_db != NULL)
		db_interrupt(worker_db);
}

/* SIGUSR2 from the master: only interrupts epoll_wait (see worker_loop). */
static void
worker_on_poke(int sig)
{
	(void)sig;
}

static void
worker_on_usr1(int sig)
{
	(void)sig;
	worker_reopen = 1;
}

static void
worker_signals(void)
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
	sa.sa_handler = worker_on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = worker_on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = worker_on_poke;
	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(&worker_waitmask);
	sigemptyset(&block);
	for (i = 0; i < sizeof(worker_deferred) / sizeof(worker_deferred[0]);
	    i++)
		sigaddset(&block, worker_deferred[i]);
	sigprocmask(SIG_SETMASK, &block, NULL);	/* replaces the master's */
}

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

/*
 * Process CPU time since the previous call: one clock read per request
 * (CLOCK_PROCESS_CPUTIME_ID is a system call, not a vDSO one). A
 * request's figure thus includes the wait and accept that led to it,
 * which is CPU it cost all the same.
 */
static int64_t
worker_cpu_since_last(void)
{
	static int64_t last;
	struct timespec ts;
	int64_t now, d;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	now = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	d = last != 0 ? now - last : 0;
	last = now;
	return d;
}

static void
worker_timer(int seconds)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	it.it_value.tv_sec = seconds;
	setitimer(ITIMER_REAL, &it, NULL);
}

static void
worker_log_access(const struct config *cfg, const struct http_request *r,
    int64_t duration_us, int64_t cpu_us)
{
	struct accesslog_entry e;

	if (cfg->access_log[0] == '\0')
		return;
	e.method = r->method;
	e.path = r->path;
	e.path_len = r->path_len;
	e.request_id = r->request_id;
	e.status = r->status;
	e.duration_us = duration_us;
	e.cpu_us = cpu_us;
	e.pid = getpid();
	e.time = (int64_t)time(NULL);
	accesslog_write(cfg->access_format, &e);
}

/* A released connection: watched until its peer closes it (keep.h). */
struct worker_released {
	int		fd;
	int64_t		until_us;	/* then closed all the same */
};

/* What one worker serves with, for its whole life. */
struct worker_ctx {
	const struct config	*cfg;
	const struct app	*app;
	void			*state;		/* the application's */
	struct db		*db;		/* NULL if the app uses none */
	struct scoreboard	*sb;
	struct sb_slot		*slot;
	struct conn_policy	 pol;
	int			 listen_fd;
	int			 wake_fd;	/* the pool's: passes a wake-up
						   for listen_fd on */
	int			 draining;	/* stopping or recycled: keep
						   no connection */
	int			 held;		/* the kept connection, or -1 */
	unsigned		 held_id;	/* its last request id */
	struct worker_released	 released[KEEP_MAX_RELEASED];
	unsigned		 nreleased;
	int64_t			 queued_until_us; /* worker_queued()'s */
	int64_t			 accept_paused_us; /* 0, or out of descriptors:
						   listen_fd and wake_fd are
						   out of the wait until then */
};

/* http_phase() lands here: the slot shows what the handler is doing. */
static void
worker_on_phase(void *arg, enum http_phase phase)
{
	static const enum sb_phase phase_of[] = {
		[HTTP_PHASE_READING] = SB_READING,
		[HTTP_PHASE_AUTH] = SB_AUTH,
		[HTTP_PHASE_DB] = SB_DB,
		[HTTP_PHASE_WRITING] = SB_WRITING,
	};
	struct worker_ctx *w = arg;

	sb_worker_phase(w->sb, w->slot, phase_of[phase]);
}

/* 1 if the worker's database is usable (always, for an app without). */
static int
worker_db_up(const struct db *db)
{
	return db == NULL || db_is_up(db);
}

/*
 * After a request: the slot's database state, and while the connection
 * is down the reason (escaped: the server's text may quote the request)
 * for the master's "database unavailable" line.
 */
static void
worker_note_db(struct worker_ctx *w)
{
	char text[SCOREBOARD_DB_ERROR_LEN];
	const char *e;
	int up = worker_db_up(w->db);

	sb_worker_db(w->slot, up);
	if (up)
		return;
	e = db_last_error(w->db);
	esc_text(text, sizeof(text), e, strnlen(e, sizeof(text)));
	sb_worker_db_error(w->slot, text, clock_now_us());
}

/* The status page's view as a worker has it: the listen queue and the
 * generation as the master last published them (scoreboard_sample). */
static int
worker_fill_status(struct status_view *v, void *arg)
{
	const struct worker_ctx *w = arg;
	struct sb_totals t;

	scoreboard_totals(w->sb, &t);
	return statuspage_view(v, w->sb, w->cfg->pool_name, t.generation,
	    t.listen_queue, t.listen_queue_len);
}

/*
 * The ping and status paths are the server's (PHP-FPM's ping.path and
 * pm.status_path, which PHP-FPM answers on its pool socket too), found
 * as PHP-FPM and the status socket find them (http_route: SCRIPT_NAME,
 * then REQUEST_URI); the rest the application's, which routes on the
 * raw REQUEST_URI.
 */
static int
worker_dispatch(struct worker_ctx *w, struct http_request *r)
{
	static char page[STATUS_MAX_REPLY];	/* touched only for the page */
	struct http_answer a;
	struct http_route q;

	http_route(r->params, r->params_len, &q);
	if (http_answer_ping(&a, w->cfg, q.method, q.method_len, q.path,
	    q.path_len) || statuspage_answer(&a, w->cfg, &q,
	    worker_fill_status, w, page, sizeof(page)))
		return http_send(r, &a);
	return w->app->handle(w->state, r);
}

/* Per condition, so that no client can make a line per request. */
static struct log_flood worker_flood_gone, worker_flood_cut;

static void
worker_client_gone(const struct http_request *r, int abandoned)
{
	/* Client bytes: escaped (esc.h) and bounded. */
	char m[ESC_SIZE(SCOREBOARD_METHOD_LEN)];
	char p[ESC_SIZE(SCOREBOARD_URI_LEN)];

	esc_text(m, sizeof(m), r->method, strlen(r->method));
	esc_text(p, sizeof(p), r->path, r->path_len);
	if (r->cut)
		(void)log_flood(&worker_flood_cut, CONFIG_LOG_WARNING,
		    "%s %s: cut a %zu-byte reply its client did not take "
		    "within request_write_timeout (%d ms); connection closed",
		    m, p, r->out_len, r->write_timeout_ms);
	else
		(void)log_flood(&worker_flood_gone, CONFIG_LOG_INFO,
		    "%s %s: client went away%s", m, p,
		    abandoned ? "; statement abandoned" : "");
}

/*
 * Serves one request read on fd; release ends the reply so that nginx
 * drops the connection (keep.h). The request is counted and logged
 * before its reply goes out (the status page and the access log have it
 * before the client does); the worker then shows SB_SENDING ("Finishing")
 * until the client has taken the reply or request_write_timeout cut it.
 * Returns 0 when the reply went out, -1 when the connection must be
 * closed.
 */
static int
worker_serve(struct worker_ctx *w, int fd, const struct fcgi_request *fr,
    int release)
{
	struct sb_slot *slot = w->slot;
	struct http_request r;
	int timeout = w->cfg->request_terminate_timeout, rc, gone;
	int64_t start = clock_now_us(), duration, cpu;

	sb_worker_phase(w->sb, slot, SB_READING);
	if (timeout > 0)
		worker_timer(timeout);
	http_request_init(&r, fd, fr);
	r.release = release;
	r.write_timeout_ms = w->pol.write_timeout_ms;
	r.on_phase = worker_on_phase;
	r.phase_arg = w;
	sb_worker_begin(w->sb, slot, r.method, strlen(r.method), r.path,
	    r.path_len, r.content_length, start);
	if (w->db != NULL)
		db_watch_client(w->db, fd);
	(void)worker_dispatch(w, &r);
	/* FastCGI needs an end: an application that gave none gets 500. */
	if (!r.replied)
		(void)http_error(&r, 500, "server_error", NULL);
	gone = w->db != NULL && db_client_gone(w->db);
	if (w->db != NULL)
		db_watch_client(w->db, -1);
	if (timeout > 0)
		worker_timer(0);
	duration = clock_now_us() - start;
	cpu = worker_cpu_since_last();
	sb_worker_end(slot, r.status, duration, cpu);
	sb_worker_phase(w->sb, slot, SB_SENDING);
	worker_note_db(w);
	scoreboard_count(w->sb, r.status);
	worker_log_access(w->cfg, &r, duration, cpu);
	/* Accounted for: now the client may have it. */
	rc = http_flush(&r);
	if (r.cut)
		scoreboard_count_cut(w->sb);
	sb_worker_phase(w->sb, slot, SB_IDLE);
	if (rc == -1 || gone)
		worker_client_gone(&r, gone);
	return rc == -1 || gone ? -1 : 0;
}

/*
 * Wakes the master's loop now rather than at its next tick, to look at
 * the scoreboard. Not a signal: a worker that gave up root may not
 * signal its root master.
 */
static void
worker_kick_master(void)
{
	uint64_t one = 1;

	if (write(worker_kick_fd, &one, sizeof(one)) == -1) {
		/* EAGAIN: kicks pending already; the master looks anyway */
	}
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
 * Recycling: keep serving until the master has a replacement, but keep
 * no connection from here on (keep.h).
 */
static void
worker_between_requests(struct worker_ctx *w, unsigned long long limit)
{
	if (limit == 0 || sb_worker_requests(w->slot) < limit)
		return;
	w->draining = 1;
	if (sb_worker_retire(w->slot)) {
		log_info("pm.max_requests reached after %llu requests",
		    (unsigned long long)sb_worker_requests(w->slot));
		worker_kick_master();
	}
}

static int
worker_epoll_add(int fd, uint32_t events)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.fd = fd;
	return epoll_ctl(worker_epfd, EPOLL_CTL_ADD, fd, &ev);
}

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
	if ((worker_epfd = epoll_create1(EPOLL_CLOEXEC)) == -1 ||
	    worker_epoll_add(w->listen_fd, EPOLLIN | EPOLLEXCLUSIVE) == -1 ||
	    worker_epoll_add(w->wake_fd, EPOLLIN | EPOLLEXCLUSIVE) == -1) {
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
worker_watch_db(struct db *db)
{
	static unsigned watched[DB_MAX_SOCKETS];	/* ids in the set */
	struct db_socket s[DB_MAX_SOCKETS];
	struct epoll_event ev;
	int i, due;

	if (db == NULL)
		return -1;
	due = db_sockets(db, s);
	for (i = 0; i < DB_MAX_SOCKETS; i++) {
		if (s[i].fd == -1 || s[i].id == watched[i])
			continue;
		memset(&ev, 0, sizeof(ev));
		ev.events = s[i].out ? EPOLLOUT : EPOLLIN;
		ev.data.fd = s[i].fd;
		if (epoll_ctl(worker_epfd, EPOLL_CTL_MOD, s[i].fd, &ev) == 0 ||
		    (errno == ENOENT && epoll_ctl(worker_epfd, EPOLL_CTL_ADD,
		    s[i].fd, &ev) == 0))
			watched[i] = s[i].id;
	}
	return due;
}

/* Wakes another idle worker for the listen socket (keep.h). */
static void
worker_pass_wake(const struct worker_ctx *w)
{
	uint64_t one = 1;

	if (write(w->wake_fd, &one, sizeof(one)) == -1) {
		/* EAGAIN: a wake-up is pending already */
	}
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

/* Index of fd among the released connections, or -1. */
static int
worker_released_find(const struct worker_ctx *w, int fd)
{
	unsigned i;

	for (i = 0; i < w->nreleased; i++)
		if (w->released[i].fd == fd)
			return (int)i;
	return -1;
}

static void
worker_released_drop(struct worker_ctx *w, unsigned i, int do_close)
{
	if (do_close)
		close(w->released[i].fd);
	w->released[i] = w->released[--w->nreleased];
}

/*
 * Ends the idle kept connection: the release record, then it is watched
 * until nginx closes it (keep.h). A full set loses its oldest member.
 */
static void
worker_release_held(struct worker_ctx *w)
{
	struct worker_released *r;
	unsigned i, oldest = 0;

	if (w->held == -1)
		return;
	if (conn_release(w->held, w->held_id) == -1) {
		close(w->held);		/* the peer is gone already */
		w->held = -1;
		return;
	}
	if (w->nreleased == KEEP_MAX_RELEASED) {
		for (i = 1; i < w->nreleased; i++)
			if (w->released[i].until_us <
			    w->released[oldest].until_us)
				oldest = i;
		worker_released_drop(w, oldest, 1);
	}
	r = &w->released[w->nreleased++];
	r->fd = w->held;
	r->until_us = clock_now_us() + KEEP_RELEASE_MS * 1000;
	w->held = -1;
}

static int worker_serve_conn(struct worker_ctx *, int, int, int);

/*
 * An event on a released connection, or its time up: nginx's close, or
 * a request that raced the release (served; its reply ends the
 * connection). expired: nothing there means a peer that never closes:
 * closed. A request is served even then: the worker may have been busy
 * with another for longer than the wait, and closing over it unread
 * would reset the connection under a request nginx already sent (a 502
 * for a POST).
 */
static void
worker_released_event(struct worker_ctx *w, unsigned i, int expired)
{
	int fd = w->released[i].fd;

	w->draining++;		/* whatever it asks, it is not kept */
	if (worker_serve_conn(w, fd, 1, 0) != -1)
		worker_released_drop(w, i, 0);	/* closed by now */
	else if (expired)
		worker_released_drop(w, i, 1);
	w->draining--;
}

/* Ends released connections whose peer did not close them in time;
 * returns the ms until the next such deadline (-1: none). */
static int
worker_released_expire(struct worker_ctx *w)
{
	int64_t now = clock_now_us(), next = -1, left;
	unsigned i = 0;

	while (i < w->nreleased) {
		if ((left = w->released[i].until_us - now) <= 0) {
			worker_released_event(w, i, 1);
			continue;
		}
		if (next == -1 || left < next)
			next = left;
		i++;
	}
	return next == -1 ? -1 : (int)((next + 999) / 1000);
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
	n = epoll_wait(worker_epfd, ev, WORKER_MAX_EVENTS, 0);
	for (i = 0; i < n; i++)
		if (ev[i].data.fd == w->listen_fd ||
		    ev[i].data.fd == w->wake_fd) {
			w->queued_until_us = now + WORKER_QUEUED_TRUST_US;
			return 1;
		}
	return 0;
}

/*
 * Reads and serves the next request on fd, then keeps the connection or
 * ends it (keep.h). kept: fd was kept from an earlier request (the held
 * connection or a released one) rather than just accepted; queued: the
 * listen socket was ready as it was picked. Returns 1 if fd is to be the
 * held connection, 0 if it is closed, -1 if nothing was read and it
 * stays as it was.
 */
static int
worker_serve_conn(struct worker_ctx *w, int fd, int kept, int queued)
{
	struct fcgi_request fr;
	enum keep_end end;

	/* A kept connection is woken by nginx's close too: it counts as
	 * busy (status page peaks) only once a request is there. */
	if (!kept)
		sb_worker_phase(w->sb, w->slot, SB_READING);
	worker_reopen_logs();
	switch (conn_read_request(fd, kept, &fr, &w->pol)) {
	case CONN_READ_NOTHING:
		return -1;
	case CONN_READ_CLOSED:
		return 0;
	case CONN_READ_REQUEST:
		break;
	}
	if (fr.keep_conn && !kept && !queued && !w->draining)
		queued = worker_queued(w);
	end = keep_end(fr.keep_conn, w->draining, queued);
	if (worker_serve(w, fd, &fr, end == KEEP_RELEASE) == -1 ||
	    end != KEEP_KEEP || (!kept && worker_epoll_add(fd,
	    EPOLLIN | EPOLLRDHUP) == -1)) {
		close(fd);
		return 0;
	}
	w->held_id = fr.id;
	return 1;
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
worker_accept_pause(struct worker_ctx *w, int err)
{
	(void)epoll_ctl(worker_epfd, EPOLL_CTL_DEL, w->listen_fd, NULL);
	(void)epoll_ctl(worker_epfd, EPOLL_CTL_DEL, w->wake_fd, NULL);
	w->accept_paused_us = clock_now_us() + LISTEN_ACCEPT_PAUSE_MS * 1000;
	(void)log_flood(&worker_flood_starved, CONFIG_LOG_ERROR, "accept "
	    "failed: %s; not accepting for %d ms, serving on",
	    strerror(err), LISTEN_ACCEPT_PAUSE_MS);
}

/* Puts fd back in the wait; one that is there already counts. */
static int
worker_epoll_readd(int fd)
{
	return worker_epoll_add(fd, EPOLLIN | EPOLLEXCLUSIVE) == 0 ||
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
	if (worker_epoll_readd(w->listen_fd) == -1 ||
	    worker_epoll_readd(w->wake_fd) == -1) {
		worker_accept_pause(w, errno);	/* try again later */
		return LISTEN_ACCEPT_PAUSE_MS;
	}
	w->accept_paused_us = 0;
	return -1;
}

/* One wait's outcome (keep.h's struct keep_seen) and the database. */
static void
worker_wait(struct worker_ctx *w, struct keep_seen *seen)
{
	struct epoll_event ev[WORKER_MAX_EVENTS];
	int n, i, idx, fd, ms = WORKER_IDLE_CHECK_MS, due, db_event = 0;

	memset(seen, 0, sizeof(*seen));
	if ((due = worker_watch_db(w->db)) != -1 && due < ms)
		ms = due;
	if ((due = worker_released_expire(w)) != -1 && due < ms)
		ms = due;
	if ((due = worker_accept_resume(w)) != -1 && due < ms)
		ms = due;
	n = epoll_pwait(worker_epfd, ev, WORKER_MAX_EVENTS, ms,
	    &worker_waitmask);
	seen->stopping = worker_stop;
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
		else if ((idx = worker_released_find(w, fd)) != -1)
			worker_released_event(w, (unsigned)idx, 0);
		else
			db_event = 1;
	}
	seen->held = w->held != -1;
	if (w->db != NULL)
		db_tick(w->db, db_event);	/* never blocks */
	sb_worker_db(w->slot, worker_db_up(w->db));
}

/* accept4 errors that concern one connection, not the socket (the
 * connection is gone; starvation, which leaves it queued, is not). */
static int
worker_accept_transient(int err)
{
	return err == EAGAIN || err == EINTR || err == ECONNABORTED ||
	    err == EPROTO || err == EPERM;
}

/* Acts on one wait's plan (keep.h). Returns -1 if the listen socket
 * failed. */
static int
worker_act(struct worker_ctx *w, const struct keep_seen *seen)
{
	struct keep_plan plan;
	int fd;

	if (seen->stopping)
		w->draining = 1;
	keep_pick(seen, &plan);
	if (plan.pass_wake)
		worker_pass_wake(w);
	if (plan.serve_held &&
	    worker_serve_conn(w, w->held, 1, seen->listen_ready) == 0)
		w->held = -1;
	if (plan.release_held || w->draining)
		worker_release_held(w);
	if (!plan.accept)
		return 0;
	if ((fd = listen_accept(w->listen_fd, &w->cfg->listen_allowed)) ==
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
	if (plan.release_on_accept)
		worker_release_held(w);
	if (worker_serve_conn(w, fd, 0, 0) == 1)
		w->held = fd;
	return 0;
}

/*
 * Graceful stop: no more accepts; the kept connection is released and
 * every released one watched until nginx closes it (a request that raced
 * the release is served), at most KEEP_RELEASE_MS.
 */
static void
worker_drain(struct worker_ctx *w)
{
	struct keep_seen seen;

	(void)epoll_ctl(worker_epfd, EPOLL_CTL_DEL, w->listen_fd, NULL);
	(void)epoll_ctl(worker_epfd, EPOLL_CTL_DEL, w->wake_fd, NULL);
	w->accept_paused_us = 0;	/* and they stay out */
	w->draining = 1;
	worker_release_held(w);
	while (w->nreleased > 0) {
		sb_worker_phase(w->sb, w->slot, SB_IDLE);
		worker_wait(w, &seen);
	}
}

static void
worker_loop(struct worker_ctx *w, unsigned long long limit)
{
	struct keep_seen seen;

	w->pol.read_timeout_ms = w->cfg->request_read_timeout * 1000;
	w->pol.write_timeout_ms = w->cfg->request_write_timeout * 1000;
	w->pol.max_conns = (unsigned)w->cfg->max_children;
	w->held = -1;
	if (worker_epoll_init(w) == -1)
		return;
	sb_worker_phase(w->sb, w->slot, SB_IDLE);
	(void)worker_cpu_since_last();	/* the first request counts from here */
	worker_kick_master();		/* ready: a replacement may retire one */
	while (!worker_stop) {
		sb_worker_phase(w->sb, w->slot, SB_IDLE);
		worker_wait(w, &seen);
		if (worker_act(w, &seen) == -1)
			break;
		worker_between_requests(w, limit);
	}
	worker_drain(w);
	sb_worker_phase(w->sb, w->slot, SB_EXITING);
}

/* The database connection, if the application uses one, then the
 * application's own start. Returns 0 or -1 (logged). */
static int
worker_start_app(const struct worker_args *args, struct worker_ctx *w)
{
	const struct app *app = args->app;
	struct app_env env;

	if (app->uses_db && (w->db = db_open(args->cfg->db_conninfo,
	    args->cfg->db_read_conninfo, args->cfg->db_timeout * 1000,
	    app->statements, app->nstatements)) == NULL) {
		log_err("%s: database handle: %s", __func__, strerror(errno));
		return -1;
	}
	worker_db = w->db;
	sb_worker_db(w->slot, worker_db_up(w->db));
	env.cfg = args->cfg;
	env.shared = args->shared;	/* loaded once, by the master */
	env.db = w->db;
	return app_init(app, &env, &w->state);
}

/*
 * The order matters. The access log is opened while still root (its
 * directory may be root's); the identity is then given up at once,
 * before anything reads a byte from a client or the database; the parent
 * death signal is set only after that, because changing credentials
 * clears it; the filter comes last, once everything that needs more than
 * serving requests (connecting, preparing, loading libraries) has run.
 */
void
worker_main(const struct worker_args *args)
{
	struct worker_ctx w = { .cfg = args->cfg, .app = args->app,
	    .sb = args->sb, .slot = &args->sb->slots[args->slot] };
	int code = 1;

	log_set_role("worker");
	worker_kick_fd = args->kick_fd;
	if (accesslog_open(args->cfg->access_log) == -1)
		log_err("access.log %s: %s", args->cfg->access_log,
		    strerror(errno));
	if (sandbox_drop(&args->ids) == -1)
		goto done;
	worker_signals();
	/* Die with the master: a pool without its master serves nobody. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 ||
	    getppid() != args->master)
		_exit(1);
	if (worker_start_app(args, &w) == -1)
		goto done;
	if (args->cfg->worker_seccomp && sandbox_filter() == -1)
		goto done;
	w.listen_fd = args->listen_fd;
	w.wake_fd = args->wake_fd;
	worker_loop(&w, worker_request_limit(args->cfg));
	code = 0;
done:
	app_fini(args->app, w.state);
	worker_db = NULL;
	db_close(w.db);
	exit(code);
}
