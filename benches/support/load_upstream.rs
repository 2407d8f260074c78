//! The load bench's fake Gitea (axum, loopback): `GET
//! /api/v1/repos/{owner}/{repo}/issues` answers a fixed page of 20 issues
//! with `X-Total-Count` and `Link`, or for [`BIG_REPO`] one page of many
//! (the big-list scenario); `GET /api/v1/user` answers `{"login":"admin"}`.
//! Both check the token the way Gitea does.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use super::gitea_issues;
use super::{GITEA_TOKEN, ISSUES_PER_PAGE, OWNER, REPO, TOTAL_ISSUES};

/// The repository whose list is the big one.
pub const BIG_REPO: &str = "big-list";

/// The fixed answers of the fake Gitea's issue lists.
struct Upstream {
    issues: Bytes,
    link: HeaderValue,
    /// The list of [`BIG_REPO`]: `big_issues` issues on one page.
    big: Bytes,
}

impl Upstream {
    fn new(addr: SocketAddr, big_issues: usize) -> anyhow::Result<Self> {
        let base = format!("http://{addr}");
        let issues: Vec<Value> = (1..=ISSUES_PER_PAGE as u64)
            .map(|n| gitea_issues::gitea_issue(&base, n, ""))
            .collect();
        // About 3 KB per issue, as Gitea's own lists of real issues.
        let big: Vec<Value> = (1..=big_issues as u64)
            .map(|n| gitea_issues::gitea_issue(&base, n, ""))
            .collect();
        let page = |p: u64| {
            format!("<{base}/api/v1/repos/{OWNER}/{REPO}/issues?limit={ISSUES_PER_PAGE}&page={p}>")
        };
        let last = TOTAL_ISSUES.div_ceil(ISSUES_PER_PAGE as u64);
        let link = format!(r#"{}; rel="next",{}; rel="last""#, page(2), page(last));
        Ok(Self {
            issues: Bytes::from(serde_json::to_vec(&issues)?),
            link: HeaderValue::from_str(&link)?,
            big: Bytes::from(serde_json::to_vec(&big)?),
        })
    }
}

fn authorized(headers: &HeaderMap) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("token {GITEA_TOKEN}"))
}

async fn list_issues(
    State(up): State<Arc<Upstream>>,
    Path((_, repo)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if !authorized(&headers) {
        return (
            StatusCode::UNAUTHORIZED,
            r#"{"message":"token is required"}"#,
        )
            .into_response();
    }
    let json = (
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json;charset=utf-8"),
    );
    if repo == BIG_REPO {
        return ([json], up.big.clone()).into_response();
    }
    (
        [
            json,
            (
                header::HeaderName::from_static("x-total-count"),
                HeaderValue::from(TOTAL_ISSUES),
            ),
            (header::LINK, up.link.clone()),
        ],
        up.issues.clone(),
    )
        .into_response()
}

async fn current_user(headers: HeaderMap) -> Response {
    if !authorized(&headers) {
        return (
            StatusCode::UNAUTHORIZED,
            r#"{"message":"token is required"}"#,
        )
            .into_response();
    }
    axum::Json(json!({"id": 1, "login": "admin"})).into_response()
}

pub async fn loopback_listener() -> anyhow::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let addr = listener.local_addr()?;
    Ok((listener, addr))
}

/// The fake Gitea on a loopback port, and the sizes of its two lists.
pub async fn spawn_upstream(big_issues: usize) -> anyhow::Result<(SocketAddr, usize, usize)> {
    let (listener, addr) = loopback_listener().await?;
    let upstream = Arc::new(Upstream::new(addr, big_issues)?);
    let sizes = (upstream.issues.len(), upstream.big.len());
    let router = Router::new()
        .route("/api/v1/repos/{owner}/{repo}/issues", get(list_issues))
        .route("/api/v1/user", get(current_user))
        .with_state(upstream);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            eprintln!("fake upstream stopped: {e}");
        }
    });
    Ok((addr, sizes.0, sizes.1))
}
