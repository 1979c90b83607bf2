/*
 * api.h: the route table and the handlers of the events API (worker).
 * Every handler authenticates first, then looks at the id or the body,
 * and maps auth, validation and database outcomes to HTTP in one place.
 */
#ifndef CFPM_API_H
#define CFPM_API_H

#include <stddef.h>

#include "auth.h"
#include "config.h"
#include "db.h"
#include "http.h"
#include "scoreboard.h"

#define API_MAX_REPLY	(1024 * 1024)	/* largest reply body */
#define API_MAX_DEPTH	64		/* JSON nesting in a request body */

/* What a worker hands each request: all owned by the worker. */
struct api_ctx {
	const struct config	*cfg;
	const struct auth	*auth;
	struct db		*db;
	struct sb_slot		*slot;		/* this worker's scoreboard slot */
	char			*body;		/* HTTP_MAX_BODY + 1 bytes */
	char			*out;		/* API_MAX_REPLY bytes */
};

/*
 * Allocates the request and reply buffers. Returns 0 or -1 (ENOMEM).
 */
int api_init(struct api_ctx *ctx);

/* Frees the buffers. */
void api_free(struct api_ctx *ctx);

/*
 * Routes and answers one request; always sends a reply (500 if nothing
 * better applies). Returns 0, or -1 if the reply could not be written
 * (client gone).
 */
int api_handle(struct api_ctx *ctx, struct http_request *r);

/*
 * PURE. 1 if the len bytes of JSON text nest arrays and objects no deeper
 * than max (strings are skipped; the text need not be valid JSON).
 */
int api_json_depth_ok(const char *text, size_t len, int max);

/*
 * PURE. Validates a POST body of len bytes (not necessarily NUL-
 * terminated): depth <= API_MAX_DEPTH, valid UTF-8 JSON without NUL or
 * duplicate members, an object with a non-empty string "kind" and an
 * object "payload". Returns 0 with *kind (borrowed from *root) and
 * *payload (a malloc'd copy of the client's own bytes of the payload
 * member) set, or -1. The caller frees *payload and json_decref()s *root
 * in both cases.
 */
struct json_t;
int api_parse_event(const char *body, size_t len, struct json_t **root,
    const char **kind, char **payload);

/* PURE. Parses a decimal event id (leading zeros allowed): 1..2^63-1. */
int api_parse_id(const char *s, size_t len, int64_t *id);

/* PURE. 1 if a Content-Type value is application/json (params allowed). */
int api_is_json_type(const char *ct);

#endif
