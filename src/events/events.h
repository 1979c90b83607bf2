/*
 * events.h: the events API as an application of the server (app.h):
 * RS256 bearer tokens checked on every request (auth.c, jwt.c, against
 * jwk.c's key set), one row of PostgreSQL read or written (store.c), JSON
 * in and out (jsonbody.c, render.c), routed by api.c; its configuration
 * keys are settings.c's.
 */
#ifndef CFPM_EVENTS_H
#define CFPM_EVENTS_H

#include "server/app.h"

extern const struct app events_app;

#endif
