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
//! more. A tool error would leave the model nothing it could act on. The
//! decision is the call's admission (`crate::mcp::call::refused_for_scope`);
//! this layer only answers it in HTTP.
//!
//! The gateway reads the body once, here, into what it needs of it
//! ([`crate::mcp::intake::ReadMessage`]: the id and the tool call). rmcp
//! parses the same bytes once more: its Streamable HTTP service takes the
//! HTTP request and reads the message itself to run the protocol (the
//! session, the wire's version, the handler to call), and it has no entry
//! for a message parsed before it. Its answer to a body it cannot read is
//! replaced by [`after_rmcp`] from what was read here, not by reading the
//! body again.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use rmcp::transport::common::http_header::HEADER_MCP_PROTOCOL_VERSION;
use tracing::Instrument;

use super::auth::insufficient_scope;
use crate::app::App;
use crate::mcp::call::{self, CallContext};
use crate::mcp::handoff::GateHandoff;
use crate::mcp::intake::{IntakeRefusal, RefusalKind, check_message};
use crate::telemetry::spans::{self, StageOutcome};

/// What [`after_rmcp`] needs of a `POST` body intake read and passed: its
/// id, as it may be echoed.
pub struct Passed {
    id: serde_json::Value,
}

/// Reads and checks a `POST` body: the request again, its body readable,
/// with what [`after_rmcp`] needs; or the answer. Other methods pass.
pub async fn check_jsonrpc_body(
    app: &App,
    request: Request,
    handoff: &GateHandoff,
) -> Result<(Request, Option<Passed>), Response> {
    if request.method() != Method::POST {
        return Ok((request, None));
    }
    let span = spans::intake(app.settings().limits.mcp_max_body_bytes);
    let checked = read_and_check(app, request, handoff, &span)
        .instrument(span.clone())
        .await;
    let stage = match &checked {
        Ok(_) => StageOutcome::Ok,
        Err(_) => StageOutcome::Refused,
    };
    spans::stage_outcome(&span, stage);
    // The span ends here: rmcp and the call are the request's children.
    drop(span);
    let (request, id) = checked?;
    Ok((request, Some(Passed { id })))
}

/// rmcp's answer to a body intake passed, unless rmcp could not read it.
pub fn after_rmcp(response: Response, passed: Option<Passed>) -> Response {
    match passed {
        // rmcp's answer to a body it cannot read quotes serde's message,
        // and with it pieces of the input. The quick read of a tool call
        // (`crate::mcp::intake`) means to pass only what rmcp reads; if it
        // ever passes more, the caller gets a JSON-RPC refusal instead.
        Some(passed) if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            rmcp_refused(passed)
        }
        _ => response,
    }
}

/// The refusal of a body that passed intake and that rmcp could not read:
/// `-32600` with the id intake read.
fn rmcp_refused(passed: Passed) -> Response {
    tracing::warn!("rmcp refused a body that intake passed");
    refusal_response(&IntakeRefusal {
        kind: RefusalKind::InvalidRequest,
        id: passed.id,
    })
}

fn refusal_response(refusal: &IntakeRefusal) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        refusal.response_body(),
    )
        .into_response()
}

/// The request again with its body read and checked (and the id read),
/// or the answer.
async fn read_and_check(
    app: &App,
    request: Request,
    handoff: &GateHandoff,
    span: &tracing::Span,
) -> Result<(Request, serde_json::Value), Response> {
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
    let read = match check_message(&bytes, header_version) {
        Ok(read) => read,
        Err(refusal) => {
            tracing::debug!(code = refusal.kind.code(), "/mcp body refused at intake");
            return Err(refusal_response(&refusal));
        }
    };
    if read.call.is_some() {
        span.record("mcp.method.name", "tools/call");
    }
    // Only a grant that only reads can be asked to step up.
    if let Some(call) = read.call
        && !handoff.identity.access.may_write()
    {
        let service = app.call_services();
        let context = CallContext {
            identity: &handoff.identity,
            surface: &handoff.surface,
            connection: handoff.connection.as_ref(),
            in_call_elicitation: None,
            session: None,
            tool_label: call::tool_label(service, &call.name),
            span,
        };
        let args = call.arguments.unwrap_or_default();
        // Boxed: inline, this refusal's entry would make every MCP
        // request's future that much bigger.
        if Box::pin(call::refused_for_scope(service, &context, &call.name, args)).await {
            return Err(insufficient_scope(
                app.oauth().map(Arc::as_ref),
                parts.uri.path(),
            ));
        }
    }
    Ok((Request::from_parts(parts, Body::from(bytes)), read.id))
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

    #[tokio::test]
    async fn a_body_rmcp_refuses_after_intake_passed_it_is_an_invalid_request_with_its_id() {
        let rmcp = (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported Media Type: serde says planted-value-7f3a",
        )
            .into_response();
        let response = after_rmcp(
            rmcp,
            Some(Passed {
                id: serde_json::json!(9),
            }),
        );
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let bytes = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .unwrap();
        let answer: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(answer["error"]["code"], -32600);
        assert_eq!(answer["id"], 9);
        assert!(!answer.to_string().contains("planted-value-7f3a"));
    }

    #[test]
    fn rmcp_s_other_answers_pass_unchanged() {
        let response = after_rmcp(
            StatusCode::ACCEPTED.into_response(),
            Some(Passed {
                id: serde_json::Value::Null,
            }),
        );
        assert_eq!(response.status(), StatusCode::ACCEPTED);
    }
}
