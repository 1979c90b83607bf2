/*
 * scoreboard.c: the shared-memory worker table. The master maps it and
 * owns each slot's master part; each worker writes its own slot's worker
 * part through sb_worker_*(); readers copy through scoreboard_read().
 * The ownership and seqlock rules are in scoreboard.h.
 */
#include "server/scoreboard.h"

#include <string.h>
#include <sys/mman.h>

static size_t
scoreboard_size(unsigned nslots)
{
	return sizeof(struct scoreboard) + (size_t)nslots *
	    sizeof(struct sb_slot);
}

struct scoreboard *
scoreboard_create(unsigned nslots)
{
	struct scoreboard *sb;

	sb = mmap(NULL, scoreboard_size(nslots), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sb == MAP_FAILED)
		return NULL;
	sb->nslots = nslots;	/* anonymous mappings start zeroed */
	return sb;
}

void
scoreboard_destroy(struct scoreboard *sb)
{
	if (sb != NULL)
		munmap(sb, scoreboard_size(sb->nslots));
}

int
scoreboard_free_slot(const struct scoreboard *sb)
{
	unsigned i;

	for (i = 0; i < sb->nslots; i++)
		if (sb->slots[i].master.life == SB_LIFE_FREE)
			return (int)i;
	return -1;
}

int
scoreboard_find(const struct scoreboard *sb, pid_t pid)
{
	unsigned i;

	SCOREBOARD_FOREACH_LIVE(sb, i)
		if (sb->slots[i].master.pid == pid)
			return (int)i;
	return -1;
}

/* The master part, field by field (OWNERSHIP): pid 0 until fork(). */
static void
sb_master_reset(struct sb_slot *slot, int life, unsigned generation,
    int64_t now_us, int64_t now_s)
{
	struct sb_by_master *m = &slot->master;

	__atomic_store_n(&m->pid, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&m->generation, generation, __ATOMIC_RELAXED);
	__atomic_store_n(&m->started_us, now_us, __ATOMIC_RELAXED);
	__atomic_store_n(&m->started_at, now_s, __ATOMIC_RELAXED);
	__atomic_store_n(&m->slow_logged, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&m->life, life, __ATOMIC_RELAXED);
}

void
scoreboard_claim(struct sb_slot *slot, unsigned generation, int64_t now_us,
    int64_t now_s)
{
	memset(&slot->worker, 0, sizeof(slot->worker));
	slot->worker.phase = SB_STARTING;
	slot->worker.req.content_length = -1;
	sb_master_reset(slot, SB_LIFE_RUNNING, generation, now_us, now_s);
}

void
scoreboard_set_pid(struct sb_slot *slot, pid_t pid)
{
	__atomic_store_n(&slot->master.pid, pid, __ATOMIC_RELAXED);
}

void
scoreboard_set_life(struct sb_slot *slot, enum sb_life life)
{
	__atomic_store_n(&slot->master.life, (int)life, __ATOMIC_RELAXED);
}

int
scoreboard_live(const struct sb_slot *slot)
{
	return __atomic_load_n(&slot->master.life, __ATOMIC_RELAXED) !=
	    SB_LIFE_FREE;
}

unsigned
scoreboard_next_live(const struct scoreboard *sb, unsigned i)
{
	while (i < sb->nslots && !scoreboard_live(&sb->slots[i]))
		i++;
	return i;
}

/* The master is the one writer of its totals: a load and a store. */
void
scoreboard_add(uint64_t *total, uint64_t n)
{
	__atomic_store_n(total, *total + n, __ATOMIC_RELAXED);
}

void
scoreboard_set_start(struct scoreboard *sb, int64_t t)
{
	__atomic_store_n(&sb->totals.start_time, t, __ATOMIC_RELAXED);
}

