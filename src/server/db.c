/*
 * db.c: libpq connection, prepared statements and queries (worker only).
 * A statement counts only when its whole exchange succeeded: every result
 * read, ReadyForQuery seen, the connection still good and idle, and no
 * WARNING during it (a commit whose synchronous-replication wait was
 * cancelled). The connection's state changes are logged once each, and a
 * condition that repeats per request at most once per
 * LOG_FLOOD_INTERVAL_US.
 */
#include "server/db.h"

#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "util/log.h"
#include "util/clock.h"

/* 2000-01-01 minus 1970-01-01, in microseconds (PostgreSQL's epoch). */
#define DB_PG_EPOCH_US	(INT64_C(946684800) * 1000000)
#define DB_JSONB_VERSION 1	/* first byte of a binary jsonb value */

#define DB_MAX_ERROR	256	/* one log line's worth of libpq text */

struct db {
	PGconn		*conn;
	PGcancel *volatile cancel;	/* read by a signal handler */
	int		 up;		/* connected and prepared */
	unsigned	 conn_id;	/* counts successful connections */
	int		 client_fd;	/* the request's FastCGI connection */
	int		 client_gone;	/* it closed during this statement */
	int		 in_statement;	/* an exchange is under way */
	int		 warned;	/* a WARNING arrived during it */
	int		 farewell;	/* the server said why it is closing */
	int		 down_logged;	/* this outage has a line in the log */
	int64_t		 down_since_us;	/* 0 while up */
	int64_t		 next_try_us;	/* earliest reconnect */
	int		 backoff_ms;
	struct log_flood down_flood;	/* lost, or still unavailable */
	struct log_flood unknown_flood;	/* outcome unknown, link kept */
	char		 warning[DB_MAX_ERROR];
	char		 error[DB_MAX_ERROR];
	const struct db_statement *stmts;	/* the application's */
	size_t		 nstmts;
	char		 conninfo[];
};

