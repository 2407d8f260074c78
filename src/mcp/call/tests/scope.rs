//! The step-up question asked before the call (over HTTP, at the gate):
//! a write from a grant that only reads is refused as any refused call,
//! and nothing else is.

use super::*;

const CREATE_ISSUE: &str = "gitea_issue_create_issue";

/// Whether a call of `tool` with `args`, by a connection with `access`,
/// is refused for its scope before the call.
async fn refused(h: &Harness, access: Access, tool: &str, args: Value) -> bool {
    let mut caller = Who::oauth("g1");
    caller.identity.access = access;
    let surface = Surface::default();
    let span = tracing::Span::none();
    let context = CallContext {
        identity: &caller.identity,
        surface: &surface,
        connection: caller.connection.as_ref(),
        in_call_elicitation: None,
        session: None,
        tool_label: tool_label(&h.service, tool),
        span: &span,
    };
    let args = args.as_object().unwrap().clone();
    refused_for_scope(&h.service, &context, tool, args).await
}

fn new_issue() -> Value {
    json!({"owner": "acme", "repo": "widgets", "body": {"title": "t"}})
}

#[tokio::test]
async fn a_write_refused_before_the_call_ends_as_any_refused_call() {
    let h = harness(&[]).await;
    assert!(refused(&h, Access::Read, CREATE_ISSUE, new_issue()).await);
    assert_eq!(h.entries().await, ["tool_call_refused"]);
    assert!(h.counted(CREATE_ISSUE, "refused"));
}

#[tokio::test]
async fn a_read_from_a_read_only_grant_is_not_refused_for_its_scope() {
    let h = harness(&[]).await;
    let list = json!({"owner": "acme", "repo": "widgets"});
    assert!(!refused(&h, Access::Read, "gitea_issue_list_issues", list).await);
    assert!(h.entries().await.is_empty());
}

#[tokio::test]
async fn a_write_from_a_grant_that_may_write_is_not_asked() {
    let h = harness(&[]).await;
    assert!(!refused(&h, Access::ReadWrite, CREATE_ISSUE, new_issue()).await);
    assert!(h.entries().await.is_empty());
}

/// Admission checks the arguments before the grant's scope: a write whose
/// arguments do not fit is refused for them in the call, not stepped up.
#[tokio::test]
async fn a_write_whose_arguments_do_not_fit_is_left_to_the_call() {
    let h = harness(&[]).await;
    let unfit = json!({"owner": "acme", "repo": "widgets", "title": "t"});
    assert!(!refused(&h, Access::Read, CREATE_ISSUE, unfit.clone()).await);
    let mut caller = Who::oauth("g1");
    caller.identity.access = Access::Read;
    let ending = h.call(&caller, CREATE_ISSUE, args(unfit)).await;
    assert_eq!(error_kind(&ending).as_deref(), Some("invalid_arguments"));
}
