//! The authorization operations, without a socket: a store in a
//! temporary directory and a clock the test moves (`oauth::test_server`).

use super::*;
use crate::oauth::{TestServer, test_server};
use crate::store::TokenEndpointAuthMethod;

const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
const WEB_CALLBACK: &str = "https://app.example/callback";
const LOOPBACK_CALLBACK: &str = "http://127.0.0.1:7777/callback";

fn query(text: &str) -> AuthorizeQuery {
    AuthorizeQuery::parse(text.as_bytes()).unwrap()
}

fn check(text: &str) -> Result<AuthorizeRequest, (ErrorCode, &'static str)> {
    check_authorize_request(&crate::oauth::test_config(), &query(text))
}

/// A registered public client with `redirect_uri`.
async fn client(t: &TestServer, redirect_uri: &str) -> String {
    let record = ClientRecord {
        client_id: random_value(),
        client_name: Some("Claude\u{202E}edualC".into()),
        redirect_uris: vec![redirect_uri.into()],
        token_endpoint_auth_method: TokenEndpointAuthMethod::None,
        grant_types: vec!["authorization_code".into()],
        response_types: vec!["code".into()],
        scope: None,
        registration: Registration::Dynamic,
        secret_hash: None,
        metadata: serde_json::json!({}),
        created_at: t.server.now(),
        expires_at: None,
    };
    t.server
        .store
        .insert_client(&record, None, t.server.now())
        .await
        .unwrap();
    record.client_id
}

fn authorize(client_id: &str, redirect_uri: &str, extra: &str) -> AuthorizeQuery {
    let redirect: String = url::form_urlencoded::byte_serialize(redirect_uri.as_bytes()).collect();
    query(&format!(
        "client_id={client_id}&redirect_uri={redirect}&response_type=code\
         &code_challenge={CHALLENGE}&code_challenge_method=S256&state=client-state{extra}"
    ))
}

#[test]
fn a_complete_request_passes_with_the_canonical_resource() {
    let request = check(&format!(
        "response_type=code&code_challenge={CHALLENGE}&code_challenge_method=S256\
         &resource=https%3A%2F%2Fmcp.example.com%2Fmcp%2Fx%2Fraw%2Cissue&state=s"
    ))
    .unwrap();
    assert_eq!(request.resource, "https://mcp.example.com/mcp/x/issue,raw");
    assert_eq!(request.state.as_deref(), Some("s"));
}

#[test]
fn pkce_is_required_with_s256() {
    assert_eq!(
        check("response_type=code").unwrap_err().0,
        ErrorCode::InvalidRequest
    );
    let plain =
        format!("response_type=code&code_challenge={CHALLENGE}&code_challenge_method=plain");
    assert_eq!(check(&plain).unwrap_err().0, ErrorCode::InvalidRequest);
}

#[test]
fn a_foreign_resource_is_invalid_target() {
    let text = format!(
        "response_type=code&code_challenge={CHALLENGE}&code_challenge_method=S256\
         &resource=https%3A%2F%2Fother.example%2Fmcp"
    );
    assert_eq!(check(&text).unwrap_err().0, ErrorCode::InvalidTarget);
}

#[test]
fn only_our_scopes_and_only_the_code_response_type() {
    let base = format!("code_challenge={CHALLENGE}&code_challenge_method=S256");
    assert_eq!(
        check(&format!("response_type=token&{base}")).unwrap_err().0,
        ErrorCode::UnsupportedResponseType
    );
    assert_eq!(
        check(&format!("response_type=code&{base}&scope=admin"))
            .unwrap_err()
            .0,
        ErrorCode::InvalidScope
    );
}

#[test]
fn a_repeated_parameter_is_a_page() {
    assert!(matches!(
        AuthorizeQuery::parse(b"state=a&state=b"),
        Err(PageError::Invalid { .. })
    ));
}

#[tokio::test]
async fn a_checked_request_is_parked_and_its_consent_view_shows_the_client() {
    let t = test_server().await;
    let id = client(&t, WEB_CALLBACK).await;
    let view = begin_authorization(&t.server, &authorize(&id, WEB_CALLBACK, ""), None)
        .await
        .unwrap();
    assert_eq!(view.client_name, "Claude[U+202E]edualC");
    assert_eq!(view.redirect_host, "app.example");
    assert_eq!(view.mcp_url, "https://mcp.example.com/mcp");
    assert!(!view.read_only);
    let request = parked_request(&t, &view).await;
    assert_eq!(request.state.as_deref(), Some("client-state"));
    assert_eq!(request.csrf_hash, hash_secret(&view.csrf_token));
}

