/*
 * hello.c: the empty application (worker): no keys, no database, one
 * fixed reply. It still reports its phase, as any application must, so
 * the server's per-request bookkeeping is measured with it.
 */
#include "hello/hello.h"

#include <stddef.h>

static int
hello_handle(void *state, struct http_request *r)
{
	(void)state;
	http_phase(r, HTTP_PHASE_WRITING);
	return http_reply(r, 200, "application/json", NULL, HELLO_BODY,
	    sizeof(HELLO_BODY) - 1);
}

/* No keys, no database, no state: only the handler. */
const struct app hello_app = {
	.name = "hello",
	.handle = hello_handle,
};
