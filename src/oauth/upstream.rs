//! The gateway as a confidential PKCE client of Gitea's OAuth2 provider
//! (the `oauth2` crate over our reqwest client): the authorize URL with our
//! own state and S256 challenge and the application's granular scopes, the
//! code exchange (client secret plus verifier), the refresh, and whether
//! the signed-in user is a Gitea admin (`/api/v1/user`). Who signed in is
//! the verified ID token's (`id_token`). Redirects are never followed
//! and response bodies are bounded; errors are reduced to coarse kinds so
//! nothing Gitea says (or any token) reaches a log or a client.
//!
//! Two applications (see `docs/oauth.md`): Gitea keeps the scopes of a
//! person's first grant to an application and never widens them, so the
//! read-write one (`GITEA_OAUTH_CLIENT_ID`, `OAUTH_SCOPES`) holds writing
//! sessions and the read one (`GITEA_OAUTH_READ_CLIENT_ID`, the `read:`
//! form of the same categories) holds reading sessions and page sign-ins.
//! Each is always asked for the same scopes, so whichever sign-in comes
//! first, its grant at Gitea is the one intended.

use std::time::Duration;

use oauth2::basic::{
    BasicErrorResponse, BasicErrorResponseType, BasicRevocationErrorResponse,
    BasicTokenIntrospectionResponse, BasicTokenType,
};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, Client, ClientId, ClientSecret, CsrfToken,
    EndpointNotSet, EndpointSet, ExtraTokenFields, HttpRequest, HttpResponse, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, RefreshToken, RequestTokenError, Scope, StandardRevocableToken,
    StandardTokenResponse, TokenResponse, TokenUrl,
};
use secrecy::{ExposeSecret, SecretString};

use super::id_token::GiteaIdTokens;
use crate::config::Settings;
use crate::identity::Access;
use crate::store::{GiteaApp, GiteaTokens, UnixTime};

/// Bound on any body Gitea's OAuth endpoints or `/api/v1/user` return.
const MAX_UPSTREAM_BODY: usize = 64 * 1024;

/// The `id_token` of a token answer, kept as text and verified on its own
/// (`openidconnect`'s own token type would fail the whole answer, access
/// token included, on one malformed ID token).
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
pub struct IdTokenField {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id_token: Option<String>,
}

impl ExtraTokenFields for IdTokenField {}

type GiteaTokenResponse = StandardTokenResponse<IdTokenField, BasicTokenType>;

type ConfiguredClient = Client<
    BasicErrorResponse,
    GiteaTokenResponse,
    BasicTokenIntrospectionResponse,
    StandardRevocableToken,
    BasicRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointSet,
>;

/// The scopes added to `OAUTH_SCOPES` for OpenID Connect: `openid` for the
/// ID token, `profile` for `preferred_username` in it. Never sent alone:
/// Gitea widens a scope with nothing granular in it to full access.
pub const OIDC_SCOPES: [&str; 2] = ["openid", "profile"];

/// Gitea's token answer: our tokens, and the ID token as Gitea sent it.
#[derive(Debug)]
pub struct TokenAnswer {
    pub tokens: GiteaTokens,
    pub id_token: Option<String>,
}

/// Why an upstream step failed, coarse on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamAuthError {
    /// Gitea refused the code or refresh token: the user must sign in again.
    #[error("Gitea refused the grant")]
    InvalidGrant,
    /// Gitea refused our client credentials: a configuration problem.
    #[error("Gitea refused the gateway's OAuth client credentials")]
    InvalidClient,
    /// Gitea could not be reached or answered something unexpected.
    #[error("Gitea's OAuth endpoint is unavailable or answered unexpectedly")]
    Unavailable,
}

/// The signed-in Gitea user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GiteaUser {
    pub login: String,
    pub is_admin: bool,
    /// Gitea's user id, from the verified ID token.
    pub subject: String,
}

/// One of our applications at Gitea: its client and the scopes it asks.
#[derive(Debug)]
struct AppClient {
    client: ConfiguredClient,
    scopes: Vec<String>,
    /// ID tokens name the application's client id as their audience.
    id_tokens: GiteaIdTokens,
}

