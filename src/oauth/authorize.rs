//! `/authorize` and the consent step. The request is checked in the order
//! that keeps redirects safe: client and redirect URI first (any problem
//! there is an error page, never a redirect), then the rest (problems are
//! redirected back to the client as RFC 6749 errors). A valid request is
//! parked and the consent page shown; approval (CSRF double submit) sets
//! the browser-binding cookie and sends the user to Gitea.

use std::sync::Arc;

use askama::Template;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use cookie::SameSite;
use subtle::ConstantTimeEq;

use super::client_metadata::is_metadata_document_id;
use super::error::ErrorCode;
use super::events::OAuthEvent;
use super::params::OAuthParams;
use super::pkce::is_valid_challenge;
use super::redirect_uri::{
    is_allowlisted, matches_registered, redirects_errors_automatically, with_query,
};
use super::scope_text::describe_gitea_scope;
use super::sign_in::{UpstreamStart, is_random_value};
use super::tokens::{PENDING_TTL, random_value};
use super::{OAuthServer, SCOPE};
use crate::page_kit::cookies::{read_cookie, set_cookie};
use crate::page_kit::host_of;
use crate::page_kit::{
    ErrorPage, form_origin_allowed, render_page, visible_text, with_page_headers,
};
use crate::store::{
    ClientRecord, PendingAuthorization, PendingFlow, Registration, StoreError, hash_secret,
};

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
    /// Each granular scope asked for, with what it allows.
    gitea_scopes: Vec<(String, String)>,
    /// The MCP URL the tokens will work at, and whether it only reads.
    mcp_url: String,
    read_only: bool,
    request_id: String,
    csrf_token: String,
}

fn bad_request(title: &'static str, message: impl Into<String>) -> Response {
    refused(title, message).into_response()
}

fn refused(title: &'static str, message: impl Into<String>) -> ErrorPage {
    ErrorPage::new(StatusCode::BAD_REQUEST, title, message)
}

fn unavailable_page() -> ErrorPage {
    ErrorPage::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "Try again later",
        "The server cannot take this sign-in right now.",
    )
}

fn unavailable() -> Response {
    unavailable_page().into_response()
}

/// An RFC 6749 §4.1.2.1 error redirect to a verified redirect URI.
pub fn error_redirect(
    issuer: &str,
    redirect_uri: &str,
    state: Option<&str>,
    code: ErrorCode,
    description: &str,
) -> Response {
    let url = error_redirect_url(issuer, redirect_uri, state, code, description);
    with_page_headers(Redirect::to(&url).into_response())
}

/// The URL of an error redirect: `redirect_uri` with `error`,
/// `error_description`, `state` (if any) and `iss`.
fn error_redirect_url(
    issuer: &str,
    redirect_uri: &str,
    state: Option<&str>,
    code: ErrorCode,
    description: &str,
) -> String {
    let mut pairs = vec![("error", code.as_str()), ("error_description", description)];
    if let Some(state) = state {
        pairs.push(("state", state));
    }
    pairs.push(("iss", issuer));
    with_query(redirect_uri, &pairs)
}

/// The authorization request, checked (RFC 6749 §4.1.1, RFC 7636, RFC
/// 8707): what gets parked once the client and redirect URI are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizeRequest {
    pub code_challenge: String,
    /// The canonical resource: one of our MCP URLs.
    pub resource: String,
    pub state: Option<String>,
}

