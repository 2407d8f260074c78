-- Page sessions, PostgreSQL flavour: a person signed in to the gateway's own
-- pages (/account, /admin), never valid at /mcp. id_hash is SHA-256 hex of
-- the session cookie; is_admin is 0 or 1 (an integer on both backends, so
-- it reads the same way); gitea_access_token_enc is a Fernet token. Keep
-- this file in step with migrations/sqlite/0002_page_sessions.sql.

CREATE TABLE page_sessions (
    id_hash                TEXT PRIMARY KEY NOT NULL,
    login                  TEXT NOT NULL,
    is_admin               BIGINT NOT NULL CHECK (is_admin IN (0, 1)),
    gitea_access_token_enc TEXT NOT NULL,
    created_at             BIGINT NOT NULL,
    expires_at             BIGINT NOT NULL
);
-- the per-login cap (oldest first out)
CREATE INDEX page_sessions_login ON page_sessions (login, created_at);
CREATE INDEX page_sessions_expires ON page_sessions (expires_at);

-- serialises the per-login cap check (see store_locks in 0001)
INSERT INTO store_locks (name) VALUES ('page_sessions');
