/*
 * scoreboard.h: per-worker state and pool totals in shared memory. The
 * master maps it (MAP_SHARED) before it forks the pool; the workers write
 * their own slots, the master reads every slot for respawn, readiness,
 * timeouts, the database log and the status page, which it renders on
 * the status socket; a worker renders it too for the status path on the
 * pool socket, reading every slot.
 *
 * OWNERSHIP, the one rule. Every slot has two parts and each part has
 * exactly one writer:
 *  - slot->master (struct sb_by_master) is written by the master only,
 *    field by field with relaxed atomic stores (scoreboard_claim,
 *    scoreboard_set_pid, scoreboard_set_life, scoreboard_release). The
 *    master reads its own fields as it likes; any other process (a
 *    worker serving the status page on the pool socket) only through
 *    scoreboard_read(), scoreboard_live() and the walk over the live
 *    slots (SCOREBOARD_FOREACH_LIVE), which load each field atomically:
 *    each is a figure on its own, old or new, never torn.
 *  - slot->worker (struct sb_by_worker) is written by the worker holding
 *    the slot only, through the sb_worker_*() functions, from fork() to
 *    exit. The master writes it only while no process holds the slot:
 *    it zeroes it before fork() (scoreboard_claim) and after reaping
 *    (scoreboard_release). Any other process reads it only through
 *    scoreboard_read() and scoreboard_read_db_error().
 *  - In the totals, accepted, by_class, unavailable, active, max_active,
 *    max_children_reached and replies_cut are the workers' atomic updates
 *    (sb_worker_begin, sb_worker_phase, scoreboard_count,
 *    scoreboard_count_cut; see PEAKS); every other total is the master's,
 *    stored atomically (scoreboard_add, scoreboard_sample,
 *    scoreboard_set_start); all are read through scoreboard_totals().
 *    scoreboard->max_children is the master's, read by the workers.
 *  - While the master clears a slot's worker part (claim, release) a
 *    worker's page may copy it half cleared: a page shows it as it is,
 *    as a torn request record (below), and acts on nothing it shows.
 *
 * READING ACROSS PROCESSES. The worker's single fields (phase, ready,
 * db_ok, retire) are __atomic stores and loads, relaxed: each means
 * something alone, and where order matters (a worker ready, or asking to
 * be replaced) the worker's write to the master's eventfd orders it.
 * The two multi-field records, the request record (struct sb_request:
 * current request's start, method and URI; requests served; the last
 * one's status, duration and CPU) and the last database error (struct
 * sb_db_error), are each behind a sequence counter (a seqlock): the
 * worker makes the counter odd, writes, makes it even; a reader copies
 * between two equal even readings. So the slow log and the status page
 * name the request whose timing they show, not half of the next one.
 * Why not a lock: the writer is a worker on its request path and must
 * never wait for the master, and a worker killed mid-write would hold a
 * lock forever. A reader instead gives up after SCOREBOARD_READ_TRIES and
 * says so: the writer stopped mid-update (stopped or dying), the copy is
 * then stable but may mix two records, and its fields are used as they
 * are. The copy itself is a memcpy between the fences, as in the Linux
 * kernel's seqcount: the __atomic fences are compiler barriers too.
 * No pointers are stored, so nothing torn can be followed; client bytes
 * are escaped wherever they are shown (status_request()).
 *
 * WAITING FOR A CONNECTION. Idle workers wait in epoll on the shared
 * listen socket with EPOLLEXCLUSIVE (worker.c), one woken per connection,
 * and on the connection nginx kept to them (keep.h), and accept without
 * blocking: phase SB_IDLE means "in that wait".
 */
#ifndef CFPM_SCOREBOARD_H
#define CFPM_SCOREBOARD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SCOREBOARD_METHOD_LEN	8	/* request method kept per slot */
#define SCOREBOARD_URI_LEN	128	/* request URI kept per slot */
#define SCOREBOARD_DB_ERROR_LEN	160	/* last database failure per slot */
#define SCOREBOARD_READ_TRIES	64	/* seqlock reads before giving up */
#define SCOREBOARD_CLASSES	6	/* by_class[1..5]: 1xx..5xx */
#define SCOREBOARD_LINE		64	/* a slot starts a cache line */

