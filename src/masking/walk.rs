//! One walk over the text of a JSON document, shared by the passes that
//! rewrite text (exact redaction, pattern masking): every string value,
//! every object key, and the decoded bytes of Gitea's base64 file fields.
//!
//! Keys are rewritten without losing entries: two keys that become equal
//! (two different secrets used as keys, both now `[REDACTED]`) are kept
//! apart with a numbered suffix instead of one overwriting the other.
//!
//! Recursion is bounded: the envelope only parses JSON nested at most
//! `MAX_JSON_DEPTH` (100) levels, and serde_json refuses deeper input.

use base64::Engine;
use serde_json::{Map, Value};

/// Calls `f` on every string value and object key; where it returns
/// `Some`, the text is replaced.
pub fn rewrite_strings<F>(value: &mut Value, f: &mut F)
where
    F: FnMut(&str) -> Option<String>,
{
    match value {
        Value::String(s) => {
            if let Some(new) = f(s) {
                *s = new;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_strings(v, f)),
        Value::Object(map) => {
            rewrite_keys(map, f);
            map.values_mut().for_each(|v| rewrite_strings(v, f));
        }
        _ => {}
    }
}

/// Calls `f` on every string value and object key until it returns `true`.
pub fn any_string<F>(value: &Value, f: &mut F) -> bool
where
    F: FnMut(&str) -> bool,
{
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().any(|v| any_string(v, f)),
        Value::Object(map) => map.iter().any(|(k, v)| f(k) || any_string(v, f)),
        _ => false,
    }
}

fn rewrite_keys<F>(map: &mut Map<String, Value>, f: &mut F)
where
    F: FnMut(&str) -> Option<String>,
{
    // Allocates only when a key changes, which is rare.
    let mut renamed: Vec<(usize, String)> = Vec::new();
    for (i, key) in map.keys().enumerate() {
        if let Some(new) = f(key) {
            renamed.push((i, new));
        }
    }
    if renamed.is_empty() {
        return;
    }
    let old = std::mem::take(map);
    let mut renamed = renamed.into_iter().peekable();
    let mut fresh = Map::with_capacity(old.len());
    for (i, (key, v)) in old.into_iter().enumerate() {
        let key = match renamed.peek() {
            Some((j, _)) if *j == i => renamed.next().map(|(_, k)| k).unwrap_or(key),
            _ => key,
        };
        let key = unique_key(&fresh, key);
        fresh.insert(key, v);
    }
    *map = fresh;
}

/// `key`, or `key #2`, `key #3`, … when the map already has it.
fn unique_key(map: &Map<String, Value>, key: String) -> String {
    if !map.contains_key(&key) {
        return key;
    }
    (2..)
        .map(|n| format!("{key} #{n}"))
        .find(|candidate| !map.contains_key(candidate))
        .expect("an unused suffix exists")
}

