//! Rate limits before authentication, over real HTTP on loopback: 429 with
//! `Retry-After`, `X-Forwarded-For` honoured only from trusted proxies, and
//! a flood of random IPs and tokens that leaves a limited client limited and
//! a quiet one alone (SEC-09).

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use futures::StreamExt;
use reqwest::StatusCode;
use support::Gateway;
use support::oauth_client::{Backend, OAuthGateway};

fn http() -> reqwest::Client {
    aegis_gitea_mcp::tls::install_crypto_provider();
    reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()
        .unwrap()
}

const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;

/// `POST /mcp` as an MCP client sends it, from `xff` (if any) with `token`
/// (if any).
async fn mcp(
    http: &reqwest::Client,
    gw: &Gateway,
    xff: Option<&str>,
    token: Option<&str>,
) -> reqwest::Response {
    let mut req = support::mcp_post(http, gw.mcp_url(), LIST);
    if let Some(x) = xff {
        req = req.header("x-forwarded-for", x);
    }
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.unwrap()
}

fn retry_after(response: &reqwest::Response) -> u64 {
    response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .expect("Retry-After in whole seconds")
}

#[tokio::test]
async fn over_the_ip_limit_is_429_with_retry_after_before_authentication() {
    let gw = Gateway::start(&[("RATE_LIMIT_PER_IP", "3")]).await;
    let http = http();
    for _ in 0..3 {
        let status = mcp(&http, &gw, None, None).await.status();
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let refused = mcp(&http, &gw, None, Some(support::BEARER)).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let seconds = retry_after(&refused);
    assert!((1..=120).contains(&seconds), "{seconds}");
    // The OAuth-less gateway's health check is not rate limited.
    let health = http.get(format!("{}/health", gw.url)).send().await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
}

#[tokio::test]
async fn over_the_token_limit_is_429_for_that_token_only() {
    let gw = Gateway::start(&[("RATE_LIMIT_PER_TOKEN", "2")]).await;
    let http = http();
    for _ in 0..2 {
        let status = mcp(&http, &gw, None, Some(support::BEARER)).await.status();
        assert_eq!(status, StatusCode::OK);
    }
    let refused = mcp(&http, &gw, None, Some(support::BEARER)).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(retry_after(&refused) >= 1);
    let other = mcp(&http, &gw, None, Some("another-token-0123456789abcdef")).await;
    assert_eq!(other.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn spoofed_forwarded_for_from_an_untrusted_peer_is_ignored() {
    let gw = Gateway::start(&[("RATE_LIMIT_PER_IP", "3")]).await;
    let http = http();
    for i in 0..3 {
        let xff = format!("198.51.100.{i}");
        let status = mcp(&http, &gw, Some(&xff), None).await.status();
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    // A fresh spoofed address does not make a fresh client.
    let status = mcp(&http, &gw, Some("203.0.113.77"), None).await.status();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn forwarded_for_from_a_trusted_proxy_names_the_client() {
    let gw = Gateway::start(&[
        ("RATE_LIMIT_PER_IP", "3"),
        ("FORWARDED_ALLOW_IPS", "127.0.0.1, 10.0.0.0/8"),
    ])
    .await;
    let http = http();
    // Client 198.51.100.1 behind two trusted proxies; whatever it put on
    // the left itself does not count.
    for i in 0..3 {
        let xff = format!("6.6.6.{i}, 198.51.100.1, 10.1.2.3");
        let status = mcp(&http, &gw, Some(&xff), None).await.status();
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let status = mcp(&http, &gw, Some("198.51.100.1"), None).await.status();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    // Another client behind the same proxy is counted on its own.
    let status = mcp(&http, &gw, Some("198.51.100.2"), None).await.status();
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flood_of_random_ips_and_tokens_leaves_a_limited_client_limited() {
    let gw = Gateway::start(&[
        ("RATE_LIMIT_PER_IP", "5"),
        ("RATE_LIMIT_PER_TOKEN", "5"),
        ("FORWARDED_ALLOW_IPS", "127.0.0.1"),
    ])
    .await;
    let http = http();
    let (limited_ip, limited_token) = ("198.51.100.1", "limited-token-0123456789abcdef");
    let (quiet_ip, quiet_token) = ("198.51.100.2", "quiet-token-0123456789abcdef");
    for _ in 0..5 {
        let status = mcp(&http, &gw, Some(limited_ip), Some(limited_token))
            .await
            .status();
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let status = mcp(&http, &gw, Some(limited_ip), Some(limited_token))
        .await
        .status();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    for _ in 0..2 {
        let status = mcp(&http, &gw, Some(quiet_ip), Some(quiet_token))
            .await
            .status();
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }

    // 10,000 requests, each from a new address with a new token: more keys
    // than a key set holds.
    let started = Instant::now();
    let refused = Arc::new(AtomicUsize::new(0));
    futures::stream::iter(0..10_000u32)
        .for_each_concurrent(64, |i| {
            let (http, gw, refused) = (&http, &gw, refused.clone());
            async move {
                let ip = format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255);
                let token = format!("flood-{i:08}-{:016x}", rand_u64(i));
                let status = mcp(http, gw, Some(&ip), Some(&token)).await.status();
                if status == StatusCode::TOO_MANY_REQUESTS {
                    refused.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
        .await;
    eprintln!("10,000 fresh keys answered in {:?}", started.elapsed());
    assert_eq!(
        refused.load(Ordering::Relaxed),
        0,
        "fresh keys are not limited"
    );

    // Still limited: by IP, by token, and both.
    let status = mcp(&http, &gw, Some(limited_ip), Some(limited_token))
        .await
        .status();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    let status = mcp(&http, &gw, Some(limited_ip), None).await.status();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    let status = mcp(&http, &gw, Some("203.0.113.5"), Some(limited_token))
        .await
        .status();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    // The quiet client is not limited.
    let status = mcp(&http, &gw, Some(quiet_ip), Some(quiet_token))
        .await
        .status();
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_429_from_the_oauth_api_carries_cors_headers() {
    let gw = OAuthGateway::start(Backend::Sqlite, &[("RATE_LIMIT_PER_IP", "2")]).await;
    let http = http();
    let token = |http: &reqwest::Client| {
        http.post(format!("{}/token", gw.url))
            .header("origin", "https://inspector.example")
            .form(&[("grant_type", "authorization_code"), ("code", "nope")])
            .send()
    };
    for _ in 0..2 {
        // No client: invalid_client, answered before the limit is reached.
        let status = token(&http).await.unwrap().status();
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let refused = token(&http).await.unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    // A browser-based client can read the refusal and when to retry.
    assert_eq!(refused.headers()["access-control-allow-origin"], "*");
    let exposed = refused.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    assert!(exposed.contains("retry-after"), "{exposed}");
    assert!(retry_after(&refused) >= 1);
}

#[tokio::test]
async fn routes_that_park_state_have_a_tighter_limit_per_ip() {
    let gw = OAuthGateway::start(Backend::Sqlite, &[("RATE_LIMIT_SIGN_INS_PER_IP", "3")]).await;
    let http = http();
    // /authorize, /account/sign-in and /register share one budget.
    for path in ["/authorize", "/account/sign-in", "/authorize"] {
        let status = http
            .get(format!("{}{path}", gw.url))
            .send()
            .await
            .unwrap()
            .status();
        assert_ne!(status, StatusCode::TOO_MANY_REQUESTS, "{path}");
    }
    let register = http
        .post(format!("{}/register", gw.url))
        .json(&serde_json::json!({"redirect_uris": ["http://127.0.0.1:5599/cb"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(register.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(retry_after(&register) >= 1);
    // Other routes keep the general budget.
    let metadata = http
        .get(format!("{}/.well-known/oauth-authorization-server", gw.url))
        .send()
        .await
        .unwrap();
    assert_eq!(metadata.status(), StatusCode::OK);
}

/// A cheap deterministic scramble, so tokens differ in more than a counter.
fn rand_u64(i: u32) -> u64 {
    let mut x = u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 31;
    x.wrapping_mul(0xBF58_476D_1CE4_E5B9)
}
