//! The two MCP transports: stdio (newline-delimited JSON-RPC on stdout and
//! nothing else) and Streamable HTTP at `/mcp` (stateless, JSON responses).

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::ToolService;
use super::server::{GatewayServer, Transport};

/// Serves MCP over stdin/stdout until the client closes stdin.
pub async fn serve_stdio(service: Arc<ToolService>) -> anyhow::Result<()> {
    let server = GatewayServer::new(service, Transport::Stdio);
    let running = server.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}

/// The Streamable HTTP service for `/mcp`. Stateless: every request stands
/// alone and carries its own identity, so an MCP session can never be
/// borrowed by another user's token. `GET /mcp` answers 405.
pub fn streamable_http_service(
    service: Arc<ToolService>,
    allowed_hosts: Vec<String>,
    max_body: usize,
) -> StreamableHttpService<GatewayServer, NeverSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_allowed_hosts(allowed_hosts)
        .with_max_request_body_bytes(max_body);
    let server = GatewayServer::new(service, Transport::Http);
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    )
}
