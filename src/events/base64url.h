/*
 * base64url.h: strict RFC 4648 §5 base64url without padding (PURE).
 * Used to decode by jwt.c (token segments) and jwk.c (a JWK's n and e),
 * to encode by cfpm-token.
 */
#ifndef CFPM_BASE64URL_H
#define CFPM_BASE64URL_H

#include <stddef.h>

/* Bytes needed to decode a base64url string of length n (upper bound). */
#define BASE64URL_DECODED_MAX(n)	(((n) / 4) * 3 + 2)
/* Bytes needed to encode n bytes, not counting the NUL. */
#define BASE64URL_ENCODED_LEN(n)	(((n) / 3) * 4 + ((n) % 3 ? (n) % 3 + 1 : 0))

/*
 * Decodes len characters of src into dst (room for dstlen bytes).
 * Strict: only [A-Za-z0-9_-], no '=' padding, no whitespace, a length of
 * 1 mod 4 rejected, and the unused low bits of the last character must be
 * zero (canonical encoding). Returns the decoded length, or -1.
 */
long base64url_decode(const char *src, size_t len, unsigned char *dst,
    size_t dstlen);

/*
 * Encodes len bytes of src into dst (room for dstlen bytes including the
 * terminating NUL). Returns the encoded length, or -1 if dst is too small.
 */
long base64url_encode(const unsigned char *src, size_t len, char *dst,
    size_t dstlen);

#endif
