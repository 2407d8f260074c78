//! Everything the MCP URLs check before rmcp, in order, as one
//! middleware: the request guard (`Origin`, content type, declared size),
//! the rate limits, the URL's surface, authentication, the operator's
//! policy, and the JSON-RPC intake; after rmcp, intake's look at its
//! answer. Each step is a function of its own module that returns the
//! request or the answer in its place.
//!
//! One service rather than one `from_fn` layer per step: each such layer
//! clones the rest of the stack for every request and boxes its own
//! future and the next one's, held while the call is in flight
//! (docs/benchmarks.md, "After the close" has what it cost); here the
//! steps run one after the other inside one future, boxed once.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use tower::{Layer, Service};

use super::guards::McpGuard;
use super::mcp_intake::{self, Passed};
use super::rate_limit::{self, RateLimiter};
use super::{auth, mcp_policy, mcp_url};
use crate::app::App;
use crate::mcp::handoff::GateHandoff;

/// What the steps need.
pub struct McpGate {
    pub app: Arc<App>,
    pub guard: McpGuard,
    pub limiter: Arc<RateLimiter>,
}

/// The gate in front of rmcp on the MCP URLs.
#[derive(Clone)]
pub struct McpGateLayer(pub Arc<McpGate>);

impl<S> Layer<S> for McpGateLayer {
    type Service = McpGateService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        McpGateService {
            gate: self.0.clone(),
            inner,
        }
    }
}

/// rmcp behind the gate. A service of its own rather than a `from_fn`
/// layer: the steps await, so the call's future is boxed, but once; a
/// `from_fn` layer also boxes `Next` and, inside it, rmcp's future.
#[derive(Clone)]
pub struct McpGateService<S> {
    gate: Arc<McpGate>,
    inner: S,
}

impl<S> Service<Request> for McpGateService<S>
where
    S: Service<Request, Error = Infallible> + Clone + Send + 'static,
    S::Response: IntoResponse,
    S::Future: Send,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // The service that was polled ready answers this request; a clone
        // stays for the next (tower's rule for a service called later).
        let ready = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, ready);
        let gate = self.gate.clone();
        Box::pin(async move {
            Ok(match gate.before_rmcp(request).await {
                Ok((request, passed)) => {
                    let Ok(answer) = inner.call(request).await;
                    mcp_intake::after_rmcp(answer.into_response(), passed)
                }
                Err(answer) => answer,
            })
        })
    }
}

impl McpGate {
    /// The request as rmcp gets it, or the answer of the first step that
    /// refuses it. The order is the one docs/architecture.md gives: no
    /// step sees a request an earlier one refused.
    /// The steps hand each other what they found as values; the whole
    /// goes into the request once, for the adapter ([`GateHandoff`]).
    async fn before_rmcp(&self, request: Request) -> Result<(Request, Option<Passed>), Response> {
        self.guard.check(&request)?;
        let request = rate_limit::count_request(&self.limiter, request).await?;
        // The head alone is read (and shared across the awaits) until
        // intake reads the body.
        let (parts, body) = request.into_parts();
        let surface = mcp_url::resolve_surface(&self.app, &parts)?;
        let (identity, connection) = auth::authenticate(&self.app, &parts, &surface).await?;
        let caller = (&identity, connection.as_ref());
        let surface = mcp_policy::apply_policy(&self.app, &parts, caller, surface).await?;
        let request = Request::from_parts(parts, body);
        let handoff = GateHandoff {
            identity,
            connection,
            surface,
        };
        let (mut request, passed) =
            mcp_intake::check_jsonrpc_body(&self.app, request, &handoff).await?;
        request.extensions_mut().insert(handoff);
        Ok((request, passed))
    }
}
