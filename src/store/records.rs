//! What the store holds and hands out: the records of each aggregate
//! (plaintext secrets as [`SecretString`]s; encryption happens inside the
//! store), the outcomes of its atomic steps, and the upstream refresh lock.

use async_trait::async_trait;
use secrecy::SecretString;
use sha2::{Digest, Sha256};

use super::StoreError;

/// Unix time in seconds.
pub type UnixTime = i64;

/// SHA-256 of a secret we issued, hex-encoded: the only form in which our
/// tokens, codes and browser-held random values are stored. Made only by
/// [`hash_secret`] (or read back from the store), so a raw secret cannot
/// be passed where a hash goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SecretHash(String);

impl SecretHash {
    /// The hex text, as stored and compared.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A hash read back from the store.
    pub(crate) fn from_stored(hex: String) -> Self {
        Self(hex)
    }

    /// A hash that no secret has (a leg parked before nonces existed).
    pub(crate) fn unmatchable() -> Self {
        Self(String::new())
    }
}

/// The [`SecretHash`] of `secret`.
pub fn hash_secret(secret: &str) -> SecretHash {
    let digest = Sha256::digest(secret.as_bytes());
    SecretHash(digest.iter().map(|b| format!("{b:02x}")).collect())
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

/// Which of the gateway's OAuth applications at Gitea a session is held
/// at: Gitea keeps the scopes of a person's first grant to an
/// application, so reading and writing sessions need one each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GiteaApp {
    /// `GITEA_OAUTH_READ_CLIENT_ID`: `read:` scopes only.
    Read,
    /// `GITEA_OAUTH_CLIENT_ID`: `OAUTH_SCOPES`.
    ReadWrite,
}

impl GiteaApp {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::ReadWrite => "read_write",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "read" => Some(Self::Read),
            "read_write" => Some(Self::ReadWrite),
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
    pub token_endpoint_auth_method: TokenEndpointAuthMethod,
    pub grant_types: Vec<String>,
    pub response_types: Vec<String>,
    pub scope: Option<String>,
    pub registration: Registration,
    /// [`hash_secret`] of the client secret, for confidential clients.
    pub secret_hash: Option<SecretHash>,
    /// The registered metadata as echoed in the registration response
    /// (known fields only), JSON.
    pub metadata: serde_json::Value,
    pub created_at: UnixTime,
    /// For metadata-document clients: when the cached document goes stale.
    pub expires_at: Option<UnixTime>,
}

/// How a client authenticates at `/token` (RFC 7591
/// `token_endpoint_auth_method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenEndpointAuthMethod {
    /// A public client: PKCE only.
    None,
    ClientSecretPost,
    ClientSecretBasic,
}

impl TokenEndpointAuthMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::ClientSecretPost => "client_secret_post",
            Self::ClientSecretBasic => "client_secret_basic",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "none" => Some(Self::None),
            "client_secret_post" => Some(Self::ClientSecretPost),
            "client_secret_basic" => Some(Self::ClientSecretBasic),
            _ => None,
        }
    }

    /// A confidential client holds a secret.
    pub fn is_confidential(self) -> bool {
        self != Self::None
    }
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

/// The page a page sign-in returns to: only the gateway's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReturnPage {
    #[default]
    Account,
    Admin,
}

impl ReturnPage {
    pub fn path(self) -> &'static str {
        match self {
            Self::Account => "/account",
            Self::Admin => "/admin",
        }
    }

    /// The page a stored path names; anything else is the account page.
    pub fn from_path(path: &str) -> Self {
        if path == "/admin" {
            Self::Admin
        } else {
            Self::Account
        }
    }
}

/// The upstream half of a pending authorization, set when the user approves
/// and is sent to Gitea.
#[derive(Debug, Clone)]
pub struct UpstreamLeg {
    /// [`hash_secret`] of the `state` we sent to Gitea.
    pub state_hash: SecretHash,
    /// Our PKCE verifier for Gitea (encrypted at rest).
    pub pkce_verifier: SecretString,
    /// [`hash_secret`] of the browser-binding cookie.
    pub binding_hash: SecretHash,
    /// [`hash_secret`] of the `nonce` sent to Gitea, which its ID token
    /// must carry.
    pub nonce_hash: SecretHash,
}

/// How Gitea's redirect finds its pending sign-in: the `state` it carries
/// and the binding cookie of the browser it arrives in. Named fields, so
/// the two cannot be swapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamKey {
    pub state_hash: SecretHash,
    pub binding_hash: SecretHash,
}

