//! Stores written by earlier versions of the gateway, opened by this one
//! (issue 52): `tests/fixtures/stores/schema-NNNN/{sqlite,postgres}/`, one
//! per migration level from 0008 on, each written by the gateway of that
//! level through real sign-ins against the fake Gitea (`write_store_fixture`
//! below; tests/fixtures/stores/README.md says how and when). Opened here,
//! every connection still calls as its person, a refresh token still
//! refreshes and its rotated predecessor is caught as reuse, each client
//! (registered dynamically, with a secret, or by a metadata document) signs
//! in anew, the pending confirmation is approved on its page and runs, the
//! page sessions still sign people in, and the audit log goes on from the
//! fixture's last entry and verifies. A SQLite fixture from an older level
//! is migrated, after a backup.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aegis_gitea_mcp::audit::ChainKey;
use aegis_gitea_mcp::audit::verify::{VerifyReport, default_files, verify_files};
use aegis_gitea_mcp::clock::{Clock, ManualClock};
use aegis_gitea_mcp::store::schema::backup::before_migration_folders;
use aegis_gitea_mcp::store::schema::binary_level;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::fake_gitea::{ADMIN_LOGIN, FakeGitea};
use crate::support::postgres;
use crate::{Browser, CLIENT_REDIRECT, ENCRYPTION_KEY, GatewayParts, OAuthGateway, TestClient};

/// The fixtures' gateway and metadata-document addresses: fixed, since the
/// stored grants are bound to the gateway's URL and a metadata client is
/// its document's URL. Below Linux's ephemeral range, so no other test's
/// listener takes them; one fixture at a time holds them.
const GATEWAY_ADDR: &str = "127.0.0.1:29417";
const METADATA_ADDR: &str = "127.0.0.1:29418";
const AUDIT_KEY: &str = "store-fixture-audit-hmac-key-0123456789abcdef";
static ADDRESSES: std::sync::Mutex<()> = std::sync::Mutex::new(());

const DELETE: &str = "gitea_call_write_operation";

fn fixtures_root() -> PathBuf {
    PathBuf::from("tests/fixtures/stores")
}

fn settings() -> Vec<(&'static str, &'static str)> {
    vec![
        ("AUDIT_HMAC_KEY", AUDIT_KEY),
        ("OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES", "true"),
        ("CONFIRM", "destructive"),
    ]
}

