//! The HTTP server: the one route table. It wires the MCP URLs, the OAuth
//! routes, the people's pages and the health check (`health`) into one axum
//! router, each route group behind its guards, body limit, timeout and rate
//! limit, declared where the group is; and it switches `/oauth/callback`
//! between the two flows that share it. Holds no business rules.
//!
//! Outside in, every request passes: metrics (counted and timed by route
//! template; `/metrics` itself is on its own listener) → `Connection:
//! close` on early refusals → panic catcher (500, no detail) → access log
//! (path only, the query is `[redacted]`) → `Host` guard (421) → the
//! group's timeout and body limit → its `Origin` rule → rate limits (429;
//! a tighter one on the routes that park state) → handler. On the MCP
//! URLs, the steps after the timeout are one service (`mcp_gate`):
//! `Origin`, content type and declared size, rate limits, the URL's
//! surface (404 for an unknown toolset), authentication, the operator's
//! policy, then the JSON-RPC intake (400 with a JSON-RPC error for a body
//! that is not one message) → rmcp. Unknown paths get 404 after the
//! `Host` guard.

pub(crate) mod auth;
pub(crate) mod connection_watch;
pub(crate) mod guards;
pub(crate) mod health;
pub(crate) mod layers;
pub(crate) mod listener;
pub(crate) mod mcp_gate;
pub(crate) mod mcp_intake;
pub(crate) mod mcp_policy;
pub(crate) mod mcp_url;
pub(crate) mod metrics;
mod occupancy;
pub(crate) mod rate_limit;
pub(crate) mod step;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Router, middleware};
use tower_http::limit::RequestBodyLimitLayer;

use crate::app::App;
use crate::mcp::transport::streamable_http_service;
use crate::oauth::OAuthServer;
use crate::oauth::authorization::complete_authorization;
use crate::oauth::callback::ReceivedCallback;
use crate::oauth::sign_in::BINDING_COOKIE;
use crate::page_kit::cookies::read_cookie;
use crate::page_kit::{PageError, with_page_headers};
use crate::store::PendingSignIn;
use guards::{HostPolicy, McpGuard};
use rate_limit::RateLimiter;

/// The OAuth routes and the people's pages, in two groups. The API group
/// (discovery, registration, token, revocation) answers cross-origin
/// requests; its limiter sits inside the CORS layer so a 429 still carries
/// CORS headers. The page group (`/authorize`, consent, the callback,
/// `/account`, `/confirm`, `/admin`) is same-origin only, by the pages'
/// one Origin rule (`crate::page_kit::check_origin`). The routes that park state
/// for an unauthenticated caller (a client at `/register`, a pending
/// authorization at `/authorize` and `/account/sign-in`) carry the tighter
/// sign-in limiter as well, so that one address cannot fill the store's caps.
fn oauth_routes(
    server: Arc<OAuthServer>,
    limiter: Arc<RateLimiter>,
    sign_ins: Arc<RateLimiter>,
    page_policy: crate::policy::view::PagePolicy,
) -> Router {
    let api = oauth_api_routes(server.clone(), limiter.clone(), sign_ins.clone());
    let pages = page_routes(server, limiter, sign_ins, page_policy);
    api.merge(pages)
        .layer(DefaultBodyLimit::max(FORM_BODY_LIMIT))
        .layer(RequestBodyLimitLayer::new(FORM_BODY_LIMIT))
        .layer(layers::timeout(PAGE_TIMEOUT))
}

