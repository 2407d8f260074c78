//! Result hygiene through the real transport: an MCP client (official Rust
//! SDK) calls the gateway over loopback HTTP, the gateway calls the fake
//! Gitea, whose `hygiene` routes plant the admin token, a webhook
//! Authorization header, third-party keys and a minted credential in what
//! they return. What the model would read is checked as raw text.

use crate::support;

use aegis_gitea_mcp::catalog::Catalog;
use aegis_gitea_mcp::gitea::secrets::WEBHOOK_OPERATIONS;
use base64::Engine;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};
use support::fake_gitea::{
    HYGIENE_OWNER, MINTED_CLIENT_SECRET, PLANTED_AWS_KEY, PLANTED_HOOK_HEADER, PLANTED_SHA,
};
use support::{ADMIN_TOKEN, BEARER, Gateway};

const REDACTED: &str = "[REDACTED]";
const MASKED_AWS: &str = "AKIA[MASKED]MPLE";

/// (is_error, raw text of the one content item, that text parsed).
async fn call_raw(
    client: &RunningService<RoleClient, ()>,
    name: &str,
    args: Value,
) -> (bool, String, Value) {
    let params = CallToolRequestParams::new(name.to_owned())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    let result: CallToolResult = client.call_tool(params).await.expect("tools/call succeeds");
    assert_eq!(result.content.len(), 1);
    let text = result.content[0].as_text().expect("text").text.clone();
    let parsed = serde_json::from_str(&text).expect("content is JSON");
    (result.is_error == Some(true), text, parsed)
}

/// No known secret appears anywhere in what the model reads.
fn assert_clean(text: &str) {
    assert!(!text.contains(ADMIN_TOKEN), "admin token leaked: {text}");
    assert!(!text.contains(BEARER), "bearer leaked: {text}");
    assert!(
        !text.contains("planted-hook-header"),
        "hook header leaked: {text}"
    );
}

fn issue_args() -> Value {
    json!({"owner": HYGIENE_OWNER, "repo": "app", "index": 1})
}

#[tokio::test]
async fn a_planted_admin_token_in_an_issue_never_reaches_the_model() {
    let gw = Gateway::start(&[]).await;
    let client = gw.client().await;
    let (is_error, text, env) = call_raw(&client, "gitea_issue_get_issue", issue_args()).await;
    assert!(!is_error, "{text}");
    assert_clean(&text);
    let body = env["data"]["body"].as_str().unwrap();
    assert!(
        body.contains(&format!("Authorization: token {REDACTED}")),
        "{body}"
    );
    assert!(body.contains(MASKED_AWS), "{body}");
    // Commit ids are not secrets.
    assert!(body.contains(PLANTED_SHA), "{body}");
    assert_eq!(
        env["data"]["title"],
        format!("Deploy fails ({PLANTED_SHA})")
    );
    // The token used as an object key is gone too.
    assert_eq!(env["data"][REDACTED], "a key that is the token");
    // F9: the bearer in base64 (two alignments), base64url and hex is gone.
    let leaks = env["data"]["encoded_leaks"].as_str().unwrap();
    for form in support::fake_gitea::encoded_bearer_forms() {
        let middle = &form[4..form.len() - 4];
        assert!(!leaks.contains(middle), "{leaks}");
    }
    assert_eq!(leaks.matches(REDACTED).count(), 4, "{leaks}");
    assert!(
        env["untrusted_content"]
            .as_str()
            .unwrap()
            .contains("untrusted")
    );

    // The raw tool goes through the same pipeline.
    let (is_error, text, _) = call_raw(
        &client,
        "gitea_api_request",
        json!({"method": "GET", "path": format!("/repos/{HYGIENE_OWNER}/app/issues/1")}),
    )
    .await;
    assert!(!is_error, "{text}");
    assert_clean(&text);
    assert!(text.contains(MASKED_AWS));
}

#[tokio::test]
async fn off_mode_still_redacts_and_block_mode_withholds() {
    let gw = Gateway::start(&[("SECRET_DETECTION_MODE", "off")]).await;
    let (is_error, text, _) =
        call_raw(&gw.client().await, "gitea_issue_get_issue", issue_args()).await;
    assert!(!is_error);
    assert_clean(&text);
    assert!(text.contains(PLANTED_AWS_KEY), "off mode does not mask");

    let gw = Gateway::start(&[("SECRET_DETECTION_MODE", "block")]).await;
    let (is_error, text, body) =
        call_raw(&gw.client().await, "gitea_issue_get_issue", issue_args()).await;
    assert!(is_error);
    assert_clean(&text);
    assert!(!text.contains(PLANTED_AWS_KEY));
    assert_eq!(body["error"]["kind"], "secret_blocked");
    assert_eq!(body["error"]["status"], 200);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("aws_access_key_id")
    );
}

