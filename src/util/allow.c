/*
 * allow.c: listen.allowed_clients (see allow.h). Every address is kept
 * as 16 bytes, IPv4 mapped into IPv6 (::ffff:0:0/96), so one comparison
 * serves both families.
 */
#include "util/allow.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALLOW_V4_BITS	96	/* prefix of the IPv4-mapped block */
#define ALLOW_ENTRY_MAX	(INET6_ADDRSTRLEN + 4)	/* address "/" 128 */

static const unsigned char allow_v4_mapped[12] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

/* 1 if the first bits of a and b agree. */
static int
allow_prefix_equal(const unsigned char *a, const unsigned char *b,
    unsigned bits)
{
	unsigned full = bits / 8, rest = bits % 8;
	unsigned char mask;

	if (memcmp(a, b, full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	mask = (unsigned char)(0xff << (8 - rest));
	return (a[full] & mask) == (b[full] & mask);
}

/* 1 if every bit of a past the first bits is 0. */
static int
allow_host_bits_zero(const unsigned char *a, unsigned bits)
{
	unsigned i = bits / 8;

	if (bits % 8 != 0 && (a[i++] & (0xff >> (bits % 8))) != 0)
		return 0;
	for (; i < ALLOW_ADDR_LEN; i++)
		if (a[i] != 0)
			return 0;
	return 1;
}

/* An address as text into 16 bytes; *bits 32 or 128. -1 if neither. */
static int
allow_addr(const char *s, unsigned char *out, unsigned *bits)
{
	struct in_addr v4;

	if (inet_pton(AF_INET6, s, out) == 1) {
		*bits = 128;
		return 0;
	}
	if (inet_pton(AF_INET, s, &v4) != 1)
		return -1;
	memcpy(out, allow_v4_mapped, sizeof(allow_v4_mapped));
	memcpy(out + sizeof(allow_v4_mapped), &v4, sizeof(v4));
	*bits = 32;
	return 0;
}

/* One entry: "address" or "address/prefix". */
static int
allow_entry(char *s, struct allow_entry *e, char *why, size_t whylen)
{
	char *slash = strchr(s, '/'), *end;
	unsigned bits;
	unsigned long p;

	if (slash != NULL)
		*slash = '\0';
	if (allow_addr(s, e->addr, &bits) == -1) {
		snprintf(why, whylen, "\"%s\" is not an IPv4 or IPv6 address",
		    s);
		return -1;
	}
	e->prefix = 128;
	if (slash == NULL)
		return 0;
	errno = 0;
	p = strtoul(slash + 1, &end, 10);
	if (!isdigit((unsigned char)slash[1]) || *end != '\0' ||
	    errno == ERANGE || p > bits) {
		snprintf(why, whylen, "\"%s\" is not a prefix length for %s "
		    "(0..%u)", slash + 1, s, bits);
		return -1;
	}
	e->prefix = (unsigned)p + (bits == 32 ? ALLOW_V4_BITS : 0);
	if (!allow_host_bits_zero(e->addr, e->prefix)) {
		snprintf(why, whylen, "%s/%lu has host bits set", s, p);
		return -1;
	}
	return 0;
}

/* Copies the entry at s (up to a comma) without surrounding blanks. */
static const char *
allow_next(const char *s, char *dst, size_t cap, size_t *len)
{
	const char *end = strchr(s, ',');
	size_t n;

	if (end == NULL)
		end = s + strlen(s);
	while (s < end && isspace((unsigned char)*s))
		s++;
	n = (size_t)(end - s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	*len = n;
	if (n < cap) {
		memcpy(dst, s, n);
		dst[n] = '\0';
	}
	return *end == ',' ? end + 1 : NULL;
}

int
allow_parse(const char *text, struct allow_list *l, char *why,
    size_t whylen)
{
	char entry[ALLOW_ENTRY_MAX];
	const char *s = text;
	size_t len;

	l->n = 0;
	while (s != NULL) {
		s = allow_next(s, entry, sizeof(entry), &len);
		if (len == 0 && s == NULL && l->n == 0)
			return 0;	/* empty: any client */
		if (len == 0 || len >= sizeof(entry)) {
			snprintf(why, whylen, len == 0 ? "an empty entry" :
			    "an entry longer than any address");
			return -1;
		}
		if (l->n == ALLOW_MAX) {
			snprintf(why, whylen, "more than %d entries",
			    ALLOW_MAX);
			return -1;
		}
		if (allow_entry(entry, &l->e[l->n], why, whylen) == -1)
			return -1;
		l->n++;
	}
	return 0;
}

/* The peer's 16-byte address; -1 if it is not an IP peer. */
static int
allow_peer(const struct sockaddr *sa, socklen_t len, unsigned char *out)
{
	const struct sockaddr_in *in4 = (const void *)sa;
	const struct sockaddr_in6 *in6 = (const void *)sa;

	if (sa->sa_family == AF_INET6 && len >= sizeof(*in6)) {
		memcpy(out, &in6->sin6_addr, ALLOW_ADDR_LEN);
		return 0;
	}
	if (sa->sa_family == AF_INET && len >= sizeof(*in4)) {
		memcpy(out, allow_v4_mapped, sizeof(allow_v4_mapped));
		memcpy(out + sizeof(allow_v4_mapped), &in4->sin_addr, 4);
		return 0;
	}
	return -1;
}

int
allow_match(const struct allow_list *l, const struct sockaddr *sa,
    socklen_t len)
{
	unsigned char peer[ALLOW_ADDR_LEN];
	size_t i;

	if (l->n == 0 || allow_peer(sa, len, peer) == -1)
		return 1;
	for (i = 0; i < l->n; i++)
		if (allow_prefix_equal(peer, l->e[i].addr, l->e[i].prefix))
			return 1;
	return 0;
}

void
allow_text(const struct sockaddr *sa, socklen_t len, char *buf,
    size_t buflen)
{
	unsigned char peer[ALLOW_ADDR_LEN];
	int mapped;

	if (allow_peer(sa, len, peer) == -1) {
		snprintf(buf, buflen, "(not an IP peer)");
		return;
	}
	mapped = memcmp(peer, allow_v4_mapped, sizeof(allow_v4_mapped)) == 0;
	if (inet_ntop(mapped ? AF_INET : AF_INET6, mapped ? peer +
	    sizeof(allow_v4_mapped) : peer, buf, (socklen_t)buflen) == NULL)
		snprintf(buf, buflen, "?");
}
