//! The discovery tools: a search tool that finds operations (each with its
//! arguments in one line; one operation's full input schema by name), a
//! read-only call tool that runs GET/HEAD operations by name, and a call
//! tool for writes. They reach every operation of a surface that is not
//! listed as its own tool (core and discover modes, toolset URLs). Calls
//! through them go through the same exposure rules, validation, executor,
//! audit entry and envelope as the direct tools; this module holds their
//! schemas and what a search answers with. The ranking is
//! `crate::catalog::search`.

use serde_json::{Map, Value, json};

use crate::catalog::{Operation, SUDO_PROPERTY, VIEW_PROPERTY};

pub const SEARCH_TOOL_NAME: &str = "gitea_search_operations";
pub const CALL_READ_TOOL_NAME: &str = "gitea_call_read_operation";
pub const CALL_WRITE_TOOL_NAME: &str = "gitea_call_write_operation";

/// The discovery tools, which `DISABLED_TOOLS` may name.
pub const DISCOVERY_TOOL_NAMES: [&str; 3] =
    [SEARCH_TOOL_NAME, CALL_READ_TOOL_NAME, CALL_WRITE_TOOL_NAME];

pub const SEARCH_TOOL_DESCRIPTION: &str = "Find any Gitea operation by a few words (\"webhooks of a repo\"): its name, what it does, its arguments and `call_with`, the tool that runs it. `name` gives one operation's full schema.";
pub const CALL_READ_TOOL_DESCRIPTION: &str =
    "Run a read-only operation found with gitea_search_operations, by name.";
pub const CALL_WRITE_TOOL_DESCRIPTION: &str = "Run an operation that changes something, found with gitea_search_operations, by name. Confirm destructive ones first.";

/// Which call tool runs an operation the surface does not list.
pub fn call_tool_for(op: &Operation) -> &'static str {
    if op.is_read_only() {
        CALL_READ_TOOL_NAME
    } else {
        CALL_WRITE_TOOL_NAME
    }
}

/// Results a search gives unless asked for more: the right one is nearly
/// always among the first few (the recall on the evaluation sets is in
/// `docs/benchmarks.md`), and each result costs a model's context.
pub const DEFAULT_SEARCH_LIMIT: usize = 5;

pub fn search_tool_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 200},
            "name": {"type": "string", "minLength": 1, "maxLength": 128,
                "description": "for one operation's full schema"},
            "toolset": {"type": "string", "maxLength": 64,
                "description": "e.g. issue, repository.pulls"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": DEFAULT_SEARCH_LIMIT}
        },
        "additionalProperties": false
    })
}

/// The schema of both call tools.
pub fn call_tool_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 128},
            "arguments": {"type": "object"}
        },
        "required": ["name"],
        "additionalProperties": false
    })
}

/// Arguments every operation may take that the server's instructions
/// describe once, and a search result leaves out.
const SHARED_ARGUMENTS: [&str; 4] = [VIEW_PROPERTY, SUDO_PROPERTY, "page", "limit"];

/// One search result: the operation's name, what it does, its arguments
/// in one line, and `call_with`, the tool that runs it on this surface;
/// `destructive` when it is.
pub fn describe_found(op: &Operation, call_with: &str) -> Value {
    let mut found = Map::new();
    found.insert("name".into(), json!(op.tool_name));
    // What it is for in a person's words, where Gitea's summary says how.
    let does = crate::catalog::search::purpose(&op.tool_name).unwrap_or(&op.title);
    found.insert("does".into(), json!(does));
    found.insert(
        "args".into(),
        json!(argument_line(op.input_schema.object())),
    );
    found.insert("call_with".into(), json!(call_with));
    if op.is_destructive() {
        found.insert("destructive".into(), json!(true));
    }
    Value::Object(found)
}

