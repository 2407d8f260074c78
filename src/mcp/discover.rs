//! The discovery tools: a search tool that finds operations (with their
//! input schemas), a read-only call tool that runs GET/HEAD operations by
//! name, and a call tool for writes. They reach every operation of a
//! surface that is not listed as its own tool (core and discover modes,
//! toolset URLs). Calls through them go through the same exposure rules,
//! validation, executor, audit entry and envelope as the direct tools; this
//! module only holds their schemas and the search ranking.

use serde_json::{Value, json};

use crate::catalog::Operation;

pub const SEARCH_TOOL_NAME: &str = "gitea_search_operations";
pub const CALL_READ_TOOL_NAME: &str = "gitea_call_read_operation";
pub const CALL_WRITE_TOOL_NAME: &str = "gitea_call_write_operation";

/// The discovery tools, which `DISABLED_TOOLS` may name.
pub const DISCOVERY_TOOL_NAMES: [&str; 3] =
    [SEARCH_TOOL_NAME, CALL_READ_TOOL_NAME, CALL_WRITE_TOOL_NAME];

pub const SEARCH_TOOL_TITLE: &str = "Search Gitea operations";
pub const CALL_READ_TOOL_TITLE: &str = "Run a read-only Gitea operation";
pub const CALL_WRITE_TOOL_TITLE: &str = "Run a Gitea write operation";

pub const SEARCH_TOOL_DESCRIPTION: &str = "Find any Gitea operation this URL reaches, by words (\"delete branch\") and optionally a toolset: its name, summary, input schema, and `call_with`, the tool that runs it.";
pub const CALL_READ_TOOL_DESCRIPTION: &str =
    "Run a read-only operation found with gitea_search_operations, by name, with its arguments.";
pub const CALL_WRITE_TOOL_DESCRIPTION: &str = "Run an operation that changes something (create, edit, merge, delete) found with gitea_search_operations, by name, with its arguments. Confirm destructive ones first.";

/// Which call tool runs an operation the surface does not list.
pub fn call_tool_for(op: &Operation) -> &'static str {
    if op.is_read_only() {
        CALL_READ_TOOL_NAME
    } else {
        CALL_WRITE_TOOL_NAME
    }
}

pub const DEFAULT_SEARCH_LIMIT: usize = 10;

pub fn search_tool_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 200},
            "toolset": {"type": "string", "maxLength": 64,
                "description": "e.g. issue, repository.pulls"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": DEFAULT_SEARCH_LIMIT}
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

/// The schema of both call tools.
pub fn call_tool_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 128,
                "description": "e.g. gitea_issue_list_issues"},
            "arguments": {"type": "object", "description": "per the operation's input schema"}
        },
        "required": ["name"],
        "additionalProperties": false
    })
}

/// Ranks `operations` against the words of `query`: operations matching
/// more words first, then by where they match (name and summary weigh more
/// than the description).
pub fn search<'a>(
    operations: impl Iterator<Item = &'a Operation>,
    query: &str,
    toolset: Option<&str>,
    limit: usize,
) -> Vec<&'a Operation> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut scored: Vec<(usize, usize, &Operation)> = operations
        .filter(|op| toolset.is_none_or(|t| op.toolsets.iter().any(|s| s == t)))
        .filter_map(|op| {
            let name = op.tool_name.replace('_', " ");
            let summary = op.summary.to_lowercase();
            let title = op.title.to_lowercase();
            let route = op.route.to_lowercase();
            let description = op.description.to_lowercase();
            let (mut matched, mut score) = (0, 0);
            for word in &words {
                let stem = word
                    .strip_suffix('s')
                    .filter(|s| s.len() > 2)
                    .unwrap_or(word);
                let hit = [
                    (&name, 3),
                    (&summary, 3),
                    (&title, 2),
                    (&route, 2),
                    (&description, 1),
                ]
                .iter()
                .filter(|(field, _)| field.contains(stem))
                .map(|(_, weight)| *weight)
                .sum::<usize>();
                if hit > 0 {
                    matched += 1;
                    score += hit;
                }
            }
            (matched > 0 || words.is_empty()).then_some((matched, score, op))
        })
        .collect();
    // Equal scores: the shorter name is the more general operation
    // (`list_pull_requests` before `list_pinned_pull_requests`).
    scored.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(b.1.cmp(&a.1))
            .then(a.2.tool_name.len().cmp(&b.2.tool_name.len()))
    });
    scored
        .into_iter()
        .take(limit)
        .map(|(_, _, op)| op)
        .collect()
}

/// The search result for one operation; `call_with` is the tool that runs
/// it on this surface.
pub fn describe_operation(op: &Operation, call_with: &str) -> Value {
    json!({
        "name": op.tool_name,
        "method": op.method.as_str(),
        "route": op.route,
        "toolset": op.toolset,
        "summary": op.summary,
        "read_only": op.is_read_only(),
        "destructive": op.is_destructive(),
        "call_with": call_with,
        "input_schema": Value::Object(op.input_schema.object().as_ref().clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    #[test]
    fn list_pull_requests_finds_the_pull_list_operation_first() {
        let catalog = Catalog::bundled();
        let found = search(catalog.operations().iter(), "list pull requests", None, 5);
        assert_eq!(found[0].tool_name, "gitea_repo_list_pull_requests");
    }

    #[test]
    fn toolset_filter_keeps_only_that_toolset() {
        let catalog = Catalog::bundled();
        let found = search(catalog.operations().iter(), "list", Some("issue"), 50);
        assert!(!found.is_empty());
        assert!(
            found
                .iter()
                .all(|op| op.toolsets.iter().any(|t| t == "issue"))
        );
    }

    #[test]
    fn limit_bounds_the_result() {
        let catalog = Catalog::bundled();
        assert_eq!(
            search(catalog.operations().iter(), "repo", None, 3).len(),
            3
        );
    }

    #[test]
    fn nonsense_finds_nothing() {
        let catalog = Catalog::bundled();
        assert!(search(catalog.operations().iter(), "zzqxj", None, 10).is_empty());
    }
}
