/*
 * nofile.h: how many descriptors a configuration needs, per process
 * (PURE; the master asks, at start, for -t and before a reload).
 *
 * RLIMIT_NOFILE is inherited: the workers run with the master's limit.
 * Below what either needs, a process fails at the worst moment and in a
 * loop: the master's ppoll() of its whole poll set fails with EINVAL on
 * every call (nfds above the limit), a worker's accept() with EMFILE
 * while the connection stays queued. So the master counts what the
 * configuration needs before anything starts, raises its soft limit up
 * to the hard one when that suffices, and otherwise refuses, saying how
 * many it needs (preflight_config(), master.c). The count is what each
 * process can hold at once, by design, plus a margin for what libraries
 * open for a moment; a limit lowered under a running pool is survived
 * too (no loop spins on it: master.c, admin.c, worker.c).
 */
#ifndef CFPM_NOFILE_H
#define CFPM_NOFILE_H

#include "util/config.h"

#define NOFILE_STDIO		3	/* stdin, stdout, stderr */
/*
 * What libraries open for a moment: libpq's resolver (a UDP socket,
 * /etc/hosts, resolv.conf, nsswitch.conf), ~/.pgpass, root certificates,
 * GSSAPI's mechanism directory; in the master /proc/PID/status, the
 * sock_diag socket, the sd_notify socket, a reopened log, the key file.
 */
#define NOFILE_TRANSIENT	8
#define NOFILE_DB_LINKS		2	/* db.conninfo, db.read_conninfo */

struct nofile_need {
	unsigned	master;		/* descriptors the master holds */
	unsigned	master_poll;	/* entries of its ppoll() set, which
					   the limit bounds too */
	unsigned	worker;		/* descriptors one worker holds */
	unsigned	total;		/* the most of the three: the limit */
};

/*
 * What cfg needs: the master's listen and status sockets, status
 * connections, eventfds, log and syslog descriptors, the include files a
 * reload reads; each worker's listen socket, eventfds, epoll, database
 * links and db.c's interrupt eventfd, kept and released connections, the one it
 * serves, access log, logs. Fills *n.
 */
void nofile_need(const struct config *cfg, struct nofile_need *n);

#endif
