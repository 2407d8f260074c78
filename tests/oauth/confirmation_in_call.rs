//! A person asked inside the call (issue 28, MCP 2026-07-28, SEP-2322),
//! over loopback HTTP on both stores: a client on the stateless wire that
//! declares elicitation gets an input-required result instead of a link;
//! its retry carries the person's answer and the sealed `requestState`.
//! A wrong name, a decline, a forged, altered, foreign or replayed state
//! each reach nothing; the right answer runs the call exactly once.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::confirmation::{alice, decide, deletes_seen};
use crate::{OAuthGateway, on_both_backends};

const WIRE: &str = "2026-07-28";
const CALL: &str = "gitea_call_write_operation";

/// A form-capable client, a URL-only one, one that offers both.
fn form_client() -> Value {
    json!({"elicitation": {"form": {}}})
}
fn url_client() -> Value {
    json!({"elicitation": {"url": {}}})
}
fn both_client() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}})
}

fn repo_delete(repo: &str) -> Value {
    json!({"name": "gitea_repo_delete", "arguments": {"owner": "alice", "repo": repo}})
}

/// A `tools/call` on the stateless wire with `capabilities`, plus `retry`
/// (`requestState`, `inputResponses`) merged into the params: the
/// JSON-RPC `result`.
async fn call(
    gateway: &OAuthGateway,
    token: &str,
    capabilities: Value,
    args: Value,
    retry: Value,
) -> Value {
    let mut params = json!({
        "name": CALL,
        "arguments": args,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": WIRE,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "mrtr-test", "version": "1"},
        },
    });
    if let Value::Object(retry) = retry {
        params.as_object_mut().unwrap().extend(retry);
    }
    let response = crate::support::mcp_post_on_wire(
        &gateway.http,
        gateway.mcp_url(),
        WIRE,
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}).to_string(),
    )
    .header("mcp-method", "tools/call")
    .header("mcp-name", CALL)
    .bearer_auth(token)
    .send()
    .await
    .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = response.json().await.unwrap();
    answer
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("no result: {answer}"))
}

/// The error JSON of an `isError` result.
fn error_of(result: &Value) -> Value {
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    serde_json::from_str::<Value>(text).unwrap()["error"].clone()
}

/// The elicitation request and the state of an input-required result.
fn asked(result: &Value) -> (Value, String) {
    assert_eq!(result["resultType"], "input_required", "{result}");
    let request = result["inputRequests"]["confirm"].clone();
    assert_eq!(request["method"], "elicitation/create", "{result}");
    let state = result["requestState"].as_str().unwrap().to_owned();
    (request["params"].clone(), state)
}

/// Whether the call went on to Gitea (whatever Gitea answered: the fake
/// has no repository to delete).
fn ran(result: &Value) -> bool {
    result["isError"] != true
        || !error_of(result)["kind"]
            .as_str()
            .unwrap()
            .starts_with("confirmation_")
}

/// The first call deleting `alice/r` as a client with `capabilities`: the
/// elicitation's params and the state.
async fn ask(gateway: &OAuthGateway, token: &str, capabilities: Value) -> (Value, String) {
    asked(&call(gateway, token, capabilities, repo_delete("r"), Value::Null).await)
}

/// Alice's connection, asked about deleting `alice/r` in a form, with
/// nothing yet at the fake: her token and the state.
async fn alice_asked(gateway: &OAuthGateway) -> (String, String) {
    let (tokens, _) = alice(gateway).await;
    gateway.fake.clear();
    let (_, state) = ask(gateway, &tokens.access_token, form_client()).await;
    (tokens.access_token, state)
}

fn answered(state: &str, action: &str, content: Value) -> Value {
    let mut answer = json!({"action": action});
    if !content.is_null() {
        answer["content"] = content;
    }
    json!({"requestState": state, "inputResponses": {"confirm": answer}})
}

async fn a_client_that_can_be_asked_gets_a_form_naming_what_to_type(gateway: OAuthGateway) {
    let (tokens, _) = alice(&gateway).await;
    gateway.fake.clear();
    let (params, state) = ask(&gateway, &tokens.access_token, form_client()).await;
    assert_eq!(params["mode"], "form", "{params}");
    assert!(
        params["message"].as_str().unwrap().contains("type alice/r"),
        "{params}"
    );
    assert_eq!(params["requestedSchema"]["required"], json!(["name"]));
    assert!(!state.is_empty());
    assert!(gateway.fake.requests().is_empty(), "nothing reached Gitea");
    let requested = gateway.audit_events("confirmation_requested");
    assert_eq!(requested.len(), 1);
}
on_both_backends!(a_client_that_can_be_asked_gets_a_form_naming_what_to_type);

