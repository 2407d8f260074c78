//! The store's upkeep from the command line, with the real binary on
//! stores earlier versions wrote (tests/fixtures/stores): `store migrate
//! --check` and `store migrate`, `STORE_MIGRATE=never`, a store too new
//! for the binary (exit 3, naming the way back), `store backup` and
//! `store restore` with what they refuse.

use std::path::{Path, PathBuf};

use super::cli::gateway;

/// The key and audit key the fixtures were written with (their manifests).
const KEY: &str = "test-encryption-key-0123456789abcdef-xyz";
const AUDIT_KEY: &str = "store-fixture-audit-hmac-key-0123456789abcdef";
const BIN: &str = env!("CARGO_BIN_EXE_aegis-gitea-mcp");

/// A data directory holding a copy of the SQLite fixture at `level`.
fn fixture_copy(level: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let from = PathBuf::from(format!("tests/fixtures/stores/schema-{level}/sqlite/data"));
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
    }
    dir
}

fn env_for(data_dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("GITEA_URL", "http://127.0.0.1:9".into()),
        ("DATA_DIR", data_dir.display().to_string()),
        ("TOKEN_ENCRYPTION_KEY", KEY.into()),
        ("AUDIT_HMAC_KEY", AUDIT_KEY.into()),
    ]
}

fn run(args: &[&str], env: &[(&'static str, String)]) -> (Option<i32>, String) {
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = gateway(args, &pairs);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[test]
fn migrate_check_names_what_is_pending_and_migrate_applies_it_after_a_backup() {
    let data = fixture_copy("0008");
    let env = env_for(data.path());
    let (code, text) = run(&["store", "migrate", "--check"], &env);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("store at schema 0008"), "{text}");
    assert!(
        text.contains("pending: 0009 grant redirect uri (expanding"),
        "{text}"
    );
    assert!(text.contains("a rolling upgrade is possible"), "{text}");
    assert!(
        !data.path().join("backups").exists(),
        "--check changed nothing"
    );

    let (code, text) = run(&["store", "migrate"], &env);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("backed up before migrating"), "{text}");
    assert!(
        text.contains("applied 0010 confirmation summary sealed"),
        "{text}"
    );
    let (code, text) = run(&["store", "migrate", "--check"], &env);
    assert_eq!(
        (code, text.contains("nothing pending")),
        (Some(0), true),
        "{text}"
    );
}

#[test]
fn a_replica_told_never_to_migrate_refuses_a_store_behind_with_exit_3() {
    let data = fixture_copy("0008");
    let mut env = env_for(data.path());
    env.push(("STORE_MIGRATE", "never".into()));
    env.extend(oauth_serve_env());
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = super::cli::gateway_within(std::time::Duration::from_secs(20), &["serve"], &pairs);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("STORE_MIGRATE=never"), "{stderr}");
    assert!(stderr.contains("store migrate"), "{stderr}");
}

/// What `serve` needs to open the store: OAuth configured, a free port.
fn oauth_serve_env() -> Vec<(&'static str, String)> {
    vec![
        ("MCP_PORT", "0".into()),
        ("GITEA_OAUTH_CLIENT_ID", "fixture-app".into()),
        ("GITEA_OAUTH_CLIENT_SECRET", "fixture-app-secret".into()),
    ]
}

/// Makes the store in `data` look as a newer binary left it, with a
/// contracting migration this binary does not know.
fn pretend_newer_contracting_store(data: &Path) {
    let next = aegis_gitea_mcp::store::schema::binary_level().0 + 1;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let url = format!("sqlite://{}", data.join("aegis.db").display());
        let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
        for sql in [
            format!(
                "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
                 VALUES ({next}, 'future', TRUE, X'00', 0)"
            ),
            format!(
                "INSERT INTO aegis_schema_history (version, description, oldest_reader, applied_by, backup, recorded_at) \
                 VALUES ({next}, 'drops what older binaries read', {next}, '9.9.9 (future)', '/data/backups/before-schema-x', 0)"
            ),
        ] {
            sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&pool).await.unwrap();
        }
        pool.close().await;
    });
}

#[test]
fn a_store_too_new_for_this_binary_exits_3_naming_both_levels_and_the_way_back() {
    let data = fixture_copy("0010");
    let env = env_for(data.path());
    assert_eq!(run(&["store", "migrate"], &env).0, Some(0));
    pretend_newer_contracting_store(data.path());
    let mut serve_env = env.clone();
    serve_env.extend(oauth_serve_env());
    let pairs: Vec<(&str, &str)> = serve_env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = super::cli::gateway_within(std::time::Duration::from_secs(20), &["serve"], &pairs);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    for part in [
        "the store's schema is at 0011",
        "9.9.9 (future)",
        "knows schema 0010 at most",
        "store restore /data/backups/before-schema-x",
    ] {
        assert!(stderr.contains(part), "{part:?} in {stderr}");
    }
    let (code, text) = run(&["store", "migrate", "--check"], &env);
    assert_eq!(code, Some(3), "{text}");
}

