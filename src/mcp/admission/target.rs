//! What a call runs, found and checked before anything is written or
//! sent: a typed tool's operation, the operation a call tool names, the
//! raw tool's request with the operation its route reaches, or a search.
//! Every refusal by what a call runs is made here, once, so the
//! confirmation rules and the audit entry judge the operation the call
//! will run, whichever tool reaches it (issue 45, F4).

use serde_json::{Map, Value};

use super::Admission;
use crate::catalog::{Effect, Operation};
use crate::gitea::raw::{RAW_TOOL_NAME, RawRequest, RawRequestError, parse_raw_request};
use crate::gitea::{ErrorKind, ToolError};
use crate::mcp::caller::Caller;
use crate::mcp::discover::{SEARCH_TOOL_NAME, call_tool_for};
use crate::surface::Surface;

/// What an admitted call runs.
#[derive(Debug)]
pub enum Target<'d> {
    /// A typed tool: its operation, with the call's own arguments.
    Operation(&'d Operation),
    /// A call tool: the operation its `name` names, with its `arguments`.
    Named(&'d Operation),
    /// The raw tool: its checked request (boxed: the other targets are a
    /// reference), and the operation its route reaches (`None`: no
    /// operation's route fits).
    Raw {
        request: Box<RawRequest>,
        reaches: Option<&'d Operation>,
    },
    /// The search tool.
    Search,
}

impl<'d> Target<'d> {
    /// The operation the call runs, whichever tool runs it.
    pub fn operation(&self) -> Option<&'d Operation> {
        match self {
            Self::Operation(op) | Self::Named(op) => Some(op),
            Self::Raw { reaches, .. } => *reaches,
            Self::Search => None,
        }
    }

    /// What the call does to Gitea's state, worked out here alone: its
    /// operation's effect; a search reads. The raw tool has no operation
    /// to judge by: a GET or HEAD reads, and any other method counts as
    /// destructive (fail closed), whatever route it reaches.
    pub fn effect(&self) -> Effect {
        match self {
            Self::Operation(op) | Self::Named(op) => op.effect,
            Self::Raw { request, .. } => match request.call.method {
                http::Method::GET | http::Method::HEAD => Effect::Read,
                _ => Effect::Destructive,
            },
            Self::Search => Effect::Read,
        }
    }
}

impl Admission {
    /// What a call of `name` (listed on `surface`) with `args` runs, or
    /// why it may not run here.
    pub(super) fn target(
        &self,
        surface: &Surface,
        caller: Caller,
        name: &str,
        args: &Map<String, Value>,
    ) -> Result<Target<'_>, ToolError> {
        match (name, self.catalog().get(name)) {
            (_, Some(op)) => Ok(Target::Operation(op)),
            (RAW_TOOL_NAME, None) => self.raw_target(surface, args),
            (SEARCH_TOOL_NAME, None) => Ok(Target::Search),
            (_, None) => self.named_target(surface, caller, name, args),
        }
    }

    /// `gitea_call_read_operation` runs reads only, and
    /// `gitea_call_write_operation` writes only, so a client's per-tool
    /// confirmation tells them apart.
    fn named_target(
        &self,
        surface: &Surface,
        caller: Caller,
        call_tool: &str,
        args: &Map<String, Value>,
    ) -> Result<Target<'_>, ToolError> {
        let name = args.get("name").and_then(Value::as_str).unwrap_or("");
        let Some(op) = self
            .catalog()
            .get(name)
            .filter(|op| self.tools.callable(surface, op))
        else {
            return Err(ToolError::invalid_arguments(
                "`name` is not an operation this URL exposes; find one with gitea_search_operations",
            ));
        };
        let right_tool = call_tool_for(op);
        if right_tool != call_tool {
            return Err(ToolError::invalid_arguments(format!(
                "{} {}; run it with {right_tool}",
                op.tool_name,
                if op.is_read_only() {
                    "only reads"
                } else {
                    "changes something"
                },
            )));
        }
        let empty = Map::new();
        let inner = match args.get("arguments") {
            Some(Value::Object(map)) => map,
            _ => &empty,
        };
        if let Err(problem) = self
            .validator
            .validate(&op.tool_name, inner, caller.may_sudo())
        {
            return Err(ToolError::invalid_arguments(format!(
                "arguments of {}: {problem}",
                op.tool_name
            ))
            .with_input_schema(Value::Object(op.input_schema.object().as_ref().clone())));
        }
        Ok(Target::Named(op))
    }

    /// The raw tool's request, refused when `DISABLED_TOOLS` names its
    /// virtual name, when it touches a sensitive path the settings keep it
    /// from, or when the operation its route reaches is denied here.
    fn raw_target(
        &self,
        surface: &Surface,
        args: &Map<String, Value>,
    ) -> Result<Target<'_>, ToolError> {
        let settings = self.tools.exposure().settings();
        let request = match parse_raw_request(args, self.tools.raw_read_only(surface)) {
            Ok(request) => request,
            Err(RawRequestError::Call(err)) => return Err(ToolError::from(&err)),
            Err(err) => return Err(ToolError::invalid_arguments(err.to_string())),
        };
        let (request, reaches) = self.resolve_raw(request);
        if !self
            .tools
            .exposure()
            .allows_raw_virtual_name(&request.virtual_name())
        {
            return Err(ToolError::new(
                ErrorKind::ToolDisabled,
                format!("{} is disabled by DISABLED_TOOLS", request.virtual_name()),
            ));
        }
        if request.is_sensitive() && !settings.raw_api_allow_sensitive {
            return Err(ToolError::new(
                ErrorKind::SensitivePath,
                "this path touches an admin or credential surface, which the raw tool refuses (RAW_API_ALLOW_SENSITIVE=false); use the dedicated tool if it is exposed",
            ));
        }
        if let Some(op) = reaches
            && !self.tools.raw_reaches(surface, op)
        {
            return Err(ToolError::new(
                ErrorKind::ToolDisabled,
                format!(
                    "this route is {}, which DISABLED_TOOLS or the operator's policy keeps from this connection; the raw tool does not reach it either",
                    op.tool_name
                ),
            ));
        }
        Ok(Target::Raw {
            request: Box::new(request),
            reaches,
        })
    }

    /// `request` with the operation its route reaches, the route it
    /// records (the template) and its virtual name's area.
    fn resolve_raw(&self, request: RawRequest) -> (RawRequest, Option<&Operation>) {
        let call = &request.call;
        let reaches = self
            .routes
            .operation_at(self.catalog(), &call.method, &call.path);
        let known_area = self.routes.is_area(&request.top_segment);
        (request.resolved(reaches, known_area), reaches)
    }
}
