//! Who a tool call acts as. The transport (stdio, static bearer, loopback)
//! or the OAuth resolver produces an [`Identity`]; the executor only
//! consumes it.

use std::sync::Arc;

use secrecy::SecretString;
use serde::Serialize;

/// How the caller was authenticated, which also decides whose Gitea token
/// the call carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdentityMode {
    /// The stdio transport: the operator's own machine, admin token.
    Stdio,
    /// The static `MCP_BEARER_TOKEN`: admin token.
    Bearer,
    /// An unauthenticated request on a loopback bind with no bearer or OAuth
    /// configured: admin token.
    Loopback,
    /// One of our OAuth tokens: the signed-in user's own Gitea token.
    Oauth,
}

impl IdentityMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Bearer => "bearer",
            Self::Loopback => "loopback",
            Self::Oauth => "oauth",
        }
    }
}

/// The identity a call runs as: the Gitea login (when known), how it was
/// authenticated, and the Gitea token sent upstream. `Debug` never shows the
/// tokens.
#[derive(Debug, Clone)]
pub struct Identity {
    pub login: Option<String>,
    pub mode: IdentityMode,
    pub token: SecretString,
    /// The user's Gitea refresh token (OAuth): never sent with a call, but
    /// a secret of this caller that results must not carry either.
    pub refresh_token: Option<SecretString>,
    /// How to get a fresh session when Gitea answers 401 to `token` (OAuth:
    /// the grant's upstream refresh); `None` for the admin token.
    pub renewal: Option<Arc<dyn SessionRenewal>>,
    /// What the caller's grant lets it do: the admin token may write; an
    /// OAuth token as its scope says (`gitea:read` alone only reads).
    pub access: Access,
}

/// Which OAuth connection a call comes through: the grant and its client.
/// The HTTP layer puts it beside the [`Identity`] of an `agm_` token; the
/// operator's policy asks about both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    pub grant_id: String,
    pub client_id: String,
    /// The redirect URI the grant's sign-in used (`None` for grants from
    /// before it was kept): what a policy's `redirect_hosts` asks about.
    pub redirect_uri: Option<String>,
}

/// What a caller's authorization covers, whatever the URL would allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Reads only (GET and HEAD): a write gets the step-up challenge.
    Read,
    /// Reads and writes.
    ReadWrite,
}

impl Access {
    pub fn may_write(self) -> bool {
        self == Self::ReadWrite
    }
}

/// A session that can be renewed once Gitea has refused its token: tokens
/// die before their stored expiry when the user revokes the application
/// at Gitea or Gitea's signing key changes.
#[async_trait::async_trait]
pub trait SessionRenewal: Send + Sync + std::fmt::Debug {
    /// The identity with a renewed session, or `None` when the session
    /// cannot be renewed (the grant is then over, or Gitea is unreachable).
    async fn renew(&self) -> Option<Identity>;
}
