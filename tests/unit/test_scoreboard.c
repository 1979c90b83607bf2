/*
 * test_scoreboard.c: the scoreboard's protocol (scoreboard.c): the master
 * claiming and releasing slots, the worker's writes through sb_worker_*(),
 * what a reader sees (truncation, sticky readiness, one-way retire, the
 * database error, the totals), a writer stopped mid-update, a real
 * writer process racing a reader: every consistent copy of the request
 * record must be one record, never parts of two; and the peaks counted
 * at the event, by hand and by worker processes meeting at a barrier:
 * the most requests at once and every time the pool filled up, exactly.
 */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/scoreboard.h"
#include "tap.h"

#define T_SLOTS		4
#define T_READS		2000000	/* reader copies during the race */
#define T_FILL		100	/* pattern bytes in a raced URI */
#define T_PEAK_WORKERS	3	/* worker processes meeting at the barrier */
#define T_PEAK_ROUNDS	200	/* times they all enter, then all leave */

static void
test_claim_and_release(struct scoreboard *sb)
{
	struct sb_view v;
	struct sb_slot *s = &sb->slots[1];

	is_int(scoreboard_free_slot(sb), 0, "claim: slot 0 is free");
	scoreboard_claim(&sb->slots[0], 3, 77, 1700000077);
	scoreboard_set_pid(&sb->slots[0], 4000);
	scoreboard_claim(s, 3, 88, 1700000088);
	scoreboard_set_pid(s, 4001);
	ok(scoreboard_live(s) && !scoreboard_live(&sb->slots[2]), "live: a "
	    "claimed slot, not a free one");
	is_int(scoreboard_free_slot(sb), 2, "claim: the next free slot");
	is_int(scoreboard_find(sb, 4001), 1, "find: by pid");
	is_int(scoreboard_find(sb, 4002), -1, "find: unknown pid");
	is_int(scoreboard_read(s, &v), 0, "read: a quiet slot reads at once");
	ok(v.master.life == SB_LIFE_RUNNING && v.master.generation == 3 &&
	    v.master.started_us == 88 && v.master.started_at == 1700000088 &&
	    v.phase == SB_STARTING && !v.ready && !v.db_ok && !v.retire &&
	    v.req.requests == 0 && v.req.content_length == -1,
	    "claim: running, generation, start (both clocks); the worker's "
	    "part reset");
	scoreboard_set_life(s, SB_LIFE_RETIRING);
	(void)scoreboard_read(s, &v);
	ok(v.master.life == SB_LIFE_RETIRING && v.master.pid == 4001 &&
	    scoreboard_live(s), "set_life: retiring, still live");
	scoreboard_set_life(s, SB_LIFE_RUNNING);
	scoreboard_release(sb, &sb->slots[0]);
	is_int(scoreboard_free_slot(sb), 0, "release: free again");
	is_int(scoreboard_find(sb, 4000), -1, "release: its pid is gone");
	ok(!scoreboard_live(&sb->slots[0]), "release: not live");
}