async fn a_wrong_name_is_refused_and_the_right_one_runs_once(gateway: OAuthGateway) {
    let (token, state) = alice_asked(&gateway).await;
    let token = token.as_str();
    let wrong = answered(&state, "accept", json!({"name": "alice/other"}));
    let refused = call(&gateway, token, form_client(), repo_delete("r"), wrong).await;
    assert_eq!(error_of(&refused)["kind"], "confirmation_denied");
    assert_eq!(deletes_seen(&gateway), 0);
    let denial = gateway.audit_events("confirmation_denied");
    assert_eq!(denial[0]["detail"]["via"], "elicitation");
    assert_eq!(denial[0]["detail"]["by"], "alice");
    // Asked again, the right name runs it, once.
    let (_, state) = ask(&gateway, token, form_client()).await;
    let right = answered(&state, "accept", json!({"name": "alice/r"}));
    let done_call = call(
        &gateway,
        token,
        form_client(),
        repo_delete("r"),
        right.clone(),
    )
    .await;
    assert!(ran(&done_call), "{done_call}");
    assert_eq!(deletes_seen(&gateway), 1);
    let approval = gateway.audit_events("confirmation_approved");
    let id = approval[0]["detail"]["confirmation"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(approval[0]["detail"]["by"], "alice");
    let started = gateway.audit_events("tool_call_started");
    assert_eq!(
        started.last().unwrap()["detail"]["confirmation"],
        id.as_str()
    );
    // The same answer again is a replay.
    let replay = call(&gateway, token, form_client(), repo_delete("r"), right).await;
    assert_eq!(error_of(&replay)["kind"], "confirmation_invalid");
    assert_eq!(deletes_seen(&gateway), 1);
}
on_both_backends!(a_wrong_name_is_refused_and_the_right_one_runs_once);

async fn declining_sends_nothing(gateway: OAuthGateway) {
    let (tokens, _) = alice(&gateway).await;
    let token = &tokens.access_token;
    gateway.fake.clear();
    for action in ["decline", "cancel"] {
        let (_, state) = ask(&gateway, token, form_client()).await;
        let answer = answered(&state, action, Value::Null);
        let refused = call(&gateway, token, form_client(), repo_delete("r"), answer).await;
        assert_eq!(
            error_of(&refused)["kind"],
            "confirmation_denied",
            "{action}"
        );
    }
    assert!(gateway.fake.requests().is_empty());
}
on_both_backends!(declining_sends_nothing);

async fn a_retry_without_an_answer_is_asked_again(gateway: OAuthGateway) {
    let (token, state) = alice_asked(&gateway).await;
    let token = token.as_str();
    let silent = json!({"requestState": state, "inputResponses": {}});
    let again = call(&gateway, token, form_client(), repo_delete("r"), silent).await;
    let (params, fresh) = asked(&again);
    assert!(params["message"].as_str().unwrap().contains("type alice/r"));
    // The new state answers the same request, which still waits.
    let right = answered(&fresh, "accept", json!({"name": "alice/r"}));
    let done_call = call(&gateway, token, form_client(), repo_delete("r"), right).await;
    assert!(ran(&done_call), "{done_call}");
    assert_eq!(deletes_seen(&gateway), 1);
    assert_eq!(gateway.audit_events("confirmation_requested").len(), 1);
}
on_both_backends!(a_retry_without_an_answer_is_asked_again);

async fn a_forged_altered_or_foreign_state_is_refused(gateway: OAuthGateway) {
    let (token, state) = alice_asked(&gateway).await;
    let token = token.as_str();
    let right = json!({"name": "alice/r"});
    let mut altered = state.clone().into_bytes();
    let middle = altered.len() / 2;
    altered[middle] = if altered[middle] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    // Another connection of the same person.
    let other_client = gateway.public_client().await;
    let other = gateway.tokens(&other_client, "alice").await;
    let attempts = [
        (token, "forged", repo_delete("r")),
        (token, altered.as_str(), repo_delete("r")),
        // The state of `r` on a call deleting `other`.
        (token, state.as_str(), repo_delete("other")),
        (
            other.access_token.as_str(),
            state.as_str(),
            repo_delete("r"),
        ),
    ];
    for (bearer, sealed, args) in attempts {
        let answer = answered(sealed, "accept", right.clone());
        let refused = call(&gateway, bearer, form_client(), args, answer).await;
        assert_eq!(
            error_of(&refused)["kind"],
            "confirmation_invalid",
            "{sealed}"
        );
    }
    assert_eq!(deletes_seen(&gateway), 0);
    let refusals = gateway.audit_events("tool_call_refused");
    assert_eq!(refusals.len(), 4);
    assert!(
        refusals
            .iter()
            .all(|e| e["error_kind"] == "confirmation_invalid")
    );
    // The genuine state still works.
    let answer = answered(&state, "accept", right);
    let done_call = call(&gateway, token, form_client(), repo_delete("r"), answer).await;
    assert!(ran(&done_call), "{done_call}");
    assert_eq!(deletes_seen(&gateway), 1);
}
on_both_backends!(a_forged_altered_or_foreign_state_is_refused);

async fn two_answers_at_once_run_it_once(gateway: OAuthGateway) {
    let (token, state) = alice_asked(&gateway).await;
    let token = token.as_str();
    let answer = answered(&state, "accept", json!({"name": "alice/r"}));
    let (first, second) = tokio::join!(
        call(
            &gateway,
            token,
            form_client(),
            repo_delete("r"),
            answer.clone()
        ),
        call(&gateway, token, form_client(), repo_delete("r"), answer),
    );
    let went_on = [&first, &second].iter().filter(|r| ran(r)).count();
    assert_eq!(went_on, 1, "{first} {second}");
    assert_eq!(deletes_seen(&gateway), 1);
}
on_both_backends!(two_answers_at_once_run_it_once);

async fn a_url_mode_client_is_sent_to_the_page(gateway: OAuthGateway) {
    let (tokens, browser) = alice(&gateway).await;
    let token = &tokens.access_token;
    gateway.fake.clear();
    let (params, state) = ask(&gateway, token, url_client()).await;
    assert_eq!(params["mode"], "url", "{params}");
    let url = params["url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("{}/confirm/", gateway.url)),
        "{url}"
    );
    let id = url.rsplit('/').next().unwrap();
    // Back before the person decided: it still waits.
    let done = answered(&state, "accept", Value::Null);
    let early = call(
        &gateway,
        token,
        url_client(),
        repo_delete("r"),
        done.clone(),
    )
    .await;
    assert_eq!(error_of(&early)["kind"], "confirmation_pending");
    assert_eq!(
        decide(&gateway, &browser, id, "approve").await.status(),
        StatusCode::SEE_OTHER
    );
    let done_call = call(
        &gateway,
        token,
        url_client(),
        repo_delete("r"),
        done.clone(),
    )
    .await;
    assert!(ran(&done_call), "{done_call}");
    let replay = call(&gateway, token, url_client(), repo_delete("r"), done).await;
    assert_eq!(error_of(&replay)["kind"], "confirmation_invalid");
    assert_eq!(deletes_seen(&gateway), 1);
}
on_both_backends!(a_url_mode_client_is_sent_to_the_page);

async fn a_client_that_cannot_be_asked_gets_the_page(gateway: OAuthGateway) {
    let (tokens, _) = alice(&gateway).await;
    gateway.fake.clear();
    let result = call(
        &gateway,
        &tokens.access_token,
        json!({}),
        repo_delete("r"),
        Value::Null,
    )
    .await;
    let error = error_of(&result);
    assert_eq!(error["kind"], "confirmation_required");
    assert!(error["confirm_url"].as_str().is_some());
    assert!(gateway.fake.requests().is_empty());
}
on_both_backends!(a_client_that_cannot_be_asked_gets_the_page);

/// The mode a client offering both kinds of elicitation is asked in.
async fn mode_for_a_client_offering_both(gateway: &OAuthGateway) -> Value {
    let (tokens, _) = alice(gateway).await;
    ask(gateway, &tokens.access_token, both_client()).await.0["mode"].clone()
}

async fn a_client_offering_both_gets_the_form_by_default(gateway: OAuthGateway) {
    assert_eq!(mode_for_a_client_offering_both(&gateway).await, "form");
}
on_both_backends!(a_client_offering_both_gets_the_form_by_default);

async fn a_client_offering_both_gets_the_page_when_the_operator_prefers_it(gateway: OAuthGateway) {
    assert_eq!(mode_for_a_client_offering_both(&gateway).await, "url");
}
on_both_backends!(
    a_client_offering_both_gets_the_page_when_the_operator_prefers_it,
    ("CONFIRM_ELICITATION", "url")
);
