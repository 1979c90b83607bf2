/*
 * test_base64url.c: the strict base64url codec (RFC 4648 section 5, no
 * padding): round trips, RFC test vectors, and everything it must refuse.
 */
#include <stdio.h>
#include <string.h>

#include "events/base64url.h"
#include "tap.h"

/* 1 if base64url_decode() refuses s. */
static int
refused(const char *s)
{
	unsigned char out[64];

	return base64url_decode(s, strlen(s), out, sizeof(out)) == -1;
}

/*
 * Reference decoder: the RFC's definition bit by bit, slow and obvious,
 * to hold the table-driven decoder to (same result for every input).
 */
static long
ref_decode(const unsigned char *s, size_t len, unsigned char *dst)
{
	static const char abc[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned acc = 0, bits = 0;
	size_t i, out = 0;
	const char *p;

	if (len % 4 == 1)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] == 0 || (p = strchr(abc, s[i])) == NULL)
			return -1;
		acc = acc << 6 | (unsigned)(p - abc);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			dst[out++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	return acc != 0 ? -1 : (long)out;
}

/* 1 if both decoders agree on s (result and bytes). */
static int
agrees(const unsigned char *s, size_t len)
{
	unsigned char a[16], b[16];
	long n = base64url_decode((const char *)s, len, a, sizeof(a));

	return n == ref_decode(s, len, b) && (n < 0 || memcmp(a, b,
	    (size_t)n) == 0);
}

/*
 * Every byte value in every position of a 4-character group (the other
 * three valid), and every 2- and 3-character tail over the alphabet plus
 * a few bytes next to its ranges.
 */
static void
test_agrees_with_reference(void)
{
	static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
	    "qrstuvwxyz0123456789-_@[`{/:,.=+ \x80\xff";
	unsigned char s[4];
	size_t pos, n = strlen(set), i, j, k, bad = 0, runs = 0;
	unsigned c;

	for (pos = 0; pos < 4; pos++)
		for (c = 0; c < 256; c++) {
			memcpy(s, "QUJD", 4);
			s[pos] = (unsigned char)c;
			bad += !agrees(s, 4) + !agrees(s, pos < 2 ? 2 : pos + 1);
			runs += 2;
		}
	ok(bad == 0, "every byte in every position: %zu of %zu disagree",
	    bad, runs);
	bad = runs = 0;
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++) {
			s[0] = (unsigned char)set[i];
			s[1] = (unsigned char)set[j];
			bad += !agrees(s, 2);
			for (k = 0; k < n; k++) {
				s[2] = (unsigned char)set[k];
				bad += !agrees(s, 3);
				runs++;
			}
			runs++;
		}
	ok(bad == 0, "every 2- and 3-character tail: %zu of %zu disagree",
	    bad, runs);
}

static void
test_round_trips(void)
{
	unsigned char src[32] = { 0 }, out[32];
	char enc[64];
	long n, m;
	size_t len, i;
	int good;

	for (len = 0; len <= 20; len++) {
		/* 00 7f fe ..: from 3 bytes on, both - and _ appear. */
		for (i = 0; i < len; i++)
			src[i] = (unsigned char)(127 * i);
		n = base64url_encode(src, len, enc, sizeof(enc));
		m = -1;
		if (n >= 0)
			m = base64url_decode(enc, (size_t)n, out, sizeof(out));
		good = n == (long)BASE64URL_ENCODED_LEN(len) &&
		    strlen(enc) == (size_t)n && m == (long)len &&
		    memcmp(src, out, len) == 0 &&
		    strpbrk(enc, "=+/") == NULL;
		ok(good, "round trip of %zu bytes (\"%s\")", len, enc);
	}
}

