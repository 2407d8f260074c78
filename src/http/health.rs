//! `/health`, `/health/live` and `/`: unauthenticated, and revealing no
//! configuration.
//! `/health` is for container health checks and monitors: the process
//! answers, the audit log takes entries (a closed one is tried again
//! here), the store (when configured) answers a ping, and Gitea
//! answers `GET /api/v1/version` (probed at most every 10 seconds, so a
//! flood of health checks does not become a flood at Gitea). Both answer
//! 503 `draining` once the process is stopping. `/` names the
//! service, its version and how many tools it serves. Also the client side:
//! [`probe`], which `aegis-gitea-mcp health` runs (a container's health
//! check, where the image has no curl).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use crate::app::App;
use crate::audit::forward::ForwardStatus;
use crate::gitea::admin::AdminTokenState;
use crate::store::schema::SchemaStatus;

/// How long one Gitea probe result is reused.
const GITEA_PROBE_TTL: Duration = Duration::from_secs(10);

/// The health routes' state: the app and the cached Gitea probe.
#[derive(Debug)]
struct Health {
    app: Arc<App>,
    gitea: Mutex<Option<(Instant, bool)>>,
}

/// `/health`, `/health/live` and `/`.
pub fn routes(app: Arc<App>) -> Router {
    let state = Arc::new(Health {
        app,
        gitea: Mutex::new(None),
    });
    Router::new()
        .route("/health", get(health))
        .route("/health/live", get(live))
        .route("/", get(root))
        .with_state(state)
}

/// Liveness: the process answers HTTP and is not stopping. No store or
/// Gitea check, so an orchestrator does not restart the gateway during a
/// Gitea outage, and a balancer checking it does not take every replica
/// out at once when Gitea fails (that is what `/health` reports).
async fn live(State(health): State<Arc<Health>>) -> Response {
    if health.app.draining().is_draining() {
        return draining();
    }
    Json(json!({"status": "ok"})).into_response()
}

/// 503 while the process drains: send nothing new here.
fn draining() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({"status": "draining"})),
    )
        .into_response()
}

async fn root(State(health): State<Arc<Health>>) -> Json<serde_json::Value> {
    Json(json!({
        "name": env!("CARGO_PKG_NAME"),
        "version": crate::build_info::VERSION,
        "tools": health.app.admission().tools(&crate::surface::Surface::default()).len(),
        "mcp": "/mcp",
    }))
}

/// 200 when every check passes, else 503; it names the build and, with a
/// store, the store's schema level and this binary's; each check says `ok`,
/// `unavailable` or `not_configured` (the admin token: `ok`, `rejected`,
/// `unknown` until Gitea has been asked, or `not_configured`; the audit
/// log: `ok` or `unwritable`; forwarding: `ok`, `behind`, `down`,
/// `blocked` or `not_configured`, with the lag in entries and seconds),
/// nothing more; 503 `draining` once the process is stopping.
async fn health(State(health): State<Arc<Health>>) -> Response {
    if health.app.draining().is_draining() {
        return draining();
    }
    let (store, schema) = store_check(&health.app).await;
    let gitea = if gitea_reachable(&health).await {
        "ok"
    } else {
        "unavailable"
    };
    // A token Gitea refuses fails every call of the admin account; without
    // OAuth that is every call, so it is unhealthy. With OAuth, people's
    // calls still work: reported, not fatal, so a balancer keeps serving them.
    let admin_token = health.app.admin_token_state();
    let admin_fatal =
        admin_token == Some(AdminTokenState::Rejected) && health.app.oauth().is_none();
    // Every call is refused while the audit log cannot be written: a
    // balancer should route around this replica until it can.
    let audit = if health.app.audit().check_writable().await {
        "ok"
    } else {
        "unwritable"
    };
    // Forwarding: behind is reported; past AUDIT_FORWARD_MAX_LAG_MINUTES
    // every call is refused, so unhealthy.
    let forward = health.app.audit().forwarding().map(|state| state.status());
    let forward_check = forward_check(forward);
    // A gap is unhealthy where the operator bounded the lag: the copy off
    // the host is known to be incomplete.
    let strict_forwarding = health
        .app
        .audit()
        .forwarding()
        .is_some_and(|state| state.bounded());
    let healthy = store != "unavailable"
        && gitea == "ok"
        && !admin_fatal
        && audit == "ok"
        && forward_check != "blocked"
        && !(forward_check == "gap" && strict_forwarding);
    let status = if healthy {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(json!({
            "status": if healthy { "ok" } else { "degraded" },
            "version": crate::build_info::VERSION,
            "schema": schema.map(|s| json!({"store": s.store.0, "binary": s.binary.0})),
            "tools": health.app.admission().tools(&crate::surface::Surface::default()).len(),
            "checks": {
                "store": store,
                "gitea": gitea,
                "admin_token": admin_token.map_or("not_configured", AdminTokenState::as_str),
                "audit": audit,
                "audit_forward": forward_check,
            },
            "audit_forward": forward.map(|status| json!({
                "lag_entries": status.lag_entries,
                "lag_seconds": status.lag_seconds,
                "missing_entries": status.missing_entries,
            })),
        })),
    )
        .into_response()
}

