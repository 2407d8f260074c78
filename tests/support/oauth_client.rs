//! An OAuth client for the tests, written against the wire only: it
//! registers, walks `/authorize` → consent page → (fake) Gitea → callback
//! with a real cookie jar of its own, and redeems and refreshes tokens over
//! loopback HTTP. Redirects are never followed automatically, so every hop
//! can be inspected.

use std::collections::HashMap;
use std::sync::Arc;

use aegis_gitea_mcp::app::App;
use aegis_gitea_mcp::clock::ManualClock;
use aegis_gitea_mcp::config::{Settings, SettingsSource};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, LOCATION, SET_COOKIE};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::fake_gitea::{
    ADMIN_TOKEN, FakeGitea, OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET, OAUTH_READ_CLIENT_ID,
    OAUTH_READ_CLIENT_SECRET,
};
use super::{BEARER, postgres};

pub const ENCRYPTION_KEY: &str = "test-encryption-key-0123456789abcdef-xyz";
pub const CLIENT_REDIRECT: &str = "http://127.0.0.1:5599/callback";

/// Which database the gateway's store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A gateway with OAuth configured, in front of the fake Gitea, with a
/// clock the test moves.
pub struct OAuthGateway {
    pub url: String,
    pub fake: Arc<FakeGitea>,
    pub clock: Arc<ManualClock>,
    pub http: reqwest::Client,
    pub data_dir: tempfile::TempDir,
    pub settings: Vec<(String, String)>,
}

/// What a gateway is started from, when the test chooses it.
pub struct GatewayParts {
    pub fake: FakeGitea,
    pub listener: tokio::net::TcpListener,
    pub data_dir: tempfile::TempDir,
    pub clock: Arc<ManualClock>,
}

/// A registered client as the tests hold it.
#[derive(Debug, Clone)]
pub struct TestClient {
    pub client_id: String,
    pub client_secret: Option<String>,
    pub redirect_uri: String,
}

/// A PKCE pair.
#[derive(Debug, Clone)]
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Default for Pkce {
    fn default() -> Self {
        Self::new()
    }
}

impl Pkce {
    pub fn new() -> Self {
        let verifier = format!("verifier-{}-{}", random_hex(), "x".repeat(30));
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        Self {
            verifier,
            challenge,
        }
    }
}