/// Serves the metadata document of the fixtures' metadata client.
async fn serve_metadata_document() {
    use axum::routing::get;
    let listener = tokio::net::TcpListener::bind(METADATA_ADDR)
        .await
        .unwrap_or_else(|e| panic!("{METADATA_ADDR} is taken ({e}): the fixtures need it"));
    let app = axum::Router::new().route(
        "/client.json",
        get(|| async {
            axum::Json(json!({
                "client_id": format!("http://{METADATA_ADDR}/client.json"),
                "client_name": "Fixture Metadata Client",
                "redirect_uris": [CLIENT_REDIRECT],
                "token_endpoint_auth_method": "none",
            }))
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
}

fn client_json(client: &TestClient) -> Value {
    json!({"client_id": client.client_id, "client_secret": client.client_secret,
           "redirect_uri": client.redirect_uri})
}

fn client_of(value: &Value) -> TestClient {
    TestClient {
        client_id: value["client_id"].as_str().unwrap().to_owned(),
        client_secret: value["client_secret"].as_str().map(str::to_owned),
        redirect_uri: value["redirect_uri"].as_str().unwrap().to_owned(),
    }
}

fn delete_branch(name: &str) -> Value {
    json!({"name": "gitea_repo_delete_branch",
           "arguments": {"owner": "alice", "repo": "r", "branch": name}})
}

/// Writes a fixture of this version's store into `AEGIS_STORE_FIXTURE_OUT`
/// (a new folder): SQLite, or PostgreSQL when `AEGIS_STORE_FIXTURE_POSTGRES`
/// is set (the support cluster; `pg_dump` on PATH).
#[test]
#[ignore = "a tool, not a test (CI skips it): writes a store fixture where AEGIS_STORE_FIXTURE_OUT says, tests/fixtures/stores/README.md"]
fn write_store_fixture() {
    let _held = ADDRESSES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    in_own_runtime(write_fixture());
}

async fn write_fixture() {
    let out =
        PathBuf::from(std::env::var("AEGIS_STORE_FIXTURE_OUT").expect("AEGIS_STORE_FIXTURE_OUT"));
    let postgres_url = match std::env::var("AEGIS_STORE_FIXTURE_POSTGRES") {
        Ok(_) => Some(postgres::fresh_database(&postgres::server_url()).await),
        Err(_) => None,
    };
    serve_metadata_document().await;
    let parts = GatewayParts {
        fake: FakeGitea::start().await,
        listener: tokio::net::TcpListener::bind(GATEWAY_ADDR).await.unwrap(),
        data_dir: tempfile::tempdir().unwrap(),
        clock: Arc::new(ManualClock::new()),
    };
    let gateway = OAuthGateway::start_from(parts, postgres_url.clone(), &settings()).await;

    let claude = gateway.public_client().await;
    let confidential = gateway
        .register("client_secret_basic", CLIENT_REDIRECT)
        .await;
    let metadata = TestClient {
        client_id: format!("http://{METADATA_ADDR}/client.json"),
        client_secret: None,
        redirect_uri: CLIENT_REDIRECT.into(),
    };
    let first = gateway.tokens(&claude, "alice").await;
    let second = gateway.tokens(&claude, "alice").await;
    let refreshed = crate::tokens_from(gateway.refresh(&claude, &first.refresh_token).await).await;
    let bob = gateway.tokens(&confidential, "bob").await;
    let by_document = gateway.tokens(&metadata, "alice").await;
    let reading = gateway.read_tokens_at(&claude, "alice", "/mcp").await;
    let mut connections = vec![
        json!({"name": "alice, refreshed once", "client": "claude", "login": "alice",
               "access_token": refreshed.access_token, "refresh_token": refreshed.refresh_token,
               "rotated_refresh_token": first.refresh_token}),
        json!({"name": "alice, second", "client": "claude", "login": "alice",
               "access_token": second.access_token, "refresh_token": second.refresh_token}),
        json!({"name": "bob, confidential", "client": "confidential", "login": "bob",
               "access_token": bob.access_token, "refresh_token": bob.refresh_token}),
        json!({"name": "alice, by document", "client": "metadata", "login": "alice",
               "access_token": by_document.access_token,
               "refresh_token": by_document.refresh_token}),
        json!({"name": "alice, reading", "client": "claude", "login": "alice",
               "access_token": reading.access_token, "refresh_token": reading.refresh_token}),
    ];
    for connection in &mut connections {
        let token = connection["access_token"].as_str().unwrap();
        let (status, _) = gateway.whoami_on(&gateway.url, token).await;
        assert_eq!(status, StatusCode::OK, "{connection}");
    }
    let (_, waiting) = gateway
        .call_tool(&second.access_token, DELETE, delete_branch("fixture/waits"))
        .await;
    assert_eq!(
        waiting["error"]["kind"], "confirmation_required",
        "{waiting}"
    );
    let confirm_url = waiting["error"]["confirm_url"].as_str().unwrap();
    let alice_pages = gateway.page_sign_in("alice", "account").await;
    let admin_pages = gateway.page_sign_in(ADMIN_LOGIN, "admin").await;
    // The activity recorder writes every two seconds.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;

    std::fs::create_dir_all(&out).unwrap();
    let data = out.join("data");
    std::fs::create_dir_all(&data).unwrap();
    for file in default_files(gateway.data_dir.path()) {
        if file.exists() {
            std::fs::copy(&file, data.join(file.file_name().unwrap())).unwrap();
        }
    }
    let entries = match verify_files(
        &default_files(&data),
        &ChainKey::new(Some(AUDIT_KEY.as_bytes())),
    ) {
        VerifyReport::Ok { entries, .. } => entries,
        bad => panic!("the fixture's audit log: {bad}"),
    };
    match &postgres_url {
        None => {
            let db = gateway.data_dir.path().join("aegis.db");
            let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display()))
                .await
                .unwrap();
            let target = data.join("aegis.db");
            sqlx::query("VACUUM INTO ?")
                .bind(target.display().to_string())
                .execute(&pool)
                .await
                .unwrap();
        }
        Some(url) => {
            let dump = std::process::Command::new("pg_dump")
                .args(["--no-owner", "--no-privileges", "--format=plain", url])
                .output()
                .expect("pg_dump");
            assert!(
                dump.status.success(),
                "{}",
                String::from_utf8_lossy(&dump.stderr)
            );
            std::fs::write(out.join("dump.sql"), dump.stdout).unwrap();
        }
    }
    let manifest = json!({
        "format": 1,
        "written_by": aegis_gitea_mcp::build_info::VERSION,
        "backend": if postgres_url.is_some() { "postgres" } else { "sqlite" },
        "now": gateway.clock.now(),
        "public_base_url": gateway.url,
        "encryption_key": ENCRYPTION_KEY,
        "audit_hmac_key": AUDIT_KEY,
        "audit_entries": entries,
        "gitea": gateway.fake.issued_sessions(),
        "clients": {"claude": client_json(&claude), "confidential": client_json(&confidential),
                    "metadata": client_json(&metadata)},
        "connections": connections,
        "confirmation": {"url": confirm_url, "connection": "alice, second",
                         "tool": DELETE, "arguments": delete_branch("fixture/waits")},
        "pages": {"alice": alice_pages.header(), "admin": admin_pages.header()},
    });
    std::fs::write(
        out.join("manifest.json"),
        serde_json::to_string_pretty(&manifest).unwrap() + "\n",
    )
    .unwrap();
}

/// A browser holding the cookies of a `Cookie` header.
fn browser_of(header: &str) -> Browser {
    let mut browser = Browser::default();
    for pair in header.split("; ") {
        if let Some((k, v)) = pair.split_once('=') {
            browser.cookies.insert(k.to_owned(), v.to_owned());
        }
    }
    browser
}

/// Opens the fixture in `folder` (a `sqlite` or `postgres` folder of one
/// level) with this binary, and checks everything in it still works.
async fn replay(folder: &Path) {
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("manifest.json")).unwrap())
            .unwrap();
    let what = format!("{} ({})", folder.display(), manifest["written_by"]);
    let data_dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(folder.join("data")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, data_dir.path().join(path.file_name().unwrap())).unwrap();
    }
    let database_url = match manifest["backend"].as_str() {
        Some("postgres") => {
            let url = postgres::fresh_database(&postgres::server_url()).await;
            let loaded = std::process::Command::new("psql")
                .args(["--quiet", "-v", "ON_ERROR_STOP=1", "--file"])
                .arg(folder.join("dump.sql"))
                .arg(&url)
                .output()
                .expect("psql");
            assert!(
                loaded.status.success(),
                "{what}: {}",
                String::from_utf8_lossy(&loaded.stderr)
            );
            Some(url)
        }
        _ => None,
    };
    serve_metadata_document().await;
    let fake = FakeGitea::start().await;
    fake.adopt_sessions(&manifest["gitea"]);
    let clock = Arc::new(ManualClock::starting_at(
        manifest["now"].as_i64().unwrap() + 60,
    ));
    let parts = GatewayParts {
        fake,
        listener: tokio::net::TcpListener::bind(GATEWAY_ADDR)
            .await
            .unwrap_or_else(|e| panic!("{GATEWAY_ADDR} is taken ({e}): the fixtures need it")),
        data_dir,
        clock,
    };
    let gateway = OAuthGateway::start_from(parts, database_url, &settings()).await;
    assert_eq!(gateway.url, manifest["public_base_url"], "{what}");

    let connections = manifest["connections"].as_array().unwrap();
    let named = |name: &str| {
        connections
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()
            .clone()
    };
    for connection in connections {
        let token = connection["access_token"].as_str().unwrap();
        let (status, me) = gateway.whoami_on(&gateway.url, token).await;
        assert_eq!(status, StatusCode::OK, "{what}: {connection}");
        assert_eq!(
            me["data"]["login"], connection["login"],
            "{what}: {connection} {me}"
        );
    }

    // The confirmation left waiting: approved on its page, then it runs.
    let confirmation = &manifest["confirmation"];
    let id = confirmation["url"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap();
    let alice = browser_of(manifest["pages"]["alice"].as_str().unwrap());
    let decided = crate::confirmation::decide(&gateway, &alice, id, "approve").await;
    assert!(
        decided.status().is_success() || decided.status().is_redirection(),
        "{what}: {}",
        decided.status()
    );
    let waiting = named(confirmation["connection"].as_str().unwrap());
    let (_, ran) = gateway
        .call_tool(
            waiting["access_token"].as_str().unwrap(),
            DELETE,
            confirmation["arguments"].clone(),
        )
        .await;
    // It reached Gitea (the fake answers 404 for a branch it lacks).
    let kind = ran["error"]["kind"].as_str().unwrap_or("");
    assert!(
        !kind.starts_with("confirmation"),
        "{what}: the approved call: {ran}"
    );
    assert_eq!(crate::confirmation::deletes_seen(&gateway), 1, "{what}");

    // The page sessions still sign their people in.
    let account = gateway.page(&alice, "/account").await;
    assert_eq!(account.status(), StatusCode::OK, "{what}");
    let admin = browser_of(manifest["pages"]["admin"].as_str().unwrap());
    let admin_page = gateway.page(&admin, "/admin").await;
    assert_eq!(admin_page.status(), StatusCode::OK, "{what}");
    assert!(admin_page.text().await.unwrap().contains("alice"), "{what}");

    // Each client signs in anew.
    let clients = &manifest["clients"];
    for (name, login) in [
        ("claude", "bob"),
        ("confidential", "alice"),
        ("metadata", "bob"),
    ] {
        let tokens = gateway.tokens(&client_of(&clients[name]), login).await;
        let (status, me) = gateway.whoami_on(&gateway.url, &tokens.access_token).await;
        assert_eq!(
            (status, me["data"]["login"].as_str()),
            (StatusCode::OK, Some(login)),
            "{what}: {name}"
        );
    }

    // The refreshed connection refreshes again; its rotated token is reuse.
    let refreshed = named("alice, refreshed once");
    let claude = client_of(&clients["claude"]);
    let next = gateway
        .refresh(&claude, refreshed["refresh_token"].as_str().unwrap())
        .await;
    assert_eq!(next.status(), StatusCode::OK, "{what}");
    let next = crate::tokens_from(next).await;
    assert_eq!(
        gateway.whoami_on(&gateway.url, &next.access_token).await.0,
        StatusCode::OK
    );
    let reused = gateway
        .refresh(
            &claude,
            refreshed["rotated_refresh_token"].as_str().unwrap(),
        )
        .await;
    assert_eq!(reused.status(), StatusCode::BAD_REQUEST, "{what}");
    assert_eq!(
        gateway.whoami_on(&gateway.url, &next.access_token).await.0,
        StatusCode::UNAUTHORIZED,
        "{what}: reuse ends the grant"
    );

    // An older SQLite store was backed up before it was migrated.
    let level: i64 = folder
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| {
            n.to_string_lossy()
                .strip_prefix("schema-")
                .map(str::to_owned)
        })
        .and_then(|n| n.parse().ok())
        .unwrap();
    let backups = before_migration_folders(gateway.data_dir.path());
    if manifest["backend"] == "sqlite" && level < binary_level().0 {
        assert_eq!(backups.len(), 1, "{what}: the backup before migrating");
        assert_eq!(backups[0].manifest.schema, level, "{what}");
    } else {
        assert!(backups.is_empty(), "{what}");
    }
    let health: Value = gateway
        .http
        .get(format!("{}/health", gateway.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        health["schema"]["store"],
        binary_level().0,
        "{what}: {health}"
    );

    // The audit log went on from the fixture's last entry.
    let key = ChainKey::new(Some(AUDIT_KEY.as_bytes()));
    match verify_files(&default_files(gateway.data_dir.path()), &key) {
        VerifyReport::Ok {
            entries,
            anchored_at,
            ..
        } => {
            assert!(anchored_at.is_none(), "{what}");
            assert!(
                entries > manifest["audit_entries"].as_u64().unwrap(),
                "{what}"
            );
        }
        bad => panic!("{what}: the audit log: {bad}"),
    }
}

