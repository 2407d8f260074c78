//! Time, behind a trait so tests can move it: codes, pending sign-ins,
//! tokens, Gitea sessions and confirmations all expire, and the activity
//! figures are counted by the minute. A leaf: the OAuth layer and the tool
//! call both use it, neither through the other.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Unix seconds: the store's `UnixTime`, named here again so that the
/// clock imports nothing of ours.
pub type UnixTime = i64;

/// A source of the current time in unix seconds.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> UnixTime;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> UnixTime {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
    }
}

/// A clock that only moves when told to; for tests of expiry.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// Starts at the system time, so stored rows look realistic.
    pub fn new() -> Self {
        Self(AtomicI64::new(SystemClock.now()))
    }

    /// Starts at `now` (a replay of something written at that time).
    pub fn starting_at(now: UnixTime) -> Self {
        Self(AtomicI64::new(now))
    }

    pub fn advance(&self, seconds: i64) {
        self.0.fetch_add(seconds, Ordering::SeqCst);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> UnixTime {
        self.0.load(Ordering::SeqCst)
    }
}