/// The API group: discovery, registration, token and revocation, answering
/// cross-origin requests.
fn oauth_api_routes(
    server: Arc<OAuthServer>,
    limiter: Arc<RateLimiter>,
    sign_ins: Arc<RateLimiter>,
) -> Router {
    use crate::oauth::{register, revoke, token};
    let parks_state = middleware::from_fn_with_state(sign_ins, rate_limit::limit);
    Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(crate::oauth::protected_resource),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(crate::oauth::protected_resource),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp/",
            get(crate::oauth::protected_resource),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp/{*surface}",
            get(crate::oauth::protected_resource),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(crate::oauth::authorization_server),
        )
        .route(
            "/.well-known/oauth-authorization-server/mcp",
            get(crate::oauth::authorization_server),
        )
        .route("/register", post(register::register).layer(parks_state))
        .route("/token", post(token::token))
        .route("/revoke", post(revoke::revoke))
        .with_state(server)
        .layer(middleware::from_fn_with_state(limiter, rate_limit::limit))
        .layer(crate::oauth::api_cors())
}

/// The page group: `/authorize`, consent, the callback, `/account`,
/// `/confirm` and `/admin`, same-origin only.
fn page_routes(
    server: Arc<OAuthServer>,
    limiter: Arc<RateLimiter>,
    sign_ins: Arc<RateLimiter>,
    page_policy: crate::policy::view::PagePolicy,
) -> Router {
    use crate::oauth::authorize;
    use crate::pages::{account, admin, confirm, session};
    let parks_state = middleware::from_fn_with_state(sign_ins, rate_limit::limit);
    let page_origin = crate::page_kit::PageOrigin::new(&server.config().issuer);
    Router::new()
        .route(
            "/authorize",
            get(authorize::authorize).layer(parks_state.clone()),
        )
        .route("/authorize/consent", post(authorize::consent))
        .route("/oauth/callback", get(oauth_callback))
        .route("/account", get(account::account))
        .route(
            "/account/sign-in",
            get(session::start_sign_in).layer(parks_state),
        )
        .route("/account/sign-out", post(session::sign_out))
        .route("/account/grants/revoke", post(account::revoke_grant))
        .route("/account/grants/revoke-all", post(account::revoke_all))
        .route("/confirm/{id}", get(confirm::show).post(confirm::decide))
        .route("/admin", get(admin::admin))
        .route("/admin/confirm", get(admin::confirm))
        .route("/admin/actions", post(admin::perform))
        .with_state(server)
        // The operator's policy, for what the pages say of each connection.
        .layer(axum::Extension(page_policy))
        // Everyone's activity on /admin, recomputed at most once a minute.
        .layer(axum::Extension(std::sync::Arc::new(
            crate::pages::everyone::EveryonesCharts::default(),
        )))
        .layer(middleware::from_fn_with_state(limiter, rate_limit::limit))
        .layer(middleware::from_fn_with_state(
            page_origin,
            crate::page_kit::check_origin,
        ))
}

/// `GET /oauth/callback`: one redirect URI at Gitea for both flows. The
/// Gitea leg is the OAuth server's; the pending sign-in's flow says who
/// completes it: the MCP client's authorization, or a page session.
async fn oauth_callback(
    State(server): State<Arc<OAuthServer>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let binding = read_cookie(&headers, BINDING_COOKIE, server.config().secure_cookies);
    let ReceivedCallback {
        pending,
        signed_in,
        app,
        now,
    } = crate::oauth::callback::receive(
        &server,
        query.unwrap_or_default().as_bytes(),
        binding.as_deref(),
    )
    .await?;
    Ok(match &pending.flow {
        PendingSignIn::Client(request) => {
            match complete_authorization(&server, request, signed_in, app, now).await {
                Ok(url) => with_page_headers(Redirect::to(&url).into_response()),
                Err(refusal) => refusal.into_response(),
            }
        }
        PendingSignIn::Page(next) => {
            crate::pages::session::complete_sign_in(&server, *next, signed_in, now).await?
        }
    })
}

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
    // Replicas on PostgreSQL share the windows through the store.
    let store = || {
        app.oauth()
            .map(|o| o.store().clone() as Arc<dyn crate::store::RateLimitStore>)
    };
    let limiter = RateLimiter::from_settings(app.settings())
        .with_hook(hook.clone())
        .with_shared_store(store(), "requests");
    let sign_ins = RateLimiter::sign_ins_from_settings(app.settings())
        .with_hook(hook)
        .with_shared_store(store(), "sign_ins");
    router_with_limiters(app, Arc::new(limiter), Arc::new(sign_ins))
}

