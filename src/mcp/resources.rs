//! Gitea's files, issues, pull requests and reviews as MCP resources: the
//! templates a client offers its person (attach a file as context, with no
//! tool call), what a `gitea://` URI reads, and how the read's envelope
//! becomes resource contents. Pure: a read runs as a call of the operation
//! it names (`super::reads`), so the policy, the URL's surface, the grant's
//! scope, redaction, hidden characters, bounds and the audit entry are a
//! tool call's.
//!
//! rmcp 3.11 matches no URI templates (its resource router is empty), and
//! these five are fixed, so their reading is written here, against their
//! RFC 6570 forms.

use percent_encoding::percent_decode_str;
use serde_json::{Map, Value, json};

/// The scheme of every resource this server serves.
pub const SCHEME: &str = "gitea://";

/// `uri` as an error may echo it: cut to [`MAX_URI_BYTES`] (on a
/// character boundary, with `…`), so a long request is not sent back.
pub fn shown_uri(uri: &str) -> std::borrow::Cow<'_, str> {
    if uri.len() <= MAX_URI_BYTES {
        return uri.into();
    }
    let end = (0..=MAX_URI_BYTES)
        .rev()
        .find(|&i| uri.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}…", &uri[..end]).into()
}

/// What the `index` argument of a template or a prompt numbers, for its
/// completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbered {
    Issues,
    PullRequests,
}

/// One resource template: its RFC 6570 URI, name, and what it holds.
#[derive(Debug, Clone, Copy)]
pub struct Template {
    pub uri_template: &'static str,
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// `None` when it depends on the file.
    pub mime_type: Option<&'static str>,
    /// What its `{index}` numbers, if it has one.
    pub index: Option<Numbered>,
}

pub const TEMPLATES: [Template; 5] = [
    Template {
        uri_template: "gitea://{owner}/{repo}/contents/{+path}{?ref}",
        name: "repository_file",
        title: "Repository file",
        description: "A file of a repository at a branch, tag or commit (default: the default branch); a path ending in / lists a folder. Text comes as text, other files as a blob within MAX_BINARY_BYTES.",
        mime_type: None,
        index: None,
    },
    Template {
        uri_template: "gitea://{owner}/{repo}/issues/{index}",
        name: "issue",
        title: "Issue",
        description: "An issue of a repository by number, as the compact JSON envelope of gitea_issue_get_issue.",
        mime_type: Some(JSON),
        index: Some(Numbered::Issues),
    },
    Template {
        uri_template: "gitea://{owner}/{repo}/pulls/{index}",
        name: "pull_request",
        title: "Pull request",
        description: "A pull request by number, as the compact JSON envelope of gitea_repo_get_pull_request.",
        mime_type: Some(JSON),
        index: Some(Numbered::PullRequests),
    },
    Template {
        uri_template: "gitea://{owner}/{repo}/pulls/{index}/diff",
        name: "pull_request_diff",
        title: "Pull request diff",
        description: "The unified diff of a pull request, as text.",
        mime_type: Some(DIFF),
        index: Some(Numbered::PullRequests),
    },
    Template {
        uri_template: "gitea://{owner}/{repo}/pulls/{index}/reviews",
        name: "pull_request_reviews",
        title: "Pull request reviews",
        description: "The reviews of a pull request (state, reviewer, body), as a JSON envelope.",
        mime_type: Some(JSON),
        index: Some(Numbered::PullRequests),
    },
];

const JSON: &str = "application/json";
const DIFF: &str = "text/x-diff";

/// The longest URI read: a path of Gitea's tree depth with a ref.
pub const MAX_URI_BYTES: usize = 2048;

/// What a `gitea://` URI reads: one read-only operation with its
/// arguments, and how its answer becomes contents.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceRead {
    pub operation: &'static str,
    pub args: Map<String, Value>,
    pub shape: Shape,
}

/// How a read's answer is given as contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A file: its text (typed by its name), or its bytes as a blob.
    File,
    /// A JSON envelope, as it is.
    Envelope,
    /// Text of a known type (a diff).
    Text(&'static str),
}

