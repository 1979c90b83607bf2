/*
 * admin.h: the master's own FastCGI socket for the status and ping pages
 * (pm.status_listen). The master answers it from its event loop, so the
 * status page is served even while every pool worker is busy, and no
 * client of this socket can ever make the master wait: the socket and
 * every connection are non-blocking, each connection has a deadline, and
 * libfcgi never runs in the master (fcgi.h checks and frames the
 * records).
 */
#ifndef CFPM_ADMIN_H
#define CFPM_ADMIN_H

#include <poll.h>

#include "util/config.h"
#include "server/listen.h"
#include "server/status.h"

#define ADMIN_MAX_CONNS		32	/* status clients at once; more are
					   closed at once */
#define ADMIN_POLL_FDS		(ADMIN_MAX_CONNS + 1)	/* and the socket */

struct admin;

/*
 * Serves inherited (a listening socket systemd passed: taken over, never
 * unlinked) or, when it is NULL, binds cfg->status_listen (same forms as
 * listen) non-blocking. Returns the handle, or NULL (logged). The caller
 * checks status_listen is set.
 */
struct admin *admin_open(const struct config *cfg,
    const struct listen_sock *inherited);

/*
 * Fills pfd (ADMIN_POLL_FDS entries) with what the master's poll should
 * watch: every connection (reading or writing) and the socket. Returns
 * the milliseconds to the earliest connection deadline, or -1 if none.
 */
int admin_poll_fds(const struct admin *a, struct pollfd *pfd);

/*
 * After poll: accepts, reads, answers and writes what pfd reports, and
 * closes connections past their deadline (cfg->request_read_timeout from
 * the accept, for reading and writing together). The status page is
 * rendered from the view the caller's fill function gives (-1: no view,
 * 500; statuspage.h); the ping path answers cfg->ping_response; anything
 * else 404. Never blocks.
 */
void admin_process(struct admin *a, const struct pollfd *pfd,
    const struct config *cfg, int (*fill)(struct status_view *, void *),
    void *arg);

/*
 * In a freshly forked worker: closes the socket and every connection
 * (the copies only; the master keeps serving them) without freeing.
 */
void admin_forget(struct admin *a);

/* Closes the socket (removing the file if it made it) and frees a. */
void admin_close(struct admin *a);

#endif
