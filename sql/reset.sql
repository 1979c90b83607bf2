-- Return the events table to its seeded state between benchmark cells:
-- drop every row written after the seed, then VACUUM and CHECKPOINT.
-- psql -v rows=N for a table seeded with N rows.
\if :{?rows}
\else
\set rows 1000000
\endif
DELETE FROM events WHERE id > :rows;
SELECT setval(pg_get_serial_sequence('events', 'id'), :rows);
VACUUM (ANALYZE) events;
CHECKPOINT;
