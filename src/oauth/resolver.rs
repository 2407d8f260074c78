//! The resolver: an `agm_` token presented at `/mcp` → its grant → that
//! user's Gitea session, checked for expiry, revocation and audience. A
//! Gitea access token is refreshed upstream when its stored expiry passes,
//! or when Gitea answers 401 to it (the executor asks the identity's
//! [`SessionRenewal`]), once per grant even under concurrent calls on many
//! replicas: a single flight within this process, the store's lock across
//! processes, and a compare-and-swap on the tokens' version. Gitea refusing
//! a refresh that nobody has superseded revokes our grant, and the client
//! must sign in again. A token of ours never resolves to the admin token.

use super::grant_end::GrantEnding;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::OAuthServer;
use super::events::OAuthEvent;
use super::id_token::{Expected, IdTokenError};
use super::scopes::granted_access;
use super::upstream::UpstreamAuthError;
use crate::identity::{Access, Connection, Identity, IdentityMode, SessionRenewal};
use crate::store::{GrantRecord, hash_secret};

/// Refresh up to this long before Gitea's expiry, so a call does not race
/// it; never more than half the tokens' lifetime ([`renewal_lead`]).
const EXPIRY_SKEW_SECS: i64 = 30;
/// A 401 from Gitea renews a grant's session at most this often (per
/// process): some routes answer 401 to any token (Gitea's basic-auth-only
/// routes), and calling them must not rotate the user's tokens every time.
const REFUSAL_RENEWAL_INTERVAL_SECS: i64 = 60;
/// Grants remembered for that interval, at most.
const MAX_REFUSAL_RENEWALS: usize = 10_000;
/// Record use at most this often per grant (a write per call is waste).
const TOUCH_INTERVAL_SECS: i64 = 60;

/// Why a token did not resolve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// Unknown, expired or revoked: 401.
    #[error("the access token is not valid")]
    InvalidToken,
    /// Valid, but issued for another of our MCP URLs (RFC 8707 audience):
    /// 401, saying that each URL needs its own sign-in.
    #[error("the access token was issued for another MCP URL")]
    OtherResource,
    /// The store or Gitea failed: 503, the client may retry.
    #[error("the token could not be checked right now")]
    Unavailable,
}

/// At most this many upstream refreshes hold the store's lock at once in
/// one process. Each holds a pooled connection for the lock while it reads
/// and writes the grant on another: unbounded, as many expiring grants as
/// the pool has connections would each hold one and wait for a second.
const MAX_CONCURRENT_REFRESHES: usize = 4;

/// The resolver's per-process state: one lock per grant being refreshed
/// (entries go when the refresh ends), when each grant last had its
/// session renewed after a 401, and the bound on concurrent refreshes.
#[derive(Debug)]
pub struct RefreshFlights {
    flights: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    refusal_renewals: Mutex<HashMap<String, i64>>,
    refreshing: tokio::sync::Semaphore,
}

impl Default for RefreshFlights {
    fn default() -> Self {
        Self {
            flights: Mutex::default(),
            refusal_renewals: Mutex::default(),
            refreshing: tokio::sync::Semaphore::new(MAX_CONCURRENT_REFRESHES),
        }
    }
}

impl RefreshFlights {
    /// Whether a 401 may renew `grant_id`'s session at `now`; if so, the
    /// renewal is counted from `now`.
    fn may_renew_after_refusal(&self, grant_id: &str, now: i64) -> bool {
        let mut last = self
            .refusal_renewals
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if last
            .get(grant_id)
            .is_some_and(|t| now - t < REFUSAL_RENEWAL_INTERVAL_SECS)
        {
            return false;
        }
        if last.len() >= MAX_REFUSAL_RENEWALS {
            last.retain(|_, t| now - *t < REFUSAL_RENEWAL_INTERVAL_SECS);
        }
        last.insert(grant_id.to_owned(), now);
        true
    }

    fn lock_for(&self, grant_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = self.flights.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(grant_id.to_owned()).or_default().clone()
    }

    fn release(&self, grant_id: &str, flight: Arc<tokio::sync::Mutex<()>>) {
        let mut map = self.flights.lock().unwrap_or_else(|e| e.into_inner());
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
    server: &Arc<OAuthServer>,
    token: &str,
    resource: &str,
) -> Result<(Identity, Connection), ResolveError> {
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
        return Err(ResolveError::OtherResource);
    }
    let mut grant = resolved.grant;
    if gitea_token_expired(&grant, now) {
        grant = renew_session(server, &grant, Trigger::Expired).await?;
    }
    if grant
        .last_used_at
        .is_none_or(|t| now - t >= TOUCH_INTERVAL_SECS)
        && let Err(err) = server.store.touch_grant(&grant.id, now).await
    {
        tracing::warn!(error = %err, "grant last-use could not be recorded");
    }
    // The token's scope, not the grant's: a refresh may have narrowed it.
    let connection = Connection {
        grant_id: grant.id.clone(),
        client_id: grant.client_id.clone(),
        redirect_uri: grant.redirect_uri.clone(),
    };
    Ok((
        identity_of(server, &grant, granted_access(&resolved.scope)),
        connection,
    ))
}

