//! Text files as text. Gitea's contents API returns a file's bytes as
//! base64 (`"encoding": "base64", "content": "…"`), which a model must
//! decode to read a README, at a cost in tokens and errors. In the compact
//! view a base64 `content` that decodes to UTF-8 text becomes that text,
//! and its `encoding` says `utf-8`; binary content stays base64. Bodies of
//! a non-text type that are UTF-8 text (a raw file Gitea labels
//! `application/octet-stream`) are text too (`envelope::decode_body`).
//! Pure.

use base64::Engine;
use serde_json::Value;

/// `bytes` as text when they are UTF-8 without NUL bytes (a NUL marks
/// binary content, as git's own heuristic does).
pub fn as_text(bytes: &[u8]) -> Option<&str> {
    if memchr::memchr(0, bytes).is_some() {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

/// Decodes, at any depth of `value`, every object's base64 `content`
/// that is UTF-8 text.
pub fn decode_text_files(value: &mut Value) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(decode_text_files),
        Value::Object(map) => {
            let is_base64 = map
                .get("encoding")
                .and_then(Value::as_str)
                .is_some_and(|e| e.eq_ignore_ascii_case("base64"));
            if is_base64
                && let Some(Value::String(content)) = map.get("content")
                && let Some(text) = decode(content)
            {
                map.insert("content".into(), Value::String(text));
                map.insert("encoding".into(), Value::String("utf-8".into()));
            }
            map.values_mut().for_each(decode_text_files);
        }
        _ => {}
    }
}

/// The text a base64 string holds, if it is text. Gitea wraps nothing, but
/// other encoders break lines: whitespace is ignored.
fn decode(content: &str) -> Option<String> {
    let compact: String = content.split_whitespace().collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact)
        .ok()?;
    as_text(&bytes)?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn a_utf8_file_is_decoded_to_text() {
        let mut file = json!({"name": "README.md", "encoding": "base64",
                              "content": b64("# Hello\nÜnïcode ✓\n".as_bytes()), "sha": "abc", "size": 21});
        decode_text_files(&mut file);
        assert_eq!(file["content"], "# Hello\nÜnïcode ✓\n");
        assert_eq!(file["encoding"], "utf-8");
        assert_eq!(file["sha"], "abc");
    }

    #[test]
    fn binary_content_stays_base64() {
        for bytes in [&[0x89, b'P', b'N', b'G', 0, 1][..], &[0xff, 0xfe, 0x41][..]] {
            let mut file = json!({"encoding": "base64", "content": b64(bytes)});
            let before = file.clone();
            decode_text_files(&mut file);
            assert_eq!(file, before);
        }
    }

    #[test]
    fn files_inside_lists_and_wrappers_are_decoded() {
        let mut listing =
            json!({"file_contents": [{"encoding": "base64", "content": b64(b"a\n")}]});
        decode_text_files(&mut listing);
        assert_eq!(listing["file_contents"][0]["content"], "a\n");
    }

    #[test]
    fn invalid_base64_is_left_as_it_came() {
        let mut file = json!({"encoding": "base64", "content": "not base64!"});
        let before = file.clone();
        decode_text_files(&mut file);
        assert_eq!(file, before);
    }

    #[test]
    fn text_means_utf8_without_nul() {
        assert_eq!(as_text(b"plain\n"), Some("plain\n"));
        assert_eq!(as_text(b"a\0b"), None);
        assert_eq!(as_text(&[0xc3, 0x28]), None);
    }
}
