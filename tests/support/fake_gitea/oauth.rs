//! The fake's OAuth2 provider, after Gitea 1.27's
//! (`routers/web/auth/oauth2_provider.go`), for two registered confidential
//! applications, the gateway's read-write one ([`OAUTH_CLIENT_ID`] /
//! [`OAUTH_CLIENT_SECRET`]) and its read one ([`OAUTH_READ_CLIENT_ID`] /
//! [`OAUTH_READ_CLIENT_SECRET`]), whose redirect URI the test sets once it
//! knows it (`FakeGitea::set_oauth_redirect_uri`). Each user has one grant
//! per application, with the scopes of the first authorize request (Gitea
//! never widens them); codes and tokens belong to their application.
//!
//! * `GET /login/oauth/authorize` needs a browser session at Gitea. Nobody
//!   signed in: 303 to `/user/login?redirect_to=…` (plus Gitea's
//!   `redirect_to` cookie). Signed in (`FakeGitea::sign_in_as`): the user
//!   has already granted the app, so, as Gitea does for a confidential
//!   client with a grant, it 303s straight to the redirect URI with `code`
//!   (and `state` when one was sent). An unknown `client_id` or an
//!   unregistered `redirect_uri` get Gitea's HTML error page (400), not a
//!   redirect; a `response_type` other than `code`, an unknown
//!   `code_challenge_method`, or `FakeGitea::deny_next_authorization`
//!   redirect back with `error`, `error_description` and `state`.
//! * `POST /login/oauth/access_token` takes a form body only; the client
//!   authenticates with `client_id`/`client_secret` in the body or with
//!   HTTP Basic. Grants `authorization_code` (single-use code; PKCE checked
//!   when the authorize request carried a challenge; `redirect_uri` must be
//!   the authorize request's) and `refresh_token` (every refresh mints a new
//!   access and refresh token; old refresh tokens stay valid unless
//!   `FakeGitea::set_invalidate_refresh_tokens`). Answers carry
//!   `Cache-Control: no-store`; errors are 400 with RFC 6749 JSON and
//!   Gitea's own codes, which are not always the RFC's: a wrong secret on a
//!   code exchange, an unknown or replayed code, a failed PKCE check and an
//!   unregistered `redirect_uri` are `unauthorized_client`; a wrong secret
//!   on a refresh is `invalid_client`; a missing `redirect_uri`, or a
//!   registered one other than the authorize request's, is `invalid_grant`.
//! * Access tokens (`gtoa_<login>_…`) live [`DEFAULT_ACCESS_TOKEN_LIFETIME`]
//!   seconds unless the test says otherwise, refresh tokens (`gtor_<login>_…`)
//!   730 hours; on `/api/v1` an access token acts as its owner.
//!
//! The test controls (`sign_in_as`, `expire_access_tokens`, …) are in
//! `oauth/controls.rs`.
//!
//! OpenID Connect (discovery, the key set, signed ID tokens, and forged
//! ones on demand) is in `oauth/oidc.rs`.
//!
//! Scopes are enforced coarsely: on `/api/v1`, a request other than GET or
//! HEAD with an access token whose grant holds no `write:` scope gets
//! Gitea's 403 "token does not have at least one of required scope(s)".
//!
//! Not modelled: the consent page (and so `POST /login/oauth/grant` only
//! answers 400), userinfo, public clients, authorization code expiry, and
//! per-category scope checks.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::json;
use sha2::{Digest, Sha256};

mod carry_over;
mod controls;
pub mod oidc;

pub use oidc::Forgery;

use super::FakeUser;

/// The registered application's client id (Gitea makes them UUIDs).
pub const OAUTH_CLIENT_ID: &str = "4c1f8a52-7d3e-4b9a-9f06-2e8d5c7b1a34";
/// Its client secret, in Gitea's format (`gto_` + 52 base32 characters).
pub const OAUTH_CLIENT_SECRET: &str = "gto_ujzdegxdncf32epf3dhodzdocis2jhtlgmxgedn73u55xtplpft7";
/// The read application's client id.
pub const OAUTH_READ_CLIENT_ID: &str = "9e2b7d41-3c6a-4f58-8b1e-5a7c9d0e2f63";
/// The read application's client secret.
pub const OAUTH_READ_CLIENT_SECRET: &str =
    "gto_rdzdegxdncf32epf3dhodzdocis2jhtlgmxgedn73u55xtplpfr2";

