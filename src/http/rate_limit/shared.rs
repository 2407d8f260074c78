//! The rate limits' windows in the store, for replicas on PostgreSQL:
//! each check counts the hit in the key's minute bucket in the store (one
//! upsert) and decides on the buckets' totals by the same sliding window
//! as in memory, so N replicas enforce one limit between them. A refused
//! hit is taken back. Minutes are the wall clock's, so the replicas'
//! clocks must agree (NTP): a skew of s seconds moves the buckets' edges by
//! s.
//!
//! When the store cannot be reached the check falls back to the process's
//! own window (which has already passed the request): fail open to the
//! per-process limit, not to no limit. Refusing every request while the
//! database is down would turn a store outage into a full outage for
//! static-bearer callers too, while an OAuth caller cannot resolve its
//! token then anyway.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::window::{WINDOW, decide_counts};
use crate::store::RateLimitStore;

/// At most this many keys remembered as reported (one event per key and
/// minute); past it the memory is cleared.
const MAX_REPORTED: usize = 10_000;

/// Shared windows for one limiter (`name` keeps the limiters' keys apart).
pub struct SharedWindows {
    store: Arc<dyn RateLimitStore>,
    name: &'static str,
    /// Per key, the minute a refusal was last reported in.
    reported: Mutex<HashMap<String, i64>>,
    /// The minute the store was last reported unreachable.
    unreachable_reported: Mutex<Option<i64>>,
}

/// One key of a check: what it counts (`ip`, `token`), the key as text (an
/// address, a token digest), and its limit per minute (`0`: none).
#[derive(Debug, Clone, Copy)]
pub struct SharedKey<'a> {
    pub kind: &'static str,
    pub key: &'a str,
    pub limit: u32,
}

/// A refusal by the shared window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedOverLimit {
    pub retry_after: Duration,
    /// First refusal of this key in this minute here: report it.
    pub report: bool,
}

impl SharedWindows {
    pub fn new(store: Arc<dyn RateLimitStore>, name: &'static str) -> Self {
        Self {
            store,
            name,
            reported: Mutex::new(HashMap::new()),
            unreachable_reported: Mutex::new(None),
        }
    }

    /// Counts one request of each key against its limit per minute
    /// across every process on the store, in one round trip. Returns the
    /// first key (by index) whose window refuses it; then no key keeps the
    /// hit.
    pub async fn check(&self, keys: &[SharedKey<'_>]) -> Option<(usize, SharedOverLimit)> {
        let limited: Vec<(usize, &SharedKey<'_>, String)> = keys
            .iter()
            .enumerate()
            .filter(|(_, k)| k.limit > 0)
            .map(|(i, k)| (i, k, format!("{}:{}:{}", self.name, k.kind, k.key)))
            .collect();
        if limited.is_empty() {
            return None;
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let minute = i64::try_from(now.as_secs() / 60).unwrap_or(i64::MAX);
        let elapsed = now - Duration::from_secs(now.as_secs() / 60 * 60);
        let stored: Vec<&str> = limited.iter().map(|(_, _, k)| k.as_str()).collect();
        let counts = match self.store.add_rate_limit_hits(&stored, minute).await {
            Ok(counts) => counts,
            Err(err) => {
                self.report_unreachable(minute, &err);
                return None;
            }
        };
        let clamp = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        let (index, key, retry_after) = limited.iter().zip(&counts).find_map(
            |((index, key, stored), (current, previous))| {
                let retry = decide_counts(
                    clamp(*previous),
                    clamp(current.saturating_sub(1)),
                    elapsed,
                    key.limit,
                    WINDOW,
                )?;
                Some((*index, stored, retry))
            },
        )?;
        if let Err(err) = self.store.remove_rate_limit_hits(&stored, minute).await {
            self.report_unreachable(minute, &err);
        }
        Some((
            index,
            SharedOverLimit {
                retry_after,
                report: self.first_refusal(key.clone(), minute),
            },
        ))
    }

    fn first_refusal(&self, key: String, minute: i64) -> bool {
        let mut reported = self.reported.lock().unwrap_or_else(|e| e.into_inner());
        if reported.len() >= MAX_REPORTED {
            reported.clear();
        }
        reported.insert(key, minute) != Some(minute)
    }

    fn report_unreachable(&self, minute: i64, err: &crate::store::StoreError) {
        let mut last = self
            .unreachable_reported
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if *last != Some(minute) {
            *last = Some(minute);
            tracing::warn!(error = %err, limiter = self.name, "the shared rate-limit windows are unreachable: each process enforces its own limit until the store answers");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreError;

    /// A store that never answers.
    struct Unreachable;

    #[async_trait::async_trait]
    impl RateLimitStore for Unreachable {
        fn shares_rate_limits(&self) -> bool {
            true
        }
        async fn add_rate_limit_hits(
            &self,
            _: &[&str],
            _: i64,
        ) -> Result<Vec<(u64, u64)>, StoreError> {
            Err(StoreError::Open("connection refused".into()))
        }
        async fn remove_rate_limit_hits(&self, _: &[&str], _: i64) -> Result<(), StoreError> {
            Err(StoreError::Open("connection refused".into()))
        }
    }

    #[tokio::test]
    async fn an_unreachable_store_leaves_the_process_limit_in_charge() {
        let shared = SharedWindows::new(Arc::new(Unreachable), "requests");
        let key = SharedKey {
            kind: "token",
            key: "abc",
            limit: 1,
        };
        for _ in 0..5 {
            assert_eq!(shared.check(&[key]).await, None);
        }
    }
}
