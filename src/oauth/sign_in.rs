//! The upstream leg, shared by the two flows that send a person to Gitea:
//! an MCP client's authorization (after consent) and the sign-in to the
//! gateway's own pages. Going out: a fresh state and PKCE pair of ours and
//! the browser-binding cookie and a nonce. Coming back: the binding check,
//! the code exchange, then the signed-in user from Gitea's verified ID
//! token (`id_token`).

use axum::http::header;
use axum::response::{IntoResponse, Redirect, Response};
use cookie::SameSite;
use secrecy::SecretString;

use super::OAuthServer;
use super::id_token::{Expected, IdTokenError};
use super::params::OAuthParams;
use super::tokens::PENDING_TTL;
use super::upstream::{GiteaUser, UpstreamAuthError};
use crate::page_kit::cookies::set_cookie;
use crate::page_kit::with_page_headers;
use crate::random::random_value;
use crate::store::{GiteaApp, GiteaTokens, SecretHash, UnixTime, UpstreamLeg, hash_secret};

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
    /// A fresh state and verifier for a sign-in at Gitea's application
    /// `app`; the browser's binding value (`binding_cookie`) is reused when
    /// it has one, so concurrent sign-ins in one browser coexist.
    pub fn new(server: &OAuthServer, app: GiteaApp, binding_cookie: Option<&str>) -> Self {
        let state = random_value();
        let verifier = random_value();
        let nonce = random_value();
        let binding = binding_cookie
            .filter(|v| is_random_value(v))
            .map_or_else(random_value, str::to_owned);
        Self {
            leg: UpstreamLeg {
                state_hash: hash_secret(&state),
                pkce_verifier: SecretString::from(verifier.clone()),
                binding_hash: hash_secret(&binding),
                nonce_hash: hash_secret(&nonce),
            },
            gitea_url: server
                .upstream
                .authorize_url(app, &state, &verifier, &nonce),
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

/// The [`hash_secret`] of the browser's binding cookie, to find the
/// pending sign-in this browser approved. Without a well-formed cookie it
/// is the hash of nothing, which no stored binding (a random value) has.
pub fn binding_hash(binding_cookie: Option<&str>) -> SecretHash {
    hash_secret(
        binding_cookie
            .filter(|v| is_random_value(v))
            .unwrap_or_default(),
    )
}

/// Why the trip to Gitea did not produce a signed-in user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamOutcome {
    /// The person declined at Gitea.
    Denied,
    /// Gitea answered with another error, or the exchange failed.
    Failed,
    /// Gitea's ID token is missing or failed verification: nothing is
    /// stored, and the person sees why.
    IdTokenRefused(IdTokenError),
}

/// Gitea's answer at the callback: exchanges the code at the application
/// `app` the sign-in went to (client secret plus our verifier), verifies
/// the ID token against the nonce we sent, and asks Gitea whether that
/// user is an admin.
pub async fn finish(
    server: &OAuthServer,
    app: GiteaApp,
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
    let answer = server
        .upstream
        .exchange_code(app, code, &leg.pkce_verifier, now)
        .await
        .map_err(|err| log_failure(err, "code exchange"))?;
    let raw = answer
        .id_token
        .as_deref()
        .ok_or(UpstreamOutcome::IdTokenRefused(IdTokenError::Missing))?;
    let verified = server
        .upstream
        .id_tokens(app)
        .verify(
            raw,
            Expected::Nonce {
                hash: &leg.nonce_hash,
            },
        )
        .await
        .map_err(|err| {
            tracing::warn!(error = %err, "Gitea's ID token was refused");
            UpstreamOutcome::IdTokenRefused(err)
        })?;
    let is_admin = server
        .upstream
        .is_admin(&answer.tokens.access_token, &verified.login)
        .await
        .map_err(|err| log_failure(err, "user lookup"))?;
    Ok((
        answer.tokens,
        GiteaUser {
            login: verified.login,
            is_admin,
            subject: verified.subject,
        },
    ))
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