/// Why a URI reads nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UriError {
    #[error("not a resource of this server: its URIs start with gitea://")]
    OtherScheme,
    #[error("the URI is longer than {MAX_URI_BYTES} bytes")]
    TooLong,
    #[error("no resource template of this server matches the URI")]
    NoTemplate,
    #[error("`{0}` is not a number")]
    NotANumber(String),
    #[error("the URI is not valid UTF-8 once percent-decoded")]
    NotUtf8,
}

/// Reads `uri` against [`TEMPLATES`].
pub fn parse(uri: &str) -> Result<ResourceRead, UriError> {
    if uri.len() > MAX_URI_BYTES {
        return Err(UriError::TooLong);
    }
    let rest = uri.strip_prefix(SCHEME).ok_or(UriError::OtherScheme)?;
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let segments: Vec<&str> = path.split('/').collect();
    let [owner, repo, kind, tail @ ..] = segments.as_slice() else {
        return Err(UriError::NoTemplate);
    };
    let mut args = Map::new();
    args.insert("owner".into(), json!(decode(owner)?));
    args.insert("repo".into(), json!(decode(repo)?));
    let number = |raw: &str| -> Result<Value, UriError> {
        raw.parse::<u64>()
            .map(|n| json!(n))
            .map_err(|_| UriError::NotANumber(raw.chars().take(40).collect()))
    };
    let read = |operation, args, shape| {
        Ok(ResourceRead {
            operation,
            args,
            shape,
        })
    };
    match (*kind, tail) {
        ("contents", path) => {
            let reference = query_value(query, "ref")?;
            if let Some(reference) = reference {
                args.insert("ref".into(), json!(reference));
            }
            let folder = path.is_empty() || path.last() == Some(&"");
            let filepath = decode(path.join("/").trim_end_matches('/'))?;
            if folder {
                if filepath.is_empty() {
                    return read("gitea_repo_get_contents_list", args, Shape::Envelope);
                }
                args.insert("filepath".into(), json!(filepath));
                return read("gitea_repo_get_contents", args, Shape::Envelope);
            }
            args.insert("filepath".into(), json!(filepath));
            read("gitea_repo_get_raw_file", args, Shape::File)
        }
        _ if !query.is_empty() => Err(UriError::NoTemplate),
        ("issues", [index]) => {
            args.insert("index".into(), number(index)?);
            read("gitea_issue_get_issue", args, Shape::Envelope)
        }
        ("pulls", [index]) => {
            args.insert("index".into(), number(index)?);
            read("gitea_repo_get_pull_request", args, Shape::Envelope)
        }
        ("pulls", [index, "diff"]) => {
            args.insert("index".into(), number(index)?);
            args.insert("diffType".into(), json!("diff"));
            read(
                "gitea_repo_download_pull_diff_or_patch",
                args,
                Shape::Text(DIFF),
            )
        }
        ("pulls", [index, "reviews"]) => {
            args.insert("index".into(), number(index)?);
            read("gitea_repo_list_pull_reviews", args, Shape::Envelope)
        }
        _ => Err(UriError::NoTemplate),
    }
}

fn decode(raw: &str) -> Result<String, UriError> {
    percent_decode_str(raw)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| UriError::NotUtf8)
}

/// The value of `name` in a URI's query (`ref=main`), decoded; a query
/// naming anything else matches no template.
fn query_value(query: &str, name: &str) -> Result<Option<String>, UriError> {
    let mut found = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some((key, value)) if key == name && !value.is_empty() => {
                found = Some(decode(value)?);
            }
            _ => return Err(UriError::NoTemplate),
        }
    }
    Ok(found)
}