/// `owner, repo, index; optional: sha, path`: the schema's arguments,
/// required first, without the shared ones; a `body` object shows its own
/// fields the same way, in braces.
fn argument_line(schema: &Map<String, Value>) -> String {
    let mut line = fields(schema, &SHARED_ARGUMENTS);
    if let Some(body) = schema
        .get("properties")
        .and_then(|p| p.get("body"))
        .and_then(Value::as_object)
        .filter(|body| body.contains_key("properties"))
    {
        line = line.replacen("body", &format!("body {{{}}}", fields(body, &[])), 1);
    }
    line
}

/// The property names of an object schema: the required ones, then
/// `optional:` and the others, leaving out `skip`.
fn fields(schema: &Map<String, Value>, skip: &[&str]) -> String {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let names: Vec<&str> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let shown = names.iter().copied().filter(|name| !skip.contains(name));
    let (first, rest): (Vec<&str>, Vec<&str>) = shown.partition(|name| required.contains(name));
    let rest = match rest.len() {
        n if n > MAX_OPTIONAL_SHOWN => format!(
            "{}, and {} more",
            rest[..MAX_OPTIONAL_SHOWN].join(", "),
            n - MAX_OPTIONAL_SHOWN
        ),
        _ => rest.join(", "),
    };
    match (first.is_empty(), rest.is_empty()) {
        (_, true) => first.join(", "),
        (true, false) => format!("optional: {rest}"),
        (false, false) => format!("{}; optional: {rest}", first.join(", ")),
    }
}

/// Optional fields a search result names at most (the rest: `and N more`,
/// in the schema a search by `name` gives): a branch protection's body has
/// three dozen, and a search naming them all cost more than its answer.
const MAX_OPTIONAL_SHOWN: usize = 12;

/// Operations a search that found nothing looks through for the areas it
/// names ([`nothing_found`]).
pub const NEAR_RESULTS: usize = 12;
/// Areas a search that found nothing names, and operations per area.
const NEAR_AREAS: usize = 3;
const NEAR_PER_AREA: usize = 3;

/// What a search that matched nothing answers: never an empty list alone.
/// It says so, and names the areas (toolsets) of `near`, the operations
/// matching the catalog's words nearest to the query's, a few operations
/// each; without any, every area this surface reaches with its number of
/// operations, so that the next search is informed.
pub fn nothing_found(
    ops: &[Operation],
    near: &[usize],
    reachable: impl Iterator<Item = usize>,
) -> Value {
    let mut areas: Vec<(&str, Vec<Value>)> = Vec::new();
    for &i in near {
        let op = &ops[i];
        let entry = json!({"name": op.tool_name, "does": op.title});
        let full = areas.len() >= NEAR_AREAS;
        match areas.iter_mut().find(|(toolset, _)| *toolset == op.toolset) {
            Some((_, found)) if found.len() < NEAR_PER_AREA => found.push(entry),
            Some(_) => {}
            None if !full => areas.push((&op.toolset, vec![entry])),
            None => {}
        }
    }
    if !areas.is_empty() {
        let areas: Vec<Value> = areas
            .into_iter()
            .map(|(toolset, operations)| json!({"toolset": toolset, "operations": operations}))
            .collect();
        return json!({
            "operations": [],
            "note": "No operation matched these words. The nearest areas follow, with a few of their operations: search again in their words, or pass `toolset`.",
            "areas": areas,
        });
    }
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for i in reachable {
        match counts
            .iter_mut()
            .find(|(toolset, _)| *toolset == ops[i].toolset)
        {
            Some((_, n)) => *n += 1,
            None => counts.push((&ops[i].toolset, 1)),
        }
    }
    counts.sort_unstable();
    let areas: Vec<Value> = counts
        .into_iter()
        .map(|(toolset, n)| json!({"toolset": toolset, "operations": n}))
        .collect();
    json!({
        "operations": [],
        "note": "No operation matched these words. Search again in Gitea's words (repository, issue, pull request, branch, commit, release, webhook, workflow, user, organization, team, package…), or pass one of these `toolset`s.",
        "areas": areas,
    })
}

