//! The two MCP transports: stdio (newline-delimited JSON-RPC on stdout and
//! nothing else) and Streamable HTTP at `/mcp` (stateless, JSON responses).

use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::CallServices;
use super::rmcp_adapter::{RmcpAdapter, Transport};

/// Serves MCP over stdin/stdout until the client closes stdin.
pub async fn serve_stdio(service: Arc<CallServices>) -> anyhow::Result<()> {
    let server = RmcpAdapter::new(service, Transport::Stdio);
    let running = server.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}

/// The Streamable HTTP service for `/mcp`. Stateless: every request stands
/// alone and carries its own identity, so an MCP session can never be
/// borrowed by another user's token. `GET /mcp` answers 405.
pub fn streamable_http_service(
    service: Arc<CallServices>,
    allowed_hosts: Vec<String>,
    max_body: usize,
) -> SharedMcpService {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_allowed_hosts(allowed_hosts)
        .with_max_request_body_bytes(max_body);
    let server = RmcpAdapter::new(service, Transport::Http);
    SharedMcpService(Arc::new(StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    )))
}

/// rmcp's service behind one `Arc`. The router and each middleware in front
/// of it clone the service below them for every request, and a clone of
/// rmcp's service copies its whole configuration (the allowed hosts and
/// origins: allocations on every request before this, issue 30). A clone
/// of this is one reference count; the request is
/// handled through rmcp's own `handle`.
#[derive(Clone)]
pub struct SharedMcpService(Arc<StreamableHttpService<RmcpAdapter, NeverSessionManager>>);

impl<B> tower::Service<http::Request<B>> for SharedMcpService
where
    B: axum::body::HttpBody<Data = bytes::Bytes> + Send + 'static,
    B::Error: std::fmt::Display,
{
    type Response = http::Response<McpBody>;
    type Error = std::convert::Infallible;
    type Future = futures::future::BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let service = Arc::clone(&self.0);
        Box::pin(async move { Ok(service.handle(request).await) })
    }
}

/// The body of rmcp's answers.
pub type McpBody = http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>;
