//! Settings: read from the environment (and an env file), validated once at
//! startup, then handed around in application state. A bad setting is a
//! [`ConfigError`] naming the setting and the rule it broke, never its value;
//! the CLI turns it into exit code 2.

mod audit_forward;
mod env_file;
mod parse;
mod sections;
mod telemetry;

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use secrecy::SecretString;
use url::Url;

pub use audit_forward::{AuditForwardSettings, ForwardProtocol, SYSLOG_TLS_PORT};
pub use env_file::{EnvFileChoice, SettingsSource, select_env_file};
pub use parse::is_loopback_url;
use parse::{parse_bool, parse_list, parse_secret};
pub use telemetry::{RootSampling, TelemetrySettings, TraceSampling};

/// A setting that failed validation. Carries the setting's name and the rule,
/// never the offending value (it may be a secret).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{setting}: {rule}")]
pub struct ConfigError {
    pub setting: &'static str,
    pub rule: String,
}

impl ConfigError {
    pub fn new(setting: &'static str, rule: impl Into<String>) -> Self {
        Self {
            setting,
            rule: rule.into(),
        }
    }
}

/// Which tools `tools/list` shows at `/mcp` (and over stdio): a curated
/// core of typed tools plus the discovery tools, one tool per operation, or
/// the discovery tools alone. Every mode reaches the same operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolMode {
    #[default]
    Core,
    Full,
    Discover,
}

/// Where the catalog comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenApiSource {
    Bundled,
    /// The instance's document, or the bundled one (with a warning) when it
    /// cannot be fetched.
    Live,
    /// The instance's document or nothing: startup stops when it cannot be
    /// fetched, so replicas behind one URL never serve different tools.
    LiveStrict,
}

/// What pattern masking does with a suspected secret in a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretDetectionMode {
    Off,
    Mask,
    Block,
}

/// Which calls through an OAuth connection wait for their person
/// (`CONFIRM`, `docs/confirmation.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfirmMode {
    /// None (but `CONFIRM_TOOLS` and the policy's `confirm_tools`).
    Off,
    /// Calls whose effect is destructive (the default).
    Destructive,
    /// Every call that changes something.
    Writes,
}

/// The words of `CONFIRM` and `CONFIRM_ADMIN`.
/// Whether startup applies pending store migrations (`STORE_MIGRATE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreMigrate {
    /// At startup, after a backup on SQLite (the default).
    Auto,
    /// Never: `aegis-gitea-mcp store migrate` runs them before a rollout,
    /// and a replica refuses a store with pending ones.
    Never,
}

/// The store's upkeep at startup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreSettings {
    pub migrate: StoreMigrate,
    /// `STORE_BACKUPS_KEEP`: backups taken before migrations that are kept
    /// in `DATA_DIR/backups` (SQLite); 0 takes none.
    pub keep_backups: usize,
}

/// Backups before migrations kept by default.
pub const DEFAULT_STORE_BACKUPS_KEEP: usize = 3;

const CONFIRM_MODES: [(&str, ConfirmMode); 3] = [
    ("off", ConfirmMode::Off),
    ("destructive", ConfirmMode::Destructive),
    ("writes", ConfirmMode::Writes),
];

/// How a client on the 2026-07-28 wire that offers both kinds of
/// elicitation is asked (`CONFIRM_ELICITATION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfirmElicitation {
    /// A form in the client (the name to type, or Approve): the default.
    Form,
    /// The confirmation page, where the person signs in at Gitea.
    Url,
}

const CONFIRM_ELICITATIONS: [(&str, ConfirmElicitation); 2] = [
    ("form", ConfirmElicitation::Form),
    ("url", ConfirmElicitation::Url),
];

/// `CONFIRM`, `CONFIRM_TOOLS`, `CONFIRM_SKIP_TOOLS`, `CONFIRM_ADMIN`,
/// `CONFIRM_ELICITATION`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmSettings {
    pub mode: ConfirmMode,
    /// Tools that always wait for their person.
    pub always: Vec<String>,
    /// Tools that never do under `mode` (the policy may still ask).
    pub never: Vec<String>,
    /// `CONFIRM_ADMIN`: the same for the admin token (stdio, the static
    /// bearer, loopback); `off` by default.
    pub admin: ConfirmMode,
    /// The kind of elicitation preferred where a client offers both.
    pub elicitation: ConfirmElicitation,
}

