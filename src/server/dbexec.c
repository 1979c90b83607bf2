/*
 * dbexec.c: what runs on the worker's database connections (worker only;
 * db.h): the prepared statements, the /health ping, and the results they
 * return; the connections themselves are db.c's.
 *
 * A statement counts only when its whole exchange succeeded: every result
 * read, ReadyForQuery seen, the connection still good and idle, and no
 * WARNING during it (a commit whose synchronous-replication wait was
 * cancelled). With db.read_conninfo a second connection (a link) serves
 * the read-only statements; the main one decides any read the second
 * cannot answer with a row.
 *
 * Every wait has a deadline: a statement's results and the ping are
 * polled against theirs (db.timeout, the ping's bound). A wait that runs
 * out, or that the request gives up (the client went away, an
 * interrupt), drops the connection: closing the socket is all a frozen
 * server can be told, and PQcancel is never called (libpq 15's connects
 * to the server and waits for it to close the cancel connection,
 * retrying on EINTR: against a frozen server, forever). The server ends
 * an abandoned statement itself: each session gets a statement_timeout
 * just under db.timeout and a client_connection_check_interval (db.c).
 */
#include "server/db.h"
#include "server/dbconn.h"

#include <endian.h>
#include <stdio.h>
#include <string.h>

#include "util/clock.h"

/* 2000-01-01 minus 1970-01-01, in microseconds (PostgreSQL's epoch). */
#define DB_PG_EPOCH_US	(INT64_C(946684800) * 1000000)
#define DB_JSONB_VERSION 1	/* first byte of a binary jsonb value */

/*
 * One db_exec_during: the statement and its parameters (libpq's
 * conventions), its deadline, and the caller's work to run once while
 * it is under way.
 */
struct db_call {
	const struct db_statement *st;
	const char *const *values;
	const int	*lengths;
	const int	*formats;
	int64_t		 deadline_us;
	db_during_fn	*during;	/* NULL once it ran */
	void		*arg;
	int		 unwanted;	/* during said the result is not */
};

/* What becomes of a connection whose statement's outcome is unknown. */
enum db_after {
	DB_AFTER_LOST,		/* dropped: the server failed (an outage) */
	DB_AFTER_CLOSED,	/* dropped by cfpm itself: made again at once */
	DB_AFTER_LEFT,		/* the same, for a client that went away */
	DB_AFTER_KEPT,		/* known to be idle: kept */
};

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

/*
 * What becomes of l after a failure db->error describes: dropped as an
 * outage (logged by db_mark_down), closed by cfpm and made again, or
 * kept (both logged through the flood limit, unless the worker logs the
 * cause itself).
 */
static enum db_status
db_after(struct db_link *l, enum db_after after)
{
	if (after == DB_AFTER_LOST)
		db_mark_down(l);
	else if (after != DB_AFTER_LEFT)
		(void)log_flood(&l->unknown_flood, CONFIG_LOG_WARNING,
		    "%s: %s%s", l->label, l->db->error,
		    after == DB_AFTER_CLOSED ? "; connection closed" : "");
	if (after == DB_AFTER_CLOSED || after == DB_AFTER_LEFT)
		db_recycle(l);
	return DB_UNAVAILABLE;
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
    enum db_after after)
{
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "%s: outcome unknown", what);
	db_set_error(l->db, prefix, why);
	return db_after(l, after);
}

/*
 * A wait for the server that ended without its answer (what: the
 * error's prefix): the connection is dropped, its statement (if any)
 * left to the server to end. No answer in time is an outage; the
 * request giving up (interrupted; its client gone, which the worker
 * logs) is not.
 */
static enum db_status
db_abandon(struct db_link *l, const char *what, enum db_wait w)
{
	if (w == DB_WAIT_TIMEOUT) {
		db_link_unanswered(l, what, l->db->wait_ms);
		return DB_UNAVAILABLE;
	}
	db_set_error(l->db, what, w == DB_WAIT_INTERRUPTED ? "interrupted" :
	    "the client went away");
	return db_after(l, w == DB_WAIT_INTERRUPTED ? DB_AFTER_CLOSED :
	    DB_AFTER_LEFT);
}

/*
 * Reads every result of the command just sent, until deadline_us at
 * most: the first is returned in *first, any later one counted in *extra
 * and described in later. DB_WAIT_READY once they are all in; anything
 * else leaves the exchange unfinished (*first may be set: clear it).
 */
static enum db_wait
db_collect(struct db_link *l, int64_t deadline_us, PGresult **first,
    int *extra, char *later, size_t laterlen)
{
	enum db_wait w;
	PGresult *res;

	*first = NULL;
	*extra = 0;
	for (;;) {
		if ((w = db_exchange(l, deadline_us)) != DB_WAIT_READY)
			return w;
		if ((res = PQgetResult(l->conn)) == NULL) {
			l->answered_us = clock_now_us();
			return DB_WAIT_READY;
		}
		if (*first == NULL) {
			*first = res;
			continue;
		}
		if ((*extra)++ == 0)
			snprintf(later, laterlen, "%s",
			    PQresultStatus(res) == PGRES_FATAL_ERROR ?
			    PQresultErrorMessage(res) : "a second result");
		PQclear(res);
	}
}