fn identity_of(server: &Arc<OAuthServer>, grant: &GrantRecord, access: Access) -> Identity {
    Identity {
        login: Some(grant.login.clone()),
        mode: IdentityMode::Oauth,
        token: grant.gitea.access_token.clone(),
        refresh_token: grant.gitea.refresh_token.clone(),
        renewal: Some(Arc::new(GrantSession {
            server: server.clone(),
            grant: grant.clone(),
            access,
        })),
        access,
    }
}

/// The Gitea session behind one resolved identity: when Gitea answers 401
/// to its token, the executor asks it for a renewed identity.
struct GrantSession {
    server: Arc<OAuthServer>,
    /// The grant as resolved: its `gitea_tokens_version` is the one Gitea
    /// refused.
    grant: GrantRecord,
    /// What the token presented may do.
    access: Access,
}

impl std::fmt::Debug for GrantSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrantSession")
            .field("grant", &self.grant.id)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl SessionRenewal for GrantSession {
    async fn renew(&self) -> Option<Identity> {
        let grant = renew_session(&self.server, &self.grant, Trigger::Refused)
            .await
            .ok()?;
        // The same tokens again: a retry would only be refused again.
        (grant.gitea_tokens_version != self.grant.gitea_tokens_version)
            .then(|| identity_of(&self.server, &grant, self.access))
    }
}

/// Why a Gitea session is renewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    /// The stored expiry has passed (or is about to).
    Expired,
    /// Gitea answered 401 to the token, whatever its stored expiry: the
    /// user revoked the application at Gitea, or Gitea's keys changed.
    Refused,
}

impl Trigger {
    fn as_str(self) -> &'static str {
        match self {
            Self::Expired => "expired",
            Self::Refused => "refused",
        }
    }
}

fn gitea_token_expired(grant: &GrantRecord, now: i64) -> bool {
    let tokens = &grant.gitea;
    tokens
        .expires_at
        .is_some_and(|t| t <= now + renewal_lead(tokens.issued_at, t))
}

/// How long before `expires_at` a session is renewed: [`EXPIRY_SKEW_SECS`],
/// but at most half the tokens' lifetime. A lead longer than the lifetime
/// would count every token as expired from the moment it was issued, and
/// every call would renew the session (with short-lived Gitea tokens,
/// one renewal per call, one at a time per grant).
fn renewal_lead(issued_at: Option<i64>, expires_at: i64) -> i64 {
    match issued_at {
        Some(issued) => EXPIRY_SKEW_SECS.min(expires_at.saturating_sub(issued).max(0) / 2),
        None => EXPIRY_SKEW_SECS,
    }
}

/// One upstream refresh per grant at a time: within this process (the
/// flight), then across every process sharing the store (the store's
/// lock). A caller that waited finds its predecessor's tokens.
async fn renew_session(
    server: &OAuthServer,
    seen: &GrantRecord,
    trigger: Trigger,
) -> Result<GrantRecord, ResolveError> {
    let flight = server.resolver.lock_for(&seen.id);
    let result = {
        let _guard = flight.lock().await;
        renew_under_store_lock(server, seen, trigger).await
    };
    server.resolver.release(&seen.id, flight);
    result
}

async fn renew_under_store_lock(
    server: &OAuthServer,
    seen: &GrantRecord,
    trigger: Trigger,
) -> Result<GrantRecord, ResolveError> {
    // Never closed, so acquiring only waits.
    let _permit = server
        .resolver
        .refreshing
        .acquire()
        .await
        .map_err(|_| ResolveError::Unavailable)?;
    let lock = server
        .store
        .lock_upstream_refresh(&seen.id)
        .await
        .map_err(unavailable)?;
    let result = refresh_unless_superseded(server, seen, trigger).await;
    if let Err(err) = lock.release().await {
        tracing::warn!(error = %err, "the upstream refresh lock could not be released cleanly");
    }
    result
}

/// The grant as stored now, unrevoked.
async fn current_grant(server: &OAuthServer, grant_id: &str) -> Result<GrantRecord, ResolveError> {
    server
        .store
        .get_grant(grant_id)
        .await
        .map_err(unavailable)?
        .filter(|g| g.revoked_at.is_none())
        .ok_or(ResolveError::InvalidToken)
}

