//! The settings that come in groups, each read by one function:
//! binds, the static bearer, OAuth, exposure, the catalog source and
//! masking, result bounds, trusted proxies, rate limits, the audit log,
//! the store's upkeep, the Gitea and public URLs, confirmation, the policy
//! file.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use url::Url;

use super::parse::{
    is_loopback_url, parse_base_url, parse_bool, parse_choice, parse_list, parse_scopes,
    parse_secret, parse_usize, require_key_length,
};
use super::{
    AuditSync, CONFIRM_ELICITATIONS, CONFIRM_MODES, ConfigError, ConfirmElicitation, ConfirmMode,
    ConfirmSettings, DEFAULT_AUDIT_MAX_BYTES, DEFAULT_IDLE_CONNECTION_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_IP, DEFAULT_OAUTH_SCOPES,
    DEFAULT_SHUTDOWN_DRAIN, DEFAULT_STORE_BACKUPS_KEEP, DEFAULT_SYNC_INTERVAL, ExposureSettings,
    Limits, MIN_BEARER_LEN, OpenApiSource, RateLimits, SecretDetectionMode, StoreMigrate,
    StoreSettings, ToolMode,
};

/// `READ_ONLY`, `TOOLSETS`, `DISABLED_TOOLS`, the raw tool's switches,
/// `TOOL_MODE`.
pub(super) fn exposure<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<ExposureSettings, ConfigError> {
    let toolsets = get("TOOLSETS").map(|v| parse_list(Some(v)));
    if toolsets.as_ref().is_some_and(Vec::is_empty) {
        return Err(ConfigError::new(
            "TOOLSETS",
            "must name at least one toolset when set",
        ));
    }
    Ok(ExposureSettings {
        read_only: parse_bool("READ_ONLY", get("READ_ONLY"), false)?,
        toolsets,
        disabled_tools: parse_list(get("DISABLED_TOOLS")),
        raw_api_enabled: parse_bool("RAW_API_ENABLED", get("RAW_API_ENABLED"), true)?,
        raw_api_allow_sensitive: parse_bool(
            "RAW_API_ALLOW_SENSITIVE",
            get("RAW_API_ALLOW_SENSITIVE"),
            false,
        )?,
        tool_mode: parse_choice(
            "TOOL_MODE",
            get("TOOL_MODE"),
            &[
                ("core", ToolMode::Core),
                ("full", ToolMode::Full),
                ("discover", ToolMode::Discover),
            ],
            ToolMode::Core,
        )?,
    })
}

/// `MAX_TOOL_RESPONSE_ITEMS`, `MAX_TOOL_RESPONSE_CHARS`, `MAX_BINARY_BYTES`,
/// `GITEA_TIMEOUT_SECONDS`.
pub(super) fn limits<'a>(get: &impl Fn(&str) -> Option<&'a str>) -> Result<Limits, ConfigError> {
    let defaults = Limits::default();
    Ok(Limits {
        max_tool_response_items: parse_usize(
            "MAX_TOOL_RESPONSE_ITEMS",
            get("MAX_TOOL_RESPONSE_ITEMS"),
            defaults.max_tool_response_items,
            1..=100_000,
        )?,
        max_tool_response_chars: parse_usize(
            "MAX_TOOL_RESPONSE_CHARS",
            get("MAX_TOOL_RESPONSE_CHARS"),
            defaults.max_tool_response_chars,
            1_000..=50_000_000,
        )?,
        max_binary_bytes: parse_usize(
            "MAX_BINARY_BYTES",
            get("MAX_BINARY_BYTES"),
            defaults.max_binary_bytes,
            1..=64 * 1024 * 1024,
        )?,
        mcp_max_body_bytes: defaults.mcp_max_body_bytes,
        gitea_timeout: Duration::from_secs(parse_usize(
            "GITEA_TIMEOUT_SECONDS",
            get("GITEA_TIMEOUT_SECONDS"),
            defaults.gitea_timeout.as_secs() as usize,
            1..=600,
        )? as u64),
    })
}

