//! Page sessions: a person signed in to `/account` and `/admin` with
//! Gitea, through the same upstream flow as the OAuth server
//! (`oauth::sign_in`). The session is a random cookie (`HttpOnly`,
//! `SameSite=Lax`, `__Host-` and `Secure` on https) whose hash is stored
//! server-side, so it can be ended; it is never accepted at `/mcp`. Forms
//! carry a CSRF token derived from the session secret.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use cookie::SameSite;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::oauth::OAuthServer;
use crate::oauth::params::OAuthParams;
use crate::oauth::sign_in::{UpstreamOutcome, UpstreamStart};
use crate::oauth::tokens::{PENDING_TTL, random_value};
use crate::oauth::upstream::GiteaUser;
use crate::page_kit::cookies::{clear_cookie, read_cookie, set_cookie};
use crate::page_kit::{ErrorPage, form_origin_allowed, with_page_headers};
use crate::store::{GiteaTokens, PageSession, PendingAuthorization, PendingFlow, hash_secret};

/// The session cookie.
pub const SESSION_COOKIE: &str = "aegis_session";
/// How long a page session lasts.
pub const PAGE_SESSION_TTL: i64 = 8 * 3600;

/// Where a sign-in may return to: only our own pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ReturnTo {
    #[default]
    Account,
    Admin,
}

impl ReturnTo {
    pub fn path(self) -> &'static str {
        match self {
            Self::Account => "/account",
            Self::Admin => "/admin",
        }
    }

    fn from_path(path: &str) -> Self {
        if path == "/admin" {
            Self::Admin
        } else {
            Self::Account
        }
    }
}

/// The signed-in person of a request, with the form token for its pages.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub session: PageSession,
    pub csrf_token: String,
}

impl SignedIn {
    pub fn login(&self) -> &str {
        &self.session.login
    }
}

/// The CSRF token of a session: derived from its secret cookie value, which
/// a cross-site page can neither read nor guess.
fn csrf_token_for(session_secret: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"aegis-gitea-mcp/page-csrf\0");
    hasher.update(session_secret.as_bytes());
    URL_SAFE_NO_PAD.encode(hasher.finalize())
}

/// The request's page session, if it has a live one.
pub async fn signed_in(server: &OAuthServer, headers: &HeaderMap) -> Option<SignedIn> {
    let secret = read_cookie(headers, SESSION_COOKIE, server.config().secure_cookies)?;
    match server
        .store()
        .get_page_session(&hash_secret(&secret), server.now())
        .await
    {
        Ok(Some(session)) => Some(SignedIn {
            session,
            csrf_token: csrf_token_for(&secret),
        }),
        Ok(None) => None,
        Err(err) => {
            tracing::error!(error = %err, "page session lookup failed");
            None
        }
    }
}

/// Why a page form was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormRefusal {
    CrossSite,
    NotSignedIn,
    BadToken,
    Malformed,
}

impl IntoResponse for FormRefusal {
    fn into_response(self) -> Response {
        let (status, title, message) = match self {
            Self::CrossSite => (
                StatusCode::FORBIDDEN,
                "Request refused",
                "The form was posted from another site. Nothing was changed.",
            ),
            Self::NotSignedIn => (
                StatusCode::UNAUTHORIZED,
                "Signed out",
                "Your session has ended. Sign in again; nothing was changed.",
            ),
            Self::BadToken => (
                StatusCode::FORBIDDEN,
                "Request refused",
                "The form's security token did not match. Reload the page and try again; nothing was changed.",
            ),
            Self::Malformed => (
                StatusCode::BAD_REQUEST,
                "Invalid form",
                "The form could not be read. Nothing was changed.",
            ),
        };
        ErrorPage::new(status, title, message).into_response()
    }
}

/// Checks a page form post: same-origin (or `null`), a live session, and
/// the session's CSRF token. Returns the person and the form fields.
pub async fn check_form(
    server: &OAuthServer,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(SignedIn, OAuthParams), FormRefusal> {
    if !form_origin_allowed(headers, &server.config().issuer) {
        return Err(FormRefusal::CrossSite);
    }
    let params = OAuthParams::parse(body).map_err(|_| FormRefusal::Malformed)?;
    let person = signed_in(server, headers)
        .await
        .ok_or(FormRefusal::NotSignedIn)?;
    let presented = params.get("csrf_token").unwrap_or_default();
    let ok: bool = presented
        .as_bytes()
        .ct_eq(person.csrf_token.as_bytes())
        .into();
    if !ok {
        return Err(FormRefusal::BadToken);
    }
    Ok((person, params))
}

/// A page form that passed [`check_form`], as an extractor: handlers that
/// take it only run for a same-origin post of a signed-in person with the
/// right CSRF token; anything else is answered with the refusal page.
pub struct CheckedForm {
    pub person: SignedIn,
    pub params: OAuthParams,
}

impl FromRequest<Arc<OAuthServer>> for CheckedForm {
    type Rejection = Response;

    async fn from_request(request: Request, server: &Arc<OAuthServer>) -> Result<Self, Response> {
        let headers = request.headers().clone();
        let body = Bytes::from_request(request, server)
            .await
            .map_err(IntoResponse::into_response)?;
        let (person, params) = check_form(server, &headers, &body)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Self { person, params })
    }
}

