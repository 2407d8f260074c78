//! Activity at a glance (issue 29): three connections of two people make
//! calls that go through, fail at Gitea, and are refused; within a few
//! seconds `/account` shows each of the person's busy connections (chart
//! and last calls, nobody else's) and `/admin` shows every user and client
//! and the top tools. Both stores: the figures live in the store, so they
//! hold across replicas.

use serde_json::json;

use crate::support::fake_gitea::ADMIN_LOGIN;
use crate::{OAuthGateway, on_both_backends};

/// Longer than the recorder's flush interval (`FLUSH_EVERY`, 2 s).
const FLUSHED: std::time::Duration = std::time::Duration::from_millis(2600);

async fn the_pages_show_what_each_connection_did(gateway: OAuthGateway) {
    let first = gateway.register("none", crate::CLIENT_REDIRECT).await;
    let second = gateway.register("none", crate::CLIENT_REDIRECT).await;
    let alice_one = gateway.tokens(&first, "alice").await;
    let alice_two = gateway.tokens(&second, "alice").await;
    let bob = gateway.tokens(&first, "bob").await;
    for _ in 0..3 {
        gateway
            .call_tool(&alice_one.access_token, "gitea_user_get_current", json!({}))
            .await;
    }
    // A destructive call waits for its person: refused.
    gateway
        .call_tool(
            &alice_two.access_token,
            "gitea_call_write_operation",
            json!({"name": "gitea_repo_delete", "arguments": {"owner": "alice", "repo": "r"}}),
        )
        .await;
    gateway
        .call_tool(&bob.access_token, "gitea_user_get_current", json!({}))
        .await;
    tokio::time::sleep(FLUSHED).await;

    let browser = gateway.page_sign_in("alice", "account").await;
    let account = gateway
        .page(&browser, "/account")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        account.contains("What your clients did, last 7 days"),
        "{account}"
    );
    assert_eq!(
        account.matches("<svg class=\"activity-chart\"").count(),
        2,
        "{account}"
    );
    assert!(
        account.contains("Calls per hour over the last 7 days: 3 in all, 0 error(s), 0 refused"),
        "{account}"
    );
    assert!(
        account.contains("Calls per hour over the last 7 days: 1 in all, 0 error(s), 1 refused"),
        "{account}"
    );
    assert!(
        account.contains("<code>gitea_call_write_operation</code> refused"),
        "{account}"
    );
    assert_eq!(
        account
            .matches("<code>gitea_user_get_current</code> ok")
            .count(),
        3
    );
    assert!(!account.contains("bob"), "nobody else's activity");

    let admin = gateway.page_sign_in(ADMIN_LOGIN, "admin").await;
    let page = gateway.page(&admin, "/admin").await.text().await.unwrap();
    assert!(page.contains("Activity, last 7 days"), "{page}");
    // Two users, two clients, each with its chart.
    assert_eq!(
        page.matches("<svg class=\"activity-chart\"").count(),
        4,
        "{page}"
    );
    assert!(
        page.contains("Calls per hour over the last 7 days: 4 in all, 0 error(s), 1 refused"),
        "alice: {page}"
    );
    assert!(
        page.contains("<code>gitea_user_get_current</code> 4"),
        "top tools: {page}"
    );
    // No script, and the charts need none.
    assert!(!page.contains("<script"));
}
on_both_backends!(the_pages_show_what_each_connection_did);
