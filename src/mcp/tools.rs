//! MCP tool definitions (`rmcp::model::Tool`) for catalog operations, the
//! raw tool and the discovery tools, with their annotations: a title on
//! every tool; GET/HEAD read-only; writes that only add `destructiveHint:
//! false`, the others `true` (the catalog's [`Effect`]); `idempotentHint`
//! by HTTP method; nothing is open-world.

use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value};

use crate::catalog::{Effect, Operation};

/// The annotations of a tool with `effect`. A hint whose value is the
/// MCP default is left out where that default is the cautious reading
/// (`readOnlyHint: false`, `idempotentHint: false`); `destructiveHint` is
/// always said of a write, and `openWorldHint: false` of every tool.
/// `idempotent` is only said of writes (a read needs no such hint).
fn annotations(effect: Effect, idempotent: bool) -> ToolAnnotations {
    let annotations = ToolAnnotations::new().open_world(false);
    let annotations = match effect {
        Effect::Read => return annotations.read_only(true),
        Effect::Additive => annotations.destructive(false),
        Effect::Destructive => annotations.destructive(true),
    };
    if idempotent {
        annotations.idempotent(true)
    } else {
        annotations
    }
}

/// The tool for one catalog operation.
pub fn operation_tool(op: &Operation) -> Tool {
    Tool::new(
        op.tool_name.clone(),
        op.description.clone(),
        op.input_schema.object().clone(),
    )
    .with_title(op.title.clone())
    .annotate(annotations(op.effect, op.is_idempotent()))
}

/// A tool from a schema given as JSON (the raw tool, the discovery tools).
pub fn fixed_tool(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    schema: Value,
    effect: Effect,
) -> Tool {
    let schema: Map<String, Value> = match schema {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    Tool::new(name, description, Arc::new(schema))
        .with_title(title)
        .annotate(annotations(effect, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn tool(name: &str) -> Tool {
        operation_tool(Catalog::bundled().get(name).unwrap())
    }

    #[test]
    fn get_tools_are_read_only_and_closed_world() {
        let a = tool("gitea_issue_list_issues").annotations.unwrap();
        assert_eq!(a.read_only_hint, Some(true));
        assert_eq!(a.open_world_hint, Some(false));
        assert_eq!(a.destructive_hint, None);
    }

    #[test]
    fn delete_tools_are_destructive_and_idempotent() {
        let a = tool("gitea_repo_delete").annotations.unwrap();
        assert_eq!(a.read_only_hint, None, "MCP's default: not read-only");
        assert_eq!(a.destructive_hint, Some(true));
        assert_eq!(a.idempotent_hint, Some(true));
    }

    #[test]
    fn writes_that_only_add_are_not_destructive() {
        let a = tool("gitea_issue_create_comment").annotations.unwrap();
        assert_eq!(a.read_only_hint, None);
        assert_eq!(a.destructive_hint, Some(false));
        assert_eq!(a.idempotent_hint, None, "MCP's default: not idempotent");
    }

    #[test]
    fn a_merge_is_destructive() {
        let a = tool("gitea_repo_merge_pull_request").annotations.unwrap();
        assert_eq!(a.destructive_hint, Some(true));
        assert_eq!(a.idempotent_hint, None);
    }

    #[test]
    fn every_operation_tool_has_a_short_title() {
        for op in Catalog::bundled().operations() {
            let title = operation_tool(op).title.unwrap();
            assert!(
                !title.is_empty() && title.chars().count() <= 80,
                "{}",
                op.tool_name
            );
        }
    }
}
