//! The HTTP side of metrics: the layer that counts and times every answered
//! request (and every 429), and the `/metrics` endpoint, which is served on
//! its own listener (`METRICS_BIND`), never on the public one.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Router, middleware};

use super::guards::{self, HostPolicy};
use super::rate_limit::Refusal;
use crate::app::App;
use crate::metrics::{CONTENT_TYPE, Metrics, UNMATCHED_ROUTE};

/// Middleware around every route: one observation per answered request,
/// labelled with the route template (never the raw path).
pub async fn observe(
    State(metrics): State<Arc<Metrics>>,
    request: Request,
    next: Next,
) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| UNMATCHED_ROUTE.to_owned(), |p| p.as_str().to_owned());
    let method = request.method().clone();
    let began = Instant::now();
    let response = next.run(request).await;
    metrics.observe_request(&route, &method, response.status().as_u16(), began.elapsed());
    if let Some(refusal) = response.extensions().get::<Refusal>() {
        metrics.observe_rate_limited(refusal.key_kind.as_str());
    }
    response
}

/// The metrics listener's router: `GET /metrics` only, behind a `Host`
/// check that accepts addresses and our names (DNS rebinding).
pub fn router(app: Arc<App>) -> Router {
    let policy = Arc::new(HostPolicy::from_settings(app.settings()).accepting_addresses());
    Router::new()
        .route("/metrics", get(scrape))
        .with_state(app.clone())
        .layer(middleware::from_fn_with_state(policy, guards::check_host))
        .layer(middleware::from_fn_with_state(
            app.metrics().clone(),
            observe,
        ))
}

/// Reads the store's active grant count, then renders. A store that does
/// not answer leaves the gauge at its last value (the scrape still works:
/// `/health` is where the store's state is reported).
async fn scrape(State(app): State<Arc<App>>) -> Response {
    if let Some(oauth) = app.oauth() {
        match oauth.store().count_active_grants().await {
            Ok(count) => app.metrics().set_active_grants(count),
            Err(err) => {
                tracing::warn!(error = %err, "metrics: the active grant count could not be read")
            }
        }
    }
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, CONTENT_TYPE),
            (header::CACHE_CONTROL, "no-store"),
        ],
        app.metrics().render(),
    )
        .into_response()
}
