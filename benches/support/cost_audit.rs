//! The audit log at size (issue 55's cost curve): a chain of N entries
//! written through the log's own writer, `audit verify`'s speed over it
//! beside `sha256sum` and `openssl`'s HMAC over the same files (the
//! physical limit: hashing the bytes), and how fast the forwarder catches
//! up a backlog into a JSON-lines sink.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aegis_gitea_mcp::audit::verify::{VerifyReport, default_files, verify_files};
use aegis_gitea_mcp::audit::{AuditLog, AuditOptions, ChainKey, Event, EventKind};
use anyhow::{Context, anyhow, ensure};
use secrecy::SecretString;

/// A tool call's two entries, as a call writes them.
fn call_entries(i: u64) -> [Event; 2] {
    let tool = [
        "gitea_issue_list_issues",
        "gitea_repo_get",
        "gitea_user_get_current",
    ][(i % 3) as usize];
    [
        Event::new(EventKind::ToolCallStarted).tool(tool),
        Event::new(EventKind::ToolCallFinished).tool(tool),
    ]
}

/// Records `entries` entries (calls' pairs), calling `after_pair` with
/// each pair's number once it is written.
async fn record_calls(
    audit: &AuditLog,
    entries: u64,
    mut after_pair: impl FnMut(u64),
) -> anyhow::Result<()> {
    for i in 0..entries / 2 {
        for event in call_entries(i) {
            audit
                .record(event)
                .await
                .map_err(|e| anyhow!("record: {e}"))?;
        }
        after_pair(i);
    }
    audit.flush().await;
    Ok(())
}

/// Writes `entries` entries (calls' pairs) into `dir`'s log, rotated at
/// the default size; how long it took.
pub async fn write_log(dir: &Path, entries: u64, key: &str) -> anyhow::Result<Duration> {
    let key = SecretString::from(key.to_owned());
    let audit = AuditLog::open_with(AuditOptions::new(dir, Some(&key)))
        .await
        .map_err(|e| anyhow!("audit: {e}"))?;
    let started = Instant::now();
    record_calls(&audit, entries, |_| {}).await?;
    Ok(started.elapsed())
}

/// The bytes of `dir`'s log files.
pub fn log_bytes(dir: &Path) -> u64 {
    default_files(dir)
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum()
}

/// How long a command takes over the log's files (its output unread).
fn timed(program: &str, args: &[&str], dir: &Path) -> anyhow::Result<Duration> {
    let files: Vec<String> = default_files(dir)
        .iter()
        .filter(|f| f.exists())
        .map(|f| f.display().to_string())
        .collect();
    let started = Instant::now();
    let status = std::process::Command::new(program)
        .args(args)
        .args(&files)
        .stdout(std::process::Stdio::null())
        .status()
        .with_context(|| program.to_owned())?;
    ensure!(status.success(), "{program} failed");
    Ok(started.elapsed())
}

/// `audit verify`, `sha256sum` and `openssl dgst -hmac` over the log.
pub struct VerifySpeeds {
    pub entries: u64,
    pub bytes: u64,
    pub verify: Duration,
    pub sha256sum: Duration,
    pub openssl_hmac: Option<Duration>,
}

pub fn verify_speeds(dir: &Path, key: &str) -> anyhow::Result<VerifySpeeds> {
    // Warm the page cache once, so each reads from memory.
    timed("cat", &[], dir).ok();
    let started = Instant::now();
    let report = verify_files(&default_files(dir), &ChainKey::new(Some(key.as_bytes())));
    let verify = started.elapsed();
    let VerifyReport::Ok { entries, .. } = report else {
        return Err(anyhow!("the chain does not verify: {report}"));
    };
    let sha256sum = timed("sha256sum", &[], dir)?;
    let hmac_key = format!("-hmac={key}");
    let openssl_hmac = timed("openssl", &["dgst", "-sha256", "-hmac", key], dir)
        .or_else(|_| timed("openssl", &["dgst", "-sha256", &hmac_key], dir))
        .ok();
    Ok(VerifySpeeds {
        entries,
        bytes: log_bytes(dir),
        verify,
        sha256sum,
        openssl_hmac,
    })
}

/// How fast the forwarder takes a backlog of `entries` entries (already
/// in `dir`'s log) into a JSON-lines sink on loopback: entries a second.
pub async fn catch_up(dir: &Path, key: &str, entries: u64) -> anyhow::Result<f64> {
    let taken = Arc::new(AtomicU64::new(0));
    let sink = {
        let taken = taken.clone();
        axum::Router::new().route(
            "/",
            axum::routing::post(move |body: axum::body::Bytes| {
                let taken = taken.clone();
                async move {
                    let lines = body.iter().filter(|b| **b == b'\n').count() as u64;
                    taken.fetch_add(lines, Ordering::Relaxed);
                    axum::http::StatusCode::OK
                }
            }),
        )
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, sink).await });
    let key = SecretString::from(key.to_owned());
    let audit = AuditLog::open_with(AuditOptions::new(dir, Some(&key)))
        .await
        .map_err(|e| anyhow!("audit: {e}"))?;
    let settings = aegis_gitea_mcp::config::AuditForwardSettings {
        url: url.parse()?,
        protocol: aegis_gitea_mcp::config::ForwardProtocol::Http,
        ca_file: None,
        authorization: None,
        max_lag: None,
    };
    let started = Instant::now();
    audit
        .forward_to(&settings, dir, "cost-bench")
        .map_err(|e| anyhow!("forward: {e}"))?;
    // Every entry written, and the log_opened entries of the reopenings.
    while taken.load(Ordering::Relaxed) < entries {
        ensure!(
            started.elapsed() < Duration::from_secs(3600),
            "the forwarder did not catch up within an hour"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(taken.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64())
}

/// Rotation at its bound: `entries` entries written with files of
/// `max_bytes` and `keep` rotated files kept, the directory's size sampled
/// every 1,000 entries. The largest size seen and the bound the settings
/// promise, `(keep + 1) × max_bytes` (the live file and the rotated ones).
pub async fn disk_bound(
    dir: &Path,
    entries: u64,
    max_bytes: u64,
    keep: usize,
) -> anyhow::Result<(u64, u64)> {
    let mut options = AuditOptions::new(dir, None);
    options.max_bytes = max_bytes;
    options.keep_files = Some(keep);
    let audit = AuditLog::open_with(options)
        .await
        .map_err(|e| anyhow!("audit: {e}"))?;
    let dir_bytes = || -> u64 {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum()
    };
    let mut largest = 0;
    record_calls(&audit, entries, |pair| {
        if pair % 500 == 0 {
            largest = largest.max(dir_bytes());
        }
    })
    .await?;
    Ok((largest.max(dir_bytes()), (keep as u64 + 1) * max_bytes))
}
