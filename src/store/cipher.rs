//! Encryption at rest of the few values the store must read back: the
//! user's Gitea tokens and our upstream PKCE verifier.
//!
//! Each `TOKEN_ENCRYPTION_KEY` (key material, newest first) is stretched
//! with HKDF-SHA256 into a 32-byte Fernet key, so operators may supply any
//! long random string rather than a Fernet-formatted key. Encryption uses the
//! newest key; decryption tries every key, which is what makes rotation
//! possible: add a new key in front, run `store rekey`, drop the old one.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE;
use fernet::Fernet;
use hkdf::Hkdf;
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;
use zeroize::Zeroizing;

/// Fixed HKDF salt: domain separation from any other use of the same key
/// material (the salt need not be secret, only constant).
const HKDF_SALT: &[u8] = b"aegis-gitea-mcp/token-encryption";
/// HKDF info: the version of the derivation, so a future scheme can derive
/// different keys from the same material.
const HKDF_INFO: &[u8] = b"fernet v1";

/// Why a cipher could not be built.
#[derive(Debug, thiserror::Error)]
pub enum CipherError {
    #[error("no TOKEN_ENCRYPTION_KEY is set")]
    NoKeys,
    #[error("TOKEN_ENCRYPTION_KEY #{0} could not be turned into an encryption key")]
    BadKey(usize),
}

/// Fernet encryption under a list of keys, newest first.
#[derive(Clone)]
pub struct TokenCipher {
    /// Encrypts; tried first on decryption.
    newest: Fernet,
    /// Older keys, still accepted for decryption until a rekey.
    older: Vec<Fernet>,
}

impl std::fmt::Debug for TokenCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCipher")
            .field("keys", &self.key_count())
            .finish_non_exhaustive()
    }
}

impl TokenCipher {
    /// Derives one Fernet key per entry of `key_material` (newest first).
    /// Length rules are the configuration's business; this only refuses an
    /// empty list.
    pub fn new(key_material: &[SecretString]) -> Result<Self, CipherError> {
        let mut keys = key_material
            .iter()
            .enumerate()
            .map(|(index, material)| derive(material).ok_or(CipherError::BadKey(index + 1)));
        let newest = keys.next().ok_or(CipherError::NoKeys)??;
        let older = keys.collect::<Result<Vec<_>, _>>()?;
        Ok(Self { newest, older })
    }

    /// How many keys decryption tries.
    pub fn key_count(&self) -> usize {
        1 + self.older.len()
    }

    /// Encrypts under the newest key. Each call yields a different token
    /// (random IV), so equal plaintexts are not recognisable at rest.
    pub fn encrypt(&self, plaintext: &str) -> String {
        self.newest.encrypt(plaintext.as_bytes())
    }

    /// Decrypts with whichever key fits; `None` when none does (or the
    /// plaintext is not UTF-8, which we never write).
    pub fn decrypt(&self, token: &str) -> Option<SecretString> {
        std::iter::once(&self.newest)
            .chain(&self.older)
            .find_map(|key| {
                let bytes = Zeroizing::new(key.decrypt(token).ok()?);
                let text = std::str::from_utf8(&bytes).ok()?;
                Some(SecretString::from(text))
            })
    }

    /// Whether `token` is readable under the newest key (nothing to rekey).
    pub fn is_current(&self, token: &str) -> bool {
        self.newest.decrypt(token).is_ok()
    }
}

/// HKDF-SHA256(material) → 32 bytes → base64url → Fernet key.
fn derive(material: &SecretString) -> Option<Fernet> {
    let hkdf = Hkdf::<Sha256>::new(Some(HKDF_SALT), material.expose_secret().as_bytes());
    let mut okm = Zeroizing::new([0u8; 32]);
    hkdf.expand(HKDF_INFO, okm.as_mut()).ok()?;
    let encoded = Zeroizing::new(URL_SAFE.encode(okm.as_ref()));
    Fernet::new(&encoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> SecretString {
        SecretString::from(text)
    }

    const A: &str = "key-material-a-0123456789abcdefghijklmnopqrstuvwxyz";
    const B: &str = "key-material-b-0123456789abcdefghijklmnopqrstuvwxyz";
    const C: &str = "key-material-c-0123456789abcdefghijklmnopqrstuvwxyz";

    #[test]
    fn round_trips() {
        let cipher = TokenCipher::new(&[key(A)]).expect("cipher");
        let token = cipher.encrypt("gto_secret");
        let back = cipher.decrypt(&token).expect("decrypts");
        assert_eq!(back.expose_secret(), "gto_secret");
    }

    #[test]
    fn ciphertext_differs_from_plaintext_and_between_calls() {
        let cipher = TokenCipher::new(&[key(A)]).expect("cipher");
        let first = cipher.encrypt("gto_secret");
        let second = cipher.encrypt("gto_secret");
        assert!(!first.contains("gto_secret"));
        assert_ne!(first, second);
    }

    #[test]
    fn an_older_key_still_decrypts() {
        let old = TokenCipher::new(&[key(A)]).expect("cipher");
        let token = old.encrypt("gto_secret");
        let rotated = TokenCipher::new(&[key(B), key(A)]).expect("cipher");
        let back = rotated.decrypt(&token).expect("older key decrypts");
        assert_eq!(back.expose_secret(), "gto_secret");
        assert!(!rotated.is_current(&token));
        assert!(rotated.is_current(&rotated.encrypt("x")));
    }

    #[test]
    fn an_unknown_key_does_not_decrypt() {
        let other = TokenCipher::new(&[key(C)]).expect("cipher");
        let token = other.encrypt("gto_secret");
        let cipher = TokenCipher::new(&[key(B), key(A)]).expect("cipher");
        assert!(cipher.decrypt(&token).is_none());
        assert!(cipher.decrypt("not a fernet token").is_none());
    }

    #[test]
    fn derivation_is_stable_across_instances() {
        let token = TokenCipher::new(&[key(A)]).expect("cipher").encrypt("v");
        let again = TokenCipher::new(&[key(A)]).expect("cipher");
        assert!(again.decrypt(&token).is_some());
    }

    #[test]
    fn refuses_an_empty_key_list() {
        assert!(matches!(TokenCipher::new(&[]), Err(CipherError::NoKeys)));
    }

    #[test]
    fn debug_does_not_print_keys() {
        let cipher = TokenCipher::new(&[key(A)]).expect("cipher");
        let shown = format!("{cipher:?}");
        assert!(!shown.contains("key-material"));
        assert!(shown.contains("keys: 1"));
    }
}
