//! The OAuth 2.1 authorization server for MCP clients, and the resolver
//! that turns our tokens into a user's Gitea identity.
//!
//! Request flow (see `docs/oauth.md`): discovery (`metadata`) → client
//! registration (`register`, or a metadata document: `client_metadata`) →
//! `/authorize` parks the request and shows consent (`authorize`) → the user
//! signs in at Gitea (`upstream`) → `/oauth/callback` takes the parked
//! sign-in and checks it (`callback`), and `authorization` stores the grant
//! with our code → `/token` (`token`) → `/revoke`
//! (`revoke`). At `/mcp`, `resolver` maps an `agm_` token to the grant's
//! Gitea session. The store is reached only through [`Store`]. The
//! routes are declared in the HTTP layer, which mounts these handlers.

pub(crate) mod authorization;
pub(crate) mod authorize;
pub(crate) mod authorize_request;
pub(crate) mod callback;
pub(crate) mod client_auth;
pub(crate) mod client_metadata;
pub(crate) mod error;
pub(crate) mod events;
pub(crate) mod grant_end;
pub(crate) mod id_token;
pub(crate) mod metadata;
pub(crate) mod params;
pub(crate) mod pkce;
pub(crate) mod public_address;
pub(crate) mod redirect_uri;
pub(crate) mod register;
pub(crate) mod resolver;
pub(crate) mod revoke;
pub(crate) mod scope_text;
pub mod scopes;
pub(crate) mod sign_in;
pub(crate) mod token;
pub(crate) mod tokens;
pub(crate) mod upstream;

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::catalog::Catalog;
use crate::clock::Clock;
use crate::config::Settings;
use crate::store::Store;
use crate::surface::{MCP_PATH, Surface, catalog_toolsets};
use upstream::GiteaOAuth;

/// Body limit of the OAuth routes and the consent form (SEC-01).
pub const OAUTH_BODY_LIMIT: usize = 64 * 1024;

/// What the OAuth server needs from the settings, derived once.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// `PUBLIC_BASE_URL`, no trailing slash.
    pub issuer: String,
    /// The default protected resource: `PUBLIC_BASE_URL/mcp`. Every MCP
    /// URL of ours (`/mcp/all`, `/mcp/x/…`, `/readonly`) is a resource of
    /// its own; a token works only at the one it was issued for.
    pub resource: String,
    /// The catalog whose toolsets name the `/mcp/x/…` resources.
    pub catalog: Catalog,
    pub redirect_allowlist: Vec<String>,
    /// https: cookies get `__Host-` and `Secure`.
    pub secure_cookies: bool,
    /// Test setting: metadata documents may live on private addresses and
    /// plain-http loopback.
    pub metadata_documents_on_private_addresses: bool,
    /// `ADMIN_LOGINS`: admins of the admin page besides Gitea site admins.
    pub admin_logins: Vec<String>,
    /// `READ_ONLY`: every MCP URL only reads (what the pages say of a
    /// connection).
    pub server_read_only: bool,
}

impl OAuthConfig {
    pub fn from_settings(settings: &Settings, catalog: Catalog) -> Self {
        let issuer = settings
            .public_base_url
            .as_str()
            .trim_end_matches('/')
            .to_owned();
        Self {
            resource: format!("{issuer}{MCP_PATH}"),
            catalog,
            secure_cookies: settings.public_base_url.scheme() == "https",
            issuer,
            redirect_allowlist: settings.oauth_redirect_allowlist.clone(),
            metadata_documents_on_private_addresses: settings
                .oauth_metadata_documents_on_private_addresses,
            admin_logins: settings.admin_logins.clone(),
            server_read_only: settings.exposure.read_only,
        }
    }

    /// The resource (RFC 8707) of one of our MCP URLs.
    pub fn resource_for(&self, surface: &Surface) -> String {
        format!("{}{}", self.issuer, surface.path())
    }

    /// The surface an MCP URL path of ours names, if it is one.
    pub fn surface_of_path(&self, path: &str) -> Option<Surface> {
        Surface::parse(path, catalog_toolsets(&self.catalog)).ok()
    }

    /// RFC 8707: one of our MCP URLs (a trailing slash is dropped), in its
    /// canonical form (toolsets sorted); `None` for anything else. Without
    /// a `resource`, the default `/mcp`.
    pub fn canonical_resource(&self, presented: Option<&str>) -> Option<String> {
        let Some(presented) = presented else {
            return Some(self.resource.clone());
        };
        let presented = presented.strip_suffix('/').unwrap_or(presented);
        let path = presented.strip_prefix(&self.issuer)?;
        self.surface_of_path(path)
            .map(|surface| self.resource_for(&surface))
    }
}

/// The authorization server: configuration, store, clock and the upstream
/// Gitea client. Shared by the OAuth routes and the `/mcp` resolver.
#[derive(Debug)]
pub struct OAuthServer {
    config: OAuthConfig,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    upstream: GiteaOAuth,
    metadata_documents: client_metadata::MetadataDocuments,
    resolver: resolver::RefreshFlights,
    /// OAuth and admin events are recorded here (best effort).
    audit: crate::audit::AuditLog,
}

impl OAuthServer {
    pub fn new(
        config: OAuthConfig,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        upstream: GiteaOAuth,
        audit: crate::audit::AuditLog,
    ) -> Self {
        Self {
            config,
            store,
            clock,
            upstream,
            metadata_documents: Default::default(),
            resolver: Default::default(),
            audit,
        }
    }

    pub fn now(&self) -> i64 {
        self.clock.now()
    }

    pub fn config(&self) -> &OAuthConfig {
        &self.config
    }

    /// The clock every expiry of the store is measured with.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The store, for the people's pages and the health check.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Our client at Gitea (the pages look up Gitea site admins with it).
    pub fn upstream(&self) -> &GiteaOAuth {
        &self.upstream
    }