/// Tool name and arguments for one webhook operation against the fake.
fn hook_call(catalog: &Catalog, operation_id: &str) -> (String, Value) {
    let op = catalog
        .operations()
        .iter()
        .find(|op| op.operation_id == operation_id)
        .expect("a bundled operation");
    let mut args = serde_json::Map::new();
    if operation_id.starts_with("repo") {
        args.insert("owner".into(), json!(HYGIENE_OWNER));
        args.insert("repo".into(), json!("app"));
    } else if operation_id.starts_with("org") {
        args.insert("org".into(), json!(HYGIENE_OWNER));
    }
    if operation_id.ends_with("GetHook") || operation_id.ends_with("EditHook") {
        args.insert("id".into(), json!(1));
    }
    if operation_id.ends_with("CreateHook") || operation_id.ends_with("EditHook") {
        args.insert(
            "body".into(),
            json!({
                "type": "gitea",
                "config": {"url": "https://ci.example.org/h", "content_type": "json", "secret": "hmac-submitted-secret"},
                "authorization_header": "Bearer submitted-header-value-42",
            }),
        );
    }
    (op.tool_name.clone(), Value::Object(args))
}

#[tokio::test]
async fn webhook_authorization_headers_are_redacted_on_every_hook_tool() {
    let catalog = Catalog::bundled();
    for mode in ["off", "mask", "block"] {
        let gw = Gateway::start(&[("SECRET_DETECTION_MODE", mode)]).await;
        let client = gw.client().await;
        for operation_id in WEBHOOK_OPERATIONS {
            for view in ["compact", "full"] {
                let (tool, mut args) = hook_call(&catalog, operation_id);
                args["view"] = json!(view);
                let (is_error, text, env) = call_raw(&client, &tool, args).await;
                assert!(!is_error, "{tool} ({mode}, {view}): {text}");
                assert_clean(&text);
                assert!(!text.contains("submitted-header-value"), "{tool}: {text}");
                assert!(!text.contains("hmac-submitted-secret"), "{tool}: {text}");
                let hook = if env["data"].is_array() {
                    // The second hook has none stored: Gitea answers "",
                    // which the compact view leaves out.
                    let empty = &env["data"][1]["authorization_header"];
                    assert!(empty == "" || (view == "compact" && empty.is_null()));
                    &env["data"][0]
                } else {
                    &env["data"]
                };
                assert_eq!(
                    hook["authorization_header"], REDACTED,
                    "{tool} ({mode}, {view})"
                );
            }
        }
    }
    assert!(PLANTED_HOOK_HEADER.contains("planted-hook-header"));
}

#[tokio::test]
async fn the_raw_tool_gets_webhook_redaction_too() {
    let gw = Gateway::start(&[("RAW_API_ALLOW_SENSITIVE", "true")]).await;
    let (is_error, text, env) = call_raw(
        &gw.client().await,
        "gitea_api_request",
        json!({"method": "GET", "path": format!("/repos/{HYGIENE_OWNER}/app/hooks")}),
    )
    .await;
    assert!(!is_error, "{text}");
    assert_clean(&text);
    assert_eq!(env["data"][0]["authorization_header"], REDACTED);
}

#[tokio::test]
async fn a_minted_credential_is_delivered_but_masked_on_a_plain_read() {
    for mode in ["mask", "block"] {
        let gw = Gateway::start(&[("SECRET_DETECTION_MODE", mode)]).await;
        let client = gw.client().await;
        let (is_error, text, env) = call_raw(
            &client,
            "gitea_user_create_oauth2_application",
            json!({"body": {"name": "ci", "redirect_uris": ["https://x/cb"], "confidential_client": true}}),
        )
        .await;
        assert!(!is_error, "{mode}: {text}");
        assert_eq!(env["data"]["client_secret"], MINTED_CLIENT_SECRET, "{mode}");
        assert_clean(&text);

        let (is_error, text, env) = call_raw(
            &client,
            "gitea_user_get_oauth2_application",
            json!({"id": 4}),
        )
        .await;
        assert!(!text.contains(MINTED_CLIENT_SECRET), "{mode}: {text}");
        if mode == "mask" {
            assert!(!is_error);
            assert_eq!(env["data"]["client_secret"], "gto_[MASKED]qrst");
        } else {
            assert!(is_error);
            assert_eq!(env["error"]["kind"], "secret_blocked");
        }
    }
}

