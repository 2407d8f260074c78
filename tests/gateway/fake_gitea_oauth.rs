//! The fake Gitea's OAuth2 provider, exercised directly over loopback HTTP,
//! so gateway tests can trust what it answers.

use crate::support;

use std::collections::BTreeMap;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;
use support::fake_gitea::{
    ADMIN_LOGIN, ADMIN_TOKEN, ALICE_LOGIN, FakeGitea, OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET,
    s256_challenge,
};

const CALLBACK: &str = "http://127.0.0.1:9/oauth/callback";
/// RFC 7636 appendix B's verifier and its S256 challenge.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
const SCOPE: &str = "read:user read:repository write:issue";

async fn start() -> (FakeGitea, reqwest::Client) {
    aegis_gitea_mcp::tls::install_crypto_provider();
    let fake = FakeGitea::start().await;
    fake.set_oauth_redirect_uri(CALLBACK);
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    (fake, http)
}

/// `GET /login/oauth/authorize` with our usual query, `changes` replacing
/// (or, with an empty value, removing) parameters.
async fn authorize(
    fake: &FakeGitea,
    http: &reqwest::Client,
    changes: &[(&str, &str)],
) -> reqwest::Response {
    let mut query: BTreeMap<&str, &str> = BTreeMap::from([
        ("client_id", OAUTH_CLIENT_ID),
        ("redirect_uri", CALLBACK),
        ("response_type", "code"),
        ("scope", SCOPE),
        ("state", "st-123"),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
    ]);
    for (k, v) in changes {
        if v.is_empty() {
            query.remove(k);
        } else {
            query.insert(k, v);
        }
    }
    http.get(format!("{}/login/oauth/authorize", fake.url))
        .query(&query)
        .send()
        .await
        .unwrap()
}

/// The 303's `Location`, and its query decoded.
fn redirect_of(response: &reqwest::Response) -> (String, BTreeMap<String, String>) {
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    let query = location.split_once('?').map_or("", |(_, q)| q);
    let params = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    (location, params)
}

/// Signs `login` in and returns a fresh authorization code.
async fn code_for(fake: &FakeGitea, http: &reqwest::Client, login: &str) -> String {
    fake.sign_in_as(login);
    let (_, params) = redirect_of(&authorize(fake, http, &[]).await);
    params["code"].clone()
}

