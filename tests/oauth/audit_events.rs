//! OAuth events reach the audit log: registration, consent approved and
//! denied, code issued, token issued, refresh, refresh-token reuse,
//! revocation, upstream refresh failures, admin actions and rate-limit
//! hits, chained (the log verifies), and without a token, code, secret or
//! password in any entry.

use reqwest::StatusCode;
use serde_json::Value;

use crate::pages::{csrf, post_admin_action};
use crate::support::fake_gitea::ADMIN_LOGIN;
use crate::support::gateway_process::audit_verify;
use crate::{Browser, OAuthGateway, Pkce, on_both_backends, tokens_from};

fn entries(gateway: &OAuthGateway) -> (String, Vec<Value>) {
    let text = std::fs::read_to_string(gateway.data_dir.path().join("audit.log")).unwrap();
    let entries = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (text, entries)
}

fn count(entries: &[Value], event: &str) -> usize {
    entries.iter().filter(|e| e["event"] == event).count()
}

async fn oauth_events_are_audited_without_secrets(gateway: OAuthGateway) {
    let client = gateway
        .register("client_secret_post", crate::CLIENT_REDIRECT)
        .await;
    let tokens = gateway.tokens(&client, "alice").await;

    // Refresh, then reuse the rotated-out refresh token once its successor
    // has been used: reuse detected, the grant revoked.
    let refreshed = gateway.refresh(&client, &tokens.refresh_token).await;
    assert_eq!(refreshed.status(), StatusCode::OK);
    let second = tokens_from(refreshed).await;
    let third = gateway.refresh(&client, &second.refresh_token).await;
    assert_eq!(third.status(), StatusCode::OK);
    let third = tokens_from(third).await;
    let reused = gateway.refresh(&client, &tokens.refresh_token).await;
    assert_eq!(reused.status(), StatusCode::BAD_REQUEST);

    // A new grant, revoked by the client.
    let fresh = gateway.tokens(&client, "alice").await;
    assert_eq!(
        gateway.revoke(&fresh.access_token).await.status(),
        StatusCode::OK
    );

    // A denied consent.
    let mut browser = Browser::default();
    let form = gateway
        .consent_page(
            &mut browser,
            &gateway.authorize_params(&client, &Pkce::new(), "st-deny"),
        )
        .await;
    gateway.decide(&mut browser, &form, "deny").await;

    let (text, entries) = entries(&gateway);
    for (event, at_least) in [
        ("client_registered", 1),
        ("consent_approved", 2),
        ("consent_denied", 1),
        ("code_issued", 2),
        ("token_issued", 2),
        ("token_refreshed", 2),
        ("refresh_reuse_detected", 1),
        ("token_revoked", 1),
    ] {
        assert!(
            count(&entries, event) >= at_least,
            "{event}: {} entries\n{text}",
            count(&entries, event)
        );
    }
    // Consent comes before the Gitea sign-in; the code names the person.
    let issued = entries
        .iter()
        .find(|e| e["event"] == "code_issued")
        .unwrap();
    assert_eq!(issued["identity"]["login"], "alice", "{issued}");

    for secret in [
        &tokens.access_token,
        &tokens.refresh_token,
        &second.access_token,
        &third.refresh_token,
        &fresh.access_token,
        client.client_secret.as_ref().unwrap(),
        &form.csrf_token,
        &form.request_id,
    ] {
        assert!(!text.contains(secret.as_str()), "a secret in the audit log");
    }
    let (code, out) = audit_verify(gateway.data_dir.path(), None, &[]);
    assert_eq!(code, 0, "{out}");
}
on_both_backends!(oauth_events_are_audited_without_secrets);

