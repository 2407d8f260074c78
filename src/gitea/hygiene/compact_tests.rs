//! The compact view on real answers: each fixture is a body a real Gitea
//! 1.27.1 sent (`tests/fixtures/gitea-1.27.1/`, captured by
//! `tests/e2e/context_bench.py --capture`), run through the shipped result
//! pipeline with its operation's response shape.

use serde_json::Value;

use super::{ResultPolicy, ResultView, tool_result};
use crate::catalog::Catalog;
use crate::config::{Limits, SecretDetectionMode};
use crate::gitea::call::{CallBody, GiteaCall};
use crate::gitea::executor::UpstreamResponse;
use crate::gitea::hygiene::redaction::Redactor;
use crate::identity::{Identity, IdentityMode};

/// A captured answer: `{route, status, headers, body}`.
fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/gitea-1.27.1/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// What `tool` answers, in `view`, when Gitea sends the fixture `name`.
fn answer(tool: &str, name: &str, full: bool) -> (Value, usize) {
    let catalog = Catalog::bundled();
    let op = catalog.get(tool).unwrap();
    let captured = fixture(name);
    let header = |h: &str| captured["headers"][h].as_str().map(str::to_owned);
    let response = UpstreamResponse {
        status: 200,
        content_type: header("content-type"),
        total_count: header("x-total-count").and_then(|n| n.parse().ok()),
        link: header("link"),
        body: captured["body"].to_string().into_bytes().into(),
        body_truncated: false,
    };
    let call = GiteaCall {
        method: op.method.clone(),
        path: "/repos/aegis-org/context-bench/x".into(),
        route: op.route.clone(),
        query: Vec::new(),
        body: CallBody::None,
        sudo: None,
    };
    let identity = Identity {
        login: Some("aegis-admin".into()),
        mode: IdentityMode::Bearer,
        token: secrecy::SecretString::from("admin-token-for-the-test"),
        refresh_token: None,
        renewal: None,
        access: crate::identity::Access::ReadWrite,
    };
    let view = match (&op.response, full) {
        (Some(root), false) => ResultView::Compact {
            shapes: catalog.shapes(),
            root,
        },
        _ => ResultView::Full,
    };
    let policy = ResultPolicy::new(&Limits::default(), SecretDetectionMode::Mask);
    let text = tool_result(
        &identity,
        &call,
        &response,
        &policy,
        &Redactor::default(),
        Some(&op.operation_id),
        view,
    )
    .unwrap();
    (serde_json::from_str(&text).unwrap(), text.len())
}

fn compact(tool: &str, name: &str) -> Value {
    answer(tool, name, false).0
}

/// `value` as the model sees it: invisible characters shown as
/// `[U+XXXX]` (the fixtures hold a planted issue).
fn shown(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(crate::hidden_text::reveal(text).0.into_owned()),
        Value::Array(items) => Value::Array(items.iter().map(shown).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shown(v))).collect())
        }
        other => other.clone(),
    }
}

/// Every key at any depth of `value`.
fn keys(value: &Value) -> Vec<String> {
    match value {
        Value::Object(map) => map
            .iter()
            .flat_map(|(k, v)| std::iter::once(k.clone()).chain(keys(v)))
            .collect(),
        Value::Array(items) => items.iter().flat_map(keys).collect(),
        _ => Vec::new(),
    }
}

