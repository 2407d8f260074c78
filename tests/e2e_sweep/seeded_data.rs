//! Checks on the seeded data: pagination, a non-admin user, and secrets
//! that must never come back in clear.

use serde_json::json;

use crate::envelope_checks::check_error_envelope;
use crate::fixture::Fixture;
use crate::gateway::{LiveGateway, call_ok};
use crate::support::call;

// ---------------------------------------------------------------------------
// 4. Pagination
// ---------------------------------------------------------------------------

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn paginated_issue_list_reports_the_next_page() {
    let fx = Fixture::load();
    let gw = LiveGateway::start(&fx, &fx.admin_token(), &[]).await;
    let client = gw.client().await;
    let env = call_ok(
        &client,
        "gitea_issue_list_issues",
        json!({"owner": fx.owner(), "repo": fx.repo(), "limit": 1}),
    )
    .await;
    let p = &env["pagination"];
    println!("pagination: {p}");
    assert!(p["total_count"].as_u64().unwrap_or(0) >= 2, "{p}");
    assert_eq!(p["next_page"], 2, "{p}");
    assert_eq!(p["limit"], 1, "{p}");
    assert_eq!(env["data"].as_array().map(Vec::len), Some(1), "{env}");
}

// ---------------------------------------------------------------------------
// 5. A non-admin user
// ---------------------------------------------------------------------------

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn plain_user_is_refused_admin_operations() {
    let fx = Fixture::load();
    let gw = LiveGateway::start(&fx, &fx.str("/user/token"), &[]).await;
    let client = gw.client().await;
    let alice = fx.user_login();

    let me = call_ok(&client, "gitea_user_get_current", json!({})).await;
    assert_eq!(me["identity"]["login"], alice, "{me}");
    assert_eq!(me["data"]["login"], alice, "{me}");
    // The compact view leaves `false` out: absent means not an admin.
    assert!(me["data"].get("is_admin").is_none(), "{me}");

    for tool in ["gitea_admin_search_users", "gitea_admin_list_hooks"] {
        let (is_error, body) = call(&client, tool, json!({})).await;
        assert!(is_error, "{tool}: {body}");
        let (status, kind, message) = check_error_envelope(&body).unwrap();
        println!("{tool} as {alice}: {status:?} {kind}: {message}");
        assert_eq!(status, Some(403), "{tool}: {body}");
        assert_eq!(kind, "forbidden", "{tool}: {body}");
    }
}

/// Issue 3, item 5: real Gitea data that carries secrets never comes back in
/// clear — the webhook's stored authorization header (on every hook read)
/// and a token-shaped secret planted in an issue body.
#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn seeded_secrets_never_come_back_in_clear() {
    let fx = Fixture::load();
    let gw = LiveGateway::start(&fx, &fx.admin_token(), &[]).await;
    let client = gw.client().await;
    let (owner, repo) = (fx.owner(), fx.repo());
    let hook_header = fx.str("/hook/authorization_header");
    let planted = fx.str("/planted_secret");

    let hooks = call_ok(
        &client,
        "gitea_repo_list_hooks",
        json!({"owner": owner, "repo": repo}),
    )
    .await;
    let hook = call_ok(
        &client,
        "gitea_repo_get_hook",
        json!({"owner": owner, "repo": repo, "id": fx.get("/hook/id")}),
    )
    .await;
    let issue = call_ok(
        &client,
        "gitea_issue_get_issue",
        json!({"owner": owner, "repo": repo, "index": fx.get("/secret_issue_number")}),
    )
    .await;
    assert!(issue["data"]["body"].is_string(), "{issue}");
    for (what, body) in [("hook list", &hooks), ("hook", &hook), ("issue", &issue)] {
        let text = body.to_string();
        assert!(
            !text.contains(&hook_header),
            "{what} leaks the webhook header"
        );
        assert!(!text.contains(&planted), "{what} leaks the planted token");
        assert!(
            !text.contains(&fx.admin_token()),
            "{what} leaks the admin token"
        );
    }
}
