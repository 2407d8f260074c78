-- The redirect URI a grant's sign-in used (the red team's F3, issue 45): a
-- policy rule about redirect hosts holds for the URI the grant was issued
-- to, not for every URI its client registered. NULL for grants from before,
-- which the policy reads conservatively (docs/policy.md).
-- Keep this file in step with its twin in the other dialect's folder.
ALTER TABLE grants ADD COLUMN redirect_uri TEXT;