/// Which Gitea operations are exposed as tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExposureSettings {
    pub read_only: bool,
    /// `None` means every toolset.
    pub toolsets: Option<Vec<String>>,
    pub disabled_tools: Vec<String>,
    pub raw_api_enabled: bool,
    pub raw_api_allow_sensitive: bool,
    pub tool_mode: ToolMode,
}

/// Size bounds on what flows through the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_tool_response_items: usize,
    pub max_tool_response_chars: usize,
    pub max_binary_bytes: usize,
    /// Body limit on `/mcp`.
    pub mcp_max_body_bytes: usize,
    /// Timeout of one request to Gitea.
    pub gitea_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_tool_response_items: 100,
            max_tool_response_chars: 200_000,
            max_binary_bytes: 5 * 1024 * 1024,
            mcp_max_body_bytes: 16 * 1024 * 1024,
            gitea_timeout: Duration::from_secs(30),
        }
    }
}

/// Request rate limits at the HTTP edge: requests per minute, counted in a
/// sliding window before authentication. `0` switches a limit off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    /// `RATE_LIMIT_PER_IP`: per client IP.
    pub per_ip: u32,
    /// `RATE_LIMIT_PER_TOKEN`: per SHA-256 of the `Authorization` value.
    pub per_token: u32,
    /// `RATE_LIMIT_SIGN_INS_PER_IP`: per client IP, on the routes that park
    /// state in the store (`/authorize`, `/account/sign-in`, `/register`),
    /// on top of `per_ip`.
    pub sign_ins_per_ip: u32,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            per_ip: 600,
            per_token: 300,
            sign_ins_per_ip: 20,
        }
    }
}

/// Open client connections at most, by default (`MAX_CONNECTIONS`).
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// How long a kept-alive connection may sit idle between requests, by
/// default (`IDLE_CONNECTION_TIMEOUT_SECONDS`): longer than any load
/// balancer in common use keeps an idle connection to its upstream (nginx
/// 60 s, cloud balancers up to 600 s), so that the balancer, not the
/// gateway, closes it. Closing first races the balancer's next request on
/// that connection, which then fails (issue 43).
pub const DEFAULT_IDLE_CONNECTION_TIMEOUT: std::time::Duration =
    std::time::Duration::from_secs(620);
/// How long a stopping gateway keeps answering on open connections, by
/// default (`SHUTDOWN_DRAIN_SECONDS`): long enough for a balancer's
/// kept-alive connections to be used once more and closed after that
/// answer, rather than closed idle under a request on its way.
pub const DEFAULT_SHUTDOWN_DRAIN: std::time::Duration = std::time::Duration::from_secs(2);
/// Open connections from one address at most, by default
/// (`MAX_CONNECTIONS_PER_IP`): far more than any one person's clients
/// hold, far fewer than the descriptor limit.
pub const DEFAULT_MAX_CONNECTIONS_PER_IP: usize = 64;

/// Default size at which the audit log is rotated (`AUDIT_MAX_BYTES`).
pub const DEFAULT_AUDIT_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// `AUDIT_SYNC`: when audit entries are fsynced (see `audit::sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditSync {
    /// Each caller waits for an fsync covering its entry.
    Always,
    /// Fsynced in the background at most this far apart.
    Interval(Duration),
}

/// The default `AUDIT_SYNC_INTERVAL_MS`.
pub const DEFAULT_SYNC_INTERVAL: Duration = Duration::from_millis(50);

impl Default for AuditSync {
    fn default() -> Self {
        Self::Interval(DEFAULT_SYNC_INTERVAL)
    }
}

impl AuditSync {
    /// Whether a caller waits for the disk.
    pub fn waits(self) -> bool {
        self == Self::Always
    }

