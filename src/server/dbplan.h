/*
 * dbplan.h: a conninfo parsed once into what each connection attempt
 * passes to libpq (worker; the db module's lowest part: db.c, dbexec.c
 * and this are the only libpq users). With two to DB_MAX_HOSTS hosts
 * cfpm walks them itself, one target per host (libpq's order;
 * prefer-standby as libpq does it: every host as a standby first, then
 * every host as anything), so that a host that does not answer costs its
 * connect_timeout and the next is tried. Otherwise one target passes the
 * conninfo as it is (libpq reports what is wrong with it).
 */
#ifndef CFPM_DBPLAN_H
#define CFPM_DBPLAN_H

#include <stddef.h>

#include <libpq-fe.h>

#define DB_MAX_HOSTS	16	/* hosts of a conninfo cfpm walks itself;
				   beyond, libpq walks them (no timeouts) */
#define DB_MAX_TARGETS	(2 * DB_MAX_HOSTS)	/* prefer-standby: 2 passes */
#define DB_MAX_PARAMS	64	/* keywords of one attempt (libpq 15: ~45) */
#define DB_PLAN_MAX_ERROR 256	/* libpq's reason for a bad conninfo */

/*
 * libpq settings cfpm supplies unless the conninfo sets them (TCP only):
 * a dead or partitioned server (packets dropped, not refused) shows
 * within seconds. connect_timeout bounds each host of a multi-host
 * conninfo (cfpm enforces it, capped at db.timeout: libpq does only in
 * its blocking call); keepalives probe an idle or waiting connection;
 * tcp_user_timeout ends one whose sent data (or probes) go unacknowledged
 * that long, where TCP alone would retransmit for minutes.
 */
#define DB_CONNECT_TIMEOUT	"2"	/* seconds (libpq's minimum) */
#define DB_KEEPALIVES_IDLE	"2"	/* seconds idle before probing */
#define DB_KEEPALIVES_INTERVAL	"1"	/* seconds between probes */
#define DB_KEEPALIVES_COUNT	"3"	/* probes lost before giving up */
#define DB_TCP_USER_TIMEOUT	"4000"	/* ms unacknowledged before ending */

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

struct db_plan {
	PQconninfoOption *opts;		/* the conninfo parsed; NULL: bad */
	char		*lists;		/* the host lists, split in place */
	struct db_target targets[DB_MAX_TARGETS];
	size_t		 ntargets;	/* 0: bad (error says why); 1: libpq
					   walks any hosts itself */
	size_t		 nhosts;	/* targets per pass */
	int		 connect_ms;	/* each target's bound */
	char		 error[DB_PLAN_MAX_ERROR];
};

/*
 * Parses conninfo into p; timeout_ms (db.timeout) caps each target's
 * connect_timeout. A conninfo libpq refuses gives no target and its
 * reason in p->error. Returns -1 only when out of memory.
 */
int db_plan_parse(struct db_plan *p, const char *conninfo, int timeout_ms);

/*
 * The keywords of one attempt at target k: cfpm's defaults first, so
 * that the conninfo's own settings win (libpq takes the last value
 * given), then the target's host settings, which replace the
 * conninfo's lists when cfpm walks them. keys and vals hold
 * DB_MAX_PARAMS + 1 entries (NULL-terminated); they point into p.
 */
void db_plan_params(const struct db_plan *p, size_t k, const char **keys,
    const char **vals);

/* Frees what db_plan_parse() took (p stays, with no target). */
void db_plan_free(struct db_plan *p);

#endif
