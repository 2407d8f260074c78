//! The result envelope of ADR 0005: what Gitea answered, decoded and
//! labelled as untrusted, or a sanitized error. Pure: it is handed the
//! upstream response and returns JSON.

use base64::Engine;
use serde_json::{Value, json};

use super::call::GiteaCall;
use super::envelope_shell::EnvelopeShell;
use super::error::{ErrorKind, ToolError};
use super::executor::{UpstreamResponse, is_textual};
use super::hygiene::redaction::Redactor;
use crate::identity::Identity;

/// JSON nested deeper than this is returned as text, so later recursive
/// passes (redaction, masking) never recurse without bound.
pub const MAX_JSON_DEPTH: usize = 100;

/// Gitea error messages are cut to this many characters.
pub const MAX_ERROR_MESSAGE_CHARS: usize = 500;

/// The success envelope of a 2xx answer, decoded but not yet redacted,
/// as a tree: the [`EnvelopeShell`], the notice of a body cut at the read
/// limit, and `data` last. The benches' floor for the tree path; a result
/// is written by `hygiene::tool_result`.
pub fn decoded_envelope(
    identity: &Identity,
    call: &GiteaCall,
    response: &UpstreamResponse,
    max_binary_bytes: usize,
) -> Result<Value, ToolError> {
    let data = decode_body(response, max_binary_bytes)?;
    let (shell, truncation) = EnvelopeShell::new(identity, call, response);
    let mut envelope = serde_json::to_value(&shell).expect("a shell serializes");
    if let Some(obj) = envelope.as_object_mut() {
        if !truncation.is_empty() {
            obj.insert("truncated".into(), Value::Bool(true));
            obj.insert(
                "truncation".into(),
                serde_json::to_value(&truncation).expect("a notice serializes"),
            );
        }
        obj.insert("data".into(), data);
    }
    Ok(envelope)
}

/// The body when it is JSON the envelope parses: [`json_text`], nested at
/// most [`MAX_JSON_DEPTH`] levels. Whether it parses is the parser's to
/// say.
fn json_body(response: &UpstreamResponse) -> Option<&[u8]> {
    json_text(response).filter(|body| json_depth(body) <= MAX_JSON_DEPTH)
}

/// The body when it may be JSON: whole, non-empty, of a JSON (or
/// unlabelled) text type. Its depth is not checked: a reader of it
/// bounds the depth itself (the streamed result pass does) or uses
/// [`json_body`].
pub fn json_text(response: &UpstreamResponse) -> Option<&[u8]> {
    let content_type = response.content_type.as_deref();
    let looks_like_json = is_textual(content_type)
        && content_type.is_none_or(|ct| ct.to_ascii_lowercase().contains("json"));
    (looks_like_json && !response.body.is_empty() && !response.body_truncated)
        .then_some(&response.body[..])
}

/// Gitea's 2xx body as a value: `null` when empty, parsed JSON, a string
/// for text (and for a body of another type that is UTF-8 text, such as a
/// raw file Gitea labels `application/octet-stream`), or a binary's base64
/// object up to `max_binary_bytes`.
pub fn decode_body(
    response: &UpstreamResponse,
    max_binary_bytes: usize,
) -> Result<Value, ToolError> {
    if response.body.is_empty() {
        return Ok(Value::Null);
    }
    let content_type = response.content_type.as_deref();
    if !is_textual(content_type) {
        if !response.body_truncated
            && let Some(text) = crate::gitea::text_files::as_text(&response.body)
        {
            return Ok(Value::String(text.to_owned()));
        }
        if response.body_truncated || response.body.len() > max_binary_bytes {
            return Err(ToolError::new(
                ErrorKind::PayloadTooLarge,
                format!(
                    "the binary response is larger than MAX_BINARY_BYTES ({max_binary_bytes} bytes)"
                ),
            ));
        }
        return Ok(json!({
            "content_base64": base64::engine::general_purpose::STANDARD.encode(&response.body),
            "content_type": content_type,
            "size": response.body.len(),
        }));
    }
    if let Some(json) = json_body(response)
        && let Ok(value) = serde_json::from_slice::<Value>(json)
    {
        return Ok(value);
    }
    // Valid UTF-8 is the common case and validates much faster than the
    // lossy conversion, which only runs for broken text.
    let text = match std::str::from_utf8(&response.body) {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(&response.body).into_owned(),
    };
    Ok(Value::String(text))
}

