//! The gateway's one database: the OAuth server's clients, pending
//! authorizations, codes, grants, tokens and consents, and beside them the
//! page sessions, confirmations, activity and shared rate-limit windows.
//! One small trait per aggregate, all of them together the [`Store`]
//! trait, so no caller names a backend. SQLite (a file in `DATA_DIR`)
//! by default, PostgreSQL when `DATABASE_URL` names one; both through sqlx
//! with versioned migrations applied at startup.
//!
//! What is stored how:
//! - our codes and tokens, and every random value a browser carries (consent
//!   request id, CSRF token, upstream state, binding cookie): SHA-256 hashes
//!   only ([`hash_secret`]), so a copy of the database cannot be replayed;
//! - client secrets we issue: SHA-256 hashes too (we verify them, never read
//!   them back);
//! - the user's Gitea tokens and our upstream PKCE verifier: Fernet
//!   ([`cipher::TokenCipher`]), encrypted and decrypted inside the store, so
//!   records carry plaintext [`SecretString`]s and the rest of the program
//!   never sees ciphertext.
//!
//! Every method takes `now` (unix seconds) from the caller: the store never
//! reads a clock, so tests control expiry. Every state change that two
//! requests could race on (redeeming a code, rotating a refresh token,
//! approving a consent, taking a callback state) is one atomic step here.

mod activity;
pub mod cipher;
mod copy;
mod error;
mod limits;
mod listing;
mod open;
mod records;
pub mod schema;
mod sql;

use async_trait::async_trait;

pub use activity::*;
pub use copy::{check_sqlite_copy, copy_sqlite_store};
pub use error::StoreError;
pub use limits::{
    ORPHANED_CLIENT_TTL, PREVIOUS_REFRESH_GRACE_SECS, RESERVED_CLIENT_SHARE, SMALL_NETWORK_SHARE,
    StoreLimits, UNUSED_REGISTRATION_TTL, UNUSED_REGISTRATIONS_PER_NETWORK,
};
pub use listing::*;
pub use open::{
    SQLITE_FILE_NAME, SchemaInspection, StoreLocation, inspect_store, open_store, open_store_with,
};
pub use records::*;

/// What keeps the store itself: its backend, health, pruning and keys.
#[async_trait]
pub trait StoreMaintenance: Send + Sync {
    /// Which backend, for logs and health (`sqlite` or `postgres`).
    fn backend(&self) -> &'static str;
    /// A cheap round trip, for health checks.
    async fn ping(&self) -> Result<(), StoreError>;
    /// Deletes expired pending authorizations, codes, tokens and page
    /// sessions, grants never activated whose codes have expired, and
    /// revoked grants older than 30 days.
    async fn prune(&self, now: UnixTime) -> Result<PruneCounts, StoreError>;
    /// Decrypts every encrypted value; the first that no key decrypts is
    /// [`StoreError::Undecryptable`]. Run at startup.
    async fn verify_decryptable(&self) -> Result<u64, StoreError>;
    /// Re-encrypts every encrypted value under the newest key, in one
    /// transaction. Returns how many values were rewritten.
    async fn rekey(&self) -> Result<u64, StoreError>;
    /// The schema level this binary carries, and the store's as it is now
    /// (another replica may have migrated it since this one opened).
    async fn schema_status(&self) -> Result<schema::SchemaStatus, StoreError>;
    /// Writes a consistent copy of the live database to `file`, which must
    /// not exist (SQLite's `VACUUM INTO`); [`StoreError::Unsupported`] on
    /// PostgreSQL, whose copy is `pg_dump`'s.
    async fn copy_into(&self, file: &std::path::Path) -> Result<(), StoreError>;
}

/// Rate-limit windows kept in the store, so that N processes on one store
/// (replicas on PostgreSQL) enforce one limit between them. Keys name the
/// limit and the client (an address, or the SHA-256 of an `Authorization`
/// value), never a credential.
#[async_trait]
pub trait RateLimitStore: Send + Sync {
    /// Whether other processes can share this store (PostgreSQL), so the
    /// windows belong in it; SQLite serves one process.
    fn shares_rate_limits(&self) -> bool;
    /// Counts one hit of each of `keys` (one or two, distinct) in the Unix
    /// `minute`, in one round trip. Returns, in the order of `keys`, that
    /// minute's hits (this one included) and the minute before's.
    async fn add_rate_limit_hits(
        &self,
        keys: &[&str],
        minute: i64,
    ) -> Result<Vec<(u64, u64)>, StoreError>;
    /// Takes one hit of each of `keys` in `minute` back (a refused request
    /// is not counted).
    async fn remove_rate_limit_hits(&self, keys: &[&str], minute: i64) -> Result<(), StoreError>;
}

