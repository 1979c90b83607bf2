/*
 * db.h: the worker's PostgreSQL connection (the only libpq user), and
 * optionally a second one for reads (db.read_conninfo).
 * Connects after fork, prepares the application's statements once per
 * connection, and reconnects with backoff when the connection is lost.
 * Results come back in binary form: no text parsing of ids or times; the
 * accessors below decode what the application reads.
 * A statement succeeds only when its whole exchange did (every result
 * read, ReadyForQuery seen, the connection good and idle, no WARNING on
 * the way); anything less after it was sent is DB_UNAVAILABLE. The
 * module logs the connection's losses and returns itself (once per
 * change, repeats at most once per LOG_FLOOD_INTERVAL_US): callers need
 * not log DB_UNAVAILABLE again.
 */
#ifndef CFPM_DB_H
#define CFPM_DB_H

#include <stddef.h>
#include <stdint.h>

#define DB_BACKOFF_MIN_MS	100	/* first reconnect delay */
#define DB_BACKOFF_MAX_MS	2000	/* longest reconnect delay */
/*
 * libpq settings cfpm supplies unless the conninfo sets them (TCP only):
 * a dead or partitioned server (packets dropped, not refused) shows
 * within seconds. connect_timeout applies to each host of a multi-host
 * conninfo; keepalives probe an idle or waiting connection;
 * tcp_user_timeout ends one whose sent data (or probes) go unacknowledged
 * that long, where TCP alone would retransmit for minutes.
 */
#define DB_CONNECT_TIMEOUT	"2"	/* seconds (libpq's minimum) */
#define DB_KEEPALIVES_IDLE	"2"	/* seconds idle before probing */
#define DB_KEEPALIVES_INTERVAL	"1"	/* seconds between probes */
#define DB_KEEPALIVES_COUNT	"3"	/* probes lost before giving up */
#define DB_TCP_USER_TIMEOUT	"4000"	/* ms unacknowledged before ending */

enum db_status {
	DB_OK = 0,
	DB_NOT_FOUND,		/* no such row */
	DB_UNAVAILABLE,		/* no usable connection: 503 */
	DB_ERROR,		/* the statement failed: 500 */
	DB_CANCELED,		/* cancelled by request_terminate_timeout */
	DB_INVALID,		/* the server refused the values (SQLSTATE
				   class 22, data exception): nothing was
				   stored, the request is at fault: 400 */
};

struct db;
struct db_result;	/* one statement's rows (binary format) */

/* A statement the application prepares on every connection. */
struct db_statement {
	const char		*name;		/* prepared statement name */
	const char		*what;		/* for errors: "read", ... */
	const char		*sql;
	int			 nparams;
	const unsigned int	*types;		/* parameter type OIDs */
	int			 read_only;	/* only reads: may run on the
						   read connection */
};

/*
 * Makes the handle and tries to connect and prepare the n statements
 * (kept by reference: static storage) once; a failure is logged and not
 * fatal: later calls retry with backoff. conninfo "" means the PG*
 * environment. read_conninfo (NULL or "": none) opens a second
 * connection, for the read_only statements alone (see db_exec).
 * Returns NULL only when out of memory.
 */
struct db *db_open(const char *conninfo, const char *read_conninfo,
    const struct db_statement *stmts, size_t n);

/* Closes the connection and frees the handle (NULL is fine). */
void db_close(struct db *db);

/*
 * 1 if the connection is up and prepared, trying to (re)connect first
 * when it is not and the backoff delay has passed. Never blocks longer
 * than one connection attempt.
 */
int db_usable(struct db *db);

/* 1 if the last known state is connected and prepared (no I/O). */
int db_is_up(const struct db *db);

/*
 * The connection's socket for an idle worker's poll set, or -1, and a
 * number that changes with every new connection (re-register then).
 */
int db_socket(const struct db *db, unsigned *conn_id);

/*
 * Called when the idle connection's socket is readable: reads what the
 * server sent (a notice, or the end of the connection on a restart) and
 * closes a dead connection at once, so the next request reconnects.
 * Returns 1 if the connection is still up.
 */
int db_idle_check(struct db *db);

/* Round trip to the server: DB_OK or DB_UNAVAILABLE (for /health). */
enum db_status db_ping(struct db *db);

/*
 * Runs the prepared statement st (one of db_open's) with its parameters
 * (libpq's conventions: lengths and formats may be NULL for text) and
 * binary results, connecting first if needed. A read_only statement
 * runs on the read connection when there is one; if that connection is
 * unusable, fails, or returns no row, the statement runs again on the
 * main connection, which decides (a standby that has not replayed a
 * write yet cannot make it look missing). DB_OK sets *out (release
 * it with db_result_free) only when the whole exchange succeeded, so a
 * row returned by an INSERT is committed. DB_UNAVAILABLE when there is
 * no connection or the exchange fell short after the statement was sent
 * (the outcome is unknown: the caller must not retry a write);
 * DB_CANCELED, DB_INVALID or DB_ERROR when the server refused it, and
 * nothing was stored. *out is NULL unless DB_OK.
 */
enum db_status db_exec(struct db *db, const struct db_statement *st,
    const char *const *values, const int *lengths, const int *formats,
    struct db_result **out);

/* Records that st's result was not what the application expects (why,
 * for db_last_error) and returns DB_ERROR. */
enum db_status db_result_error(struct db *db, const struct db_statement *st,
    const char *why);

/* Rows and columns of a result. */
int db_result_rows(const struct db_result *res);
int db_result_fields(const struct db_result *res);

/* A field's bytes and length (valid until db_result_free). */
const char *db_result_value(const struct db_result *res, int row, int col,
    size_t *len);

/* A binary int8 field; -1 if its length is not 8 bytes. */
int db_result_int8(const struct db_result *res, int row, int col,
    int64_t *v);

/* A binary timestamp(tz) field as microseconds since the Unix epoch; -1
 * if it is not one. */
int db_result_timestamp(const struct db_result *res, int row, int col,
    int64_t *us);

/* A binary jsonb field's JSON text and its length; NULL if it is not a
 * version-1 jsonb value. */
const char *db_result_jsonb(const struct db_result *res, int row, int col,
    size_t *len);

/* Frees a result (NULL is fine). */
void db_result_free(struct db_result *res);

/*
 * Asks the server to cancel the statement in progress (PQcancel). Safe in
 * a signal handler; does nothing when there is no connection.
 */
void db_cancel_async(struct db *db);

/*
 * The request's connection to watch while a statement runs (-1: none).
 * If it closes, the statement is cancelled (DB_CANCELED) and
 * db_client_gone() says so.
 */
void db_watch_client(struct db *db, int fd);
int db_client_gone(const struct db *db);

/* A short text for the last failure (no secrets), for logs. */
const char *db_last_error(const struct db *db);

#endif
