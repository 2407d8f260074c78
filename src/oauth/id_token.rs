//! Gitea's ID tokens (OpenID Connect), verified with `openidconnect`: who
//! signed in is read from a token Gitea signed, not from an unsigned API
//! answer.
//!
//! - **Discovery** from `GITEA_URL/.well-known/openid-configuration`, done
//!   once when first needed and kept; the issuer must be exactly
//!   `GITEA_URL` without its trailing slash (Gitea 1.25+ says so), and the
//!   document must offer RS256.
//! - **Verification:** the signature against the key set with the `alg`
//!   pinned to RS256 (`none` and HMAC, including HS256 keyed with our client
//!   secret, are refused: the verifier is built as a public client, so it
//!   never holds the secret), `iss`, `aud` exactly our client id, `exp`
//!   and `iat` with [`CLOCK_SKEW`] each way against the system clock (the
//!   token's times are Gitea's), and the `nonce` bound to the sign-in.
//! - **Key set** cached; a token signed with a key id the set does not have
//!   refetches it once, at most every [`JWKS_REFETCH_INTERVAL`].
//!
//! Only public keys are ever held here: no code path of the gateway
//! signs with, or parses, an RSA private key (the `rsa` crate's
//! RUSTSEC-2023-0071 concerns private-key operations only; see deny.toml).

use std::str::FromStr;
use std::time::{Duration, Instant};

use openidconnect::core::{
    CoreIdToken, CoreIdTokenVerifier, CoreJsonWebKeySet, CoreJwsSigningAlgorithm,
    CoreProviderMetadata,
};
use openidconnect::{
    ClaimsVerificationError, ClientId, IssuerUrl, JsonWebKeySetUrl, Nonce,
    SignatureVerificationError,
};
use tokio::sync::RwLock;

use super::upstream::send;
use crate::store::{SecretHash, hash_secret};

/// How far the token's `exp` and `iat` may be off our clock.
pub const CLOCK_SKEW: Duration = Duration::from_secs(60);
/// Least time between two key-set fetches for unknown key ids.
pub const JWKS_REFETCH_INTERVAL: Duration = Duration::from_secs(60);

/// Why an ID token was not accepted. Shown on the sign-in error page, so
/// it names the rule, never the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IdTokenError {
    #[error(
        "Gitea does not offer OpenID Connect here (its discovery document is missing, names another issuer than GITEA_URL, or does not sign with RS256)"
    )]
    NotOffered,
    #[error(
        "Gitea sent no ID token. If you authorized this gateway at Gitea before it used OpenID Connect, revoke it under Settings → Applications at Gitea and sign in again"
    )]
    Missing,
    #[error("Gitea's ID token could not be read")]
    Malformed,
    #[error("Gitea's ID token has no valid signature from Gitea's keys")]
    BadSignature,
    #[error("Gitea's ID token was issued by another server")]
    WrongIssuer,
    #[error("Gitea's ID token was issued to another application")]
    WrongAudience,
    #[error("Gitea's ID token has expired or is not valid yet")]
    Expired,
    #[error("Gitea's ID token belongs to another sign-in (nonce)")]
    WrongNonce,
    #[error("Gitea's ID token names another user than this session's")]
    WrongSubject,
    #[error("Gitea's ID token names no login")]
    NoLogin,
    #[error("Gitea's OpenID Connect keys could not be fetched")]
    Unavailable,
}

/// What a verified ID token says about who signed in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedIdToken {
    /// Gitea's user id (`sub`), stable across renames.
    pub subject: String,
    /// The login (`preferred_username`).
    pub login: String,
}

/// What the token must match besides signature, issuer, audience and time.
#[derive(Debug, Clone, Copy)]
pub enum Expected<'a> {
    /// A sign-in: the `nonce` whose [`hash_secret`] is this, and any user.
    Nonce { hash: &'a SecretHash },
    /// A refresh: the user the grant belongs to (Gitea repeats the last
    /// authorize request's nonce, which says nothing here).
    Subject(&'a str),
}

struct Keys {
    issuer: IssuerUrl,
    jwks_url: JsonWebKeySetUrl,
    jwks: CoreJsonWebKeySet,
    fetched: Instant,
}

/// Gitea as an OpenID provider, for one client id.
pub struct GiteaIdTokens {
    client_id: ClientId,
    /// `GITEA_URL` without its trailing slash: the issuer Gitea must name.
    issuer: String,
    http: reqwest::Client,
    keys: RwLock<Option<Keys>>,
}

impl std::fmt::Debug for GiteaIdTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GiteaIdTokens")
            .field("issuer", &self.issuer)
            .finish()
    }
}

impl GiteaIdTokens {
    pub fn new(client_id: &str, gitea_base_url: &str, http: reqwest::Client) -> Self {
        Self {
            client_id: ClientId::new(client_id.to_owned()),
            issuer: gitea_base_url.trim_end_matches('/').to_owned(),
            http,
            keys: RwLock::new(None),
        }
    }

    /// Verifies `raw` (the `id_token` of a token answer).
    pub async fn verify(
        &self,
        raw: &str,
        expected: Expected<'_>,
    ) -> Result<VerifiedIdToken, IdTokenError> {
        let token = CoreIdToken::from_str(raw).map_err(|_| IdTokenError::Malformed)?;
        self.ensure_discovered().await?;
        match self.check(&token, expected).await {
            Err(IdTokenError::BadSignature) if self.refetch_for_unknown_key(&token).await => {
                self.check(&token, expected).await
            }
            result => result,
        }
    }

