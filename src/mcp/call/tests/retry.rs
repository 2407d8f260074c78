//! The retry of a call its person was asked about inside it (2026-07-28
//! on): the sealed `requestState` and the answer, every way it can go.
//! The stored confirmation is the page's too, so the page's decision and
//! racing retries are here as well.

use super::*;
use crate::mcp::confirmation::{DECISION_WINDOW, PersonAnswer};
use crate::mcp::discover::CALL_WRITE_TOOL_NAME as WRITE;

/// A connection whose client offers form elicitation in the call.
fn asked_in_forms(grant: &str) -> Who<'static> {
    Who::on_new_wire(grant, (true, false))
}

/// The sealed state of an input-required ending.
fn state_of(ending: &CallEnding) -> String {
    match ending {
        CallEnding::Ask(ask) => ask.state.clone(),
        other => panic!("the person was not asked: {other:?}"),
    }
}

/// The person's answer to our one question.
fn answered(action: &str, content: Option<Value>) -> PersonAnswer {
    PersonAnswer {
        accepted: action == "accept",
        content,
    }
}

fn approved() -> PersonAnswer {
    answered("accept", Some(json!({ "approve": true })))
}

fn ran(ending: &CallEnding) -> bool {
    matches!(
        ending,
        CallEnding::Result {
            is_error: false,
            ..
        }
    )
}

impl Harness {
    /// The person is asked about deleting the branch; the state to retry with.
    async fn ask(&self, caller: &Who<'_>) -> String {
        let asked = self.call(caller, WRITE, delete_branch()).await;
        state_of(&asked)
    }

    async fn retry(
        &self,
        caller: &Who<'_>,
        args: Map<String, Value>,
        state: &str,
        answer: Option<&PersonAnswer>,
    ) -> CallEnding {
        let answer = answer.cloned();
        let retry = Retry { state, answer };
        self.call_retrying(caller, WRITE, args, Some(retry)).await
    }
}

#[tokio::test]
async fn an_approval_in_the_retry_runs_the_call_once() {
    let h = harness(&[]).await;
    let caller = asked_in_forms("g1");
    let state = h.ask(&caller).await;
    let ending = h
        .retry(&caller, delete_branch(), &state, Some(&approved()))
        .await;
    assert!(ran(&ending), "{ending:?}");
    assert_eq!(h.executor.reached(), [DELETE_BRANCH]);
    assert_eq!(
        h.entries().await,
        [
            "confirmation_requested",
            "confirmation_approved",
            "tool_call_started",
            "tool_call_finished"
        ]
    );
    assert!(h.counted(WRITE, "ok"));
}

#[tokio::test]
async fn a_state_replayed_after_the_call_ran_is_refused() {
    let h = harness(&[]).await;
    let caller = asked_in_forms("g1");
    let state = h.ask(&caller).await;
    let first = h
        .retry(&caller, delete_branch(), &state, Some(&approved()))
        .await;
    assert!(ran(&first));
    let replay = h
        .retry(&caller, delete_branch(), &state, Some(&approved()))
        .await;
    assert_eq!(error_kind(&replay).as_deref(), Some("confirmation_invalid"));
    assert_eq!(h.executor.reached(), [DELETE_BRANCH]);
}

#[tokio::test]
async fn two_retries_racing_with_one_approval_run_the_call_once() {
    let h = harness(&[]).await;
    let caller = asked_in_forms("g1");
    let state = h.ask(&caller).await;
    let answer = approved();
    let (a, b) = tokio::join!(
        h.retry(&caller, delete_branch(), &state, Some(&answer)),
        h.retry(&caller, delete_branch(), &state, Some(&answer)),
    );
    assert_eq!(
        [ran(&a), ran(&b)].iter().filter(|r| **r).count(),
        1,
        "{a:?} {b:?}"
    );
    assert_eq!(h.executor.reached(), [DELETE_BRANCH]);
}

#[tokio::test]
async fn a_declined_answer_refuses_the_call_and_spends_the_question() {
    let h = harness(&[]).await;
    let caller = asked_in_forms("g1");
    let state = h.ask(&caller).await;
    let declined = h
        .retry(
            &caller,
            delete_branch(),
            &state,
            Some(&answered("decline", None)),
        )
        .await;
    assert_eq!(
        error_kind(&declined).as_deref(),
        Some("confirmation_denied")
    );
    let again = h
        .retry(&caller, delete_branch(), &state, Some(&approved()))
        .await;
    assert_eq!(error_kind(&again).as_deref(), Some("confirmation_invalid"));
    assert!(h.executor.reached().is_empty());
    // Asked, declined, and the retry after: none reached Gitea.
    assert!(h.service.metrics().render().contains(&format!(
        "aegis_tool_calls_total{{tool=\"{WRITE}\",outcome=\"refused\"}} 3"
    )));
}