/// `POST /login/oauth/access_token` with a form body.
async fn token(
    fake: &FakeGitea,
    http: &reqwest::Client,
    form: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> (StatusCode, HeaderMap, Value) {
    let mut request = http
        .post(format!("{}/login/oauth/access_token", fake.url))
        .form(form);
    if let Some((id, secret)) = basic {
        request = request.basic_auth(id, Some(secret));
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    (status, headers, response.json().await.unwrap())
}

async fn exchange(fake: &FakeGitea, http: &reqwest::Client, code: &str) -> Value {
    let (status, _, body) = token(
        fake,
        http,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
            ("client_id", OAUTH_CLIENT_ID),
            ("client_secret", OAUTH_CLIENT_SECRET),
        ],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

async fn refresh(
    fake: &FakeGitea,
    http: &reqwest::Client,
    refresh_token: &str,
) -> (StatusCode, Value) {
    let (status, _, body) = token(
        fake,
        http,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
        ],
        Some((OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET)),
    )
    .await;
    (status, body)
}

async fn api(
    fake: &FakeGitea,
    http: &reqwest::Client,
    path: &str,
    authorization: &str,
) -> (StatusCode, Value) {
    let response = http
        .get(format!("{}/api/v1{path}", fake.url))
        .header("authorization", authorization)
        .send()
        .await
        .unwrap();
    (response.status(), response.json().await.unwrap())
}

fn error_of(body: &Value) -> (&str, &str) {
    (
        body["error"].as_str().unwrap(),
        body["error_description"].as_str().unwrap(),
    )
}

#[test]
fn s256_matches_rfc_7636() {
    assert_eq!(s256_challenge(VERIFIER), CHALLENGE);
}

#[tokio::test]
async fn authorize_then_exchange_yields_tokens_that_act_as_the_user() {
    let (fake, http) = start().await;
    fake.sign_in_as(ALICE_LOGIN);
    let (location, params) = redirect_of(&authorize(&fake, &http, &[]).await);
    assert!(location.starts_with(&format!("{CALLBACK}?")), "{location}");
    assert_eq!(params["state"], "st-123");
    assert!(params["code"].starts_with("gta_"));
    let asked = fake.last_authorize_query().unwrap();
    assert_eq!(asked["scope"], SCOPE);
    assert_eq!(asked["code_challenge_method"], "S256");
    assert_eq!(asked["code_challenge"], CHALLENGE);

    let (status, headers, body) = token(
        &fake,
        &http,
        &[
            ("grant_type", "authorization_code"),
            ("code", &params["code"]),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
            ("client_id", OAUTH_CLIENT_ID),
            ("client_secret", OAUTH_CLIENT_SECRET),
        ],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(body["token_type"], "bearer");
    assert_eq!(body["expires_in"], 3600);
    let access = body["access_token"].as_str().unwrap();
    assert!(access.starts_with("gtoa_alice_"), "{access}");
    assert!(
        body["refresh_token"]
            .as_str()
            .unwrap()
            .starts_with("gtor_alice_")
    );
    assert_eq!(fake.token_requests("authorization_code"), 1);
    assert_eq!(
        fake.latest_access_token(ALICE_LOGIN).as_deref(),
        Some(access)
    );

    for scheme in ["Bearer", "token"] {
        let (status, user) = api(&fake, &http, "/user", &format!("{scheme} {access}")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(user["login"], ALICE_LOGIN);
        assert_eq!(user["is_admin"], false);
        assert_eq!(user["email"], "alice@example.org");
    }
    let (status, body) = api(&fake, &http, "/admin/users", &format!("Bearer {access}")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["message"], "user should be the site admin");
    // Everything was recorded, the token requests included.
    assert_eq!(fake.oauth_requests().len(), 2);
}

#[tokio::test]
async fn the_admin_signed_in_gets_admin_tokens() {
    let (fake, http) = start().await;
    let code = code_for(&fake, &http, ADMIN_LOGIN).await;
    let body = exchange(&fake, &http, &code).await;
    let bearer = format!("Bearer {}", body["access_token"].as_str().unwrap());
    let (status, user) = api(&fake, &http, "/user", &bearer).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (user["login"].as_str(), user["is_admin"].as_bool()),
        (Some(ADMIN_LOGIN), Some(true))
    );
    let (status, users) = api(&fake, &http, "/admin/users", &bearer).await;
    assert_eq!(status, StatusCode::OK);
    assert!(users.as_array().unwrap().len() >= 2);
    // The personal access token still works as before.
    let (status, user) = api(&fake, &http, "/user", &format!("token {ADMIN_TOKEN}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(user["login"], ADMIN_LOGIN);
}

#[tokio::test]
async fn a_non_admin_may_not_sudo() {
    let (fake, http) = start().await;
    let code = code_for(&fake, &http, ALICE_LOGIN).await;
    let access = exchange(&fake, &http, &code).await["access_token"].clone();
    let response = http
        .get(format!("{}/api/v1/repos/acme/app", fake.url))
        .bearer_auth(access.as_str().unwrap())
        .header("sudo", ADMIN_LOGIN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["message"], "Only administrators allowed to sudo.");
}

#[tokio::test]
async fn without_a_session_authorize_sends_the_browser_to_sign_in() {
    let (fake, http) = start().await;
    let (location, params) = redirect_of(&authorize(&fake, &http, &[]).await);
    assert!(
        location.starts_with("/user/login?redirect_to="),
        "{location}"
    );
    assert!(params["redirect_to"].starts_with("/login/oauth/authorize?"));
    // The request was still recorded for the test.
    assert_eq!(fake.last_authorize_query().unwrap()["state"], "st-123");
}

#[tokio::test]
async fn untrusted_client_or_redirect_gets_an_error_page_not_a_redirect() {
    let (fake, http) = start().await;
    fake.sign_in_as(ALICE_LOGIN);
    for changes in [
        [("client_id", "not-a-client")],
        [("redirect_uri", "http://127.0.0.1:9/elsewhere")],
    ] {
        let response = authorize(&fake, &http, &changes).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        assert!(response.headers().get("location").is_none());
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
    }
}

#[tokio::test]
async fn bad_response_type_challenge_method_and_denial_redirect_with_an_error() {
    let (fake, http) = start().await;
    fake.sign_in_as(ALICE_LOGIN);
    let cases: [(&[(&str, &str)], &str); 2] = [
        (&[("response_type", "token")], "unsupported_response_type"),
        (&[("code_challenge_method", "S512")], "invalid_request"),
    ];
    for (changes, error) in cases {
        let (_, params) = redirect_of(&authorize(&fake, &http, changes).await);
        assert_eq!(params["error"], error);
        assert_eq!(params["state"], "st-123");
        assert!(!params.contains_key("code"));
    }
    fake.deny_next_authorization();
    let (location, params) = redirect_of(&authorize(&fake, &http, &[]).await);
    assert!(location.starts_with(CALLBACK));
    assert_eq!(params["error"], "access_denied");
    assert_eq!(params["state"], "st-123");
    // Only the next one.
    let (_, params) = redirect_of(&authorize(&fake, &http, &[]).await);
    assert!(params.contains_key("code"));
}

#[tokio::test]
async fn client_authentication_by_form_or_basic_and_its_failures() {
    let (fake, http) = start().await;
    let code = code_for(&fake, &http, ALICE_LOGIN).await;
    let exchange_with = |secret_in_form: Option<&'static str>,
                         basic: Option<(&'static str, &'static str)>| {
        let (fake, http, code) = (&fake, &http, code.clone());
        async move {
            let mut form = vec![
                ("grant_type", "authorization_code".to_owned()),
                ("code", code),
                ("redirect_uri", CALLBACK.to_owned()),
                ("code_verifier", VERIFIER.to_owned()),
            ];
            if let Some(secret) = secret_in_form {
                form.push(("client_id", OAUTH_CLIENT_ID.to_owned()));
                form.push(("client_secret", secret.to_owned()));
            }
            let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
            token(fake, http, &form, basic).await
        }
    };
    // Gitea answers a wrong secret on a code exchange with unauthorized_client.
    let (status, _, body) = exchange_with(Some("gto_wrong"), None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error_of(&body),
        ("unauthorized_client", "invalid client secret")
    );
    let (status, _, body) = exchange_with(None, Some((OAUTH_CLIENT_ID, "gto_wrong"))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_of(&body).0, "unauthorized_client");
    let (status, _, body) = exchange_with(None, Some(("someone-else", OAUTH_CLIENT_SECRET))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_of(&body).0, "invalid_client");
    // Failures did not use the code up; HTTP Basic works.
    let (status, _, body) = exchange_with(None, Some((OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET))).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // On a refresh, a wrong secret is invalid_client.
    let (status, _, body) = token(
        &fake,
        &http,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", body["refresh_token"].as_str().unwrap()),
            ("client_id", OAUTH_CLIENT_ID),
            ("client_secret", "gto_wrong"),
        ],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_of(&body), ("invalid_client", "invalid client secret"));
}

#[tokio::test]
async fn pkce_redirect_uri_and_single_use_are_enforced() {
    let (fake, http) = start().await;
    let code = code_for(&fake, &http, ALICE_LOGIN).await;
    let attempt = |verifier: &'static str, redirect_uri: &'static str| {
        let (fake, http, code) = (&fake, &http, code.clone());
        async move {
            let mut form = vec![
                ("grant_type", "authorization_code"),
                ("code", code.as_str()),
                ("client_id", OAUTH_CLIENT_ID),
                ("client_secret", OAUTH_CLIENT_SECRET),
            ];
            if !verifier.is_empty() {
                form.push(("code_verifier", verifier));
            }
            if !redirect_uri.is_empty() {
                form.push(("redirect_uri", redirect_uri));
            }
            let (status, _, body) = token(fake, http, &form, None).await;
            (status, body)
        }
    };
    let wrong_verifier = "wrong-verifier-wrong-verifier-wrong-verifier-0";
    for verifier in [wrong_verifier, ""] {
        let (status, body) = attempt(verifier, CALLBACK).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            error_of(&body),
            ("unauthorized_client", "failed PKCE code challenge")
        );
    }
    let (status, body) = attempt(VERIFIER, "http://127.0.0.1:9/elsewhere").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error_of(&body),
        ("unauthorized_client", "unexpected redirect URI")
    );
    // Registered, but not the one the code was issued for (or none at all).
    fake.add_oauth_redirect_uri("http://127.0.0.1:9/other");
    for redirect_uri in ["http://127.0.0.1:9/other", ""] {
        let (status, body) = attempt(VERIFIER, redirect_uri).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(error_of(&body).0, "invalid_grant");
    }
    let (status, body) = attempt(VERIFIER, CALLBACK).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Replayed: the code is gone.
    let (status, body) = attempt(VERIFIER, CALLBACK).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error_of(&body),
        ("unauthorized_client", "client is not authorized")
    );
    assert_eq!(fake.token_requests("authorization_code"), 7);
}

#[tokio::test]
async fn refresh_mints_new_tokens_and_old_refresh_tokens_stay_valid() {
    let (fake, http) = start().await;
    let code = code_for(&fake, &http, ALICE_LOGIN).await;
    let first = exchange(&fake, &http, &code).await;
    let first_refresh = first["refresh_token"].as_str().unwrap();
    let (status, second) = refresh(&fake, &http, first_refresh).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_ne!(second["access_token"], first["access_token"]);
    assert_ne!(second["refresh_token"], first["refresh_token"]);
    let (status, user) = api(
        &fake,
        &http,
        "/user",
        &format!("Bearer {}", second["access_token"].as_str().unwrap()),
    )
    .await;
    assert_eq!(
        (status, user["login"].as_str()),
        (StatusCode::OK, Some(ALICE_LOGIN))
    );
    // Gitea's default: the old refresh token still works...
    let (status, _) = refresh(&fake, &http, first_refresh).await;
    assert_eq!(status, StatusCode::OK);
    // ...unless INVALIDATE_REFRESH_TOKENS is on: then each use retires it.
    fake.set_invalidate_refresh_tokens(true);
    let second_refresh = second["refresh_token"].as_str().unwrap();
    let (status, third) = refresh(&fake, &http, second_refresh).await;
    assert_eq!(status, StatusCode::OK, "{third}");
    let (status, body) = refresh(&fake, &http, second_refresh).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        error_of(&body),
        ("unauthorized_client", "token was already used")
    );
    let (status, _) = refresh(&fake, &http, third["refresh_token"].as_str().unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(fake.token_requests("refresh_token"), 5);
}

#[tokio::test]
async fn expiry_revocation_and_injected_failures() {
    let (fake, http) = start().await;
    let code = code_for(&fake, &http, ALICE_LOGIN).await;
    let tokens = exchange(&fake, &http, &code).await;
    let bearer = format!("Bearer {}", tokens["access_token"].as_str().unwrap());
    let refresh_token = tokens["refresh_token"].as_str().unwrap();

    fake.expire_access_tokens();
    let (status, body) = api(&fake, &http, "/user", &bearer).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["message"], "token is required");

    fake.fail_next_refresh_with("invalid_grant");
    let (status, body) = refresh(&fake, &http, refresh_token).await;
    assert_eq!(
        (status, error_of(&body).0),
        (StatusCode::BAD_REQUEST, "invalid_grant")
    );
    let (status, renewed) = refresh(&fake, &http, refresh_token).await;
    assert_eq!(status, StatusCode::OK, "only the next refresh fails");

    fake.revoke_refresh_tokens();
    for old in [refresh_token, renewed["refresh_token"].as_str().unwrap()] {
        let (status, body) = refresh(&fake, &http, old).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(error_of(&body), ("invalid_grant", "grant does not exist"));
    }
    let (status, body) = refresh(&fake, &http, "gtor_alice_made-up").await;
    assert_eq!(
        (status, error_of(&body).0),
        (StatusCode::BAD_REQUEST, "unauthorized_client")
    );

    // Lifetime 0: minted already expired.
    fake.set_access_token_lifetime(0);
    let code = code_for(&fake, &http, ALICE_LOGIN).await;
    let tokens = exchange(&fake, &http, &code).await;
    assert_eq!(tokens["expires_in"], 0);
    let bearer = format!("Bearer {}", tokens["access_token"].as_str().unwrap());
    assert_eq!(
        api(&fake, &http, "/user", &bearer).await.0,
        StatusCode::UNAUTHORIZED
    );

    // Revoking the grant kills live access tokens too.
    fake.set_access_token_lifetime(3600);
    let code = code_for(&fake, &http, ALICE_LOGIN).await;
    let tokens = exchange(&fake, &http, &code).await;
    let bearer = format!("Bearer {}", tokens["access_token"].as_str().unwrap());
    assert_eq!(api(&fake, &http, "/user", &bearer).await.0, StatusCode::OK);
    fake.revoke_grant(ALICE_LOGIN);
    assert_eq!(
        api(&fake, &http, "/user", &bearer).await.0,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn the_token_endpoint_takes_forms_and_two_grant_types_only() {
    let (fake, http) = start().await;
    let response = http
        .post(format!("{}/login/oauth/access_token", fake.url))
        .json(&serde_json::json!({"grant_type": "refresh_token", "refresh_token": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "invalid_request");

    let (status, headers, body) = token(
        &fake,
        &http,
        &[("grant_type", "client_credentials")],
        Some((OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET)),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(error_of(&body).0, "unsupported_grant_type");
    assert_eq!(fake.token_requests("client_credentials"), 1);
}
