//! `/authorize` and the consent step over HTTP: the handlers parse, call
//! the protocol operations of [`super::authorization`], and render (the
//! consent page, a redirect, or a [`PageError`]). The CSRF and binding
//! cookies are read and set here.

use std::sync::Arc;

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Extension, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use cookie::SameSite;

use super::OAuthServer;
use super::authorization::{
    AuthorizeQuery, AuthorizeRefusal, ConsentForm, ConsentOutcome, ConsentView, ErrorRedirect,
    begin_authorization, decide_consent,
};
use super::scope_text::describe_gitea_scope;
use super::sign_in::BINDING_COOKIE;
use super::tokens::PENDING_TTL;
use crate::identity::Access;
use crate::page_kit::cookies::{read_cookie, set_cookie};
use crate::page_kit::{PageError, render_page, with_page_headers};
use crate::policy::view::{PagePolicy, before_sign_in};
use crate::store::Registration;

/// Cookie carrying the consent form's CSRF token (double submit).
pub const CSRF_COOKIE: &str = "aegis_csrf";

#[derive(Template)]
#[template(path = "consent.html")]
struct ConsentPage {
    client_name: String,
    redirect_uri: String,
    redirect_host: String,
    registration: &'static str,
    /// The Gitea instance the application will act on (its base URL).
    gitea_url: String,
    /// The Gitea scopes of a reading and of a writing session, each with
    /// what it allows.
    read_scopes: Vec<(String, String)>,
    write_scopes: Vec<(String, String)>,
    /// Whether reading sessions are held at a read-only Gitea application.
    read_session_is_narrow: bool,
    /// The MCP URL the tokens will work at, and whether it only reads
    /// (then there is no choice to make).
    mcp_url: String,
    read_only: bool,
    /// The client asked for writing: "read and write" is preselected.
    write_asked: bool,
    /// What the operator's policy is known to do to this connection.
    policy: Option<String>,
    request_id: String,
    csrf_token: String,
}

impl IntoResponse for ErrorRedirect {
    /// A redirect to the client, or (when sending it at once could be
    /// abused) a page with the link.
    fn into_response(self) -> Response {
        let failure = crate::oauth::error::OAuthFailure(self.code.as_str());
        let mut response = if self.automatic {
            with_page_headers(Redirect::to(&self.url).into_response())
        } else {
            PageError::ClientRequest {
                message: "The application's request could not be completed.".into(),
                continue_to: (self.url, self.host),
            }
            .into_response()
        };
        response.extensions_mut().insert(failure);
        response
    }
}

impl IntoResponse for AuthorizeRefusal {
    fn into_response(self) -> Response {
        match self {
            Self::Page(page) => page.into_response(),
            Self::ToClient(redirect) => redirect.into_response(),
        }
    }
}

/// `GET /authorize`: the consent page, or why not.
pub async fn authorize(
    State(server): State<Arc<OAuthServer>>,
    Extension(policy): Extension<PagePolicy>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AuthorizeRefusal> {
    let secure = server.config.secure_cookies;
    let query = AuthorizeQuery::parse(query.unwrap_or_default().as_bytes())?;
    let csrf_cookie = read_cookie(&headers, CSRF_COOKIE, secure);
    let view = begin_authorization(&server, &query, csrf_cookie.as_deref()).await?;
    let csrf_token = view.csrf_token.clone();
    let client = crate::policy::ClientUse {
        client_id: &view.client_id,
        redirect_uri: Some(&view.redirect_uri),
    };
    let policy = before_sign_in(&policy, client, &view.mcp_url).await;
    let mut response = render_page(StatusCode::OK, &consent_page(&server, view, policy));
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(
            CSRF_COOKIE,
            &csrf_token,
            secure,
            SameSite::Strict,
            PENDING_TTL,
        ),
    );
    Ok(response)
}

/// The consent page of a view: what the person approves, in words.
fn consent_page(server: &OAuthServer, view: ConsentView, policy: Option<String>) -> ConsentPage {
    ConsentPage {
        client_name: view.client_name,
        redirect_uri: view.redirect_uri,
        redirect_host: view.redirect_host,
        registration: match view.registration {
            Registration::Dynamic => "self-registered (dynamic client registration)",
            Registration::MetadataDocument => "described by its own metadata document",
        },
        gitea_url: server.upstream.gitea_base_url().to_owned(),
        read_scopes: described_scopes(server, Access::Read),
        write_scopes: described_scopes(server, Access::ReadWrite),
        read_session_is_narrow: server.upstream.has_read_app(),
        mcp_url: view.mcp_url,
        read_only: view.read_only,
        write_asked: view.asked.may_write(),
        policy,
        request_id: view.request_id,
        csrf_token: view.csrf_token,
    }
}

/// The Gitea scopes a session with `access` holds, each with its meaning.
fn described_scopes(server: &OAuthServer, access: Access) -> Vec<(String, String)> {
    server
        .upstream
        .scopes(server.upstream.app_for(access))
        .iter()
        .map(|scope| (scope.clone(), describe_gitea_scope(scope)))
        .collect()
}

/// `POST /authorize/consent`: the person's decision (its Origin checked in
/// front of every page, `crate::page_kit::check_origin`).
pub async fn consent(
    State(server): State<Arc<OAuthServer>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, PageError> {
    let secure = server.config.secure_cookies;
    let form = ConsentForm::parse(&body)?;
    let csrf_cookie = read_cookie(&headers, CSRF_COOKIE, secure);
    let binding_cookie = read_cookie(&headers, BINDING_COOKIE, secure);
    Ok(
        match decide_consent(
            &server,
            &form,
            csrf_cookie.as_deref(),
            binding_cookie.as_deref(),
        )
        .await?
        {
            ConsentOutcome::ToGitea(start) => start.redirect(secure),
            ConsentOutcome::Denied(redirect) => redirect.into_response(),
        },
    )
}
