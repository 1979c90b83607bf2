/*
 * test_esc.c: escaping of client text for logs and the status page
 * (esc.c): every byte value, malformed UTF-8 of every kind, and output
 * limits that must never cut an escape or a character in half.
 */
#include <stdio.h>
#include <string.h>

#include "util/esc.h"
#include "tap.h"

#define T_MAX	512

/*
 * Reference UTF-8 check by decoding (not by esc.c's table): the length
 * of the well-formed sequence at s, or 0.
 */
static size_t
ref_utf8_len(const unsigned char *s, size_t n)
{
	static const unsigned long min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	unsigned long cp;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = s[0] & 0x07;
	} else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min[len] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

/* 1 if s is valid UTF-8 without C0, DEL or C1 control characters. */
static int
clean(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, k;

	while (i < n) {
		if ((k = ref_utf8_len(s + i, n - i)) == 0)
			return 0;
		if (k == 1 && (s[i] < 0x20 || s[i] == 0x7f))
			return 0;
		if (k == 2 && s[i] == 0xc2 && s[i + 1] < 0xa0)
			return 0;
		i += k;
	}
	return 1;
}

static int
hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ?
	    c - 'a' + 10 : -1;
}

/* Undoes esc_text: the original bytes, or -1 if s is not its output. */
static long
unescape(const char *s, size_t n, char *out)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		if (s[i] != '\\') {
			out[o++] = s[i];
			continue;
		}
		if (i + 1 < n && s[i + 1] == '\\') {
			out[o++] = '\\';
			i++;
		} else if (i + 3 < n && s[i + 1] == 'x' && hexval(s[i + 2]) >= 0
		    && hexval(s[i + 3]) >= 0) {
			out[o++] = (char)(hexval(s[i + 2]) << 4 |
			    hexval(s[i + 3]));
			i += 3;
		} else
			return -1;
	}
	return (long)o;
}

/* esc_text(in) == want, with room to spare. */
static void
is_esc(const char *in, size_t n, const char *want, const char *what)
{
	char out[T_MAX];
	size_t len = esc_text(out, sizeof(out), in, n);

	is_str(out, want, "%s", what);
	is_int(len, strlen(want), "%s: length", what);
}

/*
 * The checks that hold for any input: clean output that unescapes to the
 * input; unchanged if the input was clean and had no backslash.
 */
static int
round_trip(const char *in, size_t n)
{
	char out[ESC_SIZE(T_MAX)], back[ESC_SIZE(T_MAX)];
	size_t len = esc_text(out, sizeof(out), in, n);
	long m = unescape(out, len, back);

	if (len > n * ESC_MAX_GROWTH || out[len] != '\0' || !clean(out, len) ||
	    m != (long)n || memcmp(back, in, n) != 0)
		return 0;
	if (clean(in, n) && memchr(in, '\\', n) == NULL &&
	    (len != n || memcmp(out, in, n) != 0))
		return 0;
	return 1;
}

static void
test_every_byte(void)
{
	char in[2], want[8], out[16];
	int c, bad = 0;

	for (c = 0; c < 256; c++) {
		in[0] = (char)c;
		if (c < 0x20 || c >= 0x7f)
			snprintf(want, sizeof(want), "\\x%02x", c);
		else if (c == '\\')
			snprintf(want, sizeof(want), "\\\\");
		else
			snprintf(want, sizeof(want), "%c", c);
		esc_text(out, sizeof(out), in, 1);
		if (strcmp(out, want) != 0) {
			printf("# byte 0x%02x: got \"%s\", want \"%s\"\n", c,
			    out, want);
			bad++;
		}
	}
	is_int(bad, 0, "every byte value alone: controls, DEL and all bytes "
	    ">= 0x80 are \\xNN, a backslash is \\\\, the rest as is");
}

