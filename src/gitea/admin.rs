//! The operator's admin account (`GITEA_TOKEN`), used by stdio, the static
//! bearer and unauthenticated loopback. Its login is looked up once from
//! `GET /user` and cached, so envelopes can name who acted; whether Gitea
//! accepts the token is known from that lookup (made at startup by
//! [`AdminAccount::check`]), and `/health` reports it.

use std::sync::atomic::{AtomicU8, Ordering};

use secrecy::SecretString;
use tokio::sync::OnceCell;

use super::executor::{GiteaClient, UpstreamError};
use crate::identity::{Identity, IdentityMode};

/// What Gitea said of the admin token the last time it was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminTokenState {
    /// Not asked yet, or Gitea did not answer.
    Unknown,
    /// `GET /user` answered with the token's user.
    Accepted,
    /// Gitea answered 401 or 403: the token is wrong, revoked or expired.
    Rejected,
}

impl AdminTokenState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Accepted => "ok",
            Self::Rejected => "rejected",
        }
    }

    fn from_u8(value: u8) -> Self {
        match value {
            1 => Self::Accepted,
            2 => Self::Rejected,
            _ => Self::Unknown,
        }
    }
}

#[derive(Debug)]
pub struct AdminAccount {
    token: SecretString,
    login: OnceCell<String>,
    state: AtomicU8,
}

impl AdminAccount {
    pub fn new(token: SecretString) -> Self {
        Self {
            token,
            login: OnceCell::new(),
            state: AtomicU8::new(AdminTokenState::Unknown as u8),
        }
    }

    /// What Gitea said of the token the last time it was asked.
    pub fn state(&self) -> AdminTokenState {
        AdminTokenState::from_u8(self.state.load(Ordering::Relaxed))
    }

    /// Asks Gitea who the token is (`GET /user`), records the answer, and
    /// returns the login, or why there is none.
    pub async fn check(&self, client: &GiteaClient) -> Result<String, UpstreamError> {
        let login = self
            .login
            .get_or_try_init(|| async {
                let url = format!("{}/user", client.api_base());
                let user = client.get_json(&url, Some(&self.token)).await?;
                user.get("login")
                    .and_then(|l| l.as_str())
                    .map(str::to_owned)
                    .ok_or(UpstreamError::Request)
            })
            .await
            .cloned();
        let state = match &login {
            Ok(_) => AdminTokenState::Accepted,
            Err(UpstreamError::Answered { status: 401 | 403 }) => AdminTokenState::Rejected,
            Err(_) => AdminTokenState::Unknown,
        };
        self.state.store(state as u8, Ordering::Relaxed);
        login
    }

    /// The identity for a caller authenticated by `mode`. The login is
    /// fetched on first use; when Gitea cannot tell it yet the identity
    /// carries no login and the next call tries again.
    pub async fn identity(&self, client: &GiteaClient, mode: IdentityMode) -> Identity {
        let login = self.check(client).await.ok();
        if login.is_none() {
            tracing::warn!(
                admin_token = self.state().as_str(),
                "the admin token's login could not be read from Gitea"
            );
        }
        Identity {
            login,
            mode,
            token: self.token.clone(),
            refresh_token: None,
            renewal: None,
            access: crate::identity::Access::ReadWrite,
        }
    }
}
