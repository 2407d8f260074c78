//! The dispatcher: the tools each URL lists (`tools/list`), a call's
//! admission, and the run of an admitted call against Gitea, asked by the
//! call operation (`super::call`). A call goes: exposure lookup → JSON
//! Schema validation → what it runs (`target`) → request building
//! (encoding rules) → executor → result pipeline (envelope, redaction,
//! masking, bounds). Whatever fails becomes an `isError` result; only an
//! unknown (or hidden) tool is a protocol error.

use std::sync::Arc;

use rmcp::model::Tool;
use secrecy::ExposeSecret;
use serde_json::{Map, Value, json};

use super::caller::Caller;
use super::discover::{
    CALL_READ_TOOL_NAME, CALL_WRITE_TOOL_NAME, DEFAULT_SEARCH_LIMIT, NEAR_RESULTS,
    SEARCH_TOOL_NAME, describe_found, describe_operation, nothing_found,
};
use super::exposure::Exposure;
use super::tool_lists::ToolLists;
use super::validation::ArgumentValidator;
use crate::catalog::{Catalog, InputSchema, Operation, VIEW_PROPERTY, VIEWS};
use crate::config::{Limits, Settings};
use crate::gitea::call::{CallError, GiteaCall, build_call};
use crate::gitea::executor::{GiteaClient, UpstreamError};
use crate::gitea::hygiene::redaction::Redactor;
use crate::gitea::hygiene::redactor_cache::RedactorCache;
use crate::gitea::hygiene::secrets::body_secrets;
use crate::gitea::hygiene::{ResultPolicy, ResultView, tool_result};
use crate::gitea::raw::{RAW_TOOL_NAME, parse_raw_request};
use crate::gitea::routes::RouteIndex;
use crate::gitea::{ErrorKind, ToolError};
use crate::identity::{Access, Identity};
use crate::surface::{Surface, SurfaceError};
use crate::telemetry::spans;

mod target;

/// Which tool a read made for a resource, a prompt or a completion runs
/// as ([`Dispatcher::read_route`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadRoute {
    /// The operation's own tool, which the URL lists.
    OwnTool,
    /// `gitea_call_read_operation`, naming the operation.
    CallTool,
}

pub use target::Target;

/// What a tool call produced, typed: the audit entry and the metrics read
/// its status and error kind from here; its text is handed to the
/// protocol edge as it is ([`ToolOutcome::into_text`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// An envelope (with Gitea's 2xx `status`), or a search result (none).
    Success {
        status: Option<u16>,
        /// The JSON text of the result's one content item.
        body: String,
    },
    Failure(ToolError),
}

impl ToolOutcome {
    fn error(err: ToolError) -> Self {
        Self::Failure(err)
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Self::Failure(_))
    }

    /// Gitea's HTTP status, when Gitea answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Success { status, .. } => *status,
            Self::Failure(err) => err.status,
        }
    }

    pub fn error_kind(&self) -> Option<ErrorKind> {
        match self {
            Self::Success { .. } => None,
            Self::Failure(err) => Some(err.kind),
        }
    }

    /// The JSON text of the result's one content item (the envelope is
    /// moved, not copied: it can be megabytes).
    pub fn into_text(self) -> String {
        match self {
            Self::Success { body, .. } => body,
            Self::Failure(err) => err.to_json().to_string(),
        }
    }
}

/// Why a call was refused before anything was written or sent.
#[derive(Debug)]
pub enum CallRefusal {
    /// The URL's surface does not list the tool.
    UnknownTool,
    /// The call writes and the caller's grant only reads
    /// ([`Dispatcher::lacks_write_scope`]). Over HTTP the step-up challenge
    /// answers it before rmcp; stdio, and any other path, gets it here.
    ReadOnlyGrant,
    /// Refused with this tool error as the call's result: arguments that
    /// do not fit, an operation this URL does not expose, a raw route that
    /// is disabled, sensitive or denied.
    Error(ToolError),
}

