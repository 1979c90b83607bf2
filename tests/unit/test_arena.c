/*
 * test_arena.c: jansson's bump allocator: alignment, rewinding when
 * everything is freed, falling back to malloc when full or for large
 * blocks, and whole jansson trees parsed and freed through it.
 */
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/arena.h"
#include "tap.h"

static int
aligned(const void *p)
{
	return (uintptr_t)p % alignof(max_align_t) == 0;
}

static void
test_carving(void)
{
	void *a = arena_malloc(1), *b = arena_malloc(40), *c;

	ok(a != NULL && b != NULL && aligned(a) && aligned(b) &&
	    (char *)b >= (char *)a + 1, "two blocks, aligned, apart");
	memset(b, 0xab, 40);
	ok(arena_used() > 0, "arena in use: %zu bytes", arena_used());
	arena_free(a);
	ok(arena_used() > 0, "one block still live: no rewind");
	arena_free(b);
	ok(arena_used() == 0, "all freed: rewound");
	c = arena_malloc(8);
	ok(c == a, "after the rewind the first block is reused");
	arena_free(c);
	arena_free(NULL);
	ok(arena_used() == 0, "free(NULL) is a no-op");
}

static void
test_malloc_fallback(void)
{
	/* 100-byte blocks take 128 bytes with the header: half fit. */
	void *big = arena_malloc(ARENA_SIZE), *p[ARENA_SIZE / 64];
	size_t i, n = 0, heap = 0;
	char *lo;

	ok(big != NULL && arena_used() == 0, "a block larger than half the "
	    "arena comes from malloc");
	arena_free(big);
	for (i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		if ((p[i] = arena_malloc(100)) != NULL)
			n++;
	lo = (char *)p[0] - alignof(max_align_t);	/* the block's start */
	for (i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		heap += (char *)p[i] < lo || (char *)p[i] >= lo + ARENA_SIZE;
	ok(n == sizeof(p) / sizeof(p[0]) && heap == n / 2,
	    "full arena: %zu of %zu blocks from malloc", heap, n);
	for (i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		arena_free(p[i]);
	ok(arena_used() == 0, "heap and arena blocks freed alike; rewound");
}

static void
test_jansson_trees(void)
{
	static const char doc[] = "{\"iss\":\"https://a.example\",\"aud\":"
	    "[\"x\",\"y\"],\"exp\":1800000000,\"scope\":\"a b c\",\"n\":"
	    "{\"deep\":[1,2.5,null,true]}}";
	json_error_t err;
	json_t *root, *again;
	char *text;
	int i, good = 1;

	arena_install();
	for (i = 0; i < 1000; i++) {
		root = json_loads(doc, JSON_REJECT_DUPLICATES, &err);
		good &= root != NULL && arena_used() > 0 &&
		    json_integer_value(json_object_get(root, "exp")) ==
		    1800000000;
		json_decref(root);
		good &= arena_used() == 0;
	}
	ok(good, "1000 parses of a claims set: each rewinds the arena");
	root = json_loads(doc, 0, &err);
	text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
	again = json_loads(text, 0, &err);
	ok(json_equal(root, again), "dump and reload through the arena");
	/* A dump is allocated by jansson's allocator: freed by the same. */
	arena_free(text);
	json_decref(root);
	json_decref(again);
	ok(arena_used() == 0, "nothing left after the trees are freed");
}

int
main(void)
{
	test_carving();
	test_malloc_fallback();
	test_jansson_trees();
	return done_testing();
}
