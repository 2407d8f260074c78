//! The sealed `requestState` of a confirmation asked through an
//! input-required result (MCP 2026-07-28, SEP-2322).
//!
//! The client echoes the state back on its retry, so it is untrusted input:
//! rmcp's `RequestStateCodec` (HMAC-SHA256) seals it, bound by associated
//! data to the grant and to the digest of the tool and its arguments, with
//! an expiry. A state that was forged, altered, sealed for another call or
//! another connection, or is too old does not open. It names the stored
//! confirmation, which is what makes it single-use (a state alone proves
//! nothing was spent).
//!
//! The key is derived with HKDF from each `TOKEN_ENCRYPTION_KEY`, which
//! every replica already shares (as it shares the audit key): a state
//! sealed by one replica opens on another, and after a key rotation states
//! sealed under the older key still open until they expire.

use std::time::Duration;

use hkdf::Hkdf;
use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::answer::AskMode;

/// HKDF salt: separates this key from the store cipher's, derived from
/// the same material.
const HKDF_SALT: &[u8] = b"aegis-gitea-mcp/request-state";
const HKDF_INFO: &[u8] = b"hmac-sha256 v1";

/// What a sealed state carries: the confirmation it asked about and how
/// the person was asked. Signed, not encrypted: nothing secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedAsk {
    #[serde(rename = "c")]
    pub confirmation: String,
    #[serde(rename = "m")]
    pub mode: AskMode,
}

/// Seals and opens the states of one gateway (every replica alike).
pub struct StateSeal {
    codec: RequestStateCodec,
}

impl std::fmt::Debug for StateSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSeal").finish_non_exhaustive()
    }
}

impl StateSeal {
    /// The seal of the key materials, newest first (`TOKEN_ENCRYPTION_KEY`).
    pub fn from_key_material(materials: &[SecretString]) -> Result<Self, RequestStateError> {
        let mut ring: Vec<(String, Zeroizing<Vec<u8>>)> = Vec::new();
        for material in materials {
            let key = derive(material);
            // The key id names the key without revealing it; the same
            // material twice is one key.
            let kid: String = Sha256::digest(key.as_slice())
                .iter()
                .take(6)
                .map(|b| format!("{b:02x}"))
                .collect();
            if !ring.iter().any(|(known, _)| known == &kid) {
                ring.push((kid, key));
            }
        }
        let active = ring
            .first()
            .map(|(kid, _)| kid.clone())
            .ok_or(RequestStateError::InvalidKeyring("no key material"))?;
        let codec = RequestStateCodec::new_with_keyring(
            active,
            ring.into_iter().map(|(kid, key)| (kid, key.to_vec())),
        )?;
        Ok(Self { codec })
    }

    /// A state for `ask` about the call `digest` of grant `grant_id`,
    /// good for `ttl`.
    pub fn seal(&self, ask: &SealedAsk, grant_id: &str, digest: &str, ttl: Duration) -> String {
        let bound = bound_to(grant_id, digest);
        let options = SealOptions::new().associated_data(&bound).ttl(ttl);
        self.codec
            .seal_json_with(ask, &options)
            // A two-field struct of strings always serialises.
            .unwrap_or_default()
    }

    /// What `state` asked, when this gateway sealed it for the call
    /// `digest` of grant `grant_id` and it has not expired. Every failure
    /// is the same `None`: the caller is told one thing (rmcp's advice).
    pub fn open(&self, state: &str, grant_id: &str, digest: &str) -> Option<SealedAsk> {
        self.codec
            .open_json_with(state, &bound_to(grant_id, digest))
            .ok()
    }
}

/// The associated data: grant and call, with a separator neither contains
/// (grant ids are base64url, digests hex).
fn bound_to(grant_id: &str, digest: &str) -> Vec<u8> {
    format!("{grant_id}\n{digest}").into_bytes()
}

