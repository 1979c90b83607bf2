/*
 * esc.h: client-supplied text made safe to write into a log line or the
 * status page (PURE; used by the master and the workers).
 *
 * A request's method, path and request id are bytes a client chose: a
 * newline in them would forge a log or status line, an escape sequence
 * would reach an operator's terminal, and invalid UTF-8 would make the
 * JSON status page drop the record. Every writer of such text passes it
 * through esc_text() first.
 */
#ifndef CFPM_ESC_H
#define CFPM_ESC_H

#include <stddef.h>

#define ESC_MAX_GROWTH	4	/* one input byte becomes at most "\xNN" */

/* Bytes of output (NUL included) that always hold n escaped bytes. */
#define ESC_SIZE(n)	((n) * ESC_MAX_GROWTH + 1)

/* Longest field esc_field() copies before escaping. */
#define ESC_MAX_FIELD	256

/*
 * PURE. Copies the n bytes at src to dst (cap bytes; NUL-terminated when
 * cap > 0) with these escaped:
 *   - control characters, U+0000..U+001F, U+007F and U+0080..U+009F
 *     (C1, e.g. CSI and NEL), as \xNN for each of their bytes;
 *   - every byte that is not part of well-formed UTF-8 (RFC 3629: no
 *     overlong forms, no surrogates, nothing past U+10FFFF) as \xNN;
 *   - a backslash as \\, so that an escape in the output is unambiguous.
 * Everything else (printable ASCII, well-formed UTF-8) is copied as is.
 * The output is thus valid UTF-8 without control characters. When it
 * does not fit, it ends before the first escape or character that would
 * not fit whole. Returns the output length (without the NUL).
 */
size_t esc_text(char *dst, size_t cap, const char *src, size_t n);

/*
 * PURE. esc_text() of a NUL-terminated field of size bytes that another
 * process may be rewriting meanwhile (a scoreboard slot): escapes a
 * private copy of at most ESC_MAX_FIELD bytes, so what is checked is
 * what is written. Returns the output length.
 */
size_t esc_field(char *dst, size_t cap, const char *field, size_t size);

#endif
