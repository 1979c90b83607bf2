/*
 * arena.h: a bump allocator for jansson's short-lived trees (worker).
 * A request parses a token header, a token payload and perhaps a body,
 * each a few dozen small allocations freed together a moment later:
 * carving them from one static block instead of malloc saves the
 * allocator's bookkeeping on every request. The block rewinds by itself
 * whenever everything carved from it has been freed, so correctness
 * never depends on lifetimes: a tree that lives on just keeps the block
 * from rewinding, and what does not fit goes to malloc as before.
 */
#ifndef CFPM_ARENA_H
#define CFPM_ARENA_H

#include <stddef.h>

#define ARENA_SIZE	(64 * 1024)	/* a request's trees fit many times */

/*
 * Makes jansson allocate through the arena (json_set_alloc_funcs). From
 * then on a string from json_dumps() must go to arena_free(), not free().
 */
void arena_install(void);

/* The allocator pair itself (exposed for tests). */
void *arena_malloc(size_t n);
void arena_free(void *p);

/* Bytes carved and not yet rewound; 0 when the block is empty. */
size_t arena_used(void);

#endif
