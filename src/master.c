/*
 * master.c: the master process. Signal handlers only set flags; the loop
 * below acts on them between ppoll() calls, the nginx way.
 */
#include "master.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "scoreboard.h"
#include "worker.h"

#define MASTER_SLOTS	(2 * CONFIG_MAX_CHILDREN)	/* room for reloads */
#define MASTER_TICK_MS	200	/* loop period while something is pending */

enum master_stop {
	MASTER_RUNNING = 0,
	MASTER_GRACEFUL,
	MASTER_FAST,
};

struct master {
	struct config		*cfg;
	const char		*config_path;
	struct listen_sock	*ls;
	struct scoreboard	*sb;
	enum master_stop	 stop;
	int64_t			 stop_deadline_us;
	int			 killed;	/* SIGKILL sent at deadline */
	int			 quick_deaths;	/* in a row */
	int64_t			 next_spawn_us;
	int			 ready;		/* READY=1 sent */
	unsigned long long	 respawns;
};

static volatile sig_atomic_t sig_chld, sig_term, sig_int, sig_hup,
    sig_usr1;

static void
master_on_signal(int sig)
{
	switch (sig) {
	case SIGCHLD: sig_chld = 1; break;
	case SIGTERM: case SIGQUIT: sig_term = 1; break;
	case SIGINT: sig_int = 1; break;
	case SIGHUP: case SIGUSR2: sig_hup = 1; break;
	case SIGUSR1: sig_usr1 = 1; break;
	}
}

static const int master_sigs[] = { SIGCHLD, SIGTERM, SIGQUIT, SIGINT,
    SIGHUP, SIGUSR2, SIGUSR1 };

/* Blocks the signals we handle; ppoll() unblocks them atomically. */
static void
master_signals(sigset_t *waitmask)
{
	struct sigaction sa;
	sigset_t block;
	size_t i;

	sigemptyset(&block);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = master_on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(master_sigs) / sizeof(master_sigs[0]); i++) {
		sigaddset(&block, master_sigs[i]);
		sigaction(master_sigs[i], &sa, NULL);
	}
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigprocmask(SIG_BLOCK, &block, waitmask);
	for (i = 0; i < sizeof(master_sigs) / sizeof(master_sigs[0]); i++)
		sigdelset(waitmask, master_sigs[i]);
}

/* sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET. */
static void
master_notify(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sun;
	socklen_t len;
	int fd;

	if (path == NULL || (path[0] != '/' && path[0] != '@') ||
	    strlen(path) >= sizeof(sun.sun_path))
		return;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strlen(path));
	if (sun.sun_path[0] == '@')
		sun.sun_path[0] = '\0';		/* abstract namespace */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
	    strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return;
	if (sendto(fd, msg, strlen(msg), MSG_NOSIGNAL,
	    (struct sockaddr *)&sun, len) == -1)
		log_warn("%s: sendto(%s) failed: %s", __func__, path,
		    strerror(errno));
	close(fd);
}

static unsigned
master_live(const struct master *m)
{
	unsigned i, n = 0;

	for (i = 0; i < m->sb->nslots; i++)
		if (m->sb->slots[i].state != SB_FREE)
			n++;
	return n;
}

static unsigned
master_ready_count(const struct master *m)
{
	unsigned i, n = 0;

	for (i = 0; i < m->sb->nslots; i++)
		if (m->sb->slots[i].state != SB_FREE &&
		    m->sb->slots[i].ready)
			n++;
	return n;
}

static int
master_spawn(struct master *m)
{
	struct worker_args args;
	struct sb_slot *slot;
	pid_t pid;
	int idx;

	if ((idx = scoreboard_free_slot(m->sb)) == -1) {
		log_err("%s: scoreboard full", __func__);
		return -1;
	}
	slot = &m->sb->slots[idx];
	memset(slot, 0, sizeof(*slot));
	slot->state = SB_STARTING;	/* before fork: the child overwrites */
	slot->started_us = clock_now_us();
	args.cfg = m->cfg;
	args.listen_fd = m->ls->fd;
	args.sb = m->sb;
	args.slot = idx;
	args.master = getpid();
	switch ((pid = fork())) {
	case -1:
		log_err("%s: fork() failed: %s", __func__, strerror(errno));
		slot->state = SB_FREE;
		return -1;
	case 0:
		slot->pid = getpid();
		worker_main(&args);
	}
	slot->pid = pid;
	return 0;
}

static void
master_note_death(struct master *m, struct sb_slot *slot, int status)
{
	int64_t lived_ms = (clock_now_us() - slot->started_us) / 1000;
	int delay;

	if (WIFSIGNALED(status))
		log_warn("worker %d killed by signal %d after %llu requests",
		    (int)slot->pid, WTERMSIG(status),
		    (unsigned long long)slot->requests);
	else if (WEXITSTATUS(status) != 0)
		log_warn("worker %d exited with status %d",
		    (int)slot->pid, WEXITSTATUS(status));
	else
		log_info("worker %d exited after %llu requests",
		    (int)slot->pid, (unsigned long long)slot->requests);
	if (m->stop != MASTER_RUNNING)
		return;
	m->respawns++;
	/* Dying young (bad keys, crash at start): back off, no fork storm. */
	if (lived_ms < MASTER_QUICK_DEATH_MS ||
	    (WIFEXITED(status) && WEXITSTATUS(status) != 0)) {
		delay = MASTER_BACKOFF_MIN_MS << (m->quick_deaths < 7 ?
		    m->quick_deaths : 7);
		if (delay > MASTER_BACKOFF_MAX_MS)
			delay = MASTER_BACKOFF_MAX_MS;
		m->quick_deaths++;
		m->next_spawn_us = clock_now_us() + (int64_t)delay * 1000;
		log_warn("respawning in %d ms", delay);
	} else
		m->quick_deaths = 0;
}