/// The deepest nesting of arrays and objects in a JSON text, counted
/// without parsing (strings are skipped, escapes honoured). Strings are
/// most of a Gitea list's bytes, so they are skipped with `memchr` to the
/// next quote or backslash rather than byte by byte.
pub fn json_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut max, mut at) = (0usize, 0usize, 0usize);
    while at < bytes.len() {
        match bytes[at] {
            b'"' => match string_end(bytes, at + 1) {
                Some(end) => at = end,
                // An unterminated string runs to the end.
                None => return max,
            },
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at += 1;
    }
    max
}

/// The index of the quote that closes the string whose content starts at
/// `from`, honouring backslash escapes.
fn string_end(bytes: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let found = from + memchr::memchr2(b'"', b'\\', bytes.get(from..)?)?;
        if bytes[found] == b'"' {
            return Some(found);
        }
        // A backslash escapes the byte after it, whatever it is.
        from = found + 2;
    }
}

/// What Gitea said about a non-2xx answer: its JSON `message`, or a fixed
/// sentence naming the status. Raw: sanitize before showing it.
pub fn gitea_message(response: &UpstreamResponse) -> String {
    serde_json::from_slice::<Value>(&response.body)
        .ok()
        .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
        .filter(|m| !m.trim().is_empty())
        .unwrap_or_else(|| match response.status {
            300..=399 => "Gitea answered with a redirect, which the gateway does not follow".into(),
            status => format!("Gitea answered with HTTP {status}"),
        })
}

/// Exact redaction, control characters to spaces, and everything after an
/// `Authorization:` (or `"Authorization": `, `authorization=`) dropped.
/// No truncation yet: masking must see whole secrets first.
pub fn clean_message(message: &str, redactor: &Redactor) -> String {
    let redacted = redactor.redact_str(message);
    let mut clean: String = redacted
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if let Some(cut) = authorization_value_start(&clean) {
        clean.truncate(cut);
        clean.push_str(" [REDACTED]");
    }
    clean
}

/// Where the value of the first `Authorization` header-like assignment
/// starts (just after its `:` or `=`).
fn authorization_value_start(text: &str) -> Option<usize> {
    const NAME: &str = "authorization";
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(pos) = lower[from..].find(NAME) {
        let after = from + pos + NAME.len();
        let rest = &lower[after..];
        let skipped = rest.len() - rest.trim_start_matches(['"', '\'', ' ']).len();
        if matches!(rest.as_bytes().get(skipped), Some(b':' | b'=')) {
            return Some(after + skipped + 1);
        }
        from = after;
    }
    None
}

