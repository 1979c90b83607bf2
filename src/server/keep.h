/*
 * keep.h: what a worker does with nginx's kept connections
 * (fastcgi_keep_conn on, upstream keepalive N). PURE: decisions over
 * what the worker's epoll reported, and the set of connections it
 * released; worker.c does the I/O they name.
 *
 * The model. A worker holds at most one kept connection. While it is
 * idle it waits in epoll for that connection, the shared listen socket
 * (EPOLLEXCLUSIVE) and the pool's wake eventfd together, and serves
 * whichever is ready; while it serves a request, the connection of that
 * request is the only one it holds. So no request ever waits on a
 * connection whose worker is busy with another (nginx sends one request
 * at a time on a connection), no idle kept connection can hold a worker
 * (libfcgi's stall), and the listen backlog stays the pool's one queue,
 * first come first served: a worker that goes to it gives its kept
 * connection up first. nginx's cached connections can then never
 * outnumber the workers, whatever keepalive N is.
 *
 * Ending a kept connection. FastCGI's keep-conn leaves the close to the
 * web server, and nginx takes a cached connection and writes a request
 * into it in one step, without looking at it first: a worker that closed
 * an idle kept connection would turn the request nginx is writing at
 * that moment into a 502 (nginx retries only idempotent methods after a
 * request was sent; never a POST). So a worker never closes a kept
 * connection itself. It ends one in either of two ways, both leaving the
 * close to nginx:
 *  - at the end of a reply: an empty FCGI_STDERR record after
 *    FCGI_END_REQUEST, in the same write. nginx keeps a connection only
 *    when its read ends exactly with FCGI_END_REQUEST, so it closes this
 *    one; no request can be written into it meanwhile (it is not in
 *    nginx's cache), and the worker closes its end right away.
 *  - while it is idle (the worker is about to accept, or must stop): the
 *    same record alone (conn_release). If the connection sits in nginx's
 *    cache, nginx sees it readable and closes it; if nginx had just
 *    taken it for a request, it skips the empty record in front of the
 *    reply and the request is served like any other (its reply ends the
 *    connection). The worker watches the released connection until
 *    nginx's close (or KEEP_RELEASE_MS, for a peer that is not nginx).
 * Either way no request is lost, refused or run twice: nginx never has
 * to retry.
 *
 * When not to keep. A reply ends the connection when nginx did not ask
 * to keep it, when the worker stops or is being recycled, and when the
 * listen socket was ready as the request was picked (or a moment before:
 * worker.c trusts a backlog it saw for a few milliseconds): connections
 * are queued, the worker's next stop is the backlog, and keeping the
 * connection would only mean releasing it a moment later. So under a
 * backlog, the saturation a closed-loop benchmark measures, connections
 * are not kept: nginx opens one per queued request, as with keep-conn
 * off; keeping them would need a worker to hold several connections, and
 * then a request could wait behind another on a busy worker.
 *
 * Why no design keeps them at saturation (issue 23; the figures, their
 * runs and the experiment: bench/README.md, "Kept connections at
 * saturation"). There nginx has more requests for the pool than it has
 * workers, and a request that finds every worker busy must wait
 * somewhere. nginx (OSS) has no queue of its own in front of an
 * upstream (`queue` is NGINX Plus's; past `max_conns` it answers 502):
 * lacking an idle cached connection it opens a new one at once. So the
 * request waits either on a kept connection, behind that connection's
 * worker, or on a new connection in the listen backlog, the pool's one
 * queue: every request that arrives while all workers are busy pays a
 * connect and an accept, whatever a worker does with the connection it
 * just answered on. Each candidate meets that:
 *  - Keep under a backlog, released at the next accept (the fairness
 *    rule below): the worker's next pick is the backlog's oldest, so
 *    the connection is released a moment later, and nginx's next
 *    request races the release. Measured at saturation: 28 % of
 *    requests on a kept connection, 7 % waiting behind another request
 *    (they raced the release), 0.3 system calls saved per request.
 *  - Also hold it while serving the accepted one: 60 % kept, 38 %
 *    waiting behind a busy worker, 3.4 system calls saved.
 *  - Keep only when the worker's next pick would be its own connection
 *    anyway: that needs nginx's next request on it before the worker
 *    is back in its wait, but nginx holds no request back for a kept
 *    connection, and in a closed loop the next one depends on this
 *    reply: it is the first candidate's lucky case.
 *  - nginx-side: `keepalive N` caps idle cached connections only (none
 *    is idle at saturation); several upstream servers (a socket per
 *    worker or group, least_conn) cut the one queue into several, each
 *    waiting behind its own workers while others idle, and a request
 *    queued on one still needs a new connection.
 *  - Kept connections owned by the pool, not a worker (any idle worker
 *    serves whichever is ready): either a process that holds them and
 *    hands ready ones over (SCM_RIGHTS both ways, about 4.5 us each
 *    here, plus its wake-up: as much as the 14.7 us the connection's
 *    life costs, and a process on the request path), or workers sharing
 *    one descriptor table (clone CLONE_FILES: an epoll re-arm, 0.5 us,
 *    instead of a connection), which ends what the pre-fork model
 *    isolates: a crashed worker's connections stay open in everyone's
 *    table, and one compromised worker reads every client's requests,
 *    tokens included.
 * So at saturation the churn stays: about 9 system calls per request
 * (nginx's about 7: socket, connect, close, epoll_ctl among them; the
 * worker's 2.3: accept, close, and a read that finds the request not
 * yet there), 15.6 to 15.9 against 24.9 in all at half the ceiling,
 * where 99 % of requests come on a kept connection. Below saturation the
 * rule above costs some: on one core a connection can wait in the
 * backlog for an idle worker that has not run yet, and at 80 % of the
 * ceiling 22 % of replies ended their connection, where keeping under a
 * backlog (the first candidate) kept 99.4 % with 2 requests in 43,609
 * racing a release. A rule that releases only when no other worker is
 * idle could keep most of them; it is neither built nor measured (the
 * race it accepts would need its own tests).
 *
 * Fairness. Woken with both its kept connection and the listen socket
 * ready, a worker serves its connection (nobody else can) and passes the
 * wake-up on through the wake eventfd, so that another idle worker, if
 * there is one, accepts at once rather than after this request. It then
 * ends that connection (the listen socket was ready), so its next pick
 * is the backlog: a backlog is never starved by kept connections.
 *
 * What remains. A worker killed by a signal (SIGKILL, a crash) while
 * idle closes its kept connection without the record; nginx drops it at
 * its next event-loop pass, and a request it had written into it in
 * between fails: retried by nginx if idempotent, a 502 for a POST, which
 * then never reached a worker (never stored, never doubled).
 */
