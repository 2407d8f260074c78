//! Size bounds on a success envelope, applied last, after redaction and
//! masking, so a cut can only split `[REDACTED]` or `[MASKED]`, never a
//! secret (a secret cut in half would no longer be recognised).
//!
//! 1. Items: a top-level `data` list longer than `MAX_TOOL_RESPONSE_ITEMS`
//!    keeps its first items.
//! 2. Characters: when the serialized envelope is longer than
//!    `MAX_TOOL_RESPONSE_CHARS`, `data` becomes a string holding the start
//!    of its text (the JSON text of Gitea's answer, or the text body
//!    itself), cut so that the whole envelope fits.
//!
//! Either way the envelope says so, before `data`:
//!
//! ```json
//! "truncated": true,
//! "truncation": {"items_returned": 100, "items_omitted": 20,
//!                "max_chars": 200000, "data_format": "json", "data_chars_omitted": 51234}
//! ```
//!
//! (`items_*` when the list was cut, the other three when the characters
//! were; the envelope adds `upstream_body_limit_bytes` when Gitea's body
//! was longer than the executor reads.) Lengths are Unicode scalar values
//! of the compact serialization, the form the transports send.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::{Map, Value};

/// The two bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub max_items: usize,
    pub max_chars: usize,
}

/// Applies both bounds to a success envelope (an object with `data`).
pub fn apply_bounds(envelope: &mut Value, bounds: Bounds) {
    let Some(obj) = envelope.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(items)) = obj.get_mut("data")
        && items.len() > bounds.max_items
    {
        let omitted = items.len() - bounds.max_items;
        items.truncate(bounds.max_items);
        note_truncation(obj, "items_returned", bounds.max_items.into());
        note_truncation(obj, "items_omitted", omitted.into());
    }
    bound_chars(obj, bounds.max_chars);
}

/// Records one fact in the envelope's `truncation` object, creating it
/// (with `"truncated": true`) just before `data`, so a reader meets the
/// notice before the cut content.
pub fn note_truncation(obj: &mut Map<String, Value>, key: &str, value: Value) {
    if let Some(Value::Object(truncation)) = obj.get_mut("truncation") {
        truncation.insert(key.to_owned(), value);
        return;
    }
    let at = obj.keys().position(|k| k == "data").unwrap_or(obj.len());
    let mut truncation = Map::new();
    truncation.insert(key.to_owned(), value);
    obj.shift_insert(at, "truncated".into(), Value::Bool(true));
    obj.shift_insert(at + 1, "truncation".into(), Value::Object(truncation));
}

fn bound_chars(obj: &mut Map<String, Value>, max_chars: usize) {
    let Some(slot) = obj.get_mut("data") else {
        return;
    };
    // Measured without building the text: the envelope with `data: null`,
    // then the data alone.
    let data = std::mem::take(slot);
    let shell = serialized_chars(&*obj);
    let data_chars = serialized_chars(&data);
    if shell - "null".len() + data_chars <= max_chars {
        obj.insert("data".into(), data);
        return;
    }
    let (format, total) = match &data {
        Value::String(s) => ("text", s.chars().count()),
        _ => ("json", data_chars),
    };
    note_truncation(obj, "max_chars", max_chars.into());
    note_truncation(obj, "data_format", format.into());
    // `total` has at least as many digits as the final count, so the
    // overhead measured with it is an upper bound.
    note_truncation(obj, "data_chars_omitted", total.into());
    obj.insert("data".into(), Value::String(String::new()));
    let overhead = serialized_chars(&*obj);
    let budget = max_chars.saturating_sub(overhead);

    let prefix = match data {
        Value::String(s) => escaped_prefix(&s, budget).to_owned(),
        other => {
            // The JSON text is never longer than needed: one character of
            // it costs at least one character once escaped.
            let text = serialized_prefix(&other, budget);
            escaped_prefix(&text, budget).to_owned()
        }
    };
    let omitted = total - prefix.chars().count();
    note_truncation(obj, "data_chars_omitted", omitted.into());
    obj.insert("data".into(), Value::String(prefix));
}

/// The longest prefix of `text` whose JSON-escaped form has at most
/// `budget` characters.
fn escaped_prefix(text: &str, budget: usize) -> &str {
    let mut used = 0;
    for (i, c) in text.char_indices() {
        used += escaped_width(c);
        if used > budget {
            return &text[..i];
        }
    }
    text
}

/// Characters serde_json writes for `c` inside a string.
fn escaped_width(c: char) -> usize {
    match c {
        '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
        c if (c as u32) < 0x20 => 6,
        _ => 1,
    }
}

/// Characters of the compact serialization, counted as it is written.
pub fn serialized_chars<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = CharCounter(0);
    // Writing to a counter cannot fail, and a `Value` always serializes.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// The first `max_chars` characters of the compact serialization; stops