/// Every fixture folder of one backend, oldest level first.
fn fixtures(backend: &str) -> Vec<PathBuf> {
    let mut levels: Vec<PathBuf> = std::fs::read_dir(fixtures_root())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("schema-")
        })
        .map(|p| p.join(backend))
        .filter(|p| p.join("manifest.json").exists())
        .collect();
    levels.sort();
    levels
}

#[test]
fn the_newest_migration_has_its_fixture_on_both_backends() {
    let level = aegis_gitea_mcp::store::schema::binary_level();
    let folder = fixtures_root().join(format!("schema-{level}"));
    for backend in ["sqlite", "postgres"] {
        assert!(
            folder.join(backend).join("manifest.json").exists(),
            "no store fixture at schema {level} for {backend}: adding a migration adds one \
             (tests/fixtures/stores/README.md)"
        );
    }
    assert!(
        fixtures("sqlite").len() >= 3,
        "the fixtures from schema 0008 on"
    );
}

/// Runs `work` in a runtime of its own: dropping it closes the listeners
/// on the fixed addresses before the next user binds them.
fn in_own_runtime(work: impl std::future::Future<Output = ()>) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(work);
}

fn replay_each(backend: &str) {
    for folder in fixtures(backend) {
        let _held = ADDRESSES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        in_own_runtime(replay(&folder));
    }
}

#[test]
fn every_earlier_sqlite_store_opens_and_everything_in_it_works() {
    replay_each("sqlite");
}

#[test]
#[ignore = "PostgreSQL: run with `cargo test -- --ignored` (a throwaway cluster of its own, or AEGIS_TEST_POSTGRES_URL)"]
fn every_earlier_postgres_store_opens_and_everything_in_it_works() {
    replay_each("postgres");
}