pub fn random_hex() -> String {
    use rand::Rng;
    let mut bytes = [0u8; 12];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Tokens from `/token`.
#[derive(Debug, Clone)]
pub struct Tokens {
    pub access_token: String,
    pub refresh_token: String,
    pub body: Value,
}

/// A browser's cookie jar, by name (paths and expiry are not modelled).
#[derive(Debug, Default, Clone)]
pub struct Browser {
    pub cookies: HashMap<String, String>,
}

impl Browser {
    pub fn absorb(&mut self, headers: &HeaderMap) {
        for value in headers.get_all(SET_COOKIE) {
            let text = value.to_str().unwrap();
            let pair = text.split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            if value.is_empty() {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
        }
    }

    pub fn header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The consent page's form, as a browser would submit it.
#[derive(Debug, Clone)]
pub struct ConsentForm {
    pub request_id: String,
    pub csrf_token: String,
    pub html: String,
}

pub fn location(response: &reqwest::Response) -> String {
    response
        .headers()
        .get(LOCATION)
        .unwrap_or_else(|| panic!("a redirect, got {}", response.status()))
        .to_str()
        .unwrap()
        .to_owned()
}

/// The query parameters of a URL, as a multimap.
pub fn query_of(url: &str) -> Vec<(String, String)> {
    let query = url.split_once('?').map(|(_, q)| q).unwrap_or("");
    url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect()
}

pub fn param(url: &str, name: &str) -> Option<String> {
    query_of(url)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

pub fn hidden_field(html: &str, name: &str) -> String {
    let marker = format!(r#"name="{name}" value=""#);
    let start = html.find(&marker).unwrap_or_else(|| panic!("field {name}")) + marker.len();
    let end = start + html[start..].find('"').unwrap();
    html[start..end].to_owned()
}

impl OAuthGateway {
    /// The audit log's entries named `event`, in log order.
    pub fn audit_events(&self, event: &str) -> Vec<Value> {
        std::fs::read_to_string(self.data_dir.path().join("audit.log"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["event"] == event)
            .collect()
    }

    /// Starts the fake Gitea and a gateway with OAuth on `backend`, plus
    /// `extra` settings (an empty value removes a setting).
    pub async fn start(backend: Backend, extra: &[(&str, &str)]) -> Self {
        let database_url = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(postgres::fresh_database(&postgres::server_url()).await),
        };
        Self::start_on(database_url, extra).await
    }

    /// As [`Self::start`], on the PostgreSQL database `database_url`, or
    /// SQLite for `None`.
    pub async fn start_on(database_url: Option<String>, extra: &[(&str, &str)]) -> Self {
        aegis_gitea_mcp::tls::install_crypto_provider();
        let parts = GatewayParts {
            fake: FakeGitea::start().await,
            listener: tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
            data_dir: tempfile::tempdir().unwrap(),
            clock: Arc::new(ManualClock::new()),
        };
        Self::start_from(parts, database_url, extra).await
    }

    /// As [`Self::start_on`], from parts the test chose: a listener on a
    /// port of its choice, a data dir it filled, a clock set to its time,
    /// a fake Gitea it prepared (a store fixture's replay).
    pub async fn start_from(
        parts: GatewayParts,
        database_url: Option<String>,
        extra: &[(&str, &str)],
    ) -> Self {
        aegis_gitea_mcp::tls::install_crypto_provider();
        let GatewayParts {
            fake,
            listener,
            data_dir,
            clock,
        } = parts;
        let url = format!("http://{}", listener.local_addr().unwrap());
        fake.set_oauth_redirect_uri(&format!("{url}/oauth/callback"));
        let mut settings: Vec<(String, String)> = vec![
            ("GITEA_URL".into(), fake.url.clone()),
            ("GITEA_TOKEN".into(), ADMIN_TOKEN.into()),
            ("MCP_BEARER_TOKEN".into(), BEARER.into()),
            ("PUBLIC_BASE_URL".into(), url.clone()),
            ("DATA_DIR".into(), data_dir.path().display().to_string()),
            ("GITEA_OAUTH_CLIENT_ID".into(), OAUTH_CLIENT_ID.into()),
            (
                "GITEA_OAUTH_CLIENT_SECRET".into(),
                OAUTH_CLIENT_SECRET.into(),
            ),
            (
                "GITEA_OAUTH_READ_CLIENT_ID".into(),
                OAUTH_READ_CLIENT_ID.into(),
            ),
            (
                "GITEA_OAUTH_READ_CLIENT_SECRET".into(),
                OAUTH_READ_CLIENT_SECRET.into(),
            ),
            ("TOKEN_ENCRYPTION_KEY".into(), ENCRYPTION_KEY.into()),
            // Tests sign in far faster than people; `tests/gateway/rate_limits.rs`
            // turns this limit on where it is the subject.
            ("RATE_LIMIT_SIGN_INS_PER_IP".into(), "0".into()),
        ];
        if let Some(db) = database_url {
            settings.push(("DATABASE_URL".into(), db));
        }
        for (k, v) in extra {
            settings.retain(|(key, _)| key != k);
            if !v.is_empty() {
                settings.push(((*k).into(), (*v).into()));
            }
        }
        serve(listener, &settings, clock.clone()).await;
        Self {
            url,
            fake: Arc::new(fake),
            clock,
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            data_dir,
            settings,
        }
    }

    /// Another replica of this gateway: the same settings (store, keys,
    /// public URL, fake Gitea) and clock, its own listener and data dir
    /// (its own audit log). Returns its base URL; it serves until the test
    /// ends. Meaningful on PostgreSQL, the store replicas share.
    pub async fn replica(&self) -> (String, tempfile::TempDir) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let data_dir = tempfile::tempdir().unwrap();
        let mut settings = self.settings.clone();
        settings.retain(|(key, _)| key != "DATA_DIR");
        settings.push(("DATA_DIR".into(), data_dir.path().display().to_string()));
        serve(listener, &settings, self.clock.clone()).await;
        (url, data_dir)
    }

    /// Every Gitea session ends: Gitea answers 401 to the access tokens it
    /// minted, and our record of their expiry (1 h) passes too.
    pub fn expire_gitea_sessions(&self) {
        self.fake.expire_access_tokens();
        self.clock.advance(3600 - 10);
    }

    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.url)
    }

    pub fn resource(&self) -> String {
        self.mcp_url()
    }

    /// `POST /register` with `body`; returns status and JSON.
    pub async fn register_raw(&self, body: Value) -> (StatusCode, Value) {
        let response = self
            .http
            .post(format!("{}/register", self.url))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Registers a client with `auth_method` and one redirect URI.
    pub async fn register(&self, auth_method: &str, redirect_uri: &str) -> TestClient {
        let (status, body) = self
            .register_raw(json!({
                "client_name": "Test client",
                "redirect_uris": [redirect_uri],
                "token_endpoint_auth_method": auth_method,
                "grant_types": ["authorization_code", "refresh_token"],
            }))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        TestClient {
            client_id: body["client_id"].as_str().unwrap().to_owned(),
            client_secret: body["client_secret"].as_str().map(str::to_owned),
            redirect_uri: redirect_uri.to_owned(),
        }
    }

    pub async fn public_client(&self) -> TestClient {
        self.register("none", CLIENT_REDIRECT).await
    }

    /// The standard authorize query for `client`.
    pub fn authorize_params(
        &self,
        client: &TestClient,
        pkce: &Pkce,
        state: &str,
    ) -> Vec<(String, String)> {
        vec![
            ("response_type".into(), "code".into()),
            ("client_id".into(), client.client_id.clone()),
            ("redirect_uri".into(), client.redirect_uri.clone()),
            ("code_challenge".into(), pkce.challenge.clone()),
            ("code_challenge_method".into(), "S256".into()),
            ("state".into(), state.into()),
            ("resource".into(), self.resource()),
            ("scope".into(), "gitea:read".into()),
        ]
    }

    /// `GET /authorize` with exactly `params` (repeats allowed).
    pub async fn authorize_raw(
        &self,
        browser: &mut Browser,
        params: &[(String, String)],
    ) -> reqwest::Response {
        let query = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(params)
            .finish();
        let response = self
            .http
            .get(format!("{}/authorize?{query}", self.url))
            .header(reqwest::header::COOKIE, browser.header())
            .send()
            .await
            .unwrap();
        browser.absorb(response.headers());
        response
    }

    /// `/authorize` with `params` from a browser with no cookies.
    pub async fn authorize_fresh(&self, params: &[(String, String)]) -> reqwest::Response {
        self.authorize_raw(&mut Browser::default(), params).await
    }

    /// `/authorize` that must show the consent page; returns its form.
    pub async fn consent_page(
        &self,
        browser: &mut Browser,
        params: &[(String, String)],
    ) -> ConsentForm {
        let response = self.authorize_raw(browser, params).await;
        assert_eq!(response.status(), StatusCode::OK, "consent page expected");
        let html = response.text().await.unwrap();
        ConsentForm {
            request_id: hidden_field(&html, "request_id"),
            csrf_token: hidden_field(&html, "csrf_token"),
            html,
        }
    }

    /// Posts the consent form with `decision` from `browser`.
    pub async fn decide(
        &self,
        browser: &mut Browser,
        form: &ConsentForm,
        decision: &str,
    ) -> reqwest::Response {
        let response = self
            .decide_from_origin(browser, form, decision, "null")
            .await;
        browser.absorb(response.headers());
        response
    }

    /// Posts the consent form with `decision` as a page at `origin` would
    /// (`null`: the browser hides it); the browser keeps its cookies.
    /// `approve` approves reading only (the page's default),
    /// `approve-write` approves with "read and write" chosen.
    pub async fn decide_from_origin(
        &self,
        browser: &Browser,
        form: &ConsentForm,
        decision: &str,
        origin: &str,
    ) -> reqwest::Response {
        let (decision, access) = match decision {
            "approve-write" => ("approve", "write"),
            other => (other, "read"),
        };
        self.http
            .post(format!("{}/authorize/consent", self.url))
            .header(reqwest::header::COOKIE, browser.header())
            .header(reqwest::header::ORIGIN, origin)
            .form(&[
                ("request_id", form.request_id.as_str()),
                ("csrf_token", form.csrf_token.as_str()),
                ("decision", decision),
                ("access", access),
            ])
            .send()
            .await
            .unwrap()
    }

    /// Follows the approval to the (fake) Gitea, which signs `login` in and
    /// redirects to our callback; returns the callback URL.
    pub async fn through_gitea(&self, approval: &reqwest::Response, login: &str) -> String {
        assert_eq!(approval.status(), StatusCode::SEE_OTHER);
        self.fake.sign_in_as(login);
        let gitea = self.http.get(location(approval)).send().await.unwrap();
        let callback = location(&gitea);
        assert!(
            callback.starts_with(&format!("{}/oauth/callback", self.url)),
            "{callback}"
        );
        callback
    }

    /// `GET` the callback URL from `browser`.
    pub async fn callback(&self, browser: &mut Browser, callback_url: &str) -> reqwest::Response {
        let response = self
            .http
            .get(callback_url)
            .header(reqwest::header::COOKIE, browser.header())
            .send()
            .await
            .unwrap();
        browser.absorb(response.headers());
        response
    }

    /// The whole browser leg for `client` as `login`: returns the redirect
    /// to the client (carrying our code).
    pub async fn sign_in(&self, client: &TestClient, pkce: &Pkce, login: &str) -> String {
        let params = self.authorize_params(client, pkce, "st-1");
        self.sign_in_with(client, &params, login).await
    }

    /// As [`Self::sign_in`], with exactly `params` at `/authorize`; the
    /// person chooses "read and write".
    pub async fn sign_in_with(
        &self,
        client: &TestClient,
        params: &[(String, String)],
        login: &str,
    ) -> String {
        self.sign_in_deciding(client, params, login, "approve-write")
            .await
    }

    /// The browser leg with `decision` on the consent page (`approve`:
    /// read only, `approve-write`: read and write).
    pub async fn sign_in_deciding(
        &self,
        client: &TestClient,
        params: &[(String, String)],
        login: &str,
        decision: &str,
    ) -> String {
        let mut browser = Browser::default();
        let form = self.consent_page(&mut browser, params).await;
        let approval = self.decide(&mut browser, &form, decision).await;
        let callback_url = self.through_gitea(&approval, login).await;
        let done = self.callback(&mut browser, &callback_url).await;
        assert_eq!(done.status(), StatusCode::SEE_OTHER);
        let to_client = location(&done);
        assert!(to_client.starts_with(&client.redirect_uri), "{to_client}");
        to_client
    }

    /// `POST /token` with `form`, authenticating `client` per its method
    /// (secret in the body).
    pub async fn token_raw(&self, client: &TestClient, form: &[(&str, &str)]) -> reqwest::Response {
        let mut fields: Vec<(&str, &str)> = form.to_vec();
        fields.push(("client_id", &client.client_id));
        if let Some(secret) = &client.client_secret {
            fields.push(("client_secret", secret));
        }
        self.http
            .post(format!("{}/token", self.url))
            .form(&fields)
            .send()
            .await
            .unwrap()
    }

    /// Redeems `code` with the right verifier and redirect URI.
    pub async fn redeem(&self, client: &TestClient, code: &str, pkce: &Pkce) -> reqwest::Response {
        self.token_raw(
            client,
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", &client.redirect_uri),
                ("code_verifier", &pkce.verifier),
            ],
        )
        .await
    }

    /// The whole flow: tokens for `client` as `login`.
    pub async fn tokens(&self, client: &TestClient, login: &str) -> Tokens {
        let pkce = Pkce::new();
        let to_client = self.sign_in(client, &pkce, login).await;
        let code = param(&to_client, "code").expect("code");
        let response = self.redeem(client, &code, &pkce).await;
        assert_eq!(response.status(), StatusCode::OK);
        tokens_from(response).await
    }

    /// The whole flow for the MCP URL `path` (`/mcp/x/issue`): tokens whose
    /// resource is that URL, read and write chosen.
    pub async fn tokens_at(&self, client: &TestClient, login: &str, path: &str) -> Tokens {
        self.tokens_deciding(client, login, path, "approve-write")
            .await
    }

    /// As [`Self::tokens_at`], the person choosing "read only".
    pub async fn read_tokens_at(&self, client: &TestClient, login: &str, path: &str) -> Tokens {
        self.tokens_deciding(client, login, path, "approve").await
    }

    async fn tokens_deciding(
        &self,
        client: &TestClient,
        login: &str,
        path: &str,
        decision: &str,
    ) -> Tokens {
        let pkce = Pkce::new();
        let mut params = self.authorize_params(client, &pkce, "st-1");
        params.retain(|(name, _)| name != "resource");
        params.push(("resource".into(), format!("{}{path}", self.url)));
        let to_client = self
            .sign_in_deciding(client, &params, login, decision)
            .await;
        let code = param(&to_client, "code").expect("code");
        let response = self.redeem(client, &code, &pkce).await;
        assert_eq!(response.status(), StatusCode::OK);
        tokens_from(response).await
    }

    /// Signs `login` in to the pages (`/account/sign-in?next=…`) in a fresh
    /// browser; returns the browser holding the session cookie.
    pub async fn page_sign_in(&self, login: &str, next: &str) -> Browser {
        let mut browser = Browser::default();
        let start = self
            .http
            .get(format!("{}/account/sign-in?next={next}", self.url))
            .send()
            .await
            .unwrap();
        browser.absorb(start.headers());
        let callback_url = self.through_gitea(&start, login).await;
        let done = self.callback(&mut browser, &callback_url).await;
        assert_eq!(done.status(), StatusCode::SEE_OTHER);
        assert_eq!(location(&done), format!("/{next}"));
        assert!(browser.cookies.contains_key("aegis_session"));
        browser
    }

    /// `GET path` from `browser`.
    pub async fn page(&self, browser: &Browser, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.url))
            .header(reqwest::header::COOKIE, browser.header())
            .send()
            .await
            .unwrap()
    }

    /// `POST path` with `fields` from `browser` (as a same-origin form).
    pub async fn post_form(
        &self,
        browser: &Browser,
        path: &str,
        fields: &[(&str, &str)],
    ) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.url))
            .header(reqwest::header::COOKIE, browser.header())
            .header(reqwest::header::ORIGIN, "null")
            .form(fields)
            .send()
            .await
            .unwrap()
    }

    pub async fn refresh(&self, client: &TestClient, refresh_token: &str) -> reqwest::Response {
        self.token_raw(
            client,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token),
            ],
        )
        .await
    }

    pub async fn revoke(&self, token: &str) -> reqwest::Response {
        self.http
            .post(format!("{}/revoke", self.url))
            .form(&[("token", token)])
            .send()
            .await
            .unwrap()
    }

    /// A raw JSON-RPC `tools/call` at `/mcp` with `token`: the HTTP status
    /// and, on 200, the tool result's parsed envelope.
    pub async fn call_tool(&self, token: &str, name: &str, args: Value) -> (StatusCode, Value) {
        self.call_tool_at("/mcp", token, name, args).await
    }

    /// `tools/call` at the MCP URL `path`.
    pub async fn call_tool_at(
        &self,
        path: &str,
        token: &str,
        name: &str,
        args: Value,
    ) -> (StatusCode, Value) {
        self.call_tool_on(&self.url, path, token, name, args).await
    }

    /// `gitea_user_get_current` at `/mcp` of the gateway (or replica) at
    /// `base`: who the token acts as there.
    pub async fn whoami_on(&self, base: &str, token: &str) -> (StatusCode, Value) {
        self.call_tool_on(base, "/mcp", token, "gitea_user_get_current", json!({}))
            .await
    }

    /// The whole HTTP answer to a JSON-RPC `tools/call` at `path` of the
    /// gateway (or replica) at `base`.
    pub async fn tools_call_response(
        &self,
        base: &str,
        path: &str,
        token: &str,
        name: &str,
        args: Value,
    ) -> reqwest::Response {
        self.http
            .post(format!("{base}{path}"))
            .bearer_auth(token)
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .header("mcp-protocol-version", "2025-06-18")
            .json(&json!({
                "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": name, "arguments": args},
            }))
            .send()
            .await
            .unwrap()
    }

    /// `tools/call` at `path` of the gateway (or replica) at `base`.
    pub async fn call_tool_on(
        &self,
        base: &str,
        path: &str,
        token: &str,
        name: &str,
        args: Value,
    ) -> (StatusCode, Value) {
        let response = self
            .tools_call_response(base, path, token, name, args)
            .await;
        let status = response.status();
        if status != StatusCode::OK {
            return (status, Value::Null);
        }
        let body: Value = response.json().await.unwrap();
        let text = body["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("null");
        (status, serde_json::from_str(text).unwrap())
    }
}

pub async fn tokens_from(response: reqwest::Response) -> Tokens {
    let body: Value = response.json().await.unwrap();
    Tokens {
        access_token: body["access_token"].as_str().unwrap().to_owned(),
        refresh_token: body["refresh_token"].as_str().unwrap().to_owned(),
        body,
    }
}

/// Builds the gateway from `pairs` as the CLI does (with `clock`) and
/// serves it on `listener`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    pairs: &[(String, String)],
    clock: Arc<ManualClock>,
) {
    let settings = Settings::from_source(&SettingsSource::from_pairs(pairs.to_vec())).unwrap();
    let app = App::build_with_clock(settings, clock).await.unwrap();
    let router = aegis_gitea_mcp::http::router(app);
    tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await
        .unwrap();
    });
}
