//! The argument table of the sweep: a value for every required parameter of
//! a GET tool, from the fixture or from facts discovered through the gateway.

use aegis_gitea_mcp::catalog::{Operation, ParamLocation};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Map, Value, json};

use crate::fixture::Fixture;
use crate::gateway::call_ok;

/// Everything a GET needs that is not in the fixture, found through the gateway.
pub struct Known {
    main_sha: String,
    feature_sha: String,
    owners_team_id: Option<u64>,
}

impl Known {
    pub async fn discover(client: &RunningService<RoleClient, ()>, fx: &Fixture) -> Self {
        let (owner, repo) = (fx.owner(), fx.repo());
        let sha = |env: Value| {
            env["data"]["commit"]["id"]
                .as_str()
                .expect("branch has a commit id")
                .to_owned()
        };
        let main = call_ok(
            client,
            "gitea_repo_get_branch",
            json!({"owner": owner, "repo": repo, "branch": fx.str("/repo/default_branch")}),
        )
        .await;
        let feature = call_ok(
            client,
            "gitea_repo_get_branch",
            json!({"owner": owner, "repo": repo, "branch": fx.str("/branch")}),
        )
        .await;
        let teams = call_ok(
            client,
            "gitea_org_list_teams",
            json!({"org": fx.str("/org")}),
        )
        .await;
        let owners_team_id = teams["data"]
            .as_array()
            .and_then(|ts| ts.iter().find(|t| t["name"] == "Owners"))
            .and_then(|t| t["id"].as_u64());
        Self {
            main_sha: sha(main),
            feature_sha: sha(feature),
            owners_team_id,
        }
    }
}

/// The value of required parameter `name` of `op`, or `None` when neither the
/// fixture nor a discovered fact supplies a meaningful one (the tool is skipped).
fn arg_value(op: &Operation, name: &str, fx: &Fixture, known: &Known) -> Option<Value> {
    let route = op.route.as_str();
    let under = |prefix: &str| route.starts_with(prefix);
    let r = "/repos/{owner}/{repo}";
    let s = |v: String| Some(Value::String(v));
    match name {
        "owner" if under("/packages/") => s(fx.admin_login()),
        "owner" => s(fx.owner()),
        "repo" => s(fx.repo()),
        "org" => s(fx.str("/org")),
        // Users: the admin (who owns/administers everything seeded) unless the
        // route is about another user.
        "username"
            if route.contains("/blocks/{username}") || route == "/user/following/{username}" =>
        {
            s(fx.user_login())
        }
        "username" => s(fx.admin_login()),
        "assignee" | "user" => s(fx.admin_login()),
        "collaborator" | "target" => s(fx.user_login()),
        "team" => s("Owners".into()),
        "index" if route.contains("/pulls/") => Some(fx.get("/pr_number").clone()),
        "index" => Some(fx.get("/issue_number").clone()),
        "id" => {
            let comment = format!("{r}/issues/comments/{{id}}");
            if route == format!("{r}/hooks/{{id}}") {
                Some(fx.get("/hook/id").clone())
            } else if route == format!("{r}/hooks/git/{{id}}") {
                // Git hooks are named by their hook name.
                s("pre-receive".into())
            } else if under(&comment) {
                Some(fx.get("/secret_comment_id").clone())
            } else if route == format!("{r}/labels/{{id}}") {
                Some(fx.get("/labels/0/id").clone())
            } else if route == format!("{r}/milestones/{{id}}") {
                Some(fx.get("/milestone/id").clone())
            } else if under(&format!("{r}/releases/{{id}}")) {
                Some(fx.get("/release_id").clone())
            } else if route == "/repositories/{id}" {
                Some(fx.get("/repo/id").clone())
            } else if under("/teams/{id}") {
                known.owners_team_id.map(Value::from)
            } else if route == "/user/applications/oauth2/{id}" {
                Some(fx.get("/oauth/app_id").clone())
            } else {
                // System/org/user hooks, deploy/GPG/SSH keys, notification
                // threads, reviews, tag protections: none is seeded.
                None
            }
        }
        "name" => match route {
            "/gitignore/templates/{name}" => s("Go".into()),
            "/label/templates/{name}" => s("Default".into()),
            "/licenses/{name}" => s("MIT".into()),
            // branch protections, push mirrors, packages: none is seeded.
            _ => None,
        },
        "sha" => {
            if route == format!("{r}/git/blobs/{{sha}}") {
                s(fx.str("/file_sha"))
            } else if route == format!("{r}/commits/{{sha}}/pull")
                || route == format!("{r}/statuses/{{sha}}")
            {
                s(known.feature_sha.clone())
            } else {
                s(known.main_sha.clone())
            }
        }
        "diffType" => s("diff".into()),
        "ref" if route == format!("{r}/git/refs/{{ref}}") => {
            s(format!("heads/{}", fx.str("/branch")))
        }
        "ref" => s(fx.str("/branch")),
        "branch" | "head" => s(fx.str("/branch")),
        "base" => s(fx.str("/repo/default_branch")),
        "tag" => s(fx.str("/tag")),
        "filepath" => s(fx.str("/file_path")),
        "basehead" => s(format!(
            "{}...{}",
            fx.str("/repo/default_branch"),
            fx.str("/branch")
        )),
        "archive" => s(format!("{}.zip", fx.str("/repo/default_branch"))),
        // repoGetFileContents: the JSON-encoded POST body, in the query.
        "body" => s(json!({"files": [fx.str("/file_path")]}).to_string()),
        "q" => s(fx.repo()),
        _ => None,
    }
}

/// Coerces `value` to the JSON type the tool's schema declares for `name`.
fn as_schema_type(op: &Operation, name: &str, value: Value) -> Value {
    let ty = op
        .input_schema
        .object()
        .get("properties")
        .and_then(|p| p.get(name))
        .and_then(|p| p.get("type"))
        .and_then(Value::as_str);
    match (ty, &value) {
        (Some("integer" | "number"), Value::String(s)) => {
            s.parse::<u64>().map(Value::from).unwrap_or(value)
        }
        (Some("string"), Value::Number(n)) => Value::String(n.to_string()),
        _ => value,
    }
}

/// The arguments for every required parameter, or the names that cannot be filled.
pub fn fill_args(
    op: &Operation,
    fx: &Fixture,
    known: &Known,
) -> Result<Map<String, Value>, String> {
    let mut args = Map::new();
    let mut missing = Vec::new();
    for p in op.params.iter().filter(|p| p.required) {
        match arg_value(op, &p.name, fx, known) {
            Some(v) => {
                args.insert(p.name.clone(), as_schema_type(op, &p.name, v));
            }
            None => missing.push(match p.location {
                ParamLocation::Path => p.name.clone(),
                _ => format!("{} ({:?})", p.name, p.location),
            }),
        }
    }
    if missing.is_empty() {
        Ok(args)
    } else {
        Err(missing.join(", "))
    }
}
