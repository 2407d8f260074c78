//! Argument completion (`completion/complete`) for the resource templates
//! and prompts: owners, repositories, branches, tags, issue and pull
//! request numbers, and paths, as the person types them. Pure: a
//! completion is one read (run as a call by `super::reads`, so answered as
//! the user, audited and rate limited like one) and the values picked
//! from its answer.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value, json};

use super::prompts::{PROMPTS, Read};
use super::resources::{Numbered, TEMPLATES};

/// The most values a completion gives (MCP's limit).
pub const MAX_VALUES: usize = 100;
/// Items a completion's read asks Gitea for.
const READ_LIMIT: u64 = 50;
/// The longest typed value completed.
pub const MAX_TYPED_CHARS: usize = 256;

/// What is being completed: an argument of a prompt, or of a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject<'a> {
    Prompt(&'a str),
    Template(&'a str),
}

/// How the values are picked from the read's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// The owners of the repositories listed.
    Owners,
    /// The names of the repositories of `owner` listed.
    Repos { owner: String },
    /// Each item's `name` (branches, tags).
    Names,
    /// Each item's `number` (issues, pull requests).
    Numbers,
    /// The entries of a folder, as paths under `folder` (folders end in /).
    Paths { folder: String },
}

/// A completion to make: nothing (an argument with no values to offer,
/// or one that needs an owner and repository not given yet), or a read.
#[derive(Debug, Clone, PartialEq)]
pub enum Completion {
    Nothing,
    Read { read: Read, pick: Pick },
}

/// The completion of `argument` (typed so far: `typed`) of `subject`,
/// given the arguments already chosen (`chosen`).
pub fn plan(
    subject: Subject<'_>,
    argument: &str,
    typed: &str,
    chosen: &HashMap<String, String>,
) -> Completion {
    if typed.chars().count() > MAX_TYPED_CHARS {
        return Completion::Nothing;
    }
    let read = |operation, args: Value, pick| {
        let Value::Object(args) = args else {
            return Completion::Nothing;
        };
        Completion::Read {
            read: Read {
                heading: String::new(),
                operation,
                args,
            },
            pick,
        }
    };
    if argument == "owner" {
        return read(
            "gitea_user_current_list_repos",
            json!({"limit": READ_LIMIT}),
            Pick::Owners,
        );
    }
    let Some(owner) = chosen.get("owner").filter(|o| !o.is_empty()) else {
        return Completion::Nothing;
    };
    if argument == "repo" {
        let mut args = json!({"limit": READ_LIMIT});
        if !typed.is_empty() {
            args["q"] = json!(typed);
        }
        return read(
            "gitea_repo_search",
            args,
            Pick::Repos {
                owner: owner.clone(),
            },
        );
    }
    let Some(repo) = chosen.get("repo").filter(|r| !r.is_empty()) else {
        return Completion::Nothing;
    };
    in_repository(subject, argument, typed, chosen, (owner, repo))
}

/// A completion within the chosen repository: refs, tags, paths, numbers.
fn in_repository(
    subject: Subject<'_>,
    argument: &str,
    typed: &str,
    chosen: &HashMap<String, String>,
    (owner, repo): (&str, &str),
) -> Completion {
    let read = |operation, args: Value, pick| match args {
        Value::Object(args) => Completion::Read {
            read: Read {
                heading: String::new(),
                operation,
                args,
            },
            pick,
        },
        _ => Completion::Nothing,
    };
    let base = json!({"owner": owner, "repo": repo, "limit": READ_LIMIT});
    let with = |extra: Value| {
        let mut args = base.clone();
        if let (Value::Object(args), Value::Object(extra)) = (&mut args, extra) {
            args.extend(extra);
        }
        args
    };
    match (subject, argument) {
        (_, "ref") => read("gitea_repo_list_branches", with(json!({})), Pick::Names),
        (_, "from" | "to") => read("gitea_repo_list_tags", with(json!({})), Pick::Names),
        (_, "path") => {
            let folder = typed.rsplit_once('/').map_or("", |(folder, _)| folder);
            let mut args = with(json!({}));
            if let Some(reference) = chosen.get("ref").filter(|r| !r.is_empty()) {
                args["ref"] = json!(reference);
            }
            if let Value::Object(map) = &mut args {
                map.remove("limit");
            }
            if folder.is_empty() {
                read(
                    "gitea_repo_get_contents_list",
                    args,
                    Pick::Paths {
                        folder: String::new(),
                    },
                )
            } else {
                args["filepath"] = json!(folder);
                read(
                    "gitea_repo_get_contents",
                    args,
                    Pick::Paths {
                        folder: format!("{folder}/"),
                    },
                )
            }
        }
        (_, "index") => match numbered(subject) {
            Some(Numbered::PullRequests) => read(
                "gitea_repo_list_pull_requests",
                with(json!({"state": "open"})),
                Pick::Numbers,
            ),
            Some(Numbered::Issues) => read(
                "gitea_issue_list_issues",
                with(json!({"state": "open", "type": "issues"})),
                Pick::Numbers,
            ),
            None => Completion::Nothing,
        },
        _ => Completion::Nothing,
    }
}

