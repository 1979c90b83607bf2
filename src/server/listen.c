/*
 * listen.c: the listen sockets (set up by the master): the pool socket
 * and the status socket the master serves itself, each taken from
 * systemd (told apart by LISTEN_FDNAMES) or bound before the first fork;
 * the sd_listen_fds protocol is implemented here, without libsystemd.
 * Both are non-blocking: workers inherit the pool socket, wait for it in
 * epoll (EPOLLEXCLUSIVE) and accept (listen_accept(), also the master's
 * for the status socket) without blocking, so one that loses the race
 * gets EAGAIN; listen.allowed_clients is enforced there. Also what a
 * socket needs before anything connects (its owners, its address
 * resolved, the pool socket's receive buffer), its accept queue for the
 * status page, and the removal of what it created.
 */
#include "server/listen.h"

#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/fcgi.h"
#include "util/log.h"
#include "util/userdb.h"

#define LISTEN_SD_FD	3	/* SD_LISTEN_FDS_START */
#define LISTEN_MAX_FDS	16	/* more than anyone passes cfpm */
#define LISTEN_MAX_FDNAME 256	/* systemd's FDNAME_MAX is 255 */

static int
listen_is_listening(int fd, int *family)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int on = 0;
	socklen_t ol = sizeof(on);

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &ol) == -1 || !on)
		return 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == -1)
		return 0;
	*family = ss.ss_family;
	return 1;
}

/*
 * Workers wait in epoll and then accept(); a worker that loses the race
 * for a connection must get EAGAIN, not block in accept().
 */
static int
listen_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1) {
		log_err("%s: fcntl(O_NONBLOCK) failed: %s", __func__,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* Takes fd as an inherited listening socket into ls. 0, or -1 (logged). */
static int
listen_adopt(struct listen_sock *ls, int fd, const char *name)
{
	memset(ls, 0, sizeof(*ls));
	ls->fd = fd;
	ls->from_systemd = 1;
	if (!listen_is_listening(fd, &ls->family)) {
		log_err("%s: fd %d (%s) from systemd is not a listening socket",
		    __func__, fd, name);
		return -1;
	}
	/* The master never execs; CLOEXEC only guards helpers we might run. */
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) == -1)
		log_warn("%s: fcntl(FD_CLOEXEC) failed: %s", __func__,
		    strerror(errno));
	return listen_nonblock(fd);
}

/* The i-th name of LISTEN_FDNAMES ("a:b:c") into buf, "" if none. */
static void
listen_fdname(const char *names, long i, char *buf, size_t len)
{
	const char *p = names, *end;

	buf[0] = '\0';
	for (; p != NULL && i > 0; i--)
		if ((p = strchr(p, ':')) != NULL)
			p++;
	if (p == NULL)
		return;
	end = strchr(p, ':');
	snprintf(buf, len, "%.*s", (int)(end ? end - p : (long)strlen(p)), p);
}

/* How many sockets systemd passes this process, from fd 3: LISTEN_FDS
 * when LISTEN_PID is this process, else 0 (negative counts as 0). */
static long
listen_passed(void)
{
	const char *pid_s = getenv("LISTEN_PID"), *fds_s = getenv("LISTEN_FDS");
	long nfds;

	if (pid_s == NULL || fds_s == NULL ||
	    strtol(pid_s, NULL, 10) != (long)getpid())
		return 0;
	nfds = strtol(fds_s, NULL, 10);
	return nfds < 0 ? 0 : nfds;
}

void
listen_close_inherited(void)
{
	long n = listen_passed();

	/* More than LISTEN_MAX_FDS is refused by listen_from_systemd(). */
	if (n > LISTEN_MAX_FDS)
		n = LISTEN_MAX_FDS;
	/* glibc's closefrom(): close_range(2), else /proc/self/fd. */
	closefrom(LISTEN_SD_FD + (int)n);
}

