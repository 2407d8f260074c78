//! Redirect URIs: which may be registered, how a presented one is matched
//! against the registered ones, and the operator's allowlist. Matching is
//! exact string comparison (OAuth 2.1 §4.1.3), with one exception: an http
//! loopback URI matches on any port (RFC 8252 §7.3), because native clients
//! bind an ephemeral port per sign-in.

use url::Url;

/// Why a redirect URI cannot be registered. Messages name the rule only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RedirectUriProblem {
    #[error("redirect URIs must be absolute URIs")]
    NotAbsolute,
    #[error("redirect URIs must not contain a fragment")]
    Fragment,
    #[error("redirect URIs must not contain credentials")]
    Credentials,
    #[error("http redirect URIs are allowed only for loopback hosts; use https")]
    InsecureHttp,
    #[error("this redirect URI scheme is not allowed")]
    ForbiddenScheme,
    #[error("the redirect URI is not in this server's allowlist")]
    NotAllowlisted,
    #[error("redirect URIs must be at most 2000 characters")]
    TooLong,
}

/// Schemes a redirect must never name: they run code or read local data in
/// the browser (`javascript`, `data`, `file`, `view-source`, `jar`, the
/// browsers' own pages), or the browser or OS hands them to a local program
/// that acts on the URI (MS-MSDT's "Follina", Windows Search, SMB and other
/// network shares, Android intents, Office, app installers, mail and
/// telephony). An MCP client's own private-use scheme (`cursor`, `vscode`,
/// `com.example.app`) names none of these. Compared in lower case.
#[rustfmt::skip]
const FORBIDDEN_SCHEMES: &[&str] = &[
    // Code or local data in the browser.
    "javascript", "data", "file", "vbscript", "about", "blob", "filesystem", "view-source",
    "jar", "mhtml", "resource", "wyciwyg", "livescript",
    // Network protocols a browser or OS opens by itself.
    "ftp", "ftps", "sftp", "ws", "wss", "smb", "cifs", "nfs", "afp", "webdav", "dav", "ssh",
    "telnet", "ldap", "ldaps", "gopher", "nntp", "news", "irc", "ircs", "rtsp", "mms",
    "magnet", "ed2k",
    // OS handlers (Windows, Android, macOS/iOS, Linux desktops).
    "search", "search-ms", "shell", "hcp", "its", "mk", "res", "msi", "ie.http",
    "microsoft-edge", "microsoft-edge-holographic", "windows", "wsl", "intent",
    "android-app", "market", "content", "itms", "itms-apps", "itms-services",
    "help", "applescript", "x-man-page", "jnlp", "steam", "zoommtg",
    // Mail, telephony, messaging.
    "mailto", "tel", "sms", "callto", "facetime", "skype", "sip",
];

/// Scheme prefixes of whole handler families: Microsoft's `ms-*` (MSDT,
/// Office, settings, App Installer), `vnd.ms-*`, the browsers' internal
/// pages and extensions, Apple's `x-apple-*`.
#[rustfmt::skip]
const FORBIDDEN_SCHEME_PREFIXES: &[&str] = &[
    "ms-", "vnd.ms", "chrome", "edge", "brave", "opera", "vivaldi", "moz-", "firefox", "safari",
    "webkit", "x-apple-",
];

/// True for a scheme a redirect URI must not use ([`FORBIDDEN_SCHEMES`]).
fn is_forbidden_scheme(scheme: &str) -> bool {
    let scheme = scheme.to_ascii_lowercase();
    FORBIDDEN_SCHEMES.contains(&scheme.as_str())
        || FORBIDDEN_SCHEME_PREFIXES
            .iter()
            .any(|prefix| scheme.starts_with(prefix))
}

const MAX_REDIRECT_URI_LEN: usize = 2000;

/// Checks that `uri` may be registered: https; http only on a loopback
/// host; or a private-use scheme (`cursor://…`, `com.example.app:/cb`); no
/// credentials, no fragment; and in `allowlist` when one is configured.
pub fn check_registrable(uri: &str, allowlist: &[String]) -> Result<(), RedirectUriProblem> {
    if uri.len() > MAX_REDIRECT_URI_LEN {
        return Err(RedirectUriProblem::TooLong);
    }
    if uri.contains('#') {
        return Err(RedirectUriProblem::Fragment);
    }
    if uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(RedirectUriProblem::NotAbsolute);
    }
    let url = Url::parse(uri).map_err(|_| RedirectUriProblem::NotAbsolute)?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(RedirectUriProblem::Credentials);
    }
    match url.scheme() {
        "https" if url.host().is_none() => return Err(RedirectUriProblem::NotAbsolute),
        "http" if loopback_without_port(uri).is_none() => {
            return Err(RedirectUriProblem::InsecureHttp);
        }
        "https" | "http" => {}
        scheme if is_forbidden_scheme(scheme) => {
            return Err(RedirectUriProblem::ForbiddenScheme);
        }
        _ => {}
    }
    if !is_allowlisted(uri, allowlist) {
        return Err(RedirectUriProblem::NotAllowlisted);
    }
    Ok(())
}

