//! The consent page and the Gitea callback: CSRF double submit (#30), the
//! browser binding (#30), escaping (#31), page headers (#32), denial, and
//! states that are unknown, replayed or expired.

use reqwest::StatusCode;
use reqwest::header::{CONTENT_SECURITY_POLICY, LOCATION};
use serde_json::json;

use crate::{
    Browser, CLIENT_REDIRECT, ConsentForm, OAuthGateway, Pkce, TestClient, location,
    on_both_backends, param,
};

fn assert_page_headers(response: &reqwest::Response) {
    let h = response.headers();
    assert_eq!(h["cache-control"], "no-store");
    assert_eq!(h["referrer-policy"], "no-referrer");
    assert_eq!(h["x-frame-options"], "DENY");
    let csp = h[CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
}

/// A public client's authorization parked at the consent page, in a
/// browser that holds its CSRF cookie.
pub async fn at_consent(gateway: &OAuthGateway) -> (TestClient, Browser, ConsentForm) {
    let client = gateway.public_client().await;
    let mut browser = Browser::default();
    let form = gateway
        .consent_page(
            &mut browser,
            &gateway.authorize_params(&client, &Pkce::new(), "st-1"),
        )
        .await;
    (client, browser, form)
}

/// #31
async fn the_consent_page_escapes_the_client_name(gateway: OAuthGateway) {
    let html = consent_of_named(&gateway, "<script>alert('x')</script>").await;
    assert!(!html.contains("<script>"), "the name must be escaped");
    assert!(html.contains("&#60;script&#62;") || html.contains("&lt;script&gt;"));
    assert!(html.contains("127.0.0.1"), "the redirect host is shown");
}
on_both_backends!(the_consent_page_escapes_the_client_name);

/// The consent page of a client registered with `client_name`.
async fn consent_of_named(gateway: &OAuthGateway, client_name: &str) -> String {
    let (status, body) = gateway
        .register_raw(json!({
            "client_name": client_name,
            "redirect_uris": [CLIENT_REDIRECT],
            "token_endpoint_auth_method": "none",
        }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let client = TestClient {
        client_id: body["client_id"].as_str().unwrap().into(),
        client_secret: None,
        redirect_uri: CLIENT_REDIRECT.into(),
    };
    gateway
        .consent_page(
            &mut Browser::default(),
            &gateway.authorize_params(&client, &Pkce::new(), "st-1"),
        )
        .await
        .html
}

/// F16: bidi controls and zero-width characters in `client_name` are
/// refused at registration: they make the consent page show another name.
async fn a_client_name_with_bidi_or_zero_width_characters_is_refused(gateway: OAuthGateway) {
    for name in [
        "Claude\u{202E}edualC",
        "Cla\u{200B}ude",
        "\u{2066}Cursor\u{2069}",
        "Le\u{200D}Chat",
        "VS\u{FEFF}Code",
        "x\u{E0041}",
    ] {
        let (status, body) = gateway
            .register_raw(json!({
                "client_name": name,
                "redirect_uris": [CLIENT_REDIRECT],
                "token_endpoint_auth_method": "none",
            }))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name:?}");
        assert_eq!(body["error"], "invalid_client_metadata", "{name:?}");
    }
}
on_both_backends!(a_client_name_with_bidi_or_zero_width_characters_is_refused);

/// F16: characters that are accepted but easy to miss (a no-break space, a
/// Hangul filler) are shown as their code points.
async fn the_consent_page_makes_unusual_characters_visible(gateway: OAuthGateway) {
    let html = consent_of_named(&gateway, "Claude\u{00A0}Desktop\u{3164}").await;
    assert!(html.contains("Claude[U+00A0]Desktop[U+3164]"), "{html}");
}
on_both_backends!(the_consent_page_makes_unusual_characters_visible);

/// The consent page names the Gitea instance the application will act on,
/// the redirect host on its own line, and says what each scope allows.
async fn the_consent_page_names_gitea_and_explains_each_scope(gateway: OAuthGateway) {
    let html = consent_of_named(&gateway, "Some client").await;
    assert!(
        html.contains(&format!("act on <strong>{}</strong>", gateway.fake.url)),
        "{html}"
    );
    assert!(html.contains("Sends you back to"), "{html}");
    assert!(html.contains("read and change repositories"), "{html}");
}
on_both_backends!(the_consent_page_names_gitea_and_explains_each_scope);

/// #32: the consent page, error pages and redirects from pages.
async fn every_page_has_anti_framing_and_no_store_headers(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let consent = gateway
        .authorize_fresh(&gateway.authorize_params(&client, &Pkce::new(), "st-1"))
        .await;
    assert_eq!(consent.status(), StatusCode::OK);
    assert_page_headers(&consent);
    let error_page = gateway
        .http
        .get(format!("{}/authorize?client_id=unknown", gateway.url))
        .send()
        .await
        .unwrap();
    assert_page_headers(&error_page);
    let callback = gateway
        .http
        .get(format!(
            "{}/oauth/callback?state=unknown&code=x",
            gateway.url
        ))
        .send()
        .await
        .unwrap();
    assert_page_headers(&callback);
}
on_both_backends!(every_page_has_anti_framing_and_no_store_headers);

/// #30: the form token alone, or the cookie alone, is not enough.
async fn consent_needs_both_the_csrf_cookie_and_the_form_token(gateway: OAuthGateway) {
    let (_, mut browser, form) = at_consent(&gateway).await;
    // An attacker's page posts the form without the victim's cookie.
    let response = gateway
        .decide(&mut Browser::default(), &form, "approve")
        .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(response.headers().get(LOCATION).is_none());
    // The right cookie with a forged form token.
    let mut forged = form.clone();
    forged.csrf_token = "A".repeat(43);
    let response = gateway.decide(&mut browser, &forged, "approve").await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    // The real pair still works afterwards: nothing was consumed.
    let response = gateway.decide(&mut browser, &form, "approve").await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
}
on_both_backends!(consent_needs_both_the_csrf_cookie_and_the_form_token);

async fn a_cross_site_consent_post_is_refused(gateway: OAuthGateway) {
    let (_, browser, form) = at_consent(&gateway).await;
    let response = gateway
        .decide_from_origin(&browser, &form, "approve", "https://evil.example")
        .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
}
on_both_backends!(a_cross_site_consent_post_is_refused);

/// #30: the callback completes only in the browser that approved.
async fn the_callback_needs_the_binding_cookie(gateway: OAuthGateway) {
    let (_, mut browser, form) = at_consent(&gateway).await;
    let approval = gateway.decide(&mut browser, &form, "approve").await;
    assert!(browser.cookies.contains_key("aegis_binding"));
    let callback_url = gateway.through_gitea(&approval, "alice").await;
    let mut other_browser = Browser::default();
    let response = gateway.callback(&mut other_browser, &callback_url).await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(response.headers().get(LOCATION).is_none());
}
on_both_backends!(the_callback_needs_the_binding_cookie);

/// F7: a callback without the binding cookie does not consume the pending
/// sign-in; the browser that approved still completes it afterwards.
async fn a_cookieless_callback_leaves_the_sign_in_to_its_browser(gateway: OAuthGateway) {
    let (_, mut browser, form) = at_consent(&gateway).await;
    let approval = gateway.decide(&mut browser, &form, "approve").await;
    let callback_url = gateway.through_gitea(&approval, "alice").await;
    let response = gateway
        .callback(&mut Browser::default(), &callback_url)
        .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let response = gateway.callback(&mut browser, &callback_url).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert!(param(&location(&response), "code").is_some());
}
on_both_backends!(a_cookieless_callback_leaves_the_sign_in_to_its_browser);

async fn a_replayed_callback_shows_an_error_page(gateway: OAuthGateway) {
    let (_, mut browser, form) = at_consent(&gateway).await;
    let approval = gateway.decide(&mut browser, &form, "approve").await;
    let callback_url = gateway.through_gitea(&approval, "alice").await;
    let first = gateway.callback(&mut browser, &callback_url).await;
    assert_eq!(first.status(), StatusCode::SEE_OTHER);
    let replay = gateway.callback(&mut browser, &callback_url).await;
    assert_eq!(replay.status(), StatusCode::BAD_REQUEST);
    assert!(replay.headers().get(LOCATION).is_none());
}
on_both_backends!(a_replayed_callback_shows_an_error_page);

async fn an_expired_sign_in_shows_an_error_page(gateway: OAuthGateway) {
    let (_, mut browser, form) = at_consent(&gateway).await;
    let approval = gateway.decide(&mut browser, &form, "approve").await;
    let callback_url = gateway.through_gitea(&approval, "alice").await;
    gateway.clock.advance(601);
    let late = gateway.callback(&mut browser, &callback_url).await;
    assert_eq!(late.status(), StatusCode::BAD_REQUEST);
    assert!(late.headers().get(LOCATION).is_none());
}
on_both_backends!(an_expired_sign_in_shows_an_error_page);

async fn an_expired_consent_form_is_refused(gateway: OAuthGateway) {
    let (_, mut browser, form) = at_consent(&gateway).await;
    gateway.clock.advance(601);
    let response = gateway.decide(&mut browser, &form, "approve").await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(response.headers().get(LOCATION).is_none());
}
on_both_backends!(an_expired_consent_form_is_refused);

async fn denying_redirects_access_denied_with_state_and_iss(gateway: OAuthGateway) {
    let (_, mut browser, form) = at_consent(&gateway).await;
    let response = gateway.decide(&mut browser, &form, "deny").await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let to = location(&response);
    assert!(to.starts_with(CLIENT_REDIRECT));
    assert_eq!(param(&to, "error").as_deref(), Some("access_denied"));
    assert_eq!(param(&to, "state").as_deref(), Some("st-1"));
    assert_eq!(param(&to, "iss").as_deref(), Some(gateway.url.as_str()));
    // The request is gone: approving it afterwards fails.
    let again = gateway.decide(&mut browser, &form, "approve").await;
    assert_eq!(again.status(), StatusCode::BAD_REQUEST);
}
on_both_backends!(denying_redirects_access_denied_with_state_and_iss);

/// A denial at Gitea reaches the client as `access_denied`.
async fn a_denial_at_gitea_reaches_the_client(gateway: OAuthGateway) {
    let (_, mut browser, form) = at_consent(&gateway).await;
    let approval = gateway.decide(&mut browser, &form, "approve").await;
    gateway.fake.deny_next_authorization();
    let callback_url = gateway.through_gitea(&approval, "alice").await;
    let response = gateway.callback(&mut browser, &callback_url).await;
    let to = location(&response);
    assert_eq!(param(&to, "error").as_deref(), Some("access_denied"));
    assert_eq!(param(&to, "state").as_deref(), Some("st-1"));
}
on_both_backends!(a_denial_at_gitea_reaches_the_client);

/// #29: `code`, `state` and `iss` appear exactly once each.
async fn iss_and_state_are_echoed_once(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let to_client = gateway.sign_in(&client, &Pkce::new(), "alice").await;
    let query = crate::query_of(&to_client);
    for name in ["code", "state", "iss"] {
        assert_eq!(query.iter().filter(|(k, _)| k == name).count(), 1, "{name}");
    }
    assert_eq!(param(&to_client, "state").as_deref(), Some("st-1"));
    assert_eq!(
        param(&to_client, "iss").as_deref(),
        Some(gateway.url.as_str())
    );
}
on_both_backends!(iss_and_state_are_echoed_once);