    /// The name `AUDIT_SYNC` takes and the audit log records.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::Interval(_) => "interval",
        }
    }
}

/// The granular Gitea scopes requested when `OAUTH_SCOPES` is not set.
pub const DEFAULT_OAUTH_SCOPES: &[&str] = &[
    "read:user",
    "write:repository",
    "write:issue",
    "write:organization",
    "write:notification",
    "write:package",
    "write:misc",
];

const SCOPE_CATEGORIES: &[&str] = &[
    "activitypub",
    "admin",
    "misc",
    "notification",
    "organization",
    "package",
    "issue",
    "repository",
    "user",
];

/// Every validated setting. Secrets are [`SecretString`]s, so `Debug` never
/// shows them.
#[derive(Debug, Clone)]
pub struct Settings {
    pub gitea_url: Url,
    pub gitea_token: Option<SecretString>,
    pub mcp_host: IpAddr,
    pub mcp_port: u16,
    /// Where `/metrics` is served (its own listener), when set.
    pub metrics_bind: Option<std::net::SocketAddr>,
    pub mcp_bearer_token: Option<SecretString>,
    pub public_base_url: Url,
    pub data_dir: PathBuf,
    pub database_url: Option<SecretString>,
    /// Newest first.
    pub token_encryption_keys: Vec<SecretString>,
    pub gitea_oauth_client_id: Option<String>,
    pub gitea_oauth_client_secret: Option<SecretString>,
    /// `GITEA_OAUTH_READ_CLIENT_ID` and `_SECRET`: the Gitea application
    /// for reading sessions (and page sign-ins), asked only for `read:`
    /// scopes. Without it, every session is at the read-write one.
    pub gitea_oauth_read_client: Option<(String, SecretString)>,
    pub oauth_scopes: Vec<String>,
    pub oauth_redirect_allowlist: Vec<String>,
    /// Test setting (`OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES`): client metadata
    /// documents may be fetched from private and loopback addresses, and
    /// over plain http on loopback. Never for production.
    pub oauth_metadata_documents_on_private_addresses: bool,
    pub exposure: ExposureSettings,
    pub gitea_openapi: OpenApiSource,
    pub secret_detection_mode: SecretDetectionMode,
    pub limits: Limits,
    pub allowed_hosts: Vec<String>,
    pub forwarded_allow_ips: Vec<ipnet::IpNet>,
    /// `MAX_CONNECTIONS`: open client connections at most (lowered at
    /// startup to fit the descriptor limit).
    pub max_connections: usize,
    /// `MAX_CONNECTIONS_PER_IP`: open connections at most from one address
    /// (trusted proxies excepted).
    pub max_connections_per_ip: usize,
    /// `IDLE_CONNECTION_TIMEOUT_SECONDS`: how long a kept-alive connection
    /// may wait for its next request (the header-read timeout, from the
    /// first byte of a request to the end of its head, is separate).
    pub idle_connection_timeout: std::time::Duration,
    /// `SHUTDOWN_DRAIN_SECONDS`: how long a stopping gateway still answers
    /// (each answer closing its connection) before it closes the idle ones.
    pub shutdown_drain: std::time::Duration,
    /// `OAUTH_MAX_CLIENTS`: registered clients the store holds at most.
    pub oauth_max_clients: u64,
    /// `OAUTH_MAX_NEW_CLIENTS_PER_LOGIN`: clients one login may connect for
    /// the first time within an hour.
    pub oauth_max_new_clients_per_login: u64,
    /// `STORE_MIGRATE`, `STORE_BACKUPS_KEEP`.
    pub store: StoreSettings,
    pub rate_limits: RateLimits,
    pub audit_hmac_key: Option<SecretString>,
    /// `AUDIT_MAX_BYTES`: size at which `audit.log` is rotated.
    pub audit_max_bytes: u64,
    /// `AUDIT_KEEP_FILES`: rotated files kept; `None` (the default) keeps
    /// every one, so no caller can push history out of the log.
    pub audit_keep_files: Option<usize>,
    /// `AUDIT_SYNC` and `AUDIT_SYNC_INTERVAL_MS`.
    pub audit_sync: AuditSync,
    /// `REPLICA_ID`: names this process in every audit entry; default the
    /// host name.
    pub replica_id: String,
    /// Where the audit log is shipped off the host, when set.
    pub audit_forward: Option<AuditForwardSettings>,
    /// `OTEL_*`: where traces are exported, when they are.
    pub telemetry: Option<TelemetrySettings>,
    pub admin_logins: Vec<String>,
    pub expose_error_details: bool,
    /// `POLICY_FILE`: the operator's policy (TOML), read at startup.
    pub policy_file: Option<PathBuf>,
    pub confirm: ConfirmSettings,
}

