//! Client ID Metadata Documents: a URL `client_id` is fetched, checked and
//! its redirect URIs govern; private addresses, oversized documents,
//! mismatched ids and redirects are refused.

use axum::Router;
use axum::http::{StatusCode as AxumStatus, header};
use axum::response::IntoResponse;
use axum::routing::get;
use reqwest::StatusCode;
use reqwest::header::LOCATION;
use serde_json::json;

use crate::{
    Backend, Browser, CLIENT_REDIRECT, OAuthGateway, Pkce, TestClient, on_both_backends, run,
};

/// Serves metadata documents on loopback; returns the base URL.
async fn document_server() -> String {
    document_server_on("127.0.0.1:0").await
}

/// Serves metadata documents on `bind`; returns the base URL.
async fn document_server_on(bind: &str) -> String {
    let listener = tokio::net::TcpListener::bind(bind).await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let b = base.clone();
    let app = Router::new()
        .route(
            "/good.json",
            get({
                let b = b.clone();
                move || async move {
                    axum::Json(json!({
                        "client_id": format!("{b}/good.json"),
                        "client_name": "Metadata Client",
                        "redirect_uris": [CLIENT_REDIRECT],
                        "token_endpoint_auth_method": "none",
                    }))
                }
            }),
        )
        .route(
            "/mismatch.json",
            get(|| async {
                axum::Json(json!({
                    "client_id": "https://someone-else.example/client.json",
                    "redirect_uris": [CLIENT_REDIRECT],
                }))
            }),
        )
        .route(
            "/big.json",
            get({
                let b = b.clone();
                move || async move {
                    axum::Json(json!({
                        "client_id": format!("{b}/big.json"),
                        "redirect_uris": [CLIENT_REDIRECT],
                        "client_uri": "x".repeat(6 * 1024),
                    }))
                }
            }),
        )
        .route(
            "/moved.json",
            get(|| async {
                (AxumStatus::FOUND, [(header::LOCATION, "/good.json")]).into_response()
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

fn metadata_client(client_id: String) -> TestClient {
    TestClient {
        client_id,
        client_secret: None,
        redirect_uri: CLIENT_REDIRECT.into(),
    }
}

/// The consent page `client` gets from a fresh browser.
async fn consent_html(gateway: &OAuthGateway, client: &TestClient) -> String {
    gateway
        .consent_page(
            &mut Browser::default(),
            &gateway.authorize_params(client, &Pkce::new(), "st-1"),
        )
        .await
        .html
}

const TEST_SETTING: (&str, &str) = ("OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES", "true");

async fn a_metadata_document_client_signs_in(gateway: OAuthGateway) {
    let base = document_server().await;
    let client = metadata_client(format!("{base}/good.json"));
    assert!(
        consent_html(&gateway, &client)
            .await
            .contains("Metadata Client")
    );
    let tokens = gateway.tokens(&client, "alice").await;
    assert!(tokens.access_token.starts_with("agm_"));
}
on_both_backends!(a_metadata_document_client_signs_in, TEST_SETTING);

/// F15: a document on an IPv6 literal host is fetched from that address
/// (it used to be looked up as a name, with its brackets, and never found).
async fn a_metadata_document_on_an_ipv6_literal_is_fetched(gateway: OAuthGateway) {
    let base = document_server_on("[::1]:0").await;
    assert!(base.starts_with("http://[::1]:"), "{base}");
    let client = metadata_client(format!("{base}/good.json"));
    assert!(
        consent_html(&gateway, &client)
            .await
            .contains("Metadata Client")
    );
}
on_both_backends!(
    a_metadata_document_on_an_ipv6_literal_is_fetched,
    TEST_SETTING
);

async fn refused_document(gateway: &OAuthGateway, client_id: String) {
    let client = metadata_client(client_id);
    let response = gateway
        .authorize_fresh(&gateway.authorize_params(&client, &Pkce::new(), "st-1"))
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(response.headers().get(LOCATION).is_none());
}

async fn bad_documents_are_refused(gateway: OAuthGateway) {
    let base = document_server().await;
    for path in ["mismatch.json", "big.json", "moved.json", "missing.json"] {
        refused_document(&gateway, format!("{base}/{path}")).await;
    }
}
on_both_backends!(bad_documents_are_refused, TEST_SETTING);

/// Without the test setting, loopback and private addresses are refused
/// before anything is fetched (SSRF).
#[tokio::test]
async fn private_addresses_are_refused_without_the_test_setting() {
    run(Backend::Sqlite, &[], |gateway| async move {
        for client_id in [
            "https://127.0.0.1:9/client.json",
            "https://10.0.0.1/client.json",
            "https://169.254.169.254/latest/meta-data",
            "https://[::1]/client.json",
            "http://example.com/client.json",
        ] {
            refused_document(&gateway, client_id.to_owned()).await;
        }
    })
    .await;
}
