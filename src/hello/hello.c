/*
 * hello.c: the empty application (worker): no keys, no database, one
 * fixed reply. It still reports its phase, as any application must, so
 * the server's per-request bookkeeping is measured with it.
 */
#include "hello/hello.h"

#include <stddef.h>

static int
hello_load(const struct config *cfg, const char *name, void **shared,
    char *err, size_t errlen)
{
	(void)cfg;
	(void)name;
	(void)err;
	(void)errlen;
	*shared = NULL;
	return 0;
}

static void
hello_unload(void *shared)
{
	(void)shared;
}

static int
hello_init(const struct app_env *env, void **state)
{
	(void)env;
	*state = NULL;
	return 0;
}

static int
hello_handle(void *state, struct http_request *r)
{
	(void)state;
	http_phase(r, HTTP_PHASE_WRITING);
	return http_reply(r, 200, "application/json", NULL, HELLO_BODY,
	    sizeof(HELLO_BODY) - 1);
}

static void
hello_fini(void *state)
{
	(void)state;
}

const struct app hello_app = {
	.name = "hello",
	.uses_db = 0,
	.load = hello_load,
	.unload = hello_unload,
	.init = hello_init,
	.handle = hello_handle,
	.fini = hello_fini,
};
