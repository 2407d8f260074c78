//! Exact redaction: every known secret is replaced with `[REDACTED]`
//! wherever it occurs in a result, in string values and in object keys,
//! inside longer strings, and inside the decoded bytes of base64 file
//! fields, and in the encoded forms a leak takes (base64, base64url, hex,
//! percent-encoding; see [`encoded_forms`]). Always on, whatever
//! `SECRET_DETECTION_MODE` says.
//!
//! All secrets are searched in one Aho-Corasick pass (leftmost-longest),
//! so the cost is linear in the text whatever the number of secrets, and a
//! secret that contains another is replaced whole.
//!
//! Also here: the webhook `authorization_header` field, redacted by name
//! (SEC-02), because Gitea returns a stored header in plain text.

use std::borrow::Cow;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::Value;

use crate::masking::walk::{rewrite_base64_fields, rewrite_strings};

pub const REDACTED: &str = "[REDACTED]";

/// Secrets shorter than this are not searched for (except those added with
/// [`RedactorBuilder::secret_any_length`]): they would match ordinary text
/// and could not be meaningful credentials.
pub const MIN_SECRET_LEN: usize = 4;

/// The set of values to redact from one result. `Debug` shows how many
/// secrets it holds, never the secrets.
#[derive(Clone, Default)]
pub struct Redactor {
    matcher: Option<AhoCorasick>,
    count: usize,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.count)
            .finish()
    }
}

/// Collects the secrets of one call. [`RedactorBuilder::prepare`] turns
/// the secrets that never change (the gateway's own) into a shared base
/// once, so a call only encodes its own.
#[derive(Clone, Default)]
pub struct RedactorBuilder {
    /// Prepared patterns shared by every call (secrets and their forms).
    base: Arc<[String]>,
    /// This call's secrets, each followed by its encoded forms.
    secrets: Vec<String>,
    /// How many secrets were added (without their encoded forms).
    added: usize,
}

impl RedactorBuilder {
    fn push(mut self, secret: String, min_chars: usize) -> Self {
        if secret.chars().count() >= min_chars {
            self.secrets.extend(encoded_forms(secret.as_bytes()));
            self.secrets.push(secret);
            self.added += 1;
        }
        self
    }

    /// Adds a secret of at least [`MIN_SECRET_LEN`] characters; shorter ones are ignored.
    pub fn secret(self, secret: impl Into<String>) -> Self {
        self.push(secret.into(), MIN_SECRET_LEN)
    }

    pub fn secrets<I, S>(self, secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        secrets.into_iter().fold(self, Self::secret)
    }

    /// Adds a non-empty secret of any length (an Action secret's `data`).
    pub fn secret_any_length(self, secret: impl Into<String>) -> Self {
        self.push(secret.into(), 1)
    }

    pub fn secrets_any_length<I, S>(self, secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        secrets.into_iter().fold(self, Self::secret_any_length)
    }

    /// The secrets added so far as a shared base: cloning the result and
    /// adding a call's own secrets copies nothing and encodes nothing again.
    pub fn prepare(mut self) -> Self {
        self.secrets.extend(self.base.iter().cloned());
        self.secrets.sort_unstable();
        self.secrets.dedup();
        Self {
            base: std::mem::take(&mut self.secrets).into(),
            secrets: Vec::new(),
            added: self.added,
        }
    }

    pub fn build(mut self) -> Redactor {
        self.secrets.sort_unstable();
        self.secrets.dedup();
        if self.secrets.is_empty() && self.base.is_empty() {
            return Redactor::default();
        }
        let patterns = || self.base.iter().chain(self.secrets.iter());
        // A contiguous NFA, not the DFA the builder would pick for this
        // many patterns: a redactor is kept per caller (redactor_cache.rs),
        // and a DFA of a caller's patterns (each secret brings ten encoded
        // forms) takes many times the memory; building it also cost more
        // than the rest of a call (docs/benchmarks.md, "Issue 15").
        // Building only fails beyond automaton size limits that the 16 MiB
        // request body cannot reach; if it ever did, refusing to redact
        // would leak, so fall back to the (slower) noncontiguous NFA.
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .build(patterns())
            .or_else(|_| {
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostLongest)
                    .kind(Some(aho_corasick::AhoCorasickKind::NoncontiguousNFA))
                    .build(patterns())
            })
            .expect("an Aho-Corasick automaton over the secrets of one call builds");
        Redactor {
            matcher: Some(matcher),
            count: self.added,
        }
    }
}

/// Secrets shorter than this (in bytes) are searched for as they are only:
/// their encoded fragments would be too short to tell from other text.
pub const MIN_ENCODED_SECRET_BYTES: usize = 8;