int
listen_from_systemd(struct listen_sock *pool, struct listen_sock *status)
{
	const char *names = getenv("LISTEN_FDNAMES");
	char name[LISTEN_MAX_FDNAME];
	struct listen_sock *to;
	long nfds = listen_passed(), i;
	int fd, rc = 0;

	pool->fd = status->fd = -1;
	if (nfds < 1)
		goto done;
	if (nfds > LISTEN_MAX_FDS) {
		log_err("%s: LISTEN_FDS=%ld: more than %d sockets", __func__,
		    nfds, LISTEN_MAX_FDS);
		rc = -1;
		goto done;
	}
	for (i = 0; i < nfds; i++) {
		fd = LISTEN_SD_FD + (int)i;
		listen_fdname(names, i, name, sizeof(name));
		to = strcmp(name, LISTEN_FDNAME_STATUS) == 0 ? status : pool;
		if (to->fd != -1) {
			log_warn("%s: fd %d (%s) from systemd: one %s socket "
			    "is enough, closing it", __func__, fd, name,
			    to == status ? "status" : "pool");
			close(fd);
			continue;
		}
		if (rc == 0 && listen_adopt(to, fd, name) == -1)
			rc = -1;
	}
done:
	/* The environment describes this process only: not the workers. */
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return rc;
}

/* Returns 1 if something accepts connections at path. */
static int
listen_unix_alive(const char *path)
{
	struct sockaddr_un sun;
	int fd, rc;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strlen(path) + 1);	/* length checked */
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return 1;	/* cannot tell: assume alive, refuse */
	rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	close(fd);
	return rc == 0 || errno != ECONNREFUSED;
}

static int
listen_unix_clear(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == -1)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISSOCK(st.st_mode)) {
		log_err("%s: %s exists and is not a socket", __func__, path);
		return -1;
	}
	if (listen_unix_alive(path)) {
		log_err("%s: %s is in use by another server", __func__, path);
		return -1;
	}
	log_notice("removing stale socket %s", path);
	if (unlink(path) == -1) {
		log_err("%s: unlink(%s) failed: %s", __func__, path,
		    strerror(errno));
		return -1;
	}
	return 0;
}

int
listen_spec_owner(const struct listen_spec *spec, uid_t *uid, gid_t *gid,
    char *why, size_t whylen)
{
	*uid = (uid_t)-1;
	*gid = (gid_t)-1;
	if (spec->owner[0] != '\0' && userdb_user(spec->owner, uid, NULL) ==
	    -1) {
		snprintf(why, whylen, "%s.owner: no such user \"%s\"",
		    spec->key, spec->owner);
		return -1;
	}
	if (spec->group[0] != '\0' && userdb_group(spec->group, gid) == -1) {
		snprintf(why, whylen, "%s.group: no such group \"%s\"",
		    spec->key, spec->group);
		return -1;
	}
	return 0;
}

static int
listen_unix_perms(const struct listen_sock *ls, const struct listen_spec *spec)
{
	char why[CONFIG_ERR_LEN];
	uid_t uid;
	gid_t gid;

	if (listen_spec_owner(spec, &uid, &gid, why, sizeof(why)) == -1) {
		log_err("%s", why);
		return -1;
	}
	if ((uid != (uid_t)-1 || gid != (gid_t)-1) &&
	    chown(ls->path, uid, gid) == -1) {
		log_err("%s: chown(%s) failed: %s", __func__, ls->path,
		    strerror(errno));
		return -1;
	}
	if (chmod(ls->path, spec->mode) == -1) {
		log_err("%s: chmod(%s) failed: %s", __func__, ls->path,
		    strerror(errno));
		return -1;
	}
	return 0;
}

