//! The people's pages: sign-in with Gitea, `/account` (own grants, revoke,
//! revoke all) and `/admin` (everyone's, for Gitea site admins and
//! `ADMIN_LOGINS`), with their access rules, CSRF, session expiry and the
//! "nothing changed" answers to bad input.

use reqwest::StatusCode;
use reqwest::header::LOCATION;
use serde_json::json;

use crate::support::fake_gitea::ADMIN_LOGIN;
use crate::{Browser, CLIENT_REDIRECT, OAuthGateway, TestClient, hidden_field, on_both_backends};

async fn html(response: reqwest::Response) -> (StatusCode, String) {
    let status = response.status();
    (status, response.text().await.unwrap())
}

async fn works_at_mcp(gateway: &OAuthGateway, access_token: &str) -> bool {
    gateway
        .call_tool(access_token, "gitea_user_get_current", json!({}))
        .await
        .0
        == StatusCode::OK
}

/// The form token of a signed-in page.
pub async fn csrf(gateway: &OAuthGateway, browser: &Browser, path: &str) -> String {
    let (status, page) = html(gateway.page(browser, path).await).await;
    assert_eq!(status, StatusCode::OK);
    hidden_field(&page, "csrf_token")
}

/// `POST /admin/actions` from `browser` with the form `token`.
pub async fn post_admin_action(
    gateway: &OAuthGateway,
    browser: &Browser,
    token: &str,
    action: &str,
    target: &str,
) -> reqwest::Response {
    gateway
        .post_form(
            browser,
            "/admin/actions",
            &[
                ("csrf_token", token),
                ("action", action),
                ("target", target),
            ],
        )
        .await
}

/// A grant id of `login`'s, read from the account page.
async fn first_grant_id(gateway: &OAuthGateway, browser: &Browser) -> String {
    let (_, page) = html(gateway.page(browser, "/account").await).await;
    hidden_field(&page, "grant_id")
}

async fn without_a_session_the_account_page_offers_sign_in(gateway: OAuthGateway) {
    let (status, page) = html(gateway.page(&Browser::default(), "/account").await).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("Sign in with Gitea"));
}
on_both_backends!(without_a_session_the_account_page_offers_sign_in);

async fn the_account_page_lists_only_ones_own_clients(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    gateway.tokens(&client, "alice").await;
    let (_, body) = gateway
        .register_raw(json!({"client_name": "Bob's <b>tool</b>", "redirect_uris": [CLIENT_REDIRECT], "token_endpoint_auth_method": "none"}))
        .await;
    let bobs = TestClient {
        client_id: body["client_id"].as_str().unwrap().into(),
        client_secret: None,
        redirect_uri: CLIENT_REDIRECT.into(),
    };
    gateway.tokens(&bobs, "bob").await;
    let alice = gateway.page_sign_in("alice", "account").await;
    let (_, page) = html(gateway.page(&alice, "/account").await).await;
    assert!(page.contains("Test client"));
    assert!(
        !page.contains("Bob&#39;s"),
        "bob's client is not alice's business"
    );
    assert!(
        page.contains("claude mcp add --transport http"),
        "connect snippets"
    );
    let bob = gateway.page_sign_in("bob", "account").await;
    let (_, page) = html(gateway.page(&bob, "/account").await).await;
    assert!(
        page.contains("Bob&#39;s &#60;b&#62;tool&#60;/b&#62;") || page.contains("&lt;b&gt;"),
        "escaped"
    );
    assert!(!page.contains("<b>tool"));
}
on_both_backends!(the_account_page_lists_only_ones_own_clients);

async fn revoking_on_the_account_page_locks_the_client_out(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    let alice = gateway.page_sign_in("alice", "account").await;
    let token = csrf(&gateway, &alice, "/account").await;
    let grant_id = first_grant_id(&gateway, &alice).await;
    let response = gateway
        .post_form(
            &alice,
            "/account/grants/revoke",
            &[("csrf_token", &token), ("grant_id", &grant_id)],
        )
        .await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert!(!works_at_mcp(&gateway, &tokens.access_token).await);
    // Revoking it again: a clear page, nothing else happens.
    let again = gateway
        .post_form(
            &alice,
            "/account/grants/revoke",
            &[("csrf_token", &token), ("grant_id", &grant_id)],
        )
        .await;
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
}
on_both_backends!(revoking_on_the_account_page_locks_the_client_out);