/// A sign-in parked between its start and Gitea's redirect: an MCP
/// client's `/authorize` request while the person decides and then signs
/// in at Gitea, or a person's sign-in to the pages while they are at Gitea.
#[derive(Debug, Clone)]
pub struct PendingAuthorization {
    /// [`hash_secret`] of the request id (the consent form's, or a random
    /// one for a page sign-in).
    pub id_hash: SecretHash,
    pub flow: PendingSignIn,
    pub created_at: UnixTime,
    pub expires_at: UnixTime,
    pub upstream: Option<UpstreamLeg>,
}

/// What a pending sign-in completes, with only its own fields.
#[derive(Debug, Clone, PartialEq)]
pub enum PendingSignIn {
    /// An MCP client's authorization request.
    Client(ClientAuthorization),
    /// A person signing in to the pages, and where they go next.
    Page(ReturnPage),
}

impl PendingSignIn {
    pub fn flow(&self) -> PendingFlow {
        match self {
            Self::Client(_) => PendingFlow::Authorize,
            Self::Page(_) => PendingFlow::PageSignIn,
        }
    }
}

/// An MCP client's `/authorize` request, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientAuthorization {
    pub client_id: String,
    pub redirect_uri: String,
    /// The client's `state`, echoed back verbatim.
    pub state: Option<String>,
    /// The client's S256 challenge.
    pub code_challenge: String,
    pub resource: String,
    pub scope: String,
    /// [`hash_secret`] of the consent form's CSRF token.
    pub csrf_hash: SecretHash,
}

/// One of our authorization codes.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthCodeRecord {
    pub code_hash: SecretHash,
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
    /// When Gitea issued them (`None` for tokens stored before this was
    /// kept): with `expires_at`, their lifetime.
    pub issued_at: Option<UnixTime>,
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
    /// The Gitea application that issued `gitea` (and renews it).
    pub gitea_app: GiteaApp,
    /// Bumped by every replacement of `gitea` (an upstream refresh): the
    /// version a refresh read is the one it may replace.
    pub gitea_tokens_version: i64,
    /// The redirect URI the sign-in that made the grant used (one of the
    /// client's registered ones); `None` for grants from before it was kept.
    pub redirect_uri: Option<String>,
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
    pub token_hash: SecretHash,
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

/// What [`Store::prune`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneCounts {
    pub clients: u64,
    pub pending: u64,
    pub codes: u64,
    pub tokens: u64,
    pub grants: u64,
    pub page_sessions: u64,
    pub confirmations: u64,
    /// Activity figures past their retention.
    pub activity: u64,
}

/// Where a call that needs its person's confirmation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfirmationState {
    /// Waiting for the person.
    Pending,
    /// Approved: the same call may run once, until the record expires.
    Approved,
    /// The person said no.
    Denied,
    /// The approved call ran.
    Used,
}

impl ConfirmationState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Used => "used",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "pending" => Some(Self::Pending),
            "approved" => Some(Self::Approved),
            "denied" => Some(Self::Denied),
            "used" => Some(Self::Used),
            _ => None,
        }
    }
}

/// A call through an OAuth connection that waits for its person: what it
/// is, who may decide, and where it stands.
#[derive(Debug, Clone)]
pub struct Confirmation {
    /// Random; in the confirmation page's URL.
    pub id: String,
    pub grant_id: String,
    /// Who may decide: the grant's Gitea user.
    pub login: String,
    pub client_id: String,
    pub tool: String,
    /// SHA-256 hex of the tool name and its canonical arguments: the
    /// approval holds for exactly this call.
    pub digest: String,
    /// What the call does, in a sentence.
    pub summary: String,
    pub method: String,
    pub route: String,
    /// The arguments as the page shows them (JSON; encrypted at rest).
    pub arguments: SecretString,
    pub state: ConfirmationState,
    pub created_at: UnixTime,
    /// Pending: until the person must decide. Approved: until the call
    /// must be retried.
    pub expires_at: UnixTime,
    pub decided_at: Option<UnixTime>,
    pub decided_by: Option<String>,
}

/// A person signed in to the gateway's own pages (`/account`, `/admin`).
/// Never valid at `/mcp`.
#[derive(Debug, Clone)]
pub struct PageSession {
    /// [`hash_secret`] of the session cookie's value.
    pub id_hash: SecretHash,
    pub login: String,
    /// Gitea site administrator at sign-in (re-checked on admin actions).
    pub is_admin: bool,
    /// The person's Gitea access token from the sign-in (encrypted at
    /// rest), used to re-check `is_admin` before every admin action.
    pub gitea_access_token: SecretString,
    pub created_at: UnixTime,
    pub expires_at: UnixTime,
}
