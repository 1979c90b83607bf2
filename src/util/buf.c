/*
 * buf.c: bounded appends for replies and the status page (PURE; any
 * process).
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
buf_int(struct buf *b, int64_t v, int width)
{
	char tmp[BUF_INT_MAX];
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	size_t i = sizeof(tmp);
	int len;

	do {
		tmp[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	len = (int)(sizeof(tmp) - i) + (v < 0);
	for (; len < width && i > 1; len++)
		tmp[--i] = '0';
	if (v < 0)
		tmp[--i] = '-';
	buf_add(b, tmp + i, sizeof(tmp) - i);
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

void
buf_json_string(struct buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char esc[BUF_JSON_GROWTH] = { '\\', 'u', '0', '0', 0, 0 };
	size_t i, run = 0;
	unsigned char c;

	buf_add(b, "\"", 1);
	/* Runs of plain bytes go out in one append each. */
	for (i = 0; i < n; i++) {
		c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		buf_add(b, s + run, i - run);
		run = i + 1;
		if (c == '"' || c == '\\') {
			esc[1] = (char)c;
			buf_add(b, esc, 2);
			esc[1] = 'u';
		} else {
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			buf_add(b, esc, BUF_JSON_GROWTH);
		}
	}
	buf_add(b, s + run, n - run);
	buf_add(b, "\"", 1);
}