/// serializing once they are written.
fn serialized_prefix(value: &Value, max_chars: usize) -> String {
    let mut writer = PrefixWriter {
        bytes: Vec::new(),
        chars: 0,
        max_chars,
    };
    // The writer refuses more than it needs; that error is expected.
    let _ = serde_json::to_writer(&mut writer, value);
    String::from_utf8(writer.bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

struct CharCounter(usize);

impl Write for CharCounter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.iter().filter(|&&b| !is_continuation(b)).count();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

struct PrefixWriter {
    bytes: Vec<u8>,
    chars: usize,
    max_chars: usize,
}

impl Write for PrefixWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for (i, &b) in buf.iter().enumerate() {
            if !is_continuation(b) {
                if self.chars == self.max_chars {
                    // Keep what fitted; the caller ignores the error.
                    return if i == 0 {
                        Err(io::Error::other("prefix complete"))
                    } else {
                        Ok(i)
                    };
                }
                self.chars += 1;
            }
            self.bytes.push(b);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn envelope(data: Value) -> Value {
        json!({"status": 200, "untrusted_content": "notice", "data": data})
    }

    fn len(v: &Value) -> usize {
        v.to_string().chars().count()
    }

    const LOOSE: Bounds = Bounds {
        max_items: 100,
        max_chars: 200_000,
    };

    #[test]
    fn within_bounds_nothing_changes() {
        let mut v = envelope(json!([1, 2, 3]));
        let before = v.clone();
        apply_bounds(&mut v, LOOSE);
        assert_eq!(v, before);
    }

    #[test]
    fn long_lists_keep_their_first_items_and_say_how_many_went() {
        let mut v = envelope(json!((0..120).collect::<Vec<_>>()));
        apply_bounds(&mut v, LOOSE);
        assert_eq!(v["data"].as_array().unwrap().len(), 100);
        assert_eq!(v["data"][99], 99);
        assert_eq!(v["truncated"], true);
        assert_eq!(
            v["truncation"],
            json!({"items_returned": 100, "items_omitted": 20})
        );
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "status",
                "untrusted_content",
                "truncated",
                "truncation",
                "data"
            ]
        );
    }

    #[test]
    fn nested_lists_are_not_item_bounded() {
        let mut v = envelope(json!({"items": (0..120).collect::<Vec<_>>()}));
        apply_bounds(&mut v, LOOSE);
        assert!(v.get("truncated").is_none());
    }

    #[test]
    fn an_oversized_object_becomes_a_truncated_json_string_within_the_bound() {
        let big: Vec<Value> = (0..50)
            .map(|i| json!({"n": i, "body": "q\"uote\\ \n".repeat(40)}))
            .collect();
        let mut v = envelope(Value::Array(big.clone()));
        let full_data = Value::Array(big).to_string();
        apply_bounds(
            &mut v,
            Bounds {
                max_items: 100,
                max_chars: 3_000,
            },
        );
        assert!(len(&v) <= 3_000, "{}", len(&v));
        let data = v["data"].as_str().unwrap();
        assert!(full_data.starts_with(data));
        assert_eq!(v["truncation"]["data_format"], "json");
        assert_eq!(v["truncation"]["max_chars"], 3_000);
        assert_eq!(
            v["truncation"]["data_chars_omitted"],
            full_data.chars().count() - data.chars().count()
        );
        // The budget is used: not more than one escaped character is wasted.
        assert!(len(&v) > 3_000 - 10, "{}", len(&v));
    }

    #[test]
    fn an_oversized_text_is_cut_as_text() {
        let text = "é\u{1}x".repeat(5_000);
        let mut v = envelope(Value::String(text.clone()));
        apply_bounds(
            &mut v,
            Bounds {
                max_items: 100,
                max_chars: 1_000,
            },
        );
        assert!(len(&v) <= 1_000);
        let data = v["data"].as_str().unwrap();
        assert!(text.starts_with(data));
        assert_eq!(v["truncation"]["data_format"], "text");
        assert_eq!(
            v["truncation"]["data_chars_omitted"],
            text.chars().count() - data.chars().count()
        );
    }

    #[test]
    fn both_bounds_report_together() {
        let items: Vec<Value> = (0..150)
            .map(|i| json!({"n": i, "pad": "x".repeat(100)}))
            .collect();
        let mut v = envelope(Value::Array(items));
        apply_bounds(
            &mut v,
            Bounds {
                max_items: 100,
                max_chars: 5_000,
            },
        );
        assert!(len(&v) <= 5_000);
        let t = &v["truncation"];
        assert_eq!(t["items_omitted"], 50);
        assert_eq!(t["data_format"], "json");
        assert!(v["data"].as_str().unwrap().starts_with("[{\"n\":0"));
    }

    #[test]
    fn counting_matches_serializing() {
        let v = json!({"a": "é\"\u{1}", "b": [1, 2.5, null, true]});
        assert_eq!(serialized_chars(&v), v.to_string().chars().count());
        assert_eq!(
            serialized_prefix(&v, 8),
            v.to_string().chars().take(8).collect::<String>()
        );
    }

    #[test]
    fn escaped_prefix_respects_the_budget_in_escaped_characters() {
        assert_eq!(escaped_prefix("ab\"c", 3), "ab");
        assert_eq!(escaped_prefix("ab\"c", 4), "ab\"");
        assert_eq!(escaped_prefix("a\u{1}b", 6), "a");
        assert_eq!(escaped_prefix("ééé", 2), "éé");
    }
}
