/*
 * fuzz_base64url.c: libFuzzer target for the strict base64url codec.
 *
 * Strictness is the security property (one byte string, one spelling), so
 * the target checks it both ways on every input:
 *   - decode(input) succeeds  =>  encode(decoded) == input, byte for byte;
 *   - decode(encode(input)) == input, and the encoded length is exactly
 *     BASE64URL_ENCODED_LEN(size).
 * Buffers are allocated at exactly the documented sizes so that ASan sees
 * any write past them. Any broken invariant is an abort().
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "events/base64url.h"
#include "fuzz.h"

/* Decoding: canonical input round-trips exactly. */
static void
check_decode(const uint8_t *data, size_t size)
{
	unsigned char *dec;
	char *enc;
	size_t declen, enclen;
	long n, m;

	declen = BASE64URL_DECODED_MAX(size);
	if ((dec = malloc(declen)) == NULL)
		abort();
	n = base64url_decode((const char *)data, size, dec, declen);
	if (n < -1 || n > (long)declen)
		abort();
	/* One byte less than documented must be refused, never overrun. */
	if (declen > 0 && base64url_decode((const char *)data, size, dec,
	    declen - 1) != -1)
		abort();
	if (n >= 0) {
		enclen = BASE64URL_ENCODED_LEN((size_t)n) + 1;
		if ((enc = malloc(enclen)) == NULL)
			abort();
		m = base64url_encode(dec, (size_t)n, enc, enclen);
		if (m != (long)size || memcmp(enc, data, size) != 0 ||
		    enc[size] != '\0')
			abort();
		free(enc);
	}
	free(dec);
}

/* Encoding: any bytes encode to the documented length and decode back. */
static void
check_encode(const uint8_t *data, size_t size)
{
	unsigned char *dec;
	char *enc;
	size_t declen, enclen;
	long m, n;

	enclen = BASE64URL_ENCODED_LEN(size) + 1;
	if ((enc = malloc(enclen)) == NULL)
		abort();
	if (base64url_encode(data, size, enc, enclen - 1) != -1)
		abort();
	m = base64url_encode(data, size, enc, enclen);
	if (m != (long)(enclen - 1) || enc[m] != '\0' ||
	    strlen(enc) != (size_t)m)
		abort();
	declen = BASE64URL_DECODED_MAX((size_t)m);
	if ((dec = malloc(declen)) == NULL)
		abort();
	n = base64url_decode(enc, (size_t)m, dec, declen);
	if (n != (long)size || memcmp(dec, data, size) != 0)
		abort();
	free(dec);
	free(enc);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_decode(data, size);
	check_encode(data, size);
	return 0;
}
