/*
 * test_keep.c: the kept-connection decisions (keep.h): every combination
 * of what a worker's wait can report, the properties that make kept
 * connections safe (no request behind a busy worker, never a close
 * nginx could race, the backlog never starved), how each reply ends, and
 * the sequences a worker goes through under a backlog, a stop and a
 * recycle; and the set of released connections (its clock, its
 * eviction, that a ready one is looked at before anything else).
 */
#include <string.h>

#include "server/keep.h"
#include "tap.h"

static void
seen_of(unsigned bits, struct keep_seen *s)
{
	memset(s, 0, sizeof(*s));
	s->held = (bits & 1) != 0;
	s->held_ready = (bits & 2) != 0 && s->held;
	s->listen_ready = (bits & 4) != 0;
	s->stopping = (bits & 8) != 0;
}

static const char *
seen_name(const struct keep_seen *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s", s->held ? "held " : "no-held ",
	    s->held_ready ? "ready " : "", s->listen_ready ? "listen " : "",
	    s->stopping ? "stopping" : "");
	return buf;
}

/* The properties, for each of the 16 combinations. */
static void
test_safety_properties(void)
{
	struct keep_seen s;
	struct keep_plan p;
	char name[64];
	unsigned bits;
	int idle_held;

	for (bits = 0; bits < 16; bits++) {
		seen_of(bits, &s);
		if ((bits & 2) && !(bits & 1))
			continue;	/* ready without a kept connection */
		keep_pick(&s, &p);
		seen_name(&s, name, sizeof(name));
		idle_held = s.held && !s.held_ready;
		/* 1. A request waiting on the kept connection is served by
		 * this worker, which accepts nothing meanwhile. */
		ok(p.serve_held == (s.held && s.held_ready) &&
		    !(p.serve_held && p.accept),
		    "%s: serves its kept connection iff it is ready, and then "
		    "accepts nothing", name);
		/* 2. Before another connection's request, the idle kept one
		 * is released: nginx can write into it only while its worker
		 * is free. */
		ok(!p.accept || !idle_held || p.release_on_accept ||
		    p.release_held, "%s: no accept while an idle kept "
		    "connection stays open", name);
		/* 3. Stopping: nothing accepted, the idle one released. */
		if (s.stopping)
			ok(!p.accept && !p.pass_wake &&
			    p.release_held == idle_held,
			    "%s: stopping accepts nothing and releases its "
			    "idle kept connection", name);
		/* 4. A waiting connection this worker leaves goes to
		 * another worker at once. */
		ok(p.pass_wake == (s.listen_ready && !s.stopping &&
		    !p.accept), "%s: passes the wake-up on iff a connection "
		    "may wait and it does not accept", name);
		/* 5. Nothing happening costs the kept connection nothing. */
		if (!s.listen_ready && !s.stopping && !s.held_ready)
			ok(!p.release_held && !p.release_on_accept &&
			    !p.accept && !p.serve_held && !p.pass_wake,
			    "%s: quiet wait, nothing done", name);
		/* 6. A release is never unconditional outside a stop: an
		 * accept that finds nothing keeps the connection. */
		if (!s.stopping)
			ok(!p.release_held, "%s: no release without a "
			    "connection to serve instead", name);
	}
}