/* Every 2-byte input, every 3-byte and 4-byte lead with telling tails. */
static void
test_utf8_sequences(void)
{
	static const unsigned char tails[] = { 0x00, 0x41, 0x7f, 0x80, 0x8f,
	    0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xe0, 0xf0, 0xff };
	const size_t nt = sizeof(tails);
	unsigned char in[4];
	unsigned a, b, x, y;
	long bad = 0, n = 0;

	for (a = 0; a < 256; a++)
		for (b = 0; b < 256; b++) {
			in[0] = (unsigned char)a;
			in[1] = (unsigned char)b;
			n++;
			bad += !round_trip((const char *)in, 2);
			for (x = 0; x < nt; x++) {
				in[2] = tails[x];
				n++;
				bad += !round_trip((const char *)in, 3);
				if (a < 0xf0)
					continue;
				for (y = 0; y < nt; y++) {
					in[3] = tails[y];
					n++;
					bad += !round_trip((const char *)in, 4);
				}
			}
		}
	ok(bad == 0, "%ld inputs of 2-4 bytes: output is clean UTF-8, "
	    "unescapes to the input, and clean input passes unchanged "
	    "(%ld wrong)", n, bad);
}

/* Input, its length, the expected output, what it shows. */
struct esc_case {
	const char	*in;
	size_t		 n;
	const char	*want;
	const char	*what;
};

static const struct esc_case esc_cases[] = {
	{ "/events/1?x=y", 13, "/events/1?x=y",
	    "plain ASCII unchanged" },
	{ "GET /a\nGET /forged", 18, "GET /a\\x0aGET /forged",
	    "a newline cannot start a line" },
	{ "a\r\x1b[31mb\x7f", 9, "a\\x0d\\x1b[31mb\\x7f",
	    "CR, ESC and DEL escaped" },
	{ "a\0b", 3, "a\\x00b",
	    "a NUL is a byte like the others" },
	{ "\\x0a", 4, "\\\\x0a",
	    "a backslash is doubled: a client cannot fake an escape" },
	{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14,
	    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	    "2-, 3- and 4-byte characters unchanged" },
	{ "\xef\xbf\xbf\xf4\x8f\xbf\xbf", 7, "\xef\xbf\xbf\xf4\x8f\xbf\xbf",
	    "U+FFFF and U+10FFFF unchanged" },
	{ "\xc2\xa0\xe2\x80\xa8", 5, "\xc2\xa0\xe2\x80\xa8",
	    "U+00A0 and U+2028 unchanged (not control characters)" },
	{ "\xc2\x85\xc2\x9b", 4, "\\xc2\\x85\\xc2\\x9b",
	    "C1 controls NEL and CSI escaped" },
	{ "\xff", 1, "\\xff",
	    "lone 0xff" },
	{ "a\xc3", 2, "a\\xc3",
	    "lone lead 0xc3 at the end" },
	{ "\xc3(", 2, "\\xc3(",
	    "lead 0xc3 before ASCII" },
	{ "\xe2\x82", 2, "\\xe2\\x82",
	    "3-byte sequence cut short" },
	{ "\xf0\x9f\x98", 3, "\\xf0\\x9f\\x98",
	    "4-byte sequence cut short" },
	{ "\x80\xbf", 2, "\\x80\\xbf",
	    "continuation bytes alone" },
	{ "\xc0\xaf", 2, "\\xc0\\xaf",
	    "overlong '/' (2 bytes)" },
	{ "\xc1\xbf", 2, "\\xc1\\xbf",
	    "overlong U+007F (2 bytes)" },
	{ "\xe0\x80\xaf", 3, "\\xe0\\x80\\xaf",
	    "overlong '/' (3 bytes)" },
	{ "\xe0\x9f\xbf", 3, "\\xe0\\x9f\\xbf",
	    "overlong U+07FF" },
	{ "\xf0\x80\x80\xaf", 4, "\\xf0\\x80\\x80\\xaf",
	    "overlong '/' (4 bytes)" },
	{ "\xf0\x8f\xbf\xbf", 4, "\\xf0\\x8f\\xbf\\xbf",
	    "overlong U+FFFF" },
	{ "\xed\xa0\x80", 3, "\\xed\\xa0\\x80",
	    "high surrogate U+D800" },
	{ "\xed\xbf\xbf", 3, "\\xed\\xbf\\xbf",
	    "low surrogate U+DFFF" },
	{ "\xed\x9f\xbf", 3, "\xed\x9f\xbf",
	    "U+D7FF unchanged" },
	{ "\xf4\x90\x80\x80", 4, "\\xf4\\x90\\x80\\x80",
	    "U+110000" },
	{ "\xf5\x80\x80\x80", 4, "\\xf5\\x80\\x80\\x80",
	    "lead 0xf5" },
	{ "\xf8\x88\x80\x80\x80", 5, "\\xf8\\x88\\x80\\x80\\x80",
	    "5-byte form" },
	{ "\xe2\x28\xa1", 3, "\\xe2(\\xa1",
	    "bad second byte: the rest is read again" },
	{ "", 0, "",
	    "empty" },
};

