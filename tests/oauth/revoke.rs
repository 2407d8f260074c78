//! `/revoke` (RFC 7009) and what `/mcp` does with revoked and expired
//! tokens (#26, #27).

use reqwest::StatusCode;
use serde_json::json;

use crate::{OAuthGateway, on_both_backends, tokens_from};

async fn status_at_mcp(gateway: &OAuthGateway, access_token: &str) -> StatusCode {
    gateway
        .call_tool(access_token, "gitea_user_get_current", json!({}))
        .await
        .0
}

/// #26: revoking the access token ends the refresh token too, and the
/// other way round.
async fn revoking_any_token_ends_the_whole_grant(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    let response = gateway.revoke(&tokens.access_token).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["cache-control"], "no-store");
    assert_eq!(
        gateway
            .refresh(&client, &tokens.refresh_token)
            .await
            .status(),
        StatusCode::BAD_REQUEST
    );

    let tokens = gateway.tokens(&client, "alice").await;
    assert_eq!(
        gateway.revoke(&tokens.refresh_token).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        status_at_mcp(&gateway, &tokens.access_token).await,
        StatusCode::UNAUTHORIZED
    );
}
on_both_backends!(revoking_any_token_ends_the_whole_grant);

async fn unknown_tokens_are_revoked_with_200(gateway: OAuthGateway) {
    assert_eq!(
        gateway.revoke("agm_never-issued").await.status(),
        StatusCode::OK
    );
    let missing = gateway
        .http
        .post(format!("{}/revoke", gateway.url))
        .form(&[("token_type_hint", "access_token")])
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::BAD_REQUEST);
}
on_both_backends!(unknown_tokens_are_revoked_with_200);

/// Another client's credentials cannot end a grant.
async fn a_client_cannot_revoke_another_clients_grant(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let other = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    let response = gateway
        .http
        .post(format!("{}/revoke", gateway.url))
        .form(&[
            ("token", tokens.access_token.as_str()),
            ("client_id", other.client_id.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        status_at_mcp(&gateway, &tokens.access_token).await,
        StatusCode::OK
    );
}
on_both_backends!(a_client_cannot_revoke_another_clients_grant);

/// #27
async fn revoked_and_expired_access_tokens_get_401(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    assert_eq!(
        status_at_mcp(&gateway, &tokens.access_token).await,
        StatusCode::OK
    );
    gateway.clock.advance(3601);
    assert_eq!(
        status_at_mcp(&gateway, &tokens.access_token).await,
        StatusCode::UNAUTHORIZED
    );
    // The refresh token still works and its access token is good.
    let fresh = tokens_from(gateway.refresh(&client, &tokens.refresh_token).await).await;
    assert_eq!(
        status_at_mcp(&gateway, &fresh.access_token).await,
        StatusCode::OK
    );
    gateway.revoke(&fresh.access_token).await;
    assert_eq!(
        status_at_mcp(&gateway, &fresh.access_token).await,
        StatusCode::UNAUTHORIZED
    );
}
on_both_backends!(revoked_and_expired_access_tokens_get_401);
