//! Authentication of `/mcp` requests, and the identity each one acts as:
//! the static bearer (`MCP_BEARER_TOKEN`) or, on a loopback bind with no
//! bearer configured, no credentials at all; both act with the admin token.
//! The identity is put into the request's extensions for the MCP handler.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::app::App;
use crate::gitea::IdentityMode;

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

/// The 401 answer: `WWW-Authenticate: Bearer`, with `error="invalid_token"`
/// when a token was presented.
fn unauthorized(token_presented: bool) -> Response {
    let (challenge, description) = if token_presented {
        (
            r#"Bearer realm="aegis-gitea-mcp", error="invalid_token""#,
            "the bearer token is not valid",
        )
    } else {
        (
            r#"Bearer realm="aegis-gitea-mcp""#,
            "this endpoint needs a bearer token",
        )
    };
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, challenge)],
        axum::Json(serde_json::json!({
            "error": if token_presented { "invalid_token" } else { "unauthorized" },
            "error_description": description,
        })),
    )
        .into_response()
}

/// Middleware on `/mcp`: authenticates and attaches the identity.
pub async fn authenticate(
    State(app): State<Arc<App>>,
    mut request: Request,
    next: Next,
) -> Response {
    let settings = app.settings();
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(bearer_token);
    let mode = match (&settings.mcp_bearer_token, presented) {
        (Some(expected), Some(token)) if bearer_matches(expected, token) => IdentityMode::Bearer,
        (Some(_), presented) => return unauthorized(presented.is_some()),
        // Unauthenticated loopback is the development mode, only while
        // neither a bearer nor OAuth is configured; anything else without a
        // bearer fails closed (startup already refuses a public bind).
        (None, _) if settings.binds_loopback() && !settings.oauth_configured() => {
            IdentityMode::Loopback
        }
        (None, _) => return unauthorized(false),
    };
    let Some(identity) = app.admin_identity(mode).await else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "no admin token is configured",
        )
            .into_response();
    };
    request.extensions_mut().insert(identity);
    next.run(request).await
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
