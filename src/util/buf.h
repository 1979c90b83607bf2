/*
 * buf.h: a bounded output buffer over caller-owned memory (PURE).
 * Appends never write past cap; the first one that would sets overflow
 * and the rest do nothing, so a caller checks once at the end.
 */
#ifndef CFPM_BUF_H
#define CFPM_BUF_H

#include <stddef.h>

struct buf {
	char	*p;
	size_t	 len;
	size_t	 cap;
	int	 overflow;
};

/* An empty buffer over cap bytes at p. */
void buf_init(struct buf *b, char *p, size_t cap);

/* Appends n bytes. */
void buf_add(struct buf *b, const char *s, size_t n);

/* Appends a NUL-terminated string. */
void buf_str(struct buf *b, const char *s);

/* Appends printf output (never truncated: all or overflow). */
void buf_printf(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
