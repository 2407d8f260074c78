//! Who asks, as far as the tools are concerned. The admin token (stdio,
//! the static bearer, unauthenticated loopback) may act as another user
//! through Gitea's `Sudo` header; a person signed in with OAuth acts only
//! as themselves: an agent of theirs must not impersonate anybody, even
//! when the person is a site admin. So `sudo` is listed, and accepted, only
//! for the admin token, and the schemas everyone else reads stay smaller
//! (`docs/tools.md`, "Sudo").

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::Value;

use crate::catalog::{SUDO_PROPERTY, sudo_property};
use crate::identity::IdentityMode;

/// The two kinds of caller the tool list and validation tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Caller {
    /// The operator's admin token: `sudo` is listed and accepted.
    AdminToken,
    /// A person's own Gitea session: no `sudo`.
    Person,
}

impl Caller {
    pub fn of(mode: IdentityMode) -> Self {
        match mode {
            IdentityMode::Oauth => Self::Person,
            IdentityMode::Stdio | IdentityMode::Bearer | IdentityMode::Loopback => Self::AdminToken,
        }
    }

    pub fn may_sudo(self) -> bool {
        self == Self::AdminToken
    }
}

/// `tool` with the `sudo` argument in its schema (for the admin token's
/// list): the operation tools and the raw tool take it.
pub fn with_sudo(tool: &Tool) -> Tool {
    let mut schema = tool.input_schema.as_ref().clone();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(SUDO_PROPERTY.into(), sudo_property());
    }
    let mut tool = tool.clone();
    tool.input_schema = Arc::new(schema);
    tool
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::mcp::tools::operation_tool;

    #[test]
    fn only_the_admin_token_may_sudo() {
        assert!(Caller::of(IdentityMode::Stdio).may_sudo());
        assert!(Caller::of(IdentityMode::Bearer).may_sudo());
        assert!(Caller::of(IdentityMode::Loopback).may_sudo());
        assert!(!Caller::of(IdentityMode::Oauth).may_sudo());
    }

    #[test]
    fn sudo_is_added_to_a_copy_of_the_schema() {
        let tool = operation_tool(Catalog::bundled().get("gitea_issue_get_issue").unwrap());
        assert!(tool.input_schema["properties"].get(SUDO_PROPERTY).is_none());
        let admin = with_sudo(&tool);
        assert_eq!(
            admin.input_schema["properties"][SUDO_PROPERTY]["type"],
            "string"
        );
        assert!(tool.input_schema["properties"].get(SUDO_PROPERTY).is_none());
    }
}
