/*
 * admin.c: the status socket served by the master itself (master only).
 * The socket is non-blocking, so a spurious wake-up never blocks the
 * master in accept(); an interval timer bounds the reading of one request
 * so a slow client cannot hold the master.
 */
#include "admin.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <fcgiapp.h>

#include "http.h"
#include "log.h"
#include "master.h"

struct admin {
	struct listen_sock	ls;
	FCGX_Request		req;
	char			buf[STATUS_MAX_REPLY];
};

static void
admin_on_alarm(int sig)
{
	(void)sig;	/* only interrupts a blocked read */
}

struct admin *
admin_open(const struct config *cfg)
{
	struct listen_spec spec;
	struct sigaction sa;
	struct admin *a;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	listen_spec_status(cfg, &spec);
	if (listen_bind(&a->ls, &spec) == -1 ||
	    fcntl(a->ls.fd, F_SETFL, O_NONBLOCK) == -1 ||
	    FCGX_Init() != 0 ||
	    FCGX_InitRequest(&a->req, a->ls.fd, FCGI_FAIL_ACCEPT_ON_INTR) != 0) {
		log_err("%s: status socket %s failed", __func__,
		    cfg->status_listen);
		listen_close(&a->ls);
		free(a);
		return NULL;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = admin_on_alarm;	/* no SA_RESTART: reads fail */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	return a;
}

int
admin_fd(const struct admin *a)
{
	return a->ls.fd;
}

static void
admin_timer(int ms)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	it.it_value.tv_sec = ms / 1000;
	it.it_value.tv_usec = (ms % 1000) * 1000;
	it.it_interval = it.it_value;	/* keeps firing until disarmed */
	setitimer(ITIMER_REAL, &it, NULL);
}

static void
admin_reply(struct admin *a, const struct config *cfg, struct http_request *r,
    void (*fill)(struct status_view *, void *), void *arg)
{
	enum status_format fmt;
	struct status_view v;
	int full;
	long n;

	if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0) {
		http_reply(r, 405, "application/json", "Allow: GET\r\n",
		    "{\"error\":\"method_not_allowed\"}", 30);
		return;
	}
	if (cfg->ping_path[0] != '\0' && r->path_len == strlen(cfg->ping_path)
	    && memcmp(r->path, cfg->ping_path, r->path_len) == 0) {
		http_reply(r, 200, "text/plain", NULL, cfg->ping_response,
		    strlen(cfg->ping_response));
		return;
	}
	if (cfg->status_path[0] == '\0' ||
	    r->path_len != strlen(cfg->status_path) ||
	    memcmp(r->path, cfg->status_path, r->path_len) != 0) {
		http_reply(r, 404, "application/json", NULL,
		    "{\"error\":\"not_found\"}", 21);
		return;
	}
	status_parse_query(r->query, &fmt, &full);
	fill(&v, arg);
	if ((n = status_render(&v, fmt, full, a->buf, sizeof(a->buf))) < 0) {
		http_reply(r, 500, "application/json", NULL,
		    "{\"error\":\"server_error\"}", 24);
		return;
	}
	http_reply(r, 200, status_content_type(fmt),
	    "Cache-Control: no-cache\r\n", a->buf, (size_t)n);
}

void
admin_serve(struct admin *a, const struct config *cfg,
    void (*fill)(struct status_view *, void *), void *arg)
{
	struct http_request r;
	int saved = errno;

	admin_timer(MASTER_STATUS_IO_MS);
	if (FCGX_Accept_r(&a->req) == 0) {
		http_request_init(&r, &a->req);
		admin_reply(a, cfg, &r, fill, arg);
		FCGX_Finish_r(&a->req);
	}
	admin_timer(0);
	errno = saved;
}

void
admin_close(struct admin *a)
{
	if (a == NULL)
		return;
	FCGX_Free(&a->req, 1);
	listen_close(&a->ls);
	free(a);
}
