/*
 * base64url.c: strict base64url codec without padding (PURE, any process).
 * Strictness matters for tokens: a decoder that tolerates padding, '+', '/'
 * or stray low bits lets one signature stand for several encodings.
 */
#include "base64url.h"

#include <stdint.h>

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int
b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

long
base64url_decode(const char *src, size_t len, unsigned char *dst,
    size_t dstlen)
{
	uint32_t acc = 0;
	size_t i, out = 0;
	int bits = 0, v;

	if (len % 4 == 1)
		return -1;
	if (dstlen < BASE64URL_DECODED_MAX(len))
		return -1;
	for (i = 0; i < len; i++) {
		if ((v = b64_value((unsigned char)src[i])) < 0)
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			dst[out++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	/* Leftover bits must be zero: only one encoding per byte string. */
	if (acc != 0)
		return -1;
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
