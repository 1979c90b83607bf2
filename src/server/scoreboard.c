/*
 * scoreboard.c: the shared-memory worker table (mapped by the master,
 * written by the workers, one slot each).
 */
#include "server/scoreboard.h"

#include <stddef.h>
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
		if (sb->slots[i].state == SB_FREE)
			return (int)i;
	return -1;
}

int
scoreboard_find(const struct scoreboard *sb, pid_t pid)
{
	unsigned i;

	for (i = 0; i < sb->nslots; i++)
		if (sb->slots[i].state != SB_FREE && sb->slots[i].pid == pid)
			return (int)i;
	return -1;
}

int
scoreboard_busy(const struct sb_slot *slot)
{
	return slot->state >= SB_READING && slot->state <= SB_WRITING;
}

void
scoreboard_count(struct scoreboard *sb, int status)
{
	int class = status / 100;

	__atomic_add_fetch(&sb->totals.accepted, 1, __ATOMIC_RELAXED);
	if (class >= 1 && class <= 5)
		__atomic_add_fetch(&sb->totals.by_class[class], 1,
		    __ATOMIC_RELAXED);
	if (status == 503)
		__atomic_add_fetch(&sb->totals.unavailable, 1,
		    __ATOMIC_RELAXED);
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
scoreboard_state_name(int state)
{
	static const char *const names[] = {
		[SB_FREE] = "Free", [SB_STARTING] = "Starting",
		[SB_IDLE] = "Idle", [SB_READING] = "Reading",
		[SB_AUTH] = "Auth", [SB_DB] = "Database",
		[SB_WRITING] = "Writing", [SB_EXITING] = "Finishing",
	};

	if (state < 0 || state > SB_EXITING)
		return "Unknown";
	return names[state];
}
