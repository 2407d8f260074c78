//! Every way the confirmation gate stops a call leaves the call's own
//! `tool_call_refused` entry (the red team's F4, issue 53): a denied call
//! retried, the approval that expired, and a connection with too many
//! calls waiting. Before, only the admin token's refusals wrote one, and an
//! agent retrying a denied call left no trace.

use super::*;
use crate::mcp::discover::CALL_WRITE_TOOL_NAME as WRITE;

/// The last entry's event and error kind.
async fn last_refusal(h: &Harness) -> (String, String) {
    h.service.audit().flush().await;
    let text = std::fs::read_to_string(h.data_dir.join("audit.log")).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    (
        last["event"].as_str().unwrap_or_default().to_owned(),
        last["error_kind"].as_str().unwrap_or_default().to_owned(),
    )
}

fn branch(name: &str) -> Map<String, Value> {
    args(json!({
        "name": "gitea_repo_delete_branch",
        "arguments": {"owner": "alice", "repo": "r", "branch": name},
    }))
}

#[tokio::test]
async fn a_denied_call_retried_leaves_its_refusal() {
    let h = harness(&[]).await;
    let caller = Who::oauth("g1");
    h.call(&caller, WRITE, delete_branch()).await;
    h.approve("g1", false).await;
    let denied = h.call(&caller, WRITE, delete_branch()).await;
    assert_eq!(error_kind(&denied).as_deref(), Some("confirmation_denied"));
    assert_eq!(
        last_refusal(&h).await,
        ("tool_call_refused".into(), "confirmation_denied".into())
    );
}

#[tokio::test]
async fn an_expired_approval_leaves_its_refusal_after_the_expiry_entry() {
    let h = harness(&[]).await;
    let caller = Who::oauth("g1");
    h.call(&caller, WRITE, delete_branch()).await;
    h.approve("g1", true).await;
    h.clock.advance(601);
    h.call(&caller, WRITE, delete_branch()).await;
    let entries = h.entries().await;
    assert_eq!(
        entries[entries.len() - 2..],
        ["confirmation_expired", "tool_call_refused"]
    );
    assert_eq!(last_refusal(&h).await.1, "confirmation_expired");
}

#[tokio::test]
async fn a_call_past_the_waiting_calls_a_connection_may_have_leaves_its_refusal() {
    let h = harness(&[]).await;
    let caller = Who::oauth("g1");
    let most = StoreLimits::default().max_pending_confirmations_per_grant;
    for i in 0..most {
        let waiting = h.call(&caller, WRITE, branch(&format!("b{i}"))).await;
        assert_eq!(
            error_kind(&waiting).as_deref(),
            Some("confirmation_required")
        );
    }
    let refused = h.call(&caller, WRITE, branch("one-too-many")).await;
    assert_eq!(
        error_kind(&refused).as_deref(),
        Some("confirmation_pending")
    );
    assert_eq!(
        last_refusal(&h).await,
        ("tool_call_refused".into(), "confirmation_pending".into())
    );
    assert!(h.executor.reached().is_empty());
}
