//! `/metrics` over real HTTP, from the real binary: served on its own
//! listener (`METRICS_BIND`) and nowhere else, counting requests by route
//! template, tool calls by catalog name, Gitea's statuses, 429s and audit
//! writes, with labels no client can invent.

use crate::support;

use reqwest::StatusCode;
use serde_json::json;
use support::gateway_process::{ServeProcess, free_port, wait_ready};
use support::{BEARER, FakeGitea, call};

const KEY: &str = "audit-key-0123456789abcdef-0123456789";

/// The value of the first exposition line starting with `prefix`.
fn value(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_served_on_their_own_listener_with_bounded_labels() {
    aegis_gitea_mcp::tls::install_crypto_provider();
    let fake = FakeGitea::start().await;
    let data = support::scratch_dir();
    let (port, metrics_port) = (free_port(), free_port());
    let metrics_bind = format!("127.0.0.1:{metrics_port}");
    let mut child = ServeProcess {
        fake: &fake,
        data: &data,
        port,
        audit_key: KEY,
        max_file_bytes: None,
        max_open_files: None,
        stderr_file: None,
        extra: &[
            ("METRICS_BIND", metrics_bind.as_str()),
            ("RATE_LIMIT_PER_TOKEN", "6"),
        ],
    }
    .spawn();
    wait_ready(port).await;
    wait_ready(metrics_port).await;
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();

    // Traffic: a tool call, an invented tool name, an unauthenticated
    // request, and a token over its limit.
    let client = support::mcp_client(&format!("{base}/mcp"), Some(BEARER)).await;
    let (is_error, _) = call(
        &client,
        "gitea_issue_list_issues",
        json!({"owner": "acme", "repo": "app"}),
    )
    .await;
    assert!(!is_error);
    let unknown = client
        .call_tool(rmcp::model::CallToolRequestParams::new(
            "gitea_invented_tool_name",
        ))
        .await;
    assert!(unknown.is_err(), "an unknown tool is a protocol error");
    let post = |token: &str| {
        http.post(format!("{base}/mcp"))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
            .send()
    };
    let mut statuses = Vec::new();
    for _ in 0..7 {
        statuses.push(post("junk-token-0123456789").await.unwrap().status());
    }
    assert_eq!(statuses[..6], [StatusCode::UNAUTHORIZED; 6]);
    assert_eq!(statuses[6], StatusCode::TOO_MANY_REQUESTS);

    // Not on the public listener.
    let public = http.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(public.status(), StatusCode::NOT_FOUND);

    let scrape = http
        .get(format!("http://{metrics_bind}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(scrape.status(), StatusCode::OK);
    assert!(
        scrape.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    let text = scrape.text().await.unwrap();
    for (prefix, at_least) in [
        (
            r#"aegis_tool_calls_total{tool="gitea_issue_list_issues",outcome="ok"}"#,
            1.0,
        ),
        (
            // Never sent to Gitea: refused (issue 47; it said `error`).
            r#"aegis_tool_calls_total{tool="unknown",outcome="refused"}"#,
            1.0,
        ),
        (r#"aegis_gitea_responses_total{status="200"}"#, 1.0),
        (
            r#"aegis_http_requests_total{route="/mcp",method="POST",status="401"}"#,
            2.0,
        ),
        (r#"aegis_rate_limited_total{key_kind="token"}"#, 1.0),
        (
            r#"aegis_http_request_duration_seconds_count{route="/mcp"}"#,
            5.0,
        ),
        // log_opened, then a started and a finished entry per call.
        ("aegis_audit_write_duration_seconds_count", 4.0),
        (
            r#"aegis_http_requests_total{route="unmatched",method="GET",status="404"}"#,
            1.0,
        ),
    ] {
        let got = value(&text, prefix).unwrap_or_else(|| panic!("no {prefix} in\n{text}"));
        assert!(got >= at_least, "{prefix} = {got}");
    }
    assert!(
        !text.contains("invented"),
        "a client-chosen name became a label"
    );
    assert!(!text.contains(BEARER) && !text.contains("junk-token"));

    // The metrics listener refuses a rebinding name, accepts an address.
    let rebound = http
        .get(format!("http://{metrics_bind}/metrics"))
        .header("host", format!("rebind.evil.example:{metrics_port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), StatusCode::MISDIRECTED_REQUEST);

    drop(client);
    child.kill().unwrap();
    child.wait().unwrap();
}
