//! What `/mcp` answers to a body that is not one JSON-RPC message, over
//! real HTTP: `400` with a JSON-RPC error object (`-32700`, `-32600`,
//! `-32602`) that quotes nothing of the body but a short `id`, after
//! authentication; and tool arguments too long for a request line are
//! refused before Gitea sees them.

use crate::support;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::BEARER;
use support::oauth_client::{Backend, OAuthGateway};

async fn gateway() -> OAuthGateway {
    OAuthGateway::start(Backend::Sqlite, &[]).await
}

async fn post(gw: &OAuthGateway, bearer: Option<&str>, body: String) -> (StatusCode, String) {
    let mut req = support::mcp_post(&gw.http, gw.mcp_url(), body);
    if let Some(b) = bearer {
        req = req.bearer_auth(b);
    }
    let response = req.send().await.unwrap();
    let status = response.status();
    (status, response.text().await.unwrap())
}

/// Posts `body` with the bearer and returns the JSON-RPC error object,
/// checking the 400 and the envelope around it.
async fn refused(gw: &OAuthGateway, body: String) -> Value {
    let (status, text) = post(gw, Some(BEARER), body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    let answer: Value = serde_json::from_str(&text).expect("a JSON-RPC error object");
    assert_eq!(answer["jsonrpc"], "2.0", "{text}");
    assert!(answer.get("result").is_none(), "{text}");
    answer
}

#[tokio::test]
async fn bytes_that_are_not_json_get_a_parse_error() {
    let gw = gateway().await;
    let answer = refused(&gw, r#"{"jsonrpc":"2.0","id":1,"#.to_owned()).await;
    assert_eq!(answer["error"]["code"], -32700);
    assert_eq!(answer["id"], Value::Null);
}

#[tokio::test]
async fn deep_nesting_gets_a_parse_error_and_the_gateway_serves_on() {
    let gw = gateway().await;
    let answer = refused(&gw, "[".repeat(200_000)).await;
    assert_eq!(answer["error"]["code"], -32700);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let (status, _) = post(&gw, Some(BEARER), list.to_string()).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn json_that_is_not_a_message_gets_invalid_request() {
    let gw = gateway().await;
    for body in [r#"{"hello":1}"#, "[]", "42"] {
        let answer = refused(&gw, body.to_owned()).await;
        assert_eq!(answer["error"]["code"], -32600, "{body}");
    }
}

#[tokio::test]
async fn bad_params_get_invalid_params_with_the_id_and_nothing_else_of_the_body() {
    let gw = gateway().await;
    let planted = "planted-value-5ac1";
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": planted});
    let answer = refused(&gw, body.to_string()).await;
    assert_eq!(answer["error"]["code"], -32602);
    assert_eq!(answer["id"], 9);
    assert!(!answer.to_string().contains(planted), "{answer}");
}

#[tokio::test]
async fn a_bad_body_without_credentials_is_401_not_a_parse_error() {
    let gw = gateway().await;
    let (status, text) = post(&gw, None, "not json".to_owned()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{text}");
    assert!(!text.contains("Parse error"), "{text}");
}

#[tokio::test]
async fn a_path_argument_too_long_for_a_request_line_never_reaches_gitea() {
    let gw = gateway().await;
    let before = gw.fake.tool_requests().len();
    let owner = "o".repeat(5 * 1024 * 1024);
    let (status, envelope) = gw
        .call_tool(
            BEARER,
            "gitea_repo_get",
            json!({"owner": owner, "repo": "r"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(envelope["error"]["kind"], "payload_too_large", "{envelope}");
    let text = envelope.to_string();
    assert!(
        text.contains("`owner`") && !text.contains("ooooooooo"),
        "{text}"
    );
    assert_eq!(
        gw.fake.tool_requests().len(),
        before,
        "nothing sent to Gitea"
    );
}

/// Posts a request on the stateless wire (2026-07-28): `MCP-Protocol-Version`
/// and `_meta` name it, and `Mcp-Method` (with `Mcp-Name` for a tool call)
/// is sent as that wire requires. Returns the status and the JSON answer.
async fn post_on_stateless_wire(
    gw: &OAuthGateway,
    id: u64,
    method: &str,
    mut params: Value,
) -> (StatusCode, Value) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let mut request = support::mcp_post_on_wire(
        &gw.http,
        gw.mcp_url(),
        "2026-07-28",
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
    )
    .header("mcp-method", method)
    .bearer_auth(BEARER);
    if let Some(name) = params["name"].as_str() {
        request = request.header("mcp-name", name);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    let answer = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
    (status, answer)
}

/// On the stateless wire `initialize` and `ping` are removed methods:
/// whatever their params, they are answered `404` with `-32601`, as the MCP
/// conformance suite probes them (SEP-2575).
#[tokio::test]
async fn a_method_removed_on_the_stateless_wire_is_404_method_not_found() {
    let gw = gateway().await;
    for method in ["initialize", "ping"] {
        let (status, answer) = post_on_stateless_wire(&gw, 500, method, json!({})).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method}: {answer}");
        assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
        assert_eq!(answer["id"], 500, "{method}: {answer}");
    }
}

/// On the stateless wire a served method with params that do not fit is
/// still `-32602`, not a "method not found" naming `tools/call`.
#[tokio::test]
async fn a_served_method_with_bad_params_on_the_stateless_wire_is_invalid_params() {
    let gw = gateway().await;
    let params = json!({"name": "gitea_user_get_current", "arguments": 5});
    let (status, answer) = post_on_stateless_wire(&gw, 8, "tools/call", params).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert_eq!(answer["id"], 8, "{answer}");
}
