-- Which of the gateway's OAuth applications at Gitea holds a grant's
-- session (issue 27): 'read' (GITEA_OAUTH_READ_CLIENT_ID, read scopes
-- only) or 'read_write' (GITEA_OAUTH_CLIENT_ID). A refresh token renews
-- only at the application that issued it. NULL for grants from before:
-- the read-write application. Keep this file in step with its twin in
-- the other dialect's folder.
ALTER TABLE grants ADD COLUMN gitea_app TEXT;
