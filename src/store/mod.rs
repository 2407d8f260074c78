//! The OAuth store: clients, pending authorizations, our codes, grants, our
//! tokens and the per-user consent registry, behind the [`OAuthStore`] trait
//! so the OAuth logic never names a backend. SQLite (a file in `DATA_DIR`)
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

pub mod cipher;
mod limits;
mod open;
mod sql;

use async_trait::async_trait;
use secrecy::SecretString;
use sha2::{Digest, Sha256};

pub use limits::{
    MAX_UNUSED_REGISTRATIONS_PER_NETWORK, PREVIOUS_REFRESH_GRACE_SECS, StoreLimits,
    UNUSED_REGISTRATION_TTL,
};
pub use open::{StoreLocation, open_store};

/// Unix time in seconds.
pub type UnixTime = i64;

/// SHA-256 of a secret we issued, hex-encoded: the only form in which our
/// tokens, codes and browser-held random values are stored.
pub fn hash_secret(secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// How a client came to be known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registration {
    /// RFC 7591 dynamic client registration at `/register`.
    Dynamic,
    /// A Client ID Metadata Document fetched from the https `client_id`.
    MetadataDocument,
}

impl Registration {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dynamic => "dcr",
            Self::MetadataDocument => "cimd",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "dcr" => Some(Self::Dynamic),
            "cimd" => Some(Self::MetadataDocument),
            _ => None,
        }
    }
}

/// A registered client.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientRecord {
    pub client_id: String,
    pub client_name: Option<String>,
    pub redirect_uris: Vec<String>,
    /// `none`, `client_secret_post` or `client_secret_basic`.
    pub token_endpoint_auth_method: String,
    pub grant_types: Vec<String>,
    pub response_types: Vec<String>,
    pub scope: Option<String>,
    pub registration: Registration,
    /// [`hash_secret`] of the client secret, for confidential clients.
    pub secret_hash: Option<String>,
    /// The registered metadata as echoed in the registration response
    /// (known fields only), JSON.
    pub metadata: serde_json::Value,
    pub created_at: UnixTime,
    /// For metadata-document clients: when the cached document goes stale.
    pub expires_at: Option<UnixTime>,
}

/// The grant types a client can register (RFC 7591 `grant_types`).
pub const GRANT_AUTHORIZATION_CODE: &str = "authorization_code";
pub const GRANT_REFRESH_TOKEN: &str = "refresh_token";

impl ClientRecord {
    /// Whether the client registered the refresh-token grant: only then is
    /// it given refresh tokens, and only then may it use them.
    pub fn may_refresh(&self) -> bool {
        self.grant_types.iter().any(|g| g == GRANT_REFRESH_TOKEN)
    }
}

/// Which flow a pending authorization completes at `/oauth/callback`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingFlow {
    /// An MCP client's `/authorize` request.
    Authorize,
    /// A person signing in to the gateway's own pages.
    PageSignIn,
}

impl PendingFlow {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Authorize => "authorize",
            Self::PageSignIn => "page",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "authorize" => Some(Self::Authorize),
            "page" => Some(Self::PageSignIn),
            _ => None,
        }
    }
}

/// The upstream half of a pending authorization, set when the user approves
/// and is sent to Gitea.
#[derive(Debug, Clone)]
pub struct UpstreamLeg {
    /// [`hash_secret`] of the `state` we sent to Gitea.
    pub state_hash: String,
    /// Our PKCE verifier for Gitea (encrypted at rest).
    pub pkce_verifier: SecretString,
    /// [`hash_secret`] of the browser-binding cookie.
    pub binding_hash: String,
    /// [`hash_secret`] of the `nonce` sent to Gitea, which its ID token
    /// must carry.
    pub nonce_hash: String,
}

/// An `/authorize` request parked while the user decides.
#[derive(Debug, Clone)]
pub struct PendingAuthorization {
    /// [`hash_secret`] of the request id carried by the consent form.
    pub id_hash: String,
    pub flow: PendingFlow,
    pub client_id: String,
    pub redirect_uri: String,
    /// The client's `state`, echoed back verbatim.
    pub state: Option<String>,
    /// The client's S256 challenge.
    pub code_challenge: String,
    pub resource: String,
    pub scope: String,
    /// [`hash_secret`] of the consent form's CSRF token.
    pub csrf_hash: String,
    pub created_at: UnixTime,
    pub expires_at: UnixTime,
    pub upstream: Option<UpstreamLeg>,
}

/// One of our authorization codes.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthCodeRecord {
    pub code_hash: String,
    pub grant_id: String,
    pub client_id: String,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub resource: String,
    pub scope: String,
    pub created_at: UnixTime,
    pub expires_at: UnixTime,
    pub redeemed_at: Option<UnixTime>,
}

