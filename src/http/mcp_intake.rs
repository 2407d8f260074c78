//! The last step before rmcp on `/mcp`: a `POST` body is read, within the
//! body limit, and checked to be one JSON-RPC message
//! ([`crate::mcp::intake`]); one that is not is answered here with
//! `400 Bad Request` and a JSON-RPC error object. It runs after
//! authentication, so an unauthenticated caller learns nothing about its
//! body.
//!
//! A `tools/call` that would write, from a caller whose grant only reads,
//! is answered here too: `403` with the `insufficient_scope` challenge
//! (MCP 2025-11-25, step-up), so that the client asks the person for
//! more. A tool error would leave the model nothing it could act on.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use rmcp::transport::common::http_header::HEADER_MCP_PROTOCOL_VERSION;
use tracing::Instrument;

use super::auth::insufficient_scope;
use crate::app::App;
use crate::identity::Identity;
use crate::mcp::intake::{IntakeRefusal, RefusalKind, check_as_rmcp_reads, check_message};
use crate::surface::Surface;
use crate::telemetry::spans;

/// A `POST` body intake read and passed, kept for [`after_rmcp`].
pub struct Passed {
    body: Bytes,
    header_version: Option<HeaderValue>,
}

/// Reads and checks a `POST` body: the request again, its body readable,
/// with what [`after_rmcp`] needs; or the answer. Other methods pass.
pub async fn check_jsonrpc_body(
    app: &App,
    request: Request,
) -> Result<(Request, Option<Passed>), Response> {
    if request.method() != Method::POST {
        return Ok((request, None));
    }
    let span = spans::intake(app.settings().limits.mcp_max_body_bytes);
    let checked = read_and_check(app, request, &span)
        .instrument(span.clone())
        .await;
    span.record(
        "aegis.outcome",
        if checked.is_ok() { "ok" } else { "refused" },
    );
    // The span ends here: rmcp and the call are the request's children.
    drop(span);
    let (request, body) = checked?;
    let header_version = request.headers().get(HEADER_MCP_PROTOCOL_VERSION).cloned();
    Ok((
        request,
        Some(Passed {
            body,
            header_version,
        }),
    ))
}

/// rmcp's answer to a body intake passed, unless rmcp could not read it.
pub fn after_rmcp(response: Response, passed: Option<Passed>) -> Response {
    match passed {
        // rmcp's answer to a body it cannot read quotes serde's message,
        // and with it pieces of the input. The quick read of a tool call
        // (`crate::mcp::intake`) means to pass only what rmcp reads; if it
        // ever passes more, the caller still gets the full check's answer.
        Some(passed) if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            rmcp_refused(&passed.body, passed.header_version.as_ref())
        }
        _ => response,
    }
}

/// The JSON-RPC refusal of a body that passed intake and that rmcp could
/// not read: the full check's, else `-32600` with the id unread.
fn rmcp_refused(body: &[u8], header_version: Option<&HeaderValue>) -> Response {
    tracing::warn!("rmcp refused a body that intake passed");
    let version = header_version.and_then(|v| v.to_str().ok());
    let refusal = check_as_rmcp_reads(body, version)
        .err()
        .unwrap_or(IntakeRefusal {
            kind: RefusalKind::InvalidRequest,
            id: serde_json::Value::Null,
        });
    refusal_response(&refusal)
}

fn refusal_response(refusal: &IntakeRefusal) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        refusal.response_body(),
    )
        .into_response()
}

/// The request again with its body read and checked (and the body), or
/// the answer.
async fn read_and_check(
    app: &App,
    request: Request,
    span: &tracing::Span,
) -> Result<(Request, Bytes), Response> {
    let (parts, body) = request.into_parts();
    let max_body_bytes = app.settings().limits.mcp_max_body_bytes;
    let bytes = match axum::body::to_bytes(body, max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(err) if is_over_limit(&err) => {
            return Err((StatusCode::PAYLOAD_TOO_LARGE, "request body too large").into_response());
        }
        Err(_) => {
            return Err((
                StatusCode::BAD_REQUEST,
                "the request body could not be read",
            )
                .into_response());
        }
    };
    span.record("http.request.body.size", bytes.len());
    let header_version = parts
        .headers
        .get(HEADER_MCP_PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok());
    let call = match check_message(&bytes, header_version) {
        Ok(call) => call,
        Err(refusal) => {
            tracing::debug!(code = refusal.kind.code(), "/mcp body refused at intake");
            return Err(refusal_response(&refusal));
        }
    };
    if call.is_some() {
        span.record("mcp.method.name", "tools/call");
    }
    if let (Some(call), Some(identity), Some(surface)) = (
        call,
        parts.extensions.get::<Identity>(),
        parts.extensions.get::<Surface>(),
    ) && !identity.access.may_write()
    {
        let args = call.arguments.unwrap_or_default();
        if app.dispatcher().call_writes(surface, &call.name, &args) {
            // Boxed: inline, this refusal's entry would make every MCP
            // request's future that much bigger.
            Box::pin(
                app.audit()
                    .record_best_effort(crate::mcp::call_events::refused_event(
                        identity,
                        &call.name,
                        &crate::mcp::dispatcher::Refusal::ReadOnlyGrant,
                    )),
            )
            .await;
            return Err(insufficient_scope(
                app.oauth().map(Arc::as_ref),
                parts.uri.path(),
            ));
        }
    }
    Ok((Request::from_parts(parts, Body::from(bytes.clone())), bytes))
}

fn is_over_limit(err: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(response: Response) -> serde_json::Value {
        let bytes = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn a_body_rmcp_refuses_is_answered_with_the_full_checks_refusal() {
        let planted = "planted-value-7f3a";
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":"{planted}"}}"#);
        let response = rmcp_refused(body.as_bytes(), None);
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let answer = body_of(response).await;
        assert_eq!(answer["error"]["code"], -32602);
        assert_eq!(answer["id"], 9);
        assert!(!answer.to_string().contains(planted));
    }

    #[tokio::test]
    async fn a_body_rmcp_refuses_that_the_full_check_passes_is_an_invalid_request() {
        let body = br#"{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}"#;
        let answer = body_of(rmcp_refused(body, None)).await;
        assert_eq!(answer["error"]["code"], -32600);
        assert_eq!(answer["id"], serde_json::Value::Null);
    }
}
