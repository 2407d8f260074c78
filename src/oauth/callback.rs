//! `/oauth/callback`: Gitea sends the person back here, for either flow
//! (the stored state says which; the HTTP layer's route switches on it).
//! [`receive`] completes the Gitea leg only in the browser that started it
//! (binding cookie), only once, and only before it expires; otherwise an
//! error page, never a redirect. Then the Gitea code is exchanged
//! (`sign_in::finish`). For an MCP client's authorization,
//! [`complete_authorization`] stores the grant with the Gitea tokens
//! encrypted and sends our own single-use code to the client with `state`
//! and `iss`; a page sign-in becomes a page session (`pages::session`).

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use super::OAuthServer;
use super::authorize::error_redirect;
use super::error::ErrorCode;
use super::events::OAuthEvent;
use super::id_token::IdTokenError;
use super::params::OAuthParams;
use super::sign_in::{self, UpstreamOutcome};
use super::tokens::{CODE_TTL, new_token, random_value};
use super::upstream::GiteaUser;
use crate::page_kit::{ErrorPage, with_page_headers};
use crate::store::{
    AuthCodeRecord, GiteaTokens, GrantRecord, PendingAuthorization, PendingTake, hash_secret,
};

fn error_page(status: StatusCode, title: &'static str, message: &str) -> ErrorPage {
    ErrorPage::new(status, title, message)
}

/// Gitea's redirect, received: the pending sign-in it completes and
/// Gitea's answer (tokens and user, or why not).
pub struct ReceivedCallback {
    pub pending: PendingAuthorization,
    pub signed_in: Result<(GiteaTokens, GiteaUser), UpstreamOutcome>,
    pub now: i64,
}

const RESTART: &str =
    "This sign-in is unknown, expired or already completed. Start again from your application.";

/// The Gitea leg of `GET /oauth/callback` with `query`, for either flow.
pub async fn receive(
    server: &OAuthServer,
    query: Option<String>,
    headers: &HeaderMap,
) -> Result<ReceivedCallback, ErrorPage> {
    let params = OAuthParams::parse(query.unwrap_or_default().as_bytes())
        .map_err(|err| error_page(StatusCode::BAD_REQUEST, "Invalid sign-in", &err.to_string()))?;
    let Some(state) = params.get("state") else {
        return Err(error_page(
            StatusCode::BAD_REQUEST,
            "Invalid sign-in",
            RESTART,
        ));
    };
    // The binding cookie is checked by the take itself: a callback from
    // another browser leaves the pending sign-in to the one that approved.
    let taken = server
        .store
        .take_pending_by_upstream_state(
            &hash_secret(state),
            &sign_in::binding_hash(server, headers),
        )
        .await;
    let pending = match taken {
        Ok(PendingTake::Taken(p)) => *p,
        Ok(PendingTake::OtherBrowser) => {
            tracing::warn!("callback without the approving browser's binding cookie");
            return Err(error_page(
                StatusCode::FORBIDDEN,
                "Sign-in refused",
                "This sign-in was started in another browser. Start again from where you began.",
            ));
        }
        Ok(PendingTake::Unknown) => {
            return Err(error_page(
                StatusCode::BAD_REQUEST,
                "Sign-in expired",
                RESTART,
            ));
        }
        Err(err) => {
            tracing::error!(error = %err, "callback state lookup failed");
            return Err(error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again later",
                "The sign-in could not be completed.",
            ));
        }
    };
    let now = server.now();
    if pending.expires_at <= now {
        return Err(error_page(
            StatusCode::BAD_REQUEST,
            "Sign-in expired",
            RESTART,
        ));
    }
    let Some(leg) = &pending.upstream else {
        return Err(error_page(
            StatusCode::BAD_REQUEST,
            "Sign-in expired",
            RESTART,
        ));
    };
    let signed_in = sign_in::finish(server, leg, &params, now).await;
    Ok(ReceivedCallback {
        pending,
        signed_in,
        now,
    })
}

/// The client-facing half: from Gitea's answer to our code at the client.
pub async fn complete_authorization(
    server: &OAuthServer,
    pending: &PendingAuthorization,
    signed_in: Result<(GiteaTokens, GiteaUser), UpstreamOutcome>,
    now: i64,
) -> Response {
    let to_client = |code: ErrorCode, description: &str| {
        error_redirect(
            &server.config.issuer,
            &pending.redirect_uri,
            pending.state.as_deref(),
            code,
            description,
        )
    };
    let (gitea, user) = match signed_in {
        Ok(pair) => pair,
        Err(UpstreamOutcome::Denied) => {
            return to_client(ErrorCode::AccessDenied, "the user denied access at Gitea");
        }
        Err(UpstreamOutcome::Failed) => {
            return to_client(
                ErrorCode::ServerError,
                "the Gitea sign-in could not be completed",
            );
        }
        Err(UpstreamOutcome::IdTokenRefused(err)) => return id_token_refused(err),
    };

    let (grant, record, code) = sign_in_records(pending, &user, gitea, now);
    match server.store.store_authorization(&grant, &record, now).await {
        Ok(evicted) if !evicted.is_empty() => {
            tracing::info!(login = %user.login, evicted = evicted.len(), "grants over the per-user cap were revoked");
        }
        Ok(_) => {}
        Err(err) => {
            tracing::error!(error = %err, "the grant could not be stored");
            return to_client(
                ErrorCode::TemporarilyUnavailable,
                "the sign-in could not be stored; try again later",
            );
        }
    }
    tracing::info!(login = %user.login, client_id = %pending.client_id, "authorization code issued");
    server
        .record(OAuthEvent::CodeIssued {
            login: &user.login,
            client_id: &pending.client_id,
        })
        .await;

    let mut pairs = vec![("code", code.as_str())];
    if let Some(state) = &pending.state {
        pairs.push(("state", state.as_str()));
    }
    pairs.push(("iss", server.config.issuer.as_str()));
    let target = super::redirect_uri::with_query(&pending.redirect_uri, &pairs);
    with_page_headers(Redirect::to(&target).into_response())
}

/// The page for a sign-in whose Gitea ID token was missing or did not
/// verify: nothing was stored, and no code goes to the client.
pub fn id_token_refused(err: IdTokenError) -> Response {
    ErrorPage::new(
        StatusCode::BAD_GATEWAY,
        "Sign-in refused",
        format!("{err}. Nothing was stored; start again from your application."),
    )
    .into_response()
}

/// What a completed sign-in stores: the grant (with the user's Gitea
/// tokens), our single-use code bound to the request, and the code itself.
fn sign_in_records(
    pending: &PendingAuthorization,
    user: &GiteaUser,
    gitea: GiteaTokens,
    now: i64,
) -> (GrantRecord, AuthCodeRecord, String) {
    let grant = GrantRecord {
        id: random_value(),
        login: user.login.clone(),
        client_id: pending.client_id.clone(),
        scope: pending.scope.clone(),
        resource: pending.resource.clone(),
        gitea,
        gitea_subject: Some(user.subject.clone()),
        gitea_tokens_version: 0,
        created_at: now,
        activated_at: None,
        last_used_at: None,
        revoked_at: None,
    };
    let code = new_token();
    let record = AuthCodeRecord {
        code_hash: hash_secret(&code),
        grant_id: grant.id.clone(),
        client_id: pending.client_id.clone(),
        redirect_uri: pending.redirect_uri.clone(),
        code_challenge: pending.code_challenge.clone(),
        resource: pending.resource.clone(),
        scope: pending.scope.clone(),
        created_at: now,
        expires_at: now + CODE_TTL,
        redeemed_at: None,
    };
    (grant, record, code)
}
