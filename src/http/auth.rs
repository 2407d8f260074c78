//! Authentication of `/mcp` requests, and the identity each one acts as:
//! - an `agm_` token: resolved through the store to that user's own
//!   Gitea session (never the admin token);
//! - the static bearer (`MCP_BEARER_TOKEN`): the admin token;
//! - no credentials, on a loopback bind with neither a bearer nor OAuth
//!   configured, from a caller no proxy forwarded: the admin token
//!   (development mode; startup refuses it with a public URL or proxies).
//!
//! Anything else is a 401 whose challenge, once OAuth is configured, names
//! the protected-resource metadata of the URL asked for (RFC 9728, path
//! appended) so clients discover the sign-in. An `agm_` token is accepted
//! only at the MCP URL it was issued for. The identity is put into the
//! request's extensions for the MCP handler.

use std::sync::Arc;

use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tracing::Instrument;

use crate::app::App;
use crate::identity::Access;
use crate::identity::{Connection, Identity, IdentityMode};
use crate::oauth::OAuthServer;
use crate::oauth::metadata::resource_metadata_url;
use crate::oauth::resolver::{self, ResolveError};
use crate::oauth::scopes::{MINIMAL_SCOPE, scope_of};
use crate::oauth::tokens::TOKEN_PREFIX;
use crate::surface::Surface;
use crate::telemetry::spans::{self, StageOutcome};

/// Compares the presented bearer with the configured one in constant time,
/// on SHA-256 digests so neither content nor length leaks through timing.
pub fn bearer_matches(expected: &SecretString, presented: &str) -> bool {
    let a = Sha256::digest(expected.expose_secret().as_bytes());
    let b = Sha256::digest(presented.as_bytes());
    a.ct_eq(&b).into()
}

/// The token of an `Authorization: Bearer <token>` header (scheme is
/// case-insensitive).
pub fn bearer_token(value: &HeaderValue) -> Option<&str> {
    let value = value.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Why a request was not authenticated; decides the challenge's `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unauthenticated {
    /// No credentials.
    Missing,
    /// A token that is not valid here.
    InvalidToken,
    /// One of our tokens, issued for another MCP URL.
    OtherResource,
    /// A token sent in the query string (RFC 6750 §2.3 is not supported:
    /// URLs end up in logs and histories).
    TokenInQuery,
}

/// The `WWW-Authenticate` value: realm, and with OAuth the absolute
/// `resource_metadata` URL of the MCP URL `path` (RFC 9728 §5.1) and the
/// minimal scope.
pub fn challenge(oauth: Option<&OAuthServer>, path: &str, error: Option<&str>) -> String {
    scope_challenge(oauth, path, MINIMAL_SCOPE, error)
}