static void
master_reap(struct master *m)
{
	int status, idx;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if ((idx = scoreboard_find(m->sb, pid)) == -1)
			continue;
		master_note_death(m, &m->sb->slots[idx], status);
		memset(&m->sb->slots[idx], 0, sizeof(m->sb->slots[idx]));
	}
}

static void
master_signal_all(struct master *m, int sig)
{
	unsigned i;

	for (i = 0; i < m->sb->nslots; i++)
		if (m->sb->slots[i].state != SB_FREE && m->sb->slots[i].pid > 0)
			kill(m->sb->slots[i].pid, sig);
}

static void
master_begin_stop(struct master *m, enum master_stop how)
{
	int64_t ms;

	if (m->stop == MASTER_FAST || m->stop == how)
		return;
	m->stop = how;
	master_notify("STOPPING=1");
	if (how == MASTER_GRACEFUL) {
		log_notice("graceful stop: finishing in-flight requests");
		ms = (int64_t)m->cfg->process_control_timeout * 1000;
		master_signal_all(m, SIGTERM);
	} else {
		log_notice("fast stop");
		ms = MASTER_FAST_STOP_MS;
		master_signal_all(m, SIGINT);
	}
	m->stop_deadline_us = clock_now_us() + ms * 1000;
	/* Stop accepting: the workers close their copies as they leave. */
	if (m->ls->fd != -1) {
		close(m->ls->fd);
		m->ls->fd = -1;
	}
}

static void
master_maintain(struct master *m)
{
	char msg[128];
	unsigned live = master_live(m), ready;

	while (live < (unsigned)m->cfg->max_children &&
	    clock_now_us() >= m->next_spawn_us) {
		if (master_spawn(m) == -1)
			break;
		live++;
	}
	ready = master_ready_count(m);
	if (!m->ready && ready >= (unsigned)m->cfg->max_children) {
		m->ready = 1;
		snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%u workers ready",
		    ready);
		master_notify(msg);
		log_notice("pool ready: %u workers", ready);
	}
}

static void
master_handle_flags(struct master *m)
{
	if (sig_chld) {
		sig_chld = 0;
		master_reap(m);
	}
	if (sig_int) {
		sig_int = 0;
		master_begin_stop(m, MASTER_FAST);
	}
	if (sig_term) {
		sig_term = 0;
		master_begin_stop(m, MASTER_GRACEFUL);
	}
	if (sig_usr1) {
		sig_usr1 = 0;
		if (log_reopen() == -1)
			log_err("reopening the error log failed: %s",
			    strerror(errno));
	}
	if (sig_hup) {
		sig_hup = 0;
		log_warn("reload requested: not supported yet, ignored");
	}
}

/* Returns the ppoll timeout in ms: short while anything is pending. */
static int
master_timeout_ms(const struct master *m)
{
	if (m->stop != MASTER_RUNNING || !m->ready ||
	    master_live(m) < (unsigned)m->cfg->max_children)
		return MASTER_TICK_MS;
	return -1;
}

static void
master_wait(const struct master *m, const sigset_t *waitmask)
{
	struct timespec ts, *tsp = NULL;
	int ms = master_timeout_ms(m);

	if (ms >= 0) {
		ts.tv_sec = ms / 1000;
		ts.tv_nsec = (long)(ms % 1000) * 1000000;
		tsp = &ts;
	}
	if (ppoll(NULL, 0, tsp, waitmask) == -1 && errno != EINTR)
		log_err("%s: ppoll() failed: %s", __func__, strerror(errno));
}

int
master_run(struct config *cfg, const char *config_path,
    struct listen_sock *ls)
{
	struct master m;
	sigset_t waitmask;
	char where[160];

	memset(&m, 0, sizeof(m));
	m.cfg = cfg;
	m.config_path = config_path;
	m.ls = ls;
	if ((m.sb = scoreboard_create(MASTER_SLOTS)) == NULL)
		fatal("%s: scoreboard: %s", __func__, strerror(errno));
	master_signals(&waitmask);
	log_notice("cfpm %s: %d workers on %s", PACKAGE_VERSION,
	    cfg->max_children, listen_describe(ls, where, sizeof(where)));
	for (;;) {
		master_handle_flags(&m);
		if (m.stop == MASTER_RUNNING)
			master_maintain(&m);
		else if (master_live(&m) == 0)
			break;
		else if (!m.killed && clock_now_us() >= m.stop_deadline_us) {
			log_warn("stop timeout: killing %u workers",
			    master_live(&m));
			master_signal_all(&m, SIGKILL);
			m.killed = 1;
		}
		master_wait(&m, &waitmask);
	}
	listen_close(ls);
	scoreboard_destroy(m.sb);
	log_notice("stopped");
	return 0;
}
