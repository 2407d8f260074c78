-- The fixes of the outside security review (issue 15). Keep this file in
-- step with its twin in the other dialect's folder.

-- F12: /token now enforces a client's registered grant types. Before, a
-- registration that left grant_types out was stored as authorization_code
-- alone (RFC 7591's default) although every client could refresh; those
-- rows are indistinguishable from ones that named it, and refusing their
-- refreshes would sign out every such client (Le Chat registers that way).
UPDATE clients SET grant_types = '["authorization_code","refresh_token"]'
WHERE grant_types = '["authorization_code"]';
