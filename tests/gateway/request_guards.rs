//! The request guards on every route group, over real HTTP on loopback:
//! the Host / Origin / content-type matrix across `/mcp`, the OAuth API
//! (`/token`, `/register`) and the pages (`/authorize/consent`,
//! `/account`), body limits (a streamed 100 MB body) and the rule that
//! guards run before authentication.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use reqwest::{Method, StatusCode};
use support::BEARER;
use support::oauth_client::{Backend, OAuthGateway};

const ORIGIN_REFUSAL: &str = "cross-origin requests are not allowed here";
/// The pages' refusal of a foreign `Origin` (`PageError::CrossSite`).
const PAGE_ORIGIN_REFUSAL: &str = "The request came from another site.";

async fn gateway() -> OAuthGateway {
    OAuthGateway::start(Backend::Sqlite, &[]).await
}

/// One route of the matrix: method, path, content type and body as a
/// client sends them.
#[derive(Clone, Copy)]
struct Route {
    method: &'static str,
    path: &'static str,
    content_type: Option<&'static str>,
    body: &'static str,
}

const MCP: Route = Route {
    method: "POST",
    path: "/mcp",
    content_type: Some("application/json"),
    body: r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
};
const TOKEN: Route = Route {
    method: "POST",
    path: "/token",
    content_type: Some("application/x-www-form-urlencoded"),
    body: "grant_type=authorization_code&code=nope",
};
const REGISTER: Route = Route {
    method: "POST",
    path: "/register",
    content_type: Some("application/json"),
    body: r#"{"redirect_uris":["http://127.0.0.1:5599/callback"],"token_endpoint_auth_method":"none"}"#,
};
const CONSENT: Route = Route {
    method: "POST",
    path: "/authorize/consent",
    content_type: Some("application/x-www-form-urlencoded"),
    body: "request_id=x&csrf_token=y&decision=approve",
};
const ACCOUNT: Route = Route {
    method: "GET",
    path: "/account",
    content_type: None,
    body: "",
};

const ALL: [Route; 5] = [MCP, TOKEN, REGISTER, CONSENT, ACCOUNT];

async fn send(gw: &OAuthGateway, route: Route, headers: &[(&str, &str)]) -> (StatusCode, String) {
    let mut req = gw
        .http
        .request(
            Method::from_bytes(route.method.as_bytes()).unwrap(),
            format!("{}{}", gw.url, route.path),
        )
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .bearer_auth(BEARER);
    if let Some(ct) = route.content_type {
        req = req.header("content-type", ct);
    }
    if route.method == "POST" {
        req = req.body(route.body);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let response = req.send().await.unwrap();
    let status = response.status();
    (status, response.text().await.unwrap_or_default())
}

#[tokio::test]
async fn an_unknown_path_is_404_not_an_authentication_challenge() {
    let gw = gateway().await;
    for (method, path) in [(Method::GET, "/nowhere"), (Method::POST, "/metrics")] {
        let response = gw
            .http
            .request(method, format!("{}{path}", gw.url))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
        assert!(!response.headers().contains_key("www-authenticate"));
    }
}

#[tokio::test]
async fn a_refusal_before_the_body_arrives_closes_the_connection_cleanly() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let gw = gateway().await;
    let addr = gw.url.trim_start_matches("http://").to_owned();
    // Headers only: the body is announced but not yet sent, as when a
    // client's body is still on the way when the 401 goes out.
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer agm_not-a-token\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: 104\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer).to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 401"), "{answer}");
    // The client is told not to reuse the connection the server closes.
    assert!(answer.contains("\r\nconnection: close\r\n"), "{answer}");
}

#[tokio::test]
async fn a_foreign_host_is_421_on_every_route() {
    let gw = gateway().await;
    let before = gw.fake.requests().len();
    for route in ALL {
        for host in [
            "evil.example",
            "evil.example:8080",
            "127.0.0.1.evil.example",
        ] {
            let (status, _) = send(&gw, route, &[("host", host)]).await;
            assert_eq!(
                status,
                StatusCode::MISDIRECTED_REQUEST,
                "{} {host}",
                route.path
            );
        }
    }
    // The health check and unknown paths too; loopback names pass.
    let health = gw
        .http
        .get(format!("{}/health", gw.url))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::MISDIRECTED_REQUEST);
    assert_eq!(gw.fake.requests().len(), before, "nothing reached Gitea");
    let unknown = gw
        .http
        .get(format!("{}/nowhere", gw.url))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::MISDIRECTED_REQUEST);
    let ok = gw
        .http
        .get(format!("{}/health", gw.url))
        .header("host", "localhost")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
}

