/*
 * db.c: libpq connection, prepared statements and queries (worker only).
 * A statement counts only when its whole exchange succeeded: every result
 * read, ReadyForQuery seen, the connection still good and idle, and no
 * WARNING during it (a commit whose synchronous-replication wait was
 * cancelled). The connection's state changes are logged once each, and a
 * condition that repeats per request at most once per
 * LOG_FLOOD_INTERVAL_US. With db.read_conninfo a second connection
 * (a link) serves the read-only statements; the main one decides any
 * read the second cannot answer with a row.
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

/*
 * One libpq connection and its own outage bookkeeping: db.conninfo's
 * (writes, and reads when there is no other) and, optionally,
 * db.read_conninfo's (reads only).
 */
struct db_link {
	struct db	*db;		/* the handle it belongs to */
	const char	*label;		/* "database", "read database" */
	const char	*conninfo;
	int		 reads_only;	/* prepares read statements only */
	PGconn		*conn;
	PGcancel *volatile cancel;	/* read by a signal handler */
	int		 up;		/* connected and prepared */
	unsigned	 conn_id;	/* counts successful connections */
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
	struct db_link *volatile active;	/* its statement is running */
	int		 client_fd;	/* the request's FastCGI connection */
	int		 client_gone;	/* it closed during this statement */
	int		 in_statement;	/* an exchange is under way */
	int		 warned;	/* a WARNING arrived during it */
	char		 warning[DB_MAX_ERROR];
	char		 error[DB_MAX_ERROR];
	const struct db_statement *stmts;	/* the application's */
	size_t		 nstmts;
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
db_prepare(struct db_link *l, const struct db_statement *st)
{
	PGresult *res;
	int ok;

	res = PQprepare(l->conn, st->name, st->sql, st->nparams, st->types);
	ok = PQresultStatus(res) == PGRES_COMMAND_OK;
	if (!ok)
		db_set_error(l->db, "prepare", PQresultErrorMessage(res));
	PQclear(res);
	return ok ? 0 : -1;
}

static void db_drop(struct db_link *);

/*
 * A dead connection is closed at once: its socket must not stay in an
 * idle worker's poll set, readable forever. db->error says why. The
 * first loss or failed attempt of an outage is logged; repeats go
 * through the flood limit, so a worker writes one line per
 * LOG_FLOOD_INTERVAL_US at most while the database stays away.
 */
static void
db_mark_down(struct db_link *l)
{
	int64_t now = clock_now_us();
	int was_up = l->up;

	db_drop(l);
	if (l->up)
		l->backoff_ms = 0;	/* just lost it: retry at once */
	l->up = 0;
	l->next_try_us = now + (int64_t)l->backoff_ms * 1000;
	l->backoff_ms = l->backoff_ms == 0 ? DB_BACKOFF_MIN_MS :
	    l->backoff_ms * 2;
	if (l->backoff_ms > DB_BACKOFF_MAX_MS)
		l->backoff_ms = DB_BACKOFF_MAX_MS;
	if (l->down_since_us == 0)
		l->down_since_us = now;
	if (log_flood(&l->down_flood, CONFIG_LOG_WARNING, "%s: %s: %s",
	    l->label, was_up ? "connection lost" : "unavailable",
	    l->db->error))
		l->down_logged = 1;
}

/*
 * The connection is back: one line, if the outage had one (a loss the
 * flood limit left out is not followed by a lone "back").
 */
static void
db_mark_up(struct db_link *l)
{
	if (l->down_logged)
		log_notice("%s: connected and prepared, back after %.1f s",
		    l->label, (double)(clock_now_us() - l->down_since_us) /
		    1e6);
	l->down_logged = 0;
	l->down_since_us = 0;
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
	struct db_link *l = arg;
	struct db *db = l->db;

	sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	if (sev != NULL && (strcmp(sev, "ERROR") == 0 ||
	    strcmp(sev, "FATAL") == 0 || strcmp(sev, "PANIC") == 0)) {
		db_set_error(db, "server", msg);
		l->farewell = 1;
		return;
	}
	if (db->in_statement && sev != NULL && strcmp(sev, "WARNING") == 0 &&
	    !db->warned) {
		db_format(db->warning, sizeof(db->warning), "server", msg);
		db->warned = 1;
	}
	log_info("%s notice: %.*s", l->label, (int)n, msg);
}

/* Closes the connection; the cancel handle goes first (signal safety). */
static void
db_drop(struct db_link *l)
{
	PGcancel *c = l->cancel;

	l->cancel = NULL;
	if (c != NULL)
		PQfreeCancel(c);
	if (l->conn != NULL)
		PQfinish(l->conn);
	l->conn = NULL;
}

/*
 * Connects and prepares the application's statements (a read link only
 * those that read). Defaults first: anything in conninfo (expanded
 * last) wins. The TCP settings make a dead or partitioned server show
 * within seconds, idle or mid-statement (db.h).
 */
static int
db_connect(struct db_link *l)
{
	static const char *const keys[] = { "connect_timeout",
	    "keepalives", "keepalives_idle", "keepalives_interval",
	    "keepalives_count", "tcp_user_timeout", "application_name",
	    "dbname", NULL };
	const char *vals[] = { DB_CONNECT_TIMEOUT, "1", DB_KEEPALIVES_IDLE,
	    DB_KEEPALIVES_INTERVAL, DB_KEEPALIVES_COUNT, DB_TCP_USER_TIMEOUT,
	    "cfpm", l->conninfo, NULL };
	const struct db_statement *st;
	size_t i;

	db_drop(l);
	l->farewell = 0;
	l->conn = PQconnectdbParams(keys, vals, 1);
	if (l->conn == NULL || PQstatus(l->conn) != CONNECTION_OK) {
		db_set_error(l->db, "connect", l->conn ?
		    PQerrorMessage(l->conn) : "out of memory");
		goto fail;
	}
	PQsetNoticeReceiver(l->conn, db_notice, l);
	for (i = 0; i < l->db->nstmts; i++) {
		st = &l->db->stmts[i];
		if ((!l->reads_only || st->read_only) &&
		    db_prepare(l, st) == -1)
			goto fail;
	}
	l->cancel = PQgetCancel(l->conn);
	l->up = 1;
	l->conn_id++;
	l->backoff_ms = 0;
	db_mark_up(l);
	return 0;
fail:
	db_mark_down(l);
	return -1;
}

static void
db_link_init(struct db_link *l, struct db *db, const char *label,
    const char *conninfo, int reads_only)
{
	l->db = db;
	l->label = label;
	l->conninfo = conninfo;
	l->reads_only = reads_only;
	(void)db_connect(l);	/* a failure is logged and retried later */
}

struct db *
db_open(const char *conninfo, const char *read_conninfo,
    const struct db_statement *stmts, size_t n)
{
	size_t len = strlen(conninfo), rlen;
	struct db *db;
	char *copy;

	if (read_conninfo == NULL)
		read_conninfo = "";
	rlen = strlen(read_conninfo);
	if ((db = calloc(1, sizeof(*db) + len + rlen + 2)) == NULL)
		return NULL;
	copy = (char *)(db + 1);
	memcpy(copy, conninfo, len + 1);
	memcpy(copy + len + 1, read_conninfo, rlen + 1);
	db->stmts = stmts;
	db->nstmts = n;
	db->client_fd = -1;
	db->has_read = rlen > 0;
	db_link_init(&db->write, db, "database", copy, 0);
	if (db->has_read)
		db_link_init(&db->read, db, "read database", copy + len + 1,
		    1);
	return db;
}

void
db_close(struct db *db)
{
	if (db == NULL)
		return;
	db->active = NULL;
	db_drop(&db->read);
	db_drop(&db->write);
	free(db);
}

int
db_is_up(const struct db *db)
{
	return db->write.up;
}

int
db_socket(const struct db *db, unsigned *conn_id)
{
	*conn_id = db->write.conn_id;
	return db->write.up && db->write.conn != NULL ?
	    PQsocket(db->write.conn) : -1;
}

int
db_idle_check(struct db *db)
{
	struct db_link *l = &db->write;
	PGnotify *n;

	if (!l->up)
		return 0;
	if (PQconsumeInput(l->conn) == 1 &&
	    PQstatus(l->conn) == CONNECTION_OK) {
		while ((n = PQnotifies(l->conn)) != NULL)
			PQfreemem(n);
		return 1;
	}
	if (!l->farewell)
		db_set_error(db, "idle connection", PQerrorMessage(l->conn));
	db_mark_down(l);
	return 0;
}

/* db_usable() for one link. */
static int
db_link_usable(struct db_link *l)
{
	if (l->up && PQstatus(l->conn) == CONNECTION_OK)
		return 1;
	if (l->up) {
		if (!l->farewell)
			db_set_error(l->db, "connection",
			    PQerrorMessage(l->conn));
		db_mark_down(l);
	}
	if (clock_now_us() < l->next_try_us)
		return 0;
	return db_connect(l) == 0;
}

int
db_usable(struct db *db)
{
	return db_link_usable(&db->write);
}

/* 1 if the connection is good and out of any transaction. */
static int
db_link_idle(const struct db_link *l)
{
	return PQstatus(l->conn) == CONNECTION_OK &&
	    PQtransactionStatus(l->conn) == PQTRANS_IDLE;
}

/*
 * Classifies a failed statement: the connection's fault or the query's.
 * link_ok: the exchange ended cleanly (see db_link_idle); otherwise the
 * connection's state is unknown and it is dropped.
 */
static enum db_status
db_failure(struct db_link *l, PGresult *res, const char *what, int link_ok)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) :
	    NULL;

	db_set_error(l->db, what, res ? PQresultErrorMessage(res) :
	    PQerrorMessage(l->conn));
	if (state != NULL && strcmp(state, "57014") == 0 && link_ok)
		return DB_CANCELED;	/* query_canceled: the link is fine */
	if (state != NULL && strncmp(state, "22", 2) == 0 && link_ok)
		return DB_INVALID;	/* data exception: the values' fault */
	if (!link_ok || state == NULL || strncmp(state, "08", 2) == 0 ||
	    strncmp(state, "57P", 3) == 0 || strncmp(state, "53", 2) == 0 ||
	    strcmp(state, "25006") == 0) {
		/* 25006 read_only_sql_transaction: the server we reached
		 * no longer takes writes (a primary demoted under us). */
		db_mark_down(l);
		return DB_UNAVAILABLE;
	}
	return DB_ERROR;
}

