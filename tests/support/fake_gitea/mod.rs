//! An in-process fake Gitea for fast integration tests. It answers the way
//! Gitea 1.27 does on the routes the tests use: token authentication
//! (`Authorization: token …` or `Bearer …`), `X-Total-Count` and `Link`
//! pagination, `{"message", "url"}` error bodies (404 with `errors`), 422
//! binding failures, raw file downloads, and routing on the raw
//! (still-encoded) path, so `%2F` in a single-segment parameter behaves as on
//! Gitea. Every request is recorded, so a test can prove that nothing was
//! sent.
//!
//! It knows a few accounts ([`USERS`]): the site admin, whose personal
//! access token is [`ADMIN_TOKEN`], and the non-admins `alice` and `bob`.
//! It also plays Gitea's OAuth2 provider for the gateway's two registered
//! confidential applications ([`OAUTH_CLIENT_ID`], read and write, and
//! [`OAUTH_READ_CLIENT_ID`]): see the `oauth` module for the
//! endpoints and the test controls (`sign_in_as`, `expire_access_tokens`,
//! …). An OAuth access token it minted acts on `/api/v1` as its owner:
//! `GET /user` names that user, `/admin/…` answers 403 to a non-admin, and
//! so does a `Sudo` header.

mod oauth;
pub mod reviews;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

#[allow(unused_imports)]
pub use oauth::{
    ACCESS_TOKEN_PREFIX, AUTHORIZATION_CODE_PREFIX, DEFAULT_ACCESS_TOKEN_LIFETIME, FakeApp,
    Forgery, OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET, OAUTH_READ_CLIENT_ID, OAUTH_READ_CLIENT_SECRET,
    REFRESH_TOKEN_PREFIX, s256_challenge,
};

pub const ADMIN_TOKEN: &str = "fake-admin-token-0123456789abcdef";
pub const ADMIN_LOGIN: &str = "gitea-admin";
pub const ALICE_LOGIN: &str = "alice";
pub const BOB_LOGIN: &str = "bob";
pub const TOTAL_ISSUES: u64 = 45;

/// An account of the fake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FakeUser {
    pub id: u64,
    pub login: &'static str,
    pub full_name: &'static str,
    pub email: &'static str,
    pub is_admin: bool,
}

/// Every account the fake knows: the site admin first.
pub const USERS: &[FakeUser] = &[
    FakeUser {
        id: 1,
        login: ADMIN_LOGIN,
        full_name: "Gitea Admin",
        email: "admin@example.org",
        is_admin: true,
    },
    FakeUser {
        id: 2,
        login: ALICE_LOGIN,
        full_name: "Alice Liddell",
        email: "alice@example.org",
        is_admin: false,
    },
    FakeUser {
        id: 3,
        login: BOB_LOGIN,
        full_name: "Bob Builder",
        email: "bob@example.org",
        is_admin: false,
    },
];

/// Who belongs to which organisation's team: alice to `acme/platform`,
/// bob to `acme/support`. Alice is also in [`ALICE_GUILDS`] teams of the
/// organisation `guilds`, listed before `acme/platform`, so her platform
/// team is on the second page of [`MEMBERSHIP_PAGE_ITEMS`] (the red team's
/// F6 of issue 45: one page was read).
pub const MEMBERSHIPS: &[(&str, &str, &str)] = &[
    (ALICE_LOGIN, "acme", "platform"),
    (BOB_LOGIN, "acme", "support"),
];
pub const ALICE_GUILDS: usize = 40;
/// The membership lists' page size, as on an instance whose
/// `MAX_RESPONSE_ITEMS` is 30 (whatever `limit` asks).
pub const MEMBERSHIP_PAGE_ITEMS: u64 = 30;

/// Every (organisation, team) pair of `login`, in Gitea's order, with
/// `crowd` teams of the organisation `crowd`.
fn memberships(login: &str, crowd: usize) -> Vec<(String, String)> {
    let guilds = (1..=ALICE_GUILDS)
        .filter(|_| login.eq_ignore_ascii_case(ALICE_LOGIN))
        .map(|n| ("guilds".to_owned(), format!("guild-{n:02}")));
    guilds
        .chain(
            MEMBERSHIPS
                .iter()
                .filter(|(member, _, _)| member.eq_ignore_ascii_case(login))
                .map(|(_, org, team)| ((*org).to_owned(), (*team).to_owned())),
        )
        .chain((1..=crowd).map(|n| ("crowd".to_owned(), format!("team-{n:04}"))))
        .collect()
}

