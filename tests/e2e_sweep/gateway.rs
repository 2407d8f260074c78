//! A gateway in front of the real Gitea (same steps as
//! `support::Gateway::start`), and calling its tools.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use serde_json::{Map, Value};

use crate::envelope_checks::check_success_envelope;
use crate::fixture::Fixture;
use crate::support::{self, BEARER, call};

pub struct LiveGateway {
    url: String,
}

impl LiveGateway {
    /// Builds the gateway as the CLI does, acting with `gitea_token`.
    pub async fn start(fx: &Fixture, gitea_token: &str, extra: &[(&str, &str)]) -> Self {
        let mut pairs: Vec<(String, String)> = vec![
            ("GITEA_URL".into(), fx.gitea_url()),
            ("GITEA_TOKEN".into(), gitea_token.into()),
            ("MCP_BEARER_TOKEN".into(), BEARER.into()),
            // The sweep calls every tool as fast as it can.
            ("RATE_LIMIT_PER_IP".into(), "0".into()),
            ("RATE_LIMIT_PER_TOKEN".into(), "0".into()),
        ];
        pairs.extend(extra.iter().map(|(k, v)| ((*k).into(), (*v).into())));
        Self {
            url: support::serve_gateway(pairs).await,
        }
    }

    pub async fn client(&self) -> RunningService<RoleClient, ()> {
        // Every operation as its own tool: the sweep calls each one.
        support::mcp_client(&format!("{}/mcp/all", self.url), Some(BEARER)).await
    }
}

pub async fn call_raw(
    client: &RunningService<RoleClient, ()>,
    name: &str,
    args: &Map<String, Value>,
) -> Result<CallToolResult, ServiceError> {
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(args.clone());
    client.call_tool(params).await
}

/// A success envelope of a call expected to work; panics with the error otherwise.
pub async fn call_ok(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> Value {
    let (is_error, body) = call(client, name, args.clone()).await;
    assert!(!is_error, "{name} {args} failed: {body}");
    check_success_envelope(&body).unwrap_or_else(|e| panic!("{name}: {e}: {body}"));
    body
}