static void
test_worker_writes(struct scoreboard *sb)
{
	char uri[SCOREBOARD_URI_LEN * 2], text[SCOREBOARD_DB_ERROR_LEN * 2];
	struct sb_slot *s = &sb->slots[1];
	struct sb_db_error e;
	struct sb_view v;

	sb_worker_phase(sb, s, SB_READING);
	memset(uri, 'u', sizeof(uri));
	sb_worker_begin(sb, s, "PROPFIND", 8, uri, sizeof(uri), 42, 1234);
	scoreboard_read(s, &v);
	is_int(v.req.content_length, 42, "begin: the content length");
	is_int(sb->totals.accepted, 1, "begin: one request accepted");
	is_str(v.req.method, "PROPFIN", "begin: method cut to fit, "
	    "terminated");
	is_int(strlen(v.req.uri), SCOREBOARD_URI_LEN - 1, "begin: URI cut to "
	    "fit, terminated");
	is_int(v.req.start_us, 1234, "begin: the start");
	ok(scoreboard_busy(&v), "busy while reading");
	sb_worker_phase(sb, s, SB_DB);
	scoreboard_read(s, &v);
	ok(scoreboard_busy(&v) && v.phase == SB_DB, "busy in the Database "
	    "phase");
	sb_worker_end(s, 201, 900, 300);
	sb_worker_phase(sb, s, SB_IDLE);
	scoreboard_read(s, &v);
	ok(!scoreboard_busy(&v), "idle is not busy");
	ok(v.req.start_us == 0 && v.req.requests == 1 &&
	    v.req.last_status == 201 && v.req.last_duration_us == 900 &&
	    v.req.last_cpu_us == 300, "end: no current request, one served, "
	    "the last one's figures");
	is_int(sb_worker_requests(s), 1, "the worker's own count");
	is_int(sb->totals.active, 0, "idle again: no request in progress");
	sb_worker_phase(sb, s, SB_EXITING);
	scoreboard_read(s, &v);
	ok(!scoreboard_busy(&v), "exiting is not busy");

	sb_worker_db(s, 0);
	scoreboard_read(s, &v);
	ok(!v.db_ok && !v.ready, "db down at start: not ready");
	sb_worker_db(s, 1);
	scoreboard_read(s, &v);
	ok(v.db_ok && v.ready, "db up: ready");
	sb_worker_db(s, 0);
	scoreboard_read(s, &v);
	ok(!v.db_ok && v.ready, "db lost: ready stays (prepared once)");

	is_int(sb_worker_retire(s), 1, "retire: asked");
	is_int(sb_worker_retire(s), 0, "retire: asked once");
	scoreboard_read(s, &v);
	ok(v.retire, "retire: seen by the master");

	memset(text, 'x', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	sb_worker_db_error(s, "connection refused", 555);
	is_int(scoreboard_read_db_error(s, &e), 0, "db error: read");
	ok(e.at_us == 555 && strcmp(e.text, "connection refused") == 0,
	    "db error: text and time");
	sb_worker_db_error(s, text, 556);
	scoreboard_read_db_error(s, &e);
	is_int(strlen(e.text), SCOREBOARD_DB_ERROR_LEN - 1, "db error: cut "
	    "to fit");
}

/* A worker stopped (or killed) between the two counter updates. */
static void
test_stopped_writer(struct scoreboard *sb)
{
	struct sb_slot *s = &sb->slots[1];
	struct sb_db_error e;
	struct sb_view v;

	s->worker.req_seq++;
	memset(s->worker.req.uri, 'z', sizeof(s->worker.req.uri));
	is_int(scoreboard_read(s, &v), -1, "stopped writer: the reader gives "
	    "up");
	is_int(strlen(v.req.uri), SCOREBOARD_URI_LEN - 1, "stopped writer: "
	    "the copy is terminated all the same");
	is_int(v.req.requests, 1, "stopped writer: and filled");
	s->worker.req_seq++;
	is_int(scoreboard_read(s, &v), 0, "writer done: consistent again");
	s->worker.db_seq++;
	is_int(scoreboard_read_db_error(s, &e), -1, "stopped writer: db "
	    "error gives up too");
	s->worker.db_seq++;
}

static void
test_totals(struct scoreboard *sb)
{
	static const int codes[] = { 200, 204, 404, 503, 500, 99, 600 };
	struct sb_totals t;
	size_t i;

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		scoreboard_count(sb, codes[i]);
	scoreboard_add(&sb->totals.slow, 3);
	scoreboard_add(&sb->totals.slow, 1);
	scoreboard_add(&sb->totals.respawns[SB_REASON_CRASH], 2);
	scoreboard_set_start(sb, 1700000001);
	scoreboard_count_cut(sb);
	scoreboard_count_cut(sb);
	scoreboard_totals(sb, &t);
	ok(t.accepted == 1 && t.by_class[2] == 2 && t.by_class[4] == 1 &&
	    t.by_class[5] == 2 && t.by_class[0] == 0 && t.unavailable == 1 &&
	    t.slow == 4 && t.respawns[SB_REASON_CRASH] == 2 &&
	    t.start_time == 1700000001 && t.replies_cut == 2, "totals: "
	    "accepted (at the begin, not the count), by class (none for 99 or "
	    "600), 503s, cut replies, and the master's own");
	scoreboard_sample(sb, 5, 7, 128);
	scoreboard_sample(sb, 6, 2, 128);
	scoreboard_totals(sb, &t);
	ok(t.generation == 6 && t.listen_queue == 2 &&
	    t.listen_queue_len == 128 && t.listen_queue_max == 7,
	    "sample: the last generation and queue published, the peak kept");
	is_str(scoreboard_reason_name(SB_REASON_EXIT), "exit", "reason: exit");
	is_str(scoreboard_reason_name(SB_REASON_TERMINATE), "terminate",
	    "reason: terminate");
	is_str(scoreboard_reason_name(SB_REASON_MAX), "unknown",
	    "reason: out of range");
	is_str(scoreboard_phase_name(SB_STARTING), "Starting", "phase: "
	    "starting");
	is_str(scoreboard_phase_name(SB_SENDING), "Sending", "phase: "
	    "sending");
	is_str(scoreboard_phase_name(SB_EXITING), "Exiting", "phase: "
	    "exiting");
	is_str(scoreboard_phase_name(-1), "Unknown", "phase: out of range");
}

/* Request k: its URI is T_FILL bytes of one letter, then k. */
static size_t
race_uri(char *uri, size_t cap, unsigned long long k)
{
	memset(uri, 'a' + (int)(k % 26), T_FILL);
	return T_FILL + (size_t)snprintf(uri + T_FILL, cap - T_FILL, "/%llu",
	    k);
}

static void
race_writer(struct scoreboard *sb, struct sb_slot *s, const int *stop)
{
	char uri[SCOREBOARD_URI_LEN];
	unsigned long long k;
	size_t n;

	for (k = 0; !__atomic_load_n(stop, __ATOMIC_RELAXED); k++) {
		n = race_uri(uri, sizeof(uri), k);
		sb_worker_begin(sb, s, "GET", 3, uri, n, -1, (int64_t)k + 1);
		sb_worker_end(s, 200, (int64_t)k + 1, 0);
	}
	_exit(0);
}

/* 1 if the copy is one record of the writer's sequence. */
static int
race_consistent(const struct sb_view *v)
{
	char uri[SCOREBOARD_URI_LEN];
	unsigned long long k;

	if (v->req.last_duration_us != (int64_t)v->req.requests)
		return 0;
	if (v->req.start_us == 0)
		return 1;
	k = (unsigned long long)v->req.start_us - 1;
	race_uri(uri, sizeof(uri), k);
	return v->req.requests == k && strcmp(v->req.uri, uri) == 0;
}

static void
test_racing_writer(struct scoreboard *sb)
{
	struct sb_slot *s = &sb->slots[2];
	int *stop, status, i, bad = 0, good = 0, torn = 0;
	struct sb_view v;
	pid_t pid;

	stop = mmap(NULL, sizeof(*stop), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (stop == MAP_FAILED) {
		ok(0, "race: setup");
		return;
	}
	*stop = 0;
	scoreboard_claim(s, 0, 0, 0);
	if ((pid = fork()) == -1) {
		ok(0, "race: fork");
		return;
	}
	if (pid == 0)
		race_writer(sb, s, stop);
	for (i = 0; i < T_READS; i++) {
		if (scoreboard_read(s, &v) == -1)
			torn++;
		else if (race_consistent(&v))
			good++;
		else
			bad++;
	}
	__atomic_store_n(stop, 1, __ATOMIC_RELAXED);
	waitpid(pid, &status, 0);
	scoreboard_read(s, &v);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "race: the writer "
	    "ran and stopped");
	ok(v.req.requests > 0 && race_consistent(&v), "race: it wrote %llu "
	    "records, the last one whole", (unsigned long long)v.req.requests);
	is_int(bad, 0, "race: no consistent copy mixes two records (%d "
	    "copies, %d given up)", good, torn);
	ok(good > 0, "race: the reader got consistent copies");
	munmap(stop, sizeof(*stop));
}

#define T_RELEASE	(-1)	/* a step: the master releases the slot */
#define T_CLAIM		(-2)	/* a step: the master claims it again */

/* The peaks by hand: each transition, and a worker dying in a request.
 * After each step the totals must be exactly these. */
static void
test_peaks_by_hand(struct scoreboard *sb)
{
	static const struct {
		int		 slot, phase;	/* or T_RELEASE, T_CLAIM */
		int		 active;
		unsigned	 max;
		unsigned	 reached;
		const char	*what;
	} steps[] = {
		{ 0, SB_IDLE, 0, 0, 0, "an idle worker is not counted" },
		{ 1, SB_IDLE, 0, 0, 0, "nor two" },
		{ 2, SB_IDLE, 0, 0, 0, "nor three" },
		{ 0, SB_READING, 1, 1, 0, "one enters" },
		{ 1, SB_READING, 2, 2, 0, "two in a request: peak 2" },
		{ 0, SB_AUTH, 2, 2, 0, "its phases within a request" },
		{ 0, SB_DB, 2, 2, 0, "count once" },
		{ 0, SB_WRITING, 2, 2, 0, "whatever they are" },
		{ 0, SB_SENDING, 2, 2, 0, "sending the reply is still in "
		    "the request" },
		{ 1, SB_IDLE, 1, 2, 0, "one leaves: the peak stays" },
		{ 1, SB_READING, 2, 2, 0, "it enters again" },
		{ 2, SB_READING, 3, 3, 1, "all 3 of max_children busy: "
		    "reached once" },
		{ 2, SB_DB, 3, 3, 1, "staying full is the same time" },
		{ 2, SB_IDLE, 2, 3, 1, "a free moment" },
		{ 2, SB_READING, 3, 3, 2, "full again: reached twice" },
		{ 1, T_RELEASE, 2, 3, 2, "a worker that died in a request is "
		    "off the count once the master releases its slot" },
		{ 1, T_CLAIM, 2, 3, 2, "its replacement starts" },
		{ 1, T_RELEASE, 2, 3, 2, "and fails: a slot never busy "
		    "changes nothing" },
		{ 0, SB_IDLE, 1, 3, 2, "one idle" },
		{ 2, SB_EXITING, 0, 3, 2, "one exiting: none in a request, "
		    "the peaks kept" },
	};
	struct sb_totals t;
	struct sb_slot *s;
	size_t i;

	memset(&sb->totals, 0, sizeof(sb->totals));
	scoreboard_set_max_children(sb, 3);
	for (i = 0; i < 3; i++)
		scoreboard_claim(&sb->slots[i], 1, 1, 1);
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		s = &sb->slots[steps[i].slot];
		if (steps[i].phase == T_RELEASE)
			scoreboard_release(sb, s);
		else if (steps[i].phase == T_CLAIM)
			scoreboard_claim(s, 1, 1, 1);
		else
			sb_worker_phase(sb, s, steps[i].phase);
		memset(&t, 0, sizeof(t));
		scoreboard_totals(sb, &t);
		ok(t.active == steps[i].active && t.max_active == steps[i].max &&
		    t.max_children_reached == steps[i].reached, "peaks: %s "
		    "(now %d, peak %u, reached %u)", steps[i].what,
		    steps[i].active, steps[i].max, steps[i].reached);
	}
	scoreboard_release(sb, &sb->slots[0]);
	scoreboard_release(sb, &sb->slots[2]);
}

