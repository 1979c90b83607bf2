/*
 * serve.c: one request, from read to sent (worker; see serve.h): the
 * scoreboard's view of it, request_terminate_timeout, the dispatch to
 * the ping and status paths or the application, the access log, the
 * reply's send.
 */
#include "server/serve.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "server/accesslog.h"
#include "server/statuspage.h"
#include "util/clock.h"
#include "util/esc.h"
#include "util/log.h"

_Static_assert(STATUS_MAX_REPLY <= HTTP_MAX_REPLY,
    "the status page fits a reply");

/*
 * What SIGALRM's handler needs and leaves: a handler takes no argument,
 * so this is file-scope state, each a sig_atomic_t. serve_alarm_fd is
 * the database's interrupt eventfd (db_interrupt_fd), -1 while there is
 * none; serve_alarmed says the alarm came during the request.
 */
static volatile sig_atomic_t serve_alarmed;
static volatile sig_atomic_t serve_alarm_fd = -1;

/* Per condition, so that no client can make a line per request. */
static struct log_flood serve_flood_gone, serve_flood_cut;

/* The request stops waiting for the database (its connection is
 * dropped: a cancel could block on a frozen server); the master kills
 * the worker only if the request still does not finish. */
void
serve_on_alarm(int sig)
{
	uint64_t one = 1;
	int fd = serve_alarm_fd;

	(void)sig;
	serve_alarmed = 1;
	if (fd != -1 && write(fd, &one, sizeof(one)) == -1) {
		/* EAGAIN: interrupted already */
	}
}

/*
 * Process CPU time since the previous call: one clock read per request
 * (CLOCK_PROCESS_CPUTIME_ID is a system call, not a vDSO one). A
 * request's figure thus includes the wait and accept that led to it,
 * which is CPU it cost all the same.
 */
static int64_t
serve_cpu_since_last(struct serve *s)
{
	struct timespec ts;
	int64_t now, d;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	now = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	d = s->cpu_us != 0 ? now - s->cpu_us : 0;
	s->cpu_us = now;
	return d;
}

int
serve_init(struct serve *s)
{
	if ((s->page = malloc(STATUS_MAX_REPLY)) == NULL)
		return -1;
	if (s->db != NULL)
		serve_alarm_fd = db_interrupt_fd(s->db);
	return 0;
}

void
serve_ready(struct serve *s)
{
	(void)serve_cpu_since_last(s);
}

void
serve_fini(struct serve *s)
{
	serve_alarm_fd = -1;
	free(s->page);
	s->page = NULL;
}

static void
serve_timer(int seconds)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	it.it_value.tv_sec = seconds;
	setitimer(ITIMER_REAL, &it, NULL);
}

void
serve_on_phase(void *arg, enum http_phase phase)
{
	static const enum sb_phase phase_of[] = {
		[HTTP_PHASE_READING] = SB_READING,
		[HTTP_PHASE_AUTH] = SB_AUTH,
		[HTTP_PHASE_DB] = SB_DB,
		[HTTP_PHASE_WRITING] = SB_WRITING,
	};
	struct serve *s = arg;

	sb_worker_phase(s->sb, s->slot, phase_of[phase]);
}

int
serve_db_up(const struct serve *s)
{
	return s->db == NULL || db_is_up(s->db);
}

/*
 * After a request: the slot's database state, and while the connection
 * is down the reason (escaped: the server's text may quote the request)
 * for the master's "database unavailable" line.
 */
static void
serve_note_db(struct serve *s)
{
	char text[SCOREBOARD_DB_ERROR_LEN];
	const char *e;
	int up = serve_db_up(s);

	sb_worker_db(s->slot, up);
	if (up)
		return;
	e = db_last_error(s->db);
	esc_text(text, sizeof(text), e, strnlen(e, sizeof(text)));
	sb_worker_db_error(s->slot, text, clock_now_us());
}

/* The status page's view as a worker has it: the listen queue and the
 * generation as the master last published them (scoreboard_sample). */
static int
serve_fill_status(struct status_view *v, void *arg)
{
	const struct serve *s = arg;
	struct sb_totals t;

	scoreboard_totals(s->sb, &t);
	return statuspage_view(v, s->sb, s->cfg->pool_name, t.generation,
	    t.listen_queue, t.listen_queue_len);
}