/// One of the two registered applications.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FakeApp {
    ReadWrite,
    Read,
}

impl FakeApp {
    fn of(client_id: &str) -> Option<Self> {
        match client_id {
            OAUTH_CLIENT_ID => Some(Self::ReadWrite),
            OAUTH_READ_CLIENT_ID => Some(Self::Read),
            _ => None,
        }
    }

    pub fn client_id(self) -> &'static str {
        match self {
            Self::ReadWrite => OAUTH_CLIENT_ID,
            Self::Read => OAUTH_READ_CLIENT_ID,
        }
    }

    fn secret(self) -> &'static str {
        match self {
            Self::ReadWrite => OAUTH_CLIENT_SECRET,
            Self::Read => OAUTH_READ_CLIENT_SECRET,
        }
    }
}
/// Authorization codes: `gta_` + 52 base32 characters, as Gitea's.
pub const AUTHORIZATION_CODE_PREFIX: &str = "gta_";
/// Access tokens: `gtoa_<login>_<random>`.
pub const ACCESS_TOKEN_PREFIX: &str = "gtoa_";
/// Refresh tokens: `gtor_<login>_<random>`.
pub const REFRESH_TOKEN_PREFIX: &str = "gtor_";
/// Gitea's `[oauth2] ACCESS_TOKEN_EXPIRATION_TIME` default, in seconds.
pub const DEFAULT_ACCESS_TOKEN_LIFETIME: u64 = 3600;
/// Gitea's `[oauth2] REFRESH_TOKEN_EXPIRATION_TIME` default: 730 hours.
const REFRESH_TOKEN_LIFETIME: Duration = Duration::from_secs(730 * 3600);

/// The PKCE S256 challenge of `verifier`: base64url(SHA-256), no padding.
pub fn s256_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A user's standing permission for the app (Gitea's `oauth2_grant`).
struct Grant {
    id: u64,
    /// Bumped on every token issue when refresh tokens are single-use.
    counter: u64,
    /// The scopes of the first consent (Gitea keeps them for the grant).
    scope: String,
    /// The `nonce` of the latest authorize request that sent one (Gitea
    /// keeps one per grant, not per code).
    nonce: Option<String>,
}

struct Code {
    app: FakeApp,
    login: &'static str,
    redirect_uri: String,
    challenge: String,
    method: String,
}

struct AccessToken {
    app: FakeApp,
    login: &'static str,
    /// Order of minting, for `latest_access_token`.
    serial: u64,
    grant_id: u64,
    expires_at: Instant,
    expired: bool,
}

struct RefreshToken {
    app: FakeApp,
    login: &'static str,
    grant_id: u64,
    counter: u64,
    expires_at: Instant,
    revoked: bool,
}

/// The provider's state, shared by the server task and the test's controls.
pub(super) struct Provider {
    redirect_uris: Vec<String>,
    signed_in: Option<&'static FakeUser>,
    deny_next: bool,
    authorize_queries: Vec<BTreeMap<String, String>>,
    grants: HashMap<(FakeApp, &'static str), Grant>,
    next_grant_id: u64,
    codes: HashMap<String, Code>,
    access: HashMap<String, AccessToken>,
    minted: u64,
    refresh: HashMap<String, RefreshToken>,
    access_lifetime: u64,
    invalidate_refresh_tokens: bool,
    fail_next_refresh: Option<String>,
    token_requests: HashMap<String, usize>,
    /// How the next ID token is forged, if it is.
    forge_next: Option<Forgery>,
    /// The base URL, which is the OpenID issuer.
    base: String,
}

impl Default for Provider {
    fn default() -> Self {
        Self {
            redirect_uris: Vec::new(),
            signed_in: None,
            deny_next: false,
            authorize_queries: Vec::new(),
            grants: HashMap::new(),
            next_grant_id: 1,
            codes: HashMap::new(),
            access: HashMap::new(),
            minted: 0,
            refresh: HashMap::new(),
            access_lifetime: DEFAULT_ACCESS_TOKEN_LIFETIME,
            invalidate_refresh_tokens: false,
            fail_next_refresh: None,
            token_requests: HashMap::new(),
            forge_next: None,
            base: String::new(),
        }
    }
}

impl Provider {
    /// The login an access token acts as, when it is live.
    pub(super) fn access_token_owner(&self, token: &str) -> Option<&'static str> {
        self.live_grant(token).map(|(login, _)| login)
    }