    async fn check(
        &self,
        token: &CoreIdToken,
        expected: Expected<'_>,
    ) -> Result<VerifiedIdToken, IdTokenError> {
        let guard = self.keys.read().await;
        let keys = guard.as_ref().ok_or(IdTokenError::NotOffered)?;
        let verifier = self.verifier(keys);
        let claims = match expected {
            Expected::Nonce { hash } => {
                token.claims(&verifier, |nonce: Option<&Nonce>| match nonce {
                    Some(nonce) if hash_secret(nonce.secret()) == *hash => Ok(()),
                    Some(_) => Err("nonce mismatch".to_owned()),
                    None => Err("missing nonce".to_owned()),
                })
            }
            Expected::Subject(_) => token.claims(&verifier, |_: Option<&Nonce>| Ok(())),
        }
        .map_err(classify)?;
        let subject = claims.subject().as_str().to_owned();
        if let Expected::Subject(stored) = expected
            && stored != subject
        {
            return Err(IdTokenError::WrongSubject);
        }
        let login = claims
            .preferred_username()
            .map(|name| name.as_str().to_owned())
            .filter(|name| !name.is_empty())
            .ok_or(IdTokenError::NoLogin)?;
        Ok(VerifiedIdToken { subject, login })
    }

    /// RS256 only, our client id only, `exp` and `iat` within the skew.
    fn verifier<'a>(&self, keys: &'a Keys) -> CoreIdTokenVerifier<'a> {
        let skew = chrono::Duration::from_std(CLOCK_SKEW).unwrap_or_default();
        CoreIdTokenVerifier::new_public_client(
            self.client_id.clone(),
            keys.issuer.clone(),
            keys.jwks.clone(),
        )
        .set_allowed_algs([CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256])
        .set_time_fn(move || chrono::Utc::now() - skew)
        .set_issue_time_verifier_fn(move |issued| {
            if issued > chrono::Utc::now() + skew {
                Err("issued in the future".to_owned())
            } else {
                Ok(())
            }
        })
    }

    /// Discovers Gitea's provider metadata and key set, once.
    async fn ensure_discovered(&self) -> Result<(), IdTokenError> {
        if self.keys.read().await.is_some() {
            return Ok(());
        }
        let mut guard = self.keys.write().await;
        if guard.is_some() {
            return Ok(());
        }
        let issuer = IssuerUrl::new(self.issuer.clone()).map_err(|_| IdTokenError::NotOffered)?;
        let http = self.http.clone();
        let client = move |request| send(http.clone(), request);
        let metadata = CoreProviderMetadata::discover_async(issuer.clone(), &client)
            .await
            .map_err(|err| {
                tracing::error!(error = %err, "Gitea's OpenID Connect discovery failed");
                IdTokenError::NotOffered
            })?;
        let offers_rs256 = metadata
            .id_token_signing_alg_values_supported()
            .contains(&CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256);
        if !offers_rs256 {
            tracing::error!("Gitea does not sign ID tokens with RS256 (JWT_SIGNING_ALGORITHM)");
            return Err(IdTokenError::NotOffered);
        }
        *guard = Some(Keys {
            issuer,
            jwks_url: metadata.jwks_uri().clone(),
            jwks: metadata.jwks().clone(),
            fetched: Instant::now(),
        });
        Ok(())
    }

    /// Refetches the key set when `token` names a key id the cached set
    /// lacks (Gitea's key changed), at most once per interval. True when a
    /// new set was fetched.
    async fn refetch_for_unknown_key(&self, token: &CoreIdToken) -> bool {
        let mut guard = self.keys.write().await;
        let Some(keys) = guard.as_mut() else {
            return false;
        };
        let verifier = self.verifier(keys);
        let unknown = matches!(
            token.signing_key(&verifier),
            Err(SignatureVerificationError::NoMatchingKey)
        );
        drop(verifier);
        if !unknown || keys.fetched.elapsed() < JWKS_REFETCH_INTERVAL {
            return false;
        }
        let http = self.http.clone();
        let client = move |request| send(http.clone(), request);
        match CoreJsonWebKeySet::fetch_async(&keys.jwks_url, &client).await {
            Ok(jwks) => {
                keys.jwks = jwks;
                keys.fetched = Instant::now();
                true
            }
            Err(err) => {
                tracing::warn!(error = %err, "Gitea's key set could not be refetched");
                false
            }
        }
    }
}

fn classify(err: ClaimsVerificationError) -> IdTokenError {
    match err {
        ClaimsVerificationError::InvalidIssuer(_) => IdTokenError::WrongIssuer,
        ClaimsVerificationError::InvalidAudience(_) => IdTokenError::WrongAudience,
        ClaimsVerificationError::Expired(_) => IdTokenError::Expired,
        ClaimsVerificationError::InvalidNonce(_) => IdTokenError::WrongNonce,
        ClaimsVerificationError::SignatureVerification(_) => IdTokenError::BadSignature,
        _ => IdTokenError::Malformed,
    }
}