/// Clients: registered ones and cached metadata documents.
#[async_trait]
pub trait ClientStore: Send + Sync {
    /// Stores a newly registered client, registered from the network
    /// `registered_from` (see `ClientAddress::network`) when known. When
    /// `max_clients` are stored, dynamic registrations that no sign-in used
    /// within [`UNUSED_REGISTRATION_TTL`] are removed first; if the store is
    /// still full: [`StoreError::Full`]. A network whose unused recent
    /// registrations number [`UNUSED_REGISTRATIONS_PER_NETWORK`] more than
    /// its recent registrations that a sign-in used gets
    /// [`StoreError::QuotaSpent`].
    async fn insert_client(
        &self,
        client: &ClientRecord,
        registered_from: Option<&str>,
        now: UnixTime,
    ) -> Result<(), StoreError>;
    /// Inserts or replaces a metadata-document client (a refreshed cache).
    async fn upsert_metadata_client(&self, client: &ClientRecord) -> Result<(), StoreError>;
    async fn get_client(&self, client_id: &str) -> Result<Option<ClientRecord>, StoreError>;
    /// Deletes a client and revokes its grants. Returns whether it existed.
    async fn delete_client(&self, client_id: &str, now: UnixTime) -> Result<bool, StoreError>;
    async fn list_clients(&self) -> Result<Vec<ClientRecord>, StoreError>;
    /// Registered clients (dynamic and metadata documents), for the
    /// registration cap's metric.
    async fn count_clients(&self) -> Result<u64, StoreError>;
    /// Revokes every grant of `login` and deletes every client it used that
    /// no other login holds a live grant for (`/admin`, in one step).
    async fn remove_everything_of_login(
        &self,
        login: &str,
        now: UnixTime,
    ) -> Result<Removed, StoreError>;
    /// Deletes every client registered from `network` and revokes their
    /// grants (`/admin`, in one step).
    async fn remove_everything_of_network(
        &self,
        network: &str,
        now: UnixTime,
    ) -> Result<Removed, StoreError>;
}

/// What a removal in one step took away: how many clients, and each
/// grant it ended (for their `grant_ended` entries).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Removed {
    pub clients: u64,
    pub ended: Vec<EndedGrant>,
}

/// A grant that ended, as its audit entry names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndedGrant {
    pub id: String,
    pub login: String,
    pub client_id: String,
}

/// Pending authorizations: requests parked between `/authorize` and the callback.
#[async_trait]
pub trait PendingStore: Send + Sync {
    /// Parks a request; [`StoreError::Full`] at `max_pending` unexpired ones.
    async fn insert_pending(
        &self,
        pending: &PendingAuthorization,
        now: UnixTime,
    ) -> Result<(), StoreError>;
    /// An unexpired pending authorization by [`hash_secret`] of its id.
    async fn get_pending(
        &self,
        id_hash: &SecretHash,
        now: UnixTime,
    ) -> Result<Option<PendingAuthorization>, StoreError>;
    /// Records the approval's upstream leg and the scope the person
    /// granted (which replaces the one asked for), once: false when the
    /// request is unknown, expired or already approved.
    async fn approve_pending(
        &self,
        id_hash: &SecretHash,
        upstream: &UpstreamLeg,
        granted_scope: &str,
        now: UnixTime,
    ) -> Result<bool, StoreError>;
    /// Removes a pending authorization (denied). Returns whether it existed.
    async fn delete_pending(&self, id_hash: &SecretHash) -> Result<bool, StoreError>;
    /// Takes (removes and returns) the approved pending authorization whose
    /// upstream state is `key.state_hash`, expired or not (the caller tells
    /// expiry apart), but only for the browser whose binding cookie is
    /// `key.binding_hash`: any other browser finds it
    /// [`PendingTake::OtherBrowser`] and leaves it in place. A second take
    /// of the same state finds nothing.
    async fn take_pending_by_upstream_state(
        &self,
        key: &UpstreamKey,
    ) -> Result<PendingTake, StoreError>;
}

/// What [`PendingStore::take_pending_by_upstream_state`] found.
#[derive(Debug)]
pub enum PendingTake {
    /// Taken: nobody can take it again.
    Taken(Box<PendingAuthorization>),
    /// Approved in another browser (no or another binding cookie); left in
    /// place, so a stranger who sees the callback URL cannot cancel it.
    OtherBrowser,
    /// No approved sign-in has this state (never, or already taken).
    Unknown,
}

