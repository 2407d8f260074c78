//! The redactor of each call without building one per call.
//!
//! A call's secrets are the gateway's own (fixed for the process), the
//! caller's Gitea tokens (the same for every call of one session until it
//! is refreshed), and the secret fields of the request body (rare: a write
//! that sets a secret). Building the Aho-Corasick automaton over all of
//! them, each with its ten encoded forms, was a large share of a small
//! call's CPU (docs/benchmarks.md, "Issue 17"). So:
//!
//! - the gateway's own secrets are encoded once ([`RedactorBuilder::prepare`]);
//! - the automaton of "own secrets + one caller's tokens" is built at that
//!   caller's first call and kept in a small LRU keyed by a digest of the
//!   tokens, so a session's later calls reuse it;
//! - a call that submits secret fields gets an automaton of its own, never
//!   cached: submitted values are not kept past their call.
//!
//! One automaton per call keeps one pass over the data and the
//! leftmost-longest rule across every kind of secret (a secret containing
//! another is replaced whole, whichever kind each is).

use std::num::NonZeroUsize;
use std::sync::Mutex;

use hashlink::LruCache;
use sha2::{Digest, Sha256};

use super::redaction::{Redactor, RedactorBuilder};
use super::secrets::BodySecrets;

/// Callers whose automaton is kept (a contiguous NFA of a caller's
/// patterns each; their size is in `docs/benchmarks.md`), so the cache
/// stays small when full; a caller beyond it costs one build per call, as
/// before the cache.
pub const CACHED_CALLERS: NonZeroUsize = NonZeroUsize::new(128).unwrap();

pub struct RedactorCache {
    /// The gateway's own secrets with their encoded forms.
    own: RedactorBuilder,
    built: Mutex<LruCache<[u8; 32], Redactor>>,
}

impl std::fmt::Debug for RedactorCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cached = self.built.lock().map_or(0, |c| c.len());
        f.debug_struct("RedactorCache")
            .field("cached", &cached)
            .finish_non_exhaustive()
    }
}

impl RedactorCache {
    /// A cache over the gateway's own secrets, `own`.
    pub fn new<I, S>(own: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::with_capacity(own, CACHED_CALLERS)
    }

    pub fn with_capacity<I, S>(own: I, capacity: NonZeroUsize) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            own: Redactor::builder().secrets(own).prepare(),
            built: Mutex::new(LruCache::new(capacity.get())),
        }
    }

    /// The redactor of a call made with `caller` (its Gitea tokens) that
    /// submitted `submitted`.
    pub fn redactor(&self, caller: &[&str], submitted: BodySecrets) -> Redactor {
        let build = || {
            self.own
                .clone()
                .secrets(caller.iter().copied())
                .secrets(submitted.values.iter().map(String::as_str))
                .secrets_any_length(submitted.any_length.iter().map(String::as_str))
                .build()
        };
        if !submitted.values.is_empty() || !submitted.any_length.is_empty() {
            return build();
        }
        let key = caller_key(caller);
        if let Some(found) = self.lock().get(&key) {
            return found.clone();
        }
        // Built outside the lock: two first calls of one caller may both
        // build, which is cheaper than making every caller wait.
        let built = build();
        self.lock().insert(key, built.clone());
        built
    }

    /// How many callers' automata are kept.
    pub fn cached(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<[u8; 32], Redactor>> {
        // A panic while holding the lock leaves only a cache behind.
        self.built.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A digest of the caller's tokens in order, each length-prefixed so that
/// no two lists share a key.
fn caller_key(caller: &[&str]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for secret in caller {
        hasher.update((secret.len() as u64).to_le_bytes());
        hasher.update(secret.as_bytes());
    }
    hasher.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gitea::hygiene::redaction::REDACTED;

    const OWN: &str = "gateway-bearer-token-1";

    fn submitted(values: &[&str]) -> BodySecrets {
        BodySecrets {
            values: values.iter().map(|s| s.to_string()).collect(),
            any_length: Vec::new(),
        }
    }

    #[test]
    fn a_callers_redactor_holds_the_gateways_secrets_and_the_callers() {
        let cache = RedactorCache::new([OWN]);
        let r = cache.redactor(&["caller-token-aaaa"], BodySecrets::default());
        assert_eq!(
            r.redact_str("gateway-bearer-token-1 caller-token-aaaa"),
            format!("{REDACTED} {REDACTED}")
        );
    }

    #[test]
    fn the_second_call_of_a_caller_reuses_the_first_ones_redactor() {
        let cache = RedactorCache::new([OWN]);
        cache.redactor(&["caller-token-aaaa"], BodySecrets::default());
        cache.redactor(&["caller-token-aaaa"], BodySecrets::default());
        assert_eq!(cache.cached(), 1);
    }

    #[test]
    fn another_callers_token_is_not_a_secret_of_this_call() {
        let cache = RedactorCache::new([OWN]);
        cache.redactor(&["caller-token-aaaa"], BodySecrets::default());
        let r = cache.redactor(&["caller-token-bbbb"], BodySecrets::default());
        assert_eq!(cache.cached(), 2);
        assert_eq!(r.redact_str("caller-token-aaaa"), "caller-token-aaaa");
        assert_eq!(r.redact_str("caller-token-bbbb"), REDACTED);
    }

    #[test]
    fn submitted_secrets_are_redacted_and_never_cached() {
        let cache = RedactorCache::new([OWN]);
        let r = cache.redactor(&["caller-token-aaaa"], submitted(&["webhook-secret-x"]));
        assert_eq!(r.redact_str("webhook-secret-x"), REDACTED);
        assert_eq!(r.redact_str("caller-token-aaaa"), REDACTED);
        assert_eq!(cache.cached(), 0);
        let later = cache.redactor(&["caller-token-aaaa"], BodySecrets::default());
        assert_eq!(later.redact_str("webhook-secret-x"), "webhook-secret-x");
    }

    #[test]
    fn a_full_cache_forgets_its_least_recent_caller() {
        let cache = RedactorCache::with_capacity([OWN], NonZeroUsize::new(2).unwrap());
        for caller in [
            "caller-token-1111",
            "caller-token-2222",
            "caller-token-3333",
        ] {
            cache.redactor(&[caller], BodySecrets::default());
        }
        assert_eq!(cache.cached(), 2);
        let r = cache.redactor(&["caller-token-1111"], BodySecrets::default());
        assert_eq!(r.redact_str("caller-token-1111"), REDACTED);
    }

    /// What [`CACHED_CALLERS`] is sized on: six own secrets (every one the
    /// configuration can hold) and a caller's two tokens.
    #[test]
    fn one_callers_automaton_stays_under_80_kib() {
        let own: Vec<String> = (0..6)
            .map(|i| format!("{i}-own-secret-{}", "x".repeat(40)))
            .collect();
        let cache = RedactorCache::new(own);
        let caller = [
            "gta_".to_owned() + &"a".repeat(40),
            "gtr_".to_owned() + &"b".repeat(40),
        ];
        let r = cache.redactor(&[&caller[0], &caller[1]], BodySecrets::default());
        assert!(r.memory_usage() < 80 * 1024, "{} bytes", r.memory_usage());
    }

    #[test]
    fn token_lists_that_join_to_the_same_text_are_different_callers() {
        assert_ne!(caller_key(&["abcd", "efgh"]), caller_key(&["abcdefgh"]));
        assert_ne!(caller_key(&["ab", "cdefgh"]), caller_key(&["abcd", "efgh"]));
    }
}
