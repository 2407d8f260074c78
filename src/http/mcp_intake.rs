//! The last step before rmcp on `/mcp`: a `POST` body is read, within the
//! body limit, and checked to be one JSON-RPC message
//! ([`crate::mcp::intake`]); one that is not is answered here with
//! `400 Bad Request` and a JSON-RPC error object. It runs after
//! authentication, so an unauthenticated caller learns nothing about its
//! body.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use rmcp::transport::common::http_header::HEADER_MCP_PROTOCOL_VERSION;

use super::guards::McpGuard;
use crate::mcp::intake::check_message;

/// Middleware on the MCP URLs.
pub async fn check_jsonrpc_body(
    State(guard): State<Arc<McpGuard>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, guard.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(err) if is_over_limit(&err) => {
            return (StatusCode::PAYLOAD_TOO_LARGE, "request body too large").into_response();
        }
        Err(_) => {
            return (
                StatusCode::BAD_REQUEST,
                "the request body could not be read",
            )
                .into_response();
        }
    };
    let header_version = parts
        .headers
        .get(HEADER_MCP_PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok());
    if let Err(refusal) = check_message(&bytes, header_version) {
        tracing::debug!(code = refusal.kind.code(), "/mcp body refused at intake");
        return (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            refusal.response_body(),
        )
            .into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
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
