//! The raw tool `gitea_api_request`: any Gitea REST endpoint by method and
//! path, for the long tail. Its arguments are checked here and turned into
//! a [`GiteaCall`]; the sensitive-path denylist and the coarse virtual
//! names (`gitea_api_request:<METHOD>:<top-segment>`) live here too.

use serde_json::{Map, Value, json};

use super::call::{
    CallBody, CallError, GiteaCall, check_request_target, push_query, sudo_argument,
};
use super::encoding::{EncodingError, check_query_name};
use crate::catalog::Operation;

pub const RAW_TOOL_NAME: &str = "gitea_api_request";

const ALL_METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
const READ_METHODS: &[&str] = &["GET", "HEAD"];

/// Path fragments of admin and credential surfaces, refused for every
/// method (a GET there already leaks credentials) unless
/// `RAW_API_ALLOW_SENSITIVE=true`.
const SENSITIVE_FRAGMENTS: &[&str] = &[
    "tokens",
    "secrets",
    "hooks",
    "keys",
    "gpg_key",
    "applications/oauth2",
    "registration-token",
];

/// Why a raw call was refused before anything was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RawRequestError {
    #[error("`method` must be one of {0}")]
    Method(String),
    #[error("`path` {0}")]
    Path(&'static str),
    #[error("`query` must be an object of strings, numbers, booleans or arrays of those")]
    Query,
    #[error("`body` must be a JSON object")]
    Body,
    #[error(transparent)]
    Call(#[from] CallError),
}

impl From<EncodingError> for RawRequestError {
    fn from(err: EncodingError) -> Self {
        Self::Call(CallError::Encoding(err))
    }
}

/// The route a raw call's audit entry and spans name when its path
/// reaches no operation: never a segment as sent (issue 45, F8).
pub const UNMATCHED_ROUTE: &str = "/{path}";

/// A checked raw request.
#[derive(Debug, Clone, PartialEq)]
pub struct RawRequest {
    pub call: GiteaCall,
    /// First path segment below `/api/v1` (lowercased), for the virtual
    /// tool name; [`UNMATCHED_ROUTE`]'s `{path}` when it is no API area.
    pub top_segment: String,
}

impl RawRequest {
    /// This request as reaching `operation`: the call's route is its
    /// template (else [`UNMATCHED_ROUTE`]), and the virtual name's area
    /// is the first segment only when `known_area` (the path's first
    /// segment is one of the API's, not a value).
    pub fn resolved(mut self, operation: Option<&Operation>, known_area: bool) -> Self {
        self.call.route =
            operation.map_or_else(|| UNMATCHED_ROUTE.to_owned(), |op| op.route.clone());
        if !known_area {
            "{path}".clone_into(&mut self.top_segment);
        }
        self
    }

    /// `gitea_api_request:<METHOD>:<top-segment>`, which `DISABLED_TOOLS` may name.
    pub fn virtual_name(&self) -> String {
        format!(
            "{RAW_TOOL_NAME}:{}:{}",
            self.call.method.as_str(),
            self.top_segment
        )
    }

    /// True when the path touches an admin or credential surface.
    pub fn is_sensitive(&self) -> bool {
        let lower = self.call.path.to_ascii_lowercase();
        self.top_segment == "admin" || SENSITIVE_FRAGMENTS.iter().any(|f| lower.contains(f))
    }
}

/// Parses and checks the raw tool's arguments. Under `read_only` only GET
/// and HEAD are accepted.
pub fn parse_raw_request(
    args: &Map<String, Value>,
    read_only: bool,
) -> Result<RawRequest, RawRequestError> {
    let allowed = if read_only { READ_METHODS } else { ALL_METHODS };
    let method_name = args
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_ascii_uppercase)
        .filter(|m| allowed.contains(&m.as_str()))
        .ok_or_else(|| RawRequestError::Method(allowed.join(", ")))?;
    let method = http::Method::from_bytes(method_name.as_bytes())
        .map_err(|_| RawRequestError::Method(allowed.join(", ")))?;
    let raw_path = args
        .get("path")
        .and_then(Value::as_str)
        .ok_or(RawRequestError::Path("is required"))?;
    let path = normalize_path(raw_path)?;
    let top_segment = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();

    let mut query = Vec::new();
    match args.get("query") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (name, value) in map {
                check_query_name(name)?;
                if matches!(value, Value::Object(_)) {
                    return Err(RawRequestError::Query);
                }
                push_query(&mut query, name, value).map_err(|_| RawRequestError::Query)?;
            }
        }
        Some(_) => return Err(RawRequestError::Query),
    }
    check_request_target(&path, &query, std::iter::once(("path", path.len())))?;
    let body = match args.get("body") {
        None | Some(Value::Null) => CallBody::None,
        Some(value @ Value::Object(_)) => CallBody::Json(value.clone()),
        Some(_) => return Err(RawRequestError::Body),
    };
    Ok(RawRequest {
        call: GiteaCall {
            method,
            // The audit log and the spans record routes, never argument
            // values: the operation's template once resolved.
            route: UNMATCHED_ROUTE.to_owned(),
            path,
            query,
            body,
            sudo: sudo_argument(args)?,
        },
        top_segment,
    })
}

