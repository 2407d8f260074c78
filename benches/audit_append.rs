//! Audit append rate, on disk (under `target/`), under each `AUDIT_SYNC`
//! policy: entries/s with 1 writer and with 16 concurrent writers. Under
//! `always` each entry waits for an fsync (concurrent writers share them:
//! group commit); under `interval` (the default) none does. Prints
//! entries/s for each, then runs the criterion measurements (default
//! policy).

use std::time::{Duration, Instant};

use aegis_gitea_mcp::audit::{AuditLog, AuditOptions, AuditSync, Event, EventKind};
use criterion::{Criterion, criterion_group, criterion_main};

fn event(i: usize) -> Event {
    let mut event = Event::new(EventKind::ToolCallStarted).tool("gitea_issue_list_issues");
    event.route = Some("/repos/{owner}/{repo}/issues".into());
    event.method = Some("GET".into());
    event.args = Some(vec![
        "owner".into(),
        "repo".into(),
        format!("page{}", i % 3),
    ]);
    event
}

async fn append(log: &AuditLog, writers: usize, total: usize) -> Duration {
    let started = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let log = log.clone();
            tokio::spawn(async move {
                for i in (w..total).step_by(writers) {
                    log.record(event(i)).await.expect("audit write");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    started.elapsed()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    std::fs::create_dir_all("target").unwrap();
    let key = secrecy::SecretString::from("bench-key-0123456789abcdef-0123456789".to_owned());
    let open = |dir: &std::path::Path, sync: AuditSync| {
        let mut options = AuditOptions::new(dir, Some(&key));
        options.sync = sync;
        rt.block_on(AuditLog::open_with(options)).unwrap()
    };
    for sync in [AuditSync::Always, AuditSync::default()] {
        let dir = tempfile::tempdir_in("target").unwrap();
        let log = open(dir.path(), sync);
        for (writers, total) in [(1, 2_000), (16, 20_000)] {
            let elapsed = rt.block_on(append(&log, writers, total));
            println!(
                "audit append, AUDIT_SYNC={}, {writers} writer(s): {total} entries in {:.2?} = {:.0} entries/s",
                sync.as_str(),
                elapsed,
                total as f64 / elapsed.as_secs_f64()
            );
        }
    }
    let dir = tempfile::tempdir_in("target").unwrap();
    let log = open(dir.path(), AuditSync::default());
    let mut group = c.benchmark_group("audit_append");
    group.sample_size(10);
    group.bench_function("1_writer_100_entries", |b| {
        b.iter(|| rt.block_on(append(&log, 1, 100)))
    });
    group.bench_function("16_writers_1600_entries", |b| {
        b.iter(|| rt.block_on(append(&log, 16, 1600)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