/// No URL field but `html_url`, and no empty value, anywhere in `data`.
fn assert_compact(data: &Value) {
    for key in keys(data) {
        assert!(
            !crate::catalog::projection::is_url_field(&key),
            "URL field {key} in {data}"
        );
    }
    fn no_empty(value: &Value, in_list: bool) {
        match value {
            Value::Object(map) => {
                for (key, v) in map {
                    let empty = matches!(v, Value::Null | Value::Bool(false))
                        || v.as_str() == Some("")
                        || v.as_u64() == Some(0)
                        || v.as_array().is_some_and(Vec::is_empty)
                        || v.as_object().is_some_and(|m| m.is_empty());
                    assert!(!empty, "empty {key}: {v}");
                    no_empty(v, false);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| no_empty(v, true)),
            _ => {
                let _ = in_list;
            }
        }
    }
    no_empty(data, false);
}

#[test]
fn an_issue_names_its_people_labels_and_repository_and_keeps_its_text() {
    let env = compact("gitea_issue_get_issue", "issue");
    let full = fixture("issue")["body"].clone();
    let issue = &env["data"];
    assert_compact(issue);
    assert_eq!(issue["user"], full["user"]["login"]);
    assert_eq!(issue["repository"], full["repository"]["full_name"]);
    let label_names: Vec<&Value> = full["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| &l["name"])
        .collect();
    assert_eq!(
        issue["labels"]
            .as_array()
            .unwrap()
            .iter()
            .collect::<Vec<_>>(),
        label_names
    );
    for field in ["number", "title", "body", "state", "html_url", "created_at"] {
        assert_eq!(issue[field], full[field], "{field}");
    }
    // The compact view is the default, and not named.
    assert!(env.get("view").is_none());
}

#[test]
fn an_issue_list_keeps_every_issue_with_its_number_and_title() {
    let env = compact("gitea_issue_list_issues", "issue_list");
    let full = fixture("issue_list")["body"].clone();
    let items = env["data"].as_array().unwrap();
    assert_eq!(items.len(), full.as_array().unwrap().len());
    for (item, original) in items.iter().zip(full.as_array().unwrap()) {
        assert_eq!(item["number"], original["number"]);
        assert_eq!(item["title"], shown(&original["title"]));
        assert_eq!(item["user"], original["user"]["login"]);
    }
    assert_compact(&env["data"]);
}

#[test]
fn a_planted_issue_shows_what_it_hides_and_says_how_much() {
    let env = compact("gitea_issue_get_issue", "issue_hidden_text");
    let text = env.to_string();
    assert!(
        text.contains("[U+202E]") && text.contains("[U+E0069]"),
        "{text}"
    );
    assert!(!text.chars().any(crate::hidden_text::is_format_char));
    let planted = fixture("issue_hidden_text")["body"].to_string();
    let count = planted
        .chars()
        .filter(|c| crate::hidden_text::is_format_char(*c))
        .count();
    assert!(
        env["hidden_characters"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{count} ")),
        "{}",
        env["hidden_characters"]
    );
}

#[test]
fn long_texts_in_a_list_are_cut_with_a_way_to_the_rest() {
    let env = compact("gitea_issue_list_issues", "issue_list");
    let cut = env["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["body"].as_str())
        .find(|b| b.contains("more characters"))
        .expect("some issue body is long");
    assert!(
        cut.contains("read this item alone, or pass view: full"),
        "{cut}"
    );
    // The same issue alone is whole.
    let single = compact("gitea_issue_get_issue", "issue");
    assert!(
        !single["data"]["body"]
            .as_str()
            .unwrap()
            .contains("more characters")
    );
}

#[test]
fn a_pull_request_keeps_its_branches_with_the_repository_named() {
    let env = compact("gitea_repo_get_pull_request", "pull_request");
    let full = fixture("pull_request")["body"].clone();
    let pull = &env["data"];
    assert_compact(pull);
    assert_eq!(pull["head"]["ref"], full["head"]["ref"]);
    assert_eq!(pull["head"]["sha"], full["head"]["sha"]);
    assert_eq!(pull["base"]["repo"], full["base"]["repo"]["full_name"]);
    assert_eq!(pull["title"], full["title"]);
    assert_eq!(pull["mergeable"], full["mergeable"]);
}

#[test]
fn a_repository_search_keeps_each_repository_whole_and_names_its_owner() {
    let env = compact("gitea_repo_search", "repo_search");
    let full = fixture("repo_search")["body"].clone();
    let repos = env["data"]["data"].as_array().unwrap();
    assert_eq!(repos.len(), full["data"].as_array().unwrap().len());
    for (repo, original) in repos.iter().zip(full["data"].as_array().unwrap()) {
        assert_eq!(repo["full_name"], original["full_name"]);
        assert_eq!(repo["owner"], original["owner"]["login"]);
        assert_eq!(repo["description"], original["description"]);
    }
    assert_compact(&env["data"]);
}

#[test]
fn commits_keep_sha_message_and_dates_and_name_their_users() {
    let env = compact("gitea_repo_get_all_commits", "commits_2");
    let full = fixture("commits_2")["body"].clone();
    for (commit, original) in env["data"]
        .as_array()
        .unwrap()
        .iter()
        .zip(full.as_array().unwrap())
    {
        assert_eq!(commit["sha"], original["sha"]);
        assert_eq!(commit["commit"]["message"], original["commit"]["message"]);
        assert_eq!(
            commit["commit"]["author"]["date"],
            original["commit"]["author"]["date"]
        );
        assert_eq!(commit["author"], original["author"]["login"]);
    }
}

#[test]
fn comments_releases_branches_notifications_orgs_and_the_user_are_compact() {
    for (tool, name, named) in [
        ("gitea_issue_get_comments", "issue_comments", "body"),
        ("gitea_repo_list_releases", "releases", "tag_name"),
        ("gitea_repo_list_branches", "branches", "name"),
        ("gitea_notify_get_list", "notifications", "subject"),
        ("gitea_org_list_current_user_orgs", "orgs", "name"),
        ("gitea_issue_list_labels", "label_list", "name"),
        ("gitea_issue_get_milestones_list", "milestone_list", "title"),
        (
            "gitea_repo_get_pull_request_files",
            "pull_request_files",
            "filename",
        ),
    ] {
        let env = compact(tool, name);
        let full = fixture(name)["body"].clone();
        assert_compact(&env["data"]);
        let items = env["data"].as_array().unwrap();
        assert_eq!(items.len(), full.as_array().unwrap().len(), "{tool}");
        for item in items {
            assert!(item.get(named).is_some(), "{tool}: {named} in {item}");
        }
    }
    let user = compact("gitea_user_get_current", "current_user");
    assert_eq!(
        user["data"]["login"],
        fixture("current_user")["body"]["login"]
    );
    assert_compact(&user["data"]);
    let repo = compact("gitea_repo_get", "repository");
    assert_eq!(
        repo["data"]["owner"],
        fixture("repository")["body"]["owner"]["login"]
    );
    assert_compact(&repo["data"]);
}

#[test]
fn a_notification_names_its_repository_and_keeps_its_subject() {
    let env = compact("gitea_notify_get_list", "notifications");
    let full = fixture("notifications")["body"].clone();
    let first = &env["data"][0];
    assert_eq!(first["repository"], full[0]["repository"]["full_name"]);
    assert_eq!(first["subject"]["title"], full[0]["subject"]["title"]);
    assert_eq!(first["subject"]["html_url"], full[0]["subject"]["html_url"]);
}

#[test]
fn a_text_file_is_text_in_the_compact_view_and_base64_in_the_full_one() {
    let env = compact("gitea_repo_get_contents", "readme");
    let file = &env["data"];
    assert_eq!(file["encoding"], "utf-8");
    let text = file["content"].as_str().unwrap();
    assert!(
        text.starts_with('#') || text.contains("context-bench"),
        "{text}"
    );
    assert_eq!(file["sha"], fixture("readme")["body"]["sha"]);
    assert_eq!(file["size"], fixture("readme")["body"]["size"]);
    let (full, _) = answer("gitea_repo_get_contents", "readme", true);
    assert_eq!(full["data"]["encoding"], "base64");
    assert_eq!(full["view"], "full");
}

#[test]
fn the_full_view_is_gitea_s_body() {
    for (tool, name) in [
        ("gitea_issue_get_issue", "issue"),
        ("gitea_issue_list_issues", "issue_list"),
        ("gitea_repo_search", "repo_search"),
    ] {
        let (env, _) = answer(tool, name, true);
        // Gitea's body, with the planted issue's invisible characters shown.
        assert!(env["data"] == shown(&fixture(name)["body"]), "{tool}");
    }
}

/// The bytes of each answer, compact against full: run with
/// `--nocapture` to see them.
#[test]
fn the_compact_view_is_several_times_smaller() {
    let mut total = (0, 0);
    for (tool, name) in [
        ("gitea_issue_list_issues", "issue_list"),
        ("gitea_issue_get_issue", "issue"),
        ("gitea_issue_get_comments", "issue_comments"),
        ("gitea_repo_list_pull_requests", "pull_request_list"),
        ("gitea_repo_get_pull_request", "pull_request"),
        ("gitea_repo_get_pull_request_files", "pull_request_files"),
        ("gitea_repo_search", "repo_search"),
        ("gitea_repo_get_contents", "readme"),
        ("gitea_repo_get_all_commits", "commits_2"),
        ("gitea_repo_get_all_commits", "commits_10"),
        ("gitea_repo_list_branches", "branches"),
        ("gitea_repo_list_releases", "releases"),
        ("gitea_notify_get_list", "notifications"),
        ("gitea_user_get_current", "current_user"),
        ("gitea_org_list_current_user_orgs", "orgs"),
    ] {
        let (_, compact) = answer(tool, name, false);
        let (_, full) = answer(tool, name, true);
        println!(
            "{name:20} full {full:7} compact {compact:7} ({:.1}x)",
            full as f64 / compact as f64
        );
        assert!(compact < full, "{name}");
        total = (total.0 + full, total.1 + compact);
    }
    println!("{:20} full {:7} compact {:7}", "all", total.0, total.1);
}

/// The example in docs/tools.md ("Before and after"): issue 24 of the
/// list, in both views.
#[test]
fn the_documented_example_holds() {
    let (full, _) = answer("gitea_issue_list_issues", "issue_list", true);
    let compact = compact("gitea_issue_list_issues", "issue_list");
    let pick = |env: &Value| {
        env["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["number"] == 24)
            .unwrap()
            .to_string()
    };
    let docs = include_str!("../../../docs/tools.md");
    let compact_item = pick(&compact);
    assert!(docs.contains(&compact_item), "{compact_item}");
    assert!(docs.contains(&format!(
        "and {} bytes in the compact view",
        compact_item.len()
    )));
    assert!(docs.contains(&format!(
        "{} bytes in the full view",
        thousands(pick(&full).len())
    )));
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