/// One operation in full, as a search by `name` gives it: its schema too.
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
    fn a_found_operation_shows_its_arguments_in_one_line() {
        let catalog = Catalog::bundled();
        let commits = catalog.get("gitea_repo_get_all_commits").unwrap();
        let found = describe_found(commits, CALL_READ_TOOL_NAME);
        assert_eq!(
            found["args"],
            "owner, repo; optional: sha, path, since, until, stat, verification, files, not"
        );
        assert_eq!(found["call_with"], CALL_READ_TOOL_NAME);
        assert!(found.get("destructive").is_none());
    }

    #[test]
    fn a_body_shows_its_fields_in_braces() {
        let catalog = Catalog::bundled();
        let hook = catalog.get("gitea_repo_create_hook").unwrap();
        let args = describe_found(hook, CALL_WRITE_TOOL_NAME)["args"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(args.starts_with("owner, repo, body {"), "{args}");
        assert!(args.contains("type"), "{args}");
    }

    /// The bytes a search answers with, averaged over the queries of the
    /// four evaluation sets (`cargo test --lib searches_answer -- --nocapture`
    /// prints it): issue 56's bound is 2,000.
    #[test]
    fn searches_answer_in_under_two_thousand_bytes_on_average() {
        let catalog = Catalog::bundled();
        let ops = catalog.operations();
        let index = catalog.search_index();
        let (mut bytes, mut searches) = (0, 0);
        for set in [
            include_str!("../../tests/fixtures/search_eval/intents.json"),
            include_str!("../../tests/fixtures/search_eval/held_out.json"),
            include_str!("../../tests/fixtures/search_eval/fresh.json"),
            include_str!("../../tests/fixtures/search_eval/fourth.json"),
            include_str!("../../tests/fixtures/search_eval/fifth.json"),
            include_str!("../../tests/fixtures/search_eval/sixth.json"),
        ] {
            let set: Value = serde_json::from_str(set).unwrap();
            for intent in set["intents"].as_array().unwrap() {
                let query = intent["query"].as_str().unwrap();
                let found: Vec<Value> = index
                    .search(query, |_| true, DEFAULT_SEARCH_LIMIT)
                    .into_iter()
                    .map(|i| describe_found(&ops[i], call_tool_for(&ops[i])))
                    .collect();
                bytes += json!({"operations": found}).to_string().len();
                searches += 1;
            }
        }
        let mean = bytes / searches;
        println!("{searches} searches, {mean} bytes on average");
        assert!(mean <= 2_000, "{mean} bytes");
    }

    #[test]
    fn a_search_that_matches_nothing_names_areas_not_nothing() {
        let catalog = Catalog::bundled();
        let ops = catalog.operations();
        let index = catalog.search_index();
        assert!(index.search("zzqx wibble", |_| true, 5).is_empty());
        let near = index.search_near("wokflows of acme/app", |_| true, NEAR_RESULTS);
        let answer = nothing_found(ops, &near, 0..ops.len());
        assert_eq!(answer["operations"], json!([]));
        let areas = answer["areas"].as_array().unwrap();
        assert!(!areas.is_empty() && areas.len() <= NEAR_AREAS, "{answer}");
        assert!(
            areas
                .iter()
                .all(|a| a["operations"].as_array().unwrap().len() <= NEAR_PER_AREA)
        );
        let nothing_near = nothing_found(ops, &[], 0..ops.len());
        let every = nothing_near["areas"].as_array().unwrap();
        assert!(
            every
                .iter()
                .any(|a| a["toolset"] == "issue" && a["operations"].as_u64() > Some(10))
        );
    }

    #[test]
    fn a_destructive_operation_says_so() {
        let catalog = Catalog::bundled();
        let delete = catalog.get("gitea_repo_delete_branch").unwrap();
        assert_eq!(
            describe_found(delete, CALL_WRITE_TOOL_NAME)["destructive"],
            true
        );
    }
}