static int
listen_bind_unix(struct listen_sock *ls, const struct listen_spec *spec)
{
	const char *path = spec->address;
	struct sockaddr_un sun;
	struct stat st;
	mode_t old;
	int rc;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_err("%s: path longer than %zu bytes", spec->key,
		    sizeof(sun.sun_path) - 1);
		return -1;
	}
	if (listen_unix_clear(path) == -1)
		return -1;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	memcpy(ls->path, path, strlen(path) + 1);
	ls->family = AF_UNIX;
	if ((ls->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	old = umask(0177);	/* no window with a too-open socket */
	rc = bind(ls->fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc == -1) {
		log_err("%s: bind(%s) failed: %s", __func__, ls->path,
		    strerror(errno));
		return -1;
	}
	ls->owned = 1;
	if (stat(ls->path, &st) == 0) {
		ls->dev = st.st_dev;
		ls->ino = st.st_ino;
	}
	return listen_unix_perms(ls, spec);
}

int
listen_resolve(const char *address, struct addrinfo **res, char *why,
    size_t whylen)
{
	char host[CONFIG_MAX_VALUE], port[CONFIG_MAX_VALUE];
	struct addrinfo hints;
	int rc;

	*res = NULL;
	if (config_split_address(address, host, sizeof(host), port,
	    sizeof(port), why, whylen) == -1)
		return -1;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if ((rc = getaddrinfo(host, port, &hints, res)) != 0) {
		snprintf(why, whylen, "%s: %s", address, gai_strerror(rc));
		*res = NULL;
		return -1;
	}
	return 0;
}

static int
listen_bind_inet(struct listen_sock *ls, const struct listen_spec *spec)
{
	char why[CONFIG_ERR_LEN];
	struct addrinfo *res;
	int on = 1;

	if (listen_resolve(spec->address, &res, why, sizeof(why)) == -1) {
		log_err("%s: %s", spec->key, why);
		return -1;
	}
	ls->family = res->ai_family;
	ls->fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, 0);
	if (ls->fd == -1 ||
	    setsockopt(ls->fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == -1 ||
	    (res->ai_family == AF_INET6 && setsockopt(ls->fd, IPPROTO_IPV6,
	    IPV6_V6ONLY, &on, sizeof(on)) == -1) ||
	    bind(ls->fd, res->ai_addr, res->ai_addrlen) == -1) {
		log_err("%s: bind(%s) failed: %s", __func__, spec->address,
		    strerror(errno));
		freeaddrinfo(res);
		return -1;
	}
	freeaddrinfo(res);
	return 0;
}

void
listen_spec_pool(const struct config *cfg, struct listen_spec *spec)
{
	*spec = (struct listen_spec){ .key = "listen", .address = cfg->listen,
	    .backlog = cfg->listen_backlog, .owner = cfg->listen_owner,
	    .group = cfg->listen_group, .mode = cfg->listen_mode };
}

/* The status socket shares only the backlog with the pool socket. */
void
listen_spec_status(const struct config *cfg, struct listen_spec *spec)
{
	*spec = (struct listen_spec){ .key = "pm.status_listen",
	    .address = cfg->status_listen, .backlog = cfg->listen_backlog,
	    .owner = cfg->status_owner, .group = cfg->status_group,
	    .mode = cfg->status_mode };
}

int
listen_bind(struct listen_sock *ls, const struct listen_spec *spec)
{
	memset(ls, 0, sizeof(*ls));
	ls->fd = -1;
	if (spec->address[0] == '/') {
		if (listen_bind_unix(ls, spec) == -1)
			goto fail;
	} else if (listen_bind_inet(ls, spec) == -1)
		goto fail;
	if (listen(ls->fd, spec->backlog) == -1) {
		log_err("%s: listen() failed: %s", __func__, strerror(errno));
		goto fail;
	}
	if (listen_nonblock(ls->fd) == -1)
		goto fail;
	return 0;
fail:
	listen_close(ls);
	return -1;
}

int
listen_set_rcvbuf(const struct listen_sock *ls)
{
	/* Linux doubles it and keeps half for its own accounting. */
	int size = 2 * FCGI_MAX_REQUEST;

	if (ls->family != AF_INET && ls->family != AF_INET6)
		return 0;
	return setsockopt(ls->fd, SOL_SOCKET, SO_RCVBUF, &size,
	    sizeof(size));
}

int
listen_accept(int fd, const struct allow_list *allowed)
{
	static struct log_flood refused;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char peer[ALLOW_TEXT_MAX];
	int c;

	c = accept4(fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK |
	    SOCK_CLOEXEC);
	if (c == -1 || allow_match(allowed, (struct sockaddr *)&ss, len))
		return c;
	allow_text((struct sockaddr *)&ss, len, peer, sizeof(peer));
	(void)log_flood(&refused, CONFIG_LOG_ERROR, "Connection disallowed: "
	    "IP address '%s' has been dropped (listen.allowed_clients)",
	    peer);
	(void)close(c);
	errno = EAGAIN;
	return -1;
}

int
listen_accept_starved(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS ||
	    err == ENOMEM;
}

void
listen_close(struct listen_sock *ls)
{
	struct stat st;

	if (ls->fd != -1)
		close(ls->fd);
	ls->fd = -1;
	/* Remove only the very file we bound, not a successor's. */
	if (ls->owned && stat(ls->path, &st) == 0 && st.st_dev == ls->dev &&
	    st.st_ino == ls->ino && unlink(ls->path) == -1)
		log_warn("%s: unlink(%s) failed: %s", __func__, ls->path,
		    strerror(errno));
	ls->owned = 0;
}

/* TCP: for a listening socket the kernel reports the accept queue in
 * tcpi_unacked and its limit in tcpi_sacked. */
static int
listen_queue_tcp(int fd, unsigned *queued, unsigned *limit)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == -1)
		return -1;
	*queued = ti.tcpi_unacked;
	*limit = ti.tcpi_sacked;
	return 0;
}

