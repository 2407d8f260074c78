//! A fresh PostgreSQL database per test. The PostgreSQL variants of the
//! suites are `#[ignore]`d (the reason names `cargo test -- --ignored`), so a plain
//! `cargo test` reports them as ignored, never as passed without running;
//! `cargo test -- --ignored` runs them. They use the cluster named by
//! `AEGIS_TEST_POSTGRES_URL` (`.ci/run` starts one with `tests/postgres.sh`),
//! or else start a throwaway cluster of their own, once per test process,
//! with the same script, and a watchdog stops it when the process ends.

use std::sync::OnceLock;

use sqlx::Connection;

/// The server URL: `AEGIS_TEST_POSTGRES_URL`, else a cluster this process
/// starts. Panics, saying what to install, when neither is possible: a
/// PostgreSQL variant that was asked to run never passes without running.
pub fn server_url() -> String {
    if let Some(url) = std::env::var("AEGIS_TEST_POSTGRES_URL")
        .ok()
        .filter(|v| !v.is_empty())
    {
        return url;
    }
    static OWN_CLUSTER: OnceLock<String> = OnceLock::new();
    OWN_CLUSTER.get_or_init(start_own_cluster).clone()
}

/// Starts a throwaway cluster in a directory of this process with
/// `tests/postgres.sh`, and a watchdog that stops it (and deletes the
/// directory) once this process has ended, however it ends.
#[expect(
    clippy::zombie_processes,
    reason = "the watchdog outlives this process by design: it stops the cluster after this process exits"
)]
fn start_own_cluster() -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/postgres.sh");
    let dir = std::env::temp_dir().join(format!("aegis-pg-test-{}", std::process::id()));
    let started = std::process::Command::new("bash")
        .arg(script)
        .arg("start")
        .env("AEGIS_PG_DIR", &dir)
        .env_remove("AEGIS_PG_PORT")
        .output()
        .expect("bash runs tests/postgres.sh");
    assert!(
        started.status.success(),
        "the PostgreSQL variants need a server: install PostgreSQL (Debian: apt-get install postgresql) \
         or set AEGIS_TEST_POSTGRES_URL. tests/postgres.sh said: {}",
        String::from_utf8_lossy(&started.stderr)
    );
    let watchdog = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; AEGIS_PG_DIR='{dir}' bash '{script}' stop",
        pid = std::process::id(),
        dir = dir.display(),
    );
    std::process::Command::new("bash")
        .arg("-c")
        .arg(watchdog)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the cluster's watchdog starts");
    String::from_utf8_lossy(&started.stdout).trim().to_owned()
}

/// A cluster of one test's own, for what would disturb the others on the
/// shared one (a restart). Stopped and deleted when dropped.
#[allow(
    dead_code,
    reason = "tests/store.rs includes this file and restarts no cluster"
)]
pub struct PrivateCluster {
    dir: std::path::PathBuf,
    pub url: String,
}

#[allow(
    dead_code,
    reason = "tests/store.rs includes this file and restarts no cluster"
)]
impl PrivateCluster {
    pub fn start() -> Self {
        let dir = std::env::temp_dir().join(format!("aegis-pg-private-{}", random_suffix()));
        let started = cluster_script("start", &dir);
        Self {
            url: String::from_utf8_lossy(&started.stdout).trim().to_owned(),
            dir,
        }
    }

    /// `pg_ctl restart -m fast`: every session is ended, the server is
    /// down for a moment, then accepts connections again.
    pub fn restart(&self) {
        cluster_script("restart", &self.dir);
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/postgres.sh"))
            .arg("stop")
            .env("AEGIS_PG_DIR", &self.dir)
            .output();
    }
}

#[allow(
    dead_code,
    reason = "tests/store.rs includes this file and restarts no cluster"
)]
fn cluster_script(command: &str, dir: &std::path::Path) -> std::process::Output {
    let out = std::process::Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/postgres.sh"))
        .arg(command)
        .env("AEGIS_PG_DIR", dir)
        .env_remove("AEGIS_PG_PORT")
        .output()
        .expect("bash runs tests/postgres.sh");
    assert!(
        out.status.success(),
        "tests/postgres.sh {command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Creates an empty database with a random name and returns its URL.
/// (The cluster is throwaway; [`drop_database`] only keeps it small.)
pub async fn fresh_database(server_url: &str) -> String {
    let name = format!("aegis_test_{}", random_suffix());
    let mut conn = sqlx::PgConnection::connect(server_url)
        .await
        .expect("the PostgreSQL test cluster accepts connections");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .expect("CREATE DATABASE");
    let _ = conn.close().await;
    let mut url = url::Url::parse(server_url).expect("AEGIS_TEST_POSTGRES_URL is a URL");
    url.set_path(&format!("/{name}"));
    url.to_string()
}

/// Drops the database `database_url` names (made by [`fresh_database`]).
pub async fn drop_database(server_url: &str, database_url: &str) {
    let Some(name) = url::Url::parse(database_url)
        .ok()
        .map(|u| u.path().trim_start_matches('/').to_owned())
        .filter(|n| n.starts_with("aegis_test_"))
    else {
        return;
    };
    if let Ok(mut admin) = sqlx::PgConnection::connect(server_url).await {
        let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
        let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&mut admin)
            .await;
        let _ = admin.close().await;
    }
}

fn random_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}