/* "what: msg" into dst as one line (libpq's messages span lines). */
static void
db_format(char *dst, size_t cap, const char *what, const char *msg)
{
	size_t n;
	char *p;

	snprintf(dst, cap, "%s: %s", what, msg ? msg : "unknown error");
	for (p = dst; *p != '\0'; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
	n = strlen(dst);
	while (n > 0 && dst[n - 1] == ' ')
		dst[--n] = '\0';
}

static void
db_set_error(struct db *db, const char *what, const char *msg)
{
	db_format(db->error, sizeof(db->error), what, msg);
}

static int
db_prepare(struct db *db, const struct db_statement *st)
{
	PGresult *res;
	int ok;

	res = PQprepare(db->conn, st->name, st->sql, st->nparams, st->types);
	ok = PQresultStatus(res) == PGRES_COMMAND_OK;
	if (!ok)
		db_set_error(db, "prepare", PQresultErrorMessage(res));
	PQclear(res);
	return ok ? 0 : -1;
}

static void db_drop(struct db *);

/*
 * A dead connection is closed at once: its socket must not stay in an
 * idle worker's poll set, readable forever. db->error says why. The
 * first loss or failed attempt of an outage is logged; repeats go
 * through the flood limit, so a worker writes one line per
 * LOG_FLOOD_INTERVAL_US at most while the database stays away.
 */
static void
db_mark_down(struct db *db)
{
	int64_t now = clock_now_us();
	int was_up = db->up;

	db_drop(db);
	if (db->up)
		db->backoff_ms = 0;	/* just lost it: retry at once */
	db->up = 0;
	db->next_try_us = now + (int64_t)db->backoff_ms * 1000;
	db->backoff_ms = db->backoff_ms == 0 ? DB_BACKOFF_MIN_MS :
	    db->backoff_ms * 2;
	if (db->backoff_ms > DB_BACKOFF_MAX_MS)
		db->backoff_ms = DB_BACKOFF_MAX_MS;
	if (db->down_since_us == 0)
		db->down_since_us = now;
	if (log_flood(&db->down_flood, CONFIG_LOG_WARNING, "database: %s: %s",
	    was_up ? "connection lost" : "unavailable", db->error))
		db->down_logged = 1;
}

/*
 * The connection is back: one line, if the outage had one (a loss the
 * flood limit left out is not followed by a lone "back").
 */
static void
db_mark_up(struct db *db)
{
	if (db->down_logged)
		log_notice("database: connected and prepared, back after "
		    "%.1f s", (double)(clock_now_us() - db->down_since_us) /
		    1e6);
	db->down_logged = 0;
	db->down_since_us = 0;
}

/*
 * Server notices go to our log, one line each, not raw to stderr. A
 * WARNING during a statement puts its outcome in doubt: a commit whose
 * wait for a synchronous standby was cancelled succeeds with one. An
 * error outside a statement is the server saying why it closes the
 * connection: that becomes the reason logged for the loss.
 */
static void
db_notice(void *arg, const PGresult *res)
{
	const char *sev, *msg = PQresultErrorMessage(res);
	size_t n = strcspn(msg, "\n");
	struct db *db = arg;

	sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	if (sev != NULL && (strcmp(sev, "ERROR") == 0 ||
	    strcmp(sev, "FATAL") == 0 || strcmp(sev, "PANIC") == 0)) {
		db_set_error(db, "server", msg);
		db->farewell = 1;
		return;
	}
	if (db->in_statement && sev != NULL && strcmp(sev, "WARNING") == 0 &&
	    !db->warned) {
		db_format(db->warning, sizeof(db->warning), "server", msg);
		db->warned = 1;
	}
	log_info("database notice: %.*s", (int)n, msg);
}

/* Closes the connection; the cancel handle goes first (signal safety). */
static void
db_drop(struct db *db)
{
	PGcancel *c = db->cancel;

	db->cancel = NULL;
	if (c != NULL)
		PQfreeCancel(c);
	if (db->conn != NULL)
		PQfinish(db->conn);
	db->conn = NULL;
}

static int
db_connect(struct db *db)
{
	/* Defaults first: anything in conninfo (expanded last) wins. */
	const char *keys[] = { "connect_timeout", "application_name",
	    "dbname", NULL };
	const char *vals[] = { DB_CONNECT_TIMEOUT, "cfpm", db->conninfo,
	    NULL };
	size_t i;

	db_drop(db);
	db->farewell = 0;
	db->conn = PQconnectdbParams(keys, vals, 1);
	if (db->conn == NULL || PQstatus(db->conn) != CONNECTION_OK) {
		db_set_error(db, "connect", db->conn ?
		    PQerrorMessage(db->conn) : "out of memory");
		goto fail;
	}
	PQsetNoticeReceiver(db->conn, db_notice, db);
	for (i = 0; i < db->nstmts; i++)
		if (db_prepare(db, &db->stmts[i]) == -1)
			goto fail;
	db->cancel = PQgetCancel(db->conn);
	db->up = 1;
	db->conn_id++;
	db->backoff_ms = 0;
	db_mark_up(db);
	return 0;
fail:
	db_mark_down(db);
	return -1;
}

struct db *
db_open(const char *conninfo, const struct db_statement *stmts, size_t n)
{
	size_t len = strlen(conninfo);
	struct db *db;

	if ((db = calloc(1, sizeof(*db) + len + 1)) == NULL)
		return NULL;
	memcpy(db->conninfo, conninfo, len + 1);
	db->stmts = stmts;
	db->nstmts = n;
	db->client_fd = -1;
	(void)db_connect(db);	/* a failure is logged and retried later */
	return db;
}

void
db_close(struct db *db)
{
	if (db == NULL)
		return;
	db_drop(db);
	free(db);
}

int
db_is_up(const struct db *db)
{
	return db->up;
}

int
db_socket(const struct db *db, unsigned *conn_id)
{
	*conn_id = db->conn_id;
	return db->up && db->conn != NULL ? PQsocket(db->conn) : -1;
}

int
db_idle_check(struct db *db)
{
	PGnotify *n;

	if (!db->up)
		return 0;
	if (PQconsumeInput(db->conn) == 1 &&
	    PQstatus(db->conn) == CONNECTION_OK) {
		while ((n = PQnotifies(db->conn)) != NULL)
			PQfreemem(n);
		return 1;
	}
	if (!db->farewell)
		db_set_error(db, "idle connection", PQerrorMessage(db->conn));
	db_mark_down(db);
	return 0;
}

int
db_usable(struct db *db)
{
	if (db->up && PQstatus(db->conn) == CONNECTION_OK)
		return 1;
	if (db->up) {
		if (!db->farewell)
			db_set_error(db, "connection",
			    PQerrorMessage(db->conn));
		db_mark_down(db);
	}
	if (clock_now_us() < db->next_try_us)
		return 0;
	return db_connect(db) == 0;
}

/* 1 if the connection is good and out of any transaction. */
static int
db_link_idle(const struct db *db)
{
	return PQstatus(db->conn) == CONNECTION_OK &&
	    PQtransactionStatus(db->conn) == PQTRANS_IDLE;
}

/*
 * Classifies a failed statement: the connection's fault or the query's.
 * link_ok: the exchange ended cleanly (see db_link_idle); otherwise the
 * connection's state is unknown and it is dropped.
 */
static enum db_status
db_failure(struct db *db, PGresult *res, const char *what, int link_ok)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) :
	    NULL;

	db_set_error(db, what, res ? PQresultErrorMessage(res) :
	    PQerrorMessage(db->conn));
	if (state != NULL && strcmp(state, "57014") == 0 && link_ok)
		return DB_CANCELED;	/* query_canceled: the link is fine */
	if (state != NULL && strncmp(state, "22", 2) == 0 && link_ok)
		return DB_INVALID;	/* data exception: the values' fault */
	if (!link_ok || state == NULL || strncmp(state, "08", 2) == 0 ||
	    strncmp(state, "57P", 3) == 0 || strncmp(state, "53", 2) == 0) {
		db_mark_down(db);
		return DB_UNAVAILABLE;
	}
	return DB_ERROR;
}