/// One page of `items` at `path`, with the `X-Total-Count` and `Link`
/// headers Gitea sends: `limit` (default 30) clamped to `max_limit`.
fn paged_list(
    base: &str,
    path: &str,
    items: Vec<Value>,
    (page, limit): (Option<String>, Option<String>),
    max_limit: u64,
) -> Response {
    let total = items.len() as u64;
    let page: u64 = page.and_then(|p| p.parse().ok()).unwrap_or(1).max(1);
    let limit: u64 = limit
        .and_then(|l| l.parse().ok())
        .unwrap_or(30)
        .clamp(1, max_limit);
    let start = ((page - 1) * limit).min(total);
    let end = (start + limit).min(total);
    let shown: Vec<Value> = items[start as usize..end as usize].to_vec();
    let last = total.div_ceil(limit).max(1);
    let link_to =
        |p: u64, rel: &str| format!(r#"<{base}/api/v1{path}?limit={limit}&page={p}>; rel="{rel}""#);
    let mut links = Vec::new();
    if page < last {
        links.push(link_to(page + 1, "next"));
        links.push(link_to(last, "last"));
    }
    if page > 1 {
        links.push(link_to(1, "first"));
        links.push(link_to(page - 1, "prev"));
    }
    let mut response = axum::Json(shown).into_response();
    let headers = response.headers_mut();
    headers.insert("x-total-count", HeaderValue::from(total));
    if !links.is_empty() {
        headers.insert(
            header::LINK,
            HeaderValue::from_str(&links.join(",")).unwrap(),
        );
    }
    response
}

/// The account named `login` (case-insensitive, as Gitea's user lookup).
/// Besides [`USERS`], a team of people `person-1` … `person-999` exists for
/// the tests that need many (each made on first use; never listed).
pub fn user(login: &str) -> Option<&'static FakeUser> {
    if let Some(user) = USERS.iter().find(|u| u.login.eq_ignore_ascii_case(login)) {
        return Some(user);
    }
    let n: u64 = login.strip_prefix("person-")?.parse().ok()?;
    if !(1..=999).contains(&n) {
        return None;
    }
    static TEAM: std::sync::Mutex<Vec<&'static FakeUser>> = std::sync::Mutex::new(Vec::new());
    let mut team = TEAM.lock().unwrap();
    if let Some(user) = team.iter().find(|u| u.id == 1000 + n) {
        return Some(*user);
    }
    let person: &'static FakeUser = Box::leak(Box::new(FakeUser {
        id: 1000 + n,
        login: Box::leak(format!("person-{n}").into_boxed_str()),
        full_name: Box::leak(format!("Person {n}").into_boxed_str()),
        email: Box::leak(format!("person-{n}@example.org").into_boxed_str()),
        is_admin: false,
    }));
    team.push(person);
    Some(person)
}

impl FakeUser {
    /// The user as Gitea's API returns it (`GET /user`, `/admin/users`).
    pub fn json(&self, base: &str) -> Value {
        json!({
            "id": self.id,
            "login": self.login,
            "login_name": "",
            "source_id": 0,
            "full_name": self.full_name,
            "email": self.email,
            "avatar_url": format!("{base}/avatars/{}", self.id),
            "html_url": format!("{base}/{}", self.login),
            "language": "en-US",
            "is_admin": self.is_admin,
            "last_login": "2026-01-01T00:00:00Z",
            "created": "2025-01-01T00:00:00Z",
            "restricted": false,
            "active": true,
            "prohibit_login": false,
            "location": "",
            "website": "",
            "description": "",
            "visibility": "public",
            "followers_count": 0,
            "following_count": 0,
            "starred_repos_count": 0,
            "username": self.login,
        })
    }
}

/// One request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: Method,
    /// Path and query exactly as received (still percent-encoded).
    pub uri: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Recorded {
    /// The path without the query.
    pub fn path(&self) -> &str {
        self.uri.split('?').next().unwrap_or("")
    }
}