/// Accepts `/repos/o/r`, `repos/o/r`, `/api/v1/repos/o/r` or a full URL
/// (whose host and query are discarded), and refuses anything that could
/// reshape the route.
fn normalize_path(raw: &str) -> Result<String, RawRequestError> {
    let mut path = raw.trim();
    // Every rule runs on the text as given, before URL parsing: a URL
    // parser resolves `..` and `%2e%2e`, reads `\` as `/` and drops tabs
    // and newlines, so a route checked after parsing is not the route sent.
    let route_part = path.split(['?', '#']).next().unwrap_or_default();
    check_route_text(route_part)?;
    let owned;
    if path.starts_with("http://") || path.starts_with("https://") {
        let url = url::Url::parse(path).map_err(|_| RawRequestError::Path("is not a valid URL"))?;
        owned = url.path().to_owned();
        path = &owned;
        check_route_text(path)?;
    } else if path.contains(['?', '#']) {
        return Err(RawRequestError::Path(
            "must not contain `?` or `#` (put query parameters in `query`)",
        ));
    }
    let trimmed = path.trim_start_matches('/');
    let trimmed = trimmed
        .strip_prefix("api/v1/")
        .or_else(|| (trimmed == "api/v1").then_some(""))
        .unwrap_or(trimmed);
    let trimmed = trimmed.trim_end_matches('/');
    if trimmed.is_empty() {
        return Err(RawRequestError::Path("must name an API route"));
    }
    if trimmed
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(RawRequestError::Path(
            "must not contain empty, `.` or `..` segments",
        ));
    }
    if trimmed.chars().any(|c| c.is_whitespace()) {
        return Err(RawRequestError::Path("must not contain whitespace"));
    }
    Ok(format!("/{trimmed}"))
}

/// The route rules on raw text: no control characters, no `%` (so no
/// encoded dot segment or slash), no `\`, no `.` or `..` segment.
fn check_route_text(route: &str) -> Result<(), RawRequestError> {
    if route.chars().any(char::is_control) {
        return Err(RawRequestError::Path("must not contain control characters"));
    }
    if route.contains('%') {
        return Err(RawRequestError::Path(
            "must not contain `%` (use the operation's own tool for values with `/`)",
        ));
    }
    if route.contains('\\') {
        return Err(RawRequestError::Path("must not contain `\\`"));
    }
    if route
        .split('/')
        .any(|segment| segment == "." || segment == "..")
    {
        return Err(RawRequestError::Path(
            "must not contain empty, `.` or `..` segments",
        ));
    }
    Ok(())
}