/*
 * Gives r its reply. The ping and status paths are the server's
 * (PHP-FPM's ping.path and pm.status_path, which PHP-FPM answers on its
 * pool socket too), found as PHP-FPM and the status socket find them
 * (http_route: SCRIPT_NAME, then REQUEST_URI); the rest the
 * application's, which routes on the raw REQUEST_URI. Returns as the
 * application's handle (app.h).
 */
static int
serve_dispatch(struct serve *s, struct http_request *r)
{
	struct http_answer a;
	struct http_route q;

	http_route(&r->fcgi.params, &q);
	if (http_answer_ping(&a, s->cfg, q.method, q.method_len, q.path,
	    q.path_len) || statuspage_answer(&a, s->cfg, &q,
	    serve_fill_status, s, s->page, STATUS_MAX_REPLY))
		return http_reply_answer(r, &a);
	return s->app->handle(s->state, r);
}

static void
serve_client_gone(const struct http_request *r, int abandoned)
{
	/* Client bytes: escaped (esc.h) and bounded. */
	char m[ESC_SIZE(SCOREBOARD_METHOD_LEN)];
	char p[ESC_SIZE(SCOREBOARD_URI_LEN)];

	esc_text(m, sizeof(m), r->method, strlen(r->method));
	esc_text(p, sizeof(p), r->path, r->path_len);
	if (r->cut)
		(void)log_flood(&serve_flood_cut, CONFIG_LOG_WARNING,
		    "%s %s: cut a %zu-byte reply its client did not take "
		    "within request_write_timeout (%d ms); connection closed",
		    m, p, r->out_len, r->write_timeout_ms);
	else
		(void)log_flood(&serve_flood_gone, CONFIG_LOG_INFO,
		    "%s %s: client went away%s", m, p,
		    abandoned ? "; statement abandoned" : "");
}

/*
 * The request begins: the slot shows it, request_terminate_timeout's
 * timer runs, the database watches its client.
 */
static void
serve_begin(struct serve *s, const struct http_request *r, int64_t start_us)
{
	sb_worker_phase(s->sb, s->slot, SB_READING);
	if (s->cfg->request_terminate_timeout > 0)
		serve_timer(s->cfg->request_terminate_timeout);
	sb_worker_begin(s->sb, s->slot, r->method, strlen(r->method),
	    r->path, r->path_len, r->content_length, start_us);
	if (s->db != NULL)
		db_watch_client(s->db, r->fd);
}

/*
 * The handler returned: the timer stops (an interrupt it made is taken
 * back), and the request is counted and logged. Returns 1 if the
 * database gave the statement up because the client went away.
 */
static int
serve_end(struct serve *s, const struct http_request *r, int64_t start_us)
{
	int64_t duration, cpu;
	int gone = s->db != NULL && db_client_gone(s->db);

	if (s->db != NULL)
		db_watch_client(s->db, -1);
	if (s->cfg->request_terminate_timeout > 0)
		serve_timer(0);
	if (serve_alarmed) {
		serve_alarmed = 0;
		if (s->db != NULL)
			db_interrupt_clear(s->db);
	}
	duration = clock_now_us() - start_us;
	cpu = serve_cpu_since_last(s);
	sb_worker_end(s->slot, r->status, duration, cpu);
	sb_worker_phase(s->sb, s->slot, SB_SENDING);
	serve_note_db(s);
	scoreboard_count(s->sb, r->status);
	accesslog_request(s->cfg->access_format, r, duration, cpu);
	return gone;
}

int
serve_request(struct serve *s, struct http_request *r, int release)
{
	int64_t start = clock_now_us();
	int rc, gone;

	serve_begin(s, r, start);
	/* The handler's result says no more than r->replied: FastCGI needs
	 * an end, and a request given none is answered 500. */
	(void)serve_dispatch(s, r);
	if (!r->replied)
		(void)http_reply_error(r, 500, "server_error", NULL);
	gone = serve_end(s, r, start);
	rc = http_flush(r, release);	/* accounted for: now the client */
	if (r->cut)
		scoreboard_count_cut(s->sb);
	sb_worker_phase(s->sb, s->slot, SB_IDLE);
	if (rc == -1 || gone)
		serve_client_gone(r, gone);
	return rc == -1 || gone ? -1 : 0;
}
