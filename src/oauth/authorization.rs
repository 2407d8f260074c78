//! An MCP client's authorization (RFC 6749 §4.1 with PKCE, RFC 8707) as
//! protocol operations, the way kanidm's OAuth2 core is written: each takes
//! a typed request and returns what to show or where to send the person,
//! or a typed refusal. No HTTP inside: `authorize` (the handlers) and the
//! callback parse, call and render.
//!
//! 1. [`begin_authorization`]: client and redirect URI first (a problem
//!    there is a page, never a redirect), then the request (a problem goes
//!    back to the client), then the request is parked and the consent view
//!    returned.
//! 2. [`decide_consent`]: the person's decision, with the CSRF double
//!    submit; approval starts the trip to Gitea, denial is redirected to
//!    the client as `access_denied`.
//! 3. [`complete_authorization`]: Gitea's answer becomes a grant and our
//!    single-use code at the client, or an error redirect.

pub use super::authorize_request::{
    AuthorizeQuery, AuthorizeRefusal, AuthorizeRequest, ErrorRedirect, check_authorize_request,
};
use super::client_metadata::is_metadata_document_id;
use super::error::ErrorCode;
use super::events::OAuthEvent;
use super::params::OAuthParams;
use super::redirect_uri::{
    is_allowlisted, matches_registered, redirects_errors_automatically, with_query,
};
use super::scopes::scope_of;
use super::sign_in::{UpstreamOutcome, UpstreamStart, is_random_value};
use super::tokens::{CODE_TTL, PENDING_TTL, new_token};
use super::upstream::GiteaUser;
use super::{OAuthConfig, OAuthServer};
use crate::identity::Access;
use crate::page_kit::{PageError, host_of, visible_text};
use crate::random::random_value;
use crate::store::{
    AuthCodeRecord, ClientAuthorization, ClientRecord, GiteaApp, GiteaTokens, GrantRecord,
    PendingAuthorization, PendingSignIn, Registration, StoreError, UnixTime, hash_secret,
};

/// What the consent page shows, and the request it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsentView {
    pub client_id: String,
    /// The client's name, with characters that hide text shown.
    pub client_name: String,
    pub redirect_uri: String,
    pub redirect_host: String,
    pub registration: Registration,
    /// The MCP URL the tokens will work at, and whether it only reads
    /// (the URL or the server's `READ_ONLY`): then there is no choice.
    pub mcp_url: String,
    pub read_only: bool,
    /// What the client asked for: reading, or writing too (a step-up).
    /// The page preselects it; without a scope, reading.
    pub asked: Access,
    /// The parked request's id, carried by the consent form.
    pub request_id: String,
    /// The CSRF token of the form and its cookie (the browser's, reused).
    pub csrf_token: String,
}

/// `GET /authorize`: checks the client, its redirect URI and the request,
/// parks it, and returns the consent view. `csrf_cookie`: the browser's
/// CSRF cookie, reused so two consent pages do not invalidate each other.
pub async fn begin_authorization(
    server: &OAuthServer,
    query: &AuthorizeQuery,
    csrf_cookie: Option<&str>,
) -> Result<ConsentView, AuthorizeRefusal> {
    let client = find_client(server, query.client_id.as_deref()).await?;
    let redirect_uri = choose_redirect_uri(&server.config, &client, query.redirect_uri.as_deref())?;
    let request = check_authorize_request(&server.config, query).map_err(|(code, why)| {
        let mut redirect = ErrorRedirect::new(
            &server.config.issuer,
            &redirect_uri,
            query.state.as_deref(),
            code,
            why,
        );
        redirect.automatic =
            redirects_errors_automatically(&redirect_uri, &server.config.redirect_allowlist);
        if redirect.automatic {
            AuthorizeRefusal::ToClient(redirect)
        } else {
            AuthorizeRefusal::Page(redirect.page(why, code))
        }
    })?;
    let csrf_token = csrf_cookie
        .filter(|v| is_random_value(v))
        .map_or_else(random_value, str::to_owned);
    let request_id = park(server, &client, &redirect_uri, &request, &csrf_token).await?;
    let read_only = !url_allows_writes(&server.config, &request.resource);
    Ok(ConsentView {
        client_id: client.client_id.clone(),
        client_name: client
            .client_name
            .as_deref()
            .map_or_else(|| "An unnamed application".into(), visible_text),
        redirect_host: host_of(&redirect_uri),
        redirect_uri,
        registration: client.registration,
        mcp_url: request.resource,
        read_only,
        asked: if read_only {
            Access::Read
        } else {
            request.access
        },
        request_id,
        csrf_token,
    })
}

