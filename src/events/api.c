/*
 * api.c: routes and handlers for /auth, /events, /events/{id} and /health
 * (worker). Replies are rendered (render.c) into the worker's buffer.
 */
#include "events/api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>

#include "events/jsonbody.h"
#include "events/render.h"
#include "events/store.h"
#include "util/buf.h"
#include "util/esc.h"
#include "util/log.h"

#define API_JSON		"application/json"
#define API_SCOPE_READ		"events:read"
#define API_SCOPE_WRITE		"events:write"
#define API_MAX_ID_DIGITS	19	/* 9223372036854775807 */
#define API_MAX_LOGGED_ERROR	256	/* bytes of a database error logged */
/* /health's own bound on its round trip to the database, well inside a
 * probe's usual 1 s: a server that cannot answer an empty query in that
 * time is not one to send requests to. */
#define API_HEALTH_TIMEOUT_MS	500

struct api_ctx *
api_new(const struct settings *settings, const struct auth *auth,
    struct db *db)
{
	struct api_ctx *ctx = calloc(1, sizeof(*ctx));

	if (ctx == NULL)
		return NULL;
	ctx->settings = settings;
	ctx->auth = auth;
	ctx->db = db;
	if ((ctx->out = malloc(API_MAX_REPLY)) == NULL) {
		api_free(ctx);
		return NULL;
	}
	return ctx;
}

void
api_free(struct api_ctx *ctx)
{
	if (ctx == NULL)
		return;
	free(ctx->out);
	free(ctx);
}

/* A JSON reply of the string body. */
static int
api_reply(struct http_request *r, int status, const char *body)
{
	return http_reply(r, status, API_JSON, NULL, body, strlen(body));
}

static int
api_method_not_allowed(struct http_request *r, const char *allow)
{
	struct http_answer a;

	http_answer_not_allowed(&a, allow);
	return http_reply_answer(r, &a);
}

/* Maps an auth outcome to HTTP: the one place that knows both profiles. */
static int
api_auth_error(struct api_ctx *ctx, struct http_request *r,
    enum auth_result res, const char *scope)
{
	char headers[HTTP_MAX_REPLY_HEADERS];

	if (ctx->settings->errors == SETTINGS_ERRORS_COMPAT)
		return http_reply_error(r, 401, "invalid_token",
		    "WWW-Authenticate: Bearer error=\"invalid_token\"\r\n");
	switch (res) {
	case AUTH_NO_CREDENTIALS:
		return http_reply_error(r, 401, "unauthorized",
		    "WWW-Authenticate: Bearer realm=\"events\"\r\n");
	case AUTH_MALFORMED:
		return http_reply_error(r, 400, "invalid_request",
		    "WWW-Authenticate: Bearer realm=\"events\", "
		    "error=\"invalid_request\"\r\n");
	case AUTH_INSUFFICIENT_SCOPE:
		snprintf(headers, sizeof(headers), "WWW-Authenticate: Bearer "
		    "realm=\"events\", error=\"insufficient_scope\", "
		    "scope=\"%s\"\r\n", scope);
		return http_reply_error(r, 403, "insufficient_scope", headers);
	default:
		return http_reply_error(r, 401, "invalid_token",
		    "WWW-Authenticate: Bearer realm=\"events\", "
		    "error=\"invalid_token\"\r\n");
	}
}

/*
 * Acts on auth's verdict res (why: for an invalid token) for scope.
 * Returns 1 when the request may proceed; otherwise the error reply is
 * given and *rc holds http_reply's result.
 */
static int
api_auth_verdict(struct api_ctx *ctx, struct http_request *r,
    enum auth_result res, enum jwt_err why, const char *scope, int *rc)
{
	if (res == AUTH_OK)
		return 1;
	if (res == AUTH_INVALID_TOKEN)
		log_info("auth: invalid token: %s", jwt_strerror(why));
	*rc = api_auth_error(ctx, r, res, scope);
	return 0;
}

/* Runs auth for scope: api_auth_verdict's return and *rc. */
static int
api_authorize(struct api_ctx *ctx, struct http_request *r, const char *scope,
    struct jwt_claims *claims, int *rc)
{
	enum auth_result res;
	enum jwt_err why;

	http_phase(r, HTTP_PHASE_AUTH);
	res = auth_check(ctx->auth, r->authorization, scope, time(NULL),
	    claims, &why);
	return api_auth_verdict(ctx, r, res, why, scope, rc);
}

/*
 * Maps a database outcome to HTTP. Nothing here is logged per request:
 * db.c logs the connection's losses and returns, the master the pool's
 * (from the reason the worker leaves in its slot), and the other
 * outcomes go through log_flood.
 */