void
scoreboard_sample(struct scoreboard *sb, unsigned generation,
    unsigned queued, unsigned limit)
{
	struct sb_totals *t = &sb->totals;

	__atomic_store_n(&t->generation, generation, __ATOMIC_RELAXED);
	__atomic_store_n(&t->listen_queue, queued, __ATOMIC_RELAXED);
	__atomic_store_n(&t->listen_queue_len, limit, __ATOMIC_RELAXED);
	if (queued > t->listen_queue_max)
		__atomic_store_n(&t->listen_queue_max, queued,
		    __ATOMIC_RELAXED);
}

static int
sb_phase_busy(int phase)
{
	return phase >= SB_READING && phase <= SB_SENDING;
}

void
scoreboard_release(struct scoreboard *sb, struct sb_slot *slot)
{
	/* No process holds the slot: its last phase is final (PEAKS). */
	if (sb_phase_busy(slot->worker.phase))
		__atomic_sub_fetch(&sb->totals.active, 1, __ATOMIC_RELAXED);
	sb_master_reset(slot, SB_LIFE_FREE, 0, 0, 0);
	memset(&slot->worker, 0, sizeof(slot->worker));
}

void
scoreboard_set_max_children(struct scoreboard *sb, unsigned n)
{
	__atomic_store_n(&sb->max_children, n, __ATOMIC_RELAXED);
}

/*
 * The seqlock (scoreboard.h). The writer is the slot's one worker, so its
 * own reads of the counter need no ordering.
 */
