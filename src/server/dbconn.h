/*
 * dbconn.h: the inside of the db module (worker), for its files alone:
 * the handle and its connections ("links"), which db.c makes, waits on
 * and keeps (connect, set up, probe, drop), and what dbexec.c's
 * statement exchange needs of them. Only db.c, dbexec.c and dbplan.c
 * include libpq (tests/unit/test_layout.sh).
 */
#ifndef CFPM_DBCONN_H
#define CFPM_DBCONN_H

#include <stddef.h>
#include <stdint.h>

#include "server/dbplan.h"
#include "util/log.h"

struct db_statement;	/* db.h: the files that use its fields include it */

#define DB_MAX_ERROR	256	/* one log line's worth of libpq text */
#define DB_MAX_SETTINGS_SQL 512

enum db_link_state {
	DB_LINK_DOWN = 0,	/* no connection; next attempt at next_try_us */
	DB_LINK_CONNECTING,	/* PQconnectPoll under way, one target */
	DB_LINK_SETUP,		/* connected: the settings, then the prepares */
	DB_LINK_UP,		/* prepared: idle, or in a statement */
};

/* An idle connection's probe (an empty query). */
enum db_probe {
	DB_PROBE_NONE = 0,
	DB_PROBE_SENT,		/* its result has not come yet */
	DB_PROBE_ANSWERED,	/* it has: the end of the exchange has not */
};

/*
 * One libpq connection and its own outage bookkeeping: db.conninfo's
 * (writes, and reads when there is no other) and, optionally,
 * db.read_conninfo's (reads only).
 */
struct db_link {
	struct db	*db;		/* the handle it belongs to */
	const char	*label;		/* "database", "read database" */
	int		 reads_only;	/* prepares read statements only */
	struct db_plan	 plan;		/* what an attempt passes to libpq */
	int		 silent[DB_MAX_HOSTS];	/* host i did not answer */
	/* The connection and the attempt to make it. */
	enum db_link_state state;
	PGconn		*conn;
	size_t		 order[DB_MAX_TARGETS];	/* this attempt's targets */
	size_t		 target;	/* CONNECTING: order[target] tried */
	size_t		 connected;	/* SETUP, UP: the target it reached */
	int64_t		 answered_us;	/* UP: the server's last answer */
	int64_t		 unproven_us;	/* UP: until then a read's miss here
					   is not trusted (db_miss_trusted) */
	enum db_probe	 probing;	/* UP: an idle probe under way */
	size_t		 step;		/* SETUP: 0 settings, then statements */
	int		 step_sent;	/* SETUP: step's command is sent */
	int		 want_write;	/* CONNECTING, SETUP: waits to write */
	int64_t		 until_us;	/* CONNECTING, SETUP, a probe: given
					   up then */
	int		 timed_out;	/* this attempt: a host did not answer */
	char		 tried[DB_MAX_ERROR];	/* this attempt's failures */
	unsigned	 watch_id;	/* db_socket.id */
	/* Outages. */
	int		 unanswered;	/* the last failure: no answer in time */
	int		 recycling;	/* closed by cfpm itself: no outage */
	int		 farewell;	/* the server said why it is closing */
	int		 down_logged;	/* this outage has a line in the log */
	int64_t		 down_since_us;	/* 0 while up */
	int64_t		 next_try_us;	/* earliest reconnect */
	int		 backoff_ms;
	struct log_flood down_flood;	/* lost, or still unavailable */
	struct log_flood unknown_flood;	/* outcome unknown, link kept */
};

struct db {
	struct db_link	 write;		/* db.conninfo */
	struct db_link	 read;		/* db.read_conninfo, if has_read */
	int		 has_read;
	int		 timeout_ms;	/* db.timeout */
	int		 wait_ms;	/* the bound of the wait under way */
	int		 wake_fd;	/* eventfd: a write interrupts (the
					   worker's signal handler) */
	int		 interrupted;	/* a wait of this request saw it */
	int		 client_fd;	/* the request's FastCGI connection */
	int		 client_gone;	/* it closed during this statement */
	int		 in_statement;	/* an exchange is under way */
	int		 warned;	/* a WARNING arrived during it */
	char		 warning[DB_MAX_ERROR];
	char		 error[DB_MAX_ERROR];
	char		 settings_sql[DB_MAX_SETTINGS_SQL];
	const struct db_statement *stmts;	/* the application's */
	size_t		 nstmts;
};

/* How a wait for the server ended. */
enum db_wait {
	DB_WAIT_READY = 0,	/* the socket is ready */
	DB_WAIT_TIMEOUT,	/* the deadline passed */
	DB_WAIT_INTERRUPTED,	/* the interrupt eventfd (db_interrupt_fd) */
	DB_WAIT_CLIENT_GONE,	/* the request's client closed */
};

/* "what: msg" into dst (cap bytes) as one line (libpq's messages span
 * lines). */
void db_format(char *dst, size_t cap, const char *what, const char *msg);

/* db_format() into db->error, the text of db_last_error(). */
void db_set_error(struct db *db, const char *what, const char *msg);

/* Starts a new connection attempt on l, from its first target (a
 * failure marks it down, logged). */
void db_link_begin(struct db_link *l);

/*
 * Drives l's connection attempt until it ends, the request gives up or
 * deadline_us passes (the attempt then goes on in db_tick()). 1 if l is
 * up.
 */
int db_link_drive(struct db_link *l, int64_t deadline_us);

/*
 * A dead connection is closed at once (db->error says why) and the next
 * attempt scheduled with backoff; the first loss or failed attempt of an
 * outage is logged, repeats through the flood limit.
 */
void db_mark_down(struct db_link *l);

/* Closed by cfpm itself (a statement given up for the request's sake):
 * no outage, made again at once. */
void db_recycle(struct db_link *l);

/*
 * The server did not answer what (the error's prefix) within waited_ms:
 * an outage. l is marked down, and its host tried last until it answers
 * again; the requests do not wait for the next attempt (db_tick makes
 * it).
 */
void db_link_unanswered(struct db_link *l, const char *what, int waited_ms);

/* An idle probe's bound: DB_PROBE_TIMEOUT_MS, at most db.timeout. */
int db_probe_ms(const struct db *db);

/* 1 if the request cannot use the server any more: its client left, it
 * was interrupted, or deadline_us passed. */
int db_given_up(const struct db *db, int64_t deadline_us);

/*
 * Sends what libpq holds for the server on l and reads its answer until
 * PQgetResult would not block, or the wait ends otherwise (deadline_us,
 * the request giving up).
 */
enum db_wait db_exchange(struct db_link *l, int64_t deadline_us);

#endif
