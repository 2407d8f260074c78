-- The fixes of the outside security review (issue 15). Keep this file in
-- step with its twin in the other dialect's folder.

-- F12: /token now enforces a client's registered grant types. Before, a
-- registration that left grant_types out was stored as authorization_code
-- alone (RFC 7591's default) although every client could refresh; those
-- rows are indistinguishable from ones that named it, and refusing their
-- refreshes would sign out every such client (Le Chat registers that way).
UPDATE clients SET grant_types = '["authorization_code","refresh_token"]'
WHERE grant_types = '["authorization_code"]';

-- F6: refresh-token rotation with one live pair and a bounded grace.
-- rotated_at: when a refresh token was rotated away from (it became
-- 'previous'); its grace counts from there. minted_by: the token_hash of
-- the refresh token presented to mint this token (NULL for the pair the
-- code redemption issued), so a retry within the grace replaces exactly
-- the pair the lost answer carried.
ALTER TABLE tokens ADD COLUMN rotated_at BIGINT;
ALTER TABLE tokens ADD COLUMN minted_by TEXT;

-- F4: registration quotas and the pruning of unused registrations.
-- registered_from: the network a dynamic registration came from (IPv4 /24,
-- IPv6 /48), for the per-network quota; NULL for metadata documents and
-- rows from before. first_used_at: when the client's first grant was
-- stored; a dynamic registration never used within an hour is removed.
ALTER TABLE clients ADD COLUMN registered_from TEXT;
ALTER TABLE clients ADD COLUMN first_used_at BIGINT;
UPDATE clients SET first_used_at = created_at
WHERE EXISTS (SELECT 1 FROM grants g WHERE g.client_id = clients.client_id);
CREATE INDEX clients_registered_from ON clients (registered_from, created_at);

-- OpenID Connect sign-in: the hash of the nonce sent to Gitea with the
-- sign-in, and Gitea's user id (the ID token's sub) on each grant, checked
-- against the ID token of every upstream refresh.
ALTER TABLE pending_authorizations ADD COLUMN upstream_nonce_hash TEXT;
ALTER TABLE grants ADD COLUMN gitea_subject TEXT;
