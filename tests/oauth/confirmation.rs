//! A person in the loop (issue 28), over loopback HTTP on both stores: a
//! destructive call through an OAuth connection waits for its person,
//! reaches nothing until they approve it on `/confirm/{id}`, then runs
//! exactly once; a denial, a retry before the decision, expiry, other
//! arguments, another person, a forged form and a flood each get what
//! they should.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::pages::csrf;
use crate::{Browser, OAuthGateway, Tokens, on_both_backends};

/// `/mcp` lists the core tools: a branch is deleted through the write call
/// tool, which runs any write operation of the URL.
const DELETE: &str = "gitea_call_write_operation";

fn branch(name: &str) -> Value {
    json!({
        "name": "gitea_repo_delete_branch",
        "arguments": {"owner": "alice", "repo": "r", "branch": name},
    })
}

/// A `tools/call` deleting branch `name`: the result's JSON (an error's
/// `{"error":…}` or the envelope).
async fn delete(gateway: &OAuthGateway, tokens: &Tokens, name: &str) -> Value {
    let (status, result) = gateway
        .call_tool(&tokens.access_token, DELETE, branch(name))
        .await;
    assert_eq!(status, StatusCode::OK);
    result
}

/// The confirmation id of a `confirmation_required` result.
fn id_of(result: &Value) -> String {
    assert_eq!(result["error"]["kind"], "confirmation_required", "{result}");
    let url = result["error"]["confirm_url"].as_str().unwrap();
    url.rsplit('/').next().unwrap().to_owned()
}

pub(crate) fn deletes_seen(gateway: &OAuthGateway) -> usize {
    gateway
        .fake
        .requests()
        .iter()
        .filter(|r| r.method == reqwest::Method::DELETE)
        .count()
}

/// `login` decides confirmation `id` on its page; the response.
pub(crate) async fn decide(
    gateway: &OAuthGateway,
    browser: &Browser,
    id: &str,
    decision: &str,
) -> reqwest::Response {
    let path = format!("/confirm/{id}");
    let token = csrf(gateway, browser, &path).await;
    gateway
        .post_form(
            browser,
            &path,
            &[("csrf_token", token.as_str()), ("decision", decision)],
        )
        .await
}

pub(crate) async fn alice(gateway: &OAuthGateway) -> (Tokens, Browser) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    let browser = gateway.page_sign_in("alice", "account").await;
    (tokens, browser)
}

async fn a_destructive_call_waits_for_its_person_and_reaches_nothing(gateway: OAuthGateway) {
    let (tokens, browser) = alice(&gateway).await;
    gateway.fake.clear();
    let result = delete(&gateway, &tokens, "feature/x").await;
    let id = id_of(&result);
    assert!(
        result["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("{}/confirm/{id}", gateway.url)),
        "{result}"
    );
    assert!(gateway.fake.requests().is_empty(), "nothing reached Gitea");
    assert_eq!(gateway.audit_events("confirmation_requested").len(), 1);
    assert!(gateway.audit_events("tool_call_started").is_empty());
    // The page shows the call to its person, and /account lists it.
    let page = gateway
        .page(&browser, &format!("/confirm/{id}"))
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("Approve this call?"), "{page}");
    assert!(page.contains("branch: feature/x"), "{page}");
    assert!(
        page.contains("DELETE /repos/{owner}/{repo}/branches/{branch}"),
        "{page}"
    );
    let account = gateway
        .page(&browser, "/account")
        .await
        .text()
        .await
        .unwrap();
    assert!(account.contains(&format!("/confirm/{id}")), "{account}");
    // A retry before the decision says so, with the same page.
    let again = delete(&gateway, &tokens, "feature/x").await;
    assert_eq!(again["error"]["kind"], "confirmation_pending");
    assert!(
        again["error"]["confirm_url"]
            .as_str()
            .unwrap()
            .ends_with(&id)
    );
    assert_eq!(deletes_seen(&gateway), 0);
}
on_both_backends!(a_destructive_call_waits_for_its_person_and_reaches_nothing);

async fn an_approved_call_runs_exactly_once_and_only_with_its_arguments(gateway: OAuthGateway) {
    let (tokens, browser) = alice(&gateway).await;
    let id = id_of(&delete(&gateway, &tokens, "feature/x").await);
    let approved = decide(&gateway, &browser, &id, "approve").await;
    assert_eq!(approved.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        gateway.audit_events("confirmation_approved")[0]["detail"]["by"],
        "alice"
    );
    gateway.fake.clear();
    // Other arguments: a new request, and the approval stays.
    let other = id_of(&delete(&gateway, &tokens, "feature/y").await);
    assert_ne!(other, id);
    assert_eq!(deletes_seen(&gateway), 0);
    // The approved call runs, once.
    let ran = delete(&gateway, &tokens, "feature/x").await;
    assert!(
        ran.get("error").is_none() || ran["error"]["kind"] != "confirmation_required",
        "{ran}"
    );
    assert_eq!(deletes_seen(&gateway), 1);
    let started = gateway.audit_events("tool_call_started");
    assert_eq!(
        started.last().unwrap()["detail"]["confirmation"],
        id.as_str()
    );
    // A second retry is a new request.
    let next = id_of(&delete(&gateway, &tokens, "feature/x").await);
    assert_ne!(next, id);
    assert_eq!(deletes_seen(&gateway), 1);
    // Deciding the spent one again changes nothing.
    let late = decide_without_page(&gateway, &browser, &id, "approve").await;
    assert_eq!(late.status(), StatusCode::CONFLICT);
}
on_both_backends!(an_approved_call_runs_exactly_once_and_only_with_its_arguments);