    /// Whether a live access token's grant holds any `write:` scope (a
    /// token that is not one of ours is not limited here).
    pub(super) fn access_token_may_write(&self, token: &str) -> bool {
        match self.live_grant(token) {
            Some((_, grant)) => grant
                .scope
                .split([' ', ','])
                .any(|s| s.starts_with("write:")),
            None => true,
        }
    }

    fn live_grant(&self, token: &str) -> Option<(&'static str, &Grant)> {
        let t = self.access.get(token)?;
        let grant = self
            .grants
            .get(&(t.app, t.login))
            .filter(|g| g.id == t.grant_id)?;
        (!t.expired && Instant::now() < t.expires_at).then_some((t.login, grant))
    }

    /// Gitea compares redirect URIs case-insensitively.
    fn contains_redirect_uri(&self, uri: &str) -> bool {
        self.redirect_uris
            .iter()
            .any(|u| u.eq_ignore_ascii_case(uri))
    }

    /// The user's grant to `app`, created on first use (the consent
    /// already given).
    fn grant_id(&mut self, app: FakeApp, login: &'static str) -> u64 {
        self.grant_for(app, login, "", None)
    }

    /// The user's grant to `app` (created with `scope` on first consent);
    /// a non-empty `nonce` replaces the grant's, as Gitea's `SetNonce`
    /// does.
    fn grant_for(
        &mut self,
        app: FakeApp,
        login: &'static str,
        scope: &str,
        nonce: Option<&str>,
    ) -> u64 {
        let next = &mut self.next_grant_id;
        let grant = self.grants.entry((app, login)).or_insert_with(|| {
            *next += 1;
            Grant {
                id: *next - 1,
                counter: 1,
                scope: scope.to_owned(),
                nonce: None,
            }
        });
        if let Some(nonce) = nonce.filter(|n| !n.is_empty()) {
            grant.nonce = Some(nonce.to_owned());
        }
        grant.id
    }

