/*
 * store.c: the events table's statements and row decoding (worker).
 * Parameters go in binary where that saves the server a parse (the id);
 * rows come back binary and are checked field by field before any of
 * them is trusted.
 */
#include "events/store.h"

#include <endian.h>
#include <string.h>

/* PostgreSQL type OIDs of the parameters (pg_type.dat). */
#define STORE_INT8OID	20
#define STORE_TEXTOID	25
#define STORE_JSONBOID	3802

enum { STORE_READ = 0, STORE_INSERT };

/* The columns of a read, in SELECT order. */
enum { STORE_COL_ID = 0, STORE_COL_SUBJECT, STORE_COL_KIND,
    STORE_COL_PAYLOAD, STORE_COL_CREATED, STORE_NCOLS };

static const unsigned int store_read_types[] = { STORE_INT8OID,
    STORE_TEXTOID };
static const unsigned int store_insert_types[] = { STORE_TEXTOID,
    STORE_TEXTOID, STORE_JSONBOID };

const struct db_statement store_statements[STORE_NSTATEMENTS] = {
	[STORE_READ] = { "read_event", "read",
	    "SELECT id, subject, kind, payload, created_at FROM events "
	    "WHERE id = $1 AND subject = $2", 2, store_read_types, 1 },
	[STORE_INSERT] = { "insert_event", "insert",
	    "INSERT INTO events (subject, kind, payload) VALUES ($1, $2, $3) "
	    "RETURNING id", 3, store_insert_types, 0 },
};

/* Fills ev from row 0; -1 if any field is not what the SELECT makes. */
static int
store_decode(const struct db_result *res, struct store_event *ev)
{
	if (db_result_fields(res) != STORE_NCOLS ||
	    db_result_int8(res, 0, STORE_COL_ID, &ev->id) == -1 ||
	    db_result_timestamp(res, 0, STORE_COL_CREATED,
	    &ev->created_us) == -1 ||
	    (ev->payload = db_result_jsonb(res, 0, STORE_COL_PAYLOAD,
	    &ev->payload_len)) == NULL)
		return -1;
	ev->subject = db_result_value(res, 0, STORE_COL_SUBJECT,
	    &ev->subject_len);
	ev->kind = db_result_value(res, 0, STORE_COL_KIND, &ev->kind_len);
	return 0;
}

enum db_status
store_read_event(struct db *db, int64_t id, const char *subject,
    struct store_event *ev, db_during_fn *during, void *arg)
{
	const struct db_statement *st = &store_statements[STORE_READ];
	uint64_t id_be = htobe64((uint64_t)id);
	const char *values[2] = { (const char *)&id_be, subject };
	const int lengths[2] = { sizeof(id_be), 0 };
	const int formats[2] = { 1, 0 };
	struct db_result *res;
	enum db_status rc;

	memset(ev, 0, sizeof(*ev));
	if ((rc = db_exec_during(db, st, values, lengths, formats, during, arg,
	    &res)) != DB_OK)
		return rc;
	if (db_result_rows(res) == 0)
		rc = DB_NOT_FOUND;
	else if (store_decode(res, ev) == -1)
		rc = db_result_error(db, st, "unexpected row format");
	if (rc != DB_OK) {
		db_result_free(res);
		memset(ev, 0, sizeof(*ev));
		return rc;
	}
	ev->res = res;
	return DB_OK;
}

void
store_event_release(struct store_event *ev)
{
	db_result_free(ev->res);
	ev->res = NULL;
}

enum db_status
store_insert_event(struct db *db, const char *subject, const char *kind,
    const char *payload, int64_t *id)
{
	const struct db_statement *st = &store_statements[STORE_INSERT];
	const char *values[3] = { subject, kind, payload };
	struct db_result *res;
	enum db_status rc;

	if ((rc = db_exec(db, st, values, NULL, NULL, &res)) != DB_OK)
		return rc;
	if (db_result_rows(res) != 1 || db_result_int8(res, 0, 0, id) == -1)
		rc = db_result_error(db, st, "unexpected result format");
	db_result_free(res);
	return rc;
}
