//! The one place a grant ends. Every path that revokes a grant (the
//! client at `/revoke`, the person on `/account`, an admin on `/admin`, a
//! replayed code, a reused refresh token, Gitea refusing the user's
//! session) goes through [`OAuthServer::end_grant`] or, where the store
//! ended it in the same step as what caused it, [`OAuthServer::grant_ended`],
//! and so writes exactly one `grant_ended` audit entry per grant: who ended
//! it (`by`), why (`reason`), whose and which client's it was.
//!
//! Pruning ends no live grant: it deletes grants whose code expired
//! unredeemed and revoked grants after 30 days (`docs/oauth.md`, Limits).

use super::OAuthServer;
use super::scopes::granted_access;
use crate::audit::{Event, EventKind};
use crate::store::{GrantRecord, Removed, StoreError};

/// Why a grant ended, and so who ended it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantEnding<'a> {
    /// The client revoked one of its tokens at `/revoke` (RFC 7009).
    ClientRevoked,
    /// The person revoked it on `/account` (one, or all of theirs).
    PersonRevoked,
    /// An administrator revoked it on `/admin` (the grant, the user's
    /// grants, or the client with its grants).
    AdminRevoked { admin: &'a str },
    /// Our code was presented again, or wrongly (RFC 6749 §4.1.2).
    CodeMisused,
    /// A rotated-out refresh token came back (RFC 9700 §4.14.2).
    RefreshTokenReused,
    /// Gitea would not renew the user's session (or there was no refresh
    /// token to renew it with).
    UpstreamRefused,
    /// The ID token of Gitea's renewed session did not verify, or named
    /// another user than the grant's.
    UpstreamIdTokenRefused,
    /// The person gave the same client at the same URL read and write
    /// (a step-up): the read-only grant it replaces ends.
    Widened,
}

impl GrantEnding<'_> {
    /// Who ended it: `client`, `person`, `admin` or `gateway`.
    pub fn by(self) -> &'static str {
        match self {
            Self::ClientRevoked => "client",
            Self::PersonRevoked => "person",
            Self::AdminRevoked { .. } => "admin",
            Self::CodeMisused
            | Self::RefreshTokenReused
            | Self::UpstreamRefused
            | Self::UpstreamIdTokenRefused
            | Self::Widened => "gateway",
        }
    }

    pub fn reason(self) -> &'static str {
        match self {
            Self::ClientRevoked => "client_revoked",
            Self::PersonRevoked => "account_page",
            Self::AdminRevoked { .. } => "admin_page",
            Self::CodeMisused => "code_misused",
            Self::RefreshTokenReused => "refresh_token_reused",
            Self::UpstreamRefused => "upstream_refused",
            Self::UpstreamIdTokenRefused => "upstream_id_token_refused",
            Self::Widened => "widened",
        }
    }

    /// The audit entry of `grant` ending this way.
    pub fn entry(self, grant: &GrantRecord) -> Event {
        self.entry_of(&grant.id, &grant.login, &grant.client_id)
    }

    /// The audit entry of the grant `id` of `login` and `client_id`.
    fn entry_of(self, id: &str, login: &str, client_id: &str) -> Event {
        let event = Event::new(EventKind::GrantEnded)
            .oauth_login(login)
            .detail("grant", id)
            .detail("client_id", client_id)
            .detail("by", self.by())
            .detail("reason", self.reason());
        match self {
            Self::AdminRevoked { admin } => event.detail("admin", admin),
            _ => event,
        }
    }
}

impl OAuthServer {
    /// Revokes `grant_id` and records how it ended; `false` (and no entry)
    /// when it was unknown or had already ended.
    pub async fn end_grant(
        &self,
        grant_id: &str,
        ending: GrantEnding<'_>,
    ) -> Result<bool, StoreError> {
        let Some(grant) = self.store.get_grant(grant_id).await? else {
            return Ok(false);
        };
        let ended = self.store.revoke_grant(grant_id, self.now()).await?;
        if ended {
            self.grant_ended(&grant, ending).await;
        }
        Ok(ended)
    }