/* A barrier for worker processes: the n-th arrival of round k lets all
 * of that round through. */
static void
peak_barrier(unsigned *arrived, unsigned n, unsigned round)
{
	__atomic_add_fetch(arrived, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(arrived, __ATOMIC_SEQ_CST) < n * round)
		sched_yield();
}

/*
 * Worker processes enter a request together, wait until all are in it,
 * leave together, wait until all are out, T_PEAK_ROUNDS times: the peak
 * must be exactly the number of workers, and the pool must have filled
 * up exactly once a round, with no sampling anywhere.
 */
static void
test_peaks_of_processes(struct scoreboard *sb)
{
	unsigned *arrived, i, k;
	struct sb_totals t;
	int status, bad = 0;
	pid_t pids[T_PEAK_WORKERS];

	arrived = mmap(NULL, sizeof(*arrived), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (arrived == MAP_FAILED) {
		ok(0, "peaks race: setup");
		return;
	}
	*arrived = 0;
	memset(&sb->totals, 0, sizeof(sb->totals));
	scoreboard_set_max_children(sb, T_PEAK_WORKERS);
	for (i = 0; i < T_PEAK_WORKERS; i++) {
		scoreboard_claim(&sb->slots[i], 1, 1, 1);
		if ((pids[i] = fork()) == -1) {
			ok(0, "peaks race: fork");
			return;
		}
		if (pids[i] != 0)
			continue;
		for (k = 0; k < T_PEAK_ROUNDS; k++) {
			sb_worker_phase(sb, &sb->slots[i], SB_READING);
			peak_barrier(arrived, T_PEAK_WORKERS, 2 * k + 1);
			sb_worker_phase(sb, &sb->slots[i], SB_IDLE);
			peak_barrier(arrived, T_PEAK_WORKERS, 2 * k + 2);
		}
		_exit(0);
	}
	for (i = 0; i < T_PEAK_WORKERS; i++)
		if (waitpid(pids[i], &status, 0) != pids[i] ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bad++;
	memset(&t, 0, sizeof(t));
	scoreboard_totals(sb, &t);
	is_int(bad, 0, "peaks race: %d workers ran %d rounds",
	    T_PEAK_WORKERS, T_PEAK_ROUNDS);
	is_int(t.max_active, T_PEAK_WORKERS, "peaks race: the most at once "
	    "is exactly the workers");
	is_int(t.max_children_reached, T_PEAK_ROUNDS, "peaks race: the pool "
	    "filled up exactly once a round");
	is_int(t.active, 0, "peaks race: none in a request at the end");
	for (i = 0; i < T_PEAK_WORKERS; i++)
		scoreboard_release(sb, &sb->slots[i]);
	munmap(arrived, sizeof(*arrived));
}

int
main(void)
{
	struct scoreboard *sb = scoreboard_create(T_SLOTS);

	if (sb == NULL) {
		ok(0, "setup");
		return done_testing();
	}
	test_claim_and_release(sb);
	test_worker_writes(sb);
	test_stopped_writer(sb);
	test_totals(sb);
	test_racing_writer(sb);
	test_peaks_by_hand(sb);
	test_peaks_of_processes(sb);
	scoreboard_destroy(sb);
	return done_testing();
}
