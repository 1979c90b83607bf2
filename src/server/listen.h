/*
 * listen.h: the listen sockets, owned by the master: the pool socket,
 * inherited from systemd socket activation (fd 3, LISTEN_FDS/LISTEN_PID)
 * or bound here from the "listen" setting, and the status socket, bound
 * here from "pm.status_listen". An address is a unix path, host:port,
 * [v6addr]:port or a port. Never FCGX_OpenSocket (IPv4 only, unlinks,
 * exits). Every socket handed out is non-blocking: workers wait in epoll
 * and then accept, and the master serves the status socket from its
 * event loop.
 */
#ifndef CFPM_LISTEN_H
#define CFPM_LISTEN_H

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

/*
 * Takes the socket systemd passed (LISTEN_PID must be this process and
 * LISTEN_FDS >= 1; extra fds are closed) and makes it non-blocking and
 * close-on-exec. Clears the LISTEN_* variables. Returns 1 and fills ls if
 * a socket was passed, 0 if none was, -1 with a logged reason if what was
 * passed is unusable.
 */
int listen_from_systemd(struct listen_sock *ls);

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
 * Creates, binds and listens as spec says. A unix path that already
 * exists is replaced only if it is a socket nobody listens on (a stale
 * one from a crash); a live socket or any other file is an error. A unix
 * socket gets spec's owner, group and mode before anyone can connect.
 * The socket is non-blocking and close-on-exec. Returns 0 or -1 (logged).
 */
int listen_bind(struct listen_sock *ls, const struct listen_spec *spec);

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
