//! The fake's routes for what the resources, prompts and completions read:
//! one issue and its timeline, a pull request with its files, diff,
//! reviews and review comments, a repository's branches and tags, a
//! comparison of two refs. Shaped as Gitea 1.27 answers them (the fields
//! the gateway's views and completions use), for every repository but the
//! hygiene owner's; a number past the repository's issues is a 404.

use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{TOTAL_ISSUES, message};

/// The pull requests every repository has (numbered after its issues).
pub const PULLS: u64 = 3;
/// The first line of every pull request's diff.
pub const DIFF_HEAD: &str = "diff --git a/src/lib.rs b/src/lib.rs";

fn user(login: &str) -> Value {
    json!({"id": 2, "login": login, "full_name": "", "email": format!("{login}@example.com")})
}

fn issue(number: u64) -> Value {
    json!({
        "id": 1000 + number, "number": number, "title": format!("Issue {number}"),
        "body": format!("The body of issue {number}."), "state": "open",
        "user": user("alice"), "labels": [], "comments": 1,
        "created_at": "2026-11-01T10:00:00Z", "updated_at": "2026-11-02T10:00:00Z"
    })
}

fn pull(number: u64) -> Value {
    json!({
        "id": 2000 + number, "number": number, "title": format!("Pull {number}"),
        "body": "Makes the parser faster.", "state": "open", "user": user("bob"),
        "head": {"ref": format!("feature-{number}"), "sha": "5e6f7a8b9c0d"},
        "base": {"ref": "main", "sha": "0a1b2c3d4e5f"},
        "mergeable": true, "merged": false, "additions": 3, "deletions": 1, "changed_files": 1
    })
}

fn number_in(raw: &str, range: std::ops::RangeInclusive<u64>) -> Option<u64> {
    raw.parse().ok().filter(|n| range.contains(n))
}

fn list(items: Vec<Value>) -> Response {
    let mut response = axum::Json(Value::Array(items.clone())).into_response();
    response
        .headers_mut()
        .insert("x-total-count", HeaderValue::from(items.len()));
    response
}

/// The answer to a request on one of these routes, or `None`.
pub fn route(method: &Method, segments: &[&str], base: &str) -> Option<Response> {
    let issues = 1..=TOTAL_ISSUES;
    let pulls = TOTAL_ISSUES + 1..=TOTAL_ISSUES + PULLS;
    let not_found = || message(StatusCode::NOT_FOUND, base, "The target couldn't be found.");
    if *method != Method::GET {
        return None;
    }
    let ["repos", _owner, _repo, rest @ ..] = segments else {
        return None;
    };
    Some(match rest {
        ["issues", n] => match number_in(n, issues) {
            Some(n) => axum::Json(issue(n)).into_response(),
            None => not_found(),
        },
        ["issues", n, "timeline"] => match number_in(n, issues.clone()).or(number_in(n, pulls)) {
            Some(_) => list(vec![
                json!({"id": 1, "type": "comment", "body": "I can reproduce it.", "user": user("bob")}),
                json!({"id": 2, "type": "label", "label": {"name": "bug"}, "user": user("alice")}),
            ]),
            None => not_found(),
        },
        ["branches"] => list(
            ["main", "develop", "feature-parser"]
                .iter()
                .map(|name| json!({"name": name, "commit": {"id": "0a1b2c3d4e5f"}, "protected": *name == "main"}))
                .collect(),
        ),
        ["tags"] => list(
            ["v1.0.0", "v1.1.0"]
                .iter()
                .map(|name| json!({"name": name, "id": "0a1b2c3d4e5f"}))
                .collect(),
        ),
        ["pulls"] => list(pulls.map(pull).collect()),
        ["pulls", n] => match n.strip_suffix(".diff") {
            Some(n) => match number_in(n, pulls) {
                Some(_) => (
                    [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                    format!("{DIFF_HEAD}\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1 @@\n-old\n+new\n"),
                )
                    .into_response(),
                None => not_found(),
            },
            None => match number_in(n, pulls) {
                Some(n) => axum::Json(pull(n)).into_response(),
                None => not_found(),
            },
        },
        ["pulls", n, "files"] if number_in(n, pulls.clone()).is_some() => list(vec![json!({
            "filename": "src/lib.rs", "status": "changed", "additions": 3, "deletions": 1, "changes": 4
        })]),
        ["pulls", n, "reviews"] if number_in(n, pulls.clone()).is_some() => list(vec![
            json!({"id": 31, "state": "COMMENT", "body": "A first look.", "user": user("alice"), "comments_count": 1}),
            json!({"id": 32, "state": "APPROVED", "body": "", "user": user("alice"), "comments_count": 0}),
        ]),
        ["pulls", n, "reviews", "31", "comments"] if number_in(n, pulls.clone()).is_some() => {
            list(vec![json!({
                "id": 41, "body": "This allocates in the loop.", "path": "src/lib.rs",
                "position": 1, "user": user("alice"), "pull_request_review_id": 31
            })])
        }
        ["compare", basehead] if basehead.contains("...") => axum::Json(json!({
            "total_commits": 2,
            "commits": [
                {"sha": "1111111aaaa", "commit": {"message": "Add a faster parser"}},
                {"sha": "2222222bbbb", "commit": {"message": "Fix the crash on empty input (#3)"}}
            ],
            "files": [{"filename": "src/lib.rs", "status": "modified"}]
        }))
        .into_response(),
        _ => return None,
    })
}
