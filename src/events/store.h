/*
 * store.h: the events table (worker): the two statements the events
 * application prepares on each worker's connection, and the row they
 * read and write. SQL and the row's shape live here; the connection,
 * its commit discipline and libpq live in server/db.c.
 */
#ifndef CFPM_STORE_H
#define CFPM_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "server/db.h"

/* The statements to prepare (db_open), STORE_NSTATEMENTS of them. */
#define STORE_NSTATEMENTS	2
extern const struct db_statement store_statements[STORE_NSTATEMENTS];

/* One row of events; pointers valid until store_event_release(). */
struct store_event {
	int64_t			 id;
	const char		*subject;
	size_t			 subject_len;
	const char		*kind;
	size_t			 kind_len;
	const char		*payload;	/* JSON text */
	size_t			 payload_len;
	int64_t			 created_us;	/* since the Unix epoch */
	struct db_result	*res;		/* owning result */
};

/*
 * SELECT the row with this id and subject, with during(arg) run while
 * it is under way (db_exec_during; NULL: none). DB_OK fills ev (release
 * it); DB_NOT_FOUND; DB_UNAVAILABLE when there is no connection or the
 * exchange did not complete cleanly (never a row from a partial one), or
 * when during said the row is not wanted; DB_CANCELED, DB_INVALID or
 * DB_ERROR when the server refused it (or the row did not have the
 * expected shape). ev is empty (releasing it is harmless) unless DB_OK.
 */
enum db_status store_read_event(struct db *db, int64_t id,
    const char *subject, struct store_event *ev, db_during_fn *during,
    void *arg);

/* Frees the result behind ev. */
void store_event_release(struct store_event *ev);

/*
 * INSERT one event (payload is JSON text) in autocommit; DB_OK means the
 * row is committed and *id is set. Any other status: see db_exec (on
 * DB_UNAVAILABLE the outcome is unknown and the caller must not retry).
 */
enum db_status store_insert_event(struct db *db, const char *subject,
    const char *kind, const char *payload, int64_t *id);

#endif
