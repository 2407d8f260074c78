//! The access tokens this process resolved in the last second, so that a
//! connection's calls do not each look its grant up and decrypt its Gitea
//! session (issue 46: that lookup made an OAuth call dearer than the
//! bearer's; `docs/benchmarks.md` has by how much).
//!
//! What keeps it as strict as no cache:
//! - an entry is used within the second of the caller's clock it was
//!   resolved in ([`FRESH_FOR`]: the store reads no clock; the resolver
//!   passes its `Clock`'s time), so a grant revoked by another replica on
//!   the same database is refused by this one within a second (the
//!   `TokenStore` contract's [`crate::store::RESOLVED_STALE_FOR`]); PostgreSQL's `LISTEN/NOTIFY` could say it sooner, but a lost
//!   notification connection would then keep revoked tokens alive, and a
//!   second is what a person who revokes can wait;
//! - every write of this store that can end a grant or change what a token
//!   resolves to (a revocation, a rotation, new Gitea tokens, a deleted
//!   client, an evicted grant) is an `super::ending::EndingTx`, whose commit
//!   moves the [`generation`] on, and an entry of an older generation is
//!   never used: on
//!   the replica that revokes, the next call is refused. A lookup that
//!   read the database before such a commit stores its result under the
//!   generation it started in, which is already old;
//! - a recorded use (once a minute per grant) ends nothing: it only moves
//!   the cached grants' last use on, so that the resolver does not record
//!   it again on every call. Were it a generation, a team's connections
//!   would end each other's entries several times a second;
//! - a token past its expiry is refused whether cached or not;
//! - entries hold the decrypted Gitea session for that second only, as a
//!   `SecretString` (zeroed when dropped), and at most [`MAX_ENTRIES`].
//!
//! [`generation`]: ResolvedCache::generation

use crate::store::{RESOLVED_STALE_FOR, ResolvedAccess, UnixTime};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// How long a resolved token is used without asking the database again:
/// the second it was resolved in.
pub(super) const FRESH_FOR: UnixTime = RESOLVED_STALE_FOR;
/// Tokens kept at most; past it the map is emptied (a second's worth of
/// distinct tokens beyond it would be looked up again, nothing more).
const MAX_ENTRIES: usize = 10_000;

struct Entry {
    access: ResolvedAccess,
    generation: u64,
    /// When it was resolved, by the caller's clock.
    at: UnixTime,
}

#[derive(Default)]
pub(super) struct ResolvedCache {
    generation: AtomicU64,
    entries: Mutex<Entries>,
}

/// The cached tokens, and each grant's last recorded use: a use is one
/// map write, whatever the number of entries (issue 55: it walked them
/// all under the lock).
#[derive(Default)]
struct Entries {
    by_token: HashMap<String, Entry>,
    last_used: HashMap<String, UnixTime>,
}

impl ResolvedCache {
    /// The generation a lookup starts in: read it before the database.
    pub(super) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// After a committed write that may change what a token resolves to:
    /// no entry from before is used again.
    pub(super) fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// The token whose hash is `token_hash`, if resolved within
    /// [`FRESH_FOR`], in the current generation, and unexpired at `now`.
    pub(super) fn get(&self, token_hash: &str, now: UnixTime) -> Option<ResolvedAccess> {
        let generation = self.generation();
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let entry = entries.by_token.get(token_hash)?;
        if entry.generation != generation
            || now >= entry.at + FRESH_FOR
            || now < entry.at
            || entry.access.expires_at <= now
        {
            return None;
        }
        let mut access = entry.access.clone();
        if let Some(&at) = entries.last_used.get(&access.grant.id)
            && access.grant.last_used_at.is_none_or(|t| t < at)
        {
            access.grant.last_used_at = Some(at);
        }
        Some(access)
    }

