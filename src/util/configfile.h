/*
 * configfile.h: the configuration as files (master: at start, for -t and
 * on every reload). Reads the main file and whatever its "include" lines
 * name, PHP-FPM's way, and parses them with config_parse_with(): this is
 * the I/O that keeps config.c pure.
 *
 * PHP-FPM's include, matched: the value is a glob(3) pattern, expanded
 * with GLOB_ERR | GLOB_MARK and in sorted order; matched directories are
 * skipped; a pattern that matches nothing (a missing file included by
 * name, or no file matching in an existing directory) is a warning, not
 * an error, while a directory glob cannot read (a wildcard under a
 * missing directory) is an error; a
 * relative pattern is relative to the installation prefix (PHP-FPM's
 * without -p; cfpm has no -p), not to the including file; a chain of
 * includes is at most CONFIG_MAX_INCLUDE_DEPTH files deep, the main one
 * counted (which is also what stops an include loop). An included file
 * continues the including file's section, and a section it opens stays
 * open after it. An error in an included file names that file and line,
 * then where it was included from.
 */
#ifndef CFPM_CONFIGFILE_H
#define CFPM_CONFIGFILE_H

#include <stddef.h>

#include "util/config.h"

#define CONFIGFILE_MAX_SIZE	(1024 * 1024)	/* one file's size limit */
#define CONFIGFILE_MAX_FILES	256	/* files read for one load */

/*
 * Parses path, and what it includes, into cfg on top of what cfg holds
 * (call config_defaults first). prefix is where relative include
 * patterns start (NULL: the installation prefix). Warnings (an include
 * that matches nothing) go to the log. Returns 0, or -1 with
 * "file:line: reason" in err (errlen bytes).
 */
int configfile_load(struct config *cfg, const char *path, const char *prefix,
    char *err, size_t errlen);

#endif
