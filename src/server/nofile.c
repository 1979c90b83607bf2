/*
 * nofile.c: the descriptors a configuration needs (PURE; see nofile.h).
 * Each term names the constant or setting it follows, so a change there
 * is a change here.
 */
#include "server/nofile.h"

#include <string.h>

#include "server/admin.h"
#include "server/keep.h"

/* The master's ppoll() set (master_wait): the status socket's entries
 * and the workers' eventfd, whether or not there is a status socket. */
#define NOFILE_MASTER_POLL	(ADMIN_POLL_FDS + 1)

/* The error_log descriptor beyond stderr: syslog's socket. */
static unsigned
nofile_log(const struct config *cfg)
{
	return strcmp(cfg->error_log, CONFIG_SYSLOG) == 0;
}

static unsigned
nofile_master(const struct config *cfg)
{
	unsigned n = NOFILE_STDIO + nofile_log(cfg) + NOFILE_TRANSIENT;

	n += 1;			/* the pool's listen socket */
	n += 2;			/* the workers' kick and wake eventfds */
	if (cfg->status_listen[0] != '\0')
		n += 1 + ADMIN_MAX_CONNS;	/* its socket, its clients */
	return n;
}

static unsigned
nofile_worker(const struct config *cfg)
{
	unsigned n = NOFILE_STDIO + nofile_log(cfg) + NOFILE_TRANSIENT;
	unsigned links = cfg->db_read_conninfo[0] != '\0' ?
	    NOFILE_DB_LINKS : 1;

	n += 1;			/* the listen socket */
	n += 2;			/* the kick and wake eventfds */
	n += 1;			/* its epoll set */
	n += links;		/* each link (one socket, also while it
				   connects: db.c drops before it starts) */
	n += 1;			/* db.c's interrupt eventfd */
	n += 1 + KEEP_MAX_RELEASED;	/* the kept connection, released ones */
	n += 1;			/* the connection it serves */
	n += cfg->access_log[0] != '\0';
	return n;
}

void
nofile_need(const struct config *cfg, struct nofile_need *n)
{
	n->master = nofile_master(cfg);
	n->master_poll = NOFILE_MASTER_POLL;
	n->worker = nofile_worker(cfg);
	n->total = n->master > n->worker ? n->master : n->worker;
	if (n->master_poll > n->total)
		n->total = n->master_poll;
}
