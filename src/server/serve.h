/*
 * serve.h: one request as a worker serves it, once it is read whole
 * (http_read_request): begun on the scoreboard, bounded by
 * request_terminate_timeout, answered (the ping and status paths are the
 * server's, the rest the application's), counted and logged, then sent
 * (worker). What reads requests and keeps connections is worker.c's.
 */
#ifndef CFPM_SERVE_H
#define CFPM_SERVE_H

#include <stdint.h>

#include "server/app.h"
#include "server/db.h"
#include "server/http.h"
#include "server/scoreboard.h"
#include "util/config.h"

/* What a worker serves with, for its whole life. */
struct serve {
	const struct config	*cfg;
	const struct app	*app;
	void			*state;		/* the application's */
	struct db		*db;		/* NULL if the app uses none */
	struct scoreboard	*sb;
	struct sb_slot		*slot;
	char			*page;		/* STATUS_MAX_REPLY bytes: the
						   status page, rendered */
	int64_t			 cpu_us;	/* the process's CPU time at the
						   last request's end */
};

/*
 * Readies s (cfg, app, sb and slot set, db and state as the worker made
 * them): the page's buffer and SIGALRM's target (serve_on_alarm: s->db's
 * interrupt). Returns 0, or -1 when out of memory.
 */
int serve_init(struct serve *s);

/* The worker starts serving: the first request's CPU time counts from
 * here. */
void serve_ready(struct serve *s);

/* Frees what serve_init() took and forgets SIGALRM's target. */
void serve_fini(struct serve *s);

/*
 * Serves r; release ends the reply so that nginx drops the connection
 * (keep.h). The request is counted and logged before its reply goes out
 * (the status page and the access log have it before the client does);
 * the slot shows SB_SENDING ("Finishing") until the client has taken it
 * or request_write_timeout cut it, then SB_IDLE. Returns 0 when the
 * reply went out, -1 when the connection must be closed (the client went
 * away, or the reply was cut: logged).
 */
int serve_request(struct serve *s, struct http_request *r, int release);

/* http_phase()'s target (http_request_new: arg is the struct serve): the
 * slot shows what the handler is doing. */
void serve_on_phase(void *arg, enum http_phase phase);

/* The SIGALRM handler: request_terminate_timeout, armed for each request
 * by serve_request(). Async-signal-safe. */
void serve_on_alarm(int sig);

/* 1 if the database is usable (always, for an application without). */
int serve_db_up(const struct serve *s);

#endif
