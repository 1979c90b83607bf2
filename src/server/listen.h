/*
 * listen.h: the listen sockets, owned by the master: the pool socket and
 * the status socket, each inherited from systemd socket activation
 * (LISTEN_FDS/LISTEN_PID, told apart by LISTEN_FDNAMES) or bound here
 * from "listen" and "pm.status_listen". An address is a unix path, host:port,
 * [v6addr]:port or a port. Never FCGX_OpenSocket (IPv4 only, unlinks,
 * exits). Every socket handed out is non-blocking: workers wait in epoll
 * and then accept, and the master serves the status socket from its
 * event loop.
 */
#ifndef CFPM_LISTEN_H
#define CFPM_LISTEN_H

#include <netdb.h>
#include <sys/types.h>
#include <sys/un.h>

#include "util/config.h"

struct listen_sock {
	int	fd;
	int	family;		/* AF_UNIX, AF_INET or AF_INET6 */
	int	from_systemd;	/* 1 if inherited: never unlinked */
	int	owned;		/* 1 if we created the unix path */
	char	path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t	dev;		/* identity of the path we created */
	ino_t	ino;
};

#define LISTEN_FDNAME_STATUS	"status"	/* FileDescriptorName= of the
						   status socket's unit */

/*
 * At start, before anything opens a descriptor: closes every descriptor
 * but stdin, stdout, stderr and the sockets systemd passes (LISTEN_FDS
 * from fd 3, when LISTEN_PID is this process). Whatever else the
 * starter left open (a shell's "exec 7</etc/shadow", a leaked pipe)
 * would otherwise reach every worker, across the privilege drop and
 * under the system-call filter. NOTIFY_SOCKET is a path, not a
 * descriptor.
 */
void listen_close_inherited(void);

/*
 * Takes the sockets systemd passed (LISTEN_PID must be this process and
 * LISTEN_FDS >= 1). The fd named LISTEN_FDNAME_STATUS in LISTEN_FDNAMES
 * is the status socket and goes to *status; the first other one is the
 * pool socket (whatever its name: "cfpm", the unit's name, or none) and
 * goes to *pool; any further fd is closed with a warning. A socket not
 * passed is left with fd -1. Those taken are made non-blocking and
 * close-on-exec and marked from_systemd: never unlinked. Clears the
 * LISTEN_* variables. Returns 0, or -1 with a logged reason if what was
 * passed is unusable.
 */
int listen_from_systemd(struct listen_sock *pool, struct listen_sock *status);

/*
 * What to bind: the pool socket and the master's status socket are both
 * described this way. The strings are borrowed (usually from a config).
 */
struct listen_spec {
	const char	*key;		/* config key, for messages */
	const char	*address;	/* unix path, host:port, [v6]:port, port */
	int		 backlog;
	const char	*owner;		/* unix socket owner, "" = unchanged */
	const char	*group;		/* unix socket group, "" = unchanged */
	mode_t		 mode;		/* unix socket mode */
};

/* The pool socket's spec from cfg: listen, listen.backlog/owner/group/mode. */
void listen_spec_pool(const struct config *cfg, struct listen_spec *spec);

/* The status socket's spec: pm.status_listen and its .owner/.group/.mode. */
void listen_spec_status(const struct config *cfg, struct listen_spec *spec);

/*
 * The owner and group spec gives a unix socket, as ids: *uid and *gid,
 * (uid_t)-1 and (gid_t)-1 for a name not set (left unchanged). Returns
 * 0, or -1 with "KEY.owner: no such user \"NAME\"" (or the group's) in
 * why (whylen bytes). listen_bind() asks at bind; preflight_config()
 * before anything starts.
 */
int listen_spec_owner(const struct listen_spec *spec, uid_t *uid, gid_t *gid,
    char *why, size_t whylen);

/*
 * Resolves a TCP address (host:port, [v6addr]:port or a port alone: every
 * address) as listen_bind() binds it: a stream socket, a numeric port,
 * passive. Returns 0 with the results in *res (freeaddrinfo() them), or
 * -1 with the reason in why (whylen bytes) and *res NULL.
 */
int listen_resolve(const char *address, struct addrinfo **res, char *why,
    size_t whylen);

/*
 * Creates, binds and listens as spec says. A unix path that already
 * exists is replaced only if it is a socket nobody listens on (a stale
 * one from a crash); a live socket or any other file is an error. A unix
 * socket gets spec's owner, group and mode before anyone can connect.
 * The socket is non-blocking and close-on-exec. Returns 0 or -1 (logged).
 */
int listen_bind(struct listen_sock *ls, const struct listen_spec *spec);

/*
 * Accepts one connection from the non-blocking listen socket fd: its
 * descriptor (non-blocking, close-on-exec), or -1 with errno (EAGAIN:
 * none waiting, another process was quicker, or the one waiting was
 * not in allowed: closed at once and logged as PHP-FPM does, at most
 * once per LOG_FLOOD_INTERVAL_US per process).
 */
int listen_accept(int fd, const struct allow_list *allowed);

/*
 * 1 if listen_accept() failed with err for want of descriptors or
 * memory (EMFILE, ENFILE, ENOBUFS, ENOMEM): the connection stays queued
 * and the socket readable, so trying again at once would spin. The
 * caller stops watching the socket for LISTEN_ACCEPT_PAUSE_MS and goes
 * on serving what it holds.
 */
int listen_accept_starved(int err);

#define LISTEN_ACCEPT_PAUSE_MS	100

/*
 * Gives a TCP listen socket (the pool's, before any accept) a receive
 * buffer that holds a whole FCGI_MAX_REQUEST, which accepted connections
 * inherit (Linux's default window holds about 85 KiB): nginx's one write
 * of a request then lands whole and one read takes it. Unix sockets are
 * left alone (the sender's buffer is what counts there). Returns 0, or
 * -1 (errno) when the kernel refused.
 */
int listen_set_rcvbuf(const struct listen_sock *ls);

/* Closes the socket and removes the unix path if this process made it. */
void listen_close(struct listen_sock *ls);

/*
 * Reads the accept queue of a listening socket: *queued connections
 * waiting now and the *limit (the effective backlog). Unix sockets are
 * asked through sock_diag (netlink), TCP through TCP_INFO. Returns 0 or
 * -1 (errno; the caller shows "unknown").
 */
int listen_queue(const struct listen_sock *ls, unsigned *queued,
    unsigned *limit);

/* A short description for logs ("unix:/run/cfpm.sock", "tcp:[::1]:9000"). */
const char *listen_describe(const struct listen_sock *ls, char *buf,
    size_t len);

#endif