/// The store's check (`ok`, `unavailable` or `not_configured`) and, when it
/// answers, its schema status.
async fn store_check(app: &App) -> (&'static str, Option<SchemaStatus>) {
    // The store's schema is read now, not at start: another replica may
    // have migrated it, and a mixed set shows here (docs/operations.md).
    match app.oauth() {
        None => ("not_configured", None),
        Some(server) => match server.store().schema_status().await {
            Ok(status) => ("ok", Some(status)),
            Err(err) => {
                tracing::warn!(error = %err, "health: the store does not answer");
                ("unavailable", None)
            }
        },
    }
}

/// The forwarding check: `blocked`, `gap`, `down`, `behind`, `ok`, or
/// `not_configured`, the first that holds.
fn forward_check(forward: Option<ForwardStatus>) -> &'static str {
    match forward {
        None => "not_configured",
        Some(status) if status.blocked => "blocked",
        Some(status) if status.missing_entries > 0 => "gap",
        Some(status) if !status.sink_up => "down",
        Some(status) if status.lag_entries > 0 => "behind",
        Some(_) => "ok",
    }
}

/// Gitea's `/api/v1/version` answers 2xx; cached for [`GITEA_PROBE_TTL`].
async fn gitea_reachable(health: &Health) -> bool {
    if let Some((at, ok)) = *health.gitea.lock().unwrap_or_else(|e| e.into_inner())
        && at.elapsed() < GITEA_PROBE_TTL
    {
        return ok;
    }
    let url = format!("{}/version", health.app.settings().gitea_api_base());
    let ok = health.app.gitea_client().get_json(&url, None).await.is_ok();
    if !ok {
        tracing::warn!("health: Gitea does not answer /api/v1/version");
    }
    health.app.metrics().set_gitea_up(ok);
    *health.gitea.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), ok));
    ok
}

/// Why a health probe failed.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("{0} is not an http URL")]
    NotHttp(String),
    #[error("no answer from {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("{url} answered {status}")]
    Unhealthy { url: String, status: u16 },
}

/// `GET url` (a gateway's `/health`) with short timeouts, no proxy and no
/// redirects: `Ok` on a 200.
pub async fn probe(url: &str) -> Result<(), ProbeError> {
    crate::tls::install_crypto_provider();
    let parsed = url::Url::parse(url).map_err(|_| ProbeError::NotHttp(url.to_owned()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ProbeError::NotHttp(url.to_owned()));
    }
    let unreachable = |err: reqwest::Error| ProbeError::Unreachable {
        url: url.to_owned(),
        reason: err.without_url().to_string(),
    };
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(unreachable)?;
    let response = client.get(parsed).send().await.map_err(unreachable)?;
    match response.status() {
        StatusCode::OK => Ok(()),
        status => Err(ProbeError::Unhealthy {
            url: url.to_owned(),
            status: status.as_u16(),
        }),
    }
}