/// `FORWARDED_ALLOW_IPS`: addresses or CIDRs.
pub(super) fn forwarded_allow_ips<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<Vec<ipnet::IpNet>, ConfigError> {
    parse_list(get("FORWARDED_ALLOW_IPS"))
        .iter()
        .map(|v| {
            v.parse::<ipnet::IpNet>()
                .or_else(|_| v.parse::<IpAddr>().map(ipnet::IpNet::from))
                .map_err(|_| {
                    ConfigError::new(
                        "FORWARDED_ALLOW_IPS",
                        "every entry must be an IP address or CIDR",
                    )
                })
        })
        .collect()
}

/// `RATE_LIMIT_PER_IP`, `RATE_LIMIT_PER_TOKEN`, `RATE_LIMIT_SIGN_INS_PER_IP`.
pub(super) fn rate_limits<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<RateLimits, ConfigError> {
    let rate_defaults = RateLimits::default();
    Ok(RateLimits {
        per_ip: parse_usize(
            "RATE_LIMIT_PER_IP",
            get("RATE_LIMIT_PER_IP"),
            rate_defaults.per_ip as usize,
            0..=1_000_000,
        )? as u32,
        per_token: parse_usize(
            "RATE_LIMIT_PER_TOKEN",
            get("RATE_LIMIT_PER_TOKEN"),
            rate_defaults.per_token as usize,
            0..=1_000_000,
        )? as u32,
        sign_ins_per_ip: parse_usize(
            "RATE_LIMIT_SIGN_INS_PER_IP",
            get("RATE_LIMIT_SIGN_INS_PER_IP"),
            rate_defaults.sign_ins_per_ip as usize,
            0..=1_000_000,
        )? as u32,
    })
}

/// `MCP_HOST`, `MCP_PORT`, `METRICS_BIND`.
pub(super) fn binds<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<(IpAddr, u16, Option<std::net::SocketAddr>), ConfigError> {
    let mcp_host = match get("MCP_HOST") {
        None => IpAddr::from([127, 0, 0, 1]),
        Some(v) if v.trim().eq_ignore_ascii_case("localhost") => IpAddr::from([127, 0, 0, 1]),
        Some(v) => v
            .trim()
            .parse()
            .map_err(|_| ConfigError::new("MCP_HOST", "must be an IP address or `localhost`"))?,
    };
    let mcp_port = match get("MCP_PORT") {
        None => 8080,
        Some(v) => v
            .trim()
            .parse::<u16>()
            .map_err(|_| ConfigError::new("MCP_PORT", "must be a port number (0-65535)"))?,
    };
    let metrics_bind = get("METRICS_BIND")
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(|v| {
            v.parse::<std::net::SocketAddr>().map_err(|_| {
                ConfigError::new(
                    "METRICS_BIND",
                    "must be an address and port, e.g. 127.0.0.1:9464",
                )
            })
        })
        .transpose()?;
    Ok((mcp_host, mcp_port, metrics_bind))
}

/// `MCP_BEARER_TOKEN`: at least [`MIN_BEARER_LEN`] characters, no
/// whitespace, never an OAuth token's prefix.
pub(super) fn bearer<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<Option<SecretString>, ConfigError> {
    let mcp_bearer_token = parse_secret(get("MCP_BEARER_TOKEN"));
    if let Some(bearer) = &mcp_bearer_token {
        let value = bearer.expose_secret();
        if value.chars().count() < MIN_BEARER_LEN {
            return Err(ConfigError::new(
                "MCP_BEARER_TOKEN",
                format!("must be at least {MIN_BEARER_LEN} characters"),
            ));
        }
        if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(ConfigError::new(
                "MCP_BEARER_TOKEN",
                "must not contain whitespace or control characters",
            ));
        }
        // The prefix marks tokens the OAuth server mints; a static
        // bearer that looked like one would never be accepted.
        if value.starts_with("agm_") {
            return Err(ConfigError::new(
                "MCP_BEARER_TOKEN",
                "must not start with `agm_` (reserved for OAuth tokens)",
            ));
        }
    }
    Ok(mcp_bearer_token)
}

