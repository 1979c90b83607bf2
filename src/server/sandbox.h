/*
 * sandbox.h: what a worker can still do once it parses untrusted input.
 * The master decides which user the workers run as (PHP-FPM's user and
 * group); each worker, right after fork, gives up root for that user, and
 * after its init confines itself to an allow-list of system calls
 * (seccomp, through libseccomp), in the spirit of OpenBSD's pledge.
 * sandbox_resolve and sandbox_is_self run in the master (a worker gets
 * the ids its master resolved: setup.h); sandbox_drop and sandbox_filter
 * only in workers.
 */
#ifndef CFPM_SANDBOX_H
#define CFPM_SANDBOX_H

#include <sys/types.h>

#include "util/config.h"

/* Who a worker becomes. */
struct sandbox_ids {
	int	drop;		/* 1: become uid/gid; 0: keep the master's */
	uid_t	uid;
	gid_t	gid;
};

/*
 * -R / --allow-to-run-as-root: lets workers keep root when no user is
 * set, or when user or group resolves to root. Set once by main() before
 * anything is resolved; workers inherit it.
 */
void sandbox_allow_root(int allow);

/*
 * Decides who the workers run as. When this process is not root there is
 * nothing to give up: ids->drop = 0 and user/group are not looked at.
 * As root, `user` is required and `group` defaults to the user's primary
 * group; uid 0 or gid 0 are refused, and so is a missing `user`, unless
 * sandbox_allow_root(1) was called (then a root user keeps root:
 * ids->drop = 0). Returns 0, or -1 with "name: reason" in err
 * (errlen bytes).
 */
int sandbox_resolve(const struct config *cfg, const char *name,
    struct sandbox_ids *ids, char *err, size_t errlen);

/*
 * 1 if user and group name this process's own effective uid and gid
 * (group defaulting to the user's primary group, an unset user to this
 * process's): what a master that is not root, such as cfpm.service's
 * User=cfpm, runs its workers as anyway. 0 otherwise, or when a name
 * does not resolve.
 */
int sandbox_is_self(const struct config *cfg);

/*
 * In a worker, right after fork: when ids->drop, clears the
 * supplementary groups, sets the real, effective and saved gid and then
 * uid, and checks that root cannot be regained (setuid(0) must fail).
 * Returns 0, or -1 (logged): the worker must exit.
 */
int sandbox_drop(const struct sandbox_ids *ids);

/*
 * In a worker, after its init (database tried, what the application
 * loaded inherited, logs open): sets PR_SET_NO_NEW_PRIVS and loads the
 * system-call allow-list. Any other call kills the process (SIGSYS),
 * kill() among them: a worker signals nobody (it wakes its master
 * through an eventfd), and signals only itself (tgkill, as abort() and
 * raise() do). The list, and why each entry is there, is in sandbox.c.
 * Returns 0, or -1 (logged) if the filter could not be loaded: the
 * worker must exit rather than run unconfined.
 */
int sandbox_filter(void);

#endif
