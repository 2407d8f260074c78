//! The spans of a call, one constructor each, and what each may carry:
//! names and attributes from the OpenTelemetry semantic conventions (HTTP,
//! MCP, GenAI) where they have one, `aegis.*` otherwise. Route templates,
//! tool names from the catalog, counts, statuses and outcome kinds only:
//! never an argument value, a path as sent, a header or a token.
//!
//! Each constructor returns a disabled span, at the cost of one cached
//! check, when traces are off.

use http::{HeaderMap, Method};
use tracing::Span;
use tracing::field::Empty;

use super::TARGET;
use super::context::{Carrier, adopt_parent, adopt_parent_or};
use crate::outcome::CallOutcome;

/// `{method} {route}`: the HTTP server span of one request, the child of
/// the caller's span when its headers carry one.
pub fn http_request(method: &Method, route: Option<&str>, headers: &HeaderMap) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "http.server",
        otel.name = %HttpName(method, route),
        otel.kind = "server",
        http.request.method = %method,
        http.route = route.unwrap_or_default(),
        http.response.status_code = Empty,
        otel.status_code = Empty,
    );
    adopt_parent(&span, Carrier::from_headers(headers));
    span
}

struct HttpName<'a>(&'a Method, Option<&'a str>);

impl std::fmt::Display for HttpName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            Some(route) => write!(f, "{} {route}", self.0),
            None => write!(f, "{}", self.0),
        }
    }
}

/// The answer's status; a 5xx marks the span as failed.
pub fn http_status(span: &Span, status: u16) {
    span.record("http.response.status_code", status);
    if status >= 500 {
        span.record("otel.status_code", "error");
    }
}

/// How a stage before the call's run ended: the `aegis.outcome` of every
/// stage span (authentication, policy, intake, admission, confirmation),
/// in one vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageOutcome {
    /// The request goes on.
    Ok,
    /// The stage answered in the request's place.
    Refused,
    /// The stage could not decide (its store or lookup failed): the
    /// request is refused, fail closed, and may be retried.
    Unavailable,
    /// The call waits for its person.
    Waiting,
}

impl StageOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Refused => "refused",
            Self::Unavailable => "unavailable",
            Self::Waiting => "waiting",
        }
    }
}

/// Records how the stage of `span` ended.
pub fn stage_outcome(span: &Span, outcome: StageOutcome) {
    span.record("aegis.outcome", outcome.as_str());
}

/// Authentication of `/mcp`, and for an `agm_` token its resolution to a
/// Gitea session. `aegis.auth.kind`: `oauth`, `bearer`, `loopback` or
/// `none`; `aegis.outcome`: a [`StageOutcome`].
pub fn authenticate() -> Span {
    tracing::info_span!(
        target: TARGET,
        "authenticate",
        aegis.auth.kind = Empty,
        aegis.outcome = Empty,
    )
}

/// The operator's policy narrowing the URL's tools for a connection:
/// `aegis.policy.narrowed` says whether its rules took tools away.
pub fn policy() -> Span {
    tracing::info_span!(
        target: TARGET,
        "policy",
        aegis.policy.narrowed = Empty,
        aegis.outcome = Empty,
    )
}

/// Reading and checking the JSON-RPC body.
pub fn intake(body_limit: usize) -> Span {
    tracing::info_span!(
        target: TARGET,
        "intake",
        aegis.body_limit = body_limit,
        http.request.body.size = Empty,
        mcp.method.name = Empty,
        aegis.outcome = Empty,
    )
}

/// The HTTP request's span, in the request's extensions for the tool call.
/// rmcp runs the call in a task of its own, under its own `serve_inner`
/// span: when the log layer enables that span, it is the call's contextual
/// parent, and the exporter, which does not see it, would start a new
/// trace (found against the binary, whose default `RUST_LOG=info` does).
#[derive(Clone, Debug)]
pub struct RequestSpan(pub Span);