enum db_status
db_ping(struct db *db)
{
	PGresult *res;
	enum db_status st;

	if (!db_usable(db))
		return DB_UNAVAILABLE;
	res = PQexec(db->conn, "");
	if (PQresultStatus(res) == PGRES_EMPTY_QUERY)
		st = DB_OK;
	else {
		/* Any failure here means the connection is not usable. */
		if (db_failure(db, res, "ping", db_link_idle(db)) !=
		    DB_UNAVAILABLE)
			db_mark_down(db);
		st = DB_UNAVAILABLE;
	}
	PQclear(res);
	return st;
}

/*
 * Waits for the server while watching the client: if nginx closes the
 * request's connection (the client went away), the statement is
 * cancelled so the worker stops work it can no longer deliver.
 */
static void
db_wait(struct db *db)
{
	struct pollfd p[2];
	char err[64];
	int n = 1;

	p[0].fd = PQsocket(db->conn);
	p[0].events = POLLIN;
	if (db->client_fd != -1 && !db->client_gone) {
		p[1].fd = db->client_fd;
		p[1].events = POLLRDHUP;
		p[1].revents = 0;
		n = 2;
	}
	if (poll(p, (nfds_t)n, -1) == -1)
		return;		/* EINTR: the caller just tries again */
	if (n == 2 && (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) {
		db->client_gone = 1;
		if (db->cancel != NULL)
			(void)PQcancel(db->cancel, err, sizeof(err));
	}
}

/*
 * The next result of the statement in progress, waiting with the watch
 * above (never blocking inside libpq); NULL once the exchange is over.
 */
static PGresult *
db_next_result(struct db *db)
{
	while (PQisBusy(db->conn)) {
		db_wait(db);
		if (!PQconsumeInput(db->conn))
			break;	/* PQgetResult now reports the failure */
	}
	return PQgetResult(db->conn);
}

/*
 * A statement's rows are trusted only if its whole exchange succeeded:
 * nothing after the one result (an error there means the server never
 * confirmed the commit), ReadyForQuery seen with the connection good and
 * out of any transaction, no WARNING on the way. Anything less after the
 * statement was sent leaves its outcome unknown: DB_UNAVAILABLE, never
 * DB_OK; the connection is dropped unless it is known to be idle.
 */
static enum db_status
db_unknown_outcome(struct db *db, const char *what, const char *why,
    int keep)
{
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "%s: outcome unknown", what);
	db_set_error(db, prefix, why);
	if (!keep)
		db_mark_down(db);
	else
		(void)log_flood(&db->unknown_flood, CONFIG_LOG_WARNING,
		    "database: %s", db->error);
	return DB_UNAVAILABLE;
}

/*
 * PQexecPrepared with binary results, the wait above and the commit
 * discipline: DB_OK with *out (PGRES_TUPLES_OK, the caller clears it)
 * only when the exchange is known to have succeeded, else the status
 * and *out NULL.
 */
