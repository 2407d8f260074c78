//! A request to Gitea, built from validated tool arguments: encoded path,
//! query pairs, body and Sudo. Building never touches the network; every
//! refusal happens here, before anything is sent.

use base64::Engine;
use serde_json::{Map, Value};

use super::encoding::{
    EncodingError, check_query_name, fill_route, validate_multipart_field, validate_sudo,
};
use crate::catalog::{BodyEncoding, Operation, ParamLocation};

/// The argument every tool takes to act as another user.
pub const SUDO_ARGUMENT: &str = "sudo";

/// The longest request target (`/api/v1` path and query, percent-encoded)
/// a call may have. nginx, often in front of Gitea, refuses a request line
/// over 8 KiB (`large_client_header_buffers`), and no Gitea route needs
/// one that long; a longer call is refused here, naming its argument,
/// before anything is sent.
pub const MAX_REQUEST_TARGET_BYTES: usize = 8 * 1024;

/// The body of a call.
#[derive(Debug, Clone, PartialEq)]
pub enum CallBody {
    None,
    Json(Value),
    Text(String),
    Multipart(Vec<MultipartPart>),
}

/// One multipart form field.
#[derive(Debug, Clone, PartialEq)]
pub enum MultipartPart {
    File {
        field: String,
        filename: String,
        content_type: Option<String>,
        content: Vec<u8>,
    },
    Text {
        field: String,
        value: String,
    },
}

/// A fully checked request, ready for the executor.
#[derive(Debug, Clone, PartialEq)]
pub struct GiteaCall {
    pub method: http::Method,
    /// Encoded path relative to `/api/v1`, as it is sent.
    pub path: String,
    /// The route template (`/repos/{owner}/{repo}/issues`), for the audit log.
    pub route: String,
    pub query: Vec<(String, String)>,
    pub body: CallBody,
    pub sudo: Option<String>,
}

/// Why arguments could not become a request. Messages name arguments, never
/// their values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error(transparent)]
    Encoding(#[from] EncodingError),
    #[error("argument `{0}` has a type that cannot be sent in a URL")]
    UnsupportedValue(String),
    #[error("argument `{0}` is not valid base64")]
    InvalidBase64(String),
    #[error("argument `{field}` would decode to more than {limit} bytes")]
    UploadTooLarge { field: String, limit: usize },
    #[error(
        "the request's path and query would be longer than {limit} bytes once encoded (the longest argument is `{longest}`)"
    )]
    TargetTooLong { longest: String, limit: usize },
}

impl From<&CallError> for super::ToolError {
    /// A request that could not be built, as the call's result: too large
    /// to send, or arguments that do not make one.
    fn from(err: &CallError) -> Self {
        use super::ErrorKind;
        match err {
            CallError::UploadTooLarge { .. } | CallError::TargetTooLong { .. } => {
                Self::new(ErrorKind::PayloadTooLarge, err.to_string())
            }
            _ => Self::invalid_arguments(err.to_string()),
        }
    }
}

/// Builds the request for `op` from arguments that already passed the
/// tool's JSON Schema.
pub fn build_call(
    op: &Operation,
    args: &Map<String, Value>,
    max_upload_bytes: usize,
) -> Result<GiteaCall, CallError> {
    let sudo = sudo_argument(args)?;
    let scalars: Vec<(&str, String)> = op
        .params
        .iter()
        .filter(|p| p.location == ParamLocation::Path)
        .filter_map(|p| args.get(&p.name).map(|v| (p.name.as_str(), v)))
        .map(|(name, v)| scalar_to_string(name, v).map(|s| (name, s)))
        .collect::<Result<_, _>>()?;
    let path = fill_route(&op.route, |name| {
        scalars
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    })?;

    let mut query = Vec::new();
    let mut multipart = Vec::new();
    let mut body = CallBody::None;
    for param in &op.params {
        let Some(value) = args.get(&param.name) else {
            continue;
        };
        match param.location {
            ParamLocation::Path => {}
            ParamLocation::Query => {
                check_query_name(&param.name)?;
                push_query(&mut query, &param.name, value)?;
            }
            ParamLocation::Body => {
                body = match (op.body_encoding, value) {
                    (Some(BodyEncoding::Text), Value::String(s)) => CallBody::Text(s.clone()),
                    _ => CallBody::Json(value.clone()),
                };
            }
            ParamLocation::FormData if param.is_file => {
                multipart.push(file_part(&param.name, value, max_upload_bytes)?);
            }
            ParamLocation::FormData => multipart.push(MultipartPart::Text {
                field: param.name.clone(),
                value: scalar_to_string(&param.name, value)?,
            }),
        }
    }
    if !multipart.is_empty() {
        body = CallBody::Multipart(multipart);
    }
    let path_lengths = scalars.iter().map(|(name, v)| (*name, v.len()));
    check_request_target(&path, &query, path_lengths)?;
    Ok(GiteaCall {
        method: op.method.clone(),
        path,
        route: op.route.clone(),
        query,
        body,
        sudo,
    })
}

