-- Activity at a glance (issue 29): what each connection's tool calls did,
-- for /account and /admin. Figures, not a record: the audit log is that.
-- Written in batches as calls finish (at most a few seconds late), kept
-- ACTIVITY_RETENTION (8 days), pruned with the rest of the store.
-- Keep this file in step with its twin in the other dialect's folder.

-- Calls per connection and hour (hour: unix time of the hour's start).
CREATE TABLE activity_hours (
    grant_id  TEXT NOT NULL,
    login     TEXT NOT NULL,
    client_id TEXT NOT NULL,
    hour      BIGINT NOT NULL,
    calls     BIGINT NOT NULL,
    errors    BIGINT NOT NULL,
    refusals  BIGINT NOT NULL,
    PRIMARY KEY (grant_id, hour)
);
CREATE INDEX activity_hours_login ON activity_hours (login, hour);
CREATE INDEX activity_hours_hour ON activity_hours (hour);

-- Calls per connection, day and tool (day: unix time of the day's start).
CREATE TABLE activity_tools (
    grant_id  TEXT NOT NULL,
    login     TEXT NOT NULL,
    day       BIGINT NOT NULL,
    tool      TEXT NOT NULL,
    calls     BIGINT NOT NULL,
    PRIMARY KEY (grant_id, day, tool)
);
CREATE INDEX activity_tools_day ON activity_tools (day);

-- The last calls of each connection (at most 20 kept per connection).
CREATE TABLE activity_recent (
    id BIGSERIAL PRIMARY KEY,
    grant_id  TEXT NOT NULL,
    login     TEXT NOT NULL,
    at        BIGINT NOT NULL,
    tool      TEXT NOT NULL,
    outcome   TEXT NOT NULL CHECK (outcome IN ('ok', 'error', 'refused'))
);
CREATE INDEX activity_recent_grant ON activity_recent (grant_id, id);
CREATE INDEX activity_recent_login ON activity_recent (login, id);
