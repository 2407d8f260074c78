//! Discovery documents and the `/mcp` challenge (#1, #34), pinned as
//! snapshots.

use reqwest::StatusCode;
use reqwest::header::WWW_AUTHENTICATE;
use serde_json::{Value, json};

use crate::{OAuthGateway, normalised, normalised_text, on_both_backends};

async fn get_json(gateway: &OAuthGateway, path: &str) -> Value {
    let response = gateway
        .http
        .get(format!("{}{path}", gateway.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK, "{path}");
    response.json().await.unwrap()
}

/// #1: issuer exactly `PUBLIC_BASE_URL`, endpoints at root paths.
async fn authorization_server_metadata_is_pinned(gateway: OAuthGateway) {
    let document = get_json(&gateway, "/.well-known/oauth-authorization-server").await;
    assert_eq!(document["issuer"], gateway.url.as_str());
    let alias = get_json(&gateway, "/.well-known/oauth-authorization-server/mcp").await;
    assert_eq!(document, alias);
    insta::assert_json_snapshot!(
        "authorization_server_metadata",
        normalised(&gateway, &document)
    );
}
on_both_backends!(authorization_server_metadata_is_pinned);

async fn protected_resource_metadata_is_pinned(gateway: OAuthGateway) {
    let document = get_json(&gateway, "/.well-known/oauth-protected-resource/mcp").await;
    assert_eq!(document["resource"], format!("{}/mcp", gateway.url));
    let root = get_json(&gateway, "/.well-known/oauth-protected-resource").await;
    assert_eq!(document, root);
    insta::assert_json_snapshot!(
        "protected_resource_metadata",
        normalised(&gateway, &document)
    );
}
on_both_backends!(protected_resource_metadata_is_pinned);

/// #34: the 401 names the absolute metadata URL and the scope.
async fn unauthenticated_mcp_gets_the_resource_metadata_challenge(gateway: OAuthGateway) {
    let response = gateway
        .http
        .post(gateway.mcp_url())
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let challenge = response.headers()[WWW_AUTHENTICATE].to_str().unwrap();
    insta::assert_snapshot!(
        "challenge_without_token",
        normalised_text(&gateway, challenge)
    );
    let with_bad_token = gateway
        .http
        .post(gateway.mcp_url())
        .bearer_auth("agm_not-a-token")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(with_bad_token.status(), StatusCode::UNAUTHORIZED);
    let challenge = with_bad_token.headers()[WWW_AUTHENTICATE].to_str().unwrap();
    insta::assert_snapshot!(
        "challenge_with_invalid_token",
        normalised_text(&gateway, challenge)
    );
}
on_both_backends!(unauthenticated_mcp_gets_the_resource_metadata_challenge);

/// #34: a token in the query string is refused, even a valid one.
async fn a_token_in_the_query_string_is_refused(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    let response = gateway
        .http
        .post(format!(
            "{}?access_token={}",
            gateway.mcp_url(),
            tokens.access_token
        ))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(
        response.headers()[WWW_AUTHENTICATE]
            .to_str()
            .unwrap()
            .contains(r#"error="invalid_request""#)
    );
}
on_both_backends!(a_token_in_the_query_string_is_refused);

/// Browser-based clients (MCP Inspector) need CORS on the OAuth API.
async fn oauth_api_routes_answer_cors_preflights(gateway: OAuthGateway) {
    for path in [
        "/token",
        "/register",
        "/revoke",
        "/.well-known/oauth-authorization-server",
    ] {
        let response = gateway
            .http
            .request(reqwest::Method::OPTIONS, format!("{}{path}", gateway.url))
            .header("origin", "http://localhost:6274")
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "content-type")
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{path}");
        assert_eq!(
            response.headers()["access-control-allow-origin"],
            "*",
            "{path}"
        );
    }
}
on_both_backends!(oauth_api_routes_answer_cors_preflights);
