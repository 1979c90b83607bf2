/*
 * db.c: the worker's database handle and its connections (worker only;
 * db.h, dbconn.h): each link made from its plan (dbplan.h), one host of
 * a multi-host conninfo at a time, set up and prepared, waited on with a
 * deadline, probed while idle, dropped and made again; the statements
 * that run on them are dbexec.c's.
 *
 * libpq is used only in its non-blocking form: a frozen server still
 * completes TCP handshakes and acknowledges data, so nothing below the
 * protocol ever ends a wait for it. A connection is made with
 * PQconnectStartParams/PQconnectPoll, each host of a multi-host conninfo
 * in turn for at most its connect_timeout (capped at db.timeout),
 * because libpq enforces connect_timeout and moves on to the next host
 * after one only in its blocking call; the settings and prepares after
 * it are one deadline more. A request drives a connection attempt within
 * its own deadline, unless the server has just failed to answer in time:
 * then the idle worker's loop (db_sockets, db_tick) makes the attempts.
 * The connection's state changes are logged once each, and a condition
 * that repeats per request at most once per LOG_FLOOD_INTERVAL_US.
 *
 * An idle connection is probed (an empty query) once it has had no
 * answer for DB_PROBE_IDLE_MS: TCP keepalives are answered by a frozen
 * server's kernel, so only the protocol shows that it stopped. A
 * connection left on a frozen primary would otherwise wake up on it once
 * it is thawed, replaced meanwhile and not yet demoted, and read from it.
 * For the same reason a host that did not answer is tried after the
 * others (in its pass) until it answers again.
 */
#include "server/db.h"
#include "server/dbconn.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util/clock.h"

#define DB_STATEMENT_MARGIN_MS 250	/* statement_timeout under db.timeout */
#define DB_CLIENT_CHECK_MS 500	/* client_connection_check_interval */
#define DB_PROBE_IDLE_MS 2000	/* an idle connection is probed after this
				   long without an answer ... */
#define DB_PROBE_TIMEOUT_MS 2000	/* ... and dropped without one within
				   this (at most db.timeout) */

/*
 * The server's own bounds for this session, set once per connection: a
 * statement_timeout DB_STATEMENT_MARGIN_MS under db.timeout, so that a
 * live server cancels a statement that runs or waits for a lock too long
 * (an error in time: the connection stays) before cfpm gives up on it;
 * and client_connection_check_interval (PostgreSQL 14+; an older server
 * has no such row and keeps the timeout alone), so that the statement of
 * a connection cfpm dropped ends within it instead of running on. A
 * smaller bound the session already has (role, database, conninfo
 * options) is kept.
 */
static const char db_settings_fmt[] =
    "SELECT set_config(s.name, v.ms, false) FROM pg_settings s "
    "JOIN (VALUES ('statement_timeout', '%d'), "
    "('client_connection_check_interval', '%d')) AS v(name, ms) "
    "ON v.name = s.name "
    "WHERE s.setting::bigint = 0 OR s.setting::bigint > v.ms::bigint";

/* "what: msg" into dst as one line (libpq's messages span lines). */
void
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

void
db_set_error(struct db *db, const char *what, const char *msg)
{
	db_format(db->error, sizeof(db->error), what, msg);
}

/* Milliseconds from now to deadline_us, rounded up; 0 once it passed. */
static int
db_ms_until(int64_t deadline_us)
{
	int64_t left = deadline_us - clock_now_us();

	if (left <= 0)
		return 0;
	if (left / 1000 >= INT_MAX)
		return INT_MAX;
	return (int)((left + 999) / 1000);
}

/* Closes the connection (PQfinish: non-blocking once it is up). */
static void
db_drop(struct db_link *l)
{
	if (l->conn != NULL)
		PQfinish(l->conn);
	l->conn = NULL;
	l->watch_id++;
}

/*
 * A dead connection is closed at once: its socket must not stay in an
 * idle worker's poll set, readable forever. db->error says why. The
 * first loss or failed attempt of an outage is logged; repeats go
 * through the flood limit, so a worker writes one line per
 * LOG_FLOOD_INTERVAL_US at most while the database stays away.
 */
