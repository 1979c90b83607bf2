/*
 * buf.h: a bounded output buffer over caller-owned memory (PURE).
 * Appends never write past cap; the first one that would sets overflow
 * and the rest do nothing, so a caller checks once at the end.
 */
#ifndef CFPM_BUF_H
#define CFPM_BUF_H

#include <stddef.h>
#include <stdint.h>

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

/*
 * Appends v in decimal as printf's "%0*lld" writes it: at least width
 * characters (below BUF_INT_MAX), zeros between the sign and the digits.
 * A reply's few numbers (a status, a length, an id, a timestamp's
 * fields) without vfprintf, which costs thousands of instructions each.
 */
void buf_int(struct buf *b, int64_t v, int width);

#define BUF_INT_MAX	32	/* "-" and 19 digits, or up to this width */

/* Appends printf output (never truncated: all or overflow). */
void buf_printf(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Appends the n bytes at s as a JSON string literal: in quotes, '"' and
 * '\\' escaped with a backslash, the control characters U+0000..U+001F
 * as \u00XX, every other byte as it is (BUF_JSON_GROWTH bytes out per
 * byte in at most, plus the quotes). The caller passes UTF-8: what an
 * API stores and checked, or what esc_text() made of a client's bytes.
 */
void buf_json_string(struct buf *b, const char *s, size_t n);

#define BUF_JSON_GROWTH	6	/* a control character: \u00XX */

#endif