/// Parks the checked request until the consent decision; its id.
async fn park(
    server: &OAuthServer,
    client: &ClientRecord,
    redirect_uri: &str,
    request: &AuthorizeRequest,
    csrf_token: &str,
) -> Result<String, StoreError> {
    let now = server.now();
    let request_id = random_value();
    let pending = PendingAuthorization {
        id_hash: hash_secret(&request_id),
        flow: PendingSignIn::Client(ClientAuthorization {
            client_id: client.client_id.clone(),
            redirect_uri: redirect_uri.to_owned(),
            state: request.state.clone(),
            code_challenge: request.code_challenge.clone(),
            resource: request.resource.clone(),
            scope: scope_of(request.access).to_owned(),
            csrf_hash: hash_secret(csrf_token),
        }),
        created_at: now,
        expires_at: now + PENDING_TTL,
        upstream: None,
    };
    server.store.insert_pending(&pending, now).await?;
    Ok(request_id)
}

/// Whether tokens for the MCP URL `resource` could ever write: not a
/// `/readonly` URL, and not a server with `READ_ONLY`.
pub fn url_allows_writes(config: &OAuthConfig, resource: &str) -> bool {
    !config.server_read_only
        && !resource.ends_with(&format!("/{}", crate::surface::READONLY_SUFFIX))
}

/// The client named by `client_id`: a registered one, or a metadata
/// document. Unknown → a page (never a redirect).
async fn find_client(
    server: &OAuthServer,
    client_id: Option<&str>,
) -> Result<ClientRecord, PageError> {
    let Some(client_id) = client_id else {
        return Err(PageError::invalid(
            "Invalid sign-in request",
            "The request does not name a client.",
        ));
    };
    if is_metadata_document_id(client_id) {
        return server
            .metadata_documents
            .resolve(server, client_id)
            .await
            .map_err(|err| PageError::invalid("Unknown application", err.to_string()));
    }
    match server.store.get_client(client_id).await? {
        Some(client) => Ok(client),
        None => Err(PageError::invalid(
            "Unknown application",
            "This application is not registered with this server. Remove and add the connector again.",
        )),
    }
}

/// The redirect URI to use: the presented one when it matches a registered
/// one (and the allowlist), or the only registered one when none is given.
fn choose_redirect_uri(
    config: &OAuthConfig,
    client: &ClientRecord,
    presented: Option<&str>,
) -> Result<String, PageError> {
    let invalid = |message| PageError::invalid("Invalid redirect", message);
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
            return Err(invalid(
                "The redirect URI is not registered for this application.",
            ));
        }
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => {
            return Err(invalid(
                "The request must name one of the application's redirect URIs.",
            ));
        }
    };
    if !is_allowlisted(&chosen, &config.redirect_allowlist) {
        return Err(invalid("This server does not allow that redirect URI."));
    }
    Ok(chosen)
}

/// The person's answer on the consent page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Deny,
}

/// The consent form, as posted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsentForm {
    pub request_id: String,
    pub csrf_token: String,
    pub decision: Decision,
    /// The person's choice: `access=write` for read and write. Anything
    /// else, or nothing, is read only.
    pub access: Access,
}

