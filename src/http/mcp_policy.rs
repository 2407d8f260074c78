//! The operator's policy on `/mcp`, after authentication: for a call
//! through an OAuth connection, what the rules leave of the URL's surface
//! (`crate::policy`) replaces the surface in the request, so `tools/list`,
//! the step-up check and `tools/call` all see the same narrowed surface.
//! Facts that cannot be looked up answer 503: no rule is skipped.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tracing::Instrument;

use crate::app::App;
use crate::identity::{Connection, Identity};
use crate::surface::Surface;
use crate::telemetry::spans;

/// Narrows the request's surface by the operator's policy, or answers
/// 503 when the policy's facts cannot be looked up.
pub async fn apply_policy(app: &App, request: &mut Request) -> Result<(), Response> {
    let Some(policy) = app.policy() else {
        return Ok(());
    };
    if request.method() != Method::POST {
        return Ok(());
    }
    let extensions = request.extensions();
    // The static bearer, stdio and loopback are the operator's own: the
    // policy is about people's connections.
    let (Some(identity), Some(connection), Some(surface)) = (
        extensions.get::<Identity>(),
        extensions.get::<Connection>(),
        extensions.get::<Surface>(),
    ) else {
        return Ok(());
    };
    let span = spans::policy();
    // Boxed: inline, the lookup's future would make every MCP
    // request's middleware future that much bigger, policy or not.
    let narrowing = Box::pin(
        policy
            .narrowing(identity, connection, &surface.path())
            .instrument(span.clone()),
    )
    .await;
    span.record(
        "aegis.outcome",
        match &narrowing {
            Ok(None) => "unchanged",
            Ok(Some(_)) => "narrowed",
            Err(_) => "unavailable",
        },
    );
    drop(span);
    match narrowing {
        Ok(None) => Ok(()),
        Ok(Some(narrowing)) => {
            let narrowed = Surface {
                narrowing: Some(Arc::new(narrowing)),
                ..surface.clone()
            };
            request.extensions_mut().insert(narrowed);
            Ok(())
        }
        Err(err) => {
            tracing::warn!(error = %err, "the policy's facts could not be looked up");
            Err((
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
                "the operator's policy could not be checked right now",
            )
                .into_response())
        }
    }
}
