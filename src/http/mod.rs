//! The HTTP server: wires the `/mcp` endpoint, its guards and
//! authentication, and the health check into one axum router. Holds no
//! business rules.

pub mod auth;
pub mod guards;

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router, middleware};
use serde_json::json;

use crate::app::App;
use crate::mcp::transport::streamable_http_service;
use guards::HostPolicy;

/// The application's router; the CLI serves it and the tests drive it.
/// Layers on `/mcp` run outside in: Host/Origin guards, then
/// authentication, then the MCP service.
pub fn router(app: Arc<App>) -> Router {
    let policy = Arc::new(HostPolicy::from_settings(app.settings()));
    // rmcp checks Host too; it gets the same list as a second line.
    let mcp = streamable_http_service(app.clone(), policy.hosts().to_vec());
    let mcp_routes = Router::new()
        .route_service("/mcp", mcp)
        .route_layer(middleware::from_fn_with_state(
            app.clone(),
            auth::authenticate,
        ))
        .route_layer(middleware::from_fn_with_state(
            policy,
            guards::check_host_and_origin,
        ));
    let oauth = app.oauth().cloned();
    let router = Router::new()
        .route("/health", get(health))
        .route("/static/aegis.css", get(crate::pages::stylesheet))
        .route("/favicon.ico", get(crate::pages::no_favicon))
        .merge(mcp_routes)
        .with_state(app);
    match oauth {
        Some(server) => router.merge(crate::oauth::router(server)),
        None => router,
    }
}

/// Liveness and what is served: version and tool count, nothing secret.
async fn health(State(app): State<Arc<App>>) -> Json<serde_json::Value> {
    Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "tools": app.dispatcher().tools().len(),
    }))
}
