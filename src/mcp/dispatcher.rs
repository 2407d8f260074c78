//! The one dispatcher every transport calls: `tools/list` and `tools/call`.
//! A call goes: exposure lookup → JSON Schema validation → request building
//! (encoding rules) → executor → result pipeline (envelope, redaction,
//! masking, bounds). Whatever fails becomes an `isError` result; only an
//! unknown (or hidden) tool is a protocol error.

use std::collections::HashMap;

use rmcp::model::Tool;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Map, Value, json};

use super::discover::{
    CALL_TOOL_DESCRIPTION, CALL_TOOL_NAME, DEFAULT_SEARCH_LIMIT, SEARCH_TOOL_DESCRIPTION,
    SEARCH_TOOL_NAME, call_tool_schema, describe_operation, search, search_tool_schema,
};
use super::exposure::Exposure;
use super::tools::{fixed_tool, operation_tool};
use super::validation::ArgumentValidator;
use crate::catalog::{Catalog, Operation};
use crate::config::{Limits, SecretDetectionMode, ToolMode};
use crate::gitea::call::{CallError, GiteaCall, build_call};
use crate::gitea::executor::{GiteaClient, UpstreamError};
use crate::gitea::hygiene::redaction::Redactor;
use crate::gitea::hygiene::secrets::body_secrets;
use crate::gitea::hygiene::{ResultPolicy, tool_result};
use crate::gitea::raw::{RAW_TOOL_NAME, RawRequestError, parse_raw_request, raw_tool_schema};
use crate::gitea::{ErrorKind, Identity, ToolError};

const RAW_TOOL_DESCRIPTION: &str = "Call any Gitea REST endpoint by method and path (the /api/v1 prefix is optional), for operations without a dedicated tool. Prefer the dedicated tools. Admin and credential routes are refused unless the operator allows them.";

/// What a tool call produced: the JSON text of one content item, and
/// whether it is an error.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub is_error: bool,
    pub body: Value,
}

impl ToolOutcome {
    fn success(body: Value) -> Self {
        Self {
            is_error: false,
            body,
        }
    }

    fn error(err: &ToolError) -> Self {
        Self {
            is_error: true,
            body: err.to_json(),
        }
    }

    /// An error from inside the gateway; with `EXPOSE_ERROR_DETAILS` its
    /// type name is added (never a value, message chain or backtrace).
    fn internal_error(err: &ToolError, type_name: &'static str, expose: bool) -> Self {
        let mut outcome = Self::error(err);
        if expose && let Some(error) = outcome.body.get_mut("error") {
            error["type"] = Value::from(type_name);
        }
        outcome
    }
}

/// The tool name is unknown, or hidden by the exposure settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool")]
pub struct UnknownTool;

