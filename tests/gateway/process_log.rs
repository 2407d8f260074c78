//! The process log keeps every line (issue 43): a log an operator debugs an
//! outage with must not lose lines because the store ran a query. sqlx asks
//! whether its query log is enabled after every statement; that question,
//! asked of a per-layer filter whose callsites the registry had cached as
//! always enabled, left stale state behind and the next access-log line was
//! silently filtered out (tokio-rs/tracing#2519): 17 lines for 200
//! requests.

use std::process::Child;

use crate::support::fake_gitea::{
    OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET, OAUTH_READ_CLIENT_ID, OAUTH_READ_CLIENT_SECRET,
};
use crate::support::gateway_process::{ServeProcess, free_port};
use crate::support::{FakeGitea, postgres};

/// Requests per `RUST_LOG` setting.
const REQUESTS: usize = 200;

/// Kills the child when the test ends, passed or not.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The access-log lines (`finished processing request`) for `REQUESTS`
/// `/health` requests, each of which pings the store, with `filter`
/// as `RUST_LOG`.
async fn access_lines(filter: &str, database_url: Option<&str>) -> usize {
    let fake = FakeGitea::start().await;
    let data = tempfile::tempdir().unwrap();
    let log = data.path().join("stderr.log");
    let port = free_port();
    let public_url = format!("http://127.0.0.1:{port}");
    let extra = [
        ("RUST_LOG", filter),
        ("RATE_LIMIT_SIGN_INS_PER_IP", "0"),
        ("PUBLIC_BASE_URL", public_url.as_str()),
        ("GITEA_OAUTH_CLIENT_ID", OAUTH_CLIENT_ID),
        ("GITEA_OAUTH_CLIENT_SECRET", OAUTH_CLIENT_SECRET),
        ("GITEA_OAUTH_READ_CLIENT_ID", OAUTH_READ_CLIENT_ID),
        ("GITEA_OAUTH_READ_CLIENT_SECRET", OAUTH_READ_CLIENT_SECRET),
        (
            "TOKEN_ENCRYPTION_KEY",
            "process-log-test-key-0123456789abcdef",
        ),
    ];
    let mut extra = extra.to_vec();
    if let Some(url) = database_url {
        extra.push(("DATABASE_URL", url));
    }
    let mut serve = ServeProcess::new(
        &fake,
        data.path(),
        port,
        "process-log-audit-key-0123456789abcdef",
    );
    serve.stderr_file = Some(&log);
    serve.extra = &extra;
    let mut child = Running(serve.spawn());
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        if let Ok(Some(status)) = child.0.try_wait() {
            panic!("{status}: {}", std::fs::read_to_string(&log).unwrap());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    aegis_gitea_mcp::tls::install_crypto_provider();
    let http = reqwest::Client::new();
    for i in 0..REQUESTS {
        // Alternately a health check (a store ping) and a sign-in for an
        // unknown client (a store lookup, then an error page).
        let path = match i % 2 {
            0 => "/health".to_owned(),
            _ => format!("/authorize?response_type=code&client_id=unknown-{i}"),
        };
        let status = http
            .get(format!("{public_url}{path}"))
            .send()
            .await
            .unwrap()
            .status();
        assert!(status == 200 || status == 400, "{path}: {status}");
    }
    // The last line is written after the answer is sent: give it a moment.
    let mut lines = 0;
    for _ in 0..50 {
        lines = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter(|line| line.contains("finished processing request"))
            .count();
        if lines >= REQUESTS {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    drop(child);
    lines
}

const FILTERS: [&str; 3] = ["info", "info,sqlx::query=debug", "warn,tower_http=info"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_logs_its_line_while_the_store_runs_queries() {
    for filter in FILTERS {
        assert_eq!(
            access_lines(filter, None).await,
            REQUESTS,
            "RUST_LOG={filter}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "PostgreSQL: run with `cargo test -- --ignored` (a throwaway cluster of its own, or AEGIS_TEST_POSTGRES_URL)"]
async fn every_request_logs_its_line_while_postgresql_runs_queries() {
    for filter in FILTERS {
        let database = postgres::fresh_database(&postgres::server_url()).await;
        assert_eq!(
            access_lines(filter, Some(&database)).await,
            REQUESTS,
            "RUST_LOG={filter}"
        );
    }
}
