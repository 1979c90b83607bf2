-- The role cfpm's workers connect as (PostgreSQL 15): it may log in
-- (peer authentication on the local socket maps the system user cfpm to
-- it), connect to this database only, and read and insert events,
-- nothing else. Run by a superuser, connected to the events database,
-- after schema.sql; running it again changes nothing.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'cfpm') THEN
        CREATE ROLE cfpm LOGIN;
    END IF;
    EXECUTE format('REVOKE ALL ON DATABASE %I FROM PUBLIC',
                   current_database());
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO cfpm',
                   current_database());
END
$$;
GRANT USAGE ON SCHEMA public TO cfpm;
GRANT SELECT, INSERT ON events TO cfpm;