/// Cuts a message to [`MAX_ERROR_MESSAGE_CHARS`] characters.
pub fn truncate_message(mut message: String) -> String {
    if message.chars().count() > MAX_ERROR_MESSAGE_CHARS {
        message = message.chars().take(MAX_ERROR_MESSAGE_CHARS).collect();
        message.push('…');
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SecretDetectionMode;
    use crate::gitea::envelope_shell::UNTRUSTED_CONTENT_NOTICE;
    use crate::gitea::hygiene::bounds::Bounds;
    use crate::gitea::hygiene::{ResultPolicy, gitea_error, tool_result};
    use crate::identity::IdentityMode;
    use bytes::Bytes;
    use secrecy::SecretString;

    fn identity() -> Identity {
        Identity {
            login: Some("admin".into()),
            mode: IdentityMode::Bearer,
            token: SecretString::from("tok-abcdef"),
            refresh_token: None,
            renewal: None,
            access: crate::identity::Access::ReadWrite,
        }
    }

    /// The shipped pipeline (`hygiene::tool_result`) with masking off and
    /// no bounds: decoding and exact redaction, as this module's tests see them.
    fn envelope(
        identity: &Identity,
        call: &GiteaCall,
        response: &UpstreamResponse,
        max_binary_bytes: usize,
        redactor: &Redactor,
    ) -> Result<Value, ToolError> {
        let policy = ResultPolicy {
            mode: SecretDetectionMode::Off,
            bounds: Bounds {
                max_items: usize::MAX,
                max_chars: usize::MAX,
            },
            max_binary_bytes,
        };
        tool_result(
            identity,
            call,
            response,
            &policy,
            redactor,
            None,
            crate::gitea::hygiene::ResultView::Full,
        )
        .map(|text| serde_json::from_str(&text).expect("the envelope is JSON"))
    }

    fn upstream_error(response: &UpstreamResponse, redactor: &Redactor) -> ToolError {
        gitea_error(response, redactor, SecretDetectionMode::Off)
    }

    fn sanitize_message(message: &str, redactor: &Redactor) -> String {
        truncate_message(clean_message(message, redactor))
    }

    fn call() -> GiteaCall {
        GiteaCall {
            method: http::Method::GET,
            path: "/repos/o/r/issues".into(),
            route: "/repos/{owner}/{repo}/issues".into(),
            query: vec![("page".into(), "1".into()), ("limit".into(), "30".into())],
            body: crate::gitea::call::CallBody::None,
            sudo: None,
        }
    }

    fn response(status: u16, content_type: &str, body: &[u8]) -> UpstreamResponse {
        UpstreamResponse {
            status,
            content_type: Some(content_type.into()),
            total_count: None,
            link: None,
            body: Bytes::copy_from_slice(body),
            body_truncated: false,
        }
    }

    #[test]
    fn success_envelope_has_every_field_of_the_adr() {
        let mut resp = response(200, "application/json", br#"[{"id":1}]"#);
        resp.total_count = Some(120);
        resp.link = Some(r#"<http://g/api/v1/x?page=2&limit=30>; rel="next",<http://g/api/v1/x?page=4&limit=30>; rel="last""#.into());
        let env = envelope(&identity(), &call(), &resp, 100, &Redactor::default()).unwrap();
        assert_eq!(
            env,
            json!({
                "identity": {"login": "admin", "mode": "bearer"},
                "request": {"method": "GET", "path": "/repos/o/r/issues"},
                "status": 200,
                "pagination": {"page": 1, "limit": 30, "total_count": 120, "next_page": 2, "last_page": 4},
                "view": "full",
                "untrusted_content": UNTRUSTED_CONTENT_NOTICE,
                "data": [{"id": 1}],
            })
        );
    }

    #[test]
    fn text_bodies_are_returned_as_strings() {
        let env = envelope(
            &identity(),
            &call(),
            &response(200, "text/plain", b"hello"),
            100,
            &Redactor::default(),
        )
        .unwrap();
        assert_eq!(env["data"], "hello");
        assert_eq!(env["pagination"], Value::Null);
    }

    #[test]
    fn binary_bodies_are_base64_with_type_and_size() {
        let env = envelope(
            &identity(),
            &call(),
            &response(200, "image/png", &[0, 159, 146]),
            100,
            &Redactor::default(),
        )
        .unwrap();
        assert_eq!(
            env["data"],
            json!({"content_base64": "AJ+S", "content_type": "image/png", "size": 3})
        );
    }

    #[test]
    fn binary_above_the_limit_is_a_clear_error() {
        let err = envelope(
            &identity(),
            &call(),
            &response(200, "application/octet-stream", &[0xff; 11]),
            10,
            &Redactor::default(),
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::PayloadTooLarge);
    }

    #[test]
    fn empty_body_is_null_data() {
        let env = envelope(
            &identity(),
            &call(),
            &response(204, "", b""),
            100,
            &Redactor::default(),
        )
        .unwrap();
        assert_eq!(env["data"], Value::Null);
    }

    #[test]
    fn gitea_404_becomes_a_not_found_error_with_its_message() {
        let err = envelope(
            &identity(),
            &call(),
            &response(404, "application/json", br#"{"message":"The target couldn't be found.","url":"http://g/api/swagger","errors":[]}"#),
            100,
            &Redactor::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_json(),
            json!({"error": {"status": 404, "kind": "not_found", "message": "The target couldn't be found."}})
        );
    }

    #[test]
    fn error_messages_are_truncated_and_redacted() {
        let body = format!(r#"{{"message":"bad tok-abcdef {}"}}"#, "x".repeat(2000));
        let redactor = Redactor::new(["tok-abcdef"]);
        let err = upstream_error(
            &response(422, "application/json", body.as_bytes()),
            &redactor,
        );
        assert!(!err.message.contains("tok-abcdef"));
        assert!(err.message.chars().count() <= MAX_ERROR_MESSAGE_CHARS + 1);
        assert_eq!(err.kind, ErrorKind::ValidationFailed);
    }

    #[test]
    fn authorization_header_values_are_stripped_from_messages() {
        let cases = [
            (
                "failed: Authorization: token abc123",
                "failed: Authorization: [REDACTED]",
            ),
            (
                r#"hdr {"Authorization": "Bearer x"}"#,
                r#"hdr {"Authorization": [REDACTED]"#,
            ),
            ("authorization=basic x", "authorization= [REDACTED]"),
            ("no authorization needed", "no authorization needed"),
        ];
        for (input, expected) in cases {
            assert_eq!(sanitize_message(input, &Redactor::default()), expected);
        }
    }

    #[test]
    fn the_calling_token_is_redacted_from_success_data() {
        let resp = response(200, "application/json", br#"{"sha1":"tok-abcdef"}"#);
        let redactor = Redactor::new(["tok-abcdef"]);
        let env = envelope(&identity(), &call(), &resp, 100, &redactor).unwrap();
        assert_eq!(env["data"]["sha1"], "[REDACTED]");
    }

    #[test]
    fn json_deeper_than_the_limit_is_returned_as_text() {
        let deep = format!(
            "{}{}",
            "[".repeat(MAX_JSON_DEPTH + 1),
            "]".repeat(MAX_JSON_DEPTH + 1)
        );
        let env = envelope(
            &identity(),
            &call(),
            &response(200, "application/json", deep.as_bytes()),
            100,
            &Redactor::default(),
        )
        .unwrap();
        assert!(env["data"].is_string());
    }

    #[test]
    fn a_text_body_cut_at_the_read_limit_says_so() {
        let mut resp = response(200, "application/json", br#"{"a": "unterminated"#);
        resp.body_truncated = true;
        let env = envelope(&identity(), &call(), &resp, 100, &Redactor::default()).unwrap();
        assert!(env["data"].is_string());
        assert_eq!(env["truncated"], true);
        assert_eq!(env["truncation"], json!({"upstream_body_limit_bytes": 19}));
    }

    /// The byte-by-byte count that `json_depth` must agree with.
    fn json_depth_reference(bytes: &[u8]) -> usize {
        let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
        for &b in bytes {
            if in_string {
                match (escaped, b) {
                    (true, _) => escaped = false,
                    (false, b'\\') => escaped = true,
                    (false, b'"') => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    max = max.max(depth);
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        max
    }

    proptest::proptest! {
        /// Any bytes at all (valid JSON or not, escapes at the very end):
        /// the fast count is the byte-by-byte one.
        #[test]
        fn json_depth_agrees_with_the_byte_by_byte_count(
            bytes in proptest::collection::vec(proptest::sample::select(b"[]{}\"\\ab,:".to_vec()), 0..200),
        ) {
            proptest::prop_assert_eq!(json_depth(&bytes), json_depth_reference(&bytes));
        }
    }

    #[test]
    fn json_depth_skips_brackets_inside_strings() {
        assert_eq!(json_depth(br#"{"a":"[[[[\"]]"}"#), 1);
        assert_eq!(json_depth(b"[[1],[2,[3]]]"), 3);
    }
}