/// The router with given rate limiters (whose hooks feed the audit log, see
/// [`RateLimiter::with_hook`]): `limiter` on every group, `sign_ins` on top
/// of it on the routes that park state (see `oauth_routes`). This is the
/// whole route table.
pub fn router_with_limiters(
    app: Arc<App>,
    limiter: Arc<RateLimiter>,
    sign_ins: Arc<RateLimiter>,
) -> Router {
    let settings = app.settings();
    let policy = Arc::new(HostPolicy::from_settings(settings));
    let gate = Arc::new(mcp_gate::McpGate {
        app: app.clone(),
        guard: McpGuard {
            policy: policy.clone(),
            max_body_bytes: settings.limits.mcp_max_body_bytes,
        },
        limiter: limiter.clone(),
    });
    let mcp_timeout = mcp_timeout(settings.limits.gitea_timeout);

    // rmcp checks Host too; it gets the same list as a second line.
    let mcp = streamable_http_service(
        app.call_services().clone(),
        policy.hosts().to_vec(),
        settings.limits.mcp_max_body_bytes,
    );
    // One stack in front of rmcp, built once and given to each MCP URL: the
    // router clones a route's service for every request, and a stack of
    // per-route layers would be cloned, box by box, once per layer
    // (`Router::layer` boxes each; docs/benchmarks.md, issue 30).
    // Its steps are one service for the same reason (`mcp_gate`).
    let mcp_stack = tower::ServiceBuilder::new()
        .layer(layers::timeout(mcp_timeout))
        .layer(mcp_gate::McpGateLayer(gate))
        .service(mcp);
    let mcp_routes = mcp_url::MCP_ROUTES
        .iter()
        .fold(Router::new(), |routes, path| {
            routes.route_service(path, mcp_stack.clone())
        });

    let oauth = app.oauth().cloned();
    let page_policy = crate::policy::view::PagePolicy(app.policy().cloned());
    let metrics = app.metrics().clone();
    let base = Router::new()
        .route("/static/aegis.css", get(crate::page_kit::stylesheet))
        .route("/favicon.ico", get(crate::page_kit::no_favicon))
        .merge(health::routes(app))
        .layer(RequestBodyLimitLayer::new(FORM_BODY_LIMIT))
        .layer(layers::timeout(PAGE_TIMEOUT));

    let mut router = base.merge(mcp_routes);
    if let Some(server) = oauth {
        router = router.merge(oauth_routes(server, limiter, sign_ins, page_policy));
    }
    // The layers around every route, outermost first, as one stack (the
    // steps that do not await are `step::Step`s, not `from_fn`): each
    // `Router::layer` boxes every route once more, and the router clones a
    // route box by box for every request (docs/benchmarks.md, issue 30).
    // Inside the router, they see the matched route.
    let global = tower::ServiceBuilder::new()
        .layer(step::StepLayer(metrics::ObserveRequests(metrics)))
        .layer(step::StepLayer(layers::CloseAfterEarlyRefusal))
        .layer(layers::catch_panic())
        .layer(layers::access_log())
        .option_layer(
            crate::telemetry::exporting().then(|| middleware::from_fn(layers::trace_request)),
        )
        .layer(step::StepLayer(guards::CheckHost(policy)));
    // An explicit fallback: otherwise a merged group's layered default
    // fallback (say `/mcp`'s authentication) would answer unknown paths.
    router.fallback(not_found).layer(global)
}

/// Every path no route claims: 404, through the global layers only.
async fn not_found() -> (axum::http::StatusCode, &'static str) {
    (axum::http::StatusCode::NOT_FOUND, "not found")
}
