/*
 * test_sandbox.c: the workers' privilege drop and system-call filter.
 * Each case forks a child that loads the very filter workers load
 * (sandbox_filter), then makes one call: allowed calls must work, and
 * every call off the list must kill the child with SIGSYS. The drop and
 * the user look-ups need root and are skipped without it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#include "util/config.h"
#include "util/log.h"
#include "server/sandbox.h"
#include "tap.h"

#define CHILD_NO_FILTER	100	/* exit status: the filter did not load */
#define CHILD_FAILED	101	/* exit status: an allowed call failed */

static char tmpdir[] = "/tmp/cfpm-test-sandbox-XXXXXX";
static char path_buf[PATH_MAX];

static const char *
tmp_path(const char *name)
{
	snprintf(path_buf, sizeof(path_buf), "%s/%s", tmpdir, name);
	return path_buf;
}

/*
 * Runs fn in a child under the filter (or without it when filter is 0)
 * and returns its wait status. fn returns 0 when what it checked held.
 * prep, if not NULL, runs in the child before the filter is loaded.
 */
static pid_t last_child;

static int
in_child_prep(int filter, void (*prep)(void), int (*fn)(void))
{
	pid_t pid;
	int status;

	fflush(stdout);
	if ((pid = last_child = fork()) == -1)
		return -1;
	if (pid == 0) {
		if (prep != NULL)
			prep();
		if (filter && sandbox_filter() == -1)
			_exit(CHILD_NO_FILTER);
		_exit(fn() == 0 ? 0 : CHILD_FAILED);
	}
	if (waitpid(pid, &status, 0) == -1)
		return -1;
	return status;
}

static int
in_child(int filter, int (*fn)(void))
{
	return in_child_prep(filter, NULL, fn);
}

static const char *
describe(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "signal %d", WTERMSIG(status));
	else
		snprintf(buf, len, "status %#x", status);
	return buf;
}

static void
expect_allowed(int (*fn)(void), const char *what)
{
	char buf[64];
	int st = in_child(1, fn);

	if (!ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "allowed under the filter: %s", what))
		printf("#   child: %s\n", describe(st, buf, sizeof(buf)));
}

static void
expect_killed(int (*fn)(void), const char *what)
{
	char buf[64];
	int st = in_child(1, fn);

	if (!ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS,
	    "killed by SIGSYS: %s", what))
		printf("#   child: %s\n", describe(st, buf, sizeof(buf)));
}

/* ---- allowed: what a worker does while serving and reconnecting ---- */

static int io_pipe[2] = { -1, -1 };	/* made before: pipe is not allowed */

static int
do_nothing(void)
{
	return 0;
}

/* Reads "Name:\t<value>" from /proc/self/status into buf. */
static int
proc_status(const char *name, char *buf, size_t len)
{
	char line[256];
	size_t n = strlen(name);
	FILE *f = fopen("/proc/self/status", "re");
	int rc = -1;

	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, name, n) != 0 || line[n] != ':')
			continue;
		snprintf(buf, len, "%s", line + n + 1 + strspn(line + n + 1,
		    " \t"));
		buf[strcspn(buf, "\n")] = '\0';
		rc = 0;
	}
	if (f != NULL)
		fclose(f);
	return rc;
}

static int
do_status_filtered(void)
{
	char nnp[32], sc[32];

	return proc_status("NoNewPrivs", nnp, sizeof(nnp)) == 0 &&
	    proc_status("Seccomp", sc, sizeof(sc)) == 0 &&
	    strcmp(nnp, "1") == 0 && strcmp(sc, "2") == 0 ? 0 : -1;
}

static int
do_read_write(void)
{
	char c = 0;

	return write(io_pipe[1], "x", 1) == 1 && read(io_pipe[0], &c, 1) == 1
	    && c == 'x' ? 0 : -1;
}

static int
do_clocks_and_timers(void)
{
	struct itimerval it;
	struct timespec ts;

	memset(&it, 0, sizeof(it));
	return clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0 &&
	    clock_gettime(CLOCK_MONOTONIC, &ts) == 0 &&
	    setitimer(ITIMER_REAL, &it, NULL) == 0 && getpid() > 0 &&
	    getppid() > 0 ? 0 : -1;
}