    pub fn audit(&self) -> &crate::audit::AuditLog {
        &self.audit
    }
}

/// The CORS policy of the OAuth API routes: any origin, no credentials.
pub fn api_cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(AllowOrigin::any())
        .allow_methods([Method::GET, Method::POST, Method::OPTIONS])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::HeaderName::from_static("mcp-protocol-version"),
        ])
        .expose_headers([header::RETRY_AFTER, header::WWW_AUTHENTICATE])
        .max_age(std::time::Duration::from_secs(3600))
}

/// The document of the MCP URL appended to the well-known path (`/mcp`
/// when none is); `resource` repeats that URL as the client knows it, since
/// clients check that it matches the URL they connect to. 404 for a path
/// that is not one of our MCP URLs.
pub async fn protected_resource(State(server): State<Arc<OAuthServer>>, uri: Uri) -> Response {
    let path = uri
        .path()
        .strip_prefix(metadata::PROTECTED_RESOURCE_PATH)
        .filter(|path| !path.is_empty())
        .unwrap_or(crate::surface::MCP_PATH);
    if server.config.surface_of_path(path).is_none() {
        return (StatusCode::NOT_FOUND, "not an MCP endpoint of this server").into_response();
    }
    let resource = format!("{}{path}", server.config.issuer);
    discovery_json(metadata::protected_resource_metadata(
        &server.config,
        &resource,
    ))
}

/// `/.well-known/oauth-authorization-server[/mcp]`.
pub async fn authorization_server(State(server): State<Arc<OAuthServer>>) -> Response {
    discovery_json(metadata::authorization_server_metadata(&server.config))
}

fn discovery_json(body: serde_json::Value) -> Response {
    let mut response = axum::Json(body).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    response
}

/// A configuration for unit tests: issuer `https://mcp.example.com`.
#[cfg(test)]
pub(crate) fn test_config() -> OAuthConfig {
    OAuthConfig {
        issuer: "https://mcp.example.com".into(),
        resource: "https://mcp.example.com/mcp".into(),
        catalog: Catalog::bundled(),
        redirect_allowlist: vec![],
        secure_cookies: true,
        metadata_documents_on_private_addresses: false,
        admin_logins: vec![],
        server_read_only: false,
    }
}

/// An authorization server for unit tests of the protocol operations: a
/// SQLite store and an audit log in a temporary directory, a clock the test
/// moves, and a Gitea client that is never called. No socket is opened.
#[cfg(test)]
pub(crate) struct TestServer {
    pub server: Arc<OAuthServer>,
    pub clock: Arc<crate::clock::ManualClock>,
    _dir: tempfile::TempDir,
}

#[cfg(test)]
pub(crate) async fn test_server() -> TestServer {
    use crate::config::SettingsSource;
    crate::tls::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let key = "unit-test-key-material-0123456789abcdef";
    let settings = Settings::from_source(&SettingsSource::from_pairs([
        ("GITEA_URL", "https://gitea.example.com"),
        ("GITEA_OAUTH_CLIENT_ID", "gateway-at-gitea"),
        ("GITEA_OAUTH_CLIENT_SECRET", "gateway-secret-at-gitea"),
        ("TOKEN_ENCRYPTION_KEY", key),
        ("PUBLIC_BASE_URL", "https://mcp.example.com"),
    ]))
    .unwrap();
    let upstream = upstream::GiteaOAuth::from_settings(&settings)
        .unwrap()
        .unwrap();
    let cipher =
        crate::store::cipher::TokenCipher::new(&[secrecy::SecretString::from(key)]).unwrap();
    let store = crate::store::open_store(
        &crate::store::StoreLocation::Sqlite(dir.path().join("data")),
        cipher,
        crate::store::StoreLimits::default(),
    )
    .await
    .unwrap();
    let audit = crate::audit::AuditLog::open_with(crate::audit::AuditOptions::new(
        &dir.path().join("audit"),
        None,
    ))
    .await
    .unwrap();
    let clock = Arc::new(crate::clock::ManualClock::new());
    let server = Arc::new(OAuthServer::new(
        test_config(),
        store,
        clock.clone(),
        upstream,
        audit,
    ));
    TestServer {
        server,
        clock,
        _dir: dir,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> OAuthConfig {
        test_config()
    }

    #[test]
    fn the_resource_defaults_and_normalises_its_trailing_slash() {
        let c = config();
        assert_eq!(c.canonical_resource(None).unwrap(), c.resource);
        assert_eq!(
            c.canonical_resource(Some("https://mcp.example.com/mcp/"))
                .unwrap(),
            c.resource
        );
        assert_eq!(c.canonical_resource(Some("https://mcp.example.com")), None);
        assert_eq!(c.canonical_resource(Some("https://evil.example/mcp")), None);
        assert_eq!(
            c.canonical_resource(Some("https://mcp.example.com.evil/mcp")),
            None
        );
    }

    #[test]
    fn every_mcp_url_of_ours_is_a_resource_in_canonical_form() {
        let c = config();
        assert_eq!(
            c.canonical_resource(Some("https://mcp.example.com/mcp/x/raw,issue/readonly"))
                .unwrap(),
            "https://mcp.example.com/mcp/x/issue,raw/readonly"
        );
        assert_eq!(
            c.canonical_resource(Some("https://mcp.example.com/mcp/all"))
                .unwrap(),
            "https://mcp.example.com/mcp/all"
        );
        assert_eq!(
            c.canonical_resource(Some("https://mcp.example.com/mcp/x/nope")),
            None
        );
        assert_eq!(
            c.canonical_resource(Some("https://mcp.example.com/other")),
            None
        );
    }
}