    fn authorize(&mut self, parts: &Parts) -> Response {
        let mut query = BTreeMap::new();
        for (k, v) in url::form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes()) {
            query.entry(k.into_owned()).or_insert(v.into_owned());
        }
        self.authorize_queries.push(query.clone());
        let Some(account) = self.signed_in else {
            return to_login(parts);
        };
        let get = |name: &str| query.get(name).map(String::as_str).unwrap_or("");
        let (redirect_uri, state) = (get("redirect_uri"), get("state"));
        let Some(app) = FakeApp::of(get("client_id")) else {
            return grant_error_page("unauthorized_client", "Client ID not registered");
        };
        if !self.contains_redirect_uri(redirect_uri) {
            return grant_error_page("invalid_request", "Unregistered Redirect URI");
        }
        let refuse = |error: &str, description: &str| {
            see_other(&with_query(
                redirect_uri,
                &[
                    ("error", error),
                    ("error_description", description),
                    ("state", state),
                ],
            ))
        };
        if get("response_type") != "code" {
            return refuse(
                "unsupported_response_type",
                "Only code response type is supported.",
            );
        }
        // An empty method is fine for a confidential client (and then any
        // challenge is ignored, as Gitea does).
        if !matches!(get("code_challenge_method"), "S256" | "plain" | "") {
            return refuse("invalid_request", "unsupported code challenge method");
        }
        if std::mem::take(&mut self.deny_next) {
            return refuse("access_denied", "the request is denied");
        }
        self.grant_for(app, account.login, get("scope"), Some(get("nonce")));
        let code = format!("{AUTHORIZATION_CODE_PREFIX}{}", random_base32());
        self.codes.insert(
            code.clone(),
            Code {
                app,
                login: account.login,
                redirect_uri: redirect_uri.to_owned(),
                challenge: get("code_challenge").to_owned(),
                method: get("code_challenge_method").to_owned(),
            },
        );
        let mut params = vec![("code", code.as_str())];
        if !state.is_empty() {
            params.push(("state", state));
        }
        see_other(&with_query(redirect_uri, &params))
    }

    fn access_token(&mut self, headers: &HeaderMap, body: &Bytes) -> Response {
        let mut form: HashMap<String, String> = HashMap::new();
        for (k, v) in url::form_urlencoded::parse(body) {
            form.entry(k.into_owned()).or_insert(v.into_owned());
        }
        let field = |name: &str| form.get(name).cloned().unwrap_or_default();
        let grant_type = field("grant_type");
        *self.token_requests.entry(grant_type.clone()).or_default() += 1;

        let is_form = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| {
                v.trim()
                    .eq_ignore_ascii_case("application/x-www-form-urlencoded")
            });
        if !is_form {
            return token_error(
                "invalid_request",
                "the request body must be application/x-www-form-urlencoded",
            );
        }
        let (mut client_id, mut client_secret) = (field("client_id"), field("client_secret"));
        if client_id.is_empty() || client_secret.is_empty() {
            let authorization = headers
                .get(header::AUTHORIZATION)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .unwrap_or_default();
            if !authorization.is_empty() {
                let Some((id, secret)) = parse_basic(&authorization) else {
                    return token_error("invalid_request", "cannot parse basic auth header");
                };
                if !client_id.is_empty() && client_id != id {
                    return token_error(
                        "invalid_request",
                        "client_id in request body inconsistent with Authorization header",
                    );
                }
                if !client_secret.is_empty() && client_secret != secret {
                    return token_error(
                        "invalid_request",
                        "client_secret in request body inconsistent with Authorization header",
                    );
                }
                (client_id, client_secret) = (id, secret);
            }
        }
        let client = Client {
            id: client_id,
            secret: client_secret,
        };
        match grant_type.as_str() {
            "authorization_code" => self.exchange_code(&client, &form),
            "refresh_token" => self.refresh(&client, &field("refresh_token")),
            _ => token_error(
                "unsupported_grant_type",
                "Only refresh_token or authorization_code grant type is supported",
            ),
        }
    }

    /// Gitea's `handleAuthorizationCode`, in its order of checks.
    fn exchange_code(&mut self, client: &Client, form: &HashMap<String, String>) -> Response {
        let field = |name: &str| form.get(name).map(String::as_str).unwrap_or("");
        let Some(app) = FakeApp::of(&client.id) else {
            return token_error(
                "invalid_client",
                &format!("cannot load client with client id: '{}'", client.id),
            );
        };
        if let Some(description) = client.secret_error(app) {
            return token_error("unauthorized_client", description);
        }
        let redirect_uri = field("redirect_uri");
        if !redirect_uri.is_empty() && !self.contains_redirect_uri(redirect_uri) {
            return token_error("unauthorized_client", "unexpected redirect URI");
        }
        let Some(code) = self.codes.get(field("code")).filter(|c| c.app == app) else {
            return token_error("unauthorized_client", "client is not authorized");
        };
        let verifier = field("code_verifier");
        let pkce_ok = match code.method.as_str() {
            "S256" => s256_challenge(verifier) == code.challenge,
            "plain" => verifier == code.challenge,
            _ => true,
        };
        if !pkce_ok {
            return token_error("unauthorized_client", "failed PKCE code challenge");
        }
        if !code.redirect_uri.is_empty() && redirect_uri != code.redirect_uri {
            return token_error(
                "invalid_grant",
                "redirect_uri differs from the original authorization request",
            );
        }
        let login = code.login;
        self.codes.remove(field("code"));
        self.issue(app, login)
    }

    /// Gitea's `handleRefreshToken`, in its order of checks.
    fn refresh(&mut self, client: &Client, refresh_token: &str) -> Response {
        let Some(app) = FakeApp::of(&client.id) else {
            return token_error(
                "invalid_client",
                &format!("cannot load client with client id: {:?}", client.id),
            );
        };
        if let Some(description) = client.secret_error(app) {
            return token_error("invalid_client", description);
        }
        if let Some(error) = self.fail_next_refresh.take() {
            return token_error(&error, "failure injected by the test");
        }
        // A refresh token of the other application is one Gitea cannot
        // find for this client.
        let Some(token) = self
            .refresh
            .get(refresh_token)
            .filter(|t| Instant::now() < t.expires_at && t.app == app)
        else {
            return token_error("unauthorized_client", "unable to parse refresh token");
        };
        let grant = self
            .grants
            .get(&(app, token.login))
            .filter(|g| g.id == token.grant_id);
        let Some(grant) = grant.filter(|_| !token.revoked) else {
            return token_error("invalid_grant", "grant does not exist");
        };
        if self.invalidate_refresh_tokens && grant.counter != token.counter {
            return token_error("unauthorized_client", "token was already used");
        }
        let login = token.login;
        self.issue(app, login)
    }

    /// Gitea's `NewAccessTokenResponse`: a new access and refresh token.
    fn issue(&mut self, app: FakeApp, login: &'static str) -> Response {
        let grant_id = self.grant_id(app, login);
        let invalidate = self.invalidate_refresh_tokens;
        let grant = self.grants.get_mut(&(app, login)).expect("grant exists");
        if invalidate {
            grant.counter += 1;
        }
        let counter = grant.counter;
        let now = Instant::now();
        self.minted += 1;
        let access = format!("{ACCESS_TOKEN_PREFIX}{login}_{}", random_base32());
        let refresh = format!("{REFRESH_TOKEN_PREFIX}{login}_{}", random_base32());
        self.access.insert(
            access.clone(),
            AccessToken {
                app,
                login,
                serial: self.minted,
                grant_id,
                expires_at: now + Duration::from_secs(self.access_lifetime),
                expired: false,
            },
        );
        self.refresh.insert(
            refresh.clone(),
            RefreshToken {
                app,
                login,
                grant_id,
                counter,
                expires_at: now + REFRESH_TOKEN_LIFETIME,
                revoked: false,
            },
        );
        let mut answer = json!({
            "access_token": access,
            "token_type": "bearer",
            "expires_in": self.access_lifetime,
            "refresh_token": refresh,
        });
        // Gitea adds an ID token when the grant's scope has `openid`.
        let grant = &self.grants[&(app, login)];
        let scopes: Vec<&str> = grant.scope.split([' ', ',']).collect();
        if scopes.contains(&"openid") {
            let user = super::user(login).expect("a fake user");
            let forgery = self.forge_next.take();
            if let Some(token) = oidc::id_token(
                &self.base,
                app.client_id(),
                user,
                grant.nonce.as_deref(),
                scopes.contains(&"profile"),
                self.access_lifetime,
                forgery,
            ) {
                answer["id_token"] = json!(token);
            }
        }
        token_response(StatusCode::OK, answer)
    }
}

