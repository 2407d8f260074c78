//! Realistic Gitea 1.27 issue objects for the benches: the shape and field
//! set Gitea returns from `GET /repos/{owner}/{repo}/issues`, so measured
//! costs reflect real payloads. Shared by every bench that needs a list.

// Each bench includes this file as its own module and uses only part of it.
#![allow(dead_code)]

use bytes::Bytes;
use serde_json::{Value, json};

pub const OWNER: &str = "acme";
pub const REPO: &str = "widgets";

/// Issue `number` as Gitea serializes it, with `body_suffix` appended to
/// its body (benches plant secrets there).
pub fn gitea_issue(base: &str, number: u64, body_suffix: &str) -> Value {
    let user = |id: u64, login: &str| {
        json!({
            "id": id, "login": login, "login_name": "", "source_id": 0,
            "full_name": format!("{login} Example"),
            "email": format!("{login}@noreply.example.org"),
            "avatar_url": format!("{base}/avatars/{id:032x}"),
            "html_url": format!("{base}/{login}"),
            "language": "en-US", "is_admin": false,
            "last_login": "2025-01-01T00:00:00Z", "created": "2023-03-14T09:26:53Z",
            "restricted": false, "active": true, "prohibit_login": false,
            "location": "", "website": "", "description": "", "visibility": "public",
            "followers_count": 3, "following_count": 1, "starred_repos_count": 7,
            "username": login
        })
    };
    let label = |id: u64, name: &str, color: &str| {
        json!({
            "id": id, "name": name, "exclusive": false, "is_archived": false, "color": color,
            "description": format!("Issues about {name}"),
            "url": format!("{base}/api/v1/repos/{OWNER}/{REPO}/labels/{id}")
        })
    };
    json!({
        "id": 1000 + number,
        "url": format!("{base}/api/v1/repos/{OWNER}/{REPO}/issues/{number}"),
        "html_url": format!("{base}/{OWNER}/{REPO}/issues/{number}"),
        "number": number,
        "user": user(2 + number % 3, ["alice", "bob", "carol"][(number % 3) as usize]),
        "original_author": "", "original_author_id": 0,
        "title": format!("Widget #{number} renders incorrectly when the window is resized"),
        "body": format!(
            "Steps to reproduce:\n\n1. Open the widget gallery\n2. Resize the window below 800px\n3. Widget {number} overlaps its neighbour\n\nExpected: the layout wraps.\nActual: the widget is clipped and its tooltip appears off-screen.\n\nVersion: 2.{number}.0, Firefox 128 on Linux.{body_suffix}"
        ),
        "ref": "", "assets": [],
        "labels": [label(1, "bug", "ee0701"), label(4, "ui", "0052cc")],
        "milestone": {
            "id": 3, "title": "v2.5", "description": "Layout fixes", "state": "open",
            "open_issues": 12, "closed_issues": 30,
            "created_at": "2024-11-02T10:00:00Z", "updated_at": "2025-02-01T10:00:00Z",
            "closed_at": null, "due_on": "2025-06-30T00:00:00Z"
        },
        "assignee": user(2, "alice"),
        "assignees": [user(2, "alice")],
        "state": "open", "is_locked": false, "comments": number % 7,
        "created_at": "2025-01-15T08:30:00Z", "updated_at": "2025-02-20T16:45:12Z",
        "closed_at": null, "due_date": null, "time_estimate": 0, "pull_request": null,
        "repository": {"id": 42, "name": REPO, "owner": OWNER, "full_name": format!("{OWNER}/{REPO}")},
        "pin_order": 0
    })
}

/// A JSON issue list of at least `min_bytes`; returns the body and the
/// number of issues. `suffix` gives each issue's body suffix.
pub fn issue_list(base: &str, min_bytes: usize, suffix: impl Fn(u64) -> String) -> (Bytes, usize) {
    let mut issues = Vec::new();
    let mut size = 2;
    while size < min_bytes {
        let number = issues.len() as u64 + 1;
        let issue = gitea_issue(base, number, &suffix(number));
        size += issue.to_string().len() + 1;
        issues.push(issue);
    }
    let count = issues.len();
    (Bytes::from(Value::Array(issues).to_string()), count)
}