/// Our confidential client at Gitea: the read-write application and,
/// when configured, the read one.
#[derive(Debug)]
pub struct GiteaOAuth {
    read_write: AppClient,
    read: Option<AppClient>,
    http: reqwest::Client,
    user_url: String,
    /// Gitea's base URL as people know it (no trailing `/`), for pages.
    gitea_base_url: String,
}

impl GiteaOAuth {
    /// Builds the client from settings; `None` when OAuth is not configured.
    pub fn from_settings(settings: &Settings) -> Option<Result<Self, UpstreamAuthError>> {
        let client_id = settings.gitea_oauth_client_id.clone()?;
        let secret = settings.gitea_oauth_client_secret.clone()?;
        Some(Self::build(settings, client_id, &secret))
    }

    fn build(
        settings: &Settings,
        client_id: String,
        secret: &SecretString,
    ) -> Result<Self, UpstreamAuthError> {
        let gitea = settings.gitea_url.as_str().trim_end_matches('/');
        // No proxy from the environment: the client secret and people's
        // tokens go to Gitea directly, as the tool calls do.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(settings.limits.gitea_timeout.min(Duration::from_secs(30)))
            .build()
            .map_err(|_| UpstreamAuthError::Unavailable)?;
        let app = |client_id: &str, secret: &SecretString, scopes: Vec<String>| {
            Ok::<_, UpstreamAuthError>(AppClient {
                client: configured_client(settings, client_id, secret)?,
                scopes,
                id_tokens: GiteaIdTokens::new(client_id, gitea, http.clone()),
            })
        };
        let read = match &settings.gitea_oauth_read_client {
            Some((id, secret)) => Some(app(id, secret, read_scopes(&settings.oauth_scopes))?),
            None => None,
        };
        Ok(Self {
            read_write: app(&client_id, secret, settings.oauth_scopes.clone())?,
            read,
            http,
            user_url: format!("{}/user", settings.gitea_api_base()),
            gitea_base_url: gitea.to_owned(),
        })
    }

    /// The Gitea instance users sign in at, for the consent page.
    pub fn gitea_base_url(&self) -> &str {
        &self.gitea_base_url
    }

    /// The application a session with `access` is held at: the read one
    /// for reading when it is configured, else the read-write one.
    pub fn app_for(&self, access: Access) -> GiteaApp {
        match (access, &self.read) {
            (Access::Read, Some(_)) => GiteaApp::Read,
            _ => GiteaApp::ReadWrite,
        }
    }

    /// The application of a page sign-in (`/account`, `/admin`): the
    /// pages only need to know who you are and whether you are an admin.
    pub fn page_app(&self) -> GiteaApp {
        self.app_for(Access::Read)
    }

    /// Whether a read application is configured.
    pub fn has_read_app(&self) -> bool {
        self.read.is_some()
    }

    fn app(&self, app: GiteaApp) -> &AppClient {
        match (app, &self.read) {
            (GiteaApp::Read, Some(read)) => read,
            // A grant of the read application after it was removed from
            // the settings: its refresh fails at the other one, and the
            // person signs in again.
            _ => &self.read_write,
        }
    }

    /// The granular Gitea scopes `app` asks for.
    pub fn scopes(&self, app: GiteaApp) -> &[String] {
        &self.app(app).scopes
    }

    /// Gitea's ID-token verifier for `app`'s tokens.
    pub fn id_tokens(&self, app: GiteaApp) -> &GiteaIdTokens {
        &self.app(app).id_tokens
    }