async fn a_rate_limit_hit_is_audited_once_per_window(gateway: OAuthGateway) {
    let http = reqwest::Client::new();
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let status = http
            .get(format!(
                "{}/.well-known/oauth-authorization-server",
                gateway.url
            ))
            .send()
            .await
            .unwrap()
            .status();
        statuses.push(status);
    }
    assert_eq!(statuses[..2], [StatusCode::OK; 2]);
    assert!(
        statuses[2..]
            .iter()
            .all(|s| *s == StatusCode::TOO_MANY_REQUESTS)
    );
    // The entry is written beside the limiter: wait for it.
    let mut limited = 0;
    for _ in 0..100 {
        limited = count(&entries(&gateway).1, "rate_limited");
        if limited > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(limited, 1, "three refusals, one window, one entry");
    let (_, entries) = entries(&gateway);
    let entry = entries
        .iter()
        .find(|e| e["event"] == "rate_limited")
        .unwrap();
    assert_eq!(entry["detail"]["key_kind"], "ip");
}
on_both_backends!(
    a_rate_limit_hit_is_audited_once_per_window,
    ("RATE_LIMIT_PER_IP", "2")
);

/// The Gitea session behind `access_token` is due for renewal and Gitea
/// refuses it: the call gets 401 and the grant ends.
async fn gitea_refuses_the_session(gateway: &OAuthGateway, access_token: &str) {
    gateway.clock.advance(3600 - 10);
    gateway.fake.fail_next_refresh_with("invalid_grant");
    let (status, _) = gateway
        .call_tool(
            access_token,
            "gitea_user_get_current",
            serde_json::json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

async fn upstream_refresh_failures_and_admin_actions_are_audited(gateway: OAuthGateway) {
    // Gitea refuses to refresh alice's session: the grant ends, audited.
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    gitea_refuses_the_session(&gateway, &tokens.access_token).await;

    // An admin revokes every grant of bob's, audited with the admin's login.
    gateway.tokens(&client, "bob").await;
    let admin = gateway.page_sign_in(ADMIN_LOGIN, "admin").await;
    let token = csrf(&gateway, &admin, "/admin").await;
    let response = post_admin_action(&gateway, &admin, &token, "revoke-user", "bob").await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);

    let (text, entries) = entries(&gateway);
    let failed = entries
        .iter()
        .find(|e| e["event"] == "upstream_refresh_failed")
        .unwrap_or_else(|| panic!("no upstream_refresh_failed in\n{text}"));
    assert_eq!(failed["identity"]["login"], "alice", "{failed}");
    let action = entries
        .iter()
        .find(|e| e["event"] == "admin_action")
        .unwrap_or_else(|| panic!("no admin_action in\n{text}"));
    assert_eq!(action["identity"]["login"], ADMIN_LOGIN, "{action}");
    assert!(!text.contains(&tokens.access_token));
    let (code, out) = audit_verify(gateway.data_dir.path(), None, &[]);
    assert_eq!(code, 0, "{out}");
}
on_both_backends!(upstream_refresh_failures_and_admin_actions_are_audited);

/// The `grant_ended` entries, as (login, `by`, `reason`), in log order.
fn endings(entries: &[Value]) -> Vec<(String, String, String)> {
    entries
        .iter()
        .filter(|e| e["event"] == "grant_ended")
        .map(|e| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (
                text(&e["identity"]["login"]),
                text(&e["detail"]["by"]),
                text(&e["detail"]["reason"]),
            )
        })
        .collect()
}