#[derive(Debug, Deserialize)]
pub struct SignInQuery {
    #[serde(default)]
    next: ReturnTo,
}

/// `GET /account/sign-in?next=account|admin`: off to Gitea.
pub async fn start_sign_in(
    State(server): State<Arc<OAuthServer>>,
    Query(query): Query<SignInQuery>,
    headers: HeaderMap,
) -> Response {
    let now = server.now();
    let start = UpstreamStart::new(&server, &headers);
    // A page sign-in has no client: the pending row only carries the flow,
    // the page to return to, and the upstream leg.
    let pending = PendingAuthorization {
        id_hash: hash_secret(&random_value()),
        flow: PendingFlow::PageSignIn,
        client_id: String::new(),
        redirect_uri: query.next.path().to_owned(),
        state: None,
        code_challenge: String::new(),
        resource: String::new(),
        scope: String::new(),
        csrf_hash: String::new(),
        created_at: now,
        expires_at: now + PENDING_TTL,
        upstream: Some(start.leg.clone()),
    };
    if let Err(err) = server.store().insert_pending(&pending, now).await {
        tracing::warn!(error = %err, "a page sign-in could not be parked");
        return ErrorPage::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "Try again later",
            "The server cannot take this sign-in right now.",
        )
        .into_response();
    }
    start.redirect(server.config().secure_cookies)
}

/// The callback's page half: a signed-in Gitea user becomes a page session.
pub async fn complete_sign_in(
    server: &OAuthServer,
    pending: &PendingAuthorization,
    signed_in: Result<(GiteaTokens, GiteaUser), UpstreamOutcome>,
    now: i64,
) -> Response {
    let (tokens, user) = match signed_in {
        Ok(pair) => pair,
        Err(UpstreamOutcome::Denied) => {
            return ErrorPage::new(
                StatusCode::FORBIDDEN,
                "Sign-in cancelled",
                "You declined the sign-in at Gitea.",
            )
            .into_response();
        }
        Err(UpstreamOutcome::Failed) => {
            return ErrorPage::new(
                StatusCode::BAD_GATEWAY,
                "Sign-in failed",
                "The sign-in at Gitea could not be completed. Try again.",
            )
            .into_response();
        }
        Err(UpstreamOutcome::IdTokenRefused(err)) => {
            return crate::oauth::callback::id_token_refused(err);
        }
    };
    let secret = random_value();
    let session = PageSession {
        id_hash: hash_secret(&secret),
        login: user.login.clone(),
        is_admin: user.is_admin,
        gitea_access_token: tokens.access_token,
        created_at: now,
        expires_at: now + PAGE_SESSION_TTL,
    };
    if let Err(err) = server.store().insert_page_session(&session, now).await {
        tracing::error!(error = %err, "a page session could not be stored");
        return ErrorPage::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "Try again later",
            "The sign-in could not be stored.",
        )
        .into_response();
    }
    tracing::info!(login = %user.login, admin = user.is_admin, "signed in to the pages");
    let target = ReturnTo::from_path(&pending.redirect_uri).path();
    let mut response = with_page_headers(Redirect::to(target).into_response());
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(
            SESSION_COOKIE,
            &secret,
            server.config().secure_cookies,
            SameSite::Lax,
            PAGE_SESSION_TTL,
        ),
    );
    response
}

/// `POST /account/sign-out`.
pub async fn sign_out(
    State(server): State<Arc<OAuthServer>>,
    CheckedForm { person, .. }: CheckedForm,
) -> Response {
    if let Err(err) = server
        .store()
        .delete_page_session(&person.session.id_hash)
        .await
    {
        tracing::error!(error = %err, "sign-out could not be stored");
    }
    tracing::info!(login = %person.login(), "signed out of the pages");
    let mut response = with_page_headers(Redirect::to("/account").into_response());
    response.headers_mut().append(
        header::SET_COOKIE,
        clear_cookie(
            SESSION_COOKIE,
            server.config().secure_cookies,
            SameSite::Lax,
        ),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csrf_tokens_are_bound_to_the_session_secret() {
        assert_eq!(csrf_token_for("a"), csrf_token_for("a"));
        assert_ne!(csrf_token_for("a"), csrf_token_for("b"));
        assert_ne!(csrf_token_for("a"), "a");
    }

    #[test]
    fn sign_ins_return_only_to_our_pages() {
        assert_eq!(ReturnTo::from_path("/admin"), ReturnTo::Admin);
        assert_eq!(
            ReturnTo::from_path("https://evil.example"),
            ReturnTo::Account
        );
    }
}
