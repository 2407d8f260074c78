//! Random values for ids and secrets: 256 bits from the OS-seeded CSPRNG,
//! base64url without padding. A leaf: the OAuth server's credentials and
//! the tool call's confirmation ids both draw from it.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::Rng;

/// 256 random bits, base64url: request ids, CSRF tokens, states, cookies,
/// client secrets, confirmation ids.
pub fn random_value() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_256_bits_and_does_not_repeat() {
        let value = random_value();
        assert_eq!(URL_SAFE_NO_PAD.decode(&value).unwrap().len(), 32);
        assert_ne!(value, random_value());
    }
}