#[derive(Clone, Default)]
struct FakeState {
    base: Arc<Mutex<String>>,
    log: Arc<Mutex<Vec<Recorded>>>,
    oauth: Arc<Mutex<oauth::Provider>>,
    /// Teams of the organisation `crowd` every account is also in.
    crowd_teams: Arc<std::sync::atomic::AtomicUsize>,
}

/// A running fake Gitea on a loopback port.
pub struct FakeGitea {
    pub url: String,
    state: FakeState,
}

impl FakeGitea {
    pub async fn start() -> Self {
        let state = FakeState::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let url = format!("http://{addr}");
        *state.base.lock().unwrap() = url.clone();
        let app = Router::new().fallback(handle).with_state(state.clone());
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { url, state }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.log.lock().unwrap().clone()
    }

    /// Requests a tool caused: all but the login lookup (`GET /api/v1/user`),
    /// the version probe (`GET /api/v1/version`, at startup and by `/health`)
    /// and the OAuth2 provider's browser and token endpoints
    /// (`/login/oauth/…`, `/user/login`).
    pub fn tool_requests(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r.uri != "/api/v1/user" && r.uri != "/api/v1/version" && !is_provider_path(r.path())
            })
            .collect()
    }

    /// Requests to the OAuth2 provider (`/login/oauth/…`, `/user/login`).
    pub fn oauth_requests(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| is_provider_path(r.path()))
            .collect()
    }

    pub fn clear(&self) {
        self.state.log.lock().unwrap().clear();
    }

    /// From now on every account is also in `count` teams of the
    /// organisation `crowd`, listed after its others.
    pub fn join_crowd_teams(&self, count: usize) {
        self.state
            .crowd_teams
            .store(count, std::sync::atomic::Ordering::Relaxed);
    }
}

fn is_provider_path(path: &str) -> bool {
    path.starts_with("/login/oauth/")
        || path == "/user/login"
        || path == "/.well-known/openid-configuration"
}

fn message(status: StatusCode, base: &str, msg: &str) -> Response {
    let mut body = json!({"message": msg, "url": format!("{base}/api/swagger")});
    if status == StatusCode::NOT_FOUND {
        body["errors"] = json!([]);
    }
    (status, axum::Json(body)).into_response()
}

/// The account an API request acts as: Gitea reads `Authorization: token
/// <t>` or `Bearer <t>` (scheme case-insensitive) and accepts a personal
/// access token or an OAuth2 access token alike.
fn authenticate(state: &FakeState, headers: &HeaderMap) -> Option<&'static FakeUser> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, credential) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("token") && !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    if credential == ADMIN_TOKEN {
        return user(ADMIN_LOGIN);
    }
    let login = state.oauth.lock().unwrap().access_token_owner(credential)?;
    user(login)
}

/// Whether the request's OAuth access token (if it is one) holds a
/// `write:` scope.
fn token_may_write(state: &FakeState, headers: &HeaderMap) -> bool {
    let credential = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .map_or("", |(_, credential)| credential);
    state
        .oauth
        .lock()
        .unwrap()
        .access_token_may_write(credential)
}

