//! Parsers for the shapes settings come in: booleans, numbers in a range,
//! comma-separated lists, optional secrets, key material, base URLs and
//! Gitea scopes.

use std::ops::RangeInclusive;

use secrecy::{ExposeSecret, SecretString};
use url::Url;

use super::{ConfigError, SCOPE_CATEGORIES};

pub(super) fn parse_bool(
    setting: &'static str,
    value: Option<&str>,
    default: bool,
) -> Result<bool, ConfigError> {
    match value.map(str::to_ascii_lowercase).as_deref() {
        None => Ok(default),
        Some("true" | "1" | "yes" | "on") => Ok(true),
        Some("false" | "0" | "no" | "off") => Ok(false),
        Some(_) => Err(ConfigError::new(setting, "must be true or false")),
    }
}

pub(super) fn parse_usize(
    setting: &'static str,
    value: Option<&str>,
    default: usize,
    range: RangeInclusive<usize>,
) -> Result<usize, ConfigError> {
    let Some(value) = value else {
        return Ok(default);
    };
    let n: usize = value
        .trim()
        .parse()
        .map_err(|_| ConfigError::new(setting, "must be a whole number"))?;
    if !range.contains(&n) {
        return Err(ConfigError::new(
            setting,
            format!("must be between {} and {}", range.start(), range.end()),
        ));
    }
    Ok(n)
}

/// Comma-separated, trimmed, empty entries dropped.
/// One of `choices` (case-insensitive), or `default` when unset.
pub(super) fn parse_choice<T: Copy>(
    name: &'static str,
    value: Option<&str>,
    choices: &[(&str, T)],
    default: T,
) -> Result<T, ConfigError> {
    let Some(value) = value else {
        return Ok(default);
    };
    choices
        .iter()
        .find(|(word, _)| value.eq_ignore_ascii_case(word))
        .map(|(_, choice)| *choice)
        .ok_or_else(|| {
            let words: Vec<String> = choices.iter().map(|(w, _)| format!("`{w}`")).collect();
            let (last, rest) = words.split_last().unwrap_or((&words[0], &[]));
            ConfigError::new(name, format!("must be {} or {last}", rest.join(", ")))
        })
}

pub(super) fn parse_list(value: Option<&str>) -> Vec<String> {
    value
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// An empty value counts as unset.
pub(super) fn parse_secret(value: Option<&str>) -> Option<SecretString> {
    value
        .filter(|v| !v.is_empty())
        .map(|v| SecretString::from(v.to_owned()))
}

/// Key material (encryption keys, the audit HMAC key) is at least this long.
const MIN_KEY_CHARS: usize = 32;

pub(super) fn require_key_length(
    setting: &'static str,
    key: &SecretString,
) -> Result<(), ConfigError> {
    if key.expose_secret().chars().count() < MIN_KEY_CHARS {
        return Err(ConfigError::new(
            setting,
            format!("every key must be at least {MIN_KEY_CHARS} characters"),
        ));
    }
    Ok(())
}

pub(super) fn parse_base_url(
    setting: &'static str,
    value: Option<&str>,
) -> Result<Option<Url>, ConfigError> {
    let Some(value) = value else { return Ok(None) };
    let url = Url::parse(value)
        .map_err(|_| ConfigError::new(setting, "must be an absolute http(s) URL"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(ConfigError::new(setting, "must be an absolute http(s) URL"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ConfigError::new(setting, "must not contain credentials"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(ConfigError::new(
            setting,
            "must not contain a query or fragment",
        ));
    }
    // Normalise: no trailing slash, so joining paths is uniform.
    let trimmed = url.as_str().trim_end_matches('/').to_owned();
    Ok(Some(Url::parse(&trimmed).expect("trimmed URL stays valid")))
}

/// True when the URL's host is a loopback name or address.
pub fn is_loopback_url(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

pub(super) fn parse_scopes(value: &str) -> Result<Vec<String>, ConfigError> {
    let scopes: Vec<String> = value
        .split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    if scopes.is_empty() {
        return Err(ConfigError::new(
            "OAUTH_SCOPES",
            "must not be empty (Gitea widens an empty scope to full access)",
        ));
    }
    for scope in &scopes {
        let ok = scope.split_once(':').is_some_and(|(level, category)| {
            matches!(level, "read" | "write") && SCOPE_CATEGORIES.contains(&category)
        });
        if !ok {
            return Err(ConfigError::new(
                "OAUTH_SCOPES",
                "only granular Gitea scopes (`read:<category>` or `write:<category>`) are accepted",
            ));
        }
    }
    Ok(scopes)
}

/// The password in a `DATABASE_URL`, percent-decoded (as the server sees
/// it), when it has one.
pub(super) fn database_password(url: &SecretString) -> Option<SecretString> {
    let url = Url::parse(url.expose_secret()).ok()?;
    let password = url.password()?;
    let decoded = percent_encoding::percent_decode_str(password).decode_utf8_lossy();
    Some(SecretString::from(decoded.into_owned()))
}