/// The raw tool's input schema; under `read_only` the method enum is GET/HEAD.
pub fn raw_tool_schema(read_only: bool) -> Value {
    let methods: Vec<String> = (if read_only { READ_METHODS } else { ALL_METHODS })
        .iter()
        .flat_map(|m| [m.to_string(), m.to_ascii_lowercase()])
        .collect();
    json!({
        "type": "object",
        "properties": {
            "method": {"enum": methods},
            "path": {"type": "string", "minLength": 1, "maxLength": 2048,
                "description": "e.g. /repos/{owner}/{repo}/pulls/1 (/api/v1 optional)"},
            "query": {"type": "object",
                "additionalProperties": {"type": ["string", "number", "boolean", "array"], "items": {"type": ["string", "number", "boolean"]}}},
            "body": {"type": "object", "description": "JSON body"}
        },
        "required": ["method", "path"],
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: Value) -> Result<RawRequest, RawRequestError> {
        parse_raw_request(v.as_object().unwrap(), false)
    }

    #[test]
    fn api_prefix_is_optional_and_method_case_insensitive() {
        for path in [
            "/api/v1/repos/o/r/pulls/1",
            "/repos/o/r/pulls/1",
            "repos/o/r/pulls/1/",
        ] {
            let r = parse(json!({"method": "get", "path": path})).unwrap();
            assert_eq!(r.call.path, "/repos/o/r/pulls/1");
            assert_eq!(r.call.method, http::Method::GET);
        }
    }

    #[test]
    fn full_url_is_reduced_to_its_path() {
        let r = parse(
            json!({"method": "GET", "path": "https://git.example.com/api/v1/repos/o/r?token=x"}),
        )
        .unwrap();
        assert_eq!(r.call.path, "/repos/o/r");
        assert!(r.call.query.is_empty());
    }

    #[test]
    fn traversal_percent_and_query_in_path_are_refused() {
        for path in [
            "/repos/../admin/users",
            "/repos/o/r/./x",
            "/repos/o%2Fr",
            "/repos/o/r?x=1",
            "/a\\b",
            "/",
            "/repos/o\n/r",
        ] {
            assert!(
                matches!(
                    parse(json!({"method": "GET", "path": path})),
                    Err(RawRequestError::Path(_))
                ),
                "{path}"
            );
        }
    }

    /// F11: a full URL is checked before it is parsed, since URL parsing
    /// resolves encoded dot segments, turns `\\` into `/` and drops tabs.
    #[test]
    fn traversal_inside_a_full_url_is_refused_before_parsing() {
        for path in [
            "https://x/api/v1/repos/o/r/%2e%2e/%2e%2e/admin/users",
            "https://x/api/v1/repos/o/r/.%2E/admin/users",
            "https://x/api/v1/repos/o/r/%2e/x",
            "https://x/api/v1/repos\\..\\admin/users",
            "https://x/api/v1/repos/o/r/.\t./admin/users",
            "https://x/api/v1/repos/o/r/\n../admin",
            "http://x/api/v1/repos/../admin/users",
        ] {
            assert!(
                matches!(
                    parse(json!({"method": "GET", "path": path})),
                    Err(RawRequestError::Path(_))
                ),
                "{path:?}"
            );
        }
    }

    #[test]
    fn a_raw_path_past_the_target_limit_is_refused() {
        let path = format!("/repos/{}/r", "o".repeat(9000));
        let err = parse(json!({"method": "GET", "path": path})).unwrap_err();
        assert!(
            matches!(&err, RawRequestError::Call(CallError::TargetTooLong { longest, .. }) if longest == "path"),
            "{err:?}"
        );
    }

    #[test]
    fn unknown_method_is_refused() {
        assert!(matches!(
            parse(json!({"method": "TRACE", "path": "/version"})),
            Err(RawRequestError::Method(_))
        ));
    }

    #[test]
    fn read_only_accepts_only_get_and_head() {
        let args = json!({"method": "POST", "path": "/user/repos"});
        assert!(matches!(
            parse_raw_request(args.as_object().unwrap(), true),
            Err(RawRequestError::Method(_))
        ));
        let args = json!({"method": "HEAD", "path": "/version"});
        assert!(parse_raw_request(args.as_object().unwrap(), true).is_ok());
    }

    #[test]
    fn credential_query_names_are_refused() {
        let err = parse(json!({"method": "GET", "path": "/user", "query": {"Access_Token": "x"}}))
            .unwrap_err();
        assert_eq!(
            err,
            RawRequestError::from(EncodingError::ForbiddenQueryName)
        );
    }

    #[test]
    fn virtual_name_uses_method_and_top_segment() {
        let r = parse(json!({"method": "delete", "path": "/repos/o/r"})).unwrap();
        assert_eq!(r.virtual_name(), "gitea_api_request:DELETE:repos");
    }

    #[test]
    fn admin_and_credential_paths_are_sensitive() {
        for path in [
            "/admin/users",
            "/users/u/tokens",
            "/repos/o/r/actions/secrets",
            "/repos/o/r/hooks/1",
            "/user/keys",
            "/user/gpg_keys",
            "/user/gpg_key_token",
            "/user/applications/oauth2",
            "/repos/o/r/actions/runners/registration-token",
        ] {
            assert!(
                parse(json!({"method": "GET", "path": path}))
                    .unwrap()
                    .is_sensitive(),
                "{path}"
            );
        }
        assert!(
            !parse(json!({"method": "GET", "path": "/repos/o/r/issues"}))
                .unwrap()
                .is_sensitive()
        );
    }

    #[test]
    fn query_arrays_repeat_and_body_is_json() {
        let r = parse(
            json!({"method": "POST", "path": "/x", "query": {"a": [1, 2]}, "body": {"k": "v"}}),
        )
        .unwrap();
        assert_eq!(
            r.call.query,
            vec![("a".into(), "1".into()), ("a".into(), "2".into())]
        );
        assert_eq!(r.call.body, CallBody::Json(json!({"k": "v"})));
    }
}
