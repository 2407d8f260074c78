//! Object keys on the streamed path: read without copying when Gitea's
//! bytes allow, and checked on the first pass for what only the tree path
//! can do (a base64 file field, the webhook header field, a key the text
//! passes would change).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Visitor};

use super::super::redaction::AUTHORIZATION_HEADER_FIELD;
use super::{TextPasses, declined};

/// An object key as read: borrowed from Gitea's bytes unless it had
/// escapes.
pub(super) enum KeyText<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl std::ops::Deref for KeyText<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            Self::Borrowed(key) => key,
            Self::Owned(key) => key,
        }
    }
}

/// Reads an object key without copying it, checked (on the first pass)
/// for what only the tree path can do.
pub(super) struct KeyCheck<'p> {
    pub(super) passes: &'p TextPasses<'p>,
}

impl<'de> DeserializeSeed<'de> for KeyCheck<'_> {
    type Value = KeyText<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<KeyText<'de>, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyCheck<'_> {
    type Value = KeyText<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<KeyText<'de>, E> {
        self.check(key)?;
        Ok(KeyText::Borrowed(key))
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<KeyText<'de>, E> {
        self.check(key)?;
        Ok(KeyText::Owned(key.to_owned()))
    }
}

impl KeyCheck<'_> {
    fn check<E: de::Error>(&self, key: &str) -> Result<(), E> {
        if !self.passes.checks() {
            return Ok(());
        }
        if key == "content_base64" || key.eq_ignore_ascii_case(AUTHORIZATION_HEADER_FIELD) {
            return Err(declined());
        }
        // A key the passes change is renamed by the tree path, which keeps
        // two keys that became equal apart.
        if matches!(self.passes.rewrite(key), Some(Cow::Owned(_)) | None) {
            return Err(declined());
        }
        Ok(())
    }
}
