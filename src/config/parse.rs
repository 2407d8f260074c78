//! Parsers for the shapes settings come in: booleans, numbers in a range,
//! comma-separated lists, optional secrets.

use std::ops::RangeInclusive;

use secrecy::SecretString;

use super::ConfigError;

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
