/*
 * main.c: cfpm's entry point (master process, before the pool exists).
 * Parses argv, loads and checks the configuration, obtains the listen
 * socket, and hands over to master_run().
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "config.h"
#include "listen.h"
#include "log.h"
#include "master.h"

#define MAIN_MAX_CONFIG	(1024 * 1024)	/* config file size limit */
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

/* Reads the whole file into a malloc'd buffer. NULL with a message. */
static char *
main_read_file(const char *path, size_t *len, char *err)
{
	struct stat st;
	char *buf = NULL;
	ssize_t n;
	int fd;

	*len = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
	    fstat(fd, &st) == -1) {
		snprintf(err, CONFIG_ERR_LEN, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (st.st_size > MAIN_MAX_CONFIG) {
		snprintf(err, CONFIG_ERR_LEN, "%s: larger than %d bytes",
		    path, MAIN_MAX_CONFIG);
		goto fail;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL)
		goto fail;
	while (*len < (size_t)st.st_size) {
		n = read(fd, buf + *len, (size_t)st.st_size - *len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		*len += (size_t)n;
	}
	close(fd);
	return buf;
fail:
	if (fd != -1)
		close(fd);
	free(buf);
	return NULL;
}

static int
main_load_config(struct config *cfg, const char *path, int children,
    char *err)
{
	struct auth auth;
	size_t len;
	char *text;
	int rc;

	config_defaults(cfg);
	if ((text = main_read_file(path, &len, err)) == NULL)
		return -1;
	rc = config_parse(cfg, path, text, len, err);
	free(text);
	if (rc == -1)
		return -1;
	if (children > 0)
		cfg->max_children = children;
	if (config_validate(cfg, path, err) == -1)
		return -1;
	/* Keys are checked here so a bad file fails at start, not per fork. */
	if (auth_init(&auth, cfg, err) == -1)
		return -1;
	auth_free(&auth);
	return 0;
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
	if (main_load_config(&cfg, path, children, err) == -1) {
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
	return master_run(&cfg, path, &ls);
}