/// The contents one read gives, from its envelope (`data` and what the
/// envelope says of it): for a [`Shape::File`], the text (typed by the
/// file's name) or the blob (typed as Gitea sent it); otherwise the
/// envelope's text as it is, untrusted label and all. What is not the
/// file's own bytes (the untrusted label, a cut) goes into `meta`.
#[derive(Debug, Clone, PartialEq)]
pub enum Contents {
    Text {
        mime_type: String,
        text: String,
        meta: Map<String, Value>,
    },
    Blob {
        mime_type: String,
        base64: String,
        meta: Map<String, Value>,
    },
}

/// The `meta` key of the label every resource read carries.
pub const UNTRUSTED_META: &str = "aegis/untrusted_content";

/// Makes [`Contents`] of `envelope` (a successful read's text) for
/// `read`.
pub fn contents(read: &ResourceRead, envelope: &str) -> Contents {
    let parsed: Value = serde_json::from_str(envelope).unwrap_or(Value::Null);
    let mut meta = Map::new();
    if let Some(notice) = parsed.get("untrusted_content") {
        meta.insert(UNTRUSTED_META.into(), notice.clone());
    }
    if parsed.get("truncated") == Some(&Value::Bool(true)) {
        meta.insert("aegis/truncated".into(), Value::Bool(true));
    }
    let data = parsed.get("data");
    match (read.shape, data) {
        (Shape::File, Some(Value::String(text))) => Contents::Text {
            mime_type: text_type(read.args.get("filepath").and_then(Value::as_str)),
            text: text.clone(),
            meta,
        },
        (Shape::File, Some(Value::Object(blob))) if blob.contains_key("content_base64") => {
            Contents::Blob {
                mime_type: blob
                    .get("content_type")
                    .and_then(Value::as_str)
                    .unwrap_or("application/octet-stream")
                    .to_owned(),
                base64: blob
                    .get("content_base64")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                meta,
            }
        }
        (Shape::Text(mime_type), Some(Value::String(text))) => Contents::Text {
            mime_type: mime_type.to_owned(),
            text: text.clone(),
            meta,
        },
        _ => Contents::Text {
            mime_type: JSON.to_owned(),
            text: envelope.to_owned(),
            meta: Map::new(),
        },
    }
}

