//! The operator's policy on `/mcp`, after authentication: for a call
//! through an OAuth connection, what the rules leave of the URL's surface
//! (`crate::policy`) replaces the surface in the request, so `tools/list`,
//! the step-up check and `tools/call` all see the same narrowed surface.
//! Facts that cannot be looked up answer 503: no rule is skipped.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Instrument;

use crate::app::App;
use crate::identity::{Connection, Identity};
use crate::surface::Surface;
use crate::telemetry::spans;

/// Middleware on the MCP URLs.
pub async fn apply_policy(
    State(app): State<Arc<App>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(policy) = app.policy() else {
        return next.run(request).await;
    };
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let extensions = request.extensions();
    // The static bearer, stdio and loopback are the operator's own: the
    // policy is about people's connections.
    let (Some(identity), Some(connection), Some(surface)) = (
        extensions.get::<Identity>(),
        extensions.get::<Connection>(),
        extensions.get::<Surface>(),
    ) else {
        return next.run(request).await;
    };
    let span = spans::policy();
    // Boxed: inline, the lookup's future (1.1 KB) would make every MCP
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
        Ok(None) => next.run(request).await,
        Ok(Some(narrowing)) => {
            let narrowed = Surface {
                narrowing: Some(Arc::new(narrowing)),
                ..surface.clone()
            };
            request.extensions_mut().insert(narrowed);
            next.run(request).await
        }
        Err(err) => {
            tracing::warn!(error = %err, "the policy's facts could not be looked up");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
                "the operator's policy could not be checked right now",
            )
                .into_response()
        }
    }
}