static int
listen_diag_request(int nl, ino_t ino)
{
	struct {
		struct nlmsghdr		nlh;
		struct unix_diag_req	req;
	} msg;
	struct sockaddr_nl sa;

	memset(&msg, 0, sizeof(msg));
	memset(&sa, 0, sizeof(sa));
	sa.nl_family = AF_NETLINK;
	msg.nlh.nlmsg_len = sizeof(msg);
	msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	msg.nlh.nlmsg_flags = NLM_F_REQUEST;
	msg.req.sdiag_family = AF_UNIX;
	msg.req.udiag_states = 1 << 10;		/* TCP_LISTEN */
	msg.req.udiag_ino = (unsigned)ino;
	msg.req.udiag_show = UDIAG_SHOW_RQLEN;
	msg.req.udiag_cookie[0] = msg.req.udiag_cookie[1] = ~0U;
	return sendto(nl, &msg, sizeof(msg), 0, (struct sockaddr *)&sa,
	    sizeof(sa)) == -1 ? -1 : 0;
}

/* Walks the answer for UNIX_DIAG_RQLEN: queue length and backlog. */
static int
listen_diag_parse(const char *buf, ssize_t n, unsigned *queued,
    unsigned *limit)
{
	const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
	const struct unix_diag_msg *m;
	const struct rtattr *a;
	const struct unix_diag_rqlen *rq;
	int alen;

	if (!NLMSG_OK(h, (unsigned)n) || h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
		return -1;
	m = NLMSG_DATA(h);
	a = (const struct rtattr *)(m + 1);
	alen = (int)h->nlmsg_len - NLMSG_LENGTH(sizeof(*m));
	for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
		if (a->rta_type != UNIX_DIAG_RQLEN ||
		    RTA_PAYLOAD(a) < (int)sizeof(*rq))
			continue;
		rq = RTA_DATA(a);
		*queued = rq->udiag_rqueue;
		*limit = rq->udiag_wqueue;
		return 0;
	}
	return -1;
}

static int
listen_queue_unix(int fd, unsigned *queued, unsigned *limit)
{
	char buf[1024];
	struct stat st;
	ssize_t n;
	int nl, rc = -1;

	if (fstat(fd, &st) == -1)
		return -1;
	nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl == -1)
		return -1;
	if (listen_diag_request(nl, st.st_ino) == 0 &&
	    (n = recv(nl, buf, sizeof(buf), 0)) > 0)
		rc = listen_diag_parse(buf, n, queued, limit);
	close(nl);
	return rc;
}

int
listen_queue(const struct listen_sock *ls, unsigned *queued,
    unsigned *limit)
{
	if (ls->fd == -1)
		return -1;
	if (ls->family == AF_UNIX)
		return listen_queue_unix(ls->fd, queued, limit);
	return listen_queue_tcp(ls->fd, queued, limit);
}

const char *
listen_describe(const struct listen_sock *ls, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (ls->family == AF_UNIX) {
		if (ls->path[0] != '\0')
			snprintf(buf, len, "unix:%s", ls->path);
		else
			snprintf(buf, len, "unix:fd %d", ls->fd);
		return buf;
	}
	if (getsockname(ls->fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
			port = ntohs(s6->sin6_port);
			snprintf(buf, len, "tcp:[%s]:%d", host, port);
			return buf;
		}
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr,
		    host, sizeof(host));
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	}
	snprintf(buf, len, "tcp:%s:%d", host, port);
	return buf;
}
