/*
 * test_nofile.c: the descriptors a configuration needs (nofile.h): the
 * count follows each setting that adds a descriptor, the poll set bounds
 * the master whatever it holds, and the limit is the most of the three.
 */
#include <stdio.h>
#include <string.h>

#include "server/admin.h"
#include "server/keep.h"
#include "server/nofile.h"
#include "util/config.h"
#include "tap.h"

static struct nofile_need
need_of(const struct config *cfg)
{
	struct nofile_need n;

	nofile_need(cfg, &n);
	return n;
}

int
main(void)
{
	static struct config cfg;
	struct nofile_need base, n;

	config_defaults(&cfg);
	base = need_of(&cfg);
	ok(base.worker >= NOFILE_STDIO + KEEP_MAX_RELEASED + 1 + 1 + 4 + 2,
	    "a worker: stdio, its kept and %d released connections, the one "
	    "it serves, listen socket, eventfds, epoll, a database link and "
	    "db.c's interrupt eventfd (%u)", KEEP_MAX_RELEASED, base.worker);
	is_int(base.master_poll, ADMIN_POLL_FDS + 1, "the master's poll set: "
	    "the status socket's entries and the workers' eventfd");
	ok(base.total >= base.worker && base.total >= base.master &&
	    base.total >= base.master_poll &&
	    (base.total == base.worker || base.total == base.master ||
	    base.total == base.master_poll), "the limit is the most of the "
	    "three (%u)", base.total);
	ok(base.master < base.master_poll, "without a status socket the "
	    "master holds fewer than its poll set has entries (%u < %u): "
	    "the poll set bounds it", base.master, base.master_poll);

	snprintf(cfg.status_listen, sizeof(cfg.status_listen), "/run/s.sock");
	n = need_of(&cfg);
	is_int(n.master - base.master, 1 + ADMIN_MAX_CONNS, "pm.status_listen "
	    "adds its socket and %d connections to the master",
	    ADMIN_MAX_CONNS);
	is_int(n.worker, base.worker, "and nothing to a worker (it closes "
	    "the master's copies)");

	config_defaults(&cfg);
	snprintf(cfg.db_read_conninfo, sizeof(cfg.db_read_conninfo),
	    "host=standby");
	n = need_of(&cfg);
	is_int(n.worker - base.worker, 1, "db.read_conninfo: a second link");

	config_defaults(&cfg);
	snprintf(cfg.access_log, sizeof(cfg.access_log), "/var/log/a.log");
	n = need_of(&cfg);
	is_int(n.worker - base.worker, 1, "access.log: one more in a worker");
	is_int(n.master, base.master, "none in the master");

	config_defaults(&cfg);
	snprintf(cfg.error_log, sizeof(cfg.error_log), "%s", CONFIG_SYSLOG);
	n = need_of(&cfg);
	ok(n.worker - base.worker == 1 && n.master - base.master == 1,
	    "error_log = syslog: its socket, in both");

	config_defaults(&cfg);
	cfg.max_children = CONFIG_MAX_CHILDREN;
	n = need_of(&cfg);
	is_int(n.total, base.total, "pm.max_children changes nothing: the "
	    "master holds no descriptor per worker");
	return done_testing();
}
