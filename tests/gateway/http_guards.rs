//! The HTTP edge of `/mcp`, spoken to with a plain HTTP client: bearer
//! authentication, body limits, methods, protocol versions, malformed
//! JSON-RPC, Host and Origin checks.

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{BEARER, Gateway};

fn http() -> reqwest::Client {
    aegis_gitea_mcp::tls::install_crypto_provider();
    reqwest::Client::new()
}

fn list_request() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
}

/// A JSON POST to `/mcp` as an MCP client sends it, without credentials or
/// protocol version (tests add what they exercise).
fn mcp_post(gw: &Gateway, body: String) -> reqwest::RequestBuilder {
    http()
        .post(gw.mcp_url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body)
}

async fn post(gw: &Gateway, bearer: Option<&str>, body: String) -> reqwest::Response {
    let mut req = mcp_post(gw, body).header("mcp-protocol-version", "2025-11-25");
    if let Some(b) = bearer {
        req = req.bearer_auth(b);
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn missing_bearer_gets_401_with_a_bearer_challenge() {
    let gw = Gateway::start(&[]).await;
    let resp = post(&gw, None, list_request().to_string()).await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert!(
        resp.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer")
    );
}

#[tokio::test]
async fn wrong_bearer_gets_401_invalid_token() {
    let gw = Gateway::start(&[]).await;
    let resp = post(
        &gw,
        Some("wrong-bearer-0123456789abcdef0123456"),
        list_request().to_string(),
    )
    .await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    assert!(
        resp.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .contains(r#"error="invalid_token""#)
    );
    assert!(gw.fake.tool_requests().is_empty());
}

#[tokio::test]
async fn right_bearer_gets_a_json_answer_without_a_session() {
    let gw = Gateway::start(&[]).await;
    let resp = post(&gw, Some(BEARER), list_request().to_string()).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    assert!(resp.headers().get("mcp-session-id").is_none());
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["result"]["tools"].as_array().unwrap().len(), 486);
}

#[tokio::test]
async fn initialize_negotiates_a_supported_version_and_gives_instructions() {
    let gw = Gateway::start(&[]).await;
    for version in ["2025-06-18", "2025-11-25"] {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}});
        let resp = mcp_post(&gw, init.to_string())
            .bearer_auth(BEARER)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["result"]["protocolVersion"], version);
        assert!(
            body["result"]["instructions"]
                .as_str()
                .unwrap()
                .contains("untrusted")
        );
    }
}

#[tokio::test]
async fn unsupported_protocol_version_header_gets_400() {
    let gw = Gateway::start(&[]).await;
    let resp = mcp_post(&gw, list_request().to_string())
        .bearer_auth(BEARER)
        .header("mcp-protocol-version", "1999-01-01")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn get_on_mcp_is_405() {
    let gw = Gateway::start(&[]).await;
    let resp = http()
        .get(gw.mcp_url())
        .bearer_auth(BEARER)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn malformed_json_rpc_is_refused_without_a_panic() {
    let gw = Gateway::start(&[]).await;
    for body in ["{not json", "[]", "{\"jsonrpc\":\"2.0\"}", "null"] {
        let resp = post(&gw, Some(BEARER), body.to_owned()).await;
        assert!(resp.status().is_client_error(), "{body}: {}", resp.status());
    }
    // The server is still alive.
    let resp = post(&gw, Some(BEARER), list_request().to_string()).await;
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn oversized_body_gets_413() {
    let gw = Gateway::start(&[]).await;
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"gitea_api_request","arguments":{{"method":"POST","path":"/x","body":"{}"}}}}}}"#,
        "a".repeat(17 * 1024 * 1024)
    );
    let resp = post(&gw, Some(BEARER), huge).await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(gw.fake.tool_requests().is_empty());
}

