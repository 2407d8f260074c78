//! Dynamic client registration (RFC 7591): secrets per auth method, the
//! echoed metadata, the redirect rules and the allowlist, the client cap.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::{CLIENT_REDIRECT, OAuthGateway, Pkce, TestClient, normalised, on_both_backends, param};

async fn registration_response_is_pinned(gateway: OAuthGateway) {
    let (status, mut body) = gateway
        .register_raw(json!({
            "client_name": "Claude",
            "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"],
            "token_endpoint_auth_method": "client_secret_post",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "scope": "gitea",
            "application_type": "web",
            "x_unknown": {"ignored": true},
        }))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    assert!(body["client_secret"].as_str().unwrap().len() >= 43);
    for dynamic in ["client_id", "client_secret", "client_id_issued_at"] {
        body[dynamic] = json!(format!("[{dynamic}]"));
    }
    insta::assert_json_snapshot!("registration_response", normalised(&gateway, &body));
}
on_both_backends!(registration_response_is_pinned);

async fn secret_methods_get_a_secret_and_none_gets_none(gateway: OAuthGateway) {
    for (method, expects_secret) in [
        ("client_secret_post", true),
        ("client_secret_basic", true),
        ("none", false),
    ] {
        let client = gateway.register(method, CLIENT_REDIRECT).await;
        assert_eq!(client.client_secret.is_some(), expects_secret, "{method}");
    }
    // RFC 7591 §2: an absent method means client_secret_basic.
    let (_, body) = gateway
        .register_raw(json!({"redirect_uris": [CLIENT_REDIRECT]}))
        .await;
    assert_eq!(body["token_endpoint_auth_method"], "client_secret_basic");
    assert!(body["client_secret"].is_string());
    assert_eq!(body["client_secret_expires_at"], 0);
}
on_both_backends!(secret_methods_get_a_secret_and_none_gets_none);

async fn insecure_or_malformed_redirect_uris_are_refused(gateway: OAuthGateway) {
    for uri in [
        "http://example.com/cb",
        "https://user:pw@example.com/cb",
        "https://example.com/cb#fragment",
        "javascript:alert(1)",
        "not a uri",
    ] {
        let (status, body) = gateway
            .register_raw(json!({"redirect_uris": [uri], "token_endpoint_auth_method": "none"}))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}");
        assert_eq!(body["error"], "invalid_redirect_uri", "{uri}");
    }
}
on_both_backends!(insecure_or_malformed_redirect_uris_are_refused);

