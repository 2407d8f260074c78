//! The operator's policy (`POLICY_FILE`, issue 27) end to end on both
//! stores: a team rule, a client rule, deny over allow, a read-only rule,
//! refusals in the audit log with their rule ids, facts looked up once,
//! and `tools/list` agreeing with `tools/call`. (A bad file: the CLI tests
//! in `tests/gateway/policy_cli.rs`.)

use std::collections::BTreeSet;
use std::sync::OnceLock;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::{OAuthGateway, TestClient, on_both_backends};

/// The suite's policy: the three sentences of `docs/policy.md`, with the
/// fake Gitea's teams and a connector at `connector.example`.
const POLICY: &str = r#"
[[rule]]
id = "connectors-read-only"
when = { redirect_hosts = ["connector.example"] }
unless = { teams = ["acme/platform"] }
read_only = true

[[rule]]
id = "no-admin-toolset"
deny_toolsets = ["admin"]

[[rule]]
id = "le-chat-issues-only"
when = { client_names = ["Le Chat"] }
toolsets = ["issue", "admin"]
"#;

/// The policy file, written once per test process.
fn policy_file() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("aegis-policy-{}.toml", std::process::id()));
        std::fs::write(&path, POLICY).unwrap();
        path.display().to_string()
    })
}

const CONNECTOR_CALLBACK: &str = "https://connector.example/callback";