static int
do_read_only_open(void)
{
	char buf[64];
	int fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
	FILE *f;

	if (fd == -1 || read(fd, buf, sizeof(buf)) <= 0)
		return -1;
	close(fd);
	/* stdio, as libpq reads ~/.pgpass */
	if ((f = fopen("/etc/hosts", "re")) == NULL)
		return -1;
	fclose(f);
	/* a directory, read-only */
	if ((fd = open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	close(fd);
	return 0;
}

static int
do_log_opens(void)
{
	int fd, fd2;

	/* Created exclusively, then reopened: both ways log.c opens. */
	if ((fd = log_open_append(tmp_path("new.log"))) == -1)
		return -1;
	if ((fd2 = log_open_append(tmp_path("new.log"))) == -1)
		return -1;
	if (write(fd, "one\n", 4) != 4 || write(fd2, "two\n", 4) != 4)
		return -1;
	close(fd);
	close(fd2);
	return 0;
}

static int
do_sockets(void)
{
	static const int domains[] = { AF_UNIX, AF_INET, AF_INET6 };
	size_t i;
	int fd;

	for (i = 0; i < sizeof(domains) / sizeof(domains[0]); i++) {
		fd = socket(domains[i], SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd == -1 && errno != EAFNOSUPPORT)
			return -1;
		if (fd != -1)
			close(fd);
	}
	/* the resolver's UDP socket */
	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	close(fd);
	return 0;
}

static int
do_memory(void)
{
	void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *q;

	if (p == MAP_FAILED || mprotect(p, 4096, PROT_READ) == -1 ||
	    munmap(p, 1 << 20) == -1)
		return -1;
	if ((q = malloc(8 << 20)) == NULL)	/* past the mmap threshold */
		return -1;
	q[0] = 1;
	free(q);
	return 0;
}

static int
do_epoll(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ep = epoll_create1(EPOLL_CLOEXEC);
	sigset_t mask;

	sigemptyset(&mask);
	ev.data.fd = io_pipe[0];
	return ep != -1 && epoll_ctl(ep, EPOLL_CTL_ADD, io_pipe[0], &ev) == 0
	    && epoll_pwait(ep, &ev, 1, 0, &mask) == 0 ? 0 : -1;
}

/* conn.c: the wait before reading a trickling client again. */
static int
do_trickle_pause(void)
{
	return poll(NULL, 0, 1) == 0 ? 0 : -1;
}

/* worker.c: out of descriptors at accept, the listen socket and the wake
 * eventfd leave the wait (EPOLLEXCLUSIVE: deleted, then added again). */
static int
do_accept_pause(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	ev.data.fd = io_pipe[0];
	return ep != -1 && epoll_ctl(ep, EPOLL_CTL_ADD, io_pipe[0], &ev) == 0
	    && epoll_ctl(ep, EPOLL_CTL_DEL, io_pipe[0], NULL) == 0 &&
	    epoll_ctl(ep, EPOLL_CTL_ADD, io_pipe[0], &ev) == 0 ? 0 : -1;
}

static int
do_limits(void)
{
	struct rlimit rl;

	return getrlimit(RLIMIT_NOFILE, &rl);
}

static int
do_signal_self(void)
{
	/* abort() and raise() go through tgkill on this process */
	return (int)syscall(SYS_tgkill, getpid(), (int)syscall(SYS_gettid), 0);
}

static int
do_isatty(void)
{
	(void)isatty(STDERR_FILENO);	/* ioctl(TCGETS) */
	return 0;
}

static int
do_dup_stderr(void)
{
	int fd = log_open_append(tmp_path("stderr.log"));

	/* log.c's reopen puts the file on stderr */
	return fd != -1 && dup2(fd, STDERR_FILENO) == STDERR_FILENO &&
	    close(fd) == 0 ? 0 : -1;
}

/* ---- forbidden: each of these must kill the child ---- */

static int
do_execve(void)
{
	char *argv[] = { "true", NULL }, *envp[] = { NULL };

	return (int)execve("/bin/true", argv, envp);
}

static int
do_execveat(void)
{
	char *argv[] = { "true", NULL }, *envp[] = { NULL };

	return (int)syscall(SYS_execveat, AT_FDCWD, "/bin/true", argv, envp,
	    0);
}

static int
do_ptrace(void)
{
	return (int)ptrace(PTRACE_TRACEME, 0, NULL, NULL);
}

static int
do_ptrace_attach(void)
{
	/* Itself, so that a wrong filter cannot stop the test. */
	return (int)ptrace(PTRACE_ATTACH, getpid(), NULL, NULL);
}

static int
do_process_vm_readv(void)
{
	char buf[8];
	struct iovec local = { buf, sizeof(buf) }, remote = { buf, sizeof(buf) };

	return (int)process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
}

static int
do_process_vm_writev(void)
{
	char buf[8] = { 0 };
	struct iovec local = { buf, sizeof(buf) }, remote = { buf, sizeof(buf) };

	return (int)process_vm_writev(getpid(), &local, 1, &remote, 1, 0);
}

static int
do_fork(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	return (int)pid;
}

static int
do_vfork(void)
{
	return (int)syscall(SYS_vfork);
}

static int
do_clone3(void)
{
	return (int)syscall(SYS_clone3, NULL, 0);
}

static int
do_setuid(void)
{
	return (int)syscall(SYS_setuid, getuid());
}

static int
do_setresgid(void)
{
	return (int)syscall(SYS_setresgid, -1, -1, -1);
}

static int
do_setgroups(void)
{
	return (int)syscall(SYS_setgroups, 0, NULL);
}

static int
do_mount(void)
{
	/* Harmless even if it ran: the target does not exist. */
	return (int)mount("none", "/nonexistent-cfpm-test", "tmpfs", 0, NULL);
}

static int
do_chroot(void)
{
	return (int)chroot("/nonexistent-cfpm-test");
}

static int
do_open_rdwr(void)
{
	return open(tmp_path("new.log"), O_RDWR | O_CLOEXEC);
}

static int
do_open_wronly(void)
{
	/* write access without append: could overwrite what is there */
	return open(tmp_path("new.log"), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
}

static int
do_open_trunc(void)
{
	return open(tmp_path("new.log"), O_WRONLY | O_APPEND | O_TRUNC |
	    O_NOFOLLOW | O_CLOEXEC);
}

static int
do_open_read_trunc(void)
{
	return open(tmp_path("new.log"), O_RDONLY | O_TRUNC | O_CLOEXEC);
}

static int
do_open_read_create(void)
{
	return open(tmp_path("created"), O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
}

static int
do_open_append_follow(void)
{
	/* the log's flags but following a symbolic link */
	return open(tmp_path("new.log"), (LOG_OPEN_FLAGS) & ~O_NOFOLLOW);
}

static int
do_open_create_not_excl(void)
{
	return open(tmp_path("other.log"), (LOG_CREATE_FLAGS) & ~O_EXCL, 0600);
}

static int
do_open_tmpfile(void)
{
	return open(tmpdir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
}

static int
do_open_path(void)
{
	return open("/etc/passwd", O_PATH | O_CLOEXEC);
}

#if !defined(__SANITIZE_ADDRESS__)
static int
do_open_create_trunc(void)
{
	/* what fopen(path, "w") does (sanitizer builds allow it for their
	 * reports only) */
	return open(tmp_path("new.log"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600);
}
#endif

static int
do_openat2(void)
{
	struct { unsigned long long flags, mode, resolve; } how = { 0, 0, 0 };

	return (int)syscall(SYS_openat2, AT_FDCWD, "/etc/passwd", &how, sizeof(how));
}

static int
do_socket_packet(void)
{
	return (int)socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
}

static int
do_socket_netlink(void)
{
	return (int)socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0);
}

static int
do_socketpair(void)
{
	int sv[2];

	return (int)socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
}

static int
do_bind(void)
{
	struct sockaddr_un {
		sa_family_t family;
		char path[108];
	} sun = { AF_UNIX, "" };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sun.path, sizeof(sun.path), "%s", tmp_path("s"));
	return (int)bind(fd, (struct sockaddr *)&sun, sizeof(sun));
}

static int
do_listen(void)
{
	return (int)listen(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), 1);
}

static int
do_kill_master_sigchld(void)
{
	/* a worker wakes its master through an eventfd, never a signal */
	return (int)kill(getppid(), SIGCHLD);
}

static int
do_kill_master_other_signal(void)
{
	return (int)kill(getppid(), SIGWINCH);
}

static int
do_kill_other_pid(void)
{
	/* SIGCHLD, but to a process other than the master: itself */
	return (int)kill(getpid(), SIGCHLD);
}

static int
do_mmap_exec(void)
{
	return mmap(NULL, 4096, PROT_READ | PROT_EXEC,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? -1 : 0;
}

static int
do_mprotect_exec(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return (int)mprotect(p, 4096, PROT_READ | PROT_EXEC);
}

static int
do_unlink(void)
{
	return (int)unlink(tmp_path("new.log"));
}

static int
do_rename(void)
{
	return (int)rename(tmp_path("new.log"), tmp_path("moved.log"));
}

static int
do_chmod(void)
{
	return (int)chmod(tmp_path("new.log"), 0666);
}

static int
do_fchown(void)
{
	int fd = log_open_append(tmp_path("new.log"));

	return (int)fchown(fd, getuid(), getgid());
}

static int
do_symlink(void)
{
	return (int)symlink("/etc/passwd", tmp_path("link"));
}

static int
do_mknod(void)
{
	return (int)mknod(tmp_path("fifo"), S_IFIFO | 0600, 0);
}

static int
do_prctl(void)
{
	return (int)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

static int
do_setrlimit(void)
{
	struct rlimit rl = { 1024, 1024 };

	return (int)setrlimit(RLIMIT_NOFILE, &rl);
}

#if defined(__SANITIZE_ADDRESS__)
static int
do_pipe_refused(void)
{
	int p[2];

	return pipe(p) == -1 && errno == EPERM ? 0 : -1;
}
#endif

static int
do_ioctl_tiocsti(void)
{
	char c = 'x';

	/* pushing input into a terminal: never */
	return ioctl(STDIN_FILENO, TIOCSTI, &c);
}

static int
do_ioctl_fionbio(void)
{
	int on = 1;

	return ioctl(io_pipe[0], FIONBIO, &on);
}

#if !defined(__SANITIZE_ADDRESS__)
static int
do_pipe(void)
{
	int p[2];

	return pipe(p);
}
#endif

static void
test_filter(void)
{
	static const struct {
		int (*fn)(void);
		const char *what;
	} allowed[] = {
		{ do_nothing, "nothing at all: the filter loads, exit works" },
		{ do_status_filtered, "/proc/self/status: NoNewPrivs 1, "
		    "Seccomp 2" },
		{ do_read_write, "read and write on descriptors it has" },
		{ do_clocks_and_timers, "CPU clock, setitimer, getpid" },
		{ do_read_only_open, "read-only opens (open, fopen, a directory)" },
		{ do_log_opens, "a log file created exclusively, then reopened" },
		{ do_sockets, "unix, IPv4, IPv6 and UDP sockets" },
		{ do_memory, "mmap, mprotect without exec, a large malloc" },
		{ do_epoll, "epoll_create1, epoll_ctl, epoll_pwait" },
		{ do_trickle_pause, "poll without descriptors (a trickle's "
		    "wait)" },
		{ do_accept_pause, "epoll_ctl: an EPOLLEXCLUSIVE socket out of "
		    "the wait and back (accept's pause)" },
		{ do_limits, "getrlimit" },
		{ do_signal_self, "tgkill of itself (abort, raise)" },
		{ do_dup_stderr, "a log file dup2'ed onto stderr" },
		{ do_isatty, "isatty (ioctl TCGETS)" },
	}, forbidden[] = {
		{ do_execve, "execve" },
		{ do_execveat, "execveat" },
		{ do_ptrace, "ptrace(PTRACE_TRACEME)" },
		{ do_ptrace_attach, "ptrace(PTRACE_ATTACH)" },
		{ do_process_vm_readv, "process_vm_readv" },
		{ do_process_vm_writev, "process_vm_writev" },
		{ do_fork, "fork" },
		{ do_vfork, "vfork" },
		{ do_clone3, "clone3" },
		{ do_setuid, "setuid" },
		{ do_setresgid, "setresgid" },
		{ do_setgroups, "setgroups" },
		{ do_mount, "mount" },
		{ do_chroot, "chroot" },
		{ do_open_rdwr, "open O_RDWR" },
		{ do_open_wronly, "open O_WRONLY without O_APPEND" },
		{ do_open_trunc, "open for append with O_TRUNC" },
		{ do_open_read_trunc, "open O_RDONLY|O_TRUNC" },
		{ do_open_read_create, "open O_RDONLY|O_CREAT" },
		{ do_open_append_follow, "the log's open without O_NOFOLLOW" },
		{ do_open_create_not_excl, "the log's create without O_EXCL" },
		{ do_open_tmpfile, "open O_TMPFILE" },
		{ do_open_path, "open O_PATH" },
#if !defined(__SANITIZE_ADDRESS__)
		{ do_open_create_trunc, "open O_WRONLY|O_CREAT|O_TRUNC" },
#endif
		{ do_openat2, "openat2 (flags out of the filter's sight)" },
		{ do_socket_packet, "socket(AF_PACKET)" },
		{ do_socket_netlink, "socket(AF_NETLINK)" },
		{ do_socketpair, "socketpair" },
		{ do_bind, "bind" },
		{ do_listen, "listen" },
		{ do_kill_master_sigchld, "kill of the master with SIGCHLD" },
		{ do_kill_master_other_signal, "kill of the master with SIGWINCH" },
		{ do_kill_other_pid, "kill of another process with SIGCHLD" },
		{ do_mmap_exec, "mmap with PROT_EXEC" },
		{ do_mprotect_exec, "mprotect with PROT_EXEC" },
		{ do_unlink, "unlink" },
		{ do_rename, "rename" },
		{ do_chmod, "chmod" },
		{ do_fchown, "fchown" },
		{ do_symlink, "symlink" },
		{ do_mknod, "mknod (a FIFO)" },
		{ do_prctl, "prctl" },
		{ do_setrlimit, "setrlimit" },
#if !defined(__SANITIZE_ADDRESS__)
		{ do_pipe, "pipe" },
#endif
		{ do_ioctl_tiocsti, "ioctl TIOCSTI" },
		{ do_ioctl_fionbio, "ioctl FIONBIO (any ioctl but TCGETS)" },
	};
	char buf[64];
	size_t i;
	int st;

	if (pipe(io_pipe) == -1) {
		ok(0, "pipe: %s", strerror(errno));
		return;
	}
	for (i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		expect_allowed(allowed[i].fn, allowed[i].what);
	for (i = 0; i < sizeof(forbidden) / sizeof(forbidden[0]); i++)
		expect_killed(forbidden[i].fn, forbidden[i].what);
#if defined(__SANITIZE_ADDRESS__)
	/* Sanitizer builds: pipe fails (the symbolizer is not started). */
	st = in_child(1, do_pipe_refused);
	if (!ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "sanitizer build: pipe fails with EPERM under the filter"))
		printf("#   child: %s\n", describe(st, buf, sizeof(buf)));
#endif
	/* Controls: without the filter the same calls do not kill. */
	st = in_child(0, do_execve);
	if (!ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "control: execve without the filter runs /bin/true"))
		printf("#   child: %s\n", describe(st, buf, sizeof(buf)));
	st = in_child(0, do_ptrace);
	if (!ok(WIFEXITED(st), "control: ptrace without the filter returns"))
		printf("#   child: %s\n", describe(st, buf, sizeof(buf)));
	st = in_child(0, do_status_filtered);
	if (!ok(WIFEXITED(st) && WEXITSTATUS(st) == CHILD_FAILED,
	    "control: without the filter, no NoNewPrivs and no Seccomp 2"))
		printf("#   child: %s\n", describe(st, buf, sizeof(buf)));
	close(io_pipe[0]);
	close(io_pipe[1]);
}

/* ---- who a worker becomes (root only) ---- */

static int
resolve(const char *user, const char *group, int allow_root,
    struct sandbox_ids *ids, char *err, size_t errlen)
{
	static struct config cfg;

	config_defaults(&cfg);
	snprintf(cfg.user, sizeof(cfg.user), "%s", user);
	snprintf(cfg.group, sizeof(cfg.group), "%s", group);
	sandbox_allow_root(allow_root);
	err[0] = '\0';
	return sandbox_resolve(&cfg, "t.conf", ids, err, errlen);
}

static void
expect_refused(const char *user, const char *group, int allow_root,
    const char *want, const char *what)
{
	struct sandbox_ids ids;
	char err[CONFIG_ERR_LEN];

	is_int(resolve(user, group, allow_root, &ids, err, sizeof(err)), -1,
	    "%s: refused", what);
	ok(strstr(err, want) != NULL && strncmp(err, "t.conf: ", 8) == 0,
	    "%s: \"%s\" names the file and has \"%s\"", what, err, want);
}

static void
expect_ids(const char *user, const char *group, int allow_root, int drop,
    uid_t uid, gid_t gid, const char *what)
{
	struct sandbox_ids ids;
	char err[CONFIG_ERR_LEN];

	if (!ok(resolve(user, group, allow_root, &ids, err, sizeof(err)) == 0 &&
	    ids.drop == drop && (!drop || (ids.uid == uid && ids.gid == gid)),
	    "%s", what))
		printf("#   err \"%s\", drop %d, uid %u, gid %u\n", err,
		    ids.drop, (unsigned)ids.uid, (unsigned)ids.gid);
}

static void
test_resolve(uid_t nobody, gid_t nogroup, gid_t nobody_primary)
{
	const char *root = "please specify user and group other than root";
	char num[32];

	expect_refused("", "", 0, root, "no user while root");
	expect_refused("", "nogroup", 0, root, "a group but no user");
	expect_refused("root", "", 0, root, "user root");
	expect_refused("0", "", 0, root, "user 0 (numeric)");
	expect_refused("nobody", "root", 0, root, "group root");
	expect_refused("nobody", "0", 0, root, "group 0 (numeric)");
	expect_refused("no-such-user-cfpm", "", 0,
	    "user: no such user \"no-such-user-cfpm\"", "unknown user");
	expect_refused("nobody", "no-such-group-cfpm", 0,
	    "group: no such group \"no-such-group-cfpm\"", "unknown group");
	expect_refused("no-such-user-cfpm", "", 1, "user: no such user",
	    "unknown user, even with -R");
	expect_refused("4000000", "", 0, "group: must be set",
	    "a numeric uid without a passwd entry and no group");
	expect_ids("nobody", "nogroup", 0, 1, nobody, nogroup,
	    "nobody:nogroup");
	expect_ids("nobody", "", 0, 1, nobody, nobody_primary,
	    "group defaults to the user's primary group");
	snprintf(num, sizeof(num), "%u", (unsigned)nobody);
	expect_ids(num, "", 0, 1, nobody, nobody_primary,
	    "a numeric uid with a passwd entry");
	expect_ids("4000000", "4000001", 0, 1, 4000000, 4000001,
	    "a numeric uid and gid without entries");
	expect_ids("", "", 1, 0, 0, 0, "-R without user: workers stay root");
	expect_ids("root", "", 1, 0, 0, 0, "-R with user root: stay root");
	expect_ids("nobody", "root", 1, 1, nobody, 0,
	    "-R with group root: the uid is still dropped");
	expect_ids("nobody", "nogroup", 1, 1, nobody, nogroup,
	    "-R with a user: the drop still happens");
	sandbox_allow_root(0);
}

static uid_t drop_uid;
static gid_t drop_gid;

static int
do_drop(void)
{
	struct sandbox_ids ids = { 1, drop_uid, drop_gid };
	char groups[64];

	if (sandbox_drop(&ids) == -1)
		return -1;
	/* what test_privileges.py reads from /proc for a worker */
	if (proc_status("Groups", groups, sizeof(groups)) == -1 ||
	    groups[0] != '\0')
		return -1;
	return getuid() == drop_uid && geteuid() == drop_uid &&
	    getgid() == drop_gid && getegid() == drop_gid &&
	    setuid(0) == -1 && seteuid(0) == -1 && setegid(0) == -1 &&
	    setgroups(0, NULL) == -1 ? 0 : -1;
}

static void
test_drop(uid_t nobody, gid_t nogroup)
{
	struct sandbox_ids keep = { 0, 0, 0 };
	char buf[64];
	int st;

	drop_uid = nobody;
	drop_gid = nogroup;
	st = in_child(0, do_drop);
	if (!ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "drop to %u:%u: ids "
	    "set, no supplementary groups, root cannot be regained",
	    (unsigned)nobody, (unsigned)nogroup))
		printf("#   child: %s\n", describe(st, buf, sizeof(buf)));
	is_int(sandbox_drop(&keep), 0, "drop 0: nothing to do");
	is_int(geteuid(), 0, "drop 0: still root");
}

#if defined(__SANITIZE_ADDRESS__)
#define LEAK_CHILD_ARG	"--exit-under-filter"

/*
 * Run as "test_sandbox --exit-under-filter" with leak detection on: load
 * the filter and exit() the way a worker does. LeakSanitizer's check at
 * exit must not run (it needs calls the filter forbids).
 */
static int
leak_child(void)
{
	static void *kept;

	kept = malloc(64);	/* something for a leak check to look at */
	if (sandbox_filter() == -1)
		return CHILD_NO_FILTER;
	exit(kept != NULL ? 0 : 1);
}

static void
test_exit_with_leak_check(const char *self)
{
	char buf[64];
	pid_t pid;
	int st;

	fflush(stdout);
	if ((pid = fork()) == 0) {
		setenv("ASAN_OPTIONS", "detect_leaks=1", 1);
		execl(self, self, LEAK_CHILD_ARG, (char *)NULL);
		_exit(127);
	}
	if (pid == -1 || waitpid(pid, &st, 0) == -1)
		st = -1;
	if (!ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sanitizer build: a "
	    "filtered process exits cleanly with leak detection on"))
		printf("#   child: %s\n", describe(st, buf, sizeof(buf)));
}

/* As ASAN_OPTIONS=log_path does at start, before any filter. */
static void
set_report_path(void)
{
	__sanitizer_set_report_path(tmp_path("asan"));
}

static int
do_asan_report(void)
{
	volatile size_t n = 16;		/* unknown to UBSan's size check */
	volatile char *p;

	p = malloc(n);
	p[n] = 1;		/* heap-buffer-overflow: ASan reports */
	free((void *)p);
	return 0;
}

/* A sanitizer report from a filtered worker must still be written. */
static void
test_sanitizer_report(void)
{
	char name[64], buf[4096], sbuf[64];
	int st = in_child_prep(1, set_report_path, do_asan_report);
	size_t n = 0;
	FILE *f;

	ok(!(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS) &&
	    !(WIFEXITED(st) && WEXITSTATUS(st) == 0),
	    "sanitizer build: ASan stops the child, the filter does not (%s)",
	    describe(st, sbuf, sizeof(sbuf)));
	snprintf(name, sizeof(name), "asan.%d", (int)last_child);
	if ((f = fopen(tmp_path(name), "re")) != NULL) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	ok(strstr(buf, "heap-buffer-overflow") != NULL,
	    "sanitizer build: the report was written under the filter");
}
#endif

static void
remove_tmpdir(void)
{
	struct dirent *de;
	DIR *d = opendir(tmpdir);

	while (d != NULL && (de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			unlink(tmp_path(de->d_name));
	if (d != NULL)
		closedir(d);
	rmdir(tmpdir);
}

int
main(int argc, char *argv[])
{
	struct passwd *pw;
	struct group *gr;

#if defined(__SANITIZE_ADDRESS__)
	if (argc == 2 && strcmp(argv[1], LEAK_CHILD_ARG) == 0)
		return leak_child();
#endif
	(void)argc;
	(void)argv;
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	test_filter();
	pw = getpwnam("nobody");
	gr = getgrnam("nogroup");
	if (geteuid() == 0 && pw != NULL && gr != NULL) {
		test_resolve(pw->pw_uid, gr->gr_gid, pw->pw_gid);
		test_drop(pw->pw_uid, gr->gr_gid);
	} else
		printf("ok %d - # SKIP drop and look-ups: need root, nobody and "
		    "nogroup\n", ++tap_count);
#if defined(__SANITIZE_ADDRESS__)
	test_sanitizer_report();
	test_exit_with_leak_check(argv[0]);
#endif
	remove_tmpdir();
	return done_testing();
}