/// Re-reads the grant under the locks and refreshes only if nobody has
/// replaced the tokens `seen` held since (or, for an expiry, if they are
/// still expired).
async fn refresh_unless_superseded(
    server: &OAuthServer,
    seen: &GrantRecord,
    trigger: Trigger,
) -> Result<GrantRecord, ResolveError> {
    let now = server.now();
    let grant = current_grant(server, &seen.id).await?;
    let superseded = grant.gitea_tokens_version != seen.gitea_tokens_version;
    let needed = match trigger {
        Trigger::Expired => gitea_token_expired(&grant, now),
        // Decided under the locks: the first caller refreshes, the ones
        // that waited find its tokens (superseded).
        Trigger::Refused => !superseded && server.resolver.may_renew_after_refusal(&grant.id, now),
    };
    if !needed {
        return Ok(grant);
    }
    let Some(refresh_token) = grant.gitea.refresh_token.clone() else {
        revoke(
            server,
            &grant,
            now,
            "no Gitea refresh token",
            GrantEnding::UpstreamRefused,
        )
        .await?;
        return Err(ResolveError::InvalidToken);
    };
    match server
        .upstream
        .refresh(grant.gitea_app, &refresh_token, now)
        .await
    {
        Ok(answer) => {
            if let Err(err) =
                check_refreshed_subject(server, &grant, answer.id_token.as_deref()).await
            {
                tracing::warn!(error = %err, login = %grant.login, "the refreshed ID token was refused");
                revoke(
                    server,
                    &grant,
                    now,
                    "the refreshed ID token did not verify",
                    GrantEnding::UpstreamIdTokenRefused,
                )
                .await?;
                return Err(ResolveError::InvalidToken);
            }
            store_refreshed(server, grant, answer.tokens, trigger).await
        }
        Err(UpstreamAuthError::InvalidGrant) => {
            if revoke(
                server,
                &grant,
                now,
                "Gitea refused the refresh",
                GrantEnding::UpstreamRefused,
            )
            .await?
            {
                return Err(ResolveError::InvalidToken);
            }
            // Someone replaced the tokens while Gitea answered (a process
            // without the shared lock): theirs are the live ones.
            current_grant(server, &grant.id).await
        }
        Err(err) => {
            tracing::warn!(error = %err, login = %grant.login, "Gitea session refresh failed");
            audit_refresh_failure(server, &grant, None).await;
            Err(ResolveError::Unavailable)
        }
    }
}

/// Stores refreshed tokens over the version they replace. Losing that
/// compare-and-swap means another refresh won: its tokens are used.
async fn store_refreshed(
    server: &OAuthServer,
    mut grant: GrantRecord,
    tokens: crate::store::GiteaTokens,
    trigger: Trigger,
) -> Result<GrantRecord, ResolveError> {
    let replaced = server
        .store
        .update_gitea_tokens(&grant.id, grant.gitea_tokens_version, &tokens)
        .await
        .map_err(unavailable)?;
    if !replaced {
        tracing::info!(login = %grant.login, "another refresh of this Gitea session won; using its tokens");
        return current_grant(server, &grant.id).await;
    }
    tracing::info!(login = %grant.login, trigger = trigger.as_str(), "Gitea session refreshed");
    server
        .record(OAuthEvent::UpstreamRefreshed {
            login: &grant.login,
            client_id: &grant.client_id,
            trigger: trigger.as_str(),
        })
        .await;
    grant.gitea = tokens;
    grant.gitea_tokens_version += 1;
    Ok(grant)
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
        .id_tokens(grant.gitea_app)
        .verify(raw, Expected::Subject(subject))
        .await
        .map(drop)
}

/// Ends the grant after an upstream refresh failure, unless its tokens
/// were replaced since they were read. Returns whether it was revoked;
/// a store failure is `Unavailable` (fail closed: the dead tokens are not
/// handed on).
async fn revoke(
    server: &OAuthServer,
    grant: &GrantRecord,
    now: i64,
    why: &'static str,
    ending: GrantEnding<'_>,
) -> Result<bool, ResolveError> {
    match server
        .store
        .revoke_grant_at_version(&grant.id, grant.gitea_tokens_version, now)
        .await
    {
        Ok(true) => {
            tracing::warn!(login = %grant.login, client_id = %grant.client_id, why, "grant revoked: upstream refresh failure");
            audit_refresh_failure(server, grant, Some(why)).await;
            server.grant_ended(grant, ending).await;
            Ok(true)
        }
        Ok(false) => Ok(false),
        Err(err) => {
            tracing::error!(error = %err, "grant revocation failed");
            audit_refresh_failure(server, grant, None).await;
            Err(ResolveError::Unavailable)
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_hour_long_session_is_renewed_thirty_seconds_ahead() {
        assert_eq!(renewal_lead(Some(0), 3600), EXPIRY_SKEW_SECS);
    }

    #[test]
    fn a_short_session_is_renewed_at_most_half_its_lifetime_ahead() {
        assert_eq!(renewal_lead(Some(100), 120), 10);
        assert_eq!(renewal_lead(Some(100), 145), 22);
        assert_eq!(renewal_lead(Some(100), 100), 0);
    }

    #[test]
    fn tokens_of_unknown_age_keep_the_fixed_lead() {
        assert_eq!(renewal_lead(None, 120), EXPIRY_SKEW_SECS);
    }
}
