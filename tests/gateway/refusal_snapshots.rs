//! Every refusal `/mcp` answers before a tool runs, and the tool-level
//! refusals a model reads, as a client receives them: status, the headers
//! that matter (`Content-Type`, `WWW-Authenticate`, `Retry-After`) and the
//! body, snapshotted with insta after the gateway's random URL is
//! normalised. Each is one snapshot, so a change of wording or shape is a
//! reviewed change.

use reqwest::StatusCode;
use serde_json::json;

use crate::support::oauth_client::{Backend, OAuthGateway};
use crate::support::{BEARER, Gateway};

const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

/// What a client sees of a refusal.
async fn seen(base: &str, response: reqwest::Response) -> String {
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| format!("{name}: {}\n", v.to_str().unwrap_or("?")))
            .unwrap_or_default()
    };
    let headers = format!(
        "{}{}{}",
        header("content-type"),
        header("www-authenticate"),
        header("retry-after")
    );
    let body = response.text().await.unwrap();
    format!("HTTP {status}\n{headers}\n{body}").replace(base, "http://gateway.test")
}

fn post(base: &str, path: &str) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
}

#[tokio::test]
async fn refusals_before_authentication() {
    let gw = Gateway::start(&[]).await;
    let cases = [
        (
            "mcp_foreign_origin",
            post(&gw.url, "/mcp")
                .header("origin", "https://evil.example")
                .bearer_auth(BEARER)
                .body(LIST),
        ),
        (
            "mcp_not_json",
            post(&gw.url, "/mcp")
                .header("content-type", "text/plain")
                .bearer_auth(BEARER)
                .body(LIST),
        ),
        (
            "mcp_declared_body_too_large",
            post(&gw.url, "/mcp")
                .header("content-length", (32 * 1024 * 1024).to_string())
                .bearer_auth(BEARER)
                .body(LIST),
        ),
        (
            "mcp_unknown_toolset",
            post(&gw.url, "/mcp/x/nope").bearer_auth(BEARER).body(LIST),
        ),
        ("mcp_missing_bearer", post(&gw.url, "/mcp").body(LIST)),
        (
            "mcp_wrong_bearer",
            post(&gw.url, "/mcp")
                .bearer_auth("not-the-bearer-0123456789abcdef0123")
                .body(LIST),
        ),
        (
            "mcp_token_in_query",
            post(&gw.url, "/mcp?access_token=x")
                .bearer_auth(BEARER)
                .body(LIST),
        ),
    ];
    for (name, request) in cases {
        let response = request.send().await.unwrap();
        insta::assert_snapshot!(name, seen(&gw.url, response).await);
    }
}

#[tokio::test]
async fn refusals_of_a_jsonrpc_body() {
    let gw = Gateway::start(&[]).await;
    for (name, body) in [
        ("mcp_body_not_json", "{not json".to_owned()),
        ("mcp_body_not_a_request", r#"{"jsonrpc":"2.0","id":1}"#.to_owned()),
        (
            "mcp_unknown_tool",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "gitea_nope", "arguments": {}}})
            .to_string(),
        ),
        (
            "mcp_invalid_arguments",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "gitea_issue_get_issue",
                              "arguments": {"owner": "o", "repo": "r", "index": "one", "colour": "red"}}})
            .to_string(),
        ),
    ] {
        let response = post(&gw.url, "/mcp").bearer_auth(BEARER).body(body).send().await.unwrap();
        insta::assert_snapshot!(name, seen(&gw.url, response).await);
    }
}

#[tokio::test]
async fn the_rate_limit_refusal() {
    let gw = Gateway::start(&[("RATE_LIMIT_PER_IP", "1")]).await;
    let mut last = None;
    for _ in 0..3 {
        last = Some(
            post(&gw.url, "/mcp")
                .bearer_auth(BEARER)
                .body(LIST)
                .send()
                .await
                .unwrap(),
        );
    }
    let response = last.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    insta::assert_snapshot!("mcp_rate_limited", seen(&gw.url, response).await);
}

#[tokio::test]
async fn the_oauth_challenges_of_mcp() {
    let gateway = OAuthGateway::start(Backend::Sqlite, &[]).await;
    let response = post(&gateway.url, "/mcp/readonly")
        .body(LIST)
        .send()
        .await
        .unwrap();
    insta::assert_snapshot!(
        "mcp_oauth_missing_token",
        seen(&gateway.url, response).await
    );
    let response = post(&gateway.url, "/mcp")
        .bearer_auth("agm_unknown")
        .body(LIST)
        .send()
        .await
        .unwrap();
    insta::assert_snapshot!(
        "mcp_oauth_unknown_token",
        seen(&gateway.url, response).await
    );
    let client = gateway.public_client().await;
    let tokens = gateway.tokens_at(&client, "alice", "/mcp/x/issue").await;
    let response = post(&gateway.url, "/mcp")
        .bearer_auth(&tokens.access_token)
        .body(LIST)
        .send()
        .await
        .unwrap();
    insta::assert_snapshot!(
        "mcp_oauth_token_of_another_url",
        seen(&gateway.url, response).await
    );
    // A write with a token the person allowed only to read: the step-up.
    let reading = gateway.read_tokens_at(&client, "alice", "/mcp").await;
    let response = post(&gateway.url, "/mcp")
        .bearer_auth(&reading.access_token)
        .body(
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gitea_issue_create_issue","arguments":{"owner":"acme","repo":"widgets","body":{"title":"t"}}}}"#,
        )
        .send()
        .await
        .unwrap();
    insta::assert_snapshot!(
        "mcp_oauth_write_on_a_read_grant",
        seen(&gateway.url, response).await
    );
}