/// The fields through which Gitea hands out file contents as base64: a
/// `content` next to `"encoding": "base64"` (contents and blob answers)
/// and any `content_base64` (wiki pages, and the envelope's own binary
/// data). A secret inside them is invisible to a text search, yet the
/// model can decode it, so the text passes look inside.
pub fn rewrite_base64_fields<F>(value: &mut Value, f: &mut F)
where
    F: FnMut(&[u8]) -> Option<Vec<u8>>,
{
    match value {
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_base64_fields(v, f)),
        Value::Object(map) => {
            let encoded_content = map
                .get("encoding")
                .and_then(Value::as_str)
                .is_some_and(|e| e.eq_ignore_ascii_case("base64"));
            for (key, v) in map.iter_mut() {
                let is_base64 =
                    key == "content_base64" || (encoded_content && key.as_str() == "content");
                match v {
                    Value::String(s) if is_base64 => rewrite_base64_string(s, f),
                    Value::Array(_) | Value::Object(_) => rewrite_base64_fields(v, f),
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// Calls `f` on the decoded bytes of every base64 field until it returns `true`.
pub fn any_base64_field<F>(value: &Value, f: &mut F) -> bool
where
    F: FnMut(&[u8]) -> bool,
{
    match value {
        Value::Array(items) => items.iter().any(|v| any_base64_field(v, f)),
        Value::Object(map) => {
            let encoded_content = map
                .get("encoding")
                .and_then(Value::as_str)
                .is_some_and(|e| e.eq_ignore_ascii_case("base64"));
            map.iter().any(|(key, v)| match v {
                Value::String(s)
                    if key == "content_base64" || (encoded_content && key == "content") =>
                {
                    decode(s).is_some_and(|bytes| f(&bytes))
                }
                Value::Array(_) | Value::Object(_) => any_base64_field(v, f),
                _ => false,
            })
        }
        _ => false,
    }
}

fn rewrite_base64_string<F>(s: &mut String, f: &mut F)
where
    F: FnMut(&[u8]) -> Option<Vec<u8>>,
{
    // Not valid base64: it is plain text to the model too, and the string
    // pass has already covered it.
    let Some(bytes) = decode(s) else { return };
    if let Some(new) = f(&bytes) {
        *s = base64::engine::general_purpose::STANDARD.encode(new);
    }
}

fn decode(s: &str) -> Option<Vec<u8>> {
    let engine = &base64::engine::general_purpose::STANDARD;
    match engine.decode(s) {
        Ok(bytes) => Some(bytes),
        // Some producers wrap base64 at 76 columns.
        Err(_) if s.contains(['\n', '\r']) => {
            let compact: String = s.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            engine.decode(compact).ok()
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn upper_x(s: &str) -> Option<String> {
        s.contains('x').then(|| s.replace('x', "X"))
    }

    #[test]
    fn values_and_keys_are_rewritten_at_every_depth() {
        let mut v = json!({"ax": ["x", {"k": "box", "x": 1}], "n": 2});
        rewrite_strings(&mut v, &mut upper_x);
        assert_eq!(v, json!({"aX": ["X", {"k": "boX", "X": 1}], "n": 2}));
    }

    #[test]
    fn keys_that_collide_after_rewriting_are_all_kept_in_order() {
        let mut v = json!({"a": 1, "x": 2, "X": 3, "b": 4});
        rewrite_strings(&mut v, &mut upper_x);
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["a", "X", "X #2", "b"]);
        assert_eq!(v["X"], 2);
        assert_eq!(v["X #2"], 3);
    }

    #[test]
    fn any_string_sees_keys_and_values() {
        let v = json!({"a": [{"needle": 1}]});
        assert!(any_string(&v, &mut |s| s == "needle"));
        assert!(!any_string(&v, &mut |s| s == "hay"));
    }

    #[test]
    fn base64_fields_are_decoded_rewritten_and_encoded_again() {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let mut v = json!([
            {"encoding": "base64", "content": b64("a x b")},
            {"content_base64": b64("x")},
            {"encoding": "none", "content": b64("x")},
            {"content_base64": "not base64!"},
        ]);
        let mut f = |b: &[u8]| {
            let s = String::from_utf8_lossy(b);
            upper_x(&s).map(String::into_bytes)
        };
        rewrite_base64_fields(&mut v, &mut f);
        assert_eq!(v[0]["content"], b64("a X b"));
        assert_eq!(v[1]["content_base64"], b64("X"));
        assert_eq!(v[2]["content"], b64("x"), "not declared base64");
        assert_eq!(v[3]["content_base64"], "not base64!");
        assert!(any_base64_field(&v, &mut |b| b == b"a X b"));
    }

    #[test]
    fn wrapped_base64_is_decoded() {
        let mut v = json!({"content_base64": "eA==\n"});
        let mut seen = Vec::new();
        rewrite_base64_fields(&mut v, &mut |b: &[u8]| {
            seen.push(b.to_vec());
            None
        });
        assert_eq!(seen, [b"x".to_vec()]);
    }
}
