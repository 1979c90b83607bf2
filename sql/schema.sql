-- cfpm events schema (PostgreSQL 15).
CREATE TABLE IF NOT EXISTS events (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subject    text        NOT NULL,
    kind       text        NOT NULL,
    payload    jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
