//! The operator's policy on `/mcp`, after authentication: for a call
//! through an OAuth connection, what the rules leave of the URL's surface
//! (`crate::policy`) replaces the surface the gate hands on, so
//! `tools/list`, the step-up check and `tools/call` all see the same
//! narrowed surface.
//! Facts that cannot be looked up answer 503: no rule is skipped.

use std::sync::Arc;

use axum::http::request::Parts;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tracing::Instrument;

use crate::app::App;
use crate::identity::{Connection, Identity};
use crate::surface::Surface;
use crate::telemetry::spans::{self, StageOutcome};

/// `surface` narrowed by the operator's policy for this caller, or the
/// 503 answer when the policy's facts cannot be looked up.
pub async fn apply_policy(
    app: &App,
    request: &Parts,
    (identity, connection): (&Identity, Option<&Connection>),
    surface: Surface,
) -> Result<Surface, Response> {
    let Some(policy) = app.policy() else {
        return Ok(surface);
    };
    if request.method != Method::POST {
        return Ok(surface);
    }
    // The static bearer, stdio and loopback are the operator's own: the
    // policy is about people's connections.
    let Some(connection) = connection else {
        return Ok(surface);
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
    if let Ok(narrowed) = &narrowing {
        span.record("aegis.policy.narrowed", narrowed.is_some());
    }
    let stage = match &narrowing {
        Ok(_) => StageOutcome::Ok,
        Err(_) => StageOutcome::Unavailable,
    };
    spans::stage_outcome(&span, stage);
    drop(span);
    match narrowing {
        Ok(None) => Ok(surface),
        Ok(Some(narrowing)) => Ok(Surface {
            narrowing: Some(Arc::new(narrowing)),
            ..surface
        }),
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