/// `tools/call {tool}`: the MCP server span of one call (`tool` only when
/// the catalog defines it). Its parent is the caller's span from the
/// request's `_meta` when that names one (SEP-414), else the HTTP span
/// (`request`, over HTTP), else the contextual one (stdio).
pub fn tool_call(
    tool: &str,
    protocol_version: Option<&str>,
    meta: Carrier<'_>,
    request: Option<&RequestSpan>,
) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "mcp.server",
        otel.name = %format_args!("tools/call {tool}"),
        otel.kind = "server",
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = tool,
        mcp.protocol.version = protocol_version.unwrap_or_default(),
        aegis.outcome = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    );
    adopt_parent_or(&span, meta, request.map(|r| &r.0));
    span
}

/// `resources/read`, `prompts/get` or `completion/complete`: the MCP
/// server span of one such request, parented like [`tool_call`]; the
/// calls it makes to read Gitea are its children.
pub fn context_request(
    method: &'static str,
    protocol_version: Option<&str>,
    meta: Carrier<'_>,
    request: Option<&RequestSpan>,
) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "mcp.server",
        otel.name = method,
        otel.kind = "server",
        mcp.method.name = method,
        mcp.protocol.version = protocol_version.unwrap_or_default(),
        error.type = Empty,
        otel.status_code = Empty,
    );
    adopt_parent_or(&span, meta, request.map(|r| &r.0));
    span
}

/// How a call (or its result pipeline) ended, and the error kind.
pub fn outcome(span: &Span, outcome: CallOutcome, error_kind: Option<&str>) {
    span.record("aegis.outcome", outcome.as_str());
    if let Some(kind) = error_kind {
        failed(span, kind);
    }
}

/// Marks the span failed, with the kind of error (a fixed name, never a
/// message).
pub fn failed(span: &Span, error_type: &str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "error");
}

/// Whether the call may run (`aegis.outcome`: `ok`, `refused`): the URL
/// lists the tool, the arguments fit its schema, what it runs may run
/// here, the grant covers what it does.
pub fn admit() -> Span {
    tracing::info_span!(target: TARGET, "admit", aegis.outcome = Empty)
}

/// Whether the call waits for its person (`aegis.outcome`: `ok`,
/// `waiting`, `refused`).
pub fn confirmation() -> Span {
    tracing::info_span!(target: TARGET, "confirmation", aegis.outcome = Empty)
}

/// One audit entry written (`tool_call_started`, …).
pub fn audit(event: &'static str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "audit",
        aegis.audit.event = event,
        aegis.outcome = Empty,
    )
}

/// `{method} {route template}`: one request to Gitea at `api_base`.
pub fn gitea_request(method: &Method, route: &str, api_base: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "http.client",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "client",
        http.request.method = %method,
        url.template = route,
        server.address = host_of(api_base),
        http.response.status_code = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// The result pipeline: decode, redact, mask, project, bound.
pub fn hygiene(upstream_bytes: usize) -> Span {
    tracing::info_span!(
        target: TARGET,
        "hygiene",
        aegis.upstream.bytes = upstream_bytes,
        aegis.result.bytes = Empty,
        aegis.outcome = Empty,
    )
}

/// The host (and port) of a base URL, without parsing it again.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    // Never credentials, should a URL carry any.
    authority.rsplit('@').next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_address_is_the_host_of_the_api_base() {
        assert_eq!(
            host_of("https://gitea.example:3000/api/v1"),
            "gitea.example:3000"
        );
        assert_eq!(host_of("http://127.0.0.1/api/v1"), "127.0.0.1");
        assert_eq!(
            host_of("https://user:pw@gitea.example/api/v1"),
            "gitea.example"
        );
    }

    #[test]
    fn spans_are_disabled_without_a_trace_layer() {
        assert!(authenticate().is_disabled());
        assert!(gitea_request(&Method::GET, "/version", "http://g/api/v1").is_disabled());
    }
}