pub struct Dispatcher {
    tools: ToolLists,
    /// Which operation a raw path reaches.
    routes: RouteIndex,
    validator: ArgumentValidator,
    client: GiteaClient,
    limits: Limits,
    policy: ResultPolicy,
    expose_error_details: bool,
    /// The gateway's own secrets, and the automata of recent callers.
    redactors: RedactorCache,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

/// What the audit entry says of a call, before it runs: the operation (or
/// the raw tool's method and area) and the argument names, never values.
/// A call through a discovery tool is described by the operation it runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallDescription {
    pub method: Option<String>,
    pub route: Option<String>,
    /// The operation a call tool runs, or the raw tool's virtual name.
    pub operation: Option<String>,
    pub arg_names: Vec<String>,
}

impl Dispatcher {
    /// The dispatcher of `catalog` under `exposure`, with the result rules
    /// of `settings` (limits, `SECRET_DETECTION_MODE`,
    /// `EXPOSE_ERROR_DETAILS`, the secrets to redact), all taken at once.
    pub fn new(
        catalog: Catalog,
        exposure: Exposure,
        client: GiteaClient,
        settings: &Settings,
    ) -> Self {
        let limits = settings.limits;
        let tools = ToolLists::new(catalog, exposure);
        // Every schema a call may be validated against: every operation
        // (reachable through the call tools) and the fixed tools.
        let fixed = [
            SEARCH_TOOL_NAME,
            CALL_READ_TOOL_NAME,
            CALL_WRITE_TOOL_NAME,
            RAW_TOOL_NAME,
        ]
        .into_iter()
        .filter_map(|name| tools.any_tool(name))
        .map(|t| (t.name.to_string(), InputSchema::parsed(t.input_schema)));
        let schemas: Vec<_> = tools
            .catalog()
            .operations()
            .iter()
            .map(|op| (op.tool_name.clone(), op.input_schema.clone()))
            .chain(fixed)
            .collect();
        let validator = ArgumentValidator::new(schemas);
        Self {
            routes: RouteIndex::new(tools.catalog()),
            tools,
            validator,
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

    /// The tools `tools/list` returns on `surface`, in catalog order.
    pub fn tools(&self, surface: &Surface) -> Arc<Vec<Tool>> {
        self.tools.tools(surface)
    }

    /// Any tool of ours by name, whatever the surface.
    pub fn any_tool(&self, name: &str) -> Option<Tool> {
        self.tools.any_tool(name)
    }

    /// How a read made for a resource, a prompt or a completion reaches
    /// the operation `name` on `surface`: by its own tool where the URL
    /// lists it, else through the read call tool where the URL lists that
    /// and may run it; `None` where neither (the read is refused, as a
    /// call would be).
    pub fn read_route(&self, surface: &Surface, name: &str) -> Option<ReadRoute> {
        let op = self.catalog().get(name)?;
        if self.tools.lists_operation(surface, op) {
            Some(ReadRoute::OwnTool)
        } else if self.tools.lists_fixed(surface, CALL_READ_TOOL_NAME)
            && self.tools.callable(surface, op)
        {
            Some(ReadRoute::CallTool)
        } else {
            None
        }
    }

    /// True when `name` names a tool of ours on some surface.
    pub fn is_tool_name(&self, name: &str) -> bool {
        self.tools.is_tool_name(name)
    }

    /// Refuses a surface whose toolsets this server exposes nothing of.
    pub fn check_surface(&self, surface: &Surface) -> Result<(), SurfaceError> {
        self.tools.check(surface)
    }

    pub fn catalog(&self) -> &Catalog {
        self.tools.catalog()
    }

    pub fn client(&self) -> &GiteaClient {
        &self.client
    }

    /// What the audit entry records of a call of `name` with `args`.
    pub fn describe_call(&self, name: &str, args: &Map<String, Value>) -> CallDescription {
        // Only names the tool's schema declares: see `known_argument_names`.
        let names =
            |tool: &str, args: &Map<String, Value>| self.validator.known_argument_names(tool, args);
        match name {
            CALL_READ_TOOL_NAME | CALL_WRITE_TOOL_NAME => {
                // The operation is a catalog name, not user data.
                let op = args
                    .get("name")
                    .and_then(Value::as_str)
                    .and_then(|op| self.catalog().get(op));
                let inner = match (op, args.get("arguments")) {
                    (Some(op), Some(Value::Object(inner))) => names(&op.tool_name, inner),
                    _ => Vec::new(),
                };
                match op {
                    Some(op) => CallDescription {
                        method: Some(op.method.as_str().to_owned()),
                        route: Some(op.route.clone()),
                        operation: Some(op.tool_name.clone()),
                        arg_names: inner,
                    },
                    None => CallDescription {
                        arg_names: inner,
                        ..CallDescription::default()
                    },
                }
            }
            RAW_TOOL_NAME => match parse_raw_request(args, false).map(|r| self.resolve_raw(r).0) {
                // The method, the route template it reaches and the API
                // area (`gitea_api_request:GET:repos`); the path holds
                // values (owner, repository names).
                Ok(request) => CallDescription {
                    method: Some(request.call.method.as_str().to_owned()),
                    route: Some(request.call.route.clone()),
                    operation: Some(request.virtual_name()),
                    arg_names: names(name, args),
                },
                Err(_) => CallDescription {
                    arg_names: names(name, args),
                    ..CallDescription::default()
                },
            },
            _ => match self.catalog().get(name) {
                Some(op) => CallDescription {
                    method: Some(op.method.as_str().to_owned()),
                    route: Some(op.route.clone()),
                    operation: None,
                    arg_names: names(name, args),
                },
                None => CallDescription {
                    arg_names: names(name, args),
                    ..CallDescription::default()
                },
            },
        }
    }

    /// The operator policy's rules that hid `name` from `surface`, when
    /// the URL alone would list it: what a refusal's audit entry names.
    pub fn hidden_by_policy<'s>(&self, surface: &'s Surface, name: &str) -> Option<&'s [String]> {
        let narrowing = surface.narrowing.as_ref()?;
        let plain = Surface {
            narrowing: None,
            ..surface.clone()
        };
        self.lists(&plain, name)
            .then_some(narrowing.rules.as_slice())
    }

