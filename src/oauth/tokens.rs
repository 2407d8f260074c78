//! What our credentials look like and how long they live. Every value is
//! 256 random bits (`crate::random`);
//! the ones handed to clients carry the `agm_` marker so the resolver can
//! tell them from the static bearer without a lookup.

use crate::random::random_value;

/// Marks a token minted by this server. A presented token with this prefix
/// only ever resolves through the store, never to the admin token.
pub const TOKEN_PREFIX: &str = "agm_";

/// Access tokens live an hour.
pub const ACCESS_TOKEN_TTL: i64 = 3600;
/// Refresh tokens live 30 days (each rotation starts a new 30 days).
pub const REFRESH_TOKEN_TTL: i64 = 30 * 24 * 3600;
/// Our authorization codes live 5 minutes (RFC 6749 §4.1.2 advises ≤ 10).
pub const CODE_TTL: i64 = 300;
/// A parked authorization (consent shown, Gitea sign-in under way).
pub const PENDING_TTL: i64 = 600;

/// A new access or refresh token or code: `agm_` + 256 random bits.
pub fn new_token() -> String {
    format!("{TOKEN_PREFIX}{}", random_value())
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    use super::*;

    #[test]
    fn tokens_carry_the_marker_and_256_bits() {
        let token = new_token();
        assert!(token.starts_with(TOKEN_PREFIX));
        let body = &token[TOKEN_PREFIX.len()..];
        assert_eq!(URL_SAFE_NO_PAD.decode(body).unwrap().len(), 32);
    }
}