    /// Gitea's authorize URL for one sign-in at `app`: our `state`, the
    /// S256 challenge of our `verifier`, the `nonce` the ID token must
    /// carry, and the application's granular scopes (never empty: Gitea
    /// widens an empty or OIDC-only scope to full access) plus
    /// [`OIDC_SCOPES`].
    pub fn authorize_url(&self, app: GiteaApp, state: &str, verifier: &str, nonce: &str) -> String {
        let app = self.app(app);
        let challenge =
            PkceCodeChallenge::from_code_verifier_sha256(&PkceCodeVerifier::new(verifier.into()));
        let state = state.to_owned();
        let (url, _) = app
            .client
            .authorize_url(move || CsrfToken::new(state))
            .add_scopes(
                OIDC_SCOPES
                    .iter()
                    .map(|s| (*s).to_owned())
                    .chain(app.scopes.iter().cloned())
                    .map(Scope::new),
            )
            .add_extra_param("nonce", nonce)
            .set_pkce_challenge(challenge)
            .url();
        url.into()
    }

    /// Exchanges Gitea's code (confidential client: secret and verifier).
    pub async fn exchange_code(
        &self,
        app: GiteaApp,
        code: &str,
        verifier: &SecretString,
        now: UnixTime,
    ) -> Result<TokenAnswer, UpstreamAuthError> {
        let http = self.http.clone();
        let send = move |request| send(http.clone(), request);
        let response = self
            .app(app)
            .client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .set_pkce_verifier(PkceCodeVerifier::new(verifier.expose_secret().to_owned()))
            .request_async(&send)
            .await
            .map_err(classify)?;
        Ok(answer_from(&response, None, now))
    }

    /// Refreshes the user's Gitea session. Gitea returns a new refresh
    /// token each time; if it did not, the old one is kept.
    pub async fn refresh(
        &self,
        app: GiteaApp,
        refresh_token: &SecretString,
        now: UnixTime,
    ) -> Result<TokenAnswer, UpstreamAuthError> {
        let http = self.http.clone();
        let send = move |request| send(http.clone(), request);
        let presented = RefreshToken::new(refresh_token.expose_secret().to_owned());
        let response = self
            .app(app)
            .client
            .exchange_refresh_token(&presented)
            .request_async(&send)
            .await
            .map_err(classify)?;
        Ok(answer_from(&response, Some(refresh_token), now))
    }

    /// Whether the Gitea account of an access token is a site admin (the
    /// ID token does not say). Its login must be `login`, the verified one.
    pub async fn is_admin(
        &self,
        access_token: &SecretString,
        login: &str,
    ) -> Result<bool, UpstreamAuthError> {
        #[derive(serde::Deserialize)]
        struct User {
            login: String,
            #[serde(default)]
            is_admin: bool,
        }
        let response = self
            .http
            .get(&self.user_url)
            .header(
                reqwest::header::AUTHORIZATION,
                format!("token {}", access_token.expose_secret()),
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|_| UpstreamAuthError::Unavailable)?;
        match response.status().as_u16() {
            200 => {}
            401 | 403 => return Err(UpstreamAuthError::InvalidGrant),
            _ => return Err(UpstreamAuthError::Unavailable),
        }
        let body = read_bounded(response).await?;
        let user: User =
            serde_json::from_slice(&body).map_err(|_| UpstreamAuthError::Unavailable)?;
        if !user.login.eq_ignore_ascii_case(login) {
            tracing::error!("Gitea's /api/v1/user names another login than the verified ID token");
            return Err(UpstreamAuthError::Unavailable);
        }
        Ok(user.is_admin)
    }
}

/// The `oauth2` client of one application, redirected back to our
/// callback.
fn configured_client(
    settings: &Settings,
    client_id: &str,
    secret: &SecretString,
) -> Result<ConfiguredClient, UpstreamAuthError> {
    let gitea = settings.gitea_url.as_str().trim_end_matches('/');
    let issuer = settings.public_base_url.as_str().trim_end_matches('/');
    let bad = |_| UpstreamAuthError::Unavailable;
    Ok(Client::new(ClientId::new(client_id.to_owned()))
        .set_client_secret(ClientSecret::new(secret.expose_secret().to_owned()))
        .set_auth_uri(AuthUrl::new(format!("{gitea}/login/oauth/authorize")).map_err(bad)?)
        .set_token_uri(TokenUrl::new(format!("{gitea}/login/oauth/access_token")).map_err(bad)?)
        .set_redirect_uri(RedirectUrl::new(format!("{issuer}/oauth/callback")).map_err(bad)?)
        // Gitea reads credentials from the body or Basic; the body form
        // avoids any disagreement on how Basic values are URL-encoded.
        .set_auth_type(AuthType::RequestBody))
}