/// Minimum length of `MCP_BEARER_TOKEN`.
pub const MIN_BEARER_LEN: usize = 32;

impl Settings {
    /// Validates every setting from `source`. Returns the first error.
    pub fn from_source(source: &SettingsSource) -> Result<Self, ConfigError> {
        let get = |name: &str| source.get(name);

        let gitea_url = sections::gitea_url(&get)?;
        let (mcp_host, mcp_port, metrics_bind) = sections::binds(&get)?;
        let mcp_bearer_token = sections::bearer(&get)?;
        let public_base_url = sections::public_base_url(&get, mcp_port)?;

        let sections::OAuthSettings {
            token_encryption_keys,
            gitea_oauth_client_id,
            gitea_oauth_client_secret,
            gitea_oauth_read_client,
            oauth_scopes,
        } = sections::oauth(&get)?;

        let exposure = sections::exposure(&get)?;
        let (gitea_openapi, secret_detection_mode) = sections::catalog_and_masking(&get)?;
        let limits = sections::limits(&get)?;

        let forwarded_allow_ips = sections::forwarded_allow_ips(&get)?;
        let (max_connections, max_connections_per_ip, oauth_max_clients) =
            sections::capacity(&get)?;
        let (idle_connection_timeout, shutdown_drain) = sections::connection_timings(&get)?;

        let rate_limits = sections::rate_limits(&get)?;

        let (audit_hmac_key, audit_max_bytes, audit_keep_files) = sections::audit(&get)?;
        let audit_sync = sections::audit_sync(&get)?;

        Ok(Self {
            gitea_url,
            gitea_token: parse_secret(get("GITEA_TOKEN")),
            mcp_host,
            mcp_port,
            metrics_bind,
            mcp_bearer_token,
            public_base_url,
            data_dir: PathBuf::from(get("DATA_DIR").unwrap_or("./data")),
            database_url: parse_secret(get("DATABASE_URL")),
            token_encryption_keys,
            gitea_oauth_client_id,
            gitea_oauth_client_secret,
            gitea_oauth_read_client,
            oauth_scopes,
            oauth_redirect_allowlist: parse_list(get("OAUTH_REDIRECT_ALLOWLIST")),
            oauth_metadata_documents_on_private_addresses:
                sections::metadata_documents_on_private_addresses(&get)?,
            exposure,
            gitea_openapi,
            secret_detection_mode,
            limits,
            allowed_hosts: parse_list(get("ALLOWED_HOSTS")),
            forwarded_allow_ips,
            max_connections,
            max_connections_per_ip,
            idle_connection_timeout,
            shutdown_drain,
            oauth_max_clients,
            oauth_max_new_clients_per_login: sections::new_clients_per_login(&get)?,
            store: sections::store(&get)?,
            rate_limits,
            audit_hmac_key,
            audit_max_bytes,
            audit_keep_files,
            audit_sync,
            replica_id: sections::replica_id(&get)?,
            audit_forward: audit_forward::audit_forward(&get)?,
            telemetry: telemetry::telemetry(&get)?,
            admin_logins: parse_list(get("ADMIN_LOGINS")),
            expose_error_details: parse_bool(
                "EXPOSE_ERROR_DETAILS",
                get("EXPOSE_ERROR_DETAILS"),
                false,
            )?,
            confirm: sections::confirm(&get)?,
            policy_file: sections::policy_file(&get),
        })
    }

