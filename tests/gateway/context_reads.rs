//! Resources, prompts and completion over real loopback HTTP, in front of
//! the fake Gitea: each read is a tool call (the surface, the rules by
//! name, redaction, bounds and the audit entry are a call's), a prompt is
//! one message, a completion answers as the user, and what matches nothing
//! is a clear MCP error. The same as a person's client meets them; the real
//! Gitea and the official SDKs meet them in `tests/e2e/context_reads.py`.

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::fake_gitea::reviews::DIFF_HEAD;
use support::fake_gitea::{HYGIENE_OWNER, TOTAL_ISSUES};
use support::{ADMIN_TOKEN, Gateway, scratch_dir};

/// A JSON-RPC request at the MCP URL `path` on the 2025-11-25 wire: its
/// `result`, or its `error`.
async fn rpc(gw: &Gateway, path: &str, method: &str, params: Value) -> Result<Value, Value> {
    let (status, body, _) = gw.rpc(path, method, params).await;
    assert_eq!(status, StatusCode::OK);
    match body.get("error") {
        Some(error) => Err(error.clone()),
        None => Ok(body["result"].clone()),
    }
}

async fn read(gw: &Gateway, path: &str, uri: &str) -> Result<Value, Value> {
    rpc(gw, path, "resources/read", json!({"uri": uri})).await
}

/// A gateway whose audit log is in a directory the test reads.
async fn audited() -> (Gateway, std::path::PathBuf) {
    let dir = scratch_dir();
    let gw = Gateway::start(&[("DATA_DIR", dir.to_str().unwrap())]).await;
    (gw, dir)
}

/// The operations the audit log's finished calls ran (a call tool's entry
/// names its operation in `detail`), in order.
fn finished_operations(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("audit.log"))
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["event"] == "tool_call_finished")
        .map(|entry| {
            let operation = &entry["detail"]["operation"];
            let name = if operation.is_string() {
                operation
            } else {
                &entry["tool"]
            };
            name.as_str().unwrap_or_default().to_owned()
        })
        .collect()
}

#[tokio::test]
async fn the_templates_and_prompts_a_client_lists() {
    let gw = Gateway::start(&[]).await;
    let templates = rpc(&gw, "/mcp", "resources/templates/list", json!({}))
        .await
        .unwrap();
    insta::assert_json_snapshot!("resource_templates", templates);
    let prompts = rpc(&gw, "/mcp", "prompts/list", json!({})).await.unwrap();
    insta::assert_json_snapshot!("prompts", prompts);
    let listed = rpc(&gw, "/mcp", "resources/list", json!({})).await.unwrap();
    assert_eq!(listed["resources"], json!([]));
}

#[tokio::test]
async fn a_text_file_is_read_as_text_redacted_bounded_and_audited() {
    let (gw, dir) = audited().await;
    let uri = format!("gitea://{HYGIENE_OWNER}/app/contents/config/app.env?ref=main");
    let result = read(&gw, "/mcp", &uri).await.unwrap();
    let contents = &result["contents"][0];
    assert_eq!(contents["uri"], uri);
    assert_eq!(contents["mimeType"], "text/plain");
    let text = contents["text"].as_str().unwrap();
    assert!(
        text.starts_with("line 0: GITEA_TOKEN=[REDACTED]"),
        "{}",
        &text[..80]
    );
    assert!(!text.contains(ADMIN_TOKEN));
    assert_eq!(contents["_meta"]["aegis/truncated"], true);
    assert!(contents["_meta"]["aegis/untrusted_content"].is_string());
    let sent = gw.fake.tool_requests();
    assert!(
        sent[0].path().ends_with("/raw/config/app.env"),
        "{}",
        sent[0].path()
    );
    assert_eq!(finished_operations(&dir), ["gitea_repo_get_raw_file"]);
}

#[tokio::test]
async fn a_binary_file_is_a_blob_of_giteas_type() {
    let gw = Gateway::start(&[]).await;
    let result = read(&gw, "/mcp", "gitea://acme/app/contents/logo.png")
        .await
        .unwrap();
    let contents = &result["contents"][0];
    assert_eq!(contents["blob"], "AAEC+vv8");
    assert_eq!(contents["mimeType"], "application/octet-stream");
}

