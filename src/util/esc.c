/*
 * esc.c: escape client-supplied text for logs and the status page (PURE;
 * master and workers).
 */
#include "util/esc.h"

#include <string.h>

static const char esc_hex[] = "0123456789abcdef";

/*
 * The length of the well-formed UTF-8 sequence at s (n > 0 bytes left),
 * or 0 if the byte at s does not start one (RFC 3629, table 3-7 of the
 * Unicode standard: the second byte's range depends on the first).
 */
static size_t
esc_utf8_len(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] < 0xc2)		/* continuation, or overlong C0/C1 */
		return 0;
	if (s[0] < 0xe0)
		len = 2;
	else if (s[0] < 0xf0) {
		len = 3;
		if (s[0] == 0xe0)
			lo = 0xa0;	/* overlong */
		else if (s[0] == 0xed)
			hi = 0x9f;	/* surrogates */
	} else if (s[0] < 0xf5) {
		len = 4;
		if (s[0] == 0xf0)
			lo = 0x90;	/* overlong */
		else if (s[0] == 0xf4)
			hi = 0x8f;	/* past U+10FFFF */
	} else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

size_t
esc_text(char *dst, size_t cap, const char *src, size_t n)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t i = 0, o = 0, k, j, need;
	int escape;

	if (cap == 0)
		return 0;
	while (i < n) {
		k = esc_utf8_len(s + i, n - i);
		if (k == 0)
			escape = k = 1;
		else if (k == 1)
			escape = s[i] < 0x20 || s[i] == 0x7f;
		else	/* C1 controls are U+0080..U+009F: C2 80..C2 9F */
			escape = k == 2 && s[i] == 0xc2 && s[i + 1] < 0xa0;
		need = escape ? k * ESC_MAX_GROWTH : s[i] == '\\' ? 2 : k;
		if (o + need > cap - 1)
			break;		/* never half an escape or a character */
		if (escape)
			for (j = 0; j < k; j++) {
				dst[o++] = '\\';
				dst[o++] = 'x';
				dst[o++] = esc_hex[s[i + j] >> 4];
				dst[o++] = esc_hex[s[i + j] & 15];
			}
		else if (s[i] == '\\') {
			dst[o++] = '\\';
			dst[o++] = '\\';
		} else {
			memcpy(dst + o, s + i, k);
			o += k;
		}
		i += k;
	}
	dst[o] = '\0';
	return o;
}

size_t
esc_field(char *dst, size_t cap, const char *field, size_t size)
{
	char copy[ESC_MAX_FIELD];

	if (size > sizeof(copy))
		size = sizeof(copy);
	memcpy(copy, field, size);
	return esc_text(dst, cap, copy, strnlen(copy, size));
}
