//! The stdio transport, driven as a client would drive it: the built binary
//! as a child process, newline-delimited JSON-RPC on stdin/stdout.

use crate::support;

use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};
use support::{ADMIN_LOGIN, ADMIN_TOKEN, FakeGitea};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const BIN: &str = env!("CARGO_BIN_EXE_aegis-gitea-mcp");

fn gateway_command(gitea_url: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.arg("stdio")
        .env_clear()
        .env("GITEA_URL", gitea_url)
        .env("GITEA_TOKEN", ADMIN_TOKEN)
        .env("RUST_LOG", "info")
        .env("DATA_DIR", support::scratch_dir())
        .current_dir(std::env::temp_dir());
    cmd
}

#[tokio::test]
async fn an_mcp_client_lists_and_calls_tools_over_stdio() {
    let fake = FakeGitea::start().await;
    let transport = TokioChildProcess::new(gateway_command(&fake.url).configure(|_| {})).unwrap();
    let client = ().serve(transport).await.unwrap();
    // stdio serves the default surface: the core tools plus discovery.
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(
        tools.len(),
        aegis_gitea_mcp::catalog::core::CORE_TOOLS.len() + 4
    );
    let result = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("gitea_issue_list_issues").with_arguments(
                json!({"owner": "acme", "repo": "app"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await
        .unwrap();
    let env = support::single_json(&result);
    assert_eq!(env["identity"]["mode"], "stdio");
    assert_eq!(env["identity"]["login"], ADMIN_LOGIN);
    assert_eq!(env["pagination"]["total_count"], 45);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn stdout_carries_json_rpc_and_nothing_else() {
    let fake = FakeGitea::start().await;
    let mut child = gateway_command(&fake.url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Drain stderr concurrently: a full pipe would block the child's logging.
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stderr_task = tokio::spawn(async move {
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut stderr_pipe, &mut text)
            .await
            .unwrap();
        text
    });
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "gitea_repo_get", "arguments": {"owner": "acme", "repo": "app"}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "gitea_repo_get", "arguments": {"owner": "..", "repo": "app"}}}),
    ];
    for r in &requests {
        stdin.write_all(format!("{r}\n").as_bytes()).await.unwrap();
    }
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answered = Vec::new();
    while answered.len() < 4 {
        let line = lines.next_line().await.unwrap().expect("a line per answer");
        let msg: Value = serde_json::from_str(&line).expect("every stdout line is JSON");
        assert_eq!(msg["jsonrpc"], "2.0", "{line}");
        if let Some(id) = msg.get("id") {
            answered.push(id.as_i64().unwrap());
        }
    }
    answered.sort_unstable();
    assert_eq!(answered, vec![1, 2, 3, 4]);
    drop(stdin);
    let status = child.wait().await.unwrap();
    assert!(status.success());
    // Logs went to stderr, not stdout.
    let stderr = stderr_task.await.unwrap();
    assert!(!stderr.is_empty());
    assert!(!stderr.contains(ADMIN_TOKEN));
}

/// A raw stdio session of a gateway with `CONFIRM_ADMIN=destructive`: the
/// client declares `capabilities`, calls a branch delete through the write
/// call tool, and answers any `elicitation/create` with `answer`. Returns
/// the elicitation's params (if one came) and the call's result.
async fn delete_over_stdio(
    fake: &FakeGitea,
    capabilities: Value,
    answer: Value,
) -> (Option<Value>, Value) {
    let mut child = gateway_command(&fake.url)
        .env("CONFIRM_ADMIN", "destructive")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "gitea_call_write_operation", "arguments": {
                "name": "gitea_repo_delete_branch",
                "arguments": {"owner": "acme", "repo": "app", "branch": "feature/x"}}}}),
    ];
    for r in &requests {
        stdin.write_all(format!("{r}\n").as_bytes()).await.unwrap();
    }
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut asked = None;
    let result = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("the call is answered");
        let msg: Value = serde_json::from_str(&line).unwrap();
        if msg["method"] == "elicitation/create" {
            asked = Some(msg["params"].clone());
            let reply = json!({"jsonrpc": "2.0", "id": msg["id"], "result": answer});
            stdin
                .write_all(format!("{reply}\n").as_bytes())
                .await
                .unwrap();
        } else if msg["id"] == 2 {
            break msg["result"].clone();
        }
    };
    drop(stdin);
    child.wait().await.unwrap();
    (asked, result)
}

fn kind_of(result: &Value) -> Value {
    let text = result["content"][0]["text"].as_str().unwrap_or("{}");
    serde_json::from_str::<Value>(text).unwrap()["error"]["kind"].clone()
}

fn deletes(fake: &FakeGitea) -> usize {
    fake.requests()
        .iter()
        .filter(|r| r.method == axum::http::Method::DELETE)
        .count()
}

#[tokio::test]
async fn with_confirm_admin_a_stdio_client_is_asked_and_declining_sends_nothing() {
    let fake = FakeGitea::start().await;
    let capabilities = json!({"elicitation": {"form": {}}});
    let (asked, result) =
        delete_over_stdio(&fake, capabilities.clone(), json!({"action": "decline"})).await;
    let asked = asked.expect("the person was asked");
    assert_eq!(asked["mode"], "form");
    assert!(
        asked["message"]
            .as_str()
            .unwrap()
            .contains("branch: feature/x"),
        "{asked}"
    );
    assert_eq!(result["isError"], true);
    assert_eq!(kind_of(&result), "confirmation_denied");
    assert_eq!(deletes(&fake), 0);
    // Accepted with approve: the call runs.
    let (_, result) = delete_over_stdio(
        &fake,
        capabilities,
        json!({"action": "accept", "content": {"approve": true}}),
    )
    .await;
    assert_ne!(kind_of(&result), "confirmation_denied", "{result}");
    assert_eq!(deletes(&fake), 1);
}

#[tokio::test]
async fn with_confirm_admin_a_client_that_cannot_be_asked_is_refused() {
    let fake = FakeGitea::start().await;
    let (asked, result) = delete_over_stdio(&fake, json!({}), json!({})).await;
    assert!(asked.is_none());
    assert_eq!(kind_of(&result), "confirmation_required");
    assert_eq!(deletes(&fake), 0);
}
