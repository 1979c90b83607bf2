/*
 * sandbox.c: privilege drop and system-call filter (see sandbox.h).
 * Who the workers run as is decided in the master; the drop and the
 * filter run in each worker, the drop right after fork and the filter
 * after its init.
 */
#include "server/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <seccomp.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "util/log.h"
#include "util/userdb.h"

/*
 * Bits of an open(2) flag word that decide what an open may do to a
 * file: access mode, creation, truncation, a path-only descriptor, an
 * anonymous temporary file (O_TMPFILE without its O_DIRECTORY bit). The
 * others (O_CLOEXEC, O_NONBLOCK, O_DIRECTORY, O_LARGEFILE, ...) change
 * nothing in any file.
 */
#define SANDBOX_OPEN_WRITES	(O_ACCMODE | O_CREAT | O_TRUNC | O_PATH | \
				 (O_TMPFILE & ~O_DIRECTORY))
/* For the writes allowed: also exclusive creation, append, no links. */
#define SANDBOX_OPEN_LOG	(SANDBOX_OPEN_WRITES | O_EXCL | O_APPEND | \
				 O_NOFOLLOW)

static int sandbox_root_allowed;

#if defined(__SANITIZE_ADDRESS__)
static int sandbox_filtered;	/* this process runs under the filter */

/*
 * Sanitizer builds only: LeakSanitizer's check at exit stops the world
 * with a tracer thread (clone, prctl, ptrace), which the filter forbids:
 * a filtered worker would die of SIGSYS on its way out instead of exiting.
 * The runtime asks this hook first; leak checks stay on everywhere else.
 */
int
__lsan_is_turned_off(void)
{
	return sandbox_filtered;
}
#endif

void
sandbox_allow_root(int allow)
{
	sandbox_root_allowed = allow;
}

/*
 * The ids cfg's user and group name, into *uid and *gid: the group
 * defaults to the user's primary one ((gid_t)-1 for a numeric user
 * without a passwd entry); a name not set leaves its id as it is.
 * Returns 0, or -1 with "name: user: no such user ..." (or the group's)
 * in err (errlen bytes; err may be NULL with errlen 0).
 */
static int
sandbox_lookup(const struct config *cfg, uid_t *uid, gid_t *gid,
    const char *name, char *err, size_t errlen)
{
	if (cfg->user[0] != '\0' && userdb_user(cfg->user, uid, gid) == -1) {
		snprintf(err, errlen, "%s: user: no such user \"%s\"", name,
		    cfg->user);
		return -1;
	}
	if (cfg->group[0] != '\0' && userdb_group(cfg->group, gid) == -1) {
		snprintf(err, errlen, "%s: group: no such group \"%s\"", name,
		    cfg->group);
		return -1;
	}
	return 0;
}

int
sandbox_resolve(const struct config *cfg, const char *name,
    struct sandbox_ids *ids, char *err, size_t errlen)
{
	memset(ids, 0, sizeof(*ids));
	if (geteuid() != 0)
		return 0;	/* nothing to give up: user/group ignored */
	if (cfg->user[0] == '\0')
		goto root;
	if (sandbox_lookup(cfg, &ids->uid, &ids->gid, name, err, errlen) == -1)
		return -1;
	if (ids->gid == (gid_t)-1) {
		snprintf(err, errlen, "%s: group: must be set, user "
		    "%s has no passwd entry to take it from", name, cfg->user);
		return -1;
	}
	if (ids->uid == 0 || ids->gid == 0)
		goto root;
	ids->drop = 1;
	return 0;
root:
	/* As PHP-FPM: workers parse what any client sends; root only on
	 * explicit request. */
	if (!sandbox_root_allowed) {
		snprintf(err, errlen, "%s: please specify user and "
		    "group other than root (or start cfpm with -R, "
		    "--allow-to-run-as-root)", name);
		return -1;
	}
	ids->drop = ids->uid != 0;	/* -R with a root gid only */
	return 0;
}

int
sandbox_is_self(const struct config *cfg)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();

	if (sandbox_lookup(cfg, &uid, &gid, "", NULL, 0) == -1)
		return 0;
	return uid == geteuid() && gid == getegid();
}

int
sandbox_drop(const struct sandbox_ids *ids)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;

	if (!ids->drop)
		return 0;
	/* Groups first: once the uid is gone, so is the right to change
	 * them. The saved ids go too, or root could be taken back. */
	if (setgroups(0, NULL) == -1 ||
	    setresgid(ids->gid, ids->gid, ids->gid) == -1 ||
	    setresuid(ids->uid, ids->uid, ids->uid) == -1) {
		log_err("%s: cannot become uid %u gid %u: %s", __func__,
		    (unsigned)ids->uid, (unsigned)ids->gid, strerror(errno));
		return -1;
	}
	if (getresuid(&ru, &eu, &su) == -1 || getresgid(&rg, &eg, &sg) == -1 ||
	    ru != ids->uid || eu != ids->uid || su != ids->uid ||
	    rg != ids->gid || eg != ids->gid || sg != ids->gid ||
	    getgroups(0, NULL) != 0 || setuid(0) != -1 || setgid(0) != -1) {
		log_err("%s: the drop to uid %u gid %u did not hold", __func__,
		    (unsigned)ids->uid, (unsigned)ids->gid);
		return -1;
	}
	return 0;
}

