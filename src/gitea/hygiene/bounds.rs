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
//!
//! The bounds are applied where the envelope is written
//! ([`bounded_envelope`]): the data arrives as text (the transcoder's, or
//! the tree path's serialization), already cut to the item bound.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

/// The two bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub max_items: usize,
    pub max_chars: usize,
}

/// The data of a success envelope, ready to be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataText {
    /// Compact JSON text (a list or object from Gitea, or a binary's
    /// base64 object).
    Json(String),
    /// A text body, written as one JSON string.
    Text(String),
}

impl DataText {
    /// A decoded body as the tree path holds it.
    pub fn from_value(data: Value) -> Self {
        match data {
            Value::String(text) => Self::Text(text),
            other => Self::Json(other.to_string()),
        }
    }

    /// Bytes of its text (before escaping).
    fn len(&self) -> usize {
        match self {
            Self::Json(text) | Self::Text(text) => text.len(),
        }
    }

    /// Characters it takes in the envelope.
    fn serialized_chars(&self) -> usize {
        match self {
            Self::Json(json) => char_count(json),
            Self::Text(text) => serialized_chars(text.as_str()),
        }
    }
}

/// Keeps the first `max_items` items of a list; returns how many went.
#[cfg(test)]
pub fn cut_items(data: &mut Value, max_items: usize) -> usize {
    match data {
        Value::Array(items) if items.len() > max_items => {
            let omitted = items.len() - max_items;
            items.truncate(max_items);
            omitted
        }
        _ => 0,
    }
}

/// The bounds' notices, written as `"truncated": true, "truncation":
/// {...}` after the shell's fields and before `data`, in this order; a
/// field left `None` is not written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Truncation {
    /// Gitea's text body was longer than the executor reads: the bytes read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream_body_limit_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items_returned: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items_omitted: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_format: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_chars_omitted: Option<usize>,
}

