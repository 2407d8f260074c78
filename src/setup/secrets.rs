//! The secrets `setup` generates: `MCP_BEARER_TOKEN`, `TOKEN_ENCRYPTION_KEY`
//! and `AUDIT_HMAC_KEY`, each 32 fresh random bytes, base64url (43
//! characters, no padding), which passes every rule the gateway applies.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::Rng;
use secrecy::{ExposeSecret, SecretString};
use zeroize::Zeroize;

/// The three generated secrets.
#[derive(Debug, Clone)]
pub struct Generated {
    pub bearer_token: SecretString,
    pub token_encryption_key: SecretString,
    pub audit_hmac_key: SecretString,
}

impl Generated {
    pub fn new() -> Self {
        Self {
            bearer_token: random_secret(),
            token_encryption_key: random_secret(),
            audit_hmac_key: random_secret(),
        }
    }

    /// Every value, for checks that none of them is ever printed.
    #[cfg(test)]
    pub fn all(&self) -> [&SecretString; 3] {
        [
            &self.bearer_token,
            &self.token_encryption_key,
            &self.audit_hmac_key,
        ]
    }
}

impl Default for Generated {
    fn default() -> Self {
        Self::new()
    }
}

/// 32 random bytes, base64url. Never starts with `agm_`, the prefix of the
/// tokens the OAuth server mints (which `MCP_BEARER_TOKEN` may not have).
pub fn random_secret() -> SecretString {
    loop {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let secret = SecretString::from(URL_SAFE_NO_PAD.encode(bytes));
        bytes.zeroize();
        if !secret.expose_secret().starts_with("agm_") {
            return secret;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_43_base64url_characters_and_distinct() {
        let g = Generated::new();
        let values: Vec<&str> = g.all().iter().map(|s| s.expose_secret()).collect();
        for v in &values {
            assert_eq!(v.len(), 43);
            assert!(
                v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            );
            assert_eq!(URL_SAFE_NO_PAD.decode(v).unwrap().len(), 32);
        }
        assert_ne!(values[0], values[1]);
        assert_ne!(values[1], values[2]);
        assert_ne!(values[0], values[2]);
    }
}