/*
 * The allow-list without argument checks. What serves a request: the
 * FastCGI connection (accept, read, write, poll and epoll, socket
 * options, shutdown), memory (brk, munmap, mremap, madvise), time
 * (clock_gettime for CPU time, setitimer for request_terminate_timeout),
 * signals (handlers return through rt_sigreturn; SIGUSR1/SIGTERM are
 * waited for in epoll_pwait), futex (libc locks), exit. What libpq needs
 * to connect again: connect, getsockopt(SO_ERROR),
 * setsockopt(TCP_NODELAY, keepalives), fcntl(O_NONBLOCK), send/recv,
 * getrandom (TLS), the identity calls and stat (~/.pgpass, getpwuid_r),
 * getdents64 (GSSAPI's mechanism directory), and for host names uname
 * and the resolver's sendmmsg/recvfrom on a UDP socket.
 * Log reopening: dup2/dup3 onto stderr, fstat. Everything else (exec,
 * fork, clone, ptrace, process_vm_*, mount, chroot, set*id, bind,
 * listen, unlink, rename, chmod, chown, mknod, symlink, ...) is absent
 * and so kills the worker.
 */
static const int sandbox_allowed[] = {
	/* I/O on descriptors it has or gets */
	SCMP_SYS(read), SCMP_SYS(readv), SCMP_SYS(pread64),
	SCMP_SYS(write), SCMP_SYS(writev), SCMP_SYS(close),
	SCMP_SYS(lseek), SCMP_SYS(fcntl), SCMP_SYS(dup), SCMP_SYS(dup3),
	SCMP_SYS(fstat), SCMP_SYS(newfstatat), SCMP_SYS(statx),
	SCMP_SYS(faccessat), SCMP_SYS(faccessat2),
	/* libpq over TCP asks GSSAPI for credentials, which lists the
	 * directory /etc/gss/mech.d at every connection attempt */
	SCMP_SYS(getdents64),
	/* waiting */
	SCMP_SYS(ppoll), SCMP_SYS(pselect6), SCMP_SYS(epoll_create1),
	SCMP_SYS(epoll_ctl), SCMP_SYS(epoll_pwait), SCMP_SYS(epoll_pwait2),
	/* sockets (which ones may be created: sandbox_filter) */
	SCMP_SYS(connect), SCMP_SYS(accept4), SCMP_SYS(recvfrom),
	SCMP_SYS(recvmsg), SCMP_SYS(recvmmsg), SCMP_SYS(sendto),
	SCMP_SYS(sendmsg), SCMP_SYS(sendmmsg), SCMP_SYS(shutdown),
	SCMP_SYS(getsockname), SCMP_SYS(getpeername), SCMP_SYS(getsockopt),
	SCMP_SYS(setsockopt),
	/* memory (mmap and mprotect: sandbox_filter) */
	SCMP_SYS(brk), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(madvise),
	/* time and timers */
	SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres),
	SCMP_SYS(clock_nanosleep), SCMP_SYS(nanosleep),
	SCMP_SYS(gettimeofday), SCMP_SYS(setitimer), SCMP_SYS(getitimer),
	/* signals, in this process */
	SCMP_SYS(rt_sigaction), SCMP_SYS(rt_sigprocmask),
	SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigpending),
	SCMP_SYS(rt_sigtimedwait), SCMP_SYS(sigaltstack),
	SCMP_SYS(restart_syscall),
	/* who and where it is; nothing here changes anything */
	SCMP_SYS(getpid), SCMP_SYS(getppid), SCMP_SYS(gettid),
	SCMP_SYS(getuid), SCMP_SYS(geteuid), SCMP_SYS(getgid),
	SCMP_SYS(getegid), SCMP_SYS(getresuid), SCMP_SYS(getresgid),
	SCMP_SYS(getgroups), SCMP_SYS(uname), SCMP_SYS(sched_yield),
	SCMP_SYS(sched_getaffinity),
	SCMP_SYS(getrandom), SCMP_SYS(futex),
	SCMP_SYS(exit), SCMP_SYS(exit_group),
	/* the older x86 names glibc or libraries still use */
#ifdef __NR_poll
	SCMP_SYS(poll),
#endif
#ifdef __NR_select
	SCMP_SYS(select),
#endif
#ifdef __NR_epoll_wait
	SCMP_SYS(epoll_wait),
#endif
#ifdef __NR_epoll_create
	SCMP_SYS(epoll_create),
