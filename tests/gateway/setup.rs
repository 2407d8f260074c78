//! `aegis-gitea-mcp setup`, run as the real binary (`--non-interactive`)
//! against a small fake Gitea on loopback: the file it writes, what it
//! creates in Gitea, what it refuses, and that no secret reaches the
//! terminal.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use aegis_gitea_mcp::config::{Settings, SettingsSource};
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_aegis-gitea-mcp");
const ADMIN_TOKEN: &str = "0123456789abcdef0123456789abcdef01234567";
/// Signs in, but may not create applications (no write:user scope).
const READ_ONLY_TOKEN: &str = "fedcba9876543210fedcba9876543210fedcba98";
const CLIENT_ID: &str = "3f9a6c2e-5b1d-4e8f-9a0b-7c6d5e4f3a2b";
const CLIENT_SECRET: &str = "gto_7kq2xv9zm4wp8rn3ty6ub1sd5fg0hj2kl4zx7cv9bn3m";
const APP_ID: i64 = 42;
/// The second application created: the read one.
const READ_CLIENT_ID: &str = "8c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f";
const READ_CLIENT_SECRET: &str = "gto_read2xv9zm4wp8rn3ty6ub1sd5fg0hj2kl4zx7cv9bn3m";

// ---------------------------------------------------------------- fake Gitea

/// What the fake saw.
#[derive(Clone, Default)]
struct Seen {
    /// Every request, as `METHOD /path`.
    requests: Arc<Mutex<Vec<String>>>,
    /// Bodies of the OAuth2 applications created.
    apps: Arc<Mutex<Vec<Value>>>,
}

impl Seen {
    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
    fn apps(&self) -> Vec<Value> {
        self.apps.lock().unwrap().clone()
    }
}

struct FakeGitea {
    url: String,
    seen: Seen,
}

async fn start_fake_gitea() -> FakeGitea {
    let seen = Seen::default();
    let router = Router::new()
        .route("/api/v1/version", get(version))
        .route("/api/v1/user", get(user))
        .route("/api/v1/user/applications/oauth2", post(create_app))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    FakeGitea { url, seen }
}

fn token_of(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("authorization")?
        .to_str()
        .ok()?
        .strip_prefix("token ")
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        axum::Json(json!({"message": "token is required", "url": "http://gitea/api/swagger"})),
    )
        .into_response()
}

async fn version(State(seen): State<Seen>) -> Response {
    seen.requests
        .lock()
        .unwrap()
        .push("GET /api/v1/version".into());
    axum::Json(json!({"version": "1.27.1"})).into_response()
}

async fn user(State(seen): State<Seen>, headers: HeaderMap) -> Response {
    seen.requests
        .lock()
        .unwrap()
        .push("GET /api/v1/user".into());
    match token_of(&headers) {
        Some(ADMIN_TOKEN) => {
            axum::Json(json!({"id": 1, "login": "root", "is_admin": true})).into_response()
        }
        Some(READ_ONLY_TOKEN) => {
            axum::Json(json!({"id": 2, "login": "alice", "is_admin": false})).into_response()
        }
        _ => unauthorized(),
    }
}

async fn create_app(State(seen): State<Seen>, headers: HeaderMap, body: String) -> Response {
    seen.requests
        .lock()
        .unwrap()
        .push("POST /api/v1/user/applications/oauth2".into());
    match token_of(&headers) {
        Some(ADMIN_TOKEN) => {}
        Some(READ_ONLY_TOKEN) => {
            return (
                StatusCode::FORBIDDEN,
                axum::Json(json!({
                    "message": "token does not have at least one of required scope(s): [write:user]",
                    "url": "http://gitea/api/swagger"
                })),
            )
                .into_response();
        }
        _ => return unauthorized(),
    }
    let request: Value = serde_json::from_str(&body).unwrap();
    let created = {
        let mut apps = seen.apps.lock().unwrap();
        apps.push(request.clone());
        apps.len()
    };
    let (client_id, client_secret) = if created == 1 {
        (CLIENT_ID, CLIENT_SECRET)
    } else {
        (READ_CLIENT_ID, READ_CLIENT_SECRET)
    };
    (
        StatusCode::CREATED,
        axum::Json(json!({
            "id": APP_ID + created as i64 - 1,
            "name": request["name"],
            "client_id": client_id,
            "client_secret": client_secret,
            "redirect_uris": request["redirect_uris"],
            "confidential_client": request["confidential_client"],
            "skip_secondary_authorization": false,
            "created": "2026-01-31T09:05:00Z"
        })),
    )
        .into_response()
}

