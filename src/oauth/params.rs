//! Parameters of OAuth requests (query strings and form bodies), parsed
//! once with the rules every endpoint shares: a repeated parameter is an
//! error (RFC 6749 §3.1), an empty value counts as absent, and the number
//! of parameters is bounded.

use std::collections::HashMap;

/// More parameters than any OAuth request needs.
const MAX_PARAMS: usize = 64;

/// Why parameters were refused. Names the parameter, never its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamsError {
    #[error("the `{0}` parameter is repeated")]
    Duplicate(String),
    #[error("too many parameters")]
    TooMany,
}

/// Parsed, de-duplicated OAuth parameters.
#[derive(Debug, Clone, Default)]
pub struct OAuthParams(HashMap<String, String>);

impl OAuthParams {
    /// Parses `application/x-www-form-urlencoded` text (a query string or a
    /// form body).
    pub fn parse(encoded: &[u8]) -> Result<Self, ParamsError> {
        let mut map = HashMap::new();
        for (count, (name, value)) in url::form_urlencoded::parse(encoded).enumerate() {
            if count >= MAX_PARAMS {
                return Err(ParamsError::TooMany);
            }
            if map.insert(name.to_string(), value.into_owned()).is_some() {
                return Err(ParamsError::Duplicate(name.into_owned()));
            }
        }
        map.retain(|_, v: &mut String| !v.is_empty());
        Ok(Self(map))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_parameters_are_refused_by_name() {
        assert_eq!(
            OAuthParams::parse(b"a=1&state=x&state=y").unwrap_err(),
            ParamsError::Duplicate("state".into())
        );
    }

    #[test]
    fn empty_values_count_as_absent_and_values_are_decoded() {
        let p = OAuthParams::parse(b"scope=&redirect_uri=https%3A%2F%2Fa%2Fb+c").unwrap();
        assert_eq!(p.get("scope"), None);
        assert_eq!(p.get("redirect_uri"), Some("https://a/b c"));
    }

    #[test]
    fn the_number_of_parameters_is_bounded() {
        let many: String = (0..100).map(|i| format!("p{i}=1&")).collect();
        assert_eq!(
            OAuthParams::parse(many.as_bytes()).unwrap_err(),
            ParamsError::TooMany
        );
    }
}
