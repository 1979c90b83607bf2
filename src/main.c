/*
 * main.c: cfpm's entry point (master process, before the pool exists).
 * Parses argv, loads and checks the configuration (the workers' user
 * included), obtains the listen sockets, and hands over to master_run()
 * with the applications cfpm is built with: the only place that knows
 * both the server and them.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events/events.h"
#include "hello/hello.h"
#include "server/listen.h"
#include "server/master.h"
#include "server/preflight.h"
#include "server/sandbox.h"
#include "server/setup.h"
#include "util/config.h"
#include "util/log.h"

#ifndef CFPM_DEFAULT_CONFIG
#define CFPM_DEFAULT_CONFIG	"/etc/cfpm/cfpm.conf"
#endif

/* What "app =" may name; the first is the default. */
static const struct app *const main_apps[] = { &events_app, &hello_app,
    NULL };

static const struct option main_options[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "children", required_argument, NULL, 'n' },
	{ "test", no_argument, NULL, 't' },
	{ "allow-to-run-as-root", no_argument, NULL, 'R' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'v' },
	{ NULL, 0, NULL, 0 },
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: cfpm [-tRhv] [-c file] [-n children]\n"
	    "  -c, --config file        configuration file (default %s)\n"
	    "  -n, --children N         override pm.max_children (1..%d)\n"
	    "  -t, --test               test the configuration and keys, "
	    "then exit\n"
	    "  -R, --allow-to-run-as-root\n"
	    "                           let workers run as root (no user, "
	    "or user root)\n"
	    "  -h, --help               this text\n"
	    "  -v, --version            print the version\n",
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

/*
 * What the privilege settings mean for this start, said once. A master
 * that is not root cannot change its workers' identity: user and group
 * naming its own (cfpm.service's User=cfpm with the shipped user =
 * cfpm) hold as they are, anything else is ignored, with a warning.
 */
static void
main_privileges_notice(const struct config *cfg,
    const struct sandbox_ids *ids)
{
	if (geteuid() != 0) {
		if ((cfg->user[0] != '\0' || cfg->group[0] != '\0') &&
		    !sandbox_is_self(cfg))
			log_warn("user and group are ignored: cfpm is not "
			    "running as root, its workers run as uid %d, "
			    "gid %d", (int)geteuid(), (int)getegid());
	} else if (!ids->drop)
		log_warn("workers run as root (-R, --allow-to-run-as-root)");
	if (!cfg->worker_seccomp)
		log_warn("worker.seccomp = off: workers run without their "
		    "system-call filter");
}

/* What the command line asks for (main_parse_args). */
struct main_args {
	const char	*path;		/* -c */
	int		 children;	/* -n, 0: none */
	int		 test;		/* -t */
};

/*
 * Parses argv into a. Returns -1 to go on, or the exit status when the
 * command line is all there is to do (-h, -v, a usage error).
 */
static int
main_parse_args(int argc, char *argv[], struct main_args *a)
{
	int ch;

	*a = (struct main_args){ .path = CFPM_DEFAULT_CONFIG };
	while ((ch = getopt_long(argc, argv, "c:n:tRhv", main_options,
	    NULL)) != -1) {
		switch (ch) {
		case 'c': a->path = optarg; break;
		case 'n': a->children = main_parse_children(optarg); break;
		case 't': a->test = 1; break;
		case 'R': sandbox_allow_root(1); break;
		case 'v': printf("cfpm %s\n", PACKAGE_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	return -1;
}

/*
 * The pool socket (systemd's, else bound from cfg) into ls, and the
 * status socket systemd passed, if any, into status_ls. Returns 0, or
 * -1 (logged).
 */
static int
main_sockets(const struct config *cfg, struct listen_sock *ls,
    struct listen_sock *status_ls)
{
	struct listen_spec spec;

	listen_spec_pool(cfg, &spec);
	if (listen_from_systemd(ls, status_ls) == -1 ||
	    (ls->fd == -1 && listen_bind(ls, &spec) == -1))
		return -1;
	/* The configuration decides whether there is a status page;
	 * systemd only where its socket comes from. */
	if (status_ls->fd != -1 && cfg->status_listen[0] == '\0') {
		log_warn("systemd passed a status socket but pm.status_listen "
		    "is not set: closing it");
		listen_close(status_ls);
	}
	return 0;
}

int
main(int argc, char *argv[])
{
	struct listen_sock ls, status_ls;
	char err[CONFIG_ERR_LEN];
	const struct config *cfg;
	struct main_args a;
	struct setup setup;
	int rc;

	/* Nothing the starter left open reaches a worker (listen.h). */
	listen_close_inherited();
	if ((rc = main_parse_args(argc, argv, &a)) != -1)
		return rc;
	/* Only -t checks where the sockets go: at start they may come from
	 * systemd, and a bind that fails says why itself. */
	if (setup_load(&setup, main_apps, a.path, a.children, a.test, err,
	    sizeof(err)) == -1 || (a.test && preflight_sockets(setup.cfg,
	    a.path, err, sizeof(err)) == -1)) {
		log_command(CONFIG_LOG_ERROR, "%s", err);
		setup_free(&setup);
		return 1;
	}
	cfg = setup.cfg;
	if (a.test) {
		main_privileges_notice(cfg, &setup.ids);
		printf("cfpm: %s: configuration OK\n", a.path);
		setup_free(&setup);
		return 0;
	}
	/* Log files root creates belong to the workers, who reopen them. */
	if (setup.ids.drop)
		log_set_file_owner(setup.ids.uid, setup.ids.gid);
	log_set_syslog(cfg->syslog_ident, cfg->syslog_facility);
	if (log_open(cfg->log_level, cfg->error_log) == -1)
		fatal("error_log %s: %s", cfg->error_log, strerror(errno));
	main_privileges_notice(cfg, &setup.ids);
	if (main_sockets(cfg, &ls, &status_ls) == -1) {
		setup_free(&setup);
		return 1;
	}
	return master_run(&setup, main_apps, a.path, a.children, &ls,
	    &status_ls);
}