/// The OAuth settings, checked together.
pub(super) struct OAuthSettings {
    pub token_encryption_keys: Vec<SecretString>,
    pub gitea_oauth_client_id: Option<String>,
    pub gitea_oauth_client_secret: Option<SecretString>,
    pub gitea_oauth_read_client: Option<(String, SecretString)>,
    pub oauth_scopes: Vec<String>,
}

/// `TOKEN_ENCRYPTION_KEY`, `GITEA_OAUTH_CLIENT_ID` and `_SECRET` (set
/// together, and then with a key), `GITEA_OAUTH_READ_CLIENT_ID` and
/// `_SECRET` (together, another application, only with the first),
/// `OAUTH_SCOPES`.
pub(super) fn oauth<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<OAuthSettings, ConfigError> {
    let token_encryption_keys: Vec<SecretString> = parse_list(get("TOKEN_ENCRYPTION_KEY"))
        .into_iter()
        .map(SecretString::from)
        .collect();
    for key in &token_encryption_keys {
        require_key_length("TOKEN_ENCRYPTION_KEY", key)?;
    }

    let gitea_oauth_client_id = get("GITEA_OAUTH_CLIENT_ID")
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned);
    let gitea_oauth_client_secret = parse_secret(get("GITEA_OAUTH_CLIENT_SECRET"));
    if gitea_oauth_client_id.is_some() != gitea_oauth_client_secret.is_some() {
        return Err(ConfigError::new(
            "GITEA_OAUTH_CLIENT_ID",
            "GITEA_OAUTH_CLIENT_ID and GITEA_OAUTH_CLIENT_SECRET must be set together",
        ));
    }
    if gitea_oauth_client_id.is_some() && token_encryption_keys.is_empty() {
        return Err(ConfigError::new(
            "TOKEN_ENCRYPTION_KEY",
            "is required when OAuth is configured",
        ));
    }

    let read_id = get("GITEA_OAUTH_READ_CLIENT_ID")
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned);
    let read_secret = parse_secret(get("GITEA_OAUTH_READ_CLIENT_SECRET"));
    let gitea_oauth_read_client = match (read_id, read_secret) {
        (None, None) => None,
        (Some(id), Some(secret)) if gitea_oauth_client_id.is_some() => {
            if Some(&id) == gitea_oauth_client_id.as_ref() {
                return Err(ConfigError::new(
                    "GITEA_OAUTH_READ_CLIENT_ID",
                    "must name another Gitea OAuth application than GITEA_OAUTH_CLIENT_ID",
                ));
            }
            Some((id, secret))
        }
        (Some(_), Some(_)) => {
            return Err(ConfigError::new(
                "GITEA_OAUTH_READ_CLIENT_ID",
                "needs GITEA_OAUTH_CLIENT_ID and GITEA_OAUTH_CLIENT_SECRET too",
            ));
        }
        _ => {
            return Err(ConfigError::new(
                "GITEA_OAUTH_READ_CLIENT_ID",
                "GITEA_OAUTH_READ_CLIENT_ID and GITEA_OAUTH_READ_CLIENT_SECRET must be set together",
            ));
        }
    };

    let oauth_scopes = match get("OAUTH_SCOPES") {
        None => DEFAULT_OAUTH_SCOPES.iter().map(|s| s.to_string()).collect(),
        Some(v) => parse_scopes(v)?,
    };
    Ok(OAuthSettings {
        token_encryption_keys,
        gitea_oauth_client_id,
        gitea_oauth_client_secret,
        gitea_oauth_read_client,
        oauth_scopes,
    })
}

/// `GITEA_OPENAPI` and `SECRET_DETECTION_MODE`.
pub(super) fn catalog_and_masking<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<(OpenApiSource, SecretDetectionMode), ConfigError> {
    let source = parse_choice(
        "GITEA_OPENAPI",
        get("GITEA_OPENAPI"),
        &[
            ("bundled", OpenApiSource::Bundled),
            ("live", OpenApiSource::Live),
            ("live-strict", OpenApiSource::LiveStrict),
        ],
        OpenApiSource::Bundled,
    )?;
    let masking = parse_choice(
        "SECRET_DETECTION_MODE",
        get("SECRET_DETECTION_MODE"),
        &[
            ("off", SecretDetectionMode::Off),
            ("mask", SecretDetectionMode::Mask),
            ("block", SecretDetectionMode::Block),
        ],
        SecretDetectionMode::Mask,
    )?;
    Ok((source, masking))
}

