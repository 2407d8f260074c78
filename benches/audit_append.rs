//! Audit append rate: entries/s with 1 writer (each entry waits for its own
//! fsync) and with 16 concurrent writers (group commit shares fsyncs).
//! Prints entries/s for each, then runs the criterion measurements.

use std::time::{Duration, Instant};

use aegis_gitea_mcp::audit::{AuditLog, Event, EventKind};
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
    let dir = tempfile::tempdir().unwrap();
    let key = secrecy::SecretString::from("bench-key-0123456789abcdef-0123456789".to_owned());
    let log = rt.block_on(AuditLog::open(dir.path(), Some(&key))).unwrap();
    for (writers, total) in [(1, 2_000), (16, 20_000)] {
        let elapsed = rt.block_on(append(&log, writers, total));
        println!(
            "audit append, {writers} writer(s): {total} entries in {:.2?} = {:.0} entries/s",
            elapsed,
            total as f64 / elapsed.as_secs_f64()
        );
    }
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
