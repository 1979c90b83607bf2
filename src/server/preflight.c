/*
 * preflight.c: the system-side checks of a configuration (master only;
 * see preflight.h). Nothing here changes anything: stat, access and name
 * look-ups only.
 */
#include "server/preflight.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/listen.h"
#include "server/nofile.h"
#include "util/log.h"

/*
 * 1 if a process with uid and gid and no supplementary groups (a worker
 * after sandbox_drop) may do want (R_OK, W_OK, X_OK bits) to a file with
 * st's owner, group and mode, by the permission bits alone (no ACLs, no
 * read-only mounts); uid 0 may always. 0 otherwise.
 */
static int
preflight_may(const struct stat *st, uid_t uid, gid_t gid, int want)
{
	mode_t m = st->st_mode;
	int have;

	if (uid == 0)
		return 1;
	if (st->st_uid == uid)
		m >>= 6;
	else if (st->st_gid == gid)
		m >>= 3;
	have = ((m & 4) ? R_OK : 0) | ((m & 2) ? W_OK : 0) |
	    ((m & 1) ? X_OK : 0);
	return (have & want) == want;
}

/* The users and groups the sockets are handed to exist. */
static int
preflight_owners(const struct config *cfg, const char *name, char *err,
    size_t errlen)
{
	char why[CONFIG_ERR_LEN];
	struct listen_spec spec;
	uid_t uid;
	gid_t gid;

	listen_spec_pool(cfg, &spec);
	if (listen_spec_owner(&spec, &uid, &gid, why, sizeof(why)) == 0) {
		listen_spec_status(cfg, &spec);
		if (listen_spec_owner(&spec, &uid, &gid, why, sizeof(why)) == 0)
			return 0;
	}
	snprintf(err, errlen, "%s: %s", name, why);
	return -1;
}

/* path's directory into dir (dirlen bytes): "." for a bare name. */
static void
preflight_dirname(const char *path, char *dir, size_t dirlen)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		snprintf(dir, dirlen, ".");
	else if (slash == path)
		snprintf(dir, dirlen, "/");
	else
		snprintf(dir, dirlen, "%.*s", (int)(slash - path), path);
}

/*
 * The directory path (key's value) goes in, into dir (dirlen bytes): it
 * exists, and this process may create files there. 0, or -1 with
 * "name: key: dir: reason" in err.
 */
static int
preflight_dir(const char *key, const char *path, const char *name,
    char *dir, size_t dirlen, char *err, size_t errlen)
{
	struct stat st;

	preflight_dirname(path, dir, dirlen);
	errno = 0;
	if (stat(dir, &st) == -1 || !S_ISDIR(st.st_mode) ||
	    faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) == -1) {
		snprintf(err, errlen, "%s: %s: %s: %s", name, key, dir,
		    errno ? strerror(errno) : "not a directory");
		return -1;
	}
	return 0;
}

/*
 * The workers' uid/gid can search every directory on the way to path
 * (absolute) and do want to path itself. 0, or -1 with errno (EACCES:
 * the bits say no).
 */
static int
preflight_worker_may(const char *path, const struct sandbox_ids *ids,
    int want)
{
	char part[CONFIG_MAX_VALUE];
	const char *p = path;
	struct stat st;
	size_t n;

	while ((p = strchr(p + 1, '/')) != NULL) {
		n = (size_t)(p - path);
		snprintf(part, sizeof(part), "%.*s", (int)n, path);
		if (stat(part, &st) == -1)
			return -1;
		if (!preflight_may(&st, ids->uid, ids->gid, X_OK)) {
			errno = EACCES;
			return -1;
		}
	}
	if (stat(path, &st) == -1)
		return -1;
	if (!preflight_may(&st, ids->uid, ids->gid, want)) {
		errno = EACCES;
		return -1;
	}
	return 0;
}

/*
 * A log file (key's value path): its directory exists and this process
 * (the master opens error_log, and each worker opens access.log before
 * it gives up root) may create files there; a file already there is a
 * regular one it may append to. That much a start needs. Workers reopen
 * the file after a rotation as their own user: if they cannot create it
 * anew in dir (or append to what is there), a rotation by renaming
 * would leave them writing to the old file; that is said as a warning,
 * as it does not stop a start.
 */