/// Grants (a user's authorization of a client, with that user's Gitea tokens) and the consent registry.
#[async_trait]
pub trait GrantStore: Send + Sync {
    /// Stores a grant. When the login already holds `max_grants_per_login`
    /// unrevoked grants, its least recently used ones are revoked to make
    /// room; their ids are returned.
    async fn insert_grant(
        &self,
        grant: &GrantRecord,
        now: UnixTime,
    ) -> Result<Vec<String>, StoreError>;
    async fn get_grant(&self, grant_id: &str) -> Result<Option<GrantRecord>, StoreError>;
    /// Replaces the grant's Gitea tokens (after an upstream refresh) if
    /// they are still at `replaced_version` and the grant is not revoked:
    /// compare-and-swap, so an older pair never overwrites a newer one.
    /// Returns whether they were replaced.
    async fn update_gitea_tokens(
        &self,
        grant_id: &str,
        replaced_version: i64,
        tokens: &GiteaTokens,
    ) -> Result<bool, StoreError>;
    /// Holds the right to refresh one grant's Gitea tokens upstream, across
    /// every process sharing the store (PostgreSQL: a transaction-scoped
    /// advisory lock), until released. On SQLite, which serves one process,
    /// nothing is held: the resolver's in-process single flight is the lock.
    async fn lock_upstream_refresh(
        &self,
        grant_id: &str,
    ) -> Result<UpstreamRefreshLock, StoreError>;
    /// Revokes a grant (as [`GrantStore::revoke_grant`]) only if its Gitea
    /// tokens are still at `version`: a refusal of tokens someone else has
    /// since replaced ends nothing. Returns whether it was revoked.
    async fn revoke_grant_at_version(
        &self,
        grant_id: &str,
        version: i64,
        now: UnixTime,
    ) -> Result<bool, StoreError>;
    /// Marks a grant used; cheap to call on every request.
    async fn touch_grant(&self, grant_id: &str, now: UnixTime) -> Result<(), StoreError>;
    /// Revokes a grant and deletes its tokens and codes. Returns whether an
    /// unrevoked grant was found.
    async fn revoke_grant(&self, grant_id: &str, now: UnixTime) -> Result<bool, StoreError>;
    /// Unrevoked, activated grants of one login, newest first.
    async fn list_grants_for_login(&self, login: &str) -> Result<Vec<GrantRecord>, StoreError>;
    /// Every unrevoked, activated grant, newest first.
    async fn list_grants(&self) -> Result<Vec<GrantRecord>, StoreError>;
    /// How many grants are unrevoked and activated (the metrics gauge).
    async fn count_active_grants(&self) -> Result<u64, StoreError>;
    /// Records that `login` approved `client_id` for `scope`.
    async fn record_consent(
        &self,
        login: &str,
        client_id: &str,
        scope: &str,
        now: UnixTime,
    ) -> Result<(), StoreError>;
    /// A completed sign-in in one transaction: the grant (revoking the
    /// login's least recently used grants over the cap, returned), the
    /// consent, and the code. Nothing is written unless all of it is.
    async fn store_authorization(
        &self,
        grant: &GrantRecord,
        code: &AuthCodeRecord,
        now: UnixTime,
    ) -> Result<Vec<String>, StoreError>;
    /// Revokes every unrevoked grant of `login`; returns how many.
    async fn revoke_grants_for_login(&self, login: &str, now: UnixTime) -> Result<u64, StoreError>;
}

/// Authorization codes.
#[async_trait]
pub trait CodeStore: Send + Sync {
    /// Stores a code; [`StoreError::Full`] at `max_codes` unexpired ones.
    async fn insert_code(&self, code: &AuthCodeRecord, now: UnixTime) -> Result<(), StoreError>;
    /// Spends a code atomically: exactly one caller gets `Redeemed`. Also
    /// activates the code's grant.
    async fn redeem_code(
        &self,
        code_hash: &SecretHash,
        now: UnixTime,
    ) -> Result<CodeRedemption, StoreError>;
}

/// How stale a resolved access token may be: a write made through
/// another store on the same database (another replica's revocation) is
/// seen by [`TokenStore::resolve_access_token`] from the next second of
/// the caller's clock on; one made through the same store at once.
pub const RESOLVED_STALE_FOR: UnixTime = 1;

/// Our access and refresh tokens.
#[async_trait]
pub trait TokenStore: Send + Sync {
    /// Stores a freshly issued access and refresh token of a grant.
    async fn insert_tokens(
        &self,
        grant_id: &str,
        tokens: &[NewToken],
        now: UnixTime,
    ) -> Result<(), StoreError>;
    /// An unexpired access token of an unrevoked grant at `now`: at most
    /// [`RESOLVED_STALE_FOR`] behind a write of another store on the same
    /// database, never behind one of this store.
    async fn resolve_access_token(
        &self,
        token_hash: &SecretHash,
        now: UnixTime,
    ) -> Result<Option<ResolvedAccess>, StoreError>;
    /// Presents a refresh token of `client_id`; on success the new pair in
    /// `new_tokens` is stored. See [`RefreshOutcome`] for the rules.
    async fn rotate_refresh_token(
        &self,
        token_hash: &SecretHash,
        client_id: &str,
        new_tokens: &[NewToken],
        now: UnixTime,
    ) -> Result<RefreshOutcome, StoreError>;
    /// The grant a token (access or refresh, any state) belongs to.
    async fn grant_of_token(
        &self,
        token_hash: &SecretHash,
    ) -> Result<Option<GrantRecord>, StoreError>;
}

