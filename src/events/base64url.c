/*
 * base64url.c: strict base64url codec without padding (PURE, any process).
 * Strictness matters for tokens: a decoder that tolerates padding, '+', '/'
 * or stray low bits lets one signature stand for several encodings.
 */
#include "events/base64url.h"

#include <stdint.h>

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* A character's 6-bit value, or -1 outside the alphabet (a constant
 * expression: the tables below are made from it at compile time). */
#define B64_VALUE(c)	((c) >= 'A' && (c) <= 'Z' ? (c) - 'A' :		\
			 (c) >= 'a' && (c) <= 'z' ? (c) - 'a' + 26 :	\
			 (c) >= '0' && (c) <= '9' ? (c) - '0' + 52 :	\
			 (c) == '-' ? 62 : (c) == '_' ? 63 : -1)

/* The 256 entries of a table, entry c being F(c). */
#define B64_R4(F, c)	F(c), F((c) + 1), F((c) + 2), F((c) + 3)
#define B64_R16(F, c)	B64_R4(F, c), B64_R4(F, (c) + 4), B64_R4(F, (c) + 8), \
			B64_R4(F, (c) + 12)
#define B64_R64(F, c)	B64_R16(F, c), B64_R16(F, (c) + 16),		\
			B64_R16(F, (c) + 32), B64_R16(F, (c) + 48)
#define B64_R256(F)	B64_R64(F, 0), B64_R64(F, 64), B64_R64(F, 128),	\
			B64_R64(F, 192)

/*
 * Character -> 6-bit value, B64_BAD (high bit) outside the alphabet: a
 * table instead of a chain of range tests, because a token's characters
 * are random to the branch predictor (the chain cost ~5 ns a character).
 */
#define B64_BAD		0x80
#define B64_T(c)	(B64_VALUE(c) < 0 ? B64_BAD : B64_VALUE(c))
static const unsigned char b64_table[256] = { B64_R256(B64_T) };

/*
 * The same values already where they go in a group's three bytes, one
 * table per position of the character in its group of four: a group is
 * then three ORs, and one test finds any character outside the alphabet
 * (B64_BAD24: a bit no valid group sets). Bytes are numbered as they are
 * stored: byte 0 is the first decoded byte, bits 0-7.
 */
#define B64_BAD24	0x01000000u
#define B64_P(c, expr)	(B64_VALUE(c) < 0 ? B64_BAD24 : (uint32_t)(expr))
#define B64_P0(c)	B64_P(c, B64_VALUE(c) << 2)
#define B64_P1(c)	B64_P(c, B64_VALUE(c) >> 4 | (B64_VALUE(c) & 0x0f) << 12)
#define B64_P2(c)	B64_P(c, B64_VALUE(c) >> 2 << 8 | (B64_VALUE(c) & 0x03) << 22)
#define B64_P3(c)	B64_P(c, B64_VALUE(c) << 16)
static const uint32_t b64_pos[4][256] = {
	{ B64_R256(B64_P0) }, { B64_R256(B64_P1) },
	{ B64_R256(B64_P2) }, { B64_R256(B64_P3) },
};

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
	uint32_t v;
	int tail;

	if (len % 4 == 1 || dstlen < BASE64URL_DECODED_MAX(len))
		return -1;
	for (i = 0; i + 4 <= len; i += 4) {
		v = b64_pos[0][s[i]] | b64_pos[1][s[i + 1]] |
		    b64_pos[2][s[i + 2]] | b64_pos[3][s[i + 3]];
		if (v & B64_BAD24)
			return -1;
		dst[out++] = (unsigned char)v;
		dst[out++] = (unsigned char)(v >> 8);
		dst[out++] = (unsigned char)(v >> 16);
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
