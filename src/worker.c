/*
 * worker.c: a pool process (child of the master). One libpq connection,
 * keys parsed once, then FCGX_Accept_r in a loop on the shared socket;
 * the kernel hands each new connection to one waiting worker.
 */
#include "worker.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "api.h"
#include "auth.h"
#include "clock.h"
#include "db.h"
#include "http.h"
#include "log.h"

static volatile sig_atomic_t worker_stop;
static int worker_listen_fd = -1;

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
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_handler = worker_on_stop;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
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

static void
worker_serve(struct api_ctx *ctx, FCGX_Request *req, struct sb_slot *slot)
{
	struct http_request r;

	slot->state = SB_READING;
	slot->req_start_us = clock_now_us();
	http_request_init(&r, req);
	snprintf(slot->method, sizeof(slot->method), "%s", r.method);
	snprintf(slot->uri, sizeof(slot->uri), "%.*s", (int)r.path_len,
	    r.path);
	if (api_handle(ctx, &r) == -1)
		log_info("%s %.*s: client went away", r.method,
		    (int)r.path_len, r.path);
	slot->state = SB_IDLE;
	slot->req_start_us = 0;
	slot->requests++;
	slot->db_ok = db_is_up(ctx->db);
	if (slot->db_ok)
		slot->ready = 1;
}

static void
worker_loop(struct api_ctx *ctx, int listen_fd, struct sb_slot *slot,
    unsigned long long limit)
{
	FCGX_Request req;

	if (FCGX_Init() != 0 || FCGX_InitRequest(&req, listen_fd, 0) != 0) {
		log_err("%s: libfcgi initialisation failed", __func__);
		return;
	}
	while (!worker_stop) {
		slot->state = SB_IDLE;
		if (FCGX_Accept_r(&req) < 0) {
			if (worker_stop)
				break;
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			log_err("%s: accept failed: %s", __func__,
			    strerror(errno));
			break;
		}
		worker_serve(ctx, &req, slot);
		FCGX_Finish_r(&req);
		if (limit != 0 && slot->requests >= limit) {
			log_info("pm.max_requests reached after %llu requests",
			    (unsigned long long)slot->requests);
			break;
		}
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
	slot->db_ok = slot->ready = db_is_up(ctx.db);
	worker_loop(&ctx, args->listen_fd, slot,
	    worker_request_limit(args->cfg));
	code = 0;
done:
	db_close(ctx.db);
	api_free(&ctx);
	auth_free(&auth);
	exit(code);
}
