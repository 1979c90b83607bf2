/*
 * buf.c: bounded appends for replies and the status page (any process).
 */
#include "util/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void
buf_init(struct buf *b, char *p, size_t cap)
{
	b->p = p;
	b->len = 0;
	b->cap = cap;
	b->overflow = 0;
}

void
buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->overflow || n > b->cap - b->len) {
		b->overflow = 1;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

void
buf_str(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= b->cap - b->len)
		b->overflow = 1;
	else
		b->len += (size_t)n;
}
