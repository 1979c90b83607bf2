/*
 * allow.h: listen.allowed_clients, PHP-FPM's list of the FastCGI clients
 * (web servers) allowed to connect to a TCP socket (PURE; parsed with the
 * configuration, matched by the workers and the status socket at
 * accept).
 *
 * The text is comma-separated IPv4 and IPv6 addresses, as PHP-FPM takes
 * them; each may also carry a /prefix (a CIDR block, as nginx's allow).
 * An empty list allows every client. IPv4 clients of an IPv6 socket
 * (::ffff:a.b.c.d) match their IPv4 entries. A peer that is not an IP
 * address (a unix socket's: its file mode guards it) always matches.
 */
#ifndef CFPM_ALLOW_H
#define CFPM_ALLOW_H

#include <stddef.h>
#include <sys/socket.h>

#define ALLOW_MAX		64	/* entries in one list */
#define ALLOW_ADDR_LEN		16	/* bytes: IPv6, IPv4 mapped into it */
#define ALLOW_TEXT_MAX		64	/* an address as text, for logs */

struct allow_entry {
	unsigned char	addr[ALLOW_ADDR_LEN];	/* host bits cleared */
	unsigned	prefix;			/* of the 128 bits */
};

struct allow_list {
	size_t			n;		/* 0: any client */
	struct allow_entry	e[ALLOW_MAX];
};

/*
 * PURE. Parses text into *l (emptied first; blanks around entries are
 * ignored). Returns 0, or -1 with why (an entry that is not an address,
 * a prefix out of range, host bits set under the prefix, too many).
 */
int allow_parse(const char *text, struct allow_list *l, char *why,
    size_t whylen);

/* PURE. 1 if the peer sa (len bytes) may connect, 0 if not. */
int allow_match(const struct allow_list *l, const struct sockaddr *sa,
    socklen_t len);

/* PURE. The peer's address as text (numeric) into buf. */
void allow_text(const struct sockaddr *sa, socklen_t len, char *buf,
    size_t buflen);

#endif