    /// Whether `surface` lists `name`.
    fn lists(&self, surface: &Surface, name: &str) -> bool {
        match self.catalog().get(name) {
            Some(op) => self.tools.lists_operation(surface, op),
            None => self.tools.lists_fixed(surface, name),
        }
    }

    /// The write-scope rule, decided here alone: a call that would change
    /// something on Gitea, from a caller whose grant only reads. Admission
    /// applies it to every call; the HTTP intake applies it before rmcp, to
    /// answer with the step-up challenge (the HTTP layer's `mcp_intake`).
    pub fn lacks_write_scope(
        &self,
        surface: &Surface,
        access: Access,
        name: &str,
        args: &Map<String, Value>,
    ) -> bool {
        !access.may_write() && self.call_writes(surface, name, args)
    }

    /// Whether a call of `name` with `args` at `surface` would change
    /// something on Gitea: a listed write operation, the write call tool,
    /// or the raw tool with a method other than GET and HEAD. A tool the
    /// surface does not list writes nothing (it is refused as unknown).
    fn call_writes(&self, surface: &Surface, name: &str, args: &Map<String, Value>) -> bool {
        if !self.lists(surface, name) {
            return false;
        }
        match (name, self.catalog().get(name)) {
            (_, Some(op)) => !op.is_read_only(),
            (CALL_WRITE_TOOL_NAME, None) => true,
            (RAW_TOOL_NAME, None) => args
                .get("method")
                .and_then(Value::as_str)
                .is_some_and(|m| !m.eq_ignore_ascii_case("GET") && !m.eq_ignore_ascii_case("HEAD")),
            _ => false,
        }
    }

