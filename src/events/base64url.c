/*
 * base64url.c: strict base64url codec without padding (PURE, any process).
 * Strictness matters for tokens: a decoder that tolerates padding, '+', '/'
 * or stray low bits lets one signature stand for several encodings.
 */
#include "events/base64url.h"

#include <stdint.h>

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/*
 * Character -> 6-bit value, B64_BAD (high bit) outside the alphabet: a
 * table instead of a chain of range tests, because a token's characters
 * are random to the branch predictor (the chain cost ~5 ns a character).
 */
#define B64_BAD	0x80
#define BAD	B64_BAD
static const unsigned char b64_table[256] = {
	BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
	BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
	BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,  62, BAD, BAD,
	 52,  53,  54,  55,  56,  57,  58,  59,  60,  61, BAD, BAD, BAD, BAD, BAD, BAD,
	BAD,   0,   1,   2,   3,   4,   5,   6,   7,   8,   9,  10,  11,  12,  13,  14,
	 15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25, BAD, BAD, BAD, BAD,  63,
	BAD,  26,  27,  28,  29,  30,  31,  32,  33,  34,  35,  36,  37,  38,  39,  40,
	 41,  42,  43,  44,  45,  46,  47,  48,  49,  50,  51, BAD, BAD, BAD, BAD, BAD,
	BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
	BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
	BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
	BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
	BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
	BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
	BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
	BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD, BAD,
};
#undef BAD

/* Appends the 1 or 2 bytes of a final group of n (2 or 3) characters. */
static int
b64_tail(const unsigned char *s, size_t n, unsigned char *dst)
{
	uint32_t v0 = b64_table[s[0]], v1 = b64_table[s[1]];
	uint32_t v2 = n == 3 ? b64_table[s[2]] : 0;

	if ((v0 | v1 | v2) & B64_BAD)
		return -1;
	dst[0] = (unsigned char)(v0 << 2 | v1 >> 4);
	if (n == 2)	/* leftover bits must be zero: one encoding only */
		return (v1 & 0x0f) == 0 ? 1 : -1;
	dst[1] = (unsigned char)(v1 << 4 | v2 >> 2);
	return (v2 & 0x03) == 0 ? 2 : -1;
}

long
base64url_decode(const char *src, size_t len, unsigned char *dst,
    size_t dstlen)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t i, out = 0;
	uint32_t a, b, c, d;
	int tail;

	if (len % 4 == 1 || dstlen < BASE64URL_DECODED_MAX(len))
		return -1;
	for (i = 0; i + 4 <= len; i += 4) {
		a = b64_table[s[i]];
		b = b64_table[s[i + 1]];
		c = b64_table[s[i + 2]];
		d = b64_table[s[i + 3]];
		if ((a | b | c | d) & B64_BAD)
			return -1;
		a = a << 18 | b << 12 | c << 6 | d;
		dst[out++] = (unsigned char)(a >> 16);
		dst[out++] = (unsigned char)(a >> 8);
		dst[out++] = (unsigned char)a;
	}
	if (i < len) {
		if ((tail = b64_tail(s + i, len - i, dst + out)) < 0)
			return -1;
		out += (size_t)tail;
	}
	return (long)out;
}

long
base64url_encode(const unsigned char *src, size_t len, char *dst,
    size_t dstlen)
{
	size_t i, out = 0;
	uint32_t acc;

	if (dstlen < BASE64URL_ENCODED_LEN(len) + 1)
		return -1;
	for (i = 0; i + 2 < len; i += 3) {
		acc = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8 | src[i + 2];
		dst[out++] = b64_alphabet[acc >> 18 & 63];
		dst[out++] = b64_alphabet[acc >> 12 & 63];
		dst[out++] = b64_alphabet[acc >> 6 & 63];
		dst[out++] = b64_alphabet[acc & 63];
	}
	if (len - i == 1) {
		acc = (uint32_t)src[i] << 16;
		dst[out++] = b64_alphabet[acc >> 18 & 63];
		dst[out++] = b64_alphabet[acc >> 12 & 63];
	} else if (len - i == 2) {
		acc = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8;
		dst[out++] = b64_alphabet[acc >> 18 & 63];
		dst[out++] = b64_alphabet[acc >> 12 & 63];
		dst[out++] = b64_alphabet[acc >> 6 & 63];
	}
	dst[out] = '\0';
	return (long)out;
}
