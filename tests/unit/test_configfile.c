/*
 * test_configfile.c: the configuration loader's include, PHP-FPM's rules
 * (util/configfile.h), over files in a temporary directory: a glob in
 * sorted order, directories skipped, no match is no error, relative
 * patterns start at the prefix, errors name the included file and line
 * and where it was included from, the depth limit stops a loop.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/configfile.h"
#include "tap.h"

static char dir[64];

/* Writes text to dir/name; returns the full path (static buffer). */
static const char *
put(const char *name, const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "w")) == NULL || fputs(text, f) == EOF ||
	    fclose(f) == EOF) {
		printf("Bail out! %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return path;
}

/* Loads dir/name with prefix dir; err gets the message. */
static int
load(struct config *cfg, const char *name, char *err, size_t errlen)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	config_defaults(cfg);
	err[0] = '\0';
	return configfile_load(cfg, path, dir, err, errlen);
}

static void
test_glob(void)
{
	static struct config cfg;
	char err[CONFIG_ERR_LEN], text[512];

	if (mkdir(strcat(strcpy(text, dir), "/pool.d"), 0755) == -1 ||
	    mkdir(strcat(text, "/sub.conf"), 0755) == -1)
		printf("# mkdir: %s\n", strerror(errno));
	put("pool.d/20-b.conf", "pm.max_children = 20\nping.path = /b\n");
	put("pool.d/10-a.conf", "[events]\npm.max_children = 10\n"
	    "pm.max_requests = 5\n");
	put("pool.d/30-empty.conf", "");
	snprintf(text, sizeof(text), "pm.max_children = 1\n"
	    "include = %s/pool.d/*.conf\npm.max_requests = 7\n", dir);
	put("main.conf", text);
	is_int(load(&cfg, "main.conf", err, sizeof(err)), 0,
	    "a glob of two files (and an empty one) loads (%s)", err);
	is_int(cfg.max_children, 20, "in sorted order: 20-b after 10-a");
	is_str(cfg.ping_path, "/b", "both files applied");
	is_int(cfg.max_requests, 7, "the line after the include applies last");
	is_str(cfg.pool_name, "events", "a section opened in an included "
	    "file stays open, as in PHP-FPM");

	put("rel.conf", "include = pool.d/1*.conf\n");
	is_int(load(&cfg, "rel.conf", err, sizeof(err)), 0,
	    "a relative pattern (%s)", err);
	is_int(cfg.max_children, 10, "starts at the prefix, not at the "
	    "including file's directory by chance: prefix/pool.d/10-a.conf");

	snprintf(text, sizeof(text), "include = %s/pool.d/*.nothing\n"
	    "pm.max_children = 4\n", dir);
	put("none.conf", text);
	is_int(load(&cfg, "none.conf", err, sizeof(err)), 0,
	    "a pattern that matches nothing is a warning, as in PHP-FPM (%s)",
	    err);
	is_int(cfg.max_children, 4, "and the file goes on");
	put("missing.conf", "include = /nonexistent-cfpm-dir/one.conf\n");
	is_int(load(&cfg, "missing.conf", err, sizeof(err)), 0,
	    "so is a missing file named without a wildcard (glob's "
	    "GLOB_NOMATCH)");
	/* glob(GLOB_ERR) gives up on a directory it cannot read: PHP-FPM
	 * then fails ("Unable to globalize"), and so does cfpm. */
	put("nodir.conf", "\ninclude = /nonexistent-cfpm-dir/*.conf\n");
	is_int(load(&cfg, "nodir.conf", err, sizeof(err)), -1,
	    "a wildcard in a missing directory is an error, as in PHP-FPM");
	ok(strstr(err, "nodir.conf:2: include: cannot expand "
	    "\"/nonexistent-cfpm-dir/*.conf\"") != NULL, "message: %s", err);
}

static void
test_errors_name_the_include(void)
{
	static struct config cfg;
	char err[CONFIG_ERR_LEN], text[512], want[512];

	put("bad.conf", "; fine\n\nno_such_key = 1\n");
	snprintf(text, sizeof(text), "pm.max_children = 2\ninclude = %s/"
	    "bad.conf\n", dir);
	put("outer.conf", text);
	is_int(load(&cfg, "outer.conf", err, sizeof(err)), -1,
	    "an error in an included file fails the load");
	snprintf(want, sizeof(want), "%s/bad.conf:3: unknown key "
	    "\"no_such_key\" (included from %s/outer.conf:2)", dir, dir);
	is_str(err, want, "it names the included file and line, then the "
	    "include");

	put("loop.conf", "include = loop.conf\n");
	is_int(load(&cfg, "loop.conf", err, sizeof(err)), -1,
	    "a file including itself");
	snprintf(want, sizeof(want), "%s/loop.conf:1: include: more than %d "
	    "files deep", dir, CONFIG_MAX_INCLUDE_DEPTH);
	ok(strncmp(err, want, strlen(want)) == 0, "stops at the depth limit: "
	    "%.120s", err);

	/* d1 -> d2 -> ... -> dN: N = CONFIG_MAX_INCLUDE_DEPTH loads, one
	 * more does not. */
	put("d1.conf", "include = d2.conf\n");
	put("d2.conf", "include = d3.conf\n");
	put("d3.conf", "include = d4.conf\n");
	put("d4.conf", "include = d5.conf\n");
	put("d5.conf", "pm.max_children = 55\n");
	is_int(load(&cfg, "d1.conf", err, sizeof(err)), 0,
	    "a chain of %d files loads (%s)", CONFIG_MAX_INCLUDE_DEPTH, err);
	is_int(cfg.max_children, 55, "down to the last one");
	put("d5.conf", "include = d6.conf\n");
	put("d6.conf", "pm.max_children = 66\n");
	is_int(load(&cfg, "d1.conf", err, sizeof(err)), -1,
	    "a chain of %d files does not", CONFIG_MAX_INCLUDE_DEPTH + 1);
	ok(strstr(err, "d5.conf:1: include: more than") != NULL,
	    "the message names the fifth file's include: %.100s", err);

	put("emptymain.conf", "");
	is_int(load(&cfg, "emptymain.conf", err, sizeof(err)), -1,
	    "an empty main file is still an error");
}

int
main(void)
{
	char rm[96];

	snprintf(dir, sizeof(dir), "/tmp/cfpm-test-configfile-XXXXXX");
	if (mkdtemp(dir) == NULL) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	test_glob();
	test_errors_name_the_include();
	snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
	if (system(rm) != 0)
		printf("# %s failed\n", rm);
	return done_testing();
}
