/*
 * notify.h: the sd_notify(3) protocol without libsystemd (master).
 * Messages go as one datagram to $NOTIFY_SOCKET (a path, or "@name" in
 * the abstract namespace); without it every call does nothing.
 */
#ifndef CFPM_NOTIFY_H
#define CFPM_NOTIFY_H

#include <stdint.h>

/*
 * Reads NOTIFY_SOCKET and WATCHDOG_USEC/WATCHDOG_PID once and unsets them
 * so workers don't inherit them. Call before forking.
 */
void notify_init(void);

/* Sends msg ("READY=1", "STATUS=...", several lines allowed). */
void notify_send(const char *msg);

/* The watchdog interval in microseconds, 0 if systemd asked for none. */
int64_t notify_watchdog_us(void);

#endif