#[tokio::test]
async fn the_browsers_csrf_cookie_is_reused() {
    let t = test_server().await;
    let id = client(&t, WEB_CALLBACK).await;
    let cookie = random_value();
    let view = begin_authorization(&t.server, &authorize(&id, WEB_CALLBACK, ""), Some(&cookie))
        .await
        .unwrap();
    assert_eq!(view.csrf_token, cookie);
}

#[tokio::test]
async fn an_unknown_client_or_redirect_is_a_page_never_a_redirect() {
    let t = test_server().await;
    let unknown =
        begin_authorization(&t.server, &authorize("nobody", WEB_CALLBACK, ""), None).await;
    assert!(matches!(
        unknown,
        Err(AuthorizeRefusal::Page(PageError::Invalid {
            title: "Unknown application",
            ..
        }))
    ));
    let id = client(&t, WEB_CALLBACK).await;
    let elsewhere = begin_authorization(
        &t.server,
        &authorize(&id, "https://evil.example/cb", ""),
        None,
    )
    .await;
    assert!(matches!(
        elsewhere,
        Err(AuthorizeRefusal::Page(PageError::Invalid {
            title: "Invalid redirect",
            ..
        }))
    ));
}

#[tokio::test]
async fn a_bad_request_goes_back_to_a_loopback_client_with_state_and_issuer() {
    let t = test_server().await;
    let id = client(&t, LOOPBACK_CALLBACK).await;
    let refusal = begin_authorization(
        &t.server,
        &authorize(&id, LOOPBACK_CALLBACK, "&scope=admin"),
        None,
    )
    .await
    .unwrap_err();
    let AuthorizeRefusal::ToClient(redirect) = refusal else {
        panic!("a redirect: {refusal:?}");
    };
    assert!(redirect.automatic);
    assert!(
        redirect.url.starts_with(LOOPBACK_CALLBACK),
        "{}",
        redirect.url
    );
    assert!(redirect.url.contains("error=invalid_scope"));
    assert!(redirect.url.contains("state=client-state"));
    assert!(redirect.url.contains("iss=https%3A%2F%2Fmcp.example.com"));
}

#[tokio::test]
async fn a_bad_request_of_a_web_client_is_shown_with_a_link_not_sent() {
    let t = test_server().await;
    let id = client(&t, WEB_CALLBACK).await;
    let refusal = begin_authorization(
        &t.server,
        &authorize(&id, WEB_CALLBACK, "&scope=admin"),
        None,
    )
    .await
    .unwrap_err();
    let AuthorizeRefusal::Page(PageError::ClientRequest { continue_to, .. }) = refusal else {
        panic!("a page: {refusal:?}");
    };
    assert!(continue_to.0.contains("error=invalid_scope"));
    assert_eq!(continue_to.1, "app.example");
}

/// A parked request and the cookie its page set.
async fn parked(t: &TestServer) -> ConsentView {
    let id = client(t, LOOPBACK_CALLBACK).await;
    begin_authorization(&t.server, &authorize(&id, LOOPBACK_CALLBACK, ""), None)
        .await
        .unwrap()
}

fn form(view: &ConsentView, decision: Decision) -> ConsentForm {
    ConsentForm {
        request_id: view.request_id.clone(),
        csrf_token: view.csrf_token.clone(),
        decision,
        access: Access::Read,
    }
}

/// The client's request that `view` parked, as the store holds it.
async fn parked_request(t: &TestServer, view: &ConsentView) -> ClientAuthorization {
    let pending = t
        .server
        .store
        .get_pending(&hash_secret(&view.request_id), t.server.now())
        .await
        .unwrap()
        .unwrap();
    match pending.flow {
        PendingSignIn::Client(request) => request,
        PendingSignIn::Page(_) => panic!("a client authorization"),
    }
}

/// The scope the pending request holds after `form` was approved.
async fn approved_scope(t: &TestServer, view: &ConsentView, form: &ConsentForm) -> String {
    let outcome = decide_consent(&t.server, form, Some(&view.csrf_token), None).await;
    assert!(matches!(outcome, Ok(ConsentOutcome::ToGitea(_))));
    parked_request(t, view).await.scope
}

#[tokio::test]
async fn without_a_scope_the_consent_page_preselects_read_only() {
    let t = test_server().await;
    let view = parked(&t).await;
    assert_eq!((view.asked, view.read_only), (Access::Read, false));
}

#[tokio::test]
async fn a_step_up_asks_for_write_and_the_page_preselects_it() {
    let t = test_server().await;
    let id = client(&t, LOOPBACK_CALLBACK).await;
    let query = authorize(&id, LOOPBACK_CALLBACK, "&scope=gitea%3Aread+gitea%3Awrite");
    let view = begin_authorization(&t.server, &query, None).await.unwrap();
    assert_eq!(view.asked, Access::ReadWrite);
}

