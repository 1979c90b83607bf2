/*
 * main.c: cfpm's entry point (master process, before the pool exists).
 * Parses argv, loads and checks the configuration, obtains the listen
 * socket, and hands over to master_run().
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "listen.h"
#include "log.h"
#include "master.h"

#ifndef CFPM_DEFAULT_CONFIG
#define CFPM_DEFAULT_CONFIG	"/etc/cfpm/cfpm.conf"
#endif

static void
usage(FILE *f)
{
	fprintf(f, "usage: cfpm [-tFh] [-c file] [-n children]\n"
	    "  -c file      configuration file (default %s)\n"
	    "  -n children  override pm.max_children (1..%d)\n"
	    "  -t           test the configuration and keys, then exit\n"
	    "  -F           stay in the foreground (always the case)\n"
	    "  -v           print the version\n",
	    CFPM_DEFAULT_CONFIG, CONFIG_MAX_CHILDREN);
}

static int
main_parse_children(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0 || v < 1 ||
	    v > CONFIG_MAX_CHILDREN) {
		fprintf(stderr, "cfpm: -n: expected 1..%d\n",
		    CONFIG_MAX_CHILDREN);
		exit(2);
	}
	return (int)v;
}

int
main(int argc, char *argv[])
{
	static struct config cfg;	/* large: keep it off the stack */
	const char *path = CFPM_DEFAULT_CONFIG;
	char err[CONFIG_ERR_LEN];
	struct listen_sock ls;
	struct auth auth;
	int ch, test = 0, children = 0, rc;

	while ((ch = getopt(argc, argv, "c:n:tFhv")) != -1) {
		switch (ch) {
		case 'c': path = optarg; break;
		case 'n': children = main_parse_children(optarg); break;
		case 't': test = 1; break;
		case 'F': break;
		case 'v': printf("cfpm %s\n", PACKAGE_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (master_load_config(&cfg, test ? NULL : &auth, path, children,
	    err) == -1) {
		fprintf(stderr, "cfpm: %s\n", err);
		return 1;
	}
	if (test) {
		printf("cfpm: %s: configuration OK\n", path);
		return 0;
	}
	if (log_open(cfg.log_level, cfg.error_log) == -1)
		fatal("error_log %s: %s", cfg.error_log, strerror(errno));
	if ((rc = listen_from_systemd(&ls)) == -1)
		return 1;
	if (rc == 0 && listen_bind(&ls, &cfg) == -1)
		return 1;
	return master_run(&cfg, &auth, path, children, &ls);
}
