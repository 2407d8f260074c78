//! MCP tool definitions (`rmcp::model::Tool`) for catalog operations, the
//! raw tool and the discovery tools, with their annotations (no titles:
//! the names and descriptions say it); GET/HEAD read-only; writes that only add `destructiveHint:
//! false`, the others `true` (the catalog's [`Effect`]); `idempotentHint`
//! by HTTP method; nothing is open-world.
//!
//! An operation tool's listed schema leaves out the arguments every
//! operation shares (`view`, `page`, `limit`, and `sudo` for the admin
//! token), which the server's instructions describe once: a model reads
//! the tool list on every turn, and they were 28 copies of the same words
//! (issue 44). They are still accepted: validation holds each call to the
//! operation's whole schema, which has them. So the listed schema does not
//! say `additionalProperties: false`, which would tell a strict client
//! that the shared arguments are refused.

use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value};

use crate::catalog::{Effect, Operation, VIEW_PROPERTY};

/// The arguments every operation may take that the server's instructions
/// describe once (`sudo` is never in an operation's schema to begin with).
pub const SHARED_ARGUMENTS: [&str; 3] = [VIEW_PROPERTY, "page", "limit"];

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

/// The tool for one catalog operation, with its listed schema. No
/// `title`: the name and the description say it, and a model pays for
/// every byte of the list on every turn (issue 44); the search results and
/// the pages show the title.
pub fn operation_tool(op: &Operation) -> Tool {
    Tool::new(
        op.tool_name.clone(),
        op.description.clone(),
        Arc::new(listed_schema(op.input_schema.object())),
    )
    .annotate(annotations(op.effect, op.is_idempotent()))
}

/// An operation's input schema as `tools/list` shows it: without the
/// shared arguments and `additionalProperties` (see the module comment),
/// and without the request body's deprecated fields, which Gitea replaced
/// with another the list shows (`assignee` by `assignees`); a call may
/// still send them.
fn listed_schema(schema: &Map<String, Value>) -> Map<String, Value> {
    let mut listed = schema.clone();
    listed.remove("additionalProperties");
    if let Some(Value::Object(properties)) = listed.get_mut("properties") {
        for shared in SHARED_ARGUMENTS {
            properties.remove(shared);
        }
        if let Some(Value::Object(body)) = properties
            .get_mut("body")
            .and_then(|body| body.get_mut("properties"))
        {
            body.retain(|_, field| !is_deprecated(field));
        }
    }
    listed
}

/// A field whose description says Gitea replaced it (the catalog's
/// wording: `deprecated: <the replacement>`).
fn is_deprecated(field: &Value) -> bool {
    field
        .get("description")
        .and_then(Value::as_str)
        .is_some_and(|d| d.starts_with("deprecated"))
}

/// A tool from a schema given as JSON (the raw tool, the discovery tools).
pub fn fixed_tool(
    name: &'static str,
    description: &'static str,
    schema: Value,
    effect: Effect,
) -> Tool {
    let schema: Map<String, Value> = match schema {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    Tool::new(name, description, Arc::new(schema)).annotate(annotations(effect, false))
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
    fn a_listed_schema_leaves_the_shared_arguments_to_the_instructions() {
        let op = Catalog::bundled();
        let op = op.get("gitea_repo_get_all_commits").unwrap();
        let listed = operation_tool(op).input_schema;
        let properties = listed["properties"].as_object().unwrap();
        for shared in ["view", "page", "limit", "sudo"] {
            assert!(!properties.contains_key(shared), "{shared}");
        }
        assert!(properties.contains_key("sha"));
        assert!(listed.get("additionalProperties").is_none());
        // The operation's own schema keeps them: validation uses it.
        assert!(op.input_schema.object()["properties"].get("page").is_some());
    }

    #[test]
    fn every_operation_has_a_short_title_for_search_results_and_pages() {
        for op in Catalog::bundled().operations() {
            assert!(
                !op.title.is_empty() && op.title.chars().count() <= 80,
                "{}",
                op.tool_name
            );
        }
    }
}
