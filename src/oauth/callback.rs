//! `/oauth/callback`: Gitea sends the person back here, for either flow
//! (the stored sign-in says which; the HTTP layer's route switches on it).
//! [`receive`] completes the Gitea leg only in the browser that started it
//! (binding cookie), only once, and only before it expires; otherwise a
//! [`PageError`], never a redirect. Then the Gitea code is exchanged
//! (`sign_in::finish`). An MCP client's authorization is completed by
//! `authorization::complete_authorization`; a page sign-in becomes a page
//! session (`pages::session`).

use super::OAuthServer;
use super::params::OAuthParams;
use super::scopes::granted_access;
use super::sign_in::{self, UpstreamOutcome};
use super::upstream::GiteaUser;
use crate::page_kit::PageError;
use crate::store::{
    GiteaApp, GiteaTokens, PendingAuthorization, PendingSignIn, PendingTake, UnixTime, UpstreamKey,
    hash_secret,
};

/// Gitea's redirect, received: the pending sign-in it completes and
/// Gitea's answer (tokens and user, or why not).
pub struct ReceivedCallback {
    pub pending: PendingAuthorization,
    pub signed_in: Result<(GiteaTokens, GiteaUser), UpstreamOutcome>,
    /// The Gitea application the session is held at.
    pub app: GiteaApp,
    pub now: UnixTime,
}

/// The Gitea leg of `GET /oauth/callback` with `query`, for either flow,
/// in the browser whose binding cookie is `binding_cookie`.
pub async fn receive(
    server: &OAuthServer,
    query: &[u8],
    binding_cookie: Option<&str>,
) -> Result<ReceivedCallback, PageError> {
    let params = OAuthParams::parse(query)
        .map_err(|err| PageError::invalid("Invalid sign-in", err.to_string()))?;
    let state = params.get("state").ok_or(PageError::Expired)?;
    // The binding cookie is checked by the take itself: a callback from
    // another browser leaves the pending sign-in to the one that approved.
    let key = UpstreamKey {
        state_hash: hash_secret(state),
        binding_hash: sign_in::binding_hash(binding_cookie),
    };
    let pending = match server.store.take_pending_by_upstream_state(&key).await? {
        PendingTake::Taken(pending) => *pending,
        PendingTake::OtherBrowser => {
            tracing::warn!("callback without the approving browser's binding cookie");
            return Err(PageError::OtherBrowser);
        }
        PendingTake::Unknown => return Err(PageError::Expired),
    };
    let now = server.now();
    if pending.expires_at <= now {
        return Err(PageError::Expired);
    }
    let leg = pending.upstream.as_ref().ok_or(PageError::Expired)?;
    // The application the sign-in went to, decided the same way as when
    // it started: by the scope the person granted, or the page's.
    let app = match &pending.flow {
        PendingSignIn::Client(request) => server.upstream.app_for(granted_access(&request.scope)),
        PendingSignIn::Page(_) => server.upstream.page_app(),
    };
    let signed_in = sign_in::finish(server, app, leg, &params, now).await;
    Ok(ReceivedCallback {
        pending,
        signed_in,
        app,
        now,
    })
}