#[tokio::test]
async fn foreign_host_header_gets_421_before_authentication() {
    let gw = Gateway::start(&[]).await;
    let resp = mcp_post(&gw, list_request().to_string())
        .bearer_auth(BEARER)
        .header("host", "evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::MISDIRECTED_REQUEST);
    assert!(
        gw.fake.requests().is_empty(),
        "not even the admin login lookup"
    );
}

#[tokio::test]
async fn health_reports_version_and_tool_count_only() {
    let gw = Gateway::start(&[]).await;
    let body: Value = http()
        .get(format!("{}/health", gw.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["status"], "ok");
    assert_eq!(
        body["tools"],
        aegis_gitea_mcp::catalog::core::CORE_TOOLS.len() + 4
    );
    assert!(!body.to_string().contains(support::ADMIN_TOKEN));
}

#[tokio::test]
async fn foreign_origin_gets_403_before_authentication() {
    let gw = Gateway::start(&[]).await;
    let resp = mcp_post(&gw, list_request().to_string())
        .header("origin", "https://evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn own_origin_is_accepted() {
    let gw = Gateway::start(&[]).await;
    // The configured port (PUBLIC_BASE_URL's); the test server's own random
    // port stands in for it.
    let resp = mcp_post(&gw, list_request().to_string())
        .bearer_auth(BEARER)
        .header("origin", "http://localhost:8080")
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn oauth_configuration_ends_unauthenticated_loopback_access() {
    let gw = Gateway::start(&[
        ("MCP_BEARER_TOKEN", ""),
        ("GITEA_OAUTH_CLIENT_ID", "client"),
        ("GITEA_OAUTH_CLIENT_SECRET", "secret"),
        ("TOKEN_ENCRYPTION_KEY", "0123456789abcdef0123456789abcdef"),
    ])
    .await;
    let resp = post(&gw, None, list_request().to_string()).await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
}

/// Sends `head` (the request line and headers, without the blank line) on
/// a fresh connection and returns the status of the answer.
async fn raw_status(gw: &Gateway, head: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = gw.url.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(format!("{head}\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {answer:?}"))
}

/// F13: a `Host` that is not a valid authority is refused, not read
/// leniently as the host it starts with.
#[tokio::test]
async fn a_host_that_is_not_a_valid_authority_is_refused() {
    let gw = Gateway::start(&[]).await;
    let port = gw.url.rsplit(':').next().unwrap().to_owned();
    assert_eq!(
        raw_status(
            &gw,
            &format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}")
        )
        .await,
        200
    );
    for host in [
        "127.0.0.1:evil".to_owned(),
        format!("127.0.0.1:{port}x"),
        "127.0.0.1:99999".to_owned(),
        format!("127.0.0.1 :{port}"),
        format!("127.0.0.1:{port} x"),
        "127.0.0.1@evil.example".to_owned(),
        "[::1".to_owned(),
        String::new(),
    ] {
        let status = raw_status(&gw, &format!("GET /health HTTP/1.1\r\nHost: {host}")).await;
        assert!(status == 400 || status == 421, "{host:?}: {status}");
    }
}

/// F13: two `Host` headers are refused, whichever comes first.
#[tokio::test]
async fn two_host_headers_are_refused() {
    let gw = Gateway::start(&[]).await;
    for pair in [
        "Host: 127.0.0.1\r\nHost: evil.example",
        "Host: evil.example\r\nHost: 127.0.0.1",
        "Host: 127.0.0.1\r\nHost: 127.0.0.1",
    ] {
        let status = raw_status(&gw, &format!("GET /health HTTP/1.1\r\n{pair}")).await;
        assert_eq!(status, 400, "{pair:?}");
    }
}

/// F13: an absolute-form target must name the same authority as `Host`.
#[tokio::test]
async fn an_absolute_form_target_that_disagrees_with_host_is_refused() {
    let gw = Gateway::start(&[]).await;
    let status = raw_status(
        &gw,
        "GET http://evil.example/health HTTP/1.1\r\nHost: 127.0.0.1",
    )
    .await;
    assert!(status == 400 || status == 421, "{status}");
    let status = raw_status(
        &gw,
        "GET http://127.0.0.1/health HTTP/1.1\r\nHost: 127.0.0.1",
    )
    .await;
    assert_eq!(status, 200);
}