static void
test_rfc4648_vectors(void)
{
	/* RFC 4648 section 10, without padding. */
	static const struct { const char *plain, *enc; } v[] = {
		{ "", "" }, { "f", "Zg" }, { "fo", "Zm8" }, { "foo", "Zm9v" },
		{ "foob", "Zm9vYg" }, { "fooba", "Zm9vYmE" },
		{ "foobar", "Zm9vYmFy" },
	};
	unsigned char out[16];
	char enc[16];
	size_t i;
	long n;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		base64url_encode((const unsigned char *)v[i].plain,
		    strlen(v[i].plain), enc, sizeof(enc));
		is_str(enc, v[i].enc, "encode \"%s\"", v[i].plain);
		n = base64url_decode(v[i].enc, strlen(v[i].enc), out,
		    sizeof(out));
		ok(n == (long)strlen(v[i].plain) &&
		    memcmp(out, v[i].plain, (size_t)n) == 0,
		    "decode \"%s\"", v[i].enc);
	}
	/* The two characters that differ from standard base64. */
	n = base64url_decode("-_8", 3, out, sizeof(out));
	ok(n == 2 && out[0] == 0xfb && out[1] == 0xff, "\"-_8\" is fb ff");
}

static void
test_refusals(void)
{
	unsigned char out[64];
	char enc[8];

	ok(refused("Zg=="), "padding \"Zg==\"");
	ok(refused("Zg="), "padding \"Zg=\"");
	ok(refused("Zm8="), "padding \"Zm8=\"");
	ok(refused("===="), "only padding");
	ok(refused("+_8A"), "'+' (standard alphabet)");
	ok(refused("-/8A"), "'/' (standard alphabet)");
	ok(refused("Zm9v Yg"), "space inside");
	ok(refused(" Zm9v"), "leading space");
	ok(refused("Zm9v\n"), "trailing newline");
	ok(refused("Zm9v\r\nYg"), "CRLF inside");
	ok(refused("Zm9\tv"), "tab inside");
	ok(refused("Zm9v*"), "'*'");
	ok(refused("Zm9v."), "'.'");
	ok(refused("Zm\xc3\xa9v"), "non-ASCII byte");
	ok(refused("Z"), "length 1");
	ok(refused("Zm9vY"), "length 5 (1 mod 4)");
	ok(refused("Zm9vYmFyZ"), "length 9 (1 mod 4)");
	ok(base64url_decode("Zm\0v", 4, out, sizeof(out)) == -1, "NUL inside");
	/* Non-canonical: the unused low bits of the last character are set. */
	ok(!refused("QQ"), "\"QQ\" is canonical");
	ok(refused("QR"), "\"QR\" has a stray low bit");
	ok(refused("QB"), "\"QB\" has stray low bits");
	ok(refused("QUF"), "\"QUF\" has a stray low bit");
	ok(!refused("QUE"), "\"QUE\" is canonical");
	ok(refused("Zm9vYh"), "\"Zm9vYh\" non-canonical");
	ok(refused("Zm9vYmF"), "\"Zm9vYmF\" non-canonical");

	/* Output room. */
	ok(base64url_decode("Zm9v", 4, out, 2) == -1, "decode: dst too small");
	ok(base64url_decode("Zm9v", 4, out, BASE64URL_DECODED_MAX(4)) == 3,
	    "decode: dst of BASE64URL_DECODED_MAX(4) is enough");
	memset(enc, 'X', sizeof(enc));
	ok(base64url_encode((const unsigned char *)"foo", 3, enc, 4) == -1 &&
	    enc[0] == 'X', "encode: no room for the NUL, nothing written");
	ok(base64url_encode((const unsigned char *)"foo", 3, enc, 5) == 4 &&
	    strcmp(enc, "Zm9v") == 0, "encode: exact room");
	ok(base64url_decode("", 0, out, sizeof(out)) == 0,
	    "empty string decodes to 0 bytes");
}

int
main(void)
{
	test_round_trips();
	test_rfc4648_vectors();
	test_refusals();
	test_agrees_with_reference();
	return done_testing();
}