/// The validated `sudo` argument, if any.
pub fn sudo_argument(args: &Map<String, Value>) -> Result<Option<String>, CallError> {
    match args.get(SUDO_ARGUMENT) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(login)) => {
            validate_sudo(login)?;
            Ok(Some(login.clone()))
        }
        Some(_) => Err(EncodingError::InvalidSudo.into()),
    }
}

/// Refuses a call whose encoded path and query pass
/// [`MAX_REQUEST_TARGET_BYTES`]. `path_arguments` gives the length of each
/// argument that went into the path, so the error can name the longest.
pub fn check_request_target<'a>(
    path: &str,
    query: &'a [(String, String)],
    path_arguments: impl Iterator<Item = (&'a str, usize)>,
) -> Result<(), CallError> {
    let encoded = |s: &str| {
        url::form_urlencoded::byte_serialize(s.as_bytes())
            .map(str::len)
            .sum::<usize>()
    };
    let pairs: Vec<(&str, usize)> = query
        .iter()
        .map(|(name, value)| (name.as_str(), encoded(name) + 1 + encoded(value)))
        .collect();
    let total = "/api/v1".len() + path.len() + pairs.iter().map(|(_, n)| n + 1).sum::<usize>();
    if total <= MAX_REQUEST_TARGET_BYTES {
        return Ok(());
    }
    let longest = path_arguments
        .chain(pairs)
        .max_by_key(|(_, n)| *n)
        .map_or("path", |(name, _)| name);
    Err(CallError::TargetTooLong {
        longest: longest.to_owned(),
        limit: MAX_REQUEST_TARGET_BYTES,
    })
}

/// Appends `name=value` (repeated for arrays, Gitea's `collectionFormat: multi`).
pub fn push_query(
    query: &mut Vec<(String, String)>,
    name: &str,
    value: &Value,
) -> Result<(), CallError> {
    match value {
        Value::Null => {}
        Value::Array(items) => {
            for item in items {
                query.push((name.to_owned(), scalar_to_string(name, item)?));
            }
        }
        other => query.push((name.to_owned(), scalar_to_string(name, other)?)),
    }
    Ok(())
}

fn scalar_to_string(name: &str, value: &Value) -> Result<String, CallError> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(CallError::UnsupportedValue(name.to_owned())),
    }
}

