//! Least privilege (issue 27): a connection the person allowed only to
//! read holds a reading Gitea session and may not write; a write gets the
//! `insufficient_scope` challenge (MCP 2025-11-25 step-up) and reaches
//! nothing; once the person allows writing, the same call runs as the same
//! user and the reading connection it replaces ends.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::fake_gitea::FakeApp;
use crate::{OAuthGateway, Pkce, TestClient, on_both_backends, param, tokens_from};

const WRITE: &str = "gitea_issue_create_issue";

fn issue(title: &str) -> Value {
    json!({"owner": "alice", "repo": "r", "body": {"title": title}})
}

/// A `tools/call` at `/mcp`: the status, the `WWW-Authenticate` value, and
/// the body.
async fn call_raw(
    gateway: &OAuthGateway,
    token: &str,
    name: &str,
    args: Value,
) -> (StatusCode, String, Value) {
    call_raw_at(gateway, "/mcp", token, name, args).await
}

async fn call_raw_at(
    gateway: &OAuthGateway,
    path: &str,
    token: &str,
    name: &str,
    args: Value,
) -> (StatusCode, String, Value) {
    let response = gateway
        .tools_call_response(&gateway.url, path, token, name, args)
        .await;
    let status = response.status();
    let challenge = response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (
        status,
        challenge,
        response.json().await.unwrap_or(Value::Null),
    )
}

/// The person authorizes `client` again, at `/mcp`, asked for `scope`,
/// and decides `decision`; the consent page's HTML and the new tokens.
async fn authorize_again(
    gateway: &OAuthGateway,
    client: &TestClient,
    scope: &str,
    decision: &str,
) -> (String, crate::Tokens) {
    let pkce = Pkce::new();
    let mut params = gateway.authorize_params(client, &pkce, "st-2");
    params.retain(|(name, _)| name != "scope");
    params.push(("scope".into(), scope.into()));
    let page = gateway.authorize_fresh(&params).await.text().await.unwrap();
    let to_client = gateway
        .sign_in_deciding(client, &params, "alice", decision)
        .await;
    let code = param(&to_client, "code").expect("code");
    let response = gateway.redeem(client, &code, &pkce).await;
    assert_eq!(response.status(), StatusCode::OK);
    (page, tokens_from(response).await)
}

async fn a_reading_connection_holds_a_read_only_gitea_session(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.read_tokens_at(&client, "alice", "/mcp").await;
    assert_eq!(tokens.body["scope"], "gitea:read");
    let (status, envelope) = gateway.whoami_on(&gateway.url, &tokens.access_token).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(envelope["data"]["login"], "alice");
    // Gitea's own record of the grant: read scopes only, at the read
    // application; none at the read-write one.
    let scope = gateway.fake.grant_scope(FakeApp::Read, "alice").unwrap();
    let granular: Vec<&str> = scope
        .split(' ')
        .filter(|s| !["openid", "profile"].contains(s))
        .collect();
    assert!(!granular.is_empty());
    assert!(granular.iter().all(|s| s.starts_with("read:")), "{scope}");
    assert_eq!(gateway.fake.grant_scope(FakeApp::ReadWrite, "alice"), None);
}
on_both_backends!(a_reading_connection_holds_a_read_only_gitea_session);

