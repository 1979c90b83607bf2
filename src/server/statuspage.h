/*
 * statuspage.h: pm.status_path as an answer (master and workers). The
 * status socket (admin.c, in the master) and the pool socket (worker.c,
 * as PHP-FPM answers it on its pool) serve the page alike: found as
 * http_route() finds it, its figures gathered from the scoreboard and
 * /proc, rendered by status.c. Only the listen queue and the pool's
 * generation come from the caller: the master samples them, a worker
 * shows the master's last sample (scoreboard_sample).
 */
#ifndef CFPM_STATUSPAGE_H
#define CFPM_STATUSPAGE_H

#include <stddef.h>

#include "util/config.h"
#include "server/http.h"
#include "server/scoreboard.h"
#include "server/status.h"

/*
 * Fills v for the pool named pool from sb: generation and the listen
 * queue (queued of limit) as given, each live worker's memory from
 * /proc/PID/status (-1 where unreadable), the time now. v points into
 * sb, pool and this module's per-process storage, valid until the next
 * call. Returns 0, or -1 if that storage cannot be had (out of memory).
 */
int statuspage_view(struct status_view *v, const struct scoreboard *sb,
    const char *pool, unsigned generation, unsigned queued, unsigned limit);

/*
 * Answers q if it asks for cfg->status_path (not empty): fills ans with
 * 200 and the page rendered into page (cap bytes) in the format and
 * detail its query asks for, with PHP-FPM's never-cache headers; 405 for
 * a method but GET and HEAD; 500 when fill(v, arg) fails or the page
 * does not fit. fill is called only for the page. Returns 1 then, 0 if
 * q is not the status path (ans untouched).
 */
int statuspage_answer(struct http_answer *ans, const struct config *cfg,
    const struct http_route *q, int (*fill)(struct status_view *, void *),
    void *arg, char *page, size_t cap);

#endif
