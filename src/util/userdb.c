/*
 * userdb.c: names to ids through the system's user database (see
 * userdb.h). A name made of digits only is an id, as PHP-FPM reads
 * user = 33.
 */
#include "util/userdb.h"

#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

/* Decimal digits only, fitting an id: 1 and *v, else 0 (a name). */
static int
userdb_number(const char *s, unsigned long *v)
{
	size_t n = strspn(s, "0123456789");

	if (n == 0 || s[n] != '\0' || n > USERDB_MAX_ID_DIGITS)
		return 0;
	*v = strtoul(s, NULL, 10);
	return *v < (unsigned long)(uid_t)-1;
}

int
userdb_user(const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd *pw;
	unsigned long v;

	if (userdb_number(name, &v)) {
		*uid = (uid_t)v;
		pw = getpwuid(*uid);
	} else if ((pw = getpwnam(name)) != NULL)
		*uid = pw->pw_uid;
	else
		return -1;
	if (gid != NULL)
		*gid = pw != NULL ? pw->pw_gid : (gid_t)-1;
	return 0;
}

int
userdb_group(const char *name, gid_t *gid)
{
	struct group *gr;
	unsigned long v;

	if (userdb_number(name, &v)) {
		*gid = (gid_t)v;
		return 0;
	}
	if ((gr = getgrnam(name)) == NULL)
		return -1;
	*gid = gr->gr_gid;
	return 0;
}