static int
api_db_error(struct api_ctx *ctx, struct http_request *r, enum db_status st)
{
	static struct log_flood canceled, refused, failed;
	const char *e = db_last_error(ctx->db);
	char msg[ESC_SIZE(API_MAX_LOGGED_ERROR)];

	if (st == DB_UNAVAILABLE)
		return http_reply_error(r, 503, "unavailable", NULL);
	/* The server's message may quote the request's values. */
	esc_text(msg, sizeof(msg), e, strnlen(e, API_MAX_LOGGED_ERROR));
	if (st == DB_CANCELED) {
		(void)log_flood(&canceled, CONFIG_LOG_WARNING, "database "
		    "statement cancelled: %s", msg);
		return http_reply_error(r, 503, "unavailable", NULL);
	}
	if (st == DB_INVALID) {
		/* A backstop: the body checks should have refused it. */
		(void)log_flood(&refused, CONFIG_LOG_INFO, "database refused "
		    "the values: %s", msg);
		return http_reply_error(r, 400, "invalid_request", NULL);
	}
	(void)log_flood(&failed, CONFIG_LOG_ERROR, "database error: %s", msg);
	return http_reply_error(r, 500, "server_error", NULL);
}

static int
api_get_auth(struct api_ctx *ctx, struct http_request *r, const char *rest,
    size_t rest_len)
{
	struct buf b;
	struct jwt_claims claims;
	int rc;

	(void)rest;
	(void)rest_len;
	if (!api_authorize(ctx, r, API_SCOPE_READ, &claims, &rc))
		return rc;
	buf_init(&b, ctx->out, API_MAX_REPLY);
	render_claims(&b, claims.sub, claims.scope);
	if (b.overflow)
		return http_reply_error(r, 500, "server_error", NULL);
	return http_reply(r, 200, API_JSON, NULL, b.p, b.len);
}