/// Sessions of the gateway's own pages.
#[async_trait]
pub trait PageSessionStore: Send + Sync {
    /// Stores a page session. When the login already holds
    /// `max_page_sessions_per_login` unexpired sessions, its oldest are
    /// deleted to make room.
    async fn insert_page_session(
        &self,
        session: &PageSession,
        now: UnixTime,
    ) -> Result<(), StoreError>;
    /// An unexpired page session by [`hash_secret`] of its cookie value.
    async fn get_page_session(
        &self,
        id_hash: &SecretHash,
        now: UnixTime,
    ) -> Result<Option<PageSession>, StoreError>;
    /// Ends a page session (sign-out). Returns whether it existed.
    async fn delete_page_session(&self, id_hash: &SecretHash) -> Result<bool, StoreError>;
}

/// Calls waiting for their person's confirmation (`docs/confirmation.md`).
#[async_trait]
pub trait ConfirmationStore: Send + Sync {
    /// Stores a pending confirmation; `StoreError::Full` when its grant
    /// already has `max_pending_confirmations_per_grant` unexpired ones.
    async fn insert_confirmation(
        &self,
        confirmation: &Confirmation,
        now: UnixTime,
    ) -> Result<(), StoreError>;
    async fn get_confirmation(&self, id: &str) -> Result<Option<Confirmation>, StoreError>;
    /// The newest confirmation of `grant_id` for the call `digest` that has
    /// not run (pending, approved or denied, expired or not).
    async fn open_confirmation(
        &self,
        grant_id: &str,
        digest: &str,
    ) -> Result<Option<Confirmation>, StoreError>;
    /// The person `login` decides a pending, unexpired confirmation of
    /// theirs, once; an approval then holds until `use_by`. False when it
    /// is not theirs, not pending, or expired.
    async fn decide_confirmation(
        &self,
        id: &str,
        login: &str,
        approve: bool,
        use_by: UnixTime,
        now: UnixTime,
    ) -> Result<bool, StoreError>;
    /// Spends an approval: true exactly once, while it is unexpired.
    async fn use_approval(&self, id: &str, now: UnixTime) -> Result<bool, StoreError>;
    /// Removes a confirmation (a denied or expired one, once reported).
    async fn delete_confirmation(&self, id: &str) -> Result<bool, StoreError>;
    /// Unexpired pending confirmations, of `login` or (`None`) everyone's,
    /// newest first, at most `limit`.
    async fn list_pending_confirmations(
        &self,
        login: Option<&str>,
        now: UnixTime,
        limit: u64,
    ) -> Result<Vec<Confirmation>, StoreError>;
}

/// What connections' tool calls did, for the pages (`docs/admin.md`,
/// "Activity"): figures kept a few days, never the audit record.
#[async_trait]
pub trait ActivityStore: Send + Sync {
    /// Adds finished calls to the hourly and daily figures and to each
    /// connection's last calls (at most [`RECENT_CALLS_KEPT`] kept).
    async fn record_activity(&self, calls: &[ActivityNote]) -> Result<(), StoreError>;
    /// Calls per connection and hour since `since`, of `login` or
    /// (`None`) everyone's.
    async fn hourly_activity(
        &self,
        login: Option<&str>,
        since: UnixTime,
    ) -> Result<Vec<HourActivity>, StoreError>;
    /// The last calls of `login`'s connections, newest first.
    async fn recent_calls(&self, login: &str) -> Result<Vec<RecentCall>, StoreError>;
    /// The most called tools since `since`, of `login` or everyone's.
    async fn top_tools(
        &self,
        login: Option<&str>,
        since: UnixTime,
        limit: u64,
    ) -> Result<Vec<ToolCount>, StoreError>;
}

/// The whole store: every aggregate's trait. Implemented once over
/// sqlx for SQLite and PostgreSQL (`sql`), each aggregate's methods in the
/// file that holds its SQL.
pub trait Store:
    StoreMaintenance
    + RateLimitStore
    + ClientStore
    + PendingStore
    + GrantStore
    + CodeStore
    + TokenStore
    + PageSessionStore
    + ConfirmationStore
    + ActivityStore
    + ListingStore
    + std::fmt::Debug
{
}

impl<T> Store for T where
    T: StoreMaintenance
        + RateLimitStore
        + ClientStore
        + PendingStore
        + GrantStore
        + CodeStore
        + TokenStore
        + PageSessionStore
        + ConfirmationStore
        + ActivityStore
        + ListingStore
        + std::fmt::Debug
{
}
