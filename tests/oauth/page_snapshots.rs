//! Every page state and every page refusal a person can meet, as they see
//! it: status and HTML, snapshotted with insta after the random parts are
//! normalised (the gateway's and Gitea's URLs, the 43-character random
//! values, loopback ports, times). A change of wording, headers' effect or
//! structure is then a reviewed snapshot change, not a `contains` that
//! still passes. SQLite only: the pages do not depend on the backend.

use reqwest::StatusCode;

use crate::consent::at_consent;
use crate::pages::csrf;
use crate::support::fake_gitea::ADMIN_LOGIN;
use crate::{Backend, Browser, OAuthGateway, Pkce, run};

/// The HTML with what changes from run to run replaced.
fn normalised_page(gateway: &OAuthGateway, html: &str) -> String {
    let text = html
        .replace(&gateway.url, "http://gateway.test")
        .replace(&gateway.fake.url, "http://gitea.test");
    let random = regex::Regex::new(r"[A-Za-z0-9_-]{43}").unwrap();
    let port = regex::Regex::new(r"127\.0\.0\.1:\d+").unwrap();
    let time = regex::Regex::new(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC").unwrap();
    let text = random.replace_all(&text, "[random]");
    let text = port.replace_all(&text, "127.0.0.1:[port]");
    time.replace_all(&text, "[time]").into_owned()
}

/// Status and page, for a snapshot.
async fn shown(gateway: &OAuthGateway, response: reqwest::Response) -> String {
    let status = response.status().as_u16();
    let html = response.text().await.unwrap();
    format!("HTTP {status}\n\n{}", normalised_page(gateway, &html))
}

fn sqlite<F, Fut>(test: F) -> impl std::future::Future<Output = ()>
where
    F: FnOnce(OAuthGateway) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    run(Backend::Sqlite, &[], test)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sign_in_pages() {
    sqlite(|gateway| async move {
        for page in ["account", "admin"] {
            let response = gateway.page(&Browser::default(), &format!("/{page}")).await;
            insta::assert_snapshot!(
                format!("page_sign_in_{page}"),
                shown(&gateway, response).await
            );
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consent_page_read_and_write_and_read_only() {
    sqlite(|gateway| async move {
        let (_, _, form) = at_consent(&gateway).await;
        insta::assert_snapshot!(
            "page_consent",
            format!("HTTP 200\n\n{}", normalised_page(&gateway, &form.html))
        );
        let client = gateway.public_client().await;
        let mut params = gateway.authorize_params(&client, &Pkce::new(), "st-ro");
        params.retain(|(name, _)| name != "resource");
        params.push((
            "resource".into(),
            format!("{}/mcp/x/issue/readonly", gateway.url),
        ));
        let form = gateway.consent_page(&mut Browser::default(), &params).await;
        insta::assert_snapshot!(
            "page_consent_read_only",
            format!("HTTP 200\n\n{}", normalised_page(&gateway, &form.html))
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_account_page_with_a_connection_and_after_revoking_it() {
    sqlite(|gateway| async move {
        let client = gateway.public_client().await;
        gateway.tokens(&client, "alice").await;
        let browser = gateway.page_sign_in("alice", "account").await;
        let page = gateway.page(&browser, "/account").await;
        insta::assert_snapshot!("page_account", shown(&gateway, page).await);
        let token = csrf(&gateway, &browser, "/account").await;
        gateway
            .post_form(
                &browser,
                "/account/grants/revoke-all",
                &[("csrf_token", token.as_str())],
            )
            .await;
        let page = gateway.page(&browser, "/account?done=revoked-all").await;
        insta::assert_snapshot!("page_account_after_revoke_all", shown(&gateway, page).await);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_page_and_its_confirmation() {
    sqlite(|gateway| async move {
        let client = gateway.public_client().await;
        gateway.tokens(&client, "alice").await;
        let browser = gateway.page_sign_in(ADMIN_LOGIN, "admin").await;
        let page = gateway.page(&browser, "/admin").await;
        insta::assert_snapshot!("page_admin", shown(&gateway, page).await);
        let page = gateway
            .page(&browser, "/admin/confirm?action=revoke-user&target=alice")
            .await;
        insta::assert_snapshot!("page_admin_confirm", shown(&gateway, page).await);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_of_the_consent_flow() {
    sqlite(|gateway| async move {
        let (_, mut browser, form) = at_consent(&gateway).await;
        // Another site posts the form.
        let response = gateway
            .decide_from_origin(&browser, &form, "approve", "https://evil.example")
            .await;
        insta::assert_snapshot!(
            "refusal_consent_cross_site",
            shown(&gateway, response).await
        );
        // The form without the browser's cookie.
        let response = gateway
            .decide(&mut Browser::default(), &form, "approve")
            .await;
        insta::assert_snapshot!("refusal_consent_bad_token", shown(&gateway, response).await);
        // Answered twice.
        let first = gateway.decide(&mut browser, &form, "deny").await;
        assert_eq!(first.status(), StatusCode::SEE_OTHER);
        let again = gateway.decide(&mut browser, &form, "deny").await;
        insta::assert_snapshot!("refusal_consent_expired", shown(&gateway, again).await);
        // An application nobody registered.
        let unknown = gateway
            .authorize_raw(
                &mut Browser::default(),
                &[("client_id".into(), "nobody".into())],
            )
            .await;
        insta::assert_snapshot!(
            "refusal_authorize_unknown_client",
            shown(&gateway, unknown).await
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_of_the_callback() {
    sqlite(|gateway| async move {
        let (_, mut browser, form) = at_consent(&gateway).await;
        let approval = gateway.decide(&mut browser, &form, "approve").await;
        let callback_url = gateway.through_gitea(&approval, "alice").await;
        // Another browser (no binding cookie) arrives with the state.
        let stranger = gateway
            .callback(&mut Browser::default(), &callback_url)
            .await;
        insta::assert_snapshot!(
            "refusal_callback_other_browser",
            shown(&gateway, stranger).await
        );
        let done = gateway.callback(&mut browser, &callback_url).await;
        assert_eq!(done.status(), StatusCode::SEE_OTHER);
        // The same callback again.
        let replay = gateway.callback(&mut browser, &callback_url).await;
        insta::assert_snapshot!("refusal_callback_replayed", shown(&gateway, replay).await);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_of_the_peoples_pages() {
    sqlite(|gateway| async move {
        let alice = gateway.page_sign_in("alice", "account").await;
        let admin = gateway.page(&alice, "/admin").await;
        insta::assert_snapshot!("refusal_admin_only", shown(&gateway, admin).await);
        let token = csrf(&gateway, &alice, "/account").await;
        let gone = gateway
            .post_form(
                &alice,
                "/account/grants/revoke",
                &[
                    ("csrf_token", token.as_str()),
                    ("grant_id", "no-such-grant"),
                ],
            )
            .await;
        insta::assert_snapshot!("refusal_gone", shown(&gateway, gone).await);
        let forged = gateway
            .post_form(
                &alice,
                "/account/grants/revoke-all",
                &[("csrf_token", "forged")],
            )
            .await;
        insta::assert_snapshot!("refusal_form_bad_token", shown(&gateway, forged).await);
        let signed_out = gateway
            .post_form(
                &Browser::default(),
                "/account/grants/revoke-all",
                &[("csrf_token", token.as_str())],
            )
            .await;
        insta::assert_snapshot!("refusal_signed_out", shown(&gateway, signed_out).await);
    })
    .await;
}

/// The confirmation page of a waiting call, `/account` listing it, and
/// the page once approved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_confirmation_page_waiting_and_approved() {
    sqlite(|gateway| async move {
        let client = gateway.public_client().await;
        let tokens = gateway.tokens(&client, "alice").await;
        let (_, result) = gateway
            .call_tool(
                &tokens.access_token,
                "gitea_call_write_operation",
                serde_json::json!({
                    "name": "gitea_repo_delete_branch",
                    "arguments": {"owner": "alice", "repo": "r", "branch": "feature/x"},
                }),
            )
            .await;
        let url = result["error"]["confirm_url"].as_str().unwrap().to_owned();
        let path = url.strip_prefix(&gateway.url).unwrap().to_owned();
        let browser = gateway.page_sign_in("alice", "account").await;
        let account = gateway.page(&browser, "/account").await;
        insta::assert_snapshot!(
            "page_account_with_a_waiting_call",
            shown(&gateway, account).await
        );
        let page = gateway.page(&browser, &path).await;
        insta::assert_snapshot!("page_confirmation_waiting", shown(&gateway, page).await);
        let token = csrf(&gateway, &browser, &path).await;
        gateway
            .post_form(
                &browser,
                &path,
                &[("csrf_token", token.as_str()), ("decision", "approve")],
            )
            .await;
        let page = gateway
            .page(&browser, &format!("{path}?done=approved"))
            .await;
        insta::assert_snapshot!("page_confirmation_approved", shown(&gateway, page).await);
    })
    .await;
}
