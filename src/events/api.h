/*
 * api.h: the route table and the handlers of the events API (worker).
 * /auth and /events handlers authenticate first, then look at the id or
 * the body; /health needs no token. Auth and database outcomes are
 * mapped to HTTP in one place each. Phases are reported through
 * http_phase(), never written to the scoreboard.
 */
#ifndef CFPM_API_H
#define CFPM_API_H

#include <stddef.h>

#include "events/auth.h"
#include "events/settings.h"
#include "server/db.h"
#include "server/http.h"

#define API_MAX_REPLY	(1024 * 1024)	/* largest reply body (at most
						   HTTP_MAX_REPLY) */

/* What a worker hands each request: all owned by the worker. */
struct api_ctx {
	const struct settings	*settings;
	const struct auth	*auth;
	struct db		*db;
	char			*out;		/* API_MAX_REPLY bytes: a reply
						   body is rendered here */
};

/*
 * A worker's context over the settings, the keys and its database
 * connection (all borrowed), with its buffer for rendering replies (the
 * request and its body are the server's: http.h). NULL when out of
 * memory.
 */
struct api_ctx *api_new(const struct settings *settings,
    const struct auth *auth, struct db *db);

/* Frees ctx and its buffers (NULL is fine). */
void api_free(struct api_ctx *ctx);

/*
 * Routes one request through the route table and gives its one reply
 * (http_reply; the server sends it after this returns). Returns 0, or -1
 * if the reply could not be framed (http_reply failed: the server
 * answers 500 itself).
 */
int api_handle(struct api_ctx *ctx, struct http_request *r);

/* PURE. Parses a decimal event id (leading zeros allowed): 1..2^63-1. */
int api_parse_id(const char *s, size_t len, int64_t *id);

/* PURE. 1 if a Content-Type value is application/json (params allowed). */
int api_is_json_type(const char *ct);

#endif
