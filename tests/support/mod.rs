//! Shared test fixtures: the fake Gitea, a gateway served on real loopback
//! HTTP (built exactly as the CLI builds it), and a real MCP client (the
//! official Rust SDK) connected to it.

#![allow(dead_code)]

pub mod fake_gitea;
pub mod gateway_process;
pub mod oauth_client;
pub mod postgres;

use std::net::SocketAddr;

use aegis_gitea_mcp::app::App;
use aegis_gitea_mcp::config::{Settings, SettingsSource};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;

#[allow(unused_imports)]
pub use fake_gitea::{ADMIN_LOGIN, ADMIN_TOKEN, FakeGitea};

pub const BEARER: &str = "test-bearer-0123456789abcdef-0123456789";

/// `POST` of a JSON-RPC body to an MCP URL with the headers a Streamable
/// HTTP client sends (JSON, both answer types, protocol version
/// 2025-11-25); the caller adds a bearer or other headers.
pub fn mcp_post(
    http: &reqwest::Client,
    url: impl reqwest::IntoUrl,
    body: impl Into<reqwest::Body>,
) -> reqwest::RequestBuilder {
    mcp_post_on_wire(http, url, "2025-11-25", body)
}

/// [`mcp_post`] naming another protocol version in `MCP-Protocol-Version`.
pub fn mcp_post_on_wire(
    http: &reqwest::Client,
    url: impl reqwest::IntoUrl,
    protocol_version: &str,
    body: impl Into<reqwest::Body>,
) -> reqwest::RequestBuilder {
    http.post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", protocol_version)
        .body(body)
}

/// A gateway on a loopback port in front of a fake Gitea.
pub struct Gateway {
    pub url: String,
    pub fake: FakeGitea,
}

impl Gateway {
    /// Starts a fake Gitea and a gateway with the static bearer plus `extra` settings.
    pub async fn start(extra: &[(&str, &str)]) -> Self {
        aegis_gitea_mcp::tls::install_crypto_provider();
        let fake = FakeGitea::start().await;
        let mut pairs: Vec<(String, String)> = vec![
            ("GITEA_URL".into(), fake.url.clone()),
            ("GITEA_TOKEN".into(), ADMIN_TOKEN.into()),
            ("MCP_BEARER_TOKEN".into(), BEARER.into()),
        ];
        for (k, v) in extra {
            pairs.retain(|(key, _)| key != k);
            if !v.is_empty() {
                pairs.push(((*k).into(), (*v).into()));
            }
        }
        Self {
            url: serve_gateway(pairs).await,
            fake,
        }
    }

    /// `/mcp/all`: every operation as its own tool, the URL the tests of
    /// tool behaviour use. The default surface has tests of its own.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp/all", self.url)
    }

    /// `/mcp`: the default surface (`TOOL_MODE`, core by default).
    pub fn default_mcp_url(&self) -> String {
        format!("{}/mcp", self.url)
    }

    /// An MCP client (official Rust SDK) holding `bearer`.
    pub async fn client_with(&self, bearer: Option<&str>) -> RunningService<RoleClient, ()> {
        mcp_client(&self.mcp_url(), bearer).await
    }

    pub async fn client(&self) -> RunningService<RoleClient, ()> {
        self.client_with(Some(BEARER)).await
    }

    /// One JSON-RPC request with the bearer at the MCP URL `path`, on the
    /// 2025-11-25 wire, as plain HTTP: (status, body, body bytes).
    pub async fn rpc(
        &self,
        path: &str,
        method: &str,
        params: Value,
    ) -> (reqwest::StatusCode, Value, usize) {
        let response = reqwest::Client::new()
            .post(format!("{}{path}", self.url))
            .bearer_auth(BEARER)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(
                &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
            )
            .send()
            .await
            .unwrap();
        let status = response.status();
        let bytes = response.bytes().await.unwrap();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, body, bytes.len())
    }
}

/// Builds the gateway from `pairs` exactly as the CLI does and serves it on
/// a loopback port; returns its base URL.
pub async fn serve_gateway(mut pairs: Vec<(String, String)>) -> String {
    aegis_gitea_mcp::tls::install_crypto_provider();
    // Each gateway its own DATA_DIR (audit log), unless the test chose one.
    if !pairs.iter().any(|(k, _)| k == "DATA_DIR") {
        pairs.push(("DATA_DIR".into(), scratch_dir().display().to_string()));
    }
    let settings = Settings::from_source(&SettingsSource::from_pairs(pairs)).unwrap();
    let app = App::build(settings).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = aegis_gitea_mcp::http::router(app);
    tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    format!("http://{addr}")
}

/// A fresh directory under the target's scratch space (kept after the test).
pub fn scratch_dir() -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("gateways")
        .join(format!("{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An MCP client (official Rust SDK) for the endpoint `mcp_url`.
pub async fn mcp_client(mcp_url: &str, bearer: Option<&str>) -> RunningService<RoleClient, ()> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(mcp_url.to_owned());
    if let Some(b) = bearer {
        config = config.auth_header(b.to_owned());
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    ().serve(transport).await.expect("MCP client connects")
}

/// Calls a tool and returns (is_error, parsed JSON of the single text item).
pub async fn call(
    client: &RunningService<RoleClient, ()>,
    name: &str,
    args: Value,
) -> (bool, Value) {
    let params = CallToolRequestParams::new(name.to_owned())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    let result: CallToolResult = client.call_tool(params).await.expect("tools/call succeeds");
    (result.is_error == Some(true), single_json(&result))
}

/// The JSON of a result's one text content item.
pub fn single_json(result: &CallToolResult) -> Value {
    assert_eq!(result.content.len(), 1, "exactly one content item");
    let text = result.content[0]
        .as_text()
        .expect("text content")
        .text
        .clone();
    serde_json::from_str(&text).expect("content is JSON")
}
