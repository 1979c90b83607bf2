/*
 * preflight.h: what starting would fail on, found before anything starts
 * (master: at start, for -t and before a reload is accepted).
 * config_validate() checks what the text alone can tell; this module asks
 * the system: the users and groups the sockets name exist, a log file's
 * directory exists and the master can write there (and whether the
 * workers could reopen the file after a rotation: a warning), the
 * descriptor limit holds what the configuration needs, and (for
 * -t) each socket's directory exists and a TCP host resolves.
 */
#ifndef CFPM_PREFLIGHT_H
#define CFPM_PREFLIGHT_H

#include <stddef.h>

#include "server/sandbox.h"
#include "util/config.h"

/*
 * What every load checks: listen.owner/group and
 * pm.status_listen.owner/group name existing users and groups;
 * RLIMIT_NOFILE's hard limit holds the descriptors the configuration
 * needs (nofile.h; the master raises the soft one to the hard one when
 * it is lower); error_log
 * (a path) and access.log are in an existing directory that this process
 * can write, and an existing file there is a regular file (not a link)
 * it can write. When ids->drop and the workers' uid/gid could not reopen
 * a log after a rotation (no write access to its directory or file), a
 * warning is logged: that does not stop a start. Returns 0, or -1 with
 * "name: key: reason" in err (errlen bytes).
 */
int preflight_config(const struct config *cfg, const struct sandbox_ids *ids,
    const char *name, char *err, size_t errlen);

/*
 * For -t, what binding the sockets needs (a socket systemd passes needs
 * none, and -t cannot know whether it will get one): for a unix path
 * (listen, pm.status_listen) an existing directory this process may
 * create the socket in, and nothing but a socket at the path; for TCP a
 * host that resolves. A socket in use is not an error: -t runs beside
 * the server it checks. Returns 0, or -1 with "name: key: reason".
 */
int preflight_sockets(const struct config *cfg, const char *name, char *err,
    size_t errlen);

#endif
