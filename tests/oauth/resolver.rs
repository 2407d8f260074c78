//! The resolver at `/mcp`: our token acts as the signed-in user with that
//! user's own Gitea token, never the admin's; the Gitea session is
//! refreshed once under concurrency; Gitea refusing the refresh ends our
//! grant; the token's audience is enforced.

use reqwest::StatusCode;
use serde_json::json;

use crate::authorize::restarted;
use crate::support::fake_gitea::ADMIN_TOKEN;
use crate::support::{BEARER, mcp_client};
use crate::{Backend, OAuthGateway, on_both_backends, run};

async fn tools_run_as_the_signed_in_user(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    let (status, envelope) = gateway
        .call_tool(&tokens.access_token, "gitea_user_get_current", json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(envelope["identity"]["login"], "alice");
    assert_eq!(envelope["identity"]["mode"], "oauth");
    assert_eq!(envelope["data"]["login"], "alice");
}
on_both_backends!(tools_run_as_the_signed_in_user);

/// F9: the user's Gitea refresh token is on the exact-redaction list of
/// that user's calls, though it is never sent with one.
async fn the_users_gitea_refresh_token_never_reaches_the_model(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    let refresh = gateway.fake.refresh_tokens("alice");
    assert_eq!(refresh.len(), 1);
    let (status, envelope) = gateway
        .call_tool(
            &tokens.access_token,
            "gitea_issue_create_issue",
            json!({"owner": "alice", "repo": "r", "body": {"title": format!("pasted {}", refresh[0])}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(envelope["data"]["title"], "pasted [REDACTED]", "{envelope}");
}
on_both_backends!(the_users_gitea_refresh_token_never_reaches_the_model);

/// An admin-only operation gets Gitea's 403 for the user, not the admin's
/// answer; and the admin token never leaves the gateway for this call.
async fn an_oauth_token_never_reaches_the_admin_token(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    gateway.fake.clear();
    // Not a core tool: the default surface reaches it through the read call tool.
    let (status, envelope) = gateway
        .call_tool(
            &tokens.access_token,
            "gitea_call_read_operation",
            json!({"name": "gitea_admin_search_users"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(envelope["error"]["status"], 403, "{envelope}");
    let alice_token = gateway.fake.latest_access_token("alice").unwrap();
    for request in gateway.fake.requests() {
        let auth = request
            .headers
            .get("authorization")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        assert!(
            !auth.contains(ADMIN_TOKEN),
            "{} sent the admin token",
            request.uri
        );
        if request.uri.starts_with("/api/v1/admin") {
            assert!(auth.contains(&alice_token));
        }
    }
}
on_both_backends!(an_oauth_token_never_reaches_the_admin_token);

/// The official Rust MCP SDK with our token lists tools and calls one.
async fn an_mcp_client_works_with_an_oauth_token(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "bob").await;
    let mcp = mcp_client(&gateway.mcp_url(), Some(&tokens.access_token)).await;
    // The default surface: the core tools plus discovery.
    let tools = mcp.list_all_tools().await.unwrap();
    assert!((20..=40).contains(&tools.len()), "{} tools", tools.len());
    let (is_error, envelope) =
        crate::support::call(&mcp, "gitea_user_get_current", json!({})).await;
    assert!(!is_error);
    assert_eq!(envelope["identity"]["login"], "bob");
}
on_both_backends!(an_mcp_client_works_with_an_oauth_token);

/// A person's agent acts only as that person: no schema offers `sudo`,
/// and a call that sends it anyway is refused before anything is sent,
/// whatever the person's Gitea rights.
async fn a_person_never_gets_sudo(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    let mcp = mcp_client(&gateway.mcp_url(), Some(&tokens.access_token)).await;
    let tools = mcp.list_all_tools().await.unwrap();
    assert!(
        tools
            .iter()
            .all(|t| t.input_schema["properties"].get("sudo").is_none()),
        "a tool offers sudo to a person"
    );
    gateway.fake.clear();
    let (status, envelope) = gateway
        .call_tool(
            &tokens.access_token,
            "gitea_user_get_current",
            json!({"sudo": "gitea-admin"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(envelope["error"]["kind"], "invalid_arguments", "{envelope}");
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`sudo`"),
        "{envelope}"
    );
    assert!(gateway.fake.requests().is_empty(), "nothing reached Gitea");
}
on_both_backends!(a_person_never_gets_sudo);

/// An expired Gitea session is refreshed once, however many calls wait.
async fn the_gitea_session_is_refreshed_once_under_concurrency(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    gateway.expire_gitea_sessions();
    let before = gateway.fake.token_requests("refresh_token");
    let calls = futures::future::join_all(
        (0..10)
            .map(|_| gateway.call_tool(&tokens.access_token, "gitea_user_get_current", json!({}))),
    )
    .await;
    for (status, envelope) in calls {
        assert_eq!(status, StatusCode::OK);
        assert_eq!(envelope["status"], 200, "{envelope}");
    }
    assert_eq!(gateway.fake.token_requests("refresh_token") - before, 1);
}
on_both_backends!(the_gitea_session_is_refreshed_once_under_concurrency);

/// Issue 30: a Gitea that issues 20-second tokens. With a fixed 30-second
/// lead every token counted as expired when issued, and every call renewed
/// the session; the lead is now at most half the lifetime: calls in the
/// first half renew nothing, the first call past it renews once.
async fn short_lived_gitea_tokens_are_renewed_once_per_lifetime(gateway: OAuthGateway) {
    gateway.fake.set_access_token_lifetime(20);
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    let refreshes = || gateway.fake.token_requests("refresh_token");
    let before = refreshes();
    for _ in 0..5 {
        let (status, envelope) = gateway
            .call_tool(&tokens.access_token, "gitea_user_get_current", json!({}))
            .await;
        assert_eq!((status, &envelope["status"]), (StatusCode::OK, &json!(200)));
    }
    assert_eq!(refreshes() - before, 0, "within the first half: no renewal");
    gateway.clock.advance(11);
    for _ in 0..5 {
        let (status, _) = gateway
            .call_tool(&tokens.access_token, "gitea_user_get_current", json!({}))
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    assert_eq!(
        refreshes() - before,
        1,
        "past half the lifetime: one renewal"
    );
}
on_both_backends!(short_lived_gitea_tokens_are_renewed_once_per_lifetime);

/// Gitea refusing the refresh revokes our grant: 401, sign in again.
async fn gitea_refusing_the_refresh_revokes_the_grant(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    gateway.clock.advance(3600 - 10);
    gateway.fake.fail_next_refresh_with("invalid_grant");
    let (status, _) = gateway
        .call_tool(&tokens.access_token, "gitea_user_get_current", json!({}))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let refresh = gateway.refresh(&client, &tokens.refresh_token).await;
    assert_eq!(refresh.status(), StatusCode::BAD_REQUEST);
}
on_both_backends!(gitea_refusing_the_refresh_revokes_the_grant);

/// F8: Gitea ending a token before its stored expiry (the user revoked
/// the app, Gitea's key changed) refreshes the session once and retries
/// the call; the caller never sees Gitea's 401.
async fn a_token_gitea_ended_early_is_refreshed_and_the_call_retried(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    gateway.fake.expire_access_tokens();
    let before = gateway.fake.token_requests("refresh_token");
    let calls = futures::future::join_all(
        (0..5)
            .map(|_| gateway.call_tool(&tokens.access_token, "gitea_user_get_current", json!({}))),
    )
    .await;
    for (status, envelope) in calls {
        assert_eq!(status, StatusCode::OK);
        assert_eq!(envelope["status"], 200, "{envelope}");
        assert_eq!(envelope["data"]["login"], "alice");
    }
    assert_eq!(gateway.fake.token_requests("refresh_token") - before, 1);
}
on_both_backends!(a_token_gitea_ended_early_is_refreshed_and_the_call_retried);

/// A route that answers 401 to any token (Gitea's basic-auth-only token
/// routes) gets Gitea's 401; it renews the session at most once a minute,
/// so calling it cannot rotate the user's Gitea tokens on every call.
async fn a_route_that_refuses_every_token_renews_at_most_once_a_minute(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    let before = gateway.fake.token_requests("refresh_token");
    for _ in 0..3 {
        let (status, envelope) = gateway
            .call_tool(
                &tokens.access_token,
                "gitea_call_read_operation",
                json!({"name": "gitea_user_get_tokens", "arguments": {"username": "alice"}}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(envelope["error"]["status"], 401, "{envelope}");
    }
    assert_eq!(gateway.fake.token_requests("refresh_token") - before, 1);
    let (status, envelope) = gateway
        .call_tool(&tokens.access_token, "gitea_user_get_current", json!({}))
        .await;
    assert_eq!(
        (status, envelope["status"].clone()),
        (StatusCode::OK, json!(200))
    );
}
on_both_backends!(a_route_that_refuses_every_token_renews_at_most_once_a_minute);

/// F8: when Gitea ended the token and refuses the refresh too (the user
/// revoked the application there), the call gets Gitea's 401 and the grant
/// is over.
async fn a_token_gitea_ended_with_its_grant_ends_our_grant(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    gateway.fake.revoke_grant("alice");
    let (status, envelope) = gateway
        .call_tool(&tokens.access_token, "gitea_user_get_current", json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(envelope["error"]["status"], 401, "{envelope}");
    let (status, _) = gateway
        .call_tool(&tokens.access_token, "gitea_user_get_current", json!({}))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}
on_both_backends!(a_token_gitea_ended_with_its_grant_ends_our_grant);

/// #28 (`/mcp` side): a token minted for another resource (another public
/// URL on the same store) is refused.
async fn the_token_audience_is_enforced_at_mcp(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    let elsewhere = restarted(&gateway, gateway.settings.clone()).await;
    let (status, _) = elsewhere
        .call_tool(&tokens.access_token, "gitea_user_get_current", json!({}))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = gateway
        .call_tool(&tokens.access_token, "gitea_user_get_current", json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
}
on_both_backends!(the_token_audience_is_enforced_at_mcp);

/// The static bearer still acts with the admin token beside OAuth.
async fn the_static_bearer_is_unchanged(gateway: OAuthGateway) {
    let (status, envelope) = gateway
        .call_tool(BEARER, "gitea_user_get_current", json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(envelope["identity"]["mode"], "bearer");
}
on_both_backends!(the_static_bearer_is_unchanged);

/// OAuth alone: no admin token, no static bearer.
#[tokio::test]
async fn an_oauth_only_deployment_works() {
    run(
        Backend::Sqlite,
        &[("GITEA_TOKEN", ""), ("MCP_BEARER_TOKEN", "")],
        |gateway| async move {
            let client = gateway.public_client().await;
            let tokens = gateway.tokens(&client, "alice").await;
            let (status, envelope) = gateway
                .call_tool(&tokens.access_token, "gitea_user_get_current", json!({}))
                .await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(envelope["identity"]["login"], "alice");
            // Without a token: the challenge, not the admin token.
            let (status, _) = gateway
                .call_tool("", "gitea_user_get_current", json!({}))
                .await;
            assert_eq!(status, StatusCode::UNAUTHORIZED);
        },
    )
    .await;
}
