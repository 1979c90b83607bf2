/*
 * tap.h: a minimal TAP producer for the unit tests (header only).
 * Each test binary calls ok()/is_int()/is_str() and ends with done_testing(),
 * which prints the plan and returns the exit status.
 */
#ifndef CFPM_TAP_H
#define CFPM_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_count;
static int tap_failed;

__attribute__((format(printf, 2, 3)))
static inline int
ok(int cond, const char *fmt, ...)
{
	va_list ap;

	tap_count++;
	if (!cond)
		tap_failed++;
	printf("%s %d - ", cond ? "ok" : "not ok", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return cond;
}

#define is_int(got, want, ...) do {					\
	long long tap_g_ = (long long)(got), tap_w_ = (long long)(want); \
	if (!ok(tap_g_ == tap_w_, __VA_ARGS__))				\
		printf("#   got %lld, want %lld\n", tap_g_, tap_w_);	\
} while (0)

#define is_str(got, want, ...) do {					\
	const char *tap_g_ = (got), *tap_w_ = (want);			\
	int tap_eq_ = tap_g_ != NULL && tap_w_ != NULL &&		\
	    strcmp(tap_g_, tap_w_) == 0;				\
	if (!ok(tap_eq_, __VA_ARGS__))					\
		printf("#   got \"%s\", want \"%s\"\n",			\
		    tap_g_ ? tap_g_ : "(null)", tap_w_ ? tap_w_ : "(null)"); \
} while (0)

static inline void
diag(const char *msg)
{
	printf("# %s\n", msg);
}

static inline int
done_testing(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed == 0 && tap_count > 0 ? 0 : 1;
}

#endif
