/*
 * arena.c: jansson's per-request bump allocator (see arena.h).
 * Each allocation is preceded by a header holding its size, so that
 * arena_free() can tell arena memory from heap memory by address alone,
 * and so that an AddressSanitizer build poisons every freed chunk (and
 * the unused rest of the block): a use after json_decref() is reported
 * there just as it would be on the heap.
 */
#include "util/arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#define ARENA_POISON(p, n)	ASAN_POISON_MEMORY_REGION((p), (n))
#define ARENA_UNPOISON(p, n)	ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define ARENA_POISON(p, n)	((void)(p), (void)(n))
#define ARENA_UNPOISON(p, n)	((void)(p), (void)(n))
#endif

#define ARENA_ALIGN	alignof(max_align_t)
#define ARENA_ROUND(n)	(((n) + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1))

static alignas(max_align_t) unsigned char arena_block[ARENA_SIZE];
static size_t arena_top;	/* next free byte */
static size_t arena_live;	/* allocations not yet freed */

static int
arena_owns(const void *p)
{
	uintptr_t a = (uintptr_t)p, lo = (uintptr_t)arena_block;

	return a >= lo && a < lo + ARENA_SIZE;
}

void *
arena_malloc(size_t n)
{
	unsigned char *p;
	size_t need;

	if (n > ARENA_SIZE / 2)
		return malloc(n);
	need = ARENA_ALIGN + ARENA_ROUND(n > 0 ? n : 1);
	if (need > ARENA_SIZE - arena_top)
		return malloc(n);
	if (arena_top == 0)
		ARENA_POISON(arena_block, ARENA_SIZE);
	p = arena_block + arena_top;
	ARENA_UNPOISON(p, ARENA_ALIGN + n);
	*(size_t *)p = n;
	arena_top += need;
	arena_live++;
	return p + ARENA_ALIGN;
}

void
arena_free(void *p)
{
	unsigned char *h;

	if (p == NULL)
		return;
	if (!arena_owns(p)) {
		free(p);
		return;
	}
	h = (unsigned char *)p - ARENA_ALIGN;
	ARENA_POISON(h, ARENA_ALIGN + *(size_t *)h);
	if (--arena_live == 0)
		arena_top = 0;	/* everything freed: rewind */
}

size_t
arena_used(void)
{
	return arena_top;
}

void
arena_install(void)
{
	json_set_alloc_funcs(arena_malloc, arena_free);
}
