/*
 * fuzz.h: the libFuzzer entry points the targets in tests/fuzz/ define.
 *
 * Each fuzz_*.c defines LLVMFuzzerTestOneInput() (and may define
 * LLVMFuzzerInitialize()); it links either with libFuzzer (clang,
 * tests/fuzz/build.sh) or with the plain corpus driver replay.c (any
 * compiler, make check). Targets print nothing and abort() when an
 * invariant of the code under test breaks.
 */
#ifndef CFPM_FUZZ_H
#define CFPM_FUZZ_H

#include <sys/mman.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Runs one input; returns 0 (libFuzzer reserves other values). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Optional one-time setup, called before the first input. */
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A copy of an input that ends right before an inaccessible page. */
struct fuzz_guard {
	void	*map;
	size_t	 maplen;
};

/*
 * Copies size bytes of data to the end of fresh pages followed by a
 * PROT_NONE page and returns the copy: a read past data[size - 1] faults
 * even inside libc (sscanf, strlen), where ASan does not look and an
 * exact-size heap copy would not catch it. Free with fuzz_guard_free().
 */
static inline const char *
fuzz_guard_copy(const uint8_t *data, size_t size, struct fuzz_guard *g)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	char *p;

	g->maplen = (size + pg - 1) / pg * pg + pg;
	p = mmap(NULL, g->maplen, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || mprotect(p + g->maplen - pg, pg, PROT_NONE) == -1)
		abort();
	g->map = p;
	p += g->maplen - pg - size;
	if (size > 0)
		memcpy(p, data, size);
	return p;
}

static inline void
fuzz_guard_free(struct fuzz_guard *g)
{
	munmap(g->map, g->maplen);
}

#endif