/// A text file's media type by its name: what a client shows or renders.
fn text_type(path: Option<&str>) -> String {
    let extension = path
        .and_then(|p| p.rsplit_once('.'))
        .map(|(_, ext)| ext.to_ascii_lowercase());
    match extension.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("json") => JSON,
        Some("html" | "htm") => "text/html",
        Some("diff" | "patch") => DIFF,
        Some("yaml" | "yml") => "application/yaml",
        Some("toml") => "application/toml",
        Some("xml") => "application/xml",
        Some("csv") => "text/csv",
        _ => "text/plain",
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn args(read: &ResourceRead) -> Value {
        Value::Object(read.args.clone())
    }

    #[test]
    fn a_file_at_a_ref_reads_the_raw_file() {
        let read = parse("gitea://acme/app/contents/src/lib.rs?ref=v1.2").unwrap();
        assert_eq!(read.operation, "gitea_repo_get_raw_file");
        assert_eq!(
            args(&read),
            json!({"owner": "acme", "repo": "app", "ref": "v1.2", "filepath": "src/lib.rs"})
        );
        assert_eq!(read.shape, Shape::File);
    }

    #[test]
    fn percent_encoded_segments_are_decoded() {
        let read = parse("gitea://acme/app/contents/docs/read%20me.md").unwrap();
        assert_eq!(read.args["filepath"], "docs/read me.md");
    }

    #[test]
    fn a_folder_lists_its_entries() {
        assert_eq!(
            parse("gitea://acme/app/contents/src/").unwrap().operation,
            "gitea_repo_get_contents"
        );
        assert_eq!(
            parse("gitea://acme/app/contents/").unwrap().operation,
            "gitea_repo_get_contents_list"
        );
    }

    #[test]
    fn issues_pulls_diffs_and_reviews_by_number() {
        let cases = [
            ("gitea://a/b/issues/7", "gitea_issue_get_issue"),
            ("gitea://a/b/pulls/42", "gitea_repo_get_pull_request"),
            (
                "gitea://a/b/pulls/42/diff",
                "gitea_repo_download_pull_diff_or_patch",
            ),
            (
                "gitea://a/b/pulls/42/reviews",
                "gitea_repo_list_pull_reviews",
            ),
        ];
        for (uri, operation) in cases {
            let read = parse(uri).unwrap();
            assert_eq!(read.operation, operation, "{uri}");
            assert!(read.args["index"].is_u64(), "{uri}");
        }
    }

    #[test]
    fn what_matches_no_template_is_refused() {
        assert_eq!(parse("test://static-text"), Err(UriError::OtherScheme));
        assert_eq!(parse("gitea://a/b/wiki/x"), Err(UriError::NoTemplate));
        assert_eq!(parse("gitea://a/b/issues/7?x=1"), Err(UriError::NoTemplate));
        assert_eq!(
            parse("gitea://a/b/contents/f?sudo=root"),
            Err(UriError::NoTemplate)
        );
        assert!(matches!(
            parse("gitea://a/b/issues/seven"),
            Err(UriError::NotANumber(_))
        ));
        let long = format!("gitea://a/b/contents/{}", "x".repeat(MAX_URI_BYTES));
        assert_eq!(parse(&long), Err(UriError::TooLong));
    }

    #[test]
    fn every_template_reads_an_operation_that_only_reads() {
        let catalog = Catalog::bundled();
        for uri in [
            "gitea://a/b/contents/f.txt",
            "gitea://a/b/contents/src/",
            "gitea://a/b/contents/",
            "gitea://a/b/issues/1",
            "gitea://a/b/pulls/1",
            "gitea://a/b/pulls/1/diff",
            "gitea://a/b/pulls/1/reviews",
        ] {
            let read = parse(uri).unwrap();
            let op = catalog
                .get(read.operation)
                .expect("an operation of the catalog");
            assert!(op.is_read_only(), "{uri} reads through {}", read.operation);
        }
    }

    #[test]
    fn a_text_file_is_text_typed_by_its_name_with_the_label_in_meta() {
        let read = parse("gitea://a/b/contents/README.md").unwrap();
        let envelope = json!({"status": 200, "untrusted_content": "notice", "data": "# Hello"});
        let Contents::Text {
            mime_type,
            text,
            meta,
        } = contents(&read, &envelope.to_string())
        else {
            panic!("text expected");
        };
        assert_eq!(
            (mime_type.as_str(), text.as_str()),
            ("text/markdown", "# Hello")
        );
        assert_eq!(meta[UNTRUSTED_META], "notice");
    }

    #[test]
    fn a_binary_file_is_a_blob_of_giteas_type() {
        let read = parse("gitea://a/b/contents/logo.png").unwrap();
        let envelope =
            json!({"data": {"content_base64": "AJ+S", "content_type": "image/png", "size": 3}});
        assert!(matches!(
            contents(&read, &envelope.to_string()),
            Contents::Blob { mime_type, base64, .. } if mime_type == "image/png" && base64 == "AJ+S"
        ));
    }

    #[test]
    fn an_issue_is_its_envelope_untouched() {
        let read = parse("gitea://a/b/issues/1").unwrap();
        let envelope = json!({"untrusted_content": "notice", "data": {"number": 1}}).to_string();
        assert_eq!(
            contents(&read, &envelope),
            Contents::Text {
                mime_type: JSON.into(),
                text: envelope.clone(),
                meta: Map::new()
            }
        );
    }

    #[test]
    fn an_error_echoes_a_long_uri_cut_to_the_longest_read() {
        let long = format!("gitea://a/b/contents/{}", "é".repeat(MAX_URI_BYTES));
        let shown = shown_uri(&long);
        assert!(shown.len() <= MAX_URI_BYTES + '…'.len_utf8());
        assert!(shown.ends_with('…'));
        assert_eq!(shown_uri("gitea://a/b/issues/1"), "gitea://a/b/issues/1");
    }
}
