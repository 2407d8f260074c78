//! End-to-end tests against a REAL Gitea 1.27.1 (see `tests/e2e/README.md`).
//!
//! Every test is `#[ignore]`d: start the instance first, then run
//!
//! ```sh
//! tests/e2e/gitea.sh start
//! cargo test --test e2e_sweep -- --ignored --nocapture
//! ```
//!
//! Each test reads `$AEGIS_E2E_DIR/fixture.json` (default `/tmp/aegis-e2e`),
//! builds the gateway exactly as the CLI does (`Settings` → `App::build` →
//! `http::router`), serves it on a loopback port and talks to it with the
//! official Rust MCP SDK client over Streamable HTTP.
//!
//! How the sweep tells a gateway fault from a Gitea refusal:
//! - Gitea answers a *route miss* (no handler for the path) with a plain-text
//!   `404 page not found`, and an existing route whose object is absent with
//!   JSON `{"message": "...", "url": ".../api/swagger"}`. The gateway turns a
//!   non-JSON error body into the generic message `Gitea answered with HTTP
//!   404`, which an empty-bodied "no" (e.g. "not a member") also gets. So a
//!   generic 404 is re-sent outside the gateway — the request built by the
//!   gateway's own `build_call`, sent by its own `GiteaClient` — and the raw
//!   body decides (`route_miss_is_told_apart_from_a_missing_object` checks the
//!   premise).
//! - A 405 on a GET tool means the path matched a route of another method.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use aegis_gitea_mcp::catalog::{Catalog, Operation, ParamLocation, tool_name_for_operation_id};
use aegis_gitea_mcp::config::Limits;
use aegis_gitea_mcp::gitea::{GiteaClient, Identity, IdentityMode, build_call};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use serde_json::{Map, Value, json};
use support::{BEARER, call};

/// The message the gateway gives a Gitea error whose body has no JSON `message`.
const GENERIC_404: &str = "Gitea answered with HTTP 404";

/// Gitea refusals the sweep expects with the seeded data and the e2e
/// `app.ini`, as (tool, status, fragment of Gitea's message, reason). A
/// refusal not listed here, or with another status or message, fails the
/// sweep (a regression, or a new operation to judge); a listed tool that now
/// succeeds is reported as stale. Every one of these reached a real route:
/// Gitea's message is its handler's, or (for the generic message) the raw
/// answer was re-checked and is not the router's `404 page not found`.
const EXPECTED_REFUSALS: &[(&str, u16, &str, &str)] = &[
    // --- "no" answers of check endpoints (404 is the API's negative answer) ---
    (
        "gitea_org_is_public_member",
        404,
        "not found",
        "the admin's org membership is private (the default)",
    ),
    (
        "gitea_organization_check_user_block",
        404,
        GENERIC_404,
        "the org has not blocked alice; Gitea answers an empty-bodied 404",
    ),
    (
        "gitea_user_check_user_block",
        404,
        GENERIC_404,
        "the admin has not blocked alice; Gitea answers an empty-bodied 404",
    ),
    (
        "gitea_repo_check_collaborator",
        404,
        "not found",
        "alice is not a collaborator of the org repo",
    ),
    (
        "gitea_repo_pull_request_is_merged",
        404,
        "not found",
        "the seeded PR is open: 404 means `not merged`",
    ),
    (
        "gitea_user_check_following",
        404,
        "not found",
        "the admin does not follow alice",
    ),
    (
        "gitea_user_current_check_following",
        404,
        "not found",
        "the admin does not follow alice",
    ),
    (
        "gitea_user_current_check_starring",
        404,
        "not found",
        "the admin has not starred the repo",
    ),
    // --- objects the seed does not create ---
    (
        "gitea_get_annotated_tag",
        400,
        "object does not exist",
        "rel/1.0 is a lightweight tag (made by the release): there is no tag object; \
         the commit sha it points to is not a tag object",
    ),
    (
        "gitea_repo_get_commit_pull_request",
        404,
        "pull request does not exist",
        "Gitea looks PRs up by *merge* commit; the seeded PR is not merged",
    ),
    (
        "gitea_repo_get_note",
        404,
        "commit doesn't exist",
        "no git notes in the repo; Gitea words a missing note as `commit doesn't exist`",
    ),
    (
        "gitea_repo_get_editor_config",
        404,
        "rel_path: .editorconfig",
        "the repo has no .editorconfig (the message proves the route matched)",
    ),
    (
        "gitea_repo_get_wiki_pages",
        404,
        "no such file or directory",
        "the repo has no wiki",
    ),
    // --- instance configuration ---
    (
        "gitea_get_signing_key",
        404,
        "no signing key",
        "no instance signing key is configured",
    ),
    (
        "gitea_get_signing_key_ssh",
        404,
        "no signing key",
        "no instance signing key is configured",
    ),
    (
        "gitea_repo_signing_key",
        404,
        "no signing key",
        "no instance signing key is configured",
    ),
    (
        "gitea_repo_signing_key_ssh",
        404,
        "no signing key",
        "no instance signing key is configured",
    ),
    (
        "gitea_repo_get_git_hook",
        403,
        "must be allowed to edit Git hooks",
        "[security] DISABLE_GIT_HOOKS defaults to true: nobody may edit git hooks",
    ),
    (
        "gitea_repo_list_git_hooks",
        403,
        "must be allowed to edit Git hooks",
        "[security] DISABLE_GIT_HOOKS defaults to true: nobody may edit git hooks",
    ),
    (
        "gitea_user_get_tokens",
        401,
        "auth required",
        "listing tokens needs basic auth (the user's password), never a token",
    ),
];