async fn revoke_all_ends_every_grant_of_the_person_only(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let first = gateway.tokens(&client, "alice").await;
    let second = gateway.tokens(&client, "alice").await;
    let bobs = gateway.tokens(&client, "bob").await;
    let alice = gateway.page_sign_in("alice", "account").await;
    let token = csrf(&gateway, &alice, "/account").await;
    let response = gateway
        .post_form(
            &alice,
            "/account/grants/revoke-all",
            &[("csrf_token", &token)],
        )
        .await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert!(!works_at_mcp(&gateway, &first.access_token).await);
    assert!(!works_at_mcp(&gateway, &second.access_token).await);
    assert!(works_at_mcp(&gateway, &bobs.access_token).await);
}
on_both_backends!(revoke_all_ends_every_grant_of_the_person_only);

async fn a_forged_csrf_token_or_a_foreign_origin_changes_nothing(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    let alice = gateway.page_sign_in("alice", "account").await;
    let grant_id = first_grant_id(&gateway, &alice).await;
    let forged = gateway
        .post_form(
            &alice,
            "/account/grants/revoke",
            &[("csrf_token", "forged"), ("grant_id", &grant_id)],
        )
        .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    let token = csrf(&gateway, &alice, "/account").await;
    let cross_site = gateway
        .http
        .post(format!("{}/account/grants/revoke-all", gateway.url))
        .header("cookie", alice.header())
        .header("origin", "https://evil.example")
        .form(&[("csrf_token", token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(cross_site.status(), StatusCode::FORBIDDEN);
    // Another person's valid token does not work with this session either.
    let bob = gateway.page_sign_in("bob", "account").await;
    let bobs_token = csrf(&gateway, &bob, "/account").await;
    let swapped = gateway
        .post_form(
            &alice,
            "/account/grants/revoke-all",
            &[("csrf_token", &bobs_token)],
        )
        .await;
    assert_eq!(swapped.status(), StatusCode::FORBIDDEN);
    assert!(works_at_mcp(&gateway, &tokens.access_token).await);
}
on_both_backends!(a_forged_csrf_token_or_a_foreign_origin_changes_nothing);

async fn someone_elses_grant_is_answered_as_missing(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    let alice = gateway.page_sign_in("alice", "account").await;
    let alices_grant = first_grant_id(&gateway, &alice).await;
    let bob = gateway.page_sign_in("bob", "account").await;
    let token = csrf(&gateway, &bob, "/account").await;
    let response = gateway
        .post_form(
            &bob,
            "/account/grants/revoke",
            &[("csrf_token", &token), ("grant_id", &alices_grant)],
        )
        .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert!(works_at_mcp(&gateway, &tokens.access_token).await);
}
on_both_backends!(someone_elses_grant_is_answered_as_missing);

async fn page_sessions_expire_and_sign_out_ends_them(gateway: OAuthGateway) {
    let alice = gateway.page_sign_in("alice", "account").await;
    let token = csrf(&gateway, &alice, "/account").await;
    let out = gateway
        .post_form(&alice, "/account/sign-out", &[("csrf_token", &token)])
        .await;
    assert_eq!(out.status(), StatusCode::SEE_OTHER);
    // The old cookie, replayed, is worth nothing.
    let (_, page) = html(gateway.page(&alice, "/account").await).await;
    assert!(page.contains("Sign in with Gitea"));
    let replay = gateway
        .post_form(
            &alice,
            "/account/grants/revoke-all",
            &[("csrf_token", &token)],
        )
        .await;
    assert_eq!(replay.status(), StatusCode::UNAUTHORIZED);

    let again = gateway.page_sign_in("alice", "account").await;
    gateway.clock.advance(8 * 3600 + 1);
    let (_, page) = html(gateway.page(&again, "/account").await).await;
    assert!(page.contains("Sign in with Gitea"), "expired");
}
on_both_backends!(page_sessions_expire_and_sign_out_ends_them);

async fn a_page_session_never_works_at_mcp(gateway: OAuthGateway) {
    let alice = gateway.page_sign_in("alice", "account").await;
    let session = alice.cookies["aegis_session"].clone();
    let (status, _) = gateway
        .call_tool(&session, "gitea_user_get_current", json!({}))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let with_cookie = gateway
        .http
        .post(gateway.mcp_url())
        .header("cookie", alice.header())
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(with_cookie.status(), StatusCode::UNAUTHORIZED);
}
on_both_backends!(a_page_session_never_works_at_mcp);

async fn a_non_admin_gets_403_on_the_admin_page_and_actions(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "bob").await;
    let alice = gateway.page_sign_in("alice", "admin").await;
    let (status, _) = html(gateway.page(&alice, "/admin").await).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let token = csrf(&gateway, &alice, "/account").await;
    let response = post_admin_action(&gateway, &alice, &token, "revoke-user", "bob").await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(works_at_mcp(&gateway, &tokens.access_token).await);
}
on_both_backends!(a_non_admin_gets_403_on_the_admin_page_and_actions);

async fn an_admin_sees_everyone_and_revokes_a_user(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let alices = gateway.tokens(&client, "alice").await;
    let bobs = gateway.tokens(&client, "bob").await;
    let admin = gateway.page_sign_in(ADMIN_LOGIN, "admin").await;
    let (status, page) = html(gateway.page(&admin, "/admin").await).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("alice") && page.contains("bob"));
    let (_, filtered) = html(gateway.page(&admin, "/admin?user=bob").await).await;
    assert!(filtered.contains("1 grant(s)"), "filter by user");
    let (status, confirm) = html(
        gateway
            .page(&admin, "/admin/confirm?action=revoke-user&target=bob")
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let token = hidden_field(&confirm, "csrf_token");
    let done = post_admin_action(&gateway, &admin, &token, "revoke-user", "bob").await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    assert!(
        done.headers()[LOCATION]
            .to_str()
            .unwrap()
            .starts_with("/admin?done=")
    );
    assert!(!works_at_mcp(&gateway, &bobs.access_token).await);
    assert!(works_at_mcp(&gateway, &alices.access_token).await);
}
on_both_backends!(an_admin_sees_everyone_and_revokes_a_user);

async fn deleting_a_client_revokes_its_grants(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    let admin = gateway.page_sign_in(ADMIN_LOGIN, "admin").await;
    let token = csrf(&gateway, &admin, "/admin").await;
    let done =
        post_admin_action(&gateway, &admin, &token, "delete-client", &client.client_id).await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    assert!(!works_at_mcp(&gateway, &tokens.access_token).await);
    // The client is gone: its sign-in page is an error now.
    let again =
        post_admin_action(&gateway, &admin, &token, "delete-client", &client.client_id).await;
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
}
on_both_backends!(deleting_a_client_revokes_its_grants);

async fn an_action_on_a_grant_that_no_longer_exists_changes_nothing(gateway: OAuthGateway) {
    let admin = gateway.page_sign_in(ADMIN_LOGIN, "admin").await;
    let token = csrf(&gateway, &admin, "/admin").await;
    let response =
        post_admin_action(&gateway, &admin, &token, "revoke-grant", "no-such-grant").await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let (status, _) = html(
        gateway
            .page(
                &admin,
                "/admin/confirm?action=revoke-grant&target=no-such-grant",
            )
            .await,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
on_both_backends!(an_action_on_a_grant_that_no_longer_exists_changes_nothing);

/// The admin bit is asked of Gitea again before an action: an admin whose
/// Gitea session is gone cannot act on the strength of the page session.
async fn admin_actions_recheck_gitea(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "bob").await;
    let admin = gateway.page_sign_in(ADMIN_LOGIN, "admin").await;
    let token = csrf(&gateway, &admin, "/admin").await;
    gateway.fake.expire_access_tokens();
    let response = post_admin_action(&gateway, &admin, &token, "revoke-user", "bob").await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    // Nothing changed: bob's token still resolves at /mcp (HTTP 200; what
    // Gitea then says about his own expired session is another matter).
    assert!(works_at_mcp(&gateway, &tokens.access_token).await);
}
on_both_backends!(admin_actions_recheck_gitea);

async fn admin_logins_open_the_admin_page(gateway: OAuthGateway) {
    let alice = gateway.page_sign_in("alice", "admin").await;
    let (status, _) = html(gateway.page(&alice, "/admin").await).await;
    assert_eq!(status, StatusCode::OK);
}
on_both_backends!(admin_logins_open_the_admin_page, ("ADMIN_LOGINS", "alice"));
