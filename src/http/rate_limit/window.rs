//! The sliding-window counter behind the rate limits: a two-bucket window
//! per key (the previous minute's count weighted by how much of it still
//! overlaps the window, plus the current minute's), in a bounded key set
//! that never evicts or resets a limited key (SEC-09). Pure logic: the
//! caller passes the time.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// At most this many keys per key set (IPs, token hashes).
pub const MAX_KEYS: usize = 10_000;

/// The window the limits are expressed in.
pub const WINDOW: Duration = Duration::from_secs(60);

/// One key's two-bucket window.
#[derive(Debug, Clone)]
struct Window {
    /// Start of the current bucket.
    start: Instant,
    previous: u32,
    current: u32,
    last_seen: Instant,
    /// The bucket (its start) in which a refusal was last reported.
    reported: Option<Instant>,
}

impl Window {
    fn new(now: Instant) -> Self {
        Self {
            start: now,
            previous: 0,
            current: 0,
            last_seen: now,
            reported: None,
        }
    }

    /// Moves the buckets forward so `now` falls in the current one.
    fn roll(&mut self, now: Instant, window: Duration) {
        let elapsed = now.saturating_duration_since(self.start);
        if elapsed < window {
            return;
        }
        let buckets = (elapsed.as_nanos() / window.as_nanos()) as u32;
        self.previous = if buckets == 1 { self.current } else { 0 };
        self.current = 0;
        self.start += window * buckets;
    }

    /// Fraction of the current bucket elapsed at `now` (after `roll`).
    fn fraction(&self, now: Instant, window: Duration) -> f64 {
        now.saturating_duration_since(self.start).as_secs_f64() / window.as_secs_f64()
    }

    /// The sliding estimate of requests in the last `window`.
    fn estimate(&self, now: Instant, window: Duration) -> f64 {
        f64::from(self.previous) * (1.0 - self.fraction(now, window)) + f64::from(self.current)
    }

    /// True when a request now would be refused (the window is read, not
    /// changed).
    fn is_limited(&self, now: Instant, window: Duration, limit: u32) -> bool {
        let mut w = self.clone();
        w.roll(now, window);
        w.estimate(now, window) + 1.0 > f64::from(limit)
    }

    /// True when nothing is left of the window: it may go.
    fn is_expired(&self, now: Instant, window: Duration) -> bool {
        now.saturating_duration_since(self.start) >= window * 2
    }

    /// Time until a request would be allowed again (after `roll`).
    fn retry_after(&self, now: Instant, window: Duration, limit: u32) -> Duration {
        let f = self.fraction(now, window);
        let limit = f64::from(limit);
        let w = window.as_secs_f64();
        // Allowed once estimate + 1 <= limit.
        let seconds = if f64::from(self.current) + 1.0 > limit {
            // Not before this bucket ends; then the current count becomes
            // the previous one and has to fade far enough.
            let remaining = (1.0 - f) * w;
            let fade = if self.current == 0 {
                0.0
            } else {
                (1.0 - (limit - 1.0) / f64::from(self.current)).max(0.0) * w
            };
            remaining + fade
        } else {
            // The previous bucket's share has to fade.
            let needed = 1.0 - (limit - 1.0 - f64::from(self.current)) / f64::from(self.previous);
            (needed * w - f * w).max(0.0)
        };
        Duration::from_secs_f64(seconds.min(2.0 * w))
    }
}

/// The decision for counts kept elsewhere (the store's minute buckets,
/// shared by replicas), by the same sliding window: `previous` and
/// `current` hits before this request, `elapsed` into the current bucket.
/// `Some(retry_after)` when the request is refused.
pub fn decide_counts(
    previous: u32,
    current: u32,
    elapsed: Duration,
    limit: u32,
    window: Duration,
) -> Option<Duration> {
    if limit == 0 {
        return None;
    }
    let now = Instant::now();
    let counted = Window {
        start: now.checked_sub(elapsed.min(window)).unwrap_or(now),
        previous,
        current,
        last_seen: now,
        reported: None,
    };
    (counted.estimate(now, window) + 1.0 > f64::from(limit))
        .then(|| counted.retry_after(now, window, limit))
}

/// The outcome of one request against one key set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    Limited {
        retry_after: Duration,
        /// First refusal of this key in this window: report it.
        report: bool,
        /// The key had no room and was counted in the shared overflow window.
        overflow: bool,
    },
}