impl ConsentForm {
    pub fn parse(body: &[u8]) -> Result<Self, PageError> {
        let params = OAuthParams::parse(body)
            .map_err(|err| PageError::invalid("Invalid form", err.to_string()))?;
        let (Some(request_id), Some(csrf_token), Some(decision)) = (
            params.get("request_id"),
            params.get("csrf_token"),
            params.get("decision"),
        ) else {
            return Err(PageError::invalid(
                "Invalid form",
                "The consent form is incomplete.",
            ));
        };
        let decision = match decision {
            "approve" => Decision::Approve,
            "deny" => Decision::Deny,
            _ => {
                return Err(PageError::invalid(
                    "Invalid form",
                    "The decision is not understood.",
                ));
            }
        };
        let access = match params.get("access") {
            Some("write") => Access::ReadWrite,
            _ => Access::Read,
        };
        Ok(Self {
            request_id: request_id.to_owned(),
            csrf_token: csrf_token.to_owned(),
            decision,
            access,
        })
    }
}

/// Where the consent decision leads.
pub enum ConsentOutcome {
    /// Approved: off to Gitea (the leg is stored).
    ToGitea(UpstreamStart),
    /// Denied: the client hears `access_denied`.
    Denied(ErrorRedirect),
}

/// `POST /authorize/consent`, after the same-origin check: the parked
/// request by its id, the CSRF double submit (the form's token equals the
/// cookie's and is the one the request was parked with), then the
/// decision. `binding_cookie`: the browser's binding value, reused.
pub async fn decide_consent(
    server: &OAuthServer,
    form: &ConsentForm,
    csrf_cookie: Option<&str>,
    binding_cookie: Option<&str>,
) -> Result<ConsentOutcome, PageError> {
    use subtle::ConstantTimeEq;
    let now = server.now();
    let id_hash = hash_secret(&form.request_id);
    let pending = server
        .store
        .get_pending(&id_hash, now)
        .await?
        .filter(|p| p.upstream.is_none())
        .ok_or(PageError::Expired)?;
    let PendingSignIn::Client(request) = &pending.flow else {
        return Err(PageError::Expired);
    };
    let cookie_ok: bool = csrf_cookie
        .unwrap_or_default()
        .as_bytes()
        .ct_eq(form.csrf_token.as_bytes())
        .into();
    let bound: bool = hash_secret(&form.csrf_token)
        .as_str()
        .as_bytes()
        .ct_eq(request.csrf_hash.as_str().as_bytes())
        .into();
    if !(cookie_ok && bound) {
        return Err(PageError::BadToken);
    }
    match form.decision {
        Decision::Deny => {
            if !server.store.delete_pending(&id_hash).await? {
                return Err(PageError::Expired);
            }
            tracing::info!(client_id = %request.client_id, "consent denied");
            server
                .record(OAuthEvent::ConsentDenied {
                    client_id: &request.client_id,
                })
                .await;
            Ok(ConsentOutcome::Denied(ErrorRedirect::new(
                &server.config.issuer,
                &request.redirect_uri,
                request.state.as_deref(),
                ErrorCode::AccessDenied,
                "the user denied the request",
            )))
        }
        Decision::Approve => {
            // The person's choice, within what the URL allows: a read-only
            // URL only ever grants reading, whatever the form says.
            let granted = if url_allows_writes(&server.config, &request.resource) {
                form.access
            } else {
                Access::Read
            };
            let app = server.upstream.app_for(granted);
            let start = UpstreamStart::new(server, app, binding_cookie);
            if !server
                .store
                .approve_pending(&id_hash, &start.leg, scope_of(granted), now)
                .await?
            {
                return Err(PageError::Expired);
            }
            tracing::info!(client_id = %request.client_id, access = ?granted, "consent approved");
            server
                .record(OAuthEvent::ConsentApproved {
                    client_id: &request.client_id,
                    scope: scope_of(granted),
                })
                .await;
            Ok(ConsentOutcome::ToGitea(start))
        }
    }
}

