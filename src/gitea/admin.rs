//! The operator's admin account (`GITEA_TOKEN`), used by stdio, the static
//! bearer and unauthenticated loopback. Its login is looked up once from
//! `GET /user` and cached, so envelopes can name who acted.

use secrecy::SecretString;
use tokio::sync::OnceCell;

use super::executor::GiteaClient;
use crate::identity::{Identity, IdentityMode};

#[derive(Debug)]
pub struct AdminAccount {
    token: SecretString,
    login: OnceCell<String>,
}

impl AdminAccount {
    pub fn new(token: SecretString) -> Self {
        Self {
            token,
            login: OnceCell::new(),
        }
    }

    /// The identity for a caller authenticated by `mode`. The login is
    /// fetched on first use; when Gitea cannot tell it yet the identity
    /// carries no login and the next call tries again.
    pub async fn identity(&self, client: &GiteaClient, mode: IdentityMode) -> Identity {
        let login = self
            .login
            .get_or_try_init(|| async {
                let url = format!("{}/user", client.api_base());
                let user = client.get_json(&url, Some(&self.token)).await?;
                user.get("login")
                    .and_then(|l| l.as_str())
                    .map(str::to_owned)
                    .ok_or(super::executor::UpstreamError::Request)
            })
            .await
            .ok()
            .cloned();
        if login.is_none() {
            tracing::warn!("the admin token's login could not be read from Gitea");
        }
        Identity {
            login,
            mode,
            token: self.token.clone(),
            refresh_token: None,
            renewal: None,
        }
    }
}