/// The forms `secret` takes when someone encodes it, as found inside longer
/// text: base64 and base64url at each of the three byte alignments (only
/// the characters that depend on the secret's bytes alone, so the
/// neighbouring bytes do not matter), hex in both cases, and
/// percent-encoding of every byte that is not unreserved (upper and lower
/// hex) when that differs from the secret.
pub fn encoded_forms(secret: &[u8]) -> Vec<String> {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    if secret.len() < MIN_ENCODED_SECRET_BYTES {
        return Vec::new();
    }
    let mut forms = Vec::with_capacity(10);
    for offset in 0..3 {
        let mut shifted = vec![0u8; offset];
        shifted.extend_from_slice(secret);
        // Character i covers bits 6i..6i+6; the secret's bits are
        // 8·offset..8·(offset+len).
        let first = (8 * offset).div_ceil(6);
        let end = 8 * (offset + secret.len()) / 6;
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&shifted);
            forms.push(encoded[first..end].to_owned());
        }
    }
    let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    forms.push(hex.to_ascii_uppercase());
    forms.push(hex);
    // By hand rather than with `percent-encoding`: it writes upper-case
    // hex only, and a leak may use either case.
    let unreserved = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
    if secret.iter().any(|&b| !unreserved(b)) {
        for upper in [true, false] {
            let encoded: String = secret
                .iter()
                .map(|&b| match (unreserved(b), upper) {
                    (true, _) => char::from(b).to_string(),
                    (false, true) => format!("%{b:02X}"),
                    (false, false) => format!("%{b:02x}"),
                })
                .collect();
            forms.push(encoded);
        }
    }
    forms
}

impl Redactor {
    /// A redactor for `secrets` (each at least [`MIN_SECRET_LEN`] characters).
    pub fn new<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::builder().secrets(secrets).build()
    }

    pub fn builder() -> RedactorBuilder {
        RedactorBuilder::default()
    }

    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// Heap bytes held by the automaton.
    pub fn memory_usage(&self) -> usize {
        self.matcher.as_ref().map_or(0, AhoCorasick::memory_usage)
    }

    /// `text` with every secret replaced; borrowed when nothing matched.
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.redact_if_found(text) {
            Some(out) => Cow::Owned(out),
            None => Cow::Borrowed(text),
        }
    }

    /// `Some(redacted)` when `text` holds a secret.
    pub fn redact_if_found(&self, text: &str) -> Option<String> {
        let matcher = self.matcher.as_ref()?;
        matcher.find(text)?;
        let mut out = String::with_capacity(text.len());
        matcher.replace_all_with(text, &mut out, |_, _, dst| {
            dst.push_str(REDACTED);
            true
        });
        Some(out)
    }

    /// `Some(redacted)` when `bytes` hold a secret.
    pub fn redact_bytes(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        let matcher = self.matcher.as_ref()?;
        matcher.find(bytes)?;
        let mut out = Vec::with_capacity(bytes.len());
        matcher.replace_all_with_bytes(bytes, &mut out, |_, _, dst| {
            dst.extend_from_slice(REDACTED.as_bytes());
            true
        });
        Some(out)
    }

    /// Redacts in place: string values, object keys and base64 file fields.
    pub fn redact_value(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        // Base64 first: the string pass cannot change valid base64 into
        // something that decodes differently, but it could make it invalid
        // (a secret inside the base64 text itself) and hide the content.
        rewrite_base64_fields(value, &mut |bytes| self.redact_bytes(bytes));
        rewrite_strings(value, &mut |s| self.redact_if_found(s));
    }
}

/// The field Gitea uses for a webhook's stored `Authorization` header.
pub const AUTHORIZATION_HEADER_FIELD: &str = "authorization_header";