// ------------------------------------------------------------------ helpers

/// Runs the binary with only `env` in its environment, in `cwd`.
async fn run(args: &[&str], env: &[(&str, &str)], cwd: &Path) -> Output {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let cwd = cwd.to_path_buf();
    tokio::task::spawn_blocking(move || {
        Command::new(BIN)
            .args(&args)
            .env_clear()
            .envs(env)
            .current_dir(cwd)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

/// `setup --non-interactive --gitea-url <url> --output <output> <extra…>`
/// with the admin token in `GITEA_TOKEN`.
async fn setup(gitea: &str, token: &str, output: &Path, extra: &[&str]) -> Output {
    let output = output.to_str().unwrap();
    let mut args = vec![
        "setup",
        "--non-interactive",
        "--gitea-url",
        gitea,
        "--output",
        output,
    ];
    args.extend_from_slice(extra);
    run(&args, &[("GITEA_TOKEN", token)], Path::new("/")).await
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The file as the gateway reads it (dotenvy).
fn read_env(path: &Path) -> HashMap<String, String> {
    dotenvy::from_path_iter(path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn settings_of(values: &HashMap<String, String>) -> Settings {
    let settings = Settings::from_source(&SettingsSource::from_pairs(values.clone()))
        .expect("the written file holds valid settings");
    settings
        .check_for_serve()
        .expect("and `serve` accepts them");
    settings
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Neither stream holds the admin token, any generated secret or the
/// client secret.
fn assert_no_secret_printed(out: &Output, values: &HashMap<String, String>) {
    let printed = format!("{}\n{}", stdout(out), stderr(out));
    let mut secrets = vec![
        ADMIN_TOKEN,
        READ_ONLY_TOKEN,
        CLIENT_SECRET,
        READ_CLIENT_SECRET,
    ];
    for key in [
        "GITEA_TOKEN",
        "MCP_BEARER_TOKEN",
        "TOKEN_ENCRYPTION_KEY",
        "AUDIT_HMAC_KEY",
        "GITEA_OAUTH_CLIENT_SECRET",
        "GITEA_OAUTH_READ_CLIENT_SECRET",
    ] {
        if let Some(v) = values.get(key) {
            secrets.push(v);
        }
    }
    for secret in secrets {
        assert!(
            !printed.contains(secret),
            "a secret was printed:\n{printed}"
        );
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

// -------------------------------------------------------------------- tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_a_valid_0600_file_and_creates_the_confidential_app() {
    let gitea = start_fake_gitea().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".env");
    let out = setup(&gitea.url, ADMIN_TOKEN, &path, &[]).await;
    assert!(out.status.success(), "stderr: {}", stderr(&out));

    assert_eq!(mode_of(&path), 0o600);
    assert_eq!(entries(dir.path()), [".env"], "no temporary file is left");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("# Written by `aegis-gitea-mcp setup`"),
        "{text}"
    );

    let values = read_env(&path);
    assert_eq!(values["GITEA_URL"], gitea.url);
    assert_eq!(values["GITEA_TOKEN"], ADMIN_TOKEN);
    assert_eq!(values["MCP_HOST"], "127.0.0.1");
    assert_eq!(values["MCP_PORT"], "8080");
    assert_eq!(values["PUBLIC_BASE_URL"], "http://127.0.0.1:8080");
    assert_eq!(values["GITEA_OAUTH_CLIENT_ID"], CLIENT_ID);
    assert_eq!(values["GITEA_OAUTH_CLIENT_SECRET"], CLIENT_SECRET);
    assert_eq!(values["GITEA_OAUTH_READ_CLIENT_ID"], READ_CLIENT_ID);
    assert_eq!(values["GITEA_OAUTH_READ_CLIENT_SECRET"], READ_CLIENT_SECRET);
    let generated = [
        &values["MCP_BEARER_TOKEN"],
        &values["TOKEN_ENCRYPTION_KEY"],
        &values["AUDIT_HMAC_KEY"],
    ];
    for secret in generated {
        assert_eq!(secret.len(), 43, "32 bytes, base64url");
    }
    assert_ne!(generated[0], generated[1]);
    assert_ne!(generated[1], generated[2]);

    let settings = settings_of(&values);
    assert!(settings.oauth_configured());
    assert!(settings.mcp_bearer_token.is_some());
    assert!(settings.audit_hmac_key.is_some());

    assert_eq!(
        gitea.seen.apps(),
        [
            json!({
                "name": "Aegis Gitea MCP",
                "redirect_uris": ["http://127.0.0.1:8080/oauth/callback"],
                "confidential_client": true
            }),
            json!({
                "name": "Aegis Gitea MCP (read only)",
                "redirect_uris": ["http://127.0.0.1:8080/oauth/callback"],
                "confidential_client": true
            })
        ]
    );

    let printed = stdout(&out);
    assert!(printed.contains("1.27.1"), "{printed}");
    assert!(printed.contains("root"), "{printed}");
    assert!(printed.contains(&format!("id {APP_ID}")), "{printed}");
    assert!(
        printed.contains(&format!(
            "aegis-gitea-mcp --env-file {} serve",
            path.display()
        )),
        "{printed}"
    );
    for expected in [
        "claude.ai",
        "Le Chat",
        "Claude Desktop",
        "claude mcp add --transport http aegis http://127.0.0.1:8080/mcp",
        "~/.cursor/mcp.json",
        ".vscode/mcp.json",
        "MCP Inspector",
    ] {
        assert!(printed.contains(expected), "{expected} missing:\n{printed}");
    }
    assert_no_secret_printed(&out, &values);

    // The gateway itself accepts the file (`catalog` validates it and
    // builds the application, opening the store in ./data).
    let work = tempfile::tempdir().unwrap();
    let catalog = run(
        &[
            "--env-file",
            path.to_str().unwrap(),
            "catalog",
            "--toolsets",
        ],
        &[],
        work.path(),
    )
    .await;
    assert!(catalog.status.success(), "stderr: {}", stderr(&catalog));
    assert!(stdout(&catalog).lines().count() > 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_set_the_bind_port_public_url_and_app_name() {
    let gitea = start_fake_gitea().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("aegis.env");
    let gitea_with_slash = format!("{}/", gitea.url);
    let out = run(
        &[
            "setup",
            "--non-interactive",
            "--gitea-url",
            &gitea_with_slash,
            "--admin-token",
            ADMIN_TOKEN,
            "--bind",
            "0.0.0.0",
            "--port",
            "9443",
            "--public-base-url",
            "https://MCP.example.com/",
            "--oauth-app-name",
            "Team MCP",
            "--output",
            path.to_str().unwrap(),
        ],
        &[],
        dir.path(),
    )
    .await;
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let values = read_env(&path);
    assert_eq!(values["GITEA_URL"], gitea.url, "normalised, no trailing /");
    assert_eq!(values["MCP_HOST"], "0.0.0.0");
    assert_eq!(values["MCP_PORT"], "9443");
    assert_eq!(values["PUBLIC_BASE_URL"], "https://mcp.example.com");
    let settings = settings_of(&values);
    assert!(!settings.binds_loopback());
    assert_eq!(
        gitea.seen.apps(),
        [
            json!({
                "name": "Team MCP",
                "redirect_uris": ["https://mcp.example.com/oauth/callback"],
                "confidential_client": true
            }),
            json!({
                "name": "Team MCP (read only)",
                "redirect_uris": ["https://mcp.example.com/oauth/callback"],
                "confidential_client": true
            })
        ]
    );
    assert!(stdout(&out).contains("https://mcp.example.com/mcp"));
    // The token came as a flag: still never echoed.
    assert_no_secret_printed(&out, &values);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_file_is_kept_unless_forced() {
    let gitea = start_fake_gitea().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".env");
    std::fs::write(&path, "OLD=1\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();

    let out = setup(&gitea.url, ADMIN_TOKEN, &path, &[]).await;
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "OLD=1\n");
    assert_eq!(mode_of(&path), 0o644);
    assert!(gitea.seen.requests().is_empty(), "refused before Gitea");
    assert!(gitea.seen.apps().is_empty());

    let out = setup(&gitea.url, ADMIN_TOKEN, &path, &["--force"]).await;
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let values = read_env(&path);
    assert!(!values.contains_key("OLD"));
    assert_eq!(values["GITEA_OAUTH_CLIENT_ID"], CLIENT_ID);
    assert_eq!(mode_of(&path), 0o600);
    assert_eq!(entries(dir.path()), [".env"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_target_is_refused_even_with_force() {
    let gitea = start_fake_gitea().await;
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.env");
    std::fs::write(&real, "REAL=1\n").unwrap();
    let link = dir.path().join(".env");
    std::os::unix::fs::symlink(&real, &link).unwrap();

    let out = setup(&gitea.url, ADMIN_TOKEN, &link, &["--force"]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("symlink"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "REAL=1\n");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(gitea.seen.apps().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_admin_token_writes_nothing_and_creates_nothing() {
    let gitea = start_fake_gitea().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".env");
    let wrong = "not-the-admin-token-0000000000000000000000";
    let out = setup(&gitea.url, wrong, &path, &[]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("refused the admin token"), "{err}");
    assert!(err.contains("401"), "{err}");
    assert!(!err.contains(wrong) && !stdout(&out).contains(wrong));
    assert!(entries(dir.path()).is_empty(), "no file, no temporary file");
    assert!(gitea.seen.apps().is_empty());
    assert_eq!(
        gitea.seen.requests(),
        ["GET /api/v1/version", "GET /api/v1/user"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_that_may_not_create_applications_is_explained() {
    let gitea = start_fake_gitea().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".env");
    let out = setup(&gitea.url, READ_ONLY_TOKEN, &path, &[]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("403") && err.contains("write:user"), "{err}");
    assert!(err.contains("--no-oauth"), "{err}");
    assert!(entries(dir.path()).is_empty());
    assert!(gitea.seen.apps().is_empty());
    assert_no_secret_printed(&out, &HashMap::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_gitea_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".env");
    let url = format!("http://127.0.0.1:{}", closed_port());
    let out = setup(&url, ADMIN_TOKEN, &path, &[]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("not reachable") && err.contains(&url), "{err}");
    assert!(entries(dir.path()).is_empty());
    assert_no_secret_printed(&out, &HashMap::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_oauth_creates_no_application() {
    let gitea = start_fake_gitea().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".env");
    let out = setup(&gitea.url, ADMIN_TOKEN, &path, &["--no-oauth"]).await;
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(gitea.seen.apps().is_empty());
    assert!(!gitea.seen.requests().iter().any(|r| r.starts_with("POST")));
    let values = read_env(&path);
    assert!(!values.contains_key("GITEA_OAUTH_CLIENT_ID"));
    assert!(!values.contains_key("GITEA_OAUTH_CLIENT_SECRET"));
    for key in ["MCP_BEARER_TOKEN", "TOKEN_ENCRYPTION_KEY", "AUDIT_HMAC_KEY"] {
        assert_eq!(values[key].len(), 43, "{key}");
    }
    let settings = settings_of(&values);
    assert!(!settings.oauth_configured());
    assert!(stdout(&out).contains("Authorization: Bearer <MCP_BEARER_TOKEN>"));
    assert_no_secret_printed(&out, &values);
}

/// Without OAuth the snippets carry the bearer header, and nothing tells
/// a person to sign in, or to drop a flag they never passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snippets_without_oauth_carry_the_bearer_and_no_sign_in() {
    let gitea = start_fake_gitea().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".env");
    let out = setup(&gitea.url, ADMIN_TOKEN, &path, &["--no-oauth"]).await;
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let printed = stdout(&out);
    assert!(!printed.to_lowercase().contains("sign in"), "{printed}");
    assert!(!printed.contains("without --no-oauth"), "{printed}");
    for client in ["Claude Code", "Cursor", "VS Code"] {
        let section = printed
            .split(&format!("\n{client}\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("{client}: {printed}"));
        let section = section.split("\n\n").next().unwrap();
        assert!(section.contains("Bearer"), "{client}: {section}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_public_url_off_loopback_is_refused_before_gitea() {
    let gitea = start_fake_gitea().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".env");
    let out = setup(
        &gitea.url,
        ADMIN_TOKEN,
        &path,
        &["--public-base-url", "http://mcp.example.com"],
    )
    .await;
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("PUBLIC_BASE_URL")
            && err.contains("https")
            && err.contains("--public-base-url"),
        "{err}"
    );
    assert!(entries(dir.path()).is_empty());
    assert!(gitea.seen.requests().is_empty());
    assert_no_secret_printed(&out, &HashMap::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_answers_fail_clearly_without_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    // No --non-interactive: stdin is not a terminal, which implies it.
    let out = run(&["setup"], &[("GITEA_TOKEN", ADMIN_TOKEN)], dir.path()).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--gitea-url"), "{}", stderr(&out));

    let out = run(
        &[
            "setup",
            "--non-interactive",
            "--gitea-url",
            "http://127.0.0.1:3000",
        ],
        &[],
        dir.path(),
    )
    .await;
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("GITEA_TOKEN") && err.contains("--admin-token"),
        "{err}"
    );
    assert!(entries(dir.path()).is_empty());
}
