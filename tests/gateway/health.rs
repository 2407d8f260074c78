//! `/health` and `/` over real HTTP: what they check, what they reveal,
//! and that the Gitea probe is cached.

use crate::support;

use reqwest::StatusCode;
use serde_json::Value;
use support::Gateway;
use support::oauth_client::{Backend, OAuthGateway};

async fn get(url: &str) -> (StatusCode, Value) {
    let response = reqwest::get(url).await.unwrap();
    (response.status(), response.json().await.unwrap())
}

#[tokio::test]
async fn health_is_ok_when_gitea_answers() {
    let gw = Gateway::start(&[]).await;
    let (status, body) = get(&format!("{}/health", gw.url)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "ok");
    assert_eq!(body["checks"]["gitea"], "ok");
    assert_eq!(body["checks"]["store"], "not_configured");
    assert_eq!(body["checks"]["admin_token"], "unknown");
    assert_eq!(
        body["tools"],
        aegis_gitea_mcp::catalog::core::CORE_TOOLS.len() + 4
    );
}

/// A `GITEA_TOKEN` Gitea refuses: once asked (here by a call with the
/// bearer), `/health` says so, and without OAuth, where every call acts
/// with it, answers 503.
#[tokio::test]
async fn health_reports_a_rejected_admin_token() {
    let gw = Gateway::start(&[("GITEA_TOKEN", "a-token-gitea-does-not-know")]).await;
    let (_, body) = get(&format!("{}/health", gw.url)).await;
    assert_eq!(body["checks"]["admin_token"], "unknown");
    let client = gw.client().await;
    let _ = support::call(&client, "gitea_user_get_current", serde_json::json!({})).await;
    let (status, body) = get(&format!("{}/health", gw.url)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["checks"]["admin_token"], "rejected");
    assert!(
        !body.to_string().contains("a-token-gitea"),
        "no token revealed"
    );
}

#[tokio::test]
async fn health_reports_the_store_when_oauth_is_on() {
    let gw = OAuthGateway::start(Backend::Sqlite, &[]).await;
    let (status, body) = get(&format!("{}/health", gw.url)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["checks"]["store"], "ok");
}

#[tokio::test]
async fn health_is_503_when_gitea_does_not_answer() {
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let gw = Gateway::start(&[("GITEA_URL", url.as_str())]).await;
    let (status, body) = get(&format!("{}/health", gw.url)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["status"], "degraded");
    assert_eq!(body["checks"]["gitea"], "unavailable");
    assert!(
        !body.to_string().contains(&url),
        "no configuration revealed"
    );
}

#[tokio::test]
async fn liveness_does_not_depend_on_gitea() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let gw = Gateway::start(&[("GITEA_URL", url.as_str())]).await;
    let (status, _) = get(&format!("{}/health", gw.url)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let (status, body) = get(&format!("{}/health/live", gw.url)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, serde_json::json!({"status": "ok"}));
}

#[tokio::test]
async fn the_gitea_probe_is_cached() {
    let gw = Gateway::start(&[]).await;
    for _ in 0..5 {
        let (status, _) = get(&format!("{}/health", gw.url)).await;
        assert_eq!(status, StatusCode::OK);
    }
    let probes = gw
        .fake
        .requests()
        .iter()
        .filter(|r| r.uri == "/api/v1/version")
        .count();
    assert_eq!(probes, 1);
}

#[tokio::test]
async fn the_root_names_the_service_and_nothing_else() {
    let gw = Gateway::start(&[]).await;
    let (status, body) = get(&format!("{}/", gw.url)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["name"], "aegis-gitea-mcp");
    assert_eq!(
        body["tools"],
        aegis_gitea_mcp::catalog::core::CORE_TOOLS.len() + 4
    );
    let text = body.to_string();
    assert!(!text.contains(&gw.fake.url) && !text.contains(support::BEARER));
}

/// `aegis-gitea-mcp health [--url URL]` with `env`: (exit code, stderr).
async fn health_command(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let mut cmd = std::process::Command::new(support::gateway_process::BIN);
    cmd.arg("health")
        .args(args)
        .env_clear()
        .envs(env.iter().copied());
    // Off the runtime: the gateways this test probes run on it.
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_health_command_exits_0_only_on_a_healthy_gateway() {
    let healthy = Gateway::start(&[]).await;
    let (code, _) = health_command(&["--url", &format!("{}/health", healthy.url)], &[]).await;
    assert_eq!(code, 0);
    // The default URL is loopback at MCP_PORT.
    let port = healthy.url.rsplit(':').next().unwrap();
    assert_eq!(health_command(&[], &[("MCP_PORT", port)]).await.0, 0);

    // Degraded (Gitea down): 503, exit 1, the status named.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let gitea = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let degraded = Gateway::start(&[("GITEA_URL", gitea.as_str())]).await;
    let (code, stderr) = health_command(&["--url", &format!("{}/health", degraded.url)], &[]).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("answered 503"), "{stderr}");

    // Nothing listening.
    let (code, stderr) = health_command(&["--url", &format!("{gitea}/health")], &[]).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("no answer"), "{stderr}");
}