/// Issue 29: every way a grant ends writes exactly one `grant_ended`
/// entry (who ended it, why, whose it was), and the log verifies. The
/// paths, one by one: the client at `/revoke`; the person on `/account`
/// (one, then all); an admin on `/admin` (a grant, a user's grants, a
/// client with its grants); a replayed code; a reused refresh token;
/// Gitea refusing the session; an ID token that does not verify.
async fn every_way_a_grant_ends_writes_one_grant_ended_entry(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let expect =
        |login: &str, by: &str, reason: &str| (login.to_owned(), by.to_owned(), reason.to_owned());
    let mut expected = Vec::new();

    // The client revokes its token.
    let t = gateway.tokens(&client, "alice").await;
    assert_eq!(
        gateway.revoke(&t.access_token).await.status(),
        StatusCode::OK
    );
    expected.push(expect("alice", "client", "client_revoked"));

    // The person revokes one grant, then all of theirs (two).
    gateway.tokens(&client, "alice").await;
    let alice = gateway.page_sign_in("alice", "account").await;
    let token = csrf(&gateway, &alice, "/account").await;
    let grant_id = crate::support::oauth_client::hidden_field(
        &gateway.page(&alice, "/account").await.text().await.unwrap(),
        "grant_id",
    );
    let revoked = gateway
        .post_form(
            &alice,
            "/account/grants/revoke",
            &[
                ("csrf_token", token.as_str()),
                ("grant_id", grant_id.as_str()),
            ],
        )
        .await;
    assert_eq!(revoked.status(), StatusCode::SEE_OTHER);
    expected.push(expect("alice", "person", "account_page"));
    gateway.tokens(&client, "alice").await;
    gateway.tokens(&client, "alice").await;
    let revoked = gateway
        .post_form(
            &alice,
            "/account/grants/revoke-all",
            &[("csrf_token", token.as_str())],
        )
        .await;
    assert_eq!(revoked.status(), StatusCode::SEE_OTHER);
    expected.push(expect("alice", "person", "account_page"));
    expected.push(expect("alice", "person", "account_page"));

    // An admin revokes bob's grants, then deletes a client with one grant.
    gateway.tokens(&client, "bob").await;
    let admin = gateway.page_sign_in(ADMIN_LOGIN, "admin").await;
    let token = csrf(&gateway, &admin, "/admin").await;
    let response = post_admin_action(&gateway, &admin, &token, "revoke-user", "bob").await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    expected.push(expect("bob", "admin", "admin_page"));
    let doomed = gateway.public_client().await;
    gateway.tokens(&doomed, "bob").await;
    let response =
        post_admin_action(&gateway, &admin, &token, "delete-client", &doomed.client_id).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    expected.push(expect("bob", "admin", "admin_page"));

    // A code presented twice.
    let pkce = Pkce::new();
    let to_client = gateway.sign_in(&client, &pkce, "bob").await;
    let code = crate::support::oauth_client::param(&to_client, "code").unwrap();
    assert_eq!(
        gateway.redeem(&client, &code, &pkce).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        gateway.redeem(&client, &code, &pkce).await.status(),
        StatusCode::BAD_REQUEST
    );
    expected.push(expect("bob", "gateway", "code_misused"));

    // A rotated-out refresh token comes back after its successor was used.
    let t = gateway.tokens(&client, "bob").await;
    let second = tokens_from(gateway.refresh(&client, &t.refresh_token).await).await;
    let third = gateway.refresh(&client, &second.refresh_token).await;
    assert_eq!(third.status(), StatusCode::OK);
    let reused = gateway.refresh(&client, &t.refresh_token).await;
    assert_eq!(reused.status(), StatusCode::BAD_REQUEST);
    expected.push(expect("bob", "gateway", "refresh_token_reused"));

    // Gitea refuses to renew alice's session.
    let t = gateway.tokens(&client, "alice").await;
    gitea_refuses_the_session(&gateway, &t.access_token).await;
    expected.push(expect("alice", "gateway", "upstream_refused"));

    // The renewed session's ID token does not verify.
    let t = gateway.tokens(&client, "alice").await;
    gateway.fake.expire_access_tokens();
    gateway.clock.advance(3600 - 10);
    gateway
        .fake
        .forge_next_id_token(crate::support::fake_gitea::Forgery::BadSignature);
    let (status, _) = gateway
        .call_tool(
            &t.access_token,
            "gitea_user_get_current",
            serde_json::json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    expected.push(expect("alice", "gateway", "upstream_id_token_refused"));

    let (text, entries) = entries(&gateway);
    assert_eq!(endings(&entries), expected, "\n{text}");
    let (code, out) = audit_verify(gateway.data_dir.path(), None, &[]);
    assert_eq!(code, 0, "{out}");
}
on_both_backends!(every_way_a_grant_ends_writes_one_grant_ended_entry);
