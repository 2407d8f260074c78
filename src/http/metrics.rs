//! The HTTP side of metrics: the layer that counts and times every answered
//! request (and every 429), and the `/metrics` endpoint, which is served on
//! its own listener (`METRICS_BIND`), never on the public one.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::guards::{self, HostPolicy};
use super::rate_limit::OverLimit;
use super::step::{Step, StepLayer};
use crate::app::App;
use crate::metrics::{CONTENT_TYPE, Metrics, UNMATCHED_ROUTE};
use crate::oauth::error::OAuthFailure;

/// The step around every route: one observation per answered request,
/// labelled with the route template (never the raw path).
#[derive(Clone)]
pub struct ObserveRequests(pub Arc<Metrics>);

/// What an observation needs from the request.
pub struct Observed {
    route: Option<MatchedPath>,
    method: Method,
    began: Instant,
}

impl Step for ObserveRequests {
    type Carry = Observed;

    fn before(&self, request: &Request) -> Result<Observed, Response> {
        Ok(Observed {
            route: request.extensions().get::<MatchedPath>().cloned(),
            method: request.method().clone(),
            began: Instant::now(),
        })
    }

    fn after(&self, observed: Observed, response: Response) -> Response {
        let route = observed
            .route
            .as_ref()
            .map_or(UNMATCHED_ROUTE, MatchedPath::as_str);
        self.0.observe_request(
            route,
            &observed.method,
            response.status().as_u16(),
            observed.began.elapsed(),
        );
        if let Some(refusal) = response.extensions().get::<OverLimit>() {
            self.0.observe_rate_limited(refusal.key_kind.as_str());
        }
        if let Some(failure) = response.extensions().get::<OAuthFailure>()
            && let Some(endpoint) = oauth_endpoint(route)
        {
            self.0.count_oauth_failure(endpoint, failure.0);
        }
        response
    }
}

/// The `endpoint` label of an OAuth route.
fn oauth_endpoint(route: &str) -> Option<&'static str> {
    match route {
        "/register" => Some("register"),
        "/authorize" | "/authorize/consent" => Some("authorize"),
        "/token" => Some("token"),
        "/revoke" => Some("revoke"),
        "/oauth/callback" => Some("callback"),
        _ => None,
    }
}

/// The metrics listener's router: `GET /metrics` only, behind a `Host`
/// check that accepts addresses and our names (DNS rebinding).
pub fn router(app: Arc<App>) -> Router {
    let policy = Arc::new(HostPolicy::from_settings(app.settings()).accepting_addresses());
    Router::new()
        .route("/metrics", get(scrape))
        .with_state(app.clone())
        .layer(StepLayer(guards::CheckHost(policy)))
        .layer(StepLayer(ObserveRequests(app.metrics().clone())))
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
        match oauth.store().count_clients().await {
            Ok(count) => app
                .metrics()
                .set_oauth_clients(count, app.settings().oauth_max_clients),
            Err(err) => {
                tracing::warn!(error = %err, "metrics: the client count could not be read")
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
