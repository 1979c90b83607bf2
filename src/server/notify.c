/*
 * notify.c: send sd_notify datagrams to systemd (master only).
 */
#include "server/notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/log.h"

static struct sockaddr_un notify_addr;
static socklen_t notify_len;
static int64_t notify_watchdog;

void
notify_init(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	const char *wd = getenv("WATCHDOG_USEC"), *wpid = getenv("WATCHDOG_PID");
	size_t n;

	if (path != NULL && (path[0] == '/' || path[0] == '@') &&
	    (n = strlen(path)) < sizeof(notify_addr.sun_path)) {
		memset(&notify_addr, 0, sizeof(notify_addr));
		notify_addr.sun_family = AF_UNIX;
		memcpy(notify_addr.sun_path, path, n);
		if (notify_addr.sun_path[0] == '@')
			notify_addr.sun_path[0] = '\0';	/* abstract */
		notify_len = (socklen_t)(offsetof(struct sockaddr_un,
		    sun_path) + n);
	}
	if (wd != NULL && (wpid == NULL || atol(wpid) == (long)getpid()))
		notify_watchdog = atoll(wd);
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
}

void
notify_send(const char *msg)
{
	int fd;

	if (notify_len == 0)
		return;
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return;
	if (sendto(fd, msg, strlen(msg), MSG_NOSIGNAL,
	    (struct sockaddr *)&notify_addr, notify_len) == -1)
		log_warn("%s: sendto() failed: %s", __func__, strerror(errno));
	close(fd);
}

int64_t
notify_watchdog_us(void)
{
	return notify_watchdog > 0 ? notify_watchdog : 0;
}
