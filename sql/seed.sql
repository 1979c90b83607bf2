-- Seed the events table: 1,000,000 rows by one INSERT ... SELECT.
-- psql -v rows=N seeds N rows instead (the tests use a small N; the
-- benchmark always uses the default).
\if :{?rows}
\else
\set rows 1000000
\endif
INSERT INTO events (subject, kind, payload, created_at)
SELECT 'client-bench',
       (ARRAY['page_view','click','signup','purchase'])[1 + g % 4],
       jsonb_build_object('path', '/p/' || (g % 1000), 'ms', g % 500, 'ref', md5(g::text)),
       timestamptz '2026-09-01 00:00:00+00' + make_interval(secs => g)
FROM generate_series(1, :rows) g;
VACUUM (ANALYZE) events;