#[tokio::test]
async fn item_and_character_bounds_hold_after_redaction() {
    let gw = Gateway::start(&[]).await;
    let client = gw.client().await;
    let args = json!({"owner": HYGIENE_OWNER, "repo": "app"});
    let (is_error, text, env) = call_raw(&client, "gitea_issue_list_issues", args.clone()).await;
    assert!(!is_error, "{text}");
    assert_clean(&text);
    assert_eq!(env["data"].as_array().unwrap().len(), 100);
    assert_eq!(env["truncated"], true);
    assert_eq!(
        env["truncation"],
        json!({"items_returned": 100, "items_omitted": 50})
    );

    let gw = Gateway::start(&[("MAX_TOOL_RESPONSE_CHARS", "5000")]).await;
    let client = gw.client().await;
    let (is_error, text, env) = call_raw(&client, "gitea_issue_list_issues", args).await;
    assert!(!is_error, "{text}");
    assert_clean(&text);
    assert!(text.chars().count() <= 5_000, "{}", text.chars().count());
    assert_eq!(env["truncation"]["items_omitted"], 50);
    assert_eq!(env["truncation"]["data_format"], "json");
    assert!(env["data"].as_str().unwrap().starts_with("[{\"id\":5001"));

    let (is_error, text, env) = call_raw(
        &client,
        "gitea_repo_get_raw_file",
        json!({"owner": HYGIENE_OWNER, "repo": "app", "filepath": "deploy/.env"}),
    )
    .await;
    assert!(!is_error, "{text}");
    assert_clean(&text);
    assert!(text.chars().count() <= 5_000);
    assert_eq!(env["truncation"]["data_format"], "text");
    assert!(
        env["data"]
            .as_str()
            .unwrap()
            .starts_with("line 0: GITEA_TOKEN=[REDACTED]\n")
    );
}

#[tokio::test]
async fn a_text_file_comes_back_as_text_redacted_and_masked() {
    let gw = Gateway::start(&[]).await;
    let (is_error, text, env) = call_raw(
        &gw.client().await,
        "gitea_repo_get_contents",
        json!({"owner": HYGIENE_OWNER, "repo": "app", "filepath": ".env"}),
    )
    .await;
    assert!(!is_error, "{text}");
    assert_eq!(env["data"]["encoding"], "utf-8");
    assert_eq!(
        env["data"]["content"],
        format!("token: {REDACTED}\naws: {MASKED_AWS}\n")
    );
    assert_clean(&text);
    assert_eq!(env["data"]["sha"], PLANTED_SHA);
}

#[tokio::test]
async fn file_contents_in_base64_are_redacted_and_masked_in_the_full_view() {
    let gw = Gateway::start(&[]).await;
    let (is_error, text, env) = call_raw(
        &gw.client().await,
        "gitea_repo_get_contents",
        json!({"owner": HYGIENE_OWNER, "repo": "app", "filepath": ".env", "view": "full"}),
    )
    .await;
    assert!(!is_error, "{text}");
    let content = base64::engine::general_purpose::STANDARD
        .decode(env["data"]["content"].as_str().unwrap())
        .unwrap();
    let content = String::from_utf8(content).unwrap();
    assert_eq!(content, format!("token: {REDACTED}\naws: {MASKED_AWS}\n"));
    assert_clean(&text);
    assert_eq!(env["data"]["sha"], PLANTED_SHA);
}

#[tokio::test]
async fn gitea_error_messages_are_redacted_masked_and_stripped() {
    let gw = Gateway::start(&[]).await;
    let (is_error, text, body) = call_raw(
        &gw.client().await,
        "gitea_repo_get_branch",
        json!({"owner": HYGIENE_OWNER, "repo": "app", "branch": "main"}),
    )
    .await;
    assert!(is_error);
    assert_clean(&text);
    assert_eq!(body["error"]["kind"], "upstream_error");
    assert_eq!(
        body["error"]["message"],
        format!("git error for {REDACTED} with {MASKED_AWS}; Authorization: {REDACTED}")
    );
}

#[tokio::test]
async fn expose_error_details_adds_only_the_internal_type_name() {
    let slow = json!({"method": "GET", "path": format!("/repos/{HYGIENE_OWNER}/slow/x")});
    for (expose, expected) in [("false", None), ("true", Some("UpstreamError::Timeout"))] {
        let gw = Gateway::start(&[
            ("GITEA_TIMEOUT_SECONDS", "1"),
            ("EXPOSE_ERROR_DETAILS", expose),
        ])
        .await;
        let (is_error, _, body) =
            call_raw(&gw.client().await, "gitea_api_request", slow.clone()).await;
        assert!(is_error);
        assert_eq!(body["error"]["kind"], "upstream_timeout");
        assert_eq!(body["error"].get("type").and_then(Value::as_str), expected);
        let keys: Vec<&String> = body["error"].as_object().unwrap().keys().collect();
        assert!(
            keys.len() <= 4,
            "only status, kind, message and type: {keys:?}"
        );
    }
}