#ifndef CFPM_KEEP_H
#define CFPM_KEEP_H

#include <stdint.h>

#define KEEP_RELEASE_MS		1000	/* a released connection's wait
					   for the peer's close */
#define KEEP_MAX_RELEASED	32	/* released connections watched
					   at once; past it the oldest is
					   closed */

/* What a worker's wait reported. */
struct keep_seen {
	int	released_ready;	/* a released connection had an event (its
				   close, or a request that raced the
				   release) or its time is up */
	int	held;		/* it holds an idle kept connection */
	int	held_ready;	/* bytes (or the close) arrived on it */
	int	listen_ready;	/* the listen socket or the wake eventfd was
				   ready, or the wait was poked or timed out
				   (accept is tried anyway) */
	int	stopping;	/* graceful stop: accept nothing more */
};

/* What to do about it, in this order. */
struct keep_plan {
	int	serve_released;	/* look at each released connection that
				   is ready: serve a request that raced its
				   release (never kept), or close it */
	int	pass_wake;	/* write the wake eventfd */
	int	serve_held;	/* read and serve the kept connection */
	int	release_held;	/* release it (conn_release) now */
	int	accept;		/* try to accept a connection */
	int	release_on_accept; /* if one came, release the kept one
				   before serving it (an accept that finds
				   nothing costs the kept connection
				   nothing) */
};

/* Fills p from s. */
void keep_pick(const struct keep_seen *s, struct keep_plan *p);

enum keep_end {
	KEEP_KEEP = 0,		/* end the reply plainly; hold the connection */
	KEEP_RELEASE,		/* end it with the release record; close */
	KEEP_CLOSE,		/* not asked to keep: end plainly; close */
};

/*
 * How to end the reply to a request about to be served: asked is the
 * request's FCGI_KEEP_CONN, keep_none 1 when no connection may be kept
 * (the worker stops or is being recycled, or this one was released
 * already), queued 1 when the listen socket was ready as the request was
 * picked.
 */
enum keep_end keep_end(int asked, int keep_none, int queued);

/*
 * The connections a worker released (conn_release), each watched until
 * its peer closes it or KEEP_RELEASE_MS have passed. The worker does the
 * I/O; the set only remembers.
 */
struct keep_released_conn {
	int		fd;
	int64_t		until_us;	/* then closed all the same */
	int		ready;		/* an event came, or the time is up */
};

struct keep_released {
	unsigned			n;
	struct keep_released_conn	conn[KEEP_MAX_RELEASED];
};

/*
 * Adds fd, released at now_us. A full set makes room by dropping the
 * one released first: returns its fd, for the caller to close, or -1.
 */
int keep_released_add(struct keep_released *set, int fd, int64_t now_us);

/* Marks fd ready (its socket had an event): 1, or 0 if fd is not one. */
int keep_released_mark(struct keep_released *set, int fd);

/* Marks ready every connection whose time is up at now_us; returns 1 if
 * any is ready. */
int keep_released_due(struct keep_released *set, int64_t now_us);

/* The milliseconds from now_us until the next connection's time is up
 * (rounded up), or -1 if the set is empty. */
int keep_released_next_ms(const struct keep_released *set, int64_t now_us);

/* Drops connection i (the last one takes its place). */
void keep_released_drop(struct keep_released *set, unsigned i);

#endif
