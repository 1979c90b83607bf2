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
keep_end(int asked, int draining, int queued)
{
	if (!asked)
		return KEEP_CLOSE;
	return draining || queued ? KEEP_RELEASE : KEEP_KEEP;
}
