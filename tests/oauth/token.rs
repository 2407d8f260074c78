//! `/token`, authorization-code grant: client authentication, PKCE, the
//! redirect URI and resource bound to the code, single use, expiry, and the
//! response format.

use base64::Engine;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::{
    CLIENT_REDIRECT, OAuthGateway, Pkce, TestClient, on_both_backends, param, tokens_from,
};

/// A fresh code for `client` as alice, with its PKCE pair.
async fn code_for(gateway: &OAuthGateway, client: &TestClient) -> (String, Pkce) {
    let pkce = Pkce::new();
    let to_client = gateway.sign_in(client, &pkce, "alice").await;
    (param(&to_client, "code").unwrap(), pkce)
}

async fn error_of(response: reqwest::Response) -> (StatusCode, String) {
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    (
        status,
        body["error"].as_str().unwrap_or_default().to_owned(),
    )
}

/// #19: 200, JSON, `no-store`; pinned.
async fn the_token_response_is_pinned(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let (code, pkce) = code_for(&gateway, &client).await;
    let response = gateway.redeem(&client, &code, &pkce).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["cache-control"], "no-store");
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let tokens = tokens_from(response).await;
    assert!(tokens.access_token.starts_with("agm_"));
    assert!(tokens.refresh_token.starts_with("agm_"));
    let mut body = tokens.body;
    body["access_token"] = json!("[access_token]");
    body["refresh_token"] = json!("[refresh_token]");
    insta::assert_json_snapshot!("token_response", body);
}
on_both_backends!(the_token_response_is_pinned);

/// #7
async fn the_redirect_uri_must_equal_the_authorize_requests(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let (code, pkce) = code_for(&gateway, &client).await;
    let response = gateway
        .token_raw(
            &client,
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", "http://127.0.0.1:5599/other"),
                ("code_verifier", &pkce.verifier),
            ],
        )
        .await;
    assert_eq!(
        error_of(response).await,
        (StatusCode::BAD_REQUEST, "invalid_grant".into())
    );
}
on_both_backends!(the_redirect_uri_must_equal_the_authorize_requests);

/// #12, #13, #14: grammar, mismatch and absence of the verifier.
async fn a_wrong_malformed_or_missing_verifier_is_invalid_grant(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let short = "a".repeat(42);
    let with_space = format!("{} ", "a".repeat(43));
    let other = Pkce::new().verifier;
    for verifier in [
        Some(short.as_str()),
        Some(with_space.as_str()),
        Some(other.as_str()),
        None,
    ] {
        let (code, _) = code_for(&gateway, &client).await;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", CLIENT_REDIRECT),
        ];
        if let Some(v) = verifier {
            form.push(("code_verifier", v));
        }
        let response = gateway.token_raw(&client, &form).await;
        assert_eq!(
            error_of(response).await,
            (StatusCode::BAD_REQUEST, "invalid_grant".into()),
            "{verifier:?}"
        );
    }
}
on_both_backends!(a_wrong_malformed_or_missing_verifier_is_invalid_grant);