/// The read application's scopes: `read:` of every category of
/// `OAUTH_SCOPES` (in its order), and `read:user`, which telling who
/// signed in and whether they are an admin needs.
pub fn read_scopes(oauth_scopes: &[String]) -> Vec<String> {
    let mut read: Vec<String> = Vec::new();
    let categories = oauth_scopes
        .iter()
        .filter_map(|scope| scope.split_once(':').map(|(_, category)| category))
        .chain(["user"]);
    for category in categories {
        let scope = format!("read:{category}");
        if !read.contains(&scope) {
            read.push(scope);
        }
    }
    read
}

/// The `oauth2` crate's HTTP function, over our reqwest client. Takes the
/// client by value (a cheap handle) so the future borrows nothing.
pub(super) async fn send(
    http: reqwest::Client,
    request: HttpRequest,
) -> Result<HttpResponse, UpstreamHttpError> {
    let (parts, body) = request.into_parts();
    let response = http
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await
        .map_err(|_| UpstreamHttpError)?;
    let status = response.status();
    let headers = response.headers().clone();
    let body = read_bounded(response)
        .await
        .map_err(|_| UpstreamHttpError)?;
    let mut out = HttpResponse::new(body);
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    Ok(out)
}

/// Transport failure talking to Gitea; deliberately without detail.
#[derive(Debug, thiserror::Error)]
#[error("the request to Gitea failed")]
pub struct UpstreamHttpError;

async fn read_bounded(response: reqwest::Response) -> Result<Vec<u8>, UpstreamAuthError> {
    crate::bounded_body::read_whole(response, MAX_UPSTREAM_BODY)
        .await
        .map(Vec::from)
        .ok_or(UpstreamAuthError::Unavailable)
}

fn classify<RE: std::error::Error + 'static>(
    err: RequestTokenError<RE, BasicErrorResponse>,
) -> UpstreamAuthError {
    match err {
        // Gitea answers `unauthorized_client` for an expired, unparsable or
        // already-used code or refresh token, so it means the grant is dead;
        // `invalid_client` is what it says about our own credentials.
        RequestTokenError::ServerResponse(response) => match response.error() {
            BasicErrorResponseType::InvalidGrant | BasicErrorResponseType::UnauthorizedClient => {
                UpstreamAuthError::InvalidGrant
            }
            BasicErrorResponseType::InvalidClient => UpstreamAuthError::InvalidClient,
            _ => UpstreamAuthError::Unavailable,
        },
        _ => UpstreamAuthError::Unavailable,
    }
}

fn answer_from(
    response: &GiteaTokenResponse,
    previous_refresh: Option<&SecretString>,
    now: UnixTime,
) -> TokenAnswer {
    let tokens = GiteaTokens {
        access_token: SecretString::from(response.access_token().secret().to_owned()),
        refresh_token: response
            .refresh_token()
            .map(|t| SecretString::from(t.secret().to_owned()))
            .or_else(|| previous_refresh.cloned()),
        expires_at: response
            .expires_in()
            .map(|d| now.saturating_add(d.as_secs() as i64)),
        issued_at: Some(now),
    };
    TokenAnswer {
        tokens,
        id_token: response.extra_fields().id_token.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(scopes: &[&str]) -> Vec<String> {
        scopes.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_read_application_asks_read_of_every_category_and_the_user() {
        let default = owned(crate::config::DEFAULT_OAUTH_SCOPES);
        let read = read_scopes(&default);
        assert!(read.iter().all(|s| s.starts_with("read:")), "{read:?}");
        assert_eq!(
            read,
            owned(&[
                "read:user",
                "read:repository",
                "read:issue",
                "read:organization",
                "read:notification",
                "read:package",
                "read:misc",
            ])
        );
        assert_eq!(
            read_scopes(&owned(&["write:issue"])),
            owned(&["read:issue", "read:user"])
        );
    }
}