async fn client_named(gateway: &OAuthGateway, name: &str, redirect_uri: &str) -> TestClient {
    let (status, body) = gateway
        .register_raw(json!({
            "client_name": name,
            "redirect_uris": [redirect_uri],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
        }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    TestClient {
        client_id: body["client_id"].as_str().unwrap().to_owned(),
        client_secret: None,
        redirect_uri: redirect_uri.to_owned(),
    }
}

/// `tools/list` at `path`: the tool names.
async fn listed(gateway: &OAuthGateway, path: &str, token: &str) -> BTreeSet<String> {
    let body: Value = gateway
        .http
        .post(format!("{}{path}", gateway.url))
        .bearer_auth(token)
        .header(
            reqwest::header::ACCEPT,
            "application/json, text/event-stream",
        )
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Whether a `tools/call` of `name` (with `args`) at `path` is refused as
/// an unknown tool (`-32602`).
async fn unknown_there(
    gateway: &OAuthGateway,
    path: &str,
    token: &str,
    name: &str,
    args: Value,
) -> bool {
    let response = gateway
        .tools_call_response(&gateway.url, path, token, name, args)
        .await;
    assert_eq!(response.status(), StatusCode::OK, "{name}");
    let body: Value = response.json().await.unwrap();
    body["error"]["code"] == -32602
}

const WRITE: &str = "gitea_issue_create_issue";

fn issue() -> Value {
    json!({"owner": "alice", "repo": "r", "body": {"title": "by policy"}})
}

/// A team rule: a connector reads only, unless its person is in the
/// platform team; a refusal names the rules.
async fn a_connector_only_reads_unless_its_person_is_in_the_platform_team(gateway: OAuthGateway) {
    let connector = client_named(&gateway, "Connector", CONNECTOR_CALLBACK).await;
    let bob = gateway.tokens_at(&connector, "bob", "/mcp").await;
    let alice = gateway.tokens_at(&connector, "alice", "/mcp").await;

    let bobs = listed(&gateway, "/mcp", &bob.access_token).await;
    assert!(!bobs.contains(WRITE) && !bobs.contains("gitea_call_write_operation"));
    assert!(bobs.contains("gitea_user_get_current"));
    gateway.fake.clear();
    assert!(unknown_there(&gateway, "/mcp", &bob.access_token, WRITE, issue()).await);
    assert!(gateway.fake.requests().is_empty(), "nothing reached Gitea");
    let refused = gateway.audit_events("tool_call_refused");
    assert_eq!(refused.len(), 1);
    assert_eq!(
        refused[0]["detail"]["policy_rules"],
        "connectors-read-only,no-admin-toolset"
    );
    assert!(
        !refused[0].to_string().contains("by policy"),
        "no argument values"
    );

    let alices = listed(&gateway, "/mcp", &alice.access_token).await;
    assert!(alices.contains(WRITE));
    let (status, envelope) = gateway.call_tool(&alice.access_token, WRITE, issue()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(envelope["data"]["title"], "by policy", "{envelope}");
}
on_both_backends!(
    a_connector_only_reads_unless_its_person_is_in_the_platform_team,
    ("POLICY_FILE", policy_file())
);

/// A client rule, and deny over allow: Le Chat gets the issue toolset and
/// not the admin one, though its rule names both.
async fn le_chat_gets_issues_only_and_deny_wins_over_allow(gateway: OAuthGateway) {
    let le_chat = client_named(&gateway, "Le Chat", "https://chat.mistral.ai/callback").await;
    let tokens = gateway.tokens_at(&le_chat, "alice", "/mcp/all").await;
    let names = listed(&gateway, "/mcp/all", &tokens.access_token).await;
    assert!(names.contains("gitea_issue_list_issues"));
    assert!(
        !names.iter().any(|n| n.starts_with("gitea_admin_")),
        "admin denied"
    );
    assert!(!names.contains("gitea_repo_get"), "repository not allowed");
    assert!(
        !names.contains("gitea_api_request"),
        "raw is not in its toolsets"
    );
    assert!(
        unknown_there(
            &gateway,
            "/mcp/all",
            &tokens.access_token,
            "gitea_repo_get",
            json!({"owner": "a", "repo": "b"})
        )
        .await
    );
    // A call tool cannot reach past it either.
    let default_tokens = gateway.tokens_at(&le_chat, "alice", "/mcp").await;
    let (status, envelope) = gateway
        .call_tool(
            &default_tokens.access_token,
            "gitea_call_read_operation",
            json!({"name": "gitea_admin_search_users"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(envelope["error"]["kind"], "invalid_arguments", "{envelope}");
}
on_both_backends!(
    le_chat_gets_issues_only_and_deny_wins_over_allow,
    ("POLICY_FILE", policy_file())
);

/// `tools/list` shows exactly what `tools/call` accepts: every tool the
/// unnarrowed URL lists is unknown to the narrowed connection exactly when
/// its list leaves it out.
async fn tools_list_agrees_with_tools_call(gateway: OAuthGateway) {
    let le_chat = client_named(&gateway, "Le Chat", "https://chat.mistral.ai/callback").await;
    let plain = client_named(&gateway, "Plain", "https://plain.example/callback").await;
    let narrowed = gateway.tokens_at(&le_chat, "bob", "/mcp/all").await;
    let wide = gateway.tokens_at(&plain, "bob", "/mcp/all").await;
    let every = listed(&gateway, "/mcp/all", &wide.access_token).await;
    let kept = listed(&gateway, "/mcp/all", &narrowed.access_token).await;
    assert!(kept.len() < every.len() && kept.is_subset(&every));
    for name in &every {
        let unknown = unknown_there(
            &gateway,
            "/mcp/all",
            &narrowed.access_token,
            name,
            json!({}),
        )
        .await;
        assert_eq!(unknown, !kept.contains(name), "{name}");
    }
}
on_both_backends!(
    tools_list_agrees_with_tools_call,
    ("POLICY_FILE", policy_file()),
    // One call per tool of `/mcp/all`, far past the per-minute limits.
    ("RATE_LIMIT_PER_TOKEN", "0"),
    ("RATE_LIMIT_PER_IP", "0")
);

/// Facts are looked up once, not per call.
async fn memberships_are_looked_up_once_for_many_calls(gateway: OAuthGateway) {
    let connector = client_named(&gateway, "Connector", CONNECTOR_CALLBACK).await;
    let tokens = gateway.tokens_at(&connector, "bob", "/mcp").await;
    gateway.fake.clear();
    for _ in 0..3 {
        let (status, _) = gateway.whoami_on(&gateway.url, &tokens.access_token).await;
        assert_eq!(status, StatusCode::OK);
    }
    let lookups = gateway
        .fake
        .requests()
        .iter()
        .filter(|r| r.uri.contains("/user/teams"))
        .count();
    assert_eq!(lookups, 1);
}
on_both_backends!(
    memberships_are_looked_up_once_for_many_calls,
    ("POLICY_FILE", policy_file())
);

/// The consent page says what the policy is known to do before sign-in;
/// `/account` says what it does to each connection, and its "May"
/// follows a read-only rule.
async fn the_consent_page_and_account_show_the_policy(gateway: OAuthGateway) {
    let connector = client_named(&gateway, "Connector", CONNECTOR_CALLBACK).await;
    let params = gateway.authorize_params(&connector, &crate::Pkce::new(), "st-p");
    let page = gateway.authorize_fresh(&params).await.text().await.unwrap();
    assert!(
        page.contains(
            "<dt>Server policy</dt><dd>not the toolsets admin (rules no-admin-toolset); rules about the person may narrow it further</dd>"
        ),
        "{page}"
    );
    gateway.tokens_at(&connector, "bob", "/mcp").await;
    let browser = gateway.page_sign_in("bob", "account").await;
    let account = gateway
        .page(&browser, "/account")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        account.contains(
            r#"<td data-label="Policy">read only; not the toolsets admin (rules connectors-read-only, no-admin-toolset)</td>"#
        ),
        "{account}"
    );
    assert!(
        account.contains(r#"<td data-label="May">read only</td>"#),
        "{account}"
    );
}
on_both_backends!(
    the_consent_page_and_account_show_the_policy,
    ("POLICY_FILE", policy_file())
);

/// A policy that lets only the trusted connector write.
const TRUSTED_CONNECTOR_POLICY: &str = r#"
[[rule]]
id = "writes-only-through-the-trusted-connector"
unless = { redirect_hosts = ["connector.example"] }
read_only = true
"#;

fn trusted_connector_policy_file() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        let path =
            std::env::temp_dir().join(format!("aegis-policy-trusted-{}.toml", std::process::id()));
        std::fs::write(&path, TRUSTED_CONNECTOR_POLICY).unwrap();
        path.display().to_string()
    })
}

/// The red team's F3 (issue 45): a self-registered client lists the
/// trusted connector's URI beside its own and takes its code at its own.
/// The rule holds for the URI the grant used: it reads only. The trusted
/// connector's own sign-in writes.
async fn a_client_listing_the_trusted_uri_but_signing_in_at_its_own_only_reads(
    gateway: OAuthGateway,
) {
    let (status, body) = gateway
        .register_raw(json!({
            "client_name": "Look-alike",
            "redirect_uris": [CONNECTOR_CALLBACK, crate::CLIENT_REDIRECT],
            "token_endpoint_auth_method": "none",
        }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["client_id"].as_str().unwrap().to_owned();
    let at = |redirect_uri: &str| TestClient {
        client_id: id.clone(),
        client_secret: None,
        redirect_uri: redirect_uri.to_owned(),
    };
    let own = gateway
        .tokens_at(&at(crate::CLIENT_REDIRECT), "alice", "/mcp")
        .await;
    assert!(
        !listed(&gateway, "/mcp", &own.access_token)
            .await
            .contains("gitea_issue_create_comment")
    );
    assert!(unknown_there(&gateway, "/mcp", &own.access_token, WRITE, issue()).await);
    let trusted = gateway
        .tokens_at(&at(CONNECTOR_CALLBACK), "alice", "/mcp")
        .await;
    assert!(
        listed(&gateway, "/mcp", &trusted.access_token)
            .await
            .contains("gitea_issue_create_comment")
    );
}
on_both_backends!(
    a_client_listing_the_trusted_uri_but_signing_in_at_its_own_only_reads,
    ("POLICY_FILE", trusted_connector_policy_file())
);

/// Rules that name operations, for the raw tool's route (issue 45, F4).
const NAMED_OPERATIONS_POLICY: &str = r#"
[[rule]]
id = "no-single-issue"
deny_tools = ["gitea_issue_get_issue"]

[[rule]]
id = "no-branch-protections"
deny_toolsets = ["repository.branch_protections"]

[[rule]]
id = "ask-before-labels"
confirm_tools = ["gitea_issue_list_labels"]
"#;

fn named_operations_policy_file() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        let path =
            std::env::temp_dir().join(format!("aegis-policy-named-{}.toml", std::process::id()));
        std::fs::write(&path, NAMED_OPERATIONS_POLICY).unwrap();
        path.display().to_string()
    })
}

/// The red team's F4 (issue 45): `deny_tools` and `deny_toolsets` name
/// operations; the raw tool on their routes ran all the same.
async fn the_raw_tool_does_not_reach_a_route_the_policy_denies(gateway: OAuthGateway) {
    let client = client_named(&gateway, "Raw", "https://raw.example/callback").await;
    let tokens = gateway.tokens_at(&client, "alice", "/mcp").await;
    gateway.fake.clear();
    for path in [
        "/repos/alice/r/issues/1",
        "/repos/alice/r/branch_protections",
    ] {
        let (status, envelope) = gateway
            .call_tool(
                &tokens.access_token,
                "gitea_api_request",
                json!({"method": "GET", "path": path}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            envelope["error"]["kind"], "tool_disabled",
            "{path}: {envelope}"
        );
    }
    assert!(gateway.fake.requests().is_empty(), "nothing reached Gitea");
    let refused = gateway.audit_events("tool_call_refused");
    assert_eq!(refused.len(), 2);
    assert!(refused.iter().all(|e| e["error_kind"] == "tool_disabled"));
    // A route no rule names is still the raw tool's.
    let (_, envelope) = gateway
        .call_tool(
            &tokens.access_token,
            "gitea_api_request",
            json!({"method": "GET", "path": "/user"}),
        )
        .await;
    assert_eq!(envelope["data"]["login"], "alice", "{envelope}");
}
on_both_backends!(
    the_raw_tool_does_not_reach_a_route_the_policy_denies,
    ("POLICY_FILE", named_operations_policy_file())
);

/// The red team's F4: `confirm_tools` names an operation; the raw tool on
/// its route ran without asking.
async fn the_raw_tool_asks_before_a_route_the_policy_confirms(gateway: OAuthGateway) {
    let client = client_named(&gateway, "Raw", "https://raw.example/callback").await;
    let tokens = gateway.tokens_at(&client, "alice", "/mcp").await;
    gateway.fake.clear();
    let (status, envelope) = gateway
        .call_tool(
            &tokens.access_token,
            "gitea_api_request",
            json!({"method": "GET", "path": "/repos/alice/r/labels"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        envelope["error"]["kind"], "confirmation_required",
        "{envelope}"
    );
    assert!(gateway.fake.requests().is_empty(), "nothing reached Gitea");
}
on_both_backends!(
    the_raw_tool_asks_before_a_route_the_policy_confirms,
    ("POLICY_FILE", named_operations_policy_file())
);

/// The red team's F6 (issue 45): memberships past the first page were
/// never read (alice's `acme/platform` is on the second page of the fake's
/// 30; `a_connector_only_reads_unless_its_person_is_in_the_platform_team`
/// finds it there). Past what the policy reads, the call fails closed
/// with 503: a rule about a team the lookup did not reach would silently
/// not apply.
async fn a_person_in_more_teams_than_the_policy_reads_is_refused(gateway: OAuthGateway) {
    let connector = client_named(&gateway, "Connector", CONNECTOR_CALLBACK).await;
    let bob = gateway.tokens_at(&connector, "bob", "/mcp").await;
    gateway.fake.join_crowd_teams(1_000);
    let response = gateway
        .tools_call_response(
            &gateway.url,
            "/mcp",
            &bob.access_token,
            "gitea_user_get_current",
            json!({}),
        )
        .await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(response.headers().contains_key("retry-after"));
}
on_both_backends!(
    a_person_in_more_teams_than_the_policy_reads_is_refused,
    ("POLICY_FILE", policy_file())
);