async fn every_kind_of_write_on_a_reading_connection_gets_the_step_up_challenge(
    gateway: OAuthGateway,
) {
    let client = gateway.public_client().await;
    let tokens = gateway.read_tokens_at(&client, "alice", "/mcp").await;
    gateway.fake.clear();
    let writes = [
        (WRITE, issue("not yet")),
        (
            "gitea_call_write_operation",
            json!({"name": "gitea_issue_create_issue", "arguments": issue("not yet")}),
        ),
        (
            "gitea_api_request",
            json!({"method": "POST", "path": "/repos/alice/r/issues", "body": {"title": "x"}}),
        ),
    ];
    for (name, args) in writes {
        let (status, challenge, body) = call_raw(&gateway, &tokens.access_token, name, args).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{name}");
        assert!(
            challenge.contains(r#"error="insufficient_scope""#)
                && challenge.contains(r#"scope="gitea:read gitea:write""#)
                && challenge.contains(&format!(
                    r#"resource_metadata="{}/.well-known/oauth-protected-resource/mcp""#,
                    gateway.url
                )),
            "{name}: {challenge}"
        );
        assert_eq!(body["error"], "insufficient_scope");
    }
    assert!(gateway.fake.requests().is_empty(), "nothing reached Gitea");
    let refused = gateway
        .audit_events("tool_call_refused")
        .into_iter()
        .filter(|e| e["error_kind"] == "insufficient_scope")
        .count();
    assert_eq!(refused, 3);
    // Reading still works on the same connection.
    let (status, _, _) = call_raw(
        &gateway,
        &tokens.access_token,
        "gitea_api_request",
        json!({"method": "GET", "path": "/user"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}
on_both_backends!(every_kind_of_write_on_a_reading_connection_gets_the_step_up_challenge);

async fn after_the_step_up_the_same_call_runs_as_the_same_user(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let reading = gateway.read_tokens_at(&client, "alice", "/mcp").await;
    let (status, _, _) = call_raw(&gateway, &reading.access_token, WRITE, issue("stepped")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let (page, writing) =
        authorize_again(&gateway, &client, "gitea:read gitea:write", "approve-write").await;
    assert!(
        page.contains(r#"value="write" checked"#),
        "read and write is preselected"
    );
    assert_eq!(writing.body["scope"], "gitea:read gitea:write");
    let (status, envelope) = gateway
        .call_tool(&writing.access_token, WRITE, issue("stepped"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(envelope["data"]["title"], "stepped", "{envelope}");
    assert_eq!(envelope["identity"]["login"], "alice");
    // The writing session is the read-write application's.
    let scope = gateway
        .fake
        .grant_scope(FakeApp::ReadWrite, "alice")
        .unwrap();
    assert!(scope.contains("write:issue"), "{scope}");

    // The reading connection it widened is over, with one entry saying so.
    let (status, _) = gateway.whoami_on(&gateway.url, &reading.access_token).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let widened = gateway
        .audit_events("grant_ended")
        .into_iter()
        .filter(|e| e["detail"]["reason"] == "widened")
        .count();
    assert_eq!(widened, 1);
}
on_both_backends!(after_the_step_up_the_same_call_runs_as_the_same_user);

async fn a_person_who_keeps_read_only_at_the_step_up_stays_reading(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let first = gateway.read_tokens_at(&client, "alice", "/mcp").await;
    let (_, again) = authorize_again(&gateway, &client, "gitea:read gitea:write", "approve").await;
    assert_eq!(again.body["scope"], "gitea:read");
    let (status, _, _) = call_raw(&gateway, &again.access_token, WRITE, issue("no")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Nothing was widened: the first connection still works.
    let (status, _) = gateway.whoami_on(&gateway.url, &first.access_token).await;
    assert_eq!(status, StatusCode::OK);
}
on_both_backends!(a_person_who_keeps_read_only_at_the_step_up_stays_reading);

async fn a_reading_connection_cannot_refresh_into_writing(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.read_tokens_at(&client, "alice", "/mcp").await;
    let response = gateway
        .token_raw(
            &client,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", &tokens.refresh_token),
                ("scope", "gitea:read gitea:write"),
            ],
        )
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "invalid_scope");
}
on_both_backends!(a_reading_connection_cannot_refresh_into_writing);

/// A write the URL itself does not offer is unknown there, as before: no
/// step-up can make a `/readonly` URL write.
async fn a_readonly_url_is_never_challenged(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway
        .read_tokens_at(&client, "alice", "/mcp/readonly")
        .await;
    let (status, _, body) = call_raw_at(
        &gateway,
        "/mcp/readonly",
        &tokens.access_token,
        WRITE,
        issue("no"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["error"]["code"], -32602, "{body}");
}
on_both_backends!(a_readonly_url_is_never_challenged);

/// `/account` and `/admin` only need to know who you are and whether you
/// are an admin: their sign-in asks the read application for no write
/// scope, and an admin is still recognised.
async fn a_page_sign_in_asks_gitea_for_no_write_scope(gateway: OAuthGateway) {
    let browser = gateway
        .page_sign_in(crate::support::fake_gitea::ADMIN_LOGIN, "admin")
        .await;
    let asked = gateway.fake.last_authorize_query().unwrap();
    assert_eq!(
        asked["client_id"],
        crate::support::fake_gitea::OAUTH_READ_CLIENT_ID
    );
    let scope = &asked["scope"];
    assert!(!scope.contains("write:"), "{scope}");
    assert!(scope.contains("read:user"), "{scope}");
    let admin = gateway.page(&browser, "/admin").await;
    assert_eq!(admin.status(), StatusCode::OK);
}
on_both_backends!(a_page_sign_in_asks_gitea_for_no_write_scope);