    /// Ends every live grant of `login`, one entry each; how many ended.
    pub async fn end_grants_of(
        &self,
        login: &str,
        ending: GrantEnding<'_>,
    ) -> Result<u64, StoreError> {
        let mut ended = 0;
        for grant in self.store.list_grants_for_login(login).await? {
            if grant.revoked_at.is_none() && self.end_grant(&grant.id, ending).await? {
                ended += 1;
            }
        }
        Ok(ended)
    }

    /// Once a read-write grant is in use, ends the read-only grants it
    /// widens: the same person, client and MCP URL. How many ended.
    pub async fn end_grants_widened_by(&self, grant_id: &str) -> Result<u64, StoreError> {
        let Some(wide) = self.store.get_grant(grant_id).await? else {
            return Ok(0);
        };
        if !granted_access(&wide.scope).may_write() {
            return Ok(0);
        }
        let mut ended = 0;
        for grant in self.store.list_grants_for_login(&wide.login).await? {
            let widened = grant.id != wide.id
                && grant.revoked_at.is_none()
                && grant.client_id == wide.client_id
                && grant.resource == wide.resource
                && !granted_access(&grant.scope).may_write();
            if widened && self.end_grant(&grant.id, GrantEnding::Widened).await? {
                ended += 1;
            }
        }
        Ok(ended)
    }

    /// Ends every live grant of `client_id`, one entry each, and deletes
    /// the client; whether it existed.
    pub async fn delete_client(
        &self,
        client_id: &str,
        ending: GrantEnding<'_>,
    ) -> Result<bool, StoreError> {
        let live = self.store.live_grants_of_client(client_id).await?;
        let existed = self.store.delete_client(client_id, self.now()).await?;
        if existed {
            for grant in &live {
                self.audit
                    .record_best_effort(ending.entry_of(&grant.id, &grant.login, &grant.client_id))
                    .await;
            }
        }
        Ok(existed)
    }

    /// Removes every client and grant of `login` (one step in the store),
    /// one `grant_ended` entry per grant; what went.
    pub async fn remove_everything_of_login(
        &self,
        login: &str,
        ending: GrantEnding<'_>,
    ) -> Result<Removed, StoreError> {
        let removed = self
            .store
            .remove_everything_of_login(login, self.now())
            .await?;
        self.removal_ended(&removed, ending).await;
        Ok(removed)
    }

    /// Removes every client registered from `network` and its grants,
    /// one `grant_ended` entry per grant; what went.
    pub async fn remove_everything_of_network(
        &self,
        network: &str,
        ending: GrantEnding<'_>,
    ) -> Result<Removed, StoreError> {
        let removed = self
            .store
            .remove_everything_of_network(network, self.now())
            .await?;
        self.removal_ended(&removed, ending).await;
        Ok(removed)
    }

    async fn removal_ended(&self, removed: &Removed, ending: GrantEnding<'_>) {
        for grant in &removed.ended {
            self.audit
                .record_best_effort(ending.entry_of(&grant.id, &grant.login, &grant.client_id))
                .await;
        }
    }

    /// Records that `grant` ended, where the store ended it in the same
    /// step as what caused it (refresh-token reuse, a revocation at a
    /// token version). Best effort, as every OAuth entry.
    pub async fn grant_ended(&self, grant: &GrantRecord, ending: GrantEnding<'_>) {
        self.audit.record_best_effort(ending.entry(grant)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_ending_names_who_and_why() {
        let all = [
            (GrantEnding::ClientRevoked, "client", "client_revoked"),
            (GrantEnding::PersonRevoked, "person", "account_page"),
            (
                GrantEnding::AdminRevoked { admin: "root" },
                "admin",
                "admin_page",
            ),
            (GrantEnding::CodeMisused, "gateway", "code_misused"),
            (
                GrantEnding::RefreshTokenReused,
                "gateway",
                "refresh_token_reused",
            ),
            (GrantEnding::UpstreamRefused, "gateway", "upstream_refused"),
            (
                GrantEnding::UpstreamIdTokenRefused,
                "gateway",
                "upstream_id_token_refused",
            ),
            (GrantEnding::Widened, "gateway", "widened"),
        ];
        for (ending, by, reason) in all {
            assert_eq!((ending.by(), ending.reason()), (by, reason));
        }
    }
}
