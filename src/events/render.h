/*
 * render.h: the events API's JSON replies (PURE, worker): timestamps, a
 * stored event and the token's claims written into a bounded buffer
 * (buf.h, whose buf_json_string() writes their strings). Nothing here
 * allocates; an overflow is reported by the buffer.
 */
#ifndef CFPM_RENDER_H
#define CFPM_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "events/store.h"
#include "util/buf.h"

/* Appends "YYYY-MM-DDTHH:MM:SS.ffffffZ" for us since the Unix epoch
 * (UTC); sets overflow if the time cannot be represented. */
void render_timestamp(struct buf *b, int64_t us);

/* Appends {"id":..,"subject":..,"kind":..,"payload":..,"created_at":..}:
 * the payload (jsonb output) verbatim, the rest escaped. */
void render_event(struct buf *b, const struct store_event *ev);

/* Appends {"sub":..,"scope":..}. */
void render_claims(struct buf *b, const char *sub, const char *scope);

#endif
