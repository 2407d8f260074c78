-- Calls waiting for their person's confirmation (issue 28). id is random
-- (it is in the confirmation page's URL; the page itself needs the
-- person's page sign-in); digest is SHA-256 hex of the tool name and its
-- canonical arguments; arguments_enc is what the page shows, a Fernet
-- token. state: pending, approved (until expires_at, single use), denied,
-- used. Keep this file in step with its twin in the other dialect's folder.

CREATE TABLE confirmations (
    id            TEXT PRIMARY KEY NOT NULL,
    grant_id      TEXT NOT NULL,
    login         TEXT NOT NULL,
    client_id     TEXT NOT NULL,
    tool          TEXT NOT NULL,
    digest        TEXT NOT NULL,
    summary       TEXT NOT NULL,
    method        TEXT NOT NULL,
    route         TEXT NOT NULL,
    arguments_enc TEXT NOT NULL,
    state         TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'used')),
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    decided_at    INTEGER,
    decided_by    TEXT
) STRICT;
-- a retry finds its request; the per-grant cap counts them
CREATE INDEX confirmations_grant ON confirmations (grant_id, digest);
-- the pages list a person's pending requests
CREATE INDEX confirmations_login ON confirmations (login, state);

-- serialises the per-grant cap check (see store_locks in 0001)
INSERT INTO store_locks (name) VALUES ('confirmations');