static int
preflight_log(const char *key, const char *path,
    const struct sandbox_ids *ids, const char *name, char *err,
    size_t errlen)
{
	char dir[CONFIG_MAX_VALUE];
	const char *bad = NULL;
	struct stat st;
	int exists;

	if (preflight_dir(key, path, name, dir, sizeof(dir), err,
	    errlen) == -1)
		return -1;
	if ((exists = lstat(path, &st) == 0) && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: %s: %s is not a regular file%s",
		    name, key, path, S_ISLNK(st.st_mode) ?
		    " (a symbolic link is never followed)" : "");
		return -1;
	}
	if (exists && faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == -1) {
		snprintf(err, errlen, "%s: %s: %s: %s", name, key, path,
		    strerror(errno));
		return -1;
	}
	if (!ids->drop)
		return 0;
	if (preflight_worker_may(dir, ids, W_OK | X_OK) == -1)
		bad = dir;
	else if (exists && preflight_worker_may(path, ids, W_OK) == -1)
		bad = path;
	if (bad != NULL)
		log_warn("%s: %s: the workers (uid %u, gid %u) cannot write "
		    "%s (%s): after a rotation they could not reopen the log",
		    name, key, (unsigned)ids->uid, (unsigned)ids->gid, bad,
		    strerror(errno));
	return 0;
}

/*
 * RLIMIT_NOFILE's hard limit holds what the configuration needs
 * (nofile.h); the soft one the master raises to it (master.c). A limit
 * that cannot hold it would make the master's poll fail on every call or
 * the workers' accepts fail while connections wait: refused here.
 */
static int
preflight_nofile(const struct config *cfg, const char *name, char *err,
    size_t errlen)
{
	struct nofile_need n;
	struct rlimit rl;

	nofile_need(cfg, &n);
	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 ||
	    rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= n.total)
		return 0;
	snprintf(err, errlen, "%s: RLIMIT_NOFILE: the hard limit %llu "
	    "cannot hold the %u descriptors this configuration needs (a "
	    "worker %u, the master %u, its poll set %u); raise it "
	    "(LimitNOFILE= in the unit, ulimit -n)", name,
	    (unsigned long long)rl.rlim_max, n.total, n.worker, n.master,
	    n.master_poll);
	return -1;
}

int
preflight_config(const struct config *cfg, const struct sandbox_ids *ids,
    const char *name, char *err, size_t errlen)
{
	if (preflight_owners(cfg, name, err, errlen) == -1 ||
	    preflight_nofile(cfg, name, err, errlen) == -1)
		return -1;
	if (strcmp(cfg->error_log, "stderr") != 0 &&
	    strcmp(cfg->error_log, CONFIG_SYSLOG) != 0 &&
	    cfg->error_log[0] != '\0' && preflight_log("error_log",
	    cfg->error_log, ids, name, err, errlen) == -1)
		return -1;
	if (cfg->access_log[0] != '\0' && preflight_log("access.log",
	    cfg->access_log, ids, name, err, errlen) == -1)
		return -1;
	return 0;
}

/* One socket address (key's value). */
static int
preflight_socket(const char *key, const char *address, const char *name,
    char *err, size_t errlen)
{
	char dir[CONFIG_MAX_VALUE], why[CONFIG_ERR_LEN];
	struct addrinfo *res;
	struct stat st;

	if (address[0] != '/') {
		if (listen_resolve(address, &res, why, sizeof(why)) == -1) {
			snprintf(err, errlen, "%s: %s: %s", name, key, why);
			return -1;
		}
		freeaddrinfo(res);
		return 0;
	}
	if (preflight_dir(key, address, name, dir, sizeof(dir), err,
	    errlen) == -1)
		return -1;
	if (lstat(address, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s: %s: %s exists and is not a socket",
		    name, key, address);
		return -1;
	}
	return 0;
}

int
preflight_sockets(const struct config *cfg, const char *name, char *err,
    size_t errlen)
{
	if (preflight_socket("listen", cfg->listen, name, err, errlen) == -1)
		return -1;
	if (cfg->status_listen[0] != '\0' && preflight_socket(
	    "pm.status_listen", cfg->status_listen, name, err, errlen) == -1)
		return -1;
	return 0;
}
