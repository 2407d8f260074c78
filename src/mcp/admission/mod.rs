//! Admission: whether a call may run, decided once, before anything is
//! written or sent, and what it is. Pure (no I/O): the tools each URL lists
//! ([`ToolLists`]), the argument validation, and the raw tool's route index.
//!
//! [`Admission::admit`] returns one [`AdmittedCall`]: the target (what the
//! call runs, `target`), its [`Effect`], the audit entry's description and,
//! on first use, the arguments' digest. Everything after reads that value
//! and works none of it out again: the step-up challenge and the
//! write-scope rule, the confirmation rules, the write-ahead and finished
//! audit entries, the admin token's session question, and the run
//! (`super::runner`).

mod call;
mod target;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::{Map, Value};

use super::caller::Caller;
use super::discover::{CALL_READ_TOOL_NAME, CALL_WRITE_TOOL_NAME, SEARCH_TOOL_NAME};
use super::exposure::Exposure;
use super::tool_lists::ToolLists;
use super::validation::ArgumentValidator;
use crate::catalog::{Catalog, Effect, InputSchema};
use crate::gitea::ToolError;
use crate::gitea::raw::RAW_TOOL_NAME;
use crate::gitea::routes::RouteIndex;
use crate::identity::Access;
use crate::surface::{Surface, SurfaceError};

#[cfg(test)]
pub use call::ArgsDigest;
pub use call::{AdmittedCall, CallDescription};
pub use target::Target;

/// Which tool a read made for a resource, a prompt or a completion runs
/// as ([`Admission::read_route`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadRoute {
    /// The operation's own tool, which the URL lists.
    OwnTool,
    /// `gitea_call_read_operation`, naming the operation.
    CallTool,
}

/// Why a call was refused before anything was written or sent.
#[derive(Debug)]
pub enum CallRefusal {
    /// The URL's surface does not list the tool.
    UnknownTool,
    /// The call writes and the caller's grant only reads. Over HTTP the
    /// step-up challenge answers it before rmcp; stdio, and any other
    /// path, gets it as the call's result.
    ReadOnlyGrant,
    /// Refused with this tool error as the call's result: arguments that
    /// do not fit, an operation this URL does not expose, a raw route that
    /// is disabled, sensitive or denied.
    Error(ToolError),
}

/// The admission rules of one gateway: its catalog under its exposure.
pub struct Admission {
    tools: ToolLists,
    /// Which operation a raw path reaches.
    routes: RouteIndex,
    validator: ArgumentValidator,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl Admission {
    /// The admission of `catalog` under `exposure`.
    pub fn new(catalog: Catalog, exposure: Exposure) -> Self {
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
        Self {
            routes: RouteIndex::new(tools.catalog()),
            validator: ArgumentValidator::new(schemas),
            tools,
        }
    }

    /// The tools `tools/list` returns on `surface`, in catalog order.
    pub fn tools(&self, surface: &Surface) -> Arc<Vec<Tool>> {
        self.tools.tools(surface)
    }

    /// Which tools each URL lists, for the search tool.
    pub fn tool_lists(&self) -> &ToolLists {
        &self.tools
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

    /// Whether `surface` lists `name`, `args` fit its schema for `caller`,
    /// what it runs may run here, and the caller's grant covers what it
    /// does (`access`): the checks made before anything is written or
    /// sent, in that order. A refusal is final.
    pub fn admit<'a>(
        &'a self,
        surface: &Surface,
        (caller, access): (Caller, Access),
        tool: &'a str,
        args: Map<String, Value>,
    ) -> Result<AdmittedCall<'a>, CallRefusal> {
        if !self.lists(surface, tool) {
            return Err(CallRefusal::UnknownTool);
        }
        self.validator
            .validate(tool, &args, caller.may_sudo())
            .map_err(|problem| {
                let mut error = ToolError::invalid_arguments(problem.to_string());
                if let Some(op) = self.catalog().get(tool) {
                    error = error.with_input_schema(Value::Object(
                        op.input_schema.object().as_ref().clone(),
                    ));
                }
                CallRefusal::Error(error)
            })?;
        let target = self
            .target(surface, caller, tool, &args)
            .map_err(CallRefusal::Error)?;
        // The write-scope rule, decided here alone, from what the call
        // runs: a write from a grant that only reads. Before the call is
        // described: a refused call's entry records no description.
        let effect = target.effect();
        if effect != Effect::Read && !access.may_write() {
            return Err(CallRefusal::ReadOnlyGrant);
        }
        let description = self.describe(tool, &target, &args);
        Ok(AdmittedCall::new(tool, (target, effect), args, description))
    }

    /// What the audit entry records of a call of `tool` running `target`:
    /// the operation (or the raw tool's method and area) and the argument
    /// names the schema declares, never values.
    fn describe(
        &self,
        tool: &str,
        target: &Target<'_>,
        args: &Map<String, Value>,
    ) -> CallDescription {
        let names =
            |tool: &str, args: &Map<String, Value>| self.validator.known_argument_names(tool, args);
        match target {
            Target::Operation(op) => CallDescription {
                method: Some(op.method.as_str().to_owned()),
                route: Some(op.route.clone()),
                operation: None,
                arg_names: names(tool, args),
            },
            Target::Named(op) => CallDescription {
                method: Some(op.method.as_str().to_owned()),
                route: Some(op.route.clone()),
                operation: Some(op.tool_name.clone()),
                arg_names: names(&op.tool_name, call::inner_arguments(args)),
            },
            // The method, the route template it reaches and the API area
            // (`gitea_api_request:GET:repos`); the path holds values.
            Target::Raw { request, .. } => CallDescription {
                method: Some(request.call.method.as_str().to_owned()),
                route: Some(request.call.route.clone()),
                operation: Some(request.virtual_name()),
                arg_names: names(tool, args),
            },
            Target::Search => CallDescription {
                arg_names: names(tool, args),
                ..CallDescription::default()
            },
        }
    }
}