impl Truncation {
    /// True when nothing was cut: no notice is written.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// `"truncated":true,"truncation":{...}`, or nothing.
    fn notice(&self) -> String {
        if self.is_empty() {
            return String::new();
        }
        let fields = serde_json::to_string(self).expect("the notice serializes");
        format!(r#""truncated":true,"truncation":{fields}"#)
    }
}

/// The envelope's text: `shell` (every field but `data` and the notices,
/// in order: it must serialize as a JSON object, as the envelope's shell
/// and the tests' `Value` objects do), the notices of both bounds after
/// `truncation`'s, then `data` (`omitted_items` already left out of it by
/// the item bound), cut when the whole is longer than `max_chars`.
pub fn bounded_envelope<S: Serialize + ?Sized>(
    shell: &S,
    mut truncation: Truncation,
    data: DataText,
    omitted_items: usize,
    bounds: Bounds,
) -> String {
    if omitted_items > 0 {
        truncation.items_returned = Some(bounds.max_items);
        truncation.items_omitted = Some(omitted_items);
    }
    // The bound counts the shell on the text written here.
    let mut out = serde_json::to_string(shell).expect("the shell serializes");
    if out.pop() != Some('}') {
        unreachable!("the shell is a JSON object");
    }
    let shell_chars = char_count(&out) + "}".len();
    let data = bound_chars(shell_chars, &mut truncation, data, bounds.max_chars);
    let notice = truncation.notice();
    out.reserve(notice.len() + DATA_FIELD_CHARS + data.len() + 2);
    push_field(&mut out, &notice);
    // `data` goes last, after every notice: a reader meets them first.
    push_field(&mut out, "\"data\":");
    match data {
        DataText::Json(json) => out.push_str(&json),
        DataText::Text(text) => {
            out.push_str(&serde_json::to_string(&text).expect("a string serializes"));
        }
    }
    out.push('}');
    out
}

/// Adds one field's text to an object being written (open, its `}` not
/// yet written), with the comma when a field came before.
fn push_field(out: &mut String, field: &str) {
    if field.is_empty() {
        return;
    }
    if !out.ends_with('{') {
        out.push(',');
    }
    out.push_str(field);
}

/// `"data":` and the comma before it.
const DATA_FIELD_CHARS: usize = r#","data":"#.len();

/// The data as it fits the character bound: whole, or the start of its
/// text as a string, with the notices in `truncation`. `shell_chars` is
/// the shell's serialized length.
fn bound_chars(
    shell_chars: usize,
    truncation: &mut Truncation,
    data: DataText,
    max_chars: usize,
) -> DataText {
    let whole = shell_chars + notice_chars(truncation) + DATA_FIELD_CHARS + data.serialized_chars();
    if whole <= max_chars {
        return data;
    }
    let (format, text) = match data {
        DataText::Text(text) => ("text", text),
        DataText::Json(json) => ("json", json),
    };
    let total = text.chars().count();
    truncation.max_chars = Some(max_chars);
    truncation.data_format = Some(format);
    // `total` has at least as many digits as the final count, so the
    // overhead measured with it is an upper bound.
    truncation.data_chars_omitted = Some(total);
    let overhead = shell_chars + notice_chars(truncation) + DATA_FIELD_CHARS + r#""""#.len();
    let budget = max_chars.saturating_sub(overhead);
    let prefix = escaped_prefix(&text, budget).to_owned();
    truncation.data_chars_omitted = Some(total - prefix.chars().count());
    DataText::Text(prefix)
}

/// Characters the notice takes, with its comma.
fn notice_chars(truncation: &Truncation) -> usize {
    let notice = truncation.notice();
    if notice.is_empty() {
        0
    } else {
        ",".len() + char_count(&notice)
    }
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

/// Unicode scalar values in `text`, counted on its bytes (as a sum, which
/// the compiler vectorizes: this runs over every byte of a big result).
fn char_count(text: &str) -> usize {
    text.bytes().map(|b| usize::from(!is_continuation(b))).sum()
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The envelope `bounded_envelope` writes around `data`, parsed.
    fn bounded(mut data: Value, bounds: Bounds) -> Value {
        let shell = json!({"status": 200, "untrusted_content": "notice"});
        let Value::Object(shell) = shell else {
            unreachable!()
        };
        let omitted = cut_items(&mut data, bounds.max_items);
        let text = bounded_envelope(
            &shell,
            Truncation::default(),
            DataText::from_value(data),
            omitted,
            bounds,
        );
        serde_json::from_str(&text).expect("the envelope is JSON")
    }

    fn envelope(data: Value) -> Value {
        json!({"status": 200, "untrusted_content": "notice", "data": data})
    }

    /// The test shell's fields, the notices, then `data`.
    const NOTICED_KEYS: [&str; 5] = [
        "status",
        "untrusted_content",
        "truncated",
        "truncation",
        "data",
    ];

    fn keys_of(v: &Value) -> Vec<&str> {
        v.as_object().unwrap().keys().map(String::as_str).collect()
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
        let v = bounded(json!([1, 2, 3]), LOOSE);
        assert_eq!(v, envelope(json!([1, 2, 3])));
    }

    #[test]
    fn long_lists_keep_their_first_items_and_say_how_many_went() {
        let v = bounded(json!((0..120).collect::<Vec<_>>()), LOOSE);
        assert_eq!(v["data"].as_array().unwrap().len(), 100);
        assert_eq!(v["data"][99], 99);
        assert_eq!(v["truncated"], true);
        assert_eq!(
            v["truncation"],
            json!({"items_returned": 100, "items_omitted": 20})
        );
        assert_eq!(keys_of(&v), NOTICED_KEYS);
    }

    #[test]
    fn nested_lists_are_not_item_bounded() {
        let v = bounded(json!({"items": (0..120).collect::<Vec<_>>()}), LOOSE);
        assert!(v.get("truncated").is_none());
    }

    #[test]
    fn an_oversized_object_becomes_a_truncated_json_string_within_the_bound() {
        let big: Vec<Value> = (0..50)
            .map(|i| json!({"n": i, "body": "q\"uote\\ \n".repeat(40)}))
            .collect();
        let full_data = Value::Array(big.clone()).to_string();
        let v = bounded(
            Value::Array(big),
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
        let v = bounded(
            Value::String(text.clone()),
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
        let v = bounded(
            Value::Array(items),
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
    fn a_body_cut_at_the_read_limit_and_at_the_character_bound_says_both_within_the_bound() {
        let shell = json!({"status": 200, "untrusted_content": "notice"});
        let truncation = Truncation {
            upstream_body_limit_bytes: Some(16_777_216),
            ..Truncation::default()
        };
        let text = "line \"quoted\"\n".repeat(500);
        let bounds = Bounds {
            max_items: 100,
            max_chars: 1_000,
        };
        let written = bounded_envelope(&shell, truncation, DataText::Text(text.clone()), 0, bounds);
        assert!(
            written.chars().count() <= 1_000,
            "{}",
            written.chars().count()
        );
        let v: Value = serde_json::from_str(&written).expect("the envelope is JSON");
        assert_eq!(keys_of(&v), NOTICED_KEYS);
        let t = &v["truncation"];
        assert_eq!(t["upstream_body_limit_bytes"], 16_777_216);
        assert_eq!(t["data_format"], "text");
        let data = v["data"].as_str().unwrap();
        assert!(text.starts_with(data));
        assert_eq!(
            t["data_chars_omitted"],
            text.chars().count() - data.chars().count()
        );
    }

    #[test]
    fn counting_matches_serializing() {
        let v = json!({"a": "é\"\u{1}", "b": [1, 2.5, null, true]});
        assert_eq!(serialized_chars(&v), v.to_string().chars().count());
        let data = DataText::Json(v.to_string());
        assert_eq!(data.serialized_chars(), v.to_string().chars().count());
    }

    #[test]
    fn escaped_prefix_respects_the_budget_in_escaped_characters() {
        assert_eq!(escaped_prefix("ab\"c", 3), "ab");
        assert_eq!(escaped_prefix("ab\"c", 4), "ab\"");
        assert_eq!(escaped_prefix("a\u{1}b", 6), "a");
        assert_eq!(escaped_prefix("ééé", 2), "éé");
    }
}
