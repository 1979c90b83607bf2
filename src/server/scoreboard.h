/*
 * scoreboard.h: per-worker state and pool totals in shared memory.
 * The master maps it before forking; each worker writes only its own slot
 * (and adds to the pool counters atomically), the master reads every slot
 * for respawn, readiness, timeouts and the status page.
 * Readers race with writers and get a recent value; no pointers are
 * stored, so nothing torn can be followed.
 */
#ifndef CFPM_SCOREBOARD_H
#define CFPM_SCOREBOARD_H

#include <stdint.h>
#include <sys/types.h>

#define SCOREBOARD_URI_LEN	128	/* request URI kept per slot */
#define SCOREBOARD_DB_ERROR_LEN	160	/* last database failure per slot */

enum sb_state {
	SB_FREE = 0,	/* no process */
	SB_STARTING,	/* forked, loading keys, connecting */
	SB_IDLE,	/* waiting in accept() */
	SB_READING,	/* reading the request */
	SB_AUTH,	/* verifying the token */
	SB_DB,		/* waiting for PostgreSQL */
	SB_WRITING,	/* sending the reply */
	SB_EXITING,	/* leaving after its last request */
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

struct sb_slot {
	pid_t		pid;
	int		state;		/* enum sb_state */
	int		db_ok;		/* connection usable and prepared */
	int		ready;		/* connected and prepared once */
	int		retire;		/* worker asks to be replaced */
	int		signaled;	/* master sent SIGTERM */
	int		slow_logged;	/* current request already logged */
	int		killed;		/* master sent SIGKILL */
	unsigned	generation;	/* pool generation (reloads) */
	uint64_t	requests;	/* served by this process */
	int64_t		started_us;	/* process start, CLOCK_MONOTONIC */
	int64_t		req_start_us;	/* current request, 0 if none */
	int64_t		last_duration_us;
	int64_t		last_cpu_us;
	int		last_status;
	char		method[8];
	char		uri[SCOREBOARD_URI_LEN];
	/* Why this worker last answered 503 for the database, and when
	 * (CLOCK_MONOTONIC): the master's "database unavailable" line. */
	int64_t		db_error_us;
	char		db_error[SCOREBOARD_DB_ERROR_LEN];
};

struct sb_totals {
	uint64_t	accepted;		/* requests accepted */
	uint64_t	by_class[6];		/* [1]..[5]: 1xx..5xx */
	uint64_t	unavailable;		/* of those, 503 */
	uint64_t	slow;			/* over request_slowlog_timeout */
	uint64_t	terminated;		/* over request_terminate_timeout */
	uint64_t	respawns[SB_REASON_MAX];
	uint64_t	reloads;
	unsigned	max_active;		/* most busy workers seen */
	unsigned	listen_queue_max;	/* most queued connections seen */
	int64_t		start_time;		/* master start, Unix seconds */
};

struct scoreboard {
	unsigned	nslots;
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

/* The first SB_FREE slot, or -1 if all are taken. */
int scoreboard_free_slot(const struct scoreboard *sb);

/* The slot held by pid, or -1. */
int scoreboard_find(const struct scoreboard *sb, pid_t pid);

/* 1 if the slot's worker is handling a request. */
int scoreboard_busy(const struct sb_slot *slot);

/* Adds one finished request with its HTTP status to the pool totals
 * (by class, and 503s on their own). */
void scoreboard_count(struct scoreboard *sb, int status);

/* A fixed name for a state ("Idle", "Running", ...). */
const char *scoreboard_state_name(int state);

/* A fixed name for a respawn reason. */
const char *scoreboard_reason_name(int reason);

#endif
