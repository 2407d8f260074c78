//! Object keys on the streamed path: read without copying when Gitea's
//! bytes allow, and checked on the first pass for what only the tree path
//! can do (a base64 file field, the webhook header field, a key the text
//! passes would change).

use std::borrow::Cow;
use std::cell::RefCell;
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
    /// The document's keys already found to pass `passes` unchanged.
    pub(super) passed: &'p PassedKeys,
}

/// At most this many keys are remembered per document, each at most this
/// long: a body of distinct keys costs what it did, and no more memory.
const MAX_PASSED_KEYS: usize = 512;
const MAX_PASSED_KEY_BYTES: usize = 64;

/// The keys of one document that the text passes leave unchanged. Gitea's
/// lists repeat a few dozen keys in every item, and running the redactor
/// and the masker over each of them again was a large share of a long
/// list's hygiene (`docs/benchmarks.md`, issue 30). A key's
/// check depends on its text and the passes only, and one document has one
/// set of passes.
///
/// Hashed with foldhash (seeded per set), not std's SipHash, which was a
/// visible share of the CPU serving that list's full view
/// (docs/benchmarks.md, "the remembered keys' hasher"). Its resistance to
/// crafted collisions is weaker, but
/// each set has its own random seed and holds at most [`MAX_PASSED_KEYS`]
/// keys of at most [`MAX_PASSED_KEY_BYTES`], so a lookup among colliding
/// keys compares with at most that many.
#[derive(Default)]
pub(super) struct PassedKeys(RefCell<foldhash::HashSet<Box<str>>>);

impl PassedKeys {
    fn contains(&self, key: &str) -> bool {
        self.0.borrow().contains(key)
    }

    fn remember(&self, key: &str) {
        let mut keys = self.0.borrow_mut();
        if key.len() <= MAX_PASSED_KEY_BYTES && keys.len() < MAX_PASSED_KEYS {
            keys.insert(key.into());
        }
    }
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
        if self.passed.contains(key) {
            return Ok(());
        }
        // A key the passes change is renamed by the tree path, which keeps
        // two keys that became equal apart.
        if matches!(self.passes.rewrite(key), Some(Cow::Owned(_)) | None) {
            return Err(declined());
        }
        self.passed.remember(key);
        Ok(())
    }
}
