//! The run of an admitted call against Gitea: the request built from the
//! arguments (encoding rules), sent as the caller (renewing their session
//! when Gitea refuses it), and the answer put through the result pipeline
//! (envelope, redaction, masking, projection, bounds). Whatever fails
//! becomes a tool error. It reads the [`AdmittedCall`] and decides nothing
//! admission decided.

use secrecy::ExposeSecret;
use serde_json::{Map, Value};

use super::admission::{Admission, AdmittedCall, Target};
use super::search_tool::search_operations;
use super::tool_outcome::ToolOutcome;
use crate::catalog::{Catalog, Operation, VIEW_PROPERTY, VIEWS};
use crate::config::{Limits, Settings};
use crate::gitea::call::{GiteaCall, build_call};
use crate::gitea::executor::{GiteaClient, UpstreamError};
use crate::gitea::hygiene::redaction::Redactor;
use crate::gitea::hygiene::redactor_cache::RedactorCache;
use crate::gitea::hygiene::secrets::body_secrets;
use crate::gitea::hygiene::{ResultPolicy, ResultView, tool_result};
use crate::gitea::{ErrorKind, ToolError};
use crate::identity::Identity;
use crate::outcome::CallOutcome;
use crate::surface::Surface;
use crate::telemetry::spans;

/// Runs admitted calls: the Gitea client and the result rules.
pub struct Runner {
    client: GiteaClient,
    limits: Limits,
    policy: ResultPolicy,
    expose_error_details: bool,
    /// The gateway's own secrets, and the automata of recent callers.
    redactors: RedactorCache,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("api_base", &self.client.api_base())
            .finish_non_exhaustive()
    }
}

impl Runner {
    /// The runner of `client` with the result rules of `settings`
    /// (limits, `SECRET_DETECTION_MODE`, `EXPOSE_ERROR_DETAILS`, the
    /// secrets to redact), all taken at once.
    pub fn new(client: GiteaClient, settings: &Settings) -> Self {
        let limits = settings.limits;
        Self {
            client,
            limits,
            policy: ResultPolicy::new(&limits, settings.secret_detection_mode),
            expose_error_details: settings.expose_error_details,
            redactors: RedactorCache::new(
                settings
                    .known_secrets()
                    .iter()
                    .map(|s| s.expose_secret().to_owned()),
            ),
        }
    }

    pub fn client(&self) -> &GiteaClient {
        &self.client
    }

    /// Runs `call` as `identity` on `surface`. A search reads the
    /// catalog (`admission`'s lists of this surface), not Gitea.
    pub async fn run(
        &self,
        admission: &Admission,
        identity: &Identity,
        surface: &Surface,
        call: AdmittedCall<'_>,
    ) -> ToolOutcome {
        let catalog = admission.catalog();
        let (target, args) = call.into_run();
        match target {
            Target::Operation(op) => self.call_operation(identity, catalog, op, &args).await,
            Target::Named(op) => {
                let inner = match args.get("arguments") {
                    Some(Value::Object(inner)) => inner,
                    _ => &Map::new(),
                };
                self.call_operation(identity, catalog, op, inner).await
            }
            // The raw tool keeps Gitea's body; its operation id is never
            // one that issues credentials (those are refused as sensitive).
            Target::Raw { request, .. } => {
                self.execute(identity, &request.call, None, ResultView::Full)
                    .await
            }
            Target::Search => search_operations(admission.tool_lists(), surface, &args),
        }
    }

    /// A catalog operation: its request built from `args`, sent, and its
    /// answer in the view the call asked for.
    async fn call_operation(
        &self,
        identity: &Identity,
        catalog: &Catalog,
        op: &Operation,
        args: &Map<String, Value>,
    ) -> ToolOutcome {
        let view = match (
            &op.response,
            args.get(VIEW_PROPERTY).and_then(Value::as_str),
        ) {
            (Some(root), view) if view != Some(VIEWS[1]) => ResultView::Compact {
                shapes: catalog.shapes(),
                root,
            },
            _ => ResultView::Full,
        };
        match build_call(op, args, self.limits.max_binary_bytes) {
            Ok(call) => {
                self.execute(identity, &call, Some(&op.operation_id), view)
                    .await
            }
            Err(err) => ToolOutcome::error(ToolError::from(&err)),
        }
    }

    /// Sends `call` as `identity` (renewing its session once if Gitea
    /// refuses it), and puts the answer through the result pipeline.
    async fn execute(
        &self,
        identity: &Identity,
        call: &GiteaCall,
        operation_id: Option<&str>,
        view: ResultView<'_>,
    ) -> ToolOutcome {
        let (response, renewed) = match self.client.send_renewing(identity, call).await {
            Ok(answer) => answer,
            Err(err) => {
                let error = upstream_error(&err, self.client.api_base());
                return ToolOutcome::error(if self.expose_error_details {
                    error.with_type_name(err.type_name())
                } else {
                    error
                });
            }
        };
        // The refused token stays a secret of this call beside the new one.
        let redactor = self.redactor(identity, renewed.as_ref(), call);
        let span = spans::hygiene(response.body.len());
        let _entered = span.enter();
        match tool_result(
            renewed.as_ref().unwrap_or(identity),
            call,
            &response,
            &self.policy,
            &redactor,
            operation_id,
            view,
        ) {
            Ok(body) => {
                span.record("aegis.result.bytes", body.len());
                ToolOutcome::Success {
                    status: Some(response.status),
                    body,
                }
            }
            Err(err) => {
                spans::outcome(&span, CallOutcome::Error, Some(err.kind.as_str()));
                ToolOutcome::error(err)
            }
        }
    }

    /// The secrets of this call: the gateway's own, the caller's token, and
    /// the secret values submitted in the body.
    fn redactor(
        &self,
        identity: &Identity,
        renewed: Option<&Identity>,
        call: &GiteaCall,
    ) -> Redactor {
        let caller: Vec<&str> = std::iter::once(identity)
            .chain(renewed)
            .flat_map(|i| std::iter::once(&i.token).chain(i.refresh_token.as_ref()))
            .map(|s| s.expose_secret())
            .collect();
        self.redactors
            .redactor(&caller, body_secrets(&call.body, &call.path))
    }
}

/// A failed request as a tool error; an unreachable or silent Gitea is
/// named by its URL (`GITEA_URL`), so a wrong setting shows on the first
/// call.
fn upstream_error(err: &UpstreamError, api_base: &str) -> ToolError {
    let kind = match err {
        UpstreamError::Timeout => ErrorKind::UpstreamTimeout,
        UpstreamError::Unreachable => ErrorKind::UpstreamUnreachable,
        UpstreamError::Request => ErrorKind::UpstreamError,
        UpstreamError::Answered { status } => ErrorKind::from_status(*status),
    };
    let gitea = api_base.strip_suffix("/api/v1").unwrap_or(api_base);
    let message = match err {
        UpstreamError::Timeout | UpstreamError::Unreachable => format!("{err} (GITEA_URL {gitea})"),
        _ => err.to_string(),
    };
    ToolError::new(kind, message)
}
