//! `/authorize`: what is an error page (never a redirect) and what is an
//! error redirect, redirect URI matching, PKCE, scope, resource, duplicate
//! parameters, the allowlist, and client metadata documents.

use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, LOCATION};
use serde_json::json;

use crate::consent::at_consent;
use crate::support::fake_gitea::{OAUTH_CLIENT_ID, OAUTH_READ_CLIENT_ID};
use crate::{OAuthGateway, Pkce, TestClient, location, on_both_backends, param};

/// An error page: HTML, 4xx, and no redirect anywhere.
async fn assert_error_page(response: reqwest::Response) -> String {
    assert!(response.status().is_client_error(), "{}", response.status());
    assert!(
        response.headers().get(LOCATION).is_none(),
        "must not redirect"
    );
    assert!(
        response.headers()[CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    response.text().await.unwrap()
}

fn with(params: &[(String, String)], name: &str, value: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> =
        params.iter().filter(|(k, _)| k != name).cloned().collect();
    out.push((name.into(), value.into()));
    out
}

fn without(params: &[(String, String)], name: &str) -> Vec<(String, String)> {
    params.iter().filter(|(k, _)| k != name).cloned().collect()
}

/// An error redirect to the client: `error`, `state` and `iss` once each.
fn assert_error_redirect(response: &reqwest::Response, client: &TestClient, error: &str) {
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let to = location(response);
    assert!(to.starts_with(&client.redirect_uri), "{to}");
    assert_eq!(param(&to, "error").as_deref(), Some(error), "{to}");
    assert_eq!(param(&to, "state").as_deref(), Some("st-1"));
    assert!(param(&to, "iss").is_some());
}

/// #2
async fn an_unknown_client_gets_an_error_page(gateway: OAuthGateway) {
    let client = TestClient {
        client_id: "no-such-client".into(),
        client_secret: None,
        redirect_uri: "https://attacker.example/cb".into(),
    };
    let params = gateway.authorize_params(&client, &Pkce::new(), "st-1");
    let html = assert_error_page(gateway.authorize_fresh(&params).await).await;
    assert!(html.contains("Unknown application"));
}
on_both_backends!(an_unknown_client_gets_an_error_page);

/// #3: the redirect URI is checked before anything that would redirect.
async fn an_unregistered_redirect_uri_gets_an_error_page_even_with_other_errors(
    gateway: OAuthGateway,
) {
    let client = gateway.public_client().await;
    let params = gateway.authorize_params(&client, &Pkce::new(), "st-1");
    let params = with(&params, "redirect_uri", "https://attacker.example/cb");
    let params = with(&params, "response_type", "token");
    let params = without(&params, "code_challenge");
    assert_error_page(gateway.authorize_fresh(&params).await).await;
}
on_both_backends!(an_unregistered_redirect_uri_gets_an_error_page_even_with_other_errors);

/// #4
async fn redirect_uris_match_exactly(gateway: OAuthGateway) {
    let client = gateway.register("none", "https://app.example/cb").await;
    let params = gateway.authorize_params(&client, &Pkce::new(), "st-1");
    for variant in [
        "https://app.example:443/cb",
        "https://APP.example/cb",
        "https://app.example/x/../cb",
        "https://app.example/x/%2E%2E/cb",
        "https://app.example/cb?extra=1",
        "https://app.example/cb/",
    ] {
        let response = gateway
            .authorize_fresh(&with(&params, "redirect_uri", variant))
            .await;
        assert_error_page(response).await;
    }
    let exact = gateway.authorize_fresh(&params).await;
    assert_eq!(exact.status(), StatusCode::OK);
}
on_both_backends!(redirect_uris_match_exactly);

/// #5: RFC 8252 loopback redirects match on any port.
async fn loopback_redirect_uris_match_on_any_port(gateway: OAuthGateway) {
    let client = gateway.register("none", "http://127.0.0.1/callback").await;
    let params = gateway.authorize_params(&client, &Pkce::new(), "st-1");
    let response = gateway
        .authorize_fresh(&with(
            &params,
            "redirect_uri",
            "http://127.0.0.1:49152/callback",
        ))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let other_path = gateway
        .authorize_fresh(&with(
            &params,
            "redirect_uri",
            "http://127.0.0.1:49152/other",
        ))
        .await;
    assert_error_page(other_path).await;
}
on_both_backends!(loopback_redirect_uris_match_on_any_port);

/// #6
async fn a_missing_redirect_uri_with_several_registered_is_an_error_page(gateway: OAuthGateway) {
    let (_, body) = gateway
        .register_raw(json!({
            "redirect_uris": ["https://a.example/cb", "https://b.example/cb"],
            "token_endpoint_auth_method": "none",
        }))
        .await;
    let client = TestClient {
        client_id: body["client_id"].as_str().unwrap().into(),
        client_secret: None,
        redirect_uri: "https://a.example/cb".into(),
    };
    let params = without(
        &gateway.authorize_params(&client, &Pkce::new(), "st-1"),
        "redirect_uri",
    );
    assert_error_page(gateway.authorize_fresh(&params).await).await;
}
on_both_backends!(a_missing_redirect_uri_with_several_registered_is_an_error_page);

/// #8
async fn duplicate_parameters_are_refused(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let mut params = gateway.authorize_params(&client, &Pkce::new(), "st-1");
    params.push(("state".into(), "second".into()));
    let html = assert_error_page(gateway.authorize_fresh(&params).await).await;
    assert!(html.contains("state"));
}
on_both_backends!(duplicate_parameters_are_refused);

/// #9
async fn unknown_scopes_are_refused(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let params = gateway.authorize_params(&client, &Pkce::new(), "st-1");
    let response = gateway
        .authorize_fresh(&with(&params, "scope", "gitea admin"))
        .await;
    assert_error_redirect(&response, &client, "invalid_scope");
}
on_both_backends!(unknown_scopes_are_refused);

/// #10: PKCE for every client, public or confidential.
async fn pkce_is_required_for_every_client(gateway: OAuthGateway) {
    for method in ["none", "client_secret_basic"] {
        let client = gateway
            .register(method, "http://127.0.0.1:5599/callback")
            .await;
        let params = without(
            &gateway.authorize_params(&client, &Pkce::new(), "st-1"),
            "code_challenge",
        );
        let response = gateway.authorize_fresh(&params).await;
        assert_error_redirect(&response, &client, "invalid_request");
    }
}
on_both_backends!(pkce_is_required_for_every_client);

/// #11
async fn plain_pkce_is_refused(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let params = gateway.authorize_params(&client, &Pkce::new(), "st-1");
    for method in ["plain", ""] {
        let params = if method.is_empty() {
            without(&params, "code_challenge_method")
        } else {
            with(&params, "code_challenge_method", method)
        };
        let response = gateway.authorize_fresh(&params).await;
        assert_error_redirect(&response, &client, "invalid_request");
    }
}
on_both_backends!(plain_pkce_is_refused);

/// #28 (authorize side): only our resource; its trailing-slash variant is
/// normalised; a missing one defaults.
async fn a_foreign_resource_is_invalid_target(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let params = gateway.authorize_params(&client, &Pkce::new(), "st-1");
    let response = gateway
        .authorize_fresh(&with(&params, "resource", "https://other.example/mcp"))
        .await;
    assert_error_redirect(&response, &client, "invalid_target");
    let slash = format!("{}/", gateway.resource());
    for params in [
        with(&params, "resource", &slash),
        without(&params, "resource"),
    ] {
        let response = gateway.authorize_fresh(&params).await;
        assert_eq!(response.status(), StatusCode::OK);
    }
}
on_both_backends!(a_foreign_resource_is_invalid_target);

/// The allowlist is checked again at `/authorize`: a client registered
/// before the operator narrowed it cannot use a redirect it no longer allows.
async fn the_allowlist_is_enforced_again_at_authorize(gateway: OAuthGateway) {
    let client = gateway.register("none", "https://old.example/cb").await;
    let mut settings = gateway.settings.clone();
    settings.push((
        "OAUTH_REDIRECT_ALLOWLIST".into(),
        "https://claude.ai/".into(),
    ));
    let narrowed = restarted(&gateway, settings).await;
    let params = narrowed.authorize_params(&client, &Pkce::new(), "st-1");
    let response = narrowed.authorize_fresh(&params).await;
    assert_error_page(response).await;
}
on_both_backends!(the_allowlist_is_enforced_again_at_authorize);

/// A second gateway on the same store (and fake Gitea) with `settings`.
pub async fn restarted(
    gateway: &OAuthGateway,
    mut settings: Vec<(String, String)>,
) -> OAuthGateway {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    settings.retain(|(k, _)| k != "PUBLIC_BASE_URL");
    settings.push(("PUBLIC_BASE_URL".into(), url.clone()));
    gateway
        .fake
        .add_oauth_redirect_uri(&format!("{url}/oauth/callback"));
    crate::serve(listener, &settings, gateway.clock.clone()).await;
    OAuthGateway {
        url,
        fake: gateway.fake.clone(),
        clock: gateway.clock.clone(),
        http: gateway.http.clone(),
        data_dir: tempfile::tempdir().unwrap(),
        settings,
    }
}

/// We ask Gitea for `openid profile` and exactly our granular scopes (so
/// Gitea never widens the grant), with S256, our state and a nonce.
async fn gitea_is_asked_for_granular_scopes_with_pkce(gateway: OAuthGateway) {
    let (_, mut browser, form) = at_consent(&gateway).await;
    let approval = gateway.decide(&mut browser, &form, "approve-write").await;
    let to_gitea = location(&approval);
    assert!(to_gitea.starts_with(&format!("{}/login/oauth/authorize?", gateway.fake.url)));
    assert_eq!(
        param(&to_gitea, "scope").as_deref(),
        Some(
            "openid profile read:user write:repository write:issue write:organization write:notification write:package write:misc"
        )
    );
    assert_eq!(
        param(&to_gitea, "client_id").as_deref(),
        Some(OAUTH_CLIENT_ID)
    );
    assert_eq!(param(&to_gitea, "nonce").map(|n| n.len()), Some(43));
    assert_eq!(
        param(&to_gitea, "code_challenge_method").as_deref(),
        Some("S256")
    );
    assert_eq!(param(&to_gitea, "response_type").as_deref(), Some("code"));
    assert_ne!(param(&to_gitea, "state").as_deref(), Some("st-1"));
    assert_eq!(
        param(&to_gitea, "redirect_uri"),
        Some(format!("{}/oauth/callback", gateway.url))
    );
}
on_both_backends!(gitea_is_asked_for_granular_scopes_with_pkce);

/// Read only, the default: the read application, asked only `read:`
/// scopes, so the Gitea session itself cannot write.
async fn a_read_only_connection_asks_gitea_only_for_read_scopes(gateway: OAuthGateway) {
    let (_, mut browser, form) = at_consent(&gateway).await;
    let approval = gateway.decide(&mut browser, &form, "approve").await;
    let to_gitea = location(&approval);
    assert_eq!(
        param(&to_gitea, "client_id").as_deref(),
        Some(OAUTH_READ_CLIENT_ID)
    );
    assert_eq!(
        param(&to_gitea, "scope").as_deref(),
        Some(
            "openid profile read:user read:repository read:issue read:organization read:notification read:package read:misc"
        )
    );
}
on_both_backends!(a_read_only_connection_asks_gitea_only_for_read_scopes);

/// RFC 9700 §4.11.2: with open registration, an error for an https
/// redirect URI is not sent there by itself (that would make `/authorize`
/// an open redirector); the person sees it and may follow a link back.
async fn errors_for_an_unvetted_https_client_wait_for_the_person(gateway: OAuthGateway) {
    let client = gateway.register("none", "https://app.example/cb").await;
    let params = gateway.authorize_params(&client, &Pkce::new(), "st-9");
    let response = gateway
        .authorize_fresh(&with(&params, "response_type", "token"))
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(response.headers().get("location").is_none());
    let page = response.text().await.unwrap();
    assert!(page.contains("Return to app.example"), "{page}");
    let href = page
        .split("href=\"")
        .map(|rest| rest.split('"').next().unwrap())
        .find(|h| h.starts_with("https://app.example/cb"))
        .expect("a link back to the application")
        .replace("&#38;", "&");
    assert_eq!(
        param(&href, "error").as_deref(),
        Some("unsupported_response_type")
    );
    assert_eq!(param(&href, "state").as_deref(), Some("st-9"), "{href}");
    assert_eq!(param(&href, "iss").as_deref(), Some(gateway.url.as_str()));

    // A loopback client (an application on the person's machine) gets the
    // error redirect directly.
    let native = gateway.public_client().await;
    let params = gateway.authorize_params(&native, &Pkce::new(), "st-10");
    let response = gateway
        .authorize_fresh(&with(&params, "response_type", "token"))
        .await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        param(&location(&response), "error").as_deref(),
        Some("unsupported_response_type")
    );
}
on_both_backends!(errors_for_an_unvetted_https_client_wait_for_the_person);

/// Once the operator vets redirect URIs with an allowlist, errors go back
/// to them directly.
async fn errors_for_an_allowlisted_client_are_redirected(gateway: OAuthGateway) {
    let client = gateway
        .register("none", "https://claude.ai/api/mcp/auth_callback")
        .await;
    let params = gateway.authorize_params(&client, &Pkce::new(), "st-11");
    let response = gateway
        .authorize_fresh(&with(&params, "response_type", "token"))
        .await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert!(location(&response).starts_with("https://claude.ai/api/mcp/auth_callback?error="));
}
on_both_backends!(
    errors_for_an_allowlisted_client_are_redirected,
    ("OAUTH_REDIRECT_ALLOWLIST", "https://claude.ai/")
);

/// F5: an error for a private-use scheme is a page with a link: the
/// browser is never sent to a local program without a click.
async fn errors_for_a_private_use_scheme_wait_for_the_person(gateway: OAuthGateway) {
    let client = gateway
        .register("none", "cursor://anysphere.cursor-mcp/oauth/callback")
        .await;
    let params = gateway.authorize_params(&client, &Pkce::new(), "st-12");
    let response = gateway
        .authorize_fresh(&with(&params, "response_type", "token"))
        .await;
    let page = assert_error_page(response).await;
    assert!(
        page.contains("cursor://anysphere.cursor-mcp/oauth/callback?"),
        "{page}"
    );
}
on_both_backends!(errors_for_a_private_use_scheme_wait_for_the_person);