static void
sb_write_begin(unsigned *seq)
{
	__atomic_store_n(seq, *seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static void
sb_write_end(unsigned *seq)
{
	__atomic_store_n(seq, *seq + 1, __ATOMIC_RELEASE);
}

/* Copies len bytes of the record at src guarded by seq into dst.
 * Returns 0 for a consistent copy, -1 after SCOREBOARD_READ_TRIES. */
static int
sb_read_record(const unsigned *seq, void *dst, const void *src, size_t len)
{
	unsigned before, after;
	int i;

	for (i = 0; i < SCOREBOARD_READ_TRIES; i++) {
		before = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
		memcpy(dst, src, len);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		after = __atomic_load_n(seq, __ATOMIC_RELAXED);
		if (before == after && (before & 1) == 0)
			return 0;
	}
	return -1;
}

int
scoreboard_read(const struct sb_slot *slot, struct sb_view *v)
{
	const struct sb_by_master *m = &slot->master;
	const struct sb_by_worker *w = &slot->worker;
	int rc;

	v->master.pid = __atomic_load_n(&m->pid, __ATOMIC_RELAXED);
	v->master.life = __atomic_load_n(&m->life, __ATOMIC_RELAXED);
	v->master.generation = __atomic_load_n(&m->generation,
	    __ATOMIC_RELAXED);
	v->master.started_us = __atomic_load_n(&m->started_us,
	    __ATOMIC_RELAXED);
	v->master.started_at = __atomic_load_n(&m->started_at,
	    __ATOMIC_RELAXED);
	v->master.slow_logged = __atomic_load_n(&m->slow_logged,
	    __ATOMIC_RELAXED);
	v->phase = __atomic_load_n(&w->phase, __ATOMIC_RELAXED);
	v->ready = __atomic_load_n(&w->ready, __ATOMIC_RELAXED);
	v->db_ok = __atomic_load_n(&w->db_ok, __ATOMIC_RELAXED);
	v->retire = __atomic_load_n(&w->retire, __ATOMIC_RELAXED);
	rc = sb_read_record(&w->req_seq, &v->req, &w->req, sizeof(v->req));
	/* A mixed copy may have lost a terminator. */
	v->req.method[sizeof(v->req.method) - 1] = '\0';
	v->req.uri[sizeof(v->req.uri) - 1] = '\0';
	return rc;
}

int
scoreboard_read_db_error(const struct sb_slot *slot, struct sb_db_error *e)
{
	int rc;

	rc = sb_read_record(&slot->worker.db_seq, e, &slot->worker.db,
	    sizeof(*e));
	e->text[sizeof(e->text) - 1] = '\0';
	return rc;
}

void
scoreboard_totals(const struct scoreboard *sb, struct sb_totals *t)
{
	const struct sb_totals *src = &sb->totals;
	int i;

	t->slow = __atomic_load_n(&src->slow, __ATOMIC_RELAXED);
	t->terminated = __atomic_load_n(&src->terminated, __ATOMIC_RELAXED);
	for (i = 0; i < SB_REASON_MAX; i++)
		t->respawns[i] = __atomic_load_n(&src->respawns[i],
		    __ATOMIC_RELAXED);
	t->reloads = __atomic_load_n(&src->reloads, __ATOMIC_RELAXED);
	t->listen_queue_max = __atomic_load_n(&src->listen_queue_max,
	    __ATOMIC_RELAXED);
	t->listen_queue = __atomic_load_n(&src->listen_queue,
	    __ATOMIC_RELAXED);
	t->listen_queue_len = __atomic_load_n(&src->listen_queue_len,
	    __ATOMIC_RELAXED);
	t->generation = __atomic_load_n(&src->generation, __ATOMIC_RELAXED);
	t->start_time = __atomic_load_n(&src->start_time, __ATOMIC_RELAXED);
	t->accepted = __atomic_load_n(&src->accepted, __ATOMIC_RELAXED);
	t->unavailable = __atomic_load_n(&src->unavailable, __ATOMIC_RELAXED);
	t->active = __atomic_load_n(&src->active, __ATOMIC_RELAXED);
	t->max_active = __atomic_load_n(&src->max_active, __ATOMIC_RELAXED);
	t->max_children_reached = __atomic_load_n(&src->max_children_reached,
	    __ATOMIC_RELAXED);
	t->replies_cut = __atomic_load_n(&src->replies_cut, __ATOMIC_RELAXED);
	for (i = 0; i < SCOREBOARD_CLASSES; i++)
		t->by_class[i] = __atomic_load_n(&src->by_class[i],
		    __ATOMIC_RELAXED);
}

int
scoreboard_busy(const struct sb_view *v)
{
	return sb_phase_busy(v->phase);
}

void
scoreboard_census(const struct scoreboard *sb, struct sb_census *c)
{
	unsigned i;
	int phase;

	c->live = c->busy = c->idle = 0;
	SCOREBOARD_FOREACH_LIVE(sb, i) {
		phase = __atomic_load_n(&sb->slots[i].worker.phase,
		    __ATOMIC_RELAXED);
		c->live++;
		if (sb_phase_busy(phase))
			c->busy++;
		else if (phase == SB_IDLE)
			c->idle++;
	}
}

void
scoreboard_count(struct scoreboard *sb, int status)
{
	int class = status / 100;

	if (class >= 1 && class < SCOREBOARD_CLASSES)
		__atomic_add_fetch(&sb->totals.by_class[class], 1,
		    __ATOMIC_RELAXED);
	if (status == 503)
		__atomic_add_fetch(&sb->totals.unavailable, 1,
		    __ATOMIC_RELAXED);
}

void
scoreboard_count_cut(struct scoreboard *sb)
{
	__atomic_add_fetch(&sb->totals.replies_cut, 1, __ATOMIC_RELAXED);
}

const char *
scoreboard_reason_name(int reason)
{
	static const char *const names[] = {
		[SB_REASON_EXIT] = "exit", [SB_REASON_CRASH] = "crash",
		[SB_REASON_RECYCLE] = "recycle", [SB_REASON_RELOAD] = "reload",
		[SB_REASON_TERMINATE] = "terminate",
	};

	if (reason < 0 || reason >= SB_REASON_MAX)
		return "unknown";
	return names[reason];
}

const char *
scoreboard_phase_name(int phase)
{
	static const char *const names[] = {
		[SB_STARTING] = "Starting", [SB_IDLE] = "Idle",
		[SB_READING] = "Reading", [SB_AUTH] = "Auth",
		[SB_DB] = "Database", [SB_WRITING] = "Writing",
		[SB_SENDING] = "Sending", [SB_EXITING] = "Exiting",
	};

	if (phase < 0 || phase > SB_EXITING)
		return "Unknown";
	return names[phase];
}

/* Raises *max to at least n; another worker may be raising it too. */
static void
sb_raise(unsigned *max, unsigned n)
{
	unsigned seen = __atomic_load_n(max, __ATOMIC_RELAXED);

	while (n > seen && !__atomic_compare_exchange_n(max, &seen, n, 1,
	    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;	/* seen now holds the newer value: compare again */
}

void
sb_worker_phase(struct scoreboard *sb, struct sb_slot *slot,
    enum sb_phase phase)
{
	int was = sb_phase_busy(slot->worker.phase);	/* its own: no race */
	int busy = sb_phase_busy(phase);
	int n;

	if (busy == was) {
		__atomic_store_n(&slot->worker.phase, (int)phase,
		    __ATOMIC_RELAXED);
		return;
	}
	if (!busy) {
		/* Leaving: off the count first, then idle (PEAKS). */
		__atomic_sub_fetch(&sb->totals.active, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&slot->worker.phase, (int)phase,
		    __ATOMIC_RELEASE);
		return;
	}
	/* Entering: busy first, so a reaping master sees it counted. */
	__atomic_store_n(&slot->worker.phase, (int)phase, __ATOMIC_SEQ_CST);
	n = __atomic_add_fetch(&sb->totals.active, 1, __ATOMIC_SEQ_CST);
	if (n <= 0)
		return;		/* one lost to an outside SIGKILL (PEAKS) */
	sb_raise(&sb->totals.max_active, (unsigned)n);
	if ((unsigned)n == __atomic_load_n(&sb->max_children,
	    __ATOMIC_RELAXED))
		__atomic_add_fetch(&sb->totals.max_children_reached, 1,
		    __ATOMIC_RELAXED);
}

/* The record's copy of a request field: truncated, NUL-terminated. */
static void
sb_copy(char *dst, size_t cap, const char *src, size_t len)
{
	if (len >= cap)
		len = cap - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

void
sb_worker_begin(struct scoreboard *sb, struct sb_slot *slot,
    const char *method, size_t mlen, const char *uri, size_t ulen,
    long long content_length, int64_t now_us)
{
	struct sb_request *q = &slot->worker.req;

	__atomic_add_fetch(&sb->totals.accepted, 1, __ATOMIC_RELAXED);
	sb_write_begin(&slot->worker.req_seq);
	q->start_us = now_us;
	q->content_length = content_length;
	sb_copy(q->method, sizeof(q->method), method, mlen);
	sb_copy(q->uri, sizeof(q->uri), uri, ulen);
	sb_write_end(&slot->worker.req_seq);
}

void
sb_worker_end(struct sb_slot *slot, int status, int64_t duration_us,
    int64_t cpu_us)
{
	struct sb_request *q = &slot->worker.req;

	sb_write_begin(&slot->worker.req_seq);
	q->start_us = 0;
	q->requests++;
	q->last_status = status;
	q->last_duration_us = duration_us;
	q->last_cpu_us = cpu_us;
	sb_write_end(&slot->worker.req_seq);
}

uint64_t
sb_worker_requests(const struct sb_slot *slot)
{
	return slot->worker.req.requests;	/* the writer reads its own */
}

void
sb_worker_db(struct sb_slot *slot, int up)
{
	__atomic_store_n(&slot->worker.db_ok, up != 0, __ATOMIC_RELAXED);
	if (up)
		__atomic_store_n(&slot->worker.ready, 1, __ATOMIC_RELAXED);
}

int
sb_worker_retire(struct sb_slot *slot)
{
	if (slot->worker.retire)
		return 0;
	__atomic_store_n(&slot->worker.retire, 1, __ATOMIC_RELAXED);
	return 1;
}

void
sb_worker_db_error(struct sb_slot *slot, const char *text, int64_t now_us)
{
	struct sb_db_error *e = &slot->worker.db;

	sb_write_begin(&slot->worker.db_seq);
	e->at_us = now_us;
	sb_copy(e->text, sizeof(e->text), text, strlen(text));
	sb_write_end(&slot->worker.db_seq);
}
