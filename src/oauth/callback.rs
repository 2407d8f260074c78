//! `/oauth/callback`: Gitea sends the user back here. The sign-in completes
//! only in the browser that approved it (binding cookie), only once, and
//! only before it expires; otherwise an error page, never a redirect. Then
//! the Gitea code is exchanged (confidential client: secret and verifier),
//! the user's login read, the grant stored with the Gitea tokens encrypted,
//! and our own single-use code sent to the client with `state` and `iss`.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use subtle::ConstantTimeEq;

use super::OAuthServer;
use super::authorize::{BINDING_COOKIE, error_redirect};
use super::error::ErrorCode;
use super::params::OAuthParams;
use super::tokens::{CODE_TTL, new_token, random_value};
use super::upstream::UpstreamAuthError;
use crate::pages::cookies::read_cookie;
use crate::pages::{ErrorPage, with_page_headers};
use crate::store::{AuthCodeRecord, GrantRecord, PendingAuthorization, PendingFlow, hash_secret};

fn error_page(status: StatusCode, title: &'static str, message: &str) -> Response {
    ErrorPage::new(status, title, message).into_response()
}

const RESTART: &str =
    "This sign-in is unknown, expired or already completed. Start again from your application.";

/// `GET /oauth/callback`.
pub async fn callback(
    State(server): State<Arc<OAuthServer>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let params = match OAuthParams::parse(query.unwrap_or_default().as_bytes()) {
        Ok(p) => p,
        Err(err) => {
            return error_page(StatusCode::BAD_REQUEST, "Invalid sign-in", &err.to_string());
        }
    };
    let Some(state) = params.get("state") else {
        return error_page(StatusCode::BAD_REQUEST, "Invalid sign-in", RESTART);
    };
    let pending = match server
        .store
        .take_pending_by_upstream_state(&hash_secret(state))
        .await
    {
        Ok(Some(p)) => p,
        Ok(None) => return error_page(StatusCode::BAD_REQUEST, "Sign-in expired", RESTART),
        Err(err) => {
            tracing::error!(error = %err, "callback state lookup failed");
            return error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again later",
                "The sign-in could not be completed.",
            );
        }
    };
    let now = server.now();
    if pending.expires_at <= now {
        return error_page(StatusCode::BAD_REQUEST, "Sign-in expired", RESTART);
    }
    let Some(leg) = &pending.upstream else {
        return error_page(StatusCode::BAD_REQUEST, "Sign-in expired", RESTART);
    };
    let binding =
        read_cookie(&headers, BINDING_COOKIE, server.config.secure_cookies).unwrap_or_default();
    let bound: bool = hash_secret(&binding)
        .as_bytes()
        .ct_eq(leg.binding_hash.as_bytes())
        .into();
    if binding.is_empty() || !bound {
        tracing::warn!(client_id = %pending.client_id, "callback without the approving browser's binding cookie");
        return error_page(
            StatusCode::FORBIDDEN,
            "Sign-in refused",
            "This sign-in was started in another browser. Start again from your application.",
        );
    }
    if pending.flow != PendingFlow::Authorize {
        return error_page(StatusCode::BAD_REQUEST, "Sign-in expired", RESTART);
    }
    complete_authorization(&server, &pending, &params, now).await
}

/// The client-facing half: from Gitea's answer to our code at the client.
async fn complete_authorization(
    server: &OAuthServer,
    pending: &PendingAuthorization,
    params: &OAuthParams,
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
    if let Some(error) = params.get("error") {
        return if error == "access_denied" {
            to_client(ErrorCode::AccessDenied, "the user denied access at Gitea")
        } else {
            to_client(ErrorCode::ServerError, "the Gitea sign-in failed")
        };
    }
    let Some(gitea_code) = params.get("code") else {
        return to_client(ErrorCode::ServerError, "the Gitea sign-in failed");
    };
    let verifier = &pending
        .upstream
        .as_ref()
        .expect("checked by the caller")
        .pkce_verifier;
    let gitea = match server
        .upstream
        .exchange_code(gitea_code, verifier, now)
        .await
    {
        Ok(tokens) => tokens,
        Err(err) => {
            log_upstream_failure(err, "code exchange");
            return to_client(
                ErrorCode::ServerError,
                "the Gitea sign-in could not be completed",
            );
        }
    };
    let user = match server.upstream.user(&gitea.access_token).await {
        Ok(user) => user,
        Err(err) => {
            log_upstream_failure(err, "user lookup");
            return to_client(
                ErrorCode::ServerError,
                "the Gitea sign-in could not be completed",
            );
        }
    };

    let grant = GrantRecord {
        id: random_value(),
        login: user.login.clone(),
        client_id: pending.client_id.clone(),
        scope: pending.scope.clone(),
        resource: pending.resource.clone(),
        gitea,
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
    let stored = async {
        let evicted = server.store.insert_grant(&grant, now).await?;
        if !evicted.is_empty() {
            tracing::info!(login = %user.login, evicted = evicted.len(), "grants over the per-user cap were revoked");
        }
        server
            .store
            .record_consent(&user.login, &pending.client_id, &pending.scope, now)
            .await?;
        server.store.insert_code(&record, now).await
    }
    .await;
    if let Err(err) = stored {
        tracing::error!(error = %err, "the grant could not be stored");
        return to_client(
            ErrorCode::TemporarilyUnavailable,
            "the sign-in could not be stored; try again later",
        );
    }
    tracing::info!(login = %user.login, client_id = %pending.client_id, "authorization code issued");

    let mut pairs = vec![("code", code.as_str())];
    if let Some(state) = &pending.state {
        pairs.push(("state", state.as_str()));
    }
    pairs.push(("iss", server.config.issuer.as_str()));
    let target = super::redirect_uri::with_query(&pending.redirect_uri, &pairs);
    with_page_headers(Redirect::to(&target).into_response())
}

fn log_upstream_failure(err: UpstreamAuthError, step: &'static str) {
    match err {
        UpstreamAuthError::InvalidClient => tracing::error!(
            step,
            "Gitea refused GITEA_OAUTH_CLIENT_ID/SECRET; check the OAuth application"
        ),
        other => tracing::warn!(step, error = %other, "Gitea sign-in step failed"),
    }
}
