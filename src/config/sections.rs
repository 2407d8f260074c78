//! The settings that come in groups, each read by one function:
//! exposure, result bounds, trusted proxies, rate limits.

use std::net::IpAddr;
use std::time::Duration;

use super::parse::{parse_bool, parse_choice, parse_list, parse_usize};
use super::{ConfigError, ExposureSettings, Limits, RateLimits, ToolMode};

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
