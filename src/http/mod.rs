//! The HTTP server: wires the `/mcp` endpoint, its authentication and the
//! health check into one axum router. Holds no business rules.

pub mod auth;

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router, middleware};
use serde_json::json;

use crate::app::App;
use crate::config::Settings;
use crate::mcp::transport::streamable_http_service;

/// The application's router; the CLI serves it and the tests drive it.
pub fn router(app: Arc<App>) -> Router {
    let mcp = streamable_http_service(app.clone(), allowed_hosts(app.settings()));
    let mcp_routes =
        Router::new()
            .route_service("/mcp", mcp)
            .route_layer(middleware::from_fn_with_state(
                app.clone(),
                auth::authenticate,
            ));
    Router::new()
        .route("/health", get(health))
        .merge(mcp_routes)
        .with_state(app)
}

/// `Host` values `/mcp` accepts: loopback names, the bind address, the
/// public URL's host and `ALLOWED_HOSTS` (DNS-rebinding defence).
pub fn allowed_hosts(settings: &Settings) -> Vec<String> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
        .iter()
        .map(|h| h.to_string())
        .collect();
    hosts.push(settings.mcp_host.to_string());
    if let Some(host) = settings.public_base_url.host_str() {
        hosts.push(
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
        );
    }
    hosts.extend(settings.allowed_hosts.iter().cloned());
    hosts.sort();
    hosts.dedup();
    hosts
}

/// Liveness and what is served: version and tool count, nothing secret.
async fn health(State(app): State<Arc<App>>) -> Json<serde_json::Value> {
    Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "tools": app.dispatcher().tools().len(),
    }))
}
