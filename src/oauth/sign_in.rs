//! The upstream leg, shared by the two flows that send a person to Gitea:
//! an MCP client's authorization (after consent) and the sign-in to the
//! gateway's own pages. Going out: a fresh state and PKCE pair of ours and
//! the browser-binding cookie. Coming back: the binding check and the code
//! exchange, then the signed-in user.

use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Redirect, Response};
use cookie::SameSite;
use secrecy::SecretString;

use super::OAuthServer;
use super::params::OAuthParams;
use super::tokens::{PENDING_TTL, random_value};
use super::upstream::{GiteaUser, UpstreamAuthError};
use crate::page_kit::cookies::{read_cookie, set_cookie};
use crate::page_kit::with_page_headers;
use crate::store::{GiteaTokens, UnixTime, UpstreamLeg, hash_secret};

/// Cookie binding a sign-in to the browser that started it.
pub const BINDING_COOKIE: &str = "aegis_binding";

/// A value we minted with [`random_value`]: 43 base64url characters.
pub fn is_random_value(value: &str) -> bool {
    value.len() == 43
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The start of a trip to Gitea: what to store with the pending request,
/// and the response that sends the browser there.
pub struct UpstreamStart {
    pub leg: UpstreamLeg,
    gitea_url: String,
    binding: String,
}

impl UpstreamStart {
    /// A fresh state and verifier; the browser's binding value is reused
    /// when it has one, so concurrent sign-ins in one browser coexist.
    pub fn new(server: &OAuthServer, headers: &HeaderMap) -> Self {
        let state = random_value();
        let verifier = random_value();
        let binding = read_cookie(headers, BINDING_COOKIE, server.config.secure_cookies)
            .filter(|v| is_random_value(v))
            .unwrap_or_else(random_value);
        Self {
            leg: UpstreamLeg {
                state_hash: hash_secret(&state),
                pkce_verifier: SecretString::from(verifier.clone()),
                binding_hash: hash_secret(&binding),
            },
            gitea_url: server.upstream.authorize_url(&state, &verifier),
            binding,
        }
    }

    /// The redirect to Gitea, setting the binding cookie (`SameSite=Lax`,
    /// so it comes back on Gitea's top-level redirect to the callback).
    pub fn redirect(self, secure_cookies: bool) -> Response {
        let mut response = with_page_headers(Redirect::to(&self.gitea_url).into_response());
        response.headers_mut().append(
            header::SET_COOKIE,
            set_cookie(
                BINDING_COOKIE,
                &self.binding,
                secure_cookies,
                SameSite::Lax,
                PENDING_TTL,
            ),
        );
        response
    }
}

/// The [`hash_secret`] of the request's binding cookie, to find the
/// pending sign-in this browser approved. Without a well-formed cookie it
/// is the hash of nothing, which no stored binding (a random value) has.
pub fn binding_hash(server: &OAuthServer, headers: &HeaderMap) -> String {
    let binding = read_cookie(headers, BINDING_COOKIE, server.config.secure_cookies)
        .filter(|v| is_random_value(v))
        .unwrap_or_default();
    hash_secret(&binding)
}

/// Why the trip to Gitea did not produce a signed-in user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamOutcome {
    /// The person declined at Gitea.
    Denied,
    /// Gitea answered with another error, or the exchange failed.
    Failed,
}

/// Gitea's answer at the callback: exchanges the code (client secret plus
/// our verifier) and reads who signed in.
pub async fn finish(
    server: &OAuthServer,
    leg: &UpstreamLeg,
    params: &OAuthParams,
    now: UnixTime,
) -> Result<(GiteaTokens, GiteaUser), UpstreamOutcome> {
    if let Some(error) = params.get("error") {
        return Err(if error == "access_denied" {
            UpstreamOutcome::Denied
        } else {
            UpstreamOutcome::Failed
        });
    }
    let code = params.get("code").ok_or(UpstreamOutcome::Failed)?;
    let tokens = server
        .upstream
        .exchange_code(code, &leg.pkce_verifier, now)
        .await
        .map_err(|err| log_failure(err, "code exchange"))?;
    let user = server
        .upstream
        .user(&tokens.access_token)
        .await
        .map_err(|err| log_failure(err, "user lookup"))?;
    Ok((tokens, user))
}

fn log_failure(err: UpstreamAuthError, step: &'static str) -> UpstreamOutcome {
    match err {
        UpstreamAuthError::InvalidClient => tracing::error!(
            step,
            "Gitea refused GITEA_OAUTH_CLIENT_ID/SECRET; check the OAuth application"
        ),
        other => tracing::warn!(step, error = %other, "Gitea sign-in step failed"),
    }
    UpstreamOutcome::Failed
}
