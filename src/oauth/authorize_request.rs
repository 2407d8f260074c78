//! `GET /authorize`'s request as typed values, the pure check of the
//! parameters that may be answered by a redirect, and the two ways an
//! authorization is refused: a page for the person, or an RFC 6749
//! §4.1.2.1 error redirect for the client.

use super::OAuthConfig;
use super::error::ErrorCode;
use super::params::OAuthParams;
use super::pkce::is_valid_challenge;
use super::redirect_uri::with_query;
use super::scopes::asked_access;
use crate::identity::Access;
use crate::page_kit::{PageError, host_of};
use crate::store::StoreError;

/// The one response type (RFC 6749 §3.1.1): the authorization code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseType {
    Code,
}

impl ResponseType {
    pub fn parse(value: &str) -> Option<Self> {
        (value == "code").then_some(Self::Code)
    }
}

/// The one PKCE method (RFC 7636): `S256`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChallengeMethod {
    S256,
}

impl ChallengeMethod {
    pub fn parse(value: &str) -> Option<Self> {
        (value == "S256").then_some(Self::S256)
    }
}

/// `GET /authorize`'s parameters, as presented: each read once (a repeated
/// one is refused by [`OAuthParams`]), typed where the protocol has a
/// closed set of values. Checked by [`begin_authorization`], in the order
/// that keeps redirects safe.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizeQuery {
    pub client_id: Option<String>,
    /// Text, not a `Url`: it must equal a registered URI byte for byte
    /// (RFC 9700 §4.1.3), and parsing would normalise it first.
    pub redirect_uri: Option<String>,
    /// `Some(Err(()))`: present, but not one we support.
    pub response_type: Option<Result<ResponseType, ()>>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<Result<ChallengeMethod, ()>>,
    pub resource: Option<String>,
    pub scope: Option<String>,
    pub state: Option<String>,
}

impl AuthorizeQuery {
    /// From the query string.
    pub fn parse(encoded: &[u8]) -> Result<Self, PageError> {
        let params = OAuthParams::parse(encoded)
            .map_err(|err| PageError::invalid("Invalid sign-in request", err.to_string()))?;
        let text = |name: &str| params.get(name).map(str::to_owned);
        Ok(Self {
            client_id: text("client_id"),
            redirect_uri: text("redirect_uri"),
            response_type: params
                .get("response_type")
                .map(|v| ResponseType::parse(v).ok_or(())),
            code_challenge: text("code_challenge"),
            code_challenge_method: params
                .get("code_challenge_method")
                .map(|v| ChallengeMethod::parse(v).ok_or(())),
            resource: text("resource"),
            scope: text("scope"),
            state: text("state"),
        })
    }
}

/// The authorization request, checked: what gets parked once the client
/// and redirect URI are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizeRequest {
    /// What the `scope` asks for: reading, or writing too (a step-up).
    pub access: Access,
    pub code_challenge: String,
    /// The canonical resource: one of our MCP URLs.
    pub resource: String,
    pub state: Option<String>,
}

/// Checks the parameters an error may be redirected for; the error code
/// and description otherwise. Pure.
pub fn check_authorize_request(
    config: &OAuthConfig,
    query: &AuthorizeQuery,
) -> Result<AuthorizeRequest, (ErrorCode, &'static str)> {
    match query.response_type {
        Some(Ok(ResponseType::Code)) => {}
        Some(Err(())) => {
            return Err((
                ErrorCode::UnsupportedResponseType,
                "only response_type=code is supported",
            ));
        }
        None => return Err((ErrorCode::InvalidRequest, "response_type is required")),
    }
    let Some(challenge) = query.code_challenge.as_deref() else {
        return Err((
            ErrorCode::InvalidRequest,
            "code_challenge is required (PKCE S256)",
        ));
    };
    if query.code_challenge_method != Some(Ok(ChallengeMethod::S256)) {
        return Err((
            ErrorCode::InvalidRequest,
            "code_challenge_method must be S256",
        ));
    }
    if !is_valid_challenge(challenge) {
        return Err((ErrorCode::InvalidRequest, "code_challenge is malformed"));
    }
    let Ok(access) = asked_access(query.scope.as_deref()) else {
        return Err((
            ErrorCode::InvalidScope,
            "the scopes are gitea:read and gitea:write",
        ));
    };
    let Some(resource) = config.canonical_resource(query.resource.as_deref()) else {
        return Err((
            ErrorCode::InvalidTarget,
            "resource must be one of this server's MCP URLs",
        ));
    };
    if query.state.as_ref().is_some_and(|s| s.len() > 2048) {
        return Err((ErrorCode::InvalidRequest, "state is too long"));
    }
    Ok(AuthorizeRequest {
        access,
        code_challenge: challenge.to_owned(),
        resource,
        state: query.state.clone(),
    })
}

/// An RFC 6749 §4.1.2.1 error for the client, at its verified redirect URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorRedirect {
    /// The redirect URI with `error`, `error_description`, `state`, `iss`.
    pub url: String,
    /// The redirect URI's host, to name it on a page.
    pub host: String,
    /// Sent at once (loopback, private-use scheme, allowlisted, or a
    /// person's own decision); else shown on a page with a link, so the
    /// server is no open redirector.
    pub automatic: bool,
    /// The error it carries.
    pub code: ErrorCode,
}

impl ErrorRedirect {
    pub(crate) fn new(
        issuer: &str,
        redirect_uri: &str,
        state: Option<&str>,
        code: ErrorCode,
        description: &str,
    ) -> Self {
        let mut pairs = vec![("error", code.as_str()), ("error_description", description)];
        if let Some(state) = state {
            pairs.push(("state", state));
        }
        pairs.push(("iss", issuer));
        Self {
            url: with_query(redirect_uri, &pairs),
            host: host_of(redirect_uri),
            automatic: true,
            code,
        }
    }

    /// The page a person sees instead of an error redirect that is not
    /// sent at once.
    pub fn page(&self, description: &str, code: ErrorCode) -> PageError {
        PageError::ClientRequest {
            message: format!("{description} ({}).", code.as_str()),
            continue_to: (self.url.clone(), self.host.clone()),
        }
    }
}

/// Why an authorization does not go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthorizeRefusal {
    /// Shown to the person: the client or redirect URI is not known to be
    /// safe, or the failure is ours to explain.
    Page(PageError),
    /// Sent back to the client (or, when that could be abused, shown with a
    /// link to it).
    ToClient(ErrorRedirect),
}

impl From<PageError> for AuthorizeRefusal {
    fn from(err: PageError) -> Self {
        Self::Page(err)
    }
}

impl From<StoreError> for AuthorizeRefusal {
    fn from(err: StoreError) -> Self {
        Self::Page(err.into())
    }
}
