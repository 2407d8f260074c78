//! The Gitea sign-in on OpenID Connect: the fake Gitea signs real RS256 ID
//! tokens, and each kind of forged or missing one ends the sign-in with an
//! error page, no code for the client and nothing stored.

use reqwest::StatusCode;
use reqwest::header::LOCATION;
use serde_json::json;

use crate::consent::at_consent;
use crate::support::fake_gitea::Forgery;
use crate::{OAuthGateway, on_both_backends};

/// A sign-in whose ID token from Gitea is forged as `forgery` says.
async fn sign_in_with_forged_id_token(gateway: &OAuthGateway, forgery: Forgery) {
    let (_, mut browser, form) = at_consent(gateway).await;
    let approval = gateway.decide(&mut browser, &form, "approve").await;
    let callback_url = gateway.through_gitea(&approval, "alice").await;
    gateway.fake.forge_next_id_token(forgery);
    let response = gateway.callback(&mut browser, &callback_url).await;
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY, "{forgery:?}");
    assert!(
        response.headers().get(LOCATION).is_none(),
        "{forgery:?}: no code for the client"
    );
    let page = response.text().await.unwrap();
    assert!(page.contains("Sign-in refused"), "{forgery:?}: {page}");
    assert!(page.contains("Nothing was stored"), "{forgery:?}");
}

/// Every forgery is refused, and none of them left a grant behind.
async fn every_forged_or_missing_id_token_is_refused(gateway: OAuthGateway) {
    for forgery in [
        Forgery::BadSignature,
        Forgery::WrongAudience,
        Forgery::WrongIssuer,
        Forgery::Expired,
        Forgery::IssuedInTheFuture,
        Forgery::WrongNonce,
        Forgery::MissingNonce,
        Forgery::AlgNone,
        Forgery::Hs256WithClientSecret,
        Forgery::UnknownKeyId,
        Forgery::Omitted,
    ] {
        sign_in_with_forged_id_token(&gateway, forgery).await;
    }
    let alice = gateway.page_sign_in("alice", "account").await;
    let page = gateway.page(&alice, "/account").await.text().await.unwrap();
    assert!(
        !page.contains("Test client"),
        "a refused sign-in stored a grant: {page}"
    );
}
on_both_backends!(every_forged_or_missing_id_token_is_refused);

/// The happy path: Gitea was asked for `openid` with a nonce, and the
/// signed-in user is the one the verified token names.
async fn a_verified_id_token_signs_the_user_in(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    let asked = gateway.fake.last_authorize_query().unwrap();
    assert!(asked["scope"].split(' ').any(|s| s == "openid"));
    assert!(!asked["nonce"].is_empty());
    let (status, envelope) = gateway
        .call_tool(&tokens.access_token, "gitea_user_get_current", json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(envelope["identity"]["login"], "alice");
}
on_both_backends!(a_verified_id_token_signs_the_user_in);

/// The ID token of an upstream refresh must name the grant's user; one
/// that does not verify ends the grant.
async fn a_forged_id_token_on_refresh_ends_the_grant(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    gateway.fake.expire_access_tokens();
    // Our record of Gitea's expiry passes (within 30 s of it), ours not.
    gateway.clock.advance(3600 - 10);
    gateway.fake.forge_next_id_token(Forgery::BadSignature);
    let (status, _) = gateway
        .call_tool(&tokens.access_token, "gitea_user_get_current", json!({}))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let retried = gateway.refresh(&client, &tokens.refresh_token).await;
    assert_eq!(
        retried.status(),
        StatusCode::BAD_REQUEST,
        "the grant is revoked"
    );
}
on_both_backends!(a_forged_id_token_on_refresh_ends_the_grant);
