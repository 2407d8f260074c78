//! What one MCP URL's [`Surface`] lists and lets a caller run, given the
//! server's exposure (`READ_ONLY`, `TOOLSETS`, `DISABLED_TOOLS`, the raw
//! tool's switches) and `TOOL_MODE`.
//!
//! - An operation is *callable* on a surface when the server exposes it and
//!   the URL keeps it (its toolsets, `/readonly`). A URL narrows, never widens.
//! - It is *listed* as its own tool when callable and the surface's listing
//!   shows it: `core` lists the core tools, `full` all, `discover` none.
//!   `/mcp` uses `TOOL_MODE`; `/mcp/all` and `/mcp/x/…` list in full, except
//!   that `TOOL_MODE=discover` holds on every URL (the operator chose to
//!   list no operation tools).
//! - The discovery tools are listed wherever some callable operation is not
//!   listed on its own, and on every toolset URL; the write call tool only
//!   where writes are callable. The raw tool follows the exposure rules, and
//!   on a toolset URL only when the URL names `raw`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use rmcp::model::Tool;

use super::discover::{
    CALL_READ_TOOL_DESCRIPTION, CALL_READ_TOOL_NAME, CALL_WRITE_TOOL_DESCRIPTION,
    CALL_WRITE_TOOL_NAME, SEARCH_TOOL_DESCRIPTION, SEARCH_TOOL_NAME, call_tool_for,
    call_tool_schema, search_tool_schema,
};
use super::exposure::{Exposure, RAW_TOOLSET};
use super::tools::{fixed_tool, operation_tool};
use crate::catalog::core::is_core;
use crate::catalog::{Catalog, Effect, Operation};
use crate::config::ToolMode;
use crate::gitea::raw::{RAW_TOOL_NAME, raw_tool_schema};
use crate::surface::{Scope, Surface, SurfaceError};

const RAW_TOOL_DESCRIPTION: &str = "Call a Gitea REST route by method and path, for what no tool covers. Admin and credential routes are refused unless allowed.";

/// How a surface lists operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    Core,
    Full,
    Discover,
}

/// The tool definitions and the rules that pick them per surface.
pub struct ToolLists {
    catalog: Catalog,
    exposure: Exposure,
    search: Tool,
    call_read: Tool,
    call_write: Tool,
    raw: Tool,
    raw_read_only: Tool,
    /// `tools/list` of the four surfaces without toolsets, each built when
    /// first asked and kept. Built lazily, so that the operations' schemas
    /// are only parsed for a list someone reads (`/mcp/all` lists them all).
    fixed_lists: HashMap<Surface, OnceLock<Arc<Vec<Tool>>>>,
    /// The toolsets with an exposed operation, and those with an exposed
    /// read: what [`ToolLists::check`] asks on every toolset URL request,
    /// worked out once.
    served_toolsets: HashSet<String>,
    served_read_toolsets: HashSet<String>,
}

impl std::fmt::Debug for ToolLists {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolLists")
            .field("operations", &self.catalog.len())
            .finish_non_exhaustive()
    }
}