/// True when no allowlist is configured, or `uri` equals an entry, or an
/// entry ending in `/` is a prefix of it.
pub fn is_allowlisted(uri: &str, allowlist: &[String]) -> bool {
    allowlist.is_empty()
        || allowlist
            .iter()
            .any(|entry| uri == entry || (entry.ends_with('/') && uri.starts_with(entry.as_str())))
}

/// True when an error may be sent to `uri` without the person's say-so:
/// an http loopback URI (an application on the person's own machine), or
/// an https URI once `OAUTH_REDIRECT_ALLOWLIST` restricts them to
/// operator-vetted ones. Otherwise a self-registered client could use our
/// `/authorize` as an open redirector to any https URL, or to a local
/// program behind a private-use scheme, with no click (RFC 9700 §4.11.2).
pub fn redirects_errors_automatically(uri: &str, allowlist: &[String]) -> bool {
    if loopback_without_port(uri).is_some() {
        return true;
    }
    !allowlist.is_empty() && Url::parse(uri).is_ok_and(|u| u.scheme() == "https")
}

/// True when `presented` matches `registered`: the same string, or both
/// http loopback URIs that differ only in the port.
pub fn matches_registered(presented: &str, registered: &str) -> bool {
    if presented == registered {
        return true;
    }
    match (
        loopback_without_port(presented),
        loopback_without_port(registered),
    ) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// For `http://127.0.0.1:PORT/rest` (also `[::1]`, `localhost`), the URI with
/// the port removed; `None` for anything else. Works on the raw string, so
/// no normalisation can make two different URIs equal.
fn loopback_without_port(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("http://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let host = match authority.rsplit_once(':') {
        Some((host, port))
            if !host.is_empty()
                && port.bytes().all(|b| b.is_ascii_digit())
                // A port that exists: a run of digits past 65535 (or 0) is
                // no address a client listens on.
                && port.parse::<u16>().is_ok_and(|p| p != 0)
                && !host.ends_with(':') =>
        {
            host
        }
        _ => authority,
    };
    matches!(host, "127.0.0.1" | "[::1]" | "localhost").then(|| format!("http://{host}{tail}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_trusted_redirect_uris_get_errors_without_a_click() {
        assert!(redirects_errors_automatically(
            "http://127.0.0.1:5599/cb",
            &[]
        ));
        assert!(!redirects_errors_automatically(
            "cursor://anysphere.cursor-mcp/oauth",
            &[]
        ));
        assert!(!redirects_errors_automatically(
            "https://evil.example/cb",
            &[]
        ));
        let vetted = vec!["https://claude.ai/".to_owned(), "cursor://".to_owned()];
        assert!(!redirects_errors_automatically(
            "cursor://anysphere.cursor-mcp/oauth",
            &vetted
        ));
        assert!(redirects_errors_automatically(
            "https://claude.ai/api/mcp/auth_callback",
            &vetted
        ));
    }

    fn ok(uri: &str) -> bool {
        check_registrable(uri, &[]).is_ok()
    }

    #[test]
    fn https_loopback_http_and_private_schemes_may_be_registered() {
        assert!(ok("https://claude.ai/api/mcp/auth_callback"));
        assert!(ok("http://127.0.0.1:33418/callback"));
        assert!(ok("http://localhost/cb"));
        assert!(ok("http://[::1]:8080/cb"));
        assert!(ok("cursor://anysphere.cursor-retrieval/oauth/callback"));
        assert!(ok("com.example.app:/oauth2redirect"));
    }

    #[test]
    fn http_off_loopback_is_refused() {
        assert_eq!(
            check_registrable("http://example.com/cb", &[]),
            Err(RedirectUriProblem::InsecureHttp)
        );
        assert_eq!(
            check_registrable("http://127.0.0.1.evil.com/cb", &[]),
            Err(RedirectUriProblem::InsecureHttp)
        );
    }

    #[test]
    fn credentials_fragments_and_script_schemes_are_refused() {
        assert_eq!(
            check_registrable("https://user:pw@example.com/cb", &[]),
            Err(RedirectUriProblem::Credentials)
        );
        assert_eq!(
            check_registrable("https://example.com/cb#x", &[]),
            Err(RedirectUriProblem::Fragment)
        );
        assert_eq!(
            check_registrable("javascript:alert(1)", &[]),
            Err(RedirectUriProblem::ForbiddenScheme)
        );
        assert_eq!(
            check_registrable("data:text/html,x", &[]),
            Err(RedirectUriProblem::ForbiddenScheme)
        );
        assert_eq!(
            check_registrable("/relative", &[]),
            Err(RedirectUriProblem::NotAbsolute)
        );
    }

    #[test]
    fn the_allowlist_takes_exact_uris_and_slash_prefixes() {
        let allow = vec![
            "https://claude.ai/api/mcp/auth_callback".to_owned(),
            "https://chat.mistral.ai/".to_owned(),
        ];
        assert!(is_allowlisted(
            "https://claude.ai/api/mcp/auth_callback",
            &allow
        ));
        assert!(is_allowlisted("https://chat.mistral.ai/cb", &allow));
        assert!(!is_allowlisted("https://chat.mistral.ai.evil.com/", &allow));
        assert!(!is_allowlisted(
            "https://claude.ai/api/mcp/auth_callback2",
            &allow
        ));
        assert_eq!(
            check_registrable("https://evil.example/cb", &allow),
            Err(RedirectUriProblem::NotAllowlisted)
        );
    }

    #[test]
    fn matching_is_exact_string_comparison() {
        let registered = "https://app.example/cb";
        assert!(matches_registered("https://app.example/cb", registered));
        for presented in [
            "https://app.example:443/cb",
            "https://APP.example/cb",
            "https://app.example/x/../cb",
            "https://app.example/x/%2E%2E/cb",
            "https://app.example/cb?x=1",
            "https://app.example/cb/",
        ] {
            assert!(
                !matches_registered(presented, registered),
                "{presented} must not match"
            );
        }
    }

    #[test]
    fn loopback_uris_match_on_any_port_only() {
        let registered = "http://127.0.0.1/callback";
        assert!(matches_registered(
            "http://127.0.0.1:51234/callback",
            registered
        ));
        assert!(matches_registered(
            "http://127.0.0.1:1/callback",
            "http://127.0.0.1:9/callback"
        ));
        assert!(!matches_registered("http://127.0.0.1:5/other", registered));
        assert!(!matches_registered(
            "http://localhost:5/callback",
            registered
        ));
        assert!(!matches_registered(
            "https://127.0.0.1:5/callback",
            registered
        ));
        assert!(!matches_registered(
            "http://127.0.0.1:5@evil/callback",
            registered
        ));
    }
    #[test]
    fn a_loopback_uri_with_a_port_that_cannot_exist_never_matches() {
        // Found by the `redirect_uri` fuzz target: any run of digits was
        // taken for a port.
        let registered = "http://127.0.0.1:7/callback";
        for port in ["99099", "65536", "0", "1000000000000000000007"] {
            let presented = format!("http://127.0.0.1:{port}/callback");
            assert!(!matches_registered(&presented, registered), "{presented}");
        }
        assert!(matches_registered(
            "http://127.0.0.1:65535/callback",
            registered
        ));
    }

    proptest::proptest! {
        /// Loopback URIs match across ports and nothing else: the same
        /// host and tail match whatever the two ports are, and a change of
        /// host, scheme or tail never matches.
        #[test]
        fn matching_is_exact_except_for_the_loopback_port(
            host in proptest::sample::select(vec!["127.0.0.1", "[::1]", "localhost", "example.com", "127.0.0.2"]),
            ports in (proptest::option::of(1u16..), proptest::option::of(1u16..)),
            tail in "(/[a-z]{0,5}){0,3}(\\?[a-z=&]{0,6})?",
            other_tail in "(/[a-z]{0,5}){0,3}",
            scheme in proptest::sample::select(vec!["http", "https"]),
        ) {
            let uri = |port: Option<u16>, tail: &str| match port {
                Some(p) => format!("{scheme}://{host}:{p}{tail}"),
                None => format!("{scheme}://{host}{tail}"),
            };
            let (a, b) = (uri(ports.0, &tail), uri(ports.1, &tail));
            let loopback = scheme == "http" && matches!(host, "127.0.0.1" | "[::1]" | "localhost");
            proptest::prop_assert_eq!(matches_registered(&a, &b), loopback || a == b);
            let c = uri(ports.1, &other_tail);
            if other_tail != tail {
                proptest::prop_assert!(!matches_registered(&a, &c), "{} ~ {}", a, c);
            }
            let elsewhere = format!("{scheme}://attacker.example{}", tail);
            proptest::prop_assert!(!matches_registered(&elsewhere, &a));
        }
    }
}

/// `uri` with `pairs` appended to its query, form-encoded. The registered
/// string is kept byte for byte (no URL normalisation).
pub fn with_query(uri: &str, pairs: &[(&str, &str)]) -> String {
    let mut serializer = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in pairs {
        serializer.append_pair(name, value);
    }
    let separator = if uri.contains('?') { '&' } else { '?' };
    format!("{uri}{separator}{}", serializer.finish())
}

#[cfg(test)]
mod with_query_tests {
    use super::with_query;

    #[test]
    fn parameters_are_appended_to_an_existing_query() {
        assert_eq!(
            with_query("https://a/cb", &[("code", "x y"), ("state", "s&t")]),
            "https://a/cb?code=x+y&state=s%26t"
        );
        assert_eq!(
            with_query("cursor://cb?app=1", &[("code", "c")]),
            "cursor://cb?app=1&code=c"
        );
    }
}