#endif
#ifdef __NR_accept
	SCMP_SYS(accept),
#endif
#ifdef __NR_dup2
	SCMP_SYS(dup2),
#endif
#ifdef __NR_stat
	SCMP_SYS(stat), SCMP_SYS(lstat),
#endif
#ifdef __NR_access
	SCMP_SYS(access),
#endif
#ifdef __NR_time
	SCMP_SYS(time),
#endif
#ifdef __NR_alarm
	SCMP_SYS(alarm),
#endif
#if defined(__SANITIZE_ADDRESS__)
	/* ASan and UBSan reports: the executable's path, the maps. */
	SCMP_SYS(readlink), SCMP_SYS(readlinkat),
#endif
};

/*
 * The only opens open() and openat() may make: flags & mask == value.
 * Read-only, creating and truncating nothing (libpq's ~/.pgpass and root
 * certificates, the resolver's /etc/hosts, NSS's /etc/passwd), and the
 * two ways util/log.c opens a log file after a rotation: append to an
 * existing file, or create a new one exclusively, never through a link.
 * No open can write to, truncate or create a file in any other way.
 */
static const struct {
	unsigned	mask;
	unsigned	value;
} sandbox_opens[] = {
	{ SANDBOX_OPEN_WRITES, O_RDONLY },
	{ SANDBOX_OPEN_LOG, LOG_OPEN_FLAGS & SANDBOX_OPEN_LOG },
	{ SANDBOX_OPEN_LOG, LOG_CREATE_FLAGS & SANDBOX_OPEN_LOG },
#if defined(__SANITIZE_ADDRESS__)
	/* Sanitizer builds only: the report file (log_path.PID). */
	{ SANDBOX_OPEN_LOG, O_WRONLY | O_CREAT | O_TRUNC },
#endif
};

/* Sockets libpq and the resolver create. */
static const int sandbox_domains[] = { AF_UNIX, AF_INET, AF_INET6 };

static int
sandbox_rules(scmp_filter_ctx ctx)
{
	size_t i;
	int rc = 0;

	for (i = 0; rc == 0 && i < sizeof(sandbox_allowed) /
	    sizeof(sandbox_allowed[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, sandbox_allowed[i],
		    0);
	for (i = 0; rc == 0 && i < sizeof(sandbox_opens) /
	    sizeof(sandbox_opens[0]); i++) {
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
		    SCMP_A2(SCMP_CMP_MASKED_EQ, sandbox_opens[i].mask,
		    sandbox_opens[i].value));
#ifdef __NR_open
		if (rc == 0)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW,
			    SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ,
			    sandbox_opens[i].mask, sandbox_opens[i].value));
#endif
	}
	for (i = 0; rc == 0 && i < sizeof(sandbox_domains) /
	    sizeof(sandbox_domains[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
		    SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)sandbox_domains[i]));
	/* No new executable memory: code comes only from what is loaded. */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
		    SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
		    SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	/* abort() and raise() signal this very process. */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
		    SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()));
	/* isatty(), as sanitizers and stdio ask it: TCGETS only, never an
	 * ioctl that changes or injects anything (TIOCSTI). */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
		    SCMP_A1(SCMP_CMP_EQ, TCGETS));
#if defined(__SANITIZE_ADDRESS__)
	/* Sanitizer builds only: a report starts an external symbolizer
	 * (pipe, then fork and exec). The pipe fails instead of killing, so
	 * the runtime gives up on symbols and still writes the report, with
	 * module+offset frames. fork and exec stay forbidden. */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
		    SCMP_SYS(pipe2), 0);
#ifdef __NR_pipe
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
		    SCMP_SYS(pipe), 0);
#endif
#endif
	/* getrlimit() of itself, never setting one. */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64),
		    2, SCMP_A0(SCMP_CMP_EQ, 0), SCMP_A2(SCMP_CMP_EQ, 0));
	return rc;
}

int
sandbox_filter(void)
{
	scmp_filter_ctx ctx;
	int rc;

	/* No exec could ever gain privileges again (and seccomp needs it
	 * without CAP_SYS_ADMIN). */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		log_err("%s: prctl(PR_SET_NO_NEW_PRIVS) failed: %s", __func__,
		    strerror(errno));
		return -1;
	}
	if ((ctx = seccomp_init(SCMP_ACT_KILL_PROCESS)) == NULL) {
		log_err("%s: seccomp_init failed", __func__);
		return -1;
	}
	/* A binary tree of system call numbers instead of a linear scan:
	 * the filter runs on every call. Without it the filter is slower,
	 * not weaker. */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if ((rc = sandbox_rules(ctx)) == 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
#if defined(__SANITIZE_ADDRESS__)
	sandbox_filtered = rc == 0;
#endif
	if (rc != 0) {
		log_err("%s: loading the system-call filter failed: %s",
		    __func__, strerror(-rc));
		return -1;
	}
	return 0;
}