/// HKDF-SHA256(material) → 32 bytes.
fn derive(material: &SecretString) -> Zeroizing<Vec<u8>> {
    let hkdf = Hkdf::<Sha256>::new(Some(HKDF_SALT), material.expose_secret().as_bytes());
    let mut okm = Zeroizing::new(vec![0u8; 32]);
    // 32 bytes is far below HKDF-SHA256's limit of 255 × 32.
    hkdf.expand(HKDF_INFO, okm.as_mut_slice())
        .expect("32 bytes is a valid HKDF-SHA256 length");
    okm
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "key-material-a-0123456789abcdefghijklmnopqrstuvwxyz";
    const B: &str = "key-material-b-0123456789abcdefghijklmnopqrstuvwxyz";
    const TTL: Duration = Duration::from_secs(600);

    fn seal_of(materials: &[&str]) -> StateSeal {
        let materials: Vec<SecretString> =
            materials.iter().map(|m| SecretString::from(*m)).collect();
        StateSeal::from_key_material(&materials).unwrap()
    }

    fn ask() -> SealedAsk {
        SealedAsk {
            confirmation: "conf-1".to_owned(),
            mode: AskMode::Form,
        }
    }

    #[test]
    fn a_state_opens_for_its_own_grant_and_call() {
        let seal = seal_of(&[A]);
        let state = seal.seal(&ask(), "grant-1", "digest-1", TTL);
        assert_eq!(seal.open(&state, "grant-1", "digest-1"), Some(ask()));
    }

    #[test]
    fn a_state_does_not_open_for_another_call_or_grant() {
        let seal = seal_of(&[A]);
        let state = seal.seal(&ask(), "grant-1", "digest-1", TTL);
        assert_eq!(seal.open(&state, "grant-1", "digest-2"), None);
        assert_eq!(seal.open(&state, "grant-2", "digest-1"), None);
    }

    #[test]
    fn an_altered_or_forged_state_does_not_open() {
        let seal = seal_of(&[A]);
        let state = seal.seal(&ask(), "grant-1", "digest-1", TTL);
        let mut altered = state.clone().into_bytes();
        let last = altered.len() - 1;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        assert_eq!(seal.open(&altered, "grant-1", "digest-1"), None);
        // Sealed by a gateway with another key.
        let forged = seal_of(&[B]).seal(&ask(), "grant-1", "digest-1", TTL);
        assert_eq!(seal.open(&forged, "grant-1", "digest-1"), None);
        assert_eq!(seal.open("", "grant-1", "digest-1"), None);
        assert_eq!(seal.open("rs2.x.y.z", "grant-1", "digest-1"), None);
    }

    #[test]
    fn an_expired_state_does_not_open() {
        let seal = seal_of(&[A]);
        let state = seal.seal(&ask(), "grant-1", "digest-1", Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(seal.open(&state, "grant-1", "digest-1"), None);
    }

    #[test]
    fn replicas_with_the_same_keys_open_each_others_states() {
        let state = seal_of(&[A]).seal(&ask(), "grant-1", "digest-1", TTL);
        assert_eq!(
            seal_of(&[A]).open(&state, "grant-1", "digest-1"),
            Some(ask())
        );
    }

    #[test]
    fn after_a_rotation_an_older_keys_state_still_opens() {
        let before = seal_of(&[A]).seal(&ask(), "grant-1", "digest-1", TTL);
        let rotated = seal_of(&[B, A]);
        assert_eq!(rotated.open(&before, "grant-1", "digest-1"), Some(ask()));
        // And new states are sealed under the new key alone.
        let after = rotated.seal(&ask(), "grant-1", "digest-1", TTL);
        assert_eq!(seal_of(&[A]).open(&after, "grant-1", "digest-1"), None);
    }

    #[test]
    fn a_state_carries_nothing_secret() {
        let state = seal_of(&[A]).seal(&ask(), "grant-1", "digest-1", TTL);
        assert!(!state.contains(A));
        assert!(!state.contains("grant-1"));
    }
}