/// Replaces every non-empty `authorization_header` field, at any depth,
/// with `[REDACTED]`; returns how many were replaced.
///
/// Keyed on the field rather than on the operation, so the raw tool,
/// discover mode and operations added by a newer Gitea are covered too;
/// `Hook` is the only Gitea 1.27 schema with this field. An empty value is
/// left alone: Gitea 1.27.1 was observed to answer `""` on reads, and the
/// empty string tells the model no header is set without revealing one.
pub fn redact_authorization_headers(value: &mut Value) -> usize {
    match value {
        Value::Array(items) => items.iter_mut().map(redact_authorization_headers).sum(),
        Value::Object(map) => {
            let mut count = 0;
            for (key, v) in map.iter_mut() {
                if key.eq_ignore_ascii_case(AUTHORIZATION_HEADER_FIELD) {
                    let empty = match v {
                        Value::Null => true,
                        Value::String(s) => s.is_empty() || s == REDACTED,
                        _ => false,
                    };
                    if !empty {
                        *v = Value::String(REDACTED.to_owned());
                        count += 1;
                    }
                } else {
                    count += redact_authorization_headers(v);
                }
            }
            count
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use serde_json::json;

    /// F9: whatever the secret's alignment inside the encoded text, one of
    /// its encoded forms is found there.
    #[test]
    fn a_secret_encoded_inside_longer_text_is_redacted() {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
        let secret = "s3cr3t/token+with=odd chars";
        let r = Redactor::new([secret]);
        for prefix in ["", "a", "ab", "abc"] {
            let plain = format!("{prefix}{secret}~tail");
            for encoded in [
                STANDARD.encode(&plain),
                URL_SAFE_NO_PAD.encode(&plain),
                plain.bytes().map(|b| format!("{b:02x}")).collect(),
                plain.bytes().map(|b| format!("{b:02X}")).collect(),
            ] {
                let text = format!("leak: {encoded} end");
                let out = r.redact_str(&text);
                assert!(out.contains(REDACTED), "{prefix:?}: {text}");
            }
        }
        let percent = "s3cr3t%2Ftoken%2Bwith%3Dodd%20chars";
        assert!(r.redact_str(&format!("?q={percent}")).contains(REDACTED));
        assert!(
            r.redact_str(&format!("?q={}", percent.to_lowercase()))
                .contains(REDACTED)
        );
    }

    #[test]
    fn a_prepared_base_redacts_like_the_same_secrets_added_per_call() {
        let base = Redactor::builder().secret("gateway-own-secret").prepare();
        let r = base.clone().secret("per-call-token-1").build();
        let text = "gateway-own-secret and per-call-token-1";
        assert_eq!(r.redact_str(text), "[REDACTED] and [REDACTED]");
        assert_eq!(format!("{r:?}"), "Redactor { secrets: 2 }");
        assert_eq!(
            base.build().redact_str(text),
            "[REDACTED] and per-call-token-1"
        );
    }

    #[test]
    fn short_secrets_get_no_encoded_forms() {
        assert!(encoded_forms(b"abcdefg").is_empty());
        assert!(!encoded_forms(b"abcdefgh").is_empty());
    }

    #[test]
    fn secrets_are_replaced_in_values_keys_and_substrings() {
        let r = Redactor::new(["s3cr3t-token"]);
        let mut v = json!({"a": "x s3cr3t-token y", "s3cr3t-token": [1, {"b": "s3cr3t-token"}]});
        r.redact_value(&mut v);
        assert_eq!(
            v,
            json!({"a": "x [REDACTED] y", "[REDACTED]": [1, {"b": "[REDACTED]"}]})
        );
    }

    #[test]
    fn a_longer_secret_containing_a_shorter_one_is_replaced_whole() {
        let r = Redactor::new(["abcd", "abcdefgh"]);
        assert_eq!(r.redact_str("xabcdefghx"), "x[REDACTED]x");
        let r = Redactor::new(["abcdefgh", "abcd"]);
        assert_eq!(r.redact_str("xabcdefghx abcd"), "x[REDACTED]x [REDACTED]");
    }

    #[test]
    fn overlapping_secrets_leave_no_whole_secret() {
        let r = Redactor::new(["abcdef", "cdefgh"]);
        let out = r.redact_str("abcdefgh cdefgh");
        assert!(!out.contains("abcdef") && !out.contains("cdefgh"), "{out}");
    }

    #[test]
    fn tiny_secrets_are_not_searched_unless_asked() {
        let r = Redactor::new(["ab"]);
        assert_eq!(r.redact_str("abab"), "abab");
        assert!(r.is_empty());
        let r = Redactor::builder().secret_any_length("ab").build();
        assert_eq!(r.redact_str("xab"), "x[REDACTED]");
    }

    #[test]
    fn nothing_to_redact_borrows() {
        let r = Redactor::new(["secret-value"]);
        assert!(matches!(r.redact_str("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn two_secret_keys_in_one_object_both_survive_as_entries() {
        let r = Redactor::new(["key-one-secret", "key-two-secret"]);
        let mut v = json!({"key-one-secret": 1, "key-two-secret": 2});
        r.redact_value(&mut v);
        assert_eq!(v, json!({"[REDACTED]": 1, "[REDACTED] #2": 2}));
    }

    #[test]
    fn secrets_inside_base64_file_content_are_redacted() {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let r = Redactor::new(["s3cr3t-token"]);
        let mut v = json!({"encoding": "base64", "content": b64("TOKEN=s3cr3t-token\n")});
        r.redact_value(&mut v);
        assert_eq!(v["content"], b64("TOKEN=[REDACTED]\n"));
    }

    #[test]
    fn debug_never_shows_secrets() {
        let r = Redactor::new(["s3cr3t-token"]);
        assert_eq!(format!("{r:?}"), "Redactor { secrets: 1 }");
    }

    #[test]
    fn webhook_authorization_headers_are_redacted_when_set() {
        let mut v = json!([
            {"id": 1, "authorization_header": "Bearer abc", "config": {"url": "http://x"}},
            {"id": 2, "authorization_header": ""},
            {"id": 3, "authorization_header": null},
            {"id": 4, "nested": {"authorization_header": "Basic eDp5"}},
        ]);
        assert_eq!(redact_authorization_headers(&mut v), 2);
        assert_eq!(v[0]["authorization_header"], REDACTED);
        assert_eq!(v[1]["authorization_header"], "");
        assert_eq!(v[2]["authorization_header"], Value::Null);
        assert_eq!(v[3]["nested"]["authorization_header"], REDACTED);
    }
}