async fn handle(State(state): State<FakeState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 64 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let uri = parts.uri.to_string();
    let base = state.base.lock().unwrap().clone();
    state.log.lock().unwrap().push(Recorded {
        method: parts.method.clone(),
        uri: uri.clone(),
        headers: parts.headers.clone(),
        body: body.clone(),
    });

    if is_provider_path(parts.uri.path()) {
        return oauth::route(&state.oauth, &parts, &body, &base);
    }
    if parts.uri.path() == "/swagger.v1.json" {
        return (
            [(header::CONTENT_TYPE, "application/json")],
            include_str!("../../../src/catalog/bundled/swagger.v1.json"),
        )
            .into_response();
    }
    // Gitea answers the version to anyone (health probes rely on it).
    if parts.method == Method::GET && parts.uri.path() == "/api/v1/version" {
        return axum::Json(json!({"version": "1.27.1"})).into_response();
    }
    let Some(caller) = authenticate(&state, &parts.headers) else {
        return message(StatusCode::UNAUTHORIZED, &base, "token is required");
    };
    // Gitea's token scope check, coarsely: a change needs a `write:` scope.
    if !matches!(parts.method, Method::GET | Method::HEAD)
        && !token_may_write(&state, &parts.headers)
    {
        return message(
            StatusCode::FORBIDDEN,
            &base,
            "token does not have at least one of required scope(s), required=[write:repository write:issue], token scope=read:repository,read:issue",
        );
    }
    let path = parts.uri.path();
    let query: Vec<(String, String)> =
        url::form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let q = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let segments: Vec<&str> = path.trim_start_matches("/api/v1/").split('/').collect();
    let sudo = parts
        .headers
        .get("sudo")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);

    // Gitea's `sudo()` and `reqSiteAdmin()` middlewares, for non-admins.
    if sudo.as_deref().is_some_and(|s| !s.is_empty()) && !caller.is_admin {
        return (
            StatusCode::FORBIDDEN,
            axum::Json(json!({"message": "Only administrators allowed to sudo."})),
        )
            .into_response();
    }
    if segments.first() == Some(&"admin") && !caller.is_admin {
        return message(
            StatusCode::FORBIDDEN,
            &base,
            "user should be the site admin",
        );
    }
    // Gitea's `reqBasicAuth()` routes (access tokens are managed with the
    // password only): a token, however valid, gets 401.
    if matches!(segments.as_slice(), ["users", _, "tokens", ..]) {
        return message(StatusCode::UNAUTHORIZED, &base, "auth required");
    }
    if let Some(response) = hygiene_route(&parts.method, &segments, &body, &base).await {
        return response;
    }
    if let Some(response) = reviews::route(&parts.method, &segments, &base) {
        return response;
    }
    match (parts.method.clone(), segments.as_slice()) {
        (Method::GET, ["user"]) => match sudo {
            None => axum::Json(caller.json(&base)).into_response(),
            Some(login) => match user(&login) {
                Some(account) => axum::Json(account.json(&base)).into_response(),
                // Not an account of the fake: answered as before users existed.
                None => {
                    axum::Json(json!({"id": 1, "login": login, "is_admin": true})).into_response()
                }
            },
        },
        // Memberships (`MEMBERSHIPS`), paged as Gitea pages them.
        (Method::GET, ["user", "orgs"]) => {
            let orgs: Vec<Value> = memberships(
                caller.login,
                state.crowd_teams.load(std::sync::atomic::Ordering::Relaxed),
            )
            .into_iter()
            .map(|(org, _)| org)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(|org| json!({"id": 7, "name": org, "username": org}))
            .collect();
            paged_list(
                &base,
                "/user/orgs",
                orgs,
                (q("page"), q("limit")),
                MEMBERSHIP_PAGE_ITEMS,
            )
        }
        (Method::GET, ["user", "teams"]) => {
            let teams: Vec<Value> = memberships(
                caller.login,
                state.crowd_teams.load(std::sync::atomic::Ordering::Relaxed),
            )
                .into_iter()
                .map(|(org, team)| {
                    json!({"id": 11, "name": team, "organization": {"id": 7, "name": org, "username": org}})
                })
                .collect();
            paged_list(
                &base,
                "/user/teams",
                teams,
                (q("page"), q("limit")),
                MEMBERSHIP_PAGE_ITEMS,
            )
        }
        (Method::GET, ["admin", "users"]) => {
            let users: Vec<Value> = USERS.iter().map(|u| u.json(&base)).collect();
            let mut response = axum::Json(users).into_response();
            response
                .headers_mut()
                .insert("x-total-count", HeaderValue::from(USERS.len()));
            response
        }
        (Method::GET, ["repos", owner, repo, "issues"]) => {
            list_issues(&base, owner, repo, q("page"), q("limit"))
        }
        (Method::POST, ["repos", _, _, "issues"]) => {
            let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            match parsed.get("title").and_then(Value::as_str) {
                Some(title) if !title.is_empty() => (
                    StatusCode::CREATED,
                    axum::Json(json!({"id": 99, "number": 46, "title": title, "state": "open"})),
                )
                    .into_response(),
                _ => message(StatusCode::UNPROCESSABLE_ENTITY, &base, "[Title]: Required"),
            }
        }
        // Wildcard route: everything after `contents/` is the file path.
        (Method::GET, ["repos", _, _, "contents", rest @ ..]) if !rest.is_empty() => {
            let filepath = percent_decode(&rest.join("/"));
            axum::Json(json!({
                "name": filepath.rsplit('/').next(),
                "path": filepath,
                "type": "file",
                "encoding": "base64",
                "content": "aGVsbG8K",
            }))
            .into_response()
        }
        // Single-segment route: a tag with `/` only matches as `%2F`.
        (Method::GET, ["repos", _, _, "releases", "tags", tag]) => {
            let tag = percent_decode(tag);
            axum::Json(json!({"id": 3, "tag_name": tag, "name": format!("Release {tag}")}))
                .into_response()
        }
        (Method::GET, ["repos", _, _, "raw", rest @ ..]) if !rest.is_empty() => (
            [(header::CONTENT_TYPE, "application/octet-stream")],
            vec![0u8, 1, 2, 250, 251, 252],
        )
            .into_response(),
        (Method::GET, ["repos", owner, repo]) => {
            axum::Json(json!({"id": 7, "name": repo, "full_name": format!("{owner}/{repo}")}))
                .into_response()
        }
        _ => message(
            StatusCode::NOT_FOUND,
            &base,
            "The target couldn't be found.",
        ),
    }
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

