//! Discover mode: instead of one tool per operation, a search tool that
//! finds operations (with their input schemas) and a call tool that runs
//! one by name. Both go through the same exposure rules, validation,
//! executor and envelope as the direct tools; this module only holds the
//! meta-tools' schemas and the search ranking.

use serde_json::{Value, json};

use crate::catalog::Operation;

pub const SEARCH_TOOL_NAME: &str = "gitea_search_operations";
pub const CALL_TOOL_NAME: &str = "gitea_call_operation";

pub const SEARCH_TOOL_DESCRIPTION: &str = "Search the Gitea API operations this gateway exposes, by words (e.g. \"list pull requests\", \"create release\") and optionally by toolset. Returns each operation's name, method, route, summary and input schema; run one with gitea_call_operation.";
pub const CALL_TOOL_DESCRIPTION: &str = "Run one Gitea API operation by the name gitea_search_operations returned, with arguments matching its input schema. The result is the same envelope as a direct tool call.";

pub const DEFAULT_SEARCH_LIMIT: usize = 10;

pub fn search_tool_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 200,
                "description": "Words to look for in operation names, summaries and routes"},
            "toolset": {"type": "string", "maxLength": 64,
                "description": "Only operations of this toolset (e.g. issue, repository, repository.pulls)"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": DEFAULT_SEARCH_LIMIT}
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

pub fn call_tool_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 128,
                "description": "Operation name, e.g. gitea_issue_list_issues"},
            "arguments": {"type": "object", "description": "Arguments for the operation's input schema"}
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
            let route = op.route.to_lowercase();
            let description = op.description.to_lowercase();
            let (mut matched, mut score) = (0, 0);
            for word in &words {
                let stem = word
                    .strip_suffix('s')
                    .filter(|s| s.len() > 2)
                    .unwrap_or(word);
                let hit = [(&name, 3), (&summary, 3), (&route, 2), (&description, 1)]
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
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, _, op)| op)
        .collect()
}

/// The search result for one operation.
pub fn describe_operation(op: &Operation) -> Value {
    json!({
        "name": op.tool_name,
        "method": op.method.as_str(),
        "route": op.route,
        "toolset": op.toolset,
        "summary": op.summary,
        "read_only": op.is_read_only(),
        "input_schema": Value::Object(op.input_schema.as_ref().clone()),
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
