/*
 * admin.h: the master's own FastCGI socket for the status and ping pages
 * (pm.status_listen). The master answers it between loop iterations, so
 * the status page is served even while every pool worker is busy.
 */
#ifndef CFPM_ADMIN_H
#define CFPM_ADMIN_H

#include "config.h"
#include "listen.h"
#include "status.h"

struct admin;

/*
 * Binds cfg->status_listen (same forms as listen) non-blocking. Returns
 * the handle, or NULL (logged). The caller checks status_listen is set.
 */
struct admin *admin_open(const struct config *cfg);

/* The listening descriptor, for poll(). */
int admin_fd(const struct admin *a);

/*
 * Accepts and answers one request if one is waiting: the status page at
 * cfg->status_path (view filled by the caller's fill function), the ping
 * path, else 404. Bounded by MASTER_STATUS_IO_MS through SIGALRM.
 */
void admin_serve(struct admin *a, const struct config *cfg,
    void (*fill)(struct status_view *, void *), void *arg);

/* Closes the socket (removing the file if it made it) and frees a. */
void admin_close(struct admin *a);

#endif
