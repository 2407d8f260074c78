//! The binary's command line: exit codes and messages of bad settings, the
//! catalog listing.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_aegis-gitea-mcp");

pub(crate) fn gateway(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(args).env_clear().current_dir(dir.path());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// Like [`gateway`], for a command that should exit by itself: killed and
/// reported as a failure if it still runs after `limit` (a `serve` that
/// started instead of refusing).
pub(crate) fn gateway_within(
    limit: std::time::Duration,
    args: &[&str],
    env: &[(&str, &str)],
) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn missing_gitea_url_exits_2_naming_the_setting() {
    let out = gateway(&["serve"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("GITEA_URL"));
}

#[test]
fn short_bearer_exits_2_without_printing_it() {
    let out = gateway(
        &["serve"],
        &[
            ("GITEA_URL", "http://127.0.0.1:3000"),
            ("MCP_BEARER_TOKEN", "too-short-secret"),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("MCP_BEARER_TOKEN"));
    assert!(!stderr.contains("too-short-secret"));
}

#[test]
fn public_bind_without_authentication_exits_2() {
    let out = gateway(
        &["serve"],
        &[
            ("GITEA_URL", "http://127.0.0.1:3000"),
            ("GITEA_TOKEN", "t"),
            ("MCP_HOST", "0.0.0.0"),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("MCP_HOST"));
}

#[test]
fn stdio_without_an_admin_token_exits_2() {
    let out = gateway(&["stdio"], &[("GITEA_URL", "http://127.0.0.1:3000")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("GITEA_TOKEN"));
}

#[test]
fn catalog_lists_every_operation() {
    let out = gateway(&["catalog", "--json"], &[]);
    assert!(out.status.success());
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 485);
    let create_token = rows
        .iter()
        .find(|r| r["operation_id"] == "userCreateToken")
        .unwrap();
    assert_eq!(create_token["name"], "gitea_user_create_token");
    assert_eq!(create_token["method"], "POST");
}

#[test]
fn catalog_toolsets_prints_each_toolset_with_its_tool_count() {
    let out = gateway(&["catalog", "--toolsets"], &[]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let counts: Vec<(&str, usize)> = stdout
        .lines()
        .map(|line| {
            let (name, count) = line.split_once('\t').expect("name<TAB>count");
            (name, count.parse().unwrap())
        })
        .collect();
    assert!(counts.contains(&("issue", 72)), "{stdout}");
    assert!(counts.contains(&("repository.code", 43)), "{stdout}");
    assert!(!counts.iter().any(|(name, _)| *name == "repository"));
    assert!(counts.iter().all(|(_, n)| *n <= 124), "every toolset fits");
    let out = gateway(&["catalog", "--toolsets", "--json"], &[]);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), counts.len());
    assert!(rows[0]["name"].is_string() && rows[0]["tools"].is_u64());
}

#[test]
fn catalog_table_ends_with_the_count() {
    let out = gateway(&["catalog"], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.trim_end().ends_with("485 tools (Gitea API 1.27.1)"),
        "{stdout}"
    );
}

#[test]
fn catalog_applies_the_configured_exposure() {
    let out = gateway(
        &["catalog", "--json"],
        &[
            ("GITEA_URL", "http://127.0.0.1:9"),
            ("READ_ONLY", "true"),
            ("TOOLSETS", "issue"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert!(!rows.is_empty() && rows.len() < 72);
    assert!(rows.iter().all(
        |r| r["method"] == "GET" && r["toolsets"].as_array().unwrap().contains(&"issue".into())
    ));
}

#[test]
fn catalog_opens_no_audit_log_or_store() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = Command::new(BIN)
        .args(["catalog", "--json"])
        .env_clear()
        .current_dir(dir.path())
        .env("GITEA_URL", "http://127.0.0.1:9")
        .env("DATA_DIR", &data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !data.exists(),
        "listing the catalog created {}",
        data.display()
    );
}

/// Issue 16: `live` falls back to the bundled catalog when the instance's
/// document cannot be fetched; `live-strict` stops instead (exit 2, naming
/// the setting), so replicas behind one URL never list different tools.
#[test]
fn live_strict_refuses_a_catalog_it_could_not_fetch() {
    let catalog_with = |source: &str| {
        gateway(
            &["catalog", "--json"],
            &[
                ("GITEA_URL", "http://127.0.0.1:9"),
                ("GITEA_OPENAPI", source),
            ],
        )
    };
    let live = catalog_with("live");
    assert!(
        live.status.success(),
        "{}",
        String::from_utf8_lossy(&live.stderr)
    );
    let strict = catalog_with("live-strict");
    let stderr = String::from_utf8_lossy(&strict.stderr);
    assert_eq!(strict.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("GITEA_OPENAPI"), "{stderr}");
    assert!(stderr.contains("live-strict"), "{stderr}");
}

#[test]
fn logs_are_json_lines_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    let env = [
        ("GITEA_URL", "http://127.0.0.1:9"),
        ("GITEA_TOKEN", "admin-token-never-logged"),
        ("DATA_DIR", data.as_str()),
    ];
    // stdio with stdin closed: starts, logs, and ends at once.
    let out = gateway(&["stdio"], &env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let events: Vec<serde_json::Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let opened = events
        .iter()
        .find(|e| e["message"] == "audit log opened")
        .unwrap_or_else(|| panic!("no JSON event in {stderr}"));
    assert_eq!(opened["level"], "INFO");
    assert!(opened["timestamp"].is_string());
    assert!(!stderr.contains("admin-token-never-logged"));

    let text = gateway(
        &["stdio"],
        &[env.as_slice(), &[("LOG_FORMAT", "text")]].concat(),
    );
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert!(
        stderr.contains(" INFO ") && stderr.contains("audit log opened"),
        "{stderr}"
    );
}

const OAUTH_KEY: &str = "cli-test-encryption-key-0123456789abcdef";

/// Issue 16: a SQLite store behind a public URL (where replicas may be)
/// is warned about at startup; on a loopback URL it is not.
#[test]
fn a_sqlite_store_behind_a_public_url_is_warned_about() {
    let started_with = |public_url: &str| {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data").display().to_string();
        let out = gateway(
            &["stdio"],
            &[
                ("GITEA_URL", "http://127.0.0.1:9"),
                ("GITEA_TOKEN", "admin-token"),
                ("GITEA_OAUTH_CLIENT_ID", "id"),
                ("GITEA_OAUTH_CLIENT_SECRET", "secret"),
                ("TOKEN_ENCRYPTION_KEY", OAUTH_KEY),
                ("PUBLIC_BASE_URL", public_url),
                ("DATA_DIR", data.as_str()),
            ],
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let public = started_with("https://mcp.example.com");
    assert!(
        public.contains("several replicas behind one URL need DATABASE_URL"),
        "{public}"
    );
    let loopback = started_with("http://127.0.0.1:8080");
    assert!(loopback.contains("store opened"), "{loopback}");
    assert!(!loopback.contains("several replicas"), "{loopback}");
}

#[test]
fn half_configured_oauth_exits_2() {
    let base = [("GITEA_URL", "http://127.0.0.1:3000")];
    let cases: [&[(&str, &str)]; 3] = [
        // A client id without its secret.
        &[("GITEA_OAUTH_CLIENT_ID", "id")],
        // A client without an encryption key.
        &[
            ("GITEA_OAUTH_CLIENT_ID", "id"),
            ("GITEA_OAUTH_CLIENT_SECRET", "secret"),
        ],
        // A non-https public URL off loopback.
        &[
            ("GITEA_OAUTH_CLIENT_ID", "id"),
            ("GITEA_OAUTH_CLIENT_SECRET", "secret"),
            ("TOKEN_ENCRYPTION_KEY", OAUTH_KEY),
            ("PUBLIC_BASE_URL", "http://mcp.example.com"),
        ],
    ];
    for extra in cases {
        let env: Vec<(&str, &str)> = base.iter().chain(extra.iter()).copied().collect();
        let out = gateway(&["serve"], &env);
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("configuration error"), "{stderr}");
        assert!(!stderr.contains("secret\n") && !stderr.contains(OAUTH_KEY));
    }
}

#[test]
fn store_rekey_needs_an_encryption_key() {
    let out = gateway(
        &["store", "rekey"],
        &[("GITEA_URL", "http://127.0.0.1:3000")],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("TOKEN_ENCRYPTION_KEY"));
}

/// F10: an existing store file that is empty or not SQLite stops startup;
/// only a missing file means a new store.
#[test]
fn an_empty_or_foreign_store_file_stops_startup() {
    for contents in [&b""[..], b"not a database, just text\n"] {
        let data = tempfile::tempdir().unwrap();
        std::fs::write(data.path().join("aegis.db"), contents).unwrap();
        let out = gateway_within(
            std::time::Duration::from_secs(15),
            &["serve"],
            &[
                ("GITEA_URL", "http://127.0.0.1:9"),
                ("GITEA_OAUTH_CLIENT_ID", "id"),
                ("GITEA_OAUTH_CLIENT_SECRET", "secret"),
                ("TOKEN_ENCRYPTION_KEY", OAUTH_KEY),
                ("DATA_DIR", data.path().to_str().unwrap()),
                ("MCP_PORT", "0"),
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("aegis.db"), "{stderr}");
        assert!(stderr.contains("not a SQLite database"), "{stderr}");
        // Nothing was written over it.
        assert_eq!(
            std::fs::read(data.path().join("aegis.db")).unwrap(),
            contents
        );
    }
}

/// `serve` until a line containing `wanted` appears on stderr (or `limit`
/// passes), then stopped: its stderr so far.
fn serve_until(env: &[(&str, &str)], wanted: &str, limit: std::time::Duration) -> String {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .arg("serve")
        .env_clear()
        .envs(env.iter().copied())
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let deadline = std::time::Instant::now() + limit;
    let mut seen = String::new();
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match received.recv_timeout(left) {
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
                if line.contains(wanted) {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    seen
}

/// A first run on a port that is taken: the error names the address and
/// the setting, and nothing was written before the bind.
#[test]
fn a_port_in_use_is_named_and_nothing_is_written() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = gateway_within(
        std::time::Duration::from_secs(20),
        &["serve"],
        &[
            ("GITEA_URL", "http://127.0.0.1:9"),
            ("GITEA_TOKEN", "admin-token"),
            ("MCP_PORT", port.as_str()),
            ("DATA_DIR", data.to_str().unwrap()),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
    assert!(stderr.contains("MCP_PORT"), "{stderr}");
    assert!(!data.exists(), "DATA_DIR was created before the bind");
}

/// A wrong `GITEA_URL` is said at startup, with the URL.
#[test]
fn an_unreachable_gitea_is_named_at_startup() {
    let out = gateway(
        &["stdio"],
        &[
            ("GITEA_URL", "http://127.0.0.1:9"),
            ("GITEA_TOKEN", "admin-token"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Gitea does not answer"), "{stderr}");
    assert!(stderr.contains("http://127.0.0.1:9"), "{stderr}");
}

/// A token Gitea refuses is said at startup, with the URL; a good one
/// names its login.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_admin_token_is_named_at_startup() {
    let fake = crate::support::FakeGitea::start().await;
    let stderr_with = |token: &'static str| {
        let url = fake.url.clone();
        tokio::task::spawn_blocking(move || {
            let out = gateway(
                &["stdio"],
                &[("GITEA_URL", url.as_str()), ("GITEA_TOKEN", token)],
            );
            String::from_utf8_lossy(&out.stderr).into_owned()
        })
    };
    let wrong = stderr_with("not-a-token-gitea-knows").await.unwrap();
    assert!(wrong.contains("GITEA_TOKEN is not accepted"), "{wrong}");
    assert!(wrong.contains(&fake.url), "{wrong}");
    let good = stderr_with(crate::support::ADMIN_TOKEN).await.unwrap();
    assert!(good.contains("GITEA_TOKEN is accepted"), "{good}");
}

/// Unauthenticated loopback mode says at startup that any local process
/// acts with the admin token.
#[test]
fn unauthenticated_loopback_mode_is_warned_about() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let seen = serve_until(
        &[
            ("GITEA_URL", "http://127.0.0.1:9"),
            ("GITEA_TOKEN", "admin-token"),
            ("MCP_PORT", port.as_str()),
        ],
        "no authentication",
        std::time::Duration::from_secs(20),
    );
    assert!(seen.contains("any process on this machine"), "{seen}");
}
