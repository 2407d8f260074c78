//! Driving one row of the load bench: its calls at a concurrency level,
//! timed, with the CPU time they cost.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::ensure;
use tokio::time::Instant;

use crate::{Endpoints, Scenario, Target, WARMUP_REQUESTS};

pub struct Figures {
    pub calls: usize,
    pub elapsed: Duration,
    pub p50: Duration,
    pub p99: Duration,
    /// The whole process's CPU time over the timed calls.
    pub cpu: Duration,
    pub capped: bool,
}

pub use super::bench_kit::process_cpu;

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Runs `requests` calls with `concurrency` workers, stopping early at
/// `max_time`. Any failed call aborts the run.
pub async fn drive(
    endpoints: Arc<Endpoints>,
    scenario: Arc<Scenario>,
    target: Target,
    requests: usize,
    concurrency: usize,
    max_time: Duration,
) -> anyhow::Result<Figures> {
    for i in 0..WARMUP_REQUESTS.min(requests) {
        endpoints.call(&scenario, target, i).await?;
    }
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let cpu_before = endpoints.cpu(target)?;
    let deadline = started + max_time;
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let endpoints = endpoints.clone();
            let scenario = scenario.clone();
            let next = next.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(requests / concurrency + 1);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= requests || Instant::now() >= deadline {
                        break;
                    }
                    let t = Instant::now();
                    endpoints
                        .call(&scenario, target, WARMUP_REQUESTS + i)
                        .await?;
                    latencies.push(t.elapsed());
                }
                anyhow::Ok(latencies)
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(requests);
    for worker in workers {
        latencies.extend(worker.await??);
    }
    let elapsed = started.elapsed();
    let cpu = endpoints.cpu(target)?.saturating_sub(cpu_before);
    ensure!(!latencies.is_empty(), "no call completed");
    latencies.sort_unstable();
    Ok(Figures {
        calls: latencies.len(),
        elapsed,
        p50: percentile(&latencies, 50.0),
        p99: percentile(&latencies, 99.0),
        cpu,
        capped: latencies.len() < requests,
    })
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
