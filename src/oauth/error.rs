//! OAuth errors, mapped once to the wire: RFC 6749 §5.2 JSON bodies
//! (`error`, `error_description`) with `Cache-Control: no-store` for the
//! token, registration and revocation endpoints, and a typed code for the
//! error redirects of `/authorize`. Descriptions are fixed text chosen here,
//! never an echo of input.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::page_kit::PageError;
use crate::store::StoreError;

/// The RFC 6749 / 7591 / 8707 error codes this server uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidRequest,
    InvalidClient,
    InvalidGrant,
    UnauthorizedClient,
    UnsupportedGrantType,
    UnsupportedResponseType,
    InvalidScope,
    InvalidTarget,
    AccessDenied,
    InvalidRedirectUri,
    InvalidClientMetadata,
    ServerError,
    TemporarilyUnavailable,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::InvalidClient => "invalid_client",
            Self::InvalidGrant => "invalid_grant",
            Self::UnauthorizedClient => "unauthorized_client",
            Self::UnsupportedGrantType => "unsupported_grant_type",
            Self::UnsupportedResponseType => "unsupported_response_type",
            Self::InvalidScope => "invalid_scope",
            Self::InvalidTarget => "invalid_target",
            Self::AccessDenied => "access_denied",
            Self::InvalidRedirectUri => "invalid_redirect_uri",
            Self::InvalidClientMetadata => "invalid_client_metadata",
            Self::ServerError => "server_error",
            Self::TemporarilyUnavailable => "temporarily_unavailable",
        }
    }

    fn status(self) -> StatusCode {
        match self {
            Self::InvalidClient => StatusCode::UNAUTHORIZED,
            Self::ServerError => StatusCode::INTERNAL_SERVER_ERROR,
            Self::TemporarilyUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::BAD_REQUEST,
        }
    }
}

/// An OAuth error answered as JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {description}", code.as_str())]
pub struct OAuthError {
    pub code: ErrorCode,
    pub description: String,
}

impl OAuthError {
    pub fn new(code: ErrorCode, description: impl Into<String>) -> Self {
        Self {
            code,
            description: description.into(),
        }
    }

    pub fn invalid_request(description: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, description)
    }

    pub fn invalid_grant(description: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidGrant, description)
    }

    pub fn invalid_client() -> Self {
        Self::new(ErrorCode::InvalidClient, "client authentication failed")
    }
}

/// A store failure on a page: logged (a full table is expected under
/// load, anything else is not), then the one "try again later" page.
impl From<StoreError> for PageError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Full { what } => {
                tracing::warn!(what, "a page request found the store full")
            }
            other => tracing::error!(error = %other, "store failure on a page"),
        }
        PageError::Unavailable
    }
}

impl From<StoreError> for OAuthError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Full { .. } => Self::new(
                ErrorCode::TemporarilyUnavailable,
                "the server is at capacity; try again later",
            ),
            StoreError::QuotaSpent { what } => Self::new(
                ErrorCode::TemporarilyUnavailable,
                format!(
                    "too many {what} are waiting to be used; a registration no sign-in uses within an hour is removed, try again later"
                ),
            ),
            other => {
                tracing::error!(error = %other, "store failure in an OAuth endpoint");
                Self::new(ErrorCode::ServerError, "the request could not be completed")
            }
        }
    }
}

/// Beside an OAuth error's response: its code, for the metrics step
/// (`aegis_oauth_failures_total`), which names the endpoint by route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OAuthFailure(pub &'static str);

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let mut response = (
            self.code.status(),
            Json(json!({
                "error": self.code.as_str(),
                "error_description": self.description,
            })),
        )
            .into_response();
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
        if self.code == ErrorCode::InvalidClient {
            // RFC 6749 §5.2: a 401 names the scheme the client may use.
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(r#"Basic realm="aegis-gitea-mcp""#),
            );
        }
        response
            .extensions_mut()
            .insert(OAuthFailure(self.code.as_str()));
        response
    }
}

/// A JSON success body with the headers RFC 6749 §5.1 requires.
pub fn no_store_json(status: StatusCode, body: serde_json::Value) -> Response {
    let mut response = (status, Json(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_client_is_401_with_a_basic_challenge() {
        let response = OAuthError::invalid_client().into_response();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert!(response.headers().contains_key(header::WWW_AUTHENTICATE));
        assert_eq!(response.headers()[header::CACHE_CONTROL], "no-store");
    }

    #[test]
    fn store_capacity_is_temporarily_unavailable() {
        let err: OAuthError = StoreError::Full { what: "codes" }.into();
        assert_eq!(err.code, ErrorCode::TemporarilyUnavailable);
    }
}