fn scope_challenge(
    oauth: Option<&OAuthServer>,
    path: &str,
    scope: &str,
    error: Option<&str>,
) -> String {
    let mut value = String::from(r#"Bearer realm="aegis-gitea-mcp""#);
    if let Some(server) = oauth {
        value.push_str(&format!(
            r#", resource_metadata="{}", scope="{scope}""#,
            resource_metadata_url(server.config(), path)
        ));
    }
    if let Some(error) = error {
        value.push_str(&format!(r#", error="{error}""#));
    }
    value
}

fn unauthorized(oauth: Option<&OAuthServer>, path: &str, refusal: Unauthenticated) -> Response {
    let (error, description) = match refusal {
        Unauthenticated::Missing => (None, "this endpoint needs a bearer token"),
        Unauthenticated::InvalidToken => (Some("invalid_token"), "the bearer token is not valid"),
        Unauthenticated::OtherResource => (
            Some("invalid_token"),
            "the bearer token was issued for another MCP URL: a token works only at the URL it was issued for (one token per URL), so sign in again at this one",
        ),
        Unauthenticated::TokenInQuery => (
            Some("invalid_request"),
            "send the token in the Authorization header, never in the URL",
        ),
    };
    let header_value = HeaderValue::from_str(&challenge(oauth, path, error))
        .unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
    let status = if refusal == Unauthenticated::TokenInQuery {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::UNAUTHORIZED
    };
    (
        status,
        [(header::WWW_AUTHENTICATE, header_value)],
        axum::Json(serde_json::json!({
            "error": error.unwrap_or("unauthorized"),
            "error_description": description,
        })),
    )
        .into_response()
}

/// `403` for a write on a grant that only reads (RFC 6750 §3.1, MCP
/// 2025-11-25 step-up): the challenge names every scope the call needs,
/// the ones held included, since a client asks for what it names.
pub fn insufficient_scope(oauth: Option<&OAuthServer>, path: &str) -> Response {
    let value = scope_challenge(
        oauth,
        path,
        scope_of(Access::ReadWrite),
        Some("insufficient_scope"),
    );
    let description = "this call changes something on Gitea and the connection may only read: authorize again with scope gitea:write, and the person is asked";
    (
        StatusCode::FORBIDDEN,
        [(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_str(&format!(r#"{value}, error_description="{description}""#))
                .unwrap_or_else(|_| HeaderValue::from_static("Bearer")),
        )],
        axum::Json(serde_json::json!({
            "error": "insufficient_scope",
            "error_description": description,
            "scope": scope_of(Access::ReadWrite),
        })),
    )
        .into_response()
}

/// True when the query string carries an access token parameter.
fn token_in_query(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        url::form_urlencoded::parse(q.as_bytes())
            .any(|(name, _)| name.eq_ignore_ascii_case("access_token"))
    })
}

/// Authenticates an MCP request on the URL's `surface`: the caller's
/// identity, and for an `agm_` token its connection; or the answer in its
/// place.
pub async fn authenticate(
    app: &App,
    request: &Parts,
    surface: &Surface,
) -> Result<(Identity, Option<Connection>), Response> {
    let span = spans::authenticate();
    let identified = identify(app, request, surface, &span)
        .instrument(span.clone())
        .await;
    let stage = match &identified {
        Ok(_) => StageOutcome::Ok,
        Err(response) if response.status() == StatusCode::SERVICE_UNAVAILABLE => {
            StageOutcome::Unavailable
        }
        Err(_) => StageOutcome::Refused,
    };
    spans::stage_outcome(&span, stage);
    // The span ends here: what follows is the call, not its authentication.
    drop(span);
    identified
}

/// The caller's `Identity` (and for an `agm_` token its `Connection`),
/// or the answer in the request's place.
async fn identify(
    app: &App,
    request: &Parts,
    surface: &Surface,
    span: &tracing::Span,
) -> Result<(Identity, Option<Connection>), Response> {
    let settings = app.settings();
    let oauth = app.oauth().map(Arc::as_ref);
    let path = request.uri.path().to_owned();
    let unauthorized = |refusal| unauthorized(oauth, &path, refusal);
    if token_in_query(request.uri.query()) {
        return Err(unauthorized(Unauthenticated::TokenInQuery));
    }
    let presented = request
        .headers
        .get(header::AUTHORIZATION)
        .and_then(bearer_token);
    let mode = match presented {
        Some(token) if token.starts_with(TOKEN_PREFIX) => {
            span.record("aegis.auth.kind", "oauth");
            let Some(server) = app.oauth() else {
                return Err(unauthorized(Unauthenticated::InvalidToken));
            };
            let resource = server.config().resource_for(surface);
            // Boxed: inline, the resolver's future (store queries, a Gitea
            // refresh) would be carried by every request's middleware
            // future, the static bearer's too.
            return match Box::pin(resolver::resolve(server, token, &resource)).await {
                Ok((identity, connection)) => Ok((identity, Some(connection))),
                Err(ResolveError::InvalidToken) => Err(unauthorized(Unauthenticated::InvalidToken)),
                Err(ResolveError::OtherResource) => {
                    Err(unauthorized(Unauthenticated::OtherResource))
                }
                Err(ResolveError::Unavailable) => Err((
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(header::RETRY_AFTER, "5")],
                    "the token could not be checked right now",
                )
                    .into_response()),
            };
        }
        Some(token) => {
            span.record("aegis.auth.kind", "bearer");
            match &settings.mcp_bearer_token {
                Some(expected) if bearer_matches(expected, token) => IdentityMode::Bearer,
                _ => return Err(unauthorized(Unauthenticated::InvalidToken)),
            }
        }
        // Unauthenticated loopback is the development mode, only while
        // neither a bearer nor OAuth is configured; anything else without a
        // token fails closed (startup already refuses a public bind).
        None if settings.mcp_bearer_token.is_none()
            && oauth.is_none()
            && settings.binds_loopback()
            && !forwarded_by_a_proxy(&request.headers) =>
        {
            span.record("aegis.auth.kind", "loopback");
            IdentityMode::Loopback
        }
        None => {
            span.record("aegis.auth.kind", "none");
            return Err(unauthorized(Unauthenticated::Missing));
        }
    };
    let Some(identity) = app.admin_identity(mode).await else {
        return Err((
            StatusCode::SERVICE_UNAVAILABLE,
            "no admin token is configured",
        )
            .into_response());
    };
    Ok((identity, None))
}

/// True when a proxy says it forwarded the request: then the caller is not
/// a person on this machine, and loopback mode does not apply.
fn forwarded_by_a_proxy(headers: &axum::http::HeaderMap) -> bool {
    [
        "forwarded",
        "x-forwarded-for",
        "x-real-ip",
        "x-forwarded-host",
    ]
    .iter()
    .any(|name| headers.contains_key(*name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_matches_only_the_exact_token() {
        let expected = SecretString::from("0123456789abcdef0123456789abcdef");
        assert!(bearer_matches(
            &expected,
            "0123456789abcdef0123456789abcdef"
        ));
        assert!(!bearer_matches(
            &expected,
            "0123456789abcdef0123456789abcdeX"
        ));
        assert!(!bearer_matches(&expected, "0123456789abcdef"));
        assert!(!bearer_matches(&expected, ""));
    }

    #[test]
    fn bearer_scheme_is_case_insensitive_and_others_are_ignored() {
        assert_eq!(
            bearer_token(&HeaderValue::from_static("Bearer abc")),
            Some("abc")
        );
        assert_eq!(
            bearer_token(&HeaderValue::from_static("bearer abc")),
            Some("abc")
        );
        assert_eq!(bearer_token(&HeaderValue::from_static("Basic abc")), None);
        assert_eq!(bearer_token(&HeaderValue::from_static("Bearer ")), None);
        assert_eq!(bearer_token(&HeaderValue::from_static("Bearer")), None);
    }
}

#[cfg(test)]
mod query_tests {
    use super::token_in_query;

    #[test]
    fn access_tokens_in_the_query_are_detected_in_any_case() {
        assert!(token_in_query(Some("access_token=agm_x")));
        assert!(token_in_query(Some("a=1&ACCESS_TOKEN=x")));
        assert!(!token_in_query(Some("a=1")));
        assert!(!token_in_query(None));
    }
}
