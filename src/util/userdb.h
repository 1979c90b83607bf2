/*
 * userdb.h: users and groups by name or decimal id, from the system's
 * user database (getpwnam(3), getgrnam(3): NSS, so /etc/passwd or a
 * directory service): the workers' user and group, the sockets' owners.
 */
#ifndef CFPM_USERDB_H
#define CFPM_USERDB_H

#include <sys/types.h>

#define USERDB_MAX_ID_DIGITS	10	/* a decimal uid or gid */

/*
 * A user by name or decimal id: *uid, and in *gid (if not NULL) the
 * user's primary group, or (gid_t)-1 for a numeric id without a passwd
 * entry. Returns 0, or -1 when there is no such user.
 */
int userdb_user(const char *name, uid_t *uid, gid_t *gid);

/* A group by name or decimal id into *gid. Returns 0, or -1 (none). */
int userdb_group(const char *name, gid_t *gid);

#endif
