-- The OAuth store, SQLite flavour. Times are unix seconds; lists and
-- metadata are JSON text; columns ending in _enc hold Fernet tokens; columns
-- ending in _hash hold SHA-256 hex of a secret we issued. Keep this file in
-- step with migrations/postgres/0001_init.sql (same tables, same columns).
-- STRICT tables: SQLite refuses a value of the wrong type, as PostgreSQL does.

CREATE TABLE clients (
    client_id                  TEXT PRIMARY KEY NOT NULL,
    client_name                TEXT,
    redirect_uris              TEXT NOT NULL,
    token_endpoint_auth_method TEXT NOT NULL,
    grant_types                TEXT NOT NULL,
    response_types             TEXT NOT NULL,
    scope                      TEXT,
    registration               TEXT NOT NULL,
    secret_hash                TEXT,
    metadata                   TEXT NOT NULL,
    created_at                 INTEGER NOT NULL,
    expires_at                 INTEGER
) STRICT;
-- the stale-DCR eviction when the client table is full
CREATE INDEX clients_registration_created ON clients (registration, created_at);

CREATE TABLE pending_authorizations (
    id_hash                   TEXT PRIMARY KEY NOT NULL,
    flow                      TEXT NOT NULL,
    client_id                 TEXT NOT NULL,
    redirect_uri              TEXT NOT NULL,
    state                     TEXT,
    code_challenge            TEXT NOT NULL,
    resource                  TEXT NOT NULL,
    scope                     TEXT NOT NULL,
    csrf_hash                 TEXT NOT NULL,
    created_at                INTEGER NOT NULL,
    expires_at                INTEGER NOT NULL,
    upstream_state_hash       TEXT,
    upstream_pkce_verifier_enc TEXT,
    upstream_binding_hash     TEXT
) STRICT;
CREATE UNIQUE INDEX pending_upstream_state ON pending_authorizations (upstream_state_hash);
CREATE INDEX pending_expires ON pending_authorizations (expires_at);

CREATE TABLE grants (
    id                      TEXT PRIMARY KEY NOT NULL,
    login                   TEXT NOT NULL,
    client_id               TEXT NOT NULL,
    scope                   TEXT NOT NULL,
    resource                TEXT NOT NULL,
    gitea_access_token_enc  TEXT NOT NULL,
    gitea_refresh_token_enc TEXT,
    gitea_expires_at        INTEGER,
    created_at              INTEGER NOT NULL,
    activated_at            INTEGER,
    last_used_at            INTEGER,
    revoked_at              INTEGER
) STRICT;
CREATE INDEX grants_login ON grants (login, revoked_at);
CREATE INDEX grants_client ON grants (client_id);
CREATE INDEX grants_revoked ON grants (revoked_at);

CREATE TABLE auth_codes (
    code_hash      TEXT PRIMARY KEY NOT NULL,
    grant_id       TEXT NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
    client_id      TEXT NOT NULL,
    redirect_uri   TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    resource       TEXT NOT NULL,
    scope          TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    redeemed_at    INTEGER
) STRICT;
CREATE INDEX auth_codes_grant ON auth_codes (grant_id);
CREATE INDEX auth_codes_expires ON auth_codes (expires_at);

-- kind: access | refresh; state (refresh tokens): active | previous | retired
CREATE TABLE tokens (
    token_hash TEXT PRIMARY KEY NOT NULL,
    grant_id   TEXT NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    state      TEXT NOT NULL,
    scope      TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX tokens_grant ON tokens (grant_id, kind, state);
CREATE INDEX tokens_expires ON tokens (expires_at);

CREATE TABLE consents (
    login             TEXT NOT NULL,
    client_id         TEXT NOT NULL,
    scope             TEXT NOT NULL,
    first_approved_at INTEGER NOT NULL,
    last_approved_at  INTEGER NOT NULL,
    PRIMARY KEY (login, client_id)
) STRICT;
CREATE INDEX consents_client ON consents (client_id);

-- One row per capped table. A count-then-insert starts by updating its row:
-- on PostgreSQL that row lock serialises the check (READ COMMITTED would let
-- two transactions both see room); on SQLite the write lock already does.
CREATE TABLE store_locks (
    name TEXT PRIMARY KEY NOT NULL
) STRICT;
INSERT INTO store_locks (name) VALUES ('clients'), ('pending'), ('codes'), ('grants');
