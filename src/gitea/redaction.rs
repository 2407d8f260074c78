//! Exact redaction: every known secret is replaced with `[REDACTED]`
//! wherever it occurs in a result, in string values and in object keys,
//! including inside longer strings.

use serde_json::{Map, Value};

pub const REDACTED: &str = "[REDACTED]";

/// Secrets shorter than this are not searched for: they would match
/// ordinary text and could not be meaningful credentials.
const MIN_SECRET_LEN: usize = 4;

/// The set of values to redact from one result.
#[derive(Debug, Default, Clone)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    pub fn new<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .map(Into::into)
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .collect();
        // Longest first, so a secret that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self { secrets }
    }

    pub fn redact_str(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    /// Redacts in place, recursing through arrays and objects.
    pub fn redact_value(&self, value: &mut Value) {
        if self.secrets.is_empty() {
            return;
        }
        match value {
            Value::String(s)
                if self
                    .secrets
                    .iter()
                    .any(|secret| s.contains(secret.as_str())) =>
            {
                *s = self.redact_str(s);
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_value(v)),
            Value::Object(map) => {
                let needs_key_change = map.keys().any(|k| {
                    self.secrets
                        .iter()
                        .any(|secret| k.contains(secret.as_str()))
                });
                if needs_key_change {
                    let old = std::mem::take(map);
                    let mut fresh = Map::with_capacity(old.len());
                    for (k, v) in old {
                        fresh.insert(self.redact_str(&k), v);
                    }
                    *map = fresh;
                }
                map.values_mut().for_each(|v| self.redact_value(v));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    }

    #[test]
    fn tiny_secrets_are_not_searched() {
        let r = Redactor::new(["ab"]);
        assert_eq!(r.redact_str("abab"), "abab");
    }
}