/// The outcome of presenting a code at `/token`.
#[derive(Debug, Clone, PartialEq)]
pub enum CodeRedemption {
    /// First presentation: the code is now spent.
    Redeemed(AuthCodeRecord),
    /// The code was spent before: a replay.
    AlreadyRedeemed(AuthCodeRecord),
    Unknown,
}

/// The user's Gitea session as obtained at sign-in.
#[derive(Debug, Clone)]
pub struct GiteaTokens {
    pub access_token: SecretString,
    pub refresh_token: Option<SecretString>,
    pub expires_at: Option<UnixTime>,
}

/// A held [`GrantStore::lock_upstream_refresh`]. Release it when the
/// refresh is stored; dropping it also releases it (the transaction that
/// holds the lock is rolled back).
pub struct UpstreamRefreshLock(Option<Box<dyn HeldLock>>);

/// What holds a store lock: a transaction, committed on release.
#[async_trait]
pub(crate) trait HeldLock: Send {
    async fn release(self: Box<Self>) -> Result<(), StoreError>;
}

impl UpstreamRefreshLock {
    /// No lock to hold (one process: the caller's own lock suffices).
    pub(crate) fn in_process() -> Self {
        Self(None)
    }

    pub(crate) fn held(lock: Box<dyn HeldLock>) -> Self {
        Self(Some(lock))
    }

    pub async fn release(self) -> Result<(), StoreError> {
        match self.0 {
            Some(lock) => lock.release().await,
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for UpstreamRefreshLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "UpstreamRefreshLock(held)"
        } else {
            "UpstreamRefreshLock(in process)"
        })
    }
}

/// One user's authorization of one client: our tokens hang off it, and it
/// holds that user's Gitea tokens.
#[derive(Debug, Clone)]
pub struct GrantRecord {
    pub id: String,
    pub login: String,
    pub client_id: String,
    pub scope: String,
    pub resource: String,
    pub gitea: GiteaTokens,
    /// Gitea's user id (the verified ID token's `sub`); every upstream
    /// refresh's ID token must name it. `None` for grants from before.
    pub gitea_subject: Option<String>,
    /// Bumped by every replacement of `gitea` (an upstream refresh): the
    /// version a refresh read is the one it may replace.
    pub gitea_tokens_version: i64,
    pub created_at: UnixTime,
    /// Set when the grant's code is first redeemed; grants never activated
    /// are pruned once their code has expired.
    pub activated_at: Option<UnixTime>,
    pub last_used_at: Option<UnixTime>,
    pub revoked_at: Option<UnixTime>,
}

/// Kind of one of our tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Access,
    Refresh,
}

impl TokenKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Access => "access",
            Self::Refresh => "refresh",
        }
    }
}

/// One of our tokens to be stored (hash only).
#[derive(Debug, Clone, PartialEq)]
pub struct NewToken {
    pub token_hash: String,
    pub kind: TokenKind,
    pub scope: String,
    pub expires_at: UnixTime,
}

/// An access token that resolved, with its grant.
#[derive(Debug, Clone)]
pub struct ResolvedAccess {
    pub scope: String,
    pub expires_at: UnixTime,
    pub grant: GrantRecord,
}

/// The outcome of presenting a refresh token.
///
/// Rotation rules (one atomic step in the store): an *active* token becomes
/// *previous*, any older *previous* token of the grant becomes *retired*,
/// and the new pair is stored. A *previous* token is still honoured for
/// [`PREVIOUS_REFRESH_GRACE_SECS`] after it was rotated away from, while its
/// successor has not been used (a client that lost the response retries):
/// the pair it minted before is replaced (that refresh token retired, that
/// access token deleted), so concurrent refreshes of one token leave one
/// live pair. A *retired* token, or a *previous* one past its grace, is
/// reuse: the whole grant is revoked.
#[derive(Debug, Clone)]
pub enum RefreshOutcome {
    Rotated {
        grant: Box<GrantRecord>,
    },
    /// Unknown, expired, or its grant is revoked.
    Invalid,
    /// The token belongs to another client; nothing changed.
    WrongClient,
    /// A retired token was presented; the grant is now revoked.
    ReuseDetected {
        grant_id: String,
    },
}

/// What [`OAuthStore::prune`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneCounts {
    pub clients: u64,
    pub pending: u64,
    pub codes: u64,
    pub tokens: u64,
    pub grants: u64,
    pub page_sessions: u64,
}