async fn registration_errors_are_pinned(gateway: OAuthGateway) {
    let (status, body) = gateway
        .register_raw(json!({"redirect_uris": ["http://example.com/cb"]}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    insta::assert_json_snapshot!("registration_error_redirect_uri", body);
    let (status, body) = gateway
        .register_raw(
            json!({"redirect_uris": [CLIENT_REDIRECT], "client_name": "x".repeat(10_000)}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    insta::assert_json_snapshot!("registration_error_metadata", body);
}
on_both_backends!(registration_errors_are_pinned);

async fn the_allowlist_governs_registration(gateway: OAuthGateway) {
    let (status, _) = gateway
        .register_raw(json!({"redirect_uris": ["https://claude.ai/api/mcp/auth_callback"], "token_endpoint_auth_method": "none"}))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, body) = gateway
        .register_raw(json!({"redirect_uris": ["https://evil.example/cb"], "token_endpoint_auth_method": "none"}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["error"], "invalid_redirect_uri");
}
on_both_backends!(
    the_allowlist_governs_registration,
    ("OAUTH_REDIRECT_ALLOWLIST", "https://claude.ai/")
);

/// At `OAUTH_MAX_CLIENTS` clients, registration answers 503
/// `temporarily_unavailable`; registrations no sign-in used are removed an
/// hour after they were made, and make room.
async fn registration_stops_at_the_client_cap(gateway: OAuthGateway) {
    for _ in 0..50 {
        gateway.register("none", CLIENT_REDIRECT).await;
    }
    let (status, body) = gateway
        .register_raw(
            json!({"redirect_uris": [CLIENT_REDIRECT], "token_endpoint_auth_method": "none"}),
        )
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["error"], "temporarily_unavailable");
    // An hour later the never-used clients are gone.
    gateway.clock.advance(3600 + 1);
    let (status, _) = gateway
        .register_raw(
            json!({"redirect_uris": [CLIENT_REDIRECT], "token_endpoint_auth_method": "none"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
}
on_both_backends!(
    registration_stops_at_the_client_cap,
    ("OAUTH_MAX_CLIENTS", "50")
);

async fn registration_needs_a_json_body(gateway: OAuthGateway) {
    let response = gateway
        .http
        .post(format!("{}/register", gateway.url))
        .body("redirect_uris=x")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let big = gateway
        .http
        .post(format!("{}/register", gateway.url))
        .header("content-type", "application/json")
        .body(vec![b' '; 70 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), StatusCode::PAYLOAD_TOO_LARGE);
}
on_both_backends!(registration_needs_a_json_body);

/// F5: schemes that browsers and operating systems hand to a local
/// program (a diagnostics tool, a file search, an SMB share, the browser's
/// own pages) are refused; a private-use scheme of an MCP client is not.
async fn scheme_handlers_of_the_os_and_browser_are_refused(gateway: OAuthGateway) {
    for uri in [
        "ms-msdt:/id PCWDiagnostic",
        "ms-msdt:id",
        "search-ms:query=x",
        "smb://attacker.example/share",
        "view-source:https://example.com",
        "intent://scan/#Intent;scheme=zxing;end",
        "intent://scan/",
        "jar:https://example.com/x.jar!/",
        "chrome://settings",
        "ms-officecmd:x",
        "ms-word:ofe|u|https://x",
        "itms-services://?action=download-manifest",
        "mailto:a@example.com",
    ] {
        let (status, body) = gateway
            .register_raw(json!({"redirect_uris": [uri], "token_endpoint_auth_method": "none"}))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}");
        assert_eq!(body["error"], "invalid_redirect_uri", "{uri}");
    }
    let (status, body) = gateway
        .register_raw(json!({"redirect_uris": ["cursor://anysphere.cursor-mcp/oauth/callback"], "token_endpoint_auth_method": "none"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}
on_both_backends!(scheme_handlers_of_the_os_and_browser_are_refused);

/// Registers from `address` (through the trusted loopback proxy).
async fn register_from(gateway: &OAuthGateway, address: &str) -> (StatusCode, Value) {
    let response = gateway
        .http
        .post(format!("{}/register", gateway.url))
        .header("x-forwarded-for", address)
        .json(&json!({"redirect_uris": [CLIENT_REDIRECT], "token_endpoint_auth_method": "none"}))
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// F4: 40 addresses of one network get the network's allowance of unused
/// registrations between them; the rest is a clear, temporary refusal, and
/// another network is unaffected.
async fn one_network_cannot_fill_the_client_table(gateway: OAuthGateway) {
    let mut created = 0;
    let mut refused = Vec::new();
    for host in 1..=40 {
        let (status, body) = register_from(&gateway, &format!("203.0.113.{host}")).await;
        match status {
            StatusCode::CREATED => created += 1,
            _ => refused.push((status, body)),
        }
    }
    assert_eq!(created, 32);
    assert_eq!(refused.len(), 8);
    for (status, body) in &refused {
        assert_eq!(*status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body["error"], "temporarily_unavailable");
        assert!(
            body["error_description"]
                .as_str()
                .unwrap()
                .contains("within an hour"),
            "{body}"
        );
    }
    let (status, body) = register_from(&gateway, "198.51.100.7").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}
on_both_backends!(
    one_network_cannot_fill_the_client_table,
    ("FORWARDED_ALLOW_IPS", "127.0.0.1")
);

/// claude.ai's callback, as its connector registers it.
const CLAUDE_CALLBACK: &str = "https://claude.ai/api/mcp/auth_callback";

/// Issue 43: a team adds a hosted connector on its first morning. claude.ai
/// registers from its back end (160.79.104.0/21; here one /24 of it), twice
/// per connect with the same metadata, and uses only the second
/// registration; each person's browser comes from their own address. With
/// the default rate limits behind a trusted proxy, 200 connects within an
/// hour all end with tokens that call a tool.
async fn two_hundred_hosted_connects_in_an_hour_all_succeed(mut gateway: OAuthGateway) {
    let vendor = gateway.http.clone();
    let registration = json!({
        "client_name": "Claude",
        "redirect_uris": [CLAUDE_CALLBACK],
        "token_endpoint_auth_method": "client_secret_post",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
    });
    for connect in 0..200u32 {
        let egress = format!("160.79.104.{}", 1 + connect % 40);
        let mut registered = Vec::new();
        for _ in 0..2 {
            let response = vendor
                .post(format!("{}/register", gateway.url))
                .header("x-forwarded-for", &egress)
                .json(&registration)
                .send()
                .await
                .unwrap();
            let status = response.status();
            let body: Value = response.json().await.unwrap_or(Value::Null);
            assert_eq!(status, StatusCode::CREATED, "connect {connect}: {body}");
            registered.push(body);
        }
        let used = &registered[1];
        let client = TestClient {
            client_id: used["client_id"].as_str().unwrap().to_owned(),
            client_secret: used["client_secret"].as_str().map(str::to_owned),
            redirect_uri: CLAUDE_CALLBACK.to_owned(),
        };
        gateway.http = from_address(&format!(
            "198.51.{}.{}",
            100 + connect / 200,
            1 + connect % 200
        ));
        // Each connect is a person of the team.
        let login = format!("person-{}", connect + 1);
        let login = login.as_str();
        let tokens = gateway.tokens(&client, login).await;
        let (status, result) = gateway
            .call_tool(&tokens.access_token, "gitea_user_get_current", json!({}))
            .await;
        assert_eq!(status, StatusCode::OK, "connect {connect}: {result}");
        assert_eq!(result["identity"]["login"], login, "{result}");
        gateway.http = vendor.clone();
        gateway.clock.advance(18);
    }
}
on_both_backends!(
    two_hundred_hosted_connects_in_an_hour_all_succeed,
    ("FORWARDED_ALLOW_IPS", "127.0.0.1"),
    ("RATE_LIMIT_SIGN_INS_PER_IP", "")
);

/// The red team's F1 (issue 53): one account, from one network, registers
/// and signs in with client after client to fill a small table. It is
/// stopped at its limit of new clients an hour (a `registration_limited`
/// entry names it), its later registrations stay unused and stop at the
/// network's allowance, and claude.ai's network then connects.
async fn one_account_cannot_fill_the_client_table(mut gateway: OAuthGateway) {
    let vendor = gateway.http.clone();
    gateway.http = from_address("203.0.113.9");
    let mut signed_in = 0;
    let mut limited = 0;
    for _ in 0..60 {
        let (status, body) = register_from(&gateway, "203.0.113.9").await;
        if status != StatusCode::CREATED {
            continue;
        }
        let client = TestClient {
            client_id: body["client_id"].as_str().unwrap().to_owned(),
            client_secret: None,
            redirect_uri: CLIENT_REDIRECT.to_owned(),
        };
        let to_client = gateway.sign_in(&client, &Pkce::new(), "bob").await;
        match param(&to_client, "error").as_deref() {
            None => signed_in += 1,
            Some("temporarily_unavailable") => limited += 1,
            Some(other) => panic!("{other}: {to_client}"),
        }
    }
    assert_eq!(signed_in, 10, "stopped at its limit");
    assert!(limited > 0);
    let entries = gateway.audit_events("registration_limited");
    assert_eq!(entries.len(), limited);
    assert_eq!(entries[0]["identity"]["login"], "bob", "{}", entries[0]);
    // claude.ai's network connects.
    gateway.http = vendor;
    for network in ["160.79.104.7", "198.51.100.7", "192.0.2.7"] {
        let (status, body) = register_from(&gateway, network).await;
        assert_eq!(status, StatusCode::CREATED, "{network}: {body}");
    }
    gateway.http = from_address("160.79.104.7");
    let claude = gateway.public_client().await;
    let tokens = gateway.tokens(&claude, "alice").await;
    assert!(tokens.access_token.starts_with("agm_"));
}
on_both_backends!(
    one_account_cannot_fill_the_client_table,
    ("FORWARDED_ALLOW_IPS", "127.0.0.1"),
    ("OAUTH_MAX_CLIENTS", "60")
);

/// An HTTP client whose requests reach the gateway, through the trusted
/// loopback proxy, as from `address`.
fn from_address(address: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-forwarded-for", address.parse().unwrap());
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .default_headers(headers)
        .build()
        .unwrap()
}