/*
 * PEAKS, counted at the event rather than sampled. A worker entering a
 * request (a busy phase, from one that is not: sb_worker_phase) adds one
 * to totals.active and raises totals.max_active to the result with a
 * compare-and-swap loop; leaving subtracts one. When its add makes
 * active reach scoreboard->max_children (pm.max_children: every worker
 * busy, the next connection waits in the listen queue), it counts one
 * max_children_reached: once per time the pool fills up, as PHP-FPM
 * counts the limit once until the pool is below it again (while a
 * reload's new workers overlap the old ones, the pool holds more than
 * pm.max_children and reaching it is counted all the same). The slot's
 * phase says whether its worker is counted: entering stores the busy
 * phase before the add, leaving subtracts before it stores the idle
 * one, and the master takes a worker that died inside a request (a
 * crash, request_terminate_timeout's SIGKILL) off the count when it
 * releases the slot. The one gap: an outside SIGKILL landing between a
 * worker's phase store and its add (two adjacent instructions) leaves
 * active one lower for good; peaks then read one low, never high.
 */

/*
 * What the master did to the slot's process (slot->master.life). There is
 * no "starting" here: start-up is the worker's to report (phase
 * SB_STARTING, then ready); the master records only its own acts.
 *   FREE     -> RUNNING   claimed and forked
 *   RUNNING  -> RETIRING  SIGTERM: replaced (reload, recycle); its exit
 *                         is not a respawn
 *   RUNNING or RETIRING -> KILLED
 *                         SIGKILL at request_terminate_timeout; only
 *                         once, and its death is a "terminate" respawn
 *                         if it was still current (pool.c)
 *   any      -> FREE      reaped
 * A stop signals every worker without changing this: once the pool stops
 * no death is counted.
 */
enum sb_life {
	SB_LIFE_FREE = 0,	/* no process */
	SB_LIFE_RUNNING,	/* forked; the master sent it nothing */
	SB_LIFE_RETIRING,	/* SIGTERM sent: replaced */
	SB_LIFE_KILLED,		/* SIGKILL sent: request_terminate_timeout */
};

/*
 * What the worker is doing (slot->worker.phase), set by the worker. The
 * flags beside it are not phases: ready is sticky (connected and
 * prepared at least once, what a replacement waits for) and db_ok follows
 * the database whatever the phase.
 */
enum sb_phase {
	SB_STARTING = 0,	/* forked: privileges, keys, connecting */
	SB_IDLE,		/* waiting in epoll for a connection */
	SB_READING,		/* reading the request */
	SB_AUTH,		/* verifying the token */
	SB_DB,			/* waiting for PostgreSQL */
	SB_WRITING,		/* the handler makes its reply */
	SB_SENDING,		/* the reply goes out, within
				   request_write_timeout (PHP-FPM's
				   "Finishing"): the request is counted
				   and logged already */
	SB_EXITING,		/* leaving after its last request */
};

/* Why the master started a worker (respawn counters). */
enum sb_reason {
	SB_REASON_EXIT = 0,	/* a worker exited on its own */
	SB_REASON_CRASH,	/* a worker was killed by a signal */
	SB_REASON_RECYCLE,	/* pm.max_requests */
	SB_REASON_RELOAD,	/* SIGHUP / SIGUSR2 */
	SB_REASON_TERMINATE,	/* request_terminate_timeout */
	SB_REASON_MAX,
};

/* The master's part of a slot: the master alone reads and writes it. */
struct sb_by_master {
	pid_t		pid;
	int		life;		/* enum sb_life */
	unsigned	generation;	/* pool generation (reloads) */
	int64_t		started_us;	/* fork, CLOCK_MONOTONIC */
	int64_t		started_at;	/* fork, Unix seconds */
	uint64_t	slow_logged;	/* request number logged as slow, 0 */
};

/* The request record (behind req_seq). */
struct sb_request {
	uint64_t	requests;	/* finished by this process */
	int64_t		start_us;	/* current request, 0 if none */
	int64_t		content_length;	/* current or last request's, -1 */
	char		method[SCOREBOARD_METHOD_LEN];
	char		uri[SCOREBOARD_URI_LEN];
	int		last_status;
	int64_t		last_duration_us;
	int64_t		last_cpu_us;
};

/* Why this worker last answered 503 for the database, and when
 * (CLOCK_MONOTONIC): the master's "database unavailable" line. */
struct sb_db_error {
	int64_t		at_us;		/* 0: none yet */
	char		text[SCOREBOARD_DB_ERROR_LEN];
};