/// The client-facing half of the callback: from Gitea's answer to our code
/// at the client (the URL to send the browser to), or an error for it.
pub async fn complete_authorization(
    server: &OAuthServer,
    request: &ClientAuthorization,
    signed_in: Result<(GiteaTokens, GiteaUser), UpstreamOutcome>,
    app: GiteaApp,
    now: UnixTime,
) -> Result<String, AuthorizeRefusal> {
    let to_client = |code: ErrorCode, description: &str| {
        AuthorizeRefusal::ToClient(ErrorRedirect::new(
            &server.config.issuer,
            &request.redirect_uri,
            request.state.as_deref(),
            code,
            description,
        ))
    };
    let (gitea, user) = match signed_in {
        Ok(pair) => pair,
        Err(UpstreamOutcome::Denied) => {
            return Err(to_client(
                ErrorCode::AccessDenied,
                "the user denied access at Gitea",
            ));
        }
        Err(UpstreamOutcome::Failed) => {
            return Err(to_client(
                ErrorCode::ServerError,
                "the Gitea sign-in could not be completed",
            ));
        }
        Err(UpstreamOutcome::IdTokenRefused(err)) => {
            return Err(AuthorizeRefusal::Page(PageError::IdTokenRefused(
                err.to_string(),
            )));
        }
    };
    let (grant, record, code) = sign_in_records(request, &user, (gitea, app), now);
    match server.store.store_authorization(&grant, &record, now).await {
        Ok(evicted) if !evicted.is_empty() => {
            tracing::info!(login = %user.login, evicted = evicted.len(), "grants over the per-user cap were revoked");
        }
        Ok(_) => {}
        Err(StoreError::QuotaSpent { .. }) => {
            tracing::warn!(login = %user.login, "a sign-in refused: the account connected its limit of new clients within the hour");
            server
                .record(OAuthEvent::RegistrationLimited {
                    login: &user.login,
                    client_id: &request.client_id,
                })
                .await;
            return Err(to_client(
                ErrorCode::TemporarilyUnavailable,
                "this account has connected as many new applications as it may within an hour; try again later, or reconnect an application already connected",
            ));
        }
        Err(err) => {
            tracing::error!(error = %err, "the grant could not be stored");
            return Err(to_client(
                ErrorCode::TemporarilyUnavailable,
                "the sign-in could not be stored; try again later",
            ));
        }
    }
    tracing::info!(login = %user.login, client_id = %request.client_id, "authorization code issued");
    server
        .record(OAuthEvent::CodeIssued {
            login: &user.login,
            client_id: &request.client_id,
        })
        .await;
    let mut pairs = vec![("code", code.as_str())];
    if let Some(state) = &request.state {
        pairs.push(("state", state.as_str()));
    }
    pairs.push(("iss", server.config.issuer.as_str()));
    Ok(with_query(&request.redirect_uri, &pairs))
}

/// What a completed sign-in stores: the grant (with the user's Gitea
/// tokens), our single-use code bound to the request, and the code itself.
fn sign_in_records(
    request: &ClientAuthorization,
    user: &GiteaUser,
    (gitea, gitea_app): (GiteaTokens, GiteaApp),
    now: UnixTime,
) -> (GrantRecord, AuthCodeRecord, String) {
    let grant = GrantRecord {
        id: random_value(),
        login: user.login.clone(),
        client_id: request.client_id.clone(),
        scope: request.scope.clone(),
        resource: request.resource.clone(),
        gitea,
        gitea_subject: Some(user.subject.clone()),
        gitea_app,
        gitea_tokens_version: 0,
        redirect_uri: Some(request.redirect_uri.clone()),
        created_at: now,
        activated_at: None,
        last_used_at: None,
        revoked_at: None,
    };
    let code = new_token();
    let record = AuthCodeRecord {
        code_hash: hash_secret(&code),
        grant_id: grant.id.clone(),
        client_id: request.client_id.clone(),
        redirect_uri: request.redirect_uri.clone(),
        code_challenge: request.code_challenge.clone(),
        resource: request.resource.clone(),
        scope: request.scope.clone(),
        created_at: now,
        expires_at: now + CODE_TTL,
        redeemed_at: None,
    };
    (grant, record, code)
}

#[cfg(test)]
#[path = "authorization_tests.rs"]
mod tests;