/// Checks the parameters an error may be redirected for; the error code
/// and description otherwise. Pure.
pub fn check_authorize_request(
    config: &super::OAuthConfig,
    params: &OAuthParams,
) -> Result<AuthorizeRequest, (ErrorCode, &'static str)> {
    if params.get("response_type") != Some("code") {
        return Err((
            ErrorCode::UnsupportedResponseType,
            "response_type must be code",
        ));
    }
    let Some(challenge) = params.get("code_challenge") else {
        return Err((
            ErrorCode::InvalidRequest,
            "PKCE is required: send code_challenge with code_challenge_method=S256",
        ));
    };
    if params.get("code_challenge_method") != Some("S256") {
        return Err((
            ErrorCode::InvalidRequest,
            "code_challenge_method must be S256",
        ));
    }
    if !is_valid_challenge(challenge) {
        return Err((
            ErrorCode::InvalidRequest,
            "code_challenge must be a base64url SHA-256 digest",
        ));
    }
    let Some(resource) = config.canonical_resource(params.get("resource")) else {
        return Err((
            ErrorCode::InvalidTarget,
            "resource must be one of this server's MCP endpoints",
        ));
    };
    let scope = params.get("scope").unwrap_or(SCOPE);
    if scope.split(' ').any(|s| s != SCOPE) {
        return Err((ErrorCode::InvalidScope, "the only scope is `gitea`"));
    }
    let state = params.get("state");
    if state.is_some_and(|s| s.len() > 2048) {
        return Err((ErrorCode::InvalidRequest, "state is too long"));
    }
    Ok(AuthorizeRequest {
        code_challenge: challenge.to_owned(),
        resource,
        state: state.map(str::to_owned),
    })
}