fn file_part(field: &str, value: &Value, limit: usize) -> Result<MultipartPart, CallError> {
    let text = |key: &str| value.get(key).and_then(Value::as_str);
    let encoded = text("content_base64").unwrap_or("");
    // Checked before decoding, so a huge upload costs no memory.
    let decoded_len = encoded.len() / 4 * 3;
    if decoded_len > limit.saturating_add(3) {
        return Err(CallError::UploadTooLarge {
            field: field.to_owned(),
            limit,
        });
    }
    let content = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| CallError::InvalidBase64(field.to_owned()))?;
    if content.len() > limit {
        return Err(CallError::UploadTooLarge {
            field: field.to_owned(),
            limit,
        });
    }
    let filename = text("filename").unwrap_or("upload").to_owned();
    validate_multipart_field("filename", &filename)?;
    let content_type = text("content_type").map(str::to_owned);
    if let Some(ct) = &content_type {
        validate_multipart_field("content_type", ct)?;
    }
    Ok(MultipartPart::File {
        field: field.to_owned(),
        filename,
        content_type,
        content,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use serde_json::json;

    fn op(name: &str) -> Operation {
        Catalog::bundled().get(name).unwrap().clone()
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn list_issues_puts_filters_in_the_query() {
        let call = build_call(
            &op("gitea_issue_list_issues"),
            &args(json!({"owner": "o", "repo": "r", "state": "open", "page": 2, "limit": 10})),
            1024,
        )
        .unwrap();
        assert_eq!(call.method, http::Method::GET);
        assert_eq!(call.path, "/repos/o/r/issues");
        assert_eq!(call.route, "/repos/{owner}/{repo}/issues");
        assert!(call.query.contains(&("state".into(), "open".into())));
        assert!(call.query.contains(&("page".into(), "2".into())));
        assert_eq!(call.body, CallBody::None);
    }

    fn target_too_long(result: Result<GiteaCall, CallError>) -> String {
        match result {
            Err(CallError::TargetTooLong { longest, limit }) => {
                assert_eq!(limit, MAX_REQUEST_TARGET_BYTES);
                longest
            }
            other => panic!("expected TargetTooLong, got {other:?}"),
        }
    }

    #[test]
    fn a_path_value_past_the_target_limit_is_refused_by_name() {
        let owner = "o".repeat(5 * 1024 * 1024);
        let result = build_call(
            &op("gitea_issue_list_issues"),
            &args(json!({"owner": owner, "repo": "r"})),
            1024,
        );
        assert_eq!(target_too_long(result), "owner");
    }

    #[test]
    fn a_query_value_is_measured_once_encoded() {
        // 3,000 × "é" is 6,000 bytes, under the limit as text; encoded
        // (`%C3%A9` each) it is 18,000.
        let q = "é".repeat(3000);
        let result = build_call(
            &op("gitea_issue_list_issues"),
            &args(json!({"owner": "o", "repo": "r", "q": q})),
            1024,
        );
        assert_eq!(target_too_long(result), "q");
    }

    #[test]
    fn a_call_just_under_the_target_limit_is_built() {
        let base = "/api/v1/repos/o/r/issues".len() + "q=".len();
        let q = "a".repeat(MAX_REQUEST_TARGET_BYTES - base - 1);
        let call = build_call(
            &op("gitea_issue_list_issues"),
            &args(json!({"owner": "o", "repo": "r", "q": q})),
            1024,
        )
        .unwrap();
        assert_eq!(call.query.len(), 1);
    }

    #[test]
    fn create_issue_sends_the_body_as_json() {
        let call = build_call(
            &op("gitea_issue_create_issue"),
            &args(json!({"owner": "o", "repo": "r", "body": {"title": "t"}})),
            1024,
        )
        .unwrap();
        assert_eq!(call.body, CallBody::Json(json!({"title": "t"})));
    }

    #[test]
    fn array_query_values_repeat_the_name() {
        let call = build_call(
            &op("gitea_notify_get_list"),
            &args(json!({"status-types": ["read", "pinned"]})),
            1024,
        )
        .unwrap();
        assert_eq!(
            call.query,
            vec![
                ("status-types".into(), "read".into()),
                ("status-types".into(), "pinned".into())
            ]
        );
    }

    #[test]
    fn sudo_with_a_newline_is_refused() {
        let err = build_call(
            &op("gitea_issue_list_issues"),
            &args(json!({"owner": "o", "repo": "r", "sudo": "bob\nX: y"})),
            1024,
        )
        .unwrap_err();
        assert_eq!(err, CallError::Encoding(EncodingError::InvalidSudo));
    }

    #[test]
    fn sudo_is_carried_separately_from_the_query() {
        let call = build_call(
            &op("gitea_issue_list_issues"),
            &args(json!({"owner": "o", "repo": "r", "sudo": "bob"})),
            1024,
        )
        .unwrap();
        assert_eq!(call.sudo.as_deref(), Some("bob"));
        assert!(call.query.iter().all(|(k, _)| k != "sudo"));
    }

    #[test]
    fn attachment_upload_is_decoded_into_a_multipart_file() {
        let call = build_call(
            &op("gitea_issue_create_issue_attachment"),
            &args(json!({"owner": "o", "repo": "r", "index": 1,
                "attachment": {"content_base64": "aGVsbG8=", "filename": "a.txt", "content_type": "text/plain"}})),
            1024,
        )
        .unwrap();
        let CallBody::Multipart(parts) = call.body else {
            panic!("expected multipart")
        };
        assert_eq!(
            parts,
            vec![MultipartPart::File {
                field: "attachment".into(),
                filename: "a.txt".into(),
                content_type: Some("text/plain".into()),
                content: b"hello".to_vec(),
            }]
        );
    }

    #[test]
    fn oversized_upload_is_refused_before_decoding() {
        let big = "A".repeat(4 * 1000);
        let err = build_call(
            &op("gitea_issue_create_issue_attachment"),
            &args(json!({"owner": "o", "repo": "r", "index": 1,
                "attachment": {"content_base64": big, "filename": "a.bin"}})),
            100,
        )
        .unwrap_err();
        assert!(matches!(err, CallError::UploadTooLarge { .. }));
    }

    #[test]
    fn upload_filename_with_a_quote_is_refused() {
        let err = build_call(
            &op("gitea_issue_create_issue_attachment"),
            &args(json!({"owner": "o", "repo": "r", "index": 1,
                "attachment": {"content_base64": "aGk=", "filename": "a\".txt"}})),
            100,
        )
        .unwrap_err();
        assert_eq!(
            err,
            CallError::Encoding(EncodingError::MultipartField("filename"))
        );
    }
}