static void
test_reply_end(void)
{
	static const struct {
		int		asked, draining, queued;
		enum keep_end	want;
		const char	*what;
	} t[] = {
		{ 0, 0, 0, KEEP_CLOSE, "keep-conn not asked: plain end, close" },
		{ 0, 1, 1, KEEP_CLOSE, "not asked, draining, queued: close" },
		{ 1, 0, 0, KEEP_KEEP, "asked, idle pool: kept" },
		{ 1, 1, 0, KEEP_RELEASE, "asked, stopping or recycled: "
		    "released" },
		{ 1, 0, 1, KEEP_RELEASE, "asked, connections queued: "
		    "released (the backlog is next)" },
		{ 1, 1, 1, KEEP_RELEASE, "asked, draining and queued: "
		    "released" },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		is_int(keep_end(t[i].asked, t[i].draining, t[i].queued),
		    t[i].want, "end: %s", t[i].what);
}

/*
 * A worker whose kept connection nginx reuses at once while a backlog
 * waits (nginx picks its most recent idle connection first): the
 * backlog is reached on the second pick, never starved.
 */
static void
test_backlog_not_starved(void)
{
	struct keep_seen s = { .held = 1, .held_ready = 1,
	    .listen_ready = 1 };
	struct keep_plan p;
	int held = 1, accepted = 0, step;

	for (step = 0; step < 4 && !accepted; step++) {
		s.held = held;
		s.held_ready = held;	/* nginx wrote into it again */
		keep_pick(&s, &p);
		if (p.serve_held && keep_end(1, 0, s.listen_ready) !=
		    KEEP_KEEP)
			held = 0;
		accepted = p.accept;
	}
	ok(accepted && step == 2, "backlog behind a busy kept connection: "
	    "accepted on pick %d", step);
}

/* Stop with an idle kept connection, then a request that raced the
 * release arrives on it: served, and its reply ends it. */
static void
test_stop_sequence(void)
{
	struct keep_seen s = { .held = 1, .stopping = 1 };
	struct keep_plan p;

	keep_pick(&s, &p);
	ok(p.release_held && !p.accept, "stop: the idle kept connection is "
	    "released, nothing accepted");
	is_int(keep_end(1, 1, 0), KEEP_RELEASE, "stop: a request that raced "
	    "the release is answered with the release record");
	s.held_ready = 1;
	keep_pick(&s, &p);
	ok(p.serve_held && !p.release_held && !p.accept, "stop: a request "
	    "already on the kept connection is served first");
}

/* Recycling (pm.max_requests): still accepting, keeping nothing. */
static void
test_recycle_sequence(void)
{
	struct keep_seen s = { .held = 0, .listen_ready = 1 };
	struct keep_plan p;

	keep_pick(&s, &p);
	ok(p.accept && keep_end(1, 1, 0) == KEEP_RELEASE, "recycling: the "
	    "worker still accepts, and every reply ends its connection");
}

/* The released set: each watched KEEP_RELEASE_MS, the oldest evicted
 * when full, ready on an event or when its time is up. */
static void
test_released_set(void)
{
	struct keep_released set = { 0 };
	struct keep_seen s = { .released_ready = 1, .held = 1,
	    .held_ready = 1, .listen_ready = 1 };
	struct keep_plan p;
	int64_t t0 = 1000000, until = t0 + KEEP_RELEASE_MS * 1000;
	int fd, evicted = 0, ready = -1;
	unsigned i, nready = 0;

	is_int(keep_released_next_ms(&set, t0), -1, "released: empty, no "
	    "deadline");
	for (fd = 10; fd < 10 + KEEP_MAX_RELEASED; fd++)
		evicted |= keep_released_add(&set, fd, t0 + fd) != -1;
	ok(!evicted && set.n == KEEP_MAX_RELEASED, "released: %d fit without "
	    "an eviction", KEEP_MAX_RELEASED);
	is_int(keep_released_add(&set, 99, t0 + 99), 10, "released: a full "
	    "set gives up the one released first");
	is_int(keep_released_next_ms(&set, t0), KEEP_RELEASE_MS + 1,
	    "released: the next deadline, rounded up to a millisecond");
	ok(!keep_released_due(&set, t0 + 11) && keep_released_mark(&set, 99)
	    && !keep_released_mark(&set, 10) && keep_released_due(&set, t0),
	    "released: ready on an event, only for its own descriptors");
	keep_released_drop(&set, set.n - 1);	/* 99, the one marked */
	ok(keep_released_due(&set, until + 11), "released: due once a time "
	    "is up");
	for (i = 0; i < set.n; i++)
		if (set.conn[i].ready) {
			nready++;
			ready = set.conn[i].fd;
		}
	ok(nready == 1 && ready == 11, "released: only the one whose time is "
	    "up is ready (%u, fd %d)", nready, ready);
	keep_pick(&s, &p);
	ok(p.serve_released && p.serve_held && p.pass_wake, "released: a "
	    "ready one is looked at, before the kept connection");
}

int
main(void)
{
	test_safety_properties();
	test_reply_end();
	test_backlog_not_starved();
	test_stop_sequence();
	test_recycle_sequence();
	test_released_set();
	return done_testing();
}