/// `AUDIT_HMAC_KEY` (long enough when set), `AUDIT_MAX_BYTES` and
/// `AUDIT_KEEP_FILES` (unset: every rotated file is kept).
pub(super) fn audit<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<(Option<SecretString>, u64, Option<usize>), ConfigError> {
    let key = parse_secret(get("AUDIT_HMAC_KEY"));
    if let Some(key) = &key {
        require_key_length("AUDIT_HMAC_KEY", key)?;
    }
    let max_bytes = parse_usize(
        "AUDIT_MAX_BYTES",
        get("AUDIT_MAX_BYTES"),
        DEFAULT_AUDIT_MAX_BYTES as usize,
        4096..=(1 << 40),
    )? as u64;
    let keep_files = match get("AUDIT_KEEP_FILES") {
        None => None,
        Some(value) => Some(parse_usize(
            "AUDIT_KEEP_FILES",
            Some(value),
            1,
            1..=100_000,
        )?),
    };
    Ok((key, max_bytes, keep_files))
}

/// `AUDIT_SYNC` (`interval`, the default, or `always`) and
/// `AUDIT_SYNC_INTERVAL_MS` (1–10,000; only with `interval`).
pub(super) fn audit_sync<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<AuditSync, ConfigError> {
    let interval_ms = parse_usize(
        "AUDIT_SYNC_INTERVAL_MS",
        get("AUDIT_SYNC_INTERVAL_MS"),
        DEFAULT_SYNC_INTERVAL.as_millis() as usize,
        1..=10_000,
    )?;
    let interval = AuditSync::Interval(Duration::from_millis(interval_ms as u64));
    parse_choice(
        "AUDIT_SYNC",
        get("AUDIT_SYNC"),
        &[("always", AuditSync::Always), ("interval", interval)],
        interval,
    )
}

/// `REPLICA_ID`, or the host name: 1–64 of `A-Z a-z 0-9 . _ -`. A host
/// name outside that set (or none) gives `gateway`.
pub(super) fn replica_id<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<String, ConfigError> {
    let valid = |id: &str| {
        (1..=64).contains(&id.len())
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    };
    match get("REPLICA_ID") {
        Some(id) if valid(id) => Ok(id.to_owned()),
        Some(_) => Err(ConfigError::new(
            "REPLICA_ID",
            "must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' or '-'",
        )),
        None => {
            let host = rustix::system::uname()
                .nodename()
                .to_string_lossy()
                .into_owned();
            Ok(if valid(&host) {
                host
            } else {
                "gateway".to_owned()
            })
        }
    }
}

/// `IDLE_CONNECTION_TIMEOUT_SECONDS` and `SHUTDOWN_DRAIN_SECONDS` (0:
/// close idle connections at once): (idle timeout, drain).
pub(super) fn connection_timings<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<(std::time::Duration, std::time::Duration), ConfigError> {
    let seconds = |name, default: std::time::Duration, range| {
        parse_usize(name, get(name), default.as_secs() as usize, range)
            .map(|s| std::time::Duration::from_secs(s as u64))
    };
    Ok((
        seconds(
            "IDLE_CONNECTION_TIMEOUT_SECONDS",
            DEFAULT_IDLE_CONNECTION_TIMEOUT,
            1..=86_400,
        )?,
        seconds("SHUTDOWN_DRAIN_SECONDS", DEFAULT_SHUTDOWN_DRAIN, 0..=300)?,
    ))
}

/// `MAX_CONNECTIONS`, `MAX_CONNECTIONS_PER_IP` and `OAUTH_MAX_CLIENTS`.
pub(super) fn capacity<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<(usize, usize, u64), ConfigError> {
    let max_connections = parse_usize(
        "MAX_CONNECTIONS",
        get("MAX_CONNECTIONS"),
        DEFAULT_MAX_CONNECTIONS,
        16..=1_000_000,
    )?;
    let max_per_ip = parse_usize(
        "MAX_CONNECTIONS_PER_IP",
        get("MAX_CONNECTIONS_PER_IP"),
        DEFAULT_MAX_CONNECTIONS_PER_IP,
        1..=1_000_000,
    )?;
    let max_clients = parse_usize(
        "OAUTH_MAX_CLIENTS",
        get("OAUTH_MAX_CLIENTS"),
        10_000,
        1..=1_000_000,
    )? as u64;
    Ok((max_connections, max_per_ip, max_clients))
}