static void
test_client_strings(void)
{
	size_t i;

	for (i = 0; i < sizeof(esc_cases) / sizeof(esc_cases[0]); i++)
		is_esc(esc_cases[i].in, esc_cases[i].n, esc_cases[i].want,
		    esc_cases[i].what);
}

/*
 * Every output size for a string with plain, escaped and multi-byte
 * parts: the output is the escaping of a prefix of the input (never part
 * of an escape or of a character), NUL-terminated, within cap, and
 * nothing past cap is written.
 */
static void
test_every_output_size(void)
{
	static const char in[] = "a\\b\nc\xc3\xa9\xff\xe2\x82\xac\xc2\x9b"
	    "\xf0\x9f\x98\x80z";
	const size_t n = sizeof(in) - 1;
	char full[T_MAX], out[T_MAX + 8], again[T_MAX];
	size_t flen = esc_text(full, sizeof(full), in, n), cap, len, i, k;
	long m;
	int bad = 0;

	for (cap = 0; cap <= flen + 1; cap++) {
		memset(out, 'Z', sizeof(out));
		len = esc_text(out, cap, in, n);
		for (i = cap; i < sizeof(out); i++)
			if (out[i] != 'Z')
				break;
		m = unescape(out, len, again);
		if ((cap == 0 && len != 0) || (cap > 0 && (len >= cap ||
		    out[len] != '\0')) || i != sizeof(out) || m < 0 ||
		    memcmp(again, in, (size_t)m) != 0 ||
		    memcmp(out, full, len) != 0 || !clean(out, len) ||
		    (cap > flen && len != flen)) {
			printf("# cap %zu: length %zu\n", cap, len);
			bad++;
		}
		/* The longest prefix that fits: the next unit would not. */
		if (cap > 0 && m >= 0 && (size_t)m < n) {
			k = ref_utf8_len((const unsigned char *)in + m,
			    n - (size_t)m);
			if (esc_text(again, sizeof(again), in, (size_t)m +
			    (k == 0 ? 1 : k)) <= cap - 1)
				bad++;
		}
	}
	is_int(bad, 0, "every output size 0..%zu: a whole-escape prefix, "
	    "NUL-terminated, nothing written past the buffer", flen + 1);
	is_int(esc_text(out, 1, "abc", 3), 0, "cap 1: only the NUL");
	is_int(esc_text(out, 4, "\n", 1), 0, "an escape of 4 bytes needs a "
	    "5-byte buffer");
	is_int(esc_text(out, 5, "\n", 1), 4, "and fits one");
	is_int(esc_text(out, 2, "\xc3\xa9", 2), 0, "a 2-byte character is "
	    "not cut");
	is_int(esc_text(out, 2, "\\", 1), 0, "nor a doubled backslash");
	is_int(esc_text(out, 8, "\xc2\x85", 2), 0, "a C1 control needs room "
	    "for both escapes");
}

static void
test_fixed_size_field(void)
{
	char field[ESC_MAX_FIELD + 64], out[ESC_SIZE(sizeof(field))];

	memset(field, 'u', sizeof(field));
	field[0] = '\n';
	is_int(esc_field(out, sizeof(out), field, 8), 4 + 7, "a field without "
	    "a NUL stops at its size");
	is_int(esc_field(out, sizeof(out), field, sizeof(field)),
	    4 + ESC_MAX_FIELD - 1, "and at ESC_MAX_FIELD bytes at most");
	memcpy(field, "GET\0junk", 8);
	is_int(esc_field(out, sizeof(out), field, 8), 3, "a field stops at its "
	    "NUL");
	is_str(out, "GET", "field text");
}

int
main(void)
{
	test_every_byte();
	test_utf8_sequences();
	test_client_strings();
	test_every_output_size();
	test_fixed_size_field();
	return done_testing();
}