/*
 * The idle probe under way on l, waited for until its own deadline (or
 * deadline_us, if sooner), so that the connection is free again. 1 if
 * the server answered it.
 */
static int
db_probe_finish(struct db_link *l, int64_t deadline_us)
{
	char later[DB_MAX_ERROR];
	PGresult *first;
	enum db_wait w;
	int extra, ok;

	w = db_collect(l, l->until_us < deadline_us ? l->until_us :
	    deadline_us, &first, &extra, later, sizeof(later));
	/* The idle loop may have read the result already, not the end. */
	ok = w == DB_WAIT_READY && extra == 0 && (first != NULL ?
	    l->probing == DB_PROBE_SENT &&
	    PQresultStatus(first) == PGRES_EMPTY_QUERY :
	    l->probing == DB_PROBE_ANSWERED);
	l->probing = DB_PROBE_NONE;
	if (w == DB_WAIT_READY && !ok)
		(void)db_failure(l, first, "idle probe", 0);
	else if (!ok) {
		l->db->wait_ms = db_probe_ms(l->db);
		(void)db_abandon(l, "idle probe", w);
	}
	PQclear(first);
	return ok;
}

/*
 * 1 if l is up now (an idle probe under way finished first, within
 * deadline_us); a connection found dead is marked so.
 */
static int
db_link_up_now(struct db_link *l, int64_t deadline_us)
{
	if (l->state != DB_LINK_UP)
		return 0;
	if (PQstatus(l->conn) != CONNECTION_OK) {
		if (!l->farewell)
			db_set_error(l->db, "connection",
			    PQerrorMessage(l->conn));
		db_mark_down(l);
		return 0;
	}
	return l->probing == DB_PROBE_NONE || db_probe_finish(l, deadline_us);
}

/*
 * 1 if l is up, after driving a connection attempt (starting one when
 * the backoff allows) until deadline_us. Not after the server failed to
 * answer in time: a request that waited for it would wait for nothing,
 * and a pool of them would hold every worker; db_tick() tries then.
 */
static int
db_link_ready(struct db_link *l, int64_t deadline_us)
{
	if (db_link_up_now(l, deadline_us))
		return 1;
	if (l->unanswered || db_given_up(l->db, deadline_us))
		return 0;
	if (l->state == DB_LINK_DOWN) {
		if (clock_now_us() < l->next_try_us)
			return 0;
		db_link_begin(l);
	}
	return db_link_drive(l, deadline_us);
}

/* The caller's work, once: the first time the call gets here. */
static void
db_during(struct db_call *c)
{
	db_during_fn *fn = c->during;

	if (fn == NULL)
		return;
	c->during = NULL;
	c->unwanted = fn(c->arg) != 0;
}

/*
 * PQsendQueryPrepared on link l with binary results, the caller's work
 * while the server runs it, the wait above (until the call's deadline)
 * and the commit discipline: DB_OK with *out (PGRES_TUPLES_OK, the caller
 * clears it) only when the exchange is known to have succeeded, else the
 * status and *out NULL. libpq sends the statement before it returns (a
 * non-blocking flush), so the server works while the caller does.
 */
static enum db_status
db_run(struct db_link *l, struct db_call *c, PGresult **out)
{
	char later[DB_MAX_ERROR] = "", what[64];
	const struct db_statement *st = c->st;
	struct db *db = l->db;
	PGresult *first;
	int extra, link_ok;
	enum db_status rc;
	enum db_wait w;

	*out = NULL;
	db->warned = 0;
	if (!PQsendQueryPrepared(l->conn, st->name, st->nparams, c->values,
	    c->lengths, c->formats, 1))
		return db_unknown_outcome(l, st->what,
		    PQerrorMessage(l->conn), DB_AFTER_LOST);
	db->in_statement = 1;
	db_during(c);
	w = db_collect(l, c->deadline_us, &first, &extra, later,
	    sizeof(later));
	db->in_statement = 0;
	if (w != DB_WAIT_READY) {
		PQclear(first);
		snprintf(what, sizeof(what), "%s: outcome unknown", st->what);
		return db_abandon(l, what, w);
	}
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
		return db_unknown_outcome(l, st->what, later, DB_AFTER_LOST);
	if (!link_ok)
		return db_unknown_outcome(l, st->what,
		    PQstatus(l->conn) != CONNECTION_OK ?
		    PQerrorMessage(l->conn) : "still in a transaction",
		    DB_AFTER_LOST);
	return db_unknown_outcome(l, st->what, db->warning, DB_AFTER_KEPT);
}

/*
 * A read on db.read_conninfo's connection (a standby, maybe behind).
 * 1: *rc is the answer. 0: ask the write connection instead, because
 * there is no read connection now (the idle loop makes it: a read does
 * not wait for it), it failed (a read is safe to repeat) or it found no
 * row (the row may be a write it has not replayed yet: the primary
 * decides a 404, so an acknowledged write is never one). Not once the
 * request gave up (its client, an interrupt, the deadline) or the
 * caller no longer wants the result.
 */