// ---------------------------------------------------------------------------
// Fixture
// ---------------------------------------------------------------------------

/// `fixture.json` written by `tests/e2e/seed.py`.
struct Fixture {
    json: Value,
    path: PathBuf,
}

impl Fixture {
    fn load() -> Self {
        let dir = std::env::var("AEGIS_E2E_DIR").unwrap_or_else(|_| "/tmp/aegis-e2e".into());
        let path = PathBuf::from(dir).join("fixture.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "cannot read the e2e fixture {} ({e}).\n\
                 These tests need a real, seeded Gitea: run `tests/e2e/gitea.sh start` \
                 (and set AEGIS_E2E_DIR if you used another state dir).",
                path.display()
            )
        });
        let json: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        assert_eq!(
            json["fixture_version"],
            1,
            "{}: unsupported fixture_version",
            path.display()
        );
        let fx = Self { json, path };
        fx.check_reachable();
        fx
    }

    /// A fixture left behind by a stopped instance would turn every call into
    /// `upstream_unreachable`; say so up front instead.
    fn check_reachable(&self) {
        let url = url::Url::parse(&self.gitea_url()).expect("gitea_url is a URL");
        let addr = url
            .socket_addrs(|| None)
            .ok()
            .and_then(|a| a.into_iter().next())
            .expect("gitea_url has a host and port");
        if let Err(e) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(3)) {
            panic!(
                "the Gitea of {} ({}) does not answer ({e}): run `tests/e2e/gitea.sh start` \
                 (or `tests/e2e/gitea.sh start --keep` to reuse its state)",
                self.path.display(),
                self.gitea_url()
            );
        }
    }

    /// The value at JSON pointer `pointer`; panics naming the key when absent.
    fn get(&self, pointer: &str) -> &Value {
        self.json
            .pointer(pointer)
            .filter(|v| !v.is_null())
            .unwrap_or_else(|| panic!("{}: key {pointer} is missing", self.path.display()))
    }

    fn str(&self, pointer: &str) -> String {
        match self.get(pointer) {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    fn gitea_url(&self) -> String {
        self.str("/gitea_url")
    }
    fn admin_token(&self) -> String {
        self.str("/admin/token")
    }
    fn admin_login(&self) -> String {
        self.str("/admin/login")
    }
    fn user_login(&self) -> String {
        self.str("/user/login")
    }
    fn owner(&self) -> String {
        self.str("/repo/owner")
    }
    fn repo(&self) -> String {
        self.str("/repo/name")
    }
}

// ---------------------------------------------------------------------------
// A gateway in front of the real Gitea (same steps as `support::Gateway::start`)
// ---------------------------------------------------------------------------

struct LiveGateway {
    url: String,
}

impl LiveGateway {
    /// Builds the gateway as the CLI does, acting with `gitea_token`.
    async fn start(fx: &Fixture, gitea_token: &str, extra: &[(&str, &str)]) -> Self {
        let mut pairs: Vec<(String, String)> = vec![
            ("GITEA_URL".into(), fx.gitea_url()),
            ("GITEA_TOKEN".into(), gitea_token.into()),
            ("MCP_BEARER_TOKEN".into(), BEARER.into()),
        ];
        pairs.extend(extra.iter().map(|(k, v)| ((*k).into(), (*v).into())));
        Self {
            url: support::serve_gateway(pairs).await,
        }
    }

    async fn client(&self) -> RunningService<RoleClient, ()> {
        support::mcp_client(&format!("{}/mcp", self.url), Some(BEARER)).await
    }
}

async fn call_raw(
    client: &RunningService<RoleClient, ()>,
    name: &str,
    args: &Map<String, Value>,
) -> Result<CallToolResult, ServiceError> {
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(args.clone());
    client.call_tool(params).await
}

/// A success envelope of a call expected to work; panics with the error otherwise.
async fn call_ok(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> Value {
    let (is_error, body) = call(client, name, args.clone()).await;
    assert!(!is_error, "{name} {args} failed: {body}");
    check_success_envelope(&body).unwrap_or_else(|e| panic!("{name}: {e}: {body}"));
    body
}

// ---------------------------------------------------------------------------
// Envelope checks (ADR 0005)
// ---------------------------------------------------------------------------

const SUCCESS_KEYS: &[&str] = &[
    "identity",
    "request",
    "status",
    "pagination",
    "untrusted_content",
    "data",
];

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// Keys a bounded envelope adds, together, when `data` was cut
/// (`MAX_TOOL_RESPONSE_ITEMS` / `MAX_TOOL_RESPONSE_CHARS`).
const TRUNCATION_KEYS: &[&str] = &["truncated", "truncation"];

fn check_success_envelope(body: &Value) -> Result<u16, String> {
    let mut want: BTreeSet<&str> = SUCCESS_KEYS.iter().copied().collect();
    if body.get("truncated").is_some() || body.get("truncation").is_some() {
        if body["truncated"] != true || !body["truncation"].is_object() {
            return Err("truncated/truncation are not `true` and an object".into());
        }
        want.extend(TRUNCATION_KEYS);
    }
    if keys(body) != want {
        return Err(format!("success envelope keys {:?}", keys(body)));
    }
    if keys(&body["identity"]) != BTreeSet::from(["login", "mode", "sudo"]) {
        return Err("identity is not {login, mode, sudo}".into());
    }
    if keys(&body["request"]) != BTreeSet::from(["method", "path"]) {
        return Err("request is not {method, path}".into());
    }
    let path = body["request"]["path"].as_str().unwrap_or_default();
    if !path.starts_with('/') || path.contains(' ') {
        return Err(format!("request.path {path:?} is not an encoded path"));
    }
    if !(body["pagination"].is_null() || body["pagination"].get("page").is_some()) {
        return Err("pagination is neither null nor a pagination object".into());
    }
    if !body["untrusted_content"].is_string() {
        return Err("untrusted_content is not a string".into());
    }
    match body["status"].as_u64() {
        Some(s @ 200..=299) => Ok(s as u16),
        _ => Err("status is not a 2xx number".into()),
    }
}

/// (status, kind, message) of a well-formed error result.
fn check_error_envelope(body: &Value) -> Result<(Option<u16>, String, String), String> {
    if keys(body) != BTreeSet::from(["error"]) {
        return Err(format!("error result keys {:?}", keys(body)));
    }
    let err = &body["error"];
    if keys(err) != BTreeSet::from(["kind", "message", "status"]) {
        return Err(format!("error object keys {:?}", keys(err)));
    }
    let status = match &err["status"] {
        Value::Null => None,
        v => Some(
            v.as_u64()
                .filter(|s| (100..=599).contains(s))
                .ok_or("error.status is not an HTTP status")? as u16,
        ),
    };
    let kind = err["kind"].as_str().ok_or("error.kind is not a string")?;
    let message = err["message"]
        .as_str()
        .ok_or("error.message is not a string")?;
    Ok((status, kind.to_owned(), message.to_owned()))
}

// ---------------------------------------------------------------------------
// The argument table
// ---------------------------------------------------------------------------

/// Everything a GET needs that is not in the fixture, found through the gateway.
struct Known {
    main_sha: String,
    feature_sha: String,
    owners_team_id: Option<u64>,
}

impl Known {
    async fn discover(client: &RunningService<RoleClient, ()>, fx: &Fixture) -> Self {
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
fn fill_args(op: &Operation, fx: &Fixture, known: &Known) -> Result<Map<String, Value>, String> {
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

// ---------------------------------------------------------------------------
// Outcomes
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Outcome {
    Ok {
        status: u16,
        /// The gateway cut `data` (its `truncation` object).
        truncation: Option<Value>,
    },
    /// Gitea said no; the request reached a real route.
    Refused {
        status: u16,
        kind: String,
        message: String,
    },
    /// The gateway's fault (or a route the catalog describes but Gitea lacks).
    Fault { reason: String },
}

/// Re-sends the request the gateway built for `op`/`args`, with the gateway's
/// own client, and returns (content type, body) of Gitea's raw answer.
async fn raw_answer(
    fx: &Fixture,
    op: &Operation,
    args: &Map<String, Value>,
) -> (String, Option<String>, String) {
    let limits = Limits::default();
    let call = build_call(op, args, limits.max_binary_bytes).expect("arguments build a call");
    let client = GiteaClient::new(format!("{}/api/v1", fx.gitea_url()), &limits).unwrap();
    let identity = Identity {
        login: None,
        mode: IdentityMode::Bearer,
        token: fx.admin_token().into(),
    };
    let response = client.send(&identity, &call).await.expect("Gitea answers");
    let body = String::from_utf8_lossy(&response.body).into_owned();
    (sent(op, args), response.content_type, body)
}

/// The path (and query, unencoded) the gateway sends for `op`/`args`, from
/// its own `build_call`.
fn sent(op: &Operation, args: &Map<String, Value>) -> String {
    match build_call(op, args, Limits::default().max_binary_bytes) {
        Ok(call) if call.query.is_empty() => call.path,
        Ok(call) => {
            let q: Vec<String> = call.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{}?{}", call.path, q.join("&"))
        }
        Err(e) => format!("<not buildable: {e}>"),
    }
}

/// A route miss: the plain-text `404 page not found` of Gitea's router.
fn is_route_miss(content_type: Option<&str>, body: &str) -> bool {
    content_type.is_some_and(|ct| ct.starts_with("text/plain"))
        && body.trim() == "404 page not found"
}

async fn classify(
    fx: &Fixture,
    op: &Operation,
    args: &Map<String, Value>,
    result: Result<CallToolResult, ServiceError>,
) -> Outcome {
    let result = match result {
        Ok(r) => r,
        Err(e) => {
            return Outcome::Fault {
                reason: format!("JSON-RPC/transport error: {e}"),
            };
        }
    };
    let text = match result.content.as_slice() {
        [item] => match item.as_text() {
            Some(t) => t.text.clone(),
            None => {
                return Outcome::Fault {
                    reason: "the one content item is not text".into(),
                };
            }
        },
        items => {
            return Outcome::Fault {
                reason: format!("{} content items instead of one", items.len()),
            };
        }
    };
    let Ok(body) = serde_json::from_str::<Value>(&text) else {
        return Outcome::Fault {
            reason: "content is not JSON".into(),
        };
    };
    if result.is_error != Some(true) {
        return match check_success_envelope(&body) {
            Ok(_) if sent(op, args).split('?').next() != body["request"]["path"].as_str() => {
                Outcome::Fault {
                    reason: format!(
                        "request.path {} is not the path built ({})",
                        body["request"]["path"],
                        sent(op, args)
                    ),
                }
            }
            Ok(status) if body["request"]["method"] == "GET" => Outcome::Ok {
                status,
                truncation: body.get("truncation").cloned(),
            },
            Ok(_) => Outcome::Fault {
                reason: format!("request.method is {}", body["request"]["method"]),
            },
            Err(e) => Outcome::Fault { reason: e },
        };
    }
    let (status, kind, message) = match check_error_envelope(&body) {
        Ok(parts) => parts,
        Err(e) => return Outcome::Fault { reason: e },
    };
    let Some(status) = status else {
        // No upstream status: the gateway refused or failed by itself
        // (invalid_arguments, upstream_unreachable, payload_too_large, ...).
        return Outcome::Fault {
            reason: format!("{kind}: {message}"),
        };
    };
    if kind == "invalid_arguments" || kind == "internal_error" {
        return Outcome::Fault {
            reason: format!("{kind} {status}: {message}"),
        };
    }
    if status == 405 {
        let (sent, _, raw) = raw_answer(fx, op, args).await;
        return Outcome::Fault {
            reason: format!(
                "405: the path matched a route of another method; sent GET {sent}, Gitea: {raw:?}"
            ),
        };
    }
    if status == 404 && message == GENERIC_404 {
        let (sent, ct, raw) = raw_answer(fx, op, args).await;
        if is_route_miss(ct.as_deref(), &raw) {
            return Outcome::Fault {
                reason: format!("route miss: GET {sent} -> Gitea {ct:?} {raw:?}"),
            };
        }
    }
    Outcome::Refused {
        status,
        kind,
        message,
    }
}

// ---------------------------------------------------------------------------
// 1. The sweep
// ---------------------------------------------------------------------------

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn sweep_every_get_tool() {
    let fx = Fixture::load();
    let started = Instant::now();
    let gw = LiveGateway::start(&fx, &fx.admin_token(), &[]).await;
    let client = gw.client().await;
    let listed: BTreeSet<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    let known = Known::discover(&client, &fx).await;

    let catalog = Catalog::bundled();
    let gets: Vec<&Operation> = catalog
        .operations()
        .iter()
        .filter(|op| op.method == http::Method::GET)
        .collect();

    // tool -> (outcome, arguments, GET path sent)
    let mut rows: BTreeMap<String, (Outcome, String, String)> = BTreeMap::new();
    let mut skipped: BTreeMap<String, String> = BTreeMap::new();
    for op in &gets {
        assert!(
            listed.contains(&op.tool_name),
            "{} is not in tools/list",
            op.tool_name
        );
        let args = match fill_args(op, &fx, &known) {
            Ok(args) => args,
            Err(missing) => {
                skipped.insert(op.tool_name.clone(), missing);
                continue;
            }
        };
        let result = call_raw(&client, &op.tool_name, &args).await;
        let outcome = classify(&fx, op, &args, result).await;
        let path = sent(op, &args);
        rows.insert(
            op.tool_name.clone(),
            (outcome, Value::Object(args).to_string(), path),
        );
    }
    let elapsed = started.elapsed();

    // Report.
    let mut report = String::new();
    let mut faults = Vec::new();
    let mut unexpected = Vec::new();
    let mut expected = Vec::new();
    let mut stale = Vec::new();
    let (mut ok, mut refused) = (0, 0);
    report.push_str(&format!(
        "\n{:<52} {:<8} {:>6}  {}\n",
        "tool", "outcome", "status", "GET path  [kind: message | truncation]"
    ));
    for (tool, (outcome, args, path)) in &rows {
        let allowed = EXPECTED_REFUSALS.iter().find(|(t, _, _, _)| t == tool);
        let line = match outcome {
            Outcome::Ok { status, truncation } => {
                ok += 1;
                if let Some((_, st, _, _)) = allowed {
                    stale.push(format!("{tool} (listed for {st}) now answers {status}"));
                }
                match truncation {
                    Some(t) => format!(
                        "{tool:<52} {:<8} {status:>6}  {path}  truncated: {t}\n",
                        "ok"
                    ),
                    None => format!("{tool:<52} {:<8} {status:>6}  {path}\n", "ok"),
                }
            }
            Outcome::Refused {
                status,
                kind,
                message,
            } => {
                refused += 1;
                let entry = format!("{tool} {args} -> {status} {kind}: {message}");
                match allowed {
                    Some((_, st, fragment, reason))
                        if st == status && message.contains(fragment) =>
                    {
                        expected.push(format!("{entry}\n      reason: {reason}"))
                    }
                    _ => unexpected.push(entry),
                }
                format!(
                    "{tool:<52} {:<8} {status:>6}  {path}  {kind}: {message}\n",
                    "refused"
                )
            }
            Outcome::Fault { reason } => {
                faults.push(format!("{tool} {args}: {reason}"));
                format!("{tool:<52} {:<8} {:>6}  {path}  {reason}\n", "FAULT", "-")
            }
        };
        report.push_str(&line);
    }
    report.push_str(&format!("\nskipped ({}):\n", skipped.len()));
    for (tool, missing) in &skipped {
        report.push_str(&format!("  {tool:<52} cannot fill: {missing}\n"));
    }
    let section = |title: &str, items: &[String]| {
        let mut s = format!("\n{title} ({}):\n", items.len());
        for i in items {
            s.push_str(&format!("  {i}\n"));
        }
        s
    };
    report.push_str(&section("expected Gitea refusals", &expected));
    report.push_str(&section("UNEXPECTED Gitea refusals", &unexpected));
    report.push_str(&section("stale allow-list entries", &stale));
    report.push_str(&section("GATEWAY FAULTS", &faults));
    report.push_str(&format!(
        "\nGET operations: {}; called: {}, ok: {ok}, gitea-refused: {refused} \
         ({} expected, {} unexpected), gateway-fault: {}, skipped: {}; {:.1} s\n",
        gets.len(),
        rows.len(),
        expected.len(),
        unexpected.len(),
        faults.len(),
        skipped.len(),
        elapsed.as_secs_f64()
    ));
    println!("{report}");

    assert!(faults.is_empty(), "gateway faults:\n{}", faults.join("\n"));
    assert!(
        unexpected.is_empty(),
        "Gitea refusals not in EXPECTED_REFUSALS:\n{}",
        unexpected.join("\n")
    );
}

/// The premise of the sweep's 404 rule, checked through the gateway: a route
/// Gitea lacks gives the generic message (plain-text body), an absent object
/// on a real route gives Gitea's own JSON message.
#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn route_miss_is_told_apart_from_a_missing_object() {
    let fx = Fixture::load();
    let gw = LiveGateway::start(&fx, &fx.admin_token(), &[]).await;
    let client = gw.client().await;
    let (owner, repo) = (fx.owner(), fx.repo());

    let (is_error, miss) = call(
        &client,
        "gitea_api_request",
        json!({"method": "GET", "path": format!("/repos/{owner}/{repo}/no-such-route")}),
    )
    .await;
    assert!(is_error, "{miss}");
    assert_eq!(
        miss,
        json!({"error": {"status": 404, "kind": "not_found", "message": GENERIC_404}})
    );

    let (is_error, absent) = call(
        &client,
        "gitea_issue_get_issue",
        json!({"owner": owner, "repo": repo, "index": 999_999}),
    )
    .await;
    assert!(is_error, "{absent}");
    assert_eq!(absent["error"]["status"], 404);
    assert_eq!(absent["error"]["kind"], "not_found");
    assert_ne!(absent["error"]["message"], GENERIC_404, "{absent}");

    // The same pair straight from Gitea, as the sweep's probe sees it.
    let catalog = Catalog::bundled();
    let op = catalog.get("gitea_issue_get_issue").unwrap();
    let mut args = Map::new();
    args.insert("owner".into(), owner.clone().into());
    args.insert("repo".into(), repo.clone().into());
    args.insert("index".into(), 999_999.into());
    let (_, ct, body) = raw_answer(&fx, op, &args).await;
    assert!(!is_route_miss(ct.as_deref(), &body), "{ct:?} {body}");
    // ... and an operation whose route Gitea lacks is recognised as a miss.
    let mut bogus = op.clone();
    bogus.route = "/repos/{owner}/{repo}/no-such-route/{index}".into();
    let (sent, ct, body) = raw_answer(&fx, &bogus, &args).await;
    assert!(is_route_miss(ct.as_deref(), &body), "{sent}: {ct:?} {body}");
}

// ---------------------------------------------------------------------------
// 2. Must-hit routes
// ---------------------------------------------------------------------------

struct MustHit {
    client: RunningService<RoleClient, ()>,
    fx: Fixture,
    _gw: LiveGateway,
}

impl MustHit {
    async fn new() -> Self {
        let fx = Fixture::load();
        let gw = LiveGateway::start(&fx, &fx.admin_token(), &[]).await;
        let client = gw.client().await;
        Self {
            client,
            fx,
            _gw: gw,
        }
    }

    /// Calls `tool` on the seeded repo with `extra` arguments; asserts 200
    /// and the path that was sent.
    async fn get(&self, tool: &str, extra: Value, want_path: &str) -> Value {
        let mut args = json!({"owner": self.fx.owner(), "repo": self.fx.repo()});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let env = call_ok(&self.client, tool, args).await;
        assert_eq!(env["status"], 200, "{tool}: {env}");
        let prefix = format!("/repos/{}/{}", self.fx.owner(), self.fx.repo());
        assert_eq!(
            env["request"]["path"],
            format!("{prefix}{want_path}"),
            "{tool}"
        );
        env
    }
}

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn tag_with_a_slash_reaches_release_and_tag_routes() {
    let t = MustHit::new().await;
    let tag = t.fx.str("/tag");
    assert_eq!(
        tag, "rel/1.0",
        "the fixture's tag changed; update the expected paths"
    );

    let release = t
        .get(
            "gitea_repo_get_release_by_tag",
            json!({"tag": tag}),
            "/releases/tags/rel%2F1.0",
        )
        .await;
    assert_eq!(release["data"]["tag_name"], tag);
    assert_eq!(release["data"]["id"], *t.fx.get("/release_id"));

    let got = t
        .get("gitea_repo_get_tag", json!({"tag": tag}), "/tags/rel/1.0")
        .await;
    assert_eq!(got["data"]["name"], tag);
}

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn branch_with_a_slash_reaches_the_branch_route() {
    let t = MustHit::new().await;
    let branch = t.fx.str("/branch");
    let env = t
        .get(
            "gitea_repo_get_branch",
            json!({"branch": branch}),
            "/branches/feature/x",
        )
        .await;
    assert_eq!(env["data"]["name"], branch);
    assert!(env["data"]["commit"]["id"].is_string(), "{env}");
}

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn nested_file_with_a_space_reaches_contents_and_raw() {
    let t = MustHit::new().await;
    let path = t.fx.str("/file_path");
    let content = t.fx.str("/file_content");

    let env = t
        .get(
            "gitea_repo_get_contents",
            json!({"filepath": path}),
            "/contents/docs/guide/a%20b.md",
        )
        .await;
    assert_eq!(env["data"]["path"], path);
    assert_eq!(env["data"]["type"], "file");
    assert_eq!(env["data"]["sha"], *t.fx.get("/file_sha"));

    let raw = t
        .get(
            "gitea_repo_get_raw_file",
            json!({"filepath": path}),
            "/raw/docs/guide/a%20b.md",
        )
        .await;
    // Text comes back as a string; anything Gitea labels binary as base64.
    let text = match &raw["data"] {
        Value::String(s) => s.clone(),
        Value::Object(o) => {
            use base64::Engine;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(o["content_base64"].as_str().unwrap())
                .unwrap();
            String::from_utf8(bytes).unwrap()
        }
        other => panic!("raw file data {other}"),
    };
    assert_eq!(text, content);
}

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn compare_basehead_with_a_slashed_branch() {
    let t = MustHit::new().await;
    let basehead = format!(
        "{}...{}",
        t.fx.str("/repo/default_branch"),
        t.fx.str("/branch")
    );
    let env = t
        .get(
            "gitea_repo_compare_diff",
            json!({"basehead": basehead}),
            "/compare/main...feature/x",
        )
        .await;
    let commits = env["data"]["commits"].as_array().expect("commits");
    assert_eq!(env["data"]["total_commits"], 1, "{env}");
    assert_eq!(commits.len(), 1);
    // 1.27.1 lists the changed files per commit.
    let files: Vec<&str> = commits[0]["files"]
        .as_array()
        .map(|fs| fs.iter().filter_map(|f| f["filename"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        files.contains(&t.fx.str("/branch_file_path").as_str()),
        "{files:?}"
    );
}

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn combined_status_of_a_slashed_ref() {
    let t = MustHit::new().await;
    let env = t
        .get(
            "gitea_repo_get_combined_status_by_ref",
            json!({"ref": t.fx.str("/branch")}),
            "/commits/feature/x/status",
        )
        .await;
    // No status was ever posted: Gitea reports an empty combined status of
    // the branch head.
    assert!(env["data"]["sha"].is_string(), "{env}");
    assert_eq!(env["data"]["total_count"], 0, "{env}");
}

// ---------------------------------------------------------------------------
// 3. Live catalog
// ---------------------------------------------------------------------------

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn live_catalog_matches_the_instance() {
    let fx = Fixture::load();
    let gw = LiveGateway::start(&fx, &fx.admin_token(), &[("GITEA_OPENAPI", "live")]).await;
    let live_tools = gw.client().await.list_all_tools().await.unwrap();
    let bundled_gw = LiveGateway::start(&fx, &fx.admin_token(), &[]).await;
    let bundled_tools = bundled_gw.client().await.list_all_tools().await.unwrap();
    let by_name = |tools: &[rmcp::model::Tool]| -> BTreeMap<String, rmcp::model::Tool> {
        tools
            .iter()
            .map(|t| (t.name.to_string(), t.clone()))
            .collect()
    };
    let (live_map, bundled_map) = (by_name(&live_tools), by_name(&bundled_tools));
    let live: BTreeSet<String> = live_map.keys().cloned().collect();
    let bundled: BTreeSet<String> = bundled_map.keys().cloned().collect();
    assert!(!live.is_empty(), "the live catalog lists no tool");

    let only_live: Vec<&String> = live.difference(&bundled).collect();
    let only_bundled: Vec<&String> = bundled.difference(&live).collect();
    // Tools in both whose schema or description differ (informational).
    let (mut schema_differs, mut description_differs) = (Vec::new(), Vec::new());
    for (name, tool) in &live_map {
        let Some(other) = bundled_map.get(name) else {
            continue;
        };
        if tool.input_schema != other.input_schema {
            schema_differs.push(name.as_str());
        }
        if tool.description != other.description {
            description_differs.push(name.as_str());
        }
    }
    println!(
        "live tools: {}, bundled tools: {}\nonly live ({}): {only_live:?}\n\
         only bundled ({}): {only_bundled:?}\n\
         same name, other input schema ({}): {schema_differs:?}\n\
         same name, other description ({}): {description_differs:?}",
        live.len(),
        bundled.len(),
        only_live.len(),
        only_bundled.len(),
        schema_differs.len(),
        description_differs.len(),
    );

    // Gitea 1.27.1 lacks the reparent routes the bundled document has; their
    // absence also proves the live document was used, not the fallback.
    let reparent: BTreeSet<String> = ["repoReparent", "acceptRepoReparent", "rejectRepoReparent"]
        .into_iter()
        .map(tool_name_for_operation_id)
        .collect();
    for name in &reparent {
        assert!(bundled.contains(name), "{name} not in the bundled catalog");
        assert!(
            !live.contains(name),
            "{name} is served by the live instance"
        );
    }
    assert!(
        only_live.is_empty(),
        "tools only in the live catalog: {only_live:?}"
    );
    assert_eq!(
        only_bundled
            .iter()
            .map(|s| s.as_str())
            .collect::<BTreeSet<_>>(),
        reparent.iter().map(String::as_str).collect::<BTreeSet<_>>(),
        "unexpected tools only in the bundled catalog"
    );
}

// ---------------------------------------------------------------------------
// 4. Pagination
// ---------------------------------------------------------------------------

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn paginated_issue_list_reports_the_next_page() {
    let fx = Fixture::load();
    let gw = LiveGateway::start(&fx, &fx.admin_token(), &[]).await;
    let client = gw.client().await;
    let env = call_ok(
        &client,
        "gitea_issue_list_issues",
        json!({"owner": fx.owner(), "repo": fx.repo(), "limit": 1}),
    )
    .await;
    let p = &env["pagination"];
    println!("pagination: {p}");
    assert!(p["total_count"].as_u64().unwrap_or(0) >= 2, "{p}");
    assert_eq!(p["next_page"], 2, "{p}");
    assert_eq!(p["limit"], 1, "{p}");
    assert_eq!(env["data"].as_array().map(Vec::len), Some(1), "{env}");
}

// ---------------------------------------------------------------------------
// 5. A non-admin user
// ---------------------------------------------------------------------------

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn plain_user_is_refused_admin_operations() {
    let fx = Fixture::load();
    let gw = LiveGateway::start(&fx, &fx.str("/user/token"), &[]).await;
    let client = gw.client().await;
    let alice = fx.user_login();

    let me = call_ok(&client, "gitea_user_get_current", json!({})).await;
    assert_eq!(me["identity"]["login"], alice, "{me}");
    assert_eq!(me["data"]["login"], alice, "{me}");
    assert_eq!(me["data"]["is_admin"], false, "{me}");

    for tool in ["gitea_admin_search_users", "gitea_admin_list_hooks"] {
        let (is_error, body) = call(&client, tool, json!({})).await;
        assert!(is_error, "{tool}: {body}");
        let (status, kind, message) = check_error_envelope(&body).unwrap();
        println!("{tool} as {alice}: {status:?} {kind}: {message}");
        assert_eq!(status, Some(403), "{tool}: {body}");
        assert_eq!(kind, "forbidden", "{tool}: {body}");
    }
}

/// Issue 3, item 5: real Gitea data that carries secrets never comes back in
/// clear — the webhook's stored authorization header (on every hook read)
/// and a token-shaped secret planted in an issue body.
#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn seeded_secrets_never_come_back_in_clear() {
    let fx = Fixture::load();
    let gw = LiveGateway::start(&fx, &fx.admin_token(), &[]).await;
    let client = gw.client().await;
    let (owner, repo) = (fx.owner(), fx.repo());
    let hook_header = fx.str("/hook/authorization_header");
    let planted = fx.str("/planted_secret");

    let hooks = call_ok(
        &client,
        "gitea_repo_list_hooks",
        json!({"owner": owner, "repo": repo}),
    )
    .await;
    let hook = call_ok(
        &client,
        "gitea_repo_get_hook",
        json!({"owner": owner, "repo": repo, "id": fx.get("/hook/id")}),
    )
    .await;
    let issue = call_ok(
        &client,
        "gitea_issue_get_issue",
        json!({"owner": owner, "repo": repo, "index": fx.get("/secret_issue_number")}),
    )
    .await;
    assert!(issue["data"]["body"].is_string(), "{issue}");
    for (what, body) in [("hook list", &hooks), ("hook", &hook), ("issue", &issue)] {
        let text = body.to_string();
        assert!(
            !text.contains(&hook_header),
            "{what} leaks the webhook header"
        );
        assert!(!text.contains(&planted), "{what} leaks the planted token");
        assert!(
            !text.contains(&fx.admin_token()),
            "{what} leaks the admin token"
        );
    }
}