void
db_mark_down(struct db_link *l)
{
	int64_t now = clock_now_us();
	int was_up = l->state == DB_LINK_UP || l->recycling;

	if (l->state == DB_LINK_UP)
		l->backoff_ms = 0;	/* just lost it: retry at once */
	db_drop(l);
	l->state = DB_LINK_DOWN;
	l->recycling = 0;
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
 * cfpm closes the connection itself (a statement it gave up for the
 * request's sake): nothing says the server failed, so this is no outage
 * (no line, db_is_up() stays 1) and the connection is made again at
 * once. Should that fail, the outage starts then.
 */
void
db_recycle(struct db_link *l)
{
	db_drop(l);
	l->state = DB_LINK_DOWN;
	l->recycling = 1;
	l->next_try_us = 0;
	l->backoff_ms = 0;
}

/*
 * The connection is back: one line, if the outage had one (a loss the
 * flood limit left out is not followed by a lone "back").
 */
static void
db_mark_up(struct db_link *l)
{
	l->state = DB_LINK_UP;
	l->probing = DB_PROBE_NONE;
	l->answered_us = clock_now_us();
	l->backoff_ms = 0;
	l->unanswered = 0;
	l->recycling = 0;
	l->watch_id++;
	/* Back from an outage on a multi-host conninfo: the host reached may
	 * be a replaced primary not demoted yet (db_miss_trusted). */
	l->unproven_us = l->down_since_us != 0 && l->plan.nhosts > 1 ?
	    l->answered_us + (int64_t)l->db->timeout_ms * 1000 : 0;
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

/* ---- Connection attempts --------------------------------------------- */

/* Adds one failure of this attempt to l->tried ("; " between). */
static void
db_note_try(struct db_link *l, const char *msg)
{
	char one[DB_MAX_ERROR];
	size_t n = strlen(l->tried);

	db_format(one, sizeof(one), l->conn != NULL && PQhost(l->conn) ?
	    PQhost(l->conn) : "server", msg);
	snprintf(l->tried + n, sizeof(l->tried) - n, "%s%s", n > 0 ? "; " :
	    "", one);
}

/* Starts the attempt at target l->order[l->target]: 0, or -1 (noted). */
static int
db_target_start(struct db_link *l)
{
	const char *keys[DB_MAX_PARAMS + 1], *vals[DB_MAX_PARAMS + 1];

	db_plan_params(&l->plan, l->order[l->target], keys, vals);
	l->conn = PQconnectStartParams(keys, vals, 0);
	l->watch_id++;
	if (l->conn == NULL || PQstatus(l->conn) == CONNECTION_BAD) {
		db_note_try(l, l->conn ? PQerrorMessage(l->conn) :
		    "out of memory");
		db_drop(l);
		return -1;
	}
	l->want_write = 1;	/* as if PQconnectPoll had asked to write */
	l->until_us = clock_now_us() + (int64_t)l->plan.connect_ms * 1000;
	return 0;
}

/* Gives up the current target for the next one that starts: 1 if one
 * is under way, 0 if none is left. */
static int
db_next_target(struct db_link *l)
{
	db_drop(l);
	while (++l->target < l->plan.ntargets)
		if (db_target_start(l) == 0)
			return 1;
	return 0;
}

/* The attempt failed (db->error says why): an outage, and after a host
 * that did not answer the requests do not wait for the next one. */
static void
db_attempt_failed(struct db_link *l)
{
	l->unanswered = l->timed_out;
	db_mark_down(l);
}

/* Marks the host of target k as one that did (not) answer. */
static void
db_host_answered(struct db_link *l, size_t k, int answered)
{
	l->silent[k % l->plan.nhosts] = !answered;
}

void
db_link_unanswered(struct db_link *l, const char *what, int waited_ms)
{
	char why[64];

	snprintf(why, sizeof(why), "no answer within %.1f s", waited_ms / 1e3);
	db_set_error(l->db, what, why);
	l->unanswered = 1;
	db_host_answered(l, l->connected, 0);
	db_mark_down(l);
}

/*
 * This attempt's order: each pass's hosts as the conninfo lists them,
 * but those that did not answer last time at the end of their pass. A
 * frozen host that is thawed after its replacement took over would
 * otherwise be the first asked, and would answer as what it was.
 */
static void
db_link_order(struct db_link *l)
{
	size_t pass, i, n = 0;
	int late;

	for (pass = 0; pass < l->plan.ntargets; pass += l->plan.nhosts)
		for (late = 0; late < 2; late++)
			for (i = pass; i < pass + l->plan.nhosts && i < l->plan.ntargets; i++)
				if (l->silent[i % l->plan.nhosts] == late)
					l->order[n++] = i;
}

/* A new attempt, from the first target. */
void
db_link_begin(struct db_link *l)
{
	char bad[DB_MAX_ERROR];

	db_drop(l);
	db_link_order(l);
	l->state = DB_LINK_CONNECTING;
	l->farewell = 0;
	l->timed_out = 0;
	l->tried[0] = '\0';
	l->target = 0;
	if (l->plan.ntargets == 0) {
		db_format(bad, sizeof(bad), "conninfo", l->plan.error);
		db_note_try(l, bad);
	}
	else if (db_target_start(l) == 0 || db_next_target(l))
		return;
	db_set_error(l->db, "connect", l->tried);
	db_attempt_failed(l);
}

/* Connected: non-blocking from here on, then the settings and prepares. */
static void
db_setup_begin(struct db_link *l)
{
	(void)PQsetnonblocking(l->conn, 1);
	PQsetNoticeReceiver(l->conn, db_notice, l);
	l->state = DB_LINK_SETUP;
	l->connected = l->order[l->target];
	l->step = 0;
	l->step_sent = 0;
	l->want_write = 0;
	l->until_us = clock_now_us() + (int64_t)l->db->timeout_ms * 1000;
	l->watch_id++;
}

/*
 * The connecting part of db_link_advance(): PQconnectPoll only when the
 * socket is ready (it takes a call as the sign that a connect finished),
 * the next target when this one failed or took longer than connect_ms.
 */
static short
db_connect_step(struct db_link *l, int ready)
{
	char why[64];

	for (;;) {
		if (clock_now_us() >= l->until_us) {
			snprintf(why, sizeof(why), "no answer within %.1f s",
			    l->plan.connect_ms / 1e3);
			db_note_try(l, why);
			db_host_answered(l, l->order[l->target], 0);
			l->timed_out = 1;
		} else if (!ready)
			return l->want_write ? POLLOUT : POLLIN;
		else {
			switch (PQconnectPoll(l->conn)) {
			case PGRES_POLLING_READING:
				l->want_write = 0;
				l->watch_id++;
				return POLLIN;
			case PGRES_POLLING_WRITING:
				l->want_write = 1;
				l->watch_id++;
				return POLLOUT;
			case PGRES_POLLING_OK:
				db_host_answered(l, l->order[l->target], 1);
				db_setup_begin(l);
				return 0;
			default:	/* refused, or not what it must be */
				db_host_answered(l, l->order[l->target], 1);
				db_note_try(l, PQerrorMessage(l->conn));
				break;
			}
		}
		if (!db_next_target(l)) {
			db_set_error(l->db, "connect", l->tried);
			db_attempt_failed(l);
			return 0;
		}
		ready = 0;
	}
}

/*
 * Sends setup step l->step: 0 the settings, then each statement the link
 * prepares. 1 sent, 0 none left, -1 libpq refused (the connection).
 */
static int
db_setup_send(struct db_link *l)
{
	const struct db_statement *st = NULL;
	struct db *db = l->db;
	int ok;

	while (l->step > 0 && l->step <= db->nstmts &&
	    l->reads_only && !db->stmts[l->step - 1].read_only)
		l->step++;
	if (l->step > db->nstmts)
		return 0;
	if (l->step == 0)
		ok = PQsendQuery(l->conn, db->settings_sql);
	else {
		st = &db->stmts[l->step - 1];
		ok = PQsendPrepare(l->conn, st->name, st->sql, st->nparams,
		    st->types);
	}
	l->step_sent = ok;
	return ok ? 1 : -1;
}

/* The setup part of db_link_advance(): each step's results read to the
 * end, all within db.timeout of the connect. */
static short
db_setup_step(struct db_link *l)
{
	PGresult *res;
	int pending, ok;

	for (;;) {
		if (clock_now_us() >= l->until_us) {
			db_set_error(l->db, "setup", "no answer in time");
			db_host_answered(l, l->connected, 0);
			l->timed_out = 1;
			goto fail;
		}
		if (!l->step_sent && (ok = db_setup_send(l)) <= 0) {
			if (ok == -1)
				goto lost;
			db_mark_up(l);
			return 0;
		}
		if ((pending = PQflush(l->conn)) == -1 ||
		    !PQconsumeInput(l->conn))
			goto lost;
		if (pending != l->want_write)
			l->watch_id++;
		l->want_write = pending;
		if (PQisBusy(l->conn))
			return pending ? POLLIN | POLLOUT : POLLIN;
		if ((res = PQgetResult(l->conn)) == NULL) {
			l->step++;
			l->step_sent = 0;
			continue;
		}
		ok = PQresultStatus(res) == (l->step == 0 ? PGRES_TUPLES_OK :
		    PGRES_COMMAND_OK);
		if (!ok)
			db_set_error(l->db, l->step == 0 ? "settings" :
			    "prepare", PQresultErrorMessage(res));
		PQclear(res);
		if (!ok)
			goto fail;
	}
lost:
	if (!l->farewell)
		db_set_error(l->db, "setup", PQerrorMessage(l->conn));
fail:
	db_attempt_failed(l);
	return 0;
}

/*
 * Moves l's connection attempt on as far as it goes without waiting;
 * ready: its socket is ready for what the attempt waits for. Returns the
 * poll events it waits for, or 0 once it ended (l->state UP or DOWN).
 */
static short
db_link_advance(struct db_link *l, int ready)
{
	short ev = 0;

	if (l->state == DB_LINK_CONNECTING)
		ev = db_connect_step(l, ready);
	if (l->state == DB_LINK_SETUP)
		ev = db_setup_step(l);
	return ev;
}

/* ---- Waiting ----------------------------------------------------------- */

/* The request cannot use the server any more: its client left, it was
 * interrupted, or its deadline passed. */
int
db_given_up(const struct db *db, int64_t deadline_us)
{
	return db->client_gone || db->interrupted ||
	    clock_now_us() >= deadline_us;
}

/*
 * Waits until fd is ready for events or the request gives up: its
 * deadline, an interrupt (the eventfd, written by a signal handler: one
 * that comes before the poll is seen by it all the same), the client
 * closing its connection (nginx does when the client went away: no
 * answer could be delivered).
 */
static enum db_wait
db_wait(struct db *db, int fd, short events, int64_t deadline_us)
{
	struct pollfd p[3];
	nfds_t n;
	int rc;

	for (;;) {
		if (db->interrupted)
			return DB_WAIT_INTERRUPTED;
		p[0].fd = fd;
		p[0].events = events;
		p[1].fd = db->wake_fd;
		p[1].events = POLLIN;
		p[0].revents = p[1].revents = 0;
		n = 2;
		if (db->client_fd != -1 && !db->client_gone) {
			p[2].fd = db->client_fd;
			p[2].events = POLLRDHUP;
			p[2].revents = 0;
			n = 3;
		}
		rc = poll(p, n, db_ms_until(deadline_us));
		if (rc == -1 && errno == EINTR)
			continue;	/* SIGALRM: the eventfd says */
		if (p[1].revents != 0)
			db->interrupted = 1;
		else if (rc == -1 || p[0].revents != 0)
			return DB_WAIT_READY;	/* libpq sees any error */
		else if (n == 3 && (p[2].revents &
		    (POLLRDHUP | POLLHUP | POLLERR))) {
			db->client_gone = 1;
			return DB_WAIT_CLIENT_GONE;
		} else if (rc == 0)
			return DB_WAIT_TIMEOUT;
	}
}

/*
 * Sends what libpq holds for the server and reads its answer until
 * PQgetResult would not block, or the wait ends otherwise.
 */
enum db_wait
db_exchange(struct db_link *l, int64_t deadline_us)
{
	enum db_wait w;
	int pending;

	for (;;) {
		if ((pending = PQflush(l->conn)) == -1)
			return DB_WAIT_READY;	/* PQgetResult says why */
		if (!pending && !PQisBusy(l->conn))
			return DB_WAIT_READY;
		w = db_wait(l->db, PQsocket(l->conn), pending ?
		    POLLIN | POLLOUT : POLLIN, deadline_us);
		if (w != DB_WAIT_READY)
			return w;
		if (!PQconsumeInput(l->conn))
			return DB_WAIT_READY;	/* PQgetResult says why */
	}
}

/*
 * Drives l's connection attempt until it ends, the request gives up or
 * deadline_us passes (the attempt then goes on in db_tick()). 1 if l is
 * up.
 */
int
db_link_drive(struct db_link *l, int64_t deadline_us)
{
	enum db_wait w = DB_WAIT_TIMEOUT;
	short ev;

	while ((ev = db_link_advance(l, w == DB_WAIT_READY)) != 0) {
		w = db_wait(l->db, PQsocket(l->conn), ev,
		    deadline_us < l->until_us ? deadline_us : l->until_us);
		if (w == DB_WAIT_INTERRUPTED || w == DB_WAIT_CLIENT_GONE ||
		    (w == DB_WAIT_TIMEOUT && clock_now_us() >= deadline_us))
			return 0;
	}
	return l->state == DB_LINK_UP;
}

/* ---- The idle worker's part ------------------------------------------ */

/* An idle probe's bound: DB_PROBE_TIMEOUT_MS, at most db.timeout. */
int
db_probe_ms(const struct db *db)
{
	return db->timeout_ms < DB_PROBE_TIMEOUT_MS ? db->timeout_ms :
	    DB_PROBE_TIMEOUT_MS;
}

/* The results of an idle probe that have arrived, as far as they go. */
static void
db_probe_results(struct db_link *l)
{
	PGresult *res;
	int ok;

	while (!PQisBusy(l->conn)) {
		if ((res = PQgetResult(l->conn)) == NULL) {
			l->probing = DB_PROBE_NONE;
			l->answered_us = clock_now_us();
			return;
		}
		if ((ok = l->probing == DB_PROBE_SENT &&
		    PQresultStatus(res) == PGRES_EMPTY_QUERY))
			l->probing = DB_PROBE_ANSWERED;
		else
			db_set_error(l->db, "idle probe", PQresultStatus(res) ==
			    PGRES_EMPTY_QUERY ? "a second result" :
			    PQresultErrorMessage(res));
		PQclear(res);
		if (!ok) {
			db_mark_down(l);
			return;
		}
	}
}

/* A look at an idle connection whose socket had an event: a notice, an
 * idle probe's answer, or the server closing it. */
static void
db_link_idle_check(struct db_link *l)
{
	PGnotify *n;

	if (PQconsumeInput(l->conn) == 1 &&
	    PQstatus(l->conn) == CONNECTION_OK) {
		while ((n = PQnotifies(l->conn)) != NULL)
			PQfreemem(n);
		if (l->probing != DB_PROBE_NONE)
			db_probe_results(l);
		return;
	}
	if (!l->farewell)
		db_set_error(l->db, "idle connection", PQerrorMessage(l->conn));
	db_mark_down(l);
}

/*
 * Starts an idle probe when the server has not answered for
 * DB_PROBE_IDLE_MS; drops the connection when a probe under way is past
 * its deadline (a frozen server: an outage).
 */
static void
db_link_probe(struct db_link *l)
{
	int64_t now = clock_now_us();

	if (l->probing != DB_PROBE_NONE) {
		if (now < l->until_us)
			return;
		db_link_idle_check(l);	/* an answer not yet read counts */
		if (l->state != DB_LINK_UP || l->probing == DB_PROBE_NONE)
			return;
		db_link_unanswered(l, "idle probe", db_probe_ms(l->db));
		return;
	}
	if (now - l->answered_us < (int64_t)DB_PROBE_IDLE_MS * 1000)
		return;
	/* The bytes not sent now go with the next flush; a server that
	 * takes none is one the deadline ends. */
	if (!PQsendQuery(l->conn, "") || PQflush(l->conn) == -1) {
		db_set_error(l->db, "idle probe", PQerrorMessage(l->conn));
		db_mark_down(l);
		return;
	}
	l->probing = DB_PROBE_SENT;
	l->until_us = now + (int64_t)db_probe_ms(l->db) * 1000;
}

static void
db_link_tick(struct db_link *l, int readable)
{
	struct pollfd p;

	switch (l->state) {
	case DB_LINK_UP:
		if (readable)
			db_link_idle_check(l);
		if (l->state == DB_LINK_UP)
			db_link_probe(l);
		return;
	case DB_LINK_DOWN:
		if (clock_now_us() < l->next_try_us)
			return;
		db_link_begin(l);
		if (l->state == DB_LINK_DOWN)
			return;
		break;
	default:
		break;
	}
	p.fd = PQsocket(l->conn);
	p.events = l->want_write ? POLLOUT : POLLIN;
	p.revents = 0;
	(void)db_link_advance(l, poll(&p, 1, 0) > 0);
}

void
db_tick(struct db *db, int readable)
{
	db_link_tick(&db->write, readable);
	if (db->has_read)
		db_link_tick(&db->read, readable);
}

int
db_sockets(const struct db *db, struct db_socket *s)
{
	const struct db_link *links[DB_MAX_SOCKETS] = { &db->write,
	    db->has_read ? &db->read : NULL };
	int64_t due = -1, at;
	const struct db_link *l;
	size_t i;

	for (i = 0; i < DB_MAX_SOCKETS; i++) {
		s[i].fd = -1;
		s[i].out = 0;
		s[i].id = 0;
		if ((l = links[i]) == NULL)
			continue;
		s[i].id = l->watch_id;
		at = l->state == DB_LINK_DOWN ? l->next_try_us :
		    l->state != DB_LINK_UP || l->probing != DB_PROBE_NONE ?
		    l->until_us :
		    l->answered_us + (int64_t)DB_PROBE_IDLE_MS * 1000;
		if (l->state != DB_LINK_DOWN)
			s[i].fd = PQsocket(l->conn);
		s[i].out = l->state != DB_LINK_DOWN &&
		    l->state != DB_LINK_UP && l->want_write;
		if (due == -1 || at < due)
			due = at;
	}
	return due == -1 ? -1 : db_ms_until(due);
}

/* ---- The handle ------------------------------------------------------ */

/*
 * l, labelled for its log lines (reads_only: it prepares the read_only
 * statements alone), planned from conninfo, with its first attempt
 * started (a failure is logged and retried later). -1: out of memory.
 */
static int
db_link_init(struct db_link *l, struct db *db, const char *label,
    const char *conninfo, int reads_only)
{
	l->db = db;
	l->label = label;
	l->reads_only = reads_only;
	l->watch_id = 1;
	if (db_plan_parse(&l->plan, conninfo, db->timeout_ms) == -1)
		return -1;
	db_link_begin(l);	/* a failure is logged and retried later */
	return 0;
}

/* The handle without its links: the eventfd, the settings' text. */
static struct db *
db_new(int timeout_ms, const struct db_statement *stmts, size_t n)
{
	int server_ms = timeout_ms - DB_STATEMENT_MARGIN_MS;
	struct db *db;

	if ((db = calloc(1, sizeof(*db))) == NULL)
		return NULL;
	if ((db->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) == -1) {
		free(db);
		return NULL;
	}
	if (server_ms < timeout_ms / 2)
		server_ms = timeout_ms / 2;
	snprintf(db->settings_sql, sizeof(db->settings_sql), db_settings_fmt,
	    server_ms, DB_CLIENT_CHECK_MS);
	db->timeout_ms = db->wait_ms = timeout_ms;
	db->stmts = stmts;
	db->nstmts = n;
	db->client_fd = -1;
	return db;
}

struct db *
db_open(const char *conninfo, const char *read_conninfo, int timeout_ms,
    const struct db_statement *stmts, size_t n)
{
	int64_t deadline_us = clock_now_us() + (int64_t)timeout_ms * 1000;
	struct db *db;

	if ((db = db_new(timeout_ms, stmts, n)) == NULL)
		return NULL;
	db->has_read = read_conninfo != NULL && read_conninfo[0] != '\0';
	if (db_link_init(&db->write, db, "database", conninfo, 0) == -1 ||
	    (db->has_read && db_link_init(&db->read, db, "read database",
	    read_conninfo, 1) == -1)) {
		db_close(db);
		errno = ENOMEM;
		return NULL;
	}
	/* The first attempts, together: a worker is ready once connected. */
	(void)db_link_drive(&db->write, deadline_us);
	if (db->has_read)
		(void)db_link_drive(&db->read, deadline_us);
	return db;
}

static void
db_link_free(struct db_link *l)
{
	db_drop(l);
	db_plan_free(&l->plan);
}

void
db_close(struct db *db)
{
	if (db == NULL)
		return;
	db_link_free(&db->read);
	db_link_free(&db->write);
	close(db->wake_fd);
	free(db);
}

int
db_is_up(const struct db *db)
{
	return db->write.state == DB_LINK_UP || db->write.recycling;
}

int
db_interrupt_fd(const struct db *db)
{
	return db->wake_fd;
}

void
db_interrupt_clear(struct db *db)
{
	uint64_t n;

	db->interrupted = 0;
	if (read(db->wake_fd, &n, sizeof(n)) == -1) {
		/* EAGAIN: nothing to take */
	}
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