/* The worker's part of a slot: see OWNERSHIP above. */
struct sb_by_worker {
	int		phase;		/* enum sb_phase */
	int		ready;		/* connected and prepared once */
	int		db_ok;		/* connection usable and prepared */
	int		retire;		/* asks to be replaced (one way) */
	unsigned	req_seq;	/* odd while req is being written */
	unsigned	db_seq;		/* odd while db is being written */
	struct sb_request req;
	struct sb_db_error db;
};

struct sb_slot {
	struct sb_by_master	master;
	struct sb_by_worker	worker;
} __attribute__((aligned(SCOREBOARD_LINE)));	/* no line shared by two
						   workers' writes */

/* One slot as read at one moment (scoreboard_read). */
struct sb_view {
	struct sb_by_master	master;
	int			phase;
	int			ready;
	int			db_ok;
	int			retire;
	struct sb_request	req;
};

struct sb_totals {
	uint64_t	accepted;		/* requests begun */
	uint64_t	by_class[SCOREBOARD_CLASSES];	/* [1]..[5] */
	uint64_t	unavailable;		/* of those, 503 */
	uint64_t	slow;			/* over request_slowlog_timeout */
	uint64_t	terminated;		/* over request_terminate_timeout */
	uint64_t	respawns[SB_REASON_MAX];
	uint64_t	reloads;
	uint64_t	max_children_reached;	/* times active reached
						   max_children (PEAKS) */
	uint64_t	replies_cut;		/* given up at
						   request_write_timeout */
	int		active;			/* workers in a request now */
	unsigned	max_active;		/* most at once (PEAKS) */
	unsigned	listen_queue_max;	/* most queued connections seen */
	unsigned	listen_queue;		/* the last sample of them */
	unsigned	listen_queue_len;	/* the listen queue's size */
	unsigned	generation;		/* the pool's now */
	int64_t		start_time;		/* master start, Unix seconds */
};

struct scoreboard {
	unsigned	nslots;
	unsigned	max_children;	/* master: pm.max_children now */
	struct sb_totals totals;
	struct sb_slot	slots[];
};

/*
 * Maps a zeroed shared scoreboard with nslots slots (MAP_SHARED, so forked
 * workers see the same pages). Returns NULL on failure (errno set).
 */
struct scoreboard *scoreboard_create(unsigned nslots);

/* Unmaps it. */
void scoreboard_destroy(struct scoreboard *sb);

/* Master. The first SB_LIFE_FREE slot, or -1 if all are taken. */
int scoreboard_free_slot(const struct scoreboard *sb);

/* Master. The slot held by pid, or -1. */
int scoreboard_find(const struct scoreboard *sb, pid_t pid);

/*
 * Master, before fork(): resets both parts of a free slot for a new
 * worker of generation (phase SB_STARTING, life SB_LIFE_RUNNING, started
 * now_us on the monotonic clock and now_s in Unix seconds, pid still 0:
 * the master sets it once fork() returns).
 */
void scoreboard_claim(struct sb_slot *slot, unsigned generation,
    int64_t now_us, int64_t now_s);

/*
 * Master, once no process holds the slot (reaped, or fork() failed):
 * takes a worker that died inside a request off sb's count of requests
 * in progress (PEAKS), then clears the slot back to SB_LIFE_FREE.
 */
void scoreboard_release(struct scoreboard *sb, struct sb_slot *slot);

/* Master. Sets the pool size max_children_reached compares with (at
 * start and when a reload installs a new pm.max_children). */
void scoreboard_set_max_children(struct scoreboard *sb, unsigned n);

/* Master. The slot's process, once fork() returned it. */
void scoreboard_set_pid(struct sb_slot *slot, pid_t pid);

/* Master. What it did to the slot's process (enum sb_life). */
void scoreboard_set_life(struct sb_slot *slot, enum sb_life life);

/* Master. Adds n to one of its own totals in sb (respawns, reloads,
 * slow, terminated). */
void scoreboard_add(uint64_t *total, uint64_t n);

/* Master. The pool's start, Unix seconds. */
void scoreboard_set_start(struct scoreboard *sb, int64_t t);

/*
 * Master. Publishes the pool's generation and a sample of its listen
 * queue (queued connections of limit) for the pages the workers serve,
 * and raises the queue's peak to it.
 */
void scoreboard_sample(struct scoreboard *sb, unsigned generation,
    unsigned queued, unsigned limit);

/* Any process. 1 if a process holds the slot (its life is not FREE). */
int scoreboard_live(const struct sb_slot *slot);