/// A person signed in to the gateway's own pages (`/account`, `/admin`).
/// Never valid at `/mcp`.
#[derive(Debug, Clone)]
pub struct PageSession {
    /// [`hash_secret`] of the session cookie's value.
    pub id_hash: String,
    pub login: String,
    /// Gitea site administrator at sign-in (re-checked on admin actions).
    pub is_admin: bool,
    /// The person's Gitea access token from the sign-in (encrypted at
    /// rest), used to re-check `is_admin` before every admin action.
    pub gitea_access_token: SecretString,
    pub created_at: UnixTime,
    pub expires_at: UnixTime,
}

/// Storage failures. None of them carries a secret.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the store is full ({what})")]
    Full { what: &'static str },
    #[error("the quota is spent ({what})")]
    QuotaSpent { what: &'static str },
    #[error("a {table} row ({row}) could not be decrypted with any TOKEN_ENCRYPTION_KEY")]
    Undecryptable { table: &'static str, row: String },
    #[error("the store refused the operation: {0}")]
    Database(#[source] sqlx::Error),
    #[error("store migrations failed: {0}")]
    Migration(#[source] sqlx::migrate::MigrateError),
    #[error("the store could not be opened: {0}")]
    Open(String),
    #[error("a stored value is malformed ({0})")]
    Corrupt(&'static str),
}

impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        Self::Database(err)
    }
}

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
}

/// Clients: registered ones and cached metadata documents.
#[async_trait]
pub trait ClientStore: Send + Sync {
    /// Stores a newly registered client, registered from the network
    /// `registered_from` (see `ClientAddress::network`) when known. When
    /// `max_clients` are stored, dynamic registrations that no sign-in used
    /// within [`UNUSED_REGISTRATION_TTL`] are removed first; if the store is
    /// still full: [`StoreError::Full`]. A network that already holds
    /// [`MAX_UNUSED_REGISTRATIONS_PER_NETWORK`] unused recent registrations
    /// gets [`StoreError::QuotaSpent`].
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
        id_hash: &str,
        now: UnixTime,
    ) -> Result<Option<PendingAuthorization>, StoreError>;
    /// Records the approval's upstream leg, once: false when the request is
    /// unknown, expired or already approved.
    async fn approve_pending(
        &self,
        id_hash: &str,
        upstream: &UpstreamLeg,
        now: UnixTime,
    ) -> Result<bool, StoreError>;
    /// Removes a pending authorization (denied). Returns whether it existed.
    async fn delete_pending(&self, id_hash: &str) -> Result<bool, StoreError>;
    /// Takes (removes and returns) the approved pending authorization whose
    /// upstream state hashes to `state_hash`, expired or not (the caller
    /// tells expiry apart), but only for the browser whose binding cookie
    /// hashes to `binding_hash`: any other browser finds it
    /// [`PendingTake::OtherBrowser`] and leaves it in place. A second take
    /// of the same state finds nothing.
    async fn take_pending_by_upstream_state(
        &self,
        state_hash: &str,
        binding_hash: &str,
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
        code_hash: &str,
        now: UnixTime,
    ) -> Result<CodeRedemption, StoreError>;
}

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
    /// An unexpired access token of an unrevoked grant.
    async fn resolve_access_token(
        &self,
        token_hash: &str,
        now: UnixTime,
    ) -> Result<Option<ResolvedAccess>, StoreError>;
    /// Presents a refresh token of `client_id`; on success the new pair in
    /// `new_tokens` is stored. See [`RefreshOutcome`] for the rules.
    async fn rotate_refresh_token(
        &self,
        token_hash: &str,
        client_id: &str,
        new_tokens: &[NewToken],
        now: UnixTime,
    ) -> Result<RefreshOutcome, StoreError>;
    /// The grant a token (access or refresh, any state) belongs to.
    async fn grant_of_token(&self, token_hash: &str) -> Result<Option<GrantRecord>, StoreError>;
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
        id_hash: &str,
        now: UnixTime,
    ) -> Result<Option<PageSession>, StoreError>;
    /// Ends a page session (sign-out). Returns whether it existed.
    async fn delete_page_session(&self, id_hash: &str) -> Result<bool, StoreError>;
}

/// The whole OAuth store: every aggregate's trait. Implemented once over
/// sqlx for SQLite and PostgreSQL (`sql`), each aggregate's methods in the
/// file that holds its SQL.
pub trait OAuthStore:
    StoreMaintenance
    + ClientStore
    + PendingStore
    + GrantStore
    + CodeStore
    + TokenStore
    + PageSessionStore
    + std::fmt::Debug
{
}

impl<T> OAuthStore for T where
    T: StoreMaintenance
        + ClientStore
        + PendingStore
        + GrantStore
        + CodeStore
        + TokenStore
        + PageSessionStore
        + std::fmt::Debug
{
}