/// `GET /authorize`: client and redirect URI first (problems are shown on
/// a page), then the request (problems go back to the client), then the
/// request is parked and the consent page shown.
pub async fn authorize(
    State(server): State<Arc<OAuthServer>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let params = OAuthParams::parse(query.unwrap_or_default().as_bytes())
        .map_err(|err| bad_request("Invalid sign-in request", err.to_string()))?;
    let client = find_client(&server, params.get("client_id"))
        .await
        .map_err(IntoResponse::into_response)?;
    let redirect_uri = choose_redirect_uri(&server, &client, params.get("redirect_uri"))
        .map_err(IntoResponse::into_response)?;
    let request = check_authorize_request(&server.config, &params).map_err(|(code, why)| {
        authorize_error(&server, &redirect_uri, params.get("state"), code, why)
    })?;
    // One CSRF cookie per browser, reused across tabs so that two consent
    // pages do not invalidate each other.
    let secure = server.config.secure_cookies;
    let csrf_token = read_cookie(&headers, CSRF_COOKIE, secure)
        .filter(|v| is_random_value(v))
        .unwrap_or_else(random_value);
    let request_id = park(&server, &client, &redirect_uri, &request, &csrf_token).await?;
    let read_only = request
        .resource
        .ends_with(&format!("/{}", crate::surface::READONLY_SUFFIX));
    let page = ConsentPage {
        client_name: client
            .client_name
            .as_deref()
            .map(visible_text)
            .unwrap_or_else(|| "An unnamed application".into()),
        redirect_host: host_of(&redirect_uri),
        redirect_uri,
        registration: match client.registration {
            Registration::Dynamic => "self-registered (dynamic client registration)",
            Registration::MetadataDocument => "described by its own metadata document",
        },
        gitea_url: server.upstream.gitea_base_url().to_owned(),
        gitea_scopes: server
            .upstream
            .scopes()
            .iter()
            .map(|scope| (scope.clone(), describe_gitea_scope(scope)))
            .collect(),
        mcp_url: request.resource,
        read_only,
        request_id,
        csrf_token: csrf_token.clone(),
    };
    let mut response = render_page(StatusCode::OK, &page);
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

/// An error of a request whose redirect URI is verified: sent back to the
/// client at once where that cannot be an open redirector (loopback,
/// private-use scheme, an allowlist), else shown on a page with a link.
fn authorize_error(
    server: &OAuthServer,
    redirect_uri: &str,
    state: Option<&str>,
    code: ErrorCode,
    description: &str,
) -> Response {
    let issuer = &server.config.issuer;
    if redirects_errors_automatically(redirect_uri, &server.config.redirect_allowlist) {
        return error_redirect(issuer, redirect_uri, state, code, description);
    }
    let location = error_redirect_url(issuer, redirect_uri, state, code, description);
    ErrorPage::new(
        StatusCode::BAD_REQUEST,
        "The application's sign-in request is not valid",
        format!("{description} ({}).", code.as_str()),
    )
    .with_continue_link(location, host_of(redirect_uri))
    .into_response()
}

/// Parks the checked request until the consent decision; its id.
async fn park(
    server: &OAuthServer,
    client: &ClientRecord,
    redirect_uri: &str,
    request: &AuthorizeRequest,
    csrf_token: &str,
) -> Result<String, Response> {
    let now = server.now();
    let request_id = random_value();
    let pending = PendingAuthorization {
        id_hash: hash_secret(&request_id),
        flow: PendingFlow::Authorize,
        client_id: client.client_id.clone(),
        redirect_uri: redirect_uri.to_owned(),
        state: request.state.clone(),
        code_challenge: request.code_challenge.clone(),
        resource: request.resource.clone(),
        scope: SCOPE.to_owned(),
        csrf_hash: hash_secret(csrf_token),
        created_at: now,
        expires_at: now + PENDING_TTL,
        upstream: None,
    };
    match server.store.insert_pending(&pending, now).await {
        Ok(()) => Ok(request_id),
        Err(StoreError::Full { .. }) => Err(unavailable()),
        Err(err) => {
            tracing::error!(error = %err, "a pending authorization could not be stored");
            Err(unavailable())
        }
    }
}

/// The client named by `client_id`: a registered one, or a metadata
/// document. Unknown → error page (never a redirect).
async fn find_client(
    server: &OAuthServer,
    client_id: Option<&str>,
) -> Result<ClientRecord, ErrorPage> {
    let Some(client_id) = client_id else {
        return Err(refused(
            "Invalid sign-in request",
            "The request does not name a client.",
        ));
    };
    if is_metadata_document_id(client_id) {
        return server
            .metadata_documents
            .resolve(server, client_id)
            .await
            .map_err(|err| refused("Unknown application", err.to_string()));
    }
    match server.store.get_client(client_id).await {
        Ok(Some(client)) => Ok(client),
        Ok(None) => Err(refused(
            "Unknown application",
            "This application is not registered with this server. Remove and add the connector again.",
        )),
        Err(err) => {
            tracing::error!(error = %err, "client lookup failed");
            Err(unavailable_page())
        }
    }
}

/// The redirect URI to use: the presented one when it matches a registered
/// one (and the allowlist), or the only registered one when none is given.
fn choose_redirect_uri(
    server: &OAuthServer,
    client: &ClientRecord,
    presented: Option<&str>,
) -> Result<String, ErrorPage> {
    let chosen = match presented {
        Some(uri)
            if client
                .redirect_uris
                .iter()
                .any(|r| matches_registered(uri, r)) =>
        {
            uri.to_owned()
        }
        Some(_) => {
            return Err(refused(
                "Invalid redirect",
                "The redirect URI is not registered for this application.",
            ));
        }
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => {
            return Err(refused(
                "Invalid redirect",
                "The request must name one of the application's redirect URIs.",
            ));
        }
    };
    if !is_allowlisted(&chosen, &server.config.redirect_allowlist) {
        return Err(refused(
            "Invalid redirect",
            "This server does not allow that redirect URI.",
        ));
    }
    Ok(chosen)
}

/// `POST /authorize/consent`: the user's decision.
pub async fn consent(
    State(server): State<Arc<OAuthServer>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !form_origin_allowed(&headers, &server.config.issuer) {
        return ErrorPage::new(
            StatusCode::FORBIDDEN,
            "Request refused",
            "The form was posted from another site.",
        )
        .into_response();
    }
    let params = match OAuthParams::parse(&body) {
        Ok(p) => p,
        Err(err) => return bad_request("Invalid form", err.to_string()),
    };
    let (Some(request_id), Some(form_csrf), Some(decision)) = (
        params.get("request_id"),
        params.get("csrf_token"),
        params.get("decision"),
    ) else {
        return bad_request("Invalid form", "The consent form is incomplete.");
    };
    let now = server.now();
    let id_hash = hash_secret(request_id);
    let pending = match server.store.get_pending(&id_hash, now).await {
        Ok(Some(p)) if p.upstream.is_none() => p,
        Ok(_) => {
            return bad_request(
                "Sign-in expired",
                "This sign-in request is unknown, expired or already answered. Start again from your application.",
            );
        }
        Err(err) => {
            tracing::error!(error = %err, "pending lookup failed");
            return unavailable();
        }
    };
    let secure = server.config.secure_cookies;
    let cookie_csrf = read_cookie(&headers, CSRF_COOKIE, secure).unwrap_or_default();
    let csrf_ok: bool = cookie_csrf.as_bytes().ct_eq(form_csrf.as_bytes()).into();
    let bound: bool = hash_secret(form_csrf)
        .as_bytes()
        .ct_eq(pending.csrf_hash.as_bytes())
        .into();
    if !(csrf_ok && bound) {
        return ErrorPage::new(
            StatusCode::FORBIDDEN,
            "Request refused",
            "The consent form's security token did not match. Start again from your application.",
        )
        .into_response();
    }

    match decision {
        "deny" => deny(&server, &pending, &id_hash).await,
        "approve" => approve(&server, &headers, &pending, &id_hash, now).await,
        _ => bad_request("Invalid form", "The decision is not understood."),
    }
}

/// The person said no: the request is dropped and the client told
/// `access_denied`.
async fn deny(server: &OAuthServer, pending: &PendingAuthorization, id_hash: &str) -> Response {
    if let Err(err) = server.store.delete_pending(id_hash).await {
        tracing::error!(error = %err, "pending delete failed");
        return unavailable();
    }
    tracing::info!(client_id = %pending.client_id, "consent denied");
    server
        .record(OAuthEvent::ConsentDenied {
            client_id: &pending.client_id,
        })
        .await;
    error_redirect(
        &server.config.issuer,
        &pending.redirect_uri,
        pending.state.as_deref(),
        ErrorCode::AccessDenied,
        "the user denied the request",
    )
}

async fn approve(
    server: &OAuthServer,
    headers: &HeaderMap,
    pending: &PendingAuthorization,
    id_hash: &str,
    now: i64,
) -> Response {
    let start = UpstreamStart::new(server, headers);
    match server.store.approve_pending(id_hash, &start.leg, now).await {
        Ok(true) => {}
        Ok(false) => {
            return bad_request(
                "Sign-in expired",
                "This sign-in request is unknown, expired or already answered. Start again from your application.",
            );
        }
        Err(err) => {
            tracing::error!(error = %err, "consent approval could not be stored");
            return unavailable();
        }
    }
    tracing::info!(client_id = %pending.client_id, "consent approved");
    server
        .record(OAuthEvent::ConsentApproved {
            client_id: &pending.client_id,
        })
        .await;
    start.redirect(server.config.secure_cookies)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(query: &str) -> Result<AuthorizeRequest, (ErrorCode, &'static str)> {
        let params = OAuthParams::parse(query.as_bytes()).unwrap();
        check_authorize_request(&super::super::test_config(), &params)
    }

    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    #[test]
    fn a_complete_request_passes_with_the_canonical_resource() {
        let request = check(&format!(
            "response_type=code&code_challenge={CHALLENGE}&code_challenge_method=S256\
             &resource=https%3A%2F%2Fmcp.example.com%2Fmcp%2Fx%2Fraw%2Cissue&state=s"
        ))
        .unwrap();
        assert_eq!(request.resource, "https://mcp.example.com/mcp/x/issue,raw");
        assert_eq!(request.state.as_deref(), Some("s"));
    }

    #[test]
    fn pkce_is_required_with_s256() {
        assert_eq!(
            check("response_type=code").unwrap_err().0,
            ErrorCode::InvalidRequest
        );
        let plain =
            format!("response_type=code&code_challenge={CHALLENGE}&code_challenge_method=plain");
        assert_eq!(check(&plain).unwrap_err().0, ErrorCode::InvalidRequest);
    }

    #[test]
    fn a_foreign_resource_is_invalid_target() {
        let query = format!(
            "response_type=code&code_challenge={CHALLENGE}&code_challenge_method=S256\
             &resource=https%3A%2F%2Fother.example%2Fmcp"
        );
        assert_eq!(check(&query).unwrap_err().0, ErrorCode::InvalidTarget);
    }

    #[test]
    fn only_the_gitea_scope_and_only_the_code_response_type() {
        let base = format!("code_challenge={CHALLENGE}&code_challenge_method=S256");
        assert_eq!(
            check(&format!("response_type=token&{base}")).unwrap_err().0,
            ErrorCode::UnsupportedResponseType
        );
        assert_eq!(
            check(&format!("response_type=code&{base}&scope=admin"))
                .unwrap_err()
                .0,
            ErrorCode::InvalidScope
        );
    }
}
