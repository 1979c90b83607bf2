/*
 * db.h: the worker's PostgreSQL connection (the only libpq user), and
 * optionally a second one for reads (db.read_conninfo).
 * Connects after fork, prepares the application's statements once per
 * connection, and reconnects with backoff when the connection is lost.
 * Every wait for the server is bounded: a statement's results and the
 * /health ping by their deadlines, a connection attempt (and the
 * settings and prepares after it) by its own. A request never waits for
 * a server that already stopped answering: it gets DB_UNAVAILABLE at
 * once while the idle worker's loop (db_sockets, db_tick) reconnects.
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
/* The libpq settings cfpm adds to a conninfo are dbplan.h's. */
#define DB_MAX_SOCKETS		2	/* db_sockets(): write and read link */

enum db_status {
	DB_OK = 0,
	DB_NOT_FOUND,		/* no such row */
	DB_UNAVAILABLE,		/* no usable connection: 503 */
	DB_ERROR,		/* the statement failed: 500 */
	DB_CANCELED,		/* the server cancelled it (statement_timeout,
				   an operator): nothing was stored */
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
 * (kept by reference: static storage) once, for at most timeout_ms; an
 * attempt still under way then goes on in db_tick(), and a failure is
 * logged and not fatal: later attempts follow with backoff. conninfo ""
 * means the PG* environment. read_conninfo (NULL or "": none) opens a
 * second connection, for the read_only statements alone (see db_exec).
 * timeout_ms (db.timeout) bounds every later wait for the server too.
 * Returns NULL (errno set) when out of memory or descriptors.
 */
struct db *db_open(const char *conninfo, const char *read_conninfo,
    int timeout_ms, const struct db_statement *stmts, size_t n);

/* Closes the connections and frees the handle (NULL is fine). */
void db_close(struct db *db);

/*
 * 1 if the main connection is usable as far as is known without I/O:
 * up and prepared, or closed by cfpm itself (db_watch_client's client
 * gone, an interrupt) and being made again.
 */
int db_is_up(const struct db *db);

/* A socket an idle worker watches for db_tick(). */
struct db_socket {
	int		 fd;		/* -1: nothing to watch */
	int		 out;		/* wait until writable, not readable */
	unsigned	 id;		/* changes whenever fd or out may have:
					   (re-)register it then */
};

/*
 * Fills s[0..DB_MAX_SOCKETS-1] (fd -1 where there is nothing to watch)
 * and returns the milliseconds until db_tick() is due of itself (a
 * connection attempt's deadline, a reconnect's backoff), -1 if only a
 * socket event makes it due. No I/O.
 */
int db_sockets(const struct db *db, struct db_socket *s);

/*
 * The idle worker's part, after each wait: readable says a socket of
 * db_sockets() had an event. Reads what the server sent on idle
 * connections (a notice, or the end of the connection on a restart:
 * a dead one is closed at once), moves connection attempts on and
 * starts the next one when its backoff is over. Never blocks.
 */
void db_tick(struct db *db, int readable);

/*
 * Round trip to the server within timeout_ms (at most db.timeout): DB_OK,
 * or DB_UNAVAILABLE when there is no connection or no answer in time
 * (the connection is dropped then). A connection attempt is driven for
 * that long at most, never started against a server that stopped
 * answering (for /health).
 */
enum db_status db_ping(struct db *db, int timeout_ms);

/*
 * Runs the prepared statement st (one of db_open's) with its parameters
 * (libpq's conventions: lengths and formats may be NULL for text) and
 * binary results, connecting first if needed (not after the server
 * stopped answering), all within db.timeout. A read_only statement
 * runs on the read connection when there is one; if that connection is
 * unusable, fails, or returns no row, the statement runs again on the
 * main connection, which decides (a standby that has not replayed a
 * write yet cannot make it look missing) unless it is unproven: made
 * after an outage, on a multi-host conninfo, within db.timeout, with no
 * write committed on it since (a replaced primary not demoted yet could
 * answer it): then a miss there is DB_UNAVAILABLE. DB_OK sets *out (release
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

/*
 * The caller's work while a statement is under way (db_exec_during):
 * 0, or nonzero when it no longer wants the statement's result.
 */
typedef int db_during_fn(void *arg);

/*
 * db_exec, with during(arg) run exactly once: as soon as the statement
 * is sent, while the server works on it (or, when nothing could be
 * sent, before the return), so that the caller's work and the round
 * trip overlap. Everything else is db_exec's, the deadline (db.timeout
 * from the call, during's time included) and the read connection's
 * rules too. If during returns nonzero, the statement in flight is read
 * to its end all the same (within the deadline: the connection stays
 * usable, and is dropped only as db_exec would drop it) and its result
 * discarded: DB_UNAVAILABLE, *out NULL, and no statement runs after it
 * (no retry on the main connection). A statement that is not read_only
 * is never sent before during returned (no overlap), and not at all if
 * it returned nonzero.
 */
enum db_status db_exec_during(struct db *db, const struct db_statement *st,
    const char *const *values, const int *lengths, const int *formats,
    db_during_fn *during, void *arg, struct db_result **out);

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
 * The eventfd that interrupts the request's waits for the server: a
 * write of an 8-byte 1 to it (async-signal-safe: the worker's
 * request_terminate_timeout handler) ends the wait under way at once and
 * every later one, until db_interrupt_clear(); the connection is dropped,
 * the outcome unknown.
 */
int db_interrupt_fd(const struct db *db);

/* Takes an interrupt back, after the request it was for (the next
 * request's waits are not interrupted). */
void db_interrupt_clear(struct db *db);

/*
 * The request's connection to watch while a statement runs (-1: none;
 * another fd: a new request, whose waits are not interrupted). If it
 * closes, the statement is abandoned (its connection dropped: the
 * server ends the statement itself, see db.c) and db_client_gone() says
 * so.
 */
void db_watch_client(struct db *db, int fd);
int db_client_gone(const struct db *db);

/* A short text for the last failure (no secrets), for logs. */
const char *db_last_error(const struct db *db);

#endif