/*
 * Any process. The index of the first slot from i on that a process
 * holds, or sb->nslots when none is left: the one walk over the live
 * slots, as SCOREBOARD_FOREACH_LIVE writes it.
 */
unsigned scoreboard_next_live(const struct scoreboard *sb, unsigned i);

/* The statement after it, once for each live slot of sb, in index order,
 * with i (unsigned) its index. */
#define SCOREBOARD_FOREACH_LIVE(sb, i)					\
	for ((i) = scoreboard_next_live((sb), 0); (i) < (sb)->nslots;	\
	    (i) = scoreboard_next_live((sb), (i) + 1))

/* The live slots, and what their workers do now (scoreboard_census). */
struct sb_census {
	unsigned	live;		/* processes: one per live slot */
	unsigned	busy;		/* in a request (scoreboard_busy) */
	unsigned	idle;		/* waiting for a connection (SB_IDLE);
					   starting and exiting ones are
					   neither busy nor idle */
};

/*
 * Any process. Counts sb's live slots into c by their worker's phase,
 * each loaded atomically: the pool's figures on the status page and in
 * the master's STATUS= line.
 */
void scoreboard_census(const struct scoreboard *sb, struct sb_census *c);

/*
 * Any process but the slot's worker. Copies the slot into v: the master's
 * part and the worker's flags by atomic loads, its request record
 * through the seqlock. Returns 0, or -1 if the record kept changing
 * for SCOREBOARD_READ_TRIES reads (v is filled all the same; see READING
 * ACROSS PROCESSES).
 */
int scoreboard_read(const struct sb_slot *slot, struct sb_view *v);

/* As scoreboard_read(), for the last database error. */
int scoreboard_read_db_error(const struct sb_slot *slot,
    struct sb_db_error *e);

/* Copies the totals into t, each by an atomic load. */
void scoreboard_totals(const struct scoreboard *sb, struct sb_totals *t);

/* 1 if the viewed worker is handling a request. */
int scoreboard_busy(const struct sb_view *v);

/* Worker. Adds one finished request with its HTTP status to the pool
 * totals (by class, and 503s on their own), atomically. */
void scoreboard_count(struct scoreboard *sb, int status);

/* Worker. A reply its client did not take within request_write_timeout
 * was cut (the connection closed): one more in the pool's total. */
void scoreboard_count_cut(struct scoreboard *sb);

/* A fixed name for cfpm's phase ("Idle", "Reading", "Database", ...). */
const char *scoreboard_phase_name(int phase);

/* A fixed name for a respawn reason. */
const char *scoreboard_reason_name(int reason);

/*
 * The worker's writes to its own slot (slot->worker): the only ones after
 * fork(). Each is one relaxed atomic store, or one seqlock update.
 */

/*
 * Worker. Sets its phase. Entering a request (a busy phase, from one that
 * is not) or leaving it updates sb's requests in progress, their peak and
 * max_children_reached, atomically (PEAKS).
 */
void sb_worker_phase(struct scoreboard *sb, struct sb_slot *slot,
    enum sb_phase phase);

/*
 * Worker. A request begins at now_us: counts it in sb's accepted total
 * and records its start, its CONTENT_LENGTH (-1 if none) and the first
 * bytes of its method and URI (truncated, NUL-terminated, unescaped).
 */
void sb_worker_begin(struct scoreboard *sb, struct sb_slot *slot,
    const char *method, size_t mlen, const char *uri, size_t ulen,
    long long content_length, int64_t now_us);

/* Worker. The request ended: no current request, one more served, and
 * its status, duration and CPU as the last request's. */
void sb_worker_end(struct sb_slot *slot, int status, int64_t duration_us,
    int64_t cpu_us);

/* Worker. Requests this worker has finished (its own count). */
uint64_t sb_worker_requests(const struct sb_slot *slot);

/* Worker. The database connection is up (and prepared) or not; up once
 * makes the worker ready for good. */
void sb_worker_db(struct sb_slot *slot, int up);

/* Worker. Asks to be replaced (pm.max_requests). Returns 1 if this call
 * asked, 0 if it had asked already. */
int sb_worker_retire(struct sb_slot *slot);

/* Worker. Records why it answers 503 for the database (text: already
 * escaped, truncated to fit) and when. */
void sb_worker_db_error(struct sb_slot *slot, const char *text,
    int64_t now_us);

#endif
