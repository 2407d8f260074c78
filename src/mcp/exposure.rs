//! Which operations the gateway exposes: `READ_ONLY`, `TOOLSETS` and
//! `DISABLED_TOOLS`, plus the raw tool's killswitch. A hidden tool is absent
//! from `tools/list` and calling it answers like an unknown tool.

use crate::catalog::{Catalog, Operation};
use crate::config::{ConfigError, ExposureSettings};
use crate::gitea::raw::RAW_TOOL_NAME;

pub use crate::catalog::toolsets::RAW_TOOLSET;

#[derive(Debug, Clone)]
pub struct Exposure {
    settings: ExposureSettings,
}

impl Exposure {
    pub fn new(settings: ExposureSettings) -> Self {
        Self { settings }
    }

    pub fn settings(&self) -> &ExposureSettings {
        &self.settings
    }

    fn in_toolsets(&self, toolsets: &[String]) -> bool {
        match &self.settings.toolsets {
            None => true,
            Some(wanted) => toolsets.iter().any(|t| wanted.contains(t)),
        }
    }

    /// `DISABLED_TOOLS` names `name` (an operation, the raw tool, or a
    /// discovery tool).
    pub fn disabled(&self, name: &str) -> bool {
        self.settings.disabled_tools.iter().any(|d| d == name)
    }

    /// True when `op` is visible and callable: `DISABLED_TOOLS` names
    /// neither it nor, for a deprecated operation, its current twin.
    pub fn exposes(&self, op: &Operation) -> bool {
        (!self.settings.read_only || op.is_read_only())
            && self.in_toolsets(&op.toolsets)
            && !self.disables(op)
    }

    /// `DISABLED_TOOLS` names the operation by one of its rule names.
    pub fn disables(&self, op: &Operation) -> bool {
        op.rule_names().any(|name| self.disabled(name))
    }

    /// The raw tool is on unless killed, disabled by name, or left out of
    /// an explicit `TOOLSETS` (it reaches every route, so a narrowed
    /// toolset list must name `raw` to keep it).
    pub fn exposes_raw_tool(&self) -> bool {
        self.settings.raw_api_enabled
            && !self.disabled(RAW_TOOL_NAME)
            && self.in_toolsets(&[RAW_TOOLSET.to_owned()])
    }

    /// `DISABLED_TOOLS` may name `gitea_api_request:<METHOD>:<top-segment>`.
    pub fn allows_raw_virtual_name(&self, virtual_name: &str) -> bool {
        !self.disabled(virtual_name)
    }

    /// Fails startup when `TOOLSETS` names a toolset the catalog lacks.
    pub fn check_against(&self, catalog: &Catalog) -> Result<(), ConfigError> {
        let known = catalog.toolset_names();
        let wanted = self.settings.toolsets.iter().flatten();
        if let Some(unknown) = wanted
            .into_iter()
            .find(|t| t.as_str() != RAW_TOOLSET && !known.contains(t))
        {
            return Err(ConfigError::new(
                "TOOLSETS",
                format!(
                    "names an unknown toolset `{unknown}`{} (see `aegis-gitea-mcp catalog --toolsets`)",
                    crate::catalog::toolsets::unknown_toolset_hint(unknown)
                ),
            ));
        }
        for name in &self.settings.disabled_tools {
            let known_tool = catalog.get(name).is_some()
                || name == RAW_TOOL_NAME
                || name.starts_with(&format!("{RAW_TOOL_NAME}:"))
                || crate::mcp::discover::DISCOVERY_TOOL_NAMES.contains(&name.as_str());
            if !known_tool {
                tracing::warn!(tool = %name, "DISABLED_TOOLS names a tool this catalog does not have");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exposure(f: impl FnOnce(&mut ExposureSettings)) -> Exposure {
        let mut s = ExposureSettings {
            raw_api_enabled: true,
            ..ExposureSettings::default()
        };
        f(&mut s);
        Exposure::new(s)
    }

    fn op(name: &str) -> Operation {
        Catalog::bundled().get(name).unwrap().clone()
    }

    #[test]
    fn everything_is_exposed_by_default() {
        let e = exposure(|_| {});
        assert!(Catalog::bundled().operations().iter().all(|o| e.exposes(o)));
        assert!(e.exposes_raw_tool());
    }

    #[test]
    fn read_only_hides_writes() {
        let e = exposure(|s| s.read_only = true);
        assert!(e.exposes(&op("gitea_issue_list_issues")));
        assert!(!e.exposes(&op("gitea_issue_create_issue")));
        assert!(!e.exposes(&op("gitea_repo_delete")));
    }

    #[test]
    fn toolsets_narrow_to_named_tags_and_hide_the_raw_tool() {
        let e = exposure(|s| s.toolsets = Some(vec!["issue".into()]));
        assert!(e.exposes(&op("gitea_issue_list_issues")));
        assert!(!e.exposes(&op("gitea_repo_get")));
        assert!(!e.exposes_raw_tool());
        let e = exposure(|s| s.toolsets = Some(vec!["issue".into(), "raw".into()]));
        assert!(e.exposes_raw_tool());
    }

    #[test]
    fn disabled_tools_hide_named_tools_and_raw_virtual_names() {
        let e = exposure(|s| {
            s.disabled_tools = vec![
                "gitea_repo_delete".into(),
                "gitea_api_request:DELETE:repos".into(),
            ]
        });
        assert!(!e.exposes(&op("gitea_repo_delete")));
        assert!(!e.allows_raw_virtual_name("gitea_api_request:DELETE:repos"));
        assert!(e.allows_raw_virtual_name("gitea_api_request:GET:repos"));
    }

    #[test]
    fn disabling_an_operation_disables_its_deprecated_twin() {
        let e = exposure(|s| s.disabled_tools = vec!["gitea_issue_delete_comment".into()]);
        assert!(!e.exposes(&op("gitea_issue_delete_comment_deprecated")));
        assert!(e.exposes(&op("gitea_issue_edit_comment_deprecated")));
    }

    #[test]
    fn raw_killswitch_hides_the_raw_tool() {
        assert!(!exposure(|s| s.raw_api_enabled = false).exposes_raw_tool());
    }

    #[test]
    fn unknown_toolset_fails_the_startup_check() {
        let e = exposure(|s| s.toolsets = Some(vec!["nope".into()]));
        assert_eq!(
            e.check_against(&Catalog::bundled()).unwrap_err().setting,
            "TOOLSETS"
        );
    }
}