pub struct Dispatcher {
    catalog: Catalog,
    exposure: Exposure,
    validator: ArgumentValidator,
    client: GiteaClient,
    limits: Limits,
    policy: ResultPolicy,
    expose_error_details: bool,
    known_secrets: Vec<SecretString>,
    tools: Vec<Tool>,
    tool_index: HashMap<String, usize>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl Dispatcher {
    pub fn new(
        catalog: Catalog,
        exposure: Exposure,
        client: GiteaClient,
        limits: Limits,
        known_secrets: Vec<SecretString>,
    ) -> Self {
        let read_only = exposure.settings().read_only;
        let mut tools: Vec<Tool> = match exposure.settings().tool_mode {
            ToolMode::Full => catalog
                .operations()
                .iter()
                .filter(|op| exposure.exposes(op))
                .map(operation_tool)
                .collect(),
            ToolMode::Discover => vec![
                fixed_tool(
                    SEARCH_TOOL_NAME,
                    SEARCH_TOOL_DESCRIPTION,
                    search_tool_schema(),
                    true,
                ),
                fixed_tool(
                    CALL_TOOL_NAME,
                    CALL_TOOL_DESCRIPTION,
                    call_tool_schema(),
                    read_only,
                ),
            ],
        };
        if exposure.exposes_raw_tool() {
            tools.push(fixed_tool(
                RAW_TOOL_NAME,
                RAW_TOOL_DESCRIPTION,
                raw_tool_schema(read_only),
                read_only,
            ));
        }
        // Every schema a call may be validated against: listed tools, and in
        // discover mode the operations reachable through the call tool.
        let schemas = catalog
            .operations()
            .iter()
            .map(|op| (op.tool_name.clone(), op.input_schema.clone()))
            .chain(
                tools
                    .iter()
                    .map(|t| (t.name.to_string(), t.input_schema.clone())),
            );
        let validator = ArgumentValidator::new(schemas);
        let tool_index = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.to_string(), i))
            .collect();
        Self {
            catalog,
            exposure,
            validator,
            client,
            limits,
            // The defaults of the settings, until `with_result_hygiene`.
            policy: ResultPolicy::new(&limits, SecretDetectionMode::Mask),
            expose_error_details: false,
            known_secrets,
            tools,
            tool_index,
        }
    }

    /// Applies `SECRET_DETECTION_MODE` and `EXPOSE_ERROR_DETAILS`.
    pub fn with_result_hygiene(
        mut self,
        mode: SecretDetectionMode,
        expose_error_details: bool,
    ) -> Self {
        self.policy = ResultPolicy::new(&self.limits, mode);
        self.expose_error_details = expose_error_details;
        self
    }

    /// The tools `tools/list` returns, in catalog order.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// One listed tool by name.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tool_index.get(name).map(|&i| &self.tools[i])
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn client(&self) -> &GiteaClient {
        &self.client
    }

    /// Runs one `tools/call`.
    pub async fn call(
        &self,
        identity: &Identity,
        name: &str,
        args: Map<String, Value>,
    ) -> Result<ToolOutcome, UnknownTool> {
        if !self.tool_index.contains_key(name) {
            return Err(UnknownTool);
        }
        if let Err(problem) = self.validator.validate(name, &args) {
            return Ok(ToolOutcome::error(&ToolError::invalid_arguments(problem)));
        }
        Ok(match name {
            RAW_TOOL_NAME => self.call_raw(identity, &args).await,
            SEARCH_TOOL_NAME => self.search_operations(&args),
            CALL_TOOL_NAME => self.call_by_name(identity, &args).await,
            _ => match self.catalog.get(name) {
                Some(op) => self.call_operation(identity, op, &args).await,
                None => return Err(UnknownTool),
            },
        })
    }

    async fn call_operation(
        &self,
        identity: &Identity,
        op: &Operation,
        args: &Map<String, Value>,
    ) -> ToolOutcome {
        match build_call(op, args, self.limits.max_binary_bytes) {
            Ok(call) => self.execute(identity, &call, Some(&op.operation_id)).await,
            Err(err) => ToolOutcome::error(&call_error(&err)),
        }
    }

    async fn call_raw(&self, identity: &Identity, args: &Map<String, Value>) -> ToolOutcome {
        let settings = self.exposure.settings();
        let raw = match parse_raw_request(args, settings.read_only) {
            Ok(raw) => raw,
            Err(RawRequestError::Call(err)) => return ToolOutcome::error(&call_error(&err)),
            Err(err) => return ToolOutcome::error(&ToolError::invalid_arguments(err.to_string())),
        };
        if !self.exposure.allows_raw_virtual_name(&raw.virtual_name()) {
            return ToolOutcome::error(&ToolError::new(
                ErrorKind::ToolDisabled,
                format!("{} is disabled by DISABLED_TOOLS", raw.virtual_name()),
            ));
        }
        if raw.is_sensitive() && !settings.raw_api_allow_sensitive {
            return ToolOutcome::error(&ToolError::new(
                ErrorKind::SensitivePath,
                "this path touches an admin or credential surface, which the raw tool refuses (RAW_API_ALLOW_SENSITIVE=false); use the dedicated tool if it is exposed",
            ));
        }
        // The raw tool has no operation id: never credential-issuing.
        self.execute(identity, &raw.call, None).await
    }

    fn search_operations(&self, args: &Map<String, Value>) -> ToolOutcome {
        let query = args.get("query").and_then(Value::as_str).unwrap_or("");
        let toolset = args.get("toolset").and_then(Value::as_str);
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_SEARCH_LIMIT, |l| l as usize);
        let exposed = self
            .catalog
            .operations()
            .iter()
            .filter(|op| self.exposure.exposes(op));
        let found: Vec<Value> = search(exposed, query, toolset, limit)
            .into_iter()
            .map(describe_operation)
            .collect();
        ToolOutcome::success(json!({"operations": found}))
    }

    async fn call_by_name(&self, identity: &Identity, args: &Map<String, Value>) -> ToolOutcome {
        let name = args.get("name").and_then(Value::as_str).unwrap_or("");
        let inner = match args.get("arguments") {
            Some(Value::Object(map)) => map.clone(),
            _ => Map::new(),
        };
        let Some(op) = self
            .catalog
            .get(name)
            .filter(|op| self.exposure.exposes(op))
        else {
            return ToolOutcome::error(&ToolError::invalid_arguments(
                "`name` is not an exposed operation; find one with gitea_search_operations",
            ));
        };
        if let Err(problem) = self.validator.validate(&op.tool_name, &inner) {
            return ToolOutcome::error(&ToolError::invalid_arguments(format!(
                "arguments of {}: {problem}",
                op.tool_name
            )));
        }
        self.call_operation(identity, op, &inner).await
    }

    async fn execute(
        &self,
        identity: &Identity,
        call: &GiteaCall,
        operation_id: Option<&str>,
    ) -> ToolOutcome {
        let redactor = self.redactor(identity, call);
        let response = match self.client.send(identity, call).await {
            Ok(response) => response,
            Err(err) => {
                return ToolOutcome::internal_error(
                    &upstream_error(&err),
                    err.type_name(),
                    self.expose_error_details,
                );
            }
        };
        match tool_result(
            identity,
            call,
            &response,
            &self.policy,
            &redactor,
            operation_id,
        ) {
            Ok(body) => ToolOutcome::success(body),
            Err(err) => ToolOutcome::error(&err),
        }
    }

    /// The secrets of this call: the gateway's own, the caller's token, and
    /// the secret values submitted in the body.
    fn redactor(&self, identity: &Identity, call: &GiteaCall) -> Redactor {
        let submitted = body_secrets(&call.body, &call.path);
        Redactor::builder()
            .secrets(
                self.known_secrets
                    .iter()
                    .chain(std::iter::once(&identity.token))
                    .map(|s| s.expose_secret().to_owned()),
            )
            .secrets(submitted.values)
            .secrets_any_length(submitted.any_length)
            .build()
    }
}

fn call_error(err: &CallError) -> ToolError {
    match err {
        CallError::UploadTooLarge { .. } => {
            ToolError::new(ErrorKind::PayloadTooLarge, err.to_string())
        }
        _ => ToolError::invalid_arguments(err.to_string()),
    }
}

fn upstream_error(err: &UpstreamError) -> ToolError {
    let kind = match err {
        UpstreamError::Timeout => ErrorKind::UpstreamTimeout,
        UpstreamError::Unreachable => ErrorKind::UpstreamUnreachable,
        UpstreamError::Request => ErrorKind::UpstreamError,
    };
    ToolError::new(kind, err.to_string())
}
