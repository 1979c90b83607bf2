/*
 * hello.h: the empty application (app.h): every request is answered 200
 * with a fixed body and nothing else happens. It measures the server
 * alone — master, workers, accept, FastCGI and nginx in front — as the
 * floor under any real application's cost (app = hello).
 */
#ifndef CFPM_HELLO_H
#define CFPM_HELLO_H

#include "server/app.h"

#define HELLO_BODY	"{\"ok\":true}"	/* the libfcgi reference's reply */

extern const struct app hello_app;

#endif
