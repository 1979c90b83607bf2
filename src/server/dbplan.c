/*
 * dbplan.c: a conninfo parsed once into the targets a connection attempt
 * walks and the keywords it passes to libpq (worker; see dbplan.h).
 */
#include "server/dbplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DB_MIN_CONNECT_S 2	/* libpq's least connect_timeout */

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
 * environment libpq would use) in p->lists, in that order. */
static int
db_copy_lists(struct db_plan *p, const char *v[4])
{
	PQconninfoOption *def = PQconndefaults();
	static const char *const keys[4] = { "host", "hostaddr", "port",
	    "target_session_attrs" };
	size_t len = 0, i, n;
	char *to;

	for (i = 0; i < 4; i++) {
		if ((v[i] = db_opt(p->opts, keys[i])) == NULL)
			v[i] = db_opt(def, keys[i]);
		len += v[i] != NULL ? strlen(v[i]) + 1 : 0;
	}
	if ((to = p->lists = malloc(len + 1)) == NULL) {
		PQconninfoFree(def);
		return -1;
	}
	for (i = 0; i < 4; i++) {
		if (v[i] == NULL)
			continue;
		n = strlen(v[i]) + 1;
		memcpy(to, v[i], n);
		v[i] = to;
		to += n;
	}
	PQconninfoFree(def);
	return 0;
}

int
db_plan_parse(struct db_plan *p, const char *conninfo, int timeout_ms)
{
	const char *v[4], *hosts[DB_MAX_HOSTS + 1], *addrs[DB_MAX_HOSTS + 1];
	const char *ports[DB_MAX_HOSTS + 1], *ct;
	size_t nh = 0, na = 0, np = 0, n, i, pass, npass, k = 0;
	char *err = NULL;
	int prefer;

	memset(p, 0, sizeof(*p));
	p->ntargets = p->nhosts = 1;
	if ((p->opts = PQconninfoParse(conninfo, &err)) == NULL) {
		snprintf(p->error, sizeof(p->error), "%s",
		    err != NULL ? err : "out of memory");
		PQfreemem(err);
		p->ntargets = 0;
		p->connect_ms = timeout_ms;
		return err != NULL ? 0 : -1;
	}
	ct = db_opt(p->opts, "connect_timeout");
	p->connect_ms = db_connect_ms(ct ? ct : DB_CONNECT_TIMEOUT,
	    timeout_ms);
	if (db_copy_lists(p, v) == -1)
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
			p->targets[k].host = nh > 0 ? hosts[i] : NULL;
			p->targets[k].hostaddr = na > 0 ? addrs[i] : NULL;
			p->targets[k].port = np == 0 ? NULL :
			    ports[np == 1 ? 0 : i];
			p->targets[k].attrs = !prefer ? v[3] :
			    pass == 0 ? "standby" : "any";
		}
	p->ntargets = k;
	p->nhosts = n;
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

void
db_plan_params(const struct db_plan *p, size_t k, const char **keys,
    const char **vals)
{
	static const char *const dkeys[] = { "connect_timeout",
	    "keepalives", "keepalives_idle", "keepalives_interval",
	    "keepalives_count", "tcp_user_timeout", "application_name" };
	static const char *const dvals[] = { DB_CONNECT_TIMEOUT, "1",
	    DB_KEEPALIVES_IDLE, DB_KEEPALIVES_INTERVAL, DB_KEEPALIVES_COUNT,
	    DB_TCP_USER_TIMEOUT, "cfpm" };
	const struct db_target *t = &p->targets[k];
	const PQconninfoOption *o;
	size_t n = 0, i;

	for (i = 0; i < sizeof(dkeys) / sizeof(dkeys[0]); i++)
		n = db_param(keys, vals, n, dkeys[i], dvals[i]);
	for (o = p->opts; o->keyword != NULL && n < DB_MAX_PARAMS - 4; o++)
		if (o->val != NULL && (p->ntargets < 2 ||
		    !db_target_key(o->keyword)))
			n = db_param(keys, vals, n, o->keyword, o->val);
	n = db_param(keys, vals, n, "host", t->host);
	n = db_param(keys, vals, n, "hostaddr", t->hostaddr);
	n = db_param(keys, vals, n, "port", t->port);
	n = db_param(keys, vals, n, "target_session_attrs", t->attrs);
	keys[n] = vals[n] = NULL;
}

void
db_plan_free(struct db_plan *p)
{
	PQconninfoFree(p->opts);
	free(p->lists);
	p->opts = NULL;
	p->lists = NULL;
}
