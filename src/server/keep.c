/*
 * keep.c: the kept-connection decisions (PURE; see keep.h for the model
 * and its reasons). Used by workers.
 */
#include "server/keep.h"

#include <string.h>

void
keep_pick(const struct keep_seen *s, struct keep_plan *p)
{
	memset(p, 0, sizeof(*p));
	/* First: nobody else can, and their peers wait on them. */
	p->serve_released = s->released_ready;
	if (s->held && s->held_ready) {
		/* Only this worker can serve it; a waiting connection goes to
		 * another idle worker, if any. */
		p->serve_held = 1;
		p->pass_wake = s->listen_ready && !s->stopping;
		return;
	}
	if (s->stopping) {
		p->release_held = s->held;
		return;
	}
	if (s->listen_ready) {
		/* The backlog comes first: give the idle one up before
		 * serving another, so no request is ever written into a
		 * connection whose worker is busy. */
		p->accept = 1;
		p->release_on_accept = s->held;
	}
}

enum keep_end
keep_end(int asked, int keep_none, int queued)
{
	if (!asked)
		return KEEP_CLOSE;
	return keep_none || queued ? KEEP_RELEASE : KEEP_KEEP;
}

int
keep_released_add(struct keep_released *set, int fd, int64_t now_us)
{
	struct keep_released_conn *c;
	unsigned i, oldest = 0;
	int evicted = -1;

	if (set->n == KEEP_MAX_RELEASED) {
		for (i = 1; i < set->n; i++)
			if (set->conn[i].until_us < set->conn[oldest].until_us)
				oldest = i;
		evicted = set->conn[oldest].fd;
		keep_released_drop(set, oldest);
	}
	c = &set->conn[set->n++];
	c->fd = fd;
	c->until_us = now_us + (int64_t)KEEP_RELEASE_MS * 1000;
	c->ready = 0;
	return evicted;
}

int
keep_released_mark(struct keep_released *set, int fd)
{
	unsigned i;

	for (i = 0; i < set->n; i++)
		if (set->conn[i].fd == fd) {
			set->conn[i].ready = 1;
			return 1;
		}
	return 0;
}

int
keep_released_due(struct keep_released *set, int64_t now_us)
{
	unsigned i;
	int any = 0;

	for (i = 0; i < set->n; i++) {
		if (set->conn[i].until_us <= now_us)
			set->conn[i].ready = 1;
		any |= set->conn[i].ready;
	}
	return any;
}

int
keep_released_next_ms(const struct keep_released *set, int64_t now_us)
{
	int64_t next = -1, left;
	unsigned i;

	for (i = 0; i < set->n; i++) {
		left = set->conn[i].until_us - now_us;
		if (left < 0)
			left = 0;
		if (next == -1 || left < next)
			next = left;
	}
	return next == -1 ? -1 : (int)((next + 999) / 1000);
}

void
keep_released_drop(struct keep_released *set, unsigned i)
{
	set->conn[i] = set->conn[--set->n];
}