impl ToolLists {
    pub fn new(catalog: Catalog, exposure: Exposure) -> Self {
        let server_read_only = exposure.settings().read_only;
        let raw_effect = if server_read_only {
            Effect::Read
        } else {
            Effect::Destructive
        };
        let mut tools = Self {
            search: fixed_tool(
                SEARCH_TOOL_NAME,
                SEARCH_TOOL_DESCRIPTION,
                search_tool_schema(),
                Effect::Read,
            ),
            call_read: fixed_tool(
                CALL_READ_TOOL_NAME,
                CALL_READ_TOOL_DESCRIPTION,
                call_tool_schema(),
                Effect::Read,
            ),
            call_write: fixed_tool(
                CALL_WRITE_TOOL_NAME,
                CALL_WRITE_TOOL_DESCRIPTION,
                call_tool_schema(),
                Effect::Destructive,
            ),
            raw: fixed_tool(
                RAW_TOOL_NAME,
                RAW_TOOL_DESCRIPTION,
                raw_tool_schema(server_read_only),
                raw_effect,
            ),
            raw_read_only: fixed_tool(
                RAW_TOOL_NAME,
                RAW_TOOL_DESCRIPTION,
                raw_tool_schema(true),
                Effect::Read,
            ),
            served_toolsets: HashSet::new(),
            served_read_toolsets: HashSet::new(),
            catalog,
            exposure,
            fixed_lists: HashMap::new(),
        };
        for op in tools.catalog.operations() {
            if tools.exposure.exposes(op) {
                tools.served_toolsets.extend(op.toolsets.iter().cloned());
                if op.is_read_only() {
                    tools
                        .served_read_toolsets
                        .extend(op.toolsets.iter().cloned());
                }
            }
        }
        for scope in [Scope::Default, Scope::All] {
            for read_only in [false, true] {
                let surface = Surface {
                    scope: scope.clone(),
                    read_only,
                    narrowing: None,
                };
                tools.fixed_lists.insert(surface, OnceLock::new());
            }
        }
        tools
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn exposure(&self) -> &Exposure {
        &self.exposure
    }

    fn listing(&self, surface: &Surface) -> Listing {
        match (self.exposure.settings().tool_mode, &surface.scope) {
            (ToolMode::Discover, _) => Listing::Discover,
            (ToolMode::Core, Scope::Default) => Listing::Core,
            _ => Listing::Full,
        }
    }

    /// Writes can run here: neither `READ_ONLY`, nor `/readonly`, nor a
    /// read-only policy.
    fn writes_allowed(&self, surface: &Surface) -> bool {
        !surface.read_only
            && !self.exposure.settings().read_only
            && !surface.narrowing.as_ref().is_some_and(|n| n.read_only)
    }

    /// The server exposes `op`, the URL keeps it, and so does the policy.
    pub fn callable(&self, surface: &Surface, op: &Operation) -> bool {
        self.exposure.exposes(op)
            && (!surface.read_only || op.is_read_only())
            && surface
                .toolsets()
                .is_none_or(|wanted| op.toolsets.iter().any(|t| wanted.contains(t)))
            && surface.narrowing.as_ref().is_none_or(|n| {
                op.rule_names()
                    .all(|name| n.keeps(name, &op.toolsets, op.is_read_only()))
            })
    }

    /// `op` is listed as its own tool on this surface.
    pub fn lists_operation(&self, surface: &Surface, op: &Operation) -> bool {
        self.callable(surface, op)
            && match self.listing(surface) {
                Listing::Core => is_core(&op.tool_name),
                Listing::Full => true,
                Listing::Discover => false,
            }
    }

    fn lists_discovery(&self, surface: &Surface) -> bool {
        self.listing(surface) != Listing::Full || surface.toolsets().is_some()
    }

    /// The raw tool is listed (and callable) on this surface.
    pub fn lists_raw(&self, surface: &Surface) -> bool {
        self.exposure.exposes_raw_tool()
            && surface
                .toolsets()
                .is_none_or(|wanted| wanted.contains(RAW_TOOLSET))
            && surface
                .narrowing
                .as_ref()
                .is_none_or(|n| n.keeps(RAW_TOOL_NAME, &[RAW_TOOLSET.to_owned()], true))
    }

    /// The raw tool may reach `op` on this surface: neither
    /// `DISABLED_TOOLS` nor the policy denies it by name or toolset (the
    /// URL's toolsets and `TOOLSETS` choose what is listed; naming `raw`
    /// asks for the rest of the API).
    pub fn raw_reaches(&self, surface: &Surface, op: &Operation) -> bool {
        !self.exposure.disables(op)
            && surface.narrowing.as_ref().is_none_or(|n| {
                op.rule_names()
                    .all(|name| n.lets_raw_reach(name, &op.toolsets))
            })
    }

    /// A fixed tool (`name` not an operation) is listed on this surface.
    /// `DISABLED_TOOLS` can hide each discovery tool (say, the write call
    /// tool, to leave writes to the typed tools a client confirms one by one).
    pub fn lists_fixed(&self, surface: &Surface, name: &str) -> bool {
        if self.exposure.disabled(name)
            || surface
                .narrowing
                .as_ref()
                .is_some_and(|n| n.deny_tools.contains(name))
        {
            return false;
        }
        match name {
            RAW_TOOL_NAME => self.lists_raw(surface),
            SEARCH_TOOL_NAME | CALL_READ_TOOL_NAME => self.lists_discovery(surface),
            CALL_WRITE_TOOL_NAME => self.lists_discovery(surface) && self.writes_allowed(surface),
            _ => false,
        }
    }

    /// The raw tool may only read here.
    pub fn raw_read_only(&self, surface: &Surface) -> bool {
        !self.writes_allowed(surface)
    }

    /// Which tool runs `op` on this surface: its own when listed, else a
    /// call tool.
    pub fn call_with<'a>(&self, surface: &Surface, op: &'a Operation) -> &'a str {
        if self.lists_operation(surface, op) {
            &op.tool_name
        } else {
            call_tool_for(op)
        }
    }

    /// `tools/list` of this surface (the same for every caller: `sudo` is
    /// described in the server's instructions, not in the schemas).
    pub fn tools(&self, surface: &Surface) -> Arc<Vec<Tool>> {
        match self.fixed_lists.get(surface) {
            Some(list) => list
                .get_or_init(|| Arc::new(self.build_list(surface)))
                .clone(),
            None => Arc::new(self.build_list(surface)),
        }
    }

    fn build_list(&self, surface: &Surface) -> Vec<Tool> {
        let mut list: Vec<Tool> = self
            .catalog
            .operations()
            .iter()
            .filter(|op| self.lists_operation(surface, op))
            .map(operation_tool)
            .collect();
        for (name, tool) in [
            (SEARCH_TOOL_NAME, &self.search),
            (CALL_READ_TOOL_NAME, &self.call_read),
            (CALL_WRITE_TOOL_NAME, &self.call_write),
        ] {
            if self.lists_fixed(surface, name) {
                list.push(tool.clone());
            }
        }
        if self.lists_raw(surface) {
            list.push(if self.raw_read_only(surface) {
                self.raw_read_only.clone()
            } else {
                self.raw.clone()
            });
        }
        list
    }

    /// Any tool of ours by name, whatever the surface (the SDK's lookup of
    /// a schema for header validation).
    pub fn any_tool(&self, name: &str) -> Option<Tool> {
        if let Some(op) = self.catalog.get(name) {
            return Some(operation_tool(op));
        }
        match name {
            SEARCH_TOOL_NAME => Some(self.search.clone()),
            CALL_READ_TOOL_NAME => Some(self.call_read.clone()),
            CALL_WRITE_TOOL_NAME => Some(self.call_write.clone()),
            RAW_TOOL_NAME => Some(self.raw.clone()),
            _ => None,
        }
    }

    /// Every name a tool of ours can have (for metric labels).
    pub fn is_tool_name(&self, name: &str) -> bool {
        self.catalog.get(name).is_some()
            || matches!(
                name,
                SEARCH_TOOL_NAME | CALL_READ_TOOL_NAME | CALL_WRITE_TOOL_NAME | RAW_TOOL_NAME
            )
    }

    /// Refuses a URL that names a toolset this server exposes nothing of,
    /// so no URL serves an empty list by surprise.
    pub fn check(&self, surface: &Surface) -> Result<(), SurfaceError> {
        let Some(wanted) = surface.toolsets() else {
            return Ok(());
        };
        for name in wanted {
            let served = if name == RAW_TOOLSET {
                self.exposure.exposes_raw_tool()
            } else if surface.read_only {
                self.served_read_toolsets.contains(name)
            } else {
                self.served_toolsets.contains(name)
            };
            if !served {
                return Err(SurfaceError::NotExposed { name: name.clone() });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ExposureSettings;
    use crate::surface::{Narrowing, catalog_toolsets};

    fn tools_with(f: impl FnOnce(&mut ExposureSettings)) -> ToolLists {
        let mut settings = ExposureSettings {
            raw_api_enabled: true,
            ..ExposureSettings::default()
        };
        f(&mut settings);
        ToolLists::new(Catalog::bundled(), Exposure::new(settings))
    }

    fn surface(path: &str) -> Surface {
        let catalog = Catalog::bundled();
        Surface::parse(path, catalog_toolsets(&catalog)).unwrap()
    }

    fn names(tools: &ToolLists, path: &str) -> Vec<String> {
        tools
            .tools(&surface(path))
            .iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    #[test]
    fn the_default_surface_lists_the_core_and_the_discovery_tools() {
        let tools = tools_with(|_| {});
        let listed = names(&tools, "/mcp");
        assert!(listed.contains(&"gitea_issue_create_issue".to_owned()));
        assert!(!listed.contains(&"gitea_repo_delete".to_owned()));
        for fixed in [
            SEARCH_TOOL_NAME,
            CALL_READ_TOOL_NAME,
            CALL_WRITE_TOOL_NAME,
            RAW_TOOL_NAME,
        ] {
            assert!(listed.contains(&fixed.to_owned()), "{fixed}");
        }
        assert!(listed.len() <= 40, "{} tools", listed.len());
    }

    #[test]
    fn only_the_schemas_of_a_list_someone_reads_are_parsed() {
        // A catalog of its own: the shared bundled one is read by other tests.
        let doc = serde_json::from_str(crate::catalog::BUNDLED_OPENAPI).unwrap();
        let catalog = Catalog::from_openapi(&doc).unwrap();
        let tools = ToolLists::new(catalog.clone(), Exposure::new(ExposureSettings::default()));
        let parsed = || {
            catalog
                .operations()
                .iter()
                .filter(|op| op.input_schema.is_parsed())
                .count()
        };
        assert_eq!(parsed(), 0);
        let listed = tools.tools(&surface("/mcp"));
        let core = listed
            .iter()
            .filter(|t| catalog.get(&t.name).is_some())
            .count();
        assert!(core > 0);
        assert_eq!(parsed(), core);
        tools.tools(&surface("/mcp/all"));
        assert_eq!(parsed(), catalog.len());
    }

    #[test]
    fn a_policy_that_denies_an_operation_denies_its_deprecated_twin_by_every_tool() {
        let tools = tools_with(|_| {});
        let mut surface = surface("/mcp/all");
        surface.narrowing = Some(std::sync::Arc::new(Narrowing {
            deny_tools: ["gitea_issue_delete_comment".to_owned()].into(),
            ..Narrowing::default()
        }));
        let deprecated = Catalog::bundled()
            .get("gitea_issue_delete_comment_deprecated")
            .unwrap()
            .clone();
        let listed = tools.tools(&surface);
        assert!(!listed.iter().any(|t| t.name == deprecated.tool_name));
        assert!(!tools.raw_reaches(&surface, &deprecated));
    }

    #[test]
    fn all_lists_every_operation_and_no_discovery_tool() {
        let tools = tools_with(|_| {});
        let listed = names(&tools, "/mcp/all");
        assert_eq!(listed.len(), Catalog::bundled().len() + 1);
        assert!(!listed.contains(&SEARCH_TOOL_NAME.to_owned()));
    }

    #[test]
    fn a_toolset_url_lists_exactly_its_toolsets_plus_discovery() {
        let tools = tools_with(|_| {});
        let listed = names(&tools, "/mcp/x/repository.releases");
        let releases = Catalog::bundled()
            .operations()
            .iter()
            .filter(|op| op.toolsets.iter().any(|t| t == "repository.releases"))
            .count();
        assert_eq!(listed.len(), releases + 3);
        assert!(!listed.contains(&RAW_TOOL_NAME.to_owned()));
        assert!(
            names(&tools, "/mcp/x/repository.releases,raw").contains(&RAW_TOOL_NAME.to_owned())
        );
    }

    #[test]
    fn readonly_drops_writes_and_the_write_call_tool() {
        let tools = tools_with(|_| {});
        let listed = names(&tools, "/mcp/x/issue/readonly");
        assert!(listed.contains(&"gitea_issue_list_issues".to_owned()));
        assert!(!listed.contains(&"gitea_issue_create_issue".to_owned()));
        assert!(!listed.contains(&CALL_WRITE_TOOL_NAME.to_owned()));
    }

    #[test]
    fn a_url_never_widens_the_server_settings() {
        let tools = tools_with(|s| {
            s.read_only = true;
            s.toolsets = Some(vec!["issue".into()]);
        });
        let listed = names(&tools, "/mcp/all");
        assert!(listed.iter().all(|n| !n.contains("create")));
        assert!(!listed.contains(&"gitea_repo_get".to_owned()));
        assert!(tools.check(&surface("/mcp/x/repository.releases")).is_err());
    }

    #[test]
    fn disabled_tools_can_hide_a_discovery_tool() {
        let tools = tools_with(|s| s.disabled_tools = vec![CALL_WRITE_TOOL_NAME.into()]);
        let listed = names(&tools, "/mcp");
        assert!(!listed.contains(&CALL_WRITE_TOOL_NAME.to_owned()));
        assert!(listed.contains(&CALL_READ_TOOL_NAME.to_owned()));
        assert!(!tools.lists_fixed(&surface("/mcp"), CALL_WRITE_TOOL_NAME));
    }

    #[test]
    fn discover_mode_holds_on_every_url() {
        let tools = tools_with(|s| s.tool_mode = ToolMode::Discover);
        for path in ["/mcp", "/mcp/all", "/mcp/x/issue"] {
            assert!(
                names(&tools, path)
                    .iter()
                    .all(|n| tools.catalog.get(n).is_none()),
                "{path}"
            );
        }
    }

    #[test]
    /// Issue 44: at least 28 tools in 18,000 bytes, what a model reads of
    /// the list on every turn (`tools/list`'s result as JSON).
    fn the_default_surface_lists_at_least_28_tools_in_18_000_bytes() {
        let tools = tools_with(|_| {});
        let list = tools.tools(&surface("/mcp"));
        let bytes = serde_json::to_string(&serde_json::json!({ "tools": &*list }))
            .unwrap()
            .len();
        println!("/mcp: {} tools, {bytes} bytes", list.len());
        assert!((28..=40).contains(&list.len()), "{} tools", list.len());
        assert!(bytes <= 18_000, "{bytes} bytes");
    }

    #[test]
    fn every_nameable_toolset_fits_vs_codes_limit() {
        let tools = tools_with(|_| {});
        for name in Catalog::bundled().toolset_names() {
            let count = tools.tools(&surface(&format!("/mcp/x/{name},raw"))).len();
            assert!(count <= 128, "{name}: {count} tools");
        }
    }
}
