//! The rules for putting caller-supplied values into a request to Gitea:
//! path values, query names, the `Sudo` header and multipart fields.
//!
//! Path values are percent-encoded with `/` escaped as `%2F`, except for the
//! parameters that Gitea serves through wildcard routes, where `/` separates
//! real path segments. The decision is keyed on the route template *and* the
//! parameter, never on the parameter name alone: `tags/{tag}` is a wildcard
//! route, `releases/tags/{tag}` is not.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Routes (relative to `/api/v1`) whose named parameter Gitea matches with a
/// `*` wildcard, so a value may span several path segments.
const WILDCARD_ROUTES: &[(&str, &str)] = &[
    ("/repos/{owner}/{repo}/archive/{archive}", "archive"),
    ("/repos/{owner}/{repo}/branches/{branch}", "branch"),
    ("/repos/{owner}/{repo}/commits/{ref}/status", "ref"),
    ("/repos/{owner}/{repo}/commits/{ref}/statuses", "ref"),
    ("/repos/{owner}/{repo}/compare/{basehead}", "basehead"),
    ("/repos/{owner}/{repo}/contents/{filepath}", "filepath"),
    ("/repos/{owner}/{repo}/contents-ext/{filepath}", "filepath"),
    ("/repos/{owner}/{repo}/git/refs/{ref}", "ref"),
    ("/repos/{owner}/{repo}/media/{filepath}", "filepath"),
    ("/repos/{owner}/{repo}/raw/{filepath}", "filepath"),
    ("/repos/{owner}/{repo}/pulls/{base}/{head}", "head"),
    ("/repos/{owner}/{repo}/tags/{tag}", "tag"),
];

/// Query names that would let a caller smuggle credentials or `Sudo` past
/// the gateway (Gitea reads them from the query string too).
const FORBIDDEN_QUERY_NAMES: &[&str] = &["token", "access_token", "sudo", "_sudo"];

/// RFC 3986 unreserved characters stay as they are; everything else,
/// including `/`, is escaped.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Why a value was refused. Messages name the parameter, never the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodingError {
    #[error("path parameter `{param}` {reason}")]
    PathValue { param: String, reason: &'static str },
    #[error("path parameter `{0}` is missing")]
    MissingPathParam(String),
    #[error(
        "query parameter names `token`, `access_token`, `sudo` and `_sudo` are not allowed (use the `sudo` argument for Sudo)"
    )]
    ForbiddenQueryName,
    #[error("a query parameter name is empty or contains control characters")]
    InvalidQueryName,
    #[error("`sudo` must match [A-Za-z0-9_.-]{{1,255}}")]
    InvalidSudo,
    #[error("`{0}` must be a single line without quotes")]
    MultipartField(&'static str),
}

/// True when Gitea serves `param` of `route` through a wildcard.
pub fn is_wildcard_param(route: &str, param: &str) -> bool {
    WILDCARD_ROUTES
        .iter()
        .any(|(r, p)| *r == route && *p == param)
}

/// Rejects values that could reshape the path: `.`/`..`/empty segments,
/// `\`, `?`, `#`, `%` and control characters.
pub fn validate_path_value(param: &str, value: &str) -> Result<(), EncodingError> {
    let refuse = |reason| {
        Err(EncodingError::PathValue {
            param: param.to_owned(),
            reason,
        })
    };
    if value.is_empty() {
        return refuse("must not be empty");
    }
    if value.chars().any(char::is_control) {
        return refuse("must not contain control characters");
    }
    if value.contains(['\\', '?', '#', '%']) {
        return refuse("must not contain `\\`, `?`, `#` or `%`");
    }
    if value
        .split('/')
        .any(|segment| segment.is_empty() || segment == "." || segment == "..")
    {
        return refuse("must not contain empty, `.` or `..` segments");
    }
    Ok(())
}

/// Encodes one path value for `route`: segment by segment on wildcard
/// routes, as a single segment (`/` → `%2F`) everywhere else.
pub fn encode_path_param(route: &str, param: &str, value: &str) -> Result<String, EncodingError> {
    validate_path_value(param, value)?;
    if is_wildcard_param(route, param) {
        Ok(value
            .split('/')
            .map(|segment| utf8_percent_encode(segment, SEGMENT).to_string())
            .collect::<Vec<_>>()
            .join("/"))
    } else {
        Ok(utf8_percent_encode(value, SEGMENT).to_string())
    }
}