/// What the `index` of `subject` numbers: its template's or prompt's own
/// word, by exact name (an unknown subject numbers nothing).
fn numbered(subject: Subject<'_>) -> Option<Numbered> {
    match subject {
        Subject::Template(uri) => TEMPLATES
            .iter()
            .find(|t| t.uri_template == uri)
            .and_then(|t| t.index),
        Subject::Prompt(name) => PROMPTS
            .iter()
            .find(|p| p.name == name)
            .and_then(|p| p.index),
    }
}

/// The values `pick` finds in `envelope` (a read's answer) that start
/// with `typed` (case aside), sorted, at most [`MAX_VALUES`].
pub fn values(pick: &Pick, envelope: &str, typed: &str) -> Vec<String> {
    let parsed: Value = serde_json::from_str(envelope).unwrap_or(Value::Null);
    let items = items(parsed.get("data"));
    let typed_lower = typed.to_lowercase();
    let found: BTreeSet<String> = items
        .iter()
        .filter_map(|item| pick_one(pick, item))
        .filter(|value| value.to_lowercase().starts_with(&typed_lower))
        .collect();
    found.into_iter().take(MAX_VALUES).collect()
}

/// The list of an answer: `data` itself, or the first list inside it (a
/// search's `{"data": [...], "ok": true}`).
fn items(data: Option<&Value>) -> Vec<&Map<String, Value>> {
    let list = match data {
        Some(Value::Array(list)) => Some(list),
        Some(Value::Object(map)) => map.values().find_map(Value::as_array),
        _ => None,
    };
    list.map(|l| l.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default()
}

fn pick_one(pick: &Pick, item: &Map<String, Value>) -> Option<String> {
    let text = |key: &str| item.get(key).and_then(Value::as_str).map(str::to_owned);
    match pick {
        Pick::Owners => text("full_name")
            .and_then(|full| full.split_once('/').map(|(owner, _)| owner.to_owned()))
            .or_else(|| owner_name(item)),
        Pick::Repos { owner } => {
            let full = text("full_name")?;
            let (their_owner, name) = full.split_once('/')?;
            their_owner
                .eq_ignore_ascii_case(owner)
                .then(|| name.to_owned())
        }
        Pick::Names => text("name"),
        Pick::Numbers => item
            .get("number")
            .and_then(Value::as_u64)
            .map(|n| n.to_string()),
        Pick::Paths { folder } => {
            let name = text("name")?;
            let slash = if text("type").as_deref() == Some("dir") {
                "/"
            } else {
                ""
            };
            Some(format!("{folder}{name}{slash}"))
        }
    }
}

/// A repository's owner as the compact view or Gitea's full object has it.
fn owner_name(item: &Map<String, Value>) -> Option<String> {
    match item.get("owner")? {
        Value::String(login) => Some(login.clone()),
        Value::Object(owner) => owner
            .get("login")
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn chosen(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn operation(completion: &Completion) -> Option<&'static str> {
        match completion {
            Completion::Read { read, .. } => Some(read.operation),
            Completion::Nothing => None,
        }
    }

    #[test]
    fn every_completion_reads_an_operation_that_only_reads() {
        let catalog = Catalog::bundled();
        let all = chosen(&[("owner", "a"), ("repo", "b"), ("ref", "main")]);
        let subjects = [
            Subject::Prompt("review_pull_request"),
            Subject::Prompt("summarize_issue"),
            Subject::Template("gitea://{owner}/{repo}/contents/{+path}{?ref}"),
            Subject::Template("gitea://{owner}/{repo}/pulls/{index}"),
        ];
        for subject in subjects {
            for argument in ["owner", "repo", "ref", "from", "to", "path", "index"] {
                for typed in ["", "src/m"] {
                    if let Some(name) = operation(&plan(subject, argument, typed, &all)) {
                        let op = catalog.get(name).expect("an operation");
                        assert!(op.is_read_only(), "{argument} reads through {name}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_repository_argument_waits_for_its_owner() {
        let subject = Subject::Prompt("summarize_issue");
        assert_eq!(
            plan(subject, "index", "", &chosen(&[])),
            Completion::Nothing
        );
        assert_eq!(
            plan(subject, "index", "", &chosen(&[("owner", "a")])),
            Completion::Nothing
        );
        assert_eq!(
            operation(&plan(
                subject,
                "index",
                "4",
                &chosen(&[("owner", "a"), ("repo", "b")])
            )),
            Some("gitea_issue_list_issues")
        );
    }

    #[test]
    fn pull_requests_are_completed_for_the_review_prompt() {
        let both = chosen(&[("owner", "a"), ("repo", "b")]);
        assert_eq!(
            operation(&plan(
                Subject::Prompt("review_pull_request"),
                "index",
                "",
                &both
            )),
            Some("gitea_repo_list_pull_requests")
        );
    }

    #[test]
    fn an_argument_with_nothing_to_offer_completes_to_nothing() {
        let both = chosen(&[("owner", "a"), ("repo", "b")]);
        assert_eq!(
            plan(
                Subject::Prompt("test_prompt_with_arguments"),
                "arg1",
                "t",
                &both
            ),
            Completion::Nothing
        );
        let long = "x".repeat(MAX_TYPED_CHARS + 1);
        assert_eq!(
            plan(Subject::Prompt("triage_issues"), "owner", &long, &both),
            Completion::Nothing
        );
    }

    #[test]
    fn values_start_with_what_was_typed_sorted_and_bounded() {
        let names: Vec<Value> = (0..150)
            .map(|i| json!({"name": format!("b{i:03}")}))
            .collect();
        let mut list = names.clone();
        list.push(json!({"name": "main"}));
        let envelope = json!({"data": list}).to_string();
        let found = values(&Pick::Names, &envelope, "B");
        assert_eq!(found.len(), MAX_VALUES);
        assert_eq!(found[0], "b000");
        assert_eq!(values(&Pick::Names, &envelope, "ma"), ["main"]);
    }

    #[test]
    fn repositories_of_the_chosen_owner_and_owners_from_a_search() {
        let envelope = json!({"data": {"ok": true, "data": [
            {"full_name": "acme/app"}, {"full_name": "acme/api"}, {"full_name": "bob/app"}
        ]}})
        .to_string();
        let repos = values(
            &Pick::Repos {
                owner: "ACME".into(),
            },
            &envelope,
            "a",
        );
        assert_eq!(repos, ["api", "app"]);
        assert_eq!(values(&Pick::Owners, &envelope, ""), ["acme", "bob"]);
    }

    #[test]
    fn paths_complete_inside_the_folder_typed() {
        let envelope = json!({"data": [
            {"name": "main.rs", "type": "file"}, {"name": "mcp", "type": "dir"}
        ]})
        .to_string();
        let pick = Pick::Paths {
            folder: "src/".into(),
        };
        assert_eq!(
            values(&pick, &envelope, "src/m"),
            ["src/main.rs", "src/mcp/"]
        );
    }
}