#[test]
fn a_backup_restores_into_a_new_data_dir_and_opens() {
    let data = fixture_copy("0010");
    let backup = tempfile::tempdir().unwrap();
    let folder = backup.path().join("b1");
    let (code, text) = run(
        &["store", "backup", folder.to_str().unwrap()],
        &env_for(data.path()),
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("audit log copied: ok"), "{text}");
    for file in ["aegis.db", "audit.log", "manifest.json"] {
        assert!(folder.join(file).exists(), "{file}");
    }
    let fresh = tempfile::tempdir().unwrap();
    let target = fresh.path().join("data");
    let (code, text) = run(
        &["store", "restore", folder.to_str().unwrap()],
        &env_for(&target),
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("the audit log was restored"), "{text}");
    let (code, text) = run(&["audit", "verify"], &env_for(&target));
    assert_eq!(code, Some(0), "{text}");
    let (code, text) = run(&["store", "migrate", "--check"], &env_for(&target));
    assert_eq!(
        (code, text.contains("nothing pending")),
        (Some(0), true),
        "{text}"
    );
}

#[test]
fn a_restore_over_a_store_needs_force_and_keeps_what_it_replaces_and_the_log() {
    let data = fixture_copy("0010");
    let backup = tempfile::tempdir().unwrap();
    let folder = backup.path().join("b");
    assert_eq!(
        run(
            &["store", "backup", folder.to_str().unwrap()],
            &env_for(data.path())
        )
        .0,
        Some(0)
    );
    let log_before = std::fs::read(data.path().join("audit.log")).unwrap();
    let (code, text) = run(
        &["store", "restore", folder.to_str().unwrap()],
        &env_for(data.path()),
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("--force"), "{text}");
    let (code, text) = run(
        &["store", "restore", "--force", folder.to_str().unwrap()],
        &env_for(data.path()),
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("the audit log in DATA_DIR was kept"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(data.path().join("audit.log")).unwrap(),
        log_before
    );
    let aside: Vec<_> = std::fs::read_dir(data.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("replaced-"))
        .collect();
    assert_eq!(aside.len(), 1, "the replaced store is kept");
}

#[test]
fn a_damaged_backup_or_one_the_keys_do_not_open_is_refused_before_anything_changes() {
    let data = fixture_copy("0010");
    let backup = tempfile::tempdir().unwrap();
    let folder = backup.path().join("b");
    assert_eq!(
        run(
            &["store", "backup", folder.to_str().unwrap()],
            &env_for(data.path())
        )
        .0,
        Some(0)
    );
    let target = tempfile::tempdir().unwrap();
    let mut wrong_key = env_for(target.path());
    wrong_key.retain(|(k, _)| *k != "TOKEN_ENCRYPTION_KEY");
    wrong_key.push((
        "TOKEN_ENCRYPTION_KEY",
        "another-key-0123456789abcdef-0123456789".into(),
    ));
    let (code, text) = run(&["store", "restore", folder.to_str().unwrap()], &wrong_key);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("could not be decrypted"), "{text}");
    assert!(!target.path().join("aegis.db").exists());

    let mut bytes = std::fs::read(folder.join("aegis.db")).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(folder.join("aegis.db"), bytes).unwrap();
    let (code, text) = run(
        &["store", "restore", folder.to_str().unwrap()],
        &env_for(target.path()),
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("the backup is damaged"), "{text}");
    assert!(!target.path().join("aegis.db").exists());
}

#[test]
fn a_restore_while_a_gateway_runs_on_the_data_dir_is_refused() {
    let data = fixture_copy("0010");
    let backup = tempfile::tempdir().unwrap();
    let folder = backup.path().join("b");
    assert_eq!(
        run(
            &["store", "backup", folder.to_str().unwrap()],
            &env_for(data.path())
        )
        .0,
        Some(0)
    );
    let mut env = env_for(data.path());
    env.extend(oauth_serve_env());
    let mut serving = std::process::Command::new(BIN)
        .arg("serve")
        .env_clear()
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lock = data.path().join("audit.lock");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !lock.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The lock file exists once the log is open; give the store a moment.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let (code, text) = run(
        &["store", "restore", "--force", folder.to_str().unwrap()],
        &env_for(data.path()),
    );
    serving.kill().unwrap();
    let _ = serving.wait();
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("a gateway is running on this DATA_DIR"),
        "{text}"
    );
}

#[test]
fn a_backup_refuses_a_folder_that_is_not_empty() {
    let data = fixture_copy("0010");
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("something"), b"x").unwrap();
    let (code, text) = run(
        &["store", "backup", folder.path().to_str().unwrap()],
        &env_for(data.path()),
    );
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("is not empty"), "{text}");
}