#[tokio::test]
async fn the_origin_matrix() {
    let gw = gateway().await;
    let own = gw.url.clone();
    // Another name of this host: MCP's host policy takes it (loopback
    // names are one), the pages take only the issuer's origin.
    let alias = own.replace("127.0.0.1", "localhost");
    assert_ne!(alias, own);
    // (route, origin, refused by the Origin rule?)
    let cases: Vec<(Route, &str, bool)> = vec![
        (MCP, "https://evil.example", true),
        (MCP, "null", true),
        (MCP, own.as_str(), false),
        (MCP, alias.as_str(), false),
        (TOKEN, "https://evil.example", false),
        (TOKEN, "null", false),
        (REGISTER, "https://evil.example", false),
        (REGISTER, own.as_str(), false),
        (CONSENT, "https://evil.example", true),
        (CONSENT, alias.as_str(), true),
        (CONSENT, "null", false),
        (CONSENT, own.as_str(), false),
        (ACCOUNT, "https://evil.example", true),
        (ACCOUNT, "http://127.0.0.1:1", true),
        (ACCOUNT, alias.as_str(), true),
        (ACCOUNT, "null", false),
        (ACCOUNT, own.as_str(), false),
    ];
    for (route, origin, refused) in cases {
        let (status, body) = send(&gw, route, &[("origin", origin)]).await;
        let refusal_text = if route.path.starts_with("/mcp") {
            body == ORIGIN_REFUSAL
        } else {
            body.contains(PAGE_ORIGIN_REFUSAL)
        };
        if refused {
            assert_eq!(status, StatusCode::FORBIDDEN, "{} {origin}", route.path);
            assert!(refusal_text, "{} {origin}: {body}", route.path);
        } else {
            assert!(!refusal_text, "{} {origin}: {status}", route.path);
        }
    }
    // The API routes answer foreign origins with CORS.
    let (status, _) = send(&gw, REGISTER, &[("origin", "https://evil.example")]).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = send(&gw, MCP, &[("origin", own.as_str())]).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn post_mcp_must_be_json_and_that_is_checked_before_authentication() {
    let gw = gateway().await;
    let before = gw.fake.requests().len();
    for ct in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("application/json-patch+json"),
        None,
    ] {
        for bearer in [Some(BEARER), None] {
            let mut req = gw
                .http
                .post(gw.mcp_url())
                .header("accept", "application/json, text/event-stream")
                .body(MCP.body);
            if let Some(ct) = ct {
                req = req.header("content-type", ct);
            }
            if let Some(b) = bearer {
                req = req.bearer_auth(b);
            }
            let status = req.send().await.unwrap().status();
            assert_eq!(
                status,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{ct:?} {bearer:?}"
            );
        }
    }
    assert_eq!(
        gw.fake.requests().len(),
        before,
        "415 before any Gitea lookup"
    );
    let (status, _) = send(
        &gw,
        Route {
            content_type: Some("application/json; charset=utf-8"),
            ..MCP
        },
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

/// A body of `total` bytes, produced lazily in 64 KiB chunks; `sent`
/// counts what the server pulled.
fn streamed_body(total: usize, sent: Arc<AtomicUsize>) -> reqwest::Body {
    const CHUNK: usize = 64 * 1024;
    let chunks = total.div_ceil(CHUNK);
    let stream = futures::stream::iter(0..chunks).map(move |_| {
        sent.fetch_add(CHUNK, Ordering::Relaxed);
        Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b'a'; CHUNK]))
    });
    reqwest::Body::wrap_stream(stream)
}

const HUNDRED_MB: usize = 100 * 1024 * 1024;

#[tokio::test]
async fn a_streamed_100_mb_body_gets_413_without_being_read() {
    let gw = gateway().await;
    // (path, content type, declared length?, limit)
    let cases = [
        ("/mcp", "application/json", true, 16 * 1024 * 1024),
        ("/mcp", "application/json", false, 16 * 1024 * 1024),
        (
            "/token",
            "application/x-www-form-urlencoded",
            false,
            64 * 1024,
        ),
        ("/register", "application/json", true, 64 * 1024),
        (
            "/authorize/consent",
            "application/x-www-form-urlencoded",
            false,
            64 * 1024,
        ),
        (
            "/account/grants/revoke",
            "application/x-www-form-urlencoded",
            true,
            64 * 1024,
        ),
    ];
    for (path, ct, declared, limit) in cases {
        let sent = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let mut req = gw
            .http
            .post(format!("{}{path}", gw.url))
            .header("content-type", ct)
            .header("accept", "application/json, text/event-stream")
            .bearer_auth(BEARER)
            .body(streamed_body(HUNDRED_MB, sent.clone()));
        if declared {
            req = req.header("content-length", HUNDRED_MB.to_string());
        }
        let response = tokio::time::timeout(Duration::from_secs(30), req.send())
            .await
            .expect("answered in time")
            .unwrap_or_else(|e| panic!("{path} declared={declared}: {e}"));
        assert_eq!(
            response.status(),
            StatusCode::PAYLOAD_TOO_LARGE,
            "{path} declared={declared}"
        );
        let read = sent.load(Ordering::Relaxed);
        assert!(
            read < limit + 8 * 1024 * 1024,
            "{path} declared={declared}: {read} bytes pulled"
        );
        assert!(started.elapsed() < Duration::from_secs(20), "{path}");
    }
    assert!(gw.fake.tool_requests().is_empty());
}

#[tokio::test]
async fn page_forms_over_64_kib_are_413() {
    let gw = gateway().await;
    let big = format!("csrf_token={}", "a".repeat(65 * 1024));
    for path in [
        "/authorize/consent",
        "/account/sign-out",
        "/account/grants/revoke-all",
        "/admin/actions",
        "/token",
        "/revoke",
    ] {
        let response = gw
            .http
            .post(format!("{}{path}", gw.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("origin", "null")
            .body(big.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE, "{path}");
    }
    // Just under the limit is read as usual.
    let (status, _) = send(
        &gw,
        Route {
            body: "grant_type=refresh_token&refresh_token=nope",
            ..TOKEN
        },
        &[],
    )
    .await;
    assert_ne!(status, StatusCode::PAYLOAD_TOO_LARGE);
}
