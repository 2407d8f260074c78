//! Everything the MCP URLs check before rmcp, in order, as one
//! middleware: the request guard (`Origin`, content type, declared size),
//! the rate limits, the URL's surface, authentication, the operator's
//! policy, and the JSON-RPC intake; after rmcp, intake's look at its
//! answer. Each step is a function of its own module that returns the
//! request or the answer in its place.
//!
//! One middleware rather than one `from_fn` layer per step: each such
//! layer clones the rest of the stack for every request and boxes its own
//! future and the next one's. As six layers they cost 16 allocations and
//! about 7 KB of boxed futures per call, held while the call is in flight
//! (docs/benchmarks.md, "After the close"); here the steps run one after
//! the other inside one future.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::guards::McpGuard;
use super::mcp_intake::{self, Passed};
use super::rate_limit::{self, RateLimiter};
use super::{auth, mcp_policy, mcp_url};
use crate::app::App;

/// What the steps need.
pub struct McpGate {
    pub app: Arc<App>,
    pub guard: McpGuard,
    pub limiter: Arc<RateLimiter>,
}

/// Middleware on the MCP URLs, in front of rmcp.
pub async fn pass(State(gate): State<Arc<McpGate>>, request: Request, next: Next) -> Response {
    match gate.admit(request).await {
        Ok((request, passed)) => mcp_intake::after_rmcp(next.run(request).await, passed),
        Err(answer) => answer,
    }
}

impl McpGate {
    /// The request as rmcp gets it, or the answer of the first step that
    /// refuses it. The order is the one docs/architecture.md gives: no
    /// step sees a request an earlier one refused.
    async fn admit(&self, request: Request) -> Result<(Request, Option<Passed>), Response> {
        self.guard.check(&request)?;
        let mut request = rate_limit::admit(&self.limiter, request).await?;
        mcp_url::resolve_surface(&self.app, &mut request)?;
        auth::authenticate(&self.app, &mut request).await?;
        mcp_policy::apply_policy(&self.app, &mut request).await?;
        mcp_intake::check_jsonrpc_body(&self.app, request).await
    }
}