/// A bounded set of sliding windows, one per key. Pure logic: the caller
/// passes the time.
#[derive(Debug)]
pub struct KeyedLimiter<K> {
    limit: u32,
    window: Duration,
    max_keys: usize,
    keys: HashMap<K, Window>,
    overflow: Option<Window>,
}

impl<K: Hash + Eq + Clone> KeyedLimiter<K> {
    /// `limit` requests per `window` per key; `limit == 0` allows everything.
    pub fn new(limit: u32, window: Duration, max_keys: usize) -> Self {
        Self {
            limit,
            window,
            max_keys: max_keys.max(1),
            keys: HashMap::new(),
            overflow: None,
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// True when `key` has its own window (it was not evicted).
    #[cfg(test)]
    pub fn contains(&self, key: &K) -> bool {
        self.keys.contains_key(key)
    }

    /// Counts one request of `key` at `now`, or refuses it.
    pub fn check(&mut self, key: &K, now: Instant) -> Decision {
        if self.limit == 0 {
            return Decision::Allowed;
        }
        let (limit, window) = (self.limit, self.window);
        let overflow = !self.keys.contains_key(key) && !self.make_room(now);
        let slot = if overflow {
            self.overflow.get_or_insert_with(|| Window::new(now))
        } else {
            self.keys
                .entry(key.clone())
                .or_insert_with(|| Window::new(now))
        };
        slot.roll(now, window);
        slot.last_seen = now;
        if slot.estimate(now, window) + 1.0 > f64::from(limit) {
            let report = slot.reported != Some(slot.start);
            slot.reported = Some(slot.start);
            return Decision::Limited {
                retry_after: slot.retry_after(now, window, limit),
                report,
                overflow,
            };
        }
        slot.current = slot.current.saturating_add(1);
        Decision::Allowed
    }

    /// Makes room for one new key; false when every key is limited.
    fn make_room(&mut self, now: Instant) -> bool {
        if self.keys.len() < self.max_keys {
            return true;
        }
        let (limit, window) = (self.limit, self.window);
        self.keys.retain(|_, w| !w.is_expired(now, window));
        if self.keys.len() < self.max_keys {
            return true;
        }
        // Evict a batch of the least recently seen unlimited keys, so a
        // flood costs one scan per batch, not per request.
        let mut candidates: Vec<(Instant, K)> = self
            .keys
            .iter()
            .filter(|(_, w)| !w.is_limited(now, window, limit))
            .map(|(k, w)| (w.last_seen, k.clone()))
            .collect();
        if candidates.is_empty() {
            return false;
        }
        let batch = (self.max_keys / 16).clamp(1, candidates.len());
        if batch < candidates.len() {
            candidates.select_nth_unstable_by_key(batch - 1, |(seen, _)| *seen);
        }
        for (_, key) in candidates.into_iter().take(batch) {
            self.keys.remove(&key);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn allows_up_to_the_limit_then_refuses_with_retry_after() {
        let t0 = Instant::now();
        let mut l = KeyedLimiter::new(3, MIN, 10);
        for _ in 0..3 {
            assert_eq!(l.check(&"a", t0), Decision::Allowed);
        }
        let Decision::Limited {
            retry_after,
            report,
            overflow,
        } = l.check(&"a", t0 + secs(10))
        else {
            panic!("fourth request must be limited");
        };
        assert!(report && !overflow);
        // The bucket ends in 50 s; then 3 previous requests must fade to 2.
        assert!(
            retry_after >= secs(50) && retry_after <= secs(71),
            "{retry_after:?}"
        );
        // Other keys are unaffected.
        assert_eq!(l.check(&"b", t0 + secs(10)), Decision::Allowed);
    }

    #[test]
    fn the_window_slides_rather_than_resetting_at_the_minute() {
        let t0 = Instant::now();
        let mut l = KeyedLimiter::new(10, MIN, 10);
        for _ in 0..10 {
            assert_eq!(l.check(&"a", t0), Decision::Allowed);
        }
        // Just after the bucket boundary the previous ten still count.
        assert!(matches!(
            l.check(&"a", t0 + secs(61)),
            Decision::Limited { .. }
        ));
        // Halfway through the next bucket, half of them do.
        for _ in 0..5 {
            assert_eq!(l.check(&"a", t0 + secs(90)), Decision::Allowed);
        }
        assert!(matches!(
            l.check(&"a", t0 + secs(90)),
            Decision::Limited { .. }
        ));
        // Two minutes on, all is forgotten.
        assert_eq!(l.check(&"a", t0 + secs(200)), Decision::Allowed);
    }

    #[test]
    fn retry_after_is_when_a_request_passes_again() {
        let t0 = Instant::now();
        let mut l = KeyedLimiter::new(4, MIN, 10);
        for _ in 0..4 {
            l.check(&"a", t0);
        }
        let Decision::Limited { retry_after, .. } = l.check(&"a", t0 + secs(30)) else {
            panic!()
        };
        let at = t0 + secs(30) + retry_after;
        assert!(matches!(
            l.check(&"a", at - secs(1)),
            Decision::Limited { .. }
        ));
        assert_eq!(
            l.check(&"a", at + Duration::from_millis(10)),
            Decision::Allowed
        );
    }

    #[test]
    fn refusals_are_reported_once_per_window() {
        let t0 = Instant::now();
        let mut l = KeyedLimiter::new(1, MIN, 10);
        l.check(&"a", t0);
        let reports = |l: &mut KeyedLimiter<&str>, at| match l.check(&"a", at) {
            Decision::Limited { report, .. } => report,
            Decision::Allowed => panic!("limited"),
        };
        assert!(reports(&mut l, t0 + secs(1)));
        assert!(!reports(&mut l, t0 + secs(2)));
        assert!(!reports(&mut l, t0 + secs(59)));
    }

    #[test]
    fn zero_disables_the_limit() {
        let t0 = Instant::now();
        let mut l = KeyedLimiter::new(0, MIN, 1);
        for _ in 0..1000 {
            assert_eq!(l.check(&"a", t0), Decision::Allowed);
        }
        assert!(l.is_empty());
    }

    #[test]
    fn a_flood_of_new_keys_never_evicts_or_resets_a_limited_key() {
        let t0 = Instant::now();
        let mut l = KeyedLimiter::new(2, MIN, 100);
        l.check(&0u32, t0);
        l.check(&0u32, t0);
        assert!(matches!(l.check(&0u32, t0), Decision::Limited { .. }));
        for k in 1..=10_000u32 {
            l.check(&k, t0 + Duration::from_millis(u64::from(k)));
            assert!(l.len() <= 100);
        }
        assert!(l.contains(&0));
        assert!(matches!(
            l.check(&0u32, t0 + secs(11)),
            Decision::Limited {
                overflow: false,
                ..
            }
        ));
    }

    #[test]
    fn expired_keys_are_dropped_before_anyone_is_evicted() {
        let t0 = Instant::now();
        let mut l = KeyedLimiter::new(5, MIN, 3);
        l.check(&"old", t0);
        l.check(&"recent", t0 + secs(100));
        l.check(&"newer", t0 + secs(110));
        l.check(&"new", t0 + secs(125));
        assert!(!l.contains(&"old"));
        assert!(l.contains(&"recent") && l.contains(&"newer") && l.contains(&"new"));
    }

    #[test]
    fn when_every_key_is_limited_new_keys_share_the_overflow_window() {
        let t0 = Instant::now();
        let mut l = KeyedLimiter::new(1, MIN, 2);
        for k in ["a", "b"] {
            l.check(&k, t0);
        }
        assert_eq!(l.check(&"c", t0), Decision::Allowed);
        assert!(matches!(
            l.check(&"d", t0),
            Decision::Limited { overflow: true, .. }
        ));
        assert!(l.contains(&"a") && l.contains(&"b"));
        assert!(!l.contains(&"c"));
    }

    #[test]
    fn counts_kept_elsewhere_get_the_same_sliding_decision() {
        let at = |secs| Duration::from_secs(secs);
        assert_eq!(decide_counts(0, 9, at(10), 10, WINDOW), None);
        let retry = decide_counts(0, 10, at(10), 10, WINDOW).expect("the 11th is refused");
        assert!(retry > at(49) && retry <= at(60), "{retry:?}");
        // Half-way through the minute, half of the previous minute counts.
        assert_eq!(decide_counts(10, 4, at(30), 10, WINDOW), None);
        assert!(decide_counts(10, 5, at(30), 10, WINDOW).is_some());
        assert_eq!(decide_counts(1_000, 1_000, at(0), 0, WINDOW), None);
    }
}
