//! Every MCP URL works with OAuth: its 401 challenge names its own
//! protected-resource document (RFC 9728, path appended), that document
//! exists and names the URL, and a token is accepted exactly at the URL it
//! was issued for (RFC 8707 audience), nowhere else.

use reqwest::StatusCode;
use reqwest::header::WWW_AUTHENTICATE;
use serde_json::{Value, json};

use crate::{OAuthGateway, on_both_backends};

const TOOLSET_URL: &str = "/mcp/x/issue,repository.pulls";

async fn challenge_at(gateway: &OAuthGateway, path: &str) -> String {
    let response = gateway
        .http
        .post(format!("{}{path}", gateway.url))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path}");
    response.headers()[WWW_AUTHENTICATE]
        .to_str()
        .unwrap()
        .to_owned()
}

async fn get(gateway: &OAuthGateway, path: &str) -> (StatusCode, Value) {
    let response = gateway
        .http
        .get(format!("{}{path}", gateway.url))
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Each URL, and each as pasted with a trailing slash (issue 43: `/mcp/`
/// was a plain 404, and a client never found the sign-in).
async fn each_url_challenges_with_its_own_resource_document(gateway: OAuthGateway) {
    let urls = [
        "/mcp",
        "/mcp/readonly",
        "/mcp/all",
        "/mcp/all/readonly",
        TOOLSET_URL,
        "/mcp/x/issue/readonly",
    ];
    let with_slash = urls.map(|url| format!("{url}/"));
    for path in urls
        .iter()
        .copied()
        .chain(with_slash.iter().map(String::as_str))
    {
        let challenge = challenge_at(&gateway, path).await;
        let document_url = format!("{}/.well-known/oauth-protected-resource{path}", gateway.url);
        assert!(
            challenge.contains(&format!(r#"resource_metadata="{document_url}""#)),
            "{path}: {challenge}"
        );
        let (status, document) = get(
            &gateway,
            &format!("/.well-known/oauth-protected-resource{path}"),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert_eq!(document["resource"], format!("{}{path}", gateway.url));
        assert_eq!(document["authorization_servers"], json!([gateway.url]));
    }
}
on_both_backends!(each_url_challenges_with_its_own_resource_document);

async fn a_document_for_an_unknown_toolset_does_not_exist(gateway: OAuthGateway) {
    let (status, _) = get(&gateway, "/.well-known/oauth-protected-resource/mcp/x/nope").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = get(&gateway, "/.well-known/oauth-protected-resource/other").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
on_both_backends!(a_document_for_an_unknown_toolset_does_not_exist);

/// A token issued for `/mcp` works at `/mcp/`: the same URL, pasted with
/// a slash.
async fn a_token_works_at_its_url_with_a_trailing_slash(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens(&client, "alice").await;
    let (status, result) = gateway
        .call_tool_at(
            "/mcp/",
            &tokens.access_token,
            "gitea_user_get_current",
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(result["identity"]["login"], "alice", "{result}");
}
on_both_backends!(a_token_works_at_its_url_with_a_trailing_slash);

async fn a_token_works_only_at_the_url_it_was_issued_for(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens_at(&client, "alice", TOOLSET_URL).await;
    let (status, envelope) = gateway
        .call_tool_at(
            TOOLSET_URL,
            &tokens.access_token,
            "gitea_issue_list_issues",
            json!({"owner": "acme", "repo": "app"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(envelope["identity"]["login"], "alice", "{envelope}");
    // The same toolsets in another order are the same resource.
    let (status, _) = gateway
        .call_tool_at(
            "/mcp/x/repository.pulls,issue",
            &tokens.access_token,
            "gitea_issue_list_issues",
            json!({"owner": "acme", "repo": "app"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    for elsewhere in [
        "/mcp",
        "/mcp/all",
        "/mcp/x/issue",
        "/mcp/x/issue,repository.pulls/readonly",
    ] {
        let (status, _) = gateway
            .call_tool_at(
                elsewhere,
                &tokens.access_token,
                "gitea_user_get_current",
                json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{elsewhere}");
    }
    let default = gateway.tokens(&client, "alice").await;
    let (status, _) = gateway
        .call_tool_at(
            TOOLSET_URL,
            &default.access_token,
            "gitea_issue_list_issues",
            json!({"owner": "acme", "repo": "app"}),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "a /mcp token at a toolset URL"
    );
}
on_both_backends!(a_token_works_only_at_the_url_it_was_issued_for);

/// A token of another URL is told why it fails: one token per URL.
async fn a_token_of_another_url_is_told_the_rule(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens_at(&client, "alice", TOOLSET_URL).await;
    let response = gateway
        .http
        .post(format!("{}/mcp", gateway.url))
        .bearer_auth(&tokens.access_token)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let challenge = response.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        challenge.contains(r#"error="invalid_token""#),
        "{challenge}"
    );
    let body: Value = response.json().await.unwrap();
    let description = body["error_description"].as_str().unwrap();
    assert!(description.contains("one token per URL"), "{description}");
    // An unknown token is not told it belongs elsewhere.
    let response = gateway
        .http
        .post(format!("{}/mcp", gateway.url))
        .bearer_auth("agm_not-a-token-of-ours")
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error_description"], "the bearer token is not valid");
}
on_both_backends!(a_token_of_another_url_is_told_the_rule);

async fn a_refresh_keeps_the_tokens_url(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let tokens = gateway.tokens_at(&client, "alice", "/mcp/readonly").await;
    let refreshed = gateway
        .token_raw(
            &client,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", &tokens.refresh_token),
            ],
        )
        .await;
    assert_eq!(refreshed.status(), StatusCode::OK);
    let refreshed = crate::tokens_from(refreshed).await;
    let (status, _) = gateway
        .call_tool_at(
            "/mcp/readonly",
            &refreshed.access_token,
            "gitea_user_get_current",
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = gateway
        .call_tool_at(
            "/mcp",
            &refreshed.access_token,
            "gitea_user_get_current",
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}
on_both_backends!(a_refresh_keeps_the_tokens_url);

async fn authorize_refuses_a_resource_that_is_not_one_of_our_urls(gateway: OAuthGateway) {
    let client = gateway.public_client().await;
    let pkce = crate::Pkce::new();
    let mut params = gateway.authorize_params(&client, &pkce, "st-1");
    params.retain(|(name, _)| name != "resource");
    params.push(("resource".into(), format!("{}/mcp/x/nope", gateway.url)));
    let response = gateway.authorize_fresh(&params).await;
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    assert!(location.contains("error=invalid_target"), "{location}");
}
on_both_backends!(authorize_refuses_a_resource_that_is_not_one_of_our_urls);