fn list_issues(
    base: &str,
    owner: &str,
    repo: &str,
    page: Option<String>,
    limit: Option<String>,
) -> Response {
    let items: Vec<Value> = (0..TOTAL_ISSUES)
        .map(|i| json!({"id": 1000 + i, "number": i + 1, "title": format!("Issue {}", i + 1), "state": "open"}))
        .collect();
    // Gitea's default page size is 30 and it clamps silently at 50.
    paged_list(
        base,
        &format!("/repos/{owner}/{repo}/issues"),
        items,
        (page, limit),
        50,
    )
}

/// Owner (and organization) whose routes plant secrets, for the result
/// hygiene tests; every other owner behaves as before.
pub const HYGIENE_OWNER: &str = "hygiene";
/// A webhook's stored Authorization header, as Gitea returns it on reads.
pub const PLANTED_HOOK_HEADER: &str = "Bearer planted-hook-header-0123456789";
/// A third-party credential inside issue text (AWS's documented example id).
pub const PLANTED_AWS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";
/// A commit id inside issue text, which must never be masked.
pub const PLANTED_SHA: &str = "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3";
/// A freshly minted OAuth2 client secret (Gitea's `gto_` format).
pub const MINTED_CLIENT_SECRET: &str = "gto_abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrst";
/// Lines of the planted text file.
pub const PLANTED_FILE_LINES: usize = 20_000;

/// The gateway's bearer token in the encodings a leak may take: base64 at
/// two alignments (after one and two other bytes), base64url, and hex.
pub fn encoded_bearer_forms() -> [String; 4] {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    let bearer = super::BEARER.as_bytes();
    [
        STANDARD.encode([b"x".as_slice(), bearer].concat()),
        STANDARD.encode([b"xy".as_slice(), bearer].concat()),
        URL_SAFE_NO_PAD.encode(bearer),
        bearer.iter().map(|b| format!("{b:02X}")).collect(),
    ]
}

fn planted_issue(base: &str, number: u64) -> Value {
    let [b64_one, b64_two, b64_url, hex] = encoded_bearer_forms();
    json!({
        "id": 5000 + number,
        "number": number,
        "title": format!("Deploy fails ({PLANTED_SHA})"),
        "body": format!("The log says Authorization: token {ADMIN_TOKEN}\nand the old key {PLANTED_AWS_KEY} is in config.\nFixed in {PLANTED_SHA}."),
        "html_url": format!("{base}/{HYGIENE_OWNER}/app/issues/{number}"),
        ADMIN_TOKEN: "a key that is the token",
        "state": "open",
        "encoded_leaks": format!("basic {b64_one}; again {b64_two}; url {b64_url}; hex {hex}"),
    })
}

fn hook(id: u64, header: &str, config: Value) -> Value {
    json!({
        "id": id, "type": "gitea", "active": true, "events": ["push"],
        "authorization_header": header, "config": config,
        "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
    })
}