    /// The Gitea REST API root: `GITEA_URL` + `/api/v1`.
    pub fn gitea_api_base(&self) -> String {
        format!("{}/api/v1", self.gitea_url.as_str().trim_end_matches('/'))
    }

    /// True when the gateway is a confidential client of Gitea (OAuth on).
    pub fn oauth_configured(&self) -> bool {
        self.gitea_oauth_client_id.is_some()
    }

    /// True when the HTTP server binds a loopback address only.
    pub fn binds_loopback(&self) -> bool {
        self.mcp_host.is_loopback()
    }

    /// Loopback mode: neither a bearer nor OAuth, so an unauthenticated
    /// request on the loopback bind acts with the admin token.
    pub fn unauthenticated_loopback(&self) -> bool {
        self.mcp_bearer_token.is_none() && !self.oauth_configured() && self.binds_loopback()
    }

    /// Checks that need the command: `serve` refuses to expose the admin
    /// token to the network without authentication, and needs someone to
    /// act as: the admin token (static bearer, loopback) or OAuth users.
    pub fn check_for_serve(&self) -> Result<(), ConfigError> {
        let oauth = self.oauth_configured();
        if !self.binds_loopback() && self.mcp_bearer_token.is_none() && !oauth {
            return Err(ConfigError::new(
                "MCP_HOST",
                "a non-loopback bind needs MCP_BEARER_TOKEN or OAuth (GITEA_OAUTH_CLIENT_ID) to authenticate callers",
            ));
        }
        // Loopback mode answers without authentication with the admin token:
        // only for a person on this machine, never behind a proxy.
        if self.mcp_bearer_token.is_none() && !oauth {
            if !is_loopback_url(&self.public_base_url) {
                return Err(ConfigError::new(
                    "PUBLIC_BASE_URL",
                    "names a non-loopback host, but without MCP_BEARER_TOKEN or OAuth every caller would act with the admin token: configure authentication",
                ));
            }
            if !self.forwarded_allow_ips.is_empty() {
                return Err(ConfigError::new(
                    "FORWARDED_ALLOW_IPS",
                    "names a proxy, but without MCP_BEARER_TOKEN or OAuth every caller through it would act with the admin token: configure authentication",
                ));
            }
        }
        if self.gitea_token.is_none() {
            if self.mcp_bearer_token.is_some() {
                return Err(ConfigError::new(
                    "GITEA_TOKEN",
                    "is required with MCP_BEARER_TOKEN: the static bearer acts with it",
                ));
            }
            if !oauth {
                return Err(ConfigError::new(
                    "GITEA_TOKEN",
                    "is required unless OAuth is configured: loopback mode acts with it",
                ));
            }
        }
        Ok(())
    }

    /// `stdio` acts with the admin token.
    pub fn check_for_stdio(&self) -> Result<(), ConfigError> {
        if self.gitea_token.is_none() {
            return Err(ConfigError::new(
                "GITEA_TOKEN",
                "is required for stdio, which acts with the admin token",
            ));
        }
        Ok(())
    }

    /// Every secret the gateway itself holds, for exact redaction of results.
    pub fn known_secrets(&self) -> Vec<SecretString> {
        let mut out: Vec<SecretString> = [
            &self.gitea_token,
            &self.mcp_bearer_token,
            &self.gitea_oauth_client_secret,
            &self.audit_hmac_key,
        ]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
        out.extend(self.token_encryption_keys.iter().cloned());
        out.extend(
            self.gitea_oauth_read_client
                .as_ref()
                .map(|(_, secret)| secret.clone()),
        );
        out.extend(
            self.database_url
                .as_ref()
                .and_then(parse::database_password),
        );
        out.extend(
            self.audit_forward
                .as_ref()
                .and_then(|forward| forward.authorization.clone()),
        );
        out.extend(
            self.telemetry
                .iter()
                .flat_map(|telemetry| telemetry.headers.iter().map(|(_, value)| value.clone())),
        );
        out
    }
}

#[cfg(test)]
mod tests;