static enum db_status
db_run(struct db *db, const char *what, const char *stmt, int n,
    const char *const *values, const int *lengths, const int *formats,
    PGresult **out)
{
	char later[DB_MAX_ERROR] = "";
	PGresult *res, *first = NULL;
	int extra = 0, link_ok;
	enum db_status st;

	*out = NULL;
	db->client_gone = 0;
	db->warned = 0;
	if (!PQsendQueryPrepared(db->conn, stmt, n, values, lengths, formats,
	    1))
		return db_unknown_outcome(db, what,
		    PQerrorMessage(db->conn), 0);
	db->in_statement = 1;
	while ((res = db_next_result(db)) != NULL) {
		if (first == NULL) {
			first = res;
			continue;
		}
		if (extra++ == 0)
			snprintf(later, sizeof(later), "%s",
			    PQresultStatus(res) == PGRES_FATAL_ERROR ?
			    PQresultErrorMessage(res) : "a second result");
		PQclear(res);
	}
	db->in_statement = 0;
	link_ok = db_link_idle(db);
	if (PQresultStatus(first) != PGRES_TUPLES_OK) {
		st = db_failure(db, first, what, link_ok && extra == 0);
		PQclear(first);
		return st;
	}
	if (extra == 0 && link_ok && !db->warned) {
		*out = first;
		return DB_OK;
	}
	PQclear(first);
	if (extra > 0)
		return db_unknown_outcome(db, what, later, 0);
	if (!link_ok)
		return db_unknown_outcome(db, what,
		    PQstatus(db->conn) != CONNECTION_OK ?
		    PQerrorMessage(db->conn) : "still in a transaction", 0);
	return db_unknown_outcome(db, what, db->warning, 1);
}

/*
 * A result is libpq's own: the handle the application holds is the
 * PGresult, so no copy or allocation stands between the rows and it.
 */
static const PGresult *
db_pg(const struct db_result *res)
{
	return (const PGresult *)(const void *)res;
}

enum db_status
db_exec(struct db *db, const struct db_statement *st,
    const char *const *values, const int *lengths, const int *formats,
    struct db_result **out)
{
	PGresult *res;
	enum db_status rc;

	*out = NULL;
	if (!db_usable(db))
		return DB_UNAVAILABLE;
	rc = db_run(db, st->what, st->name, st->nparams, values, lengths,
	    formats, &res);
	*out = (struct db_result *)(void *)res;
	return rc;
}

enum db_status
db_result_error(struct db *db, const struct db_statement *st,
    const char *why)
{
	db_set_error(db, st->what, why);
	return DB_ERROR;
}

int
db_result_rows(const struct db_result *res)
{
	return PQntuples(db_pg(res));
}

int
db_result_fields(const struct db_result *res)
{
	return PQnfields(db_pg(res));
}

const char *
db_result_value(const struct db_result *res, int row, int col, size_t *len)
{
	*len = (size_t)PQgetlength(db_pg(res), row, col);
	return PQgetvalue(db_pg(res), row, col);
}

int
db_result_int8(const struct db_result *res, int row, int col, int64_t *v)
{
	uint64_t be;
	size_t len;
	const char *p = db_result_value(res, row, col, &len);

	if (len != sizeof(be))
		return -1;
	memcpy(&be, p, sizeof(be));
	*v = (int64_t)be64toh(be);
	return 0;
}

int
db_result_timestamp(const struct db_result *res, int row, int col,
    int64_t *us)
{
	if (db_result_int8(res, row, col, us) == -1)
		return -1;
	*us += DB_PG_EPOCH_US;
	return 0;
}

const char *
db_result_jsonb(const struct db_result *res, int row, int col, size_t *len)
{
	const char *p = db_result_value(res, row, col, len);

	if (*len < 1 || p[0] != DB_JSONB_VERSION)
		return NULL;
	--*len;
	return p + 1;
}

void
db_result_free(struct db_result *res)
{
	PQclear((PGresult *)(void *)res);
}

void
db_cancel_async(struct db *db)
{
	PGcancel *c = db->cancel;
	char err[64];

	if (c != NULL)
		(void)PQcancel(c, err, sizeof(err));
}

void
db_watch_client(struct db *db, int fd)
{
	db->client_fd = fd;
	db->client_gone = 0;	/* a new request: no earlier client's fate */
}

int
db_client_gone(const struct db *db)
{
	return db->client_gone;
}

const char *
db_last_error(const struct db *db)
{
	return db->error;
}
