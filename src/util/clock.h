/*
 * clock.h: monotonic time in microseconds (any process).
 */
#ifndef CFPM_CLOCK_H
#define CFPM_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Microseconds on CLOCK_MONOTONIC: for delays, never for token time. */
static inline int64_t
clock_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#endif