/// The client credentials a token request carried.
struct Client {
    id: String,
    secret: String,
}

impl Client {
    fn secret_error(&self, app: FakeApp) -> Option<&'static str> {
        if self.secret.is_empty() {
            Some("invalid empty client secret")
        } else if self.secret != app.secret() {
            Some("invalid client secret")
        } else {
            None
        }
    }
}

/// Serves the provider's paths: `/login/oauth/…` and `/user/login`.
pub(super) fn route(
    provider: &Mutex<Provider>,
    parts: &Parts,
    body: &Bytes,
    base: &str,
) -> Response {
    let mut provider = provider.lock().unwrap();
    base.clone_into(&mut provider.base);
    match (parts.method.clone(), parts.uri.path()) {
        (Method::GET, "/.well-known/openid-configuration") => {
            axum::Json(oidc::discovery(base)).into_response()
        }
        (Method::GET, "/login/oauth/keys") => axum::Json(oidc::key_set()).into_response(),
        (Method::GET, "/login/oauth/authorize") => provider.authorize(parts),
        (Method::POST, "/login/oauth/access_token") => provider.access_token(&parts.headers, body),
        // Without a session Gitea sends the browser to sign in; with one,
        // a grant form needs the consent page's session values, which this
        // fake never sets.
        (Method::POST, "/login/oauth/grant") if provider.signed_in.is_none() => to_login(parts),
        (Method::POST, "/login/oauth/grant") => html(StatusCode::BAD_REQUEST, "<p>Bad Request</p>"),
        (Method::GET, "/user/login") => html(
            StatusCode::OK,
            "<h1>Sign In</h1><p>The fake has no sign-in form: tests call sign_in_as.</p>",
        ),
        (_, "/login/oauth/authorize" | "/login/oauth/access_token" | "/login/oauth/grant") => {
            html(StatusCode::METHOD_NOT_ALLOWED, "<p>Method Not Allowed</p>")
        }
        _ => html(StatusCode::NOT_FOUND, "<h1>Page Not Found</h1>"),
    }
}