    /// After the grant `grant_id`'s use was recorded at `at`: its cached
    /// tokens carry it.
    pub(super) fn used(&self, grant_id: &str, at: UnixTime) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.last_used.len() >= MAX_ENTRIES && !entries.last_used.contains_key(grant_id) {
            entries.last_used.clear();
        }
        let latest = entries.last_used.entry(grant_id.to_owned()).or_insert(at);
        *latest = (*latest).max(at);
    }

    /// Keeps `access`, resolved at `now` by a lookup that started in
    /// `generation`.
    pub(super) fn put(
        &self,
        token_hash: &str,
        access: &ResolvedAccess,
        generation: u64,
        now: UnixTime,
    ) {
        if generation != self.generation() {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let by_token = &mut entries.by_token;
        if by_token.len() >= MAX_ENTRIES && !by_token.contains_key(token_hash) {
            by_token.retain(|_, e| e.generation == generation && now < e.at + FRESH_FOR);
            if by_token.len() >= MAX_ENTRIES {
                by_token.clear();
            }
        }
        by_token.insert(
            token_hash.to_owned(),
            Entry {
                access: access.clone(),
                generation,
                at: now,
            },
        );
    }
}

impl std::fmt::Debug for ResolvedCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedCache")
            .field("generation", &self.generation())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::store::{GiteaApp, GiteaTokens, GrantRecord};
    use secrecy::SecretString;

    fn access(expires_at: UnixTime) -> ResolvedAccess {
        ResolvedAccess {
            scope: "gitea:read".into(),
            expires_at,
            grant: GrantRecord {
                id: "g1".into(),
                login: "alice".into(),
                client_id: "c1".into(),
                scope: "gitea:read".into(),
                resource: "https://mcp.example/mcp".into(),
                gitea: GiteaTokens {
                    access_token: SecretString::from("gitea".to_owned()),
                    refresh_token: None,
                    expires_at: None,
                    issued_at: None,
                },
                gitea_subject: None,
                gitea_app: GiteaApp::Read,
                gitea_tokens_version: 0,
                redirect_uri: None,
                created_at: 0,
                activated_at: Some(0),
                last_used_at: None,
                revoked_at: None,
            },
        }
    }

    #[test]
    fn a_token_resolved_in_this_generation_is_used_until_it_expires() {
        let cache = ResolvedCache::default();
        let generation = cache.generation();
        cache.put("h", &access(100), generation, 99);
        assert!(cache.get("h", 99).is_some());
        assert!(cache.get("other", 99).is_none());
        cache.put("h", &access(100), cache.generation(), 100);
        assert!(cache.get("h", 100).is_none(), "expired");
    }

    #[test]
    fn a_committed_revocation_ends_every_entry_from_before() {
        let cache = ResolvedCache::default();
        cache.put("h", &access(100), cache.generation(), 1);
        cache.invalidate();
        assert!(cache.get("h", 1).is_none());
    }

    #[test]
    fn a_lookup_that_started_before_a_revocation_is_not_kept() {
        let cache = ResolvedCache::default();
        let started = cache.generation();
        // The revocation commits while the lookup reads the old row.
        cache.invalidate();
        cache.put("h", &access(100), started, 1);
        assert!(cache.get("h", 1).is_none());
    }

    #[test]
    fn a_recorded_use_moves_the_grants_last_use_on_and_ends_nothing() {
        let cache = ResolvedCache::default();
        cache.put("h", &access(100), cache.generation(), 1);
        cache.used("g1", 42);
        let kept = cache.get("h", 1).expect("still cached");
        assert_eq!(kept.grant.last_used_at, Some(42));
        cache.used("other", 50);
        assert_eq!(cache.get("h", 1).unwrap().grant.last_used_at, Some(42));
    }

    #[test]
    fn an_entry_is_used_within_the_second_of_the_clock_it_was_resolved_in() {
        let clock = ManualClock::starting_at(50);
        let cache = ResolvedCache::default();
        cache.put("h", &access(100), cache.generation(), clock.now());
        assert!(cache.get("h", clock.now()).is_some());
        clock.advance(FRESH_FOR);
        assert!(cache.get("h", clock.now()).is_none());
        assert!(cache.get("h", 49).is_none(), "a clock set back reads again");
    }
}
