//! The MCP URLs over real loopback HTTP: `/mcp` serves the core, `/mcp/all`
//! the whole catalog, `/mcp/x/{toolsets}` exactly those toolsets plus the
//! discovery tools, `/readonly` drops every write; a URL narrows the
//! server's settings and never widens them. `the_surfaces_measured` prints
//! the `tools/list` sizes that `docs/tools.md` quotes.

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::Gateway;

/// A JSON-RPC request at the MCP URL `path`: (HTTP status, body, body bytes).
async fn rpc(gw: &Gateway, path: &str, method: &str, params: Value) -> (StatusCode, Value, usize) {
    gw.rpc(path, method, params).await
}

async fn tool_names(gw: &Gateway, path: &str) -> Vec<String> {
    let (status, body, _) = rpc(gw, path, "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// `tools/call` at `path`: (is_error, the result's JSON) or the JSON-RPC error.
async fn call_at(
    gw: &Gateway,
    path: &str,
    name: &str,
    args: Value,
) -> Result<(bool, Value), Value> {
    let (status, body, _) = rpc(
        gw,
        path,
        "tools/call",
        json!({"name": name, "arguments": args}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    if !body["error"].is_null() {
        return Err(body["error"].clone());
    }
    let result = &body["result"];
    let text = result["content"][0]["text"].as_str().unwrap();
    Ok((
        result["isError"] == true,
        serde_json::from_str(text).unwrap(),
    ))
}

const DISCOVERY: [&str; 3] = [
    "gitea_search_operations",
    "gitea_call_read_operation",
    "gitea_call_write_operation",
];

#[tokio::test]
async fn the_default_url_fits_a_40_tool_client() {
    let gw = Gateway::start(&[]).await;
    let (status, body, bytes) = rpc(&gw, "/mcp", "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::OK);
    let tools = body["result"]["tools"].as_array().unwrap();
    assert!(tools.len() <= 40, "{} tools", tools.len());
    assert!(bytes <= 40_000, "{bytes} bytes");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for name in DISCOVERY
        .iter()
        .chain(&["gitea_api_request", "gitea_issue_create_issue"])
    {
        assert!(names.contains(name), "{name}");
    }
}

#[tokio::test]
async fn a_tool_outside_the_core_is_unknown_at_the_default_url_but_reachable_by_name() {
    let gw = Gateway::start(&[]).await;
    let direct = call_at(&gw, "/mcp", "gitea_admin_search_users", json!({})).await;
    assert_eq!(direct.unwrap_err()["code"], -32602);
    let (is_error, env) = call_at(
        &gw,
        "/mcp",
        "gitea_call_read_operation",
        json!({"name": "gitea_admin_search_users", "arguments": {}}),
    )
    .await
    .unwrap();
    assert!(!is_error, "{env}");
    assert_eq!(env["request"]["path"], "/admin/users");
    assert_eq!(env["identity"]["mode"], "bearer");
}

#[tokio::test]
async fn search_names_the_tool_that_runs_each_hit() {
    let gw = Gateway::start(&[]).await;
    let (_, found) = call_at(
        &gw,
        "/mcp",
        "gitea_search_operations",
        json!({"query": "create issue", "toolset": "issue", "limit": 50}),
    )
    .await
    .unwrap();
    let ops = found["operations"].as_array().unwrap();
    let by_name = |name: &str| ops.iter().find(|o| o["name"] == name).unwrap().clone();
    // A core tool runs as itself; the rest through the call tools.
    assert_eq!(
        by_name("gitea_issue_create_issue")["call_with"],
        "gitea_issue_create_issue"
    );
    assert_eq!(
        by_name("gitea_issue_create_milestone")["call_with"],
        "gitea_call_write_operation"
    );
    // Each hit's arguments in one line; the full schema one call away.
    assert!(
        by_name("gitea_issue_create_milestone")["args"]
            .as_str()
            .unwrap()
            .contains("body {"),
    );
    let (_, one) = call_at(
        &gw,
        "/mcp",
        "gitea_search_operations",
        json!({"name": "gitea_issue_create_milestone"}),
    )
    .await
    .unwrap();
    assert!(one["input_schema"]["properties"].is_object(), "{one}");
    assert_eq!(one["call_with"], "gitea_call_write_operation");
}

#[tokio::test]
async fn all_lists_the_whole_catalog() {
    let gw = Gateway::start(&[]).await;
    let names = tool_names(&gw, "/mcp/all").await;
    assert_eq!(names.len(), 485 + 1);
    assert!(!names.iter().any(|n| n == DISCOVERY[0]));
}

#[tokio::test]
async fn a_toolset_url_serves_exactly_its_toolsets_and_the_discovery_tools() {
    let gw = Gateway::start(&[]).await;
    let names = tool_names(&gw, "/mcp/x/repository.releases").await;
    assert!(names.contains(&"gitea_repo_create_release".to_owned()));
    assert!(!names.contains(&"gitea_issue_list_issues".to_owned()));
    assert!(
        !names.contains(&"gitea_api_request".to_owned()),
        "raw only when named"
    );
    for name in DISCOVERY {
        assert!(names.contains(&name.to_owned()), "{name}");
    }
    // Outside the URL's toolsets a tool cannot be called, directly or by name.
    let direct = call_at(
        &gw,
        "/mcp/x/repository.releases",
        "gitea_issue_list_issues",
        json!({"owner": "a", "repo": "b"}),
    )
    .await;
    assert_eq!(direct.unwrap_err()["code"], -32602);
    let (is_error, body) = call_at(
        &gw,
        "/mcp/x/repository.releases",
        "gitea_call_read_operation",
        json!({"name": "gitea_issue_list_issues", "arguments": {"owner": "a", "repo": "b"}}),
    )
    .await
    .unwrap();
    assert!(is_error);
    assert_eq!(body["error"]["kind"], "invalid_arguments");
    assert!(
        gw.fake.tool_requests().is_empty(),
        "nothing was sent to Gitea"
    );
}

#[tokio::test]
async fn readonly_serves_no_write() {
    let gw = Gateway::start(&[]).await;
    for path in [
        "/mcp/readonly",
        "/mcp/all/readonly",
        "/mcp/x/issue/readonly",
    ] {
        let names = tool_names(&gw, path).await;
        assert!(!names.iter().any(|n| n.contains("_create_")), "{path}");
        assert!(
            !names.contains(&"gitea_call_write_operation".to_owned()),
            "{path}"
        );
    }
    let direct = call_at(
        &gw,
        "/mcp/all/readonly",
        "gitea_issue_create_issue",
        json!({"owner": "a", "repo": "b", "body": {"title": "t"}}),
    )
    .await;
    assert_eq!(direct.unwrap_err()["code"], -32602);
    let (is_error, body) = call_at(
        &gw,
        "/mcp/readonly",
        "gitea_api_request",
        json!({"method": "DELETE", "path": "/repos/a/b"}),
    )
    .await
    .unwrap();
    assert!(is_error, "{body}");
    assert!(
        gw.fake.tool_requests().is_empty(),
        "nothing was sent to Gitea"
    );
}

#[tokio::test]
async fn an_unknown_toolset_is_a_404_that_names_it() {
    let gw = Gateway::start(&[]).await;
    let (status, body, _) = rpc(&gw, "/mcp/x/issue,nope", "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["error"], "unknown_mcp_url");
    assert!(
        body["error_description"]
            .as_str()
            .unwrap()
            .contains("`nope`"),
        "{body}"
    );
    let (status, body, _) = rpc(&gw, "/mcp/x/repository", "tools/list", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        body["error_description"]
            .as_str()
            .unwrap()
            .contains("repository.code"),
        "a split tag names its parts: {body}"
    );
}

#[tokio::test]
async fn a_url_never_widens_the_server_settings() {
    let gw = Gateway::start(&[("READ_ONLY", "true"), ("TOOLSETS", "issue,raw")]).await;
    let names = tool_names(&gw, "/mcp/all").await;
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("gitea_issue_") || n == "gitea_api_request"),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("_create_")));
    let (status, body, _) = rpc(&gw, "/mcp/x/repository.releases", "tools/list", json!({})).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "a toolset the server hides: {body}"
    );
}

#[tokio::test]
async fn discover_mode_lists_no_operation_tool_on_any_url() {
    let gw = Gateway::start(&[("TOOL_MODE", "discover")]).await;
    for path in ["/mcp", "/mcp/all", "/mcp/x/issue"] {
        let names = tool_names(&gw, path).await;
        assert!(
            names
                .iter()
                .all(|n| DISCOVERY.contains(&n.as_str()) || n == "gitea_api_request"),
            "{path}: {names:?}"
        );
    }
}

/// The admin token (here the static bearer) may act as another user:
/// the server's instructions describe `sudo` once (no schema repeats it),
/// and its calls take it.
#[tokio::test]
async fn the_admin_token_is_offered_sudo() {
    let gw = Gateway::start(&[]).await;
    let (_, body, _) = rpc(
        &gw,
        "/mcp",
        "initialize",
        json!({
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}
        }),
    )
    .await;
    let instructions = body["result"]["instructions"].as_str();
    assert!(instructions.is_some_and(|i| i.contains("`sudo`")), "{body}");
    let (_, body, _) = rpc(&gw, "/mcp", "tools/list", json!({})).await;
    for tool in body["result"]["tools"].as_array().unwrap() {
        assert!(tool["inputSchema"]["properties"].get("sudo").is_none());
    }
    let (_, body, _) = rpc(
        &gw,
        "/mcp",
        "tools/call",
        json!({"name": "gitea_user_get_current", "arguments": {"sudo": "alice"}}),
    )
    .await;
    let envelope: Value =
        serde_json::from_str(body["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["identity"]["sudo"], "alice", "{envelope}");
}

#[tokio::test]
async fn tools_carry_effect_annotations_and_no_titles() {
    let gw = Gateway::start(&[]).await;
    let (_, body, _) = rpc(&gw, "/mcp", "tools/list", json!({})).await;
    let tools = body["result"]["tools"].as_array().unwrap();
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap().clone();
    // Names and descriptions say it; a title would be paid on every turn.
    assert!(tools.iter().all(|t| t.get("title").is_none()));
    let comment = tool("gitea_issue_create_comment")["annotations"].clone();
    assert_eq!(comment["destructiveHint"], false);
    // MCP's default for an absent hint: not read-only.
    assert!(comment.get("readOnlyHint").is_none());
    let merge = tool("gitea_repo_merge_pull_request")["annotations"].clone();
    assert_eq!(merge["destructiveHint"], true);
    let update = tool("gitea_repo_update_file")["annotations"].clone();
    assert_eq!(update["destructiveHint"], true);
    assert_eq!(update["idempotentHint"], true);
    assert_eq!(
        tool("gitea_call_read_operation")["annotations"]["readOnlyHint"],
        true
    );
    assert_eq!(
        tool("gitea_call_write_operation")["annotations"]["destructiveHint"],
        true
    );
}

/// The figures `docs/tools.md` quotes: `tools/list` bytes, tools and about
/// bytes / 4 tokens for each URL, with and without `/readonly`.
#[tokio::test]
async fn the_surfaces_measured() {
    let gw = Gateway::start(&[]).await;
    let catalog = aegis_gitea_mcp::catalog::Catalog::bundled();
    let mut paths = vec!["/mcp".to_owned(), "/mcp/all".to_owned()];
    paths.extend(
        catalog
            .toolset_names()
            .into_iter()
            .filter(|t| !t.contains('.') || t.starts_with("repository."))
            .filter(|t| {
                !t.starts_with("repository.")
                    || [
                        "repository.code",
                        "repository.collaboration",
                        "repository.manage",
                        "repository.actions",
                        "repository.pulls",
                        "repository.releases",
                    ]
                    .contains(&t.as_str())
            })
            .map(|t| format!("/mcp/x/{t}")),
    );
    println!("| URL | tools | bytes | ~tokens | /readonly tools | /readonly bytes |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for path in paths {
        let (status, body, bytes) = rpc(&gw, &path, "tools/list", json!({})).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        let count = body["result"]["tools"].as_array().unwrap().len();
        let (_, ro_body, ro_bytes) =
            rpc(&gw, &format!("{path}/readonly"), "tools/list", json!({})).await;
        let ro_count = ro_body["result"]["tools"].as_array().map_or(0, Vec::len);
        if path != "/mcp/all" {
            assert!(count <= 128, "{path}: {count} tools");
        }
        println!(
            "| `{path}` | {count} | {bytes} | {} | {ro_count} | {ro_bytes} |",
            bytes / 4
        );
    }
}
