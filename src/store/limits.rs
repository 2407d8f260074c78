//! The store's bounds: the caps on its tables, how long unused
//! registrations live, and the refresh-token grace. Plain values, so the
//! rules that use them read the same on both backends.

use super::UnixTime;

/// How long a dynamic registration may go unused (no grant stored for it)
/// before it is removed: long enough for a person to finish a sign-in (a
/// pending one lives 10 minutes), short enough that registrations nobody
/// uses cannot hold the table (the security review's F4).
pub const UNUSED_REGISTRATION_TTL: UnixTime = 60 * 60;

/// Unused dynamic registrations one network (IPv4 /24, IPv6 /48) may hold
/// within [`UNUSED_REGISTRATION_TTL`] on top of the registrations from it
/// that a sign-in put to use in the same time: the allowance grows with
/// real use. A hosted connector registers from its vendor's back end, so a
/// whole team shares one network, and claude.ai registers twice per connect
/// and uses one: each connect leaves one unused registration and earns one
/// used, whatever the team's size. A flood that nobody signs in with stops
/// at this many; the slack is how many connects may be between registering
/// and finishing their sign-in at once (two registrations each).
pub const UNUSED_REGISTRATIONS_PER_NETWORK: u64 = 32;

/// How long a used client (a dynamic registration, a cached metadata
/// document) is kept once none of its grants is live: then it goes, and a
/// client that comes back registers again. A day, so a person who revoked
/// a connection by mistake can still reconnect the same client; short
/// enough that clients used once cannot pile up (the red team's F1).
pub const ORPHANED_CLIENT_TTL: UnixTime = 24 * 60 * 60;

/// 1/this of `max_clients` is kept for networks that hold little of the
/// table: one network, however much it uses, never takes the last of it
/// (the red team's F1).
pub const RESERVED_CLIENT_SHARE: u64 = 10;
/// A network holding fewer than 1/this of `max_clients` (and at least
/// fewer than [`UNUSED_REGISTRATIONS_PER_NETWORK`]) may use the reserved
/// share.
pub const SMALL_NETWORK_SHARE: u64 = 100;

/// How long the refresh token just rotated away from stays usable, for a
/// client that lost the answer and retries, or that raced itself. Short on
/// purpose (Ory Hydra's default grace is 0, its maximum 5 minutes; AWS
/// Cognito's at most 60 s): a stolen previous token is useful to a thief
/// for no longer than this, and its use retires the pair the rightful
/// client holds, whose next refresh then ends the grant.
pub const PREVIOUS_REFRESH_GRACE_SECS: i64 = 10;

/// Caps that bound the store's growth (the spec's limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    pub max_clients: u64,
    pub max_pending: u64,
    pub max_codes: u64,
    pub max_grants_per_login: u64,
    pub max_page_sessions_per_login: u64,
    /// Pending confirmations one grant may have open at once.
    pub max_pending_confirmations_per_grant: u64,
    /// Clients one login may connect for the first time within an hour
    /// (the red team's F1, issue 53): a person connects a handful; an
    /// account signing in with client after client to fill the table is
    /// stopped, and its registrations stay unused (and go within the hour).
    pub max_new_clients_per_login: u64,
}

impl Default for StoreLimits {
    fn default() -> Self {
        Self {
            max_clients: 10_000,
            max_pending: 8192,
            max_codes: 1024,
            max_grants_per_login: 50,
            max_page_sessions_per_login: 50,
            max_pending_confirmations_per_grant: 20,
            max_new_clients_per_login: 10,
        }
    }
}