fn html(status: StatusCode, body: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        format!("<!DOCTYPE html><html><head><title>Gitea</title></head><body>{body}</body></html>"),
    )
        .into_response()
}

/// Gitea's `user/auth/grant_error` page, answered instead of a redirect
/// when the client or its redirect URI cannot be trusted.
fn grant_error_page(error: &str, description: &str) -> Response {
    html(
        StatusCode::BAD_REQUEST,
        &format!("<h2>Authorization failed</h2><p class=\"error\">{error}: {description}</p>"),
    )
}

/// Gitea's sign-in redirect: 303 to the login page, remembering where the
/// browser was going (query parameter and `redirect_to` cookie).
fn to_login(parts: &Parts) -> Response {
    let target = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_owned(), |pq| pq.as_str().to_owned());
    let escaped = go_query_escape(&target);
    let mut response = see_other(&format!("/user/login?redirect_to={escaped}"));
    let cookie = format!("redirect_to={escaped}; Path=/; HttpOnly; SameSite=Lax");
    response
        .headers_mut()
        .insert(header::SET_COOKIE, HeaderValue::from_str(&cookie).unwrap());
    response
}

fn see_other(location: &str) -> Response {
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, HeaderValue::from_str(location).unwrap())],
    )
        .into_response()
}

fn token_response(status: StatusCode, body: serde_json::Value) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

/// Gitea's `handleAccessTokenError`: every error is a 400.
fn token_error(error: &str, description: &str) -> Response {
    token_response(
        StatusCode::BAD_REQUEST,
        json!({"error": error, "error_description": description}),
    )
}

/// `Authorization: Basic base64(id:secret)`, not URL-decoded (as Gitea).
fn parse_basic(value: &str) -> Option<(String, String)> {
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    Some((id.to_owned(), secret.to_owned()))
}

/// `uri` with `set` replacing same-named query parameters, re-encoded the
/// way Go's `url.Values.Encode` does (sorted by key).
fn with_query(uri: &str, set: &[(&str, &str)]) -> String {
    let (rest, fragment) = match uri.split_once('#') {
        Some((rest, fragment)) => (rest, Some(fragment)),
        None => (uri, None),
    };
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut values: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()).into_owned() {
        values.entry(k).or_default().push(v);
    }
    for (k, v) in set {
        values.insert((*k).to_owned(), vec![(*v).to_owned()]);
    }
    let encoded: Vec<String> = values
        .iter()
        .flat_map(|(k, vs)| {
            vs.iter()
                .map(move |v| format!("{}={}", go_query_escape(k), go_query_escape(v)))
        })
        .collect();
    let mut out = format!("{path}?{}", encoded.join("&"));
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// Go's `url.QueryEscape`: unreserved bytes stay, space becomes `+`.
fn go_query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char);
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// 256 unpredictable bits as 52 lowercase base32 characters (Gitea's
/// alphabet): SHA-256 of a per-process random key, a counter and the clock,
/// so the fake needs no RNG crate.
fn random_base32() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut seed = Sha256::new();
    seed.update(hasher.finish().to_le_bytes());
    seed.update(nanos.to_le_bytes());
    let bytes = seed.finalize();
    let mut out = String::with_capacity(52);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for byte in bytes.iter().copied() {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}
