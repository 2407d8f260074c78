//! The search tool, `gitea_search_operations`: the operations a URL can
//! run that best match a few words, or one operation by name with its full
//! input schema. It reads the catalog; nothing goes to Gitea.

use serde_json::{Map, Value, json};

use super::discover::{
    DEFAULT_SEARCH_LIMIT, NEAR_RESULTS, describe_found, describe_operation, nothing_found,
};
use super::tool_lists::ToolLists;
use super::tool_outcome::ToolOutcome;
use crate::gitea::ToolError;
use crate::surface::Surface;

/// `gitea_search_operations`: the operations this surface can run that
/// best match `query` (in `toolset`, when given), or, by `name`, one
/// operation with its full input schema.
pub fn search_operations(
    tools: &ToolLists,
    surface: &Surface,
    args: &Map<String, Value>,
) -> ToolOutcome {
    let catalog = tools.catalog();
    if let Some(name) = args.get("name").and_then(Value::as_str) {
        let Some(op) = catalog.get(name).filter(|op| tools.callable(surface, op)) else {
            return ToolOutcome::error(ToolError::invalid_arguments(
                "`name` is not an operation this URL exposes; search with `query`",
            ));
        };
        return ToolOutcome::Success {
            status: None,
            body: describe_operation(op, tools.call_with(surface, op)).to_string(),
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
        toolset.is_none_or(|t| op.toolsets.iter().any(|s| s == t)) && tools.callable(surface, op)
    };
    let index = catalog.search_index();
    let found: Vec<Value> = index
        .search(query, keep, limit)
        .into_iter()
        .map(|i| describe_found(&ops[i], tools.call_with(surface, &ops[i])))
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