/// Replaces every `{name}` in `route` with the encoded value from `lookup`.
/// Handles several parameters in one segment (`{sha}.{diffType}`).
pub fn fill_route<'a>(
    route: &str,
    lookup: impl Fn(&str) -> Option<&'a str>,
) -> Result<String, EncodingError> {
    let mut out = String::with_capacity(route.len() + 32);
    let mut rest = route;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let end = after
            .find('}')
            .ok_or_else(|| EncodingError::MissingPathParam(after.to_owned()))?;
        let name = &after[..end];
        let value = lookup(name).ok_or_else(|| EncodingError::MissingPathParam(name.to_owned()))?;
        out.push_str(&encode_path_param(route, name, value)?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Refuses query names that carry credentials or Sudo, in any case.
pub fn check_query_name(name: &str) -> Result<(), EncodingError> {
    if name.is_empty() || name.chars().any(char::is_control) {
        return Err(EncodingError::InvalidQueryName);
    }
    if FORBIDDEN_QUERY_NAMES
        .iter()
        .any(|forbidden| name.eq_ignore_ascii_case(forbidden))
    {
        return Err(EncodingError::ForbiddenQueryName);
    }
    Ok(())
}

/// A Sudo login: `[A-Za-z0-9_.-]{1,255}`, so it can never break the header.
pub fn validate_sudo(login: &str) -> Result<(), EncodingError> {
    let ok = (1..=255).contains(&login.len())
        && login
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(EncodingError::InvalidSudo)
    }
}

/// Multipart file names and content types end up in a header line: one
/// line, no quotes, no control characters.
pub fn validate_multipart_field(field: &'static str, value: &str) -> Result<(), EncodingError> {
    if value.is_empty()
        || value.len() > 255
        || value
            .chars()
            .any(|c| c.is_control() || c == '"' || c == '\'')
    {
        return Err(EncodingError::MultipartField(field));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_wildcard_route_keeps_slashes_in_its_parameter() {
        for (route, param) in WILDCARD_ROUTES {
            let encoded = encode_path_param(route, param, "a/b c").unwrap();
            assert_eq!(encoded, "a/b%20c", "{route} {param}");
        }
    }

    /// Routes whose parameter is one path segment: (route, parameter,
    /// value, encoded).
    const SINGLE_SEGMENT_CASES: &[(&str, &str, &str, &str)] = &[
        (
            "/repos/{owner}/{repo}/releases/tags/{tag}",
            "tag",
            "rel/1.0",
            "rel%2F1.0",
        ),
        (
            "/repos/{owner}/{repo}/editorconfig/{filepath}",
            "filepath",
            "a/b.txt",
            "a%2Fb.txt",
        ),
        (
            "/repos/{owner}/{repo}/statuses/{sha}",
            "sha",
            "abc/def",
            "abc%2Fdef",
        ),
        (
            "/repos/{owner}/{repo}/git/commits/{sha}",
            "sha",
            "x/y",
            "x%2Fy",
        ),
        (
            "/repos/{owner}/{repo}/git/tags/{sha}",
            "sha",
            "x/y",
            "x%2Fy",
        ),
        (
            "/repos/{owner}/{repo}/wiki/page/{pageName}",
            "pageName",
            "Home/Sub",
            "Home%2FSub",
        ),
        ("/repos/{owner}/{repo}/pulls/{index}", "index", "1", "1"),
        ("/repos/{owner}/{repo}/hooks/{id}", "id", "7", "7"),
        (
            "/repos/{owner}/{repo}/actions/secrets/{secretname}",
            "secretname",
            "A/B",
            "A%2FB",
        ),
        (
            "/repos/{owner}/{repo}/actions/variables/{variablename}",
            "variablename",
            "A/B",
            "A%2FB",
        ),
        (
            "/repos/{owner}/{repo}/branch_protections/{name}",
            "name",
            "release/*",
            "release%2F%2A",
        ),
        // The base of `pulls/{base}/{head}` is a single segment; only head is wildcard.
        (
            "/repos/{owner}/{repo}/pulls/{base}/{head}",
            "base",
            "a/b",
            "a%2Fb",
        ),
        // The owner of a wildcard route is still a single segment.
        (
            "/repos/{owner}/{repo}/contents/{filepath}",
            "owner",
            "a/b",
            "a%2Fb",
        ),
    ];

    #[test]
    fn single_segment_routes_escape_slashes() {
        for (route, param, value, want) in SINGLE_SEGMENT_CASES {
            assert_eq!(
                encode_path_param(route, param, value).unwrap(),
                *want,
                "{route}"
            );
        }
    }

    #[test]
    fn nested_file_path_with_a_space_reaches_contents_route() {
        let path = fill_route("/repos/{owner}/{repo}/contents/{filepath}", |n| match n {
            "owner" => Some("o"),
            "repo" => Some("r"),
            "filepath" => Some("docs/a b.md"),
            _ => None,
        })
        .unwrap();
        assert_eq!(path, "/repos/o/r/contents/docs/a%20b.md");
    }

    #[test]
    fn release_tag_with_a_slash_is_one_segment() {
        let path = fill_route("/repos/{owner}/{repo}/releases/tags/{tag}", |n| match n {
            "tag" => Some("rel/1.0"),
            _ => Some("x"),
        })
        .unwrap();
        assert_eq!(path, "/repos/x/x/releases/tags/rel%2F1.0");
    }

    #[test]
    fn two_parameters_in_one_segment_are_both_filled() {
        let path = fill_route(
            "/repos/{owner}/{repo}/git/commits/{sha}.{diffType}",
            |n| match n {
                "sha" => Some("abc"),
                "diffType" => Some("patch"),
                _ => Some("x"),
            },
        )
        .unwrap();
        assert_eq!(path, "/repos/x/x/git/commits/abc.patch");
    }

    #[test]
    fn compare_three_dots_are_not_traversal() {
        let got = encode_path_param(
            "/repos/{owner}/{repo}/compare/{basehead}",
            "basehead",
            "main...feature/x",
        )
        .unwrap();
        assert_eq!(got, "main...feature/x");
    }

    #[test]
    fn traversal_and_reshaping_values_are_refused() {
        let route = "/repos/{owner}/{repo}/contents/{filepath}";
        for bad in [
            "..", ".", "a/../b", "a/./b", "a//b", "/a", "a/", "", "a\\b", "a?b", "a#b", "a%2Fb",
            "a\nb", "a\u{0}b", "a\u{7f}b",
        ] {
            let err = encode_path_param(route, "filepath", bad).unwrap_err();
            assert!(matches!(err, EncodingError::PathValue { .. }), "{bad:?}");
        }
        for bad in ["..", "a/../b", "x%2F"] {
            assert!(encode_path_param(route, "owner", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn missing_path_parameter_is_reported_by_name() {
        let err = fill_route("/repos/{owner}/{repo}", |_| None).unwrap_err();
        assert_eq!(err, EncodingError::MissingPathParam("owner".into()));
    }

    #[test]
    fn unicode_is_percent_encoded_as_utf8() {
        assert_eq!(
            encode_path_param("/repos/{owner}/{repo}", "repo", "é").unwrap(),
            "%C3%A9"
        );
    }

    #[test]
    fn credential_query_names_are_refused_in_any_case() {
        for name in ["token", "TOKEN", "Access_Token", "sudo", "SuDo", "_sudo"] {
            assert_eq!(
                check_query_name(name),
                Err(EncodingError::ForbiddenQueryName)
            );
        }
        assert!(check_query_name("tokens").is_ok());
        assert!(check_query_name("page").is_ok());
        assert_eq!(check_query_name(""), Err(EncodingError::InvalidQueryName));
        assert_eq!(
            check_query_name("a\nb"),
            Err(EncodingError::InvalidQueryName)
        );
    }

    #[test]
    fn sudo_accepts_only_login_characters() {
        assert!(validate_sudo("alice.b-c_1").is_ok());
        for bad in ["", "alice\nX-Evil: 1", "a b", "a:b", "ä", &"a".repeat(256)] {
            assert_eq!(
                validate_sudo(bad),
                Err(EncodingError::InvalidSudo),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn multipart_fields_must_be_single_line_without_quotes() {
        assert!(validate_multipart_field("filename", "report 1.pdf").is_ok());
        for bad in ["a\"b", "a\r\nContent-Type: x", "", "a'b"] {
            assert!(
                validate_multipart_field("filename", bad).is_err(),
                "{bad:?}"
            );
        }
    }

    proptest::proptest! {
        /// A value with `/`, spaces, `%` and non-ASCII text reaches the
        /// route it names: one segment on a plain route (its `/` encoded),
        /// its own segments on a wildcard route, and decoding gives the
        /// value back.
        #[test]
        fn path_values_round_trip_through_their_route(
            value in "[a-z0-9 %/é漢._~-]{1,24}",
        ) {
            use percent_encoding::percent_decode_str;
            proptest::prop_assume!(validate_path_value("owner", &value).is_ok());
            let plain = encode_path_param("/repos/{owner}/{repo}", "owner", &value).unwrap();
            proptest::prop_assert!(!plain.contains('/'), "{}", plain);
            proptest::prop_assert!(!plain.contains(' '));
            proptest::prop_assert_eq!(percent_decode_str(&plain).decode_utf8().unwrap(), value.as_str());
            let route = "/repos/{owner}/{repo}/contents/{filepath}";
            if validate_path_value("filepath", &value).is_ok() {
                let wild = encode_path_param(route, "filepath", &value).unwrap();
                let segments: Vec<_> = wild.split('/').map(|s| percent_decode_str(s).decode_utf8().unwrap().into_owned()).collect();
                proptest::prop_assert_eq!(segments.join("/"), value);
            }
        }
    }
}
