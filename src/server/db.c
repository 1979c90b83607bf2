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
 *
 * Every wait for the server has a deadline. libpq is used only in its
 * non-blocking form (a frozen server still completes TCP handshakes and
 * acknowledges data, so nothing below the protocol ever ends a wait for
 * it): a statement's results and the /health ping are polled against
 * their deadlines (db.timeout, the ping's bound); a connection is made
 * with PQconnectStartParams/PQconnectPoll, each host of a multi-host
 * conninfo in turn for at most its connect_timeout (capped at
 * db.timeout), because libpq enforces connect_timeout and moves on to
 * the next host after one only in its blocking call; the settings and
 * prepares after it are one deadline more. A request drives a
 * connection attempt within its own deadline, unless the server has just
 * failed to answer in time: then it is answered DB_UNAVAILABLE at once
 * and the idle worker's loop (db_sockets, db_tick) makes the attempts.
 *
 * A wait that runs out, or that the request gives up (the client went
 * away, an interrupt), drops the connection: closing the socket is all a
 * frozen server can be told, and PQcancel is never called (libpq 15's
 * connects to the server and waits for it to close the cancel
 * connection, retrying on EINTR: against a frozen server, forever). The
 * server ends an abandoned statement itself: each session gets a
 * statement_timeout just under db.timeout and a
 * client_connection_check_interval (db_settings_fmt).
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

#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "util/log.h"
#include "util/clock.h"

/* 2000-01-01 minus 1970-01-01, in microseconds (PostgreSQL's epoch). */
#define DB_PG_EPOCH_US	(INT64_C(946684800) * 1000000)
#define DB_JSONB_VERSION 1	/* first byte of a binary jsonb value */

#define DB_MAX_ERROR	256	/* one log line's worth of libpq text */
#define DB_MAX_HOSTS	16	/* hosts of a conninfo cfpm walks itself;
				   beyond, libpq walks them (no timeouts) */
#define DB_MAX_TARGETS	(2 * DB_MAX_HOSTS)	/* prefer-standby: 2 passes */
#define DB_MAX_PARAMS	64	/* keywords of one attempt (libpq 15: ~45) */
#define DB_MIN_CONNECT_S 2	/* libpq's least connect_timeout */
#define DB_STATEMENT_MARGIN_MS 250	/* statement_timeout under db.timeout */
#define DB_CLIENT_CHECK_MS 500	/* client_connection_check_interval */
#define DB_PROBE_IDLE_MS 2000	/* an idle connection is probed after this
				   long without an answer ... */
#define DB_PROBE_TIMEOUT_MS 2000	/* ... and dropped without one within
				   this (at most db.timeout) */
#define DB_MAX_SETTINGS_SQL 512

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

enum db_link_state {
	DB_LINK_DOWN = 0,	/* no connection; next attempt at next_try_us */
	DB_LINK_CONNECTING,	/* PQconnectPoll under way, one target */
	DB_LINK_SETUP,		/* connected: the settings, then the prepares */
	DB_LINK_UP,		/* prepared: idle, or in a statement */
};

/* How a wait for the server ended. */
enum db_wait {
	DB_WAIT_READY = 0,	/* the socket is ready */
	DB_WAIT_TIMEOUT,	/* the deadline passed */
	DB_WAIT_INTERRUPTED,	/* the interrupt eventfd (db_interrupt_fd) */
	DB_WAIT_CLIENT_GONE,	/* the request's client closed */
};

/* An idle connection's probe (an empty query). */
enum db_probe {
	DB_PROBE_NONE = 0,
	DB_PROBE_SENT,		/* its result has not come yet */
	DB_PROBE_ANSWERED,	/* it has: the end of the exchange has not */
};

/* What becomes of a connection whose statement's outcome is unknown. */
enum db_after {
	DB_AFTER_LOST,		/* dropped: the server failed (an outage) */
	DB_AFTER_CLOSED,	/* dropped by cfpm itself: made again at once */
	DB_AFTER_LEFT,		/* the same, for a client that went away */
	DB_AFTER_KEPT,		/* known to be idle: kept */
};

/*
 * One connection attempt's host, as cfpm walks a multi-host conninfo
 * (NULL: not passed, the conninfo's or libpq's default applies).
 */
struct db_target {
	const char	*host;
	const char	*hostaddr;
	const char	*port;
	const char	*attrs;		/* target_session_attrs */
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
	/* What an attempt passes to libpq (db_link_plan). */
	PQconninfoOption *opts;		/* the conninfo parsed; NULL: bad */
	char		*lists;		/* the host lists, split in place */
	struct db_target targets[DB_MAX_TARGETS];
	size_t		 ntargets;	/* 1: libpq walks any hosts itself */
	int		 connect_ms;	/* each target's bound */
	size_t		 nhosts;	/* targets per pass */
	int		 silent[DB_MAX_HOSTS];	/* host i did not answer */
	char		 plan_error[DB_MAX_ERROR];	/* why opts is NULL */
	/* The connection and the attempt to make it. */
	enum db_link_state state;
	PGconn		*conn;
	size_t		 order[DB_MAX_TARGETS];	/* this attempt's targets */
	size_t		 target;	/* CONNECTING: order[target] tried */
	size_t		 connected;	/* SETUP, UP: the target it reached */
	int64_t		 answered_us;	/* UP: the server's last answer */
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
static void
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
static void
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

/* ---- What a connection attempt passes to libpq ---------------------- */

/* opts' value for key, NULL if it has none (or an empty one). */
static const char *
db_opt(const PQconninfoOption *o, const char *key)
{
	for (; o != NULL && o->keyword != NULL; o++)
		if (strcmp(o->keyword, key) == 0)
			return o->val != NULL && o->val[0] != '\0' ? o->val :
			    NULL;
	return NULL;
}

/* The keywords a target sets (db_target) in place of the conninfo's. */
static int
db_target_key(const char *key)
{
	return strcmp(key, "host") == 0 || strcmp(key, "hostaddr") == 0 ||
	    strcmp(key, "port") == 0 ||
	    strcmp(key, "target_session_attrs") == 0;
}

/*
 * Splits s in place at its commas (libpq's list syntax) into item[],
 * empty items as NULL. Returns the count, max + 1 if there are more.
 */
static size_t
db_split(char *s, const char **item, size_t max)
{
	size_t n = 0;

	for (;;) {
		if (n == max)
			return max + 1;
		item[n++] = s[0] != '\0' && s[0] != ',' ? s : NULL;
		if ((s = strchr(s, ',')) == NULL)
			return n;
		*s++ = '\0';
	}
}

/* connect_timeout as libpq reads it (seconds, at least 2, <= 0: none),
 * as milliseconds capped at db.timeout. */
static int
db_connect_ms(const char *value, int timeout_ms)
{
	long s = strtol(value, NULL, 10);

	if (s <= 0 || s >= timeout_ms / 1000)
		return timeout_ms;
	if (s < DB_MIN_CONNECT_S)
		s = DB_MIN_CONNECT_S;
	return s * 1000 < timeout_ms ? (int)s * 1000 : timeout_ms;
}

/* A copy of the four target settings (conninfo first, then the PG*
 * environment libpq would use) in l->lists, in that order. */
static int
db_copy_lists(struct db_link *l, const char *v[4])
{
	PQconninfoOption *def = PQconndefaults();
	static const char *const keys[4] = { "host", "hostaddr", "port",
	    "target_session_attrs" };
	size_t len = 0, i, n;
	char *p;

	for (i = 0; i < 4; i++) {
		if ((v[i] = db_opt(l->opts, keys[i])) == NULL)
			v[i] = db_opt(def, keys[i]);
		len += v[i] != NULL ? strlen(v[i]) + 1 : 0;
	}
	if ((p = l->lists = malloc(len + 1)) == NULL) {
		PQconninfoFree(def);
		return -1;
	}
	for (i = 0; i < 4; i++) {
		if (v[i] == NULL)
			continue;
		n = strlen(v[i]) + 1;
		memcpy(p, v[i], n);
		v[i] = p;
		p += n;
	}
	PQconninfoFree(def);
	return 0;
}

/*
 * Parses the conninfo once, into what each attempt passes to libpq.
 * With two to DB_MAX_HOSTS hosts cfpm walks them itself, one target per
 * host (libpq's order; prefer-standby as libpq does it: every host as a
 * standby first, then every host as anything), so that a host that does
 * not answer costs its connect_timeout and the next is tried. Otherwise
 * one target passes the conninfo as it is (libpq reports what is wrong
 * with it). Returns -1 only when out of memory.
 */
static int
db_link_plan(struct db_link *l, const char *conninfo)
{
	const char *v[4], *hosts[DB_MAX_HOSTS + 1], *addrs[DB_MAX_HOSTS + 1];
	const char *ports[DB_MAX_HOSTS + 1], *ct;
	size_t nh = 0, na = 0, np = 0, n, i, pass, npass, k = 0;
	char *err = NULL;
	int prefer;

	memset(&l->targets[0], 0, sizeof(l->targets[0]));
	l->ntargets = l->nhosts = 1;
	if ((l->opts = PQconninfoParse(conninfo, &err)) == NULL) {
		db_format(l->plan_error, sizeof(l->plan_error), "conninfo",
		    err != NULL ? err : "out of memory");
		PQfreemem(err);
		l->ntargets = 0;
		l->connect_ms = l->db->timeout_ms;
		return err != NULL ? 0 : -1;
	}
	ct = db_opt(l->opts, "connect_timeout");
	l->connect_ms = db_connect_ms(ct ? ct : DB_CONNECT_TIMEOUT,
	    l->db->timeout_ms);
	if (db_copy_lists(l, v) == -1)
		return -1;
	if (v[0] != NULL)
		nh = db_split((char *)v[0], hosts, DB_MAX_HOSTS);
	if (v[1] != NULL)
		na = db_split((char *)v[1], addrs, DB_MAX_HOSTS);
	if (v[2] != NULL)
		np = db_split((char *)v[2], ports, DB_MAX_HOSTS);
	n = na > 0 ? na : nh;
	if (n < 2 || n > DB_MAX_HOSTS || (nh > 0 && na > 0 && nh != na) ||
	    (np > 1 && np != n))
		return 0;
	prefer = v[3] != NULL && strcmp(v[3], "prefer-standby") == 0;
	npass = prefer ? 2 : 1;
	for (pass = 0; pass < npass; pass++)
		for (i = 0; i < n; i++, k++) {
			l->targets[k].host = nh > 0 ? hosts[i] : NULL;
			l->targets[k].hostaddr = na > 0 ? addrs[i] : NULL;
			l->targets[k].port = np == 0 ? NULL :
			    ports[np == 1 ? 0 : i];
			l->targets[k].attrs = !prefer ? v[3] :
			    pass == 0 ? "standby" : "any";
		}
	l->ntargets = k;
	l->nhosts = n;
	return 0;
}

static size_t
db_param(const char **keys, const char **vals, size_t n, const char *key,
    const char *val)
{
	if (val == NULL)
		return n;
	keys[n] = key;
	vals[n] = val;
	return n + 1;
}

/*
 * The keywords of one attempt at target t: cfpm's defaults first, so
 * that the conninfo's own settings win (libpq takes the last value
 * given), then the target's host settings, which replace the
 * conninfo's lists when cfpm walks them. keys and vals hold
 * DB_MAX_PARAMS + 1 entries (NULL-terminated).
 */
static void
db_params(const struct db_link *l, const struct db_target *t,
    const char **keys, const char **vals)
{
	static const char *const dkeys[] = { "connect_timeout",
	    "keepalives", "keepalives_idle", "keepalives_interval",
	    "keepalives_count", "tcp_user_timeout", "application_name" };
	static const char *const dvals[] = { DB_CONNECT_TIMEOUT, "1",
	    DB_KEEPALIVES_IDLE, DB_KEEPALIVES_INTERVAL, DB_KEEPALIVES_COUNT,
	    DB_TCP_USER_TIMEOUT, "cfpm" };
	const PQconninfoOption *o;
	size_t n = 0, i;

	for (i = 0; i < sizeof(dkeys) / sizeof(dkeys[0]); i++)
		n = db_param(keys, vals, n, dkeys[i], dvals[i]);
	for (o = l->opts; o->keyword != NULL && n < DB_MAX_PARAMS - 4; o++)
		if (o->val != NULL && (l->ntargets < 2 ||
		    !db_target_key(o->keyword)))
			n = db_param(keys, vals, n, o->keyword, o->val);
	n = db_param(keys, vals, n, "host", t->host);
	n = db_param(keys, vals, n, "hostaddr", t->hostaddr);
	n = db_param(keys, vals, n, "port", t->port);
	n = db_param(keys, vals, n, "target_session_attrs", t->attrs);
	keys[n] = vals[n] = NULL;
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

/* Starts the attempt at l->targets[l->target]: 0, or -1 (noted). */
static int
db_target_start(struct db_link *l)
{
	const char *keys[DB_MAX_PARAMS + 1], *vals[DB_MAX_PARAMS + 1];

	db_params(l, &l->targets[l->order[l->target]], keys, vals);
	l->conn = PQconnectStartParams(keys, vals, 0);
	l->watch_id++;
	if (l->conn == NULL || PQstatus(l->conn) == CONNECTION_BAD) {
		db_note_try(l, l->conn ? PQerrorMessage(l->conn) :
		    "out of memory");
		db_drop(l);
		return -1;
	}
	l->want_write = 1;	/* as if PQconnectPoll had asked to write */
	l->until_us = clock_now_us() + (int64_t)l->connect_ms * 1000;
	return 0;
}

/* Gives up the current target for the next one that starts: 1 if one
 * is under way, 0 if none is left. */
static int
db_next_target(struct db_link *l)
{
	db_drop(l);
	while (++l->target < l->ntargets)
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
	l->silent[k % l->nhosts] = !answered;
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

	for (pass = 0; pass < l->ntargets; pass += l->nhosts)
		for (late = 0; late < 2; late++)
			for (i = pass; i < pass + l->nhosts && i < l->ntargets; i++)
				if (l->silent[i % l->nhosts] == late)
					l->order[n++] = i;
}

/* A new attempt, from the first target. */
static void
db_link_begin(struct db_link *l)
{
	db_drop(l);
	db_link_order(l);
	l->state = DB_LINK_CONNECTING;
	l->farewell = 0;
	l->timed_out = 0;
	l->tried[0] = '\0';
	l->target = 0;
	if (l->ntargets == 0)
		db_note_try(l, l->plan_error);
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
			    l->connect_ms / 1e3);
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
static int
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
static enum db_wait
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
static int
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

static enum db_wait db_collect(struct db_link *, int64_t, PGresult **, int *,
    char *, size_t);
static enum db_status db_abandon(struct db_link *, const char *,
    enum db_wait);
static enum db_status db_failure(struct db_link *, PGresult *, const char *,
    int);

/* An idle probe's bound: DB_PROBE_TIMEOUT_MS, at most db.timeout. */
static int
db_probe_ms(const struct db *db)
{
	return db->timeout_ms < DB_PROBE_TIMEOUT_MS ? db->timeout_ms :
	    DB_PROBE_TIMEOUT_MS;
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

/* ---- The idle worker's part ------------------------------------------ */

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
		l->db->wait_ms = db_probe_ms(l->db);
		(void)db_abandon(l, "idle probe", DB_WAIT_TIMEOUT);
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
	char why[64];

	snprintf(why, sizeof(why), "no answer within %.1f s",
	    l->db->wait_ms / 1e3);
	db_format(l->db->error, sizeof(l->db->error), what,
	    w == DB_WAIT_TIMEOUT ? why : w == DB_WAIT_INTERRUPTED ?
	    "interrupted" : "the client went away");
	if (w == DB_WAIT_TIMEOUT) {
		l->unanswered = 1;
		db_host_answered(l, l->connected, 0);
	}
	return db_after(l, w == DB_WAIT_TIMEOUT ? DB_AFTER_LOST :
	    w == DB_WAIT_INTERRUPTED ? DB_AFTER_CLOSED : DB_AFTER_LEFT);
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
 * PQsendQueryPrepared on link l with binary results, the wait above
 * (until deadline_us) and the commit discipline: DB_OK with *out
 * (PGRES_TUPLES_OK, the caller clears it) only when the exchange is known
 * to have succeeded, else the status and *out NULL.
 */
static enum db_status
db_run(struct db_link *l, const struct db_statement *st,
    const char *const *values, const int *lengths, const int *formats,
    int64_t deadline_us, PGresult **out)
{
	char later[DB_MAX_ERROR] = "", what[64];
	struct db *db = l->db;
	PGresult *first;
	int extra, link_ok;
	enum db_status rc;
	enum db_wait w;

	*out = NULL;
	db->warned = 0;
	if (!PQsendQueryPrepared(l->conn, st->name, st->nparams, values,
	    lengths, formats, 1))
		return db_unknown_outcome(l, st->what,
		    PQerrorMessage(l->conn), DB_AFTER_LOST);
	db->in_statement = 1;
	w = db_collect(l, deadline_us, &first, &extra, later, sizeof(later));
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
 * request gave up (its client, an interrupt, the deadline).
 */
static int
db_read_here(struct db *db, const struct db_statement *st,
    const char *const *values, const int *lengths, const int *formats,
    int64_t deadline_us, PGresult **out, enum db_status *rc)
{
	if (!db->has_read || !st->read_only ||
	    !db_link_up_now(&db->read, deadline_us))
		return 0;
	*rc = db_run(&db->read, st, values, lengths, formats, deadline_us,
	    out);
	if (*rc == DB_UNAVAILABLE && !db_given_up(db, deadline_us))
		return 0;
	if (*rc == DB_OK && PQntuples(*out) == 0) {
		PQclear(*out);
		*out = NULL;
		return 0;
	}
	return 1;
}

static int
db_link_init(struct db_link *l, struct db *db, const char *label,
    const char *conninfo, int reads_only)
{
	l->db = db;
	l->label = label;
	l->reads_only = reads_only;
	l->watch_id = 1;
	if (db_link_plan(l, conninfo) == -1)
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
	PQconninfoFree(l->opts);
	free(l->lists);
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


enum db_status
db_exec(struct db *db, const struct db_statement *st,
    const char *const *values, const int *lengths, const int *formats,
    struct db_result **out)
{
	int64_t deadline_us = clock_now_us() + (int64_t)db->timeout_ms * 1000;
	PGresult *res = NULL;
	enum db_status rc;

	*out = NULL;
	db->wait_ms = db->timeout_ms;
	if (!db_read_here(db, st, values, lengths, formats, deadline_us, &res,
	    &rc)) {
		if (!db_link_ready(&db->write, deadline_us))
			return DB_UNAVAILABLE;
		rc = db_run(&db->write, st, values, lengths, formats,
		    deadline_us, &res);
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
