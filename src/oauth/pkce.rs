//! PKCE (RFC 7636), S256 only: OAuth 2.1 forbids `plain`. Used both ways:
//! checking our clients' verifiers, and making our own pair for Gitea.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// RFC 7636 §4.1: 43–128 characters of `[A-Za-z0-9-._~]`.
pub fn is_valid_verifier(verifier: &str) -> bool {
    (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// An S256 challenge is base64url(SHA-256) without padding: 43 characters.
pub fn is_valid_challenge(challenge: &str) -> bool {
    challenge.len() == 43
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

/// The S256 challenge of a verifier.
pub fn s256_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// True when `verifier` is well formed and hashes to `challenge`; compared
/// in constant time.
pub fn verifier_matches(verifier: &str, challenge: &str) -> bool {
    is_valid_verifier(verifier)
        && s256_challenge(verifier)
            .as_bytes()
            .ct_eq(challenge.as_bytes())
            .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_appendix_b_example_matches() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert_eq!(s256_challenge(verifier), challenge);
        assert!(verifier_matches(verifier, challenge));
    }

    #[test]
    fn verifier_grammar_is_43_to_128_unreserved_characters() {
        assert!(is_valid_verifier(&"a".repeat(43)));
        assert!(is_valid_verifier(&"a-._~9Z".repeat(19)[..128]));
        assert!(!is_valid_verifier(&"a".repeat(42)));
        assert!(!is_valid_verifier(&"a".repeat(129)));
        assert!(!is_valid_verifier(&format!("{}+", "a".repeat(43))));
        assert!(!is_valid_verifier(&format!("{} ", "a".repeat(43))));
    }

    #[test]
    fn a_mismatched_or_malformed_verifier_fails() {
        let challenge = s256_challenge(&"b".repeat(50));
        assert!(!verifier_matches(&"c".repeat(50), &challenge));
        assert!(!verifier_matches("short", &s256_challenge("short")));
    }

    #[test]
    fn challenges_are_43_base64url_characters() {
        assert!(is_valid_challenge(&s256_challenge(&"x".repeat(60))));
        assert!(!is_valid_challenge("plain-challenge"));
        assert!(!is_valid_challenge(&"=".repeat(43)));
    }
}