enum db_status
db_ping(struct db *db)
{
	struct db_link *l = &db->write;
	PGresult *res;
	enum db_status st;

	if (!db_link_usable(l))
		return DB_UNAVAILABLE;
	res = PQexec(l->conn, "");
	if (PQresultStatus(res) == PGRES_EMPTY_QUERY)
		st = DB_OK;
	else {
		/* Any failure here means the connection is not usable. */
		if (db_failure(l, res, "ping", db_link_idle(l)) !=
		    DB_UNAVAILABLE)
			db_mark_down(l);
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
db_wait(struct db_link *l)
{
	struct db *db = l->db;
	struct pollfd p[2];
	char err[64];
	int n = 1;

	p[0].fd = PQsocket(l->conn);
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
		if (l->cancel != NULL)
			(void)PQcancel(l->cancel, err, sizeof(err));
	}
}

/*
 * The next result of the statement in progress, waiting with the watch
 * above (never blocking inside libpq); NULL once the exchange is over.
 */
static PGresult *
db_next_result(struct db_link *l)
{
	while (PQisBusy(l->conn)) {
		db_wait(l);
		if (!PQconsumeInput(l->conn))
			break;	/* PQgetResult now reports the failure */
	}
	return PQgetResult(l->conn);
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
db_unknown_outcome(struct db_link *l, const char *what, const char *why,
    int keep)
{
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "%s: outcome unknown", what);
	db_set_error(l->db, prefix, why);
	if (!keep)
		db_mark_down(l);
	else
		(void)log_flood(&l->unknown_flood, CONFIG_LOG_WARNING,
		    "%s: %s", l->label, l->db->error);
	return DB_UNAVAILABLE;
}

/*
 * Reads every result of the statement just sent: the first is returned,
 * any later one counted in *extra and described in later.
 */
static PGresult *
db_collect(struct db_link *l, int *extra, char *later, size_t laterlen)
{
	PGresult *res, *first = NULL;

	*extra = 0;
	while ((res = db_next_result(l)) != NULL) {
		if (first == NULL) {
			first = res;
			continue;
		}
		if ((*extra)++ == 0)
			snprintf(later, laterlen, "%s",
			    PQresultStatus(res) == PGRES_FATAL_ERROR ?
			    PQresultErrorMessage(res) : "a second result");
		PQclear(res);
	}
	return first;
}

/*
 * PQexecPrepared on link l with binary results, the wait above and the
 * commit discipline: DB_OK with *out (PGRES_TUPLES_OK, the caller clears
 * it) only when the exchange is known to have succeeded, else the
 * status and *out NULL.
 */
static enum db_status
db_run(struct db_link *l, const struct db_statement *st,
    const char *const *values, const int *lengths, const int *formats,
    PGresult **out)
{
	char later[DB_MAX_ERROR] = "";
	struct db *db = l->db;
	PGresult *first;
	int extra, link_ok;
	enum db_status rc;

	*out = NULL;
	db->client_gone = 0;
	db->warned = 0;
	if (!PQsendQueryPrepared(l->conn, st->name, st->nparams, values,
	    lengths, formats, 1))
		return db_unknown_outcome(l, st->what,
		    PQerrorMessage(l->conn), 0);
	db->in_statement = 1;
	db->active = l;
	first = db_collect(l, &extra, later, sizeof(later));
	db->active = NULL;
	db->in_statement = 0;
	link_ok = db_link_idle(l);
	if (PQresultStatus(first) != PGRES_TUPLES_OK) {
		rc = db_failure(l, first, st->what, link_ok && extra == 0);
		PQclear(first);
		return rc;
	}
	if (extra == 0 && link_ok && !db->warned) {
		*out = first;
		return DB_OK;
	}
	PQclear(first);
	if (extra > 0)
		return db_unknown_outcome(l, st->what, later, 0);
	if (!link_ok)
		return db_unknown_outcome(l, st->what,
		    PQstatus(l->conn) != CONNECTION_OK ?
		    PQerrorMessage(l->conn) : "still in a transaction", 0);
	return db_unknown_outcome(l, st->what, db->warning, 1);
}

/*
 * A read on db.read_conninfo's connection (a standby, maybe behind).
 * 1: *rc is the answer. 0: ask the write connection instead, because
 * there is no read connection now, it failed (a read is safe to repeat)
 * or it found no row (the row may be a write it has not replayed yet:
 * the primary decides a 404, so an acknowledged write is never one).
 */
static int
db_read_here(struct db *db, const struct db_statement *st,
    const char *const *values, const int *lengths, const int *formats,
    PGresult **out, enum db_status *rc)
{
	if (!db->has_read || !st->read_only || !db_link_usable(&db->read))
		return 0;
	*rc = db_run(&db->read, st, values, lengths, formats, out);
	if (*rc == DB_UNAVAILABLE && !db->client_gone)
		return 0;
	if (*rc == DB_OK && PQntuples(*out) == 0) {
		PQclear(*out);
		*out = NULL;
		return 0;
	}
	return 1;
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
	PGresult *res = NULL;
	enum db_status rc;

	*out = NULL;
	if (!db_read_here(db, st, values, lengths, formats, &res, &rc)) {
		if (!db_link_usable(&db->write))
			return DB_UNAVAILABLE;
		rc = db_run(&db->write, st, values, lengths, formats, &res);
	}
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
	struct db_link *l = db->active;
	PGcancel *c = l != NULL ? l->cancel : NULL;
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