static int
db_read_here(struct db *db, struct db_call *c, PGresult **out,
    enum db_status *rc)
{
	if (!db->has_read || !c->st->read_only ||
	    !db_link_up_now(&db->read, c->deadline_us))
		return 0;
	*rc = db_run(&db->read, c, out);
	if (c->unwanted)
		return 1;
	if (*rc == DB_UNAVAILABLE && !db_given_up(db, c->deadline_us))
		return 0;
	if (*rc == DB_OK && PQntuples(*out) == 0) {
		PQclear(*out);
		*out = NULL;
		return 0;
	}
	return 1;
}

/*
 * A read's miss on the main connection is the 404 (db_read_here): it is
 * trusted unless the connection is unproven, i.e. made within db.timeout
 * after an outage, to one of several hosts, with no write committed on it
 * since. Such a host may be a primary that a failover manager replaced
 * while it was frozen or cut off and has not demoted yet: it takes reads
 * as what it was, and an acknowledged write made on its replacement is
 * not there. A write cannot commit on it (its synchronous standby follows
 * the new primary), so a committed write proves the connection; until
 * then, or until the manager had db.timeout to demote it, the miss is
 * DB_UNAVAILABLE (503), never a stale 404.
 */
static enum db_status
db_miss_trusted(struct db_link *l, const struct db_statement *st,
    PGresult **res, enum db_status rc)
{
	if (rc != DB_OK)
		return rc;
	if (!st->read_only) {
		l->unproven_us = 0;	/* committed: the server is the primary */
		return rc;
	}
	if (l->unproven_us == 0 || PQntuples(*res) > 0)
		return rc;
	if (clock_now_us() >= l->unproven_us) {
		l->unproven_us = 0;
		return rc;
	}
	PQclear(*res);
	*res = NULL;
	db_set_error(l->db, st->what, "no row, on a connection made after an "
	    "outage that no committed write has proven yet");
	return DB_UNAVAILABLE;
}

enum db_status
db_ping(struct db *db, int timeout_ms)
{
	char later[DB_MAX_ERROR];
	struct db_link *l = &db->write;
	int64_t deadline_us;
	enum db_status st = DB_UNAVAILABLE;
	PGresult *first;
	enum db_wait w;
	int extra;

	db->wait_ms = timeout_ms < db->timeout_ms ? timeout_ms :
	    db->timeout_ms;
	deadline_us = clock_now_us() + (int64_t)db->wait_ms * 1000;
	if (!db_link_ready(l, deadline_us))
		return DB_UNAVAILABLE;
	if (!PQsendQuery(l->conn, "")) {
		db_set_error(db, "ping", PQerrorMessage(l->conn));
		db_mark_down(l);
		return DB_UNAVAILABLE;
	}
	w = db_collect(l, deadline_us, &first, &extra, later, sizeof(later));
	if (w != DB_WAIT_READY)
		(void)db_abandon(l, "ping", w);
	else if (PQresultStatus(first) == PGRES_EMPTY_QUERY && extra == 0 &&
	    db_link_idle(l))
		st = DB_OK;
	else	/* any failure here: the connection is not usable */
		(void)db_failure(l, first, "ping", 0);
	PQclear(first);
	return st;
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

/* The statement on the read connection, else on the main one (see
 * db_exec). */
static enum db_status
db_call_run(struct db *db, struct db_call *c, PGresult **res)
{
	enum db_status rc;

	if (db_read_here(db, c, res, &rc))
		return rc;
	if (!db_link_ready(&db->write, c->deadline_us))
		return DB_UNAVAILABLE;
	return db_miss_trusted(&db->write, c->st, res, db_run(&db->write, c,
	    res));
}

enum db_status
db_exec_during(struct db *db, const struct db_statement *st,
    const char *const *values, const int *lengths, const int *formats,
    db_during_fn *during, void *arg, struct db_result **out)
{
	struct db_call c = { st, values, lengths, formats, clock_now_us() +
	    (int64_t)db->timeout_ms * 1000, during, arg, 0 };
	PGresult *res = NULL;
	enum db_status rc;

	db->wait_ms = db->timeout_ms;
	/* A write is never sent before the caller's work is done: that work
	 * may be what decides it must not run (a token's signature). */
	if (!st->read_only)
		db_during(&c);
	rc = c.unwanted ? DB_UNAVAILABLE : db_call_run(db, &c, &res);
	db_during(&c);		/* nothing was sent: it runs all the same */
	if (c.unwanted) {	/* read to its end: the link is kept */
		PQclear(res);
		res = NULL;
		rc = DB_UNAVAILABLE;
	}
	*out = (struct db_result *)(void *)res;
	return rc;
}

enum db_status
db_exec(struct db *db, const struct db_statement *st,
    const char *const *values, const int *lengths, const int *formats,
    struct db_result **out)
{
	return db_exec_during(db, st, values, lengths, formats, NULL, NULL,
	    out);
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
