//! The resolver: an `agm_` token presented at `/mcp` → its grant → that
//! user's Gitea session, checked for expiry, revocation and audience. An
//! expired Gitea access token is refreshed upstream once per grant even
//! under concurrent calls (single flight within this process; the new
//! tokens go to the store, so other replicas read them); Gitea refusing the
//! refresh revokes our grant and the client must sign in again. A token of
//! ours never resolves to the admin token.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::OAuthServer;
use super::events::OAuthEvent;
use super::id_token::{Expected, IdTokenError};
use super::upstream::UpstreamAuthError;
use crate::identity::{Identity, IdentityMode};
use crate::store::{GrantRecord, hash_secret};

/// Refresh this long before Gitea's expiry, so a call does not race it.
const EXPIRY_SKEW_SECS: i64 = 30;
/// Record use at most this often per grant (a write per call is waste).
const TOUCH_INTERVAL_SECS: i64 = 60;

/// Why a token did not resolve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// Unknown, expired, revoked, or for another resource: 401.
    #[error("the access token is not valid")]
    InvalidToken,
    /// The store or Gitea failed: 503, the client may retry.
    #[error("the token could not be checked right now")]
    Unavailable,
}

/// One lock per grant being refreshed; entries go when the refresh ends.
#[derive(Debug, Default)]
pub struct RefreshFlights(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

impl RefreshFlights {
    fn lock_for(&self, grant_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(grant_id.to_owned()).or_default().clone()
    }

    fn release(&self, grant_id: &str, flight: Arc<tokio::sync::Mutex<()>>) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        drop(flight);
        // Only the map holds it now: nobody else is waiting.
        if map.get(grant_id).is_some_and(|f| Arc::strong_count(f) == 1) {
            map.remove(grant_id);
        }
    }
}

/// Resolves one of our access tokens, presented at the MCP URL whose
/// canonical resource is `resource`, to the identity a tool call runs as.
pub async fn resolve(
    server: &OAuthServer,
    token: &str,
    resource: &str,
) -> Result<Identity, ResolveError> {
    let now = server.now();
    let resolved = server
        .store
        .resolve_access_token(&hash_secret(token), now)
        .await
        .map_err(unavailable)?
        .ok_or(ResolveError::InvalidToken)?;
    // Audience (RFC 8707): a token minted for another resource (another
    // of our MCP URLs included) is refused.
    if resolved.grant.resource != resource {
        return Err(ResolveError::InvalidToken);
    }
    let mut grant = resolved.grant;
    if gitea_token_expired(&grant, now) {
        grant = refresh_single_flight(server, grant).await?;
    }
    if grant
        .last_used_at
        .is_none_or(|t| now - t >= TOUCH_INTERVAL_SECS)
        && let Err(err) = server.store.touch_grant(&grant.id, now).await
    {
        tracing::warn!(error = %err, "grant last-use could not be recorded");
    }
    Ok(Identity {
        login: Some(grant.login.clone()),
        mode: IdentityMode::Oauth,
        token: grant.gitea.access_token.clone(),
        refresh_token: grant.gitea.refresh_token.clone(),
    })
}

fn gitea_token_expired(grant: &GrantRecord, now: i64) -> bool {
    grant
        .gitea
        .expires_at
        .is_some_and(|t| t <= now + EXPIRY_SKEW_SECS)
}

async fn refresh_single_flight(
    server: &OAuthServer,
    grant: GrantRecord,
) -> Result<GrantRecord, ResolveError> {
    let flight = server.resolver.lock_for(&grant.id);
    let result = {
        let _guard = flight.lock().await;
        refresh_if_still_expired(server, &grant.id).await
    };
    server.resolver.release(&grant.id, flight);
    result
}

/// Re-reads the grant under the flight lock: a caller that waited finds
/// the tokens its predecessor stored and does not refresh again.
async fn refresh_if_still_expired(
    server: &OAuthServer,
    grant_id: &str,
) -> Result<GrantRecord, ResolveError> {
    let now = server.now();
    let mut grant = server
        .store
        .get_grant(grant_id)
        .await
        .map_err(unavailable)?
        .filter(|g| g.revoked_at.is_none())
        .ok_or(ResolveError::InvalidToken)?;
    if !gitea_token_expired(&grant, now) {
        return Ok(grant);
    }
    let Some(refresh_token) = grant.gitea.refresh_token.clone() else {
        revoke(server, &grant, now, "no Gitea refresh token").await;
        return Err(ResolveError::InvalidToken);
    };
    match server.upstream.refresh(&refresh_token, now).await {
        Ok(answer) => {
            if let Err(err) =
                check_refreshed_subject(server, &grant, answer.id_token.as_deref()).await
            {
                tracing::warn!(error = %err, login = %grant.login, "the refreshed ID token was refused");
                revoke(server, &grant, now, "the refreshed ID token did not verify").await;
                return Err(ResolveError::InvalidToken);
            }
            let tokens = answer.tokens;
            server
                .store
                .update_gitea_tokens(&grant.id, &tokens)
                .await
                .map_err(unavailable)?;
            tracing::info!(login = %grant.login, "Gitea session refreshed");
            grant.gitea = tokens;
            Ok(grant)
        }
        Err(UpstreamAuthError::InvalidGrant) => {
            revoke(server, &grant, now, "Gitea refused the refresh").await;
            Err(ResolveError::InvalidToken)
        }
        Err(err) => {
            tracing::warn!(error = %err, login = %grant.login, "Gitea session refresh failed");
            audit_refresh_failure(server, &grant, None).await;
            Err(ResolveError::Unavailable)
        }
    }
}

/// A refresh's ID token must verify and name the grant's Gitea user. A
/// grant from before ID tokens (no subject) is not checked; one with a
/// subject must get an ID token back, as Gitea sends for `openid` grants.
async fn check_refreshed_subject(
    server: &OAuthServer,
    grant: &GrantRecord,
    id_token: Option<&str>,
) -> Result<(), IdTokenError> {
    let Some(subject) = grant.gitea_subject.as_deref() else {
        return Ok(());
    };
    let raw = id_token.ok_or(IdTokenError::Missing)?;
    server
        .upstream
        .id_tokens()
        .verify(raw, Expected::Subject(subject))
        .await
        .map(drop)
}

async fn revoke(server: &OAuthServer, grant: &GrantRecord, now: i64, why: &'static str) {
    tracing::warn!(login = %grant.login, client_id = %grant.client_id, why, "grant revoked: upstream refresh failure");
    audit_refresh_failure(server, grant, Some(why)).await;
    if let Err(err) = server.store.revoke_grant(&grant.id, now).await {
        tracing::error!(error = %err, "grant revocation failed");
    }
}

/// An `upstream_refresh_failed` audit entry; `revoked_because` is set when
/// the failure ended our grant.
async fn audit_refresh_failure(
    server: &OAuthServer,
    grant: &GrantRecord,
    revoked_because: Option<&'static str>,
) {
    server
        .record(OAuthEvent::UpstreamRefreshFailed {
            login: &grant.login,
            client_id: &grant.client_id,
            revoked_because,
        })
        .await;
}

fn unavailable(err: crate::store::StoreError) -> ResolveError {
    tracing::error!(error = %err, "store failure while resolving a token");
    ResolveError::Unavailable
}
