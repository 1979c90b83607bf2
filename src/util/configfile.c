/*
 * configfile.c: read the configuration file and its includes (master
 * only), parse each with config_parse_with(). See configfile.h for the
 * include rules, which are PHP-FPM's.
 */
#include "util/configfile.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/log.h"
#include "util/readfile.h"

#ifndef CFPM_PREFIX
#define CFPM_PREFIX	"/usr/local"	/* configure's --prefix (Makefile.am) */
#endif

/* One load: where relative patterns start, how deep, how many files. */
struct configfile_load {
	const char	*prefix;
	int		 depth;		/* files open in the current chain */
	unsigned	 files;		/* read so far */
};

static int configfile_parse(struct configfile_load *l, struct config *cfg,
    const char *path, char *err, size_t errlen);

/* Appends " (included from from:line)" to err, as far as it fits. */
static void
configfile_trace(char *err, size_t errlen, const char *from, int line)
{
	size_t n = strnlen(err, errlen);

	if (n + 1 < errlen)
		snprintf(err + n, errlen - n, " (included from %s:%d)", from,
		    line);
}

/* config_include_fn: every file pattern names, in glob's order. */
static int
configfile_include(void *arg, struct config *cfg, const char *pattern,
    const char *from, int line, char *err, size_t errlen)
{
	struct configfile_load *l = arg;
	char full[CONFIG_MAX_VALUE + 64];
	glob_t g;
	size_t i, n;
	int rc = 0;

	if (l->depth >= CONFIG_MAX_INCLUDE_DEPTH) {
		snprintf(err, errlen, "%s:%d: include: more than %d files "
		    "deep (an include loop?)", from, line,
		    CONFIG_MAX_INCLUDE_DEPTH);
		return -1;
	}
	if ((size_t)snprintf(full, sizeof(full), "%s%s%s", pattern[0] == '/' ?
	    "" : l->prefix, pattern[0] == '/' ? "" : "/", pattern) >=
	    sizeof(full)) {
		snprintf(err, errlen, "%s:%d: include: the pattern is too "
		    "long", from, line);
		return -1;
	}
	memset(&g, 0, sizeof(g));
	switch (glob(full, GLOB_ERR | GLOB_MARK, NULL, &g)) {
	case 0:
		break;
	case GLOB_NOMATCH:
		log_warn("%s:%d: nothing matches the include pattern \"%s\"",
		    from, line, full);
		globfree(&g);
		return 0;
	default:
		snprintf(err, errlen, "%s:%d: include: cannot expand \"%s\": "
		    "%s", from, line, full, strerror(errno ? errno : EIO));
		globfree(&g);
		return -1;
	}
	for (i = 0; rc == 0 && i < g.gl_pathc; i++) {
		n = strlen(g.gl_pathv[i]);
		if (n == 0 || g.gl_pathv[i][n - 1] == '/')
			continue;	/* GLOB_MARK: a directory */
		l->depth++;
		rc = configfile_parse(l, cfg, g.gl_pathv[i], err, errlen);
		l->depth--;
		if (rc == -1)
			configfile_trace(err, errlen, from, line);
	}
	globfree(&g);
	return rc;
}

/* One file: read, then parse with includes followed. */
static int
configfile_parse(struct configfile_load *l, struct config *cfg,
    const char *path, char *err, size_t errlen)
{
	struct stat st;
	size_t len;
	char *text;
	int rc;

	if (++l->files > CONFIGFILE_MAX_FILES) {
		snprintf(err, errlen, "%s: more than %d configuration files",
		    path, CONFIGFILE_MAX_FILES);
		return -1;
	}
	/* An empty included file is nothing to set, as in PHP-FPM. */
	if (l->depth > 1 && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size == 0)
		return 0;
	if ((text = readfile(path, CONFIGFILE_MAX_SIZE, &len, err,
	    errlen)) == NULL)
		return -1;
	rc = config_parse_with(cfg, path, text, len, configfile_include, l,
	    err, errlen);
	free(text);
	return rc;
}

int
configfile_load(struct config *cfg, const char *path, const char *prefix,
    char *err, size_t errlen)
{
	struct configfile_load l = { .prefix = prefix ? prefix : CFPM_PREFIX,
	    .depth = 1, .files = 0 };

	return configfile_parse(&l, cfg, path, err, errlen);
}
