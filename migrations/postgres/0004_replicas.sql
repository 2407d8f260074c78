-- Several replicas on one store (issue 16). Keep this file in step with its
-- twin in the other dialect's folder.

-- Compare-and-swap on a grant's Gitea tokens: every upstream refresh
-- replaces the version it read, so an older pair can never overwrite a
-- newer one, and a replica that lost a refresh race sees that it did.
ALTER TABLE grants ADD COLUMN gitea_tokens_version BIGINT NOT NULL DEFAULT 0;

-- Rate limits shared by the replicas: hits per key and minute. The key is
-- the limit's name and the client address or the SHA-256 of the
-- Authorization value, never the value itself. UNLOGGED (PostgreSQL only):
-- counters need no WAL, so a check commits without waiting for a flush; a
-- crash of the database empties the table, which only resets the windows.
CREATE UNLOGGED TABLE rate_limit_hits (
    key TEXT NOT NULL,
    minute BIGINT NOT NULL,
    hits BIGINT NOT NULL,
    PRIMARY KEY (key, minute)
);
CREATE INDEX rate_limit_hits_minute ON rate_limit_hits (minute);
