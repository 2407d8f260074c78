//! The HTTP server: wires the `/mcp` endpoint, the OAuth routes and pages,
//! and the health check (`health`) into one axum router, each route group behind its
//! guards, body limit, timeout and rate limit. Holds no business rules.
//!
//! Outside in, every request passes: metrics (counted and timed by route
//! template; `/metrics` itself is on its own listener) → `Connection:
//! close` on early refusals → panic catcher (500, no detail) → access log
//! (path only, the query is `[redacted]`) → `Host` guard (421) → the
//! group's timeout and body limit → its `Origin` rule → rate limits (429;
//! a tighter one on the routes that park state) → on the MCP URLs, the
//! URL's surface (404 for an unknown toolset) then authentication →
//! handler. Unknown paths get 404 after the `Host` guard.

pub mod auth;
pub mod guards;
pub mod health;
pub mod layers;
pub mod mcp_url;
pub mod metrics;
pub mod rate_limit;

use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::{Router, middleware};
use tower_http::limit::RequestBodyLimitLayer;

use crate::app::App;
use crate::mcp::transport::streamable_http_service;
use guards::{HostPolicy, McpGuard};
use rate_limit::RateLimiter;

/// Body limit of everything but `/mcp`: the OAuth routes, the consent and
/// page forms, the health check (SEC-01).
pub const FORM_BODY_LIMIT: usize = crate::oauth::OAUTH_BODY_LIMIT;

/// Timeout of the OAuth routes, pages and health check.
pub const PAGE_TIMEOUT: Duration = Duration::from_secs(60);

/// Timeout of one `/mcp` request: room for a token refresh and the Gitea
/// call (each up to `GITEA_TIMEOUT_SECONDS`), plus slack.
pub fn mcp_timeout(gitea_timeout: Duration) -> Duration {
    gitea_timeout * 2 + Duration::from_secs(30)
}

/// The application's router, its rate-limit refusals recorded in the audit
/// log (once per window per key); the CLI serves it and the tests drive it.
pub fn router(app: Arc<App>) -> Router {
    let audit = app.audit().clone();
    let hook: rate_limit::RateLimitHook = Arc::new(move |event: &rate_limit::RateLimitEvent| {
        rate_limit::tracing_hook()(event);
        let audit = audit.clone();
        let (kind, path) = (event.key_kind.as_str(), event.path.clone());
        // The hook runs inside the limiter; the write happens beside it.
        tokio::spawn(async move { audit.rate_limited(kind, None, Some(&path)).await });
    });
    let limiter = RateLimiter::from_settings(app.settings()).with_hook(hook.clone());
    let sign_ins = RateLimiter::sign_ins_from_settings(app.settings()).with_hook(hook);
    router_with_limiters(app, Arc::new(limiter), Arc::new(sign_ins))
}

/// The router with given rate limiters (whose hooks feed the audit log, see
/// [`RateLimiter::with_hook`]): `limiter` on every group, `sign_ins` on top
/// of it on the routes that park state ([`rate_limit::parks_state`]).
pub fn router_with_limiters(
    app: Arc<App>,
    limiter: Arc<RateLimiter>,
    sign_ins: Arc<RateLimiter>,
) -> Router {
    let settings = app.settings();
    let policy = Arc::new(HostPolicy::from_settings(settings));
    let mcp_guard = Arc::new(McpGuard {
        policy: policy.clone(),
        max_body_bytes: settings.limits.mcp_max_body_bytes,
    });
    let mcp_timeout = mcp_timeout(settings.limits.gitea_timeout);

    // rmcp checks Host too; it gets the same list as a second line.
    let mcp = streamable_http_service(app.clone(), policy.hosts().to_vec());
    // Layers run bottom-up: the last one added runs first.
    let mcp_routes = mcp_url::MCP_ROUTES
        .iter()
        .fold(Router::new(), |routes, path| {
            routes.route_service(path, mcp.clone())
        })
        .layer(middleware::from_fn_with_state(
            app.clone(),
            auth::authenticate,
        ))
        .layer(middleware::from_fn_with_state(
            app.clone(),
            mcp_url::resolve_surface,
        ))
        .layer(middleware::from_fn_with_state(
            limiter.clone(),
            rate_limit::limit,
        ))
        .layer(middleware::from_fn_with_state(
            mcp_guard,
            guards::check_mcp_request,
        ))
        .layer(layers::timeout(mcp_timeout));

    let oauth = app.oauth().cloned();
    let metrics = app.metrics().clone();
    let base = Router::new()
        .route("/static/aegis.css", get(crate::pages::stylesheet))
        .route("/favicon.ico", get(crate::pages::no_favicon))
        .merge(health::routes(app))
        .layer(RequestBodyLimitLayer::new(FORM_BODY_LIMIT))
        .layer(layers::timeout(PAGE_TIMEOUT));

    let mut router = base.merge(mcp_routes);
    if let Some(server) = oauth {
        let routes = crate::oauth::router(server);
        // The limiter sits inside the CORS layer: a 429 carries CORS headers.
        let api = routes
            .api
            .layer(middleware::from_fn_with_state(
                sign_ins.clone(),
                rate_limit::limit_sign_ins,
            ))
            .layer(middleware::from_fn_with_state(
                limiter.clone(),
                rate_limit::limit,
            ))
            .layer(crate::oauth::api_cors());
        let pages = routes
            .pages
            .layer(middleware::from_fn_with_state(
                sign_ins,
                rate_limit::limit_sign_ins,
            ))
            .layer(middleware::from_fn_with_state(limiter, rate_limit::limit))
            .layer(middleware::from_fn_with_state(
                policy.clone(),
                guards::check_page_origin,
            ));
        let oauth_routes = api
            .merge(pages)
            .layer(RequestBodyLimitLayer::new(FORM_BODY_LIMIT))
            .layer(layers::timeout(PAGE_TIMEOUT));
        router = router.merge(oauth_routes);
    }
    // An explicit fallback: otherwise a merged group's layered default
    // fallback (say `/mcp`'s authentication) would answer unknown paths.
    router
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(policy, guards::check_host))
        .layer(layers::access_log())
        .layer(layers::catch_panic())
        .layer(middleware::from_fn(layers::close_after_early_refusal))
        .layer(middleware::from_fn_with_state(metrics, metrics::observe))
}

/// Every path no route claims: 404, through the global layers only.
async fn not_found() -> (axum::http::StatusCode, &'static str) {
    (axum::http::StatusCode::NOT_FOUND, "not found")
}