int
api_parse_id(const char *s, size_t len, int64_t *id)
{
	static const char max[] = "9223372036854775807";
	int64_t v = 0;
	size_t i;

	for (i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return -1;
	while (len > 0 && *s == '0') {
		s++;
		len--;
	}
	if (len == 0 || len > API_MAX_ID_DIGITS ||
	    (len == API_MAX_ID_DIGITS && memcmp(s, max, len) > 0))
		return -1;
	for (i = 0; i < len; i++)
		v = v * 10 + (s[i] - '0');
	*id = v;
	return 0;
}

/*
 * GET /events/{id} must return every row POST /events accepted, whole:
 * the payload (jsonbody.c bounds its jsonb output), the kind (from the
 * body; buf_json_string() makes at most 6 bytes of a character the body
 * spelled in 2 or more, "\n" -> "\u000a"), the subject (the token's sub,
 * 6 bytes per byte at most) and the fixed text around them.
 */
#define API_REPLY_FIXED	128	/* {"id":..,"created_at":..} and the rest */
_Static_assert(API_MAX_REPLY <= HTTP_MAX_REPLY, "the server frames a reply");
_Static_assert(JSONBODY_MAX_RENDERED + 3 * HTTP_MAX_BODY + 6 * JWT_MAX_SUB +
    API_REPLY_FIXED <= API_MAX_REPLY, "an accepted event fits a GET reply");

/* A read's token: checked in all but its signature, which is checked
 * while the read is under way (api_read_verify). */
struct api_read_auth {
	struct api_ctx		*ctx;
	struct http_request	*r;
	struct jwt_claims	*claims;
	struct auth_pending	 pending;
	enum auth_result	 res;
	enum jwt_err		 why;
};

/*
 * The signature of a read's token, while its SELECT is under way (the
 * store's during): the verify overlaps the round trip, so the worker
 * finds the rows in when it is done instead of sleeping for them.
 * Nonzero when the token is not good: its read is discarded.
 */
static int
api_read_verify(void *arg)
{
	struct api_read_auth *a = arg;

	a->res = auth_check_end(a->ctx->auth, &a->pending, a->claims, &a->why);
	http_phase(a->r, HTTP_PHASE_DB);
	return a->res != AUTH_OK;
}

/*
 * GET /events/{id}: id_s is the raw rest of the path (%31 is no digit).
 * A token that passes every check but its signature has its SELECT sent
 * before the signature is checked (api_read_verify): the reply is
 * auth's verdict all the same, byte for byte, and an unverified token
 * never gets a row, but a forged signature costs one primary-key SELECT.
 * A token failing a cheaper check (or a bad id) sends nothing.
 */
static int
api_get_event(struct api_ctx *ctx, struct http_request *r, const char *id_s,
    size_t id_len)
{
	struct api_read_auth a;
	struct buf b;
	struct jwt_claims claims;
	struct store_event ev;
	enum db_status st;
	int64_t id;
	int rc;

	a.ctx = ctx;
	a.r = r;
	a.claims = &claims;
	http_phase(r, HTTP_PHASE_AUTH);
	if (!auth_check_begin(ctx->auth, r->authorization, API_SCOPE_READ,
	    time(NULL), &claims, &a.pending) ||
	    api_parse_id(id_s, id_len, &id) == -1) {
		/* Nothing sent: auth's verdict first, then the id's. */
		a.res = auth_check_end(ctx->auth, &a.pending, &claims, &a.why);
		if (!api_auth_verdict(ctx, r, a.res, a.why, API_SCOPE_READ,
		    &rc))
			return rc;
		return http_reply_error(r, 404, "not_found", NULL);
	}
	st = store_read_event(ctx->db, id, claims.sub, &ev, api_read_verify,
	    &a);
	if (!api_auth_verdict(ctx, r, a.res, a.why, API_SCOPE_READ, &rc)) {
		store_event_release(&ev);
		return rc;
	}
	if (st == DB_NOT_FOUND)
		return http_reply_error(r, 404, "not_found", NULL);
	if (st != DB_OK)
		return api_db_error(ctx, r, st);
	buf_init(&b, ctx->out, API_MAX_REPLY);
	render_event(&b, &ev);
	store_event_release(&ev);
	if (b.overflow)
		return http_reply_error(r, 500, "server_error", NULL);
	http_phase(r, HTTP_PHASE_WRITING);
	return http_reply(r, 200, API_JSON, NULL, b.p, b.len);
}

int
api_is_json_type(const char *ct)
{
	static const char want[] = "application/json";
	size_t n;

	if (ct == NULL)
		return 0;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	n = strcspn(ct, "; \t");
	if (n != sizeof(want) - 1 || strncasecmp(ct, want, n) != 0)
		return 0;
	ct += n;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return *ct == '\0' || *ct == ';';
}

static int
api_post_event(struct api_ctx *ctx, struct http_request *r, const char *rest,
    size_t rest_len)
{
	struct jwt_claims claims;
	const char *kind = NULL, *body;
	char *payload = NULL, reply[48];
	json_t *root = NULL;
	enum db_status st;
	size_t len;
	int64_t id;
	int rc;

	(void)rest;
	(void)rest_len;
	if (!api_authorize(ctx, r, API_SCOPE_WRITE, &claims, &rc))
		return rc;
	if (r->content_length > HTTP_MAX_BODY)
		return http_reply_error(r, 413, "payload_too_large", NULL);
	if (!api_is_json_type(r->content_type))
		return http_reply_error(r, 415, "unsupported_media_type", NULL);
	http_phase(r, HTTP_PHASE_READING);
	switch (http_body(r, HTTP_MAX_BODY, &body, &len)) {
	case HTTP_BODY_TOO_LARGE:
		return http_reply_error(r, 413, "payload_too_large", NULL);
	case HTTP_BODY_INCOMPLETE:
		return http_reply_error(r, 400, "invalid_request", NULL);
	case HTTP_BODY_OK:
		break;
	}
	if (jsonbody_parse_event(body, len, &root, &kind, &payload) == -1) {
		rc = http_reply_error(r, 400, "invalid_request", NULL);
		goto done;
	}
	http_phase(r, HTTP_PHASE_DB);
	st = store_insert_event(ctx->db, claims.sub, kind, payload, &id);
	if (st != DB_OK) {
		rc = api_db_error(ctx, r, st);
		goto done;
	}
	http_phase(r, HTTP_PHASE_WRITING);
	snprintf(reply, sizeof(reply), "{\"id\":%lld}", (long long)id);
	rc = api_reply(r, 201, reply);
done:
	free(payload);
	json_decref(root);
	return rc;
}

static int
api_health(struct api_ctx *ctx, struct http_request *r, const char *rest,
    size_t rest_len)
{
	(void)rest;
	(void)rest_len;
	http_phase(r, HTTP_PHASE_DB);
	if (db_ping(ctx->db, API_HEALTH_TIMEOUT_MS) == DB_OK)
		return api_reply(r, 200, "{\"status\":\"ok\"}");
	return api_reply(r, 503, "{\"status\":\"unavailable\"}");
}

/*
 * The route table: a path, exact or a prefix followed by the handler's
 * argument (the rest of the raw path), and the one method it answers;
 * any other method there is 405 with that method in Allow.
 */
struct api_route {
	const char	*path;
	size_t		 len;
	int		 prefix;
	const char	*method;
	int		(*handle)(struct api_ctx *, struct http_request *,
			    const char *rest, size_t rest_len);
};

#define API_EXACT(p, m, h)	{ p, sizeof(p) - 1, 0, m, h }
#define API_PREFIX(p, m, h)	{ p, sizeof(p) - 1, 1, m, h }

static const struct api_route api_routes[] = {
	API_EXACT("/auth", "GET", api_get_auth),
	API_EXACT("/events", "POST", api_post_event),
	API_PREFIX("/events/", "GET", api_get_event),
	API_EXACT("/health", "GET", api_health),
};

#define API_NROUTES	(sizeof(api_routes) / sizeof(api_routes[0]))

static int
api_route_matches(const struct api_route *rt, const struct http_request *r)
{
	if (rt->prefix ? r->path_len < rt->len : r->path_len != rt->len)
		return 0;
	return memcmp(r->path, rt->path, rt->len) == 0;
}

int
api_handle(struct api_ctx *ctx, struct http_request *r)
{
	const struct api_route *rt;

	for (rt = api_routes; rt < api_routes + API_NROUTES; rt++) {
		if (!api_route_matches(rt, r))
			continue;
		if (strcmp(r->method, rt->method) != 0)
			return api_method_not_allowed(r, rt->method);
		return rt->handle(ctx, r, r->path + rt->len,
		    r->path_len - rt->len);
	}
	return http_reply_error(r, 404, "not_found", NULL);
}