    /// Whether `surface` lists `name`, the caller's grant covers what the
    /// call does (`access`), `args` fit its schema for `caller`, and what
    /// it runs may run here: the checks made before anything is written or
    /// sent. A refusal is final.
    pub fn admit(
        &self,
        surface: &Surface,
        (caller, access): (Caller, Access),
        name: &str,
        args: &Map<String, Value>,
    ) -> Result<Target<'_>, CallRefusal> {
        if !self.lists(surface, name) {
            return Err(CallRefusal::UnknownTool);
        }
        if self.lacks_write_scope(surface, access, name, args) {
            return Err(CallRefusal::ReadOnlyGrant);
        }
        self.validator
            .validate(name, args, caller.may_sudo())
            .map_err(|problem| {
                let mut error = ToolError::invalid_arguments(problem.to_string());
                if let Some(op) = self.catalog().get(name) {
                    error = error.with_input_schema(Value::Object(
                        op.input_schema.object().as_ref().clone(),
                    ));
                }
                CallRefusal::Error(error)
            })?;
        self.target(surface, caller, name, args)
            .map_err(CallRefusal::Error)
    }

    /// Runs what [`Dispatcher::admit`] admitted.
    pub async fn run_admitted(
        &self,
        identity: &Identity,
        surface: &Surface,
        target: Target<'_>,
        args: Map<String, Value>,
    ) -> ToolOutcome {
        match target {
            Target::Operation(op) => self.call_operation(identity, op, &args).await,
            Target::Named(op) => {
                let inner = match args.get("arguments") {
                    Some(Value::Object(inner)) => inner,
                    _ => &Map::new(),
                };
                self.call_operation(identity, op, inner).await
            }
            // The raw tool keeps Gitea's body; its operation id is never
            // one that issues credentials (those are refused as sensitive).
            Target::Raw { request, .. } => {
                self.execute(identity, &request.call, None, ResultView::Full)
                    .await
            }
            Target::Search => self.search_operations(surface, &args),
        }
    }

    async fn call_operation(
        &self,
        identity: &Identity,
        op: &Operation,
        args: &Map<String, Value>,
    ) -> ToolOutcome {
        let view = match (
            &op.response,
            args.get(VIEW_PROPERTY).and_then(Value::as_str),
        ) {
            (Some(root), view) if view != Some(VIEWS[1]) => ResultView::Compact {
                shapes: self.catalog().shapes(),
                root,
            },
            _ => ResultView::Full,
        };
        match build_call(op, args, self.limits.max_binary_bytes) {
            Ok(call) => {
                self.execute(identity, &call, Some(&op.operation_id), view)
                    .await
            }
            Err(err) => ToolOutcome::error(call_error(&err)),
        }
    }

    /// `gitea_search_operations`: the operations this surface can run that
    /// best match `query` (in `toolset`, when given), or, by `name`, one
    /// operation with its full input schema.
    fn search_operations(&self, surface: &Surface, args: &Map<String, Value>) -> ToolOutcome {
        let catalog = self.catalog();
        if let Some(name) = args.get("name").and_then(Value::as_str) {
            let Some(op) = catalog
                .get(name)
                .filter(|op| self.tools.callable(surface, op))
            else {
                return ToolOutcome::error(ToolError::invalid_arguments(
                    "`name` is not an operation this URL exposes; search with `query`",
                ));
            };
            return ToolOutcome::Success {
                status: None,
                body: describe_operation(op, self.tools.call_with(surface, op)).to_string(),
            };
        }
        let Some(query) = args.get("query").and_then(Value::as_str) else {
            return ToolOutcome::error(ToolError::invalid_arguments(
                "give `query` (a few words) or `name` (one operation)",
            ));
        };
        let toolset = args.get("toolset").and_then(Value::as_str);
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_SEARCH_LIMIT, |l| l as usize);
        let ops = catalog.operations();
        let keep = |i: usize| {
            let op = &ops[i];
            toolset.is_none_or(|t| op.toolsets.iter().any(|s| s == t))
                && self.tools.callable(surface, op)
        };
        let index = catalog.search_index();
        let found: Vec<Value> = index
            .search(query, keep, limit)
            .into_iter()
            .map(|i| describe_found(&ops[i], self.tools.call_with(surface, &ops[i])))
            .collect();
        let body = if found.is_empty() {
            let near = index.search_near(query, keep, NEAR_RESULTS);
            let reachable = (0..ops.len()).filter(|&i| keep(i));
            nothing_found(ops, &near, reachable)
        } else {
            json!({"operations": found})
        };
        ToolOutcome::Success {
            status: None,
            body: body.to_string(),
        }
    }

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
                spans::outcome(&span, "error", Some(err.kind.as_str()));
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

fn call_error(err: &CallError) -> ToolError {
    match err {
        CallError::UploadTooLarge { .. } | CallError::TargetTooLong { .. } => {
            ToolError::new(ErrorKind::PayloadTooLarge, err.to_string())
        }
        _ => ToolError::invalid_arguments(err.to_string()),
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