#[tokio::test]
async fn the_person_grants_what_they_choose_read_by_default() {
    let t = test_server().await;
    let view = parked(&t).await;
    let read = form(&view, Decision::Approve);
    assert_eq!(approved_scope(&t, &view, &read).await, "gitea:read");
    let view = parked(&t).await;
    let write = ConsentForm {
        access: Access::ReadWrite,
        ..form(&view, Decision::Approve)
    };
    assert_eq!(
        approved_scope(&t, &view, &write).await,
        "gitea:read gitea:write"
    );
}

#[tokio::test]
async fn a_readonly_url_grants_reading_whatever_the_form_says() {
    let t = test_server().await;
    let id = client(&t, LOOPBACK_CALLBACK).await;
    let query = authorize(
        &id,
        LOOPBACK_CALLBACK,
        "&scope=gitea%3Awrite&resource=https%3A%2F%2Fmcp.example.com%2Fmcp%2Freadonly",
    );
    let view = begin_authorization(&t.server, &query, None).await.unwrap();
    assert_eq!((view.read_only, view.asked), (true, Access::Read));
    let forged = ConsentForm {
        access: Access::ReadWrite,
        ..form(&view, Decision::Approve)
    };
    assert_eq!(approved_scope(&t, &view, &forged).await, "gitea:read");
}

#[tokio::test]
async fn consent_needs_the_cookie_and_the_token_the_request_was_parked_with() {
    let t = test_server().await;
    let view = parked(&t).await;
    let approve = form(&view, Decision::Approve);
    let other = random_value();
    for cookie in [None, Some(other.as_str())] {
        let outcome = decide_consent(&t.server, &approve, cookie, None).await;
        assert!(matches!(outcome, Err(PageError::BadToken)), "{cookie:?}");
    }
    // Another page's token, in its own cookie: not the one parked.
    let stranger = ConsentForm {
        csrf_token: other.clone(),
        ..approve.clone()
    };
    let outcome = decide_consent(&t.server, &stranger, Some(&other), None).await;
    assert!(matches!(outcome, Err(PageError::BadToken)));
}

#[tokio::test]
async fn approval_starts_the_trip_to_gitea_once() {
    let t = test_server().await;
    let view = parked(&t).await;
    let approve = form(&view, Decision::Approve);
    let first = decide_consent(&t.server, &approve, Some(&view.csrf_token), None).await;
    assert!(matches!(first, Ok(ConsentOutcome::ToGitea(_))));
    let again = decide_consent(&t.server, &approve, Some(&view.csrf_token), None).await;
    assert!(matches!(again, Err(PageError::Expired)));
}

#[tokio::test]
async fn denial_sends_access_denied_to_the_client_and_drops_the_request() {
    let t = test_server().await;
    let view = parked(&t).await;
    let deny = form(&view, Decision::Deny);
    let outcome = decide_consent(&t.server, &deny, Some(&view.csrf_token), None)
        .await
        .unwrap();
    let ConsentOutcome::Denied(redirect) = outcome else {
        panic!("denied");
    };
    assert!(redirect.url.contains("error=access_denied"));
    assert!(redirect.url.contains("state=client-state"));
    let again = decide_consent(&t.server, &deny, Some(&view.csrf_token), None).await;
    assert!(matches!(again, Err(PageError::Expired)));
}

#[tokio::test]
async fn an_expired_request_cannot_be_decided() {
    let t = test_server().await;
    let view = parked(&t).await;
    t.clock.advance(PENDING_TTL + 1);
    let outcome = decide_consent(
        &t.server,
        &form(&view, Decision::Approve),
        Some(&view.csrf_token),
        None,
    )
    .await;
    assert!(matches!(outcome, Err(PageError::Expired)));
}

#[test]
fn the_consent_form_is_read_typed() {
    assert_eq!(
        ConsentForm::parse(b"request_id=r&csrf_token=c&decision=deny").unwrap(),
        ConsentForm {
            request_id: "r".into(),
            csrf_token: "c".into(),
            decision: Decision::Deny,
            access: Access::Read,
        }
    );
    let write = ConsentForm::parse(b"request_id=r&csrf_token=c&decision=approve&access=write");
    assert_eq!(write.unwrap().access, Access::ReadWrite);
    let odd = ConsentForm::parse(b"request_id=r&csrf_token=c&decision=approve&access=admin");
    assert_eq!(odd.unwrap().access, Access::Read);
    for bad in [
        &b"request_id=r&csrf_token=c"[..],
        b"request_id=r&csrf_token=c&decision=maybe",
    ] {
        assert!(matches!(
            ConsentForm::parse(bad),
            Err(PageError::Invalid { .. })
        ));
    }
}
