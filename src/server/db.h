/*
 * db.h: the worker's one PostgreSQL connection (the only libpq user).
 * Connects after fork, prepares the read and write statements once per
 * connection, and reconnects with backoff when the connection is lost.
 * Results come back in binary form: no text parsing of ids or times.
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
#define DB_CONNECT_TIMEOUT	"5"	/* seconds, unless conninfo says */

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

/* One row of events; pointers valid until db_event_release(). */
struct db_event {
	int64_t		 id;
	const char	*subject;
	size_t		 subject_len;
	const char	*kind;
	size_t		 kind_len;
	const char	*payload;	/* JSON text */
	size_t		 payload_len;
	int64_t		 created_us;	/* microseconds since the Unix epoch */
	void		*res;		/* owning result */
};

/*
 * Makes the handle and tries to connect and prepare once (a failure is
 * logged and not fatal: later calls retry with backoff). conninfo ""
 * means the PG* environment. Returns NULL only when out of memory.
 */
struct db *db_open(const char *conninfo);

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
 * SELECT the row with this id and subject. DB_OK fills ev (release it);
 * DB_NOT_FOUND; DB_UNAVAILABLE when there is no connection or the
 * exchange did not complete cleanly (never a row from a partial one);
 * DB_CANCELED, DB_INVALID or DB_ERROR when the server refused it.
 */
enum db_status db_read_event(struct db *db, int64_t id, const char *subject,
    struct db_event *ev);

/* Frees the result behind ev. */
void db_event_release(struct db_event *ev);

/*
 * INSERT one event (payload is JSON text) in autocommit; DB_OK means the
 * row is committed and *id is set: the whole exchange succeeded. If
 * anything after the statement was sent falls short of that (the
 * connection drops, an error follows the row, the server's ReadyForQuery
 * never arrives, a WARNING such as a cancelled synchronous-replication
 * wait), the outcome is unknown: DB_UNAVAILABLE, and the caller must not
 * retry. DB_CANCELED, DB_INVALID and DB_ERROR: the server refused the
 * statement, nothing was stored.
 */
enum db_status db_insert_event(struct db *db, const char *subject,
    const char *kind, const char *payload, int64_t *id);

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
