-- When the grant's Gitea tokens were issued (issue 30): a session is
-- renewed ahead of its expiry by at most half its lifetime, so a Gitea
-- that issues short-lived tokens is not renewed on every call. NULL for
-- tokens stored before: the fixed lead applies. Keep this file in step
-- with its twin in the other dialect's folder.
ALTER TABLE grants ADD COLUMN gitea_issued_at INTEGER;
