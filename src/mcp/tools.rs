//! MCP tool definitions (`rmcp::model::Tool`) for catalog operations, the
//! raw tool and the discover-mode meta-tools, with their annotations:
//! GET/HEAD are read-only, DELETE is destructive, nothing is open-world.

use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value};

use crate::catalog::Operation;

/// The tool for one catalog operation.
pub fn operation_tool(op: &Operation) -> Tool {
    let mut annotations = ToolAnnotations::new()
        .read_only(op.is_read_only())
        .open_world(false);
    if op.method == http::Method::DELETE {
        annotations = annotations.destructive(true);
    }
    Tool::new(
        op.tool_name.clone(),
        op.description.clone(),
        op.input_schema.clone(),
    )
    .annotate(annotations)
}

/// A tool from a schema given as JSON (the raw tool, the meta-tools).
pub fn fixed_tool(
    name: &'static str,
    description: &'static str,
    schema: Value,
    read_only: bool,
) -> Tool {
    let schema: Map<String, Value> = match schema {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let mut annotations = ToolAnnotations::new()
        .read_only(read_only)
        .open_world(false);
    if !read_only {
        annotations = annotations.destructive(true);
    }
    Tool::new(name, description, Arc::new(schema)).annotate(annotations)
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
    fn delete_tools_are_destructive() {
        let a = tool("gitea_repo_delete").annotations.unwrap();
        assert_eq!(a.read_only_hint, Some(false));
        assert_eq!(a.destructive_hint, Some(true));
    }
}
