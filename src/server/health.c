/*
 * health.c: READY=1, STATUS=, WATCHDOG=1 and the database's log lines,
 * from the scoreboard (master only; see health.h).
 */
#include "server/health.h"

#include <stdio.h>

#include "server/notify.h"
#include "util/clock.h"
#include "util/log.h"

void
health_reload(struct health *h, const char *why)
{
	if (why == NULL) {
		h->refused[0] = '\0';
		return;
	}
	snprintf(h->refused, sizeof(h->refused), "%s", why);
	h->next_status_us = 0;		/* say it now */
}

void
health_died_young(struct health *h, const char *cause, int64_t lived_ms)
{
	snprintf(h->cause, sizeof(h->cause), "%s %lld ms after start", cause,
	    (long long)lived_ms);
}

/*
 * Counts into h the serving workers and those without a database, and
 * fills why with the latest reason one of those gave for a 503 since
 * the database was last back (at_us 0: none).
 */
static void
health_db_read(struct health *h, const struct scoreboard *sb,
    struct sb_db_error *why)
{
	struct sb_db_error e;
	struct sb_view v;
	unsigned i;

	h->db_live = h->db_without = 0;
	why->at_us = 0;
	SCOREBOARD_FOREACH_LIVE(sb, i) {
		(void)scoreboard_read(&sb->slots[i], &v);
		if (v.phase == SB_STARTING || v.phase == SB_EXITING)
			continue;
		h->db_live++;
		if (v.db_ok)
			continue;
		h->db_without++;
		/* A torn copy (its writer stopped) is not a reason. */
		if (scoreboard_read_db_error(&sb->slots[i], &e) == 0 &&
		    e.at_us > h->db_back_us && e.at_us > why->at_us)
			*why = e;
	}
}

/*
 * The pool's view of the database, from the workers' slots (each worker
 * logs its own changes, db.c): one line when the first worker loses it,
 * with the reason a worker without it gave for its latest 503 since the
 * last return, or after HEALTH_DB_REASON_US without one the count; one
 * line when every worker has it back, with the time since the loss was
 * seen and the 503s answered since the last tick without one.
 */
static void
health_db(struct health *h, const struct scoreboard *sb)
{
	char reason[SCOREBOARD_DB_ERROR_LEN + 64];
	int64_t now = clock_now_us();
	struct sb_db_error why;
	struct sb_totals t;

	health_db_read(h, sb, &why);
	scoreboard_totals(sb, &t);
	if (!h->db_down && h->db_without == 0) {
		h->db_lost_us = 0;
		h->db_503_base = t.unavailable;
		return;
	}
	if (!h->db_down) {
		if (h->db_lost_us == 0)
			h->db_lost_us = now;
		if (why.at_us == 0 && now - h->db_lost_us < HEALTH_DB_REASON_US)
			return;
		if (why.at_us != 0)
			snprintf(reason, sizeof(reason), "%s", why.text);
		else
			snprintf(reason, sizeof(reason), "%u of %u workers "
			    "without a connection", h->db_without, h->db_live);
		log_warn("database unavailable: %s", reason);
		h->db_down = 1;
		return;
	}
	if (h->db_without > 0 || h->db_live == 0)
		return;
	log_notice("database back after %.1f s, %llu requests answered 503",
	    (double)(now - h->db_lost_us) / 1e6, (unsigned long long)
	    (t.unavailable - h->db_503_base));
	h->db_down = 0;
	h->db_back_us = now;
}

/*
 * READY=1 once the pool serves (pool.c: the database is not waited for),
 * followed at once by the STATUS= line, so that systemd never shows a
 * ready unit without saying the database is missing.
 */
static void
health_ready(struct health *h, struct pool *p, const struct pool_slot *snap,
    unsigned n)
{
	if (!pool_ready(p, snap, n))
		return;
	notify_send("READY=1");
	h->next_status_us = 0;
	log_notice("pool ready: generation %u, %u workers%s", p->generation,
	    p->max_children, h->db_without > 0 ? ", database unavailable" :
	    "");
}

/*
 * What STATUS= leads with: a refused reload, a crash loop and its last
 * cause, the database's absence.
 */
static void
health_note(const struct health *h, const struct pool *p, int failing,
    char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	if (h->refused[0] != '\0')
		n = (size_t)snprintf(buf, len, "Reload refused: %s; ",
		    h->refused);
	if (failing && n < len)
		n += (size_t)snprintf(buf + n, len - n, "Workers failing: %u "
		    "died young in a row, the last %s; restarting with "
		    "backoff; ", p->quick_deaths, h->cause);
	if (h->db_without > 0 && n < len)
		snprintf(buf + n, len - n, "Database unavailable: %u of %u "
		    "workers without a connection (answering 503); ",
		    h->db_without, h->db_live);
}

/*
 * STATUS= every HEALTH_STATUS_US, and at once when the database comes or
 * goes, a crash loop begins or ends, or a reload is refused
 * (next_status_us set to 0).
 */
static void
health_status(struct health *h, const struct pool *p,
    const struct pool_slot *snap, const struct scoreboard *sb)
{
	int64_t now = clock_now_us();
	int failing = pool_failing(p, snap, sb->nslots);
	char msg[HEALTH_STATUS_LEN], note[HEALTH_STATUS_LEN / 2];
	struct sb_census c;
	struct sb_totals t;
	double secs;

	if ((h->db_without > 0) != h->db_said || failing != h->failing_said)
		h->next_status_us = 0;
	if (now < h->next_status_us)
		return;
	scoreboard_census(sb, &c);
	scoreboard_totals(sb, &t);
	secs = h->last_status_us ? (double)(now - h->last_status_us) / 1e6 : 0;
	health_note(h, p, failing, note, sizeof(note));
	snprintf(msg, sizeof(msg), "STATUS=%sProcesses active: %u, idle: %u, "
	    "Requests: %llu, slow: %llu, Traffic: %.1freq/sec", note, c.busy,
	    c.idle, (unsigned long long)t.accepted,
	    (unsigned long long)t.slow, secs > 0 ?
	    (double)(t.accepted - h->last_accepted) / secs : 0.0);
	notify_send(msg);
	h->db_said = h->db_without > 0;
	h->failing_said = failing;
	h->last_accepted = t.accepted;
	h->last_status_us = now;
	h->next_status_us = now + HEALTH_STATUS_US;
}

void
health_tick(struct health *h, struct pool *p, const struct pool_slot *snap,
    const struct scoreboard *sb)
{
	int64_t wd = notify_watchdog_us(), now;

	health_db(h, sb);
	health_ready(h, p, snap, sb->nslots);
	health_status(h, p, snap, sb);
	now = clock_now_us();
	if (wd > 0 && now >= h->next_watchdog_us) {
		notify_send("WATCHDOG=1");
		h->next_watchdog_us = now + wd / 2;
	}
}
