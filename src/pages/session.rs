//! Page sessions: a person signed in to `/account` and `/admin` with
//! Gitea, through the same upstream flow as the OAuth server
//! (`oauth::sign_in`). The session is a random cookie (`HttpOnly`,
//! `SameSite=Lax`, `__Host-` and `Secure` on https) whose hash is stored
//! server-side, so it can be ended; it is never accepted at `/mcp`. Forms
//! carry a CSRF token derived from the session secret.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, Query, Request, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use cookie::SameSite;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::oauth::OAuthServer;
use crate::oauth::params::OAuthParams;
use crate::oauth::sign_in::{BINDING_COOKIE, UpstreamOutcome, UpstreamStart};
use crate::oauth::tokens::PENDING_TTL;
use crate::oauth::upstream::GiteaUser;
use crate::page_kit::cookies::{clear_cookie, read_cookie, set_cookie};
use crate::page_kit::{PageError, with_page_headers};
use crate::random::random_value;
use crate::store::{
    GiteaTokens, PageSession, PendingAuthorization, PendingSignIn, ReturnPage, hash_secret,
};

/// The session cookie.
pub const SESSION_COOKIE: &str = "aegis_session";
/// How long a page session lasts.
pub const PAGE_SESSION_TTL: i64 = 8 * 3600;

/// Where a sign-in may return to: only our own pages (`?next=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ReturnTo {
    #[default]
    Account,
    Admin,
}

impl ReturnTo {
    /// The page the stored sign-in returns to.
    fn page(self) -> ReturnPage {
        match self {
            Self::Account => ReturnPage::Account,
            Self::Admin => ReturnPage::Admin,
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

/// Checks a page form post: a live session and the session's CSRF token
/// (its Origin was checked in front of every page,
/// `crate::page_kit::check_origin`). Returns the person and the form
/// fields.
pub async fn check_form(
    server: &OAuthServer,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(SignedIn, OAuthParams), PageError> {
    let params = OAuthParams::parse(body).map_err(|_| {
        PageError::invalid(
            "Invalid form",
            "The form could not be read. Nothing was changed.",
        )
    })?;
    let person = signed_in(server, headers)
        .await
        .ok_or(PageError::NotSignedIn)?;
    let presented = params.get("csrf_token").unwrap_or_default();
    let ok: bool = presented
        .as_bytes()
        .ct_eq(person.csrf_token.as_bytes())
        .into();
    if !ok {
        return Err(PageError::BadToken);
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
) -> Result<Response, PageError> {
    let now = server.now();
    let secure = server.config().secure_cookies;
    let binding = read_cookie(&headers, BINDING_COOKIE, secure);
    let start = UpstreamStart::new(&server, server.upstream().page_app(), binding.as_deref());
    let pending = PendingAuthorization {
        id_hash: hash_secret(&random_value()),
        flow: PendingSignIn::Page(query.next.page()),
        created_at: now,
        expires_at: now + PENDING_TTL,
        upstream: Some(start.leg.clone()),
    };
    server.store().insert_pending(&pending, now).await?;
    Ok(start.redirect(secure))
}

/// The callback's page half: a signed-in Gitea user becomes a page
/// session, and the browser goes to `next`.
pub async fn complete_sign_in(
    server: &OAuthServer,
    next: ReturnPage,
    signed_in: Result<(GiteaTokens, GiteaUser), UpstreamOutcome>,
    now: i64,
) -> Result<Response, PageError> {
    let (tokens, user) = match signed_in {
        Ok(pair) => pair,
        Err(UpstreamOutcome::Denied) => return Err(PageError::Declined),
        Err(UpstreamOutcome::Failed) => return Err(PageError::UpstreamFailed),
        Err(UpstreamOutcome::IdTokenRefused(err)) => {
            return Err(PageError::IdTokenRefused(err.to_string()));
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
    server.store().insert_page_session(&session, now).await?;
    tracing::info!(login = %user.login, admin = user.is_admin, "signed in to the pages");
    let mut response = with_page_headers(Redirect::to(next.path()).into_response());
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
    Ok(response)
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
        assert_eq!(ReturnTo::Admin.page(), ReturnPage::Admin);
        assert_eq!(ReturnPage::from_path("/admin"), ReturnPage::Admin);
        assert_eq!(
            ReturnPage::from_path("https://evil.example"),
            ReturnPage::Account
        );
    }
}