/// The form of another page of `browser` (its CSRF token is per session).
async fn decide_without_page(
    gateway: &OAuthGateway,
    browser: &Browser,
    id: &str,
    decision: &str,
) -> reqwest::Response {
    let token = csrf(gateway, browser, "/account").await;
    gateway
        .post_form(
            browser,
            &format!("/confirm/{id}"),
            &[("csrf_token", token.as_str()), ("decision", decision)],
        )
        .await
}

async fn a_denied_call_says_so_and_never_runs(gateway: OAuthGateway) {
    let (tokens, browser) = alice(&gateway).await;
    let id = id_of(&delete(&gateway, &tokens, "feature/x").await);
    assert_eq!(
        decide(&gateway, &browser, &id, "deny").await.status(),
        StatusCode::SEE_OTHER
    );
    gateway.fake.clear();
    let denied = delete(&gateway, &tokens, "feature/x").await;
    assert_eq!(denied["error"]["kind"], "confirmation_denied", "{denied}");
    assert_eq!(deletes_seen(&gateway), 0);
    assert_eq!(gateway.audit_events("confirmation_denied").len(), 1);
    // Asking again is a new request.
    id_of(&delete(&gateway, &tokens, "feature/x").await);
}
on_both_backends!(a_denied_call_says_so_and_never_runs);

async fn another_person_cannot_see_or_approve_it(gateway: OAuthGateway) {
    let (tokens, _) = alice(&gateway).await;
    let id = id_of(&delete(&gateway, &tokens, "feature/x").await);
    let bob = gateway.page_sign_in("bob", "account").await;
    let page = gateway.page(&bob, &format!("/confirm/{id}")).await;
    assert_eq!(page.status(), StatusCode::NOT_FOUND);
    let posted = decide_without_page(&gateway, &bob, &id, "approve").await;
    assert_eq!(posted.status(), StatusCode::NOT_FOUND);
    let still = delete(&gateway, &tokens, "feature/x").await;
    assert_eq!(still["error"]["kind"], "confirmation_pending");
}
on_both_backends!(another_person_cannot_see_or_approve_it);

async fn a_forged_or_cross_site_form_decides_nothing(gateway: OAuthGateway) {
    let (tokens, browser) = alice(&gateway).await;
    let id = id_of(&delete(&gateway, &tokens, "feature/x").await);
    let forged = gateway
        .post_form(
            &browser,
            &format!("/confirm/{id}"),
            &[("csrf_token", "forged"), ("decision", "approve")],
        )
        .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    let token = csrf(&gateway, &browser, &format!("/confirm/{id}")).await;
    let cross_site = gateway
        .http
        .post(format!("{}/confirm/{id}", gateway.url))
        .header(reqwest::header::COOKIE, browser.header())
        .header(reqwest::header::ORIGIN, "https://evil.example")
        .form(&[("csrf_token", token.as_str()), ("decision", "approve")])
        .send()
        .await
        .unwrap();
    assert_eq!(cross_site.status(), StatusCode::FORBIDDEN);
    let still = delete(&gateway, &tokens, "feature/x").await;
    assert_eq!(still["error"]["kind"], "confirmation_pending");
}
on_both_backends!(a_forged_or_cross_site_form_decides_nothing);

async fn undecided_or_unused_confirmations_expire(gateway: OAuthGateway) {
    let (tokens, browser) = alice(&gateway).await;
    id_of(&delete(&gateway, &tokens, "feature/x").await);
    gateway.clock.advance(10 * 60 + 1);
    let expired = delete(&gateway, &tokens, "feature/x").await;
    assert_eq!(
        expired["error"]["kind"], "confirmation_expired",
        "{expired}"
    );
    assert_eq!(gateway.audit_events("confirmation_expired").len(), 1);
    // Approved, but not retried in time.
    let id = id_of(&delete(&gateway, &tokens, "feature/x").await);
    decide(&gateway, &browser, &id, "approve").await;
    gateway.clock.advance(10 * 60 + 1);
    gateway.fake.clear();
    let late = delete(&gateway, &tokens, "feature/x").await;
    assert_eq!(late["error"]["kind"], "confirmation_expired", "{late}");
    assert_eq!(deletes_seen(&gateway), 0);
}
on_both_backends!(undecided_or_unused_confirmations_expire);

async fn a_flood_of_requests_is_bounded_per_connection(gateway: OAuthGateway) {
    let (tokens, _) = alice(&gateway).await;
    for n in 0..20 {
        id_of(&delete(&gateway, &tokens, &format!("b{n}")).await);
    }
    let refused = delete(&gateway, &tokens, "one-too-many").await;
    assert_eq!(
        refused["error"]["kind"], "confirmation_pending",
        "{refused}"
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Too many")
    );
}
on_both_backends!(a_flood_of_requests_is_bounded_per_connection);

/// `CONFIRM=off` and the operator's admin token: nothing waits.
async fn the_admin_token_is_never_asked(gateway: OAuthGateway) {
    gateway.fake.clear();
    let response = gateway
        .tools_call_response(
            &gateway.url,
            "/mcp",
            crate::support::BEARER,
            DELETE,
            branch("x"),
        )
        .await;
    let body: Value = response.json().await.unwrap();
    let text = body["result"]["content"][0]["text"].as_str().unwrap();
    assert!(!text.contains("confirmation_required"), "{text}");
    assert_eq!(deletes_seen(&gateway), 1);
}
on_both_backends!(the_admin_token_is_never_asked);

async fn confirm_off_asks_nobody(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    gateway.fake.clear();
    delete(&gateway, &tokens, "x").await;
    assert_eq!(deletes_seen(&gateway), 1);
}
on_both_backends!(confirm_off_asks_nobody, ("CONFIRM", "off"));
