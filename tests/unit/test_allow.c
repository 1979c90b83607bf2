/*
 * test_allow.c: listen.allowed_clients (allow.c): PHP-FPM's comma lists
 * of IPv4 and IPv6 addresses, CIDR prefixes, IPv4 peers of IPv6 sockets,
 * unix peers, and every kind of bad entry refused with a reason.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "util/allow.h"
#include "tap.h"

/* A peer address from text: IPv4 as sockaddr_in unless v6 maps it. */
static socklen_t
peer(const char *text, struct sockaddr_storage *ss, int v6)
{
	struct sockaddr_in *in4 = (void *)ss;
	struct sockaddr_in6 *in6 = (void *)ss;
	struct in_addr a;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET6, text, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		return sizeof(*in6);
	}
	if (inet_pton(AF_INET, text, &a) != 1)
		return 0;
	if (!v6) {
		in4->sin_family = AF_INET;
		in4->sin_addr = a;
		return sizeof(*in4);
	}
	in6->sin6_family = AF_INET6;
	in6->sin6_addr.s6_addr[10] = 0xff;
	in6->sin6_addr.s6_addr[11] = 0xff;
	memcpy(&in6->sin6_addr.s6_addr[12], &a, 4);
	return sizeof(*in6);
}

static int
allowed(const char *list, const char *who, int v6)
{
	struct allow_list l;
	struct sockaddr_storage ss;
	socklen_t len = peer(who, &ss, v6);
	char why[256];

	if (len == 0 || allow_parse(list, &l, why, sizeof(why)) == -1)
		return -1;
	return allow_match(&l, (struct sockaddr *)&ss, len);
}

static void
test_matches(void)
{
	static const struct {
		const char *list, *peer;
		int v6, want;
	} t[] = {
		{ "", "203.0.113.9", 0, 1 },
		{ "127.0.0.1", "127.0.0.1", 0, 1 },
		{ "127.0.0.1", "127.0.0.2", 0, 0 },
		{ "127.0.0.1", "127.0.0.1", 1, 1 },	/* mapped peer */
		{ "10.0.0.1, 198.18.0.10", "198.18.0.10", 0, 1 },
		{ " 10.0.0.1 ,198.18.0.10 ", "10.0.0.1", 0, 1 },
		{ "10.0.0.1,198.18.0.10", "198.18.0.11", 0, 0 },
		{ "198.18.0.0/24", "198.18.0.255", 0, 1 },
		{ "198.18.0.0/24", "198.18.1.0", 0, 0 },
		{ "198.18.0.0/24", "198.18.0.7", 1, 1 },
		{ "0.0.0.0/0", "192.0.2.1", 0, 1 },
		{ "0.0.0.0/0", "::1", 0, 0 },		/* IPv4 only */
		{ "10.1.2.128/25", "10.1.2.200", 0, 1 },
		{ "10.1.2.128/25", "10.1.2.127", 0, 0 },
		{ "::1", "::1", 0, 1 },
		{ "::1", "127.0.0.1", 1, 0 },
		{ "2001:db8::/32", "2001:db8:ffff::1", 0, 1 },
		{ "2001:db8::/32", "2001:db9::1", 0, 0 },
		{ "::/0", "127.0.0.1", 0, 1 },	/* every address, mapped too */
		{ "::ffff:127.0.0.1", "127.0.0.1", 0, 1 },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		is_int(allowed(t[i].list, t[i].peer, t[i].v6), t[i].want,
		    "\"%s\" %s %s%s", t[i].list, t[i].want ? "allows" :
		    "refuses", t[i].peer, t[i].v6 ? " (mapped)" : "");
}

static void
test_bad_entries(void)
{
	static const char *const bad[] = {
		"localhost", "127.0.0.1,", ",127.0.0.1", "127.0.0.1,,::1",
		"127.0.0.256", "127.1", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/x",
		"10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.1/24", "::1/129",
		"2001:db8::1/32", "198.18.0.0 /24", "1.2.3.4 5.6.7.8",
		"0000:0000:0000:0000:0000:0000:0000:0000:1",
	};
	struct allow_list l;
	char why[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		ok(allow_parse(bad[i], &l, why, sizeof(why)) == -1 &&
		    why[0] != '\0', "\"%s\" refused: %s", bad[i], why);
	}
}

static void
test_entry_limit(void)
{
	char text[ALLOW_MAX * 16 + 32], why[256];
	struct allow_list l;
	size_t n = 0;
	int i;

	for (i = 0; i < ALLOW_MAX; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s10.0.%d.1",
		    i ? "," : "", i);
	is_int(allow_parse(text, &l, why, sizeof(why)), 0,
	    "%d entries are taken", ALLOW_MAX);
	is_int(l.n, ALLOW_MAX, "all of them kept");
	snprintf(text + n, sizeof(text) - n, ",10.9.9.9");
	is_int(allow_parse(text, &l, why, sizeof(why)), -1,
	    "one more is refused (%s)", why);
	is_int(allow_parse("", &l, why, sizeof(why)), 0, "empty: parses");
	is_int(l.n, 0, "empty: any client");
}

static void
test_unix_and_text(void)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct sockaddr_storage ss;
	struct allow_list l;
	char why[256], buf[ALLOW_TEXT_MAX];
	socklen_t len;

	allow_parse("127.0.0.1", &l, why, sizeof(why));
	is_int(allow_match(&l, (struct sockaddr *)&un, sizeof(un)), 1,
	    "a unix peer is not subject to the list");
	len = peer("198.18.0.10", &ss, 1);
	allow_text((struct sockaddr *)&ss, len, buf, sizeof(buf));
	is_str(buf, "198.18.0.10", "a mapped peer is logged as IPv4");
	len = peer("2001:db8::5", &ss, 0);
	allow_text((struct sockaddr *)&ss, len, buf, sizeof(buf));
	is_str(buf, "2001:db8::5", "an IPv6 peer as IPv6");
}

int
main(void)
{
	test_matches();
	test_bad_entries();
	test_entry_limit();
	test_unix_and_text();
	return done_testing();
}