#[tokio::test]
async fn an_accepted_form_that_does_not_approve_is_a_denial() {
    let h = harness(&[]).await;
    let caller = asked_in_forms("g1");
    let state = h.ask(&caller).await;
    let not_approved = answered("accept", Some(json!({ "approve": false })));
    let ending = h
        .retry(&caller, delete_branch(), &state, Some(&not_approved))
        .await;
    assert_eq!(error_kind(&ending).as_deref(), Some("confirmation_denied"));
    assert!(h.executor.reached().is_empty());
}

#[tokio::test]
async fn a_retry_without_an_answer_asks_again() {
    let h = harness(&[]).await;
    let caller = asked_in_forms("g1");
    let state = h.ask(&caller).await;
    let ending = h.retry(&caller, delete_branch(), &state, None).await;
    assert!(matches!(ending, CallEnding::Ask(_)), "{ending:?}");
    assert!(h.executor.reached().is_empty());
}

#[tokio::test]
async fn a_state_from_another_connection_decides_nothing() {
    let h = harness(&[]).await;
    let alice = asked_in_forms("g1");
    let state = h.ask(&alice).await;
    let other = asked_in_forms("g2");
    let stolen = h
        .retry(&other, delete_branch(), &state, Some(&approved()))
        .await;
    assert_eq!(error_kind(&stolen).as_deref(), Some("confirmation_invalid"));
    assert!(h.executor.reached().is_empty());
    // The question is still open for the connection it was asked on.
    let own = h
        .retry(&alice, delete_branch(), &state, Some(&approved()))
        .await;
    assert!(ran(&own), "{own:?}");
}

#[tokio::test]
async fn a_state_for_other_arguments_is_refused() {
    let h = harness(&[]).await;
    let caller = asked_in_forms("g1");
    let state = h.ask(&caller).await;
    let other_branch = args(json!({
        "name": DELETE_BRANCH,
        "arguments": {"owner": "acme", "repo": "app", "branch": "main"},
    }));
    let ending = h
        .retry(&caller, other_branch, &state, Some(&approved()))
        .await;
    assert_eq!(error_kind(&ending).as_deref(), Some("confirmation_invalid"));
    assert!(h.executor.reached().is_empty());
}

#[tokio::test]
async fn an_altered_state_is_refused() {
    let h = harness(&[]).await;
    let caller = asked_in_forms("g1");
    let state = h.ask(&caller).await;
    let mut altered = state.into_bytes();
    let middle = altered.len() / 2;
    altered[middle] = if altered[middle] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    let ending = h
        .retry(&caller, delete_branch(), &altered, Some(&approved()))
        .await;
    assert_eq!(error_kind(&ending).as_deref(), Some("confirmation_invalid"));
    assert!(h.executor.reached().is_empty());
}

#[tokio::test]
async fn an_answer_after_the_decision_window_finds_the_question_expired() {
    let h = harness(&[]).await;
    let caller = asked_in_forms("g1");
    let state = h.ask(&caller).await;
    h.clock.advance(DECISION_WINDOW + 1);
    let ending = h
        .retry(&caller, delete_branch(), &state, Some(&approved()))
        .await;
    assert_eq!(error_kind(&ending).as_deref(), Some("confirmation_expired"));
    assert!(h.executor.reached().is_empty());
}

#[tokio::test]
async fn the_page_s_decision_stands_over_the_retry_s_answer() {
    let h = harness(&[]).await;
    let caller = asked_in_forms("g1");
    let state = h.ask(&caller).await;
    h.approve("g1", false).await;
    let ending = h
        .retry(&caller, delete_branch(), &state, Some(&approved()))
        .await;
    assert_eq!(error_kind(&ending).as_deref(), Some("confirmation_denied"));
    assert!(h.executor.reached().is_empty());
}

#[tokio::test]
async fn asked_by_url_the_client_s_accept_waits_for_the_page() {
    let h = harness(&[]).await;
    let caller = Who::on_new_wire("g1", (false, true));
    let state = h.ask(&caller).await;
    let accepted = answered("accept", None);
    let early = h
        .retry(&caller, delete_branch(), &state, Some(&accepted))
        .await;
    assert_eq!(error_kind(&early).as_deref(), Some("confirmation_pending"));
    assert!(h.executor.reached().is_empty());
    h.approve("g1", true).await;
    let ending = h
        .retry(&caller, delete_branch(), &state, Some(&accepted))
        .await;
    assert!(ran(&ending), "{ending:?}");
    assert_eq!(h.executor.reached(), [DELETE_BRANCH]);
}