/// Routes that plant secrets in what they return; `None` for every other
/// request, which then gets the fake's usual answer.
async fn hygiene_route(
    method: &Method,
    segments: &[&str],
    body: &Bytes,
    base: &str,
) -> Option<Response> {
    let hook_rest = match segments {
        ["repos", HYGIENE_OWNER, _, "hooks", rest @ ..]
        | ["orgs", HYGIENE_OWNER, "hooks", rest @ ..]
        | ["user", "hooks", rest @ ..]
        | ["admin", "hooks", rest @ ..] => Some(rest),
        _ => None,
    };
    if let Some(rest) = hook_rest {
        let sent: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let config = json!({"url": "https://ci.example.org/hook", "content_type": "json"});
        return Some(match (method.clone(), rest) {
            (Method::GET, []) => axum::Json(json!([
                hook(1, PLANTED_HOOK_HEADER, config.clone()),
                hook(2, "", config),
            ]))
            .into_response(),
            (Method::GET, [_id]) => {
                axum::Json(hook(1, PLANTED_HOOK_HEADER, config)).into_response()
            }
            // Gitea echoes what was submitted, the header included.
            (Method::POST, []) | (Method::PATCH, [_]) => {
                let header = sent["authorization_header"].as_str().unwrap_or("");
                let echoed = hook(3, header, sent.get("config").cloned().unwrap_or(config));
                let status = if *method == Method::POST {
                    StatusCode::CREATED
                } else {
                    StatusCode::OK
                };
                (status, axum::Json(echoed)).into_response()
            }
            _ => message(StatusCode::NOT_FOUND, base, "The target couldn't be found."),
        });
    }
    Some(match (method.clone(), segments) {
        (Method::GET, ["repos", HYGIENE_OWNER, _, "issues", index]) => {
            let number = index.parse().unwrap_or(1);
            axum::Json(planted_issue(base, number)).into_response()
        }
        (Method::GET, ["repos", HYGIENE_OWNER, _, "issues"]) => {
            let items: Vec<Value> = (1..=150).map(|n| planted_issue(base, n)).collect();
            axum::Json(items).into_response()
        }
        // A long text file with the token on every line.
        (Method::GET, ["repos", HYGIENE_OWNER, _, "raw", ..]) => {
            let text: String = (0..PLANTED_FILE_LINES)
                .map(|i| format!("line {i}: GITEA_TOKEN={ADMIN_TOKEN}\n"))
                .collect();
            ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
        }
        (Method::GET, ["repos", HYGIENE_OWNER, _, "contents", rest @ ..]) => {
            use base64::Engine;
            let content = base64::engine::general_purpose::STANDARD
                .encode(format!("token: {ADMIN_TOKEN}\naws: {PLANTED_AWS_KEY}\n"));
            axum::Json(json!({
                "name": rest.last(), "path": rest.join("/"), "type": "file",
                "sha": PLANTED_SHA, "encoding": "base64", "content": content,
            }))
            .into_response()
        }
        // Gitea errors can quote what they were sent.
        (Method::GET, ["repos", HYGIENE_OWNER, _, "branches", _]) => message(
            StatusCode::INTERNAL_SERVER_ERROR,
            base,
            &format!("git error for {ADMIN_TOKEN} with {PLANTED_AWS_KEY}; Authorization: token {ADMIN_TOKEN}"),
        ),
        (Method::POST, ["user", "applications", "oauth2"]) => (
            StatusCode::CREATED,
            axum::Json(json!({"id": 4, "name": "ci", "client_id": "0f7e1c2a-1111-2222-3333-444455556666",
                              "client_secret": MINTED_CLIENT_SECRET, "redirect_uris": ["https://x/cb"]})),
        )
            .into_response(),
        // A read that (unlike Gitea) returns a stored secret: masked.
        (Method::GET, ["user", "applications", "oauth2", _]) => {
            axum::Json(json!({"id": 4, "name": "ci", "client_secret": MINTED_CLIENT_SECRET})).into_response()
        }
        (Method::GET, ["repos", HYGIENE_OWNER, "slow", ..]) => {
            tokio::time::sleep(std::time::Duration::from_secs(3)).await;
            axum::Json(json!({})).into_response()
        }
        _ => return None,
    })
}