/// `STORE_MIGRATE` and `STORE_BACKUPS_KEEP`.
pub(super) fn store<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<StoreSettings, ConfigError> {
    Ok(StoreSettings {
        migrate: parse_choice(
            "STORE_MIGRATE",
            get("STORE_MIGRATE"),
            &[("auto", StoreMigrate::Auto), ("never", StoreMigrate::Never)],
            StoreMigrate::Auto,
        )?,
        keep_backups: parse_usize(
            "STORE_BACKUPS_KEEP",
            get("STORE_BACKUPS_KEEP"),
            DEFAULT_STORE_BACKUPS_KEEP,
            0..=100,
        )?,
    })
}

/// `OAUTH_MAX_NEW_CLIENTS_PER_LOGIN`: clients one login may connect for
/// the first time within an hour.
pub(super) fn new_clients_per_login<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<u64, ConfigError> {
    Ok(parse_usize(
        "OAUTH_MAX_NEW_CLIENTS_PER_LOGIN",
        get("OAUTH_MAX_NEW_CLIENTS_PER_LOGIN"),
        10,
        1..=100_000,
    )? as u64)
}

/// `GITEA_URL`: required.
pub(super) fn gitea_url<'a>(get: &impl Fn(&str) -> Option<&'a str>) -> Result<Url, ConfigError> {
    parse_base_url("GITEA_URL", get("GITEA_URL"))?
        .ok_or_else(|| ConfigError::new("GITEA_URL", "is required"))
}

/// `OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES`: a test setting, off by default.
pub(super) fn metadata_documents_on_private_addresses<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<bool, ConfigError> {
    parse_bool(
        "OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES",
        get("OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES"),
        false,
    )
}

/// `PUBLIC_BASE_URL`: https unless it names a loopback host; by default
/// `http://127.0.0.1:` and `mcp_port`.
pub(super) fn public_base_url<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
    mcp_port: u16,
) -> Result<Url, ConfigError> {
    let public_base_url = parse_base_url("PUBLIC_BASE_URL", get("PUBLIC_BASE_URL"))?
        .unwrap_or_else(|| {
            Url::parse(&format!("http://127.0.0.1:{mcp_port}")).expect("valid default URL")
        });
    if public_base_url.scheme() != "https" && !is_loopback_url(&public_base_url) {
        return Err(ConfigError::new(
            "PUBLIC_BASE_URL",
            "must use https unless it names a loopback host",
        ));
    }
    Ok(public_base_url)
}

/// `CONFIRM`, `CONFIRM_TOOLS`, `CONFIRM_SKIP_TOOLS`, `CONFIRM_ADMIN`,
/// `CONFIRM_ELICITATION`.
pub(super) fn confirm<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<ConfirmSettings, ConfigError> {
    Ok(ConfirmSettings {
        mode: parse_choice(
            "CONFIRM",
            get("CONFIRM"),
            &CONFIRM_MODES,
            ConfirmMode::Destructive,
        )?,
        always: parse_list(get("CONFIRM_TOOLS")),
        never: parse_list(get("CONFIRM_SKIP_TOOLS")),
        admin: parse_choice(
            "CONFIRM_ADMIN",
            get("CONFIRM_ADMIN"),
            &CONFIRM_MODES,
            ConfirmMode::Off,
        )?,
        elicitation: parse_choice(
            "CONFIRM_ELICITATION",
            get("CONFIRM_ELICITATION"),
            &CONFIRM_ELICITATIONS,
            ConfirmElicitation::Form,
        )?,
    })
}

/// `POLICY_FILE`, when set and not blank.
pub(super) fn policy_file<'a>(get: &impl Fn(&str) -> Option<&'a str>) -> Option<PathBuf> {
    get("POLICY_FILE")
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}
