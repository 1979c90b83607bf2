/*
 * worker.c: a pool process (child of the master). One libpq connection,
 * keys parsed once, then FCGX_Accept_r in a loop on the shared socket;
 * the kernel hands each new connection to one waiting worker.
 */
#include "worker.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "accesslog.h"
#include "api.h"
#include "auth.h"
#include "clock.h"
#include "db.h"
#include "http.h"
#include "log.h"

#define WORKER_DB_RETRY_MS	500	/* idle reconnect check while down */

static volatile sig_atomic_t worker_stop, worker_reopen;
static int worker_listen_fd = -1;
static struct db *worker_db;		/* for the terminate timer */

/*
 * Graceful stop: set the flag and close our copy of the listen socket so
 * a worker blocked in (or about to enter) accept() leaves it at once; a
 * request in progress runs to completion (SA_RESTART).
 */
static void
worker_on_stop(int sig)
{
	(void)sig;
	worker_stop = 1;
	if (worker_listen_fd != -1) {
		close(worker_listen_fd);
		worker_listen_fd = -1;
	}
}

/* request_terminate_timeout: cancel the statement; the master kills us
 * only if the request still does not finish. */
static void
worker_on_alarm(int sig)
{
	(void)sig;
	if (worker_db != NULL)
		db_cancel_async(worker_db);
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
	sigset_t all;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);		/* fast stop: just die */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);		/* reload is the master's */
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = worker_on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	sa.sa_handler = worker_on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = worker_on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);	/* the master blocks them */
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

static int64_t
worker_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
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
    const struct sb_slot *slot)
{
	struct accesslog_entry e;

	if (cfg->access_log[0] == '\0')
		return;
	e.method = r->method;
	e.path = r->path;
	e.path_len = r->path_len;
	e.request_id = r->request_id;
	e.status = r->status;
	e.duration_us = slot->last_duration_us;
	e.cpu_us = slot->last_cpu_us;
	e.pid = slot->pid;
	e.time = (int64_t)time(NULL);
	accesslog_write(cfg->access_format, &e);
}

static void
worker_serve(struct api_ctx *ctx, FCGX_Request *req, struct scoreboard *sb,
    struct sb_slot *slot)
{
	int64_t cpu0 = worker_cpu_us();
	struct http_request r;
	int timeout = ctx->cfg->request_terminate_timeout;

	slot->slow_logged = 0;
	slot->req_start_us = clock_now_us();
	slot->state = SB_READING;
	if (timeout > 0)
		worker_timer(timeout);
	http_request_init(&r, req);
	snprintf(slot->method, sizeof(slot->method), "%s", r.method);
	snprintf(slot->uri, sizeof(slot->uri), "%.*s", (int)r.path_len,
	    r.path);
	if (api_handle(ctx, &r) == -1)
		log_info("%s %.*s: client went away", r.method,
		    (int)r.path_len, r.path);
	if (timeout > 0)
		worker_timer(0);
	slot->last_duration_us = clock_now_us() - slot->req_start_us;
	slot->last_cpu_us = worker_cpu_us() - cpu0;
	slot->last_status = r.status;
	slot->req_start_us = 0;
	slot->state = SB_IDLE;
	slot->requests++;
	slot->db_ok = db_is_up(ctx->db);
	if (slot->db_ok)
		slot->ready = 1;
	scoreboard_count(sb, r.status);
	worker_log_access(ctx->cfg, &r, slot);
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

static void
worker_between_requests(struct sb_slot *slot, unsigned long long limit)
{
	/* Recycling: keep serving until the master has a replacement. */
	if (limit != 0 && slot->requests >= limit && !slot->retire) {
		log_info("pm.max_requests reached after %llu requests",
		    (unsigned long long)slot->requests);
		slot->retire = 1;
	}
}

/*
 * While the database is down an idle worker keeps trying to connect, so
 * the pool becomes ready when PostgreSQL appears even with no traffic.
 * Returns 1 when a connection is waiting on the listen socket.
 */
static int
worker_wait_db(struct api_ctx *ctx, int listen_fd, struct sb_slot *slot)
{
	struct pollfd pfd = { .fd = listen_fd, .events = POLLIN };

	while (!worker_stop && !db_is_up(ctx->db)) {
		if (poll(&pfd, 1, WORKER_DB_RETRY_MS) != 0)
			return 1;
		if (db_usable(ctx->db))
			slot->db_ok = slot->ready = 1;
	}
	return 1;
}

static void
worker_loop(struct api_ctx *ctx, int listen_fd, struct scoreboard *sb,
    struct sb_slot *slot, unsigned long long limit)
{
	FCGX_Request req;

	if (FCGX_Init() != 0 || FCGX_InitRequest(&req, listen_fd, 0) != 0) {
		log_err("%s: libfcgi initialisation failed", __func__);
		return;
	}
	while (!worker_stop) {
		slot->state = SB_IDLE;
		worker_wait_db(ctx, listen_fd, slot);
		if (worker_stop)
			break;
		if (FCGX_Accept_r(&req) < 0) {
			if (worker_stop)
				break;
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			log_err("%s: accept failed: %s", __func__,
			    strerror(errno));
			break;
		}
		worker_reopen_logs();
		worker_serve(ctx, &req, sb, slot);
		FCGX_Finish_r(&req);
		worker_between_requests(slot, limit);
	}
	slot->state = SB_EXITING;
	FCGX_Free(&req, 1);
}

void
worker_main(const struct worker_args *args)
{
	struct sb_slot *slot = &args->sb->slots[args->slot];
	struct api_ctx ctx;
	struct auth auth;
	char err[CONFIG_ERR_LEN];
	int code = 1;

	log_set_role("worker");
	if (args->close_fd != -1)
		close(args->close_fd);	/* the status socket is the master's */
	worker_listen_fd = args->listen_fd;
	worker_signals();
	/* Die with the master: a pool without its master serves nobody. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1 ||
	    getppid() != args->master)
		_exit(1);
	memset(&ctx, 0, sizeof(ctx));
	if (auth_init(&auth, args->cfg, err) == -1) {
		log_err("keys: %s", err);
		_exit(1);
	}
	ctx.cfg = args->cfg;
	ctx.auth = &auth;
	ctx.slot = slot;
	if (api_init(&ctx) == -1 || (ctx.db = db_open(args->cfg->db_conninfo))
	    == NULL) {
		log_err("%s: out of memory", __func__);
		goto done;
	}
	worker_db = ctx.db;
	if (accesslog_open(args->cfg->access_log) == -1)
		log_err("access.log %s: %s", args->cfg->access_log,
		    strerror(errno));
	slot->db_ok = slot->ready = db_is_up(ctx.db);
	worker_loop(&ctx, args->listen_fd, args->sb, slot,
	    worker_request_limit(args->cfg));
	code = 0;
done:
	worker_db = NULL;
	db_close(ctx.db);
	api_free(&ctx);
	auth_free(&auth);
	exit(code);
}