#[tokio::test]
async fn an_issue_and_a_pull_requests_diff_by_number() {
    let gw = Gateway::start(&[]).await;
    let issue = read(&gw, "/mcp", "gitea://acme/app/issues/7")
        .await
        .unwrap();
    let envelope: Value =
        serde_json::from_str(issue["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["data"]["title"], "Issue 7");
    assert!(envelope["untrusted_content"].is_string());
    let pull = TOTAL_ISSUES + 1;
    let diff = read(&gw, "/mcp", &format!("gitea://acme/app/pulls/{pull}/diff"))
        .await
        .unwrap();
    assert_eq!(diff["contents"][0]["mimeType"], "text/x-diff");
    assert!(
        diff["contents"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with(DIFF_HEAD)
    );
}

#[tokio::test]
async fn a_uri_no_template_matches_is_not_found_with_its_uri() {
    let gw = Gateway::start(&[]).await;
    let uri = "test://nonexistent-resource";
    let error = read(&gw, "/mcp", uri).await.unwrap_err();
    assert_eq!(error["code"], -32002);
    assert_eq!(error["data"]["uri"], uri);
    assert!(gw.fake.tool_requests().is_empty());
}

#[tokio::test]
async fn a_missing_issue_is_not_found_with_giteas_message() {
    let gw = Gateway::start(&[]).await;
    let error = read(&gw, "/mcp", "gitea://acme/app/issues/999")
        .await
        .unwrap_err();
    assert_eq!(error["code"], -32002);
    assert!(
        error["message"].as_str().unwrap().contains("not_found"),
        "{error}"
    );
}

#[tokio::test]
async fn a_disabled_operation_is_not_read_as_a_resource() {
    let gw = Gateway::start(&[("DISABLED_TOOLS", "gitea_repo_get_raw_file")]).await;
    let error = read(&gw, "/mcp", "gitea://acme/app/contents/README.md")
        .await
        .unwrap_err();
    assert_eq!(error["code"], -32602, "{error}");
    assert!(gw.fake.tool_requests().is_empty());
}

#[tokio::test]
async fn a_url_whose_toolsets_lack_the_operation_refuses_the_read_with_its_entry() {
    let (gw, dir) = audited().await;
    let error = read(&gw, "/mcp/x/admin", "gitea://acme/app/contents/README.md")
        .await
        .unwrap_err();
    assert!(
        error["message"].as_str().unwrap().contains("not reachable"),
        "{error}"
    );
    assert!(gw.fake.tool_requests().is_empty());
    let refused: Vec<Value> = std::fs::read_to_string(dir.join("audit.log"))
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["event"] == "tool_call_refused")
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["tool"], "gitea_repo_get_raw_file");
}

#[tokio::test]
async fn the_review_prompt_is_one_message_of_five_audited_reads() {
    let (gw, dir) = audited().await;
    let index = (TOTAL_ISSUES + 2).to_string();
    let result = rpc(
        &gw,
        "/mcp",
        "prompts/get",
        json!({"name": "review_pull_request",
               "arguments": {"owner": "acme", "repo": "app", "index": index}}),
    )
    .await
    .unwrap();
    let messages = result["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["role"], "user");
    let text = messages[0]["content"]["text"].as_str().unwrap();
    for part in [
        "## Pull request (gitea_repo_get_pull_request)",
        "src/lib.rs",
        DIFF_HEAD,
        "A first look.",
        "## Comments of review 31",
        "This allocates in the loop.",
    ] {
        assert!(text.contains(part), "{part} missing from:\n{text}");
    }
    assert_eq!(text.matches("never instructions").count(), 1);
    assert_eq!(
        finished_operations(&dir),
        [
            "gitea_repo_get_pull_request",
            "gitea_repo_get_pull_request_files",
            "gitea_repo_download_pull_diff_or_patch",
            "gitea_repo_list_pull_reviews",
            "gitea_repo_get_pull_review_comments"
        ]
    );
}

#[tokio::test]
async fn a_prompt_for_a_missing_subject_or_without_its_arguments_is_refused() {
    let gw = Gateway::start(&[]).await;
    let missing = rpc(
        &gw,
        "/mcp",
        "prompts/get",
        json!({"name": "summarize_issue", "arguments": {"owner": "acme", "repo": "app", "index": "999"}}),
    )
    .await
    .unwrap_err();
    assert_eq!(missing["code"], -32602);
    assert!(
        missing["message"]
            .as_str()
            .unwrap()
            .starts_with("issue could not be read")
    );
    let incomplete = rpc(
        &gw,
        "/mcp",
        "prompts/get",
        json!({"name": "summarize_issue", "arguments": {"owner": "acme"}}),
    )
    .await
    .unwrap_err();
    assert_eq!(incomplete["message"], "`repo` is required");
}

#[tokio::test]
async fn a_completion_offers_the_branches_the_user_can_read() {
    let gw = Gateway::start(&[]).await;
    let result = rpc(
        &gw,
        "/mcp",
        "completion/complete",
        json!({
            "ref": {"type": "ref/resource", "uri": "gitea://{owner}/{repo}/contents/{+path}{?ref}"},
            "argument": {"name": "ref", "value": "ma"},
            "context": {"arguments": {"owner": "acme", "repo": "app"}}
        }),
    )
    .await
    .unwrap();
    assert_eq!(result["completion"]["values"], json!(["main"]));
    let sent = gw.fake.tool_requests();
    assert!(sent[0].path().ends_with("/repos/acme/app/branches"));
}

#[tokio::test]
async fn a_completion_with_nothing_to_offer_is_empty_not_an_error() {
    let gw = Gateway::start(&[]).await;
    let result = rpc(
        &gw,
        "/mcp",
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "not_a_prompt_of_ours"},
               "argument": {"name": "arg1", "value": "x"}}),
    )
    .await
    .unwrap();
    assert_eq!(result["completion"]["values"], json!([]));
    assert!(gw.fake.tool_requests().is_empty());
}

#[tokio::test]
async fn a_search_that_matches_nothing_says_so_and_names_the_areas() {
    let gw = Gateway::start(&[]).await;
    let result = rpc(
        &gw,
        "/mcp",
        "tools/call",
        json!({"name": "gitea_search_operations", "arguments": {"query": "zzqx wibble"}}),
    )
    .await
    .unwrap();
    let answer: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(answer["operations"], json!([]));
    assert!(
        answer["note"]
            .as_str()
            .unwrap()
            .starts_with("No operation matched")
    );
    let areas = answer["areas"].as_array().unwrap();
    assert!(areas.iter().any(|a| a["toolset"] == "issue"), "{answer}");
}
