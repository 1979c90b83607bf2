/*
 * scoreboard.h: per-worker state in shared memory (master owns it).
 * The master maps it before forking; each worker writes only its own slot,
 * the master reads every slot (respawn decisions, readiness, status).
 * Fields are written by one process and read racily by another: readers
 * get a recent value, never a torn pointer (no pointers are stored).
 */
#ifndef CFPM_SCOREBOARD_H
#define CFPM_SCOREBOARD_H

#include <stdint.h>
#include <sys/types.h>

#define SCOREBOARD_URI_LEN	128	/* request URI kept per slot */

enum sb_state {
	SB_FREE = 0,	/* no process */
	SB_STARTING,	/* forked, connecting to the database */
	SB_IDLE,	/* waiting in accept() */
	SB_READING,	/* reading the request */
	SB_AUTH,	/* verifying the token */
	SB_DB,		/* waiting for PostgreSQL */
	SB_WRITING,	/* sending the reply */
	SB_EXITING,	/* leaving after its last request */
};

struct sb_slot {
	pid_t		pid;
	int		state;		/* enum sb_state */
	int		db_ok;		/* connection usable and prepared */
	int		ready;		/* connected and prepared once */
	unsigned	generation;	/* pool generation (reloads) */
	uint64_t	requests;	/* served by this process */
	int64_t		started_us;	/* process start, CLOCK_MONOTONIC */
	int64_t		req_start_us;	/* current request, 0 if none */
	char		method[8];
	char		uri[SCOREBOARD_URI_LEN];
};

struct scoreboard {
	unsigned	nslots;
	uint64_t	accepted;	/* requests accepted, all workers */
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

/* A fixed name for a state ("Idle", "Running", ...). */
const char *scoreboard_state_name(int state);

#endif
