/*
 * worker.h: one pool process: its database connections (if its
 * application uses them), the application's state, and the serving
 * loop. Runs only in a child forked by the master.
 */
#ifndef CFPM_WORKER_H
#define CFPM_WORKER_H

#include <sys/types.h>

#include "server/app.h"
#include "server/sandbox.h"
#include "server/scoreboard.h"
#include "util/config.h"

/* What the master gives a new worker; all of it inherited across fork. */
struct worker_args {
	const struct config	*cfg;
	const struct app	*app;
	const void		*shared;	/* what app->load returned */
	struct sandbox_ids	 ids;		/* who it becomes (the master
						   resolved them) */
	int			 listen_fd;
	struct scoreboard	*sb;
	int			 slot;		/* index in sb->slots */
	pid_t			 master;
	int			 kick_fd;	/* eventfd: a write wakes the
						   master's loop */
	int			 wake_fd;	/* eventfd shared by the pool:
						   a write wakes one idle
						   worker (keep.h) */
};

/*
 * Becomes a worker: gives up its privileges, resets signals, connects to
 * PostgreSQL if the application uses it (after the fork, never before),
 * starts the application, then serves requests until told to stop (a
 * recycled one, pm.max_requests, is stopped by the master once its
 * replacement is ready). Never returns: exits 0 on a normal stop, 1 when
 * it cannot start (the master backs off before respawning).
 */
void worker_main(const struct worker_args *args) __attribute__((noreturn));

#endif