/// #16: a replayed code fails and revokes the tokens of the first redemption.
async fn a_replayed_code_revokes_the_first_tokens(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let (code, pkce) = code_for(&gateway, &client).await;
    let first = tokens_from(gateway.redeem(&client, &code, &pkce).await).await;
    let (status, _) = gateway
        .call_tool(&first.access_token, "gitea_user_get_current", json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let replay = gateway.redeem(&client, &code, &pkce).await;
    assert_eq!(
        error_of(replay).await,
        (StatusCode::BAD_REQUEST, "invalid_grant".into())
    );
    let (status, _) = gateway
        .call_tool(&first.access_token, "gitea_user_get_current", json!({}))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let refresh = gateway.refresh(&client, &first.refresh_token).await;
    assert_eq!(error_of(refresh).await.1, "invalid_grant");
}
on_both_backends!(a_replayed_code_revokes_the_first_tokens);

/// #17
async fn an_expired_code_is_invalid_grant(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let (code, pkce) = code_for(&gateway, &client).await;
    gateway.clock.advance(301);
    let response = gateway.redeem(&client, &code, &pkce).await;
    assert_eq!(
        error_of(response).await,
        (StatusCode::BAD_REQUEST, "invalid_grant".into())
    );
}
on_both_backends!(an_expired_code_is_invalid_grant);

/// #18
async fn a_code_is_bound_to_its_client(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let other = gateway.public_client().await;
    let (code, pkce) = code_for(&gateway, &client).await;
    let response = gateway.redeem(&other, &code, &pkce).await;
    assert_eq!(
        error_of(response).await,
        (StatusCode::BAD_REQUEST, "invalid_grant".into())
    );
    // The spent code is dead for its own client too.
    let response = gateway.redeem(&client, &code, &pkce).await;
    assert_eq!(error_of(response).await.1, "invalid_grant");
}
on_both_backends!(a_code_is_bound_to_its_client);

/// #20, and both secret transports work for a confidential client.
async fn client_secrets_are_checked(gateway: OAuthGateway) {
    let client = gateway
        .register("client_secret_basic", CLIENT_REDIRECT)
        .await;
    let (code, pkce) = code_for(&gateway, &client).await;
    let mut wrong = client.clone();
    wrong.client_secret = Some("not-the-secret".into());
    let response = gateway.redeem(&wrong, &code, &pkce).await;
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body: Value = response.json().await.unwrap();
    insta::assert_json_snapshot!("token_error_invalid_client", body);
    // The code was not spent by a failed authentication.
    let secret = client.client_secret.clone().unwrap();
    let basic = base64::engine::general_purpose::STANDARD
        .encode(format!("{}:{}", client.client_id, secret));
    let response = gateway
        .http
        .post(format!("{}/token", gateway.url))
        .header("authorization", format!("Basic {basic}"))
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", CLIENT_REDIRECT),
            ("code_verifier", pkce.verifier.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    // A confidential client without its secret.
    let mut public_claim = client.clone();
    public_claim.client_secret = None;
    let (code, pkce) = code_for(&gateway, &client).await;
    let response = gateway.redeem(&public_claim, &code, &pkce).await;
    assert_eq!(
        error_of(response).await,
        (StatusCode::UNAUTHORIZED, "invalid_client".into())
    );
}
on_both_backends!(client_secrets_are_checked);

async fn token_errors_are_pinned(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let response = gateway
        .token_raw(
            &client,
            &[
                ("grant_type", "authorization_code"),
                ("code", "agm_unknown"),
            ],
        )
        .await;
    let body: Value = response.json().await.unwrap();
    insta::assert_json_snapshot!("token_error_invalid_grant", body);
    let response = gateway
        .token_raw(&client, &[("grant_type", "password")])
        .await;
    let body: Value = response.json().await.unwrap();
    insta::assert_json_snapshot!("token_error_unsupported_grant_type", body);
    let response = gateway
        .http
        .post(format!("{}/token", gateway.url))
        .json(&json!({"grant_type": "authorization_code"}))
        .send()
        .await
        .unwrap();
    let body: Value = response.json().await.unwrap();
    insta::assert_json_snapshot!("token_error_not_a_form", body);
}
on_both_backends!(token_errors_are_pinned);

/// #28 (token side)
async fn a_foreign_resource_at_the_token_endpoint_is_invalid_target(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let (code, pkce) = code_for(&gateway, &client).await;
    let response = gateway
        .token_raw(
            &client,
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", CLIENT_REDIRECT),
                ("code_verifier", &pkce.verifier),
                ("resource", "https://other.example/mcp"),
            ],
        )
        .await;
    assert_eq!(
        error_of(response).await,
        (StatusCode::BAD_REQUEST, "invalid_target".into())
    );
}
on_both_backends!(a_foreign_resource_at_the_token_endpoint_is_invalid_target);

async fn duplicate_token_parameters_are_refused(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let (code, pkce) = code_for(&gateway, &client).await;
    let response = gateway
        .token_raw(
            &client,
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("code", &code),
                ("redirect_uri", CLIENT_REDIRECT),
                ("code_verifier", &pkce.verifier),
            ],
        )
        .await;
    assert_eq!(
        error_of(response).await,
        (StatusCode::BAD_REQUEST, "invalid_request".into())
    );
}
on_both_backends!(duplicate_token_parameters_are_refused);

/// Registers a public client with exactly `grant_types` (`None`: the field
/// left out); returns the client and the registration answer.
async fn client_with_grant_types(
    gateway: &OAuthGateway,
    grant_types: Option<&[&str]>,
) -> (TestClient, Value) {
    let mut body = json!({
        "client_name": "Grant types",
        "redirect_uris": [CLIENT_REDIRECT],
        "token_endpoint_auth_method": "none",
    });
    if let Some(types) = grant_types {
        body["grant_types"] = json!(types);
    }
    let (status, answer) = gateway.register_raw(body).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let client = TestClient {
        client_id: answer["client_id"].as_str().unwrap().to_owned(),
        client_secret: None,
        redirect_uri: CLIENT_REDIRECT.to_owned(),
    };
    (client, answer)
}

/// F12: a client registered for `authorization_code` alone gets no refresh
/// token and cannot use the refresh grant.
async fn a_client_without_the_refresh_grant_cannot_refresh(gateway: OAuthGateway) {
    let (client, answer) = client_with_grant_types(&gateway, Some(&["authorization_code"])).await;
    assert_eq!(answer["grant_types"], json!(["authorization_code"]));
    let (code, pkce) = code_for(&gateway, &client).await;
    let response = gateway.redeem(&client, &code, &pkce).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.unwrap();
    assert!(body["access_token"].is_string());
    assert!(body.get("refresh_token").is_none(), "{body}");
    let response = gateway.refresh(&client, "agm_any_refresh_token").await;
    assert_eq!(
        error_of(response).await,
        (StatusCode::BAD_REQUEST, "unauthorized_client".to_owned())
    );
}
on_both_backends!(a_client_without_the_refresh_grant_cannot_refresh);

/// F12: a registration that leaves `grant_types` out (Le Chat's shape) is
/// registered and answered with both grants, and can refresh.
async fn a_registration_without_grant_types_can_refresh(gateway: OAuthGateway) {
    let (client, answer) = client_with_grant_types(&gateway, None).await;
    assert_eq!(
        answer["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );
    let (code, pkce) = code_for(&gateway, &client).await;
    let tokens = tokens_from(gateway.redeem(&client, &code, &pkce).await).await;
    let response = gateway.refresh(&client, &tokens.refresh_token).await;
    assert_eq!(response.status(), StatusCode::OK);
}
on_both_backends!(a_registration_without_grant_types_can_refresh);

/// A registration whose grants cannot start at `/authorize` is refused.
async fn a_registration_without_the_code_grant_is_refused(gateway: OAuthGateway) {
    let (status, body) = gateway
        .register_raw(json!({
            "redirect_uris": [CLIENT_REDIRECT],
            "token_endpoint_auth_method": "none",
            "grant_types": ["refresh_token"],
        }))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"], "invalid_client_metadata");
}
on_both_backends!(a_registration_without_the_code_grant_is_refused);
